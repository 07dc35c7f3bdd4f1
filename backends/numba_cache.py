"""Where numba caches the compiled engines, and dropping a cache older than its sources.

numba keys a cached function by its own source file only. `explore.expand` links in the
semantics and backend functions of other files, so after an edit to those files (or an
upgrade of pipeproof) it would load a stale compiled engine. Before numba is imported
(backends/base.py), `drop_stale_cache` compares a digest of every engine source with the one
recorded beside the cache and drops the cached code when they differ, and `choose_cache_dir`
picks a writable cache: beside the sources, else numba's user-wide directory, else a private
temporary one (a read-only install). checker/runtime/jitcache.py builds the engines into it.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the folder holding backends/ and checker/
# Every source a compiled engine is built from (tests/test_engine_build.py checks that each
# module compiling with backends.base.jit/njit is listed).
ENGINE_SOURCES = ("backends/base.py", "backends/nvidia.py", "backends/amd.py",
                  "backends/dispatch.py", "checker/core/state_layout.py", "checker/core/inflight.py",
                  "checker/core/semantics.py", "checker/core/model.py",
                  "checker/engines/explore.py", "checker/engines/symmetries.py",
                  "checker/engines/laps.py", "checker/engines/prover.py", "checker/engines/por.py",
                  "checker/engines/por_deps.py", "checker/engines/por_signals.py",
                  "checker/engines/por_walk.py", "checker/engines/por_select.py")
# numba caches each function beside its own source file
CACHE_DIRS = tuple(sorted({str(Path(rel).parent / "__pycache__") for rel in ENGINE_SOURCES}))
IN_TREE = ROOT / "checker" / "__pycache__"
MARKER = "checker/__pycache__/engine-sources.sha256"
class MissingEngineSource(RuntimeError):
    """An engine source named in ENGINE_SOURCES is not there: a file was moved or renamed
    without updating the list. Hashing nothing would keep a stale compiled engine forever."""


def engine_digest() -> str:
    h = hashlib.sha256()
    for rel in ENGINE_SOURCES:
        path = ROOT / rel
        if not path.is_file():
            raise MissingEngineSource(f"pipeproof: engine source {rel} is missing under {ROOT} "
                                      "(backends/numba_cache.py ENGINE_SOURCES names it)")
        h.update(rel.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def drop_stale_cache() -> None:
    try:
        digest = engine_digest()
        marker = ROOT / MARKER
        if marker.exists() and marker.read_text() == digest:
            return
        for rel in CACHE_DIRS:
            for pattern in ("*.nbi", "*.nbc", "engines-*.ready"):
                for f in (ROOT / rel).glob(pattern):
                    f.unlink(missing_ok=True)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(digest)
    except OSError:
        pass  # a read-only install: numba keeps its cache elsewhere (choose_cache_dir)


def writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=d).close()
        return True
    except OSError:
        return False


def user_wide() -> Path:
    """numba's own user-wide cache directory (its UserWideCacheLocator)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"


def choose_cache_dir() -> None:
    """Before numba is imported: numba caches beside the sources, else in its user-wide
    directory; when neither can be written it would refuse to compile at all, so then it gets
    a private temporary directory (set in the environment, so a build process inherits it)."""
    if os.environ.get("NUMBA_CACHE_DIR") or writable(IN_TREE):
        return
    try:
        if writable(user_wide()):
            return
    except RuntimeError:  # no home directory
        pass
    os.environ["NUMBA_CACHE_DIR"] = str(Path(tempfile.gettempdir()) / f"pipeproof-numba-{os.getuid()}")
