"""Counter arithmetic at its real widths (issue 4, part 4): amd thresholds and counters as Z3
bit-vectors.

Mojo's AmdCounterBackend (docs/rules.md "AMD counters") keeps every signal as an Int64
counter and every agent's phase as a UInt32 lap counter, and waits until
    counter >= Int64(UInt32(phase ± 1)) * arrive_count
with `phase ± 1` computed in UInt32 before widening. backends/amd.py writes that `phase ± 1`
with `wrap32`, which checker.smt maps to a 32-bit vector's own wrap-around: we hand it the
32-bit phase and count 1 (so it returns the UInt32 value itself), then widen and multiply in
64 bits as Mojo does (a `* count` inside the backend would stay 32 bits wide).

A threshold *wraps* when that UInt32 value is not the true lap arithmetic: phase 0 makes
phase - 1 = 2^32 - 1 (a producer at phase 0 waits for 2^32 - 1 laps: forever); phase 2^32 - 1
makes phase + 1 = 0 (the wait passes at once). A counter *overflows* when a signal's Int64
count of arrivals passes 2^63 - 1, which takes 2^63 / count laps: never below 2^32 laps, as
counts are at most 2^20 - 1, and Z3 proves it per signal.

Each wait and try is taken from the pre-check's walk as a closed form in its item index
(item = K*t + rho, coordinate q0 + qa*t, phase = coordinate div stages); `t` is a 64-bit
vector. The first wrapping item is Z3's model, confirmed or lowered by bisection with the
solver (unsat below it). `found` is about the spec's own items; `beyond_item` says where the
same walk, run on, would wrap first (below 2^32 laps).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from pipeproof.backends.capabilities import backend
from pipeproof.checker.smt import solvers as smt
import z3
from pipeproof.checker.smt.precheck_spec import (EMPTY, FULL, MAX_STEPS, WAITS, classes, forms,
                                  precheck, sig_name, walk_size)
from pipeproof.spec.schema import Spec

BITS = 64
LAPS = 1 << 32
INT64_MAX = (1 << 63) - 1

@dataclass(frozen=True)
class WrapReport:
    found: bool               # a threshold wraps or a counter overflows within the spec's items
    item: int | None          # the first item (0-based) it happens in
    signal: str | None        # e.g. "empty[s]"
    what: str                 # e.g. "wait_empty threshold (phase - 1) wraps to 2^32-1"
    message: str
    status: str               # "sat" (found), "unsat" (proved absent), "unknown"
    beyond_item: int | None = None    # the first item it would happen in if the walk ran on
    beyond_what: str = ""
    overflow_item: int | None = None  # items after which an Int64 counter would overflow
    overflow_below_2_32_laps: bool = False

    def to_json(self) -> dict:
        return asdict(self)


def amd_wrap(spec: Spec) -> WrapReport:
    if not backend(spec.backend).wrap32:
        return WrapReport(False, None, None, "", "nvidia waits look at phase parity only: "
                          "a wrapped UInt32 phase keeps its parity", "unsat")
    if walk_size(spec) > MAX_STEPS:
        return WrapReport(False, None, None, "", f"not checked: the walk of {walk_size(spec)} "
                          f"steps is above the pre-check's limit of {MAX_STEPS}", "unknown")
    stages = {r.name: r.stages for r in spec.all_rings}
    rings = {r.name: r for r in spec.all_rings}
    rules = smt.symbolic_rules(spec.backend)  # a wrap32 backend's thresholds, over Z3 terms
    statuses, within, beyond = [], [], []
    for cls in classes(spec):
        for f in forms(cls, stages):
            X = WAITS.get(f.ev.name)
            if X is None:
                continue
            t = z3.BitVec("t", BITS)
            ph = z3.UDiv(f.q0 + f.qa * t, stages[f.ev.op.ring])  # the true lap count
            p0 = cls.role.initial_phase_of(f.ev.op.ring)
            ph32 = z3.Extract(31, 0, ph)                           # Mojo's UInt32 phase
            fn = rules.full_threshold if X == FULL else rules.empty_threshold
            value = fn(ph32, 1)                                    # UInt32(phase ± 1)
            true = ph + 1 if X == FULL else ph - 1
            # It wraps when the UInt32 value is not the true one, or when widening and
            # multiplying by the count overflows Int64 (impossible for counts < 2^31).
            n = rings[f.ev.op.ring].expected(X)
            wraps = z3.Or(z3.ZeroExt(BITS - 32, value) != true, z3.Not(z3.BVMulNoOverflow(
                z3.ZeroExt(BITS - 32, value), z3.BitVecVal(n, BITS), True)))
            laps = z3.ULT(ph - p0, LAPS)
            for bound, sink in ((f.T, within), (None, beyond)):
                tv, status = _first(t, [wraps, laps], bound)
                statuses.append(status)
                if tv is not None:
                    e = f.evs[tv] if tv < f.T else None
                    item = e.item if e else f.ev.item + cls.K * tv
                    phase = (f.q0 + f.qa * tv) // stages[f.ev.op.ring]
                    sink.append((item, cls.name, f.ev, X, phase, phase - p0))
    over = _overflow(spec, statuses)
    status = "unknown" if "unknown" in statuses else ("sat" if within else "unsat")
    b = min(beyond, key=lambda x: x[0]) if beyond else None
    beyond_what = _what(b[2], b[3]) if b else ""
    if within:
        item, role, ev, X, phase, _ = min(within, key=lambda x: x[0])
        where = f"item {item}" if ev.part == "body" else f"its {ev.part}"
        what = _what(ev, X)
        effect = ("it waits for 2^32-1 laps of releases, i.e. forever" if X == EMPTY else
                  "it passes at once, before the fill it waits for")
        return WrapReport(True, item if ev.part == "body" else None, sig_name(ev.op.ring, X),
                          what, f"{role}: {what} at {where} (phase {phase}): {effect}; "
                          f"{over[2]}", status, b[0] if b else None, beyond_what, *over[:2])
    head = ("no threshold wraps within the spec's items" if status == "unsat" else
            "Z3 gave up on the counter arithmetic (unknown)")
    if b:
        head += (f"; run on, {b[1]}: {beyond_what} at item {b[0]} (lap {_pow2(b[5])} of its "
                 f"UInt32 phase, below 2^32 laps)")
    return WrapReport(False, None, None, "", f"{head}; {over[2]}", status, b[0] if b else None,
                      beyond_what, *over[:2])


def _what(ev, X: str) -> str:
    op = ev.name if ev.name in WAITS else "wait_empty"
    return (f"{op} threshold (phase + 1) wraps to 0" if X == FULL
            else f"{op} threshold (phase - 1) wraps to 2^32-1")


def _pow2(n: int) -> str:
    """2^k and 2^k-1 as such; other numbers as they are."""
    if n > 1 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    if n > 2 and n & (n + 1) == 0:
        return f"2^{n.bit_length()}-1"
    return str(n)


def _first(t, constraints, bound) -> tuple[int | None, str]:
    """The smallest t (unsigned, below `bound` if given) satisfying the constraints: Z3's
    model, proved first by one unsat query below it, or lowered by bisection."""
    s = smt.solver(timeout_ms=5000)
    s.add(*constraints, z3.ULT(t, bound if bound is not None else 1 << 48))
    a = smt.check(s)
    if a.status != "sat":
        return None, a.status
    best, lo, first = a.model.eval(t, model_completion=True).as_long(), 0, True
    while lo < best:
        mid = best - 1 if first else (lo + best - 1) // 2  # first: anything below the model?
        first = False
        s.push()
        s.add(z3.ULE(t, mid))
        b = smt.check(s)
        s.pop()
        if b.status == "sat":
            best = b.model.eval(t, model_completion=True).as_long()
        elif b.status == "unsat":
            lo = mid + 1
        else:
            return best, "unknown"
    return best, "sat"


def _overflow(spec: Spec, statuses: list) -> tuple[int | None, bool, str]:
    """(items, below 2^32 laps, words): after how many items the busiest signal's Int64
    counter passes 2^63 - 1, each stage's signal gaining `count` arrivals per lap; Z3 decides
    whether L * count can overflow Int64 for some L < 2^32 laps."""
    best = None
    for r in spec.all_rings:
        for X in (FULL, EMPTY):
            n = r.expected(X)
            laps = z3.BitVec("laps", BITS)
            s = smt.solver(timeout_ms=5000)
            s.add(z3.ULT(laps, LAPS),
                  z3.Not(z3.BVMulNoOverflow(laps, z3.BitVecVal(n, BITS), True)))
            a = smt.check(s)
            statuses.append("unsat" if a.status == "unsat" else a.status)
            laps_needed = INT64_MAX // n + 1
            if best is None or laps_needed * r.stages < best[0]:
                best = (laps_needed * r.stages, a.status == "sat", sig_name(r.name, X), n,
                        laps_needed)
    items, below, sig, n, laps_needed = best
    words = (f"the Int64 counters {'can' if below else 'cannot'} overflow below 2^32 laps: "
             f"{sig} gains {n} per lap and passes 2^63-1 after {_pow2(laps_needed)} laps "
             f"(item {_pow2(items)})")
    return items, below, words


def report_lines(spec: Spec) -> list[str]:
    """The lines `pipeproof verify` prints before the explicit engine's verdict: one per
    pre-check finding, and for amd a counter wrap within the spec's items (part 4). Nothing
    when all is well. A failure of the pre-check itself is one line, never an exception: the
    explicit engine's verdict is what counts."""
    try:
        lines = [f"pre-check: {f}" for f in precheck(spec)]
        w = amd_wrap(spec)  # (nothing found where thresholds do not wrap)
        if w.found or w.status == "unknown":
            lines.append(f"counters: {w.message}")
        return lines
    except Exception as e:  # noqa: BLE001 - reported, and verification goes on
        return [f"pre-check: skipped ({type(e).__name__}: {e})"]
