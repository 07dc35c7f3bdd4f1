"""TTGIR text (Triton's GPU dialect, `compiled.asm["ttgir"]`) as a tree of ops, for the front end.

Triton's Python bindings parse and verify the IR (`ir.parse_mlir_module`, used by
spec/ttgir/source.py when Triton is installed) but expose no way to walk a region's blocks or
read an op's location, so the structure is read here from MLIR's printed form: one op per
line, `[%results =] dialect.op operands... [: types] loc(#locN)`, a line ending in `{` opens
the op's next region (`} else {`, `default {`, `partitionN(...) num_warps(W) {` open the
following ones) and a line starting with `}` closes it. Only the operand *names* and the
literal integers of an op are read (`Op.operands`, `Op.ints`); what they mean is
spec/ttgir/run.py's business, per op. Locations resolve through the `#locN = loc(...)` table at
the end (names, call sites and fused locations unwrapped) to `file:line`.
Nothing in the file is executed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeproof.spec.schema import SpecError

_LOC_REF = re.compile(r"\s+loc\((#loc\d*|unknown|\"[^\"]*\"(?::\d+:\d+)?(?:\(#loc\d*\))?)\)\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LINE = re.compile(r'^"([^"]*)":(\d+):(\d+)')
_RESULTS = re.compile(r"^((?:%[\w.$-]+(?::\d+)?)(?:\s*,\s*%[\w.$-]+(?::\d+)?)*)\s*=\s*")
_OPNAME = re.compile(r'^"?([a-z_]+\.[a-z_0-9.]+)"?')
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
_INT = re.compile(r"(?<![\w%#.<x-])(-?\d+)(?![\w.x>])")


@dataclass
class Op:
    name: str
    results: list            # value names, "%x" or "%x#k" for a multi-result op's k-th
    operands: list           # value names in the order printed (before the first " : ")
    ints: list               # integer literals in the operand text, in order
    text: str                # the whole line (without its loc)
    line: int                # line in the .ttgir file (1-based)
    loc: str | None          # "#locN" or None
    regions: list = field(default_factory=list)   # [Region]
    attrs: dict = field(default_factory=dict)     # `{k = v}` integer/bool attributes


@dataclass
class Region:
    header: str              # the text that opened it ("", "else", "default", "partition0(...)")
    args: list               # block arguments: partitionN(%a: type, ...) names
    ops: list = field(default_factory=list)


@dataclass
class Module:
    path: str
    funcs: dict              # name -> Op (tt.func), regions[0] its body; .args its arguments
    locs: dict               # "#locN" -> "file:line" (or None)
    attrs: dict              # module attributes: num-warps, target, ...

    def where(self, op: Op) -> str:
        """The kernel source line an op came from, else its line in the IR file."""
        src = self.locs.get(op.loc) if op.loc else None
        return src or f"{self.path}:{op.line}"


def _split_loc(line: str):
    m = _LOC_REF.search(line)
    if not m:
        return line.rstrip(), None
    ref = m.group(1)
    return line[:m.start()].rstrip(), (ref if ref.startswith("#loc") else None)


def _operand_text(body: str) -> str:
    """The part of an op's text before its type signature (` : ` outside brackets)."""
    depth = 0
    for i, ch in enumerate(body):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == ":" and depth == 0 and body[i - 1:i] == " " and body[i + 1:i + 2] == " ":
            return body[:i]
    return body


def _attrs(text: str) -> dict:
    out = {}
    for m in re.finditer(r"(\w+)\s*=\s*(-?\d+|true|false)(?:\s*:\s*i\d+)?", text):
        v = m.group(2)
        out[m.group(1)] = {"true": 1, "false": 0}.get(v, None) if v in ("true", "false") else int(v)
    for m in re.finditer(r"\{([^{}=]*)\}", text):  # unit attributes: {is_async}
        for word in m.group(1).split(","):
            if re.fullmatch(r"\s*\w+\s*", word):
                out[word.strip()] = 1
    return out


def _results(text: str):
    m = _RESULTS.match(text)
    if not m:
        return [], text
    names = []
    for part in m.group(1).split(","):
        part = part.strip()
        if ":" in part:
            base, n = part.split(":")
            names += [f"{base}#{k}" for k in range(int(n))]
        else:
            names.append(part)
    return names, text[m.end():]


def parse_ttgir(text: str, path: str = "<ttgir>") -> Module:
    locs_raw, body_lines = {}, []
    for i, raw in enumerate(text.splitlines(), 1):
        m = _LOC_DEF.match(raw.strip())
        if m:
            locs_raw[m.group(1)] = m.group(2)
        else:
            body_lines.append((i, raw))
    locs = {k: _resolve(k, locs_raw, set()) for k in locs_raw}
    module_attrs, funcs = {}, {}
    stack: list[Region] = []   # open regions, innermost last
    owners: list[Op] = []      # the op each open region belongs to
    top = Region("module", [])
    for i, raw in body_lines:
        line = raw.strip()
        if not line or line.startswith(("#", "//", "^")):  # attribute aliases, comments, block labels
            continue
        if line.startswith("module"):
            module_attrs = _module_attrs(line)
            stack, owners = [top], [None]
            continue
        if not stack:
            raise SpecError(f"{path}:{i}: expected `module attributes {{...}} {{` before ops "
                            f"(is this TTGIR from compiled.asm['ttgir']?)")
        closing = line.startswith("}")
        if closing:
            stack.pop()
            owner = owners.pop()
            rest = line[1:].strip()
            rest_code, loc = _split_loc(rest)
            if owner is not None and loc and owner.loc is None:
                owner.loc = loc
            if rest_code.endswith("{") and owner is not None:  # `} else {`, `partition1(...) {`
                _push(owner, _open_region(rest_code[:-1].strip()), stack, owners)
            continue
        code, loc = _split_loc(line)
        if code == "default {" or re.match(r"^partition\d+\(.*\{$", code):
            owner = stack[-1].ops[-1] if stack[-1].ops else None
            if owner is None or owner.name != "ttg.warp_specialize":
                raise SpecError(f"{path}:{i}: a warp_specialize region outside its op")
            _push(owner, _open_region(code[:-1].strip()), stack, owners)
            continue
        results, rest = _results(code)
        m = _OPNAME.match(rest)
        if not m:
            raise SpecError(f"{path}:{i}: cannot read an op here: {code[:80]!r}")
        name = m.group(1)
        after = rest[m.end():]
        opens = code.endswith("{") and not code.endswith("{}") and name not in ("tt.reduce",)
        if name == "tt.reduce" or rest.startswith('"'):
            opens = code.endswith("({")  # a generic op with a region: its body is not ours
        operand_text = _operand_text(after)
        op = Op(name=name, results=results, operands=_VALUE.findall(operand_text),
                ints=[int(x) for x in _INT.findall(re.sub(r"\{[^{}]*\}", "", operand_text))],
                text=code, line=i, loc=loc, attrs=_attrs(after))
        stack[-1].ops.append(op)
        if name == "tt.func":
            fm = re.search(r"@([\w.$-]+)\((.*)\)", code)
            op.attrs["name"] = fm.group(1) if fm else "?"
            op.attrs["args"] = re.findall(r"(%[\w.$-]+)\s*:", fm.group(2)) if fm else []
            funcs[op.attrs["name"]] = op
        if opens:
            _push(op, Region("warp_specialize" if name == "ttg.warp_specialize" else "", []),
                  stack, owners)
    if not funcs:
        raise SpecError(f"{path}: no tt.func in the file (is it TTGIR from compiled.asm['ttgir']?)")
    return Module(path=path, funcs=funcs, locs=locs, attrs=module_attrs)


def _push(owner: Op, region: Region, stack: list, owners: list) -> None:
    """Open the owner's next region: ops go there until its closing brace."""
    owner.regions.append(region)
    stack.append(region)
    owners.append(owner)


def _open_region(header: str) -> Region:
    args = re.findall(r"(%[\w.$-]+)\s*:", header)
    name = header.split("(")[0].strip()
    region = Region(name, args)
    wm = re.search(r"num_warps\((\d+)\)", header)
    if wm:
        region.header = f"{name} num_warps={wm.group(1)}"
    return region


def _module_attrs(line: str) -> dict:
    out = {}
    for key, val in re.findall(r'"?([\w.-]+)"?\s*=\s*("[^"]*"|\w+)', line):
        out[key] = val.strip('"')
    return out


def _resolve(key: str, raw: dict, seen: set):
    """`#locN` -> "file:line" for the innermost file location it names (call sites: the callee
    side, where the op's own line is; fused: the first one that has a file)."""
    if key in seen or key not in raw:
        return None
    seen.add(key)
    text = raw[key].strip()
    m = _FILE_LINE.match(text)
    if m:
        return f"{m.group(1)}:{m.group(2)}"
    for ref in re.findall(r"#loc\d*", text):
        got = _resolve(ref, raw, seen)
        if got:
            return got
    for m in re.finditer(r'"([^"]*)":(\d+):(\d+)', text):
        return f"{m.group(1)}:{m.group(2)}"
    return None
