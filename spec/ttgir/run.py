"""Run a TTGIR kernel's scalar control flow concretely and record what each partition does to
its barriers and ring buffers (docs/triton.md says which ops, and where each rule comes from).

Only integers are evaluated: constants, the `arith` integer ops, `scf.for`/`scf.if`/`scf.yield`,
kernel arguments (`--arg NAME=V`), `tt.get_program_id` (0) and `tt.get_num_programs` (1: the
model is one CTA). Everything else is opaque. A barrier op whose barrier index, phase,
predicate or enclosing loop bound depends on an opaque value is an error naming the op and its
line: the front end never guesses. Each partition of `ttg.warp_specialize` (and the code
before it, which runs on the default warps) is run on its own: partitions share no scalars
the model would need (they talk through barriers only).

An `Event` is one barrier-relevant execution: `iters` is the stack of (loop op, iteration)
around it, so spec/ttgir/build.py can number items.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeproof.spec.schema import SpecError
from pipeproof.spec.ttgir.parse import Module, Op, Region

MAX_EVENTS = 200_000  # per partition: a trip count too large for an explicit model
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8,
                 "i1": 1, "f8E4M3FN": 1, "f8E5M2": 1, "tf32": 4}


@dataclass(frozen=True)
class Array:
    """A `ttg.local_alloc` (or `ttng.tmem_alloc`): barriers when its elements are i64 in
    shared memory with one barrier per index, else a buffer."""
    name: str
    shape: tuple
    element: str
    memory: str  # "smem" or "tmem"
    line: int

    @property
    def is_barrier(self) -> bool:
        return self.memory == "smem" and self.element == "i64" and self.shape[-1:] == (1,)

    @property
    def slots(self) -> int:
        return self.shape[0] if len(self.shape) > 1 else 1

    def slot_bytes(self) -> int:
        n = ELEMENT_BYTES.get(self.element, 0)
        for d in self.shape[1:]:
            n *= d
        return n


@dataclass(frozen=True)
class Ref:
    """One element of an array (`ttg.memdesc_index`), or the whole array (index None)."""
    array: Array
    index: int | None


OPAQUE = object()


@dataclass
class Event:
    kind: str         # init wait arrive expect copy read read_async commit read_wait
    op: Op
    barrier: Ref | None = None
    value: int = 0    # wait: phase; arrive: count; expect/copy: bytes; read_wait: pendings
    buffer: Ref | None = None
    iters: tuple = ()
    extra: tuple = ()  # read_async: the buffers an MMA or wgmma reads
    seq: int = 0       # position in the partition's run (iteration starts share the count)


@dataclass
class Partition:
    name: str
    warps: int
    events: list = field(default_factory=list)
    ws_start: int | None = None  # default: seq at ttg.warp_specialize (workers start there)
    ws_end: int | None = None    # default: seq after it (every partition has returned)
    starts: dict = field(default_factory=dict)  # loop op id -> [seq of each iteration's start]
    ends: dict = field(default_factory=dict)    # loop op id -> [seq after each run of it]
    seq: int = 0
    cp_async: list = field(default_factory=list)  # cp.async copies not yet tied to a barrier


class _Stop(Exception):
    pass


def _memdesc(type_text: str):
    m = re.search(r"!ttg\.memdesc<([^,>]*)", type_text)
    if not m:
        return None
    dims = m.group(1).split("x")
    shape, element = tuple(int(d) for d in dims[:-1] if d.isdigit()), dims[-1]
    memory = "tmem" if "tensor_memory" in type_text else "smem"
    return shape, element, memory


class Runner:
    def __init__(self, module: Module, func: str | None, args: dict, trip_count: int | None = None):
        if func is None:
            if len(module.funcs) != 1:
                raise SpecError(f"{module.path}: {len(module.funcs)} functions; name one with ::FN")
            func = next(iter(module.funcs))
        if func not in module.funcs:
            raise SpecError(f"{module.path}: no function {func!r} (have: {', '.join(module.funcs)})")
        self.m = module
        self.fn = module.funcs[func]
        self.args = dict(args)
        self.trip_count = trip_count  # iterations of a loop whose bounds are not known
        self.partitions: list[Partition] = []

    # ------------------------------------------------------------------ errors
    def fail(self, op: Op, what: str):
        raise SpecError(f"{self.m.where(op)} ({self.m.path}:{op.line}, {op.name}): {what}")

    def need(self, env, op: Op, name: str, what: str):
        v = env.get(name, OPAQUE)
        if v is OPAQUE or v is None:
            origin = self.origins.get(name)
            via = f" (it comes from {origin})" if origin else ""
            self.fail(op, f"cannot evaluate {what} {name}{via}; give kernel arguments with "
                          f"--arg NAME=VALUE (or --trip-count N for loop bounds)")
        return v

    # ------------------------------------------------------------------ driver
    def run(self) -> list[Partition]:
        env = {}
        self.origins = {}
        names = self.fn.attrs.get("args", [])
        for name in names:
            key = name[1:]
            env[name] = self.args.get(key, OPAQUE)
            self.origins[name] = f"kernel argument {key}"
        unknown = set(self.args) - {n[1:] for n in names}
        if unknown:
            raise SpecError(f"{self.m.path}: --arg {sorted(unknown)[0]}: no such kernel argument "
                            f"(have: {', '.join(n[1:] for n in names)})")
        self.pre = Partition("default", int(self.m.attrs.get("ttg.num-warps", 4)))
        self.current = self.pre
        self.ws_seen = False
        self._region(self.fn.regions[0], env, ())
        if not self.ws_seen:
            self.partitions = [self.pre]
        return self.partitions

    def _region(self, region: Region, env: dict, iters: tuple):
        for op in region.ops:
            r = self._op(op, env, iters)
            if r is not None:
                return r
        return None

    def _emit(self, ev: Event):
        ev.seq = self.current.seq
        self.current.seq += 1
        self.current.events.append(ev)
        if len(self.current.events) > MAX_EVENTS:
            self.fail(ev.op, f"more than {MAX_EVENTS} barrier operations in one partition: "
                             f"choose a smaller trip count (--arg)")

    # ------------------------------------------------------------------ ops
    def _op(self, op: Op, env: dict, iters: tuple):
        n = op.name
        if n in ("scf.yield", "ttg.warp_yield", "ttg.warp_return", "tt.return"):
            return [env.get(v, OPAQUE) for v in op.operands]
        if n == "arith.constant":
            m = re.match(r".*arith\.constant\s+(-?\d+|true|false)\b", op.text)
            val = OPAQUE if not m else {"true": 1, "false": 0}.get(m.group(1), None)
            if m and val is None:
                val = int(m.group(1))
            self._set(env, op, [val])
            return None
        if n.startswith("arith."):
            self._set(env, op, [self._arith(op, env)])
            return None
        if n == "tt.get_program_id":
            self._set(env, op, [0])
            return None
        if n == "tt.get_num_programs":
            self._set(env, op, [1])
            return None
        if n in ("ttg.local_alloc", "ttng.tmem_alloc"):
            desc = _memdesc(op.text.split("->")[-1]) if "->" in op.text else None
            if desc is None:
                self._set(env, op, [OPAQUE])
                return None
            shape, element, memory = desc
            arr = Array(op.results[0].lstrip("%") if op.results else f"alloc{op.line}",
                        shape, element, memory, op.line)
            self._set(env, op, [Ref(arr, None)])
            return None
        if n in ("ttg.memdesc_index",):
            base = env.get(op.operands[0], OPAQUE)
            if not isinstance(base, Ref):
                self._set(env, op, [OPAQUE])
                return None
            idx = env.get(op.operands[1], OPAQUE) if len(op.operands) > 1 else OPAQUE
            if base.array.is_barrier or base.array.memory == "smem":
                if idx is OPAQUE:
                    self._set(env, op, [("unknown-index", base, op.operands[1])])
                    return None
                if not 0 <= idx < base.array.slots:
                    self.fail(op, f"index {idx} out of range for {base.array.name} "
                                  f"({base.array.slots} entries)")
            self._set(env, op, [Ref(base.array, idx if idx is not OPAQUE else None)])
            return None
        if n in ("ttg.memdesc_trans", "ttg.memdesc_reinterpret", "ttg.memdesc_subslice",
                 "ttg.memdesc_reshape"):
            self._set(env, op, [env.get(op.operands[0], OPAQUE)])
            return None
        if n == "scf.for":
            return self._for(op, env, iters)
        if n == "scf.if":
            cond = self.need(env, op, op.operands[0], "the condition")
            branch = op.regions[0] if cond else (op.regions[1] if len(op.regions) > 1 else None)
            vals = self._region(branch, env, iters) if branch is not None else []
            self._set(env, op, vals or [OPAQUE] * len(op.results))
            return None
        if n == "ttg.warp_specialize":
            return self._warp_specialize(op, env, iters)
        if n.startswith("ttng.") or n in ("ttg.local_load", "ttg.local_store",
                                          "ttg.async_copy_global_to_local", "ttg.async_wait",
                                          "ttg.async_commit_group"):
            self._barrier_op(op, env, iters)
            return None
        if n == "scf.while":
            self.fail(op, "scf.while loops are not supported yet (scf.for and scf.if are)")
        # anything else (tensor math, loads, stores) does not touch barriers or ring buffers
        self._set(env, op, [OPAQUE] * len(op.results))
        return None

    def _set(self, env, op, vals):
        for name, v in zip(op.results, vals):
            env[name] = v
            if v is OPAQUE:
                self.origins[name] = f"{op.name} at {self.m.where(op)}"
        if len(op.results) and len(vals) < len(op.results):
            for name in op.results[len(vals):]:
                env[name] = OPAQUE

    def _arith(self, op: Op, env):
        n = op.name.split(".", 1)[1]
        vals = [env.get(v, OPAQUE) for v in op.operands]
        if any(v is OPAQUE or v is None or isinstance(v, (Ref, tuple)) for v in vals):
            return OPAQUE
        if "tensor<" in op.text.split(" : ")[-1]:
            return OPAQUE
        bits = 64 if "i64" in op.text.split(" : ")[-1] else 32
        if n == "cmpi":
            pred = op.text.split("cmpi", 1)[1].strip().split(",")[0]
            a, b = vals[0], vals[1]
            return int({"eq": a == b, "ne": a != b, "slt": a < b, "sle": a <= b, "sgt": a > b,
                        "sge": a >= b, "ult": a % 2**bits < b % 2**bits,
                        "ule": a % 2**bits <= b % 2**bits, "ugt": a % 2**bits > b % 2**bits,
                        "uge": a % 2**bits >= b % 2**bits}.get(pred, False))
        if n == "select":
            return vals[1] if vals[0] else vals[2]
        if n in ("extsi", "extui", "trunci", "index_cast", "index_castui", "bitcast"):
            return vals[0] if n != "trunci" else _wrap(vals[0], 1 if "to i1" in op.text else bits)
        if len(vals) != 2:
            return OPAQUE
        a, b = vals
        try:
            r = {
                "addi": lambda: a + b, "subi": lambda: a - b, "muli": lambda: a * b,
                "divsi": lambda: _tdiv(a, b), "divui": lambda: a // b, "remsi": lambda: a - _tdiv(a, b) * b,
                "remui": lambda: a % b, "andi": lambda: a & b, "ori": lambda: a | b,
                "xori": lambda: a ^ b, "shli": lambda: a << b, "shrsi": lambda: a >> b,
                "shrui": lambda: (a % 2**bits) >> b, "minsi": lambda: min(a, b),
                "maxsi": lambda: max(a, b), "minui": lambda: min(a, b), "maxui": lambda: max(a, b),
                "ceildivsi": lambda: -((-a) // b),
                "floordivsi": lambda: a // b,
            }[n]()
        except (KeyError, ZeroDivisionError):
            return OPAQUE
        return _wrap(r, bits)

    def _for(self, op: Op, env, iters):
        m = re.search(r"scf\.for\s+(%[\w.$-]+)\s*=\s*(%[\w.$-]+(?:#\d+)?)\s+to\s+(%[\w.$-]+(?:#\d+)?)"
                      r"\s+step\s+(%[\w.$-]+(?:#\d+)?)", op.text)
        if not m:
            self.fail(op, "cannot read this scf.for")
        iv, lb, ub, st = m.groups()
        lo = self.need(env, op, lb, "the loop's lower bound")
        step = self.need(env, op, st, "the loop's step")
        if env.get(ub, OPAQUE) in (OPAQUE, None) and self.trip_count is not None:
            hi = lo + step * self.trip_count  # --trip-count: N iterations from the lower bound
        else:
            hi = self.need(env, op, ub, "the loop's upper bound")
        if step <= 0:
            self.fail(op, f"loop step {step}: only positive steps are supported")
        ia = re.search(r"iter_args\((.*?)\)\s*(->|:|\{)", op.text)
        pairs = re.findall(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+(?:#\d+)?)", ia.group(1)) if ia else []
        carried = [env.get(v, OPAQUE) for _, v in pairs]
        k = 0
        part = self.current
        for i in range(lo, hi, step):
            part.starts.setdefault(id(op), []).append(part.seq)
            part.seq += 1
            if part.seq > 4 * MAX_EVENTS:
                self.fail(op, f"more than {MAX_EVENTS} loop iterations: choose smaller --arg values")
            env[iv] = i
            for (name, _), v in zip(pairs, carried):
                env[name] = v
            out = self._region(op.regions[0], env, iters + ((id(op), k),))
            carried = list(out or [])[:len(pairs)] + [OPAQUE] * (len(pairs) - len(out or []))
            k += 1
        part.ends.setdefault(id(op), []).append(part.seq)
        part.seq += 1
        self._set(env, op, carried)
        return None

    def _warp_specialize(self, op: Op, env, iters):
        if self.ws_seen:
            self.fail(op, "a second ttg.warp_specialize in one kernel is not supported")
        self.ws_seen = True
        self.pre.ws_start = self.pre.seq  # the default warps' events before it come first
        captured = [env.get(v, OPAQUE) for v in op.operands]
        for region in op.regions:
            name = region.header.split()[0] if region.header else "default"
            wm = re.search(r"num_warps=(\d+)", region.header)
            if name == "default":
                part = self.pre  # the warps that ran the code before it
                part.name = "default"
            else:
                part = Partition(name, int(wm.group(1)) if wm else 1)
            self.partitions.append(part)
            self.current = part
            inner = dict(env) if name == "default" else {}
            for a, v in zip(region.args, captured):
                inner[a] = v
            got = self._region(region, inner, ())
            if name == "default":  # ttg.warp_yield's values are the op's results
                self._set(env, op, list(got or []))
        self.current = self.pre
        self.pre.ws_end = self.pre.seq  # what the default warps run after it follows the join
        return None

    # ------------------------------------------------------------------ barrier ops
    def _ref(self, env, op, name, what) -> Ref:
        v = env.get(name, OPAQUE)
        if isinstance(v, tuple) and v and v[0] == "unknown-index":
            self.need(env, op, v[2], f"the index of {what}")
        if not isinstance(v, Ref):
            self.fail(op, f"cannot tell which {what} {name} is")
        if v.index is None and v.array.slots == 1:
            return Ref(v.array, 0)  # a lone barrier (1xi64), used without memdesc_index
        return v

    def _pred(self, env, op, name) -> bool:
        return bool(self.need(env, op, name, "the predicate"))

    def _barrier_op(self, op: Op, env, iters):
        n = op.name
        ops = op.operands
        ev = lambda kind, **kw: self._emit(Event(kind, op, iters=iters, **kw))  # noqa: E731
        if n == "ttng.init_barrier":
            ev("init", barrier=self._ref(env, op, ops[0], "barrier"), value=op.ints[0] if op.ints else 1)
        elif n == "ttng.inval_barrier":
            pass
        elif n == "ttng.wait_barrier":
            if len(ops) > 2 and not self._pred(env, op, ops[2]):
                return
            b = self._ref(env, op, ops[0], "barrier")
            ev("wait", barrier=b, value=self.need(env, op, ops[1], "the phase") & 1)
        elif n == "ttng.arrive_barrier":
            if len(ops) > 1 and not self._pred(env, op, ops[1]):
                return
            ev("arrive", barrier=self._ref(env, op, ops[0], "barrier"), value=op.ints[0] if op.ints else 1)
        elif n == "ttng.barrier_expect":
            if len(ops) > 1 and not self._pred(env, op, ops[1]):
                return
            ev("expect", barrier=self._ref(env, op, ops[0], "barrier"), value=op.ints[0])
        elif n == "ttng.async_tma_copy_global_to_local":
            # %desc[%coords...] %buf, %bar, %pred
            buf_name, bar_name, pred = ops[-3], ops[-2], ops[-1]
            if not self._pred(env, op, pred):
                return
            buf = _whole(self._ref(env, op, buf_name, "buffer"))
            bar = self._ref(env, op, bar_name, "barrier")
            ev("copy", barrier=bar, buffer=buf, value=buf.array.slot_bytes())
        elif n == "ttg.async_copy_global_to_local":
            # cp.async by every thread into a buffer; an mbarrier hears of it only through a
            # later async_copy_mbarrier_arrive (below), which names the barrier it completes
            buf = _whole(self._ref(env, op, ops[-1], "buffer"))
            copy = Event("copy", op, buffer=buf, value=buf.array.slot_bytes(), iters=iters)
            self._emit(copy)
            self.current.cp_async.append(copy)
            self._set(env, op, [OPAQUE] * len(op.results))
        elif n == "ttng.async_copy_mbarrier_arrive":
            if not op.attrs.get("noIncrement"):
                self.fail(op, "async_copy_mbarrier_arrive without noIncrement (the arrival nets "
                              "to zero) is not supported yet")
            bar = self._ref(env, op, ops[0], "barrier")
            threads = self.current.warps * 32
            # One arrival per thread when its cp.asyncs land (cp.async.mbarrier.arrive.noinc):
            # in the model, threads - 1 arrivals now and the last with the bytes of those
            # copies as tx (expect_tx), so the phase completes exactly when they have landed.
            for copy in self.current.cp_async:
                copy.barrier = Ref(bar.array, copy.buffer.index)
            if threads > 1:
                ev("arrive", barrier=bar, value=threads - 1)
            ev("expect", barrier=bar, value=sum(c.value for c in self.current.cp_async))
            self.current.cp_async.clear()
        elif n == "ttg.local_load":
            v = _whole(env.get(ops[0], OPAQUE))
            if isinstance(v, Ref) and v.array.memory == "smem" and v.index is not None:
                ev("read", buffer=v)
            self._set(env, op, [OPAQUE] * len(op.results))
        elif n == "ttng.tc_gen5_mma":
            self._mma(op, env, iters)
        elif n == "ttng.tc_gen5_commit":
            if len(ops) > 1 and not self._pred(env, op, ops[1]):
                return
            ev("commit", barrier=self._ref(env, op, ops[0], "barrier"))
        elif n == "ttng.warp_group_dot":
            reads = tuple(v for v in (_whole(env.get(x, OPAQUE)) for x in ops[:2])
                          if isinstance(v, Ref) and v.array.memory == "smem" and v.index is not None)
            if op.attrs.get("isAsync"):
                ev("read_async", extra=reads)
            else:
                for r in reads:
                    ev("read", buffer=r)
            self._set(env, op, [OPAQUE] * len(op.results))
        elif n == "ttng.warp_group_dot_wait":
            ev("read_wait", value=op.attrs.get("pendings", 0))
            self._set(env, op, [OPAQUE] * len(op.results))
        elif n in ("ttng.async_tma_copy_local_to_global", "ttng.async_tma_store_wait",
                   "ttng.fence_async_shared", "ttng.tmem_load", "ttng.tmem_store",
                   "ttg.local_store", "ttng.tmem_copy", "ttng.fence"):
            # not ring traffic the model tracks: stores out of shared memory, tensor memory
            self._set(env, op, [OPAQUE] * len(op.results))
        else:  # (ttg.async_wait / async_commit_group: cp.async groups, not modelled yet)
            self.fail(op, f"op {n} is not supported by the Triton front end (docs/triton.md "
                          f"lists the ops it reads)")

    def _mma(self, op: Op, env, iters):
        # a, b, acc, useAcc, pred, then barriers as %bar[%pred] (text order)
        text = op.text.split(" : ")[0]
        pred_name = op.operands[4] if len(op.operands) > 4 else None
        if pred_name and not self._pred(env, op, pred_name):
            return
        reads = tuple(v for v in (_whole(env.get(x, OPAQUE)) for x in op.operands[:2])
                      if isinstance(v, Ref) and v.array.memory == "smem" and v.index is not None)
        bars = []
        for bname, bpred in re.findall(r"(%[\w.$-]+(?:#\d+)?)\[(%[\w.$-]+(?:#\d+)?)\]", text):
            if self._pred(env, op, bpred):
                bars.append(self._ref(env, op, bname, "barrier"))
        self._emit(Event("read_async", op, iters=iters, extra=reads))
        for b in bars:
            self._emit(Event("commit", op, barrier=b, iters=iters))


def _whole(v):
    """A buffer used without memdesc_index is one slot (index 0) of its own."""
    if isinstance(v, Ref) and v.index is None and not v.array.is_barrier:
        return Ref(Array(v.array.name, (1,) + v.array.shape, v.array.element, v.array.memory,
                         v.array.line), 0)
    return v


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _wrap(x, bits):
    if bits == 1:
        return x & 1
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >= 1 << (bits - 1) else x
