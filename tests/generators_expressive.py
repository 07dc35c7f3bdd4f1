"""The spec generator of tests/test_generated_expressive.py (hypothesis): specs with the
[expressiveness] features.

Two rings (the main input ring and an `acc` ring handed to an epilogue role, its full signal
arrived on by `arrive_full` or `commit_full`), async reads with `read_wait` and `commit_empty`,
`every=K`/`at=j` guards, `sync_arrive`/`sync_wait` on a counted barrier, and roles limited to some CTAs of a cluster, each mutated at random. A design is plain
data (`designs()`), written as spec text by `to_toml`. `expressive_with_counts()` draws the same
specs as text with 2 or 3 agents in the consumer role (the symmetry and partial-order tests).

A plain module (not a test module): tests/test_generated_expressive.py checks its properties;
the symmetry, partial-order, BMC, pre-check and tier tests draw from it too.
"""
from __future__ import annotations

import copy
import json

from hypothesis import strategies as st


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
        # the acc ring's full: an arrive, or (sm100, issue 34) a commit_full, which fires
        # after this agent's async reads and earlier commits
        fill = draw(st.sampled_from(["arrive_full", "commit_full"]))
        body += [f"wait_empty ring=acc{guard}", f"write ring=acc{guard}",
                 f"{fill} ring=acc{guard}", f"advance ring=acc{guard}"]
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


@st.composite
def expressive_with_counts(draw):
    """The expressive generator with 2 or 3 agents in the consumer role: their async reads,
    waiting commits, barrier arrivals and acc-ring handovers all name or act as one of
    several interchangeable agents."""
    d = copy.deepcopy(draw(designs()))
    k = draw(st.integers(2, 3))
    d["roles"][1]["count"] = k
    text = to_toml(d)
    if draw(st.integers(0, 3)):
        text = text.replace("consumer_arrive_count = 1", f"consumer_arrive_count = {k}", 1)
    if d["uses_acc"] and draw(st.booleans()):
        text = text.replace("[ring.acc]\nstages = 1\nproducer_arrive_count = 1",
                            f"[ring.acc]\nstages = 1\nproducer_arrive_count = {k}")
    return text
