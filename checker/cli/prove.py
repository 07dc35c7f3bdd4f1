"""`pipeproof prove SPEC...`: safety and deadlock freedom for every item count (checker/engines/prover.py).

Exit codes as `verify`: 0 proved, 1 violated (with the trace at the item count that breaks
it), 3 unknown (with the reason, a Ctrl-C too), 2 bad input or usage, 4 internal error; the
worst over several specs.

With `--json` every run prints exactly one JSON document on stdout (the text reports go to
stderr), whatever happens: each spec named has one entry in `results` (an `error` entry for
bad input or an internal error, with the traceback on stderr), and `error` says what stopped
the run outside any one spec (a usage error, an internal error, or null). Every number in it
is a Python int or float: a document that does not serialize is an internal error of its
spec (exit 4), never a crash without output.
"""
from __future__ import annotations

import json
import sys
import traceback

import click

from pipeproof.spec.vocabulary import Verdict

SCHEMA = "pipeproof.prove"
SCHEMA_VERSION = 1
INTERNAL = "internal error"
INTERRUPTED = "interrupted (Ctrl-C)"
WARNING_TEXT = {"unawaited_at_exit": "a CTA exits with its own copies or commits still in "
                                     "flight (not a violation; --strict-exit makes it one)"}


def _wall() -> float:
    from pipeproof.checker.runtime import wall
    return wall()


def proof_to_json(proof) -> dict:
    from pipeproof.checker.results import result_to_json
    return {
        "spec": proof.spec.path,
        "status": proof.status,
        "reason": proof.reason,
        "parameter": proof.parameter,
        "abstract_states": proof.abstract_states,
        "own_states": proof.own_states,
        "seconds": round(proof.seconds, 3),
        "wall_seconds": round(_wall(), 3),
        "items": proof.items,
        "warnings": list(proof.warnings),
        "result": result_to_json(proof.result) if proof.result else None,
    }


def _seconds(proof) -> str:
    """The proof's own seconds, and the command's wall time since its process started (imports,
    the engines' load and the specs before this one too: what a stopwatch reads)."""
    from pipeproof.checker.runtime import wall
    return f"{proof.seconds:.2f} s, {wall():.2f} s wall"


def proof_text(proof) -> str:
    from pipeproof.checker.results import format_text
    path = proof.spec.path
    count = "item count" if proof.spec.tiles is None else "tile count"  # nested loops: n = tiles
    if proof.verdict is Verdict.OK:
        return "\n".join([f"{path}: proved for every {count} ({proof.parameter}): "
                          f"{proof.abstract_states:,} abstract states, {_seconds(proof)}"]
                         + [f"{path}: warning: {name} at some item count: {WARNING_TEXT[name]}"
                            for name in proof.warnings])
    if proof.verdict is Verdict.VIOLATION:
        return (f"{path}: violated at {count} n = {proof.items} ({proof.reason})\n"
                + format_text(proof.result).rstrip("\n"))
    # The counts so far (a limit or a Ctrl-C stops the run where it is): the abstract search's,
    # and the explicit engine's quick look at the spec's own item count.
    return (f"{path}: unknown: {proof.reason} ({proof.abstract_states:,} abstract states, "
            f"{proof.own_states:,} states at its own item count, {_seconds(proof)})")


def document(results: list, error: str | None = None) -> str:
    """The one JSON document of a `prove --json` run. `allow_nan=False`: the document is
    strict JSON, and a value that is not plain JSON data raises (the caller's internal error)."""
    return json.dumps({"schema": SCHEMA, "version": SCHEMA_VERSION, "results": results,
                       "error": error}, indent=2, allow_nan=False)


def error_entry(path, reason: str) -> dict:
    """The entry of a spec with no proof: bad input, an internal error, a usage error."""
    return {"spec": path, "status": "error", "reason": reason}


def unknown_entry(path, reason: str) -> dict:
    """The entry of a spec a Ctrl-C stopped (or kept from running): unknown, as a limit."""
    return {"spec": path, "status": "unknown", "reason": reason, "parameter": "",
            "abstract_states": 0, "own_states": 0, "seconds": 0.0, "items": None, "warnings": [], "result": None}


class _ProveCommand(click.Command):
    """With `--json`, a usage error found while parsing the command line (a bad option value,
    no spec) still prints the one JSON document (no results: the specs are not known), then
    the usual message on stderr and exit 2."""

    def parse_args(self, ctx, args):
        as_json = "--json" in args
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            if as_json:
                click.echo(document([], err.format_message()))
            raise


@click.command(cls=_ProveCommand)
@click.argument("specs", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Give up (unknown) after this many seconds.")
@click.option("--max-states", type=click.IntRange(min=1), help="Give up (unknown) after this many abstract states.")
@click.option("--trace", "trace_file", metavar="F", help="Write a refutation's trace (*.itf.json or *.trace.json).")
@click.option("--no-por", "no_por", is_flag=True,
              help="Search every interleaving, without partial-order reduction (to compare).")
@click.option("--no-cta-symmetry", "no_cta_symmetry", is_flag=True,
              help="Keep the CTAs of a cluster apart even where they run the same programs (to compare).")
@click.option("--strict-exit", is_flag=True,
              help="A CTA that exits with its own copies or commits still in flight is "
                   "inflight_at_exit (PTX's strict reading), not the warning unawaited_at_exit.")
def prove(specs, as_json, timeout, max_states, trace_file, no_por, no_cta_symmetry, strict_exit):
    """Prove each SPEC safe and deadlock-free for every item count, or refute it."""
    from pipeproof.checker.cli.command import InputLoop, UsageFailure
    from pipeproof.checker.results import EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_USAGE

    entries = {}  # spec index -> its JSON entry
    current = [0]  # the index of the spec being proved, for the loop's error entries
    loop = InputLoop(lambda path, message, _code: entries.__setitem__(
        current[0], error_entry(path, message)))
    error = None
    try:
        _prove_all(specs, as_json, timeout, max_states, trace_file, no_por, no_cta_symmetry,
                   strict_exit, loop, entries, current)
    except UsageFailure as err:  # (a bad --trace name): as click says it, exit 2
        if not as_json:
            raise
        error = err.format_message()
        click.echo(f"Error: {error}", err=True)
        loop.note(EXIT_USAGE)
    except KeyboardInterrupt:  # outside a search (loading, compiling): the rest is not run
        error = INTERRUPTED
        click.echo(INTERRUPTED, err=True)
        loop.note(EXIT_INCONCLUSIVE)
    except Exception:  # a bug of ours outside any one spec: still the document, exit 4
        error = INTERNAL
        click.echo(f"prove: {INTERNAL} (please report):\n{traceback.format_exc()}", err=True)
        loop.note(EXIT_INTERNAL)
    if as_json:
        missing = ((lambda path: unknown_entry(path, f"not run: {INTERRUPTED}"))
                   if error == INTERRUPTED else (lambda path: error_entry(path, error or INTERNAL)))
        results = [entries.get(i) or missing(path) for i, path in enumerate(specs)]
        try:
            text = document(results, error)
        except Exception:  # (each entry was dumped on its own already: not expected)
            click.echo(f"prove: {INTERNAL} (please report):\n{traceback.format_exc()}", err=True)
            loop.note(EXIT_INTERNAL)
            text = document([error_entry(path, INTERNAL) for path in specs], INTERNAL)
        click.echo(text)
    sys.exit(loop.worst)


def _prove_all(specs, as_json, timeout, max_states, trace_file, no_por, no_cta_symmetry,
               strict_exit, loop, entries, current) -> None:
    """Prove each spec in turn; entries[i] is spec i's JSON entry once it has one, and
    current[0] the index of the spec being proved."""
    from pipeproof.checker.cli.command import check_trace_name, engines_late, output_path
    from pipeproof.checker.results import write_trace
    from pipeproof.checker.engines import MAX_ABSTRACT_STATES, ProofResult, prove as run_prove
    from pipeproof.checker.results import EXIT_INCONCLUSIVE, VERDICT_EXIT
    from pipeproof.spec.load import load_spec

    check_trace_name(trace_file)
    late = engines_late(timeout)

    def run_one(path):
        spec = load_spec(path)
        if late:
            return ProofResult(spec=spec, seconds=timeout, status="unknown", reason=late)
        return run_prove(spec, timeout=timeout, max_states=max_states or MAX_ABSTRACT_STATES,
                         por=not no_por, cta_symmetry=not no_cta_symmetry,
                         strict_exit=strict_exit)

    def report(path, proof):
        """Say the proof (stdout, or stderr under --json), write its trace, and return its
        JSON entry, checked to serialize (else an internal error of this spec)."""
        click.echo(proof_text(proof), err=as_json)
        if trace_file and proof.result and proof.result.traces:
            target = output_path(trace_file, path, len(specs) > 1)
            write_trace(proof.result.traces[proof.result.kind], target)
            click.echo(f"{path}: {proof.result.kind} trace written to {target}", err=as_json)
        entry = proof_to_json(proof)
        json.dumps(entry, allow_nan=False)
        return entry

    for i, path in enumerate(specs):
        current[0] = i
        try:
            proof = loop.attempt(path, lambda: run_one(path))
            entry = None if proof is None else loop.attempt(path, lambda: report(path, proof))
        except KeyboardInterrupt:  # Ctrl-C in this spec's proof: it is unknown, the rest not run
            click.echo(f"{path}: unknown: {INTERRUPTED}", err=as_json)
            entries[i] = unknown_entry(path, INTERRUPTED)
            proof = entry = None
        if entry is not None:
            entries[i] = entry
            loop.note(VERDICT_EXIT[proof.verdict])
        if i in entries and entries[i]["reason"] == INTERRUPTED:  # (or the explicit engine's
            loop.note(EXIT_INCONCLUSIVE)                           # quick look stopped by it)
            for j in range(i + 1, len(specs)):
                entries[j] = unknown_entry(specs[j], f"not run: {INTERRUPTED}")
            return
