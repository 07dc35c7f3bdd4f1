"""The build process (checker/runtime/jitcache.py starts it): compile every engine once, under the
build lock, then write the ready marker that every later command looks for.

Nothing imports this module; it runs as `python -c jitcache.BUILD_COMMAND`. It sits above
every engine it compiles, so no engine depends back on it.
"""
from __future__ import annotations

import os
import time

from pipeproof.backends.numba_cache import drop_stale_cache
from pipeproof.checker.runtime.jitcache import lock_path, ready_marker, fcntl, ready, state_dir


def build() -> int:
    """The build process: compile every engine once, under the lock, then mark them ready."""
    d = state_dir()
    with open(lock_path(), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent build finishes first; then nothing to do
        if ready():
            return 0
        drop_stale_cache()
        started = time.monotonic()
        if os.environ.get("PIPEPROOF_BUILD_SLOW"):  # tests: a build that takes this long
            time.sleep(float(os.environ["PIPEPROOF_BUILD_SLOW"]))
        warm_up_all()
        marker = ready_marker()
        tmp = d / f".{marker.name}.{os.getpid()}"
        tmp.write_text(f"compiled in {time.monotonic() - started:.1f} s\n")
        os.replace(tmp, marker)
    return 0


def warm_up_all() -> None:
    from pipeproof.checker.engines import warm_up_prove
    from pipeproof.checker.smt import warm_up as warm_up_bmc
    from pipeproof.checker.engines import warm_up
    warm_up()
    warm_up_prove()
    warm_up_bmc()
