"""What every signal backend provides, and the primitives they are written in.

A backend is a module of small integer functions (no objects), so the explicit engine can call
them from numba-compiled code, the Z3 encoder can read them, and the GPU generator can mirror
them. A signal's state is three integers `(a, b, c)`:

    nvidia: a = phase_no, b = pending, c = tx     (expected is a constant of the signal)
    amd:    a = counter,  b = 0,       c = 0

Backend functions branch only through the primitives below (`select`, `both`, `either`,
`negate`, `parity`, `wrap32`). Written once, they run three ways: compiled by numba in the
explicit engine, as plain Python (`PIPEPROOF_JIT=0`, below), and re-bound to Z3 terms by
`checker.smt.symbolic_backend`, so the Z3 encodings read the very same definitions.
"""
from __future__ import annotations

import os

# PIPEPROOF_JIT=0 runs every engine as plain Python without importing numba at all (numba's
# import and cache load cost ~0.9 s, more than a small spec's whole search takes in Python).
# The command line sets it for its plain-Python first try (checker/engines/tier.py); it must be set
# before this module is first imported. NUMBA_DISABLE_JIT=1 also runs plain Python, but
# still imports numba.
JIT = os.environ.get("PIPEPROOF_JIT", "1") != "0"

if JIT:
    from pipeproof.backends.numba_cache import choose_cache_dir, drop_stale_cache

    drop_stale_cache()  # before numba loads anything cached
    choose_cache_dir()  # before numba is imported: it reads NUMBA_CACHE_DIR once
    from numba import njit
else:
    import numpy as _np

    _np.seterr(over="ignore")  # int64 hashing wraps on purpose, as it does compiled

    def njit(*args, **_options):
        """numba's decorator, as the identity: `@njit` and `@njit(...)` both leave `fn` as is."""
        if args and callable(args[0]):
            return _plain(args[0])
        return _plain

    def _plain(fn):
        fn.py_func = fn  # as a compiled function has, so callers need not tell them apart
        return fn


def jit(fn):
    """A semantics or backend function: compiled on its own and linked into each engine that
    calls it (LLVM still inlines the small ones). Inlining them all at numba's level made one
    engine take 4.4 minutes to compile on a 2-core machine, against 29 s this way, for a search
    14% slower at the median (benchmarks/results/compile_2026-12-01.txt). Without reference
    counting, as the engines that call them (checker/engines/explore.py, ENGINE)."""
    return njit(cache=True, _nrt=False)(fn)

from pipeproof.backends.capabilities import AMD, BACKEND_CODES, NVIDIA  # noqa: E402,F401 (the seam's codes)

FULL = 0
EMPTY = 1

# Outcome bits of one signal update, the same for every backend (backends/protocol.py `update`).
TRAP_OVER_ARRIVAL = 1   # an arrive count above what the phase still waits for: the kernel traps
TRAP_TX_RANGE = 2       # the transaction count left its range: the kernel traps
COMPLETED = 4           # this update completed the current phase
RAN_AHEAD = 8           # ... and the phase before it completed with nobody observing it

U32 = (1 << 32) - 1

# Names of the primitives; checker.smt and backends/printed.py replace exactly these when they
# read a backend (`rebound`).
PRIMITIVES = ("select", "both", "either", "negate", "parity", "wrap32")


def rebound(module, primitives: dict, stubs: dict | None = None):
    """The functions of a backend module with the primitives replaced by `primitives` (Z3
    terms in checker.smt, expression text in backends/printed.py): each function's Python body
    is rebuilt over them, calls between the module's own functions resolve to the rebuilt
    versions, or to `stubs[name]` where given; the module's upper-case int constants come
    along. Returns a namespace of both."""
    import types
    assert set(primitives) == set(PRIMITIVES)
    namespace = dict(vars(module))
    namespace.update(primitives)
    out = {}
    for name, obj in vars(module).items():
        fn = getattr(obj, "py_func", obj)
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            out[name] = namespace[name] = types.FunctionType(fn.__code__, namespace, name,
                                                             fn.__defaults__)
    namespace.update(stubs or {})
    constants = {k: v for k, v in vars(module).items() if isinstance(v, int) and k.isupper()}
    return types.SimpleNamespace(**constants, **out)


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
