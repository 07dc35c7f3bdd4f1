"""Pre-check (issue 4, part 1): count, byte and lap mismatches, found before any interleaving.

For every signal (`full[s]`, `empty[s]` of every ring, in every CTA) it compares:

  rates   the arrivals one phase receives from the roles (agents per CTA, @leader guards,
          arrive counts, cluster targets, every=/at=) with the signal's expected count;
  bytes   (nvidia) the bytes `expect_tx` announces per phase of full[s] with those copies land;
  laps    for every blocking wait, the completion its phase makes it wait for (through the
          backend's own `ready`/`in_window`, or the amd `*_ready` thresholds) with the completion
          its place in the ring calls for: pre-arrivals + its earlier visits to that stage
          (+ 1 on full: a slot is filled before it is read);
  stages  on a ring that carries data, the slot the writer of item i uses and the slot each
          reader of item i uses;
and three plain limits: tx operands above 2^20 - 1, waits that need more arrivals than the whole
run delivers (roles with different item counts), and named barriers counting agents that never
sync on them.

How. Each agent class (a role; its leader apart when @leader ops make agent 0 differ) is walked
through its program once. Every op's place on its ring is then fitted to closed forms in the
item index, item = K*t + rho: coordinate q = phase*stages + stage = q0 + qa*t, visit index
w = (wa*t + wb) div wc; a fit is kept only if it reproduces the walk (else that op is left out:
silence, not a guess). Z3 then decides each property for every t at once, one query per check
when all is well, and finds the first failing item by bisection when not. Rates and bytes are
Z3 sums over the ops that land in phase w of stage s, for symbolic s and w.

No false alarms. A mismatch becomes a finding only when a violation provably follows, shown
by one of two concrete runs of all agents over the walks (`_Progress`):
  * too few arrivals, a wait for a later lap, a short named barrier: the waiter is stuck in
    the arrival-counter abstraction, which over-approximates every interleaving (waits pass
    as soon as the arrivals of the phase they need exist, nothing else blocks; monotone, so
    its one maximal run bounds them all);
  * a wait that needs more arrivals than the whole run delivers: sound on its own;
  * too many arrivals (nvidia): one arrive above the count traps, or the run's total forces
    more completed phases than its waits and tries can observe (docs/rules.md
    "Traps and run-ahead (`over_arrival`)");
  * a wait for an earlier lap: one real interleaving (the witness run, with the arrivers of
    the lap it should wait for held back) takes the waiter past its wait to its read
    (read_before_fill) or its write (overwrite_before_drain); a slot mismatch: the witness
    gets the reader to its read;
  * bytes: more expected than copied, in a ring with back-pressure, and a wait needs that
    phase (deadlock); fewer, some of the copies land exactly the expected bytes and the
    witness gets a reader to its read of that phase (read_before_fill).
Everything else (amd surpluses, irregular walks, huge item counts, Z3's `unknown`) is skipped.
"""
from __future__ import annotations

import types
from collections import defaultdict
from dataclasses import asdict, dataclass
from math import lcm

from pipeproof.backends import amd, base, nvidia
from pipeproof.checker import smt
from pipeproof.checker.smt import z3
from pipeproof.spec.schema import MAIN_RING, TX_LIMIT, Op, Role, Spec, targets

MAX_STEPS = 200_000  # agents x ops walked; above it only the static checks run
FULL, EMPTY = "full", "empty"
USES = {"wait_full", "wait_empty", "try_full", "try_empty", "arrive_full", "arrive_empty",
        "expect_tx", "copy", "write", "read", "read_async", "commit_empty"}
ARRIVES = {"arrive_full": FULL, "arrive_empty": EMPTY, "expect_tx": FULL, "commit_empty": EMPTY}
WAITS = {"wait_full": FULL, "wait_empty": EMPTY, "try_full": FULL, "try_empty": EMPTY}
READS, WRITES = ("read", "read_async"), ("write", "copy")

_NV = smt.symbolic_backend(nvidia)
_AMD = smt.symbolic_backend(amd)


def _plain(module) -> types.SimpleNamespace:
    """The backend's functions on plain Python ints: its own bodies, with the primitives'
    Python bodies (checker.smt does the same with Z3's); no numba compile for a short run."""
    ns = dict(vars(module))
    ns.update({p: getattr(getattr(base, p), "py_func", getattr(base, p)) for p in base.PRIMITIVES})
    out = {}
    for name, obj in vars(module).items():
        fn = getattr(obj, "py_func", obj)
        if isinstance(fn, types.FunctionType) and fn.__module__ == module.__name__:
            out[name] = ns[name] = types.FunctionType(fn.__code__, ns, name, fn.__defaults__)
    return types.SimpleNamespace(**out)


_NVp = _plain(nvidia)
_AMDp = _plain(amd)


@dataclass(frozen=True)
class Finding:
    signal: str            # "empty[s]", "acc.full[s]", "barrier wg"
    kind: str              # the violation kind (docs/model.md "Violation kinds") it predicts,
                           # or "stage_mismatch"
    message: str           # in a kernel author's words
    item: int | None = None  # the first item (0-based) it shows in, when it is about one
    role: str | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.signal}: {self.kind}: {self.message}"


# ------------------------------------------------------------------ walks and closed forms

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

    @property
    def blocking(self) -> bool:
        return self.name in ("wait_full", "wait_empty") and not self.op.unless_ready


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
    events = []

    def use(part, item, key, op, name):
        r, n = op.ring, stages[op.ring]
        if part != "prologue" and name in USES and cur[r] < 0:
            cur[r] = seen[r][q[r] % n]  # the first use of a position makes it a visit
            seen[r][q[r] % n] += 1
        vis = cur[r] if part != "prologue" else -1
        events.append(Ev(part, item, key, op, name, q[r], q[r] % n, q[r] // n, pos[r], vis))

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
            elif op.name == "advance":
                move(op.ring, q[op.ring] + 1)
            elif op.name == "reset":
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


# ------------------------------------------------------------------ the arrival-counter abstraction

class _Progress:
    """Two concrete runs of all agents over the walks.

    `maximal()`, the arrival-counter abstraction, over-approximates: a wait passes once its
    signal has had the arrivals of the phase it needs (nvidia: (intended phase + 1) * count;
    amd: the threshold); `try`, `unless=ready` waits, copies, commits and barriers never block,
    except a `sync` on a barrier used by `sync` alone and by fewer agents than its count (its
    first generation can never complete). Arrivals only grow and waits only need more of
    them, so its one maximal run bounds every interleaving: an agent it leaves stuck cannot
    finish in any run free of violations.

    `witness()` under-approximates: it is one real interleaving (agents step in turn, copies
    land and commits fire right after they are issued, barriers count generations, signals
    follow the backend's own functions), so whatever it reaches is reachable, unless a
    violation (a trap, a wait or try outside its window) happens first, which it reports too.
    """

    def __init__(self, spec: Spec, clss: list[Cls]):
        self.spec, self.agents, self.steps = spec, [], []
        self.rings = {r.name: r for r in spec.all_rings}
        short = _short_barriers(spec, clss)
        for cls in clss:
            for c in cls.ctas:
                steps = [self._step(cls, c, e, short) for e in cls.events]
                for _ in range(cls.agents):
                    self.agents.append((cls, c))
                    self.steps.append(steps)
        self._free = None

    def _step(self, cls, c, e: Ev, short):
        spec, ring = self.spec, self.rings[e.op.ring]
        if e.blocking:
            X = WAITS[e.name]
            need = wait_need(spec, ring, X, e.phase, cls.role.initial_phase_of(e.op.ring))
            return ("wait", (c, e.op.ring, X, e.stage),
                    need * ring.expected(X) if spec.backend == "nvidia" else need)
        if e.name in ARRIVES:
            return ("arrive", [((d, e.op.ring, ARRIVES[e.name], e.stage), _count(e))
                               for d in targets(spec.cluster_size, c, e.op.to)])
        if e.name == "sync" and (c, e.op.barrier) in short:
            return ("block",)
        return None

    def maximal(self) -> list[int]:
        """The pc each agent reaches in the abstraction's maximal run."""
        if self._free is not None:
            return self._free
        pcs, got = [0] * len(self.steps), defaultdict(int)
        moved = True
        while moved:
            moved = False
            for a, steps in enumerate(self.steps):
                pc = pcs[a]
                while pc < len(steps):
                    st = steps[pc]
                    if st is not None:
                        if st[0] == "block" or (st[0] == "wait" and got[st[1]] < st[2]):
                            break
                        if st[0] == "arrive":
                            for key, n in st[1]:
                                got[key] += n
                    pc += 1
                if pc != pcs[a]:
                    pcs[a], moved = pc, True
        self._free = pcs
        return pcs

    def stuck(self, ring: str, X: str, c: int, cls: Cls | None = None):
        """An agent (of `cls`) that the maximal run leaves waiting on X of `ring` in CTA c."""
        pcs = self.maximal()
        for a, (acls, ac) in enumerate(self.agents):
            st = self.steps[a][pcs[a]] if pcs[a] < len(self.steps[a]) else None
            if st and st[0] == "wait" and st[1][:3] == (c, ring, X) and cls in (None, acls):
                return acls, acls.events[pcs[a]]
        return None

    def first(self, cls: Cls, c: int) -> int:
        return next(a for a, (acls, ac) in enumerate(self.agents) if acls is cls and ac == c)

    def witness(self, agent: int, past: int, hold: dict | None = None) -> str | None:
        """Whether one real interleaving, with agent a held before its step hold[a], takes
        `agent` past its step `past` ("reached"), or meets a violation first (its kind), or
        neither (None)."""
        spec, nv = self.spec, spec_is_nvidia(self.spec)
        hold = hold or {}
        sig, bars, waiting, last = {}, defaultdict(lambda: [0, 0]), {}, {}
        pcs = [0] * len(self.steps)

        def signal(key):
            if key not in sig:
                ring = self.rings[key[1]]
                sig[key] = list(_NVp.init(ring.expected(key[2]))) if nv else [0]
            return sig[key]

        def update(key, count, tx):  # None, or the kind of the trap
            st = signal(key)
            if not nv:
                st[0] = _AMDp.arrive(st[0], count)
                return None
            ph, pend, t, out = _NVp.update(*st, self.rings[key[1]].expected(key[2]),
                                          count, tx)
            if out & nvidia.TRAP_OVER_ARRIVAL:
                return "over_arrival"
            if out & nvidia.TRAP_TX_RANGE:
                return "tx_range"
            st[:] = [ph, pend, t]
            return None

        def step(a) -> str:  # "ok", "blocked" or a violation kind
            cls, c = self.agents[a]
            e = cls.events[pcs[a]]
            ring, p0 = self.rings[e.op.ring], cls.role.initial_phase_of(e.op.ring)
            if e.name in WAITS:
                X = WAITS[e.name]
                st = signal((c, e.op.ring, X, e.stage))
                if nv:
                    evaluated = e.name.startswith("try") or not e.op.unless_ready
                    if evaluated and not _NVp.in_window(st[0], e.phase, p0):
                        return "phase_alias"
                    ready = _NVp.ready(st[0], e.phase)
                else:
                    ready = (_AMDp.full_ready if X == FULL else _AMDp.empty_ready)(
                        st[0], e.phase, ring.expected(X))
                return "ok" if ready or e.name.startswith("try") else "blocked"
            if e.name in ARRIVES or e.name == "copy":
                X = FULL if e.name == "copy" else ARRIVES[e.name]
                count = 0 if e.name == "copy" else _count(e)
                tx = -e.op.n if e.name == "copy" else (e.op.n if e.name == "expect_tx" else 0)
                for d in targets(spec.cluster_size, c, e.op.to):
                    trap = update((d, e.op.ring, X, e.stage), count, tx)
                    if trap:
                        return trap
                return "ok"
            if e.name in ("sync", "sync_arrive", "sync_wait"):
                b = next(b for b in spec.barriers if b.name == e.op.barrier)
                bar = bars[c, b.name]  # [arrivals in this generation, generation]
                if e.name == "sync_wait":  # the generation it last arrived in has completed
                    return "ok" if bar[1] > last.get((a, b.name), 0) else "blocked"
                if waiting.get(a) is None:
                    waiting[a] = last[a, b.name] = bar[1]
                    bar[0] += 1
                    if bar[0] >= _barrier_count(spec, b, c, self.agents):
                        bar[0], bar[1] = 0, bar[1] + 1
                if e.name == "sync_arrive" or bar[1] > waiting[a]:
                    waiting[a] = None
                    return "ok"
                return "blocked"
            return "ok"

        moved = True
        while moved:
            moved = False
            for a in range(len(self.steps)):
                while pcs[a] < hold.get(a, len(self.steps[a])):
                    if a == agent and pcs[a] > past:
                        return "reached"
                    r = step(a)
                    if r == "blocked":
                        break
                    if r != "ok":
                        return r
                    pcs[a] += 1
                    moved = True
        return "reached" if pcs[agent] > past else None


def spec_is_nvidia(spec: Spec) -> bool:
    return spec.backend == "nvidia"


def _count(e: Ev) -> int:
    """Arrivals of one arrive op (arrive.expect_tx counts one)."""
    return 1 if e.name == "expect_tx" else e.op.n


def _barrier_count(spec: Spec, b, c: int, agents) -> int:
    return b.count if b.count is not None else sum(
        1 for cls, ac in agents if ac == c and cls.name in b.roles)


def _short_barriers(spec: Spec, clss: list[Cls]) -> set:
    """(CTA, barrier) pairs used by `sync` alone, by fewer agents than their count."""
    out = set()
    for b in spec.barriers:
        if any(e.name in ("sync_arrive", "sync_wait") and e.op.barrier == b.name
               for cls in clss for e in cls.events):
            continue
        for c in range(spec.cluster_size):
            count = b.count if b.count is not None else sum(
                cls.agents for cls in clss if cls.name in b.roles and c in cls.ctas)
            users = sum(cls.agents for cls in clss if c in cls.ctas and any(
                e.name == "sync" and e.op.barrier == b.name for e in cls.events))
            if 0 < users < count:
                out.add((c, b.name))
    return out


# ------------------------------------------------------------------ signal semantics

def wait_need(spec: Spec, ring, X: str, phase: int, p0: int) -> int:
    """Concretely: nvidia, completions the wait needs (intended phase + 1, at least 0); amd,
    the arrivals its threshold needs."""
    if spec.backend == "nvidia":
        return max(0, _NV.intended_phase(phase, p0) + 1)
    fn = _AMD.full_threshold if X == FULL else _AMD.empty_threshold
    return fn(phase, ring.expected(X))


def agrees(spec: Spec, ring, X: str, done, phase, p0):
    """Z3: the wait at `phase` passes exactly when completion number `done` of its signal
    happens (the backend's own definitions, over Z3 integers)."""
    if spec.backend == "nvidia":
        return z3.And(_NV.ready(done, phase), _NV.in_window(done, phase, p0))
    n = ring.expected(X)
    ready = _AMD.full_ready if X == FULL else _AMD.empty_ready
    return z3.And(ready(done * n, phase, n),
                  z3.Or(done == 0, z3.Not(ready(done * n - 1, phase, n))))


# ------------------------------------------------------------------ the pre-check

def precheck(spec: Spec) -> list[Finding]:
    """Count, byte and lap mismatches that provably lead to a violation (see the module doc)."""
    found = _tx_operands(spec)
    if walk_size(spec) <= MAX_STEPS:
        found += _Check(spec).run()
    out, seen = [], set()
    for f in found:
        if (f.signal, f.kind) not in seen:
            seen.add((f.signal, f.kind))
            out.append(f)
    return out


def sig_name(ring: str, X: str, s="s") -> str:
    return f"{X}[{s}]" if ring == MAIN_RING else f"{ring}.{X}[{s}]"


def _tx_operands(spec: Spec) -> list[Finding]:
    """An expect_tx or copy operand above 2^20 - 1 traps when it runs (static)."""
    out = []
    if spec.backend != "nvidia":
        return out
    for role in spec.roles:
        for op in role.body:
            if op.name in ("expect_tx", "copy") and op.n > TX_LIMIT and role.items > op.at:
                k = spec.k_group_size
                kb = f" (k_group_size {k} × {op.n // k} bytes)" if k > 1 and op.n % k == 0 else ""
                out.append(Finding(sig_name(op.ring, FULL), "tx_range",
                                   f"{role.name}: {op.text} announces {op.n} bytes{kb} in one "
                                   f"update, above the tx-count limit 2^20 - 1 = {TX_LIMIT}",
                                   op.at, role.name))
    return out


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


class _Check:
    """All checks over one spec. Every symbolic check is built once as an obligation `_Q`
    (a formula that is satisfiable iff something is wrong, its own variables); one Z3 query
    over their disjunction clears a correct spec, and only when it is sat are they examined
    one by one, in order, each failing one passed through its gate."""

    def __init__(self, spec: Spec):
        self.spec, self.K = spec, spec.cluster_size
        self.rings = {r.name: r for r in spec.all_rings}
        self.S = {r.name: r.stages for r in spec.all_rings}
        self.clss = classes(spec)
        self.forms = {id(c): forms(c, self.S) for c in self.clss}
        self.prog = _Progress(spec, self.clss)
        self._names, self._lapq = 0, {}

    def run(self) -> list[Finding]:
        keys = [(ring, X, c) for ring in self.rings for X in (FULL, EMPTY) for c in range(self.K)]
        qs = {}
        for ring, X, c in keys:
            pre = self._pre(ring, X, c)
            self._lapq[ring, X, c] = self._lap_qs(ring, X, c, pre)  # None: a wait left out
            qs[ring, X, c] = (pre, self._rate_q(ring, X, c, pre),
                              self._bytes_q(ring, c, pre) if X == FULL else None,
                              [q for q in self._lapq[ring, X, c] if q is not None])
        stage_qs = {ring: self._stage_qs(ring) for ring in self.rings}
        bad = [q.bad for pre, rq, bq, lqs in qs.values() for q in (rq, bq, *lqs)
               if isinstance(q, _Q)] + [q.bad for v in stage_qs.values() for q in v]
        quiet = not bad or self._solve([z3.Or(*bad)]) is None
        out = []
        for ring in self.rings:
            for X in (FULL, EMPTY):
                for c in range(self.K):
                    pre, rq, bq, lqs = qs[ring, X, c]
                    rate_ok = self._prologue_rates(ring, X, c, pre, out)
                    if isinstance(rq, _Q):
                        rate_ok = rate_ok and (quiet or self._rates(ring, X, c, rq, out))
                    elif rq is None:
                        rate_ok = False  # not checked: neither are the bytes
                    if rate_ok and bq is not None and not quiet:
                        self._bytes(ring, c, bq, out)
                    if not quiet:
                        self._laps(ring, X, c, pre, lqs, out)
                    self._totals(ring, X, c, out)
            if not quiet:
                self._stages(ring, stage_qs[ring], out)
        self._barriers(out)
        return out

    # ---------------------------------------------------------------- helpers

    def _var(self, prefix: str):
        self._names += 1
        return z3.Int(f"{prefix}{self._names}")

    def _cta(self, c: int) -> str:
        return f" of CTA {c}" if self.K > 1 else ""

    def _in(self, c: int) -> list[Cls]:
        return [cls for cls in self.clss if c in cls.ctas]

    def _arrivers(self, ring: str, X: str, c: int) -> list[Cls]:
        return [cls for cls in self.clss if any(
            e.op.ring == ring and ARRIVES.get(e.name) == X and sources(cls, e.op, c, self.K)
            for e in cls.events)]

    def _pre(self, ring: str, X: str, c: int) -> dict | None:
        """Pre-arrival phases per stage (prologue positions where the arrivers arrive on X);
        None when arrivers disagree, so that phases of different arrivers do not line up."""
        per = []
        for cls in self._arrivers(ring, X, c):
            positions = defaultdict(set)
            for e in cls.events:
                if e.part == "prologue" and e.op.ring == ring and ARRIVES.get(e.name) == X \
                        and sources(cls, e.op, c, self.K):
                    positions[e.stage].add(e.pos)
            per.append({s: len(p) for s, p in positions.items()})
        if any(p != per[0] for p in per):
            return None
        return per[0] if per else {}

    def _solve(self, constraints, var=None):
        """Z3: a model of the constraints (None if unsat or unknown), with `var` as small as
        possible (bisection over var >= 0)."""
        s = smt.solver(timeout_ms=2000)
        s.add(*constraints)
        a = smt.check(s)
        if a.status != "sat" or var is None:
            return a.model if a.status == "sat" else None
        best, lo = a.model, 0
        hi = best.eval(var, model_completion=True).as_long()
        while lo < hi:
            mid = (lo + hi) // 2
            s.push()
            s.add(var <= mid)
            b = smt.check(s)
            s.pop()
            if b.status == "sat":
                best, hi = b.model, b.model.eval(var, model_completion=True).as_long()
            else:
                lo = mid + 1
        return best

    @staticmethod
    def _next_at(cls: Cls, i: int, names) -> int | None:
        """The first op in `names` at the same ring position as event i, from i on."""
        e = cls.events[i]
        for j in range(i, len(cls.events)):
            f = cls.events[j]
            if f.op.ring == e.op.ring and (f.pos != e.pos or f.part != e.part):
                return None
            if f.op.ring == e.op.ring and f.name in names:
                return j
        return None

    def _after_wait(self, ring: str, c: int, ops, wait: str) -> bool:
        """Whether every body op in `ops` on `ring` that reaches CTA c follows, at the same
        ring position, a blocking wait on `wait`."""
        for cls in self.clss:
            for i, e in enumerate(cls.events):
                if e.part != "body" or e.op.ring != ring or e.name not in ops or \
                        not sources(cls, e.op, c, self.K):
                    continue
                for f in reversed(cls.events[:i]):
                    if f.op.ring == ring and (f.pos != e.pos or f.part != e.part):
                        return False
                    if f.op.ring == ring and f.blocking and WAITS[f.name] == wait:
                        break
                else:
                    return False
        return True

    def _laps_ok(self, ring: str, c: int) -> bool:
        """Every wait on `ring` in CTA c is proved on its lap (the lap obligations are unsat)."""
        qs = [q for X in (FULL, EMPTY) for q in self._lapq[ring, X, c]]
        return None not in qs and (not qs or self._solve([z3.Or(*[q.bad for q in qs])]) is None)

    def _reader_at(self, ring: str, c: int, stage: int, vis: int):
        """(role, witness) for a role of CTA c that a real interleaving takes to its read after
        its wait on full[stage] at visit `vis` (or to a violation first); None if none."""
        for cls in self._in(c):
            for i, e in enumerate(cls.events):
                if e.blocking and e.op.ring == ring and WAITS[e.name] == FULL and \
                        (e.stage, e.vis) == (stage, vis):
                    j = self._next_at(cls, i, READS)
                    shown = j is not None and self.prog.witness(self.prog.first(cls, c), j)
                    if shown:
                        return cls.name, shown
        return None

    # ---------------------------------------------------------------- rates and bytes

    def _monotone(self, cls: Cls, ring: str):
        """(q_b, lo, A, W): the class's body walk on `ring` as positions P = lo, lo+1, ... each
        visited once (no reset), A positions per period, coordinate q_b + P; W[s] = visits of
        stage s. None if the walk is not like that (then rates over this class go unchecked)."""
        S = self.S[ring]
        evs = [e for e in cls.events if e.part == "body" and e.op.ring == ring]
        if not evs or any(op.name == "reset" and op.ring == ring for op in cls.role.body):
            return None
        rel = [(e, e.pos - cls.pos0[ring]) for e in evs]
        lo = min(p for e, p in rel if e.vis >= 0)
        if any(e.vis >= 0 and e.vis != (p - lo) // S for e, p in rel):
            return None
        first, A = {}, None
        for e, p in rel:
            t, rho = divmod(e.item, cls.K)
            if t == 1 and A is None:
                A = p - first[(e.key, rho)]
            first.setdefault((e.key, rho), p)
        A = 1 if A is None else A  # one period only: any step >= 1 describes it
        if A == 0 or any(p != first[(e.key, e.item % cls.K)] + A * (e.item // cls.K)
                         for e, p in rel):
            return None
        W = defaultdict(int)
        for e in evs:
            W[e.stage] = max(W[e.stage], e.vis + 1)
        return evs[0].q - rel[0][1], lo, A, W

    def _sums(self, ring: str, c: int, weight):
        """(s, w, terms, bound): Z3 terms for the ops landing in body phase w of stage s of
        `ring` in CTA c, one (term, class, form) per op, weight(event) being the amount of one
        op (0: not counted); `bound` keeps (s, w) where every contributing class takes part
        (one may run fewer items: `_totals` covers the phases after it stops). None when a
        contributing class does not walk the ring monotonically."""
        S = self.S[ring]
        s, w = self._var("s"), self._var("w")
        terms, ranges = [], []
        for cls in self.clss:  # from every CTA that targets c
            ops = [f for f in self.forms[id(cls)] if f.ev.part == "body" and f.ev.op.ring == ring
                   and weight(f.ev) and sources(cls, f.ev.op, c, self.K)]
            if not ops:
                continue
            shape = self._monotone(cls, ring)
            if shape is None:
                return None
            qb, lo, A, W = shape
            P = lo + (s - qb - lo) % S + w * S  # the position of visit w to stage s
            ranges.append(W)
            for f in ops:
                d = f.ev.pos - cls.pos0[ring]
                hit = z3.And(P >= d, (P - d) % A == 0, (P - d) / A < f.T)
                amount = weight(f.ev) * cls.agents * sources(cls, f.ev.op, c, self.K)
                terms.append((z3.If(hit, amount, 0), cls, f))
        if not terms:
            return None
        wmin = {st: min(W[st] for W in ranges if W[st] > 0) for st in range(S)
                if any(W[st] > 0 for W in ranges)}
        bound = z3.And(w >= 0, z3.Or(*[z3.And(s == st, w < n) for st, n in wmin.items()]))
        return s, w, terms, bound

    def _rate_q(self, ring: str, X: str, c: int, pre):
        """Body phases whose arrivals differ from the count: a `_Q`; "unwaited" when nobody
        waits on the signal (its phases do not matter); None when it cannot be checked."""
        if not any(e.blocking and WAITS[e.name] == X and e.op.ring == ring
                   for cls in self._in(c) for e in cls.events):
            return "unwaited"
        if pre is None:
            return None
        sums = self._sums(ring, c, lambda e: _count(e)
                          if e.op.ring == ring and ARRIVES.get(e.name) == X else 0)
        if sums is None:
            return None
        s, w, terms, bound = sums
        E = self.rings[ring].expected(X)
        return _Q(z3.And(bound, z3.Sum([t for t, _, _ in terms]) != E), w * self.S[ring] + s,
                  (s, w, terms, E))

    def _prologue_rates(self, ring: str, X: str, c: int, pre, out) -> bool:
        """Pre-arrival phases: the k-th prologue arrival position of every arriver at a stage
        together must bring the count (concrete; the prologue runs once)."""
        if not pre:
            return True
        E = self.rings[ring].expected(X)
        got = defaultdict(int)
        for cls in self._arrivers(ring, X, c):
            per = defaultdict(lambda: defaultdict(int))
            for e in cls.events:
                if e.part == "prologue" and e.op.ring == ring and ARRIVES.get(e.name) == X:
                    per[e.stage][e.pos] += \
                        _count(e) * cls.agents * sources(cls, e.op, c, self.K)
            for st, by_pos in per.items():
                for k, p in enumerate(sorted(by_pos)):
                    got[st, k] += by_pos[p]
        for (st, k), T in sorted(got.items()):
            if T != E:
                self._rate_finding(ring, X, c, E, T, [], f"pre-arrival phase {k} of stage {st}",
                                   out)
                return False
        return True

    def _rates(self, ring: str, X: str, c: int, q, out) -> bool:
        m = self._solve([q.bad], q.var)
        if m is None:
            return True
        s, w, terms, E = q.info
        parts = [(cls, f, m.eval(t).as_long()) for t, cls, f in terms]
        parts = [p for p in parts if p[2]]
        where = (m.eval(s).as_long(), m.eval(w).as_long())
        self._rate_finding(ring, X, c, E, sum(n for *_, n in parts), parts, where, out)
        return False

    def _rate_finding(self, ring, X, c, E, T, parts, where, out):
        if T < E:
            if self.prog.stuck(ring, X, c) is None:
                return
            kind, tail = "deadlock", ": the phase never completes, deadlock"
        else:
            if self.spec.backend != "nvidia" or not self._over_arrival(ring, X, c):
                return  # an amd surplus only passes waits early; not shown to violate
            kind, tail = "over_arrival", (": the surplus completes phases no wait observes, "
                                          "over_arrival")
        sig = sig_name(ring, X)
        merged = defaultdict(int)  # agents per (role, op): agent 0 and the others together
        for cls, f, n in parts:
            merged[cls.name, f.ev.op.text, _count(f.ev), n // cls.agents] += cls.agents
        detail = " + ".join(f"{_plural(a, 'agent')} × {each} {text}"
                            + (f" from {per // each} CTAs" if per // each > 1 else "")
                            for (name, text, each, per), a in merged.items())
        names = list(dict.fromkeys(name for name, *_ in merged))
        if not parts:  # no arrive op runs in that phase: name the ones that could
            arrivers = self._arrivers(ring, X, c)
            names = list(dict.fromkeys(k.name for k in arrivers))
            detail = " + ".join(dict.fromkeys(
                e.op.text for k in arrivers for e in k.events
                if e.op.ring == ring and ARRIVES.get(e.name) == X)) + " not running there"
        agents = sum(merged.values())
        if len(names) != 1:
            who = (" + ".join(names) or "no role") + " deliver"
        else:
            who = names[0] + ("s deliver" if agents > 1 else " delivers")
        if isinstance(where, str):
            amount = f"{T} in {where}"
        elif where == (0, 0) and parts:
            per_item = all(self._monotone(cls, ring)[2] == cls.K for cls, _, _ in parts)
            amount = f"{T} per {'item' if per_item else 'phase'}"
        else:
            amount = f"{T} in phase {where[1]} of stage {where[0]}"
        item = None
        if parts and not isinstance(where, str):
            item = next((e.item for e in parts[0][1].evs if (e.stage, e.vis) == where), None)
        out.append(Finding(sig, kind, f"{sig}{self._cta(c)} expects {_plural(E, 'arrival')} per "
                           f"phase, {who} {amount}" + (f" ({detail})" if detail else "") + tail,
                           item, names[0] if names else None))

    def _over_arrival(self, ring: str, X: str, c: int) -> bool:
        """nvidia surplus that must violate: one arrive above the count traps; or the run's
        arrivals on one signal force more completed phases than its waits and tries can
        observe (a phase j >= 1 may only complete after a wait or try intending phase j - 1
        passed; docs/rules.md "Traps and run-ahead (`over_arrival`)")."""
        E = self.rings[ring].expected(X)
        total, seen, tx = defaultdict(int), defaultdict(set), defaultdict(bool)
        for cls in self.clss:
            p0 = cls.role.initial_phase_of(ring)
            for e in cls.events:
                if e.op.ring != ring:
                    continue
                n_src = sources(cls, e.op, c, self.K)
                if ARRIVES.get(e.name) == X and n_src:
                    if _count(e) > E:
                        return True
                    total[e.stage] += _count(e) * cls.agents * n_src
                if X == FULL and e.name in ("expect_tx", "copy") and n_src:
                    tx[e.stage] = True
                if WAITS.get(e.name) == X and c in cls.ctas:
                    seen[e.stage].add(_NV.intended_phase(e.phase, p0))
        for st, A in total.items():
            g = 0  # the first intended phase no wait or try has
            while g in seen[st]:
                g += 1
            # completed phases at the least: pending never rests at 0 without tx in flight
            least = -(-(A - E) // E) if tx[st] else A // E
            if least > g + 1:
                return True
        return False

    def _bytes_q(self, ring: str, c: int, pre):
        if self.spec.backend != "nvidia" or pre is None or pre:
            return None
        sums = self._sums(ring, c, lambda e: e.op.n if e.op.ring == ring and e.name in
                          ("expect_tx", "copy") else 0)
        if sums is None:
            return None
        s, w, terms, bound = sums
        zero = [z3.IntVal(0)]
        exp = z3.Sum([t for t, _, f in terms if f.ev.name == "expect_tx"] or zero)
        got = z3.Sum([t for t, _, f in terms if f.ev.name == "copy"] or zero)
        return _Q(z3.And(bound, exp != got), w * self.S[ring] + s, (s, w, terms))

    def _bytes(self, ring: str, c: int, q, out):
        """Bytes announced (expect_tx) against bytes copied, per phase of full[s]."""
        m = self._solve([q.bad], q.var)
        if m is None:
            return
        s, w, terms = q.info
        sv, wv = m.eval(s).as_long(), m.eval(w).as_long()
        parts = [(cls, f, m.eval(t).as_long()) for t, cls, f in terms]
        expects = [(cls, f, n) for cls, f, n in parts if f.ev.name == "expect_tx" and n]
        copies = [(cls, f, n) for cls, f, n in parts if f.ev.name == "copy" and n]
        e_b, d_b = sum(n for *_, n in expects), sum(n for *_, n in copies)
        sig = sig_name(ring, FULL)
        if e_b > d_b:
            # tx stays above 0 once the phase's arrivals are in, unless bytes of a later lap
            # land first. They cannot in a ring with back-pressure: every expect_tx and copy
            # follows a wait on empty, every release of empty follows a wait on full, and
            # both kinds of wait are on the right lap, so the next lap's bytes need this
            # phase consumed first. And some wait must need the phase.
            if not (self._after_wait(ring, c, ("expect_tx", "copy"), EMPTY)
                    and self._after_wait(ring, c, ("arrive_empty", "commit_empty"), FULL)
                    and self._laps_ok(ring, c)):
                return
            if not any(e.blocking and e.op.ring == ring and WAITS[e.name] == FULL
                       and e.stage == sv and wait_need(self.spec, self.rings[ring], FULL,
                                                       e.phase, cls.role.initial_phase_of(ring))
                       for cls in self._in(c) for e in cls.events):
                return
            tail = ": tx never returns to 0, so the phase never completes, deadlock"
            kind = "deadlock"
        else:
            # Some of the phase's copies (not all) land exactly the expected bytes: with the
            # rest held in flight, full completes; a reader that gets to its read of that
            # phase in a real interleaving then reads a slot still being written.
            sizes = [f.ev.op.n for cls, f, n in copies for _ in range(n // f.ev.op.n)]
            reader = self._reader_at(ring, c, sv, wv)
            if reader is None or not _subset_sum(sizes, e_b):
                return
            (name, shown), kind = reader, "read_before_fill"
            tail = (f": full completes once {e_b} bytes have landed, with a copy still in "
                    f"flight, and {name} reads the slot, read_before_fill")
            if shown != "reached":
                kind, tail = shown, f"; on the way there one interleaving shows {shown}"
        ex = " + ".join(f.ev.op.text for _, f, _ in expects) or "no expect_tx"
        cp = " + ".join(f.ev.op.text if n == f.ev.op.n else f"{n // f.ev.op.n} × {f.ev.op.text}"
                        for _, f, n in copies)
        out.append(Finding(sig, kind, f"{sig}{self._cta(c)} expects {e_b} bytes per phase "
                           f"({ex}), copies deliver {d_b}" + (f" ({cp})" if cp else "") + tail,
                           parts[0][1].item(0), parts[0][0].name))

    # ---------------------------------------------------------------- totals

    def _totals(self, ring: str, X: str, c: int, out):
        """A wait that needs more arrivals than the whole run delivers to its signal (sound on
        its own: a signal never has more arrivals than the run's total)."""
        r = self.rings[ring]
        total, by = defaultdict(int), defaultdict(list)
        for cls in self.clss:
            for e in cls.events:
                n_src = sources(cls, e.op, c, self.K)
                if e.op.ring == ring and ARRIVES.get(e.name) == X and n_src:
                    total[e.stage] += _count(e) * cls.agents * n_src
                    if cls.name not in by[e.stage]:
                        by[e.stage].append(cls.name)
        items = {cls.name: cls.role.items for cls in self.clss}
        for cls in self._in(c):
            for e in cls.events:
                if not (e.blocking and e.op.ring == ring and WAITS[e.name] == X):
                    continue
                need = wait_need(self.spec, r, X, e.phase, cls.role.initial_phase_of(ring))
                arrivals = need * r.expected(X) if self.spec.backend == "nvidia" else need
                if arrivals <= total[e.stage]:
                    continue
                sig = sig_name(ring, X)
                who = ", ".join(f"{n}: {_plural(items[n], 'item')}" for n in by[e.stage]) \
                    or "no role arrives on it"
                where = f"item {e.item}" if e.part == "body" else f"its {e.part}"
                out.append(Finding(sig, "deadlock",
                                   f"{cls.name} waits on {sig_name(ring, X, e.stage)}"
                                   f"{self._cta(c)} at {where} for {_plural(arrivals, 'arrival')}"
                                   f" in all, but the whole run delivers {total[e.stage]} ({who};"
                                   f" {cls.name}: {_plural(cls.role.items, 'item')}): deadlock",
                                   e.item if e.part == "body" else None, cls.name))
                return

    # ---------------------------------------------------------------- laps

    def _lap_qs(self, ring: str, X: str, c: int, pre) -> list:
        """For each blocking wait on X: it passes exactly at the completion its place calls
        for, pre-arrivals + its visit index (+ 1 on full), for every item."""
        if pre is None:
            return [None]
        spec, r, S = self.spec, self.rings[ring], self.S[ring]
        out = []
        for cls in self._in(c):
            waits = [e for e in cls.events if e.blocking and e.op.ring == ring and
                     WAITS[e.name] == X]
            fs = [f for f in self.forms[id(cls)] if f.ev.blocking and f.ev.op.ring == ring
                  and WAITS[f.ev.name] == X]
            if any(e.part == "prologue" for e in waits) or sum(f.T for f in fs) != len(waits):
                out.append(None)  # a prologue wait has no visit to count from; or no fit
                continue
            p0 = cls.role.initial_phase_of(ring)
            for f in fs:
                t = self._var("t")
                q = f.q0 + f.qa * t
                stage, phase = q % S, q / S
                pre_s = z3.Sum([z3.If(stage == st, n, 0) for st, n in pre.items()] + [0])
                done = pre_s + (f.wa * t + f.wb) / f.wc + (1 if X == FULL else 0)
                out.append(_Q(z3.And(t >= 0, t < f.T,
                                     z3.Not(agrees(spec, r, X, done, phase, p0))), t, (f, cls)))
        return out

    def _laps(self, ring: str, X: str, c: int, pre, qs, out):
        spec, r = self.spec, self.rings[ring]
        for q in qs:
            f, cls = q.info
            after = -1
            for _ in range(4):  # a mismatch its gate cannot confirm: try the next few items
                m = self._solve([q.bad, q.var > after], q.var)
                if m is None:
                    break
                after = m.eval(q.var).as_long()
                e = f.evs[after]
                exp = pre.get(e.stage, 0) + e.vis + (1 if X == FULL else 0)
                need = wait_need(spec, r, X, e.phase, cls.role.initial_phase_of(ring))
                done = need if spec.backend == "nvidia" else -(-need // r.expected(X))
                if self._lap_finding(ring, X, c, cls, e, exp, need, done, pre, out):
                    return

    def _lap_finding(self, ring, X, c, cls, e: Ev, exp, need, done, pre, out) -> bool:
        i = cls.events.index(e)
        if done > exp:
            if self.prog.stuck(ring, X, c, cls) is None:
                return False
            kind, tail = "deadlock", "; that completion never comes: deadlock"
        else:
            data = self._next_at(cls, i, READS if X == FULL else WRITES)
            shown = data is not None and self._early_reaches(ring, X, c, cls, e, exp, data)
            if not shown:
                return False
            kind = "read_before_fill" if X == FULL else "overwrite_before_drain"
            tail = ("; it passes early and reads a slot not yet filled: read_before_fill"
                    if X == FULL else "; it passes early and overwrites a slot not yet "
                                      "drained: overwrite_before_drain")
            if shown != "reached":
                kind, tail = shown, (f"; it passes early, and on the way to its "
                                     f"{'read' if X == FULL else 'write'} one interleaving "
                                     f"shows {shown}")
        sig, at = sig_name(ring, X), sig_name(ring, X, e.stage)
        p0 = cls.role.initial_phase_of(ring)
        if self.spec.backend == "nvidia":
            how = f"its parity wait passes after {_plural(done, 'completion')} of {at}"
        else:
            n, sign = self.rings[ring].expected(X), "+" if X == FULL else "-"
            true = e.phase + (1 if X == FULL else -1)
            wrap = (f" (phase {sign} 1 wraps to {'0' if X == FULL else '2^32-1'} in UInt32)"
                    if true % (1 << 32) != true else "")
            how = (f"its threshold is (phase {sign} 1) × {n} = {need} arrivals{wrap}, i.e. "
                   f"{_plural(done, 'completion')} of {at}")
        pre_n = pre.get(e.stage, 0)
        pre_txt = f" and {_plural(pre_n, 'pre-arrival phase')}" if pre_n else ""
        if X == FULL:
            why = f"it is the {_ordinal(e.vis + 1)} fill of stage {e.stage}{pre_txt}"
        elif e.vis == 0:
            why = f"it is the first fill of stage {e.stage}, after no release{pre_txt}"
        else:
            why = (f"it is the {_ordinal(e.vis + 1)} fill of stage {e.stage}, after the "
                   f"releases of {_plural(e.vis, 'earlier fill')}{pre_txt}")
        where = f"item {e.item}" if e.part == "body" else f"its {e.part}"
        out.append(Finding(sig, kind, f"{cls.name} waits on {at}{self._cta(c)} at {where} with "
                           f"phase {e.phase} (initial_phase {p0}): {how}, but {why}, i.e. "
                           f"completion {exp}{tail}",
                           e.item if e.part == "body" else None, cls.name))
        return True

    def _early_reaches(self, ring, X, c, cls, e: Ev, exp: int, data: int):
        """Hold every arriver on X at the start of its visit that makes completion `exp`; if
        the waiter still reaches its read/write after the wait, it passed early (the
        witness's answer; None if not shown)."""
        pre = self._pre(ring, X, c) or {}
        want = exp - 1 - pre.get(e.stage, 0)  # the arrivers' body visit that completes it
        if want < 0:
            return False
        arrivers, hold = self._arrivers(ring, X, c), {}
        for a, (acls, ac) in enumerate(self.prog.agents):
            if acls not in arrivers:
                continue
            at = next((j for j, f in enumerate(acls.events) if f.op.ring == ring and
                       f.part != "prologue" and f.stage == e.stage and f.vis == want), None)
            if at is None:
                continue  # it never gets to that phase
            if X == EMPTY and self._next_at(acls, at, READS) is None:
                return None  # no reader of the old item is held back: no overwrite to show
            hold[a] = at
        return self.prog.witness(self.prog.first(cls, c), data, hold) if hold else None

    # ---------------------------------------------------------------- stages

    def _stage_qs(self, ring: str) -> list:
        """On a ring with writes/copies and reads: item i is read from a slot some writer put
        item i in. One obligation per read op: an item it reads that every writer of that item
        put elsewhere."""
        S = self.S[ring]
        fs = [f for cls in self.clss for f in self.forms[id(cls)]
              if f.ev.op.ring == ring and f.ev.part == "body"]
        writers = [f for f in fs if f.ev.name in WRITES]
        readers = [f for f in fs if f.ev.name in READS]
        out = []
        for fr in readers if writers else ():
            i = self._var("i")

            def at(f):  # whether the op runs in item i, and its slot then
                t = (i - f.rho) / f.cls.K
                return z3.And(i >= f.rho, (i - f.rho) % f.cls.K == 0, t < f.T), \
                    (f.q0 + f.qa * t) % S
            r_runs, r_slot = at(fr)
            w_at = [at(fw) for fw in writers]
            out.append(_Q(z3.And(r_runs, z3.Or(*[runs for runs, _ in w_at]),
                                 *[z3.Implies(runs, slot != r_slot) for runs, slot in w_at]),
                          i, (fr, writers)))
        return out

    def _stages(self, ring: str, qs, out):
        for q in qs:
            m = self._solve([q.bad], q.var)
            if m is None:
                continue
            fr, writers = q.info
            iv = m.eval(q.var).as_long()
            e = next(ev for ev in fr.evs if ev.item == iv)
            c = fr.cls.ctas[0]
            if not self.prog.witness(self.prog.first(fr.cls, c), fr.cls.events.index(e)):
                continue  # no interleaving shown to get the reader there
            wf, we = next((f, ev) for f in writers for ev in f.evs if ev.item == iv)
            out.append(Finding(sig_name(ring, FULL), "stage_mismatch",
                               f"{wf.cls.name} puts item {iv} in slot {we.stage} (initial_stage "
                               f"{wf.cls.role.initial_stage}), {fr.cls.name} reads item {iv} "
                               f"from slot {e.stage} (initial_stage {fr.cls.role.initial_stage})"
                               f": it reads another item's slot", iv, fr.cls.name))
            return

    # ---------------------------------------------------------------- named barriers

    def _barriers(self, out):
        pcs = self.prog.maximal()
        for a, (cls, c) in enumerate(self.prog.agents):
            steps = self.prog.steps[a]
            if pcs[a] >= len(steps) or steps[pcs[a]] != ("block",):
                continue
            name = cls.events[pcs[a]].op.barrier
            b = next(b for b in self.spec.barriers if b.name == name)
            users = [k for k in self.clss if c in k.ctas and any(
                e.name == "sync" and e.op.barrier == name for e in k.events)]
            count = b.count if b.count is not None else sum(
                k.agents for k in self.clss if k.name in b.roles and c in k.ctas)
            listed = f" (roles {', '.join(b.roles)})" if b.roles else ""
            out.append(Finding(f"barrier {name}", "deadlock",
                               f"barrier {name}{self._cta(c)} counts {count} arrivals per "
                               f"generation{listed}, but only "
                               f"{_plural(sum(k.agents for k in users), 'agent')} ever sync on "
                               f"it ({', '.join(dict.fromkeys(k.name for k in users))}): its "
                               f"first generation never completes: deadlock", None, cls.name))
            return


@dataclass(frozen=True)
class _Q:
    """A symbolic obligation: `bad` is satisfiable iff the property fails somewhere; `var` is
    what to minimise (an item, a phase); `info` is what its check needs to explain it."""
    bad: object
    var: object
    info: tuple


def _subset_sum(sizes: list[int], target: int) -> bool:
    """Z3: some of the copies (not all) land exactly `target` bytes, so tx can reach 0 with the
    rest still in flight."""
    if not sizes or target <= 0:
        return False
    pick = [z3.Bool(f"c{k}") for k in range(len(sizes))]
    s = smt.solver(timeout_ms=2000)
    s.add(z3.Sum([z3.If(p, n, 0) for p, n in zip(pick, sizes)]) == target,
          z3.Not(z3.And(*pick)))
    return smt.check(s).status == "sat"
