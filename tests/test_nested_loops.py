"""Nested loops (issue 47, spec/load_loops.py): work tiles of k-blocks, data held per tile, roles
at different rates, and `prove` for every tile count at each k_blocks.

The examples' verdicts, pins and replayed counterexamples are in tests/test_examples.py and
tests/test_prove.py like every example's; here: the lowering, the loader's refusals, the two
cases issue 47 measured (a missed bug, a false alarm from `prove`), and the lap abstraction's
per-ring tags, compiled and readable alike.
"""
from __future__ import annotations

import subprocess

import pytest

from pipeproof.checker.engines.lap_verify import verify_laps
from pipeproof.checker.engines.laps import LapAbstraction, canonical_fast, lap_tables
from pipeproof.checker.engines.prover import MAX_R, prove
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.load_loops import with_k_blocks
from pipeproof.spec.schema import SpecError
from tests.lap_support import random_states
from tests.paths import CLI, EXAMPLES_DIR

FA3_OK = EXAMPLES_DIR / "x_fa3_persistent_ok.toml"
FA3_BUG = EXAMPLES_DIR / "x_fa3_persistent_q_released_early.toml"
GEMM_OK = EXAMPLES_DIR / "x_tcgen05_gemm_acc_ring_ok.toml"
GEMM_BUG = EXAMPLES_DIR / "x_tcgen05_gemm_acc_freed_early.toml"

RING = """[pipeline]
name = "ring"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
{counts}

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]
epilogue = ["drain"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
"""


# ---------------------------------------------------------------- the lowering

def test_tile_sections_become_guarded_body_ops_and_tile_rings_carry_the_tile():
    spec = load_spec(FA3_OK)
    consumer = spec.role("consumer")
    assert (spec.tiles, spec.k_blocks, consumer.items) == (2, 3, 6)
    guards = [(op.text, op.every, op.at, op.tag_div, op.loop_section) for op in consumer.body]
    assert guards[0] == ("wait_full ring=q", 3, 0, 1, "tile_prologue")
    assert ("read ring=q", 1, 0, 3, "") in guards           # a tile-level read: the tile
    assert ("read", 1, 0, 1, "") in guards                  # a k-block read: the item
    assert guards[-2:] == [("arrive_empty ring=q", 3, 2, 1, "tile_epilogue"),
                           ("advance ring=q", 3, 2, 1, "tile_epilogue")]


def test_one_k_block_per_tile_is_the_flat_spec():
    """tiles = N, k_blocks = 1 is items = N: the same state space, state for state."""
    nested = verify(load_spec_text(RING.format(counts="tiles = 3"), "n.toml"), por=False)
    flat = verify(load_spec_text(RING.format(counts="items = 3"), "f.toml"), por=False)
    assert nested.verdict == flat.verdict == "ok"
    assert (nested.states, nested.transitions) == (flat.states, flat.transitions)


def test_another_k_blocks_is_lowered_again_from_the_sections():
    spec = load_spec(GEMM_OK)
    at2 = with_k_blocks(spec, 2)
    assert at2.role("mma").items == 2 * 2 and at2.role("epilogue").items == 2  # own k_blocks kept
    assert [op.at for op in at2.role("mma").body if op.loop_section == "tile_epilogue"] == [1, 1]
    assert with_k_blocks(spec, spec.k_blocks).roles == spec.roles
    # an every=3 body guard picks k-blocks only where 3 divides k_blocks
    assert with_k_blocks(load_spec(FA3_BUG), 2) is None


# ---------------------------------------------------------------- what issue 47 measured

def test_q_released_after_the_first_block_is_found_and_prove_refutes_it():
    """Issue 47's missed bug: Q held for the tile, released in k-block 0. Reads of Q in blocks 1
    and 2 now pair with the tile's fill, so the next tile's Q lands over an unread Q."""
    result = verify(load_spec(FA3_BUG))
    assert (result.verdict, result.kinds) == ("violation", ("overwrite_before_drain",))
    proof = prove(load_spec(FA3_BUG))
    assert proof.status == "violated" and proof.items == 2
    assert "k_blocks = 3" in proof.reason


def test_the_trace_counts_tiles_on_a_tile_level_ring():
    """The trace's slot changes say what the slot's tag counts: tiles on ring q, items on the
    main ring (k-blocks)."""
    out = subprocess.run([*CLI, "verify", str(FA3_BUG)], capture_output=True, text=True).stdout
    assert "cta0.q.slot[0]: tile 0->1" in out and "cta0.slot[0]: item -1->0" in out
    assert "cta0.q.slot[0]: item" not in out


def test_the_accumulator_ring_gemm_is_proved_for_every_tile_count_and_each_k():
    """Issue 47's false alarm: refuted at n = 1 when n counted items; n counts tiles now."""
    proof = prove(load_spec(GEMM_OK))
    assert proof.status == "proved", proof.reason
    assert proof.parameter == "n = tiles, at k_blocks = 1..4"


def test_roles_at_different_rates_pair_by_tile():
    result = verify(load_spec(GEMM_BUG))
    assert result.kind == "overwrite_before_drain"
    text = result.traces["overwrite_before_drain"].steps[-1].action
    assert "tile=2" in text  # the MMA's write of tile 2 over the epilogue's unread tile 0


# ---------------------------------------------------------------- the lap abstraction

@pytest.mark.parametrize("path", [FA3_OK, GEMM_OK, FA3_BUG])
def test_compiled_canonical_form_equals_the_readable_one(path):
    lap = LapAbstraction(load_spec(path), MAX_R)
    fast = lap_tables(lap)
    moved = 0
    for n in (2, 5):
        for st in random_states(lap, n):
            a, b = st.copy(), st.copy()
            assert lap.canonical(a) == canonical_fast(fast, b)
            assert a.tolist() == b.tolist()
            moved += int((a != st).any())
    assert moved > 0


def test_tags_move_per_ring():
    lap = LapAbstraction(load_spec(GEMM_OK), MAX_R)
    names = lap.model.ring_names
    assert lap.tag_coef[names.index("main")] == 4    # k-block items: 4 per tile
    assert lap.tag_coef[names.index("acc")] == 1     # tiles


@pytest.mark.parametrize("path", [FA3_OK, FA3_BUG, GEMM_OK])
def test_laps_engine_agrees_with_the_explicit_one(path):
    spec = load_spec(path)
    explicit, laps = verify(spec), verify_laps(spec)
    assert (laps.verdict, laps.kinds) == (explicit.verdict, explicit.kinds)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("counts, role_keys, where, says", [
    ("tiles = 2\nitems = 4", "", "[pipeline] items", "not allowed with tiles"),
    ("items = 4\nk_blocks = 2", "", "[pipeline] k_blocks", "only allowed with tiles"),
    ("items = 4", 'tile_prologue = ["wait_full"]', "role 'consumer' tile_prologue",
     "only allowed with nested loops"),
    ("tiles = 2\nk_blocks = 4", 'items = 3', "role 'consumer' items", "tiles * k_blocks"),
    ("tiles = 2\nk_blocks = 4", 'k_blocks = 2', "ring 'main'", "run different k_blocks"),
])
def test_bad_nested_specs_are_one_line(counts, role_keys, where, says):
    text = RING.format(counts=counts) + role_keys + "\n"
    with pytest.raises(SpecError) as err:
        load_spec_text(text, "x.toml")
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"x.toml: {where}") and says in line


def test_every_must_divide_k_blocks_and_level_needs_tiles(tmp_path):
    bad = RING.format(counts="tiles = 2\nk_blocks = 3").replace('"read",', '"read every=2",')
    with pytest.raises(SpecError, match="every=2 must divide k_blocks"):
        load_spec_text(bad, "x.toml")
    level = RING.format(counts="items = 2") + '\n[ring.q]\nstages = 1\nproducer_arrive_count = 1\n' \
        'consumer_arrive_count = 1\nlevel = "tile"\n'
    path = tmp_path / "level.toml"
    path.write_text(level)
    run = subprocess.run([*CLI, "verify", str(path)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "[ring.q] level: only allowed with nested loops" in run.stderr


def test_loop_counts_are_sweep_parameters(tmp_path):
    """`pipeproof sweep` takes tiles and k_blocks like any [pipeline] key: the early release of
    Q needs a next tile to overwrite it."""
    path = tmp_path / "sweep.toml"
    path.write_text(FA3_BUG.read_text() + "\n[sweep]\ntiles = [1, 2]\nk_blocks = [3]\n")
    run = subprocess.run([*CLI, "sweep", str(path)], capture_output=True, text=True)
    rows = [line.split() for line in run.stdout.splitlines() + run.stderr.splitlines()
            if line.split()[:2] in (["1", "3"], ["2", "3"])]
    assert run.returncode == 1, run.stderr
    assert [row[2] for row in rows] == ["ok", "violation"], rows
