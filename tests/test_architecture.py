"""benchmarks/architecture.py (issue 33's code figures): each figure on small synthetic trees
built in tmp_path, so that each one is seen to count what it should and to skip what it should
not. No figure of the real repository is pinned here."""
from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pytest

from tests.paths import ROOT

_spec = importlib.util.spec_from_file_location("pipeproof_architecture",
                                               ROOT / "benchmarks" / "architecture.py")
A = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = A          # dataclasses look their module up while the class is made
_spec.loader.exec_module(A)

PYPROJECT = """\
[tool.setuptools.package-dir]
"pipeproof.spec" = "spec"
"pipeproof.backends" = "backends"
"pipeproof.checker" = "checker"
"pipeproof.cuda_ref" = "cuda_ref"
"pipeproof.triton" = "checker/triton_api"
"""
OPS = 'OP_EFFECTS = {"wait": Effects(), "arrive": Effects(), "copy": Effects()}\n'


def tree(tmp_path, files: dict[str, str], pyproject: str = PYPROJECT):
    """A product tree: `files` (path -> source) plus spec/ops.py, every folder a package."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    for rel, src in {"spec/ops.py": OPS, **files}.items():
        path = tmp_path / rel
        for d in [path.parent, *path.parent.parents]:
            if d == tmp_path:
                break
            d.mkdir(parents=True, exist_ok=True)
            (d / "__init__.py").touch()
        path.write_text(textwrap.dedent(src))
    return A.load_tree(tmp_path)


def test_module_names_follow_the_package_dir_table(tmp_path):
    t = tree(tmp_path, {"checker/triton_api/watch.py": "", "checker/engines/explore.py": ""})
    assert t.modules["pipeproof.triton.watch"] == "checker/triton_api/watch.py"
    assert t.modules["pipeproof.triton"] == "checker/triton_api/__init__.py"
    assert t.modules["pipeproof.checker.engines.explore"] == "checker/engines/explore.py"
    moved = PYPROJECT.replace('"checker/triton_api"', '"checker/integrations/triton_api"')
    t = tree(tmp_path / "moved", {"checker/integrations/triton_api/watch.py": ""}, moved)
    assert "pipeproof.triton.watch" in t.modules
    assert t.wing("checker/integrations/triton_api/watch.py") == "checker/integrations"


def test_files_per_folder_and_largest_file(tmp_path):
    t = tree(tmp_path, {"checker/a.py": "x = 1\n", "checker/b.py": "x = 1\n" * 9,
                        "checker/engines/e.py": "", "tests/t.py": "x = 1\n" * 99})
    per = A.files_per_folder(t)
    assert per["checker"] == 3 and per["checker/engines"] == 2 and per["spec"] == 2
    assert "tests" not in per                          # not product
    m = A.measure(tmp_path)
    assert m["largest file"] == ["checker/b.py", 9] and m["largest folder"] == ["checker", 3]


def test_private_names_imported_from_another_file(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": "def _x(): pass\ndef y(): pass\n__version__ = 1\n",
        "checker/b.py": "from pipeproof.checker.a import _x, y, __version__\n",
        "checker/c.py": "from pipeproof.checker.a import y\n",
    })
    assert A.private_crossings(t) == [("checker/b.py", "_x", "pipeproof.checker.a", False)]


def test_private_names_read_off_an_imported_module(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": "_x = _y = _z = 0\n",
        "checker/b.py": "import pipeproof.checker.a as m\nprint(m._x, m.public)\n",
        "checker/c.py": "from pipeproof.checker import a\nprint(a._y)\n",
        "checker/d.py": "import pipeproof.checker.a\nprint(pipeproof.checker.a._z)\n",
        "checker/e.py": "import os\nprint(os._exit)\n",      # not the product's
    })
    assert [(f, n) for f, n, _m, _w in A.private_crossings(t)] == \
        [("checker/b.py", "_x"), ("checker/c.py", "_y"), ("checker/d.py", "_z")]


def test_private_names_crossing_wings(tmp_path):
    t = tree(tmp_path, {
        "checker/engines/e.py": "_f = _g = 0\n",
        "checker/engines/g.py": "from .e import _g\n",                         # same wing
        "checker/core/c.py": "from pipeproof.checker.engines.e import _f\n",   # another wing
    })
    assert A.private_crossings(t) == [
        ("checker/core/c.py", "_f", "pipeproof.checker.engines.e", True),
        ("checker/engines/g.py", "_g", "pipeproof.checker.engines.e", False)]


def test_imports_around_a_face(tmp_path):
    files = {
        "checker/engines/e.py": "def f(): pass\n",
        "checker/engines/g.py": "from pipeproof.checker.engines.e import f\n",   # inside the wing
        "checker/core/c.py": "from pipeproof.checker.engines.e import f\n",      # around the face
        "checker/core/d.py": "from pipeproof.checker.engines import f, e\n",     # through it
        "cuda_ref/r.py": "def g():\n    import pipeproof.checker.engines.e\n",  # around, in a function
        "spec/s.py": "from pipeproof.spec.load import x\n",                      # not a checker wing
        "spec/load.py": "x = 1\n",
    }
    t = tree(tmp_path, files)
    assert A.face_bypasses(t) == [("checker/core/c.py", "pipeproof.checker.engines.e"),
                                  ("cuda_ref/r.py", "pipeproof.checker.engines.e")]
    assert not A.is_flat(t)
    flat = tree(tmp_path / "flat", {f"checker/m{i}.py": "" for i in range(3)} | {"checker/smt/s.py": ""})
    assert A.is_flat(flat)
    row = dict(A.rows(A.measure(tmp_path / "flat")))["imports around a checker wing's face"]
    assert row == "n/a (flat)"


def test_backend_switches(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": '''\
            """Docstring: if backend == "amd" the phase ..."""
            def f(backend, cfg, spec):
                if backend == "amd":             # 1
                    pass
                x = 1 if cfg.b != AMD else 2     # 2
                if cfg.nvidia and spec:          # 3
                    pass
                t = {"nvidia": 1}                # 4
                match backend:
                    case "amd":                  # 5
                        pass
                return table[NVIDIA]             # 6
            ''',
        "checker/b.py": '''\
            # if backend == "nvidia":
            print("amd", ("amd", 1) in seen)
            cfg.nvidia = True
            y = backend in ("nvidia", "amd")
            ''',
        "checker/c.py": "print('nothing here')\n",
    })
    assert A.backend_switches(t) == {"checker/a.py": 6, "checker/b.py": 1}


def test_op_names_compared_to_literals(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": 'def f(op, name):\n    return op.name == "wait" or name in ("arrive", "commit")\n',
        "checker/b.py": 'def f(eff, e, move):\n'           # effect values, not op names
                        '    return eff.issues == "copy" or e["kind"] == "copy" or move == "wait"\n',
        "checker/c.py": 'def f(op):\n    return op.name == "commit"\n',      # not an op of this tree
        "checker/d.py": 'def f(op):\n    match op.name:\n        case "copy":\n            return 1\n',
    })
    assert A.op_name_compares(t) == {"checker/a.py": 2, "checker/d.py": 1}
    (tmp_path / "spec" / "ops.py").write_text("OPS = ('wait',)\n")
    with pytest.raises(A.BadTree):
        A.op_name_compares(A.load_tree(tmp_path))


def test_import_cycles(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": "from pipeproof.checker import b\n",
        "checker/b.py": "from pipeproof.checker.a import x\n",
        "checker/c.py": "from pipeproof.checker import d\n",
        "checker/d.py": "def f():\n    from pipeproof.checker import c\n",   # only at call time
        "checker/e.py": "import pipeproof.spec.f\n",                          # wings checker -> spec
        "spec/g.py": "from pipeproof.checker import e, d\n",                  # and spec -> checker
        "spec/f.py": "",
    })
    g = A.import_graphs(t)
    assert A.cycles(g["module level"]) == [["pipeproof.checker.a", "pipeproof.checker.b"]]
    assert A.cycles(g["all"]) == [["pipeproof.checker.a", "pipeproof.checker.b"],
                                  ["pipeproof.checker.c", "pipeproof.checker.d"]]
    assert A.cycles(g["wings"]) == [["checker", "spec"]]
    acyclic = tree(tmp_path / "acyclic", {"checker/a.py": "import pipeproof.checker.b\n", "checker/b.py": ""})
    assert all(A.cycles(x) == [] for x in A.import_graphs(acyclic).values())


def test_files_writing_the_kinds_and_verdicts(tmp_path):
    t = tree(tmp_path, {
        "checker/a.py": 'KINDS = ("deadlock", "read_before_fill")\n',
        "checker/b.py": '"""read_before_fill is a kind."""\ndef f():\n    "inconclusive"\n    return 1\n',
        "checker/c.py": 'def f(v):\n    return v == "inconclusive"\n',
    })
    assert A.files_with_literal(t, "read_before_fill") == ["checker/a.py"]
    assert A.files_with_literal(t, "inconclusive") == ["checker/c.py"]


def test_cli_json_table_and_bad_input(tmp_path, capsys):
    tree(tmp_path, {"checker/a.py": 'if backend == "amd":\n    pass\n'})
    assert A.main(["--root", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["after"]["backend switches"] == {"checker/a.py": 1}
    assert A.main(["--root", str(tmp_path)]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("files switching"))
    assert row.split("|")[-1].strip() == "1 (1)"
    assert A.main(["--root", str(tmp_path), "--before", "no-such-rev-33"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    (tmp_path / "checker" / "bad.py").write_text("def f(:\n")
    assert A.main(["--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checker/bad.py:1" in err


# ---------------------------------------------------------------- the rules, on this repository
# (docs/architecture.md "The wings of checker/"; each rule fails on the synthetic trees above)

@pytest.fixture(scope="module")
def repo():
    return A.load_tree(ROOT)


def test_no_private_name_crosses_a_wing(repo):
    assert [c for c in A.private_crossings(repo) if c[3]] == []


def test_every_wing_imports_another_only_through_its_face(repo):
    assert not A.is_flat(repo)
    assert A.face_bypasses(repo) == []


def test_no_import_cycle_at_load_time_between_modules_or_wings(repo):
    graphs = A.import_graphs(repo)
    assert A.cycles(graphs["module level"]) == []
    assert A.cycles(graphs["all"]) == []  # not even through an import inside a function
    assert A.cycles(graphs["wings"]) == []


def _face_exports(init: str) -> tuple[set, set]:
    """(submodules, names) a face's lazy_loader.attach call lists."""
    import ast
    for node in ast.walk(ast.parse(init)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "attach":
            kw = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
            return set(kw.get("submodules", ())), {n for v in kw.get("submod_attrs", {}).values() for n in v}
    return set(), set()


def test_each_wing_has_a_face_and_no_module_is_named_like_a_name_it_exports():
    wings = [p for p in (ROOT / "checker").iterdir() if (p / "__init__.py").exists()]
    assert len(wings) >= 9
    for wing in wings:
        submodules, names = _face_exports((wing / "__init__.py").read_text())
        modules = {p.stem for p in wing.glob("*.py")} - {"__init__"}
        assert submodules and submodules <= modules, wing
        assert not names & modules, (wing, names & modules)  # the module would shadow the name
        face = __import__(f"pipeproof.checker.{wing.name}", fromlist=["x"])
        for name in sorted(names):  # every name the face lists is there
            assert getattr(face, name) is not None, (wing.name, name)


def test_only_the_seam_switches_on_the_backend(repo):
    """backends/capabilities.py is the seam; in the compiled engines core/semantics.py picks
    the rules (numba cannot pass a module)."""
    allowed = {"backends/capabilities.py", "checker/core/semantics.py"}
    assert set(A.backend_switches(repo)) <= allowed, sorted(set(A.backend_switches(repo)) - allowed)


def test_the_kinds_and_verdicts_are_written_once():
    from pipeproof.checker.models.run import KINDS as EXPORT_KINDS
    from pipeproof.checker.results import GPU_OUTCOMES, KINDS, VERDICT_EXIT, Verdict
    from pipeproof.cuda_ref.log import OUTCOMES
    from pipeproof.spec.load_pipeline import EXPECT_VALUES
    assert EXPORT_KINDS[:len(KINDS)] == KINDS and EXPECT_VALUES == ("ok",) + KINDS
    assert OUTCOMES is GPU_OUTCOMES
    assert [v.value for v in sorted(Verdict, key=lambda v: v.rank)] == ["ok", "inconclusive", "violation"]
    assert Verdict.worst(["ok", "violation", "inconclusive"]) is Verdict.VIOLATION
    assert {v: Verdict.of(v.proof_word) for v in Verdict} == {v: v for v in Verdict}
    assert VERDICT_EXIT["ok"] == 0 and VERDICT_EXIT[Verdict.VIOLATION] == 1
