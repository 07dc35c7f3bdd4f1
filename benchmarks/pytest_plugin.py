"""What `pytest --pipeproof` costs (issue 36's target: at most 1 s per distinct specialisation,
about nothing when cached), on this machine, without a GPU.

    python benchmarks/pytest_plugin.py [--repeat 3] [--out FILE]

It writes a test file into a temporary folder whose tests compile every kernel of
tests/triton_kernels/ (sm90 and sm100, Triton's own and Gluon's; TTGIR on the CPU, as
tests/test_triton_frontend.py does) plus the ring of tests/fixtures/pytest_plugin/ at 3 depths
and 2 targets (stock and two bugs), each test with `@pytest.mark.pipeproof(args=...)` (the
trip counts a launch would give), and runs pytest on it in a fresh process, four ways:

    plain        pytest                        (Triton's own cache already warm)
    uncached     pytest --pipeproof --cache-clear
    cached       pytest --pipeproof            (the results from .pytest_cache/d/pipeproof)
    prove        pytest --pipeproof-prove --cache-clear --pipeproof-timeout=5

The overhead is (wall of a --pipeproof run - wall of the plain run) / the distinct kernel checks
the summary lists. Each way runs --repeat times, the median is reported, with the per-kernel
lines of the last uncached run (verdict, states, seconds).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = {"n_tiles": 5, "K": 512, "M": 256, "N": 128, "N_CTX": 512}

TEST_FILE = '''
import importlib.util, os, sys
import pytest
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
sys.path.insert(0, {fixture!r})
spec = importlib.util.spec_from_file_location("bench_dump_ttgir", {dump!r})
dump = importlib.util.module_from_spec(spec); spec.loader.exec_module(dump)
KERNELS = dict(dump.kernels())
from ring_kernels import compile_rowsum

@pytest.mark.pipeproof(args={args!r})
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel(name):
    dump.compile_entry(KERNELS[name])

@pytest.mark.pipeproof(args={args!r})
@pytest.mark.parametrize("arch", [90, 100])
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("bug", [0, 1, 2])
def test_ring(arch, stages, bug):
    compile_rowsum(arch=arch, stages=stages, bug=bug)
'''


def run(folder: Path, *flags: str) -> tuple[float, str]:
    env = dict(os.environ, TRITON_DEFAULT_FP_FUSION="1", PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           "test_bench.py", *flags], cwd=folder, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return wall, proc.stdout


def checks_of(out: str) -> list[str]:
    if "= pipeproof =" not in out:
        return []
    section = out.split("= pipeproof =", 1)[1].split("\n", 1)[1]
    lines = []
    for line in section.splitlines():
        if line.startswith("=") or re.match(r"^\d+ kernel checks", line):
            if re.match(r"^\d+ kernel checks", line):
                lines.append(line)
            break
        lines.append(line.rstrip())
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="also write the report here")
    a = ap.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="pipeproof-bench-"))
    (folder / "test_bench.py").write_text(TEST_FILE.format(
        fixture=str(ROOT / "tests" / "fixtures" / "pytest_plugin"),
        dump=str(ROOT / "tests" / "triton_kernels" / "dump_ttgir.py"), args=ARGS))
    run(folder)  # warms Triton's own compile cache (~/.triton) and the numba engines' cache
    run(folder, "--pipeproof", "--cache-clear")
    ways = {"plain": (), "uncached": ("--pipeproof", "--cache-clear"), "cached": ("--pipeproof",),
            "prove": ("--pipeproof-prove", "--cache-clear", "--pipeproof-timeout=5")}
    walls = {k: [] for k in ways}
    outs = {}
    for _ in range(a.repeat):
        for way, flags in ways.items():
            if way == "cached":
                run(folder, "--pipeproof")  # (the uncached run of this round stored them)
            wall, out = run(folder, *flags)
            walls[way].append(wall)
            outs[way] = out
    med = {k: statistics.median(v) for k, v in walls.items()}
    uncached = checks_of(outs["uncached"])
    n = sum(1 for line in uncached if line and not re.match(r"^\d+ kernel checks", line))
    tests = re.search(r"(\d+ (?:passed|failed).*?) in ", outs["plain"])
    report = [
        f"benchmarks/pytest_plugin.py --repeat {a.repeat} (python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, no GPU; kernels compiled for sm90/sm100 on the CPU)",
        f"test file: {tests.group(1) if tests else '?'} without the plugin; "
        f"{n} distinct kernel checks with it",
        "",
        f"{'way':<10} {'median wall':>12}  {'runs':<30} overhead per distinct check",
    ]
    for way in ways:
        over = (med[way] - med["plain"]) / n if n and way != "plain" else None
        report.append(f"{way:<10} {med[way]:>10.2f} s  "
                      f"{', '.join(f'{w:.2f}' for w in walls[way]):<30} "
                      + ("" if over is None else f"{over:+.3f} s"))
    report += ["", "pytest --pipeproof --cache-clear (the last run's summary):"]
    report += ["  " + line for line in uncached]
    report += ["", "pytest --pipeproof (cached; the last run's summary, first 3 and the total):"]
    cached = checks_of(outs["cached"])
    report += ["  " + line for line in cached[:3] + cached[-1:]]
    report += ["", "pytest --pipeproof-prove --cache-clear (the last run's summary):"]
    report += ["  " + line for line in checks_of(outs["prove"])]
    text = "\n".join(report) + "\n"
    print(text, end="")
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
