"""What a check returns, in one vocabulary, and the exit code each outcome gives.

Every command reads these names: the verdicts (`prove` says them in its own words, the
same three in the same order), the violation kinds, and the one exit-code table.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pipeproof.spec.vocabulary import KINDS, WARNINGS, Verdict

if TYPE_CHECKING:
    from pipeproof.spec.schema import Spec

RECORDS = KINDS + WARNINGS  # the search's records, by index (checker/core/semantics.py N_RECORDS)
VERDICTS = tuple(v.value for v in Verdict)
# What a GPU run of each kind shows (the outcome words of cuda_ref's logs): over-arrival and a
# tx count out of range trap the kernel; a phase alias is not observable on its own.
GPU_OUTCOME = {"deadlock": "deadlock", "read_before_fill": "read_before_fill",
               "overwrite_before_drain": "overwrite_before_drain", "over_arrival": "trap",
               "tx_range": "trap", "inflight_at_exit": "inflight_at_exit"}
GPU_OUTCOMES = (Verdict.OK.value,) + tuple(dict.fromkeys(GPU_OUTCOME[k] for k in KINDS if k in GPU_OUTCOME))

# The exit codes of every command (docs/model.md "Exit codes").
EXIT_OK = 0            # every input holds (verify, prove), runs clean (gpu) or conforms
EXIT_VIOLATION = 1     # a violation; gpu and crosscheck: a bad run or a broken rule
EXIT_USAGE = 2         # bad input or usage: one line on stderr
EXIT_INCONCLUSIVE = 3  # a limit was hit, or Ctrl-C: never reported as ok
EXIT_INTERNAL = 4      # a bug of ours: the traceback on stderr, and the next input goes on
EXIT_UNEXPECTED = 5    # a verdict other than the spec's declared `expect`
EXIT_NOT_RUN = 6       # gpu, crosscheck: the GPU could not run a spec (generation, compile, launch)
# How bad each outcome is: several inputs exit with the worst.
SEVERITY = {EXIT_OK: 0, EXIT_INCONCLUSIVE: 1, EXIT_NOT_RUN: 2, EXIT_VIOLATION: 3,
            EXIT_UNEXPECTED: 4, EXIT_USAGE: 5, EXIT_INTERNAL: 6}
VERDICT_EXIT = {Verdict.OK: EXIT_OK, Verdict.VIOLATION: EXIT_VIOLATION, Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE}


def worse(a: int, b: int) -> int:
    """The worse of two exit codes."""
    return max(a, b, key=SEVERITY.get)


JSON_SCHEMA_VERSION = 1


@dataclass
class Result:
    spec: Spec
    verdict: Verdict                      # (a word is taken and kept as its Verdict)
    states: int                           # distinct states stored
    transitions: int                      # transitions generated
    seconds: float                        # the search alone
    kinds: tuple[str, ...] = ()           # every kind found at the minimal depth, in KINDS order
    depth: int | None = None              # steps in the shortest counterexample
    traces: dict = field(default_factory=dict)  # kind -> its shortest checker.trace.Trace
    limit: str = ""                       # why the run is inconclusive ("max-states 1000", ...)
    max_depth: int = 0                    # deepest BFS level explored (por: a step and
                                          # the local steps taken with it count as one)
    engine: str = "explicit"              # which engine answered: explicit, bmc or laps
    por: bool = False                     # explicit: local steps merged (partial-order reduction)
    lap_bound: int = 0                    # laps: every item count >= this has the same states
    precheck: list = field(default_factory=list)  # checker.smt.precheck_spec findings
    fix: object = None                    # checker.fix.FixSuggestion, after --suggest-fix
    warnings: dict = field(default_factory=dict)  # warning (WARNINGS) -> a Trace that shows it
    wall_seconds: float | None = None     # the command's wall time since its process started
                                          # (set by the command line; checker/runtime/clock.py)

    def __setattr__(self, name, value):
        # Every engine's result carries the one Verdict, whichever word it was given.
        super().__setattr__(name, Verdict(value) if name == "verdict" else value)

    @property
    def kind(self) -> str | None:
        return self.kinds[0] if self.kinds else None

    @property
    def as_expected(self) -> bool | None:
        """Does the verdict match the spec's declared `expect` / `expect_any` (ok, or the
        first kind found)? None when nothing is declared or the run was inconclusive."""
        if self.spec.expect is None or self.verdict == "inconclusive":
            return None
        allowed = (self.spec.expect,) + tuple(self.spec.expect_any)
        return ("ok" if self.verdict == "ok" else self.kind) in allowed
