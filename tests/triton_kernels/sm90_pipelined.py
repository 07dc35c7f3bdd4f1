"""Software-pipelined TMA matmul for Hopper (sm90), compiled on CPU to TTGIR.

No warp specialisation: ``tl.range(..., num_stages=NUM_STAGES)`` (3; also 2 and 4) makes
Triton's pipeliner turn the K loop into a NUM_STAGES-slot ring of shared-memory buffers filled
by TMA loads (one mbarrier per slot:
barrier_expect + async_tma_copy_global_to_local, then wait_barrier with a phase carried in the
loop's iter_args) and consumed by asynchronous wgmma (warp_group_dot / warp_group_dot_wait).

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton
import triton.language as tl


@triton.jit
def sm90_pipelined_kernel(a_desc, b_desc, c_desc, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          NUM_STAGES: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


BM, BN, BK = 128, 128, 64


def _entry(stages):
    return dict(
        fn=sm90_pipelined_kernel,
        signature={
            "a_desc": f"tensordesc<fp16[{BM}, {BK}]>",
            "b_desc": f"tensordesc<fp16[{BK}, {BN}]>",
            "c_desc": f"tensordesc<fp16[{BM}, {BN}]>",
            "K": "i32",
            "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
            "NUM_STAGES": "constexpr",
        },
        constexprs={"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "NUM_STAGES": stages},
        target=("cuda", 90),
        options={"num_warps": 4, "num_stages": stages},
    )


# num_stages 3, and the other depths Triton's autotuning configurations use.
KERNELS = {"sm90_pipelined": _entry(3), **{f"sm90_pipelined_s{n}": _entry(n) for n in (2, 4)}}
