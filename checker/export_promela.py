"""The Promela export (for SPIN): the compiled model as one d_step per op of each agent.

checker/export_models.py describes the export; checker/export_ir.py has what it shares with
the Murphi export. The signal rules (PARITY_READY, IN_WINDOW, IN_WINDOW_AT, INTENDED_AFTER, sig_update, the
initial signal) are printed from backends/nvidia.py (backends/printed.py), not written here.

Slots of several parts (docs/rules.md "Slot parts") keep one tag per part, part p of stage s
at slot_tag[s*NPARTS + p]; a copy's in-flight entry carries its part. Agents whose program has
a `reset` keep the window's (k', ph') per (stage, kind) in wk[W(a, s, kind)], wph[...].
"""
from __future__ import annotations

from pipeproof.backends.nvidia import TX_LIMIT
from pipeproof.backends.printed import condition, lift, render, sym
from pipeproof.checker.export_ir import (
    ENTRY_COPY, IR, SIGNALS, Group, any_pc_guarded, comment_lines, read_miss_text, signal_backend,
    signal_update,
)
from pipeproof.checker.export_steps import (
    Advance, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue,
    MovePc, Observe, PassWindow, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
    tag_text,
)
from pipeproof.spec.schema import Spec


def to_promela(spec: Spec) -> str:
    """The spec as a Promela model for SPIN."""
    ir = IR(spec, "promela")
    return _Promela(ir).text()


def _text(value) -> str:
    return render(value, "promela")


def _cond(value) -> str:
    return condition(value, "promela")


def _p(text: str):
    return sym(text, "promela")


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
        self.w("/*", *comment_lines(ir, " *"),
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
        if ir.n_parts > 1:
            self.w(f"#define NPARTS {ir.n_parts}  /* parts per slot */")
            if ir.inflight:
                self.w(f"#define EP {ir.ep}  /* a copy entry's part + 1 */")
        if ir.has_window:
            self.w("#define W(a, s, kind) ((((a)*STAGES + (s))*2) + (kind))  /* wk, wph */")
        self.w("")
        self.w("typedef Sig {", f"  {_ptype(0, ir.pn_max)} phase_no;", f"  {_ptype(0, ir.pend_max)} pending;")
        if ir.has_tx:
            self.w("  int tx;")
        self.w("  bit observed", "}", "", "Sig full_sig[STAGES];", "Sig empty_sig[STAGES];",
               f"{_ptype(-1, ir.max_tag + 1)} slot_tag[STAGES{'*NPARTS' if ir.n_parts > 1 else ''}];",
               f"{_ptype(0, max(g.length for g in ir.groups))} pc[NAGENTS];",
               f"{_ptype(0, ir.max_items)} item[NAGENTS];",
               f"{_ptype(0, ir.stages - 1)} stage[NAGENTS];",
               f"{_ptype(0, ir.ph_max)} phase[NAGENTS];")
        if ir.has_window:
            ws = [g.window for g in ir.groups if g.has_window]
            klo, khi = min([0] + [w[0] for w in ws]), max(w[1] for w in ws)  # others keep 0
            plo, phi = min([0] + [w[2] for w in ws]), max(w[3] for w in ws)
            self.w("/* the phase_alias window's last passed wait per (agent, stage, kind): its intended",
                   " * phase k' and the agent's phase ph' then (agents with a reset; others keep 0) */",
                   f"{_ptype(klo, khi)} wk[NAGENTS*STAGES*2];",
                   f"{_ptype(plo, phi)} wph[NAGENTS*STAGES*2];")
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
               "hidden int pn_, pd_, " + ("tx_, " if ir.has_tx else "") + "e_, rt_;",
               "hidden int rp_pc, rp_item, rp_st, b_, k_, ls_;",
               "hidden byte rp_, st_;",
               *(["hidden int pp_, ot_, pe_;"] if ir.n_parts > 1 else []),
               "/* assert(KIND) fails with the kind's name in SPIN's report */",
               "hidden byte read_before_fill, overwrite_before_drain, phase_alias, over_arrival,",
               "           tx_range, inflight_at_exit, inflight_capacity;", "")
        nv = signal_backend()
        self.w("/* backends.nvidia.ready and in_window, printed */",
               "#define PARITY_READY(pn, ph) " + _text(nv.ready(_p("(pn)"), _p("(ph)"))),
               "#define IN_WINDOW(pn, ph, p0) " + _text(nv.in_window(_p("(pn)"), _p("(ph)"), _p("(p0)"))))
        if ir.has_window:
            self.w("/* backends.nvidia.intended_after and in_window_at, printed: the phase meant from the",
                   " * last passed wait (k', ph'), and its window */",
                   "#define INTENDED_AFTER(kl, pl, ph) "
                   + _text(nv.intended_after(_p("(kl)"), _p("(pl)"), _p("(ph)"))),
                   "#define IN_WINDOW_AT(pn, k) " + _text(nv.in_window_at(_p("(pn)"), _p("(k)"))))
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
        u = signal_update("promela", "SG.{}", "(EXPECTED)", "(CNT)", "(DTX)", ir.has_tx)
        temps = {"phase_no": "pn_", "pending": "pd_", "tx": "tx_"}
        used = ", ".join(temps[name] for name, _ in u.fields)
        self.w("/* One atomic mbarrier update, printed from backends.nvidia.update: CNT arrivals and",
               " * tx += DTX, then the phase check. Every new field is computed from the old ones",
               f" * (into {used}) before any is stored. */",
               "inline sig_update(SG, EXPECTED, CNT, DTX) {")
        for when, what in ((u.over, "assert(over_arrival)  /* trap */"),
                           (u.tx_range, "assert(tx_range)  /* trap */")):
            if lift(when) is not False:  # no tx: tx_range folds away
                self.w(f"  if :: {_cond(when)} -> {what} :: else -> skip fi;")
        if lift(u.completed) is not False:
            self.w("  if", f"  :: {_cond(u.completed)} ->",
                   "    if :: SG.phase_no >= 1 && !SG.observed -> assert(over_arrival)  /* ran ahead */",
                   "    :: else -> skip fi;", "    SG.observed = 0", "  :: else -> skip", "  fi;")
        self.w(*(f"  {temps[name]} = {_text(value)};" for name, value in u.fields))
        self.w("  " + "; ".join(f"SG.{name} = {temps[name]}" for name, _ in u.fields), "}", "")
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
                   f"  :: k_ < INF -> if :: inflight[k_] != 0 && inflight[k_] / ({self._unit()}) == {ENTRY_COPY}*STAGES + (S) -> rp_ = 1"
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
                   "      if", f"      :: pc[B] == {be - 1} ->", "        item[B]++;",
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
            adv = g.moving("advance")
            rst = g.moving("reset")
            at = lambda pcs: "(" + any_pc_guarded("rp_pc", "rp_item", pcs, g.guards, " || ", "==", "&&") + ")"
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
        if ir.n_parts == 1:
            self.w("/* A write or landing stores tag T into slot S: overwrite_before_drain if a reader",
                   " * of the old item has not read it yet. */",
                   "inline store_tag(S, T) {", "  rt_ = (T);", "  if",
                   "  :: slot_tag[S] >= 0 && slot_tag[S] != rt_ ->")
            self._overwrite_check("slot_tag[S]", "    ")
            self.w("    skip", "  :: else -> skip", "  fi;", "  slot_tag[S] = rt_", "}", "")
            return
        self.w("/* A write or landing stores tag T into part P of slot S (P < 0: every part, a",
               " * consumer-side fill): overwrite_before_drain if a reader of the item a stored-over",
               " * part held has not read it yet. */",
               "inline store_tag(S, P, T) {", "  rt_ = (T); pp_ = 0;", "  do", "  :: pp_ < NPARTS ->",
               "    if", "    :: (P) < 0 || (P) == pp_ ->", "      ot_ = slot_tag[(S)*NPARTS + pp_];",
               "      if", "      :: ot_ >= 0 && ot_ != rt_ ->")
        self._overwrite_check("ot_", "        ")
        self.w("        skip", "      :: else -> skip", "      fi;", "      slot_tag[(S)*NPARTS + pp_] = rt_",
               "    :: else -> skip", "    fi;", "    pp_++", "  :: else -> break", "  od;",
               "  skip  /* a break must land inside the d_step */", "}", "")

    def _overwrite_check(self, old: str, ind: str):
        """Assert overwrite_before_drain when some agent will still read tag `old` at stage S."""
        for g in self.ir.groups:
            if g.reads_by_tag():
                self.w(f"{ind}b_ = {g.first};", f"{ind}do",
                       f"{ind}:: b_ < {g.first + g.size} ->",
                       f"{ind}  reads_pending_{g.ident}(b_, {old}, S);",
                       f"{ind}  if :: rp_ -> assert(overwrite_before_drain) :: else -> skip fi;",
                       f"{ind}  b_++", f"{ind}:: else -> break", f"{ind}od;")

    def _unit(self) -> str:
        """What an entry is divided by to leave its (kind, stage)."""
        return "EP*ENB*EV" if self.ir.n_parts > 1 else "ENB*EV"

    def _slot(self, stage: str, p: int) -> str:
        return f"slot_tag[{stage}*NPARTS + {p}]" if self.ir.n_parts > 1 else f"slot_tag[{stage}]"

    def _in_window(self, g: Group, a: str, kind: int, phase_no: str) -> str:
        """Agent `a` (of group g) is inside its phase window on its stage's signal `kind`
        (semantics.in_phase_window): from its phase alone, or from its last passed wait."""
        if not g.has_window:
            return f"IN_WINDOW({phase_no}, phase[{a}], {g.init_phase})"
        w = f"W({a}, stage[{a}], {kind})"
        return f"IN_WINDOW_AT({phase_no}, INTENDED_AFTER(wk[{w}], wph[{w}], phase[{a}]))"

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
                   "inline land(J) {", "  e_ = inflight[J];", "  inf_remove(J);")
            if ir.n_parts > 1:  # the entry's last digit is its part + 1: drop it, keep the part
                self.w("  pe_ = e_ % EP - 1;", "  e_ = e_ / EP;")
            self.w("  ls_ = (e_ / (ENB*EV)) % STAGES;",
                   "  if :: ALL_DONE -> assert(inflight_at_exit) :: else -> skip fi;", "  if",
                   f"  :: e_ / (ENB*EV*STAGES) == {ENTRY_COPY} ->",
                   "    store_tag(ls_, pe_, (e_ / ENB) % EV - 1);" if ir.n_parts > 1 else
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
                    k = next(key for key, (name, _) in SIGNALS.items() if name == kind)
                    alias.append(f"({at} && !{self._in_window(g, str(a), k, f'{kind}_sig[stage[{a}]].phase_no')})")
        if alias:
            self.w("/* phase_alias: an agent at a blocking wait outside its phase window */",
                   "#define ALIASED (" + " || \\\n  ".join(alias) + ")",
                   "proctype monitor() {", "end:", "  do", "  :: d_step { ALIASED -> assert(phase_alias) }", "  od", "}", "")
        self.w("init {", "  atomic {", "    d_step {", "      k_ = 0;", "      do", "      :: k_ < STAGES ->",
               "        " + self._sig_init("full_sig[k_]", "PAC") + "; " + self._sig_init("empty_sig[k_]", "CAC")
               + "; " + "; ".join(f"{self._slot('k_', p)} = -1" for p in range(ir.n_parts)) + "; k_++",
               "      :: else -> break", "      od;")
        for g in ir.groups:
            for a in g.agents:
                self.w(f"      pc[{a}] = {g.init_pc}; item[{a}] = {g.init_item}; stage[{a}] = {g.init_stage}; "
                       f"phase[{a}] = {g.init_phase};")
                if g.has_window:  # (k', ph') = (-(p0 mod 2), p0): no wait passed yet
                    self.w(f"      k_ = 0; do :: k_ < STAGES*2 -> wk[{a}*STAGES*2 + k_] = {-(g.init_phase % 2)}; "
                           f"wph[{a}*STAGES*2 + k_] = {g.init_phase}; k_++ :: else -> break od;")
        self.w("    };")
        for g in ir.groups:
            for a in g.agents:
                self.w(f"    run {g.ident}();  /* agent {a}: {ir.model.agents[a].name} */")
        if ir.inflight:
            self.w("    run landings();")
        if alias:
            self.w("    run monitor();")
        self.w("  }", "}")

    def _sig_init(self, sig: str, expected: str) -> str:
        """`mbarrier.init`, printed from backends.nvidia.init."""
        names = ("phase_no", "pending", "tx")[:3 if self.ir.has_tx else 2]
        values = signal_backend().init(_p(expected))
        return "; ".join(f"{sig}.{name} = {_text(v)}" for name, v in zip(names, values))

    def op_step(self, g: Group, p: int):
        """The op at `p` as one d_step: its actions (checker/export_steps.py), printed."""
        op, _ = g.ops[p]
        guard = [f"pc[ME] == {p}"]
        body: list[str] = []
        for act in step_actions(self.ir, g, p):
            self._act(g, p, act, guard, body)
        self._emit_step(p, op.text or op.name, guard, body)

    def _act(self, g: Group, p: int, act, guard: list, body: list):
        """Print one step action: onto the d_step's guard or its body."""
        sig = lambda kind: f"{SIGNALS[kind][0]}_sig[stage[ME]]"
        tag = lambda t: tag_text(t, "item[ME]")
        if isinstance(act, AwaitSignal):
            ready = f"PARITY_READY({sig(act.kind)}.phase_no, phase[ME])"
            guard.append(f"(ready[ME] || {ready})" if act.unless else ready)
        elif isinstance(act, Observe):
            body.append(f"if :: !ready[ME] -> {sig(act.kind)}.observed = 1 :: else -> skip fi"
                        if act.unless else f"{sig(act.kind)}.observed = 1")
        elif isinstance(act, CheckWindow):
            body.append(f"if :: !{self._in_window(g, 'ME', act.kind, sig(act.kind) + '.phase_no')} -> "
                        "assert(phase_alias) :: else -> skip fi")
        elif isinstance(act, PassWindow):
            w = f"W(ME, stage[ME], {act.kind})"
            k = f"INTENDED_AFTER(wk[{w}], wph[{w}], phase[ME])"
            record = (f"wk[{w}] = {k}; wph[{w}] = phase[ME]" if act.raw else
                      f"wk[{w}] = {k} - (phase[ME] - {g.init_phase}); wph[{w}] = {g.init_phase}")
            flag = {"always": "", "ready": "ready[ME]", "not_ready": "!ready[ME]"}[act.when]
            body.append(f"if :: {flag} -> {record} :: else -> skip fi" if flag else record)
        elif isinstance(act, TryReady):
            body.append(f"if :: PARITY_READY({sig(act.kind)}.phase_no, phase[ME]) -> ready[ME] = 1; "
                        f"{sig(act.kind)}.observed = 1 :: else -> ready[ME] = 0 fi")
        elif isinstance(act, Update):
            body.append(f"sig_update({sig(act.kind)}, {SIGNALS[act.kind][1]}, {act.arrivals}, {act.dtx})")
        elif isinstance(act, Trap):
            body.append(f"assert({act.kind})")
        elif isinstance(act, Issue):
            body.append(f"inf_add({act.expr('stage[ME]', 'item[ME]', self.ir.n_parts > 1)})")
        elif isinstance(act, Store):
            part = f"{act.part}, " if self.ir.n_parts > 1 else ""
            body.append(f"store_tag(stage[ME], {part}{tag(act.tag)})")
        elif isinstance(act, CheckRead):
            miss = read_miss_text(self.ir, act.tag, "item[ME]", tag(act.tag),
                                  lambda q: self._slot("stage[ME]", q), "promela",
                                  g.items if g.body_start <= p < g.body_end else None)
            if self.ir.inflight:
                body += ["copy_in_flight(stage[ME])",
                         f"if :: ({miss}) || rp_ -> assert(read_before_fill) :: else -> skip fi"]
            else:
                body.append(f"if :: {miss} -> assert(read_before_fill) :: else -> skip fi")
        elif isinstance(act, Advance):
            body.append(self._advance())
        elif isinstance(act, Reset):
            body.append(f"stage[ME] = {g.init_stage}; phase[ME] = {g.init_phase}")
        elif isinstance(act, RecordArrival):
            body.append(f"arrived_{act.barrier}[ME] = {act.barrier}_gen + 1")
        elif isinstance(act, BarrierArrive):
            bid = act.barrier
            if act.blocking:
                guard.append("!at_sync[ME]")
            done: list[str] = [f"{bid}_arr = 0; {bid}_gen++"] + ([f"release_{bid}()"] if act.release else [])
            for then in act.on_complete:
                self._act(g, p, then, guard, done)
            block = "; at_sync[ME] = 1" if act.blocking else ""
            body.append(f"if :: {bid}_arr + 1 < {act.count} -> {bid}_arr++{block} "
                        f":: else -> {'; '.join(done)} fi")
        elif isinstance(act, BarrierWait):
            bid = act.barrier
            guard.append(f"(arrived_{bid}[ME] == 0 && {bid}_gen >= 1 || "
                         f"arrived_{bid}[ME] >= 1 && {bid}_gen >= arrived_{bid}[ME])"
                         if act.arrived else f"{bid}_gen >= 1")
            body.append("skip")
        elif isinstance(act, MovePc):
            body += self._next(g, p, "ME")
        elif isinstance(act, ExitCheck):
            body.append(f"if :: pc[ME] == {g.length} && inflight[0] != 0 && ALL_DONE -> "
                        "assert(inflight_at_exit) :: else -> skip fi")
        else:  # pragma: no cover
            raise AssertionError(act)

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

    def _emit_step(self, p: int, name: str, guard, body):
        self.w(f"  :: d_step {{ /* pc {p}: {name} */", "       " + " && ".join(guard) + " ->")
        self.w(*("       " + line + ";" for line in body[:-1]))
        self.w("       " + body[-1], "     }")

    @staticmethod
    def _advance() -> str:
        return ("if :: stage[ME] == STAGES-1 -> stage[ME] = 0; phase[ME]++ "
                ":: else -> stage[ME]++ fi")
