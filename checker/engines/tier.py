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

On a fresh install the compiled engine does not exist yet. Then the first try starts its build
in a separate process (checker/runtime/jitcache.py) and has no budget: plain Python answers for as long
as the build runs (the user's own limits still apply), and stops the moment the build is done
(`explore.HAND_OVER`), to hand over to the compiled engine. So a small spec is answered at once
on a fresh install, and a big one waits for the build no longer than it must.
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
            and ENV not in os.environ and "pipeproof.backends.base" not in sys.modules)


def first_try(specs, max_states, timeout, symmetry: bool, por: bool,
              cta_symmetry: bool = True, strict_exit: bool = False) -> dict | None:
    """Run every spec as plain Python; {index: Result} if each one finished within the budget
    (specs that do not load are left to the caller), else None."""
    os.environ[ENV] = "0"
    from pipeproof.checker.engines import explore
    from pipeproof.checker.runtime import jitcache
    build = None if jitcache.ready() else jitcache.start_build()
    if build is None or build is False:
        return _first_try(specs, max_states, timeout, symmetry, por, cta_symmetry,
                          time.monotonic() + budget(), strict_exit=strict_exit)
    watcher = _BuildWatcher(build)
    explore.HAND_OVER = watcher.done
    try:
        return _first_try(specs, max_states, timeout, symmetry, por, cta_symmetry, float("inf"),
                          watcher.done, strict_exit=strict_exit)
    finally:
        explore.HAND_OVER = None
        watcher.stop()


def _first_try(specs, max_states, timeout, symmetry, por, cta_symmetry, deadline, built=None,
               strict_exit=False):
    from pipeproof.checker.engines.explore import INTERRUPTED
    from pipeproof.checker.engines.verifier import verify
    from pipeproof.spec.load import load_spec
    from pipeproof.spec.schema import SpecError

    settled = {}
    for i, path in enumerate(specs):
        try:
            spec = load_spec(path)
        except SpecError:
            continue  # the caller reports it, as always
        left = deadline - time.monotonic()
        if left <= 0 or (built is not None and built.is_set()):
            return None
        try:
            limits = [x for x in (left, timeout) if x is not None and x != float("inf")]
            result = verify(spec, max_states=max_states, symmetry=symmetry, por=por,
                            cta_symmetry=cta_symmetry and symmetry, strict_exit=strict_exit,
                            timeout=min(limits) if limits else None)
        except Exception:  # let the compiled run meet (and report) it
            return None
        if result.limit == INTERRUPTED:  # Ctrl-C: answer what was found, run nothing more
            settled[i] = result
            return settled
        if result.limit:  # the budget, the build done, or the user's own limit: compiled decides
            return None
        settled[i] = result
    return settled


class _BuildWatcher:
    """While plain Python answers: `done` is set when the engines' build has finished (or
    failed: the compiled run then compiles in its own process), and stderr hears about the
    build after a few seconds and every few seconds after, so no wait is silent."""

    def __init__(self, build):
        import threading
        self.build = build
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        from pipeproof.checker.runtime import jitcache
        pace = jitcache.Pace("compiling the engines with numba in the background (once after an "
                             "install or upgrade); plain Python answers meanwhile",
                             "still compiling the engines in the background")
        while not self._stop.wait(0.2):
            if jitcache.ready() or jitcache.build_failed(self.build):
                self.done.set()
                return
            pace.tell()

    def stop(self):
        self._stop.set()
        self._thread.join()


def run_compiled() -> None:
    """Replace this process by the same command with the compiled engine."""
    sys.stdout.flush()
    sys.stderr.flush()
    env = dict(os.environ, **{ENV: "1"})
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
