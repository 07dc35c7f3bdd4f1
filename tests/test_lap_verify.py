"""`verify --engine laps` (checker/engines/lap_verify.py): one item count searched with relative laps,
so the states stored stop growing with the item count; violations and everything the
abstraction cannot take are answered by the explicit engine."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pipeproof.checker.cli.main import main
from pipeproof.checker.engines.lap_verify import own_count, verify_laps
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests.pins import PROVED
from tests.specs import standard_toml


def std(items: int, stages: int = 2, consumers: int = 2):
    return load_spec_text(standard_toml(stages=stages, consumers=consumers, items=items), "std.toml")


def test_states_stop_growing_with_the_item_count():
    laps = {i: verify_laps(std(i)) for i in (8, 16, 32, 64)}
    explicit = {i: verify(std(i), por=False) for i in (8, 16, 32, 64)}
    assert all(r.verdict == "ok" and r.engine == "laps" for r in laps.values())
    assert len({r.states for r in laps.values()}) == 1             # the same for every count >= R
    assert all(r.lap_bound <= 8 for r in laps.values())
    assert explicit[8].states < explicit[16].states < explicit[32].states < explicit[64].states
    assert laps[64].states < explicit[64].states                    # and below the explicit count


def test_below_the_lap_bound_it_is_that_one_count():
    """n < R: the start state carries the exact count, so the search is n's own run with
    relative numbers: here exactly as many states as the explicit engine's (symmetry on)."""
    spec = std(2)
    assert verify_laps(spec, por=False).states == verify(spec, por=False).states
    assert verify_laps(spec).states < verify_laps(spec, por=False).states


@pytest.mark.parametrize("name", ["bug_release_before_read", "bug_consumer_count_too_few",
                                  "bug_lapped_observer", "x_persistent_reset_bad"])
def test_a_violation_is_the_explicit_engines_shortest_trace(name, example_spec):
    spec = example_spec(name)
    ours, theirs = verify_laps(spec), verify(spec)
    assert ours.verdict == "violation" and ours.engine == "explicit"
    assert (ours.kinds, ours.depth) == (theirs.kinds, theirs.depth)
    assert ours.traces[ours.kind].to_json() == theirs.traces[theirs.kind].to_json()


@pytest.mark.parametrize("name", sorted(n for n, states in PROVED.items() if states < 60_000))
def test_correct_examples_are_ok(name, example_spec):
    result = verify_laps(example_spec(name))
    assert (result.verdict, result.limit) == ("ok", "")


def test_role_ratios_give_the_parameter(example_spec):
    spec = example_spec("x_mojo_sm100_matmul")  # the scheduler runs n tiles, the rest 2n
    counts = {r.name: r.items for r in spec.roles}
    assert own_count(spec) == min(counts.values())


def test_a_limit_is_inconclusive_never_ok():
    result = verify_laps(std(32, stages=4, consumers=3), max_states=1000, por=False)
    assert result.verdict == "inconclusive" and "1,000 abstract states" in result.limit
    result = verify_laps(std(32, stages=4, consumers=3), max_states=5)
    assert result.verdict == "inconclusive" and "5 abstract states" in result.limit


def test_cli(examples_dir):
    path = str(examples_dir / "mojo_pcp_nvidia.toml")
    out = CliRunner().invoke(main, ["verify", "--engine", "laps", "--json", path])
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert (doc["engine"], doc["verdict"]) == ("laps", "ok")
    assert "with relative laps, the same for every item count >=" in out.output
    bad = CliRunner().invoke(main, ["verify", "--engine", "laps", "--no-symmetry", path])
    assert bad.exit_code == 2
