"""`pipeproof prove SPEC...`: safety and deadlock freedom for every item count (checker/prove.py).

Exit codes as `verify`: 0 proved, 1 violated (with the trace at the item count that breaks
it), 3 unknown (with the reason), 2 bad input, 4 internal error; the worst over several specs.
"""
from __future__ import annotations

import json
import sys

import click

SCHEMA = "pipeproof.prove"
SCHEMA_VERSION = 1


def proof_to_json(proof) -> dict:
    from pipeproof.checker.report import result_to_json
    return {
        "spec": proof.spec.path,
        "status": proof.status,
        "reason": proof.reason,
        "parameter": proof.parameter,
        "abstract_states": proof.abstract_states,
        "seconds": round(proof.seconds, 3),
        "items": proof.items,
        "result": result_to_json(proof.result) if proof.result else None,
    }


def proof_text(proof) -> str:
    from pipeproof.checker.report import format_text
    path = proof.spec.path
    if proof.status == "proved":
        return (f"{path}: proved for every item count ({proof.parameter}): "
                f"{proof.abstract_states:,} abstract states, {proof.seconds:.2f} s")
    if proof.status == "violated":
        return (f"{path}: violated at item count n = {proof.items} ({proof.reason})\n"
                + format_text(proof.result).rstrip("\n"))
    return f"{path}: unknown: {proof.reason} ({proof.seconds:.2f} s)"


@click.command()
@click.argument("specs", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Give up (unknown) after this many seconds.")
@click.option("--max-states", type=click.IntRange(min=1), help="Give up (unknown) after this many abstract states.")
@click.option("--trace", "trace_file", metavar="F", help="Write a refutation's trace (*.itf.json or *.trace.json).")
@click.option("--no-por", "no_por", is_flag=True,
              help="Search every interleaving, without partial-order reduction (to compare).")
@click.option("--no-cta-symmetry", "no_cta_symmetry", is_flag=True,
              help="Keep the CTAs of a cluster apart even where they run the same programs (to compare).")
def prove(specs, as_json, timeout, max_states, trace_file, no_por, no_cta_symmetry):
    """Prove each SPEC safe and deadlock-free for every item count, or refute it."""
    from pipeproof.checker.command import InputLoop, check_trace_name, engines_late, output_path
    from pipeproof.checker.result import PROOF_VERDICTS, VERDICT_EXIT
    from pipeproof.checker.export import write_trace
    from pipeproof.checker.prove import MAX_ABSTRACT_STATES, ProofResult, prove as run_prove
    from pipeproof.spec.load import load_spec

    check_trace_name(trace_file)
    late = engines_late(timeout)
    docs = []
    loop = InputLoop(lambda path, message, _code: docs.append(
        {"spec": path, "status": "error", "reason": message}))

    def run_one(path):
        spec = load_spec(path)
        if late:
            return ProofResult(spec=spec, seconds=timeout, status="unknown", reason=late)
        return run_prove(spec, timeout=timeout, max_states=max_states or MAX_ABSTRACT_STATES,
                         por=not no_por, cta_symmetry=not no_cta_symmetry)

    for path in specs:
        proof = loop.attempt(path, lambda: run_one(path))
        if proof is None:
            continue
        click.echo(proof_text(proof), err=as_json)  # stdout unless it carries the JSON
        if trace_file and proof.result and proof.result.traces:
            target = output_path(trace_file, path, len(specs) > 1)
            write_trace(proof.result.traces[proof.result.kind], target)
            click.echo(f"{path}: {proof.result.kind} trace written to {target}", err=as_json)
        docs.append(proof_to_json(proof))
        loop.note(VERDICT_EXIT[PROOF_VERDICTS[proof.status]])
    if as_json:
        click.echo(json.dumps({"schema": SCHEMA, "version": SCHEMA_VERSION, "results": docs}, indent=2))
    sys.exit(loop.worst)
