"""`pipeproof prove` on every correct example (spec/examples/*.toml with expect = "ok"):
status, abstract states and seconds, for the compiled search and, with --reference, the plain
Python reference search (the one before issue 4's speed-up) side by side.

    python benchmarks/prove_examples.py [--timeout S] [--reference-timeout S] [--reference]
                                        [--max-states K] [NAME ...]
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

ROOT = __file__.rsplit("/", 2)[0]
sys.path.insert(0, ROOT)

from pipeproof.checker.engines.prover import MAX_ABSTRACT_STATES, prove, warm_up_prove  # noqa: E402
from pipeproof.spec.load import load_spec  # noqa: E402
from tests.reference_search import ReferenceSearch  # noqa: E402  (the test oracle)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="example names (default: every correct one)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per proof")
    ap.add_argument("--reference", action="store_true", help="also run the reference search")
    ap.add_argument("--reference-timeout", type=float, default=60.0)
    ap.add_argument("--max-states", type=int, default=MAX_ABSTRACT_STATES)
    args = ap.parse_args(argv)
    paths = sorted(glob.glob(os.path.join(ROOT, "spec", "examples", "*.toml")))
    specs = {os.path.splitext(os.path.basename(p))[0]: load_spec(p) for p in paths}
    names = args.names or [n for n, s in specs.items() if s.expect == "ok"]
    warm_up_prove()
    head = f"{'example':32} {'status':8} {'abstract states':>16} {'seconds':>8}"
    print(head + (f"   | reference: {'status':8} {'abstract states':>16} {'seconds':>8}"
                  if args.reference else "") + "  reason", flush=True)
    for name in names:
        row = ""
        reasons = []
        for reference, timeout in [(False, args.timeout)] + ([(True, args.reference_timeout)]
                                                            if args.reference else []):
            started = time.monotonic()
            proof = prove(specs[name], timeout=timeout, max_states=args.max_states,
                          searcher=ReferenceSearch if reference else None)
            seconds = time.monotonic() - started
            cell = f"{proof.status:8} {proof.abstract_states:>16,} {seconds:>8.2f}"
            row += (f"   | reference: {cell}" if reference else f"{name:32} {cell}")
            if proof.status != "proved":
                reasons.append(("reference: " if reference else "") + proof.reason)
        print(row + "  " + "; ".join(reasons), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
