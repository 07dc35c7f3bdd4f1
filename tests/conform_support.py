"""Event logs made from model paths, for the conformance tests (tests/test_conform.py,
tests/test_commit_full.py): seeded random walks through the compiled model (`walk`), written in
the GPU recorder's event schema by an event builder of the tests' own (`event_of`,
`position_of`; not conform's code), with increasing timestamps, some with equal-timestamp groups
shuffled (`shuffle_ties`)."""
from __future__ import annotations

import numpy as np

from pipeproof.checker.core import semantics as S


def event_of(m, st, a, nxt) -> dict:
    """The recorder's event for action `a` from state `st` (without "t")."""
    n = len(m.agents)
    if a >= n:
        e = m.decode_entry(st[m.off_inf + a - n])
        if e["kind"] == "copy":
            return {"agent": f"cta{e['cta']}.copy", "op": "land", "cta": e["cta"],
                    "stage": e["stage"], "item": e["tag"], "bytes": e["bytes"], "result": "ok"}
        if e["kind"] == "commit":
            return {"agent": f"cta{e['cta']}.commit", "op": "fire", "cta": e["cta"],
                    "stage": e["stage"], "n": e["n"]}
        return {"agent": e["agent"], "op": "finish", "stage": e["stage"], "item": e["tag"]}
    ev = position_of(m, st, a)
    ev["result"] = "ok"
    op = m.current_op(st, a)
    r = m.ring_names.index(op.ring)
    if op.name.startswith("try_"):
        ev["ready"] = bool(nxt[a * m.agf + S.F_RING0 + 3 * r + 2])
    if op.name in ("read", "read_async"):
        want = S.op_tag(m.tables, S.op_row(m.tables, a, ev["pc"]), ev["item"])  # its fill's tag
        if S.read_miss(m.tables, np.asarray(st, dtype=np.int64), m.agents[a].cta, r, ev["stage"], want) >= 0:
            ev["result"] = "tag_mismatch"
    return ev


def position_of(m, st, a) -> dict:
    op = m.current_op(st, a)
    stage, phase = m.ring_stage_phase(st, a, op)
    return {"agent": m.agents[a].name, "op": op.name, "pc": m.agent_field(st, a, S.F_PC),
            "item": m.agent_field(st, a, S.F_ITEM), "stage": stage, "phase": phase}


def enabled(m, st):
    out = []
    for a in range(m.n_actions()):
        nxt, bits, _ = m.apply(st, a)
        if nxt is not None and not bits & S.INFLIGHT_FULL:
            out.append((a, nxt, bits))
    return out


def walk(m, rng=None, tie=0.0, stop=None):
    """A log of one path: random enabled actions (rng) or the lowest-numbered one (agents
    before landings), with t += 32 ns per event except, with probability `tie`, +0. The path
    ends when nothing is enabled, at a trap, or after `stop` steps; agents left unfinished
    get timeout events."""
    st, evs, t, seen, trapped = m.initial_state(), [], 1000, 0, False
    while stop is None or len(evs) < stop:
        acts = enabled(m, st)
        if not acts:
            break
        a, nxt, bits = rng.choice(acts) if rng else acts[0]
        ev = event_of(m, st, a, nxt)
        if not (rng and rng.random() < tie):
            t += 32
        evs.append({"t": t, **ev})
        st, seen = nxt, seen | bits
        if bits & S.TRAP:
            trapped = True
            break
    t += 32
    if not trapped:
        for a in range(len(m.agents)):
            if m.current_op(st, a) is not None:
                evs.append({"t": t, **position_of(m, st, a), "result": "timeout"})
    if trapped:
        outcome = "trap"
    elif any(e.get("result") == "tag_mismatch" for e in evs):
        outcome = "overwrite_before_drain" if seen & S.OVERWRITE_BEFORE_DRAIN else "read_before_fill"
    elif any(e.get("result") == "timeout" for e in evs):
        outcome = "deadlock"
    else:
        outcome = "ok"
    return {"spec": m.spec.path, "device": "model walk", "command": "tests/conform_support.py",
            "seed": 0, "run": 0, "outcome": outcome, "events": evs}


def shuffle_ties(log, rng):
    """Shuffle the list order inside every group of equal timestamps."""
    evs, i = log["events"], 0
    while i < len(evs):
        j = i
        while j < len(evs) and evs[j]["t"] == evs[i]["t"]:
            j += 1
        group = evs[i:j]
        rng.shuffle(group)
        evs[i:j] = group
        i = j
    return log

