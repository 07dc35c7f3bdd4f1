"""spec/ptx/sass.py on SASS our own kernels compiled to (tests/fixtures/ptx/sass_forms/README.md):
parsing (functions, guards, operands, loc chains), the classification of each mbarrier form,
and `lanes_per_warp` / `elected` / `over_arrival` on guarded and unguarded arrives."""
from __future__ import annotations

import gzip
import os
import re
import stat

import pytest

from pipeproof.spec.ptx import sass
from pipeproof.spec.ptx.sass import (classify, elected, lanes_per_warp, over_arrival,
                                     parse_address, parse_sass, run_nvdisasm)
from pipeproof.spec.schema import SpecError
from tests.paths import ROOT

FIX = ROOT / "tests" / "fixtures" / "ptx" / "sass_forms"


def _load(name: str):
    p = FIX / name
    text = gzip.open(p, "rt").read() if name.endswith(".gz") else p.read_text()
    return parse_sass(text)


@pytest.fixture(scope="module")
def sm90():
    return {f.name: f for f in _load("forms_sm90.g.sass.gz")}


@pytest.fixture(scope="module")
def sm100():
    return {f.name: f for f in _load("forms_sm100.g.sass.gz")}


def _func(funcs: dict, short: str, prefix: str):
    hits = [f for n, f in funcs.items() if re.fullmatch(rf"_Z\d+{prefix}_{short}P.*", n)]
    assert len(hits) == 1, (short, [n for n in funcs])
    return hits[0]


def _syncs(func):
    return [(i, inst, classify(inst)) for i, inst in enumerate(func.insts) if classify(inst)]


def _base(path: str) -> str:
    return os.path.basename(path)


# ---------------------------------------------------------------------------------------------
# parsing


def test_functions_and_instructions(sm90, sm100):
    assert len(sm90) == 62 and len(sm100) == 24       # one kernel per form (README table)
    f = _func(sm90, "arrive_sink", "f")
    arr = [inst for inst in f.insts if inst.opcode.startswith("SYNCS")]
    assert len(arr) == 1
    a = arr[0]
    assert (a.opcode, a.operands, a.guard) == ("SYNCS.ARRIVE.TRANS64.A1T0", ["RZ", "[UR4]", "RZ"],
                                               None)
    assert a.text == "SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ"
    assert a.addr == 0x80
    assert [i.addr for i in f.insts] == sorted(i.addr for i in f.insts)
    assert f.insts[-1].opcode == "NOP" and any(i.opcode == "EXIT" for i in f.insts)
    # labels and branch targets
    bra = [i for i, inst in enumerate(f.insts) if inst.opcode == "BRA"]
    assert bra and all(f.labels[f.branch_targets[i]] == i for i in bra)   # the `BRA self` tail


def test_guards_and_operands():
    funcs = {f.name: f for f in _load("pc_sm90.g.sass.gz")}
    (f,) = funcs.values()
    inst = f.insts[f.index_at(0x0770)]
    assert (inst.guard, inst.opcode) == ("!P0", "SYNCS.ARRIVE.TRANS64.RED.A1T0")
    assert inst.operands == ["RZ", "[R5+URZ]", "RZ"]
    errbar = f.insts[f.index_at(0x0750)]
    assert (errbar.guard, errbar.opcode, errbar.operands) == ("!P0", "ERRBAR", [])
    bra = f.insts[f.index_at(0x0040)]
    assert (bra.guard, bra.opcode, bra.operands) == ("P0", "BRA", ["`(.L_x_1)"])
    assert f.branch_targets[f.index_at(0x0040)] == ".L_x_1"


def test_parse_address():
    assert parse_address("[R16+URZ+0x2400]") == ("R16", 0x2400)
    assert parse_address("[UR4]") == ("UR4", 0)
    assert parse_address("[R21+URZ+-0x20]") == ("R21", -0x20)
    assert parse_address("[R5+UR4+0x8]") == ("R5+UR4", 8)
    assert parse_address("R5") is None


def test_loc_chains_gi_vs_g():
    (gi,) = _load("pc_sm90.gi.sass.gz")
    (g,) = _load("pc_sm90.g.sass.gz")
    want = {0x0110: [("ptx_ops.cuh", 10), ("pc_sm90.cu", 44)],      # mbar_init in the init loop
            0x0770: [("ptx_ops.cuh", 23), ("pc_sm90.cu", 78)],      # mbar_arrive_cluster
            0x1200: [("ptx_ops.cuh", 26), ("pc_sm90.cu", 59)]}      # mbar_arrive_expect_tx
    for addr, chain in want.items():
        a = gi.insts[gi.index_at(addr)]
        assert [(_base(p), n) for p, n in a.loc] == chain
        b = g.insts[g.index_at(addr)]
        assert [(_base(p), n) for p, n in b.loc] == chain[:1]       # -g: innermost only
        assert classify(a).loc == a.loc


def test_loc_chain_deep_and_carried():
    (f,) = _load("tc_sm100.gi.sass.gz")
    deep = max(f.insts, key=lambda i: len(i.loc))
    assert [_base(p) for p, _ in deep.loc] == ["sm_20_intrinsics.hpp", "ptx_ops.cuh",
                                               "ptx_ops.cuh", "tc_sm100.cu"]
    # the loc carries over instructions (and labels) that have no comment of their own
    funcs = {x.name: x for x in _load("elect_sm90.gi.sass")}
    k = funcs["_Z6k_dataPjj"]
    arr = next(i for i in k.insts if i.opcode.startswith("SYNCS"))
    assert [(_base(p), n) for p, n in arr.loc] == [("elect_sm90.cu", 6), ("elect_sm90.cu", 33)]


# ---------------------------------------------------------------------------------------------
# classify: the forms table

# (kernel, opcode, kind, count_form, remote, value register)
ARRIVE_FORMS = [
    ("arrive_sink", "SYNCS.ARRIVE.TRANS64.A1T0", "arrive", "one_per_thread", False, None),
    ("arrive_state", "SYNCS.ARRIVE.TRANS64.A1T0", "arrive", "one_per_thread", False, None),
    ("arrive_relaxed", "SYNCS.ARRIVE.TRANS64.A1T0", "arrive", "one_per_thread", False, None),
    ("arrive_rel_cluster_local", "SYNCS.ARRIVE.TRANS64.A1T0", "arrive", "one_per_thread", False,
     None),
    ("arrive_count", "SYNCS.ARRIVE.TRANS64.ART0", "arrive", "count_reg", False, "R0"),
    ("arrive_expect_tx", "SYNCS.ARRIVE.TRANS64", "arrive", "with_tx", False, "R0"),
    ("arrive_expect_tx_imm", "SYNCS.ARRIVE.TRANS64", "arrive", "with_tx", False, "R0"),
    ("arrive_remote_default", "SYNCS.ARRIVE.TRANS64.RED.A1T0", "arrive", "one_per_thread", True,
     None),
    ("arrive_remote_relaxed", "SYNCS.ARRIVE.TRANS64.RED.A1T0", "arrive", "one_per_thread", True,
     None),
    ("arrive_expect_tx_remote", "SYNCS.ARRIVE.TRANS64.RED", "arrive", "with_tx", True, "R0"),
    ("expect_tx", "SYNCS.ARRIVE.TRANS64.RED.A0TR", "expect", "tx_only", None, "R0"),
    ("complete_tx", "SYNCS.ARRIVE.TRANS64.RED.A0TX", "complete_tx", "tx_only", None, "R0"),
]


@pytest.mark.parametrize("kernel,opcode,kind,form,remote,value", ARRIVE_FORMS,
                         ids=[r[0] for r in ARRIVE_FORMS])
def test_arrive_forms(sm90, kernel, opcode, kind, form, remote, value):
    ops = _syncs(_func(sm90, kernel, "f"))
    assert len(ops) == 1
    _, inst, op = ops[0]
    assert (inst.opcode, op.kind, op.count_form, op.remote, op.value) == (opcode, kind, form,
                                                                           remote, value)
    assert op.barrier == ("UR4", 0) and op.guard is None and not op.uniform
    assert op.loc and _base(op.loc[0][0]) == "forms_sm90.cu"


def test_arrive_nocomplete(sm90):
    ((_, inst, op),) = _syncs(_func(sm90, "arrive_nocomplete", "f"))
    assert (op.kind, op.count_form, op.no_complete, op.value) == ("arrive", "count_reg", True,
                                                                  "R7")
    assert op.barrier == ("R0", 0)


def test_init_wait_test_cpasync(sm90):
    for k in ("init_1", "init_n"):
        ((_, _, op),) = _syncs(_func(sm90, k, "f"))
        assert (op.kind, op.opcode, op.barrier, op.value) == ("init", "SYNCS.EXCH.64",
                                                              ("UR6", 0), "UR4")
    ops = [op for _, _, op in _syncs(_func(sm90, "try_wait_parity_loop", "f"))]
    assert [op.kind for op in ops] == ["wait", "wait"]    # inline fast path + retry stub
    assert all((op.pred_out, op.barrier, op.value) == ("P0", ("UR4", 0), "R0") for op in ops)
    hint = [op for _, _, op in _syncs(_func(sm90, "try_wait_parity_hint", "f"))]
    assert [op.kind for op in hint] == ["wait", "wait", "test"]
    assert hint[-1].guard == "!P0"
    ((_, _, t),) = _syncs(_func(sm90, "test_wait_parity", "f"))
    assert (t.kind, t.opcode) == ("test", "SYNCS.PHASECHK.TRANS64")
    ((_, _, c),) = _syncs(_func(sm90, "cp_async_mbar_arrive_noinc", "f"))
    assert (c.kind, c.opcode, c.barrier) == ("arrive_cpasync", "ARRIVES.LDGSTSBAR.64.ARVCNT",
                                             ("UR4", 0))
    # not mbarrier ops
    for k in ("fence_proxy_async_cta", "syncthreads", "elect_sync", "mapa_u32", "inval"):
        assert [op.opcode for _, _, op in _syncs(_func(sm90, k, "f"))] == []


def test_tma_and_bulk(sm90, sm100):
    ((_, _, op),) = _syncs(_func(sm90, "tma_load_2d", "f"))
    assert (op.kind, op.multicast, op.two_cta, op.mask, op.barrier) == ("tma_load", False, False,
                                                                        None, None)
    ((_, _, op),) = _syncs(_func(sm90, "tma_load_2d_mc", "f"))
    assert (op.opcode, op.multicast, op.mask, op.uniform) == ("UTMALDG.2D.MULTICAST", True,
                                                              "UR12", True)
    ((_, _, op),) = _syncs(_func(sm100, "tma_load_2cta", "g"))
    assert (op.opcode, op.two_cta, op.multicast) == ("UTMALDG.2D.2CTA", True, False)
    ((_, _, op),) = _syncs(_func(sm90, "bulk_load", "f"))
    assert (op.kind, op.multicast) == ("bulk_load", False)
    ((_, _, op),) = _syncs(_func(sm90, "bulk_load_mc", "f"))
    assert (op.kind, op.opcode, op.multicast, op.mask) == ("bulk_load", "UBLKCP.S.G.MULTICAST",
                                                           True, "UR10")
    assert _syncs(_func(sm90, "tma_store_2d", "f")) == []      # a store completes no mbarrier


@pytest.mark.parametrize("kernel,opcode,mc,two", [
    ("tc_commit", "UTCBAR", False, False), ("tc_commit_mc", "UTCBAR.MULTICAST", True, False),
    ("tc_commit_2cta", "UTCBAR.2CTA", False, True),
    ("tc_commit_2cta_mc", "UTCBAR.2CTA.MULTICAST", True, True)])
def test_utcbar(sm100, kernel, opcode, mc, two):
    ((i, inst, op),) = _syncs(_func(sm100, kernel, "g"))
    assert (op.kind, op.opcode, op.multicast, op.two_cta) == ("commit", opcode, mc, two)
    assert op.barrier == ("UR4", 0) and op.mask == ("UR5" if mc else None)
    assert op.arrivals(lanes=1) == 1 and op.arrivals(lanes=0) == 0


def test_non_sync_is_none(sm90):
    f = _func(sm90, "arrive_sink", "f")
    assert all(classify(i) is None for i in f.insts if not i.opcode.startswith("SYNCS"))


# ---------------------------------------------------------------------------------------------
# elected / lanes_per_warp / over_arrival


@pytest.mark.parametrize("name", ["elect_sm90.g.sass", "elect_sm90.gi.sass"])
def test_elected_guards(name):
    funcs = {f.name: f for f in _load(name)}
    want = {"_Z7k_electPj": (1, True, "P0"), "_Z7k_lane0Pj": (1, True, "!P0"),
            "_Z5k_allPj": (32, False, None), "_Z6k_dataPjj": (32, False, "P0")}
    assert set(funcs) == set(want)
    for kname, (lanes, el, guard) in want.items():
        f = funcs[kname]
        ((i, inst, op),) = _syncs(f)
        assert (op.kind, op.count_form, inst.guard) == ("arrive", "one_per_thread", guard)
        assert lanes_per_warp(f, i) == lanes, kname
        assert elected(f, i) is el, kname
        # the PTX arrives once per warp at this line: the unguarded / data-guarded SASS
        # arrive counts up to 32 -> flagged
        assert over_arrival(f, i) is (not el), kname
        assert op.arrivals(lanes_per_warp(f, i)) == lanes


def test_elected_through_branches_pc_sm90():
    (f,) = _load("pc_sm90.gi.sass.gz")
    arrives = [(i, op) for i, _, op in _syncs(f) if op.kind == "arrive"]
    remote = [(i, op) for i, op in arrives if op.remote]
    local = [(i, op) for i, op in arrives if not op.remote]
    assert len(remote) == 5 and len(local) == 5
    # `if (lane < CLUSTER) mbar_arrive_cluster(...)`: two lanes per warp, by a guard on the lane id
    for i, op in remote:
        assert f.insts[i].guard == "!P0" and lanes_per_warp(f, i) == 2
        assert not elected(f, i) and elected(f, i, max_lanes=2)
        assert over_arrival(f, i, ptx_lanes=2) is False and over_arrival(f, i) is True
    # `if (warp == 0 && elect_one()) { ... arrive_expect_tx ... }`: unguarded SASS arrive in a
    # block reached only past `ISETP.LT.OR P0, PT, R3, 0x1, !P0 ; @P0 BRA` after the ELECT
    for i, op in local:
        assert f.insts[i].guard is None and op.count_form == "with_tx"
        assert lanes_per_warp(f, i) == 1 and elected(f, i)
    # the consumer's waits run in all lanes
    waits = [i for i, _, op in _syncs(f) if op.kind == "wait"]
    assert any(lanes_per_warp(f, i) == 32 for i in waits)


def test_elected_tc_sm100_with_divergent_elect_path():
    # tc_sm100 elects behind `BRA.DIV`, whose out-of-line path runs its own ELECT and jumps back
    (f,) = _load("tc_sm100.gi.sass.gz")
    arrives = [i for i, _, op in _syncs(f) if op.kind == "arrive"]
    assert len(arrives) == 10
    assert all(elected(f, i) for i in arrives)
    assert not any(over_arrival(f, i) for i in arrives)


TRITON_11858 = """
//--------------------- .text.bad --------------------------
\t.section\t.text.bad,"ax",@progbits
bad:
.text.bad:
\t//## File "attn.py", line 10
        /*0000*/                   S2R R0, SR_LANEID ;
        /*0010*/                   ISETP.NE.AND P0, PT, R0, RZ, PT ;
        /*0020*/                   VOTEU.ALL UP0, P0 ;
\t//## File "attn.py", line 11
        /*0030*/              @!UP0 USYNCS.ARRIVE.TRANS64.ACT0 URZ, [UR4], URZ ;
        /*0040*/              @!P0 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ ;
        /*0050*/              @!UP0 USYNCS.ARRIVE.TRANS64.A1T0 URZ, [UR4], URZ ;
        /*0060*/                   EXIT ;
"""


def test_triton_11858_shape():
    """Hand-written: the shape triton-lang/triton#11858 describes (VOTEU.ALL, then a uniform
    USYNCS.ARRIVE.TRANS64.ACT0 for a predicated count-one arrive); the operand spelling is ours.
    ACT0 counts every active lane; the per-lane A1T0 under the lane guard counts one."""
    (f,) = parse_sass(TRITON_11858)
    act0, a1t0, ua1t0 = (classify(f.insts[i]) for i in (3, 4, 5))
    assert (act0.kind, act0.count_form, act0.uniform, act0.guard) == ("arrive", "per_active_lane",
                                                                      True, "!UP0")
    assert act0.arrivals(lanes=1, active=16) == 16            # the 128 -> 112 of the thread
    assert over_arrival(f, 3) is True
    assert (a1t0.count_form, lanes_per_warp(f, 4), over_arrival(f, 4)) == ("one_per_thread", 1,
                                                                           False)
    assert a1t0.arrivals(lanes=1, active=16) == 1
    assert (ua1t0.count_form, ua1t0.uniform) == ("one_per_thread", True)
    assert ua1t0.arrivals(lanes=32) == 1 and over_arrival(f, 5) is False
    assert lanes_per_warp(f, 3) == 32                          # a uniform predicate picks no lane
    assert [(p, n) for p, n in f.insts[3].loc] == [("attn.py", 11)]


def test_arrivals_per_thread():
    (f,) = parse_sass(TRITON_11858)
    a1t0 = classify(f.insts[4])
    # a vector A1T0 by a full warp counts 32 (PTX: each executing thread arrives)
    assert a1t0.arrivals(lanes=32) == 32
    art0 = classify(parse_sass(TRITON_11858.replace("SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ",
                                                    "SYNCS.ARRIVE.TRANS64.ART0 RZ, [UR4], R3"))
                    [0].insts[4])
    assert (art0.count_form, art0.value, art0.arrivals(lanes=2, count=3)) == ("count_reg", "R3", 6)


def test_elect_complement_is_not_elected():
    text = TRITON_11858.replace("S2R R0, SR_LANEID ;", "ELECT P1, URZ, PT ;").replace(
        "ISETP.NE.AND P0, PT, R0, RZ, PT ;", "PLOP3.LUT P0, PT, P1, PT, PT, 0x80, 0x0 ;")
    (f,) = parse_sass(text)
    assert f.insts[4].guard == "!P0"
    assert lanes_per_warp(f, 4) == 31 and not elected(f, 4)   # every lane but the elected one


# ---------------------------------------------------------------------------------------------
# run_nvdisasm


def test_run_nvdisasm_missing(monkeypatch, tmp_path):
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    with pytest.raises(SpecError) as e:
        run_nvdisasm(str(tmp_path / "k.cubin"))
    msg = str(e.value)
    assert "\n" not in msg and "pip install 'pipeproof[cuda]'" in msg and "k.cubin" in msg


def test_run_nvdisasm_on_path(monkeypatch, tmp_path):
    fake = tmp_path / "nvdisasm"
    args = tmp_path / "args"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > '{args}'\ncat '{FIX / 'elect_sm90.g.sass'}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    assert sass.find_nvdisasm() == str(fake)
    funcs = parse_sass(run_nvdisasm(str(tmp_path / "k.cubin")))
    assert len(funcs) == 4
    assert args.read_text().split() == ["-gi", "-c", str(tmp_path / "k.cubin")]
    run_nvdisasm("k.cubin", inline=False)
    assert args.read_text().split() == ["-g", "-c", "k.cubin"]
    bad = tmp_path / "nvdisasm"
    bad.write_text("#!/bin/sh\necho 'nvdisasm fatal : Input file k.cubin does not exist' >&2\n"
                   "exit 1\n")
    with pytest.raises(SpecError, match="nvdisasm failed: nvdisasm fatal"):
        run_nvdisasm("k.cubin")


def test_elect_under_a_guard():
    """`@P0 ELECT P1` (ptxas's pattern before uniform ops) elects one lane among P0's lanes, even
    when lane 0 is not one of them."""
    text = TRITON_11858.replace("ISETP.NE.AND P0, PT, R0, RZ, PT ;",
                                "ISETP.GE.U32.AND P0, PT, R0, 0x4, PT ;").replace(
        "VOTEU.ALL UP0, P0 ;", "@P0 ELECT P1, URZ, PT ;").replace(
        "@!P0 SYNCS.ARRIVE.TRANS64.A1T0", "@P1 SYNCS.ARRIVE.TRANS64.A1T0")
    (f,) = parse_sass(text)
    assert f.insts[2].opcode == "ELECT" and f.insts[4].guard == "P1"
    # P1 is not written where P0 is false (lanes 0..3): unknown there, so the bound is 1 + 4
    assert lanes_per_warp(f, 4) == 5
    clear = "        /*0008*/                   PLOP3.LUT P1, PT, PT, PT, PT, 0x0, 0x0 ;"
    text2 = text.replace("S2R R0, SR_LANEID ;", "S2R R0, SR_LANEID ;\n" + clear)
    (f2,) = parse_sass(text2)
    assert f2.insts[1].opcode == "PLOP3.LUT"
    assert lanes_per_warp(f2, 5) == 1 and elected(f2, 5)
