"""Malformed specs: each raises SpecError with one line naming the file, the key and what is
allowed (DESIGN.md "Spec files (TOML): the contract")."""
from __future__ import annotations


import pytest

from spec.load import load_spec, load_spec_text
from spec.schema import SpecError

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

# (id, spec text, fragments the message must contain: the key or op, and the hint)
CASES = [
    # TOML itself
    ("toml_syntax", edit("stages = 2", "stages = = 2"),
     [":3:", "TOML syntax error", "toml.io"]),
    ("toml_duplicate_key", edit("items = 2", "items = 2\nitems = 3"),
     ["TOML syntax error", "Cannot overwrite"]),
    # unknown keys
    ("unknown_top_level", GOOD + "\n[pipline]\nstages = 3\n",
     ["top level", "unknown key 'pipline'", "allowed: barrier, pipeline, role",
      "did you mean 'pipeline'"]),
    ("unknown_pipeline_key", pipeline_key("stagse = 4"),
     ["[pipeline]", "unknown key 'stagse'", "allowed: backend, cluster_size"]),
    ("unknown_role_key", consumer_key("ctas = [0]"),
     ["role 'consumer'", "unknown key 'ctas'", "allowed: body, count"]),
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
    ("bad_key_on_op", producer_body("write ring=acc"),
     ["op 'write ring=acc'", "unknown key 'ring'", "allowed on write: none"]),
    ("every_key_on_wait", producer_body("wait_empty every=2"),
     ["op 'wait_empty every=2'", "unknown key 'every'", "allowed on wait_empty: unless="]),
    ("at_key_on_arrive", producer_body("arrive_full at=1"),
     ["unknown key 'at'", "allowed on arrive_full: to="]),
    ("to_on_wait", producer_body("wait_empty to=all"),
     ["unknown key 'to'", "allowed on wait_empty: unless="]),
    ("unless_on_non_wait", producer_body("arrive_full unless=ready"),
     ["op 'arrive_full unless=ready'", "unknown key 'unless'", "allowed on arrive_full: to="]),
    ("unless_on_try", producer_body("try_empty unless=ready"),
     ["unknown key 'unless'", "allowed on try_empty: none"]),
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
    ("read_in_prologue", consumer_key('prologue = ["read"]'),
     ["role 'consumer' prologue[0]", "'read' is not allowed in prologue", "only allowed in body"]),
    ("write_in_epilogue", consumer_key('epilogue = ["advance", "write"]'),
     ["role 'consumer' epilogue[1]", "'write' is not allowed in epilogue"]),
    ("copy_in_prologue", consumer_key('prologue = ["copy 64"]'),
     ["prologue[0]", "op 'copy 64'", "only allowed in body"]),
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
    ("barrier_no_roles", GOOD + "\n[barrier.b]\ncount = 2\n",
     ["[barrier.b] roles", "missing required key"]),
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
