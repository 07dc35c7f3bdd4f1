"""`pipeproof conform SPEC LOG.json...`: is a recorded GPU event log a path of the model?

Exit codes (docs/model.md "Exit codes"): 0 every log conforms, 1 a log does not (its first event
that is not a step is printed on stderr), 2 bad input (a bad spec, a missing or malformed log,
a log naming agents the spec lacks), 3 inconclusive (the search bound was reached), 4 internal
error. With several logs the exit code is the worst. `--json` prints one document on stdout.

The lead registers this command into checker/cli/main.py's group: `main.add_command(conform)`.
"""
from __future__ import annotations

import json
import sys

import click

from pipeproof.checker.cli import InputLoop
from pipeproof.checker.results import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_USAGE, EXIT_VIOLATION
JSON_SCHEMA = "pipeproof.conform/1"


@click.command("conform")
@click.argument("spec_path", metavar="SPEC")
@click.argument("logs", metavar="LOG.json...", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--max-nodes", type=click.IntRange(min=1), default=None,
              help="Bound on the search over orders of equal-timestamp events.")
def conform(spec_path, logs, as_json, max_nodes):
    """Replay each LOG.json recorded on a GPU through the model of SPEC: exit 0 when every log
    is a path of the model, 1 with the first event that is not."""
    from pipeproof.checker.runtime import ensure_engines
    from pipeproof.cuda_ref.conform import DEFAULT_MAX_NODES, LogError, conform as replay, load_log
    from pipeproof.spec.load import load_spec
    from pipeproof.spec.schema import SpecError

    ensure_engines()  # it steps the compiled model: the one shared build, with notices

    def finish(rows, code):
        if as_json:
            click.echo(json.dumps({"schema": JSON_SCHEMA, "spec": spec_path, "logs": rows}, indent=2))
        sys.exit(code)

    try:
        spec = load_spec(spec_path)
    except SpecError as err:
        click.echo(str(err), err=True)
        finish([{"log": p, "error": str(err), "exit_code": EXIT_USAGE} for p in logs], EXIT_USAGE)
    model = None
    rows = []
    loop = InputLoop(lambda _path, message, code: row.update(error=message, exit_code=code),
                     bad_input=(LogError, SpecError))

    def replay_one(path):
        nonlocal model
        log = load_log(path)
        if model is None:
            from pipeproof.checker.core import compile_model
            model = compile_model(spec)
        return log, replay(model, log, source=path, max_nodes=max_nodes or DEFAULT_MAX_NODES)

    for path in logs:
        row = {"log": path}
        replayed = loop.attempt(path, lambda: replay_one(path))
        if replayed is not None:
            log, result = replayed
            code = EXIT_OK if result.ok else EXIT_INCONCLUSIVE if result.inconclusive else EXIT_VIOLATION
            if result.ok:
                click.echo(f"{path}: {result.message}", err=True)
            else:
                click.echo(f"{path}: does not conform to {spec_path}: {result.message}", err=True)
            row.update(ok=result.ok, inconclusive=result.inconclusive, index=result.index,
                       steps=result.steps, message=result.message, outcome=log["outcome"],
                       exit_code=code)
            loop.note(code)
        rows.append(row)
    finish(rows, loop.worst)
