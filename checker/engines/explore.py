"""Breadth-first explicit-state exploration of every interleaving.

States are packed into `words` int64 words and stored once, in discovery order, in `store`;
an open-addressing hash table of indices deduplicates them; `parent` and `via` (the action
code that first reached a state) give the shortest path back to the initial state. Because
states are stored in BFS order, each level is a contiguous index range.

The hot loop (`expand`) is numba-compiled and works on a chunk of one level, so the Python
driver can check the time limit, print progress and grow the arrays between chunks.

Minimal depth: expanding level d finds state violations at depth d (deadlock, a waiter outside
its phase window) and step violations at depth d+1. After level d we stop if anything was
found at depth d; if something was found at depth d+1 we only check the state properties of
level d+1 and stop there, so every kind at the minimal depth is reported, each with the first
trace in BFS order. The successor of a violating step is stored like any other (its own state
properties count at the same depth), except after a hardware trap (an arrive above pending,
a tx-count out of range), which leaves no state to go on from.

Symmetry reduction (on by default, checker/engines/symmetries.py): every successor is put into the
canonical form of its orbit under permutations of interchangeable agents before it is packed,
so one state per orbit is stored and `n_stored` counts orbits. Violations and depths are the
same on every member of an orbit, so the minimal depth and the kinds found there do not change;
`parent`/`via` then lead through canonical states, and checker/engines/verifier.py turns such a path
into an interleaving of concrete agents.

Partial-order reduction (`por=True`, checker/engines/por.py): after each step, before the successor
is canonicalised, every step `por.mergeable` allows is taken at once (`merge_steps`). The
reduced graph has a violation exactly when the full one has, but the depths are those of the
reduced graph; checker/engines/verifier.py searches again without it when something is found.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from pipeproof.backends.base import JIT, njit
from pipeproof.checker.engines import por as POR
from pipeproof.checker.runtime import progress as PROGRESS
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.core import Model

EMPTY_SLOT = -1
# A call of `expand` takes about this long (sized by the measured time per state): the driver
# looks at the limits and Ctrl-C between calls. At most MAX_CHUNK states a call.
CHUNK_SECONDS = 0.1
MAX_CHUNK = 50_000
# Per stored state: words*8 bytes of state, 4 of parent, 2 of action, 8..16 of hash table.
# Statuses returned by `expand`.
DONE, NEED_ROOM, INFLIGHT_OVERFLOW, STATE_LIMIT, LATE = 0, 1, 2, 3, 4
INTERRUPTED = "interrupted (Ctrl-C)"
# Set by checker/engines/tier.py in a plain-Python run while the compiled engine is being built: once
# the event is set, a search stops (like a limit) so the command can hand over to it.
HAND_OVER = None
HANDED_OVER = "handed over to the compiled engine"

# The hot loop is compiled without numba's reference counting (`_nrt=False`). The semantics
# read the model tables as `T.cfg`, `T.prog`, ...; with reference counting on, every such
# read of an array out of the tables tuple costs an NRT incref/decref call pair (an atomic
# each), dozens per step: they took ~90% of the time of `S.step`. Nothing here allocates (the
# scratch arrays come from `Search`) and every array is owned by the caller for the whole
# call, so no count is needed. Functions `expand` calls that are not inlined get the same
# flags, or their own increfs would come back.
ENGINE = dict(cache=True, _nrt=False)


# As plain Python (checker/engines/tier.py) a step is ~100 times slower than compiled, and one state of
# a spec with hundreds of agents can take seconds to expand: there `expand` and `merge_steps`
# look at the clock themselves (`late`: past the search's deadline, or told to hand over), and
# stop. Compiled, `late` is always False: a call of `expand` is kept short instead.
_DEADLINE = [float("inf")]
if JIT:
    @njit(**ENGINE)
    def late():
        return False
else:
    def late():
        return time.monotonic() > _DEADLINE[0] or (HAND_OVER is not None and HAND_OVER.is_set())


@njit(**ENGINE)
def pack(PK, st, key):
    # Live fields come in field order, so their words never decrease: each word is built in
    # a register and stored once (an OR into key[w] per field is a chain through memory).
    for w in range(key.shape[0]):
        key[w] = 0
    w = 0
    acc = 0
    for i in range(PK.live.shape[0]):
        f = PK.live[i]
        wf = PK.word[f]
        if wf != w:
            key[w] = acc
            w = wf
            acc = 0
        acc |= (st[f] - PK.bias[f]) << PK.shift[f]
    if PK.live.shape[0] > 0:
        key[w] = acc


@njit(**ENGINE)
def repack(PK, parent, parent_key, st, key):
    """`pack(PK, st, key)` for a state `st` that differs from `parent` (packed: `parent_key`)
    in a few fields: only those are rewritten. A step changes a handful of fields and the
    canonical re-placing moves a few records, while `pack` costs every live field. Exact
    because every field value lies within its packed width (model.py derives the widths
    from bounds on the reachable values; pack relies on the same)."""
    for w in range(key.shape[0]):
        key[w] = parent_key[w]
    for f in range(st.shape[0]):
        if st[f] != parent[f] and PK.width[f] > 0:
            w = PK.word[f]
            sh = PK.shift[f]
            key[w] = ((key[w] & ~(((1 << PK.width[f]) - 1) << sh))
                      | ((st[f] - PK.bias[f]) << sh))


@njit(**ENGINE)
def unpack(PK, key, st):
    for f in range(st.shape[0]):
        if PK.width[f] > 0:
            st[f] = ((key[PK.word[f]] >> PK.shift[f]) & ((1 << PK.width[f]) - 1)) + PK.bias[f]
        else:
            st[f] = PK.bias[f]


@njit(**ENGINE)
def hash_key(key):
    h = np.int64(-3750763034362895579)  # FNV offset basis, as int64
    for w in range(key.shape[0]):
        h ^= key[w]
        h *= np.int64(1099511628211)
        h ^= (h >> 29) & np.int64(0x7FFFFFFFF)
    return h


@njit(**ENGINE)
def find_or_insert(store, n_stored, table, key, limit):
    """Index of `key` in store, inserting it at n_stored if new; returns (index, is_new).

    A new state that would make more than `limit` states is not inserted: (-1, False).
    """
    mask = table.shape[0] - 1
    i = hash_key(key) & mask
    words = key.shape[0]
    while True:
        idx = table[i]
        if idx == EMPTY_SLOT:
            if n_stored >= limit:
                return -1, False
            for w in range(words):
                store[n_stored, w] = key[w]
            table[i] = n_stored
            return n_stored, True
        same = True
        for w in range(words):
            if store[idx, w] != key[w]:
                same = False
                break
        if same:
            return idx, False
        i = (i + 1) & mask


@njit(**ENGINE)
def rehash(store, n_stored, table):
    table[:] = EMPTY_SLOT
    mask = table.shape[0] - 1
    for idx in range(n_stored):
        i = hash_key(store[idx]) & mask
        while table[i] != EMPTY_SLOT:
            i = (i + 1) & mask
        table[i] = idx


@njit(**ENGINE)
def record(vrec, bits, depth, state_idx, action, det, vdet):
    """Remember the shallowest occurrence of each violation kind, the first one found among
    equals. Expanding level d finds state violations at depth d after step violations at
    depth d+1 may already have been recorded, so a later find replaces an earlier one when it
    is shallower: keeping the first would lose a kind at the minimal depth (issue 14).
    Row N_KINDS is the warning UNAWAITED_AT_EXIT (no detail: the trace's last state says it)."""
    for k in range(S.N_RECORDS):
        if bits & (1 << k) and (vrec[k, 0] == 0 or depth < vrec[k, 1]):
            vrec[k, 0] = 1
            vrec[k, 1] = depth
            vrec[k, 2] = state_idx
            vrec[k, 3] = action
            if k < S.N_KINDS:
                for j in range(S.DET_W):
                    vdet[k, j] = det[k * S.DET_W + j]


@njit(**ENGINE)
def merge_steps(T, F, st, tmp, det):
    """Take every step `por.mergeable` allows now, agent by agent, then the first in-flight
    landing or commit `por.independent_entry` allows, until none is left (a step that would
    report a violation is left to the search). por.merged_steps is the same loop in Python.
    All or nothing: when the checks would spend more work than is left (por.WORK_PER_FIELD;
    `expand` sets it per state), `st` goes back to the state it started from, and 1 is
    returned (else 0); that state is then stored and expanded as the unreduced search does."""
    n_agents = T.cfg[S.C_AGENTS]
    n_actions = n_agents + T.cfg[S.C_INFLIGHT]
    off = T.cfg[S.C_OFF_INF]
    W = F.work
    wk = W.shape[0] - 1
    nf = st.shape[0]
    if W[wk] < 0:
        return 1  # the state's merge work is spent: no check at all
    POR.merge_begin(F, st)
    moved = True
    while moved:
        moved = False
        if late():
            return POR.merge_end(F, st, True)
        for a in range(n_agents):
            if late():  # (plain Python: one round of checks over thousands of agents is long)
                return POR.merge_end(F, st, True)
            W[wk] -= 1
            if POR.mergeable(T, F, st, a):
                if S.step(T, st, a, tmp, det) != 0:
                    det[:] = -1
                else:
                    S.copy_state(T, tmp, st)
                    W[wk] -= POR.step_work(n_actions, nf)
                    moved = True
            if W[wk] < 0:
                return POR.merge_end(F, st, True)
        for j in range(T.cfg[S.C_INFLIGHT]):
            if st[off + j] == 0:
                break
            W[wk] -= 1
            taken = False
            if POR.independent_entry(T, F, st, j):
                if S.step(T, st, n_agents + j, tmp, det) != 0:
                    det[:] = -1
                else:
                    S.copy_state(T, tmp, st)
                    W[wk] -= POR.step_work(n_actions, nf)
                    moved = True
                    taken = True
            if W[wk] < 0:
                return POR.merge_end(F, st, True)
            if taken:
                break  # the entries moved up
    return POR.merge_end(F, st, False)


@njit(**ENGINE)
def expand(T, PK, SY, F, store, n_stored, table, parent, via, lo, hi, depth, vrec, vdet,
           check_only, max_states, counters, scratch, por):
    """Expand states lo..hi-1 (all at `depth`). Returns (status, next index, n_stored).

    Each successor is put into its canonical form under the `Symmetry` SY (agent classes and
    CTA renamings; checker/engines/symmetries.py) before it is looked up, so one state per orbit is stored. `scratch` is
    `scratch_arrays(model)` (nothing is allocated here: see ENGINE)."""
    n_agents = T.cfg[S.C_AGENTS]
    n_actions = n_agents + T.cfg[S.C_INFLIGHT]
    st, out, perm, tmp, key, det, sdet, local = scratch
    det[:] = -1
    capacity = store.shape[0]
    for i in range(lo, hi):
        if not check_only:
            if n_stored + n_actions > capacity or 2 * (n_stored + n_actions) > table.shape[0]:
                return NEED_ROOM, i, n_stored
        unpack(PK, store[i], st)
        if por:  # the merges of its successors share this much work (por.WORK_PER_FIELD)
            POR.set_work(F, POR.state_work(n_actions, st.shape[0]))
        enabled = 0
        for code in range(n_actions):
            if late():
                return LATE, i, n_stored
            bits = S.step(T, st, code, out, det)
            if bits < 0:
                continue
            if bits == S.INFLIGHT_FULL:
                return INFLIGHT_OVERFLOW, i, n_stored
            enabled += 1
            if check_only:
                if bits != 0:
                    det[:] = -1
                continue
            counters[0] += 1
            if bits != 0:
                record(vrec, bits, depth + 1, i, code, det, vdet)
                det[:] = -1
                if bits & S.TRAP:
                    counters[2] += 1
                    continue
            if por and bits == 0:  # after a violating step: the state as it is (its trace ends there)
                counters[3] += merge_steps(T, F, out, local, det)
            SYM.canonicalise_successor(T, SY, st, out, perm, tmp)
            repack(PK, st, store[i], out, key)
            idx, new = find_or_insert(store, n_stored, table, key, max_states)
            if idx < 0:
                return STATE_LIMIT, i, n_stored
            if new:
                parent[idx] = i
                via[idx] = code
                n_stored += 1
        for j in range(sdet.shape[0]):
            sdet[j] = -1
        sbits = S.state_violations(T, st, enabled, sdet)
        if sbits != 0:
            record(vrec, sbits, depth, i, -1, sdet, vdet)
        elif enabled == 0:
            counters[1] += 1  # a terminal state: every agent finished, nothing in flight
    return DONE, hi, n_stored


def scratch_arrays(model: Model):
    """Working arrays of `expand`: state, successor, permutation, records, key, details x2."""
    n, agents, kinds = model.n_fields, len(model.agents), S.N_KINDS * S.DET_W
    return (np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty(agents, dtype=np.int64), np.empty(agents * model.agf, dtype=np.int64),
            np.empty(model.words, dtype=np.int64), np.full(kinds, -1, dtype=np.int64),
            np.empty(kinds, dtype=np.int64), np.empty(n, dtype=np.int64))


def _table_size(cap: int) -> int:
    """A power of two (the probe mask needs it) at least twice the capacity: load <= 1/2."""
    return 1 << (2 * cap - 1).bit_length()


def _grown(arr, cap, fill):
    out = np.full((cap,) + arr.shape[1:], fill, dtype=arr.dtype)
    out[:arr.shape[0]] = arr
    return out


MEMORY_ENV = "PIPEPROOF_MEMORY_GB"


def memory_budget() -> int:
    """Bytes a state store may take: PIPEPROOF_MEMORY_GB, else half the machine's memory (a
    search past it stops inconclusive rather than swapping or being killed)."""
    try:
        return int(float(os.environ[MEMORY_ENV]) * 2**30)
    except (KeyError, ValueError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30


class StateStore:
    """The one state store of every search (this one and the lap abstraction's, prove.py):
    packed states of `words` int64 words, stored once in discovery order in `store`, an
    open-addressing `table` of their indices (load at most 1/2), and per state the `parent`
    it was first reached from and the action code it was reached `via`. The compiled loops
    insert with `find_or_insert` and return NEED_ROOM before they could overflow; `grow`
    makes the room."""

    def __init__(self, words: int, cap: int = 1 << 12):
        self.store = np.zeros((cap, words), dtype=np.int64)
        self.table = np.full(_table_size(cap), EMPTY_SLOT, dtype=np.int32)
        self.parent = np.full(cap, -1, dtype=np.int32)
        self.via = np.full(cap, -1, dtype=np.int16)
        self.n_stored = 0

    def grow(self, need: int = 0) -> bool:
        """Room for 1.5x the states (and again, until `need` fit); the table is rebuilt at
        twice the new capacity. False, and nothing changed, when that would take the store
        past the memory budget (`memory_budget()`): the search then stops, inconclusive."""
        cap = self.store.shape[0]
        cap += cap // 2
        while cap < need:
            cap += cap // 2
        if cap * (8 * self.store.shape[1] + 4 + 2) + 4 * _table_size(cap) > memory_budget():
            return False
        self.table = None  # free it before the bigger arrays are made
        self.store = _grown(self.store, cap, 0)
        self.parent = _grown(self.parent, cap, -1)
        self.via = _grown(self.via, cap, -1)
        self.table = np.full(_table_size(cap), EMPTY_SLOT, dtype=np.int32)
        rehash(self.store, self.n_stored, self.table)
        return True

    def path_to(self, idx: int) -> list[int]:
        """Action codes from the initial state to stored state `idx` (under symmetry: from
        each stored state on the path to a state whose canonical form is the next one)."""
        codes = []
        while self.parent[idx] >= 0:
            codes.append(int(self.via[idx]))
            idx = int(self.parent[idx])
        return codes[::-1]

    def index_path(self, idx: int) -> list[int]:
        """Stored indices from the initial state (0) to `idx`."""
        path = [idx]
        while self.parent[idx] >= 0:
            idx = int(self.parent[idx])
            path.append(idx)
        return path[::-1]


class Search(StateStore):
    """The explored state graph of one model, as far as the last `run` took it."""

    def __init__(self, model: Model, max_states: int | None = None, timeout: float | None = None,
                 progress: bool = False, symmetry: bool = True, por: bool = False,
                 cta_symmetry: bool | None = None):
        """`cta_symmetry` (default: `symmetry`) also renames the CTAs of a cluster that run
        the same programs (checker/engines/symmetries.py)."""
        super().__init__(model.words)
        self.model = model
        # Partial-order reduction reasons about signal values; its argument was made for the
        # signal models a backend record names (docs/reductions.md), so a backend with none
        # gets the full search.
        self.por = por and bool(model.caps.signal_model)
        self.future = POR.future_tables(model) if por else POR.no_future_tables(model)
        self.symmetry = symmetry
        self.sym = (SYM.symmetry(model, cta=symmetry if cta_symmetry is None else cta_symmetry)
                    if symmetry else SYM.no_symmetry(model))
        self.max_states = max_states or (1 << 62)
        self.timeout = timeout
        self.progress = progress
        self.reporter = PROGRESS.Reporter(progress, getattr(model.spec, "path", ""))
        self._chunk = 1  # states per call of `expand`, and the seconds one took (measured)
        self._per_state = 1e-3
        words = model.words
        self.vrec = np.zeros((S.N_RECORDS, 4), dtype=np.int64)
        self.vdet = np.full((S.N_KINDS, S.DET_W), -1, dtype=np.int64)
        # transitions, terminal states, traps, merges given up (por.WORK_PER_FIELD)
        self.counters = np.zeros(4, dtype=np.int64)
        self.scratch = scratch_arrays(model)
        self.limit = ""
        self.max_depth = 0
        key = np.zeros(words, dtype=np.int64)
        pack(model.packing, SYM.canonical(model, self.sym, model.initial_vector()), key)
        self.n_stored = find_or_insert(self.store, 0, self.table, key, 1)[0] + 1

    @property
    def transitions(self) -> int:
        return int(self.counters[0])

    @property
    def terminal_states(self) -> int:
        """States expanded with no step enabled and no violation: every agent finished."""
        return int(self.counters[1])

    @property
    def trapping_steps(self) -> int:
        return int(self.counters[2])

    def _expand_range(self, lo, hi, depth, check_only, started):
        """Expand lo..hi in chunks; returns '' or the reason a limit stopped it. The limits
        (time, Ctrl-C, memory, the hand-over) are looked at between chunks, and a chunk is
        sized by the time per state the last one took, to about CHUNK_SECONDS (and no later
        than the timeout), so a limit is seen within about that much of when it is reached,
        however slow a state is to expand (issue 32); --max-states is exact (find_or_insert)."""
        m = self.model
        i = lo
        while i < hi:
            n = self._chunk
            _DEADLINE[0] = float("inf")
            if self.timeout is not None:
                left = started + self.timeout - time.monotonic()
                n = max(1, min(n, int(left / self._per_state) + 1))
                _DEADLINE[0] = started + self.timeout
            t0 = time.monotonic()
            try:
                status, j, self.n_stored = expand(
                    m.tables, m.packing, self.sym, self.future, self.store, self.n_stored,
                    self.table, self.parent, self.via, i, min(hi, i + n), depth, self.vrec,
                    self.vdet, check_only, self.max_states, self.counters, self.scratch, self.por)
            except KeyboardInterrupt:  # Ctrl-C: a limit like any other, with the counts so far
                return INTERRUPTED
            finally:
                self.future.work[-1] = POR.NO_LIMIT  # merges outside a search: not counted
            now = time.monotonic()
            if j > i:
                self._per_state = max((now - t0) / (j - i), 1e-9)
                self._chunk = max(1, min(MAX_CHUNK, 4 * n, int(CHUNK_SECONDS / self._per_state)))
            i = j
            if status == NEED_ROOM:
                if not self.grow():
                    return f"memory budget {memory_budget() / 2**30:.1f} GB ({MEMORY_ENV})"
            elif status == STATE_LIMIT:
                return f"max-states {self.max_states}"
            elif status == INFLIGHT_OVERFLOW:
                return f"more than {m.inflight} copies/commits in flight (model capacity)"
            elif status == LATE:  # (plain Python only) the deadline, or the hand-over, came
                if HAND_OVER is not None and HAND_OVER.is_set():
                    return HANDED_OVER
                return f"timeout {self.timeout:g} s"
            if self.timeout is not None and now - started > self.timeout:
                return f"timeout {self.timeout:g} s"
            if HAND_OVER is not None and HAND_OVER.is_set():
                return HANDED_OVER
            self.reporter.tell(self.n_stored, depth, now)
        return ""

    def shallowest_seen(self):
        """(kinds, depth) of the shallowest violations recorded so far, or ([], None): after a
        limit, what was seen is real, though maybe not the shortest."""
        seen = [k for k in range(S.N_KINDS) if self.vrec[k, 0]]
        if not seen:
            return [], None
        d = int(min(self.vrec[k, 1] for k in seen))
        return [k for k in seen if self.vrec[k, 1] == d], d

    def found_at(self, depth) -> list[int]:
        return [k for k in range(S.N_KINDS) if self.vrec[k, 0] and self.vrec[k, 1] == depth]

    def run(self):
        """Explore; returns (kinds found at the minimal depth, that depth) or ([], None)."""
        started = time.monotonic()
        self.reporter.started = started
        lo, hi, depth = 0, self.n_stored, 0
        try:
            while lo < hi:
                self.max_depth = depth
                self.limit = self._expand_range(lo, hi, depth, False, started)
                if self.found_at(depth):
                    return self.found_at(depth), depth
                if self.limit:
                    # A violation already seen is real, though maybe not the shortest.
                    return self.shallowest_seen()
                if self.found_at(depth + 1):
                    self._expand_range(hi, self.n_stored, depth + 1, True, started)
                    self.max_depth = depth + 1
                    return self.found_at(depth + 1), depth + 1
                lo, hi, depth = hi, self.n_stored, depth + 1
            return [], None
        finally:
            self.reporter.done()

    def run_all(self):
        """Explore every reachable state (checker/engines/reachable.py), recording the shallowest
        occurrence of every kind, until nothing new is left or a limit (self.limit) stops it."""
        started = time.monotonic()
        lo, hi, depth = 0, self.n_stored, 0
        while lo < hi and not self.limit:
            self.max_depth = depth
            self.limit = self._expand_range(lo, hi, depth, False, started)
            lo, hi, depth = hi, self.n_stored, depth + 1
        self.reporter.done()

    def key_of(self, state) -> np.ndarray:
        """The packed key the search stores for a concrete state (its canonical form)."""
        key = np.zeros(self.model.words, dtype=np.int64)
        pack(self.model.packing, SYM.canonical(self.model, self.sym, state), key)
        return key

    def counterexample(self, k: int) -> list[int]:
        """Action codes of the shortest trace found for violation kind index k."""
        idx, action = int(self.vrec[k, 2]), int(self.vrec[k, 3])
        codes = self.path_to(idx)
        return codes + [action] if action >= 0 else codes

    def stored_vector(self, idx: int) -> np.ndarray:
        st = np.empty(self.model.n_fields, dtype=np.int64)
        unpack(self.model.packing, self.store[idx], st)
        return st
