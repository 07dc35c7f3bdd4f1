"""Compile the kernels of this folder on CPU and write their TTGIR (and optionally PTX).

    python tests/triton_kernels/dump_ttgir.py OUT_DIR [--only NAME ...] [--ptx] [--llir] [--cubin]

Each kernel module here (ws_matmul, ws_attention, gluon_mbarrier, sm90_pipelined,
ws_persistent, persistent_swp) exports
``KERNELS = {name: dict(fn=..., signature=..., constexprs=..., target=(backend, arch),
options=..., gluon=bool, attrs=optional)}``. For every entry this script runs

    triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(backend, arch, 32),
                   options=options)

(``GluonASTSource`` for Gluon kernels), needing no GPU and no driver, and writes
``OUT_DIR/NAME.ttgir`` (= ``compiled.asm["ttgir"]``: TTGIR after every TTGIR pass, with its
``loc(#locN)`` references and the ``#locN = loc("file":line:col)`` table). It prints one line
per kernel, ``ok NAME cuda:ARCH PATH`` or ``FAIL NAME cuda:ARCH: ERROR``, and exits 1 if any
kernel failed. Not a test module: pytest does not collect it (no ``test_`` prefix).
"""
import argparse
import importlib.util
import os
import pathlib
import sys
import traceback

MODULES = ("ws_matmul", "ws_attention", "gluon_mbarrier", "sm90_pipelined", "ws_persistent",
           "persistent_swp")
HERE = pathlib.Path(__file__).resolve().parent


def load_module(name):
    """Import tests/triton_kernels/NAME.py by path (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"triton_kernels_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # Triton's jit reads the source through the module
    spec.loader.exec_module(module)
    return module


def kernels():
    """Yield (name, entry) for every kernel of every module here, in MODULES order."""
    for mod_name in MODULES:
        yield from load_module(mod_name).KERNELS.items()


def compile_entry(entry):
    """Compile one KERNELS entry for its target and return the CompiledKernel."""
    import triton
    from triton.backends.compiler import GPUTarget
    if entry.get("gluon"):
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        Source = triton.compiler.ASTSource
    backend, arch = entry["target"]
    src = Source(fn=entry["fn"], signature=entry["signature"], constexprs=entry["constexprs"],
                 attrs=entry.get("attrs"))
    return triton.compile(src, target=GPUTarget(backend, arch, 32), options=dict(entry["options"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--only", nargs="*", default=None, help="kernel names to compile (default: all)")
    parser.add_argument("--ptx", action="store_true", help="also write NAME.ptx")
    parser.add_argument("--llir", action="store_true", help="also write NAME.llir")
    parser.add_argument("--cubin", action="store_true",
                        help="also write NAME.cubin (Triton's own ptxas run; needs its ptxas)")
    args = parser.parse_args(argv)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # silences a 3.9 warning; same default
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, entry in kernels():
        if args.only is not None and name not in args.only:
            continue
        target = "%s:%d" % entry["target"]
        try:
            compiled = compile_entry(entry)
        except Exception as exc:  # report and go on with the other kernels
            failed += 1
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            print(f"FAIL {name} {target}: {type(exc).__name__}: {first}")
            if os.environ.get("DUMP_TTGIR_TRACEBACK"):
                traceback.print_exc()
            continue
        path = out / f"{name}.ttgir"
        path.write_text(compiled.asm["ttgir"])
        for ext, flag in (("ptx", args.ptx), ("llir", args.llir)):
            if flag:
                (out / f"{name}.{ext}").write_text(compiled.asm[ext])
        if args.cubin and "cubin" in compiled.asm:
            (out / f"{name}.cubin").write_bytes(compiled.asm["cubin"])
        print(f"ok {name} {target} {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    code = main()
    # Skip interpreter teardown: after a Gluon compile, Triton 3.9's nanobind module prints
    # "nanobind: leaked N instances" noise to stderr at exit. Nothing is left to clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
