"""The search over the orders of equal-timestamp events, and its answer, `ConformResult`.

`Replay(model, log, source, max_nodes).run()` takes the log's timestamp groups in order and,
within each, tries the orders of its events depth first, list order first, backtracking into
earlier groups when a later one fails. The rules one event must meet are in
cuda_ref/conform_step.py, those of the end of the log in cuda_ref/conform_end.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pipeproof.checker.core import semantics as S
from pipeproof.checker.core import Model
from pipeproof.checker.results import KINDS
from pipeproof.cuda_ref.conform_end import end_problem
from pipeproof.cuda_ref.conform_events import program_order_check, resolve_events, timestamp_groups
from pipeproof.cuda_ref.conform_log import event_text
from pipeproof.cuda_ref.conform_step import SearchLimit, candidates


@dataclass(frozen=True)
class ConformResult:
    ok: bool
    index: int | None            # list index of the first event that is not a step (None: none)
    message: str                 # one line
    steps: int                   # events replayed as steps (on the furthest path when not ok)
    state: tuple | None = field(default=None, compare=False, repr=False)  # final model state
    view: dict | None = field(default=None, compare=False, repr=False)    # model.view(state)
    inconclusive: bool = False   # the search bound was reached before an answer
    order: tuple = field(default=(), compare=False, repr=False)  # event indices as replayed
    unchecked: int = 0           # events logged after the trapping step (a trap log only)


UNLOGGED_LANDING = -1  # a child of the search that lands a copy no event records


def _longer(best, done):
    """The conforming prefix that checks more steps (`best` may be None)."""
    return done if best is None or done.steps > best.steps else best


class Replay:
    def __init__(self, model: Model, log: dict, source: str, max_nodes: int):
        self.m = model
        self.log = log
        self.outcome = log["outcome"]
        self.max_nodes = max_nodes
        self.steps, self.timeouts = resolve_events(model, log, source)
        self.groups = timestamp_groups(self.steps)   # sorts self.steps into timestamp order
        self.group_of = [g for g, grp in enumerate(self.groups) for _ in grp]
        self.cut = program_order_check(model, self.steps)
        # per group g: the agents with a step event in group g or later (a trap log's
        # unlogged trapping step), and how many events groups g and later hold
        # (one entry past the last group too: a step that ends the last group asks for it)
        self.agents_from = [set() for _ in range(len(self.groups) + 2)]
        self.events_from = [0] * (len(self.groups) + 2)
        for g in range(len(self.groups) - 1, -1, -1):
            self.agents_from[g] = self.agents_from[g + 1] | {
                self.steps[k].agent for k in self.groups[g] if self.steps[k].agent >= 0}
            self.events_from[g] = self.events_from[g + 1] + len(self.groups[g])

    def run(self) -> ConformResult:
        """Depth-first search over the orders of each equal-timestamp group, list order first.

        A node is (group, events of it left, model state, flags); flags = (the path trapped,
        violation bits the model reported on it). Nodes are memoised, so backtracking from a
        later failure enumerates each group's orders at most once per distinct start state
        (2^k nodes for a group of k mutually independent events, in the worst case); the
        total is bounded by `max_nodes`, and reaching it makes the answer inconclusive.
        Reaching the group of an event that breaks its agent's program order ends the search:
        every order fails there.
        """
        m = self.m
        init = m.initial_state()
        self.best = None     # furthest failure: (index, message, state, steps consumed)
        self.nodes = 0
        if not self.groups:
            return self._end(init, (False, 0), 0, None) or self._failed()
        visited = set()
        cut_group = self.group_of[self.cut[0]] if self.cut else len(self.groups) + 1
        if cut_group == 0:
            return self._cut(init, 0)
        stack = [self._frame(0, self.groups[0], init, (False, 0), 0, None)]
        trapped = None  # the best path to a trap with events of its timestamp left over
        try:
            while stack:
                g, remaining, state, flags, consumed, path, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    continue
                self.nodes += 1
                if self.nodes > self.max_nodes:
                    raise SearchLimit(f"the search bound ({self.max_nodes} nodes) was reached")
                k, nxt, c_flags = child
                if k == UNLOGGED_LANDING:  # a copy lands unrecorded (a trap log: see _children)
                    key = (g, remaining, nxt, c_flags)
                    if key not in visited:
                        visited.add(key)
                        stack.append(self._frame(g, remaining, nxt, c_flags, consumed, path))
                    continue
                if k is None:  # a trapping step the log does not record (see _children)
                    later = len(remaining) + self.events_from[g + 1]
                    trapped = _longer(trapped, self._trapped(nxt, c_flags, consumed, path, later,
                                                             unlogged=c_flags[2]))
                    continue
                c_remaining = tuple(x for x in remaining if x != k)
                c_path = (k, path)
                cg = g
                if not c_remaining:
                    cg = g + 1
                    c_remaining = self.groups[cg] if cg < len(self.groups) else ()
                key = (cg, c_remaining, nxt, c_flags)
                if key in visited:
                    continue
                visited.add(key)
                if c_flags[0]:  # the step trapped: the log is checked up to it
                    later = len(c_remaining) + self.events_from[cg + 1]
                    done = self._trapped(nxt, c_flags, consumed + 1, c_path, later)
                    if cg != g or not c_remaining:
                        return done
                    # events of the trap's own timestamp are left: an order that places them
                    # before the trap checks more of the log, so it is tried first
                    trapped = _longer(trapped, done)
                    continue
                if cg == cut_group:
                    return self._cut(nxt, consumed + 1)
                if cg == len(self.groups):
                    done = self._end(nxt, c_flags, consumed + 1, c_path)
                    if done is not None:
                        return done
                    continue
                stack.append(self._frame(cg, c_remaining, nxt, c_flags, consumed + 1, c_path))
        except SearchLimit as lim:
            if trapped is not None:
                return trapped
            index, message, state, steps = self.best or (None, "", init, 0)
            text = f"inconclusive: {lim}" + (f"; furthest failure: {message}" if message else "")
            return ConformResult(False, index, text, steps, state, m.view(state), inconclusive=True)
        return trapped if trapped is not None else self._failed()

    def _trapped(self, state, flags, consumed, path, later, unlogged=None) -> ConformResult:
        """The replayed path reached a step on which the model traps (only a `trap` log gets
        here: conform_step admits such a step nowhere else). A trap kills the context, but
        other warps may still log before it dies: their `later` events, and any timeout, are
        unchecked, not wrong (PTX promises nothing after the trap)."""
        n_to = len(self.timeouts)
        unchecked = later + n_to
        kinds = [k for i, k in enumerate(KINDS) if flags[1] & (1 << i)]
        how = "" if unlogged is None else (
            f", at {self.m.agents[unlogged].name}'s next step, which the log does not record (its "
            f"warp stopped inside the step and logged nothing after it)")
        msg = (f"conforms up to the trap: {consumed} step(s) are a path of the model that ends in "
               f"a trap ({', '.join(kinds)}){how}"
               + (f"; {unchecked} event(s) logged after it are unchecked" if unchecked else ""))
        return ConformResult(True, None, msg, consumed, state, self.m.view(state),
                             order=self._order(path), unchecked=unchecked)

    def _order(self, path) -> tuple:
        order = []
        while path is not None:
            k, path = path
            if k is not None:
                order.append(self.steps[k].index)
        return tuple(reversed(order))

    def _cut(self, state, consumed) -> ConformResult:
        k, message = self.cut
        return ConformResult(False, self.steps[k].index, message, consumed, state, self.m.view(state))

    def _failed(self) -> ConformResult:
        index, message, state, steps = self.best
        return ConformResult(False, index, message, steps, state, self.m.view(state))

    def _frame(self, g, remaining, state, flags, consumed, path):
        return (g, remaining, state, flags, consumed, path,
                self._children(g, remaining, state, flags, consumed))

    def _children(self, g, remaining, state, flags, consumed):
        """(event, next state, next flags) for each remaining event of the group that is a
        step from `state`, in list order. When the earliest remaining event is no step here,
        that is recorded as a failure. Then, in a `trap` log, (UNLOGGED_LANDING, state, flags)
        for each in-flight copy that may land now: the kernel keeps its copies' landing records
        in device memory, which a trap takes with it, so a trap log holds none. Last, in a
        `trap` log, (None, state, (True, bits, a)) for each agent a that logs nothing more and
        whose next step traps in the model: the trapping step itself may be missing, its warp
        having stopped inside it (the kernel writes a step's record after its effect), which
        the search takes only when no order of the logged events does better."""
        for pos, k in enumerate(remaining):
            ev = self.steps[k]
            cands, reason = candidates(self.m, self.outcome, state, ev)
            if not cands and pos == 0:
                self._fail(consumed, ev.index, f"event {ev.index} ({event_text(ev.raw)}): {reason}", state)
            for _, nxt, bits in cands:
                yield k, nxt, (flags[0] or bool(bits & S.TRAP), flags[1] | (bits & 0x7F))
        if self.outcome == "trap":
            n_agents = len(self.m.agents)
            for j, e in enumerate(self.m.inflight_entries(state)):
                if self.m.decode_entry(e)["kind"] != "copy":
                    continue
                nxt, bits, _ = self.m.apply(state, n_agents + j)
                if nxt is not None and not bits & S.TRAP:
                    yield UNLOGGED_LANDING, nxt, (flags[0], flags[1] | (bits & 0x7F))
            pending = self.agents_from[g + 1] | {self.steps[k].agent for k in remaining}
            for a in range(len(self.m.agents)):
                if a in pending:
                    continue
                nxt, bits, _ = self.m.apply(state, a)
                if nxt is not None and bits & S.TRAP:
                    yield None, nxt, (True, flags[1] | (bits & 0x7F), a)

    def _fail(self, consumed, index, message, state):
        if self.best is None or consumed > self.best[3]:
            self.best = (index, message, state, consumed)

    def _end(self, state, flags, consumed, path):
        """The answer when the replayed path `path` (last event first) ends well, else None
        (the failure is recorded)."""
        m = self.m
        problem = end_problem(m, self.log, self.timeouts, state, flags)
        if problem is None:
            n_to = len(self.timeouts)
            extra = f", {n_to} timeout(s) stuck as the model says" if n_to else ""
            kinds = [k for i, k in enumerate(KINDS) if flags[1] & (1 << i)]
            reported = f"; the model reports {', '.join(kinds)} on it" if kinds else ""
            msg = (f"conforms: {consumed} step(s) in {len(self.groups)} timestamp group(s) are a path "
                   f"of the model{extra} (outcome {self.outcome}){reported}")
            return ConformResult(True, None, msg, consumed, state, m.view(state),
                                 order=self._order(path))
        index, message = problem
        self._fail(consumed, index, message, state)
        return None
