"""Partial-order reduction where issue 18 extended it: arrivals into other CTAs of a cluster,
and the lap abstraction's search (`prove`, `--engine laps`). Each extension is checked against
the search without it, and the conditions it rests on (docs/reductions.md) are tested where
they can fail: a CTA that can exit, the walk's item limit in MANY states, the tables that hold
for every item count."""
from __future__ import annotations

import random

import numpy as np
import pytest

import benchmarks.soundness as H
from pipeproof.checker.engines import por as POR
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.laps import MANY, CannotAbstract, LapAbstraction, lap_tables, scaled_spec
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.prover import MAX_R, future_for, prove, set_counts
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError
from tests.replay import replay
from tests.paths import example_path
from tests.por_support import check_independent_entries, check_independent_steps, inflight_entries, reachable, vec
from tests.specs import standard_toml
from tests.user_shaped_support import user_shaped_text

CLUSTER_RELEASE = """
[pipeline]
template = "cutlass_tma_async"
backend = "nvidia"
cluster_size = 2
consumers = 1
stages = 2
items = 3
"""

# CTA 1's only agent finishes without waiting for anything: CTA 0's arrival into it can come
# after CTA 1 is gone, so that arrival must not be taken early (it would hide the violation's
# interleaving... or commit it where the run without it does not).
EXITING_PEER = """
[pipeline]
backend = "nvidia"
stages = 1
cluster_size = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 1

[[role]]
name = "sender"
side = "consumer"
count = 1
ctas = [0]
body = ["arrive_empty", "arrive_empty to=peer", "advance"]

[[role]]
name = "bystander"
side = "consumer"
count = 1
ctas = [1]
body = ["advance"]
"""


def test_a_release_into_every_cta_of_the_cluster_is_merged():
    """CUTLASS's consumer releases the slot in every CTA (arrive_empty to=all). No producer can
    pass its wait on that empty barrier without it, so no CTA can go: the arrival qualifies."""
    model = compile_model(load_spec_text(CLUSTER_RELEASE, "c.toml"))
    F = POR.future_tables(model)
    merged = [(s, a) for s in reachable(model, 5000) for a in range(len(model.agents))
              if model.format_action(s, a).split("(")[0].endswith("arrive_empty")
              and "to=all" in model.format_action(s, a)
              and POR.independent_step(model.tables, F, vec(s), a)]
    assert merged


def test_an_arrival_into_a_cta_that_can_exit_is_not_merged():
    model = compile_model(load_spec_text(EXITING_PEER, "e.toml"))
    F = POR.future_tables(model)
    state = model.initial_state()
    state = model.apply(state, 0)[0]  # sender: arrive_empty (own CTA)
    assert "to=peer" in model.format_action(state, 0)
    assert not POR.independent_step(model.tables, F, vec(state), 0)
    # With the bystander stuck at a wait it cannot pass, the same arrival qualifies.
    stuck = EXITING_PEER.replace('body = ["advance"]', 'body = ["wait_full", "advance"]')
    model = compile_model(load_spec_text(stuck, "s.toml"))
    state = model.apply(model.initial_state(), 0)[0]
    assert POR.independent_step(model.tables, POR.future_tables(model), vec(state), 0)


def test_the_exiting_peer_is_found_with_and_without_the_reduction():
    spec = load_spec_text(EXITING_PEER, "e.toml")
    reduced, full = verify(spec), verify(spec, por=False, symmetry=False)
    assert reduced.verdict == full.verdict == "violation"
    assert (reduced.kinds, reduced.depth) == (full.kinds, full.depth)
    assert "inflight_at_exit" in reduced.kinds
    for trace in reduced.traces.values():
        replay(spec, trace.to_json())


def test_cluster_specs_same_answers_with_and_without_the_reduction():
    """The harness's generated cluster specs (seed 21): verdict, kinds and minimal depth of the
    reduced search equal the unreduced search's."""
    compared = 0
    for i in range(400):
        _, _, text = H.generate(21, i)
        try:
            spec = load_spec_text(text, f"gen{i}.toml")
        except SpecError:
            continue
        if spec.cluster_size == 1:
            continue
        full = verify(spec, por=False, symmetry=False, max_states=20_000)
        if full.limit:
            continue
        reduced = verify(spec)
        assert (reduced.verdict, set(reduced.kinds), reduced.depth) == \
            (full.verdict, set(full.kinds), full.depth), text
        compared += 1
    assert compared >= 30


# ------------------------------------------------------------------ the lap abstraction


def test_tables_for_every_count_cover_the_explicit_tables():
    """`any_count_tables` may say "touched" more often than the explicit engine's tables of one
    item count, never less: on every reachable state of counts 1..3, for every agent, class
    and (CTA, stage) bit."""
    text = CLUSTER_RELEASE.replace("items = 3", "items = {n}")
    for n in (1, 2, 3):
        model = compile_model(load_spec_text(text.format(n=n), "c.toml"))
        exact, every = POR.future_tables(model), POR.any_count_tables(model)
        T = model.tables
        bits = [1 << (c * model.max_stages + s) for c in range(model.ctas)
                for s in range(model.max_stages)]
        for state in reachable(model, 1500):
            st = vec(state)
            for a in range(len(model.agents)):
                for cls in range(POR.N_CLASSES):
                    for bit in bits:
                        if POR.others_touch(T, exact, st, a, 0, 1 << cls, bit):
                            assert POR.others_touch(T, every, st, a, 0, 1 << cls, bit)


def test_the_walk_stops_at_the_item_limit_of_a_many_state():
    """In a MANY state the walk must not move an agent to item coef * R or beyond (past it the
    item count matters); it answers "touched" there, the safe answer. consumer[0] stands at
    its first read: the producer, walked on, fills the other slot and stops at a wait that
    needs consumer[0]'s release, at item 2."""
    spec = load_spec_text(standard_toml(stages=2, consumers=2, items=4), "s.toml")
    lap = LapAbstraction(spec, MAX_R)
    model = lap.model
    state = model.initial_state()
    for code in (0, 0, 0, 0, 1):  # producer: wait_empty, write, arrive_full, advance; wait_full
        state = model.apply(state, code)[0]
    assert model.format_action(state, 1).startswith("consumer[0].read(stage=0")
    F = future_for(lap, True)
    T = lap.tables_for(MANY)
    T = T._replace(agent=T.agent.copy())
    walk = POR.frozen_touch.py_func
    answers = {}
    for R in (8, 2, 1):
        set_counts(T, F, lap_tables(lap), MANY, R)
        answers[R] = bool(walk(T, F, vec(state), 1, 0, 1, -1, 0, POR.ACC_READ, False, 0, -2, -1))
    assert answers == {8: False, 2: True, 1: True}


def test_prove_with_and_without_the_reduction_on_generated_specs():
    """`prove` with partial-order reduction against `prove --no-por` and against `verify` at
    items 1..3 on the harness's near-correct specs (seed 22): the same status, the same item
    count where violated, and a proof never where some count has a violation."""
    rng = random.Random(5)
    compared = violated = 0
    for i in rng.sample(range(3000), 50):
        _, _, text = H.generate(22, i)
        try:
            spec = load_spec_text(text, f"gen{i}.toml")
        except SpecError:
            continue
        a = prove(spec, timeout=20, max_states=60_000)
        b = prove(spec, timeout=20, max_states=60_000, por=False)
        if "unknown" in (a.status, b.status):
            continue
        assert (a.status, a.items) == (b.status, b.items), text
        if a.status == "proved":
            assert a.abstract_states <= b.abstract_states
            for n in (1, 2, 3):
                assert verify(scaled_spec(spec, n), max_states=50_000).verdict != "violation", text
        else:
            violated += 1
        compared += 1
    assert compared >= 20 and violated >= 5


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@pytest.mark.parametrize("family", ["", "user-shaped"])
def test_prove_with_and_without_twin_steps_on_generated_specs(family, monkeypatch):
    """Leaving out the steps of an agent whose class-mate before it has the same key
    (prove.expand, docs/reductions.md "Twins") changes no answer: the same status and item
    count as the search that expands them, on the harness's near-correct specs (its own
    family, and issue 35's user-shaped GEMM whose math warpgroups are twins)."""
    rng = random.Random(7)
    compared = violated = with_twins = 0
    for i in rng.sample(range(3000), 40):
        _, _, text = H.generate(23, i, H.FAMILIES[family])
        try:
            spec = load_spec_text(text, f"gen{i}.toml")
        except SpecError:
            continue
        a = prove(spec, timeout=20, max_states=60_000)
        monkeypatch.setattr(LapAbstraction, "twin_steps", False)
        b = prove(spec, timeout=20, max_states=60_000)
        monkeypatch.setattr(LapAbstraction, "twin_steps", True)
        if "unknown" in (a.status, b.status):
            continue
        assert (a.status, a.items, a.kind) == (b.status, b.items, b.kind), text
        violated += a.status == "violated"
        try:
            with_twins += len(LapAbstraction(spec, MAX_R).sym.classes) > 0
        except CannotAbstract:  # violated at the spec's own count, by the explicit engine
            pass
        compared += 1
    assert compared >= 20 and violated >= 3 and with_twins >= 10


# ------------------------------------------------------------------ copy landings


@pytest.mark.parametrize("text", [
    CLUSTER_RELEASE.replace("items = 3", "items = 2"),
    CLUSTER_RELEASE.replace("items = 3", "items = 2").replace("cluster_size = 2", "cluster_size = 1"),
    "[pipeline]\ntemplate = \"mojo_input_tile\"\nbackend = \"nvidia\"\ncluster_size = 2\n"
    "k_group_size = 2\nstages = 2\nitems = 2\n",
    "[pipeline]\ntemplate = \"mojo_sm100_matmul\"\nbackend = \"nvidia\"\nconsumers = 1\n"
    "stages = 2\nitems = 2\n",
    # laps of a 2-CTA ring whose commits have twins (the other CTA's commit to the same barrier)
    "[pipeline]\ntemplate = \"mojo_input_tile\"\nbackend = \"nvidia\"\ncluster_size = 2\n"
    "k_group_size = 1\nstages = 2\nitems = 5\n",
])
def test_entries_taken_at_once_commute_with_everything_else(text):
    model = compile_model(load_spec_text(text, "l.toml"))
    assert check_independent_entries(model) > 0


def test_landings_and_commits_on_generated_specs_commute():
    """The harness's generated specs with copies or commits (seed 23): every landing and commit
    taken at once commutes with every other step on every state checked."""
    checked = specs = 0
    for i in range(160):
        _, _, text = H.generate(23, i)
        if "copy" not in text and "commit_" not in text:  # commit_empty, commit_full
            continue
        try:
            model = compile_model(load_spec_text(text, f"gen{i}.toml"))
        except SpecError:
            continue
        checked += check_independent_entries(model, limit=100, horizon=12)
        specs += 1
    assert specs >= 10 and checked > 0


def test_a_landing_is_not_taken_while_its_slot_can_be_read_without_it():
    """bug_expect_tx_too_few_bytes: the barrier expects one copy's bytes of two, so the phase
    completes without the second landing and a consumer can read the slot first. That landing
    is never taken at once, and the read_before_fill stays at its depth."""
    from pipeproof.spec.load import load_spec
    from tests.paths import EXAMPLES_DIR
    spec = load_spec(EXAMPLES_DIR / "bug_expect_tx_too_few_bytes.toml")
    model = compile_model(spec)
    F = POR.future_tables(model)
    in_flight = taken = 0
    for state in reachable(model, 3000):
        for j, _ in inflight_entries(model, state):
            in_flight += 1
            taken += bool(POR.independent_landing(model.tables, F, vec(state), j))
    assert in_flight > 0 and taken < in_flight
    result = verify(spec)
    assert result.verdict == "violation" and result.kind == "read_before_fill" and result.depth == 6


# 7 stages: about a minute of proof without the reduction (4,150,774 abstract states)
@pytest.mark.parametrize("stages", [4, pytest.param(7, marks=pytest.mark.slow)])
def test_merged_runs_in_a_many_state_stay_below_the_lap_bound(stages):
    """CUTLASS's one-CTA pipeline: every step merges, so one abstract transition could run the
    whole pipeline on in a MANY state, past the items where the item count matters. Merging
    stops at item coef * (R - 1) (and the far test looks at the successor before its shift),
    so the proof holds with and without the reduction; before, the abstraction met a
    deadlock no item count has, and answered unknown."""
    text = ("[pipeline]\ntemplate = \"cutlass_tma_async\"\nbackend = \"nvidia\"\n"
            f"cluster_size = 1\nconsumers = 2\nstages = {stages}\nitems = 8\n")
    spec = load_spec_text(text, "c.toml")
    reduced, full = prove(spec), prove(spec, por=False)
    assert (reduced.status, full.status) == ("proved", "proved"), reduced.reason
    assert reduced.abstract_states < full.abstract_states


@pytest.mark.parametrize("stages, items", [(2, 5), pytest.param(3, 7, marks=pytest.mark.slow)])  # (3, 7): ~17 s
def test_commit_twins_keep_the_answer_and_cut_the_states(stages, items):
    """Mojo's InputTilePipeline in 2 CTAs: each CTA's commits multicast to both CTAs' empty
    barriers, so a commit has twins (docs/reductions.md "Commit firings"). With them every
    commit is taken at once: a few states per item, the same `ok` as the unreduced search,
    and the same with a bug planted (one commit too few per stage: a deadlock at the same
    minimal depth)."""
    base = ("[pipeline]\ntemplate = \"mojo_input_tile\"\nbackend = \"nvidia\"\ncluster_size = 2\n"
            f"k_group_size = 1\nstages = {stages}\nitems = {items}\n")
    for text, verdict in ((base, "ok"), (base + "consumer_arrive_count = 3\n", "violation")):
        reduced, full = _against_unreduced(text, verdict)
        if verdict == "ok":
            assert reduced.states * 20 < full.states


def _against_unreduced(text, verdict):
    """verify with and without the reductions: the same verdict (the one given), kinds and
    minimal depth, and no more states reduced; both results."""
    spec = load_spec_text(text, "s.toml")
    reduced = verify(spec)
    full = verify(spec, por=False, symmetry=False)
    assert not reduced.limit and not full.limit
    assert (reduced.verdict, reduced.kinds, reduced.depth) == (full.verdict, full.kinds, full.depth)
    assert reduced.verdict == verdict and reduced.states <= full.states
    return reduced, full


@pytest.mark.parametrize("planted, verdict", [
    ("", "ok"),
    ("consumer_arrive_count = 3\n", "violation"),   # one release too few per phase
    ("\n[[role]]\nname = \"consumer\"\nprologue = [\"arrive_empty to=all\", \"advance\", \"advance\"]\n",
     "violation"),                                  # pre-arrival on one stage only, no reset
])
def test_landings_beside_unmoved_waiters_with_window_records(planted, verdict):
    """The SM90 ring's consumers carry phase-window records (they pre-arrive, then reset); a
    landing is taken at once when they wait for it where they are (docs/reductions.md "Slot
    parts and window records"). Same verdict, kinds and minimal depth as the unreduced search,
    with fewer states."""
    text = ("[pipeline]\ntemplate = \"sm90_ring\"\nbackend = \"nvidia\"\ncluster_size = 2\n"
            "consumers = 1\nstages = 2\nitems = 4\n" + planted)
    reduced, full = _against_unreduced(text, verdict)
    assert reduced.states < full.states


@pytest.mark.parametrize("text", [
    "[pipeline]\ntemplate = \"sm90_ring\"\nbackend = \"nvidia\"\ncluster_size = 2\nconsumers = 1\n"
    "stages = 2\nitems = 6\n",
    open(example_path("x_persistent_reset_ok.toml")).read(),
])
def test_a_stale_window_record_gives_the_window_when_stale_ok_says_so(text):
    """por.stale_ok: where an agent's record (k', ph') qualifies (no reset ahead, ph' <= its
    phase), the window it gives at every later phase of that agent, on random runs, is the one
    the agent's own later record gives (the walk reads stale records only then)."""
    model = compile_model(load_spec_text(text, "w.toml"))
    T = model.tables
    rnd = random.Random(17)
    checked = 0
    for _ in range(40):
        state = model.initial_state()
        kept = {}  # (agent, ring, stage, kind) -> the state whose record qualified first
        while True:
            st = np.array(state, dtype=np.int64)
            for b in range(len(model.agents)):
                for r in range(model.rings):
                    for s in range(model.ring_specs[r].stages):
                        for kind in range(2):
                            w = S.window_field(T, b, r, s, kind)
                            if w < 0:
                                continue
                            sig = S.sig_index(T, model.agents[b].cta, r, s, kind)
                            phase = st[S.ring_field(model.agf, b, r, S.RF_PHASE)]
                            key = (b, r, s, kind)
                            if key in kept:
                                old = kept[key]
                                assert S.intended(T, old, b, r, sig, phase) == S.intended(T, st, b, r, sig, phase)
                                checked += 1
                            elif st[b * model.agf + S.F_PC] > S.reset_until(T, b, r) and st[w + 1] <= phase:
                                kept[key] = st.copy()
            moves = [c for c in range(model.n_actions())
                     if (n := model.apply(state, c))[0] is not None and not n[1] & S.TRAP]
            if not moves:
                break
            state = model.apply(state, rnd.choice(moves))[0]
    assert checked > 100


# ------------------------------------------------------------------ async reads (issue 35)


def _user_shaped(stages, warpgroups, items):
    from benchmarks.user_shaped import user_shaped_toml
    return compile_model(load_spec_text(user_shaped_toml(stages, warpgroups, items), "u.toml"))


def _reads_taken(model, limit):
    """How many (state, read entry) pairs `independent_entry` takes at once, and how many
    agents' next steps are an async read's issue or a read_wait that `independent_step` takes."""
    F = POR.future_tables(model)
    entries = steps = 0
    for state in reachable(model, limit):
        for j, e in inflight_entries(model, state):
            if S.entry_field(model.tables, e, S.E_KIND) == S.ENTRY_READ:
                entries += bool(POR.independent_entry(model.tables, F, vec(state), j))
        for a in range(len(model.agents)):
            pc = state[S.agent_base(model.tables, a) + S.F_PC]
            if pc >= model.tables.agent[a, S.A_LEN]:
                continue
            op = model.tables.prog[S.op_row(model.tables, a, pc), S.P_CODE]
            if op in (S.READ_ASYNC, S.READ_WAIT):
                steps += bool(POR.independent_step(model.tables, F, vec(state), a))
    return entries, steps


@pytest.mark.parametrize("make, limit", [
    # (the first unreduced states of the user-shaped spec are its landings in every order)
    (lambda: _user_shaped(2, 1, 2), 1200),
    (lambda: compile_model(load_spec_text(open(example_path("x_async_read_ok.toml")).read(),
                                          "x.toml")), 150),
])
def test_async_reads_taken_at_once_commute_with_everything_else(make, limit):
    """Issue 35: an async read's finishing, its issue and a satisfied read_wait are taken at
    once, and each commutes with every other enabled step wherever it is taken (the entries by
    `check_independent_entries`, the agents' steps by `check_independent_steps`: both in
    tests/por_support.py)."""
    model = make()
    entries, steps = _reads_taken(model, limit)
    assert entries > 0 and steps > 0
    assert check_independent_entries(model, limit=limit, horizon=12) > 0
    assert check_independent_steps(model, limit=limit, horizon=12) > 0


def test_a_read_is_not_finished_at_once_while_its_slot_can_be_overwritten():
    """x_async_release_before_wait: the consumer releases the slot before its read_wait, so the
    producer's next copy can land over the slot while the read is in flight. The read's
    finishing is then not taken at once in the states where that copy can still come, and the
    overwrite_before_drain keeps its depth (16) with and without the reduction."""
    text = open(example_path("x_async_release_before_wait.toml")).read()
    spec = load_spec_text(text, "x.toml")
    reduced, full = verify(spec, por=True), verify(spec, por=False)
    assert reduced.verdict == full.verdict == "violation"
    assert (reduced.kinds, reduced.depth) == (full.kinds, full.depth)
    assert full.depth == 16 and "overwrite_before_drain" in full.kinds
    model = compile_model(spec)
    F = POR.future_tables(model)
    refused = 0
    for state in reachable(model, 400):
        for j, e in inflight_entries(model, state):
            if (S.entry_field(model.tables, e, S.E_KIND) == S.ENTRY_READ
                    and S.entry_field(model.tables, e, S.E_SEQ) == 0
                    and not POR.independent_entry(model.tables, F, vec(state), j)):
                refused += 1
    assert refused > 0


# ------------------------------------------------------------------ landings of several byte counts (issue 35)


def test_landings_of_several_byte_counts_are_taken_at_once_and_commute():
    """The user-shaped spec's ring has copies of 16,384 and 512 bytes: its landings are taken
    at once (`bytes_keep_order`), and each commutes with every other enabled step where it is
    taken."""
    model = _user_shaped(2, 1, 2)
    F = POR.future_tables(model)
    assert F.uniform[0, POR.COPY_BYTES] == -1
    taken = 0
    for state in reachable(model, 400):
        for j, e in inflight_entries(model, state):
            if S.entry_field(model.tables, e, S.E_KIND) == S.ENTRY_COPY:
                taken += bool(POR.independent_entry(model.tables, F, vec(state), j))
    assert taken > 0
    assert check_independent_entries(model, limit=400, horizon=12) > 0


@pytest.mark.parametrize("expect, kind", [
    (33280 - 512, "read_before_fill"),   # completes before the scales land
    (33280 + 512, "deadlock"),           # never completes
    (33280 - 16384, "read_before_fill"),
])
def test_wrong_expect_tx_beside_landings_of_several_byte_counts(expect, kind):
    """The user-shaped spec with an expect_tx of the wrong byte count: the reduced search finds
    the unreduced search's kinds at its depth (a landing that could complete the phase early,
    or never, is not taken at once)."""
    from benchmarks.user_shaped import user_shaped_toml
    for stages, items in ((2, 1), (2, 2)):
        text = user_shaped_toml(stages, 1, items).replace("expect_tx 33280", f"expect_tx {expect}")
        spec = load_spec_text(text, "u.toml")
        reduced, full = verify(spec, por=True), verify(spec, por=False)
        assert full.verdict == reduced.verdict == "violation"
        assert kind in full.kinds
        assert (reduced.kinds, reduced.depth) == (full.kinds, full.depth)
    # Where the phase would complete at a landing that is not the last, the landings do not
    # commute; every landing taken at once still does (bytes_keep_order refuses the others).
    model = compile_model(load_spec_text(
        user_shaped_toml(2, 1, 1).replace("expect_tx 33280", f"expect_tx {expect}"), "u.toml"))
    check_independent_entries(model, limit=1500, horizon=12)


# ------------------------------------------------------------------------------------------
# observations beside arrivals (docs/reductions.md "Observations beside arrivals")

@pytest.mark.parametrize("shape", [(2, 1, 1, 3), (1, 1, 1, 4), (1, 2, 1, 2)])
def test_waits_and_releases_of_a_cluster_commute_where_the_phase_cannot_complete(shape):
    """Every step taken at once on the user-shaped GEMM of 2 to 4 CTAs (releases into every
    CTA beside the other CTAs' ready first waits) commutes with every step the others can take
    while it stands still; and the reduced search agrees with the unreduced one."""
    text = user_shaped_text(*shape)
    model = compile_model(load_spec_text(text, "<user-shaped>"))
    assert check_independent_steps(model, limit=200, horizon=40) > 0
    spec = load_spec_text(text, "<user-shaped>")
    reduced, full = verify(spec), verify(spec, por=False)
    assert full.verdict == reduced.verdict == "ok" and not full.limit
    assert reduced.states < full.states


# The consumers' pre-arrivals complete empty's phase 0 while the producer, already past its
# parity-1 wait in spirit, has not yet taken it: the wait and those arrivals do not commute (the
# wait ends up behind the phase it was ready for: deadlock, phase_alias).
PRE_ARRIVALS_BESIDE_A_READY_WAIT = """
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 2
prologue = ["arrive_empty"]
body = ["wait_full", "read", "arrive_empty", "advance"]
"""


def test_a_ready_wait_is_not_taken_where_arrivals_can_complete_its_phase():
    model = compile_model(load_spec_text(PRE_ARRIVALS_BESIDE_A_READY_WAIT, "<pre-arrivals>"))
    state = model.initial_state()
    assert model.format_action(state, 0).startswith("producer[0].wait_empty")
    assert model.apply(state, 0)[0] is not None   # ready now
    assert not POR.independent_step(model.tables, POR.future_tables(model), vec(state), 0)
    # the two orders differ: taken first the wait passes; after both pre-arrivals it never does
    after = model.apply(model.apply(state, 1)[0], 2)[0]
    assert model.apply(after, 0)[0] is None
    spec = load_spec_text(PRE_ARRIVALS_BESIDE_A_READY_WAIT, "<pre-arrivals>")
    reduced, full = verify(spec), verify(spec, por=False)
    assert (reduced.verdict, reduced.kinds, reduced.depth) == (full.verdict, full.kinds, full.depth)
    assert reduced.verdict == "violation" and "deadlock" in reduced.kinds
