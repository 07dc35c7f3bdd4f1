"""`commit_full` (issue 34): tcgen05.commit onto a *full* signal, sm100's accumulator ring.

Like `commit_empty` it leaves an in-flight commit entry that fires, in issue order among its
agent's commits (R1), once the agent's earlier async reads have finished; it fires on the
current stage's full signal. Every engine realises it from its effects (spec/ops.py): the
explicit search with and without its reductions, BMC, the lap prover, the Promela and Murphi
exports, the CUDA generator, and the independent replayer (tests/replay.py) agrees with the
traces. A ring whose only fill signal is a commit_full is ok; its mutations are caught with
the right kind.
"""
from __future__ import annotations

import json
import shutil

import pytest

from pipeproof.checker.engines.verifier import verify
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.models.exporter import export
from pipeproof.cuda_ref.codegen import generate
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.ops import FULL, OP_EFFECTS
from tests.replay import replay


def _q(ops) -> str:
    return json.dumps(list(ops))


def mma_epilogue(mma=("wait_empty", "write", "commit_full 1", "advance"),
                 epilogue=("wait_full", "read", "arrive_empty", "advance"),
                 stages=2, items=3, epilogues=1) -> str:
    """An "MMA" role fills the ring and signals full only by commit_full; "epilogue" agents
    (each arrives on empty) drain it."""
    return f"""
[pipeline]
backend = "nvidia"
stages = {stages}
producer_arrive_count = 1
consumer_arrive_count = {epilogues}
items = {items}

[[role]]
name = "mma"
side = "producer"
count = 1
body = {_q(mma)}

[[role]]
name = "epilogue"
side = "consumer"
count = {epilogues}
body = {_q(epilogue)}
"""


def sm100(mma_acc=("wait_empty ring=acc every=3 at=0", "write ring=acc every=3 at=2",
                   "commit_full ring=acc every=3 at=2", "advance ring=acc every=3 at=2"),
          epi=("wait_full ring=acc every=3 at=2", "read ring=acc every=3 at=2",
               "arrive_empty ring=acc every=3 at=2", "advance ring=acc every=3 at=2")) -> str:
    """Two rings as on sm100: TMA loads into the input ring, the MMA warp reads it
    asynchronously and releases it with commit_empty, and signals the accumulator ring's
    full with commit_full (after its async reads); the epilogue drains the accumulator."""
    return f"""
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 6

[ring.acc]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1

[[role]]
name = "load"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 8192", "copy 8192", "advance"]
epilogue = ["drain"]

[[role]]
name = "mma"
side = "consumer"
count = 1
body = {_q(["wait_full", "read_async", "commit_empty", "advance", *mma_acc])}

[[role]]
name = "epilogue"
side = "consumer"
count = 1
body = {_q(epi)}
"""


def load(text):
    return load_spec_text(text, "commit_full.toml")


OK = {
    "mma_epilogue": mma_epilogue(),
    "two_epilogues": mma_epilogue(epilogues=2),
    "sm100": sm100(),
}

BAD = {  # name: (spec, the kinds the model reports)
    "commit_before_store": (mma_epilogue(mma=("wait_empty", "commit_full 1", "write", "advance")),
                            {"read_before_fill"}),
    "epilogue_does_not_wait": (mma_epilogue(epilogue=("read", "arrive_empty", "advance")),
                               {"read_before_fill"}),
    "count_too_high": (mma_epilogue(mma=("wait_empty", "write", "commit_full 2", "advance")),
                       {"over_arrival"}),
    "sm100_commit_before_store": (sm100(mma_acc=(
        "wait_empty ring=acc every=3 at=0", "commit_full ring=acc every=3 at=2",
        "write ring=acc every=3 at=2", "advance ring=acc every=3 at=2")), {"read_before_fill"}),
    "sm100_epilogue_does_not_wait": (sm100(epi=(
        "read ring=acc every=3 at=2", "arrive_empty ring=acc every=3 at=2",
        "advance ring=acc every=3 at=2")), {"read_before_fill"}),
}


def test_commit_full_is_an_async_arrival_on_full():
    e = OP_EFFECTS["commit_full"]
    assert (e.updates, e.units, e.issues) == (FULL, -1, "commit")
    assert list(OP_EFFECTS)[19] == "commit_full"  # op codes are the table's order


def test_the_loader_takes_a_count_and_a_target():
    spec = load(mma_epilogue(mma=("wait_empty", "write", "commit_full 1 to=self", "advance")))
    op = next(op for op in spec.roles[0].body if op.name == "commit_full")
    assert (op.n, op.to) == (1, "self")


@pytest.mark.parametrize("name", sorted(OK))
def test_ok_in_every_engine(name):
    spec = load(OK[name])
    full = verify(spec, por=False, symmetry=False)
    assert full.verdict == "ok", full.kinds
    for kw in ({}, {"por": False}, {"symmetry": False}):
        assert verify(spec, **kw).verdict == "ok", kw
    from pipeproof.checker.engines.lap_verify import verify_laps
    assert verify_laps(spec).verdict == "ok"
    from pipeproof.checker.engines.prover import prove
    # (the sm100 spec's every=3 guards leave the lap prover inconclusive, with arrive_full too)
    assert prove(spec).verdict == ("inconclusive" if name == "sm100" else "ok")


# BMC on the sm100 spec takes about 50 s: `pytest -m slow` runs it; the other specs' stay fast
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "sm100" else n
                                  for n in sorted(OK)])
def test_ok_in_bmc(name):
    assert verify_bmc(load(OK[name])).verdict == "ok"


def test_the_commit_fires_on_full_in_the_trace():
    res = verify(load(BAD["commit_before_store"][0]))
    trace = res.traces["read_before_fill"]
    assert '"signal": "full"' in json.dumps(trace.to_json())  # the entry in the state views
    changes = [c for step in trace.steps for c in step.changes]
    assert any("+commit 1 -> cta0.full[0]" in c for c in changes), changes
    fire = next(step for step in trace.steps if step.actor == "cta0.commit")
    assert any(c.startswith("cta0.full[0]: ") for c in fire.changes), fire.changes


@pytest.mark.parametrize("name", sorted(BAD))
def test_mutations_are_caught_and_replayed(name):
    text, kinds = BAD[name]
    spec = load(text)
    for kw in ({}, {"por": False, "symmetry": False}):
        res = verify(spec, **kw)
        assert res.verdict == "violation" and set(res.kinds) == kinds, (kw, res.kinds)
        for kind, trace in res.traces.items():
            assert kind in replay(spec, trace.to_json()).kinds, kind
    b = verify_bmc(spec)
    assert b.verdict == "violation" and set(b.kinds) & kinds, b.kinds
    for kind, trace in b.traces.items():
        assert kind in replay(spec, trace.to_json()).kinds, kind


def test_with_the_entry_firing_on_empty_the_bug_is_missed(monkeypatch):
    # the test can fail: read as a commit_empty (fires on empty), the early commit leaves the
    # epilogue waiting forever instead of reading an empty slot
    assert verify(load(BAD["commit_before_store"][0])).kinds == ("read_before_fill",)
    twin = load(mma_epilogue(mma=("wait_empty", "commit_empty 1", "write", "advance")))
    assert verify(twin).kinds != ("read_before_fill",)


def test_the_exports_and_the_cuda_generator_fire_on_full():
    spec = load(OK["mma_epilogue"])
    assert "e_ % ENB == 1" in export(spec, "promela")
    assert "e % ENB = 1" in export(spec, "murphi")
    source = generate(spec).source
    assert "commit_fire(c, 0, 1u, 0, (u32)st0, 1u, 0u);" in source  # kind 0: full
    twin = load(mma_epilogue(mma=("wait_empty", "write", "commit_empty", "advance"),
                             epilogue=("wait_full", "read", "advance")))
    assert "e_ % ENB == 1" not in export(twin, "promela")  # only where a commit fires on full


@pytest.mark.skipif(shutil.which("spin") is None or shutil.which("rumur") is None,
                    reason="needs spin and rumur")
@pytest.mark.parametrize("name", ["mma_epilogue", "commit_before_store", "count_too_high",
                                  "sm100", "sm100_commit_before_store"])
def test_spin_and_rumur_agree(name, tmp_path):
    from tests.export_support import agree, both_tools
    text = OK.get(name) or BAD[name][0]
    spec = load(text)
    ours = verify(spec, por=False, symmetry=False)
    spin, rumur = both_tools(spec, tmp_path)
    agree(ours, spin, rumur, set(ours.kinds) | {"read_before_fill", "over_arrival", "deadlock"})


@pytest.mark.parametrize("name", ["mma_epilogue", "two_epilogues", "sm100", "cluster"])
def test_commit_full_firings_taken_at_once_commute_with_everything_else(name):
    """The reduction takes a commit_full's firing at once (an arrival on full) only where it
    commutes with every other enabled step (tests/por_support.py's check_independent_entries)."""
    from pipeproof.checker.core.model import compile_model
    from tests.por_support import check_independent_entries
    text = OK.get(name) or mma_epilogue().replace("backend = \"nvidia\"",
                                                  "backend = \"nvidia\"\ncluster_size = 2")
    model = compile_model(load(text))
    assert check_independent_entries(model) > 0


def test_symmetry_merges_the_interchangeable_epilogues():
    spec = load(OK["two_epilogues"])
    on, off = verify(spec, por=False), verify(spec, por=False, symmetry=False)
    assert on.verdict == off.verdict == "ok" and on.states < off.states


@pytest.mark.parametrize("name", ["mma_epilogue", "sm100", "commit_before_store",
                                  "count_too_high"])
def test_gpu_logs_of_model_walks_conform(name):
    """A GPU event log that records a model path of a commit_full spec (its fires among the
    events) conforms (cuda_ref/conform.py), ties shuffled too; a log whose commit_full fire
    comes before the commit was issued is rejected."""
    import random
    from pipeproof.checker.core.model import compile_model
    from pipeproof.cuda_ref.conform import conform
    from tests.conform_support import shuffle_ties, walk
    m = compile_model(load(OK.get(name) or BAD[name][0]))
    fired = 0
    for seed in range(4):
        rng = random.Random(seed)
        log = walk(m, rng, tie=0.0 if seed < 2 else 0.5)
        if seed >= 2:
            shuffle_ties(log, rng)
        fired += sum(e.get("op") == "fire" for e in log["events"])
        r = conform(m, log)
        assert r.ok, f"seed {seed}: {r.message}"
    assert fired > 0
    log = walk(m)
    events = log["events"]
    i = next(k for k, e in enumerate(events) if e.get("op") == "fire")
    j = next(k for k, e in enumerate(events) if e.get("op") == "commit_full")
    events[i]["t"], events[j]["t"] = events[j]["t"], events[i]["t"]
    events[i], events[j] = events[j], events[i]
    assert not conform(m, log).ok
