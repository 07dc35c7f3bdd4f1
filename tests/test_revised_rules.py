"""The three rules DESIGN.md revised on 2026-12-02, pinned on the explicit engine (with and
without its reductions) and on the command line:

R1  an agent's commits fire in the order it issued them (a tcgen05.commit tracks every earlier
    async operation of its thread);
R2  a CTA gone with only its own copies or commits in flight is the warning unawaited_at_exit
    (exit 0), not inflight_at_exit; `--strict-exit` restores the violation; a peer CTA's entry
    or an async read in flight at exit stays inflight_at_exit;
R3  slot parts are per slot: a read of slot s checks the parts the program fills for its item
    in s, so two roles filling different slots for one item are not each other's missing part.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text

from tests.rules_support import Run, spec_text

REDUCTIONS = [dict(symmetry=True, por=True), dict(symmetry=True, por=False),
              dict(symmetry=False, por=False)]


# ------------------------------------------------------------------ R1: commits fire in order

# An MMA agent commits the input slot's release, then (epilogue) the accumulator's; the
# epilogue agent waits for the accumulator and is the CTA's last agent to finish. Triton's
# warp-specialised matmul ends this way (docs/triton.md).
MMA_THEN_ACC = """
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
items = 1

[ring.acc]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1

[[role]]
name = "load"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "mma"
side = "consumer"
count = 1
body = ["wait_full", "read", "commit_empty", "advance"]
epilogue = ["commit_empty ring=acc"]

[[role]]
name = "epi"
side = "consumer"
count = 1
initial_phase = { main = 0, acc = 0 }
epilogue = ["wait_empty ring=acc"]
"""


def test_a_later_commit_waits_for_the_earlier_one():
    m = compile_model(load_spec_text(MMA_THEN_ACC, "acc.toml"))
    s = m.initial_state()
    for printed in ["load[0].wait_empty(stage=0, phase=1)", "load[0].write(stage=0, item=0, phase=1)",
                    "load[0].arrive_full(stage=0, phase=1)", "mma[0].wait_full(stage=0, phase=0)",
                    "mma[0].read(stage=0, item=0, phase=0)", "mma[0].commit_empty(stage=0, phase=0)",
                    "mma[0].advance(stage=0, phase=0)", "mma[0].commit_empty(ring=acc, stage=0, phase=0)"]:
        codes = [a for a in m.actions(s) if m.format_action(s, a) == printed]
        assert codes, (printed, [m.format_action(s, a) for a in m.actions(s)])
        s, bits, _ = m.apply(s, codes[0])
        assert bits == 0
    entries = [m.decode_entry(e) for e in m.inflight_entries(s)]
    assert sorted((e["ring"], e["after_commits"]) for e in entries) == [("acc", 1), ("main", 0)]
    fires = [a for a in m.actions(s) if a >= len(m.agents)]
    assert len(fires) == 1  # only the older commit may fire
    s, _, _ = m.apply(s, fires[0])
    left = [m.decode_entry(e) for e in m.inflight_entries(s)]
    assert [(e["ring"], e["after_commits"]) for e in left] == [("acc", 0)]
    assert len([a for a in m.actions(s) if a >= len(m.agents)]) == 1  # now it may


@pytest.mark.parametrize("reductions", REDUCTIONS)
def test_the_accumulator_commit_covers_the_input_commits_at_exit(reductions):
    """Strict exit: the epilogue leaves after the accumulator's commit fired, so the input
    ring's earlier commit has fired too. Were commits unordered, the CTA could go with it in
    flight (inflight_at_exit under the strict reading)."""
    spec = load_spec_text(MMA_THEN_ACC, "acc.toml")
    strict = verify(spec, strict_exit=True, **reductions)
    assert (strict.verdict, strict.kinds, strict.warnings) == ("ok", (), {})
    plain = verify(spec, **reductions)
    assert (plain.verdict, plain.warnings) == ("ok", {})


def test_to_all_commit_entries_fire_in_any_order_but_before_the_next_commit():
    """One multicast commit is one entry per CTA, fired in any order among themselves; the
    agent's next commit waits for all of them."""
    r = Run([{"name": "M", "side": "consumer", "body": ["commit_empty to=all", "commit_empty"]}],
            cluster=2, cac=2)
    r.do("cta0.M[0].commit_empty(stage=0, phase=0, to=all)")
    r.do("cta0.M[0].commit_empty(stage=0, phase=0)")
    fires = [a for a in r.m.actions(r.s) if a >= len(r.m.agents)]
    own = [r.m.decode_entry(r.s[r.m.off_inf + a - len(r.m.agents)]) for a in fires]
    assert sorted((e["cta"], e["after_commits"]) for e in own) == [(0, 0), (1, 0)]
    later = [e for e in (r.m.decode_entry(x) for x in r.m.inflight_entries(r.s))
             if e["after_commits"] > 0]
    assert [(e["cta"], e["after_commits"]) for e in later] == [(0, 2)]


# ------------------------------------------------------------------ R2: own entries at exit

def test_peer_copy_in_flight_at_exit_stays_inflight_at_exit():
    """cta1's copy into cta0 is still in flight when cta0's last agent finishes."""
    r = Run([{"name": "P", "side": "producer", "body": ["copy 16 to=peer"]}], cluster=2)
    r.do("cta1.P[0].copy(stage=0, item=0, phase=1, bytes=16, to=peer)")
    # cta0's own copy to cta1 is its last step: cta0 goes with cta1's copy aimed at it
    assert r.do("cta0.P[0].copy(stage=0, item=0, phase=1, bytes=16, to=peer)") == ("inflight_at_exit",)


def test_async_read_in_flight_at_exit_stays_inflight_at_exit():
    roles = [{"name": "P", "side": "producer", "body": ["write", "arrive_full"]},
             {"name": "C", "side": "consumer", "body": ["wait_full", "read_async"]}]
    res = verify(load_spec_text(spec_text(roles), "r.toml"))
    assert res.kinds == ("inflight_at_exit",) and res.warnings == {}


def test_warning_trace_is_a_real_run_ending_at_the_exit():
    roles = [{"name": "P", "side": "producer", "body": ["wait_empty", "copy 16", "expect_tx 16"]},
             {"name": "C", "side": "consumer", "body": ["wait_full", "read", "commit_empty"]}]
    res = verify(load_spec_text(spec_text(roles), "r.toml"))
    assert res.verdict == "ok"
    trace = res.warnings["unawaited_at_exit"]
    assert trace.steps[-1].action == "C[0].commit_empty(stage=0, phase=0)"
    assert [e["kind"] for e in trace.steps[-1].state["inflight"]] == ["commit"]
    assert all(a["done"] for a in trace.steps[-1].state["agents"].values())
    assert "cta0 exits" in trace.reason and "commit 1 -> cta0.empty[0]" in trace.reason
    # and the independent replayer (tests/replay.py) agrees: each step enabled, no violation,
    # the warning at the last step (tests/generators.py check_result does this for every result)
    from tests.replay import replay
    outcome = replay(load_spec_text(spec_text(roles), "r.toml"), trace.to_json())
    assert outcome.step_warnings[-1] == {"unawaited_at_exit"}
    assert not any(outcome.step_kinds) and not any(outcome.step_warnings[:-1])


CLI_SPEC = spec_text([{"name": "P", "side": "producer", "body": ["wait_empty", "write", "arrive_full"]},
                      {"name": "C", "side": "consumer", "body": ["wait_full", "read", "commit_empty"]}])


def _cli(tmp_path, *args):
    path = tmp_path / "own_commit.toml"
    path.write_text(CLI_SPEC)
    return subprocess.run([sys.executable, "-m", "pipeproof.checker.cli.main", "verify", str(path), *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_prints_the_warning_with_the_verdict_and_exits_0(tmp_path):
    out = _cli(tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith(")") and ": ok (" in lines[0]
    assert "warning: unawaited_at_exit after 6 steps: cta0 exits (C[0] finishes)" in lines[1]


def test_cli_json_lists_the_warning(tmp_path):
    out = _cli(tmp_path, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "ok" and doc["violation"] is None
    [w] = doc["warnings"]
    assert (w["kind"], w["depth"], len(w["trace"]["steps"])) == ("unawaited_at_exit", 6, 6)


def test_cli_strict_exit_makes_it_a_violation(tmp_path):
    out = _cli(tmp_path, "--strict-exit", "--json")
    assert out.returncode == 1, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["verdict"], doc["violation"]["kind"], doc["warnings"]) == \
        ("violation", "inflight_at_exit", [])


# ------------------------------------------------------------------ R3: parts per slot

TWO_PRODUCERS = spec_text([
    {"name": "A", "side": "producer", "body": ["write", "arrive_full"]},
    {"name": "B", "side": "producer", "initial_stage": 1, "body": ["write", "arrive_full"]},
    {"name": "C", "side": "consumer", "body": ["wait_full", "read", "advance", "wait_full", "read"]}],
    stages=2)


@pytest.mark.parametrize("reductions", REDUCTIONS)
def test_two_producers_filling_different_slots_for_one_item_is_ok(reductions):
    res = verify(load_spec_text(TWO_PRODUCERS, "two.toml"), **reductions)
    assert (res.verdict, res.kinds) == ("ok", ())


def test_parts_are_filled_per_slot():
    m = compile_model(load_spec_text(TWO_PRODUCERS, "two.toml"))
    T = m.tables
    assert len(m.parts[0]) == 2
    filled = {(p, s): bool(S.part_filled_for(T, 0, p, s, 0)) for p in range(2) for s in range(2)}
    assert filled == {(0, 0): True, (0, 1): False, (1, 0): False, (1, 1): True}
    # a read of slot 0 holding A's item (B's part of slot 0 never stored) finds nothing missing
    st = np.array(m.initial_state(), dtype=np.int64)
    base = m.off_slot  # cta0, ring main, stage 0: parts 0, 1
    st[base] = 0
    assert S.read_miss(T, st, 0, 0, 0, 0) == -1
    st[base] = -1
    assert S.read_miss(T, st, 0, 0, 0, 0) == base


def test_a_read_of_the_other_slot_before_its_fill_is_still_caught():
    text = TWO_PRODUCERS.replace('"advance", "wait_full", "read"]', '"advance", "read"]')
    res = verify(load_spec_text(text, "two.toml"))
    assert res.kinds == ("read_before_fill",)
    assert res.traces["read_before_fill"].steps[-1].action.startswith("C[0].read(stage=1")
