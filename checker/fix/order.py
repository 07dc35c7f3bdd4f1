"""Which candidate edits `--suggest-fix` (checker.fix.suggest) tries, in what order: all kinds from
checker.fix.candidates, deduplicated, ordered by tier, then by the kind of parameter the
violation kind puts first (CATEGORY_ORDER), then by the roles and rings of the failing trace,
then by size."""
from __future__ import annotations

import re

from pipeproof.checker.fix.candidates import (
    _barrier_candidates, _bytes_candidates, _count_candidates, _guard_candidates,
    _items_candidates, _opcount_candidates, _phase_candidates, _stage_candidates,
    _template_candidates,
)
from pipeproof.checker.fix.edit import _Edit
from pipeproof.spec.schema import MAIN_RING, Spec


CATEGORY_WORDS = {
    "count": "arrive counts", "opcount": "per-op arrive counts", "phase": "initial phases",
    "stage": "initial stages", "bytes": "expect_tx/copy bytes", "guard": "@leader guards",
    "items": "items per role", "barrier": "named barrier counts",
    "template": "template tile sizes",
}
# Which kind of parameter to try first, by the violation kind found.
CATEGORY_ORDER = {
    "deadlock": ("count", "phase", "bytes", "items", "barrier", "guard", "opcount", "stage",
                 "template"),
    "read_before_fill": ("phase", "bytes", "guard", "count", "opcount", "stage", "items",
                         "barrier", "template"),
    "overwrite_before_drain": ("count", "phase", "guard", "opcount", "stage", "bytes", "barrier",
                               "items", "template"),
    "phase_alias": ("count", "phase", "guard", "opcount", "stage", "bytes", "items", "barrier",
                    "template"),
    "over_arrival": ("count", "guard", "opcount", "bytes", "phase", "stage", "items", "barrier",
                     "template"),
    "tx_range": ("bytes", "template", "guard", "count", "opcount", "phase", "stage", "items",
                 "barrier"),
    "inflight_at_exit": ("count", "phase", "items", "guard", "opcount", "barrier", "stage",
                         "bytes", "template"),
}


def _trace_ranks(result) -> tuple[dict, set]:
    """Roles by how recently they act in the primary trace (0 = last), and rings it names."""
    trace = result.traces.get(result.kind) if result.kind else None
    if trace is None:
        return {}, set()
    ranks = {}
    for step in reversed(trace.steps):
        name = step.actor.split(".")[-1].split("[")[0]
        if "[" in step.actor and name not in ranks:
            ranks[name] = len(ranks)
    if trace.steps:
        for agent in trace.steps[-1].state.get("agents", {}).values():
            if not agent.get("done") and agent.get("role") not in ranks:
                ranks[agent["role"]] = len(ranks)
    words = trace.reason + " " + " ".join(c for s in trace.steps[-3:] for c in s.changes)
    rings = set(re.findall(r"cta\d+\.([A-Za-z_]\w*)\.(?:full|empty|slot)", words))
    if re.search(r"cta\d+\.(?:full|empty|slot)\[", words):
        rings.add(MAIN_RING)
    return ranks, rings


def _candidates(spec: Spec, result) -> list[_Edit]:
    kind = result.kind or "deadlock"
    order = CATEGORY_ORDER.get(kind, CATEGORY_ORDER["deadlock"])
    if spec.tiles is not None:
        # Nested loops: the loaded body is the lowered one (spec.load_loops), whose op
        # positions are not the file's sections; only the edits of counts, phases and stages
        # are written back for now.
        edits = _count_candidates(spec) + _phase_candidates(spec) + _stage_candidates(spec)
    else:
        edits = (_count_candidates(spec) + _phase_candidates(spec) + _stage_candidates(spec) +
                 _items_candidates(spec) + _bytes_candidates(spec) + _opcount_candidates(spec) +
                 _guard_candidates(spec) + _barrier_candidates(spec) +
                 _template_candidates(spec, kind))
    role_rank, rings = _trace_ranks(result)
    far = len(spec.roles) + 1

    def trace_rank(e: _Edit) -> int:
        roles = [role_rank.get(s, far) for s in e.scope if s in role_rank]
        if roles:
            return min(roles)
        return 0 if any(s in rings for s in e.scope) else far

    seen, unique = set(), []
    for index, e in enumerate(edits):
        key = (e.location, repr(e.new))
        if key not in seen:
            seen.add(key)
            unique.append((index, e))
    unique.sort(key=lambda p: (p[1].tier, order.index(p[1].category), trace_rank(p[1]),
                               p[1].delta, p[0]))
    return [e for _, e in unique]
