"""Gluon kernels with explicit mbarrier rings, compiled on CPU to TTGIR.

The three ring kernels (gluon_ring_rowsum for sm90 and sm100, gluon_ring_matmul for sm100 with
tcgen05, gluon_ring_matmul_sm90 with wgmma) use one producer partition (a 1-warp TMA loader, a
gl.warp_specialize worker) and one consumer partition (the 4-warp default partition) around a
STAGES-deep ring of shared-memory slots guarded by two barrier arrays:

* ``ready[s]``: count 1; the loader's ``mbarrier.expect`` arrives once and sets the byte
  count, the TMA copies complete the transaction bytes;
* ``empty[s]``: count 1; the consumer releases the slot (an explicit ``mbarrier.arrive``
  in ``gluon_ring_rowsum`` and ``gluon_ring_matmul_sm90``; the tcgen05 MMA's completion barrier
  in ``gluon_ring_matmul``).

Index/phase convention: iteration i uses slot ``i % STAGES`` and phase ``(i // STAGES) & 1``;
the loader waits ``empty`` with the flipped phase so its first lap passes at once.

``gluon_cpasync_arrive`` (sm90, no warp specialisation) is the per-thread counterpart:
cp.async copies plus ``async_copy.mbarrier_arrive(increment_count=False)``, one arrival per thread.

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton.experimental.gluon.language as gl
from triton.experimental import gluon
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait; _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared  # noqa: E702,E501 (Triton 3.6 names it async_copy_global_to_shared; one line, so the pinned source lines stay)
from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,
                                                                 fence_async_shared, tcgen05_commit, tcgen05_mma)


# ---------------------------------------------------------------- ring row-sum (sm90 and sm100)
@gluon.jit
def _rowsum_loader(x_desc, bufs, ready, empty, n_tiles, STAGES: gl.constexpr):
    for i in range(n_tiles):
        s = i % STAGES
        phase = (i // STAGES) & 1
        mbarrier.wait(empty.index(s), phase ^ 1)               # slot free?
        mbarrier.expect(ready.index(s), x_desc.block_type.nbytes)
        _tma_load(x_desc, [i * x_desc.block_type.shape[0], 0], ready.index(s), bufs.index(s))


@gluon.jit
def _rowsum_consumer(out_ptr, bufs, ready, empty, n_tiles, BLOCK_R: gl.constexpr, BLOCK_C: gl.constexpr,
                     STAGES: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    total = gl.zeros([BLOCK_R], gl.float32, gl.SliceLayout(1, layout))
    for i in range(n_tiles):
        s = i % STAGES
        phase = (i // STAGES) & 1
        mbarrier.wait(ready.index(s), phase)                   # data landed?
        tile = bufs.index(s).load(layout)
        mbarrier.arrive(empty.index(s))                        # hand the slot back
        total += gl.sum(tile.to(gl.float32), axis=1)
    rows = gl.arange(0, BLOCK_R, gl.SliceLayout(1, layout))
    gl.store(out_ptr + rows, total)


@gluon.jit
def gluon_ring_rowsum(x_desc, out_ptr, n_tiles, STAGES: gl.constexpr):
    BLOCK_R: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_C: gl.constexpr = x_desc.block_type.shape[1]
    bufs = gl.allocate_shared_memory(x_desc.dtype, [STAGES, BLOCK_R, BLOCK_C], x_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (_rowsum_consumer, (out_ptr, bufs, ready, empty, n_tiles, BLOCK_R, BLOCK_C, STAGES)),
        (_rowsum_loader, (x_desc, bufs, ready, empty, n_tiles, STAGES)),
    ], [1], [24])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# ---------------------------------------------------------------- ring matmul (sm100, tcgen05)
@gluon.jit
def _mm_loader(a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, STAGES: gl.constexpr,
               DRAIN: gl.constexpr):
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(empty.index(s), phase ^ 1)
        mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        _tma_load(a_desc, [off_m, k * BLOCK_K], ready.index(s), a_bufs.index(s))
        _tma_load(b_desc, [off_n, k * BLOCK_K], ready.index(s), b_bufs.index(s))
    if DRAIN:  # producer tail (CUTLASS producer_tail, Mojo drain): every slot released again
        for k in range(k_tiles, k_tiles + STAGES):
            mbarrier.wait(empty.index(k % STAGES), ((k // STAGES) & 1) ^ 1)


@gluon.jit
def _mm_consumer(c_desc, a_bufs, b_bufs, ready, empty, acc_bar, acc_tmem, off_m, off_n, k_tiles,
                 STAGES: gl.constexpr):
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(ready.index(s), phase)
        # async MMA: its completion arrives on empty[s] (tcgen05.commit ... mbarrier::arrive::one)
        tcgen05_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc_tmem, use_acc=k > 0,
                    mbarriers=[empty.index(s)])
    tcgen05_commit(acc_bar)                                    # all MMAs issued so far -> acc_bar
    mbarrier.wait(acc_bar, 0)
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    acc = acc_tmem.load(acc_tmem.get_reg_layout())
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def gluon_ring_matmul(a_desc, b_desc, c_desc, K, STAGES: gl.constexpr, DRAIN: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    k_tiles = gl.cdiv(K, BLOCK_K)
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    acc_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    mbarrier.init(acc_bar, count=1)
    acc_tmem = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1))
    gl.warp_specialize([
        (_mm_consumer, (c_desc, a_bufs, b_bufs, ready, empty, acc_bar, acc_tmem, off_m, off_n, k_tiles, STAGES)),
        (_mm_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, STAGES, DRAIN)),
    ], [1], [24])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))
    mbarrier.invalidate(acc_bar)


# ---------------------------------------------------------------- ring matmul (sm90, wgmma)
@gluon.jit
def _mm90_consumer(c_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, STAGES: gl.constexpr):
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1],
                                                         instr_shape=[16, BLOCK_N, 16])
    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, mma_layout)
    for k in range(k_tiles):
        s = k % STAGES
        phase = (k // STAGES) & 1
        mbarrier.wait(ready.index(s), phase)
        a = a_bufs.index(s)
        b = b_bufs.index(s).permute((1, 0))
        acc = warpgroup_mma(a, b, acc, is_async=True)
        acc, a, b = warpgroup_mma_wait(0, deps=[acc, a, b])    # wgmma done reading slot s
        mbarrier.arrive(empty.index(s))                        # one arrival for the whole partition
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def gluon_ring_matmul_sm90(a_desc, b_desc, c_desc, K, STAGES: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[0]
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    k_tiles = gl.cdiv(K, BLOCK_K)
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    gl.warp_specialize([
        (_mm90_consumer, (c_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, STAGES)),
        (_mm_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, STAGES, False)),
    ], [1], [24])
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))
        mbarrier.invalidate(empty.index(s))


# ---------------------------------------------------------------- cp.async + per-thread mbarrier arrivals
@gluon.jit
def gluon_cpasync_arrive(x_ptr, out_ptr, ROWS: gl.constexpr, COLS: gl.constexpr):
    # No warp specialisation: every thread issues cp.async copies and then arrives on the barrier
    # when its own copies land. increment_count=False gives ttng.async_copy_mbarrier_arrive
    # {noIncrement} -> cp.async.mbarrier.arrive.noinc: one arrival per thread (without .noinc the
    # pending count is first raised by one, so the async arrival nets zero), hence the barrier is
    # initialised with the CTA's thread count.
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    smem = gl.allocate_shared_memory(gl.float16, [ROWS, COLS], gl.SwizzledSharedLayout(8, 1, 1, [1, 0]))
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=gl.num_warps() * 32)
    r = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    c = gl.max_contiguous(gl.multiple_of(gl.arange(0, COLS, gl.SliceLayout(0, layout)), 8), 8)
    async_copy.async_load(smem, x_ptr + r[:, None] * COLS + c[None, :])
    async_copy.mbarrier_arrive(bar, increment_count=False)
    mbarrier.wait(bar, 0)
    tile = smem.load(layout)
    gl.store(out_ptr + r[:, None] * COLS + c[None, :], tile)
    mbarrier.invalidate(bar)


def _desc(dtype, shape, bits=16):
    sw = 128 if shape[-1] * bits // 8 >= 128 else 64
    layout = (f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
              f"transposed=False, fp4_padded=False, cga_layout=[])")
    return f"tensordesc<{dtype}[{shape[0]}, {shape[1]}],{layout}>"


_rowsum = dict(
    fn=gluon_ring_rowsum,
    signature={"x_desc": _desc("fp16", [64, 64]), "out_ptr": "*fp32", "n_tiles": "i32", "STAGES": "constexpr"},
    constexprs={"STAGES": 3},
    options={"num_warps": 4},
    gluon=True,
)

def _matmul(fn, arch, **flags):
    """A ring-matmul entry: 128x64 fp16 A and B tiles, 3 stages, constexpr flags as given."""
    signature = {"a_desc": _desc("fp16", [128, 64]), "b_desc": _desc("fp16", [128, 64]),
                 "c_desc": _desc("fp16", [128, 128]), "K": "i32", "STAGES": "constexpr"}
    signature.update({name: "constexpr" for name in flags})
    return dict(fn=fn, signature=signature, constexprs={"STAGES": 3, **flags},
                target=("cuda", arch), options={"num_warps": 4}, gluon=True)


KERNELS = {
    "gluon_ring_rowsum_sm90": dict(_rowsum, target=("cuda", 90)),
    "gluon_ring_rowsum_sm100": dict(_rowsum, target=("cuda", 100)),
    "gluon_ring_matmul_sm100": _matmul(gluon_ring_matmul, 100, DRAIN=False),
    "gluon_ring_matmul_drained_sm100": _matmul(gluon_ring_matmul, 100, DRAIN=True),
    "gluon_ring_matmul_sm90": _matmul(gluon_ring_matmul_sm90, 90),
    "gluon_cpasync_arrive_sm90": dict(
        fn=gluon_cpasync_arrive,
        signature={"x_ptr": "*fp16", "out_ptr": "*fp16", "ROWS": "constexpr", "COLS": "constexpr"},
        constexprs={"ROWS": 64, "COLS": 64},
        attrs={(0, ): [["tt.divisibility", 16]], (1, ): [["tt.divisibility", 16]]},   # 16-byte cp.async
        target=("cuda", 90),
        options={"num_warps": 4},
        gluon=True,
    ),
}
