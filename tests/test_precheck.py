"""The pre-check (issue 4, part 1): checker/smt/precheck_spec.py.

- `EXPECTED` pins, for every spec in spec/examples/, exactly the (signal, kind) findings the
  pre-check gives, in order: none on `ok` examples, none on the bugs only an interleaving shows
  (release before read, a stale try, a lapped observer, an async release before its wait, a
  missing drain, ...), and the count, byte and lap mismatches on the others.
- A few messages are pinned: they are what a kernel author reads.
- Inline specs cover what no example shows: a slot (stage) mismatch, an arrival missing in
  odd items, cluster targets, a second ring, mixed phase conventions, an amd surplus (left to
  the engine).
- No false alarms, generated: on specs drawn by the generators in tests/generators.py and
  tests/generators_expressive.py and by one here aimed at the pre-check
  (initial stages and phases, every=, resets, pre-arrivals, leader guards, cluster targets,
  counts and bytes off by a little), every spec with a finding is a violation for the
  explicit engine.
- Fast: each example in well under a second of CPU (typically 10-60 ms).

Run with `python -m pytest -q tests/test_precheck.py` (the engine compiles on first use).
"""
from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from pipeproof.checker.smt.counters import report_lines
from pipeproof.checker.smt.precheck_spec import Finding, precheck
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests import generators as G
from tests import generators_expressive as GE
from tests.paths import EXAMPLE_NAMES, EXAMPLES_DIR

E_DEAD, E_RBF, E_OVER = ("empty[s]", "deadlock"), ("full[s]", "read_before_fill"), \
    ("empty[s]", "over_arrival")
EXPECTED = {
    # fills outside the body: no count, byte or lap mismatch to find (the bugs are op order)
    "x_fa3_q_once_per_tile.toml": [], "x_fa3_q_released_early.toml": [],
    "x_prologue_tile_ok.toml": [], "bug_prologue_tile_released_early.toml": [],
    # nested loops: the tile-level rings are left out (their reads pair by tile), and the
    # bugs are op order on them
    "x_fa3_persistent_ok.toml": [], "x_fa3_persistent_q_released_early.toml": [],
    "x_tcgen05_gemm_acc_ring_ok.toml": [], "x_tcgen05_gemm_acc_freed_early.toml": [],
    "x_tcgen05_gemm_acc_async_ok.toml": [], "x_tcgen05_gemm_acc_arrive_not_commit.toml": [],
    # count, byte and lap mismatches
    "bug_amd_arrive_count_off_by_one.toml": [("full[s]", "deadlock")],
    "bug_amd_producer_phase0.toml": [E_DEAD],
    "bug_consumer_count_too_few.toml": [E_OVER],
    "bug_consumer_count_too_many.toml": [E_DEAD],
    "bug_consumer_phase1_nvidia.toml": [E_RBF],
    "bug_every_lane_arrive_full.toml": [("full[s]", "over_arrival")],
    "bug_every_lane_expect_tx.toml": [("full[s]", "over_arrival")],
    "bug_expect_tx_over_limit.toml": [("full[s]", "tx_range")],
    "bug_expect_tx_too_few_bytes.toml": [E_RBF],
    "bug_expect_tx_too_many_bytes.toml": [("full[s]", "deadlock")],
    "bug_named_barrier_missing_role.toml": [("barrier wg", "deadlock")],
    "bug_persistent_reset.toml": [E_RBF, ("empty[s]", "overwrite_before_drain")],
    "bug_producer_phase0_nvidia.toml": [E_DEAD],
    "x_cluster_item_mismatch_deadlock.toml": [("full[s]", "deadlock")],
    "x_persistent_reset_bad.toml": [E_RBF],
    # bugs only an interleaving shows: silence
    "bug_cutlass_no_producer_tail.toml": [],
    "bug_input_tile_cluster2_no_drain.toml": [],
    "bug_lapped_observer.toml": [],
    "bug_release_before_read.toml": [],
    "bug_stale_try_full.toml": [],
    "x_async_release_before_wait.toml": [],
    "x_named_arrive_mix_bug.toml": [],
    "x_rings_acquire_order_deadlock.toml": [],
    # correct
    "bug_input_tile_no_drain.toml": [],  # ok with an unawaited-at-exit warning (R2)
    "cutlass_tma_async_cluster2.toml": [],
    "mojo_input_tile_cluster2_k2.toml": [],
    "mojo_input_tile_nvidia.toml": [],
    "mojo_pcp_amd.toml": [],
    "mojo_pcp_nvidia.toml": [],
    "named_barrier_release_ok.toml": [],
    "sm90_ring_nvidia.toml": [],
    "try_full_prefetch_ok.toml": [],
    "x_async_read_ok.toml": [],
    "x_cluster_ctas_ok.toml": [],
    "x_cutlass_pingpong.toml": [],
    "x_mojo_sm100_matmul.toml": [],
    "x_named_split_ok.toml": [],
    "x_persistent_tiles_ok.toml": [],
    "x_persistent_reset_ok.toml": [],  # a reset that keeps parity: in the window after it
    "x_rings_scales_ok.toml": [],
    "x_tcgen05_2sm_ok.toml": [],
    "x_tcgen05_2sm_arrive_not_commit.toml": [],  # an op's order (arrive for commit): no count
    "x_expect_bytes_ok.toml": [],   # expect_tx without an arrival (issue 48)
    "bug_arrive_before_expect_bytes.toml": [],   # an op's order (the arrival first): no count
}


def example(name):
    return load_spec(EXAMPLES_DIR / name)


def test_every_example_is_pinned():
    assert sorted(EXPECTED) == EXAMPLE_NAMES


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_findings(name):
    spec = example(name)
    found = precheck(spec)
    assert [(f.signal, f.kind) for f in found] == EXPECTED[name], [str(f) for f in found]
    if spec.expect == "ok":
        assert found == []  # never a false alarm on a correct example
    assert precheck(spec) == found  # deterministic


# ------------------------------------------------------------------------ messages

def only(name) -> Finding:
    (f,) = precheck(example(name))
    return f


def test_count_message():
    f = only("bug_consumer_count_too_many.toml")
    assert f.message == ("empty[s] expects 3 arrivals per phase, consumers deliver 2 per item "
                         "(2 agents × 1 arrive_empty): the phase never completes, deadlock")
    assert (f.item, f.role) == (0, "consumer")


def test_leader_guard_message_counts_every_lane():
    f = only("bug_every_lane_expect_tx.toml")
    assert f.message.startswith("full[s] expects 1 arrival per phase, producers deliver 4 per "
                                "item (4 agents × 1 expect_tx 4096)")


def test_bytes_messages():
    assert only("bug_expect_tx_too_many_bytes.toml").message.startswith(
        "full[s] expects 16384 bytes per phase (expect_tx 16384), copies deliver 8192 "
        "(copy 8192): tx never returns to 0")
    assert only("bug_expect_tx_too_few_bytes.toml").message.startswith(
        "full[s] expects 8192 bytes per phase (expect_tx 8192 @leader), copies deliver 16384 "
        "(copy 8192 + copy 8192): full completes once 8192 bytes have landed, before the "
        "slot's other copies have (not yet issued, or in flight), and consumer reads the partly "
        "filled slot, read_before_fill")


def test_lap_messages():
    f = only("bug_consumer_phase1_nvidia.toml")
    assert f.message == (
        "consumer waits on full[0] at item 0 with phase 1 (initial_phase 1): its parity wait "
        "passes after 0 completions of full[0], but it is the 1st fill of stage 0, i.e. "
        "completion 1; it passes early and reads a slot not yet filled: read_before_fill")
    f = only("bug_amd_producer_phase0.toml")
    assert "its threshold is (phase - 1) × 1 = 4294967295 arrivals (phase - 1 wraps to " \
           "2^32-1 in UInt32)" in f.message
    assert f.message.endswith("that completion never comes: deadlock")
    f = only("x_persistent_reset_bad.toml")
    assert (f.item, f.role) == (2, "consumer") and "it is the 2nd fill of stage 0" in f.message


def test_other_messages():
    assert "k_group_size 2 × 524288 bytes" in only("bug_expect_tx_over_limit.toml").message
    f = only("x_cluster_item_mismatch_deadlock.toml")
    assert f.message == ("worker1 waits on full[1] of CTA 1 at item 3 for 2 arrivals in all, "
                         "but the whole run delivers 1 (scheduler: 3 items; worker1: 4 items): "
                         "deadlock")
    assert only("bug_named_barrier_missing_role.toml").message.startswith(
        "barrier wg counts 3 arrivals per generation (roles producer, consumer), but only "
        "2 agents ever sync on it (consumer)")


def test_finding_json_and_report_lines():
    f = only("bug_consumer_count_too_few.toml")
    doc = f.to_json()
    assert doc == {"signal": "empty[s]", "kind": "over_arrival", "message": f.message,
                   "item": 0, "role": "consumer"}
    json.dumps(doc)
    lines = report_lines(example("bug_amd_producer_phase0.toml"))
    assert lines[0].startswith("pre-check: empty[s]: deadlock: producer waits on empty[0]")
    assert lines[1].startswith("counters: producer: wait_empty threshold (phase - 1) wraps")
    assert report_lines(example("mojo_pcp_amd.toml")) == []
    assert report_lines(example("mojo_pcp_nvidia.toml")) == []


def test_fast():
    for name in EXAMPLE_NAMES:
        spec = example(name)
        precheck(spec)  # warm
        t0 = time.process_time()
        precheck(spec)
        assert time.process_time() - t0 < 1.0, name  # typically 10-60 ms of CPU


# ------------------------------------------------------------------------ inline specs

RING = """
[pipeline]
backend = "{backend}"
stages = {stages}
producer_arrive_count = {pac}
consumer_arrive_count = {cac}
items = {items}
cluster_size = {cluster}

[[role]]
name = "producer"
side = "producer"
count = {producers}
body = {producer}
{extra_producer}
[[role]]
name = "consumer"
side = "consumer"
count = {consumers}
body = {consumer}
{extra_consumer}
"""
TMA = ["wait_empty", "expect_tx 4096", "copy 4096", "advance"]
READ = ["wait_full", "read", "arrive_empty", "advance"]


def ring(backend="nvidia", stages=2, pac=1, cac=1, items=4, cluster=1, producer=TMA,
         consumer=READ, consumers=1, extra_producer="", extra_consumer="", producers=1):
    text = RING.format(backend=backend, stages=stages, pac=pac, cac=cac, items=items,
                       cluster=cluster, producer=json.dumps(producer), producers=producers,
                       consumer=json.dumps(consumer), consumers=consumers,
                       extra_producer=extra_producer, extra_consumer=extra_consumer)
    return load_spec_text(text, "inline.toml")


def pins(spec):
    return [(f.signal, f.kind) for f in precheck(spec)]


def test_consumer_on_another_slot():
    spec = ring(extra_consumer="initial_stage = 1")
    found = precheck(spec)
    assert ("full[s]", "stage_mismatch") in [(f.signal, f.kind) for f in found]
    f = next(f for f in found if f.kind == "stage_mismatch")
    assert f.message == ("producer puts item 0 in slot 0 (initial_stage 0), consumer reads "
                         "item 0 from slot 1 (initial_stage 1): it reads another item's slot")
    assert verify(spec).verdict == "violation"


def test_arrival_missing_in_odd_items():
    spec = ring(consumer=["wait_full", "read", "arrive_empty every=2", "advance"])
    (f,) = precheck(spec)
    assert (f.signal, f.kind) == ("empty[s]", "deadlock")
    assert "consumer delivers 0 in phase 0 of stage 1 (arrive_empty every=2 not running " \
           "there)" in f.message
    assert verify(spec).kind == "deadlock"


def test_correct_variants_stay_silent():
    assert pins(ring()) == []
    assert pins(ring(stages=3, items=7, consumers=3, cac=3)) == []
    # both sides use the ring in odd items only
    assert pins(ring(producer=[f"{op} every=2 at=1" for op in TMA],
                     consumer=[f"{op} every=2 at=1" for op in READ], items=6)) == []
    assert pins(ring(backend="amd", producer=["wait_empty", "write", "arrive_full 2",
                                              "advance"], pac=2)) == []
    assert pins(ring(stages=1, items=0)) == []


def test_cluster_targets():
    base = (EXAMPLES_DIR / "x_cluster_ctas_ok.toml").read_text()
    few = load_spec_text(base.replace("consumer_arrive_count = 2", "consumer_arrive_count = 1"),
                         "few.toml")
    (f,) = precheck(few)
    assert (f.signal, f.kind) == ("empty[s]", "over_arrival")
    assert f.message.startswith("empty[s] of CTA 0 expects 1 arrival per phase, worker "
                                "delivers 2 per item (1 agent × 1 arrive_empty to=leader from "
                                "2 CTAs)")
    many = load_spec_text(base.replace("consumer_arrive_count = 2", "consumer_arrive_count = 3"),
                          "many.toml")
    assert pins(many) == [("empty[s]", "deadlock")]


def test_second_ring_lap():
    spec = load_spec_text("""
[pipeline]
template = "mojo_sm100_matmul"
backend = "nvidia"
stages = 2
items = 6
[[role]]
name = "scheduler"
items = 3
[[role]]
name = "epilogue"
initial_phase = { acc = 1 }
""", "acc.toml")
    (f,) = precheck(spec)
    assert (f.signal, f.kind) == ("acc.full[s]", "read_before_fill")
    assert f.message.startswith("epilogue waits on acc.full[0] at item 0 with phase 1")


def test_mixed_phase_conventions():
    # SM90 ring (consumers pre-arrive) with the producer at phase 1 as well: one lap early.
    spec = load_spec_text("""
[pipeline]
template = "sm90_ring"
backend = "nvidia"
stages = 2
consumers = 2
items = 4
[[role]]
name = "producer"
initial_phase = 1
""", "mixed.toml")
    (f,) = precheck(spec)
    assert (f.signal, f.kind, f.item) == ("empty[s]", "overwrite_before_drain", 2)
    assert "after the releases of 1 earlier fill and 1 pre-arrival phase" in f.message
    assert verify(spec).verdict == "violation"


def test_amd_surplus_is_left_to_the_engine():
    # Two consumers, empty count 1: the producer's threshold is reached a release early.
    # Counters have no over_arrival; the pre-check does not claim a kind it cannot show.
    spec = ring(backend="amd", consumers=2, cac=1, producer=["wait_empty", "write",
                                                             "arrive_full", "advance"])
    assert pins(spec) == []
    assert verify(spec).verdict == "violation"


# ------------------------------------------------------------------------ no false alarms

SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def no_false_alarm(spec):
    """Every finding is a violation, and each kind a finding names is one that some path of
    the model reaches (checker/engines/reachable.py: the explicit engine run to exhaustion; a trap ends a
    path), not only some other kind."""
    from pipeproof.checker.engines.reachable import reach
    from pipeproof.checker.results.result import KINDS
    found = precheck(spec)
    if found:
        result = verify(spec, max_states=30_000)
        assert result.verdict != "ok", [str(f) for f in found]
        claimed = {f.kind for f in found} & set(KINDS)
        if claimed:
            r = reach(spec, max_states=200_000)
            if r.exhaustive:
                assert claimed <= set(r.kinds), ([str(f) for f in found], r.kinds)
    return found


# Derandomized, hypothesis seeds a test from a hash of its source. The two tests below imported
# their generator inside the function until it moved to tests/generators*.py (issue 16): their
# seeds are pinned to the ones their former source gave, so they draw the same specs as before.
SEED_GENERATED = 0xae5b19451e355c8646f4a75755924f62c6285520b79e01e01fff0dfc5c7d2083bd0cab8ad78270554de85b0dbea9799
SEED_GENERATED_EXPRESSIVE = 0x59972aa56e16f0e66fdf95e6f744b514e5b502d954d73f6cee3dea5801e9dab126632b60e7a6eb395efeae7da0114613


@seed(SEED_GENERATED)
@settings(max_examples=80, **SETTINGS)
@given(st.data())
def test_no_false_alarm_on_generated_specs(data):
    no_false_alarm(G.load(data.draw(G.designs())))


@seed(SEED_GENERATED_EXPRESSIVE)
@settings(max_examples=60, **SETTINGS)
@given(st.data())
def test_no_false_alarm_on_generated_expressive_specs(data):
    no_false_alarm(load_spec_text(GE.to_toml(data.draw(GE.designs())), "generated.toml"))


def _guard(draw, op, every):
    if every > 1 and draw(st.integers(0, 4)) == 0:
        return f"{op} every={every} at={draw(st.integers(0, every - 1))}"
    return op


@st.composite
def ring_designs(draw):
    """Rings aimed at the pre-check: counts, bytes, phases, stages, guards and targets a
    little off, pre-arrivals, resets, every=, per-role items."""
    backend = draw(st.sampled_from(["nvidia", "amd"]))
    stages, items = draw(st.integers(1, 3)), draw(st.integers(1, 5))
    cluster = 1 if backend == "amd" else draw(st.sampled_from([1, 1, 1, 2]))
    every = draw(st.sampled_from([1, 1, 2]))
    count = draw(st.integers(1, 3))
    lead = " @leader" if count > 1 and draw(st.booleans()) else ""
    body = ["wait_empty"]
    if backend == "nvidia" and draw(st.booleans()):
        b = draw(st.sampled_from([64, 128]))
        b2 = b if draw(st.integers(0, 4)) else draw(st.sampled_from([64, 128, 32]))
        to = " to=all" if cluster > 1 and draw(st.booleans()) else ""
        body += [_guard(draw, f"expect_tx {b}{lead if draw(st.integers(0, 5)) else ''}", every),
                 _guard(draw, f"copy {b2 // (cluster if to else 1)}{to}{lead}", every)]
        full = 1 if lead else count
    else:
        n = draw(st.sampled_from([1, 1, 2]))
        arrive = f"arrive_full{f' {n}' if n > 1 else ''}{lead if draw(st.integers(0, 5)) else ''}"
        body += [_guard(draw, f"write{lead}", every), _guard(draw, arrive, every)]
        full = n * (1 if lead else count)
    body.append(_guard(draw, "advance", every))
    if draw(st.integers(0, 6)) == 0:
        body.append(f"reset every={draw(st.integers(1, 3))}")
    producer = {"name": "producer", "side": "producer", "count": count, "body": body}
    pre = backend == "nvidia" and draw(st.integers(0, 4)) == 0
    if pre or draw(st.integers(0, 7)) == 0:
        producer["initial_phase"] = draw(st.sampled_from([0, 0, 1, 2]))
    if draw(st.integers(0, 7)) == 0:
        producer["initial_stage"] = draw(st.integers(0, stages - 1))
    if backend == "nvidia" and draw(st.integers(0, 3)) == 0:
        producer["epilogue"] = ["drain"]
    roles, empty = [producer], 0
    for k in range(draw(st.integers(1, 2))):
        n_agents = draw(st.integers(1, 2))
        clead = " @leader" if n_agents > 1 and draw(st.integers(0, 2)) == 0 else ""
        to = f" to={draw(st.sampled_from(['all', 'leader', 'peer']))}" \
            if cluster > 1 and draw(st.booleans()) else ""
        style = draw(st.sampled_from(["plain", "plain", "try", "async", "commit", "early"]))
        release = _guard(draw, f"{'commit_empty' if style == 'commit' else 'arrive_empty'}"
                               f"{to}{clead}", every)
        cbody = ["try_full", "wait_full unless=ready"] if style == "try" else ["wait_full"]
        cbody += {"early": [release, "read"], "async": ["read_async", "read_wait 0", release]
                  }.get(style, ["read", release])
        cbody.append("advance")
        if draw(st.integers(0, 7)) == 0:
            cbody.append(f"reset every={draw(st.integers(1, 3))}")
        role = {"name": f"cons{k}", "side": "consumer", "count": n_agents, "body": cbody}
        if draw(st.integers(0, 7)) == 0:
            role["initial_phase"] = draw(st.sampled_from([1, 2]))
        if draw(st.integers(0, 7)) == 0:
            role["initial_stage"] = draw(st.integers(0, stages - 1))
        if draw(st.integers(0, 7)) == 0:
            role["items"] = draw(st.integers(0, 6))
        if pre:
            role["prologue"] = [f"arrive_empty{' to=all' if cluster > 1 else ''}{clead}",
                                "advance"] * stages + ["reset"]
        roles.append(role)
        empty += (1 if clead else n_agents) * (cluster if to == " to=all" else 1)
    off = st.sampled_from([0, 0, 0, 0, 1, -1])
    lines = ["[pipeline]", f'backend = "{backend}"', f"stages = {stages}", f"items = {items}",
             f"cluster_size = {cluster}",
             f"producer_arrive_count = {max(1, full + draw(off))}",
             f"consumer_arrive_count = {max(1, empty + draw(off))}"]
    for r in roles:
        lines += ["", "[[role]]"] + [f"{k} = {json.dumps(v)}" for k, v in r.items()]
    return "\n".join(lines) + "\n"


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@settings(max_examples=120, **SETTINGS)
@given(ring_designs())
def test_no_false_alarm_on_rings_aimed_at_the_precheck(text):
    no_false_alarm(load_spec_text(text, "generated.toml"))


def test_the_aimed_generator_reaches_findings():
    """The generator above does exercise the pre-check (not only silent specs)."""
    seen = set()

    @settings(max_examples=60, **SETTINGS)
    @given(ring_designs())
    def collect(text):
        seen.update(f.kind for f in precheck(load_spec_text(text, "generated.toml")))
    collect()
    assert {"deadlock", "over_arrival", "read_before_fill", "overwrite_before_drain"} <= seen


# ------------------------------------------------------------------------ revised rules (issue 17)

def test_reset_keeping_parity_stays_in_the_window():
    """x_persistent_reset_ok resets every 2 * stages items: after the reset the consumer's
    wait on full[0] at item 4 (phase 0 again) intends phase 2, the next one of its parity
    after the phase 1 it last passed (nvidia.intended_after), which is the completion its place
    calls for (its 3rd fill). The walk says so, and the pre-check claims nothing (it used to
    claim phase_alias from the window of the phase alone)."""
    from pipeproof.checker.smt.precheck_walk import classes
    spec = example("x_persistent_reset_ok.toml")
    consumer = next(c for c in classes(spec) if c.name == "consumer")
    waits = [e for e in consumer.events if e.name == "wait_full"]
    assert [(e.item, e.phase, e.ks) for e in waits[:6]] == [
        (0, 0, (0,)), (1, 0, (0,)), (2, 1, (1,)), (3, 1, (1,)), (4, 0, (2,)), (5, 0, (2,))]
    assert precheck(spec) == []
    assert verify(spec).verdict == "ok"


def test_a_try_before_a_reset_leaves_the_window_open():
    """A try records only when it says ready: before a reset the walk keeps both records,
    and what depends on the phase it intends takes the least (never a false alarm)."""
    from pipeproof.checker.smt.precheck_walk import classes
    spec = ring(stages=1, items=3, consumer=["try_full", "read", "arrive_empty", "advance",
                                             "reset every=2 at=1"],
                producer=["wait_empty", "write", "arrive_full", "advance", "reset every=2 at=1"])
    consumer = next(c for c in classes(spec) if c.name == "consumer")
    tries = [e.ks for e in consumer.events if e.name == "try_full"]
    assert tries == [(0,), (1,), (0, 2)]  # after the reset: phase 0 again, or the next even one
    no_false_alarm(spec)


@st.composite
def revised_rule_designs(draw):
    """Rings aimed at the revised rules: slots of two parts (two copies per stage, announced
    in full, in part or too much; a copy beside a write, before or after the arrival; two
    writing producers) and resets every K items (K = 1, stages, 2 * stages or 3) on one or both
    sides, with tries; now and then one release too few per phase."""
    stages, items = draw(st.integers(1, 3)), draw(st.integers(1, 6))
    style = draw(st.sampled_from(["two_copies", "copy_write", "two_writers", "one"]))
    pac, count = 1, 1
    if style == "two_copies":
        n = draw(st.sampled_from([128, 128, 64, 192]))
        body = ["wait_empty", f"expect_tx {n}", "copy 64", "copy 64", "advance"]
    elif style == "copy_write":
        body = ["wait_empty", "expect_tx 64", "copy 64", "write", "arrive_full", "advance"]
        if draw(st.booleans()):
            body[3], body[4] = body[4], body[3]
        pac = 2
    elif style == "two_writers":
        body, count, pac = ["wait_empty", "write", "arrive_full", "advance"], 2, 2
    else:
        body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
    consumer = draw(st.sampled_from([["wait_full", "read", "arrive_empty", "advance"],
                                     ["try_full", "wait_full unless=ready", "read",
                                      "arrive_empty", "advance"],
                                     ["wait_full", "arrive_empty", "read", "advance"]]))
    every = draw(st.sampled_from([None, None, None, 1, stages, 2 * stages, 2 * stages, 3]))
    if every:
        reset = "reset" if every == 1 else f"reset every={every} at={every - 1}"
        sides = draw(st.sampled_from(["both", "both", "producer", "consumer"]))
        if sides != "consumer":
            body = body + [reset]
        if sides != "producer":
            consumer = consumer + [reset]
    roles = [{"name": "producer", "side": "producer", "count": count, "body": body},
             {"name": "consumer", "side": "consumer", "count": draw(st.integers(1, 2)),
              "body": consumer}]
    if draw(st.booleans()):
        roles[0]["epilogue"] = ["drain"]
    lines = ["[pipeline]", 'backend = "nvidia"', f"stages = {stages}", f"items = {items}",
             f"producer_arrive_count = {pac}",
             f"consumer_arrive_count = {roles[1]['count'] + draw(st.sampled_from([0, 0, 0, 1]))}"]
    for r in roles:
        lines += ["", "[[role]]"] + [f"{k} = {json.dumps(v)}" for k, v in r.items()]
    return "\n".join(lines) + "\n"


REVISED_SEEN = []


@settings(max_examples=100, **SETTINGS)
@given(revised_rule_designs())
def test_no_false_alarm_on_slot_parts_and_resets(text):
    """Every finding is a violation of a kind the model reaches (no_false_alarm)."""
    spec = load_spec_text(text, "generated.toml")
    REVISED_SEEN.append((bool(no_false_alarm(spec)), "reset" in text))


def test_the_revised_rule_generator_reaches_findings():
    """The test above saw findings on specs with resets and without, and silence on both."""
    if len(REVISED_SEEN) < 50:
        test_no_false_alarm_on_slot_parts_and_resets()
    assert set(REVISED_SEEN) == {(True, True), (True, False), (False, True), (False, False)}


# ------------------------------------------------------------------------ the kind is the model's

def test_no_deadlock_claimed_where_a_trap_comes_first():
    """Three producers each arm full (count 1) with expect_tx: the second one traps
    (over_arrival) on every path, before the empty wait that too few releases would leave
    stuck; the pre-check names the trap, not the deadlock (found by a reach-checked search)."""
    spec = ring(stages=2, items=4, cac=2, producers=3, extra_producer='epilogue = ["drain"]',
                producer=["wait_empty", "expect_tx 64", "copy 64 @leader every=2 at=0",
                          "advance"])
    assert pins(spec) == [("full[s]", "over_arrival")]
    assert no_false_alarm(spec)


def test_no_overwrite_claimed_where_the_slot_holds_nothing_of_it():
    """The producer resets every item (always stage 0) and writes only in odd items: its early
    empty wait at item 1 stores into a slot its write never filled before, so nothing is
    overwritten (the model reaches deadlock, read_before_fill and phase_alias, not
    overwrite_before_drain)."""
    spec = ring(stages=3, items=3, pac=2, cac=3, consumers=3, extra_producer='epilogue = ["drain"]',
                producer=["wait_empty", "write every=2 at=1", "arrive_full 2 every=2 at=1",
                          "advance", "reset"])
    assert pins(spec) == [("full[s]", "deadlock")]
    assert no_false_alarm(spec)


def test_no_overwrite_claimed_where_the_held_reader_reads_another_item():
    """amd: the producer always writes stage 1 (initial_stage 1, reset every item); the
    consumer reads item 0 from stage 0, so the write of item 1 over item 0 in stage 1
    overwrites nothing a reader still needs there."""
    spec = ring(backend="amd", stages=3, items=2, cac=2, producers=2,
                producer=["wait_empty", "write @leader", "arrive_full @leader", "advance",
                          "reset"], extra_producer="initial_stage = 1")
    assert pins(spec) == [("full[s]", "deadlock")]
    assert no_false_alarm(spec)
