"""pipeproof ptx on the libraries' stock kernels (tests/fixtures/ptx/, compiled output): what
issue 48's reading of them needs, each piece on its own: bare `mbarrier.expect_tx`
(expect_bytes), barrier arrays whose inits are unrolled in the source, `.wide` multiplies of
narrow immediates, branches on data the reader does not know, and a warp whose arrive only
some lanes make (CUTLASS's consumer release).
"""
import gzip
import re

import pytest

from tests.mojo_support import run_pipeproof
from tests.replay_support import check_replay

PTX = __import__("pathlib").Path(__file__).parent / "fixtures" / "ptx"
TILELANG = PTX / "tilelang_gemm_sm90a.ptx.gz"


def test_tilelang_gemm_reads_with_its_bare_expect_tx_and_three_stages(tmp_path):
    out_spec = tmp_path / "tl.toml"
    code, out = run_pipeproof("ptx", TILELANG, "--emit-spec", out_spec)
    text = out_spec.read_text()
    # mbarrier[0..2].init(1) and mbarrier[3..5].init(128), one statement a line: one ring of 3
    assert re.search(r"^stages = 3$", text, re.M) and "consumer_arrive_count = 128" in text
    # expect_transaction (no arrival), the A copy, arrive_and_expect_tx, the two B copies
    body = re.findall(r'"(expect_bytes \d+|expect_tx \d+|copy \d+)",\s+# (\w+) tilelang_gemm_sm90a.cu:(\d+)', text)
    assert body == [("expect_bytes 16384", "expect_transaction", "48"), ("copy 16384", "tma_load", "49"),
                    ("expect_tx 16384", "arrive_and_expect_tx", "50"), ("copy 8192", "tma_load", "53"),
                    ("copy 8192", "tma_load", "53")], text
    # Warps 1-3 of the producer warp group wait on `empty` every iteration and do nothing else:
    # nothing keeps them within a phase of the consumers, so a lagging one waits with a parity
    # that names another phase (PTX ISA mbarrier.try_wait: the parity of the current or the
    # immediately preceding phase), the lapped-observer bug of bug_lapped_observer.toml.
    assert code == 1, out
    assert re.search(r": phase_alias after 21 steps", out), out
    assert "warp1_x3[0] waits on empty[0]" in out
    steps = out.split("in the kernel:")[1]
    assert "tilelang_gemm_sm90a.cu:48" in steps and "tilelang_gemm_sm90a.cu:86" in steps


def test_the_tilelang_counterexample_replays(tmp_path):
    from pipeproof.checker.engines.verifier import verify
    from pipeproof.spec.load import load_spec
    f = tmp_path / "tl.toml"
    run_pipeproof("ptx", TILELANG, "--emit-spec", f)
    spec = load_spec(str(f))
    result = verify(spec)
    assert set(result.traces) == {"phase_alias"}
    check_replay(spec, result, "phase_alias")


def tiny_kernel(body: str):
    """A one-parameter sm_90a kernel of `body` (its register declarations first), parsed."""
    from pipeproof.spec.ptx.module import parse_module
    text = (".version 8.0\n.target sm_90a\n.address_size 64\n"
            ".visible .entry k(.param .u64 k_param_0)\n{\n" + body + "}\n")
    return parse_module(text, "k.ptx").kernels()[0]


def test_a_data_branch_without_protocol_ops_is_skipped_and_its_registers_unknown():
    from pipeproof.spec.ptx.regions import Regions
    k = tiny_kernel("""
  .reg .pred %p<4>; .reg .b32 %r<9>; .reg .b64 %rd<4>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [k_param_0];
  ld.global.u64 %rd2, [%rd1];
  setp.eq.s64 %p1, %rd2, 0;
  @%p1 bra $L__A;
  ld.f32 %f1, [%rd2];
  mov.u32 %r1, 7;
$L__A:
  setp.eq.s64 %p2, %rd2, 1;
  @%p2 bra $L__B;
  bar.sync 1;
$L__B:
  setp.eq.s64 %p3, %rd2, 2;
  @%p3 bra $L__C;
  call.uni __assertfail, ();
  trap;
$L__C:
  ret;
""")
    r = Regions(k)
    branches = [i for i, inst in enumerate(k.insts) if inst.opcode == "bra" and inst.guard]
    join, written, stores = r.skip(branches[0])
    assert k.insts[join].opcode == "setp.eq.s64" and written == {"%f1", "%r1"} and not stores
    why = r.skip(branches[1])
    assert isinstance(why, str) and "bar.sync" in why
    # a side that ends in trap (a failed assertion) is not a path: the assertion holds
    join, written, stores = r.skip(branches[2])
    assert k.insts[join].opcode == "ret" and written == set() and not stores


def test_a_wide_multiply_reads_its_immediate_at_the_operand_width():
    # TileLang's ko % 3: mul.wide.u16 by -21845 is by 0xAAAB, then >> 17 is ko / 3
    from pipeproof.spec.ptx.interp import PtxThread
    from pipeproof.spec.ptx.module import parse_module
    text = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n" \
           "  .reg .b16 %rs<2>; .reg .b32 %r<2>;\n  mul.wide.u16 %r1, %rs1, -21845;\n  ret;\n}\n"
    m = parse_module(text, "k.ptx")
    k = m.kernels()[0]
    inst = next(i for i in k.insts if i.opcode == "mul.wide.u16")
    m.pair = None   # set by the extractor (spec/mojo/parse.py): unused by arithmetic
    th = PtxThread(m, k, 0, 0, 1, 32, {}, {})
    for ko in (0, 1, 5, 200):
        regs = {"%rs1": ko}
        th.execute(regs, inst, ())
        assert regs["%r1"] >> 17 == ko // 3, (ko, regs["%r1"])


def test_a_release_only_some_lanes_make_is_the_warps_with_those_lanes():
    # CUTLASS's consumer release (ex48): every 8th lane of a consumer warp group signals, each
    # on its own CTA's empty barrier, and lane 0 of some warps is not one of them; the reader
    # now goes past it (to the multicast targets, which the model cannot state yet)
    text = gzip.open(PTX / "cutlass_ex48_sm90a.ptx.gz", "rt").read()
    assert "mbarrier.arrive.shared::cluster.b64" in text
    code, out = run_pipeproof("ptx", PTX / "cutlass_ex48_sm90a.ptx.gz", "--cluster", "8")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "per-lane split" not in out and "guard predicate" not in out
    assert "lands on CTAs [0, 4] from CTA 0" in out, out


# A data branch spliced into the hand-written kernel (a value loaded through its pointer
# argument, which the reader does not know): the reading is the unmodified kernel's, and the
# kernel's bugs are still caught (the skip loses no violation).
HAND = PTX / "hand_pc_sm90.ptx.gz"
PARAM3 = "ld.param.u32 \t%r44, [_Z7pc_sm9014CUtensorMap_stPKhPfi_param_3];\n"
DATA_BRANCH = ("\t.reg .b32 %rU<4>;\n\t.reg .pred %pU<3>;\n\tld.global.u32 %rU1, [%rd7];\n"
               "\tsetp.eq.u32 %pU1, %rU1, 0;\n\t@%pU1 bra $L__U1;\n\tadd.s32 %rU2, %rU1, 1;\n"
               "\tmov.u32 %rU3, %rU2;\n$L__U1:\n")


def spliced(tmp_path, extra="", edits=()):
    text = gzip.open(HAND, "rt").read()
    assert PARAM3 in text
    text = text.replace(PARAM3, PARAM3 + DATA_BRANCH + extra)
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    f = tmp_path / "spliced.ptx"
    f.write_text(text)
    return f


def states(out):
    return re.search(r"([\d,]+) states", out).group(1)


def test_a_data_branch_in_a_working_kernel_changes_nothing(tmp_path):
    code0, out0 = run_pipeproof("ptx", HAND, "--arg", "3=6")
    code, out = run_pipeproof("ptx", spliced(tmp_path), "--arg", "3=6")
    assert code == code0 == 0 and ": ok (" in out, out
    assert states(out) == states(out0)


def test_a_data_branch_keeps_the_kernels_bug(tmp_path):
    drop = [("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];", "")]
    code, out = run_pipeproof("ptx", spliced(tmp_path, edits=drop), "--arg", "3=6")
    assert code == 1 and re.search(r": deadlock after \d+ steps", out), out


def test_a_register_the_data_branch_wrote_is_unknown_after_it(tmp_path):
    # a later branch on it is refused in one line, not guessed
    f = spliced(tmp_path, "\tsetp.eq.u32 %pU2, %rU3, 0;\n\t@%pU2 bra $L__U2;\n\tbar.sync 9;\n$L__U2:\n")
    code, out = run_pipeproof("ptx", f, "--arg", "3=6")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "guard predicate %pU2" in out and "bar.sync" in out


# The CuTe DSL's Hopper persistent GEMM (cluster 2x1, 6 stages, 64 k-blocks of a 4096^3 problem
# fixed at compile time): one tile per CTA at --grid 1024. Its consumer waits for the first
# k-block before the loop that does the other 63 (a peeled iteration): each wait on the ring
# starts an item (spec/mojo/build.py _cuts).
DSL_HOPPER = PTX / "dsl_hopper_gemm_sm90a.ptx.gz"


def ok_at_one_tile_per_cta(path, tmp_path) -> str:
    """`pipeproof ptx PATH --cluster 2 --grid 1024` is ok; the extracted spec's text."""
    f = tmp_path / "one_tile.toml"
    code, out = run_pipeproof("ptx", path, "--cluster", "2", "--grid", "1024", "--emit-spec", f)
    assert code == 0 and re.search(r"one_tile.toml: ok \(", out), out[-2000:]
    return f.read_text()


def test_the_dsl_hopper_gemm_is_ok_at_one_tile_per_cta(tmp_path):
    text = ok_at_one_tile_per_cta(DSL_HOPPER, tmp_path)
    for line in ("cluster_size = 2", "stages = 6", "consumer_arrive_count = 8", "items = 64"):
        assert re.search(rf"^{line}$", text, re.M), line
    producer = re.findall(r'"([^"]+)",\s+# \w+ dense_gemm_persistent.py:(\d+)', text.split("[[role]]")[1])
    # A from its own CTA, B multicast: each CTA copies half of B into both (8192 of 16384)
    assert producer[:4] == [("wait_empty", "744"), ("expect_tx 32768", "744"), ("copy 16384", "753"),
                            ("copy 8192 to=all", "762")], producer


def test_the_dsl_hopper_gemm_with_halved_expect_bytes_reads_before_fill(tmp_path):
    text = gzip.open(DSL_HOPPER, "rt").read()
    halved = re.sub(r"(mov\.b32 \t%r\d+, )32768;", r"\g<1>16384;", text)
    assert halved.count("16384;") > text.count("16384;")
    f = tmp_path / "halved.ptx"
    f.write_text(halved)
    code, out = run_pipeproof("ptx", f, "--cluster", "2", "--grid", "1024")
    assert code == 1 and re.search(r"\(extracted\): read_before_fill after 6 steps", out), out[-2000:]
    assert "dense_gemm_persistent.py:753" in out.split("in the kernel:")[1]


# The CuTe DSL's Blackwell persistent GEMM (2-SM tcgen05, cluster 2x1, 8 stages): each CTA's
# TMA copies complete on the pair's leader (the barrier address `& 0xFEFFFFF8`: the peer bit
# cleared), whose MMA warp reads both halves and releases both CTAs' slots (commit multicast).
DSL_BLACKWELL = PTX / "dsl_blackwell_gemm_sm100a.ptx.gz"


def test_the_dsl_blackwell_2sm_gemm_is_ok_at_one_tile_per_cta(tmp_path):
    text = ok_at_one_tile_per_cta(DSL_BLACKWELL, tmp_path)
    assert re.search(r"^stages = 8$", text, re.M) and "cluster_size = 2" in text
    roles = {r.split('"')[1]: r for r in text.split("[[role]]")[1:]}
    # the leader expects both CTAs' bytes; the peer's copies land on the leader's barrier
    assert '"expect_tx 49152"' in roles["warp5_cta0"] and '"copy 16384"' in roles["warp5_cta0"]
    assert '"copy 16384 to=peer"' in roles["warp5_cta1"] and "expect_tx" not in roles["warp5_cta1"]
    assert '"commit_empty to=all' in roles["warp4_cta0"]


@pytest.mark.slow
def test_the_dsl_blackwell_copies_completing_on_their_own_cta_deadlock(tmp_path):
    text = gzip.open(DSL_BLACKWELL, "rt").read()
    old = "and.b32 \t%r22, %r20, -16777224;"
    assert text.count(old) == 1
    f = tmp_path / "own.ptx"
    f.write_text(text.replace(old, "mov.b32 \t%r22, %r20;"))
    code, out = run_pipeproof("ptx", f, "--cluster", "2", "--grid", "1024")
    assert code == 1 and re.search(r"\(extracted\): deadlock after \d+ steps", out), out[-2000:]
    assert "cta0.warp4_cta0[0] waits on cta0.full[0]" in out


def test_a_builder_bug_is_one_line_exit_4_not_a_traceback(monkeypatch):
    import pipeproof.spec.mojo.build as build

    def broken(*args, **kw):
        raise AttributeError("'Opaque' object has no attribute 'offset'")
    monkeypatch.setattr(build, "prepare", broken)
    code, out = run_pipeproof("ptx", TILELANG)
    # DESIGN's exit codes: 4 is an internal error (issue 49: one line)
    assert code == 4 and len(out.strip().splitlines()) == 1, out
    assert "internal error AttributeError" in out and "Traceback" not in out


def test_a_one_slot_rings_copy_bytes_reach_the_next_buffer(monkeypatch):
    # FA4's Q tile: one slot, two 16384-byte halves (hdim 128 in two 64-wide TMA boxes) at
    # +66560 and +82944, the K ring's first slot at +99328: no stride between slots gives them
    import pipeproof.spec.ptx.extract as E
    got = {}
    orig = E.PtxExtractor.one_slot_bytes

    def spy(self, per_op, stride):
        got.update(orig(self, per_op, stride))
        return got
    monkeypatch.setattr(E.PtxExtractor, "one_slot_bytes", spy)
    shape = [a for p in range(4) for a in ("--arg", f"{p}+0=1024", "--arg", f"{p}+4=128",
                                           "--arg", f"{p}+8=16", "--arg", f"{p}+12=2")]
    code, out = run_pipeproof("ptx", PTX / "fa4_fwd_sm90a.ptx.gz", *shape)
    assert got == {("flash_fwd_sm90.py:879", "cp"): 16384}
    # what stops it next: the epilogue's named barrier 1 synced by 256 threads, then by 288
    assert code == 2 and "named barrier 1 used with different thread counts" in out, out


def flip_parity(text, lines):
    """The try_wait at each of `lines` (1-based) waits on the other parity (its scope gets a
    register holding the flipped bit)."""
    out = text.split("\n")
    for n in lines:
        m = re.match(r"(\s*)mbarrier.try_wait.parity.shared.b64 P1, (\[%r\d+\]), (%r\d+), 10000000;", out[n - 1])
        assert m, out[n - 1]
        out[n - 1] = (f"{m.group(1)}xor.b32 flp, {m.group(3)}, 1; "
                      f"mbarrier.try_wait.parity.shared.b64 P1, {m.group(2)}, flp, 10000000;")
        k = next(k for k in range(n - 2, n - 8, -1) if ".reg .pred" in out[k])
        out[k] += " .reg .b32 flp;"
    return "\n".join(out)


DSL_MUTATIONS = [
    # (what, edit of the PTX text, kind, the kernel line the trace names)
    ("the B multicast mask missing CTA 1",
     lambda t: re.sub(r"(mov\.b16 \t%rs\d+, )3;", r"\g<1>1;", t), "deadlock", "dense_gemm_persistent.py:762"),
    ("the consumer's release dropped",
     lambda t: re.sub(r"mbarrier\.arrive\.shared::cluster\.b64 _, \[%r\d+\], %r\d+;", "", t),
     "deadlock", "dense_gemm_persistent.py:862"),
    ("the consumer's wait parity flipped", lambda t: flip_parity(t, (950, 1264, 1455)),
     "read_before_fill", "dense_gemm_persistent.py:862"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,edit,kind,line", DSL_MUTATIONS, ids=[m[0] for m in DSL_MUTATIONS])
def test_a_mutation_of_the_dsl_hopper_gemm_is_caught(tmp_path, what, edit, kind, line):
    text = gzip.open(DSL_HOPPER, "rt").read()
    mutant = edit(text)
    assert mutant != text
    f = tmp_path / "mutant.ptx"
    f.write_text(mutant)
    code, out = run_pipeproof("ptx", f, "--cluster", "2", "--grid", "1024")
    assert code == 1 and re.search(rf"\(extracted\): {kind} after \d+ steps", out), out[-2000:]
    assert line in out.split("in the kernel:")[1], out[-3000:]


def test_a_data_branch_that_stores_is_skipped_only_for_global_memory():
    from pipeproof.spec.ptx.regions import Regions
    k = tiny_kernel("""
  .reg .pred %p<3>; .reg .b32 %r<3>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_param_0];
  ld.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L__A;
  st.global.u32 [%rd1], %r1;
$L__A:
  setp.eq.u32 %p2, %r1, 1;
  @%p2 bra $L__B;
  st.shared.u32 [%r1], %r1;
$L__B:
  ret;
""")
    r = Regions(k)
    first, second = [i for i, inst in enumerate(k.insts) if inst.opcode == "bra" and inst.guard]
    # a global store goes through a pointer argument (memory the interpreter never keeps); the
    # skip says it stored, so the module's own .global variables read as unknown after it
    assert r.skip(first)[2] is True
    assert "a store to shared or generic memory" in r.skip(second)
