"""Loading good specs: fields, defaults, op parsing and the four templates."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.schema import TX_LIMIT, Barrier, Op, Ring, SpecError
from pipeproof.spec.templates import TEMPLATES
from tests.paths import EXAMPLE_PATHS

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
                               "cutlass_tma_async", "mojo_sm100_matmul", "cutlass_pingpong"]
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
    from pipeproof.spec.templates import expand
    pipeline = {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "items": 1}
    roles = [{"name": "consumer", "count": 2}]
    expanded, expanded_roles = expand(pipeline, roles, "x.toml")
    assert pipeline == {"template": "sm90_ring", "backend": "nvidia", "stages": 2, "items": 1}
    assert roles == [{"name": "consumer", "count": 2}]
    assert expanded["consumer_arrive_count"] == 1
    assert expanded_roles[1]["count"] == 2 and expanded_roles[1]["side"] == "consumer"


# ---------------------------------------------------------------------------------------
# The shipped examples all load


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.name)
def test_examples_load(path):
    try:
        spec = load_spec(path)
    except SpecError as err:  # pragma: no cover - shows the loader's message
        pytest.fail(str(err))
    assert spec.roles


# ---------------------------------------------------------------------------------------
# [expressiveness]: several rings, async reads, every/at, ctas, named barrier variants

MULTI_RING = """
[pipeline]
backend = "nvidia"
stages = 4
producer_arrive_count = 1
consumer_arrive_count = 1
items = 6
cluster_size = 2

# declared out of order: Spec.rings is sorted by name
[ring.sched]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 3

[ring.acc]
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 4

[barrier.epi]
count = 4

[barrier.wg]
roles = ["epilogue"]
count = 2

[[role]]
name = "loader"
side = "producer"
count = 1
body = ["wait_empty", "expect_tx 4096 @leader", "copy 4096 to=all", "advance"]
epilogue = ["drain"]

[[role]]
name = "mma"
side = "consumer"
count = 1
ctas = [0]
body = ["wait_full", "read_async", "wait_empty ring=acc", "write ring=acc", "read_wait",
        "commit_empty to=all", "arrive_full ring=acc", "advance", "advance ring=acc"]
epilogue = ["drain ring=acc"]

[[role]]
name = "epilogue"
side = "producer"
count = 4
ctas = [1, 0]
items = 3
body = ["wait_full ring=acc", "read ring=acc", "sync_arrive epi every=2",
        "sync_wait epi every=2 at=1", "sync wg", "arrive_empty ring=acc @leader",
        "advance ring=acc"]

[[role]]
name = "scheduler"
side = "consumer"
count = 1
initial_phase = { main = 3, acc = 5 }
body = ["try_empty ring=sched", "wait_empty ring=sched unless=ready",
        "wait_full ring=sched", "read_wait 2", "reset ring=sched every=4 at=3"]
"""


def test_multi_ring_spec_loads():
    spec = load_spec_text(MULTI_RING, "multi.toml")
    assert spec.rings == (Ring("acc", 2, 1, 4), Ring("sched", 1, 1, 3))
    assert spec.all_rings == (Ring("main", 4, 1, 1), Ring("acc", 2, 1, 4),
                              Ring("sched", 1, 1, 3))
    assert spec.barriers == (Barrier("epi", (), count=4), Barrier("wg", ("epilogue",), count=2))
    assert [r.name for r in spec.roles] == ["loader", "mma", "epilogue", "scheduler"]


def test_multi_ring_ops():
    spec = load_spec_text(MULTI_RING, "multi.toml")
    mma = spec.role("mma")
    assert mma.body[1] == Op(name="read_async", text="read_async")
    assert mma.body[2] == Op(name="wait_empty", ring="acc", text="wait_empty ring=acc")
    assert mma.body[4] == Op(name="read_wait", n=0, text="read_wait")
    assert [op.ring for op in mma.body] == ["main", "main", "acc", "acc", "main", "main", "acc",
                                            "main", "acc"]
    assert mma.epilogue == (Op(name="drain", ring="acc", text="drain ring=acc"),)
    epilogue = spec.role("epilogue")
    assert epilogue.body[2] == Op(name="sync_arrive", barrier="epi", every=2,
                                  text="sync_arrive epi every=2")
    assert epilogue.body[3] == Op(name="sync_wait", barrier="epi", every=2, at=1,
                                  text="sync_wait epi every=2 at=1")
    assert epilogue.body[5] == Op(name="arrive_empty", ring="acc", leader_only=True,
                                  text="arrive_empty ring=acc @leader")
    scheduler = spec.role("scheduler")
    assert scheduler.body[1] == Op(name="wait_empty", ring="sched", unless_ready=True,
                                   text="wait_empty ring=sched unless=ready")
    assert scheduler.body[3] == Op(name="read_wait", n=2, text="read_wait 2")
    assert scheduler.body[4] == Op(name="reset", ring="sched", every=4, at=3,
                                   text="reset ring=sched every=4 at=3")


def test_ctas():
    spec = load_spec_text(MULTI_RING, "multi.toml")
    assert spec.role("loader").ctas == ()          # every CTA
    assert spec.role("mma").ctas == (0,)
    assert spec.role("epilogue").ctas == (0, 1)    # sorted
    assert spec.role("epilogue").items == 3


def test_initial_phase_per_ring():
    spec = load_spec_text(MULTI_RING, "multi.toml")
    loader, mma, epilogue, scheduler = spec.roles
    # loader: producer side, touches neither extra ring: side default everywhere
    assert loader.initial_phase == 1 and loader.ring_phases == (("acc", 1), ("sched", 1))
    # mma: consumer side, waits on empty of acc (wait_empty, drain) -> 1; sched: side (0)
    assert mma.initial_phase == 0 and mma.ring_phases == (("acc", 1), ("sched", 0))
    # epilogue: producer side, waits on full of acc -> 0; sched: side (1)
    assert epilogue.initial_phase == 1 and epilogue.ring_phases == (("acc", 0), ("sched", 1))
    # scheduler: the table's main and acc; sched waited on both ways -> side default (0)
    assert scheduler.initial_phase == 3
    assert scheduler.ring_phases == (("acc", 5), ("sched", 0))
    assert [scheduler.initial_phase_of(r.name) for r in spec.all_rings] == [3, 5, 0]
    assert [mma.initial_phase_of(r.name) for r in spec.all_rings] == [0, 1, 0]


RING_SPEC = DESIGN_EXAMPLE + """
[ring.acc]
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
"""


@pytest.mark.parametrize("side, ops, expected", [
    ("consumer", ["wait_empty ring=acc"], 1),
    ("consumer", ["try_empty ring=acc"], 1),
    ("consumer", ["advance", "drain ring=acc"], 1),
    ("producer", ["wait_full ring=acc"], 0),
    ("producer", ["try_full ring=acc", "wait_full ring=acc unless=ready"], 0),
    ("producer", ["wait_full ring=acc", "wait_empty ring=acc"], 1),  # both: side default
    ("consumer", ["wait_full ring=acc", "wait_empty ring=acc"], 0),
    ("producer", ["arrive_full ring=acc"], 1),                        # neither: side default
    ("consumer", ["arrive_full ring=acc", "wait_empty"], 0),          # main ring waits only
])
def test_ring_phase_default(side, ops, expected):
    body = ", ".join(f'"{op}"' for op in ops)
    text = f"""
[pipeline]
backend = "amd"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2

[ring.acc]
stages = 3
producer_arrive_count = 2
consumer_arrive_count = 2

[[role]]
name = "r"
side = "{side}"
count = 1
body = [{body}]
"""
    role = load_spec_text(text, "x.toml").roles[0]
    assert role.ring_phases == (("acc", expected),)
    assert role.initial_phase == (1 if side == "producer" else 0)  # main: by side, as before


def test_ring_phase_default_looks_at_every_section():
    text = RING_SPEC.replace('body = ["wait_full"', 'epilogue = ["wait_empty ring=acc"]\n'
                                                    'body = ["wait_full"')
    assert load_spec_text(text, "x.toml").role("consumer").ring_phases == (("acc", 1),)


def test_initial_phase_int_applies_to_main_ring_only():
    text = RING_SPEC.replace("initial_phase = 1", "initial_phase = 6")
    producer = load_spec_text(text, "x.toml").role("producer")
    assert producer.initial_phase == 6
    assert producer.ring_phases == (("acc", 1),)  # side default: producer, no waits on acc
    assert producer.initial_phase_of("acc") == 1 and producer.initial_phase_of("main") == 6


def test_initial_phase_table_partial():
    text = RING_SPEC.replace("initial_phase = 1", "initial_phase = { acc = 0 }")
    producer = load_spec_text(text, "x.toml").role("producer")
    assert producer.initial_phase == 1  # main missing: the old default by side
    assert producer.ring_phases == (("acc", 0),)
    text = RING_SPEC.replace("initial_phase = 1", "initial_phase = { main = 0 }")
    producer = load_spec_text(text, "x.toml").role("producer")
    assert producer.initial_phase == 0 and producer.ring_phases == (("acc", 1),)


def test_initial_phase_table_without_extra_rings():
    text = DESIGN_EXAMPLE.replace("initial_phase = 1", "initial_phase = { main = 4294967295 }")
    producer = load_spec_text(text, "x.toml").role("producer")
    assert producer.initial_phase == (1 << 32) - 1 and producer.ring_phases == ()


def test_single_ring_spec_has_no_ring_fields():
    spec = load_spec_text(DESIGN_EXAMPLE, "x.toml")
    assert spec.rings == () and spec.all_rings == (Ring("main", 4, 1, 2),)
    for role in spec.roles:
        assert role.ctas == () and role.ring_phases == ()
        assert all(op.ring == "main" and op.every == 1 and op.at == 0
                   for op in role.prologue + role.body + role.epilogue)


@pytest.mark.parametrize("text, expected", [
    ("wait_full ring=main", Op(name="wait_full")),
    ("write every=1", Op(name="write")),
    ("write every=1 at=0", Op(name="write")),
    ("reset every=4", Op(name="reset", every=4)),
    ("reset at=3 every=4", Op(name="reset", every=4, at=3)),
    ("advance ring=acc every=2 at=1", Op(name="advance", ring="acc", every=2, at=1)),
    ("arrive_full 2 ring=acc to=all @leader", Op(name="arrive_full", n=2, ring="acc", to="all",
                                                 leader_only=True)),
    ("commit_empty ring=acc", Op(name="commit_empty", ring="acc")),
    ("expect_tx 1024 ring=acc", Op(name="expect_tx", n=1024, ring="acc")),
    ("copy 1024 ring=acc to=peer", Op(name="copy", n=1024, ring="acc", to="peer")),
    ("read_async ring=acc", Op(name="read_async", ring="acc")),
    ("read_async every=3 at=2", Op(name="read_async", every=3, at=2)),
    ("read_wait 0", Op(name="read_wait", n=0)),
    ("read_wait 64 every=2", Op(name="read_wait", n=64, every=2)),
    ("drain ring=acc @leader", Op(name="drain", ring="acc", leader_only=True)),
    ("sync b every=5 at=4", Op(name="sync", barrier="b", every=5, at=4)),
    ("sync_arrive b", Op(name="sync_arrive", barrier="b")),
    ("sync_wait b @leader", Op(name="sync_wait", barrier="b", leader_only=True)),
])
def test_expressive_op_parsing(text, expected):
    spec_text = RING_SPEC.replace('body = ["wait_empty", "expect_tx 16384"',
                                  f'body = ["{text}", "expect_tx 16384"') + \
        "\n[barrier.b]\ncount = 3\n"
    op = load_spec_text(spec_text, "x.toml").role("producer").body[0]
    assert op == Op(**{**expected.__dict__, "text": text}) and str(op) == text


def test_barrier_count_only_any_role(tmp_path):
    text = DESIGN_EXAMPLE.replace('"advance"]\n', '"sync_arrive any", "sync_wait any", '
                                                  '"sync any", "advance"]\n')
    text += "\n[barrier.any]\ncount = 3\n"
    spec = load_spec(write_spec(tmp_path, text))
    assert spec.barriers == (Barrier("any", (), count=3),)
    assert [op.name for op in spec.role("producer").body[-4:-1]] == ["sync_arrive", "sync_wait",
                                                                     "sync"]
    assert [op.barrier for op in spec.role("consumer").body[-4:-1]] == ["any"] * 3


def test_barrier_roles_still_restrict_with_count():
    text = DESIGN_EXAMPLE.replace('"read", "arrive_empty"', '"read", "sync_arrive wg", '
                                  '"sync_wait wg", "arrive_empty"')
    spec = load_spec_text(text + '\n[barrier.wg]\nroles = ["consumer"]\ncount = 1\n', "x.toml")
    assert spec.barriers == (Barrier("wg", ("consumer",), count=1),)
    with pytest.raises(SpecError, match="role 'producer' is not in \\[barrier.wg\\] roles"):
        load_spec_text(text.replace('"copy 16384"', '"copy 16384", "sync_arrive wg"')
                       + '\n[barrier.wg]\nroles = ["consumer"]\ncount = 1\n', "x.toml")


def test_async_reads_on_amd():
    text = """
[pipeline]
backend = "amd"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 4

[[role]]
name = "p"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]

[[role]]
name = "c"
side = "consumer"
count = 1
body = ["wait_full", "read_async", "read_wait 1", "commit_empty", "advance"]
epilogue = ["read_wait"]
"""
    consumer = load_spec_text(text, "x.toml").role("c")
    assert [(op.name, op.n) for op in consumer.body[1:3]] == [("read_async", 1), ("read_wait", 1)]
    assert consumer.epilogue == (Op(name="read_wait", n=0, text="read_wait"),)


def test_rings_with_template():
    roles = """
[ring.acc]
stages = 1
producer_arrive_count = 1
consumer_arrive_count = 1

[[role]]
name = "consumer"
body = ["wait_full", "read", "arrive_empty", "wait_empty ring=acc", "write ring=acc",
        "arrive_full ring=acc", "advance", "advance ring=acc"]

[[role]]
name = "epilogue"
side = "consumer"
count = 1
body = ["wait_full ring=acc", "read ring=acc", "arrive_empty ring=acc", "advance ring=acc"]
"""
    spec = load_spec_text(template_spec("mojo_producer_consumer", roles=roles), "t.toml")
    assert spec.rings == (Ring("acc", 1, 1, 1),)
    producer, consumer, epilogue = spec.roles
    assert producer.ring_phases == (("acc", 1),)
    assert consumer.initial_phase == 0 and consumer.ring_phases == (("acc", 1),)
    assert epilogue.ring_phases == (("acc", 0),)


def test_ctas_full_cluster_and_single():
    text = DESIGN_EXAMPLE.replace("items = 8", "items = 8\ncluster_size = 3").replace(
        'count = 2\nbody', 'count = 2\nctas = [2, 0, 1]\nbody').replace(
        'initial_phase = 1\n', 'initial_phase = 1\nctas = [1]\n')
    spec = load_spec_text(text, "x.toml")
    assert spec.role("consumer").ctas == (0, 1, 2)
    assert spec.role("producer").ctas == (1,)
