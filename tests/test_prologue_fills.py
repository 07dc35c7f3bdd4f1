"""Issue 15, goal 5: prologue and epilogue may copy, read and write (a tile loaded once before
the loop, stored once after it), and the pairing rule says which fill each read expects
(spec.schema `read_pairs_with`; checker/core/model.py `tag_of`; semantics.op_tag)."""
from __future__ import annotations

import subprocess

import pytest

from pipeproof.checker.engines.lap_verify import verify_laps
from pipeproof.checker.core.model import compile_model
from pipeproof.checker.engines.prover import prove
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError

NEW = {  # example: (verdict, kinds, depth)
    "x_fa3_q_once_per_tile.toml": ("ok", (), None),
    "x_prologue_tile_ok.toml": ("ok", (), None),
    "x_fa3_q_released_early.toml": ("violation", ("overwrite_before_drain",), 29),
    "bug_prologue_tile_released_early.toml": ("violation",
                                              ("read_before_fill", "overwrite_before_drain"), 15),
}


def spec_with(ring_q_fills: dict, read_section: str):
    """A spec whose ring q is filled in the sections of `ring_q_fills` and read in `read_section`."""
    producer = {"prologue": [], "body": ["wait_empty", "arrive_full", "advance"], "epilogue": []}
    for sec in ring_q_fills:
        producer[sec] += ["write ring=q"]
    consumer = {"prologue": [], "body": ["wait_full", "arrive_empty", "advance"], "epilogue": []}
    consumer[read_section] += ["read ring=q"]
    lines = lambda d: "".join(f"{sec} = {ops!r}\n".replace("'", '"') for sec, ops in d.items() if ops)
    return load_spec_text(f"""
[pipeline]
name = "pairing"
backend = "nvidia"
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2
[ring.q]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1
[[role]]
name = "p"
side = "producer"
count = 1
{lines(producer)}
[[role]]
name = "c"
side = "consumer"
count = 1
{lines(consumer)}""", "pairing.toml")


@pytest.mark.parametrize("fills, section, pairs", [
    (["prologue"], "prologue", "prologue"),
    (["prologue"], "body", "prologue"),       # Q loaded once, read in every item
    (["prologue"], "epilogue", "prologue"),
    (["body"], "body", "body"),
    (["body"], "prologue", "prologue"),       # before every fill: its own (nothing there yet)
    (["epilogue"], "body", "body"),
    (["epilogue"], "epilogue", "epilogue"),
    (["prologue", "body"], "body", "body"),
    (["prologue", "epilogue"], "body", "prologue"),
    (["prologue", "body", "epilogue"], "epilogue", "epilogue"),
])
def test_the_pairing_rule(fills, section, pairs):
    spec = spec_with(fills, section)
    assert spec.read_pairs_with(section, "q") == pairs
    model = compile_model(spec)
    reader = next(a for a in model.agents if a.role == "c")
    pc = next(pc for pc, (op, _) in enumerate(reader.ops) if op.name == "read")
    expected = {"prologue": model.tag_prologue, "epilogue": model.tag_epilogue, "body": -1}[pairs]
    assert model.tag_of(reader, pc) == expected
    assert model.tag_prologue == 2 and model.tag_epilogue == 3  # above every item (0, 1)


def test_an_epilogue_read_of_a_ring_only_the_body_fills_is_refused():
    with pytest.raises(SpecError) as err:
        spec_with(["body"], "epilogue")
    assert str(err.value).startswith("pairing.toml: role 'c' epilogue[0]: op 'read ring=q': no "
                                     "fill pairs with this read")


def test_the_bug_needs_the_pairing_not_the_item(example_spec):
    # Read in every body item, the prologue's Q must not be taken for item 0: with the rule
    # the correct spec is ok; reading Q as "the item" would fail it at item 1.
    result = verify(example_spec("x_fa3_q_once_per_tile.toml"))
    assert result.verdict == "ok"
    bad = example_spec("x_fa3_q_once_per_tile.toml")
    model = compile_model(bad)
    consumer = next(a for a in model.agents if a.role == "consumer")
    reads = [model.tag_of(consumer, pc) for pc, (op, _) in enumerate(consumer.ops)
             if op.name == "read"]
    assert reads == [model.tag_prologue, -1]  # read ring=q: the prologue's; read: the item


@pytest.mark.parametrize("name", sorted(NEW))
def test_every_engine_agrees(name, example_spec):
    spec = example_spec(name)
    verdict, kinds, depth = NEW[name]
    for result in (verify(spec), verify(spec, por=False), verify(spec, symmetry=False),
                   verify(spec, por=False, symmetry=False), verify_bmc(spec)):
        assert (result.verdict, result.kinds, result.depth) == (verdict, kinds, depth), result.engine
    laps = verify_laps(spec)  # outside the lap abstraction: answered by the explicit engine
    assert (laps.verdict, laps.kinds, laps.depth, laps.engine) == (verdict, kinds, depth, "explicit")
    proof = prove(spec)
    if verdict == "ok":
        assert proof.status == "unknown" and "outside the body" in proof.reason
    else:
        assert proof.status == "violated" and proof.kind == kinds[0]


def test_the_cli_runs_them_and_says_unexpected_for_none(examples_dir, cli_command, root):
    names = [str(examples_dir / n) for n in sorted(NEW)]
    p = subprocess.run(cli_command + ["verify", "-q", *names],
                       capture_output=True, text=True, cwd=root, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr  # every verdict the declared one: a self-test
    assert p.stdout.splitlines()[-1] == ("4 specs: 2 ok, 2 violations, 0 inconclusive "
                                         "(all 4 with a declared verdict as expected)")
