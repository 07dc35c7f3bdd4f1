"""The lap abstraction: states with item numbers and laps taken relative, for every item count.

A pipeline's state grows with the item count only through numbers that count up: agents' items,
slot and in-flight tags, agents' phases and the signals' phase numbers (nvidia) or counters
(amd), and named-barrier generations. Every rule of the model compares such numbers with each
other (a tag with a reader's item, a phase's parity with a phase number's, a counter with a
threshold from a phase, a generation with the one an agent arrived in) and never with a fixed
value, with four exceptions that `canonical` respects:

- `every=K`/`at=j` look at item mod K: items move by multiples of K only;
- the end of the body compares an agent's item with its item count: the count moves with them
  (`n_rel`, below);
- nvidia's over-arrival rule tests `phase_no >= 1` and amd's thresholds wrap `phase - 1` at 0:
  phases stay >= 2 and phase numbers >= 1, and they move by even amounts (parity);
- `reset` restores an absolute phase: a ring's phases move only when no reset on it lies
  ahead. An agent with a reset keeps its phase window's (k', ph') per signal
  (semantics.window_passed): once no reset lies ahead, a record with ph' <= ph is rewritten as
  (k' - (ph' - p0), p0), which means the same window and moves with nothing; a record with
  ph' > ph (a reset moved the phase below it) keeps the ring from moving. While a reset lies
  ahead (nvidia), when every agent that waits on the ring carries a record, the phase numbers
  move alone, by an even amount, with every k' of those records: parity and every window are
  kept, and the agents' phases, which a reset brings back, stay.

Numbers nobody can read any more are forgotten: the item, stage, phase and barrier arrival of
a finished agent, and a tag that no unfinished reader will ever compare (below every reader's
item and every in-flight async read) becomes "never stored" (-1); both behave the same in
every rule (checker/core/semantics.py `store_tag`, `READ`). A signal no op waits on, tests or
updates (a CTA's barrier that only the other CTAs' barriers are used in place of) keeps its
initial value and is read by no rule: the lap shift leaves it alone.

Interchangeable agents (checker/engines/symmetries.py `classes`: same role, CTA and program, no
`@leader` op, no slot parts of their own) are sorted after the shifts, with the in-flight
entries that name them (async reads, commits) renamed along, exactly as the explicit engine
sorts them, so a state is stored once for every way of permuting them. The shifts are the
same for every agent of a class (same coefficient, rings, resets and CTA) and touch no
agent field of an entry, so they commute with the permutation, and the sorted form depends
only on the orbit.

The rules revised 2026-12-02 (DESIGN.md), and what each asks of the abstraction:

- R1, an agent's commits fire in issue order: a commit entry names its agent and counts its
  agent's earlier commits in flight (E_CSEQ). Neither is a counting number, so the shift
  leaves them; sorting a class renames the agent an entry names with its record (above).
- R2, own copies/commits in flight at a CTA's exit are the warning unawaited_at_exit: the
  exit compares no counting number. The warning is no violation: the search canonicalises
  the step's successor and goes on (prove.expand); `strict_exit` is the model's.
- R3, slot parts per slot: a read checks the parts filled for its item in its slot, and
  whether a fill is in that slot depends on the filler's stage at the item, an absolute item
  (semantics.fill_stage). Items and tags move only by multiples of the period of those
  stages (`_fill_stage_period`); a filler whose first items' stages differ from the later
  ones' (a reset) has no such period, and the spec is refused (CannotAbstract).

The item count is one parameter n >= 1: role r runs `coef[r] * n` items, where the `coef` are
the spec's role item counts divided by their greatest common divisor (all roles equal: n is
the item count; mojo_sm100_matmul: n is the tile count). An abstract state carries
`n_rel = n - shift`, exact, or MANY when n_rel >= R. From a MANY state nothing depends on the
count (every relative item is below R - 1, checked), and when the items move by d the count
left is any value >= R - d: MANY again, or exactly R-d .. R-1. Every abstract path is therefore
the path of one concrete item count, and the abstract states are exactly the union over all
item counts: a finite, exhaustive search of them proves the spec for every item count.
"""
from __future__ import annotations

from collections import namedtuple
from math import gcd

import numpy as np

from pipeproof.backends.base import njit
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from dataclasses import replace

from pipeproof.checker.engines.explore import ENGINE
from pipeproof.checker.core import compile_model
from pipeproof.checker.core import OP_EFFECTS
from pipeproof.spec.schema import Spec, targets

MANY = -1
HUGE = 1 << 40   # the item count a MANY state runs with: never reached


class CannotAbstract(Exception):
    """The spec is outside what the abstraction covers; the message says why."""


def _lcm(a: int, b: int) -> int:
    return a * b // gcd(a, b)


def own_parameter(spec: Spec) -> int:
    """The parameter n at which the family (`scaled_spec`: each role runs its coefficient
    times n items) is the spec itself: the gcd of the roles' item counts (0: none runs any).
    Not the pipeline's `items` where roles set their own (roles of `items = 2` in a spec of
    `items = 1`: n = 2). With nested loops (spec.load_loops) n counts tiles: the gcd of the
    roles' tile counts, so every n is a whole number of tiles in every role."""
    g = 0
    for role in spec.roles:
        g = gcd(g, role.items if spec.tiles is None else role.tiles)
    return g


def role_coefficients(spec: Spec) -> dict[str, int]:
    """Each role's item count in units of the parameter n (`own_parameter`)."""
    g = own_parameter(spec)
    if g == 0:
        raise CannotAbstract("no role runs any item")
    if spec.tiles is None:
        return {role.name: role.items // g for role in spec.roles}
    return {role.name: role.tiles // g * role.k_blocks for role in spec.roles}


def scaled_spec(spec: Spec, n: int) -> Spec:
    """The spec with every role's item count set for parameter n."""
    coef = role_coefficients(spec)
    roles = tuple(replace(r, items=coef[r.name] * n) if spec.tiles is None
                  else replace(r, items=coef[r.name] * n, tiles=coef[r.name] // r.k_blocks * n)
                  for r in spec.roles)
    return replace(spec, roles=roles, items=max(r.items for r in roles))


def _fill_stage_period(m) -> int:
    """The least P such that, on every ring with slots of several parts, every fill of a part
    happens at the same stage in item i + P as in item i (semantics.fill_stage), for all i >= 0
    (raises CannotAbstract when there is none, e.g. a reset that makes the first items' stages
    unlike the later ones'). part_filled_for(T, r, p, s, tag), the one place the per-slot
    parts rule is read, depends on the tag's absolute item only through that stage and the
    every=/at= guards (kept by item_step); so a shift of the tags by a multiple of P keeps
    every read's verdict. Single-part rings read no parts (semantics.read_miss): no constraint.

    Why a window suffices: the filler's stage at the start of item i and i mod E (E the lcm of
    its every= guards) determine its stages in item i and at the start of item i + 1, so that
    pair runs through at most M = stages * E values: eventually periodic, with pre-period and
    period at most M. A P <= M that holds on items 0 .. 2M - 1 (+ P) then holds for all i."""
    T = m.tables
    period = 1
    for r in range(m.rings):
        if len(m.parts[r]) <= 1:
            continue
        stages = m.ring_specs[r].stages
        for p in range(len(m.parts[r])):
            i = S.part_row(T, r, p)
            for f in range(T.part[i, S.PT_NFILLS]):
                row, a = int(T.part[i, S.PT_FILL0 + 2 * f]), int(T.part[i, S.PT_FILL0 + 2 * f + 1])
                start, end = T.agent[a, S.A_PROG] + T.agent[a, S.A_BODY_START], T.agent[a, S.A_PROG] + T.agent[a, S.A_BODY_END]
                e = 1
                for body_row in range(start, end):
                    e = _lcm(e, int(T.prog[body_row, S.P_EVERY]))
                bound = stages * e
                if 3 * bound > T.agent[a, S.A_ITEMS]:
                    raise CannotAbstract(f"slot parts of ring {m.ring_names[r]} filled at stages "
                                         f"that repeat only after more than "
                                         f"{T.agent[a, S.A_ITEMS] // 3} items")
                seen = [int(S.fill_stage(T, a, r, row, item)) for item in range(3 * bound)]
                for q in range(1, bound + 1):
                    if all(seen[k + q] == seen[k] for k in range(2 * bound)):
                        period = _lcm(period, q)
                        break
                else:
                    raise CannotAbstract(f"slot parts of ring {m.ring_names[r]}: a fill's stage "
                                         "in the first items is unlike the later items' (a "
                                         "reset), and parts are per slot")
    return period


class LapAbstraction:
    # Leave out a step of an agent whose class-mate before it has the same key (prove.expand,
    # docs/reductions.md "Twins"); off only to test that it changes no answer.
    twin_steps = True

    def __init__(self, spec: Spec, max_n: int, cta_symmetry: bool = True,
                 strict_exit: bool = False):
        """`max_n`: the largest n the search may meet; the in-flight entries get room for
        tags that large (their field widths follow the item counts). `cta_symmetry`: also
        rename the CTAs of a cluster that run the same programs (checker/engines/symmetries.py).
        `strict_exit`: the model's strict reading of a CTA's exit (semantics, R2)."""
        coef = role_coefficients(spec)
        self.model = m = compile_model(scaled_spec(spec, max_n), strict_exit=strict_exit)
        # What the shifts below were argued for is the backend record's signal_model: phase
        # numbers of mbarriers, or monotone counters (no phase numbers; a lap moves a counter
        # by its count); for a backend with neither, the abstraction says nothing.
        if m.caps.signal_model not in ("mbarrier", "counter"):
            raise CannotAbstract(f"the {m.caps.name} backend's signals: the lap abstraction "
                                 "is argued for mbarriers and counters only (its record names "
                                 "no signal_model)")
        self.counter_signals = m.caps.signal_model == "counter"
        # The lap shifts below are computed from every agent, signal and barrier alike (per
        # CTA for barriers), so they commute with a CTA renaming: renaming after them gives a
        # canonical form of the orbit (checker/engines/symmetries.py).
        self.sym = SYM.symmetry(m, cta=cta_symmetry)
        self.n_agents = len(m.agents)
        self.coef = np.array([coef[a.role] for a in m.agents], dtype=np.int64)
        # Items move by multiples of every K an agent's ops use, scaled by its coefficient.
        step = 1
        for i, a in enumerate(m.agents):
            for op, _ in a.ops:
                if op.every > 1 and self.coef[i]:
                    step = _lcm(step, op.every // gcd(op.every, int(self.coef[i])))
        self.item_step = step
        if any(op.ahead is not None for a in m.agents for op, _ in a.ops):
            # No argument yet that shifting item + K with the items keeps every violation.
            raise CannotAbstract("a fill for a later item (ahead=)")
        if any(m.tag_of(a, pc) >= 0 for a in m.agents for pc in range(len(a.ops))):
            # Laps shift item tags with the items; the prologue's and epilogue's tags are
            # absolute. Not abstracted: --engine laps answers with the explicit engine.
            raise CannotAbstract("a fill or read outside the body (its tag is the prologue's "
                                 "or the epilogue's, not an item)")
        self.tag_coef, self.dead_div = self._tag_units(spec)
        # Slot parts are per slot (R3): a read checks the parts filled for its item in its
        # slot, which semantics.fill_stage finds from the filler's stage at that item, an
        # absolute item. Items and tags move by multiples of its period (_fill_stage_period).
        period = _fill_stage_period(m)
        for c in self.tag_coef:
            if period > 1 and c:
                self.item_step = _lcm(self.item_step, period // gcd(period, int(c)))
        self.readers = [i for i, a in enumerate(m.agents)
                        if any(OP_EFFECTS[op.name].checks_read for op, _ in a.ops)]
        self.ring_users = [[i for i, a in enumerate(m.agents)
                            if any(op.ring == name and not OP_EFFECTS[op.name].barrier for op, _ in a.ops)]
                           for name in m.ring_names]
        # A reset restores an absolute phase: a ring moves only once no unfinished agent has
        # a reset on it still ahead (a reset in the body is ahead until the body is done).
        self.reset_until = np.array(m.reset_until, dtype=np.int64).reshape(len(m.agents), m.rings).T.copy()
        # observes[r, a]: bit k when agent a waits on or tries ring r's signals of kind k
        self.observes = np.zeros((m.rings, len(m.agents)), dtype=np.int64)
        for i, a in enumerate(m.agents):
            for op, _ in a.ops:
                if OP_EFFECTS[op.name].observes >= 0:
                    self.observes[m.ring_names.index(op.ring), i] |= 1 << OP_EFFECTS[op.name].observes
        self.sig_live = self._touched_signals()
        self.has_body = [a.body_end > a.body_start for a in m.agents]
        self._tables = {}
        # Interchangeable agents: sorted with the entries that name them (module docstring).
        self.classes = [list(range(lo, hi)) for lo, hi in self.sym.classes]

    def _tag_units(self, spec):
        """Per ring r: tag_coef[r], how far its tags move when n moves by one (a tag is an
        item, or with nested loops a tile: item // tag_div, so coef / tag_div), and
        dead_div[r, a], which readers bound its dead tags and how: a tag below
        item_a // dead_div[r, a] of every unfinished agent with dead_div > 0 is never read
        again (tags only grow with the item: item // div is the least tag a is still to read).
        A flat spec keeps one rule for every ring, every reader of any ring counting (all
        taggers run the same count), as before nested loops."""
        m = self.model
        nested = spec.tiles is not None
        coef_of = {}
        dead_div = np.zeros((m.rings, self.n_agents), dtype=np.int64)
        for i, a in enumerate(m.agents):
            for op, _ in a.ops:
                e = OP_EFFECTS[op.name]
                if not (e.stores or e.checks_read):
                    continue
                r = m.ring_names.index(op.ring)
                coef_of.setdefault(r if nested else 0, set()).add(
                    int(self.coef[i]) // op.tag_div if nested else int(self.coef[i]))
                if e.checks_read:
                    if nested:
                        dead_div[r, i] = max(dead_div[r, i], op.tag_div)
                    else:
                        dead_div[:, i] = 1
        for key, coefs in coef_of.items():
            if len(coefs) > 1:
                what = f" on ring {m.ring_names[key]}" if nested else ""
                raise CannotAbstract(f"roles that write and read tags{what} run different item "
                                     f"counts (ratios {sorted(coefs)})")
        if not nested:
            one = coef_of[0].pop() if coef_of else 0
            return np.full(m.rings, one, dtype=np.int64), dead_div
        return (np.array([coef_of[r].pop() if r in coef_of else 0 for r in range(m.rings)],
                         dtype=np.int64), dead_div)

    # ------------------------------------------------------------------ item counts

    def tables_for(self, n_rel: int):
        """The model tables with every agent's item count set for `n_rel` (MANY: never ends)."""
        t = self._tables.get(n_rel)
        if t is None:
            agent = self.model.tables.agent.copy()
            agent[:, S.A_ITEMS] = self.coef * (HUGE if n_rel == MANY else n_rel)
            t = self._tables[n_rel] = self.model.tables._replace(agent=agent)
        return t

    # ------------------------------------------------------------------ canonical form

    def _entry(self, e: int, f: int) -> int:
        sh, mask = self.model.entry_fields[f]
        return (e >> sh) & mask

    def _with(self, e: int, f: int, v: int) -> int:
        sh, mask = self.model.entry_fields[f]
        return (e & ~(mask << sh)) | (v << sh)

    def canonical(self, st: np.ndarray) -> int:
        """Rewrite `st` in place into its canonical form; returns d, the items moved by
        d * coef (n_rel drops by d)."""
        m = self.model
        agf = m.agf
        done = [st[a * agf + S.F_PC] >= len(m.agents[a].ops) for a in range(self.n_agents)]
        # Forget what finished agents no longer read.
        for a in range(self.n_agents):
            if done[a]:
                b = a * agf
                st[b + S.F_ITEM] = 0
                st[b + S.F_SYNC] = 0
                st[b + S.F_RING0:b + agf] = 0
        self._shift_laps(st, done)
        self._shift_generations(st, done)
        d = self._shift_items(st, done)
        self._sort_classes(st)
        if SYM.renames_ctas(self.sym):
            images = [st.copy()]
            for k in range(self.sym.fmap.shape[0]):
                img = np.zeros_like(st)
                SYM.permute_ctas(m.tables.ent, m.off_inf, m.inflight, m.max_parts, self.sym.fmap[k],
                                 self.sym.cmap[k], self.sym.pmap[k], self.sym.amap[k], st, img)
                self._sort_classes(img)
                images.append(img)
            st[:] = min(images, key=lambda v: v.tolist())
        return d

    def _names(self, e: int) -> int:
        """The agent an in-flight entry names (an async read, a commit), else -1."""
        return self._entry(e, S.E_AGENT) if self._entry(e, S.E_KIND) in (S.ENTRY_READ, S.ENTRY_COMMIT) else -1

    def _sort_classes(self, st):
        """Each class sorted by (record, the entries naming the agent with the agent left
        out, in the state's order); those entries renamed with their agent."""
        m = self.model
        agf, off = m.agf, m.off_inf
        entries = [int(e) for e in st[off:off + m.inflight] if e]
        for members in self.classes:
            key = {a: (st[a * agf:(a + 1) * agf].tolist(),
                       [self._with(e, S.E_AGENT, 0) for e in entries if self._names(e) == a])
                   for a in members}
            order = sorted(members, key=lambda a: key[a])  # stable, like the compiled sort
            new_name = {old: members[0] + k for k, old in enumerate(order)}
            for old, a in new_name.items():
                st[a * agf:(a + 1) * agf] = key[old][0]
            entries = [self._with(e, S.E_AGENT, new_name[self._names(e)])
                       if self._names(e) in new_name else e for e in entries]
        entries.sort(reverse=True)
        st[off:off + m.inflight] = entries + [0] * (m.inflight - len(entries))

    def _shift_items(self, st, done) -> int:
        m = self.model
        agf, off_inf = m.agf, m.off_inf
        entries = [int(e) for e in st[off_inf:off_inf + m.inflight] if e]
        # Per ring, tags below every unfinished reader's least tag still to read (its item, or
        # its tile: _tag_units) and every in-flight async read (of the ring, with nested loops)
        # are dead.
        nested = m.spec.tiles is not None
        dead_below = []
        for r in range(m.rings):
            live = [int(st[a * agf + S.F_ITEM]) // int(self.dead_div[r, a])
                    for a in range(self.n_agents) if self.dead_div[r, a] and not done[a]]
            live += [self._entry(e, S.E_VAL) - 1 for e in entries
                     if self._entry(e, S.E_KIND) == S.ENTRY_READ
                     and (not nested or self._entry(e, S.E_RING) == r)]
            dead_below.append(min(live) if live else None)
        d = None
        for a in range(self.n_agents):
            if not done[a] and self.coef[a] and self.has_body[a]:
                q = int(st[a * agf + S.F_ITEM]) // int(self.coef[a])
                d = q if d is None else min(d, q)
        for r in range(m.rings):
            if self.tag_coef[r] and dead_below[r] is not None:
                q = dead_below[r] // int(self.tag_coef[r])
                d = q if d is None else min(d, q)
        d = 0 if d is None else d - d % self.item_step

        def moved(tag, r):
            if tag < 0 or dead_below[r] is None or tag < dead_below[r]:
                return -1
            return tag - d * int(self.tag_coef[r])
        for p in range(m.off_slot, m.off_bar):
            st[p] = moved(int(st[p]), m.slot_of(p)[1])
        if entries:
            new = []
            for e in entries:
                if self._entry(e, S.E_KIND) in (S.ENTRY_COPY, S.ENTRY_READ):
                    e = self._with(e, S.E_VAL, moved(self._entry(e, S.E_VAL) - 1,
                                                     self._entry(e, S.E_RING)) + 1)
                new.append(e)
            new.sort(reverse=True)
            st[off_inf:off_inf + m.inflight] = 0
            st[off_inf:off_inf + len(new)] = new
        if d:
            for a in range(self.n_agents):
                if not done[a]:
                    st[a * agf + S.F_ITEM] -= d * self.coef[a]
        return d

    def _touched_signals(self) -> set:
        """(ring, cta, kind) of every signal some op may wait on, test or update. The others
        keep their initial value in every state and no rule reads them, so the lap shift leaves
        them out: a CTA's signal nobody uses (x_cluster_ctas_ok: CTA 1's empty barriers, as the
        workers release to the leader) would otherwise hold its phase number at 0 and every
        phase of the ring would grow without bound."""
        m = self.model
        live = set()
        for a in m.agents:
            for op, _ in a.ops:
                r = m.ring_names.index(op.ring) if op.ring in m.ring_names else None
                e = OP_EFFECTS[op.name]
                if r is None or (e.observes < 0 and e.updates < 0 and not e.issues):
                    continue  # touches no signal
                if e.observes >= 0:
                    live.add((r, a.cta, e.observes))
                elif e.updates >= 0:
                    live.update((r, c, e.updates) for c in targets(m.ctas, a.cta, op.to))
                else:  # anything else (read_async): every signal of its ring, to be safe
                    live.update((r, c, kind) for c in range(m.ctas) for kind in (S.FULL, S.EMPTY))
        return live

    def _ring_signals(self, r: int):
        """(kind, position) of the ring's signals that some op touches."""
        m = self.model
        for cta in range(m.ctas):
            for s in range(m.ring_specs[r].stages):
                for kind in (S.FULL, S.EMPTY):
                    if (r, cta, kind) in self.sig_live:
                        yield kind, m.off_sig + 4 * (((cta * m.rings + r) * m.max_stages + s) * 2 + kind)

    def _windows_settled(self, st, r, users) -> bool:
        """Rewrite the window records of ring r's users as (k' - (ph' - p0), p0) where
        ph' <= ph (exact once no reset lies ahead); False if some record has ph' > ph."""
        m = self.model
        for a in users:
            if self.reset_until[r, a] < 0:
                continue
            p0 = m.agents[a].initial_phases[r]
            ph = int(st[S.ring_pos(m.agf, a, r, S.RF_PHASE)])
            for j in range(m.max_stages * 2):
                w = a * m.agf + m.win + 2 * (r * m.max_stages * 2 + j)
                if st[w + 1] > ph:
                    return False
                st[w], st[w + 1] = st[w] - (st[w + 1] - p0), p0
        return True

    def _records(self, r, a):
        """Positions of agent a's window records (k') of the ring-r signals it waits on."""
        m = self.model
        for s in range(m.ring_specs[r].stages):
            for kind in (S.FULL, S.EMPTY):
                if self.observes[r, a] >> kind & 1:
                    yield a * m.agf + m.win + 2 * ((r * m.max_stages + s) * 2 + kind)

    def _shift_phase_numbers(self, st, r, done) -> None:
        """With a reset of ring r ahead: move its phase numbers and the k' of its waiters'
        records by an even amount, when every waiter carries records (nvidia)."""
        waiters = [a for a in range(self.n_agents) if self.observes[r, a] and not done[a]]
        if self.counter_signals or not waiters or any(self.reset_until[r, a] < 0 for a in waiters):
            return
        records = [w for a in waiters for w in self._records(r, a)]
        low = min([int(st[b]) - 1 for _, b in self._ring_signals(r)] + [int(st[w]) + 1 for w in records])
        shift = low - low % 2 if low > 0 else 0
        for _, b in self._ring_signals(r):
            st[b] -= shift
        for w in records:
            st[w] -= shift

    def _shift_laps(self, st, done) -> None:
        m = self.model
        for r in range(m.rings):
            if any(st[a * m.agf + S.F_PC] <= self.reset_until[r, a] for a in range(self.n_agents)):
                self._shift_phase_numbers(st, r, done)
                continue
            users = [a for a in self.ring_users[r] if not done[a]]
            if not users or not self._windows_settled(st, r, users):
                continue
            pos = [S.ring_pos(m.agf, a, r, S.RF_PHASE) for a in users]
            low = min(int(st[p]) for p in pos) - 2
            if not self.counter_signals:  # phase numbers stay >= 1
                low = min([low] + [int(st[b]) - 1 for _, b in self._ring_signals(r)])
            shift = low - low % 2 if low > 0 else 0
            if not shift:
                continue
            for p in pos:
                st[p] -= shift
            ring = m.ring_specs[r]
            for kind, b in self._ring_signals(r):
                st[b] -= shift * _lap_growth(self, ring, kind)

    def _shift_generations(self, st, done) -> None:
        m = self.model
        first_arrived = S.F_RING0 + S.RING_FIELDS * m.rings
        for b in range(len(m.barrier_names)):
            for cta in range(m.ctas):
                pos = m.off_bar + 2 * (b * m.ctas + cta)
                fields = [a * m.agf + first_arrived + b for a in range(self.n_agents)
                          if m.agents[a].cta == cta and not done[a]
                          and st[a * m.agf + first_arrived + b] > 0]
                shift = min([int(st[pos + 1]) - 1] + [int(st[f]) - 1 for f in fields])
                if shift > 0:
                    st[pos + 1] -= shift
                    for f in fields:
                        st[f] -= shift


def _lap_growth(lap: LapAbstraction, ring, kind: int) -> int:
    """How much a signal's first word grows per lap of its ring: a counter by its count, an
    mbarrier's phase number by one."""
    return ring.expected(kind) if lap.counter_signals else 1


# ---------------------------------------------------------------------- the compiled form
#
# `canonical_fast` is LapAbstraction.canonical compiled by numba for the search's hot loop;
# tests/test_laps.py checks the two agree state by state, so the readable one above is the
# reference.

LapTables = namedtuple("LapTables", ["misc", "agent", "ring_users", "reset_until", "sig", "sig_mult",
                                     "p0", "observes", "stages", "sym", "tab", "perm", "rec",
                                     "twins", "tag_coef", "dead_div", "dead_below", "have_live"])
# misc columns
(M_AGF, M_AGENTS, M_OFF_SLOT, M_OFF_BAR, M_OFF_INF, M_INFLIGHT, M_NESTED, M_ITEM_STEP, M_COUNTERS,
 M_NBAR, M_CTAS, M_FIRST_ARRIVED, M_KIND_SH, M_KIND_MASK, M_VAL_SH, M_VAL_MASK, M_WIN,
 M_MAXS, M_MAXP, M_FIELDS) = range(20)
# agent columns
G_LEN, G_COEF, G_BODY, G_READER, G_CTA = range(5)


def lap_tables(lap: LapAbstraction) -> LapTables:
    m = lap.model
    kind_sh, kind_mask = m.entry_fields[S.E_KIND]
    val_sh, val_mask = m.entry_fields[S.E_VAL]
    misc = np.array([m.agf, lap.n_agents, m.off_slot, m.off_bar, m.off_inf, m.inflight,
                     int(lap.model.spec.tiles is not None), lap.item_step, int(lap.counter_signals), len(m.barrier_names), m.ctas,
                     S.F_RING0 + S.RING_FIELDS * m.rings, kind_sh, kind_mask, val_sh, val_mask,
                     m.win, m.max_stages, m.max_parts, m.n_fields], dtype=np.int64)
    agent = np.array([[len(a.ops), lap.coef[i], int(lap.has_body[i]), int(i in lap.readers), a.cta]
                      for i, a in enumerate(m.agents)], dtype=np.int64)
    users = np.zeros((m.rings, lap.n_agents), dtype=np.int64)
    for r, us in enumerate(lap.ring_users):
        users[r, us] = 1
    sigs = [list(lap._ring_signals(r)) for r in range(m.rings)]
    width = max([len(s) for s in sigs] + [1])
    sig = np.full((m.rings, width), -1, dtype=np.int64)
    mult = np.zeros((m.rings, width), dtype=np.int64)
    for r, ss in enumerate(sigs):
        ring = m.ring_specs[r]
        for k, (kind, b) in enumerate(ss):
            sig[r, k] = b
            mult[r, k] = _lap_growth(lap, ring, kind)
    p0 = np.array([a.initial_phases for a in m.agents], dtype=np.int64).reshape(len(m.agents), m.rings)
    stages = np.array([r.stages for r in m.ring_specs], dtype=np.int64)
    # perm and rec: scratch of symmetries.canonicalise (one agent number per agent, one
    # record per agent), like the Symmetry's own img and best; twins: the classes whose
    # twin steps prove.expand leaves out.
    return LapTables(misc, agent, users, lap.reset_until, sig, mult, p0, lap.observes, stages,
                     lap.sym, m.tables, np.empty(lap.n_agents, dtype=np.int64),
                     np.empty(lap.n_agents * m.agf, dtype=np.int64),
                     lap.sym.classes if lap.twin_steps else SYM.NO_CLASSES,
                     lap.tag_coef, lap.dead_div,
                     # scratch of _shift_items_fast, per ring (the engines allocate nothing)
                     np.empty(m.rings, dtype=np.int64), np.empty(m.rings, dtype=np.int64))


@njit(**ENGINE)
def _record_pos(L, r, a, s, kind):
    return a * L.misc[M_AGF] + L.misc[M_WIN] + 2 * ((r * L.misc[M_MAXS] + s) * 2 + kind)


@njit(**ENGINE)
def _shift_phase_numbers(L, st, r, done):
    """LapAbstraction._shift_phase_numbers, compiled."""
    if L.misc[M_COUNTERS] != 0:
        return
    seen = False
    for a in range(L.misc[M_AGENTS]):
        if L.observes[r, a] != 0 and not done[a]:
            if L.reset_until[r, a] < 0:
                return
            seen = True
    if not seen:
        return
    low = HUGE
    for k in range(L.sig.shape[1]):
        if L.sig[r, k] >= 0 and st[L.sig[r, k]] - 1 < low:
            low = st[L.sig[r, k]] - 1
    for a in range(L.misc[M_AGENTS]):
        if L.observes[r, a] != 0 and not done[a]:
            for s in range(L.stages[r]):
                for kind in range(2):
                    if (L.observes[r, a] >> kind) & 1 and st[_record_pos(L, r, a, s, kind)] + 1 < low:
                        low = st[_record_pos(L, r, a, s, kind)] + 1
    if low <= 1:
        return
    shift = low - low % 2
    for k in range(L.sig.shape[1]):
        if L.sig[r, k] >= 0:
            st[L.sig[r, k]] -= shift
    for a in range(L.misc[M_AGENTS]):
        if L.observes[r, a] != 0 and not done[a]:
            for s in range(L.stages[r]):
                for kind in range(2):
                    if (L.observes[r, a] >> kind) & 1:
                        st[_record_pos(L, r, a, s, kind)] -= shift


@njit(**ENGINE)
def _windows_settled(L, st, r, done):
    """LapAbstraction._windows_settled, compiled."""
    agf = L.misc[M_AGF]
    for a in range(L.misc[M_AGENTS]):
        if not L.ring_users[r, a] or done[a] or L.reset_until[r, a] < 0:
            continue
        p0 = L.p0[a, r]
        ph = st[S.ring_field(agf, a, r, S.RF_PHASE)]
        for j in range(L.misc[M_MAXS] * 2):
            w = a * agf + L.misc[M_WIN] + 2 * (r * L.misc[M_MAXS] * 2 + j)
            if st[w + 1] > ph:
                return False
            st[w] -= st[w + 1] - p0
            st[w + 1] = p0
    return True


@njit(cache=True)
def canonical_fast(L, st):
    """`canonical_into` with its own scratch arrays (for callers outside the hot loop)."""
    return canonical_into(L, st, np.zeros(L.misc[M_AGENTS], dtype=np.bool_))


@njit(**ENGINE)
def canonical_into(L, st, done):
    """Rewrite `st` into its canonical form; returns d (LapAbstraction.canonical). `done`
    (bool, one per agent) is scratch: the search's hot loop runs without numba's reference
    counting, so it allocates nothing (checker/engines/explore.py ENGINE)."""
    agf = L.misc[M_AGF]
    done[:] = False
    for a in range(L.misc[M_AGENTS]):
        b = a * agf
        if st[b + S.F_PC] >= L.agent[a, G_LEN]:
            done[a] = True
            st[b + S.F_ITEM] = 0
            for f in range(S.F_SYNC, agf):
                st[b + f] = 0
    _shift_laps_fast(L, st, done)
    _shift_generations_fast(L, st, done)
    d = _shift_items_fast(L, st, done)
    SYM.canonicalise(L.tab, L.sym, st, L.perm, L.rec)  # agent classes, then CTA renamings
    return d


@njit(**ENGINE)
def _shift_laps_fast(L, st, done):
    """LapAbstraction._shift_laps, compiled: per ring, its phases (and signals) by an even
    amount once no reset lies ahead, else its phase numbers alone."""
    agf = L.misc[M_AGF]
    n = L.misc[M_AGENTS]
    for r in range(L.ring_users.shape[0]):
        reset_ahead = False
        for a in range(n):
            if st[a * agf + S.F_PC] <= L.reset_until[r, a]:
                reset_ahead = True
        if reset_ahead:
            _shift_phase_numbers(L, st, r, done)
            continue
        low = -1
        seen = False
        for a in range(n):
            if L.ring_users[r, a] and not done[a]:
                p = st[S.ring_field(agf, a, r, S.RF_PHASE)] - 2
                if not seen or p < low:
                    low = p
                seen = True
        if not seen or not _windows_settled(L, st, r, done):
            continue
        if L.misc[M_COUNTERS] == 0:
            for k in range(L.sig.shape[1]):
                if L.sig[r, k] >= 0 and st[L.sig[r, k]] - 1 < low:
                    low = st[L.sig[r, k]] - 1
        if low <= 1:
            continue
        shift = low - low % 2
        for a in range(n):
            if L.ring_users[r, a] and not done[a]:
                st[S.ring_field(agf, a, r, S.RF_PHASE)] -= shift
        for k in range(L.sig.shape[1]):
            if L.sig[r, k] >= 0:
                st[L.sig[r, k]] -= shift * L.sig_mult[r, k]


@njit(**ENGINE)
def _shift_generations_fast(L, st, done):
    """LapAbstraction._shift_generations, compiled: per (barrier, cta)."""
    agf = L.misc[M_AGF]
    n = L.misc[M_AGENTS]
    ctas = L.misc[M_CTAS]
    first = L.misc[M_FIRST_ARRIVED]
    for bar in range(L.misc[M_NBAR]):
        for cta in range(ctas):
            pos = L.misc[M_OFF_BAR] + 2 * (bar * ctas + cta)
            shift = st[pos + 1] - 1
            for a in range(n):
                f = a * agf + first + bar
                if L.agent[a, G_CTA] == cta and not done[a] and st[f] > 0 and st[f] - 1 < shift:
                    shift = st[f] - 1
            if shift > 0:
                st[pos + 1] -= shift
                for a in range(n):
                    f = a * agf + first + bar
                    if L.agent[a, G_CTA] == cta and not done[a] and st[f] > 0:
                        st[f] -= shift


@njit(**ENGINE)
def _shift_items_fast(L, st, done):
    """LapAbstraction._shift_items, compiled: items and tags; returns d."""
    agf = L.misc[M_AGF]
    n = L.misc[M_AGENTS]
    off_inf = L.misc[M_OFF_INF]
    m_inf = L.misc[M_INFLIGHT]
    kind_sh, kind_mask = L.misc[M_KIND_SH], L.misc[M_KIND_MASK]
    val_sh, val_mask = L.misc[M_VAL_SH], L.misc[M_VAL_MASK]
    rings = L.stages.shape[0]
    nested = L.misc[M_NESTED] != 0
    # per ring: the least tag an unfinished reader or an in-flight async read still needs
    dead_below, have_live = L.dead_below, L.have_live  # have_live 1: a reader still needs a tag
    for r in range(rings):
        dead_below[r] = -1
        have_live[r] = 0
    for r in range(rings):
        for a in range(n):
            if L.dead_div[r, a] > 0 and not done[a]:
                it = st[a * agf + S.F_ITEM] // L.dead_div[r, a]
                if not have_live[r] or it < dead_below[r]:
                    dead_below[r] = it
                have_live[r] = 1
    for j in range(m_inf):
        e = st[off_inf + j]
        if e == 0:
            break
        if (e >> kind_sh) & kind_mask == S.ENTRY_READ:
            t = ((e >> val_sh) & val_mask) - 1
            for r in range(rings):
                if nested and r != S.entry_field(L.tab, e, S.E_RING):
                    continue
                if not have_live[r] or t < dead_below[r]:
                    dead_below[r] = t
                have_live[r] = 1
    d = -1
    for a in range(n):
        if not done[a] and L.agent[a, G_COEF] > 0 and L.agent[a, G_BODY]:
            q = st[a * agf + S.F_ITEM] // L.agent[a, G_COEF]
            if d < 0 or q < d:
                d = q
    for r in range(rings):
        if L.tag_coef[r] > 0 and have_live[r]:
            q = dead_below[r] // L.tag_coef[r]
            if d < 0 or q < d:
                d = q
    if d < 0:
        d = 0
    d -= d % L.misc[M_ITEM_STEP]
    maxs, maxp = L.misc[M_MAXS], L.misc[M_MAXP]
    off_slot = L.misc[M_OFF_SLOT]
    for p in range(off_slot, L.misc[M_OFF_BAR]):
        t = st[p]
        r = ((p - off_slot) // maxp // maxs) % rings
        st[p] = -1 if (t < 0 or not have_live[r] or t < dead_below[r]) else t - d * L.tag_coef[r]
    changed = False
    for j in range(m_inf):
        e = st[off_inf + j]
        if e == 0:
            break
        kind = (e >> kind_sh) & kind_mask
        if kind == S.ENTRY_COPY or kind == S.ENTRY_READ:
            r = S.entry_field(L.tab, e, S.E_RING)
            t = ((e >> val_sh) & val_mask) - 1
            t2 = -1 if (t < 0 or not have_live[r] or t < dead_below[r]) else t - d * L.tag_coef[r]
            if t2 != t:
                st[off_inf + j] = (e & ~(val_mask << val_sh)) | ((t2 + 1) << val_sh)
                changed = True
    if changed:  # restore the descending order of entries
        S.sort_descending(st, off_inf, m_inf)
    if d:
        for a in range(n):
            if not done[a]:
                st[a * agf + S.F_ITEM] -= d * L.agent[a, G_COEF]
    return d
