"""Shared fixtures of the tests.

What several test files share lives in plain modules beside this one, never in a test module
(no test_*.py imports another):

- tests/paths.py: the repository (ROOT), the examples (EXAMPLES_DIR, EXAMPLE_NAMES,
  EXAMPLE_PATHS, example_path, load_example), the fixture folders, the command line (CLI);
- tests/pins.py: the pinned verdict numbers of the examples (state and transition counts,
  counterexample lengths, proved abstract state counts);
- tests/example_results.py: each example loaded and verified once per session;
- tests/generators.py, tests/generators_expressive.py: the hypothesis spec generators, and
  `check_result`, the invariants of one result with its counterexamples replayed;
- tests/specs.py: spec text (the standard pipeline and a few small specs);
- tests/replay.py: the independent replayer; tests/replay_support.py: `check_replay`, a
  counterexample replayed through it;
- tests/export_support.py: SPIN and Rumur beside pipeproof (`both_tools`, `agree`, OPT,
  TIMEOUT), the slot-part and reset-window specs (PART_AND_RESET_SPECS, `part_spec`), the
  printed read check (`check_printed_read_miss`);
- tests/por_support.py: the partial-order reduction's soundness checks (`reachable`,
  `commutes_at`, `check_independent_steps`, `check_independent_entries`, ...);
- tests/rules_support.py: tiny specs from role dicts (`spec_text`, `load_roles`) and `Run`, a
  compiled model stepped by printed actions;
- tests/lap_support.py: `random_states`, states of the lap abstraction from random walks;
- tests/conform_support.py: GPU event logs made from model walks (`walk`, `shuffle_ties`);
- tests/user_shaped_support.py: `user_shaped_text`, issue 35's user-shaped GEMM as a spec;
- tests/mojo_support.py: `pipeproof mojo` run in this process on the committed IR fixtures,
  each kernel's extraction shared across tests.

Module-level code (parametrize lists, helpers) imports those modules; a test that needs one
of the common ones in its body asks for it as a fixture below.
"""
from __future__ import annotations

import pytest

from tests import paths


@pytest.fixture(scope="session")
def root():
    """The repository (in .ci/run: the copy the tests run in)."""
    return paths.ROOT


@pytest.fixture(scope="session")
def examples_dir():
    """spec/examples/."""
    return paths.EXAMPLES_DIR


@pytest.fixture(scope="session")
def example_spec():
    """Load an example spec by its file name, with or without ".toml": `example_spec("x")`."""
    return paths.load_example


@pytest.fixture
def cli_command():
    """The command line as a user runs it, `[python, "-m", "pipeproof.checker.cli.main"]` (a fresh
    list, to extend with the arguments)."""
    return list(paths.CLI)
