"""`pipeproof triton TARGET`: check a Triton or Gluon kernel's synchronisation (docs/triton.md).

TARGET is a TTGIR file (`compiled.asm["ttgir"]`, or an MLIR_ENABLE_DUMP dump) or
`KERNEL.py::NAME`, a kernel the user names: the file's `KERNELS[NAME]` entry (fn, signature,
constexprs, target, options; tests/triton_kernels/*.py are examples) is compiled with the
installed Triton, on the CPU. The extracted spec (spec/ttgir/, through the reader
checker/frontends/triton.py) is printed or written (`--emit-spec`), then checked by
`verify` (or `prove` with --prove; the driver, checker/frontends/driver.py, and the report,
checker/cli/frontend.py); every step of a counterexample names the partition, the IR op and the
kernel line it came from. Exit codes as `verify`.
"""
from __future__ import annotations

import click


def _kv(values) -> dict:
    out = {}
    for text in values:
        name, sep, val = text.partition("=")
        try:
            out[name.strip()] = int(val, 0)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"{text!r}: expected NAME=INTEGER", param_hint="--arg")
    return out


@click.command()
@click.argument("target")
@click.option("--arg", "args", multiple=True, metavar="NAME=V",
              help="A kernel argument's value (loop bounds and indices need them).")
@click.option("--trip-count", type=click.IntRange(min=0), metavar="N",
              help="Run every loop whose bounds are not known from --arg N times.")
@click.option("--warps", "per_warp", is_flag=True,
              help="One agent per warp of each partition, with the barrier lowering of --lowering.")
@click.option("--lowering", metavar="VERSION",
              help="With --warps: the Triton release whose lowering to model (default: the "
                   "installed Triton's, else the newest known).")
@click.option("--function", "func", metavar="FN", help="The tt.func to check (a file with several).")
@click.option("--target", "gpu", type=click.Choice(["sm90", "sm100"]), default="sm100", show_default=True,
              help="KERNEL.py::FN of a plain @triton.jit or @gluon.jit function: the GPU to compile for.")
@click.option("--signature", "signature", multiple=True, metavar="NAME=TYPE",
              help="KERNEL.py::FN: a parameter's Triton type (i32, *fp16, tensordesc<fp16[128, 64]>).")
@click.option("--constexpr", "constexprs", multiple=True, metavar="NAME=V",
              help="KERNEL.py::FN: a constexpr parameter's value.")
@click.option("--num-warps", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--num-stages", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--emit-spec", "emit", metavar="F.toml", help="Write the extracted spec here (else print it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--trace", "trace_file", metavar="F", help="Write the counterexample (*.itf.json or *.trace.json).")
@click.option("--prove", "do_prove", is_flag=True, help="Prove the extracted spec for every item count.")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop (inconclusive) after this many states.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop (inconclusive) after this many seconds.")
@click.option("--strict-exit", is_flag=True,
              help="A CTA that exits with its own copies or commits still in flight (e.g. the last "
                   "tcgen05 commits nothing waits for) is inflight_at_exit, not the warning "
                   "unawaited_at_exit.")
@click.option("--sarif", "sarif_file", metavar="F",
              help="Also write the verdict as SARIF 2.1.0, on the kernel's line (checker/results/sarif.py).")
def triton(target, args, trip_count, per_warp, lowering, func, gpu, signature, constexprs, num_warps,
           num_stages, emit, as_json, trace_file, do_prove, max_states, timeout, strict_exit,
           sarif_file=None):
    """Extract the synchronisation of a Triton/Gluon kernel (TTGIR or KERNEL.py::NAME) and check it."""
    from pipeproof.checker.cli.frontend import run_frontend
    from pipeproof.checker.frontends import ReadOptions, reader
    triton_reader = reader("triton")  # checker/frontends/triton.py

    def read_kernel():  # the kernel, then --lowering, then --arg: the order errors always came in
        compile_options = dict(gpu=gpu, signature=signature, constexprs=constexprs,
                               num_warps=num_warps, num_stages=num_stages)
        ir = triton_reader.load(target, ReadOptions(extra=compile_options))
        low = triton_reader.lowering(lowering) if per_warp else None
        return ir, ReadOptions(function=func, args=_kv(args), trip_count=trip_count,
                               extra={"lowering": low})

    run_frontend(triton_reader, target, read_kernel, emit=emit, as_json=as_json,
                 trace_file=trace_file, do_prove=do_prove, max_states=max_states, timeout=timeout,
                 strict_exit=strict_exit, sarif_file=sarif_file)
