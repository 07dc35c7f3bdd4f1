"""The GPU log file as conform reads it: loading, the schema check, and one event in words.

The log (written by cuda_ref's runner):

    {"spec": PATH, "device": STR, "command": STR, "seed": S, "run": K, "outcome": OUTCOME,
     "events": [EVENT, ...]}

OUTCOME is one of `ok`, `deadlock`, `read_before_fill`, `overwrite_before_drain`, `trap`,
`inflight_at_exit` (a step that left its CTA without agents while a copy or commit of another
CTA was in flight into it, or that issued an update at another CTA gone already:
`"exit_inflight"`, `"late"` on the event; `"exit_unawaited"`, only the CTA's own copies or
commits in flight, is the warning unawaited_at_exit and leaves the outcome alone). An
EVENT is one of:

- an agent step: `{"t", "agent", "op", "pc", "item", "stage", "phase", "result"}` with
  `agent` a model agent name (`consumer[1]`, `cta0.producer[0]`), `op` the name of the op at
  `pc` in that agent's flattened program (`drain` steps are `drain`), `result` `ok` or
  `tag_mismatch` (reads only). A `try_*` step adds `"ready": bool`.
- a timeout: the same keys with `"result": "timeout"`. It is not a step: it says the agent was
  stuck at that op when the run ended.
- a copy landing `{"t", "agent": "cta<c>.copy", "op": "land", "cta": c, "stage", "item": tag,
  "bytes"}`, a commit firing `{"t", "agent": "cta<c>.commit", "op": "fire", "cta": c, "stage",
  "n"}`, an async read or write (write_async) finishing `{"t", "agent": NAME, "op": "finish",
  "stage", "item": tag}`.
  Any event may add `"ring": NAME` (default: any ring for these three, the op's ring for steps).

Unknown keys are ignored; known keys are type-checked. `validate_log` checks the schema only
(and that the outcome agrees with the events); which agents, CTAs and rings the spec has is
checked when the events are resolved against the model (cuda_ref/conform_events.py).
"""
from __future__ import annotations

import json
import os

from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.results import GPU_OUTCOMES
from pipeproof.spec.schema import OPS, SpecError

OUTCOMES = GPU_OUTCOMES  # checker/results/result.py: what a GPU run of each kind shows
RESULTS = ("ok", "timeout", "tag_mismatch")
ASYNC_OPS = {"land": "copy", "fire": "commit", "finish": "read"}   # event op -> entry kind
READ_OPS = tuple(name for name, e in OP_EFFECTS.items() if e.checks_read)  # may mismatch


class LogError(SpecError, ValueError):
    """Bad log input. str() is one line: `FILE: events[3]: key 'phase': what is wrong`."""


def load_log(path) -> dict:
    """Read and validate a log file; every problem is a one-line `LogError` naming the file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise LogError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise LogError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise LogError(f"{path}: not valid JSON: {err.msg} (line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise LogError(f"{path}: not valid JSON: nested too deeply") from None
    return validate_log(doc, path)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def show(v) -> str:
    """A value from the log as a message quotes it: JSON, cut at 40 characters."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_log(doc, source: str = "<log>") -> dict:
    """Check the schema of a loaded log document; returns it unchanged."""
    def fail(where, msg):
        raise LogError(f"{source}: {where}{msg}")

    if not isinstance(doc, dict):
        fail("", f"the log must be a JSON object, got {type(doc).__name__}")
    for key, kind in (("spec", str), ("device", str), ("command", str), ("outcome", str),
                      ("run", int), ("seed", int), ("events", list)):
        if key not in doc:
            fail("", f"missing key '{key}'")
        v = doc[key]
        if key == "seed" and v is None:
            continue
        if kind is int and not _is_int(v):
            fail("", f"key '{key}': must be an integer, got {show(v)}")
        if kind is not int and not isinstance(v, kind):
            fail("", f"key '{key}': must be a {'string' if kind is str else 'list'}, got {show(v)}")
    if doc["outcome"] not in OUTCOMES:
        fail("", f"key 'outcome': unknown outcome {show(doc['outcome'])} (expected one of: {', '.join(OUTCOMES)})")
    timeouts = mismatches = 0
    for i, ev in enumerate(doc["events"]):
        where = f"events[{i}]: "
        if not isinstance(ev, dict):
            fail(where, f"an event must be a JSON object, got {show(ev)}")

        def need(key, check=_is_int, what="an integer"):
            if key not in ev:
                fail(where, f"missing key '{key}'")
            if not check(ev[key]):
                fail(where, f"key '{key}': must be {what}, got {show(ev[key])}")

        def nonneg(v):
            return _is_int(v) and v >= 0

        need("t")
        need("agent", lambda v: isinstance(v, str) and v != "", "a non-empty string")
        need("op", lambda v: isinstance(v, str), "a string")
        if "ring" in ev and not isinstance(ev["ring"], str):
            fail(where, f"key 'ring': must be a string, got {show(ev['ring'])}")
        op = ev["op"]
        if op in ASYNC_OPS:
            if ev.get("result", "ok") != "ok":
                fail(where, f"key 'result': a {op} event's result must be \"ok\", got {show(ev['result'])}")
            if op != "finish":
                need("cta", nonneg, "an integer >= 0")
            need("stage", nonneg, "an integer >= 0")
            if op == "fire":
                need("n", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
            else:
                need("item")
            if op == "land":
                need("bytes", nonneg, "an integer >= 0")
            if op != "finish":
                unit = "copy" if op == "land" else "commit"
                if ev["agent"] != f"cta{ev['cta']}.{unit}":
                    fail(where, f"key 'agent': a {op} event in cta {ev['cta']} is recorded as "
                                f"\"cta{ev['cta']}.{unit}\", got {show(ev['agent'])}")
            continue
        if op not in OPS:
            fail(where, f"key 'op': unknown op {show(op)} (expected one of: "
                        f"{', '.join(OPS + tuple(ASYNC_OPS))})")
        need("pc", nonneg, "an integer >= 0")
        need("item")
        need("stage", nonneg, "an integer >= 0")
        need("phase")
        need("result", lambda v: v in RESULTS, f"one of {', '.join(RESULTS)}")
        if ev["result"] == "tag_mismatch":
            if op not in READ_OPS:
                fail(where, f"key 'result': only a read can have a tag mismatch, not {op}")
            mismatches += 1
        if ev["result"] == "timeout":
            timeouts += 1
        if OP_EFFECTS[op].tries and ev["result"] == "ok":
            need("ready", lambda v: isinstance(v, bool), "true or false")
        elif "ready" in ev and not isinstance(ev["ready"], bool):
            fail(where, f"key 'ready': must be true or false, got {show(ev['ready'])}")
    outcome = doc["outcome"]
    if outcome == "ok" and (timeouts or mismatches):
        fail("", f"key 'outcome': \"ok\" but the log has {timeouts} timeout(s) and {mismatches} tag mismatch(es)")
    if outcome == "deadlock" and not timeouts:
        fail("", "key 'outcome': \"deadlock\" but no event has result \"timeout\"")
    return doc


def event_text(ev: dict) -> str:
    """`consumer[1] wait_full pc=0 item=3 stage=0 phase=1 at t=1234`."""
    op = ev.get("op")
    ring = f" ring={ev['ring']}" if "ring" in ev else ""
    if op == "land":
        body = f"land{ring} stage={ev.get('stage')} item={ev.get('item')} bytes={ev.get('bytes')}"
    elif op == "fire":
        body = f"fire{ring} stage={ev.get('stage')} n={ev.get('n')}"
    elif op == "finish":
        body = f"finish{ring} stage={ev.get('stage')} item={ev.get('item')}"
    else:
        body = f"{op} pc={ev.get('pc')} item={ev.get('item')} stage={ev.get('stage')} phase={ev.get('phase')}"
        if "ready" in ev:
            body += f" ready={str(ev['ready']).lower()}"
        if ev.get("result") not in (None, "ok"):
            body += f" {ev['result']}"
    return f"{ev.get('agent')} {body} at t={ev.get('t')}"
