"""SARIF 2.1.0 output (`verify --sarif F`, `triton --sarif F`, `pytest --pipeproof-sarif F`), so
a CI's code-scanning view shows a violation on the line it comes from: a Triton kernel's source
line (the `loc` the front end keeps), else the spec file and the line of the op that the
counterexample's last agent step ran, when the file names it; else the file's first line.

One `run` per document; one `result` per violation (level error), per inconclusive or
unreadable target (level warning: never silently ok) and per warning of an ok run. Rules are
the violation kinds and warnings of checker/results/result.py. tests/test_sarif.py validates the
output against the published schema (tests/fixtures/sarif/).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFO_URI = "https://github.com/pipeproof/pipeproof"


def finding(kind: str, level: str, message: str, file: str | None, line: int | None = None,
            related: list | None = None) -> dict:
    """One result: kind is the rule (a violation kind, `inconclusive`, `unreadable`, a warning)."""
    return {"kind": kind, "level": level, "message": message, "file": file, "line": line,
            "related": related or []}


def _uri(path: str) -> str:
    p = Path(path)
    try:
        return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return p.as_posix() if not p.is_absolute() else p.resolve().as_uri()


def _location(file, line, message=None) -> dict:
    phys = {"artifactLocation": {"uri": _uri(file)}}
    if line:
        phys["region"] = {"startLine": int(line)}
    loc = {"physicalLocation": phys}
    if message:
        loc["message"] = {"text": message}
    return loc


def document(findings: list[dict], tool_version: str = "0.1.0") -> dict:
    rules = sorted({f["kind"] for f in findings})
    results = []
    for f in findings:
        r = {"ruleId": f["kind"], "ruleIndex": rules.index(f["kind"]), "level": f["level"],
             "message": {"text": f["message"]}}
        if f.get("file"):
            r["locations"] = [_location(f["file"], f.get("line"))]
        rel = [dict(_location(file, line, text), id=i)
               for i, (file, line, text) in enumerate(f.get("related", [])) if file]
        if rel:
            r["relatedLocations"] = rel
        results.append(r)
    return {
        "$schema": SCHEMA, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "pipeproof", "version": tool_version,
                                "informationUri": INFO_URI,
                                "rules": [{"id": k, "shortDescription": {"text": _describe(k)}}
                                          for k in rules]}},
            "results": results,
        }],
    }


def _describe(kind: str) -> str:
    if kind == "inconclusive":
        return "The check stopped at a limit: nothing is proved."
    if kind == "unreadable":
        return "pipeproof could not read the kernel's synchronisation: not checked."
    return f"pipeproof {kind.replace('_', ' ')}"


def write(path: str, findings: list[dict]) -> None:
    """Atomically (a reader never sees half a document)."""
    text = json.dumps(document(findings), indent=2) + "\n"
    tmp = f"{path}.{os.getpid()}.tmp"
    Path(tmp).write_text(text)
    os.replace(tmp, path)


def split_loc(text: str):
    """'file.py:42' or 'file.py:42:7' -> (file, 42); else (None, None)."""
    m = re.match(r"^(.*?):(\d+)(?::\d+)?$", str(text or "").strip())
    return (m.group(1), int(m.group(2))) if m else (None, None)


def _op_line(spec_path: str, op: tuple | None) -> int | None:
    """The spec file's line that spells the op (a quoted string starting with its name), in
    the acting role's table when the file names the role, if the file is on disk."""
    if not op:
        return None
    op_text, role = op
    try:
        lines = Path(spec_path).read_text().splitlines()
    except OSError:
        return None
    pattern = re.compile(r"[\"']" + re.escape(op_text) + r"\b")
    named = re.compile(r"^\s*name\s*=\s*[\"']" + re.escape(role) + r"[\"']") if role else None
    start = next((i for i, line in enumerate(lines) if named and named.search(line)), 0)
    for i in list(range(start, len(lines))) + list(range(0, start)):
        if pattern.search(lines[i]):
            return i + 1
    return None


def _last_op(result):
    """(op name, role) of the counterexample's last agent step."""
    trace = result.traces.get(result.kind) if result.traces else None
    if trace is None:
        return None
    for step in reversed(trace.steps):
        if step.event.kind == "agent" and step.event.op:
            return step.event.op, re.sub(r"\[\d+\]$", "", step.actor.split(".")[-1])
    return None


def from_result(result, path: str) -> list[dict]:
    """The findings of one `verify` result on the spec file `path`."""
    out = []
    if result.verdict == "violation":
        line = _op_line(path, _last_op(result))
        out.append(finding(result.kind, "error",
                           f"{result.kind}: shortest counterexample {result.depth} steps "
                           f"({result.states} states explored)", path, line or 1))
    elif result.verdict == "inconclusive":
        out.append(finding("inconclusive", "warning",
                           f"inconclusive: {result.limit or 'a limit was reached'}", path, 1))
    for w in sorted(getattr(result, "warnings", {}) or {}):
        out.append(finding(w, "warning", f"warning: {w}", path, 1))
    return out


def from_error(path: str, message: str) -> list[dict]:
    return [finding("unreadable", "warning", message, path, 1)]


def from_kernel(kind, level, message, lines: list[dict], fallback: str | None) -> list[dict]:
    """A Triton kernel's finding: located on the first kernel line of the counterexample's
    source lines (run.py's `loc`), the others as related locations."""
    locs = [(split_loc(s["line"]), s) for s in lines]
    locs = [((f, n), s) for (f, n), s in locs if f]
    if locs:
        (file, line), _ = locs[-1] if kind in ("deadlock",) else locs[0]
    else:
        file, line = split_loc(fallback or "")
        if not file:
            file, line = fallback, None
    related = [(f, n, f"step {s['step']}: {s['partition']} {s['op']}") for (f, n), s in locs]
    return [finding(kind, level, message, file, line, related)]
