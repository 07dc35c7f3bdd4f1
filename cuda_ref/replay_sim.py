"""The replay kernel's turn protocol, walked on the CPU: a check of a schedule's table without a
GPU (tests/test_gpu_replay.py).

`simulate(model, schedule)` reads `Schedule.buffer()` as cuda_ref/emit_replay.py's device code
does and runs every warp of the kernel as a coroutine: each agent walks its program
(`Agent.executed`) and, before each op, finishes the async reads the schedule finishes first
and waits for its turn (`turn_op`); each CTA's replay warp takes its landings and fires at
their steps (`replay_helper`). The model steps the trace's actions as the warps take them. It
answers the steps in the order the warps took them, as (turn, who, the model action taken), and
raises `SimError` when a warp would wait for a step that never comes (the kernel would time
out) or takes one that is not the schedule's next.
"""
from __future__ import annotations

from pipeproof.checker.core import Model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.cuda_ref.replay import H_LAND, HDR, HELPER_W, OP_W, Schedule


class SimError(AssertionError):
    pass


def simulate(m: Model, sched: Schedule) -> list[tuple[int, str, int]]:
    buf = sched.buffer()
    total, n_agents, n_ctas = buf[0], buf[1], buf[2]
    counter = [0]
    taken: list[tuple[int, str, int]] = []
    by_turn = {s.index: s for s in sched.steps}

    def take(turn: int, who: str, expect_kind: str, agent: int = -1):
        if counter[0] != turn:
            raise SimError(f"{who} takes step {turn} while the counter is at {counter[0]}")
        s = by_turn[turn]
        if s.kind != expect_kind or (agent >= 0 and s.agent != agent):
            raise SimError(f"{who} takes step {turn}, which is {s.action} ({s.kind})")
        taken.append((turn, who, s.code))
        counter[0] += 1

    def agent_warp(a: int):
        ag = m.agents[a]
        t = HDR + 4 * a
        op_off, op_len, fin_off, fin_len = buf[t:t + 4]
        k_op = k_fin = 0
        reads = 0          # async reads in flight (the kernel's Reads queue)

        def finish():
            nonlocal k_fin, reads
            step = buf[fin_off + k_fin] if k_fin < fin_len else -1
            k_fin += 1
            while not reached(step):
                yield ("finish", step)
            if step >= 0:
                take(step, ag.name, "finish", a)
            reads -= 1

        for pc, _item in ag.executed():
            op = ag.ops[pc][0]
            step = -1
            if k_op < op_len:
                step, want_pc = buf[op_off + OP_W * k_op], buf[op_off + OP_W * k_op + 1]
                if want_pc != pc:
                    raise SimError(f"{ag.name}: the schedule's op {k_op} is at pc {want_pc}, "
                                   f"the kernel's at pc {pc}")
            k_op += 1
            while reads > 0 and k_fin < fin_len and (step < 0 or buf[fin_off + k_fin] < step):
                yield from finish()
            while not reached(step):
                yield ("op", step)
            if step >= 0:
                take(step, ag.name, "agent", a)
            eff = OP_EFFECTS[op.name]
            if eff.issues == "read":
                reads += 1
            if step < 0:      # after the schedule it runs free: stop following it
                return
        while reads > 0 and k_fin < fin_len:
            yield from finish()

    def helper_warp(c: int):
        t = HDR + 4 * n_agents + 4 * c
        off, length = buf[t], buf[t + 1]
        for k in range(length):
            h = buf[off + HELPER_W * k:off + HELPER_W * (k + 1)]
            while not reached(h[0]):
                yield ("helper", h[0])
            take(h[0], f"cta{c}.replay", "land" if h[1] == H_LAND else "fire")

    def reached(step: int) -> bool:
        return counter[0] >= total if step < 0 else counter[0] == step

    warps = [agent_warp(a) for a in range(n_agents)] + [helper_warp(c) for c in range(n_ctas)]
    waiting = {i: None for i in range(len(warps))}
    live = set(range(len(warps)))
    while live:
        progressed = False
        for i in sorted(live):
            before = counter[0]
            try:
                waiting[i] = next(warps[i])
            except StopIteration:
                live.discard(i)
                progressed = True
                continue
            if counter[0] != before:
                progressed = True
        if not progressed:
            if counter[0] >= total:
                break   # every warp left waits only for the schedule's end, which has come
            stuck = ", ".join(f"warp {i} waits for {waiting[i]}" for i in sorted(live))
            raise SimError(f"the replay stops at step {counter[0]} of {total}: {stuck}")
    if counter[0] != total:
        raise SimError(f"the replay ended at step {counter[0]} of {total}")
    return taken
