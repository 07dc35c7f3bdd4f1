"""One edit of a spec's number, for `--suggest-fix` (checker.fix.suggest): `Change` (what the user is
shown: a TOML location, the old and the new value), `_Edit` (a candidate: its category, tier,
what it changes and which roles and rings it touches) and `_apply_spec`, which makes edits on a
`Spec` (the file's text is edited by checker.fix.text)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from pipeproof.spec.schema import MAIN_RING, Spec


class Change(NamedTuple):
    """One changed value: its TOML location, the old value and the new one.

    Locations: `pipeline.KEY`, `ring.NAME.KEY`, `role.R.KEY` (`initial_phase`, `initial_stage`,
    `items`), `role.R.initial_phase.RING`, `role.R.SECTION[i]` (an op: old and new op text),
    `barrier.NAME.count` (old None: counted from its roles)."""
    location: str
    old: object
    new: object


@dataclass(frozen=True)
class _Edit:
    location: str
    category: str
    old: object
    new: object
    tier: int            # 0: a value the spec implies; 1: a small delta; 2: other values
    delta: float         # how far from the old value (ordering within a tier)
    target: tuple        # what to change (see _apply_spec / _apply_text)
    scope: tuple = ()    # role and ring names it touches (trace ranking)
    text_only: bool = False  # a template parameter: only the file text can change it

    @property
    def new_op_name(self) -> str:
        return self.target[4].name if self.target[0] == "op" else ""

    @property
    def change(self) -> Change:
        return Change(self.location, self.old, self.new)


# ---------------------------------------------------------------------------------------
# Applying edits to a Spec


def _replace_role(spec: Spec, name: str, **changes) -> Spec:
    return replace(spec, roles=tuple(replace(r, **changes) if r.name == name else r
                                     for r in spec.roles))


def _apply_spec(spec: Spec, edits) -> Spec | None:
    """The spec with the edits made, or None when one of them only exists in the file text."""
    for e in edits:
        kind = e.target[0]
        if e.text_only:
            return None
        if kind == "ring":
            _, ring, key = e.target
            if ring == MAIN_RING:
                spec = replace(spec, **{key: e.new})
            else:
                spec = replace(spec, rings=tuple(replace(r, **{key: e.new}) if r.name == ring
                                                 else r for r in spec.rings))
        elif kind == "phase":
            _, name, ring = e.target
            if ring == MAIN_RING:
                spec = _replace_role(spec, name, initial_phase=e.new)
            else:
                role = spec.role(name)
                spec = _replace_role(spec, name, ring_phases=tuple(
                    (g, e.new if g == ring else p) for g, p in role.ring_phases))
        elif kind == "role":
            _, name, key = e.target
            spec = _replace_role(spec, name, **{key: e.new})
        elif kind == "op":
            _, name, section, i, new_op = e.target
            ops = getattr(spec.role(name), section)
            spec = _replace_role(spec, name, **{section: ops[:i] + (new_op,) + ops[i + 1:]})
        elif kind == "barrier":
            spec = replace(spec, barriers=tuple(replace(b, count=e.new)
                                                if b.name == e.target[1] else b
                                                for b in spec.barriers))
        else:
            raise AssertionError(f"unknown edit {e.target}")
    return spec
