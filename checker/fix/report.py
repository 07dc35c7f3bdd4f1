"""What `--suggest-fix` (checker.fix.suggest) reports: `FixSuggestion`, its CLI text (`format_fix`),
the unified diff of the spec file (`unified_diff`, hunks starting at the table header) and the
messages for a fix found and for none found."""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from pipeproof.checker.fix.candidates import _why
from pipeproof.checker.fix.edit import Change
from pipeproof.checker.fix.order import CATEGORY_WORDS
from pipeproof.checker.fix.text import _NoEdit, _Toml
from pipeproof.spec.schema import Spec


@dataclass(frozen=True)
class FixSuggestion:
    found: bool
    changes: tuple[Change, ...]
    diff: str            # unified diff against the spec file's text ("" when there is no file)
    verified: str        # what verified it ("" when nothing was found)
    message: str
    patched_text: str = ""   # the spec file's text with the fix applied ("" when not found)
    tried: int = 0           # candidate specs re-verified


def format_fix(suggestion: FixSuggestion) -> str:
    """Human text for the CLI (stderr)."""
    if not suggestion.found:
        return f"no fix suggested: {suggestion.message}\n"
    n = len(suggestion.changes)
    lines = [f"suggested fix ({n} change{'s' if n != 1 else ''}):"]
    lines += [f"  {c.location}: {_show(c.old)} -> {_show(c.new)}" for c in suggestion.changes]
    if suggestion.diff:
        lines.append(suggestion.diff.rstrip("\n"))
    lines.append(f"verified: {suggestion.verified}")
    return "\n".join(lines) + "\n"


def _show(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


# ---------------------------------------------------------------------------------------
# The diff


def _headers(text: str) -> dict[int, str]:
    """Line number -> table header label (`[pipeline]`, `[[role]] name = "producer"`)."""
    labels = {}
    try:
        doc = _Toml(text)
    except _NoEdit:
        return labels
    for tab in doc.tables:
        if tab.kind == "root":
            continue
        line = doc.line_of(tab.start)
        label = text[tab.start:tab.header_end].strip().split("#")[0].strip()
        name = tab.stmt("name")
        if tab.kind == "array" and name is not None:
            label += " " + text[name.start:name.value_end].strip()
        labels[line] = label
    return labels


def unified_diff(old: str, new: str, path: str, reach: int = 8) -> str:
    """A unified diff of `old` -> `new` whose hunks start at the change's table header when it
    is at most `reach` lines above it (else two lines of context and the header after @@)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    headers = _headers(old)
    blocks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
              if op[0] != "equal"]
    if not blocks:
        return ""
    hunks = []  # [a_start, a_end, b_start, b_end] with context
    for _, i1, i2, j1, j2 in blocks:
        above = [h for h in headers if h < i1] or [0]
        h = max(above)
        start = h if i1 - h <= reach else max(0, i1 - 2)
        after = min(len(a) - i2, 1)
        span = [start, i2 + after, j1 - (i1 - start), j2 + after]
        if hunks and span[0] <= hunks[-1][1]:
            hunks[-1][1], hunks[-1][3] = span[1], span[3]
        else:
            hunks.append(span)
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for s1, e1, s2, e2 in hunks:
        above = [h for h in headers if h < s1]
        label = f" {headers[max(above)]}" if above and s1 not in headers else ""
        out.append(f"@@ -{s1 + 1},{e1 - s1} +{s2 + 1},{e2 - s2} @@{label}\n")
        sub = difflib.SequenceMatcher(None, a[s1:e1], b[s2:e2], autojunk=False)
        for tag, i1, i2, j1, j2 in sub.get_opcodes():
            if tag == "equal":
                out += [" " + line for line in a[s1 + i1:s1 + i2]]
            else:
                out += ["-" + line for line in a[s1 + i1:s1 + i2]]
                out += ["+" + line for line in b[s2 + j1:s2 + j2]]
    text = ""
    for line in out:
        text += line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    return text


# ---------------------------------------------------------------------------------------
# Messages


def _found_message(spec: Spec, edits, result) -> str:
    parts = []
    for e in edits:
        why = _why(e)
        parts.append(f"{e.location} {_show(e.old)} -> {_show(e.new)}"
                     + (f" ({why})" if why else ""))
    n = len(edits)
    return (f"{n} change{'s' if n != 1 else ''} make{'s' if n == 1 else ''} "
            f"{spec.path} safe: {'; '.join(parts)}; the explicit engine explored all "
            f"{result.states} states")


def _not_found_message(spec: Spec, result, singles, search) -> str:
    """`search`: the finished search (checker.fix._Search)."""
    categories = [CATEGORY_WORDS[c] for c in CATEGORY_WORDS
                  if any(e.category == c for e in singles)]
    what = ", ".join(categories) or "nothing (the spec has no integer parameter to vary)"
    text = (f"no small fix found for the {result.kind} in {spec.path}: no change of one or two "
            f"integer parameters that the explicit engine verifies ok among the {search.tried} "
            f"candidates tried ({len(singles)} single changes of {what}, then pairs)")
    if search.out_of_time:
        text += f"; the time budget ({search.budget_s:g} s) ran out"
    elif search.tried >= search.max_candidates:
        text += f"; stopped at the limit of {search.max_candidates} candidates"
    if search.refuted:
        at = sorted({n for n in search.refuted_at if n is not None})
        text += (f"; prove refuted {len(search.refuted)} candidate(s) the explicit engine "
                 f"accepted at items = {spec.items}"
                 + (f" (violated at items = {', '.join(map(str, at))})" if at else ""))
    if search.unrendered:
        text += f"; {search.unrendered} verified candidate(s) could not be written as TOML"
    return text
