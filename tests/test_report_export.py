"""Reports (text, JSON) and trace exporters (ITF, Chrome trace events) on hand-made traces.

The traces here are fabricated: these tests check formatting, not the checker; the last one
exports a real counterexample through a slot of two parts (docs/rules.md "Slot parts").
"""
from __future__ import annotations

import copy
import json

import itf_py
import pytest

from pipeproof.checker.results.trace_files import to_chrome, to_itf, write_trace
from pipeproof.checker.results.report import first_line, format_text, to_json
from pipeproof.checker.results.result import JSON_SCHEMA_VERSION, Result
from pipeproof.checker.results.trace import Event, Step, Trace
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.schema import Op, Role, Spec
from tests.paths import load_example

PATH = "spec/examples/tiny.toml"


def _agent(role, index, op, stage=0, phase=0, pc=0):
    return {"role": role, "cta": 0, "index": index, "pc": pc, "op": op, "item": 0,
            "stage": stage, "phase": phase, "ready": False, "at_sync": False,
            "done": op is None}


INITIAL = {
    "agents": {"producer[0]": _agent("producer", 0, "wait_empty", phase=1),
               "consumer[0]": _agent("consumer", 0, "wait_full"),
               "consumer[1]": _agent("consumer", 1, "wait_full")},
    "signals": {"cta0.full[0]": {"phase_no": 0, "pending": 1, "tx": 0},
                "cta0.empty[0]": {"phase_no": 0, "pending": 2, "tx": 0}},
    "slots": {"cta0.slot[0]": -1},
    "inflight": [],
    "barriers": {},
}


def _steps():
    """producer waits, expect_tx, copy; the copy lands; consumer[0] waits and finishes."""
    v = copy.deepcopy(INITIAL)
    out = []

    def step(event, action, actor, stage, phase, changes, fn):
        fn(v)  # edit the running view, then snapshot it as this step's state
        out.append(Step(len(out) + 1, event, action, actor, stage, phase, tuple(changes),
                        copy.deepcopy(v)))

    def p(pc, op):
        return lambda s: s["agents"]["producer[0]"].update(pc=pc, op=op)

    step(Event("agent", "producer[0]", "wait_empty", 0),
         "producer[0].wait_empty(stage=0, phase=1)", "producer[0]", 0, 1, [], fn=p(1, "expect_tx"))

    def expect(s):
        p(2, "copy")(s)
        s["signals"]["cta0.full[0]"].update(pending=0, tx=16384)
    step(Event("agent", "producer[0]", "expect_tx", 1),
         "producer[0].expect_tx(stage=0, bytes=16384)", "producer[0]", 0, 1,
         ["cta0.full[0]: pending 1->0, tx 0->16384"], fn=expect)

    entry = {"kind": "copy", "cta": 0, "stage": 0, "tag": 0, "bytes": 16384}

    def issue(s):
        p(3, None)(s)
        s["agents"]["producer[0]"]["done"] = True
        s["inflight"].append(dict(entry))
    step(Event("agent", "producer[0]", "copy", 2), "producer[0].copy(stage=0, bytes=16384)",
         "producer[0]", 0, 1, ["inflight: +copy to cta0.slot[0] tag 0"], fn=issue)

    def land(s):
        s["inflight"].clear()
        s["slots"]["cta0.slot[0]"] = 0
        s["signals"]["cta0.full[0]"].update(tx=0, phase_no=1, pending=1)
    step(Event("land", entry=entry), "cta0.copy.land(stage=0, tag=0)", "cta0.copy", 0, None,
         ["cta0.slot[0]: -1->0", "cta0.full[0]: tx 16384->0, phase_no 0->1"], fn=land)

    step(Event("agent", "consumer[0]", "wait_full", 0), "consumer[0].wait_full(stage=0, phase=0)",
         "consumer[0]", 0, 0, [],
         fn=lambda s: s["agents"]["consumer[0]"].update(pc=1, op="read"))
    return tuple(out)


REASON = "consumer[1] waits on full[0] (phase 0) forever"


def _trace(kind="deadlock", steps=None, reason=REASON):
    steps = _steps() if steps is None else steps
    return Trace("tiny", PATH, "nvidia", copy.deepcopy(INITIAL), steps, kind, reason)


def _spec(expect=None, path=PATH):
    roles = (Role("producer", "producer", 1, 1, 0, 1, body=(Op("wait_empty"),)),
             Role("consumer", "consumer", 2, 1, 0, 0, body=(Op("wait_full"),)))
    return Spec(path, "tiny", "nvidia", 1, 1, 2, 1, roles, expect=expect)


def _violation(kinds=("deadlock",)):
    traces = {k: _trace(k, _steps()[: 5 - i], f"{k} happened") for i, k in enumerate(kinds)}
    traces[kinds[0]] = _trace(kinds[0])
    return Result(_spec(expect="deadlock"), "violation", states=12, transitions=20,
                  seconds=0.4213, kinds=tuple(kinds), depth=5, traces=traces, max_depth=5)


OK = Result(_spec(expect="ok"), "ok", states=288, transitions=901, seconds=0.42, max_depth=9)
INCONCLUSIVE = Result(_spec(), "inconclusive", states=1000, transitions=3100, seconds=1.5,
                      limit="max-states 1000", max_depth=7)


# ------------------------------------------------------------------------- first line

def test_first_line_ok():
    assert first_line(OK) == f"{PATH}: ok (288 states, 901 transitions, 0.42 s)"


def test_first_line_violation():
    assert first_line(_violation()) == f"{PATH}: deadlock after 5 steps: {REASON}"


def test_first_line_lists_other_kinds():
    r = _violation(("deadlock", "phase_alias", "over_arrival"))
    assert first_line(r) == (f"{PATH}: deadlock after 5 steps: {REASON} "
                             "(also: phase_alias, over_arrival)")


def test_first_line_inconclusive():
    assert first_line(INCONCLUSIVE) == (f"{PATH}: inconclusive: max-states 1000 "
                                        "(1000 states explored, no violation found so far)")


# ------------------------------------------------------------------------- text report

def test_format_text_violation_table():
    text = format_text(_violation(("deadlock", "phase_alias")))
    lines = text.splitlines()
    assert lines[0] == first_line(_violation(("deadlock", "phase_alias")))
    header = lines[1]
    # the agent's phase is a lap count (lap) beside the mbarrier parity a PTX wait reads
    assert header.split() == ["step", "agent", "op", "stage", "lap", "parity", "changes"]
    rows = lines[2:7]
    # Columns are aligned: every row's agent starts where the header's "agent" does.
    col = header.index("agent")
    assert all(r[col - 2:col] == "  " and r[col] != " " for r in rows)
    assert rows[0].split() == ["1", "producer[0]", "wait_empty(stage=0,", "phase=1)", "0", "1",
                               "1", "-"]
    assert rows[3].split()[:3] == ["4", "cta0.copy", "land(stage=0,"]
    assert rows[3].endswith("cta0.slot[0]: -1->0; cta0.full[0]: tx 16384->0, phase_no 0->1")
    assert " - " in rows[3]  # async event: no phase
    assert lines[7] == f"why: {REASON}"
    assert lines[8] == "also found: phase_alias (4 steps)"
    assert lines[9] == "12 states, 20 transitions, max depth 5, 0.42 s"
    assert "\x1b" not in text  # plain text, no colour codes


def test_format_text_ok_and_inconclusive():
    assert format_text(OK).splitlines() == [first_line(OK),
                                            "288 states, 901 transitions, max depth 9, 0.42 s"]
    assert format_text(INCONCLUSIVE).splitlines()[0] == first_line(INCONCLUSIVE)


# ------------------------------------------------------------------------- JSON report

def test_to_json_single_spec_copies_keys_to_top():
    r = _violation(("deadlock", "phase_alias"))
    doc = json.loads(json.dumps(to_json([r])))  # must be plain JSON
    assert doc["schema"] == "pipeproof.verify/1" and doc["version"] == JSON_SCHEMA_VERSION
    assert doc["verdict"] == "violation" and doc["results"][0]["verdict"] == "violation"
    v = doc["violation"]
    assert (v["kind"], v["kinds"], v["depth"], v["reason"]) == (
        "deadlock", ["deadlock", "phase_alias"], 5, REASON)
    assert v["trace"] == r.traces["deadlock"].to_json()
    assert set(v["traces"]) == {"deadlock", "phase_alias"}
    assert len(v["traces"]["phase_alias"]["steps"]) == 4
    assert (doc["spec"], doc["name"], doc["expect"], doc["limit"]) == (PATH, "tiny", "deadlock",
                                                                        None)
    assert (doc["states"], doc["transitions"], doc["max_depth"]) == (12, 20, 5)
    assert doc["seconds"] == pytest.approx(0.421)


def test_to_json_several_specs():
    doc = to_json([OK, INCONCLUSIVE])
    assert "verdict" not in doc
    assert [r["verdict"] for r in doc["results"]] == ["ok", "inconclusive"]
    assert doc["results"][0]["violation"] is None and doc["results"][0]["expect"] == "ok"
    assert doc["results"][1]["limit"] == "max-states 1000"


# ------------------------------------------------------------------------- ITF

def _plain(v):
    """itf-py's decoded value (namedtuple records, frozen maps/lists) as plain Python."""
    if hasattr(v, "_asdict"):
        return {k: _plain(x) for k, x in v._asdict().items()}
    if hasattr(v, "items"):  # itf-py maps are frozendicts
        return {_plain(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _none_as_string(v):
    if isinstance(v, dict):
        return {k: _none_as_string(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_none_as_string(x) for x in v]
    return "none" if v is None else v


def test_itf_round_trip_with_itf_py(tmp_path):
    trace = _trace()
    path = tmp_path / "cex.itf.json"
    write_trace(trace, path)
    raw = json.loads(path.read_text())
    assert raw["#meta"]["format"] == "ITF" and raw["#meta"]["violation"] == "deadlock"
    assert raw["#meta"]["source"] == PATH
    assert raw["vars"] == ["action", "agents", "signals", "slots", "inflight", "barriers"]
    # Apalache style: every integer is a #bigint, and there is no null anywhere.
    text = path.read_text()
    assert "null" not in text
    assert raw["states"][1]["slots"] == {"#map": [["cta0.slot[0]", {"#bigint": "-1"}]]}

    decoded = itf_py.trace_from_json(raw)
    assert decoded.vars == raw["vars"] and len(decoded.states) == 1 + len(trace.steps)
    views = [trace.initial] + [s.state for s in trace.steps]
    actions = ["init"] + [s.action for s in trace.steps]
    for i, (state, view, action) in enumerate(zip(decoded.states, views, actions)):
        assert state.meta["index"] == i
        assert state.values["action"] == action
        for part in ("agents", "signals", "slots", "inflight", "barriers"):
            assert _plain(state.values[part]) == _none_as_string(view[part]), (i, part)
    # The landing step removed the in-flight copy and filled the slot.
    assert decoded.states[3].values["inflight"][0].bytes == 16384
    assert decoded.states[4].values["slots"]["cta0.slot[0]"] == 0
    assert decoded.states[3].values["agents"]["producer[0]"].op == "none"
    # itf-py writes back the same states.
    again = itf_py.trace_to_json(decoded)
    assert [s for s in again["states"]] == raw["states"]


def test_itf_encodes_big_ints_and_nested_maps():
    trace = _trace(steps=())
    # Nested dicts: identifier keys make a record, any other key a #map.
    trace.initial["extra"] = {"big": 2**40, "per ring": {"main": 1}, "r": {"a-b": True}}
    doc = to_itf(trace)
    assert doc["vars"][-1] == "extra"
    assert doc["states"][0]["extra"] == {"#map": [
        ["big", {"#bigint": str(2**40)}],
        ["per ring", {"main": {"#bigint": "1"}}],
        ["r", {"#map": [["a-b", True]]}]]}
    extra = itf_py.trace_from_json(doc).states[0].values["extra"]
    assert _plain(extra) == trace.initial["extra"]


# ------------------------------------------------------------------------- Chrome trace

def test_chrome_trace_structure(tmp_path):
    trace = _trace()
    path = tmp_path / "cex.trace.json"
    write_trace(trace, path)
    doc = json.loads(path.read_text())
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    for e in events:
        assert {"ph", "ts", "pid", "tid", "name"} <= set(e), e
        assert e["pid"] == 1
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert list(names.values()) == ["producer[0]", "consumer[0]", "consumer[1]", "cta0.copy"]
    process = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert process[0]["args"]["name"].startswith("tiny")
    named = set(names) | {e["tid"] for e in process}
    assert {e["tid"] for e in events} <= named  # metadata names every track used

    steps = [e for e in events if e["ph"] == "X" and e["cat"] == "step"]
    assert [e["args"]["step"] for e in steps] == [1, 2, 3, 4, 5]
    assert [e["name"] for e in steps] == ["wait_empty", "expect_tx", "copy", "land", "wait_full"]
    assert steps[3]["tid"] == {v: k for k, v in names.items()}["cta0.copy"]
    assert steps[3]["args"]["changes"] == list(trace.steps[3].changes)
    assert steps[1]["args"]["action"] == trace.steps[1].action
    # consumer[0] sat at its wait from the start until it passed in step 5.
    assert (steps[4]["ts"], steps[4]["ts"] + steps[4]["dur"]) == (1000, 5900)
    # Slices on one track never overlap.
    by_tid = {}
    for e in (e for e in events if e["ph"] == "X"):
        assert e["dur"] >= 0
        by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_tid.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    # consumer[1] never moved: a deadlock shows it blocked over the whole trace.
    blocked = [e for e in events if e.get("cat") == "blocked"]
    assert [(names[e["tid"]], e["name"], e["ts"]) for e in blocked] == [
        ("consumer[1]", "blocked: wait_full", 1000)]
    # The copy is in flight from its issue (step 3) to its landing (step 4).
    b = [e for e in events if e["ph"] == "b"]
    e_ = [e for e in events if e["ph"] == "e"]
    assert len(b) == len(e_) == 1 and b[0]["id"] == e_[0]["id"] and b[0]["name"] == e_[0]["name"]
    assert (b[0]["ts"], e_[0]["ts"]) == (3000, 4900)
    # The violation is a global instant after the last step.
    (mark,) = [e for e in events if e["ph"] == "i"]
    assert mark["s"] == "g" and mark["name"] == "deadlock" and mark["ts"] >= 5900
    assert mark["args"]["reason"] == REASON


def test_chrome_trace_open_inflight_and_empty_trace():
    doc = to_chrome(_trace("inflight_at_exit", _steps()[:3], "copy still in flight"))
    b = [e for e in doc["traceEvents"] if e["ph"] == "b"]
    e_ = [e for e in doc["traceEvents"] if e["ph"] == "e"]
    assert len(b) == len(e_) == 1 and e_[0]["args"]["done"] is False
    empty = to_chrome(_trace("phase_alias", ()))
    assert [e["ph"] for e in empty["traceEvents"] if e["ph"] != "M"] == ["i"]


def test_unknown_suffix_is_an_error(tmp_path):
    with pytest.raises(ValueError, match=r"\.itf\.json.*\.trace\.json"):
        write_trace(_trace(), tmp_path / "cex.json")
    assert not (tmp_path / "cex.json").exists()


# ------------------------------------------------------------------ a slot of several parts

def test_a_slot_of_two_parts_exports_one_tag_per_part(tmp_path):
    # bug_expect_tx_too_few_bytes: two copies per stage, so each slot is a list of two tags, and
    # the read after the first landing finds the second part still unfilled
    result = verify(load_example("bug_expect_tx_too_few_bytes"))
    assert (result.kind, result.depth) == ("read_before_fill", 6)
    trace = result.traces["read_before_fill"]
    path = tmp_path / "cex.itf.json"
    write_trace(trace, path)
    decoded = itf_py.trace_from_json(json.loads(path.read_text()))
    views = [trace.initial] + [s.state for s in trace.steps]
    for state, view in zip(decoded.states, views):
        assert _plain(state.values["slots"]) == view["slots"]
        assert _plain(state.values["inflight"]) == view["inflight"]
    assert _plain(decoded.states[-1].values["slots"])["cta0.slot[0]"] == [0, -1]
    copies = [e for v in views for e in v["inflight"] if e["kind"] == "copy"]
    assert copies and {e["part"] for e in copies} == {0}
    begin = [e for e in to_chrome(trace)["traceEvents"] if e["ph"] == "b"]
    assert [e["args"]["part"] for e in begin] == [0]
