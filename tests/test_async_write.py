"""`write_async` (issue 47): an MMA's asynchronous write of its accumulator.

tcgen05.mma writes tensor memory, wgmma writes registers, after the instruction is issued. The
op stores its tag at issue and leaves an entry in its agent's FIFO of async ops (beside its
async reads): the slot is being written until the entry finishes, and a read of it meanwhile is
`read_before_fill`. A commit fires only after the agent's earlier async ops (tcgen05.commit
tracks the MMAs before it); `read_wait` waits for them too (wgmma.wait_group). So handing the
accumulator over with a commit is ok, and with a plain arrive it is the epilogue reading the
accumulator before it is written, at the read (docs/rules.md "Async writes").
"""
from __future__ import annotations

import pytest

from pipeproof.checker.engines.lap_verify import verify_laps
from pipeproof.checker.engines.prover import prove
from pipeproof.checker.engines.verifier import verify
from pipeproof.checker.models.exporter import export
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.cuda_ref.codegen import generate
from pipeproof.spec.load import load_spec, load_spec_text
from tests.paths import EXAMPLES_DIR
from tests.replay_support import check_replay
from tests.specs import standard_toml

ASYNC_OK = EXAMPLES_DIR / "x_tcgen05_gemm_acc_async_ok.toml"
ARRIVE_NOT_COMMIT = EXAMPLES_DIR / "x_tcgen05_gemm_acc_arrive_not_commit.toml"


def handover(mma: tuple) -> str:
    """The "producer" (an MMA) writes each accumulator slot asynchronously and hands it to the
    "consumer" (an epilogue), which reads it and frees it."""
    return standard_toml(items=2, producer_body=list(mma))


BY_COMMIT = handover(("wait_empty", "write_async", "commit_full", "advance"))
BY_ARRIVE = handover(("wait_empty", "write_async", "arrive_full", "advance"))
BY_WAIT_THEN_ARRIVE = handover(("wait_empty", "write_async", "read_wait 0", "arrive_full", "advance"))


def _answer(r):
    return r.verdict, r.kinds, r.depth


def test_a_commit_hands_over_a_finished_write():
    spec = load_spec_text(BY_COMMIT, "commit.toml")
    full = verify(spec, por=False, symmetry=False)
    assert _answer(full) == ("ok", (), None) and full.states == 82
    assert _answer(verify(spec)) == ("ok", (), None)


def test_an_arrive_hands_over_a_write_still_in_flight():
    spec = load_spec_text(BY_ARRIVE, "arrive.toml")
    result = verify(spec)
    assert _answer(result) == ("violation", ("read_before_fill",), 5)
    assert _answer(verify(spec, por=False, symmetry=False)) == _answer(result)
    trace = check_replay(spec, result, "read_before_fill")
    assert [s["action"] for s in trace["steps"]][-2:] == ["consumer[0].wait_full(stage=0, phase=0)",
                                                         "consumer[0].read(stage=0, item=0, phase=0)"]
    assert result.traces["read_before_fill"].reason == (
        "consumer[0] reads item 0 from cta0.slot[0] while an async write of it (write_async) "
        "has not finished")


def test_read_wait_waits_for_async_writes_too():
    """wgmma.wait_group 0 waits for the accumulator writes: arriving after it is ok."""
    spec = load_spec_text(BY_WAIT_THEN_ARRIVE, "wait.toml")
    assert _answer(verify(spec, por=False, symmetry=False)) == ("ok", (), None)


@pytest.mark.parametrize("text", [BY_COMMIT, BY_ARRIVE, BY_WAIT_THEN_ARRIVE])
def test_bmc_laps_and_prove_agree(text):
    spec = load_spec_text(text, "t.toml")
    full = verify(spec, por=False, symmetry=False)
    if full.verdict == "violation":  # BMC at the minimal depth finds the same kind there
        assert _answer(verify_bmc(spec, depth=full.depth, timeout=120)) == _answer(full)
    else:                            # and nothing in every run (its depth bound covers them)
        assert verify_bmc(spec, depth=40, timeout=120).verdict == "ok"
    assert _answer(verify_laps(spec)) == _answer(full)
    proof = prove(spec, timeout=120)
    assert proof.status == ("proved" if full.verdict == "ok" else "violated"), proof.reason


def test_the_gemm_handing_over_by_arrive_is_caught_at_the_epilogue_read():
    """Issue 47's case: the MMA warp signals the accumulator full with an arrive instead of the
    commit; before, the spec could only say it as an exit violation long after."""
    spec = load_spec(ARRIVE_NOT_COMMIT)
    result = verify(spec)
    assert _answer(result) == ("violation", ("read_before_fill",), 49)
    assert result.traces["read_before_fill"].reason.startswith(
        "epilogue[0] reads tile 0 from cta0.acc.slot[0] while an async write")
    assert prove(spec).status == "violated"
    ok = load_spec(ASYNC_OK)
    assert _answer(verify(ok)) == ("ok", (), None)
    assert prove(ok).status == "proved"


def test_the_exports_print_it_and_the_cuda_generator_takes_it():
    """The Promela and Murphi exports follow the rule (SPIN and Rumur against the engine:
    tests/test_export_nested.py); the reference kernel stores it with cp.async and finishes it
    before the commit (tests/test_codegen_nested.py)."""
    spec = load_spec_text(BY_COMMIT, "commit.toml")
    for fmt in ("promela", "murphi"):
        assert "an async write of it" in export(spec, fmt)
    code = generate(spec).source
    assert code.index("async_store(c, ") < code.index("finish_reads(c, 0, q, 0);") \
        < code.index("commit_fire(c, 0, ")
