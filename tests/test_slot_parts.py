"""Slot parts (docs/rules.md "Slot parts", issue 17): the pinned specs the issue names.

A slot is full only when every part the program fills for the item holds it: one part per
producer-side fill op (per source agent, so per source CTA of a multicast); a consumer-side
fill stores into every part. Each spec pins the verdict, the kinds, the depth and, for the
correct ones, the exact state count; every counterexample replays through the independent
replayer (tests/replay.py) and the unreduced search agrees with the reduced one.
"""
from __future__ import annotations

import pytest

from pipeproof.checker.core.program import agents_of, slot_parts
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests.generators import to_toml
from tests.replay_support import check_replay

def _design(stages, pac, cac, items, roles, cluster=1, barriers=None):
    pipeline = {"backend": "nvidia", "stages": stages, "producer_arrive_count": pac,
                "consumer_arrive_count": cac, "items": items}
    if cluster > 1:
        pipeline["cluster_size"] = cluster
    return to_toml({"pipeline": pipeline, "barriers": barriers or {},
                    "roles": [{"name": name, "side": side, "count": count, **ops}
                              for name, side, count, ops in roles]})


READ = {"body": ["wait_full", "read", "arrive_empty", "advance"]}


def _two_copies(expect):
    producer = {"body": ["wait_empty", f"expect_tx {expect}", "copy 4096", "copy 4096", "advance"]}
    return _design(2, 1, 1, 2, [("producer", "producer", 1, producer), ("consumer", "consumer", 1, READ)])


def _mixed(write_arrives):
    simt = ["wait_empty", "write"] + (["arrive_full"] if write_arrives else []) + ["advance"]
    return _design(2, 2 if write_arrives else 1, 1, 3, [
        ("tma", "producer", 1, {"body": ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]}),
        ("simt", "producer", 1, {"body": simt}), ("consumer", "consumer", 1, READ)])


def _multicast(expect):
    producer = {"body": ["wait_empty", f"expect_tx {expect}", "copy 4096 to=all", "advance"],
                "epilogue": ["drain"]}
    consumer = {"body": ["wait_full", "read", "arrive_empty to=all", "advance"]}
    return _design(2, 1, 2, 2, [("producer", "producer", 1, producer),
                                ("consumer", "consumer", 1, consumer)], cluster=2)


def _epilogue_alias(barrier):
    producer = {"body": ["wait_empty", "expect_tx 4096", "copy 2048", "copy 2048", "advance"],
                "epilogue": ["drain"]}
    consumer = {**READ, "epilogue": (["sync epi"] if barrier else []) + ["write @leader"]}
    return _design(1, 1, 2, 2, [("producer", "producer", 1, producer),
                                ("consumer", "consumer", 2, consumer)],
                   barriers={"epi": {"roles": ["consumer"]}} if barrier else None)


_UNROLLED = ["wait_empty", "expect_tx 8192", "copy 8192", "copy 8192", "advance"]

SPECS = {
    "two_copies": _two_copies(4096),
    "two_copies_ok": _two_copies(8192),
    "two_copies_unrolled": _design(2, 1, 1, 2, [
        ("producer", "producer", 1, {"body": _UNROLLED * 2}),
        ("consumer", "consumer", 1, {"body": READ["body"] * 2})]),
    "mixed_ok": _mixed(True),
    "mixed_nowait": _mixed(False),
    "mixed_onewarp_ok": _design(2, 2, 1, 3, [
        ("producer", "producer", 1,
         {"body": ["wait_empty", "expect_tx 4096", "copy 4096", "write", "arrive_full", "advance"]}),
        ("consumer", "consumer", 1, READ)]),
    "multicast_ok": _multicast(8192),
    "multicast_half": _multicast(4096),
    "epilogue_alias": _epilogue_alias(False),
    "epilogue_alias_ok": _epilogue_alias(True),
}

# name: (parts of the main ring's slots, verdict, kinds, depth, and for an ok spec the states
# with both reductions and with neither)
EXPECTED = {
    # two copies per stage, expect_tx for one of them: the phase completes when the first
    # lands, and the read before the second copy is even issued sees part 1 empty (the H200's
    # half tile)
    "two_copies": (2, "violation", ("read_before_fill",), 6, None),
    "two_copies_ok": (2, "ok", (), None, (2, 125)),
    # the same body written out for both stages: each copy is still its own part (a part
    # keeps the fills of every stage; found by the independent replayer)
    "two_copies_unrolled": (2, "violation", ("read_before_fill",), 6, None),
    # a TMA copy beside a SIMT write, two warps: with the write's arrival counted by full
    # (a wait between the write and the read), and without it
    "mixed_ok": (2, "ok", (), None, (38, 875)),
    "mixed_nowait": (2, "violation", ("read_before_fill",), 6, None),
    # the same in one warp: copy, write, arrive_full
    "mixed_onewarp_ok": (2, "ok", (), None, (11, 175)),
    # a multicast from two CTAs: each CTA's full must expect both halves
    "multicast_ok": (2, "ok", (), None, (2, 11477)),  # 12: the two CTAs renamed (18 before)
    "multicast_half": (2, "violation", ("read_before_fill",), 6, None),
    # an epilogue write (consumer side: every part) into the input slot while the other
    # consumer warp has not read its last item; with a named barrier before it, correct
    "epilogue_alias": (2, "violation", ("overwrite_before_drain",), 25, None),
    "epilogue_alias_ok": (2, "ok", (), None, (7, 211)),
}


def _spec(name):
    return load_spec_text(SPECS[name], f"{name}.toml")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pinned_slot_parts_spec(name):
    parts, verdict, kinds, depth, states = EXPECTED[name]
    spec = _spec(name)
    assert len(slot_parts(spec, agents_of(spec))[0]) == parts
    result = verify(spec)
    assert (result.verdict, result.kinds, result.depth) == (verdict, kinds, depth)
    unreduced = verify(spec, por=False, symmetry=False)
    assert (unreduced.verdict, unreduced.kinds, unreduced.depth) == (verdict, kinds, depth)
    if verdict == "ok":
        assert (result.states, unreduced.states) == states
    else:
        trace = check_replay(spec, result, kinds[0])
        if kinds[0] == "read_before_fill":  # the reason names the part that is not filled
            assert ".part[1], which holds nothing" in result.traces[kinds[0]].reason
        assert len(trace["steps"]) == depth


def test_epilogue_write_stores_into_every_part():
    """The consumer-side epilogue write reuses the whole buffer: both parts get its tag."""
    result = verify(_spec("epilogue_alias_ok"), por=False)
    assert result.verdict == "ok"
    spec = _spec("epilogue_alias_ok")
    from pipeproof.checker.core.model import compile_model
    m = compile_model(spec)
    st = m.initial_state()
    # run the only interleaving to the end: the search found it ok, so any path finishes
    for _ in range(200):
        acts = m.actions(st)
        if not acts:
            break
        st = m.next_state(st, acts[0])
    assert m.view(st)["slots"]["cta0.slot[0]"] == [m.tag_epilogue, m.tag_epilogue]


def test_fills_between_stage_moves_share_one_part_per_agent():
    """`write; advance; write; advance` fills two slots, one part each: both writes of an agent
    are that agent's part (a second producer agent has the next one), and the first write
    stores into its own part, not into every part."""
    from pipeproof.checker.core.program import part_of
    text = _design(2, 1, 1, 3, [
        ("tma", "producer", 2, {"body": ["write", "advance", "write every=2 at=1", "advance"]}),
        ("simt", "producer", 1, {"body": ["wait_empty", "write", "advance"]}),
        ("consumer", "consumer", 1, READ)])
    spec = load_spec_text(text, "two_writers.toml")
    agents = agents_of(spec)
    parts = slot_parts(spec, agents)[0]
    assert [[(i, pc) for _, i, pc in p.fills] for p in parts] == [[(0, 0), (0, 2)], [(1, 0), (1, 2)], [(2, 1)]]
    assert [part_of(parts, 0, 0), part_of(parts, 0, 2), part_of(parts, 1, 0)] == [0, 0, 1]
    from pipeproof.checker.core import semantics as S
    from pipeproof.checker.core.model import compile_model
    m = compile_model(spec)
    # part 0 is filled in slot 0 for every item by tma[0]'s first write, and in slot 1 for odd
    # items by its second (parts are per slot: DESIGN, revised 2026-12-02)
    assert [bool(S.part_filled_for(m.tables, 0, 0, 0, t)) for t in range(3)] == [True, True, True]
    assert [bool(S.part_filled_for(m.tables, 0, 0, 1, t)) for t in range(3)] == [False, True, False]


def test_a_cta_no_producer_fills_still_has_an_empty_slot():
    """Only CTA 0 has a producer, writing its own slot: CTA 1's slot has a part with no fills,
    so CTA 1's consumer, released by the arrival to every CTA, reads an empty slot (a slot of
    no part at all would have let the read pass: a false ok)."""
    text = _design(1, 1, 1, 1, [
        ("producer", "producer", 1, {"ctas": [0], "body": ["write", "arrive_full to=all"]}),
        ("consumer", "consumer", 1, {"body": ["wait_full", "read"]})], cluster=2)
    spec = load_spec_text(text, "bare.toml")
    parts = slot_parts(spec, agents_of(spec))[0]
    assert [(len(p.fills), p.ctas) for p in parts] == [(1, (0,)), (0, (1,))]
    result = verify(spec)
    assert (result.verdict, result.kinds, result.depth) == ("violation", ("read_before_fill",), 4)
    assert "cta1.slot[0].part[1], which holds nothing" in result.traces["read_before_fill"].reason
    check_replay(spec, result, "read_before_fill")
