"""The user-shaped GEMM of issue 35 (benchmarks/user_shaped.py: per-CTA producers, multicast,
math warpgroups with async reads releasing every CTA's slot) as spec text, at the seed the tests
pin (35): used by tests/test_por_reach.py, test_prove.py and test_interrupts.py."""
from __future__ import annotations


def user_shaped_text(stages: int, warpgroups: int, items: int, ctas: int) -> str:
    """The spec of `ctas` CTAs of `warpgroups` math warpgroups over `stages` stages, `items`
    items."""
    from benchmarks.user_shaped import user_shaped_toml
    return user_shaped_toml(stages, warpgroups, items, 35, ctas=ctas)
