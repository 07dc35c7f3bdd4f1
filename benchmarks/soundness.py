"""Differential soundness harness: the reduced search against the unreduced one, and against
BMC, `prove` and `--engine laps`, on generated near-correct specs.

    python benchmarks/soundness.py --specs 100000 --seed 1            # the issue's figure
    python benchmarks/soundness.py --specs 2000 --seed 7 --shrink-dir /tmp/shrunk
    python benchmarks/soundness.py --specs 4000 --seed 85 --warps-shaped   # per-warp models

Every spec is one of the examples (spec/examples/) or a template instance, made small (items
1..3, at most 3 stages) and changed by one mutation (sometimes two): a count +-1, an initial
phase flipped, an op moved, dropped or duplicated, a `try_*` put before a wait that becomes
`unless=ready`, a role count changed, `every=`/`at=` added, a role split over the CTAs of a
cluster, a target or a byte count changed, `@leader` toggled, the backend switched. The
bases bring both backends, clusters, async reads and commits, several rings and named
barriers. commit_full (issue 34) comes from a stream of its own, so a seed's other specs stay
as they were: one spec in 8 starts from a COMMIT_FULL_BASES design (the full signal arrived
on only by commits), and one in 6 has an arrive_full turned into a commit_full (seed 41:
3,574 of 20,000 specs have a commit_full). `--user-shaped` makes the specs from issue 35's
user-shaped GEMM instead, `--warps-shaped` from per-warp models of the Triton kernels
(benchmarks/warps_bases/: `pipeproof triton --warps`), `--nested` from the nested-loop examples
(issue 47: tiles 1..3 of k_blocks 1..3; one in two also gets a k_blocks, level or loop-section
change from a stream of its own). One spec in 4 that has a `write` gets one turned into a
`write_async` (issue 47's async accumulator write; a stream of its own); `--only write_async`
compares just those. A 2-SM leader MMA (issue 47: `to=` on write/write_async) has two streams of
its own: one spec in 8 of the examples' family starts from a WRITE_TO_BASES design (a leader's
MMA in CTA 0 writing both CTAs' accumulators, `to=all`), and one cluster spec in 2 with a
write has one retargeted (`to=leader|peer|all`, mutation "write_to"; `--clusters --only
write_to` compares just those).

For each spec that loads, compared on verdict, the set of kinds and the minimal depth:
- `verify` as shipped (partial-order and symmetry reduction) against `verify(por=False,
  symmetry=False)`, the plain breadth-first search of every interleaving;
- every `--bmc-every`-th spec (small ones): BMC at the minimal depth (or the deepest level
  the search reached, for `ok`) against the same;
- every `--prove-every`-th spec: `prove` against `verify` at items = 1..6 (proved: all ok;
  violated at n <= 6: a violation at n; a violation at some n <= 6: never proved);
- every `--laps-every`-th spec: `verify --engine laps` against the unreduced search.
Specs where a search hits its state limit are counted, not compared. A disagreement is
printed with its spec; with `--shrink-dir` it is shrunk (ops, roles, counts, items and stages
taken away while the disagreement stays) and the smallest spec written there, for a
regression test. Deterministic for a seed: spec i is made from (seed, i) alone.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import random
import sys
import time
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from pipeproof.checker.core.program import agents_of, slot_parts  # noqa: E402
from pipeproof.spec import templates  # noqa: E402
from pipeproof.spec.load import load_spec_text  # noqa: E402
from pipeproof.spec.schema import SpecError  # noqa: E402

EXAMPLES = ROOT / "spec" / "examples"
MAX_STATES = 20_000
BMC_MAX_STATES = 400     # BMC only on specs whose unreduced graph is this small
BMC_MAX_DEPTH = 24
PROVE_ITEMS = range(1, 7)

# ------------------------------------------------------------------------------ bases

TEMPLATE_BASES = [
    {"template": "mojo_producer_consumer", "backend": "nvidia", "stages": 2, "consumers": 2},
    {"template": "mojo_producer_consumer", "backend": "amd", "stages": 2, "consumers": 2},
    {"template": "mojo_input_tile", "backend": "nvidia", "stages": 2, "k_group_size": 2},
    {"template": "mojo_input_tile", "backend": "nvidia", "stages": 2, "cluster_size": 2},
    {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "consumers": 2},
    {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "cluster_size": 2},
    {"template": "cutlass_tma_async", "backend": "nvidia", "stages": 2, "cluster_size": 2},
    {"template": "cutlass_tma_async", "backend": "nvidia", "stages": 2, "cluster_size": 1},
    {"template": "mojo_sm100_matmul", "backend": "nvidia", "stages": 2, "items": 4},
    {"template": "cutlass_pingpong", "backend": "nvidia", "stages": 2},
]
DROP_PIPELINE_KEYS = ("template", "consumers", "tile_bytes", "expect", "expect_any",
                      "description", "name")


def _explicit(document: dict, path: str) -> dict:
    """A design (plain data) with any template expanded into explicit roles and rings."""
    pipeline = dict(document["pipeline"])
    roles = [dict(r) for r in document.get("role", [])]
    rings = {k: dict(v) for k, v in document.get("ring", {}).items()}
    if "template" in pipeline:
        pipeline, roles = templates.expand(pipeline, roles, path)
        brought = templates.template_rings(pipeline)
        rings = {n: {**brought.get(n, {}), **rings.get(n, {})} for n in {**brought, **rings}}
    for key in DROP_PIPELINE_KEYS:
        pipeline.pop(key, None)
    return {"pipeline": pipeline, "roles": [dict(r) for r in roles],
            "barriers": {k: dict(v) for k, v in document.get("barrier", {}).items()},
            "rings": rings}


def user_shaped_bases() -> list[tuple[str, dict]]:
    """Issue 35's shape (benchmarks/user_shaped.py): a 2-CTA cluster, a producer role per CTA
    with its own program (CTA 0 multicasts A and its scales, each loads its B; one expect_tx
    of the stage's bytes), math warpgroups with async reads and remote releases, drains;
    scales copies of another byte count or the same one, async or synchronous reads."""
    from user_shaped import user_shaped_toml
    out = []
    for stages in (2, 3):
        for warpgroups in (1, 2):
            for scales in (512, 16384):
                for sync in (False, True):
                    text = user_shaped_toml(stages, warpgroups, 1, scales_bytes=scales,
                                            sync_read=sync)
                    out.append((f"user_shaped_s{stages}_w{warpgroups}_b{scales}"
                                + ("_sync" if sync else ""),
                                _explicit(tomllib.loads(text), "user_shaped.toml")))
    return out


WARPS_BASES_DIR = ROOT / "benchmarks" / "warps_bases"


def warps_bases() -> list[tuple[str, dict]]:
    """Per-warp models of real kernels (`pipeproof triton --warps` on tests/triton_kernels,
    small trip counts, committed under benchmarks/warps_bases/): one agent per warp of each
    partition, named-barrier syncs, per-warp TMA copies beside one elected expect_tx, body
    resets (phase_alias window records). A role of more than 2 warps is made 2 (the
    unreduced search's size), its expect_tx bytes scaled with it, so the base stays correct
    (but gluon_cpasync_arrive_sm90, whose arrival count counts the warps: it deadlocks)."""
    out = []
    for path in sorted(WARPS_BASES_DIR.glob("*.toml")):
        d = _explicit(tomllib.loads(path.read_text()), path.name)
        for role in d["roles"]:
            count = role.get("count", 1)
            if count <= 2:
                continue
            role["count"] = 2
            for section in SECTIONS:
                if section in role:  # (a flat spec has no tile sections: none are added)
                    role[section] = [_scaled_expect(op, 2, count) for op in role[section]]
        out.append((f"warps_{path.stem}", d))
    return out


def _scaled_expect(op: str, num: int, den: int) -> str:
    w = op.split()
    if w and w[0] == "expect_tx" and len(w) > 1 and w[1].isdigit():
        w[1] = str(int(w[1]) * num // den)
    return " ".join(w)


def bases() -> list[tuple[str, dict]]:
    out = []
    for path in sorted(EXAMPLES.glob("*.toml")):
        out.append((path.stem, _explicit(tomllib.loads(path.read_text()), path.name)))
    for i, pipeline in enumerate(TEMPLATE_BASES):
        pipeline = {"items": 2, **pipeline}
        out.append((f"template_{pipeline['template']}_{i}",
                    _explicit({"pipeline": pipeline}, "template.toml")))
    return out


# ------------------------------------------------------------------------------ text

def _value(value) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_value(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def to_toml(design: dict, order=None) -> str:
    """The design as spec text; `order` lists role indices in the order to write them."""
    lines = ["[pipeline]"] + [f"{k} = {_value(v)}" for k, v in design["pipeline"].items()]
    for name, table in design.get("rings", {}).items():
        lines += ["", f"[ring.{name}]"] + [f"{k} = {_value(v)}" for k, v in table.items()]
    for name, table in design.get("barriers", {}).items():
        lines += ["", f"[barrier.{name}]"] + [f"{k} = {_value(v)}" for k, v in table.items()]
    roles = design["roles"]
    for i in (order if order is not None else range(len(roles))):
        lines += ["", "[[role]]"] + [f"{k} = {_value(v)}" for k, v in roles[i].items()]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ mutations

SECTIONS = ("prologue", "body", "epilogue", "tile_prologue", "tile_epilogue")
WAITS = {"wait_full": "try_full", "wait_empty": "try_empty"}
TARGETABLE = ("arrive_full", "arrive_empty", "expect_tx", "copy", "commit_empty", "commit_full")


def _sections(design):
    return [(r, s) for r in design["roles"] for s in SECTIONS if r.get(s)]


def _nested(d) -> bool:
    return "tiles" in d["pipeline"]


def _shrink_sizes(rng, d):
    """Items 1..3 (nested loops: tiles 1..3 of k_blocks 1..3), at most 3 stages per ring:
    small enough for the unreduced search."""
    p = d["pipeline"]
    if _nested(d):
        p["tiles"] = rng.choice([1, 1, 2, 2, 3])
        p["k_blocks"] = rng.choice([1, 2, 2, 3])
        # a body op's every=K must divide k_blocks (spec/load_loops.py): keep the examples' K then
        every = [int(w[6:]) for r in d["roles"] for op in r.get("body", ()) for w in op.split()
                 if w.startswith("every=")]
        if every:
            p["k_blocks"] = math.lcm(*every)
    else:
        p["items"] = rng.choice([1, 1, 2, 2, 3])
    p["stages"] = min(p.get("stages", 1), rng.choice([1, 2, 2, 3]))
    for ring in d["rings"].values():
        ring["stages"] = min(ring.get("stages", 1), 2)
    for role in d["roles"]:
        for key in ("items", "tiles"):
            if key in role:
                role[key] = min(role[key], rng.choice([1, 2, 3]))
        if role.get("count", 1) > 2:
            role["count"] = 2
    if p.get("cluster_size", 1) > 2:
        p["cluster_size"] = 2
        for role in d["roles"]:
            if "ctas" in role:
                role["ctas"] = [c for c in role["ctas"] if c < 2] or [0]


def _words(op):
    return op.split()


def _set_count(op, delta):
    w = _words(op)
    if len(w) > 1 and w[1].isdigit():
        w[1] = str(max(1, int(w[1]) + delta))
    elif w[0] in ("arrive_full", "arrive_empty", "commit_empty", "commit_full"):
        w.insert(1, str(max(1, 1 + delta)))
    return " ".join(w)


def _set_section(role, sec, ops):
    """A section's new ops; an emptied body keeps one `advance`, another emptied section goes."""
    if ops:
        role[sec] = ops
    elif sec == "body":
        role[sec] = ["advance"]
    else:
        del role[sec]


def mutate(rng, d):
    """Apply one mutation in place; returns its name."""
    p = d["pipeline"]
    kind = rng.choice(["count", "count", "phase", "move", "drop", "dup", "try", "try", "try", "role_count",
                       "every", "ctas", "target", "bytes", "leader", "backend", "items",
                       "ring_count", "op_count"])
    sections = _sections(d)
    if kind == "count":
        key = rng.choice(["producer_arrive_count", "consumer_arrive_count"])
        p[key] = max(1, p.get(key, 1) + rng.choice([-1, 1]))
    elif kind == "ring_count" and d["rings"]:
        ring = d["rings"][rng.choice(sorted(d["rings"]))]
        key = rng.choice(["producer_arrive_count", "consumer_arrive_count"])
        ring[key] = max(1, ring.get(key, 1) + rng.choice([-1, 1]))
    elif kind == "phase":
        role = rng.choice(d["roles"])
        cur = role.get("initial_phase")
        if isinstance(cur, dict):
            ring = rng.choice(sorted(cur))
            cur[ring] = 1 - cur[ring] % 2
        else:
            default = 1 if role["side"] == "producer" else 0
            role["initial_phase"] = 1 - (default if cur is None else cur) % 2
    elif kind in ("move", "drop", "dup", "op_count", "leader", "every", "try", "bytes",
                  "target") and sections:
        role, sec = rng.choice(sections)
        ops = list(role[sec])
        i = rng.randrange(len(ops))
        w = _words(ops[i])
        if kind == "move":
            op = ops.pop(i)
            ops.insert(rng.randrange(len(ops) + 1), op)
        elif kind == "drop":
            del ops[i]
        elif kind == "dup":
            ops.insert(i, ops[i])
        elif kind == "op_count":
            ops[i] = _set_count(ops[i], rng.choice([-1, 1]))
        elif kind == "leader":
            ops[i] = " ".join(x for x in w if x != "@leader") if "@leader" in w else ops[i] + " @leader"
        elif kind == "every" and sec == "body" and not any(x.startswith("every=") for x in w):
            k = rng.choice([2, 2, 3])
            ops[i] += f" every={k}" + (f" at={rng.randrange(k)}" if rng.random() < 0.5 else "")
        elif kind == "try":
            waits = [j for j, op in enumerate(ops) if _words(op)[0] in WAITS and "unless=ready" not in op]
            if waits:
                # The try goes just before its wait, or anywhere in the section (an advance
                # between them: it polls another slot, or the next item's, as a prefetch
                # does); sometimes the wait is dropped: a bare poll.
                j = rng.choice(waits)
                ww = _words(ops[j])
                rest = [x for x in ww[1:] if x.startswith("ring=")]
                ops[j] = " ".join(ww + ["unless=ready"])
                if rng.random() < 0.2:
                    del ops[j]
                at = j if rng.random() < 0.3 else rng.randrange(len(ops) + 1)
                ops.insert(at, " ".join([WAITS[ww[0]]] + rest))
        elif kind == "bytes" and w[0] in ("expect_tx", "copy"):
            w[1] = str(max(16, int(w[1].replace("_", "")) + rng.choice([-16, 16, 4096])))
            ops[i] = " ".join(w)
        elif kind == "target" and w[0] in TARGETABLE and p.get("cluster_size", 1) > 1:
            w = [x for x in w if not x.startswith("to=")]
            lead = "@leader" in w
            w = [x for x in w if x != "@leader"] + [f"to={rng.choice(['self', 'leader', 'peer', 'all'])}"]
            ops[i] = " ".join(w + (["@leader"] if lead else []))
        _set_section(role, sec, ops)
    elif kind == "role_count":
        role = rng.choice(d["roles"])
        role["count"] = max(1, role.get("count", 1) + rng.choice([-1, 1]))
    elif kind == "ctas" and p.get("cluster_size", 1) > 1:
        role = rng.choice(d["roles"])
        twin = json.loads(json.dumps(role))
        role["ctas"], twin["ctas"] = [0], [1]
        twin["name"] = role["name"] + "_b"
        if rng.random() < 0.5:
            key = "items" if "items" in p or "items" in twin else "tiles"  # (nested: tiles)
            twin[key] = max(0, twin.get(key, p[key]) + rng.choice([-1, 1]))
        d["roles"].append(twin)
    elif kind == "backend":
        uses = json.dumps(d)
        if p["backend"] == "nvidia" and p.get("cluster_size", 1) == 1 and \
                "expect_tx" not in uses and "copy" not in uses:
            p["backend"] = "amd"
        elif p["backend"] == "amd":
            p["backend"] = "nvidia"
    elif kind == "items":
        role = rng.choice(d["roles"])
        key = "tiles" if _nested(d) else "items"   # a nested role's count of loops is its tiles
        role[key] = max(0, role.get(key, p[key]) + rng.choice([-1, 1]))
    return kind


def nested_mutation(rng, d) -> str:
    """One change only nested loops have (issue 47): a role's k_blocks off by one (a role at its
    own rate), a ring moved to the other loop level, or an op moved between a tile section and
    the body (a per-tile acquire or release done per k-block, or the reverse)."""
    kind = rng.choice(["k_blocks", "level", "section"])
    if kind == "k_blocks":
        role = rng.choice(d["roles"])
        role["k_blocks"] = max(1, role.get("k_blocks", d["pipeline"]["k_blocks"]) + rng.choice([-1, 1]))
    elif kind == "level" and d["rings"]:
        ring = d["rings"][rng.choice(sorted(d["rings"]))]
        ring["level"] = "k_block" if ring.get("level", "k_block") == "tile" else "tile"
    else:
        at = [(role, sec) for role in d["roles"] for sec in ("tile_prologue", "tile_epilogue", "body")
              if role.get(sec)]
        if not at:
            return kind
        role, sec = rng.choice(at)
        ops = list(role[sec])
        op = ops.pop(rng.randrange(len(ops)))
        to = rng.choice([x for x in ("tile_prologue", "tile_epilogue", "body") if x != sec])
        role[to] = list(role.get(to, [])) + [op] if to != "tile_prologue" else [op] + list(role.get(to, []))
        _set_section(role, sec, ops)
    return kind


def _turn_one_op(rng, d, old: str, new: str) -> bool:
    """Turn one `old` op (any section, any role) into `new`, keeping its operands: True when
    there was one."""
    at = [(role, sec, j) for role in d["roles"] for sec in SECTIONS
          for j, op in enumerate(role.get(sec, ())) if _words(op)[0] == old]
    if not at:
        return False
    role, sec, j = rng.choice(at)
    ops = list(role[sec])
    ops[j] = new + ops[j][len(old):]
    role[sec] = ops
    return True


def commit_full_mutation(rng, d) -> bool:
    """Turn one arrive_full into a commit_full (issue 34: the arrival is issued, in flight,
    and fires after the agent's earlier async reads and commits): True when one was."""
    return _turn_one_op(rng, d, "arrive_full", "commit_full")


def write_async_mutation(rng, d) -> bool:
    """Turn one `write` into a `write_async` (issue 47: the MMA's accumulator write, in flight
    until it finishes, a commit waiting for it, a read meanwhile read_before_fill): True when
    one was. Its own stream (`generate`), so the other specs of a seed stay what they were."""
    return _turn_one_op(rng, d, "write", "write_async")


def write_to_mutation(rng, d) -> bool:
    """In a cluster spec, give one `write`/`write_async` a (new) target, `to=leader|peer|all`
    (issue 47: a 2-SM leader MMA): True when there was one. A stream of its own (`generate`)."""
    at = [(role, sec, j) for role in d["roles"] for sec in SECTIONS
          for j, op in enumerate(role.get(sec, ())) if _words(op)[0] in ("write", "write_async")]
    if d["pipeline"].get("cluster_size", 1) < 2 or not at:
        return False
    role, sec, j = rng.choice(at)
    w = [x for x in _words(role[sec][j]) if not x.startswith("to=")]
    lead = ["@leader"] if "@leader" in w else []
    to = "to=" + rng.choice(("leader", "peer", "all"))
    role[sec] = role[sec][:j] + [" ".join([x for x in w if x != "@leader"] + [to] + lead)] \
        + role[sec][j + 1:]
    return True


def generate(seed: int, i: int, base_list=None) -> tuple[str, str, str]:
    """(base name, mutations, spec text) of spec i of a run. commit_full (issue 34) comes from
    a stream of its own, so the other specs of a seed stay what they were: one spec in 8 is
    made from a COMMIT_FULL_BASES design, one in 6 of the rest has an arrive_full turned into
    a commit_full (mutation "commit_full")."""
    base_list = base_list or BASES
    rng = random.Random(seed * 1_000_003 + i)
    extra = random.Random(f"commit_full {seed} {i}")
    name, base = base_list[rng.randrange(len(base_list))]
    if base_list is BASES and extra.random() < 1 / 8:
        name, base = COMMIT_FULL_BASES[extra.randrange(len(COMMIT_FULL_BASES))]
    chosen = random.Random(f"write_to base {seed} {i}")  # its own stream (issue 47)
    if base_list is BASES and chosen.random() < 1 / 8:
        name, base = WRITE_TO_BASES[chosen.randrange(len(WRITE_TO_BASES))]
    d = json.loads(json.dumps(base))
    _shrink_sizes(rng, d)
    kinds = [mutate(rng, d) for _ in range(1 if rng.random() < 0.7 else 2)]
    if extra.random() < 1 / 6 and commit_full_mutation(extra, d):
        kinds.append("commit_full")
    writes = random.Random(f"write_async {seed} {i}")
    if writes.random() < 1 / 4 and write_async_mutation(writes, d):
        kinds.append("write_async")
    targets = random.Random(f"write_to {seed} {i}")  # its own stream too (issue 47)
    if targets.random() < 1 / 2 and write_to_mutation(targets, d):
        kinds.append("write_to")
    if _nested(d):   # a stream of its own too (issue 47): flat specs stay what they were
        more = random.Random(f"nested {seed} {i}")
        if more.random() < 1 / 2:
            kinds.append(nested_mutation(more, d))
    return name, "+".join(kinds), to_toml(d)


BASES = bases()
# Designs whose full signals are commit_full's (issue 34: sm100's accumulator ring): an MMA
# role fills and commits onto full, an epilogue drains; and two rings, the MMA reading the
# input ring asynchronously (commit_empty) and committing the accumulator's full after it.
_ACC = ["wait_empty ring=acc", "write ring=acc", "commit_full ring=acc", "advance ring=acc"]
COMMIT_FULL_BASES = [
    ("commit_full_mma_epilogue", {
        "pipeline": {"backend": "nvidia", "stages": 2, "producer_arrive_count": 1,
                     "consumer_arrive_count": 1, "items": 3},
        "rings": {}, "barriers": {},
        "roles": [{"name": "mma", "side": "producer", "count": 1,
                   "body": ["wait_empty", "write", "commit_full", "advance"]},
                  {"name": "epilogue", "side": "consumer", "count": 1,
                   "body": ["wait_full", "read", "arrive_empty", "advance"]}]}),
    ("commit_full_async_mma", {
        "pipeline": {"backend": "nvidia", "stages": 2, "producer_arrive_count": 1,
                     "consumer_arrive_count": 2, "items": 3},
        "rings": {}, "barriers": {},
        "roles": [{"name": "mma", "side": "producer", "count": 1,
                   "body": ["wait_empty", "write", "read_async", "commit_full", "advance"]},
                  {"name": "epilogue", "side": "consumer", "count": 2,
                   "body": ["wait_full", "read", "arrive_empty", "advance"]}]}),
    ("commit_full_sm100", {
        "pipeline": {"backend": "nvidia", "stages": 2, "producer_arrive_count": 1,
                     "consumer_arrive_count": 1, "items": 2},
        "rings": {"acc": {"stages": 1, "producer_arrive_count": 1, "consumer_arrive_count": 1}},
        "barriers": {},
        "roles": [{"name": "load", "side": "producer", "count": 1,
                   "body": ["wait_empty", "expect_tx 64", "copy 64", "advance"],
                   "epilogue": ["drain"]},
                  {"name": "mma", "side": "consumer", "count": 1,
                   "body": ["wait_full", "read_async", "commit_empty", "advance"] + _ACC},
                  {"name": "epilogue", "side": "consumer", "count": 1,
                   "body": ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc",
                            "advance ring=acc"]}]}),
    ("commit_full_cluster", {
        "pipeline": {"backend": "nvidia", "stages": 2, "cluster_size": 2,
                     "producer_arrive_count": 1, "consumer_arrive_count": 1, "items": 2},
        "rings": {}, "barriers": {},
        "roles": [{"name": "mma", "side": "producer", "count": 1,
                   "body": ["wait_empty", "write", "commit_full", "advance"]},
                  {"name": "epilogue", "side": "consumer", "count": 1,
                   "body": ["wait_full", "read", "arrive_empty", "advance"]}]}),
]
from write_to_bases import WRITE_TO_BASES  # noqa: E402  (issue 47: 2-SM leader MMAs)
USER_SHAPED_BASES = user_shaped_bases()
WARPS_BASES = warps_bases()
# Nested loops (issue 47): the examples with tiles and k_blocks, made small (tiles and k_blocks
# 1..3), one spec in two also changed by a nested_mutation. They are among BASES too.
NESTED_BASES = [(name, d) for name, d in BASES if _nested(d)]
FAMILIES = {"": None, "user-shaped": USER_SHAPED_BASES, "warps": WARPS_BASES, "nested": NESTED_BASES}

# ------------------------------------------------------------------------------ comparison


def _answer(result):
    return (result.verdict, tuple(sorted(result.kinds)), result.depth)


def compare(spec, do_bmc=False, do_prove=False, do_laps=False, max_states=MAX_STATES):
    """{check: (expected, got)} for each disagreement, plus what was compared."""
    from pipeproof.checker.engines.verifier import verify
    reduced = verify(spec, max_states=max_states)
    full = verify(spec, max_states=max_states, por=False, symmetry=False)
    out = {"compared": [], "disagree": {}, "verdict": full.verdict}
    if reduced.limit or full.limit:
        out["limit"] = True
        return out
    out["compared"].append("reduced")
    if _answer(reduced) != _answer(full):
        out["disagree"]["reduced"] = (_answer(full), _answer(reduced))
    if full.verdict == reduced.verdict == "ok":
        # the warning unawaited_at_exit: found by the reduced search exactly when by the full one
        out["compared"].append("warnings")
        if sorted(full.warnings) != sorted(reduced.warnings):
            out["disagree"]["warnings"] = (sorted(full.warnings), sorted(reduced.warnings))
    if full.warnings or reduced.warnings or "inflight_at_exit" in full.kinds:
        # PTX's strict reading (--strict-exit), where the warning is inflight_at_exit
        strict = verify(spec, max_states=max_states, strict_exit=True)
        strict_full = verify(spec, max_states=max_states, por=False, symmetry=False,
                             strict_exit=True)
        if not strict.limit and not strict_full.limit:
            out["compared"].append("strict")
            if _answer(strict) != _answer(strict_full):
                out["disagree"]["strict"] = (_answer(strict_full), _answer(strict))
    if do_bmc and full.states <= BMC_MAX_STATES:
        from pipeproof.checker.smt.bmc import verify_bmc
        depth = full.depth if full.verdict == "violation" else min(full.max_depth, BMC_MAX_DEPTH)
        if depth <= BMC_MAX_DEPTH:
            bmc = verify_bmc(spec, depth=depth, timeout=60)
            if not bmc.limit:
                out["compared"].append("bmc")
                want = _answer(full) if full.verdict == "violation" else ("ok", (), None)
                got = _answer(bmc) if bmc.verdict == "violation" else ("ok", (), None)
                if got != want:
                    out["disagree"]["bmc"] = (want, got)
    if do_laps:
        from pipeproof.checker.engines.lap_verify import verify_laps
        laps = verify_laps(spec, max_states=max_states * 10, timeout=60)
        if not laps.limit:
            out["compared"].append("laps")
            if _answer(laps) != _answer(full):
                out["disagree"]["laps"] = (_answer(full), _answer(laps))
    if do_prove:
        _compare_prove(spec, out, max_states)
    return out


def _compare_prove(spec, out, max_states):
    from pipeproof.checker.engines.laps import scaled_spec
    from pipeproof.checker.engines.prover import prove
    from pipeproof.checker.engines.verifier import verify
    try:
        proof = prove(spec, timeout=60, max_states=2_000_000)
    except Exception as err:  # a crash is a finding too
        out["disagree"]["prove"] = ("no exception", repr(err))
        return
    if proof.status == "unknown":
        return
    verdicts = {}
    for n in PROVE_ITEMS:
        try:
            concrete = scaled_spec(spec, n)
        except Exception:
            return
        r = verify(concrete, max_states=max_states, por=False, symmetry=False)
        if r.limit:
            continue
        verdicts[n] = r.verdict
    out["compared"].append("prove")
    bad = [n for n, v in verdicts.items() if v == "violation"]
    if proof.status == "proved" and bad:
        out["disagree"]["prove"] = (f"violation at n = {bad[0]}", "proved")
    if proof.status == "violated" and proof.concrete is not None and proof.concrete.k_blocks != spec.k_blocks:
        # nested loops: the refutation ran at another k_blocks than the spec's (prove checks 1..K)
        r = verify(proof.concrete, max_states=max_states, por=False, symmetry=False)
        if not r.limit and r.verdict != "violation":
            out["disagree"]["prove"] = (f"{r.verdict} at n = {proof.items}, k_blocks = "
                                        f"{proof.concrete.k_blocks}", f"violated at n = {proof.items}")
        return
    if proof.status == "violated" and proof.items in verdicts and verdicts[proof.items] != "violation":
        out["disagree"]["prove"] = (f"{verdicts[proof.items]} at n = {proof.items}",
                                    f"violated at n = {proof.items}")


def check_one(args):
    seed, i, bmc_every, prove_every, laps_every, max_states, only, clusters, family = args
    name, mutation, text = generate(seed, i, FAMILIES[family])
    rec = {"i": i, "base": name, "mutation": mutation}
    if only and not set(mutation.split("+")) & set(only):
        rec["filtered"] = True
        return rec
    try:
        spec = load_spec_text(text, f"gen{i}.toml")
    except SpecError:
        rec["invalid"] = True
        return rec
    if clusters and spec.cluster_size == 1:
        rec["filtered"] = True
        return rec
    agents = agents_of(spec)
    rec["parts"] = any(len(p) > 1 for p in slot_parts(spec, agents))
    rec["window"] = any(op.name == "reset" for a in agents for op, _ in a.ops)
    try:
        rec.update(compare(spec, do_bmc=bmc_every and i % bmc_every == 0,
                           do_prove=prove_every and i % prove_every == 0,
                           do_laps=laps_every and i % laps_every == 0, max_states=max_states))
    except Exception as err:  # never a crash: report it as a disagreement
        rec["disagree"] = {"exception": ("no exception", repr(err))}
        rec["compared"] = ["exception"]
    if rec.get("disagree"):
        rec["text"] = text
    return rec


# ------------------------------------------------------------------------------ shrinking

def shrink(text: str, check: str, max_states=MAX_STATES, budget_s=120.0) -> str:
    """A smaller spec text on which `check` still disagrees (greedy: drop roles and ops,
    lower counts, items and stages, one at a time, while it does)."""
    def disagrees(t):
        try:
            spec = load_spec_text(t, "shrink.toml")
        except SpecError:
            return False
        try:
            res = compare(spec, do_bmc=check == "bmc", do_prove=check == "prove",
                          do_laps=check == "laps", max_states=max_states)
        except Exception:
            return check == "exception"
        return check in res["disagree"]

    started = time.monotonic()
    doc = tomllib.loads(text)
    d = {"pipeline": doc["pipeline"], "roles": doc.get("role", []),
         "barriers": doc.get("barrier", {}), "rings": doc.get("ring", {})}
    improved = True
    while improved and time.monotonic() - started < budget_s:
        improved = False
        for cand in _smaller(d):
            if disagrees(to_toml(cand)):
                d, improved = cand, True
                break
    return to_toml(d)


def _smaller(d):
    def copy():
        return json.loads(json.dumps(d))
    if len(d["roles"]) > 1:
        for i in range(len(d["roles"])):
            c = copy()
            del c["roles"][i]
            yield c
    for i, role in enumerate(d["roles"]):
        for sec in SECTIONS:
            for j in range(len(role.get(sec, []))):
                c = copy()
                del c["roles"][i][sec][j]
                if not c["roles"][i][sec]:
                    del c["roles"][i][sec]
                    if sec == "body":
                        continue
                yield c
        for key in ("count", "items"):
            if role.get(key, 0) > 1:
                c = copy()
                c["roles"][i][key] -= 1
                yield c
    for key in ("items", "stages", "producer_arrive_count", "consumer_arrive_count", "cluster_size"):
        if d["pipeline"].get(key, 0) > 1:
            c = copy()
            c["pipeline"][key] -= 1
            yield c


# ------------------------------------------------------------------------------ the run

def run(specs: int, seed: int, jobs: int, bmc_every: int, prove_every: int, laps_every: int,
        max_states: int, shrink_dir=None, quiet=False, only=(), clusters=False,
        family="") -> dict:
    """Check specs 0..specs-1 of `seed` (`only`: just those with one of these mutations;
    `clusters`: just those of more than one CTA; `family`: made from FAMILIES' bases instead
    of the examples and templates: "user-shaped", issue 35's shape, or "warps", per-warp
    models of the Triton kernels)."""
    started = time.monotonic()
    tally = Counter()
    verdicts = Counter()
    mutations = Counter()
    found = []
    work = [(seed, i, bmc_every, prove_every, laps_every, max_states, tuple(only), clusters,
             family) for i in range(specs)]
    if jobs > 1:
        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap(check_one, work, chunksize=64)
    else:
        pool, results = None, map(check_one, work)
    for n, rec in enumerate(results, start=1):
        # first, so a spec filtered out, invalid or over the limit does not swallow the line
        if not quiet and n % 5000 == 0:
            print(f"  {n} specs, {time.monotonic() - started:.0f} s, "
                  f"{sum(v for k, v in tally.items() if k.startswith('disagree'))} disagreements "
                  f"({tally['compared_reduced']} compared)", file=sys.stderr, flush=True)
        if rec.get("filtered"):
            continue
        tally["generated"] += 1
        for mutation in rec["mutation"].split("+"):   # each of a spec's mutations
            mutations[mutation] += 1
        if rec.get("invalid"):
            tally["invalid"] += 1
            continue
        tally["loaded"] += 1
        if rec.get("limit"):
            tally["limit"] += 1
            continue
        verdicts[rec.get("verdict")] += 1
        tally["with_parts"] += rec.get("parts", False)  # a ring whose slots have several parts
        tally["with_window"] += rec.get("window", False)  # an agent with a reset
        for c in rec.get("compared", []):
            tally[f"compared_{c}"] += 1
        for c, (want, got) in rec.get("disagree", {}).items():
            tally[f"disagree_{c}"] += 1
            found.append((rec, c))
            if not quiet:
                print(f"DISAGREE {c} spec {rec['i']} ({rec['base']}, {rec['mutation']}): "
                      f"expected {want}, got {got}\n{rec['text']}", flush=True)
    if pool:
        pool.close()
        pool.join()
    if shrink_dir:
        Path(shrink_dir).mkdir(parents=True, exist_ok=True)
        for rec, c in found:
            small = shrink(rec["text"], c, max_states)
            (Path(shrink_dir) / f"seed{seed}_spec{rec['i']}_{c}.toml").write_text(small)
    return {"tally": dict(tally), "verdicts": dict(verdicts), "mutations": dict(mutations),
            "seconds": time.monotonic() - started, "found": found}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=max(1, multiprocessing.cpu_count()))
    ap.add_argument("--bmc-every", type=int, default=50)
    ap.add_argument("--prove-every", type=int, default=50)
    ap.add_argument("--laps-every", type=int, default=25)
    ap.add_argument("--max-states", type=int, default=MAX_STATES)
    ap.add_argument("--shrink-dir")
    ap.add_argument("--clusters", action="store_true",
                    help="compare only the generated specs of more than one CTA")
    ap.add_argument("--user-shaped", action="store_true",
                    help="make the specs from issue 35's user-shaped GEMM (benchmarks/user_shaped.py)")
    ap.add_argument("--only", default="",
                    help="compare only the specs with one of these mutations (comma-separated, "
                         "e.g. write_async)")
    ap.add_argument("--nested", action="store_true",
                    help="make the specs from the nested-loop examples (issue 47: tiles of k-blocks)")
    ap.add_argument("--warps-shaped", action="store_true",
                    help="make the specs from per-warp models of the Triton kernels "
                         "(benchmarks/warps_bases/, `pipeproof triton --warps`)")
    ap.add_argument("--bases", default="",
                    help="make the specs only from the examples and templates whose name contains "
                         "one of these (comma-separated, e.g. expect_bytes)")
    args = ap.parse_args()
    if args.bases:
        BASES[:] = [b for b in BASES if any(w in b[0] for w in args.bases.split(","))]
        if not BASES:
            ap.error(f"--bases {args.bases}: no example or template base has that in its name")
    from pipeproof.checker.engines.verifier import warm_up
    warm_up()  # compile (or load) the engines once, before the workers fork
    from pipeproof.checker.engines.prover import warm_up_prove
    warm_up_prove()
    out = run(args.specs, args.seed, args.jobs, args.bmc_every, args.prove_every,
              args.laps_every, args.max_states, args.shrink_dir, clusters=args.clusters,
              only=tuple(m for m in args.only.split(",") if m), family="user-shaped" if args.user_shaped else "warps" if args.warps_shaped
              else "nested" if args.nested else "")
    t = out["tally"]
    print(f"\ncommand: python benchmarks/soundness.py --specs {args.specs} --seed {args.seed} "
          f"--jobs {args.jobs} --bmc-every {args.bmc_every} --prove-every {args.prove_every} "
          f"--laps-every {args.laps_every} --max-states {args.max_states}"
          + (" --clusters" if args.clusters else "") + (" --user-shaped" if args.user_shaped else "")
          + (" --nested" if args.nested else "") + (f" --only {args.only}" if args.only else "")
          + (" --warps-shaped" if args.warps_shaped else "")
          + (f" --bases {args.bases}" if args.bases else ""))
    print(f"specs generated {t.get('generated', 0)}, loaded {t.get('loaded', 0)}, "
          f"invalid (spec errors) {t.get('invalid', 0)}, over the state limit {t.get('limit', 0)}")
    print(f"verdicts of the compared specs (unreduced search): {out['verdicts']}")
    print(f"compared specs with slots of several parts: {t.get('with_parts', 0)}, with a reset "
          f"(phase_alias window records): {t.get('with_window', 0)}")
    print(f"mutations: {dict(sorted(out['mutations'].items()))}")
    for c in ("reduced", "warnings", "strict", "bmc", "prove", "laps", "exception"):
        print(f"  {c:9s} compared {t.get('compared_' + c, 0):7d}   disagreements "
              f"{t.get('disagree_' + c, 0)}")
    total = sum(v for k, v in t.items() if k.startswith("disagree"))
    print(f"disagreements: {total}   ({out['seconds']:.0f} s)")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
