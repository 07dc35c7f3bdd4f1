"""The verify options that drive the Z3 side: the pre-check and --suggest-fix."""
from __future__ import annotations

import json

from click.testing import CliRunner

from pipeproof.checker.cli.main import main
from tests.paths import EXAMPLES_DIR


def example(name: str) -> str:
    return str(EXAMPLES_DIR / f"{name}.toml")


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_precheck_words_follow_the_verdict_and_can_be_turned_off():
    out = run("verify", example("bug_consumer_count_too_many"))
    assert out.exit_code == 0  # declared and found: a passing self-test
    lines = out.output.splitlines()
    assert "deadlock" in lines[0]  # the compiler-style first line stays first
    pre = [line for line in lines if line.startswith("pre-check: ")]
    assert pre and "empty[s] expects 3 arrivals per phase" in pre[0]
    quiet = run("verify", "--no-precheck", example("bug_consumer_count_too_many"))
    assert quiet.exit_code == 0
    assert "pre-check" not in quiet.output


def test_precheck_is_silent_on_a_correct_spec_and_in_json():
    out = run("verify", "--json", example("mojo_pcp_nvidia"))
    assert out.exit_code == 0
    doc = json.loads(out.stdout)
    assert doc["precheck"] == []
    bad = json.loads(run("verify", "--json", example("bug_expect_tx_too_many_bytes")).stdout)
    assert [(f["signal"], f["kind"]) for f in bad["precheck"]] == [("full[s]", "deadlock")]


def test_an_ok_verdict_does_not_start_z3():
    """After an exhaustive `ok` the pre-check's findings are provably none (it raises no false
    alarms), so the command skips it and Z3's import; an inconclusive result still runs it."""
    import subprocess
    import sys
    probe = ("import sys; from pipeproof.checker.cli.main import main\n"
             "try: main.main(sys.argv[1:], standalone_mode=False)\n"
             "except SystemExit: pass\n"
             "print('Z3' if 'pipeproof.checker.smt.precheck_spec' in sys.modules else 'NO-Z3')")
    def modules(*args):
        out = subprocess.run([sys.executable, "-c", probe, "verify", *args], capture_output=True,
                             text=True, env={**__import__("os").environ, "PIPEPROOF_JIT": "0"})
        return out.stdout.splitlines()[-1]
    assert modules(example("mojo_pcp_nvidia")) == "NO-Z3"
    assert modules("--max-states", "3", example("mojo_pcp_nvidia")) == "Z3"
    assert modules(example("bug_consumer_count_too_many")) == "Z3"


def test_the_ready_marker_names_the_installed_numba_without_importing_it():
    import subprocess
    import sys
    code = ("import sys; from pipeproof.checker.runtime.jitcache import numba_release; r = numba_release(); "
            "print('numba' in sys.modules); import numba; print(numba.__version__ in r)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "True"]


def test_suggest_fix_prints_a_verified_toml_diff():
    out = run("verify", "--suggest-fix", "--json", example("bug_consumer_count_too_few"))
    assert out.exit_code == 0  # still violated as written, as the spec declares (a self-test)
    lines = out.output.splitlines()
    assert "-consumer_arrive_count = 1" in lines and "+consumer_arrive_count = 2" in lines
    fix = json.loads(out.stdout)["fix"]
    assert fix["found"] is True
    assert fix["changes"] == [{"location": "pipeline.consumer_arrive_count", "old": 1, "new": 2}]
    assert "explicit engine: ok" in fix["verified"]
    assert "prove: proved for every item count" in fix["verified"]


def test_precheck_after_the_revised_rules():
    """A per-tile reset that keeps parity is ok and the pre-check is silent on it (it used to
    print phase_alias lines); the expect_tx of one of two copies is read_before_fill after 6
    steps (slot parts), and the pre-check names the partly filled slot."""
    out = run("verify", example("x_persistent_reset_ok"))
    assert out.exit_code == 0, out.output
    assert not [line for line in out.output.splitlines() if line.startswith("pre-check")]
    out = run("verify", example("bug_expect_tx_too_few_bytes"))
    assert out.exit_code == 0  # declared and found: a passing self-test
    lines = out.output.splitlines()
    assert lines[0].startswith(f"{example('bug_expect_tx_too_few_bytes')}: read_before_fill "
                               f"after 6 steps: ")
    pre = [line for line in lines if line.startswith("pre-check: ")]
    assert len(pre) == 1 and pre[0].startswith("pre-check: full[s]: read_before_fill: ")
    assert pre[0].endswith("and consumer reads the partly filled slot, read_before_fill")


def test_verify_imports_no_other_command():
    """prove, export, triton and sweep load only when named (checker/cli/main.py OWN_COMMANDS)."""
    import subprocess
    import sys
    code = ("import sys; from pipeproof.checker.cli.main import main\n"
            "try: main.main(['verify', sys.argv[1]], standalone_mode=False)\n"
            "except SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.split('.')[-1] in "
            "('prove_cli', 'export_cli', 'triton_cli', 'sweep_cli')))")
    out = subprocess.run([sys.executable, "-c", code, example("mojo_pcp_nvidia")],
                         capture_output=True, text=True,
                         env={**__import__("os").environ, "PIPEPROOF_JIT": "0"})
    assert out.stdout.splitlines()[-1] == "[]"
    listed = run("--help").output
    assert all(name in listed for name in ("prove", "export", "triton", "sweep"))
