"""Run one thread of a kernel's LLVM IR concretely (spec/mojo/llvm.py reads it) and record its
synchronisation as raw events (spec/mojo/parse.py turns them into partitions).

The thread is fixed by (tid.x, CTA rank in the cluster); block and grid ids are 0, kernel
arguments come from --arg (else opaque). Waits do not block here: a `try_wait.parity` loop
(inline asm) or intrinsic, or an atomic load compared against a threshold (AMD counters), is
recorded as a wait and taken as passed; whether it would pass is the model checker's question.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeproof.spec.mojo.llvm import (I1, I32, I64, IRError, OPAQUE, Parser, Ptr, Type,
                                      field_offset, size_of, tokenize, zero_of)
from pipeproof.spec.mojo.operands import BINOPS, CASTS, parse_inst

MAX_STEPS = 5_000_000


@dataclass
class Raw:
    kind: str            # init wait arrive expect copy commit sync bar_arrive store load poll
    inst: object         # llvm.Inst
    stack: tuple         # call-site Insts, outermost first
    addr: object = None  # barrier (Ptr) or buffer address
    value: object = 0    # count, bytes, parity / threshold
    extra: object = None  # copy: barrier Ptr; masks
    iters: tuple = ()
    seq: int = 0
    lanes: int = 1
    targets: object = None  # {CTA: lanes} an op lands on (lanes that mapa elsewhere)


@dataclass
class Poll:
    """An atomic load of a counter: compared with a threshold it is a wait."""
    addr: Ptr
    inst: object


@dataclass
class PollCmp:
    addr: Ptr
    pred: str
    threshold: int
    inst: object


class T(int):
    """A value that differs between the lanes of a warp (tid.x, laneid, elect.sync and what is
    computed from them); `tid` says it is tid.x plus a uniform amount (a division by a multiple
    of the warp size of such a value is the same for the whole warp)."""

    def __new__(cls, v, tid=False):
        obj = int.__new__(cls, v)
        obj.tid = tid
        return obj


def taint(r, *xs):
    if not isinstance(r, int) or isinstance(r, T):
        return r
    ts = [x for x in xs if isinstance(x, T)]
    if not ts:
        return r
    return T(r, tid=all(x.tid for x in ts) and len(ts) == 1)


WAIT_ASM = re.compile(r"mbarrier\.try_wait(?:\.parity)?")
SYNC_WORDS = ("mbarrier", "cp.async.bulk", "tcgen05.commit", "bar.sync", "bar.arrive", "barrier.sync",
              "barrier.arrive", "mapa", "clusterlaunchcontrol", "s_barrier", "cp.async.mbarrier")


class Thread:
    def __init__(self, module, kernel, tid: int, cta: int, ncta: int, block_dim: int, args: dict,
                 loops: dict, tiles: int | None = None):
        self.m = module
        # work tiles per CTA of a CLC-scheduled kernel (--tiles): the thread's n-th query of a
        # clusterlaunchcontrol response says "cancelled" (another tile) for n < tiles - 1
        self.tiles = tiles
        self.clc_queries = 0
        self.k = kernel
        # ncta: the cluster's CTA count, or its shape (x, y, z) (nvvm.cluster_dim); CTA rank
        # r is at (r mod x, r div x mod y, r div xy) in the cluster, which is at the grid's origin
        dims = tuple(ncta) if isinstance(ncta, (tuple, list)) else (ncta, 1, 1)
        self.cdims = (dims + (1, 1, 1))[:3]
        ncta = self.cdims[0] * self.cdims[1] * self.cdims[2]
        self.tid, self.cta, self.ncta, self.block_dim = tid, cta, ncta, block_dim
        self.ws = 32 if "nvptx" in module.triple else 64  # warp / wavefront size
        self.lane = tid % self.ws
        self.args = args
        self.events: list[Raw] = []
        self.mem = {}
        self.allocas = 0
        self.steps = 0
        self.seq = 0
        self.loops = loops          # function name -> {header: body set}
        self.loop_stack = []        # [(key, iteration)] across frames
        self.starts = {}            # loop key -> [seq]
        self.ends = {}              # loop key -> [seq + 0.5]: after the loop's last event
        self.nvptx = "nvptx" in module.triple
        self.lane_dependent = False
        self.spin = set()
        # the peer bit (bit 24 of a shared::cluster address: the CTA pair's CTA 1) addresses the
        # pair's leader only for cta_group::2 (sm100 2-SM) ops; elsewhere (sm90 clusters) the
        # TMA helper's `and 0xFEFFFFFF` on a shared::cta address is a no-op
        if not hasattr(module, "_pair"):
            module._pair = any("cta_group::2" in i.text for f in module.functions.values()
                               for b in f.blocks.values() for i in b)
        self.pair = module._pair

    # ------------------------------------------------------------ values
    def ev(self, frame, v, t: Type = None):
        kind = v[0]
        if kind == "const":
            return v[1]
        if kind == "ref":
            name = v[1]
            if name.startswith("@"):
                if name in self.m.globals:
                    return Ptr(("global", name), 0)
                return Ptr(("func", name), 0)
            if name not in frame:
                raise IRError(f"{name} used before it is defined")
            return frame[name]
        if kind == "agg":
            return [self.ev(frame, p) for p in v[1]]
        if kind == "gep":
            _, src, args = v
            base = self.ev(frame, args[0][1])
            return self.gep(base, src, [self.ev(frame, a[1]) for a in args[1:]])
        if kind == "cast":
            _, op, at, val, to = v
            return self.cast(op, self.ev(frame, val), at, to)
        raise IRError(f"cannot evaluate {v!r}")

    def gep(self, base, src: Type, idx: list):
        if not isinstance(base, Ptr):
            return OPAQUE
        if not idx:
            return base
        off = 0
        t = src
        first = idx[0]
        if first is OPAQUE:
            return Ptr(base.base, OPAQUE, base.cta)
        off += first * size_of(t, "nvptx" if self.nvptx else None)
        for i in idx[1:]:
            if i is OPAQUE:
                return Ptr(base.base, OPAQUE, base.cta)
            if t.kind == "struct":
                off += field_offset(t, i, "nvptx" if self.nvptx else None)
                t = t.elems[i]
            else:
                t = t.elems[0]
                off += i * size_of(t, "nvptx" if self.nvptx else None)
        return base.add(off)

    @staticmethod
    def mask(v, bits):
        if v is OPAQUE or not isinstance(v, int):
            return v
        return v & ((1 << bits) - 1) if bits < 128 else v

    @staticmethod
    def signed(v, bits):
        if not isinstance(v, int):
            return v
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v

    def cast(self, op, v, at: Type, to: Type):
        if v is OPAQUE:
            return OPAQUE
        if op in ("bitcast", "addrspacecast", "freeze"):
            return v
        if op == "ptrtoint":
            if isinstance(v, Ptr):
                return v  # keep the pointer: offsets are what barrier identity needs
            return v
        if op == "inttoptr":
            return v if isinstance(v, Ptr) else OPAQUE
        if isinstance(v, Ptr):
            return v if op in ("trunc", "zext", "sext") else OPAQUE
        if not isinstance(v, int):
            return OPAQUE
        if op == "trunc":
            return taint(self.mask(v, to.bits), v)
        if op == "zext":
            return taint(self.mask(v, at.bits), v)
        if op == "sext":
            return taint(self.mask(self.signed(v, at.bits), to.bits), v)
        return OPAQUE

    # ------------------------------------------------------------ running
    def record(self, kind, inst, stack, **kw):
        self.seq += 1
        r = Raw(kind, inst, stack, iters=tuple(self.loop_stack), seq=self.seq, **kw)
        self.events.append(r)
        return r

    def run(self):
        params = []
        for n, (t, name) in enumerate(self.k.params):
            v = self.args.get(n, OPAQUE)
            if t.kind == "ptr":
                v = Ptr(("arg", n), 0)
            params.append(v)
        self.call(self.k, params, ())
        for key, _ in self.loop_stack:
            self.ends.setdefault(key, []).append(self.seq + 0.5)
        self.loop_stack = []

    def leave_loops(self, depth, inside=lambda key: False):
        """Close the loops above `depth` on the loop stack that the next block is not `inside`
        (a loop's end: just after its last event)."""
        while len(self.loop_stack) > depth:
            key = self.loop_stack[-1][0]
            if inside(key):
                break
            self.loop_stack.pop()
            self.ends.setdefault(key, []).append(self.seq + 0.5)

    def enter_loop(self, key, depth):
        """A loop header reached: the loop's next iteration, or its first."""
        self.seq += 1
        if len(self.loop_stack) > depth and self.loop_stack[-1][0] == key:
            self.loop_stack[-1] = (key, self.loop_stack[-1][1] + 1)
        else:
            self.loop_stack.append((key, 0))
        self.starts.setdefault(key, []).append(self.seq)

    def call(self, f, args, stack):
        frame = {}
        for (t, name), v in zip(f.params, args):
            if name:
                frame[name] = v
        loops = self.loops[f.name]
        depth = len(self.loop_stack)
        prev, block = None, f.order[0]
        while True:
            # leave loops whose body the new block is not in; enter / iterate a header
            self.leave_loops(depth, lambda key: block in loops[key[-1]])
            if block in loops:
                self.enter_loop(tuple(c.index for c in stack) + (f.name, block), depth)
            insts = f.blocks[block]
            # phis first, all at once
            new = {}
            k = 0
            while k < len(insts) and insts[k].opcode == "phi":
                new[insts[k].result] = self.phi(frame, insts[k], prev)
                k += 1
            frame.update(new)
            nxt = None
            for inst in insts[k:]:
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise IRError("more than 5 million instructions for one thread: give smaller "
                                  "trip counts (--arg)", inst)
                out = self.step(frame, inst, stack)
                if out is not None:
                    if out[0] == "ret":
                        self.leave_loops(depth)
                        return out[1]
                    nxt = out[1]
                    break
            if nxt is None:
                raise IRError("a block without a terminator", insts[-1] if insts else None)
            prev, block = block, nxt

    def phi(self, frame, inst, prev):
        p = inst.parsed
        if p is None:
            toks = tokenize(inst.text)
            ps = Parser(toks, 1)
            while ps.peek()[1] in ("fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"):
                ps.next()
            t = ps.type()
            pairs = []
            while True:
                ps.expect("[")
                v = ps.value(t)
                ps.expect(",")
                lab = ps.next()[1]
                ps.expect("]")
                pairs.append((lab, v))
                if not ps.accept(","):
                    break
            p = inst.parsed = (t, dict(pairs))
        v = p[1].get(prev)
        if v is None:
            raise IRError(f"phi without an entry for {prev}", inst)
        return self.ev(frame, v)

    def parse(self, inst):
        if inst.parsed is None:
            try:
                inst.parsed = parse_inst(inst)
            except IRError as err:
                if err.inst is None:
                    err.inst = inst
                raise
        return inst.parsed

    def step(self, frame, inst, stack):
        """Run one instruction: its result goes into `frame`; a terminator answers ("br",
        label) or ("ret", value), any other instruction None."""
        op = inst.opcode
        p = self.parse(inst)
        res = inst.result
        if op in TERMINATORS:
            return self.terminator(frame, inst, p, stack)
        if op in BINOPS:
            t, a, b = p
            x, y = self.ev(frame, a), self.ev(frame, b)
            frame[res] = self.binop(op, t, x, y, inst)
        elif op == "icmp":
            pred, t, a, b = p
            frame[res] = self.icmp(pred, t, self.ev(frame, a), self.ev(frame, b), inst)
        elif op == "select":
            c, tv, fv = p
            cond = self.ev(frame, c)
            if cond is OPAQUE or not isinstance(cond, int):
                a, b = self.ev(frame, tv), self.ev(frame, fv)
                frame[res] = a if a == b else OPAQUE
            else:
                if isinstance(cond, T):
                    self.lane_dependent = True
                frame[res] = self.ev(frame, tv if cond & 1 else fv)
        elif op in CASTS:
            at, v, to = p
            frame[res] = self.cast(op, self.ev(frame, v), at, to)
        elif op == "getelementptr":
            src, args = p
            base = self.ev(frame, args[0][1])
            frame[res] = self.gep(base, src, [self.ev(frame, a[1]) for a in args[1:]])
        elif op in MEMORY_OPS:
            self.memory(frame, inst, p, stack)
        elif op in AGGREGATE_OPS:
            frame[res] = self.aggregate(frame, op, p)
        elif op == "call":
            out = self.do_call(frame, inst, p, stack)
            if res:
                frame[res] = out
        elif op in ("fence", "cmpxchg"):
            if res:
                frame[res] = OPAQUE
        else:
            if res:
                frame[res] = OPAQUE  # float arithmetic and the like: not modelled
        return None

    def terminator(self, frame, inst, p, stack):
        """br, switch, ret: ("br", label) or ("ret", value); `unreachable` is an error."""
        op = inst.opcode
        if op == "br":
            if len(p) == 1:
                return ("br", p[0])
            c, t_lab, f_lab = p
            cond = self.ev(frame, c)
            if isinstance(cond, PollCmp):
                cond = self.poll_wait(cond, inst, stack)
            if not isinstance(cond, int):
                raise IRError("a branch on a value pipeproof cannot evaluate", inst)
            if isinstance(cond, T):
                self.lane_dependent = True
            return ("br", t_lab if cond & 1 else f_lab)
        if op == "switch":
            t, v, default, cases = p
            x = self.ev(frame, v)
            if not isinstance(x, int):
                raise IRError("a switch on a value pipeproof cannot evaluate", inst)
            if isinstance(x, T):
                self.lane_dependent = True
            x = self.mask(x, t.bits)
            for cv, lab in cases:
                if self.mask(cv, t.bits) == x:
                    return ("br", lab)
            return ("br", default)
        if op == "ret":
            return ("ret", self.ev(frame, p) if p is not None else None)
        raise IRError("reached `unreachable` (an abort path: a debug_assert or a bound check "
                      "that fails for these values)", inst)

    def memory(self, frame, inst, p, stack):
        """alloca, load, store, atomicrmw: allocas are memory; a load or store of shared memory
        (address space 3), and every atomic, is an event; an atomic load of a global is a
        `Poll` (a wait, once compared)."""
        op = inst.opcode
        res = inst.result
        if op == "alloca":
            self.allocas += 1
            frame[res] = Ptr(("alloca", self.allocas), 0)
        elif op == "load":
            t, addr, atomic = p
            a = self.ev(frame, addr)
            if atomic and isinstance(a, Ptr) and a.base[0] == "global":
                frame[res] = Poll(a, inst)
            elif isinstance(a, Ptr) and a.base[0] == "alloca" and a.offset is not OPAQUE:
                frame[res] = self.mem.get((a.base, a.offset, t), self.mem.get((a.base, a.offset), OPAQUE))
            else:
                if isinstance(a, Ptr) and a.base[0] == "global" and self.m.globals.get(a.base[1], (0,))[0] == 3:
                    self.record("load", inst, stack, addr=a)
                frame[res] = OPAQUE
        elif op == "store":
            t, v, addr = p
            a = self.ev(frame, addr)
            val = self.ev(frame, v)
            if isinstance(a, Ptr) and a.base[0] == "alloca" and a.offset is not OPAQUE:
                self.mem[(a.base, a.offset)] = val
                self.mem[(a.base, a.offset, t)] = val
            elif isinstance(a, Ptr) and a.base[0] == "global" and self.m.globals.get(a.base[1], (0,))[0] == 3:
                self.record("store", inst, stack, addr=a, value=val)
        else:  # atomicrmw
            what, t, addr, v = p
            a = self.ev(frame, addr)
            self.record("atomic", inst, stack, addr=a, value=self.ev(frame, v), extra=what)
            if res:
                frame[res] = OPAQUE

    def aggregate(self, frame, op, p):
        """extractvalue, insertvalue, extractelement, insertelement: the result (structs and
        vectors are lists, copied before an insert)."""
        if op == "extractvalue":
            t, v, idx = p
            x = self.ev(frame, v)
            for i in idx:
                x = x[i] if isinstance(x, list) else OPAQUE
            return x
        if op == "insertvalue":
            t, v, et, e, idx = p
            x = self.ev(frame, v)
            x = deep_copy(x if isinstance(x, list) else zero_like(t))
            y = self.ev(frame, e)
            cur = x
            for i in idx[:-1]:
                cur = cur[i]
            cur[idx[-1]] = y
            return x
        if op == "extractelement":
            t, v, it, i = p
            x, k = self.ev(frame, v), self.ev(frame, i)
            return x[k] if isinstance(x, list) and isinstance(k, int) else OPAQUE
        t, v, et, e, it, i = p  # insertelement
        x, y, k = self.ev(frame, v), self.ev(frame, e), self.ev(frame, i)
        x = deep_copy(x if isinstance(x, list) else zero_like(t))
        if isinstance(k, int):
            x[k] = y
            return x
        return OPAQUE

    def binop(self, op, t, x, y, inst):
        if isinstance(x, Ptr) or isinstance(y, Ptr):
            # pointer arithmetic after ptrtoint: offsets only
            if op == "add" and isinstance(x, Ptr) and isinstance(y, int):
                return x.add(y)
            if op == "add" and isinstance(y, Ptr) and isinstance(x, int):
                return y.add(x)
            if op == "sub" and isinstance(x, Ptr) and isinstance(y, int):
                return x.add(-y)
            if op == "and" and isinstance(x, Ptr) and isinstance(y, int) and y & 0xFFFFFFFF == 0xFEFFFFFF:
                # the leader CTA's copy of the address (bit 24 clear: the pair's CTA 0)
                return x if self.ncta == 1 or self.cta % 2 == 0 or not self.pair else Ptr(x.base, x.offset, self.cta - 1)
            if op == "or" and isinstance(x, Ptr) and isinstance(y, int) and y == 0x01000000:
                return x if self.ncta == 1 or not self.pair else Ptr(x.base, x.offset, self.cta | 1)
            return OPAQUE
        if not isinstance(x, int) or not isinstance(y, int) or t.kind != "int":
            return OPAQUE
        bits = t.bits
        if op == "add":
            r = x + y
        elif op == "sub":
            r = x - y
        elif op == "mul":
            r = x * y
        elif op in ("udiv", "urem"):
            a, b = self.mask(x, bits), self.mask(y, bits)
            if b == 0:
                raise IRError("division by zero", inst)
            r = a // b if op == "udiv" else a % b
        elif op in ("sdiv", "srem"):
            a, b = self.signed(x, bits), self.signed(y, bits)
            if b == 0:
                raise IRError("division by zero", inst)
            q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
            r = q if op == "sdiv" else a - q * b
        elif op == "and":
            r = x & y
        elif op == "or":
            r = x | y
        elif op == "xor":
            r = x ^ y
        elif op == "shl":
            r = x << self.mask(y, bits)
        elif op == "lshr":
            r = self.mask(x, bits) >> self.mask(y, bits)
        elif op == "ashr":
            r = self.signed(x, bits) >> self.mask(y, bits)
        else:
            return OPAQUE
        r = self.mask(r, bits)
        if isinstance(x, T) and not isinstance(y, T):
            # tid + c divided by a multiple of the warp size: one value for the whole warp
            div = y if op in ("udiv", "sdiv") else (1 << y) if op in ("lshr", "ashr") else 0
            if x.tid and div and div % self.ws == 0 and (x % div) + self.ws - 1 < div:
                return r
            if op == "and" and y == 0:
                return r
        return taint(r, x, y)

    def icmp(self, pred, t, x, y, inst):
        if isinstance(x, Poll) and isinstance(y, int):
            return PollCmp(x.addr, pred, y, x.inst)
        if isinstance(y, Poll) and isinstance(x, int):
            flip = {"slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle", "ult": "ugt",
                    "ugt": "ult", "ule": "uge", "uge": "ule", "eq": "eq", "ne": "ne"}
            return PollCmp(y.addr, flip[pred], x, y.inst)
        if isinstance(x, Ptr) and isinstance(y, Ptr):
            if x.base == y.base and x.cta == y.cta and isinstance(x.offset, int) and isinstance(y.offset, int):
                x, y = x.offset, y.offset
                bits = 64
            else:
                return OPAQUE
        elif not isinstance(x, int) or not isinstance(y, int):
            return OPAQUE
        bits = t.bits if t.kind == "int" else 64
        if pred[0] == "s":
            a, b = self.signed(x, bits), self.signed(y, bits)
        else:
            a, b = self.mask(x, bits), self.mask(y, bits)
        return taint(int({"eq": a == b, "ne": a != b, "slt": a < b, "ult": a < b, "sle": a <= b,
                          "ule": a <= b, "sgt": a > b, "ugt": a > b, "sge": a >= b,
                          "uge": a >= b}[pred]), x, y)

    def poll_wait(self, c: PollCmp, inst, stack):
        """A branch on (atomic load of a counter) PRED threshold: a wait until the counter
        reaches the threshold; the counter is taken as large (the wait passes)."""
        big = 1 << 62
        a, b = big, c.threshold
        if c.pred[0] == "s":
            b = self.signed(b, 64)
        result = {"eq": a == b, "ne": a != b, "slt": a < b, "ult": a < b, "sle": a <= b,
                  "ule": a <= b, "sgt": a > b, "ugt": a > b, "sge": a >= b, "uge": a >= b}[c.pred]
        if c.pred not in ("slt", "ult", "sge", "uge", "sle", "ule", "sgt", "ugt"):
            raise IRError("a counter compared for (in)equality: a wait pipeproof cannot read", inst)
        threshold = b + (1 if c.pred in ("sle", "ule", "sgt", "ugt") else 0)
        if self.loop_stack:  # the spin loop of the wait: not a loop of the program
            self.spin.add(self.loop_stack[-1][0])
        self.record("poll", c.inst, stack, addr=c.addr, value=threshold)
        return int(result)

    # ------------------------------------------------------------ calls
    def do_call(self, frame, inst, p, stack):
        ret, callee, args = p
        if callee[0] == "asm":
            return self.asm(frame, inst, callee[1], callee[2], args, stack, ret)
        name = callee[1]
        vals = [self.ev(frame, a[1]) for a in args]
        f = self.m.functions.get(name)
        if f is not None:
            return self.call(f, vals, stack + (inst,))
        return self.intrinsic(name, inst, vals, stack, ret)

    def intrinsic(self, name, inst, vals, stack, ret):
        n = name.lstrip("@")
        sreg = re.match(r"llvm\.(?:nvvm\.read\.ptx\.sreg|amdgcn\.workitem\.id|amdgcn\.workgroup\.id)\.?(.*)$", n)
        if n in ("llvm.nvvm.read.ptx.sreg.tid.x", "llvm.amdgcn.workitem.id.x"):
            return T(self.tid, tid=True)
        if n == "llvm.nvvm.read.ptx.sreg.laneid" or n.startswith("llvm.amdgcn.mbcnt"):
            return T(self.lane)
        if n == "llvm.nvvm.read.ptx.sreg.warpid":
            return self.tid // self.ws
        if n in ("llvm.nvvm.read.ptx.sreg.ntid.x",):
            return self.block_dim
        if n in ("llvm.nvvm.read.ptx.sreg.ntid.y", "llvm.nvvm.read.ptx.sreg.ntid.z"):
            return 1
        if n in ("llvm.nvvm.read.ptx.sreg.cluster.ctarank",):
            return self.cta
        if n in ("llvm.nvvm.read.ptx.sreg.cluster.nctarank",):
            return self.ncta
        axis = re.match(r"llvm\.nvvm\.read\.ptx\.sreg\.(cluster\.)?(n?ctaid)\.([xyz])$", n)
        if axis:
            # the CTA's place in its cluster (the grid is taken to be that one cluster)
            dx, dy, dz = self.cdims
            i = "xyz".index(axis.group(3))
            if axis.group(2) == "nctaid":
                return self.cdims[i]
            return (self.cta % dx, self.cta // dx % dy, self.cta // (dx * dy))[i]
        if n.startswith("llvm.nvvm.read.ptx.sreg.cluster.") or n.startswith("llvm.nvvm.read.ptx.sreg.ctaid") \
                or n.startswith("llvm.nvvm.read.ptx.sreg.tid"):
            return 0
        if n.startswith("llvm.nvvm.elect.sync"):
            return [T(self.lane), T(int(self.lane == 0))]
        if n.startswith("llvm.smax") or n.startswith("llvm.smin") or n.startswith("llvm.umax") \
                or n.startswith("llvm.umin"):
            a, b = vals
            if not isinstance(a, int) or not isinstance(b, int):
                return OPAQUE
            bits = ret.bits
            if n.startswith("llvm.s"):
                sa, sb = self.signed(a, bits), self.signed(b, bits)
                return self.mask(max(sa, sb) if "max" in n else min(sa, sb), bits)
            return max(self.mask(a, bits), self.mask(b, bits)) if "max" in n else \
                min(self.mask(a, bits), self.mask(b, bits))
        if n.startswith("llvm.nvvm.mbarrier.init"):
            self.record("init", inst, stack, addr=vals[0], value=vals[1])
            return None
        if n.startswith("llvm.nvvm.mbarrier.arrive.expect.tx") or n.startswith("llvm.nvvm.mbarrier.arrive.expect_tx"):
            self.record("expect", inst, stack, addr=vals[0], value=vals[1])
            return OPAQUE
        if n.startswith("llvm.nvvm.mbarrier.arrive"):
            count = vals[1] if len(vals) > 1 and "noComplete" not in n else 1
            self.record("arrive", inst, stack, addr=vals[0], value=count)
            return OPAQUE
        if n.startswith("llvm.nvvm.mbarrier.try.wait.parity") or n.startswith("llvm.nvvm.mbarrier.test.wait.parity"):
            self.record("wait", inst, stack, addr=vals[0], value=vals[1])
            return 1
        if n.startswith("llvm.nvvm.barrier.cta.sync") or n.startswith("llvm.nvvm.barrier0") \
                or n.startswith("llvm.nvvm.barrier.sync") or n == "llvm.amdgcn.s.barrier":
            bid = vals[0] if vals else 0
            cnt = vals[1] if len(vals) > 1 else self.block_dim
            self.record("sync", inst, stack, addr=bid, value=cnt)
            return None
        if n.startswith("llvm.nvvm.barrier.cluster."):
            if self.ncta == 1:
                return None  # a one-CTA cluster: the CTA-wide barrier after init; orders nothing modelled
            self.record("csync", inst, stack, addr=n.split(".")[4], value=self.ncta)
            return None
        if n.startswith("llvm.nvvm.barrier.cta.arrive") or n.startswith("llvm.nvvm.barrier.arrive"):
            self.record("bar_arrive", inst, stack, addr=vals[0], value=vals[1] if len(vals) > 1 else self.block_dim)
            return None
        if n.startswith("llvm.nvvm.mapa"):
            a, c = vals
            return Ptr(a.base, a.offset, c) if isinstance(a, Ptr) and isinstance(c, int) else OPAQUE
        if n.startswith("llvm.nvvm.cp.async.bulk.tensor.s2g") or n.startswith("llvm.nvvm.cp.async.bulk.commit") \
                or n.startswith("llvm.nvvm.cp.async.bulk.wait"):
            return None  # TMA stores and their groups: no barrier, no ring slot
        if n.startswith("llvm.nvvm.cp.async.bulk.tensor.g2s.tile"):
            # (dst, mbarrier, tensor map, coords..., i16 mask, i64 cache hint, i1 use mask, ...)
            nd = int(n.split(".tile.")[1].split("d")[0])
            mask = vals[3 + nd] if len(vals) > 5 + nd and vals[5 + nd] == 1 else None
            self.record("copy", inst, stack, addr=vals[0], extra=(vals[1], mask))
            return None
        if n.startswith("llvm.nvvm.cp.async.bulk.tensor") or n.startswith("llvm.nvvm.tcgen05.commit"):
            raise IRError(f"the intrinsic {n} is not read yet (docs/mojo.md)", inst)
        if n.startswith("llvm.amdgcn.s.sleep") or n.startswith("llvm.lifetime") or n.startswith("llvm.dbg") \
                or n.startswith("llvm.assume") or n.startswith("llvm.nvvm.prefetch") \
                or n.startswith("llvm.nvvm.fence") or n.startswith("llvm.nvvm.wgmma") \
                or n.startswith("llvm.nvvm.bar.warp.sync") or n.startswith("llvm.amdgcn.s.waitcnt") \
                or n.startswith("llvm.nvvm.membar") or n.startswith("llvm.experimental") \
                or n.startswith("llvm.prefetch") or n.startswith("llvm.memcpy") or n.startswith("llvm.memset"):
            return None if ret.kind == "void" else OPAQUE
        if any(w in n.replace("_", ".") for w in ("mbarrier", "barrier", "cp.async", "tcgen05", "mapa", "elect")):
            raise IRError(f"the intrinsic {n} is a synchronisation op pipeproof does not read yet", inst)
        return None if ret.kind == "void" else zero_like(ret) if ret.kind == "struct" and False else OPAQUE

    def asm(self, frame, inst, text, constraints, args, stack, ret):
        vals = [self.ev(frame, a[1]) for a in args]
        body = text.replace("\\0A", "\n").replace("\\09", " ")
        if "setmaxnreg" in body or "wgmma" in body or "stmatrix" in body or "ldmatrix" in body \
                or "fence" in body and "mbarrier" not in body or "tcgen05.ld" in body \
                or "tcgen05.st" in body or "tcgen05.wait" in body or "tcgen05.alloc" in body \
                or "tcgen05.dealloc" in body or "tcgen05.relinquish" in body or "tcgen05.mma" in body \
                or "griddepcontrol" in body or "prefetch" in body:
            if "tcgen05.mma" in body:
                self.record("mma", inst, stack)
            return OPAQUE if ret.kind != "void" else None
        if WAIT_ASM.search(body):
            # {$0 = address, $1 = parity[, $2 = ticks]}: a spin loop in the asm, or one try
            loop = "bra" in body
            self.record("wait" if loop else "try", inst, stack, addr=vals[0], value=vals[1])
            return 1 if ret.kind != "void" else None
        if "cp.async.bulk.tensor" in body and "shared::cluster.global" in body:
            dst, bar = vals[0], None
            m = re.search(r"\],\s*\[\$(\d+)\]", body.split("mbarrier::complete_tx")[1]) if "complete_tx" in body else None
            refs = [int(x) for x in re.findall(r"\[\$(\d+)\]", body)]
            bar = vals[refs[-1]] if len(refs) >= 2 else None
            mask = None
            if "multicast" in body:
                mm = re.findall(r"\$(\d+)", body.split(";")[0])
                mask = vals[int(mm[-1])] if mm else OPAQUE
            self.record("copy", inst, stack, addr=dst, extra=(bar, mask))
            return None
        if "clusterlaunchcontrol.try_cancel" in body:
            # {try_cancel.async ... mbarrier::complete_tx::bytes.b128 [$0 = response], [$1 = mbarrier]}:
            # the hardware writes the 16-byte response and completes the tx, as a TMA copy does
            mask = ("all" if "multicast" in body else None)
            self.record("copy", inst, stack, addr=vals[0], extra=(vals[1], mask, "clc"))
            return None
        if "clusterlaunchcontrol.query_cancel" in body:
            # {ld.shared.b128 r, [$4]; query_cancel.is_canceled p, r; selp $3, 1, 0, p;
            #  @p get_first_ctaid {$0, $1, $2}}: the response decides whether the loop goes on
            if self.tiles is None:
                raise IRError("the kernel asks the hardware for its next work tile "
                              "(clusterlaunchcontrol.query_cancel): give the work tiles per CTA "
                              "with --tiles N", inst)
            n = self.clc_queries
            self.clc_queries += 1
            self.record("load", inst, stack, addr=vals[-1], extra="clc")
            more = int(n < self.tiles - 1)
            return [n + 1 if more else 0, 0, 0, more]
        if "setp.eq.u32" in body and "mbarrier.arrive.expect_tx.shared::cluster" in body and "mapa" in body:
            # {setp.eq p, $2, 1; @p mapa r, $0, $1; @p mbarrier.arrive.expect_tx.shared::cluster [r], $3}
            a, c, pred, n = (vals + [OPAQUE] * 4)[:4]
            if not isinstance(pred, int):
                raise IRError("a predicated remote arrive.expect_tx whose predicate pipeproof cannot "
                              "evaluate", inst)
            if isinstance(pred, T) or isinstance(c, T):
                self.lane_dependent = True
            if pred == 1:
                addr = Ptr(a.base, a.offset, c) if isinstance(a, Ptr) and isinstance(c, int) else OPAQUE
                self.record("expect", inst, stack, addr=addr, value=n)
            return None
        if "tcgen05.commit" in body:
            mask = None
            if "multicast" in body:
                mask = vals[1] if len(vals) > 1 else OPAQUE
            self.record("commit", inst, stack, addr=vals[0], extra=mask)
            return None
        if "mbarrier.arrive.expect_tx" in body:
            self.record("expect", inst, stack, addr=vals[0], value=vals[1] if len(vals) > 1 else OPAQUE)
            return OPAQUE if ret.kind != "void" else None
        if "mbarrier.arrive" in body and "mapa" in body:
            # {mapa remAddr, $0, $1; mbarrier.arrive.shared::cluster [remAddr], $2}
            a, c = vals[0], vals[1]
            addr = Ptr(a.base, a.offset, c) if isinstance(a, Ptr) and isinstance(c, int) else OPAQUE
            self.record("arrive", inst, stack, addr=addr, value=vals[2] if len(vals) > 2 else 1)
            return OPAQUE if ret.kind != "void" else None
        if "mbarrier.arrive" in body:
            count = vals[1] if len(vals) > 1 else 1
            self.record("arrive", inst, stack, addr=vals[0], value=count)
            return OPAQUE if ret.kind != "void" else None
        if "mapa" in body:
            a, c = vals[0], vals[1]
            return Ptr(a.base, a.offset, c) if isinstance(a, Ptr) and isinstance(c, int) else OPAQUE
        if "elect.sync" in body:
            return T(int(self.lane == 0)) if ret.kind == "int" else [T(self.lane), T(int(self.lane == 0))]
        if "bar.sync" in body or "barrier.sync" in body or "bar.arrive" in body or "barrier.arrive" in body:
            kind = "bar_arrive" if "arrive" in body else "sync"
            self.record(kind, inst, stack, addr=vals[0] if vals else 0,
                        value=vals[1] if len(vals) > 1 else self.block_dim)
            return None
        if "s_sleep" in body or "nanosleep" in body or "s_waitcnt" in body:
            return None
        if any(w in body for w in SYNC_WORDS):
            raise IRError(f"inline asm {body.split(chr(10))[0][:60]!r}: a synchronisation op "
                          f"pipeproof does not read yet", inst)
        return OPAQUE if ret.kind != "void" else None


def deep_copy(x):
    return [deep_copy(y) for y in x] if isinstance(x, list) else x


def zero_like(t: Type):
    return zero_of(t)


TERMINATORS = ("br", "switch", "ret", "unreachable")
MEMORY_OPS = ("alloca", "load", "store", "atomicrmw")
AGGREGATE_OPS = ("extractvalue", "insertvalue", "extractelement", "insertelement")
