"""Launch generated reference kernels on an NVIDIA GPU through CuPy: bounded, perturbed, logged.

The GPU work runs in a worker process (`python -m pipeproof.cuda_ref.run --worker`), never in the
process that asks for it: a kernel that traps (an mbarrier over-arrival, a tx-count out of
range) poisons its CUDA context, so the worker reports the run as `trap` and exits, and
`GpuSession` starts a fresh worker for the next run. Measured on the H200: an over-arrival
(`arrive.expect_tx` while pending is 0) raises no CUDA error; the faulting warp stops and
the kernel never finishes (its final `__syncthreads` waits for that warp). Every wait in the
kernel is bounded by the `%globaltimer` deadline, so a kernel still running `WATCHDOG_S`
(or 20 times its deadline, if longer) after launch is such a trap: the worker reports it with the events the host-mapped log
already holds (and the copy records, read on a non-blocking stream) and exits. A worker that
says nothing in time is killed and its run is reported as a `trap` too, with the reason.

Perturbation: run k with seed S draws, from numpy's generator seeded with (S, k), a
per-agent xorshift seed and a per-agent delay bound (0, D/4, D or 4D ns, D = `delay_ns`);
before each op the agent sleeps (`nanosleep`) for a random time below its bound, one op in
four. Run 0 of a batch runs at full speed (no delays), so every batch has one unperturbed run.

Replay (`schedule`, cuda_ref/replay.py): the kernel is generated with `replay=True`, and the
schedule's table, the step counter (with each agent's count of finished async reads) and the
copy records' replay words are three more kernel arguments. The log gets a `replay` entry:
the trace, its kind, the schedule's steps and `reached`, the step counter at the end (None
when the kernel trapped and the counter could not be read).

Event buffer: pinned host memory mapped into the GPU when CuPy allows it (then a run that
traps still has the events written before the trap), else device memory.

`cupy` is imported lazily, only in the worker.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref import log as L

DEFAULT_TIMEOUT_MS = 20.0
DEFAULT_DELAY_NS = 2000
WATCHDOG_S = 1.0           # a kernel still running this long after launch (and 20 times its
                           # deadline): the worker exits
PREPARE_WATCHDOG_S = 120.0  # generation + NVRTC compile + the first launch


class GpuUnavailable(Exception):
    """No CuPy, or no usable NVIDIA GPU: str() is one line saying which."""


class LaunchFailed(Exception):
    """The launch itself failed (a launch parameter or resource the device refuses): the spec
    was not run; no kernel ran, so nothing trapped."""


def cupy_missing_reason() -> str | None:
    import importlib.util
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed (the GPU reference kernels need CuPy and an NVIDIA GPU)"
    return None


# ====================================================================== in the worker


@dataclass
class Prepared:
    gen: G.Generated
    kernel: object
    bufs: dict
    host_events: object      # numpy view of the event buffer (host-mapped), or None
    ev_ptr: int              # device-visible address of the event buffer
    mapped: bool
    schedule: dict | None = None  # a replay's {"buffer": [...], "meta": {...}}


class Runner:
    """Owns the CUDA context of a worker process."""

    def __init__(self):
        try:
            import cupy as cp
        except Exception as err:  # pragma: no cover - depends on the machine
            raise GpuUnavailable(f"CuPy cannot be imported ({type(err).__name__}: {err})")
        try:
            n = cp.cuda.runtime.getDeviceCount()
        except Exception as err:  # pragma: no cover
            raise GpuUnavailable(f"no usable CUDA device ({type(err).__name__}: {err})")
        if n < 1:  # pragma: no cover
            raise GpuUnavailable("no CUDA device")
        props = cp.cuda.runtime.getDeviceProperties(0)
        self.cp = cp
        name = props["name"]
        self.device = (name.decode() if isinstance(name, bytes) else str(name)) + \
            f" (sm_{props['major']}{props['minor']})"
        if props["major"] < 9:
            raise GpuUnavailable(f"{self.device}: the reference kernels need sm_90 (Hopper) or "
                                 f"newer for mbarrier tx-counts and cp.async.bulk")

    def prepare(self, spec_path: str, schedule: dict | None = None) -> Prepared:
        import numpy as np
        from pipeproof.spec.load import load_spec

        cp = self.cp
        gen = G.generate(load_spec(spec_path), replay=schedule is not None)
        try:
            mod = cp.RawModule(code=gen.source, options=("-std=c++17",))
            kernel = mod.get_function(gen.kernel_name)
        except Exception as err:
            msg = " ".join(str(err).split())[:600]
            raise G.GenerationError(f"{spec_path}: cuda_ref: NVRTC could not build the kernel: {msg}")
        # Opt in to the dynamic shared memory the slots need: without it a launch gets 48 KiB in
        # all, static included, so 48 KiB of slots beside the kernel's own shared data failed
        # every launch with CUDA_ERROR_INVALID_VALUE (issue 17). The device's opt-in limit
        # counts the static part too.
        static = int(kernel.shared_size_bytes)
        limit = int(cp.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"])
        if static + gen.smem_bytes > limit:
            raise G.GenerationError(f"{spec_path}: cuda_ref: the kernel needs {gen.smem_bytes} B of "
                                    f"dynamic and {static} B of static shared memory, more than "
                                    f"the {limit} B a block can have on this device")
        if gen.smem_bytes:
            kernel.max_dynamic_shared_size_bytes = gen.smem_bytes
        n_agents = len(gen.agents)
        bufs = {
            "ctl": cp.zeros(G.CTL_WORDS + G.CTL_PER_CTA * gen.ctas, dtype=cp.uint32),
            "rec": cp.zeros(gen.max_records * G.REC_W, dtype=cp.uint64),
            "status": cp.zeros(n_agents, dtype=cp.int32),
            "seeds": cp.zeros(n_agents, dtype=cp.uint32),
            "delays": cp.zeros(n_agents, dtype=cp.uint32),
        }
        if schedule is not None:
            bufs["sch"] = cp.asarray(np.array(schedule["buffer"], dtype=np.int32))
            bufs["rs"] = cp.zeros(1 + 2 * n_agents, dtype=cp.uint32)  # counter, reads, commits
            bufs["recx"] = cp.zeros(gen.max_records * 3, dtype=cp.uint64)
        src = np.zeros(gen.src_words, dtype=np.int32)
        for start, words, tags, first in gen.src_fill:
            for i in range(tags):
                src[start + i * words:start + (i + 1) * words] = first + i
        bufs["src"] = cp.asarray(src)
        n_ev = gen.max_events * G.EV_W
        host, ptr, mapped = None, 0, False
        try:
            mem = cp.cuda.PinnedMemory(n_ev * 4, 0)  # cudaHostAlloc: UVA makes it device-visible
            host = np.frombuffer(cp.cuda.PinnedMemoryPointer(mem, 0), dtype=np.int32, count=n_ev)
            bufs["pinned"] = mem
            ptr, mapped = int(mem.ptr), True
        except Exception:
            bufs["ev"] = cp.zeros(n_ev, dtype=cp.int32)
            ptr = int(bufs["ev"].data.ptr)
        return Prepared(gen, kernel, bufs, host, ptr, mapped, schedule)

    def run(self, prep: Prepared, spec_path: str, run: int, seed: int, timeout_ns: int,
            delay_ns: int, command: str) -> tuple[L.RunReport, bool]:
        """One launch; returns (report, context_still_usable)."""
        import numpy as np

        cp = self.cp
        gen, b = prep.gen, prep.bufs
        n_agents = len(gen.agents)
        rng = np.random.default_rng([seed, run])
        seeds = rng.integers(1, 2**32 - 1, size=n_agents, dtype=np.uint64).astype(np.uint32)
        if run == 0 or delay_ns <= 0:
            delays = np.zeros(n_agents, dtype=np.uint32)
        else:
            choices = np.array([0, delay_ns // 4, delay_ns, 4 * delay_ns], dtype=np.uint32)
            delays = choices[rng.integers(0, len(choices), size=n_agents)]
        for key in ("ctl", "rec", "status", "rs", "recx"):
            if key in b:
                b[key].fill(0)
        b["seeds"].set(seeds)
        b["delays"].set(delays)
        if prep.mapped:
            prep.host_events[:] = 0
        else:
            b["ev"].fill(0)
        cp.cuda.Device().synchronize()
        trapped, detail, reached = False, "", None
        t_start = time.monotonic()
        args = (np.uint64(prep.ev_ptr), b["ctl"], b["rec"], b["src"], b["status"],
                b["seeds"], b["delays"], np.uint64(timeout_ns),
                np.uint32(gen.max_events), np.uint32(gen.max_records))
        if gen.replay:
            args += (b["sch"], b["rs"], b["recx"])
        try:  # an error of the launch itself (resources, shared memory) is no trap: not run
            prep.kernel((gen.ctas, 1, 1), (gen.threads, 1, 1), args, shared_mem=gen.smem_bytes)
        except Exception as err:
            raise LaunchFailed(f"{spec_path}: cuda_ref: the kernel could not be launched "
                               f"({gen.ctas} CTA(s) x {gen.threads} threads, {gen.smem_bytes} B of "
                               f"dynamic shared memory): {' '.join(str(err).split())[:300]}") from None
        try:
            done = cp.cuda.Event()
            done.record()
            while not done.done:
                if time.monotonic() - t_start > max(WATCHDOG_S, 20 * timeout_ns / 1e9):
                    self._hung(prep, spec_path, run, seed, command, time.monotonic() - t_start)
                time.sleep(0.0002)
            done.synchronize()
        except cp.cuda.runtime.CUDARuntimeError as err:
            trapped, detail = True, f"the kernel trapped: {err}"
        except Exception as err:  # a driver error surfacing elsewhere is a trap as well
            trapped, detail = True, f"the kernel failed: {type(err).__name__}: {err}"
        if trapped:
            ev_words = prep.host_events.copy() if prep.mapped else np.zeros(0, dtype=np.int32)
            rec_words, n_rec, status = np.zeros(0, dtype=np.uint64), 0, None
            if not prep.mapped:
                detail += " (event buffer in device memory: no events survive a trap)"
        else:
            ev_words = prep.host_events.copy() if prep.mapped else b["ev"].get()
            ctl = b["ctl"].get()
            if gen.replay:
                reached = int(b["rs"].get()[0])
            n_rec = min(int(ctl[G.CTL_REC]), gen.max_records)
            rec_words = b["rec"].get()
            status = b["status"].get().tolist()
            notes = []
            if ctl[G.CTL_FLAGS] & G.FLAG_EV_OVERFLOW:
                notes.append("event buffer overflowed (events lost)")
            if ctl[G.CTL_FLAGS] & G.FLAG_REC_OVERFLOW:
                notes.append("copy records overflowed")
            if ctl[G.CTL_FLAGS] & G.FLAG_SCHED:
                notes.append("the kernel's program and the replay schedule disagree")
            if ctl[G.CTL_FLAGS] & G.FLAG_LOCK_BROKEN:
                # a warp stopped inside a logged step and never came back: a trap that the
                # driver did not report (the log ends at that step)
                trapped = True
                notes.append("a warp stopped inside a logged step (log lock abandoned; no CUDA "
                             "error was reported)")
            detail = "; ".join(notes)
        events = L.decode_events(gen, ev_words, rec_words, n_rec)
        outcome, kinds, stuck, mismatches = L.classify(
            gen, events, trapped, status, detail,
            replay=prep.schedule["meta"] if prep.schedule is not None else None)
        log = L.make_log(spec_path, self.device, command, seed, run, outcome, events)
        if prep.schedule is not None:
            log["replay"] = dict(prep.schedule["meta"], reached=reached)
        return L.RunReport(log, kinds, stuck, mismatches, detail), not trapped


    def _hung(self, prep, spec_path, run, seed, command, waited):
        """The kernel never finished (a warp stopped: an over-arrival does this on the H200 we
        measured, instead of a CUDA error). Report a trap with the events the host-mapped
        buffer already holds, then leave: the context cannot be used again."""
        import numpy as np

        detail = (f"the kernel did not finish within {waited:.1f} s (a warp stopped: no "
                  f"CUDA error was reported; treated as a trap)")
        ev_words = prep.host_events.copy() if prep.mapped else np.zeros(0, dtype=np.int32)
        rec_words, n_rec = self._records_beside(prep)
        events = L.decode_events(prep.gen, ev_words, rec_words, n_rec)
        outcome, kinds, stuck, mismatches = L.classify(
            prep.gen, events, True, None, detail,
            replay=prep.schedule["meta"] if prep.schedule is not None else None)
        log = L.make_log(spec_path, self.device, command, seed, run, outcome, events)
        if prep.schedule is not None:
            log["replay"] = dict(prep.schedule["meta"], reached=None)
        _emit({"type": "run", "run": run, "log": log, "kinds": kinds, "stuck": stuck,
               "mismatches": mismatches, "detail": detail, "mapped": prep.mapped})
        _emit({"type": "dead"})
        os._exit(3)


    def _records_beside(self, prep):
        """The copy records of a kernel that is still running (hung): copied on a non-blocking
        stream, which does not wait for the kernel; (records, count) or (empty, 0)."""
        import numpy as np

        cp = self.cp
        try:
            rec, ctl = prep.bufs["rec"], prep.bufs["ctl"]
            stream = cp.cuda.Stream(non_blocking=True)
            pin_rec = cp.cuda.alloc_pinned_memory(rec.nbytes)
            pin_ctl = cp.cuda.alloc_pinned_memory(ctl.nbytes)
            kind = cp.cuda.runtime.memcpyDeviceToHost
            cp.cuda.runtime.memcpyAsync(pin_rec.ptr, rec.data.ptr, rec.nbytes, kind, stream.ptr)
            cp.cuda.runtime.memcpyAsync(pin_ctl.ptr, ctl.data.ptr, ctl.nbytes, kind, stream.ptr)
            done = cp.cuda.Event()
            done.record(stream)
            t0 = time.monotonic()
            while not done.done:
                if time.monotonic() - t0 > 1.0:
                    return np.zeros(0, dtype=np.uint64), 0
                time.sleep(0.001)
            recs = np.frombuffer(pin_rec, dtype=np.uint64, count=rec.size).copy()
            ctls = np.frombuffer(pin_ctl, dtype=np.uint32, count=ctl.size).copy()
            return recs, min(int(ctls[G.CTL_REC]), prep.gen.max_records)
        except Exception:
            return np.zeros(0, dtype=np.uint64), 0


def _emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker_main() -> int:
    """Serve jobs from stdin, one JSON line each; answer on stdout, one JSON line per event."""
    try:
        runner = Runner()
    except GpuUnavailable as err:
        _emit({"type": "unavailable", "reason": str(err)})
        return 0
    _emit({"type": "hello", "device": runner.device})
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            prep = runner.prepare(job["spec"], job.get("schedule"))
        except G.GenerationError as err:
            _emit({"type": "refused", "reason": str(err)})
            continue
        except Exception as err:
            _emit({"type": "refused", "reason": f"{job['spec']}: cuda_ref: {type(err).__name__}: {err}"})
            continue
        _emit({"type": "prepared", "mapped": prep.mapped, "smem": prep.gen.smem_bytes,
               "ctas": prep.gen.ctas, "threads": prep.gen.threads})
        for k in job["runs"]:
            try:
                rep, usable = runner.run(prep, job["spec"], k, job["seed"], job["timeout_ns"],
                                         job["delay_ns"], job["command"])
            except LaunchFailed as err:  # ends the job: the caller reports the spec not run
                _emit({"type": "not_run", "reason": str(err)})
                break
            _emit({"type": "run", "run": k, "log": rep.log, "kinds": rep.kinds,
                   "stuck": rep.stuck, "mismatches": rep.mismatches, "detail": rep.detail,
                   "mapped": prep.mapped})
            if not usable:
                _emit({"type": "dead"})
                return 0
        else:  # (after not_run the job has ended already)
            _emit({"type": "end"})
    return 0


# ====================================================================== in the caller


@dataclass
class SpecRuns:
    spec: str
    device: str = ""
    reports: list = field(default_factory=list)   # L.RunReport, by run
    refused: str = ""                              # why the spec could not run on the GPU

    def counts(self) -> dict:
        out = {}
        for r in self.reports:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out


class GpuSession:
    """Runs specs in worker processes; restarts a worker after a trap or a hang."""

    def __init__(self, timeout_ms: float = DEFAULT_TIMEOUT_MS, delay_ns: int = DEFAULT_DELAY_NS,
                 command: str = "", echo=None):
        reason = cupy_missing_reason()
        if reason:
            raise GpuUnavailable(reason)
        self.timeout_ns = int(timeout_ms * 1e6)
        self.delay_ns = int(delay_ns)
        self.command = command
        self.echo = echo or (lambda msg: None)
        self.proc = None
        self.lines = None
        self.device = ""
        self.restarts = 0
        self._start()

    # ---------------------------------------------------------------- the worker

    def _start(self):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen([sys.executable, "-m", "pipeproof.cuda_ref.run", "--worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = queue.Queue()
        self.err_tail = []
        proc, lines, tail = self.proc, self.lines, self.err_tail

        def pump_out():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        def pump_err():
            for line in proc.stderr:
                tail.append(line.rstrip())
                del tail[:-20]

        threading.Thread(target=pump_out, daemon=True).start()
        threading.Thread(target=pump_err, daemon=True).start()
        hello = self._next(PREPARE_WATCHDOG_S)
        if hello is None:
            raise GpuUnavailable("the GPU worker exited before it started: "
                                 + (self.err_tail[-1] if self.err_tail else "no message"))
        if hello.get("type") == "unavailable":
            self._stop()
            raise GpuUnavailable(hello["reason"])
        self.device = hello.get("device", "")

    def _next(self, timeout: float):
        """The worker's next message, None when it exited, 'timeout' when it said nothing."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return "timeout"
        if line is None:
            return None
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return self._next(timeout)

    def _stop(self):
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except Exception:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def _kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self):
        self._stop()

    # ---------------------------------------------------------------- running specs

    def run_spec(self, spec_path: str, runs: int, seed: int = 0, schedule=None) -> SpecRuns:
        """`runs` launches of the spec's kernel; with `schedule` (a cuda_ref.replay.Schedule)
        the replay kernel under that schedule."""
        from pipeproof.spec.load import load_spec

        out = SpecRuns(spec_path)
        sched = None if schedule is None else {"buffer": schedule.buffer(), "meta": schedule.meta()}
        try:  # refuse what cannot be generated before bothering the GPU
            G.generate(load_spec(spec_path), replay=sched is not None)
        except G.GenerationError as err:
            out.refused = str(err)
            return out
        pending = list(range(runs))
        while pending:
            if self.proc is None:
                self.restarts += 1
                self._start()
            out.device = self.device
            job = {"type": "job", "spec": spec_path, "runs": pending, "seed": seed,
                   "timeout_ns": self.timeout_ns, "delay_ns": self.delay_ns,
                   "command": self.command, "schedule": sched}
            try:
                self.proc.stdin.write(json.dumps(job) + "\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._kill()
                continue
            first = self._next(PREPARE_WATCHDOG_S)
            if first in (None, "timeout") or first.get("type") not in ("prepared", "refused"):
                self._kill()
                out.refused = (f"{spec_path}: cuda_ref: the GPU worker failed while preparing "
                               f"the kernel: " + (self.err_tail[-1] if self.err_tail else str(first)))
                return out
            if first["type"] == "refused":
                out.refused = first["reason"]
                return out
            while True:  # until the worker ends this job (or dies)
                msg = self._next(WATCHDOG_S + self.timeout_ns / 1e9 + 10)
                if msg in (None, "timeout") or msg.get("type") == "hang":
                    if pending:
                        k = pending.pop(0)
                        why = ("the GPU worker died (no answer)" if msg is None else
                               "no answer in time (watchdog)" if msg == "timeout" else msg["detail"])
                        if msg is None and self.err_tail:
                            why += ": " + self.err_tail[-1]
                        out.reports.append(self._trap_report(spec_path, k, seed, why, sched))
                    self._kill()
                    break
                if msg["type"] == "run":
                    if msg["run"] in pending:
                        pending.remove(msg["run"])
                    out.reports.append(L.RunReport(msg["log"], msg["kinds"], msg["stuck"],
                                                   msg["mismatches"], msg["detail"]))
                    self.echo(f"  run {msg['run']}: {msg['log']['outcome']}")
                elif msg["type"] == "not_run":
                    out.refused, out.reports = msg["reason"], []
                    return out
                elif msg["type"] == "dead":
                    self._stop()
                    break
                elif msg["type"] == "end":
                    break
        out.reports.sort(key=lambda r: r.log["run"])
        return out

    def _trap_report(self, spec_path, run, seed, why, sched=None) -> L.RunReport:
        log = L.make_log(spec_path, self.device, self.command, seed, run, "trap", [])
        if sched is not None:
            log["replay"] = dict(sched["meta"], reached=None)
        return L.RunReport(log, ["trap"], [], [], why)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        sys.exit(worker_main())
    print("usage: python -m pipeproof.cuda_ref.run --worker   (started by pipeproof gpu/crosscheck)",
          file=sys.stderr)
    sys.exit(2)
