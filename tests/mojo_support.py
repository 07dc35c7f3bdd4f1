"""`pipeproof mojo` for tests/test_mojo_frontend.py, on the committed fixtures
(tests/fixtures/mojo/: compiled LLVM IR; no Mojo needed).

- `run_pipeproof(*args)`: the `pipeproof` click group (checker/cli/main.py) in this process,
  (exit code, stdout then stderr), as the command line gives them; `run_mojo(*args)` is
  `pipeproof mojo ARGS`. An exception the command did not turn into an exit code is raised.
- `run_command(*args)`: the command line itself, `python -m pipeproof.checker.cli.main ARGS` in
  a process of its own (the few tests of the console entry point: exit codes, one-line errors).
- `shared_readings()`: while it is open, each kernel the Mojo reader (reached through the front
  ends' registry, `reader("mojo")`) reads with the same IR text and options is read once, and
  its spec built once: the IR's interpretation is most of a command's time (an sm90 kernel
  takes seconds), and several tests read the same kernel with the same arguments.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

FIX = Path(__file__).parent / "fixtures" / "mojo"


def run_pipeproof(*args) -> tuple[int, str]:
    """`pipeproof ARGS` in this process: (exit code, stdout + stderr)."""
    from pipeproof.checker.cli.main import main as pipeproof
    got = CliRunner().invoke(pipeproof, [str(a) for a in args])
    if got.exception is not None and not isinstance(got.exception, SystemExit):
        raise got.exception
    return got.exit_code, got.stdout + got.stderr


def run_mojo(*args) -> tuple[int, str]:
    """`pipeproof mojo ARGS` in this process: (exit code, stdout + stderr)."""
    return run_pipeproof("mojo", *args)


def run_command(*args, **kw) -> tuple[int, str]:
    """`pipeproof ARGS` as a user runs it, in a process of its own: (exit code, stdout + stderr)."""
    got = subprocess.run([sys.executable, "-m", "pipeproof.checker.cli.main", *map(str, args)],
                         capture_output=True, text=True, **kw)
    return got.returncode, got.stdout + got.stderr


def _key(ir, options) -> tuple:
    return (hashlib.sha256(ir.text.encode()).hexdigest(), ir.where, options.function,
            repr(options.args), options.trip_count, repr(sorted(options.extra.items())))


def _once(build):
    made = []

    def built():
        if not made:
            made.append(build())
        return made[0]
    return built


@contextlib.contextmanager
def shared_readings():
    """Within it, the Mojo reader reads each (IR text, options) once and builds its spec once
    (a refusal is not kept: it is raised again on the next read). Nested, the inner one starts
    with nothing read (a test that patches the reader's parts reads the kernel afresh)."""
    from pipeproof.checker.frontends import reader
    mojo = reader("mojo")
    outer = mojo.__dict__.get("read")  # an enclosing shared_readings(): this one reads afresh
    real = type(mojo).read.__get__(mojo)
    kept = {}

    def read(ir, options):
        key = _key(ir, options)
        if key not in kept:
            reading = real(ir, options)
            kept[key] = dataclasses.replace(reading, build=_once(reading.build))
        return kept[key]

    mojo.read = read  # the instance's attribute: the command and trip_counts both read through it
    try:
        yield kept
    finally:
        if outer is None:
            del mojo.read
        else:
            mojo.read = outer
