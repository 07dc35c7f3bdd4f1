"""Symmetry reduction: interchangeable agents, and the canonical form of a state under them.

Two agents are interchangeable when they have the same role, the same CTA and the same
program, and nothing tells them apart: not `@leader` (agent 0 of a role that has a leader-only
op runs another program, so it is left out of its class), not the slot parts its fills store
into (a producer-side agent that fills is left out), not a target (targets name CTAs, and
a class lies in one CTA). Such agents are listed one after the other in `Model.agents`, so a
**class** is a range `[lo, hi)` of agent indices; `classes(model)` gives them as an (n, 2)
int64 array, empty when no two agents are interchangeable.

Permuting the agents of a class (their records in the state vector, and the agent numbers
inside in-flight entries: an async read carries its agent and its place in the agent's FIFO,
a commit waiting for earlier reads carries the agent) maps reachable states to reachable
states, steps to steps and violations to the same violations: `checker/semantics.py` reads an
agent's identity only through its own record, its entries and the tables, which are equal for
every member of a class. So the search may store one state per orbit.

`canonicalise` picks that state: within each class, agents are sorted by their record
(lexicographically), ties broken by the agent's in-flight entries with the agent number masked
out (compared as the descending sequence they have in the state). Agents whose keys tie are
then indistinguishable: swapping them gives the same state. The result depends only on the
orbit, so the number of states stored is the number of orbits, whatever order the roles are
written in.
"""
from __future__ import annotations

import numpy as np

from pipeproof.backends.base import jit, njit
from pipeproof.checker import semantics as S


def classes(model) -> np.ndarray:
    """The classes of interchangeable agents of a compiled model, as [lo, hi) rows."""
    leader_roles = {r.name for r in model.spec.roles
                    if any(op.leader_only for op in r.prologue + r.body + r.epilogue)}
    # A producer-side agent's fills store into parts of its own (checker/program.py
    # slot_parts): the parts would have to be permuted with the agents, so such agents stay
    # distinguished.
    part_owners = {a for parts in model.parts for part in parts for _, a, _ in part.fills}
    groups: dict[tuple, list[int]] = {}
    for i, a in enumerate(model.agents):
        if (a.role in leader_roles and a.index == 0) or i in part_owners:
            continue  # runs the @leader ops, or owns parts: distinguished
        groups.setdefault((a.role, a.cta), []).append(i)
    rows = []
    T = model.tables
    for members in groups.values():
        if len(members) < 2:
            continue
        lo, hi = members[0], members[-1] + 1
        if members != list(range(lo, hi)):
            raise AssertionError("internal: a symmetry class is not a contiguous agent range")
        first = model.agents[lo]
        for i in members[1:]:
            a = model.agents[i]
            same = (a.ops == first.ops and a.items == first.items
                    and (a.body_start, a.body_end) == (first.body_start, first.body_end)
                    and a.initial_stages == first.initial_stages
                    and a.initial_phases == first.initial_phases
                    and np.array_equal(np.delete(T.agent[i], S.A_PROG),
                                       np.delete(T.agent[lo], S.A_PROG)))
            if not same:
                raise AssertionError("internal: agents of one symmetry class differ")
        rows.append((lo, hi))
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


NO_CLASSES = np.zeros((0, 2), dtype=np.int64)


@jit
def refers_to(T, e):
    """The agent an in-flight entry names, or -1: an async read always, a commit while it
    still waits for its agent's earlier reads."""
    kind = S.entry_field(T, e, S.E_KIND)
    if kind == S.ENTRY_READ or (kind == S.ENTRY_COMMIT and S.entry_field(T, e, S.E_SEQ) > 0):
        return S.entry_field(T, e, S.E_AGENT)
    return -1


@jit
def next_entry_of(T, st, a, j):
    """Index of the first entry at or after j that names agent a, or -1."""
    off = T.cfg[S.C_OFF_INF]
    m = T.cfg[S.C_INFLIGHT]
    while j < m:
        e = st[off + j]
        if e == 0:
            return -1
        if refers_to(T, e) == a:
            return j
        j += 1
    return -1


@jit
def agent_cmp(T, st, a, b, refs):
    """-1, 0 or 1: agent a's key against agent b's (record, then named entries)."""
    agf = T.cfg[S.C_AGF]
    ba = a * agf
    bb = b * agf
    for f in range(agf):
        x = st[ba + f]
        y = st[bb + f]
        if x != y:
            return -1 if x < y else 1
    if not refs:
        return 0
    off = T.cfg[S.C_OFF_INF]
    ja = next_entry_of(T, st, a, 0)
    jb = next_entry_of(T, st, b, 0)
    while ja >= 0 and jb >= 0:
        x = S.with_field(T, st[off + ja], S.E_AGENT, 0)
        y = S.with_field(T, st[off + jb], S.E_AGENT, 0)
        if x != y:
            return -1 if x < y else 1
        ja = next_entry_of(T, st, a, ja + 1)
        jb = next_entry_of(T, st, b, jb + 1)
    if ja >= 0:
        return 1
    if jb >= 0:
        return -1
    return 0


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def canonicalise(T, SY, st, perm, tmp):
    """Put the unpacked state `st` into the canonical form of its orbit, in place.

    `perm` and `tmp` are scratch int64 arrays of at least (agents) and (agents * agent fields).
    Returns True when anything moved.
    """
    if SY.shape[0] == 0:
        return False
    agf = T.cfg[S.C_AGF]
    off = T.cfg[S.C_OFF_INF]
    m = T.cfg[S.C_INFLIGHT]
    refs = T.ent[S.E_AGENT, 1] > 0 and m > 0 and st[off] != 0
    moved = False
    for c in range(SY.shape[0]):
        lo = SY[c, 0]
        n = SY[c, 1] - lo
        for p in range(n):
            perm[p] = lo + p
        for i in range(1, n):
            x = perm[i]
            j = i
            while j > 0 and agent_cmp(T, st, x, perm[j - 1], refs) < 0:
                perm[j] = perm[j - 1]
                j -= 1
            perm[j] = x
        identity = True
        for p in range(n):
            if perm[p] != lo + p:
                identity = False
                break
        if identity:
            continue
        moved = True
        for i in range(n * agf):
            tmp[i] = st[lo * agf + i]
        for p in range(n):
            src = (perm[p] - lo) * agf
            dst = (lo + p) * agf
            for f in range(agf):
                st[dst + f] = tmp[src + f]
        if refs:
            # old agent number perm[p] becomes lo + p
            for p in range(n):
                tmp[perm[p] - lo] = lo + p
            for j in range(m):
                e = st[off + j]
                if e == 0:
                    break
                a = refers_to(T, e)
                if lo <= a < lo + n:
                    st[off + j] = S.with_field(T, e, S.E_AGENT, tmp[a - lo])
    if moved and refs:
        S.sort_entries(T, st)
    return moved


def canonical(model, SY, state) -> np.ndarray:
    """The canonical form of a state (tuple or vector) as a new int64 vector."""
    st = np.array(state, dtype=np.int64)
    n = len(model.agents)
    canonicalise(model.tables, SY, st, np.empty(n, dtype=np.int64),
                 np.empty(n * model.agf, dtype=np.int64))
    return st


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def canonicalise_successor(T, SY, parent, st, perm, tmp):
    """`canonicalise(T, SY, st, perm, tmp)` for a successor `st` of the canonical state
    `parent`, usually without sorting.

    In the canonical parent every class is sorted by record (the record is the first part of
    the key). A step changes the record of the acting agent only (a barrier release also
    moves the agents it releases; an in-flight entry firing changes none). So when the
    successor has no entry that names an agent (the tie-break is then unused, and agents
    with equal records are identical), a class in which no record changed is still sorted,
    and one with a single changed record is sorted by moving that record to its place. That
    gives the same vector as the full sort: a sorted sequence of records is unique. Anything
    else (entries naming agents, two changed records in a class) takes the full sort.
    """
    if SY.shape[0] == 0:
        return
    agf = T.cfg[S.C_AGF]
    off = T.cfg[S.C_OFF_INF]
    m = T.cfg[S.C_INFLIGHT]
    if T.ent[S.E_AGENT, 1] > 0 and m > 0 and st[off] != 0:
        canonicalise(T, SY, st, perm, tmp)
        return
    for c in range(SY.shape[0]):
        lo = SY[c, 0]
        hi = SY[c, 1]
        changed = -1
        for a in range(lo, hi):
            base = a * agf
            for f in range(agf):
                if st[base + f] != parent[base + f]:
                    if changed >= 0:
                        canonicalise(T, SY, st, perm, tmp)
                        return
                    changed = a
                    break
        if changed < 0:
            continue
        # Move the changed record left past larger records or right past smaller ones.
        base = changed * agf
        for f in range(agf):
            tmp[f] = st[base + f]
        p = changed
        while p > lo and record_less(st, tmp, (p - 1) * agf, agf, True):
            for f in range(agf):
                st[p * agf + f] = st[(p - 1) * agf + f]
            p -= 1
        if p == changed:
            while p + 1 < hi and record_less(st, tmp, (p + 1) * agf, agf, False):
                for f in range(agf):
                    st[p * agf + f] = st[(p + 1) * agf + f]
                p += 1
        for f in range(agf):
            st[p * agf + f] = tmp[f]


@jit
def record_less(st, rec, base, agf, rec_first):
    """rec < st[base:base+agf] (rec_first) or st[base:base+agf] < rec (not rec_first)."""
    for f in range(agf):
        x = rec[f]
        y = st[base + f]
        if x != y:
            return x < y if rec_first else y < x
    return False
