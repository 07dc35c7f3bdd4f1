"""`pipeproof gpu SPEC... --replay [TRACE.itf.json] [--compare]`: the replay side of `gpu`
(cuda_ref/commands.py hands over here; cuda_ref/replay.py says what a replay is).

`--replay TRACE.itf.json` (one SPEC): replay that trace (`pipeproof verify SPEC --trace
TRACE.itf.json` writes one). `--replay` with no file ("straight after a violation"; also
`--replay=model`): run the model on each SPEC first and replay its shortest counterexample of
the first kind at the minimal depth that the GPU can show; kinds found there that it cannot
are listed with the reason. `--compare` also runs the same number of free-running launches
(run 0 at full speed, the others perturbed, as `gpu` without `--replay`) and shows how often
they show the same kind.

Per spec it prints, on stderr, what was replayed and how each run judged (`reproduced`: the
trace's kind on the GPU, `not reproduced`, or `not observable`), what the GPU showed (the stuck
agents of a hang, the tag found by a read, a trap), whether the logs conform, and at the end
one table row per spec. Exit codes: 0 every observable replay reproduced in every run and its
logs conform (a kind the GPU cannot show is not a failure), 1 otherwise, 6 a spec not run (the
model finds no violation, or the kernel could not be generated), 2 bad input.
"""
from __future__ import annotations

import os

import click

from pipeproof.checker.results import EXIT_NOT_RUN, EXIT_OK, EXIT_VIOLATION as EXIT_FAIL

MODEL = "model"   # --replay with no file: the model's own trace


def replay_specs(loaded, replay, runs, seed, session, loop, log_dir, compare, helpers):
    """Run the replay of each (path, spec); returns the JSON docs and the table's rows."""
    from pipeproof.checker.core import compile_model
    from pipeproof.cuda_ref import replay as R

    conform_logs, write_logs, reason_of, counts_text, conform_text = helpers
    docs, rows = [], []
    for path, spec in loaded:
        def one():
            model = compile_model(spec)
            unseen = []
            if replay == MODEL:
                from pipeproof.checker.engines import verify
                result = verify(spec)
                if result.verdict != "violation":
                    return {"spec": path, "not_run": f"the model says {result.verdict}"
                            + (f" ({result.limit})" if result.limit else "") + ": nothing to replay"}
                sched, unseen = R.from_model(model, result)
                if sched is None:  # nothing observable: still replay the first kind's trace
                    sched = R.from_trace(model, result.traces[result.kinds[0]])
                    unseen = unseen[1:]
                model_text = ", ".join(result.kinds) + f" at depth {result.depth}"
            else:
                sched = R.from_itf(model, replay)
                model_text = f"{sched.kind} (the trace)"
            return _run_one(path, spec, sched, unseen, model_text, runs, seed, session, log_dir,
                            compare, helpers)

        doc = loop.attempt(path, one)
        if doc is None:
            continue
        if "not_run" in doc:
            click.echo(f"{path}: not run: {doc['not_run']}", err=True)
            loop.note(EXIT_NOT_RUN)
            docs.append(doc)
            doc["row"] = [os.path.basename(path), "-", "-", "not run: " + doc["not_run"], "-", "-", "-"]
            rows.append(tuple(doc["row"]))
            continue
        loop.note(doc.pop("_exit"))
        rows.append(doc.pop("_row"))
        docs.append(doc)
    return docs, rows


def _run_one(path, spec, sched, unseen, model_text, runs, seed, session, log_dir, compare, helpers):
    from pipeproof.cuda_ref import replay as R

    conform_logs, write_logs, reason_of, counts_text, conform_text = helpers
    if log_dir and sched.trace is not None:  # the model's trace, beside the logs
        from pipeproof.checker.results import write_trace
        os.makedirs(log_dir, exist_ok=True)
        stem = os.path.splitext(os.path.basename(path))[0]
        write_trace(sched.trace, os.path.join(log_dir, f"{stem}.itf.json"))
    free = session.run_spec(path, runs, seed) if compare and sched.observability.observable else None
    res = session.run_spec(path, runs, seed, schedule=sched)
    if res.refused:
        why = reason_of(res.refused)
        return {"spec": path, "not_run": why}
    obs = sched.observability
    verdicts = [R.judge(sched, r) for r in res.reports]
    n_rep = sum(1 for v, _ in verdicts if v == "reproduced")
    conf = conform_logs(spec, [r.log for r in res.reports])
    paths = write_logs(log_dir, path, res.reports) if log_dir else []
    if free is not None and free.refused:
        free = None
    free_rep = None if free is None else sum(1 for r in free.reports
                                             if obs.observable and obs.gpu_kind in r.kinds)
    n = len(res.reports)
    if obs.observable:
        judged = f"reproduced {n_rep}/{n} ({obs.gpu_kind})"
    else:
        judged = f"not observable on hardware ({sched.kind}: {obs.why})"
    free_text = "" if free is None else (
        f"; free runs: {free_rep}/{len(free.reports)} show it ({counts_text(free.counts())})"
        if obs.observable else f"; free runs: {counts_text(free.counts())}")
    click.echo(f"{path}: replay of {sched.describe()}, {n} runs on {res.device} (seed {seed}): "
               f"{judged}{free_text}; GPU outcomes: {counts_text(res.counts())}; logs conform: "
               f"{conform_text(conf)}", err=True)
    if obs.observable and obs.why:
        click.echo(f"  note: {obs.why}", err=True)
    shown = next((r for r, (v, _) in zip(res.reports, verdicts) if v == "reproduced"),
                 res.reports[0] if res.reports else None)
    if shown is not None:
        k = shown.log["run"]
        for line in _what_it_shows(shown):
            click.echo(f"  run {k}: {line}", err=True)
    for rep, (v, why) in zip(res.reports, verdicts):
        if v == "not reproduced":
            click.echo(f"  run {rep.log['run']}: not reproduced: {why}", err=True)
    if conf is not None:
        for rep, c in zip(res.reports, conf):
            if not c.ok:
                click.echo(f"  run {rep.log['run']}: log does not conform: event {c.index}: "
                           f"{c.message}", err=True)
    for kind, why in unseen:
        click.echo(f"  not observable on hardware: {kind}: {why}", err=True)
    if paths:
        click.echo(f"  logs: {os.path.dirname(paths[0])}/", err=True)
    bad = (obs.observable and n_rep < n) or (conf is not None and not all(c.ok for c in conf))
    row = (os.path.basename(path), model_text, f"{sched.kind}, {sched.trace_steps}"
           + (f"+{sched.total - sched.trace_steps}" if sched.total > sched.trace_steps else "")
           + " steps",
           f"{n_rep}/{n} ({obs.gpu_kind})" if obs.observable else "not observable",
           "-" if free is None else (f"{free_rep}/{len(free.reports)}" if obs.observable
                                     else counts_text(free.counts())),
           conform_text(conf),
           "; ".join(([] if obs.observable else [sched.kind]) + [k for k, _ in unseen]) or "-")
    return {"spec": path, "device": res.device, "seed": seed,
            "replay": dict(sched.meta(), why=obs.why, reproduced=n_rep, runs=n,
                           verdicts=[{"run": r.log["run"], "verdict": v, "why": w}
                                     for r, (v, w) in zip(res.reports, verdicts)],
                           not_observable=[{"kind": k, "why": w} for k, w in unseen]),
            "counts": res.counts(),
            "free": None if free is None else {"counts": free.counts(), "shows": free_rep,
                                               "runs": [r.summary() for r in free.reports]},
            "conform": None if conf is None else [
                {"ok": c.ok, "index": c.index, "message": c.message} for c in conf],
            "runs": [r.summary() for r in res.reports], "logs": paths,
            "row": list(row), "_exit": EXIT_FAIL if bad else EXIT_OK, "_row": row}


def _what_it_shows(rep) -> list[str]:
    """What a GPU run showed, in a few lines: the tile a read found, the stuck agents, a trap."""
    out = []
    if rep.mismatches:
        out += rep.mismatches[:2]
    if "deadlock" in rep.kinds:
        out.append("hang: " + "; ".join(rep.stuck[:4]) + (" ..." if len(rep.stuck) > 4 else ""))
    if "trap" in rep.kinds:
        out.append("trap" + (f": {rep.detail}" if rep.detail else ""))
    if not out:
        out.append(f"outcome {rep.outcome}")
    return out


HEAD = ("spec", "model", "replayed", "replay on the GPU", "free runs", "conform", "not observable")


def table(rows, runs, seed, device) -> str:
    """One row per spec (the JSON document keeps each as `row`, so several runs' documents
    make one table)."""
    widths = [max(len(str(x)) for x in col) for col in zip(HEAD, *rows)] if rows else [len(h) for h in HEAD]
    lines = [f"replay on {device} ({runs} runs per spec, seed {seed})",
             "| " + " | ".join(h.ljust(w) for h, w in zip(HEAD, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths)) + " |")
    return "\n".join(lines)
