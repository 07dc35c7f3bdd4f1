"""Issue 16's code figures, for one checkout or several side by side.

    python benchmarks/architecture.py [CHECKOUT ...]      (default: this checkout)

Prints, per checkout: files and lines per package; the product files over 600 lines; how many
product files spell each op and each rule (the greps below); the import cycles between product
modules and between packages. A module is a product module when it lies under spec/, backends/,
checker/ or cuda_ref/; imports are read from the AST (both `checker.x` and `pipeproof.checker.x`
spellings), including imports inside functions, since a cycle there is still a cycle.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import networkx as nx

PACKAGES = ("spec", "backends", "checker", "checker/smt", "cuda_ref", "tests")
PRODUCT = ("spec", "backends", "checker", "cuda_ref")
OPS = ("wait_full", "wait_empty", "try_full", "try_empty", "arrive_full", "arrive_empty",
       "expect_tx", "copy", "write", "read", "commit_empty", "advance", "reset", "drain", "sync",
       "read_async", "read_wait", "sync_arrive", "sync_wait")
# A rule is "written" in a file when one of its spellings occurs there (comments excluded).
RULES = {
    # (an effect's value, an entry's or a ring's kind is not an op name: `eff.issues == "copy"`,
    # `e.barrier == "sync"`, `e["kind"] == "read"`)
    "op names branched on": r"""(?<!barrier )(?<!issues )(?<!move )(?<!kind )(?<!kind"\] )(?<!kind'\] )(==|!=|\bin)\s*\(?\s*["'](%s)["']"""
                            % "|".join(OPS),
    # the compiled engines and the Z3 encoding compare op codes (semantics.WAIT_FULL ...)
    "op codes branched on": r"""(==|!=|\bin)\s*\(?\s*(S\.)?(%s)\b(?!\s*=)""" % "|".join(o.upper() for o in OPS),
    # code choosing a signal's expected count by its kind (not the TOML keys' mere mention)
    "which count a signal expects": r"(producer_arrive_count|full_count|R_FULL_COUNT)[^\n]{0,40}\bif\b"
                                    r"|\bif\b[^\n]{0,60}\belse\b[^\n]{0,20}(consumer_arrive_count|empty_count|R_EMPTY_COUNT)",
    "to=peer (which CTA a target names)": r"""["']peer["']\s*[:)]|==\s*["']peer["']|T_PEER\b""",
    "state layout by hand (F_RING0 + 3 * r)": r"F_RING0\s*\+\s*3",
    "exit-code tables": r"^\s*EXIT_[A-Z_]+(\s*,\s*EXIT_[A-Z_]+)*\s*=\s*\d",
    "violation wording": r"""["']read_before_fill["']\s*:""",
}


def product_files(root: Path):
    for pkg in PRODUCT:
        yield from sorted((root / pkg).rglob("*.py"))


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The product modules `path` imports (`from a.b import c` counts a.b.c when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            name = name.removeprefix("pipeproof.")
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def code_lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("#")]


def report(root: Path) -> None:
    print(f"== {root}")
    print("files and lines per package:")
    for pkg in PACKAGES:
        d = root / pkg
        if not d.is_dir():
            continue
        files = sorted(d.glob("*.py"))
        print(f"  {pkg:12s} {len(files):3d} files {sum(len(f.read_text().splitlines()) for f in files):6d} lines")
    long = [(len(f.read_text().splitlines()), f.relative_to(root)) for f in product_files(root)]
    long = sorted((n, str(f)) for n, f in long if n > 600)
    print(f"product files over 600 lines: {len(long)}" + "".join(f"\n  {n:5d} {f}" for n, f in long))

    print("product files spelling each rule:")
    for rule, pattern in RULES.items():
        rx = re.compile(pattern, re.M)
        hits = {str(f.relative_to(root)): len(rx.findall("\n".join(code_lines(f))))
                for f in product_files(root)}
        where = {f: n for f, n in hits.items() if n}
        print(f"  {len(where):3d} files {sum(where.values()):4d} places  {rule}: "
              + ", ".join(f"{f} ({n})" for f, n in where.items()))
    per_op = {}
    for op in OPS:
        rx = re.compile(r"""["']%s["']|\b%s\b""" % (op, op.upper()))
        per_op[op] = sum(1 for f in product_files(root) if rx.search("\n".join(code_lines(f))))
    print("  product files naming each op: " + ", ".join(f"{op} {n}" for op, n in per_op.items()))

    files = {module_name(root, f): f for f in product_files(root)}
    g = nx.DiGraph()
    for mod, path in files.items():
        g.add_node(mod)
        for dep in imports_of(path, set(files)):
            if dep != mod and not mod.startswith(dep + "."):  # a package's own submodule
                g.add_edge(mod, dep)
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    print(f"import cycles between modules: {len(cycles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in cycles))
    top = nx.DiGraph()
    for a, b in g.edges:
        pa, pb = a.split(".")[0], b.split(".")[0]
        if pa != pb:
            top.add_edge(pa, pb)
    pcycles = [sorted(c) for c in nx.strongly_connected_components(top) if len(c) > 1]
    print(f"import cycles between packages: {len(pcycles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in pcycles))


def main(argv: list[str]) -> int:
    for root in argv or [str(Path(__file__).resolve().parent.parent)]:
        report(Path(root).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
