"""Benchmark of `pipeproof sweep` (issue 20): points per second, the cost of a point beyond
its search, the speedup of local workers, and a Dask cluster against the local pool.

    python benchmarks/sweep.py speed [--workers 1,2] [--rounds 5] [--prove] [--repeat K]
    python benchmarks/sweep.py cluster [--workers 2]

The grid is the standard grid: the standard pipeline (benchmarks/standard_pipeline.py: one
producer, C consumer agents, consumer_arrive_count C) at N in {2,4,8} x C in {1..8} x
I in {8,16,32}, 72 points, swept as `stages=2,4,8`, `role.consumer.count+consumer_arrive_count
=1..8`, `items=8,16,32` (`--prove`: each point also proved; `--repeat K`: the grid K times
over, K x 72 points, so a round lasts long enough to time on a busy machine).

speed: one pool per worker count is started first (its start, engines loaded once by the fork
server, is timed apart), then the rounds alternate between the pools, so each worker count
sees the same machine load (the machine is shared: measure ratios side by side). No cache.
Printed per round and worker count: wall seconds, points/s; then the medians, the speedup over
the first worker count, and the cost of a point beyond its search: in the worker (load,
compile, trace: `worker_seconds - seconds`) and end to end with one worker
(`(wall - sum of searches) / points`, hand-off and result handling included).

cluster: a Dask LocalCluster of N worker processes on this machine and a local pool of N
workers run the same grid; the answers (everything but the clock) must be equal, in the same
order; prints both walls.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.standard_pipeline import make_toml  # noqa: E402

AXES = ["stages=2,4,8", "role.consumer.count+consumer_arrive_count=1..8", "items=8,16,32"]


def standard_points(repeat: int = 1):
    """The standard grid's points (K times over, as distinct points of equal text)."""
    import tempfile
    from pipeproof.checker.sweep.points import points_of_spec
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "standard_pipeline.toml"
        path.write_text(make_toml(2, 1, 8).replace('name = "standard pipeline N=2 C=1 I=8"\n', ""))
        points = points_of_spec(str(path), AXES)
    out = []
    for k in range(repeat):
        for p in points:
            q = type(p)(len(out), dict(p.params), p.text, p.error, p.label, "standard_pipeline.toml")
            out.append(q)
    return out


def _answers(records):
    """Everything but the clock."""
    out = []
    for r in records:
        a = {k: v for k, v in r.items() if k not in ("seconds", "worker_seconds", "spec")}
        if a.get("proof"):
            a["proof"] = {k: v for k, v in a["proof"].items() if k != "seconds"}
        out.append(a)
    return out


def speed(args) -> int:
    from pipeproof.checker.sweep import run as R
    from pipeproof.checker.sweep.points import run_sweep
    points = standard_points(args.repeat)
    options = R.default_options(prove=args.prove)
    counts = [int(w) for w in args.workers.split(",")]
    print(f"standard grid: {len(points)} points ({args.repeat} x 72){' with --prove' if args.prove else ''}; "
          f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    pools = {}
    for w in counts:
        pool = R.InProcess(options) if w == 0 else R.LocalPool(options, w)
        started = time.perf_counter()
        pool.start()
        pools[w] = pool
        print(f"  {pool.name}: started, engines loaded, in {time.perf_counter() - started:.2f} s",
              flush=True)
    walls = {w: [] for w in counts}
    reference = None
    overhead_worker, overhead_e2e = [], []
    try:
        print(f"{'round':>5} {'workers':>7} {'wall s':>8} {'points/s':>9} {'search s':>9}", flush=True)
        for r in range(args.rounds):
            order = counts if r % 2 == 0 else counts[::-1]
            for w in order:
                result = run_sweep(points, options, runner=_Kept(pools[w]))
                search = sum(x["seconds"] + ((x["proof"] or {}).get("seconds") or 0)
                             for x in result.records)
                walls[w].append(result.seconds)
                if reference is None:
                    reference = _answers(result.records)
                elif _answers(result.records) != reference:
                    print(f"ANSWERS DIFFER with {w} workers in round {r}")
                    return 1
                if w == min(c for c in counts if c > 0):
                    overhead_worker += [x["worker_seconds"] - x["seconds"]
                                        - ((x["proof"] or {}).get("seconds") or 0)
                                        for x in result.records]
                    overhead_e2e.append((result.seconds * w - search) / len(points))
                print(f"{r:>5} {w:>7} {result.seconds:>8.3f} {len(points) / result.seconds:>9.1f} "
                      f"{search:>9.3f}", flush=True)
    finally:
        for pool in pools.values():
            pool.close()
    counts_of = sorted(set(reference and [x["verdict"] for x in reference] or []))
    print(f"verdicts: {', '.join(counts_of)} (every round the same answers)")
    base = counts[0]
    print(f"{'workers':>7} {'median wall s':>13} {'points/s':>9} {'speedup':>8}  per round")
    for w in counts:
        med = statistics.median(walls[w])
        pairs = [a / b for a, b in zip(walls[base], walls[w])]
        print(f"{w:>7} {med:>13.3f} {len(points) / med:>9.1f} "
              f"{statistics.median(walls[base]) / med:>8.2f}  "
              f"{' '.join(f'{p:.2f}' for p in pairs)}")
    ow = sorted(overhead_worker)
    print(f"cost of a point beyond its search, in its worker (load, compile, trace): median "
          f"{1000 * statistics.median(ow):.2f} ms, 99th percentile {1000 * ow[int(0.99 * (len(ow) - 1))]:.2f} ms, "
          f"max {1000 * ow[-1]:.2f} ms")
    print(f"end to end with {min(c for c in counts if c > 0)} worker (hand-off and results too): "
          f"{' '.join(f'{1000 * x:.2f}' for x in overhead_e2e)} ms per point")
    return 0


class _Kept:
    """A started pool, run again and again (run_sweep closes its runner after each sweep)."""

    def __init__(self, pool):
        self.pool = pool
        self.name, self.workers = pool.name, pool.workers

    def start(self):
        return 0.0

    def run(self, tasks, done):
        self.pool.run(tasks, done)

    def close(self):
        pass


def cluster(args) -> int:
    from distributed import LocalCluster
    from pipeproof.checker.sweep import run as R
    from pipeproof.checker.sweep.points import run_sweep
    points = standard_points(args.repeat)
    w = int(args.workers)
    print(f"standard grid: {len(points)} points; Dask LocalCluster of {w} worker processes "
          f"(1 thread each) against a local pool of {w}; {os.cpu_count()} CPUs", flush=True)
    local = run_sweep(points, R.default_options(), jobs=w)
    print(f"local pool:   {local.seconds:.3f} s ({local.points_per_second:.1f} points/s), "
          f"workers ready in {local.start_seconds:.2f} s", flush=True)
    with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                      dashboard_address=None) as c:
        remote = run_sweep(points, R.default_options(), cluster=c.scheduler_address)
    print(f"Dask cluster: {remote.seconds:.3f} s ({remote.points_per_second:.1f} points/s), "
          f"workers ready in {remote.start_seconds:.2f} s ({remote.runner})")
    same = _answers(local.records) == _answers(remote.records)
    print(f"same answers in the same order: {same} ({len(points)} points: "
          f"{', '.join(f'{v} {n}' for v, n in remote.counts().items() if n)})")
    return 0 if same else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--workers", default="1,2", help="worker counts, comma-separated (0: this process)")
    s.add_argument("--rounds", type=int, default=5)
    s.add_argument("--repeat", type=int, default=1)
    s.add_argument("--prove", action="store_true")
    c = sub.add_parser("cluster")
    c.add_argument("--workers", default="2")
    c.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    return speed(args) if args.what == "speed" else cluster(args)


if __name__ == "__main__":
    sys.exit(main())
