"""The explored state graph of a small spec, as a networkx DiGraph, and its DOT export.

This is the "graph on request" (docs/model.md "Command line"): a pure-Python breadth-first
exploration through the Model interface (`initial_state`, `apply`, `format_action`),
independent of the numba search in checker/engines/explore.py, so the two engines can be compared
state for state. It is for small specs only: `build_graph` refuses (ValueError) a state space
above `max_states`.

Graph layout:
  * nodes are the states themselves (immutable tuples of ints, as `Model.initial_state()`
    gives them), with attributes
      `index`      BFS discovery order (0 = the initial state; DOT node ids use it),
      `depth`      BFS depth (steps from the initial state),
      `label`      a short readable summary (each agent's next op and item, slot tags,
                   copies/commits in flight),
      `initial`    True for the initial state,
      `terminal`   every agent finished and nothing in flight,
      `deadlock`   some agent unfinished, nothing enabled, nothing in flight,
      `violations` kinds (docs/model.md "Violation kinds" order) that the state itself violates
                   (`deadlock`, `phase_alias`);
  * edges are transitions, with attributes
      `action`     `Model.format_action` text, e.g. `consumer[1].wait_full(stage=0, phase=1)`,
      `code`       the action code,
      `violations` kinds the step commits (the step still leads to its successor, which is
                   explored like any other state; the numba engine instead ends the path there,
                   so node counts agree with `verify().states` only for specs that hold),
      `actions`/`codes` every action that makes this same step, when several do (a DiGraph
                   keeps one edge per pair of states).
  * graph attributes: `name`, `backend`, `initial` (the initial node), `max_states`.

Analyses: `every_path_deadlocks`, `cycles_without_progress`, `summary`; export: `to_dot`,
`write_dot` (Graphviz DOT written here, no pydot/pygraphviz needed).
"""
from __future__ import annotations

import itertools
from collections import deque

import networkx as nx
import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import KIND_BITS, Model, compile_model
from pipeproof.checker.results import KINDS

DEFAULT_MAX_STATES = 100_000


def _model_of(spec_or_model) -> Model:
    return spec_or_model if isinstance(spec_or_model, Model) else compile_model(spec_or_model)


def _kinds(bits: int) -> list[str]:
    return [KINDS[k] for k, bit in enumerate(KIND_BITS) if bits & bit]


def _too_big(model: Model, max_states: int) -> ValueError:
    return ValueError(
        f"{model.spec.path}: the state graph of '{model.spec.name}' has more than "
        f"{max_states:,} states (max_states={max_states:,}); the graph (--graph) is for small "
        f"specs: verify without it, or shrink stages/items/counts")


# ------------------------------------------------------------------ building

def state_label(model: Model, state) -> str:
    """`producer[0] wait_empty #3` per agent (`done` when finished), slot tags, in-flight count."""
    lines = []
    for a, agent in enumerate(model.agents):
        op = model.current_op(state, a)
        if op is None:
            lines.append(f"{agent.name} done")
            continue
        what = op.text or op.name
        if model.agent_field(state, a, S.F_SYNC):
            what += " (blocked)"
        item = model.agent_field(state, a, S.F_ITEM)
        in_body = agent.body_start <= model.agent_field(state, a, S.F_PC) < agent.body_end
        lines.append(f"{agent.name} {what}" + (f" #{item}" if in_body else ""))
    tags = [state[p] for p in range(model.off_slot, model.off_bar)]
    lines.append("slots " + ",".join("-" if t < 0 else str(t) for t in tags))
    inflight = model.inflight_entries(state)
    if inflight:
        lines.append(f"in flight {len(inflight)}")
    return "\n".join(lines)


def _is_terminal(model: Model, state) -> bool:
    return (all(model.current_op(state, a) is None for a in range(len(model.agents)))
            and not model.inflight_entries(state))


def build_graph(spec_or_model, max_states: int = DEFAULT_MAX_STATES) -> nx.DiGraph:
    """Every reachable state and transition of a (small) spec, breadth first.

    Raises ValueError naming the limit when more than `max_states` states are reachable, or
    when the model's in-flight capacity runs out (the numba engine says inconclusive there).
    """
    model = _model_of(spec_or_model)
    if max_states is None:
        max_states = DEFAULT_MAX_STATES
    spec = model.spec
    init = model.initial_state()
    G = nx.DiGraph()
    # (set afterwards: networkx reads a `backend=` keyword as its own dispatch option)
    G.graph.update(name=spec.name, backend=spec.backend, initial=init, max_states=max_states)
    G.add_node(init, index=0, depth=0)
    queue = deque([init])
    n_actions = model.n_actions()
    while queue:
        state = queue.popleft()
        depth = G.nodes[state]["depth"]
        enabled = 0
        for code in range(n_actions):
            nxt, bits, _ = model.apply(state, code)
            if nxt is None:
                continue
            if bits & S.INFLIGHT_FULL:
                raise ValueError(f"{spec.path}: more than {model.inflight} copies/commits in "
                                 f"flight (model capacity); the graph cannot be built")
            enabled += 1
            if nxt not in G:
                if G.number_of_nodes() >= max_states:
                    raise _too_big(model, max_states)
                G.add_node(nxt, index=G.number_of_nodes(), depth=depth + 1)
                queue.append(nxt)
            action = model.format_action(state, code)
            kinds = _kinds(bits)
            if G.has_edge(state, nxt):  # another action making the same step
                e = G.edges[state, nxt]
                e["actions"].append(action)
                e["codes"].append(code)
                e["violations"] = [k for k in KINDS if k in e["violations"] or k in kinds]
            else:
                G.add_edge(state, nxt, action=action, code=code, violations=kinds,
                           actions=[action], codes=[code])
        sdet = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
        sbits = int(S.state_violations(model.tables, np.array(state, dtype=np.int64), enabled, sdet))
        node = G.nodes[state]
        node["label"] = state_label(model, state)
        node["initial"] = state == init
        node["terminal"] = _is_terminal(model, state)
        node["deadlock"] = bool(sbits & S.DEADLOCK)
        node["violations"] = _kinds(sbits)
    return G


# ------------------------------------------------------------------ analyses

def _initial_node(G: nx.DiGraph):
    init = G.graph.get("initial")
    if init is not None and init in G:
        return init
    for n, data in G.nodes(data=True):
        if data.get("initial"):
            return n
    raise ValueError("graph has no initial node")


def terminal_states(G: nx.DiGraph) -> list:
    return [n for n, d in G.nodes(data=True) if d.get("terminal")]


def deadlocked_states(G: nx.DiGraph) -> list:
    return [n for n, d in G.nodes(data=True) if d.get("deadlock")]


def every_path_deadlocks(G: nx.DiGraph) -> bool:
    """True when no terminal, non-deadlocked state is reachable from the initial state.

    The graph is finite and (for this model) acyclic, and a state with no successor is either
    terminal or deadlocked, so then every maximal run ends in a deadlock.
    """
    init = _initial_node(G)
    reachable = nx.descendants(G, init) | {init}
    return not any(G.nodes[n].get("terminal") and not G.nodes[n].get("deadlock") for n in reachable)


def cycles_without_progress(G: nx.DiGraph, limit: int | None = 1000) -> list[list]:
    """Simple cycles of the graph (each a list of states), at most `limit` of them.

    Every agent step moves a program counter or a barrier count forward and every landing
    removes an in-flight entry, so a cycle is a run that makes no progress; the model is
    expected to be acyclic and this to be empty.
    """
    if nx.is_directed_acyclic_graph(G):
        return []
    cycles = nx.simple_cycles(G)
    return [list(c) for c in (cycles if limit is None else itertools.islice(cycles, limit))]


def summary(G: nx.DiGraph) -> dict:
    violating_edges = sum(1 for _, _, d in G.edges(data=True) if d.get("violations"))
    return {
        "nodes": G.number_of_nodes(),
        "edges": G.number_of_edges(),
        "terminal": len(terminal_states(G)),
        "deadlocked": len(deadlocked_states(G)),
        "violating_edges": violating_edges,
        "every_path_deadlocks": every_path_deadlocks(G),
        "has_cycles": not nx.is_directed_acyclic_graph(G),
    }


# ------------------------------------------------------------------ DOT export

def _quote(text) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, newlines as \\n."""
    s = str(text).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + s.replace("\r", "").replace("\n", "\\n") + '"'


def to_dot(G: nx.DiGraph) -> str:
    """Graphviz DOT text: one line per node and one `A -> B [...]` line per edge.

    Deadlocked states and violating edges are red; other violating states orange; the
    initial state has a double border; terminal states are green.
    """
    ids = {n: d.get("index", i) for i, (n, d) in enumerate(G.nodes(data=True))}
    out = [f"digraph {_quote(G.graph.get('name', 'pipeproof'))} {{",
           "  node [shape=box, fontname=\"monospace\", fontsize=10];",
           "  edge [fontname=\"monospace\", fontsize=9];"]
    for n, d in sorted(G.nodes(data=True), key=lambda nd: ids[nd[0]]):
        label = d.get("label", str(ids[n]))
        if d.get("violations"):
            label += "\n[" + ", ".join(d["violations"]) + "]"
        attrs = [f"label={_quote(label)}"]
        if d.get("initial"):
            attrs.append("peripheries=2")
        if d.get("deadlock"):
            attrs += ["color=red", "fontcolor=red", "style=filled", "fillcolor=\"#ffe0e0\""]
        elif d.get("violations"):
            attrs += ["color=orange", "style=filled", "fillcolor=\"#fff0d0\""]
        elif d.get("terminal"):
            attrs += ["color=darkgreen", "style=filled", "fillcolor=\"#e0ffe0\""]
        out.append(f"  {ids[n]} [{', '.join(attrs)}];")
    for u, v, d in sorted(G.edges(data=True), key=lambda e: (ids[e[0]], ids[e[1]])):
        label = " | ".join(d.get("actions") or [d.get("action", "")])
        if d.get("violations"):
            label += "\n[" + ", ".join(d["violations"]) + "]"
        attrs = [f"label={_quote(label)}"]
        if d.get("violations"):
            attrs += ["color=red", "fontcolor=red", "penwidth=2"]
        out.append(f"  {ids[u]} -> {ids[v]} [{', '.join(attrs)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def write_dot(spec, path, max_states: int | None = None) -> nx.DiGraph:
    """Build the graph of `spec` (a Spec or Model) and write it to `path` as DOT; returns it.

    `max_states=None` means DEFAULT_MAX_STATES (100,000); larger graphs raise ValueError.
    """
    G = build_graph(spec, max_states=DEFAULT_MAX_STATES if max_states is None else max_states)
    text = to_dot(G)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return G
