"""The step of an exported op, once: `OP_EFFECTS` read into a short list of step actions.

`step_actions(ir, g, p)` interprets checker/core/program.py's `OP_EFFECTS[op.name]` for the op at pc
`p` of group `g`, with the op's own arguments (n, bytes, unless=ready, barrier, drain step) and
what the IR knows (whether the group tries, whether anything is in flight), into a list of
language-neutral actions. checker/models/promela.py (`op_step`) and checker/models/murphi.py
(`op_rule`) print that list, each in its own syntax; neither asks which op it is printing.

The actions, in the order a step performs them (a guard is part of the step's enabling
condition, the rest its body):

- `AwaitSignal(kind, unless)` guard: signal `kind` at my stage has completed my phase; with
  `unless`, or the `ready` flag a try left. `Observe(kind, unless)`: mark it observed (unless
  the flag let the wait through). A blocking `observes`.
- `CheckWindow(kind)`: phase_alias unless my phase is in the signal's window; `TryReady(kind)`:
  ready := the phase completed (and mark it observed when it did). A non-blocking `observes`.
- `PassWindow(kind, when, raw)`: for a group that keeps the phase_alias window's (k', ph')
  (a `reset` of the ring in its program): the wait passed, record (k, ph) (`raw`, a reset may
  lie ahead) or (k - (ph - p0), p0) (semantics.window_passed); `when` is "always", "ready" (a
  try that found the phase complete) or "not_ready" (a wait that `unless=ready` did not skip).
- `Update(kind, arrivals, dtx, ring, to)`: one mbarrier update of `kind` at my stage of
  `ring`, `arrivals` arrivals and tx += dtx, in my CTA or, with `to`, in each of those CTAs
  (inflight_at_exit first where one is gone). An `updates` with no `issues`.
- `Trap(kind)`: the step fails with `kind` (a byte count above the tx limit).
- `Issue(entry, kind, tag, arrivals, bytes_index, part, ring, to, after_reads)`: an in-flight
  entry that acts later, when it lands (a copy: stores `tag` into its `part`, then updates by
  -bytes) or fires (a commit: `arrivals`); one per destination CTA with `to` (a multicast),
  each landing on its own; an entry into another CTA than its agent's is a peer's (for
  inflight_at_exit, rule R2). An async read (read_async) is an entry too, after its check: it
  names its agent and its place in the agent's FIFO (the agent's reads in flight before it),
  and finishes later, oldest first (checker/core/inflight.py finish_read); until then it is an
  unfinished read of `tag` for overwrite_before_drain, and something in flight for
  inflight_at_exit. An async write (write_async, `writes`) is such an entry too, after its
  Store: the slot is being written until it finishes (a read of it is read_before_fill), and
  it is no read for overwrite_before_drain. A commit names its agent and how many of the agent's earlier commit
  entries are in flight, and (`after_reads`, an agent that issues async reads) how many of
  its async reads: it fires only after those fired and finished (tcgen05.commit; rule R1,
  an agent's commits fire in the order it issued them; the entries of one `to=all` commit
  in any order).
- `AwaitReads(n)` guard: at most n of my async reads are in flight (read_wait n).
- `Store(tag, part)`: part `part` of the slot at my stage takes `tag` (-1: every part, a
  consumer-side fill). `CheckRead(tag)`: read_before_fill when a part the program fills for
  `tag` holds another (ir.read_miss_text) or a copy into the slot, or an async write of it, is
  in flight. A tag -1 is the item, divided by `div` on a tile-level ring (nested loops).
- `Advance()`, `Reset()`: the agent's own stage (and phase).
- `RecordArrival(barrier)`: a sync_arrive notes the generation it arrived in.
  `BarrierArrive(barrier, count, release, blocking, on_complete)`: one arrival on the named
  barrier; the last of a generation completes it (and releases the blocked syncs); `blocking`
  (a sync) blocks the others until then, and the agent moves on only in `on_complete`.
  `BarrierWait(barrier, arrived)` guard: a generation completed (after my sync_arrive's).
- `MovePc()`: the program moves on (checker.semantics.next_pc, every=/at= settled).
  `ExitCheck()`: inflight_at_exit when the agent's finishing makes its CTA gone with an async
  read of the CTA in flight or a peer's copy or commit into it (rule R2; with
  `IR.strict_exit`, anything in flight into it).
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.backends.base import FULL
from pipeproof.checker.models.ir import (COMMIT_ON_FULL, ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ,
                                          READ_WRITES, item_tag)
from pipeproof.checker.core import OP_EFFECTS

ENTRIES = {"copy": ENTRY_COPY, "commit": ENTRY_COMMIT, "read": ENTRY_READ}  # Effects.issues -> entry kind


@dataclass(frozen=True)
class AwaitSignal:
    kind: int
    unless: bool
    ring: int = 0          # the ring's index (Spec.all_rings order)


@dataclass(frozen=True)
class Observe:
    kind: int
    unless: bool
    ring: int = 0          # the ring's index (Spec.all_rings order)


@dataclass(frozen=True)
class CheckWindow:
    kind: int
    ring: int = 0          # the ring's index (Spec.all_rings order)


@dataclass(frozen=True)
class TryReady:
    kind: int
    ring: int = 0          # the ring's index (Spec.all_rings order)


@dataclass(frozen=True)
class PassWindow:
    kind: int
    when: str             # "always" | "ready" | "not_ready": the flag that says the wait passed
    raw: bool             # record (k, ph); else (k - (ph - p0), p0): no reset lies ahead
    ring: int = 0          # the ring's index (Spec.all_rings order)


@dataclass(frozen=True)
class Update:
    kind: int
    arrivals: int
    dtx: int
    ring: int = 0
    to: tuple = ()          # the CTAs it updates, where not only the agent's own (a `to=` target)


@dataclass(frozen=True)
class Trap:
    kind: str


@dataclass(frozen=True)
class Issue:
    entry: int            # ENTRY_COPY / ENTRY_COMMIT / ENTRY_READ
    kind: int             # the signal it updates when it acts (-1: none, an async read)
    tag: int | None       # the tag a landing stores or a read reads (-1: the item), None: neither
    arrivals: int         # arrivals when it fires (a commit)
    bytes_index: int | None  # index into IR.bytes_vals of the bytes it completes, None: no tx
    part: int = 0         # the slot part a landing stores into (-1: every part)
    ring: int = 0
    to: tuple = ()          # the CTAs it lands on, one entry each, where not only the agent's own
    after_reads: bool = False  # a commit of an agent that issues async reads: counts them (seq)
    div: int = 1          # the divisor of an item tag (a tile-level ring's: item / k_blocks)
    writes: bool = False  # an async write's entry (write_async): the slot is being written

    @property
    def names_agent(self) -> bool:
        """The entry carries its agent (an async read, with its place in the agent's FIFO; a
        commit, with how many of the agent's earlier reads and commit entries are in flight)."""
        return self.entry in (ENTRY_READ, ENTRY_COMMIT)

    def expr(self, ir, cta, stage: str, item: str, agent: str = "0", seq: str = "0",
             cseq: str = "0", peer: int = 0) -> str:
        """The entry into CTA `cta` as an expression (the same in both languages, IR.entry_expr):
        ((((kind * CTAS + cta) * RINGS + ring) * STAGES + stage) * EV + value) * ENB + bytes
        index, the value a copy's or read's tag + 1 or a commit's arrivals, then the lower
        digits that exist (IR.entry_digits): a copy's part + 1 (0: every part); `peer` (1: a
        copy or commit into another CTA than its agent's); `agent`, `seq` and `cseq` where
        `names_agent` (the printer's expressions)."""
        value = f"{tag_text(self.tag, item, self.div)} + 1" if self.tag is not None else f"{self.arrivals}"
        fields = {"kind": self.entry, "cta": cta, "ring": self.ring, "stage": stage,
                  "value": value, "bytes": self.bytes_index or 0,
                  "part": self.part + 1 if self.entry == ENTRY_COPY else 0,
                  "peer": peer if self.entry != ENTRY_READ else 0}
        if self.entry == ENTRY_COMMIT and self.kind == FULL:
            fields["bytes"] = COMMIT_ON_FULL  # a commit's bytes digit: the signal it fires on
        if self.writes:
            fields["bytes"] = READ_WRITES  # an async write's: the slot is being written
        if self.names_agent:
            fields.update(agent=agent, seq=seq if self.entry == ENTRY_READ or self.after_reads else "0",
                          cseq=cseq if self.entry == ENTRY_COMMIT else "0")
        return ir.entry_expr(fields)


@dataclass(frozen=True)
class AwaitReads:
    n: int                # enabled while at most n of the agent's async reads are in flight


@dataclass(frozen=True)
class Store:
    tag: int              # -1: the agent's item
    part: int = 0         # -1: every part (a consumer-side fill)
    ring: int = 0          # the ring's index (Spec.all_rings order)
    div: int = 1          # the divisor of an item tag (a tile-level ring's: item / k_blocks)


@dataclass(frozen=True)
class CheckRead:
    tag: int              # -1: the agent's item
    ring: int = 0          # the ring's index (Spec.all_rings order)
    div: int = 1          # the divisor of an item tag (a tile-level ring's: item / k_blocks)


@dataclass(frozen=True)
class Advance:
    ring: int = 0


@dataclass(frozen=True)
class Reset:
    ring: int = 0


@dataclass(frozen=True)
class RecordArrival:
    barrier: str          # the barrier's identifier


@dataclass(frozen=True)
class BarrierArrive:
    barrier: str
    count: int
    release: bool         # some group syncs on it: the last arrival releases them
    blocking: bool        # a sync: blocked until the generation completes
    on_complete: tuple = ()  # actions of the last arrival (after the release)


@dataclass(frozen=True)
class BarrierWait:
    barrier: str
    arrived: bool         # the group sync_arrive's on it: wait for a generation after that


@dataclass(frozen=True)
class MovePc:
    pass


@dataclass(frozen=True)
class ExitCheck:
    pass


MOVES = {"advance": Advance, "reset": Reset}  # Effects.move -> its action


def tag_text(tag: int, item: str, div: int = 1) -> str:
    """A tag as text: a prologue's or epilogue's tag, or (-1) the agent's item (divided by
    `div`: nested loops' tile on a tile-level ring, ir.item_tag)."""
    return str(tag) if tag >= 0 else item_tag(item, div)


def step_actions(ir, g, p: int) -> list:
    """The actions of the op at pc `p` of group `g` (an `IR.groups` entry), read off its effects.
    The ops check_exportable refuses have no step here. Every action on a ring names it; an
    update or issue names its destination CTAs (`to`) where they are not just the agent's own
    (spec.schema `targets`, in Group.targets). An async read is checked, then issued
    (semantics.step's order)."""
    op, _ = g.ops[p]
    e = OP_EFFECTS[op.name]
    if e.issues not in ("", *ENTRIES) or (e.blocks and e.observes < 0 and not e.barrier
                                          and not e.waits_reads):
        raise AssertionError(f"{op.name}: refused by check_exportable")  # pragma: no cover
    r, div = g.rings[p], g.divs[p]
    to = g.targets[p] if g.targets and g.targets[p] != (g.cta,) else ()
    acts: list = []
    if e.observes >= 0:
        if e.blocks:
            unless = op.unless_ready and g.ring_info[r].has_try
            acts += [AwaitSignal(e.observes, unless, r), Observe(e.observes, unless, r)]
            when = "not_ready" if unless else "always"
        else:
            acts += [CheckWindow(e.observes, r), TryReady(e.observes, r)]
            when = "ready"
        if g.ring_info[r].has_window:
            acts.append(PassWindow(e.observes, when, g.records_raw(p, r), r))
    if e.waits_reads and g.reads_async:  # an agent that issues no async reads never waits
        acts.append(AwaitReads(op.n))
    if e.tx and op.n > ir.tx_limit:  # the backend's bound on |tx|
        acts.append(Trap("tx_range"))  # the bytes trap before anything is updated or issued
    elif e.issues and ENTRIES[e.issues] != ENTRY_READ:
        acts.append(Issue(ENTRIES[e.issues], e.updates, g.tags[p] if e.stores else None,
                          op.n if e.units == -1 else e.units,
                          ir.bytes_vals.index(op.n) if e.tx else None,
                          g.parts[p] if e.stores else 0, r, to,
                          after_reads=ENTRIES[e.issues] == ENTRY_COMMIT and g.reads_async, div=div))
    elif not e.issues:
        if e.updates >= 0:
            acts.append(Update(e.updates, op.n if e.units == -1 else e.units, e.tx * op.n, r, to))
    if e.stores and (not e.issues or e.async_write):  # an async write stores at issue
        acts.append(Store(g.tags[p], g.parts[p], r, div))
    if e.checks_read:
        acts.append(CheckRead(g.tags[p], r, div))
    if e.issues and ENTRIES[e.issues] == ENTRY_READ:  # in the agent's own CTA
        acts.append(Issue(ENTRY_READ, -1, g.tags[p], 0, None, 0, r, div=div, writes=e.async_write))
    if e.move:
        acts.append(MOVES[e.move](r))
    moved = False
    if e.barrier:
        b = ir.barrier_names.index(op.barrier)
        bid = ir.barriers[b][0]
        count = ir.bar_counts[b][g.cta]  # its count in the agent's CTA
        release = any(h.syncs[b] for h in ir.groups if h.cta == g.cta)
        if e.barrier == "wait":
            acts.append(BarrierWait(bid, b in g.arrives))
        else:
            if e.barrier == "arrive":
                acts.append(RecordArrival(bid))
            blocking = e.blocks  # a sync: blocked until the generation completes
            acts.append(BarrierArrive(bid, count, release, blocking, (MovePc(),) if blocking else ()))
            moved = blocking
    if not moved:
        acts.append(MovePc())
    if ir.inflight and g.can_finish_at(p):
        acts.append(ExitCheck())
    return acts
