"""What both front-end commands (`pipeproof triton`, `pipeproof mojo`) do with a spec they
extracted from a kernel: verify it at the kernel's own item count, or prove it for every item
count, print the verdict with the kernel's source line of each counterexample step, and give
the exit code. Each front end reads its own IR; this is the part they share.

A proof speaks for the kernel only where the extracted program is the kernel's: at its own item
count, and at other counts where the front end re-extracted the program and found it the same
(`same`). A violation the proof finds only at another item count is a program the kernel may
never run: inconclusive for the kernel (exit 3), never a false alarm.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import click


@dataclass
class Checked:
    result: object            # the explicit engine's Result (for a proof: at its violating n)
    lines: list               # the kernel's source line of each counterexample step
    code: int                 # the exit code
    kernel_status: str | None  # --prove: proved | violated | unknown, for the kernel
    elsewhere: bool = False   # --prove: violated only at an item count the kernel does not run


def show_extracted(target, toml_text, emit, as_json):
    """Where the report goes (stderr under --json, whose document owns stdout), after saying
    where the extracted spec went (the --emit-spec file) or printing it."""
    out = (lambda s: click.echo(s, err=True)) if as_json else click.echo
    if emit:
        out(f"{target}: spec written to {emit}")
    elif not as_json:
        out(toml_text)
    return out


def check_extracted(spec, target, lines_of, *, out, as_json, do_prove, same, same_lines,
                    same_json, rerun_hint, max_states, timeout, strict_exit=False) -> Checked:
    """`lines_of(result)`: the kernel lines of its counterexample. `same`: None, or (the program
    is the same at the other counts compared?, what was compared); `same_lines`/`same_json` say
    it in text and JSON. `rerun_hint`: the command that checks the kernel's own count."""
    from pipeproof.checker.results import EXIT_INCONCLUSIVE, VERDICT_EXIT, Verdict
    if do_prove:
        from pipeproof.checker.engines import MAX_ABSTRACT_STATES, prove
        from pipeproof.checker.cli.prove import proof_text, proof_to_json
        proof = prove(spec, timeout=timeout, max_states=max_states or MAX_ABSTRACT_STATES)
        result = proof.result
        lines = lines_of(result) if result else []
        elsewhere = (proof.verdict is Verdict.VIOLATION and not (same and same[0])
                     and result is not None and result.spec.items != spec.items)
        if elsewhere:
            out(f"{target}: inconclusive for the kernel: the extracted spec is first violated at "
                f"item count {result.spec.items}, and it is the kernel's program at {spec.items} "
                f"alone; the counterexample below is that spec's, not a run of the kernel; "
                f"{rerun_hint} checks the kernel's own count")
        out(proof_text(proof))
        for line in same_lines:
            out(line)
        kernel_status = "unknown" if elsewhere else proof.status
        if as_json:
            click.echo(json.dumps({"target": target, "proof": proof_to_json(proof),
                                   "kernel_status": kernel_status, "trip_counts_agree": same_json,
                                   "source": lines}, indent=2))
        code = VERDICT_EXIT[Verdict.of(kernel_status)]
        if same is not None and not same[0] and code == 0:
            code = EXIT_INCONCLUSIVE  # proved for a program that is not the kernel's at the other counts
        return Checked(result, lines, code, kernel_status, elsewhere)
    from pipeproof.checker.runtime import wall
    from pipeproof.checker.results import format_text, to_json
    from pipeproof.checker.engines import verify
    result = verify(spec, max_states=max_states, timeout=timeout, strict_exit=strict_exit)
    result.wall_seconds = wall()  # reading (and compiling) the kernel included
    out(format_text(result).rstrip("\n"))
    lines = lines_of(result)
    if as_json:
        doc = to_json([result])
        doc["target"] = target
        doc["source"] = lines
        click.echo(json.dumps(doc, indent=2))
    return Checked(result, lines, VERDICT_EXIT[result.verdict], None)


def print_counterexample(checked: Checked, target, out, trace_file, step_text) -> None:
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
