"""Running the engines: jitcache and engine_build (the one background build of the compiled
engines, and who waits for it; its entry point, checker/cli/build_engines.py, is started by
name, never imported), clock (wall time since the process started) and progress (the progress
line on stderr).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["clock", "engine_build", "jitcache", "progress"],
    submod_attrs={
        "clock": ["wall"],
        "engine_build": ["build", "tiny_spec"],
        "jitcache": ["compile_notice", "ensure_engines"],
    },
)
