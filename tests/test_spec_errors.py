"""Malformed specs: each raises SpecError with one line naming the file, the key and what is
allowed (docs/model.md "Spec files (TOML)")."""
from __future__ import annotations


import pytest

from pipeproof.spec.load import load_spec, load_spec_text
from pipeproof.spec.schema import SpecError

PIPELINE = """\
[pipeline]
backend = "nvidia"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 1
items = 2
"""
PRODUCER = """
[[role]]
name = "producer"
side = "producer"
count = 1
body = ["wait_empty", "write", "arrive_full", "advance"]
"""
CONSUMER = """
[[role]]
name = "consumer"
side = "consumer"
count = 1
body = ["wait_full", "read", "arrive_empty", "advance"]
"""
GOOD = PIPELINE + PRODUCER + CONSUMER
TEMPLATED = '[pipeline]\ntemplate = "mojo_producer_consumer"\nbackend = "nvidia"\nstages = 2\n' \
            'items = 2\n'


def edit(old: str, new: str, text: str = GOOD) -> str:
    """`text` with `old` replaced by `new`; `old` must be there, so a case cannot go stale."""
    assert old in text, old
    return text.replace(old, new, 1)


def pipeline_key(line: str) -> str:
    return edit("items = 2\n", f"items = 2\n{line}\n")


def set_pipeline(key: str, value: str) -> str:
    lines = [ln for ln in GOOD.splitlines() if not ln.startswith(f"{key} =")]
    lines.insert(1, f"{key} = {value}")
    return "\n".join(lines) + "\n"


def producer_body(*ops: str) -> str:
    quoted = ", ".join(f'"{op}"' for op in ops)
    return edit('body = ["wait_empty", "write", "arrive_full", "advance"]', f"body = [{quoted}]")


def consumer_key(line: str) -> str:
    return edit('count = 1\nbody = ["wait_full"', f'count = 1\n{line}\nbody = ["wait_full"')


SYNC_ROLES = GOOD + '\n[barrier.b]\nroles = ["consumer"]\n'
RING_ACC = """
[ring.acc]
stages = 2
producer_arrive_count = 1
consumer_arrive_count = 2
"""
RINGS = GOOD + RING_ACC  # a spec with one extra ring, `acc`


def ring_producer_body(*ops: str) -> str:
    return producer_body(*ops) + RING_ACC


def ring_acc(old: str, new: str) -> str:
    """RINGS with `old` replaced by `new` in the [ring.acc] table."""
    return GOOD + edit(old, new, RING_ACC)


def ring_consumer_key(line: str) -> str:
    return consumer_key(line) + RING_ACC

# (id, spec text, fragments the message must contain: the key or op, and the hint)
CASES = [
    # TOML itself
    ("toml_syntax", edit("stages = 2", "stages = = 2"),
     [":3:", "TOML syntax error", "toml.io"]),
    ("toml_duplicate_key", edit("items = 2", "items = 2\nitems = 3"),
     ["TOML syntax error", "Cannot overwrite"]),
    # unknown keys
    ("unknown_top_level", GOOD + "\n[pipline]\nstages = 3\n",
     ["top level", "unknown key 'pipline'", "allowed: barrier, pipeline, ring, role",
      "did you mean 'pipeline'"]),
    ("unknown_pipeline_key", pipeline_key("stagse = 4"),
     ["[pipeline]", "unknown key 'stagse'", "allowed: backend, cluster_size"]),
    ("unknown_role_key", consumer_key("cta = [0]"),
     ["role 'consumer'", "unknown key 'cta'", "allowed: body, count, ctas",
      "did you mean 'ctas'"]),
    ("unknown_barrier_key", SYNC_ROLES + "size = 3\n",
     ["[barrier.b]", "unknown key 'size'", "allowed: count, roles"]),
    # structure
    ("missing_pipeline", PRODUCER + CONSUMER, ["[pipeline]", "missing required table"]),
    ("pipeline_not_table", "pipeline = 3\n" + PRODUCER, ["pipeline", "must be a table"]),
    ("role_not_array", edit("[[role]]", "[role]", PIPELINE + PRODUCER),
     ["role", "array of tables", "[[role]]"]),
    ("barrier_not_table_of_tables", GOOD + '\n[barrier]\nroles = ["consumer"]\n',
     ["[barrier] roles", "must be a table", "[barrier.roles]"]),
    ("no_roles", PIPELINE, ["[[role]]", "no roles", "at least one"]),
    # wrong types
    ("string_for_int", set_pipeline("stages", '"4"'),
     ["[pipeline] stages", "integer from 1 to 64", "got '4'"]),
    ("bool_for_int", set_pipeline("stages", "true"),
     ["[pipeline] stages", "integer from 1 to 64", "got true"]),
    ("float_for_int", set_pipeline("stages", "4.0"),
     ["[pipeline] stages", "integer from 1 to 64", "got 4.0"]),
    ("list_for_str", pipeline_key('name = ["a"]'), ["[pipeline] name", "must be a string"]),
    ("int_for_backend", set_pipeline("backend", "1"),
     ["[pipeline] backend", "one of: nvidia, amd", "got 1"]),
    ("bool_for_role_count", edit("\ncount = 1", "\ncount = true"),
     ["role 'producer' count", "integer from 1 to 64", "got true"]),
    ("body_not_list", edit('body = ["wait_full", "read", "arrive_empty", "advance"]',
                           'body = "wait_full"'),
     ["role 'consumer' body", "list of op strings"]),
    ("op_not_string", producer_body("wait_empty").replace('["wait_empty"]', '["wait_empty", 3]'),
     ["role 'producer' body[1]", "must be an op string", "got 3"]),
    # ranges
    ("zero_stages", set_pipeline("stages", "0"), ["[pipeline] stages", "from 1 to 64, got 0"]),
    ("negative_stages", set_pipeline("stages", "-1"), ["[pipeline] stages", "got -1"]),
    ("huge_stages", set_pipeline("stages", "65"), ["[pipeline] stages", "got 65"]),
    ("giant_stages", set_pipeline("stages", str(2 ** 70)), ["[pipeline] stages", "from 1 to 64"]),
    ("zero_count", edit("\ncount = 1", "\ncount = 0"),
     ["role 'producer' count", "from 1 to 64, got 0"]),
    ("huge_count", edit("\ncount = 1", "\ncount = 65"), ["role 'producer' count", "got 65"]),
    ("negative_items", set_pipeline("items", "-1"),
     ["[pipeline] items", "from 0 to 100000, got -1"]),
    ("huge_items", set_pipeline("items", "100001"), ["[pipeline] items", "got 100001"]),
    ("negative_role_items", consumer_key("items = -5"),
     ["role 'consumer' items", "from 0 to 100000"]),
    ("zero_producer_arrive_count", set_pipeline("producer_arrive_count", "0"),
     ["[pipeline] producer_arrive_count", "from 1 to 1048575, got 0"]),
    ("huge_consumer_arrive_count", set_pipeline("consumer_arrive_count", "1048576"),
     ["[pipeline] consumer_arrive_count", "from 1 to 1048575, got 1048576"]),
    ("zero_cluster", pipeline_key("cluster_size = 0"),
     ["[pipeline] cluster_size", "from 1 to 16, got 0"]),
    ("huge_cluster", pipeline_key("cluster_size = 17"),
     ["[pipeline] cluster_size", "from 1 to 16, got 17"]),
    ("zero_k_group", pipeline_key("k_group_size = 0"),
     ["[pipeline] k_group_size", "from 1 to 64"]),
    ("initial_stage_out_of_range", consumer_key("initial_stage = 2"),
     ["role 'consumer' initial_stage", "from 0 to 1, got 2"]),
    ("negative_initial_phase", consumer_key("initial_phase = -1"),
     ["role 'consumer' initial_phase", "from 0 to 4294967295"]),
    # required keys
    ("missing_backend", set_pipeline("backend", '"x"').replace('backend = "x"\n', ""),
     ["[pipeline] backend", "missing required key", "nvidia, amd"]),
    ("missing_stages", GOOD.replace("stages = 2\n", ""),
     ["[pipeline] stages", "missing required key", "from 1 to 64"]),
    ("missing_arrive_count", GOOD.replace("producer_arrive_count = 1\n", ""),
     ["[pipeline] producer_arrive_count", "missing required key"]),
    ("missing_side", edit('side = "consumer"\n', ""),
     ["role 'consumer' side", "missing required key", "producer, consumer"]),
    ("missing_count", edit('count = 1\nbody = ["wait_full"', 'body = ["wait_full"'),
     ["role 'consumer' count", "missing required key"]),
    ("missing_role_name", edit('name = "consumer"\n', ""), ["role[1] name", "missing required"]),
    # enumerations and names
    ("unknown_backend", set_pipeline("backend", '"intel"'),
     ["[pipeline] backend", "unknown backend 'intel'", "allowed: nvidia, amd"]),
    ("unknown_side", edit('side = "consumer"', 'side = "both"'),
     ["role 'consumer' side", "unknown side 'both'", "allowed: producer, consumer"]),
    ("bad_expect", pipeline_key('expect = "deadlok"'),
     ["[pipeline] expect", "unknown verdict 'deadlok'", "allowed: ok, deadlock",
      "did you mean 'deadlock'"]),
    ("expect_any_not_list", pipeline_key('expect_any = "ok"'),
     ["[pipeline] expect_any", "list of verdicts", "allowed: ok"]),
    ("bad_expect_any_item", pipeline_key('expect_any = ["ok", "hang"]'),
     ["[pipeline] expect_any[1]", "unknown verdict 'hang'", "allowed: ok"]),
    ("duplicate_role_name", GOOD + PRODUCER,
     ["role[2] name", "duplicate role name 'producer'", "unique"]),
    ("bad_role_name", edit('name = "consumer"', 'name = "my consumer"'),
     ["role[1] name", "bad role name 'my consumer'", "identifier"]),
    # ops
    ("unknown_op", edit('"arrive_empty"', '"arrive_ful"'),
     ["role 'consumer' body[2]", "unknown op 'arrive_ful'", "expected one of: wait_full",
      "did you mean 'arrive_full'"]),
    ("empty_op", producer_body("wait_empty", ""),
     ["role 'producer' body[1]", "empty op", "expected one of"]),
    ("operand_missing", producer_body("wait_empty", "copy", "advance"),
     ["role 'producer' body[1]", "op 'copy'", "missing byte count", "copy 16384"]),
    ("expect_tx_operand_missing", producer_body("expect_tx @leader"),
     ["body[0]", "op 'expect_tx @leader'", "missing byte count"]),
    ("operand_extra", producer_body("arrive_full 1 2"),
     ["body[0]", "op 'arrive_full 1 2'", "unexpected extra operand '2'", "at most one count"]),
    ("operand_bad", producer_body("arrive_full x"),
     ["op 'arrive_full x'", "count must be an integer from 1 to 1048575, got 'x'"]),
    ("operand_zero", producer_body("arrive_full 0"), ["op 'arrive_full 0'", "from 1 to"]),
    ("operand_negative", producer_body("arrive_full -1"), ["op 'arrive_full -1'", "got '-1'"]),
    ("operand_over_count_limit", producer_body("commit_empty 1048576"),
     ["op 'commit_empty 1048576'", "from 1 to 1048575"]),
    ("operand_over_byte_limit", producer_body("copy 4294967296"),
     ["op 'copy 4294967296'", "byte count must be an integer from 1 to 4294967295"]),
    ("operand_on_no_operand_op", producer_body("write 3"),
     ["op 'write 3'", "unexpected operand '3'", "write takes no operand"]),
    ("bad_key_on_op", producer_body("write rng=acc"),
     ["op 'write rng=acc'", "unknown key 'rng'", "allowed on write: to=..., ring=..., every=..., at=...",
      "did you mean 'ring'"]),
    ("every_key_typo_on_wait", producer_body("wait_empty evry=2"),
     ["op 'wait_empty evry=2'", "unknown key 'evry'", "allowed on wait_empty: unless=",
      "did you mean 'every'"]),
    ("to_on_wait", producer_body("wait_empty to=all"),
     ["unknown key 'to'", "allowed on wait_empty: unless="]),
    ("unless_on_non_wait", producer_body("arrive_full unless=ready"),
     ["op 'arrive_full unless=ready'", "unknown key 'unless'", "allowed on arrive_full: to="]),
    ("unless_on_try", producer_body("try_empty unless=ready"),
     ["unknown key 'unless'", "allowed on try_empty: ring=..., every=..., at=..."]),
    ("unless_bad_value", producer_body("wait_empty unless=done"),
     ["op 'wait_empty unless=done'", "allowed: unless=ready"]),
    ("bad_target", producer_body("arrive_full to=everyone"),
     ["unknown target 'everyone'", "allowed: to=self, to=leader, to=peer, to=all"]),
    ("duplicate_op_key", producer_body("arrive_full to=all to=self"),
     ["op 'arrive_full to=all to=self'", "duplicate key 'to'"]),
    ("bad_qualifier", producer_body("arrive_full @leaders"),
     ["unknown qualifier '@leaders'", "allowed: @leader"]),
    ("leader_twice", producer_body("arrive_full @leader @leader"), ["@leader given twice"]),
    # sections
    # (every op may appear in every section; only a read no fill pairs with is refused)
    ("read_in_epilogue_of_a_body_ring", consumer_key('epilogue = ["advance", "read"]'),
     ["role 'consumer' epilogue[1]", "op 'read'", "no fill pairs with this read",
      "filled in the body but not in the epilogue"]),
    ("prologue_not_list", consumer_key("prologue = 3"),
     ["role 'consumer' prologue", "list of op strings"]),
    # backend rules
    ("copy_on_amd", set_pipeline("backend", '"amd"').replace('"write"', '"copy 64"'),
     ["role 'producer' body[1]", "op 'copy 64'", "not available on backend 'amd'", "nvidia only"]),
    ("expect_tx_on_amd", set_pipeline("backend", '"amd"').replace('"arrive_full"',
                                                                  '"expect_tx 64"'),
     ["role 'producer' body[2]", "'expect_tx' is not available on backend 'amd'", "nvidia only"]),
    ("cluster_on_amd", set_pipeline("backend", '"amd"').replace("items = 2", "items = 2\n"
                                                                "cluster_size = 2"),
     ["[pipeline] cluster_size", "must be 1 on backend 'amd'", "nvidia only"]),
    # named barriers
    ("undefined_barrier", producer_body("sync nope"),
     ["role 'producer' body[0]", "op 'sync nope'", "barrier 'nope' is not defined",
      "[barrier.nope]"]),
    ("sync_missing_name", producer_body("sync"), ["op 'sync'", "missing barrier name"]),
    ("sync_not_member", SYNC_ROLES.replace('"write"', '"sync b"'),
     ["role 'producer' body[1]", "role 'producer' is not in [barrier.b] roles",
      "roles: consumer"]),
    ("barrier_unknown_role", GOOD + '\n[barrier.b]\nroles = ["consumer", "mma"]\n',
     ["[barrier.b] roles[1]", "unknown role 'mma'", "allowed: producer, consumer"]),
    ("barrier_no_roles_no_count", GOOD + "\n[barrier.b]\n",
     ["[barrier.b]: missing required key: roles or count", "role names: producer, consumer",
      "count = arrivals per CTA"]),
    ("barrier_empty_roles", GOOD + "\n[barrier.b]\nroles = []\n",
     ["[barrier.b] roles", "non-empty list of role names"]),
    ("barrier_zero_count", SYNC_ROLES + "count = 0\n",
     ["[barrier.b] count", "from 1 to 1048575, got 0"]),
    ("barrier_role_twice", GOOD + '\n[barrier.b]\nroles = ["consumer", "consumer"]\n',
     ["[barrier.b] roles[1]", "listed twice"]),
    ("barrier_bad_name", GOOD + '\n[barrier."a b"]\nroles = ["consumer"]\n',
     ["[barrier.'a b']", "bad barrier name", "identifier"]),
    # templates
    ("template_key_without_template", pipeline_key("consumers = 2"),
     ["[pipeline] consumers", "only allowed with a template", "mojo_producer_consumer"]),
    ("tile_bytes_without_template", pipeline_key("tile_bytes = 4096"),
     ["[pipeline] tile_bytes", "only allowed with a template"]),
    ("unknown_template", TEMPLATED.replace("mojo_producer_consumer", "cutlas"),
     ["[pipeline] template", "unknown template 'cutlas'",
      "allowed: mojo_producer_consumer, mojo_input_tile, sm90_ring, cutlass_tma_async"]),
    ("template_not_string", TEMPLATED.replace('"mojo_producer_consumer"', "3"),
     ["[pipeline] template", "must be a string"]),
    ("template_nvidia_only_on_amd",
     TEMPLATED.replace("mojo_producer_consumer", "sm90_ring").replace("nvidia", "amd"),
     ["[pipeline] template", "'sm90_ring' is not available on backend 'amd'", "nvidia only"]),
    ("template_tile_bytes_small", TEMPLATED + "tile_bytes = 8\n",
     ["[pipeline] tile_bytes", "from 16 to 1048575, got 8"]),
    ("template_zero_consumers", TEMPLATED + "consumers = 0\n",
     ["[pipeline] consumers", "from 1 to 64, got 0"]),
    ("cutlass_tile_bytes_not_divisible",
     TEMPLATED.replace("mojo_producer_consumer", "cutlass_tma_async") + "cluster_size = 3\n",
     ["[pipeline] tile_bytes", "divisible by cluster_size 3", "got 16384"]),
    ("template_missing_items", TEMPLATED.replace("items = 2\n", ""),
     ["[pipeline] items", "missing required key"]),
    ("template_role_override_bad", TEMPLATED + '\n[[role]]\nname = "consumer"\ncount = 0\n',
     ["role 'consumer' count", "from 1 to 64, got 0"]),
] + [
    # [expressiveness]: several rings
    ("ring_undefined", producer_body("wait_empty ring=acx", "write"),
     ["role 'producer' body[0]", "op 'wait_empty ring=acx'", "ring 'acx' is not defined",
      "[ring.acx]", "defined: main"]),
    ("ring_undefined_lists_rings", ring_producer_body("wait_empty ring=acx"),
     ["op 'wait_empty ring=acx'", "ring 'acx' is not defined", "defined: main, acc",
      "did you mean 'acc'"]),
    ("ring_main_redefined", GOOD + RING_ACC.replace("[ring.acc]", "[ring.main]"),
     ["[ring.main]", "ring name 'main' is reserved", "[pipeline]"]),
    ("ring_key_typo", RINGS + "stagse = 3\n",
     ["[ring.acc]", "unknown key 'stagse'",
      "allowed: consumer_arrive_count, level, producer_arrive_count, stages", "did you mean 'stages'"]),
    ("ring_zero_stages", ring_acc("stages = 2", "stages = 0"),
     ["[ring.acc] stages", "integer from 1 to 64, got 0"]),
    ("ring_huge_stages", ring_acc("stages = 2", "stages = 65"),
     ["[ring.acc] stages", "integer from 1 to 64, got 65"]),
    ("ring_missing_stages", ring_acc("stages = 2\n", ""),
     ["[ring.acc] stages", "missing required key", "from 1 to 64"]),
    ("ring_missing_consumer_count", ring_acc("consumer_arrive_count = 2\n", ""),
     ["[ring.acc] consumer_arrive_count", "missing required key", "from 1 to 1048575"]),
    ("ring_zero_producer_count", ring_acc("producer_arrive_count = 1", "producer_arrive_count = 0"),
     ["[ring.acc] producer_arrive_count", "from 1 to 1048575, got 0"]),
    ("ring_string_count", ring_acc("consumer_arrive_count = 2", 'consumer_arrive_count = "2"'),
     ["[ring.acc] consumer_arrive_count", "integer from 1 to 1048575", "got '2'"]),
    ("ring_not_table_of_tables", GOOD + "\n[ring]\nstages = 2\n",
     ["[ring] stages", "must be a table", "[ring.stages]"]),
    ("ring_bad_name", GOOD + RING_ACC.replace("[ring.acc]", '[ring."a-b"]'),
     ["[ring.'a-b']", "bad ring name 'a-b'", "identifier"]),
    ("ring_bad_name_in_op", ring_producer_body("wait_empty ring="),
     ["op 'wait_empty ring='", "bad ring name ''", "[ring.NAME]"]),
    ("ring_twice_in_op", ring_producer_body("wait_empty ring=acc ring=main"),
     ["op 'wait_empty ring=acc ring=main'", "duplicate key 'ring'"]),
    ("ring_on_sync", edit('"read", "arrive_empty"', '"read", "sync b ring=acc", "arrive_empty"',
                          SYNC_ROLES + RING_ACC),
     ["role 'consumer' body[2]", "op 'sync b ring=acc'", "ring= is not allowed on sync",
      "allowed on: wait_full"]),
    ("ring_on_read_wait", ring_producer_body("read_wait ring=acc"),
     ["op 'read_wait ring=acc'", "ring= is not allowed on read_wait"]),
    ("ring_expect_tx_on_amd", edit('backend = "nvidia"', 'backend = "amd"',
                                   ring_producer_body("expect_tx 64 ring=acc")),
     ["op 'expect_tx 64 ring=acc'", "not available on backend 'amd'", "nvidia only"]),
    ("initial_stage_checks_main_ring", consumer_key("initial_stage = 4")
                                        + RING_ACC.replace("stages = 2", "stages = 8"),
     ["role 'consumer' initial_stage", "from 0 to 1, got 4"]),
    # every= / at=
    ("every_zero", producer_body("write every=0"),
     ["role 'producer' body[0]", "op 'write every=0'", "every must be an integer from 1 to 100000",
      "got '0'"]),
    ("every_huge", producer_body("write every=100001"),
     ["op 'write every=100001'", "every must be an integer from 1 to 100000"]),
    ("every_not_integer", producer_body("write every=k"),
     ["op 'write every=k'", "every must be an integer", "got 'k'"]),
    ("at_not_below_every", producer_body("reset every=2 at=2"),
     ["op 'reset every=2 at=2'", "at (with every=2) must be an integer from 0 to 1", "got '2'"]),
    ("at_negative", producer_body("reset every=4 at=-1"),
     ["op 'reset every=4 at=-1'", "from 0 to 3", "got '-1'"]),
    ("at_without_every", producer_body("arrive_full at=1"),
     ["op 'arrive_full at=1'", "at= needs every=", "every=K at=j"]),
    ("every_in_prologue", consumer_key('prologue = ["advance every=2"]'),
     ["role 'consumer' prologue[0]", "op 'advance every=2'", "not allowed in prologue",
      "only allowed in body"]),
    ("every_one_in_epilogue", consumer_key('epilogue = ["advance every=1 at=0"]'),
     ["role 'consumer' epilogue[0]", "not allowed in epilogue", "select items"]),
    # ctas
    ("ctas_out_of_range", edit("items = 2\n", "items = 2\ncluster_size = 2\n",
                               consumer_key("ctas = [0, 2]")),
     ["role 'consumer' ctas[1]", "integer from 0 to 1", "cluster_size is 2", "got 2"]),
    ("ctas_without_cluster", consumer_key("ctas = [1]"),
     ["role 'consumer' ctas[0]", "integer from 0 to 0", "cluster_size is 1", "got 1"]),
    ("ctas_negative", consumer_key("ctas = [-1]"), ["role 'consumer' ctas[0]", "got -1"]),
    ("ctas_duplicate", edit("items = 2\n", "items = 2\ncluster_size = 4\n",
                            consumer_key("ctas = [3, 1, 3]")),
     ["role 'consumer' ctas[2]", "CTA 3 is listed twice"]),
    ("ctas_empty", consumer_key("ctas = []"),
     ["role 'consumer' ctas", "non-empty list of CTA indices from 0 to 0", "got []"]),
    ("ctas_not_list", consumer_key("ctas = 0"),
     ["role 'consumer' ctas", "non-empty list of CTA indices", "got 0"]),
    ("ctas_bool_item", consumer_key("ctas = [true]"),
     ["role 'consumer' ctas[0]", "integer from 0 to 0", "got true"]),
    # initial_phase as a table
    ("initial_phase_table_unknown_ring", ring_consumer_key("initial_phase = { main = 0, acx = 1 }"),
     ["role 'consumer' initial_phase.acx", "unknown ring 'acx'", "allowed: main, acc",
      "did you mean 'acc'"]),
    ("initial_phase_table_without_rings", consumer_key("initial_phase = { acc = 1 }"),
     ["role 'consumer' initial_phase.acc", "unknown ring 'acc'", "allowed: main"]),
    ("initial_phase_table_negative", ring_consumer_key("initial_phase = { acc = -1 }"),
     ["role 'consumer' initial_phase.acc", "integer from 0 to 4294967295", "got -1"]),
    ("initial_phase_table_huge", ring_consumer_key("initial_phase = { main = 4294967296 }"),
     ["role 'consumer' initial_phase.main", "integer from 0 to 4294967295"]),
    ("initial_phase_table_string", ring_consumer_key('initial_phase = { acc = "1" }'),
     ["role 'consumer' initial_phase.acc", "integer from 0 to 4294967295", "got '1'"]),
    ("initial_phase_string", ring_consumer_key('initial_phase = "1"'),
     ["role 'consumer' initial_phase", "integer from 0 to 4294967295",
      "or a table of ring = phase", "rings: main, acc", "got '1'"]),
    # async reads
    ("read_async_in_epilogue_of_a_body_ring", consumer_key('epilogue = ["read_async"]'),
     ["role 'consumer' epilogue[0]", "op 'read_async'", "no fill pairs with this read"]),
    ("read_async_operand", producer_body("read_async 2"),
     ["op 'read_async 2'", "unexpected operand '2'", "read_async takes no operand"]),
    ("read_wait_too_big", producer_body("read_wait 65"),
     ["op 'read_wait 65'", "count must be an integer from 0 to 64", "got '65'"]),
    ("read_wait_negative", producer_body("read_wait -1"),
     ["op 'read_wait -1'", "from 0 to 64"]),
    ("read_wait_two_operands", producer_body("read_wait 1 2"),
     ["op 'read_wait 1 2'", "unexpected extra operand '2'", "at most one count"]),
    ("read_wait_to", producer_body("read_wait to=all"),
     ["op 'read_wait to=all'", "unknown key 'to'", "allowed on read_wait: every=..., at=..."]),
    # named barrier variants
    ("sync_wait_undefined_barrier", producer_body("sync_wait nope"),
     ["role 'producer' body[0]", "op 'sync_wait nope'", "barrier 'nope' is not defined",
      "[barrier.nope]", "defined: none"]),
    ("sync_arrive_missing_name", producer_body("sync_arrive"),
     ["op 'sync_arrive'", "missing barrier name", "'sync_arrive NAME'"]),
    ("sync_arrive_bad_name", producer_body("sync_arrive 3"),
     ["op 'sync_arrive 3'", "bad barrier name '3'"]),
    ("sync_wait_two_names", SYNC_ROLES.replace('"read"', '"sync_wait b c"'),
     ["op 'sync_wait b c'", "unexpected extra operand 'c'", "sync_wait takes one barrier name"]),
    ("sync_arrive_not_member", SYNC_ROLES.replace('"write"', '"sync_arrive b"'),
     ["role 'producer' body[1]", "op 'sync_arrive b'", "role 'producer' is not in [barrier.b]",
      "roles: consumer"]),
    ("barrier_count_only_zero", GOOD + "\n[barrier.b]\ncount = 0\n",
     ["[barrier.b] count", "from 1 to 1048575, got 0"]),
    ("barrier_count_only_not_int", GOOD + '\n[barrier.b]\ncount = "all"\n',
     ["[barrier.b] count", "integer from 1 to 1048575", "got 'all'"]),
    ("barrier_empty_roles_with_count", GOOD + "\n[barrier.b]\nroles = []\ncount = 2\n",
     ["[barrier.b] roles", "non-empty list of role names"]),
]


def assert_spec_error(path, load, *fragments: str) -> str:
    with pytest.raises(SpecError) as info:
        load()
    message = str(info.value)
    assert "\n" not in message and "\r" not in message, message
    assert message.startswith(str(path)), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


def test_enough_cases():
    assert len(CASES) >= 25
    assert sum(1 for _, text, _ in CASES if "ring" in text or "every" in text or "ctas" in text
               or "read_" in text or "sync_" in text) >= 15
    assert len({case_id for case_id, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("text, fragments", [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_malformed_spec(tmp_path, text, fragments):
    path = tmp_path / "bad_spec.toml"
    path.write_text(text, encoding="utf-8")
    assert_spec_error(path, lambda: load_spec(path), *fragments)


def test_good_base_loads(tmp_path):
    # The cases above are edits of GOOD and TEMPLATED; both must be valid as they stand.
    assert load_spec_text(GOOD, "good.toml").roles
    assert load_spec_text(TEMPLATED, "templated.toml").roles
    assert load_spec_text(SYNC_ROLES, "sync.toml").barriers
    assert load_spec_text(RINGS, "rings.toml").rings


def test_load_spec_text_names_path():
    assert_spec_error("some/dir/x.toml", lambda: load_spec_text(set_pipeline("stages", "0"),
                                                                 "some/dir/x.toml"),
                      "some/dir/x.toml: [pipeline] stages: must be an integer from 1 to 64, got 0")


# ---------------------------------------------------------------------------------------
# Files that are not specs


@pytest.mark.parametrize("content", ["", "   \n\n\t\n"], ids=["empty", "whitespace"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "empty.toml"
    path.write_text(content)
    assert_spec_error(path, lambda: load_spec(path), "empty file", "[pipeline]")


def test_comments_only_file(tmp_path):
    path = tmp_path / "comments.toml"
    path.write_text("# nothing here\n")
    assert_spec_error(path, lambda: load_spec(path), "[pipeline]", "missing required table")


def test_binary_file(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(bytes(range(256)))
    assert_spec_error(path, lambda: load_spec(path), "binary file", "expected UTF-8 TOML text")


def test_non_utf8_file(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes("[pipeline]\nname = \"caf\xe9\"\n".encode("latin-1"))
    assert_spec_error(path, lambda: load_spec(path), "not UTF-8", "expected UTF-8 TOML text")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.toml"
    assert_spec_error(path, lambda: load_spec(path), "no such file", "expected a .toml spec")


def test_directory(tmp_path):
    assert_spec_error(tmp_path, lambda: load_spec(tmp_path), "is a directory",
                      "expected a .toml spec")


def test_newline_in_value_stays_one_line(tmp_path):
    path = tmp_path / "multi.toml"
    path.write_text(set_pipeline("backend", '"""nv\nidia"""'))
    assert_spec_error(path, lambda: load_spec(path), "[pipeline] backend", "allowed: nvidia, amd")


def test_spec_is_never_executed(tmp_path):
    # Op strings are tokens, never code: a Python expression is just an unknown op.
    path = tmp_path / "evil.toml"
    path.write_text(producer_body("__import__('os').system('false')"))
    assert_spec_error(path, lambda: load_spec(path), "unknown op")
