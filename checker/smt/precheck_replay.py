"""The pre-check's two concrete runs of all agents over the walks (`_Progress`): the
arrival-counter abstraction's maximal run, which bounds every interleaving (an agent it leaves
stuck is stuck in every run), and one real interleaving (what it reaches is reachable). The
gates that keep the pre-check free of false alarms ask these two runs."""
from __future__ import annotations

from collections import defaultdict

from pipeproof.backends import base
from pipeproof.backends.base import COMPLETED, RAN_AHEAD, TRAP_OVER_ARRIVAL, TRAP_TX_RANGE
from pipeproof.checker.core import program
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.smt.precheck_signals import wait_need
from pipeproof.checker.smt.precheck_walk import (ARRIVES, EMPTY, FULL, WAITS, Cls, Ev, _count,
                                                 plain_rules)
from pipeproof.spec.schema import Spec, targets


class _Progress:
    """Two concrete runs of all agents over the walks.

    `maximal()`, the arrival-counter abstraction, over-approximates: a wait passes once its
    signal has had the arrivals of the phase it needs (nvidia: (intended phase + 1) * count, a
    wait outside its window being a violation; the least phase it may intend where a try
    before a `reset` leaves that open; amd: the threshold); `try`, `unless=ready` waits,
    copies, commits and barriers never block, except a `sync` on a barrier used by `sync`
    alone and by fewer agents than its count (its first generation can never complete). Arrivals only grow and waits only need more of
    them, so its one maximal run bounds every interleaving: an agent it leaves stuck cannot
    finish in any run free of violations.

    `witness()` under-approximates: it is one real interleaving (agents step in turn, copies
    land and commits fire right after they are issued, barriers count generations, signals
    follow the backend's own functions, each agent keeps its `ready` flags and the window
    record of its last passed wait per signal, as the model does), so whatever it reaches is
    reachable, unless a violation (a trap, a wait or try outside its window) happens first,
    which it reports too.
    """

    def __init__(self, spec: Spec, clss: list[Cls]):
        self.spec, self.agents, self.steps = spec, [], []
        self.rings = {r.name: r for r in spec.all_rings}
        short = _short_barriers(spec, clss)
        for cls in clss:
            for c in cls.ctas:
                steps = [self._step(cls, c, e, short) for e in cls.events]
                for _ in range(cls.agents):
                    self.agents.append((cls, c))
                    self.steps.append(steps)
        self._free = self._ends = None

    def _step(self, cls, c, e: Ev, short):
        spec, ring = self.spec, self.rings[e.op.ring]
        if e.blocking:
            X = WAITS[e.name]
            return ("wait", (c, e.op.ring, X, e.stage), wait_need(spec, ring, X, e)[1])
        if e.name in ARRIVES:
            return ("arrive", [((d, e.op.ring, ARRIVES[e.name], e.stage), _count(e))
                               for d in targets(spec.cluster_size, c, e.op.to)])
        if OP_EFFECTS[e.name].barrier == "sync" and (c, e.op.barrier) in short:
            return ("block",)
        return None

    def maximal(self) -> list[int]:
        """The pc each agent reaches in the abstraction's maximal run."""
        if self._free is not None:
            return self._free
        pcs, got = [0] * len(self.steps), defaultdict(int)
        moved = True
        while moved:
            moved = False
            for a, steps in enumerate(self.steps):
                pc = pcs[a]
                while pc < len(steps):
                    st = steps[pc]
                    if st is not None:
                        if st[0] == "block" or (st[0] == "wait" and got[st[1]] < st[2]):
                            break
                        if st[0] == "arrive":
                            for key, n in st[1]:
                                got[key] += n
                    pc += 1
                if pc != pcs[a]:
                    pcs[a], moved = pc, True
        self._free = pcs
        return pcs

    def stuck(self, ring: str, X: str, c: int, cls: Cls | None = None):
        """An agent (of `cls`) that the maximal run leaves waiting on X of `ring` in CTA c."""
        pcs = self.maximal()
        for a, (acls, ac) in enumerate(self.agents):
            st = self.steps[a][pcs[a]] if pcs[a] < len(self.steps[a]) else None
            if st and st[0] == "wait" and st[1][:3] == (c, ring, X) and cls in (None, acls):
                return acls, acls.events[pcs[a]]
        return None

    def first(self, cls: Cls, c: int) -> int:
        return next(a for a, (acls, ac) in enumerate(self.agents) if acls is cls and ac == c)

    def ends(self) -> tuple[frozenset, str]:
        """How the witness's interleaving, with nothing held, ends when it is followed past the
        violations that do not end a path (a wait or try outside its window, a phase completed
        that no wait observed): those kinds, and "trap <kind>" (it traps), "deadlock" (an agent
        is unfinished and none can move; nothing is in flight, copies and commits having
        landed and fired at once) or "done". What it meets is reachable: a claim of a kind the
        model reaches only if no trap comes first asks this."""
        if self._ends is None:
            seen = set()
            final = self.witness(None, 0, collect=seen)
            self._ends = frozenset(seen), final
        return self._ends

    def witness(self, agent: int | None, past: int, hold: dict | None = None,
                collect: set | None = None) -> str | None:
        """Whether one real interleaving, with agent a held before its step hold[a], takes
        `agent` past its step `past` ("reached"), or meets a violation first (its kind), or
        neither (None). With `collect` (ends()), the violations that do not end a path go into
        it and the run goes on to its end (agent None)."""
        spec, rules = self.spec, plain_rules(self.spec)
        hold = hold or {}
        sig, bars, waiting, last = {}, defaultdict(lambda: [0, 0]), {}, {}
        pcs = [0] * len(self.steps)
        ready_flag = defaultdict(bool)  # (agent, ring): its last try's answer
        window = {}  # (agent, ring, stage, kind) -> (k', ph'): its last passed wait or ready try
        observed = set()  # signals whose current phase a wait or try has passed in

        def signal(key):
            if key not in sig:
                sig[key] = list(rules.init(self.rings[key[1]].expected(key[2])))
            return sig[key]

        def update(key, count, tx):  # None, or the kind of the trap
            st = signal(key)
            *new, out = rules.update(*st, self.rings[key[1]].expected(key[2]), count, tx,
                                     int(key in observed))
            if out & TRAP_OVER_ARRIVAL:
                return "over_arrival"
            if out & TRAP_TX_RANGE:
                return "tx_range"
            if out & RAN_AHEAD and collect is not None:  # as semantics.signal_update
                collect.add("over_arrival")
            if out & COMPLETED:
                observed.discard(key)
            st[:] = new
            return None

        def step(a) -> str:  # "ok", "blocked" or a violation kind
            cls, c = self.agents[a]
            e = cls.events[pcs[a]]
            ring, p0 = self.rings[e.op.ring], cls.role.initial_phase_of(e.op.ring)
            fx = OP_EFFECTS[e.name]
            if e.name in WAITS:
                X = WAITS[e.name]
                st = signal((c, e.op.ring, X, e.stage))
                if e.op.unless_ready and ready_flag[a, e.op.ring]:
                    return "ok"  # skipped: not evaluated
                # the window as semantics.in_phase_window: from the last passed wait
                rec = (a, e.op.ring, e.stage, X)
                k = rules.intended_after(*window.get(rec, (-(p0 % 2), p0)), e.phase)
                if not rules.in_window_at(st[0], k):
                    if collect is None:
                        return "phase_alias"
                    collect.add("phase_alias")
                ready = rules.signal_ready(*st, ring.expected(X), e.phase,
                                           base.FULL if X == FULL else base.EMPTY)
                if ready:
                    window[rec] = (k, e.phase)
                    observed.add((c, e.op.ring, X, e.stage))
                if fx.tries:
                    ready_flag[a, e.op.ring] = bool(ready)
                return "ok" if ready or fx.tries else "blocked"
            if fx.updates >= 0:  # arrive_*, expect_tx, commit_empty; a copy, landed at once
                X = FULL if fx.updates == program.FULL else EMPTY
                count = e.op.n if fx.units == -1 else fx.units
                tx = fx.tx * e.op.n
                for d in targets(spec.cluster_size, c, e.op.to):
                    trap = update((d, e.op.ring, X, e.stage), count, tx)
                    if trap:
                        return trap if collect is None else f"trap {trap}"
                return "ok"
            if OP_EFFECTS[e.name].barrier:
                b = next(b for b in spec.barriers if b.name == e.op.barrier)
                bar = bars[c, b.name]  # [arrivals in this generation, generation]
                if OP_EFFECTS[e.name].barrier == "wait":  # its last arrival's generation completed
                    return "ok" if bar[1] > last.get((a, b.name), 0) else "blocked"
                if waiting.get(a) is None:
                    waiting[a] = last[a, b.name] = bar[1]
                    bar[0] += 1
                    if bar[0] >= _barrier_count(spec, b, c, self.agents):
                        bar[0], bar[1] = 0, bar[1] + 1
                if OP_EFFECTS[e.name].barrier == "arrive" or bar[1] > waiting[a]:
                    waiting[a] = None
                    return "ok"
                return "blocked"
            return "ok"

        moved = True
        while moved:
            moved = False
            for a in range(len(self.steps)):
                while pcs[a] < hold.get(a, len(self.steps[a])):
                    if a == agent and pcs[a] > past:
                        return "reached"
                    r = step(a)
                    if r == "blocked":
                        break
                    if r != "ok":
                        return r
                    pcs[a] += 1
                    moved = True
        if agent is None:
            return "done" if all(pc == len(s) for pc, s in zip(pcs, self.steps)) else "deadlock"
        return "reached" if pcs[agent] > past else None


def _barrier_count(spec: Spec, b, c: int, agents) -> int:
    return b.count if b.count is not None else sum(
        1 for cls, ac in agents if ac == c and cls.name in b.roles)


def _short_barriers(spec: Spec, clss: list[Cls]) -> set:
    """(CTA, barrier) pairs used by `sync` alone, by fewer agents than their count."""
    out = set()
    for b in spec.barriers:
        if any(OP_EFFECTS[e.name].barrier in ("arrive", "wait") and e.op.barrier == b.name
               for cls in clss for e in cls.events):
            continue
        for c in range(spec.cluster_size):
            count = b.count if b.count is not None else sum(
                cls.agents for cls in clss if cls.name in b.roles and c in cls.ctas)
            users = sum(cls.agents for cls in clss if c in cls.ctas and any(
                OP_EFFECTS[e.name].barrier == "sync" and e.op.barrier == b.name
                for e in cls.events))
            if 0 < users < count:
                out.add((c, b.name))
    return out
