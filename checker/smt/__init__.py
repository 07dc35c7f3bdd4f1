"""Everything that uses Z3, and only here: solvers (seeded, time- and work-limited solvers and
the backends' rules re-bound to Z3 terms), the pre-check (precheck_spec and its parts), amd counter
widths (counters) and bounded model checking (bmc, over encode and its parts).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing, not even Z3; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["bmc", "counters", "precheck_spec", "solvers"],
    submod_attrs={
        "bmc": ["verify_bmc", "warm_up_bmc"],
        "counters": ["amd_wrap", "report_lines"],
        "precheck_spec": ["precheck"],
    },
)
