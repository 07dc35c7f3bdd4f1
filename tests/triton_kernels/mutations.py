"""IR mutations the way real synchronisation bugs look, on TTGIR the installed Triton compiled
from this folder's kernels: tests/test_triton_frontend.py asserts what each gives, and
benchmarks/triton_frontend.py reports verdicts, states and seconds.

Each `Mutation` names the kernel (a KERNELS key), its --arg values, the text transform and a
regex for the op line whose kernel line the counterexample must name (None: not checked).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Mutation:
    name: str
    kernel: str
    args: tuple
    transform: Callable[[str], str]
    line_of: str | None = None


def _consumer_block(text):
    """The default partition's text (the consumer of the row-sum ring)."""
    start = text.index("default {")
    return start, text.index("partition0(", start)


def _in_consumer(text, old, new, count=1):
    a, b = _consumer_block(text)
    return text[:a] + text[a:b].replace(old, new, count) + text[b:]


def _wait_after_read(text):
    a, b = _consumer_block(text)
    block = text[a:b]
    wait = re.search(r"\n\s*ttng\.wait_barrier %8, %phase_1, %true[^\n]*", block).group(0)
    block = block.replace(wait, "", 1)
    load = re.search(r"\n\s*%tile_2 = ttg\.local_load[^\n]*", block).group(0)
    return text[:a] + block.replace(load, load + wait, 1) + text[b:]


ROWSUM = "gluon_ring_rowsum_sm100"
ROWSUM_ARGS = ("--arg", "n_tiles=5")
GENERIC = (("ws_matmul_sm100", ("--arg", "M=128", "--arg", "N=128", "--arg", "K=256")),
           ("gluon_ring_matmul_sm90", ("--arg", "K=512")),
           ("gluon_ring_matmul_drained_sm100", ("--arg", "K=512")))

MUTATIONS = [
    Mutation("init_count_plus_one", ROWSUM, ROWSUM_ARGS,  # every empty[s]: count 2
             lambda t: re.sub(r"(ttng\.init_barrier %[135]), 1 ", r"\1, 2 ", t)),
    Mutation("phase_xor_flipped", ROWSUM, ROWSUM_ARGS,    # the loader's phase ^ 1 -> phase ^ 0
             lambda t: re.sub(r"(arith\.xori %phase_\d+, )%c1_i32_0", r"\1%c0_i32_1", t, count=1),
             r"ttng\.wait_barrier %6, %7"),
    Mutation("expect_bytes_halved", ROWSUM, ROWSUM_ARGS,
             lambda t: t.replace("ttng.barrier_expect %8, 8192", "ttng.barrier_expect %8, 4096")),
    Mutation("arrive_removed", ROWSUM, ROWSUM_ARGS,
             lambda t: re.sub(r"\n\s*ttng\.arrive_barrier %9, 1, %true[^\n]*", "", t)),
    Mutation("stage_index_off_by_one", ROWSUM, ROWSUM_ARGS,  # ready[(s + 1) % 3] in the consumer
             lambda t: _in_consumer(t, "%8 = ttg.memdesc_index %ready[%s]",
                                    "%s_p1 = arith.addi %s, %c1_i32 : i32\n        "
                                    "%s_off = arith.remsi %s_p1, %c3_i32 : i32\n        "
                                    "%8 = ttg.memdesc_index %ready[%s_off]"),
             r"ttng\.wait_barrier %8, %phase_1"),
    Mutation("wait_moved_after_read", ROWSUM, ROWSUM_ARGS, _wait_after_read,
             r"ttg\.local_load %tile "),
] + [
    Mutation(f"every_init_count_plus_one:{k}", k, a,
             lambda t: re.sub(r"(ttng\.init_barrier %\S+), 1 ", r"\1, 2 ", t)) for k, a in GENERIC
] + [
    Mutation(f"first_expect_removed:{k}", k, a,
             lambda t: re.sub(r"\n\s*ttng\.barrier_expect [^\n]*", "", t, count=1)) for k, a in GENERIC
]
