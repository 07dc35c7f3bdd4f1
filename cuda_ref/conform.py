"""Conformance: replay an event log recorded on a GPU through the model (issue 5, part 6).

`conform(spec, log)` answers whether the log is a path of the model: every recorded step,
taken in timestamp order, is an enabled transition from the state reached so far and agrees
with what the model says about it. `load_log(path)` reads and validates a log file.

The log (written by cuda_ref's runner):

    {"spec": PATH, "device": STR, "command": STR, "seed": S, "run": K, "outcome": OUTCOME,
     "events": [EVENT, ...]}

OUTCOME is one of `ok`, `deadlock`, `read_before_fill`, `overwrite_before_drain`, `trap`. An
EVENT is one of:

- an agent step: `{"t", "agent", "op", "pc", "item", "stage", "phase", "result"}` with
  `agent` a model agent name (`consumer[1]`, `cta0.producer[0]`), `op` the name of the op at
  `pc` in that agent's flattened program (`drain` steps are `drain`), `result` `ok` or
  `tag_mismatch` (reads only). A `try_*` step adds `"ready": bool`.
- a timeout: the same keys with `"result": "timeout"`. It is not a step: it says the agent was
  stuck at that op when the run ended.
- a copy landing `{"t", "agent": "cta<c>.copy", "op": "land", "cta": c, "stage", "item": tag,
  "bytes"}`, a commit firing `{"t", "agent": "cta<c>.commit", "op": "fire", "cta": c, "stage",
  "n"}`, an async read finishing `{"t", "agent": NAME, "op": "finish", "stage", "item"}`.
  Any event may add `"ring": NAME` (default: any ring for these three, the op's ring for steps).

Unknown keys are ignored; known keys are type-checked.

Rules of the replay
-------------------

Order. Events are taken in order of `t` (stable: list order breaks ties first). Events with
EQUAL `t` form a group that may be taken in any order that works; the search over a group's
orders is a depth-first search, list order first, memoised on (group, events left, model
state) and bounded by `max_nodes`; it backtracks into earlier groups when a later one fails.
Each agent's own events must follow its program (pc, item, stage, phase are fixed by the
program alone); the first event that cannot, in any order of its timestamp group, ends the
search as soon as the replay reaches its group. There is no other slack: a landing recorded
after the step that needed it conforms only when both carry the same `t` (the issue's rule).
So the recorder must stamp a signalling op (arrive, expect_tx, copy issue, commit, write, a
`sync` arrival: a `sync` event is the agent's arrival) no later than it takes effect, a
waiting op (wait, try, read) no earlier than it passed, and a landing no later than the
first step that relied on it.

Matching a step. Agent `agent` must be at `pc` with that op; `item` must be its item number
(body ops only: outside the body the item is not compared); `stage` and `phase` (the lap
count, not its parity) must be its stage and phase on the op's ring (ring ops only); the step
must be enabled. A `try_*` step's `ready` must be the model's answer. A `read`/`read_async`
is `ok` only when the model's slot holds the reader's item, and `tag_mismatch` only when the
model reports read_before_fill on that step (another item, or a copy into the slot still in
flight: the GPU may see one region of the item missing while the tag matches; a read that saw
everything is `ok` even with such a copy in flight, since its data may have arrived). A landing, firing or finish must match
an in-flight entry of the model (cta, stage, item/tag, bytes, n, agent) that may complete now.
A step on which the model traps (an arrive above pending, a tx-count out of range) conforms
only in a log whose outcome is `trap`, and nothing may follow it.

At the end of the log (only after every step was replayed):

- Timeouts (at most one per agent): the agent must be at that op (pc, op, item, stage, phase
  as above), and the op must not be enabled in the final state, nor after everything still
  in flight has completed (the GPU had the whole deadline to land its copies, which are
  logged only when observed): some order of completing every in-flight copy, commit and
  async read must leave every timed-out op disabled.
- Completeness (every outcome but `trap`): each agent has finished its program or has a
  timeout event; a log that stops an agent early is not a record of a run. A `trap` kills
  the context, so a trap log is checked only as a prefix of a path.
- Outcome `read_before_fill` / `overwrite_before_drain`: the model must report that kind on
  some step of the replayed path (the GPU sees the tag mismatch at a read; the model reports
  an overwrite at the store that caused it).
- The log itself must be consistent (checked by `load_log`): `ok` has no timeouts and no
  tag mismatches, `deadlock` has a timeout.

A log naming an agent the spec lacks, or a CTA it lacks, is bad input (`LogError`), not a
non-conforming log.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

from pipeproof.backends import amd
from pipeproof.backends.base import AMD, EMPTY, FULL
from pipeproof.checker import semantics as S
from pipeproof.checker.model import Model, compile_model
from pipeproof.checker.program import OP_EFFECTS
from pipeproof.checker.result import KINDS
from pipeproof.spec.schema import OPS, RING_OPS, SpecError

OUTCOMES = ("ok", "deadlock", "read_before_fill", "overwrite_before_drain", "trap")
RESULTS = ("ok", "timeout", "tag_mismatch")
ASYNC_OPS = {"land": "copy", "fire": "commit", "finish": "read"}   # event op -> entry kind
READ_OPS = ("read", "read_async")
TAG_OUTCOMES = ("read_before_fill", "overwrite_before_drain")
DEFAULT_MAX_NODES = 200_000
SETTLE_LIMIT = 4_000


class LogError(SpecError, ValueError):
    """Bad log input. str() is one line: `FILE: events[3]: key 'phase': what is wrong`."""


@dataclass(frozen=True)
class ConformResult:
    ok: bool
    index: int | None            # list index of the first event that is not a step (None: none)
    message: str                 # one line
    steps: int                   # events replayed as steps (on the furthest path when not ok)
    state: tuple | None = field(default=None, compare=False, repr=False)  # final model state
    view: dict | None = field(default=None, compare=False, repr=False)    # model.view(state)
    inconclusive: bool = False   # the search bound was reached before an answer
    order: tuple = field(default=(), compare=False, repr=False)  # event indices as replayed


# ---------------------------------------------------------------------------- the log file

def load_log(path) -> dict:
    """Read and validate a log file; every problem is a one-line `LogError` naming the file."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as err:
        raise LogError(f"{path}: cannot read: {err.strerror or err}") from None
    except UnicodeDecodeError as err:
        raise LogError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise LogError(f"{path}: not valid JSON: {err.msg} (line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise LogError(f"{path}: not valid JSON: nested too deeply") from None
    return validate_log(doc, path)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _show(v) -> str:
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_log(doc, source: str = "<log>") -> dict:
    """Check the schema of a loaded log document; returns it unchanged."""
    def fail(where, msg):
        raise LogError(f"{source}: {where}{msg}")

    if not isinstance(doc, dict):
        fail("", f"the log must be a JSON object, got {type(doc).__name__}")
    for key, kind in (("spec", str), ("device", str), ("command", str), ("outcome", str),
                      ("run", int), ("seed", int), ("events", list)):
        if key not in doc:
            fail("", f"missing key '{key}'")
        v = doc[key]
        if key == "seed" and v is None:
            continue
        if kind is int and not _is_int(v):
            fail("", f"key '{key}': must be an integer, got {_show(v)}")
        if kind is not int and not isinstance(v, kind):
            fail("", f"key '{key}': must be a {'string' if kind is str else 'list'}, got {_show(v)}")
    if doc["outcome"] not in OUTCOMES:
        fail("", f"key 'outcome': unknown outcome {_show(doc['outcome'])} (expected one of: {', '.join(OUTCOMES)})")
    timeouts = mismatches = 0
    for i, ev in enumerate(doc["events"]):
        where = f"events[{i}]: "
        if not isinstance(ev, dict):
            fail(where, f"an event must be a JSON object, got {_show(ev)}")

        def need(key, check=_is_int, what="an integer"):
            if key not in ev:
                fail(where, f"missing key '{key}'")
            if not check(ev[key]):
                fail(where, f"key '{key}': must be {what}, got {_show(ev[key])}")

        def nonneg(v):
            return _is_int(v) and v >= 0

        need("t")
        need("agent", lambda v: isinstance(v, str) and v != "", "a non-empty string")
        need("op", lambda v: isinstance(v, str), "a string")
        if "ring" in ev and not isinstance(ev["ring"], str):
            fail(where, f"key 'ring': must be a string, got {_show(ev['ring'])}")
        op = ev["op"]
        if op in ASYNC_OPS:
            if ev.get("result", "ok") != "ok":
                fail(where, f"key 'result': a {op} event's result must be \"ok\", got {_show(ev['result'])}")
            if op != "finish":
                need("cta", nonneg, "an integer >= 0")
            need("stage", nonneg, "an integer >= 0")
            if op == "fire":
                need("n", lambda v: _is_int(v) and v >= 1, "an integer >= 1")
            else:
                need("item")
            if op == "land":
                need("bytes", nonneg, "an integer >= 0")
            if op != "finish":
                unit = "copy" if op == "land" else "commit"
                if ev["agent"] != f"cta{ev['cta']}.{unit}":
                    fail(where, f"key 'agent': a {op} event in cta {ev['cta']} is recorded as "
                                f"\"cta{ev['cta']}.{unit}\", got {_show(ev['agent'])}")
            continue
        if op not in OPS:
            fail(where, f"key 'op': unknown op {_show(op)} (expected one of: "
                        f"{', '.join(OPS + tuple(ASYNC_OPS))})")
        need("pc", nonneg, "an integer >= 0")
        need("item")
        need("stage", nonneg, "an integer >= 0")
        need("phase")
        need("result", lambda v: v in RESULTS, f"one of {', '.join(RESULTS)}")
        if ev["result"] == "tag_mismatch":
            if op not in READ_OPS:
                fail(where, f"key 'result': only a read can have a tag mismatch, not {op}")
            mismatches += 1
        if ev["result"] == "timeout":
            timeouts += 1
        if op.startswith("try_") and ev["result"] == "ok":
            need("ready", lambda v: isinstance(v, bool), "true or false")
        elif "ready" in ev and not isinstance(ev["ready"], bool):
            fail(where, f"key 'ready': must be true or false, got {_show(ev['ready'])}")
    outcome = doc["outcome"]
    if outcome == "ok" and (timeouts or mismatches):
        fail("", f"key 'outcome': \"ok\" but the log has {timeouts} timeout(s) and {mismatches} tag mismatch(es)")
    if outcome == "deadlock" and not timeouts:
        fail("", "key 'outcome': \"deadlock\" but no event has result \"timeout\"")
    return doc


# ---------------------------------------------------------------------------- describing

def event_text(ev: dict) -> str:
    """`consumer[1] wait_full pc=0 item=3 stage=0 phase=1 at t=1234`."""
    op = ev.get("op")
    ring = f" ring={ev['ring']}" if "ring" in ev else ""
    if op == "land":
        body = f"land{ring} stage={ev.get('stage')} item={ev.get('item')} bytes={ev.get('bytes')}"
    elif op == "fire":
        body = f"fire{ring} stage={ev.get('stage')} n={ev.get('n')}"
    elif op == "finish":
        body = f"finish{ring} stage={ev.get('stage')} item={ev.get('item')}"
    else:
        body = f"{op} pc={ev.get('pc')} item={ev.get('item')} stage={ev.get('stage')} phase={ev.get('phase')}"
        if "ready" in ev:
            body += f" ready={str(ev['ready']).lower()}"
        if ev.get("result") not in (None, "ok"):
            body += f" {ev['result']}"
    return f"{ev.get('agent')} {body} at t={ev.get('t')}"


class _Limit(Exception):
    pass


@dataclass
class _Event:
    index: int       # position in the log's list
    raw: dict
    kind: str        # "agent" | "copy" | "commit" | "read"
    agent: int       # model agent index (agent steps, finishes), else -1


class _Replay:
    def __init__(self, model: Model, log: dict, source: str, max_nodes: int):
        self.m = model
        self.T = model.tables
        self.log = log
        self.source = source
        self.outcome = log["outcome"]
        self.max_nodes = max_nodes
        self.n_agents = len(model.agents)
        self.names = {a.name: i for i, a in enumerate(model.agents)}
        self.steps: list[_Event] = []
        self.timeouts: list[_Event] = []
        self._resolve()
        self.steps.sort(key=lambda e: (e.raw["t"], e.index))
        self.groups = []
        for e in self.steps:
            if self.groups and self.steps[self.groups[-1][0]].raw["t"] == e.raw["t"]:
                self.groups[-1].append(self.groups[-1][-1] + 1)
            else:
                start = self.groups[-1][-1] + 1 if self.groups else 0
                self.groups.append([start])
        self.groups = [tuple(g) for g in self.groups]
        self.outcome_bit = 1 << KINDS.index(self.outcome) if self.outcome in TAG_OUTCOMES else 0
        self.group_of = [g for g, grp in enumerate(self.groups) for _ in grp]
        self.cut = self._program_order_check()

    # -------------------------------------------------------------- program order, statically

    def _program(self, a):
        """(pc, op, item, stage, phase) of each op agent `a` executes, in order: its program
        alone decides them (waits decide only when, never which op comes next)."""
        m = self.m
        ag = m.agents[a]
        stages, phases = list(ag.initial_stages), list(ag.initial_phases)
        for pc, item in ag.executed():
            op = ag.ops[pc][0]
            r = m.ring_names.index(op.ring)
            yield pc, op, item, stages[r], phases[r]
            move = OP_EFFECTS[op.name].move
            if move == "advance":
                stages[r] += 1
                if stages[r] == m.ring_specs[r].stages:
                    stages[r], phases[r] = 0, phases[r] + 1
            elif move == "reset":
                stages[r], phases[r] = ag.initial_stages[r], ag.initial_phases[r]

    @staticmethod
    def _matches(raw, ag, pos) -> bool:
        pc, op, item, stage, phase = pos
        return (raw["pc"] == pc and raw["op"] == op.name
                and not (ag.body_start <= pc < ag.body_end and raw["item"] != item)
                and not (op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase))
                and raw.get("ring", op.ring) == op.ring)

    def _program_order_check(self):
        """(step position, message) of the earliest agent step that cannot be its agent's next
        op in any order of equal-timestamp events, or None. Such a log fails whatever the
        interleaving, so the search stops when it reaches that event's group."""
        m = self.m
        mine = {}
        for k, ev in enumerate(self.steps):
            if ev.kind == "agent":
                mine.setdefault(ev.agent, []).append(k)
        worst = None
        for a, ks in mine.items():
            ag = m.agents[a]
            prog = self._program(a)
            cur = next(prog, None)
            i, failed = 0, None
            while i < len(ks) and failed is None:
                j = i
                while j < len(ks) and self.steps[ks[j]].raw["t"] == self.steps[ks[i]].raw["t"]:
                    j += 1
                tie = ks[i:j]   # this agent's events of one timestamp: any order of them
                while tie:
                    k = next((k for k in tie if cur is not None
                              and self._matches(self.steps[k].raw, ag, cur)), None)
                    if k is None:
                        failed = tie[0]
                        break
                    tie.remove(k)
                    cur = next(prog, None)
                i = j
            if failed is not None and (worst is None or failed < worst[0]):
                if cur is None:
                    where = "it has finished its program"
                else:
                    pc, op, item, stage, phase = cur
                    where = f"it is at pc {pc} ({op.text}, item {item}, stage {stage}, phase {phase})"
                ev = self.steps[failed]
                worst = (failed, f"event {ev.index} ({event_text(ev.raw)}): after its earlier events {where}")
        return worst

    # -------------------------------------------------------------- resolving names

    def _resolve(self):
        m = self.m
        timed_out = {}
        for i, ev in enumerate(self.log["events"]):
            op = ev["op"]
            where = f"{self.source}: events[{i}]: "
            if op in ("land", "fire"):
                if ev["cta"] >= m.ctas:
                    raise LogError(f"{where}key 'cta': {ev['cta']} is not a CTA of {m.spec.path} "
                                   f"(cluster_size {m.ctas})")
                self.steps.append(_Event(i, ev, ASYNC_OPS[op], -1))
                continue
            if "ring" in ev and ev["ring"] not in m.ring_names:
                raise LogError(f"{where}key 'ring': {m.spec.path} has no ring {_show(ev['ring'])} "
                               f"(rings: {', '.join(m.ring_names)})")
            a = self.names.get(ev["agent"])
            if a is None:
                shown = ", ".join(list(self.names)[:12]) + (", ..." if len(self.names) > 12 else "")
                raise LogError(f"{where}key 'agent': {m.spec.path} has no agent {_show(ev['agent'])} "
                               f"(agents: {shown})")
            if op == "finish":
                self.steps.append(_Event(i, ev, "read", a))
            elif ev["result"] == "timeout":
                if a in timed_out:
                    raise LogError(f"{where}{ev['agent']} already timed out at events[{timed_out[a]}]")
                timed_out[a] = i
                self.timeouts.append(_Event(i, ev, "agent", a))
            else:
                self.steps.append(_Event(i, ev, "agent", a))

    # -------------------------------------------------------------- one event

    def _position(self, state, a):
        """`pc 2 (arrive_empty, item 0, stage 1, phase 0)` or `its end (finished)`."""
        m = self.m
        pc = m.agent_field(state, a, S.F_PC)
        op = m.current_op(state, a)
        if op is None:
            return "its end (finished)"
        stage, phase = m.ring_stage_phase(state, a, op)
        return f"pc {pc} ({op.text}, item {m.agent_field(state, a, S.F_ITEM)}, stage {stage}, phase {phase})"

    def _signal_text(self, state, sig, phase):
        m = self.m
        b = m.off_sig + 4 * sig
        name = m.sig_short(sig)
        if m.backend == AMD:
            r = (sig // 2 // m.max_stages) % m.rings
            ring = m.ring_specs[r]
            threshold = amd.full_threshold if sig % 2 == FULL else amd.empty_threshold
            need = threshold(phase, ring.expected(sig % 2))
            return f"{name} count={state[b]} (a wait at phase {phase} needs count >= {need})"
        parity = "odd" if phase % 2 == 0 else "even"
        return (f"{name} phase_no={state[b]} pending={state[b + 1]} tx={state[b + 2]} "
                f"(a wait at phase {phase} passes once phase_no is {parity})")

    def _why_disabled(self, state, a, op):
        m, T = self.m, self.T
        cta = m.agents[a].cta
        r = m.ring_names.index(op.ring)
        stage, phase = m.ring_stage_phase(state, a, op)
        if op.name in ("wait_full", "wait_empty", "drain"):
            kind = FULL if op.name == "wait_full" else EMPTY
            return "not enabled: " + self._signal_text(state, S.sig_index(T, cta, r, stage, kind), phase)
        if op.name == "read_wait":
            n = S.reads_in_flight(T, np.array(state, dtype=np.int64), a)
            return f"not enabled: {n} async read(s) in flight, read_wait {op.n} needs at most {op.n}"
        if op.name == "sync_wait":
            b = m.barrier_names.index(op.barrier)
            gen = state[S.bar_pos(T, b, cta) + 1]
            arrived = state[S.arrived_pos(m.agf, m.rings, a, b)]
            return (f"not enabled: barrier {op.barrier} of cta{cta} is at generation {gen}, "
                    f"the agent waits for generation {max(arrived, 1)}")
        return "not enabled"

    def _trap_text(self, state, action, bits, det):
        from pipeproof.checker.trace import explain_step
        for k, kind in enumerate(KINDS):
            if bits & (1 << k) and det[k * S.DET_W] != -1:
                return f"{kind}: {explain_step(self.m, k, det[k * S.DET_W:(k + 1) * S.DET_W], state, action)}"
        return "a hardware trap"

    def _apply(self, state, action):
        nxt, bits, det = self.m.apply(state, action)
        if nxt is not None and bits & S.INFLIGHT_FULL:
            raise _Limit(f"the model's room for in-flight copies and commits ({self.m.inflight}) ran out")
        return nxt, bits, det

    def candidates(self, state, ev: _Event):
        """([(action, next_state, bits)], reason when the list is empty)."""
        if ev.kind == "agent":
            return self._agent_candidates(state, ev)
        return self._entry_candidates(state, ev)

    def _agent_candidates(self, state, ev):
        m, T, raw, a = self.m, self.T, ev.raw, ev.agent
        ag = m.agents[a]
        pc = m.agent_field(state, a, S.F_PC)
        op = m.current_op(state, a)
        if op is None or pc != raw["pc"] or op.name != raw["op"]:
            return [], f"{ag.name} is at {self._position(state, a)}"
        item = m.agent_field(state, a, S.F_ITEM)
        stage, phase = m.ring_stage_phase(state, a, op)
        if ag.body_start <= pc < ag.body_end and raw["item"] != item:
            return [], f"{ag.name} is at {self._position(state, a)}: item {item}, not {raw['item']}"
        if op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase):
            return [], f"{ag.name} is at {self._position(state, a)}: stage {stage} phase {phase}"
        if "ring" in raw and raw["ring"] != op.ring:
            return [], f"{ag.name}'s op at pc {pc} ({op.text}) is on ring {op.ring}"
        if m.agent_field(state, a, S.F_SYNC) == 1:
            b = m.barrier_names.index(op.barrier)
            pos = S.bar_pos(T, b, ag.cta)
            return [], (f"{ag.name} already arrived at sync {op.barrier} and is blocked there "
                        f"({state[pos]} of {int(T.bar_count[b, ag.cta])} arrivals)")
        nxt, bits, det = self._apply(state, a)
        if nxt is None:
            return [], self._why_disabled(state, a, op)
        r = m.ring_names.index(op.ring)
        if op.name.startswith("try_"):
            ready = bool(nxt[S.ring_pos(m.agf, a, r, S.RF_READY)])
            if ready != raw["ready"]:
                kind = FULL if op.name == "try_full" else EMPTY
                sig = S.sig_index(T, ag.cta, r, stage, kind)
                return [], (f"the model's {op.name} answers ready={str(ready).lower()}: "
                            f"{self._signal_text(state, sig, phase)}")
        if op.name in READ_OPS:
            pos = S.slot_pos(T, ag.cta, r, stage)
            held = state[pos]
            want = int(S.op_tag(T, S.op_row(T, a, pc), item))  # the fill this read pairs with
            what = "nothing" if held < 0 else m.tag_text(held)
            if raw["result"] == "ok" and held != want:
                return [], (f"{m.slot_name(pos)} holds {what} in the model, so the read of "
                            f"{m.tag_text(want)} must mismatch")
            # A copy into the slot still in flight is read_before_fill too (docs/rules.md "Fills,
            # reads and tags"): the GPU can see one region of the item missing while the
            # slot's tag already matches.
            if raw["result"] == "tag_mismatch" and held == want and not bits & S.READ_BEFORE_FILL:
                return [], (f"{m.slot_name(pos)} holds {m.tag_text(want)} and no copy into it "
                            f"is in flight in the model, so the read cannot mismatch")
        if bits & S.TRAP and self.outcome != "trap":
            return [], (f"the model traps here ({self._trap_text(state, a, bits, det)}), "
                        f"but the log's outcome is {self.outcome}")
        return [(a, nxt, bits)], ""

    def _entry_candidates(self, state, ev):
        m, raw = self.m, ev.raw
        off = m.off_inf
        out, seen, blocked, present, trap_reason = [], set(), [], [], ""
        for j in range(m.inflight):
            e = state[off + j]
            if e == 0:
                break
            d = m.decode_entry(e)
            present.append(d)
            if d["kind"] != ev.kind or d["stage"] != raw["stage"]:
                continue
            if "ring" in raw and d["ring"] != raw["ring"]:
                continue
            if ev.kind == "copy" and (d["cta"], d["tag"], d["bytes"]) != (raw["cta"], raw["item"], raw["bytes"]):
                continue
            if ev.kind == "commit" and (d["cta"], d["n"]) != (raw["cta"], raw["n"]):
                continue
            if ev.kind == "read" and (d["agent"], d["tag"]) != (raw["agent"], raw["item"]):
                continue
            action = self.n_agents + j
            nxt, bits, det = self._apply(state, action)
            if nxt is None:
                blocked.append(d)
                continue
            if bits & S.TRAP and self.outcome != "trap":
                trap_reason = trap_reason or (
                    f"the model traps here ({self._trap_text(state, action, bits, det)}), "
                    f"but the log's outcome is {self.outcome}")
                continue
            if nxt not in seen:
                seen.add(nxt)
                out.append((action, nxt, bits))
        if out:
            return out, ""
        if trap_reason:
            return [], trap_reason
        if blocked:
            d = blocked[0]
            if d["kind"] == "read":
                return [], f"an earlier async read of {d['agent']} has not finished (reads finish in order)"
            return [], f"the commit still waits for {d['after']} async read(s) of {d['agent']}"
        from pipeproof.checker.trace import entry_text
        listed = "; ".join(entry_text(m, d) for d in present[:6]) + ("; ..." if len(present) > 6 else "")
        return [], (f"nothing like it is in flight (in flight: {listed})" if present
                    else "nothing is in flight")

    # -------------------------------------------------------------- the search

    def run(self) -> ConformResult:
        """Depth-first search over the orders of each equal-timestamp group, list order first.

        A node is (group, events of it left, model state, flags); flags = (the path trapped,
        violation bits the model reported on it). Nodes are memoised, so backtracking from a
        later failure enumerates each group's orders at most once per distinct start state
        (2^k nodes for a group of k mutually independent events, in the worst case); the
        total is bounded by `max_nodes`, and reaching it makes the answer inconclusive.
        Reaching the group of an event that breaks its agent's program order ends the search:
        every order fails there.
        """
        m = self.m
        init = m.initial_state()
        self.best = None     # furthest failure: (index, message, state, steps consumed)
        self.nodes = 0
        if not self.groups:
            return self._end(init, (False, 0), 0, None) or self._failed()
        visited = set()
        cut_group = self.group_of[self.cut[0]] if self.cut else len(self.groups) + 1
        if cut_group == 0:
            return self._cut(init, 0)
        stack = [self._frame(0, self.groups[0], init, (False, 0), 0, None)]
        try:
            while stack:
                g, remaining, state, flags, consumed, path, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    continue
                self.nodes += 1
                if self.nodes > self.max_nodes:
                    raise _Limit(f"the search bound ({self.max_nodes} nodes) was reached")
                k, nxt, c_flags = child
                c_remaining = tuple(x for x in remaining if x != k)
                c_path = (k, path)
                cg = g
                if not c_remaining:
                    cg = g + 1
                    c_remaining = self.groups[cg] if cg < len(self.groups) else ()
                key = (cg, c_remaining, nxt, c_flags)
                if key in visited:
                    continue
                visited.add(key)
                if cg == cut_group:
                    return self._cut(nxt, consumed + 1)
                if cg == len(self.groups):
                    done = self._end(nxt, c_flags, consumed + 1, c_path)
                    if done is not None:
                        return done
                    continue
                stack.append(self._frame(cg, c_remaining, nxt, c_flags, consumed + 1, c_path))
        except _Limit as lim:
            index, message, state, steps = self.best or (None, "", init, 0)
            text = f"inconclusive: {lim}" + (f"; furthest failure: {message}" if message else "")
            return ConformResult(False, index, text, steps, state, m.view(state), inconclusive=True)
        return self._failed()

    def _cut(self, state, consumed) -> ConformResult:
        k, message = self.cut
        return ConformResult(False, self.steps[k].index, message, consumed, state, self.m.view(state))

    def _failed(self) -> ConformResult:
        index, message, state, steps = self.best
        return ConformResult(False, index, message, steps, state, self.m.view(state))

    def _frame(self, g, remaining, state, flags, consumed, path):
        return (g, remaining, state, flags, consumed, path,
                self._children(remaining, state, flags, consumed))

    def _children(self, remaining, state, flags, consumed):
        """(event, next state, next flags) for each remaining event of the group that is a
        step from `state`, in list order. When the earliest remaining event is no step here,
        that is recorded as a failure."""
        for pos, k in enumerate(remaining):
            ev = self.steps[k]
            if flags[0]:
                cands, reason = [], "the model's path ends at the trap before it: nothing follows a trap"
            else:
                cands, reason = self.candidates(state, ev)
            if not cands and pos == 0:
                self._fail(consumed, ev.index, f"event {ev.index} ({event_text(ev.raw)}): {reason}", state)
            for _, nxt, bits in cands:
                yield k, nxt, (flags[0] or bool(bits & S.TRAP), flags[1] | (bits & 0x7F))

    def _fail(self, consumed, index, message, state):
        if self.best is None or consumed > self.best[3]:
            self.best = (index, message, state, consumed)

    # -------------------------------------------------------------- the end of the log

    def _end(self, state, flags, consumed, path):
        m = self.m
        problem = self._end_problem(state, flags)
        if problem is None:
            n_to = len(self.timeouts)
            extra = f", {n_to} timeout(s) stuck as the model says" if n_to else ""
            kinds = [k for i, k in enumerate(KINDS) if flags[1] & (1 << i)]
            reported = f"; the model reports {', '.join(kinds)} on it" if kinds else ""
            msg = (f"conforms: {consumed} step(s) in {len(self.groups)} timestamp group(s) are a path "
                   f"of the model{extra} (outcome {self.outcome}){reported}")
            order = []
            while path is not None:
                k, path = path
                order.append(self.steps[k].index)
            order = tuple(reversed(order))
            return ConformResult(True, None, msg, consumed, state, m.view(state), order=order)
        index, message = problem
        self._fail(consumed, index, message, state)
        return None

    def _end_problem(self, state, flags):
        m = self.m
        if self.outcome_bit and not flags[1] & self.outcome_bit:
            kinds = [k for i, k in enumerate(KINDS) if flags[1] & (1 << i)]
            first = next((i for i, ev in enumerate(self.log["events"]) if ev.get("result") == "tag_mismatch"), None)
            at = "" if first is None else f"event {first} ({event_text(self.log['events'][first])}): "
            return first, (f"{at}the log's outcome is {self.outcome}, but the model reports no "
                           f"{self.outcome} on this path (it reports: {', '.join(kinds) or 'nothing'})")
        timed = {ev.agent for ev in self.timeouts}
        for ev in self.timeouts:
            cands, reason = self._stuck_here(state, ev)
            if reason:
                return ev.index, f"event {ev.index} ({event_text(ev.raw)}): {reason}"
        if self.timeouts:
            settled, trapped = self._settle(state)
            good = next((s for s in settled if all(self._disabled(s, ev.agent) for ev in self.timeouts)), None)
            if good is None:
                if not settled:
                    ev = self.timeouts[0]
                    return ev.index, (f"event {ev.index} ({event_text(ev.raw)}): completing what is "
                                      f"still in flight traps in the model ({trapped})")
                s = settled[0]
                ev = next(ev for ev in self.timeouts if not self._disabled(s, ev.agent))
                return ev.index, (f"event {ev.index} ({event_text(ev.raw)}): the op would pass once what "
                                  f"is still in flight has completed, so it cannot have been stuck")
        if self.outcome != "trap":
            unfinished = [a for a in range(self.n_agents)
                          if m.current_op(state, a) is not None and a not in timed]
            if unfinished:
                a = unfinished[0]
                more = f" ({len(unfinished)} agents unfinished)" if len(unfinished) > 1 else ""
                return None, (f"the log ends with {m.agents[a].name} at {self._position(state, a)}, "
                              f"with no timeout for it: events are missing{more}")
        return None

    def _disabled(self, state, a):
        return self.m.apply(state, a)[0] is None or self.m.agent_field(state, a, S.F_SYNC) == 1

    def _stuck_here(self, state, ev):
        """(None, reason) when the timeout's agent is not stuck at that op in `state`."""
        m, raw, a = self.m, ev.raw, ev.agent
        ag = m.agents[a]
        pc = m.agent_field(state, a, S.F_PC)
        op = m.current_op(state, a)
        if op is None:
            return None, f"{ag.name} has finished its program, it cannot be stuck"
        stage, phase = m.ring_stage_phase(state, a, op)
        if pc != raw["pc"] or op.name != raw["op"] \
                or (ag.body_start <= pc < ag.body_end and raw["item"] != m.agent_field(state, a, S.F_ITEM)) \
                or (op.name in RING_OPS and (raw["stage"], raw["phase"]) != (stage, phase)):
            return None, f"{ag.name} ended at {self._position(state, a)}"
        if not self._disabled(state, a):
            return None, f"the op is enabled at the end of the log, so {ag.name} cannot have been stuck there"
        return None, ""

    def _settle(self, state):
        """States reached by completing everything in flight (every order, bounded)."""
        m = self.m
        if not m.inflight_entries(state):
            return [state], ""
        finals, seen, todo, trapped = [], {state}, [state], ""
        while todo and len(seen) < SETTLE_LIMIT:
            s = todo.pop()
            n = len(m.inflight_entries(s))
            if n == 0:
                finals.append(s)
                continue
            for j in range(n):
                nxt, bits, det = m.apply(s, self.n_agents + j)
                if nxt is None:
                    continue
                if bits & S.TRAP:
                    trapped = trapped or self._trap_text(s, self.n_agents + j, bits, det)
                    continue
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return finals, trapped


def conform(spec, log: dict, *, source: str | None = None,
            max_nodes: int = DEFAULT_MAX_NODES) -> ConformResult:
    """Replay `log` (a dict as `load_log` returns) through the model of `spec` (a Spec, a
    compiled Model, or a spec file path; a path may raise SpecError). Raises `LogError` for bad input: a malformed log, or one naming an agent,
    CTA or ring the spec lacks."""
    if isinstance(spec, (str, os.PathLike)):
        from pipeproof.spec.load import load_spec
        spec = load_spec(os.fspath(spec))
    model = spec if isinstance(spec, Model) else compile_model(spec)
    source = source or "<log>"
    validate_log(log, source)
    return _Replay(model, log, source, max_nodes).run()
