"""Partial-order reduction (por.py): the walk, `frozen_touch`, that decides whether another
agent can conflict with a step while its agent stands still.

Every other agent's program is walked forward from where it is (`walk_sweeps`, each agent as
far as it goes: `walk_agent`), with budgets of the arrivals and bytes the others can still
bring to each signal; what the walk found possible is judged at its end (`judged_at_end`).
Its scratch is F.work (records laid out in por_deps.py, set up by `walk_start`), and it
counts down the merge's work (por.py, WORK_PER_FIELD). `touched_while_frozen` asks the
in-flight entries and the future tables first, and walks only where they say "touched".
"""
from __future__ import annotations

from pipeproof.backends.base import FULL, jit
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.por_deps import (
    ACC_OBS, ACC_READ, ACC_UPD, ACC_WRITE, COPY_BYTES, EXPECT, W_ITEM, W_OUT, W_PC, W_RING0,
    commuting_arrivals, conflict_classes, entries_conflict, landings_commute, others_touch,
    record_len, signal_conflict, slot_conflict)
from pipeproof.checker.engines.por_signals import (
    bytes_keep_order, could_complete_with_every_arrival, could_pass, stuck_outside_window,
    walk_window)

# Ops one walk may visit before it gives up and answers "touched" (a long program whose agents
# nobody blocks would otherwise be walked to its end after every step).
WALK_LIMIT = 4096
# What walking one agent did (`walk_agent`): it took at least one op, it took none (stuck at a
# wait, or finished), or an op of its may conflict with the frozen step.
WALKED, STUCK, TOUCHED = 0, 1, 2

# The walk's arguments, passed along as tuples:
# layout (`walk_layout`): (rl, wx, bo, lo, ex, seen, n_sig), offsets in F.work;
# acc, the frozen step's access: (r, bits, t_kind, t_sig_acc, t_slot_acc, window, t_part,
#   commuting, phase_kept);
# sigs (`frozen_signals`): (sig_l, sig_x, sig_w, units_w).


@jit
def frozen_touch(T, F, st, a, r, bits, t_kind, t_sig_acc, t_slot_acc, window, gone, t_part,
                 skip, twin=0, reader=-1):
    """Can a step of another agent conflict with the access while agent a stands still?

    The access is to signal (`t_kind`, a signal kind or -1) and slot of ring r at every
    (CTA, stage) of the mask `bits` (bit cta * max_stages + stage). Every
    other agent's program is walked forward from where it is: an update adds its units to its
    signal's budget (in-flight commits start it), and a blocking wait passes only if the
    budget could complete its phase (`could_pass`); else the agent is stuck there until a
    later sweep finds a bigger budget. The sweeps stop when no agent moves; every position the
    others can reach while a stands still is then walked (a superset: waits are judged
    generously, syncs and read_waits always pass). Each op's accesses come from EFFECTS: a
    try always observes, a blocking wait observes when it can pass.
    `window` (a's step updates the signals): an agent stuck at a wait on one of them must be
    inside its phase window, or the state before the update could show a phase_alias the
    state after it does not.
    `gone`: CTAs (not a's own) the step arrives in. An arrival in a gone CTA is a violation,
    so if the walk lets every agent of one of them finish, that is "touched" too.
    An agent the walk would move to item F.limit[agent] or beyond answers "touched" (past it
    a lap-abstraction state's item count would matter).
    `a` = -1 and `t_part` >= -1: the step is the landing of in-flight entry `skip` into that
    part; every agent walks, and a copy another agent issues commutes with it when
    `landings_commute`. Bytes of copies in flight (but `skip`'s) or issued on the walk, and
    bytes expected on it, bound whether a full signal's tx can reach 0 (`could_pass`).
    `twin` != 0: the step is the firing of a commit entry of that value. Every entry of the
    same value fires the same step (entries are a multiset of values), so a run without that
    step fires none of them: in-flight entries equal to it, and commits the walk issues that
    equal it, add nothing to its signal's budget (docs/reductions.md "Commit firings").
    `reader` >= 0: the step is the finishing of that agent's oldest async read (entry `skip`).
    In a run without it none of the agent's reads finishes (they finish in issue order), so
    its reads in flight only grow, by the reads it issues: its read_wait n passes only while
    they are at most n (docs/reductions.md "Async reads")."""
    L = walk_layout(T)
    W = F.work
    # The merge's work left (WORK_PER_FIELD): the set-up, then one unit per op walked. Out of
    # work, the answer is "touched" (the safe answer), and the merge gives up.
    wk = W.shape[0] - 1
    W[wk] -= L[5] + T.cfg[S.C_AGENTS] * L[6]
    if W[wk] < 0:
        return True
    commuting = t_kind >= 0 and commuting_arrivals(T, F, r, t_kind)
    walk_start(T, F, st, L, a, r, t_kind, window, skip, twin)
    sigs = frozen_signals(T, st, r, bits, t_part, skip, twin)
    in_flight = S.reads_in_flight(T, st, reader) if reader >= 0 else 0
    # `phase_kept` (docs/reductions.md "Observations beside arrivals"): an agent's own arrival
    # (commuting) or wait on an mbarrier signal; an observation of it beside an arrival on it
    # conflicts only if the signal's phase can complete while a stands still, judged at the end
    # from the arrivals the walk found possible (`watched`: bit cta * ms + stage).
    phase_kept = (a >= 0 and t_part == -2 and twin == 0 and reader < 0 and t_kind >= 0 and
                  not S.counter_signals(T) and
                  (t_sig_acc == ACC_OBS or (t_sig_acc == ACC_UPD and commuting)))
    acc = (r, bits, t_kind, t_sig_acc, t_slot_acc, window, t_part, commuting, phase_kept)
    touched, watched, arrived = walk_sweeps(T, F, st, L, acc, sigs, reader, in_flight,
                                           WALK_LIMIT)
    if touched:
        return True
    return judged_at_end(T, F, st, L, a, acc, sigs, gone, skip, watched, arrived)


@jit
def walk_layout(T):
    """Where the walk's parts lie in F.work: (rl, the words of one agent's record; wx, the
    window records' exactness word within it, then the records (k', ph'); bo, lo, ex, per
    signal the arrival budget, the bytes that can still land, the bytes that can still be
    expected; seen, per agent and signal the least phase_no it has seen pass; n_sig, the
    number of signals)."""
    ms = T.cfg[S.C_MAXS]
    rings = T.cfg[S.C_RINGS]
    rl = record_len(rings, ms)
    n_sig = T.cfg[S.C_CTAS] * rings * ms * 2
    bo = T.cfg[S.C_AGENTS] * rl
    return rl, W_RING0 + 2 * rings, bo, bo + n_sig, bo + 2 * n_sig, bo + 3 * n_sig, n_sig


@jit
def walk_start(T, F, st, L, a, r, t_kind, window, skip, twin):
    """Set the walk's scratch up: budgets at 0 and no phase seen; each agent's record as the
    state has it (a out of the walk, and every finished agent), with its window records of
    (ring r, `t_kind`) when `window`; then the in-flight commits' arrivals (but `skip`'s, and
    the `twin`'s) and the in-flight copies' bytes (but `skip`'s)."""
    rl, wx, bo, lo, ex, seen, n_sig = L
    W = F.work
    ms = T.cfg[S.C_MAXS]
    rings = T.cfg[S.C_RINGS]
    n_agents = T.cfg[S.C_AGENTS]
    for i in range(3 * n_sig):
        W[bo + i] = 0
    for i in range(n_agents * n_sig):
        W[seen + i] = -1
    for b in range(n_agents):
        rec = b * rl
        base = S.agent_base(T, b)
        W[rec + W_PC] = st[base + S.F_PC]
        W[rec + W_ITEM] = st[base + S.F_ITEM]
        W[rec + W_OUT] = b == a or S.finished(T, st, b)
        for q in range(rings):
            W[rec + W_RING0 + 2 * q] = st[S.ring_base(T, b, q)]
            W[rec + W_RING0 + 2 * q + 1] = st[S.ring_base(T, b, q) + 1]
        W[rec + wx] = 0
        if window and t_kind >= 0 and S.window_field(T, b, r, 0, t_kind) >= 0:
            W[rec + wx] = 1
            for s in range(ms):
                w = S.window_field(T, b, r, s, t_kind)
                W[rec + wx + 1 + 2 * s] = st[w]
                W[rec + wx + 2 + 2 * s] = st[w + 1]
    off = T.cfg[S.C_OFF_INF]
    for j in range(T.cfg[S.C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if S.entry_field(T, e, S.E_KIND) == S.ENTRY_COMMIT and j != skip and e != twin:
            sig = S.sig_index(T, S.entry_field(T, e, S.E_CTA), S.entry_field(T, e, S.E_RING),
                              S.entry_field(T, e, S.E_STAGE), S.entry_signal(T, e))
            W[bo + sig] += S.entry_field(T, e, S.E_VAL)
        elif S.entry_field(T, e, S.E_KIND) == S.ENTRY_COPY and j != skip:
            sig = S.sig_index(T, S.entry_field(T, e, S.E_CTA), S.entry_field(T, e, S.E_RING),
                              S.entry_field(T, e, S.E_STAGE), FULL)
            W[lo + sig] += T.bytes_vals[S.entry_field(T, e, S.E_BIDX)]


@jit
def frozen_signals(T, st, r, bits, t_part, skip, twin):
    """The signals the walk treats apart: (sig_l, a landing's own full signal: arrivals on it
    are judged at the end (`arrived`); sig_x, an expect_tx's signal (one CTA): landings on it
    are judged at the end; sig_w and units_w, the twin's signal and count, when a commit the
    walk issues is an entry of its value: only when entries carry no agent and seq (no async
    reads), else a value may differ). -1 (and 0) where there is none."""
    ms = T.cfg[S.C_MAXS]
    sig_l = -1
    if t_part >= -1:
        e = st[T.cfg[S.C_OFF_INF] + skip]
        sig_l = S.sig_index(T, S.entry_field(T, e, S.E_CTA), r, S.entry_field(T, e, S.E_STAGE),
                            FULL)
    sig_x = -1
    if t_part == EXPECT:
        for i in range(T.cfg[S.C_CTAS] * ms):
            if (bits >> i) & 1:
                sig_x = S.sig_index(T, i // ms, r, i % ms, FULL)
    sig_w, units_w = -1, 0
    if twin != 0 and T.ent[S.E_SEQ, 1] == 0 and T.ent[S.E_AGENT, 1] == 0:
        sig_w = S.sig_index(T, S.entry_field(T, twin, S.E_CTA), S.entry_field(T, twin, S.E_RING),
                            S.entry_field(T, twin, S.E_STAGE), S.entry_signal(T, twin))
        units_w = S.entry_field(T, twin, S.E_VAL)
    return sig_l, sig_x, sig_w, units_w


@jit
def walk_sweeps(T, F, st, L, acc, sigs, reader, in_flight, budget):
    """Walk the agents still in the walk, each as far as it goes (`walk_agent`), sweep after
    sweep, until no agent moves (an agent stuck at a wait is looked at again in the next
    sweep): (touched, watched, arrived). At most `budget` ops in all (WALK_LIMIT), then
    "touched"."""
    W = F.work
    watched = 0
    arrived = False
    moved = True
    while moved:
        moved = False
        for b in range(T.cfg[S.C_AGENTS]):
            if W[b * L[0] + W_OUT]:
                continue
            code, budget, watched, arrived, in_flight = walk_agent(
                T, F, st, L, acc, sigs, reader, b, budget, watched, arrived, in_flight)
            if code == TOUCHED:
                return True, watched, arrived
            if code == WALKED:
                moved = True
    return False, watched, arrived


@jit
def walk_agent(T, F, st, L, acc, sigs, reader, b, budget, watched, arrived, in_flight):
    """Walk agent b forward, op by op, until it is stuck at a wait, finished, or an op of its
    may conflict with the frozen access: (WALKED if it took an op, STUCK if none, or TOUCHED;
    then the walk's budget, watched, arrived and the reader's reads in flight). A try always
    observes, a blocking wait observes when it can pass (`could_pass`); an update's units and
    bytes go into the budgets; an arrival beside an observation that keeps its phase
    (`watched`) or beside a landing (`arrived`) is judged at the end. One function, the walk's
    inner loop: a call per op would cost the walk most of its speed (numba passes the tables
    by value to a function LLVM does not inline)."""
    rl, wx, bo, lo, ex, seen, n_sig = L
    r, bits, t_kind, t_sig_acc, t_slot_acc, window, t_part, commuting, phase_kept = acc
    sig_l, sig_x, sig_w, units_w = sigs
    W = F.work
    E = F.eff
    ms = T.cfg[S.C_MAXS]
    wk = W.shape[0] - 1
    rec = b * rl
    cta = T.agent[b, S.A_CTA]
    code = STUCK
    while True:
        budget -= 1
        W[wk] -= 1
        if budget < 0 or W[wk] < 0:
            return TOUCHED, budget, watched, arrived, in_flight
        pc = W[rec + W_PC]
        if pc >= T.agent[b, S.A_LEN]:
            W[rec + W_OUT] = 1
            return code, budget, watched, arrived, in_flight
        row = S.op_row(T, b, pc)
        op = T.prog[row, S.P_CODE]
        rr = T.prog[row, S.P_RING]
        sb = rec + W_RING0 + 2 * rr
        stage = W[sb]
        here = rr == r and (bits >> (cta * ms + stage)) & 1 == 1
        obs = E[op, S.EF_OBS]
        if obs >= 0:
            sig = S.sig_index(T, cta, rr, stage, obs)
            passes = E[op, S.EF_BLOCKS] == 0
            if not passes:
                passes = could_pass(T, F, st, W, seen + b * n_sig, sig, W[sb + 1],
                                    W[bo + sig], W[lo + sig], W[ex + sig], sig == sig_l)
            if W[rec + wx] == 1 and rr == r and obs == t_kind:
                walk_window(T, W, rec + wx, b, r, pc, stage, W[sb + 1], row, passes,
                            E[op, S.EF_BLOCKS])
            if passes:
                if here and obs == t_kind and signal_conflict(t_sig_acc, ACC_OBS, commuting):
                    if not phase_kept:
                        return TOUCHED, budget, watched, arrived, in_flight
                    watched |= 1 << (cta * ms + stage)
            else:
                # An agent with a reset keeps its window as of its last passed wait, which the
                # walk does not update: its stuck wait counts as touching, unless the state's
                # record still gives its window exactly (`stale_ok`).
                if window and here and obs == t_kind and stuck_outside_window(
                        T, st, W, rec, wx, b, rr, stage, W[sb + 1], sig, obs):
                    return TOUCHED, budget, watched, arrived, in_flight
                if T.prog[row, S.P_UNLESS] != 1:
                    return code, budget, watched, arrived, in_flight  # stuck (unless=ready: on)
        if b == reader and E[op, S.EF_WAITS_READS] and in_flight > T.prog[row, S.P_N]:
            return code, budget, watched, arrived, in_flight  # the reader's reads never go down
        upd = E[op, S.EF_UPD]
        if upd >= 0 or E[op, S.EF_WRITES]:
            units = E[op, S.EF_UNITS]
            if units < 0:
                units = T.prog[row, S.P_N]
            mask = S.targets_mask(T, b, T.prog[row, S.P_TARGET])
            # a copy beside a landing: they commute in different parts (landings_commute)
            beside = (t_part >= -1 and E[op, S.EF_ASYNC] == S.ENTRY_COPY and
                      landings_commute(T, F, rr, t_part, T.prog[row, S.P_PART]))
            for dst in range(T.cfg[S.C_CTAS]):
                if mask & (1 << dst) == 0:
                    continue
                at = rr == r and (bits >> (dst * ms + stage)) & 1 == 1
                if upd >= 0:
                    sig = S.sig_index(T, dst, rr, stage, upd)
                    if (at and upd == t_kind and not beside and
                            not (sig == sig_x and E[op, S.EF_ASYNC] == S.ENTRY_COPY) and
                            signal_conflict(t_sig_acc, ACC_UPD, commuting)):
                        if phase_kept and t_sig_acc == ACC_OBS:
                            watched |= 1 << (dst * ms + stage)
                        elif sig != sig_l or units <= 0 or E[op, S.EF_TX] < 0:
                            return TOUCHED, budget, watched, arrived, in_flight
                        else:
                            arrived = True  # an arrival beside a landing: judged at the end
                    # (a twin's firing is the frozen step: its units are not in the budget)
                    twin = sig == sig_w and units == units_w and E[op, S.EF_ASYNC] == S.ENTRY_COMMIT
                    add_to_budgets(W, bo, lo, ex, sig, 0 if twin else units, E[op, S.EF_TX],
                                   T.prog[row, S.P_N])
                if (E[op, S.EF_WRITES] and at and not beside and
                        slot_conflict(t_slot_acc, ACC_WRITE)):
                    return TOUCHED, budget, watched, arrived, in_flight
        if E[op, S.EF_READS] and here and slot_conflict(t_slot_acc, ACC_READ):
            return TOUCHED, budget, watched, arrived, in_flight
        if b == reader and E[op, S.EF_ASYNC] == S.ENTRY_READ:
            in_flight += 1
        if E[op, S.EF_STAGE] == S.STAGE_ADVANCE:
            S.advance_at(T, W, sb, rr)
        elif E[op, S.EF_STAGE] == S.STAGE_RESET:
            W[sb] = T.agent[b, S.A_RING0 + 2 * rr]
            W[sb + 1] = T.agent[b, S.A_RING0 + 2 * rr + 1]
        # syncs and read_waits touch no signal or slot: walked over (they may pass)
        W[rec + W_PC], W[rec + W_ITEM] = S.next_pc(T, b, pc, W[rec + W_ITEM])
        if W[rec + W_ITEM] >= F.limit[b]:
            return TOUCHED, budget, watched, arrived, in_flight
        code = WALKED


@jit
def add_to_budgets(W, bo, lo, ex, sig, units, tx, n):
    """An update of `sig`: its arrival `units` into the arrival budget, and its `n` bytes into
    the bytes that can land (a copy: tx < 0) or be expected (an expect_tx: tx > 0)."""
    W[bo + sig] += units
    if tx < 0:
        W[lo + sig] += n
    elif tx > 0:
        W[ex + sig] += n


@jit
def judged_at_end(T, F, st, L, a, acc, sigs, gone, skip, watched, arrived):
    """What the walk found possible, judged once it is over: the watched signals' phases, an
    expect_tx's landings, an arrival beside a landing, landings of several byte counts, and
    whether a CTA the step arrives in can go."""
    rl, wx, bo, lo, ex, seen, n_sig = L
    r, bits, t_kind, t_sig_acc, t_slot_acc, window, t_part, commuting, phase_kept = acc
    sig_l, sig_x, sig_w, units_w = sigs
    W = F.work
    E = F.eff
    ms = T.cfg[S.C_MAXS]
    if watched:
        # The phase of each watched signal must stay incomplete in every run without a's step,
        # and an arrival of a's must not complete it either: fewer arrivals possible than
        # pending (then pending never reaches 0, whatever the bytes do).
        own = 0
        if t_sig_acc == ACC_UPD:
            row = S.op_row(T, a, st[S.agent_base(T, a) + S.F_PC])
            own = E[T.prog[row, S.P_CODE], S.EF_UNITS]
            if own < 0:
                own = T.prog[row, S.P_N]
        for i in range(T.cfg[S.C_CTAS] * ms):
            if (watched >> i) & 1:
                sig = S.sig_index(T, i // ms, r, i % ms, t_kind)
                if W[bo + sig] + own >= st[S.sig_base(T, sig) + 1]:
                    return True
    if sig_x >= 0:
        # An expect_tx and the landings beside it commute when they cannot take tx below
        # minus its bytes (docs/reductions.md "Copy landings")
        row = S.op_row(T, a, st[S.agent_base(T, a) + S.F_PC])
        if W[lo + sig_x] > st[S.sig_base(T, sig_x) + 2] + T.prog[row, S.P_N]:
            return True
    if arrived:
        # An arrival and a landing commute when the phase cannot complete without the landing
        # and no arrival finds pending 0 (docs/reductions.md "Copy landings").
        b = S.sig_base(T, sig_l)
        if W[bo + sig_l] > st[b + 1] or could_complete_with_every_arrival(
                T, st, sig_l, W[bo + sig_l], W[lo + sig_l], W[ex + sig_l]):
            return True
    if sig_l >= 0 and F.uniform[r, COPY_BYTES] < 0:
        # landings of several byte counts (docs/reductions.md "Landings of different byte
        # counts"): they commute only if the phase completes at the last of them
        e = st[T.cfg[S.C_OFF_INF] + skip]
        if not bytes_keep_order(T, st, sig_l, W[bo + sig_l], W[lo + sig_l], W[ex + sig_l],
                                T.bytes_vals[S.entry_field(T, e, S.E_BIDX)]):
            return True
    if gone:
        for dst in range(T.cfg[S.C_CTAS]):
            if gone & (1 << dst):
                alive = False
                for b in range(T.cfg[S.C_AGENTS]):
                    if T.agent[b, S.A_CTA] == dst and W[b * rl + W_OUT] == 0:
                        alive = True
                if not alive:
                    return True
    return False


@jit
def touched_while_frozen(T, F, st, a, r, bits, t_kind, t_sig_acc, t_slot_acc, window, gone):
    """In-flight entries first; then the tables' quick answer (nobody will ever access it in a
    conflicting way, and no CTA it arrives in can go); then the walk."""
    if entries_conflict(T, F, st, r, bits, t_kind, t_sig_acc, t_slot_acc, -2, -1):
        return True
    commuting = t_kind >= 0 and commuting_arrivals(T, F, r, t_kind)
    classes = conflict_classes(t_kind, t_sig_acc, t_slot_acc, commuting)
    if gone == 0 and not others_touch(T, F, st, a, r, classes, bits):
        return False
    return frozen_touch(T, F, st, a, r, bits, t_kind, t_sig_acc, t_slot_acc, window, gone,
                        -2, -1)
