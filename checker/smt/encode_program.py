"""The BMC encoding's static program: every agent's program unrolled once into the ops it will
execute (`Instr`: with the stage and phase of its ring before it runs, by the engine's own
`settle_pc`/`next_pc`), the async ops of that program per destination CTA (`Instance`), and
the tables the step looks things up in (readers and copies per slot, instances per CTA, each
agent's async reads and commits, what each instance waits for, the parts of each slot)."""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import OP_EFFECTS, Effects

ENTRY_OF_ISSUE = {"copy": S.ENTRY_COPY, "commit": S.ENTRY_COMMIT, "read": S.ENTRY_READ}


@dataclass(frozen=True)
class Instr:
    """One op an agent will execute: its program position and the static context it runs in."""
    pc: int
    item: int
    op: object          # spec.schema.Op
    eff: Effects        # what the op does (checker/core/program.py OP_EFFECTS): the step reads this
    ring: int
    stage: int          # stage of `ring` before the op runs
    phase: int          # phase of `ring` before the op runs
    initial_phase: int  # of `ring` (the phase_alias window needs it)
    tag: int            # fill/read: the tag it stores or expects (semantics.op_tag)
    part: int = 0       # fill: the slot part it stores into, -1 every part (the model's
                        # P_PART, from checker/core/program.py slot_parts); 0 for other ops


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
    part: int = 0       # copy only: the slot part it stores into when it lands (-1: every part)
    signal: int = -1    # the signal kind it updates when it lands or fires (a copy: full; a
                        # commit: its op's, empty for commit_empty, full for commit_full)
    writes: bool = False  # an async write (write_async): its slot is being written until it ends



class _Program:
    """The static program (a part of encode.Encoding, whose `__init__` builds it)."""

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
            eff = OP_EFFECTS[op.name]
            r = int(T.prog[row, S.P_RING])
            out.append(Instr(pc, item, op, eff, r, stage[r], phase[r], agent.initial_phases[r],
                             int(S.op_tag(T, row, item)), int(T.prog[row, S.P_PART])))
            if eff.move == "advance":
                stage[r] += 1
                if stage[r] == self.stages[r]:
                    stage[r] = 0
                    phase[r] += 1
            elif eff.move == "reset":
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
        # (an async read's target is its own CTA; an async write's are its to= CTAs, one
        # instance each, in CTA order: its agent's FIFO holds them in that order)
        return self._targets(a, ins) if ins.eff.issues else []

    def _static_tables(self):
        # The parts each CTA's slots of a ring have (checker/core/program.py slot_parts, through the
        # model's part table: semantics.part_in).
        self.parts_in = {(c, r): [p for p in range(int(self.T.ring[r, S.R_PARTS]))
                                  if S.part_in(self.T, r, p, c)]
                         for c in range(self.ctas) for r in range(self.rings)}
        # Read instructions per (cta, ring, stage): (agent, k, item, async?).
        self.readers = {}
        for a, prog in enumerate(self.progs):
            cta = self.model.agents[a].cta
            for k, ins in enumerate(prog):
                if ins.eff.checks_read:
                    self.readers.setdefault((cta, ins.ring, ins.stage), []).append(
                        (a, k, ins.tag, ins.eff.issues == "read"))
        self.fills_into = {}   # instances that keep a slot being filled: copies, async writes
        self.inst_to_cta = [[] for _ in range(self.ctas)]
        self.reads_of = [[] for _ in range(self.A)]  # (k, instance) of the agent's async reads
        self.commits_of = [[] for _ in range(self.A)]  # (k, instance) of the agent's commits
        # Instances that make their CTA's exit a violation while in flight (inflight_at_exit):
        # async reads, and copies/commits issued by an agent of another CTA; the CTA's own
        # copies and commits are only the warning unawaited_at_exit (DESIGN, revised
        # 2026-12-02), unless strict_exit (semantics.exit_inflight).
        self.foreign_into = [[] for _ in range(self.ctas)]
        for i, inst in enumerate(self.instances):
            self.inst_to_cta[inst.cta].append(i)
            if inst.kind == S.ENTRY_COPY or inst.writes:  # a read meanwhile is read_before_fill
                self.fills_into.setdefault((inst.cta, inst.ring, inst.stage), []).append(i)
            if inst.kind == S.ENTRY_READ:
                self.reads_of[inst.agent].append((inst.k, i))
            if inst.kind == S.ENTRY_COMMIT:
                self.commits_of[inst.agent].append((inst.k, i))
            if inst.kind == S.ENTRY_READ or self.model.agents[inst.agent].cta != inst.cta:
                self.foreign_into[inst.cta].append(i)
        # What each instance waits for before it may land / fire / finish (semantics.step: an
        # entry fires at seq == cseq == 0): an async read, its agent's earlier reads (oldest
        # first); a commit, its agent's earlier reads and every commit instance its agent
        # issued before it (R1, DESIGN revised 2026-12-02: an agent's commits fire in issue
        # order; the instances of one `to=all` commit, at one position, not among themselves).
        self.waits_on = []
        for i, inst in enumerate(self.instances):
            before = []
            if inst.kind in (S.ENTRY_READ, S.ENTRY_COMMIT):
                before += self.reads_before(inst.agent, inst.k, i)
            if inst.kind == S.ENTRY_COMMIT:
                before += [j for kk, j in self.commits_of[inst.agent] if kk < inst.k]
            self.waits_on.append(before)

    def reads_before(self, a: int, k: int, i: int) -> list:
        """Agent a's async read (or write) instances ahead of instance i (issued at position k)
        in its FIFO: those issued before k, and an async write's instances to lower CTAs of the
        same op (semantics.store_at_targets adds them in CTA order)."""
        return [j for kk, j in self.reads_of[a] if kk < k or (kk == k and j < i)]

    def stored_parts(self, cta: int, r: int, part: int) -> list:
        """The parts of slot (cta, r, .) a fill of `part` stores into: its own, or every part
        (-1: a consumer-side fill), as semantics.store_tag."""
        return [p for p in self.parts_in[(cta, r)] if part < 0 or p == part]

    def checked_parts(self, cta: int, r: int, s: int, tag: int) -> list:
        """The parts a read of `tag` in slot s of (cta, r) checks: those the program fills for
        the tag in that slot (semantics.part_filled_for: parts are per slot, DESIGN revised
        2026-12-02), or every part of the slot when it fills none there (as
        semantics.read_miss)."""
        parts = self.parts_in[(cta, r)]
        return [p for p in parts if S.part_filled_for(self.T, r, p, s, tag)] or parts

    def window(self, a: int, r: int, s: int, kind: int) -> bool:
        """Does agent a keep (k', ph') for signal (r, s, kind): it has a `reset` of ring r
        (state_layout.window_field; docs/rules.md "The phase_alias window after `reset`")?"""
        return int(S.window_field(self.T, a, r, s, kind)) >= 0
