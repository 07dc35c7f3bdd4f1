"""`pipeproof mojo TARGET`: check a Mojo kernel's synchronisation from its compiled LLVM IR
(docs/mojo.md).

TARGET is a `.ll` / `.ll.gz` file (`mojo build -g1 --emit llvm`, read only, never run) or a
`.mojo` file, compiled with the installed Mojo toolchain for `--target` (the optional extra
`pipeproof[mojo]`). The extracted spec (spec/mojo/, through spec/frontend_core.py; the reader is
checker/frontends/mojo.py) is printed or written (`--emit-spec`), then checked by
`verify` (or `prove` with --prove: the driver, checker/frontends/driver.py, and the report,
checker/cli/frontend.py); every step of a counterexample names the role, the pipeline method
and the Mojo line. Exit codes as `verify`; a kernel the spec language cannot state yet is one
line, exit 2.
"""
from __future__ import annotations

import click

from pipeproof.checker.cli.frontend import parse_args as _kv


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
    from pipeproof.checker.cli.frontend import run_frontend
    from pipeproof.checker.frontends import ReadOptions, reader
    mojo_reader = reader("mojo")  # checker/frontends/mojo.py
    TILES = mojo_reader.TILES

    def read_kernel():  # --arg first, then the kernel: the order errors always came in
        options = ReadOptions(function=kernel,
                              args={**_kv(args), **({TILES: tiles} if tiles is not None else {})},
                              extra={"block_dim": block_dim, "arch": arch})
        return mojo_reader.load(target, options), options

    run_frontend(mojo_reader, target, read_kernel, emit=emit, as_json=as_json,
                 trace_file=trace_file, do_prove=do_prove, max_states=max_states, timeout=timeout)
