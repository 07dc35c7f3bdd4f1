"""The end of the log, once every step is replayed: outcome, timeouts, completeness.

`end_problem` answers (event index or None, message) for the first rule the final state
breaks, or None: a `read_before_fill` / `overwrite_before_drain` / `inflight_at_exit` outcome
needs the model to report that kind on the path; each timed-out agent must be at its op, and the op disabled
both now and in some state reached by completing everything still in flight (`settle`);
every agent without a timeout must have finished (except in a `trap` log, a prefix).
"""
from __future__ import annotations

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.results import KINDS
from pipeproof.cuda_ref.conform_events import LogEvent
from pipeproof.cuda_ref.conform_log import event_text
from pipeproof.cuda_ref.conform_text import position_text, trap_text
from pipeproof.spec.schema import RING_OPS

TAG_OUTCOMES = ("read_before_fill", "overwrite_before_drain")
# outcomes the model must report on the replayed path (the GPU saw the violation itself)
REPORTED_OUTCOMES = TAG_OUTCOMES + ("inflight_at_exit",)
SETTLE_LIMIT = 4_000


def outcome_bit(outcome: str) -> int:
    """The violation bit the model must report on the path for this outcome (0: none)."""
    return 1 << KINDS.index(outcome) if outcome in REPORTED_OUTCOMES else 0


def end_problem(m: Model, log: dict, timeouts: list[LogEvent], state, flags):
    """(index, message) of what is wrong at the end of the replayed path, or None. `flags` is
    (the path trapped, violation bits the model reported on it)."""
    outcome = log["outcome"]
    bit = outcome_bit(outcome)
    if bit and not flags[1] & bit:
        kinds = [k for i, k in enumerate(KINDS) if flags[1] & (1 << i)]
        first = next((i for i, ev in enumerate(log["events"]) if ev.get("result") == "tag_mismatch"
                      or ev.get("exit_inflight") or "late" in ev), None)
        at = "" if first is None else f"event {first} ({event_text(log['events'][first])}): "
        return first, (f"{at}the log's outcome is {outcome}, but the model reports no "
                       f"{outcome} on this path (it reports: {', '.join(kinds) or 'nothing'})")
    timed = {ev.agent for ev in timeouts}
    for ev in timeouts:
        reason = stuck_here(m, state, ev)
        if reason:
            return ev.index, f"event {ev.index} ({event_text(ev.raw)}): {reason}"
    if timeouts:
        settled, trapped = settle(m, state)
        good = next((s for s in settled if all(disabled(m, s, ev.agent) for ev in timeouts)), None)
        if good is None:
            if not settled:
                ev = timeouts[0]
                return ev.index, (f"event {ev.index} ({event_text(ev.raw)}): completing what is "
                                  f"still in flight traps in the model ({trapped})")
            s = settled[0]
            ev = next(ev for ev in timeouts if not disabled(m, s, ev.agent))
            return ev.index, (f"event {ev.index} ({event_text(ev.raw)}): the op would pass once what "
                              f"is still in flight has completed, so it cannot have been stuck")
    if outcome != "trap":
        unfinished = [a for a in range(len(m.agents))
                      if m.current_op(state, a) is not None and a not in timed]
        if unfinished:
            a = unfinished[0]
            more = f" ({len(unfinished)} agents unfinished)" if len(unfinished) > 1 else ""
            return None, (f"the log ends with {m.agents[a].name} at {position_text(m, state, a)}, "
                          f"with no timeout for it: events are missing{more}")
    return None


def disabled(m: Model, state, a) -> bool:
    """Agent `a` cannot step in `state` (blocked, or arrived at a sync and waiting there)."""
    return m.apply(state, a)[0] is None or m.agent_field(state, a, S.F_SYNC) == 1


def stuck_here(m: Model, state, ev: LogEvent) -> str:
    """Why the timeout `ev`'s agent is not stuck at that op in `state` ("" when it is)."""
    raw, a = ev.raw, ev.agent
    ag = m.agents[a]
    pc = m.agent_field(state, a, S.F_PC)
    op = m.current_op(state, a)
    if op is None:
        return f"{ag.name} has finished its program, it cannot be stuck"
    stage, phase = m.ring_stage_phase(state, a, op)
    if pc != raw["pc"] or op.name != raw["op"] \
            or (ag.body_start <= pc < ag.body_end and raw["item"] != m.agent_field(state, a, S.F_ITEM)) \
            or (op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase)):
        return f"{ag.name} ended at {position_text(m, state, a)}"
    if not disabled(m, state, a):
        return f"the op is enabled at the end of the log, so {ag.name} cannot have been stuck there"
    return ""


def settle(m: Model, state):
    """(states reached by completing everything in flight, in every order (bounded), the
    first trap met on the way in words or "")."""
    n_agents = len(m.agents)
    if not m.inflight_entries(state):
        return [state], ""
    finals, seen, todo, trapped = [], {state}, [state], ""
    while todo and len(seen) < SETTLE_LIMIT:
        s = todo.pop()
        n = len(m.inflight_entries(s))
        if n == 0:
            finals.append(s)
            continue
        for j in range(n):
            nxt, bits, det = m.apply(s, n_agents + j)
            if nxt is None:
                continue
            if bits & S.TRAP:
                trapped = trapped or trap_text(m, s, n_agents + j, bits, det)
                continue
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return finals, trapped
