"""`pipeproof sweep --triton KERNEL.py::NAME`: every `@triton.autotune` config of a kernel,
compiled with the installed Triton (on the CPU) and checked (docs/sweep.md, docs/triton.md).

The file's `KERNELS[NAME]` entry says what compiling needs (the argument `signature`, the
`target`, `constexprs`, `options`, `gluon`), as for `pipeproof triton KERNEL.py::NAME`; its
`fn` is the autotuned kernel (`@triton.autotune(configs=[...])` over `@triton.jit` or
`@gluon.jit`), or the entry lists `configs=[triton.Config(...), ...]` itself. Each config is
compiled once: its `kwargs` are constexprs, its `num_warps`, `num_stages` and `num_ctas` are
options (`maxnreg` too when set). `--set NAME=VALUES` sweeps a kernel integer argument (a
loop bound: one iteration, a trip count that is not a multiple of 2·stages) and `--arg NAME=V`
fixes one; the grid is configs × those axes. Each point's spec is extracted from the config's
TTGIR by the Triton reader through the front-end driver (checker/frontends/) with the point's
arguments, here, before the points are sent to the workers (which need no Triton).

A config that does not compile, or whose IR the front end cannot read, gives error points
with the reason; `prune_configs_by` and `pre_hook` are not run (every listed config is checked).
"""
from __future__ import annotations

import itertools
from pathlib import Path

from pipeproof.checker.sweep.grid import Point, label_of, parse_values
from pipeproof.spec.schema import SpecError

OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def points_of_kernel(target: str, args=(), sets=()) -> list[Point]:
    if "::" not in target:
        raise SpecError(f"--triton {target}: expected KERNEL.py::NAME (a KERNELS entry of that file)")
    path_text, name = target.rsplit("::", 1)
    path = Path(path_text)
    entry = _entry(path, name)
    configs = _configs(entry, target)
    fixed = _fixed_args(args)
    axes = [_arg_axis(text) for text in sets]
    for axis_name, _ in axes:
        if axis_name in fixed:
            raise SpecError(f"--set {axis_name}: also fixed by --arg {axis_name}")
    if len(configs) == 1 and not axes and configs[0][0] == {}:
        raise SpecError(f"{target}: nothing to sweep (no @triton.autotune configs; give --set "
                        f"ARG=VALUES for a kernel argument)")
    option_names = _varying_options(configs)
    points = []
    for config_index, (kwargs, options) in enumerate(configs):
        params = dict(kwargs)
        params.update({k: options[k] for k in option_names})
        try:
            ttgir, error = _compile(path, name, entry, kwargs, options), ""
        except SpecError as err:
            ttgir, error = "", str(err)
        for combo in itertools.product(*(values for _, values in axes)):
            point_params = dict(params, **{n: v for (n, _), v in zip(axes, combo)})
            point = Point(len(points), point_params, label=label_of(point_params), source=target,
                          extra={"config": config_index})
            points.append(point)
            if error:
                point.error = f"{point.where}: {error}"
                continue
            run_args = dict(fixed, **{n: v for (n, _), v in zip(axes, combo)})
            point.extra["args"] = run_args
            try:
                point.text = _spec_text(ttgir, target, run_args)
            except SpecError as err:
                point.error = f"{point.where}: {err}"
    return points


def _spec_text(ttgir: str, target: str, args: dict) -> str:
    """The TOML text of one point's spec: the config's TTGIR read with the point's arguments."""
    from pipeproof.checker.frontends import KernelIR, ReadOptions, extract_text, reader
    return extract_text(reader("triton"), KernelIR(ttgir, target), ReadOptions(args=args)).toml_text


def _entry(path: Path, name: str) -> dict:
    from pipeproof.checker.frontends import reader
    module = reader("triton").load_kernel_module(path, name)
    kernels = getattr(module, "KERNELS", None)
    if not isinstance(kernels, dict) or name not in kernels:
        hint = ""
        if _is_autotuner(getattr(module, name, None)):
            hint = (f"; {name} is a @triton.autotune kernel: add KERNELS[{name!r}] = dict(fn={name}, "
                    f"signature=..., target=(\"cuda\", ARCH), gluon=...) so it can be compiled")
        have = ", ".join(kernels) if isinstance(kernels, dict) and kernels else "none"
        raise SpecError(f"{path}: no KERNELS[{name!r}] (have: {have}){hint}; docs/sweep.md says "
                        f"what an entry holds")
    entry = kernels[name]
    if not isinstance(entry, dict) or "fn" not in entry or "signature" not in entry \
            or "target" not in entry:
        raise SpecError(f"{path}: KERNELS[{name!r}] must be a dict with fn, signature and target "
                        f"(docs/triton.md)")
    return entry


def _is_autotuner(obj) -> bool:
    return hasattr(obj, "configs") and hasattr(obj, "fn")


def _configs(entry: dict, target: str) -> list[tuple[dict, dict]]:
    """[(constexpr kwargs, options)] per config, in the order the kernel lists them."""
    base_options = dict(entry.get("options", {}))
    fn = entry["fn"]
    listed = entry.get("configs")
    if listed is None and _is_autotuner(fn):
        listed = fn.configs
    if listed is None:
        return [({}, base_options)]
    out = []
    for i, config in enumerate(listed):
        kwargs = getattr(config, "kwargs", None)
        if not isinstance(kwargs, dict):
            raise SpecError(f"{target}: config {i} is not a triton.Config")
        options = dict(base_options)
        for key in OPTION_KEYS:
            value = getattr(config, key, None)
            if value is not None:
                options[key] = value
        out.append((dict(kwargs), options))
    if not out:
        raise SpecError(f"{target}: the kernel lists no configs")
    return out


def _varying_options(configs) -> list[str]:
    """num_warps and num_stages always (what autotune varies); num_ctas, maxnreg where set."""
    names = []
    for key in OPTION_KEYS:
        values = [options.get(key) for _, options in configs]
        if key in ("num_warps", "num_stages") and any(v is not None for v in values):
            names.append(key)
        elif any(v not in (None, 1) for v in values):
            names.append(key)
    return names


def _fixed_args(args) -> dict:
    out = {}
    for text in args:
        name, sep, value = text.partition("=")
        try:
            out[name.strip()] = int(value, 0)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise SpecError(f"--arg {text!r}: expected NAME=INTEGER (a kernel argument)")
    return out


def _arg_axis(text: str) -> tuple[str, tuple]:
    name, sep, values = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise SpecError(f"--set {text!r}: expected ARG=VALUES (a kernel integer argument, e.g. "
                        f"n_tiles=1..8)")
    parsed = parse_values(values, f"--set {name}")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in parsed):
        raise SpecError(f"--set {name}: with --triton, --set gives a kernel integer argument "
                        f"integer values (got {values!r})")
    return name, parsed


_compiled: dict = {}


def _compile(path: Path, name: str, entry: dict, kwargs: dict, options: dict) -> str:
    """The TTGIR of one config (compiled once per process)."""
    key = (str(path.resolve()), name, repr(sorted(kwargs.items())), repr(sorted(options.items())))
    if key in _compiled:
        return _compiled[key]
    from pipeproof.checker.frontends import reader
    fn = entry["fn"].fn if _is_autotuner(entry["fn"]) else entry["fn"]
    signature = dict(entry["signature"])
    for k in kwargs:
        signature.setdefault(k, "constexpr")
    constexprs = dict(entry.get("constexprs", {}), **kwargs)
    _compiled[key] = reader("triton").compile_entry(entry, fn, signature, constexprs, options,
                                                    "Triton could not compile this config")
    return _compiled[key]
