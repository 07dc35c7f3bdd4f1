"""Tiny specs for the rules' tests (tests/test_semantic_rules.py, test_revised_rules.py,
test_prove_rules.py): `spec_text` writes a spec from role dicts, `load_roles` loads one, and
`Run` steps its compiled model by printed actions (an action picked by its printed form, the
kinds each step commits and each state shows, `kinds_of` a step's or state's bits)."""
from __future__ import annotations

import json

from pipeproof.checker.core.model import KIND_BITS, compile_model
from pipeproof.checker.results.result import KINDS
from pipeproof.spec.load import load_spec_text

BIT = dict(zip(KINDS, KIND_BITS))



def spec_text(roles, *, backend="nvidia", stages=1, pac=1, cac=1, items=1, cluster=1,
              barriers=""):
    """roles: list of dicts with name, side, body and optional count/items/initial_phase/
    initial_stage/prologue/epilogue."""
    lines = ["[pipeline]", f'backend = "{backend}"', f"stages = {stages}",
             f"producer_arrive_count = {pac}", f"consumer_arrive_count = {cac}",
             f"items = {items}"]
    if cluster != 1:
        lines.append(f"cluster_size = {cluster}")
    for r in roles:
        lines += ["", "[[role]]", f'name = "{r["name"]}"', f'side = "{r.get("side", "producer")}"',
                  f'count = {r.get("count", 1)}']
        for key in ("items", "initial_phase", "initial_stage"):
            if key in r:
                lines.append(f"{key} = {r[key]}")
        for key in ("prologue", "body", "epilogue"):
            if key in r:
                lines.append(f"{key} = {json.dumps(r[key])}")
    return "\n".join(lines) + "\n" + barriers


def load_roles(roles, **kw):
    return load_spec_text(spec_text(roles, **kw), "rules.toml")


def kinds_of(bits):
    return tuple(k for k in KINDS if bits >= 0 and bits & BIT[k])


class Run:
    """Step a compiled model by printed actions."""

    def __init__(self, roles, strict_exit=False, **kw):
        self.spec = load_roles(roles, **kw)
        self.m = compile_model(self.spec, strict_exit=strict_exit)
        self.s = self.m.initial_state()
        self.history = []

    def enabled(self):
        return [self.m.format_action(self.s, a) for a in self.m.actions(self.s)]

    def code(self, printed):
        for a in self.m.actions(self.s):
            if self.m.format_action(self.s, a) == printed:
                return a
        raise AssertionError(f"{printed!r} is not enabled; enabled: {self.enabled()}")

    def do(self, printed):
        """Take the enabled action printed as `printed`; returns the kinds the step commits."""
        a = self.code(printed)
        nxt, bits, _ = self.m.apply(self.s, a)
        assert nxt is not None and nxt == self.m.next_state(self.s, a)
        self.history.append(self.s)
        self.s = nxt
        return kinds_of(bits)

    def try_(self, printed):
        """Like `do` but without moving on: the kinds the step would commit."""
        a = self.code(printed)
        _, bits, _ = self.m.apply(self.s, a)
        return kinds_of(bits)

    def state_kinds(self):
        bits, _ = self.m.state_violation_bits(self.s)
        return kinds_of(bits)

    @property
    def view(self):
        return self.m.view(self.s)

    def agent(self, name):
        return self.view["agents"][name]

    def sig(self, name):
        return self.view["signals"][name]

