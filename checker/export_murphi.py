"""The Murphi export (for Rumur): the compiled model as one rule per op of each agent.

checker/export_models.py describes the export; checker/export_ir.py has what it shares with
the Promela export. The signal rules (parity_ready, in_window, intended_after, in_window_at,
sig_update, the start state's signals) are printed from backends/nvidia.py
(backends/printed.py), not written here: Murphi has no conditional expression, so each printed
`select` is an if-chain.

Slots of several parts (docs/rules.md "Slot parts") keep one tag per part (slot_tag[s][p]); a
copy's in-flight entry carries its part. A group whose program has a `reset` keeps the phase
window's (k', ph') per (stage, kind) in its record (wk, wph), field for field as pipeproof.
"""
from __future__ import annotations

from pipeproof.backends.nvidia import TX_LIMIT
from pipeproof.backends.printed import condition, lift, statements, sym
from pipeproof.checker.export_ir import (
    ENTRY_COPY, IR, KIND_MESSAGES, SIGNALS, Group, any_pc_guarded, comment_lines, read_miss_text,
    signal_backend, signal_update,
)
from pipeproof.checker.export_steps import (
    Advance, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue,
    MovePc, Observe, PassWindow, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
    tag_text,
)
from pipeproof.spec.schema import Spec

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
        self.w("const", f"  STAGES: {ir.stages};", f"  TXL: {TX_LIMIT};", f"  PAC: {ir.pac};",
               f"  CAC: {ir.cac};")
        if ir.inflight:
            self.w(f"  INF: {ir.inflight};", f"  EV: {ir.ev};", f"  ENB: {ir.enb};")
        if ir.n_parts > 1:
            self.w(f"  NPARTS: {ir.n_parts};  -- parts per slot")
            if ir.inflight:
                self.w(f"  EP: {ir.ep};  -- a copy entry's part + 1")
        self.w("", "type", "  stage_t: 0..STAGES-1;", f"  tag_t: -1..{ir.max_tag};",
               f"  pn_t: 0..{ir.pn_max};", f"  pend_t: 0..{ir.pend_max};",
               f"  ph_t: 0..{ir.ph_max};", f"  cnt_t: 0..{ir.max_count};")
        if ir.has_tx:
            self.w("  tx_t: -TXL..TXL;")
        if ir.n_parts > 1:
            self.w("  part_t: 0..NPARTS-1;")
        if ir.has_window:
            ws = [g.window for g in ir.groups if g.has_window]
            lo, hi = min(w[0] for w in ws), max(w[1] for w in ws)
            self.w(f"  wk_t: {lo}..{hi};  -- a recorded intended phase k'",
                   f"  ik_t: {lo - 1}..{hi + ir.ph_max + 2};  -- an intended phase")
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
            if g.has_window:
                self.w("    -- the phase_alias window's last passed wait per (stage, kind): k' and ph'",
                       "    wk: array [stage_t] of array [0..1] of wk_t;",
                       f"    wph: array [stage_t] of array [0..1] of {g.window[2]}..{g.window[3]};")
            self.w("  end;")
        slot = "array [part_t] of tag_t" if ir.n_parts > 1 else "tag_t"
        self.w("", "var", "  full_sig: array [stage_t] of sig_t;", "  empty_sig: array [stage_t] of sig_t;",
               f"  slot_tag: array [stage_t] of {slot};")
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
        nv = signal_backend()
        m = lambda text: sym(text, "murphi")
        self.w("-- backends.nvidia.ready, printed: the phase of parity ph has completed.",
               "function parity_ready(pn: pn_t; ph: ph_t): boolean;", "begin",
               *("  " + line for line in statements("return {};", nv.ready(m("pn"), m("ph")), "murphi")),
               "end;", "",
               "-- backends.nvidia.in_window, printed: a parity wait at phase ph (initial phase p0)",
               "-- is meaningful while phase_no is the phase it means or the next one.",
               "function in_window(pn: pn_t; ph: ph_t; p0: ph_t): boolean;", "begin",
               *("  " + line for line in statements("return {};", nv.in_window(m("pn"), m("ph"), m("p0")),
                                                    "murphi")),
               "end;", "")
        if ir.has_window:
            self.w("-- backends.nvidia.intended_after, printed: the phase a waiter at ph means, from its",
                   "-- last passed wait (k', ph') on the signal.",
                   "function intended_after(kl: wk_t; pl: ph_t; ph: ph_t): ik_t;", "begin",
                   *("  " + line for line in statements(
                       "return {};", nv.intended_after(m("kl"), m("pl"), m("ph")), "murphi")),
                   "end;", "",
                   "-- backends.nvidia.in_window_at, printed: phase_no is the phase k meant or the next.",
                   "function in_window_at(pn: pn_t; k: ik_t): boolean;", "begin",
                   *("  " + line for line in statements("return {};", nv.in_window_at(m("pn"), m("k")),
                                                        "murphi")),
                   "end;", "")
        u = signal_update("murphi", "s.{}", "expected", "cnt", "dtx", ir.has_tx)
        types = {"phase_no": "pn_t", "pending": "pend_t", "tx": "tx_t"}
        dtx = "; dtx: -TXL..TXL" if ir.has_tx else ""
        self.w("-- One atomic mbarrier update, printed from backends.nvidia.update: cnt arrivals and",
               "-- tx += dtx, then the phase check. Every new field is computed from the old ones",
               "-- before any is stored.",
               f"procedure sig_update(var s: sig_t; expected: pend_t; cnt: cnt_t{dtx});",
               "var " + " ".join(f"new_{name}: {types[name]};" for name, _ in u.fields), "begin")
        for when, kind in ((u.over, "over_arrival"), (u.tx_range, "tx_range")):
            if lift(when) is not False:  # no tx: tx_range folds away
                self.w(f"  if {condition(when, 'murphi')} then error \"{KIND_MESSAGES[kind]}\" endif;")
        if lift(u.completed) is not False:
            self.w(f"  if {condition(u.completed, 'murphi')} then",
                   f"    if s.phase_no >= 1 & !s.observed then error \"{KIND_MESSAGES['over_arrival_ahead']}\" endif;",
                   "    s.observed := false;", "  endif;")
        for name, value in u.fields:
            self.w(*("  " + line for line in statements(f"new_{name} := {{}};", value, "murphi")))
        self.w(*(f"  s.{name} := new_{name};" for name, _ in u.fields), "end;", "")

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
                   f"  return exists j: 0..INF-1 do inflight[j] != 0 & inflight[j] / ({self._unit()}) = {ENTRY_COPY}*STAGES + s end;",
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
            adv = g.moving("advance")
            rst = g.moving("reset")
            at = lambda pcs: any_pc_guarded("pc", "item", pcs, g.guards, " | ", "=", "&")
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

        if ir.n_parts == 1:
            self.w("-- A write or landing stores tag t into slot s: overwrite_before_drain if a reader",
                   "-- of the old item has not read it yet.",
                   "procedure store_tag(s: stage_t; t: tag_t);", "begin",
                   "  if slot_tag[s] >= 0 & slot_tag[s] != t then")
            self._overwrite_check("slot_tag[s]", "    ")
            self.w("  endif;", "  slot_tag[s] := t;", "end;", "")
            return
        self.w("-- A write or landing stores tag t into part pt of slot s (pt < 0: every part, a",
               "-- consumer-side fill): overwrite_before_drain if a reader of the item a stored-over",
               "-- part held has not read it yet.",
               "procedure store_tag(s: stage_t; pt: -1..NPARTS-1; t: tag_t);", "begin",
               "  for p: part_t do", "    if pt < 0 | p = pt then",
               "      if slot_tag[s][p] >= 0 & slot_tag[s][p] != t then")
        self._overwrite_check("slot_tag[s][p]", "        ")
        self.w("      endif;", "      slot_tag[s][p] := t;", "    endif;", "  end;", "end;", "")

    def _overwrite_check(self, old: str, ind: str):
        """error overwrite_before_drain when some agent will still read tag `old` at stage s."""
        for g in self.ir.groups:
            if g.reads_by_tag():
                self.w(f"{ind}for b: {g.ident}_id do",
                       f"{ind}  if reads_pending_{g.ident}({g.ident}[b].pc, {g.ident}[b].item, "
                       f"{g.ident}[b].stage, {old}, s) then",
                       f"{ind}    error \"{KIND_MESSAGES['overwrite_before_drain']}\";", f"{ind}  endif;",
                       f"{ind}end;")

    def _unit(self) -> str:
        """What an entry is divided by to leave its (kind, stage)."""
        return "EP*ENB*EV" if self.ir.n_parts > 1 else "ENB*EV"

    def _slot(self, stage: str, p) -> str:
        return f"slot_tag[{stage}][{p}]" if self.ir.n_parts > 1 else f"slot_tag[{stage}]"

    def _in_window(self, g: Group, A: str, kind: int, phase_no: str) -> str:
        """Agent `A` (of group g) is inside its phase window on its stage's signal `kind`
        (semantics.in_phase_window): from its phase alone, or from its last passed wait."""
        if not g.has_window:
            return f"in_window({phase_no}, {A}.phase, {g.init_phase})"
        w = f"[{A}.stage][{kind}]"
        return f"in_window_at({phase_no}, intended_after({A}.wk{w}, {A}.wph{w}, {A}.phase))"

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
        self.w("startstate \"init\"", "begin", "  for s: stage_t do")
        for sig, expected in (("full_sig[s]", "PAC"), ("empty_sig[s]", "CAC")):
            init = signal_backend().init(sym(expected, "murphi"))  # backends.nvidia.init, printed
            for name, value in zip(names, init):
                self.w(*("    " + line for line in statements(f"{sig}.{name} := {{}};", value, "murphi")))
            self.w(f"    {sig}.observed := false;")
        self.w("    " + ("for p: part_t do slot_tag[s][p] := -1; end;" if ir.n_parts > 1
                            else "slot_tag[s] := -1;"), "  end;")
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
            if g.has_window:  # (k', ph') = (-(p0 mod 2), p0): no wait passed yet
                self.w("    for s: stage_t do for k: 0..1 do",
                       f"      {g.ident}[i].wk[s][k] := {-(g.init_phase % 2)}; "
                       f"{g.ident}[i].wph[s][k] := {g.init_phase};", "    end; end;")
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
        """The op at `p` as one rule: its actions (checker/export_steps.py), printed."""
        op, k = g.ops[p]
        A = f"{g.ident}[i]"
        name = op.text or op.name
        if k >= 0:  # one step of a drain
            name = f"{op.name} (step {k + 1} of {self.ir.stages})"
        guard = [f"{A}.pc = {p}"]
        body: list[str] = []
        for act in step_actions(self.ir, g, p):
            self._act(g, p, A, act, guard, body)
        self._emit_rule(g, p, name, guard, body)

    def _act(self, g: Group, p: int, A: str, act, guard: list, body: list):
        """Print one step action of agent `A`: onto the rule's guard or its body."""
        sig = lambda kind: f"{SIGNALS[kind][0]}_sig[{A}.stage]"
        tag = lambda t: tag_text(t, A + ".item")
        if isinstance(act, AwaitSignal):
            ready = f"parity_ready({sig(act.kind)}.phase_no, {A}.phase)"
            guard.append(f"({A}.ready | {ready})" if act.unless else ready)
        elif isinstance(act, Observe):
            body.append(f"if !{A}.ready then {sig(act.kind)}.observed := true; endif;"
                        if act.unless else f"{sig(act.kind)}.observed := true;")
        elif isinstance(act, CheckWindow):
            body += [f"if !{self._in_window(g, A, act.kind, sig(act.kind) + '.phase_no')} then",
                     f"  error \"{KIND_MESSAGES['phase_alias']}\";", "endif;"]
        elif isinstance(act, PassWindow):
            w = f"[{A}.stage][{act.kind}]"
            k = f"intended_after({A}.wk{w}, {A}.wph{w}, {A}.phase)"
            record = ([f"{A}.wk{w} := {k};", f"{A}.wph{w} := {A}.phase;"] if act.raw else
                      [f"{A}.wk{w} := {k} - ({A}.phase - {g.init_phase});", f"{A}.wph{w} := {g.init_phase};"])
            flag = {"always": "", "ready": f"{A}.ready", "not_ready": f"!{A}.ready"}[act.when]
            body += [f"if {flag} then", *("  " + line for line in record), "endif;"] if flag else record
        elif isinstance(act, TryReady):
            body += [f"if parity_ready({sig(act.kind)}.phase_no, {A}.phase) then",
                     f"  {A}.ready := true; {sig(act.kind)}.observed := true;",
                     "else", f"  {A}.ready := false;", "endif;"]
        elif isinstance(act, Update):
            tx = f", {act.dtx}" if self.ir.has_tx else ""
            body.append(f"sig_update({sig(act.kind)}, {SIGNALS[act.kind][1]}, {act.arrivals}{tx});")
        elif isinstance(act, Trap):
            body.append(f"error \"{KIND_MESSAGES[act.kind]}\";")
        elif isinstance(act, Issue):
            body.append(f"inf_add({act.expr(A + '.stage', A + '.item', self.ir.n_parts > 1)});")
        elif isinstance(act, Store):
            part = f"{act.part}, " if self.ir.n_parts > 1 else ""
            body.append(f"store_tag({A}.stage, {part}{tag(act.tag)});")
        elif isinstance(act, CheckRead):
            cond = read_miss_text(self.ir, act.tag, A + ".item", tag(act.tag),
                                  lambda q: self._slot(A + ".stage", q), "murphi",
                                  g.items if g.body_start <= p < g.body_end else None)
            if self.ir.inflight:
                cond = f"({cond}) | copy_in_flight({A}.stage)"
            body += [f"if {cond} then", f"  error \"{KIND_MESSAGES['read_before_fill']}\";", "endif;"]
        elif isinstance(act, Advance):
            body += self._advance(A)
        elif isinstance(act, Reset):
            body.append(f"{A}.stage := {g.init_stage}; {A}.phase := {g.init_phase};")
        elif isinstance(act, RecordArrival):
            body.append(f"{A}.arrived_{act.barrier} := {act.barrier}_gen + 1;")
        elif isinstance(act, BarrierArrive):
            bid = act.barrier
            body += [f"if {bid}_arr + 1 < {act.count} then", f"  {bid}_arr := {bid}_arr + 1;"]
            if act.blocking:
                guard.append(f"!{A}.at_sync")
                body.append(f"  {A}.at_sync := true;  -- blocked here until the generation completes")
            done = [f"release_{bid}();"] if act.release else []
            for then in act.on_complete:
                self._act(g, p, A, then, guard, done)
            body += ["else", f"  {bid}_arr := 0; {bid}_gen := {bid}_gen + 1;"]
            body += ["  " + line for line in done] + ["endif;"]
        elif isinstance(act, BarrierWait):
            bid = act.barrier
            guard.append(f"({A}.arrived_{bid} = 0 & {bid}_gen >= 1 | "
                         f"{A}.arrived_{bid} >= 1 & {bid}_gen >= {A}.arrived_{bid})"
                         if act.arrived else f"{bid}_gen >= 1")
        elif isinstance(act, MovePc):
            body += self._next_lines(g, f"{A}.pc", f"{A}.item", p=p)
        elif isinstance(act, ExitCheck):
            body += [f"if {A}.pc = {g.length} & inflight[0] != 0 then",
                     f"  if all_done() then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;",
                     "endif;"]
        else:  # pragma: no cover
            raise AssertionError(act)

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
               "  ==>", "  var e: entry_t; s: stage_t;" + (" pt: -1..NPARTS-1;" if ir.n_parts > 1 else ""),
               "  begin", "    e := inflight[j];", "    inf_remove(j);")
        if ir.n_parts > 1:  # the entry's last digit is its part + 1: drop it, keep the part
            self.w("    pt := e % EP - 1;", "    e := e / EP;")
        self.w("    s := (e / (ENB*EV)) % STAGES;",
               f"    if all_done() then error \"{KIND_MESSAGES['inflight_at_exit']}\"; endif;",
               f"    if e / (ENB*EV*STAGES) = {ENTRY_COPY} then",
               "      store_tag(s, pt, (e / ENB) % EV - 1);" if ir.n_parts > 1 else
               "      store_tag(s, (e / ENB) % EV - 1);")
        if ir.has_tx:
            self.w("      sig_update(full_sig[s], PAC, 0, -bytes_of(e % ENB));")
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
                k = next(key for key, (name, _) in SIGNALS.items() if name == kind)
                conds.append(f"(({at}) -> {self._in_window(g, A, k, f'{kind}_sig[{A}.stage].phase_no')})")
            if conds:
                parts.append(f"(forall i: {g.ident}_id do\n     " + "\n   & ".join(conds) + "\n   end)")
        if parts:
            self.w("-- phase_alias: every agent at a blocking wait is inside its phase window.",
                   "invariant \"phase_alias\"", "  " + "\n  & ".join(parts) + ";", "")
