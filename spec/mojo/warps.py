"""Running the warps of a kernel (spec/mojo/parse.py's step 1): each warp's lanes on the
interpreter (LLVM IR's or PTX's), the lanes that make each op and the CTAs it lands on, and
the loop iterations that hold an item."""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.spec.mojo.interp import Raw, Thread
from pipeproof.spec.mojo.llvm import IRError, Ptr


@dataclass
class AgentRun:
    warps: tuple
    cta: int
    events: list               # [Raw] with .lanes
    starts: dict
    ends: dict


def trim_loops(agent, evs):
    """Iteration starts with no event before the next start or the loop's end are the header's
    last check (the exit test of a `for`): not an item."""
    seqs = sorted(e.seq for e in evs)
    import bisect
    starts = {}
    for key, st in agent.starts.items():
        later = sorted(st[1:])
        ends = sorted(agent.ends.get(key, []))
        keep = []
        for s0 in st:
            # the next start after it, or an end at or after it (an exit test right after the
            # start records both at the same seq)
            k = bisect.bisect_right(later, s0)
            e = bisect.bisect_left(ends, s0)
            nxt = min(later[k] if k < len(later) else float("inf"),
                      ends[e] if e < len(ends) else float("inf"))
            j = bisect.bisect_right(seqs, s0)
            if j < len(seqs) and seqs[j] < nxt:
                keep.append(s0)
        if keep:
            starts[key] = keep
    return starts, {k: v for k, v in agent.ends.items() if k in starts}


def next_line(prev, loc) -> bool:
    """Is `loc` the init of the next barrier of an array whose inits are unrolled in the source
    (TileLang: `mbarrier[0].init(1); mbarrier[1].init(1); ...`, one statement a line): the same
    location as `prev` but for the kernel's own line, one further."""
    if prev is None or loc is None or not hasattr(loc, "inlined_at"):
        return False
    a, b = prev, loc
    while a.inlined_at is not None and b.inlined_at is not None:
        if (a.file, a.line, a.col, a.function) != (b.file, b.line, b.col, b.function):
            return False
        a, b = a.inlined_at, b.inlined_at
    return a.inlined_at is None and b.inlined_at is None and a.file == b.file \
        and a.function == b.function and b.line == a.line + 1


def _key(r: Raw, occ: dict):
    k = (r.kind, r.inst.index, tuple(c.index for c in r.stack))
    n = occ.get(k, 0)
    occ[k] = n + 1
    return k + (n,)


def _keys(events):
    occ = {}
    return [_key(r, occ) for r in events]


def run_warp(m, kernel, loops, warp, cta, ncta, block_dim, args, ws, tiles=None, thread=Thread):
    """Run one warp's lanes (`thread`: the interpreter, LLVM IR's or PTX's)."""
    def one(lane):
        t = thread(m, kernel, warp * ws + lane, cta, ncta, block_dim, args, loops, tiles)
        t.run()
        return t

    t0 = one(0)
    events = [r for r in t0.events if r.kind not in ("load", "store") or True]
    if not t0.lane_dependent:
        for r in events:
            r.lanes = ws
        return t0, events
    probe = [1, 2, ws // 2, ws - 1]
    others = {lane: one(lane) for lane in probe}
    k1, klast = _keys(others[1].events), _keys(others[ws - 1].events)
    if k1 == klast and _keys(others[2].events) == k1 and _keys(others[ws // 2].events) == k1:
        weights = {0: 1, 1: ws - 1}
        runs = {0: t0, 1: others[1]}
    else:
        runs = {0: t0, **{lane: one(lane) for lane in range(1, ws)}}
        weights = {lane: 1 for lane in runs}
    # the warp's ops are those of a lane that makes every op any lane makes: lane 0, or the
    # lane with the most ops where some lanes skip one (CUTLASS's consumer release: only every
    # eighth lane arrives, each on its own CTA's barrier, and lane 0 may not be one of them)
    keys = {lane: _keys(t.events) for lane, t in runs.items()}
    top = max(runs, key=lambda lane: (len(keys[lane]), -lane))
    t0 = runs[top]
    events = t0.events
    base = keys[top]
    count = {k: 0 for k in base}
    targets = {k: {} for k in base}   # the CTA each lane's op lands on (mapa per lane)
    for lane, t in runs.items():
        for k, r in zip(keys[lane], t.events):
            if k not in count:
                raise IRError(f"lane {lane} of warp {warp} makes an op lane {top} does not: a "
                              f"per-lane split pipeproof cannot model", r.inst)
            count[k] += weights[lane]
            a = r.addr
            c = a.cta if isinstance(a, Ptr) and a.cta is not None else cta
            targets[k][c] = targets[k].get(c, 0) + weights[lane]
    for r, k in zip(t0.events, base):
        r.lanes = count[k]
        r.targets = targets[k]
    return t0, events


