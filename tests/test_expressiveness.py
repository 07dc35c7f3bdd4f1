"""[expressiveness] (docs/model.md "Ops"): the x_*.toml examples and the templates that
compose several rings.

- Every `spec/examples/x_*.toml` declares its verdict; the checker must agree, with the kinds
  declared, the exact state count of each `ok` example and the counterexample length of each
  violating one pinned (literal numbers measured once: a change must be noticed and the pins
  updated on purpose).
- Every counterexample replays through tests/replay.py, the independent implementation of
  docs/model.md, and nothing before its last step violates anything.
- The same replayer, driven as a breadth-first search of its own, explores every example:
  the `ok` ones must be violation-free with exactly the checker's state count, and the
  violating ones must first violate at the checker's depth with the checker's kinds.
- One correct and one buggy example per feature: several rings, async reads, per-item
  structure, per-CTA structure, named barrier variants; the two new templates correct.
- The template expansions (roles, ops, counts, per-ring phases, parameters, errors) and, for
  each template, the mutations that must break it.
- Single-ring specs are unaffected: no rings, no every/at, the core examples' pinned numbers.

Run with `python -m pytest tests/test_expressiveness.py` (the first run compiles the engine).
"""
from __future__ import annotations

import copy
import functools

import pytest

from pipeproof.checker.results.result import KINDS
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec import templates
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import MAIN_RING, Ring, SpecError
from tests import replay as R
from tests.example_results import (TIMEOUT_S, expected_kinds, spec_of, symmetric_result_of,
                                   unreduced_result_of)
from tests.paths import EXAMPLE_NAMES
from tests.pins import PINNED_STATES as ALL_PINNED_STATES
from tests.pins import PINNED_TRACE_LENGTH as ALL_PINNED_TRACE_LENGTH
from tests.replay_support import check_replay

X_EXAMPLES = [n for n in EXAMPLE_NAMES if n.startswith("x_")]
CORE_EXAMPLES = [n for n in EXAMPLE_NAMES if not n.startswith("x_")]

# The pinned state counts and trace lengths live with all the others in tests/pins.py.
PINNED_STATES = {k: v for k, v in ALL_PINNED_STATES.items() if k.startswith("x_")}
PINNED_TRANSITIONS = {
    "x_async_read_ok.toml": 7960,  # 8384 before R1 (commits fire in issue order)
    "x_cutlass_pingpong.toml": 288,
    "x_mojo_sm100_matmul.toml": 154638,  # 168608 before R1
    "x_named_split_ok.toml": 1759,
}

PINNED_TRACE_LENGTH = {k: v for k, v in ALL_PINNED_TRACE_LENGTH.items() if k.startswith("x_")}

# One correct and one buggy example per feature, and the kind the buggy one shows.
FEATURES = {
    "several rings": ("x_rings_scales_ok.toml", "x_rings_acquire_order_deadlock.toml",
                      "deadlock"),
    "async reads": ("x_async_read_ok.toml", "x_async_release_before_wait.toml",
                    "overwrite_before_drain"),
    "per-item structure": ("x_persistent_tiles_ok.toml", "x_persistent_reset_bad.toml",
                           "read_before_fill"),
    "per-CTA structure": ("x_cluster_ctas_ok.toml", "x_cluster_item_mismatch_deadlock.toml",
                          "deadlock"),
    "named barrier variants": ("x_named_split_ok.toml", "x_named_arrive_mix_bug.toml",
                               "deadlock"),
}
NEW_TEMPLATES = {"mojo_sm100_matmul": "x_mojo_sm100_matmul.toml",
                 "cutlass_pingpong": "x_cutlass_pingpong.toml"}

EXAMPLE_SECONDS = 5.0  # each example verifies in well under this (after the one-time compile)


# This file's own verifications, not the shared ones of tests/example_results.py:
# test_example_verdict times them.
@functools.cache
def result_of(name: str):
    return verify(spec_of(name), timeout=TIMEOUT_S)


def _violation_cases():
    return [pytest.param(name, kind, id=f"{name}-{kind}")
            for name in X_EXAMPLES if spec_of(name).expect != "ok"
            for kind in expected_kinds(spec_of(name))]


def _ops(spec):
    return [op for role in spec.roles for op in role.prologue + role.body + role.epilogue]


# ------------------------------------------------------------------------------------------
# An independent breadth-first search over tests/replay.py's model


def _clone(world):
    agents = []
    for a in world.agents:
        b = copy.copy(a)  # the unrolled program is shared: it never changes
        b.rings = {name: copy.copy(pos) for name, pos in a.rings.items()}
        b.arrived = dict(a.arrived)
        agents.append(b)
    return R.World(spec=world.spec, agents=agents,
                   signals={k: dict(v) for k, v in world.signals.items()},
                   slots=dict(world.slots), inflight=[dict(e) for e in world.inflight],
                   barriers={k: dict(v) for k, v in world.barriers.items()},
                   gone=set(world.gone), trapped=world.trapped)


def _key(world):
    return (
        tuple((a.pos, a.at_sync,
               tuple((p.stage, p.phase, p.ready) for p in a.rings.values()),
               tuple(sorted(a.arrived.items()))) for a in world.agents),
        tuple(sorted((k, tuple(sorted(v.items()))) for k, v in world.signals.items())),
        tuple(sorted(world.slots.items())),
        tuple(sorted(tuple(sorted(e.items())) for e in world.inflight)),
        tuple(sorted((k, tuple(sorted(v.items()))) for k, v in world.barriers.items())),
        tuple(sorted(world.gone)),
    )


def replayer_bfs(spec):
    """Explore `spec` level by level with the replayer. Returns (states, depth, kinds): the
    distinct states reached, and the first depth at which a step or a state violates
    something with every kind found at that depth (None, set() when nothing does)."""
    world = R.initial_state(spec)
    kinds = R.state_violations(world)
    if kinds:
        return 1, 0, kinds
    seen = {_key(world)}
    level, depth = [world], 0
    while level:
        depth += 1
        found, nxt = set(), []
        for w in level:
            for event in R.enabled_events(w):
                n = _clone(w)
                step_kinds = R.apply(n, event)
                k = _key(n)
                if k in seen:
                    found |= step_kinds
                    continue
                seen.add(k)
                found |= step_kinds | R.state_violations(n)
                nxt.append(n)
        if found:
            return len(seen), depth, found
        level = nxt
    return len(seen), None, set()


# ------------------------------------------------------------------------------------------
# the examples: declared verdicts and pins


def test_one_correct_and_one_buggy_example_per_feature():
    assert set(PINNED_STATES) | set(PINNED_TRACE_LENGTH) == set(X_EXAMPLES)
    for feature, (ok, bad, kind) in FEATURES.items():
        assert spec_of(ok).expect == "ok", feature
        assert spec_of(bad).expect == kind, feature
    for template, name in NEW_TEMPLATES.items():
        assert spec_of(name).template == template and spec_of(name).expect == "ok"


@pytest.mark.parametrize("name", X_EXAMPLES)
def test_example_is_documented(name, examples_dir):
    text = (examples_dir / name).read_text()
    assert text.startswith("#")
    assert len([line for line in text.splitlines() if line.startswith("#")]) >= 5
    spec = spec_of(name)
    assert spec.expect is not None
    assert "BUG" in text.splitlines()[0] or spec.expect == "ok"


@pytest.mark.parametrize("name", X_EXAMPLES)
def test_example_verdict(name):
    spec, result = spec_of(name), result_of(name)
    assert not result.limit
    assert result.seconds < EXAMPLE_SECONDS, f"{name}: {result.seconds:.2f} s"
    if spec.expect == "ok":
        assert result.verdict == "ok", (f"{name}: {result.kinds}: "
                                        + "; ".join(t.reason for t in result.traces.values()))
        assert result.kinds == () and result.traces == {}
        return
    assert result.verdict == "violation"
    assert result.kind == spec.expect
    assert list(result.kinds) == list(expected_kinds(spec))
    assert list(result.kinds) == sorted(result.kinds, key=KINDS.index)
    for kind, trace in result.traces.items():
        assert trace.kind == kind and len(trace.steps) == result.depth and trace.reason


@pytest.mark.parametrize("name", sorted(PINNED_STATES))
def test_pinned_state_count(name):
    result = symmetric_result_of(name)
    assert result.verdict == "ok"
    assert result.states == PINNED_STATES[name]
    if name in PINNED_TRANSITIONS:
        assert result.transitions == PINNED_TRANSITIONS[name]


@pytest.mark.parametrize("name", sorted(PINNED_TRACE_LENGTH))
def test_pinned_trace_length(name):
    result = result_of(name)
    assert result.verdict == "violation"
    assert result.depth == PINNED_TRACE_LENGTH[name]
    assert all(len(t.steps) == PINNED_TRACE_LENGTH[name] for t in result.traces.values())


# ------------------------------------------------------------------------------------------
# counterexamples replayed; the whole state space explored again by the replayer


@pytest.mark.parametrize("name, kind", _violation_cases())
def test_counterexample_replays(name, kind):
    check_replay(spec_of(name), result_of(name), kind)


def test_traces_show_the_new_features():
    """Async reads start and finish in the trace; extra rings and barrier generations show."""
    trace = result_of("x_async_release_before_wait.toml").traces["overwrite_before_drain"]
    data = trace.to_json()
    reads = [e for step in data["steps"] for e in step["state"]["inflight"] if e["kind"] == "read"]
    assert reads and all(e["agent"] == "wgmma[0]" and e["ring"] == MAIN_RING for e in reads)
    assert any("read_async" in s.action for s in trace.steps)
    deadlock = result_of("x_rings_acquire_order_deadlock.toml").traces["deadlock"].to_json()
    last = deadlock["steps"][-1]["state"]
    assert last["agents"]["epilogue[0]"]["rings"]["acc"] == {"stage": 0, "phase": 0,
                                                             "ready": False}
    assert "cta0.acc.full[0]" in last["signals"]
    mix = result_of("x_named_arrive_mix_bug.toml").traces["deadlock"].to_json()
    assert mix["steps"][-1]["state"]["barriers"]["cta0.wg"] == {"arrivals": 1, "generation": 1}


# x_mojo_sm100_matmul.toml (41216 states) takes ~25 s in the replayer; the same template is
# explored by it in a smaller configuration in test_matmul_template_small_config_replayer_bfs.
REPLAYER_BFS = [n for n in X_EXAMPLES if n != "x_mojo_sm100_matmul.toml"]


@pytest.mark.parametrize("name", REPLAYER_BFS)
def test_replayer_explores_the_same_space(name):
    """The replayer's own BFS agrees: same state count for ok (it explores the concrete agents,
    so against the checker without symmetry reduction), same depth and kinds else."""
    spec, result = spec_of(name), unreduced_result_of(name)
    states, depth, kinds = replayer_bfs(spec)
    if spec.expect == "ok":
        assert (depth, kinds) == (None, set())
        assert states == result.states
    else:
        assert depth == result.depth
        assert kinds == set(result.kinds)


# ------------------------------------------------------------------------------------------
# mojo_sm100_matmul


MATMUL_RINGS = """
[ring.acc]
stages = {acc}
producer_arrive_count = 1
consumer_arrive_count = {epilogue}

[ring.clc]
stages = {clc}
producer_arrive_count = 1
consumer_arrive_count = 1
"""


def matmul_text(items=6, tiles=3, stages=2, acc=2, clc=2, epilogue=1, extra="", roles=""):
    scheduler = f'\n[[role]]\nname = "scheduler"\nitems = {tiles}\n' if tiles is not None else ""
    return (f'[pipeline]\ntemplate = "mojo_sm100_matmul"\nbackend = "nvidia"\n'
            f"stages = {stages}\nitems = {items}\n{extra}\n"
            + MATMUL_RINGS.format(acc=acc, clc=clc, epilogue=epilogue) + scheduler + roles)


def texts(ops):
    return [op.text for op in ops]


def test_matmul_template_brings_its_rings():
    """Without ring tables the template's own acc and clc rings are used; a table overrides."""
    bare = (f'[pipeline]\ntemplate = "mojo_sm100_matmul"\nbackend = "nvidia"\nstages = 2\n'
            f'items = 4\nconsumers = 2\n')
    spec = load_spec_text(bare, "m.toml")
    assert [(r.name, r.stages, r.producer_arrive_count, r.consumer_arrive_count)
            for r in spec.rings] == [("acc", 2, 1, 2), ("clc", 2, 1, 1)]
    spec = load_spec_text(bare + "\n[ring.acc]\nstages = 3\n", "m.toml")
    assert [(r.name, r.stages, r.consumer_arrive_count) for r in spec.rings] == \
        [("acc", 3, 2), ("clc", 2, 1)]


def test_matmul_template_is_listed_and_documented():
    assert "mojo_sm100_matmul" in templates.TEMPLATES and "cutlass_pingpong" in templates.TEMPLATES
    doc = templates.__doc__
    for parameter in ("consumers", "tile_bytes", "k_group_size", "stages", "items", "tiles",
                      "k_tiles", "[ring.acc]", "[ring.clc]"):
        assert parameter in doc, parameter
    assert "mojo_sm100_matmul" in templates.NVIDIA_ONLY
    assert "cutlass_pingpong" not in templates.NVIDIA_ONLY


def test_matmul_template_expansion():
    spec = load_spec_text(matmul_text(), "m.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 1)  # input ring
    assert spec.rings == (Ring("acc", 2, 1, 1), Ring("clc", 2, 1, 1))
    assert [r.name for r in spec.roles] == ["load", "mma", "epilogue", "scheduler"]
    load, mma, epilogue, scheduler = spec.roles
    assert [(r.side, r.count, r.items) for r in spec.roles] == [
        ("producer", 1, 6), ("consumer", 1, 6), ("consumer", 1, 6), ("consumer", 1, 3)]
    assert texts(load.body) == [
        "wait_empty ring=clc every=2 at=0", "arrive_full ring=clc every=2 at=0",
        "advance ring=clc every=2 at=0",
        "wait_empty", "expect_tx 16384 @leader", "copy 16384", "advance"]
    assert texts(load.epilogue) == ["drain"]
    assert texts(mma.body) == [
        "wait_empty ring=acc every=2 at=0", "wait_full", "write ring=acc every=2 at=0",
        "read_async", "commit_empty", "advance",
        "read_wait 0 every=2 at=1", "arrive_full ring=acc every=2 at=1",
        "advance ring=acc every=2 at=1"]
    assert texts(epilogue.body) == [
        "wait_full ring=acc every=2 at=0", "read ring=acc every=2 at=0",
        "arrive_empty ring=acc every=2 at=0", "advance ring=acc every=2 at=0"]
    assert texts(scheduler.body) == ["wait_full ring=clc", "arrive_empty ring=clc",
                                     "advance ring=clc"]
    # Per-ring initial phases: 1 where the role waits on empty, 0 where it waits on full.
    assert load.initial_phase == 1 and dict(load.ring_phases) == {"acc": 1, "clc": 1}
    assert mma.initial_phase == 0 and dict(mma.ring_phases)["acc"] == 1
    assert dict(epilogue.ring_phases)["acc"] == 0
    assert dict(scheduler.ring_phases)["clc"] == 0
    ops = {op.text: op for op in mma.body}
    assert (ops["read_wait 0 every=2 at=1"].n, ops["read_wait 0 every=2 at=1"].every,
            ops["read_wait 0 every=2 at=1"].at) == (0, 2, 1)
    assert ops["write ring=acc every=2 at=0"].ring == "acc"


def test_matmul_template_parameters():
    extra = "k_group_size = 2\ntile_bytes = 4096\nconsumers = 3"
    spec = load_spec_text(matmul_text(items=9, tiles=3, epilogue=3, extra=extra), "m.toml")
    load, mma, epilogue, scheduler = spec.roles
    assert texts(load.body)[3:] == ["wait_empty", "expect_tx 8192 @leader", "copy 4096",
                                    "copy 4096", "advance"]
    assert texts(load.body)[0] == "wait_empty ring=clc every=3 at=0"  # k_tiles = 9 / 3
    assert texts(mma.body)[6] == "read_wait 0 every=3 at=2"
    assert epilogue.count == 3 and scheduler.items == 3
    assert spec.extra == {"consumers": 3, "tile_bytes": 4096}
    # Without the scheduler's items: k_tiles = 2, tiles = items / 2.
    spec = load_spec_text(matmul_text(items=4, tiles=None), "m.toml")
    assert spec.role("scheduler").items == 2
    assert texts(spec.role("mma").body)[0] == "wait_empty ring=acc every=2 at=0"
    # One k iteration per tile: no every/at at all.
    spec = load_spec_text(matmul_text(items=3, tiles=3), "m.toml")
    assert not any(op.every > 1 for role in spec.roles for op in role.body)
    assert texts(spec.role("mma").body)[6:] == ["read_wait 0", "arrive_full ring=acc",
                                                "advance ring=acc"]


@pytest.mark.parametrize("text, needle", [
    (matmul_text(items=5, tiles=None), "[pipeline] items: must be tiles * k_tiles"),
    (matmul_text(items=6, tiles=4), "a multiple of the scheduler role's items (4 tiles)"),
    (matmul_text(tiles='"three"'), "role 'scheduler' items: must be the number of output tiles"),
    (matmul_text(extra="cluster_size = 2"), "[pipeline] cluster_size: must be 1"),
    (matmul_text().replace('"nvidia"', '"amd"'), "not available on backend 'amd'"),
])
def test_matmul_template_errors(text, needle):
    with pytest.raises(SpecError) as err:
        load_spec_text(text, "m.toml")
    assert needle in str(err.value) and str(err.value).startswith("m.toml: ")
    assert "\n" not in str(err.value)


def test_matmul_template_small_config_replayer_bfs():
    """2 tiles with 1-stage accumulator and throttle rings (both wrap): the replayer's own
    exploration matches the checker state for state and finds nothing."""
    spec = load_spec_text(matmul_text(items=4, tiles=2, acc=1, clc=1), "m.toml")
    result = verify(spec, timeout=TIMEOUT_S, por=False)
    assert result.verdict == "ok" and result.states == 6210  # 6730 before R1 (ordered commits)
    assert replayer_bfs(spec) == (6210, None, set())


# Mutations of the correct template that must break it: (what, spec text, kinds, depth).
MATMUL_MUTATIONS = [
    ("two epilogue agents, acc empty count left at 1",
     matmul_text(extra="consumers = 2"), ("over_arrival",), 32),
    ("the MMA warp does not acquire an accumulator stage",
     matmul_text(roles='\n[[role]]\nname = "mma"\nbody = ["wait_full", '
                       '"write ring=acc every=2 at=0", "read_async", "commit_empty", "advance", '
                       '"read_wait 0 every=2 at=1", "arrive_full ring=acc every=2 at=1", '
                       '"advance ring=acc every=2 at=1"]\n'),
     ("overwrite_before_drain",), 68),
    ("the MMA warp arrives on empty instead of tcgen05.commit",
     matmul_text(roles='\n[[role]]\nname = "mma"\nbody = ["wait_empty ring=acc every=2 at=0", '
                       '"wait_full", "write ring=acc every=2 at=0", "read_async", '
                       '"arrive_empty", "advance", "read_wait 0 every=2 at=1", '
                       '"arrive_full ring=acc every=2 at=1", "advance ring=acc every=2 at=1"]\n'),
     ("overwrite_before_drain",), 24),
]


@pytest.mark.parametrize("what, text, kinds, depth", MATMUL_MUTATIONS,
                         ids=[m[0] for m in MATMUL_MUTATIONS])
def test_matmul_template_mutations_break_it(what, text, kinds, depth):
    spec = load_spec_text(text, "m.toml")
    result = verify(spec, timeout=TIMEOUT_S)
    assert (result.verdict, result.kinds, result.depth) == ("violation", kinds, depth), what
    for kind in kinds:
        check_replay(spec, result, kind)


def test_matmul_template_without_the_drain_warns_and_fails_strictly():
    """The load warp exits without draining the input ring: the CTA goes with its own MMA
    commits in flight. Since DESIGN's revision of 2026-12-02 that is the warning
    unawaited_at_exit (verdict ok); PTX's strict reading (--strict-exit) is inflight_at_exit,
    at the depth the warning's trace has."""
    spec = load_spec_text(matmul_text(roles='\n[[role]]\nname = "load"\nepilogue = []\n'), "m.toml")
    result = verify(spec, timeout=TIMEOUT_S)
    assert (result.verdict, list(result.warnings)) == ("ok", ["unawaited_at_exit"])
    assert len(result.warnings["unawaited_at_exit"].steps) == 109
    strict = verify(spec, timeout=TIMEOUT_S, strict_exit=True)
    assert (strict.verdict, strict.kinds, strict.depth) == ("violation", ("inflight_at_exit",), 109)


# ------------------------------------------------------------------------------------------
# cutlass_pingpong


def pingpong_text(stages=2, items=3, extra="", roles=""):
    return (f'[pipeline]\ntemplate = "cutlass_pingpong"\nbackend = "nvidia"\n'
            f"stages = {stages}\nitems = {items}\n{extra}\n{roles}")


def test_pingpong_template_expansion():
    spec = load_spec_text(pingpong_text(), "p.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 1)
    assert spec.rings == ()
    wg0, wg1 = spec.roles
    assert (wg0.name, wg0.side, wg0.count, wg0.initial_phase) == ("wg0", "producer", 1, 1)
    assert (wg1.name, wg1.side, wg1.count, wg1.initial_phase) == ("wg1", "consumer", 1, 0)
    assert texts(wg0.body) == ["wait_empty", "write", "arrive_full", "advance"] * 2
    assert texts(wg1.body) == ["wait_full", "read", "arrive_empty", "advance"] * 2
    spec = load_spec_text(pingpong_text(stages=3, extra="consumers = 2"), "p.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (2, 2)
    assert [r.count for r in spec.roles] == [2, 2]
    assert len(spec.role("wg0").body) == 12  # one ordered section per stage


@pytest.mark.parametrize("backend, stages, consumers, states, unreduced", [
    # 2 consumers: each wg0 agent's write is a slot part of its own, so the two wg0 agents are
    # no longer interchangeable (4321 orbits, was 2541); the unreduced space is unchanged
    ("nvidia", 1, 1, 45, 45), ("nvidia", 2, 2, 4321, 7313), ("amd", 2, 1, 169, 169)])
def test_pingpong_template_configurations_are_correct(backend, stages, consumers, states,
                                                      unreduced):
    """States pinned with symmetry reduction and without (two agents per warpgroup role)."""
    text = pingpong_text(stages=stages, extra=f"consumers = {consumers}").replace(
        '"nvidia"', f'"{backend}"')
    result = verify(load_spec_text(text, "p.toml"), timeout=TIMEOUT_S, por=False)
    assert (result.verdict, result.states) == ("ok", states)
    result = verify(load_spec_text(text, "p.toml"), timeout=TIMEOUT_S, symmetry=False, por=False)
    assert (result.verdict, result.states) == ("ok", unreduced)


@pytest.mark.parametrize("what, roles, kinds, depth", [
    ("wg1 starts at phase 1: both groups think it is their turn",
     '[[role]]\nname = "wg1"\ninitial_phase = 1\n', ("read_before_fill",), 2),
    ("wg0 starts at phase 0: neither group thinks it is its turn",
     '[[role]]\nname = "wg0"\ninitial_phase = 0\n', ("deadlock",), 0),
    ("wg0 signals its own barrier instead of the other's",
     '[[role]]\nname = "wg0"\nbody = ["wait_empty", "write", "arrive_empty", "advance",'
     ' "wait_empty", "write", "arrive_empty", "advance"]\n', ("overwrite_before_drain",), 10),
])
def test_pingpong_template_mutations_break_it(what, roles, kinds, depth):
    spec = load_spec_text(pingpong_text(roles=roles), "p.toml")
    result = verify(spec, timeout=TIMEOUT_S)
    assert (result.verdict, result.kinds, result.depth) == ("violation", kinds, depth), what
    for kind in result.kinds:
        check_replay(spec, result, kind)


# ------------------------------------------------------------------------------------------
# semantics the examples rely on


def _reset_every(k: int) -> str:
    return ('[pipeline]\ntemplate = "mojo_producer_consumer"\nbackend = "nvidia"\nstages = 2\n'
            'items = 8\n[[role]]\nname = "producer"\nbody = ["wait_empty", "write", '
            f'"arrive_full", "advance", "reset every={k} at={k - 1}"]\n[[role]]\nname = "consumer"\n'
            f'body = ["wait_full", "read", "arrive_empty", "advance", "reset every={k} at={k - 1}"]\n')


@pytest.mark.parametrize("k, verdict, kinds, depth, states", [
    # 10 reduced states (22 before the walk kept the waiters' window records, por.walk_window;
    # 25 before the finishing steps, 39 before por.stale_ok read the stale records)
    (4, "ok", (), None, 10), (8, "ok", (), None, 10),
    (2, "violation", ("overwrite_before_drain",), 11, None),
    (6, "violation", ("overwrite_before_drain",), 42, None)])
def test_reset_every_k_items_is_correct_exactly_when_it_keeps_parity(k, verdict, kinds, depth, states):
    """Both sides `reset every=K` over 2 stages (docs/rules.md "The phase_alias window after
    `reset`"): with K a multiple of 2 * stages every stage is met again with its parity and the
    window follows the last passed wait, so the spec is correct, as on hardware (it was
    phase_alias at depth 24 under the window that ignored resets). K = 2 or 6 flips the parity:
    the producer's wait on empty[0] passes on the old completion and it writes over an item
    the consumer has not read."""
    spec = load_spec_text(_reset_every(k), "r.toml")
    result = verify(spec, timeout=TIMEOUT_S)
    assert (result.verdict, result.kinds, result.depth) == (verdict, kinds, depth)
    if states is not None:
        assert result.states == states
    else:
        check_replay(spec, result, kinds[0])


def test_every_at_ops_take_no_step_in_other_items():
    result = result_of("x_rings_acquire_order_deadlock.toml")
    actions = [s.action for s in result.traces["deadlock"].steps]
    # The MMA warp's acc ops of the tile's last k iteration (at=2) never ran: it is stuck at
    # k iteration 2 waiting for the input, and its acc wait ran once (item 0).
    assert sum("wait_empty(ring=acc" in a for a in actions) == 1
    assert not any("arrive_full(ring=acc" in a for a in actions)


def test_examples_use_every_new_construct():
    used = set()
    for name in X_EXAMPLES:
        spec = spec_of(name)
        ops = _ops(spec)
        used |= {op.name for op in ops}
        used |= {"ring=" for op in ops if op.ring != MAIN_RING}
        used |= {"every=" for op in ops if op.every > 1}
        used |= {"ctas" for r in spec.roles if r.ctas}
        used |= {"[ring]" for _ in spec.rings}
        used |= {"barrier count" for b in spec.barriers if b.count and not b.roles}
    assert {"read_async", "read_wait", "commit_empty", "sync_arrive", "sync_wait", "sync",
            "reset", "ring=", "every=", "ctas", "[ring]", "barrier count"} <= used


# ------------------------------------------------------------------------------------------
# single-ring specs are unaffected


@pytest.mark.parametrize("name", CORE_EXAMPLES)
def test_core_examples_have_no_extra_structure(name):
    spec = spec_of(name)
    assert spec.rings == ()
    assert all(r.ring_phases == () and r.ctas == () for r in spec.roles)
    assert all(op.ring == MAIN_RING and op.every == 1 and op.at == 0 for op in _ops(spec))
    assert not {"read_async", "read_wait", "sync_arrive", "sync_wait"} & {op.name
                                                                          for op in _ops(spec)}


def test_core_examples_keep_their_pinned_numbers():
    for name, states in ALL_PINNED_STATES.items():
        result = symmetric_result_of(name)
        assert (result.verdict, result.states) == ("ok", states), name
    for name, depth in ALL_PINNED_TRACE_LENGTH.items():
        assert result_of(name).depth == depth, name
