"""`pipeproof prove`: safety and deadlock freedom for every item count.

Two steps. First the explicit engine checks the spec at its own item count: a bug there is
refuted with its shortest trace at once. Then checker/engines/laps.py's lap abstraction is searched
exhaustively: its states are the reachable states of every item count at once (item numbers,
laps and generations taken relative to each other, the item count left exact or MANY), so an
exhaustive search without a violation proves the spec for all item counts n >= 1, and a
violation found there is the path of one concrete item count, which the explicit engine then
re-checks to print a real, shortest trace. A search that hits a limit, or a spec the
abstraction cannot cover, gives `unknown` with the reason: never `proved`.

The search (`_Search`, below) runs in numba like checker/engines/explore.py's: packed states, an
open-addressing table, BFS order, chunks between which the driver checks the time limit and
grows the arrays. tests/reference_search.py keeps the plain Python loop it replaced, as a test
oracle: both store the same states in the same order (tests/test_prove.py compares them).

Considered and left as they are:

- The restart when R doubles. The searches before the last are a few percent of the work
  (x_mojo_sm100_matmul: 24,890 states at R = 4, then 1,592,519 at R = 8;
  mojo_input_tile_cluster2_k2: 72,503, then 5,346,620; cutlass_tma_async_cluster2: 17,410,
  then 706,494), since each doubling multiplies the state count by far more than 2. Reusing
  them would mean splitting every MANY state of the smaller R into the exact counts R..2R-1
  and MANY, and a BFS order (so traces and the violation reported) unlike a fresh search's.
- The R - 1 exact copies of the initial state: each is its own item count, with its own
  reachable states; they are the abstraction, not a cost of the search.
- Symmetry across CTAs. In x_cluster_ctas_ok the CTAs are not interchangeable (the scheduler
  runs in CTA 0 only, releases go to=leader); its cost was an unbounded phase, which
  checker/engines/laps.py now cuts (signals no op touches). cutlass_tma_async_cluster2 and
  mojo_input_tile_cluster2_k2 are CTA-symmetric (targets self/all only) and could store about
  half the states, but the permutation must move agents, signals, slots, barriers and the CTA
  and agent fields of in-flight entries together; not done here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from pipeproof.backends.base import njit
from pipeproof.checker.engines import por as POR
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.runtime import progress
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines.explore import (ENGINE, INTERRUPTED, StateStore, find_or_insert,
                                      merge_steps, unpack)
from pipeproof.checker.engines.laps import (G_COEF, G_LEN, HUGE, M_AGENTS, M_AGF, MANY, CannotAbstract,
                          LapAbstraction, canonical_fast, canonical_into, lap_tables,
                          own_parameter, scaled_spec)
from pipeproof.checker.core import Packing, packing_for
from pipeproof.checker.results import KINDS, Result, Verdict
from pipeproof.checker.engines.verifier import tiny_spec, verify, warm_up
from pipeproof.spec.schema import Spec

KIND_MASK = (1 << S.N_KINDS) - 1
TWIN = -2  # expand's bits for a step left out: an interchangeable agent's twin step (its successor is not stored)
MAX_ABSTRACT_STATES = 25_000_000  # packed: (words + 1) * 8 + 6 bytes each, plus 8..16 of table
MAX_R = 1 << 12
QUICK_LOOK_STATES = 200_000


@dataclass
class ProofResult:
    spec: Spec
    status: str                    # prove's word for its verdict: proved | violated | unknown
    reason: str = ""
    parameter: str = ""            # what n is: "items" or "items = 2·n (role scheduler n)"
    abstract_states: int = 0
    seconds: float = 0.0
    items: int | None = None       # the parameter n at which it is violated
    result: Result | None = None   # the explicit engine's verdict at that n (with traces)
    warnings: tuple = ()           # result.WARNINGS met at some item count (no violations)
    own_states: int = 0            # states the quick look stored at the spec's own item count
    concrete: Spec | None = None   # violated: the spec the trace runs (the count n; nested loops:
                                   # at the k_blocks it was found at)

    def __post_init__(self):
        self.status = Verdict.of(self.status).proof_word  # one of the vocabulary's words
        # Plain ints, whatever computed them: the abstract search's counts are numpy integers
        # when the engines run as plain Python (PIPEPROOF_JIT=0), and `prove --json` writes them.
        self.abstract_states = int(self.abstract_states)
        self.own_states = int(self.own_states)
        if self.items is not None:
            self.items = int(self.items)

    @property
    def kind(self):
        return self.result.kind if self.result else None

    @property
    def verdict(self) -> Verdict:
        """The one vocabulary's verdict (spec/vocabulary.py) for every item count at once."""
        return Verdict.of(self.status)


@njit(**ENGINE)
def set_counts(T, F, L, n_rel, R):
    """Set the item counts of an abstract state's n_rel (laps.tables_for) into T, and the
    partial-order reduction's limit into F: in a MANY state (every count >= R) the walk
    answers "touched" before it moves an agent to item coef * (R - 1), and no step that moves
    an agent there is merged, so merged runs stay where every count >= R runs alike
    (docs/reductions.md)."""
    for g in range(L.misc[M_AGENTS]):
        c = L.agent[g, G_COEF]
        T.agent[g, S.A_ITEMS] = c * (HUGE if n_rel == MANY else n_rel)
        F.limit[g] = c * (R - 1) if (n_rel == MANY and c > 0) else POR.NO_LIMIT


@njit(**ENGINE)
def successor(T, F, por, st, a, out, scratch, det):
    """Action a's concrete successor of `st` into `out`, then (with `por`) every step the
    partial-order reduction takes at once after it (explore.merge_steps); the step's bits."""
    b = S.step(T, st, a, out, det)
    if b == 0 and por:
        merge_steps(T, F, out, scratch, det)
    return b


@njit(**ENGINE)
def expand(T, L, F, por, st, succ, bits, moved, far, far_items, det, done, scratch):
    """Every action's canonical successor of `st`: succ[a], its step result bits[a], the items
    it moved (moved[a]) and whether an agent got within reach of the end (far[a]); returns
    the state's own violation bits. A step whose only bit is the warning S.UNAWAITED_AT_EXIT
    is no violation (DESIGN R2): its successor is canonical and searched on like any other. With `por` each successor first takes the steps the
    partial-order reduction merges (`successor`). `det`, `done`, `scratch` are
    scratch (canonical_into, merge_steps)."""
    n_enabled = 0
    agf = L.misc[M_AGF]
    for a in range(succ.shape[0]):
        if a < L.misc[M_AGENTS] and SYM.twin_of_previous(L.tab, L.twins, st, a):
            # Exchanging a and a - 1 maps st onto itself and a's step onto a - 1's: what is
            # reachable after it is a - 1's, exchanged (docs/reductions.md, "Twins").
            enabled = bits[a - 1] >= 0 or bits[a - 1] == TWIN
            bits[a] = TWIN if enabled else -1
            n_enabled += enabled
            continue
        det[:] = -1
        b = successor(T, F, por, st, a, succ[a], scratch, det)
        bits[a] = b
        if b < 0:
            continue
        n_enabled += 1
        if b != 0 and b != S.UNAWAITED_AT_EXIT:
            continue  # a violating step: its path ends there (a warning's goes on, as in verify)
        # Before the shift: merged steps may move an agent many items in one transition, and a
        # MANY state's endless body is every count's only up to item coef * R (the successor's
        # exact counts R - d .. R - 1 hold only then, too); after it: no agent within reach of
        # the end of the run for the next step.
        far[a] = 0
        for g in range(L.misc[M_AGENTS]):
            if (L.agent[g, G_COEF] > 0 and succ[a, g * agf + S.F_PC] < L.agent[g, G_LEN]
                    and succ[a, g * agf + S.F_ITEM] >= (far_items + 1) * L.agent[g, G_COEF]):
                far[a] = 1
        moved[a] = canonical_into(L, succ[a], done)
        for g in range(L.misc[M_AGENTS]):
            if (L.agent[g, G_COEF] > 0 and succ[a, g * agf + S.F_PC] < L.agent[g, G_LEN]
                    and succ[a, g * agf + S.F_ITEM] >= far_items * L.agent[g, G_COEF]):
                far[a] = 1
    det[:] = -1
    return S.state_violations(T, st, n_enabled, det)


def start_counts(R: int, only_n: int | None) -> list[int]:
    """The n_rel of the initial abstract states: every count (1..R-1 exact, MANY for >= R), or
    only the count `only_n` (exact below R; MANY above, which also covers every other count
    >= R)."""
    if only_n is None:
        return list(range(1, R)) + [MANY]
    return [only_n if only_n < R else MANY]


class _NeedLargerR(Exception):
    pass


class _Limit(Exception):
    pass


class _NoFit(Exception):
    """An abstract vector outside the model's packing widths: search with raw words."""


# ---------------------------------------------------------------------- the compiled search
#
# States are stored like checker/engines/explore.py stores concrete ones: the vector packed with the
# model's packing widths (the model is compiled for MAX_R items, and every abstract value is
# in the range of some concrete state of that model: relative items, tags, phases and
# generations are at most the absolute ones; the one exception, the 0 the canonical form
# writes into a finished agent's fields, is added to each range by `_lap_packing`; `_fits`
# checks every successor anyway and the search falls back to one raw word per field if one
# ever does not fit), then n_rel as one more word. An
# open-addressing table of int32 indices deduplicates them; parent (int32) and via (int16)
# give the path back. States are stored in BFS order, the store is the queue, and the order
# in which successors are stored is the Python reference's (tests/reference_search.py), so the
# stored states, their indices and the violation found are the same.

(B_DONE, B_NEED_ROOM, B_FOUND, B_STATE_LIMIT, B_INFLIGHT, B_NEED_R, B_NO_FIT) = range(7)


# The compiled search runs without numba's reference counting, like checker/engines/explore.py's
# `expand` (see ENGINE there): nothing below allocates; the scratch arrays come from _Search.

@njit(**ENGINE)
def _fits(PK, st):
    for f in range(st.shape[0]):
        v = st[f] - PK.bias[f]
        w = PK.width[f]
        if w == 0:
            if v != 0:
                return False
        elif v < 0 or v >= (np.int64(1) << w):
            return False
    return True


@njit(**ENGINE)
def _store_one(PK, store, n_stored, table, parent, via, vec, n_rel, i, a, key, limit):
    """Pack (vec, n_rel) and store it if new; returns (status, n_stored)."""
    if not _fits(PK, vec):
        return B_NO_FIT, n_stored
    words = key.shape[0] - 1
    for w in range(words):
        key[w] = 0
    for j in range(PK.live.shape[0]):
        f = PK.live[j]
        key[PK.word[f]] |= (vec[f] - PK.bias[f]) << PK.shift[f]
    key[words] = n_rel
    idx, new = find_or_insert(store, n_stored, table, key, limit)
    if idx < 0:
        return B_STATE_LIMIT, n_stored
    if new:
        parent[idx] = i
        via[idx] = a
        n_stored += 1
    return B_DONE, n_stored


@njit(**ENGINE)
def _bfs(T, L, F, por, PK, store, n_stored, table, parent, via, lo, hi, R, limit, found,
         st, succ, bits, moved, far, key, det, done, scratch):
    """Expand stored states lo..hi-1 in order; returns (status, next index, n_stored).
    B_FOUND: found[:3] = (state index, action or -1, bits); found[3] = 1 once a step met the
    warning S.UNAWAITED_AT_EXIT. st .. det: scratch (_Search)."""
    n_actions = T.cfg[S.C_AGENTS] + T.cfg[S.C_INFLIGHT]
    n_agents = L.misc[M_AGENTS]
    words = store.shape[1] - 1
    room = n_actions * R
    for i in range(lo, hi):
        if n_stored + room > store.shape[0] or 2 * (n_stored + room) > table.shape[0]:
            return B_NEED_ROOM, i, n_stored
        unpack(PK, store[i, :words], st)
        n_rel = store[i, words]
        set_counts(T, F, L, n_rel, R)
        state_bits = expand(T, L, F, por, st, succ, bits, moved, far, R - 1, det, done, scratch)
        if state_bits & KIND_MASK:
            found[0], found[1], found[2] = i, -1, state_bits
            return B_FOUND, i, n_stored
        for a in range(n_actions):
            b = bits[a]
            if b < 0:
                continue
            if b & S.INFLIGHT_FULL:
                return B_INFLIGHT, i, n_stored
            if b & KIND_MASK:
                found[0], found[1], found[2] = i, a, b
                return B_FOUND, i, n_stored
            if b & S.UNAWAITED_AT_EXIT:
                found[3] = 1
            d = moved[a]
            if n_rel != MANY:
                status, n_stored = _store_one(PK, store, n_stored, table, parent, via, succ[a],
                                              n_rel - d, i, a, key, limit)
                if status != B_DONE:
                    return status, i, n_stored
                continue
            if far[a]:
                return B_NEED_R, i, n_stored
            status, n_stored = _store_one(PK, store, n_stored, table, parent, via, succ[a],
                                          MANY, i, a, key, limit)
            if status != B_DONE:
                return status, i, n_stored
            if d:
                for n2 in range(max(R - d, 1), R):
                    status, n_stored = _store_one(PK, store, n_stored, table, parent, via,
                                                  succ[a], n2, i, a, key, limit)
                    if status != B_DONE:
                        return status, i, n_stored
    return B_DONE, hi, n_stored


def _lap_packing(model):
    """The model's packing with every field's range widened to hold 0 as well: the canonical
    form writes 0 into what a finished agent no longer reads (its phases start at 1); and the
    signals' observed bit kept on amd too (semantics.observe sets it, only nvidia reads it:
    the explicit engine may drop it, the abstraction stores it as the reference did)."""
    n_sig_fields = 4 * model.ctas * model.rings * model.max_stages * 2
    bounds = []
    for f, (b, span) in enumerate(model._field_bounds()):
        lo, hi = min(b, 0), max(b + span, 0)
        if model.off_sig <= f < model.off_sig + n_sig_fields and (f - model.off_sig) % 4 == 3:
            hi = max(hi, 1)
        bounds.append((lo, hi - lo))
    return packing_for(bounds)


def _raw_packing(n_fields: int):
    """One word per field, for vectors the model's packing cannot hold."""
    arr = lambda xs: np.array(xs, dtype=np.int64)
    f = range(n_fields)
    return Packing(arr(f), arr([0] * n_fields), arr([62] * n_fields),
                   arr([-(1 << 61)] * n_fields), arr(f)), n_fields


def future_for(lap: LapAbstraction, por: bool):
    """The partial-order reduction's tables for the abstract search: ones that hold for every
    item count (por.any_count_tables), with their own walk limits (set per state)."""
    model = lap.model
    F = POR.any_count_tables(model) if por else POR.no_future_tables(model)
    return F._replace(limit=F.limit.copy())


class _Search(StateStore):
    """BFS over abstract states (vector, n_rel); n_rel is exact (1..R-1) or MANY (>= R).
    The loop is `_bfs`, run a chunk at a time so the deadline (and a Ctrl-C: Python sees it
    only when the compiled loop returns) is checked and the arrays grown between chunks. A
    chunk is sized by the measured time per state to take about CHUNK_SECONDS (one abstract
    state of 16 roles x 16 agents takes ~0.1 s, so a fixed 8192 of them ran for minutes past
    --timeout and Ctrl-C); the states stored and their order do not depend on it."""

    CHUNK = 8192
    CHUNK_SECONDS = 0.1

    def __init__(self, lap: LapAbstraction, R: int, max_states: int, deadline: float | None,
                 raw: bool = False, por: bool = True):
        self.lap, self.R = lap, R
        self.max_states, self.deadline = max_states, deadline
        self.fast = lap_tables(lap)
        model = lap.model
        self.por = por
        self.future = future_for(lap, por)
        self.packing, self.words = (_raw_packing(model.n_fields) if raw
                                    else _lap_packing(model))
        self.raw = raw
        self.found = np.zeros(4, dtype=np.int64)  # _bfs: a violation found, and the warning
        self.tables = model.tables._replace(agent=model.tables.agent.copy())  # _bfs writes it
        super().__init__(self.words + 1)  # the packed vector, then n_rel

    @property
    def warned(self) -> bool:
        """Did a step of the search make a CTA gone with its own copies or commits still in
        flight (the warning unawaited_at_exit; with strict_exit it is a violation instead)?"""
        return bool(self.found[3])

    def state(self, i: int) -> tuple[np.ndarray, int]:
        """The vector and n_rel of stored state i."""
        st = np.empty(self.lap.model.n_fields, dtype=np.int64)
        unpack(self.packing, self.store[i, :self.words], st)
        return st, int(self.store[i, self.words])

    def run(self, only_n: int | None = None):
        """None when every abstract state is safe, else (state index, action or -1, bits)."""
        lap, R = self.lap, self.R
        model = lap.model
        v0 = model.initial_vector()
        canonical_fast(self.fast, v0)
        key = np.empty(self.words + 1, dtype=np.int64)
        room = model.n_actions() * R
        found = self.found
        n_actions, n_fields = model.n_actions(), model.n_fields
        scratch = (np.empty(n_fields, dtype=np.int64), np.empty((n_actions, n_fields), dtype=np.int64),
                   np.empty(n_actions, dtype=np.int64), np.zeros(n_actions, dtype=np.int64),
                   np.zeros(n_actions, dtype=np.int64), key,
                   np.empty(S.N_KINDS * S.DET_W, dtype=np.int64),
                   np.zeros(lap.n_agents, dtype=np.bool_), np.empty(n_fields, dtype=np.int64))
        for n_rel in start_counts(R, only_n):
            if 2 * (self.n_stored + 1) > self.table.shape[0] or self.n_stored >= self.store.shape[0]:
                self._grow(self.n_stored + 1)
            status, self.n_stored = _store_one(self.packing, self.store, self.n_stored, self.table,
                                               self.parent, self.via, v0, n_rel, -1, -1, key,
                                               self.max_states)
            self._check(status)
        i = 0
        chunk = 1  # states per call of _bfs: grown while a call is quick, shrunk when slow
        # the abstract search has no depth of its own (a state stands for every item count)
        reporter = progress.Reporter(False, "prove, abstract states")
        while i < self.n_stored:
            now = time.monotonic()
            reporter.tell(self.n_stored, None, now)
            if self.deadline and now > self.deadline:
                raise _Limit("the time limit")
            lo = i
            status, i, self.n_stored = _bfs(
                self.tables, self.fast, self.future, self.por, self.packing, self.store, self.n_stored, self.table,
                self.parent, self.via, i, min(self.n_stored, i + chunk), R,
                self.max_states, found, *scratch)
            took = time.monotonic() - now
            if i > lo:
                per_state = took / (i - lo)
                chunk = int(min(self.CHUNK, max(1, min(4 * chunk, self.CHUNK_SECONDS / max(per_state, 1e-9)))))
            if status == B_NEED_ROOM:
                self._grow(self.n_stored + 2 * room)
            elif status == B_FOUND:
                reporter.done()
                return int(found[0]), int(found[1]), int(found[2])
            else:
                self._check(status)
        reporter.done()
        return None

    def _grow(self, need: int):
        if not self.grow(need):
            from pipeproof.checker.engines.explore import MEMORY_ENV, memory_budget
            raise _Limit(f"the memory budget ({memory_budget() / 2**30:.1f} GB, {MEMORY_ENV})")

    def _check(self, status):
        if status == B_STATE_LIMIT:
            raise _Limit(f"more than {self.max_states:,} abstract states")
        if status == B_INFLIGHT:
            raise _Limit("the model's room for in-flight copies and commits")
        if status == B_NEED_R:
            raise _NeedLargerR()
        if status == B_NO_FIT:
            raise _NoFit()
        assert status in (B_DONE, B_NEED_ROOM), status

    def item_count_of(self, i: int) -> int:
        return _item_count_of(self, i)


def _item_count_of(search, i: int) -> int:
    """The parameter n whose concrete run follows the abstract path to state i (a Python int:
    canonical_fast's d is a numpy integer when it runs as plain Python)."""
    path = []
    while i >= 0:
        path.append(i)
        i = search.parent[i]
    path.reverse()
    lap = search.lap
    first = search.state(path[0])[1]
    if first != MANY:
        return first
    moved = 0
    for prev, cur in zip(path, path[1:]):
        st, n_rel = search.state(prev)
        out, scratch = np.empty_like(st), np.empty_like(st)
        det = np.full(S.N_KINDS * S.DET_W, -1, dtype=np.int64)
        T = lap.tables_for(n_rel)
        T = T._replace(agent=T.agent.copy())
        set_counts(T, search.future, search.fast, n_rel, search.R)
        successor(T, search.future, search.por, st, int(search.via[cur]), out, scratch, det)
        moved += int(canonical_fast(search.fast, out))
        if search.state(cur)[1] != MANY:
            return moved + search.state(cur)[1]
    return moved + search.R


def describe_parameter(spec: Spec, lap: LapAbstraction) -> str:
    coefs = {a.role: int(c) for a, c in zip(lap.model.agents, lap.coef)}
    if spec.tiles is not None:  # nested loops: n counts tiles (laps.own_parameter)
        tiles = {r.name: coefs.get(r.name, 0) // r.k_blocks for r in spec.roles}
        if set(tiles.values()) == {1}:
            return "n = tiles"
        return "tiles = " + ", ".join(f"{role} {c}·n" for role, c in tiles.items())
    if set(coefs.values()) == {1}:
        return "n = items"
    return "items = " + ", ".join(f"{role} {c}·n" for role, c in coefs.items())


_warm = False


def warm_up_prove() -> None:
    """Load (or compile) the abstraction's kernels before any clock starts."""
    global _warm
    warm_up()
    if not _warm:
        from pipeproof.checker.runtime import compile_notice  # (warm_up waited for the shared build)
        with compile_notice("lap abstraction (prove, --engine laps)"):
            lap = LapAbstraction(tiny_spec(), 8)
            for por in (True, False):
                _Search(lap, 4, 10_000, None, por=por).run()
                _Search(lap, 4, 10_000, None, raw=True, por=por).run()
        _warm = True


class Unknown(Exception):
    """The abstract search stopped without an answer; `states` is how many it stored."""

    def __init__(self, reason: str, states: int, drift: bool = False):
        super().__init__(reason)
        self.states = states
        self.drift = drift  # agents drift apart without bound (not a limit: the abstraction)


def first_bound(lap: LapAbstraction, por: bool) -> int:
    """The first lap bound R to search with: 2 x the item step; with partial-order reduction,
    doubled while R <= 2 x stages. In a MANY state the reduction's walk answers "touched" once
    it would move an agent to relative item R - 1 (set_counts), so below that a walk of one lap
    ahead of agents a lap apart is cut short and few steps are merged (mojo_input_tile
    cluster_size=2 stages=4: 99,580 abstract states at R = 8, 3,953 at R = 16). Any R is
    sound (a multiple of the item step: MANY stands for every count >= R); R only trades exact
    counts below it for merged steps above it."""
    R = 2 * lap.item_step
    while por and R <= 2 * lap.model.max_stages:
        R *= 2
    return R


def search_laps(lap: LapAbstraction, max_states: int, deadline: float | None,
                only_n: int | None = None, searcher=None, por: bool = True):
    """Search the lap abstraction exhaustively (from every item count, or only `only_n`),
    doubling R until no MANY state comes near the end of the run; returns (search, found)
    where found is None or (state index, action or -1, bits). Raises Unknown at a limit."""
    R = first_bound(lap, por)
    raw = False
    search = None
    while True:
        try:
            if deadline and time.monotonic() > deadline:
                raise _Limit("the time limit")
            search = (searcher(lap, R, max_states, deadline, por=por) if searcher is not None
                      else _Search(lap, R, max_states, deadline, raw=raw, por=por))
            return search, search.run(only_n)
        except KeyboardInterrupt:  # Ctrl-C: a limit like any other, with the counts so far
            raise Unknown(INTERRUPTED, search.n_stored if search is not None else 0) from None
        except _NoFit:
            raw = True
        except _NeedLargerR:
            if R >= MAX_R:
                raise Unknown(f"agents drift apart without bound (no lap bound up to {MAX_R} "
                              "items)", search.n_stored, drift=True)
            R *= 2
        except _Limit as err:
            raise Unknown(f"stopped at {err}", search.n_stored if search is not None else 0)


def prove(spec: Spec, timeout: float | None = None, max_states: int = MAX_ABSTRACT_STATES,
          searcher=None, por: bool = True, cta_symmetry: bool = True,
          strict_exit: bool = False) -> ProofResult:
    """`prove_counts`; with nested loops (spec.load_loops), for every tile count at each
    k_blocks from 1 to the spec's. The tile count is the abstracted parameter n; k_blocks is
    not (the per-tile guards at=K-1 and the tile tags item // K are not shifts of it), so it is
    checked at each of those values, and the answer says so."""
    kw = dict(max_states=max_states, searcher=searcher, por=por, cta_symmetry=cta_symmetry,
              strict_exit=strict_exit)
    if spec.tiles is None:
        return prove_counts(spec, timeout=timeout, **kw)
    from pipeproof.spec.load_loops import with_k_blocks
    started = time.monotonic()
    checked, skipped, states, warnings = [], [], 0, set()
    for k in range(1, spec.k_blocks + 1):
        at_k = spec if k == spec.k_blocks else with_k_blocks(spec, k)
        if at_k is None:
            skipped.append(k)
            continue
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 0.001)
        proof = prove_counts(at_k, timeout=left, **kw)
        states += proof.abstract_states
        warnings.update(proof.warnings)
        if proof.status != "proved":
            proof.reason = f"at k_blocks = {k}: {proof.reason}"
            proof.parameter = f"{proof.parameter}, k_blocks = {k}".lstrip(", ")
            proof.abstract_states = states
            proof.seconds = time.monotonic() - started
            return proof
        checked.append(k)
    values = (f"{checked[0]}..{checked[-1]}" if checked == list(range(checked[0], checked[-1] + 1))
              and len(checked) > 2 else ", ".join(map(str, checked)))
    note = f"; k_blocks = {', '.join(map(str, skipped))} not checked (an every= guard needs a multiple)" if skipped else ""
    return ProofResult(spec=spec, status="proved", abstract_states=states,
                       seconds=time.monotonic() - started, own_states=proof.own_states,
                       parameter=f"n = tiles, at k_blocks = {values}{note}",
                       reason="no violation in any abstract state, for every tile count at "
                              f"k_blocks = {values}",
                       warnings=tuple(sorted(warnings)))


def prove_counts(spec: Spec, timeout: float | None = None, max_states: int = MAX_ABSTRACT_STATES,
                 searcher=None, por: bool = True, cta_symmetry: bool = True,
                 strict_exit: bool = False) -> ProofResult:
    """Prove `spec` safe and deadlock-free for every item count, refute it, or say unknown.
    With `por` the abstract search takes the partial-order reduction's merged steps, as
    `verify` does (docs/reductions.md says why that keeps every violation); with
    `cta_symmetry`, one abstract state per renaming of interchangeable CTAs. `strict_exit`:
    a CTA gone with its own copies or commits in flight is inflight_at_exit, not the warning
    unawaited_at_exit (which never stops a proof)."""
    warm_up_prove()
    started = time.monotonic()
    deadline = started + timeout if timeout else None
    own_states = 0  # the quick look's states, reported with every answer

    def done(**kw) -> ProofResult:
        return ProofResult(spec=spec, seconds=time.monotonic() - started, own_states=own_states,
                           **kw)

    def left() -> float | None:
        return None if deadline is None else deadline - time.monotonic()

    parameter, search = "", None
    try:  # a Ctrl-C anywhere below (the searches stop at it themselves): unknown, with the counts
        # A quick look at the spec's own item count: most bugs show there, with a short trace.
        # Bounded, since the abstraction below covers this count too.
        own = verify(spec, timeout=timeout, max_states=min(max_states, QUICK_LOOK_STATES),
                     por=por, cta_symmetry=cta_symmetry, strict_exit=strict_exit)
        own_states = own.states
        if own.verdict == "violation":
            n = own_parameter(spec) or spec.items  # (no role runs an item: the pipeline's)
            return done(status="violated", items=n, result=own, concrete=spec,
                        reason=f"violated at its own item count (n = {n})")
        if own.limit == INTERRUPTED:  # Ctrl-C in the quick look: the proof stops there
            return done(status="unknown", reason=INTERRUPTED)
        if deadline is not None and left() <= 0:
            return done(status="unknown", reason="stopped at the time limit")
        try:
            lap = LapAbstraction(spec, MAX_R, cta_symmetry=cta_symmetry, strict_exit=strict_exit)
        except CannotAbstract as err:
            return done(status="unknown", reason=f"outside the lap abstraction: {err}")
        parameter = describe_parameter(spec, lap)
        try:
            search, found = search_laps(lap, max_states, deadline, searcher=searcher, por=por)
        except Unknown as err:
            return done(status="unknown", parameter=parameter, abstract_states=err.states,
                        reason=str(err))
        if found is None:
            warned = own.warnings or getattr(search, "warned", False)  # (the reference search: no flag)
            return done(status="proved", parameter=parameter, abstract_states=search.n_stored,
                        reason="no violation in any abstract state, for every item count",
                        warnings=("unawaited_at_exit",) if warned else ())
        i, action, bits = found
        n = search.item_count_of(i)
        concrete = scaled_spec(spec, n)
        remaining = None if deadline is None else max(left(), 1.0)
        result = verify(concrete, timeout=remaining, strict_exit=strict_exit)
    except KeyboardInterrupt:
        return done(status="unknown", parameter=parameter, reason=INTERRUPTED,
                    abstract_states=search.n_stored if search is not None else 0)
    kinds = [KINDS[k] for k in range(S.N_KINDS) if bits & (1 << k)]
    if result.limit == INTERRUPTED:  # Ctrl-C in the re-check at n
        return done(status="unknown", parameter=parameter, abstract_states=search.n_stored,
                    reason=INTERRUPTED)
    if result.verdict != "violation":
        return done(status="unknown", parameter=parameter, abstract_states=search.n_stored,
                    reason=f"the abstraction reached {', '.join(kinds)} at n = {n}, but the "
                           f"explicit engine says {result.verdict} there")
    return done(status="violated", parameter=parameter, abstract_states=search.n_stored,
                items=n, result=result, concrete=concrete, reason=f"violated at n = {n}")
