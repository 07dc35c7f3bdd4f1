"""H200 measurement: a CTA that exits while its own TMA bulk copy is still in flight.

DESIGN's `inflight_at_exit` reports the step that makes a CTA gone while a copy, commit or
async read still targets it (PTX: a CTA must outlive the asynchronous operations aimed at its
shared memory). Triton's warp-specialised sm100 kernels end that way (their last tcgen05
commits into the input ring's empty barriers are waited for by nobody; docs/triton.md). The
H200 has no tcgen05; this asks the nearest question it can answer: what happens to a
`cp.async.bulk` into shared memory, completing on the CTA's own mbarrier, when the CTA exits
before it lands?

One CTA per SM (about 200 KB of dynamic shared memory each), as two kernels on one stream or
as two waves of one grid (the SM takes up a second-wave CTA as soon as a first-wave one is gone):
- `early_exit`: thread 0 initialises an mbarrier, arms it for the bytes and issues bulk copies
  of a 0xAA pattern from global memory into the whole of its shared memory, then every thread
  returns at once (variant `drained`: thread 0 first waits for the barrier, with a
  %globaltimer deadline);
- `victim`, launched right after (or the second wave): every thread fills its shared memory with 0x55, waits 200 us
  (%globaltimer), and counts the 32-bit words that are no longer 0x55555555 (a late landing of
  an exited CTA's copy into the shared memory the SM gave the next CTA).
Reported per variant and round: whether the launch pair finished without a CUDA error, and the
corrupted words the victims saw. A corrupted word means the SM handed the memory on while a copy
was in flight (the rule's case); none means it waited for the copy or dropped it, which this
cannot tell apart.

    python benchmarks/gpu_exit_inflight.py [--rounds 20] [--out FILE] [--variant "exit, one grid"]
"""
from __future__ import annotations

import argparse
import json
import sys

SOURCE = r"""
typedef unsigned int u32; typedef unsigned long long u64;
__device__ __forceinline__ u64 gtimer() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 r; asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p)); return r; }
extern __shared__ __align__(128) unsigned char smem[];

__device__ void early_exit_body(const unsigned char* src, u32 bytes, u32 chunk, int drained,
                                u32* timeouts, u32 block, u32 repeat) {
  // the barrier sits after the data; the data is `bytes` long
  u32 bar = smem_u32(smem + bytes);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes * repeat) : "memory");
    // `repeat` passes over the same shared memory, each from its own region of the source (more
    // than L2 holds in all): the copies are still landing well after the CTA is gone
    for (u32 k = 0; k < repeat; k++) {
      const unsigned char* from = src + ((u64)k * gridDim.x + block) * bytes;
      for (u32 off = 0; off < bytes; off += chunk) {
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem_u32(smem + off)), "l"(from + off), "r"(chunk), "r"(bar) : "memory");
      }
    }
    if (drained) {
      u64 deadline = gtimer() + 100000000ull;  // 100 ms
      u32 ok = 0;
      while (!ok) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(bar) : "memory");
        if (!ok && gtimer() > deadline) { atomicAdd(timeouts, 1u); break; }
      }
    }
  }
}

__device__ void victim_body(u32 bytes, u32* bad, u32* first_bad, const unsigned char* own) {
  u32* w = (u32*)smem;
  u32 n = bytes / 4;
  for (u32 i = threadIdx.x; i < n; i += blockDim.x) w[i] = 0x55555555u;
  __syncthreads();
  if (own != 0 && threadIdx.x == 0) {
    // the control: a copy of the victim's own, issued after its fill and never waited for,
    // must show up as changed words (the check can see a late landing)
    u32 bar = smem_u32(smem + bytes);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(16384u) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(smem)), "l"(own), "r"(16384u), "r"(bar) : "memory");
  }
  u64 until = gtimer() + 200000ull;  // 200 us
  while (gtimer() < until) { }
  __syncthreads();
  u32 count = 0;
  for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
    u32 v = ((volatile u32*)w)[i];
    if (v != 0x55555555u) { count++; atomicCAS(first_bad, 0u, v); }
  }
  if (count) atomicAdd(bad, count);
  if (own != 0 && threadIdx.x == 0) {  // the control's copy has landed: wait so it is not in flight at exit
    u32 bar = smem_u32(smem + bytes), ok = 0;
    u64 deadline = gtimer() + 100000000ull;
    while (!ok && gtimer() < deadline)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                   : "=r"(ok) : "r"(bar) : "memory");
  }
}

extern "C" __global__ void early_exit(const unsigned char* src, u32 bytes, u32 chunk, int drained,
                                      u32* timeouts, u32 repeat) {
  early_exit_body(src, bytes, chunk, drained, timeouts, blockIdx.x, repeat);
}

extern "C" __global__ void victim(u32 bytes, u32* bad, u32* first_bad, const unsigned char* own) {
  victim_body(bytes, bad, first_bad, own);
}

// one grid, two waves: the first `first_wave` CTAs copy (and exit), the rest are the victims
// the SMs take up as soon as a CTA of the first wave is gone (no kernel boundary between them)
extern "C" __global__ void waves(const unsigned char* src, u32 bytes, u32 chunk, int drained,
                                 u32* timeouts, u32 repeat, u32 first_wave, u32* bad, u32* first_bad) {
  if (blockIdx.x < first_wave) early_exit_body(src, bytes, chunk, drained, timeouts, blockIdx.x, repeat);
  else victim_body(bytes, bad, first_bad, 0);
}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--variant", action="append",
                    help="only these variants (each may trap: run one per process)")
    args = ap.parse_args(argv)
    try:
        import cupy as cp
    except ImportError:
        print("gpu_exit_inflight: needs CuPy and an sm_90 GPU", file=sys.stderr)
        return 2
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    chunk = 16384
    bytes_ = (optin - 1024) // chunk * chunk
    mod = cp.RawModule(code=SOURCE, options=("-arch=sm_90a", "-std=c++17"))
    early, victim, waves = (mod.get_function(n) for n in ("early_exit", "victim", "waves"))
    for k in (early, victim, waves):
        k.max_dynamic_shared_size_bytes = bytes_ + 1024
    repeat = min(4, ((1 << 20) - 1) // bytes_)  # the barrier's tx stays below 2^20
    src = cp.full(2 * sms * repeat * bytes_, 0xAA, dtype=cp.uint8)
    out = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "sms": sms,
           "bytes_per_cta": bytes_, "chunk": chunk, "passes": repeat, "rounds": args.rounds, "variants": {}}
    print(f"{out['device']}: {sms} SMs, one CTA per SM, {repeat} x {bytes_} B of bulk copies per CTA "
          f"in {chunk} B chunks ({repeat * sms * bytes_ / 2**20:.0f} MiB, each pass from its own "
          f"source); victim waits 200 us; {args.rounds} rounds per variant")
    for variant, drained, grid in (("control", 1, None),
                                   ("drained, two kernels", 1, False), ("exit, two kernels", 0, False),
                                   ("drained, one grid", 1, True), ("exit, one grid", 0, True)):
        if args.variant and variant not in args.variant:
            continue
        bad_total, errors, first = 0, 0, 0
        timeouts = cp.zeros(1, dtype=cp.uint32)
        for _ in range(args.rounds):
            bad = cp.zeros(1, dtype=cp.uint32)
            first_bad = cp.zeros(1, dtype=cp.uint32)
            try:
                common = (src, cp.uint32(bytes_), cp.uint32(chunk), cp.int32(drained), timeouts,
                          cp.uint32(repeat))
                if grid is None:  # the victims' own late copies, from the last region of the source
                    victim((sms,), (256,), (cp.uint32(bytes_), bad, first_bad, src[-16384:]),
                           shared_mem=bytes_ + 1024)
                elif grid:
                    waves((2 * sms,), (256,), common + (cp.uint32(sms), bad, first_bad),
                          shared_mem=bytes_ + 1024)
                else:
                    early((sms,), (128,), common, shared_mem=bytes_ + 1024)
                    victim((sms,), (256,), (cp.uint32(bytes_), bad, first_bad, cp.uint64(0)),
                           shared_mem=bytes_ + 1024)
                cp.cuda.Device().synchronize()
            except cp.cuda.runtime.CUDARuntimeError as err:
                errors += 1
                print(f"  {variant}: CUDA error {err}")
                break
            bad_total += int(bad.get()[0])
            first = first or int(first_bad.get()[0])
        row = {"rounds": args.rounds, "cuda_errors": errors, "corrupted_words": bad_total,
               "first_bad_value": hex(first), "deadline_timeouts": int(timeouts.get()[0])}
        out["variants"][variant] = row
        print(f"  {variant:<22} CUDA errors {errors}, words the victims found changed {bad_total:,} "
              f"(first {hex(first)}), barrier waits past the deadline {row['deadline_timeouts']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
