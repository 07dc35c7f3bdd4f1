"""Generated specs (hypothesis, derandomized): properties every verification must have.

Specs are drawn as plausible pipelines (wait / fill / signal / advance for producers, wait /
read / release / advance for consumers) and then mutated: counts, phases, byte counts, leader
guards, `unless=ready` with `try_*`, dropped, duplicated and swapped ops, prologue
pre-arrivals and drains. Each is written as TOML text and loaded with `load_spec_text`, so the
loader is exercised on every example.

(a) verify never raises; (b) it is deterministic; (c) it does not depend on the order the
roles are listed in; (d) every counterexample replays through the independent replayer
(tests/replay.py) and ends in its kind, and `ok` never comes with a limit; (e) the loader
round-trips the generated text.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeproof.checker.result import KINDS
from pipeproof.checker.verify import verify
from pipeproof.spec.load import load_spec_text

try:
    from tests.replay import replay
except ImportError:  # pytest's default import mode puts tests/ itself on sys.path
    from replay import replay

MAX_STATES = 20_000
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------------- generation

def _op(name, n=None, leader=False, extra=""):
    text = name if n is None else f"{name} {n}"
    if extra:
        text += f" {extra}"
    if leader:
        text += " @leader"
    return text


@st.composite
def producer_body(draw, backend, count):
    lead = count > 1 and draw(st.booleans())
    body = []
    if draw(st.integers(0, 9)) < 9:
        body.append("wait_empty")
    if backend == "nvidia" and draw(st.booleans()):
        b = draw(st.sampled_from([16, 32, 64]))
        b2 = b if draw(st.integers(0, 5)) else draw(st.sampled_from([16, 48, 1 << 20]))
        order = draw(st.sampled_from(["expect_copy", "copy_expect"]))
        pair = [_op("expect_tx", b, lead), _op("copy", b2, lead)]
        body += pair if order == "expect_copy" else pair[::-1]
    else:
        if draw(st.integers(0, 5)):
            body.append(_op("write", leader=lead and draw(st.booleans())))
        n = draw(st.sampled_from([None, None, None, 2]))
        body.append(_op("arrive_full", n, lead))
    body.append("advance")
    return body


@st.composite
def consumer_body(draw, count):
    lead = count > 1 and draw(st.booleans())
    body = []
    wait = draw(st.sampled_from(["wait", "wait", "wait", "try", "none"]))
    if wait == "wait":
        body.append("wait_full")
    elif wait == "try":
        body += ["try_full", "wait_full unless=ready"]
    if draw(st.integers(0, 5)):
        body.append("read")
    release = draw(st.sampled_from(["arrive", "arrive", "commit", "none"]))
    n = draw(st.sampled_from([None, None, None, 2]))
    if release == "arrive":
        body.append(_op("arrive_empty", n, lead))
    elif release == "commit":
        body.append(_op("commit_empty", n, lead))
    body.append("advance")
    return body


@st.composite
def mutate(draw, body):
    body = list(body)
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["drop", "dup", "swap", "none", "none"]))
        if not body or kind == "none":
            continue
        i = draw(st.integers(0, len(body) - 1))
        if kind == "drop":
            del body[i]
        elif kind == "dup":
            body.insert(i, body[i])
        elif kind == "swap" and i + 1 < len(body):
            body[i], body[i + 1] = body[i + 1], body[i]
    return body


@st.composite
def designs(draw):
    """A spec as plain data: {'pipeline': {...}, 'roles': [{...}, ...]}."""
    backend = draw(st.sampled_from(["nvidia", "amd"]))
    stages = draw(st.integers(1, 3))
    items = draw(st.integers(0, 4))
    roles = []
    n_prod = draw(st.integers(1, 2))
    n_cons = draw(st.integers(1, 2))
    for i in range(n_prod):
        count = draw(st.integers(1, 2))
        body = draw(mutate(draw(producer_body(backend, count))))
        role = {"name": f"prod{i}", "side": "producer", "count": count, "body": body}
        if draw(st.integers(0, 7)) == 0:
            role["initial_phase"] = draw(st.sampled_from([0, 2, 3]))
        if draw(st.integers(0, 3)) == 0:
            role["epilogue"] = ["drain"]
        if draw(st.integers(0, 7)) == 0:
            role["items"] = draw(st.integers(0, 3))
        roles.append(role)
    for i in range(n_cons):
        count = draw(st.integers(1, 2))
        body = draw(mutate(draw(consumer_body(count))))
        role = {"name": f"cons{i}", "side": "consumer", "count": count, "body": body}
        if draw(st.integers(0, 7)) == 0:
            role["initial_phase"] = draw(st.sampled_from([1, 2]))
        if draw(st.integers(0, 5)) == 0:
            role["prologue"] = ["arrive_empty"]
        if draw(st.integers(0, 7)) == 0:
            role["items"] = draw(st.integers(0, 3))
        roles.append(role)

    def arrivals(side, op):
        total = 0
        for r in roles:
            if r["side"] != side:
                continue
            for text in r["body"]:
                words = text.split()
                if words[0] in op:
                    n = int(words[1]) if len(words) > 1 and words[1].isdigit() and \
                        words[0] != "expect_tx" else 1
                    total += n * (1 if "@leader" in words else r["count"])
        return max(total, 1)

    pac = arrivals("producer", ("arrive_full", "expect_tx"))
    cac = arrivals("consumer", ("arrive_empty", "commit_empty"))
    pac = max(1, pac + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
    cac = max(1, cac + draw(st.sampled_from([0, 0, 0, 0, -1, 1])))
    pipeline = {"name": "generated", "backend": backend, "stages": stages,
                "producer_arrive_count": pac, "consumer_arrive_count": cac, "items": items}
    barriers = {}
    if draw(st.integers(0, 5)) == 0:
        # A named barrier over some roles, synced once per item somewhere in their bodies.
        users = draw(st.lists(st.sampled_from([r["name"] for r in roles]), min_size=1,
                              unique=True))
        barriers["bar"] = {"roles": sorted(users)}
        if draw(st.integers(0, 3)) == 0:
            barriers["bar"]["count"] = draw(st.integers(1, 3))
        for r in roles:
            if r["name"] in users:
                r["body"].insert(draw(st.integers(0, len(r["body"]))), "sync bar")
    if backend == "nvidia" and draw(st.integers(0, 4)) == 0:
        # Two CTAs: some signalling ops get a target.
        pipeline["cluster_size"] = 2
        targets = ("arrive_full", "arrive_empty", "expect_tx", "copy", "commit_empty")
        for r in roles:
            for j, text in enumerate(r["body"]):
                if text.split()[0] in targets and draw(st.integers(0, 2)) == 0:
                    words = text.split()
                    lead = words[-1] == "@leader"
                    words = [w for w in words if w != "@leader"]
                    words.append("to=" + draw(st.sampled_from(["self", "leader", "peer", "all"])))
                    r["body"][j] = " ".join(words + (["@leader"] if lead else []))
    return {"pipeline": pipeline, "roles": roles, "barriers": barriers}


def to_toml(design, order=None):
    """The design as spec text; `order` lists role indices in the order to write them."""
    lines = ["[pipeline]"]
    for key, value in design["pipeline"].items():
        lines.append(f"{key} = {json.dumps(value)}")
    roles = design["roles"]
    for i in (order if order is not None else range(len(roles))):
        lines += ["", "[[role]]"]
        for key, value in roles[i].items():
            lines.append(f"{key} = {json.dumps(value)}")
    for name, table in design.get("barriers", {}).items():
        lines += ["", f"[barrier.{name}]"]
        for key, value in table.items():
            lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def load(design, order=None):
    return load_spec_text(to_toml(design, order), "generated.toml")


def summary(result):
    return (result.verdict, result.kinds, result.depth, result.states, result.transitions,
            result.limit, {k: [s.action for s in t.steps] for k, t in result.traces.items()})


def check_result(spec, result):
    """Invariants of one result, and the replay of each of its counterexamples."""
    assert result.verdict in ("ok", "violation", "inconclusive")
    if result.verdict == "ok":
        assert result.limit == "" and result.kinds == () and result.traces == {}
    if result.verdict == "inconclusive":
        assert result.limit != "" and result.kinds == ()
    if result.verdict == "violation":
        assert result.kinds and result.kind == result.kinds[0]
        assert list(result.kinds) == [k for k in KINDS if k in result.kinds]  # contract order
        assert set(result.traces) == set(result.kinds)
        for kind, trace in result.traces.items():
            assert trace.kind == kind
            if not result.limit:
                assert len(trace.steps) == result.depth
            outcome = replay(spec, trace.to_json())
            assert kind in outcome.kinds, (kind, outcome.kinds, to_steps(trace))
            # The path before the last step is clean in the replayer too.
            for i, kinds in enumerate(outcome.step_kinds[:-1]):
                assert not kinds, (i, kinds, to_steps(trace))


def to_steps(trace):
    return [s.action for s in trace.steps]


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
    its text as written; checker/trace.py fixes neither)."""
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
