"""The one driver of every front end: a reader's `Reading` (checker/frontends/protocol.py) to a
spec, checked by `verify` at the kernel's own item count or by `prove` for every item count,
with the kernel's source line of each counterexample step. The commands (`pipeproof triton`,
`pipeproof mojo`: their report is checker/cli/frontend.py), `pipeproof sweep --triton`,
`pytest --pipeproof` and `pipeproof.triton.watch()` all come through here.

A proof speaks for the kernel only where the extracted program is the kernel's: at its own item
count, and at other counts where the reader re-extracted the program and found it the same
(`TripCounts`). A violation the proof finds only at another item count is a program the kernel
may never run: inconclusive for the kernel (exit 3), never a false alarm.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeproof.checker.frontends.protocol import KernelIR, Reader, Reading, ReadOptions, TripCounts
from pipeproof.spec.schema import SpecError


@dataclass
class Extracted:
    """A kernel's spec: the reading it came from, its TOML text, its source map, the loaded
    spec (None until loaded: a sweep's points load theirs in the workers)."""
    reading: Reading
    toml_text: str
    source: object    # spec/frontend_core.SourceMap
    spec: object = None


@dataclass
class Checked:
    result: object            # the explicit engine's Result (for a proof: at its violating n)
    lines: list               # the kernel's source line of each counterexample step
    code: int                 # the exit code
    kernel_status: str | None  # --prove: proved | violated | unknown, for the kernel
    elsewhere: bool = False   # --prove: violated only at an item count the kernel does not run
    proof: object = None      # --prove: the ProofResult


class InternalError(SpecError):
    """A reader or builder bug: one line (never a traceback), exit 4 (EXIT_INTERNAL)."""


def internal_error(where: str, err: Exception) -> InternalError:
    """A reader or builder bug as the one line every front end gives."""
    return InternalError(f"{where}: pipeproof failed to read this kernel (internal error "
                         f"{type(err).__name__}: {' '.join(str(err).split())[:120]}); please "
                         f"report it with the kernel's compiler output")


def extract_text(reader: Reader, ir: KernelIR, options: ReadOptions) -> Extracted:
    """Read the kernel and build its spec's TOML text (a refusal raises its one-line SpecError,
    a bug of the reader or builder an InternalError)."""
    try:
        reading = reader.read(ir, options)
        toml_text, source = reading.build()
    except (SpecError, KeyboardInterrupt):
        raise
    except Exception as err:
        raise internal_error(ir.where, err) from None
    return Extracted(reading, toml_text, source)


def extract(reader: Reader, ir: KernelIR, options: ReadOptions, label: str,
            emit: str | None = None) -> Extracted:
    """extract_text, the TOML written to `emit` if given, and the spec loaded (named `emit`,
    else "LABEL (extracted)")."""
    from pipeproof.spec.load import load_spec_text
    got = extract_text(reader, ir, options)
    if emit:
        Path(emit).write_text(got.toml_text)
    got.spec = load_spec_text(got.toml_text, emit or f"{label} (extracted)")
    return got


def check(extracted: Extracted, *, do_prove: bool, counts: TripCounts | None = None,
          max_states=None, timeout=None, strict_exit: bool = False) -> Checked:
    """verify the spec at the kernel's own item count, or (do_prove) prove it for every item
    count: the kernel's status is then `unknown` where the violation is at an item count whose
    program the reader did not find to be the kernel's (`counts`)."""
    from pipeproof.checker.results import EXIT_INCONCLUSIVE, VERDICT_EXIT, Verdict
    spec, source = extracted.spec, extracted.source
    same = counts.same if counts is not None else None
    if do_prove:
        from pipeproof.checker.engines import MAX_ABSTRACT_STATES, prove
        proof = prove(spec, timeout=timeout, max_states=max_states or MAX_ABSTRACT_STATES)
        result = proof.result
        lines = source_lines(result, source) if result else []
        elsewhere = (proof.verdict is Verdict.VIOLATION and not same
                     and result is not None and result.spec.items != spec.items)
        kernel_status = "unknown" if elsewhere else proof.status
        code = VERDICT_EXIT[Verdict.of(kernel_status)]
        if same is False and code == 0:
            code = EXIT_INCONCLUSIVE  # proved for a program that is not the kernel's at the other counts
        return Checked(result, lines, code, kernel_status, elsewhere, proof)
    from pipeproof.checker.engines import verify
    from pipeproof.checker.runtime import wall
    result = verify(spec, max_states=max_states, timeout=timeout, strict_exit=strict_exit)
    result.wall_seconds = wall()  # reading (and compiling) the kernel included
    return Checked(result, source_lines(result, source), VERDICT_EXIT[result.verdict], None)


def source_lines(result, source) -> list[dict]:
    """Per agent step of the counterexample: partition, IR op and kernel line."""
    out = []
    trace = result.traces.get(result.kind) if result.verdict == "violation" else None
    if trace is None:
        return out
    from pipeproof.checker.core import compile_model
    agents = {a.name: a for a in compile_model(result.spec).agents}

    def where(name, pc):
        agent = agents.get(name)
        if agent is None:
            return None
        section = agent.section_of(pc)
        index = pc - (0 if section == "prologue" else
                      agent.body_start if section == "body" else agent.body_end)
        return source.at(agent.role, section, index)

    for step in trace.steps:
        got = where(step.actor, step.event.pc) if step.event.kind == "agent" else None
        if got:
            out.append({"step": step.index, "partition": got[0], "op": got[1], "line": got[2]})
    # where every unfinished agent stands at the end (a deadlock's stuck waits)
    last = trace.steps[-1].state if trace.steps else trace.initial
    for name, view in sorted(last.get("agents", {}).items()):
        got = None if view.get("done") or view.get("op") is None else where(name, view["pc"])
        if got:
            out.append({"step": "end", "partition": got[0], "op": got[1], "line": got[2]})
    return out


def kernel_findings(result, lines, target, proof_status=None) -> list[dict]:
    """SARIF findings of one kernel's check (none when it holds)."""
    from pipeproof.checker.results import sarif
    file = target.split("::")[0]
    if result is not None and result.verdict == "violation" and proof_status != "unknown":
        return sarif.from_kernel(result.kind, "error",
                                 f"{result.kind}: shortest counterexample {result.depth} steps "
                                 f"({result.states} states)", lines, file)
    if proof_status not in (None, "proved") or (result is not None and result.verdict == "inconclusive"):
        why = result.limit if result is not None and result.limit else (
            "the proof's violation is at an item count the kernel does not run"
            if proof_status == "unknown" and result is not None else (proof_status or ""))
        return sarif.from_kernel("inconclusive", "warning", f"inconclusive: {why}", [], file)
    return []


def unreadable_findings(message: str, target: str) -> list[dict]:
    """SARIF of a kernel that could not be read (a refusal, a file that is not IR)."""
    from pipeproof.checker.results import sarif
    return sarif.from_kernel("unreadable", "warning", message, [], target.split("::")[0])
