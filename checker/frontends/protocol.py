"""What every front end's reader gives the driver (checker/frontends/driver.py).

A reader turns a compiled kernel into what the front-end core (spec/frontend_core.py) makes a
spec of: per-role events (the parser's partitions: each role's barrier and ring-data ops in run
order, with the loops around them), the source line of each op, and the launch configuration
it found. It reads in two steps, so that a command can check its other options between them
in the order it always did:

- `load(target, options)`: the kernel's IR text and the name messages give it (`KernelIR`):
  a file read, or a kernel compiled on request (Triton's `KERNEL.py::NAME`, a `.mojo` file);
- `read(ir, options)`: the `Reading` of that IR.

A kernel the reader cannot turn into a spec is refused in ONE line naming the kernel's source
line and the IR line it came from (`Refusal`; the parsers of spec/ttgir/ and spec/mojo/ raise
SpecErrors of that form already). The driver prints it and exits 2, as for any bad input.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Protocol, runtime_checkable

from pipeproof.spec.schema import SpecError


@dataclass(frozen=True)
class KernelIR:
    """A compiled kernel's IR as text, and the name messages give it (a path, KERNEL.py::NAME)."""
    text: str
    where: str


@dataclass(frozen=True)
class ReadOptions:
    """What the user told a reader about the kernel. `args` and `trip_count` are what the
    driver varies to compare the extracted program at other trip counts; `extra` holds what
    only one reader understands (Triton's compile options and `lowering`, Mojo's `block_dim`
    and `arch`)."""
    function: str | None = None   # the kernel of a file with several (--function, --kernel)
    args: Mapping = field(default_factory=dict)   # kernel argument values (loop bounds)
    trip_count: int | None = None  # loops whose bounds are not known run this many times
    extra: Mapping = field(default_factory=dict)


@dataclass
class Reading:
    """One kernel, read. `build()` makes the spec (TOML text) and its source map once: the
    map (spec/frontend_core.SourceMap) gives each op of the spec its (partition, op, "file:line"),
    where `op` is the IR op's name, or the call chain ("method <- caller") where the IR has
    one (Mojo's debug info)."""
    ir: KernelIR
    options: ReadOptions
    name: str                      # the spec's pipeline name
    roles: list                    # per-role events: the parser's partitions
    launch: dict                   # the launch configuration found (warps, block size, cluster...)
    build: Callable[[], tuple]     # () -> (TOML text, SourceMap)


@dataclass(frozen=True)
class TripCounts:
    """Whether the extracted program is the same at other trip counts, so that a proof for
    every item count speaks for them too. `same` None: nothing was compared; `lines` say what
    was (or why nothing was) in the report, `json` in --json's `trip_counts_agree`."""
    same: bool | None
    lines: tuple = ()
    json: dict | None = None


@runtime_checkable
class Reader(Protocol):
    """A front end's reader (the registry, checker/frontends/registry.py, names each)."""
    name: str         # the registry key and the command's name
    ir: str           # what it reads, in words
    rerun_hint: str   # --prove's pointer to the command that checks the kernel's own count

    def load(self, target: str, options: ReadOptions) -> KernelIR: ...

    def read(self, ir: KernelIR, options: ReadOptions) -> Reading: ...

    def trip_counts(self, reading: Reading, toml_text: str, target: str) -> TripCounts: ...

    def step_text(self, step: dict) -> str: ...


class Refusal(SpecError):
    """A kernel a reader cannot turn into a spec: one line naming the kernel's source line,
    the IR line it came from and the IR op, then why."""

    def __init__(self, source_line: str, ir_line: str, op: str, why: str):
        self.source_line, self.ir_line, self.op, self.why = source_line, ir_line, op, why
        super().__init__(" ".join(f"{source_line} ({ir_line}, {op}): {why}".split()))


def program_of(toml_text: str) -> str:
    """The extracted spec without its item counts (what must not depend on the trip count)."""
    return re.sub(r"(?m)^items = \d+$", "", toml_text)


def compare_at_other_args(reader, reading, toml_text: str, target: str, args: dict,
                          numeric: dict) -> TripCounts:
    """Re-read the kernel with every `numeric` argument at v + 3 and 2v + 5 (lists elementwise)
    and compare the programs, so a proof for every item count speaks for the kernel's other
    trip counts where its index and phase arithmetic gives the same program (the Mojo and PTX
    readers' --prove)."""
    from dataclasses import replace
    base = program_of(toml_text)
    tried, same = [dict(numeric)], True
    for f in (lambda v: v + 3, lambda v: 2 * v + 5):
        other = {**args, **{k: [f(x) for x in v] if isinstance(v, list) else f(v)
                             for k, v in numeric.items()}}
        tried.append({k: other[k] for k in numeric})
        try:
            text, _ = reader.read(reading.ir, replace(reading.options, args=other)).build()
        except SpecError:
            same = False
            break
        if program_of(text) != base:
            same = False
            break
    vals = "; ".join(", ".join(f"{k}={v}" for k, v in t.items()) for t in tried)
    line = (f"{target}: the extracted program is {'the same' if same else 'NOT the same'}"
            f" at --arg {vals}" + ("" if same else ": the proof covers the arguments given only"))
    return TripCounts(same, (line,), {"same": same, "args": tried})

