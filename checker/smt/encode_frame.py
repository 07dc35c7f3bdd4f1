"""The BMC encoding's frames: the fields and their width (signed bit-vectors wide enough that
nothing wraps, or Ints), their initial values, which fields some action can change (the
others keep their initial constants), the predicates over one frame that steps and properties
are built from (at, enabled, finished, a signal ready, the state properties deadlock and
phase_alias), and a frame's values read back from a Z3 model. Signals go through the
registered backend's own functions over Z3 terms (`self.rules`, backends/protocol.py)."""
from __future__ import annotations

import z3

from pipeproof.backends.base import COMPLETED, EMPTY, FULL, RAN_AHEAD, TRAP_OVER_ARRIVAL, \
    TRAP_TX_RANGE
from pipeproof.checker.core import semantics as S
from pipeproof.checker.smt.encode_program import Instr
from pipeproof.checker.smt.encode_terms import Frame, _and, _b, _ite_of_constants, _or

# The frame's names of the signal words a backend's record names (`signal_fields`; bmc.py's
# frame check reads them back by these names); a word named otherwise keeps its own name.
WORD_NAMES = {"phase_no": "ph", "pending": "pend", "tx": "tx", "count": "cnt"}
OBSERVED = "obs"   # the fourth word: some wait or try saw the current phase (a Bool)


def signal_words(record) -> tuple:
    """(names, no_tx): the frame's name of each signal word (a, b, c, observed) that the
    backend's `signal_bounds` (backends/protocol.py) let leave 0, None for one they keep at 0
    (a constant: its initial value, not in the frame); and, per word, whether an update
    without tx bytes may change it (its bounds in a model without tx)."""
    names = [WORD_NAMES.get(n, n) for n in record.signal_fields]
    names += [f"w{i}" for i in range(len(names), 3)] + [OBSERVED]
    bounds = record.rules.signal_bounds(1, 1, 1, True)
    no_tx = tuple(b != (0, 0) for b in record.rules.signal_bounds(1, 1, 1, False))
    return tuple(n if b != (0, 0) else None for n, b in zip(names, bounds)), no_tx


def has_bit(outcome, bit):
    """Z3: an update's outcome (backends/base.py's bits: an int, or an if-then-else of ints as
    the backends write it) has `bit`: the same if-then-else over whether each value has it."""
    if isinstance(outcome, int):
        return z3.BoolVal(bool(outcome & bit))
    return _ite_of_constants(outcome, lambda value: value & bit)


class _Frames:
    """Fields and predicates on a frame (a part of encode.Encoding)."""

    def _width(self) -> int:
        """Bits for a signed bit-vector that holds every value a field or an intermediate
        result can take (so no bit-vector operation wraps): tx and a tx update (up to the
        trap limit plus the largest byte count), phase numbers and barrier generations (at
        most one per step), counters and the constants the wait rule compares them with
        (`_wait_constants`), item tags, counts."""
        ops = [ins.op for prog in self.progs for ins in prog]
        biggest = max([op.n for op in ops] + [1])
        steps = self.longest_run_bound + 2
        values = [self.rules.TX_LIMIT + biggest, steps * biggest * self.ctas,
                  int(self.T.ring[:, 1:].max()), int(self.T.bar_count.max()) + steps]
        return max(values + self._wait_constants()).bit_length() + 2

    def _wait_constants(self) -> list:
        """The constants the backend's wait rule compares a signal with, at every wait and
        try of the unrolled programs (their phases are static): a counter's threshold, up to
        (2^32 - 1) times the count where thresholds wrap in UInt32 (docs/rules.md "AMD
        counters"); small numbers for a parity wait."""
        words = [z3.Int(f"word{i}") for i in range(3)]
        waits = {(ins.phase, ins.eff.observes, self.expected(ins.ring, ins.eff.observes))
                 for prog in self.progs for ins in prog if ins.eff.observes >= 0}
        out = []
        for phase, kind, expected in sorted(waits):
            todo = [_b(self.rules.signal_ready(*words, expected, phase, kind))]
            while todo:
                t = todo.pop()
                if z3.is_int_value(t):
                    out.append(abs(t.as_long()))
                todo.extend(t.children())
        return out

    def num(self, x: int):
        return z3.BitVecVal(x, self.width) if self.width else z3.IntVal(x)

    def var(self, name: str):
        return z3.BitVec(name, self.width) if self.width else z3.Int(name)

    def sig_keys(self):
        for c in range(self.ctas):
            for r in range(self.rings):
                for s in range(self.stages[r]):
                    for kind in (FULL, EMPTY):
                        yield (c, r, s, kind)

    def window_keys(self):
        """(agent, ring, stage, kind) of every (k', ph') record the explicit state keeps."""
        for a in range(self.A):
            for r in range(self.rings):
                for s in range(self.stages[r]):
                    for kind in (FULL, EMPTY):
                        if self.window(a, r, s, kind):
                            yield (a, r, s, kind)

    def expected(self, r: int, kind: int) -> int:
        return int(self.T.ring[r, S.R_FULL_COUNT if kind == FULL else S.R_EMPTY_COUNT])

    def initial(self) -> Frame:
        v = {}
        for a in range(self.A):
            for k in range(1, self.lens[a] + 1):
                v[("ge", a, k)] = False  # the order encoding of the position: pos >= k
            v[("sync", a)] = False
            for r in range(self.rings):
                v[("ready", a, r)] = False
            for b in range(self.n_bar):
                v[("arr", a, b)] = 0
        for key in self.sig_keys():
            words = self.rules.init(self.expected(key[1], key[3])) + (False,)
            for name, value in zip(self.sig_words, words):
                if name:
                    v[(name,) + key] = value
        for c in range(self.ctas):
            for r in range(self.rings):
                for s in range(self.stages[r]):
                    for p in self.parts_in[(c, r)]:
                        v[("slot", c, r, s, p)] = -1
        for key in self.window_keys():  # (k', ph') = (-(p0 mod 2), p0): no wait passed yet
            p0 = int(self.model.agents[key[0]].initial_phases[key[1]])
            v[("wk",) + key], v[("wp",) + key] = -(p0 % 2), p0
        for b in range(self.n_bar):
            for c in range(self.ctas):
                v[("bar", b, c)] = 0
                v[("gen", b, c)] = 0
        for i in range(self.I):
            v[("inf", i)] = False
        frame = Frame({})
        for name, value in v.items():
            frame.v[name] = (z3.BoolVal(value) if isinstance(value, bool) else self.num(int(value)))
        return frame

    def _changing_fields(self) -> set:
        """Fields some action can write (the others keep their initial constants)."""
        ch = set()
        for a, prog in enumerate(self.progs):
            cta = self.model.agents[a].cta
            ch |= {("ge", a, k) for k in range(1, self.lens[a] + 1)}
            for ins in prog:
                c, r, s = cta, ins.ring, ins.stage
                e = ins.eff
                if e.barrier == "sync":
                    ch.add(("sync", a))
                if e.tries:
                    ch.add(("ready", a, r))
                if e.barrier in ("sync", "arrive"):
                    b = self.barrier_index(ins)
                    ch |= {("bar", b, c), ("gen", b, c)}
                    if e.barrier == "arrive":
                        ch.add(("arr", a, b))
                if e.observes >= 0 and self.sig_words[3]:  # a wait notes the phase seen
                    ch.add((self.sig_words[3], c, r, s, e.observes))
                if e.observes >= 0 and self.window(a, r, s, e.observes):
                    ch |= {("wk", a, r, s, e.observes), ("wp", a, r, s, e.observes)}
                if e.updates >= 0 and not e.issues:  # an update now (an issued one: below)
                    for d in self._targets(a, ins):
                        ch |= self._sig_fields((d, r, s, e.updates), e.tx > 0)
                if e.stores and e.issues != "copy":  # a write, an async write (at issue)
                    ch |= {("slot", d, r, s, p) for d in self._targets(a, ins)
                           for p in self.stored_parts(d, r, ins.part)}
        for i, inst in enumerate(self.instances):
            ch.add(("inf", i))
            key = (inst.cta, inst.ring, inst.stage)
            if inst.kind == S.ENTRY_COPY:
                ch |= {("slot",) + key + (p,)
                       for p in self.stored_parts(inst.cta, inst.ring, inst.part)}
                ch |= self._sig_fields(key + (FULL,), True)
            elif inst.kind == S.ENTRY_COMMIT:  # arrives on its signal (empty or full)
                ch |= self._sig_fields(key + (inst.signal,), False)
        return ch

    def _sig_fields(self, key, tx: bool) -> set:
        """The fields of signal `key` an update (with tx bytes or without) may change."""
        return {(name,) + key for name, moves in zip(self.sig_words, self.sig_words_no_tx)
                if name and (tx or moves)}

    # ------------------------------------------------------------------ predicates on a frame

    def sig_terms(self, f: Frame, key) -> list:
        """The signal's words (a, b, c) in frame f: its fields, or the constants it keeps."""
        out = []
        for i, name in enumerate(self.sig_words[:3]):
            if name:
                out.append(f.v[(name,) + key])
            else:
                out.append(self.num(self.rules.init(self.expected(key[1], key[3]))[i]))
        return out

    def signal_update(self, f: Frame, key, count: int, tx_delta: int) -> tuple:
        """The backend's update of signal `key` in frame f, simplified: (over_arrival trap,
        tx_range trap, either trap, ran ahead, the new words (a, b, c), the new observed)."""
        obs = self.sig_words[3]
        observed = z3.If(f.v[(obs,) + key], self.num(1), self.num(0)) if obs else self.num(0)
        *words, outcome = self.rules.update(*self.sig_terms(f, key),
                                            self.expected(key[1], key[3]), count, tx_delta,
                                            observed)
        over = z3.simplify(has_bit(outcome, TRAP_OVER_ARRIVAL))
        out_of_range = z3.simplify(has_bit(outcome, TRAP_TX_RANGE))
        completes = z3.simplify(has_bit(outcome, COMPLETED))
        # a phase completed that no wait or try observed: the barrier ran ahead
        ahead = z3.simplify(has_bit(outcome, RAN_AHEAD))
        new_obs = z3.simplify(z3.If(completes, False, f.v[(obs,) + key])) if obs else None
        return (over, out_of_range, z3.simplify(_or([over, out_of_range])), ahead,
                [z3.simplify(w) for w in words], new_obs)

    def signal_ready(self, f: Frame, key, phase: int):
        c, r, s, kind = key
        return _b(self.rules.signal_ready(*self.sig_terms(f, key), self.expected(r, kind), phase,
                                          kind))

    def intended(self, f: Frame, a: int, ins: Instr):
        """The signal phase k agent a's wait or try `ins` means (semantics.intended): from its
        phase alone, or, for an agent with a `reset` of the ring, from its last passed wait
        (k', ph') by the backend's intended_after."""
        key = (a, ins.ring, ins.stage, ins.eff.observes)
        if ("wk",) + key not in f.v:
            return self.rules.intended_phase(ins.phase, ins.initial_phase)
        return self.rules.intended_after(f.v[("wk",) + key], f.v[("wp",) + key], ins.phase)

    def in_window(self, f: Frame, a: int, ins: Instr):
        """The signal of agent a's wait or try `ins` is in its phase window
        (semantics.in_phase_window; True itself where the backend's window holds every
        wait)."""
        key = self.sig_key(a, ins)
        return _b(self.rules.in_window_at(self.sig_terms(f, key)[0], self.intended(f, a, ins)))

    def out_of_window(self, f: Frame, a: int, ins: Instr):
        """Not in_window (False itself where the window holds every wait)."""
        w = self.in_window(f, a, ins)
        return z3.BoolVal(False) if z3.is_true(w) else z3.Not(w)

    def window_passed(self, f: Frame, a: int, ins: Instr):
        """The record (k', ph') after agent a's wait or try `ins` passed, or None when the agent
        keeps none (semantics.window_passed: (k, ph) while a reset of the ring may lie ahead,
        else (k - (ph - p0), p0))."""
        key = (a, ins.ring, ins.stage, ins.eff.observes)
        if ("wk",) + key not in f.v:
            return None
        k = self.intended(f, a, ins)
        if ins.pc <= int(S.reset_until(self.T, a, ins.ring)):
            return k, self.num(ins.phase)
        return k - (ins.phase - ins.initial_phase), self.num(ins.initial_phase)

    def sig_key(self, a: int, ins: Instr):
        return (self.model.agents[a].cta, ins.ring, ins.stage, ins.eff.observes)

    def skipped(self, f: Frame, a: int, ins: Instr):
        """A `wait_* unless=ready` whose agent's last try said ready takes its step unblocked."""
        if ins.op.unless_ready:  # (only waits take unless=ready)
            return f.v[("ready", a, ins.ring)]
        return z3.BoolVal(False)

    def barrier_index(self, ins: Instr) -> int:
        return self.model.barrier_names.index(ins.op.barrier)

    def reads_in_flight_before(self, f: Frame, a: int, k: int):
        """How many of agent a's async reads issued before position k are in flight."""
        terms = [z3.If(f.v[("inf", i)], self.num(1), self.num(0)) for kk, i in self.reads_of[a] if kk < k]
        return z3.Sum(terms) if terms else self.num(0)

    def enabled_at(self, f: Frame, a: int, k: int):
        """Is agent a's op at position k enabled (given the agent is at k and not at a sync)?"""
        return f.once(("en", a, k), lambda: self._enabled_at(f, a, k))

    def _enabled_at(self, f: Frame, a: int, k: int):
        ins = self.progs[a][k]
        cta = self.model.agents[a].cta
        e = ins.eff
        if e.observes >= 0 and e.blocks:
            en = _or([self.skipped(f, a, ins), self.signal_ready(f, self.sig_key(a, ins), ins.phase)])
        elif e.waits_reads:
            en = self.reads_in_flight_before(f, a, k) <= ins.op.n
        elif e.barrier == "wait":
            b = self.barrier_index(ins)
            arrived = f.v[("arr", a, b)]
            en = f.v[("gen", b, cta)] >= z3.If(arrived >= 1, arrived, 1)
        else:
            en = z3.BoolVal(True)
        return z3.simplify(en)

    def at(self, f: Frame, a: int, k: int):
        return f.once(("at", a, k), lambda: _and([self.pos_ge(f, a, k), z3.Not(self.pos_ge(f, a, k + 1))]))

    def pos_ge(self, f: Frame, a: int, k: int):
        if k <= 0:
            return z3.BoolVal(True)
        if k > self.lens[a]:
            return z3.BoolVal(False)
        return f.v[("ge", a, k)]

    def finished(self, f: Frame, a: int):
        return self.pos_ge(f, a, self.lens[a])

    def position(self, vals: dict, a: int) -> int:
        """An agent's position in a frame's values (frame_values)."""
        return sum(1 for k in range(1, self.lens[a] + 1) if vals[("ge", a, k)])

    def agent_enabled(self, f: Frame, a: int):
        """Agent a can take a step in frame f."""
        return f.once(("enabled", a), lambda: self._agent_enabled(f, a))

    def _agent_enabled(self, f: Frame, a: int):
        by_guard = {}  # positions grouped by their enabling condition (most: none)
        for k in range(self.lens[a]):
            en = self.enabled_at(f, a, k)
            by_guard.setdefault(en.get_id(), (en, []))[1].append(k)
        cases = [_and([self.among(f, a, ks), en]) for en, ks in by_guard.values()]
        return _and([z3.Not(f.v[("sync", a)]), _or(cases)])

    def among(self, f: Frame, a: int, ks: list):
        """The agent's position is one of `ks` (runs of consecutive positions: one range test
        each)."""
        ranges, ks = [], sorted(ks)
        lo = prev = ks[0]
        for k in ks[1:] + [None]:
            if k is not None and k == prev + 1:
                prev = k
                continue
            ranges.append(_and([self.pos_ge(f, a, lo), z3.Not(self.pos_ge(f, a, prev + 1))]))
            if k is not None:
                lo = prev = k
        return _or(ranges)

    def instance_enabled(self, f: Frame, i: int):
        inst = self.instances[i]
        # reads finish oldest first; a commit waits for the reads and the commits its agent
        # issued before it (encode_program: waits_on)
        return _and([f.v[("inf", i)]] + [z3.Not(f.v[("inf", j)]) for j in self.waits_on[i]])

    def gone(self, f: Frame, cta: int):
        return f.once(("gone", cta), lambda: _and([self.finished(f, b) for b in self.cta_agents[cta]]))

    def targeted(self, f: Frame, cta: int):
        return _or([f.v[("inf", i)] for i in self.inst_to_cta[cta]])

    def exit_violation(self, f: Frame, cta: int):
        """What in flight into `cta` makes the step that leaves it gone inflight_at_exit
        (semantics.exit_inflight): an async read of one of its agents, or a copy or commit
        issued by another CTA; with strict_exit, anything (its own copies and commits too)."""
        return self.targeted(f, cta) if self.strict_exit else \
            _or([f.v[("inf", i)] for i in self.foreign_into[cta]])

    def anything_in_flight(self, f: Frame):
        return _or([f.v[("inf", i)] for i in range(self.I)])

    def state_kinds(self, f: Frame) -> dict:
        """Violation bit -> condition, for the properties of the state itself."""
        unfinished = _or([z3.Not(self.finished(f, a)) for a in range(self.A)])
        stuck = _and([z3.Not(self.agent_enabled(f, a)) for a in range(self.A)])
        out = {S.DEADLOCK: _and([unfinished, z3.Not(self.anything_in_flight(f)), stuck])}
        alias = []
        for a, prog in enumerate(self.progs):
            for k, ins in enumerate(prog):
                if ins.eff.observes >= 0 and ins.eff.blocks:  # a wait or a drain step
                    bad = self.out_of_window(f, a, ins)
                    if not z3.is_false(bad):  # (a window that holds every wait: none)
                        alias.append(_and([self.at(f, a, k), z3.Not(self.skipped(f, a, ins)),
                                           bad]))
        if alias:
            out[S.PHASE_ALIAS] = _or(alias)
        return out

    # ------------------------------------------------------------------ reading a model back

    def frame_values(self, m: z3.ModelRef, f: Frame) -> dict:
        out = {}
        for name, term in f.v.items():
            val = m.eval(term, model_completion=True)
            out[name] = z3.is_true(val) if z3.is_bool(val) else (
                val.as_signed_long() if z3.is_bv(val) else val.as_long())
        return out
