"""`verify --engine laps`: one item count, explored with item numbers and laps relative.

The explicit engine's state space grows with the item count, because items, tags, phase
numbers and generations count up. The lap abstraction of checker/engines/laps.py takes them relative
to the slowest agent and keeps the count left exact only near the end of the run. Started
from the spec's own count n alone (`search_laps(..., only_n=n)`), its start state carries
n_rel = n when n < R, so the search is that one count's run with relative numbers; when
n >= R it carries MANY, which stands for every count >= R, so the states stored no longer
depend on n.

Verdicts: an exhaustive search without a violation is `ok` for n (it covered a superset of
n's runs). An abstract violation may belong to another count >= R, and its path need not be
the shortest for n: the explicit engine is then run at n itself, and its verdict and shortest
trace are reported (engine "explicit"). A spec outside the abstraction, or whose agents drift
apart without bound, is also left to the explicit engine; a limit gives `inconclusive`.

Warnings (DESIGN R2, unawaited_at_exit: a CTA gone with its own copies or commits in flight)
are no violations: the abstract search goes on past them. A result reports a warning with a
concrete trace, so when the abstract search met one, the explicit engine is run at n for the
warnings' traces (its verdict is the same `ok`, or a violation the abstraction missed); if
it stops at a limit, the abstraction's `ok` stands, without them. `strict_exit`: the warning
is inflight_at_exit, in both engines.
"""
from __future__ import annotations

import time

from pipeproof.checker.engines.laps import (CannotAbstract, LapAbstraction, own_parameter,
                                             role_coefficients)
from pipeproof.checker.engines.prover import MAX_ABSTRACT_STATES, MAX_R, Unknown, search_laps, warm_up_prove
from pipeproof.checker.results import Result
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.schema import Spec


def own_count(spec: Spec) -> int:
    """The abstraction's parameter n for the spec's own item counts (CannotAbstract when no
    role runs an item)."""
    role_coefficients(spec)
    return own_parameter(spec)


def verify_laps(spec: Spec, max_states: int | None = None, timeout: float | None = None,
                por: bool = True, cta_symmetry: bool = True, strict_exit: bool = False) -> Result:
    warm_up_prove()
    started = time.monotonic()
    deadline = started + timeout if timeout else None

    def explicit() -> Result:
        left = None if deadline is None else max(deadline - time.monotonic(), 0.001)
        return verify(spec, max_states=max_states, timeout=left, por=por, cta_symmetry=cta_symmetry,
                      strict_exit=strict_exit)
    try:
        lap = LapAbstraction(spec, MAX_R, cta_symmetry=cta_symmetry, strict_exit=strict_exit)
        search, found = search_laps(lap, max_states or MAX_ABSTRACT_STATES, deadline,
                                    only_n=own_count(spec), por=por)
    except CannotAbstract:
        return explicit()
    except Unknown as err:
        if err.drift:
            return explicit()
        return Result(spec=spec, verdict="inconclusive", states=err.states, transitions=0,
                      seconds=time.monotonic() - started, limit=str(err), engine="laps")
    if found is not None:
        return explicit()
    if search.warned:
        concrete = explicit()
        if concrete.verdict != "inconclusive":
            return concrete
    return Result(spec=spec, verdict="ok", states=search.n_stored, transitions=0,
                  seconds=time.monotonic() - started, engine="laps", lap_bound=search.R)
