"""The [barrier.NAME], [ring.NAME] and [[role]] tables (spec.load): names, keys and ranges, a
role's CTAs and initial phases (the default phase per ring from the ops it waits on), its
programs (each op parsed by spec.ops_syntax) and each op checked in its context: section,
backend, defined rings and barriers."""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.backends.capabilities import BACKENDS as BACKEND_RECORDS, names_with
from pipeproof.spec.load_checks import (
    IDENTIFIER, MAX_AGENTS, MAX_ITEMS, MAX_PHASE, MAX_STAGES, _check_choice, _check_int,
    _check_keys, _check_str, _did_you_mean, _Invalid, _show,
)
from pipeproof.spec.load_loops import LOOP_ROLE_KEYS, check_loop_op, loop_counts, lower_body
from pipeproof.spec.load_pipeline import _PipelineSettings
from pipeproof.spec.ops_syntax import (
    BARRIER_OPS, NVIDIA_ONLY_OPS, WAITS_ON_EMPTY, WAITS_ON_FULL, _has_item_keys, _parse_op,
)
from pipeproof.spec.schema import (
    LEVELS, MAIN_RING, MAX_COUNT, SECTIONS, SIDES, TILE_SECTIONS, Barrier, Op, Ring, Role,
)


ROLE_KEYS = tuple(sorted((
    "body", "count", "ctas", "epilogue", "initial_phase", "initial_stage", "items", "name",
    "prologue", "side") + LOOP_ROLE_KEYS))
BARRIER_KEYS = ("count", "roles")
RING_KEYS = ("consumer_arrive_count", "level", "producer_arrive_count", "stages")
RING_INT_RANGES = {
    "stages": (1, MAX_STAGES),
    "producer_arrive_count": (1, MAX_COUNT),
    "consumer_arrive_count": (1, MAX_COUNT),
}


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
    if "level" in table:  # nested loops (spec.load_loops); checked against [pipeline] tiles later
        values["level"] = _check_choice(table["level"], LEVELS, f"{where} level", "level")
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
    tiles, k_blocks, items = loop_counts(raw, settings, label)
    if items is None:
        items = _check_int(raw.get("items", settings.items), 0, MAX_ITEMS, f"{label} items")
    initial_stage = _check_int(raw.get("initial_stage", 0), 0, settings.stages - 1,
                               f"{label} initial_stage")
    ctas = _ctas(raw["ctas"], settings.cluster_size, f"{label} ctas") if "ctas" in raw else ()
    phases = _initial_phases(raw.get("initial_phase"), context, f"{label} initial_phase")
    programs = {
        section: _program(raw.get(section, []), name, section, context, tiles, k_blocks)
        for section in SECTIONS + (TILE_SECTIONS if tiles is not None else ())
    }
    if tiles is not None:
        tile_rings = {r.name for r in context.rings.values() if r.level == "tile"}
        programs["body"] = lower_body(programs, k_blocks, tile_rings)
        for section in TILE_SECTIONS:
            del programs[section]
    side_default = 1 if side == "producer" else 0
    initial_phase = phases.get(MAIN_RING, side_default)
    ring_phases = tuple(
        (ring, phases[ring] if ring in phases
         else _default_phase(ring, programs, side_default))
        for ring in sorted(context.rings))
    return Role(name=name, side=side, count=count, items=items, initial_stage=initial_stage,
                initial_phase=initial_phase, ctas=ctas, ring_phases=ring_phases, tiles=tiles,
                k_blocks=k_blocks, **programs)


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


def _program(value, role: str, section: str, context: _Context,
             tiles: int | None = None, k_blocks: int = 1) -> tuple[Op, ...]:
    where = f"role {role!r} {section}"
    if not isinstance(value, list):
        raise _Invalid(where, f"must be a list of op strings (e.g. [\"wait_full\", \"read\"]), "
                              f"got {_show(value)}")
    ops = []
    for index, text in enumerate(value):
        op_where = f"{where}[{index}]"
        op = _parse_op(text, op_where)
        check_loop_op(op, op_where, section, tiles, k_blocks)
        _check_op_in_context(op, op_where, role, section, context)
        ops.append(op)
    return tuple(ops)


# ---------------------------------------------------------------------------------------
# Ops in their context (section, backend, rings, barriers)


def _check_op_in_context(op: Op, where: str, role: str, section: str,
                         context: _Context) -> None:
    settings = context.settings
    if section != "body" and _has_item_keys(op):
        raise _Invalid(where, f"op {op.text!r}: every=/at= are not allowed in {section} (they "
                              f"select items, so they are only allowed in body)")
    if op.ahead is not None and section != "body" and section != "prologue":
        raise _Invalid(where, f"op {op.text!r}: ahead= is not allowed in {section} (it names the "
                              f"item a fill is for: the item K after the agent's in body, item K "
                              f"in prologue)")
    if op.name in NVIDIA_ONLY_OPS and not BACKEND_RECORDS[settings.backend].tx_bytes:
        able = names_with("tx_bytes")
        raise _Invalid(where, f"op {op.text!r}: {op.name!r} is not available on backend "
                              f"{settings.backend!r} ({able} only)")
    if op.ring != MAIN_RING and op.ring not in context.rings:
        rings = context.ring_names
        raise _Invalid(where, f"op {op.text!r}: ring {op.ring!r} is not defined (define "
                              f"[ring.{op.ring}]; defined: {', '.join(rings)})"
                              f"{_did_you_mean(op.ring, rings)}")
    if op.name in BARRIER_OPS:
        _check_sync(op, where, role, context.barriers)


def _check_sync(op: Op, where: str, role: str, barriers: dict[str, Barrier]) -> None:
    barrier = barriers.get(op.barrier)
    if barrier is None:
        defined = ", ".join(sorted(barriers)) or "none"
        raise _Invalid(where, f"op {op.text!r}: barrier {op.barrier!r} is not defined "
                              f"(define [barrier.{op.barrier}]; defined: {defined})")
    if barrier.roles and role not in barrier.roles:
        raise _Invalid(where, f"op {op.text!r}: role {role!r} is not in [barrier.{op.barrier}] "
                              f"roles (roles: {', '.join(barrier.roles)})")
