"""A persistent, software-pipelined tcgen05 matmul in one partition (Gluon, sm100), compiled
on CPU to TTGIR: per tile it loads the first NUM_BUFFERS - 2 k-blocks before its k loop, loads
one and multiplies one per iteration, and multiplies the last ones after the loop (the drain).
Its loop iterations hold one read of the ring or none, so the front end counts items by the
reads (spec/frontend_reads.py; docs/triton.md "Software pipelining in one partition").

Written for pipeproof (not a copy): it follows the protocol of `persistent_matmul_kernel` in
the Gluon tutorial `python/tutorials/gluon/07-persistence.py` of triton-lang/triton (MIT
licence): one `ready` barrier per operand slot, completed by the TMA loads; before each MMA the
kernel waits until the previous MMA has finished (a 2-barrier tcgen05 commit ring, the
tutorial's `wait_num_outstanding(0)`), which is what makes the next refill of a slot safe.

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton.experimental.gluon.language as gl
from triton.experimental import gluon
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,
                                                                 tcgen05_commit, tcgen05_mma)


@gluon.jit
def _load(n, a_desc, b_desc, off_m, k, ready, a_bufs, b_bufs, NUM_BUFFERS: gl.constexpr):
    i = n % NUM_BUFFERS
    mbarrier.expect(ready.index(i), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
    tma.async_load(a_desc, [off_m, k], ready.index(i), a_bufs.index(i))
    tma.async_load(b_desc, [k, 0], ready.index(i), b_bufs.index(i))
    return n + 1


@gluon.jit
def _multiply(n, issued, ready, done, a_bufs, b_bufs, acc, NUM_BUFFERS: gl.constexpr):
    i = n % NUM_BUFFERS
    mbarrier.wait(ready.index(i), (n // NUM_BUFFERS) & 1)          # operands landed?
    if issued > 0:                                                  # the previous MMA finished?
        mbarrier.wait(done.index((issued - 1) & 1), ((issued - 1) >> 1) & 1)
    tcgen05_mma(a_bufs.index(i), b_bufs.index(i), acc, use_acc=n % 2 == 1)
    tcgen05_commit(done.index(issued & 1))
    return n + 1, issued + 1


@gluon.jit
def persistent_swp_matmul(a_desc, b_desc, out_ptr, n_tiles, K, NUM_BUFFERS: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUFFERS, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUFFERS, BLOCK_K, BLOCK_N], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    done = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(ready.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(done.index(i), count=1)
    acc = allocate_tensor_memory(gl.float32, [BLOCK_M, BLOCK_N], TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1))
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    total = gl.zeros([BLOCK_M], gl.float32, gl.SliceLayout(1, layout))
    loaded = 0
    consumed = 0
    issued = 0
    for t in range(n_tiles):
        off_m = t * BLOCK_M
        for k in gl.static_range(0, BLOCK_K * (NUM_BUFFERS - 2), BLOCK_K):    # prefetch
            loaded = _load(loaded, a_desc, b_desc, off_m, k, ready, a_bufs, b_bufs, NUM_BUFFERS)
        for k in range(BLOCK_K * (NUM_BUFFERS - 2), K, BLOCK_K):
            loaded = _load(loaded, a_desc, b_desc, off_m, k, ready, a_bufs, b_bufs, NUM_BUFFERS)
            consumed, issued = _multiply(consumed, issued, ready, done, a_bufs, b_bufs, acc, NUM_BUFFERS)
        for _ in gl.static_range(NUM_BUFFERS - 2):                            # drain
            consumed, issued = _multiply(consumed, issued, ready, done, a_bufs, b_bufs, acc, NUM_BUFFERS)
        mbarrier.wait(done.index((issued - 1) & 1), ((issued - 1) >> 1) & 1)  # the tile's last MMA
        total += gl.sum(gl.convert_layout(acc.load(), layout), axis=1)
    gl.store(out_ptr + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout)), total)


def _desc(dtype, shape, bits=16):
    sw = 128 if shape[-1] * bits // 8 >= 128 else 64
    layout = (f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
              f"transposed=False, fp4_padded=False, cga_layout=[])")
    return f"tensordesc<{dtype}[{shape[0]}, {shape[1]}],{layout}>"


KERNELS = {
    "persistent_swp_sm100": dict(
        fn=persistent_swp_matmul,
        signature={"a_desc": _desc("fp16", [128, 64]), "b_desc": _desc("fp16", [64, 128]), "out_ptr": "*fp32",
                   "n_tiles": "i32", "K": "i32", "NUM_BUFFERS": "constexpr"},
        constexprs={"NUM_BUFFERS": 3},
        target=("cuda", 100), options={"num_warps": 4}, gluon=True),
}
