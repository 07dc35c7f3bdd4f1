"""In-flight entries: copies, commits and async reads issued but not yet landed, fired or
finished, packed one int per entry (fields and widths in T.ent, checker/core/model.py) and kept
sorted descending in the state's in-flight array, so equal sets of entries are equal states.

A copy holds (cta, ring, stage, tag + 1, bytes index, part, peer); a commit (cta, ring, stage, n,
agent, seq = how many of its agent's earlier async reads are still in flight, cseq = how many of
its agent's earlier commit entries are still in flight, peer, and in the copy's bytes-index
field the signal it fires on: COMMIT_ON_FULL for a commit_full, 0 for a commit_empty,
state_layout.entry_signal); an async read (cta, ring, stage,
tag + 1, agent, seq = its place in the agent's FIFO, 0 = oldest; in the bytes-index field
READ_WRITES for an async write, write_async: the same FIFO, a commit waits for it). `peer` is 1 when the issuing
agent's CTA is not the target (a cluster's remote copy or commit).

A commit fires only when seq and cseq are 0: after its agent's earlier async reads have finished
(tcgen05.commit tracks the MMAs before it) and after its agent's earlier commits have fired (a
later commit tracks everything an earlier one does: DESIGN, revised 2026-12-02). Every commit
names its agent, so its firing can find the agent's later commits.
"""
from pipeproof.backends.base import jit
from pipeproof.checker.core.state_layout import (C_INFLIGHT, C_OFF_INF, E_AGENT, E_BIDX, E_CSEQ,
                                            E_CTA, E_KIND, E_PART, E_PEER, E_RING, E_SEQ,
                                            E_STAGE, E_VAL,
                                            ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ, entry_writes)


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
    """`e` with field f set to `value` (a field of width 0 stays absent)."""
    return (e & ~(T.ent[f, 1] << T.ent[f, 0])) | ((value & T.ent[f, 1]) << T.ent[f, 0])


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
def commits_in_flight(T, st, a):
    """How many commit entries agent `a` has in flight (a to=all commit: one per CTA)."""
    off = T.cfg[C_OFF_INF]
    n = 0
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_KIND) == ENTRY_COMMIT and entry_field(T, e, E_AGENT) == a:
            n += 1
    return n


@jit
def commit_fired(T, st, a):
    """One of agent a's oldest commit entries fired: each of its later commits waits for one
    entry fewer. (The firing entry is the agent's oldest: every entry with cseq > 0 was
    issued after every entry with cseq 0 still in flight, which it counted.)"""
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if (entry_field(T, e, E_KIND) == ENTRY_COMMIT and entry_field(T, e, E_AGENT) == a
                and entry_field(T, e, E_CSEQ) > 0):
            st[off + j] = with_field(T, e, E_CSEQ, entry_field(T, e, E_CSEQ) - 1)
    sort_entries(T, st)


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
    that waited for it need one read fewer."""
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_AGENT) != a or entry_field(T, e, E_SEQ) == 0:
            continue
        kind = entry_field(T, e, E_KIND)
        if kind == ENTRY_READ or kind == ENTRY_COMMIT:
            st[off + j] = with_field(T, e, E_SEQ, entry_field(T, e, E_SEQ) - 1)
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
def fill_in_flight_to(T, st, cta, r, s):
    """Is slot (cta, r, s) still being filled: a copy into it not landed, or an async write
    (write_async) of it not finished? A read then is read_before_fill."""
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_into(T, e, ENTRY_COPY, cta, r, s):
            return True
        if entry_into(T, e, ENTRY_READ, cta, r, s) and entry_writes(T, e):
            return True
    return False


# What is still in flight into a CTA when it goes (`exit_inflight`).
EXIT_CLEAN, EXIT_OWN, EXIT_FOREIGN = 0, 1, 2


@jit
def exit_inflight(T, st, cta):
    """What still targets `cta`: EXIT_FOREIGN when an async read of one of its agents, or a
    copy or commit issued by another CTA, is in flight into it (inflight_at_exit); else
    EXIT_OWN when only its own agents' copies or commits are (the warning unawaited_at_exit);
    else EXIT_CLEAN."""
    off = T.cfg[C_OFF_INF]
    what = EXIT_CLEAN
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if entry_field(T, e, E_CTA) == cta:
            if entry_field(T, e, E_KIND) == ENTRY_READ or entry_field(T, e, E_PEER) == 1:
                return EXIT_FOREIGN
            what = EXIT_OWN
    return what
