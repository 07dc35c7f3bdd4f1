"""Issue 33's code figures: how the product's source is laid out, read statically (ast only, no
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
    later, so it cannot break a load) and of all imports ("all"); the wing graph of the first."""
    top, every, wings = nx.DiGraph(), nx.DiGraph(), nx.DiGraph()
    for rel in tree.asts:
        me = tree.module_of[rel]
        top.add_node(me), every.add_node(me), wings.add_node(tree.wing(rel))
        for i in _imports(tree, rel):
            if i.target == me:
                continue
            every.add_edge(me, i.target)
            if not i.in_function:
                top.add_edge(me, i.target)
                a, b = tree.wing(rel), tree.wing(tree.modules[i.target])
                if a != b:
                    wings.add_edge(a, b)
    return {"module level": top, "all": every, "wings": wings}


def cycles(g: nx.DiGraph) -> list[list[str]]:
    """Strongly connected components of more than one node, largest first."""
    return sorted((sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1),
                  key=lambda c: (-len(c), c))


# measure and print ----------------------------------------------------------------------------

def measure(root: Path) -> dict:
    """Every figure of `root` as plain data (the --json document's "after")."""
    tree = load_tree(root)
    if not tree.asts:
        raise BadTree(f"{root}: no product .py files")
    folders = files_per_folder(tree)
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
    }


def rows(m: dict) -> list[tuple[str, str]]:
    sizes = lambda cs: f"{len(cs)}" + (f" (sizes {', '.join(str(len(c)) for c in cs)})" if cs else "")
    sites = lambda d: f"{len(d)} ({sum(d.values())})"
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
             'files with "inconclusive"': m["inconclusive files"]}
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
