"""Partial-order reduction of local steps (issue 6): `advance`, `reset` and a wait skipped by
`unless=ready`, when they do not finish the agent, are taken at once after every step.

What the reduction rests on, tested on every reachable state of generated specs:
- a local step commutes with every other enabled step (same successor both ways, the other
  step's violation bits unchanged, the local step still enabled after it);
- the state before a local step shows no state property the state after it lacks (it is never
  stored, so it is never evaluated).
Then: the numba search stores exactly the graph a plain Python search with the same rule
stores; with and without the reduction the verdict, kinds and minimal depth agree (generated
specs, the examples); a violation whose unreduced search runs out of room is still reported
with a real trace; `--no-por` turns it off.
"""
from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from pipeproof.checker.engines import por as POR
from pipeproof.checker.engines import por_walk as POR_WALK
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.cli.main import main as cli_main
from pipeproof.checker.engines.explore import Search
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests import generators as G
from tests.generators_expressive import expressive_with_counts
from tests.paths import EXAMPLES_DIR
from tests.pins import PINNED_STATES_POR
from tests.por_support import check_independent_steps, commutes_at, is_local, reachable, vec
from tests.specs import THREE_CONSUMERS, standard_toml

MAX_STATES = 30_000
def _model(text):
    return compile_model(load_spec_text(text, "s.toml"))


# ------------------------------------------------------------------------------------------
# which steps are local


def test_local_steps_of_the_standard_pipeline():
    model = _model(standard_toml(stages=2, consumers=1, items=2))
    state = model.initial_state()
    assert not any(is_local(model, state, a) for a in range(2))  # both stand before a wait
    # producer: wait_empty, write, arrive_full -> now before its advance
    for _ in range(3):
        state = model.apply(state, 0)[0]
    assert model.format_action(state, 0).startswith("producer[0].advance")
    assert is_local(model, state, 0) and not is_local(model, state, 1)


def test_the_last_advance_is_not_local():
    """Finishing can make a CTA gone, which other agents' steps observe."""
    model = _model(standard_toml(stages=2, consumers=1, items=1))
    state = model.initial_state()
    for _ in range(3):
        state = model.apply(state, 0)[0]
    assert model.format_action(state, 0).startswith("producer[0].advance")
    assert not is_local(model, state, 0)


def test_a_wait_is_local_only_when_skipped():
    model = _model(standard_toml(stages=1, consumers=1, items=2, consumer_body=[
        "try_full", "wait_full unless=ready", "read", "arrive_empty", "advance"]))
    state = model.apply(model.initial_state(), 1)[0]  # try_full on an empty slot: ready = false
    assert model.format_action(state, 1).startswith("consumer[0].wait_full")
    assert not is_local(model, state, 1)
    for _ in range(3):  # the producer fills the slot
        state = model.apply(state, 0)[0]
    state = model.apply(model.apply(state, 1)[0], 1)[0]  # wait, read: not local either way
    for _ in range(2):  # arrive_empty, advance
        state = model.apply(state, 1)[0]
    for _ in range(4):  # the producer refills the slot: advance, wait_empty, write, arrive_full
        state = model.apply(state, 0)[0]
    state = model.apply(state, 1)[0]  # try_full: ready = true
    assert model.format_action(state, 1).startswith("consumer[0].wait_full")
    assert is_local(model, state, 1)


# ------------------------------------------------------------------------------------------
# why it is sound: checked on every reachable state


def check_local_steps_commute(model, limit=3000):
    """Returns how many (state, local step, other step) pairs were checked."""
    checked = 0
    for state in reachable(model, limit):
        for a in range(len(model.agents)):
            if not is_local(model, state, a):
                continue
            bits, successors = commutes_at(model, state, a)
            assert bits == 0
            for nxt in successors:
                assert is_local(model, nxt, a)  # still enabled, still local
                assert model.apply(nxt, a)[1] == 0
            checked += len(successors)
    return checked


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@settings(max_examples=60, **G.SETTINGS)
@given(G.designs())
def test_local_steps_commute_on_generated_specs(design):
    check_local_steps_commute(compile_model(G.load(design)), limit=1500)


@pytest.mark.parametrize("name", sorted(THREE_CONSUMERS))
def test_local_steps_commute_with_async_reads_barriers_and_writes(name):
    assert check_local_steps_commute(_model(THREE_CONSUMERS[name])) > 0


# 40 generated specs take about two minutes: the fast suite checks 8 of them, `pytest -m slow` 40
@pytest.mark.parametrize("examples", [8, pytest.param(40, marks=pytest.mark.slow)])
def test_independent_steps_stay_independent_on_generated_specs(examples):
    @settings(max_examples=examples, **G.SETTINGS)
    @given(G.designs())
    def check(design):
        check_independent_steps(compile_model(G.load(design)))
    check()


@pytest.mark.slow  # pytest -m slow; CI runs it (.ci/run)
@settings(max_examples=20, **G.SETTINGS)
@given(expressive_with_counts())
def test_independent_steps_stay_independent_on_expressive_specs(text):
    check_independent_steps(_model(text))


# Found by a random search (not the derandomized draw): a consumer's prologue arrive_empty is
# independent where it is clean, but after other steps it completes a phase no one observed
# (over_arrival) while a copy of 2^20 bytes traps (tx_range) whichever goes first.
TRAPPING_COPY_BESIDE_A_RUN_AHEAD = """
[pipeline]
backend = "nvidia"
stages = 3
producer_arrive_count = 3
consumer_arrive_count = 1
items = 1

[[role]]
name = "prod0"
side = "producer"
count = 2
body = ["write", "arrive_full", "advance"]

[[role]]
name = "prod1"
side = "producer"
count = 1
body = ["expect_tx 32", "copy 1048576", "advance"]

[[role]]
name = "cons0"
side = "consumer"
count = 2
body = ["advance"]
prologue = ["arrive_empty"]
"""


def test_independent_step_beside_a_trapping_step():
    """Both orders of the pair find a violation (all the reduction must keep), though not the
    same kinds: the check asks that of a trapping step, and the reduced search agrees."""
    model = _model(TRAPPING_COPY_BESIDE_A_RUN_AHEAD)
    assert check_independent_steps(model) > 0
    spec = load_spec_text(TRAPPING_COPY_BESIDE_A_RUN_AHEAD, "<trapping copy>")
    reduced, full = verify(spec, por=True), verify(spec, por=False)
    assert reduced.verdict == full.verdict == "violation"
    assert (reduced.kinds, reduced.depth) == (full.kinds, full.depth)


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(THREE_CONSUMERS))
def test_independent_steps_with_async_reads_barriers_and_writes(name):
    check_independent_steps(_model(THREE_CONSUMERS[name]))


def test_independent_steps_occur():
    """The checks above are not vacuous: on the standard pipeline every kind of independent
    step occurs, the producer's wait_empty and the first-lap steps of a slot it fills again
    included (they need the walk: the tables alone say the slot is touched again)."""
    model = _model(standard_toml(stages=2, consumers=2, items=3))
    F = POR.future_tables(model)
    ops = set()
    for state in reachable(model, 2000):
        for a in range(len(model.agents)):
            if POR.independent_step(model.tables, F, vec(state), a):
                ops.add(model.format_action(state, a).split(".")[1].split("(")[0])
    assert {"arrive_empty", "read", "wait_full", "wait_empty", "arrive_full"} <= ops, ops
    assert check_independent_steps(model) > 0


def _first_read(model):
    """The state where the producer has filled slot 0 and consumer[0] stands at its read."""
    state = model.initial_state()
    for code in (0, 0, 0, 0, 1):  # producer: wait_empty, write, arrive_full, advance; wait_full
        state = model.apply(state, code)[0]
    assert model.format_action(state, 1).startswith("consumer[0].read(stage=0")
    return state


def _slot0_touched(model, state, a=1):
    F = POR.future_tables(model)
    T, st = model.tables, vec(state)
    bit = 0  # CTA 0, stage 0
    return (bool(POR.others_touch(T, F, st, a, 0, 1 << POR.WRITE_SLOT, 1 << bit)),
            bool(POR.frozen_touch(T, F, st, a, 0, 1 << bit, -1, 0, POR.ACC_READ, False, 0, -2, -1)))


def test_a_first_lap_read_is_independent_of_the_next_fill():
    """The producer writes slot 0 again (the tables say so), but only after a wait on empty[0]
    whose phase needs consumer[0]'s own arrival: with consumer[0] frozen it never gets there."""
    model = _model(standard_toml(stages=2, consumers=2, items=4))
    state = _first_read(model)
    assert _slot0_touched(model, state) == (True, False)
    assert POR.independent_step(model.tables, POR.future_tables(model), vec(state), 1)


def test_a_producer_that_does_not_wait_can_overwrite():
    """The contrast: without its wait_empty the producer reaches slot 0 again on its own."""
    model = _model(standard_toml(stages=2, consumers=2, items=4,
                                 producer_body=["write", "arrive_full", "advance"]))
    state = model.initial_state()
    for code in (0, 0, 0, 1):  # producer: write, arrive_full, advance; consumer[0]: wait_full
        state = model.apply(state, code)[0]
    assert model.format_action(state, 1).startswith("consumer[0].read(stage=0")
    assert _slot0_touched(model, state) == (True, True)
    assert not POR.independent_step(model.tables, POR.future_tables(model), vec(state), 1)


def test_a_walk_past_its_limit_answers_touched(monkeypatch):
    """A walk that would visit more than WALK_LIMIT ops gives up and says "touched" (the safe
    answer). Run as plain Python, so the patched limit is read."""
    model = _model(standard_toml(stages=2, consumers=2, items=4))
    state = _first_read(model)
    F = POR.future_tables(model)
    walk = POR.frozen_touch.py_func
    assert not walk(model.tables, F, vec(state), 1, 0, 1, -1, 0, POR.ACC_READ, False, 0, -2, -1)
    monkeypatch.setattr(POR_WALK, "WALK_LIMIT", 3)
    assert walk(model.tables, F, vec(state), 1, 0, 1, -1, 0, POR.ACC_READ, False, 0, -2, -1)


def test_the_standard_pipeline_grows_linearly_with_the_work():
    """With I > N the first-lap steps qualify too, so the cells no tool finished before
    (N = 8, C = 8) store a few states per item. Pinned, and the same graph as the Python
    search stores."""
    counts = {}
    for n, c, i in ((4, 8, 32), (8, 8, 16), (8, 8, 32)):
        spec = load_spec_text(standard_toml(stages=n, consumers=c, items=i), "s.toml")
        result = verify(spec)
        assert result.verdict == "ok" and result.por
        counts[n, c, i] = result.states
    assert counts == {(4, 8, 32): 34, (8, 8, 16): 18, (8, 8, 32): 34}  # 51, 35, 51 before finishing steps
    model = _model(standard_toml(stages=4, consumers=8, items=32))
    assert len(python_reduced_states(model)) == counts[4, 8, 32]


# ------------------------------------------------------------------------------------------
# the numba search stores the graph a plain Python search stores


def python_reduced_states(model, symmetry=True):
    """The reduced graph, by a plain breadth-first search over `model.apply`: after every
    step the local steps are taken (`model.local_steps`), then the canonical form is stored."""
    sym = SYM.symmetry(model) if symmetry else SYM.no_symmetry(model)
    F = POR.future_tables(model)

    def canon(state):
        return tuple(SYM.canonical(model, sym, vec(state)).tolist())

    start = canon(model.initial_state())
    seen, todo = {start}, [start]
    while todo:
        state = todo.pop(0)
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is None or bits & S.TRAP:
                continue
            nxt = canon(POR.merged_steps(model, F, nxt)[1])
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


SMALL = dict(THREE_CONSUMERS, standard_2_3_4=standard_toml(stages=2, consumers=3, items=4),
             standard_3_2_5=standard_toml(stages=3, consumers=2, items=5))


@pytest.mark.parametrize("symmetry", [True, False])
@pytest.mark.parametrize("name", sorted(SMALL))
def test_numba_search_stores_the_python_reduced_graph(name, symmetry):
    model = _model(SMALL[name])
    search = Search(model, symmetry=symmetry, por=True)
    assert search.run() == ([], None)
    stored = {tuple(search.stored_vector(i).tolist()) for i in range(search.n_stored)}
    assert stored == python_reduced_states(model, symmetry)
    full = Search(model, symmetry=symmetry)
    full.run()
    assert search.n_stored < full.n_stored


@pytest.mark.parametrize("name", sorted(n for n, k in PINNED_STATES_POR.items() if k < 1000))
def test_pinned_example_counts_are_the_python_reduced_graph(name):
    """The pinned reduced counts (tests/pins.py, checked by tests/test_examples.py), from the
    plain Python search."""
    model = compile_model(load_spec(EXAMPLES_DIR / name))
    assert len(python_reduced_states(model)) == PINNED_STATES_POR[name]


def test_reduced_state_counts_of_the_standard_pipeline():
    """Pinned (the Python search above stores the same graphs); the unreduced counts are
    Rumur's (benchmarks/results/vs_spin_rumur_grid_2026-11-29.txt)."""
    spec = load_spec_text(standard_toml(stages=2, consumers=2, items=8), "s.toml")
    on, off = verify(spec), verify(spec, por=False)
    assert (on.verdict, off.verdict) == ("ok", "ok")
    assert (on.states, off.states) == (10, 1065)  # 15 before finishing steps
    assert on.por and not off.por


# ------------------------------------------------------------------------------------------
# the same answers with and without it


def same_answers(spec):
    on = verify(spec, max_states=MAX_STATES)
    off = verify(spec, max_states=MAX_STATES, por=False)
    G.check_result(spec, on)
    if not off.limit:
        assert not on.limit  # the reduced graph is never bigger
        assert (on.verdict, on.kinds, on.depth) == (off.verdict, off.kinds, off.depth)
        assert on.states <= off.states
        if on.verdict == "violation":  # found again without the reduction: the same traces
            assert {k: t.to_json() for k, t in on.traces.items()} == \
                {k: t.to_json() for k, t in off.traces.items()}
    return on, off


@settings(max_examples=200, **G.SETTINGS)
@given(G.designs())
def test_generated_specs_same_answers_with_and_without_por(design):
    same_answers(G.load(design))


@settings(max_examples=60, **G.SETTINGS)
@given(expressive_with_counts())
def test_expressive_specs_same_answers_with_and_without_por(text):
    same_answers(load_spec_text(text, "generated.toml"))


def test_generated_specs_are_reduced_and_violate():
    """The comparisons above are not vacuous: the reduction stores fewer states on some
    generated specs, and both verdicts come out."""
    seen = set()

    @settings(max_examples=80, **G.SETTINGS)
    @given(G.designs())
    def collect(design):
        spec = G.load(design)
        on, off = verify(spec, max_states=MAX_STATES), verify(spec, max_states=MAX_STATES, por=False)
        seen.add(on.verdict)
        if on.verdict == "ok" and not off.limit and on.states < off.states:
            seen.add("reduced")

    collect()
    assert {"ok", "violation", "reduced"} <= seen, seen


# ------------------------------------------------------------------------------------------
# a violation the unreduced search cannot reach in its limit


DEEP_DEADLOCK = standard_toml(stages=2, consumers=3, items=6, consumer_count=4)


def test_violation_kept_when_the_unreduced_search_runs_out_of_room():
    spec = load_spec_text(DEEP_DEADLOCK, "deep.toml")
    model = compile_model(spec)
    reduced = Search(model, por=True)
    assert reduced.run()[0]
    full = Search(model)
    assert full.run()[0]
    assert reduced.n_stored < full.n_stored  # a limit between the two stops only the full one
    result = verify(spec, max_states=reduced.n_stored)
    assert result.verdict == "violation" and result.por
    assert result.limit == f"max-states {reduced.n_stored}"  # not known to be the shortest
    G.check_result(spec, result)  # its traces replay and end in their kinds
    assert result.depth >= verify(spec).depth


# ------------------------------------------------------------------------------------------
# command line


def test_cli_no_por(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(standard_toml(stages=2, consumers=2, items=8))
    runner = CliRunner()
    for flags, states in (([], "10 states"), (["--no-por"], "1065 states")):
        out = runner.invoke(cli_main, ["verify", str(path), "--no-precheck", *flags])
        assert out.exit_code == 0 and states in out.output, out.output
    out = runner.invoke(cli_main, ["verify", str(path), "--engine", "bmc", "--no-por"])
    assert out.exit_code == 2 and "--no-por applies only to --engine explicit" in out.output


# ------------------------------------------------------------------------------------------
# named barriers (docs/reductions.md "Named barriers")

def _barrier_spec(follower_body):
    """A leader that syncs on `wg` (count 2) once per item and a follower whose body is given."""
    return f"""
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
items = 1

[barrier.wg]
count = 2

[[role]]
name = "leader"
side = "consumer"
count = 1
body = ["sync wg", "advance"]

[[role]]
name = "follower"
side = "consumer"
count = 1
body = {follower_body!r}
""".replace("'", '"')


def _barrier_steps(model):
    """(state, agent) of every reachable state where `independent_step` takes a barrier op."""
    F = POR.future_tables(model)
    out = []
    for state in reachable(model, 3000):
        for a in range(len(model.agents)):
            op = model.current_op(state, a)
            if op is not None and op.name in ("sync", "sync_arrive", "sync_wait") \
                    and POR.independent_step(model.tables, F, vec(state), a):
                out.append((state, a, op.name))
    return out


def test_named_barrier_arrival_merged_only_when_the_generation_needs_it():
    # The follower arrives twice without waiting: it can complete generation 0 alone, so the
    # leader's arrival is refused, and indeed it does not commute with the follower's two.
    two = _model(_barrier_spec(["sync_arrive wg", "sync_arrive wg", "advance"]))
    state = two.initial_state()
    assert not POR.independent_step(two.tables, POR.future_tables(two), vec(state), 0)
    leader_first = two.apply(two.apply(two.apply(state, 0)[0], 1)[0], 1)[0]
    follower_first = two.apply(two.apply(two.apply(state, 1)[0], 1)[0], 0)[0]
    assert leader_first != follower_first   # the leader lands in generation 1: blocked for good
    assert two.agent_field(follower_first, 0, S.F_SYNC) == 1
    # One arrival of the follower: the leader's sync is needed to complete the generation.
    one = _model(_barrier_spec(["sync_arrive wg", "sync_wait wg", "advance"]))
    assert POR.independent_step(one.tables, POR.future_tables(one), vec(one.initial_state()), 0)
    assert check_independent_steps(one) > 0
    taken = {name for _, _, name in _barrier_steps(one)}
    assert {"sync", "sync_arrive", "sync_wait"} <= taken, taken


@pytest.mark.parametrize("name", ["named_barrier_release_ok", "x_named_split_ok",
                                  "x_named_arrive_mix_bug", "x_persistent_tiles_ok"])
def test_named_barrier_steps_taken_at_once_commute_on_the_examples(name):
    model = compile_model(load_spec(EXAMPLES_DIR / f"{name}.toml"))
    assert _barrier_steps(model)
    assert check_independent_steps(model) > 0
    spec = load_spec(EXAMPLES_DIR / f"{name}.toml")
    reduced, full = verify(spec), verify(spec, por=False)
    assert (reduced.verdict, reduced.kinds, reduced.depth) == (full.verdict, full.kinds, full.depth)
