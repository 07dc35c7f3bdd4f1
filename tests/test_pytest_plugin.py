"""`pytest --pipeproof` (checker/integrations/pytest_plugin.py), `pipeproof.triton.watch()` and SARIF output,
for real: an inner pytest session (pytester) whose tests compile a Gluon TMA ring for sm100 on
this CPU (tests/fixtures/pytest_plugin/ring_kernels.py: stock, and two bugs behind a constexpr)
through Triton's own compile, which the plugin hooks. The launch path (arguments from
`launch_enter_hook`) is driven the way Triton's launcher drives it, with a LazyDict, since
there is no GPU here; benchmarks/pytest_plugin_h200.py launches for real.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

__import__("os").environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
triton = pytest.importorskip("triton", reason="the plugin's tests need pip install 'pipeproof[triton]'")
# pytester restores sys.modules after each inner session, so a Gluon module first imported
# inside one is imported again by the next compile, while Triton's C++ side may keep the
# first copy's layout classes (a full CI run failed later Gluon compiles with "tensor layout
# must be a DistributedLayout"). Imported here, at collection, they are in every snapshot.
import triton.experimental.gluon.language  # noqa: E402,F401
import triton.experimental.gluon.language.nvidia.hopper  # noqa: E402,F401

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "pytest_plugin" / "ring_kernels.py"

INNER = '''
import pytest
from ring_kernels import compile_rowsum

@pytest.mark.pipeproof(args={"n_tiles": 5})
def test_stock():
    compile_rowsum(bug=0)

@pytest.mark.pipeproof(args={"n_tiles": 5})
def test_phase_flipped():
    compile_rowsum(bug=1)

@pytest.mark.pipeproof(args={"n_tiles": 5})
def test_never_released():
    compile_rowsum(bug=2)

@pytest.mark.pipeproof_skip
@pytest.mark.pipeproof(args={"n_tiles": 5})
def test_opted_out():
    compile_rowsum(bug=1, stages=2)

def test_no_trip_count():
    compile_rowsum(bug=0, stages=4)
'''


def validate_sarif(path):
    """SARIF 2.1.0 as sarif-pydantic models it (the test extra; no pip package ships the OASIS
    JSON schema, and this project commits no copies of fetched files): every object parses
    with the types the standard gives its fields, and no object carries a key the standard does
    not define (outside `properties` bags, which are free by the standard)."""
    from pydantic import BaseModel
    from sarif_pydantic import Sarif

    doc = json.loads(Path(path).read_text())
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-schema-2.1.0.json")

    def unknown_keys(node, where):
        if isinstance(node, BaseModel):
            for key in node.model_extra or {}:
                yield f"{where}.{key}"
            for name in type(node).model_fields:
                if name != "properties":
                    yield from unknown_keys(getattr(node, name), f"{where}.{name}")
        elif isinstance(node, (list, tuple)):
            for i, item in enumerate(node):
                yield from unknown_keys(item, f"{where}[{i}]")
        elif isinstance(node, dict):
            for key, item in node.items():
                yield from unknown_keys(item, f"{where}.{key}")

    log = Sarif.model_validate(doc)
    assert list(unknown_keys(log, "$")) == []
    return doc


@pytest.fixture(scope="module")
def warm():
    """The inner sessions run in this process (pytester restores sys.modules after each, and
    numpy cannot be imported twice): load what a check imports here first."""
    from pipeproof.checker.engines.prover import prove
    from pipeproof.checker.cli.prove import proof_text  # noqa: F401
    from pipeproof.checker.results.report import format_text  # noqa: F401
    from pipeproof.checker.frontends import driver, registry, triton  # noqa: F401
    from pipeproof.checker.engines.verifier import verify
    from pipeproof.spec.load import load_spec
    spec = load_spec("spec/examples/sm90_ring_nvidia.toml")
    verify(spec)
    prove(spec)


@pytest.fixture
def inner(pytester, warm):
    shutil.copy(FIXTURE, pytester.path / "ring_kernels.py")
    pytester.makepyfile(test_rings=INNER)
    pytester.syspathinsert()
    return pytester


def test_without_the_flag_the_plugin_checks_nothing(inner):
    result = inner.runpytest()
    result.assert_outcomes(passed=5)
    out = result.stdout.str()
    assert "plugins: pipeproof-" in out  # registered through the pytest11 entry point
    assert "= pipeproof =" not in out and not (inner.path / ".pytest_cache/d/pipeproof").exists()


def test_a_violation_fails_the_test_that_compiled_the_kernel(inner):
    sarif = inner.path / "out.sarif"
    result = inner.runpytest("--pipeproof", f"--pipeproof-sarif={sarif}")
    result.assert_outcomes(passed=3, failed=2)
    out = result.stdout.str()
    # the failure reports: verdict, shortest trace, the kernel's source lines
    result.stdout.fnmatch_lines([
        "*test_phase_flipped*",
        "*kernel ring_rowsum (*ring_kernels.py:*) with n_tiles=5: read_before_fill*",
        "*read_before_fill after 2 steps*",
        "*in the kernel:*",
        "*ttng.wait_barrier*ring_kernels.py:34*",
        "*mbarrier.wait(ready.index(s), phase ^ 1)*",
    ])
    assert "with n_tiles=5: deadlock" in out
    assert "FAILED test_rings.py::test_phase_flipped" in out
    assert "FAILED test_rings.py::test_never_released" in out
    # the summary: each distinct check once; the opted-out kernel is not there; the kernel
    # without a trip count is unreadable, with the front end's reason, never ok
    summary = out[out.index("= pipeproof ="):]
    result.stdout.fnmatch_lines([
        "*= pipeproof =*",
        "ok * ring_rowsum[[]STAGES=3, BUG=0[]](n_tiles=5) [[]sm100[]]  2 states, * s",
        "read_before_fill * ring_rowsum[[]STAGES=3, BUG=1[]](n_tiles=5) [[]sm100[]]  6 states, * s",
        "deadlock * ring_rowsum[[]STAGES=3, BUG=2[]](n_tiles=5) [[]sm100[]]  152 states, * s",
        "unreadable * ring_rowsum[[]STAGES=4, BUG=0[]]() [[]sm100[]]: *cannot evaluate the loop's upper bound %n_tiles"
        " (it comes from kernel argument n_tiles); launch the kernel, or give its values: "
        "@pytest.mark.pipeproof(args=*",
        "4 kernel checks: 1 deadlock, 1 ok, 1 read_before_fill, 1 unreadable (0 from the cache)",
    ])
    assert "cached" not in summary.split("kernel checks")[0]
    doc = validate_sarif(sarif)
    results = doc["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["deadlock", "read_before_fill", "unreadable"]
    flip = next(r for r in results if r["ruleId"] == "read_before_fill")
    loc = flip["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("ring_kernels.py")
    assert loc["region"]["startLine"] == 34 and flip["level"] == "error"

    # a second run: every check from the cache (keyed by the TTGIR's hash and the values)
    again = inner.runpytest("--pipeproof")
    again.assert_outcomes(passed=3, failed=2)
    again.stdout.fnmatch_lines(["ok * ring_rowsum[[]*[]](n_tiles=5) [[]sm100[]]  2 states, * s, cached",
                                "4 kernel checks: * (4 from the cache)"])


def test_prove_proves_for_every_trip_count(inner):
    inner.makepyfile(test_rings=INNER.split("@pytest.mark.pipeproof(args={\"n_tiles\": 5})\n"
                                            "def test_never_released")[0])
    result = inner.runpytest("--pipeproof-prove", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # the launch's own trip count is checked first
    result.stdout.fnmatch_lines(["proved * ring_rowsum[[]STAGES=3, BUG=0[]](n_tiles=5) [[]sm100[]]*",
                                 "read_before_fill * ring_rowsum[[]STAGES=3, BUG=1[]](n_tiles=5)*"])


def test_a_test_that_fails_on_its_own_still_shows_the_violation(inner):
    inner.makepyfile(test_rings='''
import pytest
from ring_kernels import compile_rowsum

@pytest.mark.pipeproof(args={"n_tiles": 5})
def test_both():
    compile_rowsum(bug=1)
    assert 1 == 2, "the test's own failure"
''')
    result = inner.runpytest("--pipeproof", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the test's own failure*", "*Captured pipeproof call*",
                                 "*with n_tiles=5: read_before_fill*"])


def test_watch_caches_atomically_and_survives_a_bad_cache_file(tmp_path):
    import importlib.util
    import pipeproof.triton as pt
    spec = importlib.util.spec_from_file_location("pipeproof_ring_kernels4", FIXTURE)
    rk = importlib.util.module_from_spec(spec)
    __import__("sys").modules[spec.name] = rk
    spec.loader.exec_module(rk)
    runs = []
    for corrupt in (False, False, True):
        if corrupt:
            for f in tmp_path.glob("*.json"):
                f.write_text("{not json")  # a torn or foreign file: checked again, not trusted
        with pt.watch(args={"n_tiles": 4}, cache_dir=tmp_path) as w:
            rk.compile_rowsum(arch=90, bug=1)
        runs.append([(r.kind, r.cached) for r in w.results])
    assert runs == [[("read_before_fill", False)], [("read_before_fill", True)],
                    [("read_before_fill", False)]]
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".json")] == []


def test_watch_collects_results_and_raises_if_asked():
    import importlib.util
    import pipeproof.triton as pt
    spec = importlib.util.spec_from_file_location("pipeproof_ring_kernels", FIXTURE)
    rk = importlib.util.module_from_spec(spec)
    __import__("sys").modules[spec.name] = rk
    spec.loader.exec_module(rk)
    with pt.watch(args={"n_tiles": 4}) as w:
        rk.compile_rowsum(arch=90, bug=0)
    assert [(r.verdict, r.args, r.target) for r in w.results] == [("ok", {"n_tiles": 4}, "sm90")]
    with pytest.raises(pt.PipeproofViolation, match="read_before_fill"):
        with pt.watch(args={"n_tiles": 4}, raise_on_violation=True):
            rk.compile_rowsum(arch=90, bug=1)


def test_a_launch_checks_with_the_launch_arguments():
    """What Triton's launcher does on a GPU (CompiledKernel.launch_metadata, then
    launch_enter_hook), driven by hand: the trip count comes from the call's n_tiles."""
    import importlib.util

    from triton import knobs
    from triton.compiler.compiler import LazyDict

    import pipeproof.triton as pt
    spec = importlib.util.spec_from_file_location("pipeproof_ring_kernels2", FIXTURE)
    rk = importlib.util.module_from_spec(spec)
    __import__("sys").modules[spec.name] = rk
    spec.loader.exec_module(rk)
    with pt.watch() as w:
        kernel = rk.compile_rowsum(bug=2)
        for n in (2, 7, 7):  # 2 tiles fit the 3-slot ring: no second lap, no deadlock
            meta = LazyDict({"name": kernel.name, "function": None, "stream": 0})
            args = dict(zip(kernel.src.fn.arg_names, (object(), object(), n, 3, 2)))
            meta.add(kernel.src.fn.launch_metadata, ((1, 1, 1), kernel.metadata, args))
            knobs.runtime.launch_enter_hook(meta)
    assert [(r.verdict, r.kind, r.args) for r in w.results] == [
        ("ok", None, {"n_tiles": 2}), ("violation", "deadlock", {"n_tiles": 7})]
    assert kernel.src.fn.launch_metadata is None  # restored when the block ends


def test_sarif_of_verify_and_triton_validates(tmp_path):
    from click.testing import CliRunner

    from pipeproof.checker.cli.main import main
    out = tmp_path / "v.sarif"
    CliRunner().invoke(main, ["verify", "spec/examples/bug_consumer_phase1_nvidia.toml",
                              "spec/examples/sm90_ring_nvidia.toml", str(tmp_path / "none.toml"),
                              "-q", "--sarif", str(out)])
    doc = validate_sarif(out)
    got = [(r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
           for r in doc["runs"][0]["results"]]
    assert got[0] == ("read_before_fill", "error", "spec/examples/bug_consumer_phase1_nvidia.toml")
    assert got[1][:2] == ("unreadable", "warning") and len(got) == 2

    text = tmp_path / "ring.ttgir"
    import importlib.util
    spec = importlib.util.spec_from_file_location("pipeproof_ring_kernels3", FIXTURE)
    rk = importlib.util.module_from_spec(spec)
    __import__("sys").modules[spec.name] = rk
    spec.loader.exec_module(rk)
    text.write_text(rk.compile_rowsum(bug=1).asm["ttgir"])
    out = tmp_path / "t.sarif"
    res = CliRunner().invoke(main, ["triton", str(text), "--arg", "n_tiles=5", "--sarif", str(out)])
    assert res.exit_code == 1
    doc = validate_sarif(out)
    (r,) = doc["runs"][0]["results"]
    loc = r["locations"][0]["physicalLocation"]
    assert (r["ruleId"], loc["artifactLocation"]["uri"].endswith("ring_kernels.py"),
            loc["region"]["startLine"]) == ("read_before_fill", True, 34)
    ok = tmp_path / "ok.sarif"
    text.write_text(rk.compile_rowsum(bug=0).asm["ttgir"])
    res = CliRunner().invoke(main, ["triton", str(text), "--arg", "n_tiles=5", "--sarif", str(ok)])
    assert res.exit_code == 0 and validate_sarif(ok)["runs"][0]["results"] == []


def test_xdist_workers_share_the_cache_and_the_controller_reports(inner):
    """With pytest-xdist (not a dependency: skipped without it), each worker checks what its
    tests compile, writes the shared cache atomically, and the controller's summary lists every
    check once."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed")
    result = inner.runpytest_subprocess("-n", "2", "--pipeproof", "--cache-clear")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(["*4 kernel checks: 1 deadlock, 1 ok, 1 read_before_fill, "
                                 "1 unreadable (0 from the cache)"])
    again = inner.runpytest_subprocess("-n", "2", "--pipeproof")
    again.stdout.fnmatch_lines(["*4 kernel checks: * (4 from the cache)"])
    assert not [p for p in (inner.path / ".pytest_cache/d/pipeproof").iterdir()
                if not p.name.endswith(".json")]


def test_lines_of_a_cached_copy_of_the_kernel_file_point_at_the_launched_file():
    """Triton's cache keys compiled IR by the source, so the IR of an identical ring_kernels.py
    compiled in another (maybe deleted) folder names that folder: the report names the
    launched kernel's own file instead; lines in other files stay as they are."""
    from pipeproof.checker.integrations.triton_watch import _relocated
    lines = [{"step": 1, "partition": "default", "op": "ttng.wait_barrier", "line": "/gone/ring_kernels.py:34"},
             {"step": 2, "partition": "default", "op": "tt.call", "line": "/lib/helpers.py:7"},
             {"step": 3, "partition": "default", "op": "advance", "line": "/here/ring_kernels.py:36"}]
    got = _relocated(lines, "/here/ring_kernels.py:45")
    assert [s["line"] for s in got] == ["/here/ring_kernels.py:34", "/lib/helpers.py:7",
                                        "/here/ring_kernels.py:36"]
    assert lines[0]["line"] == "/gone/ring_kernels.py:34"  # the input is not changed
