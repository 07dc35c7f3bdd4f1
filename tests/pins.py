"""The pinned numbers of the examples in spec/examples/: literal numbers measured once.

A change in the explored state space must be noticed and the pins updated on purpose. A plain
module (not a test module), imported by the test files that check these numbers:
tests/test_examples.py (all of them), tests/test_expressiveness.py (the x_*.toml ones),
tests/test_por.py, tests/test_graph.py, tests/test_bmc.py, tests/test_prove.py and
tests/test_lap_verify.py.

- `PINNED_STATES*`, `PINNED_TRANSITIONS*`: the explicit engine's state and transition counts
  of the `ok` examples, with and without the reductions (keys: file names).
- `PINNED_TRACE_LENGTH`: the shortest counterexample's length of each violating example.
- `PROVED`, `PROVED_NO_POR`, `LARGE_PROVED_NO_POR`: `pipeproof prove`'s abstract state
  counts, with and without partial-order reduction (keys: names without ".toml").
"""
from __future__ import annotations

# Distinct states stored by a complete exploration of each `ok` example, with symmetry
# reduction (one state per orbit of interchangeable agents, checker/engines/symmetries.py) and without
# partial-order reduction (`verify(spec, por=False)`, `--no-por`).
PINNED_STATES = {
    "x_expect_bytes_ok.toml": 155,  # expect_bytes: mbarrier.expect_tx alone (issue 48)
    "x_fa3_persistent_ok.toml": 1660,  # nested loops (issue 47)
    "x_tcgen05_gemm_acc_ring_ok.toml": 3531,
    "x_tcgen05_gemm_acc_async_ok.toml": 4482,  # write_async (issue 47)
    "x_tcgen05_2sm_ok.toml": 115911,  # write_async to=all: a 2-SM leader MMA (issue 47)
    "x_fa3_q_once_per_tile.toml": 187,
    "x_prologue_tile_ok.toml": 237,
    "x_async_read_ok.toml": 2551, # 2659 before R1
    "x_cluster_ctas_ok.toml": 1655,
    "x_cutlass_pingpong.toml": 169,
    "x_mojo_sm100_matmul.toml": 38443, # 41216 before R1
    "x_named_split_ok.toml": 675,
    "x_persistent_tiles_ok.toml": 974,
    "x_persistent_reset_ok.toml": 1848,
    "x_rings_scales_ok.toml": 2430,
    "cutlass_tma_async_cluster2.toml": 17383,  # CTA symmetry: 34517 without (CTA_SYMMETRY)
    "mojo_input_tile_cluster2_k2.toml": 32877,  # 65489 without CTA symmetry; 33690 before R1
    "mojo_input_tile_nvidia.toml": 259, # 271 before R1 (commits fire in issue order)
    "mojo_pcp_amd.toml": 457,
    "mojo_pcp_nvidia.toml": 457,
    "named_barrier_release_ok.toml": 499,
    "sm90_ring_nvidia.toml": 875,
    "try_full_prefetch_ok.toml": 3397,
    "bug_input_tile_no_drain.toml": 167,  # ok since R2: the warning unawaited_at_exit
}

# The same with partial-order reduction as well (the default, checker/engines/por.py): the reduced
# graph's states (issue 18: arrivals into other CTAs and copy landings are merged too). tests/test_por.py checks this graph against a plain Python search.
PINNED_STATES_POR = {
    "x_expect_bytes_ok.toml": 5,
    "x_fa3_persistent_ok.toml": 2,
    "x_tcgen05_gemm_acc_ring_ok.toml": 35,
    "x_tcgen05_gemm_acc_async_ok.toml": 52,  # an async write's finishing is never merged
    "x_tcgen05_2sm_ok.toml": 31,  # write_async to=all (a 2-SM leader MMA)
    "x_fa3_q_once_per_tile.toml": 2,  # 5 before finishing steps
    "x_prologue_tile_ok.toml": 2,  # 5 before finishing steps; 14 before issue 35 (landings of different byte counts merged)
    "x_async_read_ok.toml": 11,  # 18 before finishing steps; 107 before issue 35 (async reads merged: issue, finish, read_wait)
    "x_cluster_ctas_ok.toml": 5,  # 12 before finishing steps
    "x_cutlass_pingpong.toml": 8,  # 11 before finishing steps
    "x_mojo_sm100_matmul.toml": 13,  # 28 before finishing steps; 55 before issue 35 (async reads merged)
    "x_named_split_ok.toml": 9,  # 16 before finishing steps; 36 before issue 34's named-barrier merges
    "x_persistent_tiles_ok.toml": 2,  # 7 before finishing steps; 9 before named-barrier merges, 40 before issue 35 (landings)
    "x_persistent_reset_ok.toml": 2,  # 16 before the walk kept the waiters' window records (por.walk_window); 21 before finishing steps; 90 before stale_ok
    "x_rings_scales_ok.toml": 5,  # 12 before finishing steps
    "cutlass_tma_async_cluster2.toml": 2,  # 11 before finishing steps, 13 before observations beside arrivals (STATES_POR_NO_CTA_SYMMETRY)
    "mojo_input_tile_cluster2_k2.toml": 2,  # 11 before finishing steps, 17 before observations beside arrivals, 19 before R1
    "mojo_input_tile_nvidia.toml": 2,  # 5 before finishing steps
    "mojo_pcp_amd.toml": 6,  # 11 before finishing steps
    "mojo_pcp_nvidia.toml": 6,  # 11 before finishing steps
    "named_barrier_release_ok.toml": 4,  # 11 before finishing steps; 28 before named-barrier merges
    "sm90_ring_nvidia.toml": 2,  # 7 before finishing steps; as x_persistent_reset_ok (24 before)
    "try_full_prefetch_ok.toml": 756,  # 773 before finishing steps
    "bug_input_tile_no_drain.toml": 10,  # 13 before finishing steps
}

# The same without symmetry reduction (`verify(spec, symmetry=False)`, `--no-symmetry`): every
# state of the concrete agents.
PINNED_STATES_NO_SYMMETRY = {
    "x_expect_bytes_ok.toml": 155,
    "x_fa3_persistent_ok.toml": 2900,
    "x_tcgen05_gemm_acc_ring_ok.toml": 3531,
    "x_tcgen05_gemm_acc_async_ok.toml": 4482,
    "x_tcgen05_2sm_ok.toml": 115911,  # no agents to interchange; CTAs run different roles
    "x_fa3_q_once_per_tile.toml": 187,
    "x_prologue_tile_ok.toml": 237,
    "x_async_read_ok.toml": 2551,
    "x_cluster_ctas_ok.toml": 1655,
    "x_cutlass_pingpong.toml": 169,
    "x_mojo_sm100_matmul.toml": 38443,
    "x_named_split_ok.toml": 675,
    "x_persistent_tiles_ok.toml": 1635,
    "x_persistent_reset_ok.toml": 3225,
    "x_rings_scales_ok.toml": 2430,
    "cutlass_tma_async_cluster2.toml": 34517,
    "mojo_input_tile_cluster2_k2.toml": 65489,
    "mojo_input_tile_nvidia.toml": 259,
    "mojo_pcp_amd.toml": 809,
    "mojo_pcp_nvidia.toml": 809,
    "named_barrier_release_ok.toml": 499,
    "sm90_ring_nvidia.toml": 1526,
    "try_full_prefetch_ok.toml": 6378,
    "bug_input_tile_no_drain.toml": 167,
}

# Transitions generated by a complete exploration (a few small `ok` examples).
PINNED_TRANSITIONS = {
    "x_expect_bytes_ok.toml": 309,
    "mojo_input_tile_nvidia.toml": 547,
    "named_barrier_release_ok.toml": 1257,
    "mojo_pcp_amd.toml": 1136,
    "sm90_ring_nvidia.toml": 2370,
}
PINNED_TRANSITIONS_NO_SYMMETRY = {
    "x_expect_bytes_ok.toml": 309,
    "mojo_input_tile_nvidia.toml": 547,
    "named_barrier_release_ok.toml": 1257,
    "mojo_pcp_amd.toml": 2008,
    "sm90_ring_nvidia.toml": 4103,
}

# Steps in the shortest counterexample (the minimal violation depth) of each violating example.
PINNED_TRACE_LENGTH = {
    "bug_arrive_before_expect_bytes.toml": 4,  # expect_bytes after the arrival (issue 48)
    "x_fa3_persistent_q_released_early.toml": 34,  # nested loops (issue 47)
    "x_tcgen05_gemm_acc_freed_early.toml": 111,
    "x_tcgen05_gemm_acc_arrive_not_commit.toml": 49,  # write_async handed over by an arrive
    "x_tcgen05_2sm_arrive_not_commit.toml": 30,  # the same in 2-SM (write_async to=all)
    "x_fa3_q_released_early.toml": 29,
    "bug_prologue_tile_released_early.toml": 15,
    "x_async_release_before_wait.toml": 16,
    "x_cluster_item_mismatch_deadlock.toml": 44,
    "x_named_arrive_mix_bug.toml": 21,
    "x_persistent_reset_bad.toml": 32,
    "x_rings_acquire_order_deadlock.toml": 19,
    "bug_amd_arrive_count_off_by_one.toml": 8,
    "bug_amd_producer_phase0.toml": 0,
    "bug_consumer_count_too_few.toml": 9,
    "bug_consumer_count_too_many.toml": 24,
    "bug_consumer_phase1_nvidia.toml": 2,
    "bug_cutlass_no_producer_tail.toml": 32,
    "bug_every_lane_arrive_full.toml": 4,
    "bug_every_lane_expect_tx.toml": 4,
    "bug_expect_tx_over_limit.toml": 2,
    "bug_expect_tx_too_few_bytes.toml": 6,
    "bug_expect_tx_too_many_bytes.toml": 15,
    "bug_input_tile_cluster2_no_drain.toml": 31,
    "bug_lapped_observer.toml": 10,
    "bug_named_barrier_missing_role.toml": 16,
    "bug_persistent_reset.toml": 7,
    "bug_producer_phase0_nvidia.toml": 0,
    "bug_release_before_read.toml": 12,
    "bug_stale_try_full.toml": 11,
}

# `pipeproof prove --no-por --no-cta-symmetry` on the correct examples (tests/test_prove.py):
# exact abstract state counts of the lap abstraction alone (deterministic; they change only when the
# abstraction does).
PROVED_NO_POR = {
    "x_expect_bytes_ok": 4110,
    "x_fa3_persistent_ok": 35140,  # nested loops: summed over k_blocks = 1..3 (issue 47)
    "mojo_pcp_nvidia": 8511, "mojo_pcp_amd": 8511, "mojo_input_tile_nvidia": 4599,
    "sm90_ring_nvidia": 13660, "named_barrier_release_ok": 14463, "x_cutlass_pingpong": 928,
    "x_named_split_ok": 19831, "x_persistent_tiles_ok": 17467, "try_full_prefetch_ok": 65912,
    # per-tile resets: the phase numbers move with the waiters' window records (checker/engines/laps.py)
    "x_persistent_reset_ok": 8006,
    "x_async_read_ok": 69567, "x_rings_scales_ok": 88807,
    # CTA 1's empty barriers are never used (the workers release to the leader): left out of
    # the lap shift, they no longer hold the ring's phases back (unbounded before).
    "x_cluster_ctas_ok": 50350,
    "bug_input_tile_no_drain": 4509,  # ok since R2 (the warning unawaited_at_exit)
}

# The same without partial-order reduction where the abstract state space is large (slow
# tests), proved in about 10 s, 11 s and 51 s (2-core machine). The two cluster examples grew
# with slot parts (was 706494 and 5346620): each CTA's multicast fills a part of its own, and
# the two land in either order.
LARGE_PROVED_NO_POR = {"x_tcgen05_gemm_acc_ring_ok": 693277, "x_tcgen05_gemm_acc_async_ok": 860077, "cutlass_tma_async_cluster2": 1104994, "x_mojo_sm100_matmul": 1497602,
                       "mojo_input_tile_cluster2_k2": 6656556}  # R1 (2026-12-02): 1197054, 1592519, 7921750 before

# `pipeproof prove` as shipped, with partial-order reduction in the abstract search (issue
# 18): every correct example inside the abstraction, the three large ones included.
PROVED = {
    "x_expect_bytes_ok": 80,  # expect_bytes (issue 48)
    # nested loops (issue 47): for every tile count, summed over k_blocks = 1..3 and 1..4
    "x_fa3_persistent_ok": 110, "x_tcgen05_gemm_acc_ring_ok": 2671,
    "x_tcgen05_gemm_acc_async_ok": 3970,  # write_async
    # The first lap bound is above 2 x stages with the reduction (prove.first_bound): more
    # exact item counts below it, fewer walks cut short above it. Issue 35 (2026-12-05): the
    # named-barrier, observation-beside-arrival and finishing-step merges in the abstract search
    # too (docs/reductions.md "The merges that came later"). Issue 35, later (commit 0954f32): agents whose
    # entries name them (async reads, commits) sorted too, and an exact state's agent at its
    # last item looks ahead without the body repeated (docs/reductions.md "`prove` on the
    # largest user-shaped cell"). Each count before commit 0954f32, then before the merges that came later:
    "mojo_pcp_nvidia": 80, "mojo_pcp_amd": 80, "mojo_input_tile_nvidia": 59,  # 104, 104, 59; 118, 118, 66
    "sm90_ring_nvidia": 59, "named_barrier_release_ok": 161, "x_cutlass_pingpong": 76,  # 64, 191, 80; 80, 502, 87
    "x_named_split_ok": 289,  # 319; 626
    "x_persistent_tiles_ok": 31,  # 47; 92 (594 before issue 35's landings of different byte counts)
    "try_full_prefetch_ok": 16985,  # 17049; 17071
    "x_persistent_reset_ok": 24, "x_rings_scales_ok": 120,  # 28, 132; 93 before por.walk_window (109 before that), 240
    "x_async_read_ok": 109,  # 125; 167 (1986 before issue 35's async reads)
    "x_cluster_ctas_ok": 80,  # 80; 138
    # the two clusters with CTA symmetry (24 and 3375 without: PROVED_NO_CTA_SYMMETRY)
    "cutlass_tma_async_cluster2": 24, "x_mojo_sm100_matmul": 227,  # 45, 302; 136, 382 (761 before issue 35)
    # 343 before R1: commit entries name their agent, so one CTA's MMA commits are no longer
    # twins of the other's in the partial-order reduction (docs/reductions.md "Commit firings")
    "mojo_input_tile_cluster2_k2": 1763,  # 1787; 3064
    # ok since R2 (its own commits in flight at exit: the warning unawaited_at_exit)
    "bug_input_tile_no_drain": 97,  # 105; 119
}

# Issue 18, CTA symmetry (checker/engines/symmetries.py): the cluster examples whose CTAs run the same
# programs, with the renaming of CTAs turned off (`--no-cta-symmetry`); x_cluster_ctas_ok has
# no such renaming (the scheduler runs in CTA 0 only, releases go to=leader).
STATES_NO_CTA_SYMMETRY = {"cutlass_tma_async_cluster2.toml": 34517, "mojo_input_tile_cluster2_k2.toml": 65489}
STATES_POR_NO_CTA_SYMMETRY = {"cutlass_tma_async_cluster2.toml": 2, "mojo_input_tile_cluster2_k2.toml": 2}  # 17, 17 before finishing steps
PROVED_NO_CTA_SYMMETRY = {"cutlass_tma_async_cluster2": 24, "mojo_input_tile_cluster2_k2": 3375}  # 53, 3407 before commit 0954f32 (above); 181, 5767 before issue 35's lap merges
