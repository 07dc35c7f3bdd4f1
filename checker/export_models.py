"""Export a spec as a Promela (SPIN) or Murphi (Rumur, CMurphi) model of the same transition system.

`to_promela(spec)` and `to_murphi(spec, symmetry=False)` return model text. Both are written
from the compiled `checker.model.Model`, so they take the very programs pipeproof explores
(prologue, body once per item, epilogue; `@leader` ops kept only for agent 0 of a role;
`drain` expanded into `stages` steps) and keep its step granularity: every op of an agent is
one atomic step (a Promela `d_step`, a Murphi rule), and so is every landing of an in-flight
copy and every firing of an in-flight commit.

The subset exported (anything else is a `SpecError` naming the feature, one line):
the nvidia backend in one CTA (`cluster_size = 1`, where every `to=` target is the CTA
itself) on the main ring; roles with counts, `items`, `initial_stage`, `initial_phase`,
prologue/body/epilogue and `@leader`; the ops wait_full, wait_empty (`unless=ready`),
try_full, try_empty, arrive_full, arrive_empty (with a count), expect_tx, copy (lands later,
stores its item and completes its bytes), write, read, commit_empty (fires later), advance,
reset, drain, and the named barriers of `[barrier.NAME]` with sync, sync_arrive and sync_wait;
`every=` / `at=` on body ops. Not exported: the amd backend, clusters (`cluster_size > 1`,
`ctas`), `[ring.NAME]` and `ring=`, read_async / read_wait.

The Murphi state is pipeproof's state vector field for field (agents' pc, item, stage,
phase, ready, at_sync and sync_arrive generation; each signal's phase_no, pending, tx and
`observed` flag; slot tags; each named barrier's arrivals and generation; the in-flight
entries as a sorted array, i.e. a canonical multiset), so Rumur without symmetry
reduction stores exactly as many states as pipeproof on a spec that holds. Fields that never
change in a spec (tx without copies, `ready` without a try) are left out; that changes no
count. With `symmetry=True` each group of two or more interchangeable agents (same role,
same program) is indexed by a `scalarset`, so Rumur's symmetry reduction applies.

Properties, as far as each language states them:

| kind | Murphi | Promela |
| --- | --- | --- |
| deadlock | Rumur's `--deadlock-detection stuck`; a rule "finished" (a self-loop) makes the end of a run a valid end | SPIN's invalid end state; agents that finished have terminated, the landing and monitor processes block at `end` labels |
| read_before_fill, overwrite_before_drain | `error` in the step | `assert` in the step |
| phase_alias | `invariant` (waiters) and `error` in a try | a monitor process (waiters) and `assert` in a try |
| over_arrival, tx_range | `error` in the update (traps, and a phase nobody observed) | `assert` in the update |
| inflight_at_exit | `error` when the last agent finishes with something in flight, or something lands after | `assert`, the same |

The Murphi error strings and the Promela assertion expressions begin with the kind's name,
so the first word of a tool's report is the kind. A model also reports running out of its
in-flight capacity (pipeproof's "inconclusive") as `inflight_capacity`.

Run them as: `spin -a model.pml && cc -O2 -o pan pan.c && ./pan -m100000`, and
`rumur --deadlock-detection stuck [--symmetry-reduction heuristic] model.m -o m.c &&
cc -O2 -o m m.c -lpthread && ./m`.
"""
from __future__ import annotations

import os
import platform
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeproof.backends.base import FULL
from pipeproof.backends.nvidia import TX_LIMIT
from pipeproof.checker import semantics as S
from pipeproof.checker.model import compile_model
from pipeproof.spec.schema import MAIN_RING, Spec, SpecError

FORMATS = ("promela", "murphi")
SUBSET = ("nvidia backend, one CTA, the main ring, ops wait/try/arrive/expect_tx/copy/write/read/"
          "commit_empty/advance/reset/drain/sync/sync_arrive/sync_wait with @leader, unless=ready "
          "and every=/at=")
UNSUPPORTED_OPS = {
    "read_async": "async reads (read_async)",
    "read_wait": "async reads (read_wait)",
}
KIND_MESSAGES = {
    "deadlock": "deadlock",
    "read_before_fill": "read_before_fill: a read finds another item, or a copy into the slot still in flight",
    "overwrite_before_drain": "overwrite_before_drain: a slot is refilled while a reader has not read it",
    "phase_alias": "phase_alias: a parity wait outside its phase window",
    "over_arrival": "over_arrival: an arrive above pending (trap)",
    "over_arrival_ahead": "over_arrival: a phase completed that no wait observed",
    "tx_range": "tx_range: a tx-count beyond 2^20-1 (trap)",
    "inflight_at_exit": "inflight_at_exit: the CTA exits while something is in flight, or is targeted after",
    "inflight_capacity": "inflight_capacity: more copies/commits in flight than the model holds (inconclusive)",
}
ENTRY_COPY, ENTRY_COMMIT = 1, 2


# ---------------------------------------------------------------------------------- checking

def check_exportable(spec: Spec, fmt: str = "promela or murphi") -> None:
    """Raise SpecError (one line) naming the first feature the export cannot express."""
    def refuse(where: str, what: str):
        raise SpecError(f"{spec.path}: {where}: {what} cannot be exported to {fmt} "
                        f"(the export covers: {SUBSET})")

    if spec.backend != "nvidia":
        refuse("[pipeline] backend", f"the {spec.backend} backend")
    if spec.cluster_size != 1:
        refuse("[pipeline] cluster_size", f"a cluster of {spec.cluster_size} CTAs")
    if spec.rings:
        refuse(f"[ring.{spec.rings[0].name}]", "several rings")
    for role in spec.roles:
        if role.ctas and tuple(role.ctas) != (0,):
            refuse(f"role '{role.name}' ctas", "per-CTA roles")
        for section in ("prologue", "body", "epilogue"):
            for i, op in enumerate(getattr(role, section)):
                where = f"role '{role.name}' {section}[{i}]"
                if op.name in UNSUPPORTED_OPS:
                    refuse(where, f"op '{op.text or op.name}': {UNSUPPORTED_OPS[op.name]}")
                if op.ring != MAIN_RING:
                    refuse(where, f"op '{op.text or op.name}': ring=")


# ---------------------------------------------------------------------------------- the IR

@dataclass
class Group:
    """Agents with one program: a role, or its leader and the rest when it has @leader ops."""
    ident: str            # identifier-safe name
    label: str            # for people
    first: int            # index of the first agent in model.agents
    size: int
    ops: tuple            # (Op, drain_step) per pc
    body_start: int
    body_end: int
    items: int
    init_pc: int
    init_item: int
    init_stage: int
    init_phase: int
    phase_max: int
    has_try: bool
    guards: dict          # pc -> (every, at) of body ops that run only in some items
    syncs: dict           # barrier index -> pcs of its `sync` ops
    arrives: tuple        # barrier indices this group sync_arrive's on
    tags: tuple = ()      # per pc: the prologue's or epilogue's tag of a fill or read, else -1

    def tag(self, p: int, item: str) -> str:
        """The tag the fill or read at `p` stores or expects (semantics.op_tag)."""
        return str(self.tags[p]) if self.tags[p] >= 0 else item

    def reads_by_tag(self) -> dict:
        """{tag (-1: the item): pcs of the reads expecting it}"""
        out = {}
        for p, (op, _) in enumerate(self.ops):
            if op.name == "read":
                out.setdefault(self.tags[p], []).append(p)
        return out

    @property
    def has_sync(self) -> bool:
        return any(self.syncs.values())

    @property
    def length(self) -> int:
        return len(self.ops)

    @property
    def agents(self) -> range:
        return range(self.first, self.first + self.size)

    def next_pc(self, p: int):
        """How the program moves on after executing the op at `p` (checker.semantics.next_pc):
        ('plain', q) or ('loop', body_start, body_end) where the item counter steps."""
        bs, be = self.body_start, self.body_end
        if bs < be and p == be - 1:
            return ("loop", bs, be)
        q = p + 1
        if bs < be and q == bs and self.items == 0:
            q = be  # an empty item range skips the body (settle_pc)
        return ("plain", q)

    def can_finish_at(self, p: int) -> bool:
        if self.guards:
            return True  # skipping guarded ops may reach the end from anywhere
        nxt = self.next_pc(p)
        return (nxt[0] == "plain" and nxt[1] == self.length) or (nxt[0] == "loop" and nxt[2] == self.length)


class IR:
    """The compiled model seen from the exporters: groups, constants and value ranges."""

    def __init__(self, spec: Spec, fmt: str):
        check_exportable(spec, fmt)
        self.spec = spec
        self.model = m = compile_model(spec)
        self.stages = spec.stages
        self.pac = spec.producer_arrive_count
        self.cac = spec.consumer_arrive_count
        self.n_agents = len(m.agents)
        init = m.initial_vector()
        self.barrier_names = [b.name for b in spec.barriers]
        self.groups: list[Group] = []
        used = set()
        start = 0
        while start < len(m.agents):
            a = m.agents[start]
            end = start + 1
            while (end < len(m.agents) and m.agents[end].role == a.role
                   and m.agents[end].ops == a.ops):
                end += 1
            base = start * m.agf
            split = any(m.agents[k].role == a.role for k in range(end, len(m.agents))) or (
                start > 0 and m.agents[start - 1].role == a.role)
            label = a.role + ("[leader]" if split and a.index == 0 else "")
            ident = _ident(a.role + ("_leader" if split and a.index == 0 else ""), used)
            adv = lambda ops: sum(1 for op, _ in ops if op.name in ("advance", "drain"))
            n_adv = (adv(a.ops[:a.body_start]) + adv(a.ops[a.body_end:])
                     + a.items * adv(a.ops[a.body_start:a.body_end]))
            self.groups.append(Group(
                ident=ident, label=label, first=start, size=end - start, ops=a.ops,
                body_start=a.body_start, body_end=a.body_end, items=a.items,
                init_pc=int(init[base + S.F_PC]), init_item=int(init[base + S.F_ITEM]),
                init_stage=a.initial_stage, init_phase=a.initial_phase,
                phase_max=a.initial_phase + (a.initial_stage + n_adv) // self.stages,
                has_try=any(op.name.startswith("try_") for op, _ in a.ops),
                guards={p: (op.every, op.at) for p, (op, _) in enumerate(a.ops) if op.every != 1},
                syncs={b: [p for p, (op, _) in enumerate(a.ops) if op.name == "sync" and op.barrier == name]
                       for b, name in enumerate(self.barrier_names)},
                arrives=tuple(b for b, name in enumerate(self.barrier_names)
                              if any(op.name == "sync_arrive" and op.barrier == name for op, _ in a.ops)),
                tags=tuple(m.tag_of(a, p) for p in range(len(a.ops)))))
            start = end
        self.ops_all = [op for g in self.groups for op, _ in g.ops]
        self.has_tx = any(op.name in ("expect_tx", "copy") for op in self.ops_all)
        self.bytes_vals = list(m.bytes_vals)
        self.inflight = m.inflight
        self.max_items = max([g.items for g in self.groups] + [1])
        self.max_tag = max(self.max_items - 1, m.max_tag)  # a prologue's or epilogue's tag
        self.tag_outside = m.tag_prologue                 # tags from here on are not items
        self.max_commit = max([op.n for op in self.ops_all if op.name == "commit_empty"] + [1])
        self.max_count = max([op.n for op in self.ops_all
                              if op.name in ("arrive_full", "arrive_empty", "commit_empty")] + [1])
        # Every completed phase of a signal consumed `expected` arrival units (more traps), so
        # phase_no <= all arrival units of that kind / expected.
        units = {FULL: 0, 1: 0}
        for g in self.groups:
            for p, (op, _) in enumerate(g.ops):
                times = g.size * (g.items if g.body_start <= p < g.body_end else 1)
                if op.name in ("arrive_full", "expect_tx"):
                    units[FULL] += times * (op.n if op.name == "arrive_full" else 1)
                elif op.name in ("arrive_empty", "commit_empty"):
                    units[1] += times * op.n
        self.pn_max = max(units[FULL] // self.pac, units[1] // self.cac, 1)
        self.ph_max = max(g.phase_max for g in self.groups)
        if fmt == "promela" and self.ph_max > (1 << 31) - 1:
            raise SpecError(f"{spec.path}: initial_phase: a phase above 2^31-1 cannot be exported to "
                            f"promela (SPIN's int is 32 bits)")
        self.pend_max = max(self.pac, self.cac)
        # In-flight entry: ((kind * STAGES + stage) * V + value) * NB + bytes index.
        self.ev = max(self.max_tag + 2, self.max_commit) + 1
        self.enb = len(self.bytes_vals)
        self.emax = 3 * self.stages * self.ev * self.enb - 1
        executed = lambda g, p: g.size * (g.items if g.body_start <= p < g.body_end else 1)
        self.total_steps = sum(executed(g, p) * (2 if op.name in ("copy", "commit_empty") else 1)
                               for g in self.groups for p, (op, _) in enumerate(g.ops))
        # Named barriers: (ident, arrival count, most generations) per barrier.
        self.barriers = []
        for b, name in enumerate(self.barrier_names):
            count = int(m.tables.bar_count[b, 0])
            arrivals = sum(executed(g, p) for g in self.groups for p, (op, _) in enumerate(g.ops)
                           if op.name in ("sync", "sync_arrive") and op.barrier == name)
            self.barriers.append((_ident(name, used, "bar_"), count, arrivals // max(count, 1) + 1))

    def group_of(self, agent: int) -> Group:
        for g in self.groups:
            if agent in g.agents:
                return g
        raise IndexError(agent)

    def blocking_waits(self, g: Group):
        """(pc, signal kind 'full'/'empty', unless) of every op that blocks on a signal; `unless`
        only where the group has a try (else `ready` stays false and the wait always waits)."""
        out = []
        for p, (op, _) in enumerate(g.ops):
            if op.name in ("wait_full", "wait_empty", "drain"):
                out.append((p, "full" if op.name == "wait_full" else "empty", op.unless_ready and g.has_try))
        return out


def _ident(name: str, used: set, prefix: str = "ag_") -> str:
    base = prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)
    out, k = base, 1
    while out.lower() in used:
        k += 1
        out = f"{base}_{k}"
    used.add(out.lower())
    return out


def _comment_lines(ir: IR, prefix: str) -> list[str]:
    spec = ir.spec
    lines = [f"{prefix} pipeproof export of {spec.path}",
             f"{prefix} {spec.name}",
             f"{prefix} nvidia mbarriers, {spec.stages} stages, full count {spec.producer_arrive_count}, "
             f"empty count {spec.consumer_arrive_count}"]
    for g in ir.groups:
        ops = ", ".join(op.text or op.name for op, _ in g.ops[g.body_start:g.body_end])
        lines.append(f"{prefix} {g.label}: {g.size} agent(s), {g.items} items, stage {g.init_stage}, "
                     f"phase {g.init_phase}; body [{ops}]")
    return lines


# ---------------------------------------------------------------------------------- Murphi

def to_murphi(spec: Spec, symmetry: bool = False) -> str:
    """The spec as a Murphi model for Rumur (check with `--deadlock-detection stuck`)."""
    ir = IR(spec, "murphi")
    return _Murphi(ir, symmetry).text()


class _Murphi:
    def __init__(self, ir: IR, symmetry: bool):
        self.ir = ir
        self.symmetry = symmetry
        self.out: list[str] = []

    def w(self, *lines):
        self.out.extend(lines)

    def text(self) -> str:
        ir = self.ir
        self.w(*_comment_lines(ir, "--"))
        self.w("-- One rule per op of each agent and one per in-flight entry: each is one atomic step,",
               "-- as in pipeproof. Check with:  rumur --deadlock-detection stuck"
               + (" --symmetry-reduction heuristic" if self.symmetry else " --symmetry-reduction off")
               + " model.m -o model.c",
               "-- then build and run the verifier:  cc -std=c11 -O2 -mcx16 model.c -o model -lpthread"
               "  && ./model",
               "-- (-mcx16 on x86-64: Rumur's verifier uses 16-byte compare-and-swap).",
               "-- (a deadlock is a state with no enabled rule; the rule \"finished\" keeps the end valid).",
               "")
        self.declarations()
        self.functions()
        self.startstate()
        self.rules()
        self.invariants()
        return "\n".join(self.out) + "\n"

    # -------------------------------------------------------------- declarations
    def declarations(self):
        ir = self.ir
        self.w("const", f"  STAGES: {ir.stages};", f"  TXL: {TX_LIMIT};", f"  PAC: {ir.pac};",
               f"  CAC: {ir.cac};")
        if ir.inflight:
            self.w(f"  INF: {ir.inflight};", f"  EV: {ir.ev};", f"  ENB: {ir.enb};")
        self.w("", "type", "  stage_t: 0..STAGES-1;", f"  tag_t: -1..{ir.max_tag};",
               f"  pn_t: 0..{ir.pn_max};", f"  pend_t: 0..{ir.pend_max};",
               f"  ph_t: 0..{ir.ph_max};", f"  cnt_t: 0..{ir.max_count};")
        if ir.has_tx:
            self.w("  tx_t: -TXL..TXL;")
        self.w("  sig_t: record", "    phase_no: pn_t;", "    pending: pend_t;")
        if ir.has_tx:
            self.w("    tx: tx_t;")
        self.w("    observed: boolean;", "  end;")
        if ir.inflight:
            self.w(f"  entry_t: 0..{ir.emax};")
        for g in ir.groups:
            idx = f"scalarset({g.size})" if self.symmetry and g.size > 1 else f"0..{g.size - 1}"
            self.w(f"  {g.ident}_id: {idx};", f"  {g.ident}_t: record",
                   f"    pc: 0..{g.length};", f"    item: 0..{g.items};", "    stage: stage_t;",
                   f"    phase: {g.init_phase}..{g.phase_max};")
            if g.has_try:
                self.w("    ready: boolean;")
            if g.has_sync:
                self.w("    at_sync: boolean;")
            for b in g.arrives:
                bid, _, gmax = ir.barriers[b]
                self.w(f"    arrived_{bid}: 0..{gmax + 1};  -- the generation it last sync_arrived in, + 1")
            self.w("  end;")
        self.w("", "var", "  full_sig: array [stage_t] of sig_t;", "  empty_sig: array [stage_t] of sig_t;",
               "  slot_tag: array [stage_t] of tag_t;")
        if ir.inflight:
            self.w("  inflight: array [0..INF-1] of entry_t;  -- sorted, largest first; 0 = unused")
        for g in ir.groups:
            self.w(f"  {g.ident}: array [{g.ident}_id] of {g.ident}_t;  -- {g.label}")
        for bid, count, gmax in ir.barriers:
            self.w(f"  {bid}_arr: 0..{max(count - 1, 0)};  -- arrivals in the current generation",
                   f"  {bid}_gen: 0..{gmax};  -- completed generations")
        self.w("")

    # -------------------------------------------------------------- functions
    def functions(self):
        ir = self.ir
        self.w("function parity_ready(pn: pn_t; ph: ph_t): boolean;",
               "begin", "  return pn % 2 != ph % 2;", "end;", "",
               "-- A parity wait means signal phase k = (ph - p0) - (p0 mod 2); it is meaningful while",
               "-- phase_no is k or k + 1.",
               "function in_window(pn: pn_t; ph: ph_t; p0: ph_t): boolean;",
               "begin",
               "  return pn = (ph - p0) - (p0 % 2) | pn = (ph - p0) - (p0 % 2) + 1;",
               "end;", "")
        dtx = "; dtx: -TXL..TXL" if ir.has_tx else ""
        self.w("-- One atomic mbarrier update: cnt arrivals and tx += dtx, then the phase check.",
               f"procedure sig_update(var s: sig_t; expected: pend_t; cnt: cnt_t{dtx});")
        if ir.has_tx:
            self.w("var moved: -2*TXL..2*TXL;")
        self.w("begin",
               f"  if cnt > s.pending then error \"{KIND_MESSAGES['over_arrival']}\" endif;")
        if ir.has_tx:
            self.w("  moved := s.tx + dtx;",
                   f"  if moved > TXL | moved < -TXL then error \"{KIND_MESSAGES['tx_range']}\" endif;",
                   "  if s.pending - cnt = 0 & moved = 0 then")
        else:
            self.w("  if s.pending - cnt = 0 then")
        self.w(f"    if s.phase_no >= 1 & !s.observed then error \"{KIND_MESSAGES['over_arrival_ahead']}\" endif;",
               "    s.phase_no := s.phase_no + 1;", "    s.pending := expected;")
        if ir.has_tx:
            self.w("    s.tx := 0;")
        self.w("    s.observed := false;", "  else", "    s.pending := s.pending - cnt;")
        if ir.has_tx:
            self.w("    s.tx := moved;")
        self.w("  endif;", "end;", "")

        # all agents finished
        conj = " & ".join(f"(forall i: {g.ident}_id do {g.ident}[i].pc = {g.length} end)" for g in ir.groups)
        self.w("function all_done(): boolean;", "begin", f"  return {conj};", "end;", "")

        if ir.inflight:
            self.w("procedure inf_add(e: entry_t);", "var j: 0..INF-1; stop: boolean;", "begin",
                   f"  if inflight[INF-1] != 0 then error \"{KIND_MESSAGES['inflight_capacity']}\" endif;",
                   "  j := INF-1;", "  stop := false;", "  while !stop do",
                   "    if j = 0 then stop := true;",
                   "    elsif inflight[j-1] >= e then stop := true;",
                   "    else inflight[j] := inflight[j-1]; j := j - 1;",
                   "    endif;", "  end;", "  inflight[j] := e;", "end;", "",
                   "procedure inf_remove(j: 0..INF-1);", "begin")
            if ir.inflight > 1:
                self.w("  for k: 0..INF-2 do", "    if k >= j then inflight[k] := inflight[k+1]; endif;",
                       "  end;")
            self.w("  inflight[INF-1] := 0;", "end;", "",
                   "function copy_in_flight(s: stage_t): boolean;", "begin",
                   f"  return exists j: 0..INF-1 do inflight[j] != 0 & inflight[j] / (ENB*EV) = {ENTRY_COPY}*STAGES + s end;",
                   "end;", "")
            if ir.has_tx:
                self.w("function bytes_of(b: 0..ENB-1): 0..TXL;", "begin")
                for i, b in enumerate(ir.bytes_vals[:-1]):
                    self.w(f"  if b = {i} then return {min(b, TX_LIMIT)}; endif;")
                self.w(f"  return {min(ir.bytes_vals[-1], TX_LIMIT)};", "end;", "")

        for g in ir.groups:
            if not g.guards:
                continue
            skip = " | ".join(f"(a.pc = {q} & a.item % {k} != {j})" for q, (k, j) in sorted(g.guards.items()))
            self.w(f"-- Skip the body ops of a {g.label} agent that this item does not run (every=/at=).",
                   f"procedure settle_{g.ident}(var a: {g.ident}_t);", "var stop: boolean;", "begin",
                   "  stop := false;", "  while !stop do",
                   f"    if a.pc = {g.body_start} & a.item >= {g.items} then", f"      a.pc := {g.body_end}; stop := true;",
                   f"    elsif {skip} then")
            self.w(*("      " + line for line in self._next_lines(g, "a.pc", "a.item", raw=True)))
            self.w("    else", "      stop := true;", "    endif;", "  end;", "end;", "")
        for b, (bid, count, _) in enumerate(ir.barriers):
            users = [(g, q) for g in ir.groups for q in g.syncs[b]]
            if not users:
                continue
            self.w(f"-- The last arrival of a generation of {ir.barrier_names[b]} releases every agent blocked "
                   "in its sync.", f"procedure release_{bid}();", "begin")
            for g, q in users:
                A = f"{g.ident}[j]"
                self.w(f"  for j: {g.ident}_id do", f"    if {A}.at_sync & {A}.pc = {q} then",
                       f"      {A}.at_sync := false;")
                self.w(*("      " + line for line in self._next_lines(g, f"{A}.pc", f"{A}.item", p=q)))
                self.w("    endif;", "  end;")
            self.w("end;", "")

        # reads_pending per group: simulate the program forward, ignoring waits
        for g in ir.groups:
            by_tag = g.reads_by_tag()
            if not by_tag:
                continue
            self.w(f"-- Will this {g.label} agent still read item t at stage s? (its program run forward,",
                   "-- waits ignored, as pipeproof's reads_pending)",
                   f"function reads_pending_{g.ident}(pc0: 0..{g.length}; item0: 0..{g.items}; st0: stage_t; "
                   f"t: tag_t; s: stage_t): boolean;",
                   f"var pc: 0..{g.length}; item: 0..{g.items}; st: stage_t;", "begin",
                   "  pc := pc0; item := item0; st := st0;",
                   f"  while pc < {g.length} & (item <= t"
                   + (f" | t >= {ir.tag_outside}" if set(by_tag) != {-1} else "") + ") do")
            adv = [p for p, (op, _) in enumerate(g.ops) if op.name in ("advance", "drain")]
            rst = [p for p, (op, _) in enumerate(g.ops) if op.name == "reset"]
            at = lambda pcs: _any_pc_guarded("pc", "item", pcs, g.guards, " | ", "=", "&")
            for i, (tag, pcs) in enumerate(sorted(by_tag.items())):
                self.w(f"    {'if' if i == 0 else 'elsif'} {at(pcs)} then",
                       f"      if {'item' if tag < 0 else tag} = t & st = s then return true; endif;")
            if adv:
                self.w(f"    elsif {at(adv)} then",
                       "      if st = STAGES-1 then st := 0; else st := st + 1; endif;")
            if rst:
                self.w(f"    elsif {at(rst)} then", f"      st := {g.init_stage};")
            self.w("    endif;")
            self.w(*("    " + line for line in self._next_lines(g, "pc", "item")))
            self.w("  end;", "  return false;", "end;", "")

        self.w("-- A write or landing stores tag t into slot s: overwrite_before_drain if a reader",
               "-- of the old item has not read it yet.",
               "procedure store_tag(s: stage_t; t: tag_t);", "begin",
               "  if slot_tag[s] >= 0 & slot_tag[s] != t then")
        for g in ir.groups:
            if any(op.name == "read" for op, _ in g.ops):
                self.w(f"    for b: {g.ident}_id do",
                       f"      if reads_pending_{g.ident}({g.ident}[b].pc, {g.ident}[b].item, {g.ident}[b].stage, "
                       f"slot_tag[s], s) then",
                       f"        error \"{KIND_MESSAGES['overwrite_before_drain']}\";", "      endif;",
                       "    end;")
        self.w("  endif;", "  slot_tag[s] := t;", "end;", "")

    def _next_lines(self, g: Group, pc: str, item: str, p: int | None = None, raw: bool = False):
        """Statements moving pc/item on after the op at `p` (or, for the simulation, any pc;
        `raw`: one position on, as pipeproof's raw_next, without settling)."""
        if p is not None:
            nxt = g.next_pc(p)
            if nxt[0] == "plain":
                lines = [f"{pc} := {nxt[1]};"]
            else:
                lines = [f"{item} := {item} + 1;",
                         f"if {item} < {g.items} then {pc} := {nxt[1]}; else {pc} := {nxt[2]}; endif;"]
            if g.guards:
                lines.append(f"settle_{g.ident}({pc[:-3]});")  # the agent's record
            return lines
        if raw:
            bs, be = g.body_start, g.body_end
            return [f"if {pc} = {be - 1} then", f"  {item} := {item} + 1;",
                    f"  if {item} < {g.items} then {pc} := {bs}; else {pc} := {be}; endif;",
                    "else", f"  {pc} := {pc} + 1;", "endif;"]
        lines = []
        bs, be = g.body_start, g.body_end
        if bs < be:
            lines += [f"if {pc} = {be - 1} then",
                      f"  {item} := {item} + 1;",
                      f"  if {item} < {g.items} then {pc} := {bs}; else {pc} := {be}; endif;"]
            if g.items == 0 and bs > 0:
                lines += [f"elsif {pc} = {bs - 1} then", f"  {pc} := {be};"]
            lines += ["else", f"  {pc} := {pc} + 1;", "endif;"]
        else:
            lines.append(f"{pc} := {pc} + 1;")
        return lines

    # -------------------------------------------------------------- start state
    def startstate(self):
        ir = self.ir
        self.w("startstate \"init\"", "begin", "  for s: stage_t do",
               "    full_sig[s].phase_no := 0; full_sig[s].pending := PAC; full_sig[s].observed := false;",
               "    empty_sig[s].phase_no := 0; empty_sig[s].pending := CAC; empty_sig[s].observed := false;")
        if ir.has_tx:
            self.w("    full_sig[s].tx := 0; empty_sig[s].tx := 0;")
        self.w("    slot_tag[s] := -1;", "  end;")
        if ir.inflight:
            self.w("  for j: 0..INF-1 do inflight[j] := 0; end;")
        for g in ir.groups:
            self.w(f"  for i: {g.ident}_id do",
                   f"    {g.ident}[i].pc := {g.init_pc}; {g.ident}[i].item := {g.init_item};",
                   f"    {g.ident}[i].stage := {g.init_stage}; {g.ident}[i].phase := {g.init_phase};")
            if g.has_try:
                self.w(f"    {g.ident}[i].ready := false;")
            if g.has_sync:
                self.w(f"    {g.ident}[i].at_sync := false;")
            for b in g.arrives:
                self.w(f"    {g.ident}[i].arrived_{ir.barriers[b][0]} := 0;")
            self.w("  end;")
        for bid, _, _ in ir.barriers:
            self.w(f"  {bid}_arr := 0; {bid}_gen := 0;")
        self.w("end;", "")

    # -------------------------------------------------------------- rules
    def rules(self):
        ir = self.ir
        for g in ir.groups:
            self.w(f"ruleset i: {g.ident}_id do")
            for p in range(g.length):
                self.op_rule(g, p)
            self.w("end;", "")
        if ir.inflight:
            self.landing_rule()
        self.w("-- The end of a run is a valid end state (Rumur's stuck-state check needs one rule).",
               "rule \"finished\"", "  all_done()", "==>", "begin", "end;", "")

    def op_rule(self, g: Group, p: int):
        ir = self.ir
        op, k = g.ops[p]
        A = f"{g.ident}[i]"
        name = op.text or op.name
        if op.name == "drain":
            name = f"drain (step {k + 1} of {ir.stages})"
        guard = [f"{A}.pc = {p}"]
        body: list[str] = []
        sig_of = lambda kind: f"{kind}_sig[{A}.stage]"
        if op.name in ("wait_full", "wait_empty", "drain"):
            sig = sig_of("full" if op.name == "wait_full" else "empty")
            ready = f"parity_ready({sig}.phase_no, {A}.phase)"
            if op.unless_ready and g.has_try:
                guard.append(f"({A}.ready | {ready})")
                body.append(f"if !{A}.ready then {sig}.observed := true; endif;")
            else:
                guard.append(ready)
                body.append(f"{sig}.observed := true;")
            if op.name == "drain":
                body += self._advance(A)
        elif op.name in ("try_full", "try_empty"):
            sig = sig_of("full" if op.name == "try_full" else "empty")
            body += [f"if !in_window({sig}.phase_no, {A}.phase, {g.init_phase}) then",
                     f"  error \"{KIND_MESSAGES['phase_alias']}\";", "endif;",
                     f"if parity_ready({sig}.phase_no, {A}.phase) then",
                     f"  {A}.ready := true; {sig}.observed := true;",
                     f"else", f"  {A}.ready := false;", "endif;"]
        elif op.name in ("arrive_full", "arrive_empty"):
            full = op.name == "arrive_full"
            tx = ", 0" if ir.has_tx else ""
            body.append(f"sig_update({sig_of('full' if full else 'empty')}, {'PAC' if full else 'CAC'}, {op.n}{tx});")
        elif op.name == "expect_tx":
            if op.n > TX_LIMIT:
                body.append(f"error \"{KIND_MESSAGES['tx_range']}\";")
            else:
                body.append(f"sig_update({sig_of('full')}, PAC, 1, {op.n});")
        elif op.name == "copy":
            if op.n > TX_LIMIT:
                body.append(f"error \"{KIND_MESSAGES['tx_range']}\";")
            else:
                b = ir.bytes_vals.index(op.n)
                body.append(f"inf_add((({ENTRY_COPY}*STAGES + {A}.stage)*EV + {g.tag(p, A + '.item')} + 1)*ENB + {b});")
        elif op.name == "commit_empty":
            body.append(f"inf_add((({ENTRY_COMMIT}*STAGES + {A}.stage)*EV + {op.n})*ENB);")
        elif op.name == "write":
            body.append(f"store_tag({A}.stage, {g.tag(p, A + '.item')});")
        elif op.name == "read":
            cond = f"slot_tag[{A}.stage] != {g.tag(p, A + '.item')}"
            if ir.inflight:
                cond += f" | copy_in_flight({A}.stage)"
            body += [f"if {cond} then", f"  error \"{KIND_MESSAGES['read_before_fill']}\";", "endif;"]
        elif op.name == "advance":
            body += self._advance(A)
        elif op.name == "reset":
            body.append(f"{A}.stage := {g.init_stage}; {A}.phase := {g.init_phase};")
        elif op.name in ("sync", "sync_arrive"):
            b = ir.barrier_names.index(op.barrier)
            bid, count, _ = ir.barriers[b]
            release = [f"release_{bid}();"] if any(h.syncs[b] for h in ir.groups) else []
            if op.name == "sync_arrive":
                body.append(f"{A}.arrived_{bid} := {bid}_gen + 1;")
            body += [f"if {bid}_arr + 1 < {count} then", f"  {bid}_arr := {bid}_arr + 1;"]
            if op.name == "sync":
                guard.append(f"!{A}.at_sync")
                body += [f"  {A}.at_sync := true;  -- blocked here until the generation completes", "else",
                         f"  {bid}_arr := 0; {bid}_gen := {bid}_gen + 1;"]
                body += ["  " + line for line in release + self._next_lines(g, f"{A}.pc", f"{A}.item", p=p)]
                body.append("endif;")
                body += self._exit_check(g, p, A)
                return self._emit_rule(g, p, name, guard, body)
            body += ["else", f"  {bid}_arr := 0; {bid}_gen := {bid}_gen + 1;"]
            body += ["  " + line for line in release] + ["endif;"]
        elif op.name == "sync_wait":
            b = ir.barrier_names.index(op.barrier)
            bid = ir.barriers[b][0]
            if b in g.arrives:
                guard.append(f"({A}.arrived_{bid} = 0 & {bid}_gen >= 1 | "
                             f"{A}.arrived_{bid} >= 1 & {bid}_gen >= {A}.arrived_{bid})")
            else:
                guard.append(f"{bid}_gen >= 1")
        else:  # pragma: no cover - check_exportable refuses the rest
            raise AssertionError(op.name)
        body += self._next_lines(g, f"{A}.pc", f"{A}.item", p=p)
        body += self._exit_check(g, p, A)
        self._emit_rule(g, p, name, guard, body)

    def _exit_check(self, g: Group, p: int, A: str) -> list[str]:
        if not (self.ir.inflight and g.can_finish_at(p)):
            return []
        return [f"if {A}.pc = {g.length} & inflight[0] != 0 then",
                f"  if all_done() then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;",
                "endif;"]

    def _emit_rule(self, g: Group, p: int, name: str, guard, body):
        self.w(f"  rule \"{g.label} pc {p}: {name}\"", "    " + " & ".join(guard), "  ==>", "  begin")
        self.w(*("    " + line for line in body))
        self.w("  end;", "")

    @staticmethod
    def _advance(A: str) -> list[str]:
        return [f"if {A}.stage = STAGES-1 then {A}.stage := 0; {A}.phase := {A}.phase + 1; "
                f"else {A}.stage := {A}.stage + 1; endif;"]

    def landing_rule(self):
        ir = self.ir
        tx = ", 0" if ir.has_tx else ""
        self.w("-- In-flight entry j lands (a copy: stores its item, then complete_tx of its bytes on",
               "-- full) or fires (a commit: arrives n on empty), in one step.",
               "ruleset j: 0..INF-1 do", "  rule \"land or fire in-flight entry\"", "    inflight[j] != 0",
               "  ==>", "  var e: entry_t; s: stage_t;", "  begin", "    e := inflight[j];",
               "    inf_remove(j);", "    s := (e / (ENB*EV)) % STAGES;",
               f"    if all_done() then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;",
               f"    if e / (ENB*EV*STAGES) = {ENTRY_COPY} then")
        if ir.has_tx:
            self.w("      store_tag(s, (e / ENB) % EV - 1);",
                   "      sig_update(full_sig[s], PAC, 0, -bytes_of(e % ENB));")
        else:
            self.w("      store_tag(s, (e / ENB) % EV - 1);")
        self.w("    else", f"      sig_update(empty_sig[s], CAC, (e / ENB) % EV{tx});", "    endif;",
               "  end;", "end;", "")

    # -------------------------------------------------------------- invariants
    def invariants(self):
        ir = self.ir
        parts = []
        for g in ir.groups:
            conds = []
            for p, kind, unless in ir.blocking_waits(g):
                A = f"{g.ident}[i]"
                at = f"{A}.pc = {p}" + (f" & !{A}.ready" if unless else "")
                conds.append(f"(({at}) -> in_window({kind}_sig[{A}.stage].phase_no, {A}.phase, {g.init_phase}))")
            if conds:
                parts.append(f"(forall i: {g.ident}_id do\n     " + "\n   & ".join(conds) + "\n   end)")
        if parts:
            self.w("-- phase_alias: every agent at a blocking wait is inside its phase window.",
                   "invariant \"phase_alias\"", "  " + "\n  & ".join(parts) + ";", "")


def _any_pc(var: str, pcs, sep: str) -> str:
    return sep.join(f"{var} = {p}" for p in pcs)


def _any_pc_guarded(pc: str, item: str, pcs, guards: dict, sep: str, eq: str, conj: str) -> str:
    """`pc = p` for each p, with `item % K = j` for ops guarded by every=K at=j."""
    parts = []
    for p in pcs:
        if p in guards:
            k, j = guards[p]
            parts.append(f"({pc} {eq} {p} {conj} {item} % {k} {eq} {j})")
        else:
            parts.append(f"{pc} {eq} {p}")
    return sep.join(parts)


# ---------------------------------------------------------------------------------- Promela

def to_promela(spec: Spec) -> str:
    """The spec as a Promela model for SPIN."""
    ir = IR(spec, "promela")
    return _Promela(ir).text()


def _ptype(lo: int, hi: int) -> str:
    if lo >= 0 and hi <= 1:
        return "bit"
    if lo >= 0 and hi <= 255:
        return "byte"
    if -32768 <= lo and hi <= 32767:
        return "short"
    return "int"


class _Promela:
    def __init__(self, ir: IR):
        self.ir = ir
        self.out: list[str] = []

    def w(self, *lines):
        self.out.extend(lines)

    def text(self) -> str:
        ir = self.ir
        self.w("/*", *_comment_lines(ir, " *"),
               " * Every op of an agent is one d_step, and so is every landing of an in-flight copy",
               " * or firing of a commit. Check with:  spin -a model.pml && cc -O2 -o pan pan.c && ./pan",
               " * A deadlock is an invalid end state; assertions name the violation kind.", " */", "")
        self.declarations()
        self.inlines()
        self.processes()
        return "\n".join(self.out) + "\n"

    def declarations(self):
        ir = self.ir
        A = ir.n_agents
        self.w(f"#define STAGES {ir.stages}", f"#define TXL {TX_LIMIT}", f"#define PAC {ir.pac}",
               f"#define CAC {ir.cac}", f"#define NAGENTS {A}", "#define ME (_pid - 1)  /* init is pid 0 */")
        if ir.inflight:
            self.w(f"#define INF {ir.inflight}", f"#define EV {ir.ev}", f"#define ENB {ir.enb}")
        self.w("")
        self.w("typedef Sig {", f"  {_ptype(0, ir.pn_max)} phase_no;", f"  {_ptype(0, ir.pend_max)} pending;")
        if ir.has_tx:
            self.w("  int tx;")
        self.w("  bit observed", "}", "", "Sig full_sig[STAGES];", "Sig empty_sig[STAGES];",
               f"{_ptype(-1, ir.max_tag + 1)} slot_tag[STAGES];",
               f"{_ptype(0, max(g.length for g in ir.groups))} pc[NAGENTS];",
               f"{_ptype(0, ir.max_items)} item[NAGENTS];",
               f"{_ptype(0, ir.stages - 1)} stage[NAGENTS];",
               f"{_ptype(0, ir.ph_max)} phase[NAGENTS];")
        if any(g.has_try for g in ir.groups):
            self.w("bit ready[NAGENTS];")
        if any(g.has_sync for g in ir.groups):
            self.w("bit at_sync[NAGENTS];")
        for b, (bid, count, gmax) in enumerate(ir.barriers):
            if any(b in g.arrives for g in ir.groups):
                self.w(f"{_ptype(0, gmax + 1)} arrived_{bid}[NAGENTS];  /* last sync_arrive generation + 1 */")
            self.w(f"{_ptype(0, max(count - 1, 0))} {bid}_arr;  /* arrivals in the current generation */",
                   f"{_ptype(0, gmax)} {bid}_gen;  /* completed generations */")
        if ir.inflight:
            self.w(f"{_ptype(0, ir.emax)} inflight[INF];  /* sorted, largest first; 0 = unused */")
        self.w("", "/* scratch for d_steps (not part of the state) */",
               "hidden int moved_, e_, rt_;", "hidden int rp_pc, rp_item, rp_st, b_, k_, ls_;",
               "hidden byte rp_, st_;",
               "/* assert(KIND) fails with the kind's name in SPIN's report */",
               "hidden byte read_before_fill, overwrite_before_drain, phase_alias, over_arrival,",
               "           tx_range, inflight_at_exit, inflight_capacity;", "")
        self.w("#define PARITY_READY(pn, ph) (((pn) % 2) != ((ph) % 2))",
               "#define IN_WINDOW(pn, ph, p0) ((pn) == ((ph) - (p0)) - ((p0) % 2) || "
               "(pn) == ((ph) - (p0)) - ((p0) % 2) + 1)")
        if ir.inflight and ir.has_tx:
            expr = str(min(ir.bytes_vals[-1], TX_LIMIT))
            for i in range(len(ir.bytes_vals) - 2, -1, -1):
                expr = f"((B) == {i} -> {min(ir.bytes_vals[i], TX_LIMIT)} : {expr})"
            self.w(f"#define bytes_of(B) ({expr})")
        done = " && ".join(f"pc[{a}] == {ir.group_of(a).length}" for a in range(A))
        self.w(f"#define ALL_DONE ({done})", "")

    def inlines(self):
        ir = self.ir
        # signal update
        self.w("/* One atomic mbarrier update: CNT arrivals and tx += DTX, then the phase check. */",
               "inline sig_update(SG, EXPECTED, CNT, DTX) {", "  if",
               "  :: (CNT) > SG.pending -> assert(over_arrival)  /* trap */", "  :: else ->")
        if ir.has_tx:
            self.w("    moved_ = SG.tx + (DTX);",
                   "    if", "    :: moved_ > TXL || moved_ < -TXL -> assert(tx_range)  /* trap */",
                   "    :: else -> skip", "    fi;",
                   "    if", "    :: SG.pending - (CNT) == 0 && moved_ == 0 ->")
        else:
            self.w("    if", "    :: SG.pending - (CNT) == 0 ->")
        self.w("      if", "      :: SG.phase_no >= 1 && !SG.observed -> assert(over_arrival)  /* ran ahead */",
               "      :: else -> skip", "      fi;",
               "      SG.phase_no = SG.phase_no + 1; SG.pending = EXPECTED; SG.observed = 0"
               + ("; SG.tx = 0" if ir.has_tx else ""),
               "    :: else ->", "      SG.pending = SG.pending - (CNT)" + ("; SG.tx = moved_" if ir.has_tx else ""),
               "    fi", "  fi", "}", "")
        if ir.inflight:
            self.w("inline inf_add(E) {", "  e_ = (E);", "  if",
                   "  :: inflight[INF-1] != 0 -> assert(inflight_capacity)", "  :: else -> skip", "  fi;",
                   "  k_ = INF - 1;", "  do", "  :: k_ > 0 && inflight[k_-1] < e_ -> inflight[k_] = inflight[k_-1]; k_--",
                   "  :: else -> break", "  od;", "  inflight[k_] = e_", "}", "",
                   "inline inf_remove(J) {", "  k_ = (J);", "  do",
                   "  :: k_ < INF - 1 -> inflight[k_] = inflight[k_+1]; k_++", "  :: else -> break", "  od;",
                   "  inflight[INF-1] = 0", "}", "",
                   "/* rp_ := some copy into slot S is in flight */",
                   "inline copy_in_flight(S) {", "  rp_ = 0; k_ = 0;", "  do",
                   f"  :: k_ < INF -> if :: inflight[k_] != 0 && inflight[k_] / (ENB*EV) == {ENTRY_COPY}*STAGES + (S) -> rp_ = 1"
                   " :: else -> skip fi; k_++",
                   "  :: else -> break", "  od", "}", "")
        for g in ir.groups:
            if not g.guards:
                continue
            skip = " || ".join(f"(pc[B] == {q} && item[B] % {k} != {j})" for q, (k, j) in sorted(g.guards.items()))
            bs, be = g.body_start, g.body_end
            self.w(f"/* Skip the body ops of a {g.label} agent that this item does not run (every=/at=). */",
                   f"inline settle_{g.ident}(B) {{", "  st_ = 0;", "  do", "  :: st_ == 0 ->", "    if",
                   f"    :: pc[B] == {bs} && item[B] >= {g.items} -> pc[B] = {be}; st_ = 1",
                   f"    :: !(pc[B] == {bs} && item[B] >= {g.items}) && ({skip}) ->",
                   f"      if", f"      :: pc[B] == {be - 1} ->", "        item[B]++;",
                   f"        if :: item[B] < {g.items} -> pc[B] = {bs} :: else -> pc[B] = {be} fi",
                   "      :: else -> pc[B]++", "      fi",
                   "    :: else -> st_ = 1", "    fi", "  :: else -> break", "  od;",
                   "  skip  /* a break must land inside the d_step */", "}", "")
        for b, (bid, count, _) in enumerate(ir.barriers):
            users = [(g, q) for g in ir.groups for q in g.syncs[b]]
            if not users:
                continue
            self.w(f"/* The last arrival of a generation of {ir.barrier_names[b]} releases every agent blocked "
                   "in its sync. */", f"inline release_{bid}() {{")
            for g, q in users:
                for a in g.agents:
                    self.w(f"  if :: at_sync[{a}] && pc[{a}] == {q} -> at_sync[{a}] = 0; "
                           + "; ".join(self._next(g, q, str(a))) + " :: else -> skip fi;")
            self.w("  skip", "}", "")
        for g in ir.groups:
            by_tag = g.reads_by_tag()
            if not by_tag:
                continue
            adv = [p for p, (op, _) in enumerate(g.ops) if op.name in ("advance", "drain")]
            rst = [p for p, (op, _) in enumerate(g.ops) if op.name == "reset"]
            at = lambda pcs: "(" + _any_pc_guarded("rp_pc", "rp_item", pcs, g.guards, " || ", "==", "&&") + ")"
            self.w(f"/* rp_ := agent B ({g.label}) will still read item T at stage S (its program run",
                   " * forward, waits ignored, as pipeproof's reads_pending) */",
                   f"inline reads_pending_{g.ident}(B, T, S) {{",
                   "  rp_pc = pc[B]; rp_item = item[B]; rp_st = stage[B]; rp_ = 0;", "  do",
                   f"  :: rp_ == 0 && rp_pc < {g.length} && (rp_item <= (T)"
                   + (f" || (T) >= {ir.tag_outside}" if set(by_tag) != {-1} else "") + ") ->", "    if")
            for tag, pcs in sorted(by_tag.items()):
                self.w(f"    :: {at(pcs)} -> if :: {'rp_item' if tag < 0 else tag} == (T) && rp_st == (S) "
                       "-> rp_ = 1 :: else -> skip fi")
            if adv:
                self.w(f"    :: {at(adv)} -> if :: rp_st == STAGES-1 -> rp_st = 0 :: else -> rp_st++ fi")
            if rst:
                self.w(f"    :: {at(rst)} -> rp_st = {g.init_stage}")
            self.w("    :: else -> skip", "    fi;")
            bs, be = g.body_start, g.body_end
            if bs < be:
                self.w("    if", f"    :: rp_pc == {be - 1} ->", "      rp_item++;",
                       f"      if :: rp_item < {g.items} -> rp_pc = {bs} :: else -> rp_pc = {be} fi")
                if g.items == 0 and bs > 0:
                    self.w(f"    :: rp_pc == {bs - 1} -> rp_pc = {be}")
                self.w("    :: else -> rp_pc++", "    fi")
            else:
                self.w("    rp_pc++")
            self.w("  :: else -> break", "  od", "}", "")
        self.w("/* A write or landing stores tag T into slot S: overwrite_before_drain if a reader",
               " * of the old item has not read it yet. */",
               "inline store_tag(S, T) {", "  rt_ = (T);", "  if",
               "  :: slot_tag[S] >= 0 && slot_tag[S] != rt_ ->")
        for g in ir.groups:
            if any(op.name == "read" for op, _ in g.ops):
                self.w(f"    b_ = {g.first};", "    do",
                       f"    :: b_ < {g.first + g.size} ->",
                       f"      reads_pending_{g.ident}(b_, slot_tag[S], S);",
                       "      if :: rp_ -> assert(overwrite_before_drain) :: else -> skip fi;",
                       "      b_++", "    :: else -> break", "    od;")
        self.w("    skip", "  :: else -> skip", "  fi;", "  slot_tag[S] = rt_", "}", "")

    def processes(self):
        ir = self.ir
        for g in ir.groups:
            self.w(f"proctype {g.ident}() {{  /* {g.label} */", "  do")
            for p in range(g.length):
                self.op_step(g, p)
            self.w(f"  :: pc[ME] == {g.length} -> break", "  od", "}", "")
        if ir.inflight:
            self.w("/* In-flight entry J lands (a copy: stores its item, then complete_tx of its bytes on",
                   " * full) or fires (a commit: arrives n on empty), in one step. */",
                   "inline land(J) {", "  e_ = inflight[J];", "  inf_remove(J);",
                   "  ls_ = (e_ / (ENB*EV)) % STAGES;",
                   "  if :: ALL_DONE -> assert(inflight_at_exit) :: else -> skip fi;", "  if",
                   f"  :: e_ / (ENB*EV*STAGES) == {ENTRY_COPY} ->",
                   "    store_tag(ls_, (e_ / ENB) % EV - 1);")
            if ir.has_tx:
                self.w("    sig_update(full_sig[ls_], PAC, 0, -bytes_of(e_ % ENB))")
            else:
                self.w("    skip")
            self.w("  :: else ->", "    sig_update(empty_sig[ls_], CAC, (e_ / ENB) % EV, 0)", "  fi", "}", "")
            self.w("proctype landings() {", "end:", "  do")
            for j in range(ir.inflight):
                self.w(f"  :: d_step {{ inflight[{j}] != 0 -> land({j}) }}")
            self.w("  od", "}", "")
        alias = []
        for g in ir.groups:
            for a in g.agents:
                for p, kind, unless in ir.blocking_waits(g):
                    at = f"pc[{a}] == {p}" + (f" && !ready[{a}]" if unless else "")
                    alias.append(f"({at} && !IN_WINDOW({kind}_sig[stage[{a}]].phase_no, phase[{a}], {g.init_phase}))")
        if alias:
            self.w("/* phase_alias: an agent at a blocking wait outside its phase window */",
                   "#define ALIASED (" + " || \\\n  ".join(alias) + ")",
                   "proctype monitor() {", "end:", "  do", "  :: d_step { ALIASED -> assert(phase_alias) }", "  od", "}", "")
        self.w("init {", "  atomic {", "    d_step {", "      k_ = 0;", "      do", "      :: k_ < STAGES ->",
               "        full_sig[k_].pending = PAC; empty_sig[k_].pending = CAC; slot_tag[k_] = -1; k_++",
               "      :: else -> break", "      od;")
        for g in ir.groups:
            for a in g.agents:
                self.w(f"      pc[{a}] = {g.init_pc}; item[{a}] = {g.init_item}; stage[{a}] = {g.init_stage}; "
                       f"phase[{a}] = {g.init_phase};")
        self.w("    };")
        for g in ir.groups:
            for a in g.agents:
                self.w(f"    run {g.ident}();  /* agent {a}: {ir.model.agents[a].name} */")
        if ir.inflight:
            self.w("    run landings();")
        if alias:
            self.w("    run monitor();")
        self.w("  }", "}")

    def op_step(self, g: Group, p: int):
        ir = self.ir
        op, k = g.ops[p]
        name = op.text or op.name
        guard = [f"pc[ME] == {p}"]
        body: list[str] = []
        sig_of = lambda kind: f"{kind}_sig[stage[ME]]"
        if op.name in ("wait_full", "wait_empty", "drain"):
            sig = sig_of("full" if op.name == "wait_full" else "empty")
            ready = f"PARITY_READY({sig}.phase_no, phase[ME])"
            if op.unless_ready and g.has_try:
                guard.append(f"(ready[ME] || {ready})")
                body.append(f"if :: !ready[ME] -> {sig}.observed = 1 :: else -> skip fi")
            else:
                guard.append(ready)
                body.append(f"{sig}.observed = 1")
            if op.name == "drain":
                body.append(self._advance())
        elif op.name in ("try_full", "try_empty"):
            sig = sig_of("full" if op.name == "try_full" else "empty")
            body += [f"if :: !IN_WINDOW({sig}.phase_no, phase[ME], {g.init_phase}) -> assert(phase_alias) "
                     ":: else -> skip fi",
                     f"if :: PARITY_READY({sig}.phase_no, phase[ME]) -> ready[ME] = 1; {sig}.observed = 1 "
                     ":: else -> ready[ME] = 0 fi"]
        elif op.name in ("arrive_full", "arrive_empty"):
            full = op.name == "arrive_full"
            body.append(f"sig_update({sig_of('full' if full else 'empty')}, {'PAC' if full else 'CAC'}, {op.n}, 0)")
        elif op.name == "expect_tx":
            body.append("assert(tx_range)" if op.n > TX_LIMIT else f"sig_update({sig_of('full')}, PAC, 1, {op.n})")
        elif op.name == "copy":
            if op.n > TX_LIMIT:
                body.append("assert(tx_range)")
            else:
                b = ir.bytes_vals.index(op.n)
                body.append(f"inf_add((({ENTRY_COPY}*STAGES + stage[ME])*EV + {g.tag(p, 'item[ME]')} + 1)*ENB + {b})")
        elif op.name == "commit_empty":
            body.append(f"inf_add((({ENTRY_COMMIT}*STAGES + stage[ME])*EV + {op.n})*ENB)")
        elif op.name == "write":
            body.append(f"store_tag(stage[ME], {g.tag(p, 'item[ME]')})")
        elif op.name == "read":
            if ir.inflight:
                body += ["copy_in_flight(stage[ME])",
                         f"if :: slot_tag[stage[ME]] != {g.tag(p, 'item[ME]')} || rp_ -> assert(read_before_fill) :: else -> skip fi"]
            else:
                body.append(f"if :: slot_tag[stage[ME]] != {g.tag(p, 'item[ME]')} -> assert(read_before_fill) :: else -> skip fi")
        elif op.name == "advance":
            body.append(self._advance())
        elif op.name == "reset":
            body.append(f"stage[ME] = {g.init_stage}; phase[ME] = {g.init_phase}")
        elif op.name in ("sync", "sync_arrive"):
            b = ir.barrier_names.index(op.barrier)
            bid, count, _ = ir.barriers[b]
            release = [f"release_{bid}()"] if any(h.syncs[b] for h in ir.groups) else []
            if op.name == "sync_arrive":
                body.append(f"arrived_{bid}[ME] = {bid}_gen + 1")
            if op.name == "sync":
                guard.append("!at_sync[ME]")
                done = "; ".join([f"{bid}_arr = 0; {bid}_gen++"] + release + self._next(g, p, "ME"))
                body.append(f"if :: {bid}_arr + 1 < {count} -> {bid}_arr++; at_sync[ME] = 1 "
                            f":: else -> {done} fi")
                body += self._exit_check(g, p)
                return self._emit_step(p, name, guard, body)
            done = "; ".join([f"{bid}_arr = 0; {bid}_gen++"] + release)
            body.append(f"if :: {bid}_arr + 1 < {count} -> {bid}_arr++ :: else -> {done} fi")
        elif op.name == "sync_wait":
            b = ir.barrier_names.index(op.barrier)
            bid = ir.barriers[b][0]
            if b in g.arrives:
                guard.append(f"(arrived_{bid}[ME] == 0 && {bid}_gen >= 1 || "
                             f"arrived_{bid}[ME] >= 1 && {bid}_gen >= arrived_{bid}[ME])")
            else:
                guard.append(f"{bid}_gen >= 1")
            body.append("skip")
        else:  # pragma: no cover
            raise AssertionError(op.name)
        body += self._next(g, p, "ME")
        body += self._exit_check(g, p)
        self._emit_step(p, name, guard, body)

    def _next(self, g: Group, p: int, who: str) -> list[str]:
        """Statements moving agent `who` on after the op at `p` (settling every=/at= skips)."""
        nxt = g.next_pc(p)
        if nxt[0] == "plain":
            out = [f"pc[{who}] = {nxt[1]}"]
        else:
            out = [f"item[{who}]++; if :: item[{who}] < {g.items} -> pc[{who}] = {nxt[1]} "
                   f":: else -> pc[{who}] = {nxt[2]} fi"]
        if g.guards:
            out.append(f"settle_{g.ident}({who})")
        return out

    def _exit_check(self, g: Group, p: int) -> list[str]:
        if not (self.ir.inflight and g.can_finish_at(p)):
            return []
        return [f"if :: pc[ME] == {g.length} && inflight[0] != 0 && ALL_DONE -> assert(inflight_at_exit) "
                ":: else -> skip fi"]

    def _emit_step(self, p: int, name: str, guard, body):
        self.w(f"  :: d_step {{ /* pc {p}: {name} */", "       " + " && ".join(guard) + " ->")
        self.w(*("       " + line + ";" for line in body[:-1]))
        self.w("       " + body[-1], "     }")

    @staticmethod
    def _advance() -> str:
        return ("if :: stage[ME] == STAGES-1 -> stage[ME] = 0; phase[ME]++ "
                ":: else -> stage[ME]++ fi")


def export(spec: Spec, fmt: str, symmetry: bool = False) -> str:
    """`fmt` is 'promela' or 'murphi'; symmetry applies to Murphi only."""
    if fmt == "promela":
        return to_promela(spec)
    if fmt == "murphi":
        return to_murphi(spec, symmetry=symmetry)
    raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")


# ---------------------------------------------------------------------------------- running the tools

KINDS = ("deadlock", "read_before_fill", "overwrite_before_drain", "phase_alias", "over_arrival",
         "tx_range", "inflight_at_exit", "inflight_capacity")


@dataclass
class ToolRun:
    """One external check: the verdict it reached, what it counted and what it cost."""
    tool: str
    verdict: str          # ok | violation | inconclusive | timeout | failed
    kind: str | None      # the violation kind the tool named (first word of its report)
    states: int | None
    seconds: float        # wall time of every step, C compiles included
    check_seconds: float  # wall time of the verifier binary alone
    peak_kb: int          # largest resident set of any step (the compiler's included)
    check_peak_kb: int    # largest resident set of the verifier binary alone
    output: str           # the verifier's report (or the failing step's)


def measured(cmd, cwd=None, timeout=None, env=None, stdout_only=False):
    """Run `cmd` as a whole process (its own session, killed with its children at `timeout`):
    (exit code or None on timeout, output, wall seconds, peak RSS in KiB). The output is stdout
    then stderr, or stdout alone.

    The peak comes from GNU time (`/usr/bin/time -f %M`) when it is installed: a child forked
    straight from this (large) Python process reports at least this process's own peak in its
    ru_maxrss, because Linux carries the high-water mark across exec. Without GNU time the
    wait4 figure is used, an upper bound."""
    gnu_time = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with tempfile.TemporaryFile() as log, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss_file:
        full = ([gnu_time, "-f", "%M", "-o", rss_file.name] if gnu_time else []) + list(cmd)
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, cwd=cwd, stdout=log, stderr=err,
                                start_new_session=True, env=env)
        fired = []

        def kill():
            fired.append(True)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        log.seek(0)
        err.seek(0)
        out = log.read().decode(errors="replace")
        if not stdout_only:
            out += err.read().decode(errors="replace")
        peak = int(usage.ru_maxrss)
        if gnu_time:
            lines = [ln for ln in rss_file.read().split() if ln.isdigit()]
            peak = int(lines[-1]) if lines else 0  # 0: unknown (killed at the timeout)
    return (None if fired else proc.returncode), out, wall, peak


def _pipeline(tool, steps, cwd, timeout, parse):
    """Run compile/check steps one after another under one time budget."""
    total, peak = 0.0, 0
    out = ""
    for i, cmd in enumerate(steps):
        left = None if timeout is None else max(timeout - total, 0.01)
        code, out, wall, rss = measured(cmd, cwd, left)
        total += wall
        peak = max(peak, rss)
        last = i == len(steps) - 1
        if code is None:
            return ToolRun(tool, "timeout", None, None, total, wall if last else 0.0, peak,
                           rss if last else 0, out)
        if not last and code != 0:
            return ToolRun(tool, "failed", None, None, total, 0.0, peak, 0,
                           f"{' '.join(cmd)}: exit {code}\n{out}")
    verdict, kind, states = parse(code, out)
    return ToolRun(tool, verdict, kind, states, total, wall, peak, rss, out)


def _kind_in(text: str):
    for k in KINDS:
        if k in text:
            return k
    return None


def parse_spin(code, out):
    """(verdict, kind, states stored) from a pan report."""
    m = re.search(r"(\d+) states, stored", out)
    states = int(m.group(1)) if m else None
    errors = re.search(r"errors: (\d+)", out)
    if errors is None:
        return "failed", None, states
    if int(errors.group(1)) > 0:
        line = next((ln for ln in out.splitlines() if ln.startswith("pan:")
                     and ("assertion violated" in ln or "invalid end state" in ln)), "")
        if "invalid end state" in line:
            return "violation", "deadlock", states
        kind = _kind_in(line)
        if kind == "inflight_capacity":
            return "inconclusive", kind, states
        return ("violation" if kind else "failed"), kind, states
    if "reached -DMEMLIM bound" in out or "max search depth too small" in out:
        return "inconclusive", None, states
    return "ok", None, states


def parse_rumur(code, out):
    """(verdict, kind, states) from a Rumur verifier's report. The kind is read from the error
    line the verifier prints (our error strings and invariant names begin with it); an error
    that names no kind (a value out of its range, say) is a failure of the export, not a
    violation."""
    m = re.search(r"(\d+) states, (\d+) rules fired", out)
    states = int(m.group(1)) if m else None
    if "No error found" in out and code == 0:
        return "ok", None, states
    lines = out.splitlines()
    marker = next((i for i, ln in enumerate(lines) if "error trace for the error" in ln), None)
    if marker is None:
        return "failed", None, states
    error = next((ln.strip() for ln in lines[marker + 1:] if ln.strip()), "")
    kind = _kind_in(error)
    if kind == "inflight_capacity":
        return "inconclusive", kind, states
    return ("violation" if kind else "failed"), kind, states


def spin_steps(model_file: str, depth: int = 100000, cc: str = "cc", memlim_mb: int | None = None,
               extra_cflags=(), opt: str = "-O2"):
    flags = [opt] + ([f"-DMEMLIM={memlim_mb}"] if memlim_mb else []) + list(extra_cflags)
    return [["spin", "-a", model_file], [cc, *flags, "-w", "-o", "pan", "pan.c"], ["./pan", f"-m{depth}"]]


# Rumur's verifier uses 16-byte compare-and-swap on x86-64 (its README: compile with -mcx16).
_CX16 = ["-mcx16"] if platform.machine() in ("x86_64", "AMD64") else []


def rumur_steps(model_file: str, symmetry: bool = False, threads: int = 1, cc: str = "cc",
                opt: str = "-O2"):
    return [["rumur", "--deadlock-detection", "stuck",
             "--symmetry-reduction", "heuristic" if symmetry else "off",
             "--threads", str(threads), "--counterexample-trace", "off", model_file, "-o", "checker.c"],
            [cc, "-std=c11", opt, *_CX16, "-w", "-o", "checker", "checker.c", "-lpthread"],
            ["./checker"]]


def search_depth(spec: Spec) -> int:
    """A depth bound for pan's DFS stack that every run of `spec` stays under."""
    ir = IR(spec, "promela")
    return 2 * ir.total_steps + 4 * ir.n_agents + 1000


def run_spin(spec: Spec, workdir, timeout: float | None = None, **kw) -> ToolRun:
    """Export `spec` to Promela in `workdir`, then spin -a, cc -O2 and ./pan (one budget)."""
    Path(workdir, "model.pml").write_text(to_promela(spec))
    return _pipeline("spin", spin_steps("model.pml", search_depth(spec), **kw), str(workdir), timeout,
                     parse_spin)


def run_rumur(spec: Spec, workdir, timeout: float | None = None, symmetry: bool = False,
              threads: int = 1, opt: str = "-O2") -> ToolRun:
    """Export `spec` to Murphi in `workdir`, then rumur, cc and the verifier (one budget)."""
    Path(workdir, "model.m").write_text(to_murphi(spec, symmetry=symmetry))
    return _pipeline("rumur", rumur_steps("model.m", symmetry, threads, opt=opt), str(workdir), timeout,
                     parse_rumur)
