"""Spec -> CUDA C++ source for `cupy.RawModule`: the reference kernel of a pipeline.

One kernel runs one spec on real hardware, built from the same compiled `checker.model.Model`
the engines explore (its agents, their flattened programs, pcs, items and initial
stage/phase per ring), so a log of the kernel names the model's own agents and pcs:

* one warp per agent; all agents of a CTA in one thread block; `cluster_size` K > 1 makes a
  cluster of K blocks (`__cluster_dims__(K, 1, 1)`), agent `cta<c>.role[i]` in block rank c.
  Lane 0 performs every op's side effect; the other lanes follow the same warp-uniform control
  flow (results broadcast with `__shfl_sync`) so that slot checks are done by the whole warp
  and a named barrier can be a real `bar.sync` of whole warps;
* nvidia: one mbarrier per `full[s]`/`empty[s]` of each ring in shared memory, driven with
  inline PTX: `mbarrier.init`, `mbarrier.arrive [, n]`, `mbarrier.arrive.expect_tx`,
  `mbarrier.test_wait.parity` (the parity is `phase & 1`: backends.nvidia.ready); remote
  targets (`to=leader|peer|all`) through `mapa` + `.shared::cluster` arrives; `copy B` is a
  1-D `cp.async.bulk` global -> shared that completes its bytes on `full[stage]` (with
  `.multicast::cluster` and a CTA mask when K > 1);
* amd: a monotone u32 counter per signal in shared memory (`red.release.cta.add`,
  `ld.acquire.cta`), ready against the thresholds of backends.amd (mirrored below and pinned
  by tests/test_codegen.py);
* `commit_empty [n]`: the agent first finishes its outstanding async reads, then arrives
  (tcgen05.commit fires after the MMAs that read the slot); `read_async` checks the slot when
  it starts and again when it finishes (at `read_wait`, at a `commit_empty`, or at the end);
* named barriers: a bounded software generation counter in shared memory with exactly the
  model's semantics (arrivals, generations, `sync_arrive`/`sync_wait`), followed by a real
  `bar.sync id, 32*count` of the whole warps when the barrier is used only through `sync` and
  its count equals its users (then every agent that passes the counter reaches the hardware
  barrier, which therefore cannot hang);
* payload: every `write` stores the item number in the slot's tag words; every `copy` lands
  a region of B bytes whose every word is the item number; `read` checks (with all 32 lanes)
  every word of every region that the item should have filled and reports the first word that
  differs (`tag_mismatch`, with the tag found);
* never hang: every wait polls against one `%globaltimer` deadline (launch + timeout); an
  agent past it logs a `timeout` event at the op it is stuck on and exits; a CTA waits (also
  bounded) for copies still landing before it exits, and a cluster ends with a cluster barrier;
* event log: one record per model step. Every step takes a global log lock (a spin lock in
  global memory, never held across a wait): lane 0 stamps the step (`%globaltimer`, a global
  sequence number), performs its effect (arrive, copy issue, store, probe, slot check) and
  writes the record before releasing it, so the log order is a linearisation of the steps and
  a log replays through the model (cuda_ref.conform). Waits poll without the lock and re-probe
  under it. A copy landing is recorded at the first logged step of its CTA that sees the
  copy's bytes (each step looks before its own effect), or by the CTA's exit sweep. A lock
  still held past the deadline belongs to a warp that stopped (an over-arrival): it is taken
  over and the log closed, so a trap's log ends at the faulting step.

Op semantics come from the backends: `BACKEND_MIRRORS` lists, for every public function of
backends/nvidia.py and backends/amd.py, how this kernel realises it, and `OP_EMITTERS` has an
emitter for every op of spec.schema.OPS. A backend function or an op that is not mirrored
fails loudly here (GenerationError) until it is implemented.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from pipeproof.backends import amd as amd_backend
from pipeproof.backends import nvidia as nvidia_backend
from pipeproof.backends.base import EMPTY, FULL
from pipeproof.checker import semantics as S
from pipeproof.checker.model import OP_CODES, Model, compile_model
from pipeproof.spec.schema import MAIN_RING, OPS, Spec

KERNEL_NAME = "pipeproof_kernel"

# Hardware limits (H200, sm_90).
MAX_DYNAMIC_SMEM = 227 * 1024       # opt-in dynamic shared memory per block
MAX_WARPS_PER_CTA = 32              # 1024 threads
MAX_HW_BARRIERS = 15                # bar.sync ids 1..15 (0 is __syncthreads)
BULK_ALIGN = 16                     # cp.async.bulk: size and addresses multiples of 16
WRITE_REGION = 16                   # the tag words of a `write` slot
SLOT_ALIGN = 128

# Event record layout (int32 words) shared with cuda_ref.run.
EV_W = 16
EV_FIELDS = ("t_lo", "t_hi", "seq", "agent", "op", "pc", "item", "ring", "stage", "phase_lo",
             "phase_hi", "result", "x0", "x1", "spare", "valid")
EV_OP_FINISH = 100   # an async read finishes (the model's in-flight read entry)
EV_OP_FIRE = 101     # a commit fires (the model's in-flight commit entry)
RESULT_OK, RESULT_TIMEOUT, RESULT_MISMATCH = 0, 1, 2
RESULTS = {RESULT_OK: "ok", RESULT_TIMEOUT: "timeout", RESULT_MISMATCH: "tag_mismatch"}

# Copy records (u64 words): meta (valid, dst cta, ring, stage, region offset), tag | bytes << 32,
# t_issue, seq_issue | how-seen << 32, seq of the first step that saw it landed (~0: none), its t
REC_W = 6
REC_VALID = 1 << 63
LAND_BY_WAIT, LAND_BY_READ, LAND_BY_SWEEP, LAND_BY_STEP = 1, 2, 3, 4

# Control words (u32): sequence counter, record counter, flags, the log lock
CTL_SEQ, CTL_REC, CTL_FLAGS = 0, 1, 2
CTL_WORDS = 8
FLAG_EV_OVERFLOW, FLAG_REC_OVERFLOW, FLAG_LOCK_BROKEN = 1, 2, 4

STATUS_FINISHED, STATUS_TIMEOUT = 1, 2

SWEEP_NS = 2_000_000   # how long a CTA waits at exit for copies still landing


class GenerationError(Exception):
    """The spec cannot be run on the GPU as written; str() is one line naming the cause."""


# ------------------------------------------------------------------ backend mirrors

# How the kernel realises each public function of a backend module. A function added to a
# backend without an entry here makes generation fail (see `check_backend_mirrors`).
BACKEND_MIRRORS = {
    "nvidia": {
        "init": "mbarrier.init.shared::cta.b64 [bar], count (full: producer_arrive_count, "
                "empty: consumer_arrive_count), then fence.mbarrier_init.release.cluster",
        "update": "the hardware mbarrier: mbarrier.arrive [n] is (n, 0), "
                  "mbarrier.arrive.expect_tx B is (1, +B), a cp.async.bulk landing is (0, -B); "
                  "an update above pending or a tx-count out of range traps the kernel",
        "ready": "mbarrier.test_wait.parity [bar], phase & 1",
        "intended_phase": None,   # a property of the model (phase_alias), not an operation
        "in_window": None,
    },
    "amd": {
        "init": "counter = 0",
        "arrive": "red.release.cta.shared::cta.add.u32 [counter], n",
        "full_threshold": "(u64)(u32)(phase + 1) * (u64)producer_arrive_count",
        "empty_threshold": "(u64)(u32)(phase - 1) * (u64)consumer_arrive_count",
        "full_ready": "(u64)ld.acquire(counter) >= full_threshold",
        "empty_ready": "(u64)ld.acquire(counter) >= empty_threshold",
    },
}
BACKEND_MODULES = {"nvidia": nvidia_backend, "amd": amd_backend}

# The C text of the amd thresholds (the kernel's own helper functions; tests compile them
# with a host compiler and compare with backends.amd).
AMD_C_HELPERS = r"""
__device__ __forceinline__ u64 amd_full_threshold(i64 phase, u64 count) {
  return (u64)(u32)(phase + 1) * count;
}
__device__ __forceinline__ u64 amd_empty_threshold(i64 phase, u64 count) {
  return (u64)(u32)(phase - 1) * count;
}
"""


def backend_functions(module) -> list[str]:
    """The public functions a backend module defines itself (not the primitives it imports)."""
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        fn = getattr(obj, "py_func", obj)  # numba dispatchers keep the Python function
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            names.append(name)
    return sorted(names)


def check_backend_mirrors(backend: str) -> None:
    module = BACKEND_MODULES.get(backend)
    if module is None:
        raise GenerationError(f"backend {backend!r} has no GPU reference kernel "
                              f"(cuda_ref/codegen.py knows: {', '.join(BACKEND_MODULES)})")
    mirrors = BACKEND_MIRRORS[backend]
    missing = [n for n in backend_functions(module) if n not in mirrors]
    if missing:
        raise GenerationError(
            f"backends/{backend}.py defines {', '.join(missing)}, which the GPU generator does "
            f"not mirror yet (add it to cuda_ref/codegen.py BACKEND_MIRRORS['{backend}'] and "
            f"emit it)")


# ------------------------------------------------------------------ layout


@dataclass
class Region:
    """Where one copy op of one agent lands in a slot of its ring (same offset in every CTA)."""
    agent: int
    pc: int
    offset: int
    nbytes: int
    dests: tuple          # destination CTAs
    every: int
    at: int
    items: int            # the issuing agent's items (its tags are 0 .. items-1)
    src_word: int = 0     # start of its source data in the source buffer (u32 words)
    tag: int = -1         # a prologue's or epilogue's copy: its one tag (model.tag_of)


@dataclass
class RingLayout:
    index: int
    name: str
    stages: int
    full_count: int
    empty_count: int
    kind: str             # "write" (tag words) or "copy" (regions)
    slot_bytes: int
    base: int             # offset of slot 0 in dynamic shared memory
    regions: list = field(default_factory=list)


@dataclass
class Generated:
    """A generated kernel and what the launcher needs to run it and read its log."""
    spec_path: str
    source: str
    kernel_name: str
    backend: str
    ctas: int
    threads: int
    smem_bytes: int                  # dynamic shared memory per block
    agents: list                     # model agent names, by agent index
    agent_ctas: list
    agent_ops: list                  # per agent: [(op name, op text)] by pc
    ring_names: list
    rings: list                      # RingLayout per ring
    src_words: int
    src_fill: list                   # (start word, words per tag, tags, first tag) per copy op
    max_events: int
    max_records: int
    hw_barriers: dict                # barrier name -> bar.sync id (hardware-backed ones)
    op_names: dict = field(default_factory=dict)   # event op code -> name
    agent_tags: list = field(default_factory=list)  # per agent, per pc: model.tag_of (-1: item)
    tag_prologue: int | None = None                 # the prologue's and epilogue's own tags,
    tag_epilogue: int | None = None                 # when some fill or read uses them

    def expected_tag(self, agent: int, pc: int, item: int) -> int:
        """The tag a read at `pc` expects (the item, or a prologue's or epilogue's tag)."""
        tags = self.agent_tags[agent] if agent < len(self.agent_tags) else []
        return tags[pc] if 0 <= pc < len(tags) and tags[pc] >= 0 else item

    def tag_order(self, tag: int) -> float:
        """Where a fill of `tag` comes in program order: prologue, items, epilogue."""
        return {self.tag_prologue: -0.5, self.tag_epilogue: float("inf")}.get(tag, tag)

    def tag_text(self, tag: int) -> str:
        names = {self.tag_prologue: "the prologue's tag", self.tag_epilogue: "the epilogue's tag"}
        return "nothing" if tag == -1 else names.get(tag, f"item {tag}")


def _targets(cta: int, to: str, k: int) -> tuple:
    if k == 1 or to == "self":
        return (cta,)
    if to == "leader":
        return (0,)
    if to == "peer":
        return ((cta + 1) % k,)
    return tuple(range(k))


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


# ------------------------------------------------------------------ the generator


class _Gen:
    def __init__(self, model: Model):
        self.model = model
        self.spec: Spec = model.spec
        self.k = model.ctas
        self.backend = self.spec.backend
        self.nv = self.backend == "nvidia"
        self.path = self.spec.path

    def fail(self, what: str) -> GenerationError:
        return GenerationError(f"{self.path}: cuda_ref: {what}")

    # -------------------------------------------------------------- checks and layout

    def check(self):
        check_backend_mirrors(self.backend)
        for a in self.model.agents:
            for op, _ in a.ops:
                if op.name not in OP_EMITTERS:
                    raise self.fail(f"agent {a.name}: op {op.name!r} has no GPU implementation "
                                    f"(cuda_ref/codegen.py OP_EMITTERS lacks it)")
                if op.name in ("copy", "expect_tx") and not self.nv:
                    raise self.fail(f"agent {a.name}: op {op.name!r} exists only on nvidia")
                if op.name == "copy" and (op.n % BULK_ALIGN or op.n == 0):
                    raise self.fail(f"agent {a.name}: 'copy {op.n}': cp.async.bulk needs a "
                                    f"byte count that is a positive multiple of {BULK_ALIGN}")
        if self.k > 1 and not self.nv:
            raise self.fail("cluster_size > 1 exists only on nvidia")
        per_cta = [sum(1 for a in self.model.agents if a.cta == c) for c in range(self.k)]
        if max(per_cta) > MAX_WARPS_PER_CTA:
            raise self.fail(f"{max(per_cta)} agents in one CTA, more than the "
                            f"{MAX_WARPS_PER_CTA} warps of a 1024-thread block")
        self.warps = max(per_cta)

    def layout(self):
        rings = []
        base = 0
        for r, ring in enumerate(self.model.ring_specs):
            copies, writes = [], False
            for i, a in enumerate(self.model.agents):
                for pc, (op, _) in enumerate(a.ops):
                    if op.ring != ring.name:
                        continue
                    if op.name == "copy":
                        tag = self.model.tag_of(a, pc)
                        copies.append(Region(i, pc, 0, op.n, _targets(a.cta, op.to, self.k),
                                             op.every, op.at, a.items if tag < 0 else 1, tag=tag))
                    elif op.name == "write":
                        writes = True
            if copies and writes:
                raise self.fail(f"ring {ring.name!r} is filled by both write and copy ops; the "
                                f"reference kernel keeps one kind of payload per ring")
            if copies:
                # Greedy: each copy gets the lowest offset free in every CTA it lands in.
                used = {c: [] for c in range(self.k)}
                ends = [0]
                for reg in copies:
                    if reg.tag >= 0:
                        # A prologue's or epilogue's copy reuses the slot's buffer from its
                        # start (the next tile's Q over this one's), as the model's one tag
                        # per slot says: any later fill replaces what it held.
                        reg.offset = 0
                        ends.append(reg.nbytes)
                        continue
                    off = 0
                    while True:
                        clash = [e for c in reg.dests for (s, e) in used[c]
                                 if s < off + reg.nbytes and off < e]
                        if not clash:
                            break
                        off = _round_up(max(clash), BULK_ALIGN)
                    reg.offset = off
                    for c in reg.dests:
                        used[c].append((off, off + reg.nbytes))
                slot = max(ends + [e for c in used for (_, e) in used[c]])
                kind = "copy"
            else:
                slot, kind = WRITE_REGION, "write"
            slot = _round_up(slot, SLOT_ALIGN)
            rings.append(RingLayout(r, ring.name, ring.stages, ring.producer_arrive_count,
                                    ring.consumer_arrive_count, kind, slot, base, copies))
            base += slot * ring.stages
        if base > MAX_DYNAMIC_SMEM:
            detail = ", ".join(f"{rl.name}: {rl.stages} x {rl.slot_bytes} B" for rl in rings)
            raise self.fail(f"the slots need {base} B of shared memory ({detail}), more than "
                            f"the {MAX_DYNAMIC_SMEM} B a CTA can have")
        self.rings = rings
        self.smem_bytes = max(base, 16)
        # Source data of every copy op: items x bytes, every word the item number (the one
        # tag of a prologue's or epilogue's copy).
        word = 0
        self.src_fill = []
        for rl in rings:
            for reg in rl.regions:
                reg.src_word = word
                self.src_fill.append((word, reg.nbytes // 4, reg.items, max(reg.tag, 0)))
                word += reg.items * reg.nbytes // 4
        self.src_words = max(word, 4)
        self.region_of = {(reg.agent, reg.pc): reg for rl in rings for reg in rl.regions}

    def barrier_plan(self):
        """Which named barriers also get a real bar.sync (see the module docstring)."""
        self.bar_index = {name: b for b, name in enumerate(self.model.barrier_names)}
        self.hw = {}
        hw_id = 1
        for b, name in enumerate(self.model.barrier_names):
            uses = {op.name for a in self.model.agents for op, _ in a.ops if op.barrier == name}
            users = [sum(1 for a in self.model.agents if a.cta == c and any(
                op.name == "sync" and op.barrier == name for op, _ in a.ops))
                for c in range(self.k)]
            counts = [int(self.model.tables.bar_count[b, c]) for c in range(self.k)]
            if (uses == {"sync"} and users == counts and hw_id <= MAX_HW_BARRIERS
                    and all(u > 0 for u in users if u)):
                self.hw[name] = hw_id
                hw_id += 1

    # -------------------------------------------------------------- emission helpers

    def sig(self, r: int, stage: str, kind: int) -> str:
        return f"sig_addr({r}, {stage}, {kind})"

    def op_code(self, name: str) -> int:
        return OP_CODES[name]

    def ring_vars(self, r: int):
        return f"st{r}", f"ph{r}", f"rd{r}"

    def ev(self, a, pc, opname, r, item="item", result="RES_OK", x0="0", x1="0", t="e"):
        st, ph, _ = self.ring_vars(r)
        return (f"ev_put(c, {t}, {a}, {self.op_code(opname)}, {pc}, {item}, {r}, (i32){st}, {ph}, "
                f"{result}, {x0}, {x1});")

    def timeout(self, a, pc, opname, r, item="item"):
        st, ph, _ = self.ring_vars(r)
        return (f"{{ agent_timeout(c, {a}, {self.op_code(opname)}, {pc}, {item}, {r}, (i32){st}, "
                f"{ph}); return; }}")

    # -------------------------------------------------------------- per-agent code

    def agent_function(self, i: int) -> str:
        a = self.model.agents[i]
        lines = [f"// agent {i}: {a.name} (role {a.role}, cta {a.cta}, items {a.items})",
                 f"__device__ __noinline__ void agent_{i}(Ctx& c) {{"]
        for r in range(self.model.rings):
            st, ph, rd = self.ring_vars(r)
            lines.append(f"  i64 {st} = {a.initial_stages[r]}, {ph} = {a.initial_phases[r]}; "
                         f"u32 {rd} = 0;")
        for b in range(len(self.model.barrier_names)):
            lines.append(f"  u32 arrv{b} = 0;")
        lines.append("  Reads q; q.n = 0;")
        lines.append("  i32 item = 0;")
        lines.append("  (void)item;")
        for r in range(self.model.rings):
            st, ph, rd = self.ring_vars(r)
            lines.append(f"  (void){st}; (void){ph}; (void){rd};")
        body = a.ops[a.body_start:a.body_end]
        for pc in range(a.body_start):
            lines += self.emit(i, pc, "    ")
        if body:
            lines.append(f"  for (item = 0; item < {a.items}; ++item) {{")
            for pc in range(a.body_start, a.body_end):
                op = a.ops[pc][0]
                guard = op.every != 1 or op.at != 0
                if guard:
                    lines.append(f"    if (item % {op.every} == {op.at}) {{")
                lines += self.emit(i, pc, "      " if guard else "    ")
                if guard:
                    lines.append("    }")
            lines.append("  }")
            lines.append(f"  item = {a.items};")
        for pc in range(a.body_end, len(a.ops)):
            lines += self.emit(i, pc, "    ")
        lines.append(f"  finish_reads(c, {i}, q, 0);")
        lines.append(f"  agent_done(c, {i});")
        lines.append("}")
        return "\n".join(lines)

    def emit(self, a: int, pc: int, indent: str) -> list[str]:
        op, step = self.model.agents[a].ops[pc]
        r = self.model.ring_names.index(op.ring)
        code = OP_EMITTERS[op.name](self, a, pc, op, step, r)
        out = [f"{indent}// pc {pc}: {op.text or op.name}" + (f" (step {step})" if step >= 0 else ""),
               f"{indent}perturb(c);"]
        out += [indent + line for line in code]
        return out

    # --- waits and tries
    #
    # Every step that touches shared state runs under the global log lock (`glock`): lane 0
    # takes it, stamps the event (t, sequence number), performs the effect (arrive, copy issue,
    # store, probe, slot check) and writes the record, then releases it. So the sequence
    # numbers (and the timestamps) are a linearisation of the steps; waits poll without the
    # lock and take it only to re-probe and log once the signal looks ready. Local steps
    # (advance, reset, read_wait) take it too, so nothing is logged after a step that trapped.

    def wait_call(self, r: int, kind: int, stage: str, phase: str) -> str:
        """Whole warp: 1 when ready (lane 0 then holds the lock), 0 past the deadline."""
        if self.nv:
            return f"wait_nv(c, {self.sig(r, stage, kind)}, (u32)({phase} & 1))"
        thr = ("amd_full_threshold" if kind == FULL else "amd_empty_threshold")
        count = self.rings[r].full_count if kind == FULL else self.rings[r].empty_count
        return f"wait_amd(c, {self.sig(r, stage, kind)}, {thr}({phase}, {count}ull))"

    def probe_call(self, r: int, kind: int, stage: str, phase: str) -> str:
        if self.nv:
            return f"probe_nv({self.sig(r, stage, kind)}, (u32)({phase} & 1))"
        thr = ("amd_full_threshold" if kind == FULL else "amd_empty_threshold")
        count = self.rings[r].full_count if kind == FULL else self.rings[r].empty_count
        return f"probe_amd({self.sig(r, stage, kind)}, {thr}({phase}, {count}ull))"

    def observe(self, a: int, pc: int, r: int, kind: int, cond: str, how: str) -> str:
        """A full wait or try notes the landings it saw: of the fill a read here pairs with."""
        st, _, _ = self.ring_vars(r)
        if kind != FULL or self.rings[r].kind != "copy":
            return ""
        m = self.model
        section = m.section_of(m.agents[a], pc)
        pairs = m.spec.read_pairs_with(section, m.ring_names[r]) or section
        tag = {"prologue": str(m.tag_prologue), "epilogue": str(m.tag_epilogue)}.get(pairs, "item")
        return f" if ({cond}) observe_lands(c, e, {r}, (u32){st}, {tag}, {how});"

    def e_wait(self, a, pc, op, step, r):
        kind = FULL if op.name == "wait_full" else EMPTY
        st, ph, rd = self.ring_vars(r)
        skip = f"({rd} != 0)" if op.unless_ready else "false"
        return [
            f"{{ const bool skip = {skip};",
            f"  if (!skip && !{self.wait_call(r, kind, st, ph)}) " + self.timeout(a, pc, op.name, r),
            "  if (c.lane == 0) { if (skip) glock(c); Ev e = ev_begin(c); "
            + self.ev(a, pc, op.name, r, x0="skip ? 1 : 0")
            + self.observe(a, pc, r, kind, "!skip", "LAND_WAIT") + " gunlock(c); }",
            "  __syncwarp(); }",
        ]

    def e_try(self, a, pc, op, step, r):
        kind = FULL if op.name == "try_full" else EMPTY
        st, ph, rd = self.ring_vars(r)
        return [
            "{ u32 ok = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); ok = {self.probe_call(r, kind, st, ph)}; "
            + self.ev(a, pc, op.name, r, x0="(i32)ok") + self.observe(a, pc, r, kind, "ok", "LAND_WAIT")
            + " gunlock(c); }",
            "  ok = __shfl_sync(FULLMASK, ok, 0);",
            f"  if (ok) acquire_all({self.sig(r, st, kind)});",
            f"  {rd} = ok; __syncwarp(); }}",
        ]

    # --- arrivals

    def dest_mask(self, a: int, to: str) -> int:
        cta = self.model.agents[a].cta
        m = 0
        for d in _targets(cta, to, self.k):
            m |= 1 << d
        return m

    def locked(self, a, pc, opname, r, effect: str, x0: str = "0") -> list[str]:
        return [f"if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); "
                f"{self.ev(a, pc, opname, r, x0=x0)} {effect} gunlock(c); }}",
                "__syncwarp();"]

    def e_arrive(self, a, pc, op, step, r):
        kind = FULL if op.name == "arrive_full" else EMPTY
        st, _, _ = self.ring_vars(r)
        mask = self.dest_mask(a, op.to)
        return self.locked(a, pc, op.name, r,
                           f"signal_arrive(c, {mask}u, {self.sig(r, st, kind)}, {op.n}u);",
                           x0=str(op.n))

    def e_expect_tx(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        mask = self.dest_mask(a, op.to)
        return self.locked(a, pc, op.name, r,
                           f"arrive_expect_tx(c, {mask}u, {self.sig(r, st, FULL)}, {op.n}u);",
                           x0=str(op.n))

    def tag(self, a: int, pc: int) -> str:
        """The tag the fill or read at `pc` stores or expects (semantics.op_tag)."""
        t = self.model.tag_of(self.model.agents[a], pc)
        return "item" if t < 0 else str(t)

    def e_copy(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        reg = self.region_of[(a, pc)]
        mask = self.dest_mask(a, op.to)
        rl = self.rings[r]
        src = "" if reg.tag >= 0 else f" + (u64)item * {op.n // 4}ull"
        return self.locked(
            a, pc, op.name, r,
            f"issue_copy(c, e, {a}, {pc}, {mask}u, {r}, (u32){st}, {self.tag(a, pc)}, {reg.offset}u, "
            f"{op.n}u, {rl.base}u + (u32){st} * {rl.slot_bytes}u, "
            f"c.src + {reg.src_word}ull{src});", x0=str(op.n))

    # --- payload

    def e_write(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        rl = self.rings[r]
        return self.locked(a, pc, op.name, r,
                           f"store_tag((volatile i32*)(c.smem + {rl.base}u + (u32){st} * "
                           f"{rl.slot_bytes}u), {self.tag(a, pc)});")

    def check_call(self, a: int, r: int, stage: str, item: str) -> str:
        cta = self.model.agents[a].cta
        return f"check_r{r}_c{cta}(c, (u32){stage}, {item}, &found)"

    def e_read(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        tag = self.tag(a, pc)
        observe = (f" if (!bad) observe_lands(c, e, {r}, (u32){st}, {tag}, LAND_READ);"
                   if self.rings[r].kind == "copy" else "")
        lines = [
            "{ i32 found = 0; Ev e;",
            "  if (c.lane == 0) { glock(c); e = ev_begin(c); }",
            "  __syncwarp();",
            f"  u32 bad = {self.check_call(a, r, st, tag)};",
            f"  if (c.lane == 0) {{ "
            f"{self.ev(a, pc, op.name, r, result='bad ? RES_MISMATCH : RES_OK', x0='found')}"
            f"{observe} gunlock(c); }}",
        ]
        if op.name == "read_async":
            lines.append(f"  push_read(c, {a}, q, {pc}, {r}, (u32){st}, {tag});")
        lines.append("  __syncwarp(); }")
        return lines

    def e_read_wait(self, a, pc, op, step, r):
        return [f"finish_reads(c, {a}, q, {op.n});"] + self.locked(a, pc, op.name, 0, "")

    def e_commit(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        mask = self.dest_mask(a, op.to)
        return [f"finish_reads(c, {a}, q, 0);"] + self.locked(
            a, pc, op.name, r, f"commit_fire(c, {a}, {mask}u, {r}, (u32){st}, {op.n}u);",
            x0=str(op.n))

    # --- stage and phase

    def e_advance(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        stages = self.rings[r].stages
        return self.locked(a, pc, op.name, r, "") + [
            f"{st} += 1; if ({st} == {stages}) {{ {st} = 0; {ph} += 1; }}"]

    def e_reset(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        ag = self.model.agents[a]
        return self.locked(a, pc, op.name, r, "") + [
            f"{st} = {ag.initial_stages[r]}; {ph} = {ag.initial_phases[r]};"]

    def e_drain(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        stages = self.rings[r].stages
        return [f"if (!{self.wait_call(r, EMPTY, st, ph)}) " + self.timeout(a, pc, "drain", r),
                f"if (c.lane == 0) {{ Ev e = ev_begin(c); {self.ev(a, pc, 'drain', r)} gunlock(c); }}",
                f"{st} += 1; if ({st} == {stages}) {{ {st} = 0; {ph} += 1; }}",
                "__syncwarp();"]

    # --- named barriers

    def bar_count(self, a: int, name: str) -> int:
        return int(self.model.tables.bar_count[self.bar_index[name], self.model.agents[a].cta])

    def e_sync(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        count = self.bar_count(a, op.barrier)
        lines = [
            "{ u32 g = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} "
            f"g = gate_arrive(&s_gate[{b}], {count}u); gunlock(c); }}",
            "  g = __shfl_sync(FULLMASK, g, 0);",
            f"  if (g == GATE_ABORT || !gate_wait(c, &s_gate[{b}], g + 1)) "
            + self.timeout(a, pc, op.name, 0),
        ]
        if op.barrier in self.hw:
            lines.append(f"  asm volatile(\"bar.sync %0, %1;\" :: \"r\"({self.hw[op.barrier]}), "
                         f"\"r\"({32 * count}) : \"memory\");")
        lines.append("  __syncwarp(); }")
        return lines

    def e_sync_arrive(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        count = self.bar_count(a, op.barrier)
        return [
            "{ u32 g = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} "
            f"g = gate_arrive(&s_gate[{b}], {count}u); gunlock(c); }}",
            "  g = __shfl_sync(FULLMASK, g, 0);",
            "  if (g == GATE_ABORT) " + self.timeout(a, pc, op.name, 0),
            f"  arrv{b} = g + 1; __syncwarp(); }}",
        ]

    def e_sync_wait(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        return [
            f"if (!gate_wait(c, &s_gate[{b}], arrv{b} > 1 ? arrv{b} : 1)) "
            + self.timeout(a, pc, op.name, 0),
            f"if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} gunlock(c); }}",
            "__syncwarp();",
        ]

    # -------------------------------------------------------------- ring helpers

    def check_functions(self) -> str:
        """check_r<r>_c<c>(c, stage, item, &found): whole-warp check of a slot for an item."""
        out = []
        for rl in self.rings:
            for cta in range(self.k):
                lines = [f"__device__ u32 check_r{rl.index}_c{cta}(const Ctx& c, u32 stage, "
                         f"i32 item, i32* found) {{",
                         f"  const unsigned char* s = c.smem + {rl.base}u + stage * "
                         f"{rl.slot_bytes}u;",
                         "  u32 bad = 0; i32 val = 0; (void)s;"]
                if rl.kind == "write":
                    lines.append(f"  check_words((const i32*)s, {WRITE_REGION // 4}u, item, "
                                 f"c.lane, bad, val);")
                else:
                    for reg in rl.regions:
                        if cta not in reg.dests:
                            continue
                        cond = f"item < {reg.items}" if reg.tag < 0 else f"item == {reg.tag}"
                        if reg.every != 1 or reg.at != 0:
                            cond += f" && item % {reg.every} == {reg.at}"
                        lines.append(f"  if ({cond}) check_words((const i32*)(s + {reg.offset}u), "
                                     f"{reg.nbytes // 4}u, item, c.lane, bad, val);")
                lines += ["  return warp_first_bad(bad, val, found);", "}"]
                out.append("\n".join(lines))
        return "\n\n".join(out)

    # -------------------------------------------------------------- the whole source

    def source(self) -> str:
        m = self.model
        n_agents = len(m.agents)
        agent_of = [[-1] * self.warps for _ in range(self.k)]
        slot = [0] * self.k
        for i, a in enumerate(m.agents):
            agent_of[a.cta][slot[a.cta]] = i
            slot[a.cta] += 1
        table = ", ".join("{" + ", ".join(str(x) for x in row) + "}" for row in agent_of)
        init_lines = []
        for rl in self.rings:
            for s in range(rl.stages):
                if self.nv:
                    init_lines.append(f"    mbar_init(sig_addr({rl.index}, {s}, 0), {rl.full_count}u);")
                    init_lines.append(f"    mbar_init(sig_addr({rl.index}, {s}, 1), {rl.empty_count}u);")
        dispatch = "\n".join(f"      case {i}: agent_{i}(c); break;" for i in range(n_agents))
        subs = {
            "@SPEC@": self.spec.name.replace("*/", "* /").replace("\n", " "),
            "@PATH@": str(self.path).replace("*/", "* /"),
            "@BACKEND@": self.backend,
            "@K@": str(self.k),
            "@NV@": "1" if self.nv else "0",
            "@RINGS@": str(m.rings),
            "@MAXS@": str(m.max_stages),
            "@NGATES@": str(max(len(m.barrier_names), 1)),
            "@WARPS@": str(self.warps),
            "@THREADS@": str(32 * self.warps),
            "@CLUSTER_ATTR@": f"__cluster_dims__({self.k}, 1, 1) " if self.k > 1 else "",
            "@AGENT_OF@": table,
            "@INIT@": "\n".join(init_lines),
            "@SLOT_INIT@": self._slot_offsets(),
            "@DISPATCH@": dispatch,
            "@AMD_HELPERS@": AMD_C_HELPERS,
            "@SWEEP_NS@": str(SWEEP_NS),
            "@SMEM_WORDS@": str(self.smem_bytes // 4),
            "@CHECK_DISPATCH@": self._check_dispatch(),
            "@TAG_OUT@": str(m.tag_prologue),  # tags from here on are not items
        }
        text = PRELUDE
        for key, value in subs.items():
            text = text.replace(key, value)
        parts = [text, self.check_functions()]
        parts += [self.agent_function(i) for i in range(n_agents)]
        kernel = KERNEL
        for key, value in subs.items():
            kernel = kernel.replace(key, value)
        parts.append(kernel)
        return "\n\n".join(parts) + "\n"

    def _check_dispatch(self) -> str:
        return "\n".join(f"    case {rl.index * self.k + cta}: return check_r{rl.index}_c{cta}(c, stage, item, found);"
                         for rl in self.rings for cta in range(self.k))

    def _slot_offsets(self) -> str:
        bases = ", ".join(str(rl.base) for rl in self.rings)
        sizes = ", ".join(str(rl.slot_bytes) for rl in self.rings)
        return (f"__device__ __forceinline__ u32 slot_base(u32 r) {{ const u32 b[] = {{{bases}}}; "
                f"return b[r]; }}\n"
                f"__device__ __forceinline__ u32 slot_size(u32 r) {{ const u32 b[] = {{{sizes}}}; "
                f"return b[r]; }}")

    def max_counts(self):
        """Upper bounds of the event and copy-record buffers for one run."""
        events, records = 64, 0
        for a in self.model.agents:
            n_body = a.body_end - a.body_start
            executed = len(a.ops) - n_body + a.items * n_body
            fan = 1
            for op, _ in a.ops:
                if op.to == "all":
                    fan = max(fan, self.k)
            # each step, plus a finish or fires per step, plus a timeout
            events += executed * (2 + fan) + 2
            copies = sum(1 for op, _ in a.ops[a.body_start:a.body_end] if op.name == "copy")
            once = sum(1 for op, _ in a.ops[:a.body_start] + a.ops[a.body_end:] if op.name == "copy")
            records += (copies * a.items + once) * self.k  # prologue and epilogue copies too
        return events, max(records, 1)


def generate(spec_or_model) -> Generated:
    """Generate the reference kernel of a spec (or of its compiled model)."""
    model = spec_or_model if isinstance(spec_or_model, Model) else compile_model(spec_or_model)
    g = _Gen(model)
    g.check()
    g.layout()
    g.barrier_plan()
    src = g.source()
    max_events, max_records = g.max_counts()
    op_names = {code: name for name, code in OP_CODES.items()}
    op_names[EV_OP_FINISH] = "finish"
    op_names[EV_OP_FIRE] = "fire"
    tags = [[model.tag_of(a, pc) for pc in range(len(a.ops))] for a in model.agents]
    outside = any(t >= 0 for row in tags for t in row)
    return Generated(
        spec_path=str(model.spec.path), source=src, kernel_name=KERNEL_NAME,
        backend=model.spec.backend, ctas=g.k, threads=32 * g.warps, smem_bytes=g.smem_bytes,
        agents=[a.name for a in model.agents], agent_ctas=[a.cta for a in model.agents],
        agent_ops=[[(op.name, op.text or op.name) for op, _ in a.ops] for a in model.agents],
        ring_names=list(model.ring_names), rings=g.rings, src_words=g.src_words,
        src_fill=g.src_fill, max_events=max_events, max_records=max_records,
        hw_barriers=dict(g.hw), op_names=op_names,
        agent_tags=tags, tag_prologue=model.tag_prologue if outside else None,
        tag_epilogue=model.tag_epilogue if outside else None)


OP_EMITTERS = {
    "wait_full": _Gen.e_wait, "wait_empty": _Gen.e_wait,
    "try_full": _Gen.e_try, "try_empty": _Gen.e_try,
    "arrive_full": _Gen.e_arrive, "arrive_empty": _Gen.e_arrive,
    "expect_tx": _Gen.e_expect_tx, "copy": _Gen.e_copy,
    "write": _Gen.e_write, "read": _Gen.e_read, "read_async": _Gen.e_read,
    "read_wait": _Gen.e_read_wait, "commit_empty": _Gen.e_commit,
    "advance": _Gen.e_advance, "reset": _Gen.e_reset, "drain": _Gen.e_drain,
    "sync": _Gen.e_sync, "sync_arrive": _Gen.e_sync_arrive, "sync_wait": _Gen.e_sync_wait,
}
# Every op of the language must have an emitter (a new op fails here, at import, in CI).
_missing = [op for op in OPS if op not in OP_EMITTERS]
if _missing:  # pragma: no cover - guarded by tests/test_codegen.py
    raise GenerationError(f"cuda_ref/codegen.py: ops without a GPU emitter: {', '.join(_missing)}")
assert set(OP_CODES) == set(OPS)
assert (S.T_SELF, FULL, EMPTY) == (0, 0, 1)


# ------------------------------------------------------------------ fixed device code

PRELUDE = r"""// pipeproof reference kernel for "@SPEC@"
// spec: @PATH@   backend: @BACKEND@   CTAs: @K@   generated by cuda_ref/codegen.py
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;
typedef unsigned short u16;

#define FULLMASK 0xffffffffu
#define K_CTAS @K@
#define NV @NV@
#define RINGS @RINGS@
#define MAXS @MAXS@
#define EV_W 16
#define REC_W 6
#define RES_OK 0
#define RES_TIMEOUT 1
#define RES_MISMATCH 2
#define OP_FINISH 100
#define OP_FIRE 101
#define LAND_WAIT 1
#define LAND_READ 2
#define LAND_SWEEP 3
#define LAND_SEEN 4
#define TAG_OUT @TAG_OUT@
#define REC_VALID (1ull << 63)
#define GATE_ABORT 0x80000000u
#define MAX_READS 16

struct Ctx {
  i32* ev; u32* ctl; u64* rec; const u32* src; i32* status;
  unsigned char* smem;
  u64 deadline;
  u32 max_ev, max_rec, cta, lane;
  u32 rng, delay_max;
};

struct Ev { u64 t; u32 seq; };

struct Reads {          // the agent's async reads in flight, oldest first
  u32 n;
  i32 pc[MAX_READS], ring[MAX_READS], stage[MAX_READS], item[MAX_READS];
};

__shared__ __align__(8) u64 s_sig[RINGS * MAXS * 2];   // mbarriers (nvidia) / counters (amd)
__shared__ u32 s_gate[@NGATES@];                        // named barriers: gen << 16 | arrivals
extern __shared__ __align__(128) unsigned char s_dyn[];  // the slots

__device__ __forceinline__ u64 gtimer() {
  u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 r; asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}
__device__ __forceinline__ void nsleep(u32 ns) { asm volatile("nanosleep.u32 %0;" :: "r"(ns)); }
__device__ __forceinline__ u32 sig_addr(u32 r, u32 stage, u32 kind) {
  return smem_u32(&s_sig[(r * MAXS + stage) * 2 + kind]);
}
@SLOT_INIT@
__device__ __forceinline__ u32 cluster_rank() {
#if K_CTAS > 1
  u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
#else
  return 0;
#endif
}
__device__ __forceinline__ void cluster_sync_all() {
#if K_CTAS > 1
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ u32 mapa(u32 a, u32 rank) {
  u32 r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank)); return r;
}

// ---- nvidia: mbarrier (backends/nvidia.py)
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ u32 probe_nv(u32 bar, u32 parity) {   // backends.nvidia.ready
  u32 ok;
#if K_CTAS > 1
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
#else
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
#endif
  return ok;
}
__device__ __forceinline__ void mbar_arrive(u32 bar, u32 n) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive_cluster(u32 rbar, u32 n) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(rbar), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx_cluster(u32 rbar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(rbar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_copy_multicast(u32 dst, const void* src, u32 bytes, u32 bar, u16 mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "h"(mask) : "memory");
}

// ---- amd: monotone counters (backends/amd.py)
@AMD_HELPERS@
__device__ __forceinline__ void cnt_add(u32 a, u32 n) {
  asm volatile("red.release.cta.shared::cta.add.u32 [%0], %1;" :: "r"(a), "r"(n) : "memory");
}
__device__ __forceinline__ u32 cnt_load(u32 a) {
  u32 v; asm volatile("ld.acquire.cta.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
__device__ __forceinline__ u32 probe_amd(u32 a, u64 threshold) {   // backends.amd.*_ready
  return (u64)cnt_load(a) >= threshold ? 1u : 0u;
}

// ---- the log lock (global): held by one lane at a time, never across a wait
// Its holder never waits, so a lock still held well past the deadline belongs to a warp that
// trapped (an over-arrival does not stop the other warps at once): then the lock is taken
// over and the log is closed (FLAG_LOCK_BROKEN), so it ends at the trapping step.
__device__ __forceinline__ void glock(const Ctx& c) {
  u32 n = 0;
  while (atomicCAS(c.ctl + 3, 0u, 1u) != 0u) {
    if ((++n & 1023u) == 0u && gtimer() > c.deadline + 1000000ull) { atomicOr(c.ctl + 2, 4u); break; }
  }
  __threadfence();
}
__device__ __forceinline__ void gunlock(const Ctx& c) {
  __threadfence();
  atomicExch(c.ctl + 3, 0u);
}
__device__ __forceinline__ void store_tag(volatile i32* p, i32 item) {
  p[0] = item; p[1] = item; p[2] = item; p[3] = item;
}

// ---- the event log (lane 0)
__device__ void scan_lands(const Ctx& c, Ev e);
// Stamp a step (under the log lock): time, sequence number, and every copy into this CTA whose
// bytes are visible now is recorded as landed just before this step.
__device__ __forceinline__ Ev ev_begin(const Ctx& c) {
  Ev e; e.t = gtimer(); e.seq = atomicAdd(c.ctl + 0, 1u);
#if NV
  scan_lands(c, e);
#endif
  return e;
}
__device__ void ev_put(const Ctx& c, Ev e, i32 agent, i32 op, i32 pc, i32 item, i32 ring, i32 stage,
                       i64 phase, i32 result, i32 x0, i32 x1) {
  if (*(volatile u32*)(c.ctl + 2) & 4u) return;   // the log was closed (a trap)
  if (e.seq >= c.max_ev) { atomicOr(c.ctl + 2, 1u); return; }
  volatile i32* p = c.ev + (u64)e.seq * EV_W;
  p[0] = (i32)(u32)e.t; p[1] = (i32)(u32)(e.t >> 32); p[2] = (i32)e.seq; p[3] = agent; p[4] = op;
  p[5] = pc; p[6] = item; p[7] = ring; p[8] = stage; p[9] = (i32)(u32)(u64)phase;
  p[10] = (i32)(u32)((u64)phase >> 32); p[11] = result; p[12] = x0; p[13] = x1; p[14] = 0;
  __threadfence_system();
  p[15] = 1;
}

// ---- perturbation: seeded per-agent delays before each op
__device__ __forceinline__ void perturb(Ctx& c) {
  __syncwarp();
  if (c.delay_max) {
    u32 d = 0;
    if (c.lane == 0) {
      c.rng ^= c.rng << 13; c.rng ^= c.rng >> 17; c.rng ^= c.rng << 5;
      if ((c.rng & 3u) == 0u) d = (c.rng >> 8) % (c.delay_max + 1u);
      if (d) nsleep(d);
    }
    __syncwarp();
  }
}

// ---- bounded waits (whole warp; lane 0 polls)
__device__ __forceinline__ void acquire_all(u32 bar) {
#if NV
  (void)probe_nv(bar, 0);
#else
  (void)cnt_load(bar);
#endif
}
// 1: ready, and lane 0 holds the log lock (the caller logs the step and releases it);
// 0: past the deadline (no lock held). The probe is repeated under the lock, so the logged
// step and the signal state it saw are one atomic moment of the log.
__device__ u32 wait_nv(const Ctx& c, u32 bar, u32 parity) {
  for (;;) {
    u32 ok = 0, late = 0;
    if (c.lane == 0) {
      if (probe_nv(bar, parity)) { glock(c); ok = probe_nv(bar, parity); if (!ok) gunlock(c); }
      if (!ok) late = gtimer() > c.deadline;
    }
    ok = __shfl_sync(FULLMASK, ok, 0); late = __shfl_sync(FULLMASK, late, 0);
    if (ok) { (void)probe_nv(bar, parity); __syncwarp(); return 1u; }
    if (late) return 0u;
  }
}
__device__ u32 wait_amd(const Ctx& c, u32 a, u64 threshold) {
  for (;;) {
    u32 ok = 0, late = 0;
    if (c.lane == 0) {
      if (probe_amd(a, threshold)) { glock(c); ok = probe_amd(a, threshold); if (!ok) gunlock(c); }
      if (!ok) late = gtimer() > c.deadline;
    }
    ok = __shfl_sync(FULLMASK, ok, 0); late = __shfl_sync(FULLMASK, late, 0);
    if (ok) { (void)cnt_load(a); __syncwarp(); return 1u; }
    if (late) return 0u;
  }
}

// ---- signal updates (lane 0); mask = destination CTAs
__device__ void signal_arrive(const Ctx& c, u32 mask, u32 sig, u32 n) {
#if NV
#if K_CTAS > 1
  for (u32 d = 0; d < K_CTAS; ++d) if (mask & (1u << d)) mbar_arrive_cluster(mapa(sig, d), n);
#else
  (void)mask; mbar_arrive(sig, n);
#endif
#else
  (void)mask; cnt_add(sig, n);
#endif
}
__device__ void arrive_expect_tx(const Ctx& c, u32 mask, u32 sig, u32 bytes) {
#if NV
#if K_CTAS > 1
  for (u32 d = 0; d < K_CTAS; ++d) if (mask & (1u << d)) mbar_arrive_tx_cluster(mapa(sig, d), bytes);
#else
  (void)mask; mbar_arrive_tx(sig, bytes);
#endif
#endif
}

// ---- copies: a record per destination, then the bulk copy
__device__ void issue_copy(const Ctx& c, Ev e, i32 agent, i32 pc, u32 mask, u32 ring, u32 stage,
                           i32 item, u32 region, u32 bytes, u32 slot_off, const u32* src) {
  for (u32 d = 0; d < K_CTAS; ++d) {
    if (!(mask & (1u << d))) continue;
    u32 j = atomicAdd(c.ctl + 1, 1u);
    if (j >= c.max_rec) { atomicOr(c.ctl + 2, 2u); continue; }
    volatile u64* r = c.rec + (u64)j * REC_W;
    r[1] = (u64)(u32)item | ((u64)bytes << 32);
    r[2] = e.t; r[3] = e.seq; r[4] = ~0ull; r[5] = 0ull;
    __threadfence();
    r[0] = REC_VALID | (u64)d | ((u64)ring << 8) | ((u64)stage << 16) | ((u64)region << 32);
  }
  __threadfence();
#if NV
  u32 bar = sig_addr(ring, stage, 0);
  u32 dst = smem_u32(s_dyn + slot_off + region);
#if K_CTAS > 1
  bulk_copy_multicast(dst, src, bytes, bar, (u16)mask);
#else
  (void)mask; bulk_copy(dst, src, bytes, bar);
#endif
#endif
}
// An agent saw the slot (after a wait on full, a ready try or a good read), under the log lock:
// every copy into it whose bytes are there landed no later than this step (e).
__device__ void note_land(volatile u64* r, Ev e, u32 how) {
  if (e.seq < r[4]) { r[4] = e.seq; r[5] = e.t; r[3] = (r[3] & 0xffffffffull) | ((u64)how << 32); }
}
__device__ void scan_lands(const Ctx& c, Ev e) {
  u32 n = *(volatile u32*)(c.ctl + 1);
  if (n > c.max_rec) n = c.max_rec;
  for (u32 j = 0; j < n; ++j) {
    volatile u64* r = c.rec + (u64)j * REC_W;
    u64 meta = r[0];
    if (!(meta & REC_VALID) || (meta & 0xff) != c.cta || r[4] != ~0ull || (u32)r[3] >= e.seq) continue;
    u32 ring = (meta >> 8) & 0xff, stage = (meta >> 16) & 0xffff, words = (u32)(r[1] >> 32) / 4u;
    i32 tag = (i32)(u32)r[1];
    const volatile i32* p = (const volatile i32*)(c.smem + slot_base(ring) + stage * slot_size(ring) + (u32)((meta >> 32) & 0x7fffffffull));
    // a region's body tags only grow, so a later one there means this one landed; a
    // prologue's or epilogue's tag (TAG_OUT and up) says so only about itself
    if (tag < TAG_OUT ? (p[0] >= tag && p[0] < TAG_OUT && p[words - 1] >= tag && p[words - 1] < TAG_OUT)
                      : (p[0] == tag && p[words - 1] == tag)) note_land(r, e, LAND_SEEN);
  }
}
__device__ void observe_lands(const Ctx& c, Ev e, u32 ring, u32 stage, i32 item, u32 how) {
  u32 n = *(volatile u32*)(c.ctl + 1);
  if (n > c.max_rec) n = c.max_rec;
  for (u32 j = 0; j < n; ++j) {
    volatile u64* r = c.rec + (u64)j * REC_W;
    u64 meta = r[0];
    if (!(meta & REC_VALID)) continue;
    if ((meta & 0xff) != c.cta || ((meta >> 8) & 0xff) != ring || ((meta >> 16) & 0xffff) != stage) continue;
    if ((i32)(u32)r[1] != item || (u32)r[3] > e.seq || r[4] != ~0ull) continue;
    u32 words = (u32)(r[1] >> 32) / 4u;
    const volatile i32* p = (const volatile i32*)(c.smem + slot_base(ring) + stage * slot_size(ring) + (u32)((meta >> 32) & 0x7fffffffull));
    if (p[0] == item && p[words - 1] == item) note_land(r, e, how);
  }
}

// ---- slot checks (whole warp)
__device__ __forceinline__ void check_words(const i32* p, u32 words, i32 item, u32 lane, u32& bad, i32& val) {
  for (u32 i = lane; i < words; i += 32) {
    i32 v = ((const volatile i32*)p)[i];
    if (v != item && !bad) { bad = 1; val = v; }
  }
}
__device__ __forceinline__ u32 warp_first_bad(u32 bad, i32 val, i32* found) {
  u32 m = __ballot_sync(FULLMASK, bad);
  if (!m) { *found = 0; return 0u; }
  *found = __shfl_sync(FULLMASK, val, __ffs(m) - 1);
  return 1u;
}

// ---- named barriers: software generations (the model's semantics), bounded
__device__ u32 gate_arrive(u32* w, u32 count) {   // lane 0; the generation arrived in
  u32 old = *(volatile u32*)w;
  for (;;) {
    if (old & GATE_ABORT) return GATE_ABORT;
    u32 gen = (old >> 16) & 0x7fffu, arr = old & 0xffffu;
    u32 nw = (arr + 1u >= count) ? (((gen + 1u) & 0x7fffu) << 16) : old + 1u;
    u32 got = atomicCAS(w, old, nw);
    if (got == old) { __threadfence_block(); return gen; }
    old = got;
  }
}
__device__ u32 gate_wait(const Ctx& c, u32* w, u32 target) {   // whole warp; 1 passed, 0 timeout
  for (;;) {
    u32 ok = 0, late = 0;
    if (c.lane == 0) {
      u32 v = *(volatile u32*)w;
      if (((v >> 16) & 0x7fffu) >= target) ok = 1;
      else if (v & GATE_ABORT) late = 1;
      else if (gtimer() > c.deadline && atomicCAS(w, v, v | GATE_ABORT) == v) late = 1;
    }
    ok = __shfl_sync(FULLMASK, ok, 0); late = __shfl_sync(FULLMASK, late, 0);
    if (ok) { __threadfence_block(); __syncwarp(); return 1u; }
    if (late) return 0u;
  }
}

// ---- async reads: checked when they start and again when they finish
__device__ void finish_one(const Ctx& c, i32 agent, Reads& q);
__device__ u32 check_slot(const Ctx& c, i32 agent, u32 ring, u32 stage, i32 item, i32* found);
__device__ void finish_reads(const Ctx& c, i32 agent, Reads& q, u32 keep) {
  while (q.n > keep) finish_one(c, agent, q);
}
__device__ void push_read(const Ctx& c, i32 agent, Reads& q, i32 pc, i32 ring, u32 stage, i32 item) {
  if (q.n == MAX_READS) finish_one(c, agent, q);
  q.pc[q.n] = pc; q.ring[q.n] = ring; q.stage[q.n] = (i32)stage; q.item[q.n] = item; q.n += 1;
}

// ---- commits fire at once, after the agent's reads (lane 0)
__device__ void commit_fire(const Ctx& c, i32 agent, u32 mask, u32 ring, u32 stage, u32 n) {
  for (u32 d = 0; d < K_CTAS; ++d) {
    if (!(mask & (1u << d))) continue;
    Ev e = ev_begin(c);
    ev_put(c, e, agent, OP_FIRE, -1, 0, (i32)ring, (i32)stage, 0, RES_OK, (i32)n, (i32)d);
  }
  signal_arrive(c, mask, sig_addr(ring, stage, 1), n);
}

__device__ void agent_timeout(const Ctx& c, i32 agent, i32 op, i32 pc, i32 item, i32 ring, i32 stage, i64 phase) {
  if (c.lane == 0) {
    glock(c);
    Ev e = ev_begin(c);
    ev_put(c, e, agent, op, pc, item, ring, stage, phase, RES_TIMEOUT, 0, 0);
    c.status[agent] = 2;
    gunlock(c);
  }
  __syncwarp();
}
__device__ void agent_done(const Ctx& c, i32 agent) {
  if (c.lane == 0) c.status[agent] = 1;
  __syncwarp();
}
"""

KERNEL = r"""
__device__ const i32 AGENT_OF[K_CTAS][@WARPS@] = {@AGENT_OF@};

__device__ void finish_one(const Ctx& c, i32 agent, Reads& q) {
  i32 found = 0; Ev e;
  if (c.lane == 0) { glock(c); e = ev_begin(c); }
  __syncwarp();
  u32 bad = check_slot(c, agent, (u32)q.ring[0], (u32)q.stage[0], q.item[0], &found);
  if (c.lane == 0) {
    ev_put(c, e, agent, OP_FINISH, q.pc[0], q.item[0], q.ring[0], q.stage[0], 0,
           bad ? RES_MISMATCH : RES_OK, found, 0);
    gunlock(c);
  }
  for (u32 i = 1; i < q.n; ++i) {
    q.pc[i - 1] = q.pc[i]; q.ring[i - 1] = q.ring[i]; q.stage[i - 1] = q.stage[i]; q.item[i - 1] = q.item[i];
  }
  q.n -= 1;
  __syncwarp();
}

extern "C" __global__ void @CLUSTER_ATTR@__launch_bounds__(@THREADS@)
pipeproof_kernel(i32* ev, u32* ctl, u64* rec, const u32* src, i32* status,
                 const u32* agent_seed, const u32* agent_delay, u64 timeout_ns, u32 max_ev, u32 max_rec)
{
  __shared__ u64 s_t0;
  const u32 cta = cluster_rank();
  if (threadIdx.x == 0) {
    s_t0 = gtimer();
#if NV
@INIT@
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
    for (u32 i = 0; i < RINGS * MAXS * 2; ++i) s_sig[i] = 0ull;
#endif
    for (u32 i = 0; i < @NGATES@; ++i) s_gate[i] = 0u;
  }
  // every slot word starts as -1 (no tag), before any copy can land
  for (u32 i = threadIdx.x; i < @SMEM_WORDS@u; i += blockDim.x) ((u32*)s_dyn)[i] = 0xffffffffu;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  cluster_sync_all();
  const u32 warp = threadIdx.x >> 5;
  const i32 agent = AGENT_OF[cta][warp];
  if (agent >= 0) {
    Ctx c;
    c.ev = ev; c.ctl = ctl; c.rec = rec; c.src = src; c.status = status; c.smem = s_dyn;
    c.deadline = s_t0 + timeout_ns; c.max_ev = max_ev; c.max_rec = max_rec; c.cta = cta;
    c.lane = threadIdx.x & 31u; c.rng = agent_seed[agent] | 1u; c.delay_max = agent_delay[agent];
    switch (agent) {
@DISPATCH@
      default: break;
    }
  }
  __syncthreads();
  // copies still landing in this CTA: wait for them (bounded), note when they were seen
  if (threadIdx.x == 0) {
    const u64 until = gtimer() + @SWEEP_NS@ull;
    for (;;) {
      u32 n = *(volatile u32*)(ctl + 1), pending = 0;
      if (n > max_rec) n = max_rec;
      for (u32 j = 0; j < n; ++j) {
        volatile u64* r = rec + (u64)j * REC_W;
        u64 meta = r[0];
        if (!(meta & REC_VALID) || (meta & 0xff) != cta || r[4] != ~0ull) continue;
        Ctx c; c.ctl = ctl; c.deadline = until; c.rec = rec; c.max_rec = max_rec; c.cta = cta; c.smem = s_dyn;
        u32 ring = (meta >> 8) & 0xff, stage = (meta >> 16) & 0xffff, words = (u32)(r[1] >> 32) / 4u;
        i32 tag = (i32)(u32)r[1];
        const volatile i32* p = (const volatile i32*)(s_dyn + slot_base(ring) + stage * slot_size(ring) + (u32)((meta >> 32) & 0x7fffffffull));
        if (p[0] >= tag && p[words - 1] >= tag && p[0] != -1 && p[words - 1] != -1) {
          glock(c); Ev e = ev_begin(c); note_land(r, e, LAND_SWEEP); gunlock(c);
        } else {
          pending += 1;
        }
      }
      if (!pending || gtimer() > until) break;
    }
  }
  __syncthreads();
  cluster_sync_all();
}

__device__ u32 check_slot(const Ctx& c, i32 agent, u32 ring, u32 stage, i32 item, i32* found) {
  (void)agent;
  switch (ring * K_CTAS + c.cta) {
@CHECK_DISPATCH@
    default: *found = 0; return 0u;
  }
}
"""
