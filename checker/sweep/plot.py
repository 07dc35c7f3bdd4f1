"""The picture of a sweep: a heatmap of the verdict over two parameters (`--plot X,Y -o F.png`).

Each cell is one (X, Y) pair; where other parameters vary too, the cell holds several points
and shows the worst of them (the order of the exit codes: error, violation, inconclusive,
ok), with how many of its points are not ok. The text in a cell names the verdict or the
first violation kind. matplotlib draws it without a display (the Agg backend).
"""
from __future__ import annotations

import textwrap

from pipeproof.checker.results import KINDS
from pipeproof.checker.sweep.run import ERROR, severity
from pipeproof.checker.sweep.grid import show
from pipeproof.spec.schema import SpecError

COLOURS = {"ok": "#2e9e4f", "inconclusive": "#f0b429", "violation": "#d64545", ERROR: "#7f7f7f"}
ORDER = ("ok", "inconclusive", "violation", ERROR)
# a kind's label in a heatmap cell: its words, two lines at most
SHORT = {kind: textwrap.fill(kind.replace("_", " "), 12, max_lines=2) for kind in KINDS}


def resolve(name: str, params: list[str], where: str = "--plot") -> str:
    """A parameter named by its axis name or by one of the keys of a tied axis."""
    if name in params:
        return name
    for p in params:
        if name in p.split("+"):
            return p
    raise SpecError(f"{where}: {name!r} is not a swept parameter (swept: {', '.join(params)})")


def parse_plot(text: str, params: list[str]) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise SpecError(f"--plot {text!r}: expected two swept parameters X,Y (e.g. stages,consumers)")
    x, y = (resolve(p, params) for p in parts)
    if x == y:
        raise SpecError(f"--plot {text!r}: X and Y must be two different parameters")
    return x, y


def cells(records, x: str, y: str):
    """(x values, y values, {(x, y): [records]}) in the order the values first appear."""
    xs, ys, by = [], [], {}
    for record in records:
        px, py = record["params"][x], record["params"][y]
        if not any(px == v and type(px) is type(v) for v in xs):
            xs.append(px)
        if not any(py == v and type(py) is type(v) for v in ys):
            ys.append(py)
        by.setdefault((show(px), show(py)), []).append(record)
    return xs, ys, by


def heatmap(records, x: str, y: str, path: str, title: str = "", others: dict | None = None) -> None:
    """Write the heatmap of `records` over parameters x (columns) and y (rows) to `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    xs, ys, by = cells(records, x, y)
    grid, labels = [], []
    for vy in ys:
        row, text_row = [], []
        for vx in xs:
            group = by.get((show(vx), show(vy)), [])
            if not group:
                row.append(float("nan"))
                text_row.append("")
                continue
            worst = max(group, key=severity)
            row.append(ORDER.index(worst["verdict"]))
            text_row.append(_cell_text(worst, group))
        grid.append(row)
        labels.append(text_row)

    width = max(4.0, 1.0 + 0.9 * len(xs))
    height = max(3.0, 1.4 + 0.6 * len(ys))
    fig, ax = plt.subplots(figsize=(width, height), dpi=120)
    ax.imshow(grid, cmap=ListedColormap([COLOURS[v] for v in ORDER]), vmin=-0.5,
              vmax=len(ORDER) - 0.5, aspect="auto", origin="lower")
    ax.set_xticks(range(len(xs)), [show(v) for v in xs])
    ax.set_yticks(range(len(ys)), [show(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    small = 7 if max(len(xs), len(ys)) > 8 else 8
    for j, row in enumerate(labels):
        for i, text in enumerate(row):
            if text:
                ax.text(i, j, text, ha="center", va="center", fontsize=small, color="white")
    ax.set_xticks([i - 0.5 for i in range(1, len(xs))], minor=True)
    ax.set_yticks([j - 0.5 for j in range(1, len(ys))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    heading = title
    if others:
        heading += ("\n" if heading else "") + "worst over " + "; ".join(
            f"{k} in {{{', '.join(show(v) for v in vs)}}}" for k, vs in others.items())
    if heading:
        ax.set_title(heading, fontsize=9)
    present = [v for v in ORDER if any(r["verdict"] == v for r in records)]
    ax.legend(handles=[Patch(color=COLOURS[v], label=v) for v in present],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _cell_text(worst: dict, group: list) -> str:
    verdict = worst["verdict"]
    word = SHORT.get(worst.get("kind") or "", verdict) if verdict == "violation" else verdict
    if len(group) == 1:
        return word
    bad = sum(1 for r in group if r["verdict"] != "ok")
    return f"{word}\n{bad}/{len(group)}" if bad else f"ok\n{len(group)}/{len(group)}"


def other_values(records, params: list[str], x: str, y: str) -> dict:
    out = {}
    for p in params:
        if p in (x, y):
            continue
        values = []
        for r in records:
            v = r["params"].get(p)
            if not any(v == w and type(v) is type(w) for w in values):
                values.append(v)
        if len(values) > 1:
            out[p] = values
    return out
