"""The Z3 terms the BMC encoding is built from: And/Or straight through Z3's C API (`_and`,
`_or`), writes and violations grouped by value (`_group`, `_ungroup`), and what one step is
made of: a `Frame` (field name -> term), a `Choice` (which action, order-encoded) and a
`Step`."""
from __future__ import annotations

from dataclasses import dataclass, field

import z3


@dataclass
class Frame:
    v: dict             # field name -> Z3 term at this step
    memo: dict = field(default_factory=dict)  # terms derived from v, built once

    def once(self, key, build):
        if key not in self.memo:
            self.memo[key] = build()
        return self.memo[key]


class Choice:
    """Which action a step takes, 0 <= act < n, in the order encoding: `ge[j]` is act >= j."""

    def __init__(self, name: str, n: int):
        self.n = n
        self.ge = [z3.BoolVal(True)] + [z3.Bool(f"{name}>={j}") for j in range(1, n)] + [z3.BoolVal(False)]

    def constraints(self):
        return [z3.Implies(self.ge[j + 1], self.ge[j]) for j in range(1, self.n - 1)]

    def is_(self, j: int):
        return _and([self.ge[j], z3.Not(self.ge[j + 1])])

    def above(self, other: "Choice"):
        """self > other."""
        return _or([_and([self.ge[j], z3.Not(other.ge[j])]) for j in range(1, self.n)])

    def value(self, m) -> int:
        return sum(1 for j in range(1, self.n) if z3.is_true(m.eval(self.ge[j], model_completion=True)))


@dataclass
class Step:
    act: Choice
    nxt: Frame
    kinds: dict                                  # violation bit -> Bool
    trap: z3.BoolRef
    constraints: list = field(default_factory=list)
    foot: dict = field(default_factory=dict)     # resource -> mode -> [cond] (canonical_order)
    _touches: dict = None

    def touches(self) -> dict:
        """resource -> mode -> the condition that this step touches it so."""
        if self._touches is None:
            self._touches = {res: {m: _or(conds) for m, conds in modes.items()}
                             for res, modes in self.foot.items()}
        return self._touches


_TRUE_TERM, _FALSE_TERM = z3.BoolVal(True), z3.BoolVal(False)  # kept alive: their addresses
_TRUE, _FALSE = _TRUE_TERM.ast.value, _FALSE_TERM.ast.value


def _nary(xs, unit: bool, make):
    """And (unit True) or Or (unit False) of Bool terms or Python bools, built straight through
    the C API: z3py's And/Or re-check every argument's sort, which dominated encoding time."""
    out = []
    skip, stop = (_TRUE, _FALSE) if unit else (_FALSE, _TRUE)
    for x in xs:
        if isinstance(x, bool):
            x = z3.BoolVal(x)
        p = x.ast.value  # Z3 shares terms: the constants have one address each
        if p == skip:
            continue
        if p == stop:
            return x
        out.append(x)
    if not out:
        return z3.BoolVal(unit)
    if len(out) == 1:
        return out[0]
    ctx = out[0].ctx
    args, n = z3.z3._to_ast_array(out)
    return z3.BoolRef(make(ctx.ref(), n, args), ctx)


def _ite_of_constants(t, leaf):
    """The if-then-else of constants `t` (an update's outcome as the backends write it) with
    each constant c replaced by the Bool leaf(c), built through the C API (z3py's If re-checks
    its arguments' sorts: an update's outcome bits cost more than the update). Each new term
    is wrapped at once (a reference taken) before the next is made."""
    ref, ctx = t.ctx.ref(), t.ctx
    consts = (z3.BoolVal(True, ctx), z3.BoolVal(False, ctx))
    core = z3.z3core

    def walk(a):
        if core.Z3_is_numeral_ast(ref, a):
            return consts[0] if leaf(int(core.Z3_get_numeral_string(ref, a))) else consts[1]
        app = core.Z3_to_app(ref, a)
        if core.Z3_get_decl_kind(ref, core.Z3_get_app_decl(ref, app)) != z3.Z3_OP_ITE:
            raise ValueError(f"internal: not an if-then-else of constants: {t}")
        then, other = walk(core.Z3_get_app_arg(ref, app, 1)), walk(core.Z3_get_app_arg(ref, app, 2))
        return z3.BoolRef(core.Z3_mk_ite(ref, core.Z3_get_app_arg(ref, app, 0), then.as_ast(),
                                         other.as_ast()), ctx)
    return walk(t.as_ast())


def _or(xs):
    return _nary(xs, False, z3.z3core.Z3_mk_or)


def _and(xs):
    return _nary(xs, True, z3.z3core.Z3_mk_and)


def _group(groups: dict, cond, value, drop_false: bool = True) -> None:
    """Collect `cond` under `value` (equal Z3 terms are one group); a condition for a False
    violation or trap value is dropped."""
    if drop_false and z3.is_false(value):
        return
    key = value.get_id()
    if key not in groups:
        groups[key] = (value, [])
    groups[key][1].append(cond)


def _ungroup(groups: dict):
    """Or over the groups of (Or of their conditions) and their value, for Bool values."""
    return _or([_and([_or(conds), value]) for value, conds in groups.values()])


def _b(x):
    return z3.BoolVal(x) if isinstance(x, bool) else x


def _name(name: tuple) -> str:
    return "_".join(str(x) for x in name)
