"""What one verification run returns; the CLI, reports and tests read only this."""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeproof.checker.trace import Trace
from pipeproof.spec.schema import Spec

# Violation kinds in the contract's reporting order (DESIGN.md "Properties").
KINDS = ("deadlock", "read_before_fill", "overwrite_before_drain", "phase_alias",
         "over_arrival", "tx_range", "inflight_at_exit")
VERDICTS = ("ok", "violation", "inconclusive")
JSON_SCHEMA_VERSION = 1


@dataclass
class Result:
    spec: Spec
    verdict: str                          # one of VERDICTS
    states: int                           # distinct states stored
    transitions: int                      # transitions generated
    seconds: float
    kinds: tuple[str, ...] = ()           # every kind found at the minimal depth, in KINDS order
    depth: int | None = None              # steps in the shortest counterexample
    traces: dict[str, Trace] = field(default_factory=dict)  # kind -> its shortest trace
    limit: str = ""                       # why the run is inconclusive ("max-states 1000", ...)
    max_depth: int = 0                    # deepest BFS level explored (por: a step and
                                          # the local steps taken with it count as one)
    engine: str = "explicit"              # which engine answered: explicit, bmc or laps
    por: bool = False                     # explicit: local steps merged (partial-order reduction)
    lap_bound: int = 0                    # laps: every item count >= this has the same states
    precheck: list = field(default_factory=list)  # checker.smt.precheck findings
    fix: object = None                    # checker.fix.FixSuggestion, after --suggest-fix

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
