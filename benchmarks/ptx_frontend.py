"""pipeproof ptx on the committed PTX fixtures (tests/fixtures/ptx/): per fixture and arguments,
the verdict and kind (or the one-line refusal), states, extract seconds, check seconds, the peak
RSS of the process that did both, and the PTX's size (uncompressed text); then the time and peak
memory of just parsing the largest fixture (cutlass_ex70_sm100a.ptx.gz, 2.4 MB of PTX) with
spec/ptx/module.parse_module (the issue's target: reading the largest target and checking it
takes at most 10 s and 1 GB).

Each row runs in its own `python -c` subprocess (timeout 300 s: the row prints "timeout"), so its
peak RSS is that process's own (getrusage(RUSAGE_SELF).ru_maxrss, read in the child at its end):
- extract s: reading the PTX and building the spec, as the PTX reader does (checker/frontends/ptx.py):
  reader("ptx").load + read + Reading.build (the TOML text and the source map);
- check s: loading the emitted TOML and `verify` at the kernel's own item count, as
  checker/frontends/driver.check does for `pipeproof ptx` (the in-process API, so the
  interpreter's start and imports are not in it);
- a refusal (SpecError, at load, read or build) is printed as "refused: <first 80 chars>" (the
  child runs in tests/fixtures/ptx/, so a reason names the fixture by its short path), and in
  full under the table.
The whole child process (imports included) is what the peak RSS covers.

Run: python benchmarks/ptx_frontend.py [--only NAME]   (only the rows whose fixture path contains NAME)

Machine note: the numbers in benchmarks/results/ptx_frontend_*.txt come from a shared, noisy
machine with 2 cores; take the seconds as rough (repeat a row with --only before reading much
into a difference).
"""
import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "ptx"
TIMEOUT = 300

# (fixture relative to tests/fixtures/ptx/, kernel arguments {position: value}, block_dim,
# cluster, grid (CTAs along x: a persistent kernel's tiles per CTA))
FA4_SHAPES = {f"{p}+{o}": v for p in range(4) for o, v in ((0, 1024), (4, 128), (8, 16), (12, 2))}
ROWS = [
    ("hand_pc_sm90.ptx.gz", {"3": 6}, None, None, None),
    ("hand_pc_sm90.ptx.gz", {"3": 9}, None, None, None),
    ("triton/gluon_ring_rowsum_sm90.ptx.gz", {"6": 5}, None, None, None),
    ("triton/gluon_ring_rowsum_sm100.ptx.gz", {"6": 5}, None, None, None),
    ("triton/gluon_ring_matmul_sm90.ptx.gz", {"15": 512}, None, None, None),
    ("mojo/pc_nvidia.ptx.gz", {"2": 8}, 64, None, None),
    ("mojo/backend_phase_bug.ptx.gz", {"2": 8}, 64, None, None),
    ("mojo/backend_count_bug.ptx.gz", {"2": 8}, 64, None, None),
    ("cutlass_ex48_sm90a.ptx.gz", {}, None, 8, None),
    ("cutlass_pingpong_sm90a.ptx.gz", {}, None, 2, None),
    ("cutlass_ex70_sm100a.ptx.gz", {}, None, 4, None),
    ("dsl_hopper_gemm_sm90a.ptx.gz", {}, None, 2, 1024),
    ("dsl_blackwell_gemm_sm100a.ptx.gz", {}, None, 2, 1024),
    ("quack_gemm_sm90a.ptx.gz", {}, None, 2, None),
    ("fa4_fwd_sm90a.ptx.gz", FA4_SHAPES, None, None, None),
    ("tilelang_gemm_sm90a.ptx.gz", {}, None, None, None),
]
LARGEST = "cutlass_ex70_sm100a.ptx.gz"

ROW_CHILD = r'''
import json, resource, sys, time
cfg = json.loads(sys.argv[1])
out = {}
try:
    from pipeproof.spec.schema import SpecError
    from pipeproof.checker.frontends import reader, ReadOptions
    extra = {k: cfg[k] for k in ("block_dim", "cluster", "grid") if cfg[k] is not None}
    r = reader("ptx")
    o = ReadOptions(args=cfg["args"], extra=extra)
    t = time.perf_counter()
    try:
        ir = r.load(cfg["path"], o)
        reading = r.read(ir, o)
        toml_text, source = reading.build()
    except SpecError as err:
        out["refused"] = " ".join(str(err).split())
    out["extract_s"] = time.perf_counter() - t
    if "refused" not in out:
        from pipeproof.spec.load import load_spec_text
        from pipeproof.checker.engines import verify
        t = time.perf_counter()
        try:
            spec = load_spec_text(toml_text, cfg["path"] + " (extracted)")
            result = verify(spec)
        except SpecError as err:  # the built spec refused by the loader: a refusal too
            out["refused"] = " ".join(str(err).split())
        else:
            out.update(verdict=str(getattr(result.verdict, "value", result.verdict)),
                       kind=result.kind, states=result.states, limit=result.limit)
        out["check_s"] = time.perf_counter() - t
except Exception as err:
    out["error"] = f"{type(err).__name__}: {' '.join(str(err).split())}"
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("\nROW " + json.dumps(out))
'''

PARSE_CHILD = r'''
import gzip, json, resource, sys, time
path = sys.argv[1]
from pipeproof.spec.ptx.module import parse_module
with gzip.open(path, "rt") as fh:
    text = fh.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
module = parse_module(text, path)
secs = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
nfun = len(getattr(module, "functions", ()) or ())
print("\nROW " + json.dumps({"parse_s": secs, "peak_mb": peak, "before_mb": before, "functions": nfun}))
'''


def child(code: str, *argv: str) -> dict:
    """Run `code` in a fresh interpreter; its last `ROW {json}` line, or {"timeout": True}."""
    try:
        got = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                             timeout=TIMEOUT, cwd=FIX)  # reasons name the fixture relative to FIX
    except subprocess.TimeoutExpired:
        return {"timeout": True}
    for line in reversed(got.stdout.splitlines()):
        if line.startswith("ROW "):
            return json.loads(line[4:])
    tail = " ".join((got.stderr or got.stdout).strip().splitlines()[-1:])
    return {"error": f"exit {got.returncode}: {tail[:120]}"}


def ptx_mb(path: Path) -> float:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return len(fh.read()) / 1e6


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="only the rows whose fixture path contains NAME")
    opts = ap.parse_args()

    head = (f"{'fixture':<38} {'args':<12} {'verdict / kind':<44} {'states':>8} "
            f"{'extract s':>9} {'check s':>8} {'peak MB':>8} {'PTX MB':>7}")
    print(head)
    print("-" * len(head))
    reasons = []
    for rel, args, bd, cl, grid in ROWS:
        if opts.only and opts.only not in rel:
            continue
        path = FIX / rel
        cfg = {"path": rel, "args": args, "block_dim": bd, "cluster": cl, "grid": grid}
        got = child(ROW_CHILD, json.dumps(cfg))
        shown = {} if args is FA4_SHAPES else args   # the tensor shapes: "shapes"
        launch = ",".join([f"{k}={v}" for k, v in shown.items()] + (["shapes"] if shown is not args else [])
                          + ([f"bd={bd}"] if bd else []) + ([f"cl={cl}"] if cl else [])
                          + ([f"grid={grid}"] if grid else []))
        if got.get("timeout"):
            what = f"timeout ({TIMEOUT} s)"
        elif "error" in got:
            what = f"error: {got['error'][:80]}"
        elif "refused" in got:
            what = f"refused: {got['refused'][:80]}"
            reasons.append((rel, got["refused"]))
        else:
            what = got["verdict"] + (f" {got['kind']}" if got.get("kind") else "")
            if got.get("limit"):
                what += f" ({got['limit']})"
        print(f"{rel:<38} {launch or '-':<12} {what:<44} {fmt(got.get('states'), 'd'):>8} "
              f"{fmt(got.get('extract_s'), '.2f'):>9} {fmt(got.get('check_s'), '.2f'):>8} "
              f"{fmt(got.get('peak_mb'), '.0f'):>8} {ptx_mb(path):>7.2f}", flush=True)
    if reasons:
        print("\nrefusals in full:")
        for rel, why in reasons:
            print(f"  {rel}: {why}")

    if not opts.only or opts.only in LARGEST:
        path = FIX / LARGEST
        got = child(PARSE_CHILD, str(path))
        print()
        print(f"parse_module only, {LARGEST} ({ptx_mb(path):.2f} MB of PTX): ", end="")
        if got.get("timeout"):
            print(f"timeout ({TIMEOUT} s)")
        elif "error" in got:
            print(f"error: {got['error']}")
        else:
            print(f"{got['parse_s']:.2f} s, peak RSS {got['peak_mb']:.0f} MB "
                  f"({got['before_mb']:.0f} MB before parsing, text read), "
                  f"{got['functions']} functions")
        print("target (the issue): reading the largest target and checking it in at most 10 s and 1 GB")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")
