"""The contract's exact rules (docs/rules.md "Semantic rules"), pinned with tiny specs, mostly
stepped one action at a time through the Model API (`initial_state`, `actions`,
`next_state`/`apply`, `format_action`): an action is picked by its printed form, and
enabledness and resulting states are asserted exactly.
"""
from __future__ import annotations

import json

import pytest

from pipeproof.checker.engines.verifier import verify
from tests.rules_support import Run, load_roles


# ------------------------------------------------------------------------------- helpers
# (spec_text, load_roles and Run, shared with other rules' tests: tests/rules_support.py)

def run_verify(roles, strict_exit=False, **kw):
    return verify(load_roles(roles, **kw), strict_exit=strict_exit)


def P(body, **kw):
    return {"name": "P", "side": "producer", "body": body, **kw}


def C(body, **kw):
    return {"name": "C", "side": "consumer", "body": body, **kw}


# ------------------------------------------------------------------ which phase a wait means

def test_producer_starts_at_1_consumer_at_0_waits_use_parity():
    """Producer phase 1 passes wait_empty on a fresh barrier; consumer phase 0 does not pass
    wait_full until the producer's arrive completes full phase 0; after a lap the producer
    (phase 2) needs empty phase 0 to complete."""
    r = Run([P(["wait_empty", "arrive_full", "advance"]), C(["wait_full", "arrive_empty", "advance"])],
            items=2)
    assert r.agent("P[0]")["phase"] == 1 and r.agent("C[0]")["phase"] == 0
    assert r.enabled() == ["P[0].wait_empty(stage=0, phase=1)"]
    assert r.do("P[0].wait_empty(stage=0, phase=1)") == ()
    assert r.enabled() == ["P[0].arrive_full(stage=0, phase=1)"]
    r.do("P[0].arrive_full(stage=0, phase=1)")
    assert r.sig("cta0.full[0]") == {"phase_no": 1, "pending": 1, "tx": 0}
    assert r.enabled() == ["P[0].advance(stage=0, phase=1)", "C[0].wait_full(stage=0, phase=0)"]
    r.do("P[0].advance(stage=0, phase=1)")
    assert r.agent("P[0]")["phase"] == 2 and r.agent("P[0]")["stage"] == 0
    # empty phase_no 0, producer phase 2: same parity, not ready.
    assert r.enabled() == ["C[0].wait_full(stage=0, phase=0)"]
    r.do("C[0].wait_full(stage=0, phase=0)")
    r.do("C[0].arrive_empty(stage=0, phase=0)")
    assert r.sig("cta0.empty[0]")["phase_no"] == 1
    assert r.enabled() == ["P[0].wait_empty(stage=0, phase=2)", "C[0].advance(stage=0, phase=0)"]


def test_initial_phase_override_changes_which_phase_is_waited():
    """initial_phase = 0 on a producer: its first wait_empty refers to phase 0 of a fresh
    barrier, which never completes: deadlock in the initial state."""
    r = Run([P(["wait_empty", "arrive_full"], initial_phase=0), C(["wait_full"])])
    assert r.enabled() == []
    assert r.state_kinds() == ("deadlock",)
    res = run_verify([P(["wait_empty", "arrive_full"], initial_phase=0), C(["wait_full"])])
    assert (res.verdict, res.kinds, res.depth) == ("violation", ("deadlock",), 0)


def test_advance_wraps_stage_and_counts_laps():
    """advance: stage += 1; at `stages` the stage is 0 and phase += 1 (a monotone lap count)."""
    r = Run([C(["advance"], items=7)], stages=3)
    seen = []
    for _ in range(7):
        a = r.agent("C[0]")
        seen.append((a["stage"], a["phase"]))
        r.do(f"C[0].advance(stage={a['stage']}, phase={a['phase']})")
    a = r.agent("C[0]")
    seen.append((a["stage"], a["phase"]))
    assert seen == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2), (1, 2)]
    assert a["done"] is True


def test_initial_stage_and_reset():
    """Agents start at initial_stage; reset restores stage and phase to the initial values."""
    r = Run([C(["advance", "advance", "reset", "advance"], initial_stage=1, initial_phase=4)],
            stages=3)
    assert (r.agent("C[0]")["stage"], r.agent("C[0]")["phase"]) == (1, 4)
    r.do("C[0].advance(stage=1, phase=4)")
    r.do("C[0].advance(stage=2, phase=4)")
    assert (r.agent("C[0]")["stage"], r.agent("C[0]")["phase"]) == (0, 5)
    r.do("C[0].reset(stage=0, phase=5)")
    assert (r.agent("C[0]")["stage"], r.agent("C[0]")["phase"]) == (1, 4)
    r.do("C[0].advance(stage=1, phase=4)")
    assert (r.agent("C[0]")["stage"], r.agent("C[0]")["phase"]) == (2, 4)


# -------------------------------------------------------------------------- phase_alias window

def _alias_run(p0, advances, completions, last_op):
    """W (initial phase p0) advances `advances` times on a 1-stage ring, then sits at
    `last_op`; A completes `completions` phases of empty[0] first."""
    roles = [{"name": "A", "side": "consumer", "body": ["arrive_empty"], "items": completions},
             {"name": "W", "side": "producer", "initial_phase": p0,
              "body": ["advance"] * advances + [last_op]}]
    r = Run(roles, items=1)
    for _ in range(completions):
        r.do("A[0].arrive_empty(stage=0, phase=0)")
    for i in range(advances):
        r.do(f"W[0].advance(stage=0, phase={p0 + i})")
    assert r.sig("cta0.empty[0]")["phase_no"] == completions
    assert r.agent("W[0]")["phase"] == p0 + advances
    return r


WINDOW_CASES = [(p0, adv, j) for p0 in (0, 1, 2, 3) for adv in (0, 1, 2, 3) for j in range(5)]


@pytest.mark.parametrize("p0,adv,j", WINDOW_CASES)
def test_phase_alias_window_at_blocking_wait(p0, adv, j):
    """An agent at a blocking wait at phase ph intends k = (ph - p0) - (p0 mod 2); it is a
    phase_alias (a property of the state) iff phase_no is not in {k, k+1}."""
    r = _alias_run(p0, adv, j, "wait_empty")
    k = adv - p0 % 2
    alias = j not in (k, k + 1)
    assert ("phase_alias" in r.state_kinds()) is alias
    # Enabledness is the parity rule, whether or not it aliases.
    ready = j % 2 != (p0 + adv) % 2
    printed = f"W[0].wait_empty(stage=0, phase={p0 + adv})"
    assert (printed in r.enabled()) is ready


@pytest.mark.parametrize("p0,adv,j", WINDOW_CASES)
def test_phase_alias_window_at_try(p0, adv, j):
    """A try_* step is evaluated like a blocking wait, as a step: it commits phase_alias iff
    phase_no is outside {k, k+1}; it is always enabled and sets ready to the parity answer."""
    r = _alias_run(p0, adv, j, "try_empty")
    k = adv - p0 % 2
    alias = j not in (k, k + 1)
    printed = f"W[0].try_empty(stage=0, phase={p0 + adv})"
    assert printed in r.enabled()
    # Sitting before a try is not a wait: no state-level alias.
    assert "phase_alias" not in r.state_kinds()
    assert r.do(printed) == (("phase_alias",) if alias else ())
    assert r.agent("W[0]")["ready"] is (j % 2 != (p0 + adv) % 2)


def test_phase_alias_not_evaluated_before_reaching_the_wait():
    """Only an agent sitting at a blocking wait is evaluated: the same phase one op earlier is
    no violation."""
    r = Run([C(["advance", "arrive_full", "wait_full"])])
    r.do("C[0].advance(stage=0, phase=0)")
    # phase 1 means signal phase 1; full is at phase_no 0: outside, but C is at arrive_full.
    assert r.state_kinds() == ()
    r.do("C[0].arrive_full(stage=0, phase=1)")
    assert r.sig("cta0.full[0]")["phase_no"] == 1
    # Now in the window (phase_no 1 in {1, 2}): blocked (same parity) but no alias.
    assert r.state_kinds() == ("deadlock",)


def test_skipped_unless_ready_wait_is_not_evaluated():
    """A `wait unless=ready` skipped because ready is true is not evaluated for phase_alias;
    the same position with a plain wait is."""
    body = ["try_empty", "advance", "advance"]
    for last, alias in (("wait_empty unless=ready", False), ("wait_empty", True)):
        r = Run([P(body + [last])])
        assert r.do("P[0].try_empty(stage=0, phase=1)") == ()
        assert r.agent("P[0]")["ready"] is True
        r.do("P[0].advance(stage=0, phase=1)")
        r.do("P[0].advance(stage=0, phase=2)")
        # phase 3 -> k = 1; empty at phase_no 0: outside the window.
        assert ("phase_alias" in r.state_kinds()) is alias, last
    res = run_verify([P(body + ["wait_empty unless=ready"])])
    assert res.verdict == "ok"
    res = run_verify([P(body + ["wait_empty"])])
    # phase 3 has parity 1, phase_no 0 parity 0: the aliased wait would even pass.
    assert (res.kinds, res.depth) == (("phase_alias",), 3)


def test_unless_ready_wait_with_ready_false_is_evaluated():
    """With ready false a `wait unless=ready` is a normal blocking wait, and evaluated."""
    r = Run([C(["try_full", "advance", "wait_full unless=ready"])])
    r.do("C[0].try_full(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is False
    r.do("C[0].advance(stage=0, phase=0)")
    # phase 1 (k = 1), full at phase_no 0: outside.
    assert "phase_alias" in r.state_kinds()


def test_phase_alias_reported_by_verify_with_intended_phase_in_reason():
    """verify reports a blocking-wait alias as a state violation at the depth of the state."""
    res = run_verify([C(["advance", "advance", "wait_full"], items=1),
                      P(["arrive_full", "advance", "wait_empty"], items=1)])
    assert "phase_alias" in res.kinds
    tr = res.traces["phase_alias"]
    assert len(tr.steps) == res.depth
    assert "meaning signal phase" in tr.reason


# ------------------------------------------------------------------------------- unless=ready

UNLESS_BODY = ["try_full", "wait_full unless=ready", "advance", "wait_full unless=ready",
               "reset", "advance", "try_full", "wait_full unless=ready"]


def _without_pc(view, agent):
    v = json.loads(json.dumps(view))
    v["agents"][agent].pop("pc")
    v["agents"][agent].pop("op")
    return v


def test_unless_ready_skip_is_one_step_and_ready_changes_only_by_try():
    r = Run([P(["arrive_full"]), C(UNLESS_BODY)])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    assert r.sig("cta0.full[0]")["phase_no"] == 1
    r.do("C[0].try_full(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is True
    before = r.view
    r.do("C[0].wait_full(stage=0, phase=0, unless=ready)")
    after = r.view
    # One step that only moves the agent's program position.
    assert after["agents"]["C[0]"]["pc"] == before["agents"]["C[0]"]["pc"] + 1
    assert _without_pc(after, "C[0]") == _without_pc(before, "C[0]")
    r.do("C[0].advance(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is True  # advance keeps it
    # Phase 1: the full signal (phase_no 1) is not ready for it, but the wait is skipped.
    assert r.enabled() == ["C[0].wait_full(stage=0, phase=1, unless=ready)"]
    before = r.view
    r.do("C[0].wait_full(stage=0, phase=1, unless=ready)")
    assert _without_pc(r.view, "C[0]") == _without_pc(before, "C[0]")
    r.do("C[0].reset(stage=0, phase=1)")
    assert r.agent("C[0]")["ready"] is True  # reset does not restore ready
    assert r.agent("C[0]")["phase"] == 0
    r.do("C[0].advance(stage=0, phase=0)")
    r.do("C[0].try_full(stage=0, phase=1)")
    assert r.agent("C[0]")["ready"] is False  # only a try changes it
    assert r.enabled() == []  # a normal wait now, and full is not ready for phase 1
    assert r.state_kinds() == ("deadlock",)


def test_unless_ready_with_ready_false_waits_and_observes():
    """ready false: a normal wait; it blocks until ready, passes in one step, ready stays
    false (a wait does not set it)."""
    r = Run([P(["arrive_full"]), C(["try_full", "wait_full unless=ready", "read"])])
    r.do("C[0].try_full(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is False
    assert r.enabled() == ["P[0].arrive_full(stage=0, phase=1)"]
    r.do("P[0].arrive_full(stage=0, phase=1)")
    assert "C[0].wait_full(stage=0, phase=0, unless=ready)" in r.enabled()
    r.do("C[0].wait_full(stage=0, phase=0, unless=ready)")
    assert r.agent("C[0]")["ready"] is False
    assert r.agent("C[0]")["op"] == "read"


def test_try_has_no_spurious_false_and_never_blocks():
    r = Run([C(["try_full", "try_full"])])
    assert r.enabled() == ["C[0].try_full(stage=0, phase=0)"]
    r.do("C[0].try_full(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is False
    r2 = Run([P(["arrive_full"]), C(["try_full"])])
    r2.do("P[0].arrive_full(stage=0, phase=1)")
    r2.do("C[0].try_full(stage=0, phase=0)")
    assert r2.agent("C[0]")["ready"] is True


# ----------------------------------------------------------------------- done with a slot

def test_overwrite_while_reader_has_not_read():
    """A write of item 1 into a slot holding item 0 that a reader has yet to read there."""
    r = Run([P(["write", "advance"], items=2), C(["wait_full", "read", "advance"], items=2)])
    assert r.do("P[0].write(stage=0, item=0, phase=1)") == ()
    r.do("P[0].advance(stage=0, phase=1)")
    assert r.do("P[0].write(stage=0, item=1, phase=2)") == ("overwrite_before_drain",)
    assert r.view["slots"]["cta0.slot[0]"] == 1


def test_overwrite_after_reader_has_read_is_fine():
    r = Run([P(["write", "arrive_full", "advance"], items=2),
             C(["wait_full", "read", "advance"], items=2)])
    r.do("P[0].write(stage=0, item=0, phase=1)")
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].wait_full(stage=0, phase=0)")
    assert r.do("C[0].read(stage=0, item=0, phase=0)") == ()
    r.do("P[0].advance(stage=0, phase=1)")
    assert r.do("P[0].write(stage=0, item=1, phase=2)") == ()


def test_releasing_before_reading_does_not_count():
    """The consumer releases the slot before reading it: the producer may overwrite."""
    res = run_verify([P(["wait_empty", "write", "arrive_full", "advance"]),
                      C(["wait_full", "arrive_empty", "read", "advance"])], items=2)
    assert res.kinds == ("overwrite_before_drain",)
    acts = [s.action for s in res.traces["overwrite_before_drain"].steps]
    assert acts[-1] == "P[0].write(stage=0, item=1, phase=2)"
    assert "C[0].arrive_empty(stage=0, phase=0)" in acts
    assert not any(a.startswith("C[0].read") for a in acts)
    ok = run_verify([P(["wait_empty", "write", "arrive_full", "advance"]),
                     C(["wait_full", "read", "arrive_empty", "advance"])], items=2)
    assert ok.verdict == "ok"


def test_all_reads_of_the_item_must_be_done():
    """A reader that reads an item twice, releasing in between, still needs it."""
    res = run_verify([P(["wait_empty", "write", "arrive_full", "advance"]),
                      C(["wait_full", "read", "arrive_empty", "read", "advance"])], items=2)
    assert res.kinds == ("overwrite_before_drain",)


def test_same_tag_again_is_not_an_overwrite():
    r = Run([P(["write", "write"]), C(["wait_full", "read"])])
    assert r.do("P[0].write(stage=0, item=0, phase=1)") == ()
    assert r.do("P[0].write(stage=0, item=0, phase=1)") == ()


def test_two_writers_of_the_same_item_are_not_an_overwrite():
    res = run_verify([P(["write", "arrive_full"], count=2), C(["wait_full", "read"])], pac=2)
    assert res.verdict == "ok"


@pytest.mark.parametrize("reader_stage,overwrite", [(0, True), (1, False)])
def test_reader_of_the_item_at_another_stage_does_not_count(reader_stage, overwrite):
    """Producer stores item 0 at stage 0, item 1 at stage 1, item 2 at stage 0. A reader that
    reads item 0 at stage 1 (initial_stage 1) does not need stage 0's copy of item 0."""
    r = Run([P(["write", "advance"], items=3),
             C(["read", "advance"], items=3, initial_stage=reader_stage)], stages=2)
    r.do("P[0].write(stage=0, item=0, phase=1)")
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].write(stage=1, item=1, phase=1)")
    r.do("P[0].advance(stage=1, phase=1)")
    kinds = r.do("P[0].write(stage=0, item=2, phase=2)")
    assert kinds == (("overwrite_before_drain",) if overwrite else ())


def test_landing_copy_is_an_overwrite_too():
    """A landing copy stores its tag: the same rule applies as for a write."""
    r = Run([P(["copy 16", "advance"], items=2), C(["read", "advance"], items=2)])
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)")
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].copy(stage=0, item=1, phase=2, bytes=16)")
    assert r.do("cta0.copy.land(stage=0, item=0, bytes=16)") == ()
    assert r.view["slots"]["cta0.slot[0]"] == 0
    assert r.do("cta0.copy.land(stage=0, item=1, bytes=16)") == ("overwrite_before_drain",)


def test_read_of_wrong_tag_is_read_before_fill():
    r = Run([P(["write", "advance"], items=2), C(["read"], items=2)])
    assert r.do("C[0].read(stage=0, item=0, phase=0)") == ("read_before_fill",)
    r = Run([P(["write", "advance"], items=2), C(["read"], items=2)])
    r.do("P[0].write(stage=0, item=0, phase=1)")
    assert r.do("C[0].read(stage=0, item=0, phase=0)") == ()
    # the consumer's second item is item 1, the slot holds 0
    assert r.do("C[0].read(stage=0, item=1, phase=0)") == ("read_before_fill",)


# --------------------------------------------------------------------------------- in flight

def test_copy_in_flight_into_the_slot_makes_a_read_a_read_before_fill():
    """The slot already holds the reader's item, but a copy into it is still in flight (here
    the next item's, issued into the one stage before the read)."""
    r = Run([P(["copy 16", "advance"], items=2), C(["read", "advance"], items=2)], stages=1)
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)")
    r.do("cta0.copy.land(stage=0, item=0, bytes=16)")
    assert r.view["slots"]["cta0.slot[0]"] == 0
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].copy(stage=0, item=1, phase=2, bytes=16)")
    assert r.view["inflight"] == [{"kind": "copy", "cta": 0, "ring": "main", "stage": 0, "tag": 1, "bytes": 16}]
    assert r.try_("C[0].read(stage=0, item=0, phase=0)") == ("read_before_fill",)


def test_second_copy_of_a_stage_is_a_part_of_its_own():
    """Two copies per stage fill two parts (docs/rules.md "Slot parts"): after the first lands
    the slot holds the item in part 0 only, and a read is read_before_fill until the second
    lands, whether or not it was issued yet."""
    r = Run([P(["copy 16", "copy 16"]), C(["read", "advance"])])
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)")
    r.do("cta0.copy.land(stage=0, item=0, bytes=16)")
    assert r.view["slots"]["cta0.slot[0]"] == [0, -1]
    assert r.try_("C[0].read(stage=0, item=0, phase=0)") == ("read_before_fill",)
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)")
    assert r.view["inflight"] == [{"kind": "copy", "cta": 0, "ring": "main", "stage": 0, "tag": 0,
                                   "bytes": 16, "part": 1}]
    assert r.try_("C[0].read(stage=0, item=0, phase=0)") == ("read_before_fill",)
    r.do("cta0.copy.land(stage=0, item=0, bytes=16)")
    assert r.view["slots"]["cta0.slot[0]"] == [0, 0]
    assert r.do("C[0].read(stage=0, item=0, phase=0)") == ()


def test_copy_in_flight_into_another_slot_does_not_matter():
    r = Run([P(["write", "advance", "copy 16"]), C(["read", "advance"])], stages=2)
    r.do("P[0].write(stage=0, item=0, phase=1)")
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].copy(stage=1, item=0, phase=1, bytes=16)")
    assert len(r.view["inflight"]) == 1
    assert r.do("C[0].read(stage=0, item=0, phase=0)") == ()


def test_deadlock_requires_nothing_in_flight():
    """All agents blocked or done while a copy is in flight is no deadlock; once it lands
    and nobody can move, it is."""
    r = Run([P(["copy 16"]), C(["wait_full", "read"])])
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)")
    assert r.enabled() == ["cta0.copy.land(stage=0, item=0, bytes=16)"]
    assert r.state_kinds() == ()
    r.do("cta0.copy.land(stage=0, item=0, bytes=16)")
    assert r.sig("cta0.full[0]") == {"phase_no": 0, "pending": 1, "tx": -16}
    assert r.enabled() == []
    assert r.state_kinds() == ("deadlock",)
    res = run_verify([P(["copy 16"]), C(["wait_full", "read"])])
    assert (res.kinds, res.depth) == (("deadlock",), 2)


def test_commit_in_flight_is_not_deadlock():
    r = Run([C(["commit_empty"]), P(["advance", "wait_empty"])])
    r.do("C[0].commit_empty(stage=0, phase=0)")
    r.do("P[0].advance(stage=0, phase=1)")
    assert r.enabled() == ["cta0.commit.fire(stage=0, n=1)"]
    assert r.state_kinds() == ()
    r.do("cta0.commit.fire(stage=0, n=1)")
    assert r.sig("cta0.empty[0]")["phase_no"] == 1
    assert r.enabled() == ["P[0].wait_empty(stage=0, phase=2)"]


def test_finished_agents_only_is_not_deadlock():
    res = run_verify([P(["write"]), C(["advance"])])
    assert res.verdict == "ok"


@pytest.mark.parametrize("op,printed", [
    ("commit_empty", "X[0].commit_empty(stage=0, phase=1)"),
    ("copy 16", "X[0].copy(stage=0, item=0, phase=1, bytes=16)"),
])
def test_cta_gone_with_its_own_async_still_in_flight_is_a_warning(op, printed):
    """The step that makes the CTA gone while its own copy or commit still targets it: the
    warning unawaited_at_exit, verdict ok (DESIGN, revised 2026-12-02); with strict_exit the
    violation inflight_at_exit at depth 1, as PTX reads it."""
    roles = [{"name": "X", "side": "producer", "body": [op]}]
    r = Run(roles)
    assert r.do(printed) == ()
    res = run_verify(roles)
    assert (res.verdict, res.kinds) == ("ok", ())
    assert list(res.warnings) == ["unawaited_at_exit"]
    assert [s.action for s in res.warnings["unawaited_at_exit"].steps] == [printed]
    strict = Run(roles, strict_exit=True)
    assert strict.do(printed) == ("inflight_at_exit",)
    res = run_verify(roles, strict_exit=True)
    assert (res.kinds, res.depth, res.warnings) == (("inflight_at_exit",), 1, {})


def test_cta_not_gone_while_another_agent_runs():
    """The issuer finishing is fine while another agent of its CTA still runs; the landing
    lets that agent finish."""
    r = Run([P(["copy 16"]), C(["wait_full"])], pac=1)
    assert r.do("P[0].copy(stage=0, item=0, phase=1, bytes=16)") == ()
    res = run_verify([P(["expect_tx 16", "copy 16"]), C(["wait_full", "read"])])
    assert res.verdict == "ok"


def test_last_agent_finishing_after_the_landing_is_fine():
    res = run_verify([P(["copy 16", "expect_tx 16"]), C(["wait_full", "read"])])
    assert res.verdict == "ok"


# ------------------------------------------------------------------------------ over_arrival

def test_run_ahead_clause_unobserved_phase_1():
    """Completing phase j >= 1 with no wait/try passed during phase_no = j: over_arrival."""
    r = Run([P(["arrive_full", "arrive_full", "arrive_full"]), C(["wait_full"])])
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ()  # phase 0: j = 0 is never flagged
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ("over_arrival",)
    assert r.sig("cta0.full[0]")["phase_no"] == 2


def test_run_ahead_clause_observed_by_wait():
    r = Run([P(["arrive_full", "arrive_full", "arrive_full"]),
             C(["wait_full", "advance", "wait_full"])])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].wait_full(stage=0, phase=0)")  # passes during phase_no 1
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ()
    # Phase 2 has not been observed (the consumer's next wait has not passed yet).
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ("over_arrival",)


def test_run_ahead_clause_observation_belongs_to_one_phase():
    """A wait that passed during phase_no 1 does not cover the completion of phase 2."""
    r = Run([P(["arrive_full", "arrive_full", "arrive_full"]),
             C(["wait_full", "advance", "wait_full"])])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].wait_full(stage=0, phase=0)")
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].advance(stage=0, phase=0)")
    r.do("C[0].wait_full(stage=0, phase=1)")  # passes during phase_no 2
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ()


def test_run_ahead_clause_try_that_passed_counts():
    r = Run([P(["arrive_full", "arrive_full"]), C(["try_full"])])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].try_full(stage=0, phase=0)")
    assert r.agent("C[0]")["ready"] is True
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ()


def test_run_ahead_clause_try_that_failed_does_not_count():
    r = Run([P(["arrive_full", "arrive_full"]), C(["advance", "try_full"])])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].advance(stage=0, phase=0)")
    r.do("C[0].try_full(stage=0, phase=1)")  # phase_no 1, phase 1: false
    assert r.agent("C[0]")["ready"] is False
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ("over_arrival",)


def test_run_ahead_clause_skipped_wait_does_not_observe():
    """A skipped `unless=ready` wait does not look at the signal, so it observes nothing."""
    r = Run([P(["arrive_full", "arrive_full", "arrive_full"]),
             C(["wait_full", "try_full", "advance", "wait_full unless=ready"])])
    r.do("P[0].arrive_full(stage=0, phase=1)")
    r.do("C[0].wait_full(stage=0, phase=0)")
    r.do("C[0].try_full(stage=0, phase=0)")          # ready true (phase_no 1)
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ()  # phase 1 observed
    r.do("C[0].advance(stage=0, phase=0)")
    r.do("C[0].wait_full(stage=0, phase=1, unless=ready)")   # skipped at phase_no 2
    assert r.do("P[0].arrive_full(stage=0, phase=1)") == ("over_arrival",)


def test_over_arrival_trap_clause():
    r = Run([P(["arrive_full 2"]), C(["wait_full"])], pac=1)
    assert r.try_("P[0].arrive_full(stage=0, phase=1, n=2)") == ("over_arrival",)
    r = Run([P(["arrive_full 2"]), C(["wait_full"])], pac=2)
    assert r.do("P[0].arrive_full(stage=0, phase=1, n=2)") == ()
    assert r.sig("cta0.full[0]") == {"phase_no": 1, "pending": 2, "tx": 0}


def test_verify_reports_run_ahead_over_arrival():
    res = run_verify([P(["arrive_full", "arrive_full"]), C(["try_full", "wait_full"])])
    assert (res.kinds, res.depth) == (("over_arrival",), 2)
    assert [s.action for s in res.traces["over_arrival"].steps] == \
        ["P[0].arrive_full(stage=0, phase=1)"] * 2


# ------------------------------------------------------------------------------------ @leader

def test_leader_ops_absent_for_non_leaders():
    r = Run([P(["wait_empty", "arrive_full @leader", "advance"], count=3),
             C(["wait_full", "arrive_empty", "advance"])], cac=1)
    ops = [[op.name for op, _ in a.ops] for a in r.m.agents]
    assert ops == [["wait_empty", "arrive_full", "advance"], ["wait_empty", "advance"],
                   ["wait_empty", "advance"], ["wait_full", "arrive_empty", "advance"]]
    r.do("P[1].wait_empty(stage=0, phase=1)")
    # P[1]'s next op is advance: it has no arrive_full at all.
    assert r.agent("P[1]")["op"] == "advance"
    assert "P[1].advance(stage=0, phase=1)" in r.enabled()
    r.do("P[0].wait_empty(stage=0, phase=1)")
    assert r.agent("P[0]")["op"] == "arrive_full @leader"


def test_leader_only_arrive_holds_non_leader_arrive_over_arrives():
    ok = run_verify([P(["wait_empty @leader", "arrive_full @leader", "advance"], count=2),
                     C(["wait_full", "arrive_empty", "advance"])], items=2, cac=1)
    assert ok.verdict == "ok"
    bad = run_verify([P(["wait_empty @leader", "arrive_full", "advance"], count=2),
                      C(["wait_full", "arrive_empty", "advance"])], items=2, cac=1)
    assert bad.verdict == "violation" and "over_arrival" in bad.kinds
    assert any(s.action.startswith("P[1].arrive_full")
               for s in bad.traces["over_arrival"].steps)


def test_leader_is_index_0_in_each_cta():
    r = Run([P(["arrive_full @leader"], count=2), C(["advance"])], cluster=2, pac=1)
    lens = {a.name: len(a.ops) for a in r.m.agents}
    assert lens == {"cta0.P[0]": 1, "cta0.P[1]": 0, "cta0.C[0]": 1,
                    "cta1.P[0]": 1, "cta1.P[1]": 0, "cta1.C[0]": 1}
    assert r.agent("cta0.P[1]")["done"] and r.agent("cta1.P[1]")["done"]


# -------------------------------------------------------------------------------------- drain

@pytest.mark.parametrize("stages", [1, 2, 3])
def test_drain_is_stages_times_wait_empty_and_advance(stages):
    """drain: `stages` steps, each a wait_empty on the current stage followed by advance."""
    r = Run([P(["drain"]), C(["arrive_empty", "advance"], items=stages)], stages=stages,
            items=1)
    assert len(r.m.agents[0].ops) == stages
    # Producer at phase 1 on fresh empties: every drain step passes.
    for s in range(stages):
        printed = f"P[0].drain(stage={s}, phase=1)"
        assert printed in r.enabled()
        r.do(printed)
    assert r.agent("P[0]")["done"] is True
    assert (r.agent("P[0]")["stage"], r.agent("P[0]")["phase"]) == (0, 2)


def test_drain_blocks_on_each_empty_stage():
    """Second lap: each drain step waits for that stage's empty phase to complete."""
    r = Run([P(["advance", "advance", "drain"]), C(["arrive_empty", "advance"], items=2)],
            stages=2)
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].advance(stage=1, phase=1)")
    assert r.enabled() == ["C[0].arrive_empty(stage=0, phase=0)"]
    r.do("C[0].arrive_empty(stage=0, phase=0)")
    assert "P[0].drain(stage=0, phase=2)" in r.enabled()
    r.do("P[0].drain(stage=0, phase=2)")
    assert (r.agent("P[0]")["stage"], r.agent("P[0]")["phase"]) == (1, 2)
    assert r.enabled() == ["C[0].advance(stage=0, phase=0)"]
    r.do("C[0].advance(stage=0, phase=0)")
    r.do("C[0].arrive_empty(stage=1, phase=0)")
    r.do("P[0].drain(stage=1, phase=2)")
    assert (r.agent("P[0]")["stage"], r.agent("P[0]")["phase"]) == (0, 3)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_drain_same_verdicts_as_explicit_tail(stages):
    body_p = ["wait_empty", "write", "arrive_full", "advance"]
    body_c = ["wait_full", "read", "arrive_empty", "advance"]
    for c_items in (3, 2):  # 2: the consumer never releases the last slot -> deadlock
        a = run_verify([P(body_p, epilogue=["drain"]), C(body_c, items=c_items)],
                       stages=stages, items=3)
        b = run_verify([P(body_p, epilogue=["wait_empty", "advance"] * stages),
                        C(body_c, items=c_items)], stages=stages, items=3)
        assert (a.verdict, a.kinds) == (b.verdict, b.kinds)
        assert a.verdict == ("ok" if c_items == 3 else "violation")


def test_drain_observes_the_empty_signal():
    """Each drain step is a wait: it counts as observing the empty phase (run-ahead clause)."""
    r = Run([P(["advance", "drain"]), C(["arrive_empty", "arrive_empty"])])
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("C[0].arrive_empty(stage=0, phase=0)")
    r.do("P[0].drain(stage=0, phase=2)")
    assert r.do("C[0].arrive_empty(stage=0, phase=0)") == ()


# ------------------------------------------------------------------------------ named barrier

BAR = '\n[barrier.bar]\nroles = ["P", "C"]\n'


def test_named_barrier_releases_everyone_in_one_step():
    r = Run([P(["sync bar", "advance"], count=2), C(["sync bar", "advance"])], barriers=BAR)
    r.do("P[0].sync(bar)")
    assert r.agent("P[0]")["at_sync"] is True and r.view["barriers"]["cta0.bar"] == {"arrivals": 1, "generation": 0}
    assert "P[0].sync(bar)" not in r.enabled()
    r.do("C[0].sync(bar)")
    assert r.view["barriers"]["cta0.bar"] == {"arrivals": 2, "generation": 0}
    assert r.enabled() == ["P[1].sync(bar)"]
    r.do("P[1].sync(bar)")
    v = r.view
    assert v["barriers"]["cta0.bar"] == {"arrivals": 0, "generation": 1}
    for name in ("P[0]", "P[1]", "C[0]"):
        assert v["agents"][name]["at_sync"] is False
        assert v["agents"][name]["op"] == "advance"
    assert r.enabled() == ["P[0].advance(stage=0, phase=1)", "P[1].advance(stage=0, phase=1)",
                           "C[0].advance(stage=0, phase=0)"]


def test_named_barrier_count_restarts_each_generation():
    r = Run([P(["sync bar"], items=2), C(["sync bar"], items=2)], items=2, barriers=BAR)
    r.do("P[0].sync(bar)")
    r.do("C[0].sync(bar)")
    assert r.view["barriers"]["cta0.bar"] == {"arrivals": 0, "generation": 1}
    r.do("C[0].sync(bar)")
    assert r.agent("C[0]")["at_sync"] is True and r.view["barriers"]["cta0.bar"] == {"arrivals": 1, "generation": 1}
    r.do("P[0].sync(bar)")
    assert r.agent("C[0]")["done"] and r.agent("P[0]")["done"]


def test_named_barrier_explicit_count_and_deadlock():
    """count = K overrides the number of agents: K = 3 with two users never releases."""
    res = run_verify([P(["sync bar"]), C(["sync bar"])],
                     barriers='\n[barrier.bar]\nroles = ["P", "C"]\ncount = 3\n')
    assert (res.kinds, res.depth) == (("deadlock",), 2)
    res = run_verify([P(["sync bar"]), C(["sync bar"])],
                     barriers='\n[barrier.bar]\nroles = ["P", "C"]\ncount = 1\n')
    assert res.verdict == "ok"


def test_named_barrier_orders_a_handoff():
    """sync as the only synchronisation: write; sync | sync; read holds."""
    res = run_verify([P(["write", "sync bar"]), C(["sync bar", "read"])], barriers=BAR)
    assert res.verdict == "ok"
    res = run_verify([P(["sync bar", "write"]), C(["sync bar", "read"])], barriers=BAR)
    assert res.kinds == ("read_before_fill",)


def test_named_barrier_is_per_cta():
    r = Run([P(["sync bar"]), C(["sync bar"])], barriers=BAR, cluster=2)
    r.do("cta0.P[0].sync(bar)")
    r.do("cta1.C[0].sync(bar)")
    v = r.view
    assert v["barriers"] == {"cta0.bar": {"arrivals": 1, "generation": 0},
                            "cta1.bar": {"arrivals": 1, "generation": 0}}
    assert v["agents"]["cta0.P[0]"]["at_sync"] and v["agents"]["cta1.C[0]"]["at_sync"]
    r.do("cta0.C[0].sync(bar)")
    v = r.view
    assert v["barriers"] == {"cta0.bar": {"arrivals": 0, "generation": 1},
                            "cta1.bar": {"arrivals": 1, "generation": 0}}
    assert v["agents"]["cta0.P[0]"]["done"] and not v["agents"]["cta1.C[0]"]["done"]


# ---------------------------------------------------------------------------- cluster targets

@pytest.mark.parametrize("to,dests", [
    ("self", [1]), ("leader", [0]), ("peer", [2]), ("all", [0, 1, 2]),
])
def test_cluster_targets_of_arrive(to, dests):
    """From CTA 1 of 3: self = 1, leader = 0, peer = 2, all = 0, 1, 2 (at once)."""
    r = Run([P([f"arrive_full to={to}"])], cluster=3, pac=5)
    suffix = "" if to == "self" else f", to={to}"
    r.do(f"cta1.P[0].arrive_full(stage=0, phase=1{suffix})")
    pend = {c: r.sig(f"cta{c}.full[0]")["pending"] for c in range(3)}
    assert pend == {c: 4 if c in dests else 5 for c in range(3)}


def test_cluster_peer_of_the_last_cta_is_cta_0():
    r = Run([C(["arrive_empty to=peer"])], cluster=3, cac=2)
    r.do("cta2.C[0].arrive_empty(stage=0, phase=0, to=peer)")
    assert [r.sig(f"cta{c}.empty[0]")["pending"] for c in range(3)] == [1, 2, 2]


@pytest.mark.parametrize("to,dests", [
    ("self", [1]), ("leader", [0]), ("peer", [2]), ("all", [0, 1, 2]),
])
def test_cluster_targets_of_expect_tx(to, dests):
    r = Run([P([f"expect_tx 32 to={to}"])], cluster=3, pac=2)
    suffix = "" if to == "self" else f", to={to}"
    r.do(f"cta1.P[0].expect_tx(stage=0, phase=1, bytes=32{suffix})")
    got = {c: r.sig(f"cta{c}.full[0]") for c in range(3)}
    for c in range(3):
        assert got[c] == ({"phase_no": 0, "pending": 1, "tx": 32} if c in dests
                          else {"phase_no": 0, "pending": 2, "tx": 0})


def test_cluster_copy_to_all_is_one_transfer_per_cta():
    r = Run([P(["copy 64 to=all"], count=1), C(["wait_full"])], cluster=2, pac=1)
    r.do("cta0.P[0].copy(stage=0, item=0, phase=1, bytes=64, to=all)")
    inflight = sorted((e["cta"], e["tag"], e["bytes"]) for e in r.view["inflight"])
    assert inflight == [(0, 0, 64), (1, 0, 64)]
    r.do("cta1.copy.land(stage=0, item=0, bytes=64)")
    # each CTA's producer multicasts its own part into every CTA's slot: cta0's is part 0
    assert r.view["slots"] == {"cta0.slot[0]": [-1, -1], "cta1.slot[0]": [0, -1]}
    assert r.sig("cta1.full[0]")["tx"] == -64 and r.sig("cta0.full[0]")["tx"] == 0
    assert len(r.view["inflight"]) == 1


def test_cluster_commit_targets():
    r = Run([C(["commit_empty to=leader"])], cluster=2, cac=2)
    r.do("cta1.C[0].commit_empty(stage=0, phase=0, to=leader)")
    assert r.view["inflight"] == [{"kind": "commit", "cta": 0, "ring": "main", "stage": 0, "n": 1,
                                   "agent": "cta1.C[0]", "after": 0, "after_commits": 0}]


def test_cluster_of_one_every_target_is_self():
    for to in ("self", "leader", "peer", "all"):
        r = Run([P([f"arrive_full to={to}"])], pac=3)
        r.do("P[0].arrive_full(stage=0, phase=1)")
        assert r.sig("cta0.full[0]")["pending"] == 2


def test_cluster_waits_only_on_own_signals():
    """Only the owning CTA waits on a signal: cta1's consumer passes only on cta1.full."""
    r = Run([P(["arrive_full to=leader"]), C(["wait_full"])], cluster=2, pac=2)
    r.do("cta0.P[0].arrive_full(stage=0, phase=1, to=leader)")
    r.do("cta1.P[0].arrive_full(stage=0, phase=1, to=leader)")
    assert r.sig("cta0.full[0]")["phase_no"] == 1
    assert r.enabled() == ["cta0.C[0].wait_full(stage=0, phase=0)"]


def test_cluster_arrive_at_a_gone_cta_is_inflight_at_exit():
    """Any later arrive aimed at a CTA that is gone."""
    r = Run([P(["arrive_empty to=peer"])], cluster=2, cac=2)
    assert r.do("cta0.P[0].arrive_empty(stage=0, phase=1, to=peer)") == ()
    assert r.agent("cta0.P[0]")["done"]
    assert r.do("cta1.P[0].arrive_empty(stage=0, phase=1, to=peer)") == ("inflight_at_exit",)
    res = run_verify([P(["arrive_empty to=peer"])], cluster=2, cac=2)
    assert (res.kinds, res.depth) == (("inflight_at_exit",), 2)


def test_cluster_copy_landing_at_a_gone_cta():
    """Copies between CTAs and CTAs that are gone."""
    r = Run([P(["copy 16 to=peer"])], cluster=2)
    # cta0 issues a copy to cta1; cta0 is then gone (nothing in flight to cta0): fine.
    assert r.do("cta0.P[0].copy(stage=0, item=0, phase=1, bytes=16, to=peer)") == ()
    # cta1 issues a copy to cta0, which is gone, and itself exits with cta0's copy still
    # aimed at it: both are inflight_at_exit (a peer's copy, not its own).
    kinds = r.try_("cta1.P[0].copy(stage=0, item=0, phase=1, bytes=16, to=peer)")
    assert kinds == ("inflight_at_exit",)


# ------------------------------------------------------------------------------------- ties

def test_tie_of_three_step_kinds_at_depth_1():
    """Three kinds at depth 1: listed in the order of docs/model.md "Violation kinds", each with
    its own trace."""
    roles = [{"name": "T", "side": "producer", "body": [f"expect_tx {1 << 20}"]},
             {"name": "O", "side": "producer", "body": ["arrive_empty 2"]},
             {"name": "R", "side": "consumer", "body": ["read"]}]
    res = run_verify(roles, pac=3, cac=1)
    assert res.verdict == "violation"
    assert res.kinds == ("read_before_fill", "over_arrival", "tx_range")
    assert res.kind == "read_before_fill"
    assert res.depth == 1
    assert sorted(res.traces) == sorted(res.kinds)
    expect_action = {"read_before_fill": "R[0].read(stage=0, item=0, phase=0)",
                     "over_arrival": "O[0].arrive_empty(stage=0, phase=1, n=2)",
                     "tx_range": f"T[0].expect_tx(stage=0, phase=1, bytes={1 << 20})"}
    for kind, tr in res.traces.items():
        assert len(tr.steps) == 1
        assert tr.kind == kind
        assert tr.steps[0].action == expect_action[kind]
        assert kind in tr.steps[-1].violations


def test_tie_of_state_and_step_kinds_at_depth_2():
    """phase_alias (a state at depth 2) and over_arrival (a step at depth 2) tie."""
    roles = [C(["advance", "advance", "wait_full"]), P(["arrive_full", "arrive_full"])]
    res = run_verify(roles)
    assert (res.kinds, res.depth) == (("phase_alias", "over_arrival"), 2)
    assert res.kind == "phase_alias"
    assert {k: len(t.steps) for k, t in res.traces.items()} == {"phase_alias": 2,
                                                                "over_arrival": 2}
    assert [s.action for s in res.traces["over_arrival"].steps] == \
        ["P[0].arrive_full(stage=0, phase=1)"] * 2
    assert res.traces["over_arrival"].steps[-1].violations == ("over_arrival",)
    assert [s.action for s in res.traces["phase_alias"].steps] == \
        ["C[0].advance(stage=0, phase=0)", "C[0].advance(stage=0, phase=1)"]
    # A state violation: the last step itself commits nothing.
    assert res.traces["phase_alias"].steps[-1].violations == ()


def test_tie_of_deadlock_and_phase_alias():
    """Two properties of one state tie: deadlock first, phase_alias second, same trace length."""
    res = run_verify([C(["advance", "advance", "wait_full"])])
    assert (res.kinds, res.kind, res.depth) == (("deadlock", "phase_alias"), "deadlock", 2)
    for kind in res.kinds:
        assert [s.action for s in res.traces[kind].steps] == \
            ["C[0].advance(stage=0, phase=0)", "C[0].advance(stage=0, phase=1)"]
        assert res.traces[kind].kind == kind
    assert res.traces["deadlock"].reason == "C[0] waits on full[0] (phase 2)"


def test_deeper_kind_is_not_reported():
    """Only the kinds at the minimal depth: a read_before_fill at depth 1 hides an
    over_arrival at depth 2."""
    res = run_verify([P(["arrive_full", "arrive_full"]), C(["read", "wait_full"])])
    assert (res.kinds, res.depth) == (("read_before_fill",), 1)
    assert list(res.traces) == ["read_before_fill"]


def test_copy_lands_on_the_stage_it_was_issued_on():
    """A landing stores into the slot and completes tx on full[s] of the issue stage s, even
    after the issuer has moved on."""
    r = Run([P(["wait_empty", "expect_tx 32", "copy 32", "advance"], items=2),
             C(["wait_full", "read", "arrive_empty", "advance"], items=2)], stages=2)
    r.do("P[0].wait_empty(stage=0, phase=1)")
    r.do("P[0].expect_tx(stage=0, phase=1, bytes=32)")
    r.do("P[0].copy(stage=0, item=0, phase=1, bytes=32)")
    r.do("P[0].advance(stage=0, phase=1)")
    r.do("P[0].wait_empty(stage=1, phase=1)")
    r.do("P[0].expect_tx(stage=1, phase=1, bytes=32)")
    assert r.sig("cta0.full[1]") == {"phase_no": 0, "pending": 0, "tx": 32}
    r.do("cta0.copy.land(stage=0, item=0, bytes=32)")
    assert r.view["slots"] == {"cta0.slot[0]": 0, "cta0.slot[1]": -1}
    assert r.sig("cta0.full[0]") == {"phase_no": 1, "pending": 1, "tx": 0}
    assert r.sig("cta0.full[1]") == {"phase_no": 0, "pending": 0, "tx": 32}


def test_commit_n_fires_as_one_update():
    r = Run([C(["commit_empty 2", "advance"]), P(["advance", "wait_empty"])], stages=3, cac=2)
    r.do("C[0].commit_empty(stage=0, phase=0, n=2)")
    r.do("C[0].advance(stage=0, phase=0)")
    assert r.view["inflight"] == [{"kind": "commit", "cta": 0, "ring": "main", "stage": 0, "n": 2,
                                   "agent": "C[0]", "after": 0, "after_commits": 0}]
    assert r.do("cta0.commit.fire(stage=0, n=2)") == ()
    assert r.sig("cta0.empty[0]") == {"phase_no": 1, "pending": 2, "tx": 0}
    assert r.sig("cta0.empty[1]") == {"phase_no": 0, "pending": 2, "tx": 0}


def test_state_after_a_non_trap_violation_counts_at_the_same_depth():
    """Every kind at the minimal depth: the run-ahead over_arrival is no hardware trap, so
    the state it leads to is real, and its own properties (the consumer now waits at phase 0
    on a signal at phase_no 2: blocked for good and outside its window) are found at the
    same depth."""
    res = run_verify([P(["arrive_full", "arrive_full"]), C(["wait_full"])])
    assert res.depth == 2
    assert res.kinds == ("deadlock", "phase_alias", "over_arrival")
    for kind in res.kinds:
        assert [s.action for s in res.traces[kind].steps] == \
            ["P[0].arrive_full(stage=0, phase=1)"] * 2
    assert res.traces["over_arrival"].steps[-1].violations == ("over_arrival",)


def test_a_trap_ends_its_path():
    """An arrive above pending traps: nothing after it is explored (the consumer would be
    stuck for good, but no deadlock is reported)."""
    res = run_verify([P(["arrive_full 2"]), C(["wait_full"])])
    assert (res.kinds, res.depth) == (("over_arrival",), 1)
    res = run_verify([P([f"expect_tx {1 << 20}"]), C(["wait_full"])])
    assert (res.kinds, res.depth) == (("tx_range",), 1)
