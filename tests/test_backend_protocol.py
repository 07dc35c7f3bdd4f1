"""The backend protocol (backends/protocol.py): every registered backend runs through the same
cases, through its rules module and through the compiled dispatchers; a code without a
dispatcher branch raises instead of running another backend's rules; and a toy third backend
(tests/toy_backend.py), registered here, is accepted by the loader and checked end to end."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from pipeproof.backends import dispatch, printed, protocol
from pipeproof.backends.base import (COMPLETED, EMPTY, FULL, RAN_AHEAD, TRAP_OVER_ARRIVAL,
                                     TRAP_TX_RANGE)
from pipeproof.backends.capabilities import BACKENDS, backend, register, unregister
from tests import paths, toy_backend
from tests.toy_backend import TOY_SPEC

REGISTERED = sorted(BACKENDS)
TRAPS = TRAP_OVER_ARRIVAL | TRAP_TX_RANGE


def rules(name):
    return backend(name).rules


def arrive(mod, sig, expected, n=1, observed=1):
    a, b, c, out = mod.update(*sig, expected, n, 0, observed)
    return (a, b, c), out


@pytest.mark.parametrize("name", REGISTERED)
def test_rules_module_meets_the_protocol(name):
    assert protocol.check(rules(name)) == []


def test_protocol_check_names_what_is_missing():
    import types
    bare = types.ModuleType("bare")
    problems = protocol.check(bare)
    assert any("no function update" in p for p in problems)
    assert any("no constant TX_LIMIT" in p for p in problems)


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_codes_have_a_dispatcher_branch(name):
    assert backend(name).code in dispatch.CODES


@pytest.mark.parametrize("name", REGISTERED)
@pytest.mark.parametrize("expected", [1, 2, 3])
def test_a_consumer_waits_for_a_whole_lap_of_arrivals(name, expected):
    """The one contract every signal keeps: a consumer at lap k passes its full wait once the
    k + 1-th lap of `expected` arrivals is in, not one arrival before; arrivals within the count
    never trap."""
    mod = rules(name)
    sig = mod.init(expected)
    for lap in range(3):
        for i in range(expected):
            assert not mod.signal_ready(*sig, expected, lap, FULL)
            sig, out = arrive(mod, sig, expected)
            assert out & TRAPS == 0
        assert mod.signal_ready(*sig, expected, lap, FULL)


@pytest.mark.parametrize("name", REGISTERED)
def test_a_producer_passes_a_fresh_empty_signal(name):
    """A producer starts at lap 1 (DESIGN's convention): its first wait on a fresh empty signal
    passes, its second (lap 2) waits for the consumers' first lap."""
    mod = rules(name)
    sig = mod.init(2)
    assert mod.signal_ready(*sig, 2, 1, EMPTY)
    assert not mod.signal_ready(*sig, 2, 2, EMPTY)
    sig, _ = arrive(mod, sig, 2, n=2)
    assert mod.signal_ready(*sig, 2, 2, EMPTY)


@pytest.mark.parametrize("name", REGISTERED)
def test_a_wait_that_passes_is_in_its_window(name):
    mod = rules(name)
    sig = mod.init(1)
    for lap in range(4):
        sig, _ = arrive(mod, sig, 1)
        assert mod.in_window_at(sig[0], mod.intended_phase(lap, 0))


@pytest.mark.parametrize("name", REGISTERED)
def test_dispatch_is_the_rules_module(name):
    """backends/dispatch.py, compiled and plain, gives what the rules module gives."""
    record = backend(name)
    mod = record.rules
    for fn in (lambda d, c, *a: d(c, *a), lambda d, c, *a: getattr(d, "py_func", d)(c, *a)):
        assert fn(dispatch.init, record.code, 2) == mod.init(2)
        sig = mod.init(2)
        assert fn(dispatch.update, record.code, *sig, 2, 1, 0, 1) == mod.update(*sig, 2, 1, 0, 1)
        for phase in range(3):
            for kind in (FULL, EMPTY):
                assert fn(dispatch.signal_ready, record.code, *sig, 2, phase, kind) == \
                    mod.signal_ready(*sig, 2, phase, kind)
        assert fn(dispatch.intended_phase, record.code, 3, 1) == mod.intended_phase(3, 1)
        assert fn(dispatch.intended_after, record.code, 2, 3, 5) == mod.intended_after(2, 3, 5)
        assert fn(dispatch.in_window_at, record.code, 2, 1) == mod.in_window_at(2, 1)
        assert fn(dispatch.tx_limit, record.code) == mod.TX_LIMIT


@pytest.mark.parametrize("plain", [False, True], ids=["compiled", "plain"])
def test_an_unknown_code_raises_instead_of_running_another_backends_rules(plain):
    code = max(dispatch.CODES) + 1
    for name, args in (("init", (1,)), ("update", (0, 1, 0, 1, 1, 0, 1)),
                       ("signal_ready", (0, 1, 0, 1, 0, FULL)), ("in_window_at", (0, 0)),
                       ("intended_phase", (0, 0)), ("tx_limit", ())):
        fn = getattr(dispatch, name)
        with pytest.raises(ValueError, match="unknown backend code"):
            (getattr(fn, "py_func", fn) if plain else fn)(code, *args)


@pytest.mark.parametrize("name", REGISTERED)
def test_printed_c_form_is_the_rule(name):
    """backends/printed.py prints each registered backend's rules as C from the one definition:
    the printed expression evaluates to what the rule computes."""
    mod = rules(name)
    pb = printed.printed_backend(mod)
    s = lambda v: printed.sym(v, "cuda")
    expr = pb.signal_ready(s("a"), s("b"), s("c"), 2, s("ph"), FULL)
    for a in range(6):
        for ph in range(3):
            assert bool(printed.evaluate(expr, {"a": a, "b": 0, "c": 0, "ph": ph})) == \
                bool(mod.signal_ready(a, 0, 0, 2, ph, FULL))


def test_nvidia_update_reports_running_ahead():
    """An mbarrier phase completed while nobody observed the one before: RAN_AHEAD (the model's
    over_arrival without a trap, measured on an H200: docs/rules.md)."""
    nv = rules("nvidia")
    sig = nv.init(1)
    sig, out = arrive(nv, sig, 1, observed=0)
    assert out == COMPLETED                        # phase 0: nothing before it to observe
    sig, out = arrive(nv, sig, 1, observed=0)
    assert out == COMPLETED | RAN_AHEAD
    _, out = arrive(nv, sig, 1, observed=1)
    assert out == COMPLETED


# ------------------------------------------------------------------ a toy third backend

@pytest.fixture
def toy():
    register(toy_backend.RECORD)
    yield toy_backend.RECORD
    unregister("toy")


def test_toy_backend_meets_the_protocol_and_the_shared_cases(toy):
    assert protocol.check(toy.rules) == []
    mod = toy.rules
    sig = mod.init(2)
    assert not mod.signal_ready(*sig, 2, 0, FULL)
    sig, _ = arrive(mod, sig, 2, n=2)
    assert mod.signal_ready(*sig, 2, 0, FULL)


def test_the_loader_accepts_a_registered_backend_and_refuses_what_it_cannot_express(toy, tmp_path):
    from pipeproof.spec.load import load_spec_text
    from pipeproof.spec.schema import SpecError
    spec = load_spec_text(TOY_SPEC.replace("INITIAL", "1"), "toy.toml")
    assert spec.backend == "toy"
    with pytest.raises(SpecError, match="expect_tx"):
        load_spec_text(TOY_SPEC.replace("INITIAL", "1").replace('"write", "arrive_full"', '"expect_tx 64", "copy 64"'), "toy.toml")


def test_register_refuses_a_module_that_misses_the_protocol():
    from pipeproof.backends.capabilities import Backend
    broken = Backend("broken", 9, "pipeproof.backends.protocol", tx_bytes=False, clusters=False,
                     phase_parity=False, wrap32=False, signal_fields=("count",))
    with pytest.raises(ValueError, match="no function init"):
        register(broken)
    assert "broken" not in BACKENDS


# Runs in a process of its own: plain Python (PIPEPROOF_JIT=0), the toy registered and its
# dispatcher branch patched in, as a real backend's edit of backends/dispatch.py would add it.
TOY_RUN = textwrap.dedent("""
    import json, os, sys
    os.environ["PIPEPROOF_JIT"] = "0"
    sys.path.insert(0, sys.argv[1])
    from pipeproof.backends import dispatch
    from pipeproof.backends.capabilities import register
    from tests import toy_backend
    register(toy_backend.RECORD)
    if sys.argv[2] == "branch":
        for name, fn in toy_backend.dispatch_with_toy().items():
            setattr(dispatch, name, fn)
    from pipeproof.checker.engines import verify
    from pipeproof.spec.load import load_spec_text
    out = {}
    for initial in (1, 0):
        try:
            r = verify(load_spec_text(sys.argv[3].replace("INITIAL", str(initial)), "toy.toml"))
            out[initial] = [str(r.verdict), r.kind, r.states]
        except ValueError as e:
            out[initial] = ["raised", str(e), 0]
    print(json.dumps(out))
""")


def run_toy(mode):
    done = subprocess.run([sys.executable, "-c", TOY_RUN, str(paths.ROOT), mode, TOY_SPEC],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_toy_backend_runs_end_to_end_once_dispatch_has_its_branch():
    """With its three edits the toy is checked by the explicit engine under its own rules: the
    correct ring holds, and a producer at initial phase 0, a deadlock on amd's wrapped
    thresholds, overwrites a slot under the toy's unwrapped ones (its first threshold is -1)."""
    out = run_toy("branch")
    assert out["1"][:2] == ["ok", None]
    assert out["0"][:2] == ["violation", "overwrite_before_drain"]


def test_toy_backend_without_its_dispatch_branch_raises():
    """Registered but without its dispatcher branch, the engine stops on the unknown code: it
    never runs nvidia's or amd's rules for it."""
    out = run_toy("no-branch")
    assert out["1"][0] == "raised" and "unknown backend code" in out["1"][1]
