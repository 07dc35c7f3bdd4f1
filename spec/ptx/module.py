"""Read a PTX module's text into functions of instructions (spec/ptx/interp.py runs them).

What is read: the module directives (`.target`, `.file`), state-space declarations
(`.shared`, `.global`, `.const`, with `.extern` dynamic shared memory), `.entry` and `.func`
definitions with their parameters and performance directives (`.maxntid`, `.reqntid`,
`.reqnctapercluster`, `.explicitcluster`), and their bodies: instructions with `@p` / `@!p`
guards, labels, brace scopes (inline asm's `{ .reg .pred p; ... }`, whose labels and
registers are local: they are renamed apart), and `.loc` lines with their `function_name` /
`inlined_at` chains. `.section` blocks (DWARF) are skipped except `$L__info_string` byte
arrays, which name the inlined functions. Nothing in the text is executed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeproof.spec.mojo.llvm import IRError


@dataclass(eq=False)
class Inst:
    """One instruction: `opcode` is the full dotted name (`mbarrier.try_wait.parity.shared::cta.b64`),
    `words` its dot-separated parts, `args` its operands (text), `guard` (`p`, negated) or None.
    `index` is its 0-based line in the module text (messages print index + 1); `loc` its debug
    location (a Loc), `dbg` the same (the name the shared extractor reads)."""
    opcode: str
    args: list
    guard: tuple | None
    index: int
    text: str
    loc: object = None
    parsed: object = None
    raw_loc: object = None    # the last .loc before it, also one inside an asm body (SASS's line)

    @property
    def dbg(self):
        return self.loc

    @property
    def words(self):
        return self.opcode.split(".")


@dataclass(frozen=True)
class Loc:
    """A `.loc`: file index, line, column, the inlined function's name and where it was inlined
    (another Loc), so a chain reads innermost first."""
    file: int
    line: int
    col: int
    function: str | None = None
    inlined_at: object = None


@dataclass(eq=False)
class Function:
    name: str
    entry: bool
    params: list               # [(name, type, size in bytes)]
    rets: list
    directives: dict           # maxntid, reqntid, reqnctapercluster: tuples; explicitcluster: True
    insts: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)   # label -> index into insts
    line: int = 0              # the .entry line (0-based)
    shared: dict = field(default_factory=dict)   # function-scope .shared arrays


@dataclass
class PtxModule:
    path: str
    target: str
    files: dict                # index -> path
    shared: dict               # name -> (size or None for extern, align)
    functions: dict            # name -> Function
    strings: dict              # $L__info_stringN -> text
    lines: list                # line numbers per Inst.index (identity: kept for the shared extractor)
    globals: dict = field(default_factory=dict)   # what the shared extractor reads of LLVM globals: none

    def kernels(self):
        return [f for f in self.functions.values() if f.entry and f.insts]


COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)\s+(\d+)(?:\s*,\s*function_name\s+(\$?[\w$.]+)\s*,\s*"
                 r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+))?")
FILE = re.compile(r'\.file\s+(\d+)\s+"([^"]*)"')
GUARD = re.compile(r"@(!?)(%?[\w$.]+)\s+")


def split_args(text: str) -> list:
    """Operands split at top-level commas (braces and brackets nest)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def decode_strings(text: str) -> dict:
    """`$L__info_stringN: .b8 95,90,...,0` byte arrays (DWARF's .debug_str) as text."""
    out = {}
    for m in re.finditer(r"(\$L__info_string\d+):\s*\n?\s*((?:\.b8\s+[\d,\s]+)+)", text):
        nums = [int(x) for x in re.findall(r"\d+", m.group(2).replace(".b8", " "))]
        out[m.group(1)] = bytes(n for n in nums if n).decode("latin-1")
    return out


def demangle(name: str) -> str:
    """A readable `a::b::c` from an Itanium-mangled name (the nested-name's identifiers, the
    template arguments skipped); the name itself when it is not mangled."""
    if not name.startswith("_Z"):
        return name
    s, i, parts = name, 2, []
    if i < len(s) and s[i] == "N":
        i += 1
        while i < len(s) and s[i] in "rVKRO":
            i += 1
    depth = 0
    while i < len(s):
        c = s[i]
        if c.isdigit():
            j = i
            while j < len(s) and s[j].isdigit():
                j += 1
            n = int(s[i:j])
            if depth == 0:
                parts.append(s[j:j + n])
            i = j + n
            if depth == 0 and not name.startswith("_ZN"):
                break
        elif c == "L" and depth > 0:   # a literal, L<type><value>E: its digits are no length
            i = s.index("E", i) + 1 if "E" in s[i:] else len(s)
        elif c in "IN":
            depth += 1
            i += 1
        elif c == "E":
            if depth == 0:
                break
            depth -= 1
            i += 1
        elif c == "S" and depth == 0 and i + 1 < len(s) and s[i + 1] in "t_":
            i += 2
        elif depth == 0 and c in "CD" and i + 1 < len(s) and s[i + 1].isdigit():
            parts.append(("~" if c == "D" else "") + (parts[-1] if parts else "ctor"))
            i += 2
        else:
            i += 1
    return "::".join(p for p in parts if p) or name


def parse_module(text: str, path: str) -> PtxModule:
    """The module's functions. A line the reader cannot place raises IRError naming it."""
    target = (re.search(r"^\s*\.target\s+([\w,\s]+?)\s*$", text, re.M) or [None, "?"])[1]
    files = {int(n): p for n, p in FILE.findall(text)}
    strings = decode_strings(text) if "$L__info_string" in text else {}
    shared, functions = {}, {}
    lines = text.split("\n")
    n = len(lines)
    i = 0
    while i < n:
        line = COMMENT.sub("", lines[i]).strip()
        if not line:
            i += 1
            continue
        if line.startswith(".section"):
            i = skip_block(lines, i)
            continue
        decl = re.match(r"(?:\.extern\s+|\.visible\s+|\.weak\s+)*\.shared\s+(?:\.align\s+(\d+)\s+)?"
                        r"\.\w+\s+([\w$]+)(?:\[(\d*)\])?", line)
        if decl:
            shared[decl.group(2)] = (int(decl.group(3)) if decl.group(3) else None,
                                     int(decl.group(1) or 1))
            i += 1
            continue
        head = re.match(r"(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\b", line)
        if head:
            i = parse_function(lines, i, head.group(1) == "entry", functions, path)
            continue
        i += 1
    for f in functions.values():
        shared.update(f.shared)
    return PtxModule(path, target.strip(), files, shared, functions, strings, list(range(1, n + 1)))


def skip_block(lines, i) -> int:
    depth, started = 0, False
    while i < len(lines):
        s = COMMENT.sub("", lines[i])
        depth += s.count("{") - s.count("}")
        started = started or "{" in s
        i += 1
        if started and depth <= 0:
            return i
    return i


PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+(?:\.ptr\s+(?:\.\w+\s+(?:\d+\s+)?)*)?([\w$]+)(?:\[(\d+)\])?")
SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "b32": 4, "u32": 4,
         "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1}


def parse_function(lines, i, entry, functions, path) -> int:
    """One .entry/.func: its header up to `{` (or `;`: a declaration), then its body."""
    start = i
    head = []
    while i < len(lines):
        s = COMMENT.sub("", lines[i])
        if "{" in s:
            head.append(s[:s.index("{")])
            break
        head.append(s)
        if s.strip().endswith(";") and ")" in "".join(head):
            return i + 1          # a prototype: .extern .func name(...);
        i += 1
    h = " ".join(head)
    m = re.match(r"\s*(?:\.\w+\s+)*\.(?:entry|func)\s*(\([^)]*\))?\s*([\w$]+)\s*(\([^)]*\))?", h)
    if not m:
        raise IRError(f"{path}:{start + 1}: a function header pipeproof cannot read")
    name = m.group(2)
    rets = [(p.group(2), p.group(1), int(p.group(3) or 1) * SIZES.get(p.group(1), 1))
            for p in PARAM.finditer(m.group(1) or "")]
    params = [(p.group(2), p.group(1), int(p.group(3) or 1) * SIZES.get(p.group(1), 1))
              for p in PARAM.finditer(m.group(3) or "")]
    rest = h[m.end():]
    directives = {}
    for key in ("maxntid", "reqntid", "reqnctapercluster", "maxclusterrank", "minnctapersm",
                "maxnreg"):
        d = re.search(rf"\.{key}\s+([\d\s,]+)", rest)
        if d:
            directives[key] = tuple(int(x) for x in d.group(1).replace(",", " ").split())
    if ".explicitcluster" in rest:
        directives["explicitcluster"] = True
    f = Function(name, entry, params, rets, directives, line=start)
    functions[name] = f
    return parse_body(lines, i, f, path)


def parse_body(lines, i, f: Function, path) -> int:
    """The body from the line holding `{`; returns the index after its closing brace."""
    scopes = [0]                # scope ids, innermost last
    next_scope = 1
    renames = [{}]              # per scope: local label/register -> unique name
    loc = None
    chain = {}                  # (file, line, col) -> the Loc last stated there (inlined_at chains)
    first = lines[i][lines[i].index("{") + 1:]
    pending = [(i, first)]
    i += 1
    depth = 1
    local_names = [set()]
    in_asm = False
    last_loc = None
    while depth > 0:
        if not pending:
            if i >= len(lines):
                raise IRError(f"{path}:{f.line + 1}: the body of {f.name} does not end")
            pending.append((i, lines[i]))
            i += 1
        idx, raw = pending.pop(0)
        if "// begin inline asm" in raw:
            in_asm = True      # LLVM's .loc lines inside an asm body count its text lines from
        elif "// end inline asm" in raw:   # the statement's line: not source lines; the op's
            in_asm = False     # line is the statement's (the .loc before the block)
        s = COMMENT.sub("", raw).strip()
        if not s:
            continue
        if s.startswith(".loc"):
            m = LOC.match(s)
            if m:
                at = None
                if m.group(4):
                    key = (int(m.group(5)), int(m.group(6)), int(m.group(7)))
                    at = chain.get(key) or Loc(*key)
                here = Loc(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4), at)
                chain[(here.file, here.line, here.col)] = here
                last_loc = here
                if not in_asm:
                    loc = here
            continue
        if s.startswith("{"):
            depth += 1
            scopes.append(next_scope)
            next_scope += 1
            renames.append({})
            local_names.append(set())
            if s[1:].strip():
                pending.insert(0, (idx, s[1:]))
            continue
        if s.startswith("}"):
            depth -= 1
            scopes.pop()
            renames.pop()
            local_names.pop()
            if depth > 0 and s[1:].strip():
                pending.insert(0, (idx, s[1:]))
            continue
        # several statements on one line; a label before a statement
        m = re.match(r"([\w$]+):\s*(.*)$", s)
        if m and not s.startswith("."):
            lab = m.group(1)
            if len(scopes) > 1:
                renames[-1][lab] = f"{lab}__s{scopes[-1]}"
                local_names[-1].add(lab)
            f.labels[renames[-1].get(lab, lab)] = len(f.insts)
            if m.group(2).strip():
                pending.insert(0, (idx, m.group(2)))
            continue
        if ";" not in s:
            # a statement continued on the next line
            if i < len(lines):
                pending.insert(0, (idx, s + " " + lines[i]))
                i += 1
                continue
            raise IRError(f"{path}:{idx + 1}: a statement without `;`")
        stmt, tail = s.split(";", 1)
        if tail.strip():
            pending.insert(0, (idx, tail))
        stmt = stmt.strip()
        if stmt.split(None, 1)[0] in (".reg", ".local", ".shared", ".param", ".pragma"):
            declare(stmt, scopes, renames, f)
            continue
        if stmt.startswith("."):
            continue
        guard = None
        g = GUARD.match(stmt)
        if g:
            guard = (rename(g.group(2), renames), g.group(1) == "!")
            stmt = stmt[g.end():]
        parts = stmt.split(None, 1)
        opcode = parts[0]
        args = [rename_operand(a, renames) for a in split_args(parts[1])] if len(parts) > 1 else []
        inst = Inst(opcode, args, guard, idx, stmt, loc, None, last_loc)
        if opcode.startswith("bra") or opcode.startswith("brx"):
            inst.parsed = tuple(scopes)   # resolved below: a label may come after its branch
        f.insts.append(inst)
    for inst in f.insts:
        if isinstance(inst.parsed, tuple) and inst.args:
            lab = inst.args[-1]
            for sid in reversed(inst.parsed[1:]):
                if f"{lab}__s{sid}" in f.labels:
                    lab = f"{lab}__s{sid}"
                    break
            if lab not in f.labels:
                raise IRError(f"{path}:{inst.index + 1}: a branch to {lab!r}, which is not a label "
                              f"of {f.name}")
            inst.args[-1] = lab
            inst.parsed = None
    return i


def declare(stmt, scopes, renames, f) -> None:
    """A declaration in a body: a scope's registers and parameters are its own (renamed apart);
    a function-scope shared array is the CTA's, like a module's."""
    if stmt.startswith(".reg") and len(scopes) > 1:
        for name in re.findall(r"(%?[\w$]+)\s*(?:,|$)", stmt.split(None, 2)[-1]):
            renames[-1][name] = f"{name}__s{scopes[-1]}"
    if stmt.startswith(".param") and len(scopes) > 1:
        p = PARAM.match(stmt)
        if p:
            renames[-1][p.group(2)] = f"{p.group(2)}__s{scopes[-1]}"
    if stmt.startswith(".shared"):
        d = re.search(r"(?:\.align\s+(\d+)\s+)?\.\w+\s+([\w$]+)(?:\[(\d*)\])?\s*$", stmt)
        if d:
            f.shared[d.group(2)] = (int(d.group(3)) if d.group(3) else None, int(d.group(1) or 1))


NAME = re.compile(r"%?[A-Za-z_$][\w$]*")


def rename(name, renames):
    for scope in reversed(renames):
        if name in scope:
            return scope[name]
    return name


def rename_operand(text, renames):
    if len(renames) == 1:
        return text
    return NAME.sub(lambda m: rename(m.group(0), renames), text)
