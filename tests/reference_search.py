"""The lap abstraction's search in plain Python (a dict of bytes keys): the loop the compiled
`checker.prove._Search` replaced, kept here as its test oracle. Both must store the same abstract
states in the same BFS order with the same parents (tests/test_prove.py), and
benchmarks/prove_examples.py --reference times it beside the compiled one. Pass the class as
`prove(spec, searcher=ReferenceSearch)`.
"""
from __future__ import annotations

import time

import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.laps import MANY, LapAbstraction, canonical_fast, lap_tables
from pipeproof.checker.engines.prover import (KIND_MASK, _item_count_of, _Limit, _NeedLargerR, expand,
                                     future_for, set_counts, start_counts)


class ReferenceSearch:
    """The search in plain Python (a dict of bytes keys), kept as the reference `_Search`
    must agree with state for state (tests/test_prove.py) and for before/after timings."""

    def __init__(self, lap: LapAbstraction, R: int, max_states: int, deadline: float | None,
                 por: bool = True):
        self.lap, self.R = lap, R
        self.por, self.future = por, future_for(lap, por)
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

    def run(self, only_n: int | None = None):
        """None when every abstract state is safe, else (state index, action or -1, bits)."""
        lap, R = self.lap, self.R
        model = lap.model
        v0 = model.initial_vector()
        canonical_fast(self.fast, v0)
        for n_rel in start_counts(R, only_n):
            self._add(v0, n_rel, -1, -1)
        n_actions = model.n_actions()
        succ = np.empty((n_actions, model.n_fields), dtype=np.int64)
        bits = np.empty(n_actions, dtype=np.int64)
        moved = np.zeros(n_actions, dtype=np.int64)
        far = np.zeros(n_actions, dtype=np.int64)
        det = np.empty(S.N_KINDS * S.DET_W, dtype=np.int64)
        done = np.zeros(lap.n_agents, dtype=np.bool_)
        scratch = np.empty(model.n_fields, dtype=np.int64)
        i = 0
        while i < len(self.keys):  # keys are stored in BFS order: the list is the queue
            if self.deadline and i % 2048 == 0 and time.monotonic() > self.deadline:
                raise _Limit("the time limit")
            st, n_rel = self.state(i)
            T = lap.tables_for(n_rel)
            T = T._replace(agent=T.agent.copy())
            set_counts(T, self.future, self.fast, n_rel, R)
            state_bits = expand(T, self.fast, self.future, self.por, st, succ, bits, moved, far,
                                R - 1, det, done, scratch)
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

    @property
    def n_stored(self) -> int:
        return len(self.keys)

    def item_count_of(self, i: int) -> int:
        return _item_count_of(self, i)
