"""Loading good specs: fields, defaults, op parsing and the four templates."""
from __future__ import annotations

from pathlib import Path

import pytest

from spec.load import load_spec, load_spec_text
from spec.schema import TX_LIMIT, Barrier, Op, SpecError
from spec.templates import TEMPLATES

EXAMPLES = Path(__file__).resolve().parent.parent / "spec" / "examples"

DESIGN_EXAMPLE = """
[pipeline]
name = "sm90 TMA ring, 1 producer, 2 consumer warpgroups"
backend = "nvidia"            # nvidia | amd
stages = 4
k_group_size = 1
producer_arrive_count = 1
consumer_arrive_count = 2
items = 8
expect = "ok"
expect_any = ["ok"]

[[role]]
name = "producer"
side = "producer"
count = 1
initial_phase = 1
body = ["wait_empty", "expect_tx 16384", "copy 16384", "advance"]

[[role]]
name = "consumer"
side = "consumer"
count = 2
body = ["wait_full", "read", "arrive_empty", "advance"]
"""


def write_spec(tmp_path: Path, text: str, name: str = "spec.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def template_spec(template: str, extra: str = "", backend: str = "nvidia", roles: str = "") -> str:
    return (f'[pipeline]\ntemplate = "{template}"\nbackend = "{backend}"\n'
            f"stages = 3\nitems = 4\n{extra}\n{roles}")


def texts(ops) -> list[str]:
    return [op.text for op in ops]


# ---------------------------------------------------------------------------------------
# Plain specs


def test_design_example_loads(tmp_path):
    path = write_spec(tmp_path, DESIGN_EXAMPLE)
    spec = load_spec(path)
    assert spec.path == str(path)
    assert spec.name == "sm90 TMA ring, 1 producer, 2 consumer warpgroups"
    assert (spec.backend, spec.stages, spec.items) == ("nvidia", 4, 8)
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 2)
    assert (spec.k_group_size, spec.cluster_size) == (1, 1)
    assert spec.expect == "ok" and spec.expect_any == ("ok",)
    assert spec.template is None and spec.barriers == () and spec.extra == {}
    assert [r.name for r in spec.roles] == ["producer", "consumer"]
    producer, consumer = spec.roles
    assert (producer.side, producer.count, producer.items) == ("producer", 1, 8)
    assert producer.body[1] == Op(name="expect_tx", n=16384, text="expect_tx 16384")
    assert producer.body[2] == Op(name="copy", n=16384, text="copy 16384")
    assert consumer.count == 2 and consumer.initial_phase == 0
    assert texts(consumer.body) == ["wait_full", "read", "arrive_empty", "advance"]
    assert spec.role("consumer") is consumer


def test_load_spec_accepts_str_and_path(tmp_path):
    path = write_spec(tmp_path, DESIGN_EXAMPLE)
    assert load_spec(str(path)) == load_spec(path)


def test_defaults(tmp_path):
    text = """
[pipeline]
backend = "amd"
stages = 3
producer_arrive_count = 1
consumer_arrive_count = 1
items = 5

[[role]]
name = "p"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "c"
side = "consumer"
count = 1
items = 2
initial_stage = 2
initial_phase = 7
body = ["wait_full", "read", "arrive_empty", "advance"]
"""
    spec = load_spec(write_spec(tmp_path, text, "my_pipe.toml"))
    assert spec.name == "my_pipe"  # the file stem
    assert spec.description == "" and spec.expect is None and spec.expect_any == ()
    assert (spec.k_group_size, spec.cluster_size) == (1, 1)
    producer, consumer = spec.roles
    assert (producer.items, producer.initial_stage, producer.initial_phase) == (5, 0, 1)
    assert (consumer.items, consumer.initial_stage, consumer.initial_phase) == (2, 2, 7)
    assert producer.prologue == () and producer.epilogue == ()


def test_load_spec_text_uses_path_for_name():
    spec = load_spec_text(DESIGN_EXAMPLE.replace('name = "sm90 TMA ring, 1 producer, 2 consumer '
                                                 'warpgroups"\n', ""), "dir/ring_4.toml")
    assert spec.name == "ring_4" and spec.path == "dir/ring_4.toml"


def test_expect_any_and_violation_kinds(tmp_path):
    text = DESIGN_EXAMPLE.replace('expect = "ok"', 'expect = "deadlock"').replace(
        'expect_any = ["ok"]', 'expect_any = ["phase_alias", "over_arrival", "tx_range"]')
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.expect == "deadlock"
    assert spec.expect_any == ("phase_alias", "over_arrival", "tx_range")


# ---------------------------------------------------------------------------------------
# Op parsing


@pytest.mark.parametrize("text, expected", [
    ("wait_full", Op(name="wait_full")),
    ("try_empty", Op(name="try_empty")),
    ("arrive_full", Op(name="arrive_full", n=1)),
    ("arrive_full 2", Op(name="arrive_full", n=2)),
    ("arrive_empty to=leader @leader", Op(name="arrive_empty", to="leader", leader_only=True)),
    ("arrive_empty @leader to=peer", Op(name="arrive_empty", to="peer", leader_only=True)),
    ("commit_empty 3 to=all", Op(name="commit_empty", n=3, to="all")),
    ("commit_empty to=self", Op(name="commit_empty")),
    ("copy 4096 to=all", Op(name="copy", n=4096, to="all")),
    ("copy 16_384", Op(name="copy", n=16384)),
    ("expect_tx 0x4000 @leader", Op(name="expect_tx", n=16384, leader_only=True)),
    # Above the hardware's tx range is a model verdict (tx_range), not a spec error.
    (f"expect_tx {TX_LIMIT + 1}", Op(name="expect_tx", n=TX_LIMIT + 1)),
    ("wait_full unless=ready", Op(name="wait_full", unless_ready=True)),
    ("wait_empty unless=ready @leader", Op(name="wait_empty", unless_ready=True,
                                             leader_only=True)),
    ("drain @leader", Op(name="drain", leader_only=True)),
    ("  write   ", Op(name="write")),
    ("advance", Op(name="advance")),
    ("reset", Op(name="reset")),
])
def test_op_parsing(tmp_path, text, expected):
    spec = load_spec(write_spec(tmp_path, DESIGN_EXAMPLE.replace(
        'body = ["wait_empty", "expect_tx 16384"', f'body = ["{text}", "expect_tx 16384"')))
    op = spec.role("producer").body[0]
    assert op == Op(**{**expected.__dict__, "text": text})
    assert op.ring == "main" and str(op) == text


def test_sync_and_barriers(tmp_path):
    text = DESIGN_EXAMPLE + """
[barrier.zz]
roles = ["consumer"]
count = 2

[barrier.all_warps]
roles = ["producer", "consumer"]
"""
    text = text.replace('body = ["wait_full", "read"',
                        'prologue = ["sync all_warps"]\nbody = ["sync zz", "wait_full", "read"')
    text = text.replace('"advance"]\n\n[[role]]', '"advance"]\nepilogue = ["sync all_warps"]'
                                                  '\n\n[[role]]')
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.barriers == (Barrier("all_warps", ("producer", "consumer")),
                             Barrier("zz", ("consumer",), count=2))  # sorted by name
    consumer = spec.role("consumer")
    assert consumer.prologue[0] == Op(name="sync", barrier="all_warps", text="sync all_warps")
    assert consumer.body[0].barrier == "zz"
    assert spec.role("producer").epilogue[0].barrier == "all_warps"


def test_cluster_targets(tmp_path):
    text = DESIGN_EXAMPLE.replace("items = 8", "items = 8\ncluster_size = 4").replace(
        '"arrive_empty"', '"arrive_empty to=all"')
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.cluster_size == 4
    assert spec.role("consumer").body[2].to == "all"


# ---------------------------------------------------------------------------------------
# Templates


def test_template_names():
    assert list(TEMPLATES) == ["mojo_producer_consumer", "mojo_input_tile", "sm90_ring",
                               "cutlass_tma_async"]
    assert all(isinstance(text, str) and text for text in TEMPLATES.values())


@pytest.mark.parametrize("backend", ["nvidia", "amd"])
def test_mojo_producer_consumer_defaults(backend):
    spec = load_spec_text(template_spec("mojo_producer_consumer", backend=backend), "t.toml")
    assert spec.template == "mojo_producer_consumer" and spec.backend == backend
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 1)
    assert spec.extra == {"consumers": 1, "tile_bytes": 16384}
    producer, consumer = spec.roles
    assert (producer.name, producer.side, producer.count, producer.initial_phase) == (
        "producer", "producer", 1, 1)
    assert texts(producer.body) == ["wait_empty", "write", "arrive_full", "advance"]
    assert (consumer.name, consumer.side, consumer.count, consumer.initial_phase) == (
        "consumer", "consumer", 1, 0)
    assert texts(consumer.body) == ["wait_full", "read", "arrive_empty", "advance"]
    assert producer.items == consumer.items == 4


def test_mojo_producer_consumer_consumers():
    spec = load_spec_text(template_spec("mojo_producer_consumer", "consumers = 3"), "t.toml")
    assert spec.consumer_arrive_count == 3
    assert spec.role("consumer").count == 3
    assert spec.extra["consumers"] == 3


def test_mojo_input_tile_defaults():
    spec = load_spec_text(template_spec("mojo_input_tile"), "t.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count, spec.cluster_size) == (1, 1, 1)
    producer, consumer = spec.roles
    assert texts(producer.body) == ["wait_empty", "expect_tx 16384 @leader", "copy 16384",
                                    "advance"]
    assert producer.body[1] == Op(name="expect_tx", n=16384, leader_only=True,
                                  text="expect_tx 16384 @leader")
    assert texts(producer.epilogue) == ["drain"]
    assert consumer.count == 1
    assert texts(consumer.body) == ["wait_full", "read", "commit_empty to=all", "advance"]


def test_mojo_input_tile_k_group_and_cluster():
    extra = "k_group_size = 3\ntile_bytes = 1000\ncluster_size = 2\nconsumers = 4"
    spec = load_spec_text(template_spec("mojo_input_tile", extra), "t.toml")
    assert spec.k_group_size == 3 and spec.cluster_size == 2
    assert spec.consumer_arrive_count == 2  # one MMA commit from each CTA
    producer, consumer = spec.roles
    assert texts(producer.body) == ["wait_empty", "expect_tx 3000 @leader", "copy 1000",
                                    "copy 1000", "copy 1000", "advance"]
    assert consumer.count == 1  # the MMA warp, whatever `consumers` says
    assert spec.extra == {"consumers": 4, "tile_bytes": 1000}


def test_sm90_ring_defaults():
    spec = load_spec_text(template_spec("sm90_ring"), "t.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 1)
    producer, consumer = spec.roles
    assert producer.initial_phase == 0 and consumer.initial_phase == 0
    assert texts(producer.body) == ["wait_empty", "expect_tx 16384", "copy 16384", "advance"]
    assert texts(consumer.prologue) == ["arrive_empty to=all", "advance"] * 3 + ["reset"]
    assert texts(consumer.body) == ["wait_full", "read", "arrive_empty to=all", "advance"]


def test_sm90_ring_consumers_and_cluster():
    extra = "consumers = 2\ncluster_size = 2\ntile_bytes = 4096"
    spec = load_spec_text(template_spec("sm90_ring", extra), "t.toml")
    assert spec.consumer_arrive_count == 4  # consumers * cluster_size
    producer, consumer = spec.roles
    assert consumer.count == 2
    assert texts(producer.body)[1:3] == ["expect_tx 4096", "copy 4096"]


def test_cutlass_tma_async_defaults():
    spec = load_spec_text(template_spec("cutlass_tma_async"), "t.toml")
    assert spec.cluster_size == 2  # the template's default cluster
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (1, 2)
    producer, consumer = spec.roles
    assert producer.initial_phase == 1 and consumer.initial_phase == 0
    assert texts(producer.body) == ["wait_empty", "expect_tx 16384 @leader", "copy 8192 to=all",
                                    "advance"]
    assert producer.body[2] == Op(name="copy", n=8192, to="all", text="copy 8192 to=all")
    assert texts(producer.epilogue) == ["drain"]
    assert texts(consumer.body) == ["wait_full", "read", "arrive_empty to=all", "advance"]


def test_cutlass_tma_async_cluster_and_consumers():
    spec = load_spec_text(template_spec("cutlass_tma_async", "cluster_size = 4\nconsumers = 2"),
                          "t.toml")
    assert spec.cluster_size == 4 and spec.consumer_arrive_count == 8
    assert spec.role("producer").body[2].n == 4096
    assert spec.role("consumer").count == 2


def test_template_pipeline_keys_override():
    extra = "consumers = 2\nconsumer_arrive_count = 5\nproducer_arrive_count = 3"
    spec = load_spec_text(template_spec("mojo_producer_consumer", extra), "t.toml")
    assert (spec.producer_arrive_count, spec.consumer_arrive_count) == (3, 5)
    assert spec.role("consumer").count == 2


def test_template_role_keys_override_individually():
    roles = """
[[role]]
name = "consumer"
body = ["wait_full", "read", "arrive_empty 2", "advance"]
items = 2
"""
    spec = load_spec_text(template_spec("mojo_producer_consumer", "consumers = 3", roles=roles),
                          "t.toml")
    assert [r.name for r in spec.roles] == ["producer", "consumer"]
    consumer = spec.role("consumer")
    assert consumer.body[2].n == 2 and consumer.items == 2
    assert (consumer.side, consumer.count) == ("consumer", 3)  # kept from the template


def test_template_producer_phase_override():
    roles = '[[role]]\nname = "producer"\ninitial_phase = 1\n'
    spec = load_spec_text(template_spec("sm90_ring", roles=roles), "t.toml")
    assert spec.role("producer").initial_phase == 1


def test_template_user_role_added():
    roles = """
[[role]]
name = "epilogue_warp"
side = "consumer"
count = 1
body = ["sync both"]

[barrier.both]
roles = ["consumer", "epilogue_warp"]
"""
    spec = load_spec_text(template_spec("cutlass_tma_async", roles=roles), "t.toml")
    assert [r.name for r in spec.roles] == ["producer", "consumer", "epilogue_warp"]
    assert spec.barriers == (Barrier("both", ("consumer", "epilogue_warp")),)


def test_template_does_not_change_its_inputs():
    from spec.templates import expand
    pipeline = {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "items": 1}
    roles = [{"name": "consumer", "count": 2}]
    expanded, expanded_roles = expand(pipeline, roles, "x.toml")
    assert pipeline == {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "items": 1}
    assert roles == [{"name": "consumer", "count": 2}]
    assert expanded["consumer_arrive_count"] == 1
    assert expanded_roles[1]["count"] == 2 and expanded_roles[1]["side"] == "consumer"


# ---------------------------------------------------------------------------------------
# The shipped examples all load


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_examples_load(path):
    try:
        spec = load_spec(path)
    except SpecError as err:  # pragma: no cover - shows the loader's message
        pytest.fail(str(err))
    assert spec.roles
