"""Check every Triton kernel a program compiles or launches (`pipeproof.triton.watch()`, and the
pytest plugin, checker/integrations/pytest_plugin.py; docs/pytest.md).

Hooks. `triton.knobs.runtime.jit_post_compile_hook` hears of each kernel a `@triton.jit`
function compiles (the `CompiledKernel` is in the function's cache under the hook's key);
`triton.compile` is wrapped too, for kernels compiled directly (on a machine without a GPU,
`triton.compile(ASTSource(...), target=GPUTarget("cuda", 100, 32))` is how tests get TTGIR).
A kernel whose TTGIR has `ttg.warp_specialize` or `ttng.init_barrier` (mbarrier rings) is
kept; the others are not pipeline protocols and are left alone.

Trip counts come from the call: the watcher sets the jit function's `launch_metadata` (keeping
a user's own, e.g. Proton's) and adds a `launch_enter_hook` that evaluates it, so each launch
hands over its real arguments; the kernel is checked with their integer values. A kernel that
is compiled but never launched (no GPU) is checked when the test (or the `with` block) ends,
with the values given to `watch(args=...)` / `@pytest.mark.pipeproof(args=...)`; a loop bound
still unknown makes it `unreadable`, with the front end's one-line reason, never `ok`.

Each distinct (TTGIR, argument values the TTGIR takes, mode) is checked once per process and
its result stored in `cache_dir` (one JSON file per key, written atomically: xdist workers
share the folder safely); the key includes a hash of pipeproof's own sources, so a new
pipeproof re-checks. Inconclusive results are not stored (a larger limit may settle them).
"""
from __future__ import annotations

import hashlib
import json
import linecache
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pipeproof.spec.vocabulary import Verdict

TRIGGERS = ("ttg.warp_specialize", "ttng.init_barrier")
CACHE_VERSION = 1


@dataclass
class KernelResult:
    """One distinct check. verdict: ok, proved, violation, inconclusive or unreadable."""
    name: str
    where: str                 # the kernel's definition, file:line
    key: str
    verdict: str
    kind: str | None = None
    states: int = 0
    seconds: float = 0.0
    cached: bool = False
    args: dict = field(default_factory=dict)
    reason: str = ""           # unreadable / inconclusive: why, in one line
    report: str = ""           # the checker's text report (verdict and shortest trace)
    lines: list = field(default_factory=list)  # source_lines(): step, partition, op, line
    target: str = ""           # sm90 / sm100 ...
    constexprs: str = ""       # the specialisation: "STAGES=3, BUG=0"

    @property
    def failed(self) -> bool:
        return self.verdict == "violation"

    def summary(self) -> str:
        what = self.kind if self.verdict == "violation" else self.verdict
        args = ", ".join(f"{k}={v}" for k, v in sorted(self.args.items()))
        spec = f"[{self.constexprs}]" if self.constexprs else ""
        head = f"{what:<22} {self.name}{spec}({args})" + (f" [{self.target}]" if self.target else "")
        if self.verdict == "unreadable":
            return f"{head}: {self.reason}"
        tail = f"{self.states} states, {self.seconds:.2f} s" + (", cached" if self.cached else "")
        if self.verdict == "inconclusive":
            tail += f": {self.reason}"
        return f"{head}  {tail}"

    def describe(self) -> str:
        """Verdict, shortest trace and the kernel's source lines (a failure report)."""
        out = [f"pipeproof: kernel {self.name} ({self.where}) with "
               f"{', '.join(f'{k}={v}' for k, v in sorted(self.args.items())) or 'no arguments'}: "
               f"{self.kind or self.verdict}", "", self.report.rstrip()]
        if self.lines:
            out += ["", "in the kernel:"]
            for s in self.lines:
                file, _, num = s["line"].rpartition(":")
                code = linecache.getline(file, int(num)).strip() if num.isdigit() else ""
                end = "  (where it stands at the end)" if s["step"] == "end" else ""
                out.append(f"  step {s['step']:>3}  {s['partition']:<12} {s['op']:<28} "
                           f"{s['line']}{end}")
                if code:
                    out.append(f"           {code}")
        return "\n".join(out)

    def sarif(self) -> list[dict]:
        from pipeproof.checker.results import sarif
        file = self.where.rpartition(":")[0] or self.where
        if self.verdict == "violation":
            return sarif.from_kernel(self.kind, "error", f"{self.kind} in kernel {self.name} "
                                     f"({_argtext(self.args)}): shortest counterexample below",
                                     self.lines, self.where)
        if self.verdict in ("inconclusive", "unreadable"):
            return sarif.from_kernel(self.verdict, "warning",
                                     f"kernel {self.name}: {self.verdict}: {self.reason}", [],
                                     self.where or file)
        return []


def _argtext(args):
    return ", ".join(f"{k}={v}" for k, v in sorted(args.items())) or "no arguments"


class PipeproofViolation(AssertionError):
    """Raised by `watch(raise_on_violation=True)` when its block ends."""

    def __init__(self, results):
        self.results = results
        super().__init__("\n\n".join(r.describe() for r in results))


_CODE_HASH = None


def code_hash() -> str:
    """A hash of pipeproof's sources (checker/, spec/, backends/): a new pipeproof re-checks."""
    global _CODE_HASH
    if _CODE_HASH is None:
        root = Path(__file__).resolve().parents[2]  # the folder holding checker/, spec/, backends/
        h = hashlib.sha256()
        for folder in ("checker", "spec", "backends"):
            for path in sorted((root / folder).rglob("*.py")):
                if path.name not in ("pytest_plugin.py", "triton_watch.py", "sarif.py"):
                    h.update(path.read_bytes())
        _CODE_HASH = h.hexdigest()[:16]
    return _CODE_HASH


def relevant(ttgir: str) -> bool:
    return any(t in ttgir for t in TRIGGERS)


def _int_args(args: dict) -> dict:
    out = {}
    for k, v in (args or {}).items():
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, int):
            out[k] = v
        elif type(v).__name__ == "constexpr" and isinstance(getattr(v, "value", None), int):
            out[k] = int(v.value)
    return out


def _constexprs(src) -> str:
    """The constexpr values a kernel was compiled with, by parameter name."""
    fn = getattr(src, "fn", None)
    names = list(getattr(fn, "arg_names", []) or [])
    sig = getattr(src, "signature", {}) or {}
    out = []
    for key, val in sorted((getattr(src, "constants", {}) or {}).items(), key=lambda kv: str(kv[0])):
        if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], int) and key[0] < len(names):
            name = names[key[0]]
            if sig.get(name) == "constexpr" and isinstance(val, (int, float, str, bool)):
                out.append(f"{name}={val}")
    return ", ".join(out)


def _source_of(compiled):
    """(name, 'file:line' of its def, target) of a CompiledKernel."""
    src = getattr(compiled, "src", None)
    fn = getattr(src, "fn", None)
    py = getattr(fn, "fn", fn)
    code = getattr(py, "__code__", None)
    name = getattr(py, "__name__", None) or getattr(compiled, "name", "kernel")
    where = f"{code.co_filename}:{code.co_firstlineno}" if code else name
    target = getattr(getattr(compiled, "metadata", None), "target", None)
    arch = getattr(target, "arch", None)
    return name, where, (f"sm{arch}" if isinstance(arch, int) else "")


class Watcher:
    """Collects the kernels compiled and launched while installed and checks them."""

    def __init__(self, prove: bool = False, cache_dir=None, args: dict | None = None,
                 timeout: float | None = 60.0, max_states: int | None = None,
                 strict_exit: bool = False, raise_on_violation: bool = False):
        self.prove = prove
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.args = dict(args or {})
        self.timeout = timeout
        self.max_states = max_states
        self.strict_exit = strict_exit
        self.raise_on_violation = raise_on_violation
        self.results: list[KernelResult] = []   # distinct checks, in the order done
        self._by_key: dict = {}
        self._kernels: dict = {}    # ttgir sha -> (ttgir, name, where, target)
        self._pending: dict = {}    # ttgir sha -> compiled but not launched since
        self._seen_since: list = []  # results hit since the last take() (test attribution)
        self.paused = False
        self._installed = None

    # ------------------------------------------------------------------ hooks
    def install(self):
        import triton
        import triton.compiler as tc
        import triton.compiler.compiler as tcc
        from triton import knobs
        state = {"post": knobs.runtime.jit_post_compile_hook,
                 "compile": (triton.compile, tc.compile, tcc.compile), "fns": []}
        prev_post = state["post"]
        original = tcc.compile

        def post_compile(*, key, repr, fn, compile, is_manual_warmup, already_compiled):
            try:
                cache = fn.jit_function.device_caches[compile["device"]][0]
                kernel = cache.get(key)
                if kernel is not None and hasattr(kernel, "asm"):
                    self.saw_compiled(kernel)
            finally:
                if prev_post is not None:
                    return prev_post(key=key, repr=repr, fn=fn, compile=compile,
                                     is_manual_warmup=is_manual_warmup,
                                     already_compiled=already_compiled)
            return None

        def compile_wrapper(*a, **kw):
            kernel = original(*a, **kw)
            try:
                self.saw_compiled(kernel)
            except Exception:  # never break the user's compile
                pass
            return kernel

        knobs.runtime.jit_post_compile_hook = post_compile
        knobs.runtime.launch_enter_hook.add(self._launch_enter)
        triton.compile = tc.compile = tcc.compile = compile_wrapper
        self._installed = state
        return self

    def uninstall(self):
        if not self._installed:
            return
        import triton
        import triton.compiler as tc
        import triton.compiler.compiler as tcc
        from triton import knobs
        st = self._installed
        knobs.runtime.jit_post_compile_hook = st["post"]
        knobs.runtime.launch_enter_hook.remove(self._launch_enter)
        triton.compile, tc.compile, tcc.compile = st["compile"]
        for jitfn, orig in st["fns"]:
            jitfn.launch_metadata = orig
        self._installed = None

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        try:
            self.check_pending()
        finally:
            self.uninstall()
        bad = [r for r in self.results if r.failed]
        if self.raise_on_violation and bad and exc[0] is None:
            raise PipeproofViolation(bad)
        return False

    @staticmethod
    def _launch_enter(metadata):
        data = getattr(metadata, "get", None)
        if data is not None:
            data()  # evaluates launch_metadata: ours records the arguments

    def saw_compiled(self, kernel):
        if self.paused:
            return
        ttgir = kernel.asm.get("ttgir") if hasattr(kernel.asm, "get") else None
        if not ttgir or not relevant(ttgir):
            return
        sha = hashlib.sha256(ttgir.encode()).hexdigest()
        name, where, target = _source_of(kernel)
        try:
            cx = _constexprs(getattr(kernel, "src", None))
        except Exception:
            cx = ""
        self._kernels[sha] = (ttgir, name, where, target, cx)
        self._pending[sha] = True
        jitfn = getattr(getattr(kernel, "src", None), "fn", None)
        if jitfn is not None and self._installed is not None and \
                not getattr(getattr(jitfn, "launch_metadata", None), "_pipeproof", False):
            orig = getattr(jitfn, "launch_metadata", None)
            watcher = self

            def launch_metadata(grid, metadata, args):
                got = orig(grid, metadata, args) if orig is not None else {}
                try:
                    watcher.saw_launch(metadata, args)
                except Exception as err:  # never break the launch
                    watcher._note_error(err)
                return got or {}
            launch_metadata._pipeproof = True
            try:
                jitfn.launch_metadata = launch_metadata
                self._installed["fns"].append((jitfn, orig))
            except AttributeError:
                pass
        kernel._pipeproof_sha = sha  # (a launch finds its TTGIR through the kernel's hash)
        self._hashes = getattr(self, "_hashes", {})
        h = getattr(getattr(kernel, "metadata", None), "hash", None)
        if h:
            self._hashes[h] = sha

    def _note_error(self, err):
        self.errors = getattr(self, "errors", []) + [f"{type(err).__name__}: {err}"]

    def saw_launch(self, metadata, args):
        if self.paused:
            return
        h = getattr(metadata, "hash", None)
        sha = getattr(self, "_hashes", {}).get(h)
        if sha is None:
            return
        self._pending.pop(sha, None)
        self.check_sha(sha, _int_args(args))

    def check_pending(self, args: dict | None = None):
        """Check the kernels compiled but not launched since, with `args` (else watch's)."""
        for sha in list(self._pending):
            self._pending.pop(sha, None)
            self.check_sha(sha, dict(self.args if args is None else args))

    def take(self) -> list[KernelResult]:
        """The results hit since the last take() (a test's own)."""
        got, self._seen_since = self._seen_since, []
        return got

    # ------------------------------------------------------------------ checking
    def check_sha(self, sha: str, args: dict) -> KernelResult:
        ttgir, name, where, target, cx = self._kernels[sha]
        from pipeproof.checker.frontends import KernelIR, reader
        funcs = reader("triton").functions(KernelIR(ttgir, f"{name}.ttgir"))  # None: unreadable
        params = {p for names in (funcs or {}).values() for p in names}
        used = {k: v for k, v in args.items() if k in params}
        mode = ["prove" if self.prove else "verify", self.strict_exit, self.max_states]
        key = hashlib.sha256(json.dumps([CACHE_VERSION, code_hash(), sha, sorted(used.items()),
                                         mode]).encode()).hexdigest()[:32]
        result = self._by_key.get(key)
        if result is None:
            result = self._load(key)
            if result is None:
                result = self._check(ttgir, funcs, name, where, used, key)
                result.target, result.constexprs = target, cx
                self._store(result)
            self._by_key[key] = result
            self.results.append(result)
        self._seen_since.append(result)
        return result

    def _load(self, key):
        if self.cache_dir is None:
            return None
        try:
            doc = json.loads((self.cache_dir / f"{key}.json").read_text())
            return KernelResult(**dict(doc, cached=True))
        except (OSError, ValueError, TypeError):
            return None

    def _store(self, result):
        if self.cache_dir is None or result.verdict == "inconclusive":
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        path = self.cache_dir / f"{result.key}.json"
        tmp = self.cache_dir / f".{result.key}.{os.getpid()}.{time.monotonic_ns()}.tmp"
        tmp.write_text(json.dumps(asdict(result)))
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one

    def _check(self, ttgir, funcs, name, where, args, key) -> KernelResult:
        """Read through the front-end driver (checker/frontends/): verify at this launch's
        trip count, then (prove) every item count of the extracted program."""
        from pipeproof.checker.frontends import KernelIR, ReadOptions, extract, reader, source_lines
        from pipeproof.spec.schema import SpecError
        t0 = time.perf_counter()
        base = dict(name=name, where=where, key=key, args=args)
        func = name if funcs is not None and name in funcs else None
        try:
            extracted = extract(reader("triton"), KernelIR(ttgir, f"{name}.ttgir"),
                                ReadOptions(function=func, args=args), name)
            spec, source = extracted.spec, extracted.source
        except SpecError as err:
            reason = " ".join(str(err).split()).replace(
                "give kernel arguments with --arg NAME=VALUE (or --trip-count N for loop bounds)",
                "launch the kernel, or give its values: @pytest.mark.pipeproof(args={...}) or "
                "pipeproof.triton.watch(args={...})")
            return KernelResult(verdict="unreadable", reason=reason,
                                seconds=time.perf_counter() - t0, **base)
        from pipeproof.checker.results import format_text
        from pipeproof.checker.engines import verify
        deadline = None if self.timeout is None else t0 + self.timeout
        result = verify(spec, max_states=self.max_states, timeout=self.timeout,
                        strict_exit=self.strict_exit)
        verdict, report, states = result.verdict, format_text(result), result.states
        reason = result.limit if verdict == "inconclusive" else ""
        if self.prove and verdict == "ok":
            # The launch's own trip count holds; now every item count of the extracted
            # program. A violation at another item count is not one of this launch (the
            # extraction ran the IR's arithmetic for the launch's values): inconclusive, with
            # the item count, never a failed test and never ok.
            from pipeproof.checker.engines import MAX_ABSTRACT_STATES, prove
            from pipeproof.checker.cli import proof_text
            left = None if deadline is None else max(deadline - time.perf_counter(), 0.1)
            proof = prove(spec, timeout=left, max_states=self.max_states or MAX_ABSTRACT_STATES)
            report = proof_text(proof)
            states = proof.abstract_states
            if proof.verdict is Verdict.OK:
                verdict = "proved"
            else:
                verdict = "inconclusive"
                reason = (f"ok at this launch's trip count ({result.states} states); prove: "
                          + (f"the extracted program is violated at item count n = {proof.items}"
                             f" ({proof.result.kind if proof.result else '?'}), a trip count "
                             f"this launch does not run" if proof.verdict is Verdict.VIOLATION
                             else f"unknown: {' '.join(str(proof.reason).split())}"))
                if proof.verdict is Verdict.VIOLATION and proof.result is not None:
                    report += "\n" + format_text(proof.result)
        lines = _relocated(source_lines(result, source), where) if result is not None else []
        return KernelResult(verdict=verdict, kind=result.kind if verdict == "violation" else None,
                            states=states, seconds=time.perf_counter() - t0, reason=reason,
                            report=report, lines=lines, **base)


def _relocated(lines: list, where: str) -> list:
    """Triton's compile cache hands back the IR of an identical kernel file compiled elsewhere
    (its key is the source, not the path), and that IR's locations name the other copy, which
    may be gone: lines in a file of the launched kernel's name are its own file's lines."""
    own = where.rpartition(":")[0]
    out = []
    for s in lines:
        path, _, num = s["line"].rpartition(":")
        if own and path and path != own and os.path.basename(path) == os.path.basename(own):
            s = {**s, "line": f"{own}:{num}"}
        out.append(s)
    return out


def watch(prove: bool = False, raise_on_violation: bool = False, args: dict | None = None,
          cache_dir=None, timeout: float | None = 60.0, max_states: int | None = None,
          strict_exit: bool = False) -> Watcher:
    """`with pipeproof.triton.watch() as w: ...`: every warp-specialised or mbarrier kernel
    compiled or launched in the block is checked; `w.results` holds one KernelResult per
    distinct check. Kernels compiled but not launched are checked when the block ends, with
    `args`. raise_on_violation: the block's end raises PipeproofViolation (an AssertionError)."""
    return Watcher(prove=prove, cache_dir=cache_dir, args=args, timeout=timeout,
                   max_states=max_states, strict_exit=strict_exit,
                   raise_on_violation=raise_on_violation)
