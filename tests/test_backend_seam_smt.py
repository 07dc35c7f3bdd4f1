"""Outside backends/, the symbolic engines and the lap abstraction reach a backend's rules only
through its registered record (issue 46): the toy third backend (tests/toy_backend.py, whose
record names no signal_model) goes through BMC under its own rules, and gets a clean answer
from what was argued for mbarriers and counters only: no pre-check finding, `prove` unknown."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests import paths
from tests.toy_backend import TOY_SPEC

# In a process of its own, as tests/test_backend_protocol.py runs the toy: plain Python, the
# toy registered and its dispatcher branch patched in.
TOY_RUN = textwrap.dedent("""
    import json, os, sys
    os.environ["PIPEPROOF_JIT"] = "0"
    sys.path.insert(0, sys.argv[1])
    from pipeproof.backends import dispatch
    from pipeproof.backends.capabilities import register
    from tests import toy_backend
    register(toy_backend.RECORD)
    for name, fn in toy_backend.dispatch_with_toy().items():
        setattr(dispatch, name, fn)
    from pipeproof.checker.engines import prove, verify
    from pipeproof.checker.smt.bmc import verify_bmc
    from pipeproof.checker.smt.precheck_spec import precheck
    from pipeproof.spec.load import load_spec_text
    out = {}
    for initial in (1, 0):
        spec = load_spec_text(sys.argv[2].replace("INITIAL", str(initial)), "toy.toml")
        e, b, p = verify(spec), verify_bmc(spec), prove(spec, timeout=60)
        out[initial] = {"explicit": [e.verdict, e.kind, e.depth],
                        "bmc": [b.verdict, b.kinds[0] if b.kinds else None, b.depth],
                        "precheck": [str(f) for f in precheck(spec)],
                        "prove": [p.status, p.reason]}
    print(json.dumps(out))
""")


def run_toy():
    done = subprocess.run([sys.executable, "-c", TOY_RUN, str(paths.ROOT), TOY_SPEC],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_toy_backend_through_bmc_precheck_and_prove():
    out = run_toy()
    for initial in ("1", "0"):
        got = out[initial]
        # BMC reads the toy's own update and wait rule: the explicit engine's verdict, kind
        # and (shortest) depth
        assert got["bmc"] == got["explicit"], got
        # the pre-check's arguments are for mbarriers and counters: silence, not a guess
        assert got["precheck"] == []
    assert out["1"]["explicit"][0] == "ok"
    assert out["0"]["explicit"][:2] == ["violation", "overwrite_before_drain"]
    # the lap abstraction: no argument for the toy's signals, so no proof, and no guess
    assert out["1"]["prove"][0] == "unknown"
    assert "signal_model" in out["1"]["prove"][1]
