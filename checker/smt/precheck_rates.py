"""The pre-check's counting checks, per signal: the arrivals each phase receives against the
signal's expected count (rates, the prologue's pre-arrival phases too), the bytes expect_tx
announces per phase against the bytes copies land (nvidia), and waits that need more arrivals
than the whole run delivers (totals). A mismatch becomes a finding only through its gate (see
precheck.py's module doc)."""
from __future__ import annotations

from collections import defaultdict

from pipeproof.backends.capabilities import backend
from pipeproof.checker.smt import solvers as smt
from pipeproof.checker.core import OP_EFFECTS
import z3
from pipeproof.checker.smt.precheck_base import _CheckBase, _Q
from pipeproof.checker.smt.precheck_findings import Finding, _plural, sig_name
from pipeproof.checker.smt.precheck_signals import wait_need
from pipeproof.checker.smt.precheck_walk import ARRIVES, EMPTY, FULL, WAITS, Cls, _count, sources

# The ops that release a slot: arrivals on empty, now or when they fire (arrive_empty,
# commit_empty), read off their effects
RELEASES = tuple(n for n, kind in ARRIVES.items() if kind == EMPTY)


class _Rates(_CheckBase):
    """Rates, bytes and totals (a part of precheck._Check)."""

    def _monotone(self, cls: Cls, ring: str):
        """(q_b, lo, A, W): the class's body walk on `ring` as positions P = lo, lo+1, ... each
        visited once (no reset), A positions per period, coordinate q_b + P; W[s] = visits of
        stage s. None if the walk is not like that (then rates over this class go unchecked)."""
        S = self.S[ring]
        evs = [e for e in cls.events if e.part == "body" and e.op.ring == ring]
        if not evs or any(OP_EFFECTS[op.name].move == "reset" and op.ring == ring
                          for op in cls.role.body):
            return None
        rel = [(e, e.pos - cls.pos0[ring]) for e in evs]
        lo = min(p for e, p in rel if e.vis >= 0)
        if any(e.vis >= 0 and e.vis != (p - lo) // S for e, p in rel):
            return None
        first, A = {}, None
        for e, p in rel:
            t, rho = divmod(e.item, cls.K)
            if t == 1 and A is None:
                A = p - first[(e.key, rho)]
            first.setdefault((e.key, rho), p)
        A = 1 if A is None else A  # one period only: any step >= 1 describes it
        if A == 0 or any(p != first[(e.key, e.item % cls.K)] + A * (e.item // cls.K)
                         for e, p in rel):
            return None
        W = defaultdict(int)
        for e in evs:
            W[e.stage] = max(W[e.stage], e.vis + 1)
        return evs[0].q - rel[0][1], lo, A, W

    def _sums(self, ring: str, c: int, weight):
        """(s, w, terms, bound): Z3 terms for the ops landing in body phase w of stage s of
        `ring` in CTA c, one (term, class, form) per op, weight(event) being the amount of one
        op (0: not counted); `bound` keeps (s, w) where every contributing class takes part
        (one may run fewer items: `_totals` covers the phases after it stops). None when a
        contributing class does not walk the ring monotonically."""
        S = self.S[ring]
        s, w = self._var("s"), self._var("w")
        terms, ranges = [], []
        for cls in self.clss:  # from every CTA that targets c
            ops = [f for f in self.forms[id(cls)] if f.ev.part == "body" and f.ev.op.ring == ring
                   and weight(f.ev) and sources(cls, f.ev.op, c, self.K)]
            if not ops:
                continue
            shape = self._monotone(cls, ring)
            if shape is None:
                return None
            qb, lo, A, W = shape
            P = lo + (s - qb - lo) % S + w * S  # the position of visit w to stage s
            ranges.append(W)
            for f in ops:
                d = f.ev.pos - cls.pos0[ring]
                hit = z3.And(P >= d, (P - d) % A == 0, (P - d) / A < f.T)
                amount = weight(f.ev) * cls.agents * sources(cls, f.ev.op, c, self.K)
                terms.append((z3.If(hit, amount, 0), cls, f))
        if not terms:
            return None
        wmin = {st: min(W[st] for W in ranges if W[st] > 0) for st in range(S)
                if any(W[st] > 0 for W in ranges)}
        bound = z3.And(w >= 0, z3.Or(*[z3.And(s == st, w < n) for st, n in wmin.items()]))
        return s, w, terms, bound

    def _rate_q(self, ring: str, X: str, c: int, pre):
        """Body phases whose arrivals differ from the count: a `_Q`; "unwaited" when nobody
        waits on the signal (its phases do not matter); None when it cannot be checked."""
        if not any(e.blocking and WAITS[e.name] == X and e.op.ring == ring
                   for cls in self._in(c) for e in cls.events):
            return "unwaited"
        if pre is None:
            return None
        sums = self._sums(ring, c, lambda e: _count(e)
                          if e.op.ring == ring and ARRIVES.get(e.name) == X else 0)
        if sums is None:
            return None
        s, w, terms, bound = sums
        E = self.rings[ring].expected(X)
        return _Q(z3.And(bound, z3.Sum([t for t, _, _ in terms]) != E), w * self.S[ring] + s,
                  (s, w, terms, E))

    def _prologue_rates(self, ring: str, X: str, c: int, pre, out) -> bool:
        """Pre-arrival phases: the k-th prologue arrival position of every arriver at a stage
        together must bring the count (concrete; the prologue runs once)."""
        if not pre:
            return True
        E = self.rings[ring].expected(X)
        got = defaultdict(int)
        for cls in self._arrivers(ring, X, c):
            per = defaultdict(lambda: defaultdict(int))
            for e in cls.events:
                if e.part == "prologue" and e.op.ring == ring and ARRIVES.get(e.name) == X:
                    per[e.stage][e.pos] += \
                        _count(e) * cls.agents * sources(cls, e.op, c, self.K)
            for st, by_pos in per.items():
                for k, p in enumerate(sorted(by_pos)):
                    got[st, k] += by_pos[p]
        for (st, k), T in sorted(got.items()):
            if T != E:
                self._rate_finding(ring, X, c, E, T, [], f"pre-arrival phase {k} of stage {st}",
                                   out)
                return False
        return True

    def _rates(self, ring: str, X: str, c: int, q, out) -> bool:
        m = self._solve([q.bad], q.var)
        if m is None:
            return True
        s, w, terms, E = q.info
        parts = [(cls, f, m.eval(t).as_long()) for t, cls, f in terms]
        parts = [p for p in parts if p[2]]
        where = (m.eval(s).as_long(), m.eval(w).as_long())
        self._rate_finding(ring, X, c, E, sum(n for *_, n in parts), parts, where, out)
        return False

    def _rate_finding(self, ring, X, c, E, T, parts, where, out):
        if T < E:
            if self.prog.stuck(ring, X, c) is None or not self._deadlocks():
                return
            kind, tail = "deadlock", ": the phase never completes, deadlock"
        else:
            if not self._over_arrival(ring, X, c) or not self._shows("over_arrival"):
                # not shown to violate: one real interleaving (the backend's own update) must
                # meet it; a counter's surplus only passes waits early, and never does
                return
            kind, tail = "over_arrival", (": the surplus completes phases no wait observes, "
                                          "over_arrival")
        sig = sig_name(ring, X)
        merged = defaultdict(int)  # agents per (role, op): agent 0 and the others together
        for cls, f, n in parts:
            merged[cls.name, f.ev.op.text, _count(f.ev), n // cls.agents] += cls.agents
        detail = " + ".join(f"{_plural(a, 'agent')} × {each} {text}"
                            + (f" from {per // each} CTAs" if per // each > 1 else "")
                            for (name, text, each, per), a in merged.items())
        names = list(dict.fromkeys(name for name, *_ in merged))
        if not parts:  # no arrive op runs in that phase: name the ones that could
            arrivers = self._arrivers(ring, X, c)
            names = list(dict.fromkeys(k.name for k in arrivers))
            detail = " + ".join(dict.fromkeys(
                e.op.text for k in arrivers for e in k.events
                if e.op.ring == ring and ARRIVES.get(e.name) == X)) + " not running there"
        agents = sum(merged.values())
        if len(names) != 1:
            who = (" + ".join(names) or "no role") + " deliver"
        else:
            who = names[0] + ("s deliver" if agents > 1 else " delivers")
        if isinstance(where, str):
            amount = f"{T} in {where}"
        elif where == (0, 0) and parts:
            per_item = all(self._monotone(cls, ring)[2] == cls.K for cls, _, _ in parts)
            amount = f"{T} per {'item' if per_item else 'phase'}"
        else:
            amount = f"{T} in phase {where[1]} of stage {where[0]}"
        item = None
        if parts and not isinstance(where, str):
            item = next((e.item for e in parts[0][1].evs if (e.stage, e.vis) == where), None)
        out.append(Finding(sig, kind, f"{sig}{self._cta(c)} expects {_plural(E, 'arrival')} per "
                           f"phase, {who} {amount}" + (f" ({detail})" if detail else "") + tail,
                           item, names[0] if names else None))

    def _over_arrival(self, ring: str, X: str, c: int) -> bool:
        """nvidia surplus that must violate: one arrive above the count traps; or the run's
        arrivals on one signal force more completed phases than its waits and tries can
        observe (a phase j >= 1 may only complete after a wait or try intending phase j - 1
        passed; docs/rules.md "Traps and run-ahead (`over_arrival`)")."""
        E = self.rings[ring].expected(X)
        total, seen, tx = defaultdict(int), defaultdict(set), defaultdict(bool)
        for cls in self.clss:
            for e in cls.events:
                if e.op.ring != ring:
                    continue
                n_src = sources(cls, e.op, c, self.K)
                if ARRIVES.get(e.name) == X and n_src:
                    if _count(e) > E:
                        return True
                    total[e.stage] += _count(e) * cls.agents * n_src
                if X == FULL and OP_EFFECTS[e.name].tx and n_src:
                    tx[e.stage] = True
                if WAITS.get(e.name) == X and c in cls.ctas:
                    seen[e.stage].update(e.ks)  # every phase it may intend: g no larger
        for st, A in total.items():
            g = 0  # the first intended phase no wait or try has
            while g in seen[st]:
                g += 1
            # completed phases at the least: pending never rests at 0 without tx in flight
            least = -(-(A - E) // E) if tx[st] else A // E
            if least > g + 1:
                return True
        return False

    def _bytes_q(self, ring: str, c: int, pre):
        if not backend(self.spec.backend).tx_bytes or pre is None or pre:
            return None
        sums = self._sums(ring, c, lambda e: e.op.n if e.op.ring == ring and OP_EFFECTS[e.name].tx
                          else 0)
        if sums is None:
            return None
        s, w, terms, bound = sums
        zero = [z3.IntVal(0)]
        exp = z3.Sum([t for t, _, f in terms if OP_EFFECTS[f.ev.name].tx == 1] or zero)
        got = z3.Sum([t for t, _, f in terms if OP_EFFECTS[f.ev.name].tx == -1] or zero)
        return _Q(z3.And(bound, exp != got), w * self.S[ring] + s, (s, w, terms))

    def _bytes(self, ring: str, c: int, q, out):
        """Bytes announced (expect_tx) against bytes copied, per phase of full[s]."""
        m = self._solve([q.bad], q.var)
        if m is None:
            return
        s, w, terms = q.info
        sv, wv = m.eval(s).as_long(), m.eval(w).as_long()
        parts = [(cls, f, m.eval(t).as_long()) for t, cls, f in terms]
        expects = [(cls, f, n) for cls, f, n in parts if OP_EFFECTS[f.ev.name].tx == 1 and n]
        copies = [(cls, f, n) for cls, f, n in parts if OP_EFFECTS[f.ev.name].tx == -1 and n]
        e_b, d_b = sum(n for *_, n in expects), sum(n for *_, n in copies)
        sig = sig_name(ring, FULL)
        if e_b > d_b:
            # tx stays above 0 once the phase's arrivals are in, unless bytes of a later lap
            # land first. They cannot in a ring with back-pressure: every expect_tx and copy
            # follows a wait on empty, every release of empty follows a wait on full, and
            # both kinds of wait are on the right lap, so the next lap's bytes need this
            # phase consumed first. And some wait must need the phase.
            if not (self._after_wait(ring, c, tuple(n for n, e in OP_EFFECTS.items() if e.tx), EMPTY)
                    and self._after_wait(ring, c, RELEASES, FULL)
                    and self._laps_ok(ring, c) and self._deadlocks()):
                return
            if not any(e.blocking and e.op.ring == ring and WAITS[e.name] == FULL
                       and e.stage == sv and wait_need(self.spec, self.rings[ring], FULL, e)
                       for cls in self._in(c) for e in cls.events):
                return
            tail = ": tx never returns to 0, so the phase never completes, deadlock"
            kind = "deadlock"
        else:
            # Some of the phase's copies (not all) land exactly the expected bytes: with the
            # rest not issued yet or held in flight, full completes; a reader that gets to its
            # read of that phase in a real interleaving then reads a slot whose other parts
            # are still to land (docs/rules.md "Slot parts": a read checks every part and any
            # copy in flight into the slot).
            sizes = [f.ev.op.n for cls, f, n in copies for _ in range(n // f.ev.op.n)]
            reader = self._reader_at(ring, c, sv, wv)
            if reader is None or not _subset_sum(sizes, e_b):
                return
            (name, shown), kind = reader, "read_before_fill"
            tail = (f": full completes once {e_b} bytes have landed, before the slot's other "
                    f"copies have (not yet issued, or in flight), and {name} reads the partly "
                    f"filled slot, read_before_fill")
            if shown != "reached":
                kind, tail = shown, f"; on the way there one interleaving shows {shown}"
        ex = " + ".join(f.ev.op.text for _, f, _ in expects) or "no expect_tx"
        cp = " + ".join(f.ev.op.text if n == f.ev.op.n else f"{n // f.ev.op.n} × {f.ev.op.text}"
                        for _, f, n in copies)
        out.append(Finding(sig, kind, f"{sig}{self._cta(c)} expects {e_b} bytes per phase "
                           f"({ex}), copies deliver {d_b}" + (f" ({cp})" if cp else "") + tail,
                           parts[0][1].item(0), parts[0][0].name))

    # ---------------------------------------------------------------- totals

    def _totals(self, ring: str, X: str, c: int, out):
        """A wait that needs more arrivals than the whole run delivers to its signal (sound on
        its own: a signal never has more arrivals than the run's total)."""
        r = self.rings[ring]
        total, by = defaultdict(int), defaultdict(list)
        for cls in self.clss:
            for e in cls.events:
                n_src = sources(cls, e.op, c, self.K)
                if e.op.ring == ring and ARRIVES.get(e.name) == X and n_src:
                    total[e.stage] += _count(e) * cls.agents * n_src
                    if cls.name not in by[e.stage]:
                        by[e.stage].append(cls.name)
        items = {cls.name: cls.role.items for cls in self.clss}
        for cls in self._in(c):
            for e in cls.events:
                if not (e.blocking and e.op.ring == ring and WAITS[e.name] == X):
                    continue
                arrivals = wait_need(self.spec, r, X, e)[1]
                if arrivals <= total[e.stage] or not self._deadlocks():
                    continue
                sig = sig_name(ring, X)
                who = ", ".join(f"{n}: {_plural(items[n], 'item')}" for n in by[e.stage]) \
                    or "no role arrives on it"
                where = f"item {e.item}" if e.part == "body" else f"its {e.part}"
                out.append(Finding(sig, "deadlock",
                                   f"{cls.name} waits on {sig_name(ring, X, e.stage)}"
                                   f"{self._cta(c)} at {where} for {_plural(arrivals, 'arrival')}"
                                   f" in all, but the whole run delivers {total[e.stage]} ({who};"
                                   f" {cls.name}: {_plural(cls.role.items, 'item')}): deadlock",
                                   e.item if e.part == "body" else None, cls.name))
                return


def _subset_sum(sizes: list[int], target: int) -> bool:
    """Z3: some of the copies (not all) land exactly `target` bytes, so tx can reach 0 with the
    rest still in flight."""
    if not sizes or target <= 0:
        return False
    pick = [z3.Bool(f"c{k}") for k in range(len(sizes))]
    s = smt.solver(timeout_ms=2000)
    s.add(z3.Sum([z3.If(p, n, 0) for p, n in zip(pick, sizes)]) == target,
          z3.Not(z3.And(*pick)))
    return smt.check(s).status == "sat"
