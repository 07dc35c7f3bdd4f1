"""The CUDA text of every op, chosen by the op's effects (checker/core/program.py OP_EFFECTS), not
its name: `emitter_for` maps an effect shape (a wait, a try, an arrival, an issued copy or
commit, an async write, a read, a fill, a move, a barrier step) to the method of this mixin of
cuda_ref.codegen's _Gen that realises it; ops with the same effects share one emitter."""
from __future__ import annotations

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.checker.core import OP_CODES
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.spec.schema import targets


class OpEmitter:
    def sig(self, r: int, stage: str, kind: int) -> str:
        return f"sig_addr({r}, {stage}, {kind})"

    def op_code(self, name: str) -> int:
        return OP_CODES[name]

    def ring_vars(self, r: int):
        return f"st{r}", f"ph{r}", f"rd{r}"

    def ev(self, a, pc, opname, r, item="item", result="RES_OK", x0="0", x1="0", t="e"):
        st, ph, _ = self.ring_vars(r)
        return (f"ev_put(c, {t}, {a}, {self.op_code(opname)}, {pc}, {item}, {r}, (i32){st}, {ph}, "
                f"{result}, {x0}, {x1});")

    def timeout(self, a, pc, opname, r, item="item"):
        st, ph, _ = self.ring_vars(r)
        return (f"{{ agent_timeout(c, {a}, {self.op_code(opname)}, {pc}, {item}, {r}, (i32){st}, "
                f"{ph}); return; }}")

    def turn_timeout(self, a, pc, opname, r, item="item"):
        """A replay's agent whose turn did not come before the deadline (cuda_ref/replay.py)."""
        st, ph, _ = self.ring_vars(r)
        return (f"{{ agent_timeout_turn(c, {a}, {self.op_code(opname)}, {pc}, {item}, {r}, "
                f"(i32){st}, {ph}); return; }}")

    def finish_call(self, a, pc, opname, r, keep) -> str:
        """Finish the agent's async reads down to `keep` (in a replay each at its own step)."""
        call = f"finish_reads(c, {a}, q, {keep})"
        if not self.replay:
            return f"{call};"
        return f"if (!{call}) " + self.turn_timeout(a, pc, opname, r)

    # --- waits and tries
    #
    # Every step that touches shared state runs under the global log lock (`glock`): lane 0
    # takes it, stamps the event (t, sequence number), performs the effect (arrive, copy issue,
    # store, probe, slot check) and writes the record, then releases it. So the sequence
    # numbers (and the timestamps) are a linearisation of the steps; waits poll without the
    # lock and take it only to re-probe and log once the signal looks ready. Local steps
    # (advance, reset, read_wait) take it too, so nothing is logged after a step that trapped.

    def wait_call(self, r: int, kind: int, stage: str, phase: str) -> str:
        """Whole warp: 1 when ready (lane 0 then holds the lock), 0 past the deadline (the
        backend's wait, cuda_ref/emit_backend.py)."""
        return self.device.wait(self, r, kind, self.sig(r, stage, kind), phase)

    def probe_call(self, r: int, kind: int, stage: str, phase: str) -> str:
        return self.device.probe(self, r, kind, self.sig(r, stage, kind), phase)

    def observe(self, a: int, pc: int, r: int, kind: int, cond: str, how: str) -> str:
        """A full wait or try notes the landings it saw: of the fill a read here pairs with."""
        st, _, _ = self.ring_vars(r)
        if kind != FULL or self.rings[r].kind != "copy":
            return ""
        m = self.model
        section = m.agents[a].section_of(pc)
        pairs = m.spec.read_pairs_with(section, m.ring_names[r]) or section
        # a body read of a tile-level ring (nested loops) expects the tile, item / tag_div
        div = max([op.tag_div for op, _ in m.agents[a].ops
                   if op.ring == m.ring_names[r] and OP_EFFECTS[op.name].checks_read] + [1])
        body = "item" if div == 1 else f"(item / {div})"
        tag = {"prologue": str(m.tag_prologue), "epilogue": str(m.tag_epilogue)}.get(pairs, body)
        return f" if ({cond}) observe_lands(c, e, {r}, (u32){st}, {tag}, {how});"

    def e_wait(self, a, pc, op, step, r):
        kind = OP_EFFECTS[op.name].observes
        st, ph, rd = self.ring_vars(r)
        skip = f"({rd} != 0)" if op.unless_ready else "false"
        return [
            f"{{ const bool skip = {skip};",
            f"  if (!skip && !{self.wait_call(r, kind, st, ph)}) " + self.timeout(a, pc, op.name, r),
            "  if (c.lane == 0) { if (skip) glock(c); Ev e = ev_begin(c); "
            + self.ev(a, pc, op.name, r, x0="skip ? 1 : 0")
            + self.observe(a, pc, r, kind, "!skip", "LAND_WAIT") + " gunlock(c); }",
            "  __syncwarp(); }",
        ]

    def e_try(self, a, pc, op, step, r):
        kind = OP_EFFECTS[op.name].observes
        st, ph, rd = self.ring_vars(r)
        return [
            "{ u32 ok = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); ok = {self.probe_call(r, kind, st, ph)}; "
            + self.ev(a, pc, op.name, r, x0="(i32)ok") + self.observe(a, pc, r, kind, "ok", "LAND_WAIT")
            + " gunlock(c); }",
            "  ok = __shfl_sync(FULLMASK, ok, 0);",
            f"  if (ok) acquire_all({self.sig(r, st, kind)});",
            f"  {rd} = ok; __syncwarp(); }}",
        ]

    # --- arrivals

    def dest_mask(self, a: int, to: str) -> int:
        cta = self.model.agents[a].cta
        m = 0
        for d in targets(self.k, cta, to):
            m |= 1 << d
        return m

    def locked(self, a, pc, opname, r, effect: str, x0: str = "0") -> list[str]:
        return [f"if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); "
                f"{self.ev(a, pc, opname, r, x0=x0)} {effect} gunlock(c); }}",
                "__syncwarp();"]

    def e_arrive(self, a, pc, op, step, r):
        """An update now: n arrivals, or (tx > 0) one arrival that also expects n bytes, or
        (tx > 0, no arrival units) n bytes expected alone (mbarrier.expect_tx)."""
        eff = OP_EFFECTS[op.name]
        st, _, _ = self.ring_vars(r)
        mask = self.dest_mask(a, op.to)
        call = ("signal_arrive" if eff.tx <= 0 else
                "expect_tx_only" if eff.units == 0 else "arrive_expect_tx")
        return self.locked(a, pc, op.name, r,
                           f"{call}(c, {mask}u, {self.sig(r, st, eff.updates)}, {op.n}u);",
                           x0=str(op.n))

    def tag(self, a: int, pc: int) -> str:
        """The tag the fill or read at `pc` stores or expects (semantics.op_tag): a prologue's
        or epilogue's own, else the item, or on a tile-level ring of nested loops the tile,
        item / tag_div (spec/load_loops.py). Everything that stores, checks, logs or looks for
        a tag takes it from here."""
        ag = self.model.agents[a]
        t = self.model.tag_of(ag, pc)
        if t >= 0:
            return str(t)
        div = ag.ops[pc][0].tag_div
        return "item" if div == 1 else f"(item / {div})"

    def e_copy(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        reg = self.region_of[(a, pc)]
        mask = self.dest_mask(a, op.to)
        rl = self.rings[r]
        src = "" if reg.tag >= 0 else f" + (u64){self.tag(a, pc)} * {op.n // 4}ull"
        # in a replay a scheduled copy is issued by its destination's replay warp at the step
        # where the trace lands it (cuda_ref/replay.py)
        defer = "(c.sched_op ? c.turn : -1)" if self.replay else "-1"
        return self.locked(
            a, pc, op.name, r,
            f"issue_copy(c, e, {a}, {pc}, {mask}u, {r}, (u32){st}, {self.tag(a, pc)}, {reg.offset}u, "
            f"{op.n}u, {rl.base}u + (u32){st} * {rl.slot_bytes}u, "
            f"c.src + {reg.src_word}ull{src}, {defer});", x0=str(op.n))

    # --- payload

    def e_write(self, a, pc, op, step, r):
        """A producer-side write: its tag into the tag words at the start of its part's region;
        a consumer-side write: into every word of every part of the slot (the whole buffer it
        reuses)."""
        st, _, _ = self.ring_vars(r)
        rl = self.rings[r]
        stores = " ".join(
            f"store_fill((volatile i32*)(c.smem + {rl.base}u + (u32){st} * {rl.slot_bytes}u + "
            f"{off}u), {nbytes // 4}u, {self.tag(a, pc)});"
            for off, nbytes in self.store_spans(a, pc))
        return self.locked(a, pc, op.name, r, stores)

    def e_write_async(self, a, pc, op, step, r):
        """An async write (write_async): the same bytes as a write, stored by cp.async from
        source words that hold its tag (emit_device.py async_store), issued under the log lock
        as its step; then the agent's FIFO holds it beside its async reads until its finish
        (finish_one: cp.async.wait_group), which a read_wait or a commit waits for."""
        st, _, _ = self.ring_vars(r)
        rl = self.rings[r]
        tag = self.tag(a, pc)
        word, words = self.wsrc[(a, pc)]
        src = f"c.src + {word}ull" + ("" if self.model.tag_of(self.model.agents[a], pc) >= 0
                                       else f" + (u64){tag} * {words}ull")
        stores = " ".join(f"async_store(c, {rl.base}u + (u32){st} * {rl.slot_bytes}u + {off}u, "
                          f"{src}, {nbytes}u);" for off, nbytes in self.store_spans(a, pc))
        return [
            "{ Ev e;",
            f"  if (c.lane == 0) {{ glock(c); e = ev_begin(c); {self.ev(a, pc, op.name, r)} }}",
            "  __syncwarp();",
            f"  {stores} async_commit();",
            "  __syncwarp();",
            "  if (c.lane == 0) gunlock(c);",
            f"  push_read(c, {a}, q, {pc}, {r}, (u32){st}, {tag}, 1u);",
            "  __syncwarp(); }",
        ]

    def check_call(self, a: int, r: int, stage: str, item: str) -> str:
        cta = self.model.agents[a].cta
        return f"check_r{r}_c{cta}(c, (u32){stage}, {item}, &found)"

    def e_read(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        tag = self.tag(a, pc)
        observe = (f" if (!bad) observe_lands(c, e, {r}, (u32){st}, {tag}, LAND_READ);"
                   if self.rings[r].kind == "copy" else "")
        lines = [
            "{ i32 found = 0; Ev e;",
            "  if (c.lane == 0) { glock(c); e = ev_begin(c); }",
            "  __syncwarp();",
            f"  u32 bad = {self.check_call(a, r, st, tag)};",
            f"  if (c.lane == 0) {{ "
            f"{self.ev(a, pc, op.name, r, result='bad ? RES_MISMATCH : RES_OK', x0='found')}"
            f"{observe} gunlock(c); }}",
        ]
        if OP_EFFECTS[op.name].issues == "read":
            lines.append(f"  push_read(c, {a}, q, {pc}, {r}, (u32){st}, {tag});")
        lines.append("  __syncwarp(); }")
        return lines

    def e_read_wait(self, a, pc, op, step, r):
        return [self.finish_call(a, pc, op.name, 0, op.n)] + self.locked(a, pc, op.name, 0, "")

    def e_commit(self, a, pc, op, step, r):
        st, _, _ = self.ring_vars(r)
        mask = self.dest_mask(a, op.to)
        kind = OP_EFFECTS[op.name].updates  # empty (commit_empty) or full (commit_full)
        # The model's commit fires only after the agent's earlier async reads and writes have
        # finished: finish_reads first waits for each (a write_async: cp.async.wait_group) and
        # logs its finish, then the commit fires. Not cp.async.mbarrier.arrive.noinc: the
        # hardware would arrive at a moment the log cannot record, after finishes it never saw.
        fire = f"commit_fire(c, {a}, {mask}u, {r}, (u32){st}, {op.n}u, {kind}u);"
        if not self.replay:
            return [self.finish_call(a, pc, op.name, r, 0)] + self.locked(
                a, pc, op.name, r, fire, x0=str(op.n))
        # in a replay a scheduled commit fires at the trace's fire step (the replay warp of
        # each destination) and its agent's reads finish at their own steps; one after the
        # schedule fires at once, after the agent's commits the replay warps still hold (R1)
        return [f"if (!c.sched_op) {{ {self.finish_call(a, pc, op.name, r, 0)} "
                f"if (c.lane == 0) wait_commits(c, {a}); __syncwarp(); }}"] + self.locked(
            a, pc, op.name, r, f"if (!c.sched_op) {fire} else commits_pending(c, {mask}u);",
            x0=str(op.n))

    # --- stage and phase

    def e_advance(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        stages = self.rings[r].stages
        return self.locked(a, pc, op.name, r, "") + [
            f"{st} += 1; if ({st} == {stages}) {{ {st} = 0; {ph} += 1; }}"]

    def e_reset(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        ag = self.model.agents[a]
        return self.locked(a, pc, op.name, r, "") + [
            f"{st} = {ag.initial_stages[r]}; {ph} = {ag.initial_phases[r]};"]

    def e_drain(self, a, pc, op, step, r):
        st, ph, _ = self.ring_vars(r)
        stages = self.rings[r].stages
        return [f"if (!{self.wait_call(r, EMPTY, st, ph)}) " + self.timeout(a, pc, "drain", r),
                f"if (c.lane == 0) {{ Ev e = ev_begin(c); {self.ev(a, pc, 'drain', r)} gunlock(c); }}",
                f"{st} += 1; if ({st} == {stages}) {{ {st} = 0; {ph} += 1; }}",
                "__syncwarp();"]

    # --- named barriers

    def bar_count(self, a: int, name: str) -> int:
        return int(self.model.tables.bar_count[self.bar_index[name], self.model.agents[a].cta])

    def e_sync(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        count = self.bar_count(a, op.barrier)
        lines = [
            "{ u32 g = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} "
            f"g = gate_arrive(&s_gate[{b}], {count}u); gunlock(c); }}",
            "  g = __shfl_sync(FULLMASK, g, 0);",
            f"  if (g == GATE_ABORT || !gate_wait(c, &s_gate[{b}], g + 1)) "
            + self.timeout(a, pc, op.name, 0),
        ]
        if op.barrier in self.hw:
            lines.append(f"  asm volatile(\"bar.sync %0, %1;\" :: \"r\"({self.hw[op.barrier]}), "
                         f"\"r\"({32 * count}) : \"memory\");")
        lines.append("  __syncwarp(); }")
        return lines

    def e_sync_arrive(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        count = self.bar_count(a, op.barrier)
        return [
            "{ u32 g = 0;",
            f"  if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} "
            f"g = gate_arrive(&s_gate[{b}], {count}u); gunlock(c); }}",
            "  g = __shfl_sync(FULLMASK, g, 0);",
            "  if (g == GATE_ABORT) " + self.timeout(a, pc, op.name, 0),
            f"  arrv{b} = g + 1; __syncwarp(); }}",
        ]

    def e_sync_wait(self, a, pc, op, step, r):
        b = self.bar_index[op.barrier]
        return [
            f"if (!gate_wait(c, &s_gate[{b}], arrv{b} > 1 ? arrv{b} : 1)) "
            + self.timeout(a, pc, op.name, 0),
            f"if (c.lane == 0) {{ glock(c); Ev e = ev_begin(c); {self.ev(a, pc, op.name, 0)} gunlock(c); }}",
            "__syncwarp();",
        ]


def emitter_for(eff):
    """The OpEmitter method that realises an op with effects `eff`, or None (no realisation of
    that shape: cuda_ref.codegen refuses the spec with a clear message)."""
    if eff.observes >= 0:  # a drain is a wait_empty per stage with its advance
        return OpEmitter.e_drain if eff.move else OpEmitter.e_wait if eff.blocks else OpEmitter.e_try
    if eff.async_write:  # a cp.async store, in flight until its finish (issue 47)
        return OpEmitter.e_write_async
    if eff.issues == "copy":
        return OpEmitter.e_copy
    if eff.issues == "commit":
        return OpEmitter.e_commit
    if eff.updates >= 0 and not eff.issues:
        return OpEmitter.e_arrive
    if eff.checks_read:  # an async read also pushes itself on the agent's read FIFO
        return OpEmitter.e_read
    if eff.stores:
        return OpEmitter.e_write
    if eff.waits_reads:
        return OpEmitter.e_read_wait
    if eff.barrier:
        return {"sync": OpEmitter.e_sync, "arrive": OpEmitter.e_sync_arrive,
                "wait": OpEmitter.e_sync_wait}[eff.barrier]
    if eff.local:
        return OpEmitter.e_advance if eff.move == "advance" else OpEmitter.e_reset
    return None
