"""The [pipeline] table (spec.load): its keys, types and ranges (checked before a template
expands it, and again after), the verdicts `expect` may name, and `_PipelineSettings`, the
validated values."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeproof.backends.capabilities import BACKENDS as BACKEND_RECORDS, names_with
from pipeproof.spec import templates
from pipeproof.spec.load_checks import (
    MAX_AGENTS, MAX_CLUSTER, MAX_ITEMS, MAX_STAGES, _check_choice, _check_int, _check_keys,
    _check_str, _Invalid, _show,
)
from pipeproof.spec.schema import BACKENDS, MAX_COUNT
from pipeproof.spec.vocabulary import EXPECT_VALUES, KINDS as VIOLATION_KINDS  # noqa: F401 (spec.load's)


PIPELINE_KEYS = (
    "backend", "cluster_size", "consumer_arrive_count", "consumers", "description", "expect",
    "expect_any", "items", "k_blocks", "k_group_size", "name", "producer_arrive_count",
    "stages", "template", "tile_bytes", "tiles",
)
PIPELINE_INT_RANGES = {
    "stages": (1, MAX_STAGES),
    "k_group_size": (1, 64),
    "producer_arrive_count": (1, MAX_COUNT),
    "consumer_arrive_count": (1, MAX_COUNT),
    "items": (0, MAX_ITEMS),
    "cluster_size": (1, MAX_CLUSTER),
    "consumers": (1, MAX_AGENTS),
    "tile_bytes": (16, MAX_COUNT),
    "tiles": (0, MAX_ITEMS),
    "k_blocks": (1, MAX_ITEMS),
}
PIPELINE_STR_KEYS = ("name", "description", "template")
TEMPLATE_ONLY_KEYS = ("consumers", "tile_bytes")
# Checked before template expansion: templates never supply these.
REQUIRED_BEFORE_TEMPLATE = ("backend", "stages", "items")
REQUIRED_AFTER_TEMPLATE = ("producer_arrive_count", "consumer_arrive_count")


@dataclass(frozen=True)
class _PipelineSettings:
    name: str
    description: str
    backend: str
    stages: int
    k_group_size: int
    producer_arrive_count: int
    consumer_arrive_count: int
    items: int
    cluster_size: int
    expect: str | None
    expect_any: tuple[str, ...]
    template: str | None
    template_parameters: dict
    tiles: int | None = None   # nested loops (spec.load_loops): work tiles, k-blocks per tile
    k_blocks: int = 1


def _check_pipeline_before_template(pipeline: dict) -> None:
    """Keys, types and ranges of what the user wrote, so a template can trust its inputs."""
    _check_keys(pipeline, PIPELINE_KEYS, "[pipeline]")
    for key, value in pipeline.items():
        where = f"[pipeline] {key}"
        if key in PIPELINE_INT_RANGES:
            _check_int(value, *PIPELINE_INT_RANGES[key], where)
        elif key in PIPELINE_STR_KEYS:
            _check_str(value, where)
        elif key == "backend":
            _check_choice(value, BACKENDS, where, "backend")
        elif key == "expect":
            _check_choice(value, EXPECT_VALUES, where, "verdict")
        elif key == "expect_any":
            _check_expect_any(value, where)
    _check_loop_counts(pipeline)
    for key in REQUIRED_BEFORE_TEMPLATE:
        if key != "items" or "tiles" not in pipeline:
            _require(pipeline, key)
    if "template" not in pipeline:
        for key in TEMPLATE_ONLY_KEYS:
            if key in pipeline:
                raise _Invalid(f"[pipeline] {key}", "only allowed with a template (set "
                               f"[pipeline] template to one of: {', '.join(templates.TEMPLATES)})")


def _check_loop_counts(pipeline: dict) -> None:
    """Nested loops: `tiles` (and `k_blocks`, k-blocks per tile) replace `items`."""
    if "tiles" in pipeline and "items" in pipeline:
        raise _Invalid("[pipeline] items", "not allowed with tiles (with nested loops each role "
                                           "runs tiles * k_blocks k-blocks; set tiles and "
                                           "k_blocks, or items alone)")
    if "k_blocks" in pipeline and "tiles" not in pipeline:
        raise _Invalid("[pipeline] k_blocks", "only allowed with tiles (k-blocks per work tile; "
                                              "set [pipeline] tiles too)")


def _check_expect_any(value, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Invalid(where, f"must be a list of verdicts (allowed: {', '.join(EXPECT_VALUES)}), "
                              f"got {_show(value)}")
    return tuple(_check_choice(item, EXPECT_VALUES, f"{where}[{index}]", "verdict")
                 for index, item in enumerate(value))


def _require(pipeline: dict, key: str) -> None:
    if key not in pipeline:
        low, high = PIPELINE_INT_RANGES.get(key, (None, None))
        allowed = (f"one of: {', '.join(BACKENDS)}" if key == "backend"
                   else f"an integer from {low} to {high}")
        raise _Invalid(f"[pipeline] {key}", f"missing required key ({allowed})")


def _pipeline_settings(pipeline: dict, path: str) -> _PipelineSettings:
    """The validated [pipeline] values, after any template filled in defaults."""
    _check_pipeline_before_template(pipeline)  # template output obeys the same rules
    for key in REQUIRED_AFTER_TEMPLATE:
        _require(pipeline, key)
    backend = pipeline["backend"]
    cluster_size = pipeline.get("cluster_size", 1)
    if not BACKEND_RECORDS[backend].clusters and cluster_size > 1:
        able = names_with("clusters")
        raise _Invalid("[pipeline] cluster_size", f"must be 1 on backend {backend!r} (clusters are "
                                                  f"{able} only), got {cluster_size}")
    template = pipeline.get("template")
    tiles, k_blocks = pipeline.get("tiles"), pipeline.get("k_blocks", 1)
    return _PipelineSettings(
        name=pipeline.get("name", Path(path).stem),
        description=pipeline.get("description", ""),
        backend=backend,
        stages=pipeline["stages"],
        k_group_size=pipeline.get("k_group_size", 1),
        producer_arrive_count=pipeline["producer_arrive_count"],
        consumer_arrive_count=pipeline["consumer_arrive_count"],
        items=pipeline["items"] if tiles is None else tiles * k_blocks,
        cluster_size=cluster_size,
        expect=pipeline.get("expect"),
        expect_any=tuple(pipeline.get("expect_any", ())),
        template=template,
        template_parameters=(templates.parameters(pipeline) if template else {}),
        tiles=tiles,
        k_blocks=k_blocks,
    )
