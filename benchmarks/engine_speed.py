"""Benchmark: the explicit engine's BFS alone, with and without its reductions.

Per cell of the standard pipeline (benchmarks/standard_pipeline.py) and per reduction setting
(symmetry and partial-order reduction both on; symmetry only; none), a fresh subprocess
compiles the model, loads the numba engine on a tiny spec (not timed), then times
`Search(model, symmetry=..., por=...).run()`: the BFS, no trace building. Reported:

  states      states stored (orbits under symmetry)
  depth       the deepest BFS level reached
  seconds     the search alone (wall)
  states/s    states / seconds
  B/state     bytes of the search's arrays (store, hash table, parent, action, ...) at the end,
              divided by the states stored: capacity slack and the table's empty slots included

`--repo` runs the same children in other checkouts (each child's cwd and import path is that
tree), so an old and a new engine can be compared in one run, cell by cell:

    python benchmarks/engine_speed.py                                   # this tree
    python benchmarks/engine_speed.py --repo /work/main --repo .        # side by side
    python benchmarks/engine_speed.py --cells 8,4,8 --no-plain          # with symmetry only
    python benchmarks/engine_speed.py --no-por                          # trees without por.py
    python benchmarks/engine_speed.py --repo OLD --repo . --por-only    # two reductions
    python benchmarks/engine_speed.py --repo OLD --repo . --repeat 3    # alternating, medians

With `--repeat K` every row is run K times, the trees' order reversed each time (a machine
that gets busier or quieter during a run then favours neither tree), and the median seconds
of each tree are compared.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
CELLS = [(4, 4, 8), (8, 4, 8), (2, 8, 8), (4, 5, 8), (8, 8, 8)]


def _import_tree(repo: str):
    """`import` for the checkout `repo`: its packages as `pipeproof.*` (a tree that installs
    under that namespace, mapped to this checkout rather than the installed one) or, in a tree
    from before the namespace, by their top-level names."""
    import importlib
    import types
    sys.path.insert(0, repo)
    if "pipeproof." in (Path(repo) / "checker" / "cli.py").read_text():
        ns = types.ModuleType("pipeproof")
        ns.__path__ = [repo]
        sys.modules["pipeproof"] = ns
        return lambda name: importlib.import_module(f"pipeproof.{name}")
    return importlib.import_module


def child(repo: str, n: int, c: int, i: int, symmetry: bool, por: bool) -> dict:
    load = _import_tree(repo)
    import numpy as np
    from benchmarks.standard_pipeline import load_cell
    Search = load("checker.engines.explore").Search
    compile_model = load("checker.core.model").compile_model
    warm_up = load("checker.engines.verifier").warm_up

    warm_up()
    model = compile_model(load_cell(n, c, i))
    t0 = time.perf_counter()
    search = Search(model, symmetry=symmetry, por=True) if por else Search(model, symmetry=symmetry)
    kinds, depth = search.run()
    seconds = time.perf_counter() - t0
    arrays = sum(v.nbytes for v in vars(search).values() if isinstance(v, np.ndarray))
    return {"states": int(search.n_stored), "transitions": search.transitions,
            "kinds": [int(k) for k in kinds], "depth": depth, "max_depth": search.max_depth,
            "limit": search.limit, "seconds": seconds, "bytes": arrays, "words": model.words}


def spawn(repo: Path, cell, symmetry: bool, por: bool, timeout: float) -> dict:
    n, c, i = cell
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(repo), f"{n},{c},{i}",
           "1" if symmetry else "0", "1" if por else "0"]
    try:
        proc = subprocess.run(cmd, cwd=str(repo), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"killed after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
    return json.loads(lines[-1])


def _median_run(runs: list[dict]) -> dict:
    """The run of median seconds (the first error, if any run failed)."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=lambda r: r["seconds"])
    row = dict(ordered[len(ordered) // 2])
    row["all_seconds"] = [round(r["seconds"], 3) for r in runs]
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", metavar="N,C,I")
    ap.add_argument("--repo", action="append", metavar="DIR",
                    help="checkout to measure (repeatable; default: this one)")
    ap.add_argument("--no-plain", action="store_true", help="only with symmetry reduction")
    ap.add_argument("--no-symmetry", action="store_true", help="only without symmetry reduction")
    ap.add_argument("--no-por", action="store_true", help="never with partial-order reduction")
    ap.add_argument("--por-only", action="store_true",
                    help="only with both reductions (to compare two trees' reductions)")
    ap.add_argument("--timeout", type=float, default=1800, help="per child, seconds")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="run each row K times, alternating the trees' order; compare medians")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        repo, cell, sym, por = args.child
        print(json.dumps(child(repo, *(int(x) for x in cell.split(",")), sym == "1", por == "1")),
              flush=True)
        return 0

    cells = [tuple(int(x) for x in t.split(",")) for t in args.cells] if args.cells else CELLS
    repos = [Path(r).resolve() for r in (args.repo or [HERE])]
    modes = [m for m, skip in (((True, True), args.no_symmetry or args.no_por),
                               ((True, False), args.no_symmetry or args.por_only),
                               ((False, False), args.no_plain or args.por_only))
             if not skip]
    print(f"engine speed: {time.strftime('%Y-%m-%d %H:%M')}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs; one fresh process per row")
    for r in repos:
        rev = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=r, capture_output=True,
                             text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=r,
                               capture_output=True, text=True).stdout.strip()
        print(f"  {r}: {rev}{' (with uncommitted changes)' if dirty else ''}")
    print(f"{'N':>2} {'C':>2} {'I':>2} {'sym':>3} {'por':>3}  {'tree':<14} {'verdict':<10} {'states':>11} "
          f"{'transitions':>12} {'depth':>5} {'seconds':>8} {'states/s':>10} {'B/state':>8}")
    same = True
    for cell in cells:
        for sym, por in modes:
            runs = {repo: [] for repo in repos}
            for rep in range(args.repeat):
                for repo in (repos if rep % 2 == 0 else repos[::-1]):
                    runs[repo].append(spawn(repo, cell, sym, por, args.timeout))
            rows = []
            for repo in repos:
                row = _median_run(runs[repo])
                rows.append(row)
                n, c, i = cell
                head = (f"{n:>2} {c:>2} {i:>2} {'on' if sym else 'off':>3} {'on' if por else 'off':>3}"
                        f"  {repo.name[:14]:<14}")
                if "error" in row:
                    print(f"{head} failed: {row['error']}", flush=True)
                    continue
                verdict = ("violation" if row["kinds"] else "inconclusive" if row["limit"] else "ok")
                print(f"{head} {verdict:<10} {row['states']:>11,} {row['transitions']:>12,} "
                      f"{row['max_depth']:>5} {row['seconds']:>8.2f} "
                      f"{row['states'] / max(row['seconds'], 1e-9):>10,.0f} "
                      f"{row['bytes'] / max(row['states'], 1):>8.1f}"
                      + (f"  runs {row['all_seconds']}" if args.repeat > 1 else ""), flush=True)
            if len(rows) > 1:
                keys = ("states", "transitions", "kinds", "depth", "max_depth", "limit")
                ok = [r for r in rows if "error" not in r]
                speed_up = (f"speed-up {ok[0]['seconds'] / max(ok[-1]['seconds'], 1e-9):.2f}x "
                            f"(first tree / last)") if len(ok) == len(rows) else ""
                if len(ok) == len(rows) and all(all(r[k] == ok[0][k] for k in keys) for r in ok):
                    print(f"{'':>13} same states, transitions, verdict and depth; {speed_up}",
                          flush=True)
                elif len(ok) == len(rows) and por and all(
                        (r["kinds"], r["limit"]) == (ok[0]["kinds"], ok[0]["limit"]) for r in ok):
                    # two trees' reductions may store different graphs of the same verdict
                    print(f"{'':>13} same verdict, different reduced graphs; {speed_up}",
                          flush=True)
                elif len(ok) < len(rows):
                    print(f"{'':>13} not comparable: a tree did not finish", flush=True)
                else:
                    same = False
                    print(f"{'':>13} MISMATCH between trees", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
