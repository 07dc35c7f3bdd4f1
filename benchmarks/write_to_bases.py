"""Bases of benchmarks/soundness.py for issue 47's 2-SM leader MMA (`to=` on write and
write_async): designs as plain data, the form soundness.py mutates."""

# 2-CTA designs whose accumulator a leader's MMA writes in both CTAs (issue 47: sm100 2-SM,
# write/write_async to=all, commits multicast, each CTA's epilogue reading its own half and
# releasing the leader's): one spec in 8 of the examples' family is made from one of these
# (its own stream), and write_to_mutation retargets their writes.
_EPI = {"name": "epilogue", "side": "consumer", "count": 1,
        "body": ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc to=leader",
                 "advance ring=acc"]}
WRITE_TO_BASES = [
    ("write_to_2sm_commit", {
        "pipeline": {"backend": "nvidia", "stages": 2, "cluster_size": 2,
                     "producer_arrive_count": 1, "consumer_arrive_count": 1, "items": 2},
        "rings": {"acc": {"stages": 2, "producer_arrive_count": 1, "consumer_arrive_count": 2}},
        "barriers": {},
        "roles": [{"name": "mma", "side": "producer", "count": 1, "ctas": [0],
                   "body": ["wait_empty ring=acc", "write_async ring=acc to=all",
                            "commit_full ring=acc to=all", "advance ring=acc"],
                   "epilogue": ["drain ring=acc"]}, _EPI]}),
    ("write_to_2sm_sync", {
        "pipeline": {"backend": "nvidia", "stages": 2, "cluster_size": 2,
                     "producer_arrive_count": 1, "consumer_arrive_count": 1, "items": 2},
        "rings": {"acc": {"stages": 1, "producer_arrive_count": 1, "consumer_arrive_count": 2}},
        "barriers": {},
        "roles": [{"name": "mma", "side": "producer", "count": 1, "ctas": [0],
                   "body": ["wait_empty ring=acc", "write ring=acc to=all",
                            "arrive_full ring=acc to=all", "advance ring=acc"],
                   "epilogue": ["drain ring=acc"]}, _EPI]}),
    ("write_to_2sm_gemm", {
        "pipeline": {"backend": "nvidia", "stages": 2, "cluster_size": 2,
                     "producer_arrive_count": 1, "consumer_arrive_count": 1, "items": 2},
        "rings": {"acc": {"stages": 1, "producer_arrive_count": 1, "consumer_arrive_count": 2}},
        "barriers": {},
        "roles": [{"name": "tma", "side": "producer", "count": 1, "ctas": [0],
                   "body": ["wait_empty", "expect_tx 64", "copy 64", "advance"],
                   "epilogue": ["drain"]},
                  {"name": "mma", "side": "consumer", "count": 1, "ctas": [0],
                   "body": ["wait_full", "read_async", "wait_empty ring=acc",
                            "write_async ring=acc to=all", "commit_empty",
                            "commit_full ring=acc to=all", "advance", "advance ring=acc"],
                   "epilogue": ["drain ring=acc"]}, _EPI]}),
]
