"""crosscheck's R2/R3 without a rule called broken for want of an answer (issue 31, job 2):
cuda_ref/crosscheck_facts.py decides each question by the GPU's conforming logs, then the
exhaustive search with symmetry reduction, then (to confirm only) the partial-order reduced
search, and says `undecided (bound: ...)` when none decides."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeproof.cuda_ref import log as L
from pipeproof.cuda_ref.commands import check_rules
from pipeproof.cuda_ref.crosscheck_facts import ModelFacts, search, witnesses
from pipeproof.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
BIG = ROOT / "tests" / "fixtures" / "gpu_cluster" / "cutlass_cluster2_release_before_read_s4.toml"
EXAMPLES = ROOT / "spec" / "examples"


class Conf:
    def __init__(self, ok, index=None, message=""):
        self.ok, self.index, self.message = ok, index, message


def report(outcome, kinds=None, run=0, timeouts=False):
    events = [{"t": 1, "agent": "a", "op": "wait_full", "pc": 0, "item": 0, "stage": 0,
               "phase": 0, "result": "timeout"}] if timeouts else []
    return L.RunReport(L.make_log("s", "d", "c", 0, run, outcome, events),
                       kinds if kinds is not None else ([] if outcome == "ok" else [outcome]))


class NoSearch(ModelFacts):
    """Facts whose searches must not run: the logs decide."""
    def full(self):
        raise AssertionError("the exhaustive search ran")

    def por(self):
        raise AssertionError("the reduced search ran")


def test_the_cluster_spec_that_verify_answers_at_once_and_the_full_search_does_not():
    spec = load_spec(str(BIG))
    t = time.monotonic()
    facts = ModelFacts(spec, timeout=2.0)
    assert facts.result.verdict == "violation" and time.monotonic() - t < 60
    assert set(facts.result.kinds) == {"read_before_fill", "overwrite_before_drain"}
    full = facts.full()
    assert full.limit and not full.exhaustive        # stopped at its bound
    por = facts.por()
    assert por.exhaustive and por.terminal and not por.traps


def test_r3_is_decided_by_the_reduced_search_not_called_broken():
    """Before issue 31: 'R3: undecided (model search stopped: timeout 120 s)' was a broken
    rule. The reduced search meets a terminal state: not every path deadlocks."""
    facts = ModelFacts(load_spec(str(BIG)), timeout=2.0)
    broken, notes = check_rules(facts, [report("overwrite_before_drain"), report("ok", run=1)],
                                None)
    assert broken == [] and not any("undecided" in n for n in notes)
    assert facts.every_path_deadlocks().value is False


def test_r2_undecided_within_the_bound_is_said_not_broken():
    """A GPU deadlock on the big spec: the full search stops at its bound, and the reduced
    search (which may not keep every kind) finds none: undecided, a note."""
    facts = ModelFacts(load_spec(str(BIG)), timeout=2.0)
    broken, notes = check_rules(facts, [report("deadlock", timeouts=True)], None)
    assert broken == []
    assert any(n.startswith("R2 undecided for GPU deadlock (bound: ") for n in notes), notes


def test_r3_undecided_within_the_bound_is_said_not_broken():
    """x_cluster_item_mismatch_deadlock deadlocks on every path; with a bound of 50 states neither
    search decides, so a GPU run that did not deadlock leaves R3 undecided."""
    spec = load_spec(str(EXAMPLES / "x_cluster_item_mismatch_deadlock.toml"))
    facts = ModelFacts(spec, max_states=50)
    broken, notes = check_rules(facts, [report("deadlock", timeouts=True), report("ok", run=1)],
                                None)
    assert broken == [] and any(n.startswith("R3 undecided (bound: ") for n in notes), notes
    # with room the same runs break R3 (the model deadlocks on every path)
    facts = ModelFacts(spec)
    broken, _ = check_rules(facts, [report("deadlock", timeouts=True), report("ok", run=1)], None)
    assert any(b.startswith("R3: every path deadlocks") for b in broken)


def test_conforming_logs_decide_without_a_search():
    spec = load_spec(str(BIG))
    facts = NoSearch(spec)
    # a deadlocked run whose log conforms is a model path ending in a deadlock (R2), and a
    # conforming run that did not deadlock is a model path that does not (R3)
    reps = [report("deadlock", timeouts=True), report("ok", run=1)]
    broken, notes = check_rules(facts, reps, [Conf(True), Conf(True)])
    assert broken == [] and "deadlock (reachable: run 0's conforming log is a model path that " \
                            "reports it)" in notes
    assert witnesses(reps, [Conf(True), Conf(True)]) == ([(0, "deadlock")], 1)
    # a log that does not conform witnesses nothing (and breaks R4)
    assert witnesses(reps, [Conf(False, 3, "x"), Conf(False, 3, "x")]) == ([], None)
    # a trap log is checked only up to the trap: no witness either
    assert witnesses([report("trap")], [Conf(True)]) == ([], None)


def test_searches_report_what_they_meet():
    spec = load_spec(str(EXAMPLES / "bug_producer_phase0_nvidia.toml"))
    for por in (False, True):
        f = search(spec, por)
        assert f.exhaustive and f.kinds == ("deadlock",) and not f.terminal and not f.traps
    assert ModelFacts(spec).every_path_deadlocks().value is True


@pytest.mark.parametrize("name", ["bug_consumer_count_too_few", "bug_every_lane_expect_tx",
                                  "x_cluster_item_mismatch_deadlock"])
def test_the_reduced_search_finds_only_what_the_full_search_finds(name):
    """What the partial-order reduced search meets is real: a subset of the full search's
    kinds, and a terminal state or trap only where the full search meets one."""
    spec = load_spec(str(EXAMPLES / f"{name}.toml"))
    full, por = search(spec, False), search(spec, True)
    assert full.exhaustive and por.exhaustive
    assert set(por.kinds) <= set(full.kinds)
    assert (not por.terminal or full.terminal) and (not por.traps or full.traps)
