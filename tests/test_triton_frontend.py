"""`pipeproof triton`: real compiler output, generated here by the installed Triton (on the CPU),
extracted and checked; then the IR mutated the way real bugs look (docs/triton.md).

Without Triton (`pip install 'pipeproof[triton]'`; the test extra brings it on Linux x86-64)
the module skips with that reason: every test here starts from IR Triton compiled.
"""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from pipeproof.checker.cli.main import main
from pipeproof.spec.schema import SpecError
from pipeproof.spec.ttgir.parse import parse_ttgir

__import__("os").environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9's default, quietly
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
    ("gluon_ring_rowsum_sm100", ["--arg", "n_tiles=5"], "ok", 2),
    ("gluon_ring_rowsum_sm90", ["--arg", "n_tiles=5"], "ok", 2),
    ("gluon_ring_matmul_sm90", ["--arg", "K=512"], "ok", 2),   # reduced counts since issue 35 (38, 34, 141 before)
    ("gluon_ring_matmul_drained_sm100", ["--arg", "K=512"], "ok", 10),
    ("sm90_pipelined", ["--arg", "K=512"], "ok", 2),
])
def test_correct_kernels_are_ok(ttgir, name, args, verdict, states):
    doc = check(ttgir[name], *args)
    assert (kind(doc), doc["states"], doc["exit"]) == (verdict, states, 0)


@pytest.mark.parametrize("name,args", [
    ("gluon_ring_matmul_sm100", ["--arg", "K=512"]),
    ("ws_matmul_sm100", ["--arg", "M=256", "--arg", "N=128", "--arg", "K=256"]),
    ("ws_attention_sm100", ["--arg", "N_CTX=512"]),
])
def test_tcgen05_kernels_are_ok_because_commits_fire_in_order(ttgir, name, args):
    """None of these waits for the empty-barrier arrivals of its last MMAs, but the epilogue
    waits for the accumulator's commit, which the MMA partition issues after them. A
    tcgen05.commit tracks every earlier async operation of its thread (DESIGN, revised
    2026-12-02: an agent's commits fire in issue order), so when the accumulator's arrives the
    input ring's have too and nothing is in flight when the CTA ends: ok, no warning, under
    PTX's strict exit rule as well. (Until that revision these kernels, shipped as correct by
    Triton, were reported inflight_at_exit.)"""
    doc = check(ttgir[name], *args)
    assert (kind(doc), doc["exit"], doc["warnings"]) == ("ok", 0, [])
    strict = check(ttgir[name], *args, "--strict-exit")
    assert (kind(strict), strict["exit"]) == ("ok", 0)


def test_software_pipelining_in_one_partition_fills_ahead(ttgir, tmp_path):
    """Triton's sm90 pipeliner loads items 0 and 1 before the loop and item k+2 in item k: the
    n-th load into each buffer array is item n, so the spec says `ahead=`."""
    target = tmp_path / "swp.toml"
    doc = check(ttgir["sm90_pipelined"], "--arg", "K=512", "--emit-spec", str(target))
    assert kind(doc) == "ok"
    text = target.read_text()
    assert '"copy 16384 ahead=0"' in text and '"copy 16384 ahead=1"' in text
    assert re.search(r'"copy 16384 ahead=2 every=8 at=0"', text)
    assert "ahead=2 every=8 at=6" not in text  # the last two items load nothing


@pytest.mark.parametrize("name, stages", [("sm90_pipelined_s2", 2), ("sm90_pipelined_s4", 4)])
def test_software_pipelining_at_other_depths(ttgir, tmp_path, name, stages):
    """num_stages = n: the loop loads n - 1 items ahead, into an n-slot ring."""
    target = tmp_path / "swp.toml"
    doc = check(ttgir[name], "--arg", "K=512", "--emit-spec", str(target))
    assert kind(doc) == "ok"
    text = target.read_text()
    assert re.search(rf"^stages = {stages}$", text, re.M)
    assert f'ahead={stages - 1} every=8 at=0"' in text


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
    assert out.exit_code == 0, out.output  # ok since R1 (commits fire in order)
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


def test_prove_never_calls_a_working_kernel_violated_at_a_count_it_does_not_run(ttgir):
    """Triton's WS matmul at K=256 (4 k-blocks a tile): the extracted spec's per-item shape
    (`every=4`) is the kernel's at 4 items only, and that spec is first violated at n = 5, a
    program the kernel never runs. --prove says so and exits 3 (inconclusive), never 1; the
    launch's own count is ok. A real bug, violated at the kernel's own count, still exits 1."""
    args = ["--arg", "M=256", "--arg", "N=128", "--arg", "K=256"]
    doc = check(ttgir["ws_matmul_sm100"], *args, "--prove")
    assert (doc["exit"], doc["kernel_status"], doc["proof"]["status"]) == (3, "unknown", "violated")
    assert doc["proof"]["items"] == 5
    out = CliRunner().invoke(main, ["triton", str(ttgir["ws_matmul_sm100"]), *args, "--prove"])
    assert out.exit_code == 3 and "inconclusive for the kernel" in out.output, out.output
    assert kind(check(ttgir["ws_matmul_sm100"], *args)) == "ok"


def test_prove_of_a_kernel_broken_at_its_own_count_exits_1(ttgir, tmp_path):
    m = BY_NAME["arrive_removed"]
    path = _mutate(ttgir[m.kernel], tmp_path, m.transform)
    doc = check(path, *m.args, "--prove")
    assert (doc["exit"], doc["kernel_status"]) == (1, "violated"), doc["proof"]


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


def _load_mutations():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).parent / "triton_kernels" / "mutations.py"
    import sys
    spec = importlib.util.spec_from_file_location("pipeproof_ttgir_mutations", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUT = _load_mutations()
BY_NAME = {m.name: m for m in MUT.MUTATIONS}
ROWSUM = (MUT.ROWSUM, list(MUT.ROWSUM_ARGS))


def run_mutation(ttgir, tmp_path, name):
    m = BY_NAME[name]
    path = _mutate(ttgir[m.kernel], tmp_path, m.transform)
    line = _line_of(path.read_text(), m.line_of) if m.line_of else None
    return check(path, *m.args), line


def test_mutation_init_count_plus_one_deadlocks(ttgir, tmp_path):
    doc, _ = run_mutation(ttgir, tmp_path, "init_count_plus_one")
    assert kind(doc) == "deadlock"


def test_mutation_phase_xor_flipped_is_caught_at_the_wait(ttgir, tmp_path):
    doc, wait_line = run_mutation(ttgir, tmp_path, "phase_xor_flipped")
    assert kind(doc) == "deadlock"
    stuck = [s for s in doc["source"] if s["step"] == "end"]
    assert (stuck[-1]["partition"], stuck[-1]["line"]) == ("partition0", wait_line)


def test_mutation_expect_bytes_changed(ttgir, tmp_path):
    doc, _ = run_mutation(ttgir, tmp_path, "expect_bytes_halved")
    assert kind(doc) in ("deadlock", "read_before_fill")
    assert doc["exit"] == 1


def test_mutation_arrive_removed_deadlocks(ttgir, tmp_path):
    doc, _ = run_mutation(ttgir, tmp_path, "arrive_removed")
    assert kind(doc) == "deadlock"


def test_mutation_stage_index_off_by_one_reads_another_slot(ttgir, tmp_path):
    doc, wait_line = run_mutation(ttgir, tmp_path, "stage_index_off_by_one")
    assert doc["exit"] == 1 and kind(doc) in ("read_before_fill", "deadlock", "phase_alias")
    assert wait_line in [s["line"] for s in doc["source"]]


def test_mutation_wait_moved_after_the_read_is_read_before_fill(ttgir, tmp_path):
    doc, read_line = run_mutation(ttgir, tmp_path, "wait_moved_after_read")
    assert kind(doc) == "read_before_fill"
    steps = [s for s in doc["source"] if s["step"] != "end"]
    assert steps[-1]["line"] == read_line  # the last step is the read, at its line


@pytest.mark.parametrize("name", sorted(MUT.SWP_KINDS))
def test_mutations_of_the_software_pipelined_kernel(ttgir, tmp_path, name):
    """Each mutation of Triton's sm90 pipelining gives its kind; where a line is named, the
    counterexample's last step is that op's kernel line."""
    m = BY_NAME[name]
    doc, _ = run_mutation(ttgir, tmp_path, name)
    assert (kind(doc), doc["exit"]) == (MUT.SWP_KINDS[name], 1)
    if m.line_of is not None:  # the op's kernel lines (the a and b loads are two lines)
        text = _mutate(ttgir[m.kernel], tmp_path, m.transform).read_text()
        module = parse_ttgir(text)
        lines = {module.locs.get(re.search(r"loc\((#loc\d+)\)\s*$", line).group(1))
                 for line in text.splitlines() if re.search(m.line_of, line)}
        stuck = MUT.SWP_KINDS[name] in ("deadlock", "phase_alias")  # where the agent stands
        steps = [s for s in doc["source"] if (s["step"] == "end") == stuck]
        assert steps[-1]["line"] in lines


# ------------------------------------------------------------------ tiles of k-blocks (issue 47)

PERSISTENT_ARGS = list(MUT.PERSISTENT_ARGS)


def test_a_persistent_kernel_reads_as_tiles_of_k_blocks(ttgir, tmp_path):
    """Loader and MMA loop over tiles and k-blocks, the epilogue over tiles: the spec says
    tiles x k_blocks, the epilogue runs k_blocks = 1, the per-tile ops stand in tile sections,
    and the bias tile the loader fills once per tile is a tile-level ring (read flat, its first
    load was the prologue's and the epilogue's read of tile 0 a false read_before_fill)."""
    target = tmp_path / "persistent.toml"
    doc = check(ttgir["ws_persistent_sm100"], *PERSISTENT_ARGS, "--emit-spec", str(target))
    assert (kind(doc), doc["exit"]) == ("ok", 0)
    text = target.read_text()
    assert re.search(r"^tiles = 3\nk_blocks = 2$", text, re.M)
    assert re.search(r'\[ring\.bias_ready\][^\[]*level = "tile"', text)
    assert text.count("k_blocks = 1") == 1 and "tile_prologue = [" in text
    assert "tile_epilogue = [" in text and "every=" not in text


def test_the_tutorial_accumulator_release_is_phase_alias_at_its_arrive(ttgir):
    """The Gluon tutorial's epilogue steps to the next accumulator before it arrives on
    acc_empty: that arrive completes the barrier the MMA's first wait on it expects free, a
    phase early (docs/triton.md). The counterexample ends at the epilogue's arrive."""
    doc = check(ttgir["ws_persistent_tutorial_order_sm100"], *PERSISTENT_ARGS)
    assert (kind(doc), doc["exit"]) == ("phase_alias", 1)
    steps = [s for s in doc["source"] if s["step"] != "end"]
    text = ttgir["ws_persistent_tutorial_order_sm100"].read_text()
    arrive = _line_of(text, r"ttng\.arrive_barrier %24, 1")
    assert (steps[-1]["partition"], steps[-1]["op"], steps[-1]["line"]) == \
        ("default", "ttng.arrive_barrier", arrive)


def test_mutation_of_the_persistent_kernel_is_caught_at_the_refill(ttgir, tmp_path):
    """The epilogue releases the bias slot before it reads it: the loader's load of tile 2
    lands on tile 0 unread, overwrite_before_drain at that load's line (tiles pair by tile)."""
    m = BY_NAME["persistent_bias_released_before_read"]
    doc, copy_line = run_mutation(ttgir, tmp_path, m.name)
    assert (kind(doc), doc["exit"]) == ("overwrite_before_drain", 1)
    steps = [s for s in doc["source"] if s["step"] != "end"]
    assert (steps[-1]["partition"], steps[-1]["line"]) == ("partition0", copy_line)
    assert "tile 2" in json.dumps(doc["violation"]["trace"]["steps"][-1])


def test_a_persistent_pipeline_that_drains_after_its_loop_counts_items_by_reads(ttgir, tmp_path):
    """Per tile: a prefetch before the k loop, a load and an MMA per iteration, the drain's MMA
    after it. Its loop iterations hold one read or none (refused before: "does not read it once
    in every item"); items are the reads, the loads say which read they are for (ahead=)."""
    target = tmp_path / "swp.toml"
    doc = check(ttgir["persistent_swp_sm100"], *MUT.PERSISTENT_SWP_ARGS, "--emit-spec", str(target))
    assert (kind(doc), doc["exit"]) == ("ok", 0)
    text = target.read_text()
    assert re.search(r"^items = 8$", text, re.M)
    assert '"copy 16384 ahead=0"' in text and "ahead=1 every=8 at=3" in text


def test_mutation_of_the_drained_pipeline_is_caught_at_the_refill(ttgir, tmp_path):
    """Without the wait for the previous MMA, the load of k-block 3 lands on slot 0 while the
    MMA of k-block 0 may still read it: overwrite_before_drain at a load's line."""
    m = BY_NAME["persistent_swp_mma_wait_removed"]
    doc, _ = run_mutation(ttgir, tmp_path, m.name)
    assert (kind(doc), doc["exit"]) == ("overwrite_before_drain", 1)
    text = _mutate(ttgir[m.kernel], tmp_path, m.transform).read_text()
    module = parse_ttgir(text)
    loads = {module.locs.get(re.search(r"loc\((#loc\d+)\)\s*$", line).group(1))
             for line in text.splitlines() if re.search(m.line_of, line)}
    steps = [s for s in doc["source"] if s["step"] != "end"]
    assert steps[-1]["line"] in loads and steps[-1]["op"] == "ttng.async_tma_copy_global_to_local"


def test_which_rings_hold_per_tile_data():
    """A ring read or filled in a tile section, or by roles of different k_blocks, is per-tile;
    the nested reading gives up (None: read flat) where the main ring would be, or where some
    role fills such a ring in every k-block (tile tags would not tell its k-blocks apart)."""
    from pipeproof.spec.frontend_nested import tile_rings

    def role(k, body=(), tile_prologue=()):
        return {"k_blocks": k, "body": list(body), "tile_prologue": list(tile_prologue)}
    loader = role(4, ["copy 8"], ["copy 4 ring=q"])
    mma = role(4, ["read_async", "read_async ring=q"])
    assert tile_rings([loader, mma], "main") == {"q"}
    assert tile_rings([role(4, ["copy 4 ring=o"]), role(1, ["read ring=o"])], "main") is None
    assert tile_rings([role(4, ["copy 4"]), role(1, ["read"])], "main") is None
    assert tile_rings([role(4, ["copy 4"]), role(4, ["read"])], "main") == set()


def test_nested_and_flat_readings_agree_without_per_tile_data(ttgir, tmp_path, monkeypatch):
    """Triton's own warp specialisation of a persistent matmul with its tile loop kept: read as
    2 tiles of 4 k-blocks (the epilogue per tile); without per-tile ring data the flat reading
    gives each agent the same program, so the same verdict and the same states."""
    from pipeproof.spec.ttgir.build import Builder
    args = ["--arg", "M=256", "--arg", "N=128", "--arg", "K=256"]
    target = tmp_path / "nested.toml"
    nested = check(ttgir["ws_matmul_nested_sm100"], *args, "--emit-spec", str(target))
    assert re.search(r"^tiles = 2\nk_blocks = 4$", target.read_text(), re.M)
    monkeypatch.setattr(Builder, "NESTED", False)
    flat = check(ttgir["ws_matmul_nested_sm100"], *args)
    assert (kind(nested), nested["states"]) == (kind(flat), flat["states"]) == ("ok", 25)


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
    assert (doc["verdict"], doc["states"]) == ("ok", 2)
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

@pytest.mark.parametrize("kernel", [k for k, _ in MUT.GENERIC])
@pytest.mark.parametrize("mutation", ["every_init_count_plus_one", "first_expect_removed"])
def test_generic_mutations_of_compiler_output_deadlock(ttgir, tmp_path, kernel, mutation):
    """Every init count +1, or the first barrier_expect removed: a wait never completes,
    where the kernel as compiled did not deadlock."""
    doc, _ = run_mutation(ttgir, tmp_path, f"{mutation}:{kernel}")
    base = check(ttgir[kernel], *BY_NAME[f"{mutation}:{kernel}"].args)
    assert doc["exit"] == 1 and kind(doc) == "deadlock" != kind(base)


# ------------------------------------------------------------------ one agent per warp

def test_per_warp_agents_follow_the_lowering_of_the_release(ttgir):
    """With --warps each warp is an agent: waits and reads by every warp, the arrive by the
    leader after a partition bar.sync (every release puts one before a plain arrive), so the
    row-sum ring is ok under every lowering; one agent per partition stores fewer states."""
    path = ttgir["gluon_ring_rowsum_sm100"]
    for version, states in (("3.9.0", 20), ("3.7.1", 20)):
        doc = check(path, "--arg", "n_tiles=5", "--warps", "--lowering", version)
        assert (kind(doc), doc["states"]) == ("ok", states)
    one = check(path, "--arg", "n_tiles=5")
    assert (kind(one), one["states"]) == ("ok", 2)
    spec_text = CliRunner().invoke(main, ["triton", str(path), "--arg", "n_tiles=5", "--warps"]).output
    assert "count = 4" in spec_text and "@leader" in spec_text and "sync part_default" in spec_text


def test_a_bad_lowering_version_is_one_line(ttgir):
    doc = check(ttgir["gluon_ring_rowsum_sm100"], "--arg", "n_tiles=5", "--warps",
                "--lowering", "latest")
    assert doc["exit"] == 2 and "--lowering 'latest'" in doc["error"]


# ------------------------------------------------------------------ the lowering table vs PTX

VERSIONS_DIR = __import__("pathlib").Path(__file__).parent / "fixtures" / "triton_versions"


def _sync_between(ptx: str, first: str, then: str) -> bool:
    """Whether a partition bar.sync lies between the last `first` before the first `then`."""
    lines = ptx.splitlines()
    end = next(i for i, line in enumerate(lines) if then in line)
    start = max(i for i, line in enumerate(lines[:end]) if first in line)
    return any(re.search(r"\bbar(rier)?\.sync\b", line) for line in lines[start:end])


@pytest.mark.parametrize("version", ["3.6.0", "3.7.1", "3.8.0", "3.9.0"])
def test_the_lowering_table_matches_the_ptx_each_release_emits(version):
    """docs/triton_versions.md: the PTX Triton 3.6.0 ... 3.9.0 emitted for probe kernels, a
    4-warp consumer partition each (tests/fixtures/triton_versions)."""
    from pipeproof.spec.ttgir.build import lowering_of
    low = lowering_of(version)
    mma = (VERSIONS_DIR / f"probe_mma_w4_{version}.ptx").read_text()
    assert _sync_between(mma, "mbarrier.try_wait", "tcgen05.commit") == low.sync_before_async_arrive
    expect = (VERSIONS_DIR / f"probe_pr_example_w4_{version}.ptx").read_text()
    assert _sync_between(expect, "mbarrier.try_wait", "mbarrier.arrive.expect_tx") == \
        low.sync_before_async_arrive
    rowsum = (VERSIONS_DIR / f"rowsum_{version}.ptx").read_text()
    assert _sync_between(rowsum, "mbarrier.try_wait", "mbarrier.arrive.shared") == low.sync_before_arrive


def test_per_warp_agents_reproduce_the_release_that_fixed_a_lapped_wait(ttgir):
    """Triton before 3.8 let the leader warp of a 4-warp tcgen05 consumer issue the MMA whose
    commit releases the slot while the other warps still spun on the ready barrier: the
    producer refills, the barrier runs a phase past them (triton-lang/triton#10035). With one
    agent per warp the model finds it under 3.7.1's lowering and not under 3.8.0's."""
    path = ttgir["gluon_ring_matmul_drained_sm100"]
    old = check(path, "--arg", "K=512", "--warps", "--lowering", "3.7.1")
    assert kind(old) == "phase_alias"
    new = check(path, "--arg", "K=512", "--warps", "--lowering", "3.8.0")
    assert (kind(new), new["states"]) == ("ok", 46)   # 462 before issue 35, 351 before finishing steps
