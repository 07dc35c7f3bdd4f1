"""`pipeproof gpu SPEC --replay`: the schedule of a trace, the replay kernel's source, and the
H200 replay logs in tests/fixtures/gpu_replay/, without a GPU.

The schedule is built from the model's counterexample (or an ITF file) and walked through the
kernel's turn protocol on the CPU (cuda_ref/replay_sim.py); the replay kernel is generated for
every example (and compiled where nvcc is installed); each recorded log is replayed through
the model again (conform), checked against the schedule it ran under, and judged again.
"""
from __future__ import annotations

import glob
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref import log as L
from pipeproof.cuda_ref import replay as R
from pipeproof.cuda_ref.replay_sim import SimError, simulate
from pipeproof.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "gpu_replay"
EXAMPLES = sorted(glob.glob(str(ROOT / "spec" / "examples" / "*.toml")))
NVCC = shutil.which("nvcc") or shutil.which("/usr/local/cuda/bin/nvcc")


def model_and_result(path):
    spec = load_spec(path)
    return compile_model(spec), verify(spec)


@pytest.fixture(scope="module")
def violations():
    out = {}
    for path in EXAMPLES:
        m, res = model_and_result(path)
        if res.verdict == "violation":
            out[Path(path).stem] = (m, res)
    return out


# ---------------------------------------------------------------- the schedule


def test_every_counterexample_of_every_example_walks_the_turn_protocol(violations):
    """Each kind's shortest trace (plus its extension) is taken whole, in order, by the warps
    the schedule names: no warp waits for a step that never comes."""
    assert violations
    for name, (m, res) in violations.items():
        for kind in res.kinds:
            sched = R.from_trace(m, res.traces[kind])
            taken = simulate(m, sched)
            assert [t for t, _, _ in taken] == list(range(sched.total)), (name, kind)
            assert [c for _, _, c in taken] == [s.code for s in sched.steps], (name, kind)


def test_schedule_steps_name_the_trace_actions(violations):
    m, res = violations["x_async_release_before_wait"]
    trace = res.traces["overwrite_before_drain"]
    sched = R.from_trace(m, trace)
    assert sched.trace_steps == len(trace.steps) == 16
    assert [s.action for s in sched.steps[:16]] == [s.action for s in trace.steps]
    kinds = [s.kind for s in sched.steps]
    assert kinds.count("land") == 2 and kinds[8] == "land" and kinds[15] == "land"
    # the landing of item 2 is the copy issued at step 15 (turn 14); item 1's never lands
    assert sched.steps[15].issue == 14 and sched.steps[8].issue == 2
    # then the victim's async read finishes: the overwritten tile is checked
    assert sched.victim == "wgmma[0]"
    assert sched.steps[16].kind == "finish" and sched.steps[16].extension
    assert sched.steps[16].action.startswith("wgmma[0].read_async.finish(")


def test_overwrite_extension_ends_at_the_victims_read(violations):
    m, res = violations["bug_release_before_read"]
    sched = R.from_trace(m, res.traces["overwrite_before_drain"])
    assert (sched.trace_steps, sched.total) == (12, 13)
    last = sched.steps[-1]
    assert last.extension and last.action.startswith("consumer[0].read(stage=0, item=0")


def test_buffer_layout(violations):
    m, res = violations["x_async_release_before_wait"]
    sched = R.from_trace(m, res.traces["overwrite_before_drain"])
    buf = sched.buffer()
    assert buf[:4] == [sched.total, len(m.agents), m.ctas, 0]
    for a in range(len(m.agents)):
        off, n, foff, nf = buf[R.HDR + 4 * a:R.HDR + 4 * a + 4]
        mine = [s for s in sched.steps if s.kind == "agent" and s.agent == a]
        assert [buf[off + 2 * k:off + 2 * k + 2] for k in range(n)] == [[s.index, s.pc] for s in mine]
        assert buf[foff:foff + nf] == [s.index for s in sched.steps if s.kind == "finish" and s.agent == a]
    off, n, _, _ = buf[R.HDR + 4 * len(m.agents):R.HDR + 4 * len(m.agents) + 4]
    W = R.HELPER_W
    rows = [buf[off + W * k:off + W * k + W] for k in range(n)]
    assert [(r[0], r[1], r[2]) for r in rows] == [(8, R.H_LAND, 2), (15, R.H_LAND, 14)]


def strict(name):
    """(model, result) of an example under the strict exit rule (--strict-exit): a CTA gone
    with its own copies or commits in flight is inflight_at_exit, as before 2026-12-02."""
    spec = load_spec(str(ROOT / "spec" / "examples" / f"{name}.toml"))
    return compile_model(spec, strict_exit=True), verify(spec, strict_exit=True)


def test_commits_fire_at_their_steps_and_after_the_trace():
    # bug_input_tile_no_drain: its own commits in flight at exit, a violation only when strict
    m, res = strict("bug_input_tile_no_drain")
    sched = R.from_trace(m, res.traces["inflight_at_exit"])
    fires = [s for s in sched.steps if s.kind == "fire"]
    assert fires and all(s.cta == 0 and s.n == 1 for s in fires)
    mma = next(i for i, a in enumerate(m.agents) if a.role == "consumer")
    assert all(s.by == mma for s in fires)   # each fire knows the commit's agent
    # the commit issued at the trace's end is fired by the replay warp after the trace, once
    # the agent's commit entries issued before it have fired (DESIGN R1)
    post = sched.post_commits
    assert (0, 0, 0, 1) in [c[:4] for c in post]
    # (the stage-1 commit, issued first, fires first: each waits for the ones before it)
    assert [(c[2], c[4], c[6], c[7]) for c in post] == [(1, mma, len(fires), 0),
                                                        (0, mma, len(fires) + 1, 0)]
    assert sched.observability.observable and sched.observability.gpu_kind == "inflight_at_exit"


def test_a_broken_schedule_is_caught_by_the_walk(violations):
    m, res = violations["bug_release_before_read"]
    sched = R.from_trace(m, res.traces["overwrite_before_drain"])
    sched.steps[3], sched.steps[8] = sched.steps[8], sched.steps[3]  # two agents' steps swapped
    for i, s in enumerate(sched.steps):
        s.index = i
    with pytest.raises(SimError):
        simulate(m, sched)


# ---------------------------------------------------------------- what the GPU can show


OBSERVABLE = {
    "bug_amd_arrive_count_off_by_one": ("deadlock", "deadlock"),
    "bug_consumer_phase1_nvidia": ("read_before_fill", "read_before_fill"),
    "bug_release_before_read": ("overwrite_before_drain", "overwrite_before_drain"),
    "x_async_release_before_wait": ("overwrite_before_drain", "overwrite_before_drain"),
    "bug_every_lane_expect_tx": ("over_arrival", "trap"),
    "bug_expect_tx_over_limit": ("tx_range", "trap"),
    "bug_cutlass_no_producer_tail": ("inflight_at_exit", "inflight_at_exit"),
}
NOT_OBSERVABLE = {
    "bug_lapped_observer": "phase_alias",
    "bug_consumer_count_too_few": "over_arrival",   # the barrier ran two phases ahead
}


@pytest.mark.parametrize("name", sorted(OBSERVABLE))
def test_observable_kinds(violations, name):
    m, res = violations[name]
    kind, gpu_kind = OBSERVABLE[name]
    sched, _ = R.from_model(m, res)
    assert sched is not None and sched.kind == kind
    assert sched.observability.observable and sched.observability.gpu_kind == gpu_kind


@pytest.mark.parametrize("name", sorted(NOT_OBSERVABLE))
def test_kinds_the_gpu_cannot_show_are_said_with_the_reason(violations, name):
    m, res = violations[name]
    sched, unseen = R.from_model(m, res)
    assert sched is None
    assert [k for k, _ in unseen] == [NOT_OBSERVABLE[name]]
    assert all(why for _, why in unseen)


def test_a_read_while_a_copy_is_in_flight_is_replayed_as_the_overwrite(violations):
    """bug_prologue_tile_released_early: read_before_fill (the tag matches, a copy into the
    slot is in flight: not observable) and overwrite_before_drain at the same depth."""
    m, res = violations["bug_prologue_tile_released_early"]
    sched, unseen = R.from_model(m, res)
    assert sched.kind == "overwrite_before_drain"
    assert [k for k, _ in unseen] == ["read_before_fill"]


# ---------------------------------------------------------------- ITF files


def test_an_itf_trace_written_by_verify_replays_as_the_model_trace(tmp_path, violations):
    spec = ROOT / "spec" / "examples" / "x_async_release_before_wait.toml"
    out = tmp_path / "t.itf.json"
    r = subprocess.run([sys.executable, "-m", "pipeproof.checker.cli.main", "verify", str(spec),
                        "--trace", str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr  # the violation the example declares: a self-test
    m, res = violations["x_async_release_before_wait"]
    a = R.from_itf(m, str(out))
    b = R.from_trace(m, res.traces["overwrite_before_drain"])
    assert [s.code for s in a.steps] == [s.code for s in b.steps]
    assert a.source == str(out) and b.source == "model"


def test_a_trace_of_another_spec_is_refused_in_one_line(tmp_path, violations):
    m, _ = violations["bug_release_before_read"]
    doc = {"#meta": {"violation": "deadlock"}, "states": [
        {"#meta": {"index": 0}, "action": "init"},
        {"#meta": {"index": 1, "actor": "wgmma[0]"}, "action": "wgmma[0].wait_full(stage=0, phase=0)"}]}
    p = tmp_path / "x.itf.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(R.ReplayError, match=r"step 1 .* is not a step of the model") as err:
        R.from_itf(m, str(p))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- the replay kernel


def test_replay_kernel_source():
    g = G.generate(load_spec(str(ROOT / "spec/examples/x_async_release_before_wait.toml")), replay=True)
    free = G.generate(load_spec(str(ROOT / "spec/examples/x_async_release_before_wait.toml")))
    assert g.replay and not free.replay
    assert "#define REPLAY 1" in g.source and "#define REPLAY 0" in free.source
    assert g.threads == free.threads + 32            # one replay warp per CTA
    assert "replay_helper(c)" in g.source and "turn_op(" not in free.source
    # every op takes its turn, and a scheduled copy is left to the replay warp
    n_ops = sum(len(ops) for ops in g.agent_ops)
    assert g.source.count("if (!turn_op(c, ") == n_ops
    assert "(c.sched_op ? c.turn : -1)" in g.source
    assert "mbarrier.complete_tx.relaxed.cta.shared::cta.b64" in g.source
    assert "{-1, -1, -2}" in g.source or "-2}" in g.source   # the replay warp's slot in AGENT_OF


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).name)
def test_every_example_has_a_replay_kernel_or_is_refused_in_one_line(path):
    try:
        g = G.generate(load_spec(path), replay=True)
    except G.GenerationError as err:
        assert "\n" not in str(err)
        return
    assert g.threads <= 1024 and g.replay


@pytest.mark.skipif(not NVCC, reason="nvcc is not installed")
@pytest.mark.parametrize("name", ["x_async_release_before_wait", "bug_cutlass_no_producer_tail"])
def test_replay_kernel_compiles_for_sm90(tmp_path, name):
    g = G.generate(load_spec(str(ROOT / f"spec/examples/{name}.toml")), replay=True)
    cu = tmp_path / f"{name}.cu"
    cu.write_text(g.source)
    r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++17", str(cu), "-o",
                        str(tmp_path / f"{name}.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


# ---------------------------------------------------------------- decoding


def test_turn_timeouts_and_exit_marks_are_decoded():
    import numpy as np
    g = G.generate(load_spec(str(ROOT / "spec/examples/bug_release_before_read.toml")), replay=True)
    ev = np.zeros((g.max_events, G.EV_W), dtype=np.int32)
    t0 = 1_795_000_000_000_000_000
    def row(i, t, agent, op, pc, result=0, x0=0, x1=0, flags=0):
        r = [t & 0xFFFFFFFF, t >> 32, i, agent, op, pc, 0, 0, 0, 0, 0, result, x0, x1, flags, 1]
        return [v - (1 << 32) if v >= 1 << 31 else v for v in r]
    ev[0] = row(0, t0, 1, G.OP_CODES["wait_full"], 0, result=G.RESULT_TIMEOUT, x0=7, x1=1)
    ev[1] = row(1, t0 + 5, 0, G.OP_CODES["wait_empty"], 0, flags=G.EV_LATE_TARGET | (1 << 8))
    events = L.decode_events(g, ev.ravel(), np.zeros(0, dtype=np.uint64), 0)
    assert events[0]["turn"] == 7 and events[0]["result"] == "timeout"
    assert events[1]["late"] == 1
    outcome, kinds, stuck, notes = L.classify(g, events, False)
    assert "inflight_at_exit" in kinds and "deadlock" in kinds
    assert "waiting for its turn at step 8 of the replay" in stuck[0]


# ---------------------------------------------------------------- the H200 replay logs


def fixture_logs():
    return sorted(FIXTURES.glob("*.log.json")) if FIXTURES.is_dir() else []


# Logs recorded before the exit rule was revised (2026-12-02) whose inflight_at_exit is a CTA
# gone with only its OWN commits in flight: the warning unawaited_at_exit now, the violation
# under --strict-exit, which is how they are checked (their kernel marked every in-flight
# entry at exit alike).
STRICT_EXIT = {"bug_input_tile_no_drain"}


def _schedule_for(path: Path, log):
    """The spec (the fixture's copy) and the schedule its log ran under: the replay of the
    trace beside it (`pipeproof gpu --replay --log-dir` writes the model's trace there)."""
    stem = path.name.split(".run")[0]
    spec = load_spec(str(FIXTURES / f"{stem}.toml"))
    m = compile_model(spec, strict_exit=stem in STRICT_EXIT)
    trace = log["replay"]["trace"]
    itf = FIXTURES / (f"{stem}.itf.json" if trace == "model" else Path(trace).name)
    return spec, m, R.from_itf(m, str(itf))


@pytest.mark.parametrize("path", fixture_logs(), ids=lambda p: p.name)
def test_h200_replay_logs_conform_follow_their_schedule_and_reproduce(path):
    from pipeproof.cuda_ref.conform import conform
    log = L.read_log(path)
    spec, m, sched = _schedule_for(path, log)
    assert log["replay"]["kind"] == sched.kind and log["replay"]["steps"] == sched.total
    c = conform(m, log)
    assert c.ok, c.message
    # the agents' steps happened in the schedule's order (landings and fires too)
    steps = [e for e in log["events"] if e.get("result") != "timeout"]
    want = [s.actor for s in sched.steps]
    got = [e["agent"] for e in steps[:len(want)]]
    if log["outcome"] != "trap":
        assert got == want
    gen = G.generate(spec, replay=True)
    outcome, kinds, stuck, mism = L.classify(gen, log["events"], log["outcome"] == "trap",
                                             strict_exit=m.strict_exit, replay=log["replay"])
    assert outcome == log["outcome"]
    rep = L.RunReport(log, kinds, stuck, mism)
    verdict, why = R.judge(sched, rep)
    expected = "reproduced" if sched.observability.observable else "not observable"
    assert verdict == expected, why


# ---------------------------------------------------------------- slot parts (rings filled by write and copy)

PARTS = ROOT / "tests" / "fixtures" / "gpu_parts"
PART_SPECS = sorted(PARTS.glob("*.toml"))


@pytest.mark.parametrize("path", PART_SPECS, ids=lambda p: p.name)
def test_part_specs_have_their_verdict_and_a_region_per_part(path):
    spec = load_spec(str(path))
    res = verify(spec)
    assert (res.verdict if res.verdict == "ok" else res.kind) == spec.expect
    g = G.generate(spec)
    m = compile_model(spec)
    for rl, parts in zip(g.rings, m.parts):
        assert len(rl.parts) == len(parts)
        ends = [(p.offset, p.offset + p.nbytes) for p in rl.parts]
        assert all(a[1] <= b[0] for a, b in zip(ends, ends[1:]))   # disjoint, in order
        for reg in rl.regions:   # each copy lands in its own part's region
            assert any(p.offset == reg.offset and p.nbytes >= reg.nbytes for p in rl.parts)
    if res.verdict == "violation":
        sched, _ = R.from_model(m, res)
        assert sched.observability.observable
        simulate(m, sched)


def part_logs():
    return sorted(PARTS.glob("*.log.json")) if PARTS.is_dir() else []


@pytest.mark.parametrize("path", part_logs(), ids=lambda p: p.name)
def test_h200_part_logs_conform_and_show_the_verdict(path):
    """Free runs of the correct part specs end ok; replays of the buggy ones reproduce."""
    from pipeproof.cuda_ref.conform import conform
    log = L.read_log(path)
    stem = path.name.split(".run")[0]
    spec = load_spec(str(PARTS / f"{stem}.toml"))
    c = conform(spec, log)
    assert c.ok, c.message
    if "replay" in log:
        m = compile_model(spec)
        sched = R.from_itf(m, str(PARTS / f"{stem}.itf.json"))
        gen = G.generate(spec, replay=True)
        outcome, kinds, stuck, mism = L.classify(gen, log["events"], log["outcome"] == "trap")
        assert R.judge(sched, L.RunReport(log, kinds, stuck, mism))[0] == "reproduced"
    else:
        assert log["outcome"] == "ok" == spec.expect


# ---------------------------------------------------------------- issue 31: the overwrite's own kind

CLUSTER = ROOT / "tests" / "fixtures" / "gpu_cluster"


def _cluster():
    spec = load_spec(str(CLUSTER / "cutlass_cluster2_release_before_read.toml"))
    m = compile_model(spec)
    return spec, m, R.from_itf(m, str(CLUSTER / "cutlass_cluster2_release_before_read.itf.json"))


def test_a_cluster_overwrite_schedule_names_what_the_victims_read_must_find():
    """2-CTA multicast: the shortest overwrite_before_drain trace lands item 2 over item 0 in
    cta1's slot 0; the schedule then takes cta1's consumer to its read of that slot, and says
    which tag that read must find (the log's `replay.overwrite`)."""
    spec, m, sched = _cluster()
    assert sched.kind == "overwrite_before_drain" and sched.observability.observable
    assert sched.overwrite == {"agent": "cta1.consumer[0]", "cta": 1, "ring": "main",
                               "stage": 0, "old": 0, "new": 2}
    assert sched.meta()["overwrite"] == sched.overwrite
    assert R._reads_slot_at_end(m, [s.code for s in sched.steps], m.agents.index(
        next(a for a in m.agents if a.name == "cta1.consumer[0]")), (1, 0, 0))
    assert not R._reads_slot_at_end(m, [s.code for s in sched.steps][:-1], 0, (1, 0, 0))
    simulate(m, sched)


def test_the_h200_cluster_replay_log_reproduces_the_overwrite():
    """The H200's replay of that trace (issue 31, 4 of 4 reproduced): the log conforms and is
    judged again as reproduced."""
    from pipeproof.cuda_ref.conform import conform
    spec, m, sched = _cluster()
    log = L.read_log(CLUSTER / "cutlass_cluster2_release_before_read.run0.log.json")
    assert conform(m, log).ok
    gen = G.generate(spec, replay=True)
    outcome, kinds, stuck, mism = L.classify(gen, log["events"], False, replay=sched.meta())
    assert outcome == "overwrite_before_drain"
    assert R.judge(sched, L.RunReport(log, kinds, stuck, mism))[0] == "reproduced"


def test_an_older_tag_stored_over_a_newer_one_is_the_overwrite_in_a_replay():
    """The tag order alone calls a read that finds an EARLIER tag read_before_fill. When the
    schedule's overwrite stored that earlier tag over the one the victim expects (a lagging
    landing over a newer item), the victim's read finding it is the trace's own kind."""
    spec, m, sched = _cluster()
    gen = G.generate(spec, replay=True)
    read = {"t": 5, "agent": "cta1.consumer[0]", "op": "read", "pc": 2, "item": 2,
            "stage": 0, "phase": 1, "result": "tag_mismatch", "found": 0}
    assert L.classify(gen, [read], False)[:2] == ("read_before_fill", ["read_before_fill"])
    meta = dict(sched.meta(), overwrite=dict(sched.overwrite, old=2, new=0))
    assert L.classify(gen, [read], False, replay=meta)[:2] == (
        "overwrite_before_drain", ["overwrite_before_drain"])
    # another agent's read, another slot or another tag found is not the victim's evidence
    for other in ({"agent": "cta0.consumer[0]"}, {"stage": 1}, {"found": -1}):
        assert L.classify(gen, [dict(read, **other)], False, replay=meta)[0] == "read_before_fill"
