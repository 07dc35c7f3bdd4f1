"""Spec text shared by the tests: the standard pipeline with knobs for its usual bugs."""
from __future__ import annotations

import json

PRODUCER_WRITES = ["wait_empty", "write", "arrive_full", "advance"]
PRODUCER_COPIES = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
CONSUMER_READS = ["wait_full", "read", "arrive_empty", "advance"]


def standard_toml(stages=2, consumers=1, items=3, producer_phase=None, consumer_count=None,
                  backend="nvidia", producer_body=None, consumer_body=None, name=None) -> str:
    """One producer, `consumers` consumer agents that all read every slot (DESIGN's example)."""
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
