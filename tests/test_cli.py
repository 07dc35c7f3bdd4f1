"""The command line contract (docs/model.md "Command line"), run in a subprocess.

`python -m checker.cli.main` is the same entry point as the `pipeproof` console script
(`checker.cli.main:run`), and works in any virtual environment the package is installed in.
Standard error is a pipe here, so it is never a terminal.
"""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess

import itf_py
import pytest

from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec
from tests.paths import CLI
from tests.specs import PRODUCER_COPIES, standard_toml

OK_SPEC = standard_toml(items=3)
OK_STATES = 5  # pinned: exhaustive state count of OK_SPEC (partial-order reduced; 73 without)

# The consumer never releases a slot: the producer blocks on its third item.
DEADLOCK_SPEC = """
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 3

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
epilogue = ["drain"]

[[role]]
name = "consumer"
side = "consumer"
count = 1
items = 3
body = ["wait_full", "read", "advance"]
"""

def ring_spec(stages, consumers, items):
    return standard_toml(stages, consumers, items, producer_body=PRODUCER_COPIES)


# A larger ok state space: over a thousand states even with partial-order reduction. Two
# copies of different sizes per stage, so their landings are not taken at once (they commute
# only with one byte count) and land in either order.
BIG_SPEC = standard_toml(3, 3, 120, producer_body=["wait_empty", "expect_tx 3", "copy 1",
                                                   "copy 2", "advance"])
# Hundreds of thousands of states without partial-order reduction: runs for seconds, long
# enough for progress reports.
SLOW_SPEC = ring_spec(stages=4, consumers=4, items=4)
# Runs several seconds without symmetry, so progress (printed once a second) shows on any machine.
SLOWER_SPEC = ring_spec(stages=4, consumers=5, items=4)

BAD_SPEC = """
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 3

[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "arrive_ful"]
"""

SECONDS = re.compile(r"\d+\.\d+ s\b")


def cli(*args, cwd):
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return name


def lines(text):
    """Non-empty lines."""
    return [line for line in text.splitlines() if line.strip()]


def assert_no_traceback(proc):
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


# ------------------------------------------------------------------------------- exit codes

def test_ok_spec_exits_0(tmp_path):
    name = write(tmp_path, "ok.toml", OK_SPEC)
    p = cli("verify", name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # the verdict goes to stdout, where a shell redirects it
    first = lines(p.stdout)[0]
    assert re.fullmatch(rf"ok\.toml: ok \({OK_STATES} states, \d+ transitions, "
                        rf"\d+\.\d\d s search, \d+\.\d\d s wall\)", first)


def test_violation_exits_1_with_compiler_style_first_line(tmp_path):
    name = write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", name, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert_no_traceback(p)
    expected = verify(load_spec(tmp_path / name))
    assert expected.kinds == ("deadlock",)
    reason = expected.traces["deadlock"].reason
    first = lines(p.stdout)[0]
    assert first == f"dead.toml: deadlock after {expected.depth} steps: {reason}"
    assert re.fullmatch(r"dead\.toml: deadlock after \d+ steps: .+", first)
    # The counterexample table follows the verdict line.
    assert any(line.split()[:2] == ["step", "agent"] for line in lines(p.stdout)[1:])


@pytest.mark.parametrize("text,where", [
    (BAD_SPEC, "arrive_ful"),
    ("[pipeline]\nbackend = \n", "TOML syntax error"),
    ("[pipeline]\nbackend = \"nvidia\"\nstages = 0\nitems = 1\n", "stages"),
    ("", "empty file"),
    (OK_SPEC.replace('side = "consumer"', 'side = "reader"'), "side"),
])
def test_bad_spec_exits_2_with_one_line(tmp_path, text, where):
    name = write(tmp_path, "broken.toml", text)
    p = cli("verify", name, cwd=tmp_path)
    assert p.returncode == 2
    assert_no_traceback(p)
    assert p.stdout == ""
    err = lines(p.stderr)
    assert len(err) == 1, p.stderr
    assert err[0].startswith("broken.toml")
    assert where in err[0]


def test_missing_file_exits_2(tmp_path):
    p = cli("verify", "nowhere.toml", cwd=tmp_path)
    assert p.returncode == 2
    assert_no_traceback(p)
    err = lines(p.stderr)
    assert len(err) == 1 and err[0].startswith("nowhere.toml: ")


@pytest.mark.parametrize("args", [
    ["verify", "--bogus", "ok.toml"],
    ["verify"],
    ["verify", "--max-states", "0", "ok.toml"],
    ["verify", "--max-states", "many", "ok.toml"],
    ["verify", "--timeout", "-1", "ok.toml"],
    ["verify", "--timeout", "0", "ok.toml"],
    ["verifyy", "ok.toml"],
    [],
])
def test_bad_usage_exits_2(tmp_path, args):
    write(tmp_path, "ok.toml", OK_SPEC)
    p = cli(*args, cwd=tmp_path)
    assert p.returncode == 2, (args, p.returncode, p.stderr)
    assert_no_traceback(p)
    assert "ok (" not in p.stderr + p.stdout  # nothing was verified


def test_max_states_limit_exits_3(tmp_path):
    name = write(tmp_path, "big.toml", BIG_SPEC)
    p = cli("verify", "--max-states", 5, "--no-por", name, cwd=tmp_path)  # (2 states reduced)
    assert p.returncode == 3, p.stderr
    first = lines(p.stdout)[0]
    assert first.startswith("big.toml: inconclusive: max-states 5 (")


def test_tiny_timeout_exits_3(tmp_path):
    name = write(tmp_path, "big.toml", BIG_SPEC)
    p = cli("verify", "--timeout", "0.000001", name, cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    assert lines(p.stdout)[0].startswith("big.toml: inconclusive: timeout")


def test_big_spec_is_ok_without_limits(tmp_path):
    """The limit tests above are only meaningful if the spec itself holds."""
    name = write(tmp_path, "big.toml", BIG_SPEC)
    p = cli("verify", name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    # big unreduced (the partial-order reduction merges its landings and reads since issue 35)
    p = cli("verify", "--no-por", name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    states = int(re.search(r"ok \((\d+) states", p.stdout).group(1))
    assert states > 1000


def test_max_states_at_the_exact_state_count_is_ok(tmp_path):
    """A state space that fits the limit exactly is explored completely: ok, not
    inconclusive."""
    name = write(tmp_path, "ok.toml", OK_SPEC)
    p = cli("verify", "--max-states", OK_STATES, name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = cli("verify", "--max-states", OK_STATES - 1, name, cwd=tmp_path)
    assert p.returncode == 3, p.stderr


def test_max_states_above_the_state_count_is_ok(tmp_path):
    name = write(tmp_path, "ok.toml", OK_SPEC)
    p = cli("verify", "--max-states", OK_STATES + 1, name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr


# ------------------------------------------------------------------------- several specs

@pytest.mark.parametrize("names,code", [
    (["ok.toml", "ok2.toml"], 0),
    (["ok.toml", "dead.toml"], 1),
    (["dead.toml", "ok.toml"], 1),
    (["ok.toml", "broken.toml"], 2),
    (["broken.toml", "dead.toml"], 2),
    (["dead.toml", "missing.toml", "ok.toml"], 2),
])
def test_several_specs_one_verdict_each_worst_code(tmp_path, names, code):
    write(tmp_path, "ok.toml", OK_SPEC)
    write(tmp_path, "ok2.toml", OK_SPEC)
    write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    write(tmp_path, "broken.toml", BAD_SPEC)
    p = cli("verify", *names, cwd=tmp_path)
    assert p.returncode == code, p.stderr
    assert_no_traceback(p)
    def shown(text):  # the spec each line is about, in the order printed
        return [line.split(":")[0] for line in lines(text)
                if any(line.startswith(n + ":") for n in names)]
    out, err = shown(p.stdout), shown(p.stderr)  # verdicts on stdout, load errors on stderr
    assert sorted(out + err, key=names.index) == names
    assert out == sorted(out, key=names.index) and err == sorted(err, key=names.index)


def test_several_specs_inconclusive_and_violation(tmp_path):
    """Violation (1) is worse than inconclusive (3); inconclusive is worse than ok (0)."""
    write(tmp_path, "big.toml", BIG_SPEC)
    write(tmp_path, "ok.toml", OK_SPEC)
    write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--no-por", "--max-states", 500, "ok.toml", "big.toml", cwd=tmp_path)
    assert p.returncode == 3, p.stderr
    p = cli("verify", "--no-por", "--max-states", 500, "big.toml", "dead.toml", cwd=tmp_path)
    assert p.returncode == 1, p.stderr


# ------------------------------------------------------------------------------------ json

def test_json_violation_document(tmp_path):
    name = write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--json", name, cwd=tmp_path)
    assert p.returncode == 1
    doc = json.loads(p.stdout)  # exactly one document
    assert doc["verdict"] == "violation"
    v = doc["violation"]
    assert v["kind"] == "deadlock" and v["kinds"] == ["deadlock"]
    expected = verify(load_spec(tmp_path / name))
    assert v["depth"] == expected.depth
    assert len(v["trace"]["steps"]) == expected.depth
    assert [s["action"] for s in v["trace"]["steps"]] == \
        [s.action for s in expected.traces["deadlock"].steps]
    assert doc["states"] == expected.states and doc["transitions"] == expected.transitions
    assert isinstance(doc["seconds"], (int, float)) and doc["seconds"] >= 0
    assert doc["results"][0]["verdict"] == "violation"


def test_json_ok_document(tmp_path):
    name = write(tmp_path, "ok.toml", OK_SPEC)
    p = cli("verify", "--json", name, cwd=tmp_path)
    assert p.returncode == 0
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "ok"
    assert doc["violation"] is None
    assert doc["states"] == OK_STATES
    assert doc["transitions"] > 0
    assert "seconds" in doc


def test_json_several_specs(tmp_path):
    write(tmp_path, "ok.toml", OK_SPEC)
    write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--json", "ok.toml", "dead.toml", cwd=tmp_path)
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert [r["verdict"] for r in doc["results"]] == ["ok", "violation"]
    assert [r["spec"] for r in doc["results"]] == ["ok.toml", "dead.toml"]
    assert doc["results"][1]["violation"]["kind"] == "deadlock"


def test_json_inconclusive_document(tmp_path):
    name = write(tmp_path, "big.toml", BIG_SPEC)
    p = cli("verify", "--json", "--max-states", 5, "--no-por", name, cwd=tmp_path)
    assert p.returncode == 3
    doc = json.loads(p.stdout)
    assert doc["verdict"] == "inconclusive" and doc["violation"] is None


# ---------------------------------------------------------------------------------- traces

def test_trace_itf(tmp_path):
    name = write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--trace", "cx.itf.json", name, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    raw = json.loads((tmp_path / "cx.itf.json").read_text())
    decoded = itf_py.trace_from_json(raw)
    depth = verify(load_spec(tmp_path / name)).depth
    assert len(decoded.states) == depth + 1
    assert raw["#meta"]["violation"] == "deadlock"
    assert [s.meta["index"] for s in decoded.states] == list(range(depth + 1))


def test_trace_chrome(tmp_path):
    name = write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--trace", "cx.trace.json", name, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    doc = json.loads((tmp_path / "cx.trace.json").read_text())
    events = doc["traceEvents"]
    assert isinstance(events, list) and events
    for e in events:
        assert {"ph", "pid", "tid", "ts", "name"} <= set(e)
    depth = verify(load_spec(tmp_path / name)).depth
    steps = [e for e in events if e["ph"] == "X" and e.get("cat") == "step"]
    assert len(steps) == depth
    assert any(e["ph"] == "i" and e["name"] == "deadlock" for e in events)


def test_trace_bad_suffix_is_usage_error(tmp_path):
    name = write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    p = cli("verify", "--trace", "x.txt", name, cwd=tmp_path)
    assert p.returncode == 2
    assert_no_traceback(p)
    assert not (tmp_path / "x.txt").exists()


def test_trace_not_written_for_ok(tmp_path):
    name = write(tmp_path, "ok.toml", OK_SPEC)
    p = cli("verify", "--trace", "cx.itf.json", name, cwd=tmp_path)
    assert p.returncode == 0
    assert not (tmp_path / "cx.itf.json").exists()
    assert "ok.toml: ok: no counterexample, nothing written to cx.itf.json" in p.stdout


# ----------------------------------------------------------------------- output hygiene

def test_no_progress_when_stderr_is_not_a_terminal(tmp_path):
    name = write(tmp_path, "slow.toml", SLOW_SPEC)
    p = cli("verify", "--no-por", name, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "\r" not in p.stderr and "\033" not in p.stderr
    assert "states/s" not in p.stderr and p.stderr == ""
    assert len(lines(p.stdout)) == 2  # verdict line and summary line, nothing else


@pytest.mark.slow  # pytest -m slow; CI runs it (.ci/run)
@pytest.mark.clock  # timed against the wall clock: CI runs it serially
def test_progress_when_stderr_is_a_terminal(tmp_path):
    """The contrast to the test above: a run on a terminal reports progress."""
    name = write(tmp_path, "slow.toml", SLOWER_SPEC)
    master, slave = pty.openpty()
    proc = subprocess.Popen(CLI + ["verify", "--no-symmetry", "--no-por", name], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    err = b"".join(chunks).decode()
    assert "states/s" in err
    assert "slow.toml: ok (" in out.decode()  # the verdict on stdout, the progress on the terminal


def test_output_identical_on_two_runs(tmp_path):
    write(tmp_path, "ok.toml", OK_SPEC)
    write(tmp_path, "dead.toml", DEADLOCK_SPEC)
    runs = [cli("verify", "--json", "ok.toml", "dead.toml", cwd=tmp_path) for _ in range(2)]
    assert runs[0].returncode == runs[1].returncode == 1
    err = [SECONDS.sub("<t> s", r.stderr) for r in runs]
    assert err[0] == err[1] and "dead.toml: deadlock after" in err[0]  # --json: report on stderr
    docs = [json.loads(r.stdout) for r in runs]
    for d in docs:
        d.pop("seconds", None)
        for r in d["results"]:
            r.pop("seconds"), r.pop("wall_seconds")
    assert docs[0] == docs[1]


def test_a_search_past_the_memory_budget_stops_inconclusive(monkeypatch):
    """PIPEPROOF_MEMORY_GB (default: half the machine's memory) bounds every state store:
    past it verify says inconclusive (exit 3) and prove unknown, never ok, never killed."""
    from click.testing import CliRunner
    from pipeproof.checker.cli.main import main
    from tests.paths import EXAMPLES_DIR
    monkeypatch.setenv("PIPEPROOF_MEMORY_GB", "0.0001")
    spec = str(EXAMPLES_DIR / "cutlass_tma_async_cluster2.toml")
    out = CliRunner().invoke(main, ["verify", "--no-por", spec])
    assert out.exit_code == 3 and "memory budget" in out.output
    small = str(EXAMPLES_DIR / "sm90_ring_nvidia.toml")  # 13,660 abstract states unreduced
    proof = CliRunner().invoke(main, ["prove", "--no-por", "--no-cta-symmetry", small])
    assert proof.exit_code == 3 and "memory budget" in proof.output
    monkeypatch.setenv("PIPEPROOF_MEMORY_GB", "4")
    assert CliRunner().invoke(main, ["verify", spec]).exit_code == 0
