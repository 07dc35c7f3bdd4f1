"""The Murphi export (for Rumur): the compiled model as one rule per op of each agent.

checker/models/exporter.py describes the export; checker/models/ir.py has what it shares with
the Promela export. The signal rules (parity_ready, in_window, intended_after, in_window_at,
sig_update, the start state's signals) are printed from the backend's rules
(checker/models/signals.py), not written here: Murphi has no conditional expression, so each printed
`select` is an if-chain.

Slots of several parts (docs/rules.md "Slot parts") keep one tag per part (slot_tag[s][p]); a
copy's in-flight entry carries its part. A group whose program has a `reset` keeps the phase
window's (k', ph') per (stage, kind) in its record (wk, wph), field for field as pipeproof.

In a cluster or with several rings, signals, slots and barriers gain a CTA and a ring index
(`full_sig[cta][ring][stage]`, only the dimensions that exist), an agent record keeps its
stage, phase, ready flag and window per ring (`stage`, `stage_acc`, ...), each group is in one
CTA, and an in-flight entry carries its destination CTA and ring.

Async reads (read_async) are in-flight entries that name their agent (its index in the model)
and their place in its FIFO (checker/core/inflight.py): reads_in_flight(a) counts an agent's, the
oldest finishes in the landing rule (finish_read moves the others up and lets the commits that
waited for it fire), and read_in_flight counts one as an unfinished read for
overwrite_before_drain. A commit names its agent and counts its agent's commit entries in
flight before it (commits_in_flight, cseq): it fires at cseq 0, and its firing counts the
agent's later commits down (commit_fired; rule R1). An entry names an agent by number, so
with symmetry a group that issues async reads or commits is not a scalarset (its agents keep
their numbers). An async write (write_async) is an async read's entry with the bytes digit
READ_WRITES: copy_in_flight counts it (the slot is being written), read_in_flight does not. The
exit check (rule R2) is foreign_in_flight(c), or with the strict reading targets_cta(c) and a
check in the landing rule.
"""
from __future__ import annotations

from pipeproof.backends.printed import statements, sym
from pipeproof.checker.models.ir import (
    COMMIT_ON_FULL, ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ, IR, KIND_MESSAGES, READ_WRITES, SIGNALS, Group,
    any_pc_guarded, comment_lines, item_tag, read_miss_text,
)
from pipeproof.checker.models.signals import murphi_signals
from pipeproof.checker.models.steps import (
    Advance, AwaitReads, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue,
    MovePc, Observe, PassWindow, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
    tag_text,
)
from pipeproof.backends.base import EMPTY, FULL
from pipeproof.spec.schema import Spec

def to_murphi(spec: Spec, symmetry: bool = False, strict_exit: bool = False) -> str:
    """The spec as a Murphi model for Rumur (check with `--deadlock-detection stuck`);
    `strict_exit`: a CTA gone with its own copies or commits in flight is inflight_at_exit
    (ir.IR)."""
    ir = IR(spec, "murphi", strict_exit=strict_exit)
    return _Murphi(ir, symmetry).text()


class _Murphi:
    def __init__(self, ir: IR, symmetry: bool):
        self.ir = ir
        self.symmetry = symmetry
        self.out: list[str] = []

    def w(self, *lines):
        self.out.extend(lines)

    # -------------------------------------------------------------- where things are
    def _ix(self, cta, ring, stage) -> str:
        return "".join(f"[{i}]" for i, _ in self.ir.dims(cta, ring, stage))

    def _sig(self, kind: int, cta, ring, stage) -> str:
        return f"{SIGNALS[kind][0]}_sig{self._ix(cta, ring, stage)}"

    def _slot_at(self, cta, ring, stage, p) -> str:
        return f"slot_tag{self._ix(cta, ring, stage)}" + (f"[{p}]" if self.ir.n_parts > 1 else "")

    def _args(self, cta, ring, stage) -> str:
        """A slot's or signal's coordinates as arguments (store_tag, copy_in_flight)."""
        return ", ".join(i for i, _ in self.ir.dims(cta, ring, stage))

    def _params(self) -> str:
        names = {"CTAS": "c: cta_t", "RINGS": "r: ring_t"}
        return "; ".join(names.get(size, "s: stage_t") for _, size in self.ir.dims("c", "r", "s"))

    def _f(self, A: str, name: str, r: int) -> str:
        """Agent A's field `name` of ring r (stage, phase, ready, wk, wph)."""
        return f"{A}.{name}{self.ir.rings[r].suffix}"

    def _symmetric(self, g: Group) -> bool:
        """Its agents are a scalarset: with symmetry, two or more, and none named by number in
        an in-flight entry (async reads, commits)."""
        return self.symmetry and g.size > 1 and not g.names_agents

    def _agent(self, g: Group, i: str = "i") -> str:
        """The model's number of agent `i` of group g (a group with async reads: not a scalarset)."""
        return str(g.first) if g.size == 1 else f"{g.first} + {i}"

    def _bar(self, bid: str, what: str, cta) -> str:
        return f"{bid}_{what}" + (f"[{cta}]" if self.ir.ctas > 1 else "")

    def _release(self, bid: str, cta) -> str:
        return f"release_{bid}" + (f"_{cta}" if self.ir.ctas > 1 else "")

    def _done(self, cta) -> str:
        """The CTA is gone: all its agents finished (one CTA: all agents)."""
        return "all_done()" if self.ir.ctas == 1 else f"cta_done({cta})"

    def _foreign(self, e: str, cta: str = "c") -> str | None:
        """Entry `e` (not 0) makes CTA `cta` going inflight_at_exit (rule R2): an async read
        of it, or a copy or commit into it from another CTA (peer 1); None where no entry
        can be either."""
        ir = self.ir
        kinds = ([f"{ir.entry_field(e, 'kind')} = {ENTRY_READ}"] if ir.has_reads else []) \
            + ([f"{ir.entry_field(e, 'peer')} = 1"] if ir.has_peer else [])
        if not kinds:
            return None
        into = f"{ir.entry_field(e, 'cta')} = {cta} & " if ir.ctas > 1 else ""
        return into + "(" + " | ".join(kinds) + ")"

    def _count(self, kind: int, ring) -> str:
        """The count a signal of `kind` expects, on ring `ring` (a number, or the decoded r)."""
        if isinstance(ring, int):
            return self.ir.rings[ring].expected(kind)
        return SIGNALS[kind][1] if self.ir.n_rings == 1 else f"{SIGNALS[kind][0]}_count({ring})"

    def text(self) -> str:
        ir = self.ir
        self.w(*comment_lines(ir, "--"))
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
        self.w("const", f"  STAGES: {ir.stages};")
        for r in ir.rings[1:]:
            self.w(f"  {r.const}: {r.stages};  -- ring {r.name}")
        if ir.n_rings > 1:
            self.w(f"  MAXS: {ir.max_stages};  -- the longest ring's stages", f"  RINGS: {ir.n_rings};")
        if ir.ctas > 1:
            self.w(f"  CTAS: {ir.ctas};  -- CTAs in the cluster")
        self.w(f"  TXL: {ir.tx_limit};", f"  PAC: {ir.pac};", f"  CAC: {ir.cac};")
        for r in ir.rings[1:]:
            self.w(f"  {r.expected(FULL)}: {r.pac};", f"  {r.expected(EMPTY)}: {r.cac};")
        if ir.inflight:
            self.w(f"  INF: {ir.inflight};", f"  EV: {ir.ev};", f"  ENB: {ir.enb};")
        if ir.n_parts > 1:
            self.w(f"  NPARTS: {ir.n_parts};  -- parts per slot")
            if ir.inflight:
                self.w(f"  EP: {ir.ep};  -- a copy entry's part + 1")
        if ir.has_peer and ir.inflight:
            self.w("  EPR: 2;  -- an entry's peer flag: a copy or commit from another CTA")
        if ir.names_agents:
            self.w(f"  EAG: {ir.eag};  -- an entry's agent: an async read's, a commit's")
        if ir.has_reads:
            self.w(f"  ESQ: {ir.esq};  -- a read's place in its agent's FIFO; a commit's reads to wait for")
        if ir.has_commits:
            self.w(f"  ECS: {ir.ecs};  -- a commit's earlier commit entries to wait for")
        self.w("", "type", f"  stage_t: 0..{ir.stage_const}-1;", f"  tag_t: -1..{ir.max_tag};",
               f"  pn_t: 0..{ir.pn_max};", f"  pend_t: 0..{ir.pend_max};",
               f"  ph_t: 0..{ir.ph_max};", f"  cnt_t: 0..{ir.max_count};")
        if ir.ctas > 1:
            self.w("  cta_t: 0..CTAS-1;")
        if ir.n_rings > 1:
            self.w("  ring_t: 0..RINGS-1;")
        if ir.has_tx:
            self.w("  tx_t: -TXL..TXL;")
        if ir.n_parts > 1:
            self.w("  part_t: 0..NPARTS-1;")
        if ir.has_window:
            ws = [i.window for g in ir.groups for i in g.ring_info if i.has_window]
            lo, hi = min(w[0] for w in ws), max(w[1] for w in ws)
            self.w(f"  wk_t: {lo}..{hi};  -- a recorded intended phase k'",
                   f"  ik_t: {lo - 1}..{hi + ir.ph_max + 2};  -- an intended phase")
        self.w("  sig_t: record", "    phase_no: pn_t;", "    pending: pend_t;")
        if ir.has_tx:
            self.w("    tx: tx_t;")
        self.w("    observed: boolean;", "  end;")
        if ir.inflight:
            self.w(f"  entry_t: 0..{ir.emax};")
        if ir.names_agents:
            self.w("  agent_t: 0..EAG-1;  -- an agent's number (model order)")
        for g in ir.groups:
            idx = f"scalarset({g.size})" if self._symmetric(g) else f"0..{g.size - 1}"
            self.w(f"  {g.ident}_id: {idx};", f"  {g.ident}_t: record",
                   f"    pc: 0..{g.length};", f"    item: 0..{g.items};")
            for ring, info in ir.group_rings(g):
                self.w(f"    stage{ring.suffix}: stage_t;",
                       f"    phase{ring.suffix}: {info.init_phase}..{info.phase_max};")
                if info.has_try:
                    self.w(f"    ready{ring.suffix}: boolean;")
            if g.has_sync:
                self.w("    at_sync: boolean;")
            for b in g.arrives:
                bid, _, gmax = ir.barriers[b]
                self.w(f"    arrived_{bid}: 0..{gmax + 1};  -- the generation it last sync_arrived in, + 1")
            for ring, info in ir.group_rings(g):
                if info.has_window:
                    self.w("    -- the phase_alias window's last passed wait per (stage, kind): k' and ph'"
                           + (f" (ring {ring.name})" if ring.index else ""),
                           f"    wk{ring.suffix}: array [stage_t] of array [0..1] of wk_t;",
                           f"    wph{ring.suffix}: array [stage_t] of array [0..1] of "
                           f"{info.window[2]}..{info.window[3]};")
            self.w("  end;")
        slot = "array [part_t] of tag_t" if ir.n_parts > 1 else "tag_t"
        self.w("", "var", f"  full_sig: {self._arr('sig_t')};", f"  empty_sig: {self._arr('sig_t')};",
               f"  slot_tag: {self._arr(slot)};")
        if ir.inflight:
            self.w("  inflight: array [0..INF-1] of entry_t;  -- sorted, largest first; 0 = unused")
        for g in ir.groups:
            self.w(f"  {g.ident}: array [{g.ident}_id] of {g.ident}_t;  -- {g.label}")
        per_cta = (lambda t: f"array [cta_t] of {t}") if ir.ctas > 1 else (lambda t: t)
        for bid, count, gmax in ir.barriers:
            self.w(f"  {bid}_arr: {per_cta(f'0..{max(count - 1, 0)}')};  -- arrivals in the current generation"
                   + (" (per CTA)" if ir.ctas > 1 else ""),
                   f"  {bid}_gen: {per_cta(f'0..{gmax}')};  -- completed generations")
        self.w("")

    def _arr(self, elem: str) -> str:
        """An array over the CTAs, rings and stages that exist, of `elem`."""
        for _, size in reversed(self.ir.dims("", "", "")):
            elem = f"array [{ {'CTAS': 'cta_t', 'RINGS': 'ring_t'}.get(size, 'stage_t') }] of {elem}"
        return elem

    # -------------------------------------------------------------- functions
    def functions(self):
        self.w(*murphi_signals(self.ir))
        self.done_functions()
        if self.ir.inflight:
            self.inflight_functions()
        self.program_functions()
        self.store_functions()

    def done_functions(self):
        """all_done, cta_done (a cluster) and the rings' counts (several rings)."""
        ir = self.ir
        # all agents finished; in a cluster, all agents of a CTA (a CTA without agents is gone)
        conj = " & ".join(f"(forall i: {g.ident}_id do {g.ident}[i].pc = {g.length} end)" for g in ir.groups)
        self.w("function all_done(): boolean;", "begin", f"  return {conj};", "end;", "")
        if ir.ctas > 1:
            self.w("-- CTA c is gone: every agent of it finished.", "function cta_done(c: cta_t): boolean;",
                   "begin")
            for c in range(ir.ctas):
                conj = " & ".join(f"(forall i: {g.ident}_id do {g.ident}[i].pc = {g.length} end)"
                                  for g in ir.groups_in(c)) or "true"
                self.w(f"  if c = {c} then return {conj}; endif;")
            self.w("  return true;", "end;", "")
        if ir.n_rings > 1:
            for kind in (FULL, EMPTY):
                name = SIGNALS[kind][0]
                self.w(f"function {name}_count(r: ring_t): pend_t;", "begin")
                for ring in ir.rings[:-1]:
                    self.w(f"  if r = {ring.index} then return {ring.expected(kind)}; endif;")
                self.w(f"  return {ir.rings[-1].expected(kind)};", "end;", "")

    def inflight_functions(self):
        """inf_add, inf_remove, copy_in_flight, the entries that name their agent, the exit's
        targets_cta / foreign_in_flight and bytes_of."""
        ir = self.ir
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
        head = lambda kind: ir.entry_expr({"kind": kind, "cta": "c", "ring": "r", "stage": "s"}, upto="stage")
        at = f"inflight[j] / ({ir.entry_unit('stage')})"
        filling = f"{at} = {head(ENTRY_COPY)}" + (  # or an async write of it (write_async)
            f" | {at} = {head(ENTRY_READ)} & {ir.entry_field('inflight[j]', 'bytes')} = {READ_WRITES}"
            if ir.has_writes else "")
        self.w("  inflight[INF-1] := 0;", "end;", "",
               "-- Slot s is still being filled: a copy into it, or an async write of it, is in flight.",
               f"function copy_in_flight({self._params()}): boolean;", "begin",
               f"  return exists j: 0..INF-1 do inflight[j] != 0 & ({filling}) end;",
               "end;", "")
        if ir.names_agents:
            self.agent_entry_functions()
        if ir.ctas > 1 and ir.strict_exit:
            self.w("-- Something in flight (a copy, a commit or an async read) targets CTA c.",
                   "function targets_cta(c: cta_t): boolean;", "begin",
                   f"  return exists j: 0..INF-1 do inflight[j] != 0 & "
                   f"{ir.entry_field('inflight[j]', 'cta')} = c end;", "end;", "")
        foreign = self._foreign("inflight[j]")
        if foreign and not ir.strict_exit:
            self.w("-- An async read of CTA c, or a copy or commit into c from another CTA, is in flight",
                   "-- (inflight_at_exit when c goes; its own copies and commits are the engine's warning",
                   "-- unawaited_at_exit, not reported here).",
                   f"function foreign_in_flight({'c: cta_t' if ir.ctas > 1 else ''}): boolean;", "begin",
                   f"  return exists j: 0..INF-1 do inflight[j] != 0 & {foreign} end;", "end;", "")
        if ir.has_tx:
            self.w("function bytes_of(b: 0..ENB-1): 0..TXL;", "begin")
            for i, b in enumerate(ir.bytes_vals[:-1]):
                self.w(f"  if b = {i} then return {min(b, ir.tx_limit)}; endif;")
            self.w(f"  return {min(ir.bytes_vals[-1], ir.tx_limit)};", "end;", "")

    def program_functions(self):
        """What the programs need: settle (every=/at=), the named barriers' releases and
        reads_pending per group and ring."""
        ir = self.ir
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
            for c in range(ir.ctas):
                users = [(g, q) for g in ir.groups_in(c) for q in g.syncs[b]]
                if not users:
                    continue
                self.w(f"-- The last arrival of a generation of {ir.barrier_names[b]} releases every agent blocked "
                       "in its sync" + (f" (in CTA {c})." if ir.ctas > 1 else "."),
                       f"procedure {self._release(bid, c)}();", "begin")
                for g, q in users:
                    A = f"{g.ident}[j]"
                    self.w(f"  for j: {g.ident}_id do", f"    if {A}.at_sync & {A}.pc = {q} then",
                           f"      {A}.at_sync := false;")
                    self.w(*("      " + line for line in self._next_lines(g, f"{A}.pc", f"{A}.item", p=q)))
                    self.w("    endif;", "  end;")
                self.w("end;", "")

        # reads_pending per group and ring: simulate the program forward, ignoring waits
        for g in ir.groups:
            for ring in ir.rings:
                by_tag = g.reads_by_tag(ring.index)
                if not by_tag:
                    continue
                self.w(f"-- Will this {g.label} agent still read tag t at stage s"
                       + (f" of ring {ring.name}" if ring.index else "") + "? (its program run forward,",
                       "-- waits ignored, as pipeproof's reads_pending)",
                       f"function reads_pending_{g.ident}{ring.suffix}(pc0: 0..{g.length}; item0: 0..{g.items}; "
                       f"st0: stage_t; t: tag_t; s: stage_t): boolean;",
                       f"var pc: 0..{g.length}; item: 0..{g.items}; st: stage_t;", "begin",
                       "  pc := pc0; item := item0; st := st0;",
                       f"  while pc < {g.length} & ({item_tag('item', g.div)} <= t"
                       + (f" | t >= {ir.tag_outside}" if any(t >= 0 for t, _ in by_tag) else "") + ") do")
                adv = g.moving("advance", ring.index)
                rst = g.moving("reset", ring.index)
                at = lambda pcs: any_pc_guarded("pc", "item", pcs, g.guards, " | ", "=", "&")
                for i, ((tag, div), pcs) in enumerate(sorted(by_tag.items())):
                    self.w(f"    {'if' if i == 0 else 'elsif'} {at(pcs)} then",
                           f"      if {tag_text(tag, 'item', div)} = t & st = s then return true; endif;")
                if adv:
                    self.w(f"    elsif {at(adv)} then",
                           f"      if st = {ring.const}-1 then st := 0; else st := st + 1; endif;")
                if rst:
                    self.w(f"    elsif {at(rst)} then", f"      st := {g.ring_info[ring.index].init_stage};")
                self.w("    endif;")
                self.w(*("    " + line for line in self._next_lines(g, "pc", "item")))
                self.w("  end;", "  return false;", "end;", "")

    def store_functions(self):
        """part_in (slots whose parts differ by CTA or ring) and store_tag."""
        ir = self.ir
        params = self._params()
        if not ir.part_everywhere():
            self.w("-- The slots of CTA c have part p of ring r (checker/core/program.py slot_parts).",
                   f"function part_in({params.replace('; s: stage_t', '')}{'; ' if ir.ctas > 1 or ir.n_rings > 1 else ''}"
                   "p: part_t): boolean;", "begin")
            cases = []
            for ring in ir.rings:
                for c in range(ir.ctas):
                    here = ir.parts_in(ring.index, c)
                    if not here:
                        continue
                    where = ([f"c = {c}"] if ir.ctas > 1 else []) + ([f"r = {ring.index}"] if ir.n_rings > 1 else [])
                    cases.append("(" + " & ".join(where + ["(" + " | ".join(f"p = {p}" for p in here) + ")"]) + ")")
            self.w(f"  return {' | '.join(cases) or 'false'};", "end;", "")
        if ir.n_parts == 1:
            self.w("-- A write or landing stores tag t into slot s: overwrite_before_drain if a reader",
                   "-- of the old item has not read it yet.",
                   f"procedure store_tag({params}; t: tag_t);", "begin",
                   f"  if {self._slot_at('c', 'r', 's', 0)} >= 0 & {self._slot_at('c', 'r', 's', 0)} != t then")
            self._overwrite_check(self._slot_at('c', 'r', 's', 0), "    ")
            self.w("  endif;", f"  {self._slot_at('c', 'r', 's', 0)} := t;", "end;", "")
            return
        here = "" if ir.part_everywhere() else \
            f" & part_in({', '.join(i for i, _ in ir.dims('c', 'r', 's')[:-1])}{', ' if ir.ctas > 1 or ir.n_rings > 1 else ''}p)"
        self.w("-- A write or landing stores tag t into part pt of slot s (pt < 0: every part, a",
               "-- consumer-side fill): overwrite_before_drain if a reader of the item a stored-over",
               "-- part held has not read it yet.",
               f"procedure store_tag({params}; pt: -1..NPARTS-1; t: tag_t);", "begin",
               "  for p: part_t do", f"    if (pt < 0 | p = pt){here} then",
               f"      if {self._slot_at('c', 'r', 's', 'p')} >= 0 & {self._slot_at('c', 'r', 's', 'p')} != t then")
        self._overwrite_check(self._slot_at('c', 'r', 's', 'p'), "        ")
        self.w("      endif;", f"      {self._slot_at('c', 'r', 's', 'p')} := t;", "    endif;", "  end;", "end;", "")

    def _overwrite_check(self, old: str, ind: str):
        """error overwrite_before_drain when some agent of the slot's CTA will still read tag
        `old` at stage s of the slot's ring."""
        ir = self.ir
        for g in ir.groups:
            for ring in ir.rings:
                if not g.reads_by_tag(ring.index):
                    continue
                where = ([f"c = {g.cta}"] if ir.ctas > 1 else []) + \
                    ([f"r = {ring.index}"] if ir.n_rings > 1 else [])
                pre = ind + "  " if where else ind
                if where:
                    self.w(f"{ind}if {' & '.join(where)} then")
                flying = (f"read_in_flight({self._agent(g, 'b')}, {self._args('c', 'r', 's')}, {old}) | "
                          if g.async_reads_on(ring.index) else "")  # an async read of it in flight
                self.w(f"{pre}for b: {g.ident}_id do",
                       f"{pre}  if {flying}reads_pending_{g.ident}{ring.suffix}({g.ident}[b].pc, {g.ident}[b].item, "
                       f"{g.ident}[b].stage{ring.suffix}, {old}, s) then",
                       f"{pre}    error \"{KIND_MESSAGES['overwrite_before_drain']}\";", f"{pre}  endif;",
                       f"{pre}end;")
                if where:
                    self.w(f"{ind}endif;")

    def agent_entry_functions(self):
        """Counting, finishing and firing the entries that name their agent (checker/core/inflight.py):
        async reads and commits."""
        ir = self.ir
        field = lambda name: ir.entry_field("inflight[j]", name)
        mine = f"{field('agent')} = a"
        for name, entry, on in (("reads", ENTRY_READ, ir.has_reads), ("commits", ENTRY_COMMIT, ir.has_commits)):
            if not on:
                continue
            what = "async reads" if entry == ENTRY_READ else "commit entries"
            self.w(f"-- How many {what} agent a has in flight (checker/core/inflight.py {name}_in_flight).",
                   f"function {name}_in_flight(a: agent_t): 0..INF;", "var n: 0..INF;", "begin", "  n := 0;",
                   "  for j: 0..INF-1 do",
                   f"    if inflight[j] != 0 & {field('kind')} = {entry} & {mine} then n := n + 1; endif;",
                   "  end;", "  return n;", "end;", "")
        self.w("-- The entries sorted again (largest first) after some were rewritten in place.",
               "procedure inf_sort();", "var e: entry_t; k: 0..INF-1; stop: boolean;", "begin")
        if ir.inflight > 1:
            self.w("  for i: 1..INF-1 do", "    e := inflight[i];", "    k := i;", "    stop := false;",
                   "    while !stop do", "      if k = 0 then stop := true;",
                   "      elsif inflight[k-1] >= e then stop := true;",
                   "      else inflight[k] := inflight[k-1]; k := k - 1;", "      endif;", "    end;",
                   "    inflight[k] := e;", "  end;")
        self.w("end;", "")
        if ir.has_reads:
            entry = ir.entry_expr({"kind": ENTRY_READ, "cta": "c", "ring": "r", "stage": "s", "value": "t + 1",
                                   "agent": "a"}, upto="agent")
            self.w("-- An async read of tag t by agent a from slot s is in flight: an unfinished read.",
                   f"function read_in_flight(a: agent_t; {self._params()}; t: tag_t): boolean;", "begin",
                   f"  return exists j: 0..INF-1 do inflight[j] != 0 & inflight[j] / ({ir.entry_unit('agent')}) = "
                   f"{entry} end;", "end;", "",
                   "-- Agent a's oldest async read finished (checker/core/inflight.py finish_read): its later reads",
                   "-- move up its FIFO and the commits that waited for it wait for one read fewer; then the",
                   "-- entries are sorted again.",
                   "procedure finish_read(a: agent_t);", "begin", "  for j: 0..INF-1 do",
                   f"    if inflight[j] != 0 & {mine} & {field('seq')} != 0 then",
                   f"      inflight[j] := inflight[j] - {ir.entry_unit('seq')};", "    endif;", "  end;",
                   "  inf_sort();", "end;", "")
        if ir.has_commits:
            self.w("-- One of agent a's oldest commit entries fired (checker/core/inflight.py commit_fired): each",
                   "-- of its later commits waits for one entry fewer; then the entries are sorted again.",
                   "procedure commit_fired(a: agent_t);", "begin", "  for j: 0..INF-1 do",
                   f"    if inflight[j] != 0 & {field('kind')} = {ENTRY_COMMIT} & {mine} & {field('cseq')} != 0 then",
                   f"      inflight[j] := inflight[j] - {ir.entry_unit('cseq')};", "    endif;", "  end;",
                   "  inf_sort();", "end;", "")

    def _in_window(self, g: Group, A: str, kind: int, phase_no: str, r: int = 0) -> str:
        """Agent `A` (of group g) is inside its phase window on its stage's signal `kind` of
        ring r (semantics.in_phase_window): from its phase alone, or from its last passed wait."""
        info = g.ring_info[r]
        if not info.has_window:
            return f"in_window({phase_no}, {self._f(A, 'phase', r)}, {info.init_phase})"
        w = f"[{self._f(A, 'stage', r)}][{kind}]"
        return (f"in_window_at({phase_no}, intended_after({self._f(A, 'wk', r)}{w}, "
                f"{self._f(A, 'wph', r)}{w}, {self._f(A, 'phase', r)}))")

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
        names = ("phase_no", "pending", "tx")[:3 if ir.has_tx else 2]
        self.w("startstate \"init\"", "begin")
        loops = [(f"for {i}: {'cta_t' if size == 'CTAS' else 'stage_t'} do", i)
                 for i, size in ir.dims("c", "r", "s") if size != "RINGS"]
        ind = "  " * (len(loops) + 1)
        self.w(*("  " * (k + 1) + head for k, (head, _) in enumerate(loops)))
        for ring in ir.rings:
            for kind in (FULL, EMPTY):
                sig = self._sig(kind, "c", ring.index, "s")
                init = ir.signal_rules().init(sym(ring.expected(kind), "murphi"))  # the backend's init, printed
                for name, value in zip(names, init):
                    self.w(*(ind + line for line in statements(f"{sig}.{name} := {{}};", value, "murphi")))
                self.w(f"{ind}{sig}.observed := false;")
            slot = self._slot_at("c", ring.index, "s", "p")
            self.w(ind + (f"for p: part_t do {slot} := -1; end;" if ir.n_parts > 1 else f"{slot} := -1;"))
        self.w(*("  " * (k + 1) + "end;" for k in reversed(range(len(loops)))))
        if ir.inflight:
            self.w("  for j: 0..INF-1 do inflight[j] := 0; end;")
        for g in ir.groups:
            A = f"{g.ident}[i]"
            self.w(f"  for i: {g.ident}_id do",
                   f"    {A}.pc := {g.init_pc}; {A}.item := {g.init_item};")
            for ring, info in ir.group_rings(g):
                self.w(f"    {self._f(A, 'stage', ring.index)} := {info.init_stage}; "
                       f"{self._f(A, 'phase', ring.index)} := {info.init_phase};")
                if info.has_try:
                    self.w(f"    {self._f(A, 'ready', ring.index)} := false;")
            if g.has_sync:
                self.w(f"    {A}.at_sync := false;")
            for b in g.arrives:
                self.w(f"    {A}.arrived_{ir.barriers[b][0]} := 0;")
            for ring, info in ir.group_rings(g):
                if info.has_window:  # (k', ph') = (-(p0 mod 2), p0): no wait passed yet
                    self.w("    for s: stage_t do for k: 0..1 do",
                           f"      {self._f(A, 'wk', ring.index)}[s][k] := {-(info.init_phase % 2)}; "
                           f"{self._f(A, 'wph', ring.index)}[s][k] := {info.init_phase};", "    end; end;")
            self.w("  end;")
        for bid, _, _ in ir.barriers:
            if ir.ctas > 1:
                self.w(f"  for c: cta_t do {bid}_arr[c] := 0; {bid}_gen[c] := 0; end;")
            else:
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
        """The op at `p` as one rule: its actions (checker/models/steps.py), printed."""
        op, k = g.ops[p]
        A = f"{g.ident}[i]"
        name = op.text or op.name
        if k >= 0:  # one step of a drain
            name = f"{op.name} (step {k + 1} of {self.ir.rings[g.rings[p]].stages})"
        guard = [f"{A}.pc = {p}"]
        body: list[str] = []
        for act in step_actions(self.ir, g, p):
            self._act(g, p, A, act, guard, body)
        self._emit_rule(g, p, name, guard, body)

    def _act(self, g: Group, p: int, A: str, act, guard: list, body: list):
        """Print one step action of agent `A`: onto the rule's guard or its body."""
        ir = self.ir
        r = getattr(act, "ring", 0)
        stage, phase, ready = (self._f(A, f, r) for f in ("stage", "phase", "ready"))
        sig = lambda kind, cta=g.cta: self._sig(kind, cta, r, stage)
        tag = lambda act: tag_text(act.tag, A + ".item", act.div)
        gone = lambda dst: [f"if cta_done({dst}) then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;"]
        if isinstance(act, AwaitSignal):
            ok = f"parity_ready({sig(act.kind)}.phase_no, {phase})"
            guard.append(f"({ready} | {ok})" if act.unless else ok)
        elif isinstance(act, Observe):
            body.append(f"if !{ready} then {sig(act.kind)}.observed := true; endif;"
                        if act.unless else f"{sig(act.kind)}.observed := true;")
        elif isinstance(act, CheckWindow):
            body += [f"if !{self._in_window(g, A, act.kind, sig(act.kind) + '.phase_no', r)} then",
                     f"  error \"{KIND_MESSAGES['phase_alias']}\";", "endif;"]
        elif isinstance(act, PassWindow):
            w = f"[{stage}][{act.kind}]"
            wk, wph = self._f(A, "wk", r) + w, self._f(A, "wph", r) + w
            p0 = g.ring_info[r].init_phase
            k = f"intended_after({wk}, {wph}, {phase})"
            record = ([f"{wk} := {k};", f"{wph} := {phase};"] if act.raw else
                      [f"{wk} := {k} - ({phase} - {p0});", f"{wph} := {p0};"])
            flag = {"always": "", "ready": ready, "not_ready": f"!{ready}"}[act.when]
            body += [f"if {flag} then", *("  " + line for line in record), "endif;"] if flag else record
        elif isinstance(act, TryReady):
            body += [f"if parity_ready({sig(act.kind)}.phase_no, {phase}) then",
                     f"  {ready} := true; {sig(act.kind)}.observed := true;",
                     "else", f"  {ready} := false;", "endif;"]
        elif isinstance(act, Update):
            tx = f", {act.dtx}" if ir.has_tx else ""
            for dst in act.to or (g.cta,):
                if dst != g.cta:
                    body += gone(dst)  # an arrival into a gone CTA
                body.append(f"sig_update({sig(act.kind, dst)}, {self._count(act.kind, r)}, {act.arrivals}{tx});")
        elif isinstance(act, Trap):
            body.append(f"error \"{KIND_MESSAGES[act.kind]}\";")
        elif isinstance(act, AwaitReads):
            guard.append(f"reads_in_flight({self._agent(g)}) <= {act.n}")
        elif isinstance(act, Issue):
            me = self._agent(g)
            for k, dst in enumerate(act.to or (g.cta,)):
                who = {}
                if act.names_agent:  # the agent's reads and commit entries in flight before this op
                    # (the k entries of this op added so far are not earlier commits)
                    who = {"agent": me, "seq": f"reads_in_flight({me})",
                           "cseq": f"commits_in_flight({me})" + (f" - {k}" if k else "")}
                if dst != g.cta:
                    body += gone(dst)  # a copy or commit into a gone CTA
                body.append(f"inf_add({act.expr(ir, dst, stage, A + '.item', peer=int(dst != g.cta), **who)});")
        elif isinstance(act, Store):
            part = f"{act.part}, " if ir.n_parts > 1 else ""
            body.append(f"store_tag({self._args(g.cta, r, stage)}, {part}{tag(act)});")
        elif isinstance(act, CheckRead):
            cond = read_miss_text(ir, g, p, A + ".item", tag(act),
                                  lambda q: self._slot_at(g.cta, r, stage, q), "murphi")
            if ir.inflight:
                cond = f"({cond}) | copy_in_flight({self._args(g.cta, r, stage)})"
            body += [f"if {cond} then", f"  error \"{KIND_MESSAGES['read_before_fill']}\";", "endif;"]
        elif isinstance(act, Advance):
            body += self._advance(A, r)
        elif isinstance(act, Reset):
            info = g.ring_info[r]
            body.append(f"{stage} := {info.init_stage}; {phase} := {info.init_phase};")
        elif isinstance(act, RecordArrival):
            body.append(f"{A}.arrived_{act.barrier} := {self._bar(act.barrier, 'gen', g.cta)} + 1;")
        elif isinstance(act, BarrierArrive):
            arr, gen = self._bar(act.barrier, "arr", g.cta), self._bar(act.barrier, "gen", g.cta)
            body += [f"if {arr} + 1 < {act.count} then", f"  {arr} := {arr} + 1;"]
            if act.blocking:
                guard.append(f"!{A}.at_sync")
                body.append(f"  {A}.at_sync := true;  -- blocked here until the generation completes")
            done = [f"{self._release(act.barrier, g.cta)}();"] if act.release else []
            for then in act.on_complete:
                self._act(g, p, A, then, guard, done)
            body += ["else", f"  {arr} := 0; {gen} := {gen} + 1;"]
            body += ["  " + line for line in done] + ["endif;"]
        elif isinstance(act, BarrierWait):
            gen, mine = self._bar(act.barrier, "gen", g.cta), f"{A}.arrived_{act.barrier}"
            guard.append(f"({mine} = 0 & {gen} >= 1 | {mine} >= 1 & {gen} >= {mine})"
                         if act.arrived else f"{gen} >= 1")
        elif isinstance(act, MovePc):
            body += self._next_lines(g, f"{A}.pc", f"{A}.item", p=p)
        elif isinstance(act, ExitCheck):
            # its CTA is gone now: with the strict reading, anything in flight into it is
            # inflight_at_exit; else only an async read of it or a peer's copy or commit (R2)
            if ir.strict_exit:
                find = "" if ir.ctas == 1 else f" & targets_cta({g.cta})"
            elif self._foreign("e"):
                find = f" & foreign_in_flight({g.cta if ir.ctas > 1 else ''})"
            else:
                return
            body += [f"if {A}.pc = {g.length} & inflight[0] != 0 then",
                     f"  if {self._done(g.cta)}{find} then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;",
                     "endif;"]
        else:  # pragma: no cover
            raise AssertionError(act)

    def _emit_rule(self, g: Group, p: int, name: str, guard, body):
        self.w(f"  rule \"{g.label} pc {p}: {name}\"", "    " + " & ".join(guard), "  ==>", "  begin")
        self.w(*("    " + line for line in body))
        self.w("  end;", "")

    def _advance(self, A: str, r: int = 0) -> list[str]:
        stage, phase = self._f(A, "stage", r), self._f(A, "phase", r)
        return [f"if {stage} = {self.ir.rings[r].const}-1 then {stage} := 0; {phase} := {phase} + 1; "
                f"else {stage} := {stage} + 1; endif;"]

    def landing_rule(self):
        ir = self.ir
        tx = ", 0" if ir.has_tx else ""
        coords = [(i, size) for i, size in ir.dims("c", "r", "s")]
        decl = " ".join({"CTAS": "c: cta_t;", "RINGS": "r: ring_t;"}.get(size, "s: stage_t;")
                        for _, size in coords)
        decl += (" pt: -1..NPARTS-1;" if ir.n_parts > 1 else "") + (" ag: agent_t;" if ir.names_agents else "")
        where = ", in the CTA it targets." if ir.ctas > 1 else "."
        if ir.has_reads:
            self.w("-- In-flight entry j lands (a copy: stores its item, then complete_tx of its bytes on",
                   "-- full), fires (a commit: arrives n on empty; commit_full: on full) or finishes (an async read: only the",
                   "-- oldest of its agent's; a commit that waits for reads does not fire), in one step" + where)
        else:
            self.w("-- In-flight entry j lands (a copy: stores its item, then complete_tx of its bytes on",
                   "-- full) or fires (a commit: arrives n on empty; commit_full: on full), in one step" + where)
        # not a later read, nor a commit that waits for its agent's reads or commits (rule R1)
        ready = f" & inflight[j] % ({ir.ready_unit()}) = 0" if ir.ready_unit() else ""
        self.w("ruleset j: 0..INF-1 do", "  rule \"land or fire in-flight entry\"", f"    inflight[j] != 0{ready}",
               "  ==>", f"  var e: entry_t; {decl}", "  begin", "    e := inflight[j];", "    inf_remove(j);")
        # the digits below the bytes' (IR.entry_digits): its agent and part are kept, the peer
        # flag and the seq and cseq digits (0 here) dropped
        keep = {"agent": "    ag := e % EAG;", "part": "    pt := e % EP - 1;"}
        for name, size in reversed(ir.entry_digits()):
            if name == "bytes":
                break
            self.w(*([keep[name]] if name in keep else []), f"    e := e / {size};")
        unit = "ENB*EV"
        for i, size in reversed(coords):
            self.w(f"    {i} := (e / ({unit})) % {size};")
            unit += f"*{size}"
        c = "c" if ir.ctas > 1 else 0
        r = "r" if ir.n_rings > 1 else 0
        ind = "    "
        if ir.has_reads:  # a read finishing changes nothing but the FIFO (not even in a gone CTA)
            self.w(f"    if e / ({unit}) = {ENTRY_READ} then", "      finish_read(ag);", "    else")
            ind = "      "
        if ir.strict_exit:  # a landing or firing into a gone CTA (rule R2: only the strict reading)
            self.w(f"{ind}if {self._done(c)} then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;")
        self.w(f"{ind}if e / ({unit}) = {ENTRY_COPY} then")
        part = "pt, " if ir.n_parts > 1 else ""
        self.w(f"{ind}  store_tag({self._args(c, r, 's')}, {part}(e / ENB) % EV - 1);")
        if ir.has_tx:
            self.w(f"{ind}  sig_update({self._sig(FULL, c, r, 's')}, {self._count(FULL, r)}, 0, -bytes_of(e % ENB));")
        self.w(f"{ind}else", *([f"{ind}  commit_fired(ag);"] if ir.has_commits else []))
        if ir.full_commits:  # a commit_full's entry (bytes digit COMMIT_ON_FULL) fires on full
            self.w(f"{ind}  if e % ENB = {COMMIT_ON_FULL} then",
                   f"{ind}    sig_update({self._sig(FULL, c, r, 's')}, {self._count(FULL, r)}, (e / ENB) % EV{tx});",
                   f"{ind}  else",
                   f"{ind}    sig_update({self._sig(EMPTY, c, r, 's')}, {self._count(EMPTY, r)}, (e / ENB) % EV{tx});",
                   f"{ind}  endif;")
        else:
            self.w(f"{ind}  sig_update({self._sig(EMPTY, c, r, 's')}, {self._count(EMPTY, r)}, (e / ENB) % EV{tx});")
        self.w(f"{ind}endif;")
        if ir.has_reads:
            self.w("    endif;")
        self.w("  end;", "end;", "")

    # -------------------------------------------------------------- invariants
    def invariants(self):
        ir = self.ir
        parts = []
        for g in ir.groups:
            conds = []
            for p, kind, unless, r in ir.blocking_waits(g):
                A = f"{g.ident}[i]"
                at = f"{A}.pc = {p}" + (f" & !{self._f(A, 'ready', r)}" if unless else "")
                k = next(key for key, (name, _) in SIGNALS.items() if name == kind)
                phase_no = f"{self._sig(k, g.cta, r, self._f(A, 'stage', r))}.phase_no"
                conds.append(f"(({at}) -> {self._in_window(g, A, k, phase_no, r)})")
            if conds:
                parts.append(f"(forall i: {g.ident}_id do\n     " + "\n   & ".join(conds) + "\n   end)")
        if parts:
            self.w("-- phase_alias: every agent at a blocking wait is inside its phase window.",
                   "invariant \"phase_alias\"", "  " + "\n  & ".join(parts) + ";", "")
