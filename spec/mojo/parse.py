"""From a Mojo kernel's LLVM IR (NVVM or AMDGPU, compiled with -g1) to per-role event sequences
the front-end core (spec/frontend_core.py) turns into a spec (docs/mojo.md gives the rules).

1. Every warp of one CTA (every CTA of a cluster) is run concretely (spec/mojo/interp.py),
   lane 0 first; when a branch depends on the lane (elect.sync, `lane_id() == 0`,
   `thread_idx.x < K`), lanes 1, 2, ws/2 and ws-1 too, and an event's arrival count is the
   number of lanes that make it (lanes not probed are taken to behave like lanes 1 and ws-1
   when those two agree, else every lane is run).
2. Agents: one per warp; one per warpgroup (4 warps) when the kernel reallocates registers
   per warpgroup (`setmaxnreg`, sm90 warp specialisation). Agents whose event sequences are
   equal form one role.
3. Barriers: NVIDIA from `mbarrier.init` (address, count); AMD counters from the atomics.
   A barrier's signal (full or empty) is the `PipelineBackend` method on its debug stack
   (`wait_full`, `arrive_empty`, ...), else what completes it (TMA copies: full). A ring is a
   full array and the empty array right after it (the backends' storage layout).
4. Each event keeps its Mojo call stack from the debug info: the kernel's line and the
   pipeline method that issued it.
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field

from pipeproof.backends.capabilities import backend
from pipeproof.spec.frontend_core import EMPTY, FULL
from pipeproof.spec.mojo.interp import MAX_STEPS, Raw, Thread  # noqa: F401
from pipeproof.spec.mojo.llvm import IRError, LLModule, OPAQUE, Ptr, parse_module
from pipeproof.spec.mojo.warps import AgentRun, _keys, next_line, run_warp, trim_loops  # noqa: F401
from pipeproof.spec.schema import SpecError

API = ("wait_full", "wait_empty", "try_full", "try_empty", "arrive_full", "arrive_empty",
       "init_barriers", "expect_bytes", "drain", "drain_producer", "acquire", "release",
       "acquire_producer", "acquire_consumer", "wait_producer", "wait_consumer", "producer_step",
       "consumer_step", "produce", "consume", "arrive", "commit", "release_from_mma",
       "acquire_for_mma", "acquire_for_epilogue", "consumer_arrive_empty_barriers",
       "producer_signal_and_step", "consumer_signal_and_step", "prepare_stage", "load_tile",
       "wait", "expect_tx", "init", "arrive_cluster", "mma")
FULL_WORDS = ("wait_full", "try_full", "arrive_full", "wait_producer", "acquire_consumer")
EMPTY_WORDS = ("wait_empty", "try_empty", "arrive_empty", "wait_consumer", "acquire_producer")


def read_ir(path: str, expected: str = "LLVM IR from `mojo build --emit llvm`") -> str:
    """A text file (gzipped where it ends in .gz); a missing or binary one is one line."""
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rt") as fh:
                return fh.read()
        with open(path) as fh:
            return fh.read()
    except OSError as err:
        raise SpecError(f"{path}: cannot read it ({err.strerror or err})") from None
    except (UnicodeDecodeError, gzip.BadGzipFile):
        raise SpecError(f"{path}: not a text file (expected {expected})") from None


# ---------------------------------------------------------------- debug locations
class Debug:
    def __init__(self, m: LLModule):
        self.meta = m.meta
        self.cache = {}

    def frames(self, dbg):
        """[(file, line, function)] innermost first, for a !DILocation id."""
        if dbg is None:
            return []
        if dbg in self.cache:
            return self.cache[dbg]
        out, i = [], dbg
        while i:
            s = self.meta.get("!" + i, "")
            m = re.search(r"line: (\d+)", s)
            sc = re.search(r"scope: !(\d+)", s)
            if not m or not sc:
                break
            name, fn = self.scope(sc.group(1))
            out.append((fn, int(m.group(1)), name))
            nxt = re.search(r"inlinedAt: !(\d+)", s)
            i = nxt.group(1) if nxt else None
        self.cache[dbg] = out
        return out

    def scope(self, sid):
        for _ in range(100):
            sp = self.meta.get("!" + sid, "")
            if sp.startswith("!DISubprogram"):
                name = re.search(r'name: "([^"]*)"', sp)
                f = re.search(r"file: !(\d+)", sp)
                fname = ""
                if f:
                    fm = re.search(r'filename: "([^"]*)"', self.meta.get("!" + f.group(1), ""))
                    fname = fm.group(1) if fm else ""
                return (name.group(1) if name else "?"), fname.split("/")[-1]
            nxt = re.search(r"scope: !(\d+)", sp)
            if not nxt:
                return "?", ""
            sid = nxt.group(1)
        return "?", ""

    def stack(self, inst, calls=()):
        """Innermost first: the instruction's inlined frames, then each call site's."""
        out = list(self.frames(inst.dbg)) if inst is not None else []
        for c in reversed(calls):
            out += self.frames(c.dbg)
        return out


@dataclass(frozen=True)
class Op:
    """What a trace step names: the pipeline method (`name`) and the kernel's Mojo line."""
    name: str
    line: int
    where: str
    ir: str


def short_name(name: str) -> str:
    return name.split("[")[0].split("(")[0]


def describe(debug: Debug, inst, calls=()) -> Op:
    frames = debug.stack(inst, calls)
    api = [short_name(n) for _, _, n in frames if short_name(n) in API]
    # the kernel's line: the innermost frame in the file of the outermost one (the kernel's)
    site = frames[-1] if frames else ("?", 0, "?")
    site = next((f for f in frames if f[0] == site[0]), site)
    # the kernel's line: the outermost frame (the kernel function itself)
    label = " <- ".join(dict.fromkeys(api[:3])) or short_name(frames[0][2]) if frames else "?"
    ir = inst.text.split("(")[0][:60] if inst is not None else "?"
    return Op(label, site[1], f"{site[0]}:{site[1]}", ir)


# ---------------------------------------------------------------- loops
def natural_loops(f) -> dict:
    """header -> set of blocks, for every edge to a block at or before its source in the text
    (Mojo's IR keeps loop headers before their bodies)."""
    order = {b: i for i, b in enumerate(f.order)}
    succ, pred = {}, {}
    for b in f.order:
        insts = f.blocks[b]
        targets = []
        if insts:
            last = insts[-1]
            targets = re.findall(r"label (%[-\w.$]+)", last.text)
        succ[b] = targets
        for t in targets:
            pred.setdefault(t, []).append(b)
    return loop_bodies(f.order, succ, pred, lambda t, b: t in order and order[t] <= order[b])


def loop_bodies(blocks, succ, pred, back) -> dict:
    """header -> the blocks of its natural loop, for every edge b -> t that `back(t, b)` calls a
    back edge (the LLVM IR and PTX readers' loops)."""
    loops = {}
    for b in blocks:
        for t in succ[b]:
            if back(t, b):
                body = loops.setdefault(t, {t})
                work = [b]
                while work:
                    x = work.pop()
                    if x in body:
                        continue
                    body.add(x)
                    work += pred.get(x, [])
    return loops


# ---------------------------------------------------------------- the kernel
@dataclass
class Barrier:
    addr: tuple           # (global name, offset)
    count: int | None
    signal: str | None
    init: object = None


@dataclass(eq=False)
class Array:
    name: str
    slots: int
    signal: str
    count: int
    base: tuple
    barriers: list


@dataclass(frozen=True)
class Ref:
    array: object
    index: int | None


@dataclass(eq=False)
class Data:
    """The data slots a ring guards (TMA destinations or plain shared-memory stores)."""
    name: str
    slots: int


@dataclass
class Event:
    kind: str
    op: Op
    barrier: Ref | None = None
    value: int = 0
    buffer: Ref | None = None
    iters: tuple = ()
    extra: tuple = ()
    seq: int = 0
    suffix: str = ""
    tgt: object = None       # frozenset of the CTAs it lands on (absolute), None: its own


@dataclass
class Partition:
    name: str
    warps: int
    events: list = field(default_factory=list)
    starts: dict = field(default_factory=dict)
    ends: dict = field(default_factory=dict)
    ws_start: int | None = None
    ws_end: int | None = None
    ctas: object = None   # the CTAs that run this program (None: every CTA)


@dataclass
class Kernel:
    path: str
    name: str
    backend: str
    cluster: int
    block_dim: int
    partitions: list
    arrays: list
    pairs: dict          # full Array -> empty Array (or None)
    data: dict           # full Array -> Data
    unsupported: list    # (what, Op): ops read but not expressible in the spec language
    globals: dict = field(default_factory=dict)
    warp_size: int = 32  # threads per warp (nvptx) or wavefront (amdgcn: 64), from the triple
    tiles: int | None = None  # --tiles: the work tiles per CTA (CLC query answers), if given


def attr(m: LLModule, kernel, key):
    text = m.attributes.get(kernel.attr_group or "", "") + " " + kernel.attrs
    got = re.search(rf'"{re.escape(key)}"="([^"]*)"', text)
    return got.group(1) if got else None


class Extractor:
    def __init__(self, text: str, path: str, kernel: str | None = None, args: dict | None = None,
                 block_dim: int | None = None, tiles: int | None = None):
        self.path = path
        self.tiles = tiles
        try:
            self.m = parse_module(text, path)
        except IRError as err:
            raise SpecError(f"{path}: {err}") from None
        ks = self.m.kernels()
        if kernel:
            ks = [k for k in ks if kernel in k.name]
        if len(ks) != 1:
            names = ", ".join(k.name.lstrip("@") for k in self.m.kernels()) or "none"
            raise SpecError(f"{path}: {'no' if not ks else 'several'} kernel"
                            f"{'' if kernel is None else ' matching ' + repr(kernel)} (kernels: "
                            f"{names}); name one with --kernel")
        self.k = ks[0]
        self.debug = Debug(self.m)
        self.args = self._args(args or {})
        nvptx = "nvptx" in self.m.triple  # the target triple: the one place it names a backend
        self.backend = "nvidia" if nvptx else "amd"
        self.caps = backend(self.backend)
        self.ws = 32 if nvptx else 64  # warp / wavefront size
        bd = block_dim or self._block_dim()
        if bd is None:
            raise SpecError(f"{path}: the IR does not state the block size (no nvvm.maxntid); "
                            f"give it with --block-dim N")
        self.block_dim = bd
        cl = attr(self.m, self.k, "nvvm.cluster_dim")
        self.cluster, self.cdims = 1, (1, 1, 1)
        if cl:
            dims = [int(x) for x in cl.split(",")]
            self.cdims = tuple((dims + [1, 1, 1])[:3])
            self.cluster = self.cdims[0] * self.cdims[1] * self.cdims[2]

    def _args(self, given: dict) -> dict:
        out = {}
        names = self._param_names()
        for key, v in given.items():
            if key.isdigit():
                out[int(key)] = v
            elif key.lstrip("%").isdigit():
                out[int(key.lstrip("%"))] = v
            elif key in names:
                out[names.index(key)] = v
            else:
                raise SpecError(f"--arg {key}: the kernel's parameters are "
                                f"{', '.join(n or '%' + str(i) for i, n in enumerate(names))} "
                                f"(by name when the Mojo source is readable, else by position)")
        return out

    def _param_names(self) -> list:
        """Parameter names from the kernel's `def` line in its Mojo source, when readable."""
        n = len(self.k.params)
        sp = self.m.meta.get("!" + (self.k.dbg or ""), "")
        line = re.search(r"line: (\d+)", sp)
        f = re.search(r"file: !(\d+)", sp)
        if not line or not f:
            return [None] * n
        fm = self.m.meta.get("!" + f.group(1), "")
        fname = re.search(r'filename: "([^"]*)"', fm)
        dname = re.search(r'directory: "([^"]*)"', fm)
        import os
        cands = []
        if fname:
            cands = [fname.group(1), os.path.join(dname.group(1) if dname else "", fname.group(1)),
                     os.path.join(os.path.dirname(self.path), os.path.basename(fname.group(1)))]
        for c in cands:
            try:
                src = open(c).read().splitlines()
            except OSError:
                continue
            text = " ".join(src[int(line.group(1)) - 1:int(line.group(1)) + 5])
            got = re.search(r"def\s+\w+(?:\[[^\]]*\])?\((.*?)\)\s*(?:->|:|raises)", text)
            if got:
                names = [p.split(":")[0].strip() for p in got.group(1).split(",") if p.strip()]
                if len(names) == n:
                    return names
        return [None] * n

    def _block_dim(self):
        for key in ("nvvm.maxntid", "nvvm.reqntid"):
            v = attr(self.m, self.k, key)
            if v:
                d = [int(x) for x in v.split(",")]
                return d[0] * (d[1] if len(d) > 1 else 1) * (d[2] if len(d) > 2 else 1)
        v = attr(self.m, self.k, "amdgpu-flat-work-group-size")
        if v and v.split(",")[0] == v.split(",")[-1]:
            return int(v.split(",")[-1])
        return None

    def fail(self, err: IRError):
        inst = err.inst
        if inst is None:
            raise SpecError(f"{self.path}: {err}")
        op = self.describe(inst)
        line = self.m.lines[inst.index] if inst.index < len(self.m.lines) else 0
        raise SpecError(f"{op.where} ({self.path}:{line}, `{inst.text[:70]}`): {err}")

    # ------------------------------------------------------------ running
    thread = Thread           # the interpreter a warp's lanes run on
    FULL_WORDS, EMPTY_WORDS = FULL_WORDS, EMPTY_WORDS   # the pipeline methods that name a signal

    def seen(self, thread) -> None:
        """What a front end keeps of each warp's lane-0 run (the PTX reader: guessed arguments)."""

    def describe(self, inst, stack=()) -> Op:
        return describe(self.debug, inst, stack)

    def frame_names(self, inst, stack) -> list:
        return [short_name(n) for _, _, n in self.debug.stack(inst, stack)]

    def loops(self) -> dict:
        return {name: natural_loops(f) for name, f in self.m.functions.items()}

    def run(self) -> Kernel:
        loops = self.loops()
        warps = self.block_dim // self.ws
        per_cta = []
        try:
            for cta in range(self.cluster):
                runs = []
                for w in range(warps):
                    t, evs = run_warp(self.m, self.k, loops, w, cta, self.cdims, self.block_dim,
                                      self.args, self.ws, self.tiles, self.thread)
                    self.seen(t)
                    for r in evs:
                        r.iters = tuple(x for x in r.iters if x[0] not in t.spin)
                    runs.append(AgentRun((w,), cta, evs,
                                         {k: v for k, v in t.starts.items() if k not in t.spin},
                                         {k: v for k, v in t.ends.items() if k not in t.spin}))
                per_cta.append(runs)
        except IRError as err:
            self.fail(err)
        self.warpgroups = self._uses(("setmaxnreg",))
        return self._kernel(per_cta)

    def _uses(self, words) -> bool:
        for f in self.m.functions.values():
            for b in f.blocks.values():
                for inst in b:
                    if inst.opcode == "call" and any(w in inst.text for w in words):
                        return True
        return False

    # ------------------------------------------------------------ barriers
    def _barriers(self, per_cta):
        bars = {}
        sync = ("init", "wait", "try", "arrive", "expect", "copy", "commit", "poll", "atomic")
        for runs in per_cta[:1]:
            for run in runs:
                for r in run.events:
                    if r.kind not in sync:
                        continue
                    a = r.extra[0] if r.kind == "copy" else r.addr
                    if not isinstance(a, Ptr) or not isinstance(a.offset, int):
                        if r.kind in ("poll", "atomic") and not isinstance(a, Ptr):
                            continue
                        self.fail(IRError("a barrier address pipeproof cannot evaluate", r.inst))
                    key = (a.base[1] if a.base[0] == "global" else a.base, a.offset)
                    b = bars.setdefault(key, Barrier(key, None, None))
                    if r.kind == "init":
                        b.count = r.value
                        b.init = r
                    names = self.frame_names(r.inst, r.stack)
                    sig = FULL if any(n in self.FULL_WORDS for n in names) else \
                        EMPTY if any(n in self.EMPTY_WORDS for n in names) else None
                    if sig and r.kind in ("wait", "poll", "arrive", "atomic", "try"):
                        b.signal = b.signal or sig
        return bars

    def _kernel(self, per_cta) -> Kernel:
        bars = self._barriers(per_cta)
        runs0 = per_cta[0]
        # signals not named by a backend method: what completes the barrier
        for runs in per_cta[:1]:
            for run in runs:
                for r in run.events:
                    if r.kind in ("copy", "expect"):
                        a = r.extra[0] if r.kind == "copy" else r.addr
                        b = bars.get((a.base[1] if a.base[0] == "global" else a.base, a.offset))
                        if b and b.signal is None:
                            b.signal = FULL
        # barriers no run touched (a short trip count): the signal of those from the same init
        # (a barrier some run does use keeps no signal here: the CuTe DSL initialises a ring's
        # full and empty barriers at one line, and its empty ones are told by their place)
        used = set()
        for runs in per_cta[:1]:
            for run in runs:
                for r in run.events:
                    a = r.extra[0] if r.kind == "copy" else r.addr
                    if r.kind != "init" and isinstance(a, Ptr) and isinstance(a.offset, int):
                        used.add((a.base[1] if a.base[0] == "global" else a.base, a.offset))
        by_site = {}
        for b in bars.values():
            if b.signal and b.init is not None:
                by_site.setdefault(b.init.inst.dbg, set()).add(b.signal)
        for key, b in bars.items():
            if b.signal is None and b.init is not None and key not in used \
                    and len(by_site.get(b.init.inst.dbg, ())) == 1:
                b.signal = next(iter(by_site[b.init.inst.dbg]))
        if self.caps.counters:
            # AMD counters: the storage array holds full[0..n) then empty[0..n)
            for key, b in bars.items():
                if b.signal is None:
                    raise SpecError(f"{self.path}: the counter at {key[0]}+{key[1]} is not used "
                                    f"through a PipelineBackend method; pipeproof cannot tell its "
                                    f"signal")
        # arrays: runs of consecutive barriers (8 bytes apart) of one signal and one init site
        arrays = []
        keys = sorted(bars, key=lambda k: (str(k[0]), k[1]))
        cur = None
        for k in keys:
            b = bars[k]
            if b.signal is None and b.init is None:
                raise SpecError(f"{self.path}: the barrier at {k[0]}+{k[1]} is used but never "
                                f"initialised (mbarrier.init)")
            site = b.init.inst.dbg if b.init else None
            if cur and cur.base[0] == k[0] and k[1] == cur.base[1] + 8 * cur.slots \
                    and cur.signal == b.signal and cur.count == b.count \
                    and (cur.site == site or next_line(cur.last_site, site)):
                cur.slots += 1
                cur.barriers.append(b)
            else:
                cur = Array(f"{b.signal}@{k[1]}", 1, b.signal, b.count, k, [b])
                cur.site = site
                arrays.append(cur)
            cur.last_site = site
        self._unnamed_signals(arrays)
        if self.caps.counters:
            self._amd_arrays(arrays, bars)
        by_addr = {}
        for arr in arrays:
            for i, b in enumerate(arr.barriers):
                by_addr[b.addr] = (arr, i)
        # rings: a full array and the empty array right after it
        pairs = {}
        for arr in arrays:
            if arr.signal == FULL:
                nxt = next((e for e in arrays if e.signal == EMPTY and e.base[0] == arr.base[0]
                            and e.base[1] == arr.base[1] + 8 * arr.slots and e.slots == arr.slots), None)
                pairs[arr] = nxt
        for arr in arrays:
            if arr.signal == EMPTY and arr not in pairs.values():
                pairs[arr] = None
        self.by_addr = by_addr
        parts = self._partitions(per_cta)
        data = {}
        return Kernel(self.path, self.k.name.lstrip("@"), self.backend,
                      self.cluster, self.block_dim, parts, arrays, pairs, data, [], self.m.globals,
                      self.ws, self.tiles)

    def _unnamed_signals(self, arrays):
        """Barrier arrays no PipelineBackend method names and no TMA copy completes (raw
        SharedMemBarrier arrays: sm100's CLC response ring, the TMEM-dealloc barrier). An array
        right after a full array of as many barriers is that ring's empty array (the
        PipelineBackend layout: full[0..n) then empty[0..n)); any other is the full signal of a
        ring of its own with no empty signal (its arrivals are what its waits wait for: a
        barrier's rule is the same whatever the ring calls it)."""
        for i, arr in enumerate(arrays):
            if arr.signal is not None:
                continue
            prev = arrays[i - 1] if i else None
            if prev is not None and prev.signal == FULL and prev.slots == arr.slots \
                    and prev.base[0] == arr.base[0] and arr.base[1] == prev.base[1] + 8 * prev.slots:
                arr.signal = EMPTY
            else:
                arr.signal = FULL
            arr.name = f"{arr.signal}@{arr.base[1]}"
            for b in arr.barriers:
                b.signal = arr.signal

    def _amd_arrays(self, arrays, bars):
        """Counters of the AmdCounterBackend: the storage global is 2n Int64, full then empty,
        so a ring has n stages even when a short trip count touches fewer of them."""
        for arr in arrays:
            g = arr.base[0]
            space, t = self.m.globals.get(g, (3, None))
            n = t.count if t is not None and t.kind == "array" else None
            if n and n % 2 == 0:
                stages = n // 2
                if arr.signal == FULL and arr.base[1] == 0:
                    arr.slots = max(arr.slots, stages)
                elif arr.signal == EMPTY and arr.base[1] == 8 * stages:
                    arr.slots = max(arr.slots, stages)

    # ------------------------------------------------------------ agents and roles
    def _agents(self, runs):
        if not self.warpgroups:
            return runs
        out = []
        for g in range(0, len(runs), 4):
            group = runs[g:g + 4]
            events, seen = [], {}
            for run in group:
                for r, k in zip(run.events, _keys(run.events)):
                    if k in seen:
                        if r.kind in ("arrive", "expect", "atomic"):
                            seen[k].lanes += r.lanes
                            if r.targets:
                                t = dict(seen[k].targets or {})
                                for c, n in r.targets.items():
                                    t[c] = t.get(c, 0) + n
                                seen[k].targets = t
                        continue
                    seen[k] = r
                    events.append(r)
            events.sort(key=lambda r: r.seq)
            out.append(AgentRun(tuple(w for run in group for w in run.warps), group[0].cta, events,
                                group[0].starts, group[0].ends))
        return out

    def _partitions(self, per_cta):
        """Roles: agents of one CTA with equal programs. In a cluster, an op's target CTAs
        (mapa, multicast masks, per-lane remote arrivals) are absolute in each CTA's run; a
        role's program is the same in every CTA where each op's targets read as one relative
        target, `self`, `peer` ((c+1) mod K), `leader` (CTA 0) or `all`, in every CTA. A program
        some CTAs only run is a role with `ctas = [..]`."""
        K = self.cluster
        names = ("self", "peer", "leader", "all")

        def cands(c, tgt):
            if tgt is None:  # not a barrier op (named barriers, loads, stores): its own CTA
                return {"self"}
            rel = {"self": frozenset({c}), "peer": frozenset({(c + 1) % K}),
                   "leader": frozenset({0}), "all": frozenset(range(K))}
            return {n for n in names if rel[n] == tgt}

        def sig_of(evs):
            return tuple((e.kind, e.op, e.value, e.barrier and (id(e.barrier.array), e.barrier.index),
                          e.extra if e.kind in ("csync",) else ()) for e in evs)

        groups = {}   # sig -> {cta: [(agent, evs)]}
        order = []
        for runs in per_cta:
            for agent in self._agents(runs):
                # mbarrier.init is not a program op (the model starts with every barrier
                # initialised; the counts are read in _barriers): the warp that initialises
                # the barriers runs the same program as its peers
                evs = [e for e in self._events(agent) if e.kind != "init"]
                if not evs:
                    continue
                sig = sig_of(evs)
                if sig not in groups:
                    groups[sig] = {}
                    order.append(sig)
                groups[sig].setdefault(agent.cta, []).append((agent, evs))
        parts = []
        unit = "wg" if self.warpgroups else "warp"
        for sig in order:
            per = groups[sig]
            ctas = sorted(per)
            sizes = {len(g) for g in per.values()}
            first_cta = ctas[0]
            agent, evs = per[first_cta][0]
            if len(sizes) != 1:
                raise SpecError(f"{self.path}: the program of {unit} {agent.warps[0]} "
                                f"({evs[0].op.where}) runs in a different number of agents in "
                                f"different CTAs of the cluster: not expressible yet")
            if K > 1:
                for i, ev in enumerate(evs):
                    ok = set(names)
                    for c in ctas:
                        for _, evs_c in per[c]:
                            ok &= cands(c, evs_c[i].tgt)
                    if not ok:
                        raise SpecError(
                            f"{ev.op.where} ({self.path}, {ev.op.name}): this {ev.kind} lands on CTAs "
                            + ", ".join(f"{sorted(per[c][0][1][i].tgt or {c})} from CTA {c}" for c in ctas)
                            + ": not one of to=self/peer/leader/all in every CTA")
                    name = next(n for n in names if n in ok)
                    ev.suffix = "" if name == "self" else f"to={name}"
            group = per[first_cta]
            first = agent.warps[0] // (4 if self.warpgroups else 1)
            name = f"{unit}{first}" + (f"_x{len(group)}" if len(group) > 1 else "")
            if len(ctas) < K:
                name += "_cta" + "".join(str(c) for c in ctas)
            p = Partition(name, len(group), evs, *trim_loops(agent, evs))
            p.ctas = ctas if len(ctas) < K else None
            parts.append(p)
        return parts

    def _events(self, agent) -> list:
        out = []
        for r in agent.events:
            if r.kind in ("load", "store", "mma", "sync", "bar_arrive", "csync"):
                if r.kind in ("sync", "bar_arrive", "csync"):
                    out.append(Event(r.kind, self.describe(r.inst, r.stack), None,
                                     r.value, None, r.iters, (r.addr,), r.seq))
                    out[-1].tgt = None
                elif r.kind in ("load", "store"):
                    out.append(Event(r.kind, self.describe(r.inst, r.stack), None, 0,
                                     r.addr, r.iters, (), r.seq))
                continue
            if r.kind == "atomic":
                if r.extra != "add" or not isinstance(r.value, int):
                    self.fail(IRError(f"an atomic {r.extra} on a counter: only add is read", r.inst))
            a = r.extra[0] if r.kind == "copy" else r.addr
            if not isinstance(a, Ptr):
                continue
            key = (a.base[1] if a.base[0] == "global" else a.base, a.offset)
            if key not in self.by_addr:
                continue
            arr, idx = self.by_addr[key]
            op = self.describe(r.inst, r.stack)
            ev = Event(r.kind, op, Ref(arr, idx), 0, None, r.iters, (), r.seq)
            c = agent.cta
            ev.tgt = frozenset({a.cta if a.cta is not None else c})
            lanes = r.lanes
            if r.kind in ("arrive", "atomic", "expect") and r.targets and len(r.targets) > 1:
                # lanes that land on different CTAs (mapa per lane): one op per CTA they reach
                per = set(r.targets.values())
                if len(per) != 1:
                    self.fail(IRError(f"an {r.kind} whose lanes land on CTAs {sorted(r.targets)} "
                                      f"unevenly: not expressible", r.inst))
                ev.tgt, lanes = frozenset(r.targets), per.pop()
            elif r.kind in ("arrive", "atomic", "expect") and r.targets:
                ev.tgt = frozenset(r.targets)
            if r.kind == "commit" and r.extra is not None and self.cluster > 1:
                # tcgen05.commit.multicast: the CTAs of its mask
                if not isinstance(r.extra, int):
                    self.fail(IRError("a commit multicast mask pipeproof cannot evaluate", r.inst))
                ev.tgt = frozenset(i for i in range(self.cluster) if r.extra >> i & 1)
            if r.kind == "copy" and r.extra[1] == "all" and self.cluster > 1:
                ev.tgt = frozenset(range(self.cluster))   # clusterlaunchcontrol ...multicast::cluster::all
            elif r.kind == "copy" and r.extra[1] is not None and self.cluster > 1:
                m = r.extra[1]
                if not isinstance(m, int):
                    self.fail(IRError("a multicast mask pipeproof cannot evaluate", r.inst))
                ev.tgt = frozenset(i for i in range(self.cluster) if m >> i & 1)
                if "cta_group::2" in r.inst.text:
                    # sm100 2-SM: each CTA of the mask gets the tile, and the complete_tx goes to
                    # its pair's leader (the barrier address with the peer bit cleared), whose MMA
                    # reads both halves: stated as a copy into the leader's slot (another part)
                    ev.tgt = frozenset(i & ~1 for i in ev.tgt)
            if r.kind in ("wait", "try", "poll") and a.cta is not None and a.cta != c:
                self.fail(IRError("a wait on another CTA's barrier", r.inst))
            if r.kind == "init":
                ev.value = r.value
            elif r.kind in ("wait", "try"):
                if not isinstance(r.value, int):
                    self.fail(IRError("a wait parity pipeproof cannot evaluate", r.inst))
                ev.value = r.value & 1
            elif r.kind == "poll":
                ev.kind = "wait"
                ev.value = ("threshold", r.value)
            elif r.kind in ("arrive", "atomic"):
                if not isinstance(r.value, int):
                    self.fail(IRError("an arrive count pipeproof cannot evaluate", r.inst))
                ev.kind = "arrive"
                ev.value = r.value * lanes
            elif r.kind == "expect":
                if not isinstance(r.value, int):
                    self.fail(IRError("expect_tx bytes pipeproof cannot evaluate", r.inst))
                if lanes != 1:
                    self.fail(IRError(f"{'' if r.extra == 'bare' else 'arrive.'}expect_tx by "
                                      f"{r.lanes} lanes of one warp: not expressible yet", r.inst))
                ev.value = r.value
                ev.extra = ("bare",) if r.extra == "bare" else ()   # mbarrier.expect_tx: no arrival
            elif r.kind == "copy":
                if r.lanes != 1:
                    self.fail(IRError(f"a TMA copy by {r.lanes} lanes of one warp: not "
                                      f"expressible yet", r.inst))
                ev.buffer = r.addr
                ev.extra = (r.extra[1] if self.cluster == 1 else None, r.inst)
                ev.clc = len(r.extra) > 2   # clusterlaunchcontrol.try_cancel: a 16-byte response
            elif r.kind == "commit":
                ev.extra = (r.extra,)
            out.append(ev)
        return out
