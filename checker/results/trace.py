"""Counterexample traces: what the engines produce and every exporter reads.

A trace is the initial state view plus one Step per transition. A *state view* is a plain,
JSON-ready dict (no None inside lists; names as the user reads them):

    {
      "agents":   {"consumer[1]": {"role": "consumer", "cta": 0, "index": 1,
                                    "pc": 3, "op": "read" | None (finished),
                                    "item": 2, "stage": 0, "phase": 1, "ready": False,
                                    "at_sync": False, "done": False}},
      "signals":  {"cta0.full[0]": {"phase_no": 1, "pending": 1, "tx": 0},   # nvidia
                   "cta0.empty[0]": {"count": 3}},                           # amd
      "slots":    {"cta0.slot[0]": 4},          # tag (item number) or -1 when never stored;
                                                # a list of one per part when a ring's slots
                                                # have several (checker/core/program.py slot_parts)
      "inflight": [{"kind": "copy", "cta": 0, "stage": 2, "tag": 3, "bytes": 16384},
                   {"kind": "commit", "cta": 0, "stage": 1, "n": 1}],
      "barriers": {"cta0.NAME": 1},             # arrivals so far in the current generation
    }

Agent names: `role[i]` when the cluster has one CTA, `cta1.role[i]` otherwise (i counts the
role's agents within the CTA). Signal and slot names always carry the CTA.

Every engine's counterexample (explicit, BMC, laps) and the GPU side's conformance messages
are built and worded here: `trace_from_codes` re-executes a run of action codes through the
model, checking each step, and `explain_step`/`explain_state` say what the violation is.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from pipeproof.backends.capabilities import backend as backend_record
from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.results.result import KINDS, RECORDS

if TYPE_CHECKING:
    from pipeproof.checker.core import Model


@dataclass(frozen=True)
class Event:
    """Machine-readable identity of one transition, enough to replay it independently.

    kind "agent": agent `agent` (a name from the state view) executes the op at its program
    position `pc`, whose name is `op`. kind "land"/"fire": the in-flight entry `entry` (one of
    the state view's "inflight" dicts) lands (copy) or fires (commit_empty, commit_full).
    """
    kind: str                 # "agent" | "land" | "fire"
    agent: str = ""
    op: str = ""
    pc: int = -1
    entry: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        if self.kind == "agent":
            return {"kind": "agent", "agent": self.agent, "op": self.op, "pc": self.pc}
        return {"kind": self.kind, "entry": dict(self.entry)}


@dataclass(frozen=True)
class Step:
    index: int                # 1-based
    event: Event
    action: str               # printed form, e.g. "consumer[1].wait_full(stage=0, phase=1)"
    actor: str                # agent name, or "cta0.copy" / "cta0.commit" for async events
    stage: int | None         # the stage the step acted on (None if it has none)
    phase: int | None         # the acting agent's phase before the step (None for async events):
                              # a lap count, as the model keeps it; its mbarrier parity is phase % 2
    changes: tuple[str, ...]  # human lines: "cta0.full[0]: pending 1->0, phase_no 0->1"
    state: dict               # state view after the step
    violations: tuple[str, ...] = ()  # kinds this step itself violates (last step only)


@dataclass(frozen=True)
class Trace:
    spec_name: str
    spec_path: str
    backend: str
    initial: dict             # state view of the initial state
    steps: tuple[Step, ...]
    kind: str                 # the violation kind this trace shows
    reason: str               # one sentence: why the last state/step violates

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "reason": self.reason,
            "initial": self.initial,
            "steps": [
                {"index": s.index, "event": s.event.to_json(), "action": s.action,
                 "actor": s.actor, "stage": s.stage, "phase": s.phase,
                 # phase is a lap count; lap says so, parity is what a PTX wait reads
                 "lap": s.phase, "parity": parity(s.phase, self.backend),
                 "changes": list(s.changes), "state": s.state}
                for s in self.steps
            ],
        }


def shows_parity(backend: str) -> bool:
    """Do traces show a lap count's parity (what a PTX parity wait reads)? Where signals are
    mbarriers (the record's phase_parity): the one place traces and reports decide it."""
    return backend_record(backend).phase_parity


def parity(phase, backend: str):
    """The mbarrier parity of a lap count (nvidia); None on amd or for an async event."""
    return phase % 2 if phase is not None and shows_parity(backend) else None


# ------------------------------------------------------------------ codes -> trace

def trace_from_codes(model: Model, codes: list, k: int, is_step: bool, check_end=None) -> Trace:
    """The Trace of the run `codes` ending in violation kind index k: a step violation of its
    last step (`is_step`) or a property of its last state. Every step is re-executed by
    `model.apply`; nothing before the end may violate anything, and the end must violate k.
    Every engine's traces (explicit, BMC) are built here, so they are explained alike.
    k = N_KINDS: the warning unawaited_at_exit, a step (result.RECORDS names every k)."""
    bit = 1 << k
    name = RECORDS[k]
    state = model.initial_state()
    initial = model.view(state)
    steps, det, last_bits, before = [], None, 0, state
    for i, code in enumerate(codes):
        nxt, bits, det = model.apply(state, code)
        if bits < 0:
            raise AssertionError(f"internal: step {i + 1} of the {name} trace is not enabled")
        last = i == len(codes) - 1
        violates = last and bits > 0
        # an earlier step may carry the warning (a CTA gone with its own copies in flight)
        if nxt is None or (bits & ~S.UNAWAITED_AT_EXIT and not last):
            raise AssertionError(f"internal: step {i + 1} of the {name} trace is broken")
        stage, phase = model.action_stage_phase(state, code)
        steps.append(Step(
            index=i + 1, event=Event(**_event_args(model.action_event(state, code))),
            action=model.format_action(state, code), actor=model.actor(state, code),
            stage=stage, phase=phase, changes=tuple(describe_changes(model, state, nxt)),
            state=model.view(nxt),
            violations=tuple(KINDS[j] for j in range(S.N_KINDS) if violates and bits & (1 << j))))
        before, state, last_bits = state, nxt, bits
    if is_step:
        if not last_bits & bit:
            raise AssertionError(f"internal: the last step of the {name} trace does not violate it")
        reason = (explain_unawaited(model, before, state, codes[-1]) if k >= S.N_KINDS else
                  explain_step(model, k, det[k * S.DET_W:(k + 1) * S.DET_W], before, codes[-1]))
    else:
        sbits, sdet = model.state_violation_bits(state)
        if not sbits & bit:
            raise AssertionError(f"internal: the {name} trace does not end in a violation")
        if check_end is not None:
            check_end(state)
        reason = explain_state(model, k, sdet[k * S.DET_W:(k + 1) * S.DET_W], state)
    return Trace(spec_name=model.spec.name, spec_path=model.spec.path, backend=model.spec.backend,
                 initial=initial, steps=tuple(steps), kind=name, reason=reason)


def _event_args(ev: dict) -> dict:
    if ev["kind"] == "agent":
        return {"kind": "agent", "agent": ev["agent"], "op": ev["op"], "pc": ev["pc"]}
    return {"kind": ev["kind"], "entry": ev["entry"]}


def _slot_ring(name: str):
    """The ring of a slot named like Model.view's (`cta0.slot[1]`: the main ring, index 0;
    `cta0.acc.slot[1]`: ring `acc`)."""
    words = name.split(".")
    return words[1] if len(words) > 2 else 0


def describe_changes(model: Model, before, after) -> list[str]:
    """What the step changed in signals, slots, barriers and the in-flight set."""
    va, vb = model.view(before), model.view(after)
    lines = []
    for name, old in va["signals"].items():
        new = vb["signals"][name]
        diffs = [f"{f} {old[f]}->{new[f]}" for f in old if old[f] != new[f]]
        if diffs:
            lines.append(f"{name}: {', '.join(diffs)}")
    for name, old in va["slots"].items():
        new = vb["slots"][name]
        word = model.tag_word(_slot_ring(name))   # `tile` on a tile-level ring (nested loops)
        if old != new and isinstance(old, list):  # a slot of several parts
            lines += [f"{name}.part[{p}]: {word} {model.tag_label(x)}->{model.tag_label(y)}"
                      for p, (x, y) in enumerate(zip(old, new)) if x != y]
        elif old != new:
            lines.append(f"{name}: {word} {model.tag_label(old)}->{model.tag_label(new)}")
    for name, old in va["barriers"].items():
        new = vb["barriers"][name]
        diffs = [f"{f} {old[f]}->{new[f]}" for f in old if old[f] != new[f]]
        if diffs:
            lines.append(f"{name}: {', '.join(diffs)}")
    gone = list(va["inflight"])
    added = []
    for e in vb["inflight"]:
        if e in gone:
            gone.remove(e)
        else:
            added.append(e)
    lines += [f"in flight: +{entry_text(model, e)}" for e in added]
    lines += [f"in flight: -{entry_text(model, e)}" for e in gone]
    return lines


def entry_text(model: Model, e: dict) -> str:
    ring = "" if e["ring"] == "main" else f"{e['ring']}."
    if e["kind"] == "copy":
        return (f"copy {model.tag_text(e['tag'], e['ring'])} -> cta{e['cta']}.{ring}slot[{e['stage']}] "
                f"({e['bytes']} B)")
    if e["kind"] == "read":
        how = "write of {} by {} into" if e.get("writes") else "read of {} by {} from"
        return (f"async {how.format(model.tag_text(e['tag'], e['ring']), e['agent'])} "
                f"cta{e['cta']}.{ring}slot[{e['stage']}]")
    waits = [f"{e['after']} more read(s)"] if e["after"] else []
    waits += [f"{e['after_commits']} earlier commit(s)"] if e.get("after_commits") else []
    after = f" after {' and '.join(waits)} of {e['agent']}" if waits else ""
    return f"commit {e['n']} -> cta{e['cta']}.{ring}{e.get('signal', 'empty')}[{e['stage']}]{after}"


# ------------------------------------------------------------------ the wording of violations

def agent_name(model, a):
    return model.agents[a].name if 0 <= a < len(model.agents) else "a copy"


def _writes_to(model: Model, state, pos) -> bool:
    """Is an async write (write_async) into the slot at `pos` in flight in `state`?"""
    cta, r, stage, _ = model.slot_of(pos)
    return any(e.get("writes") and (e["cta"], e["ring"], e["stage"]) == (cta, model.ring_names[r], stage)
               for e in map(model.decode_entry, model.inflight_entries(state)))


def explain_step(model: Model, k: int, det, state, code) -> str:
    x, y, z, w = (int(v) for v in det)
    actor = model.actor(state, code)
    kind = KINDS[k]
    if kind == "read_before_fill":
        slot, ring = model.slot_name(x), model.slot_of(x)[1]
        if z != w:
            held = "nothing" if z < 0 else model.tag_text(z, ring)
            return (f"{agent_name(model, y)} reads {model.tag_text(w, ring)} from {slot}, which "
                    f"holds {held}")
        busy = "an async write of it (write_async) has not finished" if _writes_to(model, state, x) \
            else "a copy into it is still in flight"
        return f"{agent_name(model, y)} reads {model.tag_text(w, ring)} from {slot} while {busy}"
    if kind == "overwrite_before_drain":
        ring = model.slot_of(x)[1]
        return (f"{actor} stores {model.tag_text(z, ring)} into {model.slot_name(x)} while "
                f"{agent_name(model, w)} has not yet read {model.tag_text(y, ring)} there")
    if kind == "phase_alias":
        return _alias_text(model, x, y, z, w, "tries")
    if kind == "over_arrival":
        if w == 0:
            return (f"{actor} arrives {y} on {model.sig_name(x)} with only {z} pending "
                    f"(an arrive update above pending traps the hardware)")
        return (f"{actor} completes phase {y} of {model.sig_name(x)}, which no wait or try observed "
                f"(the barrier ran two phases ahead of every observer)")
    if kind == "tx_range":
        if w == 0:
            return f"{actor} uses {y} bytes, above the tx-count limit 2^20-1 = {(1 << 20) - 1}"
        return f"tx of {model.sig_name(x)} reaches {y}, outside +-(2^20-1) (the hardware traps)"
    if kind == "inflight_at_exit":
        what = {0: f"cta{x} exits ({actor} finishes) while a copy, commit or async read still targets it",
                1: f"{actor} updates {model.sig_name(z) if z >= 0 else 'a signal'} of cta{x}, which has exited",
                2: f"{actor} issues a copy, commit or write to cta{x}, which has exited",
                3: f"{actor} targets cta{x}, which has exited"}
        return what.get(w, f"cta{x} is targeted after it exited")
    return kind


def explain_unawaited(model: Model, before, after, code) -> str:
    """The warning unawaited_at_exit: which CTA went, and its own entries still in flight."""
    cta = model.agents[code].cta if code < len(model.agents) else 0
    left = [entry_text(model, e) for e in model.view(after)["inflight"] if e["cta"] == cta]
    return (f"cta{cta} exits ({model.actor(before, code)} finishes) while its own "
            f"{'; '.join(left)} {'is' if len(left) == 1 else 'are'} still in flight into it "
            f"(nothing waits for {'it' if len(left) == 1 else 'them'}; --strict-exit makes this "
            f"inflight_at_exit)")


def _alias_text(model, sig, a, phase, phase_no, verb):
    agent = model.agents[a]
    ring = (sig // 2 // model.max_stages) % model.rings
    k = model.caps.rules.intended_phase(phase, agent.initial_phases[ring])  # the signal's own ring
    return (f"{agent.name} {verb} {model.sig_short(sig)} at phase {phase} (meaning signal phase {k}) "
            f"but the signal is at phase {phase_no}, outside {k}..{k + 1}: its parity answers for "
            f"another phase")


def explain_state(model: Model, k: int, det, state) -> str:
    kind = KINDS[k]
    if kind == "phase_alias":
        x, y, z, w = (int(v) for v in det)
        return _alias_text(model, x, y, z, w, "waits on")
    if kind == "deadlock":
        return describe_blocked(model, state)
    return kind


def describe_blocked(model: Model, state) -> str:
    """`producer[0] waits on empty[0] (phase 1), consumer[0..1] wait on full[1] (phase 0)`."""
    groups = []  # [(role, what, [indices])]
    for a, agent in enumerate(model.agents):
        op = model.current_op(state, a)
        if op is None:
            continue
        sig, phase = S.at_blocking_wait(model.tables, np.array(state, dtype=np.int64), a)
        if sig >= 0:
            what = f"on {model.sig_short(sig)} (phase {phase})"
        elif OP_EFFECTS[op.name].barrier in ("sync", "wait"):
            what = f"at {op.name} {op.barrier}"
        else:
            what = f"at {op.text}"
        prefix = agent.name.rsplit("[", 1)[0]
        if groups and groups[-1][0] == prefix and groups[-1][1] == what:
            groups[-1][2].append(agent.index)
        else:
            groups.append((prefix, what, [agent.index]))
    parts = []
    for prefix, what, idx in groups:
        many = len(idx) > 1
        who = f"{prefix}[{idx[0]}..{idx[-1]}]" if many and idx == list(range(idx[0], idx[-1] + 1)) \
            else (f"{prefix}[{','.join(map(str, idx))}]" if many else f"{prefix}[{idx[0]}]")
        parts.append(f"{who} {'wait' if many else 'waits'} {what}")
    return ", ".join(parts)
