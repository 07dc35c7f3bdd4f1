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
states, steps to steps and violations to the same violations: `checker/core/semantics.py` reads an
agent's identity only through its own record, its entries and the tables, which are equal for
every member of a class. So the search may store one state per orbit.

`canonicalise` picks that state: within each class, agents are sorted by their record
(lexicographically), ties broken by the agent's in-flight entries with the agent number masked
out (compared as the descending sequence they have in the state). Agents whose keys tie are
then indistinguishable: swapping them gives the same state. The result depends only on the
orbit, so the number of states stored is the number of orbits, whatever order the roles are
written in.

**CTAs of a cluster** (issue 18). When the CTAs run the same programs, CTA c can be renamed
π(c) for every permutation π that maps the model onto itself (`cta_automorphisms`: each agent
has an image with its role and index in CTA π(c) and the same program rows, every op's target
CTAs map to its image's (`to=self`/`to=all` always do; `to=leader` needs π(0) = 0, `to=peer`
a rotation), slot parts map to parts with the mapped CTAs and fills, named barriers keep
their per-CTA counts). Renaming moves agent records, each CTA's signals, slots (their parts
renamed too: a `to=all` copy's part belongs to its source CTA) and barriers, and the CTA, part
and agent fields of in-flight entries, all together (`permute_ctas`). The semantics read a
CTA only through those tables and fields, so a renaming maps steps to steps and violations to
the same violations. The automorphisms searched are all permutations for K <= 4 CTAs and the
rotations above; either set, filtered, is a group. The canonical form is the least vector,
over the group, of each image with its agent classes sorted: for ρ in the group and σ an
agent permutation, ρσ = σ'ρ with σ' = ρσρ⁻¹ an agent permutation (ρ maps classes to
classes), so the least image depends only on the orbit under both together.
"""
from __future__ import annotations

from collections import namedtuple
from itertools import permutations

import numpy as np

from pipeproof.backends.base import jit, njit
from pipeproof.checker.core import semantics as S
from pipeproof.spec.ops import OP_EFFECTS


def classes(model) -> np.ndarray:
    """The classes of interchangeable agents of a compiled model, as [lo, hi) rows."""
    leader_roles = {r.name for r in model.spec.roles
                    if any(op.leader_only for op in r.prologue + r.body + r.epilogue)}
    # A producer-side agent's fills store into parts of its own (checker/core/program.py
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
    """The agent an in-flight entry names, or -1: an async read or a commit (a commit names
    its agent: its later commits wait for it, checker/core/inflight.py). Renaming keeps the
    rest of an entry, a commit's signal (E_BIDX: commit_full's full) included."""
    kind = S.entry_field(T, e, S.E_KIND)
    if kind == S.ENTRY_READ or kind == S.ENTRY_COMMIT:
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


@jit
def entries_name_agents(T, st):
    """Could an in-flight entry of `st` name an agent (an async read, a commit)? Then an
    agent's key includes the entries that name it (`agent_cmp`)."""
    return T.ent[S.E_AGENT, 1] > 0 and T.cfg[S.C_INFLIGHT] > 0 and st[T.cfg[S.C_OFF_INF]] != 0


@jit
def twin_of_previous(T, SY, st, a):
    """Is agent a in a class of `SY` ((n, 2) rows [lo, hi)) behind agent a - 1, with the same
    key (record, and the entries that name it with the agent left out)? Then exchanging the
    two maps `st` onto itself, and a's step onto a - 1's step, exchanged."""
    for c in range(SY.shape[0]):
        if SY[c, 0] < a < SY[c, 1]:
            return agent_cmp(T, st, a - 1, a, entries_name_agents(T, st)) == 0
    return False


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def canonicalise_agents(T, SY, st, perm, tmp):
    """Put the unpacked state `st` into the canonical form of its orbit under the agent
    classes `SY` ((n, 2) rows [lo, hi)), in place.

    `perm` and `tmp` are scratch int64 arrays of at least (agents) and (agents * agent fields).
    Returns True when anything moved.
    """
    if SY.shape[0] == 0:
        return False
    agf = T.cfg[S.C_AGF]
    off = T.cfg[S.C_OFF_INF]
    m = T.cfg[S.C_INFLIGHT]
    refs = entries_name_agents(T, st)
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
    """The canonical form of a state (tuple or vector) as a new int64 vector. `SY`: a
    `Symmetry`, or agent classes alone (no renaming of CTAs)."""
    if not isinstance(SY, Symmetry):
        SY = symmetry(model, cta=False, agent_classes=SY)
    st = np.array(state, dtype=np.int64)
    n = len(model.agents)
    canonicalise(model.tables, SY, st, np.empty(n, dtype=np.int64),
                 np.empty(n * model.agf, dtype=np.int64))
    return st


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def canonicalise(T, SY, st, perm, tmp):
    """Put the unpacked state `st` into the canonical form of its orbit under the `Symmetry`
    SY (agent classes, then CTA renamings), in place. Scratch as `canonicalise_agents`."""
    canonicalise_agents(T, SY.classes, st, perm, tmp)
    cta_least(T, SY, st, perm, tmp)


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def canonicalise_successor(T, SY, parent, st, perm, tmp):
    """`canonicalise` for a successor `st` of the canonical state `parent`: the agent classes
    by `agents_successor`, then the CTA renamings."""
    agents_successor(T, SY.classes, parent, st, perm, tmp)
    cta_least(T, SY, st, perm, tmp)


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def agents_successor(T, SY, parent, st, perm, tmp):
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
    if entries_name_agents(T, st):
        canonicalise_agents(T, SY, st, perm, tmp)
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
                        canonicalise_agents(T, SY, st, perm, tmp)
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


# ---------------------------------------------------------------- CTAs of a cluster

# A `Symmetry`: the agent classes, then per CTA renaming g (none: zero rows) where each field
# of the state before the in-flight entries goes (fmap), each CTA (cmap), each part of each
# ring (pmap, ring r's part p at r * C_MAXP + p) and each agent (amap); img and best are
# scratch vectors of one state for `cta_least`.
Symmetry = namedtuple("Symmetry", ["classes", "fmap", "cmap", "pmap", "amap", "img", "best"])


def symmetry(model, cta: bool = True, agent_classes=None) -> Symmetry:
    """The symmetry the search reduces by: interchangeable agents (`agent_classes`, default
    `classes(model)`) and, with `cta`,
    the CTA renamings that map the model onto itself (`cta_automorphisms`)."""
    rows = cta_automorphisms(model) if cta else []
    g, n_fix = len(rows), model.off_inf
    fmap = np.zeros((g, n_fix), dtype=np.int64)
    cmap = np.zeros((g, model.ctas), dtype=np.int64)
    pmap = np.zeros((g, model.rings * model.max_parts), dtype=np.int64)
    amap = np.zeros((g, len(model.agents)), dtype=np.int64)
    for k, (pi, agents, parts) in enumerate(rows):
        cmap[k], pmap[k], amap[k] = pi, parts, agents
        fmap[k] = _field_map(model, pi, agents, parts)
    return Symmetry(classes(model) if agent_classes is None else agent_classes, fmap, cmap, pmap, amap,
                    np.zeros(model.n_fields, dtype=np.int64), np.zeros(model.n_fields, dtype=np.int64))


def no_symmetry(model) -> Symmetry:
    return symmetry(model, cta=False, agent_classes=NO_CLASSES)


def renames_ctas(SY) -> bool:
    return SY.fmap.shape[0] > 0


def cta_automorphisms(model) -> list[tuple[list[int], list[int], list[int]]]:
    """The CTA renamings π != identity that map the model onto itself, each as (π, the image
    of every agent, the image of every part index r * C_MAXP + p). Candidates: every
    permutation for K <= 4 CTAs, the rotations for more (both groups; so is the filtered set)."""
    K = model.ctas
    if K == 1 or _queues_by_cta(model):
        return []
    if K <= 4:
        candidates = list(permutations(range(K)))
    else:
        candidates = [tuple((c + s) % K for c in range(K)) for s in range(K)]
    identity = tuple(range(K))
    found = []
    for pi in candidates:
        if pi == identity:
            continue
        image = _automorphism(model, pi)
        if image is not None:
            found.append((list(pi),) + image)
    return found


def _queues_by_cta(model) -> bool:
    """Does an async write aim at several CTAs (`write_async to=all`, a 2-SM leader MMA)? Its
    entries join its agent's FIFO in absolute CTA order (semantics.store_at_targets), an order
    no renaming of the CTAs keeps: the issuer in CTA 1 queues CTA 0's entry first too. Such a
    model gets no CTA symmetry (docs/reductions.md "CTA symmetry")."""
    from pipeproof.spec.ops import OP_EFFECTS
    from pipeproof.spec.schema import targets
    return any(OP_EFFECTS[op.name].async_write and len(targets(model.ctas, a.cta, op.to)) > 1
               for a in model.agents for op, _ in a.ops)


def _automorphism(model, pi):
    """(agent images, part images) when renaming CTA c as pi[c] maps the model onto itself,
    else None."""
    T = model.tables
    where = {(a.role, a.index, a.cta): i for i, a in enumerate(model.agents)}
    agents = []
    for i, a in enumerate(model.agents):
        j = where.get((a.role, a.index, pi[a.cta]))
        if j is None:
            return None
        b = model.agents[j]
        if (a.ops != b.ops or a.items != b.items or (a.body_start, a.body_end) != (b.body_start, b.body_end)
                or a.initial_stages != b.initial_stages or a.initial_phases != b.initial_phases
                or model.reset_until[i] != model.reset_until[j]):
            return None
        ra, rb = T.agent[i].copy(), T.agent[j].copy()
        ra[[S.A_CTA, S.A_PROG]] = 0
        rb[[S.A_CTA, S.A_PROG]] = 0
        pa, pb, n = T.agent[i, S.A_PROG], T.agent[j, S.A_PROG], T.agent[i, S.A_LEN]
        # A fill's part (P_PART) is compared below, once the parts' images are known.
        prog_a, prog_b = np.delete(T.prog[pa:pa + n], S.P_PART, 1), np.delete(T.prog[pb:pb + n], S.P_PART, 1)
        if not np.array_equal(ra, rb) or not np.array_equal(prog_a, prog_b):
            return None
        for row in range(pa, pa + n):  # the op's destination CTAs, renamed, are its image's
            target = T.prog[row, S.P_TARGET]
            mask_a = S.targets_mask.py_func(T, i, target)
            if _rename_mask(mask_a, pi) != S.targets_mask.py_func(T, j, target):
                return None
        agents.append(j)
    if sorted(agents) != list(range(len(agents))):
        return None
    for c in range(model.ctas):  # named barriers keep their per-CTA counts
        if not np.array_equal(T.bar_count[:, c], T.bar_count[:, pi[c]]):
            return None
    parts = list(range(model.rings * model.max_parts))
    for r in range(model.rings):
        rows = {}
        for p in range(T.ring[r, S.R_PARTS]):
            rows[_part_key(T, r * model.max_parts + p, None, None)] = p
        for p in range(T.ring[r, S.R_PARTS]):
            key = _part_key(T, r * model.max_parts + p, pi, agents)
            if key not in rows:
                return None
            parts[r * model.max_parts + p] = r * model.max_parts + rows[key]
    if sorted(parts) != list(range(len(parts))):
        return None
    for i, a in enumerate(model.agents):
        pa, pb = T.agent[i, S.A_PROG], T.agent[agents[i], S.A_PROG]
        for pc, (op, _) in enumerate(a.ops):
            part = T.prog[pa + pc, S.P_PART]
            if OP_EFFECTS[op.name].stores and part >= 0:
                r = T.prog[pa + pc, S.P_RING]
                part = parts[r * model.max_parts + part] - r * model.max_parts
            if part != T.prog[pb + pc, S.P_PART]:
                return None
    return agents, parts


def _rename_mask(mask: int, pi) -> int:
    return sum(1 << pi[c] for c in range(len(pi)) if (mask >> c) & 1)


def _part_key(T, row, pi, agents):
    """A part as (its CTAs' mask, its fills as (op offset in the program, agent)), renamed by
    pi and the agent images when given."""
    mask = int(T.part[row, S.PT_CTAS])
    fills = []
    for f in range(T.part[row, S.PT_NFILLS]):
        prow, a = int(T.part[row, S.PT_FILL0 + 2 * f]), int(T.part[row, S.PT_FILL0 + 2 * f + 1])
        pc = prow - int(T.agent[a, S.A_PROG])
        fills.append((pc, a if agents is None else agents[a]))
    if pi is not None:
        mask = _rename_mask(mask, pi)
    return mask, tuple(sorted(fills))


def _field_map(model, pi, agents, parts) -> np.ndarray:
    """Where each field before the in-flight entries goes under the renaming."""
    agf, R, MS, MP = model.agf, model.rings, model.max_stages, model.max_parts
    fmap = np.arange(model.off_inf, dtype=np.int64)
    for a, b in enumerate(agents):
        fmap[a * agf:(a + 1) * agf] = np.arange(b * agf, (b + 1) * agf)
    for cta in range(model.ctas):
        for r in range(R):
            for s in range(MS):
                for kind in range(2):
                    src = ((cta * R + r) * MS + s) * 2 + kind
                    dst = ((pi[cta] * R + r) * MS + s) * 2 + kind
                    fmap[model.off_sig + 4 * src:model.off_sig + 4 * src + 4] = \
                        np.arange(model.off_sig + 4 * dst, model.off_sig + 4 * dst + 4)
                for p in range(MP):
                    src = ((cta * R + r) * MS + s) * MP + p
                    dst = ((pi[cta] * R + r) * MS + s) * MP + parts[r * MP + p] - r * MP
                    fmap[model.off_slot + src] = model.off_slot + dst
        for b in range(len(model.barrier_names)):
            src, dst = 2 * (b * model.ctas + cta), 2 * (b * model.ctas + pi[cta])
            fmap[model.off_bar + src:model.off_bar + src + 2] = np.arange(model.off_bar + dst,
                                                                          model.off_bar + dst + 2)
    assert sorted(fmap.tolist()) == list(range(model.off_inf)), "internal: not a field permutation"
    return fmap


@jit
def permute_ctas(ent, off_inf, m, maxp, fmap, cmap, pmap, amap, src, dst):
    """dst = src with its CTAs renamed by one row of a `Symmetry` (fmap, cmap, pmap, amap):
    the fields moved, then each in-flight entry's CTA, part (+1, when slots have parts) and
    named agent (an async read; a commit) renamed, and the
    entries sorted again."""
    for i in range(off_inf):
        dst[fmap[i]] = src[i]
    for j in range(m):
        e = src[off_inf + j]
        if e != 0:
            cta = (e >> ent[S.E_CTA, 0]) & ent[S.E_CTA, 1]
            e = (e & ~(ent[S.E_CTA, 1] << ent[S.E_CTA, 0])) | (cmap[cta] << ent[S.E_CTA, 0])
            part = (e >> ent[S.E_PART, 0]) & ent[S.E_PART, 1]
            if maxp > 1 and part > 0:
                r = (e >> ent[S.E_RING, 0]) & ent[S.E_RING, 1]
                renamed = pmap[r * maxp + part - 1] - r * maxp + 1
                e = (e & ~(ent[S.E_PART, 1] << ent[S.E_PART, 0])) | (renamed << ent[S.E_PART, 0])
            kind = (e >> ent[S.E_KIND, 0]) & ent[S.E_KIND, 1]
            if kind == S.ENTRY_READ or kind == S.ENTRY_COMMIT:
                a = (e >> ent[S.E_AGENT, 0]) & ent[S.E_AGENT, 1]
                e = (e & ~(ent[S.E_AGENT, 1] << ent[S.E_AGENT, 0])) | (amap[a] << ent[S.E_AGENT, 0])
        dst[off_inf + j] = e
    S.sort_descending(dst, off_inf, m)


@jit
def vector_less(x, y, n):
    """x[:n] < y[:n], lexicographically."""
    for i in range(n):
        if x[i] != y[i]:
            return x[i] < y[i]
    return False


@njit(cache=True, _nrt=False)  # as checker/explore.ENGINE: no refcounting in the hot loop
def cta_least(T, SY, st, perm, tmp):
    """Replace `st` (its agent classes sorted) by the least of its CTA renamings, each with its
    agent classes sorted."""
    g = SY.fmap.shape[0]
    if g == 0:
        return
    n = T.cfg[S.C_FIELDS]
    img, best = SY.img, SY.best
    for i in range(n):
        best[i] = st[i]
    for k in range(g):
        permute_ctas(T.ent, T.cfg[S.C_OFF_INF], T.cfg[S.C_INFLIGHT], T.cfg[S.C_MAXP],
                     SY.fmap[k], SY.cmap[k], SY.pmap[k], SY.amap[k], st, img)
        canonicalise_agents(T, SY.classes, img, perm, tmp)
        if vector_less(img, best, n):
            for i in range(n):
                best[i] = img[i]
    for i in range(n):
        st[i] = best[i]
