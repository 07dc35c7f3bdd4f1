"""Fix suggestions (`pipeproof verify --suggest-fix`): the smallest verified change of a spec's
integer parameters that makes a violating spec safe, printed as a TOML diff.

What is searched (each a TOML location in the spec file):

- arrive counts: `pipeline.producer_arrive_count`, `pipeline.consumer_arrive_count`,
  `ring.NAME.*_arrive_count`, and per-op counts (`arrive_full 2`, `commit_empty 2`);
- initial phases (`role.R.initial_phase`, per ring `role.R.initial_phase.NAME`) and
  `role.R.initial_stage`;
- bytes: the `expect_tx B` / `copy B` operands (and, for a `tx_range` violation in a
  template, the template's `tile_bytes` / `k_group_size`);
- `@leader` guards on arrivals, `expect_tx`, commits, copies and writes (roles of several agents);
- `items` of a role, only where roles disagree;
- a named barrier's `count`.

Candidates are ordered by size: one change before two; within that, values the spec itself
implies first (the number of agents that actually arrive, the bytes actually copied, the phase
convention of the signal a role waits on: "tier 0"), then small deltas; the violation kind
decides which kind of parameter comes first and the failing trace which roles and rings. Each
candidate is re-verified with the explicit engine (`checker.verify.verify`, under a state and
time bound; only `ok` counts). The winner is written back into the spec file's text, the patched
text is loaded again and must give exactly the verified spec (and verify `ok` again); where
`checker.prove` exists, `prove` must not refute it (a refuted candidate is dropped). Nothing
that was not verified is suggested; when no small change works within the budget,
`found=False` and the message says what was tried.

The search is deterministic: a fixed candidate order and a fixed cap on the number of
candidates; the time budget only cuts a search short (and the message then says so).
"""
from __future__ import annotations

import difflib
import importlib
import json
import math
import re
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from pipeproof.spec.schema import MAIN_RING, MAX_COUNT, SECTIONS, TX_LIMIT, Spec, SpecError, targets

MAX_PHASE = (1 << 32) - 1
MAX_BYTES = (1 << 32) - 1
MAX_ITEMS = 100_000
DEFAULT_MAX_CANDIDATES = 600     # single changes and pairs re-verified, at most
MAX_PAIR_SEEDS = 40              # pairs are formed from the first this many single changes
DEFAULT_PROVE_TIMEOUT = 20.0     # seconds for prove on the winning candidate
MIN_MAX_STATES = 1_000_000       # state bound of each re-verification (or 10x the spec's own)

SIGNAL_OPS = ("arrive_full", "arrive_empty", "expect_tx", "commit_empty")
GUARDED_OPS = SIGNAL_OPS + ("copy", "write")
COUNT_OP_NAMES = ("arrive_full", "arrive_empty", "commit_empty")
FULL_ARRIVALS = ("arrive_full", "expect_tx")
EMPTY_ARRIVALS = ("arrive_empty", "commit_empty")
WAITS_ON_EMPTY = ("wait_empty", "try_empty", "drain")
WAITS_ON_FULL = ("wait_full", "try_full")

CATEGORY_WORDS = {
    "count": "arrive counts", "opcount": "per-op arrive counts", "phase": "initial phases",
    "stage": "initial stages", "bytes": "expect_tx/copy bytes", "guard": "@leader guards",
    "items": "items per role", "barrier": "named barrier counts",
    "template": "template tile sizes",
}
# Which kind of parameter to try first, by the violation kind found.
CATEGORY_ORDER = {
    "deadlock": ("count", "phase", "bytes", "items", "barrier", "guard", "opcount", "stage",
                 "template"),
    "read_before_fill": ("phase", "bytes", "guard", "count", "opcount", "stage", "items",
                         "barrier", "template"),
    "overwrite_before_drain": ("count", "phase", "guard", "opcount", "stage", "bytes", "barrier",
                               "items", "template"),
    "phase_alias": ("count", "phase", "guard", "opcount", "stage", "bytes", "items", "barrier",
                    "template"),
    "over_arrival": ("count", "guard", "opcount", "bytes", "phase", "stage", "items", "barrier",
                     "template"),
    "tx_range": ("bytes", "template", "guard", "count", "opcount", "phase", "stage", "items",
                 "barrier"),
    "inflight_at_exit": ("count", "phase", "items", "guard", "opcount", "barrier", "stage",
                         "bytes", "template"),
}


class Change(NamedTuple):
    """One changed value: its TOML location, the old value and the new one.

    Locations: `pipeline.KEY`, `ring.NAME.KEY`, `role.R.KEY` (`initial_phase`, `initial_stage`,
    `items`), `role.R.initial_phase.RING`, `role.R.SECTION[i]` (an op: old and new op text),
    `barrier.NAME.count` (old None: counted from its roles)."""
    location: str
    old: object
    new: object


@dataclass(frozen=True)
class FixSuggestion:
    found: bool
    changes: tuple[Change, ...]
    diff: str            # unified diff against the spec file's text ("" when there is no file)
    verified: str        # what verified it ("" when nothing was found)
    message: str
    patched_text: str = ""   # the spec file's text with the fix applied ("" when not found)
    tried: int = 0           # candidate specs re-verified


def format_fix(suggestion: FixSuggestion) -> str:
    """Human text for the CLI (stderr)."""
    if not suggestion.found:
        return f"no fix suggested: {suggestion.message}\n"
    n = len(suggestion.changes)
    lines = [f"suggested fix ({n} change{'s' if n != 1 else ''}):"]
    lines += [f"  {c.location}: {_show(c.old)} -> {_show(c.new)}" for c in suggestion.changes]
    if suggestion.diff:
        lines.append(suggestion.diff.rstrip("\n"))
    lines.append(f"verified: {suggestion.verified}")
    return "\n".join(lines) + "\n"


def _show(value) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return str(value)


# ---------------------------------------------------------------------------------------
# Candidate edits


@dataclass(frozen=True)
class _Edit:
    location: str
    category: str
    old: object
    new: object
    tier: int            # 0: a value the spec implies; 1: a small delta; 2: other values
    delta: float         # how far from the old value (ordering within a tier)
    target: tuple        # what to change (see _apply_spec / _apply_text)
    scope: tuple = ()    # role and ring names it touches (trace ranking)
    text_only: bool = False  # a template parameter: only the file text can change it

    @property
    def new_op_name(self) -> str:
        return self.target[4].name if self.target[0] == "op" else ""

    @property
    def change(self) -> Change:
        return Change(self.location, self.old, self.new)


def _ctas_of(spec: Spec, role) -> tuple[int, ...]:
    return role.ctas or tuple(range(spec.cluster_size))



def _agents(role, op) -> int:
    return 1 if op.leader_only else role.count


def _item_classes(spec: Spec) -> int:
    """lcm of the ops' every= (how many item classes differ), capped."""
    period = 1
    for role in spec.roles:
        for op in role.body:
            period = period * op.every // math.gcd(period, op.every)
    return period if period <= 16 else 1


def _active(op, j: int, period: int) -> bool:
    return op.every == 1 or period == 1 or j % op.every == op.at


def _per_target(spec: Spec, ring: str, names, weight, j: int, period: int, skip=None) -> dict:
    """Per target CTA: the weighted sum of body ops `names` on `ring` active in item class j."""
    sums = defaultdict(int)
    for role in spec.roles:
        for i, op in enumerate(role.body):
            if op.ring != ring or op.name not in names or (role.name, i) == skip:
                continue
            if not _active(op, j, period):
                continue
            for c in _ctas_of(spec, role):
                for t in targets(spec.cluster_size, c, op.to):
                    sums[t] += _agents(role, op) * weight(op)
    return sums


def _arrival_weight(op) -> int:
    return 1 if op.name == "expect_tx" else op.n


def _multiplicity(spec: Spec, role, op, target: int) -> int:
    """How many times one agent-op of `role` lands on CTA `target` (over the role's CTAs)."""
    return sum(1 for c in _ctas_of(spec, role) if target in targets(spec.cluster_size, c, op.to))


def _count_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    period = _item_classes(spec)
    role_counts = sorted({r.count for r in spec.roles} |
                         {r.count * len(_ctas_of(spec, r)) for r in spec.roles})
    for ring in spec.all_rings:
        for signal, key, names in (("full", "producer_arrive_count", FULL_ARRIVALS),
                                   ("empty", "consumer_arrive_count", EMPTY_ARRIVALS)):
            old = ring.expected(signal)
            delivered = set()
            for j in range(period):
                delivered |= {v for v in _per_target(spec, ring.name, names, _arrival_weight,
                                                     j, period).values() if v > 0}
            values = {}
            for v in sorted(delivered):
                values.setdefault(v, 0)
            for d in (1, 2):
                for v in (old - d, old + d):
                    values.setdefault(v, 1)
            for v in role_counts:
                values.setdefault(v, 2)
            location = (f"pipeline.{key}" if ring.name == MAIN_RING else f"ring.{ring.name}.{key}")
            for v, tier in values.items():
                if v != old and 1 <= v <= MAX_COUNT:
                    edits.append(_Edit(location, "count", old, v, tier, abs(v - old),
                                       ("ring", ring.name, key), (ring.name,)))
    return edits


def _waits(role, ring: str) -> tuple[bool, bool]:
    ops = [op for s in SECTIONS for op in getattr(role, s) if op.ring == ring]
    return (any(op.name in WAITS_ON_EMPTY for op in ops),
            any(op.name in WAITS_ON_FULL for op in ops))


def _phase_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    for role in spec.roles:
        for ring in spec.all_rings:
            on_empty, on_full = _waits(role, ring.name)
            if not (on_empty or on_full):
                continue
            old = role.initial_phase_of(ring.name)
            side_default = 1 if role.side == "producer" else 0
            convention = (1 if on_empty else 0) if on_empty != on_full else side_default
            values = {}
            if convention != old:
                values[convention] = 0
            for v in (old - 1, old + 1, 0, 1):
                values.setdefault(v, 1)
            location = f"role.{role.name}.initial_phase" + \
                ("" if ring.name == MAIN_RING else f".{ring.name}")
            for v, tier in values.items():
                if v != old and 0 <= v <= MAX_PHASE:
                    edits.append(_Edit(location, "phase", old, v, tier, abs(v - old),
                                       ("phase", role.name, ring.name), (role.name, ring.name)))
    return edits


def _stage_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    if spec.stages < 2:
        return edits
    for role in spec.roles:
        others = Counter(r.initial_stage for r in spec.roles if r.name != role.name)
        common = min(others, key=lambda s: (-others[s], s)) if others else 0
        old = role.initial_stage
        values = {}
        if common != old:
            values[common] = 0
        for v in (old - 1, old + 1, 0):
            values.setdefault(v % spec.stages, 1)
        for v, tier in values.items():
            if v != old:
                edits.append(_Edit(f"role.{role.name}.initial_stage", "stage", old, v, tier,
                                   abs(v - old), ("role", role.name, "initial_stage"),
                                   (role.name,)))
    return edits


def _items_candidates(spec: Spec) -> list[_Edit]:
    """Only where roles disagree: a role's items set to another role's. (mojo_sm100_matmul's
    scheduler runs once per tile by design, and its items set the tiling: left alone.)"""
    roles = [r for r in spec.roles
             if not (spec.template == "mojo_sm100_matmul" and r.name == "scheduler")]
    used = Counter(r.items for r in roles)
    if len(used) < 2:
        return []
    majority = min(used, key=lambda v: (-used[v], v != spec.items, v))
    edits = []
    for role in roles:
        for v in sorted(used, key=lambda v: (abs(v - role.items), v)):
            if v != role.items and 0 <= v <= MAX_ITEMS:
                edits.append(_Edit(f"role.{role.name}.items", "items", role.items, v,
                                   0 if v == majority else 1, abs(v - role.items),
                                   ("role", role.name, "items"), (role.name,)))
    return edits


def _op_text(op, n: int | None = None, leader: bool | None = None) -> str:
    """The op as written, with its count/bytes operand or its @leader guard changed."""
    tokens = (op.text or op.name).split()
    if n is not None:
        for k, tok in enumerate(tokens[1:], start=1):
            if "=" not in tok and not tok.startswith("@"):
                tokens[k] = str(n)
                break
        else:
            tokens.insert(1, str(n))
    if leader is not None:
        tokens = [t for t in tokens if t != "@leader"]
        if leader:
            tokens.append("@leader")
    return " ".join(tokens)


def _op_edit(role, section: str, i: int, category: str, new_op, tier: int, delta: float) -> _Edit:
    old = getattr(role, section)[i]
    return _Edit(f"role.{role.name}.{section}[{i}]", category, old.text or old.name, new_op.text,
                 tier, delta, ("op", role.name, section, i, new_op), (role.name, old.ring))


def _bytes_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    period = _item_classes(spec)
    byte_values = sorted({op.n for r in spec.roles for op in r.body if op.name in ("expect_tx",
                                                                                  "copy")})
    bytes_of = (lambda op: op.n)
    for role in spec.roles:
        for i, op in enumerate(role.body):
            if op.name not in ("expect_tx", "copy"):
                continue
            derived = set()
            for j in range(period):
                if not _active(op, j, period):
                    continue
                skip = (role.name, i)
                expected = _per_target(spec, op.ring, ("expect_tx",), bytes_of, j, period, skip)
                copied = _per_target(spec, op.ring, ("copy",), bytes_of, j, period, skip)
                for c in _ctas_of(spec, role):
                    for t in targets(spec.cluster_size, c, op.to):
                        unit = _agents(role, op) * _multiplicity(spec, role, op, t)
                        need = (copied[t] - expected[t]) if op.name == "expect_tx" \
                            else (expected[t] - copied[t])
                        if need > 0 and need % unit == 0:
                            derived.add(need // unit)
            values = {v: 0 for v in sorted(derived)}
            for v in (op.n * 2, op.n // 2):
                values.setdefault(v, 1)
            for v in byte_values:
                values.setdefault(v, 2)
            for v, tier in values.items():
                if v != op.n and 1 <= v <= MAX_BYTES:
                    new_op = replace(op, n=v, text=_op_text(op, n=v))
                    delta = abs(math.log2(v / op.n))
                    edits.append(_op_edit(role, "body", i, "bytes", new_op, tier, delta))
    return edits


def _opcount_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    rings = {r.name: r for r in spec.all_rings}
    for role in spec.roles:
        for section in SECTIONS:
            for i, op in enumerate(getattr(role, section)):
                if op.name not in COUNT_OP_NAMES:
                    continue
                signal = "full" if op.name == "arrive_full" else "empty"
                names = FULL_ARRIVALS if signal == "full" else EMPTY_ARRIVALS
                expected = rings[op.ring].expected(signal)
                values = {}
                if section == "body":
                    others = _per_target(spec, op.ring, names, _arrival_weight, 0, 1,
                                         (role.name, i))
                    for c in _ctas_of(spec, role):
                        for t in targets(spec.cluster_size, c, op.to):
                            unit = _agents(role, op) * _multiplicity(spec, role, op, t)
                            need = expected - others[t]
                            if need > 0 and need % unit == 0:
                                values.setdefault(need // unit, 0)
                for v in (op.n - 1, op.n + 1):
                    values.setdefault(v, 1)
                for v, tier in values.items():
                    if v != op.n and 1 <= v <= MAX_COUNT:
                        new_op = replace(op, n=v, text=_op_text(op, n=v))
                        edits.append(_op_edit(role, section, i, "opcount", new_op, tier,
                                              abs(v - op.n)))
    return edits


def _guard_candidates(spec: Spec) -> list[_Edit]:
    """Toggle `@leader` on arrivals, expect_tx, commits, copies and writes of roles with several
    agents. Tier 0: a signal op made to match the guard of the role's payload ops (the write or
    copy it announces), or a toggle after which every signal gets exactly its expected count."""
    edits = []
    rings = {r.name: r for r in spec.all_rings}
    for role in spec.roles:
        if role.count < 2:
            continue  # agent 0 is the only agent: a guard changes nothing
        for section in SECTIONS:
            for i, op in enumerate(getattr(role, section)):
                if op.name not in GUARDED_OPS:
                    continue
                leader = not op.leader_only
                new_op = replace(op, leader_only=leader, text=_op_text(op, leader=leader))
                tier = 1
                if op.name in SIGNAL_OPS:
                    payload = {p.leader_only for s in SECTIONS for p in getattr(role, s)
                               if p.name in ("copy", "write") and p.ring == op.ring}
                    if payload == {leader}:
                        tier = 0
                    elif section == "body":
                        signal = "full" if op.name in FULL_ARRIVALS else "empty"
                        names = FULL_ARRIVALS if signal == "full" else EMPTY_ARRIVALS
                        probe = _replace_role(spec, role.name,
                                              body=role.body[:i] + (new_op,) + role.body[i + 1:])
                        got = _per_target(probe, op.ring, names, _arrival_weight, 0, 1)
                        if got and all(v == rings[op.ring].expected(signal)
                                       for v in got.values()):
                            tier = 0
                edits.append(_op_edit(role, section, i, "guard", new_op, tier, 1))
    return edits


def _barrier_candidates(spec: Spec) -> list[_Edit]:
    edits = []
    for barrier in spec.barriers:
        listed = sum(r.count for r in spec.roles if r.name in barrier.roles
                     and (not r.ctas or 0 in r.ctas))
        old_effective = barrier.count if barrier.count is not None else listed
        users = sum(max((_agents(r, op) for s in SECTIONS for op in getattr(r, s)
                         if op.name in ("sync", "sync_arrive") and op.barrier == barrier.name),
                        default=0)
                    for r in spec.roles if not r.ctas or 0 in r.ctas)
        values = {}
        if users and users != old_effective:
            values[users] = 0
        for v in (old_effective - 1, old_effective + 1):
            values.setdefault(v, 1)
        for v, tier in values.items():
            if v != old_effective and 1 <= v <= MAX_COUNT:
                edits.append(_Edit(f"barrier.{barrier.name}.count", "barrier", barrier.count, v,
                                   tier, abs(v - old_effective), ("barrier", barrier.name),
                                   tuple(barrier.roles)))
    return edits


def _template_candidates(spec: Spec, kind: str) -> list[_Edit]:
    """tx_range in a template: the tile size (or k) that brings k * B within the tx range."""
    if not spec.template or kind != "tx_range":
        return []
    tile = spec.extra.get("tile_bytes")
    k = spec.k_group_size
    edits = []
    if tile and k * tile > TX_LIMIT:
        fit = 1 << ((TX_LIMIT // k).bit_length() - 1)  # largest power of two with k * B in range
        for v, tier in ((fit, 0), (tile // 2, 1)):
            if v != tile and 16 <= v <= MAX_COUNT and not any(e.new == v for e in edits):
                edits.append(_Edit("pipeline.tile_bytes", "template", tile, v, tier,
                                   abs(math.log2(v / tile)), ("template", "tile_bytes"),
                                   text_only=True))
        if k > 1:
            edits.append(_Edit("pipeline.k_group_size", "template", k, 1, 1, k - 1,
                               ("template", "k_group_size"), text_only=True))
    return edits


def _trace_ranks(result) -> tuple[dict, set]:
    """Roles by how recently they act in the primary trace (0 = last), and rings it names."""
    trace = result.traces.get(result.kind) if result.kind else None
    if trace is None:
        return {}, set()
    ranks = {}
    for step in reversed(trace.steps):
        name = step.actor.split(".")[-1].split("[")[0]
        if "[" in step.actor and name not in ranks:
            ranks[name] = len(ranks)
    if trace.steps:
        for agent in trace.steps[-1].state.get("agents", {}).values():
            if not agent.get("done") and agent.get("role") not in ranks:
                ranks[agent["role"]] = len(ranks)
    words = trace.reason + " " + " ".join(c for s in trace.steps[-3:] for c in s.changes)
    rings = set(re.findall(r"cta\d+\.([A-Za-z_]\w*)\.(?:full|empty|slot)", words))
    if re.search(r"cta\d+\.(?:full|empty|slot)\[", words):
        rings.add(MAIN_RING)
    return ranks, rings


def _candidates(spec: Spec, result) -> list[_Edit]:
    kind = result.kind or "deadlock"
    order = CATEGORY_ORDER.get(kind, CATEGORY_ORDER["deadlock"])
    edits = (_count_candidates(spec) + _phase_candidates(spec) + _stage_candidates(spec) +
             _items_candidates(spec) + _bytes_candidates(spec) + _opcount_candidates(spec) +
             _guard_candidates(spec) + _barrier_candidates(spec) +
             _template_candidates(spec, kind))
    role_rank, rings = _trace_ranks(result)
    far = len(spec.roles) + 1

    def trace_rank(e: _Edit) -> int:
        roles = [role_rank.get(s, far) for s in e.scope if s in role_rank]
        if roles:
            return min(roles)
        return 0 if any(s in rings for s in e.scope) else far

    seen, unique = set(), []
    for index, e in enumerate(edits):
        key = (e.location, repr(e.new))
        if key not in seen:
            seen.add(key)
            unique.append((index, e))
    unique.sort(key=lambda p: (p[1].tier, order.index(p[1].category), trace_rank(p[1]),
                               p[1].delta, p[0]))
    return [e for _, e in unique]


# ---------------------------------------------------------------------------------------
# Applying edits to a Spec


def _replace_role(spec: Spec, name: str, **changes) -> Spec:
    return replace(spec, roles=tuple(replace(r, **changes) if r.name == name else r
                                     for r in spec.roles))


def _apply_spec(spec: Spec, edits) -> Spec | None:
    """The spec with the edits made, or None when one of them only exists in the file text."""
    for e in edits:
        kind = e.target[0]
        if e.text_only:
            return None
        if kind == "ring":
            _, ring, key = e.target
            if ring == MAIN_RING:
                spec = replace(spec, **{key: e.new})
            else:
                spec = replace(spec, rings=tuple(replace(r, **{key: e.new}) if r.name == ring
                                                 else r for r in spec.rings))
        elif kind == "phase":
            _, name, ring = e.target
            if ring == MAIN_RING:
                spec = _replace_role(spec, name, initial_phase=e.new)
            else:
                role = spec.role(name)
                spec = _replace_role(spec, name, ring_phases=tuple(
                    (g, e.new if g == ring else p) for g, p in role.ring_phases))
        elif kind == "role":
            _, name, key = e.target
            spec = _replace_role(spec, name, **{key: e.new})
        elif kind == "op":
            _, name, section, i, new_op = e.target
            ops = getattr(spec.role(name), section)
            spec = _replace_role(spec, name, **{section: ops[:i] + (new_op,) + ops[i + 1:]})
        elif kind == "barrier":
            spec = replace(spec, barriers=tuple(replace(b, count=e.new)
                                                if b.name == e.target[1] else b
                                                for b in spec.barriers))
        else:
            raise AssertionError(f"unknown edit {e.target}")
    return spec


# ---------------------------------------------------------------------------------------
# Applying edits to the TOML text (keeping everything else as written)


class _NoEdit(Exception):
    """The file's text has a shape this editor does not handle."""


@dataclass
class _Stmt:
    key: str
    start: int
    value_start: int
    value_end: int
    end: int
    strings: list = field(default_factory=list)  # (start, end) of the array's string literals


@dataclass
class _Table:
    kind: str            # "root" | "table" | "array"
    name: tuple
    start: int
    header_end: int
    stmts: list = field(default_factory=list)

    def stmt(self, key: str):
        for s in self.stmts:
            if s.key == key:
                return s
        return None


class _Toml:
    """Where each table, key and value sits in a TOML text (enough for spec files)."""

    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.tables: list[_Table] = []
        self._scan()

    # -- scanning
    def _skip_blank(self, i: int) -> int:
        t = self.text
        while i < self.n:
            if t[i] in " \t\r\n":
                i += 1
            elif t[i] == "#":
                j = t.find("\n", i)
                i = self.n if j < 0 else j + 1
            else:
                break
        return i

    def _line_end(self, i: int) -> int:
        t = self.text
        while i < self.n and t[i] in " \t\r":
            i += 1
        if i < self.n and t[i] == "#":
            j = t.find("\n", i)
            return self.n if j < 0 else j + 1
        if i >= self.n:
            return self.n
        if t[i] == "\n":
            return i + 1
        raise _NoEdit(f"unexpected text after a value at offset {i}")

    def _string_end(self, i: int) -> int:
        t = self.text
        for quote in ('"""', "'''"):
            if t.startswith(quote, i):
                k = i + 3
                while k < self.n:
                    if quote == '"""' and t[k] == "\\":
                        k += 2
                        continue
                    if t.startswith(quote, k):
                        k += 3
                        while k < self.n and t[k] == quote[0] and k - i < 8:
                            k += 1
                        return k
                    k += 1
                raise _NoEdit("unterminated string")
        if t[i] == "'":
            j = t.find("'", i + 1)
            if j < 0:
                raise _NoEdit("unterminated string")
            return j + 1
        k = i + 1
        while k < self.n and t[k] != '"':
            k += 2 if t[k] == "\\" else 1
        if k >= self.n:
            raise _NoEdit("unterminated string")
        return k + 1

    def _value_end(self, i: int):
        t = self.text
        if i >= self.n:
            raise _NoEdit("missing value")
        if t[i] in "\"'":
            return self._string_end(i), []
        if t[i] in "[{":
            depth, strings, k = 0, [], i
            opener = t[i]
            while k < self.n:
                ch = t[k]
                if ch in "\"'":
                    e = self._string_end(k)
                    if depth == 1 and opener == "[":
                        strings.append((k, e))
                    k = e
                    continue
                if ch == "#":
                    j = t.find("\n", k)
                    k = self.n if j < 0 else j
                    continue
                if ch in "[{":
                    depth += 1
                elif ch in "]}":
                    depth -= 1
                    if depth == 0:
                        return k + 1, strings
                k += 1
            raise _NoEdit("unterminated array or table")
        k = i
        while k < self.n and t[k] not in "\n#":
            k += 1
        while k > i and t[k - 1] in " \t\r":
            k -= 1
        return k, []

    def _scan(self) -> None:
        t = self.text
        current = _Table("root", (), 0, 0)
        self.tables.append(current)
        i = self._skip_blank(0)
        while i < self.n:
            if t[i] == "[":
                array = t.startswith("[[", i)
                close = t.find("]]" if array else "]", i)
                if close < 0:
                    raise _NoEdit("bad table header")
                name = t[i + (2 if array else 1):close]
                parts = tuple(p.strip().strip("\"'") for p in name.split("."))
                end = self._line_end(close + (2 if array else 1))
                current = _Table("array" if array else "table", parts, i, end)
                self.tables.append(current)
                i = end
            else:
                eq = t.find("=", i)
                if eq < 0 or "\n" in t[i:eq]:
                    raise _NoEdit("bad key")
                key = t[i:eq].strip().strip("\"'")
                vs = eq + 1
                while vs < self.n and t[vs] in " \t":
                    vs += 1
                ve, strings = self._value_end(vs)
                end = self._line_end(ve)
                current.stmts.append(_Stmt(key, i, vs, ve, end, strings))
                i = end
            i = self._skip_blank(i)

    # -- lookup
    def table(self, selector: tuple) -> _Table | None:
        """("pipeline",), ("ring", NAME), ("barrier", NAME) or ("role", NAME)."""
        if selector[0] == "role":
            for tab in self.tables:
                if tab.kind == "array" and tab.name == ("role",):
                    s = tab.stmt("name")
                    if s is not None and _toml_value(self.text[s.value_start:s.value_end]) \
                            == selector[1]:
                        return tab
            return None
        found = [tab for tab in self.tables if tab.kind == "table" and tab.name == selector]
        return found[0] if found else None

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset)

    # -- edits (each returns the new text)
    def set_key(self, selector: tuple, key: str, value: str) -> str:
        t = self.text
        tab = self.table(selector)
        if tab is None:
            return self.append_table(selector, [(key, value)])
        s = tab.stmt(key)
        if s is not None:
            return t[:s.value_start] + value + t[s.value_end:]
        pos = tab.stmts[-1].end if tab.stmts else tab.header_end
        before = "" if pos == 0 or t[pos - 1] == "\n" else "\n"
        return t[:pos] + before + f"{key} = {value}\n" + t[pos:]

    def append_table(self, selector: tuple, pairs) -> str:
        t = self.text
        if selector[0] == "role":
            header = f'[[role]]\nname = {json.dumps(selector[1])}\n'
        elif selector == ("pipeline",):
            raise _NoEdit("no [pipeline] table in the text")
        else:
            header = f"[{selector[0]}.{selector[1]}]\n"
        body = "".join(f"{k} = {v}\n" for k, v in pairs)
        sep = "" if not t or t.endswith("\n\n") else ("\n" if t.endswith("\n") else "\n\n")
        return t + sep + header + body

    def replace_string(self, stmt: _Stmt, index: int, new: str) -> str:
        start, end = stmt.strings[index]
        old = self.text[start:end]
        literal = f"'{new}'" if old.startswith("'") and "'" not in new else json.dumps(new)
        return self.text[:start] + literal + self.text[end:]


def _toml_value(text: str):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return None


def _render_ops(ops) -> str:
    items = [json.dumps(op.text or op.name) for op in ops]
    one_line = "[" + ", ".join(items) + "]"
    if len(one_line) <= 80:
        return one_line
    return "[\n" + "".join(f"    {item},\n" for item in items) + "]"


def _render_phase(spec: Spec, role) -> str:
    if not spec.rings:
        return str(role.initial_phase)
    entries = [f"{MAIN_RING} = {role.initial_phase}"] + [f"{g} = {p}" for g, p in role.ring_phases]
    return "{ " + ", ".join(entries) + " }"


def _apply_text(text: str, base: Spec, candidate: Spec | None, edits) -> str:
    """The spec file's text with the edits written in (keys replaced or inserted, [[role]]
    tables added for template roles the file does not mention)."""
    for e in edits:
        doc = _Toml(text)
        kind = e.target[0]
        if kind == "ring":
            _, ring, key = e.target
            selector = ("pipeline",) if ring == MAIN_RING else ("ring", ring)
            text = doc.set_key(selector, key, str(e.new))
        elif kind == "phase":
            _, name, _ = e.target
            text = doc.set_key(("role", name), "initial_phase",
                               _render_phase(candidate, candidate.role(name)))
        elif kind == "role":
            _, name, key = e.target
            text = doc.set_key(("role", name), key, str(e.new))
        elif kind == "op":
            _, name, section, i, new_op = e.target
            tab = doc.table(("role", name))
            stmt = tab.stmt(section) if tab is not None else None
            if stmt is not None and len(stmt.strings) == len(getattr(base.role(name), section)):
                text = doc.replace_string(stmt, i, new_op.text)
            else:
                ops = getattr(candidate.role(name), section) if candidate is not None else None
                if ops is None:
                    raise _NoEdit("op edit without a candidate spec")
                text = doc.set_key(("role", name), section, _render_ops(ops))
        elif kind == "barrier":
            text = doc.set_key(("barrier", e.target[1]), "count", str(e.new))
        elif kind == "template":
            text = doc.set_key(("pipeline",), e.target[1], str(e.new))
        else:
            raise AssertionError(f"unknown edit {e.target}")
    return text


# ---------------------------------------------------------------------------------------
# The diff


def _headers(text: str) -> dict[int, str]:
    """Line number -> table header label (`[pipeline]`, `[[role]] name = "producer"`)."""
    labels = {}
    try:
        doc = _Toml(text)
    except _NoEdit:
        return labels
    for tab in doc.tables:
        if tab.kind == "root":
            continue
        line = doc.line_of(tab.start)
        label = text[tab.start:tab.header_end].strip().split("#")[0].strip()
        name = tab.stmt("name")
        if tab.kind == "array" and name is not None:
            label += " " + text[name.start:name.value_end].strip()
        labels[line] = label
    return labels


def unified_diff(old: str, new: str, path: str, reach: int = 8) -> str:
    """A unified diff of `old` -> `new` whose hunks start at the change's table header when it
    is at most `reach` lines above it (else two lines of context and the header after @@)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    headers = _headers(old)
    blocks = [op for op in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
              if op[0] != "equal"]
    if not blocks:
        return ""
    hunks = []  # [a_start, a_end, b_start, b_end] with context
    for _, i1, i2, j1, j2 in blocks:
        above = [h for h in headers if h < i1] or [0]
        h = max(above)
        start = h if i1 - h <= reach else max(0, i1 - 2)
        after = min(len(a) - i2, 1)
        span = [start, i2 + after, j1 - (i1 - start), j2 + after]
        if hunks and span[0] <= hunks[-1][1]:
            hunks[-1][1], hunks[-1][3] = span[1], span[3]
        else:
            hunks.append(span)
    out = [f"--- a/{path}\n", f"+++ b/{path}\n"]
    for s1, e1, s2, e2 in hunks:
        above = [h for h in headers if h < s1]
        label = f" {headers[max(above)]}" if above and s1 not in headers else ""
        out.append(f"@@ -{s1 + 1},{e1 - s1} +{s2 + 1},{e2 - s2} @@{label}\n")
        sub = difflib.SequenceMatcher(None, a[s1:e1], b[s2:e2], autojunk=False)
        for tag, i1, i2, j1, j2 in sub.get_opcodes():
            if tag == "equal":
                out += [" " + line for line in a[s1 + i1:s1 + i2]]
            else:
                out += ["-" + line for line in a[s1 + i1:s1 + i2]]
                out += ["+" + line for line in b[s2 + j1:s2 + j2]]
    text = ""
    for line in out:
        text += line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
    return text


# ---------------------------------------------------------------------------------------
# Verification of candidates


def _load_prove():
    """`checker.prove.prove` when the module exists, else None (explicit engine only)."""
    try:
        module = importlib.import_module("pipeproof.checker.prove")
    except ImportError:
        return None
    return getattr(module, "prove", None)


@dataclass
class _Search:
    spec: Spec
    text: str | None
    deadline: float
    budget_s: float
    max_states: int
    max_candidates: int
    prove: object
    prove_timeout: float = 0.0
    tried: int = 0
    refuted: list = field(default_factory=list)   # candidates prove refuted
    refuted_at: list = field(default_factory=list)  # ... at these item counts
    unrendered: int = 0                           # verified, but not writable as TOML
    out_of_time: bool = False

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def exhausted(self) -> bool:
        if self.tried >= self.max_candidates:
            return True
        if self.remaining() <= 0:
            self.out_of_time = True
            return True
        return False

    def explicit(self, spec: Spec):
        from pipeproof.checker.verify import verify
        try:
            return verify(spec, max_states=self.max_states, timeout=max(0.05, self.remaining()))
        except Exception:  # a candidate the engine cannot build is no fix
            return None

    def evaluate(self, edits) -> FixSuggestion | None:
        """Verify one candidate (a tuple of edits); a FixSuggestion when it fixes the spec."""
        self.tried += 1
        candidate = _apply_spec(self.spec, edits)
        patched = ""
        if candidate is None:  # a template parameter: only the text can say what it means
            if self.text is None:
                return None
            try:
                patched = _apply_text(self.text, self.spec, None, edits)
                candidate = _load(patched, self.spec.path)
            except (_NoEdit, SpecError):
                return None
        result = self.explicit(candidate)
        if result is None or result.verdict != "ok":
            return None
        # Write it into the file's text; the text must load as exactly the verified spec
        # and verify ok again.
        if self.text is not None:
            try:
                patched = patched or _apply_text(self.text, self.spec, candidate, edits)
                reloaded = _load(patched, self.spec.path)
            except (_NoEdit, SpecError):
                self.unrendered += 1
                return None
            if reloaded != candidate:
                self.unrendered += 1
                return None
            result = self.explicit(reloaded)
            if result is None or result.verdict != "ok":
                return None
        verified = f"explicit engine: ok, {result.states} states"
        if self.prove is not None:
            note = self._prove(candidate)
            if note is None:
                self.refuted.append(edits)
                return None
            verified += f"; {note}"
        changes = tuple(e.change for e in edits)
        diff = unified_diff(self.text, patched, self.spec.path) if self.text is not None else ""
        return FixSuggestion(found=True, changes=changes, diff=diff, verified=verified,
                             message=_found_message(self.spec, edits, result), patched_text=patched,
                             tried=self.tried)

    def _prove(self, candidate: Spec) -> str | None:
        """A note for `verified`, or None when prove refutes the candidate."""
        try:
            proof = self.prove(candidate,
                               timeout=max(0.5, min(self.prove_timeout, self.remaining())))
        except Exception as err:  # prove does not cover this spec: the explicit check stands
            return f"prove: not applicable ({type(err).__name__}: {err})".replace("\n", " ")
        status = getattr(proof, "status", "unknown")
        if status == "proved":
            return "prove: proved for every item count"
        if status == "violated":
            self.refuted_at.append(getattr(proof, "items", None))
            return None
        reason = getattr(proof, "reason", "") or getattr(proof, "message", "")
        return f"prove: unknown{f' ({reason})' if reason else ''}".replace("\n", " ")


def _load(text: str, path: str) -> Spec:
    from pipeproof.spec.load import load_spec_text
    return load_spec_text(text, path)


def _why(e: _Edit) -> str:
    """Why a tier-0 value: what in the spec implies it."""
    if e.tier != 0:
        return ""
    if e.category == "count":
        ring = e.target[1]
        signal = "full" if e.target[2] == "producer_arrive_count" else "empty"
        prefix = "" if ring == MAIN_RING else f"{ring}."
        verb = "arrivals reach" if e.new != 1 else "arrival reaches"
        return f"{e.new} {verb} each {prefix}{signal} phase"
    if e.category == "phase":
        return (f"the convention for a role that waits on {'empty' if e.new == 1 else 'full'}"
                if e.new in (0, 1) else "")
    if e.category == "bytes":
        return ("the bytes copied per stage" if e.new_op_name == "expect_tx"
                else "the bytes expect_tx announces")
    if e.category == "opcount":
        return "the arrivals then match the expected count"
    if e.category == "guard":
        return "as the role's other ops"
    if e.category in ("items", "stage"):
        return "as the other roles"
    if e.category == "barrier":
        return f"the {e.new} agents per CTA that sync on it"
    if e.category == "template":
        return "k_group_size x tile_bytes within the tx-count limit 2^20-1"
    return ""


def _found_message(spec: Spec, edits, result) -> str:
    parts = []
    for e in edits:
        why = _why(e)
        parts.append(f"{e.location} {_show(e.old)} -> {_show(e.new)}"
                     + (f" ({why})" if why else ""))
    n = len(edits)
    return (f"{n} change{'s' if n != 1 else ''} make{'s' if n == 1 else ''} "
            f"{spec.path} safe: {'; '.join(parts)}; the explicit engine explored all "
            f"{result.states} states")


def _read_text(spec: Spec) -> str | None:
    """The spec file's text, only when it loads as exactly this spec."""
    try:
        text = Path(spec.path).read_text(encoding="utf-8")
        return text if _load(text, spec.path) == spec else None
    except (OSError, UnicodeDecodeError, SpecError):
        return None


def suggest_fix(spec: Spec, result=None, budget_s: float = 60.0, *, text: str | None = None,
                max_candidates: int = DEFAULT_MAX_CANDIDATES,
                prove_timeout: float = DEFAULT_PROVE_TIMEOUT) -> FixSuggestion:
    """The smallest verified change of `spec`'s integer parameters that makes it safe.

    `result`: the spec's `verify` result, if already known. `text`: the spec file's text
    (default: read from `spec.path`; used only if it loads as exactly `spec`). `budget_s`:
    wall-clock seconds for the whole search; `max_candidates`: re-verifications at most;
    `prove_timeout`: seconds for `prove` on a verified candidate (where checker.prove exists)."""
    from pipeproof.checker.verify import verify
    started = time.monotonic()
    deadline = started + budget_s
    if result is None:
        result = verify(spec, timeout=max(budget_s, 1.0))
    if result.verdict == "ok":
        return FixSuggestion(False, (), "", "", "nothing to fix: the spec verifies ok")
    if result.verdict != "violation":
        return FixSuggestion(False, (), "", "", f"no fix searched: the spec's own verification "
                                                f"was inconclusive ({result.limit})")
    if text is not None and _load_or_none(text, spec.path) != spec:
        text = None
    elif text is None:
        text = _read_text(spec)
    search = _Search(spec=spec, text=text, deadline=deadline, budget_s=budget_s,
                     max_states=max(MIN_MAX_STATES, 10 * result.states),
                     max_candidates=max_candidates, prove=_load_prove(),
                     prove_timeout=prove_timeout)
    singles = _candidates(spec, result)
    for edit in singles:
        if search.exhausted():
            break
        found = search.evaluate((edit,))
        if found is not None:
            return found
    for pair in _pairs(singles):
        if search.exhausted():
            break
        found = search.evaluate(pair)
        if found is not None:
            return found
    return FixSuggestion(False, (), "", "", _not_found_message(spec, result, singles, search),
                         tried=search.tried)


def _load_or_none(text: str, path: str):
    try:
        return _load(text, path)
    except SpecError:
        return None


def _pairs(singles: list[_Edit]):
    """Two changes at different locations, smallest combined rank first (from the first
    MAX_PAIR_SEEDS single changes)."""
    seeds = list(enumerate(singles[:MAX_PAIR_SEEDS]))
    pairs = []
    for ia, a in seeds:
        for ib, b in seeds[ia + 1:]:
            if a.location == b.location or (a.text_only and b.text_only):
                continue
            if a.target[0] == "op" and b.target[0] == "op" and a.target[1:4] == b.target[1:4]:
                continue
            pairs.append((a.tier + b.tier, ia + ib, ia, (a, b)))
    pairs.sort(key=lambda p: p[:3])
    return [p[3] for p in pairs]


def _not_found_message(spec: Spec, result, singles, search: _Search) -> str:
    categories = [CATEGORY_WORDS[c] for c in CATEGORY_WORDS
                  if any(e.category == c for e in singles)]
    what = ", ".join(categories) or "nothing (the spec has no integer parameter to vary)"
    text = (f"no small fix found for the {result.kind} in {spec.path}: no change of one or two "
            f"integer parameters that the explicit engine verifies ok among the {search.tried} "
            f"candidates tried ({len(singles)} single changes of {what}, then pairs)")
    if search.out_of_time:
        text += f"; the time budget ({search.budget_s:g} s) ran out"
    elif search.tried >= search.max_candidates:
        text += f"; stopped at the limit of {search.max_candidates} candidates"
    if search.refuted:
        at = sorted({n for n in search.refuted_at if n is not None})
        text += (f"; prove refuted {len(search.refuted)} candidate(s) the explicit engine "
                 f"accepted at items = {spec.items}"
                 + (f" (violated at items = {', '.join(map(str, at))})" if at else ""))
    if search.unrendered:
        text += f"; {search.unrendered} verified candidate(s) could not be written as TOML"
    return text
