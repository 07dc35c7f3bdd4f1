"""A counterexample replayed by the independent replayer (tests/replay.py), for the tests that
check traces (tests/test_examples.py, test_expressiveness.py, test_slot_parts.py): `check_replay` requires that
the trace of `kind` ends in that kind and commits or shows nothing before its last step."""
from __future__ import annotations

from tests import replay as R


def check_replay(spec, result, kind):
    """The trace of `kind` in `result`, replayed step by step: it ends in `kind`, and no step
    or state before the last one commits or shows a violation. Returns the trace (JSON)."""
    trace = result.traces[kind].to_json()
    outcome = R.replay(spec, trace)  # raises ReplayError on a disabled step or another state
    assert kind in outcome.kinds, f"replay ends with {outcome.kinds}, not {kind}"
    n = len(trace["steps"])
    assert len(outcome.step_kinds) == n and len(outcome.state_kinds) == n + 1
    for i, kinds in enumerate(outcome.step_kinds[:-1], start=1):
        assert not kinds, f"step {i} already commits {kinds}"
    for i, kinds in enumerate(outcome.state_kinds[:-1]):
        assert not kinds, f"the state after step {i} already has {kinds}"
    steps = result.traces[kind].steps
    assert all(not s.violations for s in steps[:-1])
    if kind in outcome.last_step_kinds:
        assert kind in steps[-1].violations
    return trace

