"""The front ends: a compiled kernel's IR to a spec, checked, reported with the kernel's source
lines. protocol (what every reader gives: `Reader`, `Reading`, `ReadOptions`, `TripCounts`,
`Refusal`), driver (a reading to a spec, verify or prove, source lines, SARIF findings),
registry (the readers and their commands), and the readers: triton (TTGIR, through spec/ttgir/)
and mojo (Mojo's LLVM IR, through spec/mojo/). Other wings reach a reader through the registry
(`reader("triton")`), never by its module, so a new front end touches no other wing.

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["driver", "protocol", "registry"],
    submod_attrs={
        "driver": ["Checked", "Extracted", "InternalError", "check", "extract", "extract_text",
                   "kernel_findings", "source_lines", "unreadable_findings"],
        "protocol": ["KernelIR", "ReadOptions", "Reader", "Reading", "Refusal", "TripCounts",
                     "program_of"],
        "registry": ["FrontEnd", "commands", "front_ends", "reader", "register", "unregister"],
    },
)
