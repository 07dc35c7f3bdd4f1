"""`pipeproof ptx KERNEL`: check a CUDA kernel's synchronisation from its PTX (docs/ptx.md).

KERNEL is a `.ptx` / `.ptx.gz` file (read only, never run) or a `.cu` file compiled with the
CUDA compiler of the optional extra `pipeproof[cuda]` (`--arch`, `-I`). The launch
configuration comes from the kernel's `.reqntid` / `.maxntid` and `.reqnctapercluster`, else
`--block-dim` / `--cluster`; a loop bound that is a kernel argument comes from `--arg`, else
pipeproof picks a small value and says which. Exit codes as `verify`; a kernel it cannot read is one line
naming the PTX line and the source line, exit 2.
"""
from __future__ import annotations

import sys

import click

from pipeproof.checker.cli.frontend import parse_args as _kv


@click.command()
@click.argument("target")
@click.option("--arch", type=click.Choice(["sm_90a", "sm_100a"]),
              help="KERNEL.cu: the architecture to compile for (default sm_90a).")
@click.option("--kernel", metavar="NAME", help="The kernel (a module with several): part of its name.")
@click.option("--arg", "args", multiple=True, metavar="NAME=V",
              help="A kernel argument's value (loop bounds): by .param name or position (3=8), "
                   "or N+OFFSET=V for a word of struct parameter N.")
@click.option("-I", "include", multiple=True, metavar="DIR", help="KERNEL.cu: an include folder.")
@click.option("--block-dim", type=click.IntRange(min=1), metavar="N",
              help="Threads per block, where the PTX does not state it (.reqntid / .maxntid).")
@click.option("--cluster", type=click.IntRange(min=1), metavar="N",
              help="CTAs per cluster, where the PTX does not state it (.reqnctapercluster).")
@click.option("--grid", type=click.IntRange(min=1), metavar="N",
              help="CTAs in the grid along x (%nctaid.x; default: one cluster): a persistent "
                   "kernel's loop over tiles runs tiles / N times.")
@click.option("--tiles", type=click.IntRange(min=1), metavar="N",
              help="Work tiles per CTA, for a kernel whose scheduler asks the hardware for its "
                   "next tile (clusterlaunchcontrol).")
@click.option("--sass", "sass", metavar="FILE|ptxas",
              help="Also check that ptxas kept the PTX's arrives: FILE a .cubin or nvdisasm -gi "
                   "output (.sass, .sass.gz); `ptxas` assembles the PTX first (the cuda extra).")
@click.option("--prove", "do_prove", is_flag=True,
              help="Prove the extracted spec for every item count (the lap abstraction).")
@click.option("--emit-spec", "emit", metavar="F.toml", help="Write the extracted spec here (else print it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--trace", "trace_file", metavar="F", help="Write the counterexample (*.itf.json or *.trace.json).")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop (inconclusive) after this many states.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop (inconclusive) after this many seconds.")
def ptx(target, arch, kernel, args, include, block_dim, cluster, grid, tiles, sass, do_prove, emit,
        as_json, trace_file, max_states, timeout):
    """Extract the synchronisation of a CUDA kernel from its PTX (.ptx, or .cu with the CUDA
    compiler) and check it."""
    from pipeproof.checker.cli.frontend import run_frontend
    from pipeproof.checker.frontends import ReadOptions, reader
    ptx_reader = reader("ptx")  # checker/frontends/ptx.py
    TILES = ptx_reader.TILES

    def read_kernel():
        options = ReadOptions(function=kernel,
                              args={**_kv(args), **({TILES: tiles} if tiles is not None else {})},
                              extra={"block_dim": block_dim, "cluster": cluster, "grid": grid, "arch": arch,
                                     "include": include})
        return ptx_reader.load(target, options), options

    found = sass_findings(ptx_reader, target, read_kernel, sass, arch) if sass else []
    try:
        run_frontend(ptx_reader, target, read_kernel, emit=emit, as_json=as_json,
                     trace_file=trace_file, do_prove=do_prove, max_states=max_states, timeout=timeout)
    except SystemExit as done:
        code = done.code or 0
        for f in found:   # after the model's verdict, on the report's stream
            click.echo(f.text(), err=as_json)
        if found and code == 0:
            sys.exit(1)   # the SASS counts more arrivals than the PTX: a violation of the binary
        raise


def sass_findings(ptx_reader, target, read_kernel, sass, arch) -> list:
    """The SASS check (checker/frontends/ptx.py: the reader's): its findings, after a line
    saying what it compared. A kernel or SASS it cannot read is one line, exit 2."""
    from pipeproof.spec.schema import SpecError
    try:
        ir, options = read_kernel()
        found, compared, arrives = ptx_reader.sass_check(ir, options, sass, arch)
    except SpecError as err:
        click.echo(str(err), err=True)
        sys.exit(2)
    click.echo(f"{target}: SASS check: {compared} SASS arrive{'s' if compared != 1 else ''} at "
               f"the source lines of {arrives} PTX arrive{'s' if arrives != 1 else ''}, "
               f"{len(found)} over-arriving", err=True)
    return found
