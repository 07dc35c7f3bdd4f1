"""An op made of existing effects is one line in spec/ops.py: nothing else lists op names.

A fresh process adds `signal_full` with the effects of `arrive_full` to spec/ops.py's table
before anything else is imported, then checks that a spec written with it is parsed, verified
by the compiled engine and by BMC, exported to Promela and Murphi, and generated as CUDA
exactly as the same spec written with `arrive_full` (the op's name and code aside)."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.paths import EXAMPLE_PATHS, ROOT

CHILD = r'''
import json, sys
from pipeproof.spec import ops
ops.OP_EFFECTS["signal_full"] = ops.OP_EFFECTS["arrive_full"]
ops.OPS = tuple(ops.OP_EFFECTS)
from pipeproof.checker.models.exporter import export
from pipeproof.checker.smt.bmc import verify_bmc
from pipeproof.checker.engines.verifier import verify
from pipeproof.cuda_ref.codegen import generate
from pipeproof.spec.load import load_spec_text
text = open(sys.argv[1]).read()
out = {}
for name in ("arrive_full", "signal_full"):
    spec = load_spec_text(text.replace('"arrive_full', '"' + name), "x.toml")
    r, b = verify(spec), verify_bmc(spec)
    out[name] = {
        "ops": sorted({op.name for role in spec.roles for op in role.body}),
        "explicit": [r.verdict, r.states, r.transitions, r.kinds, r.depth,
                     {k: t.to_json() for k, t in r.traces.items()}],
        "bmc": [b.verdict, b.kinds, b.depth, {k: t.to_json() for k, t in b.traces.items()}],
        "promela": export(spec, "promela"), "murphi": export(spec, "murphi"),
        "cuda": generate(spec).source,
    }
print(json.dumps(out))
'''


def _same_but_name(a, b):
    def norm(x):  # (the spec's title names arrive_full in both)
        return json.dumps(x).replace("signal_full", "OP").replace("arrive_full", "OP")
    return norm(a) == norm(b)


def test_an_op_made_of_existing_effects_needs_only_spec_ops():
    path = next(p for p in EXAMPLE_PATHS if p.stem == "bug_every_lane_arrive_full")
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    old, new = out["arrive_full"], out["signal_full"]
    assert "signal_full" in new["ops"] and "arrive_full" not in new["ops"]
    assert old["explicit"][0] == "violation" and old["explicit"][1] > 0
    for key in ("explicit", "bmc", "promela", "murphi"):
        assert _same_but_name(old[key], new[key]), key
    # the CUDA kernel logs each op's code: the new op has its own (the last), the rest is equal
    cuda_old, cuda_new = old["cuda"], new["cuda"]
    assert cuda_old.count("\n") == cuda_new.count("\n")
    assert cuda_old != cuda_new
