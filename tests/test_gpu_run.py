"""The reference kernels on a real GPU (marked `gpu`; skipped cleanly without CuPy or a GPU).

    pytest -m gpu tests/test_gpu_run.py      # on a machine with CuPy and an sm_90 GPU
"""
from __future__ import annotations

import importlib.util

import pytest

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                       reason="CuPy is not installed (GPU tests need CuPy and an NVIDIA GPU)"),
]


@pytest.fixture(scope="module")
def session():
    from pipeproof.cuda_ref.run import GpuSession, GpuUnavailable
    try:
        s = GpuSession(timeout_ms=20.0, delay_ns=2000, command="pytest tests/test_gpu_run.py")
    except GpuUnavailable as err:
        pytest.skip(str(err))
    yield s
    s.close()


def conform_or_skip(spec, log):
    try:
        from pipeproof.cuda_ref.conform import conform
    except ImportError:
        return None
    return conform(spec, log)


@pytest.mark.parametrize("name", ["mojo_pcp_nvidia", "mojo_pcp_amd", "mojo_input_tile_cluster2_k2",
                                  "x_mojo_sm100_matmul"])
def test_correct_specs_run_ok_and_conform(session, name):
    from pipeproof.spec.load import load_spec
    path = f"spec/examples/{name}.toml"
    res = session.run_spec(path, runs=3, seed=5)
    assert not res.refused
    assert [r.outcome for r in res.reports] == ["ok"] * 3
    for r in res.reports:
        c = conform_or_skip(load_spec(path), r.log)
        assert c is None or c.ok, c.message


def test_a_deadlock_is_bounded_and_reported(session):
    res = session.run_spec("spec/examples/bug_producer_phase0_nvidia.toml", runs=2, seed=5)
    for r in res.reports:
        assert r.outcome == "deadlock"
        assert any("producer[0] at pc 0 'wait_empty'" in s for s in r.stuck)


def test_an_over_arrival_is_a_trap_and_the_session_recovers(session):
    res = session.run_spec("spec/examples/bug_every_lane_expect_tx.toml", runs=2, seed=5)
    assert [r.outcome for r in res.reports] == ["trap", "trap"]
    after = session.run_spec("spec/examples/mojo_pcp_nvidia.toml", runs=1, seed=5)
    assert after.reports[0].outcome == "ok"


def test_a_ring_of_48_kib_runs_with_the_shared_memory_opted_in(session):
    """3 stages of 16 KiB: 48 KiB of dynamic shared memory beside the kernel's static part,
    above what a launch gets without opting in (it failed every launch before issue 17)."""
    from pipeproof.spec.load import load_spec
    path = "tests/fixtures/gpu_launch/input_tile_3x16k.toml"
    res = session.run_spec(path, runs=2, seed=5)
    assert not res.refused, res.refused
    assert [r.outcome for r in res.reports] == ["ok", "ok"]
    for r in res.reports:
        c = conform_or_skip(load_spec(path), r.log)
        assert c is None or c.ok, c.message
