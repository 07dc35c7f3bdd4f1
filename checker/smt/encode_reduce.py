"""The BMC encoding's reductions; both only remove runs (bmc.py argues why the minimal depth
and every kind at it survive): symmetry (of two interchangeable agents in the same local
state, the lower one moves first) and the partial-order reduction (a run's prefix in the
lexicographically least order among the permutations of commuting steps)."""
from __future__ import annotations

import z3

from pipeproof.checker.smt.encode_terms import Frame, Step, _and, _or

COMMUTING = ("r", "upd", "set", "inc")  # modes that commute with the same mode (canonical_order)


class _Reductions:
    """Symmetry and partial-order reduction (a part of encode.Encoding)."""

    def _symmetric_pairs(self) -> list:
        """(a, b), a < b: agents that swapping is a symmetry of the whole system for (the same
        CTA, the same unrolled program and start): agents of one role other than a leader with
        ops of its own, and other than a producer-side agent that fills (it owns its slot parts,
        checker/core/program.py slot_parts; checker/engines/symmetries.py leaves it out for the same reason)."""
        owners = {a for parts in self.model.parts for part in parts for _, a, _ in part.fills}
        classes = {}
        for a, prog in enumerate(self.progs):
            if a in owners:
                continue
            agent = self.model.agents[a]
            key = (agent.cta, agent.initial_stages, agent.initial_phases,
                   tuple((i.pc, i.item, i.op, i.stage, i.phase) for i in prog))
            classes.setdefault(key, []).append(a)
        return [(a, b) for members in classes.values() for i, a in enumerate(members)
                for b in members[i + 1:]]

    def identical(self, f: Frame, a: int, b: int):
        """Agents a and b (a symmetric pair) have the same local state and in-flight entries."""
        same = [f.v[("ge", a, k)] == f.v[("ge", b, k)] for k in range(1, self.lens[a] + 1)]
        same.append(f.v[("sync", a)] == f.v[("sync", b)])
        same += [f.v[("ready", a, r)] == f.v[("ready", b, r)] for r in range(self.rings)]
        same += [f.v[("arr", a, x)] == f.v[("arr", b, x)] for x in range(self.n_bar)]
        same += [f.v[(n, a) + key[1:]] == f.v[(n, b) + key[1:]]  # their (k', ph') records
                 for key in self.window_keys() if key[0] == a for n in ("wk", "wp")]
        same += [f.v[("inf", i)] == f.v[("inf", self.inst_of[(b, inst.k, inst.cta)])]
                 for i, inst in enumerate(self.instances) if inst.agent == a]
        return _and([z3.simplify(x) for x in same])

    def symmetry(self, f: Frame, step: "Step") -> list:
        """Of two symmetric agents in the same local state, the lower one moves first."""
        return [z3.Implies(step.act.is_(b), z3.Not(self.identical(f, a, b)))
                for a, b in self.sym_pairs]

    # ------------------------------------------------------------------ partial-order reduction

    def canonical_order(self, first: Step, second: Step):
        """Two consecutive steps of a run's prefix in canonical order: the second actor may come
        before the first (a smaller `act`) only if the two steps do not commute (the adjacent
        case of `lex_order`).

        Two steps commute when, on every resource they share, their modes commute. Resources:
        each agent (every step of it: two steps of one agent never commute), each signal, slot,
        barrier and in-flight instance. Modes: `r` (reads: a wait or try, which at most sets the
        signal's `observed`, the same way in either order; a `sync_wait`; a `read_wait`; the
        first step after a `sync`, which may have been released by the other step) commutes
        with `r`; `upd` (an mbarrier update) with the identical update (the same function
        applied twice); `set` (a tag stored into a slot) with the same tag; `inc` (an amd
        counter's `+= n`) with `inc`; `w` (reads and writes) with nothing. Each action's effect
        on a resource depends only on that resource and the actor's own fields, so commuting per
        resource is commuting: both orders are enabled and reach the same state. Other agents'
        positions are read only by violation bits and the deadlock property, which need no
        resource (see bmc.py for why the moved steps' own violations do not matter).
        """
        conflicts = []
        for res, modes1 in first.foot.items():
            modes2 = second.foot.get(res)
            if not modes2:
                continue
            for m1, conds1 in modes1.items():
                for m2, conds2 in modes2.items():
                    if m1 != m2 or m1[0] not in COMMUTING:
                        conflicts.append(_and([_or(conds1), _or(conds2)]))
        return z3.Implies(first.act.above(second.act), _or(conflicts))

    def conflict(self, first: Step, second: Step):
        """The two steps do not commute (see `canonical_order`); two steps of one agent never
        do (every agent step touches the agent itself)."""
        conflicts = []
        a, b = first.touches(), second.touches()
        for res, modes1 in a.items():
            modes2 = b.get(res)
            if not modes2:
                continue
            for m1, t1 in modes1.items():
                for m2, t2 in modes2.items():
                    if m1 != m2 or m1[0] not in COMMUTING:
                        conflicts.append(_and([t1, t2]))
        return _or(conflicts)

    def lex_order(self, steps: list, v: int) -> list:
        """Step v of a run's prefix may not be moved before any earlier step t with a larger
        actor when it commutes with every step from t to v - 1 (the lexicographically least
        order of the prefix among its commuting permutations)."""
        out = []
        free = z3.BoolVal(True)
        for t in range(v - 1, -1, -1):
            nxt = z3.Bool(f"commutes@{t}..{v}")
            out.append(nxt == _and([free, z3.Not(self.conflict(steps[t], steps[v]))]))
            free = nxt
            out.append(z3.Implies(free, z3.Not(steps[t].act.above(steps[v].act))))
        return out
