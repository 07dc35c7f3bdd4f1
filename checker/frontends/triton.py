"""The Triton front end's reader: TTGIR (`compiled.asm["ttgir"]`, or an MLIR_ENABLE_DUMP dump)
or `KERNEL.py::NAME`, a kernel the user names: the file's `KERNELS[NAME]` entry (fn, signature,
constexprs, target, options; tests/triton_kernels/*.py are examples), or a plain jit function
with --target/--signature/--constexpr, compiled with the installed Triton, on the CPU
(docs/triton.md). A thin adapter over spec/ttgir/: parse, run each partition, build.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from pipeproof.checker.frontends.protocol import KernelIR, Reading, ReadOptions, TripCounts, program_of
from pipeproof.spec.schema import SpecError


def installed_triton() -> str | None:
    try:
        from importlib.metadata import version
        return version("triton")
    except Exception:  # not installed: the newest lowering pipeproof knows
        return None


def _entry_from_options(fn, name: str, options: dict) -> dict:
    """A KERNELS-style entry for a plain jit function from --target/--signature/--constexpr."""
    signature, constexprs = {}, {}
    for text in options.get("signature", ()):
        key, sep, typ = text.partition("=")
        if not sep or not key.strip() or not typ.strip():
            raise SpecError(f"--signature {text!r}: expected NAME=TYPE (e.g. K=i32, x_ptr=*fp16)")
        signature[key.strip()] = typ.strip()
    for text in options.get("constexprs", ()):
        key, sep, val = text.partition("=")
        val = val.strip()
        if not sep or not key.strip():
            raise SpecError(f"--constexpr {text!r}: expected NAME=VALUE")
        if val in ("True", "False", "true", "false"):
            constexprs[key.strip()] = val.lower() == "true"
        else:
            try:
                constexprs[key.strip()] = int(val, 0)
            except ValueError:
                raise SpecError(f"--constexpr {text!r}: the value must be an integer or "
                                f"True/False") from None
        signature[key.strip()] = "constexpr"
    params = list(getattr(fn, "arg_names", []) or [])
    missing = [p for p in params if p not in signature]
    if missing:
        raise SpecError(f"{name}: parameters without --signature or --constexpr: "
                        f"{', '.join(missing)}")
    gluon = "gluon" in type(fn).__module__
    arch = {"sm90": 90, "sm100": 100}[options.get("gpu", "sm100")]
    return dict(fn=fn, signature={p: signature[p] for p in params}, constexprs=constexprs,
                target=("cuda", arch), gluon=gluon,
                options={"num_warps": options.get("num_warps", 4),
                         "num_stages": options.get("num_stages", 3)})


def load_kernel_module(path: Path, name: str):
    """Import the user's kernel file (they named it on the command line: running it is asked
    for); a missing Triton, a missing file or a failing import is one line."""
    import importlib.util
    try:
        import triton  # noqa: F401
    except ImportError:
        raise SpecError(f"{path}::{name}: compiling a kernel needs Triton "
                        f"(pip install 'pipeproof[triton]'); a .ttgir file needs nothing") from None
    if not path.is_file():
        raise SpecError(f"{path}: no such file")
    spec = importlib.util.spec_from_file_location(f"pipeproof_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Triton's jit reads the source through the module
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise SpecError(f"{path}: importing it failed: {type(err).__name__}: "
                        f"{' '.join(str(err).split())}") from None
    return module


def compile_entry(entry: dict, fn, signature: dict, constexprs: dict, options: dict,
                  failed: str) -> str:
    """The TTGIR of `fn` compiled for the entry's target (a Gluon source where the entry says
    so), on the CPU; Triton's own compile error is one line after `failed`."""
    import triton
    from triton.backends.compiler import GPUTarget
    if entry.get("gluon"):
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        from triton.compiler import ASTSource as Source
    backend, arch = entry["target"]
    src = Source(fn=fn, signature=signature, constexprs=constexprs, attrs=entry.get("attrs"))
    try:
        compiled = triton.compile(src, target=GPUTarget(backend, arch, 32), options=dict(options))
    except Exception as err:  # Triton's own compile error, in one line
        last = (str(err).strip().splitlines() or [type(err).__name__])[-1]
        raise SpecError(f"{failed}: {last}") from None
    return compiled.asm["ttgir"]


def compile_kernel(path: Path, name: str, options: dict | None = None) -> str:
    """Compile KERNELS[name] of the user's file, or its jit function `name` with the
    --target/--signature/--constexpr options, with the installed Triton, on the CPU."""
    import triton  # noqa: F401  (before the user's file, as always)
    module = load_kernel_module(path, name)
    kernels = getattr(module, "KERNELS", {})
    if name in kernels:
        entry = kernels[name]
    elif hasattr(getattr(module, name, None), "arg_names"):
        entry = _entry_from_options(getattr(module, name), f"{path}::{name}", options or {})
    else:
        raise SpecError(f"{path}: no jit function or KERNELS entry {name!r} (KERNELS has: "
                        f"{', '.join(kernels) or 'none'}); docs/triton.md says what an entry holds")
    return compile_entry(entry, entry["fn"], entry["signature"], entry["constexprs"],
                         entry.get("options", {}), f"{path}::{name}: Triton could not compile it")


class TritonReader:
    """Reader (checker/frontends/protocol.py) of Triton's TTGIR, through spec/ttgir/."""

    name = "triton"
    ir = "TTGIR of a Triton or Gluon kernel"
    rerun_hint = "`pipeproof triton` without --prove (or --trip-count N to compare counts)"
    # what `pipeproof sweep --triton` compiles each autotune config with
    load_kernel_module = staticmethod(load_kernel_module)
    compile_entry = staticmethod(compile_entry)

    def load(self, target: str, options: ReadOptions) -> KernelIR:
        """The TTGIR of a file, or of `KERNEL.py::NAME` compiled with `options.extra`'s
        compile options (gpu, signature, constexprs, num_warps, num_stages)."""
        if "::" in target:
            path, name = target.rsplit("::", 1)
            return KernelIR(compile_kernel(Path(path), name, dict(options.extra)), f"{path}::{name}")
        try:
            return KernelIR(Path(target).read_text(), target)
        except OSError as err:
            raise SpecError(f"{target}: cannot read it ({err.strerror})") from None
        except UnicodeDecodeError:
            raise SpecError(f"{target}: not a text file (expected TTGIR)") from None

    @staticmethod
    def lowering(version: str | None):
        """--warps: the barrier lowering of a Triton release (default: the installed one's)."""
        from pipeproof.spec.ttgir.build import lowering_of
        return lowering_of(version or installed_triton())

    def read(self, ir: KernelIR, options: ReadOptions) -> Reading:
        """`options.extra["lowering"]`: with --warps, one agent per warp under that lowering."""
        from pipeproof.spec.ttgir.build import Builder
        from pipeproof.spec.ttgir.parse import parse_ttgir
        from pipeproof.spec.ttgir.run import Runner
        module = parse_ttgir(ir.text, ir.where)
        parts = Runner(module, options.function, dict(options.args), options.trip_count).run()
        where = ir.where
        name = Path(where.split("::")[0]).stem + ("::" + where.split("::")[1] if "::" in where else "")
        lowering = options.extra.get("lowering")
        launch = {"num_warps": int(module.attrs.get("ttg.num-warps", 4)),
                  "partitions": {p.name: p.warps for p in parts}, "args": dict(options.args)}
        return Reading(ir, options, name, parts, launch,
                       lambda: Builder(module, parts, name, module.where, lowering).toml())

    def trip_counts(self, reading: Reading, toml_text: str, target: str) -> TripCounts:
        """With --trip-count N: re-extract at two more trip counts and compare the programs, so
        a proof for every item count of the extracted spec speaks for the kernel's other trip
        counts too where the IR's index and phase arithmetic gives the same program. Without
        it the trip counts come from --arg values pipeproof cannot vary on its own."""
        n = reading.options.trip_count
        if n is None:
            return TripCounts(None)
        counts = [n, n + 3, 2 * n + 5]
        base = program_of(toml_text)
        same = True
        for other in counts[1:]:
            text, _ = self.read(reading.ir, replace(reading.options, trip_count=other)).build()
            if program_of(text) != base:
                same = False
                break
        line = (f"{target}: the extracted program is {'the same' if same else 'NOT the same'}"
                f" at trip counts {', '.join(map(str, counts))}"
                + ("" if same else ": the proof covers the trip count extracted only"))
        return TripCounts(same, (line,), {"same": same, "counts": counts})

    @staticmethod
    def step_text(step: dict) -> str:
        return f"{step['partition']:<12} {step['op']:<40} {step['line']}"

    @staticmethod
    def functions(ir: KernelIR) -> dict | None:
        """{tt.func name: its parameter names}, or None where the IR does not parse."""
        from pipeproof.spec.ttgir.parse import parse_ttgir
        try:
            module = parse_ttgir(ir.text, ir.where)
        except SpecError:
            return None
        return {name: [a[1:] for a in fn.attrs.get("args", [])] for name, fn in module.funcs.items()}


READER = TritonReader()
