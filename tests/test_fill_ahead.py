"""Fills for a later item (`copy B ahead=K`): software pipelining within one agent.

Triton's sm90 pipeliner (no warp specialisation) loads items 0 .. L-1 before the loop and, in
item k, waits for item k, reads it with an async wgmma, waits until at most one wgmma is in
flight and then loads item k+L into the slot item k-1 used. One agent fills ahead of its own
reads, so a fill's tag is not the item it is issued in: `ahead=K` stores item + K (in the
prologue: item K). docs/model.md "Fills for a later item"; semantics.op_tag and
part_filled_for; tests/replay.py implements the same rule on its own.
"""
from __future__ import annotations

import itertools

import pytest

from pipeproof.checker.models.promela import to_promela
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.prover import prove
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError
from tests.replay import replay


def pipelined(stages=3, lead=2, items=5, pending=1, ahead=None, prologue=True) -> str:
    """One warpgroup that pipelines its own TMA loads `lead` items ahead over `stages` slots,
    as Triton's sm90 pipeliner emits it: `pending` = wgmma.wait_group's operand before the
    next load; `ahead`: what the loop's fill declares (default `lead`: right)."""
    ahead = lead if ahead is None else ahead
    pro = []
    for j in range(min(lead, items)):
        pro += ["advance"] * (j > 0) + ["expect_tx 64", f"copy 64 ahead={j}" if prologue else "copy 64"]
    body = []
    for k in range(items):
        g = f" every={items} at={k}"
        body += ["reset" + g] + ["advance" + g] * k  # to item k's stage and lap
        body += [f"wait_full{g}", f"read_async{g}", f"read_wait {pending}{g}"]
        if k + lead < items:
            body += ["advance" + g] * lead + [f"expect_tx 64{g}", f"copy 64 ahead={ahead}{g}"]
    show = lambda ops: "[" + ", ".join(f'"{o}"' for o in ops) + "]"
    return f"""
[pipeline]
name = "software pipelined"
backend = "nvidia"
stages = {stages}
items = {items}
producer_arrive_count = 1
consumer_arrive_count = 1
[[role]]
name = "wg"
side = "producer"
count = 1
initial_phase = 0
prologue = {show(pro)}
body = {show(body)}
epilogue = ["read_wait 0"]
"""


def load(text):
    return load_spec_text(text, "pipelined.toml")


def replays(spec, result):
    """Every counterexample replays in tests/replay.py (which raises on a disabled step or a
    differing state) and its last state or step shows the kind."""
    assert result.traces
    for kind, trace in result.traces.items():
        outcome = replay(spec, trace.to_json())
        assert kind in outcome.kinds
        assert len(trace.steps) == result.depth


def test_the_pipelined_agent_is_ok_with_its_exact_state_count():
    result = verify(load(pipelined()))
    assert result.verdict == "ok"
    assert result.states == 2   # 3 before the finishing steps, 45 before issue 35 merged its landings of different byte counts


def test_without_ahead_the_tags_say_the_loop_reads_data_of_an_earlier_item():
    """Why the key exists: the same program with its fills tagged by the item they are issued
    in reads item 0 where the prologue's tag is, then item 2 where item 0's fill is."""
    text = pipelined().replace(" ahead=0", "").replace(" ahead=1", "").replace(" ahead=2", "")
    spec = load(text)
    result = verify(spec)
    assert result.kind == "read_before_fill"
    replays(spec, result)


@pytest.mark.parametrize("pending, kind", [(2, "overwrite_before_drain"), (0, None)])
def test_the_wait_group_before_the_load_must_retire_the_previous_read(pending, kind):
    """pending = 2 leaves item k-1's wgmma reading the slot the load refills."""
    spec = load(pipelined(pending=pending))
    result = verify(spec)
    if kind is None:
        assert result.verdict == "ok"
    else:
        assert result.kind == kind
        replays(spec, result)


def test_a_fill_declared_for_the_wrong_item_is_read_before_fill():
    spec = load(pipelined(ahead=1))
    result = verify(spec)
    assert result.kind == "read_before_fill"
    replays(spec, result)


def test_a_lead_as_deep_as_the_ring_overwrites_a_slot_being_read():
    """lead = stages: the load for item k+3 goes into the slot item k still reads."""
    spec = load(pipelined(stages=3, lead=3, items=5, pending=1))
    result = verify(spec)
    assert result.kind in ("overwrite_before_drain", "read_before_fill")
    replays(spec, result)


# Near-correct variants, reduced against unreduced search (the soundness discipline: a
# reduction must keep every violation of the new tags).
# 216 of them: 67 ok, 104 read_before_fill, 45 overwrite_before_drain.
VARIANTS = [dict(stages=s, lead=lead, items=n, pending=p, ahead=lead + d)
            for s, lead, n, p, d in itertools.product((2, 3, 4), (1, 2, 3), (3, 5, 6), (0, 1, 2), (-1, 0, 1))
            if lead <= s and lead + d >= 0]


@pytest.mark.parametrize("v", VARIANTS, ids=lambda v: "-".join(f"{k}{x}" for k, x in v.items()))
def test_reductions_keep_every_violation_of_fills_ahead(v):
    spec = load(pipelined(**v))
    full = verify(spec, symmetry=False, por=False)
    reduced = verify(spec)
    assert full.verdict in ("ok", "violation")
    assert (reduced.verdict, reduced.kinds, reduced.depth) == (full.verdict, full.kinds, full.depth)
    if full.verdict == "violation":
        replays(spec, full)


@pytest.mark.parametrize("op, message", [
    ('"copy 64 ahead=x"', "ahead must be an integer from 0 to"),
    ('"read ahead=1"', "unknown key 'ahead'"),
])
def test_bad_ahead_is_one_line_naming_the_op(op, message):
    text = pipelined().replace('"copy 64 ahead=0"', op, 1)
    with pytest.raises(SpecError) as err:
        load(text)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_ahead_in_the_epilogue_is_refused():
    text = pipelined().replace('epilogue = ["read_wait 0"]', 'epilogue = ["read_wait 0", "copy 64 ahead=1"]')
    with pytest.raises(SpecError, match="ahead= is not allowed in epilogue"):
        load(text)


def test_the_exports_and_the_lap_abstraction_refuse_what_they_cannot_express():
    spec = load(pipelined())
    with pytest.raises(SpecError, match=r"a fill for a later item \(ahead=\) cannot be exported"):
        to_promela(spec)
    proof = prove(spec)
    assert proof.status != "proved"
    assert "ahead=" in (proof.reason or "")


def test_actions_print_the_item_a_fill_is_for():
    spec = load(pipelined(ahead=1))
    result = verify(spec)
    text = " ".join(str(step) for trace in result.traces.values() for step in trace.to_json()["steps"])
    assert "item=0" in text and "item=1" in text
    assert compile_model(spec).tag_prologue == 5 + 1  # items + the largest ahead


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@pytest.mark.parametrize("kw", [{}, {"pending": 2}, {"ahead": 1}])
def test_bounded_model_checking_reads_the_same_tags(kw):
    """--engine bmc encodes the program through the same op_tag: same verdict, kinds, depth."""
    spec = load(pipelined(**kw))
    bmc, explicit = verify_bmc(spec), verify(spec)
    assert (bmc.verdict, bmc.kinds, bmc.depth) == (explicit.verdict, explicit.kinds, explicit.depth)
