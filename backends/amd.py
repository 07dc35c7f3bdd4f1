"""Mojo's `AmdCounterBackend` (docs/rules.md "AMD counters").

Each signal is a monotone counter from 0; an arrive of n adds n. Waits compare against an
absolute threshold computed from the lap count, with `phase + 1` and `phase - 1` taken in
UInt32 before widening, exactly as Mojo does: a producer whose phase is 0 therefore waits for
(2^32 - 1) laps of drains, i.e. forever. Written in backends.base's primitives (see there).

The protocol functions (backends/protocol.py) read the signal's words (a, b, c) as (counter, 0,
0): an update only adds, never traps and never completes a phase (a counter has none), and
every wait is in its window (there is no parity to alias).
"""
from pipeproof.backends.base import (COMPLETED, EMPTY, FULL, RAN_AHEAD,  # noqa: F401 (protocol names)
                                     TRAP_OVER_ARRIVAL, TRAP_TX_RANGE, U32, jit, select, wrap32)

TX_LIMIT = 0   # no transaction bytes: the loader refuses expect_tx and byte-counting copies


@jit
def full_threshold(phase, producer_arrive_count):
    return wrap32(phase + 1) * producer_arrive_count


@jit
def empty_threshold(phase, consumer_arrive_count):
    return wrap32(phase - 1) * consumer_arrive_count


@jit
def full_ready(counter, phase, producer_arrive_count):
    return counter >= full_threshold(phase, producer_arrive_count)


@jit
def empty_ready(counter, phase, consumer_arrive_count):
    return counter >= empty_threshold(phase, consumer_arrive_count)


# ---------------------------------------------------------------- the protocol

@jit
def init(expected):
    """A counter starts at 0 (the other two words are unused)."""
    return 0, 0, 0


@jit
def update(counter, b, c, expected, arrive_count, tx_delta, observed=1):
    """An arrive of n adds n; nothing traps and no phase completes."""
    return counter + arrive_count, b, c, 0


@jit
def signal_ready(counter, b, c, expected, phase, kind):
    """A wait passes once the counter reaches the kind's threshold for the waiter's lap."""
    return select(kind == FULL, full_ready(counter, phase, expected),
                  empty_ready(counter, phase, expected))


@jit
def intended_phase(phase, initial_phase):
    """A counter's wait means the waiter's own lap; there is no phase to alias."""
    return phase


@jit
def intended_after(k_last, phase_last, phase):
    return phase


@jit
def in_window_at(counter, k):
    """Every counter wait is in its window: thresholds are absolute, no parity aliases."""
    return True


def signal_bounds(expected, updates, max_n, has_tx):
    """The range of each state word (counter, -, -, observed): the counter only adds."""
    return ((0, updates * max_n), (0, 0), (0, 0), (0, 0))
