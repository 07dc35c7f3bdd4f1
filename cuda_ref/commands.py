"""`pipeproof gpu` and `pipeproof crosscheck`: the reference kernels from the command line.

These are click commands; checker/cli/main.py registers them in its group
(`main.add_command(gpu)`, `main.add_command(crosscheck)`). `python -m pipeproof.cuda_ref.commands`
runs them standalone.

Exit codes follow docs/model.md "Exit codes": 0 everything held, 1 a failure (a GPU run that
did not end `ok` for `gpu`; a broken rule for `crosscheck`), 2 bad input or no CuPy/GPU (one
line saying so), 4 internal error, 6 a spec not run (`not run: <reason>`: the kernel could not
be generated, compiled or launched; never counted as a GPU failure). Human output goes to stderr; `--json` prints one document
on stdout.

crosscheck rules, per spec (issues 5 and 17):
  R1  model `ok`                      => no GPU run fails;
  R2  every GPU failure kind          => the model reports that kind for the spec (a `trap` is
                                         the model's `over_arrival` or `tx_range`); a kind the
                                         model reaches only beyond its shortest depth is
                                         accepted and marked `(reachable)`; when some path of
                                         the model traps (undefined behaviour in PTX: after it
                                         the hardware may do anything), any GPU failure is
                                         accepted and marked `after undefined behaviour`;
  R3  the model deadlocks on every path => every GPU run deadlocks (a path that ends in a
                                         trap does not deadlock);
  R4  every log conforms (cuda_ref.conform.conform).
What the model reaches is answered by the GPU's own conforming logs (each is a model path),
else by the explicit engine run to exhaustion with symmetry reduction, else (positives only) by
the partial-order reduced search (cuda_ref/crosscheck_facts.py says why each is sound). When
none decides within its bound, the rule is `undecided (bound: ...)`: said, never held, and not
counted as broken.
"""
from __future__ import annotations

import json
import os
import shlex
import sys

import click

from pipeproof.checker.cli import InputLoop
from pipeproof.checker.runtime import ensure_engines
from pipeproof.checker.results import EXIT_NOT_RUN, EXIT_OK, EXIT_USAGE, EXIT_VIOLATION as EXIT_FAIL
from pipeproof.cuda_ref.crosscheck_facts import ModelFacts, witnesses
TRAP_KINDS = ("over_arrival", "tx_range")


def _command_line() -> str:
    """The command as a person would type it (recorded in every log)."""
    argv = list(sys.argv)
    if argv:
        base = os.path.basename(argv[0])
        if base == "commands.py":
            argv[0:1] = ["python", "-m", "pipeproof.cuda_ref.commands"]
        elif base in ("cli.py", "__main__.py"):
            argv[0:1] = ["python", "-m", "pipeproof.checker.cli.main"]
        else:
            argv[0] = "pipeproof"
    return " ".join(shlex.quote(a) for a in argv)


def _fail_usage(message: str):
    click.echo(message, err=True)
    sys.exit(EXIT_USAGE)


def _session(timeout_ms, delay_ns, echo=None):
    from pipeproof.cuda_ref.run import GpuSession, GpuUnavailable
    try:
        return GpuSession(timeout_ms=timeout_ms, delay_ns=delay_ns, command=_command_line(),
                          echo=echo)
    except GpuUnavailable as err:
        _fail_usage(f"pipeproof: no GPU run possible: {err}")


def _load(path):
    from pipeproof.spec.load import load_spec
    from pipeproof.spec.schema import SpecError
    try:
        return load_spec(path)
    except SpecError as err:
        _fail_usage(str(err))


def conform_logs(spec, logs):
    """[ConformResult] for each log, or None when cuda_ref.conform is not available."""
    try:
        from pipeproof.cuda_ref.conform import conform
    except ImportError:
        return None
    out = []
    for log in logs:
        try:
            out.append(conform(spec, log))
        except Exception as err:  # a conformance crash is a non-conforming log, said so
            out.append(_Crash(f"conform raised {type(err).__name__}: {err}"))
    return out


class _Crash:
    def __init__(self, message):
        self.ok, self.index, self.message = False, None, message


def _write_logs(log_dir, spec_path, reports):
    from pipeproof.cuda_ref.log import write_log
    os.makedirs(log_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(spec_path))[0]
    paths = []
    for rep in reports:
        path = os.path.join(log_dir, f"{stem}.run{rep.log['run']}.log.json")
        write_log(rep.log, path)
        paths.append(path)
    return paths


def _reason(refused: str) -> str:
    """Why a spec was not run, without the 'SPEC: cuda_ref: ' prefix the generator writes."""
    return refused.split("cuda_ref: ", 1)[-1]


def _counts_text(counts: dict) -> str:
    from pipeproof.cuda_ref.log import OUTCOMES
    return ", ".join(f"{k} {counts[k]}" for k in OUTCOMES if k in counts) or "no runs"


def _conform_text(results) -> str:
    if results is None:
        return "n/a (cuda_ref.conform missing)"
    return f"{sum(1 for r in results if r.ok)}/{len(results)}"


_options = [
    click.option("--runs", type=click.IntRange(min=1), default=10, show_default=True,
                 help="Launches per spec (run 0 at full speed, the others perturbed)."),
    click.option("--seed", type=int, default=0, show_default=True,
                 help="Seed of the per-agent delays."),
    click.option("--log-dir", type=click.Path(file_okay=False), default=None,
                 help="Write each run's event log as DIR/<spec>.run<k>.log.json."),
    click.option("--timeout-ms", type=click.FloatRange(min=0.01), default=20.0,
                 show_default=True, help="Deadline of every wait, from launch."),
    click.option("--delay-ns", type=click.IntRange(min=0), default=2000, show_default=True,
                 help="Scale of the random nanosleep before ops in perturbed runs."),
    click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout."),
]


def _with_options(fn):
    for opt in reversed(_options):
        fn = opt(fn)
    return fn


# ---------------------------------------------------------------------- gpu


@click.command()
@click.argument("specs", nargs=-1, required=True)
@_with_options
@click.option("--replay", "replay", is_flag=False, flag_value="model", default=None,
              metavar="[TRACE.itf.json]",
              help="Run under a trace's schedule (cuda_ref/replay.py): TRACE.itf.json (one SPEC; "
                   "`pipeproof verify SPEC --trace X.itf.json` writes it), or, with no file "
                   "(put --replay after the specs), the model's shortest trace of each SPEC.")
@click.option("--compare", is_flag=True,
              help="With --replay: also as many free-running runs, to compare.")
def gpu(specs, runs, seed, log_dir, timeout_ms, delay_ns, as_json, replay, compare):
    """Run the reference GPU kernel of each SPEC: outcome counts and how many logs conform."""
    if replay is not None and replay != "model":
        if not replay.endswith(".itf.json"):
            _fail_usage(f"pipeproof gpu: --replay {replay}: expected a trace file ending in "
                        f".itf.json (or --replay with no file, after the specs, to replay the "
                        f"model's own trace)")
        if len(specs) != 1:
            _fail_usage("pipeproof gpu: --replay TRACE.itf.json replays one trace: give one SPEC")
    if compare and replay is None:
        _fail_usage("pipeproof gpu: --compare goes with --replay")
    loaded = [(p, _load(p)) for p in specs]
    ensure_engines()  # conform steps the compiled model: the one shared build, with notices
    session = _session(timeout_ms, delay_ns)
    loop, docs = InputLoop(), []
    if replay is not None:
        from pipeproof.cuda_ref.replay import ReplayError
        from pipeproof.cuda_ref.replay_cli import replay_specs, table
        from pipeproof.spec.schema import SpecError
        loop = InputLoop(bad_input=(SpecError, ReplayError))
        try:
            docs, rows = replay_specs(
                loaded, replay, runs, seed, session, loop, log_dir, compare,
                (conform_logs, _write_logs, _reason, _counts_text, _conform_text))
        finally:
            session.close()
        click.echo(table(rows, runs, seed, session.device), err=True)
        if as_json:
            click.echo(json.dumps({"schema": "pipeproof-gpu-replay/1", "results": docs}, indent=2))
        sys.exit(loop.worst)
    try:
        for path, spec in loaded:
            res = loop.attempt(path, lambda: session.run_spec(path, runs, seed))
            if res is None:
                continue
            if res.refused:
                click.echo(f"{path}: not run: {_reason(res.refused)}", err=True)
                loop.note(EXIT_NOT_RUN)
                docs.append({"spec": path, "not_run": _reason(res.refused)})
                continue
            conf = conform_logs(spec, [r.log for r in res.reports])
            paths = _write_logs(log_dir, path, res.reports) if log_dir else []
            click.echo(f"{path}: {len(res.reports)} runs on {res.device} (seed {seed}): "
                       f"{_counts_text(res.counts())}; logs conform: {_conform_text(conf)}",
                       err=True)
            for rep in res.reports:
                for w in rep.warnings[:1]:
                    click.echo(f"  run {rep.log['run']}: warning: {w}", err=True)
                if rep.outcome != "ok" or rep.detail:
                    click.echo(f"  run {rep.log['run']}: {rep.outcome}"
                               + (f" [{', '.join(rep.kinds)}]" if len(rep.kinds) > 1 else "")
                               + (f": {rep.detail}" if rep.detail else ""), err=True)
                    for line in (rep.mismatches[:3] + rep.stuck):
                        click.echo(f"    {line}", err=True)
                    if len(rep.mismatches) > 3:
                        click.echo(f"    ... {len(rep.mismatches) - 3} more tag mismatches", err=True)
            if conf is not None:
                for rep, c in zip(res.reports, conf):
                    if not c.ok:
                        click.echo(f"  run {rep.log['run']}: log does not conform: event "
                                   f"{c.index}: {c.message}", err=True)
            if paths:
                click.echo(f"  logs: {os.path.dirname(paths[0])}/", err=True)
            bad = any(r.outcome != "ok" for r in res.reports) or (
                conf is not None and not all(c.ok for c in conf))
            loop.note(EXIT_FAIL if bad else EXIT_OK)
            docs.append({"spec": path, "device": res.device, "seed": seed,
                         "counts": res.counts(),
                         "conform": None if conf is None else [
                             {"ok": c.ok, "index": c.index, "message": c.message} for c in conf],
                         "runs": [r.summary() for r in res.reports], "logs": paths})
    finally:
        session.close()
    if as_json:
        click.echo(json.dumps({"schema": "pipeproof-gpu/1", "results": docs}, indent=2))
    sys.exit(loop.worst)


# ---------------------------------------------------------------------- crosscheck


_ModelFacts = ModelFacts   # the name the tests and benchmarks know


def check_rules(facts: ModelFacts, reports, conform_results) -> tuple[list, list]:
    """(broken rules, notes) for one spec. A rule the model's searches cannot decide within
    their bounds is a note `R2/R3 undecided (bound: ...)`, not a broken rule."""
    broken, notes = [], []
    result = facts.result
    failing = [r for r in reports if r.outcome != "ok"]
    if result.verdict == "ok" and failing:
        broken.append(f"R1: the model says ok but {len(failing)} GPU run(s) failed "
                      f"({', '.join(sorted({r.outcome for r in failing}))})")
    gpu_kinds = sorted({k for r in reports for k in r.kinds})
    model_kinds = set(result.kinds)
    seen, free = witnesses(reports, conform_results)
    for kind in gpu_kinds:
        wanted = TRAP_KINDS if kind == "trap" else (kind,)
        if any(k in model_kinds for k in wanted):
            continue
        answer, how = facts.reaches(wanted, seen)
        if answer == "reachable":
            notes.append(f"{kind} (reachable" + (f": {how})" if how else ")"))
        elif answer == "after undefined behaviour":
            notes.append(f"{kind} after undefined behaviour" + (f" ({how})" if how else ""))
        elif answer == "undecided":
            notes.append(f"R2 undecided for GPU {kind} ({how})")
        else:
            broken.append(f"R2: GPU {kind} but the model reports "
                          f"{', '.join(result.kinds) or result.verdict} ({how})")
    if result.verdict == "violation" and reports:
        not_dead = [r for r in reports if "deadlock" not in r.kinds]
        # R3 asks something only when some GPU run did not deadlock (and a conforming log of
        # such a run is itself a model path that does not deadlock); else its note is said
        # when the exhaustive search shows it
        every = facts.every_path_deadlocks(free if not_dead else None)
        if every.value:
            if not_dead:
                broken.append(f"R3: every path deadlocks in the model but "
                              f"{len(not_dead)} GPU run(s) did not deadlock")
            notes.append("every path deadlocks")
        elif every.value is None and not_dead:
            notes.append(f"R3 undecided ({every.how})")
    if conform_results is not None:
        bad = [(r, c) for r, c in zip(reports, conform_results) if not c.ok]
        if bad:
            r, c = bad[0]
            broken.append(f"R4: {len(bad)} log(s) do not conform (run {r.log['run']}, event "
                          f"{c.index}: {c.message})")
    else:
        notes.append("conformance not checked (cuda_ref.conform missing)")
    warned = sum(1 for r in reports if r.warnings)
    if warned:
        notes.append(f"warning unawaited_at_exit in {warned} run(s)")
    return broken, notes


@click.command()
@click.argument("specs", nargs=-1, required=True)
@_with_options
@click.option("--reach-timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True,
              help="Seconds for each of the model's searches that R2/R3 may need (the "
                   "exhaustive one, then the partial-order reduced one); past it the rule is "
                   "'undecided (bound)', not broken.")
def crosscheck(specs, runs, seed, log_dir, timeout_ms, delay_ns, as_json, reach_timeout):
    """Run the model and the GPU kernel of each SPEC and check that they agree (one row each)."""
    loaded = [(p, _load(p)) for p in specs]
    ensure_engines()
    session = _session(timeout_ms, delay_ns)
    rows, loop = [], InputLoop()

    def check_one(path, spec):
        facts = ModelFacts(spec, timeout=reach_timeout)
        res = session.run_spec(path, runs, seed)
        model = facts.result.verdict if facts.result.verdict != "violation" else \
            ", ".join(facts.result.kinds)
        if facts.result.warnings:
            model += f" (warning {', '.join(facts.result.warnings)})"
        if res.refused:
            return {"spec": path, "model": model, "gpu": "not run", "conform": "-",
                    "rules": "not run: " + _reason(res.refused),
                    "broken": [], "not_run": _reason(res.refused)}
        conf = conform_logs(spec, [r.log for r in res.reports])
        if log_dir:
            _write_logs(log_dir, path, res.reports)
        broken, notes = check_rules(facts, res.reports, conf)
        return {"spec": path, "model": model, "gpu": _counts_text(res.counts()),
                "conform": _conform_text(conf),
                "rules": "BROKEN: " + "; ".join(broken) if broken else
                "ok" + (f" ({'; '.join(notes)})" if notes else ""),
                "broken": broken, "device": res.device,
                "runs": [r.summary() for r in res.reports]}

    try:
        for path, spec in loaded:
            row = loop.attempt(path, lambda: check_one(path, spec))
            if row is None:
                continue
            if row["broken"]:
                loop.note(EXIT_FAIL)
            elif "not_run" in row:
                loop.note(EXIT_NOT_RUN)
            rows.append(row)
            click.echo(_row_text(row), err=True)
    finally:
        session.close()
    click.echo(_table(rows, runs, seed, session.device), err=True)
    if as_json:
        click.echo(json.dumps({"schema": "pipeproof-crosscheck/1", "device": session.device,
                               "runs": runs, "seed": seed, "rows": rows}, indent=2))
    sys.exit(loop.worst)


def _row_text(row) -> str:
    return f"{row['spec']}: model {row['model']}; gpu {row['gpu']}; conform {row['conform']}; {row['rules']}"


def _table(rows, runs, seed, device) -> str:
    head = ("spec", "model", f"gpu ({runs} runs, seed {seed})", "conform", "rules")
    body = [(os.path.basename(r["spec"]), r["model"], r["gpu"], r["conform"], r["rules"])
            for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)] if body else [len(h) for h in head]
    widths[-1] = 0
    lines = [f"crosscheck on {device}", "| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths[:-1]) + "|---|"]
    for b in body:
        lines.append("| " + " | ".join(str(x).ljust(w) for x, w in zip(b, widths)) + " |")
    not_run = [os.path.basename(r["spec"]) for r in rows if "not_run" in r]
    broken = sum(1 for r in rows if r["broken"])
    lines.append(f"{len(rows) - len(not_run)} of {len(rows)} specs ran; {broken} with a broken rule"
                 + (f"; not run: {', '.join(not_run)}" if not_run else ""))
    return "\n".join(lines)


@click.group()
def _standalone():
    """pipeproof GPU commands (standalone entry point)."""


_standalone.add_command(gpu)
_standalone.add_command(crosscheck)


if __name__ == "__main__":
    try:
        _standalone.main(standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USAGE)
