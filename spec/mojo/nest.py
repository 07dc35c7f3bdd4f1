"""Roles at different rates as nested loops (issue 47; docs/model.md "Nested loops", docs/mojo.md).

A persistent sm100 kernel's warps loop at two rates: the load and MMA warps once per k-block
(T tiles x K k-blocks items), the epilogue and CLC scheduler warps once per tile (T items).
Where `align_items` (build.py) finds no way to stretch the per-tile roles onto the k-block
items that pairs every read with its fill (conv2d's load warp runs two k-loops per tile, its
epilogue's iterations start mid-tile), the spec says what the kernel does instead:
`[pipeline] tiles = T, k_blocks = K`, the per-tile roles `k_blocks = 1`, and every ring that
roles of both rates fill or read (the accumulator, the CLC response) `level = "tile"`, so its
tags are tile numbers (a k-block role's item i carries tile i // K) and reads pair with fills by
tile, not by item number.

Which item an op belongs to is chosen here, never any agent's op sequence: a role whose item
loop does not run T*K or T times is cut at another op that occurs once per k-block or per tile
(each occurrence of one of its waits, by Mojo line or by barrier). The choice is kept only when
every reader's n-th read of every slot carries the tag of the n-th fill of it (FIFO order, the
kernel's), the same check `align_items` makes; if none passes, the reader refuses as before.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product


@dataclass
class Nest:
    tiles: int
    k_blocks: int
    role_k: dict          # partition name -> its k_blocks (K or 1)
    tile_data: set        # data arrays (("data", base)) whose tags are tiles


def nest_items(kernel, b, loops: dict, counts: dict, tags_ok):
    """Cut every role's items into T tiles of K k-blocks (or T tiles of one item) so that
    reads pair with fills at each ring's level (`tags_ok(kernel, b, tag_of)`: build.py's
    FIFO check); a Nest, with the partitions' starts/ends set, or None (starts/ends
    unchanged) where no choice pairs every read."""
    n_fine = max(counts.values(), default=0)
    positive = [c for c in counts.values() if c > 0]
    tiles = kernel.tiles or min(positive, default=0)
    if not tiles or n_fine % tiles or n_fine // tiles < 2:
        return None
    k = n_fine // tiles
    parts = [p for p in kernel.partitions if counts[p.name] > 0]
    options = []
    for p in parts:
        opts = [(k, p.starts, p.ends)] if counts[p.name] == n_fine else []
        opts += [(kk, st, en) for kk, want in ((k, n_fine), (1, tiles))
                 for st, en in _recuts(p, loops[p.name], want)
                 if (kk, st, en) not in opts]
        if not opts:
            return None
        options.append(opts)
    saved = {p.name: (p.starts, p.ends) for p in parts}
    for combo in product(*options):
        role_k = {p.name: kk for p, (kk, _, _) in zip(parts, combo)}
        for p, (kk, st, en) in zip(parts, combo):
            st = _tile_heads(p, b, loops[p.name], kk, st)
            p.starts, p.ends = st, _last_tail(p, b, loops[p.name], kk, st, en)
        tile_data = _tile_data(kernel, role_k)
        if tags_ok(kernel, b, lambda p, ev, item: (
                item // role_k[p.name] if _data(ev) in tile_data else item)):
            return Nest(tiles, k, role_k, tile_data)
    for p in parts:
        p.starts, p.ends = saved[p.name]
    return None


def _data(ev):
    """The data array a fill or read touches (a read_async names its slot in `extra`)."""
    d = (ev.extra[0] if ev.extra else None) if ev.kind == "read_async" else ev.buffer
    return d.array if d is not None else None


def _tile_data(kernel, role_k: dict) -> set:
    """Data arrays filled or read by roles of both rates: per-tile data (level = "tile")."""
    users = {}
    for p in kernel.partitions:
        if p.name not in role_k:
            continue
        for ev in p.events:
            if ev.kind in ("copy", "write", "read", "read_async") and _data(ev) is not None:
                users.setdefault(_data(ev), set()).add(role_k[p.name])
    return {arr for arr, ks in users.items() if len(ks) > 1}


def _recuts(p, loop, want: int):
    """(starts, ends) of the role's item loop cut into `want` items: at its IR iterations, or
    before each occurrence of one of its waits (one Mojo line, or one barrier array)."""
    starts, end = p.starts[loop], p.ends[loop][-1]
    events = [ev for ev in p.events if ev.kind != "init"]
    in_loop = [ev for ev in events if starts[0] < ev.seq <= end]
    # (a wait before the loop may start its first item: a loop the compiler rotated)
    waits = [ev for ev in events if ev.seq <= end and ev.kind == "wait" and ev.barrier is not None]
    keys = []
    for ev in waits:
        for key in ((ev.op.where, ev.op.name, ev.barrier.array.name), (ev.barrier.array.name,)):
            if key not in keys:
                keys.append(key)
    cuts = [list(starts)]
    for key in keys:
        occ = [ev.seq - 0.5 for ev in waits
               if (ev.op.where, ev.op.name, ev.barrier.array.name)[-len(key):] == key]
        if occ not in cuts:
            cuts.append(occ)
    last_seq = max((ev.seq for ev in in_loop), default=end)
    for cut in cuts:
        if len(cut) == want:
            new_end = max(end, last_seq + 0.45)
            yield {**p.starts, loop: cut}, {**p.ends, loop: p.ends[loop][:-1] + [new_end]}


def nest_text(text: str, b, nest: Nest) -> str:
    """The flat TOML the core wrote, as a nested-loop spec: [pipeline] tiles and k_blocks
    instead of items, `k_blocks = 1` for the per-tile roles, `level = "tile"` on the rings of
    per-tile data."""
    tile_rings = {b.rings[full].name for full in b.kernel.pairs
                  if full.signal == "full" and ("data", full.base[1]) in nest.tile_data}
    out, section, role = [], None, None
    by_ident = {_ident(name): kk for name, kk in nest.role_k.items()}
    for line in text.split("\n"):
        if line.startswith("["):
            section = line
            role = None
            out.append(line)
            ring = re.match(r"\[ring\.(\w+)\]$", line)
            if ring and ring.group(1) in tile_rings:
                out.append('level = "tile"')
            continue
        got = re.match(r"items = (\d+)$", line)
        if got and section == "[pipeline]":
            out += [f"tiles = {nest.tiles}", f"k_blocks = {nest.k_blocks}"]
            continue
        name = re.match(r'name = "(\w+)"$', line)
        if name and section == "[[role]]":
            role = name.group(1)
        if got and section == "[[role]]":
            n, kk = int(got.group(1)), by_ident.get(role)
            if kk is None or n == 0:
                out.append("tiles = 0")
            elif n != nest.tiles * kk:
                raise AssertionError(f"role {role}: {n} items, not {nest.tiles} x {kk}")
            elif kk == 1:
                out.append("k_blocks = 1")
            continue
        out.append(line)
    return "\n".join(out)


def _ident(name):
    from pipeproof.spec.frontend_core import ident
    return ident(name)


def nest_main(b, nest: Nest):
    """The main ring is k_block-level (docs/model.md): the first ring a copy or write fills
    whose data is not per tile (the core's choice, skipping tile-level rings)."""
    filled = [b.rings[ev.barrier.array] for p in b.parts for ev in p.events
              if ev.kind in ("copy", "write") and ev.barrier is not None
              and ("data", ev.barrier.array.base[1]) not in nest.tile_data]
    return filled[0] if filled else b.main


def _sig(ev):
    return (ev.kind, ev.op.where, ev.op.name, ev.barrier and ev.barrier.array.name,
            None if ev.kind == "wait" else ev.value)


def _tile_heads(p, b, loop, k: int, starts: dict) -> dict:
    """Start each tile where the kernel's tile starts: a rotated persistent loop issues the
    next tile's first ops (the MMA warp's wait for an empty accumulator, the load warp's CLC
    throttle) at the end of the tile before, and the first tile's in the prologue. The longest
    run of ops that ends the prologue and the last k-block of every tile but the last alike
    (same ops, Mojo lines, barriers) is moved to the first k-block of the next tile, so every
    tile reads the same (period K). Which item an op is in changes; no op sequence does."""
    cut = list(starts[loop])
    saved = p.starts
    p.starts = {**p.starts, loop: cut}
    pro, items, _ = b._sections(p)
    p.starts = saved
    lasts = [items[t * k - 1] for t in range(1, len(items) // k)]
    if not lasts or not pro:
        return starts
    n = 0
    while n < len(pro) and all(n < len(it) and _sig(it[-1 - n]) == _sig(pro[-1 - n])
                               for it in lasts):
        n += 1
    if n == 0:
        return starts
    cut[0] = pro[-n].seq - 0.25
    for t, it in enumerate(lasts, start=1):
        cut[t * k] = it[-n].seq - 0.25
    return {**starts, loop: cut}


def _last_tail(p, b, loop, k: int, starts: dict, ends: dict) -> dict:
    """The last tile's trailing ops into its last item: where the persistent loop exits after
    its last CLC fetch, the ops after the k-loop's last run are the epilogue's; those that
    complete the last item to read as the first tile's last item are moved into it."""
    saved = p.starts, p.ends
    p.starts, p.ends = starts, ends
    _, items, epi = b._sections(p)
    p.starts, p.ends = saved
    if len(items) < 2 * k or not epi:
        return ends
    model, last = items[k - 1], items[-1]
    j = len(model) - len(last)
    if 0 < j <= len(epi) and [_sig(e) for e in last + epi[:j]] == [_sig(e) for e in model]:
        return {**ends, loop: ends[loop][:-1] + [epi[j - 1].seq + 0.45]}
    return ends


_GUARDED = re.compile(r'  "(.*) every=(\d+) at=(\d+)",(  # .*)$')


def tile_sections(text: str, source, nest: Nest) -> str:
    """A k-block role whose every tile reads `tile_prologue`, then K alike k-blocks, then
    `tile_epilogue` (the MMA warp: the accumulator's wait first, its commit and the CLC
    fetch last) is written so; the loader lowers it to the same guarded body (every=K at=0
    before the body, at=K-1 after it), in that order, which is how the source map keeps its
    lines. A role whose k-blocks differ otherwise keeps its every=K at=j body."""
    lines = text.split("\n")
    out, i, role = [], 0, None
    while i < len(lines):
        line = lines[i]
        got = re.match(r'name = "(\w+)"$', line)
        role = got.group(1) if got else role
        if line != "body = [":
            out.append(line)
            i += 1
            continue
        end = lines.index("]", i)
        split = _split_tile(lines[i + 1:end], nest.k_blocks)
        if split is None:
            out += lines[i:end + 1]
        else:
            order = []
            for name, part in zip(("tile_prologue", "body", "tile_epilogue"), split):
                if part:
                    out += [f"{name} = ["] + [f'  "{op}",{note}' for op, note, _ in part] + ["]"]
                order += [old for _, _, old in part]
            old = {j: source.entries.get((role, "body", j)) for j in order}
            for new, j in enumerate(order):
                source.entries[(role, "body", new)] = old[j]
        i = end + 1
    return "\n".join(out)


def _split_tile(body: list, k: int):
    """(tile prologue, body, tile epilogue) of a body of every=k variants, each a list of
    (op, comment, index in the old body), or None where the variants are not P + core,
    core ..., core + E."""
    variants = [[] for _ in range(k)]
    for n, line in enumerate(body):
        got = _GUARDED.match(line)
        if got is None or int(got.group(2)) != k:
            return None
        variants[int(got.group(3))].append((got.group(1), got.group(4), n))
    key = lambda v: [(op, note) for op, note, _ in v]
    first, last = variants[0], variants[-1]
    for size in range(min(len(first), len(last)), 0, -1):
        core = key(last[:size])
        if key(first[len(first) - size:]) == core and all(key(v) == core for v in variants[1:-1]):
            return first[:len(first) - size], first[len(first) - size:], last[size:]
    return None
