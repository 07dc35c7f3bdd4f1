"""Generated specs with the [expressiveness] features (hypothesis, derandomized).

Two rings (the main input ring and an `acc` ring handed to an epilogue role), async reads with
`read_wait` and `commit_empty`, `every=K`/`at=j` guards, `sync_arrive`/`sync_wait` on a counted
barrier, and roles limited to some CTAs of a cluster, each mutated at random (the generator is
tests/generators_expressive.py). Properties: verify never raises; it is deterministic; every
counterexample replays through the independent replayer (tests/replay.py) and ends in its
kind; role order does not change the verdict.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from tests.generators_expressive import designs, to_toml
from tests.replay import replay

MAX_STATES = 20_000
SETTINGS = dict(derandomize=True, deadline=None, database=None, max_examples=60,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def check(d):
    spec = load_spec_text(to_toml(d), "generated.toml")
    a = verify(spec, max_states=MAX_STATES)
    b = verify(spec, max_states=MAX_STATES)
    assert (a.verdict, a.kinds, a.states, a.transitions, a.depth) == \
        (b.verdict, b.kinds, b.states, b.transitions, b.depth)
    for kind, trace in a.traces.items():
        assert [s.action for s in trace.steps] == [s.action for s in b.traces[kind].steps]
        outcome = replay(spec, trace.to_json())
        assert kind in outcome.kinds, (kind, outcome.kinds, to_toml(d))
    if a.verdict == "ok":
        assert not a.limit
    return a


@settings(**SETTINGS)
@given(designs())
def test_expressive_specs_verify_deterministically_and_replay(d):
    check(d)


@settings(**SETTINGS)
@given(designs())
def test_expressive_specs_do_not_depend_on_role_order(d):
    a = check(d)
    spec = load_spec_text(to_toml(d, roles=d["roles"][::-1]), "generated.toml")
    b = verify(spec, max_states=MAX_STATES)
    if "inconclusive" not in (a.verdict, b.verdict):
        assert (a.verdict, a.kinds, a.depth, a.states) == (b.verdict, b.kinds, b.depth, b.states)


def test_the_generator_reaches_ok_and_violations():
    """The properties above must not pass on trivial specs only."""
    seen = set()

    @settings(**SETTINGS)
    @given(designs())
    def collect(d):
        r = verify(load_spec_text(to_toml(d), "generated.toml"), max_states=MAX_STATES)
        text = to_toml(d)
        seen.add(r.verdict)
        seen.update(r.kinds)
        seen.update(f for f in ("read_async", "ring=acc", "sync_wait", "every=", "ctas")
                    if f in text)

    collect()
    assert {"ok", "violation", "read_async", "ring=acc", "sync_wait", "every=", "ctas"} <= seen, seen
    assert len(seen & {"deadlock", "overwrite_before_drain", "read_before_fill",
                       "inflight_at_exit"}) >= 3, seen
