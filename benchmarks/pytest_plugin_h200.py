"""`pytest --pipeproof` on a GPU: real launches (issue 36), for an H200 (sm90) with torch and
Triton (3.9.0 pinned; the device has 3.6.0, which the kernels here also compile under). Not
run on the CPU machine; the arguments come from `launch_enter_hook` here.

    python benchmarks/pytest_plugin_h200.py [--out benchmarks/results/pytest_plugin_h200_DATE.txt]

It writes an inner test file into a temporary folder and runs `pytest --pipeproof` on it twice
(the second run from the cache). The inner tests launch, with torch tensors and TMA descriptors:

- the Gluon TMA ring of tests/fixtures/pytest_plugin/ring_kernels.py (sm90): stock, checked
  against torch (must pass); BUG=1, the consumer's phase flipped (must FAIL with
  read_before_fill); BUG=2, the consumer never releases, launched with n_tiles=2 (fits the
  3-slot ring: never a second lap, so it must pass: the trip count is the call's; with 7 tiles
  it would hang the GPU, so that one is only compiled, and checked with args, not launched);
- tests/triton_kernels/gluon_mbarrier.py's gluon_ring_rowsum (must pass, checked against torch);
- tests/triton_kernels/sm90_pipelined.py (Triton's own pipeliner, TMA + wgmma) at K=512 and
  K=1024: two distinct checks, one per trip count (must pass, checked against torch).

Needs torch with CUDA, Triton 3.9.0 and pipeproof installed (`pip install -e .` in this
checkout: the `pipeproof` namespace comes from pyproject's package-dir, not from a folder).
It prints both runs' output and one line per expectation, `PASS`/`FAIL`, and exits 1 if any
expectation fails.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

INNER = r'''
import importlib.util, os, sys
import pytest
import torch
import triton
import triton.experimental.gluon.language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, {fixture!r})
import ring_kernels as rk


def _load(name):
    spec = importlib.util.spec_from_file_location("h200_" + name, os.path.join({kernels!r}, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gm = _load("gluon_mbarrier")
swp = _load("sm90_pipelined")


def _rowsum(fn, n_tiles, **constexprs):
    x = torch.randn(n_tiles * 64, 64, device="cuda", dtype=torch.float16)
    out = torch.zeros(64, device="cuda", dtype=torch.float32)
    layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float16)
    desc = GluonDescriptor.from_tensor(x, [64, 64], layout)
    fn[(1,)](desc, out, n_tiles, num_warps=4, **constexprs)
    torch.cuda.synchronize()
    return out, x.view(n_tiles, 64, 64).float().sum(0).sum(1)


def test_ring_stock():
    out, ref = _rowsum(rk.ring_rowsum, 7, STAGES=3, BUG=0)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-1)


def test_ring_never_released_short():
    _rowsum(rk.ring_rowsum, 2, STAGES=3, BUG=2)   # 2 tiles fit 3 slots: fine at this trip count


@pytest.mark.pipeproof(args={{"n_tiles": 7}})
def test_ring_never_released_long_compiled_only():
    rk.compile_rowsum(arch=90, bug=2)             # launched, it would hang: compiled only


def test_gluon_ring_rowsum():
    out, ref = _rowsum(gm.gluon_ring_rowsum, 5, STAGES=3)
    torch.testing.assert_close(out, ref, rtol=1e-2, atol=1e-1)


@pytest.mark.parametrize("K", [512, 1024])
def test_sm90_pipelined(K):
    M = N = 128
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ad = TensorDescriptor.from_tensor(a, [128, 64])
    bd = TensorDescriptor.from_tensor(b, [64, 128])
    cd = TensorDescriptor.from_tensor(c, [128, 128])
    swp.sm90_pipelined_kernel[(1, 1)](ad, bd, cd, K, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64,
                                      NUM_STAGES=3, num_warps=4, num_stages=3)
    torch.cuda.synchronize()
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-1)


# Last: on the GPU the flipped phase reads a slot before its copy lands and the launch fails
# ("unspecified launch failure", seen on an H100), which leaves the process's CUDA context unusable:
# every later launch in this process would fail too.
def test_ring_phase_flipped():
    _rowsum(rk.ring_rowsum, 7, STAGES=3, BUG=1)   # pipeproof must fail this test
'''

EXPECT = [  # (test id, outcome, text that must be in its report / the summary)
    ("test_ring_stock", "PASSED", None),
    ("test_ring_phase_flipped", "FAILED", "read_before_fill"),
    ("test_ring_never_released_short", "PASSED", None),
    ("test_ring_never_released_long_compiled_only", "FAILED", "deadlock"),
    ("test_gluon_ring_rowsum", "PASSED", None),
    ("test_sm90_pipelined[512]", "PASSED", None),
    ("test_sm90_pipelined[1024]", "PASSED", None),
]
SUMMARY = [r"ok .*ring_rowsum\[STAGES=3, BUG=2\]\(n_tiles=2\) \[sm90\]",
           r"read_before_fill .*ring_rowsum\[STAGES=3, BUG=1\]\(n_tiles=7\) \[sm90\]",
           r"ok .*sm90_pipelined_kernel.*\(K=512\) \[sm90\]",
           r"ok .*sm90_pipelined_kernel.*\(K=1024\) \[sm90\]"]


def plugin_flag() -> list[str]:
    """-p for the plugin when it is not installed through its entry point (a bare checkout)."""
    from importlib.metadata import entry_points
    names = {ep.value for ep in entry_points(group="pytest11")}
    return [] if "pipeproof.checker.integrations.pytest_plugin" in names else ["-p", "pipeproof.checker.integrations.pytest_plugin"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    import importlib.util
    for module, why in (("pipeproof.checker.integrations.pytest_plugin", "pip install -e . in this checkout"),
                        ("torch", "torch with CUDA"), ("triton", "pip install triton (3.9.0 is the pinned one; the H200 has 3.6.0)")):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            sys.exit(f"pytest_plugin_h200.py: {module} is not importable ({why})")
    folder = Path(tempfile.mkdtemp(prefix="pipeproof-h200-"))
    (folder / "test_launch.py").write_text(INNER.format(
        fixture=str(ROOT / "tests" / "fixtures" / "pytest_plugin"),
        kernels=str(ROOT / "tests" / "triton_kernels")))
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    report, failed = [f"command: python benchmarks/pytest_plugin_h200.py (cwd {ROOT})"], 0
    outputs = []
    for label, extra in (("uncached", ["--cache-clear"]), ("cached", [])):
        cmd = [sys.executable, "-m", "pytest", "-rA", "-p", "no:randomly", *plugin_flag(),
               "test_launch.py", "--pipeproof", f"--pipeproof-sarif={folder / 'out.sarif'}", *extra]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=600)
            out = proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as err:
            out = f"TIMEOUT after 600 s (a kernel hung?)\n{err.stdout or ''}"
        wall = time.perf_counter() - t0
        outputs.append(out)
        report += ["", f"==== pytest --pipeproof ({label}), {wall:.1f} s wall: {' '.join(cmd[1:])}", out]
    out = outputs[0]
    report.append("==== expectations (the uncached run)")
    for test, outcome, text in EXPECT:
        # (?=\s|$), not \b: a parametrised id ends in "]", and "]" then a newline is no word boundary
        ok = re.search(rf"^{outcome} test_launch\.py::{re.escape(test)}(?=\s|$)", out, re.M) is not None
        if ok and text:
            ok = text in out
        failed += not ok
        report.append(f"{'PASS' if ok else 'FAIL'}  {test} {outcome}" + (f" ({text})" if text else ""))
    for pattern in SUMMARY:
        ok = re.search(pattern, out) is not None
        failed += not ok
        report.append(f"{'PASS' if ok else 'FAIL'}  summary line /{pattern}/")
    m = re.search(r"\((\d+) from the cache\)", outputs[1])
    ok = m is not None and int(m.group(1)) > 0
    report.append(f"{'PASS' if ok else 'FAIL'}  the second run reads the cache")
    failed += not ok
    text = "\n".join(report) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
