"""The BMC engine (checker/smt/bmc.py) against the explicit engine (issue 4, parts 2 and 6).

- Generated specs (the strategies of tests/generators.py and tests/generators_expressive.py,
  kept small so every run fits the default depth): BMC and the explicit engine agree on the
  verdict (explicit `ok` <=> BMC proves that no run of any length violates anything), on
  every kind found at the minimal depth, and on that depth; every BMC trace replays through
  the independent replayer (tests/replay.py) with a clean prefix.
- The examples in spec/examples/ whose shortest counterexample is short: the same kinds and
  depth as the explicit engine's pins (tests/pins.py), traces replayed; correct examples give
  no false alarm within a small depth.
- Limits: a depth below the minimal one is `inconclusive` with `bmc depth K`; a timeout is
  `inconclusive` with Z3's reason; `ok` only with a complete bound.
- The reductions (symmetry, partial-order) and the bit-vector encoding change nothing: the
  same kinds and depths without them. The same spec gives the same answer and trace twice.
"""
from __future__ import annotations

import functools
import json

import pytest
from hypothesis import HealthCheck, given, settings

from pipeproof.checker.results import report
from pipeproof.checker.results.trace_files import to_chrome, to_itf
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.smt import bmc, encode
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.smt.encode import Encoding
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests import generators as core
from tests import generators_expressive as expressive
from tests.example_results import expected_kinds
from tests.paths import EXAMPLE_PATHS, EXAMPLES_DIR
from tests.pins import PINNED_TRACE_LENGTH
from tests.specs import standard_toml

MAX_STATES = 20_000
MAX_RUN = 24          # generated specs whose longest run is at most this (BMC proves `ok` there)
SHORT = 28            # examples whose shortest counterexample is at most this long
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


def longest_run(spec) -> int:
    return Encoding(compile_model(spec)).longest_run_bound


def agree(spec):
    """Both engines on `spec`; returns (explicit, bmc) after checking that they agree."""
    e = verify(spec, max_states=MAX_STATES, por=False)  # its max_depth counts every step
    if e.limit:
        return e, None  # the explicit engine itself is inconclusive: nothing to compare
    if e.verdict == "ok":  # the bound BMC needs for `ok` is the length of every complete run
        assert e.max_depth == longest_run(spec)
    b = verify_bmc(spec, timeout=60)
    assert not (b.verdict == "inconclusive" and "unknown" in b.limit), b.limit
    assert b.verdict == e.verdict, (e.verdict, e.kinds, e.depth, b.verdict, b.kinds, b.limit)
    assert (b.kinds, b.depth) == (e.kinds, e.depth)
    core.check_result(spec, b)  # every trace: its length, its kind, replayed, clean prefix
    return e, b


# ------------------------------------------------------------------------ generated specs

def _small(design: dict) -> dict:
    """At most 2 items per agent, so that a run fits the default depth."""
    design["pipeline"]["items"] = min(design["pipeline"]["items"], 2)
    for role in design["roles"]:
        if "items" in role:
            role["items"] = min(role["items"], 2)
    return design


def _fits(text: str) -> bool:
    return longest_run(load_spec_text(text, "generated.toml")) <= MAX_RUN


core_texts = core.designs().map(_small).map(core.to_toml).filter(_fits)
expressive_texts = expressive.designs().map(
    lambda d: {**d, "items": min(d["items"], 2)}).map(expressive.to_toml).filter(_fits)

SEEN = {"core": [], "expressive": []}


@pytest.mark.slow  # pytest -m slow; CI runs it (.ci/run)
@settings(max_examples=250, **SETTINGS)
@given(core_texts)
def test_bmc_agrees_with_explicit_on_generated_specs(text):
    e, b = agree(load_spec_text(text, "generated.toml"))
    SEEN["core"].append((e.kind, e.depth) if e.verdict == "violation" else (e.verdict, e.max_depth))


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
@settings(max_examples=100, **SETTINGS)
@given(expressive_texts)
def test_bmc_agrees_with_explicit_on_expressive_specs(text):
    e, b = agree(load_spec_text(text, "generated.toml"))
    SEEN["expressive"].append((e.kind, e.depth) if e.verdict == "violation" else (e.verdict, e.max_depth))


def test_the_agreement_tests_were_not_vacuous():
    """The two tests above compared ok specs and several violation kinds, shallow and deep (it
    reads what they saw, running them first when it runs alone; `pytest -s` prints it)."""
    if len(SEEN["core"]) + len(SEEN["expressive"]) < 50:  # run alone: run them here
        test_bmc_agrees_with_explicit_on_generated_specs()
        test_bmc_agrees_with_explicit_on_expressive_specs()
    seen = SEEN["core"] + SEEN["expressive"]
    print({name: {k: got.count(k) for k in sorted(set(got), key=str)} for name, got in SEEN.items()})
    ok = [depth for verdict, depth in seen if verdict == "ok"]
    assert len(ok) >= 5 and max(ok) >= 12, seen
    assert len({kind for kind, _ in seen} - {"ok", "inconclusive"}) >= 4, seen
    assert max(depth for kind, depth in seen if kind not in ("ok", "inconclusive")) >= 12, seen


# ------------------------------------------------------------------------ examples

SHORT_EXAMPLES = sorted(n for n, d in PINNED_TRACE_LENGTH.items() if d <= SHORT)
OK_EXAMPLES = [p.name for p in EXAMPLE_PATHS if load_spec(p).expect == "ok"]


@functools.cache
def example(name: str):
    return load_spec(EXAMPLES_DIR / name)


@pytest.mark.parametrize("name", SHORT_EXAMPLES)
def test_short_examples_match_the_explicit_engine(name):
    spec = example(name)
    result = verify_bmc(spec, depth=PINNED_TRACE_LENGTH[name], timeout=120)
    assert result.verdict == "violation", (result.verdict, result.limit)
    assert result.depth == PINNED_TRACE_LENGTH[name]
    assert set(result.kinds) == set(expected_kinds(spec))
    assert result.kind == spec.expect
    core.check_result(spec, result)


@pytest.mark.parametrize("name", OK_EXAMPLES)
def test_correct_examples_raise_no_false_alarm(name):
    result = verify_bmc(example(name), depth=8, timeout=120)
    assert result.verdict in ("ok", "inconclusive"), (result.kinds, result.traces)
    if result.verdict == "inconclusive":
        assert result.limit.startswith("bmc depth 8; the longest run is ")


@pytest.mark.parametrize("name", ["mojo_pcp_amd.toml", "x_cutlass_pingpong.toml"])
def test_small_correct_examples_are_proved(name):
    """Every run of these is short enough for BMC to check them all: `ok`, as explicit says."""
    result = verify_bmc(example(name), timeout=120)
    assert (result.verdict, result.limit) == ("ok", "")
    assert result.max_depth == longest_run(example(name))


# ------------------------------------------------------------------------ verdicts and limits

def test_a_depth_below_the_minimal_one_is_inconclusive():
    spec = example("bug_lapped_observer.toml")  # phase_alias after 10 steps
    result = verify_bmc(spec, depth=9)
    assert (result.verdict, result.limit, result.kinds, result.traces) == \
        ("inconclusive", f"bmc depth 9; the longest run is {longest_run(spec)} steps, "
                         f"--depth {longest_run(spec)} checks every run", (), {})
    assert result.max_depth == 9
    assert verify_bmc(spec, depth=10).kinds == ("phase_alias",)


def test_ok_needs_a_complete_bound():
    """A correct spec is `ok` once no run can be longer, and only then."""
    spec = load_spec_text(standard_toml(stages=2, consumers=1, items=2), "std.toml")
    assert verify(spec).verdict == "ok"
    bound = longest_run(spec)
    assert verify_bmc(spec).verdict == "ok"                  # default depth: the whole run
    assert verify(spec, por=False).max_depth == bound        # BFS's last level is that deep
    assert verify_bmc(spec, depth=bound + 5).verdict == "ok"
    short = verify_bmc(spec, depth=bound - 1)                # every complete run is longer
    assert (short.verdict, short.limit) == ("inconclusive", f"bmc depth {bound - 1}; the longest "
                                            f"run is {bound} steps, --depth {bound} checks every run")


def test_timeout_is_inconclusive_with_a_reason():
    spec = example("x_cluster_item_mismatch_deadlock.toml")  # deadlock only after 44 steps
    result = verify_bmc(spec, timeout=0.5)
    assert result.verdict == "inconclusive"
    assert "timeout" in result.limit or "canceled" in result.limit, result.limit
    assert result.kinds == () and result.traces == {}


def test_every_kind_at_the_minimal_depth():
    spec = example("bug_every_lane_arrive_full.toml")
    result = verify_bmc(spec)
    assert result.kinds == ("read_before_fill", "phase_alias", "over_arrival")
    assert {k: len(t.steps) for k, t in result.traces.items()} == dict.fromkeys(result.kinds, 4)


def test_depth_zero_violation():
    result = verify_bmc(example("bug_amd_producer_phase0.toml"))
    assert (result.verdict, result.kinds, result.depth) == ("violation", ("deadlock",), 0)
    assert result.traces["deadlock"].steps == ()


# ------------------------------------------------------------------------ outputs

def test_bmc_traces_go_through_every_output():
    spec = example("x_async_release_before_wait.toml")
    result = verify_bmc(spec)
    explicit = verify(spec)
    assert (result.kinds, result.depth) == (explicit.kinds, explicit.depth)
    text = report.format_text(result)
    assert text.splitlines()[0].startswith(f"{spec.path}: overwrite_before_drain after 16 steps: ")
    doc = report.result_to_json(result)
    assert doc["verdict"] == "violation" and doc["violation"]["depth"] == 16
    assert doc["violation"]["trace"]["steps"][-1]["index"] == 16
    trace = result.traces["overwrite_before_drain"]
    assert len(to_itf(trace)["states"]) == 17
    assert to_chrome(trace)["traceEvents"]


# ------------------------------------------------------------------------ reductions and encodings

@pytest.mark.parametrize("por, symmetry", [(False, False), (True, False)])
@pytest.mark.parametrize("name", ["bug_named_barrier_missing_role.toml", "bug_stale_try_full.toml",
                                  "bug_amd_arrive_count_off_by_one.toml"])
def test_reductions_change_nothing(name, por, symmetry, monkeypatch):
    """Without the reductions (or with partial-order reduction of adjacent steps only), the
    same depth and kinds."""
    spec = example(name)
    monkeypatch.setattr(bmc, "POR", por)
    monkeypatch.setattr(bmc, "SYMMETRY", symmetry)
    plain = verify_bmc(spec, timeout=120)
    assert plain.depth == PINNED_TRACE_LENGTH[name]
    assert set(plain.kinds) == set(expected_kinds(spec))
    core.check_result(spec, plain)


@pytest.mark.parametrize("name", ["bug_expect_tx_too_few_bytes.toml", "bug_persistent_reset.toml",
                                  "bug_amd_arrive_count_off_by_one.toml"])
def test_unbounded_integers_agree_with_bit_vectors(name, monkeypatch):
    spec = example(name)
    monkeypatch.setattr(encode, "WIDTH", 0)
    ints = verify_bmc(spec, timeout=120)
    assert ints.depth == PINNED_TRACE_LENGTH[name]
    assert set(ints.kinds) == set(expected_kinds(spec))
    core.check_result(spec, ints)


def test_deterministic():
    """A fixed seed: the same answer and the same trace every run."""
    spec = example("bug_release_before_read.toml")
    a, b = verify_bmc(spec), verify_bmc(spec)
    assert (a.verdict, a.kinds, a.depth) == (b.verdict, b.kinds, b.depth)
    assert {k: t.to_json() for k, t in a.traces.items()} == {k: t.to_json() for k, t in b.traces.items()}


# ------------------------------------------------------------------------ command line

def _cli(*args):
    from click.testing import CliRunner

    from pipeproof.checker.cli.main import main
    return CliRunner().invoke(main, ["verify", "--no-precheck", *args])


def test_cli_engine_bmc_prints_the_explicit_engines_trace(tmp_path):
    path = str(EXAMPLES_DIR / "bug_release_before_read.toml")
    target = tmp_path / "t.itf.json"
    bmc_out = _cli("--engine", "bmc", "--json", "--trace", str(target), path)
    explicit_out = _cli("--json", path)
    assert (bmc_out.exit_code, explicit_out.exit_code) == (0, 0)  # the declared verdict: a self-test
    ours, theirs = json.loads(bmc_out.stdout), json.loads(explicit_out.stdout)
    assert (ours["engine"], theirs["engine"]) == ("bmc", "explicit")
    assert ours["violation"]["kind"] == theirs["violation"]["kind"] == "overwrite_before_drain"
    assert ours["violation"]["depth"] == theirs["violation"]["depth"]
    assert len(json.loads(target.read_text())["states"]) == ours["violation"]["depth"] + 1


def test_cli_bmc_verdict_lines_say_how_deep_it_looked():
    path = str(EXAMPLES_DIR / "x_cutlass_pingpong.toml")
    ok = _cli("--engine", "bmc", path)
    assert ok.exit_code == 0
    assert ok.output.splitlines()[0].startswith(
        f"{path}: ok (bmc: every run checked, none longer than {longest_run(example('x_cutlass_pingpong.toml'))} steps")
    short = _cli("--engine", "bmc", "--depth", "3", path)
    assert short.exit_code == 3
    n = longest_run(example("x_cutlass_pingpong.toml"))
    assert short.output.splitlines()[0] == \
        (f"{path}: inconclusive: bmc depth 3; the longest run is {n} steps, --depth {n} checks "
         f"every run (bmc: no violation within 3 steps)")


def test_cli_depth_and_max_states_belong_to_one_engine():
    path = str(EXAMPLES_DIR / "mojo_pcp_nvidia.toml")
    assert _cli("--depth", "4", path).exit_code == 2
    out = _cli("--engine", "bmc", "--max-states", "9", path)
    assert out.exit_code == 2 and "--max-states applies only to --engine explicit" in out.output
    assert _cli("--engine", "z3", path).exit_code == 2


AMD_RESET_EVERY_2 = """
[pipeline]
producer_arrive_count = 1
consumer_arrive_count = 1
backend = "amd"
stages = 2
items = 3

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance", "reset every=2"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance", "reset"]
"""


def test_bmc_on_counters_with_a_reset_records_a_plain_number_phase():
    """Soundness harness spec 2240 of seed 20261201 (bug_persistent_reset on the amd backend,
    a reset every other item): the phase a passed wait records was a plain number there, and
    the encoder handed it to z3.simplify (an exception, not an answer)."""
    from pipeproof.spec.load import load_spec_text
    spec = load_spec_text(AMD_RESET_EVERY_2, "amd_reset.toml")
    explicit = verify(spec, por=False, symmetry=False)
    got = verify_bmc(spec, depth=explicit.depth, timeout=120)
    assert (explicit.verdict, got.verdict) == ("violation", "violation")
    assert set(got.kinds) <= set(explicit.kinds) and got.kinds
