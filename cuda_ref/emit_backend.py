"""How the reference kernel realises each backend function (cuda_ref/codegen.py's docstring).

`BACKEND_MIRRORS` names, for every public function of backends/nvidia.py and backends/amd.py,
its realisation in the kernel; a function without an entry fails generation. What the kernel
computes itself is printed from the backend (backends/printed.py), not copied:

* `amd_helpers()`: the kernel's amd_full_threshold / amd_empty_threshold, from
  backends.amd.full_threshold / empty_threshold;
* `amd_ready()`: probe_amd's test, from backends.amd.full_ready / empty_ready (the wait computes
  the threshold once and passes it in, so both must print the same test of counter and threshold);
* `nv_wait_parity(phase)`: the operand of mbarrier.test_wait.parity, from backends.nvidia.ready
  (the hardware tests parity(phase_no) != P, so ready must read that way; P is printed).

The mbarrier update itself is the hardware's (PTX arrives and cp.async.bulk), not printed.
"""
from __future__ import annotations

import inspect

from pipeproof.backends import amd as amd_backend
from pipeproof.backends import nvidia as nvidia_backend
from pipeproof.backends.capabilities import BACKENDS
from pipeproof.backends.printed import Expr, make, printed_backend, render, same, sym
from pipeproof.cuda_ref.emit_common import GenerationError

# How the kernel realises each public function of a backend's rules module. A function added
# to a backend without an entry here makes generation fail (see `check_backend_mirrors`).
_MIRRORS_OF = {
    nvidia_backend: {
        "init": "mbarrier.init.shared::cta.b64 [bar], count (full: producer_arrive_count, "
                "empty: consumer_arrive_count), then fence.mbarrier_init.release.cluster",
        "update": "the hardware mbarrier: mbarrier.arrive [n] is (n, 0), "
                  "mbarrier.arrive.expect_tx B is (1, +B), a cp.async.bulk landing is (0, -B); "
                  "an update above pending or a tx-count out of range traps the kernel",
        "ready": "mbarrier.test_wait.parity [bar], P: the hardware tests parity(phase_no) != P; "
                 "P printed from this function (nv_wait_parity)",
        "intended_phase": None,   # a property of the model (phase_alias), not an operation
        "intended_after": None,
        "in_window": None,
        "in_window_at": None,
    },
    amd_backend: {
        "init": "counter = 0",
        "arrive": "red.release.cta.shared::cta.add.u32 [counter], n",
        "full_threshold": "amd_full_threshold(phase, count), printed from it (amd_helpers)",
        "empty_threshold": "amd_empty_threshold(phase, count), printed from it (amd_helpers)",
        "full_ready": "probe_amd(counter, threshold): its test printed from it, the threshold "
                      "computed once per wait (amd_ready)",
        "empty_ready": "probe_amd(counter, threshold), as full_ready (amd_ready)",
    },
}
# By backend name (backends.capabilities), the backends whose rules the kernel realises
BACKEND_MODULES = {b.name: b.rules for b in BACKENDS.values() if b.rules in _MIRRORS_OF}
BACKEND_MIRRORS = {name: _MIRRORS_OF[module] for name, module in BACKEND_MODULES.items()}


def _c(text: str) -> Expr:
    return sym(text, "cuda")


def amd_helpers() -> str:
    """The C text of the kernel's amd threshold helpers, printed from backends.amd (tests
    compile it with a host compiler and compare it with the backend)."""
    am = printed_backend(amd_backend)
    lines = []
    for name in ("full_threshold", "empty_threshold"):
        value = render(getattr(am, name)(_c("phase"), _c("count")), "cuda")
        lines += [f"__device__ __forceinline__ u64 amd_{name}(i64 phase, u64 count) {{",
                  f"  return {value};", "}"]
    return "\n" + "\n".join(lines) + "\n"


def amd_ready(counter: str = "(u64)cnt_load(a)") -> str:
    """probe_amd's test of `counter` against `threshold`, printed from backends.amd.full_ready
    and empty_ready with their own threshold function standing for the value passed in."""
    texts = set()
    for ready, threshold in (("full_ready", "full_threshold"), ("empty_ready", "empty_threshold")):
        am = printed_backend(amd_backend, stubs={threshold: lambda phase, count: _c("threshold")})
        texts.add(render(getattr(am, ready)(_c(counter), _c("@phase"), _c("@count")), "cuda"))
    text = texts.pop()
    if texts or "@" in text:
        raise GenerationError(
            "backends.amd.full_ready and empty_ready must compare the counter with their own "
            "threshold alone, and alike: the kernel's waits pass probe_amd(counter, threshold) "
            "the threshold they computed (cuda_ref/emit_backend.py amd_ready)")
    return text


def nv_wait_parity(phase: str) -> str:
    """The parity operand of `mbarrier.test_wait.parity` for a waiter at `phase` (C text),
    printed from backends.nvidia.ready, which must be `parity(phase_no) != P(phase)`: the one
    test the hardware makes."""
    hw = _c("@phase_no")
    ready = printed_backend(nvidia_backend).ready(hw, _c(phase))
    if isinstance(ready, Expr) and ready.op == "!=":
        for mine, other in (ready.args, ready.args[::-1]):
            text = render(other, "cuda")
            if same(mine, make("parity", (hw,))) and "@" not in text:
                return f"(u32){text}"
    raise GenerationError(
        "backends.nvidia.ready is no longer parity(phase_no) != P(phase), the test "
        "mbarrier.test_wait.parity makes (cuda_ref/emit_backend.py nv_wait_parity)")


# The amd helpers as printed when this module was loaded (generation prints them afresh).
AMD_C_HELPERS = amd_helpers()


def backend_functions(module) -> list[str]:
    """The public functions a backend module defines itself (not the primitives it imports)."""
    names = []
    for name, obj in vars(module).items():
        if name.startswith("_"):
            continue
        fn = getattr(obj, "py_func", obj)  # numba dispatchers keep the Python function
        if inspect.isfunction(fn) and fn.__module__ == module.__name__:
            names.append(name)
    return sorted(names)


def check_backend_mirrors(backend: str) -> None:
    module = BACKEND_MODULES.get(backend)
    if module is None:
        raise GenerationError(f"backend {backend!r} has no GPU reference kernel "
                              f"(cuda_ref/codegen.py knows: {', '.join(BACKEND_MODULES)})")
    mirrors = BACKEND_MIRRORS[backend]
    missing = [n for n in backend_functions(module) if n not in mirrors]
    if missing:
        raise GenerationError(
            f"backends/{backend}.py defines {', '.join(missing)}, which the GPU generator does "
            f"not mirror yet (add it to cuda_ref/codegen.py BACKEND_MIRRORS['{backend}'] and "
            f"emit it)")
