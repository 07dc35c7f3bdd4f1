"""The op language: every op a spec may use and what it does, each written once.

An op is described by its effects, in a fixed vocabulary (`Effects`): what it observes, what
it updates and by how many arrivals, its tx bytes, whether it stores a tag or checks a read,
what it leaves in flight, how it moves its agent's stage, what it does at a named barrier.
Everything else reads this table: the op list and the parser's families (spec/schema.py,
spec/ops_syntax.py), the compiled step (checker/core/semantics.py, as the program rows' P_EFF
columns), the Z3 encoding, the exporters, the GPU generator, the reductions. So an op made of
existing effects, with an operand of an existing family, is one line here.

The order of OP_EFFECTS is the order of the op codes (checker/core/semantics.py OP_CODES, which the
GPU event logs record) and of every list of ops in a message: add an op at the end.
"""
from __future__ import annotations

from dataclasses import dataclass

FULL, EMPTY = 0, 1  # signal kinds (backends.base FULL, EMPTY; spec.schema SIGNAL_KINDS)


@dataclass(frozen=True)
class Effects:
    """What one op does, in a fixed vocabulary."""
    observes: int = -1       # the signal kind (FULL/EMPTY) whose phase it reads (wait, try)
    blocks: bool = False     # enabled only when what it waits for is there (a wait, a barrier)
    updates: int = -1        # the signal kind it updates at each of its target CTAs
    units: int = 0           # arrivals per update: -1 the op's count n, 1 one, 0 a tx change only
    tx: int = 0              # +1 adds the op's bytes to tx; -1 subtracts them (when a copy lands)
    stores: bool = False     # stores a tag into the slot (at its targets)
    checks_read: bool = False  # checks the slot holds the tag it expects
    issues: str = ""         # "copy" | "commit" | "read": leaves an in-flight entry that acts later
                             # ("read" with `stores`: an async write, the slot busy until it ends)
    move: str = ""           # "advance" | "reset": its effect on the agent's own stage
    barrier: str = ""        # "sync" | "arrive" | "wait": on a named barrier
    waits_reads: bool = False  # blocks until at most n of the agent's async reads are in flight

    @property
    def tries(self) -> bool:
        """Reads a signal's phase without blocking (try_full, try_empty)."""
        return self.observes >= 0 and not self.blocks

    @property
    def acts(self) -> bool:
        """Does anything besides waiting for or observing a signal (the compiled step skips
        the rest of its work for an op that does not: a wait, a read_wait, a sync_wait)."""
        return (self.updates >= 0 or self.tx != 0 or self.stores or self.checks_read
                or bool(self.issues) or bool(self.move) or self.barrier in ("sync", "arrive"))

    @property
    def async_write(self) -> bool:
        """An async write (write_async): stores now, and its async entry keeps the slot being
        written until it finishes."""
        return self.stores and self.issues == "read"

    @property
    def local(self) -> bool:
        """Its only effect is on the agent's own stage (advance, reset)."""
        return bool(self.move) and self == Effects(move=self.move)

    @property
    def arrives_n(self) -> bool:
        """Its update is the op's count n of arrivals (`n=` in the spec)."""
        return self.updates >= 0 and self.units == -1


OP_EFFECTS = {
    "wait_full": Effects(observes=FULL, blocks=True),
    "wait_empty": Effects(observes=EMPTY, blocks=True),
    "try_full": Effects(observes=FULL),
    "try_empty": Effects(observes=EMPTY),
    "arrive_full": Effects(updates=FULL, units=-1),
    "arrive_empty": Effects(updates=EMPTY, units=-1),
    "expect_tx": Effects(updates=FULL, units=1, tx=1),  # arrive.expect_tx: one arrival, +bytes
    "copy": Effects(updates=FULL, tx=-1, stores=True, issues="copy"),  # lands later: -bytes
    "write": Effects(stores=True),
    "read": Effects(checks_read=True),
    "commit_empty": Effects(updates=EMPTY, units=-1, issues="commit"),  # fires later
    "advance": Effects(move="advance"),
    "reset": Effects(move="reset"),
    "drain": Effects(observes=EMPTY, blocks=True, move="advance"),  # one wait_empty per stage
    "sync": Effects(blocks=True, barrier="sync"),
    "read_async": Effects(checks_read=True, issues="read"),
    "read_wait": Effects(blocks=True, waits_reads=True),  # until at most n reads are left
    "sync_arrive": Effects(barrier="arrive"),
    "sync_wait": Effects(blocks=True, barrier="wait"),
    "commit_full": Effects(updates=FULL, units=-1, issues="commit"),  # fires later, on full
    # an MMA's asynchronous write of its accumulator (tcgen05.mma into tensor memory, wgmma
    # into registers): stores the tag at issue, and the slot is being written until the entry
    # finishes, oldest first among the agent's async ops (a commit waits for it); a read of the
    # slot meanwhile is read_before_fill (issue 47; docs/rules.md "Async writes")
    "write_async": Effects(stores=True, issues="read"),
    # mbarrier.expect_tx without an arrival (issue 48: CUTLASS's epilogue loads, TileLang):
    # tx += bytes on full, the arrival is a separate arrive_full (docs/rules.md "expect_bytes")
    "expect_bytes": Effects(updates=FULL, units=0, tx=1),
}

OPS = tuple(OP_EFFECTS)
# An issued update acts when its entry lands or fires (checker/core/semantics.py fire_entry): a
# copy lands on full; a commit fires on the signal kind its op updates, which its entry records
# (commit_empty on empty, commit_full on full: sm100's accumulator ring, issue 34).
assert all(e.updates == FULL for e in OP_EFFECTS.values() if e.issues == "copy"), \
    "an issued copy updates full"
assert all(e.updates in (FULL, EMPTY) for e in OP_EFFECTS.values() if e.issues == "commit"), \
    "an issued commit updates a signal"
