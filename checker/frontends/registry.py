"""The front ends pipeproof knows: for each, its reader (a `Reader`, checker/frontends/protocol.py)
and its command. `pipeproof` registers every front end's command from here
(checker/cli/main.py), so a new front end is its reader module, one entry below and its command
module (docs/architecture.md "How to add a front end").

Entries name modules as text and import them on first use: `pipeproof --help` imports no reader.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class FrontEnd:
    name: str            # the command's name, and the reader's
    reader: object       # "module:attribute" of its Reader (or the Reader itself)
    command: str | None  # "module:attribute" of its click command (None: no command)


FRONT_ENDS: dict[str, FrontEnd] = {
    "triton": FrontEnd("triton", "pipeproof.checker.frontends.triton:READER",
                       "pipeproof.checker.cli.triton:triton"),
    "mojo": FrontEnd("mojo", "pipeproof.checker.frontends.mojo:READER",
                     "pipeproof.checker.cli.mojo:mojo"),
    "ptx": FrontEnd("ptx", "pipeproof.checker.frontends.ptx:READER",
                    "pipeproof.checker.cli.ptx:ptx"),
}


def _attribute(where: str):
    module, attr = where.split(":")
    return getattr(importlib.import_module(module), attr)


def front_ends() -> list[str]:
    """The registered front ends' names, in the order registered."""
    return list(FRONT_ENDS)


def reader(name: str):
    """The Reader registered as `name` (KeyError names the registered ones)."""
    try:
        entry = FRONT_ENDS[name]
    except KeyError:
        raise KeyError(f"no front end {name!r} (registered: {', '.join(FRONT_ENDS)})") from None
    return _attribute(entry.reader) if isinstance(entry.reader, str) else entry.reader


def commands() -> dict[str, tuple[str, str]]:
    """{command name: (module, attribute)} of the front ends that have a command."""
    return {name: tuple(e.command.split(":")) for name, e in FRONT_ENDS.items() if e.command}


def register(name: str, reader, command: str | None = None) -> FrontEnd:
    """Add a front end (a Reader, or "module:attribute" of one); `unregister` takes it out."""
    FRONT_ENDS[name] = FrontEnd(name, reader, command)
    return FRONT_ENDS[name]


def unregister(name: str) -> None:
    FRONT_ENDS.pop(name, None)
