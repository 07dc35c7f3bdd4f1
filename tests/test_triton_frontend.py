"""`pipeproof triton`: real compiler output, generated here by the installed Triton (on the CPU),
extracted and checked; then the IR mutated the way real bugs look (docs/triton.md).

Without Triton the tests that compile skip with the reason; the parser and extractor tests on
hand-written IR below them always run.
"""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from pipeproof.checker.cli import main
from pipeproof.spec.schema import SpecError
from pipeproof.spec.ttgir.parse import parse_ttgir

triton = pytest.importorskip("triton", reason="the Triton front end's tests need "
                                              "pip install 'pipeproof[triton]'")


def _load_dump():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent / "triton_kernels" / "dump_ttgir.py"
    spec = importlib.util.spec_from_file_location("pipeproof_dump_ttgir", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ttgir(tmp_path_factory):
    """name -> path of the kernel's TTGIR, compiled once per test session."""
    dump = _load_dump()
    out = tmp_path_factory.mktemp("ttgir")
    paths = {}
    for name, entry in dump.kernels():
        text = dump.compile_entry(entry).asm["ttgir"]
        (out / f"{name}.ttgir").write_text(text)
        paths[name] = out / f"{name}.ttgir"
    return paths


def check(path, *args):
    out = CliRunner().invoke(main, ["triton", str(path), "--json", *args])
    assert out.exit_code in (0, 1, 2, 3), out.output
    if out.exit_code == 2:
        return {"error": out.stderr.strip(), "exit": 2}
    doc = json.loads(out.stdout)
    doc["exit"] = out.exit_code
    return doc


def kind(doc):
    if doc.get("error"):
        return "error"
    return doc["violation"]["kind"] if doc["verdict"] == "violation" else doc["verdict"]


# ------------------------------------------------------------------ the kernels as compiled

@pytest.mark.parametrize("name,args,verdict,states", [
    ("gluon_ring_rowsum_sm100", ["--arg", "n_tiles=5"], "ok", 5),
    ("gluon_ring_rowsum_sm90", ["--arg", "n_tiles=5"], "ok", 5),
    ("gluon_ring_matmul_sm90", ["--arg", "K=512"], "ok", 38),
    ("gluon_ring_matmul_drained_sm100", ["--arg", "K=512"], "ok", 34),
])
def test_correct_kernels_are_ok(ttgir, name, args, verdict, states):
    doc = check(ttgir[name], *args)
    assert (kind(doc), doc["states"], doc["exit"]) == (verdict, states, 0)


@pytest.mark.parametrize("name,args", [
    ("gluon_ring_matmul_sm100", ["--arg", "K=512"]),
    ("ws_matmul_sm100", ["--arg", "M=256", "--arg", "N=128", "--arg", "K=256"]),
    ("ws_attention_sm100", ["--arg", "N_CTX=512"]),
])
def test_tcgen05_kernels_exit_with_mma_arrivals_in_flight(ttgir, name, args):
    """None of these waits for the empty-barrier arrivals of its last MMAs before the CTA
    ends: DESIGN's inflight_at_exit (PTX: a CTA outlives what targets its shared memory). The
    same Gluon ring with a producer tail (gluon_ring_matmul_drained_sm100) is ok."""
    doc = check(ttgir[name], *args)
    assert kind(doc) == "inflight_at_exit"
    assert doc["exit"] == 1
    assert doc["source"] and all(s["line"] for s in doc["source"])


def test_single_partition_software_pipelining_is_refused_with_its_line(ttgir):
    doc = check(ttgir["sm90_pipelined"], "--arg", "K=512")
    assert doc["exit"] == 2
    assert "software pipelining within one partition" in doc["error"]
    assert "sm90_pipelined.py:" in doc["error"]


def test_a_loop_bound_from_an_unknown_argument_is_an_error_naming_it(ttgir):
    doc = check(ttgir["gluon_ring_rowsum_sm100"])
    assert doc["exit"] == 2 and "n_tiles" in doc["error"] and "--arg" in doc["error"]


def test_the_extracted_spec_is_written_and_reads_like_a_ring(ttgir, tmp_path):
    target = tmp_path / "rowsum.toml"
    out = CliRunner().invoke(main, ["triton", str(ttgir["gluon_ring_rowsum_sm100"]),
                                    "--arg", "n_tiles=5", "--emit-spec", str(target)])
    assert out.exit_code == 0
    text = target.read_text()
    assert "[ring.empty]" in text and '"copy 8192",' in text and '"wait_full",' in text
    assert "every=" not in text  # the IR follows the ring idiom: no per-item guards
    assert "gluon_mbarrier.py:" in text  # each op names its kernel line


def test_code_before_warp_specialize_happens_before_the_workers(ttgir, tmp_path):
    """The attention kernel loads Q before ttg.warp_specialize and the MMA partition reads it:
    the workers start at the op (named barrier ws_start) and the code after it runs at the
    join (ws_end); without them the model would let the MMA read Q before it landed."""
    target = tmp_path / "att.toml"
    out = CliRunner().invoke(main, ["triton", str(ttgir["ws_attention_sm100"]), "--arg",
                                    "N_CTX=512", "--emit-spec", str(target)])
    assert out.exit_code == 1, out.output
    text = target.read_text()
    assert "[barrier.ws_start]" in text and "[barrier.ws_end]" in text
    assert "read_before_fill" not in out.output and "phase_alias" not in out.output
    plain = re.sub(r'\s*"sync ws_(start|end)",[^\n]*', "", text)
    plain = re.sub(r"\[barrier\.ws_(start|end)\]\nroles = \[[^\]]*\]\n", "", plain)
    (tmp_path / "att_unsynced.toml").write_text(plain)
    bare = CliRunner().invoke(main, ["verify", "--json", str(tmp_path / "att_unsynced.toml")])
    assert json.loads(bare.stdout)["violation"]["kind"] == "read_before_fill"


def test_prove_the_extracted_ring_for_every_trip_count(ttgir):
    for name, args in (("gluon_ring_rowsum_sm100", ["--arg", "n_tiles=6"]),
                       ("gluon_ring_rowsum_sm90", ["--arg", "n_tiles=4"])):
        out = CliRunner().invoke(main, ["triton", str(ttgir[name]), *args, "--prove"])
        assert out.exit_code == 0, out.output
        assert "proved for every item count" in out.output


# ------------------------------------------------------------------ mutations

def _mutate(path, tmp_path, fn):
    text = path.read_text()
    new = fn(text)
    assert new != text, "the mutation did not apply"
    out = tmp_path / path.name
    out.write_text(new)
    return out


def _line_of(text, pattern):
    """The kernel line (file:line) of the first op line matching pattern."""
    module = parse_ttgir(text)
    for i, line in enumerate(text.splitlines(), 1):
        if re.search(pattern, line):
            loc = re.search(r"loc\((#loc\d+)\)\s*$", line)
            return module.locs.get(loc.group(1)) if loc else None
    raise AssertionError(pattern)


def _consumer_block(text):
    """The default partition's text (the consumer of the row-sum ring)."""
    start = text.index("default {")
    return start, text.index("partition0(", start)


def _in_consumer(text, old, new, count=1):
    a, b = _consumer_block(text)
    return text[:a] + text[a:b].replace(old, new, count) + text[b:]


ROWSUM = ("gluon_ring_rowsum_sm100", ["--arg", "n_tiles=5"])


def test_mutation_init_count_plus_one_deadlocks(ttgir, tmp_path):
    path = _mutate(ttgir[ROWSUM[0]], tmp_path, lambda t: re.sub(
        r"(ttng\.init_barrier %[135]), 1 ", r"\1, 2 ", t))  # every empty[s]: count 2
    doc = check(path, *ROWSUM[1])
    assert kind(doc) == "deadlock"


def test_mutation_phase_xor_flipped_is_caught_at_the_wait(ttgir, tmp_path):
    def flip(t):  # the loader's `phase ^ 1` becomes `phase ^ 0`
        return re.sub(r"(arith\.xori %phase_\d+, )%c1_i32_0", r"\1%c0_i32_1", t, count=1)
    path = _mutate(ttgir[ROWSUM[0]], tmp_path, flip)
    doc = check(path, *ROWSUM[1])
    assert kind(doc) == "deadlock"
    wait_line = _line_of(path.read_text(), r"ttng\.wait_barrier %6, %7")
    stuck = [s for s in doc["source"] if s["step"] == "end"]
    assert (stuck[-1]["partition"], stuck[-1]["line"]) == ("partition0", wait_line)


def test_mutation_expect_bytes_changed(ttgir, tmp_path):
    path = _mutate(ttgir[ROWSUM[0]], tmp_path,
                   lambda t: t.replace("ttng.barrier_expect %8, 8192", "ttng.barrier_expect %8, 4096"))
    doc = check(path, *ROWSUM[1])
    assert kind(doc) in ("deadlock", "read_before_fill")
    assert doc["exit"] == 1


def test_mutation_arrive_removed_deadlocks(ttgir, tmp_path):
    path = _mutate(ttgir[ROWSUM[0]], tmp_path,
                   lambda t: re.sub(r"\n\s*ttng\.arrive_barrier %9, 1, %true[^\n]*", "", t))
    doc = check(path, *ROWSUM[1])
    assert kind(doc) == "deadlock"


def test_mutation_stage_index_off_by_one_reads_another_slot(ttgir, tmp_path):
    def shift(t):  # the consumer waits on ready[(s + 1) % 3] instead of ready[s]
        return _in_consumer(t, "%8 = ttg.memdesc_index %ready[%s]",
                            "%s_p1 = arith.addi %s, %c1_i32 : i32\n        "
                            "%s_off = arith.remsi %s_p1, %c3_i32 : i32\n        "
                            "%8 = ttg.memdesc_index %ready[%s_off]")
    path = _mutate(ttgir[ROWSUM[0]], tmp_path, shift)
    doc = check(path, *ROWSUM[1])
    assert doc["exit"] == 1 and kind(doc) in ("read_before_fill", "deadlock", "phase_alias")
    wait_line = _line_of(path.read_text(), r"ttng\.wait_barrier %8, %phase_1")
    assert wait_line in [s["line"] for s in doc["source"]]


def test_mutation_wait_moved_after_the_read_is_read_before_fill(ttgir, tmp_path):
    def move(t):
        a, b = _consumer_block(t)
        block = t[a:b]
        wait = re.search(r"\n\s*ttng\.wait_barrier %8, %phase_1, %true[^\n]*", block).group(0)
        block = block.replace(wait, "", 1)
        load = re.search(r"\n\s*%tile_2 = ttg\.local_load[^\n]*", block).group(0)
        block = block.replace(load, load + wait, 1)
        return t[:a] + block + t[b:]
    path = _mutate(ttgir[ROWSUM[0]], tmp_path, move)
    doc = check(path, *ROWSUM[1])
    assert kind(doc) == "read_before_fill"
    read_line = _line_of(path.read_text(), r"ttg\.local_load %tile ")
    steps = [s for s in doc["source"] if s["step"] != "end"]
    assert steps[-1]["line"] == read_line  # the last step is the read, at its line


# ------------------------------------------------------------------ bad input

def test_a_file_that_is_not_ttgir_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "k.ttgir"
    bad.write_text("hello world\n")
    out = CliRunner().invoke(main, ["triton", str(bad)])
    assert out.exit_code == 2 and "Traceback" not in out.output
    with pytest.raises(SpecError):
        parse_ttgir("hello", "x.ttgir")


def test_an_unsupported_barrier_op_names_the_op_and_line(ttgir, tmp_path):
    path = _mutate(ttgir[ROWSUM[0]], tmp_path, lambda t: t.replace(
        "ttng.arrive_barrier %9, 1, %true", "ttng.async_copy_mbarrier_arrive %9", 1))
    doc = check(path, *ROWSUM[1])
    assert doc["exit"] == 2 and "ttng.async_copy_mbarrier_arrive" in doc["error"]
    assert "not supported" in doc["error"]


# ------------------------------------------------------------------ the command line's forms

ROWSUM_DESC = ("x_desc=tensordesc<fp16[64, 64],NVMMASharedLayout(swizzle_byte_width=128, "
               "element_bitwidth=16, rank=2, transposed=False, fp4_padded=False, cga_layout=[])>")


def test_a_plain_gluon_function_compiles_from_the_command_line_with_a_trip_count():
    from pathlib import Path
    kernel = Path(__file__).parent / "triton_kernels" / "gluon_mbarrier.py"
    out = CliRunner().invoke(main, [
        "triton", f"{kernel}::gluon_ring_rowsum", "--target", "sm100", "--json",
        "--signature", ROWSUM_DESC, "--signature", "out_ptr=*fp32", "--signature", "n_tiles=i32",
        "--constexpr", "STAGES=3", "--trip-count", "7"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert (doc["verdict"], doc["states"]) == ("ok", 5)
    missing = CliRunner().invoke(main, ["triton", f"{kernel}::gluon_ring_rowsum"])
    assert missing.exit_code == 2 and "without --signature or --constexpr" in missing.output
    unknown = CliRunner().invoke(main, ["triton", f"{kernel}::no_such_kernel"])
    assert unknown.exit_code == 2 and "no jit function or KERNELS entry" in unknown.output


def test_trip_count_sets_the_items(ttgir, tmp_path):
    for n in (1, 4, 7):
        target = tmp_path / f"rowsum{n}.toml"
        out = CliRunner().invoke(main, ["triton", str(ttgir["gluon_ring_rowsum_sm100"]),
                                        "--trip-count", str(n), "--emit-spec", str(target)])
        assert out.exit_code == 0, out.output
        assert re.search(rf"^items = {n}$", target.read_text(), re.M)


# ------------------------------------------------------------------ mutations of compiler output

GENERIC = [
    ("ws_matmul_sm100", ["--arg", "M=128", "--arg", "N=128", "--arg", "K=256"]),
    ("gluon_ring_matmul_sm90", ["--arg", "K=512"]),
    ("gluon_ring_matmul_drained_sm100", ["--arg", "K=512"]),
]


@pytest.mark.parametrize("name,args", GENERIC)
def test_every_arrive_count_plus_one_is_caught(ttgir, tmp_path, name, args):
    """Each arrive_barrier / barrier_expect site's barriers initialised with one more
    arrival: some wait never completes."""
    text = ttgir[name].read_text()
    # the barrier arrays the first barrier_expect targets: every init of that array +1
    path = _mutate(ttgir[name], tmp_path, lambda t: re.sub(
        r"(ttng\.init_barrier %\S+), 1 ", r"\1, 2 ", t))
    doc, base = check(path, *args), check(ttgir[name], *args)
    assert doc["exit"] == 1 and kind(doc) == "deadlock" != kind(base)
    assert text != path.read_text()


@pytest.mark.parametrize("name,args", GENERIC)
def test_a_removed_expect_is_caught(ttgir, tmp_path, name, args):
    def drop(t):
        return re.sub(r"\n\s*ttng\.barrier_expect [^\n]*", "", t, count=1)
    path = _mutate(ttgir[name], tmp_path, drop)
    doc, base = check(path, *args), check(ttgir[name], *args)
    assert doc["exit"] == 1 and kind(doc) == "deadlock" != kind(base)


# ------------------------------------------------------------------ one agent per warp

def test_per_warp_agents_follow_the_lowering_of_the_release(ttgir):
    """With --warps each warp is an agent: waits and reads by every warp, the arrive by the
    leader. Triton 3.9's lowering puts a partition bar.sync before the arrive (triton#10035):
    ok. The older lowering (bar.sync before the wait only) lets the leader release the slot
    while the other warps have not read it: the refill overwrites it."""
    path = ttgir["gluon_ring_rowsum_sm100"]
    new = check(path, "--arg", "n_tiles=5", "--warps", "--lowering", "3.9.0")
    assert (kind(new), new["states"]) == ("ok", 137)
    old = check(path, "--arg", "n_tiles=5", "--warps", "--lowering", "3.6.0")
    assert kind(old) == "overwrite_before_drain"
    arrive_line = _line_of(path.read_text(), r"ttng\.arrive_barrier %9")
    assert arrive_line in [s["line"] for s in old["source"]]
    one = check(path, "--arg", "n_tiles=5")
    assert (kind(one), one["states"]) == ("ok", 5)  # one agent per partition: no such race


def test_a_bad_lowering_version_is_one_line(ttgir):
    doc = check(ttgir["gluon_ring_rowsum_sm100"], "--arg", "n_tiles=5", "--warps",
                "--lowering", "latest")
    assert doc["exit"] == 2 and "--lowering 'latest'" in doc["error"]
