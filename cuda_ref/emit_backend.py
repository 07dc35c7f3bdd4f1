"""How the reference kernel realises each backend function (cuda_ref/codegen.py's docstring).

`BACKEND_MIRRORS` names, for every public function of backends/nvidia.py and backends/amd.py,
its realisation in the kernel; a function without an entry fails generation.
"""
from __future__ import annotations

import inspect

from pipeproof.backends import amd as amd_backend
from pipeproof.backends import nvidia as nvidia_backend
from pipeproof.cuda_ref.emit_common import GenerationError

# How the kernel realises each public function of a backend module. A function added to a
# backend without an entry here makes generation fail (see `check_backend_mirrors`).
BACKEND_MIRRORS = {
    "nvidia": {
        "init": "mbarrier.init.shared::cta.b64 [bar], count (full: producer_arrive_count, "
                "empty: consumer_arrive_count), then fence.mbarrier_init.release.cluster",
        "update": "the hardware mbarrier: mbarrier.arrive [n] is (n, 0), "
                  "mbarrier.arrive.expect_tx B is (1, +B), a cp.async.bulk landing is (0, -B); "
                  "an update above pending or a tx-count out of range traps the kernel",
        "ready": "mbarrier.test_wait.parity [bar], phase & 1",
        "intended_phase": None,   # a property of the model (phase_alias), not an operation
        "in_window": None,
    },
    "amd": {
        "init": "counter = 0",
        "arrive": "red.release.cta.shared::cta.add.u32 [counter], n",
        "full_threshold": "(u64)(u32)(phase + 1) * (u64)producer_arrive_count",
        "empty_threshold": "(u64)(u32)(phase - 1) * (u64)consumer_arrive_count",
        "full_ready": "(u64)ld.acquire(counter) >= full_threshold",
        "empty_ready": "(u64)ld.acquire(counter) >= empty_threshold",
    },
}
BACKEND_MODULES = {"nvidia": nvidia_backend, "amd": amd_backend}

# The C text of the amd thresholds (the kernel's own helper functions; tests compile them
# with a host compiler and compare with backends.amd).
AMD_C_HELPERS = r"""
__device__ __forceinline__ u64 amd_full_threshold(i64 phase, u64 count) {
  return (u64)(u32)(phase + 1) * count;
}
__device__ __forceinline__ u64 amd_empty_threshold(i64 phase, u64 count) {
  return (u64)(u32)(phase - 1) * count;
}
"""


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
