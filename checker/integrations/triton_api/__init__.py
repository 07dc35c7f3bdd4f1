"""`pipeproof.triton`: check the Triton kernels a script or notebook compiles or launches.

    import pipeproof.triton
    with pipeproof.triton.watch(raise_on_violation=True) as w:
        kernel[grid](x, y, K)
    for r in w.results:
        print(r.summary())

(The folder is `checker/integrations/triton_api/`, installed as `pipeproof.triton`: a folder named `triton`
on the path would shadow Triton itself. The code is checker/integrations/triton_watch.py; docs/pytest.md.)
"""
from pipeproof.checker.integrations.triton_watch import (KernelResult, PipeproofViolation, Watcher,  # noqa: F401
                                            watch)

__all__ = ["watch", "Watcher", "KernelResult", "PipeproofViolation"]
