"""Fix suggestions (checker/fix/suggest.py): the smallest verified change that makes a buggy spec safe.

- For the buggy examples with a small fix, the suggestion is pinned, its diff applies to the
  spec file's text and gives exactly `patched_text`, and that text, loaded again through
  `load_spec_text`, verifies `ok` with the explicit engine.
- Buggy examples that no change of one or two integer parameters can fix give found=False
  with a message naming what was tried; a spent budget or candidate limit says so.
- `prove` (checker/engines/prover.py) confirms a fix where it exists: tested with it absent, with stand-ins
  that prove, refute and fail, and with the real one on small specs.
- Every candidate the search can make is written into the TOML text so that the text loads as
  exactly the candidate spec (keys replaced or inserted, [[role]] tables added for template roles).

Most tests stub `prove` out (the explicit engine alone) to keep the file fast.
"""
from __future__ import annotations

import re
import sys
import types

import pytest

from pipeproof.checker.fix import suggest as F
from pipeproof.checker.fix.suggest import Change, FixSuggestion, format_fix, suggest_fix
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests.paths import EXAMPLE_NAMES, EXAMPLE_PATHS, EXAMPLES_DIR

BUDGET = 60.0


def example(name: str):
    path = EXAMPLES_DIR / name
    return load_spec(str(path)), path.read_text(encoding="utf-8")


def apply_unified_diff(text: str, diff: str) -> str:
    """Apply a unified diff to `text`, checking every context and removed line (a small,
    independent reader of the format, like `patch` with no fuzz)."""
    old = text.splitlines(keepends=True)
    lines = diff.splitlines(keepends=True)
    assert lines[0].startswith("--- ") and lines[1].startswith("+++ "), diff
    out, pos, i = [], 0, 2
    while i < len(lines):
        m = re.match(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@", lines[i])
        assert m, f"bad hunk header {lines[i]!r}"
        start, count = int(m.group(1)) - 1, int(m.group(2))
        assert start >= pos, "hunks out of order"
        out += old[pos:start]
        pos = start
        i += 1
        while i < len(lines) and not lines[i].startswith("@@"):
            tag, body = lines[i][0], lines[i][1:]
            if i + 1 < len(lines) and lines[i + 1].startswith("\\ No newline"):
                body = body.rstrip("\n")
                i += 1
            if tag in " -":
                assert old[pos] == body, f"line {pos + 1}: {old[pos]!r} != {body!r}"
                pos += 1
                if tag == " ":
                    out.append(body)
            else:
                assert tag == "+", f"bad diff line {lines[i]!r}"
                out.append(body)
            i += 1
        assert pos - start == count, "hunk length"
    return "".join(out + old[pos:])


@pytest.fixture
def no_prove(monkeypatch):
    """The explicit engine alone (as if checker/engines/prover.py did not exist)."""
    monkeypatch.setitem(sys.modules, "pipeproof.checker.engines.prover", None)  # import raises ImportError


def fake_prove(monkeypatch, fn):
    module = types.ModuleType("pipeproof.checker.engines.prover")
    module.prove = fn
    monkeypatch.setitem(sys.modules, "pipeproof.checker.engines.prover", module)


def check_suggestion(s: FixSuggestion, spec, text: str) -> None:
    """Found, verified by the explicit engine, and the diff is the patched text."""
    assert s.found, s.message
    assert s.changes and all(isinstance(c, Change) for c in s.changes)
    assert s.verified.startswith("explicit engine: ok, ")
    assert apply_unified_diff(text, s.diff) == s.patched_text
    patched = load_spec_text(s.patched_text, spec.path)
    assert verify(patched).verdict == "ok"
    for c in s.changes:
        assert c.location in s.message


# example -> the fix it gets (the changes, in order)
PINNED = {
    "bug_consumer_count_too_few.toml": [("pipeline.consumer_arrive_count", 1, 2)],
    "bug_consumer_count_too_many.toml": [("pipeline.consumer_arrive_count", 3, 2)],
    "bug_amd_arrive_count_off_by_one.toml": [("pipeline.producer_arrive_count", 2, 1)],
    "bug_producer_phase0_nvidia.toml": [("role.producer.initial_phase", 0, 1)],
    "bug_amd_producer_phase0.toml": [("role.producer.initial_phase", 0, 1)],
    "bug_consumer_phase1_nvidia.toml": [("role.consumer.initial_phase", 1, 0)],
    "bug_expect_tx_too_few_bytes.toml": [
        ("role.producer.body[1]", "expect_tx 8192 @leader", "expect_tx 16384 @leader")],
    "bug_expect_tx_too_many_bytes.toml": [
        ("role.producer.body[1]", "expect_tx 16384", "expect_tx 8192")],
    "bug_expect_tx_over_limit.toml": [("pipeline.tile_bytes", 524288, 262144)],
    "bug_named_barrier_missing_role.toml": [("barrier.wg.count", None, 2)],
    "x_cluster_item_mismatch_deadlock.toml": [("role.worker1.items", 4, 3)],
    # In the model the lanes are independent agents: with `arrive_full @leader` the other
    # lanes still wait on empty without being counted (a lapped observer), so the fix the
    # engine verifies is every lane arriving: a count of 4.
    "bug_every_lane_arrive_full.toml": [("pipeline.producer_arrive_count", 1, 4)],
    "bug_every_lane_expect_tx.toml": [
        ("pipeline.producer_arrive_count", 1, 4),
        ("role.producer.body[1]", "expect_tx 4096", "expect_tx 1024")],
}

# The diff line that must appear for a few of them (template specs get the key inserted).
DIFF_LINES = {
    "bug_consumer_count_too_few.toml": ["-consumer_arrive_count = 1", "+consumer_arrive_count = 2"],
    "bug_producer_phase0_nvidia.toml": ["-initial_phase = 0", "+initial_phase = 1"],
    "bug_named_barrier_missing_role.toml": [" [barrier.wg]", "+count = 2"],
    "bug_expect_tx_over_limit.toml": ["-tile_bytes = 524288", "+tile_bytes = 262144"],
}

# Buggy examples that no change of one or two integer parameters fixes (their bug is an op
# out of order, a missing op or a missing arrival).
NO_SMALL_FIX = [
    "bug_release_before_read.toml", "bug_lapped_observer.toml", "bug_persistent_reset.toml",
    "bug_arrive_before_expect_bytes.toml",   # the arrival before the bytes: ops out of order
    "bug_stale_try_full.toml", "bug_input_tile_cluster2_no_drain.toml",
    "x_async_release_before_wait.toml",
    # nested loops: op order on a tile-level ring; the fix search keeps to counts, phases and
    # stages there (checker/fix/order.py), none of which fixes it
    "x_fa3_persistent_q_released_early.toml", "x_tcgen05_gemm_acc_freed_early.toml",
    # an arrive where a commit belongs (write_async): an op, not a count
    "x_tcgen05_gemm_acc_arrive_not_commit.toml", "x_tcgen05_2sm_arrive_not_commit.toml",
    "x_named_arrive_mix_bug.toml", "x_fa3_q_released_early.toml",
    "bug_prologue_tile_released_early.toml",
]


def test_every_buggy_example_is_classified():
    """Each example that expects a violation is pinned above, or known to have no small fix
    (the last three are left out of the fast tests: their search takes seconds each)."""
    buggy = [p.name for p in EXAMPLE_PATHS if load_spec(str(p)).expect != "ok"]
    slow_no_fix = {"bug_cutlass_no_producer_tail.toml", "x_persistent_reset_bad.toml",
                   "x_rings_acquire_order_deadlock.toml"}
    assert sorted(set(PINNED) | set(NO_SMALL_FIX) | slow_no_fix) == buggy


@pytest.mark.parametrize("name", sorted(PINNED))
def test_pinned_fix(name, no_prove):
    spec, text = example(name)
    s = suggest_fix(spec, budget_s=BUDGET)
    check_suggestion(s, spec, text)
    assert [tuple(c) for c in s.changes] == PINNED[name]
    assert "prove" not in s.verified
    diff_lines = s.diff.splitlines()
    for line in DIFF_LINES.get(name, []):
        assert line in diff_lines, s.diff


@pytest.mark.parametrize("name", NO_SMALL_FIX)
def test_no_small_fix(name, no_prove):
    spec, _ = example(name)
    s = suggest_fix(spec, budget_s=BUDGET)
    assert not s.found
    assert s.changes == () and s.diff == "" and s.verified == "" and s.patched_text == ""
    assert s.message.startswith(f"no small fix found for the {verify(spec).kind} in ")
    assert "single changes of arrive counts" in s.message and "then pairs" in s.message
    assert s.tried > 10
    assert format_fix(s) == f"no fix suggested: {s.message}\n"


def test_deterministic(no_prove):
    spec, _ = example("bug_every_lane_expect_tx.toml")
    a, b = suggest_fix(spec), suggest_fix(spec)
    assert a == b
    spec, _ = example("bug_lapped_observer.toml")
    assert suggest_fix(spec) == suggest_fix(spec)


def test_result_is_used_and_ok_spec_has_nothing_to_fix(no_prove):
    spec, _ = example("mojo_pcp_nvidia.toml")
    s = suggest_fix(spec)
    assert not s.found and s.message == "nothing to fix: the spec verifies ok"
    spec, _ = example("bug_consumer_count_too_few.toml")
    s = suggest_fix(spec, verify(spec))
    assert [tuple(c) for c in s.changes] == PINNED["bug_consumer_count_too_few.toml"]
    inconclusive = verify(spec, max_states=5)
    assert inconclusive.verdict == "inconclusive"
    s = suggest_fix(spec, inconclusive)
    assert not s.found and "inconclusive" in s.message


def test_budget_and_candidate_limit_are_reported(no_prove):
    spec, _ = example("bug_expect_tx_too_many_bytes.toml")  # its first candidate fails
    s = suggest_fix(spec, verify(spec), budget_s=0.0)
    assert not s.found and "time budget (0 s) ran out" in s.message and s.tried == 0
    s = suggest_fix(spec, max_candidates=1)
    assert not s.found and "limit of 1 candidates" in s.message and s.tried == 1


def test_spec_without_a_file_still_gets_a_verified_fix(no_prove):
    _, text = example("bug_producer_phase0_nvidia.toml")
    spec = load_spec_text(text, "<memory>")
    s = suggest_fix(spec)
    assert s.found and s.diff == "" and s.patched_text == ""
    assert [tuple(c) for c in s.changes] == PINNED["bug_producer_phase0_nvidia.toml"]
    # text given explicitly: diffed against it
    s = suggest_fix(spec, text=text)
    check_suggestion(s, spec, text)
    assert s.diff.startswith("--- a/<memory>\n+++ b/<memory>\n")


def test_text_that_is_not_the_spec_is_not_diffed(no_prove):
    from dataclasses import replace
    spec, text = example("mojo_pcp_nvidia.toml")
    broken = replace(spec, consumer_arrive_count=3)  # the file on disk means 2 (2 consumers)
    s = suggest_fix(broken)
    assert s.found and s.diff == "" and s.patched_text == ""
    assert [tuple(c) for c in s.changes] == [("pipeline.consumer_arrive_count", 3, 2)]


def test_hand_written_spec_edits_keep_the_file(no_prove, tmp_path):
    """An op inside a multi-line body array is replaced in place; nothing else moves."""
    text = """# comment stays
[pipeline]
backend = "nvidia"   # nvidia
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 3

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty",
        'expect_tx 4096',   # announce
        "copy 2048", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
"""
    path = tmp_path / "tx.toml"
    path.write_text(text)
    spec = load_spec(str(path))
    s = suggest_fix(spec)
    check_suggestion(s, spec, text)
    assert [tuple(c) for c in s.changes] == [
        ("role.producer.body[1]", "expect_tx 4096", "expect_tx 2048")]
    assert "-        'expect_tx 4096',   # announce\n" in s.diff
    assert "+        'expect_tx 2048',   # announce\n" in s.diff
    assert s.patched_text == text.replace("'expect_tx 4096'", "'expect_tx 2048'")


def test_format_fix(no_prove):
    spec, _ = example("bug_consumer_count_too_few.toml")
    s = suggest_fix(spec)
    out = format_fix(s)
    assert out.startswith("suggested fix (1 change):\n  pipeline.consumer_arrive_count: 1 -> 2\n")
    assert s.diff in out and out.endswith(f"verified: {s.verified}\n")
    spec, _ = example("bug_named_barrier_missing_role.toml")
    assert "barrier.wg.count: unset -> 2" in format_fix(suggest_fix(spec))


# ------------------------------------------------------------------ prove, both ways


def test_prove_stand_in_proves(monkeypatch):
    calls = []

    def prove(spec, timeout=None):
        calls.append(spec)
        return types.SimpleNamespace(status="proved", reason="")
    fake_prove(monkeypatch, prove)
    spec, text = example("bug_consumer_count_too_few.toml")
    s = suggest_fix(spec)
    check_suggestion(s, spec, text)
    states = verify(load_spec_text(s.patched_text, spec.path)).states
    assert s.verified == f"explicit engine: ok, {states} states; prove: proved for every item count"
    assert len(calls) == 1 and calls[0].consumer_arrive_count == 2


def test_prove_stand_in_refutes_so_the_search_goes_on(monkeypatch):
    def prove(spec, timeout=None):
        status = "violated" if spec.consumer_arrive_count == 2 else "unknown"
        return types.SimpleNamespace(status=status, reason="abstraction too large", items=7)
    fake_prove(monkeypatch, prove)
    spec, text = example("bug_consumer_count_too_few.toml")
    s = suggest_fix(spec)
    if s.found:  # some other change; never the refuted one
        check_suggestion(s, spec, text)
        assert ("pipeline.consumer_arrive_count", 1, 2) not in [tuple(c) for c in s.changes]
        assert s.verified.endswith("; prove: unknown (abstraction too large)")
    else:
        assert "prove refuted" in s.message and "items = 7" in s.message


def test_prove_stand_in_that_fails_leaves_the_explicit_verdict(monkeypatch):
    def prove(spec, timeout=None):
        raise NotImplementedError("no lap abstraction for this spec")
    fake_prove(monkeypatch, prove)
    spec, text = example("bug_producer_phase0_nvidia.toml")
    s = suggest_fix(spec)
    check_suggestion(s, spec, text)
    assert s.verified.endswith("; prove: not applicable (NotImplementedError: no lap "
                               "abstraction for this spec)")


@pytest.mark.parametrize("name", ["bug_amd_producer_phase0.toml",
                                  "bug_consumer_phase1_nvidia.toml"])
def test_real_prove_confirms(name):
    pytest.importorskip("pipeproof.checker.engines.prover")
    spec, text = example(name)
    s = suggest_fix(spec)
    check_suggestion(s, spec, text)
    assert s.verified.endswith("; prove: proved for every item count")


# ------------------------------------------------------------------ the TOML writer


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_every_candidate_is_written_as_exactly_that_spec(name):
    """Each single change the search can make, written into the file's text, loads as exactly
    the changed spec, and its diff applies."""
    spec, text = example(name)
    result = types.SimpleNamespace(kind="deadlock", traces={})
    for edit in F._candidates(spec, result):
        if edit.text_only:
            continue
        candidate = F._apply_spec(spec, (edit,))
        patched = F._apply_text(text, spec, candidate, (edit,))
        assert load_spec_text(patched, spec.path) == candidate, edit.location
        assert apply_unified_diff(text, F.unified_diff(text, patched, spec.path)) == patched
