"""`pipeproof sweep` (docs/sweep.md): the grid and its TOML, each point's record against a
direct `verify` of the same text, the local pool and a real Dask cluster against the run in
this process, the cache and --resume after an interrupt, the command's outputs (table, JSON,
CSV, traces, heatmap) and its errors, and the autotune configs of a Triton kernel."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import tomllib

import pytest
from click.testing import CliRunner

from pipeproof.checker.sweep import grid as G
from pipeproof.checker.sweep import run as R
from pipeproof.checker.cli.main import main
from pipeproof.checker.sweep.points import points_of_spec, run_sweep
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError
from tests.paths import CLI, EXAMPLE_PATHS, FIXTURES_DIR, ROOT, example_path
from tests.specs import standard_toml

PCP = str(example_path("mojo_pcp_nvidia"))  # the template, declares expect = "ok"
# the arrive count must equal the number of consumers: ok on the diagonal only
COUNT_SETS = ["role.consumer.count=1..3", "consumer_arrive_count=1..3", "stages=1,2"]
TIMING = ("seconds", "worker_seconds")


@pytest.fixture
def standard(tmp_path):
    path = tmp_path / "standard.toml"
    path.write_text(standard_toml(stages=2, consumers=2, items=3))
    return str(path)


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("PIPEPROOF_SWEEP_CACHE", str(folder))
    return folder


def _answers(records):
    """Everything but the clock."""
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


# ------------------------------------------------------------------ the grid and its TOML

@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.name)
def test_to_toml_round_trips_every_example(path):
    text = path.read_text()
    document = tomllib.loads(text)
    written = G.to_toml(document)
    assert tomllib.loads(written) == document
    assert load_spec_text(written, str(path)) == load_spec_text(text, str(path))


def test_to_toml_escapes_strings_and_nests_tables():
    document = {"odd key": 'q"\\\n\t\x7f\x01', "a": {"b": {"c": 1}, "d": [1.5, float("inf")]},
                "r": [{"n": 1, "t": {"k": [1, {"z": True}]}}, {"n": 2, "e": []}], "empty": {}}
    assert tomllib.loads(G.to_toml(document)) == document


def test_values_ranges_lists_and_words():
    assert G.parse_values("2,4,8", "w") == (2, 4, 8)
    assert G.parse_values("1..3, 8", "w") == (1, 2, 3, 8)
    assert G.parse_values("-1..1", "w") == (-1, 0, 1)
    assert G.parse_values("nvidia,amd", "w") == ("nvidia", "amd")
    assert G.parse_values("true,false", "w") == (True, False)
    for bad, words in (("3..1", "is empty"), ("1,,2", "empty value"), ("", "empty value")):
        with pytest.raises(SpecError, match=words):
            G.parse_values(bad, "--set x")
    with pytest.raises(SpecError, match="value 2 is given twice"):
        G.axis_from_text("stages=2,1..3")


def test_keys_name_pipeline_role_ring_and_barrier_keys():
    assert G.parse_key("stages", "w") == ("pipeline", "stages")
    assert G.parse_key("pipeline.consumers", "w") == ("pipeline", "consumers")
    assert G.parse_key("role.consumer.count", "w") == ("role", "consumer", "count")
    assert G.parse_key("ring.acc.stages", "w") == ("ring", "acc", "stages")
    assert G.parse_key("barrier.epi.count", "w") == ("barrier", "epi", "count")
    with pytest.raises(SpecError, match=r"unknown key 'stage' \(expected a \[pipeline\] key"):
        G.parse_key("stage", "--set stage")
    with pytest.raises(SpecError, match="unknown role key 'cnt' .*count"):
        G.parse_key("role.consumer.cnt", "--set")
    with pytest.raises(SpecError, match="cannot be swept"):
        G.parse_key("role.consumer.name", "--set")


def test_grid_is_the_product_in_axis_order_last_fastest(standard):
    points = points_of_spec(standard, ["stages=1,2", "items=1..3"])
    assert [p.params for p in points] == [{"stages": s, "items": i} for s in (1, 2) for i in (1, 2, 3)]
    assert [p.index for p in points] == list(range(6))
    spec = load_spec_text(points[4].text, points[4].where)
    assert (spec.stages, spec.items) == (2, 2)
    assert points[4].where == f"{standard}[stages=2 items=2]"


def test_role_key_overrides_a_template_role_and_tied_keys_move_together():
    points = points_of_spec(PCP, ["role.consumer.count+consumer_arrive_count=1,3"])
    specs = [load_spec_text(p.text, p.where) for p in points]
    assert [p.params for p in points] == [{"role.consumer.count+consumer_arrive_count": v} for v in (1, 3)]
    assert [(s.roles[1].name, s.roles[1].count, s.consumer_arrive_count) for s in specs] == \
        [("consumer", 1, 1), ("consumer", 3, 3)]


def test_sweep_table_in_the_spec_and_set_replacing_an_axis_in_place(tmp_path):
    path = tmp_path / "swept.toml"
    path.write_text(standard_toml() + '\n[sweep]\nstages = [1, 2]\nrole.consumer.count = "1..2"\n'
                    '"consumer_arrive_count+items" = [3]\n')
    points = points_of_spec(str(path))
    assert [list(p.params.values()) for p in points] == [[s, c, 3] for s in (1, 2) for c in (1, 2)]
    assert "sweep" not in tomllib.loads(points[0].text)
    replaced = points_of_spec(str(path), ["stages=4"])
    assert list(replaced[0].params) == ["stages", "role.consumer.count", "consumer_arrive_count+items"]
    assert [p.params["stages"] for p in replaced] == [4, 4]


def test_a_key_swept_twice_or_nothing_to_sweep_is_one_line(standard):
    with pytest.raises(SpecError, match="key stages is swept by both 'stages' and 'stages\\+items'"):
        points_of_spec(standard, ["stages=1", "stages+items=2"])
    with pytest.raises(SpecError, match="nothing to sweep"):
        points_of_spec(standard, [])


# ------------------------------------------------------------------ the records

def test_each_record_is_what_verify_says_of_the_points_text(standard):
    points = points_of_spec(standard, COUNT_SETS)
    result = run_sweep(points, jobs=1)
    assert len(result.records) == 18
    for point, record in zip(points, result.records):
        direct = verify(load_spec_text(point.text, point.where))
        assert record["params"] == point.params and record["index"] == point.index
        assert (record["verdict"], record["kind"], record["states"], record["transitions"]) == \
            (direct.verdict, direct.kind, direct.states, direct.transitions)
        if direct.verdict == "violation":
            assert record["depth"] == len(direct.traces[direct.kind].steps)
            assert record["trace"]["states"]  # the ITF document
        assert record["seconds"] >= 0 and record["worker_seconds"] >= record["seconds"]
    diagonal = [r["verdict"] == "ok" for r in result.records]
    assert diagonal == [r["params"]["role.consumer.count"] == r["params"]["consumer_arrive_count"]
                        for r in result.records]
    assert result.exit_code == 1
    assert result.counts() == {"ok": 6, "violation": 12, "inconclusive": 0, "error": 0}


def test_a_point_that_is_not_a_spec_is_an_error_record_with_the_loaders_line():
    points = points_of_spec(PCP, ["consumers=0..2"])
    result = run_sweep(points, jobs=1)
    bad, *good = result.records
    assert bad["verdict"] == "error" and bad["exit_code"] == 2
    assert bad["message"] == (f"{PCP}[consumers=0]: [pipeline] consumers: must be an integer "
                              f"from 1 to 64, got 0")
    assert [r["verdict"] for r in good] == ["ok", "ok"]
    assert result.exit_code == 2


def test_keys_that_cannot_be_set_make_an_error_point(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('pipeline = 3\n')
    (point,) = points_of_spec(str(path), ["stages=2"])
    assert point.error == f"{path}[stages=2]: [pipeline] is not a table (cannot set stages)"
    (record,) = run_sweep([point], jobs=1).records
    assert (record["verdict"], record["exit_code"], record["message"]) == ("error", 2, point.error)


def test_the_spec_declared_expect_is_not_applied_to_the_points():
    """Issue 32: a sweep judges points, not the base spec's `expect = "ok"` (PCP declares it)."""
    result = run_sweep(points_of_spec(PCP, ["consumer_arrive_count=1,2"]), jobs=1)
    broken, base = result.records
    assert (broken["verdict"], broken["as_expected"], broken["exit_code"]) == ("violation", None, 1)
    assert (base["verdict"], base["as_expected"], base["exit_code"]) == ("ok", None, 0)
    assert result.exit_code == 1


def test_prove_each_point_and_the_worse_answer_is_the_verdict(standard):
    result = run_sweep(points_of_spec(standard, ["consumer_arrive_count=2,3", "stages=1,2"]),
                       {"prove": True}, jobs=1)
    ok = [r for r in result.records if r["params"]["consumer_arrive_count"] == 2]
    bad = [r for r in result.records if r["params"]["consumer_arrive_count"] == 3]
    assert all(r["verdict"] == "ok" and r["proof"]["status"] == "proved"
               and r["proof"]["abstract_states"] > 0 for r in ok)
    assert all(r["verdict"] == "violation" and r["proof"]["status"] == "violated" for r in bad)


def test_an_internal_error_is_the_points_record_with_exit_4_and_the_sweep_goes_on(standard, monkeypatch,
                                                                                tmp_path):
    import pipeproof.checker.engines.verifier as V
    real = V.verify

    def flaky(spec, **kw):
        if spec.stages == 2:
            raise RuntimeError("boom")
        return real(spec, **kw)

    monkeypatch.setattr(V, "verify", flaky)
    # the engines' face keeps a name once resolved (lazy_loader caches it on the package)
    import pipeproof.checker.engines as engines
    monkeypatch.setattr(engines, "verify", flaky)
    cache = R.Cache(tmp_path / "c", R.default_options())
    result = run_sweep(points_of_spec(standard, ["stages=1,2,3"]), cache=cache, jobs=1)
    one, two, three = result.records
    assert (one["verdict"], three["verdict"]) == ("ok", "ok")
    assert (two["verdict"], two["exit_code"]) == ("error", 4)
    assert two["message"] == f"{standard}[stages=2]: internal error (please report): RuntimeError: boom"
    assert "Traceback" in two["traceback"]
    assert result.exit_code == 4
    assert len(list((tmp_path / "c").rglob("*.json"))) == 2  # the internal error is not cached


def test_limits_give_inconclusive_never_ok(standard):
    result = run_sweep(points_of_spec(standard, ["stages=1,2"]), {"max_states": 2}, jobs=1)
    assert [(r["verdict"], r["exit_code"]) for r in result.records] == [("inconclusive", 3)] * 2
    assert all("max-states" in r["limit"] for r in result.records)


# ------------------------------------------------------------------ where the points run

def test_local_pool_gives_the_records_of_this_process_in_the_same_order(standard):
    points = points_of_spec(standard, COUNT_SETS)
    here = run_sweep(points, jobs=1)
    pool = run_sweep(points, jobs=2)
    assert pool.runner == "2 local worker processes" and pool.workers == 2
    assert _answers(pool.records) == _answers(here.records)


def test_a_dask_cluster_of_two_worker_processes_gives_the_local_records(standard):
    distributed = pytest.importorskip("distributed")
    points = points_of_spec(standard, COUNT_SETS + ["items=0,3"])
    points += points_of_spec(PCP, ["consumers=0,2"])  # an error point travels too
    for i, p in enumerate(points):
        p.index = i
    local = run_sweep(points, jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = run_sweep(points, cluster=cluster.scheduler_address)
        with distributed.Client(cluster.scheduler_address) as client:
            pids = set(client.run(lambda: __import__("os").getpid()).values())
    assert remote.workers == 2 and len(pids) == 2
    assert remote.runner.startswith("Dask cluster tcp://")
    assert _answers(remote.records) == _answers(local.records)
    assert [r["verdict"] for r in remote.records].count("error") == 1


def test_an_unreachable_or_malformed_cluster_is_one_line():
    points = points_of_spec(PCP, ["stages=1"])
    with pytest.raises(SpecError, match=r"--cluster bogus://x: not a scheduler address"):
        run_sweep(points, cluster="bogus://x")
    runner = R.DaskCluster(R.default_options(), "tcp://127.0.0.1:9", connect_timeout=0.5)
    with pytest.raises(SpecError, match=r"--cluster tcp://127.0.0.1:9: cannot connect"):
        run_sweep(points, runner=runner)


# ------------------------------------------------------------------ cache, interrupt, resume

class _StopAfter(R.InProcess):
    """Ctrl-C after `n` points."""

    def __init__(self, options, n):
        super().__init__(options)
        self.n = n

    def run(self, tasks, done):
        for count, (index, text, where) in enumerate(tasks):
            if count == self.n:
                raise KeyboardInterrupt
            done(index, R.check_point(text, where, self.options))


def test_interrupted_sweep_resumes_from_the_cache_and_ends_as_one_run(standard, tmp_path):
    points = points_of_spec(standard, COUNT_SETS)
    options = R.default_options()
    cache = R.Cache(tmp_path / "cache", options)
    first = run_sweep(points, options, cache=cache, runner=_StopAfter(options, 5))
    assert first.interrupted and first.ran == 5
    assert [r["limit"] == R.NOT_RUN for r in first.records] == [False] * 5 + [True] * 13
    assert [r["exit_code"] for r in first.records[5:]] == [3] * 13  # inconclusive, not ok
    assert first.exit_code == 1  # the worst: violations among the first five
    resumed = run_sweep(points, options, cache=cache, resume=True, jobs=1)
    assert (resumed.cached, resumed.ran) == (5, 13)
    assert [r["cached"] for r in resumed.records] == [True] * 5 + [False] * 13
    fresh = run_sweep(points, options, jobs=1)
    strip = lambda records: [{k: v for k, v in r.items() if k not in ("cached", "hash")}
                             for r in _answers(records)]
    assert strip(resumed.records) == strip(fresh.records)
    again = run_sweep(points, options, cache=cache, resume=True, jobs=1)
    assert (again.cached, again.ran) == (18, 0)


def test_only_exact_answers_are_cached_and_the_key_is_the_content(standard, tmp_path):
    options = R.default_options(max_states=2)
    cache = R.Cache(tmp_path / "c", options)
    points = points_of_spec(standard, ["stages=1,2"])
    run_sweep(points, options, cache=cache, jobs=1)
    assert not list((tmp_path / "c").rglob("*.json"))  # inconclusive: never stored
    same = points_of_spec(standard, ["stages=1"])[0]
    assert cache.key(same.text) == cache.key(points[0].text) != cache.key(points[1].text)
    assert R.Cache(tmp_path / "c", R.default_options(prove=True)).key(same.text) != cache.key(same.text)


# ------------------------------------------------------------------ the command

def _invoke(args, **kw):
    return CliRunner().invoke(main, ["sweep", *args], catch_exceptions=False, **kw)


def test_command_json_csv_table_and_exit_code(standard, cache_env, tmp_path):
    csv_file = tmp_path / "out.csv"
    out = _invoke([standard, *sum((["--set", s] for s in COUNT_SETS), []), "-j", "1", "--json",
                   "--csv", str(csv_file)])
    assert out.exit_code == 1
    doc = json.loads(out.stdout)
    assert doc["schema"] == "pipeproof.sweep" and doc["counts"]["violation"] == 12
    assert doc["params"] == ["role.consumer.count", "consumer_arrive_count", "stages"]
    first = doc["points"][0]
    assert {"params", "verdict", "kind", "depth", "states", "seconds"} <= set(first)
    assert "trace" not in first
    rows = list(csv.DictReader(io.StringIO(csv_file.read_text())))
    assert [r["verdict"] for r in rows] == [p["verdict"] for p in doc["points"]]
    assert rows[3]["kind"] == "deadlock" and rows[3]["consumer_arrive_count"] == "2"
    assert "18 points: 6 ok, 12 violation (deadlock 6, over_arrival 2, overwrite_before_drain 4)" \
        in out.stderr  # the human report goes to stderr when stdout carries the JSON


def test_command_table_groups_by_verdict_worst_last(standard, cache_env):
    out = _invoke([standard, "--set", "consumer_arrive_count=3,2,1", "-j", "1"])
    lines = [ln.split() for ln in out.stdout.splitlines()]
    lines = [ln for ln in lines if len(ln) > 1 and ln[1] in ("ok", "violation")]
    assert [ln[1] for ln in lines] == ["ok", "violation", "violation"]
    assert [ln[0] for ln in lines] == ["2", "3", "1"]  # grid order within a group
    assert out.exit_code == 1


def test_command_trace_dir_holds_each_failing_points_trace_and_spec(standard, cache_env, tmp_path):
    folder = tmp_path / "traces"
    out = _invoke([standard, "--set", "consumer_arrive_count=1..3", "-j", "1", "--trace-dir",
                   str(folder)])
    assert out.exit_code == 1
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["consumer_arrive_count-1.itf.json", "consumer_arrive_count-1.toml",
                     "consumer_arrive_count-3.itf.json", "consumer_arrive_count-3.toml"]
    itf = json.loads((folder / "consumer_arrive_count-3.itf.json").read_text())
    again = verify(load_spec_text((folder / "consumer_arrive_count-3.toml").read_text(), "x"))
    assert again.kind == "deadlock" and len(itf["states"]) == again.depth + 1


def test_command_heatmap_png(standard, cache_env, tmp_path):
    png = tmp_path / "grid.png"
    out = _invoke([standard, *sum((["--set", s] for s in COUNT_SETS), []), "-j", "1",
                   "--plot", "role.consumer.count,consumer_arrive_count", "-o", str(png)])
    assert out.exit_code == 1
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image
    image = matplotlib.image.imread(str(png))
    assert image.shape[0] > 200 and image.shape[1] > 300


def test_heatmap_cells_hold_the_worst_point():
    from pipeproof.checker.sweep.plot import _cell_text, cells, resolve
    records = [{"params": {"a": a, "b": b, "c": c}, "verdict": v, "kind": k, "exit_code": e}
               for a, b, c, v, k, e in ((1, 1, 0, "ok", None, 0), (1, 1, 1, "violation", "deadlock", 1),
                                        (2, 1, 0, "ok", None, 0), (2, 1, 1, "ok", None, 0))]
    xs, ys, by = cells(records, "a", "b")
    assert (xs, ys) == ([1, 2], [1])
    worst = max(by[("1", "1")], key=R.severity)
    assert _cell_text(worst, by[("1", "1")]) == "deadlock\n1/2"
    assert _cell_text(by[("2", "1")][0], by[("2", "1")]) == "ok\n2/2"
    assert resolve("consumer_arrive_count", ["role.consumer.count+consumer_arrive_count", "x"]) == \
        "role.consumer.count+consumer_arrive_count"
    with pytest.raises(SpecError, match="'count' is not a swept parameter"):
        resolve("count", ["role.consumer.count"])


@pytest.mark.parametrize("args, message", [
    (["--set", "stages="], "--set stages: empty value in '' (expected values separated by commas"),
    (["--set", "stagez=1"], "--set stagez: unknown key 'stagez' (expected a [pipeline] key"),
    (["--set", "stages"], "--set 'stages': expected KEY=VALUES"),
    ([], "nothing to sweep"),
    (["--set", "stages=1,2", "--plot", "stages,nope"], "--plot: 'nope' is not a swept parameter (swept: stages)"),
    (["--set", "stages=1", "--cluster", "nowhere"], "--cluster nowhere: not a scheduler address"),
])
def test_bad_input_is_one_line_and_exit_2(standard, cache_env, args, message):
    out = _invoke([standard, *args, "-j", "1"] if "--cluster" not in args else [standard, *args])
    assert out.exit_code == 2
    errors = [ln for ln in out.stderr.splitlines() if not ln.startswith("sweep ")]
    assert len(errors) == 1 and message in errors[0], out.stderr
    assert "Traceback" not in out.output


def test_a_spec_that_does_not_parse_is_one_line(tmp_path, cache_env):
    path = tmp_path / "broken.toml"
    path.write_text("[pipeline\n")
    out = _invoke([str(path), "--set", "stages=1"])
    assert out.exit_code == 2 and out.stderr.count("\n") == 1
    assert out.stderr.startswith(f"{path}:1:")


def test_dry_run_lists_the_points_and_checks_nothing(standard, cache_env):
    out = _invoke([standard, "--set", "stages=0..1", "--dry-run"])
    assert out.exit_code == 0
    assert out.stdout.splitlines()[:2] == ["    0  stages=0", "    1  stages=1"]
    assert not cache_env.exists()


def test_the_console_command_with_two_local_workers(standard, tmp_path):
    done = subprocess.run([*CLI, "sweep", standard, "--set", "consumer_arrive_count=1..3", "-j", "2",
                           "--json", "--cache-dir", str(tmp_path / "c")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["runner"] == "2 local worker processes"
    assert [p["verdict"] for p in doc["points"]] == ["violation", "ok", "violation"]
    resumed = subprocess.run([*CLI, "sweep", standard, "--set", "consumer_arrive_count=1..3",
                              "-j", "2", "--json", "--resume", "--cache-dir", str(tmp_path / "c")],
                             capture_output=True, text=True, timeout=300, cwd=ROOT)
    again = json.loads(resumed.stdout)
    assert (again["cached"], again["ran"]) == (3, 0) and resumed.returncode == 1


# ------------------------------------------------------------------ Triton autotune configs

KERNEL = FIXTURES_DIR / "sweep" / "autotuned_ring.py"


def test_every_autotune_config_of_a_triton_kernel_is_compiled_and_checked(cache_env):
    pytest.importorskip("triton", reason="the Triton front end needs pip install 'pipeproof[triton]'")
    from pipeproof.checker.sweep.triton_points import points_of_kernel
    points = points_of_kernel(f"{KERNEL}::ring_rowsum_lap2", (), ["n_tiles=1..4"])
    assert [(p.params["STAGES"], p.params["n_tiles"]) for p in points] == \
        [(s, n) for s in (1, 2, 3) for n in (1, 2, 3, 4)]
    assert all(p.params["num_warps"] == 4 for p in points)
    result = run_sweep(points, jobs=1)
    got = {(r["params"]["STAGES"], r["params"]["n_tiles"]): r["kind"] or r["verdict"]
           for r in result.records}
    # the planted bug: the consumer's phase assumes 2 stages
    assert {k: v for k, v in got.items() if k[0] == 2} == {(2, n): "ok" for n in (1, 2, 3, 4)}
    assert [got[(1, n)] for n in (1, 2, 3, 4)] == ["ok", "read_before_fill", "read_before_fill",
                                                    "read_before_fill"]
    assert [got[(3, n)] for n in (1, 2, 3, 4)] == ["ok", "ok", "phase_alias", "phase_alias"]
    correct = run_sweep(points_of_kernel(f"{KERNEL}::ring_rowsum", (), ["n_tiles=1..4"]), jobs=1)
    assert {r["verdict"] for r in correct.records} == {"ok"}


def test_triton_kernel_without_a_kernels_entry_says_what_is_needed(tmp_path, cache_env):
    pytest.importorskip("triton")
    path = tmp_path / "k.py"
    path.write_text("import triton\nimport triton.language as tl\n\n"
                    "@triton.autotune(configs=[triton.Config({'B': 16})], key=[])\n"
                    "@triton.jit\ndef k(x, B: tl.constexpr):\n    pass\n")
    out = _invoke(["--triton", f"{path}::k"])
    assert out.exit_code == 2
    assert out.stderr.strip() == (f"{path}: no KERNELS['k'] (have: none); k is a @triton.autotune "
                                  f"kernel: add KERNELS['k'] = dict(fn=k, signature=..., "
                                  f"target=(\"cuda\", ARCH), gluon=...) so it can be compiled; "
                                  f"docs/sweep.md says what an entry holds")


def test_verify_checks_a_spec_with_a_sweep_table_as_written(tmp_path):
    """[sweep] belongs to `pipeproof sweep`: verify and prove check the spec as written, and a
    [sweep] that is not a table is one line naming it."""
    from click.testing import CliRunner
    from pipeproof.checker.cli.main import main
    spec = tmp_path / "s.toml"
    spec.write_text('[pipeline]\ntemplate = "mojo_producer_consumer"\nbackend = "nvidia"\n'
                    'stages = 2\nitems = 3\n\n[sweep]\nstages = [1, 2, 4]\n')
    out = CliRunner().invoke(main, ["verify", str(spec)])
    assert out.exit_code == 0 and "ok" in out.output
    bad = tmp_path / "b.toml"
    bad.write_text('sweep = 3\n[pipeline]\ntemplate = "mojo_producer_consumer"\nbackend = "nvidia"\n'
                   'stages = 2\nitems = 3\n')
    out = CliRunner().invoke(main, ["verify", str(bad)])
    assert out.exit_code == 2 and "sweep" in out.output and "Traceback" not in out.output
