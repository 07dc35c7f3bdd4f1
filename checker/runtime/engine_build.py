"""The build of the compiled engines, under its lock: `build(compile_all)` compiles every engine
once (`compile_all`, which the build's entry point passes in), then writes the ready marker that
every later command looks for; and `tiny_spec`, the one-slot pipeline every warm-up runs.

The build process is started by checker/runtime/jitcache.py as `python -m` its entry point,
checker/cli/build_engines.py (jitcache.BUILD_MODULE, a name, not an import). That entry point
sits above the engines and BMC it compiles, so neither this wing nor any engine depends back on
them: the runtime wing is the floor.
"""
from __future__ import annotations

import os
import time
from typing import Callable

from pipeproof.backends.numba_cache import drop_stale_cache
from pipeproof.checker.runtime.jitcache import lock_path, ready_marker, fcntl, ready, state_dir


def build(compile_all: Callable[[], object]) -> int:
    """The build process: compile every engine once (`compile_all()`), under the lock, then mark
    them ready. Returns the process's exit status."""
    d = state_dir()
    with open(lock_path(), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent build finishes first; then nothing to do
        if ready():
            return 0
        drop_stale_cache()
        started = time.monotonic()
        if os.environ.get("PIPEPROOF_BUILD_SLOW"):  # tests: a build that takes this long
            time.sleep(float(os.environ["PIPEPROOF_BUILD_SLOW"]))
        compile_all()
        marker = ready_marker()
        tmp = d / f".{marker.name}.{os.getpid()}"
        tmp.write_text(f"compiled in {time.monotonic() - started:.1f} s\n")
        os.replace(tmp, marker)
    return 0


def tiny_spec():
    """A one-slot pipeline, only for loading the compiled engines (each engine's warm-up runs it:
    the search, prove's laps, BMC's replay)."""
    from pipeproof.spec.schema import Op, Role, Spec
    return Spec(path="<warm-up>", name="warm-up", backend="nvidia", stages=1,
                producer_arrive_count=1, consumer_arrive_count=1, items=1, roles=(
                    Role("p", "producer", 1, 1, 0, 1, body=(Op("wait_empty"), Op("arrive_full"))),
                    Role("c", "consumer", 1, 1, 0, 0, body=(Op("wait_full"), Op("read")))))
