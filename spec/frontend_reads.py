"""Items counted by reads: software pipelining whose reads do not fall once in each loop
iteration (docs/triton.md "Software pipelining in one partition").

A partition that loads ahead of its own reads is read with `copy B ahead=K`: the n-th load
into each buffer array is data item n, and the partition's n-th read of the ring, in item n,
expects it (spec/frontend_core.py `_fill_ahead`). That needs one read in each item. Gluon's
persistent matmul (tutorial 07-persistence, `persistent_matmul_kernel` with 3 or more
buffers) loads the first k-blocks of a tile before its inner loop, reads one k-block per
iteration, and reads the last ones after the loop (the drain), in every tile: its loop
iterations hold one read or none. Here the items are the reads themselves: item n runs from
the partition's n-th read of the ring to the op before its next read; the ops before the
first read are the prologue, those after the loop that holds the last read the epilogue.

Why the same program: prologue, items and epilogue still list every op of the partition in
the order it ran, and the body keeps each item's own op list (`every=P at=j` where items
differ, as for any reading); only where an item starts moves, and with it the item a load is
issued in, which is what `ahead=` measures. Used only where the loop reading is refused, for a
partition whose ring data no other role fills or reads (another role's items would no longer
pair with this one's) and one ring it both fills and reads.
"""
from __future__ import annotations

DATA_KINDS = ("copy", "read", "read_async")


def sections_by_reads(builder, p):
    """(prologue, [events of each item], epilogue) with one read of the ring per item, or None
    when that reading does not apply (no single ring this partition both fills and reads alone)."""
    fills, reads, others = {}, {}, set()
    for q in builder.parts:
        for ev in q.events:
            if ev.kind not in DATA_KINDS:
                continue
            for ring, _, _, _ in builder._ops(ev):
                if q is not p:
                    others.add(ring.name)
                elif ev.kind == "copy":
                    fills.setdefault(ring.name, []).append(ev)
                else:
                    reads.setdefault(ring.name, []).append(ev)
    both = [name for name in reads if name in fills]
    if len(both) != 1 or (set(fills) | set(reads)) & others:
        return None  # another role's items would no longer pair with this one's
    got = reads[both[0]]
    marks = [ev.seq for ev in got]
    events = [ev for ev in p.events if ev.kind != "init"]
    outer = got[-1].iters[0][0] if got[-1].iters else None
    end = p.ends[outer][-1] if outer is not None else marks[-1]
    if end < marks[-1]:
        return None
    pro = [ev for ev in events if ev.seq < marks[0]]
    bounds = marks + [end + 1]
    items = [[ev for ev in events if bounds[k] <= ev.seq < bounds[k + 1]]
             for k in range(len(marks))]
    epi = [ev for ev in events if ev.seq > end]
    return pro, items, epi
