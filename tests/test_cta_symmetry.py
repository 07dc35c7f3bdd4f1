"""CTA symmetry (issue 18): CTAs of a cluster that run the same programs are renamed into one
canonical form (checker/engines/symmetries.py `cta_automorphisms`, `permute_ctas`, `cta_least`).

- Which renamings: every permutation when only `to=self`/`to=all` targets are used, those
  fixing CTA 0 with `to=leader`, rotations with `to=peer`, none when a role runs in some CTAs
  only; rotations alone above 4 CTAs.
- A renaming is an automorphism of the transition system: written here a second time from the
  model's views (agents by role, index and CTA; slot parts by their fills), it equals
  `permute_ctas`, and every step of a state is a step of the renamed state, to the renamed
  successor with the same violation bits.
- The canonical form is one per orbit: every renaming of a reachable state has it, and the
  search with CTA symmetry stores exactly the orbits of the states stored without it.
- With and without it: the same verdict, kinds and minimal depth on generated cluster specs
  (benchmarks/soundness.py's generator), never more states; traces replay.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from benchmarks import soundness as H
from pipeproof.checker.core import semantics as S
from pipeproof.checker.engines import symmetries as SYM
from pipeproof.checker.engines.explore import Search
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError
from tests import generators as G
from tests.paths import example_path
from tests.specs import standard_toml


def _template(name: str, **params) -> str:
    lines = ["[pipeline]", f'template = "{name}"', 'backend = "nvidia"']
    return "\n".join(lines + [f"{k} = {v}" for k, v in params.items()]) + "\n"


def _three_ctas(target: str) -> str:
    """Three CTAs, one producer and one consumer each; the consumer also releases `target`."""
    body = ["wait_full", "read", "arrive_empty", f"arrive_empty to={target}", "advance"]
    return standard_toml(stages=1, items=2, consumer_count=2, consumer_body=body).replace(
        "[pipeline]\n", "[pipeline]\ncluster_size = 3\n")


def _model(text):
    return compile_model(load_spec_text(text, "s.toml"))


def _group(text):
    return sorted(tuple(pi) for pi, _, _ in SYM.cta_automorphisms(_model(text)))


def test_which_renamings():
    assert _group(_template("cutlass_tma_async", cluster_size=2, stages=1, items=1)) == [(1, 0)]
    assert len(_group(_template("cutlass_tma_async", cluster_size=4, stages=1, items=1))) == 23
    assert _group(_template("cutlass_tma_async", cluster_size=1, stages=1, items=1)) == []
    # above 4 CTAs only rotations are tried
    assert _group(_template("cutlass_tma_async", cluster_size=5, stages=1, items=1, tile_bytes=1280)) == sorted(
        tuple((c + s) % 5 for c in range(5)) for s in range(1, 5))
    assert _group(_three_ctas("leader")) == [(0, 2, 1)]  # CTA 0 stays the leader
    assert _group(_three_ctas("peer")) == [(1, 2, 0), (2, 0, 1)]  # rotations keep c + 1
    assert len(_group(_three_ctas("all"))) == 5
    text = open(example_path("x_cluster_ctas_ok.toml")).read()
    assert _group(text) == []  # the scheduler runs in CTA 0 only


def rename(model, pi, state):
    """The state with CTA c renamed pi[c], written from the model's views (a second
    implementation of symmetry.permute_ctas): agents by (role, index, CTA), signals, slots and
    barriers by CTA, slot parts by their fills, in-flight entries' CTA, part and agent."""
    st = np.array(state, dtype=np.int64)
    out = st.copy()
    where = {(a.role, a.index, a.cta): i for i, a in enumerate(model.agents)}
    agent = [where[(a.role, a.index, pi[a.cta])] for a in model.agents]
    agf = model.agf
    for a, b in enumerate(agent):
        out[b * agf:(b + 1) * agf] = st[a * agf:(a + 1) * agf]
    part = {}
    for r, parts in enumerate(model.parts):
        key = {(frozenset(pt.ctas), frozenset((i, pc) for _, i, pc in pt.fills)): p
               for p, pt in enumerate(parts)}
        for p, pt in enumerate(parts):
            image = (frozenset(pi[c] for c in pt.ctas), frozenset((agent[i], pc) for _, i, pc in pt.fills))
            part[r, p] = key[image]
    R, MS, MP = model.rings, model.max_stages, model.max_parts
    for cta in range(model.ctas):
        for r in range(R):
            for s in range(MS):
                for kind in range(2):
                    src = model.off_sig + 4 * (((cta * R + r) * MS + s) * 2 + kind)
                    dst = model.off_sig + 4 * (((pi[cta] * R + r) * MS + s) * 2 + kind)
                    out[dst:dst + 4] = st[src:src + 4]
                for p in range(len(model.parts[r])):
                    src = model.off_slot + ((cta * R + r) * MS + s) * MP + p
                    dst = model.off_slot + ((pi[cta] * R + r) * MS + s) * MP + part[r, p]
                    out[dst] = st[src]
        for b in range(len(model.barrier_names)):
            src, dst = model.off_bar + 2 * (b * model.ctas + cta), model.off_bar + 2 * (b * model.ctas + pi[cta])
            out[dst:dst + 2] = st[src:src + 2]
    entries = []
    for e in model.inflight_entries(st):
        e = int(e)
        f = {k: (e >> sh) & mask for k, (sh, mask) in enumerate(model.entry_fields)}
        new = dict(f)
        new[S.E_CTA] = pi[f[S.E_CTA]]
        if MP > 1 and f[S.E_PART] > 0:
            new[S.E_PART] = part[f[S.E_RING], f[S.E_PART] - 1] + 1
        if SYM.refers_to(model.tables, np.int64(e)) >= 0:
            new[S.E_AGENT] = agent[f[S.E_AGENT]]
        packed = 0
        for k, (sh, mask) in enumerate(model.entry_fields):
            packed |= new[k] << sh
        entries.append(packed)
    entries.sort(reverse=True)
    out[model.off_inf:model.off_inf + model.inflight] = entries + [0] * (model.inflight - len(entries))
    return out, agent


CLUSTERS = {
    "cutlass_K2": _template("cutlass_tma_async", cluster_size=2, consumers=2, stages=1, items=2),
    "input_tile_K2": _template("mojo_input_tile", cluster_size=2, k_group_size=2, stages=2, items=2),
    "sm90_K2": _template("sm90_ring", cluster_size=2, consumers=1, stages=1, items=2),
    "leader_K3": _three_ctas("leader"),
    "peer_K3": _three_ctas("peer"),
}


@pytest.mark.parametrize("name", sorted(CLUSTERS))
def test_renamings_are_automorphisms_and_the_canonical_form_is_one_per_orbit(name):
    model = _model(CLUSTERS[name])
    group = SYM.cta_automorphisms(model)
    assert group
    sym = SYM.symmetry(model)
    full = Search(model, symmetry=False)
    kinds, _ = full.run()
    assert not full.limit
    rnd = random.Random(18)
    n = len(model.agents)
    sample = set(rnd.sample(range(full.n_stored), min(150, full.n_stored)))
    img = np.zeros(model.n_fields, dtype=np.int64)
    for idx in range(full.n_stored):
        state = full.stored_vector(idx)
        canon = SYM.canonical(model, sym, state)
        assert np.array_equal(SYM.canonical(model, sym, canon), canon)
        for k, (pi, _, _) in enumerate(group):
            moved, agent = rename(model, pi, state)
            SYM.permute_ctas(model.tables.ent, model.off_inf, model.inflight, model.max_parts,
                             sym.fmap[k], sym.cmap[k], sym.pmap[k], sym.amap[k], state, img)
            assert np.array_equal(img, moved)
            assert np.array_equal(SYM.canonical(model, sym, moved), canon)
            if idx not in sample:
                continue
            # every step of the state is a step of the renamed one: same bits, renamed successor
            for code in range(model.n_actions()):
                nxt, bits, _ = model.apply(tuple(state.tolist()), code)
                if code < n:
                    code2 = agent[code]
                elif state[model.off_inf + code - n] == 0:
                    code2 = code
                else:
                    e = state[model.off_inf + code - n]
                    one = np.zeros(model.n_fields, dtype=np.int64)
                    one[model.off_inf] = e
                    renamed = rename(model, pi, one)[0][model.off_inf]
                    code2 = n + moved[model.off_inf:model.off_inf + model.inflight].tolist().index(renamed)
                nxt2, bits2, _ = model.apply(tuple(moved.tolist()), code2)
                assert (nxt is None) == (nxt2 is None) and bits == bits2
                if nxt is not None and not bits & S.TRAP:
                    assert np.array_equal(rename(model, pi, nxt)[0], np.array(nxt2))
    if not kinds:
        reduced = Search(model, symmetry=True)
        reduced.run()
        orbits = {tuple(SYM.canonical(model, sym, full.stored_vector(i)).tolist())
                  for i in range(full.n_stored)}
        stored = {tuple(reduced.stored_vector(i).tolist()) for i in range(reduced.n_stored)}
        assert stored == orbits


def test_states_with_cta_symmetry_are_fewer():
    model = _model(CLUSTERS["cutlass_K2"])
    on, off = Search(model), Search(model, cta_symmetry=False)
    on.run()
    off.run()
    assert on.n_stored < off.n_stored


# ------------------------------------------------------------------------------------------
# with and without it: the same answers on generated cluster specs


def _cluster_specs(seed, count):
    out = []
    i = 0
    while len(out) < count and i < 40 * count:
        name, mutation, text = H.generate(seed, i)
        i += 1
        try:
            spec = load_spec_text(text, f"gen{i}.toml")
        except SpecError:
            continue
        if spec.cluster_size > 1 and SYM.cta_automorphisms(compile_model(spec)):
            out.append((f"{name}+{mutation}#{i}", spec))
    return out


@pytest.mark.parametrize("name, spec", _cluster_specs(18, 40), ids=lambda x: x if isinstance(x, str) else "")
def test_same_answers_with_and_without_cta_symmetry(name, spec):
    for por in (True, False):
        on = verify(spec, max_states=40_000, por=por)
        off = verify(spec, max_states=40_000, por=por, cta_symmetry=False)
        if on.limit or off.limit:
            assert not (off.verdict == "ok" and on.verdict == "violation")
            continue
        assert (on.verdict, on.kinds, on.depth) == (off.verdict, off.kinds, off.depth)
        assert on.states <= off.states
        G.check_result(spec, on)  # every counterexample replays in tests/replay.py
