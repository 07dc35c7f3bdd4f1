"""Bounded model checking: the explicit engine's question, asked of Z3 one depth at a time.

`verify_bmc(spec, depth=None, timeout=None)` unrolls the symbolic transition system of
checker/smt/encode.py on one incremental solver (Z3's solver for QF_BV: an incremental SAT
solver over the bit-blasted encoding) and asks, for k = 0, 1, 2, ...: is there a run of k steps
whose last step commits a violation, or whose last state (if the last step did not trap) has
one? The minimal depth is exactly the explicit engine's (checker/engines/explore.py): state properties
(deadlock, phase_alias) count at the depth of the state, step violations at the depth of the
step, and a trapping step has no successor. Once depth k is found clean, that is asserted for
good, so deeper queries look only at runs with clean prefixes (as the explicit engine's shortest
traces are). At the first depth with a violation every kind is asked for, so `kinds` lists every
kind found at that depth in the reporting order (docs/model.md "Violation kinds"), each with a trace of exactly that length.

Reductions. Two families of constraints cut the runs Z3 has to consider, without losing the
minimal depth or any kind at it. Order runs by their sequence of actions (`act`),
lexicographically; among the runs of the minimal length d that end in a violation of kind K,
take the least one, R. (1) Symmetry (`Encoding.symmetry`): agents with the same CTA, program
and start are interchangeable (a producer-side agent that fills is not: it owns its slot
parts). If R's step t were taken by agent b while a lower agent a is in the same local state
(position, flags, window records, in-flight entries), swapping a and b from step t on
gives a run (the state at t is symmetric in them) of the same length whose end violates K
(the properties do not depend on agent names), and which is smaller at step t: impossible.
(2) Partial-order reduction (`Encoding.lex_order`): two actions commute when they are taken by
different actors and every resource they share (a signal, a slot, a barrier, an in-flight
entry) is touched in commuting modes (two waits; two identical mbarrier updates; two equal tag
stores; two amd increments). If a step v < d - 1 of R commuted with every step from t to v - 1
and had a smaller actor than step t, moving it before step t would give a run that reaches
the same state after step v, hence the same last step and end, and is smaller: impossible (its
new prefix cannot violate anything, or a violation would exist at a depth below d). So R
satisfies every constraint and BMC finds depth d and kind K; at depths below d there is nothing
to find. The last step is never reordered, so step violations keep their step.

Traces: the action sequence Z3 found is replayed through `model.apply` (the explicit engine's
own transition function) and turned into a `Trace` by `checker.trace.trace_from_codes`, as the
explicit engine's are, so BMC traces are checked, explained and exported exactly
like the explicit engine's. Every replayed state is also compared with Z3's values for it
(every slot part, every window record, every in-flight entry with the earlier reads and
commits of its agent it still waits for and whether a peer CTA issued it); a difference is an
internal error.

Exits (DESIGN, revised 2026-12-02): a CTA that goes with only its own copies or commits in
flight is the explicit engine's warning unawaited_at_exit, not a violation; BMC reports no
warnings, so it reports nothing there. `strict_exit=True` (`--strict-exit`) makes it
inflight_at_exit, as the explicit engine's `verify(spec, strict_exit=True)`.

Verdicts: `violation` as above. `inconclusive` with `limit = "bmc depth K"` when depth K was
reached without a violation, or with Z3's reason when a query answered `unknown` (timeout,
resource limit), or `timeout T s` when the overall time ran out between queries. `ok` only when
the bound is complete: every agent's program is finite, and each step advances one agent's
program position (a sync that blocks is moved on later by the agent that completes the
barrier, without a step of its own) or retires one in-flight copy, commit or read, so no run is
longer than `Encoding.longest_run_bound` (the ops of all unrolled programs plus their in-flight
instances). Every run that neither deadlocks nor traps has exactly that length, so a correct spec
needs exactly that depth. The default depth is that bound, capped at `DEFAULT_DEPTH`.

Unlike the explicit engine, BMC has no in-flight capacity; if a counterexample needs more
in-flight entries than the explicit model holds, it cannot be replayed and the result is
`inconclusive` with the explicit engine's capacity message.
"""
from __future__ import annotations

import time
from collections import Counter

import z3

from pipeproof.checker.core import semantics as S
from pipeproof.checker.smt import solvers as smt
from pipeproof.checker.core import Model, compile_model
from pipeproof.checker.results import KINDS, Result
from pipeproof.checker.smt.encode import KIND_BITS, Encoding
from pipeproof.checker.results import trace_from_codes
from pipeproof.spec.schema import Spec

DEFAULT_DEPTH = 100
POR = "lex"  # partial-order reduction of run prefixes: "lex" (Encoding.lex_order), True
            # (adjacent steps only: Encoding.canonical_order) or False
SYMMETRY = True  # of two agents in the same local state, the lower moves first (Encoding.symmetry)
ENTRY_NAMES = {S.ENTRY_COPY: "copy", S.ENTRY_COMMIT: "commit", S.ENTRY_READ: "read"}


class Inconclusive(Exception):
    pass


_warm = False


def warm_up_bmc() -> None:
    """Load (or compile) the numba functions BMC calls (program unrolling, replay) before any
    clock starts, like the search's warm-up (checker.engines.warm_up), on the same tiny spec."""
    global _warm
    if not _warm:
        from pipeproof.checker.runtime import ensure_engines, tiny_spec
        ensure_engines()  # the one shared build, as the search's warm-up
        _warm = True
        verify_bmc(tiny_spec(), depth=2)


def verify_bmc(spec: Spec, depth: int | None = None, timeout: float | None = None,
               symmetry: bool = True, strict_exit: bool = False) -> Result:
    """Bounded model checking of `spec` up to `depth` steps (default: the longest possible run,
    at most DEFAULT_DEPTH), within `timeout` seconds overall (default: Z3's per-query limit);
    `symmetry=False` drops the symmetry constraints (to compare; the answer is the same).
    `strict_exit`: a CTA gone with its own copies or commits in flight is inflight_at_exit
    (as the explicit engine's `verify(..., strict_exit=True)`); without it that case is the
    warning unawaited_at_exit, which BMC does not report (it is no violation)."""
    warm_up_bmc()
    started = time.monotonic()
    model = compile_model(spec, strict_exit=strict_exit)
    enc = Encoding(model)
    bound = depth if depth is not None else min(enc.longest_run_bound, DEFAULT_DEPTH)
    result = Result(spec=spec, verdict="inconclusive", states=0, transitions=0, seconds=0.0,
                    engine="bmc")
    try:
        _search(model, enc, bound, started, timeout, result, symmetry)
    except Inconclusive as e:
        result.verdict = "inconclusive"
        result.limit = str(e)
    result.seconds = time.monotonic() - started
    return result


def _search(model: Model, enc: Encoding, bound: int, started: float, timeout, result: Result,
            symmetry: bool):
    """Depth by depth on one incremental solver (Z3's SAT solver over the bit-blasted
    encoding: incremental, it keeps what it learnt about shallower depths)."""
    s = smt.solver(logic="QF_BV" if enc.width else None)
    frames = [enc.initial()]
    steps = []

    def check(*assumptions):
        if timeout is not None:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                raise Inconclusive(f"timeout {timeout:g} s (bmc depth {result.max_depth} clean)")
            s.set("timeout", max(1, int(left * 1000)))  # else smt's per-query default
        answer = smt.check(s, *assumptions)
        if answer.status == "unknown":
            raise Inconclusive(f"z3 unknown at bmc depth {len(frames) - 1}: {answer.reason}")
        return answer

    for k in range(min(bound, enc.longest_run_bound) + 1):
        if k > 0:
            step = enc.step(frames[-1], k - 1)
            s.add(step.constraints)
            steps.append(step)
            if SYMMETRY and symmetry:
                s.add(enc.symmetry(frames[-1], step))
            frames.append(step.nxt)
            if POR and k >= 3:
                # the prefix (steps 0 .. k-2) in canonical order; the last step stays free
                if POR == "lex":
                    s.add(enc.lex_order(steps, k - 2))
                else:
                    s.add(enc.canonical_order(steps[k - 3], steps[k - 2]))
        kinds = _kinds_at(enc, frames[-1], steps[-1] if k > 0 else None)
        if kinds:
            any_kind = z3.Bool(f"violation@{k}")
            s.add(z3.Implies(any_kind, _or_list(list(kinds.values()))))
            answer = check(any_kind)
            if answer.status == "sat":
                _report(model, enc, s, frames, steps, kinds, answer.model, check, result)
                return
            # no violation at depth k: deeper queries need only runs with a clean prefix
            s.add(z3.Not(_or_list(list(kinds.values()))))
        result.max_depth = k
    if bound >= enc.longest_run_bound:
        result.verdict = "ok"  # no run is longer than the bound
        return
    result.verdict = "inconclusive"
    # Say which depth would be exhaustive: no run of the spec is longer than that.
    result.limit = (f"bmc depth {bound}; the longest run is {enc.longest_run_bound} steps, "
                    f"--depth {enc.longest_run_bound} checks every run")


def _or_list(xs):
    return z3.Or(xs) if len(xs) > 1 else (xs[0] if xs else z3.BoolVal(False))


def _kinds_at(enc: Encoding, frame, step) -> dict:
    """Violation bit -> the condition that depth k (step k, state k) commits it."""
    state = enc.state_kinds(frame)
    out = {}
    for b in KIND_BITS:
        parts = []
        if step is not None and b in step.kinds:
            parts.append(step.kinds[b])
        if b in state:
            parts.append(state[b] if step is None else z3.And(z3.Not(step.trap), state[b]))
        if parts:
            out[b] = z3.simplify(z3.Or(parts)) if len(parts) > 1 else parts[0]
    return {b: c for b, c in out.items() if not z3.is_false(c)}


def _report(model, enc, s, frames, steps, kinds, first_model, check, result):
    """Every kind at this depth, each with its trace."""
    k = len(frames) - 1
    found = {}
    remaining = dict(kinds)
    m = first_model
    while m is not None:
        for b, cond in list(remaining.items()):
            if z3.is_true(m.eval(cond, model_completion=True)):
                found[b] = m
                del remaining[b]
        m = None
        if remaining:
            more = z3.Bool(f"more@{k}.{len(found)}")
            s.add(z3.Implies(more, _or_list(list(remaining.values()))))
            answer = check(more)
            if answer.status == "sat":
                m = answer.model
    traces = {}
    for b in KIND_BITS:
        if b not in found:
            continue
        m = found[b]
        kind_index = KIND_BITS.index(b)
        is_step = k > 0 and b in steps[-1].kinds and \
            z3.is_true(m.eval(steps[-1].kinds[b], model_completion=True))
        traces[KINDS[kind_index]] = _trace(model, enc, frames, steps, m, kind_index, is_step)
    result.verdict = "violation"
    result.kinds = tuple(KINDS[KIND_BITS.index(b)] for b in KIND_BITS if b in found)
    result.depth = k
    result.max_depth = k
    result.traces = traces
    result.limit = ""


# ------------------------------------------------------------------ traces

def replay_codes(model: Model, enc: Encoding, frames, steps, m):
    """The explicit engine's action codes for the run in Z3 model `m`, replayed through
    `model.apply`, each state checked against Z3's values; returns (codes, states, last det)."""
    state = model.initial_state()
    _check_frame(model, enc, enc.frame_values(m, frames[0]), state, 0)
    codes, det = [], None
    for t, step in enumerate(steps):
        act = step.act.value(m)
        code = act if act < enc.A else _entry_code(model, enc, state, enc.instances[act - enc.A])
        nxt, bits, det = model.apply(state, code)
        if nxt is None:
            raise AssertionError(f"internal: bmc step {t + 1} ({_describe(enc, act)}) is not "
                                 f"enabled in the explicit model")
        if bits >= 0 and bits & S.INFLIGHT_FULL:
            raise Inconclusive(f"more than {model.inflight} copies/commits in flight (model "
                               f"capacity) in the bmc counterexample")
        codes.append(code)
        state = nxt
        if t + 1 < len(steps) or not (bits & S.TRAP):
            _check_frame(model, enc, enc.frame_values(m, frames[t + 1]), state, t + 1)
    return codes, state, det


def _describe(enc: Encoding, act: int) -> str:
    if act < enc.A:
        return enc.model.agents[act].name
    inst = enc.instances[act - enc.A]
    return f"{ENTRY_NAMES[inst.kind]} of {enc.model.agents[inst.agent].name} at {inst.k}"


def _entry_key(model: Model, e: int) -> tuple:
    """An explicit in-flight entry as (kind, cta, ring, stage, value, part, agent, seq, cseq,
    peer), from its packed fields (checker/core/inflight.py): value is a copy's or read's tag or a
    commit's n; part a copy's (None where the ring's slots have one part); agent a read's or
    commit's; seq, cseq what a read or commit still waits for; peer whether another CTA issued
    a copy or commit. Fields an entry kind lacks are None."""
    f = [(e >> sh) & mask for sh, mask in model.entry_fields]
    kind = int(f[S.E_KIND])
    copy, read = kind == S.ENTRY_COPY, kind == S.ENTRY_READ
    several = copy and len(model.parts[f[S.E_RING]]) > 1
    name = ENTRY_NAMES[kind]
    if kind == S.ENTRY_COMMIT and f[S.E_BIDX] == S.COMMIT_ON_FULL:
        name += ":full"  # commit_full's entry: fires on full
    if read and f[S.E_BIDX] == S.READ_WRITES:
        name += ":write"  # write_async's entry
    return (name, int(f[S.E_CTA]), int(f[S.E_RING]), int(f[S.E_STAGE]),
            int(f[S.E_VAL]) - 1 if copy or read else int(f[S.E_VAL]),
            int(f[S.E_PART]) - 1 if several else None,
            None if copy else int(f[S.E_AGENT]), None if copy else int(f[S.E_SEQ]),
            int(f[S.E_CSEQ]) if kind == S.ENTRY_COMMIT else None,
            None if read else int(f[S.E_PEER]))


def _instance_key(model: Model, enc: Encoding, vals: dict, i: int) -> tuple:
    """Instance i, in flight in a frame's values, as `_entry_key` writes the explicit entry it
    stands for: seq and cseq count the agent's earlier reads and commit instances still in
    flight (what the explicit entry's counters hold: semantics.step, finish_read,
    commit_fired)."""
    inst = enc.instances[i]
    copy, read = inst.kind == S.ENTRY_COPY, inst.kind == S.ENTRY_READ
    several = copy and len(model.parts[inst.ring]) > 1
    reads = enc.reads_before(inst.agent, inst.k, i)
    commits = [j for kk, j in enc.commits_of[inst.agent] if kk < inst.k]
    return (_instance_name(inst), inst.cta, inst.ring, inst.stage, inst.value,
            inst.part if several else None,
            None if copy else inst.agent,
            None if copy else sum(1 for j in reads if vals[("inf", j)]),
            sum(1 for j in commits if vals[("inf", j)]) if inst.kind == S.ENTRY_COMMIT else None,
            None if read else int(model.agents[inst.agent].cta != inst.cta))


def _instance_name(inst) -> str:
    """`_entry_key`'s name of an instance's entry: its kind, ":full" for a commit on full."""
    full = inst.kind == S.ENTRY_COMMIT and inst.signal == S.FULL
    return ENTRY_NAMES[inst.kind] + (":full" if full else "") + (":write" if inst.writes else "")


def _entry_matches(model: Model, inst, e: int) -> bool:
    """Explicit entry `e` is instance `inst`, ready to land / fire / finish (its agent's
    earlier reads and commits done)."""
    key = _entry_key(model, e)
    several = inst.kind == S.ENTRY_COPY and len(model.parts[inst.ring]) > 1
    if key[:6] != (_instance_name(inst), inst.cta, inst.ring, inst.stage, inst.value,
                   inst.part if several else None):
        return False
    if inst.kind == S.ENTRY_COPY:
        return _bytes_of(model, e) == inst.nbytes and \
            key[9] == int(model.agents[inst.agent].cta != inst.cta)
    ready = key[6] == inst.agent and key[7] == 0
    return ready and (inst.kind == S.ENTRY_READ or
                      (key[8] == 0 and key[9] == int(model.agents[inst.agent].cta != inst.cta)))


def _bytes_of(model: Model, e: int) -> int:
    sh, mask = model.entry_fields[S.E_BIDX]
    return int(model.bytes_vals[(e >> sh) & mask])


def _entry_code(model: Model, enc: Encoding, state, inst) -> int:
    """The action code of the in-flight entry that is instance `inst` (equal entries are
    interchangeable: either gives the same successor)."""
    for j, e in enumerate(state[model.off_inf:model.off_inf + model.inflight]):
        if e and _entry_matches(model, inst, e):
            code = enc.A + j
            if model.apply(state, code)[0] is not None:
                return code
    raise AssertionError(f"internal: bmc instance {inst} is not in flight in the explicit model")


def _check_frame(model: Model, enc: Encoding, vals: dict, state, t: int) -> None:
    """Z3's values of frame t against the explicit state the replay reached."""
    def fail(what, ours, theirs):
        raise AssertionError(f"internal: bmc state {t} differs from the explicit model at "
                             f"{what}: z3 {ours}, explicit {theirs}")
    for a, agent in enumerate(model.agents):
        base = a * model.agf
        pos = enc.position(vals, a)
        pc, item = state[base + S.F_PC], state[base + S.F_ITEM]
        if pos < enc.lens[a]:
            ins = enc.progs[a][pos]
            if (pc, item) != (ins.pc, ins.item):
                fail(f"{agent.name} position", (ins.pc, ins.item), (pc, item))
        elif pc < len(agent.ops):
            fail(f"{agent.name} position", "finished", pc)
        if int(vals[("sync", a)]) != state[base + S.F_SYNC]:
            fail(f"{agent.name} at_sync", vals[("sync", a)], state[base + S.F_SYNC])
        for r in range(model.rings):
            ready = state[S.ring_pos(model.agf, a, r, S.RF_READY)]
            if int(vals[("ready", a, r)]) != ready:
                fail(f"{agent.name} ready", vals[("ready", a, r)], ready)
        for b in range(enc.n_bar):
            if vals[("arr", a, b)] != state[S.arrived_pos(model.agf, model.rings, a, b)]:
                fail(f"{agent.name} arrived", vals[("arr", a, b)],
                     state[S.arrived_pos(model.agf, model.rings, a, b)])
    for key in enc.sig_keys():
        c, r, s, kind = key
        b = model.off_sig + 4 * int(S.sig_index(model.tables, c, r, s, kind))
        if enc.parity:
            ours = tuple(int(vals[(n,) + key]) for n in ("ph", "pend", "tx", "obs"))
            theirs = tuple(state[b:b + 4])
        else:
            ours, theirs = vals[("cnt",) + key], state[b]
        if ours != theirs:
            fail(f"signal {key}", ours, theirs)
    T = model.tables
    for c in range(enc.ctas):
        for r in range(enc.rings):
            for s in range(model.max_stages):
                base = int(S.slot_pos(T, c, r, s))
                for p in range(model.max_parts):  # a part a slot lacks stays -1 there
                    ours = vals.get(("slot", c, r, s, p), -1)
                    if ours != state[base + p]:
                        fail(f"slot {(c, r, s)} part {p}", ours, state[base + p])
    for key in enc.window_keys():
        pos = int(S.window_field(T, *key))
        ours = (vals[("wk",) + key], vals[("wp",) + key])
        if ours != tuple(state[pos:pos + 2]):
            fail(f"{model.agents[key[0]].name} window {key[1:]}", ours, tuple(state[pos:pos + 2]))
    for b in range(enc.n_bar):
        for c in range(enc.ctas):
            pos = model.off_bar + 2 * (b * model.ctas + c)
            if (vals[("bar", b, c)], vals[("gen", b, c)]) != (state[pos], state[pos + 1]):
                fail(f"barrier {(b, c)}", (vals[("bar", b, c)], vals[("gen", b, c)]),
                     (state[pos], state[pos + 1]))
    # the entries, each with what it still waits for (a commit: its agent's earlier reads and
    # commits) and whether a peer issued it
    ours = Counter(_instance_key(model, enc, vals, i) + (enc.instances[i].nbytes,)
                   for i in range(enc.I) if vals[("inf", i)])
    theirs = Counter(_entry_key(model, e) + (_bytes_of(model, e)
                                             if _entry_key(model, e)[0] == "copy" else 0,)
                     for e in model.inflight_entries(state))
    if ours != theirs:
        fail("in-flight entries", dict(ours), dict(theirs))


def _trace(model, enc, frames, steps, m, kind_index: int, is_step: bool):
    codes, _, _ = replay_codes(model, enc, frames, steps, m)
    return trace_from_codes(model, codes, kind_index, is_step)
