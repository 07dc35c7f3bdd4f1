"""`pipeproof prove`: the lap abstraction and proofs for every item count (checker/engines/laps.py,
checker/engines/prover.py)."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipeproof.checker.core import semantics as S
from pipeproof.checker.cli.main import main
from pipeproof.checker.engines.laps import (LapAbstraction, canonical_fast, lap_tables, role_coefficients,
                          scaled_spec)
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.prover import MAX_R, prove
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests.lap_support import random_states
from tests.paths import EXAMPLE_PATHS, example_path, load_example
from tests.pins import LARGE_PROVED_NO_POR, PROVED, PROVED_NO_CTA_SYMMETRY, PROVED_NO_POR
from tests.specs import standard_toml

# Correct examples whose abstract state space without partial-order reduction is large.
LARGE_OK = ["cutlass_tma_async_cluster2", "x_mojo_sm100_matmul", "mojo_input_tile_cluster2_k2",
            "x_tcgen05_gemm_acc_ring_ok", "x_tcgen05_gemm_acc_async_ok"]
# Correct examples with fills outside the body: the lap abstraction does not take them, so
# prove says unknown (tests/test_prologue_fills.py pins the reason).
OUTSIDE_ABSTRACTION = {"x_fa3_q_once_per_tile", "x_prologue_tile_ok"}
# Correct examples whose abstract search does not end in minutes: the 2-SM leader MMA (an async
# write to both CTAs; 6.7 million abstract states after 300 s). Verified at their counts only.
PROVE_UNFINISHED = {"x_tcgen05_2sm_ok"}


def test_every_example_is_classified():
    ok = {p.stem for p in EXAMPLE_PATHS if load_spec(p).expect == "ok"}
    assert ok == set(PROVED) | OUTSIDE_ABSTRACTION | PROVE_UNFINISHED
    assert set(PROVED) == set(PROVED_NO_POR) | set(LARGE_OK)


@pytest.mark.parametrize("name", sorted(PROVED))
def test_correct_example_is_proved_for_every_item_count(name):
    proof = prove(load_example(name))
    assert proof.status == "proved", proof.reason
    assert proof.abstract_states == PROVED[name]


@pytest.mark.parametrize("name", sorted(PROVED_NO_CTA_SYMMETRY))
def test_cluster_example_is_proved_without_cta_symmetry(name):
    """Renaming interchangeable CTAs is switchable (`--no-cta-symmetry`) and stores no more
    abstract states than the same search without it (fewer for mojo_input_tile_cluster2_k2;
    as many for cutlass_tma_async_cluster2, whose CTAs the merges now take in step)."""
    proof = prove(load_example(name), cta_symmetry=False)
    assert proof.status == "proved", proof.reason
    assert proof.abstract_states == PROVED_NO_CTA_SYMMETRY[name]
    assert PROVED[name] <= PROVED_NO_CTA_SYMMETRY[name]
    if name == "mojo_input_tile_cluster2_k2":
        assert PROVED[name] < PROVED_NO_CTA_SYMMETRY[name]


@pytest.mark.parametrize("name", sorted(PROVED_NO_POR))
def test_correct_example_is_proved_without_partial_order_reduction(name):
    """The lap abstraction alone, pinned; the reduced search stores fewer abstract states."""
    proof = prove(load_example(name), por=False, cta_symmetry=False)
    assert proof.status == "proved", proof.reason
    assert proof.abstract_states == PROVED_NO_POR[name]
    assert PROVED[name] < PROVED_NO_POR[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE_OK)
def test_large_correct_example_is_proved_without_partial_order_reduction(name):
    proof = prove(load_example(name), por=False, cta_symmetry=False)
    assert proof.status == "proved", proof.reason
    assert proof.abstract_states == LARGE_PROVED_NO_POR[name]


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE_OK)
def test_large_correct_example_is_never_refuted(name):
    proof = prove(load_example(name), max_states=300_000, por=False, cta_symmetry=False)
    assert proof.status in ("proved", "unknown")
    if proof.status == "unknown":
        assert "300,000 abstract states" in proof.reason


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLE_PATHS
                                         if load_spec(p).expect != "ok"))
def test_buggy_example_is_refuted_with_a_real_trace(name):
    spec = load_example(name)
    proof = prove(spec)
    assert proof.status == "violated"
    assert proof.result.verdict == "violation"
    # the trace runs proof.concrete: the spec at the count n it was found at (nested loops:
    # and at the k_blocks)
    assert spec.expect in proof.result.kinds or set(spec.expect_any) & set(proof.result.kinds)
    from tests.replay import replay
    for kind, trace in proof.result.traces.items():
        replay(proof.concrete, trace.to_json())


def test_bug_that_needs_more_items_than_the_spec_runs_is_found_by_the_proof():
    """A consumer whose phase is reset every 3 items is fine for items <= 3 and breaks at 4:
    the spec's own count says ok, `prove` finds the item count that breaks it."""
    text = standard_toml(stages=2, consumers=1, items=3, consumer_body=[
        "wait_full", "read", "arrive_empty", "advance", "reset every=3 at=2"])
    spec = load_spec_text(text, "<reset-every-3>")
    assert verify(spec).verdict == "ok"
    proof = prove(spec)
    assert proof.status == "violated"
    assert proof.items > 3
    assert verify(scaled_spec(spec, proof.items)).verdict == "violation"


def test_prove_is_deterministic():
    spec = load_example("sm90_ring_nvidia")
    a, b = prove(spec), prove(spec)
    assert (a.status, a.abstract_states) == (b.status, b.abstract_states)


def test_a_broken_invariant_makes_the_proof_fail():
    """The abstraction may move items only by multiples of every `every=K` (ops select items by
    item mod K). Break that on x_persistent_tiles_ok (per-tile ops, every=2): the search meets
    states no item count reaches, the explicit engine refuses to confirm the violation it finds
    there, and the answer is `unknown`, never `proved`."""
    import pipeproof.checker.engines.prover as P
    spec = load_example("x_persistent_tiles_ok")
    assert prove(spec).status == "proved"
    original = P.LapAbstraction

    class Broken(original):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            self.item_step = 1
    P.LapAbstraction = Broken
    try:
        proof = prove(spec)
    finally:
        P.LapAbstraction = original
    assert proof.status == "unknown"
    assert "explicit engine says ok" in proof.reason


def test_unbounded_drift_is_unknown_not_proved():
    """A producer that never waits runs away from its consumer: no lap bound exists."""
    text = standard_toml(stages=2, consumers=1, items=2,
                         producer_body=["write", "arrive_full", "advance"])
    spec = load_spec_text(text, "<no-wait>")
    proof = prove(spec, max_states=50_000)
    assert proof.status in ("violated", "unknown")


# ---------------------------------------------------------------- the canonical form

@pytest.mark.parametrize("name", ["mojo_pcp_nvidia", "mojo_pcp_amd", "x_async_read_ok", "try_full_prefetch_ok",
                                  "x_named_split_ok", "x_mojo_sm100_matmul", "sm90_ring_nvidia",
                                  "cutlass_tma_async_cluster2", "x_persistent_tiles_ok",
                                  "x_cluster_ctas_ok", "x_persistent_reset_ok"])
def test_compiled_canonical_form_equals_the_readable_one(name):
    spec = load_example(name)
    lap = LapAbstraction(spec, MAX_R)
    fast = lap_tables(lap)
    moved = 0
    for n in (2, 5):
        for st in random_states(lap, n):
            a, b = st.copy(), st.copy()
            d1 = lap.canonical(a)
            d2 = canonical_fast(fast, b)
            assert d1 == d2
            assert a.tolist() == b.tolist()
            moved += d1 + int((a != st).any())
    assert moved > 0  # the walks did reach states the canonical form changes


def test_canonical_form_forgets_what_nobody_reads():
    spec = load_example("mojo_pcp_nvidia")
    lap = LapAbstraction(spec, MAX_R)
    st = lap.model.initial_vector()
    m = lap.model
    # a finished agent's item, stage and phase are forgotten
    st[0 * m.agf + S.F_PC] = len(m.agents[0].ops)
    st[0 * m.agf + S.F_ITEM] = 3
    st[0 * m.agf + S.F_RING0 + 1] = 5
    lap.canonical(st)
    assert st[S.F_ITEM] == 0 and st[S.F_RING0 + 1] == 0


def test_phases_move_by_even_amounts_only():
    spec = load_example("mojo_pcp_nvidia")
    lap = LapAbstraction(spec, MAX_R)
    lap.classes = []  # keep agents in place, to compare each one's phase before and after
    m = lap.model
    moved = 0
    for st in random_states(lap, 12, n_walks=20, length=200):
        after = st.copy()
        lap.canonical(after)
        for a in range(len(m.agents)):
            p = a * m.agf + S.F_RING0 + 1
            if st[a * m.agf + S.F_PC] < len(m.agents[a].ops):
                assert (st[p] - after[p]) % 2 == 0
                assert after[p] >= min(st[p], 2)
                moved += int(st[p] != after[p])
    assert moved > 0


# ---------------------------------------------------------------- the command

def test_cli_prove_exit_codes(tmp_path):
    runner = CliRunner()
    ok = runner.invoke(main, ["prove", str(example_path("mojo_pcp_nvidia"))])
    assert ok.exit_code == 0, ok.output
    assert "proved for every item count" in ok.output
    bad = runner.invoke(main, ["prove", str(example_path("bug_consumer_count_too_few")),
                               "--json"])
    assert bad.exit_code == 1
    import json
    doc = json.loads(bad.stdout)
    assert doc["results"][0]["status"] == "violated"
    assert doc["results"][0]["result"]["violation"]["kind"] == "over_arrival"
    unknown = runner.invoke(main, ["prove", str(example_path("try_full_prefetch_ok")),
                                   "--max-states", "1000"])  # 17,049 abstract states
    assert unknown.exit_code == 3
    assert "unknown" in unknown.output
    missing = runner.invoke(main, ["prove", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2
    assert "Traceback" not in missing.output


def test_interchangeable_agents_are_stored_once():
    """Two consumers of the standard pipeline are one class: swapping their records is the
    same abstract state, and the reduced search proves the same spec with fewer states."""
    spec = load_example("mojo_pcp_nvidia")
    lap = LapAbstraction(spec, MAX_R)
    assert [[lap.model.agents[a].role for a in c] for c in lap.classes] == [["consumer", "consumer"]]
    st = next(s for s in random_states(lap, 3) if s[1 * lap.model.agf] != s[2 * lap.model.agf])
    m = lap.model
    swapped = st.copy()
    swapped[1 * m.agf:2 * m.agf], swapped[2 * m.agf:3 * m.agf] = st[2 * m.agf:3 * m.agf], st[1 * m.agf:2 * m.agf]
    a, b = st.copy(), swapped.copy()
    lap.canonical(a)
    lap.canonical(b)
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("por", [True, False])
@pytest.mark.parametrize("name", ["mojo_pcp_amd", "x_persistent_tiles_ok", "x_async_read_ok",
                                  "x_cluster_ctas_ok"])
def test_compiled_search_stores_the_reference_search_states_in_its_order(name, por):
    """The numba search (`_Search`) and the plain Python one it replaced (`ReferenceSearch`)
    store the same abstract states, in the same BFS order, with the same parents."""
    from pipeproof.checker.engines.prover import _Search
    from tests.reference_search import ReferenceSearch
    lap = LapAbstraction(load_example(name), MAX_R)
    R = 2 * lap.item_step
    from pipeproof.checker.engines.prover import _NeedLargerR
    while True:
        new, ref = (_Search(lap, R, 500_000, None, por=por),
                    ReferenceSearch(lap, R, 500_000, None, por=por))
        try:
            found = new.run()
        except _NeedLargerR:
            with pytest.raises(_NeedLargerR):
                ref.run()
            R *= 2
            continue
        assert found == ref.run()
        break
    assert new.n_stored == ref.n_stored
    for i in range(new.n_stored):
        v1, n1 = new.state(i)
        v2, n2 = ref.state(i)
        assert (n1, v1.tolist()) == (n2, v2.tolist())
    assert new.parent[:new.n_stored].tolist() == ref.parent
    assert new.via[:new.n_stored].tolist() == ref.via


def test_violation_item_count_is_the_same_for_both_searches():
    text = standard_toml(stages=2, consumers=1, items=3, consumer_body=[
        "wait_full", "read", "arrive_empty", "advance", "reset every=3 at=2"])
    spec = load_spec_text(text, "<reset-every-3>")
    from tests.reference_search import ReferenceSearch
    a, b = prove(spec), prove(spec, searcher=ReferenceSearch)
    assert (a.status, a.items, a.abstract_states) == (b.status, b.items, b.abstract_states)


def test_signals_no_op_touches_are_left_out_of_the_lap_shift():
    """x_cluster_ctas_ok: the workers of both CTAs arrive on CTA 0's empty barrier (to=leader)
    and only CTA 0 has a scheduler to wait on it, so CTA 1's empty barriers are never used."""
    lap = LapAbstraction(load_example("x_cluster_ctas_ok"), MAX_R)
    assert (0, 1, S.EMPTY) not in lap.sig_live
    assert {(0, 0, S.EMPTY), (0, 0, S.FULL), (0, 1, S.FULL)} <= lap.sig_live
    one_cta = LapAbstraction(load_example("mojo_pcp_nvidia"), MAX_R)
    assert one_cta.sig_live == {(0, 0, S.EMPTY), (0, 0, S.FULL)}


@pytest.mark.parametrize("stages, warpgroups, ctas, states", [(4, 4, 4, 48), (8, 2, 4, 96)])
def test_user_shaped_cluster_is_proved_in_few_abstract_states(stages, warpgroups, ctas, states):
    """Issue 35's user-shaped GEMM (per-CTA producers, multicast, math warpgroups with async
    reads releasing every CTA's slot): its math warpgroups are sorted with the reads that name
    them, and the end of a small count is taken at once (an agent at its last item looks
    ahead without the body repeated). 4 warpgroups x 4 CTAs was unknown at 30 s (241,940
    abstract states) before both; 8 stages x 2 warpgroups x 4 CTAs took 29,265
    (docs/reductions.md "`prove` on the largest user-shaped cell")."""
    from tests.user_shaped_support import user_shaped_text
    spec = load_spec_text(user_shaped_text(stages, warpgroups, 64, ctas), "user_shaped.toml")
    proof = prove(spec, timeout=120)
    assert proof.status == "proved", proof.reason
    assert proof.abstract_states == states
