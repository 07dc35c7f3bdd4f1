"""Benchmark: the "standard pipeline" grid, one fresh subprocess per cell.

The standard pipeline (the same model SPIN and TLC were measured on, see
benchmarks/vs_spin_rumur.py and benchmarks/results/vs_spin_rumur_*.txt): nvidia backend,
N stages, one producer (`wait_empty, write, arrive_full, advance`), C consumer agents of one
role (`wait_full, read, arrive_empty, advance`), producer_arrive_count 1,
consumer_arrive_count C, I items. Grid N in {2,4,8} x C in {1..4} x I in {8,16,32}.

Each cell runs in its own Python process, so its peak memory is its own. The child first
verifies a tiny spec (numba cache load / compilation, not timed), measures its resident set
size, then times `checker.verify.verify` on the cell. Reported per cell:

  wall s      the verify call (spec compile + BFS + result), not interpreter start or numba load
  cpu s       user+sys CPU of the same call (the engine is single-threaded; on a busy machine
              wall > cpu)
  states/s    states / wall s
  peak MB     ru_maxrss of the child minus its RSS just before the search
  B/state     peak bytes / states

At the end: the largest completed cell's rate and bytes/state, and whether the issue's floor
holds there (>= 100,000 states/s on one core, <= 200 bytes per stored state).

    python benchmarks/standard_pipeline.py                      # the whole grid
    python benchmarks/standard_pipeline.py --cells 4,4,8 8,4,32 --timeout 1200 --csv out.csv
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRID = [(n, c, i) for n in (2, 4, 8) for c in (1, 2, 3, 4) for i in (8, 16, 32)]
FLOOR_RATE = 100_000      # states per second on one core, largest cell
FLOOR_BYTES = 200         # bytes per stored state
COLUMNS = ["N", "C", "I", "verdict", "states", "transitions", "wall_s", "cpu_s", "states_per_s",
           "peak_MB", "bytes_per_state", "words", "note"]


def make_toml(n: int, c: int, i: int) -> str:
    """The standard pipeline with N stages, C consumer agents and I items, as spec TOML."""
    return f"""\
[pipeline]
name = "standard pipeline N={n} C={c} I={i}"
backend = "nvidia"
stages = {n}
producer_arrive_count = 1
consumer_arrive_count = {c}
items = {i}
expect = "ok"

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = {c}
body = ["wait_full", "read", "arrive_empty", "advance"]
"""


def load_cell(n: int, c: int, i: int):
    from pipeproof.spec.load import load_spec_text
    return load_spec_text(make_toml(n, c, i), f"standard_pipeline_N{n}_C{c}_I{i}.toml")


# ------------------------------------------------------------------ child: one cell

def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def run_cell(n: int, c: int, i: int, timeout: float | None) -> dict:
    sys.path.insert(0, str(REPO))
    from pipeproof.checker.core.model import compile_model
    from pipeproof.checker.engines.verifier import verify

    verify(load_cell(2, 1, 2))                    # warm-up: numba cache load, not timed
    spec = load_cell(n, c, i)
    words = compile_model(spec).words
    rss_before = _rss_bytes()
    maxrss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    cpu0, t0 = _cpu_seconds(), time.perf_counter()
    result = verify(spec, timeout=timeout)
    wall = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    search_bytes = max(peak - rss_before, 0)
    note = result.limit
    if peak <= maxrss_before:
        note = (note + "; " if note else "") + "search peak below earlier peak (memory is an upper bound)"
    return {
        "N": n, "C": c, "I": i, "verdict": result.verdict + (f" ({result.kind})" if result.kind else ""),
        "states": result.states, "transitions": result.transitions,
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "states_per_s": round(result.states / wall) if wall > 0 else 0,
        "peak_MB": round(search_bytes / 1e6, 1),
        "bytes_per_state": round(search_bytes / max(result.states, 1), 1),
        "words": words, "note": note,
    }


# ------------------------------------------------------------------ parent: the grid

def _fmt(row: dict) -> str:
    return (f"{row['N']:>2} {row['C']:>2} {row['I']:>3}  {row['verdict']:<13} {row['states']:>13,} "
            f"{row['transitions']:>14,} {row['wall_s']:>9.2f} {row['cpu_s']:>9.2f} "
            f"{row['states_per_s']:>11,} {row['peak_MB']:>9.1f} {row['bytes_per_state']:>8.1f} "
            f"{row['words']:>2}  {row['note']}")


HEADER = (f"{'N':>2} {'C':>2} {'I':>3}  {'verdict':<13} {'states':>13} {'transitions':>14} "
          f"{'wall s':>9} {'cpu s':>9} {'states/s':>11} {'peak MB':>9} {'B/state':>8} {'w':>2}  note")


def spawn_cell(cell, timeout: float | None) -> dict:
    n, c, i = cell
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", f"{n},{c},{i}"]
    if timeout is not None:
        cmd += ["--timeout", str(timeout)]
    started = time.perf_counter()
    # The child's own --timeout stops the search (inconclusive); this one only guards a hang.
    guard = None if timeout is None else timeout + 600
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=guard, cwd=str(REPO))
    except subprocess.TimeoutExpired:
        return _failed(cell, f"killed after {time.perf_counter() - started:.0f} s (guard)")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        why = (f"killed by signal {-proc.returncode}" + (" (out of memory?)" if proc.returncode == -9 else "")
               if proc.returncode < 0 else f"exit {proc.returncode}")
        tail = proc.stderr.strip().splitlines()[-1:] if proc.stderr.strip() else []
        return _failed(cell, "; ".join([why] + tail))
    return json.loads(lines[-1])


def _failed(cell, note: str) -> dict:
    n, c, i = cell
    return {"N": n, "C": c, "I": i, "verdict": "failed", "states": 0, "transitions": 0,
            "wall_s": 0.0, "cpu_s": 0.0, "states_per_s": 0, "peak_MB": 0.0, "bytes_per_state": 0.0,
            "words": 0, "note": note}


def layout_note(words: int) -> str:
    """Per-state memory of checker/engines/explore.py for a model of `words` packed words."""
    state = 8 * words
    steady_lo = state + 4 + 2 + 8          # capacity == states, table = 2x capacity (int32)
    steady_hi = int(1.5 * (state + 4 + 2 + 16))  # capacity 1.5x states, table rounded up to 4x
    return (f"layout: {words} x int64 state words = {state} B, int32 parent 4 B, int16 action 2 B, "
            f"int32 hash slots at 2..4 per capacity slot = 8..16 B; capacity 1.0..1.5x the states "
            f"stored -> about {steady_lo}..{steady_hi} B per state, plus the transient of a 1.5x "
            f"growth step (old and new store alive together)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", metavar="N,C,I", help="run only these cells")
    ap.add_argument("--timeout", type=float, help="search time limit per cell, seconds")
    ap.add_argument("--csv", metavar="F", help="also write the table as CSV")
    ap.add_argument("--child", metavar="N,C,I", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def parse(text):
        try:
            n, c, i = (int(x) for x in text.split(","))
        except ValueError:
            ap.error(f"cell {text!r}: expected N,C,I (three integers, e.g. 8,4,32)")
        return n, c, i

    if args.child:
        print(json.dumps(run_cell(*parse(args.child), args.timeout)), flush=True)
        return 0

    cells = [parse(t) for t in args.cells] if args.cells else GRID
    print(f"standard pipeline grid: {len(cells)} cells, one fresh process each, "
          f"timeout {args.timeout or 'none'}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
          flush=True)
    print(HEADER, flush=True)
    rows = []
    writer = None
    csv_file = open(args.csv, "w", newline="") if args.csv else None
    try:
        if csv_file:
            writer = csv.DictWriter(csv_file, fieldnames=COLUMNS)
            writer.writeheader()
        for cell in cells:
            row = spawn_cell(cell, args.timeout)
            rows.append(row)
            print(_fmt(row), flush=True)
            if writer:
                writer.writerow(row)
                csv_file.flush()
    finally:
        if csv_file:
            csv_file.close()

    done = [r for r in rows if r["verdict"].startswith("ok")]
    if not done:
        print("no cell completed")
        return 1
    big = max(done, key=lambda r: (r["states"], r["N"] * r["C"] * r["I"]))
    intended = max(cells, key=lambda t: (t[1], t[0], t[2]))  # C grows the space fastest
    print()
    if (big["N"], big["C"], big["I"]) != intended:
        print(f"note: the largest requested cell {intended} did not complete "
              f"({next(r['note'] or r['verdict'] for r in rows if (r['N'], r['C'], r['I']) == intended)})")
    rate_ok = big["states_per_s"] >= FLOOR_RATE
    bytes_ok = big["bytes_per_state"] <= FLOOR_BYTES
    print(f"largest completed cell N={big['N']} C={big['C']} I={big['I']}: {big['states']:,} states, "
          f"{big['states_per_s']:,} states/s (wall; {big['states'] / max(big['cpu_s'], 1e-9):,.0f} per "
          f"CPU-second), {big['bytes_per_state']} bytes/state")
    print(f"floor (>= {FLOOR_RATE:,} states/s on one core, <= {FLOOR_BYTES} bytes/state): "
          f"rate {'holds' if rate_ok else 'FAILS'}, memory {'holds' if bytes_ok else 'FAILS'}")
    print(layout_note(big["words"]))
    return 0 if rate_ok and bytes_ok else 1


if __name__ == "__main__":
    sys.exit(main())
