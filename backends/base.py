"""What every signal backend provides, and the primitives they are written in.

A backend is a module of small integer functions (no objects), so the explicit engine can call
them from numba-compiled code, the Z3 encoder can read them, and the GPU generator can mirror
them. A signal's state is three integers `(a, b, c)`:

    nvidia: a = phase_no, b = pending, c = tx     (expected is a constant of the signal)
    amd:    a = counter,  b = 0,       c = 0

Backend functions branch only through the primitives below (`select`, `both`, `either`,
`negate`, `parity`, `wrap32`). Written once, they run three ways: compiled by numba in the
explicit engine, as plain Python with `NUMBA_DISABLE_JIT=1`, and re-bound to Z3 terms by
`checker.smt.symbolic_backend`, so the Z3 encodings read the very same definitions.
"""
from __future__ import annotations

try:
    from numba import njit as _njit

    def jit(fn):
        return _njit(cache=True, inline="always")(fn)
except ImportError:  # pragma: no cover - numba is a declared dependency
    def jit(fn):
        return fn

NVIDIA = 0
AMD = 1
BACKEND_CODES = {"nvidia": NVIDIA, "amd": AMD}

FULL = 0
EMPTY = 1

U32 = (1 << 32) - 1

# Names of the primitives; checker.smt replaces exactly these when it reads a backend.
PRIMITIVES = ("select", "both", "either", "negate", "parity", "wrap32")


@jit
def select(cond, if_true, if_false):
    """`if_true if cond else if_false`, as one expression (z3.If when symbolic)."""
    return if_true if cond else if_false


@jit
def both(a, b):
    return a and b


@jit
def either(a, b):
    return a or b


@jit
def negate(a):
    return not a


@jit
def parity(x):
    """x mod 2 for any integer (the bit an mbarrier's parity wait looks at)."""
    return x & 1


@jit
def wrap32(x):
    """x taken modulo 2^32, as a UInt32 computation does."""
    return x & U32
