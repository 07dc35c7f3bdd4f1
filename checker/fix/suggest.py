"""Fix suggestions (`pipeproof verify --suggest-fix`): the smallest verified change of a spec's
integer parameters that makes a violating spec safe, printed as a TOML diff.

What is searched (each a TOML location in the spec file):

- arrive counts: `pipeline.producer_arrive_count`, `pipeline.consumer_arrive_count`,
  `ring.NAME.*_arrive_count`, and per-op counts (`arrive_full 2`, `commit_empty 2`);
- initial phases (`role.R.initial_phase`, per ring `role.R.initial_phase.NAME`) and
  `role.R.initial_stage`;
- bytes: the `expect_tx B` / `copy B` operands (and, for a `tx_range` violation in a
  template, the template's `tile_bytes` / `k_group_size`);
- `@leader` guards on arrivals, `expect_tx`, commits, copies and writes (roles of several agents);
- `items` of a role, only where roles disagree;
- a named barrier's `count`.

Candidates are ordered by size: one change before two; within that, values the spec itself
implies first (the number of agents that actually arrive, the bytes actually copied, the phase
convention of the signal a role waits on: "tier 0"), then small deltas; the violation kind
decides which kind of parameter comes first and the failing trace which roles and rings. Each
candidate is re-verified with the explicit engine (`checker.engines.verify`, under a state and
time bound; only `ok` counts). The winner is written back into the spec file's text, the patched
text is loaded again and must give exactly the verified spec (and verify `ok` again); where
`checker.engines.prover` exists, `prove` must not refute it (a refuted candidate is dropped). Nothing
that was not verified is suggested; when no small change works within the budget,
`found=False` and the message says what was tried.

The search is deterministic: a fixed candidate order and a fixed cap on the number of
candidates; the time budget only cuts a search short (and the message then says so).

The parts: checker.fix.edit (an edit and applying it to a Spec), checker.fix.candidates (the
candidate edits per kind of number), checker.fix.order (their order), checker.fix.text (writing
edits into the TOML text), checker.fix.report (FixSuggestion, the diff and the messages); this
module holds the search and the verification of candidates.
"""
from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeproof.checker.fix.candidates import MAX_BYTES, MAX_ITEMS, MAX_PHASE
from pipeproof.checker.fix.edit import Change, _apply_spec, _Edit
from pipeproof.checker.fix.order import CATEGORY_ORDER, CATEGORY_WORDS, _candidates
from pipeproof.checker.fix.report import (
    FixSuggestion, _found_message, _not_found_message, format_fix, unified_diff,
)
from pipeproof.checker.fix.text import _apply_text, _NoEdit
from pipeproof.spec.schema import Spec, SpecError

__all__ = [
    # the public interface
    "Change", "FixSuggestion", "format_fix", "suggest_fix", "unified_diff",
    "CATEGORY_ORDER", "CATEGORY_WORDS", "DEFAULT_MAX_CANDIDATES", "DEFAULT_PROVE_TIMEOUT",
    "MAX_BYTES", "MAX_ITEMS", "MAX_PAIR_SEEDS", "MAX_PHASE", "MIN_MAX_STATES",
    # kept importable from here (tests/test_fix.py uses them)
    "_apply_spec", "_apply_text", "_candidates",
]


DEFAULT_MAX_CANDIDATES = 600     # single changes and pairs re-verified, at most
MAX_PAIR_SEEDS = 40              # pairs are formed from the first this many single changes
DEFAULT_PROVE_TIMEOUT = 20.0     # seconds for prove on the winning candidate
MIN_MAX_STATES = 1_000_000       # state bound of each re-verification (or 10x the spec's own)


# ---------------------------------------------------------------------------------------
# Verification of candidates


def _load_prove():
    """`checker.prove.prove` when the module exists, else None (explicit engine only)."""
    try:
        module = importlib.import_module("pipeproof.checker.engines.prover")
    except ImportError:
        return None
    return getattr(module, "prove", None)


@dataclass
class _Search:
    spec: Spec
    text: str | None
    deadline: float
    budget_s: float
    max_states: int
    max_candidates: int
    prove: object
    prove_timeout: float = 0.0
    tried: int = 0
    refuted: list = field(default_factory=list)   # candidates prove refuted
    refuted_at: list = field(default_factory=list)  # ... at these item counts
    unrendered: int = 0                           # verified, but not writable as TOML
    out_of_time: bool = False

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def exhausted(self) -> bool:
        if self.tried >= self.max_candidates:
            return True
        if self.remaining() <= 0:
            self.out_of_time = True
            return True
        return False

    def explicit(self, spec: Spec):
        from pipeproof.checker.engines import verify
        try:
            return verify(spec, max_states=self.max_states, timeout=max(0.05, self.remaining()))
        except Exception:  # a candidate the engine cannot build is no fix
            return None

    def evaluate(self, edits) -> FixSuggestion | None:
        """Verify one candidate (a tuple of edits); a FixSuggestion when it fixes the spec."""
        self.tried += 1
        candidate = _apply_spec(self.spec, edits)
        patched = ""
        if candidate is None:  # a template parameter: only the text can say what it means
            if self.text is None:
                return None
            try:
                patched = _apply_text(self.text, self.spec, None, edits)
                candidate = _load(patched, self.spec.path)
            except (_NoEdit, SpecError):
                return None
        result = self.explicit(candidate)
        if result is None or result.verdict != "ok":
            return None
        # Write it into the file's text; the text must load as exactly the verified spec
        # and verify ok again.
        if self.text is not None:
            try:
                patched = patched or _apply_text(self.text, self.spec, candidate, edits)
                reloaded = _load(patched, self.spec.path)
            except (_NoEdit, SpecError):
                self.unrendered += 1
                return None
            if reloaded != candidate:
                self.unrendered += 1
                return None
            result = self.explicit(reloaded)
            if result is None or result.verdict != "ok":
                return None
        verified = f"explicit engine: ok, {result.states} states"
        if self.prove is not None:
            note = self._prove(candidate)
            if note is None:
                self.refuted.append(edits)
                return None
            verified += f"; {note}"
        changes = tuple(e.change for e in edits)
        diff = unified_diff(self.text, patched, self.spec.path) if self.text is not None else ""
        return FixSuggestion(found=True, changes=changes, diff=diff, verified=verified,
                             message=_found_message(self.spec, edits, result), patched_text=patched,
                             tried=self.tried)

    def _prove(self, candidate: Spec) -> str | None:
        """A note for `verified`, or None when prove refutes the candidate."""
        try:
            proof = self.prove(candidate,
                               timeout=max(0.5, min(self.prove_timeout, self.remaining())))
        except Exception as err:  # prove does not cover this spec: the explicit check stands
            return f"prove: not applicable ({type(err).__name__}: {err})".replace("\n", " ")
        status = getattr(proof, "status", "unknown")
        if status == "proved":
            return "prove: proved for every item count"
        if status == "violated":
            self.refuted_at.append(getattr(proof, "items", None))
            return None
        reason = getattr(proof, "reason", "") or getattr(proof, "message", "")
        return f"prove: unknown{f' ({reason})' if reason else ''}".replace("\n", " ")


def _load(text: str, path: str) -> Spec:
    from pipeproof.spec.load import load_spec_text
    return load_spec_text(text, path)


def _read_text(spec: Spec) -> str | None:
    """The spec file's text, only when it loads as exactly this spec."""
    try:
        text = Path(spec.path).read_text(encoding="utf-8")
        return text if _load(text, spec.path) == spec else None
    except (OSError, UnicodeDecodeError, SpecError):
        return None


def suggest_fix(spec: Spec, result=None, budget_s: float = 60.0, *, text: str | None = None,
                max_candidates: int = DEFAULT_MAX_CANDIDATES,
                prove_timeout: float = DEFAULT_PROVE_TIMEOUT) -> FixSuggestion:
    """The smallest verified change of `spec`'s integer parameters that makes it safe.

    `result`: the spec's `verify` result, if already known. `text`: the spec file's text
    (default: read from `spec.path`; used only if it loads as exactly `spec`). `budget_s`:
    wall-clock seconds for the whole search; `max_candidates`: re-verifications at most;
    `prove_timeout`: seconds for `prove` on a verified candidate (where checker.engines.prover exists)."""
    from pipeproof.checker.engines import verify
    started = time.monotonic()
    deadline = started + budget_s
    if result is None:
        result = verify(spec, timeout=max(budget_s, 1.0))
    if result.verdict == "ok":
        return FixSuggestion(False, (), "", "", "nothing to fix: the spec verifies ok")
    if result.verdict != "violation":
        return FixSuggestion(False, (), "", "", f"no fix searched: the spec's own verification "
                                                f"was inconclusive ({result.limit})")
    if text is not None and _load_or_none(text, spec.path) != spec:
        text = None
    elif text is None:
        text = _read_text(spec)
    search = _Search(spec=spec, text=text, deadline=deadline, budget_s=budget_s,
                     max_states=max(MIN_MAX_STATES, 10 * result.states),
                     max_candidates=max_candidates, prove=_load_prove(),
                     prove_timeout=prove_timeout)
    singles = _candidates(spec, result)
    for edit in singles:
        if search.exhausted():
            break
        found = search.evaluate((edit,))
        if found is not None:
            return found
    for pair in _pairs(singles):
        if search.exhausted():
            break
        found = search.evaluate(pair)
        if found is not None:
            return found
    return FixSuggestion(False, (), "", "", _not_found_message(spec, result, singles, search),
                         tried=search.tried)


def _load_or_none(text: str, path: str):
    try:
        return _load(text, path)
    except SpecError:
        return None


def _pairs(singles: list[_Edit]):
    """Two changes at different locations, smallest combined rank first (from the first
    MAX_PAIR_SEEDS single changes)."""
    seeds = list(enumerate(singles[:MAX_PAIR_SEEDS]))
    pairs = []
    for ia, a in seeds:
        for ib, b in seeds[ia + 1:]:
            if a.location == b.location or (a.text_only and b.text_only):
                continue
            if a.target[0] == "op" and b.target[0] == "op" and a.target[1:4] == b.target[1:4]:
                continue
            pairs.append((a.tier + b.tier, ia + ib, ia, (a, b)))
    pairs.sort(key=lambda p: p[:3])
    return [p[3] for p in pairs]
