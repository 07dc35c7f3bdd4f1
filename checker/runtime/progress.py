"""Progress of a long search on stderr (issue 32): no long search is silent.

On a terminal, a search asked for progress (`Search(progress=True)`, `pipeproof verify` on a
terminal) keeps one line up to date, about once a second, and clears it at the end. When
stderr is not a terminal (a CI log, a pipe, a file), every search that runs in a command's own
process (`enable`, called by the console entry point) prints a line after FIRST_SECONDS and
then every EVERY_SECONDS: states, depth, states/s, memory, seconds. A search in a library call,
a test, or a worker process of a command (another pid) prints nothing.

Plain Python, no numba: the command line imports it before it knows which engine runs.
"""
from __future__ import annotations

import os
import sys
import time

FIRST_SECONDS = 3.0
EVERY_SECONDS = 10.0
LIVE_SECONDS = 1.0

_command_pid = None


def enable() -> None:
    """Searches in this process (only: not in workers it starts) report their progress."""
    global _command_pid
    _command_pid = os.getpid()


def _is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def mode(asked: bool) -> str:
    """'live' (one line kept up to date on a terminal), 'lines' (a line now and then, for a
    log) or '' (silent), for a search `asked` for progress or not."""
    terminal = _is_terminal()
    if asked and terminal:
        return "live"
    if _command_pid == os.getpid() and not terminal:
        return "lines"
    return ""


def memory_bytes() -> int:
    """The resident memory of this process now (the peak where /proc is absent)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _memory_text(n: int) -> str:
    if n >= 2**30:
        return f"{n / 2**30:.1f} GB"
    return f"{n / 2**20:.0f} MB"


class Reporter:
    """`tell(states, depth)` between chunks of a search; `done()` at its end."""

    def __init__(self, asked: bool, what: str = "", started: float | None = None):
        self.mode = mode(asked)
        self.what = what
        self.started = time.monotonic() if started is None else started
        self.next_at = self.started + (LIVE_SECONDS if self.mode == "live" else FIRST_SECONDS)
        self.shown = False

    def line(self, states: int, depth: int | None, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        head = f"{self.what}: " if self.what else ""
        depth_text = "" if depth is None else f"depth {depth}, "
        return (f"{head}searching: {states:,} states, {depth_text}"
                f"{states / elapsed:,.0f} states/s, {_memory_text(memory_bytes())}, "
                f"{elapsed:.0f} s")

    def tell(self, states: int, depth: int | None, now: float | None = None) -> None:
        if not self.mode:
            return
        now = time.monotonic() if now is None else now
        if now < self.next_at:
            return
        text = self.line(states, depth, now)
        if self.mode == "live":
            print(f"\r\033[K  {text}", end="", file=sys.stderr, flush=True)
            self.next_at = now + LIVE_SECONDS
        else:
            print(f"pipeproof: {text}", file=sys.stderr, flush=True)
            self.next_at = now + EVERY_SECONDS
        self.shown = True

    def done(self) -> None:
        if self.mode == "live" and self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
