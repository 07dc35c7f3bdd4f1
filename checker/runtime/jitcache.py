"""The compiled engines: when they are built, and who waits (backends/numba_cache.py says
where numba caches them, and drops a cache older than its sources).

A fresh install has no compiled engines. They are built once, by one detached process
(`python -m pipeproof.checker.cli.build_engines`, under checker/runtime/engine_build.py's
lock), which compiles every engine (search, laps and prove, BMC's replay) and then writes a
marker named after the digest. Commands never compile in their own
process when that works:

- `pipeproof verify` answers in plain Python while the build runs (checker/engines/tier.py), and
  hands over to the compiled engine the moment the build is done;
- a command that needs the compiled engine waits for the marker, saying so every few seconds,
  and no longer than its `--timeout` (then it answers `inconclusive`; the build goes on, for
  the next run).

Concurrent first runs start at most one build between them: the build holds an exclusive
`flock` for its whole life, and numba writes each cache file to a temporary name and renames it,
so a reader sees a whole file or none.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from pathlib import Path

from pipeproof.backends.numba_cache import IN_TREE, ROOT, choose_cache_dir, engine_digest, user_wide, writable

try:
    import fcntl
except ImportError:  # no flock (Windows): no build process; commands compile in-process
    fcntl = None

NOTICE_AFTER = 3.0  # seconds of silence before the first line about compiling
EVERY = 10.0        # and then a line this often, so no wait is silent for long
BUILDING = "PIPEPROOF_BUILDING"  # set in the build process
# The build process's entry point, started by name (`python -m`): it sits above the engines and
# BMC it compiles, and this floor wing never imports it.
BUILD_MODULE = "pipeproof.checker.cli.build_engines"


def state_dir() -> Path:
    """Where the ready marker and the build lock live: with the compiled code."""
    choose_cache_dir()
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"]) / "pipeproof"
    if writable(IN_TREE):
        return IN_TREE
    return user_wide() / "pipeproof"


def numba_release() -> str:
    """Which numba is installed, without importing it: its generated `_version.py` names the
    release (read in a fraction of a millisecond; importlib.metadata costs ~10 ms of every
    command's start)."""
    import importlib.util
    spec = importlib.util.find_spec("numba")
    try:
        return (Path(spec.origin).parent / "_version.py").read_text()
    except (AttributeError, TypeError, OSError):
        from importlib.metadata import version
        return version("numba")


@functools.lru_cache(maxsize=None)  # the sources do not change under a running command
def ready_marker() -> Path:
    h = hashlib.sha256(f"{ROOT}\0{sys.version}\0{numba_release()}\0{engine_digest()}".encode())
    return state_dir() / f"engines-{h.hexdigest()[:20]}.ready"


def ready() -> bool:
    """Whether every engine is compiled and cached for these sources, this Python and numba."""
    try:
        return ready_marker().exists()
    except OSError:
        return False


# ------------------------------------------------------------------ the build

def lock_path() -> Path:
    return state_dir() / "engines.lock"


def building() -> bool:
    """Whether a build process holds the lock now."""
    if fcntl is None:
        return False
    try:
        with open(lock_path(), "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def start_build():
    """Start the detached build unless the engines are ready or a build runs. Returns the
    build's Popen, True when another process builds them, None when they are ready, False
    when no build can run (nowhere to write): the caller then compiles in its own process."""
    import subprocess
    if ready():
        return None
    if building():
        return True
    d = state_dir()
    if fcntl is None or not writable(d):
        return False
    env = dict(os.environ, PIPEPROOF_JIT="1", **{BUILDING: "1"})
    with open(d / "engines-build.log", "ab") as log:
        return subprocess.Popen([sys.executable, "-m", BUILD_MODULE], cwd=str(ROOT),
                                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)  # a Ctrl-C of the command leaves it be


def build_failed(build) -> bool:
    """Whether a build started by `start_build` ended without marking the engines ready."""
    if ready():
        return False
    if build is not True and build.poll() is None:
        return False  # ours is still starting or running (it takes the lock after its start)
    return not building() and not ready()


def wait_ready(timeout: float | None, build) -> bool | None:
    """Wait for `build` (from `start_build`): True when the engines are ready, False when
    `timeout` passed first, None when it failed (the caller compiles in its own process)."""
    pace = Pace("waiting for the engines to compile with numba (once after an install or "
                "upgrade; cached for later runs)", "still compiling the engines")
    while not ready():
        if build_failed(build):
            return None
        if timeout is not None and pace.waited() >= timeout:
            return False
        pace.tell()
        time.sleep(0.1)
    if pace.said is not None:
        _say(f"compiled engines ready after {pace.waited():.0f} s")
    return True


def ensure_engines(timeout: float | None = None) -> bool:
    """Before a compiled engine's first call: True once they can be loaded (or must be
    compiled in this process), False if `timeout` passed while the build ran."""
    if os.environ.get("PIPEPROOF_JIT", "1") == "0" or os.environ.get(BUILDING):
        return True  # nothing to compile; or this is the build, which must not wait for itself
    build = start_build()
    if build is None or build is False:
        return True
    return wait_ready(timeout, build) is not False


def _say(text: str) -> None:
    print(f"pipeproof: {text}", file=sys.stderr, flush=True)


class Pace:
    """The lines of a wait: `first` after NOTICE_AFTER seconds, then `again` every EVERY."""

    def __init__(self, first: str, again: str):
        self.first, self.again = first, again
        self.started = time.monotonic()
        self.said = None  # seconds into the wait of the last line

    def waited(self) -> float:
        return time.monotonic() - self.started

    def tell(self) -> None:
        waited = self.waited()
        if (self.said is None and waited >= NOTICE_AFTER) or (
                self.said is not None and waited - self.said >= EVERY):
            _say(f"{self.first if self.said is None else self.again}, {waited:.0f} s")
            self.said = waited


class compile_notice:
    """`with compile_notice("search engine"):` around the first call of a numba engine in a
    process that compiles it itself (no build process could run). Loading a cached engine
    takes about a second, compiling one much longer; so after NOTICE_AFTER seconds a line on
    stderr says what is happening, and another every EVERY seconds until it is done."""

    def __init__(self, what: str):
        self.what = what
        self._done = None

    def __enter__(self):
        import threading
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._tell, daemon=True)
        self._thread.start()
        return self

    def _tell(self):
        started = time.monotonic()
        if self._done.wait(NOTICE_AFTER):
            return
        _say(f"compiling the {self.what} with numba (once after an install or upgrade; it is "
             f"cached for later runs) ...")
        while not self._done.wait(EVERY):
            _say(f"still compiling the {self.what}, {time.monotonic() - started:.0f} s")
        _say(f"compiled the {self.what} in {time.monotonic() - started:.0f} s")

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        return False

