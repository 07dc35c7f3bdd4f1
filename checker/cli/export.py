"""`pipeproof export`: write a spec as a Promela (SPIN) or Murphi (Rumur) model.

    pipeproof export --format promela [--strict-exit] SPEC [-o FILE]
    pipeproof export --format murphi [--symmetry] [--strict-exit] SPEC [-o FILE]

The model goes to stdout unless `-o FILE` is given. Bad input (a spec that does not load, a
feature the target language cannot express, an unwritable output) is one line on stderr and
exit code 2. checker/models/exporter.py says what is exported and how to run the tools.

`pipeproof.checker.cli.main` registers the command (`main.add_command(export)`); `python -m pipeproof.checker.cli.export`
runs it on its own.
"""
from __future__ import annotations

import sys

import click

from pipeproof.checker.results import EXIT_USAGE


@click.command("export")
@click.argument("spec_path", metavar="SPEC")
@click.option("--format", "fmt", type=click.Choice(["promela", "murphi"]), required=True,
              help="promela (SPIN) or murphi (Rumur, CMurphi).")
@click.option("-o", "--output", metavar="FILE", help="Write the model here instead of stdout.")
@click.option("--symmetry", is_flag=True,
              help="murphi: index interchangeable agents by a scalarset, so Rumur's symmetry "
                   "reduction applies (state counts then differ from pipeproof's).")
@click.option("--strict-exit", is_flag=True,
              help="A CTA that exits with its own copies or commits in flight is "
                   "inflight_at_exit (PTX's strict reading), as with pipeproof verify "
                   "--strict-exit; by default that is a warning, which the models do not report.")
def export(spec_path, fmt, output, symmetry, strict_exit):
    """Write SPEC as a Promela or Murphi model of the same transition system."""
    from pipeproof.checker.models import export as export_text
    from pipeproof.spec.load import load_spec
    from pipeproof.spec.schema import SpecError

    if symmetry and fmt != "murphi":
        click.echo(f"{spec_path}: --symmetry: applies to --format murphi only", err=True)
        sys.exit(EXIT_USAGE)
    try:
        text = export_text(load_spec(spec_path), fmt, symmetry=symmetry, strict_exit=strict_exit)
    except SpecError as err:
        click.echo(str(err), err=True)
        sys.exit(EXIT_USAGE)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        with open(output, "w") as f:
            f.write(text)
    except OSError as err:
        click.echo(f"{output}: cannot write: {err.strerror or err}", err=True)
        sys.exit(EXIT_USAGE)
    click.echo(f"{spec_path}: {fmt} model written to {output}", err=True)


def run():
    """Stand-alone entry point with the exit codes of docs/model.md (click's usage errors exit 2)."""
    try:
        export.main(standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort:
        sys.exit(EXIT_USAGE)


if __name__ == "__main__":
    run()
