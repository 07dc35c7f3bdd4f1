"""The op-string parser (spec.load): "OP [N] [key=value ...] [@leader]" into `spec.schema.Op`,
with the op families (which operand and which keys an op takes, which ops are nvidia only,
which signal an op waits on). Rules that need the rest of the spec (section, backend, rings,
barriers) are spec.load_roles'."""
from __future__ import annotations

import re

from pipeproof.spec.load_checks import (
    IDENTIFIER, MAX_BYTES, MAX_ITEMS, _did_you_mean, _Invalid, _show,
)
from pipeproof.spec.ops import EMPTY, FULL, OP_EFFECTS
from pipeproof.spec.schema import FILL_OPS, MAIN_RING, MAX_COUNT, OPS, RING_OPS, TARGETS, Op


def _ops(pred) -> tuple:
    return tuple(n for n, e in OP_EFFECTS.items() if pred(e))


# Op families (docs/model.md "Ops"), read off each op's effects (spec/ops.py).
COUNT_OPS = _ops(lambda e: e.arrives_n)                      # optional count N
BYTE_OPS = _ops(lambda e: e.tx != 0)                         # required byte count N
STORE_OPS = _ops(lambda e: e.stores and e.issues != "copy")  # write, write_async
TARGET_OPS = COUNT_OPS + BYTE_OPS + STORE_OPS                # take to=
WAIT_OPS = _ops(lambda e: e.observes >= 0 and e.blocks and not e.move)  # take unless=ready
BARRIER_OPS = _ops(lambda e: bool(e.barrier))                # take a barrier name
NVIDIA_ONLY_OPS = BYTE_OPS                                   # tx bytes: TMA, nvidia only
READ_WAIT_OPS = _ops(lambda e: e.waits_reads)                # optional count n in 0..MAX_READ_WAIT
ITEM_KEYS = ("every", "at")                                  # any op, body only
FILL_KEYS = ("ahead",)                                       # fills, body or prologue
MAX_READ_WAIT = 64                                           # read_wait [n]: n in 0..64
# Which signal of a ring an op waits on, for the default initial phase per ring.
WAITS_ON_EMPTY = _ops(lambda e: e.observes == EMPTY)
WAITS_ON_FULL = _ops(lambda e: e.observes == FULL)
# Decimal with optional underscores (as TOML writes integers), or hex.
OP_INTEGER = re.compile(r"(0|[1-9][0-9]*(_[0-9]+)*|0[xX][0-9a-fA-F]+(_[0-9a-fA-F]+)*)")


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
    if name in READ_WAIT_OPS:
        _at_most_one(operands, f"{name} takes at most one count", text, where)
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
    ring= on ring ops; every= and at= on any op (their section is checked in context); ahead=
    on fills (software pipelining: the fill is for the item K after the agent's)."""
    allowed = (("to",) if name in TARGET_OPS else ("unless",) if name in WAIT_OPS else ()) + \
        (("ring",) if name in RING_OPS else ()) + ITEM_KEYS + \
        (FILL_KEYS if name in FILL_OPS else ())
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
        elif key == "ahead":
            fields["ahead"] = _op_integer(value, 0, MAX_ITEMS, "ahead", text, where)
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


def _has_item_keys(op: Op) -> bool:
    """Whether the op as written has every= or at= (every=1 included)."""
    return any(token.partition("=")[0] in ITEM_KEYS for token in op.text.split()[1:]
               if "=" in token)
