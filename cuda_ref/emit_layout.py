"""The generator's layout: slots, their parts and the copy regions in shared memory, hardware
barriers, the per-ring slot checks and the buffer bounds of one run (a mixin of
cuda_ref.codegen's _Gen)."""
from __future__ import annotations

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.checker.core import part_of
from pipeproof.cuda_ref.emit_common import (
    BULK_ALIGN, MAX_DYNAMIC_SMEM, MAX_HW_BARRIERS, SLOT_ALIGN, WRITE_REGION, PartLayout, Region,
    RingLayout, round_up,
)
from pipeproof.spec.ops import OP_EFFECTS
from pipeproof.spec.schema import targets


def _copies(op) -> bool:
    return OP_EFFECTS[op.name].issues == "copy"


class Layout:
    def layout(self):
        """Each ring's slot is its parts (checker/core/program.py slot_parts), one region each, in
        order, sized by the part's largest fill (a copy's bytes, a write's WRITE_REGION); a
        copy lands in its part's region, a producer-side write stores its tag in every word of
        its part's region, a consumer-side write in every word of every part (it reuses the
        whole buffer). The prologue's, body's and epilogue's fills of one part share its
        region, as in the model."""
        rings = []
        base = 0
        m = self.model
        for r, ring in enumerate(m.ring_specs):
            parts = []
            offset = 0
            for p, part in enumerate(m.parts[r]):
                fills, size = [], 0
                for _section, i, pc in part.fills:
                    a = m.agents[i]
                    op = a.ops[pc][0]
                    tag = m.tag_of(a, pc)
                    fills.append((i, pc, tag, op.every, op.at, a.items, op.tag_div))
                    size = max(size, op.n if _copies(op) else WRITE_REGION)
                size = round_up(max(size, WRITE_REGION), BULK_ALIGN)
                parts.append(PartLayout(p, offset, size, tuple(part.ctas), fills))
                offset += size
            copies = []
            for i, a in enumerate(m.agents):
                for pc, (op, _) in enumerate(a.ops):
                    if op.ring != ring.name or not _copies(op):
                        continue
                    p = part_of(m.parts[r], i, pc)
                    if p < 0:
                        if len(parts) > 1:
                            raise self.fail(f"agent {a.name}: a consumer-side copy into ring "
                                            f"{ring.name!r}, whose slots have {len(parts)} parts: "
                                            f"the reference kernel lands a copy in one part only")
                        p = 0
                    tag = m.tag_of(a, pc)
                    # its tags: the items, or the tiles (item / tag_div: a tile-level ring
                    # of nested loops), or the one of a prologue's or epilogue's copy
                    copies.append(Region(i, pc, parts[p].offset, op.n,
                                         targets(self.k, a.cta, op.to), op.every, op.at,
                                         -(-a.items // op.tag_div) if tag < 0 else 1, tag=tag))
            kind = "copy" if copies else "write"
            slot = round_up(offset, SLOT_ALIGN)
            rings.append(RingLayout(r, ring.name, ring.stages, ring.expected(FULL),
                                    ring.expected(EMPTY), kind, slot, base, copies, parts))
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
        # Source data of every async write (write_async): per tag, the bytes it stores in a
        # part (a consumer-side one: its largest part's), every word the tag; the cp.async
        # copies them into the slot (cuda_ref/emit_ops.py e_write_async)
        self.wsrc = {}
        for i, a in enumerate(m.agents):
            for pc, (op, _) in enumerate(a.ops):
                if not OP_EFFECTS[op.name].async_write:
                    continue
                words = max(n for _, n in self.store_spans(i, pc)) // 4
                tag = m.tag_of(a, pc)
                tags = -(-a.items // op.tag_div) if tag < 0 else 1
                self.wsrc[(i, pc)] = (word, words)
                self.src_fill.append((word, words, tags, max(tag, 0)))
                word += tags * words
        self.src_words = max(word, 4)
        self.region_of = {(reg.agent, reg.pc): reg for rl in rings for reg in rl.regions}

    def fill_bytes(self, a: int, pc: int) -> int:
        """The bytes a producer-side fill stores in its part: a copy's, a write's tag words."""
        op = self.model.agents[a].ops[pc][0]
        return op.n if _copies(op) else WRITE_REGION

    def store_spans(self, a: int, pc: int) -> list:
        """(offset in the slot, bytes) of each part a write or an async write at `pc` stores
        its tag into: the tag words at the start of its part's region (producer side), or
        every word of every part (consumer side: it reuses the whole buffer)."""
        r = self.model.ring_names.index(self.model.agents[a].ops[pc][0].ring)
        every = part_of(self.model.parts[r], a, pc) < 0
        return [(pt.offset, pt.nbytes if every else WRITE_REGION)
                for pt in self.fill_parts(a, pc, r)]

    def fill_parts(self, a: int, pc: int, r: int) -> list:
        """The parts (PartLayout) the fill op at `pc` of agent `a` stores into, in its CTA."""
        rl = self.rings[r]
        p = part_of(self.model.parts[r], a, pc)
        cta = self.model.agents[a].cta
        return [pt for pt in rl.parts if (p < 0 or pt.index == p) and cta in pt.ctas]

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
        """check_r<r>_c<c>(c, stage, item, &found): whole-warp check of a slot for a tag: the
        parts the program fills for it (a prologue's or epilogue's fill of that tag, a body
        fill whose every=/at= guard selects the item), or every part when it fills none
        (semantics.read_miss)."""
        out = []
        for rl in self.rings:
            for cta in range(self.k):
                lines = [f"__device__ u32 check_r{rl.index}_c{cta}(const Ctx& c, u32 stage, "
                         f"i32 item, i32* found) {{",
                         f"  const unsigned char* s = c.smem + {rl.base}u + stage * "
                         f"{rl.slot_bytes}u;",
                         "  u32 bad = 0, any = 0; i32 val = 0; (void)s;"]
                mine = [pt for pt in rl.parts if cta in pt.ctas]
                for pt in mine:
                    # each fill of the part is checked over the bytes it stores (a prologue's
                    # 4 KiB tile in the part of the body's 8 KiB one: its 4 KiB)
                    by_size: dict[int, list] = {}
                    for i, pc, tag, every, at, items, div in pt.fills:
                        if tag >= 0:
                            cond = f"item == {tag}"
                        elif div > 1:  # a tile's tag (nested loops): some k-block of it fills
                            cond = f"fills_tile(item, {div}, {every}, {at}, {items})"
                        else:
                            cond = f"(item < TAG_OUT && item < {items}"
                            if every != 1 or at != 0:
                                cond += f" && item % {every} == {at}"
                            cond += ")"
                        size = self.fill_bytes(i, pc)
                        if cond not in by_size.setdefault(size, []):
                            by_size[size].append(cond)
                    for size, conds in by_size.items():
                        lines.append(f"  if ({' || '.join(conds)}) {{ any = 1; "
                                     f"check_words((const i32*)(s + {pt.offset}u), "
                                     f"{size // 4}u, item, c.lane, bad, val); }}")
                lines.append("  if (!any) {")
                for pt in mine:
                    lines.append(f"    check_words((const i32*)(s + {pt.offset}u), "
                                 f"{pt.nbytes // 4}u, item, c.lane, bad, val);")
                lines.append("  }")
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
