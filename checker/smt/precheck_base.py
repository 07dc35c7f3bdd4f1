"""What the pre-check's symbolic checks share: an obligation (`_Q`), and `_CheckBase`, one
spec's agent classes, closed forms and concrete runs, with the helpers the checks ask (who
arrives, pre-arrival phases, Z3 with bisection to the first failing item, where a reader's
read follows its wait). The checks are precheck_rates.py and precheck_laps.py; precheck.py
runs them."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from pipeproof.checker.smt import solvers as smt
import z3
from pipeproof.checker.smt.precheck_replay import _Progress
from pipeproof.checker.smt.precheck_walk import (ARRIVES, EMPTY, FULL, READS, WAITS, Cls, classes,
                                                 forms, sources)
from pipeproof.spec.schema import Spec


@dataclass(frozen=True)
class _Q:
    """A symbolic obligation: `bad` is satisfiable iff the property fails somewhere; `var` is
    what to minimise (an item, a phase); `info` is what its check needs to explain it."""
    bad: object
    var: object
    info: tuple


class _CheckBase:
    """One spec's walks, closed forms and concrete runs, and the helpers every check uses (a
    part of precheck._Check)."""

    def __init__(self, spec: Spec):
        self.spec, self.K = spec, spec.cluster_size
        self.rings = {r.name: r for r in spec.all_rings}
        self.S = {r.name: r.stages for r in spec.all_rings}
        self.clss = classes(spec)
        self.forms = {id(c): forms(c, self.S) for c in self.clss}
        self.prog = _Progress(spec, self.clss)
        self._names, self._lapq = 0, {}

    def _var(self, prefix: str):
        self._names += 1
        return z3.Int(f"{prefix}{self._names}")

    def _cta(self, c: int) -> str:
        return f" of CTA {c}" if self.K > 1 else ""

    def _in(self, c: int) -> list[Cls]:
        return [cls for cls in self.clss if c in cls.ctas]

    def _arrivers(self, ring: str, X: str, c: int) -> list[Cls]:
        return [cls for cls in self.clss if any(
            e.op.ring == ring and ARRIVES.get(e.name) == X and sources(cls, e.op, c, self.K)
            for e in cls.events)]

    def _pre(self, ring: str, X: str, c: int) -> dict | None:
        """Pre-arrival phases per stage (prologue positions where the arrivers arrive on X);
        None when arrivers disagree, so that phases of different arrivers do not line up."""
        per = []
        for cls in self._arrivers(ring, X, c):
            positions = defaultdict(set)
            for e in cls.events:
                if e.part == "prologue" and e.op.ring == ring and ARRIVES.get(e.name) == X \
                        and sources(cls, e.op, c, self.K):
                    positions[e.stage].add(e.pos)
            per.append({s: len(p) for s, p in positions.items()})
        if any(p != per[0] for p in per):
            return None
        return per[0] if per else {}

    def _solve(self, constraints, var=None):
        """Z3: a model of the constraints (None if unsat or unknown), with `var` as small as
        possible (bisection over var >= 0)."""
        s = smt.solver(timeout_ms=2000)
        s.add(*constraints)
        a = smt.check(s)
        if a.status != "sat" or var is None:
            return a.model if a.status == "sat" else None
        best, lo = a.model, 0
        hi = best.eval(var, model_completion=True).as_long()
        while lo < hi:
            mid = (lo + hi) // 2
            s.push()
            s.add(var <= mid)
            b = smt.check(s)
            s.pop()
            if b.status == "sat":
                best, hi = b.model, b.model.eval(var, model_completion=True).as_long()
            else:
                lo = mid + 1
        return best

    @staticmethod
    def _next_at(cls: Cls, i: int, names) -> int | None:
        """The first op in `names` at the same ring position as event i, from i on."""
        e = cls.events[i]
        for j in range(i, len(cls.events)):
            f = cls.events[j]
            if f.op.ring == e.op.ring and (f.pos != e.pos or f.part != e.part):
                return None
            if f.op.ring == e.op.ring and f.name in names:
                return j
        return None

    def _after_wait(self, ring: str, c: int, ops, wait: str) -> bool:
        """Whether every body op in `ops` on `ring` that reaches CTA c follows, at the same
        ring position, a blocking wait on `wait`."""
        for cls in self.clss:
            for i, e in enumerate(cls.events):
                if e.part != "body" or e.op.ring != ring or e.name not in ops or \
                        not sources(cls, e.op, c, self.K):
                    continue
                for f in reversed(cls.events[:i]):
                    if f.op.ring == ring and (f.pos != e.pos or f.part != e.part):
                        return False
                    if f.op.ring == ring and f.blocking and WAITS[f.name] == wait:
                        break
                else:
                    return False
        return True

    def _deadlocks(self) -> bool:
        """A deadlock claim also needs a real interleaving that ends in one: an agent the
        abstraction leaves stuck may still be on a path that traps first (a trap ends it)."""
        return self.prog.ends()[1] == "deadlock"

    def _shows(self, kind: str) -> bool:
        """A real interleaving meets `kind`, as a trap or as a violation the path goes on
        after (a phase completed that no wait observed)."""
        kinds, final = self.prog.ends()
        return kind in kinds or final == f"trap {kind}"

    def _laps_ok(self, ring: str, c: int) -> bool:
        """Every wait on `ring` in CTA c is proved on its lap (the lap obligations are unsat)."""
        qs = [q for X in (FULL, EMPTY) for q in self._lapq[ring, X, c]]
        return None not in qs and (not qs or self._solve([z3.Or(*[q.bad for q in qs])]) is None)

    def _reader_at(self, ring: str, c: int, stage: int, vis: int):
        """(role, witness) for a role of CTA c that a real interleaving takes to its read after
        its wait on full[stage] at visit `vis` (or to a violation first); None if none."""
        for cls in self._in(c):
            for i, e in enumerate(cls.events):
                if e.blocking and e.op.ring == ring and WAITS[e.name] == FULL and \
                        (e.stage, e.vis) == (stage, vis):
                    j = self._next_at(cls, i, READS)
                    shown = j is not None and self.prog.witness(self.prog.first(cls, c), j)
                    if shown:
                        return cls.name, shown
        return None
