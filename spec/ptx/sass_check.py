"""Did ptxas keep the protocol the PTX states? The arrive check (docs/ptx.md "The SASS check").

For each arrive of the PTX (`mbarrier.arrive`, `arrive.expect_tx`), the reader knows how many
lanes of a warp execute it (1 where a predicate or `elect.sync` picks one lane). ptxas keeps the
`.loc` lines of the PTX in the cubin's line table, so the SASS instructions of the same source
line (the innermost frame, `nvdisasm -g/-gi`) are the ones it made of that arrive. A SASS arrive
there that counts more lanes than the PTX arrive runs in (`spec/ptx/sass.py` over_arrival: a
`USYNCS.ARRIVE...ACT0`, which counts every active lane, or a per-lane arrive that more lanes
reach) is an `over_arrival` at that SASS instruction: the failure triton-lang/triton#11858
measured for ptxas 13.4. Source lines match by file name and line; an arrive whose line has no
SASS arrive is not reported (ptxas may merge it into a neighbour's).
"""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipeproof.spec.ptx.sass import classify, over_arrival, parse_sass, run_nvdisasm
from pipeproof.spec.schema import SpecError


@dataclass(frozen=True)
class SassFinding:
    function: str
    addr: int
    opcode: str
    where: str          # file:line of the source
    ptx_line: int       # the PTX arrive's line (1-based)
    lanes: int          # lanes per warp the PTX arrive runs in

    def text(self) -> str:
        return (f"{self.where}: over_arrival in the SASS: {self.function}+{self.addr:#06x} "
                f"`{self.opcode}` counts more lanes than the PTX arrive at PTX line "
                f"{self.ptx_line}, which {self.lanes} lane{'s' if self.lanes != 1 else ''} of a "
                f"warp run{'' if self.lanes != 1 else 's'}")


def sass_text(path: str) -> str:
    """nvdisasm text from a .cubin (nvdisasm -gi -c) or a saved .sass / .sass.gz."""
    if path.endswith(".cubin"):
        return run_nvdisasm(path)
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: cannot read it as nvdisasm output ({err})") from None


def assemble(ptx_text: str, where: str, target: str) -> str:
    """SASS of the PTX: ptxas (the cuda extra's, or on PATH) to a cubin, then nvdisasm."""
    from pipeproof.spec.ptx.toolchain import INSTALL, find_tool
    ptxas = find_tool("ptxas")
    if ptxas is None:
        raise SpecError(f"{where}: --sass ptxas needs ptxas ({INSTALL}); --sass FILE takes a "
                        f"cubin or nvdisasm output")
    out = Path(tempfile.mkdtemp(prefix="pipeproof-sass-"))
    try:
        (out / "k.ptx").write_text(ptx_text)
        got = subprocess.run([ptxas, f"-arch={target}", "-lineinfo", str(out / "k.ptx"), "-o",
                              str(out / "k.cubin")], capture_output=True, text=True)
        if got.returncode != 0:
            raise SpecError(f"{where}: ptxas failed: {(got.stderr.strip().splitlines() or ['?'])[-1]}")
        return run_nvdisasm(str(out / "k.cubin"))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def check_arrives(module, arrive_lanes: dict, sass: str) -> tuple[list, int]:
    """(findings, SASS arrives compared) for the PTX arrives `arrive_lanes` (Inst -> lanes per
    warp) against the SASS text of the same kernel."""
    by_line = {}
    for inst, lanes in arrive_lanes.items():
        loc = inst.raw_loc or inst.loc
        if loc is None:
            continue
        key = (os.path.basename(module.files.get(loc.file, "?")), loc.line)
        by_line.setdefault(key, []).append((inst, lanes))
    findings, compared = [], 0
    for func in parse_sass(sass):
        for i, si in enumerate(func.insts):
            op = classify(si)
            if op is None or op.kind not in ("arrive", "arrive_cpasync") or not si.loc:
                continue
            key = (os.path.basename(si.loc[0][0]), si.loc[0][1])
            if key not in by_line:
                continue
            compared += 1
            inst, lanes = max(by_line[key], key=lambda x: x[1])
            if over_arrival(func, i, lanes):
                findings.append(SassFinding(func.name[:40], si.addr, si.opcode, f"{key[0]}:{key[1]}",
                                            inst.index + 1, lanes))
    return findings, compared
