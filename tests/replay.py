"""An independent, deliberately plain implementation of the pipeproof model (docs/model.md).

The test-suite uses it to replay every counterexample the checker prints: each step must be
enabled here, the state after each step must agree with the trace's state view, and the
violation kinds this file finds at the end must be the ones the checker claims.

It shares nothing with `checker/` or `backends/` except the trace JSON format
(`checker/results/trace.py`) and the spec dataclasses (`spec/schema.py`).

API:
    initial_state(spec, strict_exit=False) -> World
    enabled_events(world) -> list[dict]           (Event-JSON dicts)
    apply(world, event) -> set[str]               (kinds this step commits; raises ReplayError;
                                                   its warnings go into world.warnings)
    state_violations(world) -> set[str]           (kinds that hold in the state itself)
    state_view(world) -> dict                     (the trace's state-view format)
    replay(spec, trace_json, strict_exit=None) -> ReplayOutcome   (.kinds, .warnings)

Revised rules (docs/model.md, revised 2026-12-02), implemented here on their own:
  R1 an agent's commits fire in the order it issued them: a commit entry fires only once its
     agent's earlier async reads have finished and every entry of its agent's earlier commits
     has fired (the entries of one to=all commit in any order among themselves).
  R2 at the step that makes CTA c gone: an async read of c's agents in flight, or a copy or
     commit issued by another CTA's agent targeting c, is inflight_at_exit; copies/commits of
     c's own agents targeting c are only the warning unawaited_at_exit (WARNINGS), or
     inflight_at_exit with strict_exit. Issuing an arrive/expect_tx/copy/commit at a gone CTA is
     inflight_at_exit; a landing or firing into a gone CTA is nothing by itself (with
     strict_exit inflight_at_exit, as before the revision).
  R3 slot parts are per slot (below).
To decide R1 and R2 the in-flight copies and commits keep bookkeeping keys the state view
does not show: "_peer" (issued by an agent of another CTA than the target), and for commits
"_order" (the commit's rank among its agent's commits in flight, 0 = oldest; every entry of
one to=all commit has the same).

Slot parts (docs/rules.md "Slot parts", numbered here by `_slot_parts` from the rule as the
docs state it, not from checker/core/program.py): one part per fill op of each producer-side agent
for one item, the fills between two moves of its stage going to one slot; a producer-side fill
stores into its part, a consumer-side one into every part of the slot; a read checks the parts
the program fills for its tag in that slot (`_filled_slots`: each agent's program run forward,
its stage followed; every part of the slot when the program fills none for the tag there;
revised 2026-12-02). The phase_alias window of an agent with a `reset` of a ring
follows its last passed wait per signal (`_intended`, `_passed`; kept raw, as (k', ph')).

How each agent's program is held: it is unrolled once into a list of `Instr` (every op it will
execute, in order, with its pc and item number), and the agent's position is an index into
that list. Finished = position at the end of the list. `@leader` ops of non-leaders are dropped
before pcs are numbered (they do not exist); `drain [ring=R]` becomes R's `stages` consecutive
pcs; a body op with `every=K at=j` keeps its pc but is left out of the items with
item % K != j (it exists only in the others). `every`/`at` act on body ops only.

State view (checker/results/trace.py format, extended by [expressiveness]; the checker matches it)
-----------------------------------------------------------------------------------------
    "agents": {NAME: {"role", "cta", "index", "pc", "op", "item", "done", "at_sync",
                      "stage", "phase", "ready",                 # the main ring
                      "rings": {"acc": {"stage": 0, "phase": 0, "ready": False}},
                      #   ^ only when the spec has [ring.*] tables: one entry per extra ring
                      "arrived": {"bar": 0}}}
                      #   ^ only when the spec uses sync_arrive or sync_wait: for every
                      #     [barrier.NAME], the generation the agent last arrived in with
                      #     `sync_arrive` (0 when it never did: a sync_wait then waits for
                      #     generation 0 to complete, exactly as after an arrival in 0)
    "signals":  {"cta0.full[2]": {...}, "cta0.acc.full[1]": {...}}   # main ring / ring acc
    "slots":    {"cta0.slot[0]": tag, "cta0.acc.slot[1]": tag}        # -1: never stored
                #  a ring whose slots have several parts: a list, one tag per part (the
                #  ring's part numbers; -1 also for a part this CTA's slots do not have)
    "inflight": [  # a multiset; every entry carries "ring"
        {"kind": "copy",   "cta": c, "ring": "main", "stage": s, "tag": t, "bytes": b},
                #  + "part": p where the ring has several parts (-1: a consumer-side copy,
                #    which stores into every part)
        {"kind": "commit", "cta": c, "ring": "main", "stage": s, "n": n,
                           "agent": NAME, "after": 0, "after_commits": 0},
                #  + "signal": "full" for a commit_full's (it fires on full, not empty)
        {"kind": "read",   "cta": c, "ring": "main", "stage": s, "tag": t,
                           "agent": NAME, "seq": k}]
    "barriers": {"cta0.bar": {"arrivals": a, "generation": g}}

  - copy: an async copy into slot (cta, ring, stage) carrying item `tag`; `cta` is the target.
  - commit: an async arrival of n on empty[stage] of `ring` in `cta` (the target), issued by
    "agent". "after" = how many of that agent's async reads must still finish before it may
    fire; "after_commits" = how many entries of that agent's earlier commits are still in
    flight (R1; it fires when both are 0).
  - read: an async read (read_async) of slot (cta, ring, stage) of the agent's own CTA,
    carrying item `tag`; "seq" = position in the agent's FIFO of in-flight reads (0 =
    oldest; when the oldest finishes every other seq of that agent drops by 1). With
    "writes": True it is an async write (write_async): it stored its tag when issued, sits in
    the same FIFO, and while it is in flight a read of its slot is read_before_fill.
  - barriers: per (CTA, barrier): arrivals in the current generation, and the number of
    generations completed.

Events: {"kind": "agent", "agent", "op", "pc"}; {"kind": "land", "entry": COPY};
{"kind": "fire", "entry": COMMIT} (only when after == 0 and no commit its agent issued
earlier is in flight); {"kind": "finish", "entry": READ}
(only for the agent's oldest read, seq 0). A step's "stage" and "phase" are the acting agent's,
before the step, in the ring of its op (`op.ring`; "main" for ops without a ring); for async
events the entry's stage.

Transitional leniency (traces written before the [expressiveness] views): an inflight entry
without "ring" is read as ring "main", a commit without "agent"/"after" as agent "" and
after 0, and a barrier shown as a plain int is compared with "arrivals" only. A trace whose
commits lack "after_commits" (written before R1) is compared with commits shown as then:
"agent" "" once after is 0.
"""
from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from dataclasses import dataclass, field

from pipeproof.spec.schema import Op, Spec

TX_LIMIT = (1 << 20) - 1
WRAP = 1 << 32
MAIN = "main"

WAITS = ("wait_full", "wait_empty")
TRIES = ("try_full", "try_empty")
# Ops that do not act on a ring's stage (the step's "stage" is not compared for them).
NO_STAGE_OPS = ("advance", "reset", "sync", "sync_arrive", "sync_wait", "read_wait")


class ReplayError(Exception):
    """A trace step that this model does not allow, or a state that disagrees with it."""


# --------------------------------------------------------------------------------------------
# World
# --------------------------------------------------------------------------------------------

@dataclass
class Instr:
    pc: int          # index of the op in the agent's own flattened program
    item: int        # item number (0 in the prologue, `items` in the epilogue)
    section: str     # "prologue" | "body" | "epilogue"
    op: Op
    tag: int = -1    # fill/read: the tag it stores or expects (_tag)
    part: int = -1   # fill: the slot part it stores into (_slot_parts); -1: every part


SECTIONS = ("prologue", "body", "epilogue")


def _top_tag(spec: Spec) -> int:
    """The prologue's tag: above every tag a fill can store (item + ahead)."""
    ahead = max([o.ahead or 0 for r in spec.roles for sec in SECTIONS for o in getattr(r, sec)] + [0])
    return max(r.items for r in spec.roles) + ahead


def _tag(spec: Spec, section: str, item: int, op: Op) -> int:
    """docs/model.md "Tags and the pairing rule": a body fill stores its item, a prologue or
    epilogue fill a tag of its own (here: the largest item count, and one more). A read
    expects the fill of its own section if the ring is filled there (or nowhere), else the
    prologue's if that is the latest earlier section filling the ring, else its own
    section's (nothing filled it yet)."""
    top = _top_tag(spec)
    # nested loops: an op on a tile-level ring carries the tile, item // k_blocks (tag_div)
    own = {"prologue": top, "body": item // op.tag_div, "epilogue": top + 1}
    if op.name in FILLS:
        if op.ahead is not None:  # software pipelining: the fill is for a later item
            return (op.ahead + (item if section == "body" else 0)) // op.tag_div
        return own[section]
    if op.name not in ("read", "read_async"):
        return -1
    # a prologue fill with ahead= fills a body item: it counts as the body's
    filled = {"body" if o.ahead is not None else s for r in spec.roles for s in SECTIONS
              for o in getattr(r, s) if o.name in FILLS and o.ring == op.ring}
    fills = [sec for sec in SECTIONS if sec in filled]
    earlier = [sec for sec in SECTIONS[:SECTIONS.index(section)] if sec in fills]
    if section in fills or not fills or not earlier:
        return own[section]
    assert earlier[-1] == "prologue", "the loader rejects an epilogue read of a body-only ring"
    return own["prologue"]


@dataclass
class RingPos:
    """One agent's position in one ring."""
    stages: int
    initial_stage: int
    initial_phase: int
    stage: int = 0
    phase: int = 0
    ready: bool = False
    has_reset: bool = False  # the agent's program has a `reset` of this ring
    # (stage, kind) -> (k', ph'): the intended phase and the agent's phase at its last passed
    # wait or ready try on that signal; absent: (-(p0 mod 2), p0). Only kept when has_reset.
    # Replaced, never mutated in place, so a shallow copy of a RingPos is a snapshot.
    window: dict = field(default_factory=dict)

    def advance(self) -> None:
        self.stage, self.phase = _advanced(self.stage, self.phase, self.stages)

    def reset(self) -> None:
        self.stage, self.phase = self.initial_stage, self.initial_phase


@dataclass
class Agent:
    name: str
    role: str
    cta: int
    index: int
    program: list    # list[Instr], fully unrolled
    program_length: int  # number of pc values (the pc a finished agent shows)
    items: int
    rings: dict      # ring name -> RingPos ("main" first)
    pos: int = 0
    at_sync: bool = False
    arrived: dict = field(default_factory=dict)  # barrier -> generation of the last sync_arrive

    # The main ring's position, under the names the core used.
    @property
    def stage(self) -> int:
        return self.rings[MAIN].stage

    @stage.setter
    def stage(self, v: int) -> None:
        self.rings[MAIN].stage = v

    @property
    def phase(self) -> int:
        return self.rings[MAIN].phase

    @phase.setter
    def phase(self, v: int) -> None:
        self.rings[MAIN].phase = v

    @property
    def ready(self) -> bool:
        return self.rings[MAIN].ready

    @ready.setter
    def ready(self, v: bool) -> None:
        self.rings[MAIN].ready = v

    @property
    def initial_stage(self) -> int:
        return self.rings[MAIN].initial_stage

    @property
    def initial_phase(self) -> int:
        return self.rings[MAIN].initial_phase

    @property
    def done(self) -> bool:
        return self.pos >= len(self.program)

    @property
    def current(self) -> Instr | None:
        return None if self.done else self.program[self.pos]

    @property
    def item(self) -> int:
        """Current item number: 0 in the prologue, `items` in the epilogue and when done."""
        return self.items if self.done else self.current.item


@dataclass
class World:
    spec: Spec
    agents: list                      # list[Agent], ordered cta, role, index
    signals: dict                     # (cta, ring, "full"|"empty", stage) -> dict
    slots: dict                       # (cta, ring, stage) -> tuple of tags, one per part
    #                                   (-1 = never stored, or a part this CTA's slots lack)
    inflight: list                    # list of entry dicts (a multiset)
    barriers: dict                    # (cta, NAME) -> {"arrivals": a, "generation": g}
    gone: set = field(default_factory=set)  # CTAs whose agents have all finished
    trapped: bool = False             # a hardware trap happened (an arrive above pending, or a
    #                                   tx_range fault): the state after it is meaningless
    strict_exit: bool = False         # own copies/commits in flight at exit are inflight_at_exit
    #                                   (PTX's strict reading), not the unawaited_at_exit warning
    warnings: set = field(default_factory=set)  # warnings any step so far gave

    def agent(self, name: str) -> Agent:
        for a in self.agents:
            if a.name == name:
                return a
        raise ReplayError(f"no agent named {name!r} (agents: "
                          f"{', '.join(a.name for a in self.agents)})")

    def ring(self, name: str):
        for r in self.spec.all_rings:
            if r.name == name:
                return r
        raise ReplayError(f"unknown ring {name!r} (rings: "
                          f"{', '.join(r.name for r in self.spec.all_rings)})")


@dataclass
class ReplayOutcome:
    world: World
    last_step_kinds: set
    end_state_kinds: set
    step_kinds: list = field(default_factory=list)   # kinds committed by each step, in order
    state_kinds: list = field(default_factory=list)  # state_violations of the initial state
    #                                                  and of the state after each step
    step_warnings: list = field(default_factory=list)  # warnings each step gave, in order

    @property
    def warnings(self) -> set:
        """Every warning of the trace (WARNINGS; not violation kinds: the verdict stays)."""
        return set().union(*self.step_warnings)

    @property
    def kinds(self) -> set:
        return set(self.last_step_kinds) | set(self.end_state_kinds)


def agent_name(spec: Spec, cta: int, role: str, index: int) -> str:
    if spec.cluster_size == 1:
        return f"{role}[{index}]"
    return f"cta{cta}.{role}[{index}]"


def _ring_stages(spec: Spec, ring: str) -> int:
    for r in spec.all_rings:
        if r.name == ring:
            return r.stages
    raise ReplayError(f"op names unknown ring {ring!r}")


def _flatten(ops, is_leader: bool, spec: Spec) -> list:
    """The ops this agent runs, drain expanded into its ring's `stages` ops, @leader ops
    dropped."""
    out = []
    for op in ops:
        if op.leader_only and not is_leader:
            continue
        if op.name == "drain":
            out.extend([op] * _ring_stages(spec, op.ring))
        else:
            out.append(op)
    return out


def _in_item(op: Op, item: int) -> bool:
    return op.every <= 1 or item % op.every == op.at


def _unroll(role, is_leader: bool, spec: Spec) -> tuple[list, int]:
    prologue = _flatten(role.prologue, is_leader, spec)
    body = _flatten(role.body, is_leader, spec)
    epilogue = _flatten(role.epilogue, is_leader, spec)
    program = []
    for j, op in enumerate(prologue):
        program.append(Instr(j, 0, "prologue", op, _tag(spec, "prologue", 0, op)))
    body_start = len(prologue)
    for item in range(role.items):
        for j, op in enumerate(body):
            if _in_item(op, item):
                program.append(Instr(body_start + j, item, "body", op, _tag(spec, "body", item, op)))
    epilogue_start = body_start + len(body)
    for j, op in enumerate(epilogue):
        program.append(Instr(epilogue_start + j, role.items, "epilogue", op,
                             _tag(spec, "epilogue", role.items, op)))
    return program, epilogue_start + len(epilogue)


def _role_ctas(spec: Spec, role) -> list:
    if not role.ctas:
        return list(range(spec.cluster_size))
    return [c for c in range(spec.cluster_size) if c in role.ctas]


# --------------------------------------------------------------------------------------------
# Slot parts (docs/rules.md "Slot parts")
# --------------------------------------------------------------------------------------------

FILLS = ("copy", "write", "write_async")
MOVES = ("advance", "reset", "drain")   # each drain step moves the stage


@dataclass
class Part:
    """One part of a ring's slots. `ctas`: the CTAs whose slots have it (which slot a part's
    fills store into for which tag: `_filled_slots`)."""
    ctas: set


def _model_order(spec: Spec) -> list:
    """(role, cta, index) of every agent in the model's order: role by role, CTA by CTA, index.
    (The World keeps its agents CTA by CTA; parts are numbered in this order.)"""
    return [(role, cta, i) for role in spec.roles for cta in _role_ctas(spec, role)
            for i in range(role.count)]


def _sections(role, is_leader: bool, spec: Spec) -> dict:
    """section -> (pc of its first op, its flattened ops): the pcs _unroll gives them."""
    out, start = {}, 0
    for sec in SECTIONS:
        ops = _flatten(getattr(role, sec), is_leader, spec)
        out[sec] = (start, ops)
        start += len(ops)
    return out


@functools.lru_cache(maxsize=256)
def _slot_parts(spec: Spec) -> tuple[dict, dict]:
    """(parts, part_of): parts[ring] = [Part, ...] indexed by part number, and
    part_of[(agent name, pc)] = the part each producer-side fill stores into.

    For one item a slot has one part per fill op of each agent of a producer-side role that
    stores into it. The fills of an agent between two moves of its stage go to one slot, so
    within a section the j-th fill since the last move is the agent's j-th part; agent i's
    parts come after those of agents 0 .. i-1 that fill in that section (as many as the most
    fills it makes between two moves). The three sections number from 0 each, so they share
    the parts. The CTAs that no producer-side fill reaches (every CTA, for a ring that no
    producer-side role fills) have one part more, with no fills."""
    parts, part_of = {}, {}
    for ring in spec.all_rings:
        found = {}
        for section in SECTIONS:
            base = 0
            for role, cta, i in _model_order(spec):
                if role.side != "producer":
                    continue
                start, ops = _sections(role, i == 0, spec)[section]
                j = width = 0
                for k, op in enumerate(ops):
                    if op.ring != ring.name:
                        continue
                    if op.name in FILLS:
                        part = found.setdefault(base + j, Part(set()))
                        part.ctas |= set(_dests(spec, cta, op.to))  # copy, write: to=
                        part_of[(agent_name(spec, cta, role.name, i), start + k)] = base + j
                        j += 1
                        width = max(width, j)
                    elif op.name in MOVES:
                        j = 0
                base += width
        assert sorted(found) == list(range(len(found)))
        ring_parts = [found[p] for p in range(len(found))]
        # a CTA no producer-side fill reaches still has its slot: a part with no fills
        bare = set(range(spec.cluster_size)) - {c for part in ring_parts for c in part.ctas}
        if bare:
            ring_parts.append(Part(bare))
        parts[ring.name] = ring_parts
    return parts, part_of


@functools.lru_cache(maxsize=256)
def _filled_slots(spec: Spec) -> frozenset:
    """(ring, part, stage, tag) for every slot a producer-side fill stores its tag into:
    docs/rules.md "Slot parts", revised 2026-12-02 (parts are per slot). A part fill
    (fill op, agent) fills slot s for tag t iff that agent executes that op for the item whose
    tag is t while its stage on that ring is s. Each agent's unrolled program is run forward
    here (its stage on each ring moved by advance, reset and each drain step; every=/at=
    guards already applied by _unroll), so the stage each fill acts on is the one it really
    has, not one derived from the op's row."""
    _, part_of = _slot_parts(spec)
    out = set()
    for role, cta, i in _model_order(spec):
        if role.side != "producer":
            continue
        name = agent_name(spec, cta, role.name, i)
        program, _ = _unroll(role, i == 0, spec)
        stage = {r.name: (role.initial_stage if r.name == MAIN else 0) for r in spec.all_rings}
        start = dict(stage)
        stages = {r.name: r.stages for r in spec.all_rings}
        for ins in program:
            op = ins.op
            if op.name in FILLS and (name, ins.pc) in part_of:
                out.add((op.ring, part_of[(name, ins.pc)], stage[op.ring], ins.tag))
            elif op.name in ("advance", "drain"):
                stage[op.ring] = (stage[op.ring] + 1) % stages[op.ring]
            elif op.name == "reset":
                stage[op.ring] = start[op.ring]
    return frozenset(out)


def _uses_arrive_wait(spec: Spec) -> bool:
    return any(op.name in ("sync_arrive", "sync_wait")
               for r in spec.roles for op in r.prologue + r.body + r.epilogue)


def initial_state(spec: Spec, strict_exit: bool = False) -> World:
    parts, part_of = _slot_parts(spec)
    agents = []
    for cta in range(spec.cluster_size):
        for role in spec.roles:
            if cta not in _role_ctas(spec, role):
                continue
            for i in range(role.count):
                name = agent_name(spec, cta, role.name, i)
                program, length = _unroll(role, i == 0, spec)
                for ins in program:
                    ins.part = part_of.get((name, ins.pc), -1)
                rings = {}
                for r in spec.all_rings:
                    st = role.initial_stage if r.name == MAIN else 0
                    ph = role.initial_phase_of(r.name)
                    has_reset = any(ins.op.name == "reset" and ins.op.ring == r.name
                                    for ins in program)
                    rings[r.name] = RingPos(stages=r.stages, initial_stage=st,
                                            initial_phase=ph, stage=st, phase=ph,
                                            has_reset=has_reset)
                agents.append(Agent(
                    name=name, role=role.name, cta=cta, index=i,
                    program=program, program_length=length, items=role.items, rings=rings,
                    arrived={b.name: 0 for b in spec.barriers}))
    signals = {}
    slots = {}
    for cta in range(spec.cluster_size):
        for r in spec.all_rings:
            for s in range(r.stages):
                for kind, n in (("full", r.producer_arrive_count),
                                ("empty", r.consumer_arrive_count)):
                    if spec.backend == "nvidia":
                        signals[(cta, r.name, kind, s)] = {
                            "phase_no": 0, "pending": n, "expected": n, "tx": 0,
                            "observed": False}
                    else:
                        signals[(cta, r.name, kind, s)] = {"count": 0}
                slots[(cta, r.name, s)] = (-1,) * len(parts[r.name])
    barriers = {(cta, b.name): {"arrivals": 0, "generation": 0}
                for cta in range(spec.cluster_size) for b in spec.barriers}
    world = World(spec=spec, agents=agents, signals=signals, slots=slots, inflight=[],
                  barriers=barriers, strict_exit=strict_exit)
    for cta in range(spec.cluster_size):
        if _cta_all_done(world, cta):
            world.gone.add(cta)
    return world


# --------------------------------------------------------------------------------------------
# Backends
# --------------------------------------------------------------------------------------------

def _signal(world: World, cta: int, kind: str, stage: int, ring: str = MAIN) -> dict:
    try:
        return world.signals[(cta, ring, kind, stage)]
    except KeyError:
        raise ReplayError(f"no signal {_signal_name(cta, ring, kind, stage)}") from None


def signal_ready(world: World, cta: int, kind: str, stage: int, phase: int,
                 ring: str = MAIN) -> bool:
    """The backend's answer to a wait/try on signal `kind` of `stage` of `ring` in `cta` at
    `phase`."""
    sig = _signal(world, cta, kind, stage, ring)
    if world.spec.backend == "nvidia":
        return sig["phase_no"] % 2 != phase % 2
    r = world.ring(ring)
    if kind == "full":
        return sig["count"] >= ((phase + 1) % WRAP) * r.producer_arrive_count
    return sig["count"] >= ((phase - 1) % WRAP) * r.consumer_arrive_count


def _nvidia_update(world: World, sig: dict, add_tx: int = 0, arrive: int = 0) -> set:
    """One atomic mbarrier update: tx += add_tx, then an arrive of `arrive` (if > 0)."""
    kinds = set()
    sig["tx"] += add_tx
    if abs(sig["tx"]) > TX_LIMIT:
        world.trapped = True          # the tx-count left its range: the hardware faults
        kinds.add("tx_range")
    if arrive > 0:
        if arrive > sig["pending"]:
            world.trapped = True
            kinds.add("over_arrival")
            return kinds
        sig["pending"] -= arrive
    if sig["pending"] == 0 and sig["tx"] == 0:
        if sig["phase_no"] >= 1 and not sig["observed"]:
            kinds.add("over_arrival")
        sig["phase_no"] += 1
        sig["pending"] = sig["expected"]
        sig["observed"] = False
    return kinds


def _arrive(world: World, cta: int, ring: str, kind: str, stage: int, n: int) -> set:
    sig = _signal(world, cta, kind, stage, ring)
    if world.spec.backend == "nvidia":
        return _nvidia_update(world, sig, arrive=n)
    sig["count"] += n
    return set()


def _observe(world: World, cta: int, ring: str, kind: str, stage: int) -> None:
    """A wait or try on this signal returned ready (nvidia over_arrival bookkeeping)."""
    if world.spec.backend == "nvidia":
        _signal(world, cta, kind, stage, ring)["observed"] = True


# --------------------------------------------------------------------------------------------
# Enabled events
# --------------------------------------------------------------------------------------------

def _wait_kind(op: Op) -> str:
    """Signal a wait/try/drain op looks at."""
    return "empty" if op.name in ("wait_empty", "try_empty", "drain") else "full"


def _is_skipped_wait(agent: Agent, op: Op) -> bool:
    return op.name in WAITS and op.unless_ready and agent.rings[op.ring].ready


def _is_blocking_wait(agent: Agent, op: Op) -> bool:
    return op.name == "drain" or (op.name in WAITS and not _is_skipped_wait(agent, op))


def _reads_in_flight(world: World, agent: Agent) -> list:
    """The agent's in-flight async reads, oldest first."""
    reads = [e for e in world.inflight if e["kind"] == "read" and e["agent"] == agent.name]
    return sorted(reads, key=lambda e: e["seq"])


def _agent_enabled(world: World, agent: Agent) -> bool:
    if agent.done or agent.at_sync:
        return False
    op = agent.current.op
    if _is_blocking_wait(agent, op):
        pos = agent.rings[op.ring]
        return signal_ready(world, agent.cta, _wait_kind(op), pos.stage, pos.phase, op.ring)
    if op.name == "read_wait":
        return len(_reads_in_flight(world, agent)) <= op.n
    if op.name == "sync_wait":
        bar = _barrier_state(world, agent.cta, op.barrier)
        return bar["generation"] > agent.arrived.get(op.barrier, 0)
    return True


def _entry_key(entry: dict) -> str:
    return json.dumps(entry, sort_keys=True)


def _earlier_commits(world: World, entry: dict) -> list:
    """The in-flight commit entries its agent issued before commit `entry` (R1: an agent's
    commits fire in issue order; the entries of one to=all commit share their "_order" and
    are not earlier than each other)."""
    return [e for e in world.inflight if e["kind"] == "commit"
            and e["agent"] == entry["agent"] and e["_order"] < entry["_order"]]


def _public(world: World, entry: dict, old: bool = False) -> dict:
    """An in-flight entry as the state view shows it: without the bookkeeping keys ("_peer",
    "_order") that only this file keeps; a commit with "after_commits", how many entries of
    its agent's earlier commits are still in flight. `old`: a commit as views written before
    R1 showed it (no "after_commits"; "agent" "" once no read is waited for)."""
    view = {k: v for k, v in entry.items() if not k.startswith("_")}
    if entry["kind"] == "commit":
        if old:
            view["agent"] = view["agent"] if view["after"] else ""
        else:
            view["after_commits"] = len(_earlier_commits(world, entry))
    return view


def _old_commits(entries: list) -> bool:
    """Do these (trace) entries show commits the way views did before R1?"""
    return any(e.get("kind") == "commit" and "after_commits" not in e for e in entries)


def _entry_enabled(world: World, entry: dict) -> bool:
    if entry["kind"] == "read":
        return entry["seq"] == 0
    if entry["kind"] == "commit":
        return entry["after"] == 0 and not _earlier_commits(world, entry)
    return True


def _shown(world: World, entry: dict) -> dict:
    """The entry an event names: its view, with the bookkeeping keys too where another entry
    in flight has the same view and different bookkeeping (so that the event names one)."""
    view = _public(world, entry)
    for e in world.inflight:
        if e is not entry and e != entry and _public(world, e) == view:
            return dict(entry)  # (a commit's view "after_commits" is computed: never stored)
    return view


EVENT_OF = {"copy": "land", "commit": "fire", "read": "finish"}
ENTRY_OF = {v: k for k, v in EVENT_OF.items()}


def enabled_events(world: World) -> list:
    events = []
    for a in world.agents:
        if _agent_enabled(world, a):
            ins = a.current
            events.append({"kind": "agent", "agent": a.name, "op": ins.op.name, "pc": ins.pc})
    seen = set()
    for entry in world.inflight:
        shown = _shown(world, entry)
        key = _entry_key(shown)
        if key in seen or not _entry_enabled(world, entry):
            continue
        seen.add(key)
        events.append({"kind": EVENT_OF[entry["kind"]], "entry": shown})
    return events


# --------------------------------------------------------------------------------------------
# Properties used inside steps
# --------------------------------------------------------------------------------------------

def _intended(pos: RingPos, kind: str) -> int:
    """The signal phase k an agent at `pos` means when it waits on (or tries) signal `kind` of
    its stage (docs/rules.md "The phase_alias window after `reset`")."""
    p0 = pos.initial_phase
    if not pos.has_reset:
        return (pos.phase - p0) - (p0 % 2)
    k_last, ph_last = pos.window.get((pos.stage, kind), (-(p0 % 2), p0))
    if pos.phase >= ph_last:
        return k_last + (pos.phase - ph_last)
    # a reset moved the phase back: the first phase from k' on with the parity of ph
    k = k_last
    while (k - pos.phase) % 2 != 0:
        k += 1
    return k


def _passed(pos: RingPos, kind: str) -> None:
    """A wait (a drain step) passed, or a try found the signal ready: remember (k, ph)."""
    if pos.has_reset:
        pos.window = {**pos.window, (pos.stage, kind): (_intended(pos, kind), pos.phase)}


def _phase_alias(world: World, agent: Agent, kind: str, ring: str = MAIN) -> bool:
    if world.spec.backend != "nvidia":
        return False
    pos = agent.rings[ring]
    k = _intended(pos, kind)
    phase_no = _signal(world, agent.cta, kind, pos.stage, ring)["phase_no"]
    return phase_no not in (k, k + 1)


def _will_read(agent: Agent, ring: str, tag: int, stage: int) -> bool:
    """Does `agent`, run forward from its position ignoring waits, still read (read or
    read_async) `tag` at `stage` of `ring`?"""
    pos = agent.rings[ring]
    sim = RingPos(stages=pos.stages, initial_stage=pos.initial_stage,
                  initial_phase=pos.initial_phase, stage=pos.stage, phase=pos.phase)
    for ins in agent.program[agent.pos:]:
        if ins.op.ring != ring:
            continue
        name = ins.op.name
        if name in ("read", "read_async") and ins.tag == tag and sim.stage == stage:
            return True
        if name in ("advance", "drain"):
            sim.advance()
        elif name == "reset":
            sim.reset()
    return False


def _advanced(stage: int, phase: int, stages: int) -> tuple[int, int]:
    stage += 1
    if stage == stages:
        stage = 0
        phase += 1
    return stage, phase


def _parts(world: World, ring: str) -> list:
    return _slot_parts(world.spec)[0][ring]


def _store(world: World, cta: int, ring: str, stage: int, tag: int, part: int) -> set:
    """Store `tag` in slot (cta, ring, stage): into part `part` (a producer-side fill), or into
    every part this CTA's slots have (part -1: a consumer-side fill). overwrite_before_drain if,
    in a part stored over, an unread tag is lost: an agent of the CTA still reads it there, or
    an async read of it is in flight."""
    kinds = set()
    tags = list(world.slots[(cta, ring, stage)])
    for p, info in enumerate(_parts(world, ring)):
        if (part >= 0 and p != part) or cta not in info.ctas:
            continue
        old = tags[p]
        if old >= 0 and old != tag and _still_read(world, cta, ring, stage, old):
            kinds.add("overwrite_before_drain")
        tags[p] = tag
    world.slots[(cta, ring, stage)] = tuple(tags)
    return kinds


def _still_read(world: World, cta: int, ring: str, stage: int, tag: int) -> bool:
    if any(e["kind"] == "read" and not e.get("writes") and e["cta"] == cta and e["ring"] == ring
           and e["stage"] == stage and e["tag"] == tag for e in world.inflight):
        return True
    return any(a.cta == cta and _will_read(a, ring, tag, stage) for a in world.agents)


def _checked_parts(world: World, cta: int, ring: str, stage: int, tag: int) -> list:
    """The parts a read of `tag` in slot `stage` of `cta` checks: those of the CTA's slots
    that the program fills for `tag` in that slot (`_filled_slots`), or, when it fills none of
    them for `tag` there, every part the CTA has."""
    have = [p for p, info in enumerate(_parts(world, ring)) if cta in info.ctas]
    fills = _filled_slots(world.spec)
    filled = [p for p in have if (ring, p, stage, tag) in fills]
    return filled or have


def _read_before_fill(world: World, cta: int, ring: str, stage: int, item: int) -> bool:
    tags = world.slots[(cta, ring, stage)]
    if any(tags[p] != item for p in _checked_parts(world, cta, ring, stage, item)):
        return True
    # a copy into the slot, or an async write of it (write_async), not yet landed or finished
    return any((e["kind"] == "copy" or e.get("writes")) and e["cta"] == cta and e["ring"] == ring
               and e["stage"] == stage for e in world.inflight)


def _targets(world: World, cta: int, to: str) -> list:
    return _dests(world.spec, cta, to)


def _dests(spec: Spec, cta: int, to: str) -> list:
    """The CTAs an op of an agent in `cta` with target `to` acts on."""
    k = spec.cluster_size
    if k == 1 or to == "self":
        return [cta]
    if to == "leader":
        return [0]
    if to == "peer":
        return [(cta + 1) % k]
    if to == "all":
        return list(range(k))
    raise ReplayError(f"unknown target to={to}")


def _aimed(world: World, cta: int) -> set:
    """An arrive, expect_tx, copy or commit issued at a gone CTA (from another CTA: a CTA's own
    agents are all finished once it is gone). A landing or firing into a gone CTA is not
    reported by itself (revised 2026-12-02): a peer's entry was flagged at the exit step or at
    its issue, an own one is the unawaited_at_exit warning."""
    return {"inflight_at_exit"} if cta in world.gone else set()


def _cta_all_done(world: World, cta: int) -> bool:
    return all(a.done for a in world.agents if a.cta == cta)


def _barrier_count(world: World, cta: int, name: str) -> int:
    for b in world.spec.barriers:
        if b.name == name:
            if b.count is not None:
                return b.count
            return sum(r.count for r in world.spec.roles
                       if r.name in b.roles and cta in _role_ctas(world.spec, r))
    raise ReplayError(f"unknown barrier {name!r}")


def _barrier_state(world: World, cta: int, name: str) -> dict:
    key = (cta, name)
    if key not in world.barriers:
        _barrier_count(world, cta, name)      # raises for an unknown barrier
        world.barriers[key] = {"arrivals": 0, "generation": 0}
    return world.barriers[key]


# --------------------------------------------------------------------------------------------
# Steps
# --------------------------------------------------------------------------------------------

def _apply_agent_op(world: World, a: Agent) -> set:
    """Execute the agent's current op (already known to be enabled); move it on."""
    spec = world.spec
    ins = a.current
    op = ins.op
    name = op.name
    ring = op.ring
    kinds = set()
    pos = a.rings[ring] if ring in a.rings else None
    if pos is None:
        raise ReplayError(f"{a.name}: op {op} names unknown ring {ring!r}")
    stage = pos.stage

    if name in WAITS:
        if not _is_skipped_wait(a, op):
            _observe(world, a.cta, ring, _wait_kind(op), stage)
            _passed(pos, _wait_kind(op))
    elif name in TRIES:
        kind = _wait_kind(op)
        if _phase_alias(world, a, kind, ring):
            kinds.add("phase_alias")
        pos.ready = signal_ready(world, a.cta, kind, stage, pos.phase, ring)
        if pos.ready:
            _observe(world, a.cta, ring, kind, stage)
            _passed(pos, kind)
    elif name in ("arrive_full", "arrive_empty"):
        kind = "full" if name == "arrive_full" else "empty"
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            kinds |= _arrive(world, dst, ring, kind, stage, op.n)
    elif name in ("expect_tx", "expect_bytes"):   # expect_bytes: mbarrier.expect_tx, no arrival
        if spec.backend != "nvidia":
            raise ReplayError(f"{name} on the amd backend")
        if op.n > TX_LIMIT:
            # expect_tx(2^20) faults (docs/rules.md "Transaction bytes (`tx_range`)")
            world.trapped = True
            kinds.add("tx_range")
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            kinds |= _nvidia_update(world, _signal(world, dst, "full", stage, ring),
                                    add_tx=op.n, arrive=int(name == "expect_tx"))
    elif name == "copy":
        if spec.backend != "nvidia":
            raise ReplayError("copy on the amd backend")
        if op.n > TX_LIMIT:
            world.trapped = True      # an operand outside the tx range faults, as expect_tx does
            kinds.add("tx_range")
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            entry = {"kind": "copy", "cta": dst, "ring": ring, "stage": stage,
                     "tag": ins.tag, "bytes": op.n, "_peer": dst != a.cta}
            if len(_parts(world, ring)) > 1:
                entry["part"] = ins.part      # -1: a consumer-side copy, into every part
            world.inflight.append(entry)
    elif name in ("commit_empty", "commit_full"):  # tcgen05.commit onto empty or full
        after = len(_reads_in_flight(world, a))
        # R1: its rank among the agent's commits in flight (one for every entry of a to=all
        # commit); ranks are kept dense (_commit_fired), so equal states have equal entries
        order = 1 + max([e["_order"] for e in world.inflight
                         if e["kind"] == "commit" and e["agent"] == a.name], default=-1)
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            entry = {"kind": "commit", "cta": dst, "ring": ring, "stage": stage,
                     "n": op.n, "agent": a.name, "after": after,
                     "_peer": dst != a.cta, "_order": order}
            if name == "commit_full":
                entry["signal"] = "full"
            world.inflight.append(entry)
    elif name in ("write", "write_async"):
        # stores now at each target CTA (to=: a 2-SM leader MMA writes both CTAs' tensor
        # memory); an async write's slot is busy until its entry (one per target, in CTA
        # order in the agent's FIFO) finishes
        for dst in _targets(world, a.cta, op.to):
            kinds |= _aimed(world, dst)
            kinds |= _store(world, dst, ring, stage, ins.tag, ins.part)
            if name == "write_async":
                world.inflight.append({"kind": "read", "cta": dst, "ring": ring, "stage": stage,
                                       "tag": ins.tag, "agent": a.name,
                                       "seq": len(_reads_in_flight(world, a)), "writes": True})
    elif name == "read":
        if _read_before_fill(world, a.cta, ring, stage, ins.tag):
            kinds.add("read_before_fill")
    elif name == "read_async":
        if _read_before_fill(world, a.cta, ring, stage, ins.tag):
            kinds.add("read_before_fill")
        world.inflight.append({"kind": "read", "cta": a.cta, "ring": ring, "stage": stage,
                               "tag": ins.tag, "agent": a.name,
                               "seq": len(_reads_in_flight(world, a))})
    elif name == "read_wait":
        pass                           # enabled only with at most n reads in flight
    elif name == "advance":
        pos.advance()
    elif name == "reset":
        pos.reset()
    elif name == "drain":
        _observe(world, a.cta, ring, "empty", stage)
        _passed(pos, "empty")
        pos.advance()
    elif name == "sync":
        _, completed = _barrier_arrive(world, a.cta, op.barrier)
        if not completed:
            a.at_sync = True           # stays at its sync op, blocked
            return kinds
    elif name == "sync_arrive":
        a.arrived[op.barrier], _ = _barrier_arrive(world, a.cta, op.barrier)
    elif name == "sync_wait":
        pass                           # enabled only once that generation has completed
    else:
        raise ReplayError(f"unknown op {name!r}")
    a.pos += 1
    return kinds


def _barrier_arrive(world: World, cta: int, name: str) -> tuple[int, bool]:
    """One arrival on barrier `name` of `cta`: returns the generation it arrived in and whether
    it completed that generation. On completion every agent of the CTA blocked in `sync name`
    moves on (the arriving agent itself is moved on by its caller)."""
    bar = _barrier_state(world, cta, name)
    count = _barrier_count(world, cta, name)
    generation = bar["generation"]
    bar["arrivals"] += 1
    if bar["arrivals"] < count:
        return generation, False
    bar["generation"] += 1
    bar["arrivals"] = 0
    for b in world.agents:
        if b.cta == cta and b.at_sync and b.current.op.barrier == name:
            b.at_sync = False
            b.pos += 1
    return generation, True


def _blocked_reason(world: World, a: Agent) -> str:
    op = a.current.op
    if op.name == "read_wait":
        n = len(_reads_in_flight(world, a))
        return f"{n} async read(s) in flight, more than {op.n}"
    if op.name == "sync_wait":
        bar = _barrier_state(world, a.cta, op.barrier)
        return (f"cta{a.cta}.{op.barrier} generation {bar['generation']} has not completed "
                f"generation {a.arrived.get(op.barrier, 0)}")
    pos = a.rings[op.ring]
    kind = _wait_kind(op)
    sig = _signal(world, a.cta, kind, pos.stage, op.ring)
    return (f"{_signal_name(a.cta, op.ring, kind, pos.stage)} = {_public_signal(sig)} "
            f"is not ready for phase {pos.phase}")


def _check_agent_event(world: World, event: dict) -> Agent:
    a = world.agent(event.get("agent", ""))
    if a.done:
        raise ReplayError(f"{a.name} is finished; it has no op {event.get('op')!r}")
    ins = a.current
    if event.get("pc") != ins.pc or event.get("op") != ins.op.name:
        raise ReplayError(f"{a.name} is at pc {ins.pc} op {ins.op.name!r}, "
                          f"not pc {event.get('pc')} op {event.get('op')!r}")
    if a.at_sync:
        raise ReplayError(f"{a.name} is blocked at sync {ins.op.barrier!r}")
    if not _agent_enabled(world, a):
        raise ReplayError(f"{a.name} {ins.op.name} is blocked: {_blocked_reason(world, a)}")
    return a


def _normal_entry(entry: dict) -> dict:
    """An inflight entry with the keys older traces leave out filled in (ring "main"; a
    commit's agent "" and after 0)."""
    e = dict(entry)
    if e.get("kind") in ("copy", "commit", "read"):
        e.setdefault("ring", MAIN)
    if e.get("kind") == "commit":
        e.setdefault("agent", "")
        e.setdefault("after", 0)
    return e


def _take_inflight(world: World, event: dict) -> dict:
    """Remove and return the in-flight entry the event names. An event names an entry by the
    keys the state view shows (`_public`), or by every key if it gives the bookkeeping ones
    too. Several entries may look alike (two agents' commits of one signal); the event is
    enabled when one of them may land/fire/finish, and that one is taken."""
    want = ENTRY_OF[event["kind"]]
    entry = _normal_entry(event.get("entry", {}))
    if entry.get("kind") != want:
        raise ReplayError(f"a {event['kind']} event needs a {want!r} entry, got {entry}")
    exact = any(k.startswith("_") for k in entry)
    old = _old_commits([entry])
    matches = [i for i, e in enumerate(world.inflight)
               if (e if exact else _public(world, e, old)) == entry]
    if not matches:
        raise ReplayError(f"{event['kind']}: {entry} is not in flight (in flight: "
                          f"{[_public(world, e) for e in world.inflight]})")
    for i in matches:
        if _entry_enabled(world, world.inflight[i]):
            return world.inflight.pop(i)
    e = world.inflight[matches[0]]
    if want == "read":
        raise ReplayError(f"finish: {entry} is not {e['agent']}'s oldest async read "
                          f"(reads finish in issue order)")
    if e["after"] != 0:
        raise ReplayError(f"fire: {entry} still waits for {e['after']} of "
                          f"{e['agent']}'s async reads")
    raise ReplayError(f"fire: {entry} was issued by {e['agent']} after its commit "
                      f"{_public(world, _earlier_commits(world, e)[0])}, still in flight (an "
                      f"agent's commits fire in the order it issued them)")


def _finish_read(world: World, entry: dict) -> None:
    """The agent's oldest read has finished: the rest move up, its commits wait one less."""
    who = entry["agent"]
    for e in world.inflight:
        if e["kind"] == "read" and e["agent"] == who:
            e["seq"] -= 1
        elif e["kind"] == "commit" and e["agent"] == who and e["after"] > 0:
            e["after"] -= 1


def _apply_async(world: World, event: dict) -> set:
    entry = _take_inflight(world, event)
    cta, ring, stage = entry["cta"], entry["ring"], entry["stage"]
    if entry["kind"] == "read":
        _finish_read(world, entry)     # a read of the agent's own CTA: aimed at nothing
        return set()
    # a landing or firing into a gone CTA is no kind by itself (see _aimed), except in strict
    # mode, which reads it as before the revision; it still updates the slot and the signal,
    # which no agent looks at any more
    kinds = _aimed(world, cta) if world.strict_exit else set()
    if entry["kind"] == "copy":
        part = entry.get("part", 0 if len(_parts(world, ring)) == 1 else -1)
        kinds |= _store(world, cta, ring, stage, entry["tag"], part)
        kinds |= _nvidia_update(world, _signal(world, cta, "full", stage, ring),
                                add_tx=-entry["bytes"])
    else:
        _commit_fired(world, entry)
        kinds |= _arrive(world, cta, ring, entry.get("signal", "empty"), stage, entry["n"])
    return kinds


def _commit_fired(world: World, entry: dict) -> None:
    """R1 bookkeeping: once the last entry of the agent's oldest commit has fired, its later
    commits move up one rank."""
    mine = [e for e in world.inflight if e["kind"] == "commit" and e["agent"] == entry["agent"]]
    if any(e["_order"] == entry["_order"] for e in mine):
        return                         # another entry of the same to=all commit is in flight
    for e in mine:
        if e["_order"] > entry["_order"]:
            e["_order"] -= 1


WARNINGS = ("unawaited_at_exit",)


def _exit_kinds(world: World, cta: int) -> tuple[set, set]:
    """(kinds, warnings) of the step that makes `cta` gone (docs/model.md inflight_at_exit,
    revised 2026-12-02). inflight_at_exit: an async read of one of its agents is in flight, or
    a copy/commit issued by an agent of another CTA still targets it. Otherwise, copies or
    commits its own agents issued still targeting it are the warning unawaited_at_exit, or
    inflight_at_exit in strict mode."""
    aimed = [e for e in world.inflight if e["cta"] == cta]
    if any(e["kind"] == "read" or e["_peer"] for e in aimed):
        return {"inflight_at_exit"}, set()
    if not aimed:
        return set(), set()
    if world.strict_exit:
        return {"inflight_at_exit"}, set()
    return set(), {"unawaited_at_exit"}


def _apply(world: World, event: dict) -> tuple[set, set]:
    """Check `event` is enabled, apply it: (violation kinds, warnings) of the step."""
    kind = event.get("kind")
    if kind == "agent":
        a = _check_agent_event(world, event)
        kinds = _apply_agent_op(world, a)
    elif kind in ENTRY_OF:
        kinds = _apply_async(world, event)
    else:
        raise ReplayError(f"unknown event kind {kind!r}")
    warnings = set()
    for cta in range(world.spec.cluster_size):
        if cta not in world.gone and _cta_all_done(world, cta):
            world.gone.add(cta)
            k, w = _exit_kinds(world, cta)
            kinds |= k
            warnings |= w
    world.warnings |= warnings
    return kinds, warnings


def apply(world: World, event: dict) -> set:
    """Check `event` is enabled, apply it, return the violation kinds this step commits (its
    warnings are added to world.warnings)."""
    return _apply(world, event)[0]


def state_violations(world: World) -> set:
    kinds = set()
    unfinished = [a for a in world.agents if not a.done]
    if unfinished and not world.inflight and not enabled_events(world):
        kinds.add("deadlock")
    if world.spec.backend == "nvidia":
        for a in unfinished:
            op = a.current.op
            if _is_blocking_wait(a, op) and _phase_alias(world, a, _wait_kind(op), op.ring):
                kinds.add("phase_alias")
    return kinds


# --------------------------------------------------------------------------------------------
# State view (checker/results/trace.py format) and replay
# --------------------------------------------------------------------------------------------

def _signal_name(cta: int, ring: str, kind: str, stage: int) -> str:
    return f"cta{cta}.{kind}[{stage}]" if ring == MAIN else f"cta{cta}.{ring}.{kind}[{stage}]"


def _slot_name(cta: int, ring: str, stage: int) -> str:
    return f"cta{cta}.slot[{stage}]" if ring == MAIN else f"cta{cta}.{ring}.slot[{stage}]"


def _public_signal(sig: dict) -> dict:
    if "count" in sig:
        return {"count": sig["count"]}
    return {"phase_no": sig["phase_no"], "pending": sig["pending"], "tx": sig["tx"]}


def state_view(world: World) -> dict:
    spec = world.spec
    show_arrived = _uses_arrive_wait(spec)
    agents = {}
    for a in world.agents:
        ins = a.current
        view = {
            "role": a.role, "cta": a.cta, "index": a.index,
            "pc": a.program_length if ins is None else ins.pc,
            "op": None if ins is None else ins.op.name,
            "item": a.item, "stage": a.stage, "phase": a.phase, "ready": a.ready,
            "at_sync": a.at_sync, "done": a.done,
        }
        if spec.rings:
            view["rings"] = {r.name: {"stage": a.rings[r.name].stage,
                                      "phase": a.rings[r.name].phase,
                                      "ready": a.rings[r.name].ready} for r in spec.rings}
        if show_arrived:
            view["arrived"] = {b.name: a.arrived.get(b.name, 0) for b in spec.barriers}
        agents[a.name] = view
    return {
        "agents": agents,
        "signals": {_signal_name(c, r, k, s): _public_signal(sig)
                    for (c, r, k, s), sig in world.signals.items()},
        "slots": {_slot_name(c, r, s): tags[0] if len(tags) == 1 else list(tags)
                  for (c, r, s), tags in world.slots.items()},
        "inflight": [_public(world, e) for e in world.inflight],
        "barriers": {f"cta{c}.{name}": dict(b) for (c, name), b in world.barriers.items()},
    }


def _mismatch(where: str, what: str, theirs, ours) -> ReplayError:
    return ReplayError(f"{where}: {what}: trace says {theirs!r}, replay has {ours!r}")


def _compare_agents(world: World, theirs: dict, ours: dict, where: str) -> None:
    if set(theirs) != set(ours):
        raise _mismatch(where, "agent names", sorted(theirs), sorted(ours))
    by_name = {a.name: a for a in world.agents}
    for name, t in theirs.items():
        o = ours[name]
        a = by_name[name]
        keys = ["done", "stage", "phase", "ready", "at_sync"]
        if not o["done"]:
            keys += ["pc", "op"]
            if a.current.section == "body":
                keys.append("item")   # outside the body the item number is not defined
        for key in keys:
            if key not in t:
                continue
            if key == "op" and not o["done"]:
                # The view may name the op (`expect_tx`) or show it as written in the spec
                # (`expect_tx 4096 @leader`): trace.py fixes neither; both identify it.
                if t[key] not in (a.current.op.name, a.current.op.text):
                    raise _mismatch(where, f"{name}.{key}", t[key], a.current.op.text or o[key])
            elif t[key] != o[key]:
                raise _mismatch(where, f"{name}.{key}", t[key], o[key])
        for ring, fields in t.get("rings", {}).items():
            if ring not in o.get("rings", {}):
                raise _mismatch(where, f"{name}.rings", sorted(t["rings"]),
                                sorted(o.get("rings", {})))
            for key, value in fields.items():
                if key in o["rings"][ring] and o["rings"][ring][key] != value:
                    raise _mismatch(where, f"{name}.rings.{ring}.{key}", value,
                                    o["rings"][ring][key])
        for bar, value in t.get("arrived", {}).items():
            if a.arrived.get(bar, 0) != value:
                raise _mismatch(where, f"{name}.arrived.{bar}", value, a.arrived.get(bar, 0))


def _compare_view(world: World, view: dict | None, where: str) -> None:
    if not view or world.trapped:
        return
    ours = state_view(world)
    if "agents" in view:
        _compare_agents(world, view["agents"], ours["agents"], where)
    for name, fields in view.get("signals", {}).items():
        if name not in ours["signals"]:
            raise _mismatch(where, "signal", name, sorted(ours["signals"]))
        for key, value in fields.items():
            if key in ours["signals"][name] and ours["signals"][name][key] != value:
                raise _mismatch(where, f"{name}.{key}", value, ours["signals"][name][key])
    for name, value in view.get("slots", {}).items():
        if ours["slots"].get(name) != value:
            raise _mismatch(where, f"slots {name}", value, ours["slots"].get(name))
    for name, value in view.get("barriers", {}).items():
        mine = ours["barriers"].get(name)
        if isinstance(value, int) and mine is not None:
            mine = mine["arrivals"]            # an older view: arrivals only
        if mine != value:
            raise _mismatch(where, f"barriers {name}", value, mine)
    if "inflight" in view:
        theirs = [_normal_entry(e) for e in view["inflight"]]
        old = _old_commits(theirs)
        theirs_ms = Counter(_entry_key(e) for e in theirs)
        ours_ms = Counter(_entry_key(_public(world, e, old)) for e in world.inflight)
        if theirs_ms != ours_ms:
            raise _mismatch(where, "inflight", view["inflight"], ours["inflight"])


def _compare_step_header(world: World, step: dict, where: str) -> None:
    """The step's `phase` (and `stage`, where the op acts on one) is the agent's, before it,
    in the ring of its op."""
    event = step["event"]
    if event.get("kind") != "agent":
        return
    a = world.agent(event["agent"])
    ring = a.current.op.ring if not a.done else MAIN
    pos = a.rings.get(ring, a.rings[MAIN])
    if step.get("phase") is not None and step["phase"] != pos.phase:
        raise _mismatch(where, "step phase", step["phase"], pos.phase)
    acts_on_stage = event.get("op") not in NO_STAGE_OPS
    if acts_on_stage and step.get("stage") is not None and step["stage"] != pos.stage:
        raise _mismatch(where, "step stage", step["stage"], pos.stage)


def _resolutions(world: World, event: dict) -> list:
    """The events, each naming one in-flight entry, that a trace's `event` may stand for. The
    view does not show this file's bookkeeping keys: two entries that look alike there (a
    copy of this CTA's and a peer's into one slot) may differ in it, and then the trace may
    mean either one, if both may land (fire, finish)."""
    if event.get("kind") not in ENTRY_OF:
        return [event]
    entry = _normal_entry(event.get("entry", {}))
    if any(k.startswith("_") for k in entry):
        return [event]
    old = _old_commits([entry])
    found = []
    for e in world.inflight:
        if _public(world, e, old) == entry and _entry_enabled(world, e) and e not in found:
            found.append(e)
    if len(found) <= 1:
        return [event]
    return [{"kind": event["kind"], "entry": dict(e)} for e in found]


def _fork(world: World) -> World:
    """A deep copy of `world` that shares the spec and the unrolled programs (never changed)."""
    memo = {id(world.spec): world.spec}
    for a in world.agents:
        memo[id(a.program)] = a.program
    return copy.deepcopy(world, memo)


def replay(spec: Spec, trace_json: dict, strict_exit: bool | None = None) -> ReplayOutcome:
    """Replay `trace_json` on `spec`. `strict_exit`: own copies/commits in flight at a CTA's
    exit are inflight_at_exit, not the unawaited_at_exit warning (the CLI's --strict-exit);
    None: the trace's own "strict_exit" key, if any, else False.

    Where a step's event may name one of several entries that look alike in the view and
    differ in this file's bookkeeping (`_resolutions`), each is followed; the trace replays if
    one of them does (the outcome is one that ends in the trace's "kind", if any does)."""
    if strict_exit is None:
        strict_exit = bool(trace_json.get("strict_exit", False))
    world = initial_state(spec, strict_exit=strict_exit)
    _compare_view(world, trace_json.get("initial"), "initial state")
    runs = [(world, [], [state_violations(world)], [])]
    for i, step in enumerate(trace_json.get("steps", []), start=1):
        where = f"step {step.get('index', i)} ({step.get('action', step['event'])})"
        following, error = [], None
        for world, step_kinds, state_kinds, step_warnings in runs:
            try:
                if not world.trapped:
                    _compare_step_header(world, step, where)
                options = _resolutions(world, step["event"])
            except ReplayError as e:
                error = error or e
                continue
            worlds = [_fork(world) for _ in options[1:]] + [world]
            for w, event in zip(worlds, options):
                try:
                    kinds, warnings = _apply(w, event)
                    after = state_violations(w)
                    _compare_view(w, step.get("state"), where)
                except ReplayError as e:
                    error = error or e
                    continue
                following.append((w, step_kinds + [kinds], state_kinds + [after],
                                  step_warnings + [warnings]))
        if not following:
            if str(error).startswith(where):
                raise error
            raise ReplayError(f"{where}: {error}") from None
        runs, seen = [], set()
        for run in following:             # one run per distinct state, bookkeeping included
            key = (json.dumps(state_view(run[0]), sort_keys=True),
                   tuple(sorted(_entry_key(e) for e in run[0].inflight)), tuple(run[1][-1]))
            if key not in seen:
                seen.add(key)
                runs.append(run)
    claimed = trace_json.get("kind")
    run = next((r for r in runs if r[1] and claimed in r[1][-1] | r[2][-1] | r[3][-1]),
               runs[0])
    world, step_kinds, state_kinds, step_warnings = run
    last = step_kinds[-1] if step_kinds else set()
    return ReplayOutcome(world=world, last_step_kinds=set(last),
                         end_state_kinds=state_kinds[-1], step_kinds=step_kinds,
                         state_kinds=state_kinds, step_warnings=step_warnings)
