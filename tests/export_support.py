"""What the export tests share: running SPIN and Rumur on a spec side by side (`both_tools`, with
the C compiler's OPT and each tool's TIMEOUT) and comparing them with pipeproof (`agree`); the
generated specs whose verdict the slot parts and the phase_alias window after a `reset` decide
(PART_AND_RESET_SPECS, built by `part_spec` and `cell`, pinned to the explicit engine's
verdicts); and `check_printed_read_miss`, the printed read check of both languages against
semantics.read_miss (docs/rules.md "Slot parts").

Used by tests/test_export_models.py, test_export_steps.py, test_export_async.py,
test_export_clusters.py, test_export_rules.py and test_commit_full.py.
"""
from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core.program import OP_EFFECTS
from pipeproof.checker.models.exporter import run_rumur, run_spin
from pipeproof.checker.models.ir import read_miss_text

# ------------------------------------------------------------------ SPIN and Rumur beside pipeproof
# The C code is compiled with -O0: the models are small, and compiling is most of the time.
OPT = "-O0"
TIMEOUT = 120


def both_tools(spec, tmp_path, symmetry=False):
    """SPIN and Rumur side by side (two cores), each in its own directory."""
    (tmp_path / "spin").mkdir()
    (tmp_path / "rumur").mkdir()
    with ThreadPoolExecutor(2) as pool:
        s = pool.submit(run_spin, spec, tmp_path / "spin", TIMEOUT, opt=OPT)
        m = pool.submit(run_rumur, spec, tmp_path / "rumur", TIMEOUT, symmetry=symmetry, opt=OPT)
        return s.result(), m.result()


def agree(ours, spin, rumur, spin_kinds):
    """SPIN and Rumur reach pipeproof's (unreduced) verdict; Rumur stores exactly its states
    when ok and names one of its kinds when not; SPIN's kind is one of `spin_kinds` (its
    depth-first search stops at the first violation it meets, not the shortest)."""
    for run in (spin, rumur):
        assert run.verdict == ours.verdict, (
            f"{run.tool}: {run.verdict} ({run.kind}), pipeproof: {ours.verdict} {ours.kinds}\n"
            f"{run.output[-3000:]}")
    if ours.verdict == "ok":
        assert rumur.states == ours.states, "Murphi must store exactly pipeproof's states"
        assert spin.states >= ours.states  # plus SPIN's init and process-exit states
    else:
        assert rumur.kind in ours.kinds, (rumur.kind, ours.kinds, rumur.output[-2000:])
        assert spin.kind in spin_kinds, (spin.kind, spin.output[-2000:])


# ------------------------------------------------------------------ slot parts, reset windows
# Specs where the slot parts (docs/rules.md "Slot parts") and the phase_alias window after a
# `reset` decide the verdict; tests/test_export_models.py runs SPIN and Rumur on every one.

def role_toml(name, side, count, body, epilogue=()):
    q = lambda ops: "[" + ", ".join(f'"{o}"' for o in ops) + "]"
    return (f'[[role]]\nname = "{name}"\nside = "{side}"\ncount = {count}\nbody = {q(body)}\n'
            + (f"epilogue = {q(epilogue)}\n" if epilogue else "") + "\n")


def part_spec(name, stages, pac, items, producer, consumer, count=1, epilogue=("drain",),
              consumer_epilogue=()):
    """A one-ring spec: a producer role of `count` agents and one consumer."""
    return (f'[pipeline]\nname = "{name}"\nbackend = "nvidia"\nstages = {stages}\n'
            f"producer_arrive_count = {pac}\nconsumer_arrive_count = 1\nitems = {items}\n\n"
            + role_toml("producer", "producer", count, producer, epilogue)
            + role_toml("consumer", "consumer", 1, consumer, consumer_epilogue))


# Fills of one stage by the producer: each fill op is a part of its own.
FILLS = {
    "copy2": ["expect_tx 128", "copy 64", "copy 64"],            # two parts, all bytes announced
    "copy2_short": ["expect_tx 64", "copy 64", "copy 64"],       # half announced: a half-filled read
    "write2": ["write", "arrive_full", "write"],                 # the arrive between the two writes
    "copy_write": ["write", "expect_tx 64", "copy 64"],          # a TMA copy beside a SIMT write
    "guarded": ["write every=2 at=0", "expect_tx 64", "copy 64"],  # a second part every other item
}


def cell(fill, stages, reset_k, resetters, try_, items=4):
    """The spec of one cell: the producer fills a stage with FILLS[fill]; `resetters` ("p", "c",
    "pc") end each tile of `reset_k` items with a reset; `try_` prefetches with try_full."""
    reset = [f"reset every={reset_k} at={reset_k - 1}"] if reset_k else []
    producer = ["wait_empty"] + FILLS[fill] + ["advance"] + (reset if "p" in resetters else [])
    consumer = ((["try_full", "wait_full unless=ready"] if try_ else ["wait_full"])
                + ["read", "arrive_empty", "advance"] + (reset if "c" in resetters else []))
    return part_spec(f"{fill} stages={stages} reset={reset_k}{resetters} try={try_}", stages, 1,
                     items, producer, consumer)


# (name, spec text, the explicit engine's verdict and kinds): pinned here so that a change of
# the rules shows; the exports must agree (tests/test_export_models.py).
PART_AND_RESET_SPECS = [
    ("copy2", cell("copy2", 1, 0, "", False), ("ok",)),
    ("copy2_reset2_c", cell("copy2", 1, 2, "c", False), ("ok",)),
    ("copy2_reset2_pc_try", cell("copy2", 1, 2, "pc", True), ("ok",)),
    ("copy2_s2_reset4_pc", cell("copy2", 2, 4, "pc", False), ("ok",)),
    ("copy_write_s2_reset4_pc_try", cell("copy_write", 2, 4, "pc", True), ("ok",)),
    ("guarded_s2", cell("guarded", 2, 0, "", False), ("ok",)),
    ("guarded_reset2_c_try", cell("guarded", 1, 2, "c", True), ("ok",)),
    ("copy2_reset1_c", cell("copy2", 1, 1, "c", False), ("violation", "read_before_fill")),
    ("copy2_s2_reset2_c", cell("copy2", 2, 2, "c", False), ("violation", "read_before_fill")),
    ("copy2_s2_reset2_pc_try", cell("copy2", 2, 2, "pc", True), ("violation", "over_arrival")),
    ("copy2_short_s2", cell("copy2_short", 2, 0, "", False), ("violation", "read_before_fill")),
    ("write2_reset2_pc_try", cell("write2", 1, 2, "pc", True), ("violation", "read_before_fill")),
    ("two_writers", part_spec("two writers", 2, 2, 3, ["wait_empty", "write", "arrive_full", "advance"],
                              ["wait_full", "read", "arrive_empty", "advance"], count=2, epilogue=()),
     ("ok",)),
    ("two_writers_one_arrive",
     part_spec("two writers, the leader arrives", 2, 1, 3,
               ["wait_empty", "write", "arrive_full @leader", "advance"],
               ["wait_full", "read", "arrive_empty", "advance"], count=2, epilogue=()),
     ("violation", "read_before_fill")),
    ("alternating",  # even items fill part 0, odd items part 1: a read checks that part only
     part_spec("alternating parts", 2, 1, 4,
               ["wait_empty", "write every=2 at=0", "write every=2 at=1", "arrive_full", "advance"],
               ["wait_full", "read", "arrive_empty", "advance"]),
     ("ok",)),
    ("alternating_released_early",  # the next item fills the other part: the early release is safe
     part_spec("alternating parts, released before the read", 1, 1, 4,
               ["wait_empty", "write every=2 at=0", "write every=2 at=1", "arrive_full", "advance"],
               ["wait_full", "arrive_empty", "read", "advance"]),
     ("ok",)),
    ("one_part_released_early",  # one part: the early release lets the next item over it
     part_spec("one part, released before the read", 1, 1, 4,
               ["wait_empty", "write", "arrive_full", "advance"],
               ["wait_full", "arrive_empty", "read", "advance"]),
     ("violation", "overwrite_before_drain")),
    ("epilogue_alias",
     part_spec("epilogue write into the two-part input slot", 1, 1, 2,
               ["wait_empty", "expect_tx 128", "copy 64", "copy 64", "advance"],
               ["wait_full", "read", "arrive_empty", "advance"], consumer_epilogue=("write", "read")),
     ("ok",)),
]


# ------------------------------------------------------------------ the printed read check

def printed_as_python(text: str, lang: str) -> str:
    """A printed condition as Python (the two languages' and/or/not/equals)."""
    if lang == "promela":
        text = text.replace("&&", " and ").replace("||", " or ")
    else:
        text = text.replace(" & ", " and ").replace(" | ", " or ").replace(" = ", " == ")
    return text.replace("!(", " not (")


def check_printed_read_miss(ir) -> int:
    """Every read of `ir`'s spec, in every item it runs in, at the stage it runs at, over slot
    contents of every kind: the printed test (both languages) says read_before_fill exactly
    when semantics.read_miss finds a part (parts per slot: part_filled_for at that stage).
    The number of cases checked."""
    m = ir.model
    checked = 0
    for g in ir.groups:
        visits = ir.read_stages(g)
        for p, (op, _) in enumerate(g.ops):
            if not OP_EFFECTS[op.name].checks_read:
                continue
            r = g.rings[p]
            n = ir.rings[r].n_parts
            for lang in ("promela", "murphi"):
                text = printed_as_python(read_miss_text(ir, g, p, "item", "want", lambda q: f"slot[{q}]", lang), lang)
                for (q, item), stage in visits.items():
                    if q != p:
                        continue
                    want = g.tags[p] if g.tags[p] >= 0 else item // g.divs[p]  # a tile-level ring: the tile
                    values = sorted({-1, want, (want + 1) % (ir.max_tag + 1)})
                    for slot in itertools.product(values, repeat=n):
                        st = np.array(m.initial_vector(), dtype=np.int64)
                        base = S.slot_pos(m.tables, g.cta, r, stage)
                        st[base:base + n] = slot
                        expect = S.read_miss(m.tables, st, g.cta, r, stage, want) >= 0
                        got = eval(text, {"slot": list(slot), "item": item, "want": want})
                        assert got == expect, (g.label, p, lang, item, stage, slot, text)
                        checked += 1
    return checked

