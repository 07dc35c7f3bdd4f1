"""The spec generator of tests/test_generated.py (hypothesis), and the checks of one result.

Specs are drawn as plausible pipelines (wait / fill / signal / advance for producers, wait /
read / release / advance for consumers) and then mutated: counts, phases, byte counts, leader
guards, `unless=ready` with `try_*`, dropped, duplicated and swapped ops, prologue
pre-arrivals and drains, sometimes a named barrier or two CTAs. A design is plain data
(`designs()`); `to_toml` writes it as spec text and `load` loads that with `load_spec_text`.
`check_result` checks the invariants of one verification result and replays each of its
counterexamples through the independent replayer (tests/replay.py). `SETTINGS` are the
hypothesis settings the tests drawing from it share (derandomized, no database).

A plain module (not a test module): tests/test_generated.py checks its properties; the
symmetry, partial-order, BMC, pre-check, tier and soundness tests use it too.
"""
from __future__ import annotations

import json

from hypothesis import HealthCheck
from hypothesis import strategies as st

from pipeproof.checker.results.result import KINDS
from pipeproof.spec.load import load_spec_text

try:
    from tests.replay import replay
except ImportError:  # pytest's default import mode puts tests/ itself on sys.path
    from replay import replay

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
        # commit_full (issue 34): the fill's arrival on full is issued and fires later
        body.append(_op(draw(st.sampled_from(["arrive_full", "arrive_full", "commit_full"])),
                        n, lead))
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

    pac = arrivals("producer", ("arrive_full", "expect_tx", "commit_full"))
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
        targets = ("arrive_full", "arrive_empty", "expect_tx", "copy", "commit_empty",
                   "commit_full")
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


def check_result(spec, result):
    """Invariants of one result, and the replay of each of its counterexamples."""
    assert result.verdict in ("ok", "violation", "inconclusive")
    if result.verdict == "ok":
        assert result.limit == "" and result.kinds == () and result.traces == {}
    if result.verdict == "inconclusive":
        assert result.limit != "" and result.kinds == ()
    if result.verdict == "violation":
        assert result.kinds and result.kind == result.kinds[0]
        # in the order of docs/model.md "Violation kinds"
        assert list(result.kinds) == [k for k in KINDS if k in result.kinds]
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
    # A warning's trace (an own copy or commit still in flight at a CTA's exit) replays too: each
    # step enabled, no violation on the way, and the warning at its last step.
    for name, trace in getattr(result, "warnings", {}).items():
        outcome = replay(spec, trace.to_json())
        assert name in outcome.step_warnings[-1], (name, outcome.step_warnings, to_steps(trace))
        assert not any(outcome.step_kinds), (name, outcome.step_kinds, to_steps(trace))


def to_steps(trace):
    return [s.action for s in trace.steps]
