"""Partial-order reduction: steps that are taken at once, because no other step can tell when.

After every step the explicit engine (explore.merge_steps) lets each agent take, one after
another, any step that `mergeable` allows, until none does. Such a step t of agent a is
- always enabled until a takes it, whatever the others do (so no deadlock is skipped);
- independent of every step any other agent or in-flight entry can still take: both orders
  reach the same state and find the same violations between them (so no violation is
  skipped: a run that does t later reaches the same states, and the same violations, with t
  moved to the front; of two arrivals of one count on one signal, the one that completes the
  phase carries that phase's violation, whichever it is);
- free of violations where it is taken (else it is left to the search), and the state before
  it shows no property the state after it lacks (that state is never stored, so it is never
  evaluated).

Two kinds of step qualify:
- local steps (`S.local_step`): advance, reset, a skipped `unless=ready` wait;
- steps on a signal or slot that no other agent will ever touch in a way that matters:
  an arrive on a signal no other agent will wait on again (and whose arrive updates all have
  the same count, so they commute); a read of a slot no other agent will write or copy into
  again; an enabled wait (inside its phase window) on a signal no other agent will update
  again. "Will ever" is read from `FutureTables`: for each agent, ring, program position and
  stage, the signals and slots its remaining program touches, waits ignored (so a superset).
Steps that finish their agent never qualify: they can make a CTA gone, which others observe.

`mergeable` is read by the numba engine and, through `merged_steps`, by the trace builder and
the tests' plain-Python search, so the three agree by construction.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from backends import nvidia
from backends.base import AMD, EMPTY, FULL, jit
from checker import semantics as S

# Access classes of the future tables.
OBS_FULL, OBS_EMPTY, UPD_FULL, UPD_EMPTY, WRITE_SLOT = 0, 1, 2, 3, 4
N_CLASSES = 5
MAX_ROWS = 1 << 21  # bigger programs get local steps only (tables > 80 MB, seconds to build)

# mask[row, class]: bit cta * max_stages + stage. row = off[agent, ring] + pos * max_stages +
# the agent's stage on that ring, pos the agent's position in its unrolled program; agents
# with the same program (and CTA) share their rows.
# uniform[ring, kind]: the count every arrive update of that kind has, or -1 (mixed, or tx).
# cfg[0]: 1 when the tables exist (else only local steps are merged).
# work: scratch space of `frozen_touch` (the engine allocates nothing in its loop).
FutureTables = namedtuple("FutureTables", ["cfg", "off", "mask", "uniform", "work"])


def _unrolled(agent):
    """(pc, item) of every position of the agent's program in execution order, with whether
    the op there runs (a body op with every=K / at=j runs only for the items it selects)."""
    bs, be = agent.body_start, agent.body_end
    out = [(pc, 0, True) for pc in range(bs)]
    if be > bs:
        for item in range(agent.items):
            out += [(pc, item, item % agent.ops[pc][0].every == agent.ops[pc][0].at)
                    for pc in range(bs, be)]
    return out + [(pc, agent.items, True) for pc in range(be, len(agent.ops))]


def _targets(model, agent, op) -> list[int]:
    k, cta = model.ctas, agent.cta
    if k == 1 or op.to == "self":
        return [cta]
    return {"leader": [0], "peer": [(cta + 1) % k], "all": list(range(k))}[op.to]


def _classes(model, agent, op) -> list[tuple[int, list[int]]]:
    """(access class, CTAs) of one op."""
    own = [agent.cta]
    name = op.name
    if name in ("wait_full", "try_full"):
        return [(OBS_FULL, own)]
    if name in ("wait_empty", "try_empty", "drain"):
        return [(OBS_EMPTY, own)]
    if name in ("arrive_full", "expect_tx"):
        return [(UPD_FULL, _targets(model, agent, op))]
    if name in ("arrive_empty", "commit_empty"):
        return [(UPD_EMPTY, _targets(model, agent, op))]
    if name == "write":
        return [(WRITE_SLOT, own)]
    if name == "copy":
        return [(WRITE_SLOT, _targets(model, agent, op)), (UPD_FULL, _targets(model, agent, op))]
    return []


def _uniform(model) -> np.ndarray:
    out = np.full((model.rings, 2), -1, dtype=np.int64)
    for r, ring in enumerate(model.ring_names):
        for kind, arrives, tx_ops in ((FULL, ("arrive_full",), ("expect_tx", "copy")),
                                      (EMPTY, ("arrive_empty", "commit_empty"), ())):
            ops = [op for a in model.agents for op, _ in a.ops if op.ring == ring]
            counts = {op.n for op in ops if op.name in arrives}
            if len(counts) == 1 and not any(op.name in tx_ops for op in ops):
                out[r, kind] = counts.pop()
    return out


def _work(model) -> np.ndarray:
    """Scratch of `frozen_touch`: a record per agent, then an arrival budget per signal."""
    n_signals = model.ctas * model.rings * model.max_stages * 2
    return np.zeros(len(model.agents) * _record_len(model.rings) + n_signals, dtype=np.int64)


def _record_len(rings):
    return W_RING0 + 2 * rings


def no_future_tables(model) -> FutureTables:
    """Tables that allow local steps only."""
    return FutureTables(np.zeros(1, dtype=np.int64), np.zeros((1, 1), dtype=np.int64),
                        np.zeros((1, N_CLASSES), dtype=np.int64), _uniform(model),
                        np.zeros(1, dtype=np.int64))


def _program_key(agent):
    """Agents with equal keys have equal tables (interchangeable agents share one copy)."""
    return (agent.ops, agent.body_start, agent.body_end, agent.items, agent.initial_stages,
            agent.cta)


def _fill(model, agent, positions, base, mask):
    """The rows of one program (`positions`: its `_unrolled` list), from `base` on: per ring,
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
                if op.name in ("advance", "drain"):
                    after = (stages + 1) % n
                elif op.name == "reset":
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
            programs[key] = (agent, _unrolled(agent))
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
    return FutureTables(np.ones(1, dtype=np.int64), off, mask, _uniform(model), _work(model))


@jit
def position(T, a, pc, item):
    """Index of (pc, item) in the agent's unrolled program (`_unrolled`)."""
    bs = T.agent[a, S.A_BODY_START]
    be = T.agent[a, S.A_BODY_END]
    if pc < bs:
        return pc
    if pc < be:
        return bs + item * (be - bs) + (pc - bs)
    return bs + T.agent[a, S.A_ITEMS] * (be - bs) + (pc - be)


@jit
def others_touch(T, F, st, a, r, cls, bit):
    """Will any agent but `a` still touch (access class `cls`) signal or slot `bit` of ring r?"""
    ms = T.cfg[S.C_MAXS]
    for b in range(T.cfg[S.C_AGENTS]):
        if b == a:
            continue
        base = S.agent_base(T, b)
        pos = position(T, b, st[base + S.F_PC], st[base + S.F_ITEM])
        row = F.off[b, r] + pos * ms + st[S.ring_base(T, b, r)]
        if F.mask[row, cls] & (1 << bit):
            return True
    return False


@jit
def entry_aimed(T, st, kind, cta, r, s):
    off = T.cfg[S.C_OFF_INF]
    for j in range(T.cfg[S.C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        if S.entry_into(T, e, kind, cta, r, s):
            return True
    return False


# frozen_touch's record of each agent in F.work: program position, whether it is out of the
# walk (finished, or the agent that stands still), then (stage, phase) per ring. An agent
# stuck at a wait keeps its position there and is looked at again in the next sweep.
W_PC, W_ITEM, W_OUT, W_RING0 = 0, 1, 2, 3
# Ops one walk may visit before it gives up and answers "touched" (a long program whose agents
# nobody blocks would otherwise be walked to its end after every step).
WALK_LIMIT = 4096


@jit
def could_be_ready(T, st, sig, phase, budget):
    """Could a wait at `phase` on `sig` pass once at most `budget` more arrival units reach it?
    A copy landing adds no arrivals and tx is assumed to balance, so this over-approximates:
    a phase can complete at most once per `expected` units after the first `pending`."""
    b = S.sig_base(T, sig)
    if T.cfg[S.C_BACKEND] == AMD:
        return S.counter_ready(T, sig, st[b] + budget, phase)  # ready: counter >= a threshold
    if st[b + 1] == 0 or budget >= st[b + 1]:
        return True  # one phase can complete: both parities are possible
    return nvidia.ready(st[b], phase)


@jit
def frozen_touch(T, F, st, a, r, cls, bit, sig_t):
    """Can anything but agent a touch `bit` of ring r (access class `cls`) while a stands still?

    Every other agent's program is walked forward from where it is: an arrive adds to its
    signal's budget (in-flight commits start it), and a wait passes only if the budget could
    complete its phase (`could_be_ready`); else the agent is stuck there until a later sweep
    finds a bigger budget. The sweeps stop when no agent moves, so every position the others
    can reach with a frozen is walked (a superset: waits are judged generously).
    `sig_t` >= 0 (a's step arrives on it): an agent stuck at a wait on it must be inside its
    phase window, or the state before the arrive would show a phase_alias the state after it
    might not."""
    ms = T.cfg[S.C_MAXS]
    rings = T.cfg[S.C_RINGS]
    n_agents = T.cfg[S.C_AGENTS]
    rl = W_RING0 + 2 * rings
    W = F.work
    bo = n_agents * rl
    for i in range(T.cfg[S.C_CTAS] * rings * ms * 2):
        W[bo + i] = 0
    for b in range(n_agents):
        rec = b * rl
        base = S.agent_base(T, b)
        W[rec + W_PC] = st[base + S.F_PC]
        W[rec + W_ITEM] = st[base + S.F_ITEM]
        W[rec + W_OUT] = b == a or S.finished(T, st, b)
        for q in range(rings):
            W[rec + W_RING0 + 2 * q] = st[S.ring_base(T, b, q)]
            W[rec + W_RING0 + 2 * q + 1] = st[S.ring_base(T, b, q) + 1]
    off = T.cfg[S.C_OFF_INF]
    for j in range(T.cfg[S.C_INFLIGHT]):
        e = st[off + j]
        if e == 0:
            break
        kind = S.entry_field(T, e, S.E_KIND)
        cta = S.entry_field(T, e, S.E_CTA)
        er = S.entry_field(T, e, S.E_RING)
        es = S.entry_field(T, e, S.E_STAGE)
        here = er == r and cta * ms + es == bit
        if kind == S.ENTRY_COPY and here and (cls == WRITE_SLOT or cls == UPD_FULL):
            return True
        if kind == S.ENTRY_COMMIT:
            if here and cls == UPD_EMPTY:
                return True
            W[bo + S.sig_index(T, cta, er, es, EMPTY)] += S.entry_field(T, e, S.E_VAL)
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
                if budget < 0:
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
                phase = W[sb + 1]
                here = rr == r and cta * ms + stage == bit
                if op == S.WAIT_FULL or op == S.WAIT_EMPTY or op == S.DRAIN or \
                        op == S.TRY_FULL or op == S.TRY_EMPTY:
                    kind = S.wait_signal_kind(op)
                    sig = S.sig_index(T, cta, rr, stage, kind)
                    if could_be_ready(T, st, sig, phase, W[bo + sig]):
                        if here and cls == (OBS_FULL if kind == FULL else OBS_EMPTY):
                            return True
                    elif op != S.TRY_FULL and op != S.TRY_EMPTY:
                        if sig == sig_t and T.cfg[S.C_BACKEND] != AMD and not nvidia.in_window(
                                st[S.sig_base(T, sig)], phase, T.agent[b, S.A_RING0 + 2 * rr + 1]):
                            return True
                        if op == S.DRAIN or T.prog[row, S.P_UNLESS] != 1:
                            break  # stuck
                        # an unless=ready wait may be skipped: walk on
                    if op == S.DRAIN:
                        S.advance_at(T, W, sb, rr)
                elif op == S.ARRIVE_FULL or op == S.ARRIVE_EMPTY or op == S.EXPECT_TX or \
                        op == S.COPY or op == S.COMMIT_EMPTY:
                    kind = EMPTY if op == S.ARRIVE_EMPTY or op == S.COMMIT_EMPTY else FULL
                    units = 0 if op == S.COPY else (1 if op == S.EXPECT_TX else T.prog[row, S.P_N])
                    upd = UPD_FULL if kind == FULL else UPD_EMPTY
                    mask = S.targets_mask(T, b, T.prog[row, S.P_TARGET])
                    for dst in range(T.cfg[S.C_CTAS]):
                        if mask & (1 << dst) == 0:
                            continue
                        if rr == r and dst * ms + stage == bit and (
                                cls == upd or (op == S.COPY and cls == WRITE_SLOT)):
                            return True
                        W[bo + S.sig_index(T, dst, rr, stage, kind)] += units
                elif op == S.WRITE:
                    if here and cls == WRITE_SLOT:
                        return True
                elif op == S.ADVANCE:
                    S.advance_at(T, W, sb, rr)
                elif op == S.RESET:
                    W[sb] = T.agent[b, S.A_RING0 + 2 * rr]
                    W[sb + 1] = T.agent[b, S.A_RING0 + 2 * rr + 1]
                # reads, syncs and read_wait touch no signal or slot here: walked over
                W[rec + W_PC], W[rec + W_ITEM] = S.next_pc(T, b, pc, W[rec + W_ITEM])
                moved = True
    return False


@jit
def touched_while_frozen(T, F, st, a, r, cls, bit, sig_t):
    """The tables' quick answer first (nobody will ever touch it), then the walk."""
    return others_touch(T, F, st, a, r, cls, bit) and frozen_touch(T, F, st, a, r, cls, bit, sig_t)


@jit
def independent_step(T, F, st, a):
    """Is agent a's next step an arrive, read or wait that no other agent can interfere with?"""
    if F.cfg[0] == 0:
        return False
    base = S.agent_base(T, a)
    pc = st[base + S.F_PC]
    if pc >= T.agent[a, S.A_LEN] or st[base + S.F_SYNC] == 1:
        return False
    if S.next_pc(T, a, pc, st[base + S.F_ITEM])[0] >= T.agent[a, S.A_LEN]:
        return False
    row = S.op_row(T, a, pc)
    op = T.prog[row, S.P_CODE]
    r = T.prog[row, S.P_RING]
    rb = S.ring_base(T, a, r)
    stage = st[rb]
    cta = T.agent[a, S.A_CTA]
    bit = cta * T.cfg[S.C_MAXS] + stage
    if op == S.ARRIVE_FULL or op == S.ARRIVE_EMPTY:
        kind = FULL if op == S.ARRIVE_FULL else EMPTY
        if T.cfg[S.C_CTAS] > 1 and T.prog[row, S.P_TARGET] != S.T_SELF:
            return False
        if T.cfg[S.C_BACKEND] != AMD and F.uniform[r, kind] != T.prog[row, S.P_N]:
            return False
        return not touched_while_frozen(T, F, st, a, r, OBS_FULL if kind == FULL else OBS_EMPTY,
                                        bit, S.sig_index(T, cta, r, stage, kind))
    if op == S.READ:
        if S.copy_in_flight_to(T, st, cta, r, stage):
            return False
        return not touched_while_frozen(T, F, st, a, r, WRITE_SLOT, bit, -1)
    if op == S.WAIT_FULL or op == S.WAIT_EMPTY:
        kind = FULL if op == S.WAIT_FULL else EMPTY
        sig = S.sig_index(T, cta, r, stage, kind)
        if not S.signal_ready(T, st, sig, st[rb + 1]):
            return False
        if T.cfg[S.C_BACKEND] != AMD and not nvidia.in_window(
                st[S.sig_base(T, sig)], st[rb + 1], T.agent[a, S.A_RING0 + 2 * r + 1]):
            return False
        if kind == FULL and S.copy_in_flight_to(T, st, cta, r, stage):
            return False
        if kind == EMPTY and entry_aimed(T, st, S.ENTRY_COMMIT, cta, r, stage):
            return False
        return not touched_while_frozen(T, F, st, a, r, UPD_FULL if kind == FULL else UPD_EMPTY,
                                        bit, -1)
    return False


@jit
def mergeable(T, F, st, a):
    return S.local_step(T, st, a) or independent_step(T, F, st, a)


def merged_steps(model, F, state):
    """(codes, state after them) of the steps the engine takes at once after a step: the
    same loop as explore.merge_steps, through `mergeable`."""
    codes = []
    moved = True
    while moved:
        moved = False
        for a in range(len(model.agents)):
            if mergeable(model.tables, F, np.array(state, dtype=np.int64), a):
                nxt, bits, _ = model.apply(state, a)
                if bits != 0:
                    continue
                state = nxt
                codes.append(a)
                moved = True
    return codes, state
