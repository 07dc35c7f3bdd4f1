"""Compile a loaded Spec into the flat tables the engines run, and read states back.

`compile_model(spec)` takes every agent's flattened program (checker/core/program.py: prologue,
body, epilogue; `@leader` ops dropped for non-leaders; `drain` expanded into `stages` steps),
writes the programs into tables, lays out the state vector
(checker/core/semantics.py documents it), and chooses bit widths so a state packs into a few
64-bit words. `Model` then offers the small stateright-style interface: `initial_state()`,
`actions(state)`, `next_state(state, action)`, `format_action(state, action)`, with states as
immutable tuples of ints, and turns states into the readable views of checker/results/trace.py.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.backends.capabilities import backend
from pipeproof.checker.core import semantics as S
from pipeproof.checker.core.program import OP_EFFECTS, Agent, agents_of, part_of, slot_parts
from pipeproof.spec.schema import FILL_OPS, READ_OPS, Spec

OP_CODES = S.OP_CODES
BARRIER_OPS = tuple(name for name, e in OP_EFFECTS.items() if e.barrier)
ASYNC_OPS = tuple(name for name, e in OP_EFFECTS.items() if e.issues)
OP_NAMES = {v: k for k, v in OP_CODES.items()}
TARGET_CODES = {"self": S.T_SELF, "leader": S.T_LEADER, "peer": S.T_PEER, "all": S.T_ALL}
KIND_BITS = (S.DEADLOCK, S.READ_BEFORE_FILL, S.OVERWRITE_BEFORE_DRAIN, S.PHASE_ALIAS,
             S.OVER_ARRIVAL, S.TX_RANGE, S.INFLIGHT_AT_EXIT)
MAX_INFLIGHT = 24

# The numba-visible model: every member an int64 numpy array.
Tables = namedtuple("Tables", ["cfg", "ring", "agent", "prog", "bar_count", "bytes_vals", "ent",
                               "part"])
# Bit packing of the state vector into `words` int64 words (63 bits used per word).
Packing = namedtuple("Packing", ["word", "shift", "width", "bias", "live"])


def bits_for(max_value: int) -> int:
    return max(int(max_value), 0).bit_length()


def packing_for(bounds) -> tuple[Packing, int]:
    """Pack fields with value ranges (lowest, span) into 63-bit words, in order; returns the
    Packing and the number of words."""
    word, shift, width, bias = [], [], [], []
    w, used = 0, 0
    for lo, span in bounds:
        bits = bits_for(span)
        if used + bits > 63:
            w, used = w + 1, 0
        word.append(w)
        shift.append(used)
        width.append(bits)
        bias.append(lo)
        used += bits
    arr = lambda xs: np.array(xs, dtype=np.int64)
    live = [f for f, bits in enumerate(width) if bits > 0]
    return Packing(arr(word), arr(shift), arr(width), arr(bias), arr(live)), w + 1


class Model:
    """A compiled spec: tables for the engines plus names and views for people."""

    def __init__(self, spec: Spec, inflight: int | None = None, strict_exit: bool = False):
        """`inflight`: room for that many copies, commits and async reads in flight instead of
        the default capacity (checker/engines/reachable.py asks for MAX_INFLIGHT when a path needs more).
        `strict_exit`: a CTA gone with its own copies or commits in flight is inflight_at_exit
        (PTX's strict reading) instead of the warning unawaited_at_exit."""
        self.spec = spec
        self.strict_exit = bool(strict_exit)
        self.caps = backend(spec.backend)  # what the backend can express (the one seam)
        self.backend = self.caps.code
        self.ctas = spec.cluster_size
        self.ring_specs = spec.all_rings
        self.ring_names = [r.name for r in self.ring_specs]
        self.rings = len(self.ring_specs)
        self.max_stages = max(r.stages for r in self.ring_specs)
        self.barrier_names = [b.name for b in spec.barriers]
        self.agents = agents_of(spec)
        # Slot parts (checker/core/program.py slot_parts) and the agents that carry a phase window
        # (those with a `reset`: docs/rules.md "The phase_alias window").
        self.parts = slot_parts(spec, self.agents)
        self.max_parts = max(len(p) for p in self.parts)
        self.reset_until = [[self._reset_until(a, ring.name) for ring in self.ring_specs]
                            for a in self.agents]
        self.has_window = any(u >= 0 for row in self.reset_until for u in row)
        # Tags: a body fill stores its item (0 .. items-1); a prologue or epilogue fill its own
        # tag, above every item, so no read can take one for the other (spec.schema
        # `read_pairs_with` is the pairing rule).
        # A fill with ahead=K (software pipelining) stores item + K in the body, K in the
        # prologue: the prologue's and epilogue's tags stay above every tag a fill can store.
        self.max_items = max([a.items for a in self.agents] + [0])
        self.max_ahead = max([op.ahead or 0 for a in self.agents for op, _ in a.ops] + [0])
        self.tag_prologue = self.max_items + self.max_ahead
        self.tag_epilogue = self.tag_prologue + 1
        self.bytes_vals = sorted({op.n for a in self.agents for op, _ in a.ops
                                  if OP_EFFECTS[op.name].issues == "copy"}) or [0]
        self.inflight = inflight if inflight is not None else self._inflight_capacity()
        self.tables = self._make_tables()
        self.packing, self.words = self._make_packing()

    # ------------------------------------------------------------ building

    def _inflight_capacity(self) -> int:
        """Room for in-flight copies and commits: a correct ring has at most one lap of them."""
        per_lap = 0
        for a in self.agents:
            for op, _ in a.ops:
                if op.name in ASYNC_OPS:
                    per_lap += self.ctas if op.to == "all" and self.ctas > 1 else 1
        return min(MAX_INFLIGHT, per_lap * (self.max_stages + 1)) if per_lap else 0

    def _reset_until(self, a: Agent, ring: str) -> int:
        """The last position at which a `reset` of `ring` may lie ahead of agent a (a body
        reset: until the body ends), or -1."""
        until = -1
        for pc, (op, _) in enumerate(a.ops):
            if op.ring == ring and OP_EFFECTS[op.name].move == "reset":
                until = max(until, a.body_end - 1 if a.section_of(pc) == "body" else pc)
        return until

    def _layout(self):
        n_agents = len(self.agents)
        agf = S.F_RING0 + S.RING_FIELDS * self.rings + len(self.barrier_names)  # per agent
        self.win = agf if self.has_window else -1
        if self.has_window:
            agf += self.rings * self.max_stages * 2 * 2
        n_sig = self.ctas * self.rings * self.max_stages * 2
        n_slot = self.ctas * self.rings * self.max_stages * self.max_parts
        n_bar = 2 * len(self.barrier_names) * self.ctas
        off_sig = n_agents * agf
        off_slot = off_sig + 4 * n_sig
        off_bar = off_slot + n_slot
        off_inf = off_bar + n_bar
        return agf, off_sig, off_slot, off_bar, off_inf, off_inf + self.inflight

    def _make_tables(self) -> Tables:
        spec = self.spec
        agf, off_sig, off_slot, off_bar, off_inf, n_fields = self._layout()
        self.agf, self.off_sig, self.off_slot, self.off_bar, self.off_inf = agf, off_sig, off_slot, off_bar, off_inf
        self.n_fields = n_fields
        cfg = np.array([len(self.agents), self.ctas, self.rings, self.backend, self.inflight, agf,
                        self.max_stages, off_sig, off_slot, off_bar, off_inf, n_fields,
                        len(self.barrier_names), self.tag_prologue, self.max_parts, self.win,
                        int(self.strict_exit), S.SIGNAL_MODELS[self.caps.signal_model]],
                       dtype=np.int64)
        ring = np.array([[r.stages, r.expected(FULL), r.expected(EMPTY), len(self.parts[i])]
                         for i, r in enumerate(self.ring_specs)], dtype=np.int64)
        prog_rows, agent_rows = [], []
        effects = S.effects_table()
        starts = []
        for i, a in enumerate(self.agents):
            row = [a.cta, a.body_start, a.body_end, len(a.ops), a.items, len(prog_rows),
                   max([op.tag_div for op, _ in a.ops] + [1])]
            starts.append(len(prog_rows))
            for r in range(self.rings):
                row += [a.initial_stages[r], a.initial_phases[r]]
            agent_rows.append(row + self.reset_until[i])  # reset_until at A_RING0 + 2 * rings
            for pc, (op, _) in enumerate(a.ops):
                prog_rows.append([OP_CODES[op.name], self.ring_names.index(op.ring), op.n,
                                  TARGET_CODES[op.to], int(op.unless_ready),
                                  self.barrier_names.index(op.barrier) if op.name in BARRIER_OPS else -1,
                                  self.bytes_vals.index(op.n) if OP_EFFECTS[op.name].issues == "copy" else 0,
                                  op.every, op.at, self.tag_of(a, pc), self._part_column(i, pc),
                                  op.tag_div]
                                 + list(effects[OP_CODES[op.name]]))  # at S.P_EFF
        bar_count = np.zeros((max(len(self.barrier_names), 1), self.ctas), dtype=np.int64)
        for b, bar in enumerate(spec.barriers):
            for cta in range(self.ctas):
                bar_count[b, cta] = bar.count if bar.count else sum(
                    1 for a in self.agents if a.cta == cta and a.role in bar.roles)
        self.entry_fields = self._entry_layout()
        ent = np.array(self.entry_fields, dtype=np.int64)
        most = max(len(pt.fills) for parts in self.parts for pt in parts)
        part = np.full((self.rings * self.max_parts, S.PT_FILL0 + 2 * most), -1, dtype=np.int64)
        for r, parts in enumerate(self.parts):
            for p, pt in enumerate(parts):
                row = part[r * self.max_parts + p]
                row[S.PT_CTAS] = sum(1 << c for c in pt.ctas)
                row[S.PT_NFILLS] = len(pt.fills)
                for f, (_, i, pc) in enumerate(pt.fills):
                    row[S.PT_FILL0 + 2 * f], row[S.PT_FILL0 + 2 * f + 1] = starts[i] + pc, i
        return Tables(cfg, ring, np.array(agent_rows, dtype=np.int64).reshape(len(self.agents), -1),
                      np.array(prog_rows or [[0, 0, 0, 0, 0, -1, 0, 1, 0, -1, 0] + list(effects[0])],
                               dtype=np.int64),
                      bar_count, np.array(self.bytes_vals, dtype=np.int64), ent, part)

    def _part_column(self, i: int, pc: int) -> int:
        """P_PART of agent i's op at pc: a fill's part, -1 for a consumer-side fill (every
        part), 0 for any other op."""
        op = self.agents[i].ops[pc][0]
        if not OP_EFFECTS[op.name].stores:
            return 0
        return part_of(self.parts[self.ring_names.index(op.ring)], i, pc)

    def tag_of(self, a: Agent, pc: int) -> int:
        """P_TAG of an op: -1 - K for the agent's item + K (a body fill with ahead=K, K = 0
        without; a read pairing with a body fill: -1), else a constant: the prologue's or the
        epilogue's tag, or item K for a prologue fill with ahead=K (state_layout.op_tag)."""
        op = a.ops[pc][0]
        section = a.section_of(pc)
        if op.name in READ_OPS:
            section = self.spec.read_pairs_with(section, op.ring) or section
        elif op.name not in FILL_OPS:
            return -1
        elif op.ahead is not None:
            return -1 - op.ahead if section == "body" else op.ahead
        return {"prologue": self.tag_prologue, "body": -1, "epilogue": self.tag_epilogue}[section]

    def tag_label(self, tag: int) -> str:
        """A tag in an action's arguments: an item number, `prologue` or `epilogue`."""
        return {self.tag_prologue: "prologue", self.tag_epilogue: "epilogue"}.get(tag, str(tag))

    def tag_word(self, ring) -> str:
        """What a body tag of `ring` (a name or an index) counts: `tile` for a tile-level ring
        of nested loops (spec.load_loops), else `item`."""
        r = ring if isinstance(ring, int) else self.ring_names.index(ring)
        return "tile" if self.ring_specs[r].level == "tile" else "item"

    def tag_text(self, tag: int, ring=0) -> str:
        """A tag in a sentence: `item 3` (`tile 1` on a tile-level ring), or `the prologue's tag`."""
        label = self.tag_label(tag)
        return f"{self.tag_word(ring)} {label}" if label == str(tag) else f"the {label}'s tag"

    @property
    def max_tag(self) -> int:
        """The largest tag a slot may hold: the last item, or a prologue's or epilogue's."""
        return max([self.tag_of(a, pc) for a in self.agents for pc, (op, _) in enumerate(a.ops)
                    if op.name in FILL_OPS] + [self.max_items - 1 + self.max_ahead])

    def _entry_layout(self):
        """(shift, mask) of kind, cta, ring, stage, value, bytes index, agent, seq, part, cseq
        and peer in an entry (a field nothing needs has width 0)."""
        max_n = max([op.n for a in self.agents for op, _ in a.ops
                     if OP_EFFECTS[op.name].issues == "commit"] + [1])
        issued = {OP_EFFECTS[op.name].issues for a in self.agents for op, _ in a.ops}
        has_reads, has_commits = "read" in issued, "commit" in issued
        # E_BIDX (a copy's field) is a flag for the other kinds: COMMIT_ON_FULL on a commit that
        # fires on full (commit_full), READ_WRITES on an async write (write_async); one bit
        # more only for a spec with either
        flagged = any((e.issues == "commit" and e.updates == FULL) or e.async_write
                      for e in (OP_EFFECTS[op.name] for a in self.agents for op, _ in a.ops))
        widths = [2, bits_for(self.ctas - 1), bits_for(self.rings - 1), bits_for(self.max_stages - 1),
                  bits_for(max(self.max_tag + 2, max_n)),
                  max(bits_for(len(self.bytes_vals) - 1), int(flagged)),
                  bits_for(len(self.agents) - 1) if has_reads or has_commits else 0,
                  bits_for(self.inflight) if has_reads else 0,
                  bits_for(self.max_parts) if self.max_parts > 1 else 0,  # part + 1 (0: every part)
                  bits_for(self.inflight) if has_commits else 0,
                  1 if self.ctas > 1 else 0]
        fields, shift = [], 0
        for w in reversed(widths):  # kind in the top bits: copies sort before commits
            fields.append((shift, (1 << w) - 1))
            shift += w
        self.entry_bits = shift
        return list(reversed(fields))

    def _field_bounds(self):
        """(bias, max offset) per state field: the packing widths come from these."""
        bounds = []
        executed = [len(a.ops) - (a.body_end - a.body_start) + a.items * (a.body_end - a.body_start)
                    for a in self.agents]
        total_ops = sum(executed)
        for i, (a, n_exec) in enumerate(zip(self.agents, executed)):
            n_body = a.body_end - a.body_start
            lap_counts = []
            has_sync = any(OP_EFFECTS[op.name].barrier == "sync" for op, _ in a.ops)
            has_try = any(OP_EFFECTS[op.name].tries for op, _ in a.ops)
            bounds += [(0, len(a.ops)), (0, a.items if n_body else 0), (0, int(has_sync))]
            for r, ring in enumerate(self.ring_specs):
                def advances(ops):
                    return sum(1 for op, _ in ops if op.ring == ring.name
                               and OP_EFFECTS[op.name].move == "advance")
                adv = (advances(a.ops[:a.body_start]) + advances(a.ops[a.body_end:])
                       + a.items * advances(a.ops[a.body_start:a.body_end]))
                laps = (a.initial_stages[r] + adv) // ring.stages
                lap_counts.append((laps, self.reset_until[i][r] >= 0, executed_resets(a, ring.name)))
                bounds += [(0, ring.stages - 1), (a.initial_phases[r], laps), (0, int(has_try))]
            for name in self.barrier_names:  # the generation it last sync_arrived in, plus 1
                arrives = any(OP_EFFECTS[op.name].barrier == "arrive" and op.barrier == name
                              for op, _ in a.ops)
                bounds.append((0, total_ops + 1 if arrives else 0))
            if self.has_window:
                bounds += self._window_bounds(a, lap_counts)
        has_tx = any(OP_EFFECTS[op.name].tx for a in self.agents for op, _ in a.ops)
        max_n = max([op.n for a in self.agents for op, _ in a.ops
                     if OP_EFFECTS[op.name].arrives_n] + [1])
        updates = total_ops * self.ctas
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            ring, stage = self.sig_ring_stage(sig)
            expected = ring.expected(sig % 2)
            if stage >= ring.stages:
                bounds += [(0, 0)] * 4  # a ring shorter than the longest has unused signals
            else:
                bounds += list(self.caps.rules.signal_bounds(expected, updates, max_n, has_tx))
        max_tag = self.max_tag
        for pos in range(self.ctas * self.rings * self.max_stages * self.max_parts):
            slot, p = divmod(pos, self.max_parts)
            cta, r, stage = slot // self.max_stages // self.rings, (slot // self.max_stages) % self.rings, slot % self.max_stages
            used = (stage < self.ring_specs[r].stages and p < len(self.parts[r])
                    and cta in self.parts[r][p].ctas)
            bounds.append((-1, max_tag + 1 if used else 0))  # -1 .. max_tag
        for b in range(len(self.barrier_names)):
            for _ in range(self.ctas):
                bounds += [(0, int(self.tables.bar_count[b].max())), (0, total_ops)]
        bounds += [(0, (1 << self.entry_bits) - 1)] * self.inflight
        return bounds

    def _window_bounds(self, a: Agent, lap_counts) -> list:
        """(bias, span) of an agent's (k', ph') per (ring, stage, kind). Between two passes of
        one signal k grows by the phase's growth, or by at most 1 after a reset, so k' stays
        below (resets + 1) * (laps + 2); an agent without a reset of the ring keeps them at 0."""
        out = []
        for r, (laps, has_reset, resets) in enumerate(lap_counts):
            p0 = a.initial_phases[r]
            for _ in range(self.max_stages * 2):
                if has_reset:
                    out += [(-1, (resets + 1) * (laps + 2) + 1), (p0, laps)]
                else:
                    out += [(0, 0), (0, 0)]
        return out

    def sig_ring_stage(self, sig: int):
        return self.ring_specs[(sig // 2 // self.max_stages) % self.rings], (sig // 2) % self.max_stages

    def _make_packing(self):
        return packing_for(self._field_bounds())

    # ------------------------------------------------------------ the model interface

    def initial_vector(self) -> np.ndarray:
        st = np.zeros(self.n_fields, dtype=np.int64)
        for i, a in enumerate(self.agents):
            base = i * self.agf
            pc, item = S.settle_pc(self.tables, i, 0, 0)
            st[base + S.F_PC], st[base + S.F_ITEM] = pc, item
            for r in range(self.rings):
                st[S.ring_pos(self.agf, i, r, S.RF_STAGE)] = a.initial_stages[r]
                st[S.ring_pos(self.agf, i, r, S.RF_PHASE)] = a.initial_phases[r]
                if self.reset_until[i][r] >= 0:  # (k', ph') = (-(p0 mod 2), p0): no wait passed
                    p0 = a.initial_phases[r]
                    for s in range(self.max_stages * 2):
                        pos = base + self.win + 2 * (r * self.max_stages * 2 + s)
                        st[pos], st[pos + 1] = -(p0 % 2), p0
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            b = self.off_sig + 4 * sig
            ring, stage = self.sig_ring_stage(sig)
            if stage < ring.stages:  # the backend's init (an mbarrier's init count)
                st[b], st[b + 1], st[b + 2] = self.caps.rules.init(ring.expected(sig % 2))
        st[self.off_slot:self.off_bar] = -1
        return st

    def initial_state(self) -> tuple:
        return tuple(self.initial_vector().tolist())

    def n_actions(self) -> int:
        return len(self.agents) + self.inflight

    def apply(self, state, action):
        """(successor tuple or None, violation bits, detail array) of one action."""
        st = np.array(state, dtype=np.int64)
        out = np.empty_like(st)
        det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
        bits = S.step(self.tables, st, action, out, det)
        if bits < 0:
            return None, bits, det
        return tuple(out.tolist()), bits, det

    def actions(self, state) -> list[int]:
        return [a for a in range(self.n_actions()) if self.apply(state, a)[0] is not None]

    def next_state(self, state, action):
        return self.apply(state, action)[0]

    def state_violation_bits(self, state):
        st = np.array(state, dtype=np.int64)
        det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
        return S.state_violations(self.tables, st, len(self.actions(state)), det), det

    # ------------------------------------------------------------ reading states

    def agent_field(self, state, a, f):
        return state[a * self.agf + f]

    def current_op(self, state, a):
        pc = self.agent_field(state, a, S.F_PC)
        ag = self.agents[a]
        return ag.ops[pc][0] if pc < len(ag.ops) else None

    def _ring_prefix(self, r: int) -> str:
        return "" if r == 0 else f"{self.ring_names[r]}."

    def sig_name(self, sig: int) -> str:
        """`cta0.full[2]` on the main ring, `cta0.acc.empty[1]` on ring acc."""
        s = (sig // 2) % self.max_stages
        r = (sig // 2 // self.max_stages) % self.rings
        cta = sig // 2 // self.max_stages // self.rings
        return f"cta{cta}.{self._ring_prefix(r)}{'full' if sig % 2 == FULL else 'empty'}[{s}]"

    def sig_short(self, sig: int) -> str:
        name = self.sig_name(sig)
        return name.split(".", 1)[1] if self.ctas == 1 else name

    def slot_of(self, pos: int) -> tuple[int, int, int, int]:
        """(cta, ring, stage, part) of a slot part's position in the state."""
        i, part = divmod(pos - self.off_slot, self.max_parts)
        return i // self.rings // self.max_stages, (i // self.max_stages) % self.rings, i % self.max_stages, part

    def slot_name(self, pos: int) -> str:
        """`cta0.slot[2]`, or `cta0.slot[2].part[1]` for a part of a slot of several parts."""
        cta, r, stage, part = self.slot_of(pos)
        name = f"cta{cta}.{self._ring_prefix(r)}slot[{stage}]"
        return name + (f".part[{part}]" if len(self.parts[r]) > 1 else "")

    def decode_entry(self, e: int) -> dict:
        f = [(e >> sh) & mask for sh, mask in self.entry_fields]
        where = {"cta": f[S.E_CTA], "ring": self.ring_names[f[S.E_RING]], "stage": f[S.E_STAGE]}
        if f[S.E_KIND] == S.ENTRY_COPY:
            part = {"part": f[S.E_PART] - 1} if len(self.parts[f[S.E_RING]]) > 1 else {}
            return {"kind": "copy", **where, "tag": f[S.E_VAL] - 1, "bytes": self.bytes_vals[f[S.E_BIDX]],
                    **part}
        if f[S.E_KIND] == S.ENTRY_READ:
            writes = {"writes": True} if f[S.E_BIDX] == S.READ_WRITES else {}  # write_async's
            return {"kind": "read", **where, "tag": f[S.E_VAL] - 1,
                    "agent": self.agents[f[S.E_AGENT]].name, "seq": f[S.E_SEQ], **writes}
        on = {"signal": "full"} if f[S.E_BIDX] == S.COMMIT_ON_FULL else {}  # commit_full's
        return {"kind": "commit", **where, "n": f[S.E_VAL], "agent": self.agents[f[S.E_AGENT]].name,
                "after": f[S.E_SEQ], "after_commits": f[S.E_CSEQ], **on}

    def inflight_entries(self, state) -> list[int]:
        return [e for e in state[self.off_inf:self.off_inf + self.inflight] if e]

    def view(self, state) -> dict:
        """The readable state of checker/results/trace.py."""
        agents = {}
        splits_syncs = any(OP_EFFECTS[op.name].barrier in ("arrive", "wait")
                           for ag in self.agents for op, _ in ag.ops)
        for i, a in enumerate(self.agents):
            op = self.current_op(state, i)
            ring = lambda r, field: state[S.ring_pos(self.agf, i, r, field)]  # noqa: E731
            agents[a.name] = {
                "role": a.role, "cta": a.cta, "index": a.index,
                "pc": self.agent_field(state, i, S.F_PC), "op": op.text if op else None,
                "item": self.agent_field(state, i, S.F_ITEM), "stage": ring(0, S.RF_STAGE),
                "phase": ring(0, S.RF_PHASE), "ready": bool(ring(0, S.RF_READY)),
                "at_sync": bool(self.agent_field(state, i, S.F_SYNC)), "done": op is None,
            }
            if splits_syncs:
                # the generation it last sync_arrived in (0 also when it never did)
                agents[a.name]["arrived"] = {
                    name: max(state[S.arrived_pos(self.agf, self.rings, i, b)] - 1, 0)
                    for b, name in enumerate(self.barrier_names)}
            if self.rings > 1:
                agents[a.name]["rings"] = {
                    name: {"stage": ring(r, S.RF_STAGE), "phase": ring(r, S.RF_PHASE),
                           "ready": bool(ring(r, S.RF_READY))}
                    for r, name in enumerate(self.ring_names) if r > 0}
        signals = {}
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            ring, stage = self.sig_ring_stage(sig)
            if stage >= ring.stages:
                continue
            b = self.off_sig + 4 * sig
            signals[self.sig_name(sig)] = dict(zip(self.caps.signal_fields, state[b:b + 3]))
        slots = {}  # a tag per slot; a list of one per part where the ring has several parts
        for p in range(self.off_slot, self.off_bar, self.max_parts):
            cta, r, stage, _ = self.slot_of(p)
            if stage < self.ring_specs[r].stages:
                name = f"cta{cta}.{self._ring_prefix(r)}slot[{stage}]"
                n = len(self.parts[r])
                slots[name] = state[p] if n == 1 else list(state[p:p + n])
        barriers = {}
        for b, name in enumerate(self.barrier_names):
            for cta in range(self.ctas):
                pos = self.off_bar + 2 * (b * self.ctas + cta)
                barriers[f"cta{cta}.{name}"] = {"arrivals": state[pos], "generation": state[pos + 1]}
        return {"agents": agents, "signals": signals, "slots": slots,
                "inflight": [self.decode_entry(e) for e in self.inflight_entries(state)],
                "barriers": barriers}

    # ------------------------------------------------------------ printing actions

    def actor(self, state, action) -> str:
        if action < len(self.agents):
            return self.agents[action].name
        e = self.decode_entry(state[self.off_inf + action - len(self.agents)])
        return e["agent"] if e["kind"] == "read" else f"cta{e['cta']}.{e['kind']}"

    def ring_stage_phase(self, state, a: int, op) -> tuple[int, int]:
        r = self.ring_names.index(op.ring)
        return (state[S.ring_pos(self.agf, a, r, S.RF_STAGE)],
                state[S.ring_pos(self.agf, a, r, S.RF_PHASE)])

    def format_action(self, state, action) -> str:
        """`consumer[1].wait_full(stage=0, phase=1)`, or `cta0.copy.land(stage=2, item=3, bytes=16384)`."""
        n_agents = len(self.agents)
        if action >= n_agents:
            e = self.decode_entry(state[self.off_inf + action - n_agents])
            where = f"{'' if e['ring'] == 'main' else 'ring=' + e['ring'] + ', '}stage={e['stage']}"
            word = self.tag_word(e["ring"])
            if e["kind"] == "copy":
                return (f"cta{e['cta']}.copy.land({where}, {word}={self.tag_label(e['tag'])}, "
                        f"bytes={e['bytes']})")
            if e["kind"] == "read":
                op = "write_async" if e.get("writes") else "read_async"
                return f"{e['agent']}.{op}.finish({where}, {word}={self.tag_label(e['tag'])})"
            return f"cta{e['cta']}.commit.fire({where}, n={e['n']})"
        a = self.agents[action]
        op = self.current_op(state, action)
        stage, phase = self.ring_stage_phase(state, action, op)
        item = self.agent_field(state, action, S.F_ITEM)
        args = [f"stage={stage}", f"phase={phase}"]
        if op.ring != "main":
            args.insert(0, f"ring={op.ring}")
        effects = OP_EFFECTS[op.name]
        if effects.arrives_n and op.n != 1:
            args.append(f"n={op.n}")
        if effects.tx:
            args.append(f"bytes={op.n}")
        if op.name in FILL_OPS + READ_OPS:
            tag = self.tag_of(a, self.agent_field(state, action, S.F_PC))
            args.insert(args.index(f"stage={stage}") + 1,
                        f"{self.tag_word(op.ring)}="
                        f"{(item - 1 - tag) // op.tag_div if tag < 0 else self.tag_label(tag)}")
        if op.to != "self" and self.ctas > 1:
            args.append(f"to={op.to}")
        if op.unless_ready:
            args.append("unless=ready")
        if op.name in BARRIER_OPS:
            args = [op.barrier]
        if OP_EFFECTS[op.name].waits_reads:
            args = [f"n={op.n}"]
        return f"{a.name}.{op.name}({', '.join(args)})"

    def action_event(self, state, action) -> dict:
        n_agents = len(self.agents)
        if action >= n_agents:
            e = self.decode_entry(state[self.off_inf + action - n_agents])
            return {"kind": {"copy": "land", "commit": "fire", "read": "finish"}[e["kind"]], "entry": e}
        op = self.current_op(state, action)
        return {"kind": "agent", "agent": self.agents[action].name, "op": op.name,
                "pc": self.agent_field(state, action, S.F_PC)}

    def action_stage_phase(self, state, action):
        if action >= len(self.agents):
            return self.decode_entry(state[self.off_inf + action - len(self.agents)])["stage"], None
        return self.ring_stage_phase(state, action, self.current_op(state, action))


def executed_resets(a: Agent, ring: str) -> int:
    """How many `reset` steps of `ring` agent a executes (a body reset once per item it runs in)."""
    return sum(1 for pc, _ in a.executed() if a.ops[pc][0].ring == ring
               and OP_EFFECTS[a.ops[pc][0].name].move == "reset")


def compile_model(spec: Spec, strict_exit: bool = False) -> Model:
    return Model(spec, strict_exit=strict_exit)
