"""The example specs shipped inside the package (`spec/examples/*.toml`, package data), reachable
from any directory after `pip install .`.

A path `spec/examples/NAME.toml` (any prefix) whose folder does not exist on disk reads the
shipped copy of NAME.toml, with one note on stderr per process; `pipeproof verify spec/examples/*.toml`,
which a shell without a match passes on as written, checks every shipped example. The
`pipeproof examples` command (checker/cli/examples.py) lists them and copies them out.
"""
from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

PARTS = ("spec", "examples")     # the folders a path names the examples by
NOTED_ENV = "PIPEPROOF_NOTED_EXAMPLES"  # the pid that already said so (the same after execve)
GLOB_CHARS = "*?["


def shipped_dir() -> Path:
    """Where the shipped examples are: beside this module, in the clone or the installed package."""
    return Path(__file__).resolve().parent / "examples"


def shipped() -> list[Path]:
    """Every shipped example, by name."""
    return sorted(shipped_dir().glob("*.toml"))


def _names_examples(path: Path) -> bool:
    return len(path.parts) >= 3 and path.parts[-3:-1] == PARTS and path.suffix == ".toml"


def names_a_shipped_example(path) -> bool:
    """Whether `path` is `.../spec/examples/NAME.toml` in a folder that is not on disk: a path
    that means the shipped examples (whether or not one has that name)."""
    file = Path(path)
    return _names_examples(file) and not file.parent.is_dir()


def shipped_copy(path) -> Path | None:
    """The shipped copy that `path` means when it is `.../spec/examples/NAME.toml` and that
    folder is not on disk (outside a clone); else None (a folder that exists is read as it is)."""
    file = Path(path)
    if not names_a_shipped_example(file):
        return None
    copy = shipped_dir() / file.name
    return copy if copy.is_file() else None


def expand(args) -> list[str]:
    """Command-line spec arguments with `spec/examples/PATTERN.toml` patterns that matched
    nothing on disk (a shell passes them on as written) expanded to the shipped examples, by
    the user's own prefix; every other argument as it is."""
    out = []
    for arg in args:
        file = Path(arg)
        if (any(c in arg for c in GLOB_CHARS) and not file.exists() and _names_examples(file)
                and not file.parent.is_dir()):
            names = [p.name for p in shipped() if fnmatch.fnmatchcase(p.name, file.name)]
            if names:
                out += [str(file.parent / name) for name in names]
                continue
        out.append(arg)
    return out


def note(path) -> None:
    """Say once per process, on stderr, that the examples are read from the package."""
    if os.environ.get(NOTED_ENV) == str(os.getpid()):
        return
    os.environ[NOTED_ENV] = str(os.getpid())
    folder = Path(path).parent
    print(f"pipeproof: note: {folder}/ is not here; reading the examples shipped with pipeproof "
          f"({shipped_dir()}; `pipeproof examples --copy DIR` copies them)", file=sys.stderr)
