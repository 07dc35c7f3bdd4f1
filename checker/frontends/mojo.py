"""The Mojo front end's reader: a kernel's LLVM IR, a `.ll` / `.ll.gz` file (`mojo build -g1
--emit llvm`, read only, never run) or a `.mojo` file compiled with the installed Mojo
toolchain for `--target` (the optional extra `pipeproof[mojo]`) (docs/mojo.md). A thin adapter
over spec/mojo/: run each warp of the kernel, build through spec/frontend_core.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeproof.checker.frontends.protocol import (KernelIR, Reading, ReadOptions, TripCounts,
                                                  compare_at_other_args)
from pipeproof.spec.schema import SpecError

INSTALL = "pip install 'pipeproof[mojo]'"
TILES = "--tiles"  # the work tiles per CTA travel with the --arg values (trip_counts varies both)


def mojo_binary() -> str | None:
    found = shutil.which("mojo")
    if found:
        return found
    here = Path(sys.executable).parent / "mojo"
    return str(here) if here.exists() else None


def compile_mojo(path: str, target: str) -> list[str]:
    """Compile a host program for --target with -g1 and return the kernels' LLVM IR files."""
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


class MojoReader:
    """Reader (checker/frontends/protocol.py) of a Mojo kernel's LLVM IR, through spec/mojo/."""

    name = "mojo"
    ir = "LLVM IR of a Mojo kernel"
    rerun_hint = "`pipeproof mojo` without --prove"
    TILES = TILES   # the key of --tiles among the arguments

    def extract(self, path: str, kernel: str | None, args: dict, block_dim: int | None):
        """(TOML text, SourceMap) of the kernel in the IR file `path` (benchmarks, tests)."""
        options = ReadOptions(function=kernel, args=args, extra={"block_dim": block_dim})
        return self.read(self.load(path, options), options).build()

    def load(self, target: str, options: ReadOptions) -> KernelIR:
        """The IR of a .ll / .ll.gz file, or of the kernel a .mojo file's build writes for
        `options.extra["arch"]` (`options.function` picks one of several). The build's folder
        (tens of MB of IR per kernel) is removed once its IR is read."""
        from pipeproof.spec.mojo.parse import read_ir
        if not target.endswith(".mojo"):
            return KernelIR(read_ir(target), target)
        arch, kernel = options.extra.get("arch"), options.function
        if arch is None:
            raise SpecError(f"{target}: give --target sm_90a, sm_100a or gfx942 to compile it")
        files = compile_mojo(target, arch)
        try:
            if len(files) > 1 and kernel is None:
                raise SpecError(f"{target}: the build wrote {len(files)} kernels "
                                f"({', '.join(Path(f).name for f in files)}); name one with --kernel")
            path = next((f for f in files if kernel is None or kernel in Path(f).name), files[0])
            return KernelIR(read_ir(path), path)
        finally:
            shutil.rmtree(Path(files[0]).parent, ignore_errors=True)

    def read(self, ir: KernelIR, options: ReadOptions) -> Reading:
        """`options.args` by name or position (`TILES`: work tiles per CTA), `extra["block_dim"]`
        where the IR does not state the block size."""
        from pipeproof.spec.mojo.build import build
        from pipeproof.spec.mojo.parse import Extractor
        args = dict(options.args)
        tiles = args.pop(TILES, None)
        ex = Extractor(ir.text, ir.where, options.function, args, options.extra.get("block_dim"), tiles)
        kernel = ex.run()
        name = Path(ir.where).name.split(".")[0] + "::" + ex.k.name.lstrip("@")[:60]
        launch = {"backend": kernel.backend, "cluster": kernel.cluster, "block_dim": kernel.block_dim,
                  "warp_size": kernel.warp_size, "tiles": tiles, "args": args}
        return Reading(ir, options, name, kernel.partitions, launch, lambda: build(kernel, name))

    def trip_counts(self, reading: Reading, toml_text: str, target: str) -> TripCounts:
        """--prove with --arg values: re-extract with every given argument at v + 3 and 2v + 5
        and compare the programs, so the proof for every item count speaks for the kernel's
        other trip counts where its index and phase arithmetic gives the same program. Without
        --arg the trip counts are the kernel's compile-time values: the compiled kernel is one
        of the item counts proved."""
        args = reading.options.args
        numeric = {k: v for k, v in args.items() if isinstance(v, (int, list))}
        if not numeric:
            return TripCounts(None, (f"{target}: the loop bounds are the kernel's compile-time "
                                     f"values (no --arg): the compiled kernel's trip count is one "
                                     f"of the item counts proved",))
        return compare_at_other_args(self, reading, toml_text, target, args, numeric)

    @staticmethod
    def step_text(step: dict) -> str:
        return f"{step['partition']:<10} {step['line']}"


READER = MojoReader()
extract = READER.extract
