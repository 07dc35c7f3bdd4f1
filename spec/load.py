"""Read a spec file (TOML) and validate it into `spec.schema.Spec`.

This is the only place that validates (docs/model.md "Spec files (TOML)"). Every
problem becomes a `SpecError` whose str() is one line, compiler-style:

    spec/examples/x.toml: role 'consumer' body[1]: unknown op 'arrive_ful' (expected one of: ...)
    x.toml: [pipeline] stages: must be an integer from 1 to 64, got 0

[expressiveness] additions: `[ring.NAME]` tables and `ring=NAME` on ring ops, `every=K` /
`at=j` on body ops, `read_async`, `read_wait [n]`, `sync_arrive NAME`, `sync_wait NAME`,
`[barrier.NAME] count = K` without roles, role keys `ctas = [...]` and an `initial_phase`
table `{ main = 1, acc = 0 }`. A spec without them loads exactly as in the core language.

Nothing in a spec is ever executed: the file is parsed with `tomllib` and op strings are
split into tokens.
"""
from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pipeproof.spec import templates
from pipeproof.spec.schema import (
    BACKENDS, MAIN_RING, MAX_COUNT, OPS, READ_OPS, RING_OPS, SECTIONS, SIDES, TARGETS, Barrier,
    Op, Ring, Role, Spec, SpecError,
)

VIOLATION_KINDS = (
    "deadlock", "read_before_fill", "overwrite_before_drain", "phase_alias",
    "over_arrival", "tx_range", "inflight_at_exit",
)
EXPECT_VALUES = ("ok",) + VIOLATION_KINDS

MAX_STAGES = 64
MAX_AGENTS = 64           # role count, template `consumers`
MAX_ITEMS = 100_000
MAX_CLUSTER = 16
MAX_PHASE = (1 << 32) - 1
MAX_BYTES = (1 << 32) - 1  # above TX_LIMIT is legal here: the model reports it as tx_range

TOP_LEVEL_KEYS = ("barrier", "pipeline", "ring", "role")
PIPELINE_KEYS = (
    "backend", "cluster_size", "consumer_arrive_count", "consumers", "description", "expect",
    "expect_any", "items", "k_group_size", "name", "producer_arrive_count", "stages",
    "template", "tile_bytes",
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
}
PIPELINE_STR_KEYS = ("name", "description", "template")
TEMPLATE_ONLY_KEYS = ("consumers", "tile_bytes")
# Checked before template expansion: templates never supply these.
REQUIRED_BEFORE_TEMPLATE = ("backend", "stages", "items")
REQUIRED_AFTER_TEMPLATE = ("producer_arrive_count", "consumer_arrive_count")

ROLE_KEYS = (
    "body", "count", "ctas", "epilogue", "initial_phase", "initial_stage", "items", "name",
    "prologue", "side",
)
BARRIER_KEYS = ("count", "roles")
RING_KEYS = ("consumer_arrive_count", "producer_arrive_count", "stages")
RING_INT_RANGES = {
    "stages": (1, MAX_STAGES),
    "producer_arrive_count": (1, MAX_COUNT),
    "consumer_arrive_count": (1, MAX_COUNT),
}

# Op families (docs/model.md "Ops").
COUNT_OPS = ("arrive_full", "arrive_empty", "commit_empty")   # optional count N
BYTE_OPS = ("expect_tx", "copy")                             # required byte count N
TARGET_OPS = COUNT_OPS + BYTE_OPS                            # take to=
WAIT_OPS = ("wait_full", "wait_empty")                       # take unless=ready
BARRIER_OPS = ("sync", "sync_arrive", "sync_wait")           # take a barrier name
NVIDIA_ONLY_OPS = ("expect_tx", "copy")
ITEM_KEYS = ("every", "at")                                  # any op, body only
MAX_READ_WAIT = 64                                           # read_wait [n]: n in 0..64
# Which signal of a ring an op waits on, for the default initial phase per ring.
WAITS_ON_EMPTY = ("wait_empty", "try_empty", "drain")
WAITS_ON_FULL = ("wait_full", "try_full")

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Decimal with optional underscores (as TOML writes integers), or hex.
OP_INTEGER = re.compile(r"(0|[1-9][0-9]*(_[0-9]+)*|0[xX][0-9a-fA-F]+(_[0-9a-fA-F]+)*)")
TOML_POSITION = re.compile(r"^(.*) \(at (?:line (\d+), column (\d+)|end of document)\)$")


class _Invalid(Exception):
    """A problem found while validating; `load_spec_text` adds the path and raises SpecError."""

    def __init__(self, where: str, message: str):
        super().__init__(where, message)
        self.where = where
        self.message = message


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _error(path: str, where: str, message: str) -> SpecError:
    prefix = f"{path}: {where}: " if where else f"{path}: "
    return SpecError(_one_line(prefix + message))


# ---------------------------------------------------------------------------------------
# Public entry points


def load_spec(path) -> Spec:
    """Read and validate the spec file at `path`."""
    return load_spec_text(_read_text(path), str(path))


def load_spec_text(text: str, path: str) -> Spec:
    """Validate spec `text`; `path` names it in messages and gives the default name."""
    path = str(path)
    if not text.strip():
        raise _error(path, "", "empty file (expected a [pipeline] table and [[role]] tables)")
    document = _parse_toml(text, path)
    try:
        return _build_spec(document, path)
    except _Invalid as problem:
        raise _error(path, problem.where, problem.message) from None


def _read_text(path) -> str:
    file = Path(path)
    if not file.exists():
        raise _error(str(path), "", "cannot read spec: no such file (expected a .toml spec file)")
    if file.is_dir():
        raise _error(str(path), "", "cannot read spec: is a directory (expected a .toml spec file)")
    try:
        data = file.read_bytes()
    except OSError as err:
        raise _error(str(path), "", f"cannot read spec: {err.strerror or err} "
                                    "(expected a readable .toml spec file)") from None
    if b"\x00" in data:
        raise _error(str(path), "", "binary file, not a spec (expected UTF-8 TOML text)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _error(str(path), "", f"not UTF-8 text (bad byte at offset {err.start}; "
                                    "expected UTF-8 TOML text)") from None


MAX_NESTING = 64  # tables and arrays inside each other: a spec needs 3


def _parse_toml(text: str, path: str) -> dict:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_syntax_error(str(err), path, text) from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise _error(path, "", f"TOML nested too deeply (a spec nests tables and arrays at most "
                               f"{MAX_NESTING} levels)") from None
    if _nesting(document) > MAX_NESTING:
        raise _error(path, "", f"TOML nested too deeply (a spec nests tables and arrays at most "
                               f"{MAX_NESTING} levels)")
    return document


def _nesting(value, depth=0) -> int:
    """How deep tables and arrays nest, without recursing past MAX_NESTING."""
    deepest, todo = depth, [(value, depth)]
    while todo:
        item, d = todo.pop()
        deepest = max(deepest, d)
        if d > MAX_NESTING:
            return d
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        todo.extend((child, d + 1) for child in children)
    return deepest


def _toml_syntax_error(message: str, path: str, text: str = "") -> SpecError:
    """`x.toml:3:9: TOML syntax error: Invalid value` (tomllib's position moved to the front;
    "end of document" becomes the line and column where the text ends)."""
    match = TOML_POSITION.match(message)
    if match is None:
        return _error(path, "", f"TOML syntax error: {message} (see https://toml.io)")
    what, line, column = match.groups()
    if not line:
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
        what += " (at the end of the file)"
    return SpecError(_one_line(f"{path}:{line}:{column}: TOML syntax error: {what} "
                               f"(see https://toml.io)"))


# ---------------------------------------------------------------------------------------
# Small value checks. Each returns the value or raises _Invalid(where, message).


def _show(value) -> str:
    """A value as the user would recognise it, on one short line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_int(value, low: int, high: int, where: str) -> int:
    # bool is a subclass of int in Python; TOML true is not a number.
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Invalid(where, f"must be an integer from {low} to {high}, got {_show(value)}")
    return value


def _check_str(value, where: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(where, f"must be a string, got {_show(value)}")
    return value


def _check_choice(value, allowed, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(where, f"must be a string, one of: {', '.join(allowed)}; got {_show(value)}")
    if value not in allowed:
        raise _Invalid(where, f"unknown {what} {value!r} (allowed: {', '.join(allowed)})"
                              f"{_did_you_mean(value, allowed)}")
    return value


def _check_table(value, where: str, hint: str) -> dict:
    if not isinstance(value, dict):
        raise _Invalid(where, f"must be a table ({hint}), got {_show(value)}")
    return value


def _check_keys(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise _Invalid(where, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})"
                                  f"{_did_you_mean(key, allowed)}")


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# ---------------------------------------------------------------------------------------
# The document


def _build_spec(document: dict, path: str) -> Spec:
    _check_keys(document, TOP_LEVEL_KEYS, "top level")
    if "pipeline" not in document:
        required = REQUIRED_BEFORE_TEMPLATE + REQUIRED_AFTER_TEMPLATE
        raise _Invalid("[pipeline]", f"missing required table (write [pipeline] with "
                                     f"{', '.join(required)}, or a template)")
    pipeline = _check_table(document["pipeline"], "pipeline", "write [pipeline]")
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
    )
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


# ---------------------------------------------------------------------------------------
# [pipeline]


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
    for key in REQUIRED_BEFORE_TEMPLATE:
        _require(pipeline, key)
    if "template" not in pipeline:
        for key in TEMPLATE_ONLY_KEYS:
            if key in pipeline:
                raise _Invalid(f"[pipeline] {key}", "only allowed with a template (set "
                               f"[pipeline] template to one of: {', '.join(templates.TEMPLATES)})")


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
    if backend == "amd" and cluster_size > 1:
        raise _Invalid("[pipeline] cluster_size", f"must be 1 on backend 'amd' (clusters are "
                                                  f"nvidia only), got {cluster_size}")
    template = pipeline.get("template")
    return _PipelineSettings(
        name=pipeline.get("name", Path(path).stem),
        description=pipeline.get("description", ""),
        backend=backend,
        stages=pipeline["stages"],
        k_group_size=pipeline.get("k_group_size", 1),
        producer_arrive_count=pipeline["producer_arrive_count"],
        consumer_arrive_count=pipeline["consumer_arrive_count"],
        items=pipeline["items"],
        cluster_size=cluster_size,
        expect=pipeline.get("expect"),
        expect_any=tuple(pipeline.get("expect_any", ())),
        template=template,
        template_parameters=(templates.parameters(pipeline) if template else {}),
    )


# ---------------------------------------------------------------------------------------
# [barrier.NAME]


def _barriers(tables: dict, role_names: list[str]) -> dict[str, Barrier]:
    return {name: _barrier(name, table, role_names) for name, table in tables.items()}


def _barrier(name: str, table: dict, role_names: list[str]) -> Barrier:
    where = f"[barrier.{name}]"
    if not IDENTIFIER.fullmatch(name):
        raise _Invalid(f"[barrier.{name!r}]", f"bad barrier name {name!r} (expected an "
                                              "identifier: a letter or _ then letters, digits, _)")
    _check_keys(table, BARRIER_KEYS, where)
    count = table.get("count")
    if count is not None:
        _check_int(count, 1, MAX_COUNT, f"{where} count")
    if "roles" not in table:
        if count is None:
            raise _Invalid(where, "missing required key: roles or count (roles = a non-empty "
                                  f"list of role names: {', '.join(role_names)}; count = arrivals "
                                  f"per CTA, an integer from 1 to {MAX_COUNT}; or both)")
        return Barrier(name=name, roles=(), count=count)  # any role may use it
    roles = table["roles"]
    if not isinstance(roles, list) or not roles:
        raise _Invalid(f"{where} roles", "must be a non-empty list of role names (roles: "
                                         f"{', '.join(role_names)}), got {_show(roles)}")
    for index, role in enumerate(roles):
        member = f"{where} roles[{index}]"
        _check_choice(role, role_names, member, "role")
        if role in roles[:index]:
            raise _Invalid(member, f"role {role!r} is listed twice (list each role once)")
    return Barrier(name=name, roles=tuple(roles), count=count)


# ---------------------------------------------------------------------------------------
# [ring.NAME]


def _rings(tables: dict) -> dict[str, Ring]:
    return {name: _ring(name, table) for name, table in tables.items()}


def _ring(name: str, table: dict) -> Ring:
    where = f"[ring.{name}]"
    if name == MAIN_RING:
        raise _Invalid(where, f"ring name {MAIN_RING!r} is reserved for the [pipeline] ring "
                              "(set its stages and counts in [pipeline]; name extra rings "
                              "anything else)")
    if not IDENTIFIER.fullmatch(name):
        raise _Invalid(f"[ring.{name!r}]", f"bad ring name {name!r} (expected an identifier: "
                                           "a letter or _ then letters, digits, _)")
    _check_keys(table, RING_KEYS, where)
    values = {}
    for key, (low, high) in RING_INT_RANGES.items():
        if key not in table:
            raise _Invalid(f"{where} {key}", f"missing required key (an integer from {low} "
                                             f"to {high})")
        values[key] = _check_int(table[key], low, high, f"{where} {key}")
    return Ring(name=name, **values)


# ---------------------------------------------------------------------------------------
# [[role]]


@dataclass(frozen=True)
class _Context:
    """What op and role checks need from the rest of the spec."""
    settings: _PipelineSettings
    barriers: dict[str, Barrier]
    rings: dict[str, Ring]  # the [ring.NAME] rings (not main)

    @property
    def ring_names(self) -> list[str]:
        return [MAIN_RING] + sorted(self.rings)


def _role_names(raw_roles: list[dict]) -> list[str]:
    names = []
    for index, raw in enumerate(raw_roles):
        where = f"role[{index}] name"
        if "name" not in raw:
            raise _Invalid(where, "missing required key (an identifier, e.g. 'producer')")
        name = _check_str(raw["name"], where)
        if not IDENTIFIER.fullmatch(name):
            raise _Invalid(where, f"bad role name {name!r} (expected an identifier: a letter or _ "
                                  "then letters, digits, _)")
        if name in names:
            raise _Invalid(where, f"duplicate role name {name!r} (role names must be unique)")
        names.append(name)
    return names


def _role(raw: dict, name: str, context: _Context) -> Role:
    settings = context.settings
    label = f"role {name!r}"
    _check_keys(raw, ROLE_KEYS, label)
    if "side" not in raw:
        raise _Invalid(f"{label} side", f"missing required key (allowed: {', '.join(SIDES)})")
    side = _check_choice(raw["side"], SIDES, f"{label} side", "side")
    if "count" not in raw:
        raise _Invalid(f"{label} count", f"missing required key (agents per CTA, an integer "
                                         f"from 1 to {MAX_AGENTS})")
    count = _check_int(raw["count"], 1, MAX_AGENTS, f"{label} count")
    items = _check_int(raw.get("items", settings.items), 0, MAX_ITEMS, f"{label} items")
    initial_stage = _check_int(raw.get("initial_stage", 0), 0, settings.stages - 1,
                               f"{label} initial_stage")
    ctas = _ctas(raw["ctas"], settings.cluster_size, f"{label} ctas") if "ctas" in raw else ()
    phases = _initial_phases(raw.get("initial_phase"), context, f"{label} initial_phase")
    programs = {
        section: _program(raw.get(section, []), name, section, context)
        for section in SECTIONS
    }
    side_default = 1 if side == "producer" else 0
    initial_phase = phases.get(MAIN_RING, side_default)
    ring_phases = tuple(
        (ring, phases[ring] if ring in phases
         else _default_phase(ring, programs, side_default))
        for ring in sorted(context.rings))
    return Role(name=name, side=side, count=count, items=items, initial_stage=initial_stage,
                initial_phase=initial_phase, ctas=ctas, ring_phases=ring_phases, **programs)


def _ctas(value, cluster_size: int, where: str) -> tuple[int, ...]:
    """`ctas = [..]`: distinct CTA indices of the cluster, returned sorted."""
    allowed = f"CTA indices from 0 to {cluster_size - 1} (cluster_size is {cluster_size})"
    if not isinstance(value, list) or not value:
        raise _Invalid(where, f"must be a non-empty list of {allowed}, got {_show(value)}")
    for index, cta in enumerate(value):
        if isinstance(cta, bool) or not isinstance(cta, int) or not 0 <= cta < cluster_size:
            raise _Invalid(f"{where}[{index}]", f"must be an integer from 0 to {cluster_size - 1} "
                                                f"(cluster_size is {cluster_size}), "
                                                f"got {_show(cta)}")
        if cta in value[:index]:
            raise _Invalid(f"{where}[{index}]", f"CTA {cta} is listed twice (list each CTA once)")
    return tuple(sorted(value))


def _initial_phases(value, context: _Context, where: str) -> dict[str, int]:
    """`initial_phase`: an int (the main ring) or a table {ring = phase}; {} when absent."""
    if value is None:
        return {}
    rings = context.ring_names
    if not isinstance(value, dict):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PHASE:
            raise _Invalid(where, f"must be an integer from 0 to {MAX_PHASE} (the main ring), or "
                                  f"a table of ring = phase like {{ main = 1 }} (rings: "
                                  f"{', '.join(rings)}), got {_show(value)}")
        return {MAIN_RING: value}
    for ring, phase in value.items():
        if ring not in rings:
            raise _Invalid(f"{where}.{ring}", f"unknown ring {ring!r} (allowed: "
                                              f"{', '.join(rings)}){_did_you_mean(ring, rings)}")
        _check_int(phase, 0, MAX_PHASE, f"{where}.{ring}")
    return dict(value)


def _default_phase(ring: str, programs: dict[str, tuple[Op, ...]], side_default: int) -> int:
    """1 if the role waits on `empty` of the ring, 0 if on `full`; else by side (docs/model.md
    "Agents, roles and CTAs")."""
    ops = [op for section in SECTIONS for op in programs[section] if op.ring == ring]
    on_empty = any(op.name in WAITS_ON_EMPTY for op in ops)
    on_full = any(op.name in WAITS_ON_FULL for op in ops)
    if on_empty != on_full:
        return 1 if on_empty else 0
    return side_default  # waits on both signals of the ring, or on neither


def _program(value, role: str, section: str, context: _Context) -> tuple[Op, ...]:
    where = f"role {role!r} {section}"
    if not isinstance(value, list):
        raise _Invalid(where, f"must be a list of op strings (e.g. [\"wait_full\", \"read\"]), "
                              f"got {_show(value)}")
    ops = []
    for index, text in enumerate(value):
        op_where = f"{where}[{index}]"
        op = _parse_op(text, op_where)
        _check_op_in_context(op, op_where, role, section, context)
        ops.append(op)
    return tuple(ops)


# ---------------------------------------------------------------------------------------
# Ops: "OP [N] [key=value ...] [@leader]"


def _parse_op(text, where: str) -> Op:
    """Parse one op string; context rules (section, backend, barriers) are checked elsewhere."""
    if not isinstance(text, str):
        raise _Invalid(where, f"must be an op string (e.g. \"wait_full\"), got {_show(text)}")
    tokens = text.split()
    if not tokens:
        raise _Invalid(where, f"empty op (expected one of: {', '.join(OPS)})")
    name = tokens[0]
    if name not in OPS:
        context = f" in {text!r}" if text.strip() != name else ""
        raise _Invalid(where, f"unknown op {name!r}{context} (expected one of: {', '.join(OPS)})"
                              f"{_did_you_mean(name, OPS)}")
    operands, options, leader_only = _split_tokens(tokens[1:], text, where)
    fields = _operand_fields(name, operands, text, where)
    fields.update(_option_fields(name, options, text, where))
    return Op(name=name, leader_only=leader_only, text=text, **fields)


def _split_tokens(tokens: list[str], text: str, where: str):
    operands, options, leader_only = [], {}, False
    for token in tokens:
        if token.startswith("@"):
            if token != "@leader":
                raise _Invalid(where, f"op {text!r}: unknown qualifier {token!r} "
                                      "(allowed: @leader)")
            if leader_only:
                raise _Invalid(where, f"op {text!r}: @leader given twice (write it once)")
            leader_only = True
        elif "=" in token:
            key, _, value = token.partition("=")
            if key in options:
                raise _Invalid(where, f"op {text!r}: duplicate key {key!r} (give each key once)")
            options[key] = value
        else:
            operands.append(token)
    return operands, options, leader_only


def _operand_fields(name: str, operands: list[str], text: str, where: str) -> dict:
    """The positional operand: a count, a byte count, a barrier name, or nothing."""
    if name in COUNT_OPS:
        _at_most_one(operands, f"{name} takes at most one count", text, where)
        if not operands:
            return {}
        return {"n": _op_integer(operands[0], 1, MAX_COUNT, "count", text, where)}
    if name in BYTE_OPS:
        _at_most_one(operands, f"{name} takes one byte count", text, where)
        if not operands:
            raise _Invalid(where, f"op {text!r}: missing byte count (write '{name} BYTES', "
                                  f"e.g. '{name} 16384')")
        return {"n": _op_integer(operands[0], 1, MAX_BYTES, "byte count", text, where)}
    if name == "read_wait":
        _at_most_one(operands, "read_wait takes at most one count", text, where)
        if not operands:
            return {"n": 0}  # wait until no async read of the agent is in flight
        return {"n": _op_integer(operands[0], 0, MAX_READ_WAIT, "count", text, where)}
    if name in BARRIER_OPS:
        _at_most_one(operands, f"{name} takes one barrier name", text, where)
        if not operands:
            raise _Invalid(where, f"op {text!r}: missing barrier name (write '{name} NAME' with "
                                  "NAME defined in [barrier.NAME])")
        if not IDENTIFIER.fullmatch(operands[0]):
            raise _Invalid(where, f"op {text!r}: bad barrier name {operands[0]!r} (expected an "
                                  "identifier defined in [barrier.NAME])")
        return {"barrier": operands[0]}
    if operands:
        raise _Invalid(where, f"op {text!r}: unexpected operand {operands[0]!r} "
                              f"({name} takes no operand)")
    return {}


def _at_most_one(operands: list[str], rule: str, text: str, where: str) -> None:
    if len(operands) > 1:
        raise _Invalid(where, f"op {text!r}: unexpected extra operand {operands[1]!r} ({rule})")


def _op_integer(token: str, low: int, high: int, what: str, text: str, where: str) -> int:
    value = int(token, 0) if OP_INTEGER.fullmatch(token) else None
    if value is None or not low <= value <= high:
        raise _Invalid(where, f"op {text!r}: {what} must be an integer from {low} to {high}, "
                              f"got {token!r}")
    return value


def _option_fields(name: str, options: dict[str, str], text: str, where: str) -> dict:
    """key=value options: to= on arrivals, expect_tx, copy, commit; unless=ready on waits;
    ring= on ring ops; every= and at= on any op (their section is checked in context)."""
    allowed = (("to",) if name in TARGET_OPS else ("unless",) if name in WAIT_OPS else ()) + \
        (("ring",) if name in RING_OPS else ()) + ITEM_KEYS
    fields = {}
    for key, value in options.items():
        if key == "ring" and name not in RING_OPS:
            raise _Invalid(where, f"op {text!r}: ring= is not allowed on {name} (it does not act "
                                  f"on a ring; ring= is allowed on: {', '.join(RING_OPS)})")
        if key not in allowed:
            hint = ", ".join(f"{a}=..." for a in allowed)
            raise _Invalid(where, f"op {text!r}: unknown key {key!r} (allowed on {name}: {hint})"
                                  f"{_did_you_mean(key, allowed)}")
        if key == "ring":
            if not IDENTIFIER.fullmatch(value):
                raise _Invalid(where, f"op {text!r}: bad ring name {value!r} (expected {MAIN_RING} "
                                      "or an identifier defined in [ring.NAME])")
            fields["ring"] = value  # defined or not: checked in context
        elif key == "every":
            fields["every"] = _op_integer(value, 1, MAX_ITEMS, "every", text, where)
        elif key == "at":
            pass  # below, against every
        elif key == "to":
            if value not in TARGETS:
                raise _Invalid(where, f"op {text!r}: unknown target {value!r} (allowed: to="
                                      f"{', to='.join(TARGETS)})")
            fields["to"] = value
        elif key == "unless":
            if value != "ready":
                raise _Invalid(where, f"op {text!r}: unless={value} is not supported "
                                      "(allowed: unless=ready)")
            fields["unless_ready"] = True
    if "at" in options:
        if "every" not in options:
            raise _Invalid(where, f"op {text!r}: at= needs every= (write 'every=K at=j' to run "
                                  "the op in items with item % K == j)")
        every = fields["every"]
        fields["at"] = _op_integer(options["at"], 0, every - 1, f"at (with every={every})",
                                   text, where)
    return fields


def _check_op_in_context(op: Op, where: str, role: str, section: str,
                         context: _Context) -> None:
    settings = context.settings
    if section != "body" and _has_item_keys(op):
        raise _Invalid(where, f"op {op.text!r}: every=/at= are not allowed in {section} (they "
                              f"select items, so they are only allowed in body)")
    if settings.backend != "nvidia" and op.name in NVIDIA_ONLY_OPS:
        raise _Invalid(where, f"op {op.text!r}: {op.name!r} is not available on backend "
                              f"{settings.backend!r} (nvidia only)")
    if op.ring != MAIN_RING and op.ring not in context.rings:
        rings = context.ring_names
        raise _Invalid(where, f"op {op.text!r}: ring {op.ring!r} is not defined (define "
                              f"[ring.{op.ring}]; defined: {', '.join(rings)})"
                              f"{_did_you_mean(op.ring, rings)}")
    if op.name in BARRIER_OPS:
        _check_sync(op, where, role, context.barriers)


def _has_item_keys(op: Op) -> bool:
    """Whether the op as written has every= or at= (every=1 included)."""
    return any(token.partition("=")[0] in ITEM_KEYS for token in op.text.split()[1:]
               if "=" in token)


def _check_sync(op: Op, where: str, role: str, barriers: dict[str, Barrier]) -> None:
    barrier = barriers.get(op.barrier)
    if barrier is None:
        defined = ", ".join(sorted(barriers)) or "none"
        raise _Invalid(where, f"op {op.text!r}: barrier {op.barrier!r} is not defined "
                              f"(define [barrier.{op.barrier}]; defined: {defined})")
    if barrier.roles and role not in barrier.roles:
        raise _Invalid(where, f"op {op.text!r}: role {role!r} is not in [barrier.{op.barrier}] "
                              f"roles (roles: {', '.join(barrier.roles)})")
