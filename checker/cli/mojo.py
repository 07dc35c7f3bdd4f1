"""`pipeproof mojo TARGET`: check a Mojo kernel's synchronisation from its compiled LLVM IR
(docs/mojo.md).

TARGET is a `.ll` / `.ll.gz` file (`mojo build -g1 --emit llvm`, read only, never run) or a
`.mojo` file, compiled with the installed Mojo toolchain for `--target` (the optional extra
`pipeproof[mojo]`). The extracted spec (spec/mojo/, through spec/frontend_core.py) is printed or
written (`--emit-spec`), then checked by `verify`; every step of a counterexample names the
role, the pipeline method and the Mojo line. Exit codes as `verify`; a kernel the spec language
cannot state yet is one line, exit 2.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from pipeproof.checker.cli.triton import source_lines

INSTALL = "pip install 'pipeproof[mojo]'"


def mojo_binary() -> str | None:
    found = shutil.which("mojo")
    if found:
        return found
    here = Path(sys.executable).parent / "mojo"
    return str(here) if here.exists() else None


def compile_mojo(path: str, target: str) -> list[str]:
    """Compile a host program for --target with -g1 and return the kernels' LLVM IR files."""
    from pipeproof.spec.schema import SpecError
    mojo = mojo_binary()
    if mojo is None:
        raise SpecError(f"{path}: compiling Mojo needs the Mojo toolchain ({INSTALL}); a compiled "
                        f".ll file needs nothing")
    if not os.path.isfile(path):
        raise SpecError(f"{path}: no such file")
    out = tempfile.mkdtemp(prefix="pipeproof-mojo-")
    stem = Path(path).stem
    cmd = [mojo, "build", "--disable-warnings", "-g1", "--target-accelerator", target,
           "--emit", "llvm", "-o", os.path.join(out, stem + ".ll"), path]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        last = (got.stderr.strip().splitlines() or ["failed"])[-1]
        raise SpecError(f"{path}: mojo build failed: {last}")
    files = sorted(str(p) for p in Path(out).glob("*.ll") if p.name != stem + ".ll")
    if not files:  # a program that compiles its kernel itself and prints the IR
        run = subprocess.run([mojo, "run", "--disable-warnings", "-g1", path], capture_output=True,
                             text=True)
        if run.returncode == 0 and "define" in run.stdout:
            f = os.path.join(out, stem + ".kernel.ll")
            Path(f).write_text(run.stdout)
            files = [f]
    if not files:
        raise SpecError(f"{path}: the build wrote no kernel IR (does main launch a kernel?)")
    return files


def _kv(values) -> dict:
    """--arg NAME=V: an integer, or integers joined by commas for an array argument (sm100's
    problem shape `6=1024,1024,1024`)."""
    out = {}
    for text in values:
        name, sep, val = text.partition("=")
        try:
            parts = [int(v, 0) for v in val.split(",")]
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"{text!r}: expected NAME=INTEGER or NAME=I,J,K", param_hint="--arg")
        out[name.strip()] = parts[0] if len(parts) == 1 else parts
    return out


TILES = "--tiles"  # the work tiles per CTA travel with the --arg values (trip_counts_agree varies both)


def extract(path: str, kernel: str | None, args: dict, block_dim: int | None):
    """(TOML text, SourceMap, seconds) of the kernel's synchronisation."""
    from pipeproof.spec.mojo.build import build
    from pipeproof.spec.mojo.parse import Extractor, read_ir
    args = dict(args)
    tiles = args.pop(TILES, None)
    ex = Extractor(read_ir(path), path, kernel, args, block_dim, tiles)
    k = ex.run()
    name = Path(path).name.split(".")[0] + "::" + ex.k.name.lstrip("@")[:60]
    return build(k, name)


def trip_counts_agree(path, kernel, args: dict, block_dim, toml_text):
    """--prove with --arg values: re-extract with every given argument at v + 3 and 2v + 5 and
    compare the programs (the spec without its item counts), so the proof for every item count
    speaks for the kernel's other trip counts where its index and phase arithmetic gives the
    same program. (same?, [argument values]) or None without --arg (the trip counts are then
    the kernel's compile-time values: the compiled kernel is one of the item counts proved)."""
    from pipeproof.checker.cli.triton import _program
    from pipeproof.spec.schema import SpecError
    numeric = {k: v for k, v in args.items() if isinstance(v, (int, list))}
    if not numeric:
        return None
    base = _program(toml_text)
    tried = [dict(numeric)]
    for f in (lambda v: v + 3, lambda v: 2 * v + 5):
        other = {**args, **{k: [f(x) for x in v] if isinstance(v, list) else f(v)
                             for k, v in numeric.items()}}
        tried.append({k: other[k] for k in numeric})
        try:
            text, _ = extract(path, kernel, other, block_dim)
        except SpecError:
            return False, tried
        if _program(text) != base:
            return False, tried
    return True, tried


@click.command()
@click.argument("target")
@click.option("--target", "arch", type=click.Choice(["sm_90a", "sm_100a", "gfx942"]),
              help="KERNEL.mojo: the accelerator to compile for.")
@click.option("--arg", "args", multiple=True, metavar="NAME=V",
              help="A kernel argument's value (loop bounds): by name, or by position (2=8).")
@click.option("--kernel", metavar="NAME", help="The kernel (a file with several).")
@click.option("--block-dim", type=click.IntRange(min=1), metavar="N",
              help="Threads per block, where the IR does not state it (nvvm.maxntid).")
@click.option("--tiles", type=click.IntRange(min=1), metavar="N",
              help="Work tiles per CTA, for a kernel whose scheduler asks the hardware for its "
                   "next tile (clusterlaunchcontrol: sm100's persistent kernels).")
@click.option("--prove", "do_prove", is_flag=True,
              help="Prove the extracted spec for every item count (the lap abstraction).")
@click.option("--emit-spec", "emit", metavar="F.toml", help="Write the extracted spec here (else print it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--trace", "trace_file", metavar="F", help="Write the counterexample (*.itf.json or *.trace.json).")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop (inconclusive) after this many states.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop (inconclusive) after this many seconds.")
def mojo(target, arch, args, kernel, block_dim, tiles, do_prove, emit, as_json, trace_file, max_states, timeout):
    """Extract the synchronisation of a Mojo kernel (.ll from mojo build -g1 --emit llvm, or a
    .mojo file with --target) and check it."""
    from pipeproof.checker.cli.command import check_trace_name
    from pipeproof.checker.results import EXIT_USAGE
    from pipeproof.spec.load import load_spec_text
    from pipeproof.spec.schema import SpecError

    check_trace_name(trace_file)
    try:
        path = target
        args = {**_kv(args), **({TILES: tiles} if tiles is not None else {})}
        if target.endswith(".mojo"):
            if arch is None:
                raise SpecError(f"{target}: give --target sm_90a, sm_100a or gfx942 to compile it")
            files = compile_mojo(target, arch)
            if len(files) > 1 and kernel is None:
                raise SpecError(f"{target}: the build wrote {len(files)} kernels "
                                f"({', '.join(Path(f).name for f in files)}); name one with --kernel")
            path = next((f for f in files if kernel is None or kernel in Path(f).name), files[0])
            try:
                toml_text, source = extract(path, kernel, args, block_dim)
                same = trip_counts_agree(path, kernel, args, block_dim, toml_text) \
                    if do_prove else None
            finally:  # the build's folder (tens of MB of IR per kernel)
                shutil.rmtree(Path(files[0]).parent, ignore_errors=True)
        else:
            toml_text, source = extract(path, kernel, args, block_dim)
            same = trip_counts_agree(path, kernel, args, block_dim, toml_text) \
                if do_prove else None
        if emit:
            Path(emit).write_text(toml_text)
        spec = load_spec_text(toml_text, emit or f"{target} (extracted)")
    except SpecError as err:
        click.echo(str(err), err=True)
        sys.exit(EXIT_USAGE)
    from pipeproof.checker.cli.frontend import check_extracted, print_counterexample, show_extracted
    out = show_extracted(target, toml_text, emit, as_json)
    if not do_prove:
        same_lines = []
    elif same is None:
        same_lines = [f"{target}: the loop bounds are the kernel's compile-time values (no --arg): "
                      f"the compiled kernel's trip count is one of the item counts proved"]
    else:
        vals = "; ".join(", ".join(f"{k}={v}" for k, v in t.items()) for t in same[1])
        same_lines = [f"{target}: the extracted program is {'the same' if same[0] else 'NOT the same'}"
                      f" at --arg {vals}"
                      + ("" if same[0] else ": the proof covers the arguments given only")]
    checked = check_extracted(
        spec, target, lambda r: source_lines(r, source), out=out, as_json=as_json,
        do_prove=do_prove, same=same, same_lines=same_lines,
        same_json=same and {"same": same[0], "args": same[1]},
        rerun_hint="`pipeproof mojo` without --prove", max_states=max_states, timeout=timeout)
    code = checked.code
    print_counterexample(checked, target, out, trace_file,
                         lambda s: f"{s['partition']:<10} {s['line']}")
    sys.exit(code)
