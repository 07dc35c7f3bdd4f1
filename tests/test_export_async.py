"""Async reads in the Promela and Murphi exports: `read_async` and `read_wait` print the explicit
engine's rules (checker/core/semantics.py step, fire_entry, reads_pending; checker/core/inflight.py).

- Each agent's async reads are in-flight entries naming the agent and their place in its FIFO;
  the oldest finishes at any later step; `read_wait n` is enabled while at most n of the
  agent's reads are in flight; a `commit_empty` waits for the agent's reads issued before it
  (it fires only after they finished) and for its earlier commits (rule R1, issue 31:
  tests/test_export_rules.py); an in-flight read is an unfinished read for
  overwrite_before_drain, and something in flight for inflight_at_exit; a read_async checks
  the slot when it is issued (read_before_fill).
- Small specs whose verdict those rules decide (ASYNC_SPECS, pinned: the explicit engine's
  verdict, kinds and unreduced state count, after rule R1: a commit names its agent and
  fires after the agent's earlier commits), the Mojo SM100 matmul template at small sizes and
  generated specs (tests/generators_expressive.py: async reads with read_wait and commits, a
  second ring, guards, barriers, clusters): SPIN and Rumur reach pipeproof's verdict; Rumur
  (breadth first) names a kind pipeproof reports at the minimal depth, SPIN (depth first) one
  some path reaches (checker/engines/reachable.py); on a spec that holds Rumur without symmetry stores
  exactly pipeproof's unreduced state count.
- With symmetry, a group whose agents issue async reads or commits is not a scalarset (an entry
  names its agent by number); the others still are.

Needs `spin`, `rumur` and a C compiler, like tests/test_export_models.py (they fail, never
skip, without them).
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from pipeproof.checker.models.ir import ENTRY_COMMIT, ENTRY_READ, IR
from pipeproof.checker.models.exporter import run_rumur, to_murphi, to_promela
from pipeproof.checker.models.steps import (
    AwaitReads, CheckRead, Issue, MovePc, step_actions,
)
from pipeproof.checker.core.program import EMPTY, OP_EFFECTS
from pipeproof.checker.engines.reachable import reach
from pipeproof.checker.results.result import KINDS
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests.export_support import OPT, TIMEOUT, agree, both_tools
from tests.generators_expressive import designs, expressive_with_counts, to_toml
from tests.paths import example_path


def _q(ops) -> str:
    return "[" + ", ".join(f'"{o}"' for o in ops) + "]"


def spec(name, stages, cac, items, producer, consumer, count=1, producer_epilogue=(),
         consumer_epilogue=(), cluster=1, more=""):
    """One ring: a producer and a consumer role of `count` agents (and `more` roles)."""
    return (f'[pipeline]\nname = "{name}"\nbackend = "nvidia"\nstages = {stages}\n'
            f"cluster_size = {cluster}\nproducer_arrive_count = 1\nconsumer_arrive_count = {cac}\n"
            f"items = {items}\n\n"
            f'[[role]]\nname = "producer"\nside = "producer"\ncount = 1\nbody = {_q(producer)}\n'
            + (f"epilogue = {_q(producer_epilogue)}\n" if producer_epilogue else "") + "\n"
            f'[[role]]\nname = "consumer"\nside = "consumer"\ncount = {count}\nbody = {_q(consumer)}\n'
            + (f"epilogue = {_q(consumer_epilogue)}\n" if consumer_epilogue else "") + "\n" + more)


TMA = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
WRITE = ["wait_empty", "write", "arrive_full", "advance"]
DRAIN = ("drain",)

# (name, spec text, the explicit engine's verdict and kinds, its unreduced state count):
# pinned so that a change of the rules shows; the exports must agree.
ASYNC_SPECS = [
    ("wait_then_release",  # wgmma.wait_group 0 before the release: correct
     spec("read_wait 0, then release", 2, 1, 3, TMA,
          ["wait_full", "read_async", "read_wait 0", "arrive_empty", "advance"], producer_epilogue=DRAIN),
     ("ok",), 163),
    ("commit_after_read",  # tcgen05.commit after the MMA: fires only when the read finished
     spec("commit after the read", 2, 1, 3, TMA, ["wait_full", "read_async", "commit_empty", "advance"],
          producer_epilogue=DRAIN),
     ("ok",), 264),
    ("commit_before_read",  # the commit does not wait for a read issued after it
     spec("commit before the read", 2, 1, 3, TMA, ["wait_full", "commit_empty", "read_async", "advance"],
          producer_epilogue=DRAIN),
     ("violation", "read_before_fill", "overwrite_before_drain"), None),
    ("release_before_wait",  # arrive_empty while the read is in flight, then read_wait
     spec("arrive before read_wait", 2, 1, 3, TMA,
          ["wait_full", "read_async", "arrive_empty", "read_wait 0", "advance"], producer_epilogue=DRAIN),
     ("violation", "overwrite_before_drain"), None),
    ("read_wait_missing",  # no read_wait at all: the slot is refilled under the read
     spec("no read_wait", 2, 1, 3, WRITE, ["wait_full", "read_async", "arrive_empty", "advance"]),
     ("violation", "overwrite_before_drain"), None),
    ("read_in_flight_at_exit",  # nothing overwrites (2 items, 2 stages); the last read outlives the CTA
     spec("read in flight at exit", 2, 1, 2, WRITE, ["wait_full", "read_async", "arrive_empty", "advance"]),
     ("violation", "inflight_at_exit"), None),
    ("read_wait_at_exit",  # the same, with wait_group 0 before exit
     spec("read_wait 0 at exit", 2, 1, 2, WRITE, ["wait_full", "read_async", "arrive_empty", "advance"],
          consumer_epilogue=("read_wait 0",)),
     ("ok",), 75),
    ("read_wait_1_releases_the_newest",  # wait_group 1 leaves this stage's read in flight
     spec("read_wait 1, then release", 2, 1, 4, TMA,
          ["wait_full", "read_async", "read_wait 1", "arrive_empty", "advance"], producer_epilogue=DRAIN,
          consumer_epilogue=("read_wait 0",)),
     ("violation", "overwrite_before_drain"), None),
    ("two_reads_fifo",  # read_wait 1 with two reads in flight waits for the older one
     spec("two reads, read_wait 1 then 0", 2, 1, 3, TMA,
          ["wait_full", "read_async", "read_async", "read_wait 1", "read_wait 0", "arrive_empty", "advance"],
          producer_epilogue=DRAIN),
     ("ok",), 258),
    ("read_async_unfilled",  # no wait_full: the read is checked when it is issued
     spec("read_async before the slot is full", 2, 1, 2, TMA,
          ["read_async", "read_wait 0", "arrive_empty", "advance"], producer_epilogue=DRAIN),
     ("violation", "read_before_fill"), None),
    ("two_umma_agents",  # two agents, two reads each, one commit each: commits wait per agent
     spec("two umma agents", 2, 2, 2, TMA, ["wait_full", "read_async", "read_async", "commit_empty", "advance"],
          count=2, producer_epilogue=DRAIN),
     ("ok",), 6827),
    ("two_wgmma_agents_wait_1",
     spec("two wgmma agents, read_wait 1", 1, 2, 2, WRITE,
          ["wait_full", "read_async", "read_wait 1", "arrive_empty", "advance"], count=2,
          consumer_epilogue=("read_wait 0",)),
     ("violation", "overwrite_before_drain"), None),
    ("sync_reader_commits",  # a commit by an agent without async reads beside an async reader
     spec("a synchronous reader commits, an async reader waits", 2, 2, 3, TMA,
          ["wait_full", "read_async", "read_wait 0", "arrive_empty", "advance"], producer_epilogue=DRAIN,
          more=('[[role]]\nname = "reader"\nside = "consumer"\ncount = 1\n'
                'body = ["wait_full", "read", "commit_empty", "advance"]\n')),
     ("ok",), 1603),
    ("cluster_commit_to_all",  # each CTA's umma commits to every CTA after its read
     spec("cluster: umma commits to every CTA", 2, 2, 2, TMA,
          ["wait_full", "read_async", "commit_empty to=all", "advance"], cluster=2, producer_epilogue=DRAIN),
     ("ok",), 44022),
    ("cluster_read_in_flight_at_exit",
     spec("cluster: read in flight at exit", 1, 1, 1, WRITE, ["wait_full", "read_async", "arrive_empty", "advance"],
          cluster=2),
     ("violation", "inflight_at_exit"), None),
]


def _sm100(extra: str = "", **params) -> str:
    lines = ["[pipeline]", 'template = "mojo_sm100_matmul"', 'backend = "nvidia"']
    return "\n".join(lines + [f"{k} = {v}" for k, v in params.items()]) + "\n" + extra


# The MMA warp of the template with its commit before its async read (the release does not
# wait for the read it should cover).
SM100_COMMIT_FIRST = """
[[role]]
name = "mma"
body = ["wait_empty ring=acc every=2 at=0", "wait_full", "write ring=acc every=2 at=0", "commit_empty",
        "read_async", "advance", "read_wait 0 every=2 at=1", "arrive_full ring=acc every=2 at=1",
        "advance ring=acc every=2 at=1"]
"""

SM100_SPECS = [
    ("sm100_C1_N2_I4", _sm100(consumers=1, stages=2, items=4), ("ok",), 12892),
    ("sm100_C2_N2_I4", _sm100(consumers=2, stages=2, items=4), ("ok",), 59124),
    ("sm100_C1_N2_I4_commit_first", _sm100(SM100_COMMIT_FIRST, consumers=1, stages=2, items=4),
     ("violation", "read_before_fill", "overwrite_before_drain"), None),
]

ALL_SPECS = ASYNC_SPECS + SM100_SPECS


@functools.lru_cache(maxsize=None)
def _spec(name):
    text = next(t for n, t, _, _ in ALL_SPECS if n == name)
    return load_spec_text(text, f"{name}.toml")


@functools.lru_cache(maxsize=None)
def _ours(name):
    return verify(_spec(name), symmetry=False, por=False)


def _agree(spec, ours, spin, rumur, spin_reach=True):
    """As export_support.agree; with `spin_reach` SPIN's kind must be one every-path
    search (checker/engines/reachable.py) finds, else only a kind (reach may not finish on a larger
    generated spec)."""
    agree(ours, spin, rumur, reach(spec).kinds if spin_reach else KINDS)


@pytest.mark.parametrize("name, text, expected, states", ALL_SPECS, ids=[s[0] for s in ALL_SPECS])
def test_spin_and_rumur_agree_on_async_reads(name, text, expected, states, tmp_path):
    ours = _ours(name)
    assert (ours.verdict,) + tuple(ours.kinds) == expected
    if states is not None:
        assert ours.states == states
    _agree(_spec(name), ours, *both_tools(_spec(name), tmp_path))


def test_the_specs_cover_every_kind_async_reads_decide():
    kinds = {k for _, _, expected, _ in ALL_SPECS for k in expected[1:]}
    assert kinds == {"read_before_fill", "overwrite_before_drain", "inflight_at_exit"}
    assert sum(e == ("ok",) for _, _, e, _ in ALL_SPECS) >= 6


# ------------------------------------------------------------------ the steps

def _steps_of(name):
    ir = IR(_spec(name), "promela")
    return ir, {(g.label, op.text or op.name): step_actions(ir, g, p)
                for g in ir.groups for p, (op, _) in enumerate(g.ops)}


def test_read_async_is_checked_then_issued():
    ir, steps = _steps_of("release_before_wait")
    acts = steps["consumer", "read_async"]
    assert acts[:3] == [CheckRead(-1), Issue(ENTRY_READ, -1, -1, 0, None), MovePc()]
    assert acts[1].names_agent and not acts[1].after_reads
    assert steps["consumer", "read_wait 0"][:2] == [AwaitReads(0), MovePc()]
    assert ir.has_reads and ir.eag == ir.n_agents and ir.esq == ir.inflight + 1
    assert [d for d, _ in ir.entry_digits()][-2:] == ["agent", "seq"]  # no commits: no cseq


def test_a_commit_waits_only_for_its_own_agent_s_reads():
    ir, steps = _steps_of("sync_reader_commits")
    # the async reader's group has no commit; the synchronous reader's commit names its agent
    # (its later commits wait for it) but counts no reads
    commit = next(a for a in steps["reader", "commit_empty"] if isinstance(a, Issue))
    assert commit == Issue(ENTRY_COMMIT, EMPTY, None, 1, None) and commit.names_agent
    text = to_promela(ir.spec)
    reader = text[text.index("proctype ag_reader()"):]
    assert "nc_ = COMMITS_IN_FLIGHT(ME)" in reader and "nr_ = READS_IN_FLIGHT(ME)" not in reader
    ir, steps = _steps_of("commit_after_read")
    commit = next(a for a in steps["consumer", "commit_empty"] if isinstance(a, Issue))
    assert commit.after_reads and commit.names_agent
    pml, murphi = to_promela(ir.spec), to_murphi(ir.spec)
    assert "nr_ = READS_IN_FLIGHT(ME)" in pml and "nc_ = COMMITS_IN_FLIGHT(ME)" in pml
    assert "reads_in_flight(1)" in murphi and "commits_in_flight(1)" in murphi
    # it fires once its seq (reads) and cseq (earlier commit entries) are both 0
    assert ir.ready_unit() == "ESQ*ECS" and "inflight[0] % (ESQ*ECS) == 0 -> land(0)" in pml


def test_read_wait_without_async_reads_never_waits():
    # a program that has read_wait but issues no async reads: the wait is always enabled
    text = spec("read_wait, no reads", 1, 1, 2, WRITE, ["wait_full", "read", "read_wait 0", "arrive_empty",
                                                        "advance"])
    ir = IR(load_spec_text(text, "x.toml"), "murphi")
    g = next(g for g in ir.groups if g.label == "consumer")
    assert not ir.inflight and step_actions(ir, g, 2) == [MovePc()]
    assert not ir.has_reads and "reads_in_flight" not in to_murphi(ir.spec)


def test_an_in_flight_read_is_an_unfinished_read_in_both_languages():
    spec_ = _spec("release_before_wait")
    pml, murphi = to_promela(spec_), to_murphi(spec_)
    # reads_pending: a read of tag T by agent B from stage S still in flight counts
    assert ("inflight[k_] / (ESQ) == (((3*STAGES + (S))*EV + (T) + 1)*ENB)*EAG + (B) -> rp_ = 1" in pml)
    assert "read_in_flight(1, s, slot_tag[s]) | reads_pending_ag_consumer(" in murphi
    # the oldest read alone may finish; finishing one re-sorts the entries
    assert "inflight[j] != 0 & inflight[j] % (ESQ) = 0" in murphi and "finish_read(ag);" in murphi
    assert "inflight[0] != 0 && inflight[0] % (ESQ) == 0 -> land(0)" in pml and "finish_read(ag_)" in pml


def test_symmetry_leaves_async_readers_numbered(tmp_path):
    # two agents that read asynchronously are not a scalarset: their entries name them
    spec_ = _spec("two_umma_agents")
    text = to_murphi(spec_, symmetry=True)
    assert "ag_consumer_id: 0..1;" in text and "scalarset" not in text
    (tmp_path / "a").mkdir()
    run = run_rumur(spec_, tmp_path / "a", TIMEOUT, symmetry=True, opt=OPT)
    assert (run.verdict, run.states) == ("ok", _ours("two_umma_agents").states), run.output[-2000:]
    # the template's epilogue agents read synchronously: still a scalarset, and Rumur reduces
    spec_ = _spec("sm100_C2_N2_I4")
    text = to_murphi(spec_, symmetry=True)
    assert "ag_epilogue_id: scalarset(2);" in text and "ag_mma_id: 0..0;" in text
    (tmp_path / "b").mkdir()
    run = run_rumur(spec_, tmp_path / "b", TIMEOUT, symmetry=True, opt=OPT)
    ours = _ours("sm100_C2_N2_I4")
    assert run.verdict == "ok", run.output[-2000:]
    assert ours.states / 2 <= run.states < ours.states  # at most 2! orbits


# ------------------------------------------------------------------ generated specs
# The expressive generator (tests/generators_expressive.py) draws async reads with read_wait 0,
# read_wait 1 after a release, and commits, beside a second ring, guards, barriers and clusters.
# A fixed sample (derandomized) runs under both tools.

def _differential(text: str):
    spec_ = load_spec_text(text, "generated.toml")
    ours = verify(spec_, symmetry=False, por=False)
    assert ours.verdict in ("ok", "violation"), ours.limit
    with tempfile.TemporaryDirectory() as d:
        _agree(spec_, ours, *both_tools(spec_, Path(d)), spin_reach=False)


# No shrinking: each example runs both tools, and the failing spec is printed as drawn.
GENERATED = settings(max_examples=20, deadline=None, database=None, derandomize=True,
                     phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))


# 20 generated specs through both tools take about 25 s: the fast suite runs 6, `pytest -m slow` 20
EXAMPLES = [6, pytest.param(20, marks=pytest.mark.slow)]


@pytest.mark.parametrize("examples", EXAMPLES)
def test_generated_expressive_specs_agree(examples):
    @settings(GENERATED, max_examples=examples)
    @given(designs().map(to_toml))
    def check(text):
        _differential(text)
    check()


@pytest.mark.parametrize("examples", EXAMPLES)
def test_generated_expressive_specs_with_several_consumers_agree(examples):
    # one CTA: with two CTAs of 2 or 3 consumers each, Rumur's unreduced search outgrows the budget
    @settings(GENERATED, max_examples=examples)
    @given(expressive_with_counts().filter(lambda text: "cluster_size = 1" in text))
    def check(text):
        _differential(text)
    check()


def test_the_async_examples_export():
    # the examples with async reads are exported (tests/test_export_models.py runs them)
    for name in ("x_async_read_ok", "x_async_release_before_wait", "x_mojo_sm100_matmul"):
        spec_ = load_spec(example_path(name))
        assert any(OP_EFFECTS[op.name].issues == "read" for r in spec_.roles for op in r.body)
        assert "READS_IN_FLIGHT" in to_promela(spec_) and "reads_in_flight" in to_murphi(spec_)
