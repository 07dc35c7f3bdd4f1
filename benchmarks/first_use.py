"""Benchmark: a new user's first minutes (issue 15), on a fresh clone of a commit.

For each commit: `git clone` into a temporary directory, a fresh venv, the README's install
command (`pip install -e '.[test]'`), then, each with a fresh numba cache (NUMBA_CACHE_DIR
pointed at an empty directory, so nothing compiled is reused between the figures):

  install        seconds of `pip install -e '.[test]'`
  examples       `pipeproof verify spec/examples/*.toml`: wall seconds, peak RSS (MB, the
                 largest process), exit code
  first_line     `pipeproof verify spec/examples/cutlass_tma_async_cluster2.toml`: seconds
                 until its first line on stdout
  compiled       `pipeproof verify --engine laps SPEC` (needs the compiled engines): wall
  prove_after    `pipeproof prove SPEC` right after `compiled`, same cache: wall
  limit90        every example in turn, each under `timeout 90`, one shared fresh cache:
                 how many did not finish, and the slowest wall

    python benchmarks/first_use.py --commit 199f788 --commit HEAD

Peak RSS is read from /usr/bin/time -v of the command (its largest process; a background
compile is a process of its own). Before each figure the benchmark waits until no engine
build started by an earlier one still runs.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SPEC = "spec/examples/cutlass_tma_async_cluster2.toml"


def sh(cmd, cwd, env=None, timeout=3600):
    began = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, env=env, shell=True, capture_output=True, text=True,
                       timeout=timeout)
    return p, time.monotonic() - began


def peak_mb(stderr: str) -> float:
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    return int(m.group(1)) / 1024 if m else float("nan")


def settle() -> None:
    """Wait until no engine build (checker/runtime/jitcache.py) runs in the background, so that no
    figure shares the CPUs with the build a figure before it started."""
    while subprocess.run(["pgrep", "-f", "import build; sys.exit"],
                         capture_output=True).returncode == 0:
        time.sleep(1)


def first_line_seconds(cmd, cwd, env) -> float:
    began = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, shell=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    t = time.monotonic() - began
    p.communicate()
    return t


def measure(commit: str, work: Path) -> dict:
    clone = work / f"clone-{commit}"
    subprocess.run(["git", "clone", "-q", str(HERE), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=clone, check=True)
    bin_ = clone / ".venv" / "bin"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PIPEPROOF_", "NUMBA_"))}
    base["PATH"] = f"{bin_}:{base['PATH']}"
    row = {"commit": commit}
    _, row["install"] = sh("pip install -q -e '.[test]'", clone, base)

    def fresh(tag):
        settle()
        return dict(base, NUMBA_CACHE_DIR=str(work / f"cache-{commit}-{tag}"))

    p, row["examples"] = sh("/usr/bin/time -v pipeproof verify -q spec/examples/*.toml", clone,
                            fresh("examples"))
    row["examples_rc"], row["examples_mb"] = p.returncode, peak_mb(p.stderr)
    row["examples_summary"] = (p.stdout.strip().splitlines() or [""])[-1]
    row["first_line"] = first_line_seconds(f"pipeproof verify {SPEC}", clone, fresh("first"))
    env = fresh("compiled")  # nothing compiled, nothing else running: the build alone
    _, row["compiled"] = sh(f"pipeproof verify --engine laps {SPEC}", clone, env)
    _, row["prove_after"] = sh(f"pipeproof prove {SPEC}", clone, env)
    env = fresh("limit90")
    failed, slowest = 0, 0.0
    for spec in sorted((clone / "spec" / "examples").glob("*.toml")):
        p, t = sh(f"timeout 90 pipeproof verify -q {spec.relative_to(clone)}", clone, env)
        failed += p.returncode in (124, 137)
        slowest = max(slowest, t)
    row["limit90_failed"], row["limit90_slowest"] = failed, slowest
    settle()
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commit", action="append", required=True)
    args = ap.parse_args(argv)
    print(f"# python benchmarks/first_use.py {' '.join('--commit ' + c for c in args.commit)}")
    print(f"first use: {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, one commit after the other")
    with tempfile.TemporaryDirectory() as tmp:
        for commit in args.commit:
            r = measure(commit, Path(tmp))
            print(f"{r['commit']}: install {r['install']:.0f} s; examples {r['examples']:.1f} s, "
                  f"peak {r['examples_mb']:.0f} MB, exit {r['examples_rc']} ({r['examples_summary']}); "
                  f"first line of {SPEC} after {r['first_line']:.1f} s; compiled run "
                  f"(--engine laps) {r['compiled']:.1f} s; prove after it {r['prove_after']:.1f} s; "
                  f"examples under a 90 s limit: {r['limit90_failed']} did not finish, slowest "
                  f"{r['limit90_slowest']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
