"""Warp-specialised persistent matmul for sm100 (Blackwell), compiled on CPU to TTGIR.

C[M, N] = A[M, K] @ B[N, K]^T with host-side TMA descriptors (``tensordesc`` arguments).
The outer persistent tile loop carries ``warp_specialize=True``: Triton's automatic warp
specialisation splits it into a TMA-load partition, a tcgen05 MMA partition and an
epilogue partition that talk through mbarrier rings in shared memory.

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton
import triton.language as tl


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped ordering of output tiles for L2 reuse.
    width = GROUP_M * num_pid_n
    group = tile_id // width
    first_m = group * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % rows)
    pid_n = (tile_id % width) // rows
    return pid_m, pid_n


@triton.jit
def ws_matmul_kernel(a_desc, b_desc, c_desc, M, N, K,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_steps = tl.cdiv(K, BLOCK_K)

    for tile_id in tl.range(pid, num_tiles, NUM_SMS, flatten=True, warp_specialize=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(k_steps):
            off_k = kk * BLOCK_K
            a = a_desc.load([off_m, off_k])
            b = b_desc.load([off_n, off_k])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


BM, BN, BK = 128, 128, 64

# (kernel, signature, constexprs, target (backend, arch), options) consumed by dump_ttgir.py
KERNELS = {
    "ws_matmul_sm100": dict(
        fn=ws_matmul_kernel,
        signature={
            "a_desc": f"tensordesc<fp16[{BM}, {BK}]>",
            "b_desc": f"tensordesc<fp16[{BN}, {BK}]>",
            "c_desc": f"tensordesc<fp16[{BM}, {BN}]>",
            "M": "i32", "N": "i32", "K": "i32",
            "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
            "GROUP_M": "constexpr", "NUM_SMS": "constexpr",
        },
        constexprs={"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": 8, "NUM_SMS": 148},
        target=("cuda", 100),
        options={"num_warps": 4, "num_stages": 3},
    ),
}
