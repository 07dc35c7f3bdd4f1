"""Issue 32, "the first hour": what a new user meets in the outputs, run as a user runs them.

The examples as a self-test (exit 0), the examples reachable after `pip install .`, the trace's
lap and parity columns, the wall time beside the search's, the reduced graph's depth said so,
the pre-check's sentence first, a byte-order mark, and what `sweep` does with `expect`.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from tests.paths import CLI, EXAMPLES_DIR, ROOT
from tests.specs import standard_toml

OK = standard_toml(items=3)
# One slot; the consumer reads a 4th item the producer never fills: it reads laps 0, 1, 2
# (parity 0, 1, 0), then waits on full[0] forever.
DEAD = standard_toml(stages=1, items=3).replace('name = "consumer"\n', 'name = "consumer"\nitems = 4\n')


def cli(*args, cwd, env=None, timeout=600):
    return subprocess.run(CLI + [str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def declare(text: str, verdict: str) -> str:
    return text.replace("items = 3\n", f'items = 3\nexpect = "{verdict}"\n', 1)


def write(tmp_path, **texts):
    for name, text in texts.items():
        (tmp_path / f"{name}.toml").write_text(text)


# ------------------------------------------------------------------ the self-test's exit

def test_every_verdict_as_declared_exits_0_and_an_undeclared_violation_exits_1(tmp_path):
    write(tmp_path, ok=declare(OK, "ok"), dead=declare(DEAD, "deadlock"), bare=DEAD,
          wrong=declare(DEAD, "ok"))
    p = cli("verify", "-q", "ok.toml", "dead.toml", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1].endswith("(all 2 with a declared verdict as expected)")
    assert cli("verify", "-q", "dead.toml", cwd=tmp_path).returncode == 0
    # one spec that declares nothing: the exit table as always (1 for a violation)
    p = cli("verify", "-q", "ok.toml", "dead.toml", "bare.toml", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert cli("verify", "-q", "bare.toml", cwd=tmp_path).returncode == 1
    # a verdict other than the declared one: 5, whatever else passed
    assert cli("verify", "-q", "dead.toml", "wrong.toml", cwd=tmp_path).returncode == 5
    # a spec that does not load: 2, not a passing self-test
    assert cli("verify", "-q", "dead.toml", "missing.toml", cwd=tmp_path).returncode == 2


def test_a_declared_spec_that_hits_a_limit_is_not_a_passing_self_test(tmp_path):
    write(tmp_path, big=declare(standard_toml(3, 3, 40), "ok"), dead=declare(DEAD, "deadlock"))
    p = cli("verify", "-q", "--max-states", 5, "--no-por", "big.toml", "dead.toml", cwd=tmp_path)
    assert p.returncode == 3, p.stdout + p.stderr


# ------------------------------------------------------------------ the trace and the numbers

def _table(out: str) -> tuple[list[str], list[list[str]]]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("step "))
    header = lines[start].split()
    rows = []
    for line in lines[start + 1:]:
        if not re.match(r"\s*\d+\s", line):
            break
        rows.append(line)
    return header, rows


def test_the_trace_shows_the_lap_and_the_parity_a_ptx_wait_reads(tmp_path):
    write(tmp_path, dead=DEAD)
    p = cli("verify", "--no-precheck", "dead.toml", cwd=tmp_path)
    header, rows = _table(p.stdout)
    assert header == ["step", "agent", "op", "stage", "lap", "parity", "changes"]
    header_line = next(line for line in p.stdout.splitlines() if line.startswith("step "))
    lap_at, parity_at = header_line.index(" lap ") + 1, header_line.index(" parity ") + 1
    seen = set()
    for row in rows:
        lap, parity = row[lap_at:].split()[0], row[parity_at:].split()[0]
        if lap != "-":
            assert int(parity) == int(lap) % 2, row
            seen.add(int(lap))
        else:
            assert parity == "-"
    assert 2 in seen, rows  # a lap whose parity is not the lap: the columns tell them apart
    doc = json.loads(cli("verify", "--json", "--no-precheck", "dead.toml", cwd=tmp_path).stdout)
    steps = doc["violation"]["trace"]["steps"]
    assert all(s["lap"] == s["phase"] for s in steps)  # the old key stays
    assert all(s["parity"] == (None if s["phase"] is None else s["phase"] % 2) for s in steps)
    assert any(s["lap"] == 2 and s["parity"] == 0 for s in steps)


def test_an_amd_trace_has_laps_and_no_parity(tmp_path):
    write(tmp_path, dead=DEAD.replace('"nvidia"', '"amd"'))
    p = cli("verify", "--no-precheck", "dead.toml", cwd=tmp_path)
    header, _ = _table(p.stdout)
    assert header == ["step", "agent", "op", "stage", "lap", "changes"], p.stdout
    doc = json.loads(cli("verify", "--json", "--no-precheck", "dead.toml", cwd=tmp_path).stdout)
    assert {s["parity"] for s in doc["violation"]["trace"]["steps"]} == {None}


def test_wall_time_beside_the_search_and_the_reduced_depth_said_so(tmp_path):
    write(tmp_path, ok=OK)
    started = time.monotonic()
    p = cli("verify", "ok.toml", cwd=tmp_path)
    elapsed = time.monotonic() - started
    first, *_, last = p.stdout.splitlines()
    m = re.fullmatch(r"ok\.toml: ok \(\d+ states, \d+ transitions, (\d+\.\d\d) s search, "
                     r"(\d+\.\d\d) s wall\)", first)
    assert m, first
    search, wall = map(float, m.groups())
    # wall time counts the process (Python's start, the imports, loading): more than the
    # search, and no more than the parent saw the command take
    assert search < wall <= elapsed + 0.05 and wall >= 0.1, (search, wall, elapsed)
    assert re.fullmatch(r"\d+ states, \d+ transitions, max depth \d+ \(of the reduced graph\), "
                        r"\d+\.\d\d s search, \d+\.\d\d s wall", last), last
    q = cli("verify", "--no-por", "ok.toml", cwd=tmp_path)
    assert re.search(r", max depth \d+, ", q.stdout.splitlines()[-1]), q.stdout
    doc = json.loads(cli("verify", "--json", "ok.toml", cwd=tmp_path).stdout)
    assert doc["wall_seconds"] > doc["seconds"] >= 0 and doc["results"][0]["wall_seconds"] > 0


def test_the_precheck_sentence_comes_right_after_the_verdict_line(tmp_path):
    p = cli("verify", EXAMPLES_DIR / "bug_consumer_count_too_many.toml", cwd=tmp_path)
    lines = p.stdout.splitlines()
    assert ": deadlock after " in lines[0]
    assert lines[1].startswith("pre-check: empty[s]: ") and "expects 3 arrivals" in lines[1]
    assert lines[2].startswith("step ")
    assert not any(line.startswith("pre-check") for line in lines[2:])


# ------------------------------------------------------------------ the byte-order mark

def test_a_spec_with_a_utf8_byte_order_mark_reads_as_without(tmp_path):
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + OK.encode())
    (tmp_path / "plain.toml").write_text(OK)
    from pipeproof.spec.load import load_spec
    bom, plain = load_spec(tmp_path / "bom.toml"), load_spec(tmp_path / "plain.toml")
    assert bom.roles == plain.roles and bom.stages == plain.stages
    p = cli("verify", "bom.toml", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("bom.toml: ok ("), p.stdout + p.stderr
    # an error after the mark still names the line and column a user's editor shows
    (tmp_path / "bad.toml").write_bytes(b"\xef\xbb\xbf[pipeline]\nbackend = \n")
    p = cli("verify", "bad.toml", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("bad.toml:2:11: TOML syntax error"), p.stderr


# ------------------------------------------------------------------ the examples after an install

def test_examples_lists_each_shipped_example_with_its_declared_verdict(tmp_path):
    from pipeproof.spec.load import load_spec
    p = cli("examples", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = [line.split()[:2] for line in p.stdout.splitlines()]
    files = sorted(EXAMPLES_DIR.glob("*.toml"))
    assert [name for name, _ in rows] == [f.name for f in files]
    for (name, verdict), f in zip(rows, files):
        spec = load_spec(f)
        assert verdict.split("|")[0] == spec.expect, name
    assert f"{len(files)} examples shipped with pipeproof" in p.stderr


def test_examples_copy_writes_them_out_and_never_overwrites(tmp_path):
    p = cli("examples", "--copy", "mine", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    copied = sorted(f.name for f in (tmp_path / "mine").glob("*.toml"))
    assert copied == sorted(f.name for f in EXAMPLES_DIR.glob("*.toml"))
    assert (tmp_path / "mine" / "mojo_pcp_nvidia.toml").read_bytes() == \
        (EXAMPLES_DIR / "mojo_pcp_nvidia.toml").read_bytes()
    assert cli("examples", "--copy", "mine", cwd=tmp_path).returncode == 0  # the same files again
    (tmp_path / "mine" / "mojo_pcp_nvidia.toml").write_text("# my edit\n")
    p = cli("examples", "--copy", "mine", cwd=tmp_path)
    assert p.returncode == 2 and "mojo_pcp_nvidia.toml: exists and differs" in p.stderr
    assert (tmp_path / "mine" / "mojo_pcp_nvidia.toml").read_text() == "# my edit\n"


def test_spec_examples_paths_read_the_shipped_copies_outside_a_clone(tmp_path):
    assert not (tmp_path / "spec").exists()
    p = cli("verify", "spec/examples/mojo_pcp_nvidia.toml", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.startswith("spec/examples/mojo_pcp_nvidia.toml: ok ("), \
        p.stdout + p.stderr
    assert p.stderr.count("reading the examples shipped with pipeproof") == 1, p.stderr
    # the README's self-test: a shell passes an unmatched glob on as written
    p = cli("verify", "-q", "spec/examples/bug_consumer_count_*.toml", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == ("2 specs: 0 ok, 2 violations, 0 inconclusive "
                                         "(all 2 with a declared verdict as expected)")
    p = cli("verify", "spec/examples/no_such_example.toml", cwd=tmp_path)
    assert p.returncode == 2 and "`pipeproof examples` lists them" in p.stderr
    # a folder of that name that exists is read as it is, never replaced by the shipped copy
    (tmp_path / "spec" / "examples").mkdir(parents=True)
    p = cli("verify", "spec/examples/mojo_pcp_nvidia.toml", cwd=tmp_path)
    assert p.returncode == 2 and "no such file" in p.stderr


def test_an_installed_package_finds_its_examples_from_any_directory(tmp_path):
    """The modules and package data that `pip install .` installs (setuptools' build_py from
    pyproject.toml, as the wheel's build runs it), imported from there in a folder with no
    spec/examples/: `pipeproof examples` lists them and `verify spec/examples/...` checks one."""
    src = tmp_path / "src"
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.ready")
    for name in ("spec", "backends", "checker", "cuda_ref"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    site = tmp_path / "site"
    build = subprocess.run([sys.executable, "-c", "import setuptools; setuptools.setup()", "-q",
                            "build_py", "--build-lib", str(site)], cwd=src, capture_output=True,
                           text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    away = tmp_path / "away"
    away.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIPEPROOF_", "PYTHONPATH"))}
    env.update(PYTHONPATH=str(site), PIPEPROOF_JIT="0")  # plain Python: no engine build here
    where = subprocess.run([sys.executable, "-c", "import pipeproof.spec.shipped as s; "
                            "print(s.shipped_dir())"], cwd=away, env=env, capture_output=True,
                           text=True, timeout=60)
    assert where.stdout.strip() == str(site / "pipeproof" / "spec" / "examples"), where
    listed = cli("examples", cwd=away, env=env)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines()]
    assert names == sorted(p.name for p in EXAMPLES_DIR.glob("*.toml"))
    p = cli("verify", "spec/examples/mojo_pcp_nvidia.toml", cwd=away, env=env)
    assert p.returncode == 0 and p.stdout.startswith("spec/examples/mojo_pcp_nvidia.toml: ok ("), \
        p.stdout + p.stderr
    assert str(site) in p.stderr  # the note names the installed copy it read


# ------------------------------------------------------------------ sweep and `expect`

def test_sweeping_a_spec_that_declares_ok_judges_the_points_not_the_declaration(tmp_path):
    p = cli("sweep", EXAMPLES_DIR / "mojo_pcp_nvidia.toml", "--set", "consumer_arrive_count=1,2",
            "--jobs", 1, "--no-cache", "--no-progress", cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr  # a violating point, nothing unexpected
    assert "UNEXPECTED" not in p.stdout + p.stderr
    assert "2 points: 1 ok, 1 violation" in p.stdout
    assert "expect" in cli("sweep", "--help", cwd=tmp_path).stdout  # the help says what it does


# ------------------------------------------------------------------ the README says what happens

README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_the_readme_set_up_is_one_install_one_check_one_test():
    setup = [line for line in _blocks("sh")[0].splitlines() if line.strip()]
    assert [line.split()[0] for line in setup] == ["pip", "pipeproof", "pytest"], setup


def test_the_readme_first_counterexample_is_what_verify_prints(tmp_path):
    (shown,) = [b for b in _blocks("text") if "Your first" in README.split(b)[0][-400:]]
    command, *lines = shown.splitlines()
    assert command.startswith("$ pipeproof verify ")
    p = cli(*command.split()[2:], cwd=ROOT)
    real = p.stdout.splitlines()
    numbers = re.compile(r"\d+\.\d\d s")
    for line in lines:
        line = numbers.sub("<t> s", line)
        prefix = line[:-3].rstrip() if line.endswith("...") else line
        assert any(numbers.sub("<t> s", r).startswith(prefix) for r in real), (line, real)


def _readme_triton_commands():
    block = next(b for b in _blocks("sh") if "pipeproof triton $K/" in b)
    folder = re.search(r"^K=(\S+)$", block, re.M).group(1)
    return [line.split("#")[0].replace("$K", folder).split()[2:]
            for line in block.splitlines() if line.startswith("pipeproof triton")]


def test_the_readme_triton_commands_run_and_are_ok(tmp_path):
    pytest.importorskip("triton", reason="pip install 'pipeproof[triton]'")
    commands = _readme_triton_commands()
    assert len(commands) >= 7
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
    for args in commands:
        p = cli("triton", *args, cwd=ROOT, env=env)
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
        assert re.search(r"\(extracted\): (ok \(|proved)", p.stdout), (args, p.stdout[-2000:])


def test_the_readme_triton_bug_deadlocks(tmp_path):
    pytest.importorskip("triton", reason="pip install 'pipeproof[triton]'")
    block = next(b for b in _blocks("sh") if "dump_ttgir.py" in b)
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1")
    dump, edit, check = block.strip().splitlines()
    dump = dump.replace("tests/", f"{ROOT}/tests/", 1)
    assert subprocess.run(dump, shell=True, cwd=tmp_path, env=env, capture_output=True,
                          timeout=600).returncode == 0
    assert subprocess.run(edit, shell=True, cwd=tmp_path, timeout=60).returncode == 0
    assert (tmp_path / "ir" / "bad.ttgir").read_text() != \
        (tmp_path / "ir" / "gluon_ring_rowsum_sm100.ttgir").read_text()
    p = cli(*check.split()[1:], cwd=tmp_path, env=env)
    assert p.returncode == 1 and ": deadlock after 18 steps: " in p.stdout, p.stdout + p.stderr
