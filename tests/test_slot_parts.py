"""Slot parts (docs/rules.md "Slot parts", issue 17): the pinned specs the issue names.

A slot is full only when every part the program fills for the item holds it: one part per
producer-side fill op (per source agent, so per source CTA of a multicast); a consumer-side
fill stores into every part. Each spec pins the verdict, the kinds, the depth and, for the
correct ones, the exact state count; every counterexample replays through the independent
replayer (tests/replay.py) and the unreduced search agrees with the reduced one.
"""
from __future__ import annotations

import pytest

from pipeproof.checker.program import agents_of, slot_parts
from pipeproof.checker.verify import verify
from pipeproof.spec.load import load_spec_text
from tests.test_expressiveness import _check_replay

SPECS = {
    "two_copies_unrolled": """\
[pipeline]
name = "BUG: expect_tx 8192 but two copies of 8192, body unrolled over both stages"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2
expect = "read_before_fill"

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 8192", "copy 8192", "copy 8192", "advance",
        "wait_empty", "expect_tx 8192", "copy 8192", "copy 8192", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance",
        "wait_full", "read", "arrive_empty", "advance"]
""",
    "epilogue_alias": """\
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 2048", "copy 2048", "advance"]
epilogue = ["drain"]
[[role]]
name = "consumer"
side = "consumer"
count = 2
body = ["wait_full", "read", "arrive_empty", "advance"]
epilogue = ["write @leader"]
""",
    "epilogue_alias_ok": """\
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 2048", "copy 2048", "advance"]
epilogue = ["drain"]
[[role]]
name = "consumer"
side = "consumer"
count = 2
body = ["wait_full", "read", "arrive_empty", "advance"]
epilogue = ["sync epi", "write @leader"]

[barrier.epi]
roles = ["consumer"]
""",
    "mixed_nowait": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 3
[[role]]
name = "tma"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]
[[role]]
name = "simt"
side = "producer"
count = 1
body = ["wait_empty", "write", "advance"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
""",
    "mixed_ok": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 2
consumer_arrive_count = 1
items = 3
[[role]]
name = "tma"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]
[[role]]
name = "simt"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
""",
    "mixed_onewarp_ok": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 2
consumer_arrive_count = 1
items = 3
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096", "write", "arrive_full", "advance"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
""",
    "multicast_half": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2
cluster_size = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096 to=all", "advance"]
epilogue = ["drain"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty to=all", "advance"]
""",
    "multicast_ok": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 2
items = 2
cluster_size = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 8192", "copy 4096 to=all", "advance"]
epilogue = ["drain"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty to=all", "advance"]
""",
    "two_copies": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096", "copy 4096", "copy 4096", "advance"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
""",
    "two_copies_ok": """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 8192", "copy 4096", "copy 4096", "advance"]
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
""",
}

# name: (parts of the main ring's slots, verdict, kinds, depth, and for an ok spec the states
# with both reductions and without partial-order reduction)
EXPECTED = {
    # two copies per stage, expect_tx for one of them: the phase completes when the first
    # lands, and the read before the second copy is even issued sees part 1 empty (the H200's
    # half tile)
    "two_copies": (2, "violation", ("read_before_fill",), 6, None),
    "two_copies_ok": (2, "ok", (), None, (55, 125)),
    # the same body written out for both stages: each copy is still its own part (a part
    # keeps the fills of every stage; found by the independent replayer)
    "two_copies_unrolled": (2, "violation", ("read_before_fill",), 6, None),
    # a TMA copy beside a SIMT write, two warps: with the write's arrival counted by full
    # (a wait between the write and the read), and without it
    "mixed_ok": (2, "ok", (), None, (127, 875)),
    "mixed_nowait": (2, "violation", ("read_before_fill",), 6, None),
    # the same in one warp: copy, write, arrive_full
    "mixed_onewarp_ok": (2, "ok", (), None, (43, 175)),
    # a multicast from two CTAs: each CTA's full must expect both halves
    "multicast_ok": (2, "ok", (), None, (1638, 11477)),
    "multicast_half": (2, "violation", ("read_before_fill",), 6, None),
    # an epilogue write (consumer side: every part) into the input slot while the other
    # consumer warp has not read its last item; with a named barrier before it, correct
    "epilogue_alias": (2, "violation", ("overwrite_before_drain",), 25, None),
    "epilogue_alias_ok": (2, "ok", (), None, (27, 211)),
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
        trace = _check_replay(spec, result, kinds[0])
        if kinds[0] == "read_before_fill":  # the reason names the part that is not filled
            assert ".part[1], which holds nothing" in result.traces[kinds[0]].reason
        assert len(trace["steps"]) == depth


def test_epilogue_write_stores_into_every_part():
    """The consumer-side epilogue write reuses the whole buffer: both parts get its tag."""
    result = verify(_spec("epilogue_alias_ok"), por=False)
    assert result.verdict == "ok"
    spec = _spec("epilogue_alias_ok")
    from pipeproof.checker.model import compile_model
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
    from pipeproof.checker.program import part_of
    text = SPECS["mixed_nowait"].replace(
        'name = "tma"\nside = "producer"\ncount = 1\nbody = ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]',
        'name = "tma"\nside = "producer"\ncount = 2\nbody = ["write", "advance", "write every=2 at=1", "advance"]')
    spec = load_spec_text(text, "two_writers.toml")
    agents = agents_of(spec)
    parts = slot_parts(spec, agents)[0]
    assert [[(i, pc) for _, i, pc in p.fills] for p in parts] == [[(0, 0), (0, 2)], [(1, 0), (1, 2)], [(2, 1)]]
    assert [part_of(parts, 0, 0), part_of(parts, 0, 2), part_of(parts, 1, 0)] == [0, 0, 1]
    from pipeproof.checker import semantics as S
    from pipeproof.checker.model import compile_model
    m = compile_model(spec)
    # part 0 is filled for every item by tma[0]'s first write, and for odd items by its second
    assert [bool(S.part_filled_for(m.tables, 0, 0, t)) for t in range(3)] == [True, True, True]
