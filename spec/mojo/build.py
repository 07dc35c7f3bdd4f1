"""A Mojo kernel's partitions (spec/mojo/parse.py) to a spec, through the front-end core
(spec/frontend_core.py). What differs from Triton: a ring is a pair of barrier arrays (full,
empty: the PipelineBackend storage), so both signals and both counts are the kernel's; the
backend is nvidia or amd; reads are placed after each wait on a ring's full signal (wgmma and
tcgen05 read shared memory through descriptors, not loads); a TMA copy's bytes are the
distance between its destinations in consecutive slots; plain shared-memory stores and loads
into a ring's buffer are `write` and `read` of the slot their offset falls in."""
from __future__ import annotations

from math import gcd

from pipeproof.backends.capabilities import backend
from pipeproof.spec.frontend_core import EMPTY, FULL, Builder, Ring, ident
from pipeproof.spec.mojo.nest import nest_items, nest_main, nest_text, tile_sections
from pipeproof.spec.mojo.parse import Data, Event, Kernel, Partition, Ref
from pipeproof.spec.schema import SpecError


CLUSTER = ("cluster barrier",)   # the key of the ring that states barrier.cluster


class NotExpressible(SpecError):
    """The kernel was read, but the spec language cannot state it yet (exit 2, one line)."""


class MojoBuilder(Builder):
    TOOL = "pipeproof mojo"
    COMMIT_FULL = True   # tcgen05.commit onto full: sm100's accumulator ring (release_from_mma)
    ONE_STAGE_LAP = True  # conv2d's LoadOrderBarrier: one barrier, a parity toggled per tile
    HEADER = ("# Rings are the kernel's PipelineBackend barrier pairs (full, empty); roles its",
              "# warp (or warpgroup) programs. Each op's Mojo line is in the comment after it.")
    START_OP = "start"

    def __init__(self, kernel: Kernel, name: str):
        self.kernel = kernel
        super().__init__(kernel.path, [], name, lambda op: op.where)
        self.data = {}
        self.barrier_counts = {}
        self.cluster_agents = 0
        self.nest = None   # a Nest (spec/mojo/nest.py) when roles run as tiles of k-blocks
        self.role_k = None  # the k_blocks of the role being built (nested loops)

    # ------------------------------------------------------------ rings
    def _rings(self):
        k = self.kernel
        names = set()
        self.sig = {}
        for arr, empty in k.pairs.items():
            stages = arr.slots
            name = ident(f"ring{arr.base[1]}")
            while name in names:
                name += "_"
            names.add(name)
            ring = Ring(name, stages, arr.signal, arr.count or 1, arr)
            ring.counts = {arr.signal: arr.count}
            self.rings[arr] = ring
            self.sig[arr] = arr.signal
            if empty is not None:
                self.rings[empty] = ring
                self.sig[empty] = EMPTY
                ring.counts[EMPTY] = empty.count
            self.data[ring.name] = Data(ring.name, stages)
        if self.cluster_agents:
            ring = Ring("cluster_barrier", 1, FULL, self.cluster_agents, CLUSTER)
            ring.counts = {FULL: self.cluster_agents, EMPTY: 1}
            self.rings[CLUSTER] = ring
            self.sig[CLUSTER] = FULL
            self.cluster_ring = ring
        if not self.rings:
            raise SpecError(f"{self.path}: the kernel uses no mbarrier or pipeline counter: "
                            f"nothing to check")
        self.by_name = {r.name: r for r in self.rings.values()}
        # the main ring: the first that copies or writes fill
        filled = [self.rings[ev.barrier.array] for p in self.parts for ev in p.events
                  if ev.kind in ("copy", "write") and ev.barrier is not None]
        self.main = filled[0] if filled else next(iter(self.rings.values()))
        for arr in self.rings:
            self.owner[("data", self.rings[arr].name)] = arr if self.sig[arr] == FULL else \
                self.owner.get(("data", self.rings[arr].name), arr)

    def signal_of(self, array) -> str:
        return self.sig[array]

    def ring_counts(self, ring) -> tuple:
        pac = ring.counts.get(FULL, 1)
        cac = ring.counts.get(EMPTY, 1)
        if backend(self.kernel.backend).counters:
            pac, cac = self.amd_counts[ring.name]
        return pac, cac

    def pipeline_lines(self) -> list:
        lines = [f'backend = "{self.kernel.backend}"']
        if self.kernel.cluster > 1:
            lines.append(f"cluster_size = {self.kernel.cluster}")
        return lines

    def _warps(self, p) -> int:
        return p.warps

    def fail(self, ev, what: str):
        raise SpecError(f"{ev.op.where} ({self.path}, {ev.op.name}): {what}")

    def _ops(self, ev):
        if ev.kind == "sync":
            return [(None, None, None, f"sync {ev.extra[0]}")]
        if ev.kind == "bar_arrive":   # bar.arrive: an arrival that does not wait (sm100's MMA warp)
            return [(None, None, None, f"sync_arrive {ev.extra[0]}")]
        if ev.kind == "write":
            return [(self.rings[ev.barrier.array], ev.buffer.index, None, "write")]
        if ev.kind == "csync":
            # barrier.cluster arrive / wait: the cluster ring (cluster_barrier below)
            ring = self.cluster_ring
            if ev.extra[0] == "wait":
                return [(ring, 0, 0, "wait_full")]
            return [(ring, 0, None, "arrive_full to=all" if self.kernel.cluster > 1 else "arrive_full")]
        out = super()._ops(ev)
        if ev.kind in ("copy", "arrive", "expect", "commit") and ev.suffix:
            out = [(r, s, ph, t + " " + ev.suffix) for r, s, ph, t in out]
        return out

    def _role(self, p):
        self.role_k = self.nest.role_k.get(p.name) if self.nest is not None else None
        r = super()._role(p)
        r["ctas"] = p.ctas
        return r

    def _period(self, item_e) -> int:
        """Nested loops: period K_r where every tile reads alike, the last tile's items
        lacking only the advances toward a next use that never comes (spec/mojo/nest.py)."""
        k = self.role_k
        if k is None or len(item_e) <= k:
            return super()._period(item_e)
        n = len(item_e)
        if all(self._same(item_e[i], item_e[i + k], i + k >= n - k) for i in range(n - k)):
            return k
        return super()._period(item_e)

    def _complete_tail(self, item_e, period, state):
        k = self.role_k
        if k is None or period != k or len(item_e) <= k:
            return super()._complete_tail(item_e, period, state)
        for i in range(len(item_e) - k, len(item_e)):   # the last tile's items
            self._complete(item_e[i], item_e[i - k], state)


def prepare(kernel: Kernel) -> None:
    """Turn the reader's raw events into the core's vocabulary, in place: waits with phases,
    copies with bytes and slots, reads after full waits, writes/reads of plain stores/loads,
    named barriers; and refuse (NotExpressible) what the ops cannot state."""
    arrays = {}
    for full, empty in kernel.pairs.items():
        arrays[full] = (full, empty)
        if empty is not None:
            arrays[empty] = (full, empty)
    # Which rings carry data: those a copy, a plain store or a commit onto full fills. A wait on
    # the full signal of any other ring (sm100's TMEM-dealloc barrier) is a wait, not a read.
    filled = set()
    for p in kernel.partitions:
        for ev in p.events:
            if ev.kind == "copy" or ev.kind == "commit" and ev.barrier.array.signal == FULL:
                filled.add(arrays[ev.barrier.array][0])
            elif ev.kind == "store":
                filled.update(full for full, _ in kernel.pairs.items())
    # sm100 2-SM: the leader's MMAs write the accumulator into both CTAs' TMEM and its commit
    # onto full is multicast; a spec `write` lands in the writer's CTA only, so the other
    # CTA's epilogue would read a slot nothing fills (a false read_before_fill). Reads of such
    # a ring are not placed (its barriers are still checked; docs/mojo.md).
    multicast_filled = {arrays[ev.barrier.array][0] for p in kernel.partitions for ev in p.events
                        if ev.kind == "commit" and ev.barrier.array.signal == FULL
                        and ev.tgt is not None and len(ev.tgt) > 1}
    filled -= multicast_filled
    # Rings an agent releases with tcgen05.commit (sm100's input ring): its reads are the
    # tensor core's, asynchronous; the commit fires once they have finished (read_async).
    committed = {p.name: {arrays[ev.barrier.array][0] for ev in p.events
                          if ev.kind == "commit" and ev.barrier.array.signal == EMPTY}
                 for p in kernel.partitions}
    stride = copy_strides(kernel)
    # AMD thresholds -> phases; counts from the first lap's thresholds
    for p in kernel.partitions:
        ring_of = {}
        new = []
        last_ring = None
        explicit = set()
        for ev in p.events:
            if ev.kind == "commit" and ev.barrier.array.signal == FULL \
                    and ev.barrier.array not in multicast_filled:
                # tcgen05.commit onto full (sm100's accumulator ring, release_from_mma): the
                # MMAs it tracks wrote the slot; the write is stated at the commit, so it carries
                # the item the commit is issued in, the item the reader pairs with
                full = ev.barrier.array
                new.append(Event("write", ev.op, Ref(full, ev.barrier.index), 0,
                                 Ref(("data", full.base[1]), ev.barrier.index), ev.iters, (),
                                 ev.seq, ""))
                new.append(ev)
                continue
            if ev.kind == "copy":
                b = 16 if getattr(ev, "clc", False) else stride.get((ev.op.where, ev.op.name), 0)
                if b <= 0:
                    raise NotExpressible(
                        f"{ev.op.where} ({kernel.path}, {ev.op.name}): the bytes of this TMA copy "
                        f"(its destination's stride between slots) cannot be read: it fills one "
                        f"slot only at these trip counts; give a trip count of at least two laps")
                mask = ev.extra[0]
                if mask is not None and kernel.cluster == 1 and mask != 1:
                    # (mask 1, the CTA itself: sm100's load helper multicasts in every kernel)
                    raise NotExpressible(f"{ev.op.where} ({kernel.path}): a multicast TMA copy "
                                         f"in a one-CTA kernel (mask {mask!r})")
                full, _ = arrays[ev.barrier.array]
                ev.value = b
                ev.buffer = Ref(("data", full.base[1]), ev.barrier.index)
                new.append(ev)
                continue
            if ev.kind in ("store", "load"):
                ring = last_ring
                a = ev.buffer
                if ring is None or not isinstance(getattr(a, "offset", None), int) \
                        or a.base[0] != "global":
                    continue
                size = buffer_bytes(kernel, a.base[1])
                full = ring
                if not size or size % full.slots:
                    continue
                slot = a.offset // (size // full.slots)
                kind = "write" if ev.kind == "store" else "read"
                if new and new[-1].kind == kind and new[-1].buffer.index == slot and kind == "write":
                    continue
                if kind == "read" and new and new[-1].kind == "read" and getattr(new[-1], "auto", False):
                    new.pop()
                if kind == "read" and new and new[-1].kind == "read" and new[-1].buffer.index == slot:
                    continue
                new.append(Event(kind, ev.op, Ref(full, slot) if kind == "write" else None, 0,
                                 Ref(("data", full.base[1]), slot), ev.iters, (), ev.seq, ""))
                continue
            new.append(ev)
            if ev.barrier is not None and ev.kind in ("wait", "arrive"):
                last_ring = arrays[ev.barrier.array][0]
            if ev.kind == "wait" and ev.barrier is not None and ev.barrier.array.signal == FULL \
                    and ev.barrier.array in filled:
                data = Ref(("data", ev.barrier.array.base[1]), ev.barrier.index)
                if ev.barrier.array in committed[p.name]:
                    auto = Event("read_async", ev.op, None, 0, None, ev.iters, (data,), ev.seq, "")
                else:
                    auto = Event("read", ev.op, None, 0, data, ev.iters, (), ev.seq, "")
                auto.auto = True
                new.append(auto)
            if ev.kind == "sync":
                pass
        p.events = drop_own_fill_waits(p, new, arrays)
        del ring_of


def copy_strides(kernel: Kernel) -> dict:
    """Copy bytes: per copy instruction (its Mojo line and name), the stride of its destination
    between slots (0: it fills one slot only; -1: the offsets are not one stride apart)."""
    dst = {}
    for p in kernel.partitions:
        for ev in p.events:
            if ev.kind == "copy":
                dst.setdefault((ev.op.where, ev.op.name), {}).setdefault(ev.barrier.index, set()).add(
                    ev.buffer.offset if ev.buffer is not None else None)
    stride = {}
    for k, by_slot in dst.items():
        pts = sorted((s, o) for s, offs in by_slot.items() for o in offs if isinstance(o, int))
        g = 0
        for (s0, o0), (s1, o1) in zip(pts, pts[1:]):
            if s1 != s0:
                d = (o1 - o0)
                if d % (s1 - s0):
                    g = -1
                    break
                g = gcd(g, abs(d // (s1 - s0)))
        # the PTX reader's bytes from where the copies into one slot land (`copy_bytes`)
        stride[k] = getattr(kernel, "copy_bytes", {}).get(k, g)
    return stride


def drop_own_fill_waits(p, events, arrays):
    """A warp that both fills a ring and waits on its full signal holds two pipeline states of
    that ring (sm100's CLC scheduler: producer state at phase 1, consumer state at phase 0, in
    lockstep). A model agent has one stage and phase per ring, and moving it between the two
    states takes `reset`s that put the phase-alias window on the wrong lap (a false phase_alias
    from three tiles on). Its waits on that full signal (and the reads placed at them) are
    dropped; its arrivals are kept. Dropping a wait only adds interleavings (the agent may go on
    before the signal), so no violation of the kernel is lost; the agent's own read of the slot
    is not checked (docs/mojo.md)."""
    own = {arrays[ev.barrier.array][0] for ev in events
           if ev.kind in ("copy", "expect") and ev.barrier is not None}
    out, skip_read = [], False
    for ev in events:
        if ev.kind == "wait" and ev.barrier is not None and ev.barrier.array.signal == FULL \
                and ev.barrier.array in own:
            skip_read = True
            continue
        if skip_read and getattr(ev, "auto", False):
            skip_read = False
            continue
        skip_read = False
        out.append(ev)
    return out


def check_pairing(kernel: Kernel) -> None:
    """The model tags a fill with its agent's item number and a read expects its agent's: that
    pairs a ring's fills and reads only when every reader reads as many slots as the fillers
    fill (per kernel run). Where they differ (a producer whose item is a group of stages and a
    consumer whose item is another), refuse rather than check a mispaired spec."""
    fills, reads = {}, {}
    for p in kernel.partitions:
        last = None
        for ev in p.events:
            if ev.kind in ("copy", "write") and ev.buffer is not None:
                key = (ev.buffer.array, ev.buffer.index)
                if key != last:
                    per = fills.setdefault(ev.buffer.array, {})
                    per[p.name] = per.get(p.name, 0) + 1
                last = key
            elif ev.kind in ("wait", "advance"):
                last = None
            data = data_ref(ev)
            if ev.kind in ("read", "read_async") and data is not None:
                reads.setdefault(data.array, {})[p.name] = reads.setdefault(data.array, {}).get(p.name, 0) + 1
    for ring, per_role in reads.items():
        # one filler role per CTA program (a cluster's CTAs may fill through different roles)
        ns = set(fills.get(ring, {}).values())
        n = max(ns) if ns else 0
        for role, r in per_role.items():
            if ns and (len(ns) > 1 or r != n):
                raise NotExpressible(
                    f"{kernel.path}: ring {ring[1] if isinstance(ring, tuple) else ring}: the fillers "
                    f"fill {n} slots and role {role} reads {r}: item structures that differ between "
                    f"roles (a fill's item is not its read's) are not expressible yet (docs/mojo.md)")


def data_ref(ev):
    """The slot a data op touches (a read_async names its slot in `extra`)."""
    if ev.kind == "read_async":
        return ev.extra[0] if ev.extra else None
    return ev.buffer


def buffer_bytes(kernel, name):
    if hasattr(kernel, "buffer_sizes"):   # the PTX reader: the .shared arrays' sizes
        return kernel.buffer_sizes.get(name) or 0
    t = kernel.globals.get(name, (0, None))[1]
    from pipeproof.spec.mojo.llvm import size_of
    return size_of(t) if t is not None else 0


def to_core(kernel: Kernel, b: MojoBuilder) -> None:
    """Map data refs to the builder's owner table (buffer array -> full barrier array)."""
    def core_ref(ref):
        if ref is None or not isinstance(ref.array, tuple):
            return ref
        full = next(a for a in kernel.pairs if a.signal == FULL and a.base[1] == ref.array[1])
        key = ("data", b.rings[full].name)
        b.owner[key] = full
        return Ref(key, ref.index)

    for p in kernel.partitions:
        for ev in p.events:
            ev.buffer = core_ref(ev.buffer)
            if ev.kind == "read_async":
                ev.extra = tuple(core_ref(r) for r in ev.extra)


def amd_phases(kernel: Kernel, b: MojoBuilder) -> None:
    """AmdCounterBackend waits are thresholds: full T = (phase + 1) * producer_arrivals, empty
    T = (phase - 1) * consumer_arrivals (UInt32 arithmetic). The counts are the smallest
    positive thresholds (the first lap); the phase of each wait follows."""
    counts = {}
    for p in kernel.partitions:
        for ev in p.events:
            if ev.kind == "wait" and isinstance(ev.value, tuple):
                ring = b.rings[ev.barrier.array]
                t = ev.value[1]
                if t > 0:
                    c = counts.setdefault(ring.name, {FULL: 0, EMPTY: 0})
                    sig = b.sig[ev.barrier.array]
                    c[sig] = t if not c[sig] else min(c[sig], t)
    b.amd_counts = {}
    for ring in b.by_name.values():
        c = counts.get(ring.name, {FULL: 0, EMPTY: 0})
        arrivals = {}
        for p in kernel.partitions:
            for ev in p.events:
                if ev.kind == "arrive" and b.rings.get(ev.barrier.array) is ring:
                    sig = b.sig[ev.barrier.array]
                    arrivals[sig] = arrivals.get(sig, 0) + ev.value * p.warps
        pac = c[FULL] or 1
        cac = c[EMPTY] or max(1, arrivals.get(EMPTY, 0) // max(1, ring.stages) or 1)
        b.amd_counts[ring.name] = (pac, cac)
    for p in kernel.partitions:
        for ev in p.events:
            if ev.kind == "wait" and isinstance(ev.value, tuple):
                ring = b.rings[ev.barrier.array]
                pac, cac = b.amd_counts[ring.name]
                t = ev.value[1] & 0xFFFFFFFF
                if b.sig[ev.barrier.array] == FULL:
                    if t % pac:
                        b.fail(ev, f"wait_full threshold {t} is not a multiple of the count {pac}")
                    ev.value = (t // pac - 1) % 2
                else:
                    if t % cac:
                        b.fail(ev, f"wait_empty threshold {t} is not a multiple of the count {cac}")
                    ev.value = (t // cac + 1) % 2


def build(kernel: Kernel, name: str, builder=None):
    """(TOML text, SourceMap); `builder` a MojoBuilder subclass (the PTX reader's names its tool)."""
    prepare(kernel)
    check_pairing(kernel)
    b = (builder or MojoBuilder)(kernel, name)
    b.parts = kernel.partitions
    drop_start_barrier(kernel)
    drop_start_cluster_barrier(kernel)
    if any(ev.kind == "csync" for p in kernel.partitions for ev in p.events):
        # every agent of every CTA arrives once on each CTA's cluster barrier per use
        b.cluster_agents = sum(p.warps * (len(p.ctas) if p.ctas else kernel.cluster)
                               for p in kernel.partitions)
        uses = {sum(1 for ev in p.events if ev.kind == "csync" and ev.extra[0] != "wait")
                for p in kernel.partitions}
        if len(uses) != 1 or uses != {1}:
            p = next(p for p in kernel.partitions)
            raise NotExpressible(f"{kernel.path}: the cluster barrier (barrier.cluster) is used "
                                 f"{sorted(uses)} times by different roles after the start: only one "
                                 f"use by every agent (the kernel's end) is expressible")
    named_barriers(kernel, b)
    split_unrolled_items(kernel, b)
    outer_tail_in_last_item(kernel, b)
    align_items(kernel, b)
    b._rings_done = False
    orig = b._rings

    def rings():
        orig()
        if b.nest is not None:
            b.main = nest_main(b, b.nest)
        to_core(kernel, b)
        if backend(kernel.backend).counters:
            amd_phases(kernel, b)
    b._rings = rings
    text, source = b.toml()
    if b.nest is not None:
        text = tile_sections(nest_text(text, b, b.nest), source, b.nest)
    if b.barrier_counts:
        extra = []
        for bar, n in b.barrier_counts.items():
            extra += [f"[barrier.{bar}]", f"count = {n}", ""]
        cut = text.index("[[role]]")
        text = text[:cut] + "\n".join(extra) + text[cut:]
    if backend(kernel.backend).counters:
        # exact phases: the builder follows parity; a counter wait names its lap exactly
        check_amd_exact(kernel, b)
    return text, source


def drop_start_barrier(kernel: Kernel) -> None:
    """A CTA-wide bar.sync that every modelled agent passes before its first pipeline op (the
    one after the barriers are initialised) orders nothing the model does not: all agents start
    at once with the barriers initialised. Dropped."""
    firsts = [next((e for e in p.events if e.kind != "init"), None) for p in kernel.partitions]
    if firsts and all(e is not None and e.kind == "sync" for e in firsts) and \
            len({e.extra[0] for e in firsts}) == 1:
        for p in kernel.partitions:
            first = next(e for e in p.events if e.kind != "init")
            p.events.remove(first)


def split_unrolled_items(kernel: Kernel, b: MojoBuilder) -> None:
    """One item per k-iteration. Mojo's sm90 loops step over the k-tiles a lap at a time and
    unroll the stages at compile time (`for j in range(num_pipeline_stages)` under `comptime`),
    so one iteration of the IR's loop is `stages` k-iterations, each `wait ... advance`. Where
    every iteration of a role's item loop is a run of groups that each start with the same wait
    (the same op at the same Mojo line) and read alike (the same ops, lines and values; only
    the stage and the wait's parity differ), each group is made its own item, and iterations
    with no ops (the loop's last header test) are not items. The spec then has one item per
    k-iteration (items = the k-tiles) and a body of one wait/copy/advance, as the kernel reads.
    The ops and their order are unchanged: each agent runs the same sequence, so the verdict
    is the same. Roles whose iterations do not split so are left as they are."""
    def sig(ev):
        return (ev.kind, ev.op.where, ev.op.name, None if ev.kind == "wait" else ev.value, ev.suffix)

    for p in kernel.partitions:
        loop = b._item_loop(p)
        if loop is None or loop not in p.starts:
            continue
        starts, end = p.starts[loop], p.ends[loop][-1]
        events = [ev for ev in p.events if ev.kind != "init"]
        new, shape = [], None
        ok = True
        for k, st in enumerate(starts):
            nxt = starts[k + 1] if k + 1 < len(starts) else end
            evs = [ev for ev in events if st < ev.seq < nxt]
            if not evs:
                continue
            head = evs[0]
            if head.kind != "wait" or head.barrier is None:
                ok = False
                break
            groups = []
            for ev in evs:
                if ev.kind == "wait" and (ev.op.where, ev.op.name) == (head.op.where, head.op.name):
                    groups.append([])
                groups[-1].append(ev)
            for g in groups:
                gs = tuple(sig(ev) for ev in g)
                if shape is None:
                    shape = gs
                if gs != shape:
                    ok = False
                    break
                new.append(g[0].seq - 0.5)
            if not ok:
                break
        if ok and new and len(new) != len(starts):
            p.starts = dict(p.starts)
            p.starts[loop] = new


def drop_start_cluster_barrier(kernel: Kernel) -> None:
    """barrier.cluster arrive + wait that every agent of every CTA makes before its first
    pipeline op (after mbarrier.init: Mojo's pipeline_init) keeps a CTA from arriving on or
    copying into a peer's barriers before the peer has initialised them. The model starts
    every agent of every CTA with every barrier initialised, so it orders nothing the model
    tracks: dropped. A later use (the kernel's end) is kept (MojoBuilder: cluster_barrier)."""
    heads = []
    for p in kernel.partitions:
        evs = [e for e in p.events if e.kind != "init"]
        heads.append(evs[:2])
    if heads and all(len(h) == 2 and h[0].kind == "csync" and h[0].extra[0] != "wait"
                     and h[1].kind == "csync" and h[1].extra[0] == "wait" for h in heads):
        for p, h in zip(kernel.partitions, heads):
            for e in h:
                p.events.remove(e)


def named_barriers(kernel: Kernel, b: MojoBuilder) -> None:
    """bar.sync ID, N: a named barrier of N threads; in agents, N / the agent's threads."""
    per_agent = 128 if any(p.name.startswith("wg") for p in kernel.partitions) else \
        kernel.warp_size
    for p in kernel.partitions:
        for ev in p.events:
            if ev.kind in ("sync", "bar_arrive"):
                bid, n = ev.extra[0], ev.value
                if not isinstance(bid, int) or not isinstance(n, int):
                    raise NotExpressible(f"{ev.op.where} ({kernel.path}): a named barrier whose "
                                         f"id or thread count cannot be evaluated")
                name = f"bar{bid}"
                agents = max(1, n // per_agent)
                have = b.barrier_counts.setdefault(name, agents)
                if have != agents:
                    raise NotExpressible(f"{ev.op.where} ({kernel.path}): named barrier {bid} used "
                                         f"with different thread counts")
                ev.extra = (name,)


def check_amd_exact(kernel, b) -> None:
    return None


def outer_tail_in_last_item(kernel: Kernel, b: MojoBuilder) -> None:
    """Ops of an enclosing loop between two runs of the item loop belong to the item before
    (frontend_core); so do those after its last run, up to the enclosing loop's end (a
    persistent kernel's last CLC fetch after its last tile's k-blocks), not to the epilogue:
    every tile's trailing ops then sit in the same item of the period."""
    for p in kernel.partitions:
        loop = b._item_loop(p)
        if loop is None or loop not in p.ends:
            continue
        outer = None
        for ev in p.events:
            keys = [k for k, _ in ev.iters]
            if loop in keys and keys.index(loop) > 0:
                outer = keys[keys.index(loop) - 1]
                break
        if outer is not None and outer in p.ends:
            p.ends = {**p.ends, loop: p.ends[loop][:-1] + [max(p.ends[loop][-1], p.ends[outer][-1])]}


def align_items(kernel: Kernel, b: MojoBuilder) -> None:
    """Put every role on one item numbering, so each read expects the tag its fill stores.

    The model tags a fill with its agent's item number and a read expects the reader's (DESIGN:
    the tag is the item). sm100's roles loop at different rates: the load and MMA warps once
    per k-block (N = tiles x k-blocks items), the epilogue and the CLC scheduler once per tile
    (n items). A per-tile role is stretched onto the N items: its item k becomes items
    k*m .. k*m+m-1 (m = N / n), its ops all in one of them (`every=m at=j`) and none in the
    others. Where its loop iterations are cut is its choice too: the epilogue's IR iteration
    starts with the previous tile's CLC fetch, but that fetch reads the response the
    scheduler wrote for the tile before, so its items are cut at another op of the iteration
    (one that occurs once per iteration: each wait). Every (cut, j) of every per-tile role is
    tried (j = m-1 first, then 0) and the first under which every ring's n-th fill of a slot
    and each reader's n-th read of it carry the same item is kept: then each read of the spec
    expects exactly the fill the kernel's FIFO order gives it. No agent's op sequence changes
    (empty items have no ops), so the barrier protocol is the kernel's; only which item a
    fill and a read are numbered with moves, and the check proves the pairing right. If no
    choice pairs every read, one line (exit 2), never a guessed pairing."""
    from itertools import product

    loops = {p.name: b._item_loop(p) for p in kernel.partitions}
    counts = {p.name: len(p.starts[loops[p.name]]) if loops[p.name] in p.starts else 0
              for p in kernel.partitions}
    n_fine = max(counts.values(), default=0)
    coarse = [p for p in kernel.partitions if 0 < counts[p.name] < n_fine]
    if not coarse:
        return
    options = []
    for p in coarse:
        options.append(list(_cuts(p, loops[p.name], n_fine)))
        if not options[-1]:
            raise NotExpressible(
                f"{kernel.path}: role {p.name} runs {counts[p.name]} items and others {n_fine}, "
                f"and no op it makes once per iteration occurs a whole fraction of {n_fine} "
                f"times: item structures that differ so are not expressible yet (docs/mojo.md)")
    saved = {p.name: (p.starts, p.ends) for p in coarse}
    for combo in product(*options):
        for p, (starts, ends) in zip(coarse, combo):
            p.starts, p.ends = starts, ends
        if _pairs_ok(kernel, b):
            return
    for p in coarse:
        p.starts, p.ends = saved[p.name]
    # tiles of k-blocks (spec/mojo/nest.py), the reads paired by the same FIFO check
    b.nest = nest_items(kernel, b, loops, counts, lambda k, bb, tag_of: _sections_tags_ok(k, bb, tag_of))
    if b.nest is not None:
        return
    names = ", ".join(p.name for p in coarse)
    raise NotExpressible(
        f"{kernel.path}: roles {names} loop once per {n_fine // counts[coarse[0].name]} items of "
        f"the others, and no numbering of their items pairs every read with its fill (the model "
        f"tags data with item numbers): not expressible yet (docs/mojo.md)")


def _cuts(p, loop, n_fine):
    """({loop: fine starts}, {loop: ends}) candidates for a per-tile role stretched onto
    n_fine items: cut at its IR iterations or before each occurrence of one of its waits."""
    starts, end = p.starts[loop], p.ends[loop][-1]
    events = [ev for ev in p.events if ev.kind != "init"]
    in_loop = [ev for ev in events if starts[0] < ev.seq <= end]
    cuts = [list(starts)]
    for ev in in_loop:
        key = (ev.kind, ev.op.where, ev.op.name, ev.barrier and ev.barrier.array.name)
        if ev.kind != "wait":
            continue
        occ = [e.seq - 0.5 for e in in_loop
               if (e.kind, e.op.where, e.op.name, e.barrier and e.barrier.array.name) == key]
        if occ not in cuts:
            cuts.append(occ)
    # a loop whose first iterations are peeled (the CuTe DSL's consumer waits for its first
    # k-block before the loop that does the rest, at another line): each wait on the ring's
    # signal, those before the loop too, starts an item
    for ev in events:
        if ev.kind != "wait" or ev.seq >= starts[0] or ev.barrier is None:
            continue
        arr = ev.barrier.array
        occ = [e.seq - 0.5 for e in events if e.seq <= end and e.kind == "wait"
               and e.barrier is not None and e.barrier.array is arr]
        if occ not in cuts and occ[-1] > starts[0]:
            cuts.append(occ)
    in_loop = [ev for ev in events if min(min(c) for c in cuts if c) < ev.seq <= end]
    last_seq = max((ev.seq for ev in in_loop), default=end)
    for cut in cuts:
        if not cut or n_fine % len(cut):
            continue
        m = n_fine // len(cut)
        for j in dict.fromkeys((m - 1, 0)):
            fine = []
            for k, c in enumerate(cut):
                nxt = cut[k + 1] if k + 1 < len(cut) else last_seq + 0.5
                last = max((ev.seq for ev in in_loop if c < ev.seq < nxt), default=c)
                fine += [c - 0.4 + 0.01 * i for i in range(j)] + [c] + \
                        [last + 0.1 + 0.01 * i for i in range(m - 1 - j)]
            new_end = max(end, last_seq + 0.45)
            yield ({**p.starts, loop: fine}, {**p.ends, loop: p.ends[loop][:-1] + [new_end]})


def _pairs_ok(kernel: Kernel, b: MojoBuilder) -> bool:
    """Does each reader's n-th read of every data slot carry the item of the n-th fill of it?
    (Fills and reads outside the item loop carry the prologue's / epilogue's tag: the core
    pairs those, so they are not compared here.)"""
    return _sections_tags_ok(kernel, b, lambda p, ev, item: item)


def _sections_tags_ok(kernel: Kernel, b: MojoBuilder, tag_of) -> bool:
    """_pairs_ok with the tag of a body op given by tag_of(partition, event, item) (nested
    loops: a tile-level ring's tag is the tile, spec/mojo/nest.py)."""
    fills, reads = {}, {}
    for p in kernel.partitions:
        pro, items, epi = b._sections(p)
        item_of = {id(ev): k for k, evs in enumerate(items) for ev in evs}
        for ev in p.events:
            data = data_ref(ev)
            if data is None or ev.kind not in ("copy", "write", "read", "read_async"):
                continue
            tag = item_of.get(id(ev))
            tag = None if tag is None else tag_of(p, ev, tag)
            key = (data.array, data.index)
            if ev.kind in ("copy", "write"):
                fills.setdefault(key, {}).setdefault(p.name, []).append(tag)
            else:
                reads.setdefault(key, {}).setdefault(p.name, []).append(tag)
    # a read outside the item loop of a ring only bodies fill pairs with no fill (the loader
    # refuses it): that numbering is no pairing either
    outside = {k[0] for k, per in fills.items() for tags in per.values() if None in tags}
    for key, per_reader in reads.items():
        if key[0] not in outside and any(None in got for got in per_reader.values()):
            return False
        filled = fills.get(key, {})
        for role_fills in filled.values():
            tags = []   # the copies of one item into one slot (A and B tiles) are one fill
            for tag in role_fills:
                if not tags or tags[-1] != tag:
                    tags.append(tag)
            for got in per_reader.values():
                for t_fill, t_read in zip(tags, got):
                    if t_fill is not None and t_read is not None and t_fill != t_read:
                        return False
    return True
