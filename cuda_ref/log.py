"""Event logs of reference-kernel runs: decoding, outcomes, JSON.

A run's log is one JSON document:

    {"spec": <path>, "device": <str>, "command": <str>, "seed": S, "run": k,
     "outcome": "ok" | "deadlock" | "read_before_fill" | "overwrite_before_drain" | "trap"
                | "inflight_at_exit",
     "events": [ ... ]}

`events` are in the order (t, sequence number) of the kernel's global log counter. Agent
steps (one event per model step):

    {"t": ns (%globaltimer), "agent": "consumer[1]" | "cta0.producer[0]" (checker.core.model's
     names), "op": the model op ("wait_full", "arrive_empty", "copy", "read", "advance",
     "drain", "sync", ...), "pc": index into Model.agents[a].ops, "item": the agent's item,
     "stage": int, "phase": int, "result": "ok" | "timeout" | "tag_mismatch"}

  - `stage`/`phase` are those of the op's ring before the step (the main ring for ops without
    a ring, like `sync` and `read_wait`); an op on another ring adds `"ring": NAME`;
  - a `try_*` event adds `"ready": bool`; a `wait_* unless=ready` that was skipped adds
    `"skipped": true` (it is still one step);
  - `"result": "tag_mismatch"` (a `read`/`read_async` that found another tag) adds
    `"found": tag` (-1: nothing was ever stored);
  - the exit rule (DESIGN "inflight_at_exit", revised 2026-12-02). The step that leaves its
    CTA without agents (the model's CTA gone; counted after the step's own effect, so the
    step's own arrive, copy or commit is a live agent's) adds `"exit_inflight": true` when a
    copy or commit issued by ANOTHER CTA is still in flight into it, and
    `"exit_unawaited": true` when only the CTA's own copies or commits are; a step that issues
    an arrive, copy or commit at another CTA gone already adds `"late": c` (the kernel keeps
    every CTA resident until its cluster barrier, so the update lands in live memory: it is
    observed, not undefined). `exit_inflight` and `late` make the run's kinds include
    `inflight_at_exit`; `exit_unawaited` is the warning `unawaited_at_exit`
    (`RunReport.warnings`), a violation only under `classify(..., strict_exit=True)` as in
    the model's strict mode. A `late` that names the agent's own CTA, or that sits on a
    commit's `fire` (both written by kernels before issue 31, which counted a CTA gone before
    its last step's effect and marked firings), is no update of a gone CTA and is ignored;
  - `"result": "timeout"` is not a step: the agent was stuck at that op when the deadline
    passed and exited (for a `sync` it had already made its arrival step, logged before); in a
    replay (cuda_ref/replay.py) one that waited for its turn rather than for a signal adds
    `"turn": k`, the 0-based step of the schedule it waited for (-1: the schedule's end).

A replay's log adds `"replay": {"trace", "kind", "steps", "trace_steps", "observable",
"gpu_kind", "reached"}` (`reached`: the step counter at the end; None after a trap).

In-flight entries of the model (not agent steps):

    {"t", "agent": "cta<c>.copy", "op": "land", "cta": c, "stage": s, "item": tag,
     "bytes": B, "result": "ok"}                         a copy landed (recorded when seen)
    {"t", "agent": "cta<c>.commit", "op": "fire", "cta": c, "stage": s, "n": n,
     "result": "ok"}                                     a commit_empty (commit_full) arrival
                                                         fired on empty (full)
    {"t", "agent": <agent name>, "op": "finish", "pc": pc of its read_async, "item": i,
     "stage": s, "cta": c, "result": "ok"}               an async read finished; when the
                                                          slot no longer held the item then, it
                                                          adds "overwritten": true, "found": tag
                                                          (the pc of a write_async: its
                                                          cp.async write finished; item: its tag)

(`"ring": NAME` again when not on the main ring.) A landing is recorded at the first logged
step of its CTA that sees the copy's bytes in shared memory (every step under the log lock
looks, before its own effect), or by the CTA's exit sweep; it takes that step's `t` and sorts
just before it. Commits fire at once on the GPU (after the agent's
async reads finished), so a fire follows its `commit_empty` step directly.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.results import GPU_OUTCOMES
from pipeproof.cuda_ref import codegen as G

OUTCOMES = GPU_OUTCOMES  # checker/results/result.py: what a GPU run of each kind shows
LOG_KEYS = ("spec", "device", "command", "seed", "run", "outcome", "events")
LAND_HOW = {G.LAND_BY_WAIT: "wait", G.LAND_BY_READ: "read", G.LAND_BY_SWEEP: "exit sweep",
            G.LAND_BY_STEP: "step", G.LAND_BY_REPLAY: "replay"}


@dataclass
class RunReport:
    """One run: the log document plus what the launcher and the commands print."""
    log: dict
    kinds: list = field(default_factory=list)        # every failure kind seen, in OUTCOMES order
    stuck: list = field(default_factory=list)        # deadlock: per stuck agent, a description
    mismatches: list = field(default_factory=list)   # tag mismatches, updates of a gone CTA
    detail: str = ""                                 # trap message, overflow notes, ...

    @property
    def outcome(self) -> str:
        return self.log["outcome"]

    @property
    def warnings(self) -> list:
        """The warning unawaited_at_exit of each exit step that left only its CTA's own
        copies or commits in flight (not a failure kind)."""
        return exit_warnings(self.log.get("events", []))

    def summary(self) -> dict:
        out = {"run": self.log["run"], "outcome": self.outcome, "kinds": self.kinds,
               "stuck": self.stuck, "mismatches": self.mismatches, "detail": self.detail}
        if self.warnings:
            out["warnings"] = self.warnings
        return out


def _ring_extra(gen, ring: int) -> dict:
    return {} if ring <= 0 or ring >= len(gen.ring_names) else {"ring": gen.ring_names[ring]}


def decode_events(gen: "G.Generated", ev_words, rec_words, n_rec: int) -> list[dict]:
    """Schema events from the raw event buffer (EV_W int32 per record) and copy records."""
    import numpy as np

    ev = np.asarray(ev_words).reshape(-1, G.EV_W)
    rows = ev[ev[:, 15] == 1]
    keyed = []
    for row in rows.tolist():
        (t_lo, t_hi, seq, agent, op, pc, item, ring, stage, ph_lo, ph_hi, result, x0, x1,
         flags, _valid) = row
        t = (t_hi & 0xFFFFFFFF) << 32 | (t_lo & 0xFFFFFFFF)
        phase = (ph_hi & 0xFFFFFFFF) << 32 | (ph_lo & 0xFFFFFFFF)
        if phase >= 1 << 63:
            phase -= 1 << 64
        seq &= 0xFFFFFFFF
        if op == G.EV_OP_FIRE:
            e = {"t": t, "agent": f"cta{x1}.commit", "op": "fire", "cta": x1, "stage": stage,
                 "n": x0, "result": "ok"}
            e.update(_ring_extra(gen, ring))
        elif op == G.EV_OP_FINISH:
            # an in-flight entry finishing is "ok" by the schema; a slot that no longer held
            # the item when the read finished is flagged (the GPU's overwrite evidence)
            e = {"t": t, "agent": gen.agents[agent], "op": "finish", "pc": pc, "item": item,
                 "stage": stage, "cta": gen.agent_ctas[agent], "result": "ok"}
            e.update(_ring_extra(gen, ring))
            if result == G.RESULT_MISMATCH:
                e["overwritten"] = True
                e["found"] = x0
        else:
            name = gen.op_names[op]
            e = {"t": t, "agent": gen.agents[agent], "op": name, "pc": pc, "item": item,
                 "stage": stage, "phase": phase, "result": G.RESULTS[result]}
            e.update(_ring_extra(gen, ring))
            effects = OP_EFFECTS[name]
            if effects.tries and result == G.RESULT_OK:
                e["ready"] = bool(x0)
            # a wait on a signal (not drain's, which moves the stage) passed by unless=ready
            if effects.blocks and effects.observes >= 0 and not effects.move \
                    and result == G.RESULT_OK and x0:
                e["skipped"] = True
            if result == G.RESULT_MISMATCH:
                e["found"] = x0
            if result == G.RESULT_TIMEOUT and x1 == 1:
                e["turn"] = x0  # a replay: it waited for this step of the schedule (-1: its end)
        if flags & G.EV_EXIT_INFLIGHT:   # its CTA is gone from this step, with a peer CTA's
            e["exit_inflight"] = True    # copy or commit still in flight into it
        if flags & G.EV_EXIT_UNAWAITED:  # ... with only the CTA's own still in flight
            e["exit_unawaited"] = True
        if flags & G.EV_LATE_TARGET:
            e["late"] = (flags >> 8) & 0xFF  # it issued an update at this CTA, gone already
        keyed.append(((t, seq), e))
    rec = np.asarray(rec_words).reshape(-1, G.REC_W)[:n_rec]
    for row in rec.tolist():
        meta, tagb, _t_issue, seq_how, seq_land, t_land = (int(x) & 0xFFFFFFFFFFFFFFFF for x in row)
        if not meta >> 63 or seq_land == 0xFFFFFFFFFFFFFFFF:
            continue  # never seen landing (the exit sweep gave up): still in flight
        cta, ring, stage = meta & 0xFF, (meta >> 8) & 0xFF, (meta >> 16) & 0xFFFF
        tag = tagb & 0xFFFFFFFF
        if tag >= 1 << 31:
            tag -= 1 << 32
        e = {"t": t_land, "agent": f"cta{cta}.copy", "op": "land", "cta": cta, "stage": stage,
             "item": tag, "bytes": tagb >> 32, "result": "ok"}
        e.update(_ring_extra(gen, ring))
        # just before the step that first saw it (same t, the sequence number before its own)
        keyed.append(((t_land, seq_land - 0.5), e))
    keyed.sort(key=lambda x: x[0])
    return [e for _, e in keyed]


def late_target(gen: "G.Generated", e: dict):
    """The gone CTA an event's `late` mark names, or None when the mark is no update of a gone
    CTA: a commit's `fire` (a firing into a gone CTA is not reported by itself: the exit step
    was), or a mark naming the agent's own CTA (its CTA is not gone while it runs; kernels
    before issue 31 counted the last step's exit before its own arrive)."""
    if "late" not in e or e["op"] == "fire":
        return None
    if e["agent"] in gen.agents and e["late"] == gen.agent_ctas[gen.agents.index(e["agent"])]:
        return None
    return e["late"]


def exit_warnings(events: list[dict]) -> list[str]:
    return [f"{e['agent']} {e['op']}: its CTA is gone from this step with only its own copies "
            f"or commits still in flight into it (unawaited_at_exit, a warning)"
            for e in events if e.get("exit_unawaited") and not e.get("exit_inflight")]


def shows_overwrite(e: dict, replay: dict | None) -> bool:
    """A replay of an overwrite_before_drain trace (cuda_ref/replay.py): this mismatch is the
    victim's read (or async read's finish) of the overwritten slot finding the tag the
    overwrite stored, which is the overwrite whatever the order of the two tags."""
    ow = (replay or {}).get("overwrite")
    if not ow or e["agent"] != ow["agent"] or e.get("found") != ow["new"]:
        return False
    return (e.get("ring", "main") == ow["ring"] and e["stage"] == ow["stage"]
            and e.get("cta", ow["cta"]) == ow["cta"])


def classify(gen: "G.Generated", events: list[dict], trapped: bool, status=None,
             detail: str = "", strict_exit: bool = False,
             replay: dict | None = None) -> tuple[str, list, list, list]:
    """(outcome, kinds, stuck, mismatches) of a run from its events. `strict_exit`: a CTA
    gone with its own copies or commits in flight is inflight_at_exit too (the model's
    --strict-exit); by default it is the warning of `exit_warnings`. `replay`: the log's
    replay metadata: the victim's read of an overwrite_before_drain schedule that finds the
    overwriting tag is that overwrite (`shows_overwrite`)."""
    kinds, stuck, mismatches = set(), [], []
    first_bad = None
    for e in events:
        late = late_target(gen, e)
        own = strict_exit and e.get("exit_unawaited")
        if e.get("exit_inflight") or late is not None or own:
            kinds.add("inflight_at_exit")
            mismatches.append(f"{e['agent']} {e['op']}: " + (
                "its CTA is gone from this step while a copy or commit of another CTA is still "
                "in flight into it" if e.get("exit_inflight") else
                "its CTA is gone from this step while its own copies or commits are still in "
                "flight into it (strict exit)" if own else
                f"issues an update at cta{late}, whose agents have all finished")
                + " (inflight_at_exit)")
        if e["result"] == "tag_mismatch" or e.get("overwritten"):
            # a finish records the tag its read expects; a step, the agent's item
            want = e["item"] if e["op"] == "finish" else \
                gen.expected_tag(gen.agents.index(e["agent"]), e["pc"], e["item"])
            later = e["found"] != -1 and gen.tag_order(e["found"]) > gen.tag_order(want)
            kind = "overwrite_before_drain" if later or shows_overwrite(e, replay) \
                else "read_before_fill"
            kinds.add(kind)
            first_bad = first_bad or kind
            ring = e.get("ring", "main")
            slot = f"cta{_cta_of(gen, e)}.{'' if ring == 'main' else ring + '.'}slot[{e['stage']}]"
            what = "async read (finish)" if e["op"] == "finish" else e["op"]
            mismatches.append(f"{e['agent']} {what} of {gen.tag_text(want)} from {slot} found "
                              f"{gen.tag_text(e['found'])} ({kind})")
        elif e["result"] == "timeout":
            kinds.add("deadlock")
            a = gen.agents.index(e["agent"])
            text = gen.agent_ops[a][e["pc"]][1] if 0 <= e["pc"] < len(gen.agent_ops[a]) else e["op"]
            ring = f"{e['ring']}." if e.get("ring", "main") != "main" else ""
            turn = "" if "turn" not in e else (
                f", waiting for its turn at step {e['turn'] + 1} of the replay" if e["turn"] >= 0
                else ", waiting for the replay's end")
            stuck.append(f"{e['agent']} at pc {e['pc']} '{text}' ({ring}stage {e['stage']}, "
                         f"phase {e['phase']}, item {e['item']}{turn})")
    if status is not None and not trapped:
        for a, s in enumerate(status):
            if s == 0:
                kinds.add("deadlock")
                stuck.append(f"{gen.agents[a]} never finished (no timeout recorded)")
    if trapped:
        kinds.add("trap")
        outcome = "trap"
    elif first_bad:
        outcome = first_bad
    elif "deadlock" in kinds:
        outcome = "deadlock"
    elif "inflight_at_exit" in kinds:
        outcome = "inflight_at_exit"
    else:
        outcome = "ok"
    return outcome, [k for k in OUTCOMES if k in kinds], stuck, mismatches


def _cta_of(gen, e) -> int:
    if "cta" in e:
        return e["cta"]
    return gen.agent_ctas[gen.agents.index(e["agent"])]


def make_log(spec_path: str, device: str, command: str, seed: int, run: int, outcome: str,
             events: list[dict]) -> dict:
    return {"spec": spec_path, "device": device, "command": command, "seed": seed, "run": run,
            "outcome": outcome, "events": events}


def write_log(log: dict, path) -> None:
    with open(path, "w") as f:
        json.dump(log, f, indent=None, separators=(",", ":"))
        f.write("\n")


def read_log(path) -> dict:
    with open(path) as f:
        doc = json.load(f)
    missing = [k for k in LOG_KEYS if k not in doc]
    if missing:
        raise ValueError(f"{path}: not a pipeproof GPU log (missing {', '.join(missing)})")
    return doc
