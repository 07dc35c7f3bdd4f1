"""Many agents (issue 32): seconds and states of `pipeproof verify` with partial-order reduction
(the default) and with `--no-por`, side by side, on specs of R roles x N agents.

The spec (`many_agents_toml`) is a standard nvidia ring with R/2 producer roles and R/2
consumer roles of N agents each, every agent one thread of its role: a producer waits on
empty, arrives once on full (producer 0's leader writes the slot first) and advances; a
consumer waits on full, reads, arrives once on empty and advances. full counts every producer
agent, empty every consumer agent; 1 stage and 1 item by default. It is correct, and its
interleavings multiply with every role: before issue 32 a 16 x 16 one ran past `--timeout 10`
for more than 10 minutes (the reduction's checks cost O(agents^2) per successor, and 50,000
states ran between two looks at the clock). Each run is the command in its own process, with
`--timeout` (default 60 s); the wall column is the whole process.

    python benchmarks/many_agents.py [--timeout S] [--sizes 8x8,16x16,64x64] [--out FILE]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "pipeproof.checker.cli.main"]


def many_agents_toml(roles: int, agents: int, stages: int = 1, items: int = 1) -> str:
    """A valid (and correct) ring of `roles` roles (half producers) of `agents` agents each."""
    producers = max(roles // 2, 1)
    consumers = max(roles - producers, 1)
    q = lambda body: "[" + ", ".join(f'"{op}"' for op in body) + "]"
    out = ["[pipeline]", f'name = "many agents: {roles} roles x {agents} agents"',
           'backend = "nvidia"', f"stages = {stages}",
           f"producer_arrive_count = {producers * agents}",
           f"consumer_arrive_count = {consumers * agents}", f"items = {items}", 'expect = "ok"', ""]
    for i in range(producers):
        body = ["wait_empty"] + (["write @leader"] if i == 0 else []) + ["arrive_full", "advance"]
        out += ["[[role]]", f'name = "producer{i}"', 'side = "producer"', f"count = {agents}",
                f"body = {q(body)}", ""]
    for i in range(consumers):
        out += ["[[role]]", f'name = "consumer{i}"', 'side = "consumer"', f"count = {agents}",
                f"body = {q(['wait_full', 'read', 'arrive_empty', 'advance'])}", ""]
    return "\n".join(out)


def run(path: str, timeout: float, extra=(), command: str = "verify") -> dict:
    """`pipeproof verify PATH` (or `prove`) in its own process: verdict, states (prove:
    abstract states), search and wall seconds, and peak memory in MB (through /usr/bin/time -v
    where it is installed, else nan)."""
    timer = ["/usr/bin/time", "-v"] if shutil.which("/usr/bin/time") else []
    started = time.monotonic()
    proc = subprocess.run(timer + CLI + [command, path, "--timeout", str(timeout), *extra],
                          capture_output=True, text=True)
    wall = time.monotonic() - started
    m = re.search(r"^([\d,]+) states, ([\d,]+) transitions.*?([\d.]+) s search", proc.stdout, re.M)
    if command == "prove":
        m = re.search(r"([\d,]+) abstract states()().*?", proc.stdout)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    verdict = proc.stdout.split(": ", 2)[1].split(" ")[0] if ": " in proc.stdout else "?"
    return {"verdict": verdict.rstrip(":"), "states": int(m.group(1).replace(",", "")) if m else -1,
            "search": float(m.group(3)) if m and m.group(3) else float("nan"), "wall": wall,
            "mb": int(rss.group(1)) / 1024 if rss else float("nan"), "exit": proc.returncode}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--sizes", default="8x8,16x16,64x64")
    ap.add_argument("--out")
    args = ap.parse_args()
    subprocess.run(CLI + ["verify", str(Path(__file__).resolve().parents[1] / "spec" / "examples"
                                        / "mojo_pcp_nvidia.toml")],
                   capture_output=True, env=dict(os.environ, PIPEPROOF_JIT="1"))  # warm
    lines = [f"# benchmarks/many_agents.py --timeout {args.timeout:g} ({os.cpu_count()} cpus, "
             f"{time.strftime('%Y-%m-%d')}); R roles x N agents, 1 stage, 1 item",
             f"{'spec':>8}  {'POR: verdict':>13} {'states':>9} {'search s':>8} {'wall s':>7}"
             f"   {'--no-por: verdict':>17} {'states':>9} {'search s':>8} {'wall s':>7}"]
    print(lines[0], flush=True)
    print(lines[1], flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes.split(","):
            roles, agents = (int(x) for x in size.split("x"))
            path = os.path.join(tmp, f"many_{size}.toml")
            Path(path).write_text(many_agents_toml(roles, agents))
            on, off = run(path, args.timeout), run(path, args.timeout, ["--no-por"])
            line = (f"{size:>8}  {on['verdict']:>13} {on['states']:>9,} {on['search']:>8.2f} "
                    f"{on['wall']:>7.2f}   {off['verdict']:>17} {off['states']:>9,} "
                    f"{off['search']:>8.2f} {off['wall']:>7.2f}")
            lines.append(line)
            print(line, flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
