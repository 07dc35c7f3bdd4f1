"""Export a spec as a Promela (SPIN) or Murphi (Rumur, CMurphi) model of the same transition system.

`to_promela(spec, strict_exit=False)` and `to_murphi(spec, symmetry=False, strict_exit=False)`
return model text (`strict_exit`: rule R2's strict reading, as pipeproof's `--strict-exit`). Both are written
from the compiled `checker.model.Model`, so they take the very programs pipeproof explores
(prologue, body once per item, epilogue; `@leader` ops kept only for agent 0 of a role;
`drain` expanded into `stages` steps) and keep its step granularity: every op of an agent is
one atomic step (a Promela `d_step`, a Murphi rule), and so is every landing of an in-flight
copy and every firing of an in-flight commit.

The subset exported (anything else is a `SpecError` naming the feature, one line): a
backend whose signals are mbarriers (its record's `phase_parity`: nvidia), its rules printed
from its record; clusters (`cluster_size = K`, roles limited to some CTAs with `ctas`, and the
`to=` targets self, leader, peer and all) and several rings (`[ring.NAME]`, `ring=` on any
ring op, `initial_phase` per ring); roles with counts, `items`, `initial_stage`,
`initial_phase`, prologue/body/epilogue and `@leader`; the ops wait_full, wait_empty
(`unless=ready`), try_full, try_empty, arrive_full, arrive_empty (with a count), expect_tx,
copy (lands later, stores its item and completes its bytes), write, write_async (stores at
issue, then the slot is being written until it finishes), read, read_async (checks the slot
when issued, then stays in flight until it finishes), read_wait, commit_empty and commit_full
(fire later), advance, reset, drain, and the named barriers of `[barrier.NAME]` with sync,
sync_arrive and sync_wait; `every=` / `at=` on body ops; nested loops (`tiles`, `k_blocks`,
lowered by spec/load_loops.py into guarded body ops), a tile-level ring's fills and reads
storing and expecting the tile, item / k_blocks. Not exported: the amd backend (counters) and
fills for a later item (`ahead=`).

Async reads are the explicit engine's (checker/core/semantics.py step, fire_entry, reads_pending;
checker/core/inflight.py): a read_async is an in-flight entry naming its agent and its place in the
agent's FIFO; only the agent's oldest may finish, at any later step, and finishing changes
nothing but the FIFO; `read_wait n` is enabled while at most n of the agent's async reads are
in flight (always, for an agent that issues none); a commit_empty names its agent, how many
of the agent's async reads and how many of its commit entries are in flight, and fires only
after those finished and fired (an agent's commits fire in the order it issued them, the
entries of one `to=all` commit in any order: rule R1); an async read still in flight is an unfinished read of its item for
overwrite_before_drain, and something in flight for inflight_at_exit and for deadlock. An
async write (write_async) is an entry of the same FIFO (commits, read_wait and the exit count
it): while it is in flight a read of its slot is read_before_fill, and it is no unfinished read
(docs/rules.md "Async writes").

Clusters and rings (issue 18) are the explicit engine's: each CTA has its own signals, slots
(with their slot parts, only the parts its CTA has) and named barriers, per ring; an agent
keeps stage, phase, `ready` and its phase_alias window per ring. Where an op lands is
spec.schema `targets` (semantics.targets_mask compiled): an arrival or expect_tx to another CTA
takes effect at once, a `to=all` copy is one in-flight landing per destination CTA, a commit
fires in the CTA it targets. A CTA is gone when all its agents finished (one with no agents
is gone from the start). Rule R2 (semantics.step, fire_entry): an arrival, copy or commit
aimed at a gone CTA, and the step that makes a CTA gone while an async read of it or a copy
or commit from another CTA is in flight into it, are `inflight_at_exit`; the CTA's own copies
and commits in flight then are the engine's warning `unawaited_at_exit`, not reported by the
models, and their landing or firing into the gone CTA is no violation. With
`strict_exit=True` anything in flight into the CTA at that step, and any landing or firing
into a gone CTA, is `inflight_at_exit` (the reading before the rule). Groups never span CTAs: with
`symmetry=True`, agents interchangeable within one CTA are a scalarset; CTAs themselves are
not permuted.

The Murphi state is pipeproof's state vector field for field (agents' pc, item, at_sync and
sync_arrive generation, per ring stage, phase and ready, and for an agent whose program has a
`reset` of a ring its phase window's (k', ph') per stage and signal; per CTA, ring and stage
each signal's phase_no, pending, tx and `observed` flag and the slot tags, one per slot part;
each named barrier's arrivals and generation per CTA; the in-flight entries as a sorted array,
i.e. a canonical multiset, an entry naming its destination CTA, ring and stage, a copy's its
part, in a cluster whether a copy or commit comes from another CTA, an async read its agent
and FIFO place, a commit its agent and the reads and commit entries it waits for), so Rumur without symmetry reduction stores exactly as many states as
pipeproof on a spec that holds. Fields that never change in a spec (tx without copies,
`ready` without a try, window records without a reset) are left out; that changes no count.
With `symmetry=True` each group of two or more interchangeable agents (same role, same
program, same slot parts: a producer-side agent that fills owns its parts and is a group of
its own) is indexed by a `scalarset`, so Rumur's symmetry reduction applies, except a group
whose agents issue async reads or commits (an in-flight entry names its agent by number).

The rules are the explicit engine's (docs/rules.md): a fill stores into its slot part (a
consumer-side fill into every part), a read checks the parts the program fills for its tag
in its slot (semantics.read_miss, part_filled_for at the read's stage: rule R3), an
overwrite is judged per part, and an agent with a `reset` has its phase_alias window from its
last passed wait (the backend's intended_after and in_window_at, printed).

Properties, as far as each language states them:

| kind | Murphi | Promela |
| --- | --- | --- |
| deadlock | Rumur's `--deadlock-detection stuck`; a rule "finished" (a self-loop) makes the end of a run a valid end | SPIN's invalid end state; agents that finished have terminated, the landing and monitor processes block at `end` labels |
| read_before_fill, overwrite_before_drain | `error` in the step | `assert` in the step |
| phase_alias | `invariant` (waiters) and `error` in a try | a monitor process (waiters) and `assert` in a try |
| over_arrival, tx_range | `error` in the update (traps, and a phase nobody observed) | `assert` in the update |
| inflight_at_exit | `error` when a CTA's last agent finishes with an async read of it or a peer's copy or commit in flight into it, or when an arrival, copy or commit targets a gone CTA (strict: anything in flight into it, and a landing or firing into it) | `assert`, the same |

The Murphi error strings and the Promela assertion expressions begin with the kind's name,
so the first word of a tool's report is the kind. A model also reports running out of its
in-flight capacity (pipeproof's "inconclusive") as `inflight_capacity`.

Run them as: `spin -a model.pml && cc -O2 [-DVECTORSZ=N] -o pan pan.c && ./pan -m100000`
(a cluster's state vector may outgrow pan's default 1024 bytes: export_run.spin_vectorsz), and
`rumur --deadlock-detection stuck [--symmetry-reduction heuristic] model.m -o m.c &&
cc -O2 -o m m.c -lpthread && ./m`.

The code, by concern: checker/models/ir.py (the refusals and the IR both languages are written
from: agent groups, their program walk, value ranges), checker/models/signals.py (the backend's
signal rules printed in either language: the one place the exports meet the backend's rules
module), checker/models/steps.py (the step of each
op, read once off checker/core/program.py's OP_EFFECTS into a list of actions that both languages
print), checker/models/promela.py, checker/models/murphi.py, and checker/models/run.py (running SPIN and Rumur, parsing their
verdicts). This module is the public API and re-exports their names.
"""
from __future__ import annotations

from pipeproof.checker.models.ir import (
    ENTRY_COMMIT, ENTRY_COPY, FORMATS, IR, KIND_MESSAGES, SUBSET, UNSUPPORTED_OPS, Group,
    check_exportable,
)
from pipeproof.checker.models.murphi import to_murphi
from pipeproof.checker.models.promela import to_promela
from pipeproof.checker.models.run import (
    KINDS, ToolRun, _pipeline, measured, parse_rumur, parse_spin, rumur_steps, run_rumur, run_spin,
    search_depth, spin_steps, spin_vectorsz,
)
from pipeproof.spec.schema import Spec

# The public names of the export, wherever they are defined (the IR and checks in ir.py,
# each language in export_promela.py / export_murphi.py, running the tools in export_run.py).
__all__ = ["ENTRY_COMMIT", "ENTRY_COPY", "FORMATS", "IR", "KINDS", "KIND_MESSAGES", "SUBSET",
           "UNSUPPORTED_OPS", "Group", "ToolRun", "check_exportable", "export", "measured",
           "parse_rumur", "parse_spin", "rumur_steps", "run_rumur", "run_spin", "search_depth",
           "spin_steps", "spin_vectorsz", "to_murphi", "to_promela", "_pipeline"]


def export(spec: Spec, fmt: str, symmetry: bool = False, strict_exit: bool = False) -> str:
    """`fmt` is 'promela' or 'murphi'; symmetry applies to Murphi only; `strict_exit`: a CTA
    gone with its own copies or commits in flight is inflight_at_exit (rule R2's strict
    reading, pipeproof's --strict-exit)."""
    if fmt == "promela":
        return to_promela(spec, strict_exit=strict_exit)
    if fmt == "murphi":
        return to_murphi(spec, symmetry=symmetry, strict_exit=strict_exit)
    raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")

