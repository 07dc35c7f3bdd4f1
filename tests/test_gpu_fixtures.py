"""The host side of the GPU reference kernels, without a GPU: event decoding, run outcomes,
the crosscheck rules, the commands without CuPy, and the H200 logs in tests/fixtures/gpu/.

(tests/test_conform.py replays every fixture through conform as well; here each fixture is
also checked against the generated kernel's program and its outcome recomputed, and tampered
copies of the fixtures must be rejected.)
"""
from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref import log as L
from pipeproof.cuda_ref.commands import _ModelFacts, check_rules
from pipeproof.spec.load import load_spec
from tests.paths import EXAMPLE_NAMES, GPU_FIXTURES, ROOT, load_example

PAIRS = sorted(p.with_suffix("").with_suffix("") for p in GPU_FIXTURES.glob("*.log.json"))
HAVE_CONFORM = importlib.util.find_spec("pipeproof.cuda_ref.conform") is not None

# examples with a tile-level ring or an async write (issue 47): the GPU generator refused them
# when the crosschecks of issue 31 ran; their own crosscheck is crosscheck_issue47.json (H100)
_ISSUE47_ON_GPU = ["x_fa3_persistent_ok.toml", "x_fa3_persistent_q_released_early.toml",
                   "x_tcgen05_gemm_acc_arrive_not_commit.toml", "x_tcgen05_gemm_acc_async_ok.toml",
                   "x_tcgen05_gemm_acc_freed_early.toml", "x_tcgen05_gemm_acc_ring_ok.toml"]
# a write into another CTA (to=, a 2-SM leader MMA): the generator refuses it, no crosscheck
_NO_GPU = ["x_tcgen05_2sm_ok.toml", "x_tcgen05_2sm_arrive_not_commit.toml"]
_NESTED = _ISSUE47_ON_GPU + _NO_GPU
# expect_bytes, mbarrier.expect_tx without an arrival (issue 48): crosscheck_issue48.json
_ISSUE48_ON_GPU = ["x_expect_bytes_ok.toml", "bug_arrive_before_expect_bytes.toml"]
_LATER = _NESTED + _ISSUE48_ON_GPU   # the examples that came after the issue-31 crosscheck
assert set(_LATER) <= set(EXAMPLE_NAMES)


def load_pair(stem: Path):
    spec = load_spec(str(stem) + ".toml")
    with open(str(stem) + ".log.json") as f:
        return spec, json.load(f)


# ---------------------------------------------------------------- decoding raw buffers

def raw_event(i, t, agent, op, pc, item, ring, stage, phase, result=0, x0=0, x1=0):
    row = [t & 0xFFFFFFFF, t >> 32, i, agent, op, pc, item, ring, stage, phase, 0, result, x0, x1, 0, 1]
    return [v - (1 << 32) if v >= 1 << 31 else v for v in row]


def test_decode_orders_events_and_places_landings_before_their_observer():
    g = G.generate(load_spec("spec/examples/mojo_input_tile_nvidia.toml"))
    ev = np.zeros((g.max_events, G.EV_W), dtype=np.int32)
    t0 = 1_795_000_000_000_000_000
    ev[0] = raw_event(0, t0, 0, 1, 0, 0, 0, 0, 1)                  # producer wait_empty
    ev[1] = raw_event(1, t0 + 32, 0, 6, 1, 0, 0, 0, 1, x0=16384)   # expect_tx
    ev[2] = raw_event(2, t0 + 64, 0, 7, 2, 0, 0, 0, 1, x0=16384)   # copy
    ev[4] = raw_event(4, t0 + 96, 1, 0, 0, 0, 0, 0, 0)             # consumer wait_full
    ev[5] = raw_event(5, t0 + 128, 1, 9, 1, 0, 0, 0, 0, result=2, x0=-1)
    ev[6] = raw_event(6, t0 + 999, 1, 0, 0, 1, 0, 1, 0, result=1)  # timeout
    rec = np.zeros((g.max_records, G.REC_W), dtype=np.uint64)
    rec[0] = [(1 << 63), 0 | (16384 << 32), t0 + 64, 2 | (4 << 32), 4, t0 + 96]
    events = L.decode_events(g, ev.ravel(), rec.ravel(), 1)
    assert [e["op"] for e in events] == ["wait_empty", "expect_tx", "copy", "land", "wait_full",
                                         "read", "wait_full"]
    land = events[3]
    assert land == {"t": t0 + 96, "agent": "cta0.copy", "op": "land", "cta": 0, "stage": 0,
                    "item": 0, "bytes": 16384, "result": "ok"}
    assert events[5]["result"] == "tag_mismatch" and events[5]["found"] == -1
    assert events[6]["result"] == "timeout" and events[6]["stage"] == 1
    outcome, kinds, stuck, mism = L.classify(g, events, False, [1, 2])
    assert outcome == "read_before_fill" and kinds == ["deadlock", "read_before_fill"]
    assert stuck == ["consumer[0] at pc 0 'wait_full' (stage 1, phase 0, item 1)"]
    assert mism == ["consumer[0] read of item 0 from cta0.slot[0] found nothing (read_before_fill)"]


def test_decode_try_skip_fire_finish_and_rings():
    g = G.generate(load_spec("spec/examples/x_mojo_sm100_matmul.toml"))
    names = g.agents
    mma = names.index("mma[0]")
    acc = g.ring_names.index("acc")
    ev = np.zeros((g.max_events, G.EV_W), dtype=np.int32)
    ev[0] = raw_event(0, 10, mma, 1, 0, 0, acc, 0, 1)                            # wait_empty ring=acc
    ev[1] = raw_event(1, 20, mma, G.EV_OP_FIRE, -1, 0, 0, 1, 0, x0=1, x1=0)      # fire
    ev[2] = raw_event(2, 30, mma, G.EV_OP_FINISH, 3, 4, 0, 0, 0, result=2, x0=6)  # overwritten
    events = L.decode_events(g, ev.ravel(), np.zeros(0, dtype=np.uint64), 0)
    assert events[0]["ring"] == "acc" and events[0]["op"] == "wait_empty"
    assert events[1] == {"t": 20, "agent": "cta0.commit", "op": "fire", "cta": 0, "stage": 1,
                         "n": 1, "result": "ok"}
    fin = events[2]
    assert fin["op"] == "finish" and fin["result"] == "ok" and fin["overwritten"] and fin["found"] == 6
    outcome, kinds, _, mism = L.classify(g, events, False, None)
    assert outcome == "overwrite_before_drain" and "async read (finish)" in mism[0]


def test_trapped_run_outcome():
    g = G.generate(load_spec("spec/examples/bug_every_lane_expect_tx.toml"))
    assert L.classify(g, [], True)[0:2] == ("trap", ["trap"])


def test_log_document_has_exactly_the_schema_keys(tmp_path):
    doc = L.make_log("s.toml", "dev", "cmd", 3, 1, "ok", [])
    assert tuple(doc) == L.LOG_KEYS
    L.write_log(doc, tmp_path / "x.log.json")
    assert L.read_log(tmp_path / "x.log.json") == doc
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a pipeproof GPU log"):
        L.read_log(tmp_path / "bad.json")


# ---------------------------------------------------------------- crosscheck rules

class Conf:
    def __init__(self, ok, index=None, message=""):
        self.ok, self.index, self.message = ok, index, message


def report(outcome, kinds=None, run=0):
    return L.RunReport(L.make_log("s", "d", "c", 0, run, outcome, []),
                       kinds if kinds is not None else ([] if outcome == "ok" else [outcome]))


@pytest.fixture(scope="module")
def facts():
    return {name: _ModelFacts(load_spec(f"spec/examples/{name}.toml"))
            for name in ("mojo_pcp_nvidia", "bug_producer_phase0_nvidia",
                         "bug_consumer_count_too_few", "bug_every_lane_expect_tx",
                         "bug_expect_tx_over_limit")}


def test_rule_1_model_ok_means_no_gpu_failure(facts):
    f = facts["mojo_pcp_nvidia"]
    assert check_rules(f, [report("ok"), report("ok")], None)[0] == []
    broken, _ = check_rules(f, [report("ok"), report("deadlock")], None)
    assert broken and broken[0].startswith("R1:")


def test_rule_2_gpu_kinds_must_be_model_kinds(facts):
    f = facts["bug_consumer_count_too_few"]  # over_arrival at the shortest depth
    broken, notes = check_rules(f, [report("deadlock")], None)
    assert broken == [] and "deadlock (reachable)" in notes
    broken, _ = check_rules(facts["bug_producer_phase0_nvidia"], [report("deadlock"),
                                                                  report("read_before_fill")], None)
    assert any(b.startswith("R2: GPU read_before_fill") for b in broken)
    # a trap is the model's over_arrival or tx_range
    assert check_rules(facts["bug_every_lane_expect_tx"], [report("trap")], None)[0] == []


def test_rule_3_every_path_deadlocks(facts):
    f = facts["bug_producer_phase0_nvidia"]
    broken, notes = check_rules(f, [report("deadlock"), report("deadlock")], None)
    assert broken == [] and "every path deadlocks" in notes
    broken, _ = check_rules(f, [report("deadlock"), report("ok")], None)
    assert any(b.startswith("R3:") for b in broken)


def test_rule_2_accepts_any_failure_after_undefined_behaviour(facts):
    """bug_every_lane_expect_tx traps on some path (an arrive above pending): after it PTX
    promises nothing, so a GPU read_before_fill, which no model path reaches, is accepted."""
    f = facts["bug_every_lane_expect_tx"]
    assert "read_before_fill" not in f.reach().kinds and f.reach().traps
    broken, notes = check_rules(f, [report("trap"), report("read_before_fill", run=1)], None)
    assert broken == [] and "read_before_fill after undefined behaviour" in notes
    # without a trap on any path, the same GPU kind breaks R2
    broken, _ = check_rules(facts["bug_producer_phase0_nvidia"], [report("read_before_fill")], None)
    assert any(b.startswith("R2: GPU read_before_fill") for b in broken)


def test_rule_3_a_path_that_traps_is_no_deadlock(facts):
    """The H200 trapped on expect_tx above the tx range; the graph called every path
    deadlocked (it continues past a trap), so 'GPU runs did not deadlock' broke R3."""
    f = facts["bug_expect_tx_over_limit"]
    broken, notes = check_rules(f, [report("trap"), report("trap", run=1)], None)
    assert broken == [] and "every path deadlocks" not in notes


def test_rule_2_does_not_need_the_graph():
    """A spec whose graph stops at the model's in-flight capacity: reach answers R2."""
    f = _ModelFacts(load_spec(ROOT / "tests" / "fixtures" / "reach" / "runahead.toml"))
    broken, notes = check_rules(f, [report("read_before_fill"), report("deadlock", run=1)], None)
    assert broken == [] and "read_before_fill (reachable)" in notes and "deadlock (reachable)" in notes


def test_rule_4_every_log_conforms(facts):
    f = facts["mojo_pcp_nvidia"]
    broken, _ = check_rules(f, [report("ok"), report("ok", run=1)],
                            [Conf(True), Conf(False, 7, "event 7: not enabled")])
    assert broken == ["R4: 1 log(s) do not conform (run 1, event 7: event 7: not enabled)"]
    _, notes = check_rules(f, [report("ok")], None)
    assert "conformance not checked (cuda_ref.conform missing)" in notes


# ---------------------------------------------------------------- commands without CuPy

@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
@pytest.mark.parametrize("command", ["gpu", "crosscheck"])
def test_commands_without_cupy_say_so_in_one_line_and_exit_2(command):
    r = subprocess.run([sys.executable, "-m", "pipeproof.cuda_ref.commands", command,
                        "spec/examples/mojo_pcp_nvidia.toml", "--runs", "2"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "CuPy is not installed" in lines[0]


def test_commands_reject_a_bad_spec_with_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[pipeline]\nbackend = 'nvidia'\n")
    r = subprocess.run([sys.executable, "-m", "pipeproof.cuda_ref.commands", "gpu", str(bad)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and str(bad) in r.stderr


# ---------------------------------------------------------------- the H200 fixtures

def test_there_are_fixtures_of_both_backends_correct_and_buggy():
    assert len(PAIRS) >= 6
    outcomes, backends = set(), set()
    for stem in PAIRS:
        spec, log = load_pair(stem)
        outcomes.add(log["outcome"])
        backends.add(spec.backend)
        assert Path(str(stem) + ".toml").exists()
    assert {"ok", "deadlock", "read_before_fill", "trap"} <= outcomes
    assert backends == {"nvidia", "amd"}
    readme = (GPU_FIXTURES / "README.md").read_text()
    for stem in PAIRS:
        assert f"`{stem.name}`" in readme, stem.name
    assert "python3 -m cuda_ref.commands gpu tests/fixtures/gpu/*.toml --runs 4 --seed 7" in readme


@pytest.mark.parametrize("stem", PAIRS, ids=lambda p: p.name)
def test_fixture_matches_the_generated_program(stem):
    spec, log = load_pair(stem)
    g = G.generate(spec)
    assert tuple(log) == L.LOG_KEYS
    assert log["device"].startswith("NVIDIA H200")
    for ev in log["events"]:
        if ev["op"] in ("land", "fire"):
            assert ev["agent"] == f"cta{ev['cta']}.{'copy' if ev['op'] == 'land' else 'commit'}"
            continue
        a = g.agents.index(ev["agent"])
        name, _text = g.agent_ops[a][ev["pc"]]
        if ev["op"] == "finish":
            assert name == "read_async"
        else:
            assert name == ev["op"], ev
    ts = [ev["t"] for ev in log["events"]]
    assert ts == sorted(ts)
    # the outcome follows from the events (a trap is the launcher's own observation)
    if log["outcome"] != "trap":
        assert L.classify(g, log["events"], False)[0] == log["outcome"]


@pytest.mark.skipif(not HAVE_CONFORM, reason="cuda_ref.conform is not there yet")
@pytest.mark.parametrize("stem", PAIRS, ids=lambda p: p.name)
def test_fixture_conforms_and_tampering_is_rejected(stem):
    from pipeproof.cuda_ref.conform import conform
    spec, log = load_pair(stem)
    assert conform(spec, log).ok
    waits = [i for i, e in enumerate(log["events"])
             if e["op"] in ("wait_full", "wait_empty", "drain") and e["result"] == "ok"
             and not e.get("skipped")]
    assert waits
    # a wait at another phase than its program gives it
    bad = copy.deepcopy(log)
    bad["events"][waits[0]]["phase"] += 1
    assert not conform(spec, bad).ok
    # the last consumer wait moved before everything else: nothing has filled its slot yet
    fulls = [i for i in waits if log["events"][i]["op"] == "wait_full"]
    if fulls:
        bad = copy.deepcopy(log)
        ev = bad["events"].pop(fulls[-1])
        ev["t"] = bad["events"][0]["t"] - 1000
        bad["events"].insert(0, ev)
        assert not conform(spec, bad).ok


def test_crosscheck_table_was_saved():
    """The latest H200 crosscheck (issue 31: 10 runs of every example) covers every example."""
    text = (GPU_FIXTURES / "crosscheck_issue31.txt").read_text()
    assert "crosscheck on NVIDIA H200" in text
    # every example but those of issue 47 (nested loops, async writes), which came after the run
    on_gpu = [n for n in EXAMPLE_NAMES if n not in _LATER]
    assert len(_NESTED) == 8  # 6 of issue 47, and its two 2-SM examples (to= on writes)
    for name in on_gpu:
        assert f"| {name}" in text, name
    doc = json.loads((GPU_FIXTURES / "crosscheck_issue31.json").read_text())
    assert doc["schema"] == "pipeproof-crosscheck/1" and doc["runs"] == 10
    assert {os.path.basename(r["spec"]) for r in doc["rows"]} >= set(on_gpu)


ISSUE47_CROSSCHECK = GPU_FIXTURES / "crosscheck_issue47.json"


@pytest.mark.skipif(not ISSUE47_CROSSCHECK.exists(),
                    reason="the GPU crosscheck of the issue-47 examples has not run yet")
def test_the_issue47_crosscheck_covers_the_nested_and_async_write_examples():
    """The crosscheck of the examples the generator took in issue 47 (tile-level rings,
    write_async; tests/fixtures/gpu/README.md says the command): 10 runs of each on an H100 or
    H200, every one run, no rule broken, and each run judged again by today's model."""
    doc = json.loads(ISSUE47_CROSSCHECK.read_text())
    assert doc["schema"] == "pipeproof-crosscheck/1" and doc["runs"] == 10
    assert doc["device"].startswith(("NVIDIA H100", "NVIDIA H200"))
    assert {os.path.basename(r["spec"]) for r in doc["rows"]} >= set(_ISSUE47_ON_GPU)
    assert [r["spec"] for r in doc["rows"] if "not_run" in r or r["broken"]] == []
    for row in doc["rows"]:
        reports = [report(x["outcome"], x["kinds"], run=x["run"]) for x in row["runs"]]
        broken, _ = check_rules(_ModelFacts(load_spec(row["spec"])), reports, None)
        assert broken == [], row["spec"]


ISSUE48_CROSSCHECK = GPU_FIXTURES / "crosscheck_issue48.json"


def test_the_issue48_crosscheck_covers_the_expect_bytes_examples():
    """The crosscheck of the two expect_bytes examples (a bare mbarrier.expect_tx;
    tests/fixtures/gpu/README.md says the command): 10 runs of each on an H100 or H200, both
    run, no rule broken, each run judged again by today's model."""
    doc = json.loads(ISSUE48_CROSSCHECK.read_text())
    assert doc["schema"] == "pipeproof-crosscheck/1" and doc["runs"] == 10
    assert doc["device"].startswith(("NVIDIA H100", "NVIDIA H200"))
    assert sorted(os.path.basename(r["spec"]) for r in doc["rows"]) == sorted(_ISSUE48_ON_GPU)
    assert [r["spec"] for r in doc["rows"] if "not_run" in r or r["broken"]] == []
    # the arrival before the bytes completed the phase at once on the GPU too, every run
    bug = next(r for r in doc["rows"] if r["spec"].endswith("bug_arrive_before_expect_bytes.toml"))
    assert [x["kinds"] for x in bug["runs"]] == [["read_before_fill"]] * 10
    for row in doc["rows"]:
        reports = [report(x["outcome"], x["kinds"], run=x["run"]) for x in row["runs"]]
        assert len(reports) == 10
        broken, _ = check_rules(_ModelFacts(load_spec(row["spec"])), reports, None)
        assert broken == [], row["spec"]


# ---------------------------------------------------------------- a spec the GPU does not run

class _NotRunSession:
    """A GPU session whose every launch fails: what run_spec returns then."""
    device = "a fake GPU"

    def run_spec(self, path, runs, seed):
        from pipeproof.cuda_ref.run import SpecRuns
        return SpecRuns(path, self.device, [], f"{path}: cuda_ref: the kernel could not be "
                                               f"launched: CUDA_ERROR_INVALID_VALUE")

    def close(self):
        pass


@pytest.mark.parametrize("command", ["gpu", "crosscheck"])
def test_a_spec_not_run_is_said_so_with_its_own_exit_code(monkeypatch, command):
    """A launch failure is no trap and no GPU failure: `not run: <reason>`, exit code 6."""
    from click.testing import CliRunner

    from pipeproof.checker.results.result import EXIT_NOT_RUN
    from pipeproof.cuda_ref import commands
    monkeypatch.setattr(commands, "_session", lambda *a, **k: _NotRunSession())
    r = CliRunner().invoke(getattr(commands, command), ["spec/examples/mojo_pcp_nvidia.toml",
                                                        "--json"])
    assert r.exit_code == EXIT_NOT_RUN == 6, r.output
    doc = json.loads(r.stdout)
    entry = (doc["results"] if command == "gpu" else doc["rows"])[0]
    assert entry["not_run"] == "the kernel could not be launched: CUDA_ERROR_INVALID_VALUE"
    assert "trap" not in r.output
    assert "not run: the kernel could not be launched" in r.stderr
    if command == "crosscheck":
        assert "0 of 1 specs ran; 0 with a broken rule; not run: mojo_pcp_nvidia.toml" in r.stderr


# ---------------------------------------------------------------- H200 trap logs (issue 17)

TRAP_LOGS = ROOT / "tests" / "fixtures" / "gpu_trap"


def _trap_log(run):
    return json.loads((TRAP_LOGS / f"bug_every_lane_expect_tx.run{run}.log.json").read_text())


@pytest.mark.parametrize("run, unchecked, steps", [(2, 3, 6), (11, 5, 6), (8, 0, 15)])
def test_h200_trap_logs_conform_up_to_the_trap(run, unchecked, steps):
    from pipeproof.cuda_ref.conform import conform
    spec = load_spec("spec/examples/bug_every_lane_expect_tx.toml")
    log = _trap_log(run)
    r = conform(spec, log)
    assert r.ok and r.unchecked == unchecked and r.steps == steps, r.message
    assert "ends in a trap (over_arrival)" in r.message
    # what comes before the trap is still checked: the first event moved to stage 1 fails
    bad = copy.deepcopy(log)
    bad["events"][0]["stage"] = 1
    assert not conform(spec, bad).ok


def test_unrecorded_landings_only_in_a_trap_log():
    """Run 8's consumer waited on a copy whose landing a trap log cannot hold; the same events
    in a log that says `ok` need the landing recorded, and do not conform without it."""
    from pipeproof.cuda_ref.conform import conform
    spec = load_spec("spec/examples/bug_every_lane_expect_tx.toml")
    log = _trap_log(8)
    log["outcome"] = "ok"
    r = conform(spec, log)
    assert not r.ok and "consumer[0] wait_full" in r.message


# (fixture, runs per spec, examples it must cover, a spec of tests/fixtures it also ran)
CROSSCHECKS = [("crosscheck.json", 20, "the examples of its day", "tilelang_mixed_nowait.toml"),
               ("crosscheck_issue31.json", 10, "every example", None)]


@pytest.mark.parametrize("name,runs,covers,extra", CROSSCHECKS, ids=[c[0] for c in CROSSCHECKS])
def test_the_h200_crosscheck_under_the_current_rules(name, runs, covers, extra):
    """The H200 crosschecks after slot parts and the reset window (issue 17: 20 runs of every
    example, of tests/fixtures/gpu_launch/ and of tests/fixtures/gpu_parts/;
    benchmarks/results/crosscheck_2026-12-01_parts.txt) and after the revised rules (issue 31:
    10 runs of every example; benchmarks/results/crosscheck_2026-12-03_issue31.txt), each
    run's outcome and kinds recorded, judged again by today's model and rules R1-R3: no rule
    broken, and the only spec not run is the one whose slots do not fit in shared memory."""
    doc = json.loads((GPU_FIXTURES / name).read_text())
    assert doc["runs"] == runs and doc["device"].startswith("NVIDIA H200")
    ran = [r for r in doc["rows"] if "not_run" not in r]
    assert [os.path.basename(r["spec"]) for r in doc["rows"] if "not_run" in r] == \
        ["bug_expect_tx_over_limit.toml"]
    names = {os.path.basename(r["spec"]) for r in doc["rows"]}
    if covers == "every example":   # of its day: the nested-loop examples (issue 47) came later
        assert names >= set(EXAMPLE_NAMES) - set(_LATER)
    else:   # examples added since are in the later crosscheck
        assert len(names & set(EXAMPLE_NAMES)) >= 40
    assert extra is None or extra in names
    assert [r["spec"] for r in ran if r["broken"]] == []
    for row in ran:
        if not os.path.exists(row["spec"]):
            continue    # an example removed since
        reports = [report(x["outcome"], x["kinds"], run=x["run"]) for x in row["runs"]]
        assert len(reports) == runs
        broken, _ = check_rules(_ModelFacts(load_spec(row["spec"])), reports, None)
        assert broken == [], row["spec"]
