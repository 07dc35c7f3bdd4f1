"""The step of each exported op, written once (issue 16, item 1): checker/export_steps.py reads
OP_EFFECTS into step actions, and the Promela and Murphi exports print that list.

- Each op's actions follow from its effects (a drain is a wait and an advance, a copy issues an
  entry that stores and completes bytes, a sync moves on only when its generation completes).
- Every op the export covers has a step, in every exportable example.
- op_step (Promela) and op_rule (Murphi) name no op: changing an op's effects changes both
  exports, with no edit to either printer.

No SPIN or Rumur here: tests/test_export_models.py runs the tools on the printed models.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from pipeproof.checker import export_murphi, export_promela
from pipeproof.checker import program
from pipeproof.checker.export_ir import ENTRY_COMMIT, ENTRY_COPY, IR, UNSUPPORTED_OPS, check_exportable
from pipeproof.checker.export_models import to_murphi, to_promela
from pipeproof.checker.export_steps import (
    Advance, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue, MovePc,
    Observe, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
)
from pipeproof.checker.program import EMPTY, FULL, OP_EFFECTS, Effects
from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.schema import OPS, SpecError
from tests.paths import EXAMPLE_PATHS, example_path


def _exportable():
    out = []
    for path in EXAMPLE_PATHS:
        try:
            check_exportable(load_spec(path))
        except SpecError:
            continue
        out.append(path.name)
    return out


def _steps(spec):
    """{op text or name: actions} of the first group that has the op."""
    ir = IR(spec, "promela")
    out = {}
    for g in ir.groups:
        for p, (op, _) in enumerate(g.ops):
            out.setdefault(op.text or op.name, step_actions(ir, g, p))
    return ir, out


def test_each_op_is_its_effects():
    ir, steps = _steps(load_spec(example_path("try_full_prefetch_ok")))
    assert steps["try_full"] == [CheckWindow(FULL), TryReady(FULL), MovePc()]
    assert steps["wait_full unless=ready"] == [AwaitSignal(FULL, True), Observe(FULL, True), MovePc()]
    assert steps["wait_empty"] == [AwaitSignal(EMPTY, False), Observe(EMPTY, False), MovePc()]
    assert steps["expect_tx 4096"] == [Update(FULL, 1, 4096), MovePc()]
    b = ir.bytes_vals.index(4096)
    assert steps["copy 4096"][0] == Issue(ENTRY_COPY, FULL, -1, 0, b)
    assert steps["read"] == [CheckRead(-1), MovePc()]
    assert steps["arrive_empty"] == [Update(EMPTY, 1, 0), MovePc()]
    assert steps["advance"][:2] == [Advance(), MovePc()]  # then the exit check: copies fly


def test_drain_commit_reset_and_barriers():
    spec = load_spec_text("""
[pipeline]
name = "steps"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "arrive_full", "write", "sync_arrive bar", "advance"]
epilogue = ["drain", "reset"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "sync_wait bar", "read", "commit_empty 2", "sync bar2", "advance"]

[barrier.bar]
roles = ["producer", "consumer"]
count = 1

[barrier.bar2]
roles = ["consumer"]
""", "steps.toml")
    ir, steps = _steps(spec)
    assert steps["drain"][:3] == [AwaitSignal(EMPTY, False), Observe(EMPTY, False), Advance()]
    assert steps["reset"][0] == Reset()
    assert steps["write"][0] == Store(-1)
    assert steps["commit_empty 2"][0] == Issue(ENTRY_COMMIT, EMPTY, None, 2, None)
    bar, bar2 = ir.barriers[0][0], ir.barriers[1][0]
    assert steps["sync_arrive bar"][:3] == [RecordArrival(bar), BarrierArrive(bar, 1, False, False), MovePc()]
    assert steps["sync_wait bar"][0] == BarrierWait(bar, False)
    sync = steps["sync bar2"]
    assert sync[0] == BarrierArrive(bar2, 1, True, True, (MovePc(),))  # moves on only when released
    assert MovePc() not in sync
    # something is in flight (the commit): a step that may end the run checks it
    assert any(ExitCheck() in acts for acts in steps.values())


def test_bytes_over_the_tx_limit_trap_before_anything_happens():
    spec = load_spec(example_path("bug_expect_tx_over_limit"))
    _, steps = _steps(spec)
    over = [acts for acts in steps.values() if Trap("tx_range") in acts]
    assert over and all(not any(isinstance(a, (Update, Issue)) for a in acts) for acts in over)


@pytest.mark.parametrize("name", _exportable())
def test_every_exported_op_has_a_step(name):
    ir = IR(load_spec(example_path(name)), "promela")
    for g in ir.groups:
        for p in range(g.length):
            acts = step_actions(ir, g, p)
            # exactly one way on: a plain move, or a barrier's completion
            moves = acts.count(MovePc()) + sum(a.on_complete.count(MovePc()) for a in acts
                                               if isinstance(a, BarrierArrive))
            assert moves == 1, (g.ops[p][0].name, acts)


def test_the_exported_ops_are_all_ops_but_the_refused():
    assert set(OPS) - set(UNSUPPORTED_OPS) <= set(OP_EFFECTS)
    assert all(OP_EFFECTS[name].issues == "read" or OP_EFFECTS[name].blocks and OP_EFFECTS[name].observes < 0
               for name in UNSUPPORTED_OPS)


@pytest.mark.parametrize("fn", [export_promela._Promela.op_step, export_promela._Promela._act,
                                export_murphi._Murphi.op_rule, export_murphi._Murphi._act])
def test_the_printers_name_no_op(fn):
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & set(OPS), strings & set(OPS)


def test_the_exports_follow_the_effects(monkeypatch):
    # A write that also advanced its stage: both exports print the advance after the store,
    # with no edit to either printer.
    spec = load_spec(example_path("bug_every_lane_arrive_full"))
    before = to_promela(spec), to_murphi(spec)
    assert "store_tag(stage[ME]" in before[0]
    monkeypatch.setitem(program.OP_EFFECTS, "write", Effects(stores=True, move="advance"))
    after = to_promela(spec), to_murphi(spec)
    assert after != before
    promela_store = next(line for line in after[0].splitlines() if "store_tag(stage[ME]" in line)
    nxt = after[0].splitlines()[after[0].splitlines().index(promela_store) + 1]
    assert "stage[ME] == STAGES-1" in nxt
    lines = after[1].splitlines()
    k = next(i for i, line in enumerate(lines) if "store_tag(ag_" in line)
    assert ".stage = STAGES-1 then" in lines[k + 1]
