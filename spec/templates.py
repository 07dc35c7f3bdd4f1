"""Presets for `[pipeline] template = "..."`: the pipelines of real libraries.

`expand` runs before validation and fills in what the template implies, as if the user had
written it in TOML: default `[pipeline]` counts and whole `[[role]]` tables. Anything the user
wrote wins: `[pipeline]` keys one by one; a `[[role]]` whose name matches a template role
replaces that role's keys one by one; a `[[role]]` with a new name is added after the
template's roles. Every template is a correct protocol with its default parameters.

Template parameters (from `[pipeline]`):
  consumers     consumer agents per CTA (default 1)
  tile_bytes    bytes of one tile, B (default 16384)
  k_group_size  tiles per barrier pair, k (default 1)
  cluster_size  CTAs, K (default 1; cutlass_tma_async: 2)
  stages        slots (sm90_ring pre-arrives on each)

Sources: reference/mojo_pipeline.md §2, §4a, §5 and reference/mbarrier_cutlass.md §3.
"""
from __future__ import annotations

from dataclasses import dataclass

from spec.schema import SpecError

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
}
NVIDIA_ONLY = ("mojo_input_tile", "sm90_ring", "cutlass_tma_async")

DEFAULT_CONSUMERS = 1
DEFAULT_TILE_BYTES = 16384


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
    if name in NVIDIA_ONLY and pipeline.get("backend") == "amd":
        raise _error(path, "template", f"template {name!r} is not available on backend 'amd' "
                                       f"(nvidia only; on amd use mojo_producer_consumer)")
    pipeline_defaults, template_roles = _BUILDERS[name](pipeline, path)
    return {**pipeline_defaults, **pipeline}, _merge_roles(template_roles, roles)


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


_BUILDERS = {
    "mojo_producer_consumer": _mojo_producer_consumer,
    "mojo_input_tile": _mojo_input_tile,
    "sm90_ring": _sm90_ring,
    "cutlass_tma_async": _cutlass_tma_async,
}
