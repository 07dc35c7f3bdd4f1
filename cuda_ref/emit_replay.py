"""The device code of a replay kernel (`generate(spec, replay=True)`, cuda_ref/replay.py): turn
waits on the schedule's step counter, and the replay warp of each CTA, which lands copies and
fires commits at the trace's steps. Inserted after emit_device.PRELUDE when REPLAY is 1.

The schedule's layout is cuda_ref/replay.py's (`Schedule.buffer`); the step counter is rs[0],
each agent's count of finished async reads rs[1 + agent], of its commit entries fired
rs[1 + N_AGENTS + agent] (a commit fires after its agent's earlier ones, DESIGN R1); per copy
record j, recx[3j..3j+2]
hold its source address, (issuing step | slot offset << 32) and its state (0 issued by its
agent, 1 waiting for its replay warp, 2 issued by it).
"""
from pipeproof.cuda_ref.replay import H_FIRE, H_LAND, HDR, HELPER_W, OP_W

REPLAY_CODE = r"""
// ---- replay: the schedule of a trace (cuda_ref/replay.py)
#define SCHED_HDR @SCHED_HDR@
#define SCHED_OP_W @SCHED_OP_W@
#define SCHED_HELPER_W @SCHED_HELPER_W@
#define H_LAND @H_LAND@
#define H_FIRE @H_FIRE@
__shared__ __align__(8) u64 s_priv;   // the replay warp's own mbarrier, for the copies it issues

// Whole warp: 1 once the step counter is at `step` (step < 0: at the schedule's end or past
// it), 0 past the deadline.
__device__ u32 turn_reached(const Ctx& c, i32 step) {
  const u32 total = (u32)c.sch[0];
  c.want = step;
  for (;;) {
    u32 ok = 0, late = 0;
    if (c.lane == 0) {
      const u32 v = *(volatile u32*)c.rs;
      ok = step >= 0 ? (v == (u32)step) : (v >= total);
      if (!ok) late = gtimer() > c.deadline;
    }
    ok = __shfl_sync(FULLMASK, ok, 0); late = __shfl_sync(FULLMASK, late, 0);
    if (ok) { __threadfence(); __syncwarp(); return 1u; }
    if (late) return 0u;
  }
}

// Before each op of an agent: its async reads the schedule finishes first, then its turn.
// Sets c.turn (the op's step) and c.sched_op (whether the schedule holds the op); 0: timeout.
__device__ u32 turn_op(Ctx& c, i32 agent, Reads& q, i32 pc) {
  c.sched_op = 0u; c.turn = -1;
  const i32* t = c.sch + SCHED_HDR + 4 * agent;
  i32 step = -1;
  if (c.k_op < t[1]) {
    step = c.sch[t[0] + SCHED_OP_W * c.k_op];
    if (c.sch[t[0] + SCHED_OP_W * c.k_op + 1] != pc && c.lane == 0) atomicOr(c.ctl + 2, FLAG_SCHED);
  }
  c.k_op += 1;
  while (q.n > 0 && c.k_fin < t[3] && (step < 0 || c.sch[t[2] + c.k_fin] < step))
    if (!finish_one(c, agent, q)) return 0u;
  if (!turn_reached(c, step)) return 0u;
  c.turn = step; c.sched_op = step >= 0 ? 1u : 0u;
  return 1u;
}

// An agent that waited for its turn past the deadline: a timeout record with turn = the step.
__device__ void agent_timeout_turn(const Ctx& c, i32 agent, i32 op, i32 pc, i32 item, i32 ring,
                                   i32 stage, i64 phase) {
  c.turn = -1; c.logged = 0u;
  if (c.lane == 0) {
    glock(c);
    Ev e = ev_begin(c);
    ev_put(c, e, agent, op, pc, item, ring, stage, phase, RES_TIMEOUT, c.want, 1);
    c.status[agent] = 2;
    gunlock(c);
  }
  __syncwarp();
}

__device__ __forceinline__ void mbar_complete_tx(u32 bar, u32 bytes) {
#if NV
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
#endif
}

// Lane 0 of the replay warp, at the trace's landing step: the copy issued at step `issue`
// into this CTA is issued now onto the private mbarrier; once its bytes are in, its landing
// is logged and its bytes completed on full[stage], under the log lock (one step).
__device__ u32 helper_land(Ctx& c, i32 step, i32 issue) {
#if NV
  u32 n = *(volatile u32*)(c.ctl + 1);
  if (n > c.max_rec) n = c.max_rec;
  for (u32 j = 0; j < n; ++j) {
    volatile u64* r = c.rec + (u64)j * REC_W;
    volatile u64* x = c.recx + (u64)j * 3;
    const u64 meta = r[0];
    if (!(meta & REC_VALID) || (meta & 0xff) != c.cta || x[2] != 1ull || (i32)(u32)x[1] != issue) continue;
    const u32 ring = (meta >> 8) & 0xff, stage = (meta >> 16) & 0xffff, bytes = (u32)(r[1] >> 32);
    const u32 region = REC_REGION(meta), slot_off = (u32)(x[1] >> 32);
    const u32 priv = smem_u32(&s_priv);
    x[2] = 2ull;
    mbar_arrive_tx(priv, bytes);
    bulk_copy(smem_u32(s_dyn + slot_off + region), (const void*)x[0], bytes, priv);
    while (!probe_nv(priv, c.hpar)) { if (gtimer() > c.deadline) return 0u; }
    c.hpar ^= 1u;
    __threadfence_block();
    glock(c);
    Ev e; e.t = gtimer(); e.seq = atomicAdd(c.ctl + 0, 1u);
    note_land(r, e, LAND_REPLAY);
    scan_lands(c, e);
    mbar_complete_tx(sig_addr(ring, stage, 0), bytes);
    c.turn = step; c.logged = 1u;
    gunlock(c);
    return 1u;
  }
  atomicOr(c.ctl + 2, FLAG_SCHED);   // no such copy: the kernel and the schedule disagree
#endif
  (void)step; (void)issue;
  return 0u;
}

// Lane 0 of the replay warp: a commit's arrival on this CTA's empty[stage], or full[stage] for
// a commit_full (step < 0: after the schedule); h is its entry (signal kind h[2]: 1 empty, 0
// full; ring h[3], stage h[4], count h[5], issuing agent h[6], its CTA h[9]). A firing into a gone CTA is not marked: the CTA's exit step was (DESIGN R2).
__device__ void helper_fire(Ctx& c, i32 step, const i32* h) {
  const u32 ring = (u32)h[3], stage = (u32)h[4], n = (u32)h[5];
  glock(c);
  Ev e = ev_begin(c);
  c.turn = step;
  atomicSub(c.ctl + CTL_COMMITS + c.cta, 1u);
  if (h[9] >= 0 && (u32)h[9] != c.cta) atomicSub(c.ctl + CTL_PEER + c.cta, 1u);
  ev_put(c, e, 0, OP_FIRE, -1, 0, (i32)ring, (i32)stage, 0, RES_OK, (i32)n, (i32)c.cta);
  signal_arrive_raw(c, 1u << c.cta, sig_addr(ring, stage, (u32)h[2]), n);
  if (h[6] >= 0) atomicAdd(c.rs + 1 + N_AGENTS + h[6], 1u);
  gunlock(c);
}

// Lane 0 of the replay warp, after the schedule: copies into this CTA that the trace issued
// but never landed are issued now and land on their own.
__device__ void helper_issue_rest(Ctx& c) {
#if NV
  u32 n = *(volatile u32*)(c.ctl + 1);
  if (n > c.max_rec) n = c.max_rec;
  for (u32 j = 0; j < n; ++j) {
    volatile u64* r = c.rec + (u64)j * REC_W;
    volatile u64* x = c.recx + (u64)j * 3;
    const u64 meta = r[0];
    if (!(meta & REC_VALID) || (meta & 0xff) != c.cta || x[2] != 1ull) continue;
    const u32 ring = (meta >> 8) & 0xff, stage = (meta >> 16) & 0xffff, bytes = (u32)(r[1] >> 32);
    const u32 region = REC_REGION(meta), slot_off = (u32)(x[1] >> 32);
    x[2] = 2ull;
    __threadfence();
    bulk_copy(smem_u32(s_dyn + slot_off + region), (const void*)x[0], bytes, sig_addr(ring, stage, 0));
  }
#endif
}

// The replay warp of this CTA: its landings and fires at their steps, then what the trace
// left in flight.
__device__ void replay_helper(Ctx& c) {
  const i32* t = c.sch + SCHED_HDR + 4 * c.sch[1] + 4 * (i32)c.cta;
  const i32 off = t[0], len = t[1], poff = t[2], plen = t[3];
  for (i32 k = 0; k < len; ++k) {
    const i32* h = c.sch + off + SCHED_HELPER_W * k;
    if (!turn_reached(c, h[0])) return;
    u32 ok = 1u;
    if (c.lane == 0) {
      if (h[1] == H_LAND) ok = helper_land(c, h[0], h[2]);
      else helper_fire(c, h[0], h);
    }
    ok = __shfl_sync(FULLMASK, ok, 0);
    if (!ok) return;
  }
  if (!turn_reached(c, -1)) return;
  if (c.lane == 0) {
    for (i32 k = 0; k < plen; ++k) {
      const i32* h = c.sch + poff + SCHED_HELPER_W * k;
      // a commit fires only after its agent's async reads issued before it have finished,
      // and after the agent's commit entries issued before it have fired (in any CTA: R1)
      if (h[6] >= 0) {
        while (*(volatile u32*)(c.rs + 1 + h[6]) < (u32)h[7] && gtimer() <= c.deadline) {}
        while (*(volatile u32*)(c.rs + 1 + N_AGENTS + h[6]) < (u32)h[8] && gtimer() <= c.deadline) {}
        __threadfence();
      }
      helper_fire(c, -1, h);
    }
    helper_issue_rest(c);
  }
  __syncwarp();
}
"""


def replay_code() -> str:
    subs = {"@SCHED_HDR@": HDR, "@SCHED_OP_W@": OP_W, "@SCHED_HELPER_W@": HELPER_W,
            "@H_LAND@": H_LAND, "@H_FIRE@": H_FIRE}
    text = REPLAY_CODE
    for k, v in subs.items():
        text = text.replace(k, str(v))
    return text
