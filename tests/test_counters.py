"""Counter arithmetic at real widths (issue 4, part 4): checker/smt/counters.py.

amd thresholds are UInt32(phase ± 1) * count compared with Int64 counters (Mojo's
AmdCounterBackend); Z3 bit-vectors find the first item at which a threshold wraps, within the
spec's items (`found`) and if the same walk ran on (`beyond_item`, below 2^32 laps), and
prove that no Int64 counter overflows below 2^32 laps.
"""
from __future__ import annotations

import json

from pipeproof.checker.smt.counters import amd_wrap
from pipeproof.spec.load import load_spec, load_spec_text
from tests.paths import EXAMPLES_DIR

U32 = (1 << 32) - 1


def example(name):
    return load_spec(EXAMPLES_DIR / name)


def pcp(stages=2, items=4, consumer_phase=None, producer_phase=None, consumers=1):
    roles = ""
    if producer_phase is not None:
        roles += f'\n[[role]]\nname = "producer"\ninitial_phase = {producer_phase}\n'
    if consumer_phase is not None:
        roles += f'\n[[role]]\nname = "consumer"\ninitial_phase = {consumer_phase}\n'
    return load_spec_text(f"""
[pipeline]
template = "mojo_producer_consumer"
backend = "amd"
stages = {stages}
consumers = {consumers}
items = {items}
{roles}""", "inline.toml")


def test_producer_at_phase_0_wraps_at_its_first_wait():
    w = amd_wrap(example("bug_amd_producer_phase0.toml"))
    assert (w.found, w.item, w.signal, w.status) == (True, 0, "empty[s]", "sat")
    assert w.what == "wait_empty threshold (phase - 1) wraps to 2^32-1"
    assert w.message.startswith("producer: wait_empty threshold (phase - 1) wraps to 2^32-1 at "
                                "item 0 (phase 0): it waits for 2^32-1 laps of releases")


def test_correct_pipeline_wraps_only_at_the_uint32_lap_limit():
    w = amd_wrap(example("mojo_pcp_amd.toml"))
    assert (w.found, w.item, w.status) == (False, None, "unsat")
    # The consumer's UInt32 phase reaches 2^32 - 1 after 2^32 - 1 laps of 2 stages.
    assert w.beyond_item == U32 * 2 == 8589934590
    assert w.beyond_what == "wait_full threshold (phase + 1) wraps to 0"
    # Int64 counters: empty gains 2 per lap and passes 2^63 - 1 after 2^62 laps = item 2^63.
    assert (w.overflow_item, w.overflow_below_2_32_laps) == (1 << 63, False)
    assert w.message == (
        "no threshold wraps within the spec's items; run on, consumer: wait_full threshold "
        "(phase + 1) wraps to 0 at item 8589934590 (lap 2^32-1 of its UInt32 phase, below 2^32 "
        "laps); the Int64 counters cannot overflow below 2^32 laps: empty[s] gains 2 per lap "
        "and passes 2^63-1 after 2^62 laps (item 2^63)")
    assert amd_wrap(example("bug_amd_arrive_count_off_by_one.toml")).found is False


def test_first_wrapping_item_is_the_smallest():
    # phase 2^32 - 2 at item 0 on one stage: phase + 1 wraps at item 1, not 0 or 2.
    w = amd_wrap(pcp(stages=1, items=3, consumer_phase=U32 - 1))
    assert (w.found, w.item, w.signal) == (True, 1, "full[s]")
    assert w.what == "wait_full threshold (phase + 1) wraps to 0"
    w = amd_wrap(pcp(stages=2, items=4, consumer_phase=U32))
    assert (w.found, w.item) == (True, 0)
    # Three stages: the consumer reaches lap 2^32 - 1 at item 3 * (2^32 - 1).
    w = amd_wrap(pcp(stages=3, items=5))
    assert (w.found, w.beyond_item) == (False, 3 * U32)


def test_a_later_start_reaches_the_lap_limit_sooner():
    # Consumer at phase 1: its UInt32 phase is 2^32 - 1 after 2^32 - 2 laps (item 2^33 - 4).
    # (The producer's phase - 1 stays right when its phase itself wraps to 0: 0 - 1 = 2^32 - 1
    # is the true lap count; it goes wrong one lap later.)
    w = amd_wrap(pcp(producer_phase=2, consumer_phase=1, items=4))
    assert (w.found, w.beyond_item) == (False, (1 << 33) - 4)
    assert w.message.startswith("no threshold wraps within the spec's items; run on, consumer:")


def test_nvidia_has_nothing_to_wrap():
    w = amd_wrap(example("mojo_pcp_nvidia.toml"))
    assert (w.found, w.status) == (False, "unsat")


def test_json():
    doc = amd_wrap(example("bug_amd_producer_phase0.toml")).to_json()
    assert doc["found"] is True and doc["item"] == 0 and doc["status"] == "sat"
    json.dumps(doc)
