"""A PTX kernel's partitions to a spec: the Mojo front end's builder (spec/mojo/build.py: rings
are barrier pairs full then empty, reads after each full wait, copy bytes from slot strides),
named for `pipeproof ptx`."""
from __future__ import annotations

from pipeproof.spec.mojo.build import MojoBuilder


class PtxBuilder(MojoBuilder):
    TOOL = "pipeproof ptx"
    HEADER = ("# Rings are the kernel's mbarrier arrays (full, then the empty array after it);",
              "# roles its warp (or warpgroup) programs. Each op's source line is in the comment.")
