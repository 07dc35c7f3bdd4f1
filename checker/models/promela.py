"""The Promela export (for SPIN): the compiled model as one d_step per op of each agent.

checker/models/exporter.py describes the export; checker/models/ir.py has what it shares with
the Murphi export. The signal rules (PARITY_READY, IN_WINDOW, IN_WINDOW_AT, INTENDED_AFTER, sig_update, the
initial signal) are printed from the backend's rules (checker/models/signals.py), not written
here.

Slots of several parts (docs/rules.md "Slot parts") keep one tag per part, part p of stage s
at slot_tag[s*NPARTS + p]; a copy's in-flight entry carries its part. Agents whose program has
a `reset` keep the window's (k', ph') per (stage, kind) in wk[W(a, s, kind)], wph[...].

In a cluster or with several rings, the signal and slot arrays are indexed by (CTA, ring,
stage) flattened (`full_sig[(c*RINGS + r)*MAXS + s]`, only the dimensions that exist), each
agent keeps its stage, phase, ready flag and window per ring (`stage[]`, `stage_acc[]`, ...),
named barriers are per CTA, and an in-flight entry carries its destination CTA and ring.

Async reads (read_async) are in-flight entries that name their agent and their place in its
FIFO (checker/core/inflight.py): READS_IN_FLIGHT(A) counts an agent's, the oldest finishes in the
landings process (finish_read moves the others up and lets the commits that waited for it
fire), and reads_pending counts one in flight as an unfinished read. A commit names its agent
and counts its agent's commit entries in flight before it (COMMITS_IN_FLIGHT, cseq): it fires
at cseq 0, and its firing counts the agent's later commits down (commit_fired; rule R1).
An async write (write_async) is an async read's entry with the bytes digit READ_WRITES:
copy_in_flight counts it (the slot is being written), reads_pending does not.
The exit check (rule R2) is foreign_in_flight(C), or with the strict reading targets_cta(C)
and a check in every landing.
"""
from __future__ import annotations

from pipeproof.backends.printed import render, sym
from pipeproof.checker.models.ir import (
    COMMIT_ON_FULL, ENTRY_COMMIT, ENTRY_COPY, ENTRY_READ, IR, READ_WRITES, SIGNALS, Group, any_pc_guarded, comment_lines,
    item_tag, read_miss_text,
)
from pipeproof.checker.models.signals import promela_sig_update, promela_signals
from pipeproof.checker.models.steps import (
    Advance, AwaitReads, AwaitSignal, BarrierArrive, BarrierWait, CheckRead, CheckWindow, ExitCheck, Issue,
    MovePc, Observe, PassWindow, RecordArrival, Reset, Store, Trap, TryReady, Update, step_actions,
    tag_text,
)
from pipeproof.backends.base import EMPTY, FULL
from pipeproof.spec.schema import Spec


def to_promela(spec: Spec, strict_exit: bool = False) -> str:
    """The spec as a Promela model for SPIN; `strict_exit`: a CTA gone with its own copies or
    commits in flight is inflight_at_exit (ir.IR)."""
    ir = IR(spec, "promela", strict_exit=strict_exit)
    return _Promela(ir).text()


def _text(value) -> str:
    return render(value, "promela")


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

    # -------------------------------------------------------------- where things are
    def _ix(self, cta, ring, stage) -> str:
        """A signal's or slot's index in its flattened array (the dimensions that exist)."""
        dims = self.ir.dims(cta, ring, stage)
        out = dims[0][0]
        for i, size in dims[1:]:
            out = (out if " " not in out else f"({out})") + f"*{size} + {i}"
        return out

    def _sig(self, kind: int, cta, ring, stage) -> str:
        return f"{SIGNALS[kind][0]}_sig[{self._ix(cta, ring, stage)}]"

    def _slot_at(self, cta, ring, stage, p) -> str:
        ix = self._ix(cta, ring, stage)
        if self.ir.n_parts == 1:
            return f"slot_tag[{ix}]"
        return f"slot_tag[{ix if ' ' not in ix else f'({ix})'}*NPARTS + {p}]"

    def _args(self, cta, ring, stage) -> str:
        return ", ".join(i for i, _ in self.ir.dims(cta, ring, stage))

    def _params(self) -> str:
        return ", ".join({"CTAS": "C", "RINGS": "R"}.get(size, "S") for _, size in self.ir.dims("", "", ""))

    def _f(self, name: str, r: int, who: str) -> str:
        """Agent `who`'s per-ring field `name` (stage, phase, ready) of ring r."""
        return f"{name}{self.ir.rings[r].suffix}[{who}]"

    def _w(self, name: str, r: int, who: str, stage: str, kind) -> str:
        """Agent `who`'s window record `name` (wk, wph) of (ring r, stage, kind)."""
        return f"{name}{self.ir.rings[r].suffix}[W({who}, {stage}, {kind})]"

    def _bar(self, bid: str, what: str, cta) -> str:
        return f"{bid}_{what}" + (f"[{cta}]" if self.ir.ctas > 1 else "")

    def _release(self, bid: str, cta) -> str:
        return f"release_{bid}" + (f"_{cta}" if self.ir.ctas > 1 else "")

    def _done(self, cta) -> str:
        return "ALL_DONE" if self.ir.ctas == 1 else f"CTA_DONE({cta})"

    def _foreign(self, e: str, cta: str = "(C)") -> str | None:
        """Entry `e` (not 0) makes CTA `cta` going inflight_at_exit (rule R2): an async read
        of it, or a copy or commit into it from another CTA (peer 1); None where no entry
        can be either."""
        ir = self.ir
        kinds = ([f"{ir.entry_field(e, 'kind')} == {ENTRY_READ}"] if ir.has_reads else []) \
            + ([f"{ir.entry_field(e, 'peer')} == 1"] if ir.has_peer else [])
        if not kinds:
            return None
        into = f"{ir.entry_field(e, 'cta')} == {cta} && " if ir.ctas > 1 else ""
        return into + "(" + " || ".join(kinds) + ")"

    def _filling(self, e: str) -> str:
        """Entry `e` (not 0) fills slot ((C), (R), (S)): a copy into it, or an async write of it
        (an async op entry with the bytes digit READ_WRITES; inflight.fill_in_flight_to)."""
        ir = self.ir
        head = lambda kind: ir.entry_expr({"kind": kind, "cta": "(C)", "ring": "(R)", "stage": "(S)"}, upto="stage")
        out = f"{e} / ({ir.entry_unit('stage')}) == {head(ENTRY_COPY)}"
        if ir.has_writes:
            out += (f" || {e} / ({ir.entry_unit('stage')}) == {head(ENTRY_READ)}"
                    f" && {ir.entry_field(e, 'bytes')} == {READ_WRITES}")
        return out

    def _count(self, kind: int, ring) -> str:
        if isinstance(ring, int):
            return self.ir.rings[ring].expected(kind)
        return SIGNALS[kind][1] if self.ir.n_rings == 1 else f"{SIGNALS[kind][0].upper()}_COUNT({ring})"

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
        self.defines()
        self.state()
        self.macros()

    def defines(self):
        """The constants: stages, counts, the in-flight entries' digits and the macros that
        count an agent's entries."""
        ir = self.ir
        S = ir.stage_const
        self.w(f"#define STAGES {ir.stages}")
        for r in ir.rings[1:]:
            self.w(f"#define {r.const} {r.stages}  /* ring {r.name} */")
        if ir.n_rings > 1:
            self.w(f"#define MAXS {ir.max_stages}  /* the longest ring's stages */", f"#define RINGS {ir.n_rings}")
        if ir.ctas > 1:
            self.w(f"#define CTAS {ir.ctas}  /* CTAs in the cluster */")
        self.w(f"#define TXL {ir.tx_limit}", f"#define PAC {ir.pac}", f"#define CAC {ir.cac}")
        for r in ir.rings[1:]:
            self.w(f"#define {r.expected(FULL)} {r.pac}", f"#define {r.expected(EMPTY)} {r.cac}")
        if ir.n_rings > 1:
            for kind in (FULL, EMPTY):
                expr = ir.rings[-1].expected(kind)
                for ring in reversed(ir.rings[:-1]):
                    expr = f"((R) == {ring.index} -> {ring.expected(kind)} : {expr})"
                self.w(f"#define {SIGNALS[kind][0].upper()}_COUNT(R) ({expr})")
        self.w(f"#define NAGENTS {ir.n_agents}", "#define ME (_pid - 1)  /* init is pid 0 */")
        if ir.inflight:
            self.w(f"#define INF {ir.inflight}", f"#define EV {ir.ev}", f"#define ENB {ir.enb}")
        if ir.n_parts > 1:
            self.w(f"#define NPARTS {ir.n_parts}  /* parts per slot */")
            if ir.inflight:
                self.w(f"#define EP {ir.ep}  /* a copy entry's part + 1 */")
        if ir.has_peer and ir.inflight:
            self.w("#define EPR 2  /* an entry's peer flag: a copy or commit from another CTA */")
        if ir.names_agents:
            self.w(f"#define EAG {ir.eag}  /* an entry's agent: an async read's, a commit's */")
        if ir.has_reads:
            self.w(f"#define ESQ {ir.esq}  /* a read's place in its agent's FIFO; a commit's reads to wait for */")
        if ir.has_commits:
            self.w(f"#define ECS {ir.ecs}  /* a commit's earlier commit entries to wait for */")
        for name, entry in (("READ", ENTRY_READ), ("COMMIT", ENTRY_COMMIT)):
            if not (ir.has_reads if entry == ENTRY_READ else ir.has_commits):
                continue
            kind, agent = ir.entry_field("(E)", "kind"), ir.entry_field("(E)", "agent")
            what = "async read" if entry == ENTRY_READ else "commit entr"
            counter = "reads_in_flight" if entry == ENTRY_READ else "commits_in_flight"
            self.w(f"/* entry E is an {what}{'y' if entry == ENTRY_COMMIT else ''} of agent A */",
                   f"#define {name}_OF(E, A) ((E) != 0 && {kind} == {entry} && {agent} == (A))",
                   f"/* how many {what}{'ies' if entry == ENTRY_COMMIT else 's'} agent A has in flight "
                   f"(checker/core/inflight.py {counter}) */",
                   f"#define {name}S_IN_FLIGHT(A) (" + " + ".join(
                       f"({name}_OF(inflight[{j}], A) -> 1 : 0)" for j in range(ir.inflight)) + ")")
        if ir.has_window:
            self.w(f"#define W(a, s, kind) ((((a)*{S} + (s))*2) + (kind))  /* wk, wph */")

    def state(self):
        """The state: the signals, slots, agents' fields, window records, named barriers and
        in-flight entries, and the d_steps' scratch."""
        ir = self.ir
        S = ir.stage_const
        self.w("")
        n_sig = "*".join(size for _, size in ir.dims("", "", ""))
        self.w("typedef Sig {", f"  {_ptype(0, ir.pn_max)} phase_no;", f"  {_ptype(0, ir.pend_max)} pending;")
        if ir.has_tx:
            self.w("  int tx;")
        self.w("  bit observed", "}", "", f"Sig full_sig[{n_sig}];", f"Sig empty_sig[{n_sig}];",
               f"{_ptype(-1, ir.max_tag + 1)} slot_tag[{n_sig}{'*NPARTS' if ir.n_parts > 1 else ''}];",
               f"{_ptype(0, max(g.length for g in ir.groups))} pc[NAGENTS];",
               f"{_ptype(0, ir.max_items)} item[NAGENTS];")
        for r in ir.rings:
            self.w(f"{_ptype(0, ir.max_stages - 1)} stage{r.suffix}[NAGENTS];",
                   f"{_ptype(0, ir.ph_max)} phase{r.suffix}[NAGENTS];")
        for r in ir.rings:
            ws = [g.ring_info[r.index].window for g in ir.groups if g.ring_info[r.index].has_window]
            if not ws:
                continue
            klo, khi = min([0] + [w[0] for w in ws]), max(w[1] for w in ws)  # others keep 0
            plo, phi = min([0] + [w[2] for w in ws]), max(w[3] for w in ws)
            self.w("/* the phase_alias window's last passed wait per (agent, stage, kind): its intended",
                   " * phase k' and the agent's phase ph' then (agents with a reset; others keep 0)"
                   + (f" (ring {r.name})" if r.index else "") + " */",
                   f"{_ptype(klo, khi)} wk{r.suffix}[NAGENTS*{S}*2];",
                   f"{_ptype(plo, phi)} wph{r.suffix}[NAGENTS*{S}*2];")
        for r in ir.rings:
            if any(g.ring_info[r.index].has_try for g in ir.groups):
                self.w(f"bit ready{r.suffix}[NAGENTS];")
        if any(g.has_sync for g in ir.groups):
            self.w("bit at_sync[NAGENTS];")
        per_cta = "[CTAS]" if ir.ctas > 1 else ""
        for b, (bid, count, gmax) in enumerate(ir.barriers):
            if any(b in g.arrives for g in ir.groups):
                self.w(f"{_ptype(0, gmax + 1)} arrived_{bid}[NAGENTS];  /* last sync_arrive generation + 1 */")
            self.w(f"{_ptype(0, max(count - 1, 0))} {bid}_arr{per_cta};  /* arrivals in the current generation */",
                   f"{_ptype(0, gmax)} {bid}_gen{per_cta};  /* completed generations */")
        if ir.inflight:
            self.w(f"{_ptype(0, ir.emax)} inflight[INF];  /* sorted, largest first; 0 = unused */")
        self.w("", "/* scratch for d_steps (not part of the state) */",
               "hidden int pn_, pd_, " + ("tx_, " if ir.has_tx else "") + "e_, rt_;",
               "hidden int rp_pc, rp_item, rp_st, b_, k_, ls_;",
               "hidden byte rp_, st_;",
               *(["hidden int lc_, lr_;"] if ir.ctas > 1 or ir.n_rings > 1 else []),
               *(["hidden int pp_, ot_, pe_;"] if ir.n_parts > 1 else []),
               *(["hidden int nr_, nc_, ag_, se_, sj_;"] if ir.names_agents else []),
               "/* assert(KIND) fails with the kind's name in SPIN's report */",
               "hidden byte read_before_fill, overwrite_before_drain, phase_alias, over_arrival,",
               "           tx_range, inflight_at_exit, inflight_capacity;", "")

    def macros(self):
        """The backend's signal rules as macros (checker/models/signals.py), bytes_of,
        ALL_DONE / CTA_DONE and PART_IN."""
        ir = self.ir
        A = ir.n_agents
        self.w(*promela_signals(ir))
        if ir.inflight and ir.has_tx:
            expr = str(min(ir.bytes_vals[-1], ir.tx_limit))
            for i in range(len(ir.bytes_vals) - 2, -1, -1):
                expr = f"((B) == {i} -> {min(ir.bytes_vals[i], ir.tx_limit)} : {expr})"
            self.w(f"#define bytes_of(B) ({expr})")
        done = " && ".join(f"pc[{a}] == {ir.group_of(a).length}" for a in range(A))
        self.w(f"#define ALL_DONE ({done})")
        if ir.ctas > 1:  # CTA c is gone: all its agents finished (a CTA without agents is)
            for c in range(ir.ctas):
                mine = [a for g in ir.groups_in(c) for a in g.agents]
                self.w(f"#define CTA_DONE_{c} ("
                       + (" && ".join(f"pc[{a}] == {ir.group_of(a).length}" for a in mine) or "1") + ")")
            self.w("#define CTA_DONE(C) (" + " || ".join(f"(C) == {c} && CTA_DONE_{c}" for c in range(ir.ctas)) + ")")
        if not ir.part_everywhere():
            cases = []
            for ring in ir.rings:
                for c in range(ir.ctas):
                    here = ir.parts_in(ring.index, c)
                    if here:
                        where = ([f"(C) == {c}"] if ir.ctas > 1 else []) + \
                            ([f"(R) == {ring.index}"] if ir.n_rings > 1 else [])
                        cases.append("(" + " && ".join(where + ["(" + " || ".join(f"(P) == {p}" for p in here) + ")"]) + ")")
            args = ", ".join([n for n, ok in (("C", ir.ctas > 1), ("R", ir.n_rings > 1)) if ok] + ["P"])
            self.w("/* the slots of CTA C have part P of ring R (checker/core/program.py slot_parts) */",
                   f"#define PART_IN({args}) ({' || '.join(cases) or '0'})")
        self.w("")

    def inlines(self):
        self.w(*promela_sig_update(self.ir))
        self.inflight_inlines()
        self.program_inlines()
        self.store_inline()

    def inflight_inlines(self):
        """inf_add, inf_remove, copy_in_flight, the exit's targets_cta / foreign_in_flight, and
        inf_sort, finish_read, commit_fired for the entries that name their agent."""
        ir = self.ir
        if ir.inflight:
            self.w("inline inf_add(E) {", "  e_ = (E);", "  if",
                   "  :: inflight[INF-1] != 0 -> assert(inflight_capacity)", "  :: else -> skip", "  fi;",
                   "  k_ = INF - 1;", "  do", "  :: k_ > 0 && inflight[k_-1] < e_ -> inflight[k_] = inflight[k_-1]; k_--",
                   "  :: else -> break", "  od;", "  inflight[k_] = e_", "}", "",
                   "inline inf_remove(J) {", "  k_ = (J);", "  do",
                   "  :: k_ < INF - 1 -> inflight[k_] = inflight[k_+1]; k_++", "  :: else -> break", "  od;",
                   "  inflight[INF-1] = 0", "}", "",
                   "/* rp_ := slot S is still being filled: some copy into it is in flight"
                   + (", or an async write of it (write_async)" if ir.has_writes else "") + " */",
                   f"inline copy_in_flight({self._params()}) {{", "  rp_ = 0; k_ = 0;", "  do",
                   f"  :: k_ < INF -> if :: inflight[k_] != 0 && ({self._filling('inflight[k_]')})"
                   " -> rp_ = 1 :: else -> skip fi; k_++",
                   "  :: else -> break", "  od", "}", "")
            if ir.ctas > 1 and ir.strict_exit:
                self.w("/* rp_ := something in flight (a copy, a commit or an async read) targets CTA C */",
                       "inline targets_cta(C) {", "  rp_ = 0; k_ = 0;", "  do",
                       f"  :: k_ < INF -> if :: inflight[k_] != 0 && {ir.entry_field('inflight[k_]', 'cta')} == (C)"
                       " -> rp_ = 1 :: else -> skip fi; k_++",
                       "  :: else -> break", "  od", "}", "")
            foreign = self._foreign("inflight[k_]")
            if foreign and not ir.strict_exit:
                self.w("/* rp_ := an async read of CTA C, or a copy or commit into C from another CTA, is",
                       " * in flight (inflight_at_exit when C goes; its own copies and commits are the",
                       " * engine's warning unawaited_at_exit, not reported here) */",
                       f"inline foreign_in_flight({'C' if ir.ctas > 1 else ''}) {{", "  rp_ = 0; k_ = 0;", "  do",
                       f"  :: k_ < INF -> if :: inflight[k_] != 0 && {foreign} -> rp_ = 1 :: else -> skip fi; k_++",
                       "  :: else -> break", "  od", "}", "")
        if ir.has_reads or ir.has_commits:
            self.w("/* The entries sorted again (largest first) after some were rewritten in place. */",
                   "inline inf_sort() {", "  k_ = 1;", "  do", "  :: k_ < INF ->", "    se_ = inflight[k_]; sj_ = k_;", "    do",
                   "    :: sj_ > 0 && inflight[sj_-1] < se_ -> inflight[sj_] = inflight[sj_-1]; sj_--",
                   "    :: else -> break", "    od;", "    inflight[sj_] = se_; k_++",
                   "  :: else -> break", "  od;",
                   "  skip  /* a break must land inside the d_step */", "}", "")
        if ir.has_reads:
            agent, seq = ir.entry_field("inflight[k_]", "agent"), ir.entry_field("inflight[k_]", "seq")
            self.w("/* Agent A's oldest async read finished (checker/core/inflight.py finish_read): its later",
                   " * reads move up its FIFO and the commits that waited for it wait for one read fewer;",
                   " * then the entries are sorted again. */",
                   "inline finish_read(A) {", "  k_ = 0;", "  do",
                   "  :: k_ < INF && inflight[k_] != 0 ->", "    if",
                   f"    :: {agent} == (A) && {seq} != 0 -> inflight[k_] = inflight[k_] - {ir.entry_unit('seq')}",
                   "    :: else -> skip", "    fi;", "    k_++", "  :: else -> break", "  od;",
                   "  inf_sort()", "}", "")
        if ir.has_commits:
            kind, agent = ir.entry_field("inflight[k_]", "kind"), ir.entry_field("inflight[k_]", "agent")
            cseq = ir.entry_field("inflight[k_]", "cseq")
            self.w("/* One of agent A's oldest commit entries fired (checker/core/inflight.py commit_fired): each",
                   " * of its later commits waits for one entry fewer; then the entries are sorted again. */",
                   "inline commit_fired(A) {", "  k_ = 0;", "  do",
                   "  :: k_ < INF && inflight[k_] != 0 ->", "    if",
                   f"    :: {kind} == {ENTRY_COMMIT} && {agent} == (A) && {cseq} != 0 -> "
                   f"inflight[k_] = inflight[k_] - {ir.entry_unit('cseq')}",
                   "    :: else -> skip", "    fi;", "    k_++", "  :: else -> break", "  od;",
                   "  inf_sort()", "}", "")

    def program_inlines(self):
        """What the programs need: settle (every=/at=), the named barriers' releases and
        reads_pending per group and ring."""
        ir = self.ir
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
            for c in range(ir.ctas):
                users = [(g, q) for g in ir.groups_in(c) for q in g.syncs[b]]
                if not users:
                    continue
                self.w(f"/* The last arrival of a generation of {ir.barrier_names[b]} releases every agent blocked "
                       "in its sync" + (f" (in CTA {c}). */" if ir.ctas > 1 else ". */"),
                       f"inline {self._release(bid, c)}() {{")
                for g, q in users:
                    for a in g.agents:
                        self.w(f"  if :: at_sync[{a}] && pc[{a}] == {q} -> at_sync[{a}] = 0; "
                               + "; ".join(self._next(g, q, str(a))) + " :: else -> skip fi;")
                self.w("  skip", "}", "")
        for g in ir.groups:
            for ring in ir.rings:
                by_tag = g.reads_by_tag(ring.index)
                if not by_tag:
                    continue
                adv = g.moving("advance", ring.index)
                rst = g.moving("reset", ring.index)
                at = lambda pcs: "(" + any_pc_guarded("rp_pc", "rp_item", pcs, g.guards, " || ", "==", "&&") + ")"
                self.w(f"/* rp_ := agent B ({g.label}) will still read tag T at stage S"
                       + (f" of ring {ring.name}" if ring.index else "") + " (its program run",
                       " * forward, waits ignored, as pipeproof's reads_pending) */",
                       f"inline reads_pending_{g.ident}{ring.suffix}(B, T, S) {{",
                       f"  rp_pc = pc[B]; rp_item = item[B]; rp_st = stage{ring.suffix}[B]; rp_ = 0;")
                if g.async_reads_on(ring.index):  # an async read of T still in flight counts
                    entry = ir.entry_expr({"kind": ENTRY_READ, "cta": g.cta, "ring": ring.index, "stage": "(S)",
                                           "value": "(T) + 1", "agent": "(B)"}, upto="agent")
                    self.w("  k_ = 0;", "  do",
                           f"  :: k_ < INF -> if :: inflight[k_] != 0 && inflight[k_] / ({ir.entry_unit('agent')}) == {entry} -> rp_ = 1 "
                           ":: else -> skip fi; k_++", "  :: else -> break", "  od;")
                self.w("  do",
                       f"  :: rp_ == 0 && rp_pc < {g.length} && ({item_tag('rp_item', g.div)} <= (T)"
                       + (f" || (T) >= {ir.tag_outside}" if any(t >= 0 for t, _ in by_tag) else "") + ") ->", "    if")
                for (tag, div), pcs in sorted(by_tag.items()):
                    self.w(f"    :: {at(pcs)} -> if :: {tag_text(tag, 'rp_item', div)} == (T) && rp_st == (S) "
                           "-> rp_ = 1 :: else -> skip fi")
                if adv:
                    self.w(f"    :: {at(adv)} -> if :: rp_st == {ring.const}-1 -> rp_st = 0 :: else -> rp_st++ fi")
                if rst:
                    self.w(f"    :: {at(rst)} -> rp_st = {g.ring_info[ring.index].init_stage}")
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

    def store_inline(self):
        """store_tag: a write or landing, with its overwrite_before_drain check."""
        ir = self.ir
        params = self._params()
        if ir.n_parts == 1:
            slot = self._slot_at("(C)", "(R)", "(S)", 0)
            self.w("/* A write or landing stores tag T into slot S: overwrite_before_drain if a reader",
                   " * of the old item has not read it yet. */",
                   f"inline store_tag({params}, T) {{", "  rt_ = (T);", "  if",
                   f"  :: {slot} >= 0 && {slot} != rt_ ->")
            self._overwrite_check(slot, "    ")
            self.w("    skip", "  :: else -> skip", "  fi;", f"  {slot} = rt_", "}", "")
            return
        slot = self._slot_at("(C)", "(R)", "(S)", "pp_")
        here = "" if ir.part_everywhere() else \
            " && PART_IN(" + ", ".join([n for n, ok in (("(C)", ir.ctas > 1), ("(R)", ir.n_rings > 1)) if ok] + ["pp_"]) + ")"
        self.w("/* A write or landing stores tag T into part P of slot S (P < 0: every part, a",
               " * consumer-side fill): overwrite_before_drain if a reader of the item a stored-over",
               " * part held has not read it yet. */",
               f"inline store_tag({params}, P, T) {{", "  rt_ = (T); pp_ = 0;", "  do", "  :: pp_ < NPARTS ->",
               "    if", f"    :: ((P) < 0 || (P) == pp_){here} ->", f"      ot_ = {slot};",
               "      if", "      :: ot_ >= 0 && ot_ != rt_ ->")
        self._overwrite_check("ot_", "        ")
        self.w("        skip", "      :: else -> skip", "      fi;", f"      {slot} = rt_",
               "    :: else -> skip", "    fi;", "    pp_++", "  :: else -> break", "  od;",
               "  skip  /* a break must land inside the d_step */", "}", "")

    def _overwrite_check(self, old: str, ind: str):
        """Assert overwrite_before_drain when some agent of the slot's CTA will still read tag
        `old` at stage S of the slot's ring."""
        ir = self.ir
        for g in ir.groups:
            for ring in ir.rings:
                if not g.reads_by_tag(ring.index):
                    continue
                where = ([f"(C) == {g.cta}"] if ir.ctas > 1 else []) + \
                    ([f"(R) == {ring.index}"] if ir.n_rings > 1 else [])
                pre = ind + "   " if where else ind
                if where:
                    self.w(f"{ind}if :: {' && '.join(where)} ->")
                self.w(f"{pre}b_ = {g.first};", f"{pre}do",
                       f"{pre}:: b_ < {g.first + g.size} ->",
                       f"{pre}  reads_pending_{g.ident}{ring.suffix}(b_, {old}, S);",
                       f"{pre}  if :: rp_ -> assert(overwrite_before_drain) :: else -> skip fi;",
                       f"{pre}  b_++", f"{pre}:: else -> break", f"{pre}od" + (";" if not where else ""))
                if where:
                    self.w(f"{ind}:: else -> skip fi;")

    def _in_window(self, g: Group, a: str, kind: int, phase_no: str, r: int = 0) -> str:
        """Agent `a` (of group g) is inside its phase window on its stage's signal `kind` of
        ring r (semantics.in_phase_window): from its phase alone, or from its last passed wait."""
        info = g.ring_info[r]
        if not info.has_window:
            return f"IN_WINDOW({phase_no}, {self._f('phase', r, a)}, {info.init_phase})"
        stage = self._f("stage", r, a)
        return (f"IN_WINDOW_AT({phase_no}, INTENDED_AFTER({self._w('wk', r, a, stage, kind)}, "
                f"{self._w('wph', r, a, stage, kind)}, {self._f('phase', r, a)}))")

    def processes(self):
        ir = self.ir
        for g in ir.groups:
            self.w(f"proctype {g.ident}() {{  /* {g.label} */", "  do")
            for p in range(g.length):
                self.op_step(g, p)
            self.w(f"  :: pc[ME] == {g.length} -> break", "  od", "}", "")
        if ir.inflight:
            self.w("/* In-flight entry J lands (a copy: stores its item, then complete_tx of its bytes on",
                   " * full)" + (", fires (a commit: arrives n on empty, or on full for commit_full) or finishes (an async read)"
                                if ir.has_reads else " or fires (a commit: arrives n on empty, or on full for commit_full)")
                   + ", in one step" + (", in the CTA it targets. */" if ir.ctas > 1 else ". */"),
                   "inline land(J) {", "  e_ = inflight[J];", "  inf_remove(J);")
            # the digits below the bytes' (IR.entry_digits): its agent and part are kept, the
            # peer flag and the seq and cseq digits (0: it may act) dropped
            keep = {"agent": "  ag_ = e_ % EAG;", "part": "  pe_ = e_ % EP - 1;"}
            for name, size in reversed(ir.entry_digits()):
                if name == "bytes":
                    break
                self.w(*([keep[name]] if name in keep else []), f"  e_ = e_ / {size};")
            names = {"CTAS": "lc_", "RINGS": "lr_"}
            unit = "ENB*EV"
            for _, size in reversed(ir.dims("", "", "")):
                self.w(f"  {names.get(size, 'ls_')} = (e_ / ({unit})) % {size};")
                unit += f"*{size}"
            c = "lc_" if ir.ctas > 1 else 0
            r = "lr_" if ir.n_rings > 1 else 0
            part = "pe_, " if ir.n_parts > 1 else ""
            ind = "  "
            if ir.has_reads:  # a read finishing changes nothing but the FIFO (not even in a gone CTA)
                self.w("  if", f"  :: e_ / ({unit}) == {ENTRY_READ} -> finish_read(ag_)", "  :: else ->")
                ind = "    "
            if ir.strict_exit:  # a landing or firing into a gone CTA (rule R2: only the strict reading)
                self.w(f"{ind}if :: {self._done(c)} -> assert(inflight_at_exit) :: else -> skip fi;")
            self.w(f"{ind}if", f"{ind}:: e_ / ({unit}) == {ENTRY_COPY} ->",
                   f"{ind}  store_tag({self._args(c, r, 'ls_')}, {part}(e_ / ENB) % EV - 1);")
            if ir.has_tx:
                self.w(f"{ind}  sig_update({self._sig(FULL, c, r, 'ls_')}, {self._count(FULL, r)}, 0, -bytes_of(e_ % ENB))")
            else:
                self.w(f"{ind}  skip")
            self.w(f"{ind}:: else ->")
            if ir.has_commits:  # the agent's later commits wait for one entry fewer (rule R1)
                self.w(f"{ind}  commit_fired(ag_);")
            fire = [(EMPTY, "")]
            if ir.full_commits:  # a commit_full's entry (bytes digit COMMIT_ON_FULL) fires on full
                fire = [(FULL, f"e_ % ENB == {COMMIT_ON_FULL}"), (EMPTY, "else")]
                self.w(f"{ind}  if")
            for k, cond in fire:
                pre = f"{ind}  :: {cond} -> " if ir.full_commits else f"{ind}  "
                self.w(pre + f"sig_update({self._sig(k, c, r, 'ls_')}, {self._count(k, r)}, "
                       "(e_ / ENB) % EV, 0)")
            if ir.full_commits:
                self.w(f"{ind}  fi")
            self.w(f"{ind}fi")
            if ir.has_reads:
                self.w("  fi")
            self.w("}", "")
            # not a later read, nor a commit that waits for its agent's reads or commits
            ready = f" && inflight[{{j}}] % ({ir.ready_unit()}) == 0" if ir.ready_unit() else ""
            self.w("proctype landings() {", "end:", "  do")
            for j in range(ir.inflight):
                self.w(f"  :: d_step {{ inflight[{j}] != 0{ready.format(j=j)} -> land({j}) }}")
            self.w("  od", "}", "")
        alias = []
        for g in ir.groups:
            for a in g.agents:
                for p, kind, unless, r in ir.blocking_waits(g):
                    at = f"pc[{a}] == {p}" + (f" && !{self._f('ready', r, a)}" if unless else "")
                    k = next(key for key, (name, _) in SIGNALS.items() if name == kind)
                    phase_no = f"{self._sig(k, g.cta, r, self._f('stage', r, a))}.phase_no"
                    alias.append(f"({at} && !{self._in_window(g, str(a), k, phase_no, r)})")
        if alias:
            self.w("/* phase_alias: an agent at a blocking wait outside its phase window */",
                   "#define ALIASED (" + " || \\\n  ".join(alias) + ")",
                   "proctype monitor() {", "end:", "  do", "  :: d_step { ALIASED -> assert(phase_alias) }", "  od", "}", "")
        self.w("init {", "  atomic {", "    d_step {")
        for ring in ir.rings:
            for c in range(ir.ctas):
                sigs = "; ".join(self._sig_init(self._sig(kind, c, ring.index, "k_"), ring.expected(kind))
                                 for kind in (FULL, EMPTY))
                slots = "; ".join(f"{self._slot_at(c, ring.index, 'k_', p)} = -1" for p in range(ir.n_parts))
                self.w("      k_ = 0;", "      do", f"      :: k_ < {ir.stage_const} ->",
                       f"        {sigs}; {slots}; k_++", "      :: else -> break", "      od;")
        for g in ir.groups:
            for a in g.agents:
                self.w(f"      pc[{a}] = {g.init_pc}; item[{a}] = {g.init_item}; "
                       + " ".join(f"{self._f('stage', ring.index, a)} = {info.init_stage}; "
                                  f"{self._f('phase', ring.index, a)} = {info.init_phase};"
                                  for ring, info in ir.group_rings(g)))
                for ring, info in ir.group_rings(g):
                    if info.has_window:  # (k', ph') = (-(p0 mod 2), p0): no wait passed yet
                        sfx = ring.suffix
                        self.w(f"      k_ = 0; do :: k_ < {ir.stage_const}*2 -> wk{sfx}[{a}*{ir.stage_const}*2 + k_] = "
                               f"{-(info.init_phase % 2)}; wph{sfx}[{a}*{ir.stage_const}*2 + k_] = {info.init_phase}; "
                               "k_++ :: else -> break od;")
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
        """`mbarrier.init`, printed from the backend's init."""
        names = ("phase_no", "pending", "tx")[:3 if self.ir.has_tx else 2]
        values = self.ir.signal_rules().init(_p(expected))
        return "; ".join(f"{sig}.{name} = {_text(v)}" for name, v in zip(names, values))

    def op_step(self, g: Group, p: int):
        """The op at `p` as one d_step: its actions (checker/models/steps.py), printed."""
        op, _ = g.ops[p]
        guard = [f"pc[ME] == {p}"]
        body: list[str] = []
        for act in step_actions(self.ir, g, p):
            self._act(g, p, act, guard, body)
        self._emit_step(p, op.text or op.name, guard, body)

    def _act(self, g: Group, p: int, act, guard: list, body: list):
        """Print one step action: onto the d_step's guard or its body."""
        ir = self.ir
        r = getattr(act, "ring", 0)
        stage, phase, ready = (self._f(f, r, "ME") for f in ("stage", "phase", "ready"))
        sig = lambda kind, cta=g.cta: self._sig(kind, cta, r, stage)
        tag = lambda act: tag_text(act.tag, "item[ME]", act.div)
        gone = lambda dst: f"if :: CTA_DONE_{dst} -> assert(inflight_at_exit) :: else -> skip fi"
        if isinstance(act, AwaitSignal):
            ok = f"PARITY_READY({sig(act.kind)}.phase_no, {phase})"
            guard.append(f"({ready} || {ok})" if act.unless else ok)
        elif isinstance(act, Observe):
            body.append(f"if :: !{ready} -> {sig(act.kind)}.observed = 1 :: else -> skip fi"
                        if act.unless else f"{sig(act.kind)}.observed = 1")
        elif isinstance(act, CheckWindow):
            body.append(f"if :: !{self._in_window(g, 'ME', act.kind, sig(act.kind) + '.phase_no', r)} -> "
                        "assert(phase_alias) :: else -> skip fi")
        elif isinstance(act, PassWindow):
            wk, wph = self._w("wk", r, "ME", stage, act.kind), self._w("wph", r, "ME", stage, act.kind)
            p0 = g.ring_info[r].init_phase
            k = f"INTENDED_AFTER({wk}, {wph}, {phase})"
            record = (f"{wk} = {k}; {wph} = {phase}" if act.raw else
                      f"{wk} = {k} - ({phase} - {p0}); {wph} = {p0}")
            flag = {"always": "", "ready": ready, "not_ready": f"!{ready}"}[act.when]
            body.append(f"if :: {flag} -> {record} :: else -> skip fi" if flag else record)
        elif isinstance(act, TryReady):
            body.append(f"if :: PARITY_READY({sig(act.kind)}.phase_no, {phase}) -> {ready} = 1; "
                        f"{sig(act.kind)}.observed = 1 :: else -> {ready} = 0 fi")
        elif isinstance(act, Update):
            for dst in act.to or (g.cta,):
                if dst != g.cta:
                    body.append(gone(dst))  # an arrival into a gone CTA
                body.append(f"sig_update({sig(act.kind, dst)}, {self._count(act.kind, r)}, {act.arrivals}, {act.dtx})")
        elif isinstance(act, Trap):
            body.append(f"assert({act.kind})")
        elif isinstance(act, AwaitReads):
            guard.append(f"READS_IN_FLIGHT(ME) <= {act.n}")
        elif isinstance(act, Issue):
            who = {}
            if act.names_agent:  # the agent's reads (and commit entries) in flight before this op's
                if act.entry == ENTRY_READ or act.after_reads:
                    body.append("nr_ = READS_IN_FLIGHT(ME)")
                if act.entry == ENTRY_COMMIT:
                    body.append("nc_ = COMMITS_IN_FLIGHT(ME)")
                who = {"agent": "ME", "seq": "nr_", "cseq": "nc_"}
            for dst in act.to or (g.cta,):
                if dst != g.cta:
                    body.append(gone(dst))  # a copy or commit into a gone CTA
                body.append(f"inf_add({act.expr(ir, dst, stage, 'item[ME]', peer=int(dst != g.cta), **who)})")
        elif isinstance(act, Store):
            part = f"{act.part}, " if ir.n_parts > 1 else ""
            body.append(f"store_tag({self._args(g.cta, r, stage)}, {part}{tag(act)})")
        elif isinstance(act, CheckRead):
            miss = read_miss_text(ir, g, p, "item[ME]", tag(act),
                                  lambda q: self._slot_at(g.cta, r, stage, q), "promela")
            if ir.inflight:
                body += [f"copy_in_flight({self._args(g.cta, r, stage)})",
                         f"if :: ({miss}) || rp_ -> assert(read_before_fill) :: else -> skip fi"]
            else:
                body.append(f"if :: {miss} -> assert(read_before_fill) :: else -> skip fi")
        elif isinstance(act, Advance):
            body.append(self._advance(r))
        elif isinstance(act, Reset):
            info = g.ring_info[r]
            body.append(f"{stage} = {info.init_stage}; {phase} = {info.init_phase}")
        elif isinstance(act, RecordArrival):
            body.append(f"arrived_{act.barrier}[ME] = {self._bar(act.barrier, 'gen', g.cta)} + 1")
        elif isinstance(act, BarrierArrive):
            arr, gen = self._bar(act.barrier, "arr", g.cta), self._bar(act.barrier, "gen", g.cta)
            if act.blocking:
                guard.append("!at_sync[ME]")
            done: list[str] = [f"{arr} = 0; {gen}++"] + ([f"{self._release(act.barrier, g.cta)}()"]
                                                         if act.release else [])
            for then in act.on_complete:
                self._act(g, p, then, guard, done)
            block = "; at_sync[ME] = 1" if act.blocking else ""
            body.append(f"if :: {arr} + 1 < {act.count} -> {arr}++{block} "
                        f":: else -> {'; '.join(done)} fi")
        elif isinstance(act, BarrierWait):
            gen, mine = self._bar(act.barrier, "gen", g.cta), f"arrived_{act.barrier}[ME]"
            guard.append(f"({mine} == 0 && {gen} >= 1 || {mine} >= 1 && {gen} >= {mine})"
                         if act.arrived else f"{gen} >= 1")
            body.append("skip")
        elif isinstance(act, MovePc):
            body += self._next(g, p, "ME")
        elif isinstance(act, ExitCheck):
            # its CTA is gone now: with the strict reading, anything in flight into it is
            # inflight_at_exit; else only an async read of it or a peer's copy or commit (R2)
            gone_now = f"pc[ME] == {g.length} && inflight[0] != 0 && " \
                + ("ALL_DONE" if ir.ctas == 1 else f"CTA_DONE_{g.cta}")
            if ir.strict_exit and ir.ctas == 1:
                body.append(f"if :: {gone_now} -> assert(inflight_at_exit) :: else -> skip fi")
            elif ir.strict_exit or self._foreign("e_"):
                find = f"targets_cta({g.cta})" if ir.strict_exit else \
                    f"foreign_in_flight({g.cta if ir.ctas > 1 else ''})"
                body.append(f"if :: {gone_now} -> {find}; if :: rp_ -> assert(inflight_at_exit) "
                            ":: else -> skip fi :: else -> skip fi")
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

    def _advance(self, r: int = 0) -> str:
        stage, phase = self._f("stage", r, "ME"), self._f("phase", r, "ME")
        return (f"if :: {stage} == {self.ir.rings[r].const}-1 -> {stage} = 0; {phase}++ "
                f":: else -> {stage}++ fi")
