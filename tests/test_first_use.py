"""Issue 15, what a new user meets first: output a shell can use, `expect` as a check, and an
honest answer for every input (the command in a subprocess, as a user runs it)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.paths import CLI, EXAMPLE_PATHS, ROOT
from tests.specs import PRODUCER_COPIES, standard_toml

OK = standard_toml(items=3)
DEAD_DECLARED_OK = OK.replace("consumer_arrive_count = 1", "consumer_arrive_count = 2").replace(
    "items = 3\n", 'items = 3\nexpect = "ok"\n', 1)


def cli(*args, cwd, env=None, timeout=600):
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return name


def test_verdict_on_stdout_json_alone_on_stdout(tmp_path):
    write(tmp_path, "ok.toml", OK)
    p = cli("verify", "ok.toml", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("ok.toml: ok (") and p.stderr == ""
    p = cli("verify", "--json", "ok.toml", cwd=tmp_path)
    assert json.loads(p.stdout)["verdict"] == "ok"  # stdout is the document and nothing else
    assert p.stderr.startswith("ok.toml: ok (")


def test_several_specs_end_with_a_summary_line_and_quiet_prints_verdicts_only(tmp_path):
    write(tmp_path, "ok.toml", OK)
    write(tmp_path, "dead.toml", OK.replace("consumer_arrive_count = 1", "consumer_arrive_count = 2"))
    p = cli("verify", "ok.toml", "dead.toml", cwd=tmp_path)
    assert p.returncode == 1
    assert p.stdout.splitlines()[-1] == "2 specs: 1 ok, 1 violation, 0 inconclusive"
    q = cli("verify", "-q", "ok.toml", "dead.toml", cwd=tmp_path)
    out = q.stdout.splitlines()
    assert q.returncode == 1 and len(out) == 3, q.stdout
    assert out[0].startswith("ok.toml: ok (") and out[1].startswith("dead.toml: deadlock after")
    assert out[2] == p.stdout.splitlines()[-1]


def test_a_verdict_other_than_the_declared_one_is_unexpected(tmp_path):
    write(tmp_path, "s.toml", DEAD_DECLARED_OK)
    p = cli("verify", "s.toml", cwd=tmp_path)
    assert p.returncode == 5, p.stdout + p.stderr
    assert "s.toml: UNEXPECTED: declared ok, got deadlock" in p.stdout
    doc = json.loads(cli("verify", "--json", "s.toml", cwd=tmp_path).stdout)
    assert (doc["expect"], doc["as_expected"], doc["violation"]["kind"]) == ("ok", False, "deadlock")
    write(tmp_path, "t.toml", DEAD_DECLARED_OK.replace('expect = "ok"', 'expect = "deadlock"'))
    p = cli("verify", "t.toml", cwd=tmp_path)
    assert p.returncode == 0 and "UNEXPECTED" not in p.stdout  # as declared: a passing self-test


def test_the_examples_are_a_self_test(tmp_path):
    examples = [str(p) for p in EXAMPLE_PATHS]
    p = cli("verify", "-q", *examples, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]  # violations, all as declared
    last = p.stdout.splitlines()[-1]
    assert last.startswith(f"{len(examples)} specs: ")
    assert f"(all {len(examples)} with a declared verdict as expected)" in last


@pytest.mark.parametrize("text,where", [
    ("[pipeline]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n", "nested too deeply"),
    ("[pipeline]\nstages = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deeply"),
    ("[pipeline]\nbackend = ", "broken.toml:2:11: TOML syntax error"),
])
def test_every_input_gets_one_line_and_exit_2(tmp_path, text, where):
    write(tmp_path, "broken.toml", text)
    p = cli("verify", "broken.toml", cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr + p.stdout
    err = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and where in err[0], p.stderr[-2000:]


def test_a_role_that_never_steps_is_warned_about(tmp_path):
    write(tmp_path, "s.toml", OK + '\n[[role]]\nname = "idle"\nside = "consumer"\ncount = 1\nbody = []\n')
    p = cli("verify", "s.toml", cwd=tmp_path)
    assert "s.toml: warning: role 'idle' never steps" in p.stderr


def test_bmc_inconclusive_names_the_exhaustive_depth(tmp_path):
    write(tmp_path, "ok.toml", OK)
    p = cli("verify", "--engine", "bmc", "--depth", 3, "ok.toml", cwd=tmp_path)
    assert p.returncode == 3
    line = p.stdout.splitlines()[0]
    depth = int(line.split("--depth ")[1].split()[0])
    assert depth > 3
    q = cli("verify", "--engine", "bmc", "--depth", depth, "ok.toml", cwd=tmp_path)
    assert q.returncode == 0, q.stdout


def _ctrl_c_as_in_a_terminal():
    """A job started in the background by a shell without job control (as CI may start this
    suite) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_cpu_seconds(pid, seconds, limit=300):
    """Until process `pid` has used `seconds` of CPU (Linux /proc), or `limit` wall seconds."""
    tick = os.sysconf("SC_CLK_TCK")
    started = time.monotonic()
    while time.monotonic() - started < limit:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / tick >= seconds:  # utime + stime
            return
        time.sleep(0.1)


def test_ctrl_c_prints_the_counts_so_far_and_exits_3(tmp_path):
    write(tmp_path, "slow.toml", standard_toml(4, 6, 32, producer_body=PRODUCER_COPIES))
    env = dict(os.environ, PIPEPROOF_JIT="0")  # plain Python: slow enough to be interrupted
    proc = subprocess.Popen(CLI + ["verify", "--no-precheck", "--no-por", "--no-symmetry", "slow.toml"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, preexec_fn=_ctrl_c_as_in_a_terminal)
    _wait_for_cpu_seconds(proc.pid, 3.0)  # past the imports and into the search, however loaded
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, out + err
    assert "Traceback" not in err
    first = out.splitlines()[0]
    assert first.startswith("slow.toml: inconclusive: interrupted (Ctrl-C) (")
    assert int(first.split("(Ctrl-C) (")[1].split()[0].replace(",", "")) > 0  # states explored


def test_phase_alias_on_another_ring_names_that_rings_phase(tmp_path):
    text = """
[pipeline]
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
items = 1
[ring.acc]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
[[role]]
name = "p"
side = "producer"
count = 1
body = ["arrive_full ring=acc", "arrive_full ring=acc"]
[[role]]
name = "c"
side = "consumer"
count = 1
initial_phase = { main = 0, acc = 1 }
body = ["wait_full ring=acc"]
"""
    write(tmp_path, "s.toml", text)
    p = cli("verify", "s.toml", cwd=tmp_path)
    assert p.returncode == 1
    first = p.stdout.splitlines()[0]
    # acc starts at phase 1: the waiter means signal phase -1, window -1..0, and sees 1
    assert "at phase 1 (meaning signal phase -1) but the signal is at phase 1, outside -1..0" in first
