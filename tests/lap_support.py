"""States of the lap abstraction for the prove tests (tests/test_prove.py, test_prove_rules.py):
`random_states`, the states random walks reach at one item count, in the abstraction's own
layout."""
from __future__ import annotations

import random

import numpy as np

from pipeproof.checker.core import semantics as S


def random_states(lap, n, n_walks=30, length=80, seed=7):
    """States of random walks of item count n, in the abstraction's own layout."""
    T = lap.tables_for(n)
    model = lap.model
    rng = random.Random(seed)
    out = np.empty(model.n_fields, dtype=np.int64)
    for _ in range(n_walks):
        st = model.initial_vector()
        for _ in range(length):
            moves = []
            for a in range(model.n_actions()):
                det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
                bits = S.step(T, st, a, out, det)
                if bits >= 0 and not bits & S.TRAP:
                    moves.append(out.copy())
            if not moves:
                break
            st = rng.choice(moves)
            yield st

