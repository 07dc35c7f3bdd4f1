"""Running a sweep's points (docs/sweep.md): one point's check, the result cache, and where the
points run — in this process, in a pool of local worker processes, or on a Dask cluster.

`check_point(text, where, options)` is the unit of work everywhere: it loads the point's TOML
like any spec file, verifies it (and, with `prove`, proves it), and returns a plain dict (the
**record**) that pickles and JSON-encodes: verdict, kind, kinds, depth, states, transitions,
seconds, limit, as_expected, proof, the counterexample as ITF, and the exit code the point
alone would give. A point that is not a valid spec is the record of verdict `error` with the
loader's one-line message (exit 2); an exception of ours is `error` with exit 4. It never
raises.

Workers load the engines once: a local worker's initializer and a Dask worker's first task
import the engine and run a tiny spec (numba's cached code is loaded then), so a point costs
its search, the spec's load and compile, and the hand-off — never an interpreter or numba start.

Results come back in whatever order the workers finish; the caller keys them by the point's
index, so every output is in grid order whichever way the points ran.

The cache: a record whose answer is exact (`ok`, a `violation` at its minimal depth, a point
that is not a spec) is stored under the SHA-256 of the point's text, the check options that
change answers, and the sources of the checker, one JSON file per point, written to a
temporary name and renamed; `--resume` reads them back, so a stopped sweep runs only what is
left. Inconclusive points and internal errors are never stored.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
import traceback
from pathlib import Path

from pipeproof.checker.results import (EXIT_INCONCLUSIVE, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE,
                                     SEVERITY, VERDICT_EXIT, Verdict, worse)

ERROR = "error"
OUTCOMES = ("ok", "violation", "inconclusive", ERROR)  # the verify verdicts, and `error`
NOT_RUN = "interrupted (Ctrl-C) before it ran"
RECORD_VERSION = 1
# the options that change a point's answer (the limits do not change an exact answer)
ANSWER_OPTIONS = ("prove", "symmetry", "por", "cta_symmetry")


def default_options(**given) -> dict:
    options = {"prove": False, "timeout": None, "max_states": None, "symmetry": True,
               "por": True, "cta_symmetry": True, "traces": True}
    unknown = set(given) - set(options)
    if unknown:
        raise TypeError(f"unknown sweep options: {', '.join(sorted(unknown))}")
    options.update(given)
    return options


# ---------------------------------------------------------------------------------------
# One point

_warmed: set[str] = set()


def warm(options: dict) -> float:
    """Load the engines this process needs, once; the seconds it took (0 after the first)."""
    started = time.perf_counter()
    need = {"verify"} | ({"prove"} if options.get("prove") else set())
    if "verify" in need - _warmed:
        from pipeproof.checker.engines import warm_up
        warm_up()
        _warmed.add("verify")
    if "prove" in need - _warmed:
        from pipeproof.checker.engines import warm_up_prove
        warm_up_prove()
        _warmed.add("prove")
    return time.perf_counter() - started


def check_point(text: str, where: str, options: dict) -> dict:
    """Load, verify (and prove) one point; its record. Never raises."""
    started = time.perf_counter()
    warm(options)
    record = _empty_record()
    try:
        _check(text, where, options, record)
    except KeyboardInterrupt:
        raise
    except Exception as err:  # an internal error: the record says so, the sweep goes on
        record.update(verdict=ERROR, exit_code=EXIT_INTERNAL,
                      message=f"{where}: internal error (please report): {type(err).__name__}: "
                              f"{' '.join(str(err).split())}",
                      traceback=traceback.format_exc())
    record["worker_seconds"] = time.perf_counter() - started
    return record


def check_points(batch, options: dict) -> list:
    """[(index, record)] of a batch of (index, text, where): one task of a cluster."""
    return [(index, check_point(text, where, options)) for index, text, where in batch]


def _empty_record() -> dict:
    return {"verdict": ERROR, "kind": None, "kinds": [], "depth": None, "states": 0,
            "transitions": 0, "seconds": 0.0, "limit": None, "as_expected": None,
            "verify": None, "proof": None, "message": None, "exit_code": EXIT_INTERNAL,
            "trace": None, "proof_trace": None}


def _check(text: str, where: str, options: dict, record: dict) -> None:
    from pipeproof.checker.engines import INTERRUPTED
    from pipeproof.checker.engines import verify
    from pipeproof.spec.load import load_spec_text
    from pipeproof.spec.schema import SpecError

    try:
        spec = load_spec_text(text, where)
    except SpecError as err:
        record.update(verdict=ERROR, exit_code=EXIT_USAGE, message=str(err))
        return
    result = verify(spec, max_states=options.get("max_states"), timeout=options.get("timeout"),
                    symmetry=options.get("symmetry", True), por=options.get("por", True),
                    cta_symmetry=options.get("cta_symmetry", True) and options.get("symmetry", True))
    record.update(verdict=result.verdict, verify=result.verdict, kind=result.kind,
                  kinds=list(result.kinds), states=result.states, transitions=result.transitions,
                  seconds=result.seconds, limit=result.limit or None,
                  depth=_depth(result) if result.verdict == "violation" else None)
    if result.verdict == "violation" and options.get("traces", True):
        record["trace"] = _itf(result)
    if options.get("prove") and result.limit != INTERRUPTED:
        record["proof"] = _prove(spec, result, options, record)
    verdict = record["verdict"]
    if record["proof"] is not None and verdict != "violation":
        status = Verdict.of(record["proof"]["status"])
        if status == "violation":
            verdict = "violation"
            record.update(kind=record["proof"]["kind"], kinds=record["proof"]["kinds"])
        elif status == "inconclusive" or verdict == "inconclusive":
            verdict = "inconclusive"
    record["verdict"] = verdict
    # A sweep judges each point by its own verdict. The base spec's `expect` describes the base
    # configuration, not the points that change it (a grid over a correct spec is there to find
    # the shapes that break it): it is not applied, as_expected stays None and no point is
    # UNEXPECTED (docs/sweep.md "What each point gives").
    record["as_expected"] = None
    record["exit_code"] = VERDICT_EXIT[verdict]


def _prove(spec, result, options: dict, record: dict) -> dict:
    if result.verdict == "violation":  # refuted at this item count already
        return {"status": "violated", "abstract_states": 0, "seconds": 0.0, "items": spec.items,
                "reason": f"verify found {result.kind} at items = {spec.items}",
                "kind": result.kind, "kinds": list(result.kinds)}
    from pipeproof.checker.engines import MAX_ABSTRACT_STATES, prove
    proof = prove(spec, timeout=options.get("timeout"),
                  max_states=options.get("max_states") or MAX_ABSTRACT_STATES,
                  por=options.get("por", True), cta_symmetry=options.get("cta_symmetry", True))
    out = {"status": proof.status, "abstract_states": proof.abstract_states,
           "seconds": proof.seconds, "items": proof.items, "reason": proof.reason,
           "kind": None, "kinds": []}
    if proof.result is not None and proof.result.verdict == "violation":
        out.update(kind=proof.result.kind, kinds=list(proof.result.kinds))
        if options.get("traces", True):
            record["proof_trace"] = _itf(proof.result)
    return out


def _depth(result) -> int:
    from pipeproof.checker.results import counterexample_depth
    return counterexample_depth(result)


def _itf(result) -> dict | None:
    from pipeproof.checker.results import to_itf
    trace = result.traces.get(result.kind)
    return to_itf(trace) if trace is not None else None


def error_record(message: str, code: int = EXIT_USAGE) -> dict:
    """The record of a point that never reached a worker (its keys could not be set)."""
    record = _empty_record()
    record.update(verdict=ERROR, exit_code=code, message=message, worker_seconds=0.0)
    return record


def not_run_record() -> dict:
    record = _empty_record()
    record.update(verdict="inconclusive", exit_code=EXIT_INCONCLUSIVE, limit=NOT_RUN,
                  worker_seconds=0.0)
    return record


def worst_code(records) -> int:
    code = EXIT_OK
    for record in records:
        code = worse(code, record["exit_code"])
    return code


def severity(record: dict) -> int:
    return SEVERITY[record["exit_code"]]


# ---------------------------------------------------------------------------------------
# The cache


def sources_digest() -> str:
    """SHA-256 of the checker's sources (spec, backends, checker): a cached answer is reused
    only by the code that gave it."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[2]  # the folder holding checker/, spec/, backends/
    for folder in ("spec", "backends", "checker"):
        for path in sorted((root / folder).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def default_cache_dir() -> Path:
    if os.environ.get("PIPEPROOF_SWEEP_CACHE"):
        return Path(os.environ["PIPEPROOF_SWEEP_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pipeproof" / "sweep"


class Cache:
    """Records by content hash, one JSON file each (`ab/abcdef....json`)."""

    def __init__(self, directory, options: dict, digest: str | None = None):
        self.directory = Path(directory)
        answer = {k: options.get(k) for k in ANSWER_OPTIONS}
        self._salt = json.dumps({"version": RECORD_VERSION, "sources": digest or sources_digest(),
                                 "options": answer}, sort_keys=True)

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self._salt}\0{text}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            record = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) and record.get("verdict") in OUTCOMES else None

    def put(self, key: str, record: dict) -> bool:
        if not cacheable(record):
            return False
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({k: v for k, v in record.items() if k != "traceback"}))
            os.replace(tmp, path)
        except OSError:
            return False  # a read-only or full disk: the sweep goes on without its cache
        return True


def cacheable(record: dict) -> bool:
    """Exact answers only: ok, a violation at its minimal depth, a point that is not a spec."""
    if record["verdict"] == ERROR:
        return record["exit_code"] == EXIT_USAGE
    proof = record.get("proof")
    if proof is not None and proof["status"] == "unknown":
        return False
    return record["verdict"] in ("ok", "violation") and not record.get("limit")


# ---------------------------------------------------------------------------------------
# Where the points run. Each runner takes [(index, text, where)] and calls
# done(index, record) as records arrive (in this thread); Ctrl-C stops it (KeyboardInterrupt
# out of start() or run(), with every worker process gone), and the points it did not finish
# get no call.


def interrupted(record: dict) -> bool:
    """Did a Ctrl-C stop this point's check (the searches end on it like a limit)?"""
    from pipeproof.checker.engines import INTERRUPTED
    proof = record.get("proof") or {}
    return record.get("limit") == INTERRUPTED or proof.get("reason") == INTERRUPTED


class InProcess:
    """Points one after another in this process (--jobs 1)."""

    name = "1 worker (this process)"
    workers = 1

    def __init__(self, options: dict):
        self.options = options

    def start(self) -> float:
        return warm(self.options)

    def run(self, tasks, done) -> None:
        for index, text, where in tasks:
            record = check_point(text, where, self.options)
            done(index, record)
            if interrupted(record):  # the search stopped at the Ctrl-C: so does the sweep
                raise KeyboardInterrupt

    def close(self) -> None:
        pass


def _init_local_worker(options: dict) -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool on Ctrl-C
    warm(options)


class _SigintHeld:
    """SIGINT blocked in this thread while the pool starts its processes: the fork server and
    every worker (forked from it, or by threads started now) inherit the mask, so a terminal's
    Ctrl-C, which reaches the whole process group, reaches none of them (not even while the
    fork server imports the engines, or before a worker's initializer ignores it: either
    printed a traceback). The parent gets a Ctrl-C held meanwhile once it leaves (the
    resource tracker of multiprocessing starts its process the same way)."""

    def __enter__(self):
        import signal
        self._held = hasattr(signal, "pthread_sigmask")
        if self._held:
            # multiprocessing's resource tracker, started with the first pool, unblocks SIGINT
            # in this thread after its own start: start it first
            from multiprocessing import resource_tracker
            resource_tracker.ensure_running()
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    def __exit__(self, *exc):
        import signal
        if self._held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _local_task(task):
    index, text, where, options = task
    return index, check_point(text, where, options)


def _ready(_):
    return os.getpid()


def _context(options: dict):
    """Workers forked from a fork server that has loaded the engines once (checker/sweep/warm.py):
    N workers start for the price of one engine load, each from a clean process that holds no
    thread of this one. Where there is no fork server (Windows), spawned interpreters that each
    load the engines."""
    import multiprocessing
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["pipeproof.checker.sweep.warm"])
    # the fork server starts with the first pool and reads this then; a later pool whose
    # options need more (prove) loads the rest in each worker's initializer
    os.environ[WARM_ENV] = "verify,prove" if options.get("prove") else "verify"
    return context


WARM_ENV = "PIPEPROOF_SWEEP_WARM"


class LocalPool:
    """`jobs` worker processes on this machine, each with the engines loaded once."""

    def __init__(self, options: dict, jobs: int):
        self.options = options
        self.workers = jobs
        self.name = f"{jobs} local worker process{'' if jobs == 1 else 'es'}"
        self._pool = None

    def start(self) -> float:
        started = time.perf_counter()
        try:
            with _SigintHeld():
                self._pool = _context(self.options).Pool(
                    self.workers, initializer=_init_local_worker, initargs=(self.options,))
            # every worker has run its initializer (engines loaded) once each has answered
            self._pool.map(_ready, range(self.workers), chunksize=1)
        except BaseException:  # (a Ctrl-C while they start): no process is left behind
            self.terminate()
            raise
        return time.perf_counter() - started

    def run(self, tasks, done) -> None:
        tasks = [(i, t, w, self.options) for i, t, w in tasks]
        chunk = max(1, min(8, len(tasks) // (self.workers * 32)))
        try:
            for index, record in self._pool.imap_unordered(_local_task, tasks, chunksize=chunk):
                done(index, record)
        except BaseException:  # Ctrl-C: stop the workers now (close() would wait for them)
            self.terminate()
            raise

    def terminate(self) -> None:
        """Stop every worker now (their points are lost) and wait until they are gone."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        workers = list(getattr(pool, "_pool", ()))
        with _SigintHeld():  # (a second Ctrl-C must not leave the pool half stopped)
            pool.terminate()
            for worker in workers:  # (terminate sent SIGTERM and joined; make sure)
                if worker.exitcode is None:
                    worker.kill()
                    worker.join(5)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool.join()
            self._pool = None


SCHEDULER_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ws|wss|ucx)://)?(?:\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):\d{1,5}$")


def _dask_warm(options: dict) -> dict:
    return {"pid": os.getpid(), "seconds": warm(options), "sources": sources_digest()}


class DaskCluster:
    """The points as tasks of an existing Dask distributed scheduler (`--cluster ADDRESS`).

    The workers must have this pipeproof installed (the same sources: checked first). Each
    worker loads the engines once, before the first point, and keeps them loaded."""

    def __init__(self, options: dict, address: str, connect_timeout: float = 20.0):
        self.options = options
        self.address = address
        self.connect_timeout = connect_timeout
        self.client = None
        self.workers = 0
        self.name = f"Dask cluster {address}"

    def start(self) -> float:
        from pipeproof.spec.schema import SpecError
        try:
            from distributed import Client
        except ImportError:
            raise SpecError("--cluster needs Dask distributed (pip install 'dask[distributed]')") from None
        if not SCHEDULER_ADDRESS.match(self.address):
            raise SpecError(f"--cluster {self.address}: not a scheduler address (expected "
                            f"[tcp|tls|ws|wss|ucx://]HOST:PORT, e.g. tcp://10.0.0.5:8786)")
        started = time.perf_counter()
        try:
            self.client = Client(self.address, timeout=self.connect_timeout, set_as_default=False)
        except (OSError, TimeoutError) as err:
            raise SpecError(f"--cluster {self.address}: cannot connect to a Dask scheduler there "
                            f"({' '.join(str(err).split()) or type(err).__name__})") from None
        except ValueError as err:
            raise SpecError(f"--cluster {self.address}: not a scheduler address "
                            f"({' '.join(str(err).split())}; e.g. tcp://HOST:8786)") from None
        workers = self.client.run(_dask_warm, self.options)
        self.workers = len(workers)
        if not workers:
            raise SpecError(f"--cluster {self.address}: the scheduler has no workers")
        here = sources_digest()
        other = sorted(w for w, info in workers.items() if info["sources"] != here)
        if other:
            raise SpecError(f"--cluster {self.address}: worker {other[0]} runs other pipeproof "
                            f"sources than this one ({len(other)} of {len(workers)} workers; "
                            f"install the same version there)")
        self.name = f"Dask cluster {self.address} ({self.workers} workers)"
        return time.perf_counter() - started

    def run(self, tasks, done) -> None:
        import uuid
        from distributed import as_completed
        token = uuid.uuid4().hex[:12]
        # a few points per task: the scheduler's cost per task (about a millisecond, more on a
        # busy machine) is paid once per batch, while every worker still gets several batches
        size = max(1, min(16, len(tasks) // (max(self.workers, 1) * 8)))
        futures = []
        for start in range(0, len(tasks), size):
            batch = tasks[start:start + size]
            futures.append(self.client.submit(check_points, batch, self.options, pure=False,
                                              key=f"pipeproof-sweep-{token}-{start}"))
        try:
            for future in as_completed(futures, loop=self.client.loop):
                for index, record in future.result():
                    done(index, record)
        except KeyboardInterrupt:
            self.client.cancel(futures)
            raise

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def runner(options: dict, jobs: int | None = None, cluster: str | None = None):
    if cluster:
        return DaskCluster(options, cluster)
    jobs = jobs or os.cpu_count() or 1
    return InProcess(options) if jobs == 1 else LocalPool(options, jobs)
