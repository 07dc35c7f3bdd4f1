"""Presets for `[pipeline] template = "..."`: the pipelines of real libraries.

`expand` runs before validation and fills in what the template implies, as if the user had
written it in TOML: default `[pipeline]` counts and whole `[[role]]` tables. Anything the user
wrote wins: `[pipeline]` keys one by one; a `[[role]]` whose name matches a template role
replaces that role's keys one by one; a `[[role]]` with a new name is added after the
template's roles. Every template is a correct protocol with its default parameters.

Template parameters (from `[pipeline]`):
  consumers     consumer agents per CTA (default 1); mojo_sm100_matmul: epilogue agents (the
                accumulator ring's empty count); cutlass_pingpong: agents per math warpgroup
  tile_bytes    bytes of one tile, B (default 16384)
  k_group_size  tiles per barrier pair, k (default 1)
  cluster_size  CTAs, K (default 1; cutlass_tma_async: 2; mojo_sm100_matmul: must be 1)
  stages        slots (sm90_ring pre-arrives on each); mojo_sm100_matmul: input-ring slots;
                cutlass_pingpong: the OrderedSequenceBarrier depth = ordered sections per tile
  items         per agent; mojo_sm100_matmul: k iterations in all = tiles * k_tiles;
                cutlass_pingpong: tiles per math warpgroup

mojo_sm100_matmul has two more parameters that are not `[pipeline]` keys (the loader allows
no new keys there):
  tiles         output tiles = the `items` of the `scheduler` role, which runs once per tile:
                write `[[role]] name = "scheduler"  items = N`. Default: items / 2.
  k_tiles       k iterations per output tile, T = items / tiles (items must be a multiple of
                tiles). Default 2 (when the scheduler's items are not given).
and it brings two ring tables (`template_rings`), sized as Mojo sizes them
(docs/model.md "Templates"); a `[ring.acc]` or `[ring.clc]` table in the file
overrides them key by key:
  [ring.acc]  stages = 2 (num_accum_pipeline_stages), producer_arrive_count = 1 (the MMA
              warp's commit), consumer_arrive_count = consumers (every epilogue agent arrives)
  [ring.clc]  stages = 2 (num_clc_pipeline_stages), producer_arrive_count = 1 (the load
              warp), consumer_arrive_count = 1 (the scheduler warp)

Sources: docs/model.md "Templates".
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.backends.capabilities import BACKENDS as BACKEND_RECORDS, names_with
from pipeproof.spec.schema import SpecError

TEMPLATES = {
    "mojo_producer_consumer": (
        "Mojo ProducerConsumerPipeline: 1 producer (phase 1) writes, `consumers` consumers "
        "(phase 0) read and arrive on empty; full count 1, empty count = consumers; "
        "nvidia or amd"),
    "mojo_input_tile": (
        "Mojo SM100 InputTilePipeline: the TMA producer expects k*B bytes and copies k tiles "
        "of B per stage, the MMA warp releases with tcgen05.commit multicast to every CTA, "
        "the producer drains before exit; empty count = cluster_size; nvidia"),
    "sm90_ring": (
        "Mojo SM90 RingBuffer: both sides start at phase 0, consumers pre-arrive on every "
        "empty barrier of every CTA; empty count = consumers * cluster_size; nvidia"),
    "cutlass_tma_async": (
        "CUTLASS PipelineTmaAsync with TMA multicast in a 1-D cluster (default 2 CTAs): each "
        "CTA's producer multicasts B/K bytes to every CTA, consumers release every CTA's "
        "slot, producer_tail drains; empty count = consumers * cluster_size; nvidia"),
    "mojo_sm100_matmul": (
        "Mojo SM100 structured matmul in one CTA: the TMA load warp fills the input ring "
        "(expect k*B bytes, k copies of B per stage, drain at exit) and signals the CLC throttle "
        "ring `clc` once per tile; the MMA warp reads each stage with async MMAs (read_async), "
        "releases it with tcgen05.commit (commit_empty) and, per tile of k_tiles iterations, "
        "acquires an accumulator stage of ring `acc`, waits for its MMAs (read_wait 0) and "
        "arrives on acc full; `consumers` epilogue agents read each accumulator and release "
        "it; the scheduler warp consumes the throttle ring once per tile. Counts: input 1/1, "
        "acc 1/consumers, clc 1/1 (rings acc and clc come with it); tiles = the "
        "scheduler role's items (default items/2); nvidia"),
    "cutlass_pingpong": (
        "CUTLASS OrderedSequenceBarrier<Depth = stages, Length = 2> between the two math "
        "warpgroups of the ping-pong kernel, as a ring of `stages` slots (one per ordered "
        "section of a tile: mainloop MMA, epilogue): wg0 starts at phase 1 and waits on "
        "empty (its turn), wg1 starts at phase 0 and waits on full; each writes/reads the "
        "section's token and arrives on the other's signal; counts = consumers (agents per "
        "warpgroup); nvidia or amd"),
}
# The templates whose producers expect and copy transaction bytes (TMA): tx bytes only
NVIDIA_ONLY = ("mojo_input_tile", "sm90_ring", "cutlass_tma_async", "mojo_sm100_matmul")

DEFAULT_CONSUMERS = 1
DEFAULT_TILE_BYTES = 16384
DEFAULT_K_TILES = 2  # mojo_sm100_matmul: k iterations per output tile unless tiles are given


@dataclass(frozen=True)
class _Parameters:
    consumers: int     # consumer agents per CTA
    tile_bytes: int    # B
    k: int             # k_group_size
    cluster_size: int  # K
    stages: int


def parameters(pipeline: dict) -> dict:
    """The template-only parameters in effect, for `Spec.extra`."""
    return {
        "consumers": pipeline.get("consumers", DEFAULT_CONSUMERS),
        "tile_bytes": pipeline.get("tile_bytes", DEFAULT_TILE_BYTES),
    }


def expand(pipeline: dict, roles: list[dict], path) -> tuple[dict, list[dict]]:
    """Return `(pipeline, roles)` with the template's defaults filled in; inputs are not changed.

    The loader calls this only after checking the types and ranges of the keys the user
    wrote and that `backend`, `stages` and `items` are present.
    """
    name = pipeline.get("template")
    if not isinstance(name, str) or name not in TEMPLATES:
        raise _error(path, "template", f"unknown template {name!r} (allowed: "
                                       f"{', '.join(TEMPLATES)})")
    record = BACKEND_RECORDS.get(pipeline.get("backend"))
    if name in NVIDIA_ONLY and record is not None and not record.tx_bytes:
        able = names_with("tx_bytes")
        raise _error(path, "template", f"template {name!r} is not available on backend "
                                       f"{record.name!r} ({able} only; on {record.name} use "
                                       f"mojo_producer_consumer)")
    builder = _BUILDERS[name]
    if name in _READS_USER_ROLES:
        pipeline_defaults, template_roles = builder(pipeline, roles, path)
    else:
        pipeline_defaults, template_roles = builder(pipeline, path)
    return {**pipeline_defaults, **pipeline}, _merge_roles(template_roles, roles)


SM90_EXIT_RING = "exit"  # sm90_ring's end-of-kernel cluster sync (cluster_size > 1)


def template_rings(pipeline: dict) -> dict:
    """The `[ring.NAME]` tables a template brings (the user's own tables override them key by
    key): the rings beside the main one that the modelled kernel composes."""
    consumers = pipeline.get("consumers", DEFAULT_CONSUMERS)
    if pipeline.get("template") == "sm90_ring" and pipeline.get("cluster_size", 1) > 1:
        # The kernel's cluster_sync before exit (_sm90_ring): every agent of every CTA
        # arrives on every CTA's barrier, so each receives (1 + consumers) x K arrivals.
        return {SM90_EXIT_RING: {"stages": 1, "consumer_arrive_count": 1,
                                 "producer_arrive_count": (1 + consumers) * pipeline["cluster_size"]}}
    if pipeline.get("template") != "mojo_sm100_matmul":
        return {}
    # docs/model.md "Templates": accumulator ring of 2 stages, full = 1 MMA
    # commit, empty = every epilogue agent; CLC throttle ring of 2 stages, 1 / 1 (one warp each).
    return {"acc": {"stages": 2, "producer_arrive_count": 1, "consumer_arrive_count": consumers},
            "clc": {"stages": 2, "producer_arrive_count": 1, "consumer_arrive_count": 1}}


def _error(path, key: str, message: str) -> SpecError:
    return SpecError(" ".join(f"{path}: [pipeline] {key}: {message}".splitlines()))


def _parameters(pipeline: dict, default_cluster_size: int = 1) -> _Parameters:
    return _Parameters(
        consumers=pipeline.get("consumers", DEFAULT_CONSUMERS),
        tile_bytes=pipeline.get("tile_bytes", DEFAULT_TILE_BYTES),
        k=pipeline.get("k_group_size", 1),
        cluster_size=pipeline.get("cluster_size", default_cluster_size),
        stages=pipeline.get("stages", 1),
    )


def _merge_roles(template_roles: list[dict], user_roles: list[dict]) -> list[dict]:
    merged = {role["name"]: dict(role) for role in template_roles}
    added = []
    for user_role in user_roles:
        name = user_role.get("name")
        if isinstance(name, str) and name in merged:
            merged[name].update(user_role)  # the user's keys win, one by one
        else:
            added.append(dict(user_role))
    return list(merged.values()) + added


# ---------------------------------------------------------------------------------------
# The templates. Each returns (pipeline defaults, role tables), written as TOML would be.


def _mojo_producer_consumer(pipeline: dict, path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline)
    defaults = {"producer_arrive_count": 1, "consumer_arrive_count": p.consumers}
    roles = [
        {"name": "producer", "side": "producer", "count": 1,
         "body": ["wait_empty", "write", "arrive_full", "advance"]},
        {"name": "consumer", "side": "consumer", "count": p.consumers,
         "body": ["wait_full", "read", "arrive_empty", "advance"]},
    ]
    return defaults, roles


def _mojo_input_tile(pipeline: dict, path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline)
    # Every CTA's MMA commit is multicast to every CTA's empty barrier.
    defaults = {"producer_arrive_count": 1, "consumer_arrive_count": p.cluster_size}
    copies = [f"copy {p.tile_bytes}"] * p.k
    roles = [
        {"name": "producer", "side": "producer", "count": 1,
         "body": ["wait_empty", f"expect_tx {p.k * p.tile_bytes} @leader", *copies, "advance"],
         "epilogue": ["drain"]},
        {"name": "consumer", "side": "consumer", "count": 1,  # the MMA warp
         "body": ["wait_full", "read", "commit_empty to=all", "advance"]},
    ]
    return defaults, roles


def _sm90_ring(pipeline: dict, path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline)
    defaults = {"producer_arrive_count": 1,
                "consumer_arrive_count": p.consumers * p.cluster_size}
    # Both sides start at phase 0; consumers pre-arrive on every empty barrier of every CTA
    # so the producer's first lap passes, then return to stage 0 / phase 0.
    pre_arrival = ["arrive_empty to=all", "advance"] * p.stages + ["reset"]
    roles = [
        {"name": "producer", "side": "producer", "count": 1, "initial_phase": 0,
         "body": ["wait_empty", f"expect_tx {p.tile_bytes}", f"copy {p.tile_bytes}", "advance"]},
        {"name": "consumer", "side": "consumer", "count": p.consumers,
         "prologue": pre_arrival,
         "body": ["wait_full", "read", "arrive_empty to=all", "advance"]},
    ]
    if p.cluster_size > 1:
        # HopperMatmulSM90Kernel.finalize_kernel: `cluster_sync()` when the cluster has more
        # than one CTA, "to ensure shared memory isn't deallocated while other blocks are still
        # using it" (modular/modular max/kernels/src/linalg/matmul/gpu/sm90/matmul_kernels.mojo,
        # 037ca32f). Without it a consumer's release reaches a peer CTA that already exited
        # (inflight_at_exit). barrier.cluster arrive + wait = each agent arrives on every CTA's
        # one-stage ring `exit` and waits on its own CTA's.
        sync = [f"arrive_full ring={SM90_EXIT_RING} to=all", f"wait_full ring={SM90_EXIT_RING}"]
        for role in roles:
            role["epilogue"] = sync
    return defaults, roles


def _cutlass_tma_async(pipeline: dict, path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline, default_cluster_size=2)
    if p.tile_bytes % p.cluster_size:
        raise _error(path, "tile_bytes", f"must be divisible by cluster_size "
                                         f"{p.cluster_size} for template 'cutlass_tma_async' "
                                         f"(each CTA multicasts tile_bytes / cluster_size), "
                                         f"got {p.tile_bytes}")
    defaults = {"producer_arrive_count": 1,
                "consumer_arrive_count": p.consumers * p.cluster_size,
                "cluster_size": p.cluster_size}
    # Each CTA's producer multicasts its share of the tile to every CTA, so every CTA
    # receives B bytes per stage; the elected thread expects them.
    roles = [
        {"name": "producer", "side": "producer", "count": 1,
         "body": ["wait_empty", f"expect_tx {p.tile_bytes} @leader",
                  f"copy {p.tile_bytes // p.cluster_size} to=all", "advance"],
         "epilogue": ["drain"]},  # producer_tail
        {"name": "consumer", "side": "consumer", "count": p.consumers,
         "body": ["wait_full", "read", "arrive_empty to=all", "advance"]},
    ]
    return defaults, roles


def _every(op: str, k_tiles: int, at: int) -> str:
    """`op every=T at=j`: the op runs only in k iterations with item % T == j (per tile)."""
    return f"{op} every={k_tiles} at={at}" if k_tiles > 1 else op


def matmul_tiling(pipeline: dict, user_roles: list[dict], path) -> tuple[int, int]:
    """mojo_sm100_matmul: `(tiles, k_tiles)` with items = tiles * k_tiles.

    `tiles` is the `items` of the user's `scheduler` role (the scheduler warp runs once per
    tile), else items / DEFAULT_K_TILES."""
    items = pipeline.get("items", 0)
    scheduler = [r for r in user_roles if isinstance(r, dict) and r.get("name") == "scheduler"]
    if scheduler and "items" in scheduler[-1]:
        tiles = scheduler[-1]["items"]
        if isinstance(tiles, bool) or not isinstance(tiles, int) or tiles < 0:
            raise SpecError(f"{path}: role 'scheduler' items: must be the number of output "
                            f"tiles, an integer >= 0, for template 'mojo_sm100_matmul' "
                            f"(items = tiles * k_tiles), got {tiles!r}")
        if (tiles == 0) != (items == 0) or (tiles and items % tiles):
            raise _error(path, "items", f"must be tiles * k_tiles for template "
                                        f"'mojo_sm100_matmul' (k iterations in all), a multiple "
                                        f"of the scheduler role's items ({tiles} tiles), "
                                        f"got {items}")
        return tiles, (items // tiles if tiles else 1)
    if items % DEFAULT_K_TILES:
        raise _error(path, "items", f"must be tiles * k_tiles for template 'mojo_sm100_matmul' "
                                    f"(k iterations in all; k_tiles is {DEFAULT_K_TILES} unless "
                                    f"the scheduler role's items give the number of tiles), "
                                    f"got {items}")
    return items // DEFAULT_K_TILES, DEFAULT_K_TILES


def _mojo_sm100_matmul(pipeline: dict, user_roles: list[dict], path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline)
    if p.cluster_size != 1:
        raise _error(path, "cluster_size", f"must be 1 for template 'mojo_sm100_matmul' (it "
                                           f"models one CTA), got {p.cluster_size}")
    tiles, k_tiles = matmul_tiling(pipeline, user_roles, path)
    first, last = 0, k_tiles - 1  # the first and the last k iteration of a tile

    def per_tile(op: str, at: int) -> str:
        return _every(op, k_tiles, at)

    # Input ring (main): 1 full arrival (the load warp's arrive.expect_tx), 1 empty arrival
    # (the MMA warp's tcgen05.commit) in one CTA (docs/model.md "Templates": CLUSTER_M/cta_group +
    # CLUSTER_N - 1 = 1).
    defaults = {"producer_arrive_count": 1, "consumer_arrive_count": 1}
    copies = [f"copy {p.tile_bytes}"] * p.k
    roles = [
        # TMA load warp: per tile it first signals the CLC throttle ring (throttle_signal =
        # producer_signal_and_step), then loads the tile's k iterations; producer tail at exit.
        {"name": "load", "side": "producer", "count": 1,
         "body": [per_tile("wait_empty ring=clc", first), per_tile("arrive_full ring=clc", first),
                  per_tile("advance ring=clc", first),
                  "wait_empty", f"expect_tx {p.k * p.tile_bytes} @leader", *copies, "advance"],
         "epilogue": ["drain"]},
        # MMA warp: consumer of the input ring (async MMAs read the stage; tcgen05.commit
        # releases it once they have read it) and producer of the accumulator ring: at the
        # first k iteration of a tile it acquires an accumulator stage (acquire_for_mma) and
        # its first MMA overwrites the accumulator; after the last one it waits for its MMAs
        # and signals acc full (release_from_mma).
        {"name": "mma", "side": "consumer", "count": 1,
         "body": [per_tile("wait_empty ring=acc", first), "wait_full",
                  per_tile("write ring=acc", first), "read_async", "commit_empty", "advance",
                  per_tile("read_wait 0", last), per_tile("arrive_full ring=acc", last),
                  per_tile("advance ring=acc", last)]},
        # Epilogue warps: once per tile (in the tile's first k iteration, so that its item
        # number is the tag the MMA warp stored), wait for the accumulator, read it, and every
        # epilogue agent arrives on acc empty.
        {"name": "epilogue", "side": "consumer", "count": p.consumers,
         "body": [per_tile("wait_full ring=acc", first), per_tile("read ring=acc", first),
                  per_tile("arrive_empty ring=acc", first), per_tile("advance ring=acc", first)]},
        # Scheduler warp: once per tile, consumer of the throttle ring (signal_and_advance).
        {"name": "scheduler", "side": "consumer", "count": 1, "items": tiles,
         "body": ["wait_full ring=clc", "arrive_empty ring=clc", "advance ring=clc"]},
    ]
    return defaults, roles


def _cutlass_pingpong(pipeline: dict, path) -> tuple[dict, list[dict]]:
    p = _parameters(pipeline)
    # OrderedSequenceBarrier<Depth, 2>: barrier[s][g] has count group_size; group g waits on
    # barrier[s][g] and arrives on barrier[s][(g + 1) % 2]. As a ring: empty[s] = barrier[s][0]
    # (wg0 waits, wg1 arrives), full[s] = barrier[s][1] (wg1 waits, wg0 arrives). Group 0
    # starts at phase 1 (its first turn passes on a fresh barrier), group 1 at phase 0.
    defaults = {"producer_arrive_count": p.consumers, "consumer_arrive_count": p.consumers}
    # One ordered section per stage (Depth = stages; the kernel's are the mainloop MMA and
    # the epilogue). The slot's token is written by wg0 and read by wg1 inside the section,
    # so the sections of one stage must alternate wg0(t), wg1(t), wg0(t + 1), ...
    roles = [
        {"name": "wg0", "side": "producer", "count": p.consumers, "initial_phase": 1,
         "body": ["wait_empty", "write", "arrive_full", "advance"] * p.stages},
        {"name": "wg1", "side": "consumer", "count": p.consumers, "initial_phase": 0,
         "body": ["wait_full", "read", "arrive_empty", "advance"] * p.stages},
    ]
    return defaults, roles


_BUILDERS = {
    "mojo_producer_consumer": _mojo_producer_consumer,
    "mojo_input_tile": _mojo_input_tile,
    "sm90_ring": _sm90_ring,
    "cutlass_tma_async": _cutlass_tma_async,
    "mojo_sm100_matmul": _mojo_sm100_matmul,
    "cutlass_pingpong": _cutlass_pingpong,
}
_READS_USER_ROLES = ("mojo_sm100_matmul",)
