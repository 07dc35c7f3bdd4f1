"""`pipeproof.triton`: check the Triton kernels a script or notebook compiles or launches.

    import pipeproof.triton
    with pipeproof.triton.watch(raise_on_violation=True) as w:
        kernel[grid](x, y, K)
    for r in w.results:
        print(r.summary())

(The folder is `pipeproof_triton/`, installed as `pipeproof.triton`: a top-level folder named
`triton` would shadow Triton itself. The code is checker/triton_watch.py; docs/pytest.md.)
"""
from pipeproof.checker.triton_watch import (KernelResult, PipeproofViolation, Watcher,  # noqa: F401
                                            watch)

__all__ = ["watch", "Watcher", "KernelResult", "PipeproofViolation"]
