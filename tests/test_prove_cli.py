"""`pipeproof prove --json`, run in a subprocess: one JSON document on stdout whatever happens,
every number in it a plain int, the exit codes of docs/model.md ("Exit codes").

The engines run as plain Python here (PIPEPROOF_JIT=0, as the command line's own first try
does): small specs prove in about a second without the compiled engines, and the abstract
search's counts are then numpy integers, the case that once crashed `--json`. Failures are
injected through a small driver that patches one function before the command line runs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.specs import standard_toml

# A consumer that resets its ring every 5 items (at item 3): fine at its own 3 items, broken
# at n = 10, an item count found by the abstract search (prove.item_count_of).
RESET_SPEC = standard_toml(items=3, consumer_body=["wait_full", "read", "arrive_empty", "advance",
                                                   "reset every=5 at=3"])
OK_SPEC = standard_toml(items=3)

# Runs the command line after exec-ing its first argument (a patch).
DRIVER = "import sys; exec(sys.argv.pop(1)); from pipeproof.checker.cli.main import run; run()"


def prove_cli(tmp_path, *args, patch="pass"):
    env = dict(os.environ, PIPEPROOF_JIT="0")
    return subprocess.run([sys.executable, "-c", DRIVER, patch, "prove", *map(str, args)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    return name


def one_document(proc) -> dict:
    """stdout is exactly one JSON document of schema pipeproof.prove/1 (and nothing else)."""
    doc, end = json.JSONDecoder().raw_decode(proc.stdout)
    assert proc.stdout[end:].strip() == "", proc.stdout[end:]
    assert (doc["schema"], doc["version"]) == ("pipeproof.prove", 1)
    return doc


def numbers(value):
    """Every number in a decoded JSON value."""
    if isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def test_item_count_found_by_the_abstract_search_is_written_as_an_int(tmp_path):
    """The violating count comes from the abstract search (a numpy integer in plain Python):
    `--json` once died with `Object of type int64 is not JSON serializable`, exit 1, no
    output."""
    name = write(tmp_path, "reset.toml", RESET_SPEC)
    proc = prove_cli(tmp_path, "--json", name)
    assert proc.returncode == 1, proc.stderr
    doc = one_document(proc)
    [entry] = doc["results"]
    assert (entry["status"], entry["items"], entry["reason"]) == ("violated", 10, "violated at n = 10")
    assert entry["result"]["violation"]["kind"] == "read_before_fill"
    assert doc["error"] is None
    assert "Traceback" not in proc.stderr
    assert "reset.toml: violated at item count n = 10" in proc.stderr  # the report: stderr


def test_item_count_of_a_proof_is_a_python_int():
    """At the root: the ProofResult itself holds ints, whatever engine mode computed them."""
    env = dict(os.environ, PIPEPROOF_JIT="0")
    code = ("from pipeproof.spec.load import load_spec_text\n"
            "from pipeproof.checker.engines.prover import prove\n"
            f"p = prove(load_spec_text({RESET_SPEC!r}, 'reset.toml'))\n"
            "print(type(p.items).__name__, type(p.abstract_states).__name__, p.items)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout.split() == ["int", "int", "10"], proc.stderr


def test_every_number_in_the_document_is_plain(tmp_path):
    ok, bad = write(tmp_path, "ok.toml", OK_SPEC), write(tmp_path, "reset.toml", RESET_SPEC)
    proc = prove_cli(tmp_path, "--json", ok, bad)
    assert proc.returncode == 1, proc.stderr
    doc = one_document(proc)
    assert [e["status"] for e in doc["results"]] == ["proved", "violated"]
    assert all(type(n) in (int, float) for n in numbers(doc))
    assert doc["results"][0]["abstract_states"] > 0 and doc["results"][0]["items"] is None


def test_internal_error_while_reporting_exits_4_with_one_document(tmp_path):
    """A bug after the proof (here: in the text report) is that spec's internal error: the
    traceback on stderr, the spec listed as an error, the next spec still proved, exit 4."""
    ok, bad = write(tmp_path, "ok.toml", OK_SPEC), write(tmp_path, "reset.toml", RESET_SPEC)
    patch = ("import pipeproof.checker.results.report as R\n"
             "def boom(result): raise RuntimeError('boom in format_text')\n"
             "R.format_text = boom")
    proc = prove_cli(tmp_path, "--json", bad, ok, patch=patch)
    assert proc.returncode == 4, proc.stderr
    doc = one_document(proc)
    assert doc["results"] == [{"spec": bad, "status": "error", "reason": "internal error"},
                              doc["results"][1]]
    assert doc["results"][1]["status"] == "proved"
    assert "reset.toml: internal error (please report)" in proc.stderr
    assert "boom in format_text" in proc.stderr


def test_entry_that_does_not_serialize_is_an_internal_error(tmp_path):
    """Were a number of the document not plain again, the run still prints one document
    (that spec an internal error, exit 4) instead of dying in json.dumps."""
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    patch = ("import numpy, pipeproof.checker.cli.prove as C\n"
             "plain = C.proof_to_json\n"
             "C.proof_to_json = lambda proof: {**plain(proof), 'items': numpy.int64(3)}")
    proc = prove_cli(tmp_path, "--json", ok, patch=patch)
    assert proc.returncode == 4, proc.stderr
    doc = one_document(proc)
    assert doc["results"] == [{"spec": ok, "status": "error", "reason": "internal error"}]
    assert "int64 is not JSON serializable" in proc.stderr


def test_internal_error_in_the_proof_exits_4_with_one_document(tmp_path):
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    patch = ("import pipeproof.checker.engines.prover as P\n"
             "def boom(*a, **k): raise RuntimeError('boom in prove')\n"
             "P.prove = boom")
    proc = prove_cli(tmp_path, "--json", ok, "missing.toml", patch=patch)
    assert proc.returncode == 4, proc.stderr  # worse than the missing file's 2
    doc = one_document(proc)
    assert [(e["spec"], e["status"]) for e in doc["results"]] == [(ok, "error"), ("missing.toml", "error")]
    assert doc["results"][0]["reason"] == "internal error"
    assert "boom in prove" in proc.stderr


def test_internal_error_outside_any_spec_exits_4_with_one_document(tmp_path):
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    patch = ("import pipeproof.checker.cli.command as C\n"
             "def boom(timeout): raise RuntimeError('boom before any spec')\n"
             "C.engines_late = boom")
    proc = prove_cli(tmp_path, "--json", ok, patch=patch)
    assert proc.returncode == 4, proc.stderr
    doc = one_document(proc)
    assert doc["error"] == "internal error"
    assert doc["results"] == [{"spec": ok, "status": "error", "reason": "internal error"}]
    assert "boom before any spec" in proc.stderr
    text = prove_cli(tmp_path, ok, patch=patch)  # without --json: the traceback, exit 4 too
    assert text.returncode == 4 and text.stdout == "" and "boom before any spec" in text.stderr


@pytest.mark.parametrize("args, message", [
    (["--max-states", "0", "ok.toml"], "--max-states"),
    ([], "Missing argument"),
    (["--trace", "cx.txt", "ok.toml"], "must end in .itf.json or .trace.json"),
])
def test_usage_error_exits_2_with_one_document(tmp_path, args, message):
    write(tmp_path, "ok.toml", OK_SPEC)
    proc = prove_cli(tmp_path, "--json", *args)
    assert proc.returncode == 2, proc.stderr
    doc = one_document(proc)
    assert message in doc["error"] and message in proc.stderr
    assert all(e["status"] == "error" for e in doc["results"])
    assert "Traceback" not in proc.stderr


def test_ctrl_c_is_unknown_exit_3_with_one_document(tmp_path):
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    patch = ("import pipeproof.checker.engines.prover as P\n"
             "def stop(*a, **k): raise KeyboardInterrupt\n"
             "P.prove = stop")
    proc = prove_cli(tmp_path, "--json", ok, "ok.toml", patch=patch)
    assert proc.returncode == 3, proc.stderr
    doc = one_document(proc)
    assert [(e["status"], e["reason"]) for e in doc["results"]] == [
        ("unknown", "interrupted (Ctrl-C)"), ("unknown", "not run: interrupted (Ctrl-C)")]


def test_bad_input_beside_a_proof(tmp_path):
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    proc = prove_cli(tmp_path, "--json", ok, "missing.toml")
    assert proc.returncode == 2, proc.stderr
    doc = one_document(proc)
    assert [(e["spec"], e["status"]) for e in doc["results"]] == [(ok, "proved"), ("missing.toml", "error")]
    assert doc["error"] is None


def test_own_commit_at_exit_is_a_warning_unless_strict(tmp_path):
    """R2: a CTA gone with its own commit in flight is proved with the warning (exit 0);
    `--strict-exit` makes it inflight_at_exit (exit 1)."""
    name = write(tmp_path, "own.toml", standard_toml(
        items=3, consumer_body=["wait_full", "read", "commit_empty", "advance"]))
    plain = prove_cli(tmp_path, "--json", name)
    assert plain.returncode == 0, plain.stderr
    [entry] = one_document(plain)["results"]
    assert (entry["status"], entry["warnings"]) == ("proved", ["unawaited_at_exit"])
    assert "own.toml: warning: unawaited_at_exit at some item count" in plain.stderr
    strict = prove_cli(tmp_path, "--json", "--strict-exit", name)
    assert strict.returncode == 1, strict.stderr
    [entry] = one_document(strict)["results"]
    assert (entry["status"], entry["result"]["violation"]["kind"], entry["warnings"]) == \
        ("violated", "inflight_at_exit", [])


def test_ctrl_c_in_the_quick_look_stops_the_run(tmp_path):
    """The explicit engine ends a search on Ctrl-C like a limit (interrupted): prove says
    unknown for that spec and runs no other, as verify does."""
    ok = write(tmp_path, "ok.toml", OK_SPEC)
    patch = ("import pipeproof.checker.engines.verifier as V, pipeproof.checker.engines.prover as P\n"
             "from pipeproof.checker.results.result import Result\n"
             "P.verify = lambda spec, **k: Result(spec=spec, verdict='inconclusive', states=0,"
             " transitions=0, seconds=0.0, limit='interrupted (Ctrl-C)')")
    proc = prove_cli(tmp_path, "--json", ok, ok, patch=patch)
    assert proc.returncode == 3, proc.stderr
    doc = one_document(proc)
    assert [(e["status"], e["reason"]) for e in doc["results"]] == [
        ("unknown", "interrupted (Ctrl-C)"), ("unknown", "not run: interrupted (Ctrl-C)")]


def test_proof_reports_its_own_seconds_and_the_wall_time(tmp_path):
    """Issue 32: a proof's seconds are the proof's own; the line also gives the command's wall
    time since its process started (imports included), which is never less; so does --json."""
    import re
    name = write(tmp_path, "ok.toml", OK_SPEC)
    text = prove_cli(tmp_path, name)
    m = re.search(r"proved for every item count .*abstract states, ([\d.]+) s, ([\d.]+) s wall$",
                  text.stdout.strip())
    assert text.returncode == 0 and m, text.stdout + text.stderr
    assert float(m[2]) >= float(m[1]) and float(m[2]) > 0.1  # the interpreter's start alone
    [entry] = one_document(prove_cli(tmp_path, "--json", name))["results"]
    assert entry["wall_seconds"] >= entry["seconds"] and entry["wall_seconds"] > 0.1, entry
