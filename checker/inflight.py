"""In-flight entries: copies, commits and async reads issued but not yet landed, fired or
finished, packed one int per entry (fields and widths in T.ent, checker/model.py) and kept
sorted descending in the state's in-flight array, so equal sets of entries are equal states.

A copy holds (cta, ring, stage, tag + 1, bytes index, part); a commit (cta, ring, stage, n, and while
it still waits for its agent's earlier async reads: agent, after = how many); an async read
(cta, ring, stage, tag + 1, agent, seq = its place in the agent's FIFO, 0 = oldest).
"""
from pipeproof.backends.base import jit
from pipeproof.checker.state_layout import (C_INFLIGHT, C_OFF_INF, E_AGENT, E_BIDX, E_CTA,
                                            E_KIND, E_PART, E_RING, E_SEQ, E_STAGE, E_VAL,
                                            ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ)


@jit
def entry_field(T, e, f):
    return (e >> T.ent[f, 0]) & T.ent[f, 1]


@jit
def make_entry(T, kind, cta, r, s, val, bidx, agent, seq, part):
    return ((kind << T.ent[E_KIND, 0]) | (cta << T.ent[E_CTA, 0]) | (r << T.ent[E_RING, 0])
            | (s << T.ent[E_STAGE, 0]) | (val << T.ent[E_VAL, 0]) | (bidx << T.ent[E_BIDX, 0])
            | (agent << T.ent[E_AGENT, 0]) | (seq << T.ent[E_SEQ, 0]) | (part << T.ent[E_PART, 0]))


@jit
def with_field(T, e, f, value):
    return (e & ~(T.ent[f, 1] << T.ent[f, 0])) | (value << T.ent[f, 0])


@jit
def reads_in_flight(T, st, a):
    """How many async reads agent `a` has in flight."""
    off = T.cfg[C_OFF_INF]
    n = 0
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_KIND) == ENTRY_READ and entry_field(T, e, E_AGENT) == a:
            n += 1
    return n


@jit
def sort_entries(T, st):
    """Restore the canonical (descending) order after entries were rewritten in place."""
    sort_descending(st, T.cfg[C_OFF_INF], T.cfg[C_INFLIGHT])


@jit
def sort_descending(st, off, m):
    """Insertion sort of st[off:off + m], largest first (the in-flight array's order)."""
    for i in range(1, m):
        e = st[off + i]
        j = i
        while j > 0 and st[off + j - 1] < e:
            st[off + j] = st[off + j - 1]
            j -= 1
        st[off + j] = e


@jit
def finish_read(T, st, a):
    """Agent a's oldest async read finished: its later reads move up the FIFO, and commits
    that waited for it need one read fewer (an entry no longer waiting forgets its agent)."""
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_AGENT) != a or entry_field(T, e, E_SEQ) == 0:
            continue
        kind = entry_field(T, e, E_KIND)
        if kind == ENTRY_READ or kind == ENTRY_COMMIT:
            e = with_field(T, e, E_SEQ, entry_field(T, e, E_SEQ) - 1)
            if kind == ENTRY_COMMIT and entry_field(T, e, E_SEQ) == 0:
                e = with_field(T, e, E_AGENT, 0)
            st[off + j] = e
    sort_entries(T, st)


@jit
def add_entry(T, st, e):
    """Insert into the descending in-flight array; False when it is full."""
    off = T.cfg[C_OFF_INF]
    m = T.cfg[C_INFLIGHT]
    if m == 0 or st[off + m - 1] != 0:
        return False
    j = m - 1
    while j > 0 and st[off + j - 1] < e:
        st[off + j] = st[off + j - 1]
        j -= 1
    st[off + j] = e
    return True


@jit
def remove_entry(T, st, j):
    off = T.cfg[C_OFF_INF]
    m = T.cfg[C_INFLIGHT]
    for i in range(j, m - 1):
        st[off + i] = st[off + i + 1]
    st[off + m - 1] = 0


@jit
def entry_into(T, e, kind, cta, r, s):
    """Is `e` an in-flight entry of `kind` aimed at slot (cta, ring r, stage s)?"""
    return (entry_field(T, e, E_KIND) == kind and entry_field(T, e, E_CTA) == cta
            and entry_field(T, e, E_RING) == r and entry_field(T, e, E_STAGE) == s)


@jit
def copy_in_flight_to(T, st, cta, r, s):
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_into(T, e, ENTRY_COPY, cta, r, s):
            return True
    return False


@jit
def anything_targets(T, st, cta):
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_CTA) == cta:
            return True
    return False
