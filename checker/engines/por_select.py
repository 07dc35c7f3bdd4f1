"""Partial-order reduction (por.py): which steps are persistent singletons, to be taken at once.

`mergeable` (an agent's next step: local, or `independent_step`) and `independent_entry` (an
in-flight entry's action: a copy's landing, a commit's firing, an async read's finishing) are
what the merge (por.py, explore.merge_steps) asks. Each candidate is judged by its footprint
(S.EFFECTS), the in-flight entries and the walk (por_walk.py); a finishing step also by
whether its CTA can go (`exit_unobserved`, `cta_stays`), a named-barrier step by the arrivals
the others can still make (`independent_barrier_step`, `others_could_arrive`).
"""
from __future__ import annotations

from pipeproof.backends.base import FULL, jit
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.por_deps import (
    ACC_ISSUE, ACC_OBS, ACC_READ, ACC_UPD, ACC_WRITE, EXPECT, N_CLASSES, READ_SLOT, UPD_EMPTY,
    UPD_FULL, WRITE_SLOT, commuting_arrivals, entries_conflict, entry_part_of, position)
from pipeproof.checker.engines.por_walk import frozen_touch, touched_while_frozen


@jit
def independent_entry(T, F, st, j):
    """Is {in-flight entry j's action} persistent: a copy's landing (`independent_landing`),
    a commit's firing (`independent_commit`) or an async read's finishing
    (`independent_read_finish`)?"""
    e = st[T.cfg[S.C_OFF_INF] + j]
    if e == 0 or F.cfg[0] == 0:
        return False
    kind = S.entry_field(T, e, S.E_KIND)
    if kind == S.ENTRY_COPY:
        return independent_landing(T, F, st, j)
    if kind == S.ENTRY_COMMIT:
        return independent_commit(T, F, st, j)
    if kind == S.ENTRY_READ:
        return independent_read_finish(T, F, st, j)
    return False


@jit
def independent_read_finish(T, F, st, j):
    """Is {in-flight async read j's finishing} persistent? It changes no signal and no slot:
    it removes the entry and moves its agent's later reads and commits up (`finish_read`).
    The entry is observed only by a store into its slot (the overwrite check, through
    `reads_pending`), by the exit of its CTA (a read in flight there is `inflight_at_exit`), and
    by its own agent's `read_wait`s and commits, which it can only enable (docs/reductions.md
    "Async reads"). So it qualifies when it is its agent's oldest read (else it is not
    enabled), no in-flight copy lands into its slot, and the walk (every agent walking) meets no
    store into the slot and cannot let its CTA go."""
    e = st[T.cfg[S.C_OFF_INF] + j]
    if S.entry_field(T, e, S.E_SEQ) != 0:
        return False
    if S.entry_writes(T, e):
        return False  # an async write's finishing ends the slot's busy time, which reads observe
    r = S.entry_field(T, e, S.E_RING)
    cta = S.entry_field(T, e, S.E_CTA)
    bits = 1 << (cta * T.cfg[S.C_MAXS] + S.entry_field(T, e, S.E_STAGE))
    if entries_conflict(T, F, st, r, bits, -1, 0, ACC_READ, -2, j):
        return False
    return not frozen_touch(T, F, st, -1, r, bits, -1, 0, ACC_READ, False, 1 << cta, -2, j, 0,
                            S.entry_field(T, e, S.E_AGENT))


@jit
def independent_commit(T, F, st, j):
    """Is {in-flight commit j's firing} persistent? It is an arrival of its count on its signal
    (empty for commit_empty, full for commit_full: `S.entry_signal`) (tcgen05.commit, multicast: one entry per CTA), so it qualifies as an arrive does:
    the ring's empty arrivals all have one count, no other entry conflicts, and the walk (every
    agent walking, this commit's units left out of the budgets, and those of its twins: entries
    of its value, in flight or issued on the walk, fire the same step) meets no passing
    observation or non-commuting update of the signal, no stuck waiter outside its window, and
    cannot let the CTA go. A commit still waiting for its agent's async reads or earlier
    commits is not enabled."""
    e = st[T.cfg[S.C_OFF_INF] + j]
    if S.entry_field(T, e, S.E_SEQ) != 0 or S.entry_field(T, e, S.E_CSEQ) != 0:
        return False
    r = S.entry_field(T, e, S.E_RING)
    on = S.entry_signal(T, e)  # empty (commit_empty) or full (commit_full)
    if not commuting_arrivals(T, F, r, on):
        return False
    cta = S.entry_field(T, e, S.E_CTA)
    bits = 1 << (cta * T.cfg[S.C_MAXS] + S.entry_field(T, e, S.E_STAGE))
    if entries_conflict(T, F, st, r, bits, on, ACC_UPD, 0, -2, j):
        return False
    return not frozen_touch(T, F, st, -1, r, bits, on, ACC_UPD, 0, True, 1 << cta, -2, j, e)


@jit
def independent_landing(T, F, st, j):
    """Is {in-flight entry j's landing} persistent: a copy into one part, with no other entry
    conflicting, and no agent able to observe its full signal, update it otherwise, read its
    slot or store into its part, or let its CTA go, before it lands (the walk, with every agent
    walking)? Copies of one byte count into the ring commute with each other; of several, only
    where the phase cannot complete before the last landing (`bytes_keep_order`)."""
    if F.cfg[0] == 0 or S.counter_signals(T):
        return False
    e = st[T.cfg[S.C_OFF_INF] + j]
    if e == 0 or S.entry_field(T, e, S.E_KIND) != S.ENTRY_COPY:
        return False
    r = S.entry_field(T, e, S.E_RING)
    part = entry_part_of(T, e)
    if part < 0:
        return False
    cta = S.entry_field(T, e, S.E_CTA)
    bits = 1 << (cta * T.cfg[S.C_MAXS] + S.entry_field(T, e, S.E_STAGE))
    if entries_conflict(T, F, st, r, bits, FULL, ACC_UPD, ACC_WRITE, part, j):
        return False
    return not frozen_touch(T, F, st, -1, r, bits, FULL, ACC_UPD, ACC_WRITE, True, 1 << cta,
                            part, j)


@jit
def independent_step(T, F, st, a):
    """Is {agent a's next step} persistent: one access (an arrive, a synchronous read, or a
    ready wait inside its window) that nothing but a can conflict with before a takes it?"""
    if F.cfg[0] == 0:
        return False
    base = S.agent_base(T, a)
    pc = st[base + S.F_PC]
    if pc >= T.agent[a, S.A_LEN] or st[base + S.F_SYNC] == 1:
        return False
    if S.next_pc(T, a, pc, st[base + S.F_ITEM])[0] >= T.agent[a, S.A_LEN]:
        # Finishing a: only where its CTA cannot go while a stands still (then nothing sees
        # a finished, docs/reductions.md "Finishing steps"); its op is judged as any other.
        if not exit_unobserved(T, F, st, a) and not cta_stays(T, F, st, a):
            return False
        if S.local_op(T, st, a):
            return True
    row = S.op_row(T, a, pc)
    op = T.prog[row, S.P_CODE]
    E = F.eff
    r = T.prog[row, S.P_RING]
    rb = S.ring_base(T, a, r)
    stage = st[rb]
    cta = T.agent[a, S.A_CTA]
    bit = cta * T.cfg[S.C_MAXS] + stage
    issued = E[op, S.EF_ASYNC]
    if (issued == S.ENTRY_COPY or issued == S.ENTRY_COMMIT) and not E[op, S.EF_BARRIER] \
            and not E[op, S.EF_STAGE]:
        # Issuing a copy or a commit changes no signal or slot: it adds in-flight entries,
        # which only a read of the slot (a copy in flight) and the exit of their CTA observe.
        dsts = S.targets_mask(T, a, T.prog[row, S.P_TARGET])
        at = 0
        for dst in range(T.cfg[S.C_CTAS]):
            if dsts & (1 << dst):
                at |= 1 << (dst * T.cfg[S.C_MAXS] + stage)
        slot = ACC_ISSUE if issued == S.ENTRY_COPY else 0
        return not touched_while_frozen(T, F, st, a, r, at, -1, 0, slot, False,
                                        dsts & ~(1 << cta))
    if E[op, S.EF_BARRIER]:
        return independent_barrier_step(T, F, st, a, row, E[op, S.EF_BARRIER])
    # A wait that also moves its own stage (one step of `drain`) is a wait: the move is local.
    waits_and_moves = (E[op, S.EF_STAGE] == S.STAGE_ADVANCE and E[op, S.EF_OBS] >= 0 and
                       E[op, S.EF_BLOCKS] and E[op, S.EF_UPD] < 0 and not E[op, S.EF_READS])
    # Issuing an async read is a read (its check) plus an entry that only stores into the slot,
    # the exit of a's own CTA (which cannot go while a stands still), and a's own read_waits
    # and commits observe (docs/reductions.md "Async reads"): it qualifies as a read does.
    if (issued and issued != S.ENTRY_READ) or E[op, S.EF_BARRIER] \
            or (E[op, S.EF_STAGE] and not waits_and_moves) or E[op, S.EF_WRITES]:
        return False
    obs = E[op, S.EF_OBS]
    upd = E[op, S.EF_UPD]
    ms = T.cfg[S.C_MAXS]
    if E[op, S.EF_WAITS_READS] and obs < 0 and upd < 0 and not issued \
            and not E[op, S.EF_READS]:
        # read_wait n: enabled when at most n of a's own reads are in flight. Only a issues
        # them and only their finishing removes them, so it stays enabled while a stands
        # still, and it changes nothing but a's position (docs/reductions.md "Async reads").
        return S.reads_in_flight(T, st, a) <= T.prog[row, S.P_N]
    if upd == FULL and E[op, S.EF_TX] > 0 and obs < 0 and not E[op, S.EF_READS]:  # expect_tx
        dsts = S.targets_mask(T, a, T.prog[row, S.P_TARGET])
        if dsts & (dsts - 1):
            return False  # to several CTAs: not judged here
        dst = 0
        while (dsts >> dst) & 1 == 0:
            dst += 1
        at = 1 << (dst * ms + stage)
        if entries_conflict(T, F, st, r, at, FULL, ACC_UPD, 0, EXPECT, -1):
            return False
        return not frozen_touch(T, F, st, a, r, at, FULL, ACC_UPD, 0, True, dsts & ~(1 << cta),
                                EXPECT, -1)
    if upd >= 0 and obs < 0 and not E[op, S.EF_READS]:  # an arrive, to one CTA or several
        if not commuting_arrivals(T, F, r, upd):
            return False
        dsts = S.targets_mask(T, a, T.prog[row, S.P_TARGET])
        at = 0
        for dst in range(T.cfg[S.C_CTAS]):
            if dsts & (1 << dst):
                at |= 1 << (dst * ms + stage)
        return not touched_while_frozen(T, F, st, a, r, at, upd, ACC_UPD, 0, True,
                                        dsts & ~(1 << cta))
    if E[op, S.EF_READS] and obs < 0 and upd < 0:  # a read, synchronous or async (issuing)
        return not touched_while_frozen(T, F, st, a, r, 1 << bit, -1, 0, ACC_READ, False, 0)
    if obs >= 0 and E[op, S.EF_BLOCKS] and upd < 0 and not E[op, S.EF_READS]:  # a wait
        if T.prog[row, S.P_UNLESS] == 1 and st[rb + 2] == 1:
            return False  # skipped: a local step, not an observation
        sig = S.sig_index(T, cta, r, stage, obs)
        if not S.signal_ready(T, st, sig, st[rb + 1]):
            return False
        if not S.in_phase_window(T, st, a, r, sig, st[rb + 1]):
            return False
        return not touched_while_frozen(T, F, st, a, r, 1 << bit, obs, ACC_OBS, 0, False, 0)
    return False


@jit
def exit_unobserved(T, F, st, a):
    """Can nobody tell when a's CTA goes? No in-flight entry targets it, and no other agent's
    remaining program (the future tables, waits ignored) updates, writes or reads any signal
    or slot of it: then no entry is ever in flight into it (its exit is clean whenever it comes)
    and no step targets it after it is gone. In the lap abstraction too: its tables by op are a
    superset of any count's remaining accesses (docs/reductions.md "Partial-order reduction in
    the lap abstraction")."""
    if F.cfg[0] == 0:
        return False
    cta = T.agent[a, S.A_CTA]
    off = T.cfg[S.C_OFF_INF]
    for j in range(T.cfg[S.C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if S.entry_field(T, e, S.E_CTA) == cta:
            return False
    ms = T.cfg[S.C_MAXS]
    bits = ((1 << ms) - 1) << (cta * ms)
    touch = (1 << UPD_FULL) | (1 << UPD_EMPTY) | (1 << WRITE_SLOT) | (1 << READ_SLOT)
    F.work[F.work.shape[0] - 1] -= T.cfg[S.C_AGENTS] * T.cfg[S.C_RINGS]  # (WORK_PER_FIELD)
    for b in range(T.cfg[S.C_AGENTS]):
        if b == a:
            continue
        base = S.agent_base(T, b)
        pos = position(T, F, b, st[base + S.F_PC], st[base + S.F_ITEM])
        for q in range(T.cfg[S.C_RINGS]):
            row = F.off[b, q] + pos * ms + st[S.ring_base(T, b, q)]
            for c in range(N_CLASSES):
                if touch & (1 << c) and F.mask[row, c] & bits:
                    return False
    return True


@jit
def cta_stays(T, F, st, a):
    """Does some other agent of a's CTA stay unfinished in every run in which a stands still?
    The walk (`frozen_touch`, a's CTA as `gone`, no access of its own) answers "touched" when it
    lets every other agent of the CTA finish. In the lap abstraction the walk answers "touched"
    at the lap bound (`F.limit`), so "stays" there holds for every count."""
    return not frozen_touch(T, F, st, a, 0, 0, -1, 0, 0, False, 1 << T.agent[a, S.A_CTA], -2, -1)


@jit
def independent_barrier_step(T, F, st, a, row, barrier):
    """Is {agent a's next named-barrier step} persistent (docs/reductions.md "Named barriers")?
    A satisfied sync_wait only moves a (the generation it observes only grows). An arrival
    (sync, sync_arrive) commutes with every other arrival of its generation; it is taken at
    once only when the other agents of its CTA cannot, while a stands still, make the arrivals
    that would complete the generation without it (then no other arrival lands in the next
    one, and a completing arrival of a's releases only agents nobody else can release)."""
    b = T.prog[row, S.P_BARRIER]
    cta = T.agent[a, S.A_CTA]
    pos = S.bar_pos(T, b, cta)
    if barrier == S.BAR_WAIT:
        arrived = st[S.arrived_field(T.cfg[S.C_AGF], T.cfg[S.C_RINGS], a, b)]
        return st[pos + 1] >= max(arrived, 1)
    room = T.bar_count[b, cta] - st[pos] - 1  # arrivals the others may make, a's still missing
    return not others_could_arrive(T, F, st, a, b, cta, room)


@jit
def others_could_arrive(T, F, st, a, b, cta, room):
    """Could the agents of CTA `cta` but a make more than `room` arrivals on barrier b while a
    stands still? Each program is walked from where it is (waits ignored) to its next `sync`
    on b, which blocks it until the generation completes: a superset of what it can do. An
    agent blocked on b itself makes none; one blocked on another barrier may be released."""
    E = F.eff
    W = F.work
    wk = W.shape[0] - 1
    n = 0
    for c in range(T.cfg[S.C_AGENTS]):
        if c == a or T.agent[c, S.A_CTA] != cta:
            continue
        base = S.agent_base(T, c)
        pc = st[base + S.F_PC]
        item = st[base + S.F_ITEM]
        if pc < T.agent[c, S.A_LEN] and st[base + S.F_SYNC] == 1:
            row = S.op_row(T, c, pc)
            if T.prog[row, S.P_BARRIER] == b:
                continue
            pc, item = S.next_pc(T, c, pc, item)
        while pc < T.agent[c, S.A_LEN]:
            W[wk] -= 1
            if W[wk] < 0 or item >= F.limit[c]:
                return True
            row = S.op_row(T, c, pc)
            kind = E[T.prog[row, S.P_CODE], S.EF_BARRIER]
            if (kind == S.BAR_SYNC or kind == S.BAR_ARRIVE) and T.prog[row, S.P_BARRIER] == b:
                n += 1
                if n > room:
                    return True
                if kind == S.BAR_SYNC:
                    break
            pc, item = S.next_pc(T, c, pc, item)
    return False


@jit
def mergeable(T, F, st, a):
    """May agent a's next step be taken at once? Not when it moves a to item F.limit[a] or
    beyond (a lap-abstraction MANY state: past it the item count matters)."""
    base = S.agent_base(T, a)
    pc = st[base + S.F_PC]
    if pc < T.agent[a, S.A_LEN] and S.next_pc(T, a, pc, st[base + S.F_ITEM])[1] >= F.limit[a]:
        return False
    return S.local_step(T, st, a) or independent_step(T, F, st, a)
