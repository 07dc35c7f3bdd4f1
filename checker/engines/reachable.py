"""Everything the model can reach, not only its shortest violation: the explicit engine run to
exhaustion, for the questions `pipeproof crosscheck` asks of a spec (cuda_ref/commands.py).

`verify` stops at the minimal depth; here the search goes on until no new state is left, so
each violation kind that any path reaches is recorded. A trapping step ends its path, as the
hardware does, so a kind reached only after a trap is not reported (the graph of
checker/engines/graph.py continues past traps and is for small specs only). The search also counts the
terminal states it reaches (every agent finished, nothing in flight) and the trapping steps,
which is what "every path deadlocks" needs: the model has no cycle (every step moves some
agent's position or retires an in-flight entry), so a maximal path ends in a terminal state, a
deadlock or a trap.

Symmetry reduction is kept (a state and its mirror image reach the same kinds, terminal states
and traps); the partial-order reduction is not (it keeps violations, not terminal states).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.explore import Search
from pipeproof.checker.core import MAX_INFLIGHT, Model
from pipeproof.checker.results import KINDS
from pipeproof.spec.schema import Spec

DEFAULT_MAX_STATES = 5_000_000


@dataclass(frozen=True)
class Reach:
    kinds: tuple          # every violation kind some path reaches, in KINDS order
    terminal: bool        # some path ends with every agent finished and nothing in flight
    traps: bool           # some path ends in a hardware trap (over_arrival, tx_range)
    states: int
    limit: str = ""       # why the search stopped early ('' : it was exhaustive)

    @property
    def exhaustive(self) -> bool:
        return not self.limit

    @property
    def every_path_deadlocks(self) -> bool | None:
        """True: every maximal path ends in a deadlock; None: the search was cut short."""
        if not self.exhaustive:
            return None
        return "deadlock" in self.kinds and not self.terminal and not self.traps


def reach(spec: Spec, max_states: int = DEFAULT_MAX_STATES, timeout: float | None = 120.0) -> Reach:
    """Search the whole state space of `spec`. A path that needs more copies and commits in
    flight than the model's default capacity is searched again at the largest capacity."""
    model = Model(spec)
    search = _exhaust(model, max_states, timeout)
    if search.limit.startswith("more than") and model.inflight < MAX_INFLIGHT:
        model = Model(spec, inflight=MAX_INFLIGHT)
        search = _exhaust(model, max_states, timeout)
    seen = [KINDS[k] for k in range(S.N_KINDS) if search.vrec[k, 0]]
    return Reach(tuple(seen), search.terminal_states > 0, search.trapping_steps > 0,
                 search.n_stored, search.limit)


def _exhaust(model: Model, max_states: int, timeout: float | None) -> Search:
    search = Search(model, max_states=max_states, timeout=timeout, symmetry=True, por=False)
    search.run_all()
    return search
