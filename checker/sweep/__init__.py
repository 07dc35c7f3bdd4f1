"""`pipeproof sweep`: points (the API), grid (parameters), run (where points run: here, a
pool, Dask), plot, triton_points (a Triton kernel's points) and warm.

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["grid", "plot", "points", "run", "triton_points", "warm"],
    submod_attrs={
        "grid": ["show"],
        "plot": ["heatmap", "other_values", "parse_plot"],
        "points": ["param_names", "points_of_spec", "run_sweep"],
        "triton_points": ["points_of_kernel"],
    },
)
