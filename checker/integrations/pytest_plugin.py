"""`pytest --pipeproof`: check every warp-specialised or mbarrier Triton kernel the tests compile
or launch (docs/pytest.md). Registered through the `pytest11` entry point (pyproject.toml);
without --pipeproof it only adds its options and markers and imports nothing else.

- A violation fails the test that launched (or compiled, without a GPU) the kernel: verdict,
  shortest trace and the kernel's source lines in the failure report.
- The terminal summary lists each distinct check: verdict, states, seconds, cached or not;
  kernels it cannot read as `unreadable` with the reason (never ok).
- `--pipeproof-prove`: prove for every trip count instead; `--pipeproof-sarif FILE`: SARIF 2.1.0.
- `@pytest.mark.pipeproof_skip`: the test's kernels are not checked;
  `@pytest.mark.pipeproof(args={...})`: argument values for kernels compiled but not launched.
- Results are cached under pytest's cache (`.pytest_cache/d/pipeproof`), one file per check,
  written atomically (xdist workers share it); `--cache-clear` empties it.
"""
from __future__ import annotations

import pytest

SECTION = "pipeproof"

try:  # new-style hook wrappers (pluggy >= 1.2, pytest >= 8); the plugin needs them
    _call_wrapper = pytest.hookimpl(wrapper=True)
except TypeError:  # an older pytest: every other run must still work, --pipeproof says why not
    _call_wrapper = None


def pytest_addoption(parser):
    group = parser.getgroup("pipeproof", "pipeproof: check Triton kernels' synchronisation")
    group.addoption("--pipeproof", action="store_true", default=False,
                    help="Check every warp-specialised or mbarrier Triton kernel the tests "
                         "compile or launch; a violation fails the test.")
    group.addoption("--pipeproof-prove", action="store_true", default=False,
                    help="Prove each kernel for every trip count instead (implies --pipeproof).")
    group.addoption("--pipeproof-sarif", metavar="FILE", default=None,
                    help="Write the findings as SARIF 2.1.0 (implies --pipeproof).")
    group.addoption("--pipeproof-timeout", metavar="SECONDS", type=float, default=60.0,
                    help="Per distinct kernel check: past it the kernel is inconclusive "
                         "(default 60).")
    group.addoption("--pipeproof-strict-exit", action="store_true", default=False,
                    help="Kernels exiting with copies or commits in flight are inflight_at_exit.")


def pytest_configure(config):
    config.addinivalue_line("markers", "pipeproof_skip: pipeproof does not check the kernels "
                                       "this test compiles or launches")
    config.addinivalue_line("markers", "pipeproof(args=None): integer argument values for "
                                       "kernels the test compiles but does not launch")
    opt = config.getoption
    if opt("pipeproof") or opt("pipeproof_prove") or opt("pipeproof_sarif"):
        if _call_wrapper is None:
            raise pytest.UsageError("--pipeproof needs pytest >= 8 (new-style hook wrappers)")
        config.pluginmanager.register(PipeproofSession(config), "pipeproof-session")


class PipeproofSession:
    def __init__(self, config):
        self.config = config
        self.watcher = None
        self.missing = None  # why nothing can be checked (Triton not installed)
        self.worker_results = []

    # ------------------------------------------------------------------ session
    def pytest_sessionstart(self, session):
        try:
            import triton  # noqa: F401
        except ImportError:
            self.missing = "Triton is not installed (pip install 'pipeproof[triton]'): nothing checked"
            return
        from pipeproof.checker.integrations.triton_watch import Watcher
        cache = getattr(self.config, "cache", None)
        cache_dir = cache.mkdir("pipeproof") if cache is not None else None
        opt = self.config.getoption
        self.watcher = Watcher(prove=opt("pipeproof_prove"), cache_dir=cache_dir,
                               timeout=opt("pipeproof_timeout"),
                               strict_exit=opt("pipeproof_strict_exit")).install()

    def pytest_sessionfinish(self, session):
        if self.watcher is None:
            return
        self.watcher.check_pending()
        self.watcher.uninstall()
        worker = getattr(self.config, "workeroutput", None)
        if worker is not None:  # an xdist worker: the controller reports
            import json
            from dataclasses import asdict
            # as JSON text: execnet sends only plain builtins (a Verdict is a str subclass)
            worker["pipeproof"] = json.dumps([asdict(r) for r in self.watcher.results])
            return
        path = self.config.getoption("pipeproof_sarif")
        if path:
            from pipeproof.checker.results import sarif
            sarif.write(path, [f for r in self.all_results() for f in r.sarif()])

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        """xdist: gather each worker's results on the controller."""
        from pipeproof.checker.integrations.triton_watch import KernelResult
        import json
        for doc in json.loads(getattr(node, "workeroutput", {}).get("pipeproof", "[]")):
            self.worker_results.append(KernelResult(**doc))

    def all_results(self):
        seen, out = set(), []
        for r in (self.watcher.results if self.watcher else []) + self.worker_results:
            if r.key not in seen:
                seen.add(r.key)
                out.append(r)
        return out

    # ------------------------------------------------------------------ per test
    @(_call_wrapper or (lambda f: f))
    def pytest_runtest_call(self, item):
        w = self.watcher
        if w is None:
            return (yield)
        skip = item.get_closest_marker("pipeproof_skip") is not None
        mark = item.get_closest_marker("pipeproof")
        args = dict((mark.kwargs.get("args") if mark else None) or {})
        w.check_pending(args)  # (kernels compiled at collection or in fixtures)
        w.take()
        w.paused = skip
        try:
            res = yield
        except BaseException:
            # the test failed on its own: its report still shows what pipeproof found
            self._finish(item, w, skip, args, section=True)
            raise
        bad = self._finish(item, w, skip, args)
        if bad:
            pytest.fail("\n\n".join(r.describe() for r in bad), pytrace=False)
        return res

    @staticmethod
    def _finish(item, w, skip, args, section=False):
        if not skip:
            w.check_pending(args)
        w.paused = False
        bad = [r for r in w.take() if r.failed]
        if section and bad:
            item.add_report_section("call", "pipeproof", "\n\n".join(r.describe() for r in bad))
        return bad

    def pytest_report_header(self, config):
        mode = "prove for every trip count" if config.getoption("pipeproof_prove") else "verify"
        return f"pipeproof: checking Triton kernels ({mode})"

    def pytest_terminal_summary(self, terminalreporter):
        tr = terminalreporter
        if getattr(self.config, "workeroutput", None) is not None:
            return
        tr.section(SECTION)
        if self.missing:
            tr.line(self.missing)
            return
        results = self.all_results()
        if not results:
            tr.line("no warp-specialised or mbarrier kernel was compiled or launched")
            return
        for r in results:
            tr.line(r.summary(), red=r.failed, yellow=r.verdict in ("inconclusive", "unreadable"),
                    green=r.verdict in ("ok", "proved"))
        counts = {}
        for r in results:
            what = r.kind if r.failed else r.verdict
            counts[what] = counts.get(what, 0) + 1
        cached = sum(r.cached for r in results)
        tr.line(f"{len(results)} kernel checks: "
                + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
                + f" ({cached} from the cache)")
