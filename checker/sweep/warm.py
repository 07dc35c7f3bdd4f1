"""Imported by the local worker pool's fork server (checker/sweep/run.py LocalPool): loads
the engines named in $PIPEPROOF_SWEEP_WARM ("verify" or "verify,prove") once, so every worker
forked from it starts with them loaded. Importing it elsewhere does nothing."""
import os

_need = os.environ.get("PIPEPROOF_SWEEP_WARM", "")
if _need:
    try:
        from pipeproof.checker.sweep.run import warm
        warm({"prove": "prove" in _need.split(",")})
    except Exception:  # a worker then loads them itself, and reports what goes wrong
        pass
