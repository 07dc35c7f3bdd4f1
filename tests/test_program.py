"""checker/core/program.py: the one plain-Python program order agrees with the compiled one, and
semantics.step, which interprets each op's effects (OP_EFFECTS, compiled into the program rows at P_EFF), changes
only what those effects say, on every example's states."""
from __future__ import annotations

import numpy as np
import pytest

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.core.program import EMPTY, FULL, OP_EFFECTS
from pipeproof.spec.load import load_spec
from pipeproof.spec.schema import OPS, Ring, targets
from tests.paths import EXAMPLE_PATHS as EXAMPLES



@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_program_order_is_the_compiled_one(path):
    """Agent.next_pc / start, from every position of every agent, equal semantics.next_pc /
    settle_pc, and `executed()` is the walk they make."""
    model = compile_model(load_spec(path))
    T = model.tables
    for a, agent in enumerate(model.agents):
        assert agent.start() == tuple(int(x) for x in S.settle_pc(T, a, 0, 0))
        for pc in range(len(agent.ops)):
            for item in range(max(agent.items, 1) + 1):
                assert agent.next_pc(pc, item) == tuple(int(x) for x in S.next_pc(T, a, pc, item)), \
                    (agent.name, pc, item)
        walk, pos = [], tuple(int(x) for x in S.settle_pc(T, a, 0, 0))
        while pos[0] < len(agent.ops):
            walk.append(pos)
            pos = tuple(int(x) for x in S.next_pc(T, a, *pos))
        assert list(agent.executed()) == walk


def _signals(model, state):
    return [state[model.off_sig + 4 * s: model.off_sig + 4 * s + 3]
            for s in range(model.ctas * model.rings * model.max_stages * 2)]


def _check_step(model, state, a, nxt):
    """The changes of agent a's step from `state` to `nxt` are within its op's effects."""
    op = model.current_op(state, a)
    eff = OP_EFFECTS[op.name]
    agent = model.agents[a]
    r = model.ring_names.index(op.ring)
    before, after = _signals(model, state), _signals(model, nxt)
    changed = {s for s in range(len(before)) if tuple(before[s]) != tuple(after[s])}
    kinds = {s % 2 for s in changed}
    if eff.updates < 0 or eff.issues == "copy":  # a copy's update waits for its landing
        assert not changed, (op.name, "updates a signal")
    else:
        assert kinds <= {eff.updates}, (op.name, kinds)
    slots = slice(model.off_slot, model.off_slot + model.ctas * model.rings * model.max_stages)
    if not eff.stores or eff.issues == "copy":
        assert state[slots] == nxt[slots], (op.name, "stores")  # an issued copy stores on landing
    stage = S.ring_pos(model.agf, a, r, S.RF_STAGE)
    if eff.move == "":
        assert state[stage] == nxt[stage], (op.name, "moves")
    elif eff.move == "reset":
        assert nxt[stage] == agent.initial_stages[r]
    inflight = slice(model.off_inf, len(state))
    if not eff.issues:
        assert sorted(state[inflight]) == sorted(nxt[inflight]), \
            (op.name, "leaves something in flight")


def _reachable(model, limit):
    start = model.initial_state()
    seen, todo = {start}, [start]
    while todo and len(seen) < limit:
        state = todo.pop()
        yield state
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is not None and not bits & S.TRAP and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_effects_describe_the_step(path):
    model = compile_model(load_spec(path))
    steps = 0
    for state in _reachable(model, 400):
        for a in range(len(model.agents)):
            nxt, bits, _ = model.apply(state, a)
            if nxt is not None and not bits & S.TRAP:
                _check_step(model, list(state), a, list(nxt))
                steps += 1
    assert steps > 0 or not model.actions(model.initial_state())  # (a spec stuck at its start)


def test_a_wrong_effect_is_caught(monkeypatch):
    """The check above can fail: the step interprets the effects the model was compiled with
    (its P_EFF columns); claim afterwards that arrive_full updates nothing, and a step contradicts it."""
    from pipeproof.checker.core import program
    model = compile_model(load_spec(EXAMPLES[[p.stem for p in EXAMPLES].index("mojo_pcp_nvidia")]))
    monkeypatch.setitem(program.OP_EFFECTS, "arrive_full", program.Effects())
    with pytest.raises(AssertionError, match="updates a signal"):
        for state in _reachable(model, 400):
            for a in range(len(model.agents)):
                nxt, bits, _ = model.apply(state, a)
                if nxt is not None and model.current_op(state, a).name == "arrive_full":
                    _check_step(model, list(state), a, list(nxt))


def test_every_op_has_effects_and_the_table_follows_them():
    assert set(OP_EFFECTS) == set(OPS)
    table = S.effects_table()
    for name, eff in OP_EFFECTS.items():
        row = table[S.OP_CODES[name]]
        assert (row[S.EF_OBS], row[S.EF_UPD], row[S.EF_UNITS]) == (eff.observes, eff.updates, eff.units)
        assert bool(row[S.EF_ASYNC]) == bool(eff.issues) and bool(row[S.EF_BARRIER]) == bool(eff.barrier)
        assert (row[S.EF_TX], row[S.EF_WAITS_READS], row[S.EF_LOCAL], row[S.EF_ACTS]) == \
            (eff.tx, eff.waits_reads, eff.local, eff.acts)
    assert OP_EFFECTS["wait_full"].observes == FULL and OP_EFFECTS["drain"].observes == EMPTY
    assert [n for n, e in OP_EFFECTS.items() if e.local] == ["advance", "reset"]
    assert [n for n, e in OP_EFFECTS.items() if not e.acts] == [
        "wait_full", "wait_empty", "try_full", "try_empty", "read_wait", "sync_wait"]


def test_expected_count_and_targets():
    ring = Ring("main", 4, producer_arrive_count=3, consumer_arrive_count=5)
    assert (ring.expected(FULL), ring.expected(EMPTY), ring.expected("full"), ring.expected("empty")) == (3, 5, 3, 5)
    assert targets(1, 0, "peer") == (0,)
    assert targets(4, 3, "peer") == (0,) and targets(4, 1, "peer") == (2,)
    assert targets(4, 2, "leader") == (0,) and targets(4, 2, "all") == (0, 1, 2, 3)
    assert targets(4, 2, "self") == (2,)
    assert np.array_equal(compile_model(load_spec(EXAMPLES[0])).tables.ring[:, 1:3],
                          [[r.expected(FULL), r.expected(EMPTY)] for r in load_spec(EXAMPLES[0]).all_rings])
