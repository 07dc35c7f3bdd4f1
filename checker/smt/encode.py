"""The explicit engine's transition relation (checker/semantics.py) as a symbolic transition
system over Z3 terms, for bounded model checking (checker/smt/bmc.py).

Programs. Every agent's program is finite, so it is unrolled once into the list of ops the agent
will execute (`Instr`: pc, item, op, and the stage and phase of the op's ring before it runs),
with the engine's own `settle_pc`/`next_pc` (guards, empty bodies, `drain` steps). An agent's
program position `pos` is an index into that list (`pos == len`: finished), held in the order
encoding (Bools `ge[k]` = pos >= k), and everything the explicit state keeps per agent that
follows from the position (pc, item, stage and phase per ring) is a static function of it. What
stays dynamic per agent is `ready` per ring, `at_sync`, and the generation of its last
`sync_arrive` per barrier.

In-flight entries are *instances*: one per async op of the unrolled program and destination
CTA (a `to=all` copy has one per CTA). Instance i is in flight iff its Bool is true; it is set
when its agent executes the op and cleared when it lands / fires / finishes. The explicit
engine keeps the same entries as a sorted multiset; the orders it imposes are kept here:
an agent's async reads finish oldest first, and a commit fires only after the reads its agent
issued before it have finished. Unlike the explicit engine there is no in-flight capacity.

Signals, slots and barriers are the explicit engine's fields, one term per step, as signed
bit-vectors wide enough that no operation wraps (`_width`; `WIDTH = 0` gives unbounded Ints
instead). Signal updates and readiness go through `smt.symbolic_backend(nvidia | amd)`, the
backends' own functions over Z3 terms; nothing about mbarriers or counters is written here.

Frames: `Frame.v` maps a field name to its term at one step. A field that no action can change
keeps its initial constant (so a spec without tx never mentions tx); a field some action can
change gets a fresh variable per step, constrained to an if-then-else over the actions that
write it (actions writing the same value share one branch).

Steps: step t -> t+1 chooses one action `act` (order-encoded, `Choice`): `act < A` is agent
`act` taking its current op; `act == A + i` is instance i landing / firing / finishing.
`Step.kinds` gives, per violation bit, the condition under which the step commits it;
`Step.trap` when it traps (no successor); `Encoding.state_kinds(frame)` the state properties
(deadlock, phase_alias).

Reductions (both only remove runs; bmc.py argues why the minimal depth and every kind at it
survive): `symmetry` (of two interchangeable agents in the same local state, the lower one moves
first) and `lex_order` / `canonical_order` (a run's prefix in the lexicographically least order
among the permutations of commuting steps; `Step.foot` records what each action touches).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import z3

from pipeproof.backends import amd as amd_backend
from pipeproof.backends import nvidia as nvidia_backend
from pipeproof.backends.base import AMD, EMPTY, FULL
from pipeproof.checker import semantics as S
from pipeproof.checker import smt
from pipeproof.checker.model import Model

WIDTH = None  # None: bit-vectors wide enough for every value (`_width`); 0: unbounded Ints
NV = smt.symbolic_backend(nvidia_backend)
AM = smt.symbolic_backend(amd_backend)

WAITS = (S.WAIT_FULL, S.WAIT_EMPTY, S.DRAIN)
TRIES = (S.TRY_FULL, S.TRY_EMPTY)
ARRIVES = (S.ARRIVE_FULL, S.ARRIVE_EMPTY, S.EXPECT_TX)
COMMUTING = ("r", "upd", "set", "inc")  # modes that commute with the same mode (canonical_order)
KIND_BITS = (S.DEADLOCK, S.READ_BEFORE_FILL, S.OVERWRITE_BEFORE_DRAIN, S.PHASE_ALIAS,
             S.OVER_ARRIVAL, S.TX_RANGE, S.INFLIGHT_AT_EXIT)


@dataclass(frozen=True)
class Instr:
    """One op an agent will execute: its program position and the static context it runs in."""
    pc: int
    item: int
    op: object          # spec.schema.Op
    code: int           # semantics op code
    ring: int
    stage: int          # stage of `ring` before the op runs
    phase: int          # phase of `ring` before the op runs
    initial_phase: int  # of `ring` (the phase_alias window needs it)
    tag: int            # fill/read: the tag it stores or expects (semantics.op_tag)


@dataclass(frozen=True)
class Instance:
    """An async op of the unrolled program aimed at one CTA: a copy, a commit or a read."""
    kind: int           # S.ENTRY_COPY | S.ENTRY_COMMIT | S.ENTRY_READ
    agent: int
    k: int              # position in the agent's unrolled program
    cta: int            # destination (a read's: the reader's CTA)
    ring: int
    stage: int
    value: int          # copy/read: the item (tag); commit: the arrive count n
    nbytes: int = 0     # copy only


@dataclass
class Frame:
    v: dict             # field name -> Z3 term at this step
    memo: dict = field(default_factory=dict)  # terms derived from v, built once

    def once(self, key, build):
        if key not in self.memo:
            self.memo[key] = build()
        return self.memo[key]


class Choice:
    """Which action a step takes, 0 <= act < n, in the order encoding: `ge[j]` is act >= j."""

    def __init__(self, name: str, n: int):
        self.n = n
        self.ge = [z3.BoolVal(True)] + [z3.Bool(f"{name}>={j}") for j in range(1, n)] + [z3.BoolVal(False)]

    def constraints(self):
        return [z3.Implies(self.ge[j + 1], self.ge[j]) for j in range(1, self.n - 1)]

    def is_(self, j: int):
        return _and([self.ge[j], z3.Not(self.ge[j + 1])])

    def above(self, other: "Choice"):
        """self > other."""
        return _or([_and([self.ge[j], z3.Not(other.ge[j])]) for j in range(1, self.n)])

    def value(self, m) -> int:
        return sum(1 for j in range(1, self.n) if z3.is_true(m.eval(self.ge[j], model_completion=True)))


@dataclass
class Step:
    act: Choice
    nxt: Frame
    kinds: dict                                  # violation bit -> Bool
    trap: z3.BoolRef
    constraints: list = field(default_factory=list)
    foot: dict = field(default_factory=dict)     # resource -> mode -> [cond] (canonical_order)
    _touches: dict = None

    def touches(self) -> dict:
        """resource -> mode -> the condition that this step touches it so."""
        if self._touches is None:
            self._touches = {res: {m: _or(conds) for m, conds in modes.items()}
                             for res, modes in self.foot.items()}
        return self._touches


_TRUE_TERM, _FALSE_TERM = z3.BoolVal(True), z3.BoolVal(False)  # kept alive: their addresses
_TRUE, _FALSE = _TRUE_TERM.ast.value, _FALSE_TERM.ast.value


def _nary(xs, unit: bool, make):
    """And (unit True) or Or (unit False) of Bool terms or Python bools, built straight through
    the C API: z3py's And/Or re-check every argument's sort, which dominated encoding time."""
    out = []
    skip, stop = (_TRUE, _FALSE) if unit else (_FALSE, _TRUE)
    for x in xs:
        if isinstance(x, bool):
            x = z3.BoolVal(x)
        p = x.ast.value  # Z3 shares terms: the constants have one address each
        if p == skip:
            continue
        if p == stop:
            return x
        out.append(x)
    if not out:
        return z3.BoolVal(unit)
    if len(out) == 1:
        return out[0]
    ctx = out[0].ctx
    args, n = z3.z3._to_ast_array(out)
    return z3.BoolRef(make(ctx.ref(), n, args), ctx)


def _or(xs):
    return _nary(xs, False, z3.z3core.Z3_mk_or)


def _and(xs):
    return _nary(xs, True, z3.z3core.Z3_mk_and)


def _group(groups: dict, cond, value, drop_false: bool = True) -> None:
    """Collect `cond` under `value` (equal Z3 terms are one group); a condition for a False
    violation or trap value is dropped."""
    if drop_false and z3.is_false(value):
        return
    key = value.get_id()
    if key not in groups:
        groups[key] = (value, [])
    groups[key][1].append(cond)


def _ungroup(groups: dict):
    """Or over the groups of (Or of their conditions) and their value, for Bool values."""
    return _or([_and([_or(conds), value]) for value, conds in groups.values()])


def _b(x):
    return z3.BoolVal(x) if isinstance(x, bool) else x


class Encoding:
    """The symbolic transition system of one compiled model."""

    def __init__(self, model: Model):
        self.model = model
        self.T = model.tables
        self.A = len(model.agents)
        self.nvidia = model.backend != AMD
        self.ctas = model.ctas
        self.rings = model.rings
        self.stages = [r.stages for r in model.ring_specs]
        self.n_bar = len(model.barrier_names)
        self.progs = [self._unroll(a) for a in range(self.A)]
        self.lens = [len(p) for p in self.progs]
        self.instances = []
        self.inst_of = {}
        for a, prog in enumerate(self.progs):
            for k, ins in enumerate(prog):
                for dst in self._issue_targets(a, ins):
                    self.inst_of[(a, k, dst)] = len(self.instances)
                    kind = {S.COPY: S.ENTRY_COPY, S.COMMIT_EMPTY: S.ENTRY_COMMIT,
                            S.READ_ASYNC: S.ENTRY_READ}[ins.code]
                    value = ins.op.n if ins.code == S.COMMIT_EMPTY else ins.tag
                    nbytes = ins.op.n if ins.code == S.COPY else 0
                    self.instances.append(Instance(kind, a, k, dst, ins.ring, ins.stage, value, nbytes))
        self.I = len(self.instances)
        # Every step moves some agent's position (a blocked sync is moved on later by its
        # releaser, without a step of its own) or retires an instance: no run is longer.
        self.longest_run_bound = sum(self.lens) + self.I
        self.cta_agents = [[a for a in range(self.A) if model.agents[a].cta == c]
                           for c in range(self.ctas)]
        self._static_tables()
        self.sym_pairs = self._symmetric_pairs()
        self.width = self._width() if WIDTH is None else WIDTH
        self._changing = self._changing_fields()

    # ------------------------------------------------------------------ static program

    def _unroll(self, a: int) -> list:
        T, agent = self.T, self.model.agents[a]
        stage = list(agent.initial_stages)
        phase = list(agent.initial_phases)
        out = []
        pc, item = S.settle_pc(T, a, 0, 0)
        pc, item = int(pc), int(item)
        while pc < len(agent.ops):
            op = agent.ops[pc][0]
            row = T.agent[a, S.A_PROG] + pc
            code = int(T.prog[row, S.P_CODE])
            r = int(T.prog[row, S.P_RING])
            out.append(Instr(pc, item, op, code, r, stage[r], phase[r], agent.initial_phases[r],
                             int(S.op_tag(T, row, item))))
            if code in (S.ADVANCE, S.DRAIN):
                stage[r] += 1
                if stage[r] == self.stages[r]:
                    stage[r] = 0
                    phase[r] += 1
            elif code == S.RESET:
                stage[r] = agent.initial_stages[r]
                phase[r] = agent.initial_phases[r]
            pc, item = S.next_pc(T, a, pc, item)
            pc, item = int(pc), int(item)
        return out

    def _targets(self, a: int, ins: Instr) -> list:
        row = self.T.agent[a, S.A_PROG] + ins.pc
        mask = int(S.targets_mask(self.T, a, self.T.prog[row, S.P_TARGET]))
        return [d for d in range(self.ctas) if mask & (1 << d)]

    def _issue_targets(self, a: int, ins: Instr) -> list:
        if ins.code in (S.COPY, S.COMMIT_EMPTY):
            return self._targets(a, ins)
        if ins.code == S.READ_ASYNC:
            return [self.model.agents[a].cta]
        return []

    def _static_tables(self):
        # Read instructions per (cta, ring, stage): (agent, k, item, async?).
        self.readers = {}
        for a, prog in enumerate(self.progs):
            cta = self.model.agents[a].cta
            for k, ins in enumerate(prog):
                if ins.code in (S.READ, S.READ_ASYNC):
                    self.readers.setdefault((cta, ins.ring, ins.stage), []).append(
                        (a, k, ins.tag, ins.code == S.READ_ASYNC))
        self.copies_into = {}
        self.inst_to_cta = [[] for _ in range(self.ctas)]
        self.reads_of = [[] for _ in range(self.A)]  # (k, instance) of the agent's async reads
        for i, inst in enumerate(self.instances):
            self.inst_to_cta[inst.cta].append(i)
            if inst.kind == S.ENTRY_COPY:
                self.copies_into.setdefault((inst.cta, inst.ring, inst.stage), []).append(i)
            if inst.kind == S.ENTRY_READ:
                self.reads_of[inst.agent].append((inst.k, i))

    def _symmetric_pairs(self) -> list:
        """(a, b), a < b: agents that swapping is a symmetry of the whole system for (the same
        CTA, the same unrolled program and start): agents of one role other than a leader with
        ops of its own."""
        classes = {}
        for a, prog in enumerate(self.progs):
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
        same += [f.v[("inf", i)] == f.v[("inf", self.inst_of[(b, inst.k, inst.cta)])]
                 for i, inst in enumerate(self.instances) if inst.agent == a]
        return _and([z3.simplify(x) for x in same])

    def symmetry(self, f: Frame, step: "Step") -> list:
        """Of two symmetric agents in the same local state, the lower one moves first."""
        return [z3.Implies(step.act.is_(b), z3.Not(self.identical(f, a, b)))
                for a, b in self.sym_pairs]

    # ------------------------------------------------------------------ fields

    def _width(self) -> int:
        """Bits for a signed bit-vector that holds every value a field or an intermediate
        result can take (so no bit-vector operation wraps): tx and a tx update (up to the
        trap limit plus the largest byte count), phase numbers and barrier generations (at
        most one per step), amd counters and their wait thresholds, item tags, counts."""
        ops = [ins.op for prog in self.progs for ins in prog]
        biggest = max([op.n for op in ops] + [1])
        steps = self.longest_run_bound + 2
        values = [nvidia_backend.TX_LIMIT + biggest, steps * biggest * self.ctas,
                  int(self.T.ring[:, 1:].max()), int(self.T.bar_count.max()) + steps]
        if not self.nvidia:  # a wait threshold is wrap32(phase +- 1) * count
            values.append(amd_backend.U32 * int(self.T.ring[:, 1:].max()))
        return max(values).bit_length() + 2

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
            if self.nvidia:
                ph, pend, tx = NV.init(self.expected(key[1], key[3]))
                v[("ph",) + key], v[("pend",) + key], v[("tx",) + key] = ph, pend, tx
                v[("obs",) + key] = False
            else:
                v[("cnt",) + key] = AM.init()
        for c in range(self.ctas):
            for r in range(self.rings):
                for s in range(self.stages[r]):
                    v[("slot", c, r, s)] = -1
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
                if ins.code == S.SYNC:
                    ch.add(("sync", a))
                if ins.code in TRIES:
                    ch.add(("ready", a, r))
                if ins.code in (S.SYNC, S.SYNC_ARRIVE):
                    b = self.barrier_index(ins)
                    ch |= {("bar", b, c), ("gen", b, c)}
                    if ins.code == S.SYNC_ARRIVE:
                        ch.add(("arr", a, b))
                if ins.code in WAITS + TRIES and self.nvidia:
                    kind = FULL if ins.code in (S.WAIT_FULL, S.TRY_FULL) else EMPTY
                    ch.add(("obs", c, r, s, kind))
                if ins.code in ARRIVES:
                    kind = EMPTY if ins.code == S.ARRIVE_EMPTY else FULL
                    for d in self._targets(a, ins):
                        ch |= self._sig_fields((d, r, s, kind), ins.code == S.EXPECT_TX)
                if ins.code == S.WRITE:
                    ch.add(("slot", c, r, s))
        for i, inst in enumerate(self.instances):
            ch.add(("inf", i))
            key = (inst.cta, inst.ring, inst.stage)
            if inst.kind == S.ENTRY_COPY:
                ch.add(("slot",) + key)
                ch |= self._sig_fields(key + (FULL,), True)
            elif inst.kind == S.ENTRY_COMMIT:
                ch |= self._sig_fields(key + (EMPTY,), False)
        return ch

    def _sig_fields(self, key, tx: bool) -> set:
        if not self.nvidia:
            return {("cnt",) + key}
        out = {("ph",) + key, ("pend",) + key, ("obs",) + key}
        return out | {("tx",) + key} if tx else out

    # ------------------------------------------------------------------ predicates on a frame

    def signal_ready(self, f: Frame, key, phase: int):
        c, r, s, kind = key
        if self.nvidia:
            return _b(NV.ready(f.v[("ph",) + key], phase))
        if kind == FULL:
            return _b(AM.full_ready(f.v[("cnt",) + key], phase, self.expected(r, FULL)))
        return _b(AM.empty_ready(f.v[("cnt",) + key], phase, self.expected(r, EMPTY)))

    def in_window(self, f: Frame, key, phase: int, p0: int):
        return _b(NV.in_window(f.v[("ph",) + key], phase, p0))

    def sig_key(self, a: int, ins: Instr):
        kind = FULL if ins.code in (S.WAIT_FULL, S.TRY_FULL) else EMPTY
        return (self.model.agents[a].cta, ins.ring, ins.stage, kind)

    def skipped(self, f: Frame, a: int, ins: Instr):
        """A `wait_* unless=ready` whose agent's last try said ready takes its step unblocked."""
        if ins.code != S.DRAIN and ins.op.unless_ready:
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
        if ins.code in WAITS:
            en = _or([self.skipped(f, a, ins), self.signal_ready(f, self.sig_key(a, ins), ins.phase)])
        elif ins.code == S.READ_WAIT:
            en = self.reads_in_flight_before(f, a, k) <= ins.op.n
        elif ins.code == S.SYNC_WAIT:
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
        conds = [f.v[("inf", i)]]
        if inst.kind in (S.ENTRY_READ, S.ENTRY_COMMIT):
            # reads finish oldest first; a commit waits for the reads issued before it
            conds += [z3.Not(f.v[("inf", j)]) for kk, j in self.reads_of[inst.agent] if kk < inst.k]
        return _and(conds)

    def gone(self, f: Frame, cta: int):
        return f.once(("gone", cta), lambda: _and([self.finished(f, b) for b in self.cta_agents[cta]]))

    def targeted(self, f: Frame, cta: int):
        return _or([f.v[("inf", i)] for i in self.inst_to_cta[cta]])

    def anything_in_flight(self, f: Frame):
        return _or([f.v[("inf", i)] for i in range(self.I)])

    def state_kinds(self, f: Frame) -> dict:
        """Violation bit -> condition, for the properties of the state itself."""
        unfinished = _or([z3.Not(self.finished(f, a)) for a in range(self.A)])
        stuck = _and([z3.Not(self.agent_enabled(f, a)) for a in range(self.A)])
        out = {S.DEADLOCK: _and([unfinished, z3.Not(self.anything_in_flight(f)), stuck])}
        if self.nvidia:
            alias = []
            for a, prog in enumerate(self.progs):
                for k, ins in enumerate(prog):
                    if ins.code in WAITS:
                        key = self.sig_key(a, ins)
                        alias.append(_and([self.at(f, a, k), z3.Not(self.skipped(f, a, ins)),
                                           z3.Not(self.in_window(f, key, ins.phase, ins.initial_phase))]))
            out[S.PHASE_ALIAS] = _or(alias)
        return out

    # ------------------------------------------------------------------ one step

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
            touch(("sig",) + key, ("upd", count, tx_delta) if self.nvidia else ("inc",), cond)
            if not self.nvidia:
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

        def store_tag(cond, cta, r, s, tag):
            touch(("slot", cta, r, s), ("set", tag), cond)
            old = f.v[("slot", cta, r, s)]
            still = []
            for (b, k, item, is_async) in self.readers.get((cta, r, s), []):
                if item == tag:
                    continue
                pending = z3.Not(self.pos_ge(f, b, k + 1))
                if is_async:
                    pending = _or([pending, f.v[("inf", self.inst_of[(b, k, cta)])]])
                still.append(_and([old == item, pending]))
            if still:
                bit(S.OVERWRITE_BEFORE_DRAIN, cond, _or(still))
            put(("slot", cta, r, s), cond, self.num(tag))

        # ---------------------------------------------------------- agents
        for a, prog in enumerate(self.progs):
            cta = self.model.agents[a].cta
            chosen = act.is_(a)
            touch(("agent", a), ("w",), chosen)
            guards.append(z3.Implies(chosen, self.agent_enabled(f, a)))
            for k, ins in enumerate(prog):
                cond = _and([chosen, self.at(f, a, k)])
                code, r, s = ins.code, ins.ring, ins.stage
                blocked = None
                if k > 0 and prog[k - 1].code == S.SYNC:
                    # maybe released by another agent's sync in the step just before
                    touch(("bar", self.barrier_index(prog[k - 1]), cta), ("r",), cond)
                if code in WAITS + TRIES:
                    touch(("sig",) + self.sig_key(a, ins), ("r",), cond)
                if code in WAITS:
                    if self.nvidia:
                        waits = z3.Not(self.skipped(f, a, ins))
                        put(("obs",) + self.sig_key(a, ins), _and([cond, waits]), z3.BoolVal(True))
                elif code in TRIES:
                    key = self.sig_key(a, ins)
                    ok = self.signal_ready(f, key, ins.phase)
                    put(("ready", a, r), cond, ok)
                    if self.nvidia:
                        put(("obs",) + key, _and([cond, ok]), z3.BoolVal(True))
                        bit(S.PHASE_ALIAS, cond, z3.Not(self.in_window(f, key, ins.phase,
                                                                       ins.initial_phase)))
                elif code in ARRIVES:
                    kind = EMPTY if code == S.ARRIVE_EMPTY else FULL
                    count = 1 if code == S.EXPECT_TX else ins.op.n
                    tx = ins.op.n if code == S.EXPECT_TX else 0
                    if code == S.EXPECT_TX and tx > nvidia_backend.TX_LIMIT:
                        bit(S.TX_RANGE, cond)
                        _group(trap, cond, z3.BoolVal(True))
                    for d in self._targets(a, ins):
                        bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
                        signal_update((d, r, s, kind), cond, count, tx)
                elif code in (S.COPY, S.COMMIT_EMPTY):
                    if code == S.COPY and ins.op.n > nvidia_backend.TX_LIMIT:
                        bit(S.TX_RANGE, cond)
                        _group(trap, cond, z3.BoolVal(True))
                    for d in self._targets(a, ins):
                        bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
                        put(("inf", self.inst_of[(a, k, d)]), cond, z3.BoolVal(True))
                        touch(("inf", self.inst_of[(a, k, d)]), ("w",), cond)
                elif code == S.WRITE:
                    store_tag(cond, cta, r, s, ins.tag)
                elif code in (S.READ, S.READ_ASYNC):
                    slot = f.v[("slot", cta, r, s)]
                    landing = [f.v[("inf", i)] for i in self.copies_into.get((cta, r, s), [])]
                    bit(S.READ_BEFORE_FILL, cond, _or([slot != ins.tag] + landing))
                    if code == S.READ_ASYNC:
                        put(("inf", self.inst_of[(a, k, cta)]), cond, z3.BoolVal(True))
                        touch(("inf", self.inst_of[(a, k, cta)]), ("w",), cond)
                elif code == S.READ_WAIT:
                    for kk, j in self.reads_of[a]:
                        if kk < k:
                            touch(("inf", j), ("r",), cond)
                elif code == S.SYNC_WAIT:
                    touch(("bar", self.barrier_index(ins), cta), ("r",), cond)
                elif code in (S.SYNC, S.SYNC_ARRIVE):
                    b = self.barrier_index(ins)
                    touch(("bar", b, cta), ("w",), cond)
                    arrivals, gen = f.v[("bar", b, cta)], f.v[("gen", b, cta)]
                    completes = arrivals + 1 >= int(self.T.bar_count[b, cta])
                    if code == S.SYNC_ARRIVE:
                        put(("arr", a, b), cond, gen + 1)
                    put(("bar", b, cta), cond, z3.If(completes, 0, arrivals + 1))
                    put(("gen", b, cta), cond, z3.If(completes, gen + 1, gen))
                    if code == S.SYNC:
                        blocked = z3.Not(completes)
                        blocks[a].append(_and([cond, blocked]))
                    # the last arrival releases every agent of the CTA blocked on this barrier
                    for x in self.cta_agents[cta]:
                        if x == a:
                            continue
                        at_b = [self.at(f, x, q) for q, other in enumerate(self.progs[x])
                                if other.code == S.SYNC and self.barrier_index(other) == b]
                        if at_b:
                            moves[x].append(_and([cond, completes, f.v[("sync", x)], _or(at_b)]))
                # (advance, reset, read_wait, sync_wait: nothing beyond the position)
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
            if inst.kind in (S.ENTRY_READ, S.ENTRY_COMMIT):
                for kk, j in self.reads_of[inst.agent]:
                    if kk < inst.k:
                        touch(("inf", j), ("r",), cond)
            if inst.kind == S.ENTRY_READ:
                continue
            d, r, s = inst.cta, inst.ring, inst.stage
            bit(S.INFLIGHT_AT_EXIT, cond, self.gone(f, d))
            if inst.kind == S.ENTRY_COPY:
                store_tag(cond, d, r, s, inst.value)
                signal_update((d, r, s, FULL), cond, 0, -inst.nbytes)
            else:
                signal_update((d, r, s, EMPTY), cond, inst.value, 0)

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
        # the step that finishes the last agent of a CTA while something still targets it
        for cond, cta in exit_checks:
            bit(S.INFLIGHT_AT_EXIT, cond, _and([self.gone(nxt, cta), self.targeted(nxt, cta)]))
        kinds = {b: _ungroup(bits.get(b, {})) for b in KIND_BITS if b != S.DEADLOCK}
        return Step(act, nxt, kinds, _ungroup(trap), constraints, foot)

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

    # ------------------------------------------------------------------ reading a model back

    def frame_values(self, m: z3.ModelRef, f: Frame) -> dict:
        out = {}
        for name, term in f.v.items():
            val = m.eval(term, model_completion=True)
            out[name] = z3.is_true(val) if z3.is_bool(val) else (
                val.as_signed_long() if z3.is_bv(val) else val.as_long())
        return out


def _name(name: tuple) -> str:
    return "_".join(str(x) for x in name)
