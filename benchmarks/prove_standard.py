"""Seconds per `pipeproof prove` of the standard pipeline (issue 4: N <= 8 stages, C <= 8
consumers; goal: under 5 s each).

    python benchmarks/prove_standard.py [--cells N,C ...] [--timeout S] [--max-states K]

The item count does not matter to a proof (it covers every item count); the spec's own count
is 8. Each cell runs in this process after one warm-up, so the numba compile is not counted.
Prints one row per cell: status, abstract states, seconds.
"""
from __future__ import annotations

import argparse
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 2)[0])

from benchmarks.standard_pipeline import load_cell  # noqa: E402
from pipeproof.checker.engines.prover import prove, warm_up_prove  # noqa: E402

GRID = [(n, c) for n in (2, 4, 8) for c in range(1, 9)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", help="N,C pairs (default: the whole grid)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per proof")
    ap.add_argument("--max-states", type=int, default=3_000_000)
    args = ap.parse_args(argv)
    cells = [tuple(int(x) for x in c.split(",")) for c in args.cells] if args.cells else GRID
    warm_up_prove()
    print(f"{'N':>2} {'C':>2}  {'status':8} {'abstract states':>16} {'seconds':>8}  reason", flush=True)
    for n, c in cells:
        spec = load_cell(n, c, 8)
        started = time.monotonic()
        proof = prove(spec, timeout=args.timeout, max_states=args.max_states)
        seconds = time.monotonic() - started
        print(f"{n:>2} {c:>2}  {proof.status:8} {proof.abstract_states:>16,} {seconds:>8.2f}  "
              f"{proof.reason if proof.status != 'proved' else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
