"""Human and machine reports of verification results.

Human text is compiler-style: one line that says everything (`PATH: KIND after D steps: WHY`),
then the counterexample as a table of steps. It is plain text (no colour) so tests and golden
files compare it verbatim. The JSON document is the `--json` contract (docs/model.md
"Command line"); its layout is versioned by `JSON_SCHEMA_VERSION`.
"""
from __future__ import annotations

from pipeproof.checker.results.result import JSON_SCHEMA_VERSION, Result
from pipeproof.checker.results.trace import Step, Trace, parity, shows_parity

SCHEMA = f"pipeproof.verify/{JSON_SCHEMA_VERSION}"
# `lap` is the acting agent's phase as the model keeps it: a lap count (0, 1, 2, ... as in
# Mojo), not what PTX's mbarrier.try_wait.parity reads; `parity` (lap % 2, nvidia only) is.
COLUMNS = ("step", "agent", "op", "stage", "lap", "parity", "changes")
COLUMNS_NO_PARITY = ("step", "agent", "op", "stage", "lap", "changes")  # amd: counters, no parity


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def counterexample_depth(result: Result) -> int:
    """Steps in the shortest counterexample (0 when there is none)."""
    if result.depth is not None:
        return result.depth
    trace = result.traces.get(result.kind or "")
    return len(trace.steps) if trace else 0


def _reason(result: Result, kind: str) -> str:
    trace = result.traces.get(kind)
    return trace.reason if trace else ""


def _seconds(result: Result) -> str:
    """`0.03 s`: the search alone; with the command's wall time (since the process started:
    imports, loading, the pre-check and earlier specs included) when the command knows it."""
    if result.wall_seconds is None:
        return f"{result.seconds:.2f} s"
    return f"{result.seconds:.2f} s search, {result.wall_seconds:.2f} s wall"


def _max_depth(result: Result) -> str:
    """The deepest BFS level: under partial-order reduction a level of the reduced graph (a
    step and the steps taken at once with it count as one), not a number of steps."""
    return (f"max depth {result.max_depth} (of the reduced graph)" if result.por
            else f"max depth {result.max_depth}")


def first_line(result: Result) -> str:
    """The one-line verdict, e.g. `spec.toml: deadlock after 17 steps: producer[0] waits ...`."""
    path = result.spec.path
    if result.engine == "bmc" and result.verdict != "violation":
        return _bmc_line(result)
    if result.engine == "laps" and result.verdict == "ok":
        return (f"{path}: ok ({_plural(result.states, 'state')} with relative laps, the same for "
                f"every item count >= {result.lap_bound}, {_seconds(result)})")
    if result.verdict == "ok":
        return (f"{path}: ok ({_plural(result.states, 'state')}, "
                f"{_plural(result.transitions, 'transition')}, {_seconds(result)})")
    if result.verdict == "inconclusive":
        return (f"{path}: inconclusive: {result.limit or 'limit reached'} "
                f"({_plural(result.states, 'state')} explored, no violation found so far)")
    kind = result.kind or "violation"
    line = f"{path}: {kind} after {_plural(counterexample_depth(result), 'step')}"
    reason = _reason(result, kind)
    if reason:
        line += f": {reason}"
    if len(result.kinds) > 1:
        line += f" (also: {', '.join(result.kinds[1:])})"
    if result.limit:
        line += f" (not shown to be the shortest: {result.limit} without partial-order reduction)"
    return line


def _bmc_line(result: Result) -> str:
    """BMC stores no states: it says how deep it looked (`ok` only when no run is longer)."""
    path = result.spec.path
    if result.verdict == "ok":
        return (f"{path}: ok (bmc: every run checked, none longer than "
                f"{_plural(result.max_depth, 'step')}, {_seconds(result)})")
    return (f"{path}: inconclusive: {result.limit or 'limit reached'} "
            f"(bmc: no violation within {_plural(result.max_depth, 'step')})")


def summary_of(n_specs: int, results: list[Result], errors: list) -> str:
    """`38 specs: 15 ok, 23 violations, 0 inconclusive` (+ errors, unexpected verdicts)."""
    count = {v: sum(1 for r in results if r.verdict == v) for v in ("ok", "violation", "inconclusive")}
    line = (f"{_plural(n_specs, 'spec')}: {count['ok']} ok, {_plural(count['violation'], 'violation')}, "
            f"{count['inconclusive']} inconclusive")
    if errors:
        line += f", {_plural(len(errors), 'error')}"
    unexpected = sum(1 for r in results if r.as_expected is False)
    declared = sum(1 for r in results if r.as_expected is not None)
    if declared:
        line += (f", {unexpected} UNEXPECTED" if unexpected else
                 f" (all {declared} with a declared verdict as expected)")
    not_run = n_specs - len(results) - len(errors)
    if not_run:
        line += f", {not_run} not run (interrupted)"
    return line


def _op_text(step: Step) -> str:
    # The agent has its own column, so drop the "consumer[1]." prefix of the printed action.
    prefix = step.actor + "."
    return step.action[len(prefix):] if step.action.startswith(prefix) else step.action


def _dash(v: object) -> str:
    return "-" if v is None else str(v)


def _row(step: Step, backend: str, columns) -> tuple[str, ...]:
    cells = (str(step.index), step.actor, _op_text(step), _dash(step.stage), _dash(step.phase))
    if "parity" in columns:
        cells += (_dash(parity(step.phase, backend)),)
    return cells + ("; ".join(step.changes) or "-",)


def format_table(trace: Trace) -> list[str]:
    """The steps of a trace as aligned rows under a header (the last column is not padded).
    `lap` is the agent's phase as a lap count, `parity` its mbarrier parity (nvidia)."""
    columns = COLUMNS if shows_parity(trace.backend) else COLUMNS_NO_PARITY
    rows = [columns] + [_row(s, trace.backend, columns) for s in trace.steps]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns) - 1)]
    lines = []
    for r in rows:
        cells = [r[0].rjust(widths[0])]  # step numbers right-aligned, the rest left-aligned
        cells += [c.ljust(w) for c, w in zip(r[1:-1], widths[1:])]
        lines.append("  ".join(cells + [r[-1]]).rstrip())
    return lines


def summary_line(result: Result) -> str:
    if result.engine == "bmc":
        return f"bmc, max depth {result.max_depth}, {_seconds(result)}"
    if result.engine == "laps":
        return f"{_plural(result.states, 'state')} (relative laps), {_seconds(result)}"
    return (f"{_plural(result.states, 'state')}, {_plural(result.transitions, 'transition')}, "
            f"{_max_depth(result)}, {_seconds(result)}")


def format_text(result: Result) -> str:
    """Full human report: verdict line, the pre-check's diagnosis (its one sentence is the
    most direct word on the bug, so it comes before the table), counterexample table, why,
    other kinds, summary."""
    lines = [first_line(result)] + warning_lines(result) + precheck_lines(result)
    if result.verdict == "violation" and result.kind in result.traces:
        trace = result.traces[result.kind]
        lines += format_table(trace)
        lines.append(f"why: {trace.reason}")
        others = [f"{k} ({_plural(len(result.traces[k].steps), 'step')})"
                  for k in result.kinds[1:] if k in result.traces]
        if others:
            lines.append(f"also found: {', '.join(others)}")
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


def precheck_lines(result: Result) -> list[str]:
    """The symbolic pre-check's words for the bug (checker/smt/precheck_spec.py), one per finding."""
    return [f"pre-check: {f.signal}: {f.kind}: {f.message}" for f in result.precheck]


def warning_lines(result: Result) -> list[str]:
    """`spec.toml: warning: unawaited_at_exit after 12 steps: cta0 exits ...`, one per warning."""
    return [f"{result.spec.path}: warning: {name} after {_plural(len(trace.steps), 'step')}: "
            f"{trace.reason}" for name, trace in result.warnings.items()]


def result_to_json(result: Result) -> dict:
    """One result as the JSON object described in docs/model.md "Command line" (`--json`)."""
    violation = None
    if result.verdict == "violation":
        kind = result.kind
        violation = {
            "kind": kind,
            "kinds": list(result.kinds),
            "depth": counterexample_depth(result),
            "reason": _reason(result, kind or ""),
            "trace": result.traces[kind].to_json() if kind in result.traces else None,
            "traces": {k: result.traces[k].to_json() for k in result.kinds
                       if k in result.traces},
        }
    return {
        "spec": result.spec.path,
        "name": result.spec.name,
        "verdict": result.verdict,
        "states": result.states,
        "transitions": result.transitions,
        "seconds": round(result.seconds, 3),  # the search alone
        # the command's wall time since its process started (null outside the command)
        "wall_seconds": None if result.wall_seconds is None else round(result.wall_seconds, 3),
        "max_depth": result.max_depth,
        "limit": result.limit or None,
        "expect": result.spec.expect,
        "as_expected": result.as_expected,  # null: nothing declared, or inconclusive
        "engine": result.engine,
        "por": result.por,
        "violation": violation,
        "warnings": [{"kind": name, "depth": len(trace.steps), "reason": trace.reason,
                      "trace": trace.to_json()} for name, trace in result.warnings.items()],
        "precheck": [f.to_json() for f in result.precheck],
        "fix": _fix_json(result.fix),
    }


def _fix_json(fix) -> dict | None:
    if fix is None:
        return None
    return {"found": fix.found, "message": fix.message, "verified": fix.verified, "diff": fix.diff,
            "changes": [{"location": c.location, "old": c.old, "new": c.new} for c in fix.changes]}


def to_json(results: list[Result]) -> dict:
    """The `--json` document for one run over one or more specs.

    With exactly one spec its keys are also copied to the top level, so scripts can read
    `doc["verdict"]` and `doc["violation"]["kind"]` without indexing `results`.
    """
    items = [result_to_json(r) for r in results]
    doc = {"schema": SCHEMA, "version": JSON_SCHEMA_VERSION, "results": items}
    if len(items) == 1:
        doc.update(items[0])
    return doc
