"""The build process's entry point: `python -m pipeproof.checker.cli.build_engines`, started by
checker/runtime/jitcache.py (`start_build`, by the name jitcache.BUILD_MODULE: the runtime wing
does not import this module). It compiles every engine, the search, prove's laps and BMC's
replay, under the build lock (checker/runtime/engine_build.py), then writes the ready marker.

It lives here, above the engines and BMC it warms up, so that the imports go one way: the
runtime wing (the floor) and the engines never import back up to it."""
from __future__ import annotations

import sys

from pipeproof.checker.engines import warm_up, warm_up_prove
from pipeproof.checker.runtime import build
from pipeproof.checker.smt import warm_up_bmc


def compile_all() -> None:
    """Load or compile every numba engine: the search, the lap abstraction and prove, BMC's
    program unrolling and replay."""
    warm_up()
    warm_up_prove()
    warm_up_bmc()


def main() -> int:
    return build(compile_all)


if __name__ == "__main__":
    sys.exit(main())
