"""Where the tests find things: the repository, the example specs, the fixtures, the command.

A plain module (not a test module): test files import these constants for module-level use
(parametrize lists, helpers); tests/conftest.py serves the same things as fixtures. ROOT is
the directory above tests/: the repository (pytest's pythonpath), or in .ci/run the copy of
tests/, benchmarks/ and spec/examples/ run against the installed wheel.
"""
from __future__ import annotations

import sys
from pathlib import Path

from pipeproof.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES_DIR = ROOT / "spec" / "examples"
# Every example spec: its file name ("mojo_pcp_nvidia.toml") and its path, both sorted.
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))
EXAMPLE_PATHS = sorted(EXAMPLES_DIR.glob("*.toml"))
FIXTURES_DIR = ROOT / "tests" / "fixtures"
GPU_FIXTURES = FIXTURES_DIR / "gpu"

# The command line as a user runs it: the same entry point as the `pipeproof` console script.
CLI = [sys.executable, "-m", "pipeproof.checker.cli.main"]


def example_path(name: str) -> Path:
    """The path of an example by its file name, with or without ".toml"."""
    return EXAMPLES_DIR / (name if name.endswith(".toml") else f"{name}.toml")


def load_example(name: str):
    """The example spec by its file name, with or without ".toml" (loaded afresh)."""
    return load_spec(example_path(name))
