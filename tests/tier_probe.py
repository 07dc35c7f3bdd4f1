"""Verify specs and print what the check found, minus the clock: run by tests/test_tier.py as
plain Python (PIPEPROOF_JIT=0) in a process of its own, and compared with the compiled run.

    python -m tests.tier_probe MAX_STATES SPEC...
        ->  {"numba imported": bool, "results": {SPEC: {...}}}   (MAX_STATES 0: no limit)
"""
from __future__ import annotations

import json
import re
import sys

SECONDS = re.compile(r"\d+\.\d+ s\b")


def fingerprint(result) -> dict:
    """Everything a user sees of a result (JSON and text, traces included) but the seconds."""
    from pipeproof.checker.results.report import format_text, result_to_json
    doc = result_to_json(result)
    doc.pop("seconds")
    doc["text"] = SECONDS.sub("<s>", format_text(result))
    return doc


def main(max_states: int, paths) -> dict:
    from pipeproof.checker.engines.verifier import verify
    from pipeproof.spec.load import load_spec
    results = {path: fingerprint(verify(load_spec(path), max_states=max_states or None))
               for path in paths}
    return {"numba imported": "numba" in sys.modules, "results": results}


if __name__ == "__main__":
    json.dump(main(int(sys.argv[1]), sys.argv[2:]), sys.stdout, sort_keys=True)
