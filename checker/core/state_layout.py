"""The compiled model's tables and state vector: where every field is, and the program order.

checker/core/model.py builds the tables `T` (cfg, ring, agent, prog, bar_count, bytes_vals, ent,
eff); the engines read states through the accessors here and nowhere else spell an offset.

State vector layout (offsets in T.cfg):
  agent a:  [pc, item, at_sync, (stage, phase, ready) per ring, arrived generation per barrier,
             then, when some agent has a `reset` (cfg C_WIN >= 0), its phase window's last passed
             wait (k', ph') per (ring, stage, signal kind): window_field]
  signal:   [a, b, c, observed]  (backends/base.py: nvidia phase_no/pending/tx, amd counter)
  slot:     one tag per part (-1: never stored), C_MAXP parts per slot (T.part describes them)
  barrier:  [arrivals in the current generation, generation] per (barrier, cta)
  inflight: M packed entries, sorted descending, 0 = unused (checker/core/inflight.py)
"""
from pipeproof.backends.base import EMPTY, FULL, jit

# Targets (spec.schema `targets` is the same rule for Python callers).
T_SELF, T_LEADER, T_PEER, T_ALL = 0, 1, 2, 3

# cfg indices
C_AGENTS, C_CTAS, C_RINGS, C_BACKEND, C_INFLIGHT, C_AGF, C_MAXS = 0, 1, 2, 3, 4, 5, 6
C_OFF_SIG, C_OFF_SLOT, C_OFF_BAR, C_OFF_INF, C_FIELDS, C_NBAR, C_TAG_OUTSIDE = 7, 8, 9, 10, 11, 12, 13
C_MAXP, C_WIN = 14, 15  # parts per slot; where the window fields start in an agent record (-1: none)
C_STRICT_EXIT = 16  # 1: a CTA gone with its own copies/commits in flight is inflight_at_exit (PTX's
                    # strict reading); 0: the warning unawaited_at_exit (DESIGN, revised 2026-12-02)
C_SIGNAL_MODEL = 17  # what the reductions may assume of the signals (backends/capabilities.py
                     # `signal_model`): SM_MBARRIER, SM_COUNTER, or SM_OTHER (none: no reduction
                     # that reasons about signal values applies)
SM_OTHER, SM_MBARRIER, SM_COUNTER = 0, 1, 2
SIGNAL_MODELS = {"": SM_OTHER, "mbarrier": SM_MBARRIER, "counter": SM_COUNTER}

# agent table columns
A_CTA, A_BODY_START, A_BODY_END, A_LEN, A_ITEMS, A_PROG = 0, 1, 2, 3, 4, 5
A_DIV = 6  # the largest P_DIV of the agent's ops (nested loops; 1 without): semantics.reads_pending
A_RING0 = 7  # then (initial_stage, initial_phase) per ring, then reset_until per ring (reset_until)

# prog table columns
P_CODE, P_RING, P_N, P_TARGET, P_UNLESS, P_BARRIER, P_BYTES_IDX, P_EVERY, P_AT, P_TAG = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
P_PART = 10  # a fill's part of the slot (-1: every part, a consumer-side fill); else 0
P_DIV = 11  # nested loops: a body tag is (item + ahead) // P_DIV (an op on a tile-level ring)
P_EFF = 12  # then the op's effects (semantics.effects_table's columns EF_*)

# agent state fields
F_PC, F_ITEM, F_SYNC, F_RING0 = 0, 1, 2, 3
# an agent's record of ring r: RING_FIELDS ints from F_RING0 + RING_FIELDS * r (ring_field);
# after the last ring, one "arrived generation" per named barrier (arrived_field)
RF_STAGE, RF_PHASE, RF_READY, RING_FIELDS = 0, 1, 2, 3
# ring table columns
R_STAGES, R_FULL_COUNT, R_EMPTY_COUNT, R_PARTS = 0, 1, 2, 3
# part table columns (T.part, row r * C_MAXP + p; checker/core/program.py slot_parts): the CTAs whose
# slots have the part (bit mask), how many fills store into it, then (prog row, agent) of each
# (the row's P_TAG says its section; a body fill's agent's item count bounds what it fills)
PT_CTAS, PT_NFILLS, PT_FILL0 = 0, 1, 2
# entry layout (T.ent): shifts and masks of the packed in-flight entry fields
E_KIND, E_CTA, E_RING, E_STAGE, E_VAL, E_BIDX, E_AGENT, E_SEQ, E_PART = 0, 1, 2, 3, 4, 5, 6, 7, 8
# E_CSEQ: a commit's count of its agent's earlier commit entries still in flight (it fires at 0);
# E_PEER: 1 for a copy or commit issued by an agent of another CTA than the one it targets
E_CSEQ, E_PEER = 9, 10
ENTRY_COPY, ENTRY_COMMIT, ENTRY_READ = 1, 2, 3
# A commit entry's E_BIDX (a copy's bytes index; commits have no bytes): COMMIT_ON_FULL when it
# fires on the full signal (commit_full), 0 on empty (commit_empty). entry_signal reads it.
COMMIT_ON_FULL = 1
# An async op's entry (ENTRY_READ) has E_BIDX == READ_WRITES when it is an async write
# (write_async: the slot is being written until it finishes), 0 when an async read.
READ_WRITES = 1

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
ring_pos = getattr(ring_field, "py_func", ring_field)  # (NUMBA_DISABLE_JIT: a plain function)
arrived_pos = getattr(arrived_field, "py_func", arrived_field)


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
    """Where part 0 of slot (cta, ring r, stage s) is; part p is at slot_pos + p."""
    return T.cfg[C_OFF_SLOT] + ((cta * T.cfg[C_RINGS] + r) * T.cfg[C_MAXS] + s) * T.cfg[C_MAXP]


@jit
def part_row(T, r, p):
    return r * T.cfg[C_MAXP] + p


@jit
def reset_until(T, a, r):
    """The last program position at which a `reset` of ring r may still lie ahead of agent a
    (a body reset: the body's end), or -1: none ever does."""
    return T.agent[a, A_RING0 + 2 * T.cfg[C_RINGS] + r]


@jit
def window_field(T, a, r, s, kind):
    """Where agent a's (k', ph') of signal (ring r, stage s, kind) is, or -1: the agent has no
    `reset` of ring r, so its window follows its phase alone (docs/rules.md)."""
    if T.cfg[C_WIN] < 0 or reset_until(T, a, r) < 0:
        return -1
    return agent_base(T, a) + T.cfg[C_WIN] + 2 * ((r * T.cfg[C_MAXS] + s) * 2 + kind)


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
    """The tag a fill stores or a read expects: in the body the agent's item, plus K for a fill
    with ahead=K (P_TAG = -1 - K), else the prologue's or the epilogue's own tag, or a prologue
    fill's item (the pairing rule: spec.schema `read_pairs_with`); nested loops: the tile,
    (item + K) // k_blocks, for an op on a tile-level ring (P_DIV, spec.load_loops)."""
    tag = T.prog[row, P_TAG]
    return (item - 1 - tag) // T.prog[row, P_DIV] if tag < 0 else tag


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



@jit
def bar_pos(T, b, cta):
    return T.cfg[C_OFF_BAR] + 2 * (b * T.cfg[C_CTAS] + cta)


@jit
def entry_signal(T, e):
    """The signal kind an in-flight entry updates when it lands or fires: a copy's full, a
    commit's the one its op updates (E_BIDX == COMMIT_ON_FULL: full), an async read's -1."""
    kind = (e >> T.ent[E_KIND, 0]) & T.ent[E_KIND, 1]
    if kind == ENTRY_COPY:
        return FULL
    if kind == ENTRY_COMMIT:
        if ((e >> T.ent[E_BIDX, 0]) & T.ent[E_BIDX, 1]) == COMMIT_ON_FULL:
            return FULL
        return EMPTY
    return -1


@jit
def entry_writes(T, e):
    """Is in-flight entry e an async write (an ENTRY_READ whose E_BIDX is READ_WRITES)?"""
    return (((e >> T.ent[E_KIND, 0]) & T.ent[E_KIND, 1]) == ENTRY_READ
            and ((e >> T.ent[E_BIDX, 0]) & T.ent[E_BIDX, 1]) == READ_WRITES)
