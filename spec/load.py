"""Read a spec file (TOML) and validate it into `spec.schema.Spec`.

This is the only place that validates (DESIGN.md "Spec files (TOML): the contract"). Every
problem becomes a `SpecError` whose str() is one line, compiler-style:

    spec/examples/x.toml: role 'consumer' body[1]: unknown op 'arrive_ful' (expected one of: ...)
    x.toml: [pipeline] stages: must be an integer from 1 to 64, got 0

Nothing in a spec is ever executed: the file is parsed with `tomllib` and op strings are
split into tokens.
"""
from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from spec import templates
from spec.schema import (
    BACKENDS, MAX_COUNT, OPS, SIDES, TARGETS, Barrier, Op, Role, Spec, SpecError,
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

TOP_LEVEL_KEYS = ("barrier", "pipeline", "role")
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
    "body", "count", "epilogue", "initial_phase", "initial_stage", "items", "name",
    "prologue", "side",
)
SECTIONS = ("prologue", "body", "epilogue")
BARRIER_KEYS = ("count", "roles")

# Op families (DESIGN.md "Ops").
COUNT_OPS = ("arrive_full", "arrive_empty", "commit_empty")   # optional count N
BYTE_OPS = ("expect_tx", "copy")                             # required byte count N
TARGET_OPS = COUNT_OPS + BYTE_OPS                            # take to=
WAIT_OPS = ("wait_full", "wait_empty")                       # take unless=ready
BODY_ONLY_OPS = ("read", "write", "copy")
NVIDIA_ONLY_OPS = ("expect_tx", "copy")

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


def _parse_toml(text: str, path: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_syntax_error(str(err), path) from None


def _toml_syntax_error(message: str, path: str) -> SpecError:
    """`x.toml:3:9: TOML syntax error: Invalid value` (tomllib's position moved to the front)."""
    match = TOML_POSITION.match(message)
    if match is None:
        return _error(path, "", f"TOML syntax error: {message} (see https://toml.io)")
    what, line, column = match.groups()
    where = f"{path}:{line}:{column}" if line else f"{path}: at end of document"
    return SpecError(_one_line(f"{where}: TOML syntax error: {what} (see https://toml.io)"))


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

    _check_pipeline_before_template(pipeline)
    if "template" in pipeline:
        pipeline, raw_roles = templates.expand(pipeline, raw_roles, path)
    settings = _pipeline_settings(pipeline, path)

    if not raw_roles:
        raise _Invalid("[[role]]", "no roles (expected at least one [[role]] table with name, "
                                   "side, count and body)")
    role_names = _role_names(raw_roles)
    barriers = _barriers(raw_barriers, role_names)
    roles = tuple(_role(raw, name, settings, barriers) for raw, name in zip(raw_roles, role_names))

    return Spec(
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
        expect=settings.expect,
        expect_any=settings.expect_any,
        template=settings.template,
        description=settings.description,
        extra=settings.template_parameters,
    )


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
        _check_table(table, f"[barrier] {name}", f"write [barrier.{name}] with roles = [...]")
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
    if "roles" not in table:
        raise _Invalid(f"{where} roles", "missing required key (a non-empty list of role names: "
                                         f"{', '.join(role_names)})")
    roles = table["roles"]
    if not isinstance(roles, list) or not roles:
        raise _Invalid(f"{where} roles", "must be a non-empty list of role names (roles: "
                                         f"{', '.join(role_names)}), got {_show(roles)}")
    for index, role in enumerate(roles):
        member = f"{where} roles[{index}]"
        _check_choice(role, role_names, member, "role")
        if role in roles[:index]:
            raise _Invalid(member, f"role {role!r} is listed twice (list each role once)")
    count = table.get("count")
    if count is not None:
        _check_int(count, 1, MAX_COUNT, f"{where} count")
    return Barrier(name=name, roles=tuple(roles), count=count)


# ---------------------------------------------------------------------------------------
# [[role]]


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


def _role(raw: dict, name: str, settings: _PipelineSettings,
          barriers: dict[str, Barrier]) -> Role:
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
    default_phase = 1 if side == "producer" else 0
    initial_phase = _check_int(raw.get("initial_phase", default_phase), 0, MAX_PHASE,
                               f"{label} initial_phase")
    programs = {
        section: _program(raw.get(section, []), name, section, settings, barriers)
        for section in SECTIONS
    }
    return Role(name=name, side=side, count=count, items=items, initial_stage=initial_stage,
                initial_phase=initial_phase, **programs)


def _program(value, role: str, section: str, settings: _PipelineSettings,
             barriers: dict[str, Barrier]) -> tuple[Op, ...]:
    where = f"role {role!r} {section}"
    if not isinstance(value, list):
        raise _Invalid(where, f"must be a list of op strings (e.g. [\"wait_full\", \"read\"]), "
                              f"got {_show(value)}")
    ops = []
    for index, text in enumerate(value):
        op_where = f"{where}[{index}]"
        op = _parse_op(text, op_where)
        _check_op_in_context(op, op_where, role, section, settings, barriers)
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
    if name == "sync":
        _at_most_one(operands, "sync takes one barrier name", text, where)
        if not operands:
            raise _Invalid(where, f"op {text!r}: missing barrier name (write 'sync NAME' with "
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
    """key=value options: to= on arrivals, expect_tx, copy, commit; unless=ready on waits."""
    allowed = ("to",) if name in TARGET_OPS else ("unless",) if name in WAIT_OPS else ()
    fields = {}
    for key, value in options.items():
        if key not in allowed:
            hint = ", ".join(f"{a}=..." for a in allowed) or "none"
            raise _Invalid(where, f"op {text!r}: unknown key {key!r} (allowed on {name}: {hint})")
        if key == "to":
            if value not in TARGETS:
                raise _Invalid(where, f"op {text!r}: unknown target {value!r} (allowed: to="
                                      f"{', to='.join(TARGETS)})")
            fields["to"] = value
        elif key == "unless":
            if value != "ready":
                raise _Invalid(where, f"op {text!r}: unless={value} is not supported "
                                      "(allowed: unless=ready)")
            fields["unless_ready"] = True
    return fields


def _check_op_in_context(op: Op, where: str, role: str, section: str,
                         settings: _PipelineSettings, barriers: dict[str, Barrier]) -> None:
    if section != "body" and op.name in BODY_ONLY_OPS:
        raise _Invalid(where, f"op {op.text!r}: {op.name!r} is not allowed in {section} "
                              f"({', '.join(BODY_ONLY_OPS)} are only allowed in body)")
    if settings.backend != "nvidia" and op.name in NVIDIA_ONLY_OPS:
        raise _Invalid(where, f"op {op.text!r}: {op.name!r} is not available on backend "
                              f"{settings.backend!r} (nvidia only)")
    if op.name == "sync":
        _check_sync(op, where, role, barriers)


def _check_sync(op: Op, where: str, role: str, barriers: dict[str, Barrier]) -> None:
    barrier = barriers.get(op.barrier)
    if barrier is None:
        defined = ", ".join(sorted(barriers)) or "none"
        raise _Invalid(where, f"op {op.text!r}: barrier {op.barrier!r} is not defined "
                              f"(define [barrier.{op.barrier}]; defined: {defined})")
    if role not in barrier.roles:
        raise _Invalid(where, f"op {op.text!r}: role {role!r} is not in [barrier.{op.barrier}] "
                              f"roles (roles: {', '.join(barrier.roles)})")
