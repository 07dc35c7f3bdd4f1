"""The plain-Python first try of `pipeproof verify` (checker/engines/tier.py).

Plain Python must find exactly what the compiled engine finds: the same verdicts, counts and
traces, on every example and on generated specs. The command must answer a small spec without
importing numba, hand a bigger one to the compiled engine without printing anything twice, and
never let the first try change what the user sees.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec
from tests import generators as G
from tests import generators_expressive as GX
from tests.paths import EXAMPLE_PATHS, EXAMPLES_DIR, ROOT
from tests.specs import PRODUCER_COPIES, standard_toml
from tests.tier_probe import SECONDS, fingerprint

# Examples with thousands of states: seconds each as plain Python, which the command hands to
# the compiled engine anyway. The rest run both ways below.
PLAIN_TOO_SLOW = {"bug_cutlass_no_producer_tail.toml", "cutlass_tma_async_cluster2.toml",
                  "mojo_input_tile_cluster2_k2.toml"}
GENERATED_MAX_STATES = 3000  # generated specs stop here, both ways: limits must agree too
IMPORT_LINE = re.compile(r"^import time:.*\|\s*numba$", re.M)


def plain_results(max_states: int, paths) -> dict:
    """Run tests/tier_probe.py as plain Python in its own process."""
    env = dict(os.environ, PIPEPROOF_JIT="0")
    proc = subprocess.run([sys.executable, "-m", "tests.tier_probe", str(max_states),
                           *map(str, paths)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["numba imported"] is False
    return doc["results"]


def compiled_results(max_states: int, paths) -> dict:
    return {str(p): fingerprint(verify(load_spec(str(p)), max_states=max_states or None))
            for p in paths}


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
def test_plain_python_finds_what_the_compiled_engine_finds_on_the_examples():
    paths = [p for p in EXAMPLE_PATHS if p.name not in PLAIN_TOO_SLOW]
    assert len(paths) >= 30
    plain, compiled = plain_results(0, paths), compiled_results(0, paths)
    assert {d["verdict"] for d in compiled.values()} == {"ok", "violation"}
    for path in map(str, paths):
        assert plain[path] == compiled[path], path


@pytest.mark.slow  # 60 generated specs in both engines, ~35 s; the examples above stay in the fast suite
def test_plain_python_finds_what_the_compiled_engine_finds_on_generated_specs(tmp_path):
    texts = []

    @settings(max_examples=40, **G.SETTINGS)
    @given(G.designs())
    def collect(design):
        texts.append(G.to_toml(design))

    @settings(max_examples=20, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(GX.designs())
    def collect_expressive(design):
        texts.append(GX.to_toml(design))

    collect()
    collect_expressive()
    paths = []
    for i, text in enumerate(texts):
        paths.append(tmp_path / f"g{i:03}.toml")
        paths[-1].write_text(text)
    plain = plain_results(GENERATED_MAX_STATES, paths)
    compiled = compiled_results(GENERATED_MAX_STATES, paths)
    assert len({d["verdict"] for d in compiled.values()}) >= 2
    for path in map(str, paths):
        assert plain[path] == compiled[path], Path(path).read_text()


# ------------------------------------------------------------------------ the command

SMALL = standard_toml(stages=2, consumers=2, items=4)
OTHER = standard_toml(stages=3, consumers=1, items=5)
# (without its declared verdict: a run whose every spec gets the declared one exits 0)
DEADLOCK = (EXAMPLES_DIR / "bug_consumer_count_too_many.toml").read_text().replace(
    'expect = "deadlock"\n', "")
# Over a thousand states without the reduction: far past a tiny budget.
BIG = standard_toml(stages=3, consumers=3, items=6, producer_body=PRODUCER_COPIES)


def command(tmp_path, *args, **env):
    """`python -X importtime -m checker.cli.main ARGS`: the import log shows whether numba came in."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pipeproof.checker.cli.main", *args],
                          cwd=tmp_path, env=dict(os.environ, **env), capture_output=True,
                          text=True, timeout=600)
    numba = bool(IMPORT_LINE.search(proc.stderr))
    text = "\n".join(line for line in proc.stderr.splitlines()  # minus notices of a compile
                     if not line.startswith(("import time:", "pipeproof: ")))
    return proc.returncode, proc.stdout, SECONDS.sub("<s>", text), numba


def without_seconds(doc: dict) -> dict:
    for r in doc["results"]:
        r.pop("seconds"), r.pop("wall_seconds")
    doc.pop("seconds", None), doc.pop("wall_seconds", None)
    return doc


def write(tmp_path, **texts):
    for name, text in texts.items():
        (tmp_path / f"{name}.toml").write_text(text)


def test_a_small_spec_is_answered_without_numba_and_as_compiled(tmp_path):
    write(tmp_path, small=SMALL, dead=DEADLOCK)
    for args in (["small.toml"], ["dead.toml", "--trace", "cx.itf.json"]):
        code, out, err, numba = command(tmp_path, "verify", "--json", *args)
        trace = (tmp_path / "cx.itf.json").read_text() if "--trace" in args else None
        code2, out2, err2, numba2 = command(tmp_path, "verify", "--json", *args, PIPEPROOF_JIT="1")
        trace2 = (tmp_path / "cx.itf.json").read_text() if "--trace" in args else None
        assert not numba and numba2
        assert code == code2 == (0 if args[0] == "small.toml" else 1)
        assert without_seconds(json.loads(out)) == without_seconds(json.loads(out2))
        assert err == err2 and trace == trace2


def test_a_spec_past_the_budget_is_run_compiled_and_printed_once(tmp_path):
    write(tmp_path, small=SMALL, big=BIG)
    args = ("verify", "--no-por", "--json", "small.toml", "big.toml")
    code, out, err, numba = command(tmp_path, *args, PIPEPROOF_PLAIN_SECONDS="0.000001")
    code2, out2, err2, numba2 = command(tmp_path, *args, PIPEPROOF_JIT="1")
    assert numba and numba2 and code == code2 == 0
    assert err.count("small.toml: ok (") == 1 and err.count("big.toml: ok (") == 1
    assert err == err2
    assert without_seconds(json.loads(out)) == without_seconds(json.loads(out2))
    doc = json.loads(out)
    assert [r["states"] for r in doc["results"]][1] > 1000


def test_no_first_try_when_it_is_turned_off(tmp_path):
    write(tmp_path, small=SMALL)
    *_, numba = command(tmp_path, "verify", "small.toml", PIPEPROOF_PLAIN_SECONDS="0")
    assert numba


def test_a_user_limit_met_in_the_first_try_is_decided_compiled(tmp_path):
    """--max-states hit as plain Python: the compiled engine reports it, once."""
    write(tmp_path, big=BIG)
    code, out, err, numba = command(tmp_path, "verify", "--no-por", "--max-states", "50", "big.toml")
    assert numba and code == 3
    assert out.count("big.toml: inconclusive: max-states 50") == 1


def test_a_bad_spec_among_good_ones_is_reported_once(tmp_path):
    write(tmp_path, small=SMALL, other=OTHER)
    (tmp_path / "bad.toml").write_text("[pipeline]\nstages = 0\n")
    code, out, err, numba = command(tmp_path, "verify", "--json", "small.toml", "bad.toml",
                                    "other.toml")
    assert not numba and code == 2
    assert err.count("bad.toml") == 1 and "Traceback" not in err
    doc = json.loads(out)
    assert [r["verdict"] for r in doc["results"]] == ["ok", "ok"]
    assert [e["spec"] for e in doc["errors"]] == ["bad.toml"]
