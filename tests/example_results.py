"""The examples in spec/examples/, loaded and verified once per test session.

A plain module (not a test module): tests/test_examples.py checks these results against the
pins (tests/pins.py) and replays their counterexamples; tests/test_expressiveness.py and
tests/test_bmc.py use the results without reduction and the declared kinds. Each function
caches by the example's file name ("mojo_pcp_nvidia.toml").
"""
from __future__ import annotations

import functools

from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec
from tests.paths import EXAMPLES_DIR

# A correct spec must be found correct quickly; a runaway exploration should fail, not hang.
TIMEOUT_S = 60.0


@functools.cache
def spec_of(name: str):
    return load_spec(EXAMPLES_DIR / name)


@functools.cache
def result_of(name: str):
    """The first verification of an example (both reductions, the default)."""
    return verify(spec_of(name), timeout=TIMEOUT_S)


@functools.cache
def symmetric_result_of(name: str):
    """The verification of an example without partial-order reduction (symmetry only)."""
    return verify(spec_of(name), timeout=TIMEOUT_S, por=False)


@functools.cache
def unreduced_result_of(name: str):
    """The verification of an example without any reduction."""
    return verify(spec_of(name), timeout=TIMEOUT_S, symmetry=False, por=False)


def expected_kinds(spec) -> tuple[str, ...]:
    """The kinds a violating example declares: `expect` first, then `expect_any`."""
    return (spec.expect,) + tuple(k for k in spec.expect_any if k != spec.expect)
