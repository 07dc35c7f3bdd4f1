"""Keep numba's on-disk cache honest.

numba keys a cached function by its own source file only. `explore.expand` inlines the
semantics and backend functions of other files, so after an edit to those files (or an
upgrade of pipeproof) it would load a stale compiled engine. Before anything is compiled or
loaded, this compares a digest of every engine source with the one recorded beside the cache
and drops the cached code when they differ.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE_SOURCES = ("backends/base.py", "backends/nvidia.py", "backends/amd.py",
                  "checker/semantics.py", "checker/explore.py", "checker/model.py",
                  "checker/symmetry.py", "checker/laps.py", "checker/prove.py", "checker/por.py")
CACHE_DIRS = ("backends/__pycache__", "checker/__pycache__")
MARKER = "checker/__pycache__/engine-sources.sha256"


def engine_digest() -> str:
    h = hashlib.sha256()
    for rel in ENGINE_SOURCES:
        path = ROOT / rel
        h.update(rel.encode())
        h.update(path.read_bytes() if path.exists() else b"")
    return h.hexdigest()


def drop_stale_cache() -> None:
    try:
        digest = engine_digest()
        marker = ROOT / MARKER
        if marker.exists() and marker.read_text() == digest:
            return
        for rel in CACHE_DIRS:
            for pattern in ("*.nbi", "*.nbc"):
                for f in (ROOT / rel).glob(pattern):
                    f.unlink(missing_ok=True)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(digest)
    except OSError:
        pass  # a read-only install: numba then keeps its cache elsewhere or compiles in memory


class compile_notice:
    """`with compile_notice("search engine"):` around the first call of a numba engine. Loading
    a cached engine takes about a second; compiling one takes minutes on a small machine. So
    after NOTICE_AFTER seconds a line on stderr says what is happening, and another every
    EVERY seconds until it is done: a first run never stalls in silence."""

    NOTICE_AFTER = 3.0
    EVERY = 10.0

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
        import sys
        import time
        started = time.monotonic()
        if self._done.wait(self.NOTICE_AFTER):
            return
        print(f"pipeproof: compiling the {self.what} with numba (once after an install or "
              f"upgrade; it is cached for later runs) ...", file=sys.stderr, flush=True)
        while not self._done.wait(self.EVERY):
            print(f"pipeproof: still compiling the {self.what}, {time.monotonic() - started:.0f} s",
                  file=sys.stderr, flush=True)
        print(f"pipeproof: compiled the {self.what} in {time.monotonic() - started:.0f} s",
              file=sys.stderr, flush=True)

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        return False
