"""Cluster and multi-ring exports (issue 18, goal 3): SPIN and Rumur check the same transition
system as pipeproof on specs with several CTAs and several rings.

- Generated specs (library templates at small cluster configurations, and hand-written specs
  with `to=peer`/`to=leader`/`to=all`, `ctas`, named barriers per CTA, a second ring with a
  try and a per-tile reset): SPIN and Rumur reach pipeproof's verdict; Rumur's kind is one
  pipeproof reports at the minimal depth; SPIN's (depth first) is one some path of the model
  reaches (checker/engines/reachable.py); on a spec that holds Rumur without symmetry stores exactly
  pipeproof's unreduced state count. The cluster and ring examples of spec/examples/ are run
  the same way by tests/test_export_models.py (they are in its EXPORTABLE list).
- The exports read the model's own rules: each update's and issue's destination CTAs are
  semantics.targets_mask's, groups never mix CTAs, every action on a ring names it, and the
  printed read check is semantics.read_miss for every CTA and ring, at each read's stage.
- With symmetry, agents interchangeable within one CTA are one scalarset per CTA, and Rumur
  reduces the cluster's states by at most their permutations.

Needs `spin`, `rumur` and a C compiler, like tests/test_export_models.py. Each tool run here is
a few seconds (compiled with -O0).
"""
from __future__ import annotations

import functools

import pytest
from click.testing import CliRunner

from pipeproof.checker.core import semantics as S
from pipeproof.checker.cli.export import export as export_command
from pipeproof.checker.models.ir import IR
from pipeproof.checker.models.exporter import run_rumur, to_murphi, to_promela
from pipeproof.checker.models.steps import (
    AwaitSignal, CheckRead, Issue, Store, Update, step_actions,
)
from pipeproof.checker.engines.reachable import reach
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec, load_spec_text
from tests.export_support import OPT, TIMEOUT, both_tools, check_printed_read_miss
from tests.paths import EXAMPLE_PATHS, example_path


def _template(name: str, **params) -> str:
    lines = ["[pipeline]", f'template = "{name}"', 'backend = "nvidia"']
    return "\n".join(lines + [f"{k} = {v}" for k, v in params.items()]) + "\n"


# The sm90_ring template without its end-of-kernel cluster sync (each role's epilogue emptied).
NO_EXIT_SYNC = """
[[role]]
name = "producer"
epilogue = []

[[role]]
name = "consumer"
epilogue = []
"""

THREE_CTAS = """
[pipeline]
name = "three CTAs: CTA 0 schedules, every CTA works"
backend = "nvidia"
cluster_size = 3
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 3
items = 2

[[role]]
name = "scheduler"
side = "producer"
count = 1
ctas = [0]
body = ["wait_empty", "expect_tx 16 to=all", "copy 16 to=all", "advance"]
epilogue = ["drain"]

[[role]]
name = "worker"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty to=leader", "advance"]
"""


def _peer(drain: bool) -> str:
    """Two CTAs; each CTA's consumer leader also releases the peer CTA's slot, after a named
    barrier of its CTA's two consumers. Without the producer's drain a CTA can exit before
    the peer's arrival on it (inflight_at_exit: an arrival into a gone CTA)."""
    return f"""
[pipeline]
name = "peer release{'' if drain else ', no drain'}"
backend = "nvidia"
cluster_size = 2
stages = 2
producer_arrive_count = 1
consumer_arrive_count = {3 if drain else 2}
items = 2

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]
{'epilogue = ["drain"]' if drain else ''}

[[role]]
name = "consumer"
side = "consumer"
count = 2
body = ["wait_full", "read", "sync pair", "arrive_empty", "arrive_empty to=peer @leader", "advance"]

[barrier.pair]
roles = ["consumer"]
"""


def _rings(every_item: bool) -> str:
    """A main ring filled by TMA copies and an accumulator ring `acc` (one stage) that the mma
    agent writes and an epilogue agent drains with try_full / wait_full unless=ready and a
    reset every 2 items. With the accumulator written only every other item, the epilogue
    reads an item that was never stored (read_before_fill)."""
    guard = "" if every_item else " every=2 at=1"
    return f"""
[pipeline]
name = "two rings{'' if every_item else ', acc every other item'}"
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 4

[ring.acc]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1

[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 64", "copy 64", "advance"]
epilogue = ["drain"]

[[role]]
name = "mma"
side = "consumer"
count = 1
initial_phase = {{ main = 0, acc = 1 }}
body = ["wait_full", "read", "arrive_empty", "advance", "wait_empty ring=acc{guard}", "write ring=acc{guard}",
        "arrive_full ring=acc{guard}", "advance ring=acc{guard}"]

[[role]]
name = "epi"
side = "consumer"
count = 1
items = {4 if every_item else 2}
body = ["try_full ring=acc", "wait_full ring=acc unless=ready", "read ring=acc", "arrive_empty ring=acc",
        "advance ring=acc", "reset ring=acc every=2 at=1"]
"""


# (name, spec text, pipeproof's verdict and kinds, its unreduced state count where it holds):
# pinned here so that a change of the rules shows; the exports must agree.
GENERATED = [
    ("cutlass_tma_async_K2_C1_N2_I2",
     _template("cutlass_tma_async", cluster_size=2, consumers=1, stages=2, items=2), ("ok",), 11477),
    ("cutlass_tma_async_K2_C2_N1_I2",
     _template("cutlass_tma_async", cluster_size=2, consumers=2, stages=1, items=2), ("ok",), 13705),
    ("mojo_input_tile_K2_k1_N2_I2",
     _template("mojo_input_tile", cluster_size=2, k_group_size=1, stages=2, items=2), ("ok",), 23385),
    ("sm90_ring_K2_C1_N2_I2",  # with the kernel's cluster sync before exit (ring `exit`)
     _template("sm90_ring", cluster_size=2, consumers=1, stages=2, items=2), ("ok",), 16410),
    ("sm90_ring_K2_C1_N2_I2_no_exit_sync",  # a release into the peer CTA after it exited
     _template("sm90_ring", cluster_size=2, consumers=1, stages=2, items=2) + NO_EXIT_SYNC,
     ("violation", "inflight_at_exit"), None),
    ("three_ctas", THREE_CTAS, ("ok",), 1483),
    ("peer_release", _peer(drain=True), ("ok",), 71229),
    ("peer_release_no_drain", _peer(drain=False), ("violation", "inflight_at_exit"), None),
    ("rings_try_reset", _rings(every_item=True), ("ok",), 3760),
    ("rings_acc_every_other_item", _rings(every_item=False), ("violation", "read_before_fill"), None),
]


def _spec(name):
    text = next(t for n, t, _, _ in GENERATED if n == name)
    return load_spec_text(text, f"{name}.toml")


@functools.lru_cache(maxsize=None)
def _ours(name):
    return verify(_spec(name), symmetry=False, por=False)


@pytest.mark.parametrize("name, text, expected, states", GENERATED, ids=[g[0] for g in GENERATED])
def test_spin_and_rumur_agree_on_clusters_and_rings(name, text, expected, states, tmp_path):
    spec = load_spec_text(text, f"{name}.toml")
    ours = _ours(name)
    assert (ours.verdict,) + tuple(ours.kinds) == expected
    spin, rumur = both_tools(spec, tmp_path)
    for run in (spin, rumur):
        assert run.verdict == ours.verdict, (
            f"{run.tool}: {run.verdict} ({run.kind}), pipeproof: {ours.verdict} {ours.kinds}\n"
            f"{run.output[-3000:]}")
    if ours.verdict == "ok":
        assert ours.states == states
        assert rumur.states == ours.states, "Murphi must store exactly pipeproof's states"
        assert spin.states >= ours.states  # plus SPIN's init and process-exit states
    else:
        assert rumur.kind in ours.kinds, (rumur.kind, ours.kinds, rumur.output[-2000:])
        assert spin.kind in reach(spec).kinds, (spin.kind, spin.output[-2000:])


def _cluster_and_ring_examples():
    out = []
    for path in EXAMPLE_PATHS:
        spec = load_spec(path)
        nested = any(op.tag_div > 1 for r in spec.roles for op in r.body)  # not exported yet
        if (spec.cluster_size > 1 or spec.rings) and spec.backend == "nvidia" and not nested:
            out.append(path.stem)  # async reads included (tests/test_export_async.py)
    return out


CLUSTER_AND_RING_EXAMPLES = _cluster_and_ring_examples()


def test_the_cluster_and_ring_examples_are_covered():
    # the examples the brief names are among them (tests/test_export_models.py runs the tools)
    assert {"cutlass_tma_async_cluster2", "mojo_input_tile_cluster2_k2", "x_cluster_ctas_ok",
            "x_cluster_item_mismatch_deadlock", "x_rings_scales_ok", "x_rings_acquire_order_deadlock",
            "bug_cutlass_no_producer_tail", "x_fa3_q_once_per_tile", "x_fa3_q_released_early"} \
        <= set(CLUSTER_AND_RING_EXAMPLES)
    assert "x_mojo_sm100_matmul" in CLUSTER_AND_RING_EXAMPLES  # three rings and async reads
    for name in CLUSTER_AND_RING_EXAMPLES:
        spec = load_spec(example_path(name))
        assert "proctype" in to_promela(spec) and "ruleset" in to_murphi(spec, symmetry=True)


def _specs_with_targets():
    return ([load_spec(example_path(n)) for n in CLUSTER_AND_RING_EXAMPLES]
            + [_spec(n) for n, *_ in GENERATED])


def test_destinations_are_the_model_s_targets():
    """Every update and issue lands on semantics.targets_mask's CTAs (the compiled rule)."""
    checked = 0
    for spec in _specs_with_targets():
        ir = IR(spec, "murphi")
        T = ir.model.tables
        for g in ir.groups:
            for p in range(g.length):
                row = T.agent[g.first, S.A_PROG] + p
                mask = S.targets_mask.py_func(T, g.first, T.prog[row, S.P_TARGET])
                want = tuple(c for c in range(ir.ctas) if mask >> c & 1)
                for act in step_actions(ir, g, p):
                    if isinstance(act, (Update, Issue)):
                        assert (act.to or (g.cta,)) == want, (spec.path, g.label, p, act)
                        checked += 1
    assert checked > 20


def test_groups_are_per_cta_and_actions_name_their_ring():
    ir = IR(load_spec(example_path("cutlass_tma_async_cluster2")), "murphi")
    assert [g.label for g in ir.groups] == ["cta0.producer", "cta1.producer", "cta0.consumer", "cta1.consumer"]
    for g in ir.groups:
        assert {ir.model.agents[a].cta for a in g.agents} == {g.cta}
    # a multicast copy is one entry per CTA; a release of every CTA one update per CTA
    producer = ir.groups[1]
    copy = next(a for p in range(producer.length) for a in step_actions(ir, producer, p) if isinstance(a, Issue))
    assert copy.to == (0, 1)
    consumer = ir.groups[3]
    release = [a for p in range(consumer.length) for a in step_actions(ir, consumer, p) if isinstance(a, Update)]
    assert [a.to for a in release] == [(0, 1)]
    text = to_murphi(ir.spec)
    assert "if cta_done(0) then error \"inflight_at_exit" in text  # CTA 1 aims at CTA 0
    # ring=acc ops act on ring 1, main ring ops on ring 0
    ir = IR(_spec("rings_try_reset"), "promela")
    epi = next(g for g in ir.groups if g.label == "epi")
    assert step_actions(ir, epi, 1)[0] == AwaitSignal(0, True, 1)
    assert any(a == CheckRead(-1, 1) for a in step_actions(ir, epi, 2))
    mma = next(g for g in ir.groups if g.label == "mma")
    stores = [a for p in range(mma.length) for a in step_actions(ir, mma, p) if isinstance(a, Store)]
    assert stores == [Store(-1, -1, 1)]  # a consumer-side write: every part of acc's slot
    pml = to_promela(ir.spec)
    assert "stage_acc[NAGENTS]" in pml and "wk_acc[" in pml and "ready_acc[NAGENTS]" in pml


READ_CHECK_SPECS = ["mojo_input_tile_cluster2_k2", "cutlass_tma_async_cluster2", "x_cluster_ctas_ok",
                    "x_fa3_q_once_per_tile", "x_rings_scales_ok"]


@pytest.mark.parametrize("name", READ_CHECK_SPECS + ["rings_try_reset", "three_ctas"])
def test_the_printed_read_check_is_read_miss_per_cta_and_ring(name):
    spec = load_spec(example_path(name)) if name in READ_CHECK_SPECS else _spec(name)
    assert check_printed_read_miss(IR(spec, "promela"))


def test_symmetry_is_per_cta(tmp_path):
    # two interchangeable consumers in each CTA: one scalarset per CTA; CTAs are not permuted
    spec = _spec("cutlass_tma_async_K2_C2_N1_I2")
    text = to_murphi(spec, symmetry=True)
    assert "ag_cta0_consumer_id: scalarset(2);" in text and "ag_cta1_consumer_id: scalarset(2);" in text
    run = run_rumur(spec, tmp_path, TIMEOUT, symmetry=True, opt=OPT)
    ours = _ours("cutlass_tma_async_K2_C2_N1_I2")
    assert run.verdict == "ok", run.output[-2000:]
    assert ours.states / 4 <= run.states < ours.states  # at most 2! x 2! orbits


def test_the_command_exports_a_cluster(tmp_path):
    example = str(example_path("x_cluster_ctas_ok"))
    out = CliRunner().invoke(export_command, ["--format", "murphi", "--symmetry", example])
    assert out.exit_code == 0 and "cta_done" in out.output and "CTAS: 2;" in out.output
    out = CliRunner().invoke(export_command, ["--format", "promela", str(example_path("x_rings_scales_ok"))])
    assert out.exit_code == 0 and "#define RINGS 2" in out.output
