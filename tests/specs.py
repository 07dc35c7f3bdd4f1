"""Spec text shared by the tests: the standard pipeline with knobs for its usual bugs, and a
few small specs with three interchangeable consumers."""
from __future__ import annotations

import json

PRODUCER_WRITES = ["wait_empty", "write", "arrive_full", "advance"]
PRODUCER_COPIES = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
CONSUMER_READS = ["wait_full", "read", "arrive_empty", "advance"]


def standard_toml(stages=2, consumers=1, items=3, producer_phase=None, consumer_count=None,
                  backend="nvidia", producer_body=None, consumer_body=None, name=None) -> str:
    """One producer, `consumers` consumer agents that all read every slot (like the example
    of docs/model.md "Spec files (TOML)")."""
    name_line = "" if name is None else f"name = {json.dumps(name)}\n"
    phase = "" if producer_phase is None else f"initial_phase = {producer_phase}\n"
    return f"""
[pipeline]
{name_line}backend = "{backend}"
stages = {stages}
producer_arrive_count = 1
consumer_arrive_count = {consumers if consumer_count is None else consumer_count}
items = {items}

[[role]]
name = "producer"
side = "producer"
count = 1
{phase}body = {json.dumps(producer_body or PRODUCER_WRITES)}

[[role]]
name = "consumer"
side = "consumer"
count = {consumers}
body = {json.dumps(consumer_body or CONSUMER_READS)}
"""


# Small specs, each with three interchangeable consumers (one symmetry class) and something
# in the state that names agents or waits for all of them: async reads and their commits, a
# named barrier with try_full, plain writes (tests/test_symmetry.py, tests/test_por.py).
ASYNC_THREE = """
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 3
items = 2

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
epilogue = ["drain"]

[[role]]
name = "consumer"
side = "consumer"
count = 3
body = ["wait_full", "read_async", "commit_empty", "advance", "read_wait 1"]
epilogue = ["read_wait 0"]
"""

BARRIER_THREE = """
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 3
items = 2

[barrier.bar]
roles = ["consumer"]

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 3
body = ["try_full", "wait_full unless=ready", "read", "sync bar", "arrive_empty", "advance"]
"""

THREE_CONSUMERS = {"async": ASYNC_THREE, "barrier": BARRIER_THREE,
                   "writes": standard_toml(stages=2, consumers=3, items=2)}
