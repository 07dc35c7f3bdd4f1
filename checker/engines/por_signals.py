"""Partial-order reduction (por.py): what a signal can still do while a step stands still.

The walk (`frozen_touch`, por_walk.py) asks these about every wait it meets: could its phase
complete, given the arrivals, landing bytes and expected bytes the others can still make
(`could_pass`, `max_completions`, `tx_could_be_zero`); would landings of several byte counts
keep their order (`bytes_keep_order`); and is a waiter the walk leaves stuck still inside its
phase window (`walk_window`, `stale_ok`, `stuck_outside_window`). What they assume of a
signal is the "mbarrier" signal model (backends/capabilities.py `signal_model`: phases that
complete, parity waits, a tx range) or the "counter" one (`could_pass`); the search applies
the reduction to no other (explore.Search). The backend's own rules (the tx range, the phase
window) are read through backends/dispatch.py, here and nowhere else in the reduction.
"""
from __future__ import annotations

from pipeproof.backends import dispatch
from pipeproof.backends.base import jit, parity
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.por_deps import W_ITEM, W_PC


@jit
def bytes_keep_order(T, st, sig, arrivals, landing, expected, own):
    """(mbarrier) Landings of different byte counts on `sig` commute with the one being judged
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
    limit = dispatch.tx_limit(T.cfg[S.C_BACKEND])
    if tx + expected > limit or tx - landing - own < -limit:
        return False
    if arrivals == pending and tx + expected < landing + own:
        return False
    return True


@jit
def max_completions(T, st, sig, budget, landing, expected):
    """(mbarrier) At most how many phases of `sig` can still complete, once at most `budget` more
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
        if parity(v) != parity(phase):
            return v
    return -1


@jit
def could_complete_with_every_arrival(T, st, sig, budget, landing, expected):
    """(mbarrier) Could the phase of `sig` complete if no arrival may find it with pending 0?
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
    k = dispatch.intended_after(T.cfg[S.C_BACKEND], W[at + 1 + 2 * stage],
                                W[at + 2 + 2 * stage], phase)
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
def stuck_outside_window(T, st, W, rec, wx, b, r, stage, phase, sig, kind):
    """Can agent b, stuck in the walk at a wait at `phase` on `sig` (ring r, `stage`, signal
    `kind`), be outside its phase window? By the walk's window record (kept while W[rec + wx]
    is 1, `walk_window`); else by the state's own record, which counts as touching unless it
    still gives the window exactly (`stale_ok`), and the phase window."""
    if W[rec + wx] == 1:
        k = dispatch.intended_after(T.cfg[S.C_BACKEND], W[rec + wx + 1 + 2 * stage],
                                    W[rec + wx + 2 + 2 * stage], phase)
        return not dispatch.in_window_at(T.cfg[S.C_BACKEND], st[S.sig_base(T, sig)], k)
    return ((S.window_field(T, b, r, stage, kind) >= 0 and
             not stale_ok(T, st, W, rec, b, r, stage, kind)) or
            not S.in_phase_window(T, st, b, r, sig, phase))
