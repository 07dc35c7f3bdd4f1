"""checker/engines/reachable.py: the explicit engine run to exhaustion answers what crosscheck asks (every
reachable kind, every path deadlocks) as the networkx graph does where the graph can be built
and no path traps; past a trap, and beyond the graph's in-flight capacity, it still answers."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.checker.engines.graph import build_graph, every_path_deadlocks
from pipeproof.checker.engines.reachable import reach
from pipeproof.spec.load import load_spec
from tests.paths import EXAMPLE_PATHS

RUNAHEAD = Path(__file__).parent / "fixtures" / "reach" / "runahead.toml"


def _graph_kinds(G):
    kinds = set()
    for _, d in G.nodes(data=True):
        kinds.update(d.get("violations", ()))
    for _, _, d in G.edges(data=True):
        kinds.update(d.get("violations", ()))
    return kinds


# The three largest graphs (15-40 s each); cutlass_tma_async_cluster2 keeps a cluster in the fast suite
GRAPH_SLOW = {"mojo_input_tile_cluster2_k2", "bug_input_tile_cluster2_no_drain", "x_mojo_sm100_matmul"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if p.stem in GRAPH_SLOW else p
                                  for p in EXAMPLE_PATHS], ids=lambda p: p.stem)
def test_reach_agrees_with_the_graph_where_no_path_traps(path):
    spec = load_spec(path)
    r = reach(spec)
    assert r.exhaustive
    G = build_graph(spec, max_states=300_000)
    if r.traps:  # the graph goes on past a trap; the hardware and reach do not
        assert set(r.kinds) <= _graph_kinds(G)
        assert r.every_path_deadlocks is False
        return
    assert set(r.kinds) == _graph_kinds(G)
    assert r.every_path_deadlocks == every_path_deadlocks(G)
    assert r.terminal == any(d.get("terminal") for _, d in G.nodes(data=True))


def test_a_path_that_traps_does_not_deadlock():
    """expect_tx above 2^20-1 traps at once: the graph continues past the trap to a deadlock
    and calls every path deadlocked; the hardware (and reach) end the path at the trap."""
    spec = load_spec(next(p for p in EXAMPLE_PATHS if p.stem == "bug_expect_tx_over_limit"))
    assert every_path_deadlocks(build_graph(spec))
    r = reach(spec)
    assert r.traps and r.kinds == ("tx_range",) and r.every_path_deadlocks is False


def test_reach_goes_beyond_the_in_flight_capacity_the_graph_stops_at():
    spec = load_spec(RUNAHEAD)
    with pytest.raises(ValueError, match="copies/commits in flight"):
        build_graph(spec)
    r = reach(spec)
    assert r.exhaustive and r.traps and r.terminal
    assert r.kinds == ("deadlock", "read_before_fill", "overwrite_before_drain", "phase_alias",
                       "over_arrival")


def test_a_limit_is_said_and_decides_nothing():
    spec = load_spec(next(p for p in EXAMPLE_PATHS if p.stem == "mojo_input_tile_cluster2_k2"))
    r = reach(spec, max_states=1000)
    assert r.limit == "max-states 1000" and not r.exhaustive and r.every_path_deadlocks is None
