"""The exit rule in the GPU kernel and its log (issue 31), without a GPU.

Job 1: a live agent's arrive was logged as an update into a gone CTA. The kernel counted an
agent done in `ev_put`, when its last step was logged and BEFORE the step's effect; when that
last step is an arrive into its own CTA and the other agents have finished, the arrive's
`note_late` found its own CTA "gone" and marked the step `late` (the H200 measured it on every
run of tests/fixtures/gpu_exit/one_stage_release_last.toml: 20 of 20 logs inflight_at_exit,
0 of 20 conforming). A CTA is not gone while one of its agents runs, the agent's last step
included. Now the kernel counts the agent done in `gunlock`, after the step's effect
(`exit_check`), `note_late` looks only at other CTAs, and the log's classifier ignores a
`late` mark that names the agent's own CTA (logs of the old kernel).

Job 4: the exit rule revised on 2026-12-02 (DESIGN "inflight_at_exit", rules R1/R2). A CTA gone
with only its own copies or commits in flight is the warning unawaited_at_exit, not a failure
kind of a log (`exit_unawaited`); a peer CTA's copy or commit in flight then, or an update
issued at a gone peer CTA, is inflight_at_exit; a firing into a gone CTA is nothing by itself.
Conform agrees with the new engine on such logs.
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref import emit_device
from pipeproof.cuda_ref import log as L
from pipeproof.cuda_ref.conform import conform
from pipeproof.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
EXIT = ROOT / "tests" / "fixtures" / "gpu_exit"
ONE_STAGE = EXIT / "one_stage_release_last.toml"
ONE_STAGE_LOG = EXIT / "one_stage_release_last.run0.log.json"
REPLAYS = ROOT / "tests" / "fixtures" / "gpu_replay"


# ---------------------------------------------------------------- job 1: the H200 log


def test_the_spec_is_ok_and_its_consumer_releases_last():
    spec = load_spec(str(ONE_STAGE))
    assert verify(spec).verdict == "ok"
    m = compile_model(spec)
    consumer = next(a for a in m.agents if a.role == "consumer")
    last_pc = list(consumer.executed())[-1][0]
    assert consumer.ops[last_pc][0].name == "arrive_empty"


def test_a_live_agents_own_arrive_is_no_update_of_a_gone_cta():
    """The H200 log of the old kernel: the producer finished first, then the consumer's last
    step, its arrive_empty into its own CTA, carries `late: 0`. The run is ok and conforms."""
    spec = load_spec(str(ONE_STAGE))
    log = L.read_log(ONE_STAGE_LOG)
    last = log["events"][-1]
    assert (last["agent"], last["op"], last.get("late")) == ("consumer[0]", "arrive_empty", 0)
    assert log["outcome"] == "inflight_at_exit"    # what the old classifier said
    gen = G.generate(spec)
    outcome, kinds, stuck, notes = L.classify(gen, log["events"], False)
    assert (outcome, kinds, notes) == ("ok", [], [])
    fixed = dict(log, outcome=outcome)
    c = conform(spec, fixed)
    assert c.ok, c.message
    # the log as the old classifier left it cannot conform: the model has no gone CTA there
    assert not conform(spec, log).ok


def synthetic_log(spec, order):
    """A log of the model run in `order` (agent indices), one event per step, as the kernel
    records steps (stage and phase before the step)."""
    m = compile_model(spec)
    state, events, t = m.initial_state(), [], 1_800_000_000_000_000_000
    for a in order:
        op = m.current_op(state, a)
        stage, phase = m.ring_stage_phase(state, a, op)
        ev = {"t": t, "agent": m.agents[a].name, "op": op.name,
              "pc": m.agent_field(state, a, S.F_PC), "item": m.agent_field(state, a, S.F_ITEM),
              "stage": stage, "phase": phase, "result": "ok"}
        events.append(ev)
        state, bits, _ = m.apply(state, a)
        assert state is not None and bits == 0
        t += 32
    return m, events


def test_a_synthetic_log_with_the_consumer_last():
    """The same interleaving built from the model (the producer's whole program, then the
    consumer's), with the mark the old kernel put on the consumer's last arrive."""
    spec = load_spec(str(ONE_STAGE))
    m = compile_model(spec)
    prod = next(i for i, a in enumerate(m.agents) if a.role == "producer")
    cons = next(i for i, a in enumerate(m.agents) if a.role == "consumer")
    order = []
    for _ in range(m.agents[prod].items):  # 1 stage: the producer waits for each release
        order += [prod] * 4 + [cons] * 4
    m, events = synthetic_log(spec, order)
    assert events[-1]["op"] == "arrive_empty" and events[-1]["agent"] == "consumer[0]"
    events[-1]["late"] = 0
    gen = G.generate(spec)
    assert L.classify(gen, events, False)[:2] == ("ok", [])
    log = L.make_log(str(ONE_STAGE), "synthetic", "test", 0, 0, "ok", events)
    assert conform(spec, log).ok


def test_the_kernel_counts_an_agent_done_after_its_last_steps_effect():
    """Device side of the fix: ev_put only notes the last step; gunlock, after the step's
    effect and before the lock is released, counts the agent done (exit_check); note_late
    skips the agent's own CTA and marks a given record."""
    src = emit_device.PRELUDE
    put = src[src.index("__device__ void ev_put("):src.index("// ---- perturbation")]
    assert "CTL_DONE" not in put and "c.exit_due = 1u" in put
    unlock = src[src.index("__device__ __forceinline__ void gunlock("):]
    unlock = unlock[:unlock.index("\n}\n")]
    assert unlock.index("exit_check(c)") < unlock.index("atomicExch(c.ctl + 3, 0u)")
    check = src[src.index("__device__ void exit_check(const Ctx& c) {"):]
    check = check[:check.index("\n}\n")]
    assert "atomicAdd(c.ctl + CTL_DONE + c.cta" in check and "EXIT_UNAWAITED" in check
    late = src[src.index("void note_late("):]
    late = late[:late.index("\n}\n")]
    assert "d != c.cta" in late
    g = G.generate(load_spec(str(ONE_STAGE)))
    assert "c.exit_due = 0u" in g.source   # every Ctx that may reach gunlock starts clear


# ---------------------------------------------------------------- job 4: the revised exit rule


def rows_to_events(gen, rows):
    ev = np.zeros((gen.max_events, G.EV_W), dtype=np.int32)
    for i, r in enumerate(rows):
        ev[i] = [v - (1 << 32) if v >= 1 << 31 else v for v in r]
    return L.decode_events(gen, ev.ravel(), np.zeros(0, dtype=np.uint64), 0)


def row(i, agent, op, pc, flags=0, t0=1_795_000_000_000_000_000, x1=0):
    t = t0 + 32 * i
    return [t & 0xFFFFFFFF, t >> 32, i, agent, op, pc, 0, 0, 0, 0, 0, 0, 0, x1, flags, 1]


def test_exit_flags_are_decoded_and_classified():
    spec = load_spec(str(ROOT / "spec" / "examples" / "bug_cutlass_no_producer_tail.toml"))
    gen = G.generate(spec)
    a0 = gen.agents.index("cta0.consumer[0]")
    arrive, adv = G.OP_CODES["arrive_empty"], G.OP_CODES["advance"]
    events = rows_to_events(gen, [
        row(0, a0, adv, 3, flags=G.EV_EXIT_UNAWAITED),                 # own entries only
        row(1, a0, arrive, 2, flags=G.EV_LATE_TARGET | (0 << 8)),      # its own CTA: no
        row(2, a0, G.EV_OP_FIRE, -1, flags=G.EV_LATE_TARGET | (1 << 8), x1=1)])  # a firing: no
    assert events[0]["exit_unawaited"] and "exit_inflight" not in events[0]
    outcome, kinds, _, notes = L.classify(gen, events, False)
    assert (outcome, kinds, notes) == ("ok", [], [])
    assert L.RunReport(L.make_log("s", "d", "c", 0, 0, "ok", events), []).warnings
    # the strict reading (--strict-exit) makes the warning inflight_at_exit
    assert L.classify(gen, events, False, strict_exit=True)[1] == ["inflight_at_exit"]
    # a peer CTA's copy or commit in flight at exit, an arrive issued at a gone peer: violations
    for flags in (G.EV_EXIT_INFLIGHT, G.EV_LATE_TARGET | (1 << 8)):
        ev = rows_to_events(gen, [row(0, a0, arrive, 2, flags=flags)])
        outcome, kinds, _, notes = L.classify(gen, ev, False)
        assert (outcome, kinds) == ("inflight_at_exit", ["inflight_at_exit"]) and notes


def test_a_cta_gone_with_its_own_commits_in_flight_conforms_as_a_warning():
    """bug_input_tile_no_drain's H200 replay log (old kernel, before the revised rule): the
    MMA warp's last step leaves the CTA gone with its own tcgen05 commits in flight. The new
    kernel marks that step `exit_unawaited`: the log is `ok` with a warning, and conform,
    stepping the new engine, agrees (the model reports no inflight_at_exit; under
    strict_exit it does)."""
    spec = load_spec(str(REPLAYS / "bug_input_tile_no_drain.toml"))
    old = L.read_log(REPLAYS / "bug_input_tile_no_drain.run1.log.json")
    assert old["outcome"] == "inflight_at_exit"
    new = copy.deepcopy(old)
    marked = [e for e in new["events"] if e.pop("exit_inflight", False)]
    assert len(marked) == 1
    marked[0]["exit_unawaited"] = True
    gen = G.generate(spec, replay=True)
    outcome, kinds, _, _ = L.classify(gen, new["events"], False)
    assert (outcome, kinds) == ("ok", [])
    assert L.RunReport(dict(new, outcome=outcome), kinds).warnings
    new["outcome"] = outcome
    c = conform(spec, new)
    assert c.ok, c.message
    assert verify(spec).verdict == "ok"     # the engine's verdict: a warning only
    strict = compile_model(spec, strict_exit=True)
    assert conform(strict, old).ok           # and, strict, the old log's violation


def test_the_replay_kernel_fires_an_agents_commits_in_issue_order():
    """R1 in the replay kernel: a commit after the schedule waits for the agent's scheduled
    commits (wait_commits), a replay warp's post-trace fire for the agent's earlier entries
    (h[8]), and every fire counts the agent's fired entries."""
    spec = load_spec(str(ROOT / "spec" / "examples" / "mojo_input_tile_cluster2_k2.toml"))
    g = G.generate(spec, replay=True)
    assert "wait_commits(c, " in g.source and "c.rs + 1 + N_AGENTS + h[6]" in g.source
    assert "(u32)h[8]" in g.source
    fire = g.source[g.source.index("__device__ void helper_fire("):]
    fire = fire[:fire.index("\n}\n")]
    assert "note_late" not in fire          # a firing into a gone CTA: not marked (R2)
    free = G.generate(spec)
    assert "wait_commits(c, " not in free.source


def test_every_reader_of_a_copy_records_region_masks_the_source_cta():
    """Copy records carry their source CTA in meta bits 56..62 (exit_inflight vs
    exit_unawaited); every reader of the region offset (bits 32..55) must mask it off. The
    H200 showed what happens otherwise: the replay warp of a 2-CTA cluster issued a bulk copy
    from a peer's record to an offset 16 MiB out of shared memory and stopped (every replay of
    tests/fixtures/gpu_cluster/cutlass_cluster2_release_before_read.toml hung at its first
    landing of the peer's copy)."""
    spec = load_spec(str(ROOT / "tests" / "fixtures" / "gpu_cluster"
                         / "cutlass_cluster2_release_before_read.toml"))
    for replay in (False, True):
        src = G.generate(spec, replay=replay).source
        macro = "REC_REGION(m) ((u32)(((m) >> 32) & 0xffffffull))"
        assert macro in src and ">> 32) &" not in src.replace(macro, "")
        assert src.count("REC_REGION(meta)") >= (5 if replay else 3)
