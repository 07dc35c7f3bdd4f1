"""What the GPU generator's modules share: hardware limits, the log's layout, the slot layout.

The event-record and copy-record layouts here are read back by cuda_ref.run and cuda_ref.log
(through cuda_ref.codegen, which re-exports every name).
"""
from __future__ import annotations

from dataclasses import dataclass, field

KERNEL_NAME = "pipeproof_kernel"

# Hardware limits (H200, sm_90).
MAX_DYNAMIC_SMEM = 227 * 1024       # opt-in dynamic shared memory per block
MAX_WARPS_PER_CTA = 32              # 1024 threads
MAX_HW_BARRIERS = 15                # bar.sync ids 1..15 (0 is __syncthreads)
BULK_ALIGN = 16                     # cp.async.bulk: size and addresses multiples of 16
WRITE_REGION = 16                   # the tag words a `write` stores (the least part region)
SLOT_ALIGN = 128

# Event record layout (int32 words) shared with cuda_ref.run.
EV_W = 16
EV_FIELDS = ("t_lo", "t_hi", "seq", "agent", "op", "pc", "item", "ring", "stage", "phase_lo",
             "phase_hi", "result", "x0", "x1", "spare", "valid")
EV_OP_FINISH = 100   # an async read finishes (the model's in-flight read entry)
EV_OP_FIRE = 101     # a commit fires (the model's in-flight commit entry)
RESULT_OK, RESULT_TIMEOUT, RESULT_MISMATCH = 0, 1, 2
RESULTS = {RESULT_OK: "ok", RESULT_TIMEOUT: "timeout", RESULT_MISMATCH: "tag_mismatch"}

# Copy records (u64 words): meta (valid << 63 | source cta << 56 | region offset << 32 |
# stage << 16 | ring << 8 | dst cta), tag | bytes << 32,
# t_issue, seq_issue | how-seen << 32, seq of the first step that saw it landed (~0: none), its t
REC_W = 6
REC_VALID = 1 << 63
LAND_BY_WAIT, LAND_BY_READ, LAND_BY_SWEEP, LAND_BY_STEP = 1, 2, 3, 4
LAND_BY_REPLAY = 5   # a replay's landing step, made by its CTA's replay warp (cuda_ref/replay.py)

# Control words (u32): sequence counter, record counter, flags, the log lock
CTL_SEQ, CTL_REC, CTL_FLAGS = 0, 1, 2
CTL_WORDS = 8   # then, per CTA, its agents done (CTL_DONE + c), a replay's commits in flight
                # into it (CTL_COMMITS + c) and those of them a peer CTA issued (CTL_PEER + c)
CTL_PER_CTA = 3  # the buffer has CTL_WORDS + CTL_PER_CTA * CTAs words
# An event's spare word (flags), the exit rule of DESIGN "inflight_at_exit" (revised 2026-12-02):
EV_EXIT_INFLIGHT = 1   # the step made its CTA gone while a copy or commit of ANOTHER CTA was in
                       # flight into it (inflight_at_exit)
EV_LATE_TARGET = 2     # 2 | c << 8: the step issued an update at CTA c (not its own), gone already
EV_EXIT_UNAWAITED = 4  # the step made its CTA gone with only the CTA's own copies or commits in
                       # flight into it: the warning unawaited_at_exit, not a violation
FLAG_EV_OVERFLOW, FLAG_REC_OVERFLOW, FLAG_LOCK_BROKEN = 1, 2, 4
FLAG_SCHED = 8       # replay: an op's pc or a landing the schedule names is not the kernel's

STATUS_FINISHED, STATUS_TIMEOUT = 1, 2

SWEEP_NS = 2_000_000   # how long a CTA waits at exit for copies still landing


class GenerationError(Exception):
    """The spec cannot be run on the GPU as written; str() is one line naming the cause."""



@dataclass
class Region:
    """Where one copy op of one agent lands in a slot of its ring (same offset in every CTA)."""
    agent: int
    pc: int
    offset: int
    nbytes: int
    dests: tuple          # destination CTAs
    every: int
    at: int
    items: int            # its tags 0 .. items-1: the issuing agent's items, or its tiles
                          # (a tile-level ring of nested loops: tag = item / tag_div)
    src_word: int = 0     # start of its source data in the source buffer (u32 words)
    tag: int = -1         # a prologue's or epilogue's copy: its one tag (model.tag_of)


@dataclass
class PartLayout:
    """One part of a ring's slots (checker/core/program.py slot_parts): its region of every slot's
    buffer (same offset in every CTA that has it), sized by its largest fill."""
    index: int
    offset: int
    nbytes: int
    ctas: tuple           # the CTAs whose slots have it
    fills: list           # per producer-side fill op storing into it: (agent, pc, tag, every,
                          # at, items, tag_div), tag = model.tag_of (-1: a body fill, of the
                          # item / tag_div: the tile of a tile-level ring, the item otherwise)


@dataclass
class RingLayout:
    index: int
    name: str
    stages: int
    full_count: int
    empty_count: int
    kind: str             # "copy" (some copy fills it: landings are observed) or "write"
    slot_bytes: int
    base: int             # offset of slot 0 in dynamic shared memory
    regions: list = field(default_factory=list)   # Region per copy op
    parts: list = field(default_factory=list)     # PartLayout per part of its slots



def round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a
