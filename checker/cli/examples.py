"""`pipeproof examples`: the example specs shipped with the package (spec/shipped.py), listed with
the verdict each declares, or copied into a folder of the user's.

After `pip install .` there is no `spec/examples/` folder in the user's directory; the
examples are package data. `pipeproof verify spec/examples/NAME.toml` reads them anyway (the
loader falls back to the shipped copy, and says so); this command shows what there is and
copies the files out to read and edit.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

import click

from pipeproof.checker.cli.command import UsageFailure
from pipeproof.checker.results import EXIT_USAGE


def declared(path: Path) -> tuple[str, str]:
    """(the verdict the example declares, e.g. `deadlock` or `ok|phase_alias`; its name)."""
    try:
        pipeline = tomllib.loads(path.read_text(encoding="utf-8")).get("pipeline", {})
    except (OSError, ValueError):
        return "?", ""
    expect = pipeline.get("expect")
    others = [k for k in pipeline.get("expect_any", []) if k != expect]
    verdict = "|".join(([expect] if expect else []) + others) or "-"
    return verdict, str(pipeline.get("name", ""))


@click.command()
@click.option("--copy", "copy_to", metavar="DIR",
              help="Copy every example into DIR (made if missing; a different file of the same "
                   "name there is an error, nothing is overwritten).")
def examples(copy_to):
    """List the example specs shipped with pipeproof, with the verdict each declares.

    `pipeproof verify spec/examples/NAME.toml` checks one from any directory (outside a clone
    it reads the shipped copy and says so on stderr); `pipeproof verify spec/examples/*.toml`
    checks them all, a self-test that exits 0 when every verdict is the declared one."""
    from pipeproof.spec.shipped import shipped, shipped_dir
    files = shipped()
    if not files:
        raise UsageFailure(f"no examples found in {shipped_dir()} (a broken install?)")
    if copy_to is not None:
        raise SystemExit(_copy(files, Path(copy_to)))
    width = max(len(p.name) for p in files)
    rows = [(p.name, *declared(p)) for p in files]
    vwidth = max(len(v) for _, v, _ in rows)
    for name, verdict, title in rows:
        click.echo(f"{name.ljust(width)}  {verdict.ljust(vwidth)}  {title}".rstrip())
    click.echo(f"{len(files)} examples shipped with pipeproof (in {shipped_dir()}): "
               f"`pipeproof verify spec/examples/NAME.toml` checks one from any directory; "
               f"`pipeproof examples --copy DIR` copies them", err=True)


def _copy(files, target: Path) -> int:
    if target.exists() and not target.is_dir():
        click.echo(f"{target}: not a directory (--copy DIR copies the examples into a folder)",
                   err=True)
        return EXIT_USAGE
    clashes = [target / p.name for p in files
               if (target / p.name).exists() and (target / p.name).read_bytes() != p.read_bytes()]
    if clashes:
        click.echo(f"{clashes[0]}: exists and differs from the shipped example (nothing copied, "
                   f"nothing overwritten; remove it or copy to another folder)", err=True)
        return EXIT_USAGE
    try:
        target.mkdir(parents=True, exist_ok=True)
        for p in files:
            (target / p.name).write_bytes(p.read_bytes())
    except OSError as err:
        click.echo(f"{target}: cannot copy the examples: {err.strerror or err}", err=True)
        return EXIT_USAGE
    click.echo(f"copied {len(files)} examples to {target}/ "
               f"(pipeproof verify {target}/*.toml checks them all)")
    return 0
