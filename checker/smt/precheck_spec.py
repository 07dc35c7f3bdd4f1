"""Pre-check (issue 4, part 1): count, byte and lap mismatches, found before any interleaving.

For every signal (`full[s]`, `empty[s]` of every ring, in every CTA) it compares:

  rates   the arrivals one phase receives from the roles (agents per CTA, @leader guards,
          arrive counts, cluster targets, every=/at=) with the signal's expected count;
  bytes   (nvidia) the bytes `expect_tx` announces per phase of full[s] with those copies land;
  laps    for every blocking wait, the completion its phase makes it wait for (through the
          backend's own `ready`/`in_window_at`, the phase it intends being nvidia's
          `intended_after` of the window record the walk keeps across `reset`s, docs/rules.md
          "The phase_alias window after `reset`"; or the amd `*_ready` thresholds) with the
          completion its place in the ring calls for: pre-arrivals + its earlier visits to that
          stage (+ 1 on full: a slot is filled before it is read);
  stages  on a ring that carries data, the slot the writer of item i uses and the slot each
          reader of item i uses;
and three plain limits: tx operands above 2^20 - 1, waits that need more arrivals than the whole
run delivers (roles with different item counts), and named barriers counting agents that never
sync on them.

How. Each agent class (a role; its leader apart when @leader ops make agent 0 differ) is walked
through its program once. Every op's place on its ring is then fitted to closed forms in the
item index, item = K*t + rho: coordinate q = phase*stages + stage = q0 + qa*t, visit index
w = (wa*t + wb) div wc; a fit is kept only if it reproduces the walk (else that op is left out:
silence, not a guess). Z3 then decides each property for every t at once, one query per check
when all is well, and finds the first failing item by bisection when not. Rates and bytes are
Z3 sums over the ops that land in phase w of stage s, for symbolic s and w.

No false alarms. A mismatch becomes a finding only when a violation provably follows, shown
by one of two concrete runs of all agents over the walks (`_Progress`):
  * too few arrivals, a wait for a later lap, a short named barrier: the waiter is stuck in
    the arrival-counter abstraction, which over-approximates every interleaving (waits pass
    as soon as the arrivals of the phase they need exist, nothing else blocks; monotone, so
    its one maximal run bounds them all);
  * a wait that needs more arrivals than the whole run delivers: sound on its own;
  * too many arrivals (nvidia): one arrive above the count traps, or the run's total forces
    more completed phases than its waits and tries can observe (docs/rules.md
    "Traps and run-ahead (`over_arrival`)");
  * a wait for an earlier lap: one real interleaving (the witness run, with the arrivers of
    the lap it should wait for held back) takes the waiter past its wait to its read
    (read_before_fill) or its write (overwrite_before_drain); a slot mismatch: the witness
    gets the reader to its read;
  * bytes: more expected than copied, in a ring with back-pressure, and a wait needs that
    phase (deadlock); fewer, some of the copies land exactly the expected bytes and the
    witness gets a reader to its read of that phase (read_before_fill: the slot's other
    parts are not filled yet, or their copies are in flight; docs/rules.md "Slot parts").
The kind named is one the model reaches, not only some violation: every deadlock claim also
needs the witness, followed to its end (`_Progress.ends`), to end in one, not in a trap (a
trap ends a path before the stuck wait matters); a surplus claimed as over_arrival needs the
witness to meet it (a trap, or a phase completed that no wait observed); an early wait on
empty claimed as overwrite_before_drain needs the write's own earlier item in that slot and a
held-back reader of that very item.
Everything else (amd surpluses, irregular walks, huge item counts, Z3's `unknown`, a backend
whose record names no signal model these arguments were made for) is skipped.

Files. The walks and closed forms are in precheck_walk.py, the backends' signal functions in
precheck_signals.py, the two concrete runs in precheck_replay.py, findings in
precheck_findings.py; the symbolic checks share precheck_base.py and are precheck_rates.py
(rates, bytes, totals) and precheck_laps.py (laps, stages, named barriers). This module runs
them, and every name the others import from it is still here.
"""
from __future__ import annotations

from pipeproof.backends.capabilities import backend
from pipeproof.checker.core import OP_EFFECTS
import z3
from pipeproof.checker.smt.precheck_base import _Q
from pipeproof.checker.smt.precheck_findings import Finding, sig_name
from pipeproof.checker.smt.precheck_laps import _Laps
from pipeproof.checker.smt.precheck_rates import _Rates
from pipeproof.checker.smt.precheck_signals import agrees, argued, signal_model, wait_need
from pipeproof.checker.smt.precheck_walk import (ARRIVES, EMPTY, FULL, MAX_STEPS, READS, USES,
                                                 WAITS, WRITES, Cls, Ev, Form, classes, forms,
                                                 sources, walk_size)
from pipeproof.spec.schema import TX_LIMIT, Spec

__all__ = ["ARRIVES", "EMPTY", "FULL", "MAX_STEPS", "READS", "USES", "WAITS", "WRITES", "Cls",
           "Ev", "Finding", "Form", "agrees", "argued", "classes", "forms", "precheck",
           "sig_name", "signal_model", "sources", "wait_need", "walk_size"]


def precheck(spec: Spec) -> list[Finding]:
    """Count, byte and lap mismatches that provably lead to a violation (see the module doc)."""
    found = _tx_operands(spec)
    if walk_size(spec) <= MAX_STEPS and argued(spec):  # (a backend no argument covers: none)
        found += _Check(spec).run()
    out, seen = [], set()
    for f in found:
        if (f.signal, f.kind) not in seen:
            seen.add((f.signal, f.kind))
            out.append(f)
    return out


def _tx_operands(spec: Spec) -> list[Finding]:
    """An expect_tx or copy operand above 2^20 - 1 traps when it runs (static)."""
    out = []
    if not backend(spec.backend).tx_bytes:
        return out
    for role in spec.roles:
        for op in role.body:
            if OP_EFFECTS[op.name].tx and op.n > TX_LIMIT and role.items > op.at:
                k = spec.k_group_size
                kb = f" (k_group_size {k} × {op.n // k} bytes)" if k > 1 and op.n % k == 0 else ""
                out.append(Finding(sig_name(op.ring, FULL), "tx_range",
                                   f"{role.name}: {op.text} announces {op.n} bytes{kb} in one "
                                   f"update, above the tx-count limit 2^20 - 1 = {TX_LIMIT}",
                                   op.at, role.name))
    return out


class _Check(_Rates, _Laps):
    """All checks over one spec. Every symbolic check is built once as an obligation `_Q`
    (a formula that is satisfiable iff something is wrong, its own variables); one Z3 query
    over their disjunction clears a correct spec, and only when it is sat are they examined
    one by one, in order, each failing one passed through its gate."""

    def run(self) -> list[Finding]:
        # A tile-level ring's reads pair with fills by tile, not by item (nested loops,
        # spec.load_loops): the item-numbered checks below do not apply, and it is left out.
        rings = [ring for ring in self.rings if self.rings[ring].level != "tile"]
        keys = [(ring, X, c) for ring in rings for X in (FULL, EMPTY) for c in range(self.K)]
        qs = {}
        for ring, X, c in keys:
            pre = self._pre(ring, X, c)
            self._lapq[ring, X, c] = self._lap_qs(ring, X, c, pre)  # None: a wait left out
            qs[ring, X, c] = (pre, self._rate_q(ring, X, c, pre),
                              self._bytes_q(ring, c, pre) if X == FULL else None,
                              [q for q in self._lapq[ring, X, c] if q is not None])
        stage_qs = {ring: self._stage_qs(ring) for ring in rings}
        bad = [q.bad for pre, rq, bq, lqs in qs.values() for q in (rq, bq, *lqs)
               if isinstance(q, _Q)] + [q.bad for v in stage_qs.values() for q in v]
        quiet = not bad or self._solve([z3.Or(*bad)]) is None
        out = []
        for ring in rings:
            for X in (FULL, EMPTY):
                for c in range(self.K):
                    pre, rq, bq, lqs = qs[ring, X, c]
                    rate_ok = self._prologue_rates(ring, X, c, pre, out)
                    if isinstance(rq, _Q):
                        rate_ok = rate_ok and (quiet or self._rates(ring, X, c, rq, out))
                    elif rq is None:
                        rate_ok = False  # not checked: neither are the bytes
                    if rate_ok and bq is not None and not quiet:
                        self._bytes(ring, c, bq, out)
                    if not quiet:
                        self._laps(ring, X, c, pre, lqs, out)
                    self._totals(ring, X, c, out)
            if not quiet:
                self._stages(ring, stage_qs[ring], out)
        self._barriers(out)
        return out
