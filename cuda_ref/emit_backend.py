"""How the reference kernel realises each backend (cuda_ref/codegen.py's docstring): one
`DeviceBackend` per backend the GPU runs, in `DEVICE_BACKENDS` by the name it is registered
under (backends.capabilities), so a new backend adds one entry here and nothing else names it.

An entry holds the backend's own device functions (CUDA text; every kernel carries every
entry's, at cuda_ref/emit_device.py's @DEVICE_BACKENDS@), the kernel's NV switch (the shared
device code's `#if NV`: mbarriers and TMA copies, else counters), the text of a wait and of a
probe, its signals' init lines, conform's words for what a wait needs (cuda_ref/conform_text.py),
and `mirrors`: for every public function of its rules module (`backend(name).rules`), its
realisation in the kernel; a function without one fails generation. What the kernel computes
itself is printed from the rules (backends/printed.py), not copied:

* `amd_helpers()`: the kernel's amd_full_threshold / amd_empty_threshold, from
  backends.amd.full_threshold / empty_threshold;
* `amd_ready()`: probe_amd's test, from backends.amd's signal_ready of either kind (the wait
  computes the threshold once and passes it in, so both must print the same test of counter and
  threshold);
* `nv_wait_parity(phase)`: the operand of mbarrier.test_wait.parity, from backends.nvidia's
  signal_ready (the hardware tests parity(phase_no) != P, so it must read that way; P is printed).

The mbarrier update itself is the hardware's (PTX arrives and cp.async.bulk), not printed.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from pipeproof.backends.base import EMPTY, FULL
from pipeproof.backends.capabilities import backend
from pipeproof.backends.printed import Expr, make, printed_backend, render, same, sym
from pipeproof.cuda_ref.emit_common import GenerationError


@dataclass(frozen=True)
class DeviceBackend:
    """How the reference kernel realises one registered backend."""
    name: str              # the backend's registered name (backends.capabilities)
    nv_switch: str         # the device code's NV: "1" mbarriers and TMA copies, "0" counters
    device: Callable       # () -> its device functions' CUDA text, printed afresh
    check: Callable        # () -> None; GenerationError where a rule lost the form realised here
    wait: Callable         # (gen, ring, kind, signal address, phase) -> a whole-warp wait, C
    probe: Callable        # (gen, ring, kind, signal address, phase) -> one probe, C
    init: Callable         # (RingLayout) -> the kernel's init lines of the ring's signals
    wait_words: Callable   # (rules, phase, expected, kind) -> what a wait at `phase` needs
    mirrors: dict          # public function of its rules module -> its realisation (None: none
                           # needed, a property of the model rather than an operation)


def _c(text: str) -> Expr:
    return sym(text, "cuda")


def _rules(name: str):
    """The rules module of a registered backend (its record's)."""
    return backend(name).rules


# ---------------------------------------------------------------------------------- nvidia

def nv_wait_parity(phase: str) -> str:
    """The parity operand of `mbarrier.test_wait.parity` for a waiter at `phase` (C text),
    printed from backends.nvidia's signal_ready, which must be `parity(phase_no) != P(phase)`
    on either kind of signal: the one test the hardware makes."""
    hw = _c("@phase_no")
    nv = printed_backend(_rules("nvidia"))
    full, empty = (nv.signal_ready(hw, _c("@pending"), _c("@tx"), _c("@expected"), _c(phase), kind)
                   for kind in (FULL, EMPTY))
    if same(full, empty) and isinstance(full, Expr) and full.op == "!=":
        for mine, other in (full.args, full.args[::-1]):
            text = render(other, "cuda")
            if same(mine, make("parity", (hw,))) and "@" not in text:
                return f"(u32){text}"
    raise GenerationError(
        "backends.nvidia.ready is no longer parity(phase_no) != P(phase), the test "
        "mbarrier.test_wait.parity makes (cuda_ref/emit_backend.py nv_wait_parity)")


_NV_DEVICE = r"""// ---- nvidia: mbarrier (backends/nvidia.py)
__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ u32 probe_nv(u32 bar, u32 parity) {   // backends.nvidia.ready
  u32 ok;
#if K_CTAS > 1
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
#else
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
#endif
  return ok;
}
__device__ __forceinline__ void mbar_arrive(u32 bar, u32 n) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive_cluster(u32 rbar, u32 n) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(rbar), "r"(n) : "memory");
}
__device__ __forceinline__ void mbar_arrive_tx_cluster(u32 rbar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(rbar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx_cluster(u32 rbar, u32 bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%0], %1;" :: "r"(rbar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_copy(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_copy_multicast(u32 dst, const void* src, u32 bytes, u32 bar, u16 mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "h"(mask) : "memory");
}
"""


def _nv_wait(gen, r: int, kind: int, sig: str, phase: str) -> str:
    return f"wait_nv(c, {sig}, {nv_wait_parity(phase)})"


def _nv_probe(gen, r: int, kind: int, sig: str, phase: str) -> str:
    return f"probe_nv({sig}, {nv_wait_parity(phase)})"


def _nv_init(rl) -> list[str]:
    out = []
    for s in range(rl.stages):
        out.append(f"    mbar_init(sig_addr({rl.index}, {s}, 0), {rl.full_count}u);")
        out.append(f"    mbar_init(sig_addr({rl.index}, {s}, 1), {rl.empty_count}u);")
    return out


def _nv_wait_words(rules, phase: int, expected: int, kind: int) -> str:
    parity = "odd" if phase % 2 == 0 else "even"
    return f"a wait at phase {phase} passes once phase_no is {parity}"


_NVIDIA = DeviceBackend(
    name="nvidia", nv_switch="1", device=lambda: _NV_DEVICE, check=lambda: nv_wait_parity("phase"),
    wait=_nv_wait, probe=_nv_probe, init=_nv_init, wait_words=_nv_wait_words,
    mirrors={
        "init": "mbarrier.init.shared::cta.b64 [bar], count (full: producer_arrive_count, "
                "empty: consumer_arrive_count), then fence.mbarrier_init.release.cluster",
        "update": "the hardware mbarrier: mbarrier.arrive [n] is (n, 0), "
                  "mbarrier.arrive.expect_tx B is (1, +B), a cp.async.bulk landing is (0, -B); "
                  "an update above pending or a tx-count out of range traps the kernel",
        "ready": "mbarrier.test_wait.parity [bar], P: the hardware tests parity(phase_no) != P; "
                 "P printed from this function (nv_wait_parity)",
        "signal_ready": "probe_nv / wait_nv: its ready, on either kind of signal (nv_wait_parity)",
        "intended_phase": None,   # a property of the model (phase_alias), not an operation
        "intended_after": None,
        "in_window": None,
        "in_window_at": None,
        "signal_bounds": None,    # the model's packing of a state, not an operation
    })


# ---------------------------------------------------------------------------------- amd

def amd_helpers() -> str:
    """The C text of the kernel's amd threshold helpers, printed from backends.amd (tests
    compile it with a host compiler and compare it with the backend)."""
    am = printed_backend(_rules("amd"))
    lines = []
    for name in ("full_threshold", "empty_threshold"):
        value = render(getattr(am, name)(_c("phase"), _c("count")), "cuda")
        lines += [f"__device__ __forceinline__ u64 amd_{name}(i64 phase, u64 count) {{",
                  f"  return {value};", "}"]
    return "\n" + "\n".join(lines) + "\n"


def amd_ready(counter: str = "(u64)cnt_load(a)") -> str:
    """probe_amd's test of `counter` against `threshold`, printed from backends.amd's
    signal_ready of each kind with that kind's threshold function standing for the value
    passed in."""
    texts = set()
    for kind, threshold in ((FULL, "full_threshold"), (EMPTY, "empty_threshold")):
        am = printed_backend(_rules("amd"), stubs={threshold: lambda phase, count: _c("threshold")})
        texts.add(render(am.signal_ready(_c(counter), _c("@b"), _c("@c"), _c("@count"), _c("@phase"),
                                         kind), "cuda"))
    text = texts.pop()
    if texts or "@" in text:
        raise GenerationError(
            "backends.amd.full_ready and empty_ready must compare the counter with their own "
            "threshold alone, and alike: the kernel's waits pass probe_amd(counter, threshold) "
            "the threshold they computed (cuda_ref/emit_backend.py amd_ready)")
    return text


_AMD_DEVICE = r"""// ---- amd: monotone counters (backends/amd.py)
@AMD_HELPERS@
__device__ __forceinline__ void cnt_add(u32 a, u32 n) {
  asm volatile("red.release.cta.shared::cta.add.u32 [%0], %1;" :: "r"(a), "r"(n) : "memory");
}
__device__ __forceinline__ u32 cnt_load(u32 a) {
  u32 v; asm volatile("ld.acquire.cta.shared::cta.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v;
}
__device__ __forceinline__ u32 probe_amd(u32 a, u64 threshold) {   // backends.amd.*_ready
  return @AMD_READY@ ? 1u : 0u;
}
"""


def _amd_threshold(gen, r: int, kind: int, phase: str) -> str:
    thr = ("amd_full_threshold" if kind == FULL else "amd_empty_threshold")
    count = gen.model.ring_specs[r].expected(kind)
    return f"{thr}({phase}, {count}ull)"


def _amd_wait_words(rules, phase: int, expected: int, kind: int) -> str:
    threshold = rules.full_threshold if kind == FULL else rules.empty_threshold
    return f"a wait at phase {phase} needs count >= {threshold(phase, expected)}"


_AMD = DeviceBackend(
    name="amd", nv_switch="0",
    device=lambda: _AMD_DEVICE.replace("@AMD_HELPERS@", amd_helpers()).replace("@AMD_READY@", amd_ready()),
    check=amd_ready,
    wait=lambda gen, r, kind, sig, phase: f"wait_amd(c, {sig}, {_amd_threshold(gen, r, kind, phase)})",
    probe=lambda gen, r, kind, sig, phase: f"probe_amd({sig}, {_amd_threshold(gen, r, kind, phase)})",
    init=lambda rl: [], wait_words=_amd_wait_words,
    mirrors={
        "init": "counter = 0",
        "update": "cnt_add: red.release.cta.shared::cta.add.u32 [counter], n (its arrive)",
        "arrive": "red.release.cta.shared::cta.add.u32 [counter], n",
        "full_threshold": "amd_full_threshold(phase, count), printed from it (amd_helpers)",
        "empty_threshold": "amd_empty_threshold(phase, count), printed from it (amd_helpers)",
        "full_ready": "probe_amd(counter, threshold): its test printed from it, the threshold "
                      "computed once per wait (amd_ready)",
        "empty_ready": "probe_amd(counter, threshold), as full_ready (amd_ready)",
        "signal_ready": "probe_amd / wait_amd against the kind's threshold (amd_ready)",
        "intended_phase": None,   # a counter has no phase to alias
        "intended_after": None,
        "in_window_at": None,
        "signal_bounds": None,    # the model's packing of a state, not an operation
    })


# ---------------------------------------------------------------------------------- the table

# By the registered backend's name: the backends the kernel realises (one entry each).
DEVICE_BACKENDS = {d.name: d for d in (_NVIDIA, _AMD)}
BACKEND_MODULES = {name: _rules(name) for name in DEVICE_BACKENDS}
BACKEND_MIRRORS = {name: d.mirrors for name, d in DEVICE_BACKENDS.items()}

# The amd helpers as printed when this module was loaded (generation prints them afresh).
AMD_C_HELPERS = amd_helpers()


def device_code() -> str:
    """Every backend's device functions (the kernel's NV switch picks among them)."""
    return "\n".join(d.device() for d in DEVICE_BACKENDS.values())


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
