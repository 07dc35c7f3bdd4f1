"""Benchmark: does numba's on-disk cache keep a compiled function that takes another compiled
function as an argument? (docs/architecture.md "Two compiled search loops, one store".)

One BFS skeleton shared by the explicit engine and the lap abstraction, compiled, would take the
per-state expansion as such an argument. This script writes a tiny module with a cached
`skeleton(callback, n)` and two cached callbacks into a temporary folder, then calls it in two
fresh processes, one after the other, and prints what numba's cache reported in each: hits and
misses, and the seconds of the call. The engines' own functions (plain arguments) load from the
cache in the second process; if the skeleton missed there too, every run would compile the
engines again.

    python benchmarks/numba_callback_cache.py
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = '''
from numba import njit

@njit(cache=True)
def grow(x):
    return x + 1

@njit(cache=True)
def double(x):
    return x * 2

@njit(cache=True)
def skeleton(callback, n):
    s = 0
    for i in range(n):
        s += callback(i)
    return s

@njit(cache=True)
def plain(n):
    s = 0
    for i in range(n):
        s += grow(i)
    return s
'''

CHILD = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import cbmod
t = time.perf_counter()
cbmod.skeleton(cbmod.grow, 10); cbmod.skeleton(cbmod.double, 10)
t_skel = time.perf_counter() - t
t = time.perf_counter()
cbmod.plain(10)
t_plain = time.perf_counter() - t
def count(d):
    return {"hits": sum(d.stats.cache_hits.values()), "misses": sum(d.stats.cache_misses.values())}
print(json.dumps({"skeleton": count(cbmod.skeleton), "skeleton_s": round(t_skel, 3),
                  "plain": count(cbmod.plain), "plain_s": round(t_plain, 3)}))
'''


def main() -> int:
    import numba
    with tempfile.TemporaryDirectory() as d:
        Path(d, "cbmod.py").write_text(MODULE)
        print(f"numba {numba.__version__}, python {sys.version.split()[0]}; cache in a fresh folder")
        print("process  function                 cache hits  misses  seconds")
        for run in (1, 2):
            out = subprocess.run([sys.executable, "-c", CHILD, d], capture_output=True, text=True,
                                 check=True).stdout
            r = json.loads(out)
            print(f"{run:7d}  skeleton(callback, n)  {r['skeleton']['hits']:10d}  "
                  f"{r['skeleton']['misses']:6d}  {r['skeleton_s']:7.3f}")
            print(f"{run:7d}  plain(n)               {r['plain']['hits']:10d}  "
                  f"{r['plain']['misses']:6d}  {r['plain_s']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
