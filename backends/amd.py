"""Mojo's `AmdCounterBackend` (docs/rules.md "AMD counters").

Each signal is a monotone counter from 0; an arrive of n adds n. Waits compare against an
absolute threshold computed from the lap count, with `phase + 1` and `phase - 1` taken in
UInt32 before widening, exactly as Mojo does: a producer whose phase is 0 therefore waits for
(2^32 - 1) laps of drains, i.e. forever. Written in backends.base's primitives (see there).
"""
from pipeproof.backends.base import U32, jit, wrap32  # noqa: F401  (U32 is part of this module's API)


@jit
def init():
    return 0


@jit
def arrive(counter, n):
    return counter + n


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
