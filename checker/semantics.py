"""The transition relation of a compiled pipeline model, in numba-compatible Python.

One function, `step`, is the whole semantics: given an unpacked state vector `st`, an action
code and the model tables `T` (checker/model.py builds them), it writes the successor into
`out` and returns the violation bits the step commits, or -1 when the action is not enabled.
`state_violations` gives the properties of a state itself (deadlock, a waiter outside its
phase window). Signal updates go through backends/ and nowhere else.

Action codes: 0 .. A-1 = agent a executes its next op; A + j = in-flight entry j of `st`
lands (copy), fires (commit_empty) or finishes (read_async).

State vector layout (offsets in T.cfg; see model.py):
  agent a:  [pc, item, at_sync, (stage, phase, ready) per ring, arrived generation per barrier]
  signal:   [a, b, c, observed]  (backends/base.py: nvidia phase_no/pending/tx, amd counter)
  slot:     tag (-1: never stored)
  barrier:  [arrivals in the current generation, generation] per (barrier, cta)
  inflight: M packed entries, sorted descending, 0 = unused

In-flight entries: a copy (cta, ring, stage, tag, bytes); a commit (cta, ring, stage, n, and
while it still waits for its agent's earlier async reads: agent, after = how many); an async
read (cta, ring, stage, tag, agent, seq = its place in the agent's FIFO, 0 = oldest).
"""
from pipeproof.backends import amd, nvidia
from pipeproof.backends.base import AMD, EMPTY, FULL, jit

# Op codes (model.py maps op names to these).
WAIT_FULL, WAIT_EMPTY, TRY_FULL, TRY_EMPTY = 0, 1, 2, 3
ARRIVE_FULL, ARRIVE_EMPTY, EXPECT_TX, COPY = 4, 5, 6, 7
WRITE, READ, COMMIT_EMPTY, ADVANCE, RESET, DRAIN, SYNC = 8, 9, 10, 11, 12, 13, 14
READ_ASYNC, READ_WAIT, SYNC_ARRIVE, SYNC_WAIT = 15, 16, 17, 18

# Targets.
T_SELF, T_LEADER, T_PEER, T_ALL = 0, 1, 2, 3

OP_CODES = {
    "wait_full": WAIT_FULL, "wait_empty": WAIT_EMPTY, "try_full": TRY_FULL,
    "try_empty": TRY_EMPTY, "arrive_full": ARRIVE_FULL, "arrive_empty": ARRIVE_EMPTY,
    "expect_tx": EXPECT_TX, "copy": COPY, "write": WRITE, "read": READ,
    "commit_empty": COMMIT_EMPTY, "advance": ADVANCE, "reset": RESET, "drain": DRAIN,
    "sync": SYNC, "read_async": READ_ASYNC, "read_wait": READ_WAIT,
    "sync_arrive": SYNC_ARRIVE, "sync_wait": SYNC_WAIT,
}
N_OPS = 19
assert sorted(OP_CODES.values()) == list(range(N_OPS))

# What each op can do to what other agents see, as a table per op code: the footprint the
# partial-order reduction (checker/por.py, docs/reductions.md) derives its dependency relation
# from. Derived from the one description of each op, checker/program.py OP_EFFECTS. Columns:
#   EF_OBS     signal kind it observes (FULL/EMPTY; -1 none): a wait or try reads the parity
#   EF_BLOCKS  1: it is enabled only when that signal is ready (a wait); 0: a try never blocks
#   EF_UPD     signal kind it updates (-1 none), at each of its target CTAs
#   EF_UNITS   arrival units of one update: -1 the op's count n; 1 arrive.expect_tx; 0 tx only
#   EF_WRITES  1: stores a tag into the slot (at its targets); EF_READS 1: checks the slot
#   EF_ASYNC   1: leaves an in-flight entry that acts later (copy, commit, async read)
#   EF_STAGE   its effect on the agent's own stage: STAGE_ADVANCE, STAGE_RESET or 0
#   EF_BARRIER 1: touches a named barrier (and may release other agents)
EF_OBS, EF_BLOCKS, EF_UPD, EF_UNITS, EF_WRITES, EF_READS, EF_ASYNC, EF_STAGE, EF_BARRIER = range(9)
STAGE_ADVANCE, STAGE_RESET = 1, 2


def effects_table():
    """EFFECTS as an int64 array, one row per op code (numba reads it as a table argument)."""
    import numpy as np
    from pipeproof.checker.program import OP_EFFECTS
    moves = {"": 0, "advance": STAGE_ADVANCE, "reset": STAGE_RESET}
    rows = [None] * N_OPS
    for name, e in OP_EFFECTS.items():
        rows[OP_CODES[name]] = (e.observes, int(e.blocks), e.updates, e.units, int(e.stores),
                                int(e.checks_read), int(bool(e.issues)), moves[e.move],
                                int(bool(e.barrier)))
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
INFLIGHT_FULL = 1 << 20   # not a violation: the model's in-flight capacity ran out (inconclusive)
TRAP = 1 << 21            # with a violation bit: the hardware traps here, so the path ends

# cfg indices
C_AGENTS, C_CTAS, C_RINGS, C_BACKEND, C_INFLIGHT, C_AGF, C_MAXS = 0, 1, 2, 3, 4, 5, 6
C_OFF_SIG, C_OFF_SLOT, C_OFF_BAR, C_OFF_INF, C_FIELDS, C_NBAR, C_TAG_OUTSIDE = 7, 8, 9, 10, 11, 12, 13

# agent table columns
A_CTA, A_BODY_START, A_BODY_END, A_LEN, A_ITEMS, A_PROG = 0, 1, 2, 3, 4, 5
A_RING0 = 6  # then (initial_stage, initial_phase) per ring

# prog table columns
P_CODE, P_RING, P_N, P_TARGET, P_UNLESS, P_BARRIER, P_BYTES_IDX, P_EVERY, P_AT, P_TAG = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9

# agent state fields
F_PC, F_ITEM, F_SYNC, F_RING0 = 0, 1, 2, 3
# an agent's record of ring r: RING_FIELDS ints from F_RING0 + RING_FIELDS * r (ring_field);
# after the last ring, one "arrived generation" per named barrier (arrived_field)
RF_STAGE, RF_PHASE, RF_READY, RING_FIELDS = 0, 1, 2, 3
# ring table columns
R_STAGES, R_FULL_COUNT, R_EMPTY_COUNT = 0, 1, 2
# entry layout (T.ent): shifts and masks of the packed in-flight entry fields
E_KIND, E_CTA, E_RING, E_STAGE, E_VAL, E_BIDX, E_AGENT, E_SEQ = 0, 1, 2, 3, 4, 5, 6, 7
ENTRY_COPY, ENTRY_COMMIT, ENTRY_READ = 1, 2, 3

# detail record (det): per violation kind 4 ints, filled by the first detection in a step
DET_W = 4


@jit
def agent_base(T, a):
    return a * T.cfg[C_AGF]


@jit
def ring_field(agf, a, r, field):
    """Where field `field` (RF_STAGE, RF_PHASE, RF_READY) of agent a's record of ring r is,
    with `agf` fields per agent (T.cfg[C_AGF], Model.agf)."""
    return a * agf + F_RING0 + RING_FIELDS * r + field


@jit
def arrived_field(agf, rings, a, b):
    """Where agent a's arrived generation of named barrier b is (after its `rings` records)."""
    return a * agf + F_RING0 + RING_FIELDS * rings + b


# The same two, uncompiled, for Python callers (model views, BMC's replay check, conform).
ring_pos = ring_field.py_func
arrived_pos = arrived_field.py_func


@jit
def ring_base(T, a, r):
    return ring_field(T.cfg[C_AGF], a, r, 0)


@jit
def sig_index(T, cta, r, s, kind):
    return ((cta * T.cfg[C_RINGS] + r) * T.cfg[C_MAXS] + s) * 2 + kind


@jit
def sig_base(T, sig):
    return T.cfg[C_OFF_SIG] + 4 * sig


@jit
def slot_pos(T, cta, r, s):
    return T.cfg[C_OFF_SLOT] + (cta * T.cfg[C_RINGS] + r) * T.cfg[C_MAXS] + s


@jit
def expected_of(T, sig):
    r = (sig // 2 // T.cfg[C_MAXS]) % T.cfg[C_RINGS]
    if sig % 2 == FULL:
        return T.ring[r, R_FULL_COUNT]
    return T.ring[r, R_EMPTY_COUNT]


@jit
def finished(T, st, a):
    return st[agent_base(T, a) + F_PC] >= T.agent[a, A_LEN]


@jit
def cta_gone(T, st, cta):
    for a in range(T.cfg[C_AGENTS]):
        if T.agent[a, A_CTA] == cta and not finished(T, st, a):
            return False
    return True


@jit
def raw_next(T, a, pc, item):
    """The next program position, ignoring guards: body ops repeat once per item."""
    pc += 1
    if pc == T.agent[a, A_BODY_END] and T.agent[a, A_BODY_START] < pc:
        item += 1
        if item < T.agent[a, A_ITEMS]:
            pc = T.agent[a, A_BODY_START]
    return pc, item


@jit
def settle_pc(T, a, pc, item):
    """Move to the next op that exists for this item: skip an empty or exhausted body, and
    body ops whose every=K / at=j guard does not select this item (they take no step)."""
    start = T.agent[a, A_BODY_START]
    end = T.agent[a, A_BODY_END]
    while True:
        if pc == start and pc < end and item >= T.agent[a, A_ITEMS]:
            return end, item
        if start <= pc < end:
            row = op_row(T, a, pc)
            if item % T.prog[row, P_EVERY] != T.prog[row, P_AT]:
                pc, item = raw_next(T, a, pc, item)
                continue
        return pc, item


@jit
def next_pc(T, a, pc, item):
    """Program position after executing the op at `pc`."""
    pc, item = raw_next(T, a, pc, item)
    return settle_pc(T, a, pc, item)


@jit
def op_row(T, a, pc):
    return T.agent[a, A_PROG] + pc


@jit
def op_tag(T, row, item):
    """The tag a fill stores or a read expects: the agent's item in the body, else the
    prologue's or the epilogue's own tag (the pairing rule: spec.schema `read_pairs_with`)."""
    tag = T.prog[row, P_TAG]
    return item if tag < 0 else tag


@jit
def targets_mask(T, a, target):
    """Destination CTAs of an op as a bit mask (K <= 16)."""
    k = T.cfg[C_CTAS]
    cta = T.agent[a, A_CTA]
    if k == 1 or target == T_SELF:
        return 1 << cta
    if target == T_LEADER:
        return 1
    if target == T_PEER:
        return 1 << ((cta + 1) % k)
    return (1 << k) - 1


@jit
def advance_stage(T, st, a, r):
    advance_at(T, st, ring_base(T, a, r), r)


@jit
def advance_at(T, arr, at, r):
    """Advance the (stage, phase) pair of ring r held at arr[at], arr[at + 1]."""
    arr[at] += 1
    if arr[at] == T.ring[r, R_STAGES]:
        arr[at] = 0
        arr[at + 1] += 1


# ---------------------------------------------------------------- signals

@jit
def signal_ready(T, st, sig, phase):
    b = sig_base(T, sig)
    if T.cfg[C_BACKEND] == AMD:
        return counter_ready(T, sig, st[b], phase)
    return nvidia.ready(st[b], phase)


@jit
def in_phase_window(T, st, a, r, sig, phase):
    """(nvidia) Is agent a, at `phase` on ring r, inside its phase window on `sig`
    (docs/rules.md "The phase_alias window")? The one place the window rule is read; amd
    counters have none."""
    if T.cfg[C_BACKEND] == AMD:
        return True
    return nvidia.in_window(st[sig_base(T, sig)], phase, T.agent[a, A_RING0 + 2 * r + 1])


@jit
def counter_ready(T, sig, counter, phase):
    """(amd) Would a wait at `phase` on `sig` pass with the signal's counter at `counter`?"""
    r = (sig // 2 // T.cfg[C_MAXS]) % T.cfg[C_RINGS]
    if sig % 2 == FULL:
        return amd.full_ready(counter, phase, T.ring[r, R_FULL_COUNT])
    return amd.empty_ready(counter, phase, T.ring[r, R_EMPTY_COUNT])


@jit
def observe(T, st, sig):
    """A wait or try on `sig` passed: the current phase has been seen by someone."""
    st[sig_base(T, sig) + 3] = 1


@jit
def signal_update(T, st, sig, arrive_count, tx_delta, det):
    """Apply one atomic update to a signal; returns violation bits (traps included)."""
    b = sig_base(T, sig)
    if T.cfg[C_BACKEND] == AMD:
        st[b] = amd.arrive(st[b], arrive_count)
        return 0
    old_phase = st[b]
    ph, pend, tx, outcome = nvidia.update(st[b], st[b + 1], st[b + 2], expected_of(T, sig),
                                          arrive_count, tx_delta)
    if outcome & nvidia.TRAP_OVER_ARRIVAL:
        note(det, OVER_ARRIVAL, sig, arrive_count, st[b + 1], 0)
        return OVER_ARRIVAL | TRAP
    if outcome & nvidia.TRAP_TX_RANGE:
        note(det, TX_RANGE, sig, tx, 0, 1)
        return TX_RANGE | TRAP
    bits = 0
    if outcome & nvidia.COMPLETED:
        if old_phase >= 1 and st[b + 3] == 0:
            note(det, OVER_ARRIVAL, sig, old_phase, 0, 1)
            bits |= OVER_ARRIVAL
        st[b + 3] = 0
    st[b] = ph
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


# ---------------------------------------------------------------- in-flight entries

@jit
def entry_field(T, e, f):
    return (e >> T.ent[f, 0]) & T.ent[f, 1]


@jit
def make_entry(T, kind, cta, r, s, val, bidx, agent, seq):
    return ((kind << T.ent[E_KIND, 0]) | (cta << T.ent[E_CTA, 0]) | (r << T.ent[E_RING, 0])
            | (s << T.ent[E_STAGE, 0]) | (val << T.ent[E_VAL, 0]) | (bidx << T.ent[E_BIDX, 0])
            | (agent << T.ent[E_AGENT, 0]) | (seq << T.ent[E_SEQ, 0]))


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
    off = T.cfg[C_OFF_INF]
    m = T.cfg[C_INFLIGHT]
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
        if (entry_into(T, e, ENTRY_READ, T.agent[a, A_CTA], r, s)
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
    while pc < length and (item <= t or outside):
        row = op_row(T, a, pc)
        code = T.prog[row, P_CODE]
        if T.prog[row, P_RING] == r:
            if (code == READ or code == READ_ASYNC) and op_tag(T, row, item) == t and stage == s:
                return True
            if code == ADVANCE or code == DRAIN:
                stage += 1
                if stage == stages:
                    stage = 0
            elif code == RESET:
                stage = T.agent[a, A_RING0 + 2 * r]
        pc, item = next_pc(T, a, pc, item)
    return False


@jit
def store_tag(T, st, cta, r, s, tag, det):
    """A write or landing stores `tag`; overwrite_before_drain if a reader still needs the old."""
    pos = slot_pos(T, cta, r, s)
    old = st[pos]
    bits = 0
    if old >= 0 and old != tag:
        for b in range(T.cfg[C_AGENTS]):
            if T.agent[b, A_CTA] == cta and reads_pending(T, st, b, old, r, s):
                note(det, OVERWRITE_BEFORE_DRAIN, pos, old, tag, b)
                bits = OVERWRITE_BEFORE_DRAIN
                break
    st[pos] = tag
    return bits


# ---------------------------------------------------------------- the step

@jit
def wait_signal_kind(code):
    if code == WAIT_FULL or code == TRY_FULL:
        return FULL
    return EMPTY


@jit
def copy_state(T, st, out):
    for i in range(T.cfg[C_FIELDS]):
        out[i] = st[i]


@jit
def step(T, st, code, out, det):
    """Successor of `st` under action `code` into `out`; -1 if disabled, else violation bits.

    `det` must hold -1 everywhere on entry; a violating step fills the entries of its kinds.
    """
    n_agents = T.cfg[C_AGENTS]
    if code >= n_agents:
        j = code - n_agents
        if j >= T.cfg[C_INFLIGHT] or st[T.cfg[C_OFF_INF] + j] == 0:
            return -1
        if entry_field(T, st[T.cfg[C_OFF_INF] + j], E_SEQ) != 0:
            return -1  # a read that is not its agent's oldest, or a commit still waiting
        copy_state(T, st, out)
        return fire_entry(T, out, j, det)
    a = code
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return -1
    row = op_row(T, a, pc)
    op = T.prog[row, P_CODE]
    r = T.prog[row, P_RING]
    rb = ring_base(T, a, r)
    stage = st[rb]
    phase = st[rb + 1]
    cta = T.agent[a, A_CTA]
    bits = 0
    if op == READ_WAIT and reads_in_flight(T, st, a) > T.prog[row, P_N]:
        return -1
    if op == SYNC_WAIT:
        b = T.prog[row, P_BARRIER]
        arrived = st[arrived_field(T.cfg[C_AGF], T.cfg[C_RINGS], a, b)]
        if st[bar_pos(T, b, cta) + 1] < max(arrived, 1):
            return -1
    if op == WAIT_FULL or op == WAIT_EMPTY or op == DRAIN:
        # Decide enabledness before copying the state: most disabled actions are waits.
        waits = not (op != DRAIN and T.prog[row, P_UNLESS] == 1 and st[rb + 2] == 1)
        sig = sig_index(T, cta, r, stage, wait_signal_kind(op))
        if waits and not signal_ready(T, st, sig, phase):
            return -1
        copy_state(T, st, out)
        if waits:
            observe(T, out, sig)
        if op == DRAIN:
            advance_stage(T, out, a, r)
    else:
        copy_state(T, st, out)
    if op == WAIT_FULL or op == WAIT_EMPTY or op == DRAIN:
        pass
    elif op == TRY_FULL or op == TRY_EMPTY:
        sig = sig_index(T, cta, r, stage, wait_signal_kind(op))
        ok = signal_ready(T, st, sig, phase)
        out[rb + 2] = 1 if ok else 0
        if ok:
            observe(T, out, sig)
        if not in_phase_window(T, st, a, r, sig, phase):
            note(det, PHASE_ALIAS, sig, a, phase, st[sig_base(T, sig)])
            bits |= PHASE_ALIAS
    elif op == ARRIVE_FULL or op == ARRIVE_EMPTY or op == EXPECT_TX:
        kind = EMPTY if op == ARRIVE_EMPTY else FULL
        count = 1 if op == EXPECT_TX else T.prog[row, P_N]
        tx = T.prog[row, P_N] if op == EXPECT_TX else 0
        if op == EXPECT_TX and tx > nvidia.TX_LIMIT:
            note(det, TX_RANGE, sig_index(T, cta, r, stage, FULL), tx, a, 0)
            bits |= TX_RANGE | TRAP
        mask = targets_mask(T, a, T.prog[row, P_TARGET])
        for dst in range(T.cfg[C_CTAS]):
            if mask & (1 << dst):
                sig = sig_index(T, dst, r, stage, kind)
                if cta_gone(T, st, dst):
                    note(det, INFLIGHT_AT_EXIT, dst, a, sig, 1)
                    bits |= INFLIGHT_AT_EXIT
                bits |= signal_update(T, out, sig, count, tx, det)
    elif op == COPY or op == COMMIT_EMPTY:
        if op == COPY and T.prog[row, P_N] > nvidia.TX_LIMIT:
            note(det, TX_RANGE, sig_index(T, cta, r, stage, FULL), T.prog[row, P_N], a, 0)
            bits |= TX_RANGE | TRAP
        mask = targets_mask(T, a, T.prog[row, P_TARGET])
        for dst in range(T.cfg[C_CTAS]):
            if mask & (1 << dst):
                if cta_gone(T, st, dst):
                    note(det, INFLIGHT_AT_EXIT, dst, a, -1, 2)
                    bits |= INFLIGHT_AT_EXIT
                if op == COPY:
                    e = make_entry(T, ENTRY_COPY, dst, r, stage, op_tag(T, row, st[base + F_ITEM]) + 1,
                                   T.prog[row, P_BYTES_IDX], 0, 0)
                else:
                    # tcgen05.commit: fires only after the agent's async reads issued before it
                    after = reads_in_flight(T, st, a)
                    e = make_entry(T, ENTRY_COMMIT, dst, r, stage, T.prog[row, P_N], 0,
                                   a if after > 0 else 0, after)
                if not add_entry(T, out, e):
                    return INFLIGHT_FULL
    elif op == WRITE:
        bits |= store_tag(T, out, cta, r, stage, op_tag(T, row, st[base + F_ITEM]), det)
    elif op == READ or op == READ_ASYNC:
        pos = slot_pos(T, cta, r, stage)
        want = op_tag(T, row, st[base + F_ITEM])
        if st[pos] != want or copy_in_flight_to(T, st, cta, r, stage):
            note(det, READ_BEFORE_FILL, pos, a, st[pos], want)
            bits |= READ_BEFORE_FILL
        if op == READ_ASYNC:
            e = make_entry(T, ENTRY_READ, cta, r, stage, want + 1, 0, a,
                           reads_in_flight(T, st, a))
            if not add_entry(T, out, e):
                return INFLIGHT_FULL
    elif op == ADVANCE:
        advance_stage(T, out, a, r)
    elif op == RESET:
        out[rb] = T.agent[a, A_RING0 + 2 * r]
        out[rb + 1] = T.agent[a, A_RING0 + 2 * r + 1]
    elif op == SYNC or op == SYNC_ARRIVE:
        b = T.prog[row, P_BARRIER]
        pos = bar_pos(T, b, cta)
        if op == SYNC_ARRIVE:
            out[arrived_field(T.cfg[C_AGF], T.cfg[C_RINGS], a, b)] = out[pos + 1] + 1
        out[pos] += 1
        if out[pos] < T.bar_count[b, cta]:
            if op == SYNC:
                out[base + F_SYNC] = 1
                return bits  # blocked: pc stays at the sync
        else:
            # The generation completes: later arrivals count towards the next one.
            out[pos] = 0
            out[pos + 1] += 1
            release_sync(T, out, a, cta, b)
    out[base + F_PC], out[base + F_ITEM] = next_pc(T, a, pc, st[base + F_ITEM])
    if finished(T, out, a) and cta_gone(T, out, cta) and anything_targets(T, out, cta):
        note(det, INFLIGHT_AT_EXIT, cta, a, -1, 0)
        bits |= INFLIGHT_AT_EXIT
    return bits


@jit
def bar_pos(T, b, cta):
    return T.cfg[C_OFF_BAR] + 2 * (b * T.cfg[C_CTAS] + cta)


@jit
def release_sync(T, st, releaser, cta, barrier):
    """The last arrival releases every agent of the CTA blocked on this barrier, in one step."""
    for b in range(T.cfg[C_AGENTS]):
        if b == releaser or T.agent[b, A_CTA] != cta:
            continue
        bb = agent_base(T, b)
        row = op_row(T, b, st[bb + F_PC])
        if st[bb + F_SYNC] == 1 and T.prog[row, P_CODE] == SYNC and T.prog[row, P_BARRIER] == barrier:
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
    if cta_gone(T, out, cta):
        note(det, INFLIGHT_AT_EXIT, cta, -1, -1, 3)
        bits |= INFLIGHT_AT_EXIT
    if kind == ENTRY_COPY:
        bits |= store_tag(T, out, cta, r, s, entry_field(T, e, E_VAL) - 1, det)
        nbytes = T.bytes_vals[entry_field(T, e, E_BIDX)]
        bits |= signal_update(T, out, sig_index(T, cta, r, s, FULL), 0, -nbytes, det)
    else:
        bits |= signal_update(T, out, sig_index(T, cta, r, s, EMPTY), entry_field(T, e, E_VAL), 0, det)
    return bits


@jit
def local_step(T, st, a):
    """Is agent `a`'s next step local: an `advance`, a `reset`, or a wait skipped by
    `unless=ready`, that does not finish the agent? Such a step reads and writes only the
    agent's own registers (stage, phase, pc, item), cannot be disabled, and no property looks
    at an agent that stands before one: no other step reads those registers except through
    `reads_pending`, which simulates the agent's program and so answers the same before and
    after it. Finishing is excluded: it can make a CTA gone, which others' steps observe."""
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return False
    row = op_row(T, a, pc)
    op = T.prog[row, P_CODE]
    if op == WAIT_FULL or op == WAIT_EMPTY:
        if T.prog[row, P_UNLESS] != 1 or st[ring_base(T, a, T.prog[row, P_RING]) + 2] != 1:
            return False
    elif op != ADVANCE and op != RESET:
        return False
    return next_pc(T, a, pc, st[base + F_ITEM])[0] < T.agent[a, A_LEN]


@jit
def at_blocking_wait(T, st, a):
    """(signal, phase) an agent is spinning on, or (-1, 0): its next op blocks on a signal."""
    base = agent_base(T, a)
    pc = st[base + F_PC]
    if pc >= T.agent[a, A_LEN] or st[base + F_SYNC] == 1:
        return -1, 0
    row = op_row(T, a, pc)
    op = T.prog[row, P_CODE]
    if op != WAIT_FULL and op != WAIT_EMPTY and op != DRAIN:
        return -1, 0
    r = T.prog[row, P_RING]

    rb = ring_base(T, a, r)
    if op != DRAIN and T.prog[row, P_UNLESS] == 1 and st[rb + 2] == 1:
        return -1, 0  # a skipped wait is not evaluated
    return sig_index(T, T.agent[a, A_CTA], r, st[rb], wait_signal_kind(op)), st[rb + 1]


@jit
def state_violations(T, st, n_enabled, det):
    """Properties of the state itself: deadlock, and (nvidia) waiters outside their window."""
    bits = 0
    if T.cfg[C_BACKEND] != AMD:
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
