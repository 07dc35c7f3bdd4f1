"""Fix suggestions (`verify --suggest-fix`): suggest (the search and its API), candidates,
edit, order, report and text (the TOML diff).

This file is the wing's face: other wings import only the names listed here (loaded on
first use, so importing the face costs nothing; docs/architecture.md)."""
import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["candidates", "edit", "order", "report", "suggest", "text"],
    submod_attrs={
        "suggest": ["format_fix", "suggest_fix"],
    },
)
