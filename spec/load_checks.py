"""The loader's limits, its problem type and the small value checks (spec.load).

`_Invalid(where, message)` is a problem found while validating; `spec.load.load_spec_text`
adds the file's path and raises it as a one-line `SpecError` (`_error`). Each `_check_*` returns
the value or raises `_Invalid` naming the key (`[pipeline] stages`, `role 'consumer' count`)."""
from __future__ import annotations

import difflib
import re

from pipeproof.spec.schema import SpecError


MAX_STAGES = 64
MAX_AGENTS = 64           # role count, template `consumers`
MAX_ITEMS = 100_000
MAX_CLUSTER = 16
MAX_PHASE = (1 << 32) - 1
MAX_BYTES = (1 << 32) - 1  # above TX_LIMIT is legal here: the model reports it as tx_range

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Invalid(Exception):
    """A problem found while validating; `load_spec_text` adds the path and raises SpecError."""

    def __init__(self, where: str, message: str):
        super().__init__(where, message)
        self.where = where
        self.message = message


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


def _error(path: str, where: str, message: str) -> SpecError:
    prefix = f"{path}: {where}: " if where else f"{path}: "
    return SpecError(_one_line(prefix + message))


# ---------------------------------------------------------------------------------------
# Small value checks. Each returns the value or raises _Invalid(where, message).


def _show(value) -> str:
    """A value as the user would recognise it, on one short line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_int(value, low: int, high: int, where: str) -> int:
    # bool is a subclass of int in Python; TOML true is not a number.
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Invalid(where, f"must be an integer from {low} to {high}, got {_show(value)}")
    return value


def _check_str(value, where: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(where, f"must be a string, got {_show(value)}")
    return value


def _check_choice(value, allowed, where: str, what: str) -> str:
    if not isinstance(value, str):
        raise _Invalid(where, f"must be a string, one of: {', '.join(allowed)}; got {_show(value)}")
    if value not in allowed:
        raise _Invalid(where, f"unknown {what} {value!r} (allowed: {', '.join(allowed)})"
                              f"{_did_you_mean(value, allowed)}")
    return value


def _check_table(value, where: str, hint: str) -> dict:
    if not isinstance(value, dict):
        raise _Invalid(where, f"must be a table ({hint}), got {_show(value)}")
    return value


def _check_keys(table: dict, allowed, where: str) -> None:
    for key in table:
        if key not in allowed:
            raise _Invalid(where, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})"
                                  f"{_did_you_mean(key, allowed)}")


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
