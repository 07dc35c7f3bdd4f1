"""What the pre-check reports: a `Finding` (the signal, the violation kind it predicts, a
message in a kernel author's words, the first item and the role it shows in), and the
wording helpers the messages share."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from pipeproof.spec.schema import MAIN_RING


@dataclass(frozen=True)
class Finding:
    signal: str            # "empty[s]", "acc.full[s]", "barrier wg"
    kind: str              # the violation kind (docs/model.md "Violation kinds") it predicts,
                           # or "stage_mismatch"
    message: str           # in a kernel author's words
    item: int | None = None  # the first item (0-based) it shows in, when it is about one
    role: str | None = None

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return f"{self.signal}: {self.kind}: {self.message}"


def sig_name(ring: str, X: str, s="s") -> str:
    return f"{X}[{s}]" if ring == MAIN_RING else f"{ring}.{X}[{s}]"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
