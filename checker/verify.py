"""Verify one spec: explore, then turn what was found into Results with readable traces.

Traces are rebuilt by re-executing action codes from the initial state through the model, and
rebuilt states are checked against the stored ones, so a trace can never show a state the
search did not reach. Under symmetry reduction the search stores one canonical state per orbit,
and the action that reached a stored state was taken in its canonical parent, not in the
concrete state the trace is at; so the trace walks the stored path and, at each step, takes the
lowest action code enabled in the current concrete state whose successor has the next stored
state as its canonical form (one exists: the concrete state is a permutation of the stored
one). Every trace is thus a real interleaving of concrete agents.
"""
from __future__ import annotations

import time

import numpy as np

from pipeproof.backends.base import JIT
from pipeproof.checker import por as POR
from pipeproof.checker import semantics as S
from pipeproof.checker.explore import INTERRUPTED, Search
from pipeproof.checker.model import Model, compile_model
from pipeproof.checker.result import KINDS, Result
from pipeproof.checker.trace import Event, Step, Trace
from pipeproof.spec.schema import Spec


_warm = False


def warm_up() -> None:
    """Load (or, on a fresh install, compile) the numba engine before any clock starts."""
    global _warm
    if _warm or not JIT:  # as plain Python there is nothing to load
        return
    from pipeproof.checker.jitcache import compile_notice, ensure_engines
    ensure_engines()  # the one shared build (its own process), then loaded from the cache here
    with compile_notice("search engine"):
        Search(compile_model(tiny_spec())).run()
    _warm = True


def tiny_spec() -> Spec:
    """A one-slot pipeline, only for loading the compiled engines."""
    from pipeproof.spec.schema import Op, Role
    return Spec(path="<warm-up>", name="warm-up", backend="nvidia", stages=1,
                producer_arrive_count=1, consumer_arrive_count=1, items=1, roles=(
                    Role("p", "producer", 1, 1, 0, 1, body=(Op("wait_empty"), Op("arrive_full"))),
                    Role("c", "consumer", 1, 1, 0, 0, body=(Op("wait_full"), Op("read")))))


def verify(spec: Spec, max_states: int | None = None, timeout: float | None = None,
           progress: bool = False, symmetry: bool = True, por: bool = True) -> Result:
    """Explore `spec` exhaustively (or to a limit) and report what holds; `seconds` excludes
    the one-time loading of the compiled engine. With `symmetry`, interchangeable agents
    (checker/symmetry.py) are reduced: `states` counts one state per orbit. With `por`, steps
    no other step can tell the time of are taken at once (partial-order reduction, por.py):
    `states` counts the reduced graph. That graph has a violation exactly when the full one
    has, but not always at the same depth; so a violation found there is looked for again
    without the reduction, for the minimal depth, every kind found there and their shortest
    traces."""
    warm_up()
    started = time.monotonic()
    model = compile_model(spec)
    search = Search(model, max_states=max_states, timeout=timeout, progress=progress,
                    symmetry=symmetry, por=por)
    kinds, depth = _run(search)
    if kinds and por and search.limit != INTERRUPTED:
        left = None if timeout is None else max(timeout - (time.monotonic() - started), 1e-3)
        full = Search(model, max_states=max_states, timeout=left, progress=progress,
                      symmetry=symmetry)
        full_kinds, full_depth = full.run()
        if full_kinds:
            search, kinds, depth = full, full_kinds, full_depth
        else:  # a limit stopped it first: the reduced search's trace is real, maybe not shortest
            search.limit = full.limit
    result = Result(spec=spec, verdict="ok", states=search.n_stored, transitions=search.transitions,
                    seconds=0.0, limit=search.limit, max_depth=search.max_depth, por=search.por)
    if kinds:
        result.verdict = "violation"
        result.kinds = tuple(KINDS[k] for k in kinds)
        result.traces = {KINDS[k]: build_trace(model, search, k) for k in kinds}
        # After the reduced search (the full one ran out of room) the depth is its trace's.
        result.depth = len(result.traces[result.kind].steps) if search.por else depth
    elif search.limit:
        result.verdict = "inconclusive"
    result.seconds = time.monotonic() - started
    return result


def _run(search: Search):
    """`search.run()`, where a Ctrl-C anywhere in it (a chunk of the search is covered by the
    search itself; growing its arrays is not) ends it like a limit, with the counts so far."""
    try:
        return search.run()
    except KeyboardInterrupt:
        search.limit = INTERRUPTED
        return search.shallowest_seen()


# ------------------------------------------------------------------ traces

def concrete_codes(model: Model, search: Search, k: int) -> list[int]:
    """Action codes of a real interleaving that reaches violation kind k at the minimal depth
    (after a partial-order reduced search: at the depth that search found it)."""
    if search.classes.shape[0] == 0 and not search.por:
        return search.counterexample(k)  # the stored states are the concrete ones
    bit = 1 << k
    state = model.initial_state()
    codes = []
    for i, idx in enumerate(search.index_path(int(search.vrec[k, 2]))[1:]):
        target = search.store[idx]
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is None or bits & (S.TRAP | S.INFLIGHT_FULL):
                continue
            local = POR.merged_steps(model, search.future, nxt) if search.por else ([], nxt)
            if np.array_equal(search.key_of(local[1]), target):
                break
        else:
            raise AssertionError(f"internal: no step {i + 1} of the {KINDS[k]} trace reaches "
                                 f"the stored state")
        codes += [code] + local[0]
        state = local[1]
    if search.vrec[k, 3] >= 0:  # the violation is a step: the lowest action that commits it
        for code in range(model.n_actions()):
            nxt, bits, _ = model.apply(state, code)
            if nxt is not None and 0 < bits != S.INFLIGHT_FULL and bits & bit:
                codes.append(code)
                break
        else:
            raise AssertionError(f"internal: no last step of the {KINDS[k]} trace violates it")
    return codes


def build_trace(model: Model, search: Search, k: int) -> Trace:
    is_step = search.vrec[k, 3] >= 0  # recorded as a step violation (else as a state property)
    return trace_from_codes(model, concrete_codes(model, search, k), k, is_step,
                            check_end=lambda state: _check_stored(model, search, state,
                                                                  int(search.vrec[k, 2])))


def trace_from_codes(model: Model, codes: list, k: int, is_step: bool, check_end=None) -> Trace:
    """The Trace of the run `codes` ending in violation kind index k: a step violation of its
    last step (`is_step`) or a property of its last state. Every step is re-executed by
    `model.apply`; nothing before the end may violate anything, and the end must violate k.
    Every engine's traces (explicit, BMC) are built here, so they are explained alike."""
    bit = 1 << k
    state = model.initial_state()
    initial = model.view(state)
    steps, det, last_bits, before = [], None, 0, state
    for i, code in enumerate(codes):
        nxt, bits, det = model.apply(state, code)
        if bits < 0:
            raise AssertionError(f"internal: step {i + 1} of the {KINDS[k]} trace is not enabled")
        last = i == len(codes) - 1
        violates = last and bits > 0
        if nxt is None or (bits and not last):
            raise AssertionError(f"internal: step {i + 1} of the {KINDS[k]} trace is broken")
        stage, phase = model.action_stage_phase(state, code)
        steps.append(Step(
            index=i + 1, event=Event(**_event_args(model.action_event(state, code))),
            action=model.format_action(state, code), actor=model.actor(state, code),
            stage=stage, phase=phase, changes=tuple(describe_changes(model, state, nxt)),
            state=model.view(nxt),
            violations=tuple(KINDS[j] for j in range(S.N_KINDS) if violates and bits & (1 << j))))
        before, state, last_bits = state, nxt, bits
    if is_step:
        if not last_bits & bit:
            raise AssertionError(f"internal: the last step of the {KINDS[k]} trace does not violate it")
        reason = explain_step(model, k, det[k * S.DET_W:(k + 1) * S.DET_W], before, codes[-1])
    else:
        sbits, sdet = model.state_violation_bits(state)
        if not sbits & bit:
            raise AssertionError(f"internal: the {KINDS[k]} trace does not end in a violation")
        if check_end is not None:
            check_end(state)
        reason = explain_state(model, k, sdet[k * S.DET_W:(k + 1) * S.DET_W], state)
    return Trace(spec_name=model.spec.name, spec_path=model.spec.path, backend=model.spec.backend,
                 initial=initial, steps=tuple(steps), kind=KINDS[k], reason=reason)


def _event_args(ev: dict) -> dict:
    if ev["kind"] == "agent":
        return {"kind": "agent", "agent": ev["agent"], "op": ev["op"], "pc": ev["pc"]}
    return {"kind": ev["kind"], "entry": ev["entry"]}


def _check_stored(model, search, state, idx):
    if not np.array_equal(search.key_of(state), search.store[idx]):
        raise AssertionError("internal: rebuilt trace state differs from the stored state")


def describe_changes(model: Model, before, after) -> list[str]:
    """What the step changed in signals, slots, barriers and the in-flight set."""
    va, vb = model.view(before), model.view(after)
    lines = []
    for name, old in va["signals"].items():
        new = vb["signals"][name]
        diffs = [f"{f} {old[f]}->{new[f]}" for f in old if old[f] != new[f]]
        if diffs:
            lines.append(f"{name}: {', '.join(diffs)}")
    for name, old in va["slots"].items():
        if old != vb["slots"][name]:
            lines.append(f"{name}: item {model.tag_label(old)}->{model.tag_label(vb['slots'][name])}")
    for name, old in va["barriers"].items():
        new = vb["barriers"][name]
        diffs = [f"{f} {old[f]}->{new[f]}" for f in old if old[f] != new[f]]
        if diffs:
            lines.append(f"{name}: {', '.join(diffs)}")
    gone = list(va["inflight"])
    added = []
    for e in vb["inflight"]:
        if e in gone:
            gone.remove(e)
        else:
            added.append(e)
    lines += [f"in flight: +{_entry_text(model, e)}" for e in added]
    lines += [f"in flight: -{_entry_text(model, e)}" for e in gone]
    return lines


def _entry_text(model: Model, e: dict) -> str:
    ring = "" if e["ring"] == "main" else f"{e['ring']}."
    if e["kind"] == "copy":
        return (f"copy {model.tag_text(e['tag'])} -> cta{e['cta']}.{ring}slot[{e['stage']}] "
                f"({e['bytes']} B)")
    if e["kind"] == "read":
        return (f"async read of {model.tag_text(e['tag'])} by {e['agent']} from "
                f"cta{e['cta']}.{ring}slot[{e['stage']}]")
    after = f" after {e['after']} more read(s) of {e['agent']}" if e["after"] else ""
    return f"commit {e['n']} -> cta{e['cta']}.{ring}empty[{e['stage']}]{after}"


# ------------------------------------------------------------------ reasons

def _agent_name(model, a):
    return model.agents[a].name if 0 <= a < len(model.agents) else "a copy"


def explain_step(model: Model, k: int, det, state, code) -> str:
    x, y, z, w = (int(v) for v in det)
    actor = model.actor(state, code)
    kind = KINDS[k]
    if kind == "read_before_fill":
        slot = model.slot_name(x)
        if z != w:
            held = "nothing" if z < 0 else model.tag_text(z)
            return f"{_agent_name(model, y)} reads {model.tag_text(w)} from {slot}, which holds {held}"
        return (f"{_agent_name(model, y)} reads {model.tag_text(w)} from {slot} while a copy into "
                f"it is still in flight")
    if kind == "overwrite_before_drain":
        return (f"{actor} stores {model.tag_text(z)} into {model.slot_name(x)} while "
                f"{_agent_name(model, w)} has not yet read {model.tag_text(y)} there")
    if kind == "phase_alias":
        return _alias_text(model, x, y, z, w, "tries")
    if kind == "over_arrival":
        if w == 0:
            return (f"{actor} arrives {y} on {model.sig_name(x)} with only {z} pending "
                    f"(an arrive update above pending traps the hardware)")
        return (f"{actor} completes phase {y} of {model.sig_name(x)}, which no wait or try observed "
                f"(the barrier ran two phases ahead of every observer)")
    if kind == "tx_range":
        if w == 0:
            return f"{actor} uses {y} bytes, above the tx-count limit 2^20-1 = {(1 << 20) - 1}"
        return f"tx of {model.sig_name(x)} reaches {y}, outside +-(2^20-1) (the hardware traps)"
    if kind == "inflight_at_exit":
        what = {0: f"cta{x} exits ({actor} finishes) while a copy, commit or async read still targets it",
                1: f"{actor} updates {model.sig_name(z) if z >= 0 else 'a signal'} of cta{x}, which has exited",
                2: f"{actor} issues a copy or commit to cta{x}, which has exited",
                3: f"{actor} targets cta{x}, which has exited"}
        return what.get(w, f"cta{x} is targeted after it exited")
    return kind


def _alias_text(model, sig, a, phase, phase_no, verb):
    from pipeproof.backends import nvidia
    agent = model.agents[a]
    ring = (sig // 2 // model.max_stages) % model.rings
    k = nvidia.intended_phase(phase, agent.initial_phases[ring])  # the signal's own ring
    return (f"{agent.name} {verb} {model.sig_short(sig)} at phase {phase} (meaning signal phase {k}) "
            f"but the signal is at phase {phase_no}, outside {k}..{k + 1}: its parity answers for "
            f"another phase")


def explain_state(model: Model, k: int, det, state) -> str:
    kind = KINDS[k]
    if kind == "phase_alias":
        x, y, z, w = (int(v) for v in det)
        return _alias_text(model, x, y, z, w, "waits on")
    if kind == "deadlock":
        return describe_blocked(model, state)
    return kind


def describe_blocked(model: Model, state) -> str:
    """`producer[0] waits on empty[0] (phase 1), consumer[0..1] wait on full[1] (phase 0)`."""
    groups = []  # [(role, what, [indices])]
    for a, agent in enumerate(model.agents):
        op = model.current_op(state, a)
        if op is None:
            continue
        sig, phase = S.at_blocking_wait(model.tables, np.array(state, dtype=np.int64), a)
        if sig >= 0:
            what = f"on {model.sig_short(sig)} (phase {phase})"
        elif op.name in ("sync", "sync_wait"):
            what = f"at {op.name} {op.barrier}"
        else:
            what = f"at {op.text}"
        prefix = agent.name.rsplit("[", 1)[0]
        if groups and groups[-1][0] == prefix and groups[-1][1] == what:
            groups[-1][2].append(agent.index)
        else:
            groups.append((prefix, what, [agent.index]))
    parts = []
    for prefix, what, idx in groups:
        many = len(idx) > 1
        who = f"{prefix}[{idx[0]}..{idx[-1]}]" if many and idx == list(range(idx[0], idx[-1] + 1)) \
            else (f"{prefix}[{','.join(map(str, idx))}]" if many else f"{prefix}[{idx[0]}]")
        parts.append(f"{who} {'wait' if many else 'waits'} {what}")
    return ", ".join(parts)
