"""Run one thread of a PTX kernel concretely (spec/ptx/module.py reads it) and record its
synchronisation as the raw events the shared extractor (spec/mojo/parse.py) groups into
roles: the same events, with the same meaning, as the Mojo front end's LLVM IR interpreter.

The thread is (tid.x, CTA rank in the cluster); the grid is one cluster (ctaid is the CTA's
place in it). Kernel arguments come from --arg (a scalar parameter by name or position, a
word of a struct parameter as `N+OFFSET`); an argument not given reads as a `Guess`, a
value pipeproof picks (`GUESS`) and reports when a branch depends on it. Waits do not block:
a `try_wait` / `test_wait` is recorded as a wait and taken as passed; whether it would pass is
the model checker's question (docs/ptx.md gives every rule).
"""
from __future__ import annotations

import re

from pipeproof.spec.mojo.interp import T, Thread, taint
from pipeproof.spec.mojo.llvm import IRError, OPAQUE, Ptr
from pipeproof.spec.ptx.regions import SYNC_WORDS, dests, quiet, regions_of, split_vec

PTX_MAX_STEPS = 1_000_000   # per thread (about 20 s of interpretation on this machine)
PTX_MAX_TOTAL = 3_000_000   # over every thread run for one kernel: the read stays near a minute
GUESS = 4   # an argument not given that a branch reads (a loop bound): docs/ptx.md


class Guess(int):
    """A value read from a kernel argument that was not given; `keys` are the (param, offset)
    words it came from. A branch on it is reported (the trip count is pipeproof's pick)."""

    def __new__(cls, v, keys):
        obj = int.__new__(cls, v)
        obj.keys = frozenset(keys)
        return obj


class IntT:
    """The interpreter's integer type (what spec/mojo/interp.Thread's arithmetic reads)."""
    kind = "int"

    def __init__(self, bits):
        self.bits = bits


TYPES = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "b32": 32, "u32": 32,
         "s32": 32, "b64": 64, "u64": 64, "s64": 64, "pred": 1, "b128": 128}
FLOATS = ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32", "e4m3", "e5m2")
CMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "lo": "ult",
       "ls": "ule", "hi": "ugt", "hs": "uge"}
INT = re.compile(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)U?$")


def guess_of(*xs):
    keys = set()
    for x in xs:
        if isinstance(x, Guess):
            keys |= x.keys
    return keys


def type_bits(words) -> tuple:
    """(bits, signed, float) of an instruction's last type word."""
    for w in reversed(words):
        if w in TYPES:
            return TYPES[w], w[0] == "s", False
        if w in FLOATS:
            return 32, True, True
    return 64, False, False


class PtxThread(Thread):
    """One thread of a PTX kernel. Shares the Mojo interpreter's arithmetic (`binop`, `icmp`:
    pointers, lane-dependent values `T`) and its event record; runs PTX instructions."""

    def __init__(self, module, kernel, tid, cta, cdims, block_dim, args, loops, tiles=None,
                 spin_loops=None):
        self.m = module
        self.k = kernel
        self.tiles = tiles
        self.clc_queries = 0
        dims = tuple(cdims) if isinstance(cdims, (tuple, list)) else (cdims, 1, 1)
        self.cdims = (dims + (1, 1, 1))[:3]
        self.ncta = self.cdims[0] * self.cdims[1] * self.cdims[2]
        self.tid, self.cta, self.block_dim = tid, cta, block_dim
        self.ws = 32
        self.lane = tid % 32
        self.args = args
        self.events = []
        self.mem = {}
        self.steps = 0
        self.seq = 0
        self.loops = loops
        self.spin_loops = spin_loops or {}
        self.loop_stack = []
        self.starts, self.ends = {}, {}
        self.nvptx = True
        self.lane_dependent = False
        self.spin = set()
        self.pair = module.pair
        self.guessed = set()    # the argument words a branch read without a value given
        self.calls = 0
        self.grid = getattr(module, "grid", None)
        self.budget = module.budget if hasattr(module, "budget") else [PTX_MAX_TOTAL]
        self.syncs = {}         # named-barrier waits and arrivals so far, per barrier id (epochs)
        self.stores = 0
        self.log = {}           # the CTA's shared stores: (base, cta, byte) -> [(epoch, tid, byte)]
        self.lane0 = {}         # the CTA's lane-0 values broadcast by shfl.sync.idx (spec/ptx/sync.py)
        self.shfls = {}         # shfl instances so far, per instruction
        self.globals_unknown = False   # a store was skipped: the module's .global variables unknown

    # ------------------------------------------------------------ running
    def run(self):
        frame = {}
        for n, (name, ty, size) in enumerate(self.k.params):
            if ty != "local":
                frame[("param", name)] = n
        self.call(self.k, frame, ())
        for key, _ in self.loop_stack:
            self.ends.setdefault(key, []).append(self.seq + 0.5)
        self.loop_stack = []

    def call(self, f, params, stack):
        """Run `f`; `params` maps ("param", name) to a kernel parameter's position or to the
        caller's argument values (a .func)."""
        regs = dict(params)
        blocks, loops = self.loops[f.name]
        spin = self.spin_loops.get(f.name, set())
        depth = len(self.loop_stack)
        pc = 0
        insts = f.insts
        while True:
            if pc >= len(insts):
                break
            block = blocks.get(pc)
            if block is not None:
                self.leave_loops(depth, lambda key: pc in loops[key[-1]])
                if pc in loops:
                    key = tuple(c.index for c in stack) + (f.name, pc)
                    if pc in spin:
                        self.spin.add(key)
                    self.enter_loop(key, depth)
            inst = insts[pc]
            self.steps += 1
            self.budget[0] -= 1
            if self.steps > PTX_MAX_STEPS or self.budget[0] < 0:
                raise IRError(f"more than {PTX_MAX_STEPS:,} instructions for one thread or "
                              f"{PTX_MAX_TOTAL:,} for the kernel: give "
                              f"smaller trip counts (--arg), or a grid of more CTAs (--grid N) "
                              f"for a persistent loop over tiles", inst)
            if inst.guard is not None:
                g = self.reg(regs, inst.guard[0], inst)
                if not isinstance(g, int):
                    pc = self.unknown_guard(f, pc, regs, inst)
                    continue
                self.note_branch(g, inst)
                if bool(g & 1) == inst.guard[1]:
                    pc += 1
                    continue
            op = inst.words[0]
            if op == "bra":
                pc = f.labels[inst.args[-1]]
                continue
            if op in ("ret", "exit"):
                self.leave_loops(depth)
                return regs
            if op == "trap":
                raise IRError("reached `trap` (an abort path: an assertion that fails for these "
                              "values)", inst)
            if op == "call":
                self.do_call(regs, inst, stack)
            else:
                self.execute(regs, inst, stack)
            pc += 1
        self.leave_loops(depth)
        return regs

    def unknown_guard(self, f, pc, regs, inst):
        """An instruction guarded by a predicate pipeproof does not know (data: a value from
        global memory, a float): a branch whose sides do nothing the protocol sees is skipped
        to their join, and an instruction that does nothing the protocol sees leaves its
        registers unknown (spec/ptx/regions.py says why no violation is lost). Else refused.
        Returns the next pc."""
        what = f"a guard predicate {inst.guard[0]} pipeproof cannot evaluate"
        if inst.words[0] == "bra":
            r = regions_of(self.m, f).skip(pc)
            if isinstance(r, str):
                raise IRError(f"{what} (the branch's sides differ: {r})", inst)
            join, written, stores = r
            for d in written:
                self.set(regs, d, OPAQUE)
            self.globals_unknown |= stores   # a skipped store may have written a .global variable
            return join
        why = quiet(inst)
        if why or inst.words[0] in ("ret", "exit", "trap"):
            raise IRError(what, inst)
        for d in dests(inst):
            self.set(regs, d, OPAQUE)
        self.globals_unknown |= inst.words[0] in ("st", "stmatrix")
        return pc + 1

    def note_branch(self, g, inst):
        if isinstance(g, T):
            self.lane_dependent = True
        if isinstance(g, Guess):
            self.guessed |= g.keys

    def do_call(self, regs, inst, stack):
        """`call(.uni) (rets), name, (args)`: the callee's parameters are the caller's values."""
        args = list(inst.args)
        rets = []
        if args and args[0].startswith("("):
            rets = [a.strip() for a in args[0].strip("()").split(",") if a.strip()]
            args = args[1:]
        name = args[0]
        vals = [a.strip() for a in args[1].strip("()").split(",") if a.strip()] if len(args) > 1 else []
        f = self.m.functions.get(name)
        if f is None or not f.insts:
            if re.search(r"vprintf|__assertfail|malloc|free", name):
                return
            raise IRError(f"a call of {name}, whose body is not in the module", inst)
        self.calls += 1
        if self.calls > 100_000:
            raise IRError("more than 100,000 calls", inst)
        params = {}
        for (pname, _, _), v in zip(f.params, vals):
            params[("param", pname)] = ("arg", self.mem_param(regs, v))
        out = self.call(f, params, stack + (inst,))
        for (rname, _, _), r in zip(f.rets, rets):
            regs[("param", r)] = ("arg", {0: out.get(("ret", rname), OPAQUE)})

    def mem_param(self, regs, name):
        """The bytes a caller stored into its call parameter `name` (st.param), by offset."""
        return {off: v for (n, off), v in regs.items() if n == ("stparam", name)}

    # ------------------------------------------------------------ operands
    def reg(self, regs, name, inst):
        v = regs.get(name)
        if v is None:
            if name in ("_",):
                return OPAQUE
            return self.special(name, inst)
        return v

    def special(self, name, inst):
        if not name.startswith("%"):
            if name in self.m.shared:
                return Ptr(("global", name), 0)
            return OPAQUE
        s = name[1:]
        axis = s[-1] if s[-2:-1] == "." else None
        base = s[:-2] if axis else s
        i = "xyz".index(axis) if axis in ("x", "y", "z") else 0
        dx, dy, dz = self.cdims
        if base == "tid":
            return T(self.tid, tid=True) if i == 0 else 0
        if base == "ntid":
            return self.block_dim if i == 0 else 1
        if base == "laneid":
            return T(self.lane)
        if base == "warpid":
            return self.tid // 32
        if base in ("ctaid", "cluster_ctaid"):
            return (self.cta % dx, self.cta // dx % dy, self.cta // (dx * dy))[i]
        if base == "nctaid":   # the grid: one cluster, or --grid N CTAs along x (persistent loops)
            return self.grid if i == 0 and self.grid else self.cdims[i]
        if base == "cluster_nctaid":
            return self.cdims[i]
        if base == "nclusterid":
            return max(1, (self.grid or 0) // self.cdims[0]) if i == 0 else 1
        if base == "cluster_ctarank":
            return self.cta
        if base == "cluster_nctarank":
            return self.ncta
        if base == "clusterid":
            return 0
        if base == "is_explicit_cluster":
            return 1
        if base.startswith("lanemask_"):
            rel = base[9:]
            lanes = [j for j in range(32) if {"eq": j == self.lane, "lt": j < self.lane,
                                              "le": j <= self.lane, "gt": j > self.lane,
                                              "ge": j >= self.lane}[rel]]
            return T(sum(1 << j for j in lanes))
        return OPAQUE   # %smid, %clock, %globaltimer, %dynamic_smem_size, ...: not the protocol's

    def value(self, regs, text, inst):
        t = text.strip()
        if INT.match(t):
            return int(t.rstrip("U"), 0) if not t.startswith("-") else -int(t[1:].rstrip("U"), 0)
        if re.fullmatch(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}", t):
            return int(t[2:], 16)   # a float literal: its bits (setp on floats reads them)
        if t.startswith("{"):
            return [self.value(regs, x, inst) for x in split_vec(t)]
        if t.startswith("!"):
            v = self.value(regs, t[1:], inst)
            return taint(1 - (v & 1), v) if isinstance(v, int) else OPAQUE
        if ("param", t) in regs:
            return ("paramref", t)
        return self.reg(regs, t, inst)

    def address(self, regs, text, inst):
        """`[reg]`, `[reg+imm]`, `[symbol+imm]`, `[imm]`: a Ptr, an int, or ("param", name, off)."""
        inner = text.strip()[1:-1].strip()
        m = re.match(r"^([^+\-]+?)\s*(?:([+-])\s*(-?(?:0[xX][0-9a-fA-F]+|\d+)))?$", inner)
        if not m:
            return OPAQUE
        base, sign, off = m.group(1).strip(), m.group(2), m.group(3)
        n = 0
        if off:
            n = int(off, 0) if not off.startswith("-") else -int(off[1:], 0)
            n = -n if sign == "-" else n
        if ("param", base) in regs:
            return ("param", base, n)
        v = self.value(regs, base, inst)
        if isinstance(v, Ptr):
            return v.add(n)
        if isinstance(v, int):
            return v + n
        return OPAQUE

    def load_param(self, regs, addr, bits, inst):
        name, off = addr[1], addr[2]
        where = regs[("param", name)] if name is not None else addr[3]
        if isinstance(where, tuple) and where[0] == "arg":   # a .func parameter
            return where[1].get(off, OPAQUE)
        n = where                                             # a kernel parameter's position
        for key in ((n, off), n if off == 0 else None):
            if key is not None and key in self.args:
                v = self.args[key]
                return v if isinstance(v, int) else OPAQUE
        return Guess(GUESS, {(n, off)})

    # ------------------------------------------------------------ instructions
    def set(self, regs, dest, v, bits=None):
        dest = dest.strip()
        if dest == "_":
            return
        if dest.startswith("{"):
            parts = split_vec(dest)
            vals = v if isinstance(v, list) else [OPAQUE] * len(parts)
            for d, x in zip(parts, vals):
                self.set(regs, d, x)
            return
        if "|" in dest:
            a, b = dest.split("|")
            self.set(regs, a, v[0] if isinstance(v, list) else OPAQUE)
            self.set(regs, b, v[1] if isinstance(v, list) else OPAQUE)
            return
        if bits and isinstance(v, int) and not isinstance(v, (T, Guess)):
            v = v & ((1 << bits) - 1)
        elif isinstance(v, Ptr) and isinstance(v.offset, int) and not -(1 << 31) <= v.offset < (1 << 31):
            # a shared-window address: 32 bits, signed offsets from the symbol
            v = Ptr(v.base, (v.offset + (1 << 31)) % (1 << 32) - (1 << 31), v.cta)
        regs[dest] = v

    def execute(self, regs, inst, stack):
        words = inst.words
        op = words[0]
        a = inst.args
        handler = HANDLERS.get(op)
        if handler is not None:
            return handler(self, regs, inst, stack, words, a)
        if op in ("mbarrier", "cp", "tcgen05", "clusterlaunchcontrol", "barrier", "bar", "elect",
                  "mapa", "getctarank", "fence", "membar", "wgmma", "setmaxnreg", "griddepcontrol",
                  "red", "st", "vote", "shfl", "multimem", "cp.reduce"):
            return sync_op(self, regs, inst, stack, words, a)
        if any(w in inst.opcode for w in SYNC_WORDS):
            raise IRError(f"{inst.opcode}: a synchronisation op pipeproof does not read yet", inst)
        if a and not a[0].startswith("["):
            self.set(regs, a[0], OPAQUE)   # float math, tensor-core ops, ...: not the protocol's
        return None

    def arith(self, op, bits, signed, x, y, inst):
        """Integer arithmetic through the shared interpreter (pointers, lane taint), keeping
        which unknown arguments a value came from."""
        g = guess_of(x, y)
        name = {"add": "add", "sub": "sub", "mul": "mul", "and": "and", "or": "or", "xor": "xor",
                "shl": "shl", "div": "sdiv" if signed else "udiv", "rem": "srem" if signed else "urem",
                "shr": "ashr" if signed else "lshr"}[op]
        if isinstance(x, Guess):
            x = int(x)
        if isinstance(y, Guess):
            y = int(y)
        if name == "shl" and isinstance(y, int):
            y = min(y, bits)
        if name in ("lshr", "ashr") and isinstance(y, int) and y >= bits:
            r = 0 if name == "lshr" or not isinstance(x, int) or self.signed(x, bits) >= 0 else (1 << bits) - 1
            r = taint(r, x) if isinstance(x, int) else OPAQUE
        else:
            r = self.binop(name, IntT(bits), x, y, inst)
        if g and isinstance(r, int) and not isinstance(r, T):
            return Guess(r, g)
        return r

    def compare(self, cmp, bits, signed, x, y, inst):
        g = guess_of(x, y)
        if cmp in ("lt", "le", "gt", "ge"):
            pred = ("s" if signed else "u") + cmp
        else:
            pred = CMP.get(cmp)
            if pred is None:
                return OPAQUE
        if pred in ("eq", "ne"):
            pass
        x = int(x) if isinstance(x, Guess) else x
        y = int(y) if isinstance(y, Guess) else y
        r = self.icmp(pred, IntT(bits), x, y, inst)
        if g and isinstance(r, int) and not isinstance(r, T):
            return Guess(r, g)
        return r


# ---------------------------------------------------------------- integer instructions
def h_mov(th, regs, inst, stack, words, a):
    v = th.value(regs, a[1], inst)
    if isinstance(v, tuple) and v[0] == "paramref":
        n = regs[("param", v[1])]
        v = Ptr(("param", n if isinstance(n, int) else v[1]), 0)
    if isinstance(v, list):
        v = OPAQUE
    th.set(regs, a[0], v)


def h_binary(th, regs, inst, stack, words, a):
    bits, signed, flt = type_bits(words)
    op = words[0]
    if flt or len(a) < 3:
        th.set(regs, a[0], OPAQUE)
        return
    x, y = th.value(regs, a[1], inst), th.value(regs, a[2], inst)
    if op == "mul" and ("wide" in words):
        # the operands are `bits` wide (an immediate such as -21845 in a .u16 multiply is 0xAAAB)
        x, y = (wide_operand(th, v, bits, signed) for v in (x, y))
        r = th.arith("mul", bits * 2, signed, x, y, inst)
        th.set(regs, a[0], r)
        return
    if op == "mul" and "hi" in words:
        if isinstance(x, int) and isinstance(y, int):
            xx = th.signed(x, bits) if signed else th.mask(x, bits)
            yy = th.signed(y, bits) if signed else th.mask(y, bits)
            r = taint(th.mask((xx * yy) >> bits, bits), x, y)
            g = guess_of(x, y)
            th.set(regs, a[0], Guess(r, g) if g and not isinstance(r, T) else r)
        else:
            th.set(regs, a[0], OPAQUE)
        return
    if op in ("min", "max"):
        if isinstance(x, int) and isinstance(y, int):
            xx = th.signed(x, bits) if signed else th.mask(x, bits)
            yy = th.signed(y, bits) if signed else th.mask(y, bits)
            r = taint(th.mask(min(xx, yy) if op == "min" else max(xx, yy), bits), x, y)
            g = guess_of(x, y)
            th.set(regs, a[0], Guess(r, g) if g and not isinstance(r, T) else r)
        else:
            th.set(regs, a[0], OPAQUE)
        return
    if op == "and" and isinstance(x, Ptr) and isinstance(y, int) and not isinstance(y, T):
        th.set(regs, a[0], peer_bit_cleared(th, x, y))
        return
    th.set(regs, a[0], th.arith(op, bits, signed, x, y, inst), bits)


PEER_BIT = 1 << 24   # a shared::cluster address's CTA-pair bit (sm100 2-SM: CUTLASS's Sm100MmaPeerBitMask)


def peer_bit_cleared(th, p, mask):
    """`and` of a shared address with a mask that clears the CTA-pair bit (and at most the
    alignment bits of an 8-byte barrier): the same barrier in the pair's even CTA, where the
    2-SM TMA copies complete their bytes (PTX ISA cp.async.bulk.tensor `.cta_group::2`: the
    mbarrier may be in either CTA of the pair). Any other mask of an address: unknown."""
    m = mask & 0xFFFFFFFF
    if m | 0x7 | PEER_BIT != 0xFFFFFFFF or m & PEER_BIT or not isinstance(p.offset, int) \
            or p.offset % 8 != 0 and m & 0x7 != 0x7:
        return OPAQUE
    cta = p.cta if p.cta is not None else th.cta
    return Ptr(p.base, p.offset & ~(~m & 0x7), cta & ~1)


def wide_operand(th, v, bits, signed):
    """An operand of a .wide multiply, read at its type's width (sign-extended if signed)."""
    if not isinstance(v, int) or isinstance(v, T):
        return v
    r = th.signed(v, bits) if signed else th.mask(v, bits)
    return Guess(r, v.keys) if isinstance(v, Guess) else r


def h_mad(th, regs, inst, stack, words, a):
    bits, signed, flt = type_bits(words)
    if flt:
        th.set(regs, a[0], OPAQUE)
        return
    x, y, z = (th.value(regs, s, inst) for s in a[1:4])
    wide = "wide" in words
    if wide:
        x, y = (wide_operand(th, v, bits, signed) for v in (x, y))
    r = th.arith("mul", bits * 2 if wide else bits, signed, x, y, inst)
    th.set(regs, a[0], th.arith("add", bits * 2 if wide else bits, signed, r, z, inst))


def h_unary(th, regs, inst, stack, words, a):
    bits, signed, flt = type_bits(words)
    x = th.value(regs, a[1], inst)
    op = words[0]
    if flt or not isinstance(x, int):
        th.set(regs, a[0], OPAQUE)
        return
    if op == "not":
        r = th.mask(~x, bits) if bits > 1 else 1 - (x & 1)
    elif op == "neg":
        r = th.mask(-x, bits)
    elif op == "abs":
        r = abs(th.signed(x, bits))
    elif op == "cnot":
        r = int(x == 0)
    elif op == "popc":
        r = bin(th.mask(x, bits)).count("1")
    elif op == "clz":
        r = bits - th.mask(x, bits).bit_length()
    elif op == "brev":
        r = int(format(th.mask(x, bits), f"0{bits}b")[::-1], 2)
    else:
        r = OPAQUE
    if isinstance(r, int):
        r = taint(r, x)
        g = guess_of(x)
        if g and not isinstance(r, T):
            r = Guess(r, g)
    th.set(regs, a[0], r)


def float_of(v, words):
    import struct
    if "f64" in words:
        return struct.unpack("<d", struct.pack("<Q", v & (1 << 64) - 1))[0]
    return struct.unpack("<f", struct.pack("<I", v & 0xFFFFFFFF))[0]


def h_setp(th, regs, inst, stack, words, a):
    bits, signed, flt = type_bits(words)
    cmp = words[1]
    x, y = th.value(regs, a[1], inst), th.value(regs, a[2], inst)
    if flt:
        # a float compare of known values (a kernel argument such as CUTLASS's beta == 0)
        if not (isinstance(x, int) and isinstance(y, int)) or isinstance(x, T) or isinstance(y, T) \
                or words[2:3] != ["f32"] and "f64" not in words:
            th.set(regs, a[0], OPAQUE)
            return
        fx, fy = float_of(x, words), float_of(y, words)
        base = cmp.rstrip("u") if cmp not in ("num", "nan") else cmp
        r = {"eq": fx == fy, "ne": fx != fy, "lt": fx < fy, "le": fx <= fy, "gt": fx > fy,
             "ge": fx >= fy}.get(base)
        if r is None:
            th.set(regs, a[0], OPAQUE)
            return
        g = guess_of(x, y)
        r = Guess(int(r), g) if g else int(r)
        th.set(regs, a[0], r)
        return
    r = th.compare(cmp, bits, signed, x, y, inst)
    if len(a) > 3 and len(words) > 2 and words[2] in ("and", "or", "xor"):
        c = th.value(regs, a[3], inst)
        if isinstance(r, int) and isinstance(c, int):
            g = guess_of(r, c)
            rr = {"and": r & c, "or": r | c, "xor": r ^ c}[words[2]] & 1
            r = taint(rr, r, c)
            if g and not isinstance(r, T):
                r = Guess(r, g)
        else:
            r = OPAQUE
    if "|" in a[0]:
        p, q = a[0].split("|")
        th.set(regs, p, r)
        th.set(regs, q, taint(1 - r, r) if isinstance(r, int) else OPAQUE)
    else:
        th.set(regs, a[0], r)


def h_selp(th, regs, inst, stack, words, a):
    x, y, c = (th.value(regs, s, inst) for s in a[1:4])
    if not isinstance(c, int):
        th.set(regs, a[0], OPAQUE)
        return
    th.note_branch(c, inst) if isinstance(c, Guess) else None
    r = x if c & 1 else y
    if isinstance(c, T) and isinstance(r, int):
        r = taint(int(r), c)
    th.set(regs, a[0], r)


def h_cvt(th, regs, inst, stack, words, a):
    types = [w for w in words[1:] if w in TYPES or w in FLOATS]
    x = th.value(regs, a[1], inst)
    if len(types) != 2 or types[0] in FLOATS or types[1] in FLOATS or not isinstance(x, int):
        th.set(regs, a[0], x if isinstance(x, Ptr) else OPAQUE)
        return
    to, frm = types
    fb = TYPES[frm]
    v = th.signed(x, fb) if frm[0] == "s" else th.mask(x, fb)
    r = th.mask(v, TYPES[to])
    r = taint(r, x)
    g = guess_of(x)
    th.set(regs, a[0], Guess(r, g) if g and not isinstance(r, T) else r)


def h_cvta(th, regs, inst, stack, words, a):
    th.set(regs, a[0], th.value(regs, a[1], inst))


def h_ld(th, regs, inst, stack, words, a):
    bits, _, flt = type_bits(words)
    addr = th.address(regs, a[1], inst) if a[1].startswith("[") else OPAQUE
    if isinstance(addr, Ptr) and addr.base[0] == "param" and isinstance(addr.base[1], int) \
            and isinstance(addr.offset, int):
        addr = ("param", None, addr.offset, addr.base[1])   # a struct parameter's word, by address
    if isinstance(addr, tuple) and addr[0] == "param":
        v = th.load_param(regs, addr, bits, inst)
        if flt and isinstance(v, Guess):
            v = Guess(0, v.keys)   # a float argument not given reads as 0.0 (said, as any guess)
        flt = False
    elif isinstance(addr, Ptr) and isinstance(addr.offset, int) and not (
            th.globals_unknown and addr.base[0] == "global" and addr.base[1] not in th.m.shared):
        v = load_bytes(th, addr, max(bits // 8, 1))
    else:
        v = OPAQUE
    if isinstance(addr, Ptr) and addr.base[0] == "global" and addr.base[1] in th.m.shared \
            and th.m.shared[addr.base[1]][0]:
        th.record("load", inst, stack, addr=addr)   # a read of a static shared buffer (a ring's?)
    if a[0].startswith("{"):
        n = len(split_vec(a[0]))
        step = max(bits // 8, 1)
        if isinstance(addr, tuple) and addr[0] == "param":
            v = [th.load_param(regs, (addr[0], addr[1], addr[2] + k * step) + tuple(addr[3:]), bits, inst)
                 for k in range(n)]
        elif isinstance(addr, Ptr) and isinstance(addr.offset, int):
            v = [load_bytes(th, addr.add(k * step), step) for k in range(n)]
        else:
            v = [OPAQUE] * n
    th.set(regs, a[0], OPAQUE if flt and not isinstance(v, list) else v)


def h_st(th, regs, inst, stack, words, a):
    if "async" in words:
        return sync_op(th, regs, inst, stack, words, a)
    bits, _, _ = type_bits(words)
    addr = a[0]
    if "param" in words:
        # a call's argument (st.param [param0+off], v): kept in the caller's registers
        inner = addr.strip()[1:-1]
        name, _, off = inner.partition("+")
        regs[(("stparam", name.strip()), int(off or 0, 0))] = th.value(regs, a[1], inst)
        if name.strip().startswith("func_retval") or name.strip() in {r for r, _, _ in th.k.rets}:
            regs[("ret", name.strip())] = th.value(regs, a[1], inst)
        return
    p = th.address(regs, addr, inst)
    v = th.value(regs, a[1], inst)
    if isinstance(p, Ptr) and p.base[0] == "global" and p.base[1] in th.m.shared \
            and th.m.shared[p.base[1]][0]:
        th.record("store", inst, stack, addr=p, value=v)
    if isinstance(p, Ptr) and isinstance(p.offset, int):
        step = max(bits // 8, 1)
        for k, x in enumerate(v if isinstance(v, list) else [v]):
            store_bytes(th, p.add(k * step), step, x)


def store_bytes(th, p, n, v):
    """A store of n bytes, little-endian (a pointer or an unknown value: every byte unknown).
    Shared memory is the CTA's: other threads read it after a named barrier (`load_bytes`)."""
    th.stores += 1
    snap = dict(th.syncs)
    for k in range(n):
        byte = (v >> (8 * k)) & 0xFF if isinstance(v, int) and not isinstance(v, T) else \
            (("obj", v, k) if isinstance(v, Ptr) else OPAQUE)
        th.log.setdefault((p.base, p.cta, p.offset + k), []).append((snap, th.stores, th.tid, byte))


def load_bytes(th, p, n):
    """A load of n bytes: for each byte, this thread's own last store or another thread's
    store made before its k-th arrival at a named barrier this thread has passed k times
    (`syncs`, per barrier id: exact for code that orders its shared memory with bar.sync, as
    Triton's warp specialisation does with the state words of its partitions); else unknown.
    Among visible stores, the storer's latest."""
    out = 0
    for k in range(n):
        best = None
        for snap, seq, tid, byte in th.log.get((p.base, p.cta, p.offset + k), ()):
            if tid != th.tid and not any(c > snap.get(b, 0) for b, c in th.syncs.items()):
                continue
            rank = (tid == th.tid, seq)
            if best is None or rank >= best[0]:
                best = (rank, byte)
        if best is None:
            return OPAQUE
        byte = best[1]
        if isinstance(byte, tuple):
            return byte[1] if k == 0 and n >= 1 else OPAQUE
        if byte is OPAQUE:
            return OPAQUE
        out |= byte << (8 * k)
    return out


def h_prmt(th, regs, inst, stack, words, a):
    x, y, s = (th.value(regs, t, inst) for t in a[1:4])
    if not all(isinstance(v, int) for v in (x, y, s)) or "b32" not in words or len(words) > 2:
        th.set(regs, a[0], OPAQUE)
        return
    src = (th.mask(y, 32) << 32) | th.mask(x, 32)
    r = 0
    for k in range(4):
        sel = (s >> (4 * k)) & 0xF
        byte = (src >> (8 * (sel & 7))) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        r |= byte << (8 * k)
    th.set(regs, a[0], taint(r, x, y, s))


def h_lop3(th, regs, inst, stack, words, a):
    x, y, z, lut = (th.value(regs, t, inst) for t in a[1:5])
    if not all(isinstance(v, int) for v in (x, y, z, lut)):
        th.set(regs, a[0], OPAQUE)
        return
    bits = 32 if "b32" in words else 64
    r = 0
    for k in range(bits):
        idx = ((x >> k & 1) << 2) | ((y >> k & 1) << 1) | (z >> k & 1)
        r |= ((lut >> idx) & 1) << k
    th.set(regs, a[0], taint(r, x, y, z))


def h_bfe(th, regs, inst, stack, words, a):
    bits, signed, _ = type_bits(words)
    x, pos, ln = (th.value(regs, t, inst) for t in a[1:4])
    if not all(isinstance(v, int) for v in (x, pos, ln)):
        th.set(regs, a[0], OPAQUE)
        return
    pos, ln = pos & 0xFF, ln & 0xFF
    r = (th.mask(x, bits) >> pos) & ((1 << ln) - 1) if ln else 0
    if signed and ln and r >> (ln - 1) & 1:
        r = th.mask(r - (1 << ln), bits)
    th.set(regs, a[0], taint(r, x))


def h_shf(th, regs, inst, stack, words, a):
    lo, hi, n = (th.value(regs, t, inst) for t in a[1:4])
    if not all(isinstance(v, int) for v in (lo, hi, n)):
        th.set(regs, a[0], OPAQUE)
        return
    n = min(n & 0xFFFFFFFF, 32) if "clamp" in words else n & 31
    both = (th.mask(hi, 32) << 32) | th.mask(lo, 32)
    r = (both << n >> 32) & 0xFFFFFFFF if words[1] == "l" else (both >> n) & 0xFFFFFFFF
    th.set(regs, a[0], taint(r, lo, hi, n))


def h_slct(th, regs, inst, stack, words, a):
    x, y, c = (th.value(regs, t, inst) for t in a[1:4])
    if not isinstance(c, int):
        th.set(regs, a[0], OPAQUE)
        return
    th.set(regs, a[0], x if th.signed(c, 32) >= 0 else y)


def h_nop(th, regs, inst, stack, words, a):
    return None


def h_atom(th, regs, inst, stack, words, a):
    th.set(regs, a[0], OPAQUE)


HANDLERS = {
    "mov": h_mov, "add": h_binary, "sub": h_binary, "mul": h_binary, "div": h_binary,
    "rem": h_binary, "and": h_binary, "or": h_binary, "xor": h_binary, "shl": h_binary,
    "shr": h_binary, "min": h_binary, "max": h_binary, "mad": h_mad, "mul24": h_binary,
    "not": h_unary, "neg": h_unary, "abs": h_unary, "cnot": h_unary, "popc": h_unary,
    "clz": h_unary, "brev": h_unary, "setp": h_setp, "selp": h_selp, "cvt": h_cvt,
    "cvta": h_cvta, "ld": h_ld, "ldu": h_ld, "st": h_st, "prmt": h_prmt, "lop3": h_lop3,
    "bfe": h_bfe, "shf": h_shf, "slct": h_slct, "atom": h_atom, "prefetch": h_nop,
    "prefetchu": h_nop, "nanosleep": h_nop, "pmevent": h_nop, "discard": h_nop,
    "applypriority": h_nop, "createpolicy": h_atom, "stmatrix": h_nop, "ldmatrix": h_atom,
}


# ---------------------------------------------------------------- synchronisation
from pipeproof.spec.ptx.sync import sync_op  # noqa: E402  (the op table: its own file)
