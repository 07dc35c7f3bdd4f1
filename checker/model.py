"""Compile a loaded Spec into the flat tables the engines run, and read states back.

`compile_model(spec)` flattens every agent's program (prologue, body, epilogue; `@leader` ops
dropped for non-leaders; `drain` expanded into `stages` steps), lays out the state vector
(checker/semantics.py documents it), and chooses bit widths so a state packs into a few
64-bit words. `Model` then offers the small stateright-style interface: `initial_state()`,
`actions(state)`, `next_state(state, action)`, `format_action(state, action)`, with states as
immutable tuples of ints, and turns states into the readable views of checker/trace.py.
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from backends.base import AMD, BACKEND_CODES, EMPTY, FULL
from backends import nvidia
from checker import semantics as S
from spec.schema import Op, Spec

OP_CODES = {
    "wait_full": S.WAIT_FULL, "wait_empty": S.WAIT_EMPTY, "try_full": S.TRY_FULL,
    "try_empty": S.TRY_EMPTY, "arrive_full": S.ARRIVE_FULL, "arrive_empty": S.ARRIVE_EMPTY,
    "expect_tx": S.EXPECT_TX, "copy": S.COPY, "write": S.WRITE, "read": S.READ,
    "commit_empty": S.COMMIT_EMPTY, "advance": S.ADVANCE, "reset": S.RESET, "drain": S.DRAIN,
    "sync": S.SYNC,
}
OP_NAMES = {v: k for k, v in OP_CODES.items()}
TARGET_CODES = {"self": S.T_SELF, "leader": S.T_LEADER, "peer": S.T_PEER, "all": S.T_ALL}
KIND_BITS = (S.DEADLOCK, S.READ_BEFORE_FILL, S.OVERWRITE_BEFORE_DRAIN, S.PHASE_ALIAS,
             S.OVER_ARRIVAL, S.TX_RANGE, S.INFLIGHT_AT_EXIT)
MAX_INFLIGHT = 24

# The numba-visible model: every member an int64 numpy array.
Tables = namedtuple("Tables", ["cfg", "ring", "agent", "prog", "bar_count", "bytes_vals", "ent"])
# Bit packing of the state vector into `words` int64 words (63 bits used per word).
Packing = namedtuple("Packing", ["word", "shift", "width", "bias", "live"])


@dataclass(frozen=True)
class Agent:
    name: str
    role: str
    cta: int
    index: int          # within its role in its CTA; 0 is the leader
    ops: tuple          # flattened program: (Op, drain_step or -1) per pc
    body_start: int
    body_end: int
    items: int
    initial_stage: int
    initial_phase: int


def bits_for(max_value: int) -> int:
    return max(int(max_value), 0).bit_length()


def flatten_program(spec: Spec, role, leader: bool):
    """(ops, body_start, body_end): the agent's program, @leader ops kept only for the leader."""
    def expand(ops):
        out = []
        for op in ops:
            if op.leader_only and not leader:
                continue
            if op.name == "drain":
                out.extend((op, k) for k in range(spec.stages))
            else:
                out.append((op, -1))
        return out
    pro, body, epi = expand(role.prologue), expand(role.body), expand(role.epilogue)
    return tuple(pro + body + epi), len(pro), len(pro) + len(body)


class Model:
    """A compiled spec: tables for the engines plus names and views for people."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.backend = BACKEND_CODES[spec.backend]
        self.ctas = spec.cluster_size
        self.rings = 1
        self.max_stages = spec.stages
        self.agents = self._make_agents()
        self.barrier_names = [b.name for b in spec.barriers]
        self.bytes_vals = sorted({op.n for a in self.agents for op, _ in a.ops if op.name == "copy"}) or [0]
        self.inflight = self._inflight_capacity()
        self.tables = self._make_tables()
        self.packing, self.words = self._make_packing()

    # ------------------------------------------------------------ building

    def _make_agents(self):
        spec = self.spec
        agents = []
        for role in spec.roles:
            for cta in range(self.ctas):
                for i in range(role.count):
                    ops, bs, be = flatten_program(spec, role, leader=(i == 0))
                    name = f"{role.name}[{i}]" if self.ctas == 1 else f"cta{cta}.{role.name}[{i}]"
                    agents.append(Agent(name, role.name, cta, i, ops, bs, be, role.items,
                                        role.initial_stage, role.initial_phase))
        return agents

    def _inflight_capacity(self) -> int:
        """Room for in-flight copies and commits: a correct ring has at most one lap of them."""
        per_lap = 0
        for a in self.agents:
            for op, _ in a.ops:
                if op.name in ("copy", "commit_empty"):
                    per_lap += self.ctas if op.to == "all" and self.ctas > 1 else 1
        return min(MAX_INFLIGHT, per_lap * (self.max_stages + 1)) if per_lap else 0

    def _layout(self):
        n_agents = len(self.agents)
        agf = S.F_RING0 + 3 * self.rings
        n_sig = self.ctas * self.rings * self.max_stages * 2
        n_slot = self.ctas * self.rings * self.max_stages
        n_bar = len(self.barrier_names) * self.ctas
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
                        len(self.barrier_names)], dtype=np.int64)
        ring = np.array([[spec.stages, spec.producer_arrive_count, spec.consumer_arrive_count]],
                        dtype=np.int64)
        prog_rows, agent_rows = [], []
        for a in self.agents:
            agent_rows.append([a.cta, a.body_start, a.body_end, len(a.ops), a.items, len(prog_rows),
                               a.initial_stage, a.initial_phase])
            for op, _ in a.ops:
                prog_rows.append([OP_CODES[op.name], 0, op.n, TARGET_CODES[op.to],
                                  int(op.unless_ready),
                                  self.barrier_names.index(op.barrier) if op.name == "sync" else -1,
                                  self.bytes_vals.index(op.n) if op.name == "copy" else 0])
        bar_count = np.zeros((max(len(self.barrier_names), 1), self.ctas), dtype=np.int64)
        for b, bar in enumerate(spec.barriers):
            for cta in range(self.ctas):
                bar_count[b, cta] = bar.count if bar.count else sum(
                    1 for a in self.agents if a.cta == cta and a.role in bar.roles)
        self.entry_fields = self._entry_layout()
        ent = np.array(self.entry_fields, dtype=np.int64)
        return Tables(cfg, ring, np.array(agent_rows, dtype=np.int64).reshape(-1, 8),
                      np.array(prog_rows or [[0] * 7], dtype=np.int64), bar_count,
                      np.array(self.bytes_vals, dtype=np.int64), ent)

    def _entry_layout(self):
        """(shift, mask) of kind, cta, ring, stage, value, bytes index in a packed entry."""
        max_items = max([a.items for a in self.agents] + [1])
        max_n = max([op.n for a in self.agents for op, _ in a.ops if op.name == "commit_empty"] + [1])
        widths = [2, bits_for(self.ctas - 1), bits_for(self.rings - 1), bits_for(self.max_stages - 1),
                  bits_for(max(max_items + 1, max_n)), bits_for(len(self.bytes_vals) - 1)]
        fields, shift = [], 0
        for w in reversed(widths):  # kind in the top bits: copies sort before commits
            fields.append((shift, (1 << w) - 1))
            shift += w
        self.entry_bits = shift
        return list(reversed(fields))

    def _field_bounds(self):
        """(bias, max offset) per state field: the packing widths come from these."""
        spec = self.spec
        bounds = []
        total_ops = sum(len(a.ops) - (a.body_end - a.body_start) + a.items * (a.body_end - a.body_start)
                        for a in self.agents)
        for a in self.agents:
            n_body = a.body_end - a.body_start
            adv = sum(1 for i, (op, _) in enumerate(a.ops) if op.name in ("advance", "drain")
                      and not a.body_start <= i < a.body_end)
            adv += a.items * sum(1 for op, _ in a.ops[a.body_start:a.body_end] if op.name in ("advance", "drain"))
            laps = (a.initial_stage + adv) // spec.stages
            has_sync = any(op.name == "sync" for op, _ in a.ops)
            has_try = any(op.name.startswith("try_") for op, _ in a.ops)
            bounds += [(0, len(a.ops)), (0, a.items if n_body else 0), (0, int(has_sync))]
            bounds += [(0, spec.stages - 1), (a.initial_phase, laps), (0, int(has_try))]
        has_tx = any(op.name in ("expect_tx", "copy") for a in self.agents for op, _ in a.ops)
        max_n = max([op.n for a in self.agents for op, _ in a.ops
                     if op.name in ("arrive_full", "arrive_empty", "commit_empty")] + [1])
        updates = total_ops * self.ctas
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            expected = spec.producer_arrive_count if sig % 2 == FULL else spec.consumer_arrive_count
            if self.backend == AMD:
                bounds += [(0, updates * max_n), (0, 0), (0, 0), (0, 0)]
            else:
                bounds += [(0, updates), (0, expected),
                           (-nvidia.TX_LIMIT, 2 * nvidia.TX_LIMIT) if has_tx else (0, 0), (0, 1)]
        max_items = max([a.items for a in self.agents] + [0])
        bounds += [(-1, max_items)] * (self.ctas * self.rings * self.max_stages)
        for b in range(len(self.barrier_names)):
            bounds += [(0, int(self.tables.bar_count[b].max()))] * self.ctas
        bounds += [(0, (1 << self.entry_bits) - 1)] * self.inflight
        return bounds

    def _make_packing(self):
        word, shift, width, bias = [], [], [], []
        w, used = 0, 0
        for b, span in self._field_bounds():
            bits = bits_for(span)
            if used + bits > 63:
                w, used = w + 1, 0
            word.append(w)
            shift.append(used)
            width.append(bits)
            bias.append(b)
            used += bits
        arr = lambda xs: np.array(xs, dtype=np.int64)
        live = [f for f, bits in enumerate(width) if bits > 0]
        return Packing(arr(word), arr(shift), arr(width), arr(bias), arr(live)), w + 1

    # ------------------------------------------------------------ the model interface

    def initial_vector(self) -> np.ndarray:
        st = np.zeros(self.n_fields, dtype=np.int64)
        for i, a in enumerate(self.agents):
            base = i * self.agf
            pc, item = S.settle_pc(self.tables, i, 0, 0)
            st[base + S.F_PC], st[base + S.F_ITEM] = pc, item
            st[base + S.F_RING0] = a.initial_stage
            st[base + S.F_RING0 + 1] = a.initial_phase
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            b = self.off_sig + 4 * sig
            if self.backend != AMD:
                expected = self.spec.producer_arrive_count if sig % 2 == FULL else self.spec.consumer_arrive_count
                st[b], st[b + 1], st[b + 2] = nvidia.init(expected)
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

    def sig_name(self, sig: int) -> str:
        s = (sig // 2) % self.max_stages
        cta = sig // 2 // self.max_stages // self.rings
        return f"cta{cta}.{'full' if sig % 2 == FULL else 'empty'}[{s}]"

    def sig_short(self, sig: int) -> str:
        name = self.sig_name(sig)
        return name.split(".", 1)[1] if self.ctas == 1 else name

    def slot_name(self, pos: int) -> str:
        i = pos - self.off_slot
        return f"cta{i // self.rings // self.max_stages}.slot[{i % self.max_stages}]"

    def decode_entry(self, e: int) -> dict:
        f = [(e >> sh) & mask for sh, mask in self.entry_fields]
        if f[S.E_KIND] == S.ENTRY_COPY:
            return {"kind": "copy", "cta": f[S.E_CTA], "stage": f[S.E_STAGE], "tag": f[S.E_VAL] - 1,
                    "bytes": self.bytes_vals[f[S.E_BIDX]]}
        return {"kind": "commit", "cta": f[S.E_CTA], "stage": f[S.E_STAGE], "n": f[S.E_VAL]}

    def inflight_entries(self, state) -> list[int]:
        return [e for e in state[self.off_inf:self.off_inf + self.inflight] if e]

    def view(self, state) -> dict:
        """The readable state of checker/trace.py."""
        agents = {}
        for i, a in enumerate(self.agents):
            op = self.current_op(state, i)
            rb = i * self.agf + S.F_RING0
            agents[a.name] = {
                "role": a.role, "cta": a.cta, "index": a.index,
                "pc": self.agent_field(state, i, S.F_PC), "op": op.text if op else None,
                "item": self.agent_field(state, i, S.F_ITEM), "stage": state[rb],
                "phase": state[rb + 1], "ready": bool(state[rb + 2]),
                "at_sync": bool(self.agent_field(state, i, S.F_SYNC)), "done": op is None,
            }
        signals = {}
        for sig in range(self.ctas * self.rings * self.max_stages * 2):
            if (sig // 2) % self.max_stages >= self.spec.stages:
                continue
            b = self.off_sig + 4 * sig
            signals[self.sig_name(sig)] = ({"count": state[b]} if self.backend == AMD else
                                           {"phase_no": state[b], "pending": state[b + 1], "tx": state[b + 2]})
        slots = {self.slot_name(p): state[p] for p in range(self.off_slot, self.off_bar)}
        barriers = {}
        for b, name in enumerate(self.barrier_names):
            for cta in range(self.ctas):
                barriers[f"cta{cta}.{name}"] = state[self.off_bar + b * self.ctas + cta]
        return {"agents": agents, "signals": signals, "slots": slots,
                "inflight": [self.decode_entry(e) for e in self.inflight_entries(state)],
                "barriers": barriers}

    # ------------------------------------------------------------ printing actions

    def actor(self, state, action) -> str:
        if action < len(self.agents):
            return self.agents[action].name
        e = self.decode_entry(state[self.off_inf + action - len(self.agents)])
        return f"cta{e['cta']}.{e['kind']}"

    def format_action(self, state, action) -> str:
        """`consumer[1].wait_full(stage=0, phase=1)`, or `cta0.copy.land(stage=2, item=3, bytes=16384)`."""
        n_agents = len(self.agents)
        if action >= n_agents:
            e = self.decode_entry(state[self.off_inf + action - n_agents])
            if e["kind"] == "copy":
                return f"cta{e['cta']}.copy.land(stage={e['stage']}, item={e['tag']}, bytes={e['bytes']})"
            return f"cta{e['cta']}.commit.fire(stage={e['stage']}, n={e['n']})"
        a = self.agents[action]
        op = self.current_op(state, action)
        rb = action * self.agf + S.F_RING0
        stage, phase = state[rb], state[rb + 1]
        item = self.agent_field(state, action, S.F_ITEM)
        args = [f"stage={stage}", f"phase={phase}"]
        if op.name in ("arrive_full", "arrive_empty", "commit_empty") and op.n != 1:
            args.append(f"n={op.n}")
        if op.name in ("expect_tx", "copy"):
            args.append(f"bytes={op.n}")
        if op.name in ("write", "read", "copy"):
            args.insert(1, f"item={item}")
        if op.to != "self" and self.ctas > 1:
            args.append(f"to={op.to}")
        if op.unless_ready:
            args.append("unless=ready")
        if op.name == "sync":
            args = [op.barrier]
        return f"{a.name}.{op.name}({', '.join(args)})"

    def action_event(self, state, action) -> dict:
        n_agents = len(self.agents)
        if action >= n_agents:
            e = self.decode_entry(state[self.off_inf + action - n_agents])
            return {"kind": "land" if e["kind"] == "copy" else "fire", "entry": e}
        op = self.current_op(state, action)
        return {"kind": "agent", "agent": self.agents[action].name, "op": op.name,
                "pc": self.agent_field(state, action, S.F_PC)}

    def action_stage_phase(self, state, action):
        if action >= len(self.agents):
            return self.decode_entry(state[self.off_inf + action - len(self.agents)])["stage"], None
        rb = action * self.agf + S.F_RING0
        return state[rb], state[rb + 1]


def compile_model(spec: Spec) -> Model:
    return Model(spec)
