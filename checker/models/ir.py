"""What the Promela and Murphi exports share (checker/models/exporter.py says what they export).

`check_exportable` refuses what they cannot express, in one line; `IR` is the compiled model
(checker.core.model) seen from the exporters: agents grouped by program (`Group`, with the program
walk: next pc, every=/at= guards, tags), the constants, and the value range of every field.
The signals are the backend's (its record, backends/capabilities.py, `IR.caps`; the exports take
a backend whose signals are mbarriers, `phase_parity`): checker/models/signals.py prints its
rules (`IR.signal_rules()`) for either language, rather than copies of them.
The IR asks checker/core/program.py's OP_EFFECTS what each op does, never its name; the step of
each op is checker/models/steps.py.

Two rules of docs/rules.md are read off the compiled model rather than restated:
- **Slot parts** (checker/core/program.py `slot_parts`), per slot (rule R3): the IR keeps the main
  ring's parts and which part each fill op stores into (`Group.parts`, -1: every part, a
  consumer-side fill). A read of tag t in slot s checks the parts the program fills for t in s
  (every part if none): the stage of each read in each item is a function of the program
  position (`IR.read_stages`), so semantics.part_filled_for answers once per read and item
  (`IR.read_classes`), and `read_miss_text` prints semantics.read_miss's test for either
  language, with the items in which a read checks other parts told apart by `item % P`.
- **The phase_alias window after `reset`**: a group whose agents have a `reset` of the ring
  carries (k', ph') per (stage, signal kind) (`Group.window`, `Group.reset_until`, with the
  ranges the engine packs them in); the exports print the rules' intended_after and in_window_at.

Clusters and rings (issue 18): a group is agents of one CTA (`Group.cta`); signals, slots and
named barriers are per (CTA, ring, stage); `Ring` is a ring of the model with its own stages,
counts and slot parts; `Group.ring_info` holds each agent's start stage and phase, phase range,
try flag and window per ring. Where an op lands is spec.schema `targets` (the rule
semantics.targets_mask compiles), read here once per op: `Group.targets`.

Async reads and commits (checker/core/inflight.py): an in-flight entry's lowest digits
(`IR.entry_digits`) are, where they exist, a copy's part, a peer flag in a cluster (a copy or
commit issued by an agent of another CTA than the one it targets), the agent an async read or
a commit names (EAG), seq (ESQ, with async reads: a read's place in its agent's FIFO, a
commit's count of its agent's earlier reads in flight) and cseq (ECS, with commits: a commit's
count of its agent's earlier commit entries in flight). An entry acts when seq and cseq are 0
(`IR.ready_unit`): so an agent's commits fire in the order it issued them (rule R1), the
entries of one `to=all` commit in any order. `Group.reads_async` and `Group.commits` mark the
groups whose agents issue them. An async write (write_async, docs/rules.md "Async writes") is
an async read's entry with the bytes digit READ_WRITES (`IR.has_writes`): in its agent's FIFO
(commits, read_wait and the exit count it), a fill still in flight for a read of its slot,
and no read for reads_pending.

Nested loops (spec/load_loops.py): a body fill or read of a tile-level ring stores or expects
the tile, item / Op.tag_div (`Group.divs`, `item_tag`; semantics.op_tag); reads_pending's walk
stops past item (t + 1) * div - 1 (`Group.div`, the engine's A_DIV) and the parts a read checks
are those filled for the read's tile (`IR.read_classes`).

Exit (rule R2): the step that makes a CTA gone is inflight_at_exit when an async read of it or
a peer's copy or commit into it is in flight; its own copies and commits then are the
engine's warning unawaited_at_exit, which the exports do not report, and their landing or
firing into the gone CTA is no violation. `IR(spec, fmt, strict_exit=True)` is the strict
reading (pipeproof --strict-exit): anything in flight into a CTA at its exit, and any landing
or firing into a gone CTA, is inflight_at_exit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeproof.backends.base import FULL
from pipeproof.backends.capabilities import backend
from pipeproof.backends.printed import printed_backend
from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import compile_model
from pipeproof.checker.core import EMPTY, OP_EFFECTS, part_of
from pipeproof.spec.schema import Spec, SpecError, targets

FORMATS = ("promela", "murphi")
SUBSET = ("nvidia backend, clusters (to=, ctas) and several rings (ring=), nested loops (tiles, "
          "k_blocks), ops wait/try/arrive/expect_tx/copy/write/write_async/read/read_async/read_wait/"
          "commit_empty/commit_full/advance/reset/drain/sync/sync_arrive/sync_wait with @leader, "
          "unless=ready and every=/at=")
# Ops the exports cannot express, with the feature's name for the refusal (none now: the async
# write, write_async, is exported since issue 47).
UNSUPPORTED_OPS: dict[str, str] = {}
KIND_MESSAGES = {
    "deadlock": "deadlock",
    "read_before_fill": "read_before_fill: a read finds another item, or a copy into the slot still in flight",
    "overwrite_before_drain": "overwrite_before_drain: a slot is refilled while a reader has not read it",
    "phase_alias": "phase_alias: a parity wait outside its phase window",
    "over_arrival": "over_arrival: an arrive above pending (trap)",
    "over_arrival_ahead": "over_arrival: a phase completed that no wait observed",
    "tx_range": "tx_range: a tx-count beyond 2^20-1 (trap)",
    "inflight_at_exit": "inflight_at_exit: the CTA exits while something is in flight into it, or is targeted after",
    "inflight_capacity": "inflight_capacity: more copies/commits in flight than the model holds (inconclusive)",
}
ENTRY_COPY, ENTRY_COMMIT, ENTRY_READ = 1, 2, 3  # checker/core/state_layout.py's entry kinds
COMMIT_ON_FULL = 1  # a commit entry's bytes digit when it fires on full (state_layout's)
READ_WRITES = 1  # an async op entry's bytes digit when it is an async write (state_layout's)
# signal kind -> (the name of its array, the constant of the count it expects), in both languages
SIGNALS = {FULL: ("full", "PAC"), EMPTY: ("empty", "CAC")}


# ---------------------------------------------------------------------------------- checking

def check_exportable(spec: Spec, fmt: str = "promela or murphi") -> None:
    """Raise SpecError (one line) naming the first feature the export cannot express."""
    def refuse(where: str, what: str):
        raise SpecError(f"{spec.path}: {where}: {what} cannot be exported to {fmt} "
                        f"(the export covers: {SUBSET})")

    # The one capability the exports need: a signal is an mbarrier (phase_no, pending, tx and
    # an observed flag; waits test a phase parity, so the phase_alias window and over-arrival
    # traps exist). Its rules are printed from its record (IR.signal_rules).
    if not backend(spec.backend).phase_parity:
        refuse("[pipeline] backend", f"the {spec.backend} backend")
    for role in spec.roles:
        for section in ("prologue", "body", "epilogue"):
            for i, op in enumerate(getattr(role, section)):
                where = f"role '{role.name}' {section}[{i}]"
                if op.name in UNSUPPORTED_OPS:
                    refuse(where, f"op '{op.text or op.name}': {UNSUPPORTED_OPS[op.name]}")
                if op.ahead is not None:
                    refuse(where, f"op '{op.text or op.name}': a fill for a later item (ahead=)")
                if _store_elsewhere(spec, op):
                    refuse(where, f"op '{op.text or op.name}': a write into another CTA (to=)")


def _store_elsewhere(spec: Spec, op) -> bool:
    """A `write` or `write_async` aimed at CTAs other than its own (`to=` other than self in
    a cluster: a 2-SM leader MMA), which the exports do not express yet (issue 47)."""
    e = OP_EFFECTS[op.name]
    return e.stores and e.issues != "copy" and op.to != "self" and spec.cluster_size > 1


# ---------------------------------------------------------------------------------- the IR

@dataclass(frozen=True)
class Ring:
    """A ring of the model (Spec.all_rings order: the main ring is 0): its stages, the counts
    its signals expect, its slot parts (checker/core/program.py slot_parts) and its names in both
    languages (`suffix` "" for the main ring, so a one-ring model reads as before)."""
    index: int
    name: str
    suffix: str           # appended to per-ring names: "" (main) or "_<name>"
    stages: int
    pac: int
    cac: int
    parts: tuple          # Part per slot part

    @property
    def const(self) -> str:
        """The name of its stage count."""
        return "STAGES" + self.suffix

    @property
    def n_parts(self) -> int:
        return len(self.parts)

    def expected(self, kind: int) -> str:
        """The name of the count a signal of `kind` expects."""
        return SIGNALS[kind][1] + self.suffix


@dataclass(frozen=True)
class GroupRing:
    """A group's agents on one ring: start stage and phase, the largest phase, whether the
    program tries the ring's signals, the last pc a `reset` of it may lie ahead (-1: none) and
    the (k', ph') range of the window records then."""
    init_stage: int
    init_phase: int
    phase_max: int
    has_try: bool
    reset_until: int = -1
    window: tuple = ()

    @property
    def has_window(self) -> bool:
        return self.reset_until >= 0


@dataclass
class Group:
    """Agents with one program: a role, or its leader and the rest when it has @leader ops,
    in one CTA."""
    ident: str            # identifier-safe name
    label: str            # for people
    first: int            # index of the first agent in model.agents
    size: int
    ops: tuple            # (Op, drain_step) per pc
    body_start: int
    body_end: int
    items: int
    init_pc: int
    init_item: int
    init_stage: int
    init_phase: int
    phase_max: int
    has_try: bool
    guards: dict          # pc -> (every, at) of body ops that run only in some items
    syncs: dict           # barrier index -> pcs of its `sync` ops
    arrives: tuple        # barrier indices this group sync_arrive's on
    tags: tuple = ()      # per pc: the prologue's or epilogue's tag of a fill or read, else -1
    divs: tuple = ()      # per pc: a body tag's divisor (nested loops: a tile-level ring's tag is
                          # item / k_blocks, Op.tag_div), else 1
    parts: tuple = ()     # per pc: the slot part a fill stores into (-1: every part), else 0
    reset_until: int = -1  # the last pc at which a `reset` may lie ahead (model.reset_until), or -1
    window: tuple = ()    # (k' lowest, k' highest, ph' lowest, ph' highest) of the agents' records
    cta: int = 0          # the CTA its agents are in
    rings: tuple = ()     # per pc: the ring index of the op
    targets: tuple = ()   # per pc: the CTAs its update or issue lands on (spec.schema targets)
    ring_info: tuple = ()  # GroupRing per ring

    @property
    def has_window(self) -> bool:
        """The agents keep (k', ph') per signal of some ring: their program has a `reset`."""
        return any(r.has_window for r in self.ring_info)

    def records_raw(self, p: int, r: int = 0) -> bool:
        """A wait at `p` that passes records (k, ph) as they are: a `reset` of ring r may still
        lie ahead (semantics.window_passed); past reset_until it records (k - (ph - p0), p0)."""
        return p <= self.ring_info[r].reset_until

    def tag(self, p: int, item: str) -> str:
        """The tag the fill or read at `p` stores or expects (semantics.op_tag)."""
        return str(self.tags[p]) if self.tags[p] >= 0 else item_tag(item, self.divs[p])

    @property
    def div(self) -> int:
        """The largest divisor of its body tags (the engine's A_DIV): past item (t + 1) * div - 1
        no body read of its program expects tag t (semantics.reads_pending stops there)."""
        return max(self.divs + (1,))

    def reads_by_tag(self, r: int | None = None) -> dict:
        """{(tag (-1: the item's), its divisor): pcs of the reads expecting it} (on ring r;
        None: any ring); a body read of item i expects i / divisor (a tile-level ring's tile)."""
        out = {}
        for p, (op, _) in enumerate(self.ops):
            if OP_EFFECTS[op.name].checks_read and (r is None or self.rings[p] == r):
                out.setdefault((self.tags[p], self.divs[p] if self.tags[p] < 0 else 1), []).append(p)
        return out

    def moving(self, move: str, r: int = 0) -> list[int]:
        """pcs of the ops that move the agent's stage of ring r so (Effects.move: "advance",
        "reset")."""
        return [p for p, (op, _) in enumerate(self.ops) if _moves(op, move) and self.rings[p] == r]

    @property
    def reads_async(self) -> bool:
        """Its program issues async reads (read_async): its in-flight reads, and the commits
        that wait for them, name its agents."""
        return any(OP_EFFECTS[op.name].issues == "read" for op, _ in self.ops)

    @property
    def commits(self) -> bool:
        """Its program issues commits (commit_empty, commit_full): each names its agent (its later commits
        wait for it, and for the agent's async reads before it)."""
        return any(OP_EFFECTS[op.name].issues == "commit" for op, _ in self.ops)

    @property
    def names_agents(self) -> bool:
        """An in-flight entry names its agents by number (async reads, commits)."""
        return self.reads_async or self.commits

    def async_reads_on(self, r: int) -> bool:
        """Its program issues async reads of ring r's slots."""
        return any(OP_EFFECTS[op.name].issues == "read" and self.rings[p] == r
                   for p, (op, _) in enumerate(self.ops))

    @property
    def has_sync(self) -> bool:
        return any(self.syncs.values())

    @property
    def length(self) -> int:
        return len(self.ops)

    @property
    def agents(self) -> range:
        return range(self.first, self.first + self.size)

    def next_pc(self, p: int):
        """How the program moves on after executing the op at `p` (checker.semantics.next_pc):
        ('plain', q) or ('loop', body_start, body_end) where the item counter steps."""
        bs, be = self.body_start, self.body_end
        if bs < be and p == be - 1:
            return ("loop", bs, be)
        q = p + 1
        if bs < be and q == bs and self.items == 0:
            q = be  # an empty item range skips the body (settle_pc)
        return ("plain", q)

    def can_finish_at(self, p: int) -> bool:
        if self.guards:
            return True  # skipping guarded ops may reach the end from anywhere
        nxt = self.next_pc(p)
        return (nxt[0] == "plain" and nxt[1] == self.length) or (nxt[0] == "loop" and nxt[2] == self.length)


class IR:
    """The compiled model seen from the exporters: groups, constants and value ranges."""

    def __init__(self, spec: Spec, fmt: str, strict_exit: bool = False):
        """`strict_exit`: a CTA gone with its own copies or commits in flight into it is
        inflight_at_exit (PTX's strict reading), as is a landing or firing into a gone CTA;
        by default that is the engine's warning unawaited_at_exit, which the exports do not
        report (rule R2)."""
        check_exportable(spec, fmt)
        self.spec = spec
        self.strict_exit = bool(strict_exit)
        self.model = m = compile_model(spec)
        self.caps = m.caps                # the backend's record: its rules print the signals
        self.stages = spec.stages
        self.pac = spec.producer_arrive_count
        self.cac = spec.consumer_arrive_count
        self.ctas = m.ctas
        self.n_agents = len(m.agents)
        self.barrier_names = [b.name for b in spec.barriers]
        used = {"ag_main"}
        self._rings(m, used)
        self._groups(m, used)
        self._ranges(spec, fmt)
        self._entries(spec, fmt)
        # The phase_alias window records (k', ph') of the groups with a reset (Group.window).
        self.has_window = any(g.has_window for g in self.groups)
        self.total_steps = sum(_executed(g, p) * ((1 + len(g.targets[p])) if OP_EFFECTS[op.name].issues else 1)
                               for g in self.groups for p, (op, _) in enumerate(g.ops))  # + landings
        self._barriers(m, used)

    @property
    def rules(self):
        """The backend's rules module (backends/protocol.py), read at each export."""
        return self.caps.rules

    @property
    def tx_limit(self) -> int:
        return self.rules.TX_LIMIT

    def signal_rules(self):
        """The backend's rules over printed expressions (backends/printed.py), read at each
        export so that the text always follows the backend."""
        return printed_backend(self.rules)

    def _rings(self, m, used: set):
        """The model's rings, and the stage dimension of signals, slots and entries."""
        self.rings = []
        for r, ring in enumerate(m.ring_specs):
            suffix = "" if r == 0 else "_" + _ident(ring.name, used, "")
            self.rings.append(Ring(r, ring.name, suffix, ring.stages, ring.producer_arrive_count,
                                   ring.consumer_arrive_count, m.parts[r]))
        self.n_rings = len(self.rings)
        self.max_stages = m.max_stages
        # the stage dimension of signals, slots and entries: the main ring's, or the longest
        self.stage_const = "STAGES" if self.n_rings == 1 else "MAXS"

    def _groups(self, m, used: set):
        """The agents grouped by program, CTA and the slot parts they fill (Group)."""
        self.groups: list[Group] = []
        start = 0
        self.parts = m.parts[0]           # the main ring's slot parts
        self.n_parts = m.max_parts        # parts per slot (the most of any ring)
        spans = []
        while start < len(m.agents):
            end = start + 1
            # one program, one CTA and the same parts: a producer-side agent that fills owns
            # its parts, so it is a group of its own (as it is left out of symmetry classes)
            while (end < len(m.agents) and m.agents[end].role == m.agents[start].role
                   and m.agents[end].cta == m.agents[start].cta
                   and m.agents[end].ops == m.agents[start].ops
                   and _parts_of(m, end) == _parts_of(m, start)):
                end += 1
            spans.append((start, end))
            start = end
        init = m.initial_vector()
        for start, end in spans:
            self.groups.append(self._group(m, init, spans, start, end, used))

    def _group(self, m, init, spans, start: int, end: int, used: set) -> Group:
        """The group of agents [start, end)."""
        a = m.agents[start]
        base = start * m.agf
        label, ident = _names(m, spans, start, end, used)
        ring_of = lambda op: m.ring_names.index(op.ring)
        info = []
        for r, ring in enumerate(self.rings):
            adv = lambda ops: sum(1 for op, _ in ops if _moves(op, "advance") and ring_of(op) == r)
            n_adv = (adv(a.ops[:a.body_start]) + adv(a.ops[a.body_end:])
                     + a.items * adv(a.ops[a.body_start:a.body_end]))
            until = m.reset_until[start][r]
            info.append(GroupRing(
                init_stage=a.initial_stages[r], init_phase=a.initial_phases[r],
                phase_max=a.initial_phases[r] + (a.initial_stages[r] + n_adv) // ring.stages,
                has_try=any(OP_EFFECTS[op.name].tries and ring_of(op) == r for op, _ in a.ops),
                reset_until=until,
                window=_window_range(m, range(start, end), r) if until >= 0 else ()))
        return Group(
            ident=ident, label=label, first=start, size=end - start, ops=a.ops,
            body_start=a.body_start, body_end=a.body_end, items=a.items,
            init_pc=int(init[base + S.F_PC]), init_item=int(init[base + S.F_ITEM]),
            init_stage=info[0].init_stage, init_phase=info[0].init_phase,
            phase_max=info[0].phase_max, has_try=any(i.has_try for i in info),
            guards={p: (op.every, op.at) for p, (op, _) in enumerate(a.ops) if op.every != 1},
            syncs={b: [p for p, (op, _) in enumerate(a.ops) if _on_barrier(op, "sync", name)]
                   for b, name in enumerate(self.barrier_names)},
            arrives=tuple(b for b, name in enumerate(self.barrier_names)
                          if any(_on_barrier(op, "arrive", name) for op, _ in a.ops)),
            tags=tuple(m.tag_of(a, p) for p in range(len(a.ops))),
            divs=tuple(op.tag_div for op, _ in a.ops),
            parts=_parts_of(m, start), reset_until=info[0].reset_until, window=info[0].window,
            cta=a.cta, rings=tuple(ring_of(op) for op, _ in a.ops),
            targets=tuple(targets(self.ctas, a.cta, op.to) for op, _ in a.ops),
            ring_info=tuple(info))

    def _ranges(self, spec: Spec, fmt: str):
        """The value range of the items, tags, counts, phase_no, phases and pending."""
        m = self.model
        self.ops_all = [op for g in self.groups for op, _ in g.ops]
        self.has_tx = any(OP_EFFECTS[op.name].tx for op in self.ops_all)
        self.bytes_vals = list(m.bytes_vals)
        self.inflight = m.inflight
        self.max_items = max([g.items for g in self.groups] + [1])
        self.max_tag = max(self.max_items - 1, m.max_tag)  # a prologue's or epilogue's tag
        self.tag_outside = m.tag_prologue                 # tags from here on are not items
        self.max_commit = max([op.n for op in self.ops_all if OP_EFFECTS[op.name].issues == "commit"] + [1])
        self.max_count = max([op.n for op in self.ops_all if OP_EFFECTS[op.name].arrives_n] + [1])
        # Every completed phase of a signal consumed `expected` arrival units (more traps), so
        # phase_no <= all arrival units of that kind on that ring (at any CTA) / expected.
        units = {(r, k): 0 for r in range(self.n_rings) for k in (FULL, EMPTY)}
        for g in self.groups:
            for p, (op, _) in enumerate(g.ops):
                e = OP_EFFECTS[op.name]
                if e.updates >= 0:  # a copy's landing updates by bytes only (units 0)
                    units[g.rings[p], e.updates] += (_executed(g, p) * len(g.targets[p])
                                                     * (op.n if e.arrives_n else e.units))
        self.pn_max = max([units[r.index, FULL] // max(r.pac, 1) for r in self.rings]
                          + [units[r.index, EMPTY] // max(r.cac, 1) for r in self.rings] + [1])
        self.ph_max = max(i.phase_max for g in self.groups for i in g.ring_info)
        if fmt == "promela" and self.ph_max > (1 << 31) - 1:
            raise SpecError(f"{spec.path}: initial_phase: a phase above 2^31-1 cannot be exported to "
                            f"promela (SPIN's int is 32 bits)")
        self.pend_max = max(max(r.pac, r.cac) for r in self.rings)

    def _entries(self, spec: Spec, fmt: str):
        """The digits of an in-flight entry and their sizes.

        In-flight entry (checker/core/inflight.py): ((((kind * CTAS + cta) * RINGS + ring) * STAGES
        + stage) * EV + value) * NB + bytes index (the CTAS and RINGS digits only where there
        are several), then, where they exist, lower digits (entry_digits): * EP + the part a
        copy stores into + 1 (0: every part; a commit's 0) with slots of several parts;
        * EPR + peer in a cluster (1: a copy or commit issued by an agent of another CTA than
        the one it targets); * EAG + agent with async reads or commits (an async read's agent,
        a commit's: every commit names its agent, its later commits wait for it); * ESQ + seq
        with async reads (a read's place in its agent's FIFO, 0: the oldest, which may finish;
        a commit's count of its agent's earlier reads still in flight); * ECS + cseq with
        commits (a commit's count of its agent's earlier commit entries still in flight). A
        read or commit acts only when seq and cseq are 0 (rule R1: an agent's commits fire in
        the order it issued them)."""
        self.has_reads = any(g.reads_async for g in self.groups)
        # an async write's entry (write_async) is an async read's with the bytes digit
        # READ_WRITES: the slot is being written until it finishes (state_layout.entry_writes)
        self.has_writes = any(OP_EFFECTS[op.name].async_write for op in self.ops_all)
        self.has_commits = any(g.commits for g in self.groups)
        self.names_agents = self.has_reads or self.has_commits
        self.has_peer = self.ctas > 1
        self.ev = max(self.max_tag + 2, self.max_commit) + 1
        # a commit entry's bytes digit: COMMIT_ON_FULL (1) when it fires on full (commit_full),
        # 0 on empty (checker/core/state_layout.py); so at least 2 where a commit fires on full
        self.full_commits = any(OP_EFFECTS[op.name].issues == "commit" and OP_EFFECTS[op.name].updates == FULL
                                for op in self.ops_all)
        self.enb = max(len(self.bytes_vals), 2 if self.full_commits or self.has_writes else 1)
        self.ep = self.n_parts + 1 if self.n_parts > 1 else 1
        self.epr = 2 if self.has_peer else 1
        self.eag = self.n_agents if self.names_agents else 1
        self.esq = self.inflight + 1 if self.has_reads else 1
        self.ecs = self.inflight + 1 if self.has_commits else 1
        self.emax = ((4 if self.has_reads else 3) * self.ctas * self.n_rings * self.max_stages * self.ev
                     * self.enb * self.ep * self.epr * self.eag * self.esq * self.ecs - 1)
        if fmt == "promela" and self.emax > (1 << 31) - 1:
            raise SpecError(f"{spec.path}: an in-flight entry above 2^31-1 cannot be exported to "
                            f"promela (SPIN's int is 32 bits)")

    def _barriers(self, m, used: set):
        """Named barriers: (ident, largest arrival count of a CTA, most generations) per
        barrier; the count of each CTA in bar_counts[b][cta]."""
        self.barriers = []
        self.bar_counts = []
        for b, name in enumerate(self.barrier_names):
            counts = tuple(int(c) for c in m.tables.bar_count[b, :self.ctas])
            arrivals = sum(_executed(g, p) for g in self.groups for p, (op, _) in enumerate(g.ops)
                           if _on_barrier(op, "sync", name) or _on_barrier(op, "arrive", name))
            least = min([c for c in counts if c > 0] or [1])
            self.barriers.append((_ident(name, used, "bar_"), max(counts), arrivals // least + 1))
            self.bar_counts.append(counts)

    def group_rings(self, g: Group):
        """(Ring, GroupRing) of every ring, for group g."""
        return list(zip(self.rings, g.ring_info))

    def parts_in(self, r: int, cta: int) -> list[int]:
        """The parts of ring r that the slots of `cta` have (semantics.part_in)."""
        parts = self.rings[r].parts
        if len(parts) == 1:
            return [0]  # one part, in every CTA
        return [p for p, part in enumerate(parts) if cta in part.ctas]

    def part_everywhere(self) -> bool:
        """Every ring's slots in every CTA have all NPARTS parts (part_in always holds)."""
        return all(len(self.parts_in(r.index, c)) == self.n_parts
                   for r in self.rings for c in range(self.ctas))

    def read_stages(self, g: Group) -> dict:
        """{(pc, item): the stage of ring g.rings[pc] when g's agents execute the op at pc in
        that item} over their whole program (an op outside the body: its one visit). The stage
        is a function of the program position (advance, reset, drain and every=/at= guards
        move it), so it is known here; the walk is semantics.next_pc's."""
        T, a = self.model.tables, g.first
        stages = [info.init_stage for info in g.ring_info]
        pc, item = g.init_pc, g.init_item
        out = {}
        while pc < g.length:
            r = g.rings[pc]
            out.setdefault((pc, item), stages[r])
            move = OP_EFFECTS[g.ops[pc][0].name].move
            if move == "advance":
                stages[r] = (stages[r] + 1) % self.rings[r].stages
            elif move == "reset":
                stages[r] = g.ring_info[r].init_stage
            pc, item = (int(x) for x in S.next_pc(T, a, pc, item))
        return out

    def read_classes(self, g: Group, p: int) -> list[tuple[tuple, list]]:
        """The parts a read at pc `p` of group g checks (semantics.read_miss, rule R3): in slot
        s, the parts of its CTA's slot that the program fills for the read's tag in s, or every
        part when it fills none there (a one-part slot: that part). As [(parts checked, the
        items in which it checks those)], items None for a read outside the body (one visit).
        semantics.part_filled_for answers, once per item, at the read's stage in that item."""
        r, tag = g.rings[p], g.tags[p]
        here = tuple(self.parts_in(r, g.cta))
        visits = sorted((item, s) for (q, item), s in self._stages_of(g).items() if q == p)
        in_body = g.body_start <= p < g.body_end
        classes: dict = {}
        for item, s in visits if in_body else visits[:1]:
            want = tag if tag >= 0 else item // g.divs[p]
            filled = here if len(self.rings[r].parts) == 1 else tuple(
                q for q in here if S.part_filled_for(self.model.tables, r, q, s, want))
            classes.setdefault(filled or here, []).append(item if in_body else None)
        if not classes:  # the read never runs (an empty item range): check as if nothing is filled
            classes[here] = [None]
        return [(parts, None if items == [None] else items) for parts, items in classes.items()]

    def _stages_of(self, g: Group) -> dict:
        cache = self.__dict__.setdefault("_stage_cache", {})
        if g.ident not in cache:
            cache[g.ident] = self.read_stages(g)
        return cache[g.ident]

    def group_of(self, agent: int) -> Group:
        for g in self.groups:
            if agent in g.agents:
                return g
        raise IndexError(agent)

    def groups_in(self, cta: int) -> list[Group]:
        return [g for g in self.groups if g.cta == cta]

    def blocking_waits(self, g: Group):
        """(pc, signal kind 'full'/'empty', unless, ring) of every op that blocks on a signal;
        `unless` only where the group tries that ring (else `ready` stays false and the wait
        always waits)."""
        out = []
        for p, (op, _) in enumerate(g.ops):
            e = OP_EFFECTS[op.name]
            if e.observes >= 0 and e.blocks:
                r = g.rings[p]
                out.append((p, SIGNALS[e.observes][0], op.unless_ready and g.ring_info[r].has_try, r))
        return out

    # -- where things are: the dimensions that exist (a one-CTA, one-ring model has neither)

    def dims(self, cta, ring, stage) -> list[tuple[str, str]]:
        """(index, size) of a signal's or slot's dimensions: the CTA where there are several,
        the ring where there are several, the stage."""
        out = [(str(cta), "CTAS")] if self.ctas > 1 else []
        out += [(str(ring), "RINGS")] if self.n_rings > 1 else []
        return out + [(str(stage), self.stage_const)]

    def entry_digits(self) -> list[tuple[str, str]]:
        """(field, size) of an in-flight entry's digits, most significant first; the kind's has
        no size (it is the top)."""
        out = [("kind", "")] + ([("cta", "CTAS")] if self.ctas > 1 else [])
        out += [("ring", "RINGS")] if self.n_rings > 1 else []
        out += [("stage", self.stage_const), ("value", "EV"), ("bytes", "ENB")]
        out += [("part", "EP")] if self.n_parts > 1 else []
        out += [("peer", "EPR")] if self.has_peer else []
        out += [("agent", "EAG")] if self.names_agents else []
        out += [("seq", "ESQ")] if self.has_reads else []
        return out + ([("cseq", "ECS")] if self.has_commits else [])

    def has_digit(self, name: str) -> bool:
        return any(n == name for n, _ in self.entry_digits())

    def entry_field(self, e: str, name: str) -> str:
        """Field `name` of entry `e` (an expression) as an expression, the same in both languages:
        (e / unit) % size, the kind's e / unit."""
        size = dict(self.entry_digits())[name]
        unit = self.entry_unit(name)
        out = e if unit == "1" else f"{e} / ({unit})"
        return f"({out}) % {size}" if size else out

    def ready_unit(self) -> str | None:
        """The product of the seq and cseq digits' sizes (an entry acts when it is 0 modulo
        this: a read that is its agent's oldest, a commit whose agent's earlier reads finished
        and earlier commits fired), or None where entries have neither digit."""
        sizes = [size for name, size in self.entry_digits() if name in ("seq", "cseq")]
        return "*".join(sizes) or None

    def entry_expr(self, fields: dict, upto: str | None = None) -> str:
        """An entry from its fields' expressions (a field not given is 0); with `upto`, only its
        digits down to that field's (the entry divided by entry_unit(upto))."""
        digits = self.entry_digits()
        out = str(fields.get("kind", 0))
        for name, size in digits[1:]:
            v = fields.get(name, 0)
            out = (out if " " not in out else f"({out})") + f"*{size}" \
                + (f" + {v}" if str(v) != "0" else "")
            if name == upto:
                break
        return out

    def entry_unit(self, upto: str) -> str:
        """The product of the digit sizes below field `upto` (what an entry is divided by to
        leave `upto` and the fields above it in its lowest digit)."""
        digits = self.entry_digits()
        names = [n for n, _ in digits]
        sizes = [size for _, size in digits[names.index(upto) + 1:]]
        return "*".join(reversed(sizes)) or "1"


def _parts_of(m, i: int) -> tuple:
    """Per pc of agent i: the slot part its fill stores into (-1: every part), else 0."""
    ring_of = lambda op: m.ring_names.index(op.ring)
    return tuple(part_of(m.parts[ring_of(op)], i, p) if OP_EFFECTS[op.name].stores else 0
                 for p, (op, _) in enumerate(m.agents[i].ops))


def _executed(g: Group, p: int) -> int:
    """How often g's agents execute the op at pc p in a run: once each, or once per item."""
    return g.size * (g.items if g.body_start <= p < g.body_end else 1)


def _names(m, spans, start: int, end: int, used: set) -> tuple[str, str]:
    """(label, identifier) of the group of agents [start, end): its role's name (in a cluster
    with its CTA: `cta1.consumer`), with `[leader]` for the agent 0 that runs the @leader ops,
    and the agents' indices where the role is split further (by the slot parts its agents
    fill)."""
    a = m.agents[start]
    mine = [(s, e) for s, e in spans if m.agents[s].role == a.role and m.agents[s].cta == a.cta]
    leader_ops = lambda s: m.agents[s].index == 0 and any(
        b.role == a.role and b.ops != m.agents[s].ops for b in m.agents)
    if len(mine) == 1:
        suffix = ("", "")
    elif leader_ops(start):
        suffix = ("[leader]", "_leader")
    elif len(mine) == 2 and any(leader_ops(s) for s, _ in mine):
        suffix = ("", "")
    else:
        last = m.agents[end - 1].index
        suffix = ((f"[{a.index}]", f"_{a.index}") if end - start == 1 else
                  (f"[{a.index}..{last}]", f"_{a.index}_{last}"))
    prefix = (f"cta{a.cta}.", f"cta{a.cta}_") if m.ctas > 1 else ("", "")
    return prefix[0] + a.role + suffix[0], _ident(prefix[1] + a.role + suffix[1], used)


def _window_range(m, agents, r: int = 0) -> tuple:
    """(k' lowest, k' highest, ph' lowest, ph' highest) over the agents' window records on
    ring r, as the engine packs them (checker/core/model.py's field bounds)."""
    pk = m.packing
    lo_k = hi_k = lo_ph = hi_ph = None
    for a in agents:
        for s in range(m.max_stages * 2):
            pos = a * m.agf + m.win + 2 * (r * m.max_stages * 2 + s)  # (stage, kind) pairs per ring
            k = (int(pk.bias[pos]), int(pk.bias[pos]) + (1 << int(pk.width[pos])) - 1)
            ph = (int(pk.bias[pos + 1]), int(pk.bias[pos + 1]) + (1 << int(pk.width[pos + 1])) - 1)
            lo_k = k[0] if lo_k is None else min(lo_k, k[0])
            hi_k = k[1] if hi_k is None else max(hi_k, k[1])
            lo_ph = ph[0] if lo_ph is None else min(lo_ph, ph[0])
            hi_ph = ph[1] if hi_ph is None else max(hi_ph, ph[1])
    return lo_k, hi_k, lo_ph, hi_ph


def read_miss_text(ir: IR, g: Group, p: int, item: str, want: str, slot, lang: str) -> str:
    """semantics.read_miss for the read at pc `p` of group g, as a condition: a part it checks
    (IR.read_classes: the parts the program fills for the read's tag in the read's slot, else
    every part) holds another tag than `want`. `slot(q)` is part q's tag as text, `item` the
    reader's item (which class of items the read is in, where the parts checked differ from
    item to item)."""
    or_ = " || " if lang == "promela" else " | "
    and_ = " && " if lang == "promela" else " & "
    miss = lambda parts: or_.join(f"{slot(q)} != {want}" for q in parts)
    classes = ir.read_classes(g, p)
    if len(classes) == 1:
        return miss(classes[0][0])
    runs = sorted(i for _, items in classes for i in items)
    return or_.join(f"({item_in(items, runs, g.items, item, lang)}{and_}({miss(parts)}))"
                    for parts, items in classes)


def item_in(items: list, runs: list, n: int, item: str, lang: str) -> str:
    """A condition on `item` (in range(n)) that holds for each of `items` and for none of the
    other items of `runs` (items outside `runs` do not matter): `item % P == j` for the residues
    j of the shortest period P the items follow, negated where that is shorter."""
    eq, or_ = ("==", " || ") if lang == "promela" else ("=", " | ")
    mine = set(items)
    for period in range(1, n + 1):
        residues = {i % period for i in mine}
        if not any(i % period in residues for i in runs if i not in mine):
            break
    at = (lambda j: f"{item} {eq} {j}") if period >= n else (lambda j: f"{item} % {period} {eq} {j}")
    other = sorted(set(range(min(period, n))) - residues)
    if len(other) < len(residues):
        return f"!({or_.join(at(j) for j in other)})"
    return "(" + or_.join(at(j) for j in sorted(residues)) + ")"


def item_tag(item: str, div: int) -> str:
    """The tag of a body fill or read of item `item` (an expression) as text: the item, or with
    nested loops on a tile-level ring the tile, item / div (semantics.op_tag; the same integer
    division in both languages, on items >= 0)."""
    return item if div == 1 else f"({item} / {div})"


def _moves(op, move: str) -> bool:
    """The op moves its agent's stage so (Effects.move)."""
    return OP_EFFECTS[op.name].move == move


def _on_barrier(op, how: str, name: str) -> bool:
    """The op acts on the named barrier `name` so (Effects.barrier: "sync", "arrive", "wait")."""
    return OP_EFFECTS[op.name].barrier == how and op.barrier == name


def _ident(name: str, used: set, prefix: str = "ag_") -> str:
    base = prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)
    out, k = base, 1
    while out.lower() in used:
        k += 1
        out = f"{base}_{k}"
    used.add(out.lower())
    return out


def comment_lines(ir: IR, prefix: str) -> list[str]:
    spec = ir.spec
    lines = [f"{prefix} pipeproof export of {spec.path}",
             f"{prefix} {spec.name}",
             f"{prefix} {ir.caps.name} mbarriers, {spec.stages} stages, full count {spec.producer_arrive_count}, "
             f"empty count {spec.consumer_arrive_count}"
             + (f", a cluster of {ir.ctas} CTAs" if ir.ctas > 1 else "")]
    for r in ir.rings[1:]:
        lines.append(f"{prefix} ring {r.name}: {r.stages} stages, full count {r.pac}, empty count {r.cac}")
    for g in ir.groups:
        ops = ", ".join(op.text or op.name for op, _ in g.ops[g.body_start:g.body_end])
        lines.append(f"{prefix} {g.label}: {g.size} agent(s), {g.items} items, stage {g.init_stage}, "
                     f"phase {g.init_phase}; body [{ops}]")
    return lines


def any_pc_guarded(pc: str, item: str, pcs, guards: dict, sep: str, eq: str, conj: str) -> str:
    """`pc = p` for each p, with `item % K = j` for ops guarded by every=K at=j."""
    parts = []
    for p in pcs:
        if p in guards:
            k, j = guards[p]
            parts.append(f"({pc} {eq} {p} {conj} {item} % {k} {eq} {j})")
        else:
            parts.append(f"{pc} {eq} {p}")
    return sep.join(parts)

