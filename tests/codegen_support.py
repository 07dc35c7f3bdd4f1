"""What the generator's tests share: a spec text's generated kernel, one agent's function in it,
and nvcc where it is installed (the tests that compile skip cleanly without it)."""
from __future__ import annotations

import shutil
import textwrap

from pipeproof.cuda_ref.codegen import generate
from pipeproof.spec.load import load_spec_text

NVCC = shutil.which("nvcc") or shutil.which("/usr/local/cuda/bin/nvcc")


def gen_text(text: str, path: str = "t.toml"):
    """The generated reference kernel of a spec given as (indented) TOML text."""
    return generate(load_spec_text(textwrap.dedent(text), path))


def agent_code(g, index: int) -> str:
    """Agent `index`'s device function in the generated source."""
    src = g.source
    start = src.index(f"__device__ __noinline__ void agent_{index}(")
    return src[start:src.index("\n}\n", start)]
