"""The backends' own signal functions as the pre-check uses them: on plain Python ints for the
concrete replay (`_NVp`, `_AMDp`, in precheck_walk.py), and re-bound to Z3 terms (`_NV`, `_AMD`) for what a wait
needs (`wait_need`) and when it passes (`agrees`, for the lap obligations). Nothing about
mbarriers or counters is written again here."""
from __future__ import annotations

from pipeproof.backends import amd, nvidia
from pipeproof.backends.capabilities import backend
from pipeproof.checker.smt import solvers as smt
import z3
from pipeproof.checker.smt.precheck_walk import FULL
from pipeproof.spec.schema import Spec

_NV = smt.symbolic_backend(nvidia)
_AMD = smt.symbolic_backend(amd)




def phase_parity(spec: Spec) -> bool:
    """Its signals are mbarriers (a wait tests a phase parity and needs completed phases; an
    arrival beyond the count traps), not monotone counters (a wait needs arrivals)."""
    return backend(spec.backend).phase_parity


def wait_need(spec: Spec, ring, X: str, e) -> int:
    """Concretely, for the wait or try `e` (a precheck_walk.Ev): nvidia, completions it needs
    (its intended phase + 1, at least 0; the least phase it may intend, when the walk leaves
    that open: never more than it needs); amd, the arrivals its threshold needs."""
    if phase_parity(spec):
        return max(0, e.ks[0] + 1)
    fn = _AMD.full_threshold if X == FULL else _AMD.empty_threshold
    return fn(e.phase, ring.expected(X))


def agrees(spec: Spec, ring, X: str, done, phase, k):
    """Z3: the wait at `phase` intending signal phase `k` (nvidia) passes exactly when
    completion number `done` of its signal happens (the backend's own definitions, over Z3
    integers)."""
    if phase_parity(spec):
        return z3.And(_NV.ready(done, phase), _NV.in_window_at(done, k))
    n = ring.expected(X)
    ready = _AMD.full_ready if X == FULL else _AMD.empty_ready
    return z3.And(ready(done * n, phase, n),
                  z3.Or(done == 0, z3.Not(ready(done * n - 1, phase, n))))
