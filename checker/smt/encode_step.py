"""The BMC encoding's step t -> t+1: one chosen action (an agent's current op, or an in-flight
instance landing / firing / finishing), the next frame's fields as if-then-else over the
actions that write them, the violation bits each action commits, when it traps, and what it
touches (its footprint, for the partial-order reduction)."""
from __future__ import annotations

import z3

from pipeproof.backends import nvidia as nvidia_backend
from pipeproof.backends.base import FULL
from pipeproof.checker.core import semantics as S
from pipeproof.checker.smt.encode_frame import AM, NV
from pipeproof.checker.smt.encode_terms import (Choice, Frame, Step, _and, _b, _group, _name, _or,
                                                _ungroup)

KIND_BITS = (S.DEADLOCK, S.READ_BEFORE_FILL, S.OVERWRITE_BEFORE_DRAIN, S.PHASE_ALIAS,
             S.OVER_ARRIVAL, S.TX_RANGE, S.INFLIGHT_AT_EXIT)


class _Steps:
    """One step of the transition relation (a part of encode.Encoding)."""

    def step(self, f: Frame, t: int) -> Step:
        A = self.A
        act = Choice(f"act@{t}", A + self.I)
        upd = {}      # field -> value -> conditions (exclusive: one action per step)
        bits = {}     # violation bit -> extra condition -> conditions of the actions
        trap = {}
        guards = act.constraints()
        moves = {a: [] for a in range(A)}      # conditions under which pos_a advances by one
        blocks = {a: [] for a in range(A)}     # ... under which agent a blocks at a sync
        exit_checks = []                      # (cond, cta): the step finishes its agent
        foot = {}

        def put(name, cond, value):
            _group(upd.setdefault(name, {}), cond, value, drop_false=False)

        def touch(resource, mode, cond):
            foot.setdefault(resource, {}).setdefault(mode, []).append(cond)

        def bit(b, cond, extra=True):
            _group(bits.setdefault(b, {}), cond, _b(extra))

        updates = {}  # (signal, count, tx) -> the backend's update of this frame's signal

        def signal_update(key, cond, count, tx_delta):
            touch(("sig",) + key, ("upd", count, tx_delta) if self.parity else ("inc",), cond)
            if not self.parity:
                put(("cnt",) + key, cond, AM.arrive(f.v[("cnt",) + key], count))
                return
            if (key, count, tx_delta) not in updates:
                ph, pend, tx, obs = (f.v[(n,) + key] for n in ("ph", "pend", "tx", "obs"))
                expected = self.expected(key[1], key[3])
                nph, npend, ntx, outcome = NV.update(ph, pend, tx, expected, count, tx_delta)
                over = z3.simplify(outcome == NV.TRAP_OVER_ARRIVAL)
                out_of_range = z3.simplify(outcome == NV.TRAP_TX_RANGE)
                completes = z3.simplify(outcome == NV.COMPLETED)
                # a phase completed that no wait or try observed: the barrier ran ahead
                ahead = z3.simplify(_and([completes, ph >= 1, z3.Not(obs)]))
                updates[(key, count, tx_delta)] = (
                    over, out_of_range, z3.simplify(_or([over, out_of_range])), ahead,
                    z3.simplify(nph), z3.simplify(npend), z3.simplify(ntx),
                    z3.simplify(z3.If(completes, False, obs)))
            over, out_of_range, traps, ahead, nph, npend, ntx, nobs = updates[(key, count, tx_delta)]
            bit(S.OVER_ARRIVAL, cond, over)
            bit(S.TX_RANGE, cond, out_of_range)
            _group(trap, cond, traps)
            bit(S.OVER_ARRIVAL, cond, ahead)
            put(("ph",) + key, cond, nph)
            put(("pend",) + key, cond, npend)
            if ("tx",) + key in self._changing:
                put(("tx",) + key, cond, ntx)
            put(("obs",) + key, cond, nobs)

        def store_tag(cond, cta, r, s, part, tag):
            """A fill stores `tag` into its part (-1: every part) of slot (cta, r, s);
            overwrite_before_drain when a part it stores over holds a tag that a reader still
            has to read there (semantics.store_tag, judged per part)."""
            still = []
            for p in self.stored_parts(cta, r, part):
                touch(("slot", cta, r, s, p), ("set", tag), cond)
                old = f.v[("slot", cta, r, s, p)]
                for (b, k, item, is_async) in self.readers.get((cta, r, s), []):
                    if item == tag:
                        continue
                    pending = z3.Not(self.pos_ge(f, b, k + 1))
                    if is_async:
                        pending = _or([pending, f.v[("inf", self.inst_of[(b, k, cta)])]])
                    still.append(_and([old == item, pending]))
                put(("slot", cta, r, s, p), cond, self.num(tag))
            if still:
                bit(S.OVERWRITE_BEFORE_DRAIN, cond, _or(still))

        def window_passed(cond, a, ins):
            """A passed wait or ready try records (k', ph') (encode_frame.window_passed)."""
            rec = self.window_passed(f, a, ins)
            if rec is not None:
                key = (a, ins.ring, ins.stage, ins.eff.observes)
                put(("wk",) + key, cond, z3.simplify(rec[0]))
                put(("wp",) + key, cond, rec[1])

        # ---------------------------------------------------------- agents
        for a, prog in enumerate(self.progs):
            cta = self.model.agents[a].cta
            chosen = act.is_(a)
            touch(("agent", a), ("w",), chosen)
            guards.append(z3.Implies(chosen, self.agent_enabled(f, a)))
            for k, ins in enumerate(prog):
                cond = _and([chosen, self.at(f, a, k)])
                e, r, s = ins.eff, ins.ring, ins.stage
                blocked = None
                if k > 0 and prog[k - 1].eff.barrier == "sync":
                    # maybe released by another agent's sync in the step just before
                    touch(("bar", self.barrier_index(prog[k - 1]), cta), ("r",), cond)
                # -- what it observes: a wait notes the phase seen; a try also records ready
                if e.observes >= 0:
                    key = self.sig_key(a, ins)
                    touch(("sig",) + key, ("r",), cond)
                    if e.blocks:
                        waits = _and([cond, z3.Not(self.skipped(f, a, ins))])
                        if self.parity:
                            put(("obs",) + key, waits, z3.BoolVal(True))
                        window_passed(waits, a, ins)
                    else:
                        ok = self.signal_ready(f, key, ins.phase)
                        put(("ready", a, r), cond, ok)
                        window_passed(_and([cond, ok]), a, ins)
                        if self.parity:
                            put(("obs",) + key, _and([cond, ok]), z3.BoolVal(True))
                            bit(S.PHASE_ALIAS, cond, z3.Not(self.in_window(f, a, ins)))
                # -- its update at each target CTA: now, or by the instance it issues
                if e.tx and ins.op.n > nvidia_backend.TX_LIMIT:
                    bit(S.TX_RANGE, cond)
                    _group(trap, cond, z3.BoolVal(True))
                if e.updates >= 0:
                    count = ins.op.n if e.units == -1 else e.units
                    tx = ins.op.n if e.tx > 0 else 0
                    for d in self._targets(a, ins):
                        bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
                        if not e.issues:
                            signal_update((d, r, s, e.updates), cond, count, tx)
                            continue
                        put(("inf", self.inst_of[(a, k, d)]), cond, z3.BoolVal(True))
                        touch(("inf", self.inst_of[(a, k, d)]), ("w",), cond)
                # -- the slot: a store now (a copy's lands with its instance), a read's check
                if e.stores and not e.issues:
                    store_tag(cond, cta, r, s, ins.part, ins.tag)
                if e.checks_read:
                    # a checked part holds another tag, or any copy into the slot is in flight
                    # (semantics.read_miss, copy_in_flight_to)
                    miss = [f.v[("slot", cta, r, s, p)] != ins.tag
                            for p in self.checked_parts(cta, r, s, ins.tag)]
                    landing = [f.v[("inf", i)] for i in self.copies_into.get((cta, r, s), [])]
                    bit(S.READ_BEFORE_FILL, cond, _or(miss + landing))
                    if e.issues == "read":
                        put(("inf", self.inst_of[(a, k, cta)]), cond, z3.BoolVal(True))
                        touch(("inf", self.inst_of[(a, k, cta)]), ("w",), cond)
                # -- what it waits for besides a signal: its reads, a barrier's generation
                if e.waits_reads:
                    for kk, j in self.reads_of[a]:
                        if kk < k:
                            touch(("inf", j), ("r",), cond)
                if e.barrier == "wait":
                    touch(("bar", self.barrier_index(ins), cta), ("r",), cond)
                elif e.barrier:  # sync, sync_arrive: an arrival
                    b = self.barrier_index(ins)
                    touch(("bar", b, cta), ("w",), cond)
                    arrivals, gen = f.v[("bar", b, cta)], f.v[("gen", b, cta)]
                    completes = arrivals + 1 >= int(self.T.bar_count[b, cta])
                    if e.barrier == "arrive":
                        put(("arr", a, b), cond, gen + 1)
                    put(("bar", b, cta), cond, z3.If(completes, 0, arrivals + 1))
                    put(("gen", b, cta), cond, z3.If(completes, gen + 1, gen))
                    if e.barrier == "sync":
                        blocked = z3.Not(completes)
                        blocks[a].append(_and([cond, blocked]))
                    # the last arrival releases every agent of the CTA blocked on this barrier
                    for x in self.cta_agents[cta]:
                        if x == a:
                            continue
                        at_b = [self.at(f, x, q) for q, other in enumerate(self.progs[x])
                                if other.eff.barrier == "sync" and self.barrier_index(other) == b]
                        if at_b:
                            moves[x].append(_and([cond, completes, f.v[("sync", x)], _or(at_b)]))
                # (its stage moved in the unrolled program: nothing beyond the position)
                goes_on = cond if blocked is None else _and([cond, z3.Not(blocked)])
                moves[a].append(goes_on)
                if k + 1 == self.lens[a]:
                    exit_checks.append((goes_on, cta))

        # ---------------------------------------------------------- in-flight instances
        for i, inst in enumerate(self.instances):
            cond = act.is_(A + i)
            guards.append(z3.Implies(cond, self.instance_enabled(f, i)))
            put(("inf", i), cond, z3.BoolVal(False))
            touch(("inf", i), ("w",), cond)
            for j in self.waits_on[i]:  # its agent's earlier reads (and commits) it waits for
                touch(("inf", j), ("r",), cond)
            if inst.kind == S.ENTRY_READ:
                continue
            d, r, s = inst.cta, inst.ring, inst.stage
            if self.strict_exit:
                # a landing or firing into a gone CTA: by itself a violation only in the strict
                # reading (else a peer's entry was reported at the exit or at its issue, and
                # an own one is the exit's warning: semantics.fire_entry)
                bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
            if inst.kind == S.ENTRY_COPY:
                store_tag(cond, d, r, s, inst.part, inst.value)
                signal_update((d, r, s, FULL), cond, 0, -inst.nbytes)
            else:
                signal_update((d, r, s, inst.signal), cond, inst.value, 0)  # a commit

        # ---------------------------------------------------------- the next frame
        nxt = Frame(dict(f.v))
        constraints = list(guards)
        stray = set(upd) - self._changing
        assert not stray, f"internal: fields written but not declared changing: {sorted(stray)}"
        for name in sorted(self._changing, key=repr):
            if name[0] in ("ge", "sync"):
                continue
            writes = upd.get(name)
            if not writes:
                continue
            cur = f.v[name]
            var = z3.Bool(f"{_name(name)}@{t + 1}") if z3.is_bool(cur) else self.var(f"{_name(name)}@{t + 1}")
            value = cur
            for new, conds in writes.values():
                value = z3.If(_or(conds), new, value)
            constraints.append(var == value)
            nxt.v[name] = var
        for a in range(A):
            move = _or(moves[a])
            if self.lens[a]:
                mv = z3.Bool(f"moves{a}@{t}")
                constraints.append(mv == move)
            for k in range(1, self.lens[a] + 1):
                ge = z3.Bool(f"ge{a}_{k}@{t + 1}")
                constraints.append(ge == _or([f.v[("ge", a, k)], _and([mv, self.pos_ge(f, a, k - 1)])]))
                nxt.v[("ge", a, k)] = ge
            if ("sync", a) in self._changing:
                sync = z3.Bool(f"sync{a}@{t + 1}")
                constraints.append(sync == z3.If(_or(blocks[a]), True,
                                                 z3.If(_or(moves[a]), False, f.v[("sync", a)])))
                nxt.v[("sync", a)] = sync
        # the step that finishes the last agent of a CTA while an async read of its agents or
        # a peer's copy or commit still targets it (with strict_exit: anything); its own copies
        # and commits alone are the warning unawaited_at_exit, which BMC does not report
        for cond, cta in exit_checks:
            bit(S.INFLIGHT_AT_EXIT, cond,
                _and([self.gone(nxt, cta), self.exit_violation(nxt, cta)]))
        kinds = {b: _ungroup(bits.get(b, {})) for b in KIND_BITS if b != S.DEADLOCK}
        return Step(act, nxt, kinds, _ungroup(trap), constraints, foot)
