"""The compiled Program every engine reads: the agents" programs and each op"s effects
(program), the state vector"s layout (state_layout), in-flight entries (inflight), the
transition relation (semantics) and the flat tables a spec compiles to (model).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["inflight", "model", "program", "semantics", "state_layout"],
    submod_attrs={
        "model": ["KIND_BITS", "MAX_INFLIGHT", "Model", "OP_CODES", "Packing", "compile_model", "packing_for"],
        "program": ["EMPTY", "Effects", "OP_EFFECTS", "part_of"],
    },
)
