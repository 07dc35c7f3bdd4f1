"""Nested loops' tile-level rings and async writes in the Promela and Murphi exports (issue 47).

The exports print the explicit engine's rules (checker/core/semantics.py, inflight.py):
- a body fill or read of a tile-level ring stores or expects the tile, item / k_blocks
  (Op.tag_div, semantics.op_tag); reads_pending's walk stops past the last item of tag t and
  compares tiles; the parts a read checks are those the program fills for the read's tile
  (semantics.part_filled_for);
- `write_async` stores its tag at issue (the overwrite check then) and leaves an entry in its
  agent's FIFO of async ops (an async read's, with the bytes digit READ_WRITES): while it is in
  flight a read of the slot is read_before_fill, a commit of the agent fires only after it,
  `read_wait n` counts it, the CTA's exit counts it, and reads_pending does not (docs/rules.md
  "Async writes").

Small specs whose verdict these rules decide (NESTED_SPECS: near-correct GEMMs and FA3 forward
passes at 2 tiles of 2 k-blocks, and one-ring handovers of an async write), pinned to the
explicit engine's verdict and kinds: SPIN and Rumur reach it (Rumur, breadth first, a kind the
engine reports at the minimal depth; SPIN, depth first, a kind some path reaches:
checker/engines/reachable.py), and on the ok ones Rumur stores exactly the engine's unreduced
state count. The nested examples themselves run in tests/test_export_models.py; under
`-m slow`, a few specs of the soundness harness's nested and write_async mutations too.

Needs `spin`, `rumur` and a C compiler, like tests/test_export_models.py.
"""
from __future__ import annotations

import functools
import json

import pytest

from benchmarks import soundness as H
from pipeproof.checker.engines.reachable import reach
from pipeproof.checker.engines.verifier import verify
from pipeproof.checker.models.exporter import to_murphi, to_promela
from pipeproof.checker.models.ir import IR
from pipeproof.checker.models.steps import Issue, Store, step_actions
from pipeproof.checker.results.result import KINDS
from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.schema import SpecError
from tests.export_support import agree, both_tools, check_printed_read_miss
from tests.paths import EXAMPLES_DIR
from tests.specs import standard_toml

MMA = ["wait_full", "read_async", "write_async ring=acc", "commit_empty", "advance"]
EPILOGUE = ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc", "advance ring=acc"]


def gemm(mma=MMA, hand_over="commit_full ring=acc", epilogue=EPILOGUE, epilogue_k=1, acc_stages=1,
         tiles=2, k_blocks=2) -> str:
    """A persistent tcgen05 GEMM (x_tcgen05_gemm_acc_async_ok, smaller): a TMA producer per
    k-block, an MMA that accumulates into a tile-level ring and hands each tile over with
    `hand_over`, an epilogue at `epilogue_k` k-blocks per tile."""
    q = json.dumps
    return f"""[pipeline]
name = "gemm"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
tiles = {tiles}
k_blocks = {k_blocks}

[ring.acc]
stages = {acc_stages}
producer_arrive_count = 1
consumer_arrive_count = 1
level = "tile"

[[role]]
name = "tma"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
epilogue = ["drain"]

[[role]]
name = "mma"
side = "consumer"
count = 1
tile_prologue = ["wait_empty ring=acc"]
body = {q(mma)}
tile_epilogue = [{q(hand_over)}, "advance ring=acc"]

[[role]]
name = "epilogue"
side = "consumer"
count = 1
k_blocks = {epilogue_k}
body = {q(epilogue)}
"""


Q_LOAD = ["wait_empty ring=q", "expect_tx 64 ring=q", "copy 64 ring=q", "advance ring=q"]


def fa3(q_load=Q_LOAD, q_prologue=("wait_full ring=q",), q_release=("arrive_empty ring=q", "advance ring=q"),
        consumers=1) -> str:
    """FA3's persistent forward pass (x_fa3_persistent_ok, smaller): Q loaded once per tile
    into a tile-level ring and read in every k-block beside K/V."""
    q = json.dumps
    return f"""[pipeline]
name = "fa3"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = {consumers}
tiles = 2
k_blocks = 2

[ring.q]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = {consumers}
level = "tile"

[[role]]
name = "producer"
side = "producer"
count = 1
tile_prologue = {q(list(q_load))}
body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
epilogue = ["drain", "drain ring=q"]

[[role]]
name = "consumer"
side = "consumer"
count = {consumers}
tile_prologue = {q(list(q_prologue))}
body = ["wait_full", "read ring=q", "read", "arrive_empty", "advance"]
tile_epilogue = {q(list(q_release))}
"""


def handover(mma) -> str:
    """One ring: an MMA writes each accumulator slot asynchronously and hands it to an
    epilogue that reads and frees it (tests/test_async_write.py)."""
    return standard_toml(items=2, producer_body=list(mma))


# (name, spec text, the explicit engine's verdict and kinds): pinned, so that a change of the
# rules shows; the exports must agree.
NESTED_SPECS = [
    ("gemm_commit", gemm(), ("ok",)),
    ("gemm_acc_ring2", gemm(acc_stages=2), ("ok",)),
    ("gemm_arrive_not_commit", gemm(hand_over="arrive_full ring=acc"), ("violation", "read_before_fill")),
    ("gemm_wait_then_arrive", gemm(mma=MMA[:3] + ["read_wait 0"] + MMA[3:], hand_over="arrive_full ring=acc"),
     ("ok",)),
    ("gemm_no_acc_write", gemm(mma=[op for op in MMA if "ring=acc" not in op]), ("violation", "read_before_fill")),
    # wrong k_blocks: the epilogue reads each tile twice, the second time after freeing it
    ("gemm_epilogue_k_blocks_2", gemm(epilogue_k=2), ("violation", "overwrite_before_drain")),
    ("gemm_epilogue_one_tile_more", gemm().replace("k_blocks = 1\n", "k_blocks = 1\ntiles = 3\n"),
     ("violation", "deadlock")),
    ("gemm_freed_before_read", gemm(epilogue=["wait_full ring=acc", "arrive_empty ring=acc", "read ring=acc",
                                              "advance ring=acc"], acc_stages=1),
     ("violation", "overwrite_before_drain")),
    ("gemm_release_after_write_wait_1", gemm(mma=["wait_full", "read_async", "write_async ring=acc", "read_wait 1",
                                                  "arrive_empty", "advance"]), ("ok",)),
    ("gemm_release_after_write_wait_2", gemm(mma=["wait_full", "read_async", "write_async ring=acc", "read_wait 2",
                                                  "arrive_empty", "advance"]),
     ("violation", "overwrite_before_drain")),
    ("fa3", fa3(), ("ok",)),
    ("fa3_q_released_early", fa3(q_prologue=("wait_full ring=q", "arrive_empty ring=q"),
                                 q_release=("advance ring=q",)), ("violation", "overwrite_before_drain")),
    ("fa3_q_in_two_halves", fa3(q_load=["wait_empty ring=q", "expect_tx 64 ring=q", "copy 32 ring=q",
                                        "copy 32 ring=q", "advance ring=q"]), ("ok",)),
    ("fa3_q_half_announced", fa3(q_load=["wait_empty ring=q", "expect_tx 32 ring=q", "copy 32 ring=q",
                                         "copy 32 ring=q", "advance ring=q"]), ("violation", "read_before_fill")),
    ("fa3_no_q_wait", fa3(q_prologue=()), ("violation", "read_before_fill")),
    ("handover_by_commit", handover(["wait_empty", "write_async", "commit_full", "advance"]), ("ok",)),
    ("handover_by_arrive", handover(["wait_empty", "write_async", "arrive_full", "advance"]),
     ("violation", "read_before_fill")),
    ("handover_after_read_wait", handover(["wait_empty", "write_async", "read_wait 0", "arrive_full", "advance"]),
     ("ok",)),
    ("write_in_flight_at_exit", handover(["wait_empty", "write", "arrive_full", "advance"]).replace(
        'body = ["wait_full", "read", "arrive_empty", "advance"]',
        'body = ["wait_full", "read", "arrive_empty", "advance"]\nepilogue = ["write_async"]'),
     ("violation", "inflight_at_exit")),
]


# Each runs both tools (1 to 3 s); the default suite runs those no example covers, `-m slow`
# the rest (the nested examples themselves run in tests/test_export_models.py).
FAST = {"gemm_no_acc_write", "gemm_epilogue_k_blocks_2",
        "gemm_release_after_write_wait_2", "fa3_q_in_two_halves", "handover_by_arrive",
        "handover_after_read_wait", "write_in_flight_at_exit"}
CASES = [pytest.param(*case, id=case[0], marks=() if case[0] in FAST else pytest.mark.slow)
         for case in NESTED_SPECS]


@functools.lru_cache(maxsize=None)
def _spec(name):
    text = next(t for n, t, _ in NESTED_SPECS if n == name)
    return load_spec_text(text, f"{name}.toml")


@functools.lru_cache(maxsize=None)
def _ours(name):
    return verify(_spec(name), symmetry=False, por=False)


@pytest.mark.parametrize("name, text, expected", CASES)
def test_spin_and_rumur_agree_on_tiles_and_async_writes(name, text, expected, tmp_path):
    ours = _ours(name)
    assert (ours.verdict,) + tuple(ours.kinds) == expected
    spec = _spec(name)
    agree(ours, *both_tools(spec, tmp_path), reach(spec).kinds)


def test_the_specs_cover_every_kind_the_rules_decide():
    kinds = {k for _, _, expected in NESTED_SPECS for k in expected[1:]}
    assert kinds == {"read_before_fill", "overwrite_before_drain", "deadlock", "inflight_at_exit"}
    fast = [expected for name, _, expected in NESTED_SPECS if name in FAST]
    assert ("ok",) in fast and {k for e in fast for k in e[1:]} >= {"read_before_fill", "overwrite_before_drain"}


def _steps(ir, label, text):
    g = next(g for g in ir.groups if g.label == label)
    p = next(p for p, (op, _) in enumerate(g.ops) if (op.text or op.name) == text)
    return g, step_actions(ir, g, p)


def test_an_async_write_stores_its_tile_then_issues_a_write_entry():
    spec = _spec("gemm_commit")
    ir = IR(spec, "promela")
    g, acts = _steps(ir, "mma", "write_async ring=acc")
    acc = ir.model.ring_names.index("acc")
    store, issue = [a for a in acts if isinstance(a, (Store, Issue))]
    assert (store.tag, store.div, store.ring) == (-1, 2, acc)        # the tile: item / k_blocks
    assert (issue.writes, issue.div, issue.tag, issue.ring) == (True, 2, -1, acc)
    assert acts.index(store) < acts.index(issue)                      # stored at issue, then in flight
    _, reads = _steps(ir, "mma", "read_async")
    assert not next(a for a in reads if isinstance(a, Issue)).writes
    promela, murphi = to_promela(spec), to_murphi(spec)
    # the epilogue (one k-block per tile) expects its item, the MMA (two) stores item / 2
    assert "store_tag(1, stage_acc[ME], (item[ME] / 2))" in promela
    assert "(ag_mma[i].item / 2)" in murphi and "an async write of it" in murphi


@pytest.mark.parametrize("name", ["x_fa3_persistent_ok", "x_fa3_persistent_q_released_early",
                                  "x_tcgen05_gemm_acc_async_ok", "fa3_q_in_two_halves",
                                  "fa3_q_half_announced"])
def test_the_printed_read_check_is_semantics_read_miss_for_tiles(name):
    spec = load_spec(EXAMPLES_DIR / f"{name}.toml") if name.startswith("x_") else _spec(name)
    assert check_printed_read_miss(IR(spec, "promela"))


# ------------------------------------------------------------------ generated specs
# The soundness harness's mutations (benchmarks/soundness.py: the nested-loop examples made
# small and changed: counts, guards, sections, a role's k_blocks or a ring's level off, a write
# turned into a write_async), the first specs of seed 5 that export and hold few states.

def _generated(family, count, seed=5, max_states=3000):
    out = []
    for i in range(400):
        _, kinds, text = H.generate(seed, i, H.NESTED_BASES if family == "nested" else None)
        if family == "write_async" and "write_async" not in kinds:
            continue
        try:
            spec = load_spec_text(text, f"{family}_{i}.toml")
            IR(spec, "promela")
        except SpecError:
            continue
        ours = verify(spec, symmetry=False, por=False, max_states=max_states)
        if ours.verdict in ("ok", "violation") and ours.states <= max_states:
            out.append((spec, ours))
            if len(out) == count:
                return out
    raise AssertionError(f"only {len(out)} {family} specs")  # pragma: no cover


@pytest.mark.slow
@pytest.mark.parametrize("family, count", [("nested", 4), ("write_async", 4)])
def test_generated_nested_and_async_write_specs_agree(family, count, tmp_path):
    for k, (spec, ours) in enumerate(_generated(family, count)):
        (tmp_path / str(k)).mkdir()
        agree(ours, *both_tools(spec, tmp_path / str(k)), KINDS)
