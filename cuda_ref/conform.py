"""Conformance: replay an event log recorded on a GPU through the model (issue 5, part 6).

`conform(spec, log)` answers whether the log is a path of the model: every recorded step,
taken in timestamp order, is an enabled transition from the state reached so far and agrees
with what the model says about it. `load_log(path)` reads and validates a log file.

The parts, each readable whole (this module keeps the rules and the entry point, and
imports the names back so that `from pipeproof.cuda_ref.conform import ...` keeps working):

- cuda_ref/conform_log.py: the log file's format, `load_log`, `validate_log`, `event_text`;
- cuda_ref/conform_events.py: the events resolved to model agents, their timestamp groups,
  and each agent's program order, checked before the search;
- cuda_ref/conform_step.py: one event from one model state (matching a step);
- cuda_ref/conform_end.py: the rules of the end of the log;
- cuda_ref/conform_search.py: the search over orders of equal-timestamp events, and
  `ConformResult`;
- cuda_ref/conform_text.py: the model's side of the messages.

Rules of the replay
-------------------

Order. Events are taken in order of `t` (stable: list order breaks ties first). Events with
EQUAL `t` form a group that may be taken in any order that works; the search over a group's
orders is a depth-first search, list order first, memoised on (group, events left, model
state) and bounded by `max_nodes`; it backtracks into earlier groups when a later one fails.
Each agent's own events must follow its program (pc, item, stage, phase are fixed by the
program alone); the first event that cannot, in any order of its timestamp group, ends the
search as soon as the replay reaches its group. There is no other slack: a landing recorded
after the step that needed it conforms only when both carry the same `t` (the issue's rule).
So the recorder must stamp a signalling op (arrive, expect_tx, copy issue, commit, write, a
`sync` arrival: a `sync` event is the agent's arrival) no later than it takes effect, a
waiting op (wait, try, read) no earlier than it passed, and a landing no later than the
first step that relied on it.

Matching a step. Agent `agent` must be at `pc` with that op; `item` must be its item number
(body ops only: outside the body the item is not compared); `stage` and `phase` (the lap
count, not its parity) must be its stage and phase on the op's ring (ring ops only); the step
must be enabled. A `try_*` step's `ready` must be the model's answer. A `read`/`read_async`
is `ok` only when the model's slot holds the reader's item, and `tag_mismatch` only when the
model reports read_before_fill on that step (another item, or a copy into the slot still in
flight: the GPU may see one region of the item missing while the tag matches; a read that saw
everything is `ok` even with such a copy in flight, since its data may have arrived). A landing, firing or finish must match
an in-flight entry of the model (cta, stage, item/tag, bytes, n, agent) that may complete now.
A step on which the model traps (an arrive above pending, a tx-count out of range) conforms
only in a log whose outcome is `trap`, and the log is checked up to it: a trap kills the
context, but other warps may log a few more events before it dies, and those (and any timeout)
are reported as unchecked (`ConformResult.unchecked`), not as a log that does not conform.
Two more things a trap takes with it: the trapping step's own record (the kernel writes a
step's record after its effect; a warp that stopped inside the step wrote none), so in a trap
log the model may take, last, a trapping step of an agent that logs nothing more; and the
copies' landing records (kept in device memory), so in a trap log an in-flight copy may land
without an event.

At the end of the log (only after every step was replayed):

- Timeouts (at most one per agent): the agent must be at that op (pc, op, item, stage, phase
  as above), and the op must not be enabled in the final state, nor after everything still
  in flight has completed (the GPU had the whole deadline to land its copies, which are
  logged only when observed): some order of completing every in-flight copy, commit and
  async read must leave every timed-out op disabled.
- Completeness (every outcome but `trap`): each agent has finished its program or has a
  timeout event; a log that stops an agent early is not a record of a run. A `trap` kills
  the context, so a trap log is checked only as a prefix of a path.
- Outcome `read_before_fill` / `overwrite_before_drain` / `inflight_at_exit`: the model must
  report that kind on some step of the replayed path (the GPU sees the tag mismatch at a read;
  the model reports an overwrite at the store that caused it; a CTA left with something in
  flight into it, or updated after it is gone, is marked on the step's event).
- The log itself must be consistent (checked by `load_log`): `ok` has no timeouts and no
  tag mismatches, `deadlock` has a timeout.

A log naming an agent the spec lacks, or a CTA it lacks, is bad input (`LogError`), not a
non-conforming log.
"""
from __future__ import annotations

import os

from pipeproof.checker.core import Model, compile_model
from pipeproof.cuda_ref.conform_end import SETTLE_LIMIT, TAG_OUTCOMES
from pipeproof.cuda_ref.conform_log import (
    ASYNC_OPS, OUTCOMES, READ_OPS, RESULTS, LogError, event_text, load_log, validate_log,
)
from pipeproof.cuda_ref.conform_search import ConformResult, Replay

__all__ = [
    "ASYNC_OPS", "DEFAULT_MAX_NODES", "OUTCOMES", "READ_OPS", "RESULTS", "SETTLE_LIMIT",
    "TAG_OUTCOMES", "ConformResult", "LogError", "conform", "event_text", "load_log",
    "validate_log",
]

DEFAULT_MAX_NODES = 200_000


def conform(spec, log: dict, *, source: str | None = None,
            max_nodes: int = DEFAULT_MAX_NODES) -> ConformResult:
    """Replay `log` (a dict as `load_log` returns) through the model of `spec` (a Spec, a
    compiled Model, or a spec file path; a path may raise SpecError). Raises `LogError` for bad input: a malformed log, or one naming an agent,
    CTA or ring the spec lacks."""
    if isinstance(spec, (str, os.PathLike)):
        from pipeproof.spec.load import load_spec
        spec = load_spec(os.fspath(spec))
    model = spec if isinstance(spec, Model) else compile_model(spec)
    source = source or "<log>"
    validate_log(log, source)
    return Replay(model, log, source, max_nodes).run()
