"""A toy third backend for tests/test_backend_protocol.py: a monotone counter like amd's, whose
wait thresholds are computed in signed 64-bit (no UInt32 wrap). Its code is 2. It shows what a
new backend costs: this rules module, a registry record, and a branch per function in
backends/dispatch.py (patched in by `dispatch_with_toy`, where the test cannot edit that file).
"""
from pipeproof.backends.base import FULL, jit, select
from pipeproof.backends.capabilities import Backend

CODE = 2
TX_LIMIT = 0


@jit
def init(expected):
    return 0, 0, 0


@jit
def update(counter, b, c, expected, arrive_count, tx_delta, observed):
    return counter + arrive_count, b, c, 0


@jit
def signal_ready(counter, b, c, expected, phase, kind):
    """Thresholds (phase + 1) * count (full) and (phase - 1) * count (empty), never wrapped."""
    return counter >= select(kind == FULL, phase + 1, phase - 1) * expected


@jit
def intended_phase(phase, initial_phase):
    return phase


@jit
def intended_after(k_last, phase_last, phase):
    return phase


@jit
def in_window_at(counter, k):
    return True


def signal_bounds(expected, updates, max_n, has_tx):
    return ((0, updates * max_n), (0, 0), (0, 0), (0, 0))


# A two-stage ring of the toy backend; INITIAL is the producer's initial phase.
TOY_SPEC = """
[pipeline]
name = "toy counters"
backend = "toy"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 3

[[role]]
name = "producer"
side = "producer"
count = 1
initial_phase = INITIAL
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
"""

RECORD = Backend("toy", CODE, "tests.toy_backend", tx_bytes=False, clusters=False,
                 phase_parity=False, wrap32=False, signal_fields=("count",), signal_model="")


def dispatch_with_toy():
    """backends/dispatch.py's functions with the toy's branch added (plain Python), as the one
    edit a real backend makes there; returns {name: function} to patch in."""
    import sys
    from pipeproof.backends import dispatch
    me = sys.modules[__name__]
    out = {}
    for name in ("init", "update", "signal_ready", "intended_phase", "intended_after",
                 "in_window_at"):
        old = getattr(dispatch.__dict__[name], "py_func", dispatch.__dict__[name])
        out[name] = (lambda old, new: lambda code, *a: new(*a) if code == CODE else old(code, *a))(
            old, getattr(me, name))
    old_limit = getattr(dispatch.tx_limit, "py_func", dispatch.tx_limit)
    out["tx_limit"] = lambda code: TX_LIMIT if code == CODE else old_limit(code)
    return out
