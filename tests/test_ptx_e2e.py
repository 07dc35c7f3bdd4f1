"""pipeproof ptx end to end with the CUDA compiler from PyPI (`pytest -m slow`): a `.cu` file
compiled to PTX and checked, and `--sass ptxas` assembling it and comparing the binary's
arrives. The `cuda` extra's wheels are installed into this interpreter's environment when no
nvcc is found (about 400 MB, as `pip install 'pipeproof[cuda]'` would)."""
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mojo_support import run_command

pytestmark = pytest.mark.slow

CU = Path(__file__).parent / "fixtures" / "ptx" / "src" / "hand" / "pc_sm90.cu"
WHEELS = ("nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-cuda-cccl", "nvidia-nvvm",
          "nvidia-cuda-runtime", "nvidia-cuda-nvdisasm")


def ensure_cuda():
    """nvcc, ptxas and nvdisasm, from PATH or the cuda extra's wheels (installed here once: one
    test, so two pytest-xdist workers never install at once)."""
    from pipeproof.spec.ptx.sass import find_nvdisasm
    from pipeproof.spec.ptx.toolchain import find_tool
    if not (find_tool("nvcc") and find_tool("ptxas") and find_nvdisasm()):
        got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *WHEELS],
                             capture_output=True, text=True, timeout=900)
        assert got.returncode == 0, got.stderr[-2000:]
    assert find_tool("nvcc") and find_tool("ptxas") and find_nvdisasm()


def test_a_cu_file_is_compiled_checked_and_its_sass_keeps_the_arrives():
    ensure_cuda()
    code, out = run_command("ptx", CU, "--arch", "sm_90a", "--arg", "3=6", timeout=600)
    assert code == 0, out
    assert "ok (" in out and '"copy 1024 to=all",  # tma_load_2d_mc pc_sm90.cu:60' in out
    # ptxas assembles the same PTX; the binary's arrives count what the PTX's do
    code, out = run_command("ptx", CU, "--arch", "sm_90a", "--arg", "3=6", "--sass", "ptxas",
                            timeout=600)
    assert code == 0, out
    assert ", 0 over-arriving" in out and "SASS check: 10 SASS arrives" in out, out
