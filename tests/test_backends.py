"""The signal backends against the measured H200 behaviour and Mojo's counter arithmetic.

Each nvidia test reproduces one row of the H200 probe table or one clause of the rule in
docs/rules.md "The update rule"; its docstring names the row ("Probe row ...") or, in quotes,
the docs/rules.md section it pins.
`nvidia.update(phase_no, pending, tx, expected, arrive_count, tx_delta)` is one atomic mbarrier
update: `mbarrier.arrive{, c}` is (c, 0), `arrive.expect_tx(b)` is (1, +b), a bare
`expect_tx(b)` is (0, +b), a copy landing (`complete_tx(b)`) is (0, -b).
`nvidia.ready(phase_no, p)` is `test_wait.parity(p)`.

The amd tests pin Mojo's `AmdCounterBackend` thresholds, with `phase +- 1` taken in UInt32.

The model-level tests at the end run small specs through the loader and `verify` and check
that the same behaviours surface as the contract's violation kinds
(docs/model.md "Violation kinds").
"""
from __future__ import annotations

import json

import pytest

from pipeproof.backends import amd, nvidia
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text

TX_LIMIT = (1 << 20) - 1
U32 = 1 << 32
TRAP_OVER, TRAP_TX, COMPLETED = nvidia.TRAP_OVER_ARRIVAL, nvidia.TRAP_TX_RANGE, nvidia.COMPLETED


def up(state, expected, arrive=0, tx=0):
    """Apply one update to a (phase_no, pending, tx) state; returns (state, outcome bits)."""
    ph, pend, t, bits = nvidia.update(state[0], state[1], state[2], expected, arrive, tx)
    return (int(ph), int(pend), int(t)), int(bits)


def parity(state, p):
    """`mbarrier.test_wait.parity(p)` on the state: 1 if the phase of parity p completed."""
    return int(bool(nvidia.ready(state[0], p)))


def fresh(count):
    return tuple(int(x) for x in nvidia.init(count))


# ============================================================================ nvidia: probes


def test_constants():
    """"The update rule": tx range is -(2^20-1) .. 2^20-1; outcome bits are distinct."""
    assert nvidia.TX_LIMIT == TX_LIMIT
    assert len({TRAP_OVER, TRAP_TX, COMPLETED}) == 3
    assert TRAP_OVER & TRAP_TX == 0 and TRAP_OVER & COMPLETED == 0 and TRAP_TX & COMPLETED == 0


@pytest.mark.parametrize("count", [1, 2, 3, 128, TX_LIMIT])
def test_init(count):
    """"NVIDIA mbarrier": init(n): phase=0; expected=pending=n; tx=0."""
    assert fresh(count) == (0, count, 0)


def test_fresh_barrier_parity_1_ready_parity_0_not():
    """Probe row 'fresh barrier: test parity 0 / parity 1' -> 0 / 1 ("phase -1" counts as
    complete, which is why producers start at phase 1)."""
    s = fresh(1)
    assert (parity(s, 0), parity(s, 1)) == (0, 1)
    # The agent's phase is a lap count: only its parity matters on nvidia.
    assert [parity(s, p) for p in range(6)] == [0, 1, 0, 1, 0, 1]


def test_one_arrive_on_count_1_completes_the_phase():
    """Probe row 'after one arrive on count-1: parity 0 / 1' -> 1 / 0 (now in phase 1)."""
    s, bits = up(fresh(1), 1, arrive=1)
    assert bits == COMPLETED
    assert s == (1, 1, 0)  # pending reloads from expected
    assert (parity(s, 0), parity(s, 1)) == (1, 0)


def test_arrive_expect_tx_leaves_phase_incomplete_until_bytes_land():
    """Probe rows '`arrive.expect_tx(256)`: parity 1' -> 0 and '`cp.async.bulk` 256 B then
    bounded wait parity 1' -> 1 (complete-tx completes the phase)."""
    s, _ = up(fresh(1), 1, arrive=1)                  # previous row: now phase 1
    s, bits = up(s, 1, arrive=1, tx=256)              # arrive.expect_tx(256)
    assert bits == 0
    assert s == (1, 0, 256)                           # pending 0 but tx 256: not complete
    assert parity(s, 1) == 0
    s, bits = up(s, 1, tx=-256)                       # the bulk copy lands: complete_tx(256)
    assert bits == COMPLETED
    assert s == (2, 1, 0)
    assert parity(s, 1) == 1


def test_partial_landing_does_not_complete():
    """"The update rule": a phase completes only when both pending == 0 and tx == 0 (too few
    delivered bytes hang)."""
    s, _ = up(fresh(1), 1, arrive=1, tx=256)
    s, bits = up(s, 1, tx=-128)
    assert (s, bits) == ((0, 0, 128), 0)
    s, bits = up(s, 1, tx=-128)
    assert (s, bits) == ((1, 1, 0), COMPLETED)


def test_two_unobserved_arrives_alias():
    """Probe row 'two more arrives, unobserved: parity 0 / 1' -> 0 / 1 (now phase 4: a
    waiter for phase 2 would block: aliasing)."""
    s = (2, 1, 0)
    s, b1 = up(s, 1, arrive=1)
    s, b2 = up(s, 1, arrive=1)
    assert (b1, b2) == (COMPLETED, COMPLETED)
    assert s == (4, 1, 0)
    assert (parity(s, 0), parity(s, 1)) == (0, 1)
    # A consumer (initial phase 0) at lap 2 intends phase 2; phase_no 4 is outside {2, 3}.
    assert not nvidia.in_window(4, 2, 0)
    assert nvidia.in_window(2, 2, 0) and nvidia.in_window(3, 2, 0)


def test_count_3_arrive_2_then_arrive_1():
    """Probe row 'count-3 barrier: `arrive` count 2 -> parity 0; then `arrive` -> parity 0'
    -> 0; 1 (the count operand works)."""
    s, bits = up(fresh(3), 3, arrive=2)
    assert (s, bits) == ((0, 1, 0), 0)
    assert parity(s, 0) == 0
    s, bits = up(s, 3, arrive=1)
    assert (s, bits) == ((1, 3, 0), COMPLETED)
    assert parity(s, 0) == 1


def test_negative_tx_blocks_completion():
    """Probe row '`complete_tx(64)` + `arrive` on count-1 -> parity 0' -> 0 (tx = -64
    blocks completion)."""
    s, bits = up(fresh(1), 1, tx=-64)
    assert (s, bits) == ((0, 1, -64), 0)
    s, bits = up(s, 1, arrive=1)
    assert (s, bits) == ((0, 0, -64), 0)
    assert parity(s, 0) == 0


def test_bare_expect_tx_bringing_tx_to_zero_completes():
    """Probe row 'then bare `expect_tx(64)` -> bounded wait parity 0' -> 1 (the expect that
    brings tx to 0 completes the phase; "The update rule": the model checks after every
    update)."""
    s = (0, 0, -64)                                   # state left by the previous row
    s, bits = up(s, 1, tx=64)                         # mbarrier.expect_tx(64): no arrival
    assert bits == COMPLETED
    assert s == (1, 1, 0)
    assert parity(s, 0) == 1


def test_copy_may_land_before_its_expect_tx():
    """Probe row '`complete_tx(64)` first -> parity 0; then `arrive.expect_tx(64)`' -> 0; 1
    (tx may go negative; the phase completes exactly at the arrive that balances it;
    "Transaction bytes (`tx_range`)")."""
    s, bits = up(fresh(1), 1, tx=-64)
    assert (s, bits) == ((0, 1, -64), 0)
    assert parity(s, 0) == 0
    s, bits = up(s, 1, arrive=1, tx=64)
    assert (s, bits) == ((1, 1, 0), COMPLETED)
    assert parity(s, 0) == 1


def test_negative_tx_with_count_2_completes_only_at_the_last_arrive():
    """"Transaction bytes (`tx_range`)": negative tx is legal; 'the phase still cannot
    complete until the arrival that accompanies or follows the expect'."""
    s, _ = up(fresh(2), 2, tx=-64)                    # copy lands first
    s, bits = up(s, 2, arrive=1, tx=64)               # tx balanced, one arrival still missing
    assert (s, bits) == ((0, 1, 0), 0)
    s, bits = up(s, 2, arrive=1)
    assert (s, bits) == ((1, 2, 0), COMPLETED)


# ============================================================================ nvidia: traps


@pytest.mark.parametrize("expected,lanes,traps", [
    (1, 2, True),     # '2 lanes of one warp arrive at once on count 1' -> fault
    (16, 32, True),   # '32 lanes on count 16' -> fault
    (32, 32, False),  # '32 lanes on count 32' -> one phase completes
    (1, 2, True),     # 'one thread `arrive` count 2 on count 1' -> fault
    (2, 3, True),     # '3 lanes at once on count 2' -> fault
    (64, 32, False),  # '32 lanes on count 64' -> under-arrival, phase 0 stays incomplete
])
def test_one_update_above_pending_traps(expected, lanes, traps):
    """Probe rows 'one update above pending' and '32 lanes on count 32 / on count 64': one
    arrive update larger than pending traps; one update equal to pending completes; smaller
    leaves the phase incomplete."""
    s0 = fresh(expected)
    s, bits = up(s0, expected, arrive=lanes)
    if traps:
        assert bits == TRAP_OVER
        assert s == s0                                # a trapped update changes nothing
    elif lanes == expected:
        assert (s, bits) == ((1, expected, 0), COMPLETED)
        assert parity(s, 0) == 1
    else:
        assert (s, bits) == ((0, expected - lanes, 0), 0)
        assert parity(s, 0) == 0


def test_arrive_while_pending_0_traps():
    """Probe row 'pending 0, tx 64': after `arrive.expect_tx(64)` (pending 0, tx 64) a plain
    `mbarrier.arrive` traps ('unspecified launch failure')."""
    s, bits = up(fresh(1), 1, arrive=1, tx=64)
    assert (s, bits) == ((0, 0, 64), 0)
    assert parity(s, 0) == 0
    s2, bits = up(s, 1, arrive=1)
    assert bits == TRAP_OVER
    assert s2 == s


def test_second_arrive_expect_tx_while_pending_0_traps():
    """Probe row 'pending 0, tx 64': a second `arrive.expect_tx(64)` while pending is 0 also
    traps (the arrive part exceeds pending 0)."""
    s, _ = up(fresh(1), 1, arrive=1, tx=64)
    _, bits = up(s, 1, arrive=1, tx=64)
    assert bits & TRAP_OVER
    assert not bits & COMPLETED


def test_pending_0_then_complete_tx_completes():
    """Probe row 'pending 0, tx 64, then `complete_tx(64)`': the phase completes."""
    s, _ = up(fresh(1), 1, arrive=1, tx=64)
    s, bits = up(s, 1, tx=-64)
    assert (s, bits) == ((1, 1, 0), COMPLETED)
    assert parity(s, 0) == 1


def test_bare_expect_tx_is_no_arrive_and_never_traps_on_pending_0():
    """"The update rule": `expect_tx(b)` has no arrival (so pending 0 is no trap for it)."""
    s, _ = up(fresh(1), 1, arrive=1, tx=64)
    s, bits = up(s, 1, tx=32)
    assert (s, bits) == ((0, 0, 96), 0)


def test_separate_extra_arrivals_run_ahead_without_trap():
    """Probe rows 'one thread arrives twice on count 1' and 'lane 0 of warp 0 and lane 0 of
    warp 1 on count 1' -> no fault; barrier in phase 2 (silent extra phase)."""
    s, b1 = up(fresh(1), 1, arrive=1)
    s, b2 = up(s, 1, arrive=1)
    assert (b1, b2) == (COMPLETED, COMPLETED)
    assert s == (2, 1, 0)
    assert not (b1 | b2) & TRAP_OVER


def test_separate_arrivals_on_count_2_run_ahead_by_whole_phases():
    """"Traps and run-ahead (`over_arrival`)": extra separate arrivals 'simply complete the
    next phase(s)': 5 single arrivals on count 2 = 2 whole phases and one arrival of the
    third."""
    s = fresh(2)
    outcomes = []
    for _ in range(5):
        s, bits = up(s, 2, arrive=1)
        outcomes.append(bits)
    assert outcomes == [0, COMPLETED, 0, COMPLETED, 0]
    assert s == (2, 1, 0)


def test_expect_tx_2_pow_20_traps():
    """Probe row '`expect_tx(2^20)` then arrive' -> fault (tx out of range)."""
    _, bits = up(fresh(1), 1, tx=1 << 20)
    assert bits == TRAP_TX
    _, bits = up(fresh(1), 1, arrive=1, tx=1 << 20)   # as arrive.expect_tx(2^20)
    assert bits & TRAP_TX and not bits & COMPLETED


def test_tx_limit_itself_is_legal():
    """"The update rule": tx range -(2^20-1) .. 2^20-1 inclusive."""
    s, bits = up(fresh(1), 1, tx=TX_LIMIT)
    assert (s, bits) == ((0, 1, TX_LIMIT), 0)
    s, bits = up(fresh(1), 1, tx=-TX_LIMIT)
    assert (s, bits) == ((0, 1, -TX_LIMIT), 0)


def test_negative_tx_below_range_traps():
    """"The update rule": '|tx| leaving +-(2^20-1)' traps - a landing of 2^20 bytes with
    nothing expected."""
    _, bits = up(fresh(1), 1, tx=-(1 << 20))
    assert bits == TRAP_TX
    _, bits = up((0, 1, -TX_LIMIT), 1, tx=-1)
    assert bits == TRAP_TX


def test_tx_accumulates_past_the_limit_traps():
    """"Transaction bytes (`tx_range`)": two legal expects whose sum leaves the range trap on
    the second."""
    s, bits = up(fresh(1), 1, tx=TX_LIMIT - 10)
    assert bits == 0
    _, bits = up(s, 1, tx=11)
    assert bits == TRAP_TX


# ============================================================================ nvidia: phases


@pytest.mark.parametrize("phase_no,phase,ok", [
    (0, 0, False), (0, 1, True), (1, 0, True), (1, 1, False),
    (2, 0, False), (2, 2, False), (3, 2, True), (7, 4, True), (8, 5, True), (8, 6, False),
])
def test_ready_is_parity_difference(phase_no, phase, ok):
    """"Parity waits and tries": `test_wait/try_wait.parity(p) -> (phase % 2) != p`; the
    agent waits with the parity of its lap count."""
    assert bool(nvidia.ready(phase_no, phase)) is ok


@pytest.mark.parametrize("phase,initial,k", [
    (0, 0, 0), (1, 0, 1), (5, 0, 5),          # consumer: intends its own lap
    (1, 1, -1), (2, 1, 0), (3, 1, 1), (6, 1, 4),  # producer: its first wait means "phase -1"
    (2, 2, 0), (3, 2, 1),                      # even initial phase: as a consumer
    (3, 3, -1), (4, 3, 0),                     # odd initial phase: as a producer
])
def test_intended_phase(phase, initial, k):
    """docs/rules.md "The phase_alias window": k = (ph - p0) - (p0 mod 2)."""
    assert nvidia.intended_phase(phase, initial) == k
    assert nvidia.in_window(k, phase, initial) and nvidia.in_window(k + 1, phase, initial)
    assert not nvidia.in_window(k + 2, phase, initial)
    assert not nvidia.in_window(k - 1, phase, initial)


def test_window_matches_parity_rule():
    """"The phase_alias window": inside the window the parity answer is the right one:
    phase k not yet complete (phase_no k) -> not ready; complete (k+1) -> ready."""
    for p0 in (0, 1):
        for ph in range(p0, p0 + 6):
            k = nvidia.intended_phase(ph, p0)
            if k >= 0:
                assert not nvidia.ready(k, ph)
            assert nvidia.ready(k + 1, ph)


# ============================================================================ amd


def test_amd_counter_is_monotone_sum():
    """Mojo AmdCounterBackend: a counter from 0; an arrive of n adds n."""
    c, b, x = amd.init(3)
    assert (c, b, x) == (0, 0, 0)
    for n in (1, 2, 5):
        c, b, x, outcome = amd.update(c, b, x, 3, n, 0, 0)
        assert outcome == 0   # a counter never traps, never completes a phase
    assert (c, b, x) == (8, 0, 0)


@pytest.mark.parametrize("phase,count,threshold", [
    (0, 1, 1), (0, 3, 3), (1, 1, 2), (4, 2, 10),
    (U32 - 2, 1, U32 - 1),
    (U32 - 1, 1, 0), (U32 - 1, 7, 0),         # phase + 1 at 2^32-1 wraps to 0
])
def test_amd_full_threshold(phase, count, threshold):
    """Mojo: `wait_full` at phase ph needs full >= ((ph + 1) mod 2^32) * producer_arrive_count."""
    assert amd.full_threshold(phase, count) == threshold


@pytest.mark.parametrize("phase,count,threshold", [
    (1, 1, 0), (1, 4, 0), (2, 2, 2), (5, 3, 12),
    (0, 1, U32 - 1), (0, 2, 2 * (U32 - 1)),   # phase - 1 at 0 wraps to 2^32-1
])
def test_amd_empty_threshold(phase, count, threshold):
    """Mojo: `wait_empty` at phase ph needs empty >= ((ph - 1) mod 2^32) * consumer_arrive_count."""
    assert amd.empty_threshold(phase, count) == threshold


def test_amd_producer_at_phase_0_never_passes():
    """docs/rules.md "AMD counters": a producer starting at phase 0 waits for 2^32-1 laps
    (deadlock)."""
    assert not amd.empty_ready(0, 0, 1)
    assert not amd.empty_ready(1000, 0, 1)
    assert not amd.empty_ready(U32 - 2, 0, 1)
    assert amd.empty_ready(U32 - 1, 0, 1)     # only after 2^32-1 releases


def test_amd_producer_at_phase_1_passes_on_fresh_counter():
    """The producer-1 / consumer-0 convention: the first lap of empty waits needs 0 releases;
    the second needs one full round of consumer arrivals."""
    assert amd.empty_ready(0, 1, 2)
    assert not amd.empty_ready(1, 2, 2)
    assert amd.empty_ready(2, 2, 2)


def test_amd_consumer_waits_for_producer_arrivals():
    """full_ready at consumer phase 0 needs producer_arrive_count arrivals, then one more
    round per lap."""
    assert not amd.full_ready(0, 0, 2)
    assert not amd.full_ready(1, 0, 2)
    assert amd.full_ready(2, 0, 2)
    assert not amd.full_ready(3, 1, 2)
    assert amd.full_ready(4, 1, 2)


def test_amd_full_at_max_phase_wraps_to_always_ready():
    """`phase + 1` at 2^32-1 wraps to 0 in UInt32: the threshold is 0, ready at once."""
    assert amd.full_ready(0, U32 - 1, 1)


# ============================================================================ model level


def spec(body_p, body_c=None, *, backend="nvidia", stages=1, pac=1, cac=1, items=1,
         p_extra="", c_extra="", expect=None):
    """A one-producer / one-consumer spec text (consumer omitted when body_c is None)."""
    lines = ["[pipeline]", f'backend = "{backend}"', f"stages = {stages}",
             f"producer_arrive_count = {pac}", f"consumer_arrive_count = {cac}",
             f"items = {items}"]
    lines += ["[[role]]", 'name = "producer"', 'side = "producer"', "count = 1",
              f"body = {json.dumps(body_p)}", p_extra]
    if body_c is not None:
        lines += ["[[role]]", 'name = "consumer"', 'side = "consumer"', "count = 1",
                  f"body = {json.dumps(body_c)}", c_extra]
    return "\n".join(lines) + "\n"


def run(text):
    return verify(load_spec_text(text, "backend_test.toml"))


def last_actions(result, kind):
    return [s.action for s in result.traces[kind].steps]


CONSUMER = ["wait_full", "read", "arrive_empty", "advance"]


def test_model_correct_tma_ring_is_ok():
    """Probe rows 'arrive.expect_tx' + 'cp.async.bulk': arming with expect_tx and landing the
    same bytes completes the phase; a correct ring holds."""
    r = run(spec(["wait_empty", "expect_tx 256", "copy 256", "advance"], CONSUMER,
                 stages=2, items=3))
    assert r.verdict == "ok" and r.kinds == () and r.limit == ""


def test_model_copy_before_expect_is_ok():
    """Probe row '`complete_tx(64)` first ... then `arrive.expect_tx(64)`': a copy that lands
    before its expect_tx leaves tx negative and the protocol still holds."""
    r = run(spec(["wait_empty", "copy 64", "expect_tx 64", "advance"], CONSUMER,
                 stages=2, items=3))
    assert r.verdict == "ok"
    assert r.states > 0


def test_model_too_few_bytes_deadlock():
    """"Transaction bytes (`tx_range`)": too few delivered bytes -> hang
    (arrive.expect_tx(128) with a 64 B copy)."""
    r = run(spec(["wait_empty", "expect_tx 128", "copy 64", "advance"], CONSUMER))
    assert r.verdict == "violation"
    assert r.kinds == ("deadlock",)
    end = r.traces["deadlock"].steps[-1].state["signals"]["cta0.full[0]"]
    assert end == {"phase_no": 0, "pending": 0, "tx": 64}


def test_model_arrive_2_on_count_1_is_over_arrival():
    """Probe row 'one thread `arrive` count 2 on count 1' -> fault: the first step traps."""
    r = run(spec(["wait_empty", "arrive_full 2", "advance"], CONSUMER))
    assert r.kinds == ("over_arrival",)
    assert r.depth == 2
    assert last_actions(r, "over_arrival") == [
        "producer[0].wait_empty(stage=0, phase=1)",
        "producer[0].arrive_full(stage=0, phase=1, n=2)"]
    assert r.traces["over_arrival"].steps[-1].violations == ("over_arrival",)


def test_model_arrive_after_expect_tx_pending_0_is_over_arrival():
    """Probe row 'pending 0, tx 64': arrive.expect_tx(64) then a plain arrive traps."""
    r = run(spec(["expect_tx 64", "arrive_full", "copy 64"], CONSUMER))
    assert r.kinds == ("over_arrival",)
    assert r.depth == 2
    assert last_actions(r, "over_arrival")[-1] == "producer[0].arrive_full(stage=0, phase=1)"


def test_model_second_expect_tx_pending_0_is_over_arrival():
    """Probe row 'pending 0, tx 64': a second arrive.expect_tx(64) while pending is 0 traps."""
    r = run(spec(["expect_tx 64", "expect_tx 64", "copy 128"], CONSUMER))
    assert r.kinds == ("over_arrival",)
    assert r.depth == 2


def test_model_expect_then_complete_is_ok():
    """Probe row 'pending 0, tx 64, then complete_tx(64)': arrive.expect_tx(64), nothing
    more, then complete_tx(64): the phase completes."""
    r = run(spec(["expect_tx 64", "copy 64"], ["wait_full", "read"]))
    assert r.verdict == "ok"


def test_model_unobserved_extra_arrivals_are_over_arrival_not_a_trap():
    """Probe row 'one thread arrives twice on count 1' (no fault, barrier in phase 2) surfaces
    as the run-ahead clause of over_arrival: phase 1 completes with no wait having passed."""
    # The consumer is not yet at a wait (it tries first), so the state after the second
    # arrive has no property of its own (no deadlock, no waiter outside its window).
    r = run(spec(["arrive_full", "arrive_full"], ["try_full", "wait_full"]))
    assert r.kinds == ("over_arrival",)
    assert r.depth == 2
    assert last_actions(r, "over_arrival") == ["producer[0].arrive_full(stage=0, phase=1)"] * 2
    assert "ran two phases ahead" in r.traces["over_arrival"].reason


def test_model_observed_extra_arrival_is_fine():
    """Separate arrivals are no trap: when a wait observes each phase before the next arrival
    completes the following one, nothing is reported."""
    r = run(spec(["arrive_full", "advance", "wait_empty", "arrive_full"],
                 ["wait_full", "arrive_empty"]))
    assert r.verdict == "ok", r.kinds


def test_model_expect_tx_2_pow_20_is_tx_range():
    """Probe row '`expect_tx(2^20)` then arrive' -> fault (tx out of range)."""
    r = run(spec([f"expect_tx {1 << 20}", f"copy {1 << 20}"], ["wait_full", "read"]))
    assert r.kinds == ("tx_range",)
    assert r.depth == 1
    assert "1048576" in r.traces["tx_range"].reason


def test_model_expect_tx_at_limit_is_ok():
    """"The update rule": 2^20-1 transaction bytes are in range."""
    r = run(spec([f"expect_tx {TX_LIMIT}", f"copy {TX_LIMIT}"], ["wait_full", "read"]))
    assert r.verdict == "ok"


def test_model_copy_2_pow_20_is_tx_range():
    """"Transaction bytes (`tx_range`)": a copy operand of 2^20 bytes is out of the tx range."""
    r = run(spec([f"copy {1 << 20}"], ["wait_full"]))
    assert r.kinds == ("tx_range",)
    assert r.depth == 1


def test_model_count_3_arrive_2_then_1():
    """Probe row 'count-3 barrier: arrive count 2 -> parity 0; then arrive -> parity 1': a
    producer that arrives 2 then 1 on a count-3 full barrier fills one phase exactly."""
    r = run(spec(["wait_empty", "write", "arrive_full 2", "arrive_full", "advance"], CONSUMER,
                 stages=2, pac=3, items=3))
    assert r.verdict == "ok"


def test_model_count_3_arrive_2_only_deadlocks():
    """Probe row '32 lanes on count 64' -> under-arrival, phase 0 stays incomplete."""
    r = run(spec(["wait_empty", "write", "arrive_full 2", "advance"], CONSUMER, pac=3))
    assert r.kinds == ("deadlock",)
    end = r.traces["deadlock"].steps[-1].state["signals"]["cta0.full[0]"]
    assert end == {"phase_no": 0, "pending": 1, "tx": 0}


def test_model_producer_at_phase_0_deadlocks_on_nvidia():
    """Probe row 'fresh barrier' parity 0 -> 0: a producer that starts at phase 0 waits on a
    fresh empty barrier forever."""
    r = run(spec(["wait_empty", "write", "arrive_full", "advance"], CONSUMER,
                 p_extra="initial_phase = 0"))
    assert r.kinds == ("deadlock",)
    assert r.depth == 0
    assert r.traces["deadlock"].steps == ()


AMD_PRODUCER = ["wait_empty", "write", "arrive_full", "advance"]


def test_model_amd_correct_ring_is_ok():
    """Mojo counter pipeline with the producer-1 / consumer-0 convention holds."""
    r = run(spec(AMD_PRODUCER, CONSUMER, backend="amd", stages=2, items=3))
    assert r.verdict == "ok" and r.kinds == ()


def test_model_amd_producer_at_phase_0_deadlocks():
    """docs/rules.md "AMD counters": phase - 1 wraps at phase 0 to 2^32-1: the producer
    never passes."""
    r = run(spec(AMD_PRODUCER, CONSUMER, backend="amd", stages=2, items=2,
                 p_extra="initial_phase = 0"))
    assert r.kinds == ("deadlock",)
    assert r.depth == 0


def test_model_amd_counter_signals_in_trace():
    """amd signal state is a single monotone count in the trace views."""
    r = run(spec(AMD_PRODUCER, ["wait_full", "read", "advance"], backend="amd", stages=1,
                 items=2))
    # The consumer never releases: the producer's second wait_empty (phase 2) needs 1 release.
    assert r.kinds == ("deadlock",)
    sig = r.traces["deadlock"].steps[-1].state["signals"]
    assert sig["cta0.empty[0]"] == {"count": 0}
    assert sig["cta0.full[0]"] == {"count": 1}


def test_model_amd_consumer_at_max_phase_passes_at_once():
    """`phase + 1` at 2^32-1 wraps to 0: a consumer at that phase reads before anything is
    stored (its wait_full passes on a fresh counter)."""
    r = run(spec(["write"], ["wait_full", "read"], backend="amd",
                 c_extra=f"initial_phase = {U32 - 1}"))
    assert r.kinds == ("read_before_fill",)
    assert r.depth == 2


def test_model_amd_has_no_over_arrival():
    """The counter backend has no pending count: extra arrivals only add."""
    r = run(spec(["arrive_full 2", "arrive_full"], ["wait_full"], backend="amd"))
    assert r.verdict == "ok"


def test_model_amd_commit_empty_is_async_add():
    """docs/rules.md "AMD counters": `commit_empty` is an async +n on the empty counter (a
    producer tail drain keeps the CTA alive until the last commit fires)."""
    r = run(spec(AMD_PRODUCER, ["wait_full", "read", "commit_empty", "advance"], backend="amd",
                 stages=2, items=3, p_extra='epilogue = ["drain"]'))
    assert r.verdict == "ok", r.kinds
    r = run(spec(AMD_PRODUCER, ["wait_full", "read", "commit_empty 2", "advance"],
                 backend="amd", stages=1, items=2, cac=2, p_extra='epilogue = ["drain"]'))
    assert r.verdict == "ok", r.kinds
    # Without the tail, the CTA can exit with the last commit in flight: an own-CTA commit, so
    # a warning by default and `inflight_at_exit` under --strict-exit (DESIGN, revised 2026-12-02).
    no_tail = load_spec_text(spec(AMD_PRODUCER, ["wait_full", "read", "commit_empty", "advance"],
                                  backend="amd", stages=2, items=3), "backend_test.toml")
    r = verify(no_tail)
    assert r.verdict == "ok" and "unawaited_at_exit" in r.warnings, (r.kinds, r.warnings)
    assert verify(no_tail, strict_exit=True).kinds == ("inflight_at_exit",)


def test_model_tx_sum_out_of_range_is_tx_range():
    """"Transaction bytes (`tx_range`)": '|tx| leaving +-(2^20-1)': two legal
    arrive.expect_tx whose sum is above the limit fault at the second one."""
    r = run(spec(["expect_tx 600000", "expect_tx 600000", "copy 600000", "copy 600000"],
                 ["wait_full"], pac=2))
    assert r.kinds == ("tx_range",)
    assert r.depth == 2
    assert "1200000" in r.traces["tx_range"].reason
