"""The generator's layout: slots and copy regions in shared memory, hardware barriers, the
per-ring slot checks and the buffer bounds of one run (a mixin of cuda_ref.codegen's _Gen)."""
from __future__ import annotations

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.cuda_ref.emit_common import (
    BULK_ALIGN, MAX_DYNAMIC_SMEM, MAX_HW_BARRIERS, SLOT_ALIGN, WRITE_REGION, Region, RingLayout,
    round_up,
)
from pipeproof.spec.ops import OP_EFFECTS
from pipeproof.spec.schema import targets


def _copies(op) -> bool:
    return OP_EFFECTS[op.name].issues == "copy"


class Layout:
    def layout(self):
        rings = []
        base = 0
        for r, ring in enumerate(self.model.ring_specs):
            copies, writes = [], False
            for i, a in enumerate(self.model.agents):
                for pc, (op, _) in enumerate(a.ops):
                    if op.ring != ring.name:
                        continue
                    eff = OP_EFFECTS[op.name]
                    if eff.issues == "copy":
                        tag = self.model.tag_of(a, pc)
                        copies.append(Region(i, pc, 0, op.n, targets(self.k, a.cta, op.to),
                                             op.every, op.at, a.items if tag < 0 else 1, tag=tag))
                    elif eff.stores:
                        writes = True
            if copies and writes:
                raise self.fail(f"ring {ring.name!r} is filled by both write and copy ops; the "
                                f"reference kernel keeps one kind of payload per ring")
            if copies:
                # Greedy: each copy gets the lowest offset free in every CTA it lands in.
                used = {c: [] for c in range(self.k)}
                ends = [0]
                for reg in copies:
                    if reg.tag >= 0:
                        # A prologue's or epilogue's copy reuses the slot's buffer from its
                        # start (the next tile's Q over this one's), as the model's one tag
                        # per slot says: any later fill replaces what it held.
                        reg.offset = 0
                        ends.append(reg.nbytes)
                        continue
                    off = 0
                    while True:
                        clash = [e for c in reg.dests for (s, e) in used[c]
                                 if s < off + reg.nbytes and off < e]
                        if not clash:
                            break
                        off = round_up(max(clash), BULK_ALIGN)
                    reg.offset = off
                    for c in reg.dests:
                        used[c].append((off, off + reg.nbytes))
                slot = max(ends + [e for c in used for (_, e) in used[c]])
                kind = "copy"
            else:
                slot, kind = WRITE_REGION, "write"
            slot = round_up(slot, SLOT_ALIGN)
            rings.append(RingLayout(r, ring.name, ring.stages, ring.expected(FULL),
                                    ring.expected(EMPTY), kind, slot, base, copies))
            base += slot * ring.stages
        if base > MAX_DYNAMIC_SMEM:
            detail = ", ".join(f"{rl.name}: {rl.stages} x {rl.slot_bytes} B" for rl in rings)
            raise self.fail(f"the slots need {base} B of shared memory ({detail}), more than "
                            f"the {MAX_DYNAMIC_SMEM} B a CTA can have")
        self.rings = rings
        self.smem_bytes = max(base, 16)
        # Source data of every copy op: items x bytes, every word the item number (the one
        # tag of a prologue's or epilogue's copy).
        word = 0
        self.src_fill = []
        for rl in rings:
            for reg in rl.regions:
                reg.src_word = word
                self.src_fill.append((word, reg.nbytes // 4, reg.items, max(reg.tag, 0)))
                word += reg.items * reg.nbytes // 4
        self.src_words = max(word, 4)
        self.region_of = {(reg.agent, reg.pc): reg for rl in rings for reg in rl.regions}

    def barrier_plan(self):
        """Which named barriers also get a real bar.sync (see the module docstring)."""
        self.bar_index = {name: b for b, name in enumerate(self.model.barrier_names)}
        self.hw = {}
        hw_id = 1
        for b, name in enumerate(self.model.barrier_names):
            uses = {op.name for a in self.model.agents for op, _ in a.ops if op.barrier == name}
            users = [sum(1 for a in self.model.agents if a.cta == c and any(
                OP_EFFECTS[op.name].barrier == "sync" and op.barrier == name for op, _ in a.ops))
                for c in range(self.k)]
            counts = [int(self.model.tables.bar_count[b, c]) for c in range(self.k)]
            if (uses == {"sync"} and users == counts and hw_id <= MAX_HW_BARRIERS
                    and all(u > 0 for u in users if u)):
                self.hw[name] = hw_id
                hw_id += 1


    def check_functions(self) -> str:
        """check_r<r>_c<c>(c, stage, item, &found): whole-warp check of a slot for an item."""
        out = []
        for rl in self.rings:
            for cta in range(self.k):
                lines = [f"__device__ u32 check_r{rl.index}_c{cta}(const Ctx& c, u32 stage, "
                         f"i32 item, i32* found) {{",
                         f"  const unsigned char* s = c.smem + {rl.base}u + stage * "
                         f"{rl.slot_bytes}u;",
                         "  u32 bad = 0; i32 val = 0; (void)s;"]
                if rl.kind == "write":
                    lines.append(f"  check_words((const i32*)s, {WRITE_REGION // 4}u, item, "
                                 f"c.lane, bad, val);")
                else:
                    for reg in rl.regions:
                        if cta not in reg.dests:
                            continue
                        cond = f"item < {reg.items}" if reg.tag < 0 else f"item == {reg.tag}"
                        if reg.every != 1 or reg.at != 0:
                            cond += f" && item % {reg.every} == {reg.at}"
                        lines.append(f"  if ({cond}) check_words((const i32*)(s + {reg.offset}u), "
                                     f"{reg.nbytes // 4}u, item, c.lane, bad, val);")
                lines += ["  return warp_first_bad(bad, val, found);", "}"]
                out.append("\n".join(lines))
        return "\n\n".join(out)

    def _check_dispatch(self) -> str:
        return "\n".join(f"    case {rl.index * self.k + cta}: return check_r{rl.index}_c{cta}(c, stage, item, found);"
                         for rl in self.rings for cta in range(self.k))

    def _slot_offsets(self) -> str:
        bases = ", ".join(str(rl.base) for rl in self.rings)
        sizes = ", ".join(str(rl.slot_bytes) for rl in self.rings)
        return (f"__device__ __forceinline__ u32 slot_base(u32 r) {{ const u32 b[] = {{{bases}}}; "
                f"return b[r]; }}\n"
                f"__device__ __forceinline__ u32 slot_size(u32 r) {{ const u32 b[] = {{{sizes}}}; "
                f"return b[r]; }}")

    def max_counts(self):
        """Upper bounds of the event and copy-record buffers for one run."""
        events, records = 64, 0
        for a in self.model.agents:
            n_body = a.body_end - a.body_start
            executed = len(a.ops) - n_body + a.items * n_body
            fan = 1
            for op, _ in a.ops:
                if op.to == "all":
                    fan = max(fan, self.k)
            # each step, plus a finish or fires per step, plus a timeout
            events += executed * (2 + fan) + 2
            copies = sum(1 for op, _ in a.ops[a.body_start:a.body_end] if _copies(op))
            once = sum(1 for op, _ in a.ops[:a.body_start] + a.ops[a.body_end:] if _copies(op))
            records += (copies * a.items + once) * self.k  # prologue and epilogue copies too
        return events, max(records, 1)
