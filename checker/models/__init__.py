"""A spec as a Promela (SPIN) or Murphi (Rumur) model of the same transition system:
exporter (the API), ir (what both languages print), signals (the backend's rules, printed),
steps, promela, murphi, and run (SPIN and Rumur run on an export).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["exporter", "ir", "murphi", "promela", "run", "signals", "steps"],
    submod_attrs={
        "exporter": ["export"],
        "murphi": ["to_murphi"],
        "promela": ["to_promela"],
        "run": ["ToolRun", "run_rumur", "run_spin"],
    },
)
