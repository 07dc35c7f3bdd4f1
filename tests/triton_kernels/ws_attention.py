"""Warp-specialised attention forward for sm100 (Blackwell), compiled on CPU to TTGIR.

Non-causal flash-attention forward in the style of Triton's tutorial 06: one program per
(query block, batch*head); Q/K/V/O are host-side TMA descriptors over [Z*H*N_CTX, HEAD_DIM];
the KV loop carries ``warp_specialize=True`` so Triton splits it into a TMA-load partition,
a tcgen05 MMA partition and softmax/correction partitions linked by mbarriers.

Plain module, no tests: ``dump_ttgir.py`` imports it by path and compiles ``KERNELS``.
"""
import triton
import triton.language as tl


@triton.jit
def ws_attention_kernel(desc_q, desc_k, desc_v, desc_o, sm_scale, N_CTX,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    row0 = off_hz * N_CTX                      # first row of this (batch, head) in the 2-D view
    q_row = row0 + start_m * BLOCK_M

    qk_scale = sm_scale * 1.44269504           # exp -> exp2
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = desc_q.load([q_row, 0])

    for start_n in tl.range(0, N_CTX, BLOCK_N, warp_specialize=True):
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij

    acc = acc / l_i[:, None]
    desc_o.store([q_row, 0], acc.to(tl.float16))


BM, BN, D = 128, 128, 64

KERNELS = {
    "ws_attention_sm100": dict(
        fn=ws_attention_kernel,
        signature={
            "desc_q": f"tensordesc<fp16[{BM}, {D}]>",
            "desc_k": f"tensordesc<fp16[{BN}, {D}]>",
            "desc_v": f"tensordesc<fp16[{BN}, {D}]>",
            "desc_o": f"tensordesc<fp16[{BM}, {D}]>",
            "sm_scale": "fp32", "N_CTX": "i32",
            "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
        },
        constexprs={"HEAD_DIM": D, "BLOCK_M": BM, "BLOCK_N": BN},
        target=("cuda", 100),
        options={"num_warps": 4, "num_stages": 2},
    ),
}
