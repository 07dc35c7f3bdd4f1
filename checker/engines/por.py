"""Partial-order reduction: persistent singleton sets, taken at once after every step.

After every step the explicit engine (explore.merge_steps) lets each agent take, one after
another, any step that `mergeable` allows, until none does. `mergeable(x, a)` holds only when
{a's next step} is a *persistent set* in state x (Godefroid 1996, Def. 4.1): no run from x
that leaves agent a standing still contains a step that is dependent on a's step. A search
that expands persistent sets visits a violation whenever the full graph has one; the theorem,
its conditions and how they are met here are written out in docs/reductions.md.

Dependency is derived from one table, `S.EFFECTS` (checker/core/semantics.py): every op code has a
row saying which signal it observes or updates and which slot it reads or writes. Two
accesses to one signal conflict unless both observe, or both are arrivals of one count on a
signal that has only such arrivals (they commute, and so do the violations they can commit);
two accesses to one slot conflict unless both read. A new op without a row fails at import.

A step qualifies as a candidate when it is
- local (`S.local_step`): advance, reset, a wait skipped by `unless=ready` (no footprint);
- or one access with no in-flight effect: an arrive (of the ring's uniform count, to its own
  CTA or to others, which then must not be able to go while a stands still), a synchronous
  read, or a blocking wait that is ready now and inside its phase window;
and never when it finishes its agent (that can make a CTA gone, which others observe).
Issuing an async read qualifies as a read does, and a satisfied read_wait as a local step
does. A copy's landing (an in-flight action) qualifies too, when it stores into one part and,
if the ring's copies have several byte counts, the phase can complete only at the last landing
(`independent_landing`, `bytes_keep_order`); so does a commit's firing, an arrival like an
arrive's (`independent_commit`), and an async read's finishing (`independent_read_finish`:
no store into its slot, its CTA cannot go); the walk then runs with every
agent walking, and bounds whether a full signal's tx can reach 0 by the bytes that can still
land or be expected (`could_pass`).
It is then persistent when no in-flight entry and no step the other agents can still take
while a stands still conflicts with it. What the others can do is over-approximated twice:
`others_touch` reads the future tables (`FutureTables`: for every agent, program position and
stage, what its remaining program accesses, waits ignored), and where they say "touched",
`frozen_touch` walks the others' programs forward with a frozen, letting a wait pass whenever
the arrivals the others (and in-flight commits) can still make could complete its phase.
`mergeable` is read by the numba engine and, through `merged_steps`, by the trace builder and
the tests' plain-Python search, so the three agree by construction.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pipeproof.backends import nvidia
from pipeproof.backends.base import EMPTY, FULL, jit
from pipeproof.checker.core import semantics as S
from pipeproof.spec.ops import OP_EFFECTS
from pipeproof.spec.schema import targets

# Access classes of the future tables (bit c of a class mask).
OBS_FULL, OBS_EMPTY, UPD_FULL, UPD_EMPTY, WRITE_SLOT, READ_SLOT = 0, 1, 2, 3, 4, 5
N_CLASSES = 6
# Accesses: to a signal (observe, update) and to a slot (read, write); 0 = none.
ACC_OBS, ACC_UPD = 1, 2
ACC_READ, ACC_WRITE, ACC_ISSUE = 1, 2, 3
COPY_BYTES = 2  # uniform[ring, COPY_BYTES]
# frozen_touch's t_part when the step is an expect_tx (landings beside it are judged at the end)
EXPECT = -3
MAX_ROWS = 1 << 21  # bigger programs get local steps only (tables > 80 MB, seconds to build)

# mask[row, class]: bit cta * max_stages + stage. row = off[agent, ring] + pos * max_stages +
# the agent's stage on that ring, pos the agent's position in its unrolled program; agents
# with the same program (and CTA) share their rows.
# uniform[ring, kind]: the count every arrive update of that kind has, or -1 (mixed, or tx).
# cfg[0]: 1 when the tables exist (else only local steps are merged); cfg[1]: 1 when rows are
# per op (pc) rather than per unrolled position (`any_count_tables`, for the lap abstraction).
# work: scratch space of `frozen_touch` (the engine allocates nothing in its loop).
# eff: S.effects_table(), the ops' footprints.
# limit[agent]: the walk answers "touched" once it would move that agent to this item or
# beyond (the lap abstraction's MANY states: past it, the item count matters; else HUGE).
FutureTables = namedtuple("FutureTables", ["cfg", "off", "mask", "uniform", "work", "eff",
                                           "limit"])
NO_LIMIT = 1 << 40
EFFECTS = S.effects_table()


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


# ------------------------------------------------------------------ the future tables

def _classes(model, agent, op) -> list[tuple[int, list[int]]]:
    """(access class, CTAs) of one op, read off its EFFECTS row."""
    row = EFFECTS[S.OP_CODES[op.name]]
    own, dests = [agent.cta], list(targets(model.ctas, agent.cta, op.to))
    out = []
    if row[S.EF_OBS] >= 0:
        out.append((OBS_FULL if row[S.EF_OBS] == FULL else OBS_EMPTY, own))
    if row[S.EF_UPD] >= 0:
        out.append((UPD_FULL if row[S.EF_UPD] == FULL else UPD_EMPTY, dests))
    if row[S.EF_WRITES]:
        out.append((WRITE_SLOT, dests))
    if row[S.EF_READS]:
        out.append((READ_SLOT, own))
    return out


def _uniform(model) -> np.ndarray:
    """Per ring and signal kind: the one count of every arrive update, or -1 when the counts
    differ or a tx-count op (expect_tx, copy) updates that kind; column COPY_BYTES: the one
    byte count of every copy into the ring, or -1 (none, or several)."""
    out = np.full((model.rings, 3), -1, dtype=np.int64)
    for r, ring in enumerate(model.ring_names):
        for kind in (FULL, EMPTY):
            rows = [(op, EFFECTS[S.OP_CODES[op.name]]) for a in model.agents for op, _ in a.ops
                    if op.ring == ring]
            updates = [(op, row) for op, row in rows if row[S.EF_UPD] == kind]
            counts = {op.n for op, row in updates if row[S.EF_UNITS] == -1}
            if len(counts) == 1 and all(row[S.EF_UNITS] == -1 for _, row in updates):
                out[r, kind] = counts.pop()
        sizes = {op.n for a in model.agents for op, _ in a.ops
                 if op.ring == ring and OP_EFFECTS[op.name].issues == "copy"}
        if len(sizes) == 1:
            out[r, COPY_BYTES] = sizes.pop()
    return out


def _work(model) -> np.ndarray:
    """Scratch of `frozen_touch`: a record per agent, then per signal an arrival budget, the
    bytes that can still land on it and the bytes that can still be expected on it, then per
    agent and signal the least phase_no it has seen pass (-1: none yet); then the merge's
    room (`_merge_room`)."""
    n_signals = model.ctas * model.rings * model.max_stages * 2
    return _merge_room(model, len(model.agents) * (_record_len(model.rings, model.max_stages) + n_signals)
                       + 3 * n_signals)


def _merge_room(model, n: int) -> np.ndarray:
    """n words of scratch, then the merge's own: a copy of the state the merge started from
    (model.n_fields words, to go back to it) and, last, the work left (`WORK`, NO_LIMIT
    outside a merge)."""
    W = np.zeros(n + model.n_fields + 1, dtype=np.int64)
    W[-1] = NO_LIMIT
    return W


@jit
def _record_len(rings, max_stages):
    return W_RING0 + 2 * rings + 1 + 2 * max_stages


def _no_limit(model) -> np.ndarray:
    return np.full(len(model.agents), NO_LIMIT, dtype=np.int64)


def no_future_tables(model) -> FutureTables:
    """Tables that allow local steps only."""
    return FutureTables(np.zeros(2, dtype=np.int64), np.zeros((1, 1), dtype=np.int64),
                        np.zeros((1, N_CLASSES), dtype=np.int64), _uniform(model),
                        _merge_room(model, 1), EFFECTS, _no_limit(model))


def _program_key(agent):
    """Agents with equal keys have equal tables (interchangeable agents share one copy)."""
    return (agent.ops, agent.body_start, agent.body_end, agent.items, agent.initial_stages,
            agent.cta)


def _fill(model, agent, positions, base, mask):
    """The rows of one program (`positions`: its `Agent.unrolled()` list), from `base` on: per ring,
    one block of max_stages rows per position and a last all-zero block (the finished
    agent), so `_ring_rows` rows per ring."""
    ms = model.max_stages
    for r, ring in enumerate(model.ring_specs):
        n = ring.stages
        block = base + r * _ring_rows(positions, ms)
        nxt = block + len(positions) * ms
        stages = np.arange(n)
        for p in range(len(positions) - 1, -1, -1):
            pc, _, runs = positions[p]
            op = agent.ops[pc][0]
            here = block + p * ms
            after = stages
            acc = np.zeros((n, N_CLASSES), dtype=np.int64)
            if runs and op.ring == ring.name:
                for cls, ctas in _classes(model, agent, op):
                    for c in ctas:
                        acc[:, cls] |= np.left_shift(1, c * ms + stages)
                move = OP_EFFECTS[op.name].move
                if move == "advance":
                    after = (stages + 1) % n
                elif move == "reset":
                    after = np.full(n, agent.initial_stages[r])
            mask[here:here + n] = acc | mask[nxt + after]
            nxt = here


def _ring_rows(positions, ms):
    return (len(positions) + 1) * ms


def future_tables(model) -> FutureTables:
    ms = model.max_stages
    programs = {}
    for agent in model.agents:
        key = _program_key(agent)
        if key not in programs:
            programs[key] = (agent, agent.unrolled())
    ring_rows = {key: _ring_rows(positions, ms) for key, (_, positions) in programs.items()}
    rows = sum(ring_rows.values()) * model.rings
    if rows > MAX_ROWS or model.ctas * ms > 62:
        return no_future_tables(model)
    mask = np.zeros((rows, N_CLASSES), dtype=np.int64)
    start, base = {}, 0
    for key, (agent, positions) in programs.items():
        start[key] = base
        _fill(model, agent, positions, base, mask)
        base += ring_rows[key] * model.rings
    keys = [_program_key(a) for a in model.agents]
    off = np.array([[start[k] + r * ring_rows[k] for r in range(model.rings)] for k in keys],
                   dtype=np.int64)
    return FutureTables(np.array([1, 0], dtype=np.int64), off, mask, _uniform(model),
                        _work(model), EFFECTS, _no_limit(model))


def any_count_tables(model) -> FutureTables:
    """Future tables that hold for every item count, for the lap abstraction (whose states
    run with an item count that is exact, or never ends): one row block per op (pc) and
    stage, each row the union of every access of every op from pc to the end of the program,
    with the body repeated, at every stage. A superset of what the agent's remaining program
    accesses whatever the count, so "not touched" is never wrong; the walk is the precise
    part. A finished agent (pc = len) has an all-zero block. A second block per program holds
    the rows of an agent at its last item (`position`): the rest of the body and the
    epilogue, no repetition. An exact state's count is every one of its runs' count, so there
    the agent's last item is known; a MANY state's agents never reach it (items = HUGE)."""
    ms = model.max_stages
    if model.ctas * ms > 62:
        return no_future_tables(model)
    programs, keys = {}, []
    for agent in model.agents:
        key = _program_key(agent)[:4] + (agent.cta,)
        keys.append(key)
        programs.setdefault(key, agent)
    start, base, blocks = {}, 0, []
    for key, agent in programs.items():
        start[key] = base
        n_ops = len(agent.ops)
        for r, ring in enumerate(model.ring_specs):
            all_stages = (1 << ring.stages) - 1
            acc = np.zeros((n_ops + 1, N_CLASSES), dtype=np.int64)
            for pc, (op, _) in enumerate(agent.ops):
                if op.ring == ring.name:
                    for cls, ctas in _classes(model, agent, op):
                        for c in ctas:
                            acc[pc, cls] |= all_stages << (c * ms)
            repeated = np.bitwise_or.reduce(acc[agent.body_start:n_ops], axis=0)
            rows = np.zeros((n_ops + 1, N_CLASSES), dtype=np.int64)
            for pc in range(n_ops - 1, -1, -1):
                rows[pc] = acc[pc] | rows[pc + 1]
                if pc < agent.body_end:
                    rows[pc] |= repeated
            last = rows.copy()  # at the agent's last item: the rest of the body, the epilogue
            for pc in range(agent.body_end - 1, agent.body_start - 1, -1):
                last[pc] = acc[pc] | last[pc + 1]
            blocks.append(np.repeat(np.concatenate([rows, last]), ms, axis=0))
        base += 2 * (n_ops + 1) * ms * model.rings
    mask = np.concatenate(blocks) if blocks else np.zeros((1, N_CLASSES), dtype=np.int64)
    off = np.array([[start[k] + r * 2 * (len(model.agents[i].ops) + 1) * ms
                     for r in range(model.rings)] for i, k in enumerate(keys)], dtype=np.int64)
    return FutureTables(np.array([1, 1], dtype=np.int64), off, mask, _uniform(model),
                        _work(model), EFFECTS, _no_limit(model))


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


# ------------------------------------------------------------------ what can happen while a waits

@jit
def entries_conflict(T, F, st, r, bits, t_kind, t_sig_acc, t_slot_acc, t_part, skip):
    """Does an in-flight entry (but entry `skip`) conflict with the access? A copy lands
    (writes its slot part and updates its full signal's tx), a commit arrives on its
    signal (`S.entry_signal`: empty or full), an async read reads. `t_part` >= -1: the access is a landing into that part (-1
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
        elif slot_conflict(t_slot_acc, ACC_READ):
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


@jit
def bytes_keep_order(T, st, sig, arrivals, landing, expected, own):
    """(nvidia) Landings of different byte counts on `sig` commute with the one being judged
    (`own` bytes) in every run without it, when at most `arrivals` units, `landing` other bytes
    and `expected` bytes (of arrivals: a tx-only update is a conflict in the walk) can still
    reach `sig`: no arrival can find pending 0; tx stays in range whatever lands or is
    expected, so no order traps; and if pending can reach 0 (every arrival comes, so every
    expected byte is added), tx stays at or above `own` plus the bytes still to land, so the
    phase completes at the last landing, and only there, in every order."""
    b = S.sig_base(T, sig)
    pending = st[b + 1]
    tx = st[b + 2]
    if arrivals > pending:
        return False
    if tx + expected > nvidia.TX_LIMIT or tx - landing - own < -nvidia.TX_LIMIT:
        return False
    if arrivals == pending and tx + expected < landing + own:
        return False
    return True


# frozen_touch's record of each agent in F.work: program position, whether it is out of the
# walk (finished, or the agent that stands still), then (stage, phase) per ring, then its
# phase_alias window records (k', ph') of the frozen access's ring and signal kind, one per
# stage, as the walk moves it (`walk_window`), after a word saying whether they are exact. An
# agent stuck at a wait keeps its position there and is looked
# at again in the next sweep.
W_PC, W_ITEM, W_OUT, W_RING0 = 0, 1, 2, 3
# Ops one walk may visit before it gives up and answers "touched" (a long program whose agents
# nobody blocks would otherwise be walked to its end after every step).
WALK_LIMIT = 4096
# The merges' work budget (issue 32; docs/reductions.md "A bounded merge"). The checks of a
# merge (explore.merge_steps, after one step) cost work units, counted down in the last word
# of F.work: a walk's set-up (one per word of its records it clears), each op it visits, each
# agent the future tables are read for, each mergeable check, each step taken (one per field).
# Expanding a state, explore.expand gives the merges of all its successors together
# max(WORK_PER_FIELD * n_actions * fields, WORK_FLOOR) units (`state_work`): about what the
# unreduced search spends on the state's successors (a step, a canonical form, a packing of
# the fields each), times a constant, and never less than a small spec's merges take (the
# floor: walks are long beside a small spec's few fields, and cheap; every example's state
# needs less than a fifth of it). A merge that would go
# past what is left gives up, all or nothing: its successor is stored as the step left it,
# exactly as the unreduced search stores it, and later successors of the state are not
# merged. So a state costs at most a constant times its unreduced expansion, and no state is
# stored that the unreduced search would not store.
WORK_PER_FIELD = 1
WORK_FLOOR = 1 << 20


@jit
def max_completions(T, st, sig, budget, landing, expected):
    """(nvidia) At most how many phases of `sig` can still complete, once at most `budget` more
    arrival units reach it, at most `landing` more bytes land on it and at most `expected`
    more bytes are expected on it? None before `pending` more units arrived and tx is 0; then
    one per `expected count` units more (units of one phase never count for another)."""
    b = S.sig_base(T, sig)
    if budget < st[b + 1] or not tx_could_be_zero(st[b + 2], landing, expected):
        return 0
    if budget == st[b + 1]:
        # Exactly the arrivals the phase still needs: it completes only once every one has
        # come, so every expect_tx among them has added its bytes (only expect_tx adds bytes,
        # and it is an arrival): tx + expected - (some landed bytes) must be 0. Per-warp TMA
        # copies beside one elected expect_tx (Triton's --warps lowering) need this.
        left = st[b + 2] + expected
        return 1 if 0 <= left <= landing else 0
    return 1 + (budget - st[b + 1]) // S.expected_of(T, sig)


@jit
def first_ready(low, high, phase):
    """The smallest signal phase_no in low..high at which a wait at `phase` passes (its parity
    differs from the phase's), or -1."""
    for v in range(low, min(high, low + 1) + 1):
        if nvidia.parity(v) != nvidia.parity(phase):
            return v
    return -1


@jit
def could_complete_with_every_arrival(T, st, sig, budget, landing, expected):
    """(nvidia) Could the phase of `sig` complete if no arrival may find it with pending 0?
    It needs exactly the `budget` arrivals still possible (fewer leave it pending, more
    would over-arrive), so every expect_tx among them adds its bytes: tx = t + expected -
    (some of the `landing` bytes) must be 0. The caller checks `budget` <= pending."""
    b = S.sig_base(T, sig)
    if budget < st[b + 1]:
        return False
    left = st[b + 2] + expected
    return 0 <= left <= landing


@jit
def could_pass(T, F, st, W, seen_at, sig, phase, budget, landing, expected, every_arrival):
    """Could a walked wait at `phase` on `sig` pass? phase_no is at least what this agent saw
    pass there before (W[seen_at + sig]: it only grows) and at most the current one plus the
    completions still possible (`max_completions`; for a landing's own signal, none unless
    `could_complete_with_every_arrival`); a wait passes at a phase_no of the other parity.
    When it can, the least such phase_no is what this agent has seen. amd: a counter only
    grows by the units that reach it."""
    if S.counter_signals(T):
        return S.counter_ready(T, sig, st[S.sig_base(T, sig)] + budget, phase)
    now = st[S.sig_base(T, sig)]
    c = max_completions(T, st, sig, budget, landing, expected)
    if every_arrival and c > 0 and not could_complete_with_every_arrival(T, st, sig, budget,
                                                                         landing, expected):
        c = 0
    v = first_ready(max(now, W[seen_at + sig]), now + c, phase)
    if v < 0:
        return False
    W[seen_at + sig] = v
    return True


@jit
def tx_could_be_zero(tx, landing, expected):
    """Could the tx count reach 0, when at most `landing` bytes can still be subtracted and at
    most `expected` bytes added? Only subtractions left: 0 <= tx <= landing (a superset of
    the subset sums); any addition left: assume yes."""
    if expected > 0:
        return True
    return 0 <= tx <= landing


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
    ms = T.cfg[S.C_MAXS]
    rings = T.cfg[S.C_RINGS]
    n_agents = T.cfg[S.C_AGENTS]
    rl = _record_len(rings, ms)
    wx = W_RING0 + 2 * rings  # the window records' exactness, then the records (k', ph')
    W = F.work
    E = F.eff
    bo = n_agents * rl
    n_sig = T.cfg[S.C_CTAS] * rings * ms * 2
    lo, ex = bo + n_sig, bo + 2 * n_sig  # bytes that can land, bytes that can be expected
    seen = bo + 3 * n_sig  # seen[agent * n_sig + sig]: phase_no is at least this there
    # The merge's work left (WORK_PER_FIELD): the set-up, then one unit per op walked. Out of
    # work, the answer is "touched" (the safe answer), and the merge gives up.
    wk = W.shape[0] - 1
    W[wk] -= seen + n_agents * n_sig
    if W[wk] < 0:
        return True
    commuting = t_kind >= 0 and commuting_arrivals(T, F, r, t_kind)
    for i in range(3 * n_sig):
        W[bo + i] = 0
    for i in range(n_agents * n_sig):
        W[seen + i] = -1
    # A landing's own full signal: arrivals on it are judged at the end (`arrived`).
    sig_l = -1
    arrived = False
    if t_part >= -1:
        e = st[T.cfg[S.C_OFF_INF] + skip]
        sig_l = S.sig_index(T, S.entry_field(T, e, S.E_CTA), r, S.entry_field(T, e, S.E_STAGE),
                            FULL)
    sig_x = -1  # an expect_tx's signal (one CTA): landings on it are judged at the end
    if t_part == EXPECT:
        for i in range(T.cfg[S.C_CTAS] * ms):
            if (bits >> i) & 1:
                sig_x = S.sig_index(T, i // ms, r, i % ms, FULL)
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
    # The twin's signal and count, when a commit the walk issues is an entry of its value:
    # only when entries carry no agent and seq (no async reads), else a value may differ.
    sig_w, units_w = -1, 0
    if twin != 0 and T.ent[S.E_SEQ, 1] == 0 and T.ent[S.E_AGENT, 1] == 0:
        sig_w = S.sig_index(T, S.entry_field(T, twin, S.E_CTA), S.entry_field(T, twin, S.E_RING),
                            S.entry_field(T, twin, S.E_STAGE), S.entry_signal(T, twin))
        units_w = S.entry_field(T, twin, S.E_VAL)
    in_flight = S.reads_in_flight(T, st, reader) if reader >= 0 else 0
    # `phase_kept` (docs/reductions.md "Observations beside arrivals"): an agent's own arrival
    # (commuting) or wait on an mbarrier signal; an observation of it beside an arrival on it
    # conflicts only if the signal's phase can complete while a stands still, judged at the end
    # from the arrivals the walk found possible (`watched`: bit cta * ms + stage).
    phase_kept = (a >= 0 and t_part == -2 and twin == 0 and reader < 0 and t_kind >= 0 and
                  not S.counter_signals(T) and
                  (t_sig_acc == ACC_OBS or (t_sig_acc == ACC_UPD and commuting)))
    watched = 0
    budget = WALK_LIMIT
    moved = True
    while moved:
        moved = False
        for b in range(n_agents):
            rec = b * rl
            if W[rec + W_OUT]:
                continue
            cta = T.agent[b, S.A_CTA]
            while True:
                budget -= 1
                W[wk] -= 1
                if budget < 0 or W[wk] < 0:
                    return True
                pc = W[rec + W_PC]
                if pc >= T.agent[b, S.A_LEN]:
                    W[rec + W_OUT] = 1
                    break
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
                                return True
                            watched |= 1 << (cta * ms + stage)
                    else:
                        # An agent with a reset keeps its window as of its last passed wait,
                        # which the walk does not update: its stuck wait counts as touching,
                        # unless the state's record still gives its window exactly (`stale_ok`).
                        if window and here and obs == t_kind:
                            if W[rec + wx] == 1:
                                k = nvidia.intended_after(W[rec + wx + 1 + 2 * stage],
                                                          W[rec + wx + 2 + 2 * stage], W[sb + 1])
                                if not nvidia.in_window_at(st[S.sig_base(T, sig)], k):
                                    return True
                            elif ((S.window_field(T, b, rr, stage, obs) >= 0 and
                                   not stale_ok(T, st, W, rec, b, rr, stage, obs)) or
                                    not S.in_phase_window(T, st, b, rr, sig, W[sb + 1])):
                                return True
                        if T.prog[row, S.P_UNLESS] != 1:
                            break  # stuck; an unless=ready wait may be skipped: walk on
                if b == reader and E[op, S.EF_WAITS_READS] and in_flight > T.prog[row, S.P_N]:
                    break  # stuck for good: the reader's reads in flight never go down
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
                                    return True
                                else:
                                    arrived = True  # an arrival beside a landing: judged at the end
                            if not (sig == sig_w and units == units_w and
                                    E[op, S.EF_ASYNC] == S.ENTRY_COMMIT):
                                W[bo + sig] += units  # (a twin's firing is the frozen step)
                            if E[op, S.EF_TX] < 0:
                                W[lo + sig] += T.prog[row, S.P_N]
                            elif E[op, S.EF_TX] > 0:
                                W[ex + sig] += T.prog[row, S.P_N]
                        if (E[op, S.EF_WRITES] and at and not beside and
                                slot_conflict(t_slot_acc, ACC_WRITE)):
                            return True
                if E[op, S.EF_READS] and here and slot_conflict(t_slot_acc, ACC_READ):
                    return True
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
                    return True
                moved = True
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
                for b in range(n_agents):
                    if T.agent[b, S.A_CTA] == dst and W[b * rl + W_OUT] == 0:
                        alive = True
                if not alive:
                    return True
    return False


@jit
def walk_window(T, W, at, b, r, pc, stage, phase, row, passes, blocks):
    """Agent b's window record (k', ph') of (ring r, `stage`, the frozen kind), kept at W[at +
    1 + 2 * stage] while W[at] is 1, as the walk takes it over an observation at `pc`. A
    blocking wait that cannot be skipped passes in every run that reaches it the same way,
    so the walk records what the step would (semantics.window_passed: the intended phase k
    depends on the record and the agent's phase, not on when it passes). A try, or a wait
    `unless=ready`, may pass or not: the record is no longer known (W[at] = 0), and the
    walk's waiters fall back to the state's record (`stale_ok`)."""
    if blocks == 0 or T.prog[row, S.P_UNLESS] == 1:
        W[at] = 0
        return
    if not passes:
        return
    k = nvidia.intended_after(W[at + 1 + 2 * stage], W[at + 2 + 2 * stage], phase)
    W[at + 1 + 2 * stage], W[at + 2 + 2 * stage] = S.window_record(T, b, r, k, phase, pc)


@jit
def stale_ok(T, st, W, rec, b, r, stage, kind):
    """Does agent b's window record (k', ph') of signal (r, stage, kind) in the state give its
    window at the walk's position exactly, though the walk did not update it? Yes when the walk
    never moved b (the record is the state's own in every run without the step), and when no
    reset of the ring lies ahead of b and ph' <= its phase: passing waits then only rewrites the
    record along k = k' + (ph - ph'), which the stale record gives too (semantics.intended)."""
    base = S.agent_base(T, b)
    if W[rec + W_PC] == st[base + S.F_PC] and W[rec + W_ITEM] == st[base + S.F_ITEM]:
        return True
    w = S.window_field(T, b, r, stage, kind)
    return (st[base + S.F_PC] > S.reset_until(T, b, r)
            and st[w + 1] <= st[S.ring_field(T.cfg[S.C_AGF], b, r, S.RF_PHASE)])


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


@jit
def state_work(n_actions, nf):
    """The merge work of one state's successors together (WORK_PER_FIELD, WORK_FLOOR)."""
    return max(WORK_PER_FIELD * n_actions * nf, WORK_FLOOR)


@jit
def step_work(n_actions, nf):
    """The work a merged step takes, less what it gives back (negative: a gain). The copy
    costs one unit per field; the state it passes through is one the unreduced search would
    store and expand (`state_work`'s per-state measure), so that much comes back to the merges
    of this state's successors (docs/reductions.md "A bounded merge")."""
    return nf - WORK_PER_FIELD * n_actions * nf


@jit
def set_work(F, units):
    """The work the merges may spend from now on (NO_LIMIT: not counted)."""
    F.work[F.work.shape[0] - 1] = units


@jit
def merge_begin(F, st):
    """Start a merge from `st`: a copy of it to go back to (`merge_end`)."""
    W = F.work
    wk = W.shape[0] - 1
    nf = st.shape[0]
    for f in range(nf):
        W[wk - nf + f] = st[f]


@jit
def merge_end(F, st, gave_up):
    """End a merge; when it `gave_up`, `st` goes back to the state it started from. Returns
    1 when it gave up, else 0."""
    W = F.work
    wk = W.shape[0] - 1
    if gave_up:
        nf = st.shape[0]
        for f in range(nf):
            st[f] = W[wk - nf + f]
    return 1 if gave_up else 0


def merged_steps(model, F, state, bounded: bool = True):
    """(codes, state after them) of the steps the engine takes at once after a step: the
    same loop as explore.merge_steps, through `mergeable`, with a state's merge work
    (`state_work`; none when not `bounded`): when it runs out, no step is taken, ([], state).
    (The engine's merges of a state's successors share that work, so the trace builder,
    verify._step_to, tries the successor unmerged and merged without a budget too.)"""
    codes = []
    start = state
    n_agents = len(model.agents)
    off = model.tables.cfg[S.C_OFF_INF]
    W = F.work
    wk = W.shape[0] - 1
    nf = len(state)
    merge_begin(F, np.array(state, dtype=np.int64))
    W[wk] = state_work(model.n_actions(), nf) if bounded else NO_LIMIT
    try:
        moved = True
        while moved:
            moved = False
            for a in range(n_agents):
                W[wk] -= 1
                if mergeable(model.tables, F, np.array(state, dtype=np.int64), a):
                    nxt, bits, _ = model.apply(state, a)
                    if bits == 0:
                        state = nxt
                        codes.append(a)
                        W[wk] -= step_work(model.n_actions(), nf)
                        moved = True
                if W[wk] < 0:
                    return [], start
            for j in range(model.tables.cfg[S.C_INFLIGHT]):
                if state[off + j] == 0:
                    break
                W[wk] -= 1
                taken = False
                if independent_entry(model.tables, F, np.array(state, dtype=np.int64), j):
                    nxt, bits, _ = model.apply(state, n_agents + j)
                    if bits == 0:
                        state = nxt
                        codes.append(n_agents + j)
                        W[wk] -= step_work(model.n_actions(), nf)
                        moved = taken = True
                if W[wk] < 0:
                    return [], start
                if taken:
                    break
        return codes, state
    finally:
        W[wk] = NO_LIMIT

