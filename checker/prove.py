"""`pipeproof prove`: safety and deadlock freedom for every item count.

Two steps. First the explicit engine checks the spec at its own item count: a bug there is
refuted with its shortest trace at once. Then checker/laps.py's lap abstraction is searched
exhaustively: its states are the reachable states of every item count at once (item numbers,
laps and generations taken relative to each other, the item count left exact or MANY), so an
exhaustive search without a violation proves the spec for all item counts n >= 1, and a
violation found there is the path of one concrete item count, which the explicit engine then
re-checks to print a real, shortest trace. A search that hits a limit, or a spec the
abstraction cannot cover, gives `unknown` with the reason: never `proved`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
from numba import njit

from checker import semantics as S
from checker.laps import (G_COEF, G_LEN, M_AGENTS, M_AGF, MANY, CannotAbstract, LapAbstraction,
                          canonical_fast, lap_tables, scaled_spec)
from checker.result import KINDS, Result
from checker.verify import tiny_spec, verify, warm_up
from spec.schema import Spec

KIND_MASK = (1 << S.N_KINDS) - 1
MAX_ABSTRACT_STATES = 8_000_000  # about 0.9 KB each
MAX_R = 1 << 12
QUICK_LOOK_STATES = 200_000


@dataclass
class ProofResult:
    spec: Spec
    status: str                    # proved | violated | unknown
    reason: str = ""
    parameter: str = ""            # what n is: "items" or "items = 2·n (role scheduler n)"
    abstract_states: int = 0
    seconds: float = 0.0
    items: int | None = None       # the parameter n at which it is violated
    result: Result | None = None   # the explicit engine's verdict at that n (with traces)

    @property
    def kind(self):
        return self.result.kind if self.result else None


@njit(cache=True)
def expand(T, L, st, succ, bits, moved, far, far_items):
    """Every action's canonical successor of `st`: succ[a], its step result bits[a], the items
    it moved (moved[a]) and whether an agent got within reach of the end (far[a]); returns
    the state's own violation bits."""
    det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
    n_enabled = 0
    agf = L.misc[M_AGF]
    for a in range(succ.shape[0]):
        det[:] = -1
        b = S.step(T, st, a, succ[a], det)
        bits[a] = b
        if b < 0:
            continue
        n_enabled += 1
        if b != 0:
            continue
        moved[a] = canonical_fast(L, succ[a])
        far[a] = 0
        for g in range(L.misc[M_AGENTS]):
            if (L.agent[g, G_COEF] > 0 and succ[a, g * agf + S.F_PC] < L.agent[g, G_LEN]
                    and succ[a, g * agf + S.F_ITEM] >= far_items * L.agent[g, G_COEF]):
                far[a] = 1
    det[:] = -1
    return S.state_violations(T, st, n_enabled, det)


class _NeedLargerR(Exception):
    pass


class _Limit(Exception):
    pass


class _Search:
    """BFS over abstract states (vector, n_rel); n_rel is exact (1..R-1) or MANY (>= R)."""

    def __init__(self, lap: LapAbstraction, R: int, max_states: int, deadline: float | None):
        self.lap, self.R = lap, R
        self.max_states, self.deadline = max_states, deadline
        self.index: dict = {}
        self.parent: list[int] = []
        self.via: list[int] = []
        self.keys: list = []
        self.fast = lap_tables(lap)

    def _add(self, vec: np.ndarray, n_rel: int, parent: int, action: int) -> bool:
        key = vec.tobytes() + n_rel.to_bytes(8, "little", signed=True)
        if key in self.index:
            return False
        if len(self.keys) >= self.max_states:
            raise _Limit(f"more than {self.max_states:,} abstract states")
        self.index[key] = len(self.keys)
        self.keys.append(key)
        self.parent.append(parent)
        self.via.append(action)
        return True

    def state(self, i: int) -> tuple[np.ndarray, int]:
        """The vector and n_rel of stored state i."""
        v = np.frombuffer(self.keys[i], dtype=np.int64)
        return v[:-1].copy(), int(v[-1])

    def run(self):
        """None when every abstract state is safe, else (state index, action or -1, bits)."""
        lap, R = self.lap, self.R
        model = lap.model
        v0 = model.initial_vector()
        canonical_fast(self.fast, v0)
        for n_rel in list(range(1, R)) + [MANY]:
            self._add(v0, n_rel, -1, -1)
        n_actions = model.n_actions()
        succ = np.empty((n_actions, model.n_fields), dtype=np.int64)
        bits = np.empty(n_actions, dtype=np.int64)
        moved = np.zeros(n_actions, dtype=np.int64)
        far = np.zeros(n_actions, dtype=np.int64)
        i = 0
        while i < len(self.keys):  # keys are stored in BFS order: the list is the queue
            if self.deadline and i % 2048 == 0 and time.monotonic() > self.deadline:
                raise _Limit("the time limit")
            st, n_rel = self.state(i)
            state_bits = expand(lap.tables_for(n_rel), self.fast, st, succ, bits, moved, far, R - 1)
            if state_bits & KIND_MASK:
                return i, -1, int(state_bits)
            for a in range(n_actions):
                b = int(bits[a])
                if b < 0:
                    continue
                if b & S.INFLIGHT_FULL:
                    raise _Limit("the model's room for in-flight copies and commits")
                if b & KIND_MASK:
                    return i, a, b
                d = int(moved[a])
                if n_rel != MANY:
                    self._add(succ[a], n_rel - d, i, a)
                    continue
                if far[a]:
                    raise _NeedLargerR()
                self._add(succ[a], MANY, i, a)
                for n2 in range(max(R - d, 1), R) if d else ():
                    self._add(succ[a], n2, i, a)
            i += 1
        return None

    def item_count_of(self, i: int) -> int:
        """The parameter n whose concrete run follows the abstract path to state i."""
        path = []
        while i >= 0:
            path.append(i)
            i = self.parent[i]
        path.reverse()
        lap = self.lap
        first = self.state(path[0])[1]
        if first != MANY:
            return first
        moved = 0
        for prev, cur in zip(path, path[1:]):
            st, n_rel = self.state(prev)
            out = np.empty_like(st)
            det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
            S.step(lap.tables_for(n_rel), st, self.via[cur], out, det)
            moved += canonical_fast(self.fast, out)
            if self.state(cur)[1] != MANY:
                return moved + self.state(cur)[1]
        return moved + self.R


def describe_parameter(spec: Spec, lap: LapAbstraction) -> str:
    coefs = {a.role: int(c) for a, c in zip(lap.model.agents, lap.coef)}
    if set(coefs.values()) == {1}:
        return "n = items"
    return "items = " + ", ".join(f"{role} {c}·n" for role, c in coefs.items())


_warm = False


def warm_up_prove() -> None:
    """Load (or compile) the abstraction's kernels before any clock starts."""
    global _warm
    warm_up()
    if not _warm:
        _Search(LapAbstraction(tiny_spec(), 8), 4, 10_000, None).run()
        _warm = True


def prove(spec: Spec, timeout: float | None = None,
          max_states: int = MAX_ABSTRACT_STATES) -> ProofResult:
    """Prove `spec` safe and deadlock-free for every item count, refute it, or say unknown."""
    warm_up_prove()
    started = time.monotonic()
    deadline = started + timeout if timeout else None

    def done(**kw) -> ProofResult:
        return ProofResult(spec=spec, seconds=time.monotonic() - started, **kw)

    # A quick look at the spec's own item count: most bugs show there, with a short trace.
    # Bounded, since the abstraction below covers this count too.
    own = verify(spec, timeout=timeout, max_states=min(max_states, QUICK_LOOK_STATES))
    if own.verdict == "violation":
        return done(status="violated", items=spec.items, result=own,
                    reason=f"violated at its own item count ({spec.items})")
    try:
        lap = LapAbstraction(spec, MAX_R)
    except CannotAbstract as err:
        return done(status="unknown", reason=f"outside the lap abstraction: {err}")
    parameter = describe_parameter(spec, lap)
    R = 2 * lap.item_step  # doubled until no MANY state comes near the end of the run
    while True:
        search = _Search(lap, R, max_states, deadline)
        try:
            found = search.run()
        except _NeedLargerR:
            if R >= MAX_R:
                return done(status="unknown", parameter=parameter, abstract_states=len(search.keys),
                            reason="agents drift apart without bound (no lap bound up to "
                                   f"{MAX_R} items)")
            R *= 2
            continue
        except _Limit as err:
            return done(status="unknown", parameter=parameter, abstract_states=len(search.keys),
                        reason=f"stopped at {err}")
        break
    if found is None:
        return done(status="proved", parameter=parameter, abstract_states=len(search.keys),
                    reason="no violation in any abstract state, for every item count")
    i, action, bits = found
    n = search.item_count_of(i)
    concrete = scaled_spec(spec, n)
    remaining = None if deadline is None else max(deadline - time.monotonic(), 1.0)
    result = verify(concrete, timeout=remaining)
    kinds = [KINDS[k] for k in range(S.N_KINDS) if bits & (1 << k)]
    if result.verdict != "violation":
        return done(status="unknown", parameter=parameter, abstract_states=len(search.keys),
                    reason=f"the abstraction reached {', '.join(kinds)} at n = {n}, but the "
                           f"explicit engine says {result.verdict} there")
    return done(status="violated", parameter=parameter, abstract_states=len(search.keys),
                items=n, result=result, reason=f"violated at n = {n}")
