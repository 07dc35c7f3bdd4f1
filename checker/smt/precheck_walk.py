"""The pre-check's walks: each agent class (`Cls`: a role, its leader apart when @leader ops
make agent 0 differ) run once through its program, one `Ev` per op with where on its ring it
runs; and every op's walk fitted to a closed form in the item index (`Form`), which the
symbolic checks quantify over. Also the op-name tables the checks share."""
from __future__ import annotations

import functools
import types
from collections import defaultdict
from dataclasses import dataclass
from math import lcm

from pipeproof.backends import base
from pipeproof.backends.capabilities import backend
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.spec.schema import MAIN_RING, Op, Role, Spec, targets

MAX_STEPS = 200_000  # agents x ops walked; above it only the static checks run
FULL, EMPTY = "full", "empty"


@functools.lru_cache(maxsize=None)
def plain_module(module) -> types.SimpleNamespace:
    """The backend's functions on plain Python ints: its own bodies, with the primitives'
    Python bodies (smt/solvers.py does the same with Z3's); no numba compile for a short run."""
    ns = dict(vars(module))
    ns.update({p: getattr(getattr(base, p), "py_func", getattr(base, p)) for p in base.PRIMITIVES})
    out = {}
    for name, obj in vars(module).items():
        fn = getattr(obj, "py_func", obj)
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            out[name] = ns[name] = types.FunctionType(fn.__code__, ns, name, fn.__defaults__)
    return types.SimpleNamespace(**out)


def plain_rules(spec: Spec) -> types.SimpleNamespace:
    """The rules of the spec's registered backend (backends/capabilities.py) on plain ints."""
    return plain_module(backend(spec.backend).rules)


_KIND = {0: FULL, 1: EMPTY}  # checker/core/program.py's signal kinds
# The op-name tables of the checks, read off OP_EFFECTS (a drain step walks as wait_empty):
# ops that use a slot's signals or payload; arrivals (an update of some units) and the signal
# they update; waits and tries and the signal they read; reads; fills.
USES = {n for n, e in OP_EFFECTS.items()
        if not e.move and (e.observes >= 0 or e.updates >= 0 or e.stores or e.checks_read)}
ARRIVES = {n: _KIND[e.updates] for n, e in OP_EFFECTS.items() if e.updates >= 0 and e.units}
WAITS = {n: _KIND[e.observes] for n, e in OP_EFFECTS.items() if e.observes >= 0 and not e.move}
READS = tuple(n for n, e in OP_EFFECTS.items() if e.checks_read)
WRITES = tuple(n for n, e in OP_EFFECTS.items() if e.stores)


@dataclass(frozen=True)
class Ev:
    """One op one agent class executes, and where on its ring it executes it."""
    part: str    # "prologue" | "body" | "epilogue"
    item: int    # body item; -1 in the prologue, the role's items in the epilogue
    key: tuple   # (part, op index, drain step): the same op in every item
    op: Op
    name: str    # the op's name; "wait_empty" for a drain step
    q: int       # op.ring's coordinate before the op: phase * stages + stage
    stage: int
    phase: int
    pos: int     # positions of that ring entered before (each advance and reset enters one)
    vis: int     # which visit of `stage` this position is, counted from the body (-1: prologue)
    ks: tuple = ()  # a wait or try: the signal phases it may intend, least first (one, unless
                    # a try or an unless=ready wait before a reset leaves it open; _walk)

    @property
    def k(self) -> int | None:
        """The signal phase a wait or try intends, when the walk fixes it (else None)."""
        return self.ks[0] if len(self.ks) == 1 else None

    @property
    def blocking(self) -> bool:
        fx = OP_EFFECTS[self.name]  # a wait_full or wait_empty (a drain step's name is wait_empty)
        return fx.observes >= 0 and fx.blocks and not self.op.unless_ready


@dataclass(eq=False)  # compared and hashed by identity
class Cls:
    """Agents of one role that run the same program: all of them, or agent 0 / the others."""
    role: Role
    leader: bool | None   # None: no @leader op in the role; True: agent 0; False: the others
    agents: int           # per CTA
    ctas: tuple
    events: list
    pos0: dict            # ring -> positions entered before the body
    K: int                # the body's period in items (lcm of every=)

    @property
    def name(self) -> str:
        return self.role.name


@dataclass(frozen=True)
class Form:
    """An op of a walk at items K*t + rho, 0 <= t < T: coordinate q0 + qa*t, visit index
    (wa*t + wb) div wc."""
    cls: Cls
    evs: tuple   # the walk's events, t = 0 .. T-1
    rho: int
    q0: int
    qa: int
    wa: int
    wb: int
    wc: int

    @property
    def T(self) -> int:
        return len(self.evs)

    @property
    def ev(self) -> Ev:
        return self.evs[0]

    def item(self, t: int) -> int:
        return self.evs[t].item


def _walk(spec: Spec, role: Role, leader: bool) -> tuple[list, dict]:
    stages = {r.name: r.stages for r in spec.all_rings}
    init = {r: role.initial_phase_of(r) * n + (role.initial_stage if r == MAIN_RING else 0)
            for r, n in stages.items()}
    q, pos, cur = dict(init), dict.fromkeys(stages, 0), dict.fromkeys(stages, -1)
    seen = {r: defaultdict(int) for r in stages}
    # The phase_alias window's record per signal (docs/rules.md "The phase_alias window after
    # `reset`"): the (k', ph') its last passed wait or ready try may have left, initially
    # (-(p0 mod 2), p0). A blocking wait always passes; a try, or an unless=ready wait (skipped
    # when an earlier try said ready), may or may not record.
    recs = {}
    events = []
    rules = plain_rules(spec)

    def intends(r, stage, X, phase, blocking):
        p0 = role.initial_phase_of(r)
        old = recs.get((r, stage, X), {(-(p0 % 2), p0)})
        ks = {rules.intended_after(k, ph, phase) for k, ph in old}
        passed = {(k, phase) for k in ks}
        recs[r, stage, X] = passed if blocking else old | passed
        return tuple(sorted(ks))

    def use(part, item, key, op, name):
        r, n = op.ring, stages[op.ring]
        if part != "prologue" and name in USES and cur[r] < 0:
            cur[r] = seen[r][q[r] % n]  # the first use of a position makes it a visit
            seen[r][q[r] % n] += 1
        vis = cur[r] if part != "prologue" else -1
        ks = ()
        if name in WAITS:
            fx = OP_EFFECTS[name]
            ks = intends(r, q[r] % n, WAITS[name], q[r] // n, fx.blocks and not op.unless_ready)
        events.append(Ev(part, item, key, op, name, q[r], q[r] % n, q[r] // n, pos[r], vis, ks))

    def move(r, to):
        q[r], pos[r], cur[r] = to, pos[r] + 1, -1

    def run(part, ops, item):
        for j, op in enumerate(ops):
            if (op.leader_only and not leader) or (part == "body" and item % op.every != op.at):
                continue
            if op.name == "drain":
                for k in range(stages[op.ring]):
                    use(part, item, (part, j, k), op, "wait_empty")
                    move(op.ring, q[op.ring] + 1)
            elif OP_EFFECTS[op.name].move == "advance":
                move(op.ring, q[op.ring] + 1)
            elif OP_EFFECTS[op.name].move == "reset":
                move(op.ring, init[op.ring])
            else:
                use(part, item, (part, j, 0), op, op.name)

    run("prologue", role.prologue, -1)
    pos0 = dict(pos)
    for r in cur:
        cur[r] = -1  # body visits are counted afresh (prologue arrivals count as pre-arrivals)
    for i in range(role.items):
        run("body", role.body, i)
    run("epilogue", role.epilogue, role.items)
    return events, pos0


def walk_size(spec: Spec) -> int:
    total = 0
    for role in spec.roles:
        n = len(role.prologue) + role.items * len(role.body) + len(role.epilogue)
        total += n * max(r.stages for r in spec.all_rings) * role.count * \
            len(role.ctas or range(spec.cluster_size))
    return total


def classes(spec: Spec) -> list[Cls]:
    out = []
    for role in spec.roles:
        ctas = role.ctas or tuple(range(spec.cluster_size))
        ops = role.prologue + role.body + role.epilogue
        kinds = [(None, role.count)]
        if any(op.leader_only for op in ops):
            kinds = [(True, 1)] + ([(False, role.count - 1)] if role.count > 1 else [])
        K = lcm(*(op.every for op in role.body)) if role.body else 1
        for leader, agents in kinds:
            events, pos0 = _walk(spec, role, leader is not False)
            out.append(Cls(role, leader, agents, ctas, events, pos0, K))
    return out


def forms(cls: Cls, stages: dict) -> list[Form]:
    """Every op of the class as a closed form; ops whose walk no form reproduces are left out."""
    groups = defaultdict(list)
    for e in cls.events:
        groups[(e.key, e.item % cls.K if e.part == "body" else 0)].append(e)
    out = []
    for (key, rho), evs in groups.items():
        S = stages[evs[0].op.ring]
        lo = min((e.pos for e in cls.events if e.part == "body" and e.op.ring == evs[0].op.ring
                  and e.vis >= 0), default=0)
        qa = evs[1].q - evs[0].q if len(evs) > 1 else 0
        if any(e.q != evs[0].q + qa * t for t, e in enumerate(evs)):
            continue
        dv = evs[1].vis - evs[0].vis if len(evs) > 1 else 0
        dp = evs[1].pos - evs[0].pos if len(evs) > 1 else 0
        # The visit index grows by a fixed step per period (resets, or whole laps per period),
        # or it is the position count since the first visit, divided by the stages.
        for wa, wb, wc in ((dv, evs[0].vis, 1), (dp, evs[0].pos - lo, S)):
            if all(e.vis == (wa * t + wb) // wc for t, e in enumerate(evs)):
                out.append(Form(cls, tuple(evs), rho, evs[0].q, qa, wa, wb, wc))
                break
    return out


def sources(cls: Cls, op: Op, c: int, k: int) -> int:
    """How many CTAs' agents of the class reach CTA c with this op."""
    return sum(1 for c2 in cls.ctas if c in targets(k, c2, op.to))



def _count(e: Ev) -> int:
    """Arrivals of one arrive op (arrive.expect_tx counts one)."""
    return 1 if OP_EFFECTS[e.name].units == 1 else e.op.n
