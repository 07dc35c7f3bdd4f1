"""What `pipeproof crosscheck` asks of the model, answered without calling a rule broken for want
of an answer (issue 31).

R2 asks whether the model reaches a kind the GPU showed; R3 whether every maximal path of the
model deadlocks. Each question is answered by the first of these that decides it:

1. **The GPU's own logs.** `cuda_ref.conform` replays a log as a path of the model. A log that
   conforms with outcome read_before_fill, overwrite_before_drain or inflight_at_exit is a
   path on which the model reports that kind (`conform_end.end_problem` demands it). One that
   conforms with timeouts ends, once what is in flight completes (`settle`), in a state where
   every agent has finished or cannot step and nothing is in flight: the model's deadlock.
   One that conforms with outcome ok or one of those three kinds (no timeout, no trap) ends
   with every agent finished, and completing what is still in flight ends in a terminal state
   or a trap: a path that does not deadlock, so "every path deadlocks" is false. (A `trap`
   log is checked only up to the trap, so it witnesses nothing here.)
2. **The exhaustive search with symmetry reduction** (agent classes and CTA renamings,
   checker/engines/symmetries.py; docs/reductions.md "Symmetry reduction", "CTA symmetry"). The
   permutations are automorphisms of the state graph that keep every step's violation bits,
   the trap bit and enabledness, so the quotient keeps every reachable kind, every trapping
   step and every terminal state up to permutation: run to exhaustion it decides both
   questions both ways, as checker/engines/reachable.py does. It is bounded (`max_states`, `timeout`).
3. **The search with partial-order reduction too** (the merged steps of checker/engines/por.py), when
   the exhaustive search stopped at its bound. docs/reductions.md proves that this reduction
   keeps *some* violation of a violating spec ("What must be kept"); it does not claim to keep
   every kind, every terminal state or every trapping step, so it is never used to deny
   anything. What it finds is real all the same: every state it stores is reachable (a
   merged step is a step of the model), so a kind it records, a terminal state it expands
   and a trapping step it takes exist in the full graph. It can therefore only confirm: a
   kind reachable, or a terminal state or trap (not every path deadlocks).

When none of these decides, the rule is `undecided (bound: ...)`: said, and not counted as
broken (the search ran out of room, the model did not disagree).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import Search
from pipeproof.checker.core import MAX_INFLIGHT, Model
from pipeproof.checker.results import KINDS
from pipeproof.spec.schema import Spec

REACH_STATES = 5_000_000
REACH_TIMEOUT = 60.0
# outcomes whose conforming log is a model path reporting that kind (conform_end.REPORTED_OUTCOMES)
WITNESSED_OUTCOMES = ("read_before_fill", "overwrite_before_drain", "inflight_at_exit")


@dataclass(frozen=True)
class Found:
    """What one search met: kinds (KINDS order), whether a terminal state and a trapping step
    were met, the states stored, and why it stopped early ('' : exhaustive)."""
    kinds: tuple
    terminal: bool
    traps: bool
    states: int
    limit: str = ""
    por: bool = False

    @property
    def exhaustive(self) -> bool:
        return not self.limit

    def how(self) -> str:
        red = "symmetry and partial-order reduction" if self.por else "symmetry reduction"
        return (f"{self.states:,} states with {red}"
                + (f", stopped: {self.limit}" if self.limit else ", exhaustive"))


def search(spec: Spec, por: bool, max_states: int = REACH_STATES,
           timeout: float | None = REACH_TIMEOUT) -> Found:
    """Every state the explicit engine reaches (with `por`, the reduced graph), bounded. A path
    that needs more copies and commits in flight than the model's default room is searched
    again with the largest room."""
    model = Model(spec)
    s = _run(model, por, max_states, timeout)
    if s.limit.startswith("more than") and model.inflight < MAX_INFLIGHT:
        s = _run(Model(spec, inflight=MAX_INFLIGHT), por, max_states, timeout)
    seen = tuple(KINDS[k] for k in range(S.N_KINDS) if s.vrec[k, 0])
    return Found(seen, s.terminal_states > 0, s.trapping_steps > 0, s.n_stored, s.limit, por)


def _run(model: Model, por: bool, max_states: int, timeout: float | None) -> Search:
    s = Search(model, max_states=max_states, timeout=timeout, symmetry=True, por=por)
    s.run_all()
    return s


@dataclass
class Answer:
    """One question's answer: True / False / None (undecided), and how it was decided."""
    value: bool | None
    how: str


class ModelFacts:
    """The model's verdict on a spec (`verify`), and on demand what R2 and R3 need, each
    decided by the cheapest means of the module docstring that decides it."""

    def __init__(self, spec: Spec, max_states: int = REACH_STATES,
                 timeout: float | None = REACH_TIMEOUT, result=None):
        from pipeproof.checker.engines import verify
        self.spec = spec
        self.result = result if result is not None else verify(spec)
        self.max_states, self.timeout = max_states, timeout
        self._full: Found | None = None
        self._por: Found | None = None

    def full(self) -> Found:
        if self._full is None:
            self._full = search(self.spec, False, self.max_states, self.timeout)
        return self._full

    def por(self) -> Found:
        if self._por is None:
            self._por = search(self.spec, True, self.max_states, self.timeout)
        return self._por

    def reach(self):
        """The exhaustive search's answer in checker.engines.reachable's shape (kinds, terminal, traps,
        states, limit, every_path_deadlocks)."""
        from pipeproof.checker.engines import Reach
        f = self.full()
        return Reach(f.kinds, f.terminal, f.traps, f.states, f.limit)

    # ------------------------------------------------------------------ R2

    def reaches(self, kinds: tuple, witnesses=()) -> tuple[str, str]:
        """Does the model reach one of `kinds` (a GPU kind: `trap` is over_arrival or
        tx_range)? ('reachable' | 'after undefined behaviour' | 'no' | 'undecided', how).
        `witnesses`: (run number, the kind its conforming log witnesses) pairs."""
        for run, kind in witnesses:
            if kind in kinds:
                return "reachable", f"run {run}'s conforming log is a model path that reports it"
        f = self.full()
        if any(k in f.kinds for k in kinds):
            return "reachable", ""
        if f.traps:
            return "after undefined behaviour", ""
        if f.exhaustive:
            return "no", f.how()
        p = self.por()
        if any(k in p.kinds for k in kinds):
            return "reachable", "found by the partial-order reduced search"
        if p.traps:
            return "after undefined behaviour", "a trap found by the partial-order reduced search"
        return "undecided", f"bound: {f.how()}; {p.how()}"

    # ------------------------------------------------------------------ R3

    def every_path_deadlocks(self, non_deadlocking_witness: int | None = None) -> Answer:
        """Does every maximal path of the model end in a deadlock?"""
        if non_deadlocking_witness is not None:
            return Answer(False, f"run {non_deadlocking_witness}'s conforming log is a model "
                                 f"path that does not deadlock")
        f = self.full()
        if f.terminal or f.traps:
            return Answer(False, "")
        if f.exhaustive:
            return Answer("deadlock" in f.kinds, f.how())
        p = self.por()
        if p.terminal or p.traps:
            return Answer(False, "a terminal state or trap found by the partial-order reduced "
                                 "search")
        return Answer(None, f"bound: {f.how()}; {p.how()}")


def witnesses(reports, conform_results) -> tuple[list, int | None]:
    """([(run, kind its conforming log shows the model reaching)], a run whose conforming log
    does not deadlock or None): what the GPU logs themselves decide (module docstring, 1)."""
    out, free = [], None
    if conform_results is None:
        return out, free
    for rep, c in zip(reports, conform_results):
        if not c.ok:
            continue
        run, outcome = rep.log["run"], rep.outcome
        timeouts = any(e.get("result") == "timeout" for e in rep.log.get("events", ()))
        if outcome in WITNESSED_OUTCOMES:
            out.append((run, outcome))
        if timeouts and outcome != "trap":
            out.append((run, "deadlock"))
        if not timeouts and outcome != "trap" and free is None:
            free = run
    return out, free
