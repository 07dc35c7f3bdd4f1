"""The backend protocol: the functions and constants every backend's rules module defines.

A signal's state is three integers (a, b, c) (backends/base.py); `expected` is the count the
signal was set up with (spec.schema.Ring.expected), `kind` FULL or EMPTY. Every function is
written in backends.base's primitives and decorated with `base.jit`, so that it runs compiled
in the engines (through backends/dispatch.py), as Z3 terms (checker/smt), and printed as
Promela, Murphi or C (backends/printed.py) from the one definition:

    init(expected) -> (a, b, c)                 the signal as set up
    update(a, b, c, expected, arrive_count, tx_delta, observed) -> (a, b, c, outcome)
                                                one atomic update; outcome bits (base.py):
                                                TRAP_OVER_ARRIVAL, TRAP_TX_RANGE (the kernel
                                                traps), COMPLETED, RAN_AHEAD (a completion
                                                nobody observed the phase before)
    signal_ready(a, b, c, expected, phase, kind) -> bool
                                                would a wait at lap `phase` pass
    intended_phase(phase, initial_phase) -> k   the signal phase a waiter at lap `phase` means
    intended_after(k_last, phase_last, phase) -> k
                                                ... from its last passed wait (k', ph')
    in_window_at(a, k) -> bool                  is a wait meaning phase k meaningful now
    TX_LIMIT                                    the bound on |tx| (0: no transaction bytes)
    signal_bounds(expected, updates, max_n, has_tx) -> 4 (lo, hi) pairs
                                                the range of each state word (plain Python:
                                                the model packs states by it)

Outside backends/, code reaches these only through the registered backend
(`backends.capabilities.backend(name_or_code).rules`) or, compiled, through
backends/dispatch.py; `check(module)` is what tests/test_backend_protocol.py runs on every
registered backend.
"""
from __future__ import annotations

import inspect

FUNCTIONS = {
    "init": ("expected",),
    "update": ("a", "b", "c", "expected", "arrive_count", "tx_delta", "observed"),
    "signal_ready": ("a", "b", "c", "expected", "phase", "kind"),
    "intended_phase": ("phase", "initial_phase"),
    "intended_after": ("k_last", "phase_last", "phase"),
    "in_window_at": ("a", "k"),
}
PLAIN = {"signal_bounds": ("expected", "updates", "max_n", "has_tx")}   # not compiled
CONSTANTS = ("TX_LIMIT",)


def check(module) -> list[str]:
    """What `module` lacks of the protocol, one line each (empty: it conforms). Parameters are
    checked by number: a backend names the three signal words after what they hold."""
    problems = []
    for name, params in (FUNCTIONS | PLAIN).items():
        fn = getattr(module, name, None)
        if fn is None:
            problems.append(f"{module.__name__}: no function {name}{params}")
            continue
        got = inspect.signature(getattr(fn, "py_func", fn)).parameters
        if len(got) != len(params):
            problems.append(f"{module.__name__}.{name}: {len(got)} parameters, "
                            f"the protocol has {len(params)} {params}")
        if name in FUNCTIONS and not hasattr(fn, "py_func"):
            problems.append(f"{module.__name__}.{name}: not decorated with backends.base.jit")
    problems += [f"{module.__name__}: no constant {c}" for c in CONSTANTS
                 if not isinstance(getattr(module, c, None), int)]
    return problems
