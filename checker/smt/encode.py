"""The explicit engine's transition relation (checker/core/semantics.py) as a symbolic transition
system over Z3 terms, for bounded model checking (checker/smt/bmc.py).

Programs. Every agent's program is finite, so it is unrolled once into the list of ops the agent
will execute (`Instr`: pc, item, op, and the stage and phase of the op's ring before it runs),
with the engine's own `settle_pc`/`next_pc` (guards, empty bodies, `drain` steps). An agent's
program position `pos` is an index into that list (`pos == len`: finished), held in the order
encoding (Bools `ge[k]` = pos >= k), and everything the explicit state keeps per agent that
follows from the position (pc, item, stage and phase per ring) is a static function of it. What
stays dynamic per agent is `ready` per ring, `at_sync`, the generation of its last
`sync_arrive` per barrier, and, for an agent with a `reset` of a ring, its phase window's record
(k', ph') per signal of that ring (`wk`, `wp`: docs/rules.md "The phase_alias window after
`reset`"; which agents keep one is state_layout.window_field's answer, the intended phase is
the backend's intended_after).

In-flight entries are *instances*: one per async op of the unrolled program and destination
CTA (a `to=all` copy has one per CTA). Instance i is in flight iff its Bool is true; it is set
when its agent executes the op and cleared when it lands / fires / finishes. The explicit
engine keeps the same entries as a sorted multiset; the orders it imposes are kept here:
an agent's async reads finish oldest first, and a commit fires only after the reads and the
commits its agent issued before it have finished / fired (`waits_on`; the instances of one
`to=all` commit in any order among themselves). Unlike the explicit engine there is no
in-flight capacity.

A CTA's exit (the step that finishes its last agent) is inflight_at_exit while an async read of
its agents, or a copy or commit issued by another CTA, targets it (`exit_violation`); its own
copies and commits alone are the warning unawaited_at_exit, which BMC does not report, and a
landing or firing into a gone CTA is by itself no violation, except with strict_exit
(T.cfg[C_STRICT_EXIT]), which keeps both as inflight_at_exit.

Signals, slots (one tag per slot part: checker/core/program.py slot_parts, read through the model's
part table with semantics.part_in / part_filled_for) and barriers are the explicit engine's
fields, one term per step, as signed
bit-vectors wide enough that no operation wraps (`_width`; `WIDTH = 0` gives unbounded Ints
instead). Signals go through the registered backend's rules over Z3 terms
(`smt.symbolic_rules`, backends/protocol.py: init, update and its outcome bits,
signal_ready, intended_phase/after, in_window_at); a frame keeps the signal words the
backend's signal_bounds let change (encode_frame.signal_words). Nothing about mbarriers or
counters is written here.

Frames: `Frame.v` maps a field name to its term at one step. A field that no action can change
keeps its initial constant (so a spec without tx never mentions tx); a field some action can
change gets a fresh variable per step, constrained to an if-then-else over the actions that
write it (actions writing the same value share one branch).

Steps: step t -> t+1 chooses one action `act` (order-encoded, `Choice`): `act < A` is agent
`act` taking its current op; `act == A + i` is instance i landing / firing / finishing.
`Step.kinds` gives, per violation bit, the condition under which the step commits it;
`Step.trap` when it traps (no successor); `Encoding.state_kinds(frame)` the state properties
(deadlock, phase_alias).

Reductions (both only remove runs; bmc.py argues why the minimal depth and every kind at it
survive): `symmetry` (of two interchangeable agents in the same local state, the lower one moves
first) and `lex_order` / `canonical_order` (a run's prefix in the lexicographically least order
among the permutations of commuting steps; `Step.foot` records what each action touches).

Files. `Encoding` is put together here from its parts: the Z3 term helpers and Frame, Choice,
Step in encode_terms.py; the unrolled program (Instr, Instance) in encode_program.py; fields
and predicates on a frame in encode_frame.py; one step in encode_step.py; the reductions in
encode_reduce.py. `WIDTH` stays here (tests set `encode.WIDTH`), and every name the others
import from this module is still here.
"""
from __future__ import annotations

from pipeproof.backends.capabilities import backend
from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.smt import solvers as smt
from pipeproof.checker.smt.encode_frame import _Frames, signal_words
from pipeproof.checker.smt.encode_program import ENTRY_OF_ISSUE, Instance, Instr, _Program
from pipeproof.checker.smt.encode_reduce import COMMUTING, _Reductions
from pipeproof.checker.smt.encode_step import KIND_BITS, _Steps
from pipeproof.checker.smt.encode_terms import Choice, Frame, Step

__all__ = ["COMMUTING", "KIND_BITS", "WIDTH", "Choice",
           "Encoding", "Frame", "Instance", "Instr", "Step"]

WIDTH = None  # None: bit-vectors wide enough for every value (`_width`); 0: unbounded Ints


class Encoding(_Program, _Frames, _Steps, _Reductions):
    """The symbolic transition system of one compiled model."""

    def __init__(self, model: Model):
        self.model = model
        self.T = model.tables
        self.A = len(model.agents)
        signals = backend(model.backend)
        self.rules = smt.symbolic_rules(signals.code)  # its rules over Z3 terms
        # the frame's names of the signal words (a, b, c, observed) it keeps (None: constant),
        # and which of them an update without tx bytes changes
        self.sig_words, self.sig_words_no_tx = signal_words(signals)
        self.signal_model = signals.signal_model  # what the partial-order reduction assumes
        # (the frame's signal fields bmc.py's frame check reads back: ph, pend, tx, obs or cnt)
        self.parity = signals.phase_parity
        self.ctas = model.ctas
        self.rings = model.rings
        self.stages = [r.stages for r in model.ring_specs]
        self.n_bar = len(model.barrier_names)
        # PTX's strict reading of a CTA's exit (Model(spec, strict_exit=True)): its own copies
        # and commits in flight are inflight_at_exit too, not the warning unawaited_at_exit
        self.strict_exit = int(self.T.cfg[S.C_STRICT_EXIT]) == 1
        self.progs = [self._unroll(a) for a in range(self.A)]
        self.lens = [len(p) for p in self.progs]
        self.instances = []
        self.inst_of = {}
        for a, prog in enumerate(self.progs):
            for k, ins in enumerate(prog):
                for dst in self._issue_targets(a, ins):
                    self.inst_of[(a, k, dst)] = len(self.instances)
                    kind = ENTRY_OF_ISSUE[ins.eff.issues]
                    value = ins.op.n if ins.eff.arrives_n else ins.tag  # a commit's count n
                    nbytes = ins.op.n if ins.eff.tx else 0              # a copy's bytes
                    part = ins.part if ins.eff.issues == "copy" else 0  # where a copy lands
                    self.instances.append(Instance(kind, a, k, dst, ins.ring, ins.stage, value,
                                                   nbytes, part, ins.eff.updates,
                                                   ins.eff.async_write))
        self.I = len(self.instances)
        # Every step moves some agent's position (a blocked sync is moved on later by its
        # releaser, without a step of its own) or retires an instance: no run is longer.
        self.longest_run_bound = sum(self.lens) + self.I
        self.cta_agents = [[a for a in range(self.A) if model.agents[a].cta == c]
                           for c in range(self.ctas)]
        self._static_tables()
        self.sym_pairs = self._symmetric_pairs()
        self.width = self._width() if WIDTH is None else WIDTH
        self._changing = self._changing_fields()
