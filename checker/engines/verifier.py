"""Verify one spec: explore, then turn what was found into Results with readable traces.

Traces are rebuilt by re-executing action codes from the initial state through the model, and
rebuilt states are checked against the stored ones, so a trace can never show a state the
search did not reach. Under symmetry reduction the search stores one canonical state per orbit,
and the action that reached a stored state was taken in its canonical parent, not in the
concrete state the trace is at; so the trace walks the stored path and, at each step, takes the
lowest action code enabled in the current concrete state whose successor has the next stored
state as its canonical form (one exists: the concrete state is a permutation of the stored
one). Every trace is thus a real interleaving of concrete agents.
"""
from __future__ import annotations

import time

import numpy as np

from pipeproof.backends.base import JIT
from pipeproof.checker.engines import por as POR
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.engines.explore import INTERRUPTED, Search
from pipeproof.checker.core import MAX_INFLIGHT, Model, compile_model
from pipeproof.checker.results import KINDS, RECORDS, Result
from pipeproof.checker.results import Trace, trace_from_codes
from pipeproof.checker.runtime import tiny_spec  # the warm-ups' one-slot pipeline (prover's too)
from pipeproof.spec.schema import Spec


_warm = False


def warm_up() -> None:
    """Load (or, on a fresh install, compile) the numba engine before any clock starts."""
    global _warm
    if _warm or not JIT:  # as plain Python there is nothing to load
        return
    from pipeproof.checker.runtime import compile_notice, ensure_engines
    ensure_engines()  # the one shared build (its own process), then loaded from the cache here
    with compile_notice("search engine"):
        Search(compile_model(tiny_spec())).run()
    _warm = True


# The most states the search for the minimal depth (without partial-order reduction) stores
# after a reduced search found a violation, unless the reduced search stored more (x 8).
MINIMAL_DEPTH_STATES = 1_000_000
# The most copies, commits and async reads in flight `verify` makes room for, when a run needs
# more than the model's default capacity (a 2-SM kernel keeps 8 stages of copies from both
# CTAs in flight: 32 and more).
LARGEST_INFLIGHT = 96


def verify(spec: Spec, max_states: int | None = None, timeout: float | None = None,
           progress: bool = False, symmetry: bool = True, por: bool = True,
           cta_symmetry: bool | None = None, strict_exit: bool = False) -> Result:
    """Explore `spec` exhaustively (or to a limit) and report what holds; `seconds` excludes
    the one-time loading of the compiled engine. With `symmetry`, interchangeable agents
    (checker/engines/symmetries.py) are reduced, and with `cta_symmetry` (default: `symmetry`) so are
    CTAs that run the same programs: `states` counts one state per orbit. With `por`, steps
    no other step can tell the time of are taken at once (partial-order reduction, por.py):
    `states` counts the reduced graph. That graph has a violation exactly when the full one
    has, but not always at the same depth; so a violation found there is looked for again
    without the reduction, for the minimal depth, every kind found there and their shortest
    traces. Warnings (result.WARNINGS) found on the way come with a trace each; with
    `strict_exit` the warning unawaited_at_exit is the violation inflight_at_exit."""
    warm_up()
    started = time.monotonic()
    model = compile_model(spec, strict_exit=strict_exit)
    while True:
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 1e-3)
        search = Search(model, max_states=max_states, timeout=left, progress=progress,
                        symmetry=symmetry, por=por, cta_symmetry=cta_symmetry)
        kinds, depth = _run(search)
        if kinds or not search.limit.startswith("more than") or model.inflight >= LARGEST_INFLIGHT:
            break
        # A run needs more copies and commits in flight than the model has room for: search
        # again with twice the room (a bigger state for every state, so only when needed).
        model = Model(spec, inflight=min(max(2 * model.inflight, MAX_INFLIGHT), LARGEST_INFLIGHT),
                      strict_exit=strict_exit)
    if timeout is not None and search.limit.startswith("timeout"):
        search.limit = f"timeout {timeout:g} s"  # the user's, not what a retry had left of it
    if kinds and por and search.limit != INTERRUPTED:
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 1e-3)
        # Bounded by states, not time, so the answer is the same every run: a deep violation
        # of a big spec keeps the reduced search's real trace rather than stall on the full one.
        budget = max(MINIMAL_DEPTH_STATES, 8 * search.n_stored)
        full = Search(model, max_states=min(budget, max_states or budget), timeout=left,
                      progress=progress, symmetry=symmetry, cta_symmetry=cta_symmetry)
        full_kinds, full_depth = full.run()
        if full_kinds:
            search, kinds, depth = full, full_kinds, full_depth
        else:  # a limit stopped it first: the reduced search's trace is real, maybe not shortest
            search.limit = full.limit
    result = Result(spec=spec, verdict="ok", states=search.n_stored, transitions=search.transitions,
                    seconds=0.0, limit=search.limit, max_depth=search.max_depth, por=search.por)
    if kinds:
        result.verdict = "violation"
        result.kinds = tuple(KINDS[k] for k in kinds)
        result.traces = {KINDS[k]: build_trace(model, search, k) for k in kinds}
        # After the reduced search (the full one ran out of room) the depth is its trace's.
        result.depth = len(result.traces[result.kind].steps) if search.por else depth
    elif search.limit:
        result.verdict = "inconclusive"
    result.warnings = {RECORDS[k]: build_trace(model, search, k)
                       for k in range(S.N_KINDS, S.N_RECORDS) if search.vrec[k, 0]}
    result.seconds = time.monotonic() - started
    return result


def _run(search: Search):
    """`search.run()`, where a Ctrl-C anywhere in it (a chunk of the search is covered by the
    search itself; growing its arrays is not) ends it like a limit, with the counts so far."""
    try:
        return search.run()
    except KeyboardInterrupt:
        search.limit = INTERRUPTED
        return search.shallowest_seen()


# ------------------------------------------------------------------ traces

def concrete_codes(model: Model, search: Search, k: int) -> list[int]:
    """Action codes of a real interleaving that reaches violation kind k at the minimal depth
    (after a partial-order reduced search: at the depth that search found it)."""
    if search.sym.classes.shape[0] == 0 and not SYM.renames_ctas(search.sym) and not search.por:
        return search.counterexample(k)  # the stored states are the concrete ones
    bit = 1 << k
    state = model.initial_state()
    codes = []
    for i, idx in enumerate(search.index_path(int(search.vrec[k, 2]))[1:]):
        found = _step_to(model, search, state, search.store[idx])
        if found is None:
            raise AssertionError(f"internal: no step {i + 1} of the {RECORDS[k]} trace reaches "
                                 f"the stored state")
        code, local = found
        codes += [code] + local[0]
        state = local[1]
    if search.vrec[k, 3] >= 0:  # the violation is a step: the lowest action that commits it
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is not None and 0 < bits != S.INFLIGHT_FULL and bits & bit:
                codes.append(code)
                break
        else:
            raise AssertionError(f"internal: no last step of the {RECORDS[k]} trace violates it")
    return codes


def _step_to(model: Model, search: Search, state, target):
    """(code, (merged codes, state)) of the lowest action from concrete `state` whose
    successor, after the steps the reduction merged, has `target` as its stored form; None.
    The merge gives up when it runs out of work (por.WORK_PER_FIELD); the work a merge takes
    depends on the order of the agents, which here is the concrete state's, not the stored
    one's: so when no bounded merge matches, the successor unmerged and the merge without a
    budget are tried too (one of them is what the search stored)."""
    passes = (True, False) if search.por else (True,)
    for first in passes:
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is None or bits & (S.TRAP | S.INFLIGHT_FULL):
                continue
            if not search.por or bits != 0:
                tries = [([], nxt)] if first else []
            elif first:
                tries = [POR.merged_steps(model, search.future, nxt)]
            else:
                tries = [([], nxt), POR.merged_steps(model, search.future, nxt, bounded=False)]
            for local in tries:
                if np.array_equal(search.key_of(local[1]), target):
                    return code, local
    return None


def build_trace(model: Model, search: Search, k: int) -> Trace:
    is_step = search.vrec[k, 3] >= 0  # recorded as a step violation (else as a state property)
    return trace_from_codes(model, concrete_codes(model, search, k), k, is_step,
                            check_end=lambda state: _check_stored(model, search, state,
                                                                  int(search.vrec[k, 2])))


def _check_stored(model, search, state, idx):
    if not np.array_equal(search.key_of(state), search.store[idx]):
        raise AssertionError("internal: rebuilt trace state differs from the stored state")
