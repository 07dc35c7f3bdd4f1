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
  `mbarrier.test_wait.parity` (its operand `phase & 1` printed from backends.nvidia's signal_ready); remote
  targets (`to=leader|peer|all`) through `mapa` + `.shared::cluster` arrives; `copy B` is a
  1-D `cp.async.bulk` global -> shared that completes its bytes on `full[stage]` (with
  `.multicast::cluster` and a CTA mask when K > 1);
* amd: a monotone u32 counter per signal in shared memory (`red.release.cta.add`,
  `ld.acquire.cta`), ready against the thresholds of backends.amd (the helpers and the test
  printed from backends/amd.py by cuda_ref/emit_backend.py; tests/test_printed_backends.py);
* `commit_empty [n]`, `commit_full [n]`: the agent first finishes its outstanding async reads
  and writes, then arrives on empty (full) (tcgen05.commit fires after the MMAs that read the
  slot); `read_async` checks the slot when it starts and again when it finishes (at
  `read_wait`, at a commit, or at the end); `write_async` stores its tag words with a real
  `cp.async` from global memory (one cp.async group per op) and finishes, in the same FIFO,
  with `cp.async.wait_group` (docs/rules.md "Async writes");
* tags: a fill stores, and a read expects, the item, or the tile `item / tag_div` on a
  tile-level ring of nested loops (spec/load_loops.py), or a prologue's or epilogue's own tag
  (emit_ops.OpEmitter.tag);
* named barriers: a bounded software generation counter in shared memory with exactly the
  model's semantics (arrivals, generations, `sync_arrive`/`sync_wait`), followed by a real
  `bar.sync id, 32*count` of the whole warps when the barrier is used only through `sync` and
  its count equals its users (then every agent that passes the counter reaches the hardware
  barrier, which therefore cannot hang);
* payload: a slot is laid out as its parts (checker/core/program.py slot_parts), one region each,
  sized by the part's largest fill; a `copy` lands B bytes whose every word is the item number
  in its part's region; a producer-side `write` stores the item number in the tag words at the
  start of its part's region, a consumer-side one in every word of every part (it reuses the
  whole buffer); `read` checks (with all 32 lanes), in each part the program fills for its tag,
  the bytes of that fill (every part when it fills none) and reports the first word that
  differs (`tag_mismatch`, with the tag found);
* a replay kernel (`generate(spec, replay=True)`, cuda_ref/replay.py, cuda_ref/emit_replay.py)
  runs under a trace's device-side schedule: each op waits for its step on a global counter,
  and one more warp per CTA lands copies and fires commits at their steps;
* the model's inflight_at_exit is observed, not undefined: every CTA stays resident to the
  cluster barrier, the step that leaves a CTA without agents while a copy or commit is in flight
  into it is marked, and so is any later update aimed at it (cuda_ref/log.py);
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

Op semantics come from the backends: each backend the kernel runs has one entry in
cuda_ref/emit_backend.py's `DEVICE_BACKENDS`, by its registered name (its device functions,
waits, probes and signal init; `BACKEND_MIRRORS`: for every public function of its rules
module, how this kernel realises it), and `OP_EMITTERS` has an
emitter for every op of spec.schema.OPS, chosen by the op's effects (emit_ops.emitter_for). A backend function or an op that is not mirrored
fails loudly here (GenerationError) until it is implemented. What the kernel computes of a
backend's rules is printed from the backend itself (backends/printed.py), not copied.

The code, by concern: cuda_ref/emit_common.py (limits, the log's layout, regions),
cuda_ref/emit_backend.py (the backend mirrors), cuda_ref/emit_layout.py (slots, their parts,
copy regions, hardware barriers, slot checks), cuda_ref/emit_ops.py (one emitter per op),
cuda_ref/emit_device.py (the fixed device code) and cuda_ref/emit_replay.py (a replay kernel's
turn waits and replay warps). This module is the public API: `generate`,
`Generated`, `OP_EMITTERS`, and every name of those modules that others read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.backends.capabilities import backend as backend_record, names_with
from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import OP_CODES, Model, compile_model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.cuda_ref.emit_backend import (
    AMD_C_HELPERS, BACKEND_MIRRORS, BACKEND_MODULES, DEVICE_BACKENDS, amd_helpers, amd_ready,
    backend_functions, check_backend_mirrors, device_code, nv_wait_parity,
)
from pipeproof.cuda_ref.emit_common import (
    BULK_ALIGN, CTL_FLAGS, CTL_PER_CTA, CTL_REC, CTL_SEQ, CTL_WORDS, EV_EXIT_INFLIGHT,
    EV_EXIT_UNAWAITED, EV_FIELDS, EV_LATE_TARGET, EV_OP_FINISH, EV_OP_FIRE, EV_W,
    FLAG_EV_OVERFLOW, FLAG_LOCK_BROKEN, FLAG_REC_OVERFLOW, FLAG_SCHED, KERNEL_NAME, LAND_BY_READ,
    LAND_BY_REPLAY, LAND_BY_STEP, LAND_BY_SWEEP, LAND_BY_WAIT, MAX_DYNAMIC_SMEM, MAX_HW_BARRIERS, MAX_WARPS_PER_CTA, REC_VALID,
    REC_W, RESULT_MISMATCH, RESULT_OK, RESULT_TIMEOUT, RESULTS, SLOT_ALIGN, STATUS_FINISHED,
    STATUS_TIMEOUT, SWEEP_NS, WRITE_REGION, GenerationError, Region, RingLayout,
)
from pipeproof.cuda_ref.emit_device import KERNEL, PRELUDE
from pipeproof.cuda_ref.emit_layout import Layout
from pipeproof.cuda_ref.emit_ops import OpEmitter, emitter_for
from pipeproof.cuda_ref.emit_replay import replay_code
from pipeproof.spec.schema import OPS, Spec

# Every name cuda_ref.run, cuda_ref.log and the tests read from here, wherever it is defined:
# the log's layout and the limits (emit_common.py), the backend mirrors (emit_backend.py).
__all__ = [
    "AMD_C_HELPERS", "BACKEND_MIRRORS", "BACKEND_MODULES", "DEVICE_BACKENDS", "BULK_ALIGN", "CTL_FLAGS", "CTL_REC",
    "CTL_SEQ", "CTL_WORDS", "CTL_PER_CTA", "EV_EXIT_INFLIGHT", "EV_EXIT_UNAWAITED", "EV_FIELDS",
    "EV_LATE_TARGET", "EV_OP_FINISH", "EV_OP_FIRE", "EV_W", "FLAG_EV_OVERFLOW",
    "FLAG_LOCK_BROKEN", "FLAG_REC_OVERFLOW", "FLAG_SCHED", "KERNEL", "KERNEL_NAME", "LAND_BY_READ",
    "LAND_BY_REPLAY", "LAND_BY_STEP", "LAND_BY_SWEEP", "LAND_BY_WAIT", "MAX_DYNAMIC_SMEM", "MAX_HW_BARRIERS",
    "MAX_WARPS_PER_CTA", "OP_EMITTERS", "PRELUDE", "REC_VALID", "REC_W", "RESULT_MISMATCH",
    "RESULT_OK", "RESULT_TIMEOUT", "RESULTS", "SLOT_ALIGN", "STATUS_FINISHED", "STATUS_TIMEOUT",
    "SWEEP_NS", "WRITE_REGION", "Generated", "GenerationError", "Region", "RingLayout",
    "amd_helpers", "amd_ready", "backend_functions", "check_backend_mirrors", "generate",
    "nv_wait_parity",
]


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
    agent_divs: list = field(default_factory=list)  # per agent, per pc: op.tag_div (nested
                                                    # loops: a body tag is item / tag_div)
    tag_prologue: int | None = None                 # the prologue's and epilogue's own tags,
    tag_epilogue: int | None = None                 # when some fill or read uses them
    replay: bool = False             # a replay kernel (cuda_ref/replay.py): its schedule, the
                                     # step counter and one replay warp per CTA

    def expected_tag(self, agent: int, pc: int, item: int) -> int:
        """The tag a read at `pc` expects (the item, the tile item / tag_div of a tile-level
        ring, or a prologue's or epilogue's tag)."""
        tags = self.agent_tags[agent] if agent < len(self.agent_tags) else []
        if 0 <= pc < len(tags) and tags[pc] >= 0:
            return tags[pc]
        divs = self.agent_divs[agent] if agent < len(self.agent_divs) else []
        return item // divs[pc] if 0 <= pc < len(divs) else item

    def tag_order(self, tag: int) -> float:
        """Where a fill of `tag` comes in program order: prologue, items, epilogue."""
        return {self.tag_prologue: -0.5, self.tag_epilogue: float("inf")}.get(tag, tag)

    def tag_text(self, tag: int) -> str:
        names = {self.tag_prologue: "the prologue's tag", self.tag_epilogue: "the epilogue's tag"}
        return "nothing" if tag == -1 else names.get(tag, f"item {tag}")


def _only(capability: str) -> str:
    """The backends with a capability (a field of backends.capabilities.Backend), for words."""
    return names_with(capability)


class _Gen(Layout, OpEmitter):
    def __init__(self, model: Model, replay: bool = False):
        self.model = model
        self.replay = replay
        self.spec: Spec = model.spec
        self.k = model.ctas
        self.backend = self.spec.backend
        self.caps = backend_record(self.backend)
        # how the kernel realises the backend (cuda_ref/emit_backend.py; emit_ops.py reads it
        # too): None where it has no entry, which check() refuses
        self.device = DEVICE_BACKENDS.get(self.backend)
        self.path = self.spec.path

    def fail(self, what: str) -> GenerationError:
        return GenerationError(f"{self.path}: cuda_ref: {what}")

    # -------------------------------------------------------------- checks

    def check(self):
        check_backend_mirrors(self.backend)
        try:  # the backend rules the kernel prints must still have the form it realises (every
            for device in DEVICE_BACKENDS.values():  # kernel carries every backend's functions)
                device.check()
        except GenerationError as err:
            raise self.fail(str(err)) from None
        for a in self.model.agents:
            for op, _ in a.ops:
                if op.name in NO_GPU_YET:
                    raise self.fail(f"agent {a.name}: op {op.name!r}: {NO_GPU_YET[op.name]}")
                if op.name not in OP_EMITTERS:
                    raise self.fail(f"agent {a.name}: op {op.name!r} has no GPU implementation "
                                    f"(cuda_ref/emit_ops.py emitter_for has none for its effects)")
                if op.ahead is not None:  # the kernel's tags are the agent's item or a section's
                    raise self.fail(f"agent {a.name}: '{op.text}': fills for a later item (ahead=) "
                                    f"have no GPU implementation yet")
                eff = OP_EFFECTS[op.name]
                if eff.stores and eff.issues != "copy" and op.to != "self" and self.model.ctas > 1:
                    raise self.fail(f"agent {a.name}: '{op.text}': a write into another CTA (to=) "
                                    f"has no GPU implementation yet")
                if eff.tx and not self.caps.tx_bytes:  # TMA byte counts
                    raise self.fail(f"agent {a.name}: op {op.name!r} exists only on "
                                    f"{_only('tx_bytes')}")
                if eff.issues == "copy" and (op.n % BULK_ALIGN or op.n == 0):
                    raise self.fail(f"agent {a.name}: 'copy {op.n}': cp.async.bulk needs a "
                                    f"byte count that is a positive multiple of {BULK_ALIGN}")
        if self.k > 1 and not self.caps.clusters:
            raise self.fail(f"cluster_size > 1 exists only on {_only('clusters')}")
        per_cta = [sum(1 for a in self.model.agents if a.cta == c) for c in range(self.k)]
        if max(per_cta) + self.replay > MAX_WARPS_PER_CTA:
            more = " with the replay warp" if self.replay else ""
            raise self.fail(f"{max(per_cta)} agents in one CTA{more}, more than the "
                            f"{MAX_WARPS_PER_CTA} warps of a 1024-thread block")
        self.warps = max(per_cta)
        self.threads = 32 * (self.warps + self.replay)

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
        lines.append(f"  c.ops_left = {sum(1 for _ in a.executed())};  // its steps (the last makes "
                     f"its CTA gone when it is the CTA's last agent)")
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
        if self.replay and a.ops:
            last = len(a.ops) - 1
            lines.append("  " + self.finish_call(i, last, a.ops[last][0].name, 0, 0))
        else:
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
        if self.replay:  # its turn on the schedule (cuda_ref/replay.py)
            out.append(f"{indent}if (!turn_op(c, {a}, q, {pc})) "
                       + self.turn_timeout(a, pc, op.name, r))
        out += [indent + line for line in code]
        return out

    # -------------------------------------------------------------- the whole source

    def source(self) -> str:
        m = self.model
        n_agents = len(m.agents)
        # -1: no agent; -2: the CTA's replay warp (a replay kernel's last warp)
        agent_of = [[-1] * self.warps + [-2] * self.replay for _ in range(self.k)]
        slot = [0] * self.k
        for i, a in enumerate(m.agents):
            agent_of[a.cta][slot[a.cta]] = i
            slot[a.cta] += 1
        table = ", ".join("{" + ", ".join(str(x) for x in row) + "}" for row in agent_of)
        init_lines = [line for rl in self.rings for line in self.device.init(rl)]
        dispatch = "\n".join(f"      case {i}: agent_{i}(c); break;" for i in range(n_agents))
        subs = {
            "@SPEC@": self.spec.name.replace("*/", "* /").replace("\n", " "),
            "@PATH@": str(self.path).replace("*/", "* /"),
            "@BACKEND@": self.backend,
            "@K@": str(self.k),
            "@NV@": self.device.nv_switch,
            "@RINGS@": str(m.rings),
            "@MAXS@": str(m.max_stages),
            "@NGATES@": str(max(len(m.barrier_names), 1)),
            "@WARPS@": str(self.warps + self.replay),
            "@THREADS@": str(self.threads),
            "@REPLAY@": "1" if self.replay else "0",
            "@NAGENTS@": str(n_agents),
            "@CLUSTER_ATTR@": f"__cluster_dims__({self.k}, 1, 1) " if self.k > 1 else "",
            "@AGENT_OF@": table,
            "@AGENTS_IN@": ", ".join(str(sum(1 for a in m.agents if a.cta == c and any(True for _ in a.executed())))
                                     for c in range(self.k)),
            "@INIT@": "\n".join(init_lines),
            "@SLOT_INIT@": self._slot_offsets(),
            "@DISPATCH@": dispatch,
            "@DEVICE_BACKENDS@": device_code(),   # each backend's, printed from its rules
            "@SWEEP_NS@": str(SWEEP_NS),
            "@SMEM_WORDS@": str(self.smem_bytes // 4),
            "@CHECK_DISPATCH@": self._check_dispatch(),
            "@TAG_OUT@": str(m.tag_prologue),  # tags from here on are not items
        }
        text = PRELUDE
        for key, value in subs.items():
            text = text.replace(key, value)
        parts = [text] + ([replay_code()] if self.replay else []) + [self.check_functions()]
        parts += [self.agent_function(i) for i in range(n_agents)]
        kernel = KERNEL
        for key, value in subs.items():
            kernel = kernel.replace(key, value)
        parts.append(kernel)
        return "\n\n".join(parts) + "\n"


def generate(spec_or_model, replay: bool = False) -> Generated:
    """Generate the reference kernel of a spec (or of its compiled model); `replay`: the kernel
    that runs under a trace's schedule (cuda_ref/replay.py)."""
    model = spec_or_model if isinstance(spec_or_model, Model) else compile_model(spec_or_model)
    g = _Gen(model, replay)
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
        backend=model.spec.backend, ctas=g.k, threads=g.threads, smem_bytes=g.smem_bytes,
        agents=[a.name for a in model.agents], agent_ctas=[a.cta for a in model.agents],
        agent_ops=[[(op.name, op.text or op.name) for op, _ in a.ops] for a in model.agents],
        ring_names=list(model.ring_names), rings=g.rings, src_words=g.src_words,
        src_fill=g.src_fill, max_events=max_events, max_records=max_records,
        hw_barriers=dict(g.hw), op_names=op_names,
        agent_tags=tags, agent_divs=[[op.tag_div for op, _ in a.ops] for a in model.agents],
        tag_prologue=model.tag_prologue if outside else None,
        tag_epilogue=model.tag_epilogue if outside else None, replay=replay)


# Each op's emitter, chosen by its effects (cuda_ref/emit_ops.py emitter_for); an op whose
# effects have no realisation is missing here, and the check below names it.
OP_EMITTERS = {name: fn for name, eff in OP_EFFECTS.items() if (fn := emitter_for(eff))}
# Ops the generator refuses by name, with why (`Generator.check` says it in one line).
NO_GPU_YET: dict[str, str] = {}
# Every other op of the language must have an emitter (a new op fails here, at import, in CI).
_missing = [op for op in OPS if op not in OP_EMITTERS and op not in NO_GPU_YET]
if _missing:  # pragma: no cover - guarded by tests/test_codegen.py
    raise GenerationError(f"cuda_ref/codegen.py: ops without a GPU emitter: {', '.join(_missing)}")
assert set(OP_CODES) == set(OPS)
assert (S.T_SELF, FULL, EMPTY) == (0, 0, 1)
