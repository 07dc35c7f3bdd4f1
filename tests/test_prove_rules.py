"""The lap abstraction (`prove`, `verify --engine laps`) under the rules revised 2026-12-02
(DESIGN.md; /work/shared: R1 commits fire in issue order, R2 own copies/commits in flight at
exit are the warning unawaited_at_exit, R3 slot parts per slot)."""
from __future__ import annotations

import numpy as np
import pytest

from pipeproof.checker.engines.lap_verify import verify_laps
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.laps import CannotAbstract, LapAbstraction, canonical_fast, lap_tables, scaled_spec
from pipeproof.checker.engines.prover import MAX_R, prove, search_laps
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests.lap_support import random_states
from tests.rules_support import spec_text
from tests.specs import standard_toml

# The consumers release each slot with a commit: after the last item the CTA may go with the
# last commit still in flight, its own (R2: the warning, not a violation; strict: a violation).
OWN_COMMIT = standard_toml(items=3, consumers=2,
                           consumer_body=["wait_full", "read", "commit_empty", "advance"])


def load(text, name="rules.toml"):
    return load_spec_text(text, name)


# ------------------------------------------------------------------ R1

def _swap_agents(lap, st, a, b):
    """st with agents a and b exchanged: their records and the agent the entries name."""
    m = lap.model
    out = st.copy()
    out[a * m.agf:(a + 1) * m.agf], out[b * m.agf:(b + 1) * m.agf] = st[b * m.agf:(b + 1) * m.agf], st[a * m.agf:(a + 1) * m.agf]
    entries = []
    for e in (int(x) for x in st[m.off_inf:m.off_inf + m.inflight] if x):
        named = lap._names(e)
        entries.append(lap._with(e, S.E_AGENT, {a: b, b: a}[named]) if named in (a, b) else e)
    entries.sort(reverse=True)
    out[m.off_inf:m.off_inf + m.inflight] = entries + [0] * (m.inflight - len(entries))
    return out


@pytest.mark.parametrize("text", [OWN_COMMIT, standard_toml(
    items=3, consumers=2, consumer_body=["wait_full", "read_async", "read_wait 0", "arrive_empty", "advance"])],
    ids=["commits", "async_reads"])
def test_agents_whose_entries_name_them_are_sorted_with_their_entries(text):
    """Commit entries (R1) and async reads name their agent: the consumers are one class, and
    sorting it renames the agent each entry names with its record, so a state and the state
    with two consumers exchanged (records and entries) have one canonical form, in the
    readable form and the compiled one alike."""
    lap = LapAbstraction(load(text), MAX_R)
    assert [[lap.model.agents[a].role for a in c] for c in lap.classes] == [["consumer", "consumer"]]
    fast = lap_tables(lap)
    named = 0
    for st in random_states(lap, 3):
        names = {lap._names(int(e)) for e in st[lap.model.off_inf:] if e}
        named += bool(names & {1, 2})
        a, b = st.copy(), _swap_agents(lap, st, 1, 2)
        lap.canonical(a)
        lap.canonical(b)
        assert a.tolist() == b.tolist()
        c = _swap_agents(lap, st, 1, 2)
        canonical_fast(fast, c)
        assert c.tolist() == a.tolist()
    assert named > 0  # the walks met entries that name a consumer


# ------------------------------------------------------------------ R2

def test_own_commit_at_exit_is_proved_with_the_warning():
    spec = load(OWN_COMMIT)
    proof = prove(spec)
    assert (proof.status, proof.warnings) == ("proved", ("unawaited_at_exit",)), proof.reason
    for n in range(1, 5):
        concrete = verify(scaled_spec(spec, n))
        assert (concrete.verdict, list(concrete.warnings)) == ("ok", ["unawaited_at_exit"])


def test_strict_exit_refutes_it():
    proof = prove(load(OWN_COMMIT), strict_exit=True)
    assert (proof.status, proof.kind) == ("violated", "inflight_at_exit")
    assert proof.warnings == ()


@pytest.mark.parametrize("por", [True, False])
def test_every_stored_state_is_canonical_after_a_warning_step(por):
    """A step whose only bit is the warning goes on like any other: its successor is stored
    in canonical form with its own item shift (it once was stored as stepped, with the shift
    of the action before it)."""
    lap = LapAbstraction(load(OWN_COMMIT), MAX_R)
    search, found = search_laps(lap, 100_000, None, por=por)
    assert found is None and search.warned
    for i in range(search.n_stored):
        st, _ = search.state(i)
        again = st.copy()
        assert canonical_fast(search.fast, again) == 0
        assert np.array_equal(again, st), i


def test_engine_laps_reports_the_warning_and_takes_strict_exit():
    spec = load(OWN_COMMIT)
    plain = verify_laps(spec)
    assert (plain.verdict, list(plain.warnings)) == ("ok", ["unawaited_at_exit"])
    strict = verify_laps(spec, strict_exit=True)
    assert (strict.verdict, strict.kinds) == ("violation", ("inflight_at_exit",))
    quiet = verify_laps(load(standard_toml(items=3)))  # no warning: the abstraction answers
    assert (quiet.verdict, quiet.engine, quiet.warnings) == ("ok", "laps", {})


# ------------------------------------------------------------------ R3

def two_fillers(stages, filler_body=("wait_empty", "write", "arrive_full", "advance")):
    """Two producer roles filling one part each of every slot (per-slot parts)."""
    roles = [{"name": n, "side": "producer", "body": list(filler_body)} for n in ("A", "B")]
    roles.append({"name": "C", "side": "consumer",
                  "body": ["wait_full", "read", "arrive_empty", "advance"]})
    return spec_text(roles, stages=stages, pac=2, items=4)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_items_move_by_the_period_of_the_fillers_stages(stages):
    """A read's parts depend on the stage its filler was at in the item (R3); relative items
    must leave that stage as it is: items move by multiples of the stages."""
    lap = LapAbstraction(load(two_fillers(stages)), MAX_R)
    assert len(lap.model.parts[0]) == 2
    assert lap.item_step == stages
    single = LapAbstraction(load(standard_toml(stages=stages)), MAX_R)  # one part: no constraint
    assert single.item_step == 1


@pytest.mark.parametrize("stages", [2, 3])
def test_fillers_stage_period_proof_agrees_with_each_item_count(stages):
    spec = load(two_fillers(stages))
    proof = prove(spec)
    assert proof.status == "proved", proof.reason
    for n in range(1, 7):
        assert verify(scaled_spec(spec, n), por=False, symmetry=False).verdict == "ok"


def test_fill_stages_unlike_in_the_first_items_are_refused():
    """A reset every 3 items at item 1: the filler's stages run 0 1 | 0 1 2 | 0 1 2 ..., so no
    item shift keeps them; refused in one line (prove: unknown; --engine laps: explicit)."""
    body = ("wait_empty", "write", "arrive_full", "advance", "reset every=3 at=1")
    spec = load(two_fillers(3, body))
    with pytest.raises(CannotAbstract, match="slot parts of ring main"):
        LapAbstraction(spec, MAX_R)
    proof = prove(spec)
    if proof.status == "unknown":
        assert proof.reason.startswith("outside the lap abstraction: slot parts of ring main")
    assert verify_laps(spec).engine == "explicit"
