"""The library pipelines at their production configurations (issue 18): `verify` and `prove`
per cell, seconds and peak memory of the whole process.

    python benchmarks/production.py [--only TEMPLATE ...] [--items 8 64] [--verify-timeout S]
                                    [--prove-timeout S] [--no-prove] [--unreduced]

Each cell runs in a fresh process (`python -m benchmarks.production --cell ...`), so its peak
resident memory (the child's own `ru_maxrss`) is the whole process's, numba's
compiled engines included (loaded from the cache: run `pipeproof verify` once after an install
so no cell pays the compile). Goals (issue 18): verify <= 10 s and prove <= 30 s per cell, at
most 2 GB. B/state: bytes of one stored (packed) state, abstract for `prove` (the store adds 4
bytes of parent, 2 of action and 8 to 16 of hash table per state). `--unreduced` adds `verify --no-por --no-symmetry` per cell, for the verdict
comparison where it finishes. Prints one row per cell and run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (template, {parameter: value}) at the configurations each library ships or recommends.
CONFIGS = (
    [("cutlass_tma_async", {"cluster_size": k, "consumers": 2, "stages": s})
     for k in (1, 2, 4) for s in (4, 7)]
    + [("sm90_ring", {"consumers": c, "stages": s, "cluster_size": 2}) for c in (2, 3) for s in (4, 8)]
    + [("mojo_input_tile", {"cluster_size": 2, "k_group_size": k, "stages": s})
       for k in (1, 2) for s in (4, 6)]
    + [("mojo_sm100_matmul", {"consumers": 4, "stages": s}) for s in (4, 6)]
    + [("cutlass_pingpong", {"stages": s}) for s in (2, 4)]
)


def spec_text(template: str, params: dict, items: int) -> str:
    lines = ["[pipeline]", f'template = "{template}"', 'backend = "nvidia"', f"items = {items}"]
    lines += [f"{k} = {v}" for k, v in params.items()]
    return "\n".join(lines) + "\n"


def run_cell(text: str, what: str, timeout: float) -> dict:
    """In this (child) process: verify or prove the spec; a dict of the outcome."""
    from pipeproof.spec.load import load_spec_text
    spec = load_spec_text(text, "production.toml")
    started = time.monotonic()
    if what == "prove":
        from pipeproof.checker.engines.prover import prove
        proof = prove(spec, timeout=timeout)
        return {"status": proof.status, "states": proof.abstract_states,
                "seconds": time.monotonic() - started, "reason": proof.reason,
                "state_bytes": _abstract_state_bytes(spec)}
    from pipeproof.checker.core.model import compile_model
    from pipeproof.checker.engines.verifier import verify
    kw = {"por": False, "symmetry": False} if what == "unreduced" else {}
    result = verify(spec, timeout=timeout, **kw)
    return {"status": result.verdict, "states": result.states, "kinds": list(result.kinds),
            "seconds": time.monotonic() - started, "reason": result.limit,
            "state_bytes": 8 * compile_model(spec).words}


def _abstract_state_bytes(spec) -> int:
    """Bytes of one stored abstract state: the lap packing's words and n_rel (checker/engines/prover.py)."""
    from pipeproof.checker.engines.laps import CannotAbstract, LapAbstraction
    from pipeproof.checker.engines.prover import MAX_R, _lap_packing
    try:
        return 8 * (_lap_packing(LapAbstraction(spec, MAX_R).model)[1] + 1)
    except CannotAbstract:
        return 0


def measure(text: str, what: str, timeout: float) -> dict:
    """Run one cell in a child process; its outcome, with the child's own peak memory."""
    cmd = [sys.executable, "-m", "benchmarks.production", "--cell", what, str(timeout)]
    try:
        done = subprocess.run(cmd, cwd=ROOT, input=text, capture_output=True, text=True,
                              timeout=timeout * 3 + 120)
    except subprocess.TimeoutExpired:
        return {"status": "killed", "states": 0, "seconds": timeout * 3 + 120, "peak_mb": 0}
    if not done.stdout.strip():
        tail = done.stderr.strip().splitlines()[-1:] or [""]
        return {"status": "crashed", "states": 0, "seconds": 0, "peak_mb": 0, "reason": tail[0]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(what: str, timeout: float) -> int:
    import resource
    outcome = run_cell(sys.stdin.read(), what, timeout)
    outcome["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(outcome))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cell", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--only", nargs="*", help="templates to run (default: all)")
    ap.add_argument("--items", nargs="*", type=int, default=[8, 64])
    ap.add_argument("--verify-timeout", type=float, default=60.0)
    ap.add_argument("--prove-timeout", type=float, default=60.0)
    ap.add_argument("--no-prove", action="store_true")
    ap.add_argument("--unreduced", action="store_true")
    args = ap.parse_args(argv)
    if args.cell:
        return _child(args.cell[0], float(args.cell[1]))
    runs = ["verify"] + (["unreduced"] if args.unreduced else []) + ([] if args.no_prove else ["prove"])
    print(f"{'template':18} {'configuration':42} {'items':>5} {'run':9} {'status':12} "
          f"{'states':>12} {'seconds':>8} {'peak MB':>8} {'B/state':>7}", flush=True)
    for template, params in CONFIGS:
        if args.only and template not in args.only:
            continue
        config = " ".join(f"{k}={v}" for k, v in params.items())
        for items in args.items:
            for what in runs:
                if what == "prove" and items != args.items[0]:
                    continue  # a proof covers every item count
                timeout = args.prove_timeout if what == "prove" else args.verify_timeout
                o = measure(spec_text(template, params, items), what, timeout)
                print(f"{template:18} {config:42} {items:>5} {what:9} {o['status']:12} "
                      f"{o['states']:>12,} {o['seconds']:>8.2f} {o['peak_mb']:>8.0f} "
                      f"{o.get('state_bytes', 0):>7}  {o.get('reason') or ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
