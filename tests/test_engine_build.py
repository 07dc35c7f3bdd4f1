"""Issue 15, goal 1: a fresh install. The compiled engines are built once, by one process, while
plain Python answers; `--timeout` bounds the wait; concurrent first runs share one build; a
read-only install works. Each test gets caches of its own (a fresh NUMBA_CACHE_DIR, or a fresh
read-only copy of the package), so each one really starts with nothing compiled."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeproof import checker
from benchmarks.standard_pipeline import make_toml
from tests.paths import CLI
from tests.specs import standard_toml

PACKAGE_ROOT = Path(checker.__file__).resolve().parent.parent  # the source tree or site-packages
# Two million states with symmetry alone: a few seconds compiled, many minutes as plain Python.
BIG = make_toml(8, 4, 16)
BIG_STATES = "2126417 states"


def fresh_env(cache: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPEPROOF_", "NUMBA_"))}
    return dict(env, NUMBA_CACHE_DIR=str(cache), **extra)


def start(args, cwd, env):
    return subprocess.Popen(CLI + [str(a) for a in args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for_build(cache: Path, limit: float = 600):
    deadline = time.monotonic() + limit
    while not list((cache / "pipeproof").glob("engines-*.ready")):
        assert time.monotonic() < deadline, "the engines' build never finished"
        time.sleep(0.5)


@pytest.mark.slow  # pytest -m slow; CI runs it (.ci/run)
@pytest.mark.clock  # timed against the wall clock: CI runs it serially
def test_a_fresh_install_answers_at_once_bounds_the_wait_and_builds_once(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "big.toml").write_text(BIG)
    (tmp_path / "small.toml").write_text(standard_toml(items=3))

    # 1. Nothing compiled, a limit of 2 s, an engine that needs the compiled code (bmc): the
    #    command waits 2 s for the build it starts, and says inconclusive.
    began = time.monotonic()
    p = subprocess.run(CLI + ["verify", "--engine", "bmc", "--timeout", "2", "small.toml"],
                       cwd=tmp_path, env=fresh_env(cache, PIPEPROOF_BUILD_SLOW="8"),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "inconclusive" in p.stdout and "while the compiled engines were being built" in p.stdout
    assert time.monotonic() - began < 30

    # 2. While that build runs, a small spec is answered by plain Python straight away ...
    began = time.monotonic()
    p = subprocess.run(CLI + ["verify", "small.toml"], cwd=tmp_path, env=fresh_env(cache),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("small.toml: ok ("), p.stdout + p.stderr
    assert time.monotonic() - began < 30
    assert not list((cache / "pipeproof").glob("engines-*.ready"))  # the build is still going

    # 3. ... and two big ones at once run as plain Python until the same build is done, say so
    #    on stderr, then hand over to the compiled engine: the answer a compiled run gives.
    runs = [start(["verify", "--no-por", "big.toml"], tmp_path, fresh_env(cache)) for _ in range(2)]
    outs = [r.communicate(timeout=900) for r in runs]
    for r, (out, err) in zip(runs, outs):
        assert r.returncode == 0, out + err
        assert out.startswith("big.toml: ok (" + BIG_STATES), out
        assert "compiling the engines with numba in the background" in err, err
    log = (cache / "pipeproof" / "engines-build.log").read_text()
    assert log.count("compiled the search engine") == 1, log  # one build for all four commands

    # 4. Later runs load it: no build, no waiting.
    p = subprocess.run(CLI + ["verify", "--engine", "bmc", "small.toml"], cwd=tmp_path,
                       env=fresh_env(cache), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "compil" not in p.stderr, p.stdout + p.stderr


@pytest.mark.slow  # pytest -m slow; CI runs it (.ci/run)
@pytest.mark.clock  # timed against the wall clock: CI runs it serially
def test_a_read_only_install_with_a_read_only_home_still_checks(tmp_path):
    site = tmp_path / "site"
    for package in ("checker", "backends", "spec", "cuda_ref"):  # laid out as a wheel installs
        shutil.copytree(PACKAGE_ROOT / package, site / "pipeproof" / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    (tmp_path / "small.toml").write_text(standard_toml(items=3))
    for d in (site, home):
        subprocess.run(["chmod", "-R", "a-w", str(d)], check=True)
    # root writes anywhere; without these capabilities it obeys the modes like anyone else
    drop = (["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
            if os.geteuid() == 0 else [])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIPEPROOF_", "NUMBA_", "XDG_"))}
    env.update(HOME=str(home), TMPDIR=str(scratch), PYTHONPATH=str(site), PIPEPROOF_JIT="1")
    try:
        where = subprocess.run([sys.executable, "-c", "import pipeproof.checker as c; print(c.__file__)"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert where.stdout.startswith(str(site)), where.stdout + where.stderr  # the read-only copy
        p = subprocess.run(drop + CLI + ["verify", "small.toml"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=900)
        assert p.returncode == 0 and p.stdout.startswith("small.toml: ok ("), p.stdout + p.stderr
        private = scratch / f"pipeproof-numba-{os.getuid()}"
        assert list(private.rglob("*.nbc")), "compiled code cached in the private directory"
        assert not list(site.rglob("*.nbc"))
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(site), str(home)], check=True)


def test_a_missing_engine_source_fails_loudly(monkeypatch):
    """Issue 33: a moved engine source must not be hashed as nothing (a stale compiled engine
    would then be loaded forever): the digest names the missing file instead."""
    from pipeproof.backends import numba_cache
    monkeypatch.setattr(numba_cache, "ENGINE_SOURCES",
                        numba_cache.ENGINE_SOURCES + ("checker/engines/moved_away.py",))
    with pytest.raises(numba_cache.MissingEngineSource, match="checker/engines/moved_away.py"):
        numba_cache.engine_digest()
    with pytest.raises(numba_cache.MissingEngineSource):
        numba_cache.drop_stale_cache()  # not swallowed like a read-only cache folder


def test_every_compiled_module_is_an_engine_source():
    """Each module that compiles functions with backends.base.jit/njit is in ENGINE_SOURCES, so
    an edit to it drops the cached engines; and each listed source exists."""
    import re
    from pipeproof.backends import numba_cache
    root = numba_cache.ROOT
    compiled = {str(p.relative_to(root)) for folder in ("backends", "checker")
                for p in (root / folder).rglob("*.py")
                if re.search(r"^@(jit|njit)\b", p.read_text(), re.M)}
    assert compiled and compiled <= set(numba_cache.ENGINE_SOURCES), \
        sorted(compiled - set(numba_cache.ENGINE_SOURCES))
    assert all((root / rel).is_file() for rel in numba_cache.ENGINE_SOURCES)
