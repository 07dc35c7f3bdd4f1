"""Every search over the compiled model: the explicit breadth-first search (explore) with its
reductions (por, symmetries), `verify` (verifier), the plain-Python first try (tier), the lap
abstraction and `prove` (laps, lap_verify, prover), exhaustive reachability (reachable) and
the state graph of a small spec (graph).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["explore", "graph", "lap_verify", "laps", "por", "prover", "reachable", "symmetries", "tier", "verifier"],
    submod_attrs={
        "explore": ["INTERRUPTED", "Search"],
        "graph": ["build_graph", "write_dot"],
        "lap_verify": ["verify_laps"],
        "prover": ["MAX_ABSTRACT_STATES", "ProofResult", "prove", "warm_up_prove"],
        "reachable": ["Reach", "reach"],
        "symmetries": ["symmetry"],
        "verifier": ["verify", "warm_up"],
    },
)
