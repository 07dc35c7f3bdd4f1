"""One log event from one model state: the transitions it can be, or why it is none.

`candidates(m, outcome, state, ev)` answers ([(action, next state, bits)], reason): an agent
step must be the agent's current op, at its pc, item, stage and phase, enabled, with the
model's answer for a try's `ready` and a read's tag; a landing, firing or finish must match an
in-flight entry that may complete now. A step on which the model traps conforms only in a log
whose outcome is `trap`. `SearchLimit` is raised when a bound of the search is reached.
"""
from __future__ import annotations

import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.cuda_ref.conform_events import LogEvent
from pipeproof.cuda_ref.conform_text import position_text, signal_text, trap_text, why_disabled
from pipeproof.spec.schema import RING_OPS


class SearchLimit(Exception):
    """The search reached one of its bounds: the answer is inconclusive."""


def apply(m: Model, state, action):
    """`m.apply`, refusing a step that ran out of room for in-flight entries."""
    nxt, bits, det = m.apply(state, action)
    if nxt is not None and bits & S.INFLIGHT_FULL:
        raise SearchLimit(f"the model's room for in-flight copies and commits ({m.inflight}) ran out")
    return nxt, bits, det


def candidates(m: Model, outcome: str, state, ev: LogEvent):
    """([(action, next_state, bits)], reason when the list is empty)."""
    if ev.kind == "agent":
        return _agent_candidates(m, outcome, state, ev)
    return _entry_candidates(m, outcome, state, ev)


def _agent_candidates(m, outcome, state, ev):
    T, raw, a = m.tables, ev.raw, ev.agent
    ag = m.agents[a]
    pc = m.agent_field(state, a, S.F_PC)
    op = m.current_op(state, a)
    if op is None or pc != raw["pc"] or op.name != raw["op"]:
        return [], f"{ag.name} is at {position_text(m, state, a)}"
    item = m.agent_field(state, a, S.F_ITEM)
    stage, phase = m.ring_stage_phase(state, a, op)
    if ag.body_start <= pc < ag.body_end and raw["item"] != item:
        return [], f"{ag.name} is at {position_text(m, state, a)}: item {item}, not {raw['item']}"
    if op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase):
        return [], f"{ag.name} is at {position_text(m, state, a)}: stage {stage} phase {phase}"
    if "ring" in raw and raw["ring"] != op.ring:
        return [], f"{ag.name}'s op at pc {pc} ({op.text}) is on ring {op.ring}"
    if m.agent_field(state, a, S.F_SYNC) == 1:
        b = m.barrier_names.index(op.barrier)
        pos = S.bar_pos(T, b, ag.cta)
        return [], (f"{ag.name} already arrived at sync {op.barrier} and is blocked there "
                    f"({state[pos]} of {int(T.bar_count[b, ag.cta])} arrivals)")
    nxt, bits, det = apply(m, state, a)
    if nxt is None:
        return [], why_disabled(m, state, a, op)
    r = m.ring_names.index(op.ring)
    e = OP_EFFECTS[op.name]
    if e.tries:
        ready = bool(nxt[S.ring_pos(m.agf, a, r, S.RF_READY)])
        if ready != raw["ready"]:
            sig = S.sig_index(T, ag.cta, r, stage, e.observes)
            return [], (f"the model's {op.name} answers ready={str(ready).lower()}: "
                        f"{signal_text(m, state, sig, phase)}")
    if e.checks_read:
        want = int(S.op_tag(T, S.op_row(T, a, pc), item))  # the fill this read pairs with
        miss = int(S.read_miss(T, np.asarray(state, dtype=np.int64), ag.cta, r, stage, want))
        pos = miss if miss >= 0 else S.slot_pos(T, ag.cta, r, stage)
        held = state[pos]
        what = "nothing" if held < 0 else m.tag_text(held)
        if raw["result"] == "ok" and miss >= 0:
            return [], (f"{m.slot_name(pos)} holds {what} in the model, so the read of "
                        f"{m.tag_text(want)} must mismatch")
        # A copy into the slot still in flight is read_before_fill too (docs/rules.md "Fills,
        # reads and tags"): the GPU can see one region of the item missing while the
        # slot's tag already matches.
        if raw["result"] == "tag_mismatch" and miss < 0 and not bits & S.READ_BEFORE_FILL:
            return [], (f"{m.slot_name(pos)} holds {m.tag_text(want)} and no copy into it "
                        f"is in flight in the model, so the read cannot mismatch")
    if bits & S.TRAP and outcome != "trap":
        return [], (f"the model traps here ({trap_text(m, state, a, bits, det)}), "
                    f"but the log's outcome is {outcome}")
    return [(a, nxt, bits)], ""


def _entry_candidates(m, outcome, state, ev):
    raw = ev.raw
    n_agents = len(m.agents)
    off = m.off_inf
    out, seen, blocked, present, trap_reason = [], set(), [], [], ""
    for j in range(m.inflight):
        e = state[off + j]
        if e == 0:
            break
        d = m.decode_entry(e)
        present.append(d)
        if d["kind"] != ev.kind or d["stage"] != raw["stage"]:
            continue
        if "ring" in raw and d["ring"] != raw["ring"]:
            continue
        if ev.kind == "copy" and (d["cta"], d["tag"], d["bytes"]) != (raw["cta"], raw["item"], raw["bytes"]):
            continue
        if ev.kind == "commit" and (d["cta"], d["n"]) != (raw["cta"], raw["n"]):
            continue
        if ev.kind == "read" and (d["agent"], d["tag"]) != (raw["agent"], raw["item"]):
            continue
        action = n_agents + j
        nxt, bits, det = apply(m, state, action)
        if nxt is None:
            blocked.append(d)
            continue
        if bits & S.TRAP and outcome != "trap":
            trap_reason = trap_reason or (
                f"the model traps here ({trap_text(m, state, action, bits, det)}), "
                f"but the log's outcome is {outcome}")
            continue
        if nxt not in seen:
            seen.add(nxt)
            out.append((action, nxt, bits))
    if out:
        return out, ""
    if trap_reason:
        return [], trap_reason
    if blocked:
        d = blocked[0]
        if d["kind"] == "read":
            return [], f"an earlier async read of {d['agent']} has not finished (reads finish in order)"
        if d.get("after_commits"):
            return [], (f"the commit still waits for {d['after_commits']} earlier commit(s) of "
                        f"{d['agent']} to fire (an agent's commits fire in issue order)")
        return [], f"the commit still waits for {d['after']} async read(s) of {d['agent']}"
    from pipeproof.checker.results import entry_text
    listed = "; ".join(entry_text(m, d) for d in present[:6]) + ("; ..." if len(present) > 6 else "")
    return [], (f"nothing like it is in flight (in flight: {listed})" if present
                else "nothing is in flight")
