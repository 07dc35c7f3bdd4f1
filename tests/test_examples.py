"""Every spec in spec/examples/: its declared verdict, pinned numbers, replayed counterexamples.

- Each example is loaded and verified; the verdict must be its `expect` (or one of
  `expect_any`), and for a violation `kind` must be `expect` and `kinds` exactly
  `expect` + `expect_any` (every kind found at the minimal depth, in the order of
  docs/model.md "Violation kinds").
- `PINNED_STATES` pins the exact state count of every `ok` example and `PINNED_TRACE_LENGTH`
  the counterexample length (= BFS depth) of every violating one; `PINNED_TRANSITIONS` pins
  the transition count of a few small `ok` examples (the tables: tests/pins.py; the cached
  verifications: tests/example_results.py). These are literal numbers measured once:
  a change in the explored state space must be noticed and the pins updated on purpose.
  The state and transition counts are pinned with symmetry reduction (the default) and,
  in the `*_NO_SYMMETRY` tables, without it; verdict, kinds and depth must not depend on it.
- Every counterexample of every kind is replayed with tests/replay.py, an independent
  implementation of docs/model.md: every step must be enabled there, every state view must
  agree, the end must show the claimed kind, and no earlier step or state may violate
  anything.
- The examples together cover all 7 violation kinds and every template in a correct
  configuration, and verifying twice gives identical results.

Run with `python -m pytest tests/test_examples.py` (the first run compiles the engine).
"""
from __future__ import annotations

import pytest

from pipeproof.checker.results.result import KINDS
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec import templates
from tests.example_results import (TIMEOUT_S, expected_kinds, result_of, spec_of,
                                   symmetric_result_of, unreduced_result_of)
from tests.paths import EXAMPLE_NAMES
from tests.pins import (PINNED_STATES, PINNED_STATES_NO_SYMMETRY, PINNED_STATES_POR,
                        STATES_NO_CTA_SYMMETRY, STATES_POR_NO_CTA_SYMMETRY,
                        PINNED_TRACE_LENGTH, PINNED_TRANSITIONS, PINNED_TRANSITIONS_NO_SYMMETRY)
from tests.replay import replay
from tests.replay_support import check_replay


def _violation_cases():
    cases = []
    for name in EXAMPLE_NAMES:
        spec = spec_of(name)
        if spec.expect not in (None, "ok"):
            cases += [pytest.param(name, kind, id=f"{name}-{kind}") for kind in expected_kinds(spec)]
    return cases


def _actions(result) -> dict:
    return {kind: [s.action for s in trace.steps] for kind, trace in result.traces.items()}


# ------------------------------------------------------------------------------------------
# each example: declared verdict, pins


def test_there_are_enough_examples():
    assert len(EXAMPLE_NAMES) >= 18


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_is_documented_and_declares_its_verdict(name, examples_dir):
    text = (examples_dir / name).read_text()
    assert text.startswith("#"), f"{name}: begins with a header comment"
    assert len([line for line in text.splitlines() if line.startswith("#")]) >= 3, \
        f"{name}: the header says what it models and why it is correct or what the bug is"
    spec = spec_of(name)
    assert spec.expect is not None, f"{name}: declares `expect`"
    if spec.expect == "ok":
        assert not spec.expect_any, f"{name}: an ok example has no ties"


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_verdict(name):
    spec = spec_of(name)
    result = result_of(name)
    assert not result.limit, f"{name}: hit a limit ({result.limit})"
    if spec.expect == "ok":
        assert result.verdict == "ok", (
            f"{name}: expected ok, got {result.kinds}: "
            + "; ".join(t.reason for t in result.traces.values()))
        assert result.kinds == ()
        assert result.traces == {}
        assert result.depth is None
        return
    assert result.verdict == "violation", f"{name}: expected {spec.expect}, got {result.verdict}"
    assert result.kind == spec.expect
    assert result.kind in (spec.expect,) + spec.expect_any
    assert set(result.kinds) == set(expected_kinds(spec))
    assert list(result.kinds) == sorted(result.kinds, key=KINDS.index)  # reporting order
    assert set(result.traces) == set(result.kinds)
    for kind, trace in result.traces.items():
        assert trace.kind == kind
        assert len(trace.steps) == result.depth, f"{name}: every kind at the minimal depth"
        assert trace.reason


def test_every_example_is_pinned():
    ok = {n for n in EXAMPLE_NAMES if spec_of(n).expect == "ok"}
    bad = set(EXAMPLE_NAMES) - ok
    assert set(PINNED_STATES) == set(PINNED_STATES_NO_SYMMETRY) == set(PINNED_STATES_POR) == ok
    assert set(PINNED_TRACE_LENGTH) == bad
    assert set(PINNED_TRANSITIONS) <= ok and len(PINNED_TRANSITIONS) >= 3
    assert set(PINNED_TRANSITIONS_NO_SYMMETRY) == set(PINNED_TRANSITIONS)


@pytest.mark.parametrize("name", sorted(PINNED_STATES_POR))
def test_pinned_state_count_with_por(name):
    result = result_of(name)
    assert result.verdict == "ok" and result.por
    assert result.states == PINNED_STATES_POR[name]
    assert result.states <= PINNED_STATES[name]


@pytest.mark.parametrize("name", sorted(PINNED_STATES))
def test_pinned_state_count(name):
    result = symmetric_result_of(name)
    assert result.verdict == "ok"
    assert result.states == PINNED_STATES[name]
    if name in PINNED_TRANSITIONS:
        assert result.transitions == PINNED_TRANSITIONS[name]


@pytest.mark.parametrize("name", sorted(PINNED_STATES_NO_SYMMETRY))
def test_pinned_state_count_without_symmetry(name):
    result = unreduced_result_of(name)
    assert result.verdict == "ok"
    assert result.states == PINNED_STATES_NO_SYMMETRY[name]
    assert result.states >= PINNED_STATES[name]
    if name in PINNED_TRANSITIONS_NO_SYMMETRY:
        assert result.transitions == PINNED_TRANSITIONS_NO_SYMMETRY[name]


@pytest.mark.parametrize("name", sorted(STATES_NO_CTA_SYMMETRY))
def test_cta_symmetry_is_switchable(name):
    """`--no-cta-symmetry`: the cluster examples whose CTAs run the same programs store their
    counts of before the renaming of CTAs (about twice as many: two CTAs), with the same
    verdict, with partial-order reduction and without."""
    spec = spec_of(name)
    off = verify(spec, por=False, cta_symmetry=False)
    off_por = verify(spec, cta_symmetry=False)
    assert off.verdict == off_por.verdict == "ok"
    assert off.states == STATES_NO_CTA_SYMMETRY[name] > PINNED_STATES[name]
    # (reduced, both come down to 2 states since the finishing steps: no CTA is left to rename)
    assert off_por.states == STATES_POR_NO_CTA_SYMMETRY[name] >= PINNED_STATES_POR[name]


def test_symmetry_reduces_some_examples():
    assert sum(PINNED_STATES[n] < PINNED_STATES_NO_SYMMETRY[n] for n in PINNED_STATES) >= 4


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_same_verdict_without_por(name):
    """Partial-order reduction changes no verdict, no kind, no minimal depth and no trace (a
    violation it finds is searched for again without it)."""
    on, off = result_of(name), symmetric_result_of(name)
    assert not on.limit and not off.limit
    assert (on.verdict, on.kinds, on.depth) == (off.verdict, off.kinds, off.depth)
    assert {k: t.to_json() for k, t in on.traces.items()} == \
        {k: t.to_json() for k, t in off.traces.items()}
    assert on.states <= off.states


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_same_verdict_without_symmetry(name):
    """Symmetry reduction changes no verdict, no kind and no minimal depth; the unreduced
    counterexamples replay too."""
    on, off = result_of(name), unreduced_result_of(name)
    assert not off.limit
    assert (on.verdict, on.kinds, on.depth) == (off.verdict, off.kinds, off.depth)
    assert on.states <= off.states and on.transitions <= off.transitions
    spec = spec_of(name)
    for kind, trace in off.traces.items():
        assert len(trace.steps) == off.depth
        assert kind in replay(spec, trace.to_json()).kinds


@pytest.mark.parametrize("name", sorted(PINNED_TRACE_LENGTH))
def test_pinned_trace_length(name):
    result = result_of(name)
    assert result.verdict == "violation"
    assert result.depth == PINNED_TRACE_LENGTH[name]
    for trace in result.traces.values():
        assert len(trace.steps) == PINNED_TRACE_LENGTH[name]


# ------------------------------------------------------------------------------------------
# every counterexample, replayed independently


@pytest.mark.parametrize("name, kind", _violation_cases())
def test_counterexample_replays(name, kind):
    spec = spec_of(name)
    result = result_of(name)
    assert kind in result.traces, f"{name}: no {kind} trace (kinds {result.kinds})"
    check_replay(spec, result, kind)  # BFS minimality: only the last step violates


# ------------------------------------------------------------------------------------------
# the collection as a whole


def test_examples_cover_every_violation_kind():
    found = set()
    for name in EXAMPLE_NAMES:
        found |= set(result_of(name).kinds)
    assert found == set(KINDS)


def test_every_template_has_a_correct_example():
    correct = {(spec_of(n).template, spec_of(n).backend)
               for n in EXAMPLE_NAMES if spec_of(n).expect == "ok"}
    assert {t for t, _ in correct if t} == set(templates.TEMPLATES)
    assert ("mojo_producer_consumer", "nvidia") in correct
    assert ("mojo_producer_consumer", "amd") in correct
    for name in EXAMPLE_NAMES:
        if spec_of(name).expect == "ok" and spec_of(name).template:
            assert result_of(name).verdict == "ok"


def test_hand_written_correct_examples():
    """A correct example without a template uses try_full + unless=ready, another a named barrier."""
    hand = [spec_of(n) for n in EXAMPLE_NAMES
            if spec_of(n).expect == "ok" and not spec_of(n).template]
    ops = [{op.name + (" unless" if op.unless_ready else "") for r in s.roles for op in r.body}
           for s in hand]
    assert any({"try_full", "wait_full unless"} <= o for o in ops)
    assert any(s.barriers and "sync" in o for s, o in zip(hand, ops))


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_deterministic(name):
    first = result_of(name)
    again = verify(spec_of(name), timeout=TIMEOUT_S)
    assert (again.verdict, again.kinds, again.depth, again.states, again.transitions) == \
        (first.verdict, first.kinds, first.depth, first.states, first.transitions)
    assert _actions(again) == _actions(first)
    assert {k: t.to_json() for k, t in again.traces.items()} == \
        {k: t.to_json() for k, t in first.traces.items()}
