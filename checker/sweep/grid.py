"""The grid of a sweep (`pipeproof sweep`, docs/sweep.md): its axes, its points, and each
point's spec as TOML text.

An **axis** is one or more keys of the spec and the values they take together:

    stages=2,4,8                       a [pipeline] key (template parameters are [pipeline] keys)
    consumers=1..8                     an inclusive integer range
    role.consumer.count=1,2            a key of the [[role]] named consumer (added if absent:
                                       a template's role is then overridden key by key)
    ring.acc.stages=1,2                a key of [ring.acc]; barrier.NAME.KEY likewise
    role.consumer.count+consumer_arrive_count=1..4
                                       several keys that take the same value at each point

written on the command line (`--set KEY=VALUES`) or in the spec's `[sweep]` table, whose
keys are the same (`stages = [2, 4, 8]`, `consumers = "1..8"`, `role.consumer.count = [1, 2]`
as a dotted TOML key, `"a+b" = "1..4"` quoted). The grid is the product of the axes, in the
order they are written ([sweep] first, then --set; a --set of an axis the table has replaces
it in place), the last axis varying fastest.

A **point** is the spec's document with one value per axis set, written back as TOML text
(`to_toml`): that text is what a worker loads, like any spec file, and what the result cache
hashes. A point whose keys cannot be set is an error point with its one-line message; one
whose text is not a valid spec is found when it is loaded (checker/sweep/run.py), and is an
error point too. Nothing here runs an engine.
"""
from __future__ import annotations

import copy
import datetime
import itertools
import math
import re
from dataclasses import dataclass, field

from pipeproof.spec.load_checks import IDENTIFIER
from pipeproof.spec.load_pipeline import PIPELINE_KEYS
from pipeproof.spec.load_roles import BARRIER_KEYS, RING_KEYS, ROLE_KEYS
from pipeproof.spec.schema import SpecError

SWEEP_TABLE = "sweep"
TIE = "+"              # joins the keys of one axis: role.consumer.count+consumer_arrive_count
MAX_POINTS = 1_000_000  # a grid larger than this is refused before anything is built
NAMED_TABLES = {"role": ROLE_KEYS, "ring": RING_KEYS, "barrier": BARRIER_KEYS}
_RANGE = re.compile(r"^\s*(-?\d+)\s*\.\.\s*(-?\d+)\s*$")
_INT = re.compile(r"^\s*-?\d+\s*$")


@dataclass(frozen=True)
class Axis:
    name: str                     # as written, e.g. "stages" or "a+b"
    paths: tuple[tuple[str, ...], ...]  # each key as (table, [name,] key)
    values: tuple                 # the values, in the order written


@dataclass
class Point:
    index: int                    # position in the grid (the order of every output)
    params: dict                  # axis name -> value
    text: str = ""                # the point's spec as TOML ('' for an error point)
    error: str = ""               # why it is not a spec, one line ('' when it is one)
    label: str = ""               # "stages=2 consumers=3": names the point in messages
    source: str = ""              # the spec file (or kernel) the point comes from
    extra: dict = field(default_factory=dict)  # front-end details (Triton: config, args)

    @property
    def where(self) -> str:
        """The point's name in messages: `spec.toml[stages=2 consumers=3]`."""
        return f"{self.source}[{self.label}]"


# ---------------------------------------------------------------------------------------
# Axes


def parse_key(text: str, where: str) -> tuple[str, ...]:
    """One key of an axis as a path: `stages` -> ('pipeline', 'stages'),
    `role.consumer.count` -> ('role', 'consumer', 'count')."""
    parts = [p.strip() for p in text.strip().split(".")]
    allowed = (f"a [pipeline] key ({', '.join(PIPELINE_KEYS)}), pipeline.KEY, role.NAME.KEY, "
               f"ring.NAME.KEY or barrier.NAME.KEY")
    if len(parts) == 1 or (len(parts) == 2 and parts[0] == "pipeline"):
        key = parts[-1]
        if key not in PIPELINE_KEYS:
            raise SpecError(f"{where}: unknown key {key!r} (expected {allowed})")
        return ("pipeline", key)
    if len(parts) == 3 and parts[0] in NAMED_TABLES:
        table, name, key = parts
        if not IDENTIFIER.match(name):
            raise SpecError(f"{where}: {table} name {name!r} is not a name (letters, digits "
                            f"and _, not starting with a digit)")
        if key not in NAMED_TABLES[table]:
            raise SpecError(f"{where}: unknown {table} key {key!r} (a {table} has: "
                            f"{', '.join(NAMED_TABLES[table])})")
        if table == "role" and key == "name":
            raise SpecError(f"{where}: a role's name picks the role; it cannot be swept")
        return (table, name, key)
    raise SpecError(f"{where}: unknown key {text.strip()!r} (expected {allowed})")


def parse_values(text: str, where: str) -> tuple:
    """`2,4,8`, `1..8`, `1..4,8`, `nvidia,amd`, `true`: integers (ranges inclusive),
    booleans, or strings."""
    values = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise SpecError(f"{where}: empty value in {text!r} (expected values separated by "
                            f"commas, e.g. 2,4,8 or 1..8)")
        if m := _RANGE.match(item):
            low, high = int(m.group(1)), int(m.group(2))
            if low > high:
                raise SpecError(f"{where}: range {item} is empty (write LOW..HIGH with LOW <= HIGH)")
            if high - low >= MAX_POINTS:
                raise SpecError(f"{where}: range {item} has more than {MAX_POINTS:,} values")
            values.extend(range(low, high + 1))
        elif _INT.match(item):
            values.append(int(item))
        elif item in ("true", "false"):
            values.append(item == "true")
        else:
            values.append(item)
    return tuple(values)


def axis_from_text(text: str, where: str = "--set") -> Axis:
    """`KEY[+KEY...]=VALUES` as given to --set."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip():
        raise SpecError(f"{where} {text!r}: expected KEY=VALUES (e.g. stages=2,4,8 or "
                        f"role.consumer.count=1..4)")
    return _axis(name.strip(), parse_values(values, f"{where} {name.strip()}"), where)


def _axis(name: str, values: tuple, where: str) -> Axis:
    keys = [k.strip() for k in name.split(TIE)]
    if any(not k for k in keys):
        raise SpecError(f"{where} {name}: empty key (join several keys with {TIE!r})")
    paths = tuple(parse_key(k, f"{where} {name}") for k in keys)
    if len(set(paths)) != len(paths):
        raise SpecError(f"{where} {name}: a key is named twice")
    name = TIE.join(keys)
    if not values:
        raise SpecError(f"{where} {name}: no values")
    seen = []
    for v in values:
        if any(type(v) is type(s) and v == s for s in seen):
            raise SpecError(f"{where} {name}: value {_show(v)} is given twice")
        seen.append(v)
    return Axis(name, paths, tuple(values))


def axes_from_table(table, path: str) -> list[Axis]:
    """The axes of a spec's `[sweep]` table."""
    where = f"{path}: [{SWEEP_TABLE}]"
    if not isinstance(table, dict):
        raise SpecError(f"{where}: must be a table of KEY = [values] (e.g. stages = [2, 4, 8])")
    axes = []
    for name, value in _flatten(table):
        if isinstance(value, str):
            values = parse_values(value, f"{where} {name}")
        elif isinstance(value, list):
            values = tuple(value)
            if not values:
                raise SpecError(f"{where} {name}: empty list (give at least one value)")
        elif isinstance(value, (bool, int, float)):
            values = (value,)
        else:
            raise SpecError(f"{where} {name}: expected a list of values or a string such as "
                            f"\"1..8\", got {_show(value)}")
        axes.append(_axis(name, values, where))
    return axes


def _flatten(table: dict, prefix: str = ""):
    """Dotted TOML keys (`role.consumer.count = [1, 2]`) parse as nested tables: flatten them."""
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            yield from _flatten(value, name)
        else:
            yield name, value


def merge_axes(table_axes: list[Axis], set_axes: list[Axis], where: str) -> list[Axis]:
    """The [sweep] table's axes with --set's: a --set of the same name replaces the table's axis
    in place, a new one goes after; no key may be swept by two axes."""
    axes = list(table_axes)
    for axis in set_axes:
        same = [i for i, a in enumerate(axes) if a.paths == axis.paths]
        if same:
            axes[same[0]] = axis
        else:
            axes.append(axis)
    owner = {}
    for axis in axes:
        for path in axis.paths:
            if path in owner:
                raise SpecError(f"{where}: key {'.'.join(_display(path))} is swept by both "
                                f"{owner[path]!r} and {axis.name!r}")
            owner[path] = axis.name
    size = math.prod(len(a.values) for a in axes)
    if size > MAX_POINTS:
        raise SpecError(f"{where}: the grid has {size:,} points (at most {MAX_POINTS:,})")
    return axes


def _display(path: tuple[str, ...]) -> tuple[str, ...]:
    return path[1:] if path[0] == "pipeline" else path


# ---------------------------------------------------------------------------------------
# Points


def grid(document: dict, axes: list[Axis], source: str) -> list[Point]:
    """Every point of the product of `axes` over the spec `document` (a [sweep] table already
    removed), in grid order."""
    points = []
    for index, combo in enumerate(itertools.product(*(a.values for a in axes))):
        params = {a.name: v for a, v in zip(axes, combo)}
        point = Point(index, params, label=label_of(params), source=source)
        doc = copy.deepcopy(document)
        try:
            for axis, value in zip(axes, combo):
                for path in axis.paths:
                    set_key(doc, path, value)
            point.text = to_toml(doc)
        except _CannotSet as err:
            point.error = f"{point.where}: {err}"
        points.append(point)
    return points


def label_of(params: dict) -> str:
    return " ".join(f"{k}={_show(v)}" for k, v in params.items())


class _CannotSet(Exception):
    pass


def set_key(doc: dict, path: tuple[str, ...], value) -> None:
    """Set one key of the document as a spec file would write it."""
    value = copy.deepcopy(value)
    if path[0] == "pipeline":
        table = doc.setdefault("pipeline", {})
        if not isinstance(table, dict):
            raise _CannotSet("[pipeline] is not a table (cannot set "
                             f"{path[1]})")
        table[path[1]] = value
        return
    kind, name, key = path
    if kind == "role":
        roles = doc.setdefault("role", [])
        if not isinstance(roles, list) or not all(isinstance(r, dict) for r in roles):
            raise _CannotSet(f"role is not a list of [[role]] tables (cannot set role.{name}.{key})")
        for role in roles:
            if role.get("name") == name:
                role[key] = value
                return
        roles.append({"name": name, key: value})  # a template's role, overridden by name
        return
    tables = doc.setdefault(kind, {})
    if not isinstance(tables, dict) or not isinstance(tables.setdefault(name, {}), dict):
        raise _CannotSet(f"[{kind}.{name}] is not a table (cannot set {kind}.{name}.{key})")
    tables[name][key] = value


# ---------------------------------------------------------------------------------------
# TOML text (tomllib only reads)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
            "\r": "\\r"}


def to_toml(document: dict) -> str:
    """The document as TOML text that `tomllib.loads` reads back to an equal document: a table's
    plain keys first, then its sub-tables, then its arrays of tables; other nesting inline."""
    lines: list[str] = []
    _write_table(lines, (), document, header=None)
    return "\n".join(lines).strip("\n") + "\n"


def _write_table(lines, path, table: dict, header: str | None) -> None:
    if header is not None:
        if lines:
            lines.append("")
        lines.append(header)
    subtables, arrays = [], []
    for key, value in table.items():
        if isinstance(value, dict):
            subtables.append((key, value))
        elif _is_table_array(value):
            arrays.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in subtables:
        sub = path + (key,)
        plain = any(not isinstance(v, dict) and not _is_table_array(v) for v in value.values())
        # an empty table, or one with plain keys, needs its header; one with only sub-tables
        # is implied by theirs
        _write_table(lines, sub, value,
                     header=f"[{'.'.join(map(_key, sub))}]" if plain or not value else None)
    for key, value in arrays:
        sub = path + (key,)
        for item in value:
            _write_table(lines, sub, item, header=f"[[{'.'.join(map(_key, sub))}]]")


def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _show(value) -> str:
    """A parameter's value as the user writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return _value(value)
    return str(value)


show = _show
