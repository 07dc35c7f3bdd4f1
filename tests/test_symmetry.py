"""Symmetry reduction (issue 6 part 1): interchangeable agents are stored once per orbit.

- Which agents are interchangeable: same role, same CTA, same program; agent 0 of a role with
  a `@leader` op is distinguished.
- The canonical form is a canonical form: every permutation of a reachable state (agent
  records and the agent numbers inside in-flight entries) has the same one, and it is a state
  of the same orbit; steps commute with permutations (everything that reads an agent's
  identity is permuted consistently).
- With and without symmetry: the same verdict, kinds and minimal depth on generated specs
  (both generators, tests/generators.py and tests/generators_expressive.py, the expressive
  one with several agents per role so async reads and waiting commits carry agent numbers
  that must be renamed), never more states with it, and its counterexamples are real interleavings of concrete agents that
  the independent replayer accepts.
- `pipeproof verify --no-symmetry` stores every state.
"""
from __future__ import annotations

import random
import re

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings

from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.cli.main import main as cli_main
from pipeproof.checker.engines.explore import Search
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests import generators as G
from tests.generators_expressive import expressive_with_counts
from tests.replay import replay
from tests.specs import ASYNC_THREE, THREE_CONSUMERS, standard_toml

MAX_STATES = 30_000


def _classes(text):
    return [tuple(r) for r in SYM.classes(compile_model(load_spec_text(text, "s.toml"))).tolist()]


# ------------------------------------------------------------------------------------------
# classes


def test_classes_of_the_standard_pipeline():
    # producer[0] is agent 0, consumers 1..3
    assert _classes(standard_toml(consumers=3)) == [(1, 4)]
    assert _classes(standard_toml(consumers=1)) == []


def test_leader_of_a_role_with_leader_ops_is_distinguished():
    text = standard_toml(consumers=3, consumer_body=["wait_full", "read", "arrive_empty @leader",
                                                     "advance"], consumer_count=1)
    assert _classes(text) == [(2, 4)]  # consumer[0] runs the @leader op: alone
    two = standard_toml(consumers=2, consumer_body=["wait_full", "arrive_empty @leader", "advance"],
                        consumer_count=1)
    assert _classes(two) == []


def test_classes_lie_within_one_cta():
    text = ('[pipeline]\nbackend = "nvidia"\nstages = 2\ncluster_size = 2\nitems = 2\n'
            'producer_arrive_count = 1\nconsumer_arrive_count = 2\n'
            '[[role]]\nname = "p"\nside = "producer"\ncount = 1\n'
            'body = ["wait_empty", "write", "arrive_full", "advance"]\n'
            '[[role]]\nname = "c"\nside = "consumer"\ncount = 2\n'
            'body = ["wait_full", "read", "arrive_empty to=peer", "advance"]\n')
    model = compile_model(load_spec_text(text, "c.toml"))
    assert [a.name for a in model.agents] == ["cta0.p[0]", "cta1.p[0]", "cta0.c[0]", "cta0.c[1]",
                                              "cta1.c[0]", "cta1.c[1]"]
    assert SYM.classes(model).tolist() == [[2, 4], [4, 6]]


# ------------------------------------------------------------------------------------------
# the canonical form, on every reachable state of small specs (tests/specs.py's
# THREE_CONSUMERS: async reads, a named barrier with try_full, plain writes)


def permute(model, state, sigma):
    """Apply an agent permutation (sigma[old] = new) to a state vector, as the canonical form
    must see it: records move, agent numbers in entries are renamed, entries re-sorted."""
    st = np.array(state, dtype=np.int64)
    out = st.copy()
    agf = model.agf
    for old, new in enumerate(sigma):
        out[new * agf:(new + 1) * agf] = st[old * agf:(old + 1) * agf]
    sh, mask = model.entry_fields[S.E_AGENT]
    entries = []
    for e in model.inflight_entries(st):
        a = SYM.refers_to(model.tables, np.int64(e))
        if a >= 0:
            e = (e & ~(mask << sh)) | (sigma[a] << sh)
        entries.append(int(e))
    entries.sort(reverse=True)
    out[model.off_inf:model.off_inf + model.inflight] = entries + [0] * (model.inflight - len(entries))
    return out


def permutations_of(classes, n_agents, rnd, k):
    """k random agent permutations that stay within each class."""
    for _ in range(k):
        sigma = list(range(n_agents))
        for lo, hi in classes:
            part = sigma[lo:hi]
            rnd.shuffle(part)
            sigma[lo:hi] = part
        yield sigma


@pytest.mark.parametrize("name", sorted(THREE_CONSUMERS))
def test_canonical_form_is_one_per_orbit_and_steps_commute(name):
    model = compile_model(load_spec_text(THREE_CONSUMERS[name], f"{name}.toml"))
    classes = SYM.classes(model)
    assert classes.shape[0] == 1
    search = Search(model, symmetry=False)
    kinds, _ = search.run()
    assert not kinds and not search.limit
    rnd = random.Random(6)
    n = len(model.agents)
    renamed = 0
    commute = set(rnd.sample(range(search.n_stored), min(300, search.n_stored)))
    for idx in range(search.n_stored):
        state = search.stored_vector(idx)
        canon = SYM.canonical(model, classes, state)
        # the canonical form is its own canonical form, and every permutation has it
        assert np.array_equal(SYM.canonical(model, classes, canon), canon)
        for sigma in permutations_of(classes.tolist(), n, rnd, 2):
            moved = permute(model, state, sigma)
            assert np.array_equal(SYM.canonical(model, classes, moved), canon)
        renamed += any(SYM.refers_to(model.tables, np.int64(e)) >= 0
                       for e in model.inflight_entries(state))
        if idx not in commute:
            continue
        # a step of agent a is the step of sigma[a] in the permuted state; an entry's step
        # is the step of the same (renamed) entry, wherever it sorts
        sigma = next(permutations_of(classes.tolist(), n, rnd, 1))
        moved = permute(model, state, sigma)
        assert np.array_equal(SYM.canonical(model, classes, moved), canon)
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(tuple(state.tolist()), code)
            if code < n:
                code2 = sigma[code]
            elif state[model.off_inf + code - n] == 0:
                code2 = code  # no such entry: disabled in both
            else:
                entries = moved[model.off_inf:model.off_inf + model.inflight].tolist()
                code2 = n + entries.index(
                    permute_entry(model, state[model.off_inf + code - n], sigma))
            nxt2, bits2, _ = model.apply(tuple(moved.tolist()), code2)
            assert (nxt is None) == (nxt2 is None) and bits == bits2
            if nxt is not None and not bits & S.TRAP:
                assert np.array_equal(permute(model, nxt, sigma), np.array(nxt2))
    if name == "async":
        assert renamed > 100  # states with entries naming agents, renamed above


def permute_entry(model, e, sigma):
    a = SYM.refers_to(model.tables, np.int64(e))
    if a < 0:
        return int(e)
    sh, mask = model.entry_fields[S.E_AGENT]
    return int((int(e) & ~(mask << sh)) | (sigma[a] << sh))


@pytest.mark.parametrize("name", sorted(THREE_CONSUMERS))
def test_states_stored_are_the_orbits(name):
    """With symmetry the search stores exactly the orbits of the states it stores without."""
    model = compile_model(load_spec_text(THREE_CONSUMERS[name], f"{name}.toml"))
    full = Search(model, symmetry=False)
    full.run()
    reduced = Search(model, symmetry=True)
    reduced.run()
    classes = SYM.classes(model)
    orbits = {tuple(SYM.canonical(model, classes, full.stored_vector(i)).tolist())
              for i in range(full.n_stored)}
    stored = {tuple(reduced.stored_vector(i).tolist()) for i in range(reduced.n_stored)}
    assert stored == orbits
    assert reduced.n_stored < full.n_stored


# ------------------------------------------------------------------------------------------
# with and without symmetry: the same answers


def same_answers(spec):
    on = verify(spec, max_states=MAX_STATES, symmetry=True)
    off = verify(spec, max_states=MAX_STATES, symmetry=False)
    G.check_result(spec, on)  # verdict invariants; every trace replays in the replayer
    if not on.limit and not off.limit:
        assert (on.verdict, on.kinds, on.depth) == (off.verdict, off.kinds, off.depth)
        assert on.states <= off.states and on.transitions <= off.transitions
    elif on.verdict == "violation" and off.verdict == "violation" and not off.limit:
        # a limit may cut the run without symmetry only: it saw the violation, not the orbit
        assert (on.kinds, on.depth) == (off.kinds, off.depth)
    if not off.limit:
        assert not on.limit  # the reduced space is never bigger
    return on, off


# 150 generated specs take about 25 s: the fast suite checks 50, `pytest -m slow` 150
@pytest.mark.parametrize("examples", [50, pytest.param(150, marks=pytest.mark.slow)])
def test_generated_specs_same_verdict_with_and_without_symmetry(examples):
    @settings(max_examples=examples, **G.SETTINGS)
    @given(G.designs())
    def check(design):
        same_answers(G.load(design))
    check()


@settings(max_examples=60, **G.SETTINGS)
@given(expressive_with_counts())
def test_expressive_specs_same_verdict_with_and_without_symmetry(text):
    same_answers(load_spec_text(text, "generated.toml"))


def test_expressive_generator_with_counts_reaches_reductions_and_renames():
    """The test above is not vacuous: symmetry reduces, async reads of several agents occur,
    and both ok and violations come out."""
    seen = set()

    @settings(max_examples=60, **G.SETTINGS)
    @given(expressive_with_counts())
    def collect(text):
        spec = load_spec_text(text, "generated.toml")
        on = verify(spec, max_states=MAX_STATES)
        off = verify(spec, max_states=MAX_STATES, symmetry=False)
        seen.add(on.verdict)
        if not on.limit and not off.limit and on.states < off.states:
            seen.add("reduced")
            if "read_async" in text:
                seen.add("reduced with async reads")

    collect()
    assert {"ok", "violation", "reduced", "reduced with async reads"} <= seen, seen


# ------------------------------------------------------------------------------------------
# counterexamples under symmetry are concrete


def test_counterexample_moves_concrete_agents():
    """Three consumers, release count 2 (a slot is refilled while one has not read it): the
    trace names concrete agents, replays, and has the minimal length found without symmetry."""
    text = standard_toml(stages=1, consumers=3, items=3, consumer_count=2)
    spec = load_spec_text(text, "too_few.toml")
    on, off = same_answers(spec)
    assert on.verdict == "violation" and on.kinds == off.kinds and on.depth == off.depth
    for kind, trace in on.traces.items():
        outcome = replay(spec, trace.to_json())
        assert kind in outcome.kinds
        actors = {s.actor for s in trace.steps}
        assert actors <= {"producer[0]", "consumer[0]", "consumer[1]", "consumer[2]"}


def test_traces_are_deterministic_under_symmetry():
    spec = load_spec_text(ASYNC_THREE.replace("consumer_arrive_count = 3",
                                              "consumer_arrive_count = 2"), "a.toml")
    a, b = verify(spec), verify(spec)
    assert a.verdict == "violation"
    assert {k: t.to_json() for k, t in a.traces.items()} == {k: t.to_json() for k, t in b.traces.items()}
    for kind, trace in a.traces.items():
        assert kind in replay(spec, trace.to_json()).kinds


# ------------------------------------------------------------------------------------------
# the command line


def test_cli_no_symmetry_flag(tmp_path):
    path = tmp_path / "three.toml"
    path.write_text(standard_toml(stages=2, consumers=3, items=2))
    spec = load_spec_text(path.read_text(), str(path))
    # unreduced: the partial-order reduction leaves this spec a handful of states either way
    on, off = verify(spec, por=False).states, verify(spec, por=False, symmetry=False).states
    assert on < off
    runner = CliRunner()
    for flags, states in (([], on), (["--no-symmetry"], off)):
        res = runner.invoke(cli_main, ["verify", str(path), "--no-por", *flags])
        assert res.exit_code == 0, res.output
        assert f": ok ({states} states," in res.output, res.output
