"""`pipeproof gpu SPEC --replay [TRACE.itf.json]`: the reference kernel under the model's trace.

A counterexample of the model (an ITF file written by `pipeproof verify SPEC --trace X.itf.json`,
or, with `--replay` and no file, the model's own shortest trace, found by running the model
first) becomes a device-side schedule: one entry per trace step, saying who takes it. The
kernel (cuda_ref/codegen.py with `replay=True`, cuda_ref/emit_replay.py) keeps a global step
counter; before each op an agent spins, bounded by the `%globaltimer` deadline like every wait
of the kernel, until the counter equals the step the schedule gives its next op, performs the
op under the log lock and bumps the counter as it releases the lock. So the log's order is the
trace's order, and the log records what really happened: a wait that the hardware does not let
pass times out, a read finds what the slot really holds, an arrive above pending traps.

What the hardware does on its own is held to the trace where it allows it:

* a copy: the agent's `copy` step logs the issue and leaves the transfer to its destination
  CTA's *replay warp* (one more warp per CTA, no agent of the model). At the step where the
  trace lands the copy, that warp issues the `cp.async.bulk` onto a private mbarrier, waits
  for its bytes, and then applies `mbarrier.complete_tx` of the copy's bytes on `full[s]`,
  under the log lock: the landing is one step at its place in the trace, as in the model
  (bytes stored, then complete_tx). Holding the landing is delaying the issue, which no
  observer can tell from a copy still in flight;
* a `commit_empty`: its arrival fires at the trace's fire step, made by the replay warp of the
  destination CTA;
* an async read finishes at the trace's finish step, checked by its own agent then (before the
  agent's next op in the schedule).

The schedule covers the trace and, for an `overwrite_before_drain`, a few steps more: the
victim's steps until it reads the slot (the model's own steps, taken greedily; `extension`),
so the GPU shows the corrupted tile with its item numbers. After the schedule every agent runs
free; copies issued in the trace but never landed there are issued by the replay warps then,
and commits not fired then fire once their agent's earlier async reads have finished.

Which kinds the GPU can show (`observability`):

| kind | the GPU shows |
| --- | --- |
| deadlock | every agent waits at its last op until the deadline (`timeout` events) |
| read_before_fill | the read's tag mismatch (the slot holds another tag); a read while a copy into it is still in flight and the tag already matches is not observable: a landing is one step and cannot be made to overlap the read |
| overwrite_before_drain | the victim's later read finds the new tag |
| over_arrival | an arrive above pending: the trap (the warp stops); the other form (a barrier two phases ahead of every observer) is not observable: the hardware keeps parity only |
| tx_range | the trap |
| phase_alias | not observable: the hardware's waits see parity only |
| inflight_at_exit | the kernel keeps every CTA resident to its cluster barrier (touching an exited CTA is undefined), and marks the step that leaves a CTA without agents while a copy or commit of another CTA is in flight into it (`exit_inflight`; only its own: `exit_unawaited`, the warning, DESIGN R2), and any later update issued at it from another CTA (`late`); an async read in flight then, or a copy landing late, is not observable |

A run *reproduces* the trace when the GPU run shows the trace's kind (a trap for over_arrival
and tx_range) and the replay reached the trace's last step.

The schedule buffer (int32, uploaded), `Schedule.buffer()`:

    [0] T, the steps of the schedule (trace + extension)   [1] agents   [2] CTAs   [3] 0
    per agent a (at HDR + 4a):   op entries offset, count, finish entries offset, count
    per CTA c (at HDR + 4A + 4c): replay-warp entries offset, count, after-trace entries offset, count
    op entry (2 words): step, pc          finish entry (1 word): step
    replay-warp entry (10 words): step, kind (1 land, 2 fire), issue step of the copy, ring,
        stage, n (fire), the commit's agent (-1: none), the async reads of that agent it
        waits for, the agent's commit entries that fire before it (-1: none; after the trace:
        DESIGN R1, an agent's commits fire in issue order, across CTAs too), the agent's CTA
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.results import GPU_OUTCOME, KINDS

HDR = 4
OP_W, FIN_W, HELPER_W = 2, 1, 10
H_LAND, H_FIRE = 1, 2
EXTENSION_LIMIT = 64

# What the GPU run of each kind shows (cuda_ref.log OUTCOMES vocabulary): the failure kind a
# reproducing run must report.
GPU_KIND = GPU_OUTCOME
WHY_NOT = {
    "phase_alias": "a property of parity: the hardware's waits see phase_no mod 2 only, so a "
                   "signal outside the waiter's window answers as one inside it",
    "exit_read": "no copy or commit of another CTA is in flight into the CTA when it is gone, "
                 "only an async read (with, maybe, the CTA's own copies or commits: the warning "
                 "unawaited_at_exit), and the kernel finishes an agent's async reads after its "
                 "last step, unseen by the CTA's exit check (which sees copies and commits)",
    "late_landing": "a copy landing in a CTA gone already: the kernel's landing step is not an "
                    "event of its own and carries no mark",
    "over_arrival_ahead": "a barrier that ran two phases ahead of every observer raises nothing on "
                          "the hardware, which keeps parity only: the waits cannot tell",
    "read_in_flight": "the slot already holds the item; only a copy landing while the read is "
                      "reading could show it, and a landing is one step, before or after the read",
}


class ReplayError(ValueError):
    """A trace that cannot be replayed on this spec: str() is one line."""


@dataclass
class RStep:
    """One step of the schedule: its turn is `index` (0-based)."""
    index: int
    code: int                 # the model's action code
    actor: str
    action: str
    kind: str                 # agent | land | fire | finish
    agent: int = -1           # agent steps and finishes: the model agent
    pc: int = -1              # agent steps
    cta: int = -1             # land, fire: the destination CTA (its replay warp takes the step)
    issue: int = -1           # land: the turn of the copy step that issued it
    ring: int = 0             # fire
    stage: int = 0            # fire
    n: int = 0                # fire
    by: int = -1              # fire: the agent that issued the commit
    sig: int = 1              # fire: the signal kind it arrives on (1 empty; 0 full: commit_full)
    extension: bool = False   # after the trace (the victim's steps to its read)


@dataclass
class Observability:
    observable: bool
    gpu_kind: str | None      # what a reproducing GPU run reports
    why: str = ""             # why not observable, or a note on how it shows


@dataclass
class Schedule:
    spec_path: str
    kind: str                         # the trace's violation kind
    source: str                       # the ITF file, or "model"
    steps: list = field(default_factory=list)
    trace_steps: int = 0              # steps of the trace itself (the rest: extension)
    post_commits: list = field(default_factory=list)  # (cta, ring, stage, n, agent, reads
    #   needed, the agent's commit entries fired before it, the agent's CTA, the signal kind
    #   it arrives on: 1 empty, 0 full)
    agent_ctas: list = field(default_factory=list)
    observability: Observability | None = None
    victim: str = ""                  # overwrite_before_drain: the agent that reads too late
    overwrite: dict | None = None     # ... and what the overwrite did: {"agent" (the victim),
    #   "cta", "ring", "stage", "old", "new"}: the tag the victim expects, the tag stored over it
    n_agents: int = 0
    n_ctas: int = 1
    reason: str = ""                  # the model's sentence about the violation
    trace: object = None              # the checker.trace.Trace replayed (from the model)

    @property
    def total(self) -> int:
        return len(self.steps)

    def describe(self) -> str:
        ext = self.total - self.trace_steps
        more = f", then {ext} of {self.victim}'s to its read" if ext else ""
        src = "the model's shortest" if self.source == "model" else os.path.basename(self.source) + ":"
        return f"{src} {self.kind} trace ({self.trace_steps} steps{more})"

    def meta(self) -> dict:
        obs = self.observability
        out = {"trace": self.source, "kind": self.kind, "steps": self.total,
               "trace_steps": self.trace_steps,
               "observable": obs.observable if obs else None,
               "gpu_kind": obs.gpu_kind if obs else None}
        if self.overwrite:
            out["overwrite"] = dict(self.overwrite)
        return out

    def buffer(self) -> list[int]:
        """The int32 table the kernel reads (module docstring)."""
        n, k = self.n_agents, self.n_ctas
        ops = [[] for _ in range(n)]
        fins = [[] for _ in range(n)]
        helper = [[] for _ in range(k)]
        for s in self.steps:
            if s.kind == "agent":
                ops[s.agent].append((s.index, s.pc))
            elif s.kind == "finish":
                fins[s.agent].append(s.index)
            elif s.kind == "land":
                helper[s.cta].append((s.index, H_LAND, s.issue, 0, 0, 0, -1, 0, -1, -1))
            else:
                # (a fire's word 2, a landing's record index, is the signal kind it arrives on)
                helper[s.cta].append((s.index, H_FIRE, s.sig, s.ring, s.stage, s.n, s.by, 0, -1,
                                      self._cta_of(s.by)))
        post = [[] for _ in range(k)]
        for cta, ring, stage, nn, agent, need, before, src, sig in self.post_commits:
            post[cta].append((-1, H_FIRE, sig, ring, stage, nn, agent, need, before, src))
        head = [self.total, n, k, 0]
        table_len = HDR + 4 * n + 4 * k
        data: list[int] = []
        tables: list[int] = []
        for a in range(n):
            off = table_len + len(data)
            for st, pc in ops[a]:
                data += [st, pc]
            foff = table_len + len(data)
            data += fins[a]
            tables += [off, len(ops[a]), foff, len(fins[a])]
        for c in range(k):
            off = table_len + len(data)
            for row in helper[c]:
                data += list(row)
            poff = table_len + len(data)
            for row in post[c]:
                data += list(row)
            tables += [off, len(helper[c]), poff, len(post[c])]
        return head + tables + data

    def _cta_of(self, agent: int) -> int:
        return self.agent_ctas[agent] if 0 <= agent < len(self.agent_ctas) else -1


# ---------------------------------------------------------------- traces -> action codes


def read_itf(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as err:
        raise ReplayError(f"{path}: cannot read: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ReplayError(f"{path}: not an ITF trace (not JSON: {err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("states"), list) or not doc["states"]:
        raise ReplayError(f"{path}: not an ITF trace (no 'states'; write one with "
                          f"`pipeproof verify SPEC --trace X.itf.json`)")
    return doc


def itf_steps(doc: dict, source: str) -> tuple[str, list[tuple[str, str]]]:
    """(violation kind, [(actor, action)] of each step) of an ITF document."""
    meta = doc.get("#meta", {})
    kind = meta.get("violation")
    if kind not in KINDS:
        raise ReplayError(f"{source}: '#meta.violation' is {kind!r}, not a violation kind "
                          f"(expected one of: {', '.join(KINDS)})")
    out = []
    for i, st in enumerate(doc["states"][1:], start=1):
        actor = st.get("#meta", {}).get("actor") if isinstance(st, dict) else None
        action = st.get("action") if isinstance(st, dict) else None
        if not isinstance(actor, str) or not isinstance(action, str):
            raise ReplayError(f"{source}: states[{i}]: missing '#meta.actor' or 'action'")
        out.append((actor, action))
    return kind, out


def find_code(m: Model, state, actor: str, action: str):
    """The action code of `action` (as model.format_action prints it) in `state`, or None."""
    n = len(m.agents)
    cands = [i for i, a in enumerate(m.agents) if a.name == actor and m.current_op(state, i)]
    cands += [n + j for j in range(len(m.inflight_entries(state)))]
    for c in cands:
        if m.format_action(state, c) == action and m.apply(state, c)[0] is not None:
            return c
    return None


def codes_of(m: Model, steps: list[tuple[str, str]], source: str) -> list[int]:
    state = m.initial_state()
    codes = []
    for i, (actor, action) in enumerate(steps, start=1):
        code = find_code(m, state, actor, action)
        if code is None:
            raise ReplayError(f"{source}: step {i} ({action}) is not a step of the model of "
                              f"{m.spec.path} from the state the trace reached (was the trace "
                              f"written for this spec?)")
        nxt, bits, _ = m.apply(state, code)
        codes.append(code)
        if bits & S.TRAP and i < len(steps):
            raise ReplayError(f"{source}: step {i} ({action}) traps in the model, but the trace "
                              f"goes on")
        state = nxt
    return codes


# ---------------------------------------------------------------- observability


def _key(e: dict) -> tuple:
    return tuple(sorted(e.items()))


def _entries(m: Model, state) -> list[dict]:
    return [m.decode_entry(e) for e in m.inflight_entries(state)]


def _last_detail(m: Model, codes: list[int], kind: str):
    """(state before the last step, det of `kind` there: (x, y, z, w)) or (final state, det of
    the state property)."""
    k = KINDS.index(kind)
    state, before = m.initial_state(), None
    det = None
    for code in codes:
        before = state
        state, bits, det = m.apply(state, code)
    if codes and det is not None and bits & (1 << k):
        return before, tuple(int(v) for v in det[k * S.DET_W:k * S.DET_W + 4]), True
    sbits, sdet = m.state_violation_bits(state)
    return state, tuple(int(v) for v in sdet[k * S.DET_W:k * S.DET_W + 4]), False


def observability(m: Model, codes: list[int], kind: str) -> Observability:
    """Can the GPU show `kind` at the end of the trace `codes`? (module docstring table)."""
    if kind == "phase_alias":
        return Observability(False, None, WHY_NOT[kind])
    if kind == "deadlock":
        return Observability(True, "deadlock")
    if kind == "tx_range":
        return Observability(True, "trap")
    _, det, _ = _last_detail(m, codes, kind)
    x, y, z, w = det
    if kind == "over_arrival":
        if w == 0:
            return Observability(True, "trap")
        return Observability(False, None, WHY_NOT["over_arrival_ahead"])
    if kind == "read_before_fill":
        if z == w:
            return Observability(False, None, WHY_NOT["read_in_flight"])
        if z >= 0 and _order(m, z) > _order(m, w):
            return Observability(True, "overwrite_before_drain",
                                 "the slot holds a later tag: the GPU log names a mismatch by the "
                                 "tag found, so it reports overwrite_before_drain")
        return Observability(True, "read_before_fill")
    if kind == "overwrite_before_drain":
        return Observability(True, "overwrite_before_drain")
    if kind == "inflight_at_exit":
        before, _, _ = _last_detail(m, codes, kind)
        if w == 0:  # the CTA x is gone with something in flight into it
            into = [e for e in m.inflight_entries(before) if m.decode_entry(e)["cta"] == x]
            if any(m.decode_entry(e)["kind"] in ("copy", "commit") and _peer(m, e) for e in into):
                return Observability(True, "inflight_at_exit")
            if m.strict_exit and any(m.decode_entry(e)["kind"] in ("copy", "commit") for e in into):
                return Observability(True, "inflight_at_exit",
                                     "strict exit: the kernel marks the CTA's own copies or "
                                     "commits in flight at its exit (exit_unawaited)")
            return Observability(False, None, WHY_NOT["exit_read"])
        if codes and codes[-1] >= len(m.agents) and \
                m.decode_entry(before[m.off_inf + codes[-1] - len(m.agents)])["kind"] == "copy":
            return Observability(False, None, WHY_NOT["late_landing"])
        return Observability(True, "inflight_at_exit")
    return Observability(False, None, f"{kind}: no GPU realisation")


def _peer(m: Model, e: int) -> bool:
    """Whether in-flight entry `e` was issued by an agent of another CTA than it targets."""
    sh, mask = m.entry_fields[S.E_PEER]
    return bool((e >> sh) & mask)


def _order(m: Model, tag: int) -> float:
    return {m.tag_prologue: -0.5, m.tag_epilogue: float("inf")}.get(tag, tag)


# ---------------------------------------------------------------- the schedule


def build(m: Model, codes: list[int], kind: str, source: str, reason: str = "") -> Schedule:
    """The schedule of the trace `codes` (of violation `kind`), with its extension."""
    sched = Schedule(spec_path=str(m.spec.path), kind=kind, source=source,
                     n_agents=len(m.agents), n_ctas=m.ctas, reason=reason,
                     agent_ctas=[a.cta for a in m.agents])
    sched.observability = observability(m, codes, kind)
    codes = list(codes)
    sched.trace_steps = len(codes)
    if kind == "overwrite_before_drain":
        _, det, _ = _last_detail(m, codes, kind)
        slot, old, new, victim = det
        if 0 <= victim < len(m.agents):
            sched.victim = m.agents[victim].name
            ext = _extension(m, codes, victim, slot)
            codes += ext
            cta, ring, stage = _slot_where(m, slot)
            # The victim's read shows the overwrite by the tag the landing or write stored,
            # `new`: the log calls it overwrite_before_drain whatever the tags' order (an
            # older tag stored over a newer one reads as an earlier tag: by the order alone,
            # read_before_fill; cuda_ref.log.classify).
            sched.overwrite = {"agent": sched.victim, "cta": int(cta),
                               "ring": m.ring_names[int(ring)], "stage": int(stage),
                               "old": int(old), "new": int(new)}
            if not _reads_slot_at_end(m, codes, victim, (cta, ring, stage)):
                sched.observability = Observability(
                    False, None, f"after the overwrite the model lets {sched.victim} reach no "
                    f"read of cta{cta}.slot[{stage}] (it blocks first), so no read on the GPU "
                    f"can show the overwritten tile")
    n = len(m.agents)
    state = m.initial_state()
    pending: list[tuple[tuple, int]] = []   # in-flight copies: (entry key, issuing turn)
    commits: list[tuple[tuple, int, int]] = []  # in-flight commits: (key, issuing turn, agent)
    fins, fired = [0] * n, [0] * n   # per agent: async reads finished, commit entries fired
    for turn, code in enumerate(codes):
        before = _entries(m, state)
        nxt, bits, _ = m.apply(state, code)
        if nxt is None:
            raise ReplayError(f"{source}: step {turn + 1} is not enabled in the model")
        action, actor = m.format_action(state, code), m.actor(state, code)
        ext = turn >= sched.trace_steps
        if code < n:
            pc = m.agent_field(state, code, S.F_PC)
            step = RStep(turn, code, actor, action, "agent", agent=code, pc=pc, extension=ext)
            left = [_key(e) for e in before]
            for e in _entries(m, nxt):
                k = _key(e)
                if k in left:
                    left.remove(k)
                elif e["kind"] == "copy":
                    pending.append((k, turn))
                elif e["kind"] == "commit":
                    commits.append((_commit_key(e), turn, code))
        else:
            e = m.decode_entry(state[m.off_inf + code - n])
            if e["kind"] == "copy":
                k = _key(e)
                j = next(i for i, (pk, _) in enumerate(pending) if pk == k)
                issue = pending.pop(j)[1]
                step = RStep(turn, code, actor, action, "land", cta=e["cta"], issue=issue,
                             extension=ext)
            elif e["kind"] == "commit":
                j = next((i for i, c in enumerate(commits) if c[0] == _commit_key(e)), None)
                by = commits.pop(j)[2] if j is not None else -1
                if by >= 0:
                    fired[by] += 1
                step = RStep(turn, code, actor, action, "fire", cta=e["cta"],
                             ring=m.ring_names.index(e["ring"]), stage=e["stage"], n=e["n"],
                             by=by, sig=_fire_signal(e), extension=ext)
            else:
                a = next(i for i, ag in enumerate(m.agents) if ag.name == e["agent"])
                fins[a] += 1
                step = RStep(turn, code, actor, action, "finish", agent=a, extension=ext)
        sched.steps.append(step)
        state = nxt
        if bits & S.TRAP:
            break
    # commits in flight at the end fire after the schedule, each once its agent's earlier async
    # reads have finished and its agent's commit entries issued before it have fired (R1)
    left = list(commits)
    for e in _entries(m, state):
        if e["kind"] == "commit":
            j = next((i for i, c in enumerate(left) if c[0] == _commit_key(e)), None)
            _, turn, a = left.pop(j) if j is not None else (None, -1, -1)
            if a < 0:
                a = next((i for i, ag in enumerate(m.agents) if ag.name == e.get("agent")), -1)
            need = fins[a] + e["after"] if a >= 0 else 0
            before = fired[a] + sum(1 for _, t, b in commits if b == a and 0 <= t < turn) \
                if a >= 0 and turn >= 0 else -1
            sched.post_commits.append((e["cta"], m.ring_names.index(e["ring"]), e["stage"],
                                       e["n"], a, need, before, m.agents[a].cta if a >= 0 else -1,
                                       _fire_signal(e)))
    return sched


def _fire_signal(e: dict) -> int:
    """The signal kind a commit entry arrives on when it fires: 0 full (commit_full), 1 empty."""
    return 0 if e.get("signal") == "full" else 1


def _commit_key(e: dict) -> tuple:
    """A commit entry without what changes while it waits (the reads and commits before it)."""
    return tuple(sorted((k, v) for k, v in e.items() if k not in ("after", "after_commits")))


def _extension(m: Model, codes: list[int], victim: int, slot: int) -> list[int]:
    """The victim's steps after the trace until it reads (or finishes an async read of) the
    overwritten slot: its own steps, or its async reads finishing, whichever the model allows
    first; none when it is blocked (then the run goes on free)."""
    state = m.initial_state()
    for code in codes:
        state = m.apply(state, code)[0]
    cta, ring, stage = _slot_where(m, slot)
    n = len(m.agents)
    name = m.agents[victim].name
    out = []
    for _ in range(EXTENSION_LIMIT):
        op = m.current_op(state, victim)
        nxt, bits, _ = m.apply(state, victim) if op is not None else (None, 0, None)
        if nxt is not None and not bits & S.TRAP:
            out.append(victim)
            r = m.ring_names.index(op.ring)
            if OP_EFFECTS[op.name].checks_read and m.ring_stage_phase(state, victim, op)[0] == stage \
                    and r == ring and m.agents[victim].cta == cta:
                return out
            state = nxt
            continue
        taken = False
        for j, e in enumerate(_entries(m, state)):
            if e["kind"] == "read" and e["agent"] == name:
                nxt, bits, _ = m.apply(state, n + j)
                if nxt is None or bits & S.TRAP:
                    continue
                out.append(n + j)
                if (e["cta"], m.ring_names.index(e["ring"]), e["stage"]) == (cta, ring, stage):
                    return out
                state, taken = nxt, True
                break
        if not taken:
            return out
    return out


def _reads_slot_at_end(m: Model, codes: list[int], victim: int, where) -> bool:
    """Whether the last step of `codes` is the victim's read, or its async read's finish, of
    the slot `where` (cta, ring, stage): the extension reached it."""
    if not codes:
        return False
    state = m.initial_state()
    for code in codes[:-1]:
        state = m.apply(state, code)[0]
    code, n = codes[-1], len(m.agents)
    if code == victim:
        op = m.current_op(state, victim)
        return (op is not None and OP_EFFECTS[op.name].checks_read and m.agents[victim].cta == where[0]
                and m.ring_names.index(op.ring) == where[1]
                and m.ring_stage_phase(state, victim, op)[0] == where[2])
    if code >= n:
        e = m.decode_entry(state[m.off_inf + code - n])
        return (e["kind"] == "read" and e["agent"] == m.agents[victim].name
                and (e["cta"], m.ring_names.index(e["ring"]), e["stage"]) == tuple(where))
    return False


def _slot_where(m: Model, pos: int) -> tuple[int, int, int]:
    """(cta, ring, stage) of a slot's (or a slot part's) position in the state."""
    if hasattr(m, "slot_of"):
        return tuple(m.slot_of(pos)[:3])
    i = pos - m.off_slot
    return i // m.rings // m.max_stages, (i // m.max_stages) % m.rings, i % m.max_stages


def from_itf(m: Model, path: str) -> Schedule:
    doc = read_itf(path)
    kind, steps = itf_steps(doc, path)
    codes = codes_of(m, steps, path)
    return build(m, codes, kind, path, doc.get("#meta", {}).get("description", ""))


def from_trace(m: Model, trace) -> Schedule:
    """The schedule of a checker.trace.Trace (a verify result's counterexample)."""
    codes = codes_of(m, [(s.actor, s.action) for s in trace.steps], "the model's trace")
    sched = build(m, codes, trace.kind, "model", trace.reason)
    sched.trace = trace
    return sched


def from_model(m: Model, result) -> tuple[Schedule | None, list[tuple[str, str]]]:
    """The schedule of the first kind at the minimal depth that the GPU can show (a verify
    Result), and (kind, why) for each kind found there that it cannot. (None, ...) when no
    kind is observable or the model found none."""
    unseen, chosen = [], None
    for kind in result.kinds:
        sched = from_trace(m, result.traces[kind])
        obs = sched.observability
        if not obs.observable:
            unseen.append((kind, obs.why))
        elif chosen is None:
            chosen = sched
    return chosen, unseen


# ---------------------------------------------------------------- judging a run


def judge(sched: Schedule, report) -> tuple[str, str]:
    """(verdict, words) of one GPU run (a cuda_ref.log.RunReport) under `sched`:
    `reproduced`, `not reproduced` or `not observable`."""
    log = report.log
    rep = log.get("replay") or {}
    reached = rep.get("reached")
    stalls = [e for e in log["events"] if e.get("result") == "timeout" and "turn" in e]
    obs = sched.observability
    if obs is None or not obs.observable:
        return "not observable", (obs.why if obs else "")
    want = obs.gpu_kind
    got = report.kinds
    if want == "trap":
        ok = "trap" in got
        return ("reproduced" if ok else "not reproduced"), (
            f"trapped at step {reached + 1 if reached is not None else '?'} of {sched.total}"
            if ok else f"no trap (outcome {report.outcome})")
    if reached is not None and reached < sched.trace_steps:
        first = stalls[0] if stalls else None
        who = f": {first['agent']} waited for step {first['turn']}" if first else ""
        return "not reproduced", (f"the replay stopped after step {reached} of "
                                  f"{sched.trace_steps}{who}")
    if want in got:
        return "reproduced", ""
    return "not reproduced", f"the GPU run ended {report.outcome}" + (
        f" ({', '.join(got)})" if got else "")
