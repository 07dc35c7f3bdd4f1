"""The transition relation of a compiled pipeline model, in numba-compatible Python.

One function, `step`, is the whole semantics: given an unpacked state vector `st`, an action
code and the model tables `T` (checker/core/model.py builds them), it writes the successor into
`out` and returns the violation bits the step commits, or -1 when the action is not enabled.
`state_violations` gives the properties of a state itself (deadlock, a waiter outside its
phase window). Signal updates go through backends/ and nowhere else.

`step` does not know op names: it interprets each op's effects (`effects_table`, from
spec/ops.py OP_EFFECTS), which the model appends to every row of the program table (columns
P_EFF + EF_*, read where the op's other operands are), so an op made of existing effects is
added in spec/ops.py alone.

Action codes: 0 .. A-1 = agent a executes its next op; A + j = in-flight entry j of `st`
lands (copy), fires (commit) or finishes (async read).

The state layout and the program order are checker/core/state_layout.py's, the in-flight entries
checker/core/inflight.py's; both are re-exported here, so engines read everything as `S.*`.
"""
from pipeproof.backends import dispatch
from pipeproof.backends.base import (COMPLETED, EMPTY, FULL, RAN_AHEAD, TRAP_OVER_ARRIVAL,
                                     TRAP_TX_RANGE, jit)
from pipeproof.spec.ops import OP_EFFECTS
from pipeproof.checker.core.inflight import *  # noqa: F401,F403  (re-exported: S.add_entry ...)
from pipeproof.checker.core.inflight import (EXIT_CLEAN, EXIT_FOREIGN, add_entry, commit_fired,
                                        commits_in_flight, entry_field, fill_in_flight_to,
                                        entry_into, exit_inflight, finish_read, make_entry,
                                        reads_in_flight, remove_entry, with_field)
from pipeproof.checker.core.state_layout import *  # noqa: F401,F403  (re-exported: S.F_PC ...)
from pipeproof.checker.core.state_layout import (C_SIGNAL_MODEL, SM_COUNTER, A_CTA, A_DIV, A_LEN, A_RING0, C_AGENTS, C_AGF, C_BACKEND,
                                            C_CTAS, C_FIELDS, C_INFLIGHT, C_MAXS, C_OFF_INF,
                                            C_MAXP, C_RINGS, C_STRICT_EXIT, C_TAG_OUTSIDE,
                                            DET_W, E_AGENT, E_CSEQ, E_PEER,
                                            E_BIDX, E_PART, P_AT, P_DIV, P_EVERY, P_PART, P_TAG,
                                            PT_CTAS, PT_FILL0, PT_NFILLS, R_PARTS, A_ITEMS,
                                            part_row, settle_pc, A_PROG, A_BODY_START,
                                            A_BODY_END, reset_until, window_field,
                                            E_CTA, E_KIND, E_RING, E_SEQ, E_STAGE, E_VAL,
                                            COMMIT_ON_FULL, READ_WRITES, entry_signal, entry_writes,
                                            ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ, F_ITEM, F_PC,
                                            F_SYNC, P_BARRIER, P_BYTES_IDX, P_EFF, P_N,
                                            P_RING, P_TARGET, P_UNLESS, R_EMPTY_COUNT,
                                            R_FULL_COUNT, R_STAGES, advance_stage, agent_base,
                                            arrived_field, bar_pos, cta_gone, expected_of,
                                            finished, next_pc, op_row, op_tag, ring_base,
                                            sig_base, sig_index, slot_pos, targets_mask)

# Op codes: the program table's P_CODE and the rows of `effects_table`, in spec/ops.py's order (the
# GPU event logs record them). Nothing in the engines compares an op code with a name: they
# read the op's effects. The named codes are for tests and the reductions' tables.
OP_CODES = {name: code for code, name in enumerate(OP_EFFECTS)}
N_OPS = len(OP_CODES)
WAIT_FULL, WAIT_EMPTY, TRY_FULL, TRY_EMPTY = 0, 1, 2, 3
ARRIVE_FULL, ARRIVE_EMPTY, EXPECT_TX, COPY = 4, 5, 6, 7
WRITE, READ, COMMIT_EMPTY, ADVANCE, RESET, DRAIN, SYNC = 8, 9, 10, 11, 12, 13, 14
READ_ASYNC, READ_WAIT, SYNC_ARRIVE, SYNC_WAIT = 15, 16, 17, 18
COMMIT_FULL = 19
assert list(OP_CODES)[:19] == ["wait_full", "wait_empty", "try_full", "try_empty", "arrive_full",
                              "arrive_empty", "expect_tx", "copy", "write", "read", "commit_empty",
                              "advance", "reset", "drain", "sync", "read_async", "read_wait",
                              "sync_arrive", "sync_wait"], \
    "spec/ops.py's order is the op codes' (GPU logs record them): add a new op at the end"

# Each op's effects as a table, one row per op code (appended to each program row at P_EFF;
# the partial-order reduction's footprint table F.eff is the same table). Columns:
#   EF_OBS     signal kind it observes (FULL/EMPTY; -1 none): a wait or try reads the parity
#   EF_BLOCKS  1: enabled only when what it waits for is there (a signal, a barrier, its reads)
#   EF_UPD     signal kind it updates (-1 none), at each of its target CTAs
#   EF_UNITS   arrival units of one update: -1 the op's count n; 1 arrive.expect_tx; 0 tx only
#   EF_TX      +1: adds the op's bytes to tx now; -1: subtracts them when its copy lands
#   EF_WRITES  1: stores a tag into the slot (at its targets); EF_READS 1: checks the slot
#   EF_ASYNC   the in-flight entry it leaves (ENTRY_COPY, ENTRY_COMMIT, ENTRY_READ; 0 none):
#              its update and its store happen when that entry lands or fires
#   EF_STAGE   its effect on the agent's own stage: STAGE_ADVANCE, STAGE_RESET or 0
#   EF_BARRIER what it does at a named barrier: BAR_SYNC, BAR_ARRIVE, BAR_WAIT (0 none)
#   EF_WAITS_READS  1: blocks until at most n of the agent's async reads are in flight
#   EF_LOCAL   1: its only effect is on the agent's own stage (`local_step`)
#   EF_ACTS    1: it does anything besides waiting or observing (0: `step` moves it on at once)
(EF_OBS, EF_BLOCKS, EF_UPD, EF_UNITS, EF_TX, EF_WRITES, EF_READS, EF_ASYNC, EF_STAGE,
 EF_BARRIER, EF_WAITS_READS, EF_LOCAL, EF_ACTS) = range(13)
STAGE_ADVANCE, STAGE_RESET = 1, 2
BAR_SYNC, BAR_ARRIVE, BAR_WAIT = 1, 2, 3


def effects_table():
    """The effects of every op as an int64 array, one row per op code (P_EFF.., F.eff)."""
    import numpy as np
    moves = {"": 0, "advance": STAGE_ADVANCE, "reset": STAGE_RESET}
    issues = {"": 0, "copy": ENTRY_COPY, "commit": ENTRY_COMMIT, "read": ENTRY_READ}
    barriers = {"": 0, "sync": BAR_SYNC, "arrive": BAR_ARRIVE, "wait": BAR_WAIT}
    rows = [None] * N_OPS
    for name, e in OP_EFFECTS.items():
        rows[OP_CODES[name]] = (e.observes, int(e.blocks), e.updates, e.units, e.tx,
                                int(e.stores), int(e.checks_read), issues[e.issues],
                                moves[e.move], barriers[e.barrier], int(e.waits_reads),
                                int(e.local), int(e.acts))
    return np.array(rows, dtype=np.int64)

# Violation bits, in the reporting order (docs/model.md "Violation kinds").
DEADLOCK = 1
READ_BEFORE_FILL = 2
OVERWRITE_BEFORE_DRAIN = 4
PHASE_ALIAS = 8
OVER_ARRIVAL = 16
TX_RANGE = 32
INFLIGHT_AT_EXIT = 64
N_KINDS = 7
# Not a violation: a step made its CTA gone while only the CTA's own copies or commits were in
# flight into it (DESIGN, revised 2026-12-02; with C_STRICT_EXIT it is INFLIGHT_AT_EXIT). The
# search records its shallowest occurrence beside the kinds (row N_KINDS) and goes on.
UNAWAITED_AT_EXIT = 1 << N_KINDS
N_RECORDS = N_KINDS + 1
INFLIGHT_FULL = 1 << 20   # not a violation: the model's in-flight capacity ran out (inconclusive)
TRAP = 1 << 21            # with a violation bit: the hardware traps here, so the path ends


# ---------------------------------------------------------------- signals

@jit
def counter_signals(T):
    """May the reductions reason about the signals as monotone counters (amd)? What they may
    assume is the backend record's `signal_model` (C_SIGNAL_MODEL), not its name."""
    return T.cfg[C_SIGNAL_MODEL] == SM_COUNTER


@jit
def counter_ready(T, sig, counter, phase):
    """Would a wait at `phase` on `sig` pass with the signal's counter at `counter` (a counter
    backend: the other words unused)?"""
    return dispatch.signal_ready(T.cfg[C_BACKEND], counter, 0, 0, expected_of(T, sig), phase,
                                 sig % 2)


@jit
def signal_ready(T, st, sig, phase):
    """Would a wait at `phase` on `sig` pass? The backend's rule, by the table's backend code
    (backends/dispatch.py: the compiled engines' only way to a backend's rules)."""
    b = sig_base(T, sig)
    return dispatch.signal_ready(T.cfg[C_BACKEND], st[b], st[b + 1], st[b + 2],
                                 expected_of(T, sig), phase, sig % 2)


@jit
def in_phase_window(T, st, a, r, sig, phase):
    """Is agent a, at `phase` on ring r, inside its phase window on `sig` (docs/rules.md "The
    phase_alias window")? The one place the window rule is read (a counter backend's window
    holds every wait)."""
    return dispatch.in_window_at(T.cfg[C_BACKEND], st[sig_base(T, sig)],
                                 intended(T, st, a, r, sig, phase))


@jit
def intended(T, st, a, r, sig, phase):
    """The signal phase k agent a at `phase` means on `sig` (of ring r): from its phase alone,
    or, for an agent with a `reset` of the ring, from its last passed wait (k', ph')."""
    w = window_field(T, a, r, (sig // 2) % T.cfg[C_MAXS], sig % 2)
    if w < 0:
        return dispatch.intended_phase(T.cfg[C_BACKEND], phase, T.agent[a, A_RING0 + 2 * r + 1])
    return dispatch.intended_after(T.cfg[C_BACKEND], st[w], st[w + 1], phase)


@jit
def window_passed(T, out, a, r, sig, phase, pc):
    """Agent a's wait (or ready try) at `pc` on `sig` passed: record (k', ph') = (k, ph). Once
    no `reset` of the ring lies ahead the phase only grows, so k' + (ph - ph') is all that is
    ever read: it is stored as (k - (ph - p0), p0), one state however late the wait passed."""
    w = window_field(T, a, r, (sig // 2) % T.cfg[C_MAXS], sig % 2)
    if w < 0:
        return
    out[w], out[w + 1] = window_record(T, a, r, intended(T, out, a, r, sig, phase), phase, pc)


@jit
def window_record(T, a, r, k, phase, pc):
    """The (k', ph') agent a keeps after passing a wait at `pc` meaning signal phase k at
    `phase` (`window_passed`; por.walk_window too)."""
    if pc <= reset_until(T, a, r):
        return k, phase
    p0 = T.agent[a, A_RING0 + 2 * r + 1]
    return k - (phase - p0), p0


@jit
def observe(T, st, sig):
    """A wait or try on `sig` passed: the current phase has been seen by someone."""
    st[sig_base(T, sig) + 3] = 1


@jit
def signal_update(T, st, sig, arrive_count, tx_delta, det):
    """Apply one atomic update to a signal (the backend's `update`); returns violation bits,
    traps included. A phase completed while nobody observed the one before ran ahead: extra
    arrivals completed a whole phase (over_arrival, not a trap)."""
    b = sig_base(T, sig)
    old_phase = st[b]
    a, pend, tx, outcome = dispatch.update(T.cfg[C_BACKEND], st[b], st[b + 1], st[b + 2],
                                           expected_of(T, sig), arrive_count, tx_delta, st[b + 3])
    if outcome & TRAP_OVER_ARRIVAL:
        note(det, OVER_ARRIVAL, sig, arrive_count, st[b + 1], 0)
        return OVER_ARRIVAL | TRAP
    if outcome & TRAP_TX_RANGE:
        note(det, TX_RANGE, sig, tx, 0, 1)
        return TX_RANGE | TRAP
    bits = 0
    if outcome & RAN_AHEAD:
        note(det, OVER_ARRIVAL, sig, old_phase, 0, 1)
        bits |= OVER_ARRIVAL
    if outcome & COMPLETED:
        st[b + 3] = 0
    st[b] = a
    st[b + 1] = pend
    st[b + 2] = tx
    return bits


@jit
def note(det, bit, x, y, z, w):
    """Record the first detail of violation `bit` in this step (for the human message)."""
    k = 0
    while (1 << k) != bit:
        k += 1
    if det[k * DET_W] == -1:
        det[k * DET_W] = x
        det[k * DET_W + 1] = y
        det[k * DET_W + 2] = z
        det[k * DET_W + 3] = w


# ---------------------------------------------------------------- slots and readers

@jit
def reads_pending(T, st, a, t, r, s):
    """Will agent `a` still read item `t` of ring `r` at stage `s`? An async read of it still in
    flight counts; otherwise its program is simulated forward, ignoring waits."""
    off = T.cfg[C_OFF_INF]
    for j in range(T.cfg[C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if (entry_into(T, e, ENTRY_READ, T.agent[a, A_CTA], r, s) and not entry_writes(T, e)
                and entry_field(T, e, E_AGENT) == a and entry_field(T, e, E_VAL) - 1 == t):
            return True
    base = agent_base(T, a)
    pc = st[base + F_PC]
    item = st[base + F_ITEM]
    stage = st[ring_base(T, a, r)]
    length = T.agent[a, A_LEN]
    stages = T.ring[r, R_STAGES]
    # Body tags grow with the item, so past item t no read expects t; a tag of the prologue's
    # or the epilogue's (above every item) may be expected anywhere up to the end.
    outside = t >= T.cfg[C_TAG_OUTSIDE]
    # (nested loops: a tag is item // div, so tags pass t only past item (t + 1) * div - 1)
    div = T.agent[a, A_DIV]
    while pc < length and (item // div <= t or outside):
        row = op_row(T, a, pc)
        if T.prog[row, P_RING] == r:
            if T.prog[row, P_EFF + EF_READS] and op_tag(T, row, item) == t and stage == s:
                return True
            if T.prog[row, P_EFF + EF_STAGE] == STAGE_ADVANCE:
                stage += 1
                if stage == stages:
                    stage = 0
            elif T.prog[row, P_EFF + EF_STAGE] == STAGE_RESET:
                stage = T.agent[a, A_RING0 + 2 * r]
        pc, item = next_pc(T, a, pc, item)
    return False


@jit
def part_in(T, r, p, cta):
    """Do the slots of `cta` have part p of ring r?"""
    return (T.part[part_row(T, r, p), PT_CTAS] >> cta) & 1 == 1


@jit
def fill_stage(T, a, r, row, item):
    """Agent a's stage on ring r when it executes program row `row` (in `item`, for a body
    op), or -1 if it never does. An agent's stage moves only by its own ops (advance, reset,
    drain) and their every=/at= guards, so it is a function of the program position."""
    pc, it = settle_pc(T, a, 0, 0)
    want = row - T.agent[a, A_PROG]
    in_body = T.agent[a, A_BODY_START] <= want and want < T.agent[a, A_BODY_END]
    stage = T.agent[a, A_RING0 + 2 * r]
    while pc < T.agent[a, A_LEN]:
        if pc == want and (it == item or not in_body):
            return stage
        if in_body and it > item:
            return -1
        at = op_row(T, a, pc)
        if T.prog[at, P_RING] == r:
            if T.prog[at, P_EFF + EF_STAGE] == STAGE_ADVANCE:
                stage += 1
                if stage == T.ring[r, R_STAGES]:
                    stage = 0
            elif T.prog[at, P_EFF + EF_STAGE] == STAGE_RESET:
                stage = T.agent[a, A_RING0 + 2 * r]
        pc, it = next_pc(T, a, pc, it)
    return -1


@jit
def part_filled_for(T, r, p, s, tag):
    """Does the program fill part p of ring r in slot (stage) s for `tag`: a prologue or
    epilogue fill of that tag, or a body fill (ahead=K: in item tag - K) whose every=/at= guard
    selects the item (and whose agent runs it), executed while its agent's stage is s? Parts
    are per slot (docs/rules.md "Slot parts"): two roles that fill different slots for one item
    are not each other's missing parts."""
    i = part_row(T, r, p)
    for f in range(T.part[i, PT_NFILLS]):
        row = T.part[i, PT_FILL0 + 2 * f]
        a = T.part[i, PT_FILL0 + 2 * f + 1]
        if T.prog[row, P_TAG] >= 0:  # a prologue's or an epilogue's fill
            if T.prog[row, P_TAG] == tag and fill_stage(T, a, r, row, 0) == s:
                return True
        elif tag < T.cfg[C_TAG_OUTSIDE]:
            # the items whose fill stores `tag`: (item + ahead) // div == tag
            div = T.prog[row, P_DIV]
            first = tag * div + 1 + T.prog[row, P_TAG]
            for item in range(max(first, 0), min(first + div, T.agent[a, A_ITEMS])):
                if (item % T.prog[row, P_EVERY] == T.prog[row, P_AT]
                        and fill_stage(T, a, r, row, item) == s):
                    return True
    return False


@jit
def read_miss(T, st, cta, r, s, want):
    """Where a read of `want` in slot (cta, r, s) finds another tag: the first part that the
    program fills for `want` in this slot and that holds something else (when the program fills no part for
    it, every part counts), or -1 (docs/rules.md "Slot parts")."""
    base = slot_pos(T, cta, r, s)
    n = T.ring[r, R_PARTS]
    if n == 1:  # one part, in every CTA: checked whether the program fills it or not
        return base if st[base] != want else -1
    checked = False
    for p in range(n):
        if part_in(T, r, p, cta) and part_filled_for(T, r, p, s, want):
            checked = True
            if st[base + p] != want:
                return base + p
    if not checked:
        for p in range(n):
            if part_in(T, r, p, cta) and st[base + p] != want:
                return base + p
    return -1


@jit
def store_tag(T, st, cta, r, s, part, tag, det):
    """A write or landing stores `tag` into its part of the slot (-1: every part, a
    consumer-side fill); overwrite_before_drain if a reader still needs what it stores over."""
    base = slot_pos(T, cta, r, s)
    bits = 0
    for p in range(T.ring[r, R_PARTS]):
        if (part >= 0 and p != part) or not part_in(T, r, p, cta):
            continue
        old = st[base + p]
        if bits == 0 and old >= 0 and old != tag:
            for b in range(T.cfg[C_AGENTS]):
                if T.agent[b, A_CTA] == cta and reads_pending(T, st, b, old, r, s):
                    note(det, OVERWRITE_BEFORE_DRAIN, base + p, old, tag, b)
                    bits = OVERWRITE_BEFORE_DRAIN
                    break
        st[base + p] = tag
    return bits


@jit
def entry_part(T, part):
    """A copy entry's E_PART: its part + 1 (0: every part); nothing when slots have one part."""
    return part + 1 if T.cfg[C_MAXP] > 1 else 0


# ---------------------------------------------------------------- the step

@jit
def copy_state(T, st, out):
    for i in range(T.cfg[C_FIELDS]):
        out[i] = st[i]


@jit
def skips_wait(T, st, row, rb):
    """A wait `unless=ready` whose agent's last try on this ring succeeded is not evaluated."""
    return T.prog[row, P_UNLESS] == 1 and st[rb + 2] == 1


@jit
def step(T, st, code, out, det):
    """Successor of `st` under action `code` into `out`; -1 if disabled, else violation bits.

    `det` must hold -1 everywhere on entry; a violating step fills the entries of its kinds.
    The agent's op is interpreted by its effects (P_EFF..): first what it waits for, then what
    it observes, updates or issues at its target CTAs, stores or checks, and last how it moves
    its own stage, its barrier and its position.
    """
    n_agents = T.cfg[C_AGENTS]
    if code >= n_agents:
        return entry_step(T, st, code - n_agents, out, det)
    a = code
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return -1
    row = op_row(T, a, pc)
    # -- what it waits for, decided before the state is copied (most disabled actions wait)
    bits = wait_step(T, st, out, det, a, row, pc)
    if bits < 0:
        return -1
    if T.prog[row, P_EFF + EF_ACTS]:
        more = act_step(T, st, out, det, a, row)
        if more == INFLIGHT_FULL:
            return INFLIGHT_FULL
        bits |= more
        # -- its own stage
        r = T.prog[row, P_RING]
        rb = ring_base(T, a, r)
        if T.prog[row, P_EFF + EF_STAGE] == STAGE_ADVANCE:
            advance_stage(T, out, a, r)
        elif T.prog[row, P_EFF + EF_STAGE] == STAGE_RESET:
            out[rb] = T.agent[a, A_RING0 + 2 * r]
            out[rb + 1] = T.agent[a, A_RING0 + 2 * r + 1]
        if barrier_step(T, out, a, row):
            return bits  # blocked: pc stays at the sync
    out[base + F_PC], out[base + F_ITEM] = next_pc(T, a, pc, st[base + F_ITEM])
    return bits | exit_bits(T, out, a, det)


@jit
def entry_step(T, st, j, out, det):
    """The step of in-flight entry j: it lands, fires or finishes (fire_entry); -1 if it is
    not there or must wait (a read that is not its agent's oldest, a commit still waiting)."""
    if j >= T.cfg[C_INFLIGHT] or st[T.cfg[C_OFF_INF] + j] == 0:
        return -1
    e = st[T.cfg[C_OFF_INF] + j]
    if entry_field(T, e, E_SEQ) != 0 or entry_field(T, e, E_CSEQ) != 0:
        return -1  # a read that is not its agent's oldest, or a commit still waiting
    copy_state(T, st, out)
    return fire_entry(T, out, j, det)


@jit
def wait_step(T, st, out, det, a, row, pc):
    """Agent a's op `row` (at `pc`) as far as it waits or observes: -1 if it is disabled (a
    wait on a signal that is not ready, its own async reads, a barrier's generation), else
    `st` copied into `out` with what a passed wait or try notes, and its violation bits."""
    r = T.prog[row, P_RING]
    rb = ring_base(T, a, r)
    phase = st[rb + 1]
    bits = 0
    obs = T.prog[row, P_EFF + EF_OBS]
    if obs >= 0:
        sig = sig_index(T, T.agent[a, A_CTA], r, st[rb], obs)
        if T.prog[row, P_EFF + EF_BLOCKS]:  # a wait: passes when the signal is ready or skipped
            waits = not skips_wait(T, st, row, rb)
            if waits and not signal_ready(T, st, sig, phase):
                return -1
            copy_state(T, st, out)
            if waits:
                observe(T, out, sig)
                window_passed(T, out, a, r, sig, phase, pc)
        else:  # a try: never blocks, records the outcome in the agent's ready flag
            copy_state(T, st, out)
            ok = signal_ready(T, st, sig, phase)
            out[rb + 2] = 1 if ok else 0
            if ok:
                observe(T, out, sig)
                window_passed(T, out, a, r, sig, phase, pc)
            if not in_phase_window(T, st, a, r, sig, phase):
                note(det, PHASE_ALIAS, sig, a, phase, st[sig_base(T, sig)])
                bits |= PHASE_ALIAS
    else:
        if T.prog[row, P_EFF + EF_BLOCKS]:  # on its own async reads, or on a barrier's generation
            if T.prog[row, P_EFF + EF_WAITS_READS] and reads_in_flight(T, st, a) > T.prog[row, P_N]:
                return -1
            if T.prog[row, P_EFF + EF_BARRIER] == BAR_WAIT:
                b = T.prog[row, P_BARRIER]
                arrived = st[arrived_field(T.cfg[C_AGF], T.cfg[C_RINGS], a, b)]
                if st[bar_pos(T, b, T.agent[a, A_CTA]) + 1] < max(arrived, 1):
                    return -1
        copy_state(T, st, out)
    return bits


@jit
def act_step(T, st, out, det, a, row):
    """Agent a's op `row` as far as it acts: its update at each target CTA, now or by the entry
    it issues (it lands or fires later), and the slot's store or read check. Its violation
    bits, or INFLIGHT_FULL alone when an entry found no room (the step's only result then)."""
    base = agent_base(T, a)
    r = T.prog[row, P_RING]
    stage = st[ring_base(T, a, r)]
    cta = T.agent[a, A_CTA]
    bits = 0
    n = T.prog[row, P_N]
    if T.prog[row, P_EFF + EF_TX] != 0 and n > dispatch.tx_limit(T.cfg[C_BACKEND]):
        note(det, TX_RANGE, sig_index(T, cta, r, stage, FULL), n, a, 0)
        bits |= TX_RANGE | TRAP
    issued = T.prog[row, P_EFF + EF_ASYNC]
    kind = T.prog[row, P_EFF + EF_UPD]
    if kind >= 0:
        count = n if T.prog[row, P_EFF + EF_UNITS] == -1 else T.prog[row, P_EFF + EF_UNITS]
        tx = n if T.prog[row, P_EFF + EF_TX] > 0 else 0
        mask = targets_mask(T, a, T.prog[row, P_TARGET])
        for dst in range(T.cfg[C_CTAS]):
            if mask & (1 << dst):
                if issued == 0:
                    sig = sig_index(T, dst, r, stage, kind)
                    if cta_gone(T, st, dst):
                        note(det, INFLIGHT_AT_EXIT, dst, a, sig, 1)
                        bits |= INFLIGHT_AT_EXIT
                    bits |= signal_update(T, out, sig, count, tx, det)
                    continue
                if cta_gone(T, st, dst):
                    note(det, INFLIGHT_AT_EXIT, dst, a, -1, 2)
                    bits |= INFLIGHT_AT_EXIT
                if not add_entry(T, out, issued_entry(T, st, a, row, issued, dst, r, stage, count)):
                    return INFLIGHT_FULL
    # -- the slot: a store now (a copy's lands with it; an async write's is busy until its
    # entry finishes), a read's check (a slot still being filled is not filled)
    writes = T.prog[row, P_EFF + EF_WRITES]
    if not writes and not T.prog[row, P_EFF + EF_READS]:
        return bits  # (an async read or write stores or reads: nothing else issues ENTRY_READ)
    tag = op_tag(T, row, st[base + F_ITEM])
    if writes and issued != ENTRY_COPY:
        more = store_at_targets(T, st, out, det, a, row, r, stage, tag, issued)
        if more == INFLIGHT_FULL:
            return INFLIGHT_FULL
        bits |= more
    if T.prog[row, P_EFF + EF_READS]:
        pos = read_miss(T, st, cta, r, stage, tag)
        if pos >= 0 or fill_in_flight_to(T, st, cta, r, stage):
            if pos < 0:
                pos = slot_pos(T, cta, r, stage)
            note(det, READ_BEFORE_FILL, pos, a, st[pos], tag)
            bits |= READ_BEFORE_FILL
        if issued == ENTRY_READ:   # an async read: in the agent's FIFO, finishes later
            e = make_entry(T, ENTRY_READ, cta, r, stage, tag + 1, 0, a,
                           reads_in_flight(T, st, a), 0)
            if not add_entry(T, out, e):
                return INFLIGHT_FULL
    return bits


@jit
def store_at_targets(T, st, out, det, a, row, r, stage, tag, issued):
    """A write's or an async write's store at each of its target CTAs (`to=`, default the
    agent's own: a 2-SM leader MMA writes both CTAs' tensor memory), in CTA order; an async
    write (issued ENTRY_READ) also leaves one entry per target CTA in the agent's FIFO (the
    entry's CTA the target, its agent the issuer), so the target's slot is being written until
    that entry finishes. A store into a gone CTA is inflight_at_exit (as a copy issued to it).
    Its violation bits, or INFLIGHT_FULL alone."""
    mask = targets_mask(T, a, T.prog[row, P_TARGET])
    bits = 0
    for dst in range(T.cfg[C_CTAS]):
        if mask & (1 << dst) == 0:
            continue
        if cta_gone(T, st, dst):
            note(det, INFLIGHT_AT_EXIT, dst, a, -1, 2)
            bits |= INFLIGHT_AT_EXIT
        bits |= store_tag(T, out, dst, r, stage, T.prog[row, P_PART], tag, det)
        if issued == ENTRY_READ:
            e = make_entry(T, ENTRY_READ, dst, r, stage, tag + 1, READ_WRITES, a,
                           reads_in_flight(T, out, a), 0)
            if not add_entry(T, out, e):
                return INFLIGHT_FULL
    return bits


@jit
def issued_entry(T, st, a, row, issued, dst, r, stage, count):
    """The in-flight entry agent a's op `row` issues to CTA dst: a copy (it lands later) or a
    commit (it fires later)."""
    if issued == ENTRY_COPY:
        tag = op_tag(T, row, st[agent_base(T, a) + F_ITEM])
        e = make_entry(T, ENTRY_COPY, dst, r, stage, tag + 1,
                       T.prog[row, P_BYTES_IDX], 0, 0,
                       entry_part(T, T.prog[row, P_PART]))
    else:
        # tcgen05.commit: fires only after the agent's async reads and commits
        # issued before it (counted in `st`: not this op's other entries)
        e = make_entry(T, ENTRY_COMMIT, dst, r, stage, count, 0, a,
                       reads_in_flight(T, st, a), 0)
        e = with_field(T, e, E_CSEQ, commits_in_flight(T, st, a))
        if T.prog[row, P_EFF + EF_UPD] == FULL:  # commit_full: the entry fires on full
            e = with_field(T, e, E_BIDX, COMMIT_ON_FULL)
    if dst != T.agent[a, A_CTA]:
        e = with_field(T, e, E_PEER, 1)
    return e


@jit
def barrier_step(T, out, a, row):
    """A named barrier's arrival by agent a's op `row`, which the last one of a generation
    completes (releasing the agents blocked on it); True if the agent now blocks at its
    `sync`."""
    barrier = T.prog[row, P_EFF + EF_BARRIER]
    if barrier == BAR_SYNC or barrier == BAR_ARRIVE:
        cta = T.agent[a, A_CTA]
        b = T.prog[row, P_BARRIER]
        pos = bar_pos(T, b, cta)
        if barrier == BAR_ARRIVE:
            out[arrived_field(T.cfg[C_AGF], T.cfg[C_RINGS], a, b)] = out[pos + 1] + 1
        out[pos] += 1
        if out[pos] < T.bar_count[b, cta]:
            if barrier == BAR_SYNC:
                out[agent_base(T, a) + F_SYNC] = 1
                return True
        else:
            # The generation completes: later arrivals count towards the next one.
            out[pos] = 0
            out[pos + 1] += 1
            release_sync(T, out, a, cta, b)
    return False


@jit
def exit_bits(T, out, a, det):
    """Agent a's step left its CTA gone: inflight_at_exit if an entry still targets the CTA
    from elsewhere (or any, strictly), else the warning unawaited_at_exit for its own."""
    cta = T.agent[a, A_CTA]
    if finished(T, out, a) and cta_gone(T, out, cta):
        what = exit_inflight(T, out, cta)
        if what == EXIT_FOREIGN or (what != EXIT_CLEAN and T.cfg[C_STRICT_EXIT] == 1):
            note(det, INFLIGHT_AT_EXIT, cta, a, -1, 0)
            return INFLIGHT_AT_EXIT
        if what != EXIT_CLEAN:
            return UNAWAITED_AT_EXIT  # its own copies or commits still in flight: a warning
    return 0


@jit
def release_sync(T, st, releaser, cta, barrier):
    """The last arrival releases every agent of the CTA blocked on this barrier, in one step."""
    for b in range(T.cfg[C_AGENTS]):
        if b == releaser or T.agent[b, A_CTA] != cta:
            continue
        bb = agent_base(T, b)
        row = op_row(T, b, st[bb + F_PC])
        if (st[bb + F_SYNC] == 1 and T.prog[row, P_EFF + EF_BARRIER] == BAR_SYNC
                and T.prog[row, P_BARRIER] == barrier):
            st[bb + F_SYNC] = 0
            st[bb + F_PC], st[bb + F_ITEM] = next_pc(T, b, st[bb + F_PC], st[bb + F_ITEM])


@jit
def fire_entry(T, out, j, det):
    """In-flight entry j lands (copy: tag, then complete_tx), fires (commit: arrive n) or
    finishes (an async read: nothing changes but the FIFO and the commits waiting on it)."""
    e = out[T.cfg[C_OFF_INF] + j]
    remove_entry(T, out, j)
    cta = entry_field(T, e, E_CTA)
    r = entry_field(T, e, E_RING)
    s = entry_field(T, e, E_STAGE)
    bits = 0
    kind = entry_field(T, e, E_KIND)
    if kind == ENTRY_READ:
        finish_read(T, out, entry_field(T, e, E_AGENT))
        return 0
    # A landing or firing into a gone CTA: a peer's entry was already reported at the CTA's
    # exit or at its issue, an own one is the exit's warning; only the strict reading says more.
    if T.cfg[C_STRICT_EXIT] == 1 and cta_gone(T, out, cta):
        note(det, INFLIGHT_AT_EXIT, cta, -1, -1, 3)
        bits |= INFLIGHT_AT_EXIT
    if kind == ENTRY_COPY:
        part = entry_field(T, e, E_PART) - 1 if T.cfg[C_MAXP] > 1 else 0
        bits |= store_tag(T, out, cta, r, s, part, entry_field(T, e, E_VAL) - 1, det)
        nbytes = T.bytes_vals[entry_field(T, e, E_BIDX)]
        bits |= signal_update(T, out, sig_index(T, cta, r, s, FULL), 0, -nbytes, det)
    else:
        commit_fired(T, out, entry_field(T, e, E_AGENT))
        bits |= signal_update(T, out, sig_index(T, cta, r, s, entry_signal(T, e)),
                              entry_field(T, e, E_VAL), 0, det)
    return bits


@jit
def local_step(T, st, a):
    """Is agent `a`'s next step local (`local_op`) and does it not finish the agent? Finishing
    is excluded: it can make a CTA gone, which others' steps observe (por.py takes a finishing
    step only where its CTA cannot go: `por.cta_stays`)."""
    return local_op(T, st, a) and \
        next_pc(T, a, st[agent_base(T, a) + F_PC], st[agent_base(T, a) + F_ITEM])[0] < T.agent[a, A_LEN]


@jit
def local_op(T, st, a):
    """Is agent `a`'s next step an op whose only effect is on its own stage (advance, reset),
    or a wait skipped by `unless=ready`? Such a step reads and writes only the agent's own
    registers (stage, phase, pc, item), cannot be disabled, and no property looks at an agent
    that stands before one: no other step reads those registers except through
    `reads_pending`, which simulates the agent's program and so answers the same before and
    after it."""
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return False
    row = op_row(T, a, pc)
    if (T.prog[row, P_EFF + EF_OBS] >= 0 and T.prog[row, P_EFF + EF_BLOCKS]
            and T.prog[row, P_EFF + EF_STAGE] == 0):  # a wait (not a drain step)
        if not skips_wait(T, st, row, ring_base(T, a, T.prog[row, P_RING])):
            return False
    elif not T.prog[row, P_EFF + EF_LOCAL]:
        return False
    return True


@jit
def at_blocking_wait(T, st, a):
    """(signal, phase) an agent is spinning on, or (-1, 0): its next op blocks on a signal."""
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return -1, 0
    row = op_row(T, a, pc)
    if T.prog[row, P_EFF + EF_OBS] < 0 or not T.prog[row, P_EFF + EF_BLOCKS]:
        return -1, 0
    r = T.prog[row, P_RING]
    rb = ring_base(T, a, r)
    if skips_wait(T, st, row, rb):
        return -1, 0  # a skipped wait is not evaluated
    return sig_index(T, T.agent[a, A_CTA], r, st[rb], T.prog[row, P_EFF + EF_OBS]), st[rb + 1]


@jit
def state_violations(T, st, n_enabled, det):
    """Properties of the state itself: deadlock, and waiters outside their phase window (a
    counter backend's window holds every wait)."""
    bits = 0
    for a in range(T.cfg[C_AGENTS]):
        sig, phase = at_blocking_wait(T, st, a)
        if sig >= 0:
            r = T.prog[op_row(T, a, st[agent_base(T, a) + F_PC]), P_RING]
            if not in_phase_window(T, st, a, r, sig, phase):
                note(det, PHASE_ALIAS, sig, a, phase, st[sig_base(T, sig)])
                bits |= PHASE_ALIAS
                break
    if n_enabled == 0:
        nothing_in_flight = T.cfg[C_INFLIGHT] == 0 or st[T.cfg[C_OFF_INF]] == 0
        for a in range(T.cfg[C_AGENTS]):
            if not finished(T, st, a) and nothing_in_flight:
                bits |= DEADLOCK
                break
    return bits
