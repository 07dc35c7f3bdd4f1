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
      "slots":    {"cta0.slot[0]": 4},          # tag (item number) or -1 when never stored
      "inflight": [{"kind": "copy", "cta": 0, "stage": 2, "tag": 3, "bytes": 16384},
                   {"kind": "commit", "cta": 0, "stage": 1, "n": 1}],
      "barriers": {"cta0.NAME": 1},             # arrivals so far in the current generation
    }

Agent names: `role[i]` when the cluster has one CTA, `cta1.role[i]` otherwise (i counts the
role's agents within the CTA). Signal and slot names always carry the CTA.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Event:
    """Machine-readable identity of one transition, enough to replay it independently.

    kind "agent": agent `agent` (a name from the state view) executes the op at its program
    position `pc`, whose name is `op`. kind "land"/"fire": the in-flight entry `entry` (one of
    the state view's "inflight" dicts) lands (copy) or fires (commit_empty).
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
    phase: int | None         # the acting agent's phase before the step (None for async events)
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
                 "changes": list(s.changes), "state": s.state}
                for s in self.steps
            ],
        }
