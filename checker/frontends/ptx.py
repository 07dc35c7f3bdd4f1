"""The PTX front end's reader: a kernel's PTX (`.ptx`, `.ptx.gz`: the output of nvcc, ptxas's
input from any compiler: CUTLASS C++, the CuTe DSL, Triton, TileLang, Mojo), a `.cu` file
compiled with the CUDA compiler of the optional extra `pipeproof[cuda]` (docs/ptx.md). A thin adapter over spec/ptx/: run each warp
of the kernel, build through spec/frontend_core.py as the Mojo reader does.
"""
from __future__ import annotations

from pathlib import Path

from pipeproof.checker.frontends.protocol import (KernelIR, Reading, ReadOptions, TripCounts,
                                                  compare_at_other_args)
from pipeproof.spec.schema import SpecError

INSTALL = "pip install 'pipeproof[cuda]'"
TILES = "--tiles"


def read_text(path: str) -> str:
    from pipeproof.spec.mojo.parse import read_ir
    return read_ir(path, f"PTX: nvcc -ptx, or a .cu with {INSTALL}")


class PtxReader:
    """Reader (checker/frontends/protocol.py) of a kernel's PTX, through spec/ptx/."""

    name = "ptx"
    ir = "PTX of a CUDA kernel"
    rerun_hint = "`pipeproof ptx` without --prove"
    TILES = TILES

    def load(self, target: str, options: ReadOptions) -> KernelIR:
        if target.endswith(".cu"):
            from pipeproof.spec.ptx.toolchain import compile_cu
            return KernelIR(compile_cu(target, options.extra.get("arch") or "sm_90a",
                                       options.extra.get("include") or ()), target)
        if target.endswith(".cubin"):
            raise SpecError(f"{target}: a cubin holds SASS, not the PTX the protocol is read from; "
                            f"give the kernel's .ptx (the SASS check against ptxas's output is "
                            f"not built yet: docs/ptx.md)")
        text = read_text(target)
        if ".entry" not in text and ".version" not in text:
            raise SpecError(f"{target}: not PTX (no .version / .entry); pipeproof ptx reads "
                            f".ptx, .ptx.gz, .cu ({INSTALL}) and .cubin")
        return KernelIR(text, target)

    def extractor(self, ir: KernelIR, options: ReadOptions):
        from pipeproof.spec.ptx.extract import PtxExtractor
        args = dict(options.args)
        tiles = args.pop(TILES, None)
        return PtxExtractor(ir.text, ir.where, options.function, args,
                            options.extra.get("block_dim"), tiles, options.extra.get("cluster"),
                            options.extra.get("grid")), tiles

    def read(self, ir: KernelIR, options: ReadOptions) -> Reading:
        from pipeproof.spec.mojo.build import build
        from pipeproof.spec.ptx.build import PtxBuilder
        from pipeproof.spec.ptx.interp import GUESS
        ex, tiles = self.extractor(ir, options)
        kernel = ex.run()   # a reader bug: the driver's one line, exit 4 (InternalError)
        name = Path(ir.where).name.split(".")[0] + "::" + ex.kname.split("::")[-1][:60]
        launch = {"backend": "nvidia", "cluster": kernel.cluster, "block_dim": kernel.block_dim,
                  "warp_size": 32, "tiles": tiles, "args": dict(options.args),
                  "from": ex.launch_from, "guessed": ex.guessed_args(), "guess": GUESS}
        return Reading(ir, options, name, kernel.partitions, launch,
                       lambda: build(kernel, name, PtxBuilder))

    def trip_counts(self, reading: Reading, toml_text: str, target: str) -> TripCounts:
        """--prove: re-read with every given or guessed argument at v + 3 and 2v + 5 and compare
        the programs (as the Mojo reader does), so the proof for every item count speaks for
        the kernel's other trip counts where its index and phase arithmetic gives the same
        program."""
        from pipeproof.spec.ptx.interp import GUESS
        args = dict(reading.options.args)
        for name, off in reading.launch.get("guessed", ()):
            args.setdefault(f"{name}+{off}" if off else name, GUESS)
        numeric = {k: v for k, v in args.items() if isinstance(v, int) and k != TILES}
        if not numeric:
            return TripCounts(None, (f"{target}: no loop bound is a kernel argument: the kernel's "
                                     f"trip count is one of the item counts proved",))
        return compare_at_other_args(self, reading, toml_text, target, args, numeric)

    def sass_check(self, ir: KernelIR, options: ReadOptions, sass: str, arch: str | None):
        """(findings, SASS arrives compared, PTX arrives) of spec/ptx/sass_check.py for `sass`:
        a .cubin or nvdisasm text, or "ptxas" (assemble the PTX first)."""
        from pipeproof.spec.ptx.sass_check import assemble, check_arrives, sass_text
        ex, _ = self.extractor(ir, options)
        ex.run()
        text = assemble(ir.text, ir.where, arch or ex.m.target.split(",")[0].strip()) \
            if sass == "ptxas" else sass_text(sass)
        found, compared = check_arrives(ex.m, ex.arrive_lanes, text)
        return found, compared, len(ex.arrive_lanes)

    @staticmethod
    def step_text(step: dict) -> str:
        return f"{step['partition']:<10} {step['line']}"


READER = PtxReader()
