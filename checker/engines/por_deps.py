"""Partial-order reduction (por.py): the dependency relation, and what the future tables say.

Which accesses conflict (`signal_conflict`, `slot_conflict`, `conflict_classes`: from the ops'
footprints, `S.EFFECTS`), whether an in-flight entry conflicts with an access
(`entries_conflict`), and the future tables' quick answer: will another agent's remaining
program access a signal or slot at all (`position`, `others_touch`). The tables themselves
(`FutureTables`) are built in por.py; their layout is written here: the access classes of
`mask`, the column of `uniform`, and the records of the walk's scratch `work`
(`frozen_touch`, por_walk.py).
"""
from __future__ import annotations

from pipeproof.backends.base import FULL, jit
from pipeproof.checker.core import semantics as S

# Access classes of the future tables (bit c of a class mask).
OBS_FULL, OBS_EMPTY, UPD_FULL, UPD_EMPTY, WRITE_SLOT, READ_SLOT = 0, 1, 2, 3, 4, 5
N_CLASSES = 6
# Accesses: to a signal (observe, update) and to a slot (read, write); 0 = none.
ACC_OBS, ACC_UPD = 1, 2
ACC_READ, ACC_WRITE, ACC_ISSUE = 1, 2, 3
COPY_BYTES = 2  # uniform[ring, COPY_BYTES]
# frozen_touch's t_part when the step is an expect_tx (landings beside it are judged at the end)
EXPECT = -3


# frozen_touch's record of each agent in F.work: program position, whether it is out of the
# walk (finished, or the agent that stands still), then (stage, phase) per ring, then its
# phase_alias window records (k', ph') of the frozen access's ring and signal kind, one per
# stage, as the walk moves it (por_signals.walk_window), after a word saying whether they are
# exact. An agent stuck at a wait keeps its position there and is looked at again in the next
# sweep.
W_PC, W_ITEM, W_OUT, W_RING0 = 0, 1, 2, 3


@jit
def record_len(rings, max_stages):
    """Words of one agent's record in F.work (`frozen_touch`)."""
    return W_RING0 + 2 * rings + 1 + 2 * max_stages


# ------------------------------------------------------------------ the dependency relation

@jit
def signal_conflict(t_acc, u_acc, commuting_arrivals):
    """Do two accesses to one signal fail to commute? Observations commute (a try's answer and
    a wait's enabledness depend only on the phase); equal arrivals commute when every update
    of the signal is such an arrival (`commuting_arrivals`); anything else with an update
    does not."""
    if t_acc == 0 or u_acc == 0:
        return False
    if t_acc == ACC_OBS and u_acc == ACC_OBS:
        return False
    if t_acc == ACC_UPD and u_acc == ACC_UPD:
        return not commuting_arrivals
    return True


@jit
def slot_conflict(t_acc, u_acc):
    """Reads of one slot commute; a write conflicts with every other access to it. Issuing a
    copy into it (ACC_ISSUE) is seen only by a read (a copy in flight is a read_before_fill)."""
    if t_acc == 0 or u_acc == 0:
        return False
    if t_acc == ACC_ISSUE or u_acc == ACC_ISSUE:
        return t_acc == ACC_READ or u_acc == ACC_READ
    return not (t_acc == ACC_READ and u_acc == ACC_READ)


@jit
def commuting_arrivals(T, F, r, kind):
    """amd counters only add; an mbarrier's arrivals commute when all have one count, no tx."""
    return S.counter_signals(T) or F.uniform[r, kind] >= 0


@jit
def conflict_classes(t_kind, t_sig_acc, t_slot_acc, commuting):
    """The mask of the future tables' access classes that conflict with an access (t_kind:
    the kind of the signal it accesses, or -1)."""
    mask = 0
    for kind in range(2):
        if kind == t_kind:
            if signal_conflict(t_sig_acc, ACC_OBS, commuting):
                mask |= 1 << (OBS_FULL if kind == FULL else OBS_EMPTY)
            if signal_conflict(t_sig_acc, ACC_UPD, commuting):
                mask |= 1 << (UPD_FULL if kind == FULL else UPD_EMPTY)
    if slot_conflict(t_slot_acc, ACC_WRITE):
        mask |= 1 << WRITE_SLOT
    if slot_conflict(t_slot_acc, ACC_READ):
        mask |= 1 << READ_SLOT
    return mask


# ------------------------------------------------------------------ the future tables' answer

@jit
def position(T, F, a, pc, item):
    """Index of (pc, item) in the agent's unrolled program (`Agent.unrolled()`), or pc in
    tables by op (`any_count_tables`: pc, or past the first block at the agent's last item)."""
    if F.cfg[1] == 1:
        if (T.agent[a, S.A_BODY_START] <= pc < T.agent[a, S.A_BODY_END]
                and item == T.agent[a, S.A_ITEMS] - 1):
            return T.agent[a, S.A_LEN] + 1 + pc
        return min(pc, T.agent[a, S.A_LEN])
    bs = T.agent[a, S.A_BODY_START]
    be = T.agent[a, S.A_BODY_END]
    if pc < bs:
        return pc
    if pc < be:
        return bs + item * (be - bs) + (pc - bs)
    return bs + T.agent[a, S.A_ITEMS] * (be - bs) + (pc - be)


@jit
def others_touch(T, F, st, a, r, classes, bits):
    """Will any agent but `a` still access a signal or slot of ring r among `bits` (bit
    cta * max_stages + stage) in one of the access classes of the mask `classes`, by the
    future tables (a superset: waits are ignored)?"""
    ms = T.cfg[S.C_MAXS]
    F.work[F.work.shape[0] - 1] -= T.cfg[S.C_AGENTS]  # the merge's work (WORK_PER_FIELD)
    for b in range(T.cfg[S.C_AGENTS]):
        if b == a:
            continue
        base = S.agent_base(T, b)
        pos = position(T, F, b, st[base + S.F_PC], st[base + S.F_ITEM])
        row = F.off[b, r] + pos * ms + st[S.ring_base(T, b, r)]
        for c in range(N_CLASSES):
            if classes & (1 << c) and F.mask[row, c] & bits:
                return True
    return False


# ------------------------------------------------------------------ the in-flight entries

@jit
def entries_conflict(T, F, st, r, bits, t_kind, t_sig_acc, t_slot_acc, t_part, skip):
    """Does an in-flight entry (but entry `skip`) conflict with the access? A copy lands
    (writes its slot part and updates its full signal's tx), a commit arrives on its
    signal (`S.entry_signal`: empty or full), an async read reads, an async write writes. `t_part` >= -1: the access is a landing into that part (-1
    every part), which commutes with another landing of the ring's one byte count into
    another part (`landings_commute`)."""
    off = T.cfg[S.C_OFF_INF]
    ms = T.cfg[S.C_MAXS]
    for j in range(T.cfg[S.C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if j == skip or S.entry_field(T, e, S.E_RING) != r:
            continue
        if (bits >> (S.entry_field(T, e, S.E_CTA) * ms + S.entry_field(T, e, S.E_STAGE))) & 1 == 0:
            continue
        kind = S.entry_field(T, e, S.E_KIND)
        if kind == S.ENTRY_COPY:
            if t_part >= -1:
                if not landings_commute(T, F, r, t_part, entry_part_of(T, e)):
                    return True
                continue
            if t_part == EXPECT:
                continue  # its bytes count in the walk's landing budget, judged at the end
            if t_kind == FULL and signal_conflict(t_sig_acc, ACC_UPD, False):
                return True
            if slot_conflict(t_slot_acc, ACC_WRITE):
                return True
        elif kind == S.ENTRY_COMMIT:  # arrives on its signal (commit_empty's, commit_full's)
            on = S.entry_signal(T, e)
            if t_kind == on and signal_conflict(t_sig_acc, ACC_UPD,
                                                commuting_arrivals(T, F, r, on)):
                return True
        elif slot_conflict(t_slot_acc, ACC_WRITE if S.entry_writes(T, e) else ACC_READ):
            # an async read reads its slot; an async write's finishing changes what a read
            # of the slot finds (still being written), so it conflicts as a write
            return True
    return False


@jit
def entry_part_of(T, e):
    """The part a copy entry stores into (-1: every part)."""
    if T.cfg[S.C_MAXP] > 1:
        return S.entry_field(T, e, S.E_PART) - 1
    return 0


@jit
def landings_commute(T, F, r, part, other):
    """Two landings on one slot and full signal may commute when they store into different
    parts (-1: every part). With one byte count for every copy into the ring they do (the
    signal goes through the same tx values in either order, and completes at the same one);
    with several, only where the walk shows that the signal cannot complete before the last
    of them (`bytes_keep_order`, docs/reductions.md "Landings of different byte counts")."""
    return part >= 0 and other >= 0 and part != other
