"""Generated specs with the [expressiveness] features (hypothesis, derandomized).

Two rings (the main input ring and an `acc` ring handed to an epilogue role), async reads with
`read_wait` and `commit_empty`, `every=K`/`at=j` guards, `sync_arrive`/`sync_wait` on a counted
barrier, and roles limited to some CTAs of a cluster, each mutated at random. Properties: verify
never raises; it is deterministic; every counterexample replays through the independent
replayer (tests/replay.py) and ends in its kind; role order does not change the verdict.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.checker.verify import verify
from pipeproof.spec.load import load_spec_text
from tests.replay import replay

MAX_STATES = 20_000
SETTINGS = dict(derandomize=True, deadline=None, database=None, max_examples=60,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def consumer_body(draw):
    body = ["wait_full"]
    if draw(st.booleans()):
        body.append("read_async")
        release = draw(st.sampled_from(["wait_then_arrive", "arrive_then_wait", "commit"]))
        if release == "wait_then_arrive":
            body += ["read_wait 0", "arrive_empty"]
        elif release == "arrive_then_wait":
            body += ["arrive_empty", "read_wait 1"]
        else:
            body.append("commit_empty")
    else:
        body += ["read", "arrive_empty"]
    body.append("advance")
    if draw(st.booleans()):  # hand a result to the epilogue through the acc ring
        guard = draw(st.sampled_from(["", " every=2 at=1", " every=2"]))
        body += [f"wait_empty ring=acc{guard}", f"write ring=acc{guard}",
                 f"arrive_full ring=acc{guard}", f"advance ring=acc{guard}"]
    return body


@st.composite
def designs(draw):
    stages = draw(st.integers(1, 2))
    items = draw(st.integers(1, 4))
    cluster = draw(st.sampled_from([1, 1, 2]))
    producer = ["wait_empty", "write", "arrive_full", "advance"]
    if draw(st.integers(0, 3)) == 0:
        producer.append(f"reset every={draw(st.integers(1, 3))}")
    consumer = draw(consumer_body())
    uses_acc = any("ring=acc" in op for op in consumer)
    every2 = any("every=2" in op for op in consumer)
    roles = [{"name": "producer", "side": "producer", "count": 1, "body": producer,
              "epilogue": ["drain"] if draw(st.booleans()) else []},
             {"name": "consumer", "side": "consumer", "count": 1, "body": consumer}]
    if uses_acc:
        epi_items = items // 2 if every2 else items
        epi_items += draw(st.sampled_from([0, 0, 0, 1]))  # sometimes one too many
        roles.append({"name": "epilogue", "side": "consumer", "count": 1, "items": epi_items,
                      "body": ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc",
                               "advance ring=acc"]})
    barrier = draw(st.booleans())
    if barrier:
        split = draw(st.booleans())
        roles[0]["body"] = roles[0]["body"] + (["sync_arrive bar"] if split else ["sync bar"])
        roles[1]["body"] = (["sync_wait bar"] if split and draw(st.booleans()) else ["sync bar"]) \
            + roles[1]["body"]
    if cluster == 2 and draw(st.booleans()):
        roles[-1]["ctas"] = [0]
    for role in roles:
        role["body"] = [op for op in role["body"] if draw(st.integers(0, 11))]  # drop a few
    return {"stages": stages, "items": items, "cluster": cluster, "uses_acc": uses_acc,
            "barrier": barrier, "roles": roles}


def to_toml(d, roles=None) -> str:
    lines = ["[pipeline]", 'backend = "nvidia"', f"stages = {d['stages']}",
             "producer_arrive_count = 1", "consumer_arrive_count = 1",
             f"items = {d['items']}", f"cluster_size = {d['cluster']}", ""]
    if d["uses_acc"]:
        lines += ["[ring.acc]", "stages = 1", "producer_arrive_count = 1",
                  "consumer_arrive_count = 1", ""]
    if d["barrier"]:
        lines += ["[barrier.bar]", "count = 2", ""]
    for r in roles or d["roles"]:
        lines.append("[[role]]")
        for k, v in r.items():
            lines.append(f"{k} = {json.dumps(v)}")
        lines.append("")
    return "\n".join(lines)


def check(d):
    spec = load_spec_text(to_toml(d), "generated.toml")
    a = verify(spec, max_states=MAX_STATES)
    b = verify(spec, max_states=MAX_STATES)
    assert (a.verdict, a.kinds, a.states, a.transitions, a.depth) == \
        (b.verdict, b.kinds, b.states, b.transitions, b.depth)
    for kind, trace in a.traces.items():
        assert [s.action for s in trace.steps] == [s.action for s in b.traces[kind].steps]
        outcome = replay(spec, trace.to_json())
        assert kind in outcome.kinds, (kind, outcome.kinds, to_toml(d))
    if a.verdict == "ok":
        assert not a.limit
    return a


@settings(**SETTINGS)
@given(designs())
def test_expressive_specs_verify_deterministically_and_replay(d):
    check(d)


@settings(**SETTINGS)
@given(designs())
def test_expressive_specs_do_not_depend_on_role_order(d):
    a = check(d)
    spec = load_spec_text(to_toml(d, roles=d["roles"][::-1]), "generated.toml")
    b = verify(spec, max_states=MAX_STATES)
    if "inconclusive" not in (a.verdict, b.verdict):
        assert (a.verdict, a.kinds, a.depth, a.states) == (b.verdict, b.kinds, b.depth, b.states)


def test_the_generator_reaches_ok_and_violations():
    """The properties above must not pass on trivial specs only."""
    seen = set()

    @settings(**SETTINGS)
    @given(designs())
    def collect(d):
        r = verify(load_spec_text(to_toml(d), "generated.toml"), max_states=MAX_STATES)
        text = to_toml(d)
        seen.add(r.verdict)
        seen.update(r.kinds)
        seen.update(f for f in ("read_async", "ring=acc", "sync_wait", "every=", "ctas")
                    if f in text)

    collect()
    assert {"ok", "violation", "read_async", "ring=acc", "sync_wait", "every=", "ctas"} <= seen, seen
    assert len(seen & {"deadlock", "overwrite_before_drain", "read_before_fill",
                       "inflight_at_exit"}) >= 3, seen
