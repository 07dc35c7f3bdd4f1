"""`pipeproof sweep SPEC --set KEY=VALUES ...`: check every configuration (docs/sweep.md).

Prints a live progress bar with the count of each verdict (on a terminal), then a table of
the points grouped by verdict and a summary line; --json / --csv write the records (to stdout
when given no file: the human output then goes to stderr), --plot X,Y -o F.png the heatmap,
--trace-dir D each failing point's trace and TOML. The exit code is the worst point's
(checker/results/result.py: 0 all ok, 1 a violation, 2 a point that is not a spec or bad usage,
3 inconclusive or interrupted, 4 internal error). The spec's `expect` is not applied to the
points: each is judged by its own verdict (checker/sweep/run.py).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from pathlib import Path

import click

SCHEMA = "pipeproof.sweep"
SCHEMA_VERSION = 1
LIST_ALL_UP_TO = 200  # the table lists every point up to this many; beyond, the points not ok
GROUP_ORDER = ("ok", "inconclusive", "violation", "error")  # the worst last, by the summary
STYLE = {"ok": "green", "inconclusive": "yellow", "violation": "red", "error": "magenta"}


@click.command()
@click.argument("spec", required=False)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUES",
              help="Sweep a key: stages=2,4,8; consumers=1..8; role.NAME.KEY=...; ring.NAME.KEY=...; "
                   "KEY1+KEY2=... for keys that take the same value. Repeat for more axes.")
@click.option("--triton", "triton_target", metavar="KERNEL.py::NAME",
              help="Sweep the @triton.autotune configs of KERNELS[NAME] in that file (then --set "
                   "names kernel integer arguments).")
@click.option("--arg", "args", multiple=True, metavar="NAME=V",
              help="With --triton: a kernel argument's value at every point.")
@click.option("--prove", "do_prove", is_flag=True, help="Also prove each point for every item count.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), metavar="N",
              help="Local worker processes (default: the CPU count; 1 runs in this process).")
@click.option("--cluster", metavar="ADDRESS",
              help="Run the points on this Dask distributed scheduler (e.g. tcp://host:8786).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="S",
              help="Per point: stop its search (inconclusive) after S seconds.")
@click.option("--max-states", type=click.IntRange(min=1), metavar="K",
              help="Per point: stop its search (inconclusive) after K states.")
@click.option("--trace-dir", metavar="D", help="Write each failing point's trace (ITF) and spec here.")
@click.option("--json", "json_out", is_flag=False, flag_value="-", metavar="[F]",
              help="Write the records as JSON to F (stdout if no F is given).")
@click.option("--csv", "csv_out", is_flag=False, flag_value="-", metavar="[F]",
              help="Write the records as CSV to F (stdout if no F is given).")
@click.option("--plot", metavar="X,Y", help="Draw the verdict over two swept parameters (with -o).")
@click.option("-o", "--output", "plot_file", default="sweep.png", show_default=True, metavar="F.png",
              help="Where --plot writes its picture (.png, .svg or .pdf).")
@click.option("--resume", is_flag=True,
              help="Reuse the cached answers of points checked before (by content hash).")
@click.option("--cache-dir", metavar="D",
              help="Where answers are cached (default ~/.cache/pipeproof/sweep, or $PIPEPROOF_SWEEP_CACHE).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the cache.")
@click.option("--table", "table_mode", type=click.Choice(["auto", "all", "failing", "none"]),
              default="auto", show_default=True,
              help=f"Rows of the final table: auto lists every point up to {LIST_ALL_UP_TO}, "
                   f"else those not ok.")
@click.option("--no-progress", is_flag=True, help="No progress bar.")
@click.option("--dry-run", is_flag=True, help="List the points and check nothing.")
def sweep(spec, sets, triton_target, args, do_prove, jobs, cluster, timeout, max_states, trace_dir,
          json_out, csv_out, plot, plot_file, resume, cache_dir, no_cache, table_mode, no_progress,
          dry_run):
    """Check every configuration of SPEC: the product of the --set axes and its [sweep] table.

    Each point is judged by its own verdict: the spec's `expect` describes the spec as written,
    not the points that change it, so it is not applied (no point is UNEXPECTED). The exit
    code is the worst point's: 0 all ok, 1 a violation, 2 an error point, 3 inconclusive."""
    from pipeproof.checker.cli.command import UsageFailure
    from pipeproof.checker.results import EXIT_OK, EXIT_USAGE
    from pipeproof.spec.schema import SpecError

    if (spec is None) == (triton_target is None):
        raise UsageFailure("give a SPEC file or --triton KERNEL.py::NAME (one of them)")
    if args and not triton_target:
        raise UsageFailure("--arg applies only to --triton (a spec's keys are swept with --set)")
    if cluster and jobs:
        raise UsageFailure("--jobs applies to local workers; with --cluster the cluster's workers run the points")
    if json_out == "-" and csv_out == "-":
        raise UsageFailure("--json and --csv cannot both write to stdout (give one a file)")
    if resume and no_cache:
        raise UsageFailure("--resume reads the cache, which --no-cache turns off")
    try:
        points = _points(spec, sets, triton_target, args)
        from pipeproof.checker.sweep import param_names
        params = param_names(points)
        axes_plot = None
        if plot:
            from pipeproof.checker.sweep import parse_plot
            axes_plot = parse_plot(plot, params)
    except SpecError as err:
        click.echo(str(err), err=True)
        sys.exit(EXIT_USAGE)

    doc_on_stdout = "-" in (json_out, csv_out)
    console = _console(sys.stderr if doc_on_stdout else sys.stdout)
    err_console = _console(sys.stderr)
    if dry_run:
        _dry_run(console, points, params)
        sys.exit(EXIT_OK)
    sys.exit(_run(points, params, console, err_console, locals()))


def _points(spec, sets, triton_target, args):
    if triton_target:
        from pipeproof.checker.sweep import points_of_kernel
        return points_of_kernel(triton_target, args, sets)
    from pipeproof.checker.sweep import points_of_spec
    return points_of_spec(spec, sets)


def _console(stream):
    from rich.console import Console
    terminal = stream.isatty()
    return Console(file=stream, width=None if terminal else 200, no_color=not terminal,
                   highlight=False, soft_wrap=False)


def _dry_run(console, points, params) -> None:
    for p in points:
        console.print(f"{p.index:>5}  {p.label}" + (f"   (not a spec: {p.error})" if p.error else ""),
                      markup=False)
    console.print(f"{len(points)} points over {', '.join(params)}", markup=False)


def _run(points, params, console, err_console, o) -> int:
    from pipeproof.checker.sweep import run as R
    from pipeproof.checker.cli.command import engines_late
    from pipeproof.checker.sweep import run_sweep
    from pipeproof.spec.schema import SpecError

    options = R.default_options(prove=o["do_prove"], timeout=o["timeout"], max_states=o["max_states"])
    cache = None
    if not o["no_cache"]:
        cache = R.Cache(o["cache_dir"] or R.default_cache_dir(), options)
    if not o["cluster"] and os.environ.get("PIPEPROOF_JIT", "1") != "0":
        late = engines_late(None)  # the one shared numba build, before any worker waits for it
        if late:
            err_console.print(late, markup=False)
    progress = _Progress(err_console, enabled=not o["no_progress"] and err_console.is_terminal,
                         prove=o["do_prove"])
    source = points[0].source if points else ""
    err_console.print(f"sweep {source}: {len(points)} points over {', '.join(params)}"
                      + (", with proofs" if o["do_prove"] else ""), markup=False)
    try:
        with progress:
            result = run_sweep(points, options, jobs=o["jobs"], cluster=o["cluster"], cache=cache,
                               resume=o["resume"], on_start=progress.start, on_record=progress.advance)
    except SpecError as err:  # a cluster that cannot be reached, or runs other code
        click.echo(str(err), err=True)
        return R.EXIT_USAGE

    _write_traces(result, o["trace_dir"], err_console)
    for record in result.records:  # a bug of ours: the traceback, as every command gives it
        if record.get("traceback"):
            click.echo(f"{record['spec']}: internal error (please report):\n{record['traceback']}",
                       err=True)
    _table(console, result, o["table_mode"], o["do_prove"])
    console.print(summary(result), markup=False)
    if o["json_out"]:
        _emit(o["json_out"], json.dumps(to_json(result), indent=2) + "\n", err_console, "JSON")
    if o["csv_out"]:
        _emit(o["csv_out"], to_csv(result), err_console, "CSV")
    if o["plot"]:
        from pipeproof.checker.sweep import heatmap, other_values, parse_plot
        x, y = parse_plot(o["plot"], params)
        title = Path(source.split("::")[0]).name + (" (verify + prove)" if o["do_prove"] else "")
        try:
            heatmap(result.records, x, y, o["plot_file"], title=title,
                    others=other_values(result.records, params, x, y))
        except (OSError, ValueError) as err:
            click.echo(f"--plot: cannot write {o['plot_file']}: {err}", err=True)
            return R.worse(result.exit_code, R.EXIT_USAGE)
        err_console.print(f"heatmap of the verdict over {x} and {y} written to {o['plot_file']}",
                          markup=False)
    return result.exit_code


# ---------------------------------------------------------------------------------------
# Progress


class _Progress:
    """rich's progress bar with a count per verdict; silent when stderr is not a terminal."""

    def __init__(self, console, enabled: bool, prove: bool):
        self.console, self.enabled, self.prove = console, enabled, prove
        self.counts = {v: 0 for v in GROUP_ORDER}
        self._bar = None
        self._task = None

    def __enter__(self):
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)
            self._bar = Progress(TextColumn("[bold]sweep"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[counts]}"), TimeElapsedColumn(),
                                 TimeRemainingColumn(), console=self.console, transient=False)
            self._bar.__enter__()
            self._task = self._bar.add_task("sweep", total=None, counts="starting workers")
        return self

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False

    def start(self, total, to_run, engine):
        if self._bar is not None:
            self._bar.update(self._task, total=total, counts=self._text())
        before = total - to_run
        self.console.print((f"{to_run} to check on {engine.name}" if to_run else "nothing to check")
                           + (f", {before} answered already (cache or not a spec)" if before else ""),
                           markup=False)

    def advance(self, record):
        self.counts[record["verdict"]] += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1, counts=self._text())

    def _text(self) -> str:
        return "  ".join(f"[{STYLE[v]}]{v} {n}[/]" for v, n in self.counts.items() if n) or " "


# ---------------------------------------------------------------------------------------
# The table and the summary


def _table(console, result, mode: str, prove: bool) -> None:
    from rich import box
    from rich.table import Table

    if mode == "none":
        return
    records = result.records
    if mode == "auto":
        mode = "all" if len(records) <= LIST_ALL_UP_TO else "failing"
    shown = records if mode == "all" else [r for r in records if r["verdict"] != "ok"]
    if not shown:
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in result.params:
        table.add_column(name, justify="right")
    table.add_column("verdict")
    table.add_column("kind")
    table.add_column("depth", justify="right")
    table.add_column("states", justify="right")
    table.add_column("s", justify="right")
    if prove:
        table.add_column("proof")
        table.add_column("abstract", justify="right")
        table.add_column("proof s", justify="right")
    table.add_column("note", overflow="fold")
    from pipeproof.checker.sweep import show
    groups = [[r for r in shown if r["verdict"] == v] for v in GROUP_ORDER]
    groups = [g for g in groups if g]
    for n, group in enumerate(groups):
        for i, r in enumerate(group):
            cells = [show(r["params"].get(p, "")) for p in result.params]
            cells += [f"[{STYLE[r['verdict']]}]{r['verdict']}[/]", r["kind"] or "",
                      "" if r["depth"] is None else str(r["depth"]),
                      f"{r['states']:,}" if r["verdict"] != "error" else "",
                      f"{r['seconds']:.2f}" if r["verdict"] != "error" else ""]
            if prove:
                proof = r.get("proof") or {}
                cells += [proof.get("status", ""),
                          f"{proof['abstract_states']:,}" if proof.get("abstract_states") else "",
                          f"{proof['seconds']:.2f}" if proof else ""]
            cells.append(_escape(note(r)))
            table.add_row(*cells, end_section=(i == len(group) - 1 and n < len(groups) - 1))
    console.print(table)
    if mode == "failing" and len(shown) < len(records):
        console.print(f"({len(records) - len(shown)} ok points not listed; --table all lists them)",
                      markup=False)


def _escape(text: str) -> str:
    from rich.markup import escape
    return escape(text)


def note(record: dict) -> str:
    parts = []
    if record["verdict"] == "error":
        message = record.get("message") or ""
        where = record.get("spec") or ""
        parts.append(message[len(where) + 2:] if where and message.startswith(where + ": ") else message)
    elif record.get("limit"):
        parts.append(record["limit"])
    proof = record.get("proof")
    if proof and proof.get("status") != "proved" and proof.get("reason"):
        parts.append(f"proof: {proof['reason']}")
    if record.get("as_expected") is False:
        parts.append("UNEXPECTED (the spec declares another verdict)")
    if record.get("cached"):
        parts.append("cached")
    return "; ".join(parts)


def summary(result) -> str:
    counts = result.counts()
    kinds = {}
    for r in result.records:
        if r["verdict"] == "violation":
            kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    parts = []
    for verdict in ("ok", "violation", "inconclusive", "error"):
        if counts[verdict]:
            text = f"{counts[verdict]} {verdict}"
            if verdict == "violation":
                text += " (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: str(kv[0]))) + ")"
            parts.append(text)
    n = len(result.records)
    line = f"{n} point{'' if n == 1 else 's'}: {', '.join(parts) or 'none'}"
    if result.cached:
        line += f"; {result.cached} from the cache"
    if result.ran:
        line += (f"; {result.ran} checked in {result.seconds:.2f} s on {result.runner} "
                 f"({result.points_per_second:.1f} points/s; workers ready in "
                 f"{result.start_seconds:.2f} s)")
    if result.interrupted:
        line += "; interrupted (Ctrl-C): the points not finished are inconclusive, --resume goes on"
    return line + f"; exit {result.exit_code}"


# ---------------------------------------------------------------------------------------
# Files


def _slug(record: dict) -> str:
    text = "_".join(f"{k}-{v}" for k, v in (
        (k, _show(v)) for k, v in record["params"].items()))
    text = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_") or f"point{record['index']}"
    if len(text) > 150:
        text = f"point{record['index']:05d}_{(record.get('hash') or '')[:12]}"
    return text


def _show(v) -> str:
    from pipeproof.checker.sweep import show
    return show(v)


def _write_traces(result, directory, console) -> None:
    if not directory:
        return
    folder = Path(directory)
    written = 0
    for record in result.records:
        if not (record.get("trace") or record.get("proof_trace")):
            continue
        folder.mkdir(parents=True, exist_ok=True)
        base = folder / _slug(record)
        point = result.points[record["index"]]
        if point.text:
            base.with_name(base.name + ".toml").write_text(point.text)
        if record.get("trace"):
            target = base.with_name(base.name + ".itf.json")
            target.write_text(json.dumps(record["trace"], indent=1) + "\n")
            record["trace_file"] = str(target)
            written += 1
        if record.get("proof_trace"):
            target = base.with_name(base.name + ".prove.itf.json")
            target.write_text(json.dumps(record["proof_trace"], indent=1) + "\n")
            record["proof_trace_file"] = str(target)
            written += 1
    if written:
        console.print(f"{written} traces (ITF) and the points' specs written to {folder}/", markup=False)


PRIVATE = ("trace", "proof_trace", "traceback")


def to_json(result) -> dict:
    return {
        "schema": SCHEMA, "version": SCHEMA_VERSION, "source": result.source,
        "params": result.params,
        "options": {k: v for k, v in result.options.items() if k != "traces"},
        "runner": result.runner, "workers": result.workers,
        "seconds": round(result.seconds, 3), "start_seconds": round(result.start_seconds, 3),
        "points_per_second": round(result.points_per_second, 2),
        "ran": result.ran, "cached": result.cached, "interrupted": result.interrupted,
        "counts": result.counts(), "exit_code": result.exit_code,
        "points": [{k: (round(v, 4) if isinstance(v, float) else v)
                    for k, v in r.items() if k not in PRIVATE} for r in result.records],
    }


def to_csv(result) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["index", *result.params, "verdict", "kind", "kinds", "depth", "states",
                     "transitions", "seconds", "limit", "proof", "proof_abstract_states",
                     "proof_seconds", "as_expected", "exit_code", "cached", "hash", "message"])
    for r in result.records:
        proof = r.get("proof") or {}
        writer.writerow([r["index"], *(_show(r["params"].get(p, "")) for p in result.params),
                         r["verdict"], r["kind"] or "", ";".join(r["kinds"]),
                         "" if r["depth"] is None else r["depth"], r["states"], r["transitions"],
                         f"{r['seconds']:.4f}", r.get("limit") or "", proof.get("status", ""),
                         proof.get("abstract_states", ""),
                         f"{proof['seconds']:.4f}" if proof else "",
                         "" if r["as_expected"] is None else str(r["as_expected"]).lower(),
                         r["exit_code"], str(bool(r.get("cached"))).lower(), r.get("hash") or "",
                         r.get("message") or ""])
    return out.getvalue()


def _emit(target: str, text: str, console, what: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    Path(target).write_text(text)
    console.print(f"{what} written to {target}", markup=False)
