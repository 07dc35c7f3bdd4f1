"""NVIDIA mbarrier semantics (docs/rules.md "NVIDIA mbarrier").

State `(phase_no, pending, tx)`; `expected` is the init count and never changes (no
arrive_drop). Every update is atomic: apply the arrive count and the tx delta, then CHECK:
when pending == 0 and tx == 0 the phase completes and pending reloads from expected.

Measured on an H200 and reproduced here (tests/test_backends.py pins each one):
- one arrive update larger than `pending` traps, pending 0 included (docs/rules.md
  "The update rule");
- separate extra arrivals are no trap: they complete the next phase(s) (the barrier runs ahead);
- tx may go negative (a copy may land before its expect_tx) and the phase waits for it;
- |tx| above 2^20 - 1 traps (`expect_tx(2^20)` trapped).

Written branch-free in backends.base's primitives so checker.smt can read it (see base.py).
The functions are backends/protocol.py's, the signal's words (a, b, c) named (phase_no,
pending, tx).
"""
from pipeproof.backends.base import (COMPLETED, EMPTY, FULL, RAN_AHEAD,  # noqa: F401 (protocol names)
                                     TRAP_OVER_ARRIVAL, TRAP_TX_RANGE, both, either, jit, negate,
                                     parity, select)

TX_LIMIT = (1 << 20) - 1   # |tx| above this traps (measured on an H200)


@jit
def init(expected):
    """`mbarrier.init(n)`: phase 0, pending n, tx 0."""
    return 0, expected, 0


@jit
def update(phase_no, pending, tx, expected, arrive_count, tx_delta, observed=1):
    """One atomic update: `arrive_count` arrivals (0 for a bare tx change) and tx += tx_delta.

    `mbarrier.arrive` is (c, 0); `arrive.expect_tx(b)` is (1, +b); `expect_tx(b)` is (0, +b);
    a copy landing (`complete_tx(b)`) is (0, -b). Returns (phase_no, pending, tx, outcome bits);
    a trapping update leaves what the trap found (the kernel is dead anyway). `observed`: some
    waiter saw the current phase's predecessor complete; a completion while nobody did ran
    ahead (RAN_AHEAD, reported as over_arrival: the extra arrivals completed a whole phase).
    """
    over = arrive_count > pending
    left = pending - arrive_count
    moved = tx + tx_delta
    out_of_range = either(moved > TX_LIMIT, moved < -TX_LIMIT)
    completes = both(negate(either(over, out_of_range)), both(left == 0, moved == 0))
    ahead = both(completes, both(phase_no >= 1, observed == 0))
    return (select(completes, phase_no + 1, phase_no),
            select(over, pending, select(completes, expected, left)),
            select(over, tx, select(completes, 0, moved)),
            select(over, TRAP_OVER_ARRIVAL,
                   select(out_of_range, TRAP_TX_RANGE,
                          select(completes, select(ahead, COMPLETED + RAN_AHEAD, COMPLETED), 0))))


@jit
def ready(phase_no, phase):
    """`try_wait.parity(phase & 1)`: the phase of that parity has completed."""
    return parity(phase_no) != parity(phase)


@jit
def signal_ready(phase_no, pending, tx, expected, phase, kind):
    """The protocol's `ready`: a parity wait reads phase_no alone, on either kind of signal."""
    return ready(phase_no, phase)


@jit
def intended_phase(phase, initial_phase):
    """The signal phase a waiter at lap-count `phase` means (docs/rules.md "The phase_alias
    window").

    A consumer (initial 0) at phase ph means phase ph; a producer (initial 1) at phase ph means
    ph - 2 (its first wait refers to "phase -1", complete on a fresh barrier).
    """
    return (phase - initial_phase) - parity(initial_phase)


@jit
def intended_after(k_last, phase_last, phase):
    """The signal phase a waiter at lap-count `phase` means, from (k', ph'): the intended phase
    and the waiter's phase at its last passed wait (or ready try) on the signal (DESIGN's
    `phase_alias` row). While ph >= ph' it moved on by ph - ph'; when a `reset` moved the phase
    back, it is the smallest k >= k' of the parity of ph (the hardware sees only parity). From
    (-(p0 mod 2), p0), nothing passed yet, this is intended_phase(phase, p0)."""
    return select(phase >= phase_last, k_last + (phase - phase_last),
                  k_last + parity(k_last - phase))


@jit
def in_window_at(phase_no, k):
    """A parity wait meaning signal phase k is only meaningful while phase_no is k or k + 1."""
    return either(phase_no == k, phase_no == k + 1)


@jit
def in_window(phase_no, phase, initial_phase):
    """The window of a waiter whose phase only grows (no `reset`): in_window_at its intended
    phase."""
    return in_window_at(phase_no, intended_phase(phase, initial_phase))


def signal_bounds(expected, updates, max_n, has_tx):
    """The range of each state word of a signal (phase_no, pending, tx, observed), for a
    model with at most `updates` updates of at most `max_n` arrivals each: phase_no counts
    completions, pending reloads from `expected`, tx stays within the trap bound."""
    return ((0, updates), (0, expected),
            (-TX_LIMIT, 2 * TX_LIMIT) if has_tx else (0, 0), (0, 1))
