"""backends/ printed, not copied (backends/printed.py): the Promela and Murphi exports and the
GPU generator print backends/nvidia.py's and backends/amd.py's own rules.

- The expression trees equal the backend functions on many inputs (folds and `lift` included).
- The text each exporter emits (PARITY_READY, IN_WINDOW, INTENDED_AFTER, IN_WINDOW_AT and
  sig_update of the Promela model; parity_ready, in_window, intended_after, in_window_at and
  sig_update of the Murphi model) is cut out of a real export and run by SPIN and by Rumur on a
  grid of signal states (negative intended phases included: Murphi's % truncates as C's does);
  the results must be the backend's.
- The C printing, and the kernel's printed pieces (amd thresholds, probe_amd's test, the parity
  operand of test_wait.parity), compiled with the host compiler, equal the backend.
- Changing a backend function changes the exported and generated text (so no exporter can go
  back to a hand-written copy without these tests failing).

Like tests/test_export_models.py these need `spin`, `rumur` and a C compiler.
"""
from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import pytest

from pipeproof.backends import amd, nvidia
from pipeproof.backends.base import COMPLETED, U32, parity, select, wrap32
from pipeproof.backends.printed import PRIMITIVES as P
from pipeproof.backends.printed import (
    LANGUAGES, Expr, PrintError, condition, evaluate, lift, printed_backend, render, statements, sym,
)
from pipeproof.checker.models.exporter import to_murphi, to_promela
from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref.codegen import GenerationError, generate
from pipeproof.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[1]
TX_SPEC = ROOT / "spec" / "examples" / "mojo_input_tile_nvidia.toml"   # copies: a tx field
PLAIN_SPEC = ROOT / "spec" / "examples" / "mojo_pcp_nvidia.toml"       # no tx field
TXL = nvidia.TX_LIMIT


def py(fn):
    return getattr(fn, "py_func", fn)


# Signal states and updates: traps (over-arrival, tx out of range), completions, plain updates.
UPDATES = list(itertools.product((0, 3), (0, 1, 2), (0, -5, TXL), (1, 2), (0, 1, 3),
                                 (0, 5, -5, -TXL, TXL), (0, 1)))
# Rumur compiles its verifier's C slowly: a seventh of them, every outcome still among them.
MURPHI_UPDATES = UPDATES[::7]
WINDOWS = list(itertools.product(range(7), range(7), range(3)))
# (k', ph', ph) of the window after a reset: ph below ph' (a reset), k' of either sign.
AFTER = list(itertools.product(range(-3, 6), range(0, 5), range(0, 5)))
AMD_CASES = list(itertools.product((0, 1, 2, 7, (1 << 31) - 1, (1 << 32) - 1, 1 << 32, -1, -3),
                                   (1, 2, 64), (0, 5, (1 << 32) - 1, 1 << 33)))


# ------------------------------------------------------------------ the trees

@pytest.mark.parametrize("lang", LANGUAGES)
def test_trees_equal_the_backend_functions(lang):
    nv, am = printed_backend(nvidia), printed_backend(amd)
    s = lambda name: sym(name, lang)
    names = ("pn", "pd", "tx", "e", "c", "d")
    update = nv.update(*map(s, names))
    for pn, pd, tx, e, c, d, _ in UPDATES:
        env = dict(zip(names, (pn, pd, tx, e, c, d)))
        assert tuple(evaluate(x, env) for x in update) == py(nvidia.update)(pn, pd, tx, e, c, d)
        # lifting every select to the top keeps each value
        assert tuple(evaluate(lift(x), env) for x in update) == py(nvidia.update)(pn, pd, tx, e, c, d)
    for pn, ph, p0 in WINDOWS:
        env = {"pn": pn, "ph": ph, "p0": p0}
        assert evaluate(nv.ready(s("pn"), s("ph")), env) == py(nvidia.ready)(pn, ph)
        assert evaluate(nv.in_window(s("pn"), s("ph"), s("p0")), env) == py(nvidia.in_window)(pn, ph, p0)
        assert evaluate(nv.intended_phase(s("ph"), s("p0")), env) == py(nvidia.intended_phase)(ph, p0)
    after, at = nv.intended_after(s("kl"), s("pl"), s("ph")), nv.in_window_at(s("pn"), s("k"))
    for kl, pl, ph in AFTER:
        env = {"kl": kl, "pl": pl, "ph": ph}
        assert evaluate(after, env) == evaluate(lift(after), env) == py(nvidia.intended_after)(kl, pl, ph)
        for pn in range(5):
            assert evaluate(at, {"pn": pn, "k": kl}) == py(nvidia.in_window_at)(pn, kl)
    for ph, n, counter in AMD_CASES:
        env = {"ph": ph, "n": n, "k": counter}
        assert evaluate(am.full_threshold(s("ph"), s("n")), env) == py(amd.full_threshold)(ph, n)
        assert evaluate(am.empty_ready(s("k"), s("ph"), s("n")), env) == py(amd.empty_ready)(counter, ph, n)


def test_plain_arguments_fold_and_text_is_parenthesised():
    nv = printed_backend(nvidia)
    p = lambda t: sym(t, "promela")
    # no tx: the tx field and the tx-range trap fold away
    pn, pend, tx, out = nv.update(p("pn"), p("pd"), 0, p("E"), p("C"), 0)
    assert tx == 0 and "1048575" not in render(out, "promela")
    assert lift((out & nvidia.TRAP_TX_RANGE) != 0) is False
    assert condition((out & nvidia.TRAP_OVER_ARRIVAL) != 0, "promela") == "(C > pd)"
    assert nv.update(0, 1, 0, 1, 1, 0) == py(nvidia.update)(0, 1, 0, 1, 1, 0)  # all plain: Python
    assert render(nv.ready(p("a"), p("b")), "promela") == "((a & 1) != (b & 1))"
    # Murphi's % truncates (-1 % 2 is -1): the printed parity brings it into 0..1
    assert render(nv.ready(sym("a", "murphi"), sym("b", "murphi")), "murphi") == \
        "((((a % 2) + 2) % 2) != (((b % 2) + 2) % 2))"
    assert render(-p("x") + 1, "promela") == "((-x) + 1)"
    assert render(p("x") - (-3), "promela") == "(x - (-3))"


def test_folds_keep_values_that_are_not_booleans():
    c, x = sym("c", "cuda"), sym("x", "cuda")
    # and/or stand for a select only of booleans: select(c, 5, False) is 5 or False in C too
    assert render(P["select"](c > 0, 5, False), "cuda") == "((c > 0) ? 5 : 0)"
    assert render(P["select"](c > 0, x > 1, False), "cuda") == "((c > 0) && (x > 1))"
    assert render(P["both"](x, True), "cuda") == "(x && 1)"
    assert P["both"](True, x) is x and P["either"](x > 0, True) is True
    for cv, xv in itertools.product((0, 1, 7), (0, 2, 5)):
        env = {"c": cv, "x": xv}
        e = P["select"](c > 0, 5, P["select"](x > 1, True, False))
        assert evaluate(e, env) == evaluate(lift(e), env) == (5 if cv > 0 else xv > 1)


def test_murphi_selects_are_if_chains():
    nv = printed_backend(nvidia)
    m = lambda t: sym(t, "murphi")
    _, pending, _, _ = nv.update(m("pn"), m("pd"), m("tx"), m("e"), m("c"), m("d"))
    lines = statements("x := {};", pending, "murphi")
    assert lines[0].startswith("if ") and lines[2].startswith("elsif ") and lines[-1] == "endif;"
    assert "?" not in "".join(lines) and "->" not in "".join(lines)
    with pytest.raises(PrintError, match="no conditional expression"):
        render(pending, "murphi")


def test_a_symbolic_branch_fails_loudly():
    def bad(x):
        return 1 if x > 0 else 0
    with pytest.raises(PrintError, match="branched on a symbolic value"):
        bad(sym("x", "cuda"))
    with pytest.raises(PrintError, match="wrap32 has no promela form"):
        render(printed_backend(amd).full_threshold(sym("p", "promela"), 2), "promela")


# ------------------------------------------------------------------ Promela, run by SPIN

def cut(text: str, start: str, end: str) -> str:
    i = text.index(start)
    return text[i:text.index(end, i) + len(end)]


def promela_pieces(spec_path) -> str:
    text = to_promela(load_spec(spec_path))
    lines = [ln for ln in text.splitlines() if ln.startswith(("#define PARITY_READY", "#define IN_WINDOW"))]
    lines.append(cut(text, "inline sig_update(", "\n}\n"))
    return "\n".join(lines)


def test_exported_promela_signal_rules_run_as_the_backend(tmp_path):
    pieces = promela_pieces(TX_SPEC)
    assert "int tx;" in to_promela(load_spec(TX_SPEC))
    # the harness notes each assertion instead of failing: a trap, or a phase nobody observed
    pieces = re.sub(r"assert\((\w+)\)\s*/\* trap \*/", r"trap_\1 = 1", pieces)
    pieces = re.sub(r"assert\(over_arrival\)\s*/\* ran ahead \*/", "ahead = 1", pieces)
    assert "assert" not in pieces
    body = []
    for k, (pn, pd, tx, e, c, d, obs) in enumerate(UPDATES):
        npn, npd, ntx, out = py(nvidia.update)(pn, pd, tx, e, c, d)
        done = bool(out & nvidia.COMPLETED)
        body += [f"sg.phase_no = {pn}; sg.pending = {pd}; sg.tx = {tx}; sg.observed = {obs};",
                 "trap_over_arrival = 0; trap_tx_range = 0; ahead = 0;",
                 f"sig_update(sg, {e}, {c}, {d});",
                 f"assert(sg.phase_no == {npn} && sg.pending == {npd} && sg.tx == {ntx} && "
                 f"trap_over_arrival == {int(bool(out & nvidia.TRAP_OVER_ARRIVAL))} && "
                 f"trap_tx_range == {int(bool(out & nvidia.TRAP_TX_RANGE))} && "
                 f"ahead == {int(done and pn >= 1 and not obs)} && "
                 f"sg.observed == {0 if done else obs});  /* case {k} */"]
    for pn, ph, p0 in WINDOWS:
        body.append(f"assert(PARITY_READY({pn}, {ph}) == {int(py(nvidia.ready)(pn, ph))} && "
                    f"IN_WINDOW({pn}, {ph}, {p0}) == {int(py(nvidia.in_window)(pn, ph, p0))});")
    model = "\n".join([
        "typedef Sig { int phase_no; int pending; int tx; bit observed }", "Sig sg;",
        "int pn_, pd_, tx_;", "bit trap_over_arrival, trap_tx_range, ahead;", pieces,
        "init {", *("  " + line for line in body), '  printf("HARNESS OK\\n")', "}", ""])
    (tmp_path / "h.pml").write_text(model)
    run = subprocess.run(["spin", "h.pml"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "HARNESS OK" in run.stdout and "assertion violated" not in run.stdout, (
        run.stdout[-3000:] + run.stderr[-2000:])


# ------------------------------------------------------------------ Murphi, run by Rumur

def test_exported_murphi_signal_rules_run_as_the_backend(tmp_path):
    outcomes = {py(nvidia.update)(*u[:6])[3] for u in MURPHI_UPDATES}
    assert outcomes == {0, nvidia.TRAP_OVER_ARRIVAL, nvidia.TRAP_TX_RANGE, nvidia.COMPLETED}
    text = to_murphi(load_spec(TX_SPEC))
    pieces = "\n".join(cut(text, head, "\nend;") for head in
                       ("function parity_ready(", "function in_window(", "procedure sig_update("))
    assert "?" not in pieces  # Murphi has no conditional expression: if-chains
    # the harness notes each error instead of stopping: a trap returns, as the error would
    pieces = re.sub(r'error "(over_arrival|tx_range): [^"]*\(trap\)"', r"trap_\1 := true; return", pieces)
    pieces = re.sub(r'error "over_arrival: a phase completed[^"]*"', "ahead := true", pieces)
    assert "error" not in pieces
    body = []
    for k, (pn, pd, tx, e, c, d, obs) in enumerate(MURPHI_UPDATES):
        npn, npd, ntx, out = py(nvidia.update)(pn, pd, tx, e, c, d)
        over, txr = bool(out & nvidia.TRAP_OVER_ARRIVAL), bool(out & nvidia.TRAP_TX_RANGE)
        done = bool(out & nvidia.COMPLETED)
        state = ("" if over or txr else  # a trap stops the rule: its fields are never stored
                 f" & s.phase_no = {npn} & s.pending = {npd} & s.tx = {ntx}"
                 f" & s.observed = {'false' if done else ('true' if obs else 'false')}"
                 f" & ahead = {'true' if done and pn >= 1 and not obs else 'false'}")
        body += [f"s.phase_no := {pn}; s.pending := {pd}; s.tx := {tx}; "
                 f"s.observed := {'true' if obs else 'false'};",
                 "trap_over_arrival := false; trap_tx_range := false; ahead := false;",
                 f"sig_update(s, {e}, {c}, {d});",
                 f"assert (trap_over_arrival = {str(over).lower()} & trap_tx_range = {str(txr).lower()}"
                 f"{state}) \"case {k}\";"]
    for pn, ph, p0 in WINDOWS:
        body.append(f"assert (parity_ready({pn}, {ph}) = {str(py(nvidia.ready)(pn, ph)).lower()} & "
                    f"in_window({pn}, {ph}, {p0}) = {str(py(nvidia.in_window)(pn, ph, p0)).lower()}) "
                    f"\"window {pn} {ph} {p0}\";")
    model = "\n".join([
        f"const TXL: {TXL};",
        "type pn_t: 0..100; pend_t: 0..100; cnt_t: 0..100; ph_t: 0..100; tx_t: -TXL..TXL;",
        "  sig_t: record phase_no: pn_t; pending: pend_t; tx: tx_t; observed: boolean; end;",
        "var s: sig_t; trap_over_arrival: boolean; trap_tx_range: boolean; ahead: boolean;",
        "  done: boolean;", pieces, "",
        "startstate begin", *("  " + line for line in body), "  done := false;", "end;",
        'rule "idle" !done ==> begin done := true; end;', ""])
    (tmp_path / "h.m").write_text(model)
    subprocess.run(["rumur", "--deadlock-detection", "off", "h.m", "-o", "h.c"], cwd=tmp_path,
                   check=True, capture_output=True)
    subprocess.run(["cc", "-std=c11", "-O0", "-w", *_cx16(), "-o", "h", "h.c", "-lpthread"],
                   cwd=tmp_path, check=True, capture_output=True)
    run = subprocess.run(["./h"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "No error found" in run.stdout, run.stdout[-3000:]


RESET_SPEC = ROOT / "spec" / "examples" / "x_persistent_reset_ok.toml"  # agents with a reset


def test_exported_window_after_reset_runs_as_the_backend(tmp_path):
    """INTENDED_AFTER / IN_WINDOW_AT (Promela) and intended_after / in_window_at (Murphi), cut
    out of the export of a spec with resets, run by SPIN and by Rumur on (k', ph', ph)."""
    promela = to_promela(load_spec(RESET_SPEC))
    macros = [ln for ln in promela.splitlines()
              if ln.startswith(("#define INTENDED_AFTER", "#define IN_WINDOW_AT"))]
    assert len(macros) == 2
    checks = []
    for kl, pl, ph in AFTER:
        k = py(nvidia.intended_after)(kl, pl, ph)
        checks.append(f"assert(INTENDED_AFTER({kl}, {pl}, {ph}) == {k});")
        checks += [f"assert(IN_WINDOW_AT({pn}, {k}) == {int(py(nvidia.in_window_at)(pn, k))});"
                   for pn in range(0, 8, 3)]
    (tmp_path / "w.pml").write_text("\n".join(
        macros + ["init {", *("  " + c for c in checks), '  printf("HARNESS OK\\n")', "}", ""]))
    run = subprocess.run(["spin", "w.pml"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "HARNESS OK" in run.stdout and "assertion violated" not in run.stdout, (
        run.stdout[-3000:] + run.stderr[-2000:])

    murphi = to_murphi(load_spec(RESET_SPEC))
    pieces = "\n".join(cut(murphi, head, "\nend;") for head in
                       ("function intended_after(", "function in_window_at("))
    assert "?" not in pieces
    body = []
    for kl, pl, ph in AFTER[::3]:
        k = py(nvidia.intended_after)(kl, pl, ph)
        body.append(f'assert (intended_after({kl}, {pl}, {ph}) = {k}) "after {kl} {pl} {ph}";')
        body += [f'assert (in_window_at({pn}, {k}) = {str(py(nvidia.in_window_at)(pn, k)).lower()}) '
                 f'"at {pn} {k}";' for pn in range(0, 8, 3)]
    model = "\n".join([
        "type wk_t: -10..20; ik_t: -10..30; ph_t: 0..10; pn_t: 0..10;",
        "var done: boolean;", pieces, "",
        "startstate begin", *("  " + line for line in body), "  done := false;", "end;",
        'rule "idle" !done ==> begin done := true; end;', ""])
    (tmp_path / "w.m").write_text(model)
    subprocess.run(["rumur", "--deadlock-detection", "off", "w.m", "-o", "w.c"], cwd=tmp_path,
                   check=True, capture_output=True)
    subprocess.run(["cc", "-std=c11", "-O0", "-w", *_cx16(), "-o", "w", "w.c", "-lpthread"],
                   cwd=tmp_path, check=True, capture_output=True)
    run = subprocess.run(["./w"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "No error found" in run.stdout, run.stdout[-3000:]


def test_changing_the_window_after_reset_changes_the_exports(monkeypatch):
    spec = load_spec(RESET_SPEC)
    promela, murphi = to_promela(spec), to_murphi(spec)
    assert "#define INTENDED_AFTER(kl, pl, ph) (((ph) >= (pl)) -> " in promela

    def intended_after(k_last, phase_last, phase):   # a different rule: no parity after a reset
        return select(phase >= phase_last, k_last + (phase - phase_last), k_last)
    monkeypatch.setattr(nvidia, "intended_after", _backend_function(nvidia, intended_after))
    p2, m2 = to_promela(spec), to_murphi(spec)
    assert "#define INTENDED_AFTER(kl, pl, ph) (((ph) >= (pl)) -> ((kl) + ((ph) - (pl))) : (kl))" in p2
    assert "    return kl;" in cut(m2, "function intended_after(", "\nend;")
    assert promela != p2 and murphi != m2


def _cx16():
    import platform
    return ["-mcx16"] if platform.machine() in ("x86_64", "AMD64") else []


# ------------------------------------------------------------------ C, compiled by the host

C_HEAD = ("#include <stdio.h>\ntypedef unsigned int u32; typedef unsigned long long u64; "
          "typedef long long i64;\n#define __device__\n#define __forceinline__\n")


def compile_and_run(tmp_path, source: str, stdin: str) -> list[str]:
    (tmp_path / "h.c").write_text(C_HEAD + source)
    subprocess.run(["cc", "-O1", "-w", "-o", str(tmp_path / "h"), str(tmp_path / "h.c")], check=True)
    out = subprocess.run([str(tmp_path / "h")], input=stdin, capture_output=True, text=True, check=True)
    return out.stdout.split("\n")


def test_printed_c_equals_the_backend(tmp_path):
    nv, am = printed_backend(nvidia), printed_backend(amd)
    c = lambda t: sym(t, "cuda")
    update = nv.update(c("pn"), c("pd"), c("tx"), c("e"), c("n"), c("d"))
    thr = (am.full_threshold(c("ph"), c("k")), am.empty_threshold(c("ph"), c("k")),
           am.full_ready(c("ctr"), c("ph"), c("k")), am.empty_ready(c("ctr"), c("ph"), c("k")))
    source = (
        "int main(void) {\n  i64 pn, pd, tx, e, n, d, ph, p0; u64 k, ctr;\n"
        "  while (scanf(\"%lld %lld %lld %lld %lld %lld\", &pn, &pd, &tx, &e, &n, &d) == 6 && pn >= 0)\n"
        "    printf(\"%lld %lld %lld %lld\\n\", " + ", ".join(f"(i64){render(x, 'cuda')}" for x in update)
        + ");\n"
        "  while (scanf(\"%lld %lld %lld\", &pn, &ph, &p0) == 3 && pn >= 0)\n"
        f"    printf(\"%d %d %lld\\n\", (int){render(nv.ready(c('pn'), c('ph')), 'cuda')}, "
        f"(int){render(nv.in_window(c('pn'), c('ph'), c('p0')), 'cuda')}, "
        f"(i64){render(nv.intended_phase(c('ph'), c('p0')), 'cuda')});\n"
        "  while (scanf(\"%lld %llu %llu\", &ph, &k, &ctr) == 3)\n"
        "    printf(\"%llu %llu %d %d\\n\", " + ", ".join(
            f"(u64){render(x, 'cuda')}" if i < 2 else f"(int){render(x, 'cuda')}" for i, x in enumerate(thr))
        + ");\n  return 0;\n}\n")
    stdin = ("".join(" ".join(map(str, u[:6])) + "\n" for u in UPDATES) + "-1 0 0 0 0 0\n"
             + "".join(f"{a} {b} {p}\n" for a, b, p in WINDOWS) + "-1 0 0\n"
             + "".join(f"{ph} {n} {k}\n" for ph, n, k in AMD_CASES))
    out = iter(compile_and_run(tmp_path, source, stdin))
    for u in UPDATES:
        assert tuple(int(x) for x in next(out).split()) == py(nvidia.update)(*u[:6]), u
    for pn, ph, p0 in WINDOWS:
        assert [int(x) for x in next(out).split()] == [
            py(nvidia.ready)(pn, ph), py(nvidia.in_window)(pn, ph, p0), py(nvidia.intended_phase)(ph, p0)]
    for ph, n, k in AMD_CASES:
        assert [int(x) for x in next(out).split()] == [
            py(amd.full_threshold)(ph, n) % (1 << 64), py(amd.empty_threshold)(ph, n) % (1 << 64),
            py(amd.full_ready)(k, ph, n), py(amd.empty_ready)(k, ph, n)], (ph, n, k)


def test_kernel_pieces_compile_to_the_backend(tmp_path):
    """The kernel's own printed text: amd thresholds, probe_amd's test, the wait's parity."""
    source = (G.amd_helpers()
              + "u32 probe(u64 ctr, u64 threshold) { return " + G.amd_ready("ctr") + " ? 1u : 0u; }\n"
              + "u32 parity_of(i64 ph) { return " + G.nv_wait_parity("ph") + "; }\n"
              + "int main(void) { i64 ph; u64 n, k;\n"
                "  while (scanf(\"%lld %llu %llu\", &ph, &n, &k) == 3)\n"
                "    printf(\"%llu %llu %u %u %u\\n\", amd_full_threshold(ph, n), amd_empty_threshold(ph, n),\n"
                "           probe(k, amd_full_threshold(ph, n)), probe(k, amd_empty_threshold(ph, n)),"
                " parity_of(ph));\n  return 0; }\n")
    cases = [(ph, n, k) for ph, n, k in AMD_CASES if ph >= 0]
    out = compile_and_run(tmp_path, source, "".join(f"{ph} {n} {k}\n" for ph, n, k in cases))
    for (ph, n, k), line in zip(cases, out):
        full, empty, rf, re_, par = (int(x) for x in line.split())
        assert (full, empty) == (py(amd.full_threshold)(ph, n), py(amd.empty_threshold)(ph, n))
        assert (rf, re_) == (py(amd.full_ready)(k, ph, n), py(amd.empty_ready)(k, ph, n))
        # the hardware's test, parity(phase_no) != operand, is backends.nvidia.ready
        for pn in range(4):
            assert ((pn & 1) != par) == py(nvidia.ready)(pn, ph)
    assert U32 == (1 << 32) - 1


# ------------------------------------------------------------------ no copies left

def _backend_function(module, fn):
    """`fn` as if `module` defined it (its body names the primitives, as a backend's does)."""
    fn.__module__ = module.__name__
    return fn


def test_changing_a_backend_function_changes_the_exports(monkeypatch):
    spec = load_spec(TX_SPEC)
    promela, murphi = to_promela(spec), to_murphi(spec)

    def ready(phase_no, phase):          # a different rule: equal parities
        return parity(phase_no) == parity(phase)

    def intended_phase(phase, initial_phase):
        return phase - 2 * initial_phase
    monkeypatch.setattr(nvidia, "ready", _backend_function(nvidia, ready))
    monkeypatch.setattr(nvidia, "intended_phase", _backend_function(nvidia, intended_phase))
    monkeypatch.setattr(nvidia, "TX_LIMIT", 4095)
    p2, m2 = to_promela(spec), to_murphi(spec)
    assert "#define PARITY_READY(pn, ph) (((pn) & 1) == ((ph) & 1))" in p2
    assert "(pn) == ((ph) - (2 * (p0)))" in p2 and "((ph) - (p0)) - ((p0) & 1)" in promela
    assert "return ((((pn % 2) + 2) % 2) = (((ph % 2) + 2) % 2));" in m2 and "(pn = (ph - (2 * p0)))" in m2
    # the update reads TX_LIMIT from its module: the printed trap follows it
    assert "> 4095)" in cut(p2, "inline sig_update(", "\n}\n") and "> 1048575)" in promela
    assert "> 4095)" in cut(m2, "procedure sig_update(", "\nend;")
    with pytest.raises(GenerationError, match=r"no longer parity\(phase_no\) != P\(phase\)"):
        generate(load_spec(PLAIN_SPEC))
    assert murphi != m2


def test_changing_an_update_changes_the_printed_update(monkeypatch):
    def update(phase_no, pending, tx, expected, arrive_count, tx_delta, observed=1):
        left = pending - arrive_count     # no over-arrival trap, no tx, never runs ahead
        return (select(left == 0, phase_no + 1, phase_no),
                select(left == 0, expected, left), 0, 0)
    monkeypatch.setattr(nvidia, "update", _backend_function(nvidia, update))
    text = to_promela(load_spec(PLAIN_SPEC))
    inline = cut(text, "inline sig_update(", "\n}\n")
    assert "assert(over_arrival)  /* trap */" not in inline and "ran ahead" not in inline
    assert "pd_ = (((SG.pending - (CNT)) == 0) -> (EXPECTED) : (SG.pending - (CNT)));" in inline
    murphi = to_murphi(load_spec(PLAIN_SPEC))
    assert "(trap)" not in cut(murphi, "procedure sig_update(", "\nend;")


def test_the_ran_ahead_test_is_the_updates_ran_ahead_bit(monkeypatch):
    """The completion's ran-ahead test is update's RAN_AHEAD outcome (given COMPLETED), with
    `observed` read as a boolean; an update that never runs ahead prints none."""
    spec = load_spec(PLAIN_SPEC)
    assert "    if :: ((SG.phase_no >= 1) && (!SG.observed)) -> assert(over_arrival)  /* ran ahead */" \
        in cut(to_promela(spec), "inline sig_update(", "\n}\n")
    assert "    if ((s.phase_no >= 1) & (!s.observed)) then error \"over_arrival: a phase completed" \
        in cut(to_murphi(spec), "procedure sig_update(", "\nend;")

    def update(phase_no, pending, tx, expected, arrive_count, tx_delta, observed=1):
        left = pending - arrive_count     # completes at the count, never runs ahead
        return (select(left == 0, phase_no + 1, phase_no), select(left == 0, expected, left), 0,
                select(left == 0, COMPLETED, 0))
    monkeypatch.setattr(nvidia, "update", _backend_function(nvidia, update))
    inline = cut(to_promela(spec), "inline sig_update(", "\n}\n")
    assert "ran ahead" not in inline and "SG.observed = 0" in inline
    murphi = cut(to_murphi(spec), "procedure sig_update(", "\nend;")
    assert "a phase completed" not in murphi and "s.observed := false;" in murphi


def test_exports_and_kernel_take_a_backend_by_its_record(tmp_path):
    """A registered backend whose signals are no mbarriers (no phase_parity) is refused by the
    exports, and one without an entry in cuda_ref/emit_backend.py by the GPU generator."""
    from pipeproof.backends.capabilities import register, unregister
    from pipeproof.checker.models.exporter import IR
    from pipeproof.cuda_ref.emit_backend import DEVICE_BACKENDS
    from pipeproof.spec.load import load_spec_text
    from pipeproof.spec.schema import SpecError
    from tests import toy_backend
    assert set(DEVICE_BACKENDS) == set(G.BACKEND_MODULES) == {"nvidia", "amd"}
    assert IR(load_spec(PLAIN_SPEC), "promela").rules is nvidia
    spec_text = PLAIN_SPEC.read_text().replace('backend = "nvidia"', 'backend = "toy"')
    assert 'backend = "toy"' in spec_text
    register(toy_backend.RECORD)
    try:
        spec = load_spec_text(spec_text, "toy.toml")
        for export in (to_promela, to_murphi):
            with pytest.raises(SpecError, match=r"toy.toml: \[pipeline\] backend: the toy backend "
                                                r"cannot be exported to (promela|murphi)"):
                export(spec)
        with pytest.raises(GenerationError, match=r"backend 'toy' has no GPU reference kernel"):
            generate(spec)
    finally:
        unregister("toy")


def test_changing_the_amd_thresholds_changes_the_kernel(monkeypatch):
    before = generate(load_spec(ROOT / "spec" / "examples" / "mojo_pcp_amd.toml")).source
    assert "return (((u64)(u32)(phase + 1)) * count);" in before
    assert "return ((u64)cnt_load(a) >= threshold) ? 1u : 0u;" in before

    def full_threshold(phase, producer_arrive_count):
        return wrap32(phase + 2) * producer_arrive_count
    monkeypatch.setattr(amd, "full_threshold", _backend_function(amd, full_threshold))
    after = generate(load_spec(ROOT / "spec" / "examples" / "mojo_pcp_amd.toml")).source
    assert "return (((u64)(u32)(phase + 2)) * count);" in after

    def full_ready(counter, phase, producer_arrive_count):   # no longer a threshold test
        return counter >= phase
    monkeypatch.setattr(amd, "full_ready", _backend_function(amd, full_ready))
    with pytest.raises(GenerationError, match="compare the counter with their own threshold"):
        generate(load_spec(ROOT / "spec" / "examples" / "mojo_pcp_amd.toml"))


def test_every_kernel_prints_the_same_parity_as_before():
    # the operand of test_wait.parity, printed from backends.nvidia.ready, is phase & 1
    g = generate(load_spec(PLAIN_SPEC))
    assert "wait_nv(c, sig_addr(0, st0, 1), (u32)(ph0 & 1))" in g.source
    assert isinstance(printed_backend(nvidia).ready(sym("a", "cuda"), sym("b", "cuda")), Expr)
