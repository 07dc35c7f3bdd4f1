"""Tests of the independent replayer (tests/replay.py) on small hand-built specs.

The specs are built from the dataclasses in spec/schema.py directly (not through spec/load.py),
with a tiny op-string parser below that only knows what these tests use.
"""
from __future__ import annotations

import copy
import json
from collections import deque

import pytest

from pipeproof.spec.schema import Barrier, Op, Ring, Role, Spec
from tests.replay import (
    ReplayError, apply, enabled_events, initial_state, replay, signal_ready, state_view,
    state_violations,
)

BIG = 1 << 20  # first value outside the mbarrier tx range


# ------------------------------------------------------------------------------------------
# builders
# ------------------------------------------------------------------------------------------

def op(text: str) -> Op:
    parts = text.split()
    name, kw = parts[0], {}
    for p in parts[1:]:
        if p == "@leader":
            kw["leader_only"] = True
        elif p == "unless=ready":
            kw["unless_ready"] = True
        elif "=" in p:
            key, value = p.split("=", 1)
            assert key in ("to", "ring", "every", "at"), p
            kw[key] = int(value) if key in ("every", "at") else value
        elif name in ("sync", "sync_arrive", "sync_wait"):
            kw["barrier"] = p
        else:
            kw["n"] = int(p)
    return Op(name=name, text=text, **kw)


def role(name, body, side="producer", count=1, items=None, initial_phase=None,
         initial_stage=0, prologue=(), epilogue=(), ctas=(), ring_phases=None):
    if initial_phase is None:
        initial_phase = 1 if side == "producer" else 0
    return dict(name=name, side=side, count=count, items=items, initial_stage=initial_stage,
                initial_phase=initial_phase, prologue=tuple(op(t) for t in prologue),
                body=tuple(op(t) for t in body), epilogue=tuple(op(t) for t in epilogue),
                ctas=tuple(ctas), ring_phases=tuple(sorted((ring_phases or {}).items())))


def make_spec(*roles, backend="nvidia", stages=2, pac=1, cac=1, items=2, cluster_size=1,
              barriers=(), rings=()):
    """`rings`: extra rings as Ring objects or (name, stages, pac, cac) tuples."""
    built = []
    for r in roles:
        r = dict(r)
        if r["items"] is None:
            r["items"] = items
        built.append(Role(**r))
    rings = tuple(r if isinstance(r, Ring) else Ring(*r) for r in rings)
    return Spec(path="<test>", name="test", backend=backend, stages=stages,
                producer_arrive_count=pac, consumer_arrive_count=cac, items=items,
                roles=tuple(built), cluster_size=cluster_size, barriers=tuple(barriers),
                rings=tuple(sorted(rings, key=lambda r: r.name)))


def copy_entry(tag=0, nbytes=16, cta=0, stage=0, ring="main", part=None) -> dict:
    """A copy's in-flight entry; `part` only where the ring's slots have several parts."""
    e = {"kind": "copy", "cta": cta, "ring": ring, "stage": stage, "tag": tag, "bytes": nbytes}
    if part is not None:
        e["part"] = part
    return e


def land(tag=0, nbytes=16, cta=0, stage=0, ring="main", part=None) -> dict:
    return {"kind": "land", "entry": copy_entry(tag, nbytes, cta, stage, ring, part)}


PRODUCER_WRITE = ["wait_empty", "write", "arrive_full", "advance"]
CONSUMER = ["wait_full", "read", "arrive_empty", "advance"]


def simple_spec(**kw):
    return make_spec(role("producer", PRODUCER_WRITE),
                     role("consumer", CONSUMER, side="consumer"), **kw)


def inflight(world) -> list:
    """The in-flight entries as the state view shows them (without the replayer's own
    bookkeeping keys)."""
    return state_view(world)["inflight"]


def ev(agent: str, op_name: str, pc: int) -> dict:
    return {"kind": "agent", "agent": agent, "op": op_name, "pc": pc}


def run(world, events) -> list:
    """Apply events in order; return the kinds of each step."""
    return [apply(world, e) for e in events]


def run_first_enabled(world, limit=1000) -> tuple[list, list]:
    """Always take the first enabled event until none is left."""
    events, kinds = [], []
    for _ in range(limit):
        enabled = enabled_events(world)
        if not enabled:
            return events, kinds
        events.append(enabled[0])
        kinds.append(apply(world, enabled[0]))
    raise AssertionError("did not stop")


def make_trace(spec, events) -> dict:
    """A trace JSON (checker/results/trace.py format) of `events`, state views from the replayer."""
    world = initial_state(spec)
    initial = state_view(world)
    steps = []
    for i, e in enumerate(events, start=1):
        agent = world.agent(e["agent"]) if e["kind"] == "agent" else None
        pos = agent.rings[agent.current.op.ring] if agent else None   # the op's ring
        stage = pos.stage if agent else e["entry"]["stage"]
        phase = pos.phase if agent else None
        apply(world, e)
        steps.append({"index": i, "event": e, "action": json.dumps(e), "actor": "",
                      "stage": stage, "phase": phase, "changes": [],
                      "state": state_view(world)})
    return {"kind": "", "reason": "", "initial": initial, "steps": steps}


def world_key(world) -> str:
    view = state_view(world)
    # every key of the entries, the replayer's bookkeeping too (issuer, commit order)
    view["inflight"] = sorted(json.dumps(e, sort_keys=True) for e in world.inflight)
    view["observed"] = sorted(str(k) for k, s in world.signals.items() if s.get("observed"))
    view["windows"] = [sorted((r, str(k), v) for r, pos in a.rings.items()   # (k', ph')
                              for k, v in pos.window.items()) for a in world.agents]
    return json.dumps(view, sort_keys=True)


def explore(spec, limit=200_000, strict_exit=False, warnings=None) -> tuple[set, int, list]:
    """All reachable states (BFS); returns (kinds seen, states, final worlds). `warnings`: a
    set that gets every warning seen."""
    start = initial_state(spec, strict_exit=strict_exit)
    seen = {world_key(start)}
    queue = deque([start])
    kinds, finals = set(state_violations(start)), []
    while queue:
        world = queue.popleft()
        events = enabled_events(world)
        if not events:
            finals.append(world)
        for e in events:
            nxt = copy.deepcopy(world)
            kinds |= apply(nxt, e)
            kinds |= state_violations(nxt)
            if warnings is not None:
                warnings |= nxt.warnings
            key = world_key(nxt)
            if key not in seen:
                seen.add(key)
                queue.append(nxt)
                assert len(seen) < limit
    return kinds, len(seen), finals


# ------------------------------------------------------------------------------------------
# correct runs
# ------------------------------------------------------------------------------------------

def test_correct_run_replays_to_the_end_without_violations():
    spec = simple_spec(stages=2, items=2)
    world = initial_state(spec)
    events, kinds = run_first_enabled(world)
    assert len(events) == 16                        # 2 agents x 2 items x 4 ops
    assert all(k == set() for k in kinds)
    assert state_violations(world) == set()
    assert all(a.done for a in world.agents)
    assert world.slots == {(0, "main", 0): (0,), (0, "main", 1): (1,)}
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 1
    assert world.signals[(0, "main", "empty", 1)]["phase_no"] == 1
    assert world.signals[(0, "main", "full", 1)]["pending"] == 1
    assert world.agent("producer[0]").phase == 2 and world.agent("producer[0]").stage == 0
    assert world.agent("consumer[0]").phase == 1

    outcome = replay(spec, make_trace(spec, events))
    assert outcome.kinds == set()
    assert outcome.last_step_kinds == set() and outcome.end_state_kinds == set()
    assert len(outcome.step_kinds) == 16
    assert all(a.done for a in outcome.world.agents)


def test_first_events_and_pcs():
    world = initial_state(simple_spec())
    assert enabled_events(world) == [ev("producer[0]", "wait_empty", 0)]
    run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "write", 1),
                ev("producer[0]", "arrive_full", 2), ev("producer[0]", "advance", 3)])
    # second item: the same pcs again
    assert enabled_events(world) == [ev("producer[0]", "wait_empty", 0),
                                     ev("consumer[0]", "wait_full", 0)]
    assert world.agent("producer[0]").item == 1


def test_exhaustive_correct_spec_has_no_violation_and_one_final_state():
    spec = simple_spec(stages=2, items=3)
    kinds, states, finals = explore(spec)
    assert kinds == set()
    assert states > 20
    assert len({world_key(w) for w in finals}) == 1
    assert all(all(a.done for a in w.agents) for w in finals)


def test_exhaustive_tma_spec_with_two_consumers_is_clean():
    spec = make_spec(role("producer", ["wait_empty", "expect_tx 64", "copy 64", "advance"]),
                     role("consumer", CONSUMER, side="consumer", count=2),
                     stages=2, items=2, pac=1, cac=2)
    kinds, _, finals = explore(spec)
    assert kinds == set()
    assert all(all(a.done for a in w.agents) and not w.inflight for w in finals)


# ------------------------------------------------------------------------------------------
# disabled steps
# ------------------------------------------------------------------------------------------

def test_blocked_wait_raises():
    world = initial_state(simple_spec())
    with pytest.raises(ReplayError, match=r"consumer\[0\] wait_full is blocked"):
        apply(world, ev("consumer[0]", "wait_full", 0))


@pytest.mark.parametrize("event, message", [
    (ev("producer[0]", "wait_empty", 1), r"at pc 0 op 'wait_empty', not pc 1"),
    (ev("producer[0]", "write", 0), r"not pc 0 op 'write'"),
    (ev("producer[7]", "wait_empty", 0), r"no agent named 'producer\[7\]'"),
    (land(nbytes=4),
     r"is not in flight"),
    ({"kind": "fire", "entry": copy_entry(nbytes=4)},
     r"needs a 'commit' entry"),
    ({"kind": "teleport"}, r"unknown event kind"),
])
def test_wrong_events_raise(event, message):
    world = initial_state(simple_spec())
    with pytest.raises(ReplayError, match=message):
        apply(world, event)


def test_finished_agent_has_no_step():
    spec = make_spec(role("producer", ["arrive_full"]), items=1, stages=1)
    world = initial_state(spec)
    apply(world, ev("producer[0]", "arrive_full", 0))
    with pytest.raises(ReplayError, match="is finished"):
        apply(world, ev("producer[0]", "arrive_full", 0))


def test_replay_names_the_step_and_field_on_disagreement():
    spec = simple_spec()
    events, _ = run_first_enabled(initial_state(spec))
    trace = make_trace(spec, events)
    bad = copy.deepcopy(trace)
    bad["steps"][3]["state"]["agents"]["producer[0]"]["phase"] = 7
    with pytest.raises(ReplayError, match=r"step 4 .*producer\[0\]\.phase: trace says 7"):
        replay(spec, bad)
    bad = copy.deepcopy(trace)
    bad["steps"][2]["state"]["signals"]["cta0.full[0]"]["phase_no"] = 0
    with pytest.raises(ReplayError, match=r"step 3 .*cta0\.full\[0\]\.phase_no"):
        replay(spec, bad)
    bad = copy.deepcopy(trace)
    bad["steps"][0]["event"]["pc"] = 2
    with pytest.raises(ReplayError, match=r"step 1 .*at pc 0"):
        replay(spec, bad)
    bad = copy.deepcopy(trace)
    bad["steps"][0]["phase"] = 0
    with pytest.raises(ReplayError, match=r"step 1 .*step phase"):
        replay(spec, bad)


def test_replay_checks_blocked_step_in_trace():
    spec = simple_spec()
    trace = make_trace(spec, [])
    trace["steps"] = [{"index": 1, "event": ev("consumer[0]", "wait_full", 0), "state": {}}]
    with pytest.raises(ReplayError, match=r"step 1 .*blocked"):
        replay(spec, trace)


# ------------------------------------------------------------------------------------------
# program shape: leader ops, drain, clusters
# ------------------------------------------------------------------------------------------

def test_leader_ops_do_not_exist_for_others_and_drain_takes_stages_pcs():
    spec = make_spec(role("producer", ["arrive_full @leader", "advance"], count=2,
                          prologue=["arrive_empty @leader"], epilogue=["drain"]),
                     stages=2, items=1, pac=2, cac=2)
    world = initial_state(spec)
    leader, other = world.agent("producer[0]"), world.agent("producer[1]")
    assert [(i.pc, i.op.name) for i in leader.program] == [
        (0, "arrive_empty"), (1, "arrive_full"), (2, "advance"), (3, "drain"), (4, "drain")]
    assert [(i.pc, i.op.name) for i in other.program] == [
        (0, "advance"), (1, "drain"), (2, "drain")]
    assert leader.program_length == 5 and other.program_length == 3


def test_drain_waits_then_advances_in_one_step():
    spec = make_spec(role("producer", [], epilogue=["drain"]), stages=2, items=1, cac=1)
    world = initial_state(spec)
    p = world.agent("producer[0]")
    assert enabled_events(world) == [ev("producer[0]", "drain", 0)]
    assert apply(world, ev("producer[0]", "drain", 0)) == set()
    assert (p.stage, p.phase) == (1, 1)
    apply(world, ev("producer[0]", "drain", 1))
    assert (p.stage, p.phase, p.done) == (0, 2, True)


def test_drain_blocks_until_the_slot_is_released():
    spec = make_spec(role("producer", [], epilogue=["drain"]), stages=1, items=1)
    world = initial_state(spec)
    world.agents[0].phase = 2          # a producer one lap in: waits for empty phase 0 to end
    assert enabled_events(world) == []
    assert state_violations(world) == {"deadlock"}
    world.signals[(0, "main", "empty", 0)]["phase_no"] = 1
    assert enabled_events(world) == [ev("producer[0]", "drain", 0)]


def test_cluster_names_targets_and_remote_arrive():
    spec = make_spec(role("producer", ["arrive_full to=all", "arrive_empty to=peer"],
                          count=2),
                     stages=1, items=1, pac=4, cac=2, cluster_size=2)
    world = initial_state(spec)
    assert [a.name for a in world.agents] == [
        "cta0.producer[0]", "cta0.producer[1]", "cta1.producer[0]", "cta1.producer[1]"]
    apply(world, ev("cta1.producer[1]", "arrive_full", 0))
    assert world.signals[(0, "main", "full", 0)]["pending"] == 3
    assert world.signals[(1, "main", "full", 0)]["pending"] == 3
    apply(world, ev("cta1.producer[1]", "arrive_empty", 1))
    assert world.signals[(0, "main", "empty", 0)]["pending"] == 1   # peer of CTA 1 is CTA 0
    assert world.signals[(1, "main", "empty", 0)]["pending"] == 2


def test_copy_to_all_is_one_transfer_per_cta():
    """(Each CTA's producer multicasts, so the slots have a part per source CTA: CTA 0's
    copies store into part 0 of every CTA's slot.)"""
    spec = make_spec(role("producer", ["copy 32 to=all"]), stages=1, items=1,
                     cluster_size=2)
    world = initial_state(spec)
    apply(world, ev("cta0.producer[0]", "copy", 0))
    assert sorted(json.dumps(e, sort_keys=True) for e in inflight(world)) == sorted(
        json.dumps(copy_entry(nbytes=32, cta=c, part=0), sort_keys=True) for c in (0, 1))
    apply(world, land(nbytes=32, cta=1, part=0))
    assert world.slots == {(0, "main", 0): (-1, -1), (1, "main", 0): (0, -1)}
    assert world.signals[(1, "main", "full", 0)]["tx"] == -32
    assert world.signals[(0, "main", "full", 0)]["tx"] == 0


# ------------------------------------------------------------------------------------------
# nvidia signal rules
# ------------------------------------------------------------------------------------------

def test_too_few_arrivals_deadlocks():
    spec = simple_spec(stages=2, items=2, pac=2)
    world = initial_state(spec)
    events, kinds = run_first_enabled(world)
    assert len(events) == 8                         # the producer's whole program
    assert all(k == set() for k in kinds)
    assert world.agent("producer[0]").done
    c = world.agent("consumer[0]")
    assert (c.done, c.current.op.name, c.current.pc) == (False, "wait_full", 0)
    assert world.signals[(0, "main", "full", 0)] | {} == {
        "phase_no": 0, "pending": 1, "expected": 2,
                                                   "tx": 0, "observed": False}
    assert state_violations(world) == {"deadlock"}
    outcome = replay(spec, make_trace(spec, events))
    assert outcome.end_state_kinds == {"deadlock"} and outcome.last_step_kinds == set()


def test_extra_arrival_completes_a_phase_early():
    spec = make_spec(role("producer", ["wait_empty", "write", "arrive_full", "arrive_full",
                                       "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    events = [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "write", 1),
              ev("producer[0]", "arrive_full", 2), ev("producer[0]", "arrive_full", 3)]
    world = initial_state(spec)
    kinds = run(world, events)
    assert kinds == [set(), set(), set(), {"over_arrival"}]
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 2
    # the consumer, at its wait for phase 0, now sees parity 0 again: blocked and aliased
    assert ev("consumer[0]", "wait_full", 0) not in enabled_events(world)
    assert state_violations(world) == {"phase_alias"}
    outcome = replay(spec, make_trace(spec, events))
    assert outcome.last_step_kinds == {"over_arrival"}
    assert outcome.end_state_kinds == {"phase_alias"}
    assert outcome.kinds == {"over_arrival", "phase_alias"}
    assert outcome.step_kinds == [set(), set(), set(), {"over_arrival"}]
    assert outcome.state_kinds == [set(), set(), set(), set(), {"phase_alias"}]


def test_extra_arrival_after_an_observer_is_not_over_arrival():
    spec = make_spec(role("producer", ["arrive_full", "arrive_full"]),
                     role("consumer", ["wait_full"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "arrive_full", 0), ev("consumer[0]", "wait_full", 0),
                        ev("producer[0]", "arrive_full", 1)])
    assert kinds == [set(), set(), set()]
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 2


def test_arrive_count_above_pending_traps():
    spec = make_spec(role("producer", ["arrive_full 2"]), stages=1, items=1, pac=1)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "arrive_full", 0)) == {"over_arrival"}
    assert world.trapped


def test_arrive_count_equal_to_pending_is_fine():
    spec = make_spec(role("producer", ["arrive_full 2"]), stages=1, items=1, pac=2)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "arrive_full", 0)) == set()
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 1
    assert not world.trapped


def test_expect_tx_while_pending_zero_and_tx_outstanding_traps():
    spec = make_spec(role("producer", ["expect_tx 16", "expect_tx 16"]), stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "expect_tx", 0)) == set()
    assert world.signals[(0, "main", "full", 0)] | {} == {
        "phase_no": 0, "pending": 0, "expected": 1,
                                                   "tx": 16, "observed": False}
    assert apply(world, ev("producer[0]", "expect_tx", 1)) == {"over_arrival"}


def test_copy_may_land_before_its_expect_tx():
    spec = make_spec(role("producer", ["wait_empty", "copy 100", "expect_tx 100", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    landing = land(nbytes=100)
    kinds = run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "copy", 1),
                        landing])
    assert kinds == [set(), set(), set()]
    full = world.signals[(0, "main", "full", 0)]
    assert (full["phase_no"], full["pending"], full["tx"]) == (0, 1, -100)
    assert world.slots[(0, "main", 0)] == (0,)
    assert apply(world, ev("producer[0]", "expect_tx", 2)) == set()
    assert (full["phase_no"], full["pending"], full["tx"]) == (1, 1, 0)
    assert run(world, [ev("consumer[0]", "wait_full", 0), ev("consumer[0]", "read", 1)]) \
        == [set(), set()]


@pytest.mark.parametrize("text, kinds", [
    ("expect_tx 1048575", set()), ("expect_tx 1048576", {"tx_range"}),
    ("copy 1048575", set()), ("copy 1048576", {"tx_range"}),
])
def test_tx_range_operand(text, kinds):
    spec = make_spec(role("producer", [text, "advance"]), stages=1, items=1)
    world = initial_state(spec)
    name = text.split()[0]
    assert apply(world, ev("producer[0]", name, 0)) == kinds
    assert world.trapped == bool(kinds)  # the hardware faults: the state after it is meaningless


def test_tx_range_after_update():
    spec = make_spec(role("producer", ["copy 1048575", "copy 1"], items=1),
                     stages=1, items=1)
    world = initial_state(spec)
    run(world, [ev("producer[0]", "copy", 0), ev("producer[0]", "copy", 1)])
    first = land(nbytes=1048575, part=0)               # two copies of a stage: two parts
    second = land(nbytes=1, part=1)
    assert "tx_range" not in apply(world, first)
    assert "tx_range" in apply(world, second)       # tx = -(2^20)
    assert world.signals[(0, "main", "full", 0)]["tx"] == -BIG
    assert world.trapped


def test_view_op_may_be_the_op_as_written():
    spec = make_spec(role("producer", ["expect_tx 16 @leader", "copy 16"]), stages=1, items=1)
    world = initial_state(spec)
    view = state_view(world)
    assert view["agents"]["producer[0]"]["op"] == "expect_tx"
    view["agents"]["producer[0]"]["op"] = "expect_tx 16 @leader"
    replay(spec, {"initial": view, "steps": []})
    view["agents"]["producer[0]"]["op"] = "copy 16"
    with pytest.raises(ReplayError):
        replay(spec, {"initial": view, "steps": []})


def test_try_and_unless_ready():
    spec = make_spec(role("producer", ["arrive_full"]),
                     role("consumer", ["try_full", "wait_full unless=ready", "read"],
                          side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("consumer[0]", "try_full", 0)) == set()
    c = world.agent("consumer[0]")
    assert c.ready is False
    assert ev("consumer[0]", "wait_full", 1) not in enabled_events(world)  # a normal wait

    world = initial_state(spec)
    c = world.agent("consumer[0]")
    apply(world, ev("producer[0]", "arrive_full", 0))
    apply(world, ev("consumer[0]", "try_full", 0))
    assert c.ready is True
    world.signals[(0, "main", "full", 0)]["phase_no"] = 2    # not ready any more: still skipped
    assert ev("consumer[0]", "wait_full", 1) in enabled_events(world)
    assert state_violations(world) == set()          # a skipped wait is not evaluated
    apply(world, ev("consumer[0]", "wait_full", 1))
    assert c.current.op.name == "read" and c.ready is True


def test_try_outside_the_window_is_phase_alias():
    spec = make_spec(role("consumer", ["try_full"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    world.signals[(0, "main", "full", 0)]["phase_no"] = 2
    assert apply(world, ev("consumer[0]", "try_full", 0)) == {"phase_alias"}
    assert world.agent("consumer[0]").ready is False


@pytest.mark.parametrize("p0, ph, ok", [
    (1, 1, {0}), (1, 2, {0, 1}), (1, 3, {1, 2}), (0, 0, {0, 1}), (0, 1, {1, 2}),
    (0, 2, {2, 3}),
])
def test_phase_alias_window(p0, ph, ok):
    spec = make_spec(role("w", ["wait_empty"], initial_phase=p0), stages=1, items=1)
    for phase_no in range(0, 5):
        world = initial_state(spec)
        world.agents[0].phase = ph
        world.signals[(0, "main", "empty", 0)]["phase_no"] = phase_no
        alias = "phase_alias" in state_violations(world)
        assert alias == (phase_no not in ok), (p0, ph, phase_no)


# ------------------------------------------------------------------------------------------
# amd backend
# ------------------------------------------------------------------------------------------

def test_amd_thresholds_and_wrap():
    spec = make_spec(role("producer", ["wait_empty"]), backend="amd", stages=1, items=1,
                     pac=2, cac=3)
    world = initial_state(spec)
    empty, full = world.signals[(0, "main", "empty", 0)], world.signals[(0, "main", "full", 0)]
    assert signal_ready(world, 0, "empty", 0, 1)            # (1-1)*3 = 0
    assert not signal_ready(world, 0, "empty", 0, 0)        # (0-1) mod 2^32 = 2^32-1 laps
    empty["count"] = (2 ** 32 - 1) * 3 - 1
    assert not signal_ready(world, 0, "empty", 0, 0)
    empty["count"] = (2 ** 32 - 1) * 3
    assert signal_ready(world, 0, "empty", 0, 0)
    assert not signal_ready(world, 0, "full", 0, 0)         # needs (0+1)*2
    full["count"] = 1
    assert not signal_ready(world, 0, "full", 0, 0)
    full["count"] = 2
    assert signal_ready(world, 0, "full", 0, 0)
    assert not signal_ready(world, 0, "full", 0, 1)         # needs 4
    full["count"] = 0
    assert signal_ready(world, 0, "full", 0, 2 ** 32 - 1)   # (2^32) mod 2^32 = 0


def test_amd_producer_at_phase_zero_deadlocks():
    spec = make_spec(role("producer", PRODUCER_WRITE, initial_phase=0),
                     role("consumer", CONSUMER, side="consumer"), backend="amd")
    world = initial_state(spec)
    assert enabled_events(world) == []
    assert state_violations(world) == {"deadlock"}


def test_amd_correct_pipeline_with_commit_empty():
    consumer = role("consumer", ["wait_full", "read", "commit_empty 1", "advance"],
                    side="consumer")
    spec = make_spec(role("producer", PRODUCER_WRITE, epilogue=["drain"]), consumer,
                     backend="amd", stages=2, items=3)
    kinds, _, finals = explore(spec)
    assert kinds == set()
    assert len(finals) == 1 and all(a.done for a in finals[0].agents)
    assert not finals[0].inflight
    assert {k: s["count"] for k, s in finals[0].signals.items()} == {
        (0, "main", "full", 0): 2, (0, "main", "empty", 0): 2, (0, "main", "full", 1): 1,
        (0, "main", "empty", 1): 1}
    # without the producer's drain, the CTA can exit while the last commit is in flight:
    # the consumer's own commit, so a warning (inflight_at_exit only in strict mode)
    spec = make_spec(role("producer", PRODUCER_WRITE), consumer, backend="amd", stages=2,
                     items=3)
    assert explore(spec)[0] == set()
    assert explore(spec, strict_exit=True)[0] == {"inflight_at_exit"}


def test_amd_arrive_adds_and_commit_fires_later():
    spec = make_spec(role("consumer", ["arrive_full 3", "commit_empty 2"], side="consumer"),
                     backend="amd", stages=1, items=1)
    world = initial_state(spec)
    run(world, [ev("consumer[0]", "arrive_full", 0)])
    assert world.signals[(0, "main", "full", 0)] == {"count": 3}
    kinds = apply(world, ev("consumer[0]", "commit_empty", 1))
    assert kinds == set()                      # its CTA is gone with its own commit in flight:
    assert world.warnings == {"unawaited_at_exit"}    # a warning, not a violation
    assert world.signals[(0, "main", "empty", 0)] == {"count": 0}
    assert enabled_events(world) == [
        {"kind": "fire", "entry": {"kind": "commit", "cta": 0, "ring": "main", "stage": 0, "n": 2,
                                   "agent": "consumer[0]", "after": 0, "after_commits": 0}}]
    apply(world, enabled_events(world)[0])
    assert world.signals[(0, "main", "empty", 0)] == {"count": 2}


# ------------------------------------------------------------------------------------------
# named barriers
# ------------------------------------------------------------------------------------------

def test_sync_releases_everybody_in_one_step():
    spec = make_spec(role("w", ["sync bar", "advance"], count=3), stages=2, items=1,
                     barriers=[Barrier("bar", ("w",))])
    world = initial_state(spec)
    apply(world, ev("w[0]", "sync", 0))
    apply(world, ev("w[1]", "sync", 0))
    assert world.barriers[(0, "bar")] == {"arrivals": 2, "generation": 0}
    assert [a.at_sync for a in world.agents] == [True, True, False]
    assert enabled_events(world) == [ev("w[2]", "sync", 0)]
    assert state_view(world)["agents"]["w[0]"]["op"] == "sync"
    assert apply(world, ev("w[2]", "sync", 0)) == set()
    assert world.barriers[(0, "bar")] == {"arrivals": 0, "generation": 1}
    assert [a.at_sync for a in world.agents] == [False, False, False]
    assert enabled_events(world) == [ev(f"w[{i}]", "advance", 1) for i in range(3)]


def test_sync_with_explicit_count_restarts():
    spec = make_spec(role("w", ["sync bar"], count=3), stages=1, items=1,
                     barriers=[Barrier("bar", ("w",), count=2)])
    world = initial_state(spec)
    run(world, [ev("w[0]", "sync", 0), ev("w[1]", "sync", 0)])
    assert world.agent("w[0]").done and world.agent("w[1]").done
    apply(world, ev("w[2]", "sync", 0))
    assert world.barriers[(0, "bar")] == {"arrivals": 1, "generation": 1}
    assert world.agent("w[2]").at_sync
    assert state_violations(world) == {"deadlock"}


def test_sync_is_per_cta():
    spec = make_spec(role("w", ["sync bar"], count=1), stages=1, items=1, cluster_size=2,
                     barriers=[Barrier("bar", ("w",))])
    world = initial_state(spec)
    apply(world, ev("cta1.w[0]", "sync", 0))           # count 1 per CTA: releases at once
    assert world.agent("cta1.w[0]").done and not world.agent("cta0.w[0]").done


# ------------------------------------------------------------------------------------------
# slots: read_before_fill, overwrite_before_drain
# ------------------------------------------------------------------------------------------

def test_read_of_an_empty_slot_is_read_before_fill():
    spec = make_spec(role("consumer", ["read"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("consumer[0]", "read", 0)) == {"read_before_fill"}


def test_read_with_a_copy_in_flight_is_read_before_fill():
    spec = make_spec(role("producer", ["write", "copy 16", "advance"]),
                     role("consumer", ["read"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    run(world, [ev("producer[0]", "write", 0), ev("producer[0]", "copy", 1)])
    assert world.slots[(0, "main", 0)] == (0, -1)   # the write's part has the right tag
    assert apply(world, ev("consumer[0]", "read", 0)) == {"read_before_fill"}


def test_overwrite_when_the_consumer_has_not_read_yet():
    spec = make_spec(role("producer", ["write", "arrive_full", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=2)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "write", 0), ev("producer[0]", "arrive_full", 1),
                        ev("producer[0]", "advance", 2), ev("producer[0]", "write", 0)])
    assert kinds == [set(), set(), set(), {"overwrite_before_drain"}]
    assert world.slots[(0, "main", 0)] == (1,)


def test_no_overwrite_after_the_consumer_has_read():
    spec = make_spec(role("producer", ["write", "arrive_full", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=2)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "write", 0), ev("producer[0]", "arrive_full", 1),
                        ev("consumer[0]", "wait_full", 0), ev("consumer[0]", "read", 1),
                        ev("producer[0]", "advance", 2), ev("producer[0]", "write", 0)])
    assert kinds == [set()] * 6


def test_same_tag_again_is_not_an_overwrite():
    spec = make_spec(role("producer", ["write", "write"]),
                     role("consumer", ["read"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    assert run(world, [ev("producer[0]", "write", 0), ev("producer[0]", "write", 1)]) \
        == [set(), set()]


def test_release_before_read_then_landing_overwrites():
    spec = make_spec(role("producer", ["wait_empty", "expect_tx 16", "copy 16", "advance"]),
                     role("consumer", ["wait_full", "arrive_empty", "read", "advance"],
                          side="consumer"), stages=1, items=2)
    world = initial_state(spec)
    kinds = run(world, [
        ev("producer[0]", "wait_empty", 0), ev("producer[0]", "expect_tx", 1),
        ev("producer[0]", "copy", 2), land(0), ev("consumer[0]", "wait_full", 0),
        ev("consumer[0]", "arrive_empty", 1), ev("producer[0]", "advance", 3),
        ev("producer[0]", "wait_empty", 0), ev("producer[0]", "expect_tx", 1),
        ev("producer[0]", "copy", 2), land(1)])
    assert kinds[:-1] == [set()] * 10
    assert kinds[-1] == {"overwrite_before_drain"}


def test_overwrite_looks_at_the_stage_the_reader_will_read_at():
    spec_a = make_spec(role("producer", ["write"], items=2),
                      role("consumer", ["read"], side="consumer", items=1, initial_stage=0),
                      stages=1, items=1)
    world_a = initial_state(spec_a)
    # producer writes item 0 then item 1 into slot 0; consumer at stage 0 still reads item 0
    assert run(world_a, [ev("producer[0]", "write", 0), ev("producer[0]", "write", 0)]) \
        == [set(), {"overwrite_before_drain"}]
    spec_b = make_spec(role("producer", ["write"], items=2),
                      role("consumer", ["advance", "read"], side="consumer", items=1),
                      stages=2, items=1)
    world_b = initial_state(spec_b)
    # this consumer reads item 0 at stage 1, not 0
    assert run(world_b, [ev("producer[0]", "write", 0), ev("producer[0]", "write", 0)]) \
        == [set(), set()]


# ------------------------------------------------------------------------------------------
# inflight_at_exit
# ------------------------------------------------------------------------------------------

def test_cta_exits_with_a_copy_in_flight():
    spec = make_spec(role("producer", ["expect_tx 16", "copy 16", "advance"]),
                     stages=1, items=1)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "expect_tx", 0), ev("producer[0]", "copy", 1),
                        ev("producer[0]", "advance", 2)])
    assert kinds == [set(), set(), set()]              # its own copy: a warning only
    assert world.warnings == {"unawaited_at_exit"}
    assert world.gone == {0}
    landing = land()
    assert enabled_events(world) == [landing]
    assert state_violations(world) == set()             # not a deadlock: a copy is in flight
    assert apply(world, landing) == set()               # landing in a gone CTA: nothing more
    strict = initial_state(spec, strict_exit=True)
    kinds = run(strict, [ev("producer[0]", "expect_tx", 0), ev("producer[0]", "copy", 1),
                         ev("producer[0]", "advance", 2)])
    assert kinds == [set(), set(), {"inflight_at_exit"}] and strict.warnings == set()
    assert apply(strict, landing) == {"inflight_at_exit"}   # strict: as before the revision


def test_no_exit_violation_when_the_copy_landed_first():
    spec = make_spec(role("producer", ["expect_tx 16", "copy 16", "advance"]),
                     stages=1, items=1)
    world = initial_state(spec)
    landing = land()
    kinds = run(world, [ev("producer[0]", "expect_tx", 0), ev("producer[0]", "copy", 1),
                        landing, ev("producer[0]", "advance", 2)])
    assert kinds == [set()] * 4
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 1


def test_remote_arrive_to_a_gone_cta():
    spec = make_spec(role("c", ["arrive_empty to=peer"], side="consumer"),
                     stages=1, items=1, cluster_size=2)
    world = initial_state(spec)
    assert apply(world, ev("cta0.c[0]", "arrive_empty", 0)) == set()
    assert world.signals[(1, "main", "empty", 0)]["phase_no"] == 1      # took effect at once
    assert world.gone == {0}
    assert apply(world, ev("cta1.c[0]", "arrive_empty", 0)) == {"inflight_at_exit"}
    assert world.gone == {0, 1}


# ------------------------------------------------------------------------------------------
# more bookkeeping: observations per phase, reset
# ------------------------------------------------------------------------------------------

def test_an_observation_counts_only_for_its_own_phase():
    spec = make_spec(role("producer", ["arrive_full", "arrive_full", "arrive_full"]),
                     role("consumer", ["wait_full"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "arrive_full", 0), ev("consumer[0]", "wait_full", 0),
                        ev("producer[0]", "arrive_full", 1),   # completes phase 1: observed
                        ev("producer[0]", "arrive_full", 2)])  # completes phase 2: nobody saw
    assert kinds == [set(), set(), set(), {"over_arrival"}]
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 3


def test_a_try_that_answers_ready_is_an_observation():
    spec = make_spec(role("producer", ["arrive_full", "arrive_full"]),
                     role("consumer", ["try_full", "try_full"], side="consumer"),
                     stages=1, items=1)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "arrive_full", 0), ev("consumer[0]", "try_full", 0),
                        ev("producer[0]", "arrive_full", 1)])
    assert kinds == [set(), set(), set()]
    world = initial_state(spec)
    kinds = run(world, [ev("consumer[0]", "try_full", 0),      # answers not ready
                        ev("producer[0]", "arrive_full", 0),
                        ev("producer[0]", "arrive_full", 1)])
    assert kinds == [set(), set(), {"over_arrival"}]


def test_reset_restores_stage_and_phase_but_not_ready():
    spec = make_spec(role("producer", ["try_empty", "advance", "advance", "advance", "reset"],
                          initial_stage=1), stages=2, items=1)
    world = initial_state(spec)
    p = world.agent("producer[0]")
    run(world, [ev("producer[0]", "try_empty", 0), ev("producer[0]", "advance", 1),
                ev("producer[0]", "advance", 2), ev("producer[0]", "advance", 3)])
    assert (p.stage, p.phase, p.ready) == (0, 3, True)
    apply(world, ev("producer[0]", "reset", 4))
    assert (p.stage, p.phase, p.ready, p.done) == (1, 1, True, True)


# ------------------------------------------------------------------------------------------
# [expressiveness] several rings
# ------------------------------------------------------------------------------------------

# main: loader -> mma (2 stages); acc: mma -> epi (1 stage). mma is a consumer of main and a
# producer of acc, epi a consumer of acc only.
LOADER = ["wait_empty", "write", "arrive_full", "advance"]
MMA = ["wait_full", "read", "wait_empty ring=acc", "write ring=acc", "arrive_full ring=acc",
       "arrive_empty", "advance", "advance ring=acc"]
EPI = ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc", "advance ring=acc"]


def two_ring_spec(items=3, mma=MMA, mma_phases=None, epi_phases=None, **kw):
    return make_spec(
        role("loader", LOADER),
        role("mma", mma, side="consumer", ring_phases=mma_phases or {"acc": 1}),
        role("epi", EPI, side="consumer", ring_phases=epi_phases or {"acc": 0}),
        stages=2, items=items, rings=[("acc", 1, 1, 1)], **kw)


def test_two_rings_have_their_own_signals_slots_and_agent_positions():
    spec = two_ring_spec()
    world = initial_state(spec)
    view = state_view(world)
    assert sorted(view["signals"]) == [
        "cta0.acc.empty[0]", "cta0.acc.full[0]", "cta0.empty[0]", "cta0.empty[1]",
        "cta0.full[0]", "cta0.full[1]"]
    assert view["slots"] == {"cta0.slot[0]": -1, "cta0.slot[1]": -1, "cta0.acc.slot[0]": -1}
    assert view["agents"]["mma[0]"]["phase"] == 0
    assert view["agents"]["mma[0]"]["rings"] == {"acc": {"stage": 0, "phase": 1,
                                                         "ready": False}}
    assert view["agents"]["epi[0]"]["rings"] == {"acc": {"stage": 0, "phase": 0,
                                                         "ready": False}}
    # a single-ring spec shows no "rings" key (the core view is unchanged)
    assert "rings" not in state_view(initial_state(simple_spec()))["agents"]["producer[0]"]

    run(world, [ev("loader[0]", "wait_empty", 0), ev("loader[0]", "write", 1),
                ev("loader[0]", "arrive_full", 2), ev("mma[0]", "wait_full", 0),
                ev("mma[0]", "read", 1), ev("mma[0]", "wait_empty", 2),
                ev("mma[0]", "write", 3), ev("mma[0]", "arrive_full", 4),
                ev("mma[0]", "arrive_empty", 5)])
    assert world.slots == {(0, "main", 0): (0,), (0, "main", 1): (-1,), (0, "acc", 0): (0,)}
    assert world.signals[(0, "acc", "full", 0)]["phase_no"] == 1
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 1
    assert world.signals[(0, "main", "full", 1)]["phase_no"] == 0
    mma = world.agent("mma[0]")
    apply(world, ev("mma[0]", "advance", 6))          # main only: 2 stages
    assert (mma.stage, mma.phase) == (1, 0)
    assert (mma.rings["acc"].stage, mma.rings["acc"].phase) == (0, 1)
    apply(world, ev("mma[0]", "advance", 7))          # acc only: 1 stage, a new lap
    assert (mma.stage, mma.phase) == (1, 0)
    assert (mma.rings["acc"].stage, mma.rings["acc"].phase) == (0, 2)
    assert state_view(world)["agents"]["mma[0]"]["rings"]["acc"]["phase"] == 2
    # the epilogue may take acc slot 0 now; mma's next acc wait needs epi's release first
    assert ev("epi[0]", "wait_full", 0) in enabled_events(world)
    world.agent("mma[0]").pos += 2                   # (to its acc wait of item 1)
    assert world.agent("mma[0]").current.op.text == "wait_empty ring=acc"
    assert ev("mma[0]", "wait_empty", 2) not in enabled_events(world)


def test_two_ring_pipeline_is_clean_and_its_trace_replays():
    spec = two_ring_spec(items=3)
    kinds, _, finals = explore(spec)
    assert kinds == set()
    assert len({world_key(w) for w in finals}) == 1
    final = finals[0]
    assert all(a.done for a in final.agents)
    epi = final.agent("epi[0]")
    assert (epi.rings["acc"].stage, epi.rings["acc"].phase) == (0, 3)
    assert (epi.stage, epi.phase) == (0, 0)            # never touched the main ring
    mma = final.agent("mma[0]")
    assert (mma.stage, mma.phase) == (1, 1) and mma.rings["acc"].phase == 4
    world = initial_state(spec)
    events, _ = run_first_enabled(world)
    outcome = replay(spec, make_trace(spec, events))
    assert outcome.kinds == set()
    # a trace that shows the acc ring wrongly is caught
    trace = make_trace(spec, events)
    trace["steps"][-1]["state"]["agents"]["epi[0]"]["rings"]["acc"]["phase"] = 9
    with pytest.raises(ReplayError, match=r"epi\[0\]\.rings\.acc\.phase: trace says 9"):
        replay(spec, trace)


def test_wait_uses_the_agents_phase_of_that_ring_and_checks_the_step_header():
    spec = two_ring_spec()
    world = initial_state(spec)
    # epi waits on acc full at its acc phase 0: not ready; mma's acc wait_empty at phase 1 is
    with pytest.raises(ReplayError, match=r"cta0\.acc\.full\[0\] = .* not ready for phase 0"):
        apply(world, ev("epi[0]", "wait_full", 0))
    assert signal_ready(world, 0, "empty", 0, 1, ring="acc")
    assert not signal_ready(world, 0, "full", 0, 0, ring="acc")
    trace = make_trace(spec, [ev("loader[0]", "wait_empty", 0)])
    trace["steps"][0]["phase"] = 1
    replay(spec, trace)
    trace["steps"][0]["phase"] = 0
    with pytest.raises(ReplayError, match="step phase"):
        replay(spec, trace)


def test_reset_and_drain_act_on_their_own_ring():
    spec = make_spec(role("p", ["advance ring=acc", "advance", "reset ring=acc"],
                          epilogue=["drain ring=acc"], ring_phases={"acc": 1}),
                     stages=2, items=1, rings=[("acc", 3, 1, 1)])
    world = initial_state(spec)
    p = world.agent("p[0]")
    assert [(i.pc, i.op.name) for i in p.program] == [
        (0, "advance"), (1, "advance"), (2, "reset"), (3, "drain"), (4, "drain"),
        (5, "drain")]
    run(world, [ev("p[0]", "advance", 0), ev("p[0]", "advance", 1)])
    assert (p.stage, p.phase, p.rings["acc"].stage) == (1, 1, 1)
    apply(world, ev("p[0]", "reset", 2))
    assert (p.stage, p.phase, p.rings["acc"].stage, p.rings["acc"].phase) == (1, 1, 0, 1)
    run(world, [ev("p[0]", "drain", 3), ev("p[0]", "drain", 4), ev("p[0]", "drain", 5)])
    assert (p.rings["acc"].stage, p.rings["acc"].phase, p.done) == (0, 2, True)
    assert (p.stage, p.phase) == (1, 1)


# A throttle ring between two roles: each must produce before it consumes, or both wait.
P_WRONG = ["wait_full ring=acc", "arrive_empty ring=acc", "advance ring=acc",
           "wait_empty", "write", "arrive_full", "advance"]
C_WRONG = ["wait_full", "read", "arrive_empty", "advance",
           "wait_empty ring=acc", "arrive_full ring=acc", "advance ring=acc"]
C_RIGHT = ["wait_empty ring=acc", "arrive_full ring=acc", "advance ring=acc",
           "wait_full", "read", "arrive_empty", "advance"]


def throttle_spec(c_body):
    return make_spec(role("p", P_WRONG, ring_phases={"acc": 0}),
                     role("c", c_body, side="consumer", ring_phases={"acc": 1}),
                     stages=1, items=2, rings=[("acc", 1, 1, 1)])


def test_cross_ring_deadlock_from_the_wrong_acquire_order():
    spec = throttle_spec(C_WRONG)
    world = initial_state(spec)
    assert enabled_events(world) == []                 # p waits on acc, c on main
    assert state_violations(world) == {"deadlock"}
    assert replay(spec, make_trace(spec, [])).end_state_kinds == {"deadlock"}
    kinds, _, finals = explore(throttle_spec(C_RIGHT))
    assert kinds == set()
    assert all(all(a.done for a in w.agents) for w in finals)


def test_phase_alias_is_judged_per_ring():
    spec = two_ring_spec()
    world = initial_state(spec)
    world.signals[(0, "acc", "full", 0)]["phase_no"] = 2   # epi waits for acc phase 0
    assert state_violations(world) == {"phase_alias"}
    world = initial_state(spec)
    world.signals[(0, "main", "full", 0)]["phase_no"] = 2  # mma waits for main phase 0
    assert state_violations(world) == {"phase_alias"}


def test_amd_ring_uses_its_own_arrive_counts():
    spec = make_spec(role("c", ["wait_full ring=acc"], side="consumer"), backend="amd",
                     stages=1, items=1, pac=1, rings=[("acc", 1, 3, 1)])
    world = initial_state(spec)
    world.signals[(0, "acc", "full", 0)]["count"] = 2
    assert not signal_ready(world, 0, "full", 0, 0, ring="acc")
    world.signals[(0, "acc", "full", 0)]["count"] = 3
    assert enabled_events(world) == [ev("c[0]", "wait_full", 0)]


def test_copy_and_overwrite_on_another_ring():
    spec = make_spec(role("p", ["copy 16 ring=acc", "write ring=acc"], items=2),
                     role("c", ["read ring=acc"], side="consumer", items=1),
                     stages=1, items=1, rings=[("acc", 1, 1, 1)])
    world = initial_state(spec)
    apply(world, ev("p[0]", "copy", 0))
    assert inflight(world) == [copy_entry(ring="acc", part=0)]   # a copy and a write: 2 parts
    assert apply(world, ev("c[0]", "read", 0)) == {"read_before_fill"}   # copy in flight
    apply(world, land(ring="acc", part=0))
    assert world.slots[(0, "acc", 0)] == (0, -1) and world.slots[(0, "main", 0)] == (-1,)
    assert world.signals[(0, "acc", "full", 0)]["tx"] == -16
    # c has read item 0 already: p's later writes of item 1 overwrite nothing unread
    assert run(world, [ev("p[0]", "write", 1), ev("p[0]", "copy", 0)]) == [set(), set()]


# ------------------------------------------------------------------------------------------
# [expressiveness] every=K, at=j
# ------------------------------------------------------------------------------------------

def test_every_op_exists_only_in_its_items_and_keeps_its_pc():
    spec = make_spec(role("c", ["read every=2", "advance", "reset every=3 at=1"],
                          side="consumer", epilogue=["advance"]), stages=4, items=5)
    world = initial_state(spec)
    c = world.agent("c[0]")
    assert [(i.item, i.pc, i.op.name) for i in c.program] == [
        (0, 0, "read"), (0, 1, "advance"),
        (1, 1, "advance"), (1, 2, "reset"),
        (2, 0, "read"), (2, 1, "advance"),
        (3, 1, "advance"),
        (4, 0, "read"), (4, 1, "advance"), (4, 2, "reset"),
        (5, 3, "advance")]
    assert c.program_length == 4
    events, _ = run_first_enabled(world)
    assert [e["pc"] for e in events] == [0, 1, 1, 2, 0, 1, 1, 0, 1, 2, 3]
    assert (c.stage, c.phase) == (1, 0)


def test_every_read_decides_which_tags_are_still_unread():
    for at, kinds in ((0, {"overwrite_before_drain"}), (1, set())):
        spec = make_spec(role("p", ["write"]),
                         role("c", [f"read every=2 at={at}"], side="consumer"),
                         stages=1, items=2)
        world = initial_state(spec)
        # p writes item 0 then item 1 into the one slot; c reads item `at` only
        assert run(world, [ev("p[0]", "write", 0), ev("p[0]", "write", 0)]) == [set(), kinds]


def test_every_release_counts_exhaustively():
    # the consumer releases only every other item, with a count of 2 per release
    spec = make_spec(role("p", ["wait_empty", "write", "arrive_full", "advance"]),
                     role("c", ["wait_full", "read", "arrive_empty 2 every=2 at=1",
                                "advance"], side="consumer"),
                     stages=2, items=4, cac=1)
    kinds, _, _ = explore(spec)
    assert "over_arrival" in kinds                      # an arrive of 2 with pending 1 traps
    spec = make_spec(role("p", ["wait_empty", "write", "arrive_full", "advance"]),
                     role("c", ["wait_full", "read", "arrive_empty every=2 at=1",
                                "arrive_empty every=2", "advance"], side="consumer"),
                     stages=2, items=4)
    kinds, _, finals = explore(spec)
    assert kinds == set() and all(all(a.done for a in w.agents) for w in finals)


# ------------------------------------------------------------------------------------------
# [expressiveness] ctas = [...]
# ------------------------------------------------------------------------------------------

CLUSTER_P = ["wait_empty", "arrive_full to=all", "advance"]
CLUSTER_C = ["wait_full", "arrive_empty to=leader", "advance"]


def cluster_spec(c1_items):
    return make_spec(role("p", CLUSTER_P, ctas=[0], epilogue=["drain"]),
                     role("c0", CLUSTER_C, side="consumer", ctas=[0]),
                     role("c1", CLUSTER_C, side="consumer", ctas=[1], items=c1_items),
                     stages=1, items=2, pac=1, cac=2, cluster_size=2)


def test_ctas_limit_a_role_to_its_ctas_and_names_keep_the_cta():
    spec = make_spec(role("p", ["arrive_full @leader"], ctas=[1], count=2),
                     role("c", ["arrive_empty"], side="consumer"),
                     stages=1, items=1, pac=1, cluster_size=2)
    world = initial_state(spec)
    assert [a.name for a in world.agents] == [
        "cta0.c[0]", "cta1.p[0]", "cta1.p[1]", "cta1.c[0]"]
    assert [(a.cta, a.index) for a in world.agents] == [(0, 0), (1, 0), (1, 1), (1, 0)]
    assert len(world.agent("cta1.p[0]").program) == 1   # the leader of p in CTA 1
    assert len(world.agent("cta1.p[1]").program) == 0
    assert sorted(state_view(world)["agents"]) == [
        "cta0.c[0]", "cta1.c[0]", "cta1.p[0]", "cta1.p[1]"]
    # CTA 0 is gone as soon as ITS agents are done
    apply(world, ev("cta0.c[0]", "arrive_empty", 0))
    assert world.gone == {0}
    apply(world, ev("cta1.p[0]", "arrive_full", 0))
    assert world.gone == {0} and world.signals[(1, "main", "full", 0)]["phase_no"] == 1


def test_ctas_with_the_same_item_counts_are_clean():
    kinds, _, finals = explore(cluster_spec(2))
    assert kinds == set()
    assert all(all(a.done for a in w.agents) for w in finals)


def test_cta_with_more_items_deadlocks():
    kinds, _, finals = explore(cluster_spec(3))
    assert kinds == {"deadlock"}
    (final,) = {world_key(w): w for w in finals}.values()
    stuck = [a.name for a in final.agents if not a.done]
    assert stuck == ["cta1.c1[0]"] and final.gone == {0}


def test_cta_with_fewer_items_leaves_early():
    kinds, _, _ = explore(cluster_spec(1))
    # p's arrive_full to=all of item 1 reaches CTA 1 after it is gone; and the leader's empty
    # never completes its second phase
    assert "inflight_at_exit" in kinds and "deadlock" in kinds


def test_barrier_count_counts_the_roles_present_in_the_cta():
    spec = make_spec(role("a", ["sync bar"], ctas=[0], count=2), role("b", ["sync bar"]),
                     stages=1, items=1, cluster_size=2,
                     barriers=[Barrier("bar", ("a", "b"))])
    world = initial_state(spec)
    apply(world, ev("cta1.b[0]", "sync", 0))           # count 1 in CTA 1
    assert world.agent("cta1.b[0]").done
    run(world, [ev("cta0.b[0]", "sync", 0), ev("cta0.a[0]", "sync", 0)])
    assert world.barriers[(0, "bar")] == {"arrivals": 2, "generation": 0}
    apply(world, ev("cta0.a[1]", "sync", 0))           # count 3 in CTA 0
    assert all(a.done for a in world.agents)


# ------------------------------------------------------------------------------------------
# [expressiveness] async reads
# ------------------------------------------------------------------------------------------

def read_entry(agent, seq, tag=0, stage=0, cta=0, ring="main") -> dict:
    return {"kind": "read", "cta": cta, "ring": ring, "stage": stage, "tag": tag,
            "agent": agent, "seq": seq}


def commit_entry(agent="c[0]", after=0, stage=0, n=1, cta=0, ring="main",
                 after_commits=0) -> dict:
    return {"kind": "commit", "cta": cta, "ring": ring, "stage": stage, "n": n,
            "agent": agent, "after": after, "after_commits": after_commits}


def finish(agent, seq, **kw) -> dict:
    return {"kind": "finish", "entry": read_entry(agent, seq, **kw)}


def fire(**kw) -> dict:
    return {"kind": "fire", "entry": commit_entry(**kw)}


def test_async_reads_finish_in_fifo_order_and_read_wait_blocks():
    spec = make_spec(role("p", ["write", "advance"]),
                     role("c", ["read_async", "advance"], side="consumer",
                          epilogue=["read_wait 1", "read_wait 0", "advance"]),
                     stages=2, items=2)
    world = initial_state(spec)
    run(world, [ev("p[0]", "write", 0), ev("p[0]", "advance", 1), ev("p[0]", "write", 0),
                ev("p[0]", "advance", 1)])
    assert run(world, [ev("c[0]", "read_async", 0), ev("c[0]", "advance", 1),
                       ev("c[0]", "read_async", 0), ev("c[0]", "advance", 1)]) == [set()] * 4
    assert inflight(world) == [read_entry("c[0]", 0, tag=0, stage=0),
                              read_entry("c[0]", 1, tag=1, stage=1)]
    assert state_view(world)["inflight"] == world.inflight
    # only the oldest may finish; read_wait 1 waits for it
    assert enabled_events(world) == [finish("c[0]", 0)]
    with pytest.raises(ReplayError, match="oldest"):
        apply(world, finish("c[0]", 1, tag=1, stage=1))
    with pytest.raises(ReplayError, match=r"c\[0\] read_wait is blocked: 2 async read"):
        apply(world, ev("c[0]", "read_wait", 2))
    assert state_violations(world) == set()            # reads in flight: not a deadlock
    assert apply(world, finish("c[0]", 0)) == set()
    assert inflight(world) == [read_entry("c[0]", 0, tag=1, stage=1)]   # seq moved down
    assert enabled_events(world) == [ev("c[0]", "read_wait", 2),
                                     finish("c[0]", 0, tag=1, stage=1)]
    apply(world, ev("c[0]", "read_wait", 2))
    assert enabled_events(world) == [finish("c[0]", 0, tag=1, stage=1)]   # read_wait 0
    apply(world, finish("c[0]", 0, tag=1, stage=1))
    run(world, [ev("c[0]", "read_wait", 3), ev("c[0]", "advance", 4)])
    assert all(a.done for a in world.agents) and inflight(world) == []


def test_read_async_checks_the_slot_at_issue():
    spec = make_spec(role("p", ["copy 16"]), role("c", ["read_async"], side="consumer"),
                     stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("c[0]", "read_async", 0)) == {"read_before_fill"}   # never stored
    assert inflight(world) == [read_entry("c[0]", 0)]   # issued all the same
    world = initial_state(spec)
    apply(world, ev("p[0]", "copy", 0))
    assert apply(world, ev("c[0]", "read_async", 0)) == {"read_before_fill",
                                                          "inflight_at_exit"}


def test_cta_gone_with_an_async_read_in_flight():
    spec = make_spec(role("p", ["write"]), role("c", ["read_async"], side="consumer"),
                     stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("p[0]", "write", 0)) == set()
    assert apply(world, ev("c[0]", "read_async", 0)) == {"inflight_at_exit"}
    assert world.gone == {0}
    assert apply(world, finish("c[0]", 0)) == set()    # a read is aimed at nothing
    spec2 = make_spec(role("p", ["write"]),
                      role("c", ["read_async", "read_wait 0"], side="consumer"),
                      stages=1, items=1)
    world = initial_state(spec2)
    _, kinds = run_first_enabled(world)
    assert all(k == set() for k in kinds) and world.gone == {0}


def test_commit_waits_for_the_reads_issued_before_it():
    spec = make_spec(role("c", ["read_async", "read_async", "commit_empty",
                                "read_async", "commit_empty", "advance"], side="consumer"),
                     stages=1, items=1, cac=2)
    world = initial_state(spec)
    run(world, [ev("c[0]", "read_async", 0), ev("c[0]", "read_async", 1),
                ev("c[0]", "commit_empty", 2), ev("c[0]", "read_async", 3),
                ev("c[0]", "commit_empty", 4)])
    first, second = commit_entry("c[0]", 2), commit_entry("c[0]", 3, after_commits=1)
    assert [e for e in inflight(world) if e["kind"] == "commit"] == [first, second]
    assert [e["kind"] for e in enabled_events(world)] == ["agent", "finish"]
    with pytest.raises(ReplayError, match=r"still waits for 2 of c\[0\]'s async reads"):
        apply(world, {"kind": "fire", "entry": first})
    apply(world, finish("c[0]", 0))
    assert commit_entry("c[0]", 1) in inflight(world)
    assert commit_entry("c[0]", 2, after_commits=1) in inflight(world)
    apply(world, finish("c[0]", 0))
    # the first commit is free now; the read issued after it still runs
    assert commit_entry() in inflight(world)
    assert commit_entry("c[0]", 1, after_commits=1) in inflight(world)
    assert fire() in enabled_events(world)
    assert apply(world, fire()) == set()
    assert world.signals[(0, "main", "empty", 0)]["pending"] == 1
    apply(world, finish("c[0]", 0))
    assert inflight(world) == [commit_entry()]
    assert apply(world, ev("c[0]", "advance", 5)) == set()  # own commit in flight: warning
    assert world.warnings == {"unawaited_at_exit"}
    # old-format fire events (no ring/agent/after) still name a free commit
    assert apply(world, {"kind": "fire", "entry": {"kind": "commit", "cta": 0, "stage": 0,
                                                    "n": 1}}) == set()
    assert inflight(world) == []


def test_commit_with_no_reads_in_flight_is_free_at_once():
    spec = make_spec(role("c", ["commit_empty 1"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    apply(world, ev("c[0]", "commit_empty", 0))
    assert inflight(world) == [commit_entry()]


# A consumer that releases its slot right after issuing the async read (no read_wait first):
# the producer may overwrite the slot while the read is still in flight.
ASYNC_P = ["wait_empty", "write", "arrive_full", "advance"]


def async_spec(c_body, **kw):
    return make_spec(role("p", ASYNC_P, epilogue=["drain"]),
                     role("c", c_body, side="consumer", epilogue=["read_wait 0"]),
                     stages=1, items=2, **kw)


def test_release_before_read_wait_overwrites_a_slot_being_read():
    spec = async_spec(["wait_full", "read_async", "arrive_empty", "advance"])
    events = [ev("p[0]", "wait_empty", 0), ev("p[0]", "write", 1),
              ev("p[0]", "arrive_full", 2), ev("c[0]", "wait_full", 0),
              ev("c[0]", "read_async", 1), ev("c[0]", "arrive_empty", 2),
              ev("p[0]", "advance", 3), ev("p[0]", "wait_empty", 0), ev("p[0]", "write", 1)]
    world = initial_state(spec)
    kinds = run(world, events)
    assert kinds[:-1] == [set()] * 8 and kinds[-1] == {"overwrite_before_drain"}
    outcome = replay(spec, make_trace(spec, events))
    assert outcome.last_step_kinds == {"overwrite_before_drain"}
    # had the read finished first, the same write would be fine
    world = initial_state(spec)
    kinds = run(world, events[:-1] + [finish("c[0]", 0), events[-1]])
    assert kinds == [set()] * 10
    assert explore(spec)[0] == {"overwrite_before_drain"}


@pytest.mark.parametrize("body", [
    ["wait_full", "read_async", "read_wait 0", "arrive_empty", "advance"],
    ["wait_full", "read_async", "commit_empty", "advance"],
])
def test_waiting_for_the_read_before_the_release_is_clean(body):
    kinds, _, finals = explore(async_spec(body))
    assert kinds == set()
    assert all(all(a.done for a in w.agents) and not w.inflight for w in finals)


def test_async_read_trace_replays_with_finish_events():
    spec = async_spec(["wait_full", "read_async", "commit_empty", "advance"])
    world = initial_state(spec)
    events, _ = run_first_enabled(world)
    assert any(e["kind"] == "finish" for e in events)
    assert any(e["kind"] == "fire" for e in events)
    trace = make_trace(spec, events)
    assert replay(spec, trace).kinds == set()
    i = next(i for i, e in enumerate(events) if e["kind"] == "finish")
    bad = copy.deepcopy(trace)
    bad["steps"][i - 1]["state"]["inflight"][-1]["seq"] = 1
    with pytest.raises(ReplayError, match="inflight"):
        replay(spec, bad)


# ------------------------------------------------------------------------------------------
# [expressiveness] named barrier variants
# ------------------------------------------------------------------------------------------

def test_sync_arrive_does_not_wait_and_sync_wait_waits_for_its_generation():
    spec = make_spec(role("p", ["sync_arrive bar", "sync_wait bar"]), role("q", ["sync bar"]),
                     stages=1, items=1, barriers=[Barrier("bar", ("p", "q"))])
    world = initial_state(spec)
    apply(world, ev("p[0]", "sync_arrive", 0))
    assert world.barriers[(0, "bar")] == {"arrivals": 1, "generation": 0}
    assert enabled_events(world) == [ev("q[0]", "sync", 0)]    # p waits for generation 0
    with pytest.raises(ReplayError, match=r"sync_wait is blocked: cta0\.bar generation 0"):
        apply(world, ev("p[0]", "sync_wait", 1))
    view = state_view(world)
    assert view["barriers"] == {"cta0.bar": {"arrivals": 1, "generation": 0}}
    assert view["agents"]["p[0]"]["arrived"] == {"bar": 0}
    apply(world, ev("q[0]", "sync", 0))                 # completes generation 0
    assert world.agent("q[0]").done
    assert world.barriers[(0, "bar")] == {"arrivals": 0, "generation": 1}
    assert enabled_events(world) == [ev("p[0]", "sync_wait", 1)]
    apply(world, ev("p[0]", "sync_wait", 1))
    assert all(a.done for a in world.agents)


def test_sync_wait_without_an_arrival_waits_for_generation_zero():
    spec = make_spec(role("p", ["sync_wait bar"]), role("q", ["sync_arrive bar"], count=2),
                     stages=1, items=1, barriers=[Barrier("bar", ("q",))])
    world = initial_state(spec)
    assert enabled_events(world) == [ev("q[0]", "sync_arrive", 0),
                                     ev("q[1]", "sync_arrive", 0)]
    apply(world, ev("q[0]", "sync_arrive", 0))
    assert ev("p[0]", "sync_wait", 0) not in enabled_events(world)
    apply(world, ev("q[1]", "sync_arrive", 0))
    assert ev("p[0]", "sync_wait", 0) in enabled_events(world)


def test_arrivals_beyond_the_count_go_to_the_next_generation():
    spec = make_spec(role("w", ["sync_arrive bar", "sync_wait bar"], count=3),
                     stages=1, items=1, barriers=[Barrier("bar", ("w",), count=2)])
    world = initial_state(spec)
    run(world, [ev("w[0]", "sync_arrive", 0), ev("w[1]", "sync_arrive", 0),
                ev("w[2]", "sync_arrive", 0)])
    assert world.barriers[(0, "bar")] == {"arrivals": 1, "generation": 1}
    assert [a.arrived["bar"] for a in world.agents] == [0, 0, 1]
    assert enabled_events(world) == [ev("w[0]", "sync_wait", 1), ev("w[1]", "sync_wait", 1)]
    run(world, [ev("w[0]", "sync_wait", 1), ev("w[1]", "sync_wait", 1)])
    assert state_violations(world) == {"deadlock"}      # w[2]'s generation never completes


def test_sync_arrive_where_sync_was_needed_mixes_generations():
    # p signals twice with bar.arrive; q meant to meet p at each item with bar.sync. p's two
    # arrivals complete generation 0 without q, and q's sync then waits in generation 1.
    spec = make_spec(role("p", ["sync_arrive bar"]), role("q", ["sync bar"]),
                     stages=1, items=2, barriers=[Barrier("bar", ("p", "q"))])
    kinds, _, finals = explore(spec)
    assert kinds == {"deadlock"}
    world = initial_state(spec)
    run(world, [ev("p[0]", "sync_arrive", 0), ev("p[0]", "sync_arrive", 0),
                ev("q[0]", "sync", 0)])
    assert world.barriers[(0, "bar")] == {"arrivals": 1, "generation": 1}
    assert world.agent("q[0]").at_sync and state_violations(world) == {"deadlock"}
    # with sync on both sides each generation is one item of each
    spec = make_spec(role("p", ["sync bar"]), role("q", ["sync bar"]),
                     stages=1, items=2, barriers=[Barrier("bar", ("p", "q"))])
    kinds, _, finals = explore(spec)
    assert kinds == set() and all(all(a.done for a in w.agents) for w in finals)


def test_sync_arrive_completing_a_generation_releases_blocked_syncs():
    spec = make_spec(role("q", ["sync bar", "advance"], count=2), role("p", ["sync_arrive bar"]),
                     stages=1, items=1, barriers=[Barrier("bar", ("p", "q"))])
    world = initial_state(spec)
    run(world, [ev("q[0]", "sync", 0), ev("q[1]", "sync", 0)])
    assert [a.at_sync for a in world.agents] == [True, True, False]
    apply(world, ev("p[0]", "sync_arrive", 0))
    assert [a.at_sync for a in world.agents] == [False, False, False]
    assert world.agent("p[0]").arrived == {"bar": 0}
    assert enabled_events(world) == [ev("q[0]", "advance", 1), ev("q[1]", "advance", 1)]


def test_barrier_view_and_old_int_views():
    spec = make_spec(role("w", ["sync bar"], count=2), stages=1, items=1,
                     barriers=[Barrier("bar", ("w",))])
    events = [ev("w[0]", "sync", 0)]
    trace = make_trace(spec, events)
    assert trace["steps"][0]["state"]["barriers"] == {
        "cta0.bar": {"arrivals": 1, "generation": 0}}
    assert "arrived" not in trace["initial"]["agents"]["w[0]"]   # no sync_arrive/wait used
    trace["steps"][0]["state"]["barriers"] = {"cta0.bar": 1}   # the older int form
    replay(spec, trace)
    trace["steps"][0]["state"]["barriers"] = {"cta0.bar": {"arrivals": 1, "generation": 1}}
    with pytest.raises(ReplayError, match="barriers cta0.bar"):
        replay(spec, trace)


# ------------------------------------------------------------------------------------------
# Slot parts (docs/rules.md "Slot parts")
# ------------------------------------------------------------------------------------------

TWO_COPIES = ["wait_empty", "expect_tx {b}", "copy 16", "copy 16", "advance"]


def test_two_copies_of_a_stage_are_two_parts_and_half_a_slot_is_read_before_fill():
    """Too few bytes expected: full completes when the first copy lands, and a read before the
    second copy is issued finds its part empty (bug_expect_tx_too_few_bytes, as on the H200)."""
    spec = make_spec(role("producer", [t.format(b=16) for t in TWO_COPIES]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    assert state_view(world)["slots"] == {"cta0.slot[0]": [-1, -1]}
    run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "expect_tx", 1),
                ev("producer[0]", "copy", 2)])
    assert inflight(world) == [copy_entry(part=0)]
    assert apply(world, land(part=0)) == set()
    assert world.signals[(0, "main", "full", 0)]["phase_no"] == 1
    assert state_view(world)["slots"] == {"cta0.slot[0]": [0, -1]}
    assert run(world, [ev("consumer[0]", "wait_full", 0), ev("consumer[0]", "read", 1)]) \
        == [set(), {"read_before_fill"}]


def test_two_copies_both_landed_fill_the_slot():
    spec = make_spec(role("producer", [t.format(b=32) for t in TWO_COPIES]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "expect_tx", 1),
                        ev("producer[0]", "copy", 2), ev("producer[0]", "copy", 3),
                        land(part=1), land(part=0),
                        ev("consumer[0]", "wait_full", 0), ev("consumer[0]", "read", 1)])
    assert kinds == [set()] * 8
    assert world.slots[(0, "main", 0)] == (0, 0)


@pytest.mark.parametrize("between, parts", [
    ([], 2), (["advance"], 1), (["reset"], 1), (["drain"], 1),
    (["arrive_full"], 2),            # only a move of the stage separates two slots' fills
])
def test_fills_between_two_moves_of_the_stage_are_parts_of_one_slot(between, parts):
    spec = make_spec(role("producer", ["write"] + between + ["write"]), stages=1, items=1)
    slots = state_view(initial_state(spec))["slots"]
    assert slots == {"cta0.slot[0]": -1 if parts == 1 else [-1] * parts}


def test_an_unrolled_two_stage_body_has_one_part():
    """(x_cutlass_pingpong's shape: a write per stage, an advance between.)"""
    spec = make_spec(role("producer", PRODUCER_WRITE * 2),
                     role("consumer", CONSUMER * 2, side="consumer"), stages=2, items=1)
    world = initial_state(spec)
    events, kinds = run_first_enabled(world)
    assert len(events) == 16 and all(k == set() for k in kinds)
    assert state_view(world)["slots"] == {"cta0.slot[0]": 0, "cta0.slot[1]": 0}


def parts_spec():
    """Two CTAs: role P writes twice per slot, role Q multicasts once, role C (consumer side)
    writes. Parts in model order (role by role, CTA by CTA): cta0.P 0-1, cta1.P 2-3 (each in
    its own CTA only), cta0.Q 4, cta1.Q 5 (in both CTAs)."""
    return make_spec(role("P", ["write", "write"]), role("Q", ["copy 16 to=all"]),
                     role("C", ["write"], side="consumer"), stages=1, items=1, cluster_size=2)


def test_parts_are_numbered_role_by_role_cta_by_cta_and_exist_where_filled():
    spec = parts_spec()
    world = initial_state(spec)
    assert state_view(world)["slots"] == {"cta0.slot[0]": [-1] * 6, "cta1.slot[0]": [-1] * 6}
    apply(world, ev("cta1.P[0]", "write", 0))                    # its first fill: part 2
    assert world.slots[(1, "main", 0)] == (-1, -1, 0, -1, -1, -1)
    apply(world, ev("cta1.P[0]", "write", 1))                    # its second: part 3
    assert world.slots[(1, "main", 0)] == (-1, -1, 0, 0, -1, -1)
    apply(world, ev("cta1.Q[0]", "copy", 0))
    assert sorted(json.dumps(e, sort_keys=True) for e in inflight(world)) == sorted(
        json.dumps(copy_entry(cta=c, part=5), sort_keys=True) for c in (0, 1))
    apply(world, land(cta=0, part=5))
    assert world.slots[(0, "main", 0)] == (-1, -1, -1, -1, -1, 0)
    # a consumer-side write stores into every part its CTA's slots have (not cta1.P's 2, 3)
    assert apply(world, ev("cta0.C[0]", "write", 0)) == set()
    assert state_view(world)["slots"]["cta0.slot[0]"] == [0, 0, -1, -1, 0, 0]


def test_a_read_checks_only_the_parts_of_its_own_cta():
    """cta0's slots lack cta1.P's parts 2 and 3: a read there checks 0, 1, 4 and 5."""
    spec = make_spec(role("P", ["write", "write"]), role("Q", ["copy 16 to=all"]),
                     role("R", ["read"], side="consumer", ctas=(0,)), stages=1, items=1,
                     cluster_size=2)
    world = initial_state(spec)
    run(world, [ev("cta0.P[0]", "write", 0), ev("cta0.P[0]", "write", 1),
                ev("cta0.Q[0]", "copy", 0), land(cta=0, part=4), land(cta=1, part=4)])
    assert apply(world, ev("cta0.R[0]", "read", 0)) == {"read_before_fill"}  # part 5 empty
    world = initial_state(spec)
    run(world, [ev("cta0.P[0]", "write", 0), ev("cta0.P[0]", "write", 1),
                ev("cta0.Q[0]", "copy", 0), ev("cta1.Q[0]", "copy", 0),
                land(cta=0, part=4), land(cta=0, part=5)])
    assert world.slots[(0, "main", 0)] == (0, 0, -1, -1, 0, 0)
    assert apply(world, ev("cta0.R[0]", "read", 0)) == set()  # copies to cta1 don't count


def test_a_ring_no_producer_side_role_fills_has_one_part():
    spec = make_spec(role("C", ["write", "write", "read"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    assert state_view(world)["slots"] == {"cta0.slot[0]": -1}
    assert run(world, [ev("C[0]", "write", 0), ev("C[0]", "write", 1), ev("C[0]", "read", 2)]) \
        == [set(), set(), set()]
    assert state_view(world)["slots"] == {"cta0.slot[0]": 0}


def test_a_read_checks_the_parts_the_program_fills_for_its_item():
    """Part 1 is filled only in even items (every=2 at=0): a read of item 1 does not look at it,
    a read of item 0 does."""
    spec = make_spec(role("producer", ["wait_empty", "write", "write every=2 at=0",
                                       "arrive_full", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=2)
    world = initial_state(spec)
    events, kinds = run_first_enabled(world)
    assert all(k == set() for k in kinds) and all(a.done for a in world.agents)
    assert world.slots[(0, "main", 0)] == (1, 0)
    late = make_spec(role("producer", ["wait_empty", "write", "arrive_full",
                                       "write every=2 at=0", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=2)
    world = initial_state(late)
    run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "write", 1),
                ev("producer[0]", "arrive_full", 2), ev("consumer[0]", "wait_full", 0)])
    assert apply(world, ev("consumer[0]", "read", 1)) == {"read_before_fill"}


def test_a_part_whose_agent_does_not_run_the_item_is_not_checked():
    """A (2 items) fills part 0, B (1 item) part 1: item 1 is read from part 0 alone; when no
    part is filled for the item at all, every part is checked."""
    spec = make_spec(role("A", ["write", "advance"], items=2), role("B", ["write"], items=1),
                     role("C", ["read", "advance"], side="consumer", items=3), stages=1)
    world = initial_state(spec)
    kinds = run(world, [ev("A[0]", "write", 0), ev("B[0]", "write", 0), ev("C[0]", "read", 0),
                        ev("C[0]", "advance", 1), ev("A[0]", "advance", 1),
                        ev("A[0]", "write", 0)])
    assert kinds == [set()] * 6
    assert world.slots[(0, "main", 0)] == (1, 0)
    assert run(world, [ev("C[0]", "read", 0), ev("C[0]", "advance", 1)]) == [set(), set()]
    world.slots[(0, "main", 0)] = (2, 2)      # as if both parts held item 2, which no one fills
    assert apply(world, ev("C[0]", "read", 0)) == set()
    world = initial_state(spec)
    world.agents[-1].pos = 4                  # C at item 2's read, no part filled for item 2
    world.slots[(0, "main", 0)] = (2, 1)
    assert apply(world, ev("C[0]", "read", 0)) == {"read_before_fill"}


def test_prologue_and_body_fills_share_the_parts():
    """The prologue fills parts 0 and 1, the body part 0 only: the body's fill stores over the
    prologue's tile in part 0, and a body read checks part 0 alone."""
    spec = make_spec(role("P", ["write"], prologue=["write", "write"]),
                     role("C", ["read"], side="consumer", prologue=["read"]),
                     stages=1, items=1)
    top = 1                                   # the prologue's tag: the largest item count
    world = initial_state(spec)
    kinds = run(world, [ev("P[0]", "write", 0), ev("P[0]", "write", 1), ev("C[0]", "read", 0),
                        ev("P[0]", "write", 2), ev("C[0]", "read", 1)])
    assert kinds == [set()] * 5
    assert world.slots[(0, "main", 0)] == (0, top)
    world = initial_state(spec)
    kinds = run(world, [ev("P[0]", "write", 0), ev("P[0]", "write", 1), ev("P[0]", "write", 2),
                        ev("C[0]", "read", 0)])
    assert kinds == [set(), set(), {"overwrite_before_drain"}, {"read_before_fill"}]


def test_an_overwrite_is_judged_in_the_part_stored_over():
    """Part 0 holds item 2, which C still reads; B's store of item 1 into part 1 (over item 0,
    read) loses nothing. A's store of item 2 over the unread item 1 in part 0 does."""
    spec = make_spec(role("A", ["write", "advance"], items=3),
                     role("B", ["write", "advance"], items=2),
                     role("C", ["read", "advance"], side="consumer", items=3), stages=1)
    world = initial_state(spec)
    kinds = run(world, [ev("A[0]", "write", 0), ev("B[0]", "write", 0), ev("C[0]", "read", 0),
                        ev("C[0]", "advance", 1), ev("A[0]", "advance", 1),
                        ev("A[0]", "write", 0), ev("A[0]", "advance", 1),
                        ev("A[0]", "write", 0), ev("B[0]", "advance", 1),
                        ev("B[0]", "write", 0)])
    assert kinds == [set()] * 7 + [{"overwrite_before_drain"}, set(), set()]
    assert world.slots[(0, "main", 0)] == (2, 1)


def test_a_multi_part_trace_replays_and_a_wrong_part_is_caught():
    spec = make_spec(role("producer", [t.format(b=16) for t in TWO_COPIES]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    events = [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "expect_tx", 1),
              ev("producer[0]", "copy", 2), land(part=0), ev("consumer[0]", "wait_full", 0),
              ev("consumer[0]", "read", 1)]
    trace = make_trace(spec, events)
    assert trace["steps"][3]["state"]["slots"] == {"cta0.slot[0]": [0, -1]}
    assert replay(spec, trace).last_step_kinds == {"read_before_fill"}
    bad = copy.deepcopy(trace)
    bad["steps"][3]["state"]["slots"]["cta0.slot[0]"] = [0, 0]  # the landing filled both
    with pytest.raises(ReplayError, match=r"step 4 .*slots cta0.slot\[0\]"):
        replay(spec, bad)
    bad = copy.deepcopy(trace)
    bad["steps"][2]["state"]["inflight"][0]["part"] = -1
    with pytest.raises(ReplayError, match="step 3 .*inflight"):
        replay(spec, bad)
    bad = copy.deepcopy(trace)
    bad["initial"]["slots"]["cta0.slot[0]"] = -1                  # a one-part view
    with pytest.raises(ReplayError, match="initial state: slots"):
        replay(spec, bad)


# ------------------------------------------------------------------------------------------
# The phase_alias window after `reset` (docs/rules.md)
# ------------------------------------------------------------------------------------------

def set_phase_no(world, n, kind="full", stage=0):
    world.signals[(0, "main", kind, stage)]["phase_no"] = n


def aliased_at(world, phase_nos, kind="full", stage=0) -> list:
    """The phase numbers, of `phase_nos`, at which the state shows phase_alias (the signal's
    phase_no is changed for the question, then put back)."""
    sig = world.signals[(0, "main", kind, stage)]
    keep, out = sig["phase_no"], []
    for n in phase_nos:
        sig["phase_no"] = n
        if "phase_alias" in state_violations(world):
            out.append(n)
    sig["phase_no"] = keep
    return out


def test_a_reset_every_two_laps_keeps_parity_and_stays_in_the_window():
    """x_persistent_reset_ok in small: one stage, both sides reset every 2 items. After the
    reset the consumer at phase 0 waits for full phase 2, which its last pass (phase 1 at
    lap 1) says it means; by its phase alone it would mean phase 0 and alias."""
    spec = make_spec(role("producer", PRODUCER_WRITE + ["reset every=2 at=1"]),
                     role("consumer", CONSUMER + ["reset every=2 at=1"], side="consumer"),
                     stages=1, items=4)
    kinds, states, finals = explore(spec)
    assert kinds == set()
    assert all(a.done for w in finals for a in w.agents)


def test_a_reset_every_lap_flips_parity_and_is_still_a_violation():
    """x_persistent_reset_bad in small: a reset every `stages` items."""
    spec = make_spec(role("producer", PRODUCER_WRITE + ["reset"]),
                     role("consumer", CONSUMER + ["reset"], side="consumer"),
                     stages=1, items=2)
    kinds, _, _ = explore(spec)
    assert "read_before_fill" in kinds


def test_intended_phase_after_a_reset_is_the_next_of_the_waiters_parity():
    """Passes at phases 0 and 1 (k' = 1, ph' = 1); the reset takes the phase back to 0: the
    smallest k >= 1 of parity 0 is 2, the window {2, 3}. A pass there at phase 0 records
    (2, 0): at phase 1 the window is {3, 4}."""
    spec = make_spec(role("c", ["wait_full", "advance", "reset every=2 at=1"], side="consumer"),
                     stages=1, items=4)
    world = initial_state(spec)
    assert aliased_at(world, range(-1, 4)) == [-1, 2, 3]          # k = 0: {0, 1}
    set_phase_no(world, 1)
    run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1)])
    set_phase_no(world, 2)
    run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1), ev("c[0]", "reset", 2)])
    assert world.agent("c[0]").phase == 0
    assert aliased_at(world, range(6)) == [0, 1, 4, 5]            # k = 2: {2, 3}
    set_phase_no(world, 3)
    run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1)])
    assert aliased_at(world, range(6)) == [0, 1, 2, 5]            # k = 3: {3, 4}


def test_intended_phase_after_a_reset_keeps_k_of_the_same_parity():
    """Passes at phases 0, 1, 2 (k' = 2, ph' = 2), then the reset to phase 0: k' itself has
    the parity of 0, so k = 2."""
    spec = make_spec(role("c", ["wait_full", "advance", "reset every=3 at=2"], side="consumer"),
                     stages=1, items=4)
    world = initial_state(spec)
    for n in (1, 2, 3):
        set_phase_no(world, n)
        run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1)])
    apply(world, ev("c[0]", "reset", 2))
    assert aliased_at(world, range(6)) == [0, 1, 4, 5]            # k = 2: {2, 3}


def test_a_ready_try_records_its_pass_a_failed_one_does_not():
    spec = make_spec(role("c", ["try_full", "advance", "reset every=2 at=1"], side="consumer"),
                     stages=1, items=3)
    for second, aliases in ((2, set()), (1, {"phase_alias"})):
        world = initial_state(spec)
        set_phase_no(world, 1)
        assert run(world, [ev("c[0]", "try_full", 0), ev("c[0]", "advance", 1)]) == [set()] * 2
        set_phase_no(world, second)               # 2: ready at phase 1; 1: not ready
        assert apply(world, ev("c[0]", "try_full", 0)) == set()
        assert world.agent("c[0]").ready == (second == 2)
        run(world, [ev("c[0]", "advance", 1), ev("c[0]", "reset", 2)])
        set_phase_no(world, 3)
        # recorded (1, 1): k = 2, 3 in the window; only (0, 0): k = 0, 3 outside it
        assert apply(world, ev("c[0]", "try_full", 0)) == aliases


def test_a_skipped_unless_ready_wait_records_nothing():
    """The prologue's try passes at phase 0; the body's waits are skipped (ready stays true),
    so after the reset the epilogue's wait still follows (0, 0): k = 0."""
    spec = make_spec(role("c", ["wait_full unless=ready", "advance", "reset every=2 at=1"],
                          side="consumer", prologue=["try_full"], epilogue=["wait_full"]),
                     stages=1, items=2)
    world = initial_state(spec)
    set_phase_no(world, 1)
    run(world, [ev("c[0]", "try_full", 0), ev("c[0]", "wait_full", 1),
                ev("c[0]", "advance", 2), ev("c[0]", "wait_full", 1),
                ev("c[0]", "advance", 2), ev("c[0]", "reset", 3)])
    assert world.agent("c[0]").current.pc == 4
    assert aliased_at(world, range(4)) == [2, 3]                  # k = 0: {0, 1}


def test_a_drain_step_records_its_pass():
    """Producer (p0 = 1): drain steps pass at phases 1 and 2 (k = -1, then 0); the reset takes
    it back to phase 1: the smallest k >= 0 of parity 1 is 1, the window {1, 2}."""
    spec = make_spec(role("p", ["reset"], prologue=["drain", "drain"], epilogue=["wait_empty"]),
                     stages=1, items=1)
    world = initial_state(spec)
    apply(world, ev("p[0]", "drain", 0))
    set_phase_no(world, 1, kind="empty")
    run(world, [ev("p[0]", "drain", 1), ev("p[0]", "reset", 2)])
    assert world.agent("p[0]").phase == 1 and world.agent("p[0]").current.op.name == "wait_empty"
    assert aliased_at(world, range(-1, 4), kind="empty") == [-1, 0, 3]


def test_the_record_is_per_stage():
    """Only stage 0's waits passed before the reset: stage 1's wait after it still follows its
    initial record, k = 0; stage 0's follows (1, 1), k = 2."""
    spec = make_spec(role("c", ["wait_full", "advance", "advance", "reset every=2 at=1"],
                          side="consumer", epilogue=["advance", "wait_full"]),
                     stages=2, items=2)
    world = initial_state(spec)
    for n in (1, 2):
        set_phase_no(world, n)
        run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1),
                    ev("c[0]", "advance", 2)])
    run(world, [ev("c[0]", "reset", 3), ev("c[0]", "advance", 4)])
    assert (world.agent("c[0]").stage, world.agent("c[0]").phase) == (1, 0)
    assert aliased_at(world, range(4), stage=1) == [2, 3]         # k = 0: {0, 1}
    # both stages pass before the reset: each keeps its own (k', ph')
    spec = make_spec(role("c", ["wait_full", "advance", "wait_full", "advance",
                                "reset every=2 at=1"], side="consumer"), stages=2, items=3)
    world = initial_state(spec)
    for n in (1, 2):
        set_phase_no(world, n, stage=0)
        set_phase_no(world, n, stage=1)
        run(world, [ev("c[0]", "wait_full", 0), ev("c[0]", "advance", 1),
                    ev("c[0]", "wait_full", 2), ev("c[0]", "advance", 3)])
    apply(world, ev("c[0]", "reset", 4))
    set_phase_no(world, 3, stage=0)
    apply(world, ev("c[0]", "wait_full", 0))          # stage 0 passes again at phase 0: (2, 0)
    apply(world, ev("c[0]", "advance", 1))
    assert aliased_at(world, range(6), stage=1) == [0, 1, 4, 5]   # stage 1: (1, 1), k = 2


# ------------------------------------------------------------------------------------------
# Revised rules (docs/model.md, revised 2026-12-02; /work/notes/rules.md R1-R3)
# ------------------------------------------------------------------------------------------

from tests.replay import _filled_slots  # noqa: E402  (the rule R3's table, read directly)


def fire_at(stage, cta=0, **kw) -> dict:
    return fire(stage=stage, cta=cta, **kw)


# R1: an agent's commits fire in the order it issued them

def test_a_commit_cannot_fire_before_its_agents_earlier_commit():
    spec = make_spec(role("c", ["commit_empty", "advance"], side="consumer"),
                     stages=2, items=2)
    world = initial_state(spec)
    run(world, [ev("c[0]", "commit_empty", 0), ev("c[0]", "advance", 1),
                ev("c[0]", "commit_empty", 0)])
    assert inflight(world) == [commit_entry(stage=0), commit_entry(stage=1, after_commits=1)]
    # both are free of async reads, but only the first may fire
    assert [e for e in enabled_events(world) if e["kind"] == "fire"] == [fire_at(0)]
    with pytest.raises(ReplayError, match=r"issued by c\[0\] after its commit .*in the order"):
        apply(world, fire_at(1, after_commits=1))
    # (an event in the view format before R1, without after_commits, names it too)
    with pytest.raises(ReplayError, match=r"issued by c\[0\] after its commit"):
        apply(world, {"kind": "fire", "entry": {"kind": "commit", "cta": 0, "stage": 1,
                                                 "n": 1}})
    assert inflight(world) == [commit_entry(stage=0),
                               commit_entry(stage=1, after_commits=1)]   # nothing moved
    assert apply(world, fire_at(0)) == set()
    assert fire_at(1) in enabled_events(world)
    assert apply(world, fire_at(1)) == set()
    # in a trace, the out-of-order firing is a disabled step
    events = [ev("c[0]", "commit_empty", 0), ev("c[0]", "advance", 1),
              ev("c[0]", "commit_empty", 0), fire_at(0), fire_at(1)]
    trace = make_trace(spec, events)
    bad = copy.deepcopy(trace)
    bad["steps"][3]["event"], bad["steps"][4]["event"] = fire_at(1, after_commits=1), fire_at(0)
    with pytest.raises(ReplayError, match=r"step 4 .*after its commit"):
        replay(spec, bad)
    assert replay(spec, trace).kinds == set()


def test_the_first_commit_still_waits_for_its_reads_and_the_second_for_the_first():
    """Each commit waited for its own item's async read; both reads finished: the second
    commit, free of reads, still waits for the first."""
    spec = make_spec(role("p", ["write", "advance"]),
                     role("c", ["read_async", "commit_empty", "read_wait 0", "advance"],
                          side="consumer"), stages=2, items=2)
    world = initial_state(spec)
    run(world, [ev("p[0]", "write", 0), ev("p[0]", "advance", 1), ev("p[0]", "write", 0),
                ev("c[0]", "read_async", 0), ev("c[0]", "commit_empty", 1),
                finish("c[0]", 0), ev("c[0]", "read_wait", 2), ev("c[0]", "advance", 3),
                ev("c[0]", "read_async", 0), finish("c[0]", 0, tag=1, stage=1),
                ev("c[0]", "commit_empty", 1)])
    assert inflight(world) == [commit_entry(stage=0), commit_entry(stage=1, after_commits=1)]
    assert [e for e in enabled_events(world) if e["kind"] == "fire"] == [fire_at(0)]


def test_the_entries_of_one_to_all_commit_fire_in_any_order_and_a_later_commit_waits():
    spec = make_spec(role("c", ["commit_empty to=all", "advance"], side="consumer"),
                     stages=2, items=2, cluster_size=2)
    for first, second in ((0, 1), (1, 0)):
        world = initial_state(spec)
        run(world, [ev("cta0.c[0]", "commit_empty", 0), ev("cta0.c[0]", "advance", 1),
                    ev("cta0.c[0]", "commit_empty", 0)])
        fires = lambda: sorted((e["entry"]["cta"], e["entry"]["stage"])   # noqa: E731
                               for e in enabled_events(world) if e["kind"] == "fire")
        assert fires() == [(0, 0), (1, 0)]
        apply(world, fire_at(0, cta=first, agent="cta0.c[0]"))
        assert fires() == [(second, 0)]        # stage 1's entries wait for both of stage 0's
        with pytest.raises(ReplayError, match="in the order"):
            apply(world, fire_at(1, cta=first, agent="cta0.c[0]", after_commits=1))
        apply(world, fire_at(0, cta=second, agent="cta0.c[0]"))
        assert fires() == [(0, 1), (1, 1)]


def test_commit_ranks_stay_dense_so_equal_states_have_equal_entries():
    """The replayer's own R1 bookkeeping ("_order", the rank among the agent's commits in
    flight) moves up when the oldest commit has fired in every CTA: the same in-flight commit
    reached by two histories is one entry."""
    spec = make_spec(role("c", ["commit_empty to=all", "advance"], side="consumer"),
                     stages=2, items=3, cluster_size=2)
    world = initial_state(spec)
    run(world, [ev("cta0.c[0]", "commit_empty", 0), ev("cta0.c[0]", "advance", 1),
                ev("cta0.c[0]", "commit_empty", 0)])
    ranks = lambda: sorted((e["cta"], e["stage"], e["_order"]) for e in world.inflight)  # noqa: E731
    assert ranks() == [(0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1)]
    apply(world, fire_at(0, cta=1, agent="cta0.c[0]"))
    assert ranks() == [(0, 0, 0), (0, 1, 1), (1, 1, 1)]      # cta0's entry of it is in flight
    apply(world, fire_at(0, cta=0, agent="cta0.c[0]"))
    assert ranks() == [(0, 1, 0), (1, 1, 0)]
    run(world, [ev("cta0.c[0]", "advance", 1), ev("cta0.c[0]", "commit_empty", 0)])
    assert ranks() == [(0, 0, 1), (0, 1, 0), (1, 0, 1), (1, 1, 0)]
    assert fire_at(0, cta=0, agent="cta0.c[0]", after_commits=2) in [
        {"kind": "fire", "entry": e} for e in inflight(world)]


def test_commits_of_different_agents_do_not_wait_for_each_other():
    spec = make_spec(role("c", ["commit_empty", "advance"], side="consumer", count=2),
                     stages=2, items=2, cac=2)
    world = initial_state(spec)
    run(world, [ev("c[0]", "commit_empty", 0), ev("c[0]", "advance", 1),
                ev("c[1]", "commit_empty", 0), ev("c[1]", "advance", 1),
                ev("c[1]", "commit_empty", 0)])
    assert [e for e in enabled_events(world) if e["kind"] == "fire"] == [
        fire_at(0), fire_at(0, agent="c[1]")]
    apply(world, fire_at(0, agent="c[1]"))
    assert [e for e in enabled_events(world) if e["kind"] == "fire"] == [
        fire_at(0), fire_at(1, agent="c[1]")]
    apply(world, fire_at(1, agent="c[1]"))   # while c[0]'s stage-0 commit is in flight
    assert inflight(world) == [commit_entry(stage=0)]


def test_look_alike_copies_of_two_ctas_are_events_of_their_own():
    """Consumer-side copies (into every part) from cta0 and cta1 into cta0 show the same view:
    the events name them with whether a peer issued them ("_peer"), and which one is still in flight
    when cta0 goes decides warning or violation."""
    spec = make_spec(role("C", ["copy 16 to=all"], side="consumer"),
                     role("W", ["advance"], side="consumer"),
                     stages=1, items=1, cluster_size=2)
    issue = [ev("cta0.C[0]", "copy", 0), ev("cta1.C[0]", "copy", 0)]
    world = initial_state(spec)
    run(world, issue)
    lands = [e["entry"] for e in enabled_events(world) if e["kind"] == "land"]
    assert sorted((e["cta"], e.get("_peer")) for e in lands) == [
        (0, False), (0, True), (1, False), (1, True)]
    for lands_peer, kinds, warnings in ((True, set(), {"unawaited_at_exit"}),
                                        (False, {"inflight_at_exit"}, set())):
        world = initial_state(spec)
        run(world, issue)
        event = next(e for e in enabled_events(world)
                     if e["kind"] == "land" and e["entry"]["cta"] == 0
                     and e["entry"]["_peer"] == lands_peer)
        assert apply(world, event) == set()
        assert apply(world, ev("cta0.W[0]", "advance", 0)) == kinds
        assert world.warnings == warnings
    # an event in the view format names one of them; the trace of those events replays
    world = initial_state(spec)
    run(world, issue)
    public = {k: v for k, v in lands[0].items() if not k.startswith("_")}
    assert apply(world, {"kind": "land", "entry": public}) == set()
    assert len(world.inflight) == 3
    events = issue + [next(e for e in enabled_events(initial_state_after(spec, issue))
                           if e["kind"] == "land" and e["entry"].get("_peer")
                           and e["entry"]["cta"] == 0), ev("cta0.W[0]", "advance", 0)]
    trace = make_trace(spec, events)
    outcome = replay(spec, trace)
    assert outcome.kinds == set() and outcome.warnings == {"unawaited_at_exit"}
    # a trace (as the engine writes it) names the landing copy by its view alone: the replay
    # follows both copies, and ends as the trace says, either way
    public_land = {"kind": "land", "entry": {k: v for k, v in trace["steps"][2]["event"]
                                             ["entry"].items() if not k.startswith("_")}}
    trace["steps"][2]["event"] = public_land
    for claimed, kinds, warnings in (("unawaited_at_exit", set(), {"unawaited_at_exit"}),
                                     ("inflight_at_exit", {"inflight_at_exit"}, set())):
        outcome = replay(spec, {**trace, "kind": claimed})
        assert (outcome.kinds, outcome.warnings) == (kinds, warnings)
    # and a step no run allows still fails, named
    trace["steps"][3]["event"] = ev("cta0.W[0]", "advance", 7)
    with pytest.raises(ReplayError, match=r"^step 4 .*not pc 7"):
        replay(spec, trace)


def initial_state_after(spec, events, **kw):
    world = initial_state(spec, **kw)
    run(world, events)
    return world


# R2: own copies/commits in flight at exit are a warning

def test_exit_with_only_own_commits_in_flight_is_a_warning_and_strict_makes_it_a_violation():
    spec = make_spec(role("c", ["commit_empty", "advance"], side="consumer"),
                     stages=2, items=2)
    events = [ev("c[0]", "commit_empty", 0), ev("c[0]", "advance", 1),
              ev("c[0]", "commit_empty", 0), ev("c[0]", "advance", 1)]
    outcome = replay(spec, make_trace(spec, events))
    assert outcome.kinds == set() and all(k == set() for k in outcome.step_kinds)
    assert outcome.warnings == {"unawaited_at_exit"}
    assert outcome.step_warnings == [set(), set(), set(), {"unawaited_at_exit"}]
    assert outcome.world.gone == {0}
    strict = replay(spec, make_trace(spec, events), strict_exit=True)
    assert strict.kinds == {"inflight_at_exit"} and strict.warnings == set()
    assert replay(spec, {**make_trace(spec, events), "strict_exit": True}).kinds \
        == {"inflight_at_exit"}
    # the commits fire after the exit: nothing more is reported
    world = initial_state(spec)
    kinds = run(world, events + [fire_at(0), fire_at(1)])
    assert kinds == [set()] * 6 and world.warnings == {"unawaited_at_exit"}
    # had they fired before the exit, no warning
    world = initial_state(spec)
    run(world, events[:3] + [fire_at(0), fire_at(1), events[3]])
    assert world.warnings == set()


def test_exit_warning_found_by_exhaustive_search():
    spec = make_spec(role("p", ["expect_tx 16", "copy 16", "advance"]), stages=1, items=1)
    warnings = set()
    assert explore(spec, warnings=warnings)[0] == set()
    assert warnings == {"unawaited_at_exit"}
    assert explore(spec, strict_exit=True)[0] == {"inflight_at_exit"}


def test_a_peers_copy_into_a_gone_cta_stays_inflight_at_exit():
    """cta1's P copies into cta0 (to=peer); cta0's only agent W finishes before it lands."""
    spec = make_spec(role("P", ["copy 16 to=peer"], ctas=(1,)),
                     role("W", ["advance"], side="consumer", ctas=(0,)),
                     stages=1, items=1, cluster_size=2)
    world = initial_state(spec)
    assert apply(world, ev("cta1.P[0]", "copy", 0)) == set()     # cta1 gone: nothing of its own
    assert world.gone == {1} and world.warnings == set()
    assert apply(world, ev("cta0.W[0]", "advance", 0)) == {"inflight_at_exit"}
    assert world.gone == {0, 1} and world.warnings == set()
    assert apply(world, land(cta=0, part=0)) == set()            # flagged at the exit step
    # strict or not, the same
    world = initial_state(spec, strict_exit=True)
    assert run(world, [ev("cta1.P[0]", "copy", 0), ev("cta0.W[0]", "advance", 0)]) \
        == [set(), {"inflight_at_exit"}]
    # the other order: the copy is issued at a CTA already gone
    world = initial_state(spec)
    assert run(world, [ev("cta0.W[0]", "advance", 0), ev("cta1.P[0]", "copy", 0)]) \
        == [set(), {"inflight_at_exit"}]
    # the copy landed first: clean
    world = initial_state(spec)
    assert run(world, [ev("cta1.P[0]", "copy", 0), land(cta=0, part=0),
                       ev("cta0.W[0]", "advance", 0)]) == [set()] * 3
    assert world.warnings == set()


def test_a_peers_commit_in_flight_at_exit_is_inflight_at_exit():
    spec = make_spec(role("C", ["commit_empty to=peer"], side="consumer", ctas=(1,)),
                     role("W", ["advance"], side="consumer", ctas=(0,)),
                     stages=1, items=1, cluster_size=2)
    world = initial_state(spec)
    assert run(world, [ev("cta1.C[0]", "commit_empty", 0), ev("cta0.W[0]", "advance", 0)]) \
        == [set(), {"inflight_at_exit"}]
    assert apply(world, fire_at(0, agent="cta1.C[0]")) == set()


def test_own_and_peer_entries_in_flight_at_exit_is_the_violation_not_the_warning():
    """Each CTA's P copies to=all; cta0 exits with its own copy and cta1's in flight."""
    spec = make_spec(role("P", ["copy 16 to=all"]),
                     role("W", ["advance"], side="consumer", ctas=(1,)),
                     stages=1, items=1, cluster_size=2)
    world = initial_state(spec)
    assert apply(world, ev("cta1.P[0]", "copy", 0)) == set()
    assert apply(world, ev("cta0.P[0]", "copy", 0)) == {"inflight_at_exit"}  # cta0 gone
    assert world.warnings == set()
    # only its own copy in flight (cta1's landed in cta0 first): the warning
    world = initial_state(spec)
    run(world, [ev("cta1.P[0]", "copy", 0), land(cta=0, part=1)])
    assert apply(world, ev("cta0.P[0]", "copy", 0)) == set()
    assert world.warnings == {"unawaited_at_exit"}
    # cta0's copy into cta1 is a peer's there: cta1's exit with it in flight is a violation
    run(world, [land(cta=1, part=1)])
    assert apply(world, ev("cta1.W[0]", "advance", 0)) == {"inflight_at_exit"}


def test_an_async_read_in_flight_at_exit_is_a_violation_even_when_not_strict():
    spec = make_spec(role("p", ["write"]), role("c", ["read_async"], side="consumer"),
                     stages=1, items=1)
    world = initial_state(spec)
    assert run(world, [ev("p[0]", "write", 0), ev("c[0]", "read_async", 0)]) \
        == [set(), {"inflight_at_exit"}]
    assert world.warnings == set()


# R3: slot parts are per slot

PER_SLOT_P = ["write", "arrive_full"]
PER_SLOT_C = ["wait_full", "read", "advance", "wait_full", "read"]


def per_slot_spec(b_stage=1, b_body=PER_SLOT_P):
    return make_spec(role("A", PER_SLOT_P), role("B", b_body, initial_stage=b_stage),
                     role("C", PER_SLOT_C, side="consumer"), stages=2, items=1)


def test_two_producers_filling_different_slots_for_one_item_read_fine():
    """The notes' example: A fills slot 0, B (initial_stage 1) slot 1, both for item 0; each
    slot has both parts, but a read of item 0 in slot s checks only the part filled there."""
    spec = per_slot_spec()
    world = initial_state(spec)
    assert state_view(world)["slots"] == {"cta0.slot[0]": [-1, -1], "cta0.slot[1]": [-1, -1]}
    kinds = run(world, [ev("A[0]", "write", 0), ev("A[0]", "arrive_full", 1),
                        ev("C[0]", "wait_full", 0), ev("C[0]", "read", 1)])
    assert kinds == [set()] * 4 and world.slots[(0, "main", 0)] == (0, -1)
    kinds = run(world, [ev("C[0]", "advance", 2), ev("B[0]", "write", 0),
                        ev("B[0]", "arrive_full", 1), ev("C[0]", "wait_full", 3),
                        ev("C[0]", "read", 4)])
    assert kinds == [set()] * 5 and world.slots[(0, "main", 1)] == (-1, 0)
    assert explore(spec)[0] == set()
    assert _filled_slots(spec) == {("main", 0, 0, 0), ("main", 1, 1, 0)}


def test_the_per_slot_rule_still_finds_a_missing_fill():
    # both fill slot 0 for item 0: a read after A's write alone misses B's part
    spec = per_slot_spec(b_stage=0)
    world = initial_state(spec)
    assert run(world, [ev("A[0]", "write", 0), ev("A[0]", "arrive_full", 1),
                       ev("C[0]", "wait_full", 0)]) == [set()] * 3
    assert apply(world, ev("C[0]", "read", 1)) == {"read_before_fill"}
    # B arrives before it writes: slot 1's read finds its part empty
    spec = per_slot_spec(b_body=["arrive_full", "write"])
    assert explore(spec)[0] == {"read_before_fill"}
    world = initial_state(spec)
    run(world, [ev("A[0]", "write", 0), ev("A[0]", "arrive_full", 1),
                ev("C[0]", "wait_full", 0), ev("C[0]", "read", 1), ev("C[0]", "advance", 2),
                ev("B[0]", "arrive_full", 0), ev("C[0]", "wait_full", 3)])
    world.slots[(0, "main", 1)] = (0, -1)      # A's part of slot 1 holding the item is no help
    assert apply(world, ev("C[0]", "read", 4)) == {"read_before_fill"}


def test_a_slot_no_fill_fills_for_the_item_checks_every_part():
    """Stages 3: nothing fills slot 2, so a read of item 0 there checks both parts (not none)."""
    spec = make_spec(role("A", PER_SLOT_P), role("B", PER_SLOT_P, initial_stage=1),
                     role("C", ["advance", "advance", "read"], side="consumer"),
                     stages=3, items=1)
    world = initial_state(spec)
    run(world, [ev("C[0]", "advance", 0), ev("C[0]", "advance", 1)])
    world.slots[(0, "main", 2)] = (0, -1)
    assert apply(world, ev("C[0]", "read", 2)) == {"read_before_fill"}
    world = initial_state(spec)
    run(world, [ev("C[0]", "advance", 0), ev("C[0]", "advance", 1)])
    world.slots[(0, "main", 2)] = (0, 0)
    assert apply(world, ev("C[0]", "read", 2)) == set()


@pytest.mark.parametrize("body, stages, items, expected", [
    # write, advance: item i in slot i mod stages
    (["write", "advance"], 2, 3, {(0, 0, 0), (0, 1, 1), (0, 0, 2)}),
    # a drain step moves the stage too; every=2 at=1 leaves item 0 out
    (["write every=2 at=1", "drain"], 2, 2, {(0, 0, 1)}),
    # reset takes it back to the initial stage each item
    (["write", "advance", "write", "reset"], 3, 2,
     {(0, 0, 0), (0, 1, 0), (0, 0, 1), (0, 1, 1)}),
])
def test_each_fill_fills_the_slot_its_agents_stage_is_at(body, stages, items, expected):
    spec = make_spec(role("P", body), stages=stages, items=items)
    assert _filled_slots(spec) == {("main", p, s, t) for p, s, t in expected}


def test_filled_slots_follow_initial_stage_prologue_tags_and_the_ring():
    spec = make_spec(role("P", ["write", "advance", "write ring=acc"], initial_stage=1,
                          prologue=["write", "advance"]),
                     stages=2, items=2, rings=[("acc", 2, 1, 1)])
    top = 2                                   # the prologue's tag
    assert _filled_slots(spec) == {("main", 0, 1, top), ("main", 0, 0, 0),
                                   ("main", 0, 1, 1), ("acc", 0, 0, 0), ("acc", 0, 0, 1)}
