"""Counterexample files: ITF (`*.itf.json`) and Chrome/Perfetto trace events (`*.trace.json`).

Both are built from a `checker.trace.Trace` only (its state views), so any engine's traces
export the same way. See docs/model.md "Trace files" for both formats.
"""
from __future__ import annotations

import json
import keyword
from pathlib import Path

from pipeproof.checker.results.trace import Step, Trace, parity

SUFFIXES = (".itf.json", ".trace.json")
ITF_URL = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# State-view parts in a fixed order; parts an engine adds later follow them.
PARTS = ("agents", "signals", "slots", "inflight", "barriers")
NONE = "none"  # ITF has no null: None is written as this string (agents' finished `op`)


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write `trace` to `path` in the format its suffix names."""
    name = Path(path).name
    if name.endswith(".itf.json"):
        doc = to_itf(trace)
    elif name.endswith(".trace.json"):
        doc = to_chrome(trace)
    else:
        raise ValueError(f"{path}: unknown trace format (expected a file name ending in "
                         f"{' or '.join(SUFFIXES)})")
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


# ---------------------------------------------------------------- ITF (Apalache ADR-015)

def _is_field(key: object) -> bool:
    # itf-py decodes records as namedtuples, so record fields must be Python identifiers.
    return (isinstance(key, str) and key.isidentifier() and not keyword.iskeyword(key)
            and not key.startswith("_"))


def itf_value(v: object) -> object:
    """Encode a JSON-ready value by ITF rules: every int as #bigint, no nulls, dicts whose
    keys are all identifiers as records and any other dict as a #map."""
    if v is None:
        return NONE
    if isinstance(v, bool):  # before int: bool is an int subclass
        return v
    if isinstance(v, int):
        return {"#bigint": str(v)}
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return [itf_value(x) for x in v]
    if isinstance(v, dict):
        if v and all(_is_field(k) for k in v):
            return {k: itf_value(x) for k, x in v.items()}
        return itf_map(v)
    return {"#unserializable": repr(v)}


def itf_map(d: dict) -> dict:
    return {"#map": [[itf_value(k), itf_value(x)] for k, x in d.items()]}


def _itf_part(v: object) -> object:
    # Top-level parts keyed by names ("consumer[1]", "cta0.full[0]") are always maps, so a
    # part keeps one ITF type even when it is empty or its names happen to be identifiers.
    return itf_map(v) if isinstance(v, dict) else itf_value(v)


def _parts(views: list[dict]) -> list[str]:
    seen = {k for v in views for k in v}
    return [p for p in PARTS if p in seen] + sorted(seen - set(PARTS))


def to_itf(trace: Trace) -> dict:
    """The trace as an ITF document: state 0 is the initial state, then one per step."""
    parts = _parts([trace.initial] + [s.state for s in trace.steps])
    states = []
    views = [("init", "", trace.initial)] + [(s.action, s.actor, s.state) for s in trace.steps]
    for i, (action, actor, view) in enumerate(views):
        meta = {"index": i, "actor": actor} if actor else {"index": i}
        state = {"#meta": meta, "action": action}
        state.update({p: _itf_part(view.get(p, {})) for p in parts})
        states.append(state)
    return {
        "#meta": {
            "format": "ITF",
            "format-description": ITF_URL,
            "source": trace.spec_path,
            "description": f"pipeproof counterexample for {trace.spec_name}: {trace.reason}",
            "status": "violation",
            "violation": trace.kind,
            "backend": trace.backend,
            "tool": "pipeproof",
        },
        "vars": ["action"] + parts,
        "states": states,
    }


# ---------------------------------------------- Chrome / Perfetto trace-event JSON

STEP_US = 1000  # one model step = 1 ms on the timeline, so steps are easy to tell apart
SLICE_US = 900  # a step's slice; the gap keeps consecutive slices from touching
PID = 1
WAITS = ("wait_full", "wait_empty")


def _op_name(step: Step) -> str:
    return step.event.op or step.event.kind  # agents: the op; async events: "land"/"fire"


def _tracks(trace: Trace) -> dict[str, int]:
    """tid per track: agents in state-view order, then async actors ("cta0.copy") as they act."""
    names = list(trace.initial.get("agents", {}))
    names += [s.actor for s in trace.steps if s.actor not in names]
    return {n: i + 1 for i, n in enumerate(dict.fromkeys(names))}


def _key(entry: dict) -> str:
    return json.dumps(entry, sort_keys=True)


def _inflight_name(key: str) -> str:
    """e.g. "copy -> cta0.slot[2] tag 3"; the b and e events of one transfer share it."""
    e = json.loads(key)
    kind = e.get("kind", "inflight")
    target = {"copy": "slot", "commit": e.get("signal", "empty")}.get(kind)
    name = kind
    if target and "cta" in e and "stage" in e:
        name += f" -> cta{e['cta']}.{target}[{e['stage']}]"
    return name + (f" tag {e['tag']}" if "tag" in e else "")


def _inflight_events(trace: Trace, tids: dict[str, int]) -> list[dict]:
    """Async b/e pairs for each in-flight copy/commit, from the step that issued it to the one
    that landed/fired it (or the end of the trace), matched by equal entries in the views."""
    events, open_, next_id = [], {}, 1  # open_: entry key -> [(id, tid), ...]
    views = [(0, None, trace.initial)] + [(s.index, s, s.state) for s in trace.steps]
    prev: list[str] = []
    for index, step, view in views:
        cur = [_key(e) for e in view.get("inflight", [])]
        gone, new = list(prev), []
        for k in cur:
            if k in gone:
                gone.remove(k)
            else:
                new.append(k)
        ts = index * STEP_US
        for k in gone:
            aid, tid = open_[k].pop(0)
            events.append({"ph": "e", "cat": "inflight", "id": aid, "name": _inflight_name(k),
                           "pid": PID, "tid": tid, "ts": ts + SLICE_US, "args": {"done": True}})
        for k in new:
            tid = tids.get(step.actor, 1) if step else 1
            open_.setdefault(k, []).append((next_id, tid))
            events.append({"ph": "b", "cat": "inflight", "id": next_id,
                           "name": _inflight_name(k), "pid": PID, "tid": tid, "ts": ts,
                           "args": json.loads(k)})
            next_id += 1
        prev = cur
    end = len(trace.steps) * STEP_US + SLICE_US
    for k, pending in open_.items():
        for aid, tid in pending:
            events.append({"ph": "e", "cat": "inflight", "id": aid, "name": _inflight_name(k),
                           "pid": PID, "tid": tid, "ts": end, "args": {"done": False}})
    return events


def to_chrome(trace: Trace) -> dict:
    """The trace as trace events: one track per agent, one slice per step (ts = step index)."""
    tids = _tracks(trace)
    title = f"{trace.spec_name} (counterexample: {trace.kind})"
    events = [{"ph": "M", "pid": PID, "tid": 0, "ts": 0, "name": "process_name",
               "args": {"name": title}}]
    for name, tid in tids.items():
        events.append({"ph": "M", "pid": PID, "tid": tid, "ts": 0, "name": "thread_name",
                       "args": {"name": name}})
        events.append({"ph": "M", "pid": PID, "tid": tid, "ts": 0, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    last_step = {}  # actor -> index of its previous step, to span blocking waits
    for s in trace.steps:
        start = s.index
        if s.event.kind == "agent" and s.event.op.split(" ")[0] in WAITS:
            start = last_step.get(s.actor, 0) + 1  # it sat at the wait since its last step
        events.append({
            "ph": "X", "cat": "step", "name": _op_name(s), "pid": PID, "tid": tids[s.actor],
            "ts": start * STEP_US, "dur": (s.index - start) * STEP_US + SLICE_US,
            "args": {"step": s.index, "action": s.action, "stage": s.stage, "phase": s.phase,
                     "lap": s.phase, "parity": parity(s.phase, trace.backend),  # report.py COLUMNS
                     "changes": list(s.changes), "waited_steps": s.index - start},
        })
        last_step[s.actor] = s.index
    end = len(trace.steps)
    if trace.kind == "deadlock":  # show where each stuck agent sits until the end
        final = trace.steps[-1].state if trace.steps else trace.initial
        for name, a in final.get("agents", {}).items():
            start = last_step.get(name, 0) + 1
            if a.get("op") is not None and not a.get("done") and start <= end:
                events.append({"ph": "X", "cat": "blocked", "name": f"blocked: {a['op']}",
                               "pid": PID, "tid": tids[name], "ts": start * STEP_US,
                               "dur": (end - start) * STEP_US + SLICE_US,
                               "args": {"stage": a.get("stage"), "phase": a.get("phase")}})
    events += _inflight_events(trace, tids)
    where = trace.steps[-1].actor if trace.steps else next(iter(tids), "")
    events.append({"ph": "i", "s": "g", "cat": "violation", "name": trace.kind, "pid": PID,
                   "tid": tids.get(where, 0), "ts": end * STEP_US + SLICE_US,
                   "args": {"reason": trace.reason}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {"tool": "pipeproof", "spec": trace.spec_path, "backend": trace.backend,
                      "violation": trace.kind, "reason": trace.reason},
    }
