"""Nested loops (docs/model.md "Nested loops"): a role that loops over work tiles and, in each
tile, over k-blocks, lowered into the flat program every engine already runs.

A role of a spec with `[pipeline] tiles` runs `tiles * k_blocks` body items (both counts per
role, defaulting to the pipeline's): item i is k-block i % K of tile i // K. Its sections
`tile_prologue` and `tile_epilogue` run once per tile, before and after the tile's k-blocks; they
become body ops guarded `every=K at=0` and `every=K at=K-1`, the guards every engine already
interprets. A ring declared `level = "tile"` holds per-tile data (FA3's Q tile, an accumulator):
a fill or read of it in the body carries the tile number (`Op.tag_div = K`: tag = item // K), so
a read of held data in any k-block pairs with the latest per-tile fill, and a role running one
item per tile (`k_blocks = 1`, an epilogue warp) pairs with a role running K per tile by tile,
not by item number. A ring of level `k_block` (the default, and the main ring) carries the item.

Why this keeps every behaviour of the nested loops: the flat item i and the pair (i // K, i % K)
are the same counter, the guards select exactly the first and last k-block of each tile, and
tags compare equal exactly when the loop indices at the ring's level do; nothing else changes.
"""
from __future__ import annotations

from dataclasses import replace

from pipeproof.spec.load_checks import MAX_ITEMS, _check_int, _Invalid
from pipeproof.spec.ops_syntax import _has_item_keys
from pipeproof.spec.schema import FILL_OPS, READ_OPS, TILE_SECTIONS, Op

LOOP_ROLE_KEYS = ("k_blocks", "tile_epilogue", "tile_prologue", "tiles")


def loop_counts(raw: dict, settings, label: str) -> tuple[int | None, int, int | None]:
    """(tiles, k_blocks, items) of a role: its overrides of [pipeline] tiles and k_blocks, and
    the body items they make; (None, 1, None) in a flat spec (items as before)."""
    if settings.tiles is None:
        for key in LOOP_ROLE_KEYS:
            if key in raw:
                raise _Invalid(f"{label} {key}", "only allowed with nested loops (set [pipeline] "
                                                 "tiles, and k_blocks, instead of items)")
        return None, 1, None
    if "items" in raw:
        raise _Invalid(f"{label} items", "not allowed with nested loops (a role runs tiles * "
                                         "k_blocks items: set the role's tiles or k_blocks)")
    tiles = _check_int(raw.get("tiles", settings.tiles), 0, MAX_ITEMS, f"{label} tiles")
    k_blocks = _check_int(raw.get("k_blocks", settings.k_blocks), 1, MAX_ITEMS,
                          f"{label} k_blocks")
    if tiles * k_blocks > MAX_ITEMS:
        raise _Invalid(f"{label} tiles", f"tiles * k_blocks = {tiles * k_blocks} is over "
                                         f"{MAX_ITEMS} items")
    return tiles, k_blocks, tiles * k_blocks


def check_loop_op(op: Op, where: str, section: str, tiles: int | None, k_blocks: int) -> None:
    """An op's keys where loops are nested: in the body, every=K/at=j pick k-blocks (k % K == j),
    so K must divide k_blocks (then item % K == k % K); the per-tile sections run once per tile
    and take neither, nor ahead= (a per-tile fill is for its tile)."""
    if tiles is None:
        return
    if section in TILE_SECTIONS and (_has_item_keys(op) or op.ahead is not None):
        raise _Invalid(where, f"op {op.text!r}: every=/at=/ahead= are not allowed in {section} "
                              f"(it runs once per tile)")
    if section == "body" and k_blocks % op.every:
        raise _Invalid(where, f"op {op.text!r}: every={op.every} must divide k_blocks "
                              f"({k_blocks}) with nested loops (every=K at=j picks the k-blocks "
                              f"with k % K == j)")


def lower_body(programs: dict, k_blocks: int, tile_rings: set) -> tuple[Op, ...]:
    """The flat body: the tile prologue in the first k-block of each tile, the k-block body,
    the tile epilogue in the last; ops on tile-level rings carry the tile (tag_div)."""
    k = k_blocks  # (k = 1: every=1 at=0, no guard)
    body = ([replace(op, every=k, at=0, loop_section="tile_prologue")
             for op in programs["tile_prologue"]]
            + list(programs["body"])
            + [replace(op, every=k, at=k - 1, loop_section="tile_epilogue")
               for op in programs["tile_epilogue"]])
    return tuple(replace(op, tag_div=k)
                 if op.ring in tile_rings and k > 1 and (op.name in FILL_OPS or op.name in READ_OPS)
                 else op for op in body)


def check_loop_levels(spec) -> None:
    """Tags are compared across roles: the roles that fill or read a k_block-level ring must
    run the same k_blocks (its tags are items tile * K + k); a tile-level ring's tags are tile
    numbers, which any two roles share. `level` needs nested loops."""
    if spec.tiles is None:
        for ring in spec.rings:
            if ring.level != "k_block":
                raise _Invalid(f"[ring.{ring.name}] level", "only allowed with nested loops (set "
                                                            "[pipeline] tiles and k_blocks)")
        return
    for ring in spec.all_rings:
        if ring.level == "tile":
            continue
        users = [r for r in spec.roles
                 if any(op.ring == ring.name and (op.name in FILL_OPS or op.name in READ_OPS)
                        for op in r.body)]
        if len({r.k_blocks for r in users}) > 1:
            shown = ", ".join(f"{r.name!r} k_blocks={r.k_blocks}" for r in users)
            raise _Invalid(f"ring {ring.name!r}", f"the roles that fill or read it run different "
                                                  f"k_blocks ({shown}); its tags are k-block "
                                                  f"items (tile * k_blocks + k), so they must "
                                                  f"agree, or the ring holds per-tile data: "
                                                  f"declare [ring.{ring.name}] level = \"tile\"")


def with_k_blocks(spec, k_blocks: int):
    """The spec at another k_blocks: every role that runs the pipeline's k_blocks runs
    `k_blocks` instead (a role with its own, an epilogue at one per tile, keeps it), lowered
    again from its sections (Op.loop_section). None when a body op's every= does not divide
    the new count (its k-blocks are not said there)."""
    from dataclasses import replace as _replace
    tile_rings = {r.name for r in spec.rings if r.level == "tile"}
    roles = []
    for role in spec.roles:
        if role.k_blocks != spec.k_blocks:
            roles.append(role)
            continue
        plain = [_replace(op, every=1, at=0, tag_div=1) if op.loop_section else op
                 for op in role.body]
        programs = {name: tuple(op for op in plain if op.loop_section == name)
                    for name in TILE_SECTIONS}
        programs["body"] = tuple(_replace(op, tag_div=1) for op in plain if not op.loop_section)
        if any(k_blocks % op.every for op in programs["body"]):
            return None
        roles.append(_replace(role, k_blocks=k_blocks, items=role.tiles * k_blocks,
                              body=lower_body(programs, k_blocks, tile_rings)))
    return _replace(spec, roles=tuple(roles), k_blocks=k_blocks,
                    items=max([r.items for r in roles] + [0]))
