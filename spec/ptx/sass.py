"""The SASS side of "did ptxas keep the protocol": read `nvdisasm -g -c` / `-gi -c` text, say
what each mbarrier instruction does, and whether an instruction runs in one lane of a warp.

Pure Python: parsing needs no CUDA. Only `run_nvdisasm` needs the `nvdisasm` binary (on PATH, or
from the `nvidia-cuda-nvdisasm` wheel).

API
---
- `parse_sass(text) -> list[SassFunction]`: one `SassFunction` per `.text.NAME` section, each a
  list of `SassInst` (address, guard, opcode, operands, source loc chain) plus its labels.
- `classify(inst) -> SyncOp | None`: what a sync instruction does on an mbarrier (section
  "Forms" below).
- `SyncOp.arrivals(lanes, active=32, count=1) -> int`: the arrivals one warp makes.
- `lanes_per_warp(func, index) -> int` and `elected(func, index, max_lanes=1) -> bool`:
  how many lanes of a full warp can execute the instruction at `index`, from its guard and the
  conditional branches that control it (section "Elected" below).
- `over_arrival(func, index, ptx_lanes=1) -> bool`: the triton#11858 test for one arrive.
- `run_nvdisasm(cubin_path, inline=True) -> str` (`find_nvdisasm() -> str | None`).

Forms (measured: ptxas 13.0/13.5, sm_90a and sm_100a; see
tests/fixtures/ptx/sass_forms/README.md and the reference table "What each PTX form becomes in
SASS")
-----------------------------------------------------------------------------------------------
=========================================  ========================================================
SASS                                        SyncOp
=========================================  ========================================================
SYNCS.EXCH.64 URZ, [b], URc                init (count encoded in the 64-bit value URc)
SYNCS.ARRIVE.TRANS64.A1T0 RZ, [b], RZ      arrive, count_form "one_per_thread"
SYNCS.ARRIVE.TRANS64.ART0 RZ, [b], Rn      arrive, count_form "count_reg" (count in Rn)
SYNCS.ARRIVE.TRANS64.TMASK.ART0 ...        arrive, "count_reg", no_complete (arrive.noComplete)
SYNCS.ARRIVE.TRANS64 RZ, [b], Rtx          arrive, count_form "with_tx" (arrive.expect_tx)
SYNCS.ARRIVE.TRANS64.RED[.A1T0] ...        the same, remote=True (shared::cluster arrive, mapa)
SYNCS.ARRIVE.TRANS64.RED.A0TR RZ,[b],Rtx   expect (expect_tx, no arrival), count_form "tx_only"
SYNCS.ARRIVE.TRANS64.RED.A0TX RZ,[b],Rtx   complete_tx (no arrival), count_form "tx_only"
USYNCS.ARRIVE.TRANS64.ACT0 ...             arrive, count_form "per_active_lane" (triton#11858)
SYNCS.PHASECHK.TRANS64.TRYWAIT P, [b], R   wait (parity in bit 31 of R)
SYNCS.PHASECHK.TRANS64 P, [b], R           test (test_wait, or the retry probe of a try_wait)
UTMALDG.nD[.MULTICAST][.2CTA]              tma_load (multicast mask register = 3rd operand)
UBLKCP.S.G[.MULTICAST]                     bulk_load
UTCBAR[.2CTA][.MULTICAST] [b], URZ[, m]    commit (tcgen05.commit ... mbarrier::arrive::one)
ARRIVES.LDGSTSBAR.64.ARVCNT [b]            arrive_cpasync (cp.async.mbarrier.arrive.noinc)
=========================================  ========================================================

For UTMALDG and UBLKCP the mbarrier address is not an operand of its own: it rides in the
uniform-register group of the first operand, so `SyncOp.barrier` is None there.

How many arrivals an arrive makes
---------------------------------
`mbarrier.arrive` is a per-thread instruction: PTX ISA, "mbarrier.arrive": each *executing
thread* performs an arrive-on operation (pending count -= count). The vector form
`SYNCS.ARRIVE.TRANS64.A1T0` keeps that: a full warp executing it unguarded counts 32, one per
active, guard-true lane. Evidence: /work/shared/reference/mbarrier_cutlass.md ("2+ lanes of one
warp arriving at once on a barrier with pending 1" is one update larger than pending, and the
H200 traps), and triton-lang/triton#11858 below, whose direct counts show A1T0 counting one per
arriving lane while ACT0 counts every active lane. The uniform-datapath form (`USYNCS...`, any
opcode starting with U) is issued once per warp; with A1T0 it counts one per warp (#11858: "the
one-byte A1T0 control changes it from 128 to 127"). `SyncOp.arrivals(lanes, active)` gives the
count for a warp.

triton#11858: what ptxas 13.4's over-arrival looks like
-------------------------------------------------------
https://github.com/triton-lang/triton/pull/11858 ("[NVIDIA] Work around ptxas 13.4 barrier
over-arrival on Rubin", 2026-09-18). ptxas 13.4, on the divergent-warp path of a ConSan-
instrumented two-CTA Gluon attention kernel for SM107, replaced a *predicated count-one*
`mbarrier.arrive` (PTX: `@p mbarrier.arrive`, one lane has p) with `VOTEU.ALL` (a uniform
predicate made from the per-lane one) plus a uniform `USYNCS.ARRIVE.TRANS64.ACT0` under it (the
thread names the opcodes, not their operands; tests/test_ptx_sass.py spells out a hand-written
example). The uniform predicate keeps *whether* some lane arrives, but ACT0 counts every active
lane, not the predicate-true ones: measured 1, 2, 8, 16, 31, 32 arrivals for 1, 2, 8, 16, 31, 32
active lanes; in the attention kernel 16 active lanes with P0 true in one lane took a count-128
barrier to 112 instead of 127 ("Warp Barrier Arrival Mismatch"). The workaround was -O0 for
ConSan on SM107 with ptxas 13.4 (the `ptxas-blackwell` that Triton 3.9 ships and uses for
sm_90 and up).

So the SASS check flags an over-arrival where the PTX arrive at a source line runs in one lane
per warp (predicated / elected) but the SASS arrive at that line counts more than one lane:
`classify(inst).count_form == "per_active_lane"`, or a vector arrive for which
`elected(func, index)` is False (no guard, or a guard that is not lane-selecting, e.g. a
uniform UP predicate or a data-dependent one). `over_arrival(func, index)` does that test for one
instruction.

Elected
-------
`lanes_per_warp(func, index)` bounds how many lanes of a full 32-lane warp execute the
instruction. Best effort, documented limits:

- the guard predicate (`@P0`, `@!P0`) is traced to its definitions: the writes of it that
  reach the instruction over the function's control-flow graph (basic blocks split at BRA/JMP
  and their target labels; `BRA.DIV`, the diverged-warp path, is a branch of unknown
  condition). More than four reaching writes, or a value that feeds back into itself around a
  loop, read as unknown. Each definition is evaluated for every thread id 0..1023
  (three-valued: true / false / unknown) and the most lanes of one warp that can be true is the
  bound. Understood writers: `ELECT P` (one lane), `ISETP.cmp[.U32].AND|OR|XOR P, Q, Ra, Rb|imm,
  Pc` and `LOP3.LUT P, RZ, Ra, imm, RZ, 0xc0|0xfc, !PT` on values derived from `SR_TID.X` /
  `SR_LANEID` (through `LOP3.LUT` AND/OR/XOR with immediates, `SHF.R.U32.HI`, `VIADD`/`IADD3`
  with an immediate, `MOV`, `IMAD.MOV.U32`), `PLOP3.LUT` (any truth table). A
  uniform predicate (`UPn`) is the same in every lane: 32 unless it is always false.
- an unguarded instruction (or one whose guard allows more lanes) is also bounded by the
  conditional branches that decide whether it is reached: the instruction's basic block is
  looked up in the function's control-flow graph; for each dominator D ending in `@P BRA T`
  whose successor S (taken or fall-through) has D as its only predecessor and dominates the
  instruction's block, the condition to take that edge bounds the lanes the same way.
- unknown values count as "may be true", so the bound is an upper bound; registers and
  predicates written by calls or by instructions not listed above are unknown.
- `elected(func, index, max_lanes=1)` is `lanes_per_warp(...) <= max_lanes`.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field

from pipeproof.spec.ptx.module import split_args
from pipeproof.spec.schema import SpecError

# ---------------------------------------------------------------------------------------------
# Parsing


@dataclass
class SassInst:
    addr: int
    guard: str | None          # "!P0", "UP1", "PT", ... (without the @), None when unguarded
    opcode: str                # "SYNCS.ARRIVE.TRANS64.A1T0"
    operands: list[str]        # top-level comma split: ["RZ", "[UR4]", "RZ"]
    text: str                  # the instruction as printed, without address and `;`
    loc: list[tuple[str, int]] = field(default_factory=list)   # innermost first

    @property
    def base(self) -> str:
        """The opcode's first component: SYNCS, UTMALDG, BRA, ..."""
        return self.opcode.split(".", 1)[0]

    @property
    def suffixes(self) -> tuple[str, ...]:
        return tuple(self.opcode.split(".")[1:])


@dataclass
class SassFunction:
    name: str
    insts: list[SassInst]
    labels: dict[str, int]     # label -> index of the first instruction after it
    branch_targets: dict[int, str]   # instruction index -> target label (BRA/BRX/JMP/CALL)
    memo: dict = field(default_factory=dict, repr=False, compare=False)   # lanes_per_warp's

    def index_at(self, addr: int) -> int:
        for i, inst in enumerate(self.insts):
            if inst.addr == addr:
                return i
        raise KeyError(f"{self.name}: no instruction at {addr:#x}")


_INST = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(?:@(\S+)\s+)?"
                   r"([A-Z0-9_][A-Za-z0-9_.]*)\s*(.*?)\s*;")
_LABEL = re.compile(r"^\s*([A-Za-z_.$][\w.$]*):\s*$")
_FILE = re.compile(r'File "([^"]*)", line (\d+)')
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([^,\s]+)")
_TARGET = re.compile(r"`\(([^)]+)\)")


_split_operands = split_args   # top-level commas (brackets nest), as in PTX


def parse_sass(text: str) -> list[SassFunction]:
    """Functions of `nvdisasm -g -c` or `-gi -c` output, in file order.

    A function starts at `.section .text.NAME` (or, without section lines, at a `.text.NAME:`
    label). `//## File "F", line N [inlined at "G", line M]` comments set the source loc of the
    instructions after them until the next comment group: a group of consecutive comment lines
    is one chain, innermost first (with -gi: one line per inlining level)."""
    funcs: list[SassFunction] = []
    cur: SassFunction | None = None
    loc: list[tuple[str, int]] = []
    in_group = False
    pending_labels: list[str] = []
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m or (cur is None and line.strip().startswith(".text.") and line.strip().endswith(":")):
            name = m.group(1) if m else line.strip()[len(".text."):-1]
            if cur is None or cur.name != name:
                cur = SassFunction(name, [], {}, {})
                funcs.append(cur)
            loc, in_group, pending_labels = [], False, []
            continue
        if cur is None:
            continue
        stripped = line.strip()
        if stripped.startswith("//##"):
            if not in_group:
                loc, in_group = [], True
            for f, n in _FILE.findall(stripped):
                if not loc or loc[-1] != (f, int(n)):
                    loc.append((f, int(n)))
            continue
        m = _INST.match(line)
        if m:
            in_group = False
            addr, guard, opcode, rest = int(m.group(1), 16), m.group(2), m.group(3), m.group(4)
            inst = SassInst(addr, guard, opcode, _split_operands(rest),
                            (opcode + (" " + rest if rest else "")).strip(), list(loc))
            idx = len(cur.insts)
            for lab in pending_labels:
                cur.labels[lab] = idx
            pending_labels = []
            t = _TARGET.search(rest)
            if t and opcode.split(".")[0] in ("BRA", "BRX", "JMP", "JMX", "CALL", "BSSY", "BREAK"):
                cur.branch_targets[idx] = t.group(1)
            cur.insts.append(inst)
            continue
        m = _LABEL.match(line)
        if m and not stripped.startswith(".text."):
            pending_labels.append(m.group(1))
    return funcs


# ---------------------------------------------------------------------------------------------
# Classification


@dataclass
class SyncOp:
    kind: str                    # init arrive expect complete_tx wait test tma_load bulk_load
    #                              commit arrive_cpasync
    opcode: str
    count_form: str | None = None   # arrives: one_per_thread count_reg tx_only with_tx
    #                                 per_active_lane (ACT0, triton#11858)
    remote: bool | None = None       # .RED on an arrive: the shared::cluster (mapa) arrive
    multicast: bool = False
    two_cta: bool = False
    uniform: bool = False            # uniform datapath (opcode starts with U): once per warp
    no_complete: bool = False        # .TMASK (arrive.noComplete)
    barrier: tuple[str, int] | None = None   # (base registers joined by "+", offset)
    value: str | None = None         # tx bytes / count / parity / init value register
    mask: str | None = None          # multicast CTA mask register
    pred_out: str | None = None      # PHASECHK's result predicate
    guard: str | None = None
    loc: list[tuple[str, int]] = field(default_factory=list)

    def arrivals(self, lanes: int, active: int = 32, count: int = 1) -> int:
        """Arrivals one warp contributes when `lanes` of its `active` lanes pass the guard
        (and `count` is the count register's value for count_reg)."""
        if self.kind not in ("arrive", "commit", "arrive_cpasync") or self.count_form == "tx_only":
            return 0
        if self.count_form == "per_active_lane":
            return active if lanes > 0 else 0
        if self.uniform or self.kind == "commit":
            return 1 if lanes > 0 else 0
        per = count if self.count_form == "count_reg" else 1
        return lanes * per


def parse_address(op: str) -> tuple[str, int] | None:
    """`[R16+URZ+0x2400]` -> ("R16", 0x2400); `[UR4]` -> ("UR4", 0); `[R5+UR4+-0x8]` ->
    ("R5+UR4", -8). Zero registers (RZ, URZ) are dropped; no register gives base ""."""
    op = op.strip()
    if not (op.startswith("[") and op.endswith("]")):
        return None
    regs, off = [], 0
    for part in re.split(r"\+", op[1:-1].replace("-", "+-")):
        part = part.strip()
        if not part:
            continue
        if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", part):
            off += int(part, 0)
        elif part not in ("RZ", "URZ"):
            regs.append(part.split(".")[0])
    return "+".join(regs), off


def _first_addr(inst: SassInst) -> tuple[str, int] | None:
    for op in inst.operands:
        a = parse_address(op)
        if a is not None:
            return a
    return None


def classify(inst: SassInst) -> SyncOp | None:
    """What `inst` does on an mbarrier, or None for anything else (fences, BAR, ELECT, ...)."""
    op = inst.opcode
    parts = op.split(".")
    base, sfx = parts[0], set(parts[1:])
    common = dict(opcode=op, guard=inst.guard, loc=list(inst.loc), uniform=base.startswith("U"))
    ops = inst.operands
    if base in ("SYNCS", "USYNCS"):
        if "EXCH" in sfx:
            return SyncOp("init", barrier=_first_addr(inst), value=ops[2] if len(ops) > 2 else None,
                          **common)
        if "ARRIVE" in sfx:
            tx = ops[2] if len(ops) > 2 else None
            red = "RED" in sfx
            if "A0TR" in sfx or "A0TX" in sfx:
                return SyncOp("expect" if "A0TR" in sfx else "complete_tx", count_form="tx_only",
                              remote=None, barrier=_first_addr(inst), value=tx, **common)
            if "ACT0" in sfx:
                form = "per_active_lane"
            elif "A1T0" in sfx:
                form = "one_per_thread"
            elif "ART0" in sfx:
                form = "count_reg"
            else:
                form = "with_tx"
            return SyncOp("arrive", count_form=form, remote=red, no_complete="TMASK" in sfx,
                          barrier=_first_addr(inst),
                          value=None if form in ("one_per_thread", "per_active_lane") else tx,
                          **common)
        if "PHASECHK" in sfx:
            return SyncOp("wait" if "TRYWAIT" in sfx else "test", barrier=_first_addr(inst),
                          value=ops[2] if len(ops) > 2 else None,
                          pred_out=ops[0] if ops else None, **common)
        return None
    if base == "UTMALDG":
        return SyncOp("tma_load", multicast="MULTICAST" in sfx, two_cta="2CTA" in sfx,
                      mask=ops[2] if "MULTICAST" in sfx and len(ops) > 2 else None, **common)
    if base == "UBLKCP" and "G" in sfx and "S" in sfx and parts.index("S") < parts.index("G"):
        return SyncOp("bulk_load", multicast="MULTICAST" in sfx,
                      mask=ops[2] if "MULTICAST" in sfx and len(ops) > 2 else None, **common)
    if base == "UTCBAR":
        return SyncOp("commit", multicast="MULTICAST" in sfx, two_cta="2CTA" in sfx,
                      barrier=_first_addr(inst),
                      mask=ops[2] if "MULTICAST" in sfx and len(ops) > 2 else None, **common)
    if base == "ARRIVES" and "LDGSTSBAR" in sfx:
        return SyncOp("arrive_cpasync", barrier=_first_addr(inst), **common)
    return None


# ---------------------------------------------------------------------------------------------
# Elected: how many lanes of a warp execute an instruction

_TIDS = range(1024)
_UNK = None          # three-valued: True / False / None (unknown)


def _imm(s: str) -> int | None:
    s = s.strip()
    if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", s):
        return int(s, 0)
    return None


def _writes(inst: SassInst, reg: str) -> bool:
    """Whether `inst` writes `reg` (a predicate or register) as a destination operand."""
    if not inst.operands:
        return False
    ops = [o.split(".")[0].lstrip("!-|") for o in inst.operands]
    b = inst.base
    if reg.startswith(("P", "UP")):
        if b in ("IADD3", "UIADD3"):                    # IADD3 R4, P0, PT, R2, 0x80, RZ
            return reg in ops[:3]
        if b in ("ISETP", "UISETP", "FSETP", "DSETP", "HSETP2", "PLOP3", "UPLOP3", "LOP3", "ULOP3",
                 "VOTE", "ELECT", "FCHK", "LEA", "ULEA", "IMAD", "SHFL"):
            return reg in ops[:2]
        if b in ("VOTEU", "SYNCS", "USYNCS", "USETMAXREG", "UTCATOMSWS", "BAR", "LDS", "ATOMS",
                 "ATOM", "ISETP", "P2R", "UP2UR"):
            return ops[0] == reg
        return b in ("R2P", "R2UR") and reg.startswith("P")   # R2P writes several: unknown
    return ops[0] == reg and b not in ("ST", "STS", "STG", "STL", "BRA", "EXIT", "RET", "BAR",
                                        "SYNCS", "UTMALDG", "UBLKCP", "UTCBAR", "CALL")


def _defs(func: SassFunction, index: int, reg: str) -> list[int]:
    """Indices of the writes of `reg` that reach `index` (reaching definitions over the
    function's control-flow graph; a guarded write counts as a write, and its own evaluation
    falls back to the value before it where its guard is false)."""
    key = ("defs", index, reg)
    if key in func.memo:
        return func.memo[key]
    blocks, block_of, succ, pred = _cfg(func)
    me = block_of[index]
    out: set[int] = set()
    j = next((j for j in range(index - 1, blocks[me][0] - 1, -1) if _writes(func.insts[j], reg)),
             None)
    if j is not None:
        out.add(j)
    else:
        seen, todo = set(), list(pred[me])
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            s0, e0 = blocks[k]
            j = next((j for j in range(e0, s0 - 1, -1) if _writes(func.insts[j], reg)), None)
            if j is not None:
                out.add(j)
            else:
                todo.extend(pred[k])
    func.memo[key] = sorted(out)
    return func.memo[key]


_BUSY = object()
_MAX_DEFS = 4


def _memo(kind):
    """Memoise a (func, index, reg) evaluator on func.memo; a cycle (a loop feeding a value back
    into itself) reads as unknown (None)."""
    def wrap(fn):
        def inner(func, index, reg, depth=0):
            reg = reg.replace(".reuse", "")
            key = (kind, index, reg)
            got = func.memo.get(key)
            if got is _BUSY:
                return None
            if key in func.memo:
                return got
            func.memo[key] = _BUSY
            try:
                res = fn(func, index, reg, depth)
            finally:
                func.memo.pop(key, None)
            func.memo[key] = res
            return res
        return inner
    return wrap


@_memo("value")
def _value(func: SassFunction, index: int, reg: str, depth: int = 0):
    """A function tid -> int | None for the register `reg` read at `index`, or None."""
    if reg in ("RZ", "URZ"):
        return lambda t: 0
    k = _imm(reg)
    if k is not None:
        return lambda t: k
    if depth > 8:
        return None
    ds = _defs(func, index, reg)
    if len(ds) != 1:
        return None
    j = ds[0]
    d = func.insts[j]
    if d.guard not in (None, "PT"):
        return None
    ops, b = d.operands, d.base
    if b == "S2R" and len(ops) == 2:
        if ops[1] == "SR_TID.X":
            return lambda t: t
        if ops[1] == "SR_LANEID":
            return lambda t: t % 32
        return None
    if b in ("MOV", "IMOV") and len(ops) == 2:
        return _value(func, j, ops[1], depth + 1)
    if d.opcode == "IMAD.MOV.U32" and len(ops) == 4 and ops[1] == "RZ" and ops[2] == "RZ":
        return _value(func, j, ops[3], depth + 1)
    if b in ("VIADD", "IADD3") and len(ops) >= 3:
        srcs = [o for o in ops[1:] if o != "RZ" and not o.startswith(("P", "!P"))]
        fs = [_value(func, j, s, depth + 1) for s in srcs]
        if all(f is not None for f in fs):
            return lambda t: sum(f(t) for f in fs) & 0xFFFFFFFF
        return None
    if b == "SHF" and "R" in d.suffixes and "HI" in d.suffixes and len(ops) == 4 and ops[1] == "RZ":
        sh, f = _imm(ops[2]), _value(func, j, ops[3], depth + 1)
        if sh is not None and f is not None:
            return lambda t: (f(t) & 0xFFFFFFFF) >> sh
        return None
    if b == "LOP3" and len(ops) >= 6 and not ops[0].startswith("P"):
        fa, fb, fc = (_value(func, j, o, depth + 1) for o in ops[1:4])
        lut = _imm(ops[4])
        if None in (fa, fb, fc) or lut is None:
            return None
        return lambda t: _lop3(fa(t), fb(t), fc(t), lut)
    return None


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    r = 0
    for bit in range(32):
        i = ((a >> bit) & 1) << 2 | ((b >> bit) & 1) << 1 | ((c >> bit) & 1)
        r |= ((lut >> i) & 1) << bit
    return r


def _signed(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


_CMP = {"EQ": lambda a, b: a == b, "NE": lambda a, b: a != b, "LT": lambda a, b: a < b,
        "LE": lambda a, b: a <= b, "GT": lambda a, b: a > b, "GE": lambda a, b: a >= b}


def _and(x, y):
    if x is False or y is False:
        return False
    return True if (x is True and y is True) else _UNK


def _or(x, y):
    if x is True or y is True:
        return True
    return False if (x is False and y is False) else _UNK


def _not(x):
    return _UNK if x is _UNK else (not x)


def _pred(func: SassFunction, index: int, pred: str, depth: int = 0):
    """tid -> True/False/None for predicate `pred` (may start with "!") read at `index`."""
    neg = pred.startswith("!")
    p = pred.lstrip("!").replace(".reuse", "")
    if p in ("PT", "UPT"):
        return (lambda t: False) if neg else (lambda t: True)
    f = _pred_pos(func, index, p, depth)
    if f is None:
        return lambda t: _UNK
    return (lambda t: _not(f(t))) if neg else f


@_memo("pred")
def _pred_pos(func: SassFunction, index: int, p: str, depth: int = 0):
    if depth > 8:
        return None
    ds = _defs(func, index, p)
    if not ds or len(ds) > _MAX_DEFS:
        return None
    fs = [_pred_def(func, j, p, depth) for j in ds]
    if len(fs) == 1:
        return fs[0]
    # several definitions reach: true where any may be true
    def merged(t):
        vals = [f(t) if f is not None else _UNK for f in fs]
        if all(v is False for v in vals):
            return False
        if all(v is True for v in vals):
            return True
        return _UNK
    return merged


def _pred_def(func: SassFunction, j: int, p: str, depth: int):
    """tid -> value of `p` just after the instruction at j (which writes it)."""
    d = func.insts[j]
    inner = _pred_write(func, j, p, depth)
    if d.guard in (None, "PT"):
        return inner
    g = _pred(func, j, d.guard, depth + 1)
    old = _pred(func, j, p, depth + 1)     # the value the write leaves alone where g is false
    if d.base == "ELECT" and d.operands and d.operands[0] == p:
        # `@P0 ELECT P1`: one lane among those where P0 holds (taken as the first that may)
        def elect_among(t):
            w = t - t % 32
            first = next((u for u in range(w, w + 32) if g(u) is not False), None)
            return t == first if g(t) is True else (old(t) if g(t) is False else _UNK)
        return elect_among

    def guarded(t):
        gv, o = g(t), old(t)
        a = inner(t) if inner is not None else _UNK
        if gv is True:
            return a
        if gv is False:
            return o
        return a if a == o else _UNK
    return guarded


def _pred_write(func: SassFunction, j: int, p: str, depth: int):
    d = func.insts[j]
    ops, b = d.operands, d.base
    if p.startswith("UP") and b != "ELECT":
        # uniform: one value per warp; true for all lanes or none
        return None
    if b == "ELECT" and ops and ops[0] == p:
        return lambda t: (t % 32) == 0
    if b in ("ISETP", "UISETP") and len(ops) >= 5 and ops[0] == p:
        sfx = d.suffixes
        cmp = next((s for s in sfx if s in _CMP), None)
        comb = next((s for s in sfx if s in ("AND", "OR", "XOR")), "AND")
        unsigned = "U32" in sfx
        fa, fb = _value(func, j, ops[2], depth + 1), _value(func, j, ops[3], depth + 1)
        fc = _pred(func, j, ops[4], depth + 1)
        if cmp is None:
            return None

        def isetp(t):
            if fa is None or fb is None:
                c = _UNK
            else:
                a, bb = fa(t), fb(t)
                if not unsigned:
                    a, bb = _signed(a), _signed(bb)
                else:
                    a, bb = a & 0xFFFFFFFF, bb & 0xFFFFFFFF
                c = _CMP[cmp](a, bb)
            x = fc(t)
            if comb == "AND":
                return _and(c, x)
            if comb == "OR":
                return _or(c, x)
            return _UNK if _UNK in (c, x) else (c != x)
        return isetp
    if b == "LOP3" and len(ops) >= 7 and ops[0] == p:
        fa, fb, fc = (_value(func, j, o, depth + 1) for o in ops[2:5])
        lut = _imm(ops[5])
        if None in (fa, fb, fc) or lut is None:
            return None
        return lambda t: _lop3(fa(t), fb(t), fc(t), lut) != 0
    if b == "PLOP3" and len(ops) >= 7 and ops[0] == p:
        fs = [_pred(func, j, o, depth + 1) for o in ops[2:5]]
        lut = _imm(ops[5])
        if lut is None:
            return None

        def plop(t):
            vals = [f(t) for f in fs]
            outs = set()
            for a in ([vals[0]] if vals[0] is not _UNK else [False, True]):
                for bb in ([vals[1]] if vals[1] is not _UNK else [False, True]):
                    for c in ([vals[2]] if vals[2] is not _UNK else [False, True]):
                        outs.add(bool((lut >> (int(a) << 2 | int(bb) << 1 | int(c))) & 1))
            return outs.pop() if len(outs) == 1 else _UNK
        return plop
    return None


def _count(cond) -> int:
    """Most lanes of one warp for which `cond(tid)` may be true."""
    best = 0
    for w in range(0, len(_TIDS), 32):
        n = sum(1 for t in range(w, w + 32) if cond(t) is not False)
        best = max(best, n)
        if best == 32:
            break
    return best


_TRANSFERS = ("BRA", "JMP")


def _cfg(func: SassFunction):
    """Basic blocks as (start, end) index ranges, successors as (block, predicate to take the
    edge, or None when always taken, or "?" when unknown), and predecessors. BRA and JMP
    transfer control (BRA.DIV, taken when the warp is diverged, has an unknown condition);
    CALL, BSSY and WARPSYNC targets do not. Cached on func.memo."""
    if "cfg" in func.memo:
        return func.memo["cfg"]
    n = len(func.insts)
    targets = {i: func.labels.get(t) for i, t in func.branch_targets.items()
               if func.insts[i].base in _TRANSFERS}
    leaders = {0} | {t for t in targets.values() if t is not None and t < n}
    for i, inst in enumerate(func.insts):
        if (i in targets or inst.base in ("EXIT", "RET", "BRX", "JMX")) and i + 1 < n:
            leaders.add(i + 1)
    starts = sorted(leaders)
    ends = [st - 1 for st in starts[1:]] + [n - 1]
    blocks = list(zip(starts, ends))
    block_of = {}
    for k, (st, e) in enumerate(blocks):
        for i in range(st, e + 1):
            block_of[i] = k
    succ: list[list[tuple[int, str | None]]] = []
    for k, (st, e) in enumerate(blocks):
        last = func.insts[e]
        out: list[tuple[int, str | None]] = []
        uncond = last.guard in (None, "PT")
        if e in targets:
            div = "DIV" in last.suffixes
            t = targets[e]
            if t is not None:
                out.append((block_of[t], "?" if div else (None if uncond else last.guard)))
            if (div or not uncond) and e + 1 < n:
                g = last.guard or ""
                out.append((block_of[e + 1], "?" if div else
                            (g[1:] if g.startswith("!") else "!" + g)))
        elif last.base in ("EXIT", "RET", "BRX", "JMX") and uncond:
            pass
        elif e + 1 < n:
            out.append((block_of[e + 1], None))
        succ.append(out)
    pred: list[list[int]] = [[] for _ in blocks]
    for k, out in enumerate(succ):
        for t, _ in out:
            pred[t].append(k)
    func.memo["cfg"] = (blocks, block_of, succ, pred)
    return func.memo["cfg"]


def _dominators(nb: int, pred: list[list[int]]) -> list[set[int]]:
    full = set(range(nb))
    dom = [full.copy() for _ in range(nb)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for k in range(1, nb):
            ps = [dom[p] for p in pred[k]]
            new = (set.intersection(*ps) if ps else set()) | {k}
            if new != dom[k]:
                dom[k], changed = new, True
    return dom


def lanes_per_warp(func: SassFunction, index: int) -> int:
    """An upper bound on how many lanes of a full warp execute `func.insts[index]`: 32 when
    nothing selects lanes, 1 for an ELECT-guarded or `lane == 0` guarded instruction."""
    inst = func.insts[index]
    best = 32
    if inst.guard not in (None, "PT"):
        best = min(best, _count(_pred(func, index, inst.guard)))
    if best <= 1:
        return best
    blocks, block_of, succ, pred = _cfg(func)
    if "dom" not in func.memo:
        func.memo["dom"] = _dominators(len(blocks), pred)
    dom = func.memo["dom"]
    me = block_of[index]
    for d in dom[me]:
        for s, cond in succ[d]:
            if cond in (None, "?") or pred[s] != [d] or s not in dom[me]:
                continue
            at = blocks[d][1]
            best = min(best, _count(_pred(func, at, cond)))
    return best


def elected(func: SassFunction, index: int, max_lanes: int = 1) -> bool:
    """Whether at most `max_lanes` lanes of a warp execute the instruction at `index` (guarded
    by an ELECT's predicate, or by a lane-id / thread-id test, directly or through the branches
    that reach it). See the module docstring, "Elected"."""
    return lanes_per_warp(func, index) <= max_lanes


def over_arrival(func: SassFunction, index: int, ptx_lanes: int = 1) -> bool:
    """For a SASS arrive whose PTX arrive runs in `ptx_lanes` lanes per warp (1: predicated or
    elected): True when the SASS arrive counts more than that (ACT0, or a vector arrive that
    more lanes execute). False for non-arrives and uniform A1T0/commits (once per warp)."""
    op = classify(func.insts[index])
    if op is None or op.kind not in ("arrive", "arrive_cpasync"):
        return False
    if op.count_form == "tx_only":
        return False
    if op.count_form == "per_active_lane":
        return True
    if op.uniform:
        return False
    return lanes_per_warp(func, index) > ptx_lanes


# ---------------------------------------------------------------------------------------------
# nvdisasm


def find_nvdisasm() -> str | None:
    """nvdisasm on PATH, else in an installed `nvidia-cuda-nvdisasm` wheel."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    roots.update(p for p in sys.path if p.endswith("site-packages"))
    for root in sorted(roots):
        for sub in ("nvidia/cu13/bin", "nvidia/cu12/bin", "nvidia/cuda_nvdisasm/bin"):
            for cand in glob.glob(os.path.join(root, sub, "nvdisasm")):
                if os.access(cand, os.X_OK):
                    return cand
    return None


def run_nvdisasm(cubin_path: str, inline: bool = True) -> str:
    """`nvdisasm -gi -c CUBIN` (or `-g -c` with inline=False) as text."""
    exe = find_nvdisasm()
    if exe is None:
        raise SpecError(f"{cubin_path}: nvdisasm not found on PATH or in the nvidia-cuda-nvdisasm "
                        "wheel (pip install 'pipeproof[cuda]')")
    proc = subprocess.run([exe, "-gi" if inline else "-g", "-c", str(cubin_path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1]
        raise SpecError(f"{cubin_path}: nvdisasm failed: {msg}")
    return proc.stdout
