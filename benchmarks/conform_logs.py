"""Replay every GPU log of a folder through the model of its spec, print each answer, and copy
the logs worth keeping as fixtures (not conforming, or conforming with unchecked events or an
unlogged trapping step) into another folder, at most `--keep` of them.

    python benchmarks/conform_logs.py SPEC LOG_DIR KEEP_DIR [--keep 4]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shutil

from pipeproof.cuda_ref.conform import conform
from pipeproof.spec.load import load_spec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("logs")
    ap.add_argument("keep_dir")
    ap.add_argument("--keep", type=int, default=4)
    args = ap.parse_args()
    spec = load_spec(args.spec)
    os.makedirs(args.keep_dir, exist_ok=True)
    kept = 0
    for path in sorted(glob.glob(os.path.join(args.logs, "*.log.json"))):
        with open(path) as f:
            r = conform(spec, json.load(f))
        print(f"{os.path.basename(path)}: ok={r.ok} unchecked={r.unchecked}: {r.message}")
        if (not r.ok or r.unchecked or "does not record" in r.message) and kept < args.keep:
            shutil.copy(path, args.keep_dir)
            kept += 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
