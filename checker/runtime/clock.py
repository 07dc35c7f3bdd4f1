"""The command's wall time: seconds since its process started, as a user's stopwatch reads it.

A result's `seconds` is its search alone; the process also pays for Python's start, the
imports (numba's alone is most of a second), loading the spec, the pre-check and the specs
before it. `wall()` counts all of it. On Linux it reads the process's start time from
/proc/self/stat, which survives the plain-Python first try replacing the process by the
compiled run (checker/engines/tier.py: `execve` keeps the process and its start time). Elsewhere, or
when /proc disagrees with the clock, it counts from the first import of this module, carried
across that `execve` in the environment (START_ENV).
"""
from __future__ import annotations

import os
import time

START_ENV = "PIPEPROOF_STARTED_AT"  # "PID:time.time()" at the first import, for a replaced
                                    # process (same pid); a child process ignores its parent's


def _import_start() -> float:
    pid, _, at = os.environ.get(START_ENV, "").partition(":")
    if pid == str(os.getpid()):
        try:
            return float(at)
        except ValueError:
            pass
    now = time.time()
    os.environ[START_ENV] = f"{os.getpid()}:{now!r}"
    return now


_STARTED = _import_start()


def _proc_seconds() -> float | None:
    """Seconds since this process started, by /proc (Linux), or None."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


def wall() -> float:
    """Seconds since the command's process started (never less than since the first import)."""
    since_import = time.time() - _STARTED
    by_proc = _proc_seconds()
    # /proc counts the interpreter's own start too; trust it only where it is plausible (a
    # container's clocks may disagree): not below the import's count, nor far above it
    if by_proc is not None and since_import <= by_proc + 0.02 <= since_import + 30:
        return max(by_proc, since_import)
    return since_import
