"""Generated specs (hypothesis, derandomized): properties every verification must have.

Specs are drawn as plausible pipelines (wait / fill / signal / advance for producers, wait /
read / release / advance for consumers) and then mutated: counts, phases, byte counts, leader
guards, `unless=ready` with `try_*`, dropped, duplicated and swapped ops, prologue
pre-arrivals and drains (the generator is tests/generators.py). Each is written as TOML text
and loaded with `load_spec_text`, so the loader is exercised on every example.

(a) verify never raises; (b) it is deterministic; (c) it does not depend on the order the
roles are listed in; (d) every counterexample replays through the independent replayer
(tests/replay.py) and ends in its kind, and `ok` never comes with a limit; (e) the loader
round-trips the generated text.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text

try:
    from tests.generators import SETTINGS, check_result, designs, load, to_toml
    from tests.replay import replay
except ImportError:  # pytest's default import mode puts tests/ itself on sys.path
    from generators import SETTINGS, check_result, designs, load, to_toml
    from replay import replay

MAX_STATES = 20_000


def summary(result):
    return (result.verdict, result.kinds, result.depth, result.states, result.transitions,
            result.limit, {k: [s.action for s in t.steps] for k, t in result.traces.items()})


# ---------------------------------------------------------------------------------- tests

@settings(max_examples=400, **SETTINGS)
@given(designs())
def test_verify_deterministic_and_replayable(design):
    """(a) never raises, (b) same result twice, (d) traces replay, ok never limited."""
    spec = load(design)
    first = verify(spec, max_states=MAX_STATES)
    check_result(spec, first)
    second = verify(spec, max_states=MAX_STATES)
    assert summary(first) == summary(second)


@settings(max_examples=300, **SETTINGS)
@given(designs(), st.randoms(use_true_random=False))
def test_role_order_does_not_matter(design, rnd):
    """(c) listing the roles in another order gives the same verdict, kinds, depth and, when
    the exploration was complete, the same state and transition counts."""
    order = list(range(len(design["roles"])))
    rnd.shuffle(order)
    if order == sorted(order):
        order.reverse()
    a_spec, b_spec = load(design), load(design, order)
    a = verify(a_spec, max_states=MAX_STATES)
    b = verify(b_spec, max_states=MAX_STATES)
    if a.limit or b.limit:
        # Where the limit cut depends on the order, only a definite violation is comparable.
        return
    assert (a.verdict, a.kinds, a.depth) == (b.verdict, b.kinds, b.depth)
    assert (a.states, a.transitions) == (b.states, b.transitions)
    check_result(b_spec, b)


@settings(max_examples=200, **SETTINGS)
@given(designs())
def test_loader_round_trip(design):
    """(e) the generated text loads into the spec it describes."""
    text = to_toml(design)
    spec = load_spec_text(text, "generated.toml")
    p = design["pipeline"]
    assert (spec.backend, spec.stages, spec.items) == (p["backend"], p["stages"], p["items"])
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == \
        (p["producer_arrive_count"], p["consumer_arrive_count"])
    assert spec.path == "generated.toml" and spec.name == "generated"
    assert spec.cluster_size == p.get("cluster_size", 1)
    assert [(b.name, b.roles, b.count) for b in spec.barriers] == [
        (name, tuple(t["roles"]), t.get("count")) for name, t in design["barriers"].items()]
    assert [r.name for r in spec.roles] == [r["name"] for r in design["roles"]]
    for role, raw in zip(spec.roles, design["roles"]):
        assert role.side == raw["side"] and role.count == raw["count"]
        assert role.items == raw.get("items", p["items"])
        assert role.initial_phase == raw.get("initial_phase", 1 if raw["side"] == "producer" else 0)
        assert role.initial_stage == 0
        for section in ("prologue", "body", "epilogue"):
            ops = getattr(role, section)
            assert [op.text for op in ops] == raw.get(section, [])
            for op, written in zip(ops, raw.get(section, [])):
                words = written.split()
                assert op.name == words[0]
                assert op.leader_only == ("@leader" in words)
                assert op.unless_ready == ("unless=ready" in words)
                if len(words) > 1 and words[1].isdigit():
                    assert op.n == int(words[1])
                to = [w[3:] for w in words if w.startswith("to=")]
                assert op.to == (to[0] if to else "self")
                if op.name == "sync":
                    assert op.barrier == words[1]
    # Loading the same text again gives an equal spec.
    assert load_spec_text(text, "generated.toml") == spec


def test_generator_covers_every_verdict_and_kind():
    """The generator is not vacuous: over a fixed sample it reaches ok, violations of most
    kinds, and few inconclusive runs."""
    seen = {}

    @settings(max_examples=200, **SETTINGS)
    @given(designs())
    def sample(design):
        r = verify(load(design), max_states=MAX_STATES)
        key = r.kind if r.verdict == "violation" else r.verdict
        seen[key] = seen.get(key, 0) + 1

    sample()
    assert seen.get("ok", 0) >= 5, seen
    for kind in ("deadlock", "read_before_fill", "overwrite_before_drain", "over_arrival"):
        assert seen.get(kind, 0) >= 1, seen
    assert seen.get("inconclusive", 0) <= 30, seen


def test_view_op_agrees_with_the_replayer():
    """The state views of a trace and of the independent replayer identify an agent's next op
    the same way, for an op written with an operand too (the view may show the op's name or
    its text as written; checker/results/trace.py fixes neither)."""
    text = to_toml({"pipeline": {"backend": "nvidia", "stages": 1, "producer_arrive_count": 1,
                                 "consumer_arrive_count": 1, "items": 1},
                    "roles": [{"name": "p", "side": "producer", "count": 1,
                               "body": ["arrive_full 2 @leader"]},
                              {"name": "c", "side": "consumer", "count": 1,
                               "body": ["wait_full"]}]})
    spec = load_spec_text(text, "op_view.toml")
    result = verify(spec)
    assert result.kinds == ("over_arrival",)
    trace = result.traces["over_arrival"].to_json()
    assert trace["initial"]["agents"]["p[0]"]["op"] in ("arrive_full", "arrive_full 2 @leader")
    assert "over_arrival" in replay(spec, trace).kinds
