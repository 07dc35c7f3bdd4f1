"""A validated log's events against the spec's model, before any state is stepped.

`resolve_events` names each event's model agent (bad names are `LogError`s) and splits steps
from timeouts; `timestamp_groups` orders the steps by `t` (list order breaking ties) into
groups of equal `t`; `program_order_check` finds the first step that cannot be its agent's
next op in any order of its group: each agent's own events must follow its program, whose
pc, item, stage and phase are fixed by the program alone (waits decide only when).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.checker.core import Model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.cuda_ref.conform_log import ASYNC_OPS, LogError, event_text, show
from pipeproof.spec.schema import RING_OPS


@dataclass
class LogEvent:
    index: int       # position in the log's list
    raw: dict
    kind: str        # "agent" | "copy" | "commit" | "read"
    agent: int       # model agent index (agent steps, finishes), else -1


def resolve_events(m: Model, log: dict, source: str) -> tuple[list[LogEvent], list[LogEvent]]:
    """(steps, timeouts) of the log, in list order; steps include landings, firings and
    finishes. Raises `LogError` for an agent, CTA or ring the spec lacks, or a second timeout
    of one agent."""
    names = {a.name: i for i, a in enumerate(m.agents)}
    steps, timeouts, timed_out = [], [], {}
    for i, ev in enumerate(log["events"]):
        op = ev["op"]
        where = f"{source}: events[{i}]: "
        if op in ("land", "fire"):
            if ev["cta"] >= m.ctas:
                raise LogError(f"{where}key 'cta': {ev['cta']} is not a CTA of {m.spec.path} "
                               f"(cluster_size {m.ctas})")
            steps.append(LogEvent(i, ev, ASYNC_OPS[op], -1))
            continue
        if "ring" in ev and ev["ring"] not in m.ring_names:
            raise LogError(f"{where}key 'ring': {m.spec.path} has no ring {show(ev['ring'])} "
                           f"(rings: {', '.join(m.ring_names)})")
        a = names.get(ev["agent"])
        if a is None:
            shown = ", ".join(list(names)[:12]) + (", ..." if len(names) > 12 else "")
            raise LogError(f"{where}key 'agent': {m.spec.path} has no agent {show(ev['agent'])} "
                           f"(agents: {shown})")
        if op == "finish":
            steps.append(LogEvent(i, ev, "read", a))
        elif ev["result"] == "timeout":
            if a in timed_out:
                raise LogError(f"{where}{ev['agent']} already timed out at events[{timed_out[a]}]")
            timed_out[a] = i
            timeouts.append(LogEvent(i, ev, "agent", a))
        else:
            steps.append(LogEvent(i, ev, "agent", a))
    return steps, timeouts


def timestamp_groups(steps: list[LogEvent]) -> list[tuple[int, ...]]:
    """Sorts `steps` in place by (t, list index); returns the positions of each run of equal t."""
    steps.sort(key=lambda e: (e.raw["t"], e.index))
    groups = []
    for e in steps:
        if groups and steps[groups[-1][0]].raw["t"] == e.raw["t"]:
            groups[-1].append(groups[-1][-1] + 1)
        else:
            start = groups[-1][-1] + 1 if groups else 0
            groups.append([start])
    return [tuple(g) for g in groups]


def program(m: Model, a):
    """(pc, op, item, stage, phase) of each op agent `a` executes, in order: its program
    alone decides them (waits decide only when, never which op comes next)."""
    ag = m.agents[a]
    stages, phases = list(ag.initial_stages), list(ag.initial_phases)
    for pc, item in ag.executed():
        op = ag.ops[pc][0]
        r = m.ring_names.index(op.ring)
        yield pc, op, item, stages[r], phases[r]
        move = OP_EFFECTS[op.name].move
        if move == "advance":
            stages[r] += 1
            if stages[r] == m.ring_specs[r].stages:
                stages[r], phases[r] = 0, phases[r] + 1
        elif move == "reset":
            stages[r], phases[r] = ag.initial_stages[r], ag.initial_phases[r]


def matches(raw, ag, pos) -> bool:
    """Whether the log's step `raw` is agent `ag`'s op at program position `pos`."""
    pc, op, item, stage, phase = pos
    return (raw["pc"] == pc and raw["op"] == op.name
            and not (ag.body_start <= pc < ag.body_end and raw["item"] != item)
            and not (op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase))
            and raw.get("ring", op.ring) == op.ring)


def program_order_check(m: Model, steps: list[LogEvent]):
    """(step position, message) of the earliest agent step that cannot be its agent's next
    op in any order of equal-timestamp events, or None. Such a log fails whatever the
    interleaving, so the search stops when it reaches that event's group. `steps` are in
    timestamp order."""
    mine = {}
    for k, ev in enumerate(steps):
        if ev.kind == "agent":
            mine.setdefault(ev.agent, []).append(k)
    worst = None
    for a, ks in mine.items():
        ag = m.agents[a]
        prog = program(m, a)
        cur = next(prog, None)
        i, failed = 0, None
        while i < len(ks) and failed is None:
            j = i
            while j < len(ks) and steps[ks[j]].raw["t"] == steps[ks[i]].raw["t"]:
                j += 1
            tie = ks[i:j]   # this agent's events of one timestamp: any order of them
            while tie:
                k = next((k for k in tie if cur is not None
                          and matches(steps[k].raw, ag, cur)), None)
                if k is None:
                    failed = tie[0]
                    break
                tie.remove(k)
                cur = next(prog, None)
            i = j
        if failed is not None and (worst is None or failed < worst[0]):
            if cur is None:
                where = "it has finished its program"
            else:
                pc, op, item, stage, phase = cur
                where = f"it is at pc {pc} ({op.text}, item {item}, stage {stage}, phase {phase})"
            ev = steps[failed]
            worst = (failed, f"event {ev.index} ({event_text(ev.raw)}): after its earlier events {where}")
    return worst
