"""The registered backend's own signal functions as the pre-check uses them: on plain Python
ints for the concrete replay (precheck_walk.plain_rules), and re-bound to Z3 terms
(solvers.symbolic_rules) for when a wait passes (`agrees`, for the lap obligations). Nothing
about mbarriers or counters is written again here.

What the pre-check's arguments (precheck_spec.py's module doc) assume of a signal is the
backend record's `signal_model` (backends/capabilities.py), not its name: "mbarrier" (a wait
needs completed phases, an arrival beyond the count traps or runs ahead) or "counter" (a
wait needs the arrivals of its threshold). A backend no argument was made for ("") gets no
symbolic check (`argued`)."""
from __future__ import annotations

import functools

import z3

from pipeproof.backends.base import EMPTY as EMPTY_CODE
from pipeproof.backends.base import FULL as FULL_CODE
from pipeproof.backends.capabilities import backend
from pipeproof.checker.smt import solvers as smt
from pipeproof.checker.smt.precheck_walk import FULL, plain_module
from pipeproof.spec.schema import Spec

MBARRIER, COUNTER = "mbarrier", "counter"   # the signal models the pre-check is argued for


def signal_model(spec: Spec) -> str:
    """What the pre-check may assume of the spec's signals: the record's `signal_model`."""
    return backend(spec.backend).signal_model


def argued(spec: Spec) -> bool:
    """Whether the pre-check's arguments cover the spec's signals (else it checks nothing
    symbolic: silence, not a guess)."""
    return signal_model(spec) in (MBARRIER, COUNTER)


def _kind(X: str) -> int:
    return FULL_CODE if X == FULL else EMPTY_CODE


@functools.lru_cache(maxsize=None)
def _counter_threshold(module, n: int, kind: int, phase: int) -> int:
    """(counter) The least count at which a wait at `phase` passes, by the backend's own
    signal_ready (rules `module`; monotone in the count): tried first at the lap count's own
    threshold, (phase + 1) * n on full and (phase - 1) * n on empty, else searched."""
    signal_ready = plain_module(module).signal_ready

    def ready(count):
        return signal_ready(count, 0, 0, n, phase, kind)
    guess = (phase + 1 if kind == FULL_CODE else phase - 1) * n
    if guess >= 0 and ready(guess) and (guess == 0 or not ready(guess - 1)):
        return guess
    lo, hi = 0, 1
    while not ready(hi):
        if hi > 1 << 80:
            raise ValueError(f"no count passes a wait at phase {phase}")
        lo, hi = hi + 1, 2 * hi
    while lo < hi:
        mid = (lo + hi) // 2
        if ready(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def wait_need(spec: Spec, ring, X: str, e) -> tuple[int, int]:
    """Concretely, for the wait or try `e` (a precheck_walk.Ev): (the completions of its
    signal it needs, the arrivals it needs). An mbarrier wait needs its intended phase + 1
    completions (at least 0; the least phase it may intend, when the walk leaves that open:
    never more than it needs), count arrivals each; a counter wait needs its threshold's
    arrivals, i.e. that many divided by the count (rounded up) completions."""
    n = ring.expected(X)
    if signal_model(spec) == MBARRIER:
        done = max(0, e.ks[0] + 1)
        return done, done * n
    need = _counter_threshold(backend(spec.backend).rules, n, _kind(X), e.phase)
    return -(-need // n), need


def agrees(spec: Spec, ring, X: str, done, phase, k):
    """Z3: the wait at `phase` intending signal phase `k` passes exactly when completion number
    `done` of its signal happens (the backend's own signal_ready and in_window_at, over Z3
    integers): an mbarrier then holds `done` as its phase number, and the wait is in its
    window; a counter holds done * count arrivals, and one arrival fewer was not enough."""
    rules, n, kind = smt.symbolic_rules(spec.backend), ring.expected(X), _kind(X)

    def ready(a):
        return rules.signal_ready(a, 0, 0, n, phase, kind)
    if signal_model(spec) == MBARRIER:
        return z3.And(ready(done), rules.in_window_at(done, k))
    return z3.And(ready(done * n), z3.Or(done == 0, z3.Not(ready(done * n - 1))))
