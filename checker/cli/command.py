"""What every command shares: the loop over its inputs, the trace and graph file names, and the
wait for the compiled engines.

Each command (verify, prove, gpu, crosscheck, conform) runs one loop over its inputs (specs or
logs). An input that is bad (a SpecError, a log that does not parse) is one line on stderr and
exit code 2; an internal error is the input's name with the traceback and exit code 4; neither
ends the loop. The exit code of the command is the worst of its inputs' (checker/results/result.py).
"""
from __future__ import annotations

import os
import traceback

import click

from pipeproof.checker.results import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, worse
from pipeproof.spec.schema import SpecError

TRACE_SUFFIXES = (".itf.json", ".trace.json")


class UsageFailure(click.UsageError):
    exit_code = EXIT_USAGE


class InputLoop:
    """The worst exit code so far, and each input's attempt: `attempt(name, fn)` is fn()'s
    value, or None after bad input or an internal error (said on stderr, noted, and handed to
    `on_error(name, message, code)` so the command can list it in its JSON)."""

    def __init__(self, on_error=None, bad_input=(SpecError,)):
        self.worst = EXIT_OK
        self._on_error = on_error
        self._bad_input = bad_input

    def note(self, code: int) -> None:
        self.worst = worse(self.worst, code)

    def attempt(self, name: str, fn):
        try:
            return fn()
        except self._bad_input as err:
            click.echo(str(err), err=True)
            message, code = str(err), EXIT_USAGE
        except Exception:  # an internal error must still say which input, and exit 4
            click.echo(f"{name}: internal error (please report):\n{traceback.format_exc()}", err=True)
            message, code = "internal error", EXIT_INTERNAL
        self.note(code)
        if self._on_error is not None:
            self._on_error(name, message, code)
        return None


def check_trace_name(trace_file: str | None) -> None:
    if trace_file and not trace_file.endswith(TRACE_SUFFIXES):
        raise UsageFailure(f"--trace {trace_file}: the file name must end in .itf.json or .trace.json")


def output_path(base: str, spec_path: str, several: bool) -> str:
    """With several specs, `cx.itf.json` becomes `cx.<spec stem>.itf.json` (`g.dot`: `g.<stem>.dot`)."""
    if not several:
        return base
    stem = os.path.splitext(os.path.basename(spec_path))[0]
    for suffix in TRACE_SUFFIXES + (os.path.splitext(base)[1],):
        if suffix and base.endswith(suffix):
            return f"{base[:-len(suffix)]}.{stem}{suffix}"
    return f"{base}.{stem}"


def engines_late(timeout) -> str:
    """'' once the compiled engines can be loaded (waiting for their one-time build, with a
    line on stderr every few seconds); else why every check of this command is inconclusive:
    the build outlasted `--timeout`, which bounds everything a command does."""
    from pipeproof.checker.runtime import jitcache
    if jitcache.ensure_engines(timeout):
        return ""
    return (f"timeout {timeout:g} s while the compiled engines were being built (once after an "
            f"install; the build goes on in the background, and a later run uses it)")
