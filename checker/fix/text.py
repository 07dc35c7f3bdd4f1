"""Writing `--suggest-fix` edits (checker.fix.suggest) into a spec file's TOML text, keeping everything
else as written: `_Toml` finds where each table, key and value sits (enough for spec files),
`_apply_text` replaces or inserts keys, op strings and `[[role]]` tables. `_NoEdit`: the text has
a shape this editor does not handle."""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field

from pipeproof.spec.schema import MAIN_RING, Spec


class _NoEdit(Exception):
    """The file's text has a shape this editor does not handle."""


@dataclass
class _Stmt:
    key: str
    start: int
    value_start: int
    value_end: int
    end: int
    strings: list = field(default_factory=list)  # (start, end) of the array's string literals


@dataclass
class _Table:
    kind: str            # "root" | "table" | "array"
    name: tuple
    start: int
    header_end: int
    stmts: list = field(default_factory=list)

    def stmt(self, key: str):
        for s in self.stmts:
            if s.key == key:
                return s
        return None


class _Toml:
    """Where each table, key and value sits in a TOML text (enough for spec files)."""

    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.tables: list[_Table] = []
        self._scan()

    # -- scanning
    def _skip_blank(self, i: int) -> int:
        t = self.text
        while i < self.n:
            if t[i] in " \t\r\n":
                i += 1
            elif t[i] == "#":
                j = t.find("\n", i)
                i = self.n if j < 0 else j + 1
            else:
                break
        return i

    def _line_end(self, i: int) -> int:
        t = self.text
        while i < self.n and t[i] in " \t\r":
            i += 1
        if i < self.n and t[i] == "#":
            j = t.find("\n", i)
            return self.n if j < 0 else j + 1
        if i >= self.n:
            return self.n
        if t[i] == "\n":
            return i + 1
        raise _NoEdit(f"unexpected text after a value at offset {i}")

    def _string_end(self, i: int) -> int:
        t = self.text
        for quote in ('"""', "'''"):
            if t.startswith(quote, i):
                k = i + 3
                while k < self.n:
                    if quote == '"""' and t[k] == "\\":
                        k += 2
                        continue
                    if t.startswith(quote, k):
                        k += 3
                        while k < self.n and t[k] == quote[0] and k - i < 8:
                            k += 1
                        return k
                    k += 1
                raise _NoEdit("unterminated string")
        if t[i] == "'":
            j = t.find("'", i + 1)
            if j < 0:
                raise _NoEdit("unterminated string")
            return j + 1
        k = i + 1
        while k < self.n and t[k] != '"':
            k += 2 if t[k] == "\\" else 1
        if k >= self.n:
            raise _NoEdit("unterminated string")
        return k + 1

    def _value_end(self, i: int):
        t = self.text
        if i >= self.n:
            raise _NoEdit("missing value")
        if t[i] in "\"'":
            return self._string_end(i), []
        if t[i] in "[{":
            depth, strings, k = 0, [], i
            opener = t[i]
            while k < self.n:
                ch = t[k]
                if ch in "\"'":
                    e = self._string_end(k)
                    if depth == 1 and opener == "[":
                        strings.append((k, e))
                    k = e
                    continue
                if ch == "#":
                    j = t.find("\n", k)
                    k = self.n if j < 0 else j
                    continue
                if ch in "[{":
                    depth += 1
                elif ch in "]}":
                    depth -= 1
                    if depth == 0:
                        return k + 1, strings
                k += 1
            raise _NoEdit("unterminated array or table")
        k = i
        while k < self.n and t[k] not in "\n#":
            k += 1
        while k > i and t[k - 1] in " \t\r":
            k -= 1
        return k, []

    def _scan(self) -> None:
        t = self.text
        current = _Table("root", (), 0, 0)
        self.tables.append(current)
        i = self._skip_blank(0)
        while i < self.n:
            if t[i] == "[":
                array = t.startswith("[[", i)
                close = t.find("]]" if array else "]", i)
                if close < 0:
                    raise _NoEdit("bad table header")
                name = t[i + (2 if array else 1):close]
                parts = tuple(p.strip().strip("\"'") for p in name.split("."))
                end = self._line_end(close + (2 if array else 1))
                current = _Table("array" if array else "table", parts, i, end)
                self.tables.append(current)
                i = end
            else:
                eq = t.find("=", i)
                if eq < 0 or "\n" in t[i:eq]:
                    raise _NoEdit("bad key")
                key = t[i:eq].strip().strip("\"'")
                vs = eq + 1
                while vs < self.n and t[vs] in " \t":
                    vs += 1
                ve, strings = self._value_end(vs)
                end = self._line_end(ve)
                current.stmts.append(_Stmt(key, i, vs, ve, end, strings))
                i = end
            i = self._skip_blank(i)

    # -- lookup
    def table(self, selector: tuple) -> _Table | None:
        """("pipeline",), ("ring", NAME), ("barrier", NAME) or ("role", NAME)."""
        if selector[0] == "role":
            for tab in self.tables:
                if tab.kind == "array" and tab.name == ("role",):
                    s = tab.stmt("name")
                    if s is not None and _toml_value(self.text[s.value_start:s.value_end]) \
                            == selector[1]:
                        return tab
            return None
        found = [tab for tab in self.tables if tab.kind == "table" and tab.name == selector]
        return found[0] if found else None

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset)

    # -- edits (each returns the new text)
    def set_key(self, selector: tuple, key: str, value: str) -> str:
        t = self.text
        tab = self.table(selector)
        if tab is None:
            return self.append_table(selector, [(key, value)])
        s = tab.stmt(key)
        if s is not None:
            return t[:s.value_start] + value + t[s.value_end:]
        pos = tab.stmts[-1].end if tab.stmts else tab.header_end
        before = "" if pos == 0 or t[pos - 1] == "\n" else "\n"
        return t[:pos] + before + f"{key} = {value}\n" + t[pos:]

    def append_table(self, selector: tuple, pairs) -> str:
        t = self.text
        if selector[0] == "role":
            header = f'[[role]]\nname = {json.dumps(selector[1])}\n'
        elif selector == ("pipeline",):
            raise _NoEdit("no [pipeline] table in the text")
        else:
            header = f"[{selector[0]}.{selector[1]}]\n"
        body = "".join(f"{k} = {v}\n" for k, v in pairs)
        sep = "" if not t or t.endswith("\n\n") else ("\n" if t.endswith("\n") else "\n\n")
        return t + sep + header + body

    def replace_string(self, stmt: _Stmt, index: int, new: str) -> str:
        start, end = stmt.strings[index]
        old = self.text[start:end]
        literal = f"'{new}'" if old.startswith("'") and "'" not in new else json.dumps(new)
        return self.text[:start] + literal + self.text[end:]


def _toml_value(text: str):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return None


def _render_ops(ops) -> str:
    items = [json.dumps(op.text or op.name) for op in ops]
    one_line = "[" + ", ".join(items) + "]"
    if len(one_line) <= 80:
        return one_line
    return "[\n" + "".join(f"    {item},\n" for item in items) + "]"


def _render_phase(spec: Spec, role) -> str:
    if not spec.rings:
        return str(role.initial_phase)
    entries = [f"{MAIN_RING} = {role.initial_phase}"] + [f"{g} = {p}" for g, p in role.ring_phases]
    return "{ " + ", ".join(entries) + " }"


def _apply_text(text: str, base: Spec, candidate: Spec | None, edits) -> str:
    """The spec file's text with the edits written in (keys replaced or inserted, [[role]]
    tables added for template roles the file does not mention)."""
    for e in edits:
        doc = _Toml(text)
        kind = e.target[0]
        if kind == "ring":
            _, ring, key = e.target
            selector = ("pipeline",) if ring == MAIN_RING else ("ring", ring)
            text = doc.set_key(selector, key, str(e.new))
        elif kind == "phase":
            _, name, _ = e.target
            text = doc.set_key(("role", name), "initial_phase",
                               _render_phase(candidate, candidate.role(name)))
        elif kind == "role":
            _, name, key = e.target
            text = doc.set_key(("role", name), key, str(e.new))
        elif kind == "op":
            _, name, section, i, new_op = e.target
            tab = doc.table(("role", name))
            stmt = tab.stmt(section) if tab is not None else None
            if stmt is not None and len(stmt.strings) == len(getattr(base.role(name), section)):
                text = doc.replace_string(stmt, i, new_op.text)
            else:
                ops = getattr(candidate.role(name), section) if candidate is not None else None
                if ops is None:
                    raise _NoEdit("op edit without a candidate spec")
                text = doc.set_key(("role", name), section, _render_ops(ops))
        elif kind == "barrier":
            text = doc.set_key(("barrier", e.target[1]), "count", str(e.new))
        elif kind == "template":
            text = doc.set_key(("pipeline",), e.target[1], str(e.new))
        else:
            raise AssertionError(f"unknown edit {e.target}")
    return text
