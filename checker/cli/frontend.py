"""What every front-end command (`pipeproof triton`, `pipeproof mojo`, and each front end the
registry names: checker/frontends/registry.py) does once its options are parsed: read the kernel
through its reader, print the extracted spec (or write it, `--emit-spec`), check it through the
driver (checker/frontends/driver.py: verify at the kernel's own item count, or prove for every
item count), print the verdict with the kernel's source line of each counterexample step, and
exit with the code of `verify`. A kernel the reader refuses is its one line on stderr, exit 2.
"""
from __future__ import annotations

import json
import sys

import click


def parse_args(values) -> dict:
    """--arg NAME=V: an integer, or integers joined by commas for an array argument (sm100's
    problem shape `6=1024,1024,1024`)."""
    out = {}
    for text in values:
        name, sep, val = text.partition("=")
        try:
            parts = [int(v, 0) for v in val.split(",")]
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"{text!r}: expected NAME=INTEGER or NAME=I,J,K", param_hint="--arg")
        out[name.strip()] = parts[0] if len(parts) == 1 else parts
    return out


def run_frontend(reader, target: str, read_kernel, *, emit, as_json, trace_file, do_prove,
                 max_states, timeout, strict_exit=False, sarif_file=None):
    """`read_kernel()`: (KernelIR, ReadOptions), reading the kernel and parsing the command's
    other options in the order the command's messages have always come in. Exits."""
    from pipeproof.checker.cli.command import check_trace_name
    from pipeproof.checker.frontends import check, extract, kernel_findings, unreadable_findings
    from pipeproof.checker.frontends import InternalError
    from pipeproof.checker.results import EXIT_INTERNAL, EXIT_USAGE, sarif
    from pipeproof.spec.schema import SpecError

    check_trace_name(trace_file)
    try:
        ir, options = read_kernel()
        extracted = extract(reader, ir, options, target, emit)
    except SpecError as err:
        click.echo(str(err), err=True)
        if sarif_file:
            sarif.write(sarif_file, unreadable_findings(str(err), target))
        sys.exit(EXIT_INTERNAL if isinstance(err, InternalError) else EXIT_USAGE)
    out = show_extracted(target, extracted.toml_text, emit, as_json)
    guessed = extracted.reading.launch.get("guessed")
    if guessed:
        # a loop bound that is a kernel argument not given (the PTX reader): say what was picked
        out(f"{target}: no --arg for " + ", ".join(f"{n}{'+' + str(o) if o else ''}" for n, o in guessed)
            + f", which decide{'s' if len(guessed) == 1 else ''} a branch: read as "
            f"{extracted.reading.launch.get('guess')} (give --arg NAME=V for the kernel's own)")
    counts = reader.trip_counts(extracted.reading, extracted.toml_text, target) if do_prove else None
    checked = check(extracted, do_prove=do_prove, counts=counts, max_states=max_states,
                    timeout=timeout, strict_exit=strict_exit)
    report(checked, extracted.spec, target, counts, out=out, as_json=as_json,
           rerun_hint=reader.rerun_hint)
    if sarif_file:
        sarif.write(sarif_file, kernel_findings(checked.result, checked.lines, target,
                                                checked.kernel_status))
    print_counterexample(checked, target, out, trace_file, reader.step_text)
    sys.exit(checked.code)


def show_extracted(target, toml_text, emit, as_json):
    """Where the report goes (stderr under --json, whose document owns stdout), after saying
    where the extracted spec went (the --emit-spec file) or printing it."""
    out = (lambda s: click.echo(s, err=True)) if as_json else click.echo
    if emit:
        out(f"{target}: spec written to {emit}")
    elif not as_json:
        out(toml_text)
    return out


def report(checked, spec, target, counts, *, out, as_json, rerun_hint) -> None:
    """The verdict (a proof's, with what `counts` compared), and the --json document.
    `rerun_hint`: the command that checks the kernel's own item count."""
    result, lines = checked.result, checked.lines
    if checked.proof is not None:
        from pipeproof.checker.cli.prove import proof_text, proof_to_json
        if checked.elsewhere:
            out(f"{target}: inconclusive for the kernel: the extracted spec is first violated at "
                f"item count {result.spec.items}, and it is the kernel's program at {spec.items} "
                f"alone; the counterexample below is that spec's, not a run of the kernel; "
                f"{rerun_hint} checks the kernel's own count")
        out(proof_text(checked.proof))
        for line in counts.lines:
            out(line)
        if as_json:
            click.echo(json.dumps({"target": target, "proof": proof_to_json(checked.proof),
                                   "kernel_status": checked.kernel_status,
                                   "trip_counts_agree": counts.json, "source": lines}, indent=2))
        return
    from pipeproof.checker.results import format_text, to_json
    out(format_text(result).rstrip("\n"))
    if as_json:
        doc = to_json([result])
        doc["target"] = target
        doc["source"] = lines
        click.echo(json.dumps(doc, indent=2))


def print_counterexample(checked, target, out, trace_file, step_text) -> None:
    """The kernel's line of each step of a violation (`step_text(step)` without the step
    number), and the trace file if asked."""
    result = checked.result
    if result is None or result.verdict != "violation":
        return
    if checked.lines:
        out("in the kernel:" if not checked.elsewhere else
            f"the kernel's lines of that spec's steps (item count {result.spec.items}):")
        for s in checked.lines:
            out(f"  step {s['step']:>3}  {step_text(s)}"
                + ("  (where it stands at the end)" if s["step"] == "end" else ""))
    if trace_file:
        from pipeproof.checker.results import write_trace
        write_trace(result.traces[result.kind], trace_file)
        out(f"{target}: {result.kind} trace written to {trace_file}")
