"""Read a spec file (TOML) and validate it into `spec.schema.Spec`.

This module and its parts (below) are the only place that validates (docs/model.md "Spec
files (TOML)"). Every problem becomes a `SpecError` whose str() is one line, compiler-style:

    spec/examples/x.toml: role 'consumer' body[1]: unknown op 'arrive_ful' (expected one of: ...)
    x.toml: [pipeline] stages: must be an integer from 1 to 64, got 0

[expressiveness] additions: `[ring.NAME]` tables and `ring=NAME` on ring ops, `every=K` /
`at=j` on body ops, `read_async`, `read_wait [n]`, `sync_arrive NAME`, `sync_wait NAME`,
`[barrier.NAME] count = K` without roles, role keys `ctas = [...]` and an `initial_phase`
table `{ main = 1, acc = 0 }`. A spec without them loads exactly as in the core language.

Nothing in a spec is ever executed: the file is parsed with `tomllib` and op strings are
split into tokens.

The parts: spec.load_toml (reading the file and its TOML; syntax errors at line and column),
spec.load_checks (limits, the problem type and small value checks), spec.load_pipeline
([pipeline]), spec.load_roles ([barrier.NAME], [ring.NAME], [[role]] and ops in context),
spec.ops_syntax (the op-string parser); this module holds the entry points, the document's
shape and the cross-checks on the built spec.
"""
from __future__ import annotations

from pipeproof.spec import templates
from pipeproof.spec.load_checks import (
    IDENTIFIER, MAX_AGENTS, MAX_BYTES, MAX_CLUSTER, MAX_ITEMS, MAX_PHASE, MAX_STAGES, _check_keys,
    _check_table, _error, _Invalid, _show,
)
from pipeproof.spec.load_loops import check_loop_levels
from pipeproof.spec.load_pipeline import (
    EXPECT_VALUES, PIPELINE_INT_RANGES, PIPELINE_KEYS, PIPELINE_STR_KEYS,
    REQUIRED_AFTER_TEMPLATE, REQUIRED_BEFORE_TEMPLATE, TEMPLATE_ONLY_KEYS, VIOLATION_KINDS,
    _check_pipeline_before_template, _pipeline_settings,
)
from pipeproof.spec.load_roles import (
    BARRIER_KEYS, RING_INT_RANGES, RING_KEYS, ROLE_KEYS, _barriers, _Context, _role, _role_names,
    _rings,
)
from pipeproof.spec.load_toml import MAX_NESTING, TOML_POSITION, parse_toml, read_text, strip_bom
from pipeproof.spec.ops_syntax import (
    BARRIER_OPS, BYTE_OPS, COUNT_OPS, ITEM_KEYS, MAX_READ_WAIT, NVIDIA_ONLY_OPS, OP_INTEGER,
    TARGET_OPS, WAIT_OPS, WAITS_ON_EMPTY, WAITS_ON_FULL,
)
from pipeproof.spec.schema import READ_OPS, SECTIONS, Spec

__all__ = [
    "load_spec", "load_spec_text",
    # the limits, key lists and op families, as before the split
    "BARRIER_KEYS", "BARRIER_OPS", "BYTE_OPS", "COUNT_OPS", "EXPECT_VALUES", "IDENTIFIER",
    "ITEM_KEYS", "MAX_AGENTS", "MAX_BYTES", "MAX_CLUSTER", "MAX_ITEMS", "MAX_NESTING",
    "MAX_PHASE", "MAX_READ_WAIT", "MAX_STAGES", "NVIDIA_ONLY_OPS", "OP_INTEGER",
    "PIPELINE_INT_RANGES", "PIPELINE_KEYS", "PIPELINE_STR_KEYS", "REQUIRED_AFTER_TEMPLATE",
    "REQUIRED_BEFORE_TEMPLATE", "RING_INT_RANGES", "RING_KEYS", "ROLE_KEYS", "TARGET_OPS",
    "TEMPLATE_ONLY_KEYS", "TOML_POSITION", "TOP_LEVEL_KEYS", "VIOLATION_KINDS", "WAIT_OPS",
    "WAITS_ON_EMPTY", "WAITS_ON_FULL",
]


TOP_LEVEL_KEYS = ("barrier", "pipeline", "ring", "role", "sweep")


# ---------------------------------------------------------------------------------------
# Public entry points


def load_spec(path) -> Spec:
    """Read and validate the spec file at `path`."""
    return load_spec_text(read_text(path), str(path))


def load_spec_text(text: str, path: str) -> Spec:
    """Validate spec `text`; `path` names it in messages and gives the default name."""
    path = str(path)
    text = strip_bom(text)
    if not text.strip():
        raise _error(path, "", "empty file (expected a [pipeline] table and [[role]] tables)")
    document = parse_toml(text, path)
    try:
        return _build_spec(document, path)
    except _Invalid as problem:
        raise _error(path, problem.where, problem.message) from None


# ---------------------------------------------------------------------------------------
# The document


def _build_spec(document: dict, path: str) -> Spec:
    _check_keys(document, TOP_LEVEL_KEYS, "top level")
    if "pipeline" not in document:
        required = REQUIRED_BEFORE_TEMPLATE + REQUIRED_AFTER_TEMPLATE
        raise _Invalid("[pipeline]", f"missing required table (write [pipeline] with "
                                     f"{', '.join(required)}, or a template)")
    pipeline = _check_table(document["pipeline"], "pipeline", "write [pipeline]")
    # [sweep] lists the configurations `pipeproof sweep` checks (checker/sweep/grid.py reads
    # it); verify and prove check the spec as written, the table's values are not theirs.
    _check_table(document.get("sweep", {}), "sweep", "write [sweep] with KEY = [values]")
    raw_roles = _role_tables(document.get("role", []))
    raw_barriers = _barrier_tables(document.get("barrier", {}))
    raw_rings = _ring_tables(document.get("ring", {}))

    _check_pipeline_before_template(pipeline)
    if "template" in pipeline:
        pipeline, raw_roles = templates.expand(pipeline, raw_roles, path)
        brought = templates.template_rings(pipeline)
        raw_rings = {name: {**brought.get(name, {}), **raw_rings.get(name, {})}
                     for name in {**brought, **raw_rings}}
    settings = _pipeline_settings(pipeline, path)

    if not raw_roles:
        raise _Invalid("[[role]]", "no roles (expected at least one [[role]] table with name, "
                                   "side, count and body)")
    role_names = _role_names(raw_roles)
    barriers = _barriers(raw_barriers, role_names)
    rings = _rings(raw_rings)
    context = _Context(settings, barriers, rings)
    roles = tuple(_role(raw, name, context) for raw, name in zip(raw_roles, role_names))

    spec = Spec(
        path=path,
        name=settings.name,
        backend=settings.backend,
        stages=settings.stages,
        producer_arrive_count=settings.producer_arrive_count,
        consumer_arrive_count=settings.consumer_arrive_count,
        items=settings.items,
        roles=roles,
        k_group_size=settings.k_group_size,
        cluster_size=settings.cluster_size,
        barriers=tuple(barriers[name] for name in sorted(barriers)),
        rings=tuple(rings[name] for name in sorted(rings)),
        expect=settings.expect,
        expect_any=settings.expect_any,
        template=settings.template,
        description=settings.description,
        extra=settings.template_parameters,
        tiles=settings.tiles,
        k_blocks=settings.k_blocks,
    )
    check_loop_levels(spec)
    _check_read_pairing(spec)
    return spec


def _check_read_pairing(spec: Spec) -> None:
    """Each read outside the fills' own sections must pair with one fill (Spec.read_pairs_with)."""
    for role in spec.roles:
        for section in SECTIONS:
            for i, op in enumerate(getattr(role, section)):
                if op.name in READ_OPS and spec.read_pairs_with(section, op.ring) is None:
                    raise _Invalid(
                        f"role {role.name!r} {section}[{i}]",
                        f"op {op.text!r}: no fill pairs with this read: ring {op.ring!r} is "
                        f"filled in the body but not in the epilogue, so which item it expects "
                        f"is not said (fill the ring in the epilogue too, or read it in the body)")


def _role_tables(value) -> list[dict]:
    hint = "an array of tables: write [[role]] for each role"
    if not isinstance(value, list):
        raise _Invalid("role", f"must be {hint}, got {_show(value)}")
    for index, table in enumerate(value):
        _check_table(table, f"role[{index}]", hint)
    return list(value)


def _barrier_tables(value) -> dict:
    tables = _check_table(value, "barrier", "write [barrier.NAME] for each named barrier")
    for name, table in tables.items():
        _check_table(table, f"[barrier] {name}", f"write [barrier.{name}] with roles = [...] "
                                                 "or count = K")
    return tables


def _ring_tables(value) -> dict:
    tables = _check_table(value, "ring", "write [ring.NAME] for each extra ring")
    for name, table in tables.items():
        _check_table(table, f"[ring] {name}", f"write [ring.{name}] with "
                                              f"{', '.join(sorted(RING_INT_RANGES))}")
    return tables
