"""Branches on data pipeproof does not know (a value loaded from global memory, a float): a
branch whose two sides do nothing the protocol sees is skipped to where they join, and every
register either side writes reads as unknown after it.

Why no violation is lost (docs/ptx.md, "Branches on unknown data"): the region between the
branch and its immediate post-dominator holds no synchronisation op, no call, no shared or
generic store (a global one goes through a pointer argument, memory the interpreter never
keeps; a module's own `.global` variables read as unknown after such a skip) and no exit, so every path through it records the same events (none) and leaves the
memory the interpreter keeps and the thread's control the same; the only difference between its paths is
the registers it writes, which become unknown, so a later branch, address or count that reads
them is refused as before rather than guessed. A side that ends in `trap` (a failed
assertion) is not a path to the join: the kernel's assertions are taken to hold.
"""
from __future__ import annotations

import networkx as nx

EXIT = -1
# the words that make an opcode a synchronisation op (spec/ptx/interp.py refuses one it does
# not read; here one in a branch's sides keeps the branch)
SYNC_WORDS = ("mbarrier", "cp.async", "tcgen05.commit", "bar.", "barrier", "clusterlaunchcontrol",
              "red.async", "st.async", "cp.reduce.async")
QUIET_CALLS = ("vprintf", "__assertfail")


def cfg(f) -> nx.DiGraph:
    """Instruction-level control flow of `f`; `ret`/`exit` go to EXIT, `trap` goes nowhere."""
    g = nx.DiGraph()
    g.add_node(EXIT)
    n = len(f.insts)
    for i, inst in enumerate(f.insts):
        g.add_node(i)
        w = inst.words[0]
        if w == "bra":
            g.add_edge(i, f.labels[inst.args[-1]] if f.labels[inst.args[-1]] < n else EXIT)
            if inst.guard is not None:
                g.add_edge(i, i + 1 if i + 1 < n else EXIT)
        elif w in ("ret", "exit"):
            g.add_edge(i, EXIT)
        elif w != "trap":
            g.add_edge(i, i + 1 if i + 1 < n else EXIT)
    return g


class Regions:
    """Per function: its post-dominator tree, and per branch the region's verdict."""

    def __init__(self, f):
        self.f = f
        self.g = cfg(f)
        rev = self.g.reverse(copy=False)
        self.ipdom = nx.immediate_dominators(rev, EXIT)
        self.memo = {}

    def skip(self, pc):
        """(join pc, registers written, whether it stores to global memory) for the data
        branch at `pc`, or a reason (str) why its sides cannot be skipped."""
        if pc not in self.memo:
            self.memo[pc] = self._skip(pc)
        return self.memo[pc]

    def _skip(self, pc):
        join = self.ipdom.get(pc)
        if join is None or join == EXIT:
            return "one side leaves the function"
        region, work = set(), list(self.g.successors(pc))
        while work:
            i = work.pop()
            if i == join or i in region:
                continue
            if i == EXIT:
                return "one side leaves the function"
            region.add(i)
            work += list(self.g.successors(i))
        written, stores = set(), False
        for i in sorted(region):
            inst = self.f.insts[i]
            why = quiet(inst)
            if why:
                return f"{why} at line {inst.index + 1}"
            written |= dests(inst)
            stores |= inst.words[0] in ("st", "stmatrix") and "global" in inst.words
        return join, frozenset(written), stores


def quiet(inst):
    """Why `inst` matters to the protocol (None: it does not)."""
    w = inst.words
    if w[0] == "call":
        if any(q in " ".join(inst.args) for q in QUIET_CALLS):
            return None
        return "a call"
    if w[0] in ("ret", "exit"):
        return "an exit"
    if any(s in inst.opcode for s in SYNC_WORDS) or w[0] in (
            "mbarrier", "cp", "tcgen05", "bar", "barrier", "fence", "membar", "elect", "shfl",
            "vote", "red", "atom", "wgmma", "setmaxnreg", "griddepcontrol", "clusterlaunchcontrol"):
        return f"`{inst.opcode}`"
    if w[0] in ("st", "stmatrix") and "global" not in w and "param" not in w:
        # shared and generic memory the interpreter keeps for later loads; a global store goes
        # through a pointer argument, whose memory it never keeps (spec/ptx/interp.py h_st)
        return f"a store to shared or generic memory (`{inst.opcode}`)"
    if w[0] in ("ld", "ldu") and "shared" in " ".join(w):
        return f"a shared-memory read (`{inst.opcode}`)"
    return None


def dests(inst) -> set:
    """The registers `inst` writes."""
    w = inst.words[0]
    if w in ("bra", "st", "prefetch", "prefetchu", "nanosleep", "trap", "call") or not inst.args:
        return set()
    d = inst.args[0].strip()
    if d.startswith("["):
        return set()
    if d.startswith("{"):
        return set(split_vec(d))
    return set(d.split("|"))


def split_vec(t):
    """The registers of a vector operand `{%r1, %r2}`."""
    return [x.strip() for x in t.strip()[1:-1].split(",") if x.strip()]


def regions_of(module, f) -> Regions:
    cache = module.__dict__.setdefault("_regions", {})
    if f.name not in cache:
        cache[f.name] = Regions(f)
    return cache[f.name]
