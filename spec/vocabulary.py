"""The one result vocabulary (docs/model.md "Violation kinds"): the verdicts, in order, and the
violation kinds. Written here once, at the bottom of the layers, because a spec's `expect`
names them; every engine, command, export and the GPU side reads them from here (the exit
codes are checker/results/result.py's one table).
"""
from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    """A check's verdict, ordered from best to worst (like CrossHair's ordered status): several
    inputs answer with the worst. A member is its string ("ok" == Verdict.OK), so JSON, text
    and dictionaries keyed by the words see the same value."""
    OK = "ok"                      # exhaustive, and nothing violated
    INCONCLUSIVE = "inconclusive"  # a limit or Ctrl-C: never reported as ok
    VIOLATION = "violation"        # a violation, with its shortest counterexample

    __hash__ = str.__hash__        # hash as the word, so {"ok": ...}[Verdict.OK] works
    __str__ = str.__str__          # print as the word,
    __repr__ = str.__repr__        # and show as it ('ok'), as before there was an enum
    __format__ = str.__format__

    @property
    def rank(self) -> int:
        return list(Verdict).index(self)

    @property
    def proof_word(self) -> str:
        """`prove` speaks of every item count at once: proved, violated, unknown."""
        return PROOF_WORDS[self]

    @classmethod
    def of(cls, word: str) -> Verdict:
        """The verdict a word names: a verdict or one of `prove`'s words."""
        for v in cls:
            if word == v.value or word == PROOF_WORDS[v]:
                return v
        raise ValueError(f"not a verdict: {word!r} (expected one of {VERDICT_WORDS})")

    @classmethod
    def worst(cls, verdicts) -> Verdict:
        return max((cls(v) for v in verdicts), key=lambda v: v.rank, default=cls.OK)


PROOF_WORDS = {Verdict.OK: "proved", Verdict.VIOLATION: "violated", Verdict.INCONCLUSIVE: "unknown"}
VERDICT_WORDS = tuple(v.value for v in Verdict) + tuple(PROOF_WORDS.values())

# Violation kinds in the contract's reporting order.
KINDS = ("deadlock", "read_before_fill", "overwrite_before_drain", "phase_alias",
         "over_arrival", "tx_range", "inflight_at_exit")
# Warnings: found like a kind (a trace each) but not violations; the verdict stays what it is.
# unawaited_at_exit: a CTA went with only its own copies or commits still in flight into it
# (DESIGN "inflight_at_exit", revised 2026-12-02; `--strict-exit` makes it inflight_at_exit).
WARNINGS = ("unawaited_at_exit",)
# What a spec's `expect` may declare.
EXPECT_VALUES = (Verdict.OK.value,) + KINDS
