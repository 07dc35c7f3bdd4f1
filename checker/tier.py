"""`pipeproof verify`'s plain-Python first try, for specs too small to pay numba's start-up.

Importing numba and loading its cached engine takes ~0.9 s of a process, while the explicit
search of a small (or well-reduced) spec takes a few hundredths of a second compiled and a
few tenths as plain Python. So the command line first runs the very same engine code as plain
Python (`PIPEPROOF_JIT=0`, backends/base.py), without importing numba, under a time budget.
If every spec finishes within it with no limit hit, those results are the answers: the same
code on the same spec stores the same states in the same order, so verdicts, counts and
traces are the ones the compiled engine gives (tests/test_tier.py compares them). Otherwise
nothing has been printed yet, and the process replaces itself with the same command run
compiled (`PIPEPROOF_JIT=1`), which starts the whole check afresh.
"""
from __future__ import annotations

import os
import sys
import time

# Seconds of plain-Python search, over all specs of one command, before handing over to
# numba. About half of what numba's start-up costs: a spec that needs more is better compiled.
# PIPEPROOF_PLAIN_SECONDS sets another budget (0: no first try).
BUDGET_SECONDS = 0.5
ENV = "PIPEPROOF_JIT"
BUDGET_ENV = "PIPEPROOF_PLAIN_SECONDS"


def budget() -> float:
    try:
        return max(float(os.environ.get(BUDGET_ENV, BUDGET_SECONDS)), 0.0)
    except ValueError:
        return BUDGET_SECONDS  # a malformed setting must not stop a check


def available(engine: str, suggest_fix: bool, graph_file) -> bool:
    """Whether this command may try plain Python first: the explicit engine only (the fix
    search runs many checks, and --graph builds its own graph), the choice not already made
    by the user or by a first try, and the engine not yet imported compiled."""
    return (engine == "explicit" and not suggest_fix and not graph_file and budget() > 0
            and ENV not in os.environ and "backends.base" not in sys.modules)


def first_try(specs, max_states, timeout, symmetry: bool, por: bool) -> dict | None:
    """Run every spec as plain Python; {index: Result} if each one finished within the budget
    (specs that do not load are left to the caller), else None."""
    os.environ[ENV] = "0"
    from checker.explore import INTERRUPTED
    from checker.verify import verify
    from spec.load import load_spec
    from spec.schema import SpecError

    deadline = time.monotonic() + budget()
    settled = {}
    for i, path in enumerate(specs):
        try:
            spec = load_spec(path)
        except SpecError:
            continue  # the caller reports it, as always
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            result = verify(spec, max_states=max_states, symmetry=symmetry, por=por,
                            timeout=left if timeout is None else min(left, timeout))
        except Exception:  # let the compiled run meet (and report) it
            return None
        if result.limit == INTERRUPTED:  # Ctrl-C: answer what was found, run nothing more
            settled[i] = result
            return settled
        if result.limit:  # the budget, or the user's own limit: the compiled run decides
            return None
        settled[i] = result
    return settled


def run_compiled() -> None:
    """Replace this process by the same command with the compiled engine."""
    sys.stdout.flush()
    sys.stderr.flush()
    env = dict(os.environ, **{ENV: "1"})
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
