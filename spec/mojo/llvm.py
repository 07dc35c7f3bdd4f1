"""A small reader of LLVM IR text (what `mojo build --emit llvm` and `_compile_code[...,
emission_kind="llvm"]` print) and a concrete interpreter of its integer and pointer
arithmetic, enough to run one thread of a kernel and see its synchronisation.

Values: Python ints (masked to their width), `Ptr(base, offset, cta)` (a global, an alloca, a
kernel argument; `cta` set by `mapa` for another CTA's shared memory), lists (aggregates and
vectors), and `OPAQUE` for everything not modelled (floats, loads from global memory, the
results of unknown intrinsics). A branch, switch or select whose condition is opaque is an error
the caller turns into one line naming the instruction and its Mojo line: nothing is guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


class Opaque:
    def __repr__(self):
        return "OPAQUE"


OPAQUE = Opaque()


@dataclass(frozen=True)
class Ptr:
    base: object      # ("global", name) | ("alloca", id) | ("arg", n) | ("opaque",)
    offset: object    # int or OPAQUE
    cta: object = None  # None: own CTA; int: the CTA `mapa` names

    def add(self, n):
        if self.offset is OPAQUE or n is OPAQUE:
            return Ptr(self.base, OPAQUE, self.cta)
        return Ptr(self.base, self.offset + n, self.cta)


class IRError(Exception):
    """An instruction the interpreter cannot evaluate; `inst` is the instruction."""

    def __init__(self, what: str, inst=None):
        super().__init__(what)
        self.inst = inst


TOKEN = re.compile(r'''\s*(?:
    (?P<str>c?"(?:[^"\\]|\\.)*")
  | (?P<name>[%@](?:[-\w.$]+|"(?:[^"\\]|\\.)*"))
  | (?P<meta>![-\w.]+)
  | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|0x[0-9A-Fa-f]+)
  | (?P<word>[A-Za-z_][\w.:]*)
  | (?P<punct>\.\.\.|[{}\[\]()<>,=*!:|/#])
)''', re.X)


def tokenize(text: str) -> list:
    out, pos, n = [], 0, len(text)
    while pos < n:
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            if text[pos:pos + 2] == "/*":  # /* layout=v0 */ comments in intrinsic calls
                end = text.find("*/", pos)
                pos = end + 2
                continue
            raise IRError(f"cannot read {text[pos:pos + 30]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


# ---------------------------------------------------------------- types
INT = re.compile(r"i(\d+)$")
FLOATS = {"half": 2, "bfloat": 2, "float": 4, "double": 8, "fp128": 16, "x86_fp80": 10}


@dataclass(frozen=True)
class Type:
    kind: str            # int float ptr struct array vector void label meta opaque
    bits: int = 0        # int width; ptr address space in `space`
    elems: tuple = ()    # struct fields, or (element,) for array/vector
    count: int = 0
    space: int = 0


VOID = Type("void")
I1, I8, I32, I64 = Type("int", 1), Type("int", 8), Type("int", 32), Type("int", 64)


class Parser:
    """Recursive descent over one instruction's tokens."""

    def __init__(self, tokens, pos=0):
        self.t = tokens
        self.i = pos

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else (None, None)

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def accept(self, value):
        if self.peek()[1] == value:
            self.i += 1
            return True
        return False

    def expect(self, value):
        tok = self.next()
        if tok[1] != value:
            raise IRError(f"expected {value!r}, found {tok[1]!r}")

    ATTRS = {"noundef", "nonnull", "align", "byval", "readonly", "writeonly", "nocapture", "signext",
             "zeroext", "inreg", "returned", "noalias", "dereferenceable", "dereferenceable_or_null",
             "range", "immarg", "captures", "nofree", "writable", "initializes", "sret", "byref",
             "preallocated", "inalloca", "nest", "swiftself", "swifterror", "alignstack",
             "elementtype", "allocalign", "allocptr", "readnone", "noundef", "nofpclass"}

    def skip_attrs(self):
        """Parameter / return attributes: noundef, nonnull, align 8, byval(T), range(i32 0, 32)..."""
        while True:
            kind, val = self.peek()
            if kind == "str" and self.peek(1)[1] != ",":  # "nvvm.grid_constant"
                self.i += 1
                continue
            if kind != "word" or val not in self.ATTRS:
                return
            self.i += 1
            if self.peek()[1] == "(":
                depth = 0
                while True:
                    k, v = self.next()
                    if v == "(":
                        depth += 1
                    elif v == ")":
                        depth -= 1
                        if depth == 0:
                            break
            elif val in ("align", "dereferenceable", "dereferenceable_or_null", "alignstack"):
                self.next()

    def type(self) -> Type:
        kind, val = self.next()
        if val == "{" or (val == "<" and self.peek()[1] == "{"):
            packed = val == "<"
            if packed:
                self.next()
            fields = []
            if not self.accept("}"):
                while True:
                    fields.append(self.type())
                    if self.accept("}"):
                        break
                    self.expect(",")
            if packed:
                self.expect(">")
            t = Type("struct", elems=tuple(fields))
        elif val in ("[", "<"):
            n = int(self.next()[1])
            self.expect("x")
            el = self.type()
            self.expect("]" if val == "[" else ">")
            t = Type("array" if val == "[" else "vector", elems=(el,), count=n)
        elif val == "ptr":
            space = 0
            if self.peek()[1] == "addrspace":
                self.next()
                self.expect("(")
                space = int(self.next()[1])
                self.expect(")")
            t = Type("ptr", space=space)
        elif val == "void":
            t = VOID
        elif val in FLOATS:
            t = Type("float", FLOATS[val] * 8)
        elif val and INT.match(val):
            t = Type("int", int(INT.match(val).group(1)))
        elif val in ("label", "metadata", "token"):
            t = Type(val)
        else:
            raise IRError(f"unknown type {val!r}")
        while self.peek()[1] == "*":  # old-style typed pointers (not emitted by Mojo)
            self.next()
            t = Type("ptr")
        return t

    def value(self, t: Type):
        """A value operand of type t: ("const", v) | ("ref", name) | ("expr", op, parts)."""
        kind, val = self.next()
        if kind == "name":
            return ("ref", val)
        if kind == "num":
            if t.kind == "float" or "." in val or "e" in val.lower() and not val.startswith("0x"):
                return ("const", OPAQUE)
            if val.startswith("0x"):
                return ("const", OPAQUE if t.kind == "float" else int(val, 16))
            return ("const", int(val))
        if val in ("true", "false"):
            return ("const", int(val == "true"))
        if val in ("null",):
            return ("const", Ptr(("null",), 0))
        if val in ("undef", "poison"):
            return ("const", OPAQUE)
        if val == "zeroinitializer":
            return ("const", zero_of(t))
        if val == "<" and self.peek()[1] == "{":
            self.next()
            val = "{"
        if val == "{":
            parts = []
            if not self.accept("}"):
                while True:
                    ft = self.type()
                    parts.append(self.value(ft))
                    if self.accept("}"):
                        break
                    self.expect(",")
            if t.kind == "struct" and self.peek()[1] == ">":
                self.next()
            return ("agg", parts)
        if val in ("[", "<"):
            close = "]" if val == "[" else ">"
            parts = []
            if not self.accept(close):
                while True:
                    ft = self.type()
                    parts.append(self.value(ft))
                    if self.accept(close):
                        break
                    self.expect(",")
            return ("agg", parts)
        if kind == "str":  # c"..." constant strings
            return ("const", OPAQUE)
        if kind == "word" and self.peek()[1] == "(" or val in ("getelementptr",):
            return self.const_expr(val)
        if kind == "word" and val in ("asm",):
            raise IRError("inline asm as a value")
        if kind == "meta":
            return ("const", OPAQUE)
        raise IRError(f"cannot read the value {val!r}")

    def const_expr(self, op):
        """getelementptr inbounds nuw (i8, ptr addrspace(3) @g, i32 32), ptrtoint (ptr @g to i64)..."""
        while self.peek()[1] in ("inbounds", "nuw", "nsw", "nusw", "inrange", "exact"):
            self.next()
        self.expect("(")
        if op == "getelementptr":
            src = self.type()
            args = []
            while self.accept(","):
                self.skip_attrs()
                at = self.type()
                args.append((at, self.value(at)))
            self.expect(")")
            return ("gep", src, args)
        if op in ("ptrtoint", "inttoptr", "bitcast", "addrspacecast", "trunc", "zext", "sext"):
            at = self.type()
            v = self.value(at)
            self.expect("to")
            to = self.type()
            self.expect(")")
            return ("cast", op, at, v, to)
        raise IRError(f"the constant expression {op!r} is not modelled")


def zero_of(t: Type):
    if t.kind == "struct":
        return [zero_of(f) for f in t.elems]
    if t.kind in ("array", "vector"):
        return [zero_of(t.elems[0]) for _ in range(t.count)]
    if t.kind == "ptr":
        return Ptr(("null",), 0)
    if t.kind == "int":
        return 0
    return OPAQUE


def size_of(t: Type, ptr_bits=None) -> int:
    """Bytes of a type (natural alignment; shared/local pointers 32-bit as the NVPTX
    datalayout says, generic ones 64-bit)."""
    if t.kind == "int":
        return max(1, (t.bits + 7) // 8)
    if t.kind == "float":
        return t.bits // 8
    if t.kind == "ptr":
        return 4 if t.space in (3, 5) and ptr_bits == "nvptx" else 8
    if t.kind in ("array", "vector"):
        return size_of(t.elems[0], ptr_bits) * t.count
    if t.kind == "struct":
        off = 0
        for f in t.elems:
            a = align_of(f, ptr_bits)
            off = (off + a - 1) // a * a + size_of(f, ptr_bits)
        a = align_of(t, ptr_bits)
        return (off + a - 1) // a * a if t.elems else 0
    return 0


def align_of(t: Type, ptr_bits=None) -> int:
    if t.kind == "struct":
        return max([align_of(f, ptr_bits) for f in t.elems] or [1])
    if t.kind == "array":
        return align_of(t.elems[0], ptr_bits)
    return max(1, min(size_of(t, ptr_bits), 16))


def field_offset(t: Type, index: int, ptr_bits=None) -> int:
    off = 0
    for k, f in enumerate(t.elems):
        a = align_of(f, ptr_bits)
        off = (off + a - 1) // a * a
        if k == index:
            return off
        off += size_of(f, ptr_bits)
    raise IRError("a field index past the struct")


# ---------------------------------------------------------------- module
@dataclass
class Inst:
    text: str         # the instruction (without !dbg)
    result: str | None
    opcode: str
    dbg: str | None   # metadata id of its !dbg location
    block: str
    func: str
    index: int        # position in the module (for messages and identity)
    parsed: object = None


@dataclass
class Function:
    name: str
    params: list      # [(Type, name)]
    ret: Type
    blocks: dict = field(default_factory=dict)   # label -> [Inst]
    order: list = field(default_factory=list)    # labels in order
    attrs: str = ""
    dbg: str | None = None
    attr_group: str | None = None


@dataclass
class LLModule:
    path: str
    functions: dict
    globals: dict      # name -> (addrspace, Type)
    meta: dict         # "!N" -> text
    attributes: dict   # "#N" -> text
    triple: str
    lines: list        # instruction line numbers: Inst.index -> line in the file

    def kernels(self) -> list:
        return [f for f in self.functions.values()
                if "ptx_kernel" in f.attrs or "amdgpu_kernel" in f.attrs]


DEF = re.compile(r"^define\s+(?P<pre>.*?)(?P<name>@[-\w.$\"]+)\((?P<params>.*)\)(?P<post>[^(]*)\{\s*$")
LABEL = re.compile(r"^([-\w.$]+):")
DBG = re.compile(r",?\s*!dbg !(\d+)")
RESULT = re.compile(r"^\s*(%[-\w.$]+)\s*=\s*(.*)$")


def split_top(text: str, sep=",") -> list:
    """Split at top-level separators (outside brackets and strings)."""
    out, depth, cur, q = [], 0, [], False
    i = 0
    while i < len(text):
        ch = text[i]
        if q:
            cur.append(ch)
            if ch == "\\":
                cur.append(text[i + 1])
                i += 1
            elif ch == '"':
                q = False
        elif ch == '"':
            q = True
            cur.append(ch)
        elif ch in "([{<":
            depth += 1
            cur.append(ch)
        elif ch in ")]}>":
            depth -= 1
            cur.append(ch)
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur))
    return out


def parse_module(text: str, path: str) -> LLModule:
    functions, globs, meta, attrs = {}, {}, {}, {}
    triple = ""
    cur = None
    block = None
    lines = []
    k = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith(";"):
            continue
        if cur is None:
            if line.startswith("!"):
                m = re.match(r"^(![-\w.]+) = (?:distinct )?(.*)$", line)
                if m:
                    meta[m.group(1)] = m.group(2)
                continue
            if line.startswith("attributes #"):
                m = re.match(r"^attributes (#\d+) = \{(.*)\}", line)
                if m:
                    attrs[m.group(1)] = m.group(2)
                continue
            if line.startswith("target triple"):
                triple = line.split('"')[1]
                continue
            if line.startswith("@"):
                m = re.match(r'^(@[-\w.$"]+) = (.*)$', line)
                if m:
                    rest = m.group(2)
                    sp = re.search(r"addrspace\((\d+)\)", rest.split("global")[0] if "global" in rest else rest)
                    after = rest.split("global", 1)[1] if " global " in f" {rest} " else rest.split("constant", 1)[-1]
                    try:
                        gt = Parser(tokenize(after)).type()
                    except IRError:
                        gt = Type("opaque")
                    globs[m.group(1)] = (int(sp.group(1)) if sp else 0, gt)
                continue
            if line.startswith("define"):
                m = DEF.match(line)
                if not m:
                    raise IRError(f"{path}:{lineno}: cannot read the function header")
                params = []
                for p in split_top(m.group("params")):
                    toks = tokenize(p)
                    pp = Parser(toks)
                    t = pp.type()
                    pp.skip_attrs()
                    name = next((v for kd, v in toks[pp.i:] if kd == "name"), None)
                    params.append((t, name))
                pre = Parser(tokenize(m.group("pre").split("ptx_kernel")[-1].split("amdgpu_kernel")[-1]
                                      .replace("dso_local", "").replace("internal", "")
                                      .replace("noundef", "").strip() or "void"))
                try:
                    ret = pre.type()
                except IRError:
                    ret = VOID
                dbg = re.search(r"!dbg !(\d+)", m.group("post"))
                grp = re.search(r"#(\d+)", m.group("post"))
                cur = Function(m.group("name"), params, ret, attrs=m.group("pre"),
                               dbg=dbg.group(1) if dbg else None,
                               attr_group=f"#{grp.group(1)}" if grp else None)
                block = "entry0"
                first = True
                continue
            continue
        if line.startswith("}"):
            functions[cur.name] = cur
            cur = None
            continue
        m = LABEL.match(line)
        if m:
            block = "%" + m.group(1)
            cur.blocks[block] = []
            cur.order.append(block)
            first = False
            continue
        if first:
            # the entry block has no label: its name is the first free number
            n = len([p for p in cur.params])
            block = f"%{n}"
            cur.blocks[block] = []
            cur.order.append(block)
            first = False
        s = line.strip()
        d = DBG.search(s)
        dbg = d.group(1) if d else None
        if d:
            s = s[:d.start()] + s[d.end():]
        s = re.sub(r",\s*!(?!dbg)[-\w.]+ !\d+", "", s)  # other attached metadata
        s = re.sub(r"/\*.*?\*/", "", s)
        r = RESULT.match(s)
        result, body = (r.group(1), r.group(2)) if r else (None, s)
        opcode = body.split(None, 1)[0] if body else ""
        if opcode in ("tail", "musttail", "notail"):
            opcode = body.split(None, 2)[1]
        cur.blocks[block].append(Inst(body, result, opcode, dbg, block, cur.name, k))
        lines.append(lineno)
        first = False
        k += 1
    return LLModule(path, functions, globs, meta, attrs, triple, lines)
