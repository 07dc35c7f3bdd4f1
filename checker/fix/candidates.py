"""The candidate edits of `--suggest-fix` (checker.fix.suggest), one function per kind of number: arrive
counts (ring and per-op), initial phases and stages, expect_tx/copy bytes, `@leader` guards,
items per role, named barrier counts and a template's tile sizes. Each returns `_Edit`s with a
tier (0: a value the spec itself implies, 1: a small delta, 2: other values); `_why` says what
implies a tier-0 value. Their order is checker.fix.order's."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import replace

from pipeproof.checker.fix.edit import _Edit, _replace_role
from pipeproof.spec.ops import EMPTY, FULL, OP_EFFECTS
from pipeproof.spec.ops_syntax import BYTE_OPS, COUNT_OPS, WAITS_ON_EMPTY, WAITS_ON_FULL
from pipeproof.spec.schema import FILL_OPS, MAIN_RING, MAX_COUNT, SECTIONS, TX_LIMIT, Spec, targets


MAX_PHASE = (1 << 32) - 1
MAX_BYTES = (1 << 32) - 1
MAX_ITEMS = 100_000


# The op families an edit may touch, read off each op's effects (spec/ops.py).
SIGNAL_OPS = tuple(n for n, e in OP_EFFECTS.items() if e.updates >= 0 and e.units)  # arrivals
GUARDED_OPS = SIGNAL_OPS + FILL_OPS
COUNT_OP_NAMES = COUNT_OPS
FULL_ARRIVALS = tuple(n for n in SIGNAL_OPS if OP_EFFECTS[n].updates == FULL)
EMPTY_ARRIVALS = tuple(n for n in SIGNAL_OPS if OP_EFFECTS[n].updates == EMPTY)
ANNOUNCES_BYTES = tuple(n for n, e in OP_EFFECTS.items() if e.tx > 0)  # expect_tx
COPIES_BYTES = tuple(n for n, e in OP_EFFECTS.items() if e.tx < 0)     # copy
BARRIER_ARRIVALS = tuple(n for n, e in OP_EFFECTS.items() if e.barrier in ("sync", "arrive"))


# ---------------------------------------------------------------------------------------
# What the spec delivers (per target CTA and item class)


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
    units = OP_EFFECTS[op.name].units
    return op.n if units == -1 else units  # arrive.expect_tx: one arrival


def _multiplicity(spec: Spec, role, op, target: int) -> int:
    """How many times one agent-op of `role` lands on CTA `target` (over the role's CTAs)."""
    return sum(1 for c in _ctas_of(spec, role) if target in targets(spec.cluster_size, c, op.to))


# ---------------------------------------------------------------------------------------
# Candidates per kind of number


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
    byte_values = sorted({op.n for r in spec.roles for op in r.body if op.name in BYTE_OPS})
    bytes_of = (lambda op: op.n)
    for role in spec.roles:
        for i, op in enumerate(role.body):
            if op.name not in BYTE_OPS:
                continue
            derived = set()
            for j in range(period):
                if not _active(op, j, period):
                    continue
                skip = (role.name, i)
                expected = _per_target(spec, op.ring, ANNOUNCES_BYTES, bytes_of, j, period, skip)
                copied = _per_target(spec, op.ring, COPIES_BYTES, bytes_of, j, period, skip)
                for c in _ctas_of(spec, role):
                    for t in targets(spec.cluster_size, c, op.to):
                        unit = _agents(role, op) * _multiplicity(spec, role, op, t)
                        need = (copied[t] - expected[t]) if op.name in ANNOUNCES_BYTES \
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
                signal = "full" if OP_EFFECTS[op.name].updates == FULL else "empty"
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
                               if p.name in FILL_OPS and p.ring == op.ring}
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
                         if op.name in BARRIER_ARRIVALS and op.barrier == barrier.name),
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


# ---------------------------------------------------------------------------------------
# Why a tier-0 value


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
        return ("the bytes copied per stage" if e.new_op_name in ANNOUNCES_BYTES
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
