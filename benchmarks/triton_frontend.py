"""The Triton front end on real compiler output (issue 19's report): every kernel of
tests/triton_kernels compiled by the installed Triton on the CPU, extracted and verified
(`pipeproof triton --json`, whole process), then every mutation of
tests/triton_kernels/mutations.py. Prints verdict, kind, states, extraction + check seconds.

    python benchmarks/triton_frontend.py [--warps]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120  # a check past it is inconclusive (issue 35's goal for --warps: 60 s)
KERNELS = ROOT / "tests" / "triton_kernels"
ARGS = {
    "gluon_ring_rowsum_sm90": ["--arg", "n_tiles=5"], "gluon_ring_rowsum_sm100": ["--arg", "n_tiles=5"],
    "gluon_ring_matmul_sm100": ["--arg", "K=512"], "gluon_ring_matmul_drained_sm100": ["--arg", "K=512"],
    "gluon_ring_matmul_sm90": ["--arg", "K=512"], "sm90_pipelined": ["--arg", "K=512"],
    "sm90_pipelined_s2": ["--arg", "K=512"], "sm90_pipelined_s4": ["--arg", "K=512"],
    "ws_matmul_sm100": ["--arg", "M=256", "--arg", "N=128", "--arg", "K=256"],
    "ws_attention_sm100": ["--arg", "N_CTX=512"], "gluon_cpasync_arrive_sm90": [],
}


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"pp_bench_{name}", KERNELS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check(path: Path, args) -> tuple[str, str, int, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "pipeproof.checker.cli.main", "triton", str(path),
                          "--json", "--timeout", str(TIMEOUT_S), *args], capture_output=True,
                         text=True)
    seconds = time.perf_counter() - start
    if out.returncode == 2:
        return "refused", out.stderr.strip().splitlines()[-1][:90], 0, seconds
    doc = json.loads(out.stdout)
    kind = doc["violation"]["kind"] if doc["verdict"] == "violation" else ""
    if not kind and doc.get("warnings"):  # ok, with a warning (unawaited_at_exit)
        kind = "warning: " + ", ".join(w["kind"] for w in doc["warnings"])
    return doc["verdict"], kind, doc["states"], seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warps", action="store_true", help="one agent per warp (--warps)")
    opts = parser.parse_args(argv)
    import triton
    dump, mutations = _module("dump_ttgir"), _module("mutations")
    extra = ["--warps"] if opts.warps else []
    work = Path(tempfile.mkdtemp())
    print(f"$ python benchmarks/triton_frontend.py{' --warps' if opts.warps else ''}")
    print(f"Triton {triton.__version__} (CPU compile); seconds: one `pipeproof triton` process")
    print(f"{'kernel / mutation':<62} {'verdict':<10} {'kind / warning':<26} {'states':>8} {'s':>6}")
    paths = {}
    for name, entry in dump.kernels():
        paths[name] = work / f"{name}.ttgir"
        paths[name].write_text(dump.compile_entry(entry).asm["ttgir"])
        verdict, kind, states, s = check(paths[name], ARGS.get(name, []) + extra)
        print(f"{name:<62} {verdict:<10} {kind:<26} {states:>8,} {s:>6.2f}")
    for m in mutations.MUTATIONS:
        text = m.transform(paths[m.kernel].read_text())
        path = work / f"{m.name.replace(':', '_')}.ttgir"
        path.write_text(text)
        verdict, kind, states, s = check(path, list(m.args) + extra)
        label = f"  {m.kernel} / {m.name.split(':')[0]}"
        print(f"{label:<62} {verdict:<10} {kind:<26} "
              f"{states:>8,} {s:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
