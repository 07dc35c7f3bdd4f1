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


def _swp_wait_index_off(text):
    """The loop's wait on ready[(s + 1) % 3] instead of ready[s] (the reads stay at s)."""
    return text.replace("%acc_25 = ttg.memdesc_index %acc[%acc_22]",
                        "%acc_22p = arith.addi %acc_22, %c1_i32 : i32\n      "
                        "%acc_22q = arith.remsi %acc_22p, %c3_i32 : i32\n      "
                        "%acc_25 = ttg.memdesc_index %acc[%acc_22q]", 1)


def _bias_released_before_read(text):
    """ws_persistent: the epilogue arrives on bias_empty before it loads the bias tile."""
    a, b = _consumer_block(text)
    block = text[a:b]
    load = re.search(r"\n\s*%bias_1 = ttg\.local_load[^\n]*", block).group(0)
    arrive = re.search(r"\n\s*ttng\.arrive_barrier %20, 1, %true[^\n]*", block).group(0)
    block = block.replace(load, "", 1).replace(arrive, arrive + load, 1)
    return text[:a] + block + text[b:]


PERSISTENT = "ws_persistent_sm100"   # tiles of k-blocks (docs/triton.md)
PERSISTENT_ARGS = ("--arg", "n_tiles=3", "--arg", "K=128")
PERSISTENT_SWP = "persistent_swp_sm100"   # items counted by reads (docs/triton.md)
PERSISTENT_SWP_ARGS = ("--arg", "n_tiles=2", "--arg", "K=256")
ROWSUM = "gluon_ring_rowsum_sm100"
ROWSUM_ARGS = ("--arg", "n_tiles=5")
GENERIC = (("ws_matmul_sm100", ("--arg", "M=128", "--arg", "N=128", "--arg", "K=256")),
           ("gluon_ring_matmul_sm90", ("--arg", "K=512")),
           ("gluon_ring_matmul_drained_sm100", ("--arg", "K=512")),
           ("ws_matmul_nested_sm100", ("--arg", "M=256", "--arg", "N=128", "--arg", "K=256")))

SWP = "sm90_pipelined"
SWP_ARGS = ("--arg", "K=512")
SWP_KINDS = {"swp_wait_group_too_weak": "overwrite_before_drain",
             "swp_refill_the_slot_being_read": "overwrite_before_drain",
             "swp_wait_index_off_by_one": "read_before_fill",
             "swp_phase_xor_flipped": "phase_alias",
             "swp_second_prologue_load_skipped": "deadlock",
             "swp_expect_bytes_halved": "read_before_fill"}

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
    # Triton's own sm90 software pipelining (one partition loads 2 items ahead of its wgmma):
    # SWP_KINDS has the kind each gives.
    Mutation("swp_wait_group_too_weak", SWP, SWP_ARGS,  # wgmma.wait_group 2 before the refill
             lambda t: t.replace("{pendings = 1 : i32}", "{pendings = 2 : i32}", 1),
             r"ttng\.async_tma_copy_global_to_local %[ab]_desc\[[^\]]*%a_34"),
    Mutation("swp_refill_the_slot_being_read", SWP, SWP_ARGS,  # load into slot k, not k + 2
             lambda t: t.replace("%acc_30 = arith.addi %acc_15, %c1_i32", "%acc_30 = arith.addi %acc_16, %c1_i32", 1),
             r"ttng\.async_tma_copy_global_to_local %[ab]_desc\[[^\]]*%a_34"),
    Mutation("swp_wait_index_off_by_one", SWP, SWP_ARGS, _swp_wait_index_off,
             r"ttng\.warp_group_dot %a_27"),
    Mutation("swp_phase_xor_flipped", SWP, SWP_ARGS,
             lambda t: t.replace("%acc_23 = arith.xori %acc_17, %c1_i32", "%acc_23 = arith.xori %acc_17, %c0_i32", 1),
             r"ttng\.wait_barrier %acc_25, %acc_24"),
    Mutation("swp_second_prologue_load_skipped", SWP, SWP_ARGS,  # its predicate never true
             lambda t: t.replace("%acc_8 = arith.cmpi sgt, %1, %c1_i32", "%acc_8 = arith.cmpi sgt, %c0_i32, %c1_i32", 1),
             r"ttng\.wait_barrier %acc_25, %acc_24"),
    Mutation("swp_expect_bytes_halved", SWP, SWP_ARGS,
             lambda t: t.replace("ttng.barrier_expect %acc_35, 32768", "ttng.barrier_expect %acc_35, 16384", 1)),
] + [
    # the bias tile the loader refills (tile t + 2) lands before the epilogue read tile t
    Mutation("persistent_bias_released_before_read", PERSISTENT, PERSISTENT_ARGS,
             _bias_released_before_read, r"ttng\.async_tma_copy_global_to_local %arg20\["),
    # the loop's wait for the previous MMA removed: a refill may land on a slot an MMA still reads
    Mutation("persistent_swp_mma_wait_removed", PERSISTENT_SWP, PERSISTENT_SWP_ARGS,
             lambda t: re.sub(r"\n\s*ttng\.wait_barrier %38, %40, %true[^\n]*", "", t, count=1),
             r"ttng\.async_tma_copy_global_to_local"),
] + [
    Mutation(f"every_init_count_plus_one:{k}", k, a,
             lambda t: re.sub(r"(ttng\.init_barrier %\S+), 1 ", r"\1, 2 ", t)) for k, a in GENERIC
] + [
    Mutation(f"first_expect_removed:{k}", k, a,
             lambda t: re.sub(r"\n\s*ttng\.barrier_expect [^\n]*", "", t, count=1)) for k, a in GENERIC
]
