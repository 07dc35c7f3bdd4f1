"""The three revised rules (issue 31, DESIGN "revised 2026-12-02") in the Promela and Murphi
exports: SPIN and Rumur reach the explicit engine's verdict on specs whose verdict each rule
decides, in both exit modes.

- R1, commit order: a commit fires only after every earlier commit entry of its agent has
  fired (the entries of one `to=all` commit in any order among themselves). A CTA-0 agent
  commits to the peer on one ring, then on another; the peer's only agent waits for the second
  commit and exits: with R1 the first has fired by then (ok), without it the first is a peer's
  commit still in flight at that exit (inflight_at_exit).
- R2, exit: the exit step of a CTA with only its own copies or commits in flight into it is no
  violation (the engine's warning unawaited_at_exit, which the exports do not report); an
  async read of the CTA, or a copy or commit from another CTA, in flight into it stays
  inflight_at_exit; a landing or firing into a gone CTA is no longer one by itself. With
  `strict_exit=True` (`pipeproof export --strict-exit`) the exports read it as before: every
  such case is inflight_at_exit.
- R3, slot parts per slot: a read of tag t in slot s checks the parts the program fills for t
  in s (every part if none). Two roles that fill different stages for one item are not each
  other's missing parts (docs/rules.md's example, ok); two that fill the same stage are.

Each spec's verdict is pinned (the explicit engine's, unreduced, in the mode the case names),
SPIN and Rumur must agree with it (tests/export_support.agree: on an ok spec Rumur stores
exactly pipeproof's states), and for R1 and R3 the export with the rule taken out must reach
another verdict, so a spec that stopped depending on its rule would show.

Needs `spin`, `rumur` and a C compiler, like tests/test_export_models.py.
"""
from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from pipeproof.checker.models import ir as export_ir
from pipeproof.checker.cli.export import export as export_command
from pipeproof.checker.models.ir import ENTRY_COMMIT, IR
from pipeproof.checker.models.exporter import export, run_rumur, run_spin, to_murphi, to_promela
from pipeproof.checker.models.steps import ExitCheck, Issue, step_actions
from pipeproof.checker.results.result import KINDS
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests.export_support import OPT, TIMEOUT, agree


def _q(ops) -> str:
    return "[" + ", ".join(f'"{o}"' for o in ops) + "]"


def _role(name, side, body, count=1, ctas=None, initial_stage=None, initial_phase=None) -> str:
    return (f'[[role]]\nname = "{name}"\nside = "{side}"\ncount = {count}\nbody = {_q(body)}\n'
            + (f"ctas = {list(ctas)}\n" if ctas is not None else "")
            + (f"initial_stage = {initial_stage}\n" if initial_stage is not None else "")
            + (f"initial_phase = {initial_phase}\n" if initial_phase is not None else "") + "\n")


def _pipeline(name, stages, items, cluster=1, pac=1, cac=1, rings=()) -> str:
    return (f'[pipeline]\nname = "{name}"\nbackend = "nvidia"\nstages = {stages}\n'
            f"cluster_size = {cluster}\nproducer_arrive_count = {pac}\nconsumer_arrive_count = {cac}\n"
            f"items = {items}\n\n"
            + "".join(f"[ring.{r}]\nstages = 1\nproducer_arrive_count = 1\nconsumer_arrive_count = 1\n\n"
                      for r in rings))


def _peer_order(first: str) -> str:
    """R1: the CTA-0 `mma` commits to ring a (`first`: to=peer, or to=all, one entry per CTA),
    then to the peer's main ring; the CTA-1 `waiter` waits for that second commit and exits."""
    return (_pipeline(f"R1: commit {first} on ring a, then to=peer", 1, 1, cluster=2, rings=("a",))
            + _role("mma", "consumer", [f"commit_empty {first} ring=a", "commit_empty to=peer"], ctas=[0])
            + _role("waiter", "producer", ["wait_empty"], ctas=[1], initial_phase=0))


WRITE = ["wait_empty", "write", "arrive_full", "advance"]


def _last_commit(to: str, cluster: int) -> str:
    """R2: the consumer releases each stage by a commit (to `to`) and exits with the last one in
    flight; nobody drains."""
    return (_pipeline(f"R2: the last commit ({to}) in flight at exit", 2, 2, cluster=cluster)
            + _role("producer", "producer", WRITE)
            + _role("consumer", "consumer", ["wait_full", "read", f"commit_empty {to}", "advance"]))


def _one_commit(to: str) -> str:
    """R2: the CTA-0 `mma` issues one commit (to `to`) and exits; the CTA-1 `idler` exits at once."""
    return (_pipeline(f"R2: one commit {to}, nobody waits", 1, 1, cluster=2)
            + _role("mma", "consumer", [f"commit_empty {to}"], ctas=[0])
            + _role("idler", "producer", ["advance"], ctas=[1]))


def _peer_copy() -> str:
    """R2: CTA 0 copies into CTA 1, whose only agent does not wait for it (a peer's copy at exit)."""
    return (_pipeline("R2: a peer's copy in flight when its target exits", 1, 1, cluster=2)
            + _role("loader", "producer", ["copy 64 to=peer"], ctas=[0])
            + _role("idler", "consumer", ["advance"], ctas=[1]))


def _own_copy() -> str:
    """R2: the producer issues its copy and exits; the consumer never waits for it."""
    return (_pipeline("R2: an own copy in flight at exit, landing after", 1, 1)
            + _role("loader", "producer", ["expect_tx 64", "copy 64"])
            + _role("idler", "consumer", ["advance"]))


def _async_read() -> str:
    """R2: the consumer exits with its async read in flight (nothing drains it)."""
    return (_pipeline("R2: an async read in flight at exit", 1, 1)
            + _role("producer", "producer", ["write", "arrive_full"])
            + _role("consumer", "consumer", ["wait_full", "read_async"]))


def _two_roles() -> str:
    """R3 (docs/rules.md's example): roles a and b each write their part of one item, a at
    stage 0 and b at stage 1; the consumer reads stage 0, then stage 1."""
    return (_pipeline("R3: a fills stage 0, b stage 1", 2, 1)
            + _role("a", "producer", ["write", "arrive_full"])
            + _role("b", "producer", ["write", "arrive_full"], initial_stage=1)
            + _role("consumer", "consumer", ["wait_full", "read", "advance", "wait_full", "read"]))


def _two_roles_one_slot() -> str:
    """R3, the control: a and b fill two parts of stage 0, b arrives before it writes; the read
    checks both parts and may find b's missing."""
    return (_pipeline("R3: a and b fill stage 0, b arrives first", 1, 1, pac=2)
            + _role("a", "producer", ["write", "arrive_full"])
            + _role("b", "producer", ["arrive_full", "write"])
            + _role("consumer", "consumer", ["wait_full", "read"]))


# (name, spec text, strict_exit, the explicit engine's verdict and kinds, its unreduced state
# count on an ok spec, or None)
RULE_SPECS = [
    ("r1_peer_order", _peer_order("to=peer"), False, ("ok",), 7),
    ("r1_all_then_peer", _peer_order("to=all"), False, ("ok",), 11),
    ("r1_all_then_peer_strict", _peer_order("to=all"), True, ("violation", "inflight_at_exit"), None),
    ("r2_own_commit", _last_commit("to=self", 1), False, ("ok",), 65),
    ("r2_own_commit_strict", _last_commit("to=self", 1), True, ("violation", "inflight_at_exit"), None),
    ("r2_cluster_own_commit", _last_commit("to=self", 2), False, ("ok",), 4225),
    ("r2_cluster_own_commit_strict", _last_commit("to=self", 2), True, ("violation", "inflight_at_exit"), None),
    ("r2_one_own_commit", _one_commit("to=self"), False, ("ok",), 6),
    ("r2_one_own_commit_strict", _one_commit("to=self"), True, ("violation", "inflight_at_exit"), None),
    ("r2_one_peer_commit", _one_commit("to=peer"), False, ("violation", "inflight_at_exit"), None),
    ("r2_peer_copy", _peer_copy(), False, ("violation", "inflight_at_exit"), None),
    ("r2_own_copy", _own_copy(), False, ("ok",), 8),
    ("r2_own_copy_strict", _own_copy(), True, ("violation", "inflight_at_exit"), None),
    ("r2_async_read", _async_read(), False, ("violation", "inflight_at_exit"), None),
    ("r3_other_stage", _two_roles(), False, ("ok",), 20),
    ("r3_same_stage", _two_roles_one_slot(), False, ("violation", "read_before_fill"), None),
]


def _case(name):
    return next(c for c in RULE_SPECS if c[0] == name)


@functools.lru_cache(maxsize=None)
def _spec(name):
    return load_spec_text(_case(name)[1], f"{name}.toml")


@functools.lru_cache(maxsize=None)
def _ours(name):
    return verify(_spec(name), symmetry=False, por=False, strict_exit=_case(name)[2])


def both_tools(spec, tmp_path, strict_exit):
    (tmp_path / "spin").mkdir()
    (tmp_path / "rumur").mkdir()
    with ThreadPoolExecutor(2) as pool:
        s = pool.submit(run_spin, spec, tmp_path / "spin", TIMEOUT, strict_exit=strict_exit, opt=OPT)
        m = pool.submit(run_rumur, spec, tmp_path / "rumur", TIMEOUT, opt=OPT, strict_exit=strict_exit)
        return s.result(), m.result()


@pytest.mark.parametrize("name, text, strict, expected, states", RULE_SPECS, ids=[c[0] for c in RULE_SPECS])
def test_spin_and_rumur_follow_the_revised_rules(name, text, strict, expected, states, tmp_path):
    ours = _ours(name)
    assert (ours.verdict,) + tuple(ours.kinds) == expected  # the rules' verdict, pinned
    if states is not None:
        assert ours.states == states
    agree(ours, *both_tools(_spec(name), tmp_path, strict), KINDS)


def test_the_own_entry_cases_are_the_engine_s_warning():
    # the default cases R2 lets pass are exactly the ones the engine warns about
    for name in ("r2_own_commit", "r2_cluster_own_commit", "r2_own_copy", "r2_one_own_commit", "r1_all_then_peer"):
        assert "unawaited_at_exit" in _ours(name).warnings, name
    for name in ("r1_peer_order", "r3_other_stage"):
        assert not _ours(name).warnings, name


# ------------------------------------------------------------------ each rule decides its specs

def _rumur(name, tmp_path):
    run = run_rumur(_spec(name), tmp_path, TIMEOUT, opt=OPT, strict_exit=_case(name)[2])
    assert run.verdict in ("ok", "violation"), run.output[-2000:]
    return run.verdict, run.kind


@pytest.mark.parametrize("name", ["r1_peer_order", "r1_all_then_peer"])
def test_without_commit_order_the_peer_exit_fails(name, tmp_path, monkeypatch):
    # an entry acts once its seq is 0, whatever its cseq: commits no longer wait for earlier ones
    monkeypatch.setattr(IR, "ready_unit", lambda self: "ESQ" if self.has_reads else None)
    assert _rumur(name, tmp_path) == ("violation", "inflight_at_exit")


def test_without_parts_per_slot_the_other_stage_read_fails(tmp_path, monkeypatch):
    # every read checks every part of its slot (the program fills both parts for tag 0)
    monkeypatch.setattr(IR, "read_classes", lambda self, g, p: [(tuple(self.parts_in(g.rings[p], g.cta)), None)])
    assert _rumur("r3_other_stage", tmp_path) == ("violation", "read_before_fill")


# ------------------------------------------------------------------ the printed rules

def test_a_commit_names_its_agent_and_waits_for_earlier_commit_entries():
    ir = IR(_spec("r1_all_then_peer"), "promela")
    mma = next(g for g in ir.groups if g.label == "cta0.mma")
    first, second = (next(a for a in step_actions(ir, mma, p) if isinstance(a, Issue)) for p in (0, 1))
    assert first.entry == second.entry == ENTRY_COMMIT and first.names_agent and not first.after_reads
    assert first.to == (0, 1) and second.to == (1,)
    assert [d for d, _ in ir.entry_digits()][-3:] == ["peer", "agent", "cseq"]
    assert ir.ready_unit() == "ECS" and not ir.has_reads
    pml = to_promela(ir.spec)
    # both entries of the to=all commit count the commits in flight before the op, not each other
    assert pml.count("nc_ = COMMITS_IN_FLIGHT(ME)") == 2
    assert "inflight[0] % (ECS) == 0 -> land(0)" in pml and "commit_fired(ag_);" in pml
    murphi = to_murphi(ir.spec)
    assert "commits_in_flight(0) - 1" in murphi and "commit_fired(ag);" in murphi
    assert "inflight[j] != 0 & inflight[j] % (ECS) = 0" in murphi


def test_commit_groups_are_not_scalarsets():
    # an entry names its commit's agent by number: those agents keep their numbers
    text = _last_commit("to=self", 1).replace('name = "consumer"\nside = "consumer"\ncount = 1',
                                              'name = "consumer"\nside = "consumer"\ncount = 2')
    text = text.replace("consumer_arrive_count = 1", "consumer_arrive_count = 2")
    murphi = to_murphi(load_spec_text(text, "x.toml"), symmetry=True)
    assert "ag_consumer_id: 0..1;" in murphi and "scalarset" not in murphi


def test_strict_exit_changes_only_the_exit_checks():
    spec = _spec("r2_cluster_own_commit")
    for fmt in ("promela", "murphi"):
        default, strict = export(spec, fmt), export(spec, fmt, strict_exit=True)
        assert default != strict
        if fmt == "promela":
            assert "foreign_in_flight(0); if :: rp_ -> assert(inflight_at_exit)" in default
            assert "targets_cta(0); if :: rp_ -> assert(inflight_at_exit)" in strict
            assert "CTA_DONE(lc_) -> assert(inflight_at_exit)" in strict  # a landing into a gone CTA
            assert "CTA_DONE(lc_)" not in default and "targets_cta" not in default
        else:
            assert "cta_done(0) & foreign_in_flight(0) then error" in default
            assert "cta_done(0) & targets_cta(0) then error" in strict
            assert "if cta_done(c) then error" in strict and "if cta_done(c) then error" not in default
    # one CTA without async reads: nothing at its exit is a violation by default
    ir = IR(_spec("r2_own_commit"), "promela")
    consumer = next(g for g in ir.groups if g.label == "consumer")
    assert any(isinstance(a, ExitCheck) for a in step_actions(ir, consumer, consumer.length - 1))
    assert "assert(inflight_at_exit)" not in to_promela(ir.spec)
    assert "inflight_at_exit" not in to_murphi(ir.spec).split("function all_done")[1]
    assert "ALL_DONE -> assert(inflight_at_exit)" in to_promela(ir.spec, strict_exit=True)
    # an async read at exit stays a violation in one CTA
    assert "foreign_in_flight(); if :: rp_ -> assert(inflight_at_exit)" in to_promela(_spec("r2_async_read"))


def test_the_command_takes_strict_exit(tmp_path):
    path = tmp_path / "r2.toml"
    path.write_text(_case("r2_own_commit")[1])
    spec = load_spec_text(path.read_text(), str(path))
    for fmt in ("promela", "murphi"):
        out = CliRunner().invoke(export_command, ["--format", fmt, "--strict-exit", str(path)])
        assert out.exit_code == 0, out.output
        assert out.output == export(spec, fmt, strict_exit=True)
        out = CliRunner().invoke(export_command, ["--format", fmt, str(path)])
        assert out.output == export(spec, fmt)


def test_a_read_checks_the_parts_filled_in_its_own_slot():
    # a fills part 0 at stage 0, b part 1 at stage 1: each read checks its stage's part alone;
    # with both in stage 0, the read there checks both
    ir = IR(_spec("r3_other_stage"), "murphi")
    consumer = next(g for g in ir.groups if g.label == "consumer")
    reads = [p for p, (op, _) in enumerate(consumer.ops) if op.name == "read"]
    assert [ir.read_classes(consumer, p) for p in reads] == [[((0,), [0])], [((1,), [0])]]
    assert [ir.read_stages(consumer)[p, 0] for p in reads] == [0, 1]
    ir = IR(_spec("r3_same_stage"), "murphi")
    consumer = next(g for g in ir.groups if g.label == "consumer")
    assert ir.read_classes(consumer, 1) == [((0, 1), [0])]


def test_the_item_classes_of_a_read_are_printed_by_their_period():
    assert export_ir.item_in([0, 2], [0, 1, 2, 3], 4, "i", "promela") == "(i % 2 == 0)"
    assert export_ir.item_in([1, 2, 3], [0, 1, 2, 3], 4, "i", "murphi") == "!(i = 0)"
    assert export_ir.item_in([0, 3], [0, 1, 3], 4, "i", "promela") == "(i % 3 == 0)"  # 2 never reads
    assert export_ir.item_in([0, 1, 3], [0, 1, 2, 3, 4], 5, "i", "promela") == "!(i == 2 || i == 4)"
