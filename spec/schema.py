"""The loaded, validated form of a spec file: plain frozen dataclasses.

Everything downstream (the model compiler, the exporters, the GPU generator) reads these,
never the TOML dictionaries. `spec.load` builds them and is the only place that validates.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeproof.spec.ops import OP_EFFECTS, OPS  # noqa: F401  (OPS re-exported: the op names)

# Ops that act on a ring's current slot, signals or stage, and so take `ring=NAME`.
RING_OPS = tuple(n for n, e in OP_EFFECTS.items()
                 if e.observes >= 0 or e.updates >= 0 or e.stores or e.checks_read or e.move)
MAIN_RING = "main"  # the ring of [pipeline]
TARGETS = ("self", "leader", "peer", "all")
from pipeproof.backends.capabilities import BACKEND_NAMES as BACKENDS  # noqa: E402 (the seam)
SIDES = ("producer", "consumer")
TX_LIMIT = (1 << 20) - 1  # mbarrier tx-count range is +-(2^20 - 1)
MAX_COUNT = (1 << 20) - 1  # mbarrier expected-count range is 1 .. 2^20 - 1


class SpecError(Exception):
    """Bad input. str() is one line: `FILE: KEY: what is wrong (what is allowed)`."""


@dataclass(frozen=True)
class Op:
    name: str                 # one of OPS
    n: int = 1                # arrive/commit count, or bytes for expect_tx/copy
    to: str = "self"          # one of TARGETS (arrive_*, expect_tx, copy, commit_empty)
    leader_only: bool = False  # "@leader": only agent 0 of the role in each CTA runs it
    unless_ready: bool = False  # "wait_full unless=ready"
    barrier: str = ""         # for "sync NAME"
    ring: str = MAIN_RING     # ring=NAME: which ring's stage, phase, slot and signals
    every: int = 1            # every=K: the op runs only in items with item % K == at
    at: int = 0               # at=j (0 <= j < every)
    ahead: int | None = None  # ahead=K (fills): the fill is for the item K after the agent's
                              # (in the prologue: item K); None: the section's own tag
    text: str = ""            # the op as written, for messages
    tag_div: int = 1          # nested loops: the body item divided by this is the tag (an op on
                              # a tile-level ring in a role of k_blocks = K: tag = item // K)
    loop_section: str = ""    # nested loops: tile_prologue / tile_epilogue when lowered from one

    def __str__(self) -> str:
        return self.text or self.name


SECTIONS = ("prologue", "body", "epilogue")
# Nested loops (docs/model.md "Nested loops"): per-tile sections, lowered into the body with
# every=K at=0 / at=K-1 guards by spec.load_loops.
TILE_SECTIONS = ("tile_prologue", "tile_epilogue")
LEVELS = ("k_block", "tile")  # a ring's loop level: tags are k-block items or tile numbers
FILL_OPS = tuple(n for n, e in OP_EFFECTS.items() if e.stores)       # store a tag into a slot
READ_OPS = tuple(n for n, e in OP_EFFECTS.items() if e.checks_read)  # check a slot's tag


SIGNAL_KINDS = ("full", "empty")  # kind 0 and kind 1 (backends.base FULL and EMPTY)


@dataclass(frozen=True)
class Ring:
    """A ring of `stages` slots with full/empty signals: [pipeline] is "main", [ring.NAME] more."""
    name: str
    stages: int
    producer_arrive_count: int
    consumer_arrive_count: int
    level: str = "k_block"    # nested loops: "tile" rings hold per-tile data (tags are tiles)

    def expected(self, kind) -> int:
        """The arrival count a signal of this kind expects per phase (its mbarrier init count;
        amd: the arrivals per lap): `kind` is 0 / "full" or 1 / "empty"."""
        if isinstance(kind, str):
            kind = SIGNAL_KINDS.index(kind)
        return self.producer_arrive_count if kind == 0 else self.consumer_arrive_count


def targets(ctas: int, cta: int, to: str) -> tuple[int, ...]:
    """The CTAs an op of an agent in `cta` lands on, in a cluster of `ctas`: its own (self, or
    any op in a one-CTA cluster), CTA 0 (leader), the next one round the cluster (peer), every
    one (all). checker/core/semantics.py interprets the same rule compiled (T_SELF .. T_ALL)."""
    if ctas == 1 or to == "self":
        return (cta,)
    return {"leader": (0,), "peer": ((cta + 1) % ctas,), "all": tuple(range(ctas))}[to]


@dataclass(frozen=True)
class Role:
    name: str
    side: str                 # "producer" | "consumer"; only sets the default initial phase
    count: int                # agents per CTA
    items: int                # body iterations per agent
    initial_stage: int
    initial_phase: int
    prologue: tuple[Op, ...] = ()
    body: tuple[Op, ...] = ()
    epilogue: tuple[Op, ...] = ()
    ctas: tuple[int, ...] = ()          # CTAs the role exists in; empty: every CTA
    ring_phases: tuple[tuple[str, int], ...] = ()  # initial phase per extra ring (loader fills all)
    tiles: int | None = None            # nested loops: work tiles per agent (None: a flat spec)
    k_blocks: int = 1                   # nested loops: k-blocks per tile (items = tiles * k_blocks)

    def initial_phase_of(self, ring: str) -> int:
        return dict(self.ring_phases).get(ring, self.initial_phase) if ring != MAIN_RING else self.initial_phase

    @property
    def never_steps(self) -> bool:
        """No agent of the role has an op to run (legal, but seldom what was meant)."""
        return not self.prologue and not self.epilogue and (not self.body or self.items == 0)


@dataclass(frozen=True)
class Barrier:
    name: str
    roles: tuple[str, ...]
    count: int | None = None  # explicit arrival count per CTA, else agents of `roles` in the CTA


@dataclass(frozen=True)
class Spec:
    path: str                 # file the spec came from (for messages)
    name: str
    backend: str              # "nvidia" | "amd"
    stages: int
    producer_arrive_count: int
    consumer_arrive_count: int
    items: int
    roles: tuple[Role, ...]
    k_group_size: int = 1
    cluster_size: int = 1
    barriers: tuple[Barrier, ...] = ()
    rings: tuple[Ring, ...] = ()        # [ring.NAME] tables, sorted by name (the main ring excluded)
    expect: str | None = None
    expect_any: tuple[str, ...] = ()
    template: str | None = None
    description: str = ""
    tiles: int | None = None            # nested loops: [pipeline] tiles (None: a flat spec)
    k_blocks: int = 1                   # nested loops: [pipeline] k_blocks
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def all_rings(self) -> tuple[Ring, ...]:
        """The main ring first, then the [ring.NAME] rings: ring index i in the model."""
        return (Ring(MAIN_RING, self.stages, self.producer_arrive_count,
                     self.consumer_arrive_count),) + tuple(self.rings)

    def fill_sections(self, ring: str) -> tuple[str, ...]:
        """The sections (prologue, body, epilogue) in which some role fills `ring` with the
        section's own tags: a prologue fill with ahead=K fills item K, as the body does."""
        filled = {"body" if op.ahead is not None else sec
                  for r in self.roles for sec in SECTIONS for op in getattr(r, sec)
                  if op.name in FILL_OPS and op.ring == ring}
        return tuple(sec for sec in SECTIONS if sec in filled)

    def read_pairs_with(self, section: str, ring: str) -> str | None:
        """The pairing rule: whose fill a read in `section` of `ring` expects.

        Every fill stores a tag: a body fill its item number, a prologue or an epilogue fill a
        tag of its own, distinct from every item (checker/core/model.py `tag_of`). A read expects
        - the fill of its own section, when some role fills the ring there (a body read at
          item i: item i), or when nothing fills the ring at all;
        - else the prologue's, when the prologue is the latest section before the read's that
          fills the ring ("Q is loaded once, before the K/V loop, and read in every item");
        - else its own section's, when no section before it fills the ring (the read comes
          before every fill: read_before_fill).
        None: an epilogue read of a ring the body fills and the epilogue does not (which
        item's fill it means is not said; the loader rejects it)."""
        fills = self.fill_sections(ring)
        if section in fills or not fills:
            return section
        earlier = [sec for sec in SECTIONS[:SECTIONS.index(section)] if sec in fills]
        if not earlier:
            return section
        return "prologue" if earlier[-1] == "prologue" else None

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(name)
