"""A warp-specialised persistent tcgen05 matmul in Gluon (sm100) whose partitions loop at
different rates, compiled on CPU to TTGIR: the front end reads it as tiles of k-blocks
(docs/triton.md "Tiles of k-blocks").

Written for pipeproof (not a copy): it follows the protocol of the Gluon tutorial
`python/tutorials/gluon/08-warp-specialization.py` of triton-lang/triton (MIT licence),
`matmul_warp_specialized_kernel`: a 1-warp TMA loader and a 1-warp MMA partition loop over
tiles and, in each tile, over k-blocks (a NUM_BUFFERS-deep operand ring `load_empty`/
`load_ready`); the 4-warp default partition (the epilogue) loops over tiles only and takes the
double-buffered TMEM accumulator through `acc_empty`/`acc_ready` (commit by the MMA per tile,
arrive by the epilogue). Here the loader also loads one bias tile per tile (before its k-blocks)
into a 2-slot ring `bias_ready`/`bias_empty` that the epilogue reads once per tile: per-tile
data handed between roles of different rates.

``TUTORIAL_ORDER=True`` releases the accumulator the tutorial's way: the epilogue steps its
index to the next buffer and then arrives on acc_empty at that index (the buffer after the one
it read), which pipeproof reports as phase_alias (docs/triton.md gives the reading).

``ws_matmul_nested_sm100`` is Triton's own warp specialisation of a persistent matmul whose
tile loop is not flattened: every partition it makes keeps the k loop inside the tile loop.

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton
import triton.language as tl
import triton.experimental.gluon.language as gl
from triton.experimental import gluon
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma
from triton.experimental.gluon.language.nvidia.blackwell import (TensorMemoryLayout, allocate_tensor_memory,
                                                                 tcgen05_commit, tcgen05_mma)


@gluon.jit
def _loader(a_desc, b_desc, bias_desc, a_bufs, b_bufs, bias_bufs, load_empty, load_ready, bias_empty,
            bias_ready, n_tiles, K, BLOCK_K: gl.constexpr, NUM_BUFFERS: gl.constexpr):
    n = 0
    for t in range(n_tiles):
        s = t % 2
        mbarrier.wait(bias_empty.index(s), ((t // 2) & 1) ^ 1)      # bias slot free?
        mbarrier.expect(bias_ready.index(s), bias_desc.block_type.nbytes)
        tma.async_load(bias_desc, [t * bias_desc.block_type.shape[0], 0], bias_ready.index(s), bias_bufs.index(s))
        for k in range(0, K, BLOCK_K):
            i = n % NUM_BUFFERS
            mbarrier.wait(load_empty.index(i), ((n // NUM_BUFFERS) & 1) ^ 1)   # operand slot free?
            mbarrier.expect(load_ready.index(i), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma.async_load(a_desc, [t * a_desc.block_type.shape[0], k], load_ready.index(i), a_bufs.index(i))
            tma.async_load(b_desc, [k, 0], load_ready.index(i), b_bufs.index(i))
            n += 1


@gluon.jit
def _mma(a_bufs, b_bufs, acc_bufs, load_empty, load_ready, acc_empty, acc_ready, n_tiles, K,
         BLOCK_K: gl.constexpr, NUM_BUFFERS: gl.constexpr):
    n = 0
    for t in range(n_tiles):
        j = t % 2
        mbarrier.wait(acc_empty.index(j), ((t // 2) & 1) ^ 1)       # accumulator free?
        acc = acc_bufs.index(j)
        use_acc = False
        for k in range(0, K, BLOCK_K):
            i = n % NUM_BUFFERS
            mbarrier.wait(load_ready.index(i), (n // NUM_BUFFERS) & 1)   # operands landed?
            tcgen05_mma(a_bufs.index(i), b_bufs.index(i), acc, use_acc=use_acc)
            tcgen05_commit(load_empty.index(i))                      # slot free when the MMA has read
            use_acc = True
            n += 1
        tcgen05_commit(acc_ready.index(j))                           # accumulator done


@gluon.jit
def _epilogue(out_ptr, acc_bufs, bias_bufs, acc_empty, acc_ready, bias_empty, bias_ready, n_tiles,
              BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, TUTORIAL_ORDER: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [gl.num_warps(), 1], [1, 0])
    total = gl.zeros([BLOCK_M], gl.float32, gl.SliceLayout(1, layout))
    for t in range(n_tiles):
        j = t % 2
        mbarrier.wait(bias_ready.index(j), (t // 2) & 1)            # bias landed?
        bias = bias_bufs.index(j).load(layout)
        mbarrier.arrive(bias_empty.index(j))
        mbarrier.wait(acc_ready.index(j), (t // 2) & 1)             # accumulator ready?
        acc = acc_bufs.index(j).load()
        if TUTORIAL_ORDER:
            mbarrier.arrive(acc_empty.index((t + 1) % 2))            # the index after the one read
        else:
            mbarrier.arrive(acc_empty.index(j))
        total += gl.sum(gl.convert_layout(acc, layout), axis=1) + gl.sum(bias.to(gl.float32), axis=1)
    gl.store(out_ptr + gl.arange(0, BLOCK_M, gl.SliceLayout(1, layout)), total)


@gluon.jit
def ws_persistent_matmul(a_desc, b_desc, bias_desc, out_ptr, n_tiles, K, NUM_BUFFERS: gl.constexpr,
                         TUTORIAL_ORDER: gl.constexpr):
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [NUM_BUFFERS, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [NUM_BUFFERS, BLOCK_K, BLOCK_N], b_desc.layout)
    bias_bufs = gl.allocate_shared_memory(bias_desc.dtype, [2] + bias_desc.block_type.shape, bias_desc.layout)
    load_empty = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    load_ready = gl.allocate_shared_memory(gl.int64, [NUM_BUFFERS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_BUFFERS):
        mbarrier.init(load_empty.index(i), count=1)
        mbarrier.init(load_ready.index(i), count=1)
    acc_bufs = allocate_tensor_memory(gl.float32, [2, BLOCK_M, BLOCK_N], TensorMemoryLayout([BLOCK_M, BLOCK_N], col_stride=1))
    acc_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    acc_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    bias_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    bias_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(acc_empty.index(i), count=1)
        mbarrier.init(acc_ready.index(i), count=1)
        mbarrier.init(bias_empty.index(i), count=1)
        mbarrier.init(bias_ready.index(i), count=1)
    gl.warp_specialize([
        (_epilogue, (out_ptr, acc_bufs, bias_bufs, acc_empty, acc_ready, bias_empty, bias_ready, n_tiles,
                     BLOCK_M, BLOCK_N, TUTORIAL_ORDER)),
        (_loader, (a_desc, b_desc, bias_desc, a_bufs, b_bufs, bias_bufs, load_empty, load_ready, bias_empty,
                   bias_ready, n_tiles, K, BLOCK_K, NUM_BUFFERS)),
        (_mma, (a_bufs, b_bufs, acc_bufs, load_empty, load_ready, acc_empty, acc_ready, n_tiles, K, BLOCK_K,
                NUM_BUFFERS)),
    ], [1, 1], [24, 24])


@triton.jit
def ws_matmul_nested_kernel(a_desc, b_desc, c_desc, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr, NUM_SMS: tl.constexpr):
    """tests/triton_kernels/ws_matmul.py's persistent matmul, its tile loop not flattened: Triton's
    automatic warp specialisation keeps the k loop inside the tile loop in each partition."""
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=False, warp_specialize=True):
        off_m = (tile_id % tl.cdiv(M, BLOCK_M)) * BLOCK_M
        off_n = (tile_id // tl.cdiv(M, BLOCK_M)) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([off_m, kk * BLOCK_K])
            b = b_desc.load([off_n, kk * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(tl.float16))


def _desc(dtype, shape, bits=16):
    sw = 128 if shape[-1] * bits // 8 >= 128 else 64
    layout = (f"NVMMASharedLayout(swizzle_byte_width={sw}, element_bitwidth={bits}, rank=2, "
              f"transposed=False, fp4_padded=False, cga_layout=[])")
    return f"tensordesc<{dtype}[{shape[0]}, {shape[1]}],{layout}>"


def _entry(tutorial_order):
    return dict(
        fn=ws_persistent_matmul,
        signature={"a_desc": _desc("fp16", [128, 64]), "b_desc": _desc("fp16", [64, 128]),
                   "bias_desc": _desc("fp16", [128, 64]), "out_ptr": "*fp32", "n_tiles": "i32", "K": "i32",
                   "NUM_BUFFERS": "constexpr", "TUTORIAL_ORDER": "constexpr"},
        constexprs={"NUM_BUFFERS": 3, "TUTORIAL_ORDER": tutorial_order},
        target=("cuda", 100), options={"num_warps": 4}, gluon=True)


KERNELS = {
    "ws_persistent_sm100": _entry(False),
    "ws_persistent_tutorial_order_sm100": _entry(True),
    "ws_matmul_nested_sm100": dict(  # NUM_SMS = 1: the one CTA modelled runs every tile
        fn=ws_matmul_nested_kernel,
        signature={"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[128, 64]>",
                   "c_desc": "tensordesc<fp16[128, 128]>", "M": "i32", "N": "i32", "K": "i32",
                   "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "NUM_SMS": "constexpr"},
        constexprs={"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "NUM_SMS": 1},
        target=("cuda", 100), options={"num_warps": 4, "num_stages": 3}),
}
