"""All of pipeproof's Z3 lives in this package, and only here.

Every solver comes from `solver()` (or `fixedpoint()`), configured with a fixed random seed,
a wall-clock timeout and a resource limit, so the same spec gives the same answer every run
and a hard query ends in `unknown` instead of running forever. `unknown` is a result of its
own (`Answer.status == "unknown"`, with Z3's reason) and callers never show it as `ok`.

Signal semantics are not written again for Z3: `symbolic_backend(module)` re-binds the
primitives that backends/ are written in (backends/base.py) to Z3 terms and returns the
backend's functions over Z3 expressions; `symbolic_rules(name_or_code)` does so for the
registered backend's rules module (backends/capabilities.py), the only way the Z3 encodings
reach a backend's rules.
"""
from __future__ import annotations

import functools
import types
from dataclasses import dataclass

import z3

from pipeproof.backends import base
from pipeproof.backends.capabilities import backend

SEED = 0
TIMEOUT_MS = 20_000        # per check; callers may lower it
RLIMIT = 50_000_000        # Z3's deterministic work counter per check


def _configure(seed: int) -> None:
    z3.set_param("smt.random_seed", seed)
    z3.set_param("sat.random_seed", seed)


def solver(timeout_ms: int = TIMEOUT_MS, rlimit: int = RLIMIT, seed: int = SEED,
           logic: str | None = None) -> z3.Solver:
    """A Z3 solver with the project's seed, timeout and work limit; `logic` (e.g. "QF_BV")
    picks Z3's solver for that logic (for QF_BV an incremental SAT solver over bit-blasting)."""
    _configure(seed)
    s = z3.SolverFor(logic) if logic else z3.Solver()
    s.set("random_seed", seed)
    s.set("timeout", int(timeout_ms))
    s.set("rlimit", int(rlimit))
    return s


def fixedpoint(timeout_ms: int = TIMEOUT_MS, rlimit: int = RLIMIT, seed: int = SEED) -> z3.Fixedpoint:
    """A Spacer (constrained Horn clause) engine with the same seed, timeout and work limit."""
    _configure(seed)
    fp = z3.Fixedpoint()
    fp.set(engine="spacer")
    fp.set("timeout", int(timeout_ms))
    fp.set("spacer.random_seed", seed)
    z3.set_param("rlimit", int(rlimit))
    return fp


@dataclass(frozen=True)
class Answer:
    """`sat`, `unsat` or `unknown` (with Z3's reason), and the model when sat."""
    status: str
    reason: str = ""
    model: object = None


def check(s: z3.Solver, *assumptions) -> Answer:
    r = s.check(*assumptions)
    if r == z3.sat:
        return Answer("sat", model=s.model())
    if r == z3.unsat:
        return Answer("unsat")
    return Answer("unknown", reason=s.reason_unknown() or "unknown")


# ------------------------------------------------------------------ backends over Z3 terms

def _as_bool(x):
    return x if isinstance(x, z3.BoolRef) else z3.BoolVal(bool(x))


def _z3_select(cond, a, b):
    if isinstance(cond, bool):
        return a if cond else b
    return z3.If(cond, a, b)


def _z3_parity(x):
    return x % 2 if isinstance(x, z3.ArithRef) else x & 1


def _z3_wrap32(x):
    if isinstance(x, z3.BitVecRef):
        if x.size() <= 32:
            return x  # a 32-bit vector wraps by itself
        return z3.ZeroExt(x.size() - 32, z3.Extract(31, 0, x))
    return x % (1 << 32) if isinstance(x, z3.ArithRef) else x & base.U32


Z3_PRIMITIVES = {
    "select": _z3_select,
    "both": lambda a, b: z3.And(_as_bool(a), _as_bool(b)),
    "either": lambda a, b: z3.Or(_as_bool(a), _as_bool(b)),
    "negate": lambda a: z3.Not(_as_bool(a)),
    "parity": _z3_parity,
    "wrap32": _z3_wrap32,
}
assert set(Z3_PRIMITIVES) == set(base.PRIMITIVES)


def symbolic_backend(module) -> types.SimpleNamespace:
    """The functions of a backend module, re-bound to take and return Z3 terms.

    Each numba function's Python body is rebuilt with the primitives replaced by their Z3
    forms; calls between the module's own functions resolve to the rebuilt versions.
    """
    return base.rebound(module, Z3_PRIMITIVES)


@functools.lru_cache(maxsize=None)
def _symbolic(module) -> types.SimpleNamespace:
    return symbolic_backend(module)


def symbolic_rules(key) -> types.SimpleNamespace:
    """The registered backend's rules (by name or code, backends/capabilities.py `backend`)
    over Z3 terms: the protocol's functions (backends/protocol.py) and whatever else its rules
    module defines; built once per rules module."""
    return _symbolic(backend(key).rules)
