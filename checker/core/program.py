"""Spec -> Program, once: the agents with their flattened programs and the order they run in.

Every agent's program is its role's prologue, body and epilogue, flattened once here: `@leader`
ops kept for the leader only, `drain` expanded into one step per stage. The body repeats once
per item; a body op with `every=K, at=j` runs only in the items i with i % K == j and takes no
step in the others. `Agent.next_pc` is that order, in plain Python, for every reader that walks
a program outside the compiled engine (the partial-order reduction's future tables, conform's
program-order check); checker/core/semantics.py `raw_next`/`settle_pc` is the same rule
compiled, and tests/test_program.py checks the two agree on every example.

Each op is described once, by its effects (`OP_EFFECTS`, spec/ops.py, re-exported here): what it
observes, what it updates, what it leaves in flight, how it moves its agent's stage. The
compiled step interprets them (checker/core/semantics.py, from the program rows' P_EFF columns;
the partial-order reduction's dependency relation is read off the same table), and the
Python-side readers ask them instead of listing op names.

Which CTA an op lands on is `spec.schema.targets`; the count a signal expects, `Ring.expected`.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.spec.ops import EMPTY, FULL, OP_EFFECTS, Effects  # noqa: F401  (re-exported)
from pipeproof.spec.schema import Spec

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
    initial_stages: tuple  # per ring
    initial_phases: tuple  # per ring

    @property
    def initial_stage(self):
        return self.initial_stages[0]

    @property
    def initial_phase(self):
        return self.initial_phases[0]

    def section_of(self, pc: int) -> str:
        return "prologue" if pc < self.body_start else "body" if pc < self.body_end else "epilogue"

    def runs(self, pc: int, item: int) -> bool:
        """Whether the op at `pc` takes a step in `item` (a body op's every=K / at=j guard)."""
        if not self.body_start <= pc < self.body_end:
            return True
        op = self.ops[pc][0]
        return item % op.every == op.at

    def raw_next(self, pc: int, item: int) -> tuple[int, int]:
        """The next program position, ignoring guards: body ops repeat once per item."""
        pc += 1
        if pc == self.body_end and self.body_start < pc:
            item += 1
            if item < self.items:
                pc = self.body_start
        return pc, item

    def settle(self, pc: int, item: int) -> tuple[int, int]:
        """The first position from (pc, item) whose op takes a step: past an empty or exhausted
        body, and past body ops whose guard does not select the item."""
        while True:
            if pc == self.body_start < self.body_end and item >= self.items:
                return self.body_end, item
            if self.runs(pc, item):
                return pc, item
            pc, item = self.raw_next(pc, item)

    def start(self) -> tuple[int, int]:
        return self.settle(0, 0)

    def next_pc(self, pc: int, item: int) -> tuple[int, int]:
        """Program position after executing the op at `pc` in `item`."""
        return self.settle(*self.raw_next(pc, item))

    def unrolled(self) -> list[tuple[int, int, bool]]:
        """(pc, item, runs) of every position of the program in execution order, the body once
        per item, with whether the op there takes a step."""
        bs, be = self.body_start, self.body_end
        out = [(pc, 0, True) for pc in range(bs)]
        if be > bs:
            for item in range(self.items):
                out += [(pc, item, self.runs(pc, item)) for pc in range(bs, be)]
        return out + [(pc, self.items, True) for pc in range(be, len(self.ops))]

    def executed(self):
        """(pc, item) of each op the agent executes, in order (waits decide only when)."""
        pc, item = self.start()
        while pc < len(self.ops):
            yield pc, item
            pc, item = self.next_pc(pc, item)


def flatten_program(spec: Spec, role, leader: bool):
    """(ops, body_start, body_end): the agent's program, @leader ops kept only for the leader."""
    stages = {ring.name: ring.stages for ring in spec.all_rings}

    def expand(ops):
        out = []
        for op in ops:
            if op.leader_only and not leader:
                continue
            if op.name == "drain":
                out.extend((op, k) for k in range(stages[op.ring]))
            else:
                out.append((op, -1))
        return out
    pro, body, epi = expand(role.prologue), expand(role.body), expand(role.epilogue)
    return tuple(pro + body + epi), len(pro), len(pro) + len(body)


def agents_of(spec: Spec) -> list[Agent]:
    """Every agent of the spec, role by role, CTA by CTA, leader first: the model's order."""
    ring_names = [r.name for r in spec.all_rings]
    agents = []
    for role in spec.roles:
        stages = (role.initial_stage,) + (0,) * (len(ring_names) - 1)
        phases = tuple(role.initial_phase_of(name) for name in ring_names)
        for cta in (role.ctas or range(spec.cluster_size)):
            for i in range(role.count):
                ops, bs, be = flatten_program(spec, role, leader=(i == 0))
                name = f"{role.name}[{i}]" if spec.cluster_size == 1 else f"cta{cta}.{role.name}[{i}]"
                agents.append(Agent(name, role.name, cta, i, ops, bs, be, role.items, stages, phases))
    return agents



@dataclass(frozen=True)
class Part:
    """One part of a ring's slots (docs/rules.md "Slot parts"). Its fills are the
    producer-side fill ops that store into it: (section, agent, pc),
    agent an index into agents_of(spec). A ring that no producer-side role fills has one part
    with no fills. `ctas`: the CTAs whose slots have it."""
    fills: tuple
    ctas: tuple


def slot_parts(spec: Spec, agents: list[Agent]) -> tuple[tuple[Part, ...], ...]:
    """The parts of each ring's slots, ring by ring (Spec.all_rings order).

    For one item a slot has one part per fill op (`copy`, `write`) of each agent of a
    `side = "producer"` role that stores into it (per source agent, so per source CTA of a `to=`
    copy). The fills between two moves of the agent's stage (`advance`, `reset`, `drain`) store
    into one slot: within a section, the j-th of them of the i-th filling agent stores into part
    (the parts of agents 0 .. i-1) + j. The prologue's, the body's and the epilogue's fills
    share the parts, so a body fill stores over the prologue's tile in the same part. A fill by
    a consumer-side role stores into every part: it reuses the whole buffer. The CTAs that no
    producer-side fill reaches have one part more, with no fills."""
    from pipeproof.spec.schema import targets
    sides = {r.name: r.side for r in spec.roles}
    out = []
    for ring in spec.all_rings:
        by_section: dict[str, dict[int, list]] = {}   # section -> part -> fills
        for section in ("prologue", "body", "epilogue"):
            base = 0
            for i, a in enumerate(agents):
                if sides[a.role] != "producer":
                    continue
                j = width = 0
                for pc, (op, _) in enumerate(a.ops):
                    if op.ring != ring.name or a.section_of(pc) != section:
                        continue
                    e = OP_EFFECTS[op.name]
                    if e.stores:
                        # a copy, a write or an async write stores at its targets (to=)
                        dests = targets(spec.cluster_size, a.cta, op.to)
                        by_section.setdefault(section, {}).setdefault(base + j, []).append((i, pc, dests))
                        j += 1
                        width = max(width, j)
                    elif e.move:
                        j = 0
                base += width
        n = max([len(v) for v in by_section.values()] + [1])
        parts = []
        for p in range(n):
            fills = tuple((sec, i, pc) for sec, v in by_section.items() if p in v
                          for i, pc, _ in v[p])
            ctas = sorted({c for v in by_section.values() if p in v for _, _, dests in v[p]
                           for c in dests})
            parts.append(Part(fills, tuple(ctas) if fills else tuple(range(spec.cluster_size))))
        # A CTA whose slots no producer-side fill targets still has a slot: one part of its
        # own, with no fills (a consumer-side fill stores into it, a read finds it empty).
        covered = {c for part in parts for c in part.ctas}
        bare = tuple(c for c in range(spec.cluster_size) if c not in covered)
        if bare:
            parts.append(Part((), bare))
        out.append(tuple(parts))
    return tuple(out)


def part_of(parts: tuple[Part, ...], agent: int, pc: int) -> int:
    """The part a fill op stores into (its index in its ring's parts), or -1: every part."""
    for p, part in enumerate(parts):
        if any((i, j) == (agent, pc) for _, i, j in part.fills):
            return p
    return -1
