"""Benchmark: pipeproof against SPIN and Rumur on the standard pipeline, in one run.

The standard pipeline (benchmarks/standard_pipeline.py: nvidia, N stages, one producer that
writes, C consumers that all read every slot, I items) over N in {2,4,8} x C in {1..8} x
I in {8,16,32}. Per cell, one after another on the same machine, each as whole processes:

  pipeproof  `python -m pipeproof.checker.cli.main verify --json SPEC`, as a user runs it: interpreter start,
             spec load, the search as plain Python and, for a spec past its half-second
             budget (checker/engines/tier.py), the numba cache load and the search again compiled.
             The engine was compiled once, untimed, before the grid.
  SPIN       `spin -a` on the Promela export, `cc -O2 -DMEMLIM=...`, `./pan -m<depth>`:
             default reductions (partial-order reduction on), default hash table
  Rumur      `rumur --deadlock-detection stuck --symmetry-reduction heuristic --threads T` on
             the Murphi export with consumer symmetry (scalarsets), `cc -std=c11 -O2`,
             `./checker`

A tool's seconds are the wall time of all its steps, C compiles included ("check s" is the
verifier binary alone). Writing the exported model is not counted (pipeproof's own Python,
milliseconds). Peak MB is the largest resident set of the checking process (wait4 ru_maxrss):
for pipeproof the whole Python process, for SPIN and Rumur the compiled verifier. Each tool
gets `--timeout` seconds per cell (killed after that: "timeout").

Ratios are pipeproof seconds / tool seconds: below 1 means pipeproof was faster. pipeproof
runs with its defaults: symmetry reduction (states up to consumer permutation, as Rumur's
count) and partial-order reduction (checker/engines/por.py: steps no other step can tell the time of
are taken at once), so it stores fewer states than Rumur. With `verify --no-por` it stored
exactly Rumur's symmetric count on every cell both finished (results/*_2026-11-29.txt). SPIN counts all states (plus its
init and process-exit states), after its own partial-order reduction.

With `--laps`, pipeproof also runs `verify --engine laps` (item numbers and laps relative to
the slowest agent, checker/engines/lap_verify.py): its state count stays the same as I grows.

A tool that runs out of time on a cell is not run on the cells that have at least as many
stages, consumers and items (its state space only grows); those show "skip" and count as out
of time.

    python benchmarks/vs_spin_rumur.py --cells 2,1,8 4,2,8 8,2,16 --timeout 120
    python benchmarks/vs_spin_rumur.py --timeout 120 --csv grid.csv       # the whole grid

`--production` runs the production cells of benchmarks/production.py instead (the library
templates at the configurations they ship, clusters and several rings included; items 8 and 64
by default, `--items`): pipeproof `verify` with its defaults, SPIN, and Rumur with symmetry
(scalarsets over the agents interchangeable within one CTA, except agents that issue async
reads), each with `--timeout` seconds. A spec the exports cannot express would show "refused"
for SPIN and Rumur (none of the production cells since async reads are exported: the
mojo_sm100_matmul cells run); a tool out of time at one item count is not run at a larger one
("skip"). `--matching` runs only some cells.

    python benchmarks/vs_spin_rumur.py --production --timeout 60
    python benchmarks/vs_spin_rumur.py --production --matching mojo_sm100_matmul --timeout 60
    python benchmarks/vs_spin_rumur.py --user-shaped 2:1:2:2 4:2:6:2 4:2:6:4 --timeout 60
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.standard_pipeline import make_toml  # noqa: E402
from pipeproof.checker.models.exporter import (  # noqa: E402
    ToolRun, measured, parse_rumur, parse_spin, rumur_steps, search_depth, spin_steps, spin_vectorsz,
    to_murphi, to_promela, _pipeline,
)
from pipeproof.spec.load import load_spec_text  # noqa: E402
from pipeproof.spec.schema import SpecError  # noqa: E402

GRID = [(n, c, i) for n in (2, 4, 8) for c in range(1, 9) for i in (8, 16, 32)]
COLUMNS = ["N", "C", "I",
           "pp_verdict", "pp_states", "pp_s", "pp_MB",
           "spin_verdict", "spin_states", "spin_s", "spin_check_s", "spin_MB",
           "rumur_verdict", "rumur_states", "rumur_s", "rumur_check_s", "rumur_MB",
           "pp_over_spin", "pp_over_rumur", "same_verdict", "laps_verdict", "laps_states", "laps_s"]


# pipeproof runs as an installed tool does: with Python's bytecode cache (a shell that sets
# PYTHONDONTWRITEBYTECODE would make every start recompile pipeproof's modules, ~0.13 s here).
PIPEPROOF_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_pipeproof(spec_file: Path, timeout: float | None, engine: str = "explicit") -> ToolRun:
    cmd = [sys.executable, "-m", "pipeproof.checker.cli.main", "verify", "--json", "--engine", engine, str(spec_file)]
    code, out, wall, rss = measured(cmd, REPO, timeout, env=PIPEPROOF_ENV, stdout_only=True)
    if code is None:
        return ToolRun("pipeproof" if engine == "explicit" else "laps", "timeout", None, None, wall,
                       wall, rss, rss, "")
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        return ToolRun("pipeproof", "failed", None, None, wall, wall, rss, rss, f"exit {code}: {out[-500:]}")
    res = doc["results"][0]
    kind = (res.get("violation") or {}).get("kind")
    return ToolRun("pipeproof" if engine == "explicit" else "laps", res["verdict"], kind,
                   res["states"], wall, wall, rss, rss, "")


def _dominates(small, big) -> bool:
    return all(a <= b for a, b in zip(small, big))


def _skipped(tool: str, cell, timeout: float) -> ToolRun:
    """A tool not run on a cell because it ran out of time on a smaller one (no more stages,
    consumers or items: the state space only grows): counted as out of time, marked "skip"."""
    return ToolRun(tool, "skipped", None, None, timeout, timeout, 0, 0,
                   "not run: out of time on a smaller cell")


def run_cell(cell, timeout, threads, memlim_mb, workroot: Path, skip=frozenset(),
             with_laps: bool = False) -> dict:
    n, c, i = cell
    work = workroot / f"N{n}_C{c}_I{i}"
    for sub in ("spin", "rumur"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    spec_file = work / "spec.toml"
    spec_file.write_text(make_toml(n, c, i))
    spec = load_spec_text(spec_file.read_text(), str(spec_file))
    (work / "spin" / "model.pml").write_text(to_promela(spec))
    (work / "rumur" / "model.m").write_text(to_murphi(spec, symmetry=True))

    pp = _skipped("pipeproof", cell, timeout) if "pipeproof" in skip else \
        run_pipeproof(spec_file, timeout)
    laps = None
    if with_laps:
        laps = _skipped("laps", cell, timeout) if "laps" in skip else \
            run_pipeproof(spec_file, timeout, engine="laps")
    spin = _skipped("spin", cell, timeout) if "spin" in skip else \
        _pipeline("spin", spin_steps("model.pml", search_depth(spec), memlim_mb=memlim_mb),
                  str(work / "spin"), timeout, parse_spin)
    rumur = _skipped("rumur", cell, timeout) if "rumur" in skip else \
        _pipeline("rumur", rumur_steps("model.m", symmetry=True, threads=threads),
                  str(work / "rumur"), timeout, parse_rumur)
    shutil.rmtree(work, ignore_errors=True)

    def ratio(other: ToolRun) -> str:
        if pp.verdict in ("timeout", "failed", "skipped"):
            return (f">{pp.seconds / other.seconds:.2f}"
                    if other.verdict not in ("timeout", "failed", "skipped") else "n/a")
        if other.verdict in ("timeout", "skipped"):
            return f"<{pp.seconds / other.seconds:.3f}"
        if other.verdict == "failed":
            return "n/a"
        return f"{pp.seconds / other.seconds:.3f}"

    finished = [r.verdict for r in (pp, spin, rumur) if r.verdict in ("ok", "violation")]
    row = {"N": n, "C": c, "I": i}
    for key, r in (("pp", pp), ("spin", spin), ("rumur", rumur)):
        row[f"{key}_verdict"] = r.verdict + (f" ({r.kind})" if r.kind else "")
        row[f"{key}_states"] = r.states if r.states is not None else ""
        row[f"{key}_s"] = round(r.seconds, 2)
        row[f"{key}_MB"] = round(r.check_peak_kb / 1024, 1) if r.check_peak_kb else ""  # "": killed
        if key != "pp":
            row[f"{key}_check_s"] = round(r.check_seconds, 2)
    row["pp_over_spin"] = ratio(spin)
    row["pp_over_rumur"] = ratio(rumur)
    row["same_verdict"] = ("yes" if len(set(finished)) == 1 and len(finished) == 3 else
                           "no" if len(set(finished)) > 1 else "n/a")
    if laps is not None:  # issue 6 part 5: the states of --engine laps, against the item count
        row["laps_verdict"] = laps.verdict
        row["laps_states"] = laps.states if laps.states is not None else ""
        row["laps_s"] = round(laps.seconds, 2)
    row["_runs"] = (pp, spin, rumur)
    row["_laps"] = laps
    return row


HEADER = (f"{'N':>2} {'C':>2} {'I':>3} | {'pipeproof':<9} {'states':>11} {'s':>7} {'MB':>7} | "
          f"{'SPIN':<9} {'states':>11} {'s':>7} {'check':>7} {'MB':>7} | "
          f"{'Rumur sym':<9} {'states':>10} {'s':>7} {'check':>7} {'MB':>6} | "
          f"{'pp/SPIN':>8} {'pp/Rumur':>8} same")


def _short(v: str) -> str:
    return {"violation": "viol", "skipped": "skip"}.get(v.split(" ")[0], v.split(" ")[0])


def fmt(row: dict) -> str:
    def num(x, w):
        return f"{x:>{w},}" if isinstance(x, int) else f"{str(x):>{w}}"

    def mb(x, w):
        return f"{x:>{w}.1f}" if isinstance(x, float) else f"{'-':>{w}}"
    return (f"{row['N']:>2} {row['C']:>2} {row['I']:>3} | {_short(row['pp_verdict']):<9} "
            f"{num(row['pp_states'], 11)} {row['pp_s']:>7.2f} {mb(row['pp_MB'], 7)} | "
            f"{_short(row['spin_verdict']):<9} {num(row['spin_states'], 11)} {row['spin_s']:>7.2f} "
            f"{row['spin_check_s']:>7.2f} {mb(row['spin_MB'], 7)} | "
            f"{_short(row['rumur_verdict']):<9} {num(row['rumur_states'], 10)} {row['rumur_s']:>7.2f} "
            f"{row['rumur_check_s']:>7.2f} {mb(row['rumur_MB'], 6)} | "
            f"{row['pp_over_spin']:>8} {row['pp_over_rumur']:>8} {row['same_verdict']:<4}"
            + (f" | {_short(row['laps_verdict']):<7} {num(row['laps_states'], 10)} {row['laps_s']:>7.2f}"
               if "laps_verdict" in row else ""))


def tool_versions() -> str:
    def first_line(cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "missing"
    return (f"{first_line(['spin', '-V'])}; {first_line(['rumur', '--version'])}; "
            f"{first_line(['cc', '--version'])}; python {platform.python_version()}")


def summary(rows) -> list[str]:
    """The issue's goals, judged on the cells that ran."""
    lines = []
    pp_done = [r for r in rows if r["_runs"][0].verdict in ("ok", "violation")]

    def secs(r, k):
        return r["_runs"][k].seconds

    beat_rumur = [r for r in rows if r["_runs"][2].verdict != "failed"]
    slower = [r for r in beat_rumur if not (r["_runs"][0].verdict in ("ok", "violation")
                                            and secs(r, 0) < secs(r, 2))]
    lines.append(f"faster than Rumur (symmetry on): {len(beat_rumur) - len(slower)} of {len(beat_rumur)} cells"
                 + (f"; not on {', '.join(_cell(r) for r in slower)}" if slower else ""))
    # SPIN "needs more than 1 s": its verifier (pan) alone, since spin -a + cc -O2 take a few
    # seconds on every cell; the ratio compares both tools' whole times, compiles included.
    big_spin = [r for r in rows if r["_runs"][1].verdict in ("timeout", "skipped")
                or r["_runs"][1].check_seconds > 1.0]
    slow10 = [r for r in big_spin if not (r["_runs"][0].verdict in ("ok", "violation")
                                          and secs(r, 0) * 10 <= secs(r, 1))]
    lines.append(f">= 10x faster than SPIN (whole times) where SPIN's pan needs > 1 s: "
                 f"{len(big_spin) - len(slow10)} of {len(big_spin)} cells"
                 + (f"; not on {', '.join(_cell(r) for r in slow10)}" if slow10 else ""))
    c8 = [r for r in rows if r["C"] == 8]
    if c8:
        late = [r for r in c8 if not (r["_runs"][0].verdict in ("ok", "violation") and secs(r, 0) < 60)]
        lines.append(f"C = 8 cells under 60 s: {len(c8) - len(late)} of {len(c8)}"
                     + (f"; not {', '.join(_cell(r) for r in late)}" if late else ""))
    diff = [r for r in rows if r["same_verdict"] == "no"]
    lines.append(f"same verdict: {sum(r['same_verdict'] == 'yes' for r in rows)} cells all three agree, "
                 f"{len(diff)} disagree" + (f" ({', '.join(_cell(r) for r in diff)})" if diff else "")
                 + f", {sum(r['same_verdict'] == 'n/a' for r in rows)} with a tool out of time")
    lines.append(f"pipeproof finished {len(pp_done)} of {len(rows)} cells")
    by_nc = {}
    for r in rows:
        if r.get("_laps") is not None:
            by_nc.setdefault((r["N"], r["C"]), []).append(
                f"I={r['I']}: {r['laps_states']:,}" if isinstance(r["laps_states"], int)
                else f"I={r['I']}: {_short(r['laps_verdict'])}")
    if by_nc:
        lines.append("--engine laps states per (N,C) as I grows: "
                     + "; ".join(f"({n},{c}) " + ", ".join(v) for (n, c), v in by_nc.items()))
    skipped = {t: sum(r["_runs"][k].verdict == "skipped" for r in rows)
               for k, t in enumerate(("pipeproof", "SPIN", "Rumur"))}
    if any(skipped.values()):
        lines.append("skip = not run, out of time on a smaller cell (counted as out of time): "
                     + ", ".join(f"{t} {n}" for t, n in skipped.items()))
    return lines
    return lines


def _cell(r) -> str:
    return f"{r['N']},{r['C']},{r['I']}"


def warm_pipeproof():
    """Load (or on a fresh install, compile) pipeproof's numba engine and bytecode once, untimed."""
    with tempfile.TemporaryDirectory() as d:
        f = Path(d, "warm.toml")
        f.write_text(make_toml(2, 1, 2))
        measured([sys.executable, "-m", "pipeproof.checker.cli.main", "verify", str(f)], REPO, None,
                 env=dict(PIPEPROOF_ENV, PIPEPROOF_JIT="1"))  # a tiny spec would skip numba


# ---------------------------------------------------------------------- --production

def _refused(tool: str, why: str) -> ToolRun:
    return ToolRun(tool, "refused", None, None, 0.0, 0.0, 0, 0, why)


def run_production_cell(template: str, params: dict, items: int, timeout: float, threads: int,
                        memlim_mb: int, workroot: Path, skip=frozenset(), text: str = None) -> dict:
    """One production cell: pipeproof (defaults), SPIN and Rumur (symmetry) on one spec (the
    template's, or `text`)."""
    from benchmarks.production import spec_text
    config = " ".join(f"{k}={v}" for k, v in params.items())
    work = workroot / f"{template}_{'_'.join(f'{k}{v}' for k, v in params.items())}_I{items}"
    for sub in ("spin", "rumur"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    spec_file = work / "spec.toml"
    spec_file.write_text(text if text is not None else spec_text(template, params, items))
    spec = load_spec_text(spec_file.read_text(), str(spec_file))
    refused = ""
    try:
        (work / "spin" / "model.pml").write_text(to_promela(spec))
        (work / "rumur" / "model.m").write_text(to_murphi(spec, symmetry=True))
    except SpecError as err:
        refused = str(err).split(": ", 1)[1]
    pp = _skipped("pipeproof", None, timeout) if "pipeproof" in skip else run_pipeproof(spec_file, timeout)
    if refused:
        spin, rumur = _refused("spin", refused), _refused("rumur", refused)
    else:
        spin = _skipped("spin", None, timeout) if "spin" in skip else \
            _pipeline("spin", spin_steps("model.pml", search_depth(spec), memlim_mb=memlim_mb,
                                         vectorsz=spin_vectorsz(spec)),
                      str(work / "spin"), timeout, parse_spin)
        rumur = _skipped("rumur", None, timeout) if "rumur" in skip else \
            _pipeline("rumur", rumur_steps("model.m", symmetry=True, threads=threads),
                      str(work / "rumur"), timeout, parse_rumur)
    shutil.rmtree(work, ignore_errors=True)
    done = lambda r: r.verdict in ("ok", "violation")

    def ratio(other: ToolRun) -> str:
        """pipeproof's seconds / the tool's: < where the tool ran out of time, > where pipeproof did."""
        late = ("timeout", "skipped")
        if done(pp) and done(other):
            return f"{pp.seconds / other.seconds:.3f}"
        if done(pp) and other.verdict in late:
            return f"<{pp.seconds / other.seconds:.3f}"
        if pp.verdict in late and done(other):
            return f">{pp.seconds / other.seconds:.2f}"
        return "n/a"
    spin_ratio, rumur_ratio = ratio(spin), ratio(rumur)
    finished = [r.verdict for r in (pp, spin, rumur) if done(r)]
    return {"template": template, "config": config, "items": items, "_runs": (pp, spin, rumur),
            "pp_over_spin": spin_ratio, "pp_over_rumur": rumur_ratio,
            "same": ("yes" if len(finished) == 3 and len(set(finished)) == 1 else
                     "no" if len(set(finished)) > 1 else "n/a")}


PRODUCTION_HEADER = (f"{'template':18} {'configuration':36} {'items':>5} | {'pipeproof':<9} {'states':>10} "
                     f"{'s':>7} | {'SPIN':<9} {'states':>11} {'s':>7} {'pan s':>6} | {'Rumur sym':<9} {'states':>11} "
                     f"{'s':>7} | {'pp/SPIN':>8} {'pp/Rumur':>8} same")


def fmt_production(row: dict) -> str:
    pp, spin, rumur = row["_runs"]

    def tool(r: ToolRun, w: int) -> str:
        states = f"{r.states:,}" if r.states is not None else ""
        return f"{_short(r.verdict + (' ' + r.kind if r.kind else '')):<9} {states:>{w}} {r.seconds:>7.2f}"
    pan = f"{spin.check_seconds:>6.2f}" if spin.verdict in ("ok", "violation") else f"{'':>6}"
    return (f"{row['template']:18} {row['config']:36} {row['items']:>5} | {tool(pp, 10)} | {tool(spin, 11)} "
            f"{pan} | {tool(rumur, 11)} | {row['pp_over_spin']:>8} {row['pp_over_rumur']:>8} {row['same']}")


def production_goals(rows) -> list:
    """Issue 18's goal 3 on the production cells. "SPIN needs more than a second" as in the
    grid's summary: its verifier (pan) alone needs it, or it ran out of time; the ratio compares
    whole times, compiles included. The cells where only SPIN's whole time (spin -a and cc
    included) passes a second are listed too."""
    done = lambda r: r.verdict in ("ok", "violation")
    pp_s = lambda r: r["_runs"][0].seconds
    label = lambda r: f"{r['template']} {r['config']} I={r['items']}"
    lines = []
    rumur = [r for r in rows if r["_runs"][2].verdict not in ("failed", "refused")]
    slower = [r for r in rumur if not (done(r["_runs"][0]) and pp_s(r) < r["_runs"][2].seconds)]
    lines.append(f"faster than Rumur (symmetry on): {len(rumur) - len(slower)} of {len(rumur)} cells"
                 + (f"; not on {', '.join(map(label, slower))}" if slower else ""))
    for name, needs in (("SPIN's pan needs > 1 s or runs out of time",
                         lambda s: s.verdict in ("timeout", "skipped") or (done(s) and s.check_seconds > 1.0)),
                        ("SPIN's whole time (spin -a, cc, pan) > 1 s",
                         lambda s: s.verdict in ("timeout", "skipped") or (done(s) and s.seconds > 1.0))):
        big = [r for r in rows if needs(r["_runs"][1])]
        short = [r for r in big if not (done(r["_runs"][0]) and pp_s(r) * 10 <= r["_runs"][1].seconds)]
        lines.append(f">= 10x faster than SPIN (whole times) where {name}: {len(big) - len(short)} of "
                     f"{len(big)} cells" + (f"; not on {', '.join(map(label, short))}" if short else ""))
    neither = [r for r in rows if not done(r["_runs"][1]) and not done(r["_runs"][2])]
    late = [r for r in neither if not (done(r["_runs"][0]) and pp_s(r) < 60)]
    lines.append(f"cells neither SPIN nor Rumur finishes, pipeproof under 60 s: {len(neither) - len(late)} of "
                 f"{len(neither)}" + (f"; not {', '.join(map(label, late))}" if late else ""))
    return lines


def user_shaped(args, memlim: int) -> int:
    """Issue 35's user-shaped GEMM (benchmarks/user_shaped.py) at the given cells, the three
    tools side by side in one run."""
    from benchmarks.user_shaped import user_shaped_toml
    print(f"pipeproof vs SPIN vs Rumur, user-shaped cells (benchmarks/user_shaped.py): {args.timeout:g} s "
          f"per tool per cell; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"tools: {tool_versions()}", flush=True)
    warm_pipeproof()
    print(PRODUCTION_HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="vs_spin_rumur_user_") as root:
        for cell in args.user_shaped:
            stages, wgs, items, ctas = (int(x) for x in cell.split(":"))
            params = {"stages": stages, "warpgroups": wgs, "ctas": ctas}
            row = run_production_cell("user_shaped", params, items, args.timeout, args.rumur_threads,
                                      memlim, Path(root), text=user_shaped_toml(stages, wgs, items, 35, ctas=ctas))
            print(fmt_production(row), flush=True)
    return 0


def production(args, memlim: int) -> int:
    from benchmarks.production import CONFIGS
    print(f"pipeproof vs SPIN vs Rumur, production cells (benchmarks/production.py CONFIGS), items "
          f"{' '.join(map(str, args.items))}: {args.timeout:g} s per tool per cell; {os.cpu_count()} CPUs, load "
          f"average {os.getloadavg()[0]:.1f} at the start; {time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"tools: {tool_versions()}", flush=True)
    print(f"pipeproof: verify --json (defaults: symmetry and partial-order reduction); SPIN: cc -O2 "
          f"-DMEMLIM={memlim}, ./pan -m<depth> (POR on); Rumur: symmetry heuristic (scalarsets within a CTA), "
          f"--threads {args.rumur_threads}, cc -std=c11 -O2; seconds include the C compiles", flush=True)
    warm_pipeproof()
    print(PRODUCTION_HEADER, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="vs_spin_rumur_prod_") as root:
        for template, params in CONFIGS:
            label = f"{template} " + " ".join(f"{k}={v}" for k, v in params.items())
            if args.matching and not any(m in label for m in args.matching):
                continue
            out_of_time: set = set()
            for items in sorted(args.items):
                row = run_production_cell(template, params, items, args.timeout, args.rumur_threads,
                                          memlim, Path(root), frozenset(out_of_time))
                out_of_time |= {r.tool for r in row["_runs"] if r.verdict in ("timeout", "skipped")}
                rows.append(row)
                print(fmt_production(row), flush=True)
    print()
    runs = lambda k, v: sum(r["_runs"][k].verdict in v for r in rows)
    for k, name in ((0, "pipeproof"), (1, "SPIN"), (2, "Rumur")):
        print(f"{name}: finished {runs(k, ('ok', 'violation'))} of {len(rows)} cells, out of time "
              f"{runs(k, ('timeout', 'skipped'))}, refused {runs(k, ('refused',))}, failed {runs(k, ('failed',))}")
    diff = [r for r in rows if r["same"] == "no"]
    print(f"same verdict: {sum(r['same'] == 'yes' for r in rows)} cells all three agree, {len(diff)} disagree"
          + (f" ({', '.join(r['template'] + ' ' + r['config'] + ' I=' + str(r['items']) for r in diff)})" if diff else ""))
    for line in production_goals(rows):
        print(line)
    reasons = sorted({r["_runs"][1].output for r in rows if r["_runs"][1].verdict == "refused"})
    print("skip = not run, out of time at a smaller item count"
          + ("; refused = not in the exported subset (" + "; ".join(reasons) + ")" if reasons else ""))
    return 0 if not diff else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", metavar="N,C,I", help="run only these cells")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per tool per cell, compiles included (default 120)")
    ap.add_argument("--csv", metavar="F", help="also write the table as CSV")
    ap.add_argument("--rumur-threads", type=int, default=1,
                    help="Rumur verifier threads (default 1, as pipeproof and pan; 0 = all cores)")
    ap.add_argument("--laps", action="store_true",
                    help="also run `verify --engine laps` (relative laps: states independent of I)")
    ap.add_argument("--memlim-mb", type=int, default=None,
                    help="SPIN -DMEMLIM (default: 80%% of physical memory)")
    ap.add_argument("--production", action="store_true",
                    help="run the production cells of benchmarks/production.py instead of the grid")
    ap.add_argument("--items", nargs="+", type=int, default=[8, 64],
                    help="--production: item counts per cell (default 8 64)")
    ap.add_argument("--matching", nargs="+", metavar="TEXT",
                    help="--production: only the cells whose 'template k=v ...' contains one of these")
    ap.add_argument("--user-shaped", nargs="+", metavar="S:W:I:C",
                    help="run issue 35's user-shaped GEMM at these cells (stages:warpgroups:items:ctas)")
    args = ap.parse_args(argv)

    def parse(text):
        try:
            n, c, i = (int(x) for x in text.split(","))
        except ValueError:
            ap.error(f"cell {text!r}: expected N,C,I (three integers, e.g. 8,4,32)")
        return n, c, i

    missing = [t for t in ("spin", "rumur", "cc") if shutil.which(t) is None]
    if missing:
        print(f"missing {', '.join(missing)} (apt-get install -y spin rumur gcc)", file=sys.stderr)
        return 2
    memlim = args.memlim_mb or int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.8 / 2**20)
    if args.production:
        return production(args, memlim)
    if args.user_shaped:
        return user_shaped(args, memlim)
    cells = [parse(t) for t in args.cells] if args.cells else GRID
    print(f"pipeproof vs SPIN vs Rumur, standard pipeline: {len(cells)} cells, {args.timeout:g} s per tool "
          f"per cell; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start; "
          f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
    print(f"tools: {tool_versions()}", flush=True)
    print(f"SPIN: cc -O2 -DMEMLIM={memlim}, ./pan -m<depth> (POR on); Rumur: symmetry heuristic, "
          f"--threads {args.rumur_threads}, cc -std=c11 -O2; seconds include the C compiles", flush=True)
    warm_pipeproof()
    print(HEADER + (f" | {'laps':<7} {'states':>10} {'s':>7}" if args.laps else ""), flush=True)
    rows = []
    csv_file = open(args.csv, "w", newline="") if args.csv else None
    try:
        writer = csv.DictWriter(csv_file, fieldnames=COLUMNS, extrasaction="ignore") if csv_file else None
        if writer:
            writer.writeheader()
        with tempfile.TemporaryDirectory(prefix="vs_spin_rumur_") as root:
            out_of_time = {"pipeproof": [], "spin": [], "rumur": [], "laps": []}
            for cell in cells:
                skip = frozenset(t for t, done in out_of_time.items()
                                 if any(_dominates(small, cell) for small in done))
                row = run_cell(cell, args.timeout, args.rumur_threads, memlim, Path(root), skip,
                               with_laps=args.laps)
                for run in row["_runs"] + ((row["_laps"],) if row["_laps"] else ()):
                    if run.verdict == "timeout":
                        out_of_time[run.tool].append(cell)
                rows.append(row)
                print(fmt(row), flush=True)
                if writer:
                    writer.writerow(row)
                    csv_file.flush()
    finally:
        if csv_file:
            csv_file.close()
    print()
    for line in summary(rows):
        print(line)
    return 0 if all(r["same_verdict"] != "no" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
