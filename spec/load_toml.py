"""Reading a spec file and its TOML (spec.load): the file's bytes as UTF-8 text, `tomllib`'s
parse with a bound on nesting, and TOML syntax errors as `x.toml:LINE:COLUMN: TOML syntax
error: ...` (tomllib's position moved to the front). Every problem is a one-line SpecError."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from pipeproof.spec.load_checks import _error, _one_line
from pipeproof.spec.schema import SpecError
from pipeproof.spec.shipped import names_a_shipped_example, note, shipped_copy


TOML_POSITION = re.compile(r"^(.*) \(at (?:line (\d+), column (\d+)|end of document)\)$")


def read_text(path) -> str:
    file = Path(path)
    copy = shipped_copy(file)  # spec/examples/NAME.toml outside a clone: the shipped example
    if copy is not None:
        note(file)
        file = copy
    if not file.exists():
        if names_a_shipped_example(file):  # outside a clone, a name no example has
            raise _error(str(path), "", "cannot read spec: no such file, nor a shipped example "
                                        "of that name (`pipeproof examples` lists them)")
        raise _error(str(path), "", "cannot read spec: no such file (expected a .toml spec file)")
    if file.is_dir():
        raise _error(str(path), "", "cannot read spec: is a directory (expected a .toml spec file)")
    try:
        data = file.read_bytes()
    except OSError as err:
        raise _error(str(path), "", f"cannot read spec: {err.strerror or err} "
                                    "(expected a readable .toml spec file)") from None
    if b"\x00" in data:
        raise _error(str(path), "", "binary file, not a spec (expected UTF-8 TOML text)")
    try:
        return strip_bom(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise _error(str(path), "", f"not UTF-8 text (bad byte at offset {err.start}; "
                                    "expected UTF-8 TOML text)") from None


def strip_bom(text: str) -> str:
    """Text without a leading UTF-8 byte-order mark (U+FEFF), which Windows editors write and
    TOML does not allow: a spec saved that way reads as the same spec."""
    return text[1:] if text.startswith("\ufeff") else text


MAX_NESTING = 64  # tables and arrays inside each other: a spec needs 3


def parse_toml(text: str, path: str) -> dict:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _toml_syntax_error(str(err), path, text) from None
    except RecursionError:  # tomllib recurses once per nesting level
        raise _error(path, "", f"TOML nested too deeply (a spec nests tables and arrays at most "
                               f"{MAX_NESTING} levels)") from None
    if _nesting(document) > MAX_NESTING:
        raise _error(path, "", f"TOML nested too deeply (a spec nests tables and arrays at most "
                               f"{MAX_NESTING} levels)")
    return document


def _nesting(value, depth=0) -> int:
    """How deep tables and arrays nest, without recursing past MAX_NESTING."""
    deepest, todo = depth, [(value, depth)]
    while todo:
        item, d = todo.pop()
        deepest = max(deepest, d)
        if d > MAX_NESTING:
            return d
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        todo.extend((child, d + 1) for child in children)
    return deepest


def _toml_syntax_error(message: str, path: str, text: str = "") -> SpecError:
    """`x.toml:3:9: TOML syntax error: Invalid value` (tomllib's position moved to the front;
    "end of document" becomes the line and column where the text ends)."""
    match = TOML_POSITION.match(message)
    if match is None:
        return _error(path, "", f"TOML syntax error: {message} (see https://toml.io)")
    what, line, column = match.groups()
    if not line:
        lines = text.split("\n")
        line, column = len(lines), len(lines[-1]) + 1
        what += " (at the end of the file)"
    return SpecError(_one_line(f"{path}:{line}:{column}: TOML syntax error: {what} "
                               f"(see https://toml.io)"))
