"""`pipeproof`: the command line (docs/model.md "Command line").

Exit codes (checker/results/result.py): 0 every spec holds, 1 a violation, 2 bad input or usage,
3 inconclusive (a limit was hit, or Ctrl-C), 4 internal error, 5 a verdict other than the
spec's declared `expect`. A run in which every spec declares its verdict and gets it exits 0,
violations included: a passing self-test (`self_test_exit`). Several specs give one verdict each, a summary line, and the worst
exit code (checker/cli/command.py runs the loop every command shares). The verdicts go
to stdout; with --json stdout holds the JSON document alone and the human report goes to
stderr. Errors always go to stderr.
"""
from __future__ import annotations

import json
import sys

import click

from pipeproof.checker.runtime import clock
from pipeproof.checker.engines import tier

from pipeproof.checker.cli.command import (InputLoop, UsageFailure, check_trace_name, engines_late,
                                      output_path)
from pipeproof.checker.results import (EXIT_INCONCLUSIVE, EXIT_OK, EXIT_UNEXPECTED, EXIT_USAGE,
                                     EXIT_VIOLATION, VERDICT_EXIT)
from pipeproof.checker.frontends import commands as frontend_commands


PLUGINS = "pipeproof.commands"  # the entry-point group of commands that live in other packages
# Commands that live beside the engines they drive, imported only when named (or listed by
# --help): `verify` pays nothing for them at start-up.
OWN_COMMANDS = {
    "prove": ("pipeproof.checker.cli.prove", "prove"),
    "export": ("pipeproof.checker.cli.export", "export"),
    **frontend_commands(),  # triton, mojo: each front end's command (checker/frontends/registry.py)
    "sweep": ("pipeproof.checker.cli.sweep", "sweep"),
    "examples": ("pipeproof.checker.cli.examples", "examples"),
}


class _Commands(click.Group):
    """verify, prove and export are registered here. The GPU side's commands (gpu, crosscheck,
    conform) live in cuda_ref, which builds on this package; they plug in through the
    entry-point group PLUGINS (pyproject.toml), read only when a command is not one of ours,
    so checker never imports cuda_ref and `verify` pays nothing for them."""

    @staticmethod
    def _plugins() -> dict:
        from importlib.metadata import entry_points
        return {ep.name: ep for ep in entry_points(group=PLUGINS)}

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(OWN_COMMANDS) | set(self._plugins()))

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is None and name in OWN_COMMANDS:
            import importlib
            module, attr = OWN_COMMANDS[name]
            command = getattr(importlib.import_module(module), attr)
        if command is None and name in (plugins := self._plugins()):
            command = plugins[name].load()
        return command


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pipeproof")
def main():
    """pipeproof: exhaustive checking of GPU producer/consumer pipeline protocols."""


def _write_graph(spec, target: str, max_states) -> int:
    """--graph: the state graph as DOT; a spec too big for it is a usage error, not a crash."""
    from pipeproof.checker.engines import write_dot
    try:
        write_dot(spec, target, max_states=max_states)
    except ValueError as err:
        click.echo(f"{err} (--graph)", err=True)
        return EXIT_USAGE
    click.echo(f"{spec.path}: state graph written to {target}", err=True)
    return EXIT_OK


@main.command()
@click.argument("specs", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--trace", "trace_file", metavar="F",
              help="Write the counterexample: *.itf.json (ITF) or *.trace.json (Chrome/Perfetto).")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop (inconclusive) after this many states.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop (inconclusive) after this many seconds.")
@click.option("--graph", "graph_file", metavar="F", help="Write the explored state graph as DOT (small specs).")
@click.option("--no-precheck", is_flag=True, help="Skip the symbolic count, bytes and phase pre-check.")
@click.option("--suggest-fix", is_flag=True,
              help="After a violation, search for the smallest verified change of the spec's numbers.")
@click.option("--no-symmetry", "no_symmetry", is_flag=True,
              help="Store every state, without reducing interchangeable agents (to compare).")
@click.option("--no-cta-symmetry", "no_cta_symmetry", is_flag=True,
              help="Keep the CTAs of a cluster apart even where they run the same programs "
                   "(to compare; explicit and laps engines).")
@click.option("--no-por", "no_por", is_flag=True,
              help="Store every interleaving instead of taking the steps no other step can "
                   "tell the time of at once (to compare; explicit and laps engines).")
@click.option("--engine", type=click.Choice(["explicit", "bmc", "laps"]), default="explicit",
              show_default=True,
              help="explicit: breadth-first search of every state; bmc: Z3 bounded model checking; "
                   "laps: item numbers relative, so the states stop growing with the item count.")
@click.option("--depth", type=click.IntRange(min=0), metavar="K",
              help="With --engine bmc: look for violations up to K steps (default: the longest run, at most 100).")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only the verdict line of each spec (and the summary of several).")
@click.option("--strict-exit", is_flag=True,
              help="A CTA that exits with its own copies or commits still in flight is "
                   "inflight_at_exit (PTX's strict reading), not the warning unawaited_at_exit.")
@click.option("--sarif", "sarif_file", metavar="F",
              help="Also write the findings as SARIF 2.1.0 (code-scanning views; checker/results/sarif.py).")
def verify(specs, as_json, trace_file, max_states, timeout, graph_file, no_precheck, suggest_fix,
           no_symmetry, no_cta_symmetry, no_por, engine, depth, quiet, strict_exit, sarif_file=None):
    """Explore every interleaving of each SPEC; print a verdict per spec.

    Exit 0 when every spec holds, or when every spec declares its verdict (`expect`) and
    gets it (a passing self-test, violations included); else 1 a violation, 2 bad input,
    3 inconclusive, 4 internal error, 5 a verdict other than the declared one (UNEXPECTED).
    A path spec/examples/NAME.toml that is not on disk reads the example shipped with
    pipeproof (`pipeproof examples` lists them)."""
    if depth is not None and engine != "bmc":
        raise UsageFailure("--depth applies only to --engine bmc")
    if no_symmetry and engine == "laps":
        raise UsageFailure("--no-symmetry does not apply to --engine laps (it always reduces interchangeable agents)")
    if no_por and engine == "bmc":
        raise UsageFailure("--no-por applies only to --engine explicit and --engine laps")
    if max_states is not None and engine == "bmc":
        raise UsageFailure("--max-states applies only to --engine explicit (bmc stores no states; use --depth)")
    check_trace_name(trace_file)
    from pipeproof.spec.shipped import expand
    specs = expand(specs)  # spec/examples/*.toml outside a clone: the shipped examples
    settled = {}  # results of the plain-Python first try, by the spec's index (checker/engines/tier.py)
    if _as_command and tier.available(engine, suggest_fix, graph_file):
        settled = tier.first_try(specs, max_states, timeout, not no_symmetry, not no_por,
                                 not no_cta_symmetry, strict_exit)
        if settled is None:
            tier.run_compiled()
    from pipeproof.checker.engines import INTERRUPTED
    from pipeproof.checker.results import write_trace
    from pipeproof.checker.results import (first_line, format_text, summary_of, to_json,
                                          warning_lines)
    from pipeproof.checker.engines import verify as explicit
    from pipeproof.spec.load import load_spec

    late = engines_late(timeout)
    results, errors = [], []
    loop = InputLoop(lambda path, message, code: errors.append(
        {"spec": path, "error": message, "exit_code": code}))
    progress = sys.stderr.isatty() and not as_json
    to_stderr = as_json  # stdout carries the JSON document alone

    def say(text):
        click.echo(text, err=to_stderr)

    strict = {"strict_exit": True} if strict_exit else {}  # (bmc, laps: their own keyword)

    def run_engine(spec):
        if late:
            from pipeproof.checker.results import Result
            return Result(spec=spec, verdict="inconclusive", states=0, transitions=0,
                          seconds=timeout, limit=late, engine=engine)
        if engine == "bmc":
            from pipeproof.checker.smt import verify_bmc
            return verify_bmc(spec, depth=depth, timeout=timeout, symmetry=not no_symmetry,
                              **strict)
        if engine == "laps":
            from pipeproof.checker.engines import verify_laps
            return verify_laps(spec, max_states=max_states, timeout=timeout, por=not no_por,
                               cta_symmetry=not no_cta_symmetry, **strict)
        return explicit(spec, max_states=max_states, timeout=timeout, progress=progress,
                        symmetry=not no_symmetry, por=not no_por,
                        cta_symmetry=not no_cta_symmetry and not no_symmetry,
                        strict_exit=strict_exit)

    for index, path in enumerate(specs):
        spec = loop.attempt(path, lambda: load_spec(path))
        if spec is None:
            continue
        for role in spec.roles:
            if role.never_steps:
                click.echo(f"{path}: warning: role '{role.name}' never steps (its body is empty "
                           f"or runs 0 items, and it has no prologue or epilogue)", err=True)
        # (a SpecError here is a spec the engine cannot take: bad input too)
        result = loop.attempt(path, lambda: settled.pop(index) if index in settled else run_engine(spec))
        # The pre-check raises no false alarms (checker/smt/precheck_spec.py): after an exhaustive
        # `ok` its findings are provably none, so only the other verdicts pay for Z3.
        findings = [] if no_precheck or result is None or result.verdict == "ok" else \
            loop.attempt(path, lambda: _precheck(spec))
        if result is None or findings is None:
            continue
        result.precheck = findings  # printed right after the verdict line (report.format_text)
        result.wall_seconds = clock.wall()
        results.append(result)
        say("\n".join([first_line(result)] + warning_lines(result)) if quiet
            else format_text(result).rstrip("\n"))
        if suggest_fix and result.verdict == "violation":
            from pipeproof.checker.fix import format_fix, suggest_fix as find_fix
            result.fix = find_fix(spec, result)
            say(format_fix(result.fix).rstrip("\n"))
        if trace_file:
            target = output_path(trace_file, path, len(specs) > 1)
            if result.traces:
                write_trace(result.traces[result.kind], target)
                say(f"{path}: {result.kind} trace written to {target}")
            else:
                say(f"{path}: {result.verdict}: no counterexample, nothing written to {target}")
        loop.note(VERDICT_EXIT[result.verdict])
        if result.as_expected is False:
            say(f"{path}: UNEXPECTED: declared {_declared(spec)}, got "
                f"{result.kind if result.verdict == 'violation' else result.verdict}")
            loop.note(EXIT_UNEXPECTED)
        if graph_file and not late:
            loop.note(_write_graph(spec, output_path(graph_file, path, len(specs) > 1), max_states))
        if result.limit == INTERRUPTED:
            break  # Ctrl-C: what was found so far, and nothing more
    if len(specs) > 1:
        say(summary_of(len(specs), results, errors))
    if as_json:
        doc = to_json(results)
        doc["errors"] = errors  # specs that could not be verified, so none goes missing
        click.echo(json.dumps(doc, indent=2))
    if sarif_file:
        from pipeproof.checker.results import sarif
        sarif.write(sarif_file, [f for r in results for f in sarif.from_result(r, r.spec.path)]
                    + [f for e in errors for f in sarif.from_error(e["spec"], e["error"])])
    sys.exit(self_test_exit(loop.worst, len(specs), results, errors))


def self_test_exit(worst: int, n_specs: int, results, errors) -> int:
    """The exit code of a run. A run in which EVERY spec declares its verdict (`expect`,
    `expect_any`) and every verdict is the declared one is a passing self-test: 0, violations
    included (`pipeproof verify spec/examples/*.toml`). Otherwise the exit table as always:
    a spec that declares nothing gives its verdict's code (1 for a violation), a declared one
    that differs 5 (UNEXPECTED), and a run that did not reach every spec (Ctrl-C) or could not
    load one keeps its worst code."""
    if (worst == EXIT_VIOLATION and not errors and len(results) == n_specs
            and all(r.as_expected is True for r in results)):
        return EXIT_OK
    return worst


def _declared(spec) -> str:
    return " or ".join((spec.expect,) + tuple(k for k in spec.expect_any if k != spec.expect))


def _precheck(spec):
    from pipeproof.checker.smt import precheck
    return precheck(spec)




# True when run as the command (not, say, from click's test runner inside another program):
# only then may `verify` replace the process to start the compiled engine (checker/engines/tier.py).
_as_command = False


def run():
    """Console entry point: click's own usage errors exit 2 (docs/model.md "Exit codes")."""
    global _as_command
    _as_command = True
    from pipeproof.checker.runtime import progress
    progress.enable()  # a long search says how it goes on stderr, terminal or not (issue 32)
    try:
        main.main(standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort as e:
        if isinstance(e.__cause__, KeyboardInterrupt):  # click's word for a Ctrl-C
            _interrupted()
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        _interrupted()


def _interrupted():
    """A Ctrl-C outside a search (loading, the pre-check, compiling): nothing to report yet.
    Inside one, the search itself ends like a limit and the counts so far are printed."""
    click.echo("interrupted (Ctrl-C)", err=True)
    sys.exit(EXIT_INCONCLUSIVE)


if __name__ == "__main__":
    run()
