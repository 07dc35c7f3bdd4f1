"""The pre-check's position checks: each blocking wait passes at the completion its place in
the ring calls for (laps: pre-arrivals + its earlier visits to that stage, + 1 on full), each
reader of item i reads the slot the writer of item i used (stages), and no named barrier
counts agents that never sync on it. A mismatch becomes a finding only through its gate (see
precheck.py's module doc)."""
from __future__ import annotations

from pipeproof.checker.core import OP_EFFECTS
import z3
from pipeproof.checker.smt.precheck_base import _CheckBase, _Q
from pipeproof.checker.smt.precheck_findings import Finding, _ordinal, _plural, sig_name
from pipeproof.checker.smt import solvers as smt
from pipeproof.checker.smt.precheck_signals import MBARRIER, agrees, signal_model, wait_need
from pipeproof.checker.smt.precheck_walk import (EMPTY, FULL, READS, WAITS, WRITES, Ev,
                                                 plain_rules)


class _Laps(_CheckBase):
    """Laps, stages and named barriers (a part of precheck._Check)."""

    def _lap_qs(self, ring: str, X: str, c: int, pre) -> list:
        """For each blocking wait on X: it passes exactly at the completion its place calls
        for, pre-arrivals + its visit index (+ 1 on full), for every item."""
        if pre is None:
            return [None]
        spec, r, S = self.spec, self.rings[ring], self.S[ring]
        out = []
        for cls in self._in(c):
            waits = [e for e in cls.events if e.blocking and e.op.ring == ring and
                     WAITS[e.name] == X]
            fs = [f for f in self.forms[id(cls)] if f.ev.blocking and f.ev.op.ring == ring
                  and WAITS[f.ev.name] == X]
            if any(e.part == "prologue" for e in waits) or sum(f.T for f in fs) != len(waits):
                out.append(None)  # a prologue wait has no visit to count from; or no fit
                continue
            p0 = cls.role.initial_phase_of(ring)
            for f in fs:
                t = self._var("t")
                q = f.q0 + f.qa * t
                stage, phase = q % S, q / S
                k = _intends(spec, f, phase, p0, t)
                if k is None:
                    out.append(None)  # the phase it intends is not one closed form: left out
                    continue
                pre_s = z3.Sum([z3.If(stage == st, n, 0) for st, n in pre.items()] + [0])
                done = pre_s + (f.wa * t + f.wb) / f.wc + (1 if X == FULL else 0)
                out.append(_Q(z3.And(t >= 0, t < f.T,
                                     z3.Not(agrees(spec, r, X, done, phase, k))), t, (f, cls)))
        return out

    def _laps(self, ring: str, X: str, c: int, pre, qs, out):
        spec, r = self.spec, self.rings[ring]
        for q in qs:
            f, cls = q.info
            after = -1
            for _ in range(4):  # a mismatch its gate cannot confirm: try the next few items
                m = self._solve([q.bad, q.var > after], q.var)
                if m is None:
                    break
                after = m.eval(q.var).as_long()
                e = f.evs[after]
                exp = pre.get(e.stage, 0) + e.vis + (1 if X == FULL else 0)
                done, need = wait_need(spec, r, X, e)
                if self._lap_finding(ring, X, c, cls, e, exp, need, done, pre, out):
                    return

    def _lap_finding(self, ring, X, c, cls, e: Ev, exp, need, done, pre, out) -> bool:
        i = cls.events.index(e)
        if done > exp:
            if self.prog.stuck(ring, X, c, cls) is None or not self._deadlocks():
                return False
            kind, tail = "deadlock", "; that completion never comes: deadlock"
        else:
            data = self._next_at(cls, i, READS if X == FULL else WRITES)
            old = None  # (empty) the item its fill put in that slot (its part) before
            if X == EMPTY and data is not None:
                old = next((f.item for f in reversed(cls.events[:data]) if f.key ==
                            cls.events[data].key and f.stage == e.stage), None)
                if old is None or old < 0:
                    return False  # nothing of its own in that slot yet (or a prologue tile)
            shown = data is not None and self._early_reaches(ring, X, c, cls, e, exp, data, old)
            if not shown:
                return False
            kind = "read_before_fill" if X == FULL else "overwrite_before_drain"
            tail = ("; it passes early and reads a slot not yet filled: read_before_fill"
                    if X == FULL else "; it passes early and overwrites a slot not yet "
                                      "drained: overwrite_before_drain")
            if shown != "reached":
                kind, tail = shown, (f"; it passes early, and on the way to its "
                                     f"{'read' if X == FULL else 'write'} one interleaving "
                                     f"shows {shown}")
        sig, at = sig_name(ring, X), sig_name(ring, X, e.stage)
        p0 = cls.role.initial_phase_of(ring)
        if signal_model(self.spec) == MBARRIER:  # the words for its kind of wait
            how = f"its parity wait passes after {_plural(done, 'completion')} of {at}"
        else:
            n, sign = self.rings[ring].expected(X), "+" if X == FULL else "-"
            true = e.phase + (1 if X == FULL else -1)
            wrap = (f" (phase {sign} 1 wraps to {'0' if X == FULL else '2^32-1'} in UInt32)"
                    if true % (1 << 32) != true else "")
            how = (f"its threshold is (phase {sign} 1) × {n} = {need} arrivals{wrap}, i.e. "
                   f"{_plural(done, 'completion')} of {at}")
        pre_n = pre.get(e.stage, 0)
        pre_txt = f" and {_plural(pre_n, 'pre-arrival phase')}" if pre_n else ""
        if X == FULL:
            why = f"it is the {_ordinal(e.vis + 1)} fill of stage {e.stage}{pre_txt}"
        elif e.vis == 0:
            why = f"it is the first fill of stage {e.stage}, after no release{pre_txt}"
        else:
            why = (f"it is the {_ordinal(e.vis + 1)} fill of stage {e.stage}, after the "
                   f"releases of {_plural(e.vis, 'earlier fill')}{pre_txt}")
        where = f"item {e.item}" if e.part == "body" else f"its {e.part}"
        out.append(Finding(sig, kind, f"{cls.name} waits on {at}{self._cta(c)} at {where} with "
                           f"phase {e.phase} (initial_phase {p0}): {how}, but {why}, i.e. "
                           f"completion {exp}{tail}",
                           e.item if e.part == "body" else None, cls.name))
        return True

    def _early_reaches(self, ring, X, c, cls, e: Ev, exp: int, data: int, old=None):
        """Hold every arriver on X at the start of its visit that makes completion `exp`; if
        the waiter still reaches its read/write after the wait, it passed early (the
        witness's answer; None if not shown). On empty, a held arriver must still have its
        read of `old`, the item the write stores over, ahead of it there."""
        pre = self._pre(ring, X, c) or {}
        want = exp - 1 - pre.get(e.stage, 0)  # the arrivers' body visit that completes it
        if want < 0:
            return False
        arrivers, hold, reader = self._arrivers(ring, X, c), {}, False
        for a, (acls, ac) in enumerate(self.prog.agents):
            if acls not in arrivers:
                continue
            at = next((j for j, f in enumerate(acls.events) if f.op.ring == ring and
                       f.part != "prologue" and f.stage == e.stage and f.vis == want), None)
            if at is None:
                continue  # it never gets to that phase
            if X == EMPTY:
                j = self._next_at(acls, at, READS)
                if j is None:
                    return None  # no reader of the old item is held back: no overwrite to show
                reader = reader or (ac == c and acls.events[j].item == old)
            hold[a] = at
        if X == EMPTY and not reader:
            return None  # the held readers read other items there: not shown to overwrite
        return self.prog.witness(self.prog.first(cls, c), data, hold) if hold else None

    # ---------------------------------------------------------------- stages

    def _stage_qs(self, ring: str) -> list:
        """On a ring with writes/copies and reads: item i is read from a slot some writer put
        item i in. One obligation per read op: an item it reads that every writer of that item
        put elsewhere."""
        S = self.S[ring]
        fs = [f for cls in self.clss for f in self.forms[id(cls)]
              if f.ev.op.ring == ring and f.ev.part == "body"]
        writers = [f for f in fs if f.ev.name in WRITES]
        readers = [f for f in fs if f.ev.name in READS]
        out = []
        for fr in readers if writers else ():
            i = self._var("i")

            def at(f):  # whether the op runs in item i, and its slot then
                t = (i - f.rho) / f.cls.K
                return z3.And(i >= f.rho, (i - f.rho) % f.cls.K == 0, t < f.T), \
                    (f.q0 + f.qa * t) % S
            r_runs, r_slot = at(fr)
            w_at = [at(fw) for fw in writers]
            out.append(_Q(z3.And(r_runs, z3.Or(*[runs for runs, _ in w_at]),
                                 *[z3.Implies(runs, slot != r_slot) for runs, slot in w_at]),
                          i, (fr, writers)))
        return out

    def _stages(self, ring: str, qs, out):
        for q in qs:
            m = self._solve([q.bad], q.var)
            if m is None:
                continue
            fr, writers = q.info
            iv = m.eval(q.var).as_long()
            e = next(ev for ev in fr.evs if ev.item == iv)
            c = fr.cls.ctas[0]
            if not self.prog.witness(self.prog.first(fr.cls, c), fr.cls.events.index(e)):
                continue  # no interleaving shown to get the reader there
            wf, we = next((f, ev) for f in writers for ev in f.evs if ev.item == iv)
            out.append(Finding(sig_name(ring, FULL), "stage_mismatch",
                               f"{wf.cls.name} puts item {iv} in slot {we.stage} (initial_stage "
                               f"{wf.cls.role.initial_stage}), {fr.cls.name} reads item {iv} "
                               f"from slot {e.stage} (initial_stage {fr.cls.role.initial_stage})"
                               f": it reads another item's slot", iv, fr.cls.name))
            return

    # ---------------------------------------------------------------- named barriers

    def _barriers(self, out):
        pcs = self.prog.maximal()
        for a, (cls, c) in enumerate(self.prog.agents):
            steps = self.prog.steps[a]
            if pcs[a] >= len(steps) or steps[pcs[a]] != ("block",) or not self._deadlocks():
                continue
            name = cls.events[pcs[a]].op.barrier
            b = next(b for b in self.spec.barriers if b.name == name)
            users = [k for k in self.clss if c in k.ctas and any(
                OP_EFFECTS[e.name].barrier == "sync" and e.op.barrier == name for e in k.events)]
            count = b.count if b.count is not None else sum(
                k.agents for k in self.clss if k.name in b.roles and c in k.ctas)
            listed = f" (roles {', '.join(b.roles)})" if b.roles else ""
            out.append(Finding(f"barrier {name}", "deadlock",
                               f"barrier {name}{self._cta(c)} counts {count} arrivals per "
                               f"generation{listed}, but only "
                               f"{_plural(sum(k.agents for k in users), 'agent')} ever sync on "
                               f"it ({', '.join(dict.fromkeys(k.name for k in users))}): its "
                               f"first generation never completes: deadlock", None, cls.name))
            return


def _intends(spec, f, phase, p0, t):
    """The signal phase the wait of form f intends at its t-th event (docs/rules.md "The
    phase_alias window after `reset`"), as a Z3 term: the backend's intended_phase of its
    phase where the walk's window record gives just that at every event (no `reset` moved its
    phase back before it), else the line k0 + ka*t through the walk's values when they lie on
    one; None when neither (or the walk leaves the phase open)."""
    ks = [e.k for e in f.evs]
    if None in ks:
        return None
    if all(k == plain_rules(spec).intended_phase(e.phase, p0) for k, e in zip(ks, f.evs)):
        return smt.symbolic_rules(spec.backend).intended_phase(phase, p0)
    ka = ks[1] - ks[0] if len(ks) > 1 else 0
    if any(k != ks[0] + ka * j for j, k in enumerate(ks)):
        return None
    return ks[0] + ka * t
