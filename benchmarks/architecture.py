"""Issue 33's and issue 46's code figures: how the product's source is laid out, read statically (ast only, no
project module is imported), for the working tree and optionally a revision side by side.

    python benchmarks/architecture.py [--before REV] [--json] [--root DIR]

The product is every .py file under the folders of pyproject.toml's
[tool.setuptools.package-dir] (checker/, spec/, backends/, cuda_ref/; not tests/ or benchmarks/).
Module names follow that table (`pipeproof.triton` is wherever the table puts it). A wing is a
direct sub-package of a top folder (checker/engines, checker/smt, spec/ttgir, ...) or the
modules lying directly in a top folder (`checker`, `spec`, ...). The figures: files per folder;
the largest file; `_private` names imported across files and across wings; imports of a
checker/ wing that go around its face (`__init__.py`); files that switch on the backend; files
that compare op names (spec/ops.py OP_EFFECTS) to literals; import cycles between modules and
between wings; files writing the kind "read_before_fill" / the verdict "inconclusive".

Issue 46 adds (each function's docstring states its rule in full):
- capability_branches: sites (lines) outside backends/ that branch on a two-way backend flag
  (phase_parity, counters, wrap32: "nvidia or amd"), directly or through an alias; the same
  rule over tx_bytes / clusters gives the "feature checks", listed apart;
- named_backend_imports: files outside backends/ importing a backend's rules module
  (backends/<name>.py, <name> a key of BACKENDS, or a module the registry names by string);
- third_backend_files / third_frontend_importers: what a third backend or front end costs;
- import_graphs' "wings, all": wing cycles counting imports inside functions;
- backup_arrows: imports (also inside functions) from a checker/ wing to a higher one in
  docs/architecture.md's order (wing_order reads it from the page);
- function_lengths and the files over 600 / 800 lines; functions over 120 lines, tables apart;
- tests_importing_tests: files of tests/ importing a tests/ test_*.py module.
Functions for tests: load_tree(root) and the metric functions below; measure(root) -> dict.
"""
from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import networkx as nx

REPO = Path(__file__).resolve().parent.parent
# Used when a tree has no package-dir table (the synthetic trees of tests may omit it).
DEFAULT_PACKAGE_DIR = {f"pipeproof.{d}": d for d in ("checker", "spec", "backends", "cuda_ref")}
BACKEND_WORDS, BACKEND_CODES = {"nvidia", "amd"}, {"NVIDIA", "AMD"}   # backends/base.py's codes
# An op's effects, an in-flight entry's kind and a front end's event kind reuse op words as values
# (`eff.issues == "copy"`, `move == "advance"`, `e["kind"] == "read"`, `ev.kind == "copy"`): such
# a test reads an effect or an event, not an op name.
EFFECT_FIELDS = {"issues", "move", "barrier", "kind"}
# The backend record's two-way flags: each one says "nvidia" or "amd" (backends/capabilities.py),
# so a branch on one is a branch on the backend; the features a loader checks are not a switch.
CAPABILITY_FLAGS = ("phase_parity", "counters", "wrap32")
FEATURE_FLAGS = ("tx_bytes", "clusters")
# backends/ modules that are not a backend's rules, whatever the registry says
NOT_RULES = {"__init__", "base", "capabilities", "printed", "numba_cache", "registry", "protocol",
             "dispatch"}
# A specific front end's modules: a file with one of these words as a folder or its stem
# (spec/ttgir/*, spec/mojo/*, checker/cli/triton.py, checker/cli/mojo.py,
# checker/frontends/triton.py, ...; not checker/integrations/triton_api/ or triton_watch.py).
FRONT_END_WORDS = {"ttgir", "triton", "mojo", "ptx"}
FRONT_END_WING = "frontends"    # checker/frontends: the front ends' own wing
FRONT_END_FIXED = 3             # a third front end's reader module, registry entry and command
THIRD_BACKEND_FIXED = 2         # backends/<new>.py and the registry (backends/capabilities.py),
#                                 and a branch in backends/dispatch.py where the tree has one
# docs/architecture.md's order of the checker/ wings, bottom first (read from the page when it
# has the sentence "... go down this order: `runtime`, `results` -> `core` -> ...")
WING_ORDER = (("runtime", "results"), ("core",), ("engines",), ("smt", "models", "fix", "sweep"),
              ("cli",), ("integrations",))
LONG_FILE, VERY_LONG_FILE, LONG_FUNCTION = 600, 800, 120


class BadTree(Exception):
    """A tree that cannot be measured (a syntax error, no op table): one line, exit 2."""


@dataclass
class Tree:
    root: Path
    modules: dict[str, str] = field(default_factory=dict)     # module name -> file (relative)
    module_of: dict[str, str] = field(default_factory=dict)   # file -> module name
    asts: dict[str, ast.Module] = field(default_factory=dict)  # file -> its AST
    lines: dict[str, int] = field(default_factory=dict)       # file -> its line count

    def wing(self, rel: str) -> str:
        """checker/engines/x.py -> checker/engines; checker/x.py -> checker (the flat wing)."""
        parts = rel.split("/")
        if len(parts) > 2 and (self.root / parts[0] / parts[1] / "__init__.py").is_file():
            return f"{parts[0]}/{parts[1]}"
        return parts[0]


def load_tree(root: Path) -> Tree:
    """Every product file of `root`, parsed, with its module name per the package-dir table."""
    root = Path(root)
    pyproject = root / "pyproject.toml"
    conf = tomllib.loads(pyproject.read_text()) if pyproject.is_file() else {}
    table = conf.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    table = {pkg: d.strip("/") for pkg, d in (table or DEFAULT_PACKAGE_DIR).items() if pkg}
    tree = Tree(root)
    for top in sorted({d.split("/")[0] for d in table.values()}):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if "__pycache__" in rel:
                continue
            folder = rel.rpartition("/")[0]
            # the longest table folder holding the file names its package (setuptools' rule)
            pkg, base = max(((p, d) for p, d in table.items()
                             if folder == d or folder.startswith(d + "/")),
                            key=lambda pd: len(pd[1]), default=(None, None))
            if pkg is None:
                continue
            rest = [*folder[len(base):].strip("/").split("/"), path.stem]
            name = ".".join([pkg, *[r for r in rest if r and r != "__init__"]])
            text = path.read_text()
            try:
                tree.asts[rel] = ast.parse(text, rel)
            except SyntaxError as e:
                raise BadTree(f"{rel}:{e.lineno}: syntax error: {e.msg}") from None
            tree.modules[name], tree.module_of[rel] = rel, name
            tree.lines[rel] = len(text.splitlines())
    return tree


# 1, 2 -------------------------------------------------------------------------------------------

def files_per_folder(tree: Tree) -> dict[str, int]:
    """Folder -> number of .py files directly in it, for every product folder holding any."""
    return dict(sorted(Counter(rel.rpartition("/")[0] for rel in tree.asts).items()))


# imports ------------------------------------------------------------------------------------------

class Imp(NamedTuple):
    named: str          # the module the statement names (`from a.b import c`: a.b)
    target: str         # the most specific module reached (a.b.c when c is a module, else a.b)
    name: str | None    # the name taken from `target`; None when a module is imported
    alias: ast.alias
    in_function: bool   # inside a function body: runs at call time, not at import


def _imports(tree: Tree, rel: str):
    """Each import of `rel` that reaches a product module (relative ones resolved), as Imp."""
    me = tree.module_of[rel]
    package = me if rel.endswith("__init__.py") else me.rpartition(".")[0]
    stack = [(tree.asts[rel], False)]
    while stack:
        node, in_fn = stack.pop()
        if isinstance(node, ast.Import):
            yield from (Imp(a.name, a.name, None, a, in_fn) for a in node.names if a.name in tree.modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:   # relative: up level-1 packages from this module's package
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in tree.modules:
                    yield Imp(base, f"{base}.{a.name}", None, a, in_fn)
                elif base in tree.modules:
                    yield Imp(base, base, a.name, a, in_fn)
        in_fn = in_fn or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        stack.extend((c, in_fn) for c in ast.iter_child_nodes(node))


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_crossings(tree: Tree) -> list[tuple[str, str, str, bool]]:
    """(file, name, defining module, crosses a wing?) for each `_name` a file takes from another
    product file: `from m import _x`, and `_x` read off a module bound by `import m as a` /
    `from p import m` / `import m` (a chain `a.b._x` is followed through modules)."""
    prefixes = {n.rsplit(".", k)[0] for n in tree.modules for k in range(n.count(".") + 1)}
    found = set()
    for rel in tree.asts:
        me, bound = tree.module_of[rel], {}
        for i in _imports(tree, rel):
            if i.name is None:   # a module: bind its alias (a plain `import a.b` binds `a`)
                plain = i.named == i.target and not i.alias.asname
                bound[i.target.split(".")[0] if plain else i.alias.asname or i.alias.name] = \
                    i.target.split(".")[0] if plain else i.target
            elif _private(i.name) and i.target != me:
                found.add((rel, i.name, i.target))
        for node in ast.walk(tree.asts[rel]):
            chain = []
            while isinstance(node, ast.Attribute):
                chain.insert(0, node.attr)
                node = node.value
            if not chain or not isinstance(node, ast.Name) or node.id not in bound:
                continue
            cur = bound[node.id]
            for attr in chain:
                if f"{cur}.{attr}" in prefixes:
                    cur = f"{cur}.{attr}"
                    continue
                if _private(attr) and cur in tree.modules and cur != me:
                    found.add((rel, attr, cur))
                break
    return sorted((f, n, m, tree.wing(f) != tree.wing(tree.modules[m])) for f, n, m in found)


def is_flat(tree: Tree) -> bool:
    """checker/ is flat while more of its modules lie directly in it than in its sub-packages."""
    direct = sum(1 for f in tree.asts if tree.wing(f) == "checker"
                 and not f.endswith(("__init__.py", "__main__.py")))
    return direct > sum(1 for f in tree.asts if tree.wing(f).startswith("checker/"))


def face_bypasses(tree: Tree) -> list[tuple[str, str]]:
    """(file, module) for each import statement that names a module inside a checker/ wing
    other than its face, from outside the wing. `from pipeproof.checker.core import semantics`
    goes through the face (a face may list submodules among its names); `from
    pipeproof.checker.core.semantics import step` and `import pipeproof.checker.core.semantics`
    go around it."""
    found = set()
    for rel in tree.asts:
        for i in _imports(tree, rel):
            named = tree.modules[i.named]
            w = tree.wing(named)
            if w.startswith("checker/") and w != tree.wing(rel) and named != f"{w}/__init__.py":
                found.add((rel, i.named))
    return sorted(found)


# 5, 6, 8: literals ----------------------------------------------------------------------------

def _compare_hits(node: ast.AST, is_word, skip=lambda other: False) -> bool:
    """Whether `node` is a comparison `x == W`, `x != W`, `W in x` or `x in (.., W, ..)` with a
    word W (`is_word`) and an `x` not to skip. A tuple left of `in` is a key, not a choice."""
    if not isinstance(node, ast.Compare):
        return False
    left = node.left
    for op, right in zip(node.ops, node.comparators):
        if isinstance(op, (ast.Eq, ast.NotEq)):
            hit = (is_word(right) and not skip(left)) or (is_word(left) and not skip(right))
        elif isinstance(op, (ast.In, ast.NotIn)):
            choices = isinstance(right, (ast.Tuple, ast.List, ast.Set)) and any(map(is_word, right.elts))
            hit = (is_word(left) and not skip(right)) or (choices and not skip(left))
        else:
            hit = False
        if hit:
            return True
        left = right
    return False


def backend_switches(tree: Tree) -> dict[str, int]:
    """File -> lines switching on the backend: a comparison or a `case` with "nvidia"/"amd" or
    NVIDIA/AMD, a dict keyed or a subscript indexed by one, `.nvidia`/`.amd` read in a test."""
    _backend_word = lambda e: (isinstance(e, ast.Constant) and e.value in BACKEND_WORDS) or \
        (isinstance(e, ast.Name) and e.id in BACKEND_CODES) or \
        (isinstance(e, ast.Attribute) and e.attr in BACKEND_CODES)
    out = {}
    for rel, mod in tree.asts.items():
        lines = set()
        for node in ast.walk(mod):
            if _compare_hits(node, _backend_word) \
                    or (isinstance(node, ast.MatchValue) and _backend_word(node.value)) \
                    or (isinstance(node, ast.Dict) and any(k and _backend_word(k) for k in node.keys)) \
                    or (isinstance(node, ast.Subscript) and _backend_word(node.slice)):
                lines.add(node.lineno)
            tests = [node.test] if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) \
                else node.ifs if isinstance(node, ast.comprehension) \
                else node.values if isinstance(node, ast.BoolOp) else []
            # (a comprehension node has no line: the attribute's own line stands for the site)
            lines.update(t.lineno for test in tests for t in ast.walk(test)
                         if isinstance(t, ast.Attribute) and t.attr in BACKEND_WORDS)
        if lines:
            out[rel] = len(lines)
    return out


def op_name_compares(tree: Tree) -> dict[str, int]:
    """File -> comparisons (or `case`s) of something with an op name written as a literal; the
    op names are the keys of spec/ops.py's OP_EFFECTS dict, read from its AST."""
    ops = next(({k.value for k in n.value.keys if isinstance(k, ast.Constant)}
                for n in ast.walk(tree.asts.get("spec/ops.py", ast.Module([], [])))
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "OP_EFFECTS" for t in n.targets)), None)
    if not ops:
        raise BadTree(f"{tree.root}: no OP_EFFECTS dict in spec/ops.py")
    is_op = lambda e: isinstance(e, ast.Constant) and e.value in ops
    effect = lambda e: (isinstance(e, ast.Attribute) and e.attr in EFFECT_FIELDS) or \
        (isinstance(e, ast.Name) and e.id in EFFECT_FIELDS) or \
        (isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and e.slice.value == "kind")
    counts = {rel: sum(1 for node in ast.walk(mod) if _compare_hits(node, is_op, effect)
                       or (isinstance(node, ast.MatchValue) and is_op(node.value)))
              for rel, mod in tree.asts.items()}
    return {rel: n for rel, n in counts.items() if n}


def files_with_literal(tree: Tree, word: str) -> list[str]:
    """Files holding the string literal `word`; docstrings and other bare strings do not count."""
    def holds(mod):
        bare = {id(n.value) for n in ast.walk(mod) if isinstance(n, ast.Expr)}
        return any(isinstance(n, ast.Constant) and n.value == word and id(n) not in bare
                   for n in ast.walk(mod))
    return [rel for rel, mod in tree.asts.items() if holds(mod)]


# 7 ------------------------------------------------------------------------------------------------

def import_graphs(tree: Tree) -> dict[str, nx.DiGraph]:
    """Module graphs of module-level imports ("module level"; an import in a function body runs
    later, so it cannot break a load) and of all imports ("all"); the wing graphs of the first
    ("wings") and of the second ("wings, all": an import inside a function counts)."""
    top, every, wings, wings_all = nx.DiGraph(), nx.DiGraph(), nx.DiGraph(), nx.DiGraph()
    for rel in tree.asts:
        me = tree.module_of[rel]
        top.add_node(me), every.add_node(me), wings.add_node(tree.wing(rel)), wings_all.add_node(tree.wing(rel))
        for i in _imports(tree, rel):
            if i.target == me:
                continue
            every.add_edge(me, i.target)
            a, b = tree.wing(rel), tree.wing(tree.modules[i.target])
            if a != b:
                wings_all.add_edge(a, b)
            if not i.in_function:
                top.add_edge(me, i.target)
                if a != b:
                    wings.add_edge(a, b)
    return {"module level": top, "all": every, "wings": wings, "wings, all": wings_all}


def cycles(g: nx.DiGraph) -> list[list[str]]:
    """Strongly connected components of more than one node, largest first."""
    return sorted((sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1),
                  key=lambda c: (-len(c), c))


# issue 46: the backend seam ----------------------------------------------------------------------

def _truth_operands(e: ast.AST):
    """The expressions whose truth a test `e` takes: `e`, and through `and`/`or`/`not` theirs."""
    yield e
    if isinstance(e, ast.BoolOp):
        for v in e.values:
            yield from _truth_operands(v)
    elif isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        yield from _truth_operands(e.operand)


def _pairs(target: ast.AST, value: ast.AST):
    """(target, value) of an assignment, element by element when both sides are tuples/lists."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        for t, v in zip(target.elts, value.elts):
            yield from _pairs(t, v)
    else:
        yield target, value


def _flag_sites(tree: Tree, flags) -> dict[str, list[int]]:
    """File (outside backends/) -> the lines where a test takes the truth of a flag in `flags`.

    A flag read: `x.F` or a name `F` (F a flag), a call `F(...)` / `m.F(...)` (a function named
    after the flag, e.g. precheck_signals.phase_parity(spec)), `not` of one, or an alias of one.
    An alias is a name or attribute given a flag read by a plain assignment (`a = ...`,
    `a: T = ...`, `a := ...`, `self.x, self.y = f1, f2` element by element), followed to a
    fixed point: a name alias (`nv = caps.phase_parity`) within its file; an attribute alias
    (`self.nv = self.caps.phase_parity`, then `self.nv` anywhere) within its file and, as the
    mixins of one class spread over a wing's modules, within every file of its wing.
    A test: the test of an `if`, `while`, conditional expression or `assert`, a comprehension's
    filter, and every operand of `and`/`or` anywhere; a test takes the truth of its operands
    through `and`, `or` and `not` (`if not a and b.F:` reads F). A site is a line. A read
    that is not a test (an argument `int(lap.counters)`, a `return`, an alias's right side) is
    no site: the branch, if any, is where the value is tested."""
    files = [rel for rel in tree.asts if rel.split("/")[0] != "backends"]
    names = {rel: set() for rel in files}
    attrs = {rel: set() for rel in files}

    def read(e, rel, wing_attrs):
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return read(e.operand, rel, wing_attrs)
        if isinstance(e, ast.Call):
            f = e.func
            return (isinstance(f, ast.Name) and f.id in flags) or \
                (isinstance(f, ast.Attribute) and f.attr in flags)
        if isinstance(e, ast.Name):
            return e.id in flags or e.id in names[rel]
        if isinstance(e, ast.Attribute):
            return e.attr in flags or e.attr in attrs[rel] or e.attr in wing_attrs
        return False

    def wing_attrs_of(rel):
        w = tree.wing(rel)
        return set().union(*(attrs[r] for r in files if tree.wing(r) == w))

    changed = True
    while changed:           # aliases of aliases
        changed = False
        for rel in files:
            wa = wing_attrs_of(rel)
            for node in ast.walk(tree.asts[rel]):
                if isinstance(node, ast.Assign):
                    pairs = [p for t in node.targets for p in _pairs(t, node.value)]
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    pairs = [(node.target, node.value)]
                else:
                    continue
                for t, v in pairs:
                    if not read(v, rel, wa):
                        continue
                    if isinstance(t, ast.Name) and t.id not in names[rel]:
                        names[rel].add(t.id)
                        changed = True
                    elif isinstance(t, ast.Attribute) and t.attr not in attrs[rel]:
                        attrs[rel].add(t.attr)
                        changed = True
    out = {}
    for rel in files:
        wa, lines = wing_attrs_of(rel), set()
        for node in ast.walk(tree.asts[rel]):
            tests = [node.test] if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) \
                else node.ifs if isinstance(node, ast.comprehension) \
                else node.values if isinstance(node, ast.BoolOp) else []
            lines.update(e.lineno for t in tests for e in _truth_operands(t) if read(e, rel, wa))
        if lines:
            out[rel] = sorted(lines)
    return out


def capability_branches(tree: Tree) -> dict[str, list[int]]:
    """File -> lines branching on a two-way capability flag (CAPABILITY_FLAGS: phase_parity,
    counters, wrap32), outside backends/ (where the record lives); _flag_sites' rule."""
    return _flag_sites(tree, set(CAPABILITY_FLAGS))


def feature_checks(tree: Tree) -> dict[str, list[int]]:
    """File -> lines testing a feature a backend may lack (FEATURE_FLAGS: tx_bytes, clusters),
    outside backends/; the same rule as capability_branches, listed apart: not a two-way switch."""
    return _flag_sites(tree, set(FEATURE_FLAGS))


def _strings(mod: ast.Module):
    """The string constants of `mod` other than docstrings and bare strings."""
    bare = {id(n.value) for n in ast.walk(mod) if isinstance(n, ast.Expr)}
    return [n.value for n in ast.walk(mod)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in bare]


def named_backend_modules(tree: Tree) -> list[str]:
    """The modules of backends/ that are a backend's rules: backends/<name>.py (or the modules of
    a package backends/<name>/) for each <name> a string key of a dict assigned to BACKENDS in a
    backends/ file, or the first argument (or name=) of a `Backend(...)` call there; and every
    backends/ module a registry names as a string ("pipeproof.backends.amd", "...amd:Rules")
    in a backends/ file defining BACKENDS or named registry*.py. Never NOT_RULES (base,
    capabilities, printed, numba_cache, registry, protocol, dispatch, the package's face)."""
    words, named = set(), set()
    backend_mods = {m for m, rel in tree.modules.items() if rel.split("/")[0] == "backends"}
    for rel, mod in tree.asts.items():
        if rel.split("/")[0] != "backends":
            continue
        registry = rel.rpartition("/")[2].startswith("registry")
        for n in ast.walk(mod):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(isinstance(t, ast.Name) and t.id == "BACKENDS" for t in targets):
                    registry = True
                    words |= {k.value for k in n.value.keys
                              if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", "")) == "Backend":
                first = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "name"), None)
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    words.add(first.value)
        if registry:
            named |= {s.partition(":")[0] for s in _strings(mod)} & backend_mods
    found = set()
    for m in backend_mods:
        parts = tree.modules[m].removesuffix(".py").split("/")
        if parts[-1] in NOT_RULES and len(parts) == 2:
            continue
        if m in named or (len(parts) >= 2 and parts[1] in words):
            found.add(m)
    return sorted(found)


def _faces(tree: Tree) -> dict[str, dict[str, str]]:
    """Package -> {name: the submodule that defines it} from its face's lazy_loader.attach call
    (submod_attrs; a listed submodule stands for itself)."""
    out = {}
    for rel, mod in tree.asts.items():
        if not rel.endswith("__init__.py"):
            continue
        pkg = tree.module_of[rel]
        for n in ast.walk(mod):
            if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "attach":
                try:
                    kw = {k.arg: ast.literal_eval(k.value) for k in n.keywords}
                except ValueError:
                    continue
                table = {s: f"{pkg}.{s}" for s in kw.get("submodules", ())}
                table |= {name: f"{pkg}.{s}" for s, ns in kw.get("submod_attrs", {}).items() for name in ns}
                out[pkg] = {k: v for k, v in table.items() if v in tree.modules}
    return out


def _reached(tree: Tree, rel: str, faces=None) -> set[str]:
    """The modules `rel` imports, anywhere in it: each import's target; a name taken from a face
    (`from pipeproof.checker.cli import extract`) also reaches the submodule the face takes it
    from; a face reaches the submodules its attach call lists; and `import_module("m")` with a
    literal reaches m."""
    faces = _faces(tree) if faces is None else faces
    me, out = tree.module_of[rel], set()
    for i in _imports(tree, rel):
        out.add(i.target)
        if i.name is not None and i.name in faces.get(i.target, {}):
            out.add(faces[i.target][i.name])
    if rel.endswith("__init__.py"):
        out |= set(faces.get(me, {}).values())
    for n in ast.walk(tree.asts[rel]):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "import_module" \
                and n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value in tree.modules:
            out.add(n.args[0].value)
    out.discard(me)
    return out


def named_backend_imports(tree: Tree) -> dict[str, list[str]]:
    """File outside backends/ -> the backend rules modules (named_backend_modules) it imports,
    in any form (`from pipeproof.backends import nvidia`, `import pipeproof.backends.amd as x`,
    `from pipeproof.backends.nvidia import X`, relative, inside a function, importlib)."""
    rules, faces, out = set(named_backend_modules(tree)), _faces(tree), {}
    for rel in tree.asts:
        if rel.split("/")[0] != "backends":
            hit = _reached(tree, rel, faces) & rules
            if hit:
                out[rel] = sorted(hit)
    return out


def third_backend_files(tree: Tree) -> list[str]:
    """The files outside backends/ a third backend touches: those importing a named backend
    module, branching on a capability flag, or switching on the backend's name or code
    (backend_switches), the union. Its cost is THIRD_BACKEND_FIXED (backends/<new>.py, the
    registry) + this many files."""
    switches = {f for f in backend_switches(tree) if f.split("/")[0] != "backends"}
    return sorted(set(named_backend_imports(tree)) | set(capability_branches(tree)) | switches)


def _front_end_module(rel: str) -> bool:
    parts = rel.removesuffix(".py").split("/")
    return any(p in FRONT_END_WORDS for p in parts)


def _front_end_home(tree: Tree, rel: str) -> bool:
    """In the front-end wing (checker/frontends/) or a front end's own package (spec/ttgir/...)."""
    parts = rel.split("/")
    return tree.wing(rel).split("/")[-1] == FRONT_END_WING or any(p in FRONT_END_WORDS for p in parts[:-1])


def third_frontend_importers(tree: Tree) -> dict[str, list[str]]:
    """Product file -> the modules of a specific front end it imports by name, for every file
    outside the front-end wing (checker/frontends/) and the front ends' own packages
    (spec/ttgir/, spec/mojo/). A specific front end's module has a FRONT_END_WORDS word (ttgir,
    triton, mojo) as a folder or its stem: spec.ttgir.*, spec.mojo.*, checker.cli.triton,
    checker.cli.mojo. Imports are _reached's: any import statement (also in a function), a name
    taken from a face that takes it from such a module (`from pipeproof.checker.cli import
    extract` is cli/triton.py's), and a face listing such a module. A string naming one (the
    command table's "pipeproof.checker.cli.triton") is the registry entry, counted apart.
    A third front end costs FRONT_END_FIXED (its reader module, its registry entry, its command)
    + one per file here: on 77d57d9, 3 + 5 (cli's face, cli/triton.py, cli/mojo.py,
    integrations/triton_watch.py, sweep/triton_points.py) = 8."""
    faces, out = _faces(tree), {}
    for rel in tree.asts:
        if _front_end_home(tree, rel):
            continue
        hit = {m for m in _reached(tree, rel, faces) if _front_end_module(tree.modules[m])}
        if hit:
            out[rel] = sorted(hit)
    return out


# issue 46: layering ------------------------------------------------------------------------------

def wing_order(root: Path) -> tuple[tuple[str, ...], ...]:
    """docs/architecture.md's order of the checker/ wings, bottom first: the sentence after
    "go down this order:" up to its first "(" or ".", steps split at "→" (or "->"), each the
    `backticked` wings of one level. WING_ORDER when the page or the sentence is missing."""
    doc = Path(root) / "docs" / "architecture.md"
    text = " ".join(doc.read_text().split()) if doc.is_file() else ""
    _, found, rest = text.partition("go down this order:")
    if not found:
        return WING_ORDER
    rest = rest.split("(")[0].split(". ")[0].replace("->", "→")
    levels = tuple(tuple(w for w in step.split("`")[1::2]) for step in rest.split("→"))
    return levels if all(levels) and len(levels) > 1 else WING_ORDER


def backup_arrows(tree: Tree, order=None) -> list[tuple[str, str]]:
    """(file, module) for each import, at load time or inside a function, from a checker/ wing
    to a checker/ wing higher in the order (wing_order: runtime, results -> core -> engines ->
    smt, models, fix, sweep -> cli -> integrations; a wing imports those below it). Wings the
    order does not name, and wings of one level, are not judged."""
    order = wing_order(tree.root) if order is None else order
    rank = {f"checker/{w}": i for i, level in enumerate(order) for w in level}
    found = set()
    for rel in tree.asts:
        a = rank.get(tree.wing(rel))
        if a is None:
            continue
        for i in _imports(tree, rel):
            b = rank.get(tree.wing(tree.modules[i.target]))
            if b is not None and b > a:
                found.add((rel, i.target))
    return sorted(found)


# issue 46: length --------------------------------------------------------------------------------

class Fn(NamedTuple):
    file: str
    name: str       # Class.method, outer.inner
    lines: int      # `def` line to last line (decorators not counted)
    table: bool     # literal dicts/lists/tuples/sets take more than half its lines


def function_lengths(tree: Tree) -> list[Fn]:
    """Every function and method of the product (nested ones too, each counted whole), longest
    first. A function is a table when the lines of its outermost literal displays (dict, list,
    tuple, set; a literal inside another counts once) cover more than half of its lines."""
    out = []

    def visit(node, prefix, rel):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = child.end_lineno - child.lineno + 1
                covered, stack = set(), list(ast.iter_child_nodes(child))
                while stack:
                    x = stack.pop()
                    if isinstance(x, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                        covered.update(range(x.lineno, x.end_lineno + 1))
                    else:
                        stack.extend(ast.iter_child_nodes(x))
                out.append(Fn(rel, prefix + child.name, n, len(covered) * 2 > n))
                visit(child, f"{prefix}{child.name}.", rel)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", rel)
            else:
                visit(child, prefix, rel)

    for rel, mod in tree.asts.items():
        visit(mod, "", rel)
    return sorted(out, key=lambda f: (-f.lines, f.file, f.name))


# issue 46: tests ---------------------------------------------------------------------------------

def tests_importing_tests(root: Path) -> dict[str, list[str]]:
    """File of tests/ (any .py under it) -> the test files (tests/**/test_*.py) it imports:
    `from tests.test_x import ...`, `from tests import test_x`, `import test_x` / `from test_x
    import ...` (tests/ or the importer's folder on sys.path), `from .test_x import ...`,
    at module level or in a function. Helper modules (tests/paths.py, ...) are not test files."""
    root, out = Path(root), {}
    base = root / "tests"
    for path in sorted(base.rglob("*.py")) if base.is_dir() else []:
        rel = path.relative_to(root).as_posix()
        if "__pycache__" in rel:
            continue
        try:
            mod = ast.parse(path.read_text(), rel)
        except SyntaxError as e:
            raise BadTree(f"{rel}:{e.lineno}: syntax error: {e.msg}") from None
        names = []
        for n in ast.walk(mod):
            if isinstance(n, ast.Import):
                names += [(0, a.name) for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                names += [(n.level, n.module or "")]
                names += [(n.level, f"{n.module}.{a.name}" if n.module else a.name) for a in n.names]
        hit = set()
        for level, name in names:
            parts = [p for p in name.split(".") if p]
            if not parts or not parts[-1].startswith("test_"):
                continue
            if level:
                folder = path.parent
                for _ in range(level - 1):
                    folder = folder.parent
                places = [folder]
            else:
                places = [root, base, path.parent]
            for place in places:
                f = place.joinpath(*parts[:-1], parts[-1] + ".py")
                if f.is_file() and f != path and base in f.parents:
                    hit.add(f.relative_to(root).as_posix())
                    break
        if hit:
            out[rel] = sorted(hit)
    return out


# measure and print ----------------------------------------------------------------------------

def measure(root: Path) -> dict:
    """Every figure of `root` as plain data (the --json document's "after")."""
    tree = load_tree(root)
    if not tree.asts:
        raise BadTree(f"{root}: no product .py files")
    folders = files_per_folder(tree)
    fns = function_lengths(tree)
    return {
        "files": len(tree.asts), "files per folder": folders,
        "largest folder": list(max(folders.items(), key=lambda fc: (fc[1], fc[0]))),
        "largest file": list(max(tree.lines.items(), key=lambda fl: (fl[1], fl[0]))),
        "wings": sorted({tree.wing(f) for f in tree.asts}), "flat": is_flat(tree),
        "private names": [list(p) for p in private_crossings(tree)],
        "face bypasses": [list(b) for b in face_bypasses(tree)],
        "backend switches": backend_switches(tree), "op name compares": op_name_compares(tree),
        "cycles": {k: cycles(g) for k, g in import_graphs(tree).items()},
        "read_before_fill files": files_with_literal(tree, "read_before_fill"),
        "inconclusive files": files_with_literal(tree, "inconclusive"),
        # issue 46
        "capability branches": capability_branches(tree), "feature checks": feature_checks(tree),
        "named backend modules": named_backend_modules(tree),
        "named backend imports": named_backend_imports(tree),
        "third backend files": third_backend_files(tree),
        "third backend cost": THIRD_BACKEND_FIXED + ("backends/dispatch.py" in tree.asts)
                              + len(third_backend_files(tree)),
        "front end importers": third_frontend_importers(tree),
        "third front end cost": FRONT_END_FIXED + len(third_frontend_importers(tree)),
        "wing order": [list(level) for level in wing_order(tree.root)],
        "back-up arrows": [list(a) for a in backup_arrows(tree)],
        "files over 600 lines": [[f, n] for f, n in sorted(tree.lines.items(), key=lambda fl: (-fl[1], fl[0]))
                                 if n > LONG_FILE],
        "files over 800 lines": [[f, n] for f, n in sorted(tree.lines.items(), key=lambda fl: (-fl[1], fl[0]))
                                 if n > VERY_LONG_FILE],
        "largest function": list(fns[0]) if fns else None,
        "functions over 120 lines": [list(f[:3]) for f in fns if f.lines > LONG_FUNCTION and not f.table],
        "tables over 120 lines": [list(f[:3]) for f in fns if f.lines > LONG_FUNCTION and f.table],
        "test files importing test files": tests_importing_tests(tree.root),
    }


def rows(m: dict) -> list[tuple[str, str]]:
    sizes = lambda cs: f"{len(cs)}" + (f" (sizes {', '.join(str(len(c)) for c in cs)})" if cs else "")
    sites = lambda d: f"{len(d)} ({sum(d.values())})"
    lsites = lambda d: f"{len(d)} ({sum(map(len, d.values()))})"
    return [
        ("product .py files", str(m["files"])),
        ("folders with .py files", str(len(m["files per folder"]))),
        ("largest folder", "{} ({} files)".format(*m["largest folder"])),
        ("largest file", "{} ({} lines)".format(*m["largest file"])),
        ("wings", str(len(m["wings"]))),
        ("private names crossing files", str(len(m["private names"]))),
        ("private names crossing wings", str(sum(1 for p in m["private names"] if p[3]))),
        # flat, checker/ has no rooms whose face one could go around
        ("imports around a checker wing's face", "n/a (flat)" if m["flat"] else str(len(m["face bypasses"]))),
        ("files switching on the backend (sites)", sites(m["backend switches"])),
        ("files comparing op names to literals (sites)", sites(m["op name compares"])),
        ("module cycles, module-level imports", sizes(m["cycles"]["module level"])),
        ("module cycles, all imports", sizes(m["cycles"]["all"])),
        ("wing cycles, module-level imports", sizes(m["cycles"]["wings"])),
        ('files with the literal "read_before_fill"', str(len(m["read_before_fill files"]))),
        ('files with the literal "inconclusive"', str(len(m["inconclusive files"]))),
        # issue 46
        ("files branching on a capability flag (sites)", lsites(m["capability branches"])),
        ("feature checks: files (sites)", lsites(m["feature checks"])),
        ("files importing a named backend module (outside backends/)", str(len(m["named backend imports"]))),
        ("cost of a third backend (files)", str(m["third backend cost"])),
        ("cost of a third front end (files)", str(m["third front end cost"])),
        ("wing cycles, all imports", sizes(m["cycles"]["wings, all"])),
        ("back-up arrows (imports up the wing order)", str(len(m["back-up arrows"]))),
        ("product files over 600 lines", str(len(m["files over 600 lines"]))),
        ("product files over 800 lines", str(len(m["files over 800 lines"]))),
        ("largest function", "n/a" if not m["largest function"] else "{}:{} ({} lines{})".format(
            *m["largest function"][:3], ", a table" if m["largest function"][3] else "")),
        ("functions over 120 lines (+ tables)",
         f'{len(m["functions over 120 lines"])} (+ {len(m["tables over 120 lines"])})'),
        ("test files importing test files", str(len(m["test files importing test files"]))),
    ]


def print_table(columns: list[tuple[str, dict]]) -> None:
    table = [("metric", *(h for h, _ in columns))]
    table += [(r[0][0], *(c[1] for c in r)) for r in zip(*(rows(m) for _, m in columns))]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


def print_details(m: dict) -> None:
    lists = {"files per folder": [f"{n:4d}  {d}" for d, n in m["files per folder"].items()],
             "wings": m["wings"],
             "private names crossing files (* crosses a wing)":
                 [f"{f} -> {n} from {mod}{' *' * w}" for f, n, mod, w in m["private names"]],
             "imports around a checker wing's face": [f"{f} -> {mod}" for f, mod in m["face bypasses"]],
             "files switching on the backend (sites)":
                 [f"{n:3d}  {f}" for f, n in m["backend switches"].items()],
             "files comparing op names to literals (sites)":
                 [f"{n:3d}  {f}" for f, n in m["op name compares"].items()],
             **{f"import cycles ({k})": [f"{len(c)}: {', '.join(c)}" for c in cs]
                for k, cs in m["cycles"].items()},
             'files with "read_before_fill"': m["read_before_fill files"],
             'files with "inconclusive"': m["inconclusive files"],
             "files branching on a capability flag (sites: lines)":
                 [f"{len(ls):3d}  {f}: {', '.join(map(str, ls))}" for f, ls in m["capability branches"].items()],
             "feature checks (sites: lines)":
                 [f"{len(ls):3d}  {f}: {', '.join(map(str, ls))}" for f, ls in m["feature checks"].items()],
             "named backend modules": m["named backend modules"],
             "files importing a named backend module (outside backends/)":
                 [f"{f} -> {', '.join(ms)}" for f, ms in m["named backend imports"].items()],
             f"a third backend: {m['third backend cost'] - len(m['third backend files'])} + these files": m["third backend files"],
             f"a third front end: {FRONT_END_FIXED} + these files (-> the front end's modules)":
                 [f"{f} -> {', '.join(ms)}" for f, ms in m["front end importers"].items()],
             "wing order (bottom first)": [", ".join(level) for level in m["wing order"]],
             "back-up arrows (imports up the wing order)": [f"{f} -> {mod}" for f, mod in m["back-up arrows"]],
             "product files over 600 lines": [f"{n:5d}  {f}" for f, n in m["files over 600 lines"]],
             "functions over 120 lines": [f"{n:5d}  {f}:{q}" for f, q, n in m["functions over 120 lines"]],
             "tables over 120 lines": [f"{n:5d}  {f}:{q}" for f, q, n in m["tables over 120 lines"]],
             "test files importing test files":
                 [f"{f} -> {', '.join(ts)}" for f, ts in m["test files importing test files"].items()]}
    for title, items in lists.items():
        print(f"\n{title}: {len(items)}" + "".join(f"\n  {x}" for x in items))


def measure_rev(rev: str) -> tuple[str, dict]:
    """The short hash of `rev` and its figures, from a `git archive` of it in a temporary folder."""
    git = lambda *a, **kw: subprocess.run(["git", *a], cwd=REPO, capture_output=True, **kw)
    short = git("rev-parse", "--short", f"{rev}^{{commit}}", text=True)
    if short.returncode:
        raise BadTree(f"--before {rev}: not a revision of {REPO}")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["tar", "-x", "-C", tmp], input=git("archive", rev).stdout, check=True)
        return short.stdout.strip(), measure(Path(tmp))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", metavar="REV", help="also measure this revision, side by side")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--root", type=Path, default=REPO, help="the tree to measure (default: this one)")
    args = ap.parse_args(argv)
    try:
        after = measure(args.root)
        before = measure_rev(args.before) if args.before else None
    except BadTree as e:
        print(f"architecture.py: {e}", file=sys.stderr)
        return 2
    if args.json:
        doc = {"after": after} | ({"before": {"rev": before[0], **before[1]}} if before else {})
        print(json.dumps(doc, indent=1, sort_keys=True))
        return 0
    cols = ([(f"before ({before[0]})", before[1])] if before else []) + [("after (working tree)", after)]
    print_table(cols)
    print_details(after)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
