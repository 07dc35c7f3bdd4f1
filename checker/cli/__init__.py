"""The command line: main (`pipeproof`, its commands and the entry-point group), command (the
loop every command runs over its inputs), and one module per command family (prove, export,
examples, sweep, triton, mojo; frontend, the report every front-end command prints: the
readers and the driver are checker/frontends/). The front ends' commands (triton, mojo) are
not listed here: `pipeproof` finds them through checker/frontends/registry.py.

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["command", "examples", "export", "frontend", "main", "prove", "sweep"],
    submod_attrs={
        "command": ["InputLoop"],
        "main": ["run"],
        "prove": ["proof_text"],
    },
)
