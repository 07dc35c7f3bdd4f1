"""pipeproof in the kernel author's loop: the pytest plugin (`pytest --pipeproof`),
triton_watch (Triton"s compile and launch hooks) and `pipeproof.triton` (triton_api).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["pytest_plugin", "triton_watch"],
    submod_attrs={
        "triton_watch": ["watch"],
    },
)
