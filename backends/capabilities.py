"""The one backend seam: each backend's name, its code in the compiled tables, where its signal
rules are written, and what it can express. Every feature check (the loader, the templates,
the exports, the pre-check and BMC, reports and traces, the GPU generator, the front ends) asks
this record instead of comparing backend names; docs/architecture.md "How to add a backend".

Plain Python with no imports of the rules, so the loader can read it without deciding whether
numba is used (backends/base.py decides that when the rules are first imported).
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

NVIDIA = 0  # the backend codes of the compiled tables (checker/core/model.py C_BACKEND)
AMD = 1


@dataclass(frozen=True)
class Backend:
    name: str
    code: int
    rules_module: str    # its signal rules, written once in backends/base.py's primitives
    tx_bytes: bool       # transaction bytes: `expect_tx`, copies that complete bytes (TMA)
    clusters: bool       # cluster_size > 1: arrivals to another CTA (`to=`), multicast copies
    phase_parity: bool   # a signal is an mbarrier: waits test one phase parity bit, so a waiter
                         # a phase away aliases (phase_alias), an arrival beyond the count traps
                         # (over_arrival), and traces show the parity
    wrap32: bool         # a signal is a monotone counter whose wait thresholds wrap at 2^32
                         # (checker/smt/counters.py checks the widths)
    signal_fields: tuple  # what the three signal words of the state hold (backends/base.py)
    signal_model: str = ""  # what the reductions (docs/reductions.md) and the lap abstraction
                            # have been argued for: "mbarrier" (parity waits, phases complete),
                            # "counter" (monotone, absolute thresholds), or "" (neither: no
                            # partial-order reduction, and `prove` answers unknown)

    @property
    def counters(self) -> bool:
        """A signal is a monotone counter (no phase, no parity, no pending count)."""
        return not self.phase_parity

    @property
    def rules(self):
        """The module of its signal rules (backends/nvidia.py, backends/amd.py)."""
        return importlib.import_module(self.rules_module)


BACKENDS = {
    "nvidia": Backend("nvidia", NVIDIA, "pipeproof.backends.nvidia", tx_bytes=True, clusters=True,
                      phase_parity=True, wrap32=False, signal_fields=("phase_no", "pending", "tx"),
                      signal_model="mbarrier"),
    "amd": Backend("amd", AMD, "pipeproof.backends.amd", tx_bytes=False, clusters=False,
                   phase_parity=False, wrap32=True, signal_fields=("count",),
                   signal_model="counter"),
}
BACKEND_NAMES = BACKENDS.keys()   # a live view: a registered backend joins it
BACKEND_CODES = {b.name: b.code for b in BACKENDS.values()}
_BY_CODE = {b.code: b for b in BACKENDS.values()}


def register(record: Backend) -> Backend:
    """Add a backend: the loader accepts its name from then on, and every feature check asks
    its record. Its rules module must meet backends/protocol.py, and the compiled engines need
    its branch in backends/dispatch.py (docs/architecture.md "How to add a backend")."""
    from pipeproof.backends.protocol import check
    clash = BACKENDS.get(record.name) or _BY_CODE.get(record.code)
    if clash is not None and clash != record:
        raise ValueError(f"backend {record.name!r} (code {record.code}) clashes with {clash.name!r}")
    problems = check(record.rules)
    if problems:
        raise ValueError("; ".join(problems))
    BACKENDS[record.name] = record
    BACKEND_CODES[record.name] = record.code
    _BY_CODE[record.code] = record
    return record


def unregister(name: str) -> None:
    """Remove a registered backend (tests register toy ones)."""
    record = BACKENDS.pop(name)
    BACKEND_CODES.pop(name)
    _BY_CODE.pop(record.code)


def names_with(capability: str) -> str:
    """The backends that have a capability (a field of Backend), for messages: "nvidia"."""
    return " and ".join(b.name for b in BACKENDS.values() if getattr(b, capability))


def backend(key) -> Backend:
    """The record of a backend, by name ("nvidia") or by code (NVIDIA)."""
    found = BACKENDS.get(key) if isinstance(key, str) else _BY_CODE.get(int(key))
    if found is None:
        raise ValueError(f"unknown backend {key!r} (expected one of: {', '.join(BACKEND_NAMES)})")
    return found
