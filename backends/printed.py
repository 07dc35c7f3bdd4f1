"""The backends printed as text: their own functions, re-bound to build Promela, Murphi or C.

`checker.smt` re-binds the six primitives a backend is written in (backends/base.py) to Z3
terms; this module re-binds them to expression trees, so the Promela and Murphi exports and the
GPU generator print backends/'s rules instead of carrying copies of them:

    nv = printed_backend(nvidia)
    ok = nv.ready(sym("(pn)", "promela"), sym("(ph)", "promela"))
    str(ok)                                   # (((pn) & 1) != ((ph) & 1))

A backend function is called with `Expr` atoms (`sym(text, lang)`: a variable, a field, a macro
parameter) and plain ints; its body runs as written, and each operator (+ - * & == != < <= > >=,
unary -) and each primitive builds a node. Operations on plain values are done in Python (so a
`tx` of 0 folds away), and `select` on a known condition picks its branch. Every compound node
prints inside its own parentheses, atoms and literals as they are, so no precedence rule of the
target language can regroup it. A body that branches on a symbolic value (`if`, `and`, `or`,
`not` instead of the primitives) fails loudly, as it does under Z3.

The languages differ in words only (`&&`/`&`, `==`/`=`, true/1), and in `select`: Promela's
`(c -> a : b)` and C's `(c ? a : b)` are expressions, Murphi has none (Rumur's `?:` is its own). For Murphi, and for any
condition, `lift` moves every select to the top (f(select(c, a, b)) = select(c, f(a), f(b)))
and folds constant branches, so `statements` prints an assignment or a return as an if-chain
and `condition` prints a select-free boolean. `evaluate` runs a tree in Python (tests compare it,
and each language's text compiled by its own tool, with the backend function).
"""
from __future__ import annotations

import operator
import types

from pipeproof.backends import base

LANGUAGES = ("promela", "murphi", "cuda")


class PrintError(Exception):
    """A backend function or value has no text in the language asked for."""


def _prim(name):
    fn = getattr(base, name)
    return getattr(fn, "py_func", fn)


# The Python meaning of every node: operators as Python's, primitives as backends.base's.
_PY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "&": operator.and_,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge, "neg": operator.neg,
    "select": _prim("select"), "both": _prim("both"), "either": _prim("either"),
    "negate": _prim("negate"), "parity": _prim("parity"), "wrap32": _prim("wrap32"),
}
BINARY = ("+", "-", "*", "&", "==", "!=", "<", "<=", ">", ">=")


class Expr:
    """A node: `op` is "name" (args = (text,)), an operator of BINARY, "neg", or a primitive."""

    __slots__ = ("op", "args", "lang")
    __hash__ = None  # == builds a node

    def __init__(self, op: str, args: tuple, lang: str):
        self.op, self.args, self.lang = op, args, lang

    def __str__(self) -> str:
        return render(self, self.lang)

    def __repr__(self) -> str:
        return f"Expr({self.lang}: {self})"

    def __bool__(self):
        raise PrintError("a backend function branched on a symbolic value (if/and/or/not); "
                         "backend functions branch only through backends.base's primitives")

    def _bin(self, op, other, swap=False):
        if not isinstance(other, (Expr, int)):
            return NotImplemented
        return make(op, (other, self) if swap else (self, other))

    __add__ = lambda s, o: s._bin("+", o)
    __radd__ = lambda s, o: s._bin("+", o, True)
    __sub__ = lambda s, o: s._bin("-", o)
    __rsub__ = lambda s, o: s._bin("-", o, True)
    __mul__ = lambda s, o: s._bin("*", o)
    __rmul__ = lambda s, o: s._bin("*", o, True)
    __and__ = lambda s, o: s._bin("&", o)
    __rand__ = lambda s, o: s._bin("&", o, True)
    __eq__ = lambda s, o: s._bin("==", o)
    __ne__ = lambda s, o: s._bin("!=", o)
    __lt__ = lambda s, o: s._bin("<", o)
    __le__ = lambda s, o: s._bin("<=", o)
    __gt__ = lambda s, o: s._bin(">", o)
    __ge__ = lambda s, o: s._bin(">=", o)

    def __neg__(self):
        return make("neg", (self,))


def sym(text: str, lang: str) -> Expr:
    """An atom printed as `text` (wrap anything that is not one token in parentheses)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r} (expected one of: {', '.join(LANGUAGES)})")
    return Expr("name", (text,), lang)


def _lang_of(args) -> str:
    langs = {a.lang for a in args if isinstance(a, Expr)}
    if len(langs) != 1:
        raise PrintError(f"one expression mixes languages {sorted(langs)}")
    return langs.pop()


def make(op: str, args: tuple):
    """A node, or its value when every argument is a plain one (and the known folds below)."""
    if not any(isinstance(a, Expr) for a in args):
        return _PY[op](*args)
    if op == "select":
        c, a, b = args
        if not isinstance(c, Expr):
            return a if c else b
        if not isinstance(a, Expr) and not isinstance(b, Expr) and type(a) is type(b) and a == b:
            return a
        if (isinstance(a, bool) and is_bool(b)) or (isinstance(b, bool) and is_bool(a)):
            # a select of booleans: and / or
            if a is True:
                return make("either", (c, b))
            if a is False:
                return make("both", (make("negate", (c,)), b))
            if b is True:
                return make("either", (make("negate", (c,)), a))
            return make("both", (c, a))
    if op in ("both", "either"):
        a, b = args
        keep_if = op == "both"  # both(True, x) = x, both(False, x) = False; either the dual
        for known, other in ((a, b), (b, a)):
            if not isinstance(known, Expr) and (known is a or is_bool(other)):
                return other if bool(known) == keep_if else bool(known)
        if same(a, b) or (isinstance(b, Expr) and b.op == op and same(a, b.args[0])):
            return b  # both(a, a) = a, both(a, both(a, c)) = both(a, c); either alike
    return Expr(op, tuple(args), _lang_of(args))


BOOLEAN = ("==", "!=", "<", "<=", ">", ">=", "both", "either", "negate")


def is_bool(v) -> bool:
    """Whether a value is a boolean (so and/or may stand for a select of it)."""
    if isinstance(v, bool):
        return True
    if not isinstance(v, Expr):
        return False
    if v.op == "select":
        return is_bool(v.args[1]) and is_bool(v.args[2])
    return v.op in BOOLEAN


def same(a, b) -> bool:
    """The same tree (or the same plain value)."""
    if isinstance(a, Expr) != isinstance(b, Expr):
        return False
    if not isinstance(a, Expr):
        return type(a) is type(b) and a == b
    return (a.op == b.op and len(a.args) == len(b.args)
            and all(x == y if a.op == "name" else same(x, y) for x, y in zip(a.args, b.args)))


def _primitive(op):
    return lambda *args: make(op, args)


PRIMITIVES = {name: _primitive(name) for name in base.PRIMITIVES}
assert set(PRIMITIVES) == set(base.PRIMITIVES)


def printed_backend(module, stubs: dict | None = None) -> types.SimpleNamespace:
    """The functions of a backend module over `Expr` trees (as checker.smt.symbolic_backend
    does over Z3 terms). Calls between the module's own functions resolve to the rebuilt
    versions, or to `stubs[name]` where given (to print a call to a helper instead)."""
    return base.rebound(module, PRIMITIVES, stubs)


# ------------------------------------------------------------------ the languages

_WORDS = {  # == != and or not, true false, select, parity, wrap32
    "promela": ("==", "!=", "&&", "||", "!", "1", "0"),
    "murphi": ("=", "!=", "&", "|", "!", "true", "false"),
    "cuda": ("==", "!=", "&&", "||", "!", "1", "0"),
}


def literal(v, lang: str) -> str:
    eq, ne, and_, or_, not_, true, false = _WORDS[lang]
    if isinstance(v, bool):
        return true if v else false
    if not isinstance(v, int):
        raise PrintError(f"{v!r} is not an integer or a boolean")
    if lang == "promela" and not -(1 << 31) <= v < (1 << 31):
        raise PrintError(f"{v} does not fit SPIN's 32-bit int")
    text = str(v) + ("ll" if lang == "cuda" and not -(1 << 31) <= v < (1 << 31) else "")
    return f"({text})" if v < 0 else text


def render(e, lang: str) -> str:
    """The text of a value in `lang` (a select only where the language has one)."""
    if not isinstance(e, Expr):
        return literal(e, lang)
    eq, ne, and_, or_, not_, _, _ = _WORDS[lang]
    op = e.op
    if op == "name":
        return e.args[0]
    a = [render(x, lang) for x in e.args]
    if op in BINARY:
        return f"({a[0]} {dict({'==': eq, '!=': ne}).get(op, op)} {a[1]})"
    if op == "neg":
        return f"(-{a[0]})"
    if op == "both":
        return f"({a[0]} {and_} {a[1]})"
    if op == "either":
        return f"({a[0]} {or_} {a[1]})"
    if op == "negate":
        return f"({not_}{a[0]})"
    if op == "parity":
        # Murphi's % where its bitwise & is Rumur's own. Its % truncates as C's does (-1 % 2 is
        # -1), and nvidia.intended_after takes the parity of a difference that may be negative,
        # so the remainder is brought into 0..1 as Python's & 1 has it.
        return f"((({a[0]} % 2) + 2) % 2)" if lang == "murphi" else f"({a[0]} & 1)"
    if op == "wrap32":
        if lang != "cuda":
            raise PrintError(f"wrap32 has no {lang} form (the amd backend is not exported there)")
        return f"((u64)(u32){a[0]})"
    if op == "select":
        if lang == "promela":
            return f"({a[0]} -> {a[1]} : {a[2]})"
        if lang == "cuda":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        raise PrintError("Murphi has no conditional expression: print it with statements()")
    raise AssertionError(op)  # pragma: no cover


def lift(e):
    """The same value with every select at the top: a tree of selects whose conditions and
    leaves have none (constant branches folded by `make`)."""
    if not isinstance(e, Expr) or e.op == "name":
        return e
    args = [lift(x) for x in e.args]
    if e.op == "select":
        c, a, b = args
        if isinstance(c, Expr) and c.op == "select":  # select(select(c0, x, y), a, b)
            c0, x, y = c.args
            return lift(make("select", (c0, make("select", (x, a, b)), make("select", (y, a, b)))))
        out = make("select", (c, a, b))
        # a boolean select folds to and/or, which may now hold a select of a branch
        return out if not isinstance(out, Expr) or out.op == "select" else lift(out)
    for i, x in enumerate(args):
        if isinstance(x, Expr) and x.op == "select":
            c, a, b = x.args
            branch = lambda v: make(e.op, tuple(args[:i]) + (v,) + tuple(args[i + 1:]))
            return lift(make("select", (c, branch(a), branch(b))))
    return make(e.op, tuple(args))


def condition(e, lang: str) -> str:
    """A boolean as a select-free condition (a remaining select of booleans as and/or)."""
    e = lift(e)
    eq, ne, and_, or_, not_, _, _ = _WORDS[lang]
    if isinstance(e, Expr) and e.op == "select":
        c, a, b = (condition(x, lang) for x in e.args)
        return f"(({c} {and_} {a}) {or_} (({not_}{c}) {and_} {b}))"
    return render(e, lang)


def statements(put: str, e, lang: str) -> list[str]:
    """Lines that do `put` (e.g. "x := {};" or "return {};") with the value of `e`: in Murphi
    an if-chain over its selects, elsewhere one line with the expression."""
    if lang != "murphi":
        return [put.format(render(e, lang))]
    e = lift(e)
    if not (isinstance(e, Expr) and e.op == "select"):
        return [put.format(render(e, lang))]
    lines = []
    word = "if"
    while isinstance(e, Expr) and e.op == "select":
        c, a, e = e.args
        lines.append(f"{word} {condition(c, lang)} then")
        lines += ["  " + line for line in statements(put, a, lang)]
        word = "elsif"
    lines.append("else")
    lines += ["  " + line for line in statements(put, e, lang)]
    lines.append("endif;")
    return lines


def evaluate(e, env: dict):
    """The value of a tree with its atoms' values from `env` (atom text -> value)."""
    if not isinstance(e, Expr):
        return e
    if e.op == "name":
        return env[e.args[0]]
    return _PY[e.op](*(evaluate(x, env) for x in e.args))
