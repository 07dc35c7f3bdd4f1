"""An independent, deliberately plain implementation of the pipeproof model (DESIGN.md).

The test-suite uses it to replay every counterexample the checker prints: each step must be
enabled here, the state after each step must agree with the trace's state view, and the
violation kinds this file finds at the end must be the ones the checker claims.

It shares nothing with `checker/` or `backends/` except the trace JSON format
(`checker/trace.py`) and the spec dataclasses (`spec/schema.py`).

API:
    initial_state(spec) -> World
    enabled_events(world) -> list[dict]           (Event-JSON dicts)
    apply(world, event) -> set[str]               (kinds this step commits; raises ReplayError)
    state_violations(world) -> set[str]           (kinds that hold in the state itself)
    state_view(world) -> dict                     (the trace's state-view format)
    replay(spec, trace_json) -> ReplayOutcome

How each agent's program is held: it is unrolled once into a list of `Instr` (every op it will
execute, in order, with its pc and item number), and the agent's position is an index into
that list. Finished = position at the end of the list.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from spec.schema import Op, Spec

TX_LIMIT = (1 << 20) - 1
WRAP = 1 << 32

WAITS = ("wait_full", "wait_empty")
TRIES = ("try_full", "try_empty")


class ReplayError(Exception):
    """A trace step that this model does not allow, or a state that disagrees with it."""


# --------------------------------------------------------------------------------------------
# World
# --------------------------------------------------------------------------------------------

@dataclass
class Instr:
    pc: int          # index of the op in the agent's own flattened program
    item: int        # item number (0 in the prologue, `items` in the epilogue)
    section: str     # "prologue" | "body" | "epilogue"
    op: Op


@dataclass
class Agent:
    name: str
    role: str
    cta: int
    index: int
    initial_stage: int
    initial_phase: int
    program: list    # list[Instr], fully unrolled
    program_length: int  # number of pc values (the pc a finished agent shows)
    items: int
    stages: int
    pos: int = 0
    stage: int = 0
    phase: int = 0
    ready: bool = False
    at_sync: bool = False

    @property
    def done(self) -> bool:
        return self.pos >= len(self.program)

    @property
    def current(self) -> Instr | None:
        return None if self.done else self.program[self.pos]

    @property
    def item(self) -> int:
        """Current item number: 0 in the prologue, `items` in the epilogue and when done."""
        return self.items if self.done else self.current.item


@dataclass
class World:
    spec: Spec
    agents: list                      # list[Agent], ordered cta, role, index
    signals: dict                     # (cta, "full"|"empty", stage) -> dict
    slots: dict                       # (cta, stage) -> tag (-1 = never stored)
    inflight: list                    # list of entry dicts (a multiset)
    barriers: dict                    # (cta, NAME) -> arrivals in the current generation
    gone: set = field(default_factory=set)  # CTAs whose agents have all finished
    trapped: bool = False             # a hardware trap happened (an arrive above pending, or a
    #                                   tx_range fault): the state after it is meaningless

    def agent(self, name: str) -> Agent:
        for a in self.agents:
            if a.name == name:
                return a
        raise ReplayError(f"no agent named {name!r} (agents: "
                          f"{', '.join(a.name for a in self.agents)})")


@dataclass
class ReplayOutcome:
    world: World
    last_step_kinds: set
    end_state_kinds: set
    step_kinds: list = field(default_factory=list)   # kinds committed by each step, in order
    state_kinds: list = field(default_factory=list)  # state_violations of the initial state
    #                                                  and of the state after each step

    @property
    def kinds(self) -> set:
        return set(self.last_step_kinds) | set(self.end_state_kinds)


def agent_name(spec: Spec, cta: int, role: str, index: int) -> str:
    if spec.cluster_size == 1:
        return f"{role}[{index}]"
    return f"cta{cta}.{role}[{index}]"


def _flatten(ops, is_leader: bool, stages: int) -> list:
    """The ops this agent runs, drain expanded into `stages` ops, @leader ops dropped."""
    out = []
    for op in ops:
        if op.leader_only and not is_leader:
            continue
        if op.name == "drain":
            out.extend([op] * stages)
        else:
            out.append(op)
    return out


def _unroll(role, is_leader: bool, stages: int) -> tuple[list, int]:
    prologue = _flatten(role.prologue, is_leader, stages)
    body = _flatten(role.body, is_leader, stages)
    epilogue = _flatten(role.epilogue, is_leader, stages)
    program = []
    for j, op in enumerate(prologue):
        program.append(Instr(j, 0, "prologue", op))
    body_start = len(prologue)
    for item in range(role.items):
        for j, op in enumerate(body):
            program.append(Instr(body_start + j, item, "body", op))
    epilogue_start = body_start + len(body)
    for j, op in enumerate(epilogue):
        program.append(Instr(epilogue_start + j, role.items, "epilogue", op))
    return program, epilogue_start + len(epilogue)


def initial_state(spec: Spec) -> World:
    agents = []
    for cta in range(spec.cluster_size):
        for role in spec.roles:
            for i in range(role.count):
                program, length = _unroll(role, i == 0, spec.stages)
                agents.append(Agent(
                    name=agent_name(spec, cta, role.name, i), role=role.name, cta=cta, index=i,
                    initial_stage=role.initial_stage, initial_phase=role.initial_phase,
                    program=program, program_length=length, items=role.items,
                    stages=spec.stages, stage=role.initial_stage, phase=role.initial_phase))
    signals = {}
    slots = {}
    for cta in range(spec.cluster_size):
        for s in range(spec.stages):
            for kind, n in (("full", spec.producer_arrive_count),
                            ("empty", spec.consumer_arrive_count)):
                if spec.backend == "nvidia":
                    signals[(cta, kind, s)] = {"phase_no": 0, "pending": n, "expected": n,
                                               "tx": 0, "observed": False}
                else:
                    signals[(cta, kind, s)] = {"count": 0}
            slots[(cta, s)] = -1
    barriers = {(cta, b.name): 0 for cta in range(spec.cluster_size) for b in spec.barriers}
    world = World(spec=spec, agents=agents, signals=signals, slots=slots, inflight=[],
                  barriers=barriers)
    for cta in range(spec.cluster_size):
        if _cta_all_done(world, cta):
            world.gone.add(cta)
    return world


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------

def _signal(world: World, cta: int, kind: str, stage: int) -> dict:
    return world.signals[(cta, kind, stage)]


def signal_ready(world: World, cta: int, kind: str, stage: int, phase: int) -> bool:
    """The backend's answer to a wait/try on signal `kind` of `stage` in `cta` at `phase`."""
    spec = world.spec
    sig = _signal(world, cta, kind, stage)
    if spec.backend == "nvidia":
        return sig["phase_no"] % 2 != phase % 2
    if kind == "full":
        return sig["count"] >= ((phase + 1) % WRAP) * spec.producer_arrive_count
    return sig["count"] >= ((phase - 1) % WRAP) * spec.consumer_arrive_count


def _nvidia_update(world: World, sig: dict, add_tx: int = 0, arrive: int = 0) -> set:
    """One atomic mbarrier update: tx += add_tx, then an arrive of `arrive` (if > 0)."""
    kinds = set()
    sig["tx"] += add_tx
    if abs(sig["tx"]) > TX_LIMIT:
        world.trapped = True          # the tx-count left its range: the hardware faults
        kinds.add("tx_range")
    if arrive > 0:
        if arrive > sig["pending"]:
            world.trapped = True
            kinds.add("over_arrival")
            return kinds
        sig["pending"] -= arrive
    if sig["pending"] == 0 and sig["tx"] == 0:
        if sig["phase_no"] >= 1 and not sig["observed"]:
            kinds.add("over_arrival")
        sig["phase_no"] += 1
        sig["pending"] = sig["expected"]
        sig["observed"] = False
    return kinds


def _arrive(world: World, cta: int, kind: str, stage: int, n: int) -> set:
    sig = _signal(world, cta, kind, stage)
    if world.spec.backend == "nvidia":
        return _nvidia_update(world, sig, arrive=n)
    sig["count"] += n
    return set()


def _observe(world: World, cta: int, kind: str, stage: int) -> None:
    """A wait or try on this signal returned ready (nvidia over_arrival bookkeeping)."""
    if world.spec.backend == "nvidia":
        _signal(world, cta, kind, stage)["observed"] = True


# --------------------------------------------------------------------------------------------
# Enabled events
# --------------------------------------------------------------------------------------------

def _wait_kind(op: Op) -> str:
    """Signal a wait/try/drain op looks at."""
    return "empty" if op.name in ("wait_empty", "try_empty", "drain") else "full"


def _is_skipped_wait(agent: Agent, op: Op) -> bool:
    return op.name in WAITS and op.unless_ready and agent.ready


def _is_blocking_wait(agent: Agent, op: Op) -> bool:
    return op.name == "drain" or (op.name in WAITS and not _is_skipped_wait(agent, op))


def _agent_enabled(world: World, agent: Agent) -> bool:
    if agent.done or agent.at_sync:
        return False
    op = agent.current.op
    if _is_blocking_wait(agent, op):
        return signal_ready(world, agent.cta, _wait_kind(op), agent.stage, agent.phase)
    return True


def _entry_key(entry: dict) -> str:
    return json.dumps(entry, sort_keys=True)


def enabled_events(world: World) -> list:
    events = []
    for a in world.agents:
        if _agent_enabled(world, a):
            ins = a.current
            events.append({"kind": "agent", "agent": a.name, "op": ins.op.name, "pc": ins.pc})
    seen = set()
    for entry in world.inflight:
        key = _entry_key(entry)
        if key in seen:
            continue
        seen.add(key)
        kind = "land" if entry["kind"] == "copy" else "fire"
        events.append({"kind": kind, "entry": dict(entry)})
    return events


# --------------------------------------------------------------------------------------------
# Properties used inside steps
# --------------------------------------------------------------------------------------------

def _phase_alias(world: World, agent: Agent, kind: str) -> bool:
    if world.spec.backend != "nvidia":
        return False
    p0 = agent.initial_phase
    k = (agent.phase - p0) - (p0 % 2)
    phase_no = _signal(world, agent.cta, kind, agent.stage)["phase_no"]
    return phase_no not in (k, k + 1)


def _will_read(agent: Agent, tag: int, stage: int) -> bool:
    """Does `agent`, run forward from its position ignoring waits, still read `tag` at `stage`?"""
    st, ph = agent.stage, agent.phase
    for ins in agent.program[agent.pos:]:
        name = ins.op.name
        if name == "read" and ins.item == tag and st == stage:
            return True
        if name in ("advance", "drain"):
            st, ph = _advanced(st, ph, agent.stages)
        elif name == "reset":
            st, ph = agent.initial_stage, agent.initial_phase
    return False


def _advanced(stage: int, phase: int, stages: int) -> tuple[int, int]:
    stage += 1
    if stage == stages:
        stage = 0
        phase += 1
    return stage, phase


def _store(world: World, cta: int, stage: int, tag: int) -> set:
    """Store `tag` in slot (cta, stage); overwrite_before_drain if an unread tag is lost."""
    kinds = set()
    old = world.slots[(cta, stage)]
    if old >= 0 and old != tag:
        for a in world.agents:
            if a.cta == cta and _will_read(a, old, stage):
                kinds.add("overwrite_before_drain")
                break
    world.slots[(cta, stage)] = tag
    return kinds


def _targets(world: World, cta: int, to: str) -> list:
    k = world.spec.cluster_size
    if k == 1 or to == "self":
        return [cta]
    if to == "leader":
        return [0]
    if to == "peer":
        return [(cta + 1) % k]
    if to == "all":
        return list(range(k))
    raise ReplayError(f"unknown target to={to}")


def _aimed(world: World, cta: int) -> set:
    return {"inflight_at_exit"} if cta in world.gone else set()


def _cta_all_done(world: World, cta: int) -> bool:
    return all(a.done for a in world.agents if a.cta == cta)


def _barrier_count(world: World, cta: int, name: str) -> int:
    for b in world.spec.barriers:
        if b.name == name:
            if b.count is not None:
                return b.count
            return sum(r.count for r in world.spec.roles if r.name in b.roles)
    raise ReplayError(f"sync on unknown barrier {name!r}")


# --------------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------------

def _apply_agent_op(world: World, a: Agent) -> set:
    """Execute the agent's current op (already known to be enabled); move it on."""
    spec = world.spec
    ins = a.current
    op = ins.op
    name = op.name
    kinds = set()
    stage = a.stage

    if name in WAITS:
        if not _is_skipped_wait(a, op):
            _observe(world, a.cta, _wait_kind(op), stage)
    elif name in TRIES:
        kind = _wait_kind(op)
        if _phase_alias(world, a, kind):
            kinds.add("phase_alias")
        a.ready = signal_ready(world, a.cta, kind, stage, a.phase)
        if a.ready:
            _observe(world, a.cta, kind, stage)
    elif name in ("arrive_full", "arrive_empty"):
        kind = "full" if name == "arrive_full" else "empty"
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            kinds |= _arrive(world, dst, kind, stage, op.n)
    elif name == "expect_tx":
        if spec.backend != "nvidia":
            raise ReplayError("expect_tx on the amd backend")
        if op.n > TX_LIMIT:
            world.trapped = True      # expect_tx(2^20) faults (reference/mbarrier_cutlass.md)
            kinds.add("tx_range")
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            kinds |= _nvidia_update(world, _signal(world, dst, "full", stage),
                                    add_tx=op.n, arrive=1)
    elif name == "copy":
        if spec.backend != "nvidia":
            raise ReplayError("copy on the amd backend")
        if op.n > TX_LIMIT:
            world.trapped = True      # an operand outside the tx range faults, as expect_tx does
            kinds.add("tx_range")
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            world.inflight.append({"kind": "copy", "cta": dst, "stage": stage,
                                   "tag": ins.item, "bytes": op.n})
    elif name == "commit_empty":
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            world.inflight.append({"kind": "commit", "cta": dst, "stage": stage, "n": op.n})
    elif name == "write":
        kinds |= _store(world, a.cta, stage, ins.item)
    elif name == "read":
        if world.slots[(a.cta, stage)] != ins.item:
            kinds.add("read_before_fill")
        for e in world.inflight:
            if e["kind"] == "copy" and e["cta"] == a.cta and e["stage"] == stage:
                kinds.add("read_before_fill")
    elif name == "advance":
        a.stage, a.phase = _advanced(a.stage, a.phase, spec.stages)
    elif name == "reset":
        a.stage, a.phase = a.initial_stage, a.initial_phase
    elif name == "drain":
        _observe(world, a.cta, "empty", stage)
        a.stage, a.phase = _advanced(a.stage, a.phase, spec.stages)
    elif name == "sync":
        return kinds | _apply_sync(world, a, op.barrier)
    else:
        raise ReplayError(f"unknown op {name!r}")
    a.pos += 1
    return kinds


def _apply_sync(world: World, a: Agent, barrier: str) -> set:
    key = (a.cta, barrier)
    count = _barrier_count(world, a.cta, barrier)
    world.barriers[key] = world.barriers.get(key, 0) + 1
    if world.barriers[key] < count:
        a.at_sync = True              # stays at its sync op, blocked
        return set()
    world.barriers[key] = 0
    for b in world.agents:
        if b.cta == a.cta and b.at_sync and b.current.op.name == "sync" \
                and b.current.op.barrier == barrier:
            b.at_sync = False
            b.pos += 1
    a.pos += 1
    return set()


def _check_agent_event(world: World, event: dict) -> Agent:
    a = world.agent(event.get("agent", ""))
    if a.done:
        raise ReplayError(f"{a.name} is finished; it has no op {event.get('op')!r}")
    ins = a.current
    if event.get("pc") != ins.pc or event.get("op") != ins.op.name:
        raise ReplayError(f"{a.name} is at pc {ins.pc} op {ins.op.name!r}, "
                          f"not pc {event.get('pc')} op {event.get('op')!r}")
    if a.at_sync:
        raise ReplayError(f"{a.name} is blocked at sync {ins.op.barrier!r}")
    if not _agent_enabled(world, a):
        kind = _wait_kind(ins.op)
        sig = _signal(world, a.cta, kind, a.stage)
        raise ReplayError(f"{a.name} {ins.op.name} is blocked: cta{a.cta}.{kind}[{a.stage}] "
                          f"= {_public_signal(sig)} is not ready for phase {a.phase}")
    return a


def _take_inflight(world: World, event: dict) -> dict:
    want = "copy" if event["kind"] == "land" else "commit"
    entry = event.get("entry", {})
    if entry.get("kind") != want:
        raise ReplayError(f"a {event['kind']} event needs a {want!r} entry, got {entry}")
    for i, e in enumerate(world.inflight):
        if e == entry:
            return world.inflight.pop(i)
    raise ReplayError(f"{event['kind']}: {entry} is not in flight (in flight: "
                      f"{world.inflight})")


def _apply_async(world: World, event: dict) -> set:
    entry = _take_inflight(world, event)
    cta, stage = entry["cta"], entry["stage"]
    kinds = _aimed(world, cta)
    if entry["kind"] == "copy":
        kinds |= _store(world, cta, stage, entry["tag"])
        kinds |= _nvidia_update(world, _signal(world, cta, "full", stage),
                                add_tx=-entry["bytes"])
    else:
        kinds |= _arrive(world, cta, "empty", stage, entry["n"])
    return kinds


def apply(world: World, event: dict) -> set:
    """Check `event` is enabled, apply it, return the violation kinds this step commits."""
    kind = event.get("kind")
    if kind == "agent":
        a = _check_agent_event(world, event)
        kinds = _apply_agent_op(world, a)
    elif kind in ("land", "fire"):
        kinds = _apply_async(world, event)
    else:
        raise ReplayError(f"unknown event kind {kind!r}")
    for cta in range(world.spec.cluster_size):
        if cta not in world.gone and _cta_all_done(world, cta):
            world.gone.add(cta)
            if any(e["cta"] == cta for e in world.inflight):
                kinds.add("inflight_at_exit")
    return kinds


def state_violations(world: World) -> set:
    kinds = set()
    unfinished = [a for a in world.agents if not a.done]
    if unfinished and not world.inflight and not enabled_events(world):
        kinds.add("deadlock")
    if world.spec.backend == "nvidia":
        for a in unfinished:
            op = a.current.op
            if _is_blocking_wait(a, op) and _phase_alias(world, a, _wait_kind(op)):
                kinds.add("phase_alias")
    return kinds


# --------------------------------------------------------------------------------------------
# State view (checker/trace.py format) and replay
# --------------------------------------------------------------------------------------------

def _public_signal(sig: dict) -> dict:
    if "count" in sig:
        return {"count": sig["count"]}
    return {"phase_no": sig["phase_no"], "pending": sig["pending"], "tx": sig["tx"]}


def state_view(world: World) -> dict:
    agents = {}
    for a in world.agents:
        ins = a.current
        agents[a.name] = {
            "role": a.role, "cta": a.cta, "index": a.index,
            "pc": a.program_length if ins is None else ins.pc,
            "op": None if ins is None else ins.op.name,
            "item": a.item, "stage": a.stage, "phase": a.phase, "ready": a.ready,
            "at_sync": a.at_sync, "done": a.done,
        }
    return {
        "agents": agents,
        "signals": {f"cta{c}.{k}[{s}]": _public_signal(sig)
                    for (c, k, s), sig in world.signals.items()},
        "slots": {f"cta{c}.slot[{s}]": tag for (c, s), tag in world.slots.items()},
        "inflight": [dict(e) for e in world.inflight],
        "barriers": {f"cta{c}.{name}": n for (c, name), n in world.barriers.items()},
    }


def _mismatch(where: str, what: str, theirs, ours) -> ReplayError:
    return ReplayError(f"{where}: {what}: trace says {theirs!r}, replay has {ours!r}")


def _compare_agents(world: World, theirs: dict, ours: dict, where: str) -> None:
    if set(theirs) != set(ours):
        raise _mismatch(where, "agent names", sorted(theirs), sorted(ours))
    by_name = {a.name: a for a in world.agents}
    for name, t in theirs.items():
        o = ours[name]
        a = by_name[name]
        keys = ["done", "stage", "phase", "ready", "at_sync"]
        if not o["done"]:
            keys += ["pc", "op"]
            if a.current.section == "body":
                keys.append("item")   # outside the body the item number is not defined
        for key in keys:
            if key not in t:
                continue
            if key == "op" and not o["done"]:
                # The view may name the op (`expect_tx`) or show it as written in the spec
                # (`expect_tx 4096 @leader`): trace.py fixes neither; both identify it.
                if t[key] not in (a.current.op.name, a.current.op.text):
                    raise _mismatch(where, f"{name}.{key}", t[key], a.current.op.text or o[key])
            elif t[key] != o[key]:
                raise _mismatch(where, f"{name}.{key}", t[key], o[key])


def _compare_view(world: World, view: dict | None, where: str) -> None:
    if not view or world.trapped:
        return
    ours = state_view(world)
    if "agents" in view:
        _compare_agents(world, view["agents"], ours["agents"], where)
    for name, fields in view.get("signals", {}).items():
        if name not in ours["signals"]:
            raise _mismatch(where, "signal", name, sorted(ours["signals"]))
        for key, value in fields.items():
            if key in ours["signals"][name] and ours["signals"][name][key] != value:
                raise _mismatch(where, f"{name}.{key}", value, ours["signals"][name][key])
    for group in ("slots", "barriers"):
        for name, value in view.get(group, {}).items():
            if ours[group].get(name) != value:
                raise _mismatch(where, f"{group} {name}", value, ours[group].get(name))
    if "inflight" in view:
        theirs_ms = Counter(_entry_key(e) for e in view["inflight"])
        ours_ms = Counter(_entry_key(e) for e in ours["inflight"])
        if theirs_ms != ours_ms:
            raise _mismatch(where, "inflight", view["inflight"], ours["inflight"])


def _compare_step_header(world: World, step: dict, where: str) -> None:
    """The step's `phase` (and `stage`, where the op acts on one) is the agent's, before it."""
    event = step["event"]
    if event.get("kind") != "agent":
        return
    a = world.agent(event["agent"])
    if step.get("phase") is not None and step["phase"] != a.phase:
        raise _mismatch(where, "step phase", step["phase"], a.phase)
    acts_on_stage = event.get("op") not in ("advance", "reset", "sync")
    if acts_on_stage and step.get("stage") is not None and step["stage"] != a.stage:
        raise _mismatch(where, "step stage", step["stage"], a.stage)


def replay(spec: Spec, trace_json: dict) -> ReplayOutcome:
    world = initial_state(spec)
    _compare_view(world, trace_json.get("initial"), "initial state")
    step_kinds, state_kinds = [], [state_violations(world)]
    for i, step in enumerate(trace_json.get("steps", []), start=1):
        where = f"step {step.get('index', i)} ({step.get('action', step['event'])})"
        try:
            if not world.trapped:
                _compare_step_header(world, step, where)
            kinds = apply(world, step["event"])
        except ReplayError as e:
            if str(e).startswith(where):
                raise
            raise ReplayError(f"{where}: {e}") from None
        step_kinds.append(kinds)
        state_kinds.append(state_violations(world))
        _compare_view(world, step.get("state"), where)
    last = step_kinds[-1] if step_kinds else set()
    return ReplayOutcome(world=world, last_step_kinds=set(last),
                         end_state_kinds=state_kinds[-1], step_kinds=step_kinds,
                         state_kinds=state_kinds)
