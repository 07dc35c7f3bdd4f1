"""The explored state graph (checker/engines/graph.py): structure, analyses, DOT export, --graph.

The graph is built by a pure-Python BFS over the Model interface; for specs that hold, its node
and edge counts must equal the numba engine's `states` and `transitions` exactly. The graph is
of the concrete agents, so it is compared with the engine run without symmetry reduction.
"""
from __future__ import annotations

import re

import networkx as nx
import pytest
from click.testing import CliRunner

from pipeproof.checker.cli.main import main as cli_main
from pipeproof.checker.engines.graph import (build_graph, cycles_without_progress, every_path_deadlocks, summary,
                           to_dot, write_dot)
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests.paths import EXAMPLES_DIR
from tests.pins import PINNED_STATES_NO_SYMMETRY
from tests.specs import standard_toml

EDGE_LINE = re.compile(r"^\s*(\d+) -> (\d+) \[")
NODE_LINE = re.compile(r"^\s*(\d+) \[")


def pipeline(stages=2, consumers=1, items=3, producer_phase=None, consumer_count=None,
             backend="nvidia", consumer_body=None, name=None):
    """The standard pipeline (producer writes, consumers read) with knobs for its bugs."""
    return load_spec_text(standard_toml(stages, consumers, items, producer_phase, consumer_count,
                                        backend, consumer_body=consumer_body,
                                        name=name or f"standard {stages}x{consumers}x{items}"),
                          "test_graph.toml")


# ------------------------------------------------------------------ a correct pipeline

def test_correct_pipeline_graph():
    spec = pipeline(stages=2, consumers=1, items=4)
    G = build_graph(spec)
    result = verify(spec, symmetry=False, por=False)
    assert result.verdict == "ok"
    assert G.number_of_nodes() == result.states
    assert G.number_of_edges() == result.transitions
    assert not every_path_deadlocks(G)
    terminal = [n for n, d in G.nodes(data=True) if d["terminal"]]
    assert len(terminal) == 1
    assert not any(d["deadlock"] or d["violations"] for _, d in G.nodes(data=True))
    assert not any(d["violations"] for _, _, d in G.edges(data=True))
    assert cycles_without_progress(G) == []
    s = summary(G)
    assert s == {"nodes": result.states, "edges": result.transitions, "terminal": 1,
                 "deadlocked": 0, "violating_edges": 0, "every_path_deadlocks": False,
                 "has_cycles": False}
    assert nx.is_directed_acyclic_graph(G)


def test_node_and_edge_attributes():
    spec = pipeline(stages=2, consumers=2, items=2)
    model = compile_model(spec)
    G = build_graph(model)  # a Model is accepted as well as a Spec
    init = model.initial_state()
    assert G.graph["initial"] == init
    assert [n for n, d in G.nodes(data=True) if d["initial"]] == [init]
    d0 = G.nodes[init]
    assert d0["index"] == 0 and d0["depth"] == 0
    assert "producer[0] wait_empty #0" in d0["label"]
    assert "consumer[1] wait_full #0" in d0["label"]
    # The only first step: the producer passes its wait on empty[0].
    (succ,) = list(G.successors(init))
    assert G.edges[init, succ]["action"] == "producer[0].wait_empty(stage=0, phase=1)"
    assert G.edges[init, succ]["violations"] == []
    # indices are a BFS order: 0..n-1, depth never decreases with the index
    nodes = sorted(G.nodes(data=True), key=lambda nd: nd[1]["index"])
    assert [d["index"] for _, d in nodes] == list(range(G.number_of_nodes()))
    assert all(a[1]["depth"] <= b[1]["depth"] for a, b in zip(nodes, nodes[1:]))
    for u, v, d in G.edges(data=True):
        assert G.nodes[v]["depth"] <= G.nodes[u]["depth"] + 1
        assert d["action"] == model.format_action(u, d["code"])
    (final,) = [n for n, d in G.nodes(data=True) if d["terminal"]]
    assert G.out_degree(final) == 0
    assert all(line.endswith(" done") for line in G.nodes[final]["label"].splitlines()[:3])


@pytest.mark.parametrize("stages,consumers,items", [(2, 1, 1), (2, 1, 8), (2, 2, 3), (3, 2, 2),
                                                    (4, 1, 5), (2, 3, 2)])
def test_state_counts_match_numba_engine(stages, consumers, items):
    spec = pipeline(stages=stages, consumers=consumers, items=items)
    result = verify(spec, symmetry=False, por=False)
    G = build_graph(spec)
    assert result.verdict == "ok"
    assert (G.number_of_nodes(), G.number_of_edges()) == (result.states, result.transitions)
    assert summary(G)["terminal"] == 1


GRAPH_LIMIT = 20_000  # the pure-Python graph is for small specs


def _small_ok_examples():
    """The `ok` examples whose pinned state count (tests/pins.py) fits the graph."""
    return [pytest.param(EXAMPLES_DIR / name, id=name[:-5])
            for name, states in sorted(PINNED_STATES_NO_SYMMETRY.items()) if states <= GRAPH_LIMIT]


@pytest.mark.parametrize("path", _small_ok_examples())
def test_examples_that_hold_agree_with_numba_engine(path):
    """Templates, copies in flight, clusters, named barriers: both engines see the same space."""
    spec = load_spec(path)
    result = verify(spec, max_states=GRAPH_LIMIT, symmetry=False, por=False)
    assert result.verdict == "ok"
    G = build_graph(spec)
    assert G.number_of_nodes() == result.states
    # an edge may stand for several actions making the same step (twin copies landing)
    assert sum(len(d["codes"]) for _, _, d in G.edges(data=True)) == result.transitions
    assert not every_path_deadlocks(G)
    assert cycles_without_progress(G) == []


# ------------------------------------------------------------------ deadlocks

def test_producer_at_phase_0_every_path_deadlocks_nvidia():
    """nvidia: a producer at phase 0 waits for empty phase 0 to complete, which never happens."""
    G = build_graph(pipeline(producer_phase=0))
    assert every_path_deadlocks(G)
    s = summary(G)
    assert s["terminal"] == 0 and s["deadlocked"] >= 1
    init = G.graph["initial"]
    assert G.nodes[init]["deadlock"] and G.nodes[init]["violations"] == ["deadlock"]


def test_producer_at_phase_0_every_path_deadlocks_amd():
    G = build_graph(pipeline(producer_phase=0, backend="amd"))
    assert every_path_deadlocks(G)
    assert summary(G)["deadlocked"] >= 1


def test_deadlock_after_some_steps():
    """empty initialised for 2 arrivals but one consumer: the producer fills the ring and stops."""
    spec = pipeline(stages=2, consumers=1, items=4, consumer_count=2)
    G = build_graph(spec)
    assert G.number_of_nodes() > 5
    assert every_path_deadlocks(G)
    dead = [n for n, d in G.nodes(data=True) if d["deadlock"]]
    assert dead and all(G.out_degree(n) == 0 for n in dead)
    # every maximal path ends in a deadlock: every sink is deadlocked
    assert all(G.nodes[n]["deadlock"] for n in G if G.out_degree(n) == 0)
    assert verify(spec).kind == "deadlock"


def test_some_paths_deadlock_is_not_every_path():
    G = build_graph(pipeline(stages=2, consumers=1, items=2))
    assert not every_path_deadlocks(G)
    # graft a deadlocked sink onto a copy: still not every path
    H = G.copy()
    H.add_node("stuck", label="stuck", initial=False, terminal=False, deadlock=True,
               violations=["deadlock"])
    H.add_edge(H.graph["initial"], "stuck", action="x", violations=[])
    assert not every_path_deadlocks(H)
    assert summary(H)["deadlocked"] == 1


# ------------------------------------------------------------------ violations and cycles

def test_violating_steps_are_marked_and_explored_past():
    spec = pipeline(stages=2, consumers=1, items=4,
                    consumer_body=["wait_full", "arrive_empty", "read", "advance"])
    assert verify(spec).kind == "overwrite_before_drain"
    G = build_graph(spec)
    bad = [(u, v) for u, v, d in G.edges(data=True) if d["violations"]]
    assert bad
    assert all("overwrite_before_drain" in G.edges[e]["violations"] or
               "read_before_fill" in G.edges[e]["violations"] for e in bad)
    # the successor of a violating step is still in the graph and is explored further
    assert any(G.out_degree(v) > 0 for _, v in bad)
    assert summary(G)["violating_edges"] == len(bad)
    dot = to_dot(G)
    red_edges = [ln for ln in dot.splitlines() if EDGE_LINE.match(ln) and "color=red" in ln]
    assert len(red_edges) == len(bad)


def test_cycles_without_progress_on_a_cyclic_graph():
    G = build_graph(pipeline(stages=2, consumers=1, items=1))
    assert cycles_without_progress(G) == []
    H = G.copy()
    order = sorted(H.nodes, key=lambda n: H.nodes[n]["index"])
    a, b = order[1], order[2]
    H.add_edge(b, a, action="back", violations=[])
    cycles = cycles_without_progress(H)
    assert cycles and set(cycles[0]) == {a, b}
    assert summary(H)["has_cycles"]
    assert len(cycles_without_progress(H, limit=1)) == 1


def test_state_limit_is_a_clear_error():
    spec = pipeline(stages=2, consumers=2, items=4)
    with pytest.raises(ValueError, match=r"more than 10 states.*max_states=10"):
        build_graph(spec, max_states=10)
    states = verify(spec, symmetry=False, por=False).states
    assert build_graph(spec, max_states=states).number_of_nodes() == states


# ------------------------------------------------------------------ DOT

def test_dot_output(tmp_path):
    spec = pipeline(stages=2, consumers=2, items=2, name='ring "two" \\ consumers')
    out = tmp_path / "g.dot"
    G = write_dot(spec, out)
    text = out.read_text()
    lines = text.splitlines()
    assert lines[0].startswith("digraph ") and lines[0].endswith("{")
    assert lines[-1] == "}"
    assert r'"ring \"two\" \\ consumers"' in lines[0]
    edges = [EDGE_LINE.match(ln).groups() for ln in lines if EDGE_LINE.match(ln)]
    nodes = [NODE_LINE.match(ln).group(1) for ln in lines if NODE_LINE.match(ln)]
    assert len(edges) == G.number_of_edges() == verify(spec, symmetry=False, por=False).transitions
    assert len([ln for ln in lines if "->" in ln]) == G.number_of_edges()
    assert sorted(map(int, nodes)) == list(range(G.number_of_nodes()))
    ids = {d["index"]: n for n, d in G.nodes(data=True)}
    assert all(G.has_edge(ids[int(u)], ids[int(v)]) for u, v in edges)
    for ln in lines:  # every quote is escaped or paired
        assert ln.replace('\\\\', '').replace('\\"', '').count('"') % 2 == 0
    assert "producer[0].wait_empty(stage=0, phase=1)" in text
    assert "peripheries=2" in lines[3]  # node 0 is the initial state, first node line


def test_dot_deadlocked_state_is_red(tmp_path):
    out = tmp_path / "dead.dot"
    G = write_dot(pipeline(stages=2, consumers=1, items=3, consumer_count=2), out)
    text = out.read_text()
    dead_ids = {str(d["index"]) for _, d in G.nodes(data=True) if d["deadlock"]}
    red = {NODE_LINE.match(ln).group(1) for ln in text.splitlines()
           if NODE_LINE.match(ln) and "color=red" in ln}
    assert dead_ids and red == dead_ids
    assert "[deadlock]" in text


def test_write_dot_respects_limit(tmp_path):
    with pytest.raises(ValueError, match="max_states=5"):
        write_dot(pipeline(), tmp_path / "x.dot", max_states=5)
    assert not (tmp_path / "x.dot").exists()


# ------------------------------------------------------------------ the CLI flag

def test_cli_graph_flag_writes_dot(tmp_path):
    spec_path = tmp_path / "ring.toml"
    spec_path.write_text(standard_toml(items=3, name="cli graph"))
    out = tmp_path / "ring.dot"
    res = CliRunner().invoke(cli_main, ["verify", str(spec_path), "--graph", str(out)])
    assert res.exit_code == 0, res.output
    text = out.read_text()
    assert text.startswith('digraph "cli graph" {')
    states = verify(load_spec(spec_path), symmetry=False, por=False).states
    assert len([ln for ln in text.splitlines() if NODE_LINE.match(ln)]) == states
