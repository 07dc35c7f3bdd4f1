"""Compile each mutation of mutations.py from its mutated TTGIR down to PTX and cubin, on CPU.

    python tests/triton_kernels/dump_mutant_ptx.py TTGIR_DIR OUT_DIR

TTGIR_DIR holds NAME.ttgir as ``dump_ttgir.py`` writes it. For every ``MUTATIONS`` entry this
applies the transform to its kernel's TTGIR (as tests/test_triton_frontend.py does), writes
``OUT_DIR/mut_M.ttgir`` (M = the mutation's name, ``:`` as ``__``) and runs
``triton.compile("mut_M.ttgir", target=GPUTarget("cuda", arch, 32))``: an IR source starts at
the stage after its own, so the mutated TTGIR is lowered as written (no TTGIR pass runs again).
It writes ``mut_M.ptx`` and ``mut_M.cubin`` (Triton's ptxas) and prints ``ok`` / ``FAIL`` /
``NOAPPLY`` per mutation. Not a test module.
"""
import importlib.util
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent


def _load(name, module_name):
    spec = importlib.util.spec_from_file_location(module_name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    src_dir, out = pathlib.Path(argv[0]), pathlib.Path(argv[1])
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton.backends.compiler import GPUTarget
    mut = _load("mutations", "pipeproof_ttgir_mutations")
    entries = dict(_load("dump_ttgir", "pipeproof_dump_ttgir").kernels())
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for m in mut.MUTATIONS:
        name = "mut_" + m.name.replace(":", "__")
        text = (src_dir / f"{m.kernel}.ttgir").read_text()
        new = m.transform(text)
        if new == text:
            failed += 1
            print("NOAPPLY", m.name)
            continue
        path = out / f"{name}.ttgir"
        path.write_text(new)
        backend, arch = entries[m.kernel]["target"]
        try:
            compiled = triton.compile(str(path), target=GPUTarget(backend, arch, 32))
        except Exception as exc:  # report and go on
            failed += 1
            print("FAIL", m.name, f"{type(exc).__name__}:", (str(exc).strip().splitlines() or [""])[-1])
            continue
        (out / f"{name}.ptx").write_text(compiled.asm["ptx"])
        if "cubin" in compiled.asm:
            (out / f"{name}.cubin").write_bytes(compiled.asm["cubin"])
        print("ok", m.name, m.kernel, out / f"{name}.ptx")
    return 1 if failed else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)   # skip Triton 3.9's nanobind leak noise at exit, as dump_ttgir.py does
