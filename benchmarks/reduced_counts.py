"""Verdict, kind, depth and stored states of `verify` (reductions on) for every example and a
slice of the standard grid, one line each: run it at two commits and diff the outputs to see
what a change to a reduction stored more or less.

    python benchmarks/reduced_counts.py > after.txt
    git worktree add /tmp/before REV && python /tmp/before/benchmarks/reduced_counts.py > before.txt
    diff before.txt after.txt

(A violation's states are those of the search without partial-order reduction, which finds
its minimal depth: only `ok` rows show what the reduction stores.)
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.standard_pipeline import make_toml  # noqa: E402
from pipeproof.checker.engines.verifier import verify  # noqa: E402
from pipeproof.spec.load import load_spec, load_spec_text  # noqa: E402


def rows():
    for path in sorted((ROOT / "spec" / "examples").glob("*.toml")):
        yield path.name, verify(load_spec(path))
    for n in (2, 4, 8):
        for c in (1, 4, 8):
            for i in (8, 32):
                yield f"standard N={n} C={c} I={i}", verify(load_spec_text(make_toml(n, c, i), "std.toml"))


def main():
    for name, r in rows():
        print(f"{name:45s} {r.verdict:10s} {r.kind or '-':24s} {r.depth if r.depth is not None else '-':>4} "
              f"{r.states:>9,}")


if __name__ == "__main__":
    main()
