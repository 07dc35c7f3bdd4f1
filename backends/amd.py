"""Mojo's `AmdCounterBackend` (DESIGN.md "Backends"; reference/mojo_pipeline.md §1b).

Each signal is a monotone counter from 0; an arrive of n adds n. Waits compare against an
absolute threshold computed from the lap count, with `phase + 1` and `phase - 1` taken in
UInt32 before widening, exactly as Mojo does: a producer whose phase is 0 therefore waits for
(2^32 - 1) laps of drains, i.e. forever.
"""
from backends.base import jit

U32 = (1 << 32) - 1


@jit
def init():
    return 0


@jit
def arrive(counter, n):
    return counter + n


@jit
def full_threshold(phase, producer_arrive_count):
    return ((phase + 1) & U32) * producer_arrive_count


@jit
def empty_threshold(phase, consumer_arrive_count):
    return ((phase - 1) & U32) * consumer_arrive_count


@jit
def full_ready(counter, phase, producer_arrive_count):
    return counter >= full_threshold(phase, producer_arrive_count)


@jit
def empty_ready(counter, phase, consumer_arrive_count):
    return counter >= empty_threshold(phase, consumer_arrive_count)
