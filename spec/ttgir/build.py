"""From what each partition did (spec/ttgir/run.py) to a pipeproof spec in TOML, whose ops
carry the kernel line they came from (`SourceMap`). The builder itself is the front-end core
(spec/frontend_core.py), shared with the Mojo front end; this module adds Triton's partitions,
its lowering per release (`--warps`) and the rules below, which are Triton's reading of them.

Rings. Every barrier array (`ttg.local_alloc` of Nx1xi64) is a ring of N stages of its own;
arrays whose barriers TMA copies complete (expect_tx, copy) use the ring's `full` signal, arrays
that tcgen05 commits arrive on use its `empty` signal, others `full`. Its arrive count is the
`ttng.init_barrier` count (the same for every barrier of the array, else an error). A buffer
array that TMA copies fill is the slot of the ring whose barrier the copy completes, at the
same index (a copy into buffer j completing barrier i != j is an error: not expressible yet).
The main ring is the first ring that copies fill.

Agents. Each partition (the default one, which also runs the code before
`ttg.warp_specialize`, and each `partitionN`) is one role of one agent: docs/triton.md gives,
per op, how many arrivals one execution makes (one, by an elected thread, for every op the
front end reads).

Stage and phase, items, `every=P at=j` and `ahead=K`: the core's rules (spec/frontend_core.py's
docstring), read here off each partition's `scf.for` loops.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pipeproof.spec.frontend_core import (DATA_KINDS, EMPTY, FULL, WS_END, WS_START,  # noqa: F401
                                          Builder as CoreBuilder, Ring, SourceMap, ident, move_stage)
from pipeproof.spec.schema import SpecError
from pipeproof.spec.ttgir.run import Event, Partition


@dataclass(frozen=True)
class Lowering:
    """Where a Triton release puts a partition-wide bar.sync around the barrier ops (what
    matters with one agent per warp; docs/triton_versions.md has the PTX of 3.6.0 to 3.9.0):
    before each plain mbarrier arrive (every release), before expect_tx / tcgen05 commits and
    MMAs that arrive (from 3.8: triton-lang/triton#10035), before each wait (up to 3.7)."""
    version: str
    sync_before_arrive: bool
    sync_before_async_arrive: bool
    sync_before_wait: bool


# The first release with a partition bar.sync before expect_tx and tcgen05 arrivals.
SYNC_BEFORE_ASYNC_ARRIVE_FROM = (3, 8)
KNOWN_NEWEST = "3.9.0"


def lowering_of(version: str | None) -> Lowering:
    """The barrier lowering of a Triton release (None: the newest pipeproof knows)."""
    version = version or KNOWN_NEWEST
    try:
        key = tuple(int(x) for x in version.split("+")[0].split(".")[:2])
    except ValueError:
        raise SpecError(f"--lowering {version!r}: expected a Triton release like 3.9.0") from None
    fixed = key >= SYNC_BEFORE_ASYNC_ARRIVE_FROM
    return Lowering(version, sync_before_arrive=True, sync_before_async_arrive=fixed,
                    sync_before_wait=not fixed)


class Builder(CoreBuilder):
    """The core builder (spec/frontend_core.py) with Triton's partitions and lowering."""

    TOOL = "pipeproof triton"
    HEADER = ("# Rings are the kernel's mbarrier arrays; roles its warp_specialize partitions,",
              "# one agent each. Each op's kernel line is in the comment after it.")
    START_OP = "ttg.warp_specialize"
    NESTED = True  # nested scf.for loops read as tiles of k-blocks (spec/frontend_nested.py)

    def __init__(self, module, partitions: list[Partition], name: str, where, lowering=None):
        super().__init__(module.path, partitions, name, where, lowering)
        self.m = module

    def _per_warp(self, ev: Event, text: str, p: Partition):
        """(op text, sync before it?) when each warp of the partition is an agent: waits and
        reads by every warp; arrivals, expects, commits and MMA issues by one thread of the
        partition (the leader warp); a TMA copy by one lane of every warp, each its share of
        the bytes (docs/triton_lowering.md). The lowering says where a partition bar.sync
        comes first."""
        w = self._warps(p)
        if w == 1:
            return text, False
        low = self.lowering
        if ev.op.name == "ttng.async_copy_mbarrier_arrive":  # every thread of every warp
            if ev.kind == "arrive":
                return re.sub(r"^(arrive_\w+) \d+", rf"\1 {32 - 1}", text), False
            return re.sub(r"^expect_tx (\d+)", lambda m: f"expect_tx {int(m.group(1)) // w}", text), False
        if ev.kind == "copy":
            n = ev.value
            return (f"copy {n // w}" + text[len(f"copy {n}"):], False) if n % w == 0 else \
                (text + " @leader", False)
        if ev.kind == "arrive":
            return text + " @leader", low.sync_before_arrive
        if ev.kind == "expect" or (ev.kind == "commit" and ev.op.name == "ttng.tc_gen5_commit"):
            return text + " @leader", low.sync_before_async_arrive
        if ev.kind == "commit":  # an MMA's own barriers: its sync came before the MMA
            return text + " @leader", False
        if ev.kind == "read_async" and ev.op.name == "ttng.tc_gen5_mma":
            return text + " @leader", low.sync_before_async_arrive  # one thread issues it
        if ev.kind == "wait":
            return text, low.sync_before_wait
        return text, False

