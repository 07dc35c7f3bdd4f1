"""`pipeproof triton TARGET`: check a Triton or Gluon kernel's synchronisation (docs/triton.md).

TARGET is a TTGIR file (`compiled.asm["ttgir"]`, or an MLIR_ENABLE_DUMP dump) or
`KERNEL.py::NAME`, a kernel the user names: the file's `KERNELS[NAME]` entry (fn, signature,
constexprs, target, options; tests/triton_kernels/*.py are examples) is compiled with the
installed Triton, on the CPU. The extracted spec (spec/ttgir/) is printed or written
(`--emit-spec`), then checked by `verify` (or `prove` with --prove); every step of a
counterexample names the partition, the IR op and the kernel line it came from.
Exit codes as `verify`.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click


def _kv(values) -> dict:
    out = {}
    for text in values:
        name, sep, val = text.partition("=")
        try:
            out[name.strip()] = int(val, 0)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"{text!r}: expected NAME=INTEGER", param_hint="--arg")
    return out


def ttgir_of(target: str, options: dict | None = None) -> tuple[str, str]:
    """(TTGIR text, the name messages give it)."""
    from pipeproof.spec.schema import SpecError
    if "::" in target:
        path, name = target.rsplit("::", 1)
        return compile_kernel(Path(path), name, options or {}), f"{path}::{name}"
    try:
        return Path(target).read_text(), target
    except OSError as err:
        raise SpecError(f"{target}: cannot read it ({err.strerror})") from None
    except UnicodeDecodeError:
        raise SpecError(f"{target}: not a text file (expected TTGIR)") from None


def _installed_triton() -> str | None:
    try:
        from importlib.metadata import version
        return version("triton")
    except Exception:  # not installed: the newest lowering pipeproof knows
        return None


def _entry_from_options(fn, name: str, options: dict) -> dict:
    """A KERNELS-style entry for a plain jit function from --target/--signature/--constexpr."""
    from pipeproof.spec.schema import SpecError
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

    from pipeproof.spec.schema import SpecError
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


def compile_kernel(path: Path, name: str, options: dict | None = None) -> str:
    """Compile KERNELS[name] of the user's file, or its jit function `name` with the
    --target/--signature/--constexpr options, with the installed Triton, on the CPU."""
    import triton

    from pipeproof.spec.schema import SpecError
    module = load_kernel_module(path, name)
    kernels = getattr(module, "KERNELS", {})
    if name in kernels:
        entry = kernels[name]
    elif hasattr(getattr(module, name, None), "arg_names"):
        entry = _entry_from_options(getattr(module, name), f"{path}::{name}", options or {})
    else:
        raise SpecError(f"{path}: no jit function or KERNELS entry {name!r} (KERNELS has: "
                        f"{', '.join(kernels) or 'none'}); docs/triton.md says what an entry holds")
    from triton.backends.compiler import GPUTarget
    if entry.get("gluon"):
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        from triton.compiler import ASTSource as Source
    backend, arch = entry["target"]
    src = Source(fn=entry["fn"], signature=entry["signature"], constexprs=entry["constexprs"],
                 attrs=entry.get("attrs"))
    try:
        compiled = triton.compile(src, target=GPUTarget(backend, arch, 32),
                                  options=dict(entry.get("options", {})))
    except Exception as err:  # Triton's own compile error, in one line
        last = (str(err).strip().splitlines() or [type(err).__name__])[-1]
        raise SpecError(f"{path}::{name}: Triton could not compile it: {last}") from None
    return compiled.asm["ttgir"]


def extract(text: str, where: str, func: str | None, args: dict, trip_count: int | None = None,
            lowering=None):
    """(TOML text, SourceMap) of the kernel's synchronisation."""
    from pipeproof.spec.ttgir.build import Builder
    from pipeproof.spec.ttgir.parse import parse_ttgir
    from pipeproof.spec.ttgir.run import Runner
    module = parse_ttgir(text, where)
    parts = Runner(module, func, args, trip_count).run()
    name = Path(where.split("::")[0]).stem + ("::" + where.split("::")[1] if "::" in where else "")
    return Builder(module, parts, name, module.where, lowering).toml()


def _program(toml_text: str) -> str:
    """The extracted spec without its item counts (what must not depend on the trip count)."""
    import re
    return re.sub(r"(?m)^items = \d+$", "", toml_text)


def trip_counts_agree(text, where, func, args, trip_count, lowering, toml_text):
    """With --trip-count N: re-extract at two more trip counts and compare the programs, so a
    proof for every item count of the extracted spec speaks for the kernel's other trip counts
    too where the IR's index and phase arithmetic gives the same program. (same?, counts) or
    None without --trip-count (the trip counts then come from --arg values pipeproof cannot
    vary on its own)."""
    if trip_count is None:
        return None
    counts = [trip_count, trip_count + 3, 2 * trip_count + 5]
    base = _program(toml_text)
    for n in counts[1:]:
        other, _ = extract(text, where, func, args, n, lowering)
        if _program(other) != base:
            return False, counts
    return True, counts


def source_lines(result, source) -> list[dict]:
    """Per agent step of the counterexample: partition, IR op and kernel line."""
    out = []
    trace = result.traces.get(result.kind) if result.verdict == "violation" else None
    if trace is None:
        return out
    from pipeproof.checker.core import compile_model
    agents = {a.name: a for a in compile_model(result.spec).agents}
    def where(name, pc):
        agent = agents.get(name)
        if agent is None:
            return None
        section = agent.section_of(pc)
        index = pc - (0 if section == "prologue" else
                      agent.body_start if section == "body" else agent.body_end)
        return source.at(agent.role, section, index)

    for step in trace.steps:
        got = where(step.actor, step.event.pc) if step.event.kind == "agent" else None
        if got:
            out.append({"step": step.index, "partition": got[0], "op": got[1], "line": got[2]})
    # where every unfinished agent stands at the end (a deadlock's stuck waits)
    last = trace.steps[-1].state if trace.steps else trace.initial
    for name, view in sorted(last.get("agents", {}).items()):
        got = None if view.get("done") or view.get("op") is None else where(name, view["pc"])
        if got:
            out.append({"step": "end", "partition": got[0], "op": got[1], "line": got[2]})
    return out


def kernel_findings(result, lines, target, proof_status=None) -> list[dict]:
    """SARIF findings of one kernel's check (none when it holds)."""
    from pipeproof.checker.results import sarif
    file = target.split("::")[0]
    if result is not None and result.verdict == "violation" and proof_status != "unknown":
        return sarif.from_kernel(result.kind, "error",
                                 f"{result.kind}: shortest counterexample {result.depth} steps "
                                 f"({result.states} states)", lines, file)
    if proof_status not in (None, "proved") or (result is not None and result.verdict == "inconclusive"):
        why = result.limit if result is not None and result.limit else (
            "the proof's violation is at an item count the kernel does not run"
            if proof_status == "unknown" and result is not None else (proof_status or ""))
        return sarif.from_kernel("inconclusive", "warning", f"inconclusive: {why}", [], file)
    return []


@click.command()
@click.argument("target")
@click.option("--arg", "args", multiple=True, metavar="NAME=V",
              help="A kernel argument's value (loop bounds and indices need them).")
@click.option("--trip-count", type=click.IntRange(min=0), metavar="N",
              help="Run every loop whose bounds are not known from --arg N times.")
@click.option("--warps", "per_warp", is_flag=True,
              help="One agent per warp of each partition, with the barrier lowering of --lowering.")
@click.option("--lowering", metavar="VERSION",
              help="With --warps: the Triton release whose lowering to model (default: the "
                   "installed Triton's, else the newest known).")
@click.option("--function", "func", metavar="FN", help="The tt.func to check (a file with several).")
@click.option("--target", "gpu", type=click.Choice(["sm90", "sm100"]), default="sm100", show_default=True,
              help="KERNEL.py::FN of a plain @triton.jit or @gluon.jit function: the GPU to compile for.")
@click.option("--signature", "signature", multiple=True, metavar="NAME=TYPE",
              help="KERNEL.py::FN: a parameter's Triton type (i32, *fp16, tensordesc<fp16[128, 64]>).")
@click.option("--constexpr", "constexprs", multiple=True, metavar="NAME=V",
              help="KERNEL.py::FN: a constexpr parameter's value.")
@click.option("--num-warps", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--num-stages", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--emit-spec", "emit", metavar="F.toml", help="Write the extracted spec here (else print it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--trace", "trace_file", metavar="F", help="Write the counterexample (*.itf.json or *.trace.json).")
@click.option("--prove", "do_prove", is_flag=True, help="Prove the extracted spec for every item count.")
@click.option("--max-states", type=click.IntRange(min=1), help="Stop (inconclusive) after this many states.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="Stop (inconclusive) after this many seconds.")
@click.option("--strict-exit", is_flag=True,
              help="A CTA that exits with its own copies or commits still in flight (e.g. the last "
                   "tcgen05 commits nothing waits for) is inflight_at_exit, not the warning "
                   "unawaited_at_exit.")
@click.option("--sarif", "sarif_file", metavar="F",
              help="Also write the verdict as SARIF 2.1.0, on the kernel's line (checker/results/sarif.py).")
def triton(target, args, trip_count, per_warp, lowering, func, gpu, signature, constexprs, num_warps,
           num_stages, emit, as_json, trace_file, do_prove, max_states, timeout, strict_exit,
           sarif_file=None):
    """Extract the synchronisation of a Triton/Gluon kernel (TTGIR or KERNEL.py::NAME) and check it."""
    from pipeproof.checker.cli.command import check_trace_name
    from pipeproof.checker.results import EXIT_USAGE
    from pipeproof.spec.load import load_spec_text
    from pipeproof.spec.schema import SpecError

    check_trace_name(trace_file)
    try:
        options = dict(gpu=gpu, signature=signature, constexprs=constexprs, num_warps=num_warps,
                       num_stages=num_stages)
        text, where = ttgir_of(target, options)
        from pipeproof.spec.ttgir.build import lowering_of
        low = lowering_of(lowering or _installed_triton()) if per_warp else None
        arg_values = _kv(args)
        toml_text, source = extract(text, where, func, arg_values, trip_count, low)
        if emit:
            Path(emit).write_text(toml_text)
        spec = load_spec_text(toml_text, emit or f"{where} (extracted)")
    except SpecError as err:
        click.echo(str(err), err=True)
        if sarif_file:
            from pipeproof.checker.results import sarif
            sarif.write(sarif_file, sarif.from_kernel("unreadable", "warning", str(err), [],
                                                      target.split("::")[0]))
        sys.exit(EXIT_USAGE)
    from pipeproof.checker.cli.frontend import check_extracted, print_counterexample, show_extracted
    out = show_extracted(target, toml_text, emit, as_json)
    same = (trip_counts_agree(text, where, func, arg_values, trip_count, low, toml_text)
            if do_prove else None)
    same_lines = [] if same is None else [
        f"{target}: the extracted program is {'the same' if same[0] else 'NOT the same'}"
        f" at trip counts {', '.join(map(str, same[1]))}"
        + ("" if same[0] else ": the proof covers the trip count extracted only")]
    checked = check_extracted(
        spec, target, lambda r: source_lines(r, source), out=out, as_json=as_json,
        do_prove=do_prove, same=same, same_lines=same_lines,
        same_json=same and {"same": same[0], "counts": same[1]},
        rerun_hint="`pipeproof triton` without --prove (or --trip-count N to compare counts)",
        max_states=max_states, timeout=timeout, strict_exit=strict_exit)
    result, lines, code = checked.result, checked.lines, checked.code
    if sarif_file:
        from pipeproof.checker.results import sarif
        sarif.write(sarif_file, kernel_findings(result, lines, target, checked.kernel_status))
    print_counterexample(checked, target, out, trace_file,
                         lambda s: f"{s['partition']:<12} {s['op']:<40} {s['line']}")
    sys.exit(code)
