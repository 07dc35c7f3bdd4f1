"""The model's side of conform's messages: where an agent is, what a signal holds, why an op
is not enabled, what a trap is. Each takes the compiled model and a state and returns words;
none decides anything (the log's side, `event_text`, is in cuda_ref/conform_log.py)."""
from __future__ import annotations

import numpy as np

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.results import KINDS
from pipeproof.cuda_ref.emit_backend import DEVICE_BACKENDS


def position_text(m: Model, state, a) -> str:
    """`pc 2 (arrive_empty, item 0, stage 1, phase 0)` or `its end (finished)`."""
    pc = m.agent_field(state, a, S.F_PC)
    op = m.current_op(state, a)
    if op is None:
        return "its end (finished)"
    stage, phase = m.ring_stage_phase(state, a, op)
    return f"pc {pc} ({op.text}, item {m.agent_field(state, a, S.F_ITEM)}, stage {stage}, phase {phase})"


def signal_text(m: Model, state, sig, phase) -> str:
    """What signal `sig` holds (its words, as the backend names them), and what a wait on it at
    `phase` needs (the backend's words, cuda_ref/emit_backend.py)."""
    b = m.off_sig + 4 * sig
    words = " ".join(f"{field}={state[b + i]}" for i, field in enumerate(m.caps.signal_fields))
    kind = sig % 2
    expected = m.ring_specs[(sig // 2 // m.max_stages) % m.rings].expected(kind)
    needs = DEVICE_BACKENDS[m.caps.name].wait_words(m.caps.rules, phase, expected, kind)
    return f"{m.sig_short(sig)} {words} ({needs})"


def why_disabled(m: Model, state, a, op) -> str:
    """Why agent `a`'s op `op` (its current one) is not enabled in `state`."""
    T = m.tables
    cta = m.agents[a].cta
    r = m.ring_names.index(op.ring)
    stage, phase = m.ring_stage_phase(state, a, op)
    e = OP_EFFECTS[op.name]
    if e.blocks and e.observes >= 0:   # a wait on a signal's phase (drain: one per stage)
        return "not enabled: " + signal_text(m, state, S.sig_index(T, cta, r, stage, e.observes), phase)
    if e.waits_reads:                  # until at most n of its async reads are in flight
        n = S.reads_in_flight(T, np.array(state, dtype=np.int64), a)
        return f"not enabled: {n} async read(s) in flight, read_wait {op.n} needs at most {op.n}"
    if e.barrier == "wait":
        b = m.barrier_names.index(op.barrier)
        gen = state[S.bar_pos(T, b, cta) + 1]
        arrived = state[S.arrived_pos(m.agf, m.rings, a, b)]
        return (f"not enabled: barrier {op.barrier} of cta{cta} is at generation {gen}, "
                f"the agent waits for generation {max(arrived, 1)}")
    return "not enabled"


def trap_text(m: Model, state, action, bits, det) -> str:
    """`KIND: what the step does` for the first trap kind the model reports on the step."""
    from pipeproof.checker.results import explain_step
    for k, kind in enumerate(KINDS):
        if bits & (1 << k) and det[k * S.DET_W] != -1:
            return f"{kind}: {explain_step(m, k, det[k * S.DET_W:(k + 1) * S.DET_W], state, action)}"
    return "a hardware trap"
