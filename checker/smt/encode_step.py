"""The BMC encoding's step t -> t+1: one chosen action (an agent's current op, or an in-flight
instance landing / firing / finishing), the next frame's fields as if-then-else over the
actions that write them, the violation bits each action commits, when it traps, and what it
touches (its footprint, for the partial-order reduction)."""
from __future__ import annotations

import z3

from pipeproof.backends.base import FULL
from pipeproof.checker.core import semantics as S
from pipeproof.checker.smt.encode_terms import (Choice, Frame, Step, _and, _b, _group, _name, _or,
                                                _ungroup)

KIND_BITS = (S.DEADLOCK, S.READ_BEFORE_FILL, S.OVERWRITE_BEFORE_DRAIN, S.PHASE_ALIAS,
             S.OVER_ARRIVAL, S.TX_RANGE, S.INFLIGHT_AT_EXIT)


class _Parts:
    """What one step collects while its actions are encoded: the writes of each field, the
    violation bits and traps, the guards, how each agent's position moves, and the footprint
    (exclusive conditions: one action per step)."""

    def __init__(self, act: Choice, A: int):
        self.act = act
        self.upd = {}      # field -> value -> conditions (exclusive: one action per step)
        self.bits = {}     # violation bit -> extra condition -> conditions of the actions
        self.trap = {}
        self.guards = act.constraints()
        self.moves = {a: [] for a in range(A)}    # conditions under which pos_a advances by one
        self.blocks = {a: [] for a in range(A)}   # ... under which agent a blocks at a sync
        self.exit_checks = []                    # (cond, cta): the step finishes its agent
        self.foot = {}
        self.updates = {}  # (signal, count, tx) -> the backend's update of this frame's signal

    def put(self, name, cond, value):
        _group(self.upd.setdefault(name, {}), cond, value, drop_false=False)

    def touch(self, resource, mode, cond):
        self.foot.setdefault(resource, {}).setdefault(mode, []).append(cond)

    def bit(self, b, cond, extra=True):
        _group(self.bits.setdefault(b, {}), cond, _b(extra))


class _Steps:
    """One step of the transition relation (a part of encode.Encoding)."""

    def step(self, f: Frame, t: int) -> Step:
        P = _Parts(Choice(f"act@{t}", self.A + self.I), self.A)
        for a, prog in enumerate(self.progs):
            chosen = P.act.is_(a)
            P.touch(("agent", a), ("w",), chosen)
            P.guards.append(z3.Implies(chosen, self.agent_enabled(f, a)))
            for k, ins in enumerate(prog):
                self._agent_op(f, P, a, k, ins, _and([chosen, self.at(f, a, k)]))
        for i in range(self.I):
            self._instance_step(f, P, i)
        return self._next_frame(f, t, P)

    # ---------------------------------------------------------- agents

    def _agent_op(self, f: Frame, P: _Parts, a: int, k: int, ins, cond):
        """Agent a taking its op at position k (`ins`) under `cond`."""
        prog, cta = self.progs[a], self.model.agents[a].cta
        e, r, s = ins.eff, ins.ring, ins.stage
        blocked = None
        if k > 0 and prog[k - 1].eff.barrier == "sync":
            # maybe released by another agent's sync in the step just before
            P.touch(("bar", self.barrier_index(prog[k - 1]), cta), ("r",), cond)
        if e.observes >= 0:
            self._observes(f, P, a, ins, cond)
        # -- its update at each target CTA: now, or by the instance it issues
        if e.tx and ins.op.n > self.rules.TX_LIMIT:
            P.bit(S.TX_RANGE, cond)
            _group(P.trap, cond, z3.BoolVal(True))
        if e.updates >= 0:
            count = ins.op.n if e.units == -1 else e.units
            tx = ins.op.n if e.tx > 0 else 0
            for d in self._targets(a, ins):
                P.bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
                if not e.issues:
                    self._signal_update(f, P, (d, r, s, e.updates), cond, count, tx)
                    continue
                P.put(("inf", self.inst_of[(a, k, d)]), cond, z3.BoolVal(True))
                P.touch(("inf", self.inst_of[(a, k, d)]), ("w",), cond)
        self._slot_op(f, P, a, k, ins, cond)
        # -- what it waits for besides a signal: its reads, a barrier's generation
        if e.waits_reads:
            for kk, j in self.reads_of[a]:
                if kk < k:
                    P.touch(("inf", j), ("r",), cond)
        if e.barrier == "wait":
            P.touch(("bar", self.barrier_index(ins), cta), ("r",), cond)
        elif e.barrier:  # sync, sync_arrive: an arrival
            blocked = self._barrier_arrival(f, P, a, ins, cond)
        # (its stage moved in the unrolled program: nothing beyond the position)
        goes_on = cond if blocked is None else _and([cond, z3.Not(blocked)])
        P.moves[a].append(goes_on)
        if k + 1 == self.lens[a]:
            P.exit_checks.append((goes_on, cta))

    def _observes(self, f: Frame, P: _Parts, a: int, ins, cond):
        """What a wait or try observes: a wait notes the phase seen; a try also records ready
        (and is phase_alias outside its window)."""
        key = self.sig_key(a, ins)
        P.touch(("sig",) + key, ("r",), cond)
        obs = self.sig_words[3]  # (None: the backend keeps no observed)
        if ins.eff.blocks:
            waits = _and([cond, z3.Not(self.skipped(f, a, ins))])
            if obs:
                P.put((obs,) + key, waits, z3.BoolVal(True))
            self._window_passed(f, P, waits, a, ins)
        else:
            ok = self.signal_ready(f, key, ins.phase)
            P.put(("ready", a, ins.ring), cond, ok)
            self._window_passed(f, P, _and([cond, ok]), a, ins)
            if obs:
                P.put((obs,) + key, _and([cond, ok]), z3.BoolVal(True))
            P.bit(S.PHASE_ALIAS, cond, self.out_of_window(f, a, ins))

    def _window_passed(self, f: Frame, P: _Parts, cond, a, ins):
        """A passed wait or ready try records (k', ph') (encode_frame.window_passed)."""
        rec = self.window_passed(f, a, ins)
        if rec is not None:
            key = (a, ins.ring, ins.stage, ins.eff.observes)
            # (a counter backend's intended phase can be a plain number: no expression to simplify)
            k = rec[0]
            P.put(("wk",) + key, cond, z3.simplify(k) if z3.is_expr(k) else self.num(k))
            P.put(("wp",) + key, cond, rec[1])

    def _signal_update(self, f: Frame, P: _Parts, key, cond, count, tx_delta):
        """The backend's update of signal `key` (its traps, a run ahead, the new words)."""
        # counters' increments commute (the partial-order reduction's argument), other
        # updates only with the identical update
        P.touch(("sig",) + key, ("inc",) if self.signal_model == "counter"
                else ("upd", count, tx_delta), cond)
        if (key, count, tx_delta) not in P.updates:
            P.updates[(key, count, tx_delta)] = self.signal_update(f, key, count, tx_delta)
        over, out_of_range, traps, ahead, words, nobs = P.updates[(key, count, tx_delta)]
        P.bit(S.OVER_ARRIVAL, cond, over)
        P.bit(S.TX_RANGE, cond, out_of_range)
        _group(P.trap, cond, traps)
        P.bit(S.OVER_ARRIVAL, cond, ahead)
        for name, value in zip(self.sig_words, words + [nobs]):
            if name and (name,) + key in self._changing:
                P.put((name,) + key, cond, value)

    def _slot_op(self, f: Frame, P: _Parts, a: int, k: int, ins, cond):
        """The slot: a store now (a copy's lands with its instance; an async write's is now,
        its slot busy until its instance finishes), a read's check."""
        cta, e, r, s = self.model.agents[a].cta, ins.eff, ins.ring, ins.stage
        if e.stores and e.issues != "copy":  # a write, or an async write's store at issue,
            for d in self._targets(a, ins):   # at each of its to= CTAs (a gone one: exit)
                if d != cta:
                    P.bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
                self._store_tag(f, P, cond, d, r, s, ins.part, ins.tag)
        if e.checks_read:
            # a checked part holds another tag, or a copy into the slot or an async write of
            # it is in flight (semantics.read_miss, fill_in_flight_to)
            miss = [f.v[("slot", cta, r, s, p)] != ins.tag
                    for p in self.checked_parts(cta, r, s, ins.tag)]
            landing = [f.v[("inf", i)] for i in self.fills_into.get((cta, r, s), [])]
            P.bit(S.READ_BEFORE_FILL, cond, _or(miss + landing))
        if e.issues == "read":   # an async read's or async write's instances (one per target)
            for d in self._issue_targets(a, ins):
                P.put(("inf", self.inst_of[(a, k, d)]), cond, z3.BoolVal(True))
                P.touch(("inf", self.inst_of[(a, k, d)]), ("w",), cond)

    def _store_tag(self, f: Frame, P: _Parts, cond, cta, r, s, part, tag):
        """A fill stores `tag` into its part (-1: every part) of slot (cta, r, s);
        overwrite_before_drain when a part it stores over holds a tag that a reader still
        has to read there (semantics.store_tag, judged per part)."""
        still = []
        for p in self.stored_parts(cta, r, part):
            P.touch(("slot", cta, r, s, p), ("set", tag), cond)
            old = f.v[("slot", cta, r, s, p)]
            for (b, k, item, is_async) in self.readers.get((cta, r, s), []):
                if item == tag:
                    continue
                pending = z3.Not(self.pos_ge(f, b, k + 1))
                if is_async:
                    pending = _or([pending, f.v[("inf", self.inst_of[(b, k, cta)])]])
                still.append(_and([old == item, pending]))
            P.put(("slot", cta, r, s, p), cond, self.num(tag))
        if still:
            P.bit(S.OVERWRITE_BEFORE_DRAIN, cond, _or(still))

    def _barrier_arrival(self, f: Frame, P: _Parts, a: int, ins, cond):
        """A `sync` or `sync_arrive` on a named barrier: the arrival, the generation it may
        complete (releasing every agent of the CTA blocked there); for a `sync`, the
        condition under which it blocks (else None)."""
        cta, e = self.model.agents[a].cta, ins.eff
        b = self.barrier_index(ins)
        P.touch(("bar", b, cta), ("w",), cond)
        arrivals, gen = f.v[("bar", b, cta)], f.v[("gen", b, cta)]
        completes = arrivals + 1 >= int(self.T.bar_count[b, cta])
        if e.barrier == "arrive":
            P.put(("arr", a, b), cond, gen + 1)
        P.put(("bar", b, cta), cond, z3.If(completes, 0, arrivals + 1))
        P.put(("gen", b, cta), cond, z3.If(completes, gen + 1, gen))
        blocked = None
        if e.barrier == "sync":
            blocked = z3.Not(completes)
            P.blocks[a].append(_and([cond, blocked]))
        # the last arrival releases every agent of the CTA blocked on this barrier
        for x in self.cta_agents[cta]:
            if x == a:
                continue
            at_b = [self.at(f, x, q) for q, other in enumerate(self.progs[x])
                    if other.eff.barrier == "sync" and self.barrier_index(other) == b]
            if at_b:
                P.moves[x].append(_and([cond, completes, f.v[("sync", x)], _or(at_b)]))
        return blocked

    # ---------------------------------------------------------- in-flight instances

    def _instance_step(self, f: Frame, P: _Parts, i: int):
        """Instance i landing (a copy), firing (a commit) or finishing (an async read)."""
        inst = self.instances[i]
        cond = P.act.is_(self.A + i)
        P.guards.append(z3.Implies(cond, self.instance_enabled(f, i)))
        P.put(("inf", i), cond, z3.BoolVal(False))
        P.touch(("inf", i), ("w",), cond)
        for j in self.waits_on[i]:  # its agent's earlier reads (and commits) it waits for
            P.touch(("inf", j), ("r",), cond)
        if inst.kind == S.ENTRY_READ:
            return
        d, r, s = inst.cta, inst.ring, inst.stage
        if self.strict_exit:
            # a landing or firing into a gone CTA: by itself a violation only in the strict
            # reading (else a peer's entry was reported at the exit or at its issue, and
            # an own one is the exit's warning: semantics.fire_entry)
            P.bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
        if inst.kind == S.ENTRY_COPY:
            self._store_tag(f, P, cond, d, r, s, inst.part, inst.value)
            self._signal_update(f, P, (d, r, s, FULL), cond, 0, -inst.nbytes)
        else:
            self._signal_update(f, P, (d, r, s, inst.signal), cond, inst.value, 0)  # a commit

    # ---------------------------------------------------------- the next frame

    def _next_frame(self, f: Frame, t: int, P: _Parts) -> Step:
        """The next frame's fields as if-then-else over the writes, the positions, the
        exits' violations; the Step."""
        nxt = Frame(dict(f.v))
        constraints = list(P.guards)
        stray = set(P.upd) - self._changing
        assert not stray, f"internal: fields written but not declared changing: {sorted(stray)}"
        for name in sorted(self._changing, key=repr):
            if name[0] in ("ge", "sync"):
                continue
            writes = P.upd.get(name)
            if not writes:
                continue
            cur = f.v[name]
            var = z3.Bool(f"{_name(name)}@{t + 1}") if z3.is_bool(cur) else self.var(f"{_name(name)}@{t + 1}")
            value = cur
            for new, conds in writes.values():
                value = z3.If(_or(conds), new, value)
            constraints.append(var == value)
            nxt.v[name] = var
        for a in range(self.A):
            move = _or(P.moves[a])
            if self.lens[a]:
                mv = z3.Bool(f"moves{a}@{t}")
                constraints.append(mv == move)
            for k in range(1, self.lens[a] + 1):
                ge = z3.Bool(f"ge{a}_{k}@{t + 1}")
                constraints.append(ge == _or([f.v[("ge", a, k)], _and([mv, self.pos_ge(f, a, k - 1)])]))
                nxt.v[("ge", a, k)] = ge
            if ("sync", a) in self._changing:
                sync = z3.Bool(f"sync{a}@{t + 1}")
                constraints.append(sync == z3.If(_or(P.blocks[a]), True,
                                                 z3.If(_or(P.moves[a]), False, f.v[("sync", a)])))
                nxt.v[("sync", a)] = sync
        # the step that finishes the last agent of a CTA while an async read of its agents or
        # a peer's copy or commit still targets it (with strict_exit: anything); its own copies
        # and commits alone are the warning unawaited_at_exit, which BMC does not report
        for cond, cta in P.exit_checks:
            P.bit(S.INFLIGHT_AT_EXIT, cond,
                  _and([self.gone(nxt, cta), self.exit_violation(nxt, cta)]))
        kinds = {b: _ungroup(P.bits.get(b, {})) for b in KIND_BITS if b != S.DEADLOCK}
        return Step(P.act, nxt, kinds, _ungroup(P.trap), constraints, foot=P.foot)
