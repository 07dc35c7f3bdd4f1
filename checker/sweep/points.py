"""`pipeproof sweep`: check every configuration of a spec (docs/sweep.md).

    from pipeproof.checker.sweep.points import points_of_spec, run_sweep
    points = points_of_spec("spec.toml", ["stages=2,4,8", "consumers=1..8"])
    result = run_sweep(points, jobs=2)            # or cluster="tcp://host:8786"
    result.records[i]["verdict"], result.exit_code

The grid and each point's TOML come from checker/sweep/grid.py (or, for `--triton`, from the
autotune configs of a kernel: checker/sweep/triton_points.py); checker/sweep/run.py checks points
where the work is (this process, local worker processes or a Dask cluster) and caches exact
answers by content hash. This module joins them: the points whose answer is cached (with
`resume`) or known before any check (keys that cannot be set) are not sent; the rest run, and
every record lands at its point's index, so the records are in grid order however they ran.

Each record (a plain dict, what --json prints per point) holds: index, params, label, spec
(the point's name in messages), hash, cached, verdict (`ok`, `violation`, `inconclusive`,
`error`), kind, kinds, depth, states, transitions, seconds (the search, as `verify` reports
it), limit, as_expected, verify (verify's own verdict), proof (with --prove: status,
abstract_states, seconds, items, reason, kind), message (an error point's one line),
exit_code (what the point alone would exit with), worker_seconds (the point's whole time in
its worker: load, compile, search, trace), and trace / proof_trace (ITF documents; the
command writes them to --trace-dir and leaves them out of its JSON).

With --prove, a point's verdict is the worse of the two answers: `violation` if either finds
one, `inconclusive` if either is, `ok` only when verified and proved.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from pipeproof.checker.sweep import grid as G
from pipeproof.checker.sweep import run as R
from pipeproof.spec.schema import SpecError


@dataclass
class SweepResult:
    source: str
    params: list[str]              # the parameter names, in axis order
    points: list                   # sweep_grid.Point, in grid order
    records: list[dict]            # one per point, in grid order
    seconds: float = 0.0           # running the points (not starting the workers)
    start_seconds: float = 0.0     # starting the workers and loading their engines
    runner: str = ""
    workers: int = 1
    ran: int = 0                   # points checked in this run
    cached: int = 0                # points answered from the cache
    interrupted: bool = False
    options: dict = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return R.worst_code(self.records)

    def counts(self) -> dict:
        out = {v: 0 for v in R.OUTCOMES}
        for record in self.records:
            out[record["verdict"]] += 1
        return out

    @property
    def points_per_second(self) -> float:
        return self.ran / self.seconds if self.seconds > 0 else 0.0


# ---------------------------------------------------------------------------------------
# The points


def read_document(path: str) -> dict:
    from pipeproof.spec.load_toml import parse_toml, read_text
    return parse_toml(read_text(path), str(path))


def points_of_spec(path: str, sets=(), document: dict | None = None) -> list:
    """The grid of the spec file at `path`: its [sweep] table's axes and `sets` (--set texts).
    A SpecError (one line) when the file or an axis is bad, or there is nothing to sweep."""
    path = str(path)
    document = dict(read_document(path) if document is None else document)
    table = document.pop(G.SWEEP_TABLE, None)
    table_axes = G.axes_from_table(table, path) if table is not None else []
    set_axes = [G.axis_from_text(text) for text in sets]
    axes = G.merge_axes(table_axes, set_axes, path)
    if not axes:
        raise SpecError(f"{path}: nothing to sweep (give --set KEY=VALUES, e.g. --set stages=2,4,8, "
                        f"or a [{G.SWEEP_TABLE}] table in the spec)")
    return G.grid(document, axes, path)


def param_names(points) -> list[str]:
    names = []
    for point in points:
        for name in point.params:
            if name not in names:
                names.append(name)
    return names


# ---------------------------------------------------------------------------------------
# Running them


def run_sweep(points, options: dict | None = None, *, jobs: int | None = None,
              cluster: str | None = None, cache: R.Cache | None = None, resume: bool = False,
              on_start=None, on_record=None, runner=None) -> SweepResult:
    """Check every point; records in grid order. `on_start(total, to_run, runner)` is called
    once the workers are up, `on_record(record)` as each record is final (cached ones first).
    Ctrl-C ends it: the points not finished are `inconclusive` (not run), nothing else lost."""
    options = R.default_options(**(options or {}))
    source = points[0].source if points else ""
    result = SweepResult(source=source, params=param_names(points), points=list(points),
                         records=[None] * len(points), options=options)
    if cache is None:
        keys = [None] * len(points)
    else:
        keys = [cache.key(p.text) if not p.error else None for p in points]

    def land(index: int, record: dict, cached: bool) -> None:
        point = points[index]
        record = dict(record, index=index, params=dict(point.params), label=point.label,
                      spec=point.where, hash=keys[index], cached=cached)
        if point.extra:
            record["extra"] = dict(point.extra)
        result.records[index] = record
        if not cached and cache is not None and keys[index] is not None:
            cache.put(keys[index], record)
        if on_record is not None:
            on_record(record)

    tasks = []
    for point in points:
        if point.error:
            land(point.index, R.error_record(point.error), False)
            continue
        hit = cache.get(keys[point.index]) if (resume and cache is not None) else None
        if hit is not None:
            result.cached += 1
            land(point.index, hit, True)
        else:
            tasks.append((point.index, point.text, point.where))

    engine = runner or R.runner(options, jobs=jobs, cluster=cluster)
    result.runner, result.workers = engine.name, engine.workers
    started = time.perf_counter()
    try:
        try:  # Ctrl-C while the workers start or run: the runner stops them; what finished stays
            if tasks:
                result.start_seconds = engine.start()
                result.runner, result.workers = engine.name, engine.workers
            if on_start is not None:
                on_start(len(points), len(tasks), engine)
            started = time.perf_counter()
            if tasks:
                engine.run(tasks, lambda index, record: land(index, record, False))
        except KeyboardInterrupt:
            result.interrupted = True
        result.seconds = time.perf_counter() - started
    finally:
        engine.close()
    for index, record in enumerate(result.records):
        if record is None:  # stopped before it ran (or while it ran)
            land(index, R.not_run_record(), False)
    result.ran = sum(1 for r in result.records
                     if not r["cached"] and r.get("limit") != R.NOT_RUN and not points[r["index"]].error)
    return result
