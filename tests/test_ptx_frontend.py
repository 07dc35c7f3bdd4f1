"""pipeproof ptx on committed PTX (tests/fixtures/ptx/: compiled output, the command that made
each in its README; no CUDA compiler needed): the hand-written sm90 cluster kernel and its
mutations, the same kernels read both ways (Triton's TTGIR / Mojo's LLVM IR and their PTX),
the kernels it refuses in one line, and the parser's corner cases.
"""
import gzip
import re

import pytest

from tests.mojo_support import run_command, run_pipeproof

PTX = __import__("pathlib").Path(__file__).parent / "fixtures" / "ptx"
HAND = PTX / "hand_pc_sm90.ptx.gz"
TRITON = __import__("pathlib").Path(__file__).parent / "fixtures" / "triton_versions"


def ptx(*args):
    return run_pipeproof("ptx", *args)


def mutate(tmp_path, edits):
    """The hand-written kernel's PTX with each (old, new) of `edits` replaced everywhere (the
    loop is unrolled 4x with a remainder loop: an edit names both copies), written beside the
    test."""
    text = gzip.open(HAND, "rt").read()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    f = tmp_path / "mutant.ptx"
    f.write_text(text)
    return f


def test_hand_written_cluster_kernel_is_ok_at_two_trip_counts():
    for k in (6, 9):
        code, out = ptx(HAND, "--arg", f"3={k}")
        assert code == 0, out
        assert re.search(r": ok \(", out)
        # the launch configuration is the kernel's own (.maxntid 256, .reqnctapercluster 2)
        assert "cluster_size = 2" in out
        # a multicast tile split between the two CTAs: each copies half of the 2048-byte slot
        assert '"copy 1024 to=all",  # tma_load_2d_mc pc_sm90.cu:60' in out
        assert '"copy 256",  # bulk_load pc_sm90.cu:62' in out


def test_the_command_line_checks_ptx_and_exits_with_its_verdict():
    code, out = run_command("ptx", HAND, "--arg", "3=6")
    assert code == 0, out
    assert "ok (" in out


def test_a_loop_bound_not_given_is_picked_and_said():
    code, out = ptx(HAND)
    assert code == 0, out
    assert "no --arg for _Z7pc_sm9014CUtensorMap_stPKhPfi_param_3, which decides a branch: read as 4" in out


MUTATIONS = [
    # (what, the edits, kind, the kernel line the trace names)
    ("the producer's wait parity flipped",
     [("xor.b32  \t%r269, %r269, 1;", "mov.u32 \t%r269, %r269;"),
      ("xor.b32  \t%r235, %r269, 1;", "mov.u32 \t%r235, %r269;")], "deadlock", "pc_sm90.cu:58"),
    ("the consumer's release dropped",
     [("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];", "")], "deadlock", "pc_sm90.cu:58"),
    ("the expected bytes halved", [(", 2304;", ", 1152;")], "deadlock", "pc_sm90.cu:"),
    ("the multicast mask missing the peer",
     [("mov.u16 \t%rs4, 3;", "mov.u16 \t%rs4, 1;"), ("mov.u16 \t%rs5, 3;", "mov.u16 \t%rs5, 1;")],
     "deadlock", "pc_sm90.cu:"),
]


@pytest.mark.parametrize("what,edits,kind,line", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_a_mutation_of_the_ptx_is_caught_with_its_kind_and_source_line(tmp_path, what, edits, kind, line):
    f = mutate(tmp_path, edits)
    # 2 items, or 6 where the bug shows only once a slot is refilled (4 stages)
    code, out = ptx(f, "--arg", "3=6" if "release" in what else "3=2")
    assert code == 1, out
    assert re.search(rf": {kind} after \d+ steps", out), out
    steps = out.split("in the kernel:")[1]
    assert line in steps, out


# ---------------------------------------------------------------- both ways
TRITON_BOTH = [
    # (fixture, PTX args (by .param position), the TTGIR verdict the Triton tests pin)
    ("gluon_ring_rowsum_sm90", ("--arg", "6=5"), "ok"),
    ("gluon_ring_rowsum_sm100", ("--arg", "6=5"), "ok"),
    ("gluon_ring_matmul_sm90", ("--arg", "15=512"), "ok"),
]


@pytest.mark.parametrize("name,args,verdict", TRITON_BOTH, ids=[t[0] for t in TRITON_BOTH])
def test_triton_kernels_read_from_ptx_give_their_ttgir_verdict(name, args, verdict):
    code, out = ptx(PTX / "triton" / f"{name}.ptx.gz", *args)
    assert code == 0, out
    assert re.search(rf": {verdict} \(", out)


MOJO_BOTH = [
    # (fixture, args, the verdict pipeproof mojo gives on the .ll, its kind, states where pinned)
    ("pc_nvidia", ("--arg", "2=8", "--block-dim", "64"), "ok", None, 10),
    ("backend_phase_bug", ("--arg", "2=8", "--block-dim", "64"), "violation", "read_before_fill", None),
    ("backend_count_bug", ("--arg", "2=8", "--block-dim", "64"), "violation", "over_arrival", None),
]


@pytest.mark.parametrize("name,args,verdict,kind,states", MOJO_BOTH, ids=[m[0] for m in MOJO_BOTH])
def test_mojo_kernels_read_both_ways_agree(name, args, verdict, kind, states):
    ll = __import__("pathlib").Path(__file__).parent / "fixtures" / "mojo" / f"{name}.ll"
    got = {}
    for cmd, path in (("mojo", ll), ("ptx", PTX / "mojo" / f"{name}.ptx.gz")):
        code, out = run_pipeproof(cmd, path, *args)
        m = re.search(r": (ok|[a-z_]+ after (\d+) steps)", out)
        assert m, out
        got[cmd] = (code, m.group(1), re.search(r"(\d+) states", out).group(1) if states else None)
    assert got["mojo"] == got["ptx"], got
    assert got["ptx"][0] == (0 if verdict == "ok" else 1)
    if kind:
        assert got["ptx"][1].startswith(kind)
    if states:
        assert got["ptx"][2] == str(states)


# ---------------------------------------------------------------- refusals: one line, exit 2
REFUSED = [
    # a software-pipelined loop in one warp: refused, not a false alarm
    (PTX / "triton" / "sm90_pipelined.ptx.gz", ("--arg", "15=512"), "software-pipelined loop"),
    # cp.async.mbarrier.arrive is not read yet
    (PTX / "triton" / "gluon_cpasync_arrive_sm90.ptx.gz", (), "cp.async.mbarrier.arrive"),
    # no block size in the PTX (Mojo's sm100 kernels): the flag is named
    (PTX / "mojo" / "sm100_bf16.ptx.gz", ("--tiles", "2"), "--block-dim N"),
]


@pytest.mark.parametrize("path,args,words", REFUSED, ids=[r[2] for r in REFUSED])
def test_what_it_cannot_read_is_one_line_exit_2(path, args, words):
    code, out = ptx(path, *args)
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1, out
    assert words in out


def test_not_ptx_is_one_line_exit_2(tmp_path):
    f = tmp_path / "k.ptx"
    f.write_text("hello\n")
    code, out = run_command("ptx", f)
    assert code == 2 and len(out.strip().splitlines()) == 1 and "not PTX" in out, out
    code, out = run_command("ptx", tmp_path / "missing.ptx")
    assert code == 2 and "cannot read it" in out, out


def test_an_unknown_argument_names_the_parameters():
    code, out = ptx(HAND, "--arg", "ktiles=3")
    assert code == 2, out
    assert "the kernel's parameters are 0:0, 1:1, 2:2, 3:3" in out


# ---------------------------------------------------------------- the parser
def test_inline_asm_scopes_rename_their_labels_and_registers():
    from pipeproof.spec.ptx.module import parse_module
    text = gzip.open(HAND, "rt").read()
    m = parse_module(text, "k.ptx")
    k = m.kernels()[0]
    waits = [i for i in k.insts if i.opcode.startswith("mbarrier.try_wait")]
    # every retry loop branches to its own scope's label
    targets = {k.insts[k.labels[i.args[-1]]].opcode for i in k.insts
               if i.opcode == "bra" and "LAB_WAIT" in i.args[-1]}
    assert targets == {"mbarrier.try_wait.parity.shared::cta.b64"}
    assert len({i.args[0] for i in waits}) == len(waits)   # `p` renamed apart per scope
    assert k.directives["reqnctapercluster"] == (2, 1, 1) and k.directives["maxntid"] == (256, 1, 1)


def test_ops_inside_inline_asm_take_the_statement_line():
    # LLVM numbers an asm body's lines from the statement's line; the op is the statement's
    from pipeproof.spec.ptx.module import parse_module
    text = gzip.open(PTX / "triton" / "gluon_ring_rowsum_sm100.ptx.gz", "rt").read()
    m = parse_module(text, "k.ptx")
    waits = [i for i in m.kernels()[0].insts if i.opcode.startswith("mbarrier.try_wait")]
    assert {i.loc.line for i in waits} == {36, 49}


def test_mangled_names_read_as_their_scope():
    from pipeproof.spec.ptx.module import demangle
    assert demangle("_ZN7cutlass16PipelineTmaAsyncILi7EE16producer_acquireENS_13PipelineStateILj7EEE") \
        == "cutlass::PipelineTmaAsync::producer_acquire"
    assert demangle("_ZN7cutlass4arch14ClusterBarrier4waitEPKmj") == "cutlass::arch::ClusterBarrier::wait"
    assert demangle("_Z7pc_sm9014CUtensorMap_stPKhPfi") == "pc_sm90"


def test_the_readme_ptx_command_is_ok():
    readme = (PTX.parents[2] / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if ln.startswith("pipeproof ptx ")]
    args = line.split("#")[0].split()[2:]
    code, out = run_command("ptx", *args, cwd=PTX.parents[2])
    assert code == 0 and "ok (" in out, out


# ---------------------------------------------------------------- the SASS check
SASS = PTX / "sass_forms" / "pc_sm90.gi.sass.gz"   # nvdisasm -gi of the same source (README there)


def test_the_sass_of_the_hand_written_kernel_keeps_its_arrives():
    code, out = ptx(HAND, "--arg", "3=6", "--sass", SASS)
    assert code == 0, out
    assert "SASS check: 10 SASS arrives at the source lines of 10 PTX arrives, 0 over-arriving" in out


SASS_MUTATIONS = [
    # the consumers' remote release (2 lanes of a warp) with its lane guard dropped: every lane
    ("@!P0 SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [R5+URZ], RZ ;",
     "     SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [R5+URZ], RZ ;", 4),
    # the elected producer's arrive.expect_tx as the uniform arrive that counts every active
    # lane (the ptxas 13.4 lowering of triton-lang/triton#11858)
    ("SYNCS.ARRIVE.TRANS64 RZ, [R16+URZ+0x2400], R13 ;", "USYNCS.ARRIVE.TRANS64.ACT0 URZ, [UR4], URZ ;", 1),
]


@pytest.mark.parametrize("old,new,n", SASS_MUTATIONS, ids=["lane guard dropped", "ACT0"])
def test_an_arrive_that_ptxas_made_count_every_lane_is_an_over_arrival(tmp_path, old, new, n):
    text = gzip.open(SASS, "rt").read()
    assert old in text
    f = tmp_path / "bad.sass"
    f.write_text(text.replace(old, new))
    code, out = ptx(HAND, "--arg", "3=6", "--sass", f)
    assert code == 1, out
    assert f", {n} over-arriving" in out
    assert out.count("over_arrival in the SASS") == n
    assert "ptx_ops.cuh:" in out   # the source line of the arrive


def test_sass_that_cannot_be_read_is_one_line_exit_2(tmp_path):
    code, out = ptx(HAND, "--arg", "3=6", "--sass", tmp_path / "missing.sass")
    assert code == 2 and len(out.strip().splitlines()) == 1 and "cannot read it" in out, out
