"""Tests of the independent replayer (tests/replay.py) on small hand-built specs.

The specs are built from the dataclasses in spec/schema.py directly (not through spec/load.py),
with a tiny op-string parser below that only knows what these tests use.
"""
from __future__ import annotations

import copy
import json
from collections import deque

import pytest

from spec.schema import Barrier, Op, Role, Spec
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
        elif p.startswith("to="):
            kw["to"] = p[3:]
        elif name == "sync":
            kw["barrier"] = p
        else:
            kw["n"] = int(p)
    return Op(name=name, text=text, **kw)


def role(name, body, side="producer", count=1, items=None, initial_phase=None,
         initial_stage=0, prologue=(), epilogue=()):
    if initial_phase is None:
        initial_phase = 1 if side == "producer" else 0
    return dict(name=name, side=side, count=count, items=items, initial_stage=initial_stage,
                initial_phase=initial_phase, prologue=tuple(op(t) for t in prologue),
                body=tuple(op(t) for t in body), epilogue=tuple(op(t) for t in epilogue))


def make_spec(*roles, backend="nvidia", stages=2, pac=1, cac=1, items=2, cluster_size=1,
              barriers=()):
    built = []
    for r in roles:
        r = dict(r)
        if r["items"] is None:
            r["items"] = items
        built.append(Role(**r))
    return Spec(path="<test>", name="test", backend=backend, stages=stages,
                producer_arrive_count=pac, consumer_arrive_count=cac, items=items,
                roles=tuple(built), cluster_size=cluster_size, barriers=tuple(barriers))


PRODUCER_WRITE = ["wait_empty", "write", "arrive_full", "advance"]
CONSUMER = ["wait_full", "read", "arrive_empty", "advance"]


def simple_spec(**kw):
    return make_spec(role("producer", PRODUCER_WRITE),
                     role("consumer", CONSUMER, side="consumer"), **kw)


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
    """A trace JSON (checker/trace.py format) of `events`, state views from the replayer."""
    world = initial_state(spec)
    initial = state_view(world)
    steps = []
    for i, e in enumerate(events, start=1):
        agent = world.agent(e["agent"]) if e["kind"] == "agent" else None
        stage = agent.stage if agent else e["entry"]["stage"]
        phase = agent.phase if agent else None
        apply(world, e)
        steps.append({"index": i, "event": e, "action": json.dumps(e), "actor": "",
                      "stage": stage, "phase": phase, "changes": [],
                      "state": state_view(world)})
    return {"kind": "", "reason": "", "initial": initial, "steps": steps}


def world_key(world) -> str:
    view = state_view(world)
    view["inflight"] = sorted(json.dumps(e, sort_keys=True) for e in view["inflight"])
    view["observed"] = sorted(str(k) for k, s in world.signals.items() if s.get("observed"))
    return json.dumps(view, sort_keys=True)


def explore(spec, limit=200_000) -> tuple[set, int, list]:
    """All reachable states (BFS); returns (kinds seen, states, final worlds)."""
    start = initial_state(spec)
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
    assert world.slots == {(0, 0): 0, (0, 1): 1}
    assert world.signals[(0, "full", 0)]["phase_no"] == 1
    assert world.signals[(0, "empty", 1)]["phase_no"] == 1
    assert world.signals[(0, "full", 1)]["pending"] == 1
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
    ({"kind": "land", "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 4}},
     r"is not in flight"),
    ({"kind": "fire", "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 4}},
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
    world.signals[(0, "empty", 0)]["phase_no"] = 1
    assert enabled_events(world) == [ev("producer[0]", "drain", 0)]


def test_cluster_names_targets_and_remote_arrive():
    spec = make_spec(role("producer", ["arrive_full to=all", "arrive_empty to=peer"],
                          count=2),
                     stages=1, items=1, pac=4, cac=2, cluster_size=2)
    world = initial_state(spec)
    assert [a.name for a in world.agents] == [
        "cta0.producer[0]", "cta0.producer[1]", "cta1.producer[0]", "cta1.producer[1]"]
    apply(world, ev("cta1.producer[1]", "arrive_full", 0))
    assert world.signals[(0, "full", 0)]["pending"] == 3
    assert world.signals[(1, "full", 0)]["pending"] == 3
    apply(world, ev("cta1.producer[1]", "arrive_empty", 1))
    assert world.signals[(0, "empty", 0)]["pending"] == 1   # peer of CTA 1 is CTA 0
    assert world.signals[(1, "empty", 0)]["pending"] == 2


def test_copy_to_all_is_one_transfer_per_cta():
    spec = make_spec(role("producer", ["copy 32 to=all"]), stages=1, items=1,
                     cluster_size=2)
    world = initial_state(spec)
    apply(world, ev("cta0.producer[0]", "copy", 0))
    assert sorted(json.dumps(e, sort_keys=True) for e in world.inflight) == sorted(
        json.dumps({"kind": "copy", "cta": c, "stage": 0, "tag": 0, "bytes": 32},
                   sort_keys=True) for c in (0, 1))
    apply(world, {"kind": "land",
                  "entry": {"kind": "copy", "cta": 1, "stage": 0, "tag": 0, "bytes": 32}})
    assert world.slots == {(0, 0): -1, (1, 0): 0}
    assert world.signals[(1, "full", 0)]["tx"] == -32
    assert world.signals[(0, "full", 0)]["tx"] == 0


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
    assert world.signals[(0, "full", 0)] | {} == {"phase_no": 0, "pending": 1, "expected": 2,
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
    assert world.signals[(0, "full", 0)]["phase_no"] == 2
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
    assert world.signals[(0, "full", 0)]["phase_no"] == 2


def test_arrive_count_above_pending_traps():
    spec = make_spec(role("producer", ["arrive_full 2"]), stages=1, items=1, pac=1)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "arrive_full", 0)) == {"over_arrival"}
    assert world.trapped


def test_arrive_count_equal_to_pending_is_fine():
    spec = make_spec(role("producer", ["arrive_full 2"]), stages=1, items=1, pac=2)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "arrive_full", 0)) == set()
    assert world.signals[(0, "full", 0)]["phase_no"] == 1
    assert not world.trapped


def test_expect_tx_while_pending_zero_and_tx_outstanding_traps():
    spec = make_spec(role("producer", ["expect_tx 16", "expect_tx 16"]), stages=1, items=1)
    world = initial_state(spec)
    assert apply(world, ev("producer[0]", "expect_tx", 0)) == set()
    assert world.signals[(0, "full", 0)] | {} == {"phase_no": 0, "pending": 0, "expected": 1,
                                                   "tx": 16, "observed": False}
    assert apply(world, ev("producer[0]", "expect_tx", 1)) == {"over_arrival"}


def test_copy_may_land_before_its_expect_tx():
    spec = make_spec(role("producer", ["wait_empty", "copy 100", "expect_tx 100", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    landing = {"kind": "land",
               "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 100}}
    kinds = run(world, [ev("producer[0]", "wait_empty", 0), ev("producer[0]", "copy", 1),
                        landing])
    assert kinds == [set(), set(), set()]
    full = world.signals[(0, "full", 0)]
    assert (full["phase_no"], full["pending"], full["tx"]) == (0, 1, -100)
    assert world.slots[(0, 0)] == 0
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
    first = {"kind": "land",
             "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 1048575}}
    second = {"kind": "land",
              "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 1}}
    assert "tx_range" not in apply(world, first)
    assert "tx_range" in apply(world, second)       # tx = -(2^20)
    assert world.signals[(0, "full", 0)]["tx"] == -BIG
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
    world.signals[(0, "full", 0)]["phase_no"] = 2    # not ready any more: still skipped
    assert ev("consumer[0]", "wait_full", 1) in enabled_events(world)
    assert state_violations(world) == set()          # a skipped wait is not evaluated
    apply(world, ev("consumer[0]", "wait_full", 1))
    assert c.current.op.name == "read" and c.ready is True


def test_try_outside_the_window_is_phase_alias():
    spec = make_spec(role("consumer", ["try_full"], side="consumer"), stages=1, items=1)
    world = initial_state(spec)
    world.signals[(0, "full", 0)]["phase_no"] = 2
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
        world.signals[(0, "empty", 0)]["phase_no"] = phase_no
        alias = "phase_alias" in state_violations(world)
        assert alias == (phase_no not in ok), (p0, ph, phase_no)


# ------------------------------------------------------------------------------------------
# amd backend
# ------------------------------------------------------------------------------------------

def test_amd_thresholds_and_wrap():
    spec = make_spec(role("producer", ["wait_empty"]), backend="amd", stages=1, items=1,
                     pac=2, cac=3)
    world = initial_state(spec)
    empty, full = world.signals[(0, "empty", 0)], world.signals[(0, "full", 0)]
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
        (0, "full", 0): 2, (0, "empty", 0): 2, (0, "full", 1): 1, (0, "empty", 1): 1}
    # without the producer's drain, the CTA can exit while the last commit is in flight
    spec = make_spec(role("producer", PRODUCER_WRITE), consumer, backend="amd", stages=2,
                     items=3)
    assert explore(spec)[0] == {"inflight_at_exit"}


def test_amd_arrive_adds_and_commit_fires_later():
    spec = make_spec(role("consumer", ["arrive_full 3", "commit_empty 2"], side="consumer"),
                     backend="amd", stages=1, items=1)
    world = initial_state(spec)
    run(world, [ev("consumer[0]", "arrive_full", 0)])
    assert world.signals[(0, "full", 0)] == {"count": 3}
    kinds = apply(world, ev("consumer[0]", "commit_empty", 1))
    assert kinds == {"inflight_at_exit"}       # its CTA is gone with the commit in flight
    assert world.signals[(0, "empty", 0)] == {"count": 0}
    assert enabled_events(world) == [
        {"kind": "fire", "entry": {"kind": "commit", "cta": 0, "stage": 0, "n": 2}}]
    apply(world, enabled_events(world)[0])
    assert world.signals[(0, "empty", 0)] == {"count": 2}


# ------------------------------------------------------------------------------------------
# named barriers
# ------------------------------------------------------------------------------------------

def test_sync_releases_everybody_in_one_step():
    spec = make_spec(role("w", ["sync bar", "advance"], count=3), stages=2, items=1,
                     barriers=[Barrier("bar", ("w",))])
    world = initial_state(spec)
    apply(world, ev("w[0]", "sync", 0))
    apply(world, ev("w[1]", "sync", 0))
    assert world.barriers[(0, "bar")] == 2
    assert [a.at_sync for a in world.agents] == [True, True, False]
    assert enabled_events(world) == [ev("w[2]", "sync", 0)]
    assert state_view(world)["agents"]["w[0]"]["op"] == "sync"
    assert apply(world, ev("w[2]", "sync", 0)) == set()
    assert world.barriers[(0, "bar")] == 0
    assert [a.at_sync for a in world.agents] == [False, False, False]
    assert enabled_events(world) == [ev(f"w[{i}]", "advance", 1) for i in range(3)]


def test_sync_with_explicit_count_restarts():
    spec = make_spec(role("w", ["sync bar"], count=3), stages=1, items=1,
                     barriers=[Barrier("bar", ("w",), count=2)])
    world = initial_state(spec)
    run(world, [ev("w[0]", "sync", 0), ev("w[1]", "sync", 0)])
    assert world.agent("w[0]").done and world.agent("w[1]").done
    apply(world, ev("w[2]", "sync", 0))
    assert world.barriers[(0, "bar")] == 1 and world.agent("w[2]").at_sync
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
    assert world.slots[(0, 0)] == 0                     # the right tag is already there
    assert apply(world, ev("consumer[0]", "read", 0)) == {"read_before_fill"}


def test_overwrite_when_the_consumer_has_not_read_yet():
    spec = make_spec(role("producer", ["write", "arrive_full", "advance"]),
                     role("consumer", CONSUMER, side="consumer"), stages=1, items=2)
    world = initial_state(spec)
    kinds = run(world, [ev("producer[0]", "write", 0), ev("producer[0]", "arrive_full", 1),
                        ev("producer[0]", "advance", 2), ev("producer[0]", "write", 0)])
    assert kinds == [set(), set(), set(), {"overwrite_before_drain"}]
    assert world.slots[(0, 0)] == 1


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

    def land(tag):
        return {"kind": "land",
                "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": tag, "bytes": 16}}
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
    assert kinds == [set(), set(), {"inflight_at_exit"}]
    assert world.gone == {0}
    landing = {"kind": "land",
               "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 16}}
    assert enabled_events(world) == [landing]
    assert state_violations(world) == set()             # not a deadlock: a copy is in flight
    assert apply(world, landing) == {"inflight_at_exit"}


def test_no_exit_violation_when_the_copy_landed_first():
    spec = make_spec(role("producer", ["expect_tx 16", "copy 16", "advance"]),
                     stages=1, items=1)
    world = initial_state(spec)
    landing = {"kind": "land",
               "entry": {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 16}}
    kinds = run(world, [ev("producer[0]", "expect_tx", 0), ev("producer[0]", "copy", 1),
                        landing, ev("producer[0]", "advance", 2)])
    assert kinds == [set()] * 4
    assert world.signals[(0, "full", 0)]["phase_no"] == 1


def test_remote_arrive_to_a_gone_cta():
    spec = make_spec(role("c", ["arrive_empty to=peer"], side="consumer"),
                     stages=1, items=1, cluster_size=2)
    world = initial_state(spec)
    assert apply(world, ev("cta0.c[0]", "arrive_empty", 0)) == set()
    assert world.signals[(1, "empty", 0)]["phase_no"] == 1      # took effect at once
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
    assert world.signals[(0, "full", 0)]["phase_no"] == 3


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
