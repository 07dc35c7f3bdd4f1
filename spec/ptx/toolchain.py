"""The CUDA compiler the PTX front end runs on request (`pipeproof ptx KERNEL.cu`): nvcc on
PATH, else the one the optional extra `pipeproof[cuda]` installs (the `nvidia-cuda-nvcc`
wheel). Nothing else here runs a compiler; a .ptx file needs none."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeproof.spec.schema import SpecError

INSTALL = "pip install 'pipeproof[cuda]'"


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    site = Path(sys.executable).parent.parent / "lib"
    for p in site.glob(f"python3*/site-packages/nvidia/cu*/bin/{name}"):
        return str(p)
    return None


def compile_cu(path: str, arch: str, include=()) -> str:
    """The PTX of `path` for `arch` (nvcc -ptx -lineinfo, C++17)."""
    if not os.path.isfile(path):
        raise SpecError(f"{path}: no such file")
    nvcc = find_tool("nvcc")
    if nvcc is None:
        raise SpecError(f"{path}: compiling CUDA needs nvcc ({INSTALL}); a .ptx file needs nothing")
    out = Path(tempfile.mkdtemp(prefix="pipeproof-ptx-")) / (Path(path).stem + ".ptx")
    cmd = [nvcc, f"-arch={arch}", "-ptx", "-lineinfo", "-std=c++17", "--expt-relaxed-constexpr",
           *[f"-I{d}" for d in include], path, "-o", str(out)]
    got = subprocess.run(cmd, capture_output=True, text=True)
    try:
        if got.returncode != 0:
            last = next((ln for ln in got.stderr.splitlines() if "error" in ln),
                        (got.stderr.strip().splitlines() or ["failed"])[-1])
            raise SpecError(f"{path}: nvcc failed: {' '.join(last.split())}")
        return out.read_text()
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)
