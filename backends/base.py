"""What every signal backend provides, and the numba switch they share.

A backend is a module of small integer functions (no objects), so the explicit engine can call
them from numba-compiled code, the Z3 encoder can read them, and the GPU generator can mirror
them. A signal's state is three integers `(a, b, c)`:

    nvidia: a = phase_no, b = pending, c = tx     (expected is a constant of the signal)
    amd:    a = counter,  b = 0,       c = 0

`jit` compiles with numba when it is installed (it is a dependency); with `NUMBA_DISABLE_JIT=1`
the very same functions run as plain Python, which is how the engine is debugged.
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
