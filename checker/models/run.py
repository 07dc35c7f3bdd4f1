"""Running SPIN and Rumur on an export: compile steps, one time budget, the verdict parsed.

`run_spin(spec, workdir)` and `run_rumur(spec, workdir)` write the model, build the verifier
and run it; `ToolRun` is what came out (verdict, the kind named, states, time, memory).
"""
from __future__ import annotations

import os
import platform
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeproof.checker.models.ir import IR
from pipeproof.checker.models.murphi import to_murphi
from pipeproof.checker.models.promela import to_promela
from pipeproof.spec.schema import Spec
from pipeproof.spec.vocabulary import KINDS as RESULT_KINDS

# the contract's kinds, and the exports' own: a model's in-flight capacity exceeded
KINDS = RESULT_KINDS + ("inflight_capacity",)


@dataclass
class ToolRun:
    """One external check: the verdict it reached, what it counted and what it cost."""
    tool: str
    verdict: str          # ok | violation | inconclusive | timeout | failed
    kind: str | None      # the violation kind the tool named (first word of its report)
    states: int | None
    seconds: float        # wall time of every step, C compiles included
    check_seconds: float  # wall time of the verifier binary alone
    peak_kb: int          # largest resident set of any step (the compiler's included)
    check_peak_kb: int    # largest resident set of the verifier binary alone
    output: str           # the verifier's report (or the failing step's)


def measured(cmd, cwd=None, timeout=None, env=None, stdout_only=False):
    """Run `cmd` as a whole process (its own session, killed with its children at `timeout`):
    (exit code or None on timeout, output, wall seconds, peak RSS in KiB). The output is stdout
    then stderr, or stdout alone.

    The peak comes from GNU time (`/usr/bin/time -f %M`) when it is installed: a child forked
    straight from this (large) Python process reports at least this process's own peak in its
    ru_maxrss, because Linux carries the high-water mark across exec. Without GNU time the
    wait4 figure is used, an upper bound."""
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with tempfile.TemporaryFile() as log, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss_file:
        full = ([gnu_time, "-f", "%M", "-o", rss_file.name] if gnu_time else []) + list(cmd)
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, cwd=cwd, stdout=log, stderr=err,
                                start_new_session=True, env=env)
        fired = []

        def kill():
            fired.append(True)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        log.seek(0)
        err.seek(0)
        out = log.read().decode(errors="replace")
        if not stdout_only:
            out += err.read().decode(errors="replace")
        peak = int(usage.ru_maxrss)
        if gnu_time:
            lines = [ln for ln in rss_file.read().split() if ln.isdigit()]
            peak = int(lines[-1]) if lines else 0  # 0: unknown (killed at the timeout)
    return (None if fired else proc.returncode), out, wall, peak


def _pipeline(tool, steps, cwd, timeout, parse):
    """Run compile/check steps one after another under one time budget."""
    total, peak = 0.0, 0
    out = ""
    for i, cmd in enumerate(steps):
        left = None if timeout is None else max(timeout - total, 0.01)
        code, out, wall, rss = measured(cmd, cwd, left)
        total += wall
        peak = max(peak, rss)
        last = i == len(steps) - 1
        if code is None:
            return ToolRun(tool, "timeout", None, None, total, wall if last else 0.0, peak,
                           rss if last else 0, out)
        if not last and code != 0:
            return ToolRun(tool, "failed", None, None, total, 0.0, peak, 0,
                           f"{' '.join(cmd)}: exit {code}\n{out}")
    verdict, kind, states = parse(code, out)
    return ToolRun(tool, verdict, kind, states, total, wall, peak, rss, out)


def _kind_in(text: str):
    for k in KINDS:
        if k in text:
            return k
    return None


def parse_spin(code, out):
    """(verdict, kind, states stored) from a pan report."""
    m = re.search(r"(\d+) states, stored", out)
    states = int(m.group(1)) if m else None
    errors = re.search(r"errors: (\d+)", out)
    if errors is None:
        return "failed", None, states
    if int(errors.group(1)) > 0:
        line = next((ln for ln in out.splitlines() if ln.startswith("pan:")
                     and ("assertion violated" in ln or "invalid end state" in ln)), "")
        if "invalid end state" in line:
            return "violation", "deadlock", states
        kind = _kind_in(line)
        if kind == "inflight_capacity":
            return "inconclusive", kind, states
        return ("violation" if kind else "failed"), kind, states
    if "reached -DMEMLIM bound" in out or "max search depth too small" in out:
        return "inconclusive", None, states
    return "ok", None, states


def parse_rumur(code, out):
    """(verdict, kind, states) from a Rumur verifier's report. The kind is read from the error
    line the verifier prints (our error strings and invariant names begin with it); an error
    that names no kind (a value out of its range, say) is a failure of the export, not a
    violation."""
    m = re.search(r"(\d+) states, (\d+) rules fired", out)
    states = int(m.group(1)) if m else None
    if "No error found" in out and code == 0:
        return "ok", None, states
    lines = out.splitlines()
    marker = next((i for i, ln in enumerate(lines) if "error trace for the error" in ln), None)
    if marker is None:
        return "failed", None, states
    error = next((ln.strip() for ln in lines[marker + 1:] if ln.strip()), "")
    kind = _kind_in(error)
    if kind == "inflight_capacity":
        return "inconclusive", kind, states
    return ("violation" if kind else "failed"), kind, states


def spin_steps(model_file: str, depth: int = 100000, cc: str = "cc", memlim_mb: int | None = None,
               extra_cflags=(), opt: str = "-O2", vectorsz: int | None = None):
    """`vectorsz`: pan's -DVECTORSZ (the largest state vector in bytes; pan's default is 1024,
    which a cluster's model outgrows: spin_vectorsz)."""
    flags = ([opt] + ([f"-DMEMLIM={memlim_mb}"] if memlim_mb else [])
             + ([f"-DVECTORSZ={vectorsz}"] if vectorsz and vectorsz > 1024 else []) + list(extra_cflags))
    return [["spin", "-a", model_file], [cc, *flags, "-w", "-o", "pan", "pan.c"], ["./pan", f"-m{depth}"]]


# Rumur's verifier uses 16-byte compare-and-swap on x86-64 (its README: compile with -mcx16).
_CX16 = ["-mcx16"] if platform.machine() in ("x86_64", "AMD64") else []


def rumur_steps(model_file: str, symmetry: bool = False, threads: int = 1, cc: str = "cc",
                opt: str = "-O2"):
    return [["rumur", "--deadlock-detection", "stuck",
             "--symmetry-reduction", "heuristic" if symmetry else "off",
             "--threads", str(threads), "--counterexample-trace", "off", model_file, "-o", "checker.c"],
            [cc, "-std=c11", opt, *_CX16, "-w", "-o", "checker", "checker.c", "-lpthread"],
            ["./checker"]]


def search_depth(spec: Spec) -> int:
    """A depth bound for pan's DFS stack that every run of `spec` stays under."""
    ir = IR(spec, "promela")
    return 2 * ir.total_steps + 4 * ir.n_agents + 1000


def spin_vectorsz(spec: Spec) -> int:
    """An upper bound on the bytes of the Promela model's state vector: at most 4 bytes per
    field of pipeproof's state vector (the Promela globals are the same fields, most of them
    bytes), the processes' own fields and pan's overhead."""
    ir = IR(spec, "promela")
    return 4 * ir.model.n_fields + 16 * (ir.n_agents + 3) + 1024


def run_spin(spec: Spec, workdir, timeout: float | None = None, strict_exit: bool = False,
             **kw) -> ToolRun:
    """Export `spec` to Promela in `workdir`, then spin -a, cc -O2 and ./pan (one budget);
    `strict_exit` as to_promela's."""
    Path(workdir, "model.pml").write_text(to_promela(spec, strict_exit=strict_exit))
    kw.setdefault("vectorsz", spin_vectorsz(spec))
    return _pipeline("spin", spin_steps("model.pml", search_depth(spec), **kw), str(workdir), timeout,
                     parse_spin)


def run_rumur(spec: Spec, workdir, timeout: float | None = None, symmetry: bool = False,
              threads: int = 1, opt: str = "-O2", strict_exit: bool = False) -> ToolRun:
    """Export `spec` to Murphi in `workdir`, then rumur, cc and the verifier (one budget);
    `strict_exit` as to_murphi's."""
    Path(workdir, "model.m").write_text(to_murphi(spec, symmetry=symmetry, strict_exit=strict_exit))
    return _pipeline("rumur", rumur_steps("model.m", symmetry, threads, opt=opt), str(workdir), timeout,
                     parse_rumur)
