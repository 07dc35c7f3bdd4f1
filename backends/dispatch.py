"""The compiled engines' way to a backend's rules: one dispatcher per protocol function
(backends/protocol.py), picking the rules module by the backend code of the model's tables.

numba cannot pass a module around, so the pick is a branch per registered backend; a code
with no branch raises instead of running another backend's rules. Adding a backend adds one
branch to each function here (tests/test_backend_protocol.py checks every registered code has
them). Python code that holds a spec asks `capabilities.backend(name).rules` instead.
"""
from pipeproof.backends import amd, nvidia
from pipeproof.backends.base import AMD, NVIDIA, jit


@jit
def init(code, expected):
    if code == NVIDIA:
        return nvidia.init(expected)
    if code == AMD:
        return amd.init(expected)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def update(code, a, b, c, expected, arrive_count, tx_delta, observed):
    if code == NVIDIA:
        return nvidia.update(a, b, c, expected, arrive_count, tx_delta, observed)
    if code == AMD:
        return amd.update(a, b, c, expected, arrive_count, tx_delta, observed)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def signal_ready(code, a, b, c, expected, phase, kind):
    if code == NVIDIA:
        return nvidia.signal_ready(a, b, c, expected, phase, kind)
    if code == AMD:
        return amd.signal_ready(a, b, c, expected, phase, kind)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def intended_phase(code, phase, initial_phase):
    if code == NVIDIA:
        return nvidia.intended_phase(phase, initial_phase)
    if code == AMD:
        return amd.intended_phase(phase, initial_phase)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def intended_after(code, k_last, phase_last, phase):
    if code == NVIDIA:
        return nvidia.intended_after(k_last, phase_last, phase)
    if code == AMD:
        return amd.intended_after(k_last, phase_last, phase)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def in_window_at(code, a, k):
    if code == NVIDIA:
        return nvidia.in_window_at(a, k)
    if code == AMD:
        return amd.in_window_at(a, k)
    raise ValueError("backends/dispatch.py: unknown backend code")


@jit
def tx_limit(code):
    if code == NVIDIA:
        return nvidia.TX_LIMIT
    if code == AMD:
        return amd.TX_LIMIT
    raise ValueError("backends/dispatch.py: unknown backend code")


# The branches above, for the test that every registered backend has one.
CODES = (NVIDIA, AMD)
