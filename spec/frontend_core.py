"""The front-end core: from what each partition of a kernel did (a front end's reader: the
Triton front end's spec/ttgir/run.py, the Mojo front end's spec/mojo/parse.py) to a pipeproof
spec in TOML, whose ops carry the source line they came from (`SourceMap`). A front end is a
reader plus a table of ops; this module is what they share.

Rings and agents are the reader's to name (Triton: spec/ttgir/build.py, barrier arrays and
partitions; Mojo: spec/mojo/build.py, PipelineBackend barrier pairs and warp roles); the rules
below are the same for every front end.

Stage and phase. The IR computes a barrier's index and wait phase itself; the model's agent
has a stage and phase per ring that only `advance` moves (docs/model.md). Before each op the
agent is advanced to the stage the IR indexes and, for a wait, to the parity it waits for:
d >= 0 advances, the fewest that reach both (an arrive or copy needs the stage only). When
the IR follows the ring idiom this is one `advance` per ring per item and the spec reads
like a hand-written one; when it does not, the extra advances are what the IR does (a flipped
phase is a lap more, an index off by one a stage more). Nothing is approximated: on the
hardware a wait sees only the parity, and the model's wait is ready on parity too.

Items. The item loop of a partition is the innermost `scf.for` around its ring data ops (else
around its barrier ops); its iterations, counted across enclosing loops, are the role's items
(the tag a fill stores, the item a read expects). Ops before the first item are the prologue,
after the last the epilogue; ops between two items (an outer loop's) belong to the item before.
Each item's op list is the same for items P apart (P smallest); the body lists items 0..P-1
with `every=P at=j` (no guard when P = 1). A partition that loads ahead of its own reads
(software pipelining) tags each load with the item it is for: `copy B ahead=K` (`_fill_ahead`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeproof.backends.capabilities import backend
from pipeproof.spec.frontend_reads import sections_by_reads
from pipeproof.spec.frontend_nested import nested_sections, nested_shapes, place_nested, tile_rings
from pipeproof.spec.schema import SpecError

FULL, EMPTY = "full", "empty"
WS_START = "ws_start"  # the named barrier standing for the workers' start
WS_END = "ws_end"      # and the one for the join at the op's end
DATA_KINDS = ("copy", "read", "read_async")
SECTIONS = ("prologue", "tile_prologue", "body", "tile_epilogue", "epilogue")
BODY_PARTS = ("tile_prologue", "body", "tile_epilogue")


@dataclass(eq=False)
class Ring:
    name: str
    stages: int
    kind: str
    count: int
    array: object


@dataclass
class SourceMap:
    """(role, section, op index) -> (partition, IR op name, kernel source line)."""
    entries: dict = field(default_factory=dict)

    def at(self, role: str, section: str, index: int):
        return self.entries.get((role, section, index))


def move_stage(cur: list, op: str, stages: int) -> None:
    """Apply `advance` or `reset` to an agent's [stage, phase, initial phase] on a ring."""
    if op == "reset":
        cur[0], cur[1] = 0, cur[2]
    else:
        cur[1] += (cur[0] + 1) // stages
        cur[0] = (cur[0] + 1) % stages


def ident(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else f"b_{s}"


class Builder:
    """Per-partition event sequences -> a spec. A front end gives partitions (name, warps,
    events, starts/ends of its loops, ws_start/ws_end) whose events have kind, op (name, line),
    barrier (array, index), value, buffer, iters, extra, seq; `where(op)` names the source line.
    Hooks a front end may override: `_rings` (barrier arrays -> rings), `signal_of`,
    `ring_counts`, `_warps` (agents per role), `_per_warp` (op text per agent), `fail`,
    `pipeline_lines` (extra [pipeline] keys), `BACKEND` (the backend the spec names, whose
    rules place a wait after the join) and `TOOL`/`HEADER` (the spec's comment lines)."""

    BACKEND = "nvidia"
    TOOL = "pipeproof"
    HEADER = ()
    START_OP = "start"  # the op where workers start (its name in a trace's source column)
    COMMIT_FULL = False  # may a commit arrive on a full signal (a front end whose IR says so)
    ONE_STAGE_LAP = False  # a one-stage ring waited on the other parity: advance a lap (else reset)

    def __init__(self, path: str, partitions: list, name: str, where, lowering=None):
        self.lowering = lowering  # front-end specific: how one partition becomes agents
        self.path = path
        self.parts = partitions
        self.name = name
        self.where = where  # op -> "file:line"
        self.rings: dict = {}        # barrier Array -> Ring
        self.owner: dict = {}        # buffer Array -> barrier Array
        self.main = None
        self.source = SourceMap()
        self.ahead: dict = {}        # id(copy event) -> K: `ahead=K` (the role being built)

    def fail(self, ev, what: str):
        raise SpecError(f"{self.where(ev.op)} ({self.path}:{ev.op.line}, {ev.op.name}): {what}")

    # ---------------------------------------------------------------- rings
    def _rings(self):
        inits, kinds, order = {}, {}, []
        for p in self.parts:
            for ev in p.events:
                b = ev.barrier
                if b is None:
                    continue
                arr = b.array
                if arr not in order:
                    order.append(arr)
                if ev.kind == "init":
                    inits.setdefault(arr, {})[b.index] = (ev.value, ev)
                elif ev.kind in ("expect", "copy"):
                    kinds.setdefault(arr, set()).add(FULL)
                elif ev.kind == "commit":
                    kinds.setdefault(arr, set()).add(EMPTY)
        for p in self.parts:
            for ev in p.events:
                if ev.kind == "copy":
                    if ev.buffer.index != ev.barrier.index:
                        self.fail(ev, f"the copy fills {ev.buffer.array.name}[{ev.buffer.index}] and "
                                      f"completes {ev.barrier.array.name}[{ev.barrier.index}]: a buffer "
                                      f"index other than its barrier's is not expressible yet")
                    have = self.owner.setdefault(ev.buffer.array, ev.barrier.array)
                    if have != ev.barrier.array:
                        self.fail(ev, f"{ev.buffer.array.name} is filled under two barrier arrays "
                                      f"({have.name}, {ev.barrier.array.name}): not expressible yet")
        names = set()
        for arr in order:
            used = inits.get(arr, {})
            if len(used) != arr.slots or len({c for c, _ in used.values()}) != 1:
                ev = next(iter(used.values()))[1] if used else None
                counts = sorted({c for c, _ in used.values()})
                msg = (f"barrier array {arr.name} ({arr.slots} barriers): "
                       + ("never initialised (ttng.init_barrier)" if not used else
                          f"{len(used)} of {arr.slots} initialised" if len(used) != arr.slots else
                          f"initialised with different counts {counts}; a ring has one count"))
                if ev is None:
                    raise SpecError(f"{self.path}: {msg}")
                self.fail(ev, msg)
            k = kinds.get(arr, {FULL})
            if len(k) > 1:
                raise SpecError(f"{self.path}: barrier array {arr.name} is both completed by TMA "
                                f"copies and arrived on by tcgen05 commits: not expressible yet")
            name = ident(arr.name)
            while name in names or name == "main":
                name += "_"
            names.add(name)
            self.rings[arr] = Ring(name, arr.slots, next(iter(k)), next(iter(used.values()))[0], arr)
        self.by_name = {r.name: r for r in self.rings.values()}
        filled = [arr for arr in order if arr in set(self.owner.values())]
        if not self.rings:
            raise SpecError(f"{self.path}: the kernel uses no mbarrier: nothing to check")
        self.main = self.rings[(filled or order)[0]]

    def signal_of(self, array) -> str:
        """The signal (FULL or EMPTY) of its ring a barrier array is."""
        return self.rings[array].kind

    def ring_counts(self, ring: Ring) -> tuple:
        """(producer_arrive_count, consumer_arrive_count) of a ring."""
        return (ring.count if ring.kind == FULL else 1, ring.count if ring.kind == EMPTY else 1)

    def pipeline_lines(self) -> list:
        """[pipeline] keys after the name (the backend, a cluster size)."""
        return [f'backend = "{self.BACKEND}"']

    def _ring_arg(self, ring: Ring) -> str:
        return "" if ring is self.main else f" ring={ring.name}"

    # ---------------------------------------------------------------- ops of one partition
    def _ops(self, ev):
        """[(ring, stage, phase or None, op text)] for one event (reads may be several)."""
        if ev.kind in ("wait", "arrive", "expect", "copy", "commit"):
            ring = self.rings[ev.barrier.array]
            s, kind = ev.barrier.index, self.signal_of(ev.barrier.array)
            if ev.kind == "wait":
                return [(ring, s, ev.value, f"wait_{kind}")]
            if ev.kind == "arrive":
                return [(ring, s, None, f"arrive_{kind}" + (f" {ev.value}" if ev.value != 1 else ""))]
            if ev.kind == "expect":   # arrive.expect_tx, or mbarrier.expect_tx alone
                return [(ring, s, None, f"{'expect_bytes' if ev.extra == ('bare',) else 'expect_tx'} "
                                        f"{ev.value}")]
            if ev.kind == "copy":
                return [(ring, s, None, f"copy {ev.value}")]
            if kind != EMPTY and not self.COMMIT_FULL:
                self.fail(ev, "a commit onto a barrier array TMA copies complete")
            return [(ring, s, None, f"commit_{kind}")]
        if ev.kind == "read_wait":
            return [(None, None, None, f"read_wait {ev.value}")]
        bufs = [ev.buffer] if ev.kind == "read" else list(ev.extra)
        out, seen = [], set()
        for b in bufs:
            arr = self.owner.get(b.array)
            if arr is None:
                continue  # not ring data (a buffer no TMA copy fills)
            key = (arr, b.index)
            if key not in seen:
                seen.add(key)
                out.append((self.rings[arr], b.index, None, ev.kind))
        if ev.kind == "read_async" and not out:
            return []
        return out

    def _item_loop(self, p):
        """The innermost loop around the partition's ring data ops (else its barrier ops)."""
        for kinds in (DATA_KINDS, None):
            best = None
            for ev in p.events:
                if ev.kind == "init" or (kinds and ev.kind not in kinds) or not ev.iters:
                    continue
                if best is None or len(ev.iters) > len(best):
                    best = ev.iters
            if best is not None:
                return best[-1][0]
        return None

    def _sections(self, p):
        """(prologue events, [events of each item], epilogue events) by run order: item k is
        everything from the start of the k-th iteration of the item loop (counted over every
        run of it) to the next one's; the epilogue what follows the loop's last run."""
        events = [ev for ev in p.events if ev.kind != "init"]
        loop = self._item_loop(p)
        if loop is None:
            return events, [], []
        starts, end = p.starts[loop], p.ends[loop][-1]
        pro = [ev for ev in events if ev.seq < starts[0]]
        epi = [ev for ev in events if ev.seq > end]
        items = []
        for k, st in enumerate(starts):
            nxt = starts[k + 1] if k + 1 < len(starts) else end
            items.append([ev for ev in events if st < ev.seq < nxt])
        return pro, items, epi

    def _fill_ahead(self, p, pro, items, epi, strict=True) -> dict | None:
        """id(copy event) -> K for the fills of a partition that loads ahead of its own reads
        (software pipelining in one partition: the loads of num_stages - 1 items in the prologue,
        then in item k the load of item k + num_stages - 1): `copy ... ahead=K`, the fill is for
        the item K after the one it is issued in (the prologue's: item K).

        Which item a fill is for is not taken from what the reads find (that would assume the
        ring's indexing right): a ring is a queue, so the n-th copy into each buffer array is
        data item n, and the partition's n-th read of the ring, in item n, expects it. A ring
        the partition fills and reads in the same sections needs none of this."""
        where = {id(ev): ("prologue", 0) for ev in pro}
        where.update({id(ev): ("item", k) for k, evs in enumerate(items) for ev in evs})
        where.update({id(ev): ("epilogue", len(items)) for ev in epi})
        fills, reads = {}, {}
        for ev in p.events:
            if ev.kind not in DATA_KINDS:
                continue
            for ring, _, _, _ in self._ops(ev):
                if ring is not None:
                    group = fills if ev.kind == "copy" else reads
                    group.setdefault(ring.name, []).append(ev)
        ahead = {}
        sections = lambda evs: {where.get(id(ev)) for ev in evs}
        for name, got in reads.items():
            made = fills.get(name, [])
            if not made or sections(made) == sections(got):
                continue
            per_item = [where.get(id(ev)) for ev in got]
            if per_item != [("item", k) for k in range(len(items))]:
                if not strict:
                    return None  # the caller may count items by the reads (spec/frontend_reads.py)
                ev = got[0]
                self.fail(ev, f"partition {p.name} both fills ring {name} (copy at "
                              f"{self.where(made[0].op)}) and reads it ahead of the item that reads "
                              f"it, but does not read it once in every item: which fill a read means "
                              f"is not expressible (one read per item is)")
            count = {}
            for ev in made:
                n = count.get(ev.buffer.array, 0)
                count[ev.buffer.array] = n + 1
                section, base = where.get(id(ev), ("epilogue", len(items)))
                # A load issued after the item that reads it (n < base) keeps the tag of the
                # item it is issued in: that read then finds nothing of its own item
                # (read_before_fill), which is what the kernel does.
                if section != "epilogue" and n >= base and (section == "prologue" or n != base):
                    ahead[id(ev)] = n - base
        return ahead

    def _role(self, p):
        pro, items, epi = self._sections(p)
        ahead = self._fill_ahead(p, pro, items, epi, strict=False)
        if ahead is None:  # loads ahead, reads not once per iteration: an item per read
            pro, items, epi = sections_by_reads(self, p) or (pro, items, epi)
            ahead = self._fill_ahead(p, pro, items, epi)
        self.ahead = ahead
        phases = self._first_phases(p)
        state = {ring.name: [0, ph, ph] for ring, ph in phases.items()}  # stage, phase, initial
        last = {}  # ring name -> the entry after which its next advances go
        pro_e = self._place_all(pro, state, last, p)
        item_e = [self._place_all(evs, state, last, p) for evs in items]
        period = self._period(item_e)
        self._complete_tail(item_e, period, state)
        last.clear()  # the epilogue's advances go before its own ops, never into the body
        epi_e = self._place_all(epi, state, last, p)
        texts, srcs = self._ends(p, pro, pro_e, epi, epi_e)
        body, body_src = [], []
        for j in range(min(period, len(item_e))):
            t, s_ = self._render(item_e[j], period if period > 1 else None, j)
            body += t
            body_src += s_
        return {"name": ident(p.name), "count": self._warps(p), "items": len(item_e),
                "prologue": texts["prologue"],
                "body": body, "epilogue": texts["epilogue"], "srcs": {
                    "prologue": srcs["prologue"], "body": body_src, "epilogue": srcs["epilogue"]},
                "initial_phase": {r.name: ph for r, ph in phases.items()}, "period": period}

    def _ends(self, p, pro, pro_e, epi, epi_e):
        """Texts and sources of the prologue and epilogue, with the start and join syncs."""
        texts, srcs = {}, {}
        for section, entries in (("prologue", pro_e), ("epilogue", epi_e)):
            texts[section], srcs[section] = self._render(entries, None, None)
        # The front end starts the worker partitions at START_OP and joins them at its end:
        # the default warps meet there after (start) / before (end) their own ops around it.
        if self.start_sync:
            self._insert_sync(texts["prologue"], srcs["prologue"], pro, pro_e, p.ws_start, WS_START,
                              (p.name, self.START_OP, self.ws_where), at_end=False)
        if self.end_sync:
            self._insert_sync(texts["epilogue"], srcs["epilogue"], epi, epi_e, p.ws_end, WS_END,
                              (p.name, f"{self.START_OP} (end)", self.end_where), at_end=True)
        return texts, srcs

    def _role_nested(self, p, shape):
        """A role of tiles x k_blocks (spec/frontend_nested.py), or None where the nested
        reading cannot say what the IR does (the flat reading is used then)."""
        self.ahead = {}
        phases = self._first_phases(p)
        state = {ring.name: [0, ph, ph] for ring, ph in phases.items()}
        last = {}
        if shape is None:  # no loop: prologue and epilogue only
            pro = [ev for ev in p.events if ev.kind != "init"]
            placed = (self._place_all(pro, state, last, p), [], [], [], 1)
            epi = []
        else:
            pro, _, epi = nested_sections(p, shape)
            placed = place_nested(self, p, shape, state, last)
            if placed is None:
                return None
        pro_e, tp_e, body_e, te_e, period = placed
        last.clear()
        epi_e = self._place_all(epi, state, last, p)
        texts, srcs = self._ends(p, pro, pro_e, epi, epi_e)
        texts["tile_prologue"], srcs["tile_prologue"] = self._render(tp_e, None, None)
        texts["tile_epilogue"], srcs["tile_epilogue"] = self._render(te_e, None, None)
        texts["body"], srcs["body"] = [], []
        for j, entries in enumerate(body_e):
            t, s_ = self._render(entries, period if period > 1 else None, j)
            texts["body"] += t
            srcs["body"] += s_
        tiles, k_blocks = (shape[2], shape[3]) if shape else (0, 1)
        return {"name": ident(p.name), "count": self._warps(p), "items": tiles * k_blocks,
                "tiles": tiles, "k_blocks": k_blocks, **texts, "srcs": srcs,
                "initial_phase": {r.name: ph for r, ph in phases.items()}, "period": period}

    def _first_phases(self, p) -> dict:
        """Per ring the role touches: the phase its first wait waits for, as the initial
        phase (the stages before it are reached without a wrap from stage 0)."""
        out, seen = {}, []
        for ev in p.events:
            if ev.kind == "init":
                continue
            for ring, s, ph, _ in self._ops(ev):
                if ring is None:
                    continue
                if ring not in seen:
                    seen.append(ring)
                if ph is not None and ring not in out:
                    out[ring] = ph
        return {ring: out.get(ring, 0) for ring in seen}

    def _warps(self, p) -> int:
        return p.warps if self.lowering is not None else 1

    def _per_warp(self, ev, text: str, p):
        """(op text, sync before it?) of one event's op for each agent of the role; the
        default: one agent per partition, the op as it is."""
        return text, False

    def _place_all(self, events, state, last, p):
        """Entries [text, (partition, op, line), [advances after it]] for the events."""
        entries = []
        for ev in events:
            for ring, s, ph, text in self._ops(ev):
                if id(ev) in self.ahead:
                    text += f" ahead={self.ahead[id(ev)]}"
                text, sync = self._per_warp(ev, text + (self._ring_arg(ring) if ring is not None
                                                        else ""), p)
                if sync:
                    entries.append([f"sync {self._part_barrier(p)}",
                                    (p.name, "bar.sync (partition)", self.where(ev.op)), []])
                entry = [text, (p.name, ev.op.name, self.where(ev.op)), []]
                if ring is not None:
                    cur = state.setdefault(ring.name, [0, 0, 0])
                    d = (s - cur[0]) % ring.stages
                    where = (p.name, "advance", self.where(ev.op))
                    adv = []
                    after_join = p.ws_end is not None and ev.seq >= p.ws_end
                    if ph is not None and after_join and (ring.name, s) in self.final:
                        # After the partitions' join every arrival on the barrier is done: the
                        # wait means its last completion F (window {F-1, F}), on the parity it
                        # names. L = phase * stages + stage counts advances.
                        target = self._after_join_phase(ring, s, ph, cur)
                        d = target * ring.stages + s - (cur[1] * ring.stages + cur[0])
                        if d < 0:
                            adv = [("reset" + self._ring_arg(ring), (p.name, "reset", where[2]))]
                            move_stage(cur, "reset", ring.stages)
                            d = target * ring.stages + s - cur[1] * ring.stages
                    elif ph is not None and (cur[1] + (cur[0] + d) // ring.stages) % 2 != ph \
                            and self.ONE_STAGE_LAP and ring.stages == 1 and d == 0:
                        d = 1   # a one-stage ring's next wait is the next lap (the ring idiom)
                    elif ph is not None and (cur[1] + (cur[0] + d) // ring.stages) % 2 != ph:
                        # The parity the IR waits for is a lap further than the index: the IR
                        # does not follow the ring here. Back to stage 0 and the initial phase
                        # (`reset`: the phase_alias window then follows the last passed wait,
                        # docs/rules.md), then forward to the stage and parity it names.
                        adv = [("reset" + self._ring_arg(ring), (p.name, "reset", where[2]))]
                        move_stage(cur, "reset", ring.stages)
                        d = s + (ring.stages if (cur[1] % 2) != ph else 0)
                    adv += [("advance" + self._ring_arg(ring), where)] * d
                    for _ in range(d):
                        move_stage(cur, "advance", ring.stages)
                    if ring.name in last:
                        last[ring.name][2].extend(adv)
                    else:
                        entries += [[t, src, []] for t, src in adv]
                    last[ring.name] = entry
                entries.append(entry)
        return entries

    def _after_join_phase(self, ring, s, parity, cur) -> int:
        """The agent's phase for a wait after the join on (ring, s): the smallest, from its
        initial phase up, with the wait's parity whose intended phase (the backend's
        intended_phase) is at least F - 1, F the barrier's completions over the whole kernel."""
        rules = backend(self.BACKEND).rules
        final, ph = self.final[ring.name, s], cur[2]
        while ph % 2 != parity or rules.intended_phase(ph, cur[2]) < final - 1:
            ph += 1
        return ph

    def _completions(self):
        """(ring, stage) -> the phases each barrier completes over the kernel (arrivals / count)."""
        arrivals = {}
        for p in self.parts:
            for ev in p.events:
                if ev.kind in ("arrive", "expect", "commit"):
                    ring = self.rings[ev.barrier.array]
                    key = (ring.name, ev.barrier.index)
                    arrivals[key] = arrivals.get(key, 0) + (ev.value if ev.kind == "arrive" else
                                                            0 if ev.extra == ("bare",) else 1)
        return {k: n // self.by_name[k[0]].count for k, n in arrivals.items()}

    def _part_barrier(self, p) -> str:
        name = "part_" + ident(p.name)
        self.part_barriers[name] = ident(p.name)
        return name

    @staticmethod
    def _same(a, b, last: bool) -> bool:
        """Item lists a and b alike; b the last item, whose advances toward a next use that
        never comes are missing (each of its after-lists a prefix of a's)."""
        if len(a) != len(b) or any(x[0] != y[0] for x, y in zip(a, b)):
            return False
        if not last:
            return all([t for t, _ in x[2]] == [t for t, _ in y[2]] for x, y in zip(a, b))
        return all([t for t, _ in x[2]][:len(y[2])] == [t for t, _ in y[2]] for x, y in zip(a, b))

    def _period(self, item_e) -> int:
        """Smallest P with item k == item k+P for every k."""
        n = len(item_e)
        for period in range(1, n + 1):
            if all(self._same(item_e[k], item_e[k + period], k + period == n - 1)
                   for k in range(n - period)):
                return period
        return max(n, 1)

    def _complete_tail(self, item_e, period, state):
        """The last item gets the trailing advances of its period: executed, so the state
        after the body is what the model has."""
        if item_e and len(item_e) > period:
            self._complete(item_e[-1], item_e[len(item_e) - 1 - period], state)

    def _complete(self, entries, model, state):
        """Give the last item the advances its period has after each op (and apply them)."""
        for mine, theirs in zip(entries, model):
            for text, src in theirs[2][len(mine[2]):]:
                mine[2].append((text, (mine[1][0], src[1], mine[1][2])))
                name = text.split("ring=")[1] if "ring=" in text else self.main.name
                move_stage(state[name], text.split()[0], self.by_name[name].stages)

    def _insert_sync(self, texts, srcs, events, entries, boundary, barrier, src, at_end):
        """Put `sync barrier` where the partition meets the others: in the default partition
        after its events before `boundary` (the op's position in its run), in a worker first
        (start) or last (end)."""
        if boundary is not None:
            cut = self._prefix_len(entries, sum(1 for ev in events if ev.seq < boundary))
        else:
            cut = len(texts) if at_end else 0
        texts.insert(cut, "sync " + barrier)
        srcs.insert(cut, src)

    @staticmethod
    def _prefix_len(entries, n_events):
        """Rendered length of the entries placed for the first n events of a section."""
        count, seen = 0, 0
        for text, src, after in entries:
            if seen >= n_events and src[1] not in ("advance", "reset", "bar.sync (partition)"):
                break
            count += 1 + len(after)
            if src[1] not in ("advance", "reset", "bar.sync (partition)"):
                seen += 1
        return count

    @staticmethod
    def _render(entries, period, j):
        guard = f" every={period} at={j}" if period else ""
        texts, srcs = [], []
        for text, src, after in entries:
            texts.append(text + guard)
            srcs.append(src)
            for t, s in after:
                texts.append(t + guard)
                srcs.append(s)
        return texts, srcs

    # ---------------------------------------------------------------- the spec
    NESTED = False  # may the front end read nested loops as tiles of k-blocks

    def _nested_roles(self):
        """Every partition as a role of tiles x k_blocks, or None (read flat)."""
        shapes = nested_shapes(self) if self.NESTED else None
        if shapes is None:
            return None
        self.part_barriers = {}
        roles = [self._role_nested(p, shapes[p.name]) for p in self.parts]
        return None if any(r is None for r in roles) else roles

    @staticmethod
    def _body_offset(role, section) -> int:
        return sum(len(role.get(s, [])) for s in BODY_PARTS[:BODY_PARTS.index(section)])

    def toml(self) -> tuple[str, SourceMap]:
        self._rings()
        default = self.parts[0]
        pre = [ev for ev in default.events
               if ev.kind != "init" and default.ws_start is not None and ev.seq < default.ws_start]
        # Code before START_OP runs on the default warps before any worker starts
        # (Triton's lowering holds the workers until then): a named barrier of every role.
        self.start_sync = bool(pre) and len(self.parts) > 1
        self.ws_where = self.where(pre[-1].op) if pre else ""
        post = [ev for ev in default.events
                if ev.kind != "init" and default.ws_end is not None and ev.seq >= default.ws_end]
        # Code after it runs once every partition has returned (the op's join).
        self.end_sync = bool(post) and len(self.parts) > 1
        self.end_where = self.where(post[0].op) if post else ""
        self.final = self._completions()
        roles, levels = self._nested_roles(), None
        if roles is not None:
            levels = tile_rings(roles, self.main.name)
        if levels is None:  # read flat: items counted over every loop
            self.part_barriers = {}
            roles = [self._role(p) for p in self.parts]
        roles = [r for r in roles if any(r.get(s) for s in SECTIONS)]
        main = self.main
        pac, cac = self.ring_counts(main)
        count = (f"items = {max((r['items'] for r in roles), default=0)}" if levels is None else
                 f"tiles = {max(r['tiles'] for r in roles)}\n"
                 f"k_blocks = {max(r['k_blocks'] for r in roles)}")
        lines = [f"# Extracted by `{self.TOOL}` from {self.path}", *self.HEADER,
                 "[pipeline]", f'name = "{self.name}"', *self.pipeline_lines(),
                 f"stages = {main.stages}", f"producer_arrive_count = {pac}",
                 f"consumer_arrive_count = {cac}", count, ""]
        done = {id(main)}
        for ring in self.rings.values():
            if id(ring) in done:
                continue
            done.add(id(ring))
            pac, cac = self.ring_counts(ring)
            lines += [f"[ring.{ring.name}]", f"stages = {ring.stages}",
                      f"producer_arrive_count = {pac}",
                      f"consumer_arrive_count = {cac}"]
            if levels and ring.name in levels:
                lines.append('level = "tile"  # per-tile data: its fills and reads pair by tile')
            lines.append("")
        names = ", ".join(f'"{r["name"]}"' for r in roles)
        for flag, barrier in ((self.start_sync, WS_START), (self.end_sync, WS_END)):
            if flag:
                lines += [f"[barrier.{barrier}]", f"roles = [{names}]", ""]
        for barrier, role in self.part_barriers.items():
            lines += [f"[barrier.{barrier}]", f'roles = ["{role}"]', ""]
        for r in roles:
            phases = ", ".join(f"{'main' if n == main.name else n} = {ph}"
                               for n, ph in r["initial_phase"].items())
            fills = r["body"] + r["prologue"] + r.get("tile_prologue", []) + r.get("tile_epilogue", [])
            side = "producer" if any(t.startswith(("copy", "write")) for t in fills) else "consumer"
            lines += ["[[role]]", f'name = "{r["name"]}"', f'side = "{side}"', f"count = {r['count']}",
                      f"items = {r['items']}" if levels is None else f"k_blocks = {r['k_blocks']}"]
            if r.get("ctas"):
                lines.append(f"ctas = {list(r['ctas'])}")
            if phases:
                lines.append(f"initial_phase = {{ {phases} }}")
            for section in SECTIONS:
                ops = r.get(section)
                if not ops:
                    continue
                lines.append(f"{section} = [")
                # the lowered body is tile_prologue + body + tile_epilogue (spec/load_loops.py)
                where, first = ("body", self._body_offset(r, section)) if section in BODY_PARTS \
                    else (section, 0)
                for i, (op, src) in enumerate(zip(ops, r["srcs"][section])):
                    self.source.entries[(r["name"], where, first + i)] = src
                    note = ("to the stage/phase the IR uses" if src[1] in ("advance", "reset")
                            else src[1])
                    lines.append(f'  "{op}",  # {note} {src[2]}')
                lines.append("]")
            lines.append("")
        return "\n".join(lines), self.source
