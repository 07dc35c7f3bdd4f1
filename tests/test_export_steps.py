"""The step of each exported op, written once (issue 16, item 1): checker/models/steps.py reads
OP_EFFECTS into step actions, and the Promela and Murphi exports print that list.

- Each op's actions follow from its effects (a drain is a wait and an advance, a copy issues an
  entry that stores and completes bytes, a sync moves on only when its generation completes).
- Every op the export covers has a step, in every exportable example.
- op_step (Promela) and op_rule (Murphi) name no op: changing an op's effects changes both
  exports, with no edit to either printer.
- Slot parts and the phase_alias window after a `reset` (docs/rules.md): each fill stores into
  its part (a consumer-side fill into every part), an agent that owns parts is a group of its
  own, only agents with a reset record (k', ph') (raw while a reset lies ahead), and the
  printed read check is semantics.read_miss at the read's own stage, item by item (parts are
  per slot, rule R3: check_printed_read_miss). PART_AND_RESET_SPECS, the specs those rules
  decide (both in tests/export_support.py), are run by SPIN and Rumur in
  tests/test_export_models.py.

No SPIN or Rumur here: tests/test_export_models.py runs the tools on the printed models.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

import pytest

from pipeproof.checker.models import murphi as export_murphi
from pipeproof.checker.models import promela as export_promela
from pipeproof.checker.core import program
from pipeproof.checker.models.ir import (
    ENTRY_COMMIT, ENTRY_COPY, IR, UNSUPPORTED_OPS, check_exportable,
)
from pipeproof.checker.models.exporter import to_murphi, to_promela
from pipeproof.checker.models.steps import (
    Advance, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue, MovePc,
    Observe, PassWindow, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
)
from pipeproof.checker.core.program import EMPTY, FULL, OP_EFFECTS, Effects
from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.schema import OPS, SpecError
from tests.export_support import PART_AND_RESET_SPECS, check_printed_read_miss, part_spec, role_toml
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
    # the epilogue's reset lies ahead of the drain: its wait records the window raw
    assert steps["drain"][:4] == [AwaitSignal(EMPTY, False), Observe(EMPTY, False),
                                  PassWindow(EMPTY, "always", True), Advance()]
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


def test_the_exported_ops_are_all_ops():
    # async reads were refused until tests/test_export_async.py, the async write until issue 47
    # (tests/test_export_nested.py): no op is refused now
    assert set(UNSUPPORTED_OPS) == set()
    assert set(OPS) <= set(OP_EFFECTS)


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


# ------------------------------------------------------------------ slot parts, reset windows
# Specs where the slot parts (docs/rules.md "Slot parts") and the phase_alias window after a
# `reset` decide the verdict (tests/export_support.py PART_AND_RESET_SPECS);
# tests/test_export_models.py runs SPIN and Rumur on every one.

def _spec(name):
    text = next(t for n, t, _ in PART_AND_RESET_SPECS if n == name)
    return load_spec_text(text, f"{name}.toml")


def _group(ir, label):
    return next(g for g in ir.groups if g.label == label)


def test_fills_store_into_their_parts():
    ir = IR(load_spec(example_path("bug_expect_tx_too_few_bytes")), "promela")
    assert ir.n_parts == 2 and ir.ep == 3
    g = ir.groups[0]
    copies = [step_actions(ir, g, p)[0] for p, (op, _) in enumerate(g.ops)
              if OP_EFFECTS[op.name].issues == "copy"]
    assert [c.part for c in copies] == [0, 1]
    # the entry names its part (+ 1), and the landing stores into it
    text = to_promela(load_spec(example_path("bug_expect_tx_too_few_bytes")))
    assert "*EP + 1)" in text and "*EP + 2)" in text and "store_tag(ls_, pe_," in text
    murphi = to_murphi(load_spec(example_path("bug_expect_tx_too_few_bytes")))
    assert "slot_tag: array [stage_t] of array [part_t] of tag_t;" in murphi


def test_a_consumer_side_fill_stores_into_every_part():
    ir = IR(_spec("epilogue_alias"), "promela")
    g = _group(ir, "consumer")
    write = next(p for p, (op, _) in enumerate(g.ops) if OP_EFFECTS[op.name].stores)
    assert step_actions(ir, g, write)[0] == Store(ir.model.tag_epilogue, -1)


def test_agents_that_own_parts_are_groups_of_their_own():
    ir = IR(_spec("two_writers"), "murphi")
    assert [g.label for g in ir.groups] == ["producer[0]", "producer[1]", "consumer"]
    stores = [[a for p in range(g.length) for a in step_actions(ir, g, p) if isinstance(a, Store)]
              for g in ir.groups[:2]]
    assert stores == [[Store(-1, 0)], [Store(-1, 1)]]
    assert "scalarset" not in to_murphi(_spec("two_writers"), symmetry=True)
    # agents that fill nothing stay one group (and symmetric)
    ir = IR(load_spec(example_path("bug_every_lane_expect_tx")), "murphi")
    assert [g.label for g in ir.groups] == ["producer[leader]", "producer", "consumer"]


def test_only_agents_with_a_reset_record_their_window():
    spec = load_spec(example_path("x_persistent_reset_ok"))
    ir = IR(spec, "promela")
    producer, consumer = _group(ir, "producer"), _group(ir, "consumer")
    # a reset lies ahead of every body wait: (k, ph) is recorded as it is
    assert step_actions(ir, consumer, 0)[:3] == [AwaitSignal(FULL, False), Observe(FULL, False),
                                                 PassWindow(FULL, "always", True)]
    assert step_actions(ir, producer, 0)[2] == PassWindow(EMPTY, "always", True)
    # the drain comes after the last reset: (k - (ph - p0), p0)
    drain = [p for p, (op, k) in enumerate(producer.ops) if k >= 0]
    assert drain and all(PassWindow(EMPTY, "always", False) in step_actions(ir, producer, p)
                         for p in drain)
    # a try records when it found the phase complete; a wait unless=ready when it was not skipped
    ir = IR(_spec("copy2_reset2_pc_try"), "promela")
    consumer = _group(ir, "consumer")
    assert step_actions(ir, consumer, 0)[:4] == [CheckWindow(FULL), TryReady(FULL),
                                                 PassWindow(FULL, "ready", True), MovePc()]
    assert step_actions(ir, consumer, 1)[2] == PassWindow(FULL, "not_ready", True)
    # no reset, no record
    ir = IR(load_spec(example_path("try_full_prefetch_ok")), "promela")
    assert not ir.has_window and "INTENDED_AFTER" not in to_promela(ir.spec)
    assert not any(isinstance(a, PassWindow) for g in ir.groups for p in range(g.length)
                   for a in step_actions(ir, g, p))


READ_MISS_SPECS = ["bug_expect_tx_too_few_bytes", "x_persistent_tiles_ok", "x_persistent_reset_bad",
                   "bug_expect_tx_over_limit", "mojo_pcp_nvidia", "x_prologue_tile_ok"]


# A read whose parts differ from item to item: part 0 is filled every item, part 1 (by b, one
# fill every other item, advancing by one stage each) at stage 0 for item 0 and at stage 1 for
# item 2, so the read of item 2 (stage 0) checks part 0 alone, that of item 0 both.
ITEM_CLASSES = part_spec("item classes", 2, 1, 4, ["wait_empty", "write", "arrive_full", "advance"],
                         ["wait_full", "read", "arrive_empty", "advance"], epilogue=()) \
    + role_toml("b", "producer", 1, ["write every=2 at=0", "advance every=2 at=0"], ())


@pytest.mark.parametrize("name", READ_MISS_SPECS + ["epilogue_alias", "guarded_s2", "two_writers",
                                                    "alternating", "item_classes"])
def test_the_printed_read_check_is_semantics_read_miss(name):
    spec = (load_spec_text(ITEM_CLASSES, "item_classes.toml") if name == "item_classes" else
            _spec(name) if name not in READ_MISS_SPECS else load_spec(example_path(name)))
    ir = IR(spec, "promela")
    assert check_printed_read_miss(ir)
    if name == "item_classes":
        consumer = _group(ir, "consumer")
        assert ir.read_classes(consumer, 1) == [((0, 1), [0]), ((0,), [1, 2, 3])]
        assert "(item[ME] == 0) && (" in to_promela(spec)
