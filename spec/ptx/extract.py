"""From a PTX kernel to per-role event sequences: the Mojo front end's extractor
(spec/mojo/parse.py: run every warp of every CTA of the cluster, group warps with equal programs
into roles, barriers into rings) over the PTX interpreter (spec/ptx/interp.py).

What PTX adds: the launch configuration from `.reqntid` / `.maxntid` and
`.reqnctapercluster` (else --block-dim / --cluster); arguments by `.param` name, position or
`N+OFFSET` for a word of a struct parameter; the source of each op from `.loc` lines and
their `function_name` / `inlined_at` chains (`$L__info_string` names, demangled); the
signal of a barrier from the pipeline method on that chain (CUTLASS's `producer_acquire`
waits on empty, `consumer_wait` on full, ...), else what completes it.
"""
from __future__ import annotations

import os
import re
from math import gcd

from pipeproof.spec.mojo.parse import EMPTY_WORDS, FULL_WORDS, Extractor, Op, loop_bodies
from pipeproof.spec.mojo.llvm import IRError
from pipeproof.spec.ptx.interp import GUESS, PtxThread
from pipeproof.spec.ptx.module import demangle, parse_module
from pipeproof.spec.schema import SpecError

# pipeline methods (CUTLASS C++ and CuTe DSL, TileLang, DeepGEMM, hand-written wrappers) whose
# barrier is the ring's full signal or its empty one
PTX_FULL = FULL_WORDS + ("consumer_wait", "consumer_try_wait", "producer_commit",
                         "producer_expect_transaction", "producer_get_barrier", "wait_full_barrier",
                         "arrive_full")
PTX_EMPTY = EMPTY_WORDS + ("producer_acquire", "producer_try_acquire", "consumer_release",
                           "producer_tail", "wait_empty_barrier", "arrive_empty")
# a frame is the pipeline API (its caller's line is the kernel's) when its name has one of these
API_WORDS = ("acquire", "release", "commit", "wait", "arrive", "expect", "tail", "barrier",
             "mbar", "sync", "produce", "consume", "copy", "tma", "fence", "elect", "cluster")


class PtxDebug:
    """Frames [(file, line, function)] innermost first, from an Inst's `.loc` chain."""

    def __init__(self, m):
        self.m = m
        self.cache = {}

    def frames(self, loc, kernel_name):
        if loc is None:
            return []
        key = (loc, kernel_name)
        if key in self.cache:
            return self.cache[key]
        out, cur = [], loc
        while cur is not None:
            fn = cur.function
            name = demangle(self.m.strings.get(fn, fn)) if fn else kernel_name
            out.append((os.path.basename(self.m.files.get(cur.file, "?")), cur.line, name,
                        self.m.files.get(cur.file, "?")))
            cur = cur.inlined_at
        # the function of each frame is the one its Loc is inside: the inlined callee's name
        # belongs to the frame it was inlined into's callee, i.e. the frame itself
        self.cache[key] = out
        return out

    def stack(self, inst, calls=(), kernel_name="?"):
        out = list(self.frames(inst.loc, kernel_name)) if inst is not None else []
        for c in reversed(calls):
            out += self.frames(c.loc, kernel_name)
        return [(f, line, n) for f, line, n, _ in out]


def short(name: str) -> str:
    return name.split("::")[-1]


class PtxExtractor(Extractor):
    thread = PtxThread
    FULL_WORDS, EMPTY_WORDS = PTX_FULL, PTX_EMPTY

    def __init__(self, text: str, path: str, kernel: str | None = None, args: dict | None = None,
                 block_dim: int | None = None, tiles: int | None = None, cluster=None, grid=None):
        self.path = path
        self.tiles = tiles
        try:
            self.m = parse_module(text, path)
        except IRError as err:
            raise SpecError(f"{err}") from None
        self.m.pair = "cta_group::2" in text
        self.m.grid = grid
        from pipeproof.spec.ptx.interp import PTX_MAX_TOTAL
        self.m.budget = [PTX_MAX_TOTAL]   # instructions left for every thread of this read
        ks = [k for k in self.m.kernels() if "mbarrier" in " ".join(i.opcode for i in k.insts)
              or kernel]
        if kernel:
            ks = [k for k in self.m.kernels() if kernel in k.name or kernel in demangle(k.name)]
        if len(ks) != 1:
            names = ", ".join(demangle(k.name)[:60] for k in self.m.kernels()) or "none"
            raise SpecError(f"{path}: {'no' if not ks else 'several'} kernel"
                            f"{'' if kernel is None else ' matching ' + repr(kernel)}"
                            f"{'' if kernel else ' with mbarrier ops'} (kernels: {names}); name "
                            f"one with --kernel")
        self.k = ks[0]
        self.kname = demangle(self.k.name)
        self.debug = PtxDebug(self.m)
        self.args = self._args(args or {})
        self.backend = "nvidia"
        from pipeproof.backends.capabilities import backend
        self.caps = backend(self.backend)
        self.ws = 32
        d = self.k.directives
        bd = block_dim
        if bd is None:
            for key in ("reqntid", "maxntid"):
                if key in d:
                    bd = 1
                    for x in d[key]:
                        bd *= x
                    break
        if bd is None:
            raise SpecError(f"{path}: the kernel {self.kname} states no block size (.reqntid / "
                            f".maxntid); give it with --block-dim N")
        self.block_dim = bd
        cl = cluster or d.get("reqnctapercluster")
        if cl is None and "explicitcluster" in d:
            raise SpecError(f"{path}: the kernel {self.kname} is launched with a cluster whose "
                            f"size it does not state (.explicitcluster without .reqnctapercluster); "
                            f"give it with --cluster N")
        dims = tuple(cl) if isinstance(cl, (tuple, list)) else (cl or 1,)
        self.cdims = tuple((list(dims) + [1, 1, 1])[:3])
        self.cluster = self.cdims[0] * self.cdims[1] * self.cdims[2]
        self.guessed = set()
        self.launch_from = {"block_dim": "flag" if block_dim else
                            ("reqntid" if "reqntid" in d else "maxntid"),
                            "cluster": "flag" if cluster else
                            ("reqnctapercluster" if "reqnctapercluster" in d else "none")}

    def _args(self, given: dict) -> dict:
        """--arg KEY=V: KEY a .param name (or its suffix after `_param_`), a position, or
        `N+OFFSET` (a word at byte OFFSET of struct parameter N)."""
        names = [n for n, t, _ in self.k.params if t != "local"]
        out = {}
        for key, v in given.items():
            key = str(key)
            m = re.fullmatch(r"(\w+?)\+(\d+|0x[0-9a-fA-F]+)", key)
            base, off = (m.group(1), int(m.group(2), 0)) if m else (key, None)
            if base.isdigit() and int(base) < len(names):
                n = int(base)
            elif base in names:
                n = names.index(base)
            elif any(x.endswith("_" + base) for x in names):
                n = next(i for i, x in enumerate(names) if x.endswith("_" + base))
            else:
                shown = ", ".join(f"{i}:{x.split('_param_')[-1] if '_param_' in x else x}"
                                  for i, x in enumerate(names))
                raise SpecError(f"--arg {key}: the kernel's parameters are {shown} (a name, a "
                                f"position, or N+OFFSET for a word of a struct parameter)")
            out[(n, off) if off is not None else n] = v
        return out

    # ------------------------------------------------------------ the shared extractor's hooks
    def describe(self, inst, stack=()) -> Op:
        """The op's name: the pipeline method its chain goes through (the outermost frame that
        reads as the pipeline API); its line: that method's call site."""
        frames = self.debug.stack(inst, stack, self.kname)
        if not frames:
            return Op(inst.words[0] if inst is not None else "?", 0, "?",
                      inst.opcode[:60] if inst is not None else "?")
        api = 0
        for i, (_, _, name) in enumerate(frames):
            if any(w in short(name).lower() for w in API_WORDS) and i < len(frames) - 1:
                api = i
        site = frames[api + 1] if api + 1 < len(frames) and len(frames) > 1 else frames[api]
        label = short(frames[api][2]) if len(frames) > 1 else inst.words[0]
        return Op(label, site[1], f"{site[0]}:{site[1]}", inst.opcode[:60])

    def frame_names(self, inst, stack) -> list:
        return [short(n) for _, _, n in self.debug.stack(inst, stack, self.kname)]

    def fail(self, err: IRError):
        inst = err.inst
        if inst is None:
            raise SpecError(f"{self.path}: {err}")
        op = self.describe(inst)
        raise SpecError(f"{op.where} ({self.path}:{inst.index + 1}, `{inst.text[:70]}`): {err}")

    def loops(self) -> dict:
        return {name: loops_of(f) for name, f in self.m.functions.items()}

    def seen(self, thread) -> None:
        self.guessed |= thread.guessed
        for r in thread.events:   # lanes per warp of each arrive (the SASS check compares them)
            if r.kind in ("arrive", "expect"):
                self.arrive_lanes[r.inst] = max(self.arrive_lanes.get(r.inst, 0), r.lanes)
        for r in thread.events:
            if r.kind == "copy" and len(r.extra) == 2 and hasattr(r.addr, "offset") \
                    and hasattr(r.extra[0], "offset") and isinstance(r.addr.offset, int):
                bar = r.extra[0]
                key = (bar.base[1] if bar.base[0] == "global" else bar.base, bar.offset)
                self.copy_dsts.setdefault(r.inst, set()).add((key, r.addr.offset))
                self.copy_at.setdefault(r.addr.base, set()).add(r.addr.offset)

    def copy_bytes(self) -> dict:
        """The bytes of each TMA copy (by its op's line and name), from where the copies land:
        PTX does not state a tensor copy's size (the tensor map does), but the copies into one
        slot tile it. Copies whose destinations step by the same stride between slots share
        one region per slot (A and B interleaved, or a multicast tile split between the
        cluster's CTAs, each copying its part into every CTA); each copy's bytes are the
        distance to the next destination in its region (the last: to the region's end). A
        copy whose bytes differ between slots keeps the stride (spec/mojo/build.py)."""
        per_op = {}    # the op's (line, name): every instance of it (unrolled copies too)
        for inst, pairs in self.copy_dsts.items():
            op = self.describe(inst)
            by_slot = per_op.setdefault((op.where, op.name), {})
            for (bar, off) in pairs:
                got = self.by_addr.get(bar)
                if got is not None:
                    by_slot.setdefault(got, set()).add(off)
        stride = {}
        for key, by_slot in per_op.items():
            g = 0     # between slots, from each slot's first destination (parts sit above it)
            pts = sorted((idx, min(offs)) for (arr, idx), offs in by_slot.items())
            for (s0, o0), (s1, o1) in zip(pts, pts[1:]):
                if s1 != s0 and (o1 - o0) % (s1 - s0) == 0:
                    g = gcd(g, abs((o1 - o0) // (s1 - s0)))
            stride[key] = g
        out = {}
        for key, by_slot in per_op.items():
            st = stride[key]
            if st <= 0:
                continue
            sizes = set()
            for slot, offs in by_slot.items():
                same = sorted({o for other, b in per_op.items() if stride[other] == st
                               for o in b.get(slot, ())})
                windows = []
                for x in same:   # a window starts where the last one's stride ends
                    if not windows or x >= windows[-1][0] + st:
                        windows.append([x])
                    else:
                        windows[-1].append(x)
                for o in offs:
                    w = next(w for w in windows if o in w)
                    nxt = [x for x in w if x > o]
                    sizes.add((nxt[0] if nxt else w[0] + st) - o)
            if len(sizes) == 1:
                out[key] = sizes.pop()
        out.update(self.one_slot_bytes(per_op, stride))
        return out

    def one_slot_bytes(self, per_op, stride) -> dict:
        """A copy into a ring of one slot (FA4's Q tile) has no stride between slots: its
        bytes are the distance from its destination to the next destination any copy of the
        kernel lands on above it in the same shared buffer (the next buffer's start). A gap
        between buffers overstates them (a false alarm, never a missed one); with no copy
        above it, the bytes are not read (refused)."""
        out = {}
        for key, by_slot in per_op.items():
            if stride[key] > 0 or len(by_slot) != 1:
                continue
            (arr, _), offs = next(iter(by_slot.items()))
            if arr.slots != 1:
                continue     # a ring of several slots this trip count fills one of: refused
            sizes = set()
            for at in self.copy_at.values():
                for o in offs & at:
                    above = [x for x in at if x > o]
                    sizes.add(min(above) - o if above else None)
            if len(sizes) == 1 and None not in sizes:
                out[key] = sizes.pop()
        return out

    def _uses(self, words) -> bool:
        """setmaxnreg does not make warpgroups the agents here (the Mojo reader's rule): in
        PTX from Triton and the CuTe DSL a warpgroup's warps run different partitions. Each
        warp is an agent; warps with equal programs are one role."""
        return False

    def run(self):
        loops = self.loops()
        spin = {name: v[2] for name, v in loops.items()}
        self.spin_loops = spin
        outer = self

        logs = {}   # per CTA: its shared memory's stores (spec/ptx/interp.py load_bytes)

        class Bound(PtxThread):
            def __init__(self, m, kernel, tid, cta, ncta, block_dim, args, lp, tiles):
                super().__init__(m, kernel, tid, cta, ncta, block_dim, args,
                                 {n: (v[0], v[1]) for n, v in lp.items()}, tiles, outer.spin_loops)
                self.log = logs.setdefault(cta, {})
                self.lane0 = logs.setdefault(("lane0", cta), {})
        self.thread = Bound
        self.copy_dsts = {}
        self.copy_at = {}     # every copy destination, per shared base (one-slot rings' bytes)
        self.arrive_lanes = {}
        kernel = super().run()
        kernel.copy_bytes = self.copy_bytes()
        kernel.buffer_sizes = {n: size for n, (size, _) in self.m.shared.items()}
        drop_dispatch(kernel)
        pair_by_use(kernel)
        self.refuse_own_fills(kernel)
        return kernel

    def refuse_own_fills(self, kernel) -> None:
        """A warp that copies into a ring and waits on that ring's full signal reads its own
        fills (a software-pipelined loop: loads run `stages - 1` ahead of the reads, in one
        warp). The shared builder pairs a fill with the read of the same item, which that loop
        does not do, so such a kernel is refused rather than checked wrong (`pipeproof triton`
        reads Triton's from TTGIR). The CLC response ring (sm100 schedulers) is the exception
        the builder handles (spec/mojo/build.py drop_own_fill_waits)."""
        for p in kernel.partitions:
            filled = {ev.barrier.array for ev in p.events if ev.kind == "copy"
                      and ev.barrier is not None and not getattr(ev, "clc", False)}
            for ev in p.events:
                if ev.kind == "wait" and ev.barrier is not None and ev.barrier.array in filled:
                    raise SpecError(f"{ev.op.where} ({self.path}, {ev.op.name}): {p.name} copies into "
                                    f"a ring and waits on its full signal itself (a software-"
                                    f"pipelined loop): not read from PTX yet (docs/ptx.md); "
                                    f"pipeproof triton reads Triton's from TTGIR")

    def guessed_args(self) -> list:
        """[(parameter name, offset)] read by a branch without a value given."""
        names = [n for n, t, _ in self.k.params if t != "local"]
        return [(names[n], off) for n, off in sorted(self.guessed)]


def pair_by_use(kernel) -> None:
    """Rings by how the barriers are used where no pipeline method names them and the arrays
    are not laid out full-then-empty (Triton pads its barrier arrays): an array nothing fills
    (no copy, expect or commit completes it) that a filler waits on right before it fills slot
    i of a full array F is F's empty array."""
    from pipeproof.spec.frontend_core import EMPTY, FULL
    completed = {ev.barrier.array for p in kernel.partitions for ev in p.events
                 if ev.kind in ("copy", "expect", "commit") and ev.barrier is not None}
    found = {}
    for p in kernel.partitions:
        last = None
        for ev in p.events:
            if ev.kind == "wait" and ev.barrier is not None:
                last = ev.barrier
            elif ev.kind in ("expect", "copy") and ev.barrier is not None and last is not None:
                e, f = last.array, ev.barrier.array
                if e is not f and e not in completed and f in completed \
                        and last.index == ev.barrier.index and e.slots == f.slots:
                    found.setdefault(f, set()).add(e)
    for f, es in found.items():
        if len(es) != 1 or kernel.pairs.get(f) is not None:
            continue
        e = next(iter(es))
        if any(e in v for v in found.values() if v is not es):
            continue
        e.signal = EMPTY
        e.name = f"{EMPTY}@{e.base[1]}"
        for b in e.barriers:
            b.signal = EMPTY
        kernel.pairs.pop(e, None)
        kernel.pairs[f] = e
        assert f.signal == FULL


def drop_dispatch(kernel) -> None:
    """Warps that only pass named barriers (no mbarrier op: Triton's idle partitions in the
    warp-specialisation dispatch loop, whose barrier hands each warp its partition and waits for
    all at the end) are not agents of the protocol, and the named barriers they pass order only
    the partitions' start and end: the model starts every agent at once with the barriers
    initialised and ends each when its program ends. Both are dropped. Dropping a barrier only
    adds interleavings, so no violation of the kernel is lost (docs/ptx.md)."""
    idle = [p for p in kernel.partitions
            if p.events and all(e.kind in ("sync", "bar_arrive") for e in p.events)]
    if not idle or len(idle) == len(kernel.partitions):
        return
    ids = {e.extra[0] for p in idle for e in p.events}
    for p in kernel.partitions:
        p.events = [e for e in p.events if not (e.kind in ("sync", "bar_arrive") and e.extra[0] in ids)]
    kernel.partitions = [p for p in kernel.partitions if p not in idle and p.events]


SYNC_OPS = ("mbarrier", "cp", "tcgen05", "bar", "barrier", "clusterlaunchcontrol")


def loops_of(f):
    """(block starts, natural loops: header index -> body index set, spin loops: headers of
    loops whose body synchronises only by waiting on an mbarrier: a wait's retry loop)."""
    insts = f.insts
    leaders = {0}
    for lab, i in f.labels.items():
        leaders.add(i)
    for i, inst in enumerate(insts):
        if inst.words[0] in ("bra", "ret", "exit", "trap"):
            leaders.add(i + 1)
    starts = sorted(x for x in leaders if x <= len(insts))
    block_of = {}
    succ = {}
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(insts)
        if s >= len(insts):
            continue
        for i in range(s, e):
            block_of[i] = s
        last = insts[e - 1]
        out = []
        w = last.words[0]
        if w == "bra":
            out.append(f.labels[last.args[-1]])
            if last.guard is not None and e < len(insts):
                out.append(e)
        elif w not in ("ret", "exit", "trap") and e < len(insts):
            out.append(e)
        succ[s] = out
    pred = {}
    for b, outs in succ.items():
        for t in outs:
            pred.setdefault(t, []).append(b)
    loops = loop_bodies(list(succ), succ, pred, lambda t, b: t <= b)
    # loop membership by instruction index (the interpreter asks by pc)
    full = {}
    for h, blocks in loops.items():
        idx = set()
        for s in blocks:
            k = starts.index(s)
            e = starts[k + 1] if k + 1 < len(starts) else len(insts)
            idx.update(range(s, e))
        full[h] = idx
    spin = set()
    for h, idx in full.items():
        ops = [insts[i] for i in idx if insts[i].words[0] in SYNC_OPS]
        if ops and all(i.words[0] == "mbarrier" and i.words[1] in ("try_wait", "test_wait")
                       for i in ops):
            spin.add(h)
    return {s: True for s in starts}, full, spin


__all__ = ["PtxExtractor", "GUESS"]
