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

The reduction is written in five modules: this one builds the future tables (in Python, once
per model) and bounds the merge's work (`state_work`, `merged_steps`); por_deps.py holds the
dependency relation, the tables' layout and their quick answer (`others_touch`);
por_signals.py what a signal can still do while a step waits (every call to a backend's
rules is there, through backends/dispatch.py); por_walk.py the walk (`frozen_touch`);
por_select.py the persistent singletons (`mergeable`, `independent_step`,
`independent_entry`). The names the engines and tests read are all offered here, as
`por.<name>`.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from pipeproof.backends.base import EMPTY, FULL, jit
from pipeproof.checker.core import semantics as S
# The reduction's names, offered here as por.<name> (explore, prover, verifier, the tests).
from pipeproof.checker.engines.por_deps import (
    ACC_ISSUE, ACC_OBS, ACC_READ, ACC_UPD, ACC_WRITE, COPY_BYTES, EXPECT, N_CLASSES, OBS_EMPTY,
    OBS_FULL, READ_SLOT, UPD_EMPTY, UPD_FULL, WRITE_SLOT, commuting_arrivals, conflict_classes,
    entries_conflict, entry_part_of, landings_commute, others_touch, position, record_len,
    signal_conflict, slot_conflict)
from pipeproof.checker.engines.por_select import (
    cta_stays, exit_unobserved, independent_barrier_step, independent_commit, independent_entry,
    independent_landing, independent_read_finish, independent_step, mergeable,
    others_could_arrive)
from pipeproof.checker.engines.por_signals import (
    bytes_keep_order, could_complete_with_every_arrival, could_pass, first_ready,
    max_completions, stale_ok, stuck_outside_window, tx_could_be_zero, walk_window)
from pipeproof.checker.engines.por_walk import frozen_touch, touched_while_frozen
from pipeproof.spec.ops import OP_EFFECTS
from pipeproof.spec.schema import targets

MAX_ROWS = 1 << 21  # bigger programs get local steps only (tables > 80 MB, seconds to build)

# mask[row, class]: bit cta * max_stages + stage. row = off[agent, ring] + pos * max_stages +
# the agent's stage on that ring, pos the agent's position in its unrolled program; agents
# with the same program (and CTA) share their rows.
# uniform[ring, kind]: the count every arrive update of that kind has, or -1 (mixed, or tx).
# cfg[0]: 1 when the tables exist (else only local steps are merged); cfg[1]: 1 when rows are
# per op (pc) rather than per unrolled position (`any_count_tables`, for the lap abstraction).
# work: scratch space of `frozen_touch` (the engine allocates nothing in its loop; its
# records: por_deps.py).
# eff: S.effects_table(), the ops' footprints.
# limit[agent]: the walk answers "touched" once it would move that agent to this item or
# beyond (the lap abstraction's MANY states: past it, the item count matters; else HUGE).
FutureTables = namedtuple("FutureTables", ["cfg", "off", "mask", "uniform", "work", "eff",
                                           "limit"])
NO_LIMIT = 1 << 40
EFFECTS = S.effects_table()


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
    return _merge_room(model, len(model.agents) * (record_len(model.rings, model.max_stages) + n_signals)
                       + 3 * n_signals)


def _merge_room(model, n: int) -> np.ndarray:
    """n words of scratch, then the merge's own: a copy of the state the merge started from
    (model.n_fields words, to go back to it) and, last, the work left (`WORK`, NO_LIMIT
    outside a merge)."""
    W = np.zeros(n + model.n_fields + 1, dtype=np.int64)
    W[-1] = NO_LIMIT
    return W


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


# ------------------------------------------------------------------ the merge's work

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
