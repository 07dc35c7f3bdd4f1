"""Nested loops in a front end's reading (docs/model.md "Nested loops", docs/triton.md "Tiles of
k-blocks"): a partition whose item loop (the innermost loop around its ring data ops) runs inside
an outer loop becomes a role of `tiles` x `k_blocks`; a partition whose item loop is its only
loop is a per-tile role (`k_blocks = 1`). The ops of an outer iteration before its inner loop
are the role's `tile_prologue`, those after it its `tile_epilogue`.

When the reader says so (`nested_shapes`): some partition's item loop is nested; every
partition's outer loop (or its only loop) runs the same number of tiles T >= 2, once; each tile
runs the inner loop once, every tile the same number of times; no partition both fills and
reads one ring (a fill ahead of its own reads is the flat reading's `ahead=`). Otherwise the
kernel is read flat, as before (items counted over every loop). Where the nested reading cannot
say what the IR does (per-tile sections that differ between tiles, k-block variants whose period
does not divide k_blocks, the main ring holding per-tile data) it gives up and the flat reading
is used: the nested form only ever restates the same program per agent.

Why the same program: the lowered body (spec/load_loops.py) runs tile_prologue ops in k-block 0
of each tile and tile_epilogue ops in k-block K-1, which is where the IR runs them; advances
are agent-local, so an advance for a ring's first use may stand at the end of the prologue
(nothing on that ring comes between), which is where this reading puts them (every tile then
reads alike). What changes is the tags: a ring filled or read in a tile section, or by roles of
different k_blocks, is declared `level = "tile"`, so its reads and fills pair by tile.
"""
from __future__ import annotations

DATA_KINDS = ("copy", "read", "read_async")


def nested_shapes(builder) -> dict | None:
    """partition name -> (outer loop id or None, item loop id, tiles, k_blocks), or None when
    the kernel is read flat."""
    shapes, nested = {}, False
    for p in builder.parts:
        loop = builder._item_loop(p)
        if loop is None:
            shapes[p.name] = None
            continue
        shape = _shape(p, loop)
        if shape is None:
            return None
        nested |= shape[0] is not None
        shapes[p.name] = shape
    tiles = {s[2] for s in shapes.values() if s is not None}
    if not nested or len(tiles) != 1 or min(tiles) < 2 or _fills_and_reads(builder):
        return None
    return shapes


def _shape(p, loop):
    outer = None
    for ev in p.events:
        if ev.iters and ev.iters[-1][0] == loop:
            if len(ev.iters) > 2:
                return None  # three levels: not expressible
            outer = ev.iters[0][0] if len(ev.iters) == 2 else None
            break
    if outer is None:
        return (None, loop, len(p.starts[loop]), 1) if len(p.ends.get(loop, [])) == 1 else None
    if len(p.ends.get(outer, [])) != 1 or len(p.ends.get(loop, [])) != len(p.starts[outer]):
        return None
    spans = _tile_spans(p, outer)
    per_tile = {sum(1 for s in p.starts[loop] if lo < s < hi) for lo, hi in spans}
    if len(per_tile) != 1 or min(per_tile) < 1:
        return None
    if any(not lo < end < hi for (lo, hi), end in zip(spans, p.ends[loop])):
        return None
    return outer, loop, len(spans), min(per_tile)


def _tile_spans(p, outer):
    st = p.starts[outer] + [p.ends[outer][0]]
    return [(st[t], st[t + 1]) for t in range(len(st) - 1)]


def _fills_and_reads(builder) -> bool:
    for p in builder.parts:
        fills, reads = set(), set()
        for ev in p.events:
            if ev.kind in DATA_KINDS:
                for ring, _, _, _ in builder._ops(ev):
                    (fills if ev.kind == "copy" else reads).add(ring.name)
        if fills & reads:
            return True
    return False


def nested_sections(p, shape):
    """(prologue, [(tile prologue, [k-block events], tile epilogue) per tile], epilogue)."""
    outer, loop, tiles, _ = shape
    events = [ev for ev in p.events if ev.kind != "init"]
    if outer is None:  # a per-tile role: each iteration of its loop is one tile of one k-block
        starts, end = p.starts[loop], p.ends[loop][0]
        bounds = starts + [end]
        per_tile = [([], [[ev for ev in events if bounds[t] < ev.seq < bounds[t + 1]]], [])
                    for t in range(tiles)]
    else:
        end = p.ends[outer][0]
        per_tile = []
        for t, (lo, hi) in enumerate(_tile_spans(p, outer)):
            kb = [s for s in p.starts[loop] if lo < s < hi]
            lend = p.ends[loop][t]
            marks = kb + [lend]
            items = [[ev for ev in events if marks[k] < ev.seq < marks[k + 1]]
                     for k in range(len(kb))]
            per_tile.append(([ev for ev in events if lo < ev.seq < kb[0]], items,
                             [ev for ev in events if lend < ev.seq < hi]))
        starts = p.starts[outer]
    pro = [ev for ev in events if ev.seq < starts[0]]
    epi = [ev for ev in events if ev.seq > end]
    return pro, per_tile, epi


def place_nested(builder, p, shape, state, last):
    """Entries of (prologue, tile prologue, [k-block entries], tile epilogue, period) placed
    like the flat reading's, or None when the tiles or k-blocks do not read alike."""
    pro, per_tile, _ = nested_sections(p, shape)
    pro_e = builder._place_all(pro, state, last, p)
    holder = [None, None, []]  # first-use advances: at the end of the prologue
    for ev in p.events:
        if ev.kind != "init":
            for ring, _, _, _ in builder._ops(ev):
                if ring is not None and ring.name not in last:
                    last[ring.name] = holder
    groups = [(builder._place_all(tp, state, last, p),
               [builder._place_all(evs, state, last, p) for evs in items],
               builder._place_all(te, state, last, p)) for tp, items, te in per_tile]
    pro_e += [[t, src, []] for t, src in holder[2]]
    flat = [k_e for g in groups for k_e in g[1]]
    period = builder._period(flat)
    k_blocks, n = shape[3], len(flat)
    if k_blocks % period:
        return None
    for t in range(1, len(groups)):
        final = t == len(groups) - 1
        if not (builder._same(groups[0][0], groups[t][0], final)
                and builder._same(groups[0][2], groups[t][2], final)):
            return None
    builder._complete(flat[-1], flat[n - 1 - period], state)
    builder._complete(groups[-1][0], groups[0][0], state)
    builder._complete(groups[-1][2], groups[0][2], state)
    return pro_e, groups[0][0], flat[:period], groups[0][2], period


def data_rings(texts, main: str) -> set:
    """Rings a list of op texts fills or reads."""
    out = set()
    for text in texts:
        if text.split()[0] in ("copy", "read", "read_async", "write"):
            out.add(text.split("ring=")[1].split()[0] if "ring=" in text else main)
    return out


def tile_rings(roles, main: str) -> set | None:
    """The rings that hold per-tile data: filled or read in a tile section, or by roles of
    different k_blocks. None (read flat) when that is the main ring (its level is k_block) or
    a ring some role fills in every k-block."""
    out, users, k_fills = set(), {}, set()
    for r in roles:
        out |= data_rings(r.get("tile_prologue", []) + r.get("tile_epilogue", []), main)
        for name in data_rings(r["body"], main):
            users.setdefault(name, set()).add(r["k_blocks"])
        if r["k_blocks"] > 1:  # fills once per k-block
            k_fills |= data_rings([t for t in r["body"] if t.split()[0] in ("copy", "write")], main)
    out |= {name for name, ks in users.items() if len(ks) > 1}
    # A ring filled in every k-block holds per-k-block data: tile tags would let a read take
    # another k-block's fill of the same tile. Such a kernel is read flat.
    return None if main in out or out & k_fills else out
