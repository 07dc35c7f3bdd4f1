"""The partial-order reduction's soundness checks, shared by tests/test_por.py,
test_por_reach.py and test_commit_full.py (docs/reductions.md "What must be kept"): the
reachable states of a compiled model without reduction (`reachable`), an action followed across
a step (`entry_code`, `same_action`), the check that a step commutes with every other enabled
step (`commutes_at`), and the two walks over reachable states built on it: every agent's step
`independent_step` allows (`check_independent_steps`) and every landing or commit
`independent_entry` allows (`check_independent_entries`)."""
from __future__ import annotations

import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import por as POR

KIND_BITS = (1 << S.N_KINDS) - 1  # the violation kinds of a step's bits
# The state properties the state before a step taken at once must not show without the state
# after it: an agent's step (commutes_at), a landing or commit (check_independent_entries).
STEP_HIDES = S.PHASE_ALIAS
ENTRY_HIDES = S.DEADLOCK | S.PHASE_ALIAS


def vec(state):
    """A state tuple as the compiled engines' vector."""
    return np.array(state, dtype=np.int64)


def is_local(model, state, a):
    return bool(S.local_step(model.tables, vec(state), a))


def reachable(model, limit):
    """Up to `limit` reachable states, breadth first, no reduction."""
    seen, todo = {model.initial_state()}, [model.initial_state()]
    while todo and len(seen) < limit:
        state = todo.pop(0)
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is not None and not bits & S.TRAP and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def inflight_entries(model, state):
    """(j, entry) of each in-flight entry of a state (the entries are packed, 0 ends them)."""
    off = model.tables.cfg[S.C_OFF_INF]
    for j in range(model.tables.cfg[S.C_INFLIGHT]):
        e = state[off + j]
        if e == 0:
            return
        yield j, e


def entry_code(model, state, e):
    """The action code of in-flight entry `e` (by value: entries move as others come and go)."""
    off = model.tables.cfg[S.C_OFF_INF]
    for j in range(model.tables.cfg[S.C_INFLIGHT]):
        if state[off + j] == e:
            return len(model.agents) + j
    return None


def same_action(model, before, after, u):
    """Action u of state `before` as a code of state `after`: an agent's is its own, an
    in-flight entry's is found by its value (an issue or a landing moves the others)."""
    if u < len(model.agents):
        return u
    return entry_code(model, after, before[model.tables.cfg[S.C_OFF_INF] + u - len(model.agents)])


def commutes_at(model, now, a, may_enable=False):
    """At state `now`: agent a's step is enabled, the state before it shows no state property
    the state after it lacks (it is never stored, so never evaluated), and it commutes with
    every other enabled step: both orders reach the same state and find the same violations
    between them (arrivals of one count on one signal commute, but which one completes a phase,
    and carries that phase's violation, depends on the order). It disables no other step; with
    `may_enable` it may enable one (a wait that needs a's arrival: in every run that wait comes
    after a's step anyway). Returns (a's violation bits at `now`, the successors of the other
    steps)."""
    after, bits, _ = model.apply(now, a)
    assert after is not None, model.format_action(now, a)
    assert model.state_violation_bits(now)[0] & ~model.state_violation_bits(after)[0] \
        & STEP_HIDES == 0
    successors = []
    for u in range(model.n_actions()):
        if u == a:
            continue
        u_first, u_bits, _ = model.apply(now, u)
        u2 = same_action(model, now, after, u)
        u_after, u_bits_after, _ = model.apply(after, u2) if u2 is not None else (None, 0, None)
        if u_first is None:
            assert may_enable or u_after is None, model.format_action(now, u)
            continue
        assert u_after is not None, model.format_action(now, u)
        if u_bits & S.TRAP:
            # u traps: the run u-then-a ends at u, so a's own bits (a may violate here, after
            # the others moved) are never seen on it. What the reduction must keep is that a
            # violation is found in both orders (docs/reductions.md "What must be kept"): u
            # still violates after a.
            assert u_bits_after & KIND_BITS, model.format_action(now, u)
            continue
        both, t_bits, _ = model.apply(u_first, a)
        assert u_bits | t_bits == bits | u_bits_after, model.format_action(now, u)
        if not u_bits_after & S.TRAP:
            assert both == u_after
            successors.append(u_first)
    return bits, successors


def check_independent_steps(model, limit=300, horizon=60):
    """For each reachable state and each agent whose next step `independent_step` allows (and
    that is clean there): explore up to `horizon` states of the others moving while it stands
    still, and require `commutes_at` at each. Returns how many pairs were checked."""
    F = POR.future_tables(model)
    checked = 0
    for state in reachable(model, limit):
        for a in range(len(model.agents)):
            if is_local(model, state, a) or not POR.independent_step(model.tables, F, vec(state), a):
                continue
            if model.apply(state, a)[1] != 0:
                continue  # a violating step is left to the search
            seen, todo = {state}, [state]
            while todo and len(seen) < horizon:
                _, successors = commutes_at(model, todo.pop(0), a, may_enable=True)
                checked += len(successors)
                for nxt in successors:
                    if nxt not in seen:
                        seen.add(nxt)
                        todo.append(nxt)
    return checked


def check_independent_entries(model, limit=250, horizon=30):
    """For each reachable state and each landing or commit `independent_entry` allows (and
    that is clean there): explore up to `horizon` states of everything else moving while it stays in
    flight, and require at each that it commutes with every other enabled step (both orders
    reach the same state and find the same violations; it disables nothing) and that the state
    before it shows no state property the state after it lacks. Returns the pairs checked."""
    F = POR.future_tables(model)
    checked = 0
    for state in reachable(model, limit):
        for j, e in inflight_entries(model, state):
            if not POR.independent_entry(model.tables, F, vec(state), j):
                continue
            if model.apply(state, len(model.agents) + j)[1] != 0:
                continue  # a violating landing is left to the search
            seen, todo = {state}, [state]
            while todo and len(seen) < horizon:
                now = todo.pop(0)
                a = entry_code(model, now, e)
                after, bits, _ = model.apply(now, a)
                assert model.state_violation_bits(now)[0] & ~model.state_violation_bits(after)[0] \
                    & ENTRY_HIDES == 0
                for u in range(model.n_actions()):
                    if u == a:
                        continue
                    u_first, u_bits, _ = model.apply(now, u)
                    if u_first is None:
                        continue
                    u2 = same_action(model, now, after, u)
                    assert u2 is not None
                    u_after, u_bits_after, _ = model.apply(after, u2)
                    assert u_after is not None, model.format_action(now, u)
                    if u_bits & S.TRAP:
                        assert u_bits_after & KIND_BITS
                        continue
                    both, t_bits, _ = model.apply(u_first, entry_code(model, u_first, e))
                    assert u_bits | t_bits == bits | u_bits_after, model.format_action(now, u)
                    if not u_bits_after & S.TRAP:
                        assert both == u_after, model.format_action(now, u)
                        checked += 1
                        if u_first not in seen:
                            seen.add(u_first)
                            todo.append(u_first)
    return checked

