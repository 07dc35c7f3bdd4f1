"""BMC (checker/smt/bmc.py) against the explicit engine on the two revised rules (issue 17).

- Slot parts (docs/rules.md "Slot parts"): a slot has one part per producer-side fill op per
  source agent; a read checks the parts the program fills for its tag, plus any copy in flight
  into the slot; an overwrite is judged per part. Generated specs with two copies per stage
  (expect_tx of both, of one, or of three), a copy beside a SIMT `write` (with or without a
  wait between), two producer agents each writing a part, a second fill guarded by every=2, a
  consumer-side `write` into every part, and a two-CTA multicast.
- The phase_alias window after `reset` (docs/rules.md): agents with a `reset` keep (k', ph')
  per signal. Generated specs with resets every K items on either side, with and without
  tries.

On each: the same verdict, kinds and minimal depth as the explicit engine, and every BMC trace
is re-executed by the explicit model, state by state, slot part by slot part and window record
by window record (bmc.replay_codes). Pinned cases show what each rule changes.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.checker.core.model import compile_model
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.smt.encode import Encoding
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text

MAX_RUN = 22   # generated specs whose longest run is at most this (BMC proves `ok` there)
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def longest_run(spec) -> int:
    return Encoding(compile_model(spec)).longest_run_bound


def agree(spec):
    """Both engines on `spec`, checked to agree; returns (explicit, bmc)."""
    e = verify(spec, max_states=50_000, por=False, symmetry=False)
    assert not e.limit, e.limit
    b = verify_bmc(spec, timeout=120)
    assert not b.limit, b.limit
    assert (b.verdict, b.kinds, b.depth) == (e.verdict, e.kinds, e.depth), \
        (e.verdict, e.kinds, e.depth, b.verdict, b.kinds, b.depth)
    for kind, trace in b.traces.items():  # re-executed by the explicit model when built
        assert trace.kind == kind and len(trace.steps) == b.depth
    return e, b


def toml(stages, items, roles, pac=1, cac=1, cluster=1) -> str:
    lines = ["[pipeline]", 'backend = "nvidia"', f"stages = {stages}", f"items = {items}",
             f"producer_arrive_count = {pac}", f"consumer_arrive_count = {cac}",
             f"cluster_size = {cluster}"]
    for r in roles:
        lines += ["", "[[role]]"] + [f"{k} = {json.dumps(v)}" for k, v in r.items()]
    return "\n".join(lines) + "\n"


def spec_of(text: str):
    return load_spec_text(text, "generated.toml")


# ------------------------------------------------------------------------ generated specs

@st.composite
def part_designs(draw):
    """Rings whose slots have several parts, or whose agents reset, or both."""
    stages, items = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    style = draw(st.sampled_from(["two_copies", "copy_write", "two_writers", "guarded",
                                  "consumer_write", "multicast", "plain"]))
    cluster, pac, cac, count = 1, 1, 1, 1
    B = 64
    if style == "two_copies":
        announced = draw(st.sampled_from([2 * B, 2 * B, B, 3 * B]))
        body = ["wait_empty", f"expect_tx {announced}", f"copy {B}", f"copy {B}", "advance"]
    elif style == "copy_write":
        body = ["wait_empty", f"expect_tx {B}", f"copy {B}", "write", "arrive_full", "advance"]
        if draw(st.booleans()):  # the write after the arrival
            body[3], body[4] = body[4], body[3]
        pac = draw(st.sampled_from([2, 2, 1]))
    elif style == "two_writers":
        body = ["wait_empty", "write", "arrive_full", "advance"]
        count, pac = 2, draw(st.sampled_from([2, 2, 1]))
    elif style == "guarded":
        body = ["wait_empty", f"expect_tx {B}", f"copy {B}", "write every=2",
                "arrive_full", "advance"]
        pac = 2
    elif style == "multicast":
        cluster = 2
        body = ["wait_empty", f"expect_tx {2 * B}", f"copy {B} to=all", "advance"]
        cac = 2
        items = 1
    else:  # plain, consumer_write: one part from the producer
        body = ["wait_empty", f"expect_tx {B}", f"copy {B}", "advance"]
    consumer = ["wait_full", "read", "arrive_empty", "advance"]
    if cluster == 2:
        consumer = ["wait_full", "read", "arrive_empty to=all", "advance"]
    if draw(st.integers(0, 3)) == 0:
        consumer = ["try_full", "wait_full unless=ready", "read", "arrive_empty", "advance"]
    if draw(st.integers(0, 5)) == 0:
        consumer = ["wait_full", "arrive_empty", "read", "advance"]  # releases before reading
    reset = draw(st.sampled_from([None, None, 1, 2, 2 * stages]))
    if reset:
        at = reset - 1
        body.append(f"reset every={reset} at={at}" if reset > 1 else "reset")
        if draw(st.integers(0, 3)):  # usually both sides
            consumer.append(f"reset every={reset} at={at}" if reset > 1 else "reset")
    producer = {"name": "producer", "side": "producer", "count": count, "body": body}
    if draw(st.booleans()):
        producer["epilogue"] = ["drain"]
    cons = {"name": "consumer", "side": "consumer", "count": 1, "body": consumer}
    if style == "consumer_write":
        cons["epilogue"] = ["write"]  # into every part of its current slot (aliased smem)
    return toml(stages, items, [producer, cons], pac, cac, cluster)


def _fits(text: str) -> bool:
    return longest_run(spec_of(text)) <= MAX_RUN


SEEN = []


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@settings(max_examples=35, **SETTINGS)
@given(part_designs().filter(_fits))
def test_bmc_agrees_with_explicit_on_parts_and_resets(text):
    spec = spec_of(text)
    e, _ = agree(spec)
    model = compile_model(spec)
    SEEN.append((model.max_parts, model.has_window, e.verdict, e.kinds))


def test_the_parts_generator_was_not_vacuous():
    """The test above saw slots of several parts and agents with window records, both ok and
    violated (it runs first when this one runs alone)."""
    if len(SEEN) < 25:
        test_bmc_agrees_with_explicit_on_parts_and_resets()
    parts = [s for s in SEEN if s[0] > 1]
    windows = [s for s in SEEN if s[1]]
    assert len(parts) >= 10 and len(windows) >= 10, SEEN
    for group in (parts, windows):
        assert {"ok", "violation"} <= {v for _, _, v, _ in group}, group
    kinds = {k for *_, ks in parts for k in ks}
    assert "read_before_fill" in kinds and len(kinds) >= 2, parts


# ------------------------------------------------------------------------ pinned cases

PRODUCER = {"name": "producer", "side": "producer", "count": 1}
CONSUMER = {"name": "consumer", "side": "consumer", "count": 1,
            "body": ["wait_full", "read", "arrive_empty", "advance"]}


def test_two_copies_with_the_bytes_of_one():
    """The read after the first landing, before the second copy is issued: part 1 holds
    nothing yet (depth 6, one step before the second copy would be in flight)."""
    spec = spec_of(toml(1, 1, [{**PRODUCER, "body": ["wait_empty", "expect_tx 64", "copy 64",
                                                     "copy 64", "advance"]}, CONSUMER]))
    assert compile_model(spec).max_parts == 2
    e, b = agree(spec)
    assert (b.kinds, b.depth) == (("read_before_fill",), 6)
    assert "part[1]" in b.traces["read_before_fill"].reason


def test_two_copies_with_the_bytes_of_both_are_ok():
    spec = spec_of(toml(2, 2, [{**PRODUCER, "body": ["wait_empty", "expect_tx 128", "copy 64",
                                                     "copy 64", "advance"]}, CONSUMER]))
    e, b = agree(spec)
    assert b.verdict == "ok" and b.max_depth == longest_run(spec)


def test_a_copy_beside_a_write():
    """A TMA copy and a SIMT write (TileLang's mixed producers) fill two parts; full counts the
    expect_tx's arrival and the write's. Writing after arriving lets the consumer pass once
    the copy has landed and read the part the write has not filled yet: read_before_fill."""
    ok = ["wait_empty", "expect_tx 64", "copy 64", "write", "arrive_full", "advance"]
    e, b = agree(spec_of(toml(1, 2, [{**PRODUCER, "body": ok}, CONSUMER], pac=2)))
    assert b.verdict == "ok"
    late = ["wait_empty", "expect_tx 64", "copy 64", "arrive_full", "write", "advance"]
    e, b = agree(spec_of(toml(1, 2, [{**PRODUCER, "body": late}, CONSUMER], pac=2)))
    assert b.kinds[0] == "read_before_fill"
    assert "part[1]" in b.traces["read_before_fill"].reason


def test_an_epilogue_write_stores_into_every_part():
    """A consumer-side write reuses the whole buffer: it stores over both parts, and a later
    reader of the old item sees the overwrite per part."""
    prod = {**PRODUCER, "body": ["wait_empty", "expect_tx 128", "copy 64", "copy 64", "advance"]}
    cons = {**CONSUMER, "body": ["wait_full", "arrive_empty", "read", "advance"],
            "epilogue": ["write"]}
    agree(spec_of(toml(1, 1, [prod, cons])))


@pytest.mark.parametrize("every, verdict", [(2, "ok"), (1, "violation")])
def test_reset_keeping_parity_is_ok_and_flipping_it_is_not(every, verdict):
    """One stage, both sides reset every `every` items: every 2 = 2 * stages keeps the parity
    and stays in the window (x_persistent_reset_ok in small); every item flips it."""
    reset = "reset" if every == 1 else f"reset every={every} at={every - 1}"
    prod = {**PRODUCER, "body": ["wait_empty", "expect_tx 64", "copy 64", "advance", reset]}
    cons = {**CONSUMER, "body": CONSUMER["body"] + [reset]}
    spec = spec_of(toml(1, 4, [prod, cons]))
    assert compile_model(spec).has_window
    e, b = agree(spec)
    assert b.verdict == verdict
    if verdict == "ok":
        assert b.max_depth == longest_run(spec)


def test_reset_with_tries_keeps_the_window_of_the_last_ready_try():
    """A ready try records (k', ph') like a passed wait; the skipped wait does not."""
    prod = {**PRODUCER, "body": ["wait_empty", "write", "arrive_full", "advance",
                                 "reset every=2 at=1"]}
    cons = {**CONSUMER, "body": ["try_full", "wait_full unless=ready", "read", "arrive_empty",
                                 "advance", "reset every=2 at=1"]}
    e, b = agree(spec_of(toml(1, 4, [prod, cons])))
    assert b.verdict == "ok"
