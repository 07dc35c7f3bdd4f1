"""The backend's signal rules, printed for the exports: where the Promela and Murphi models meet
the backend (its record, ir.IR.caps; the exports take a backend whose signals are mbarriers,
its `phase_parity`). Everything is printed from its rules module's protocol functions
(backends/protocol.py) over backends/printed.py's expressions, never copied:

- `parity_ready`: signal_ready of a parity wait (it reads phase_no and the waiter's phase alone,
  the same on either kind of signal);
- `in_window`: in_window_at of the waiter's intended_phase (a waiter with no `reset`);
- `signal_update`: update, with when it traps, completes, and runs ahead (its RAN_AHEAD outcome
  given COMPLETED, the signal's `observed` flag read as a boolean), and its new fields;
- `promela_signals` / `promela_sig_update`: the Promela macros PARITY_READY, IN_WINDOW,
  INTENDED_AFTER, IN_WINDOW_AT and the inline sig_update;
- `murphi_signals`: the Murphi functions parity_ready, in_window, intended_after, in_window_at
  and the procedure sig_update (Murphi has no conditional expression: each printed `select` is
  an if-chain).

The initial signal is the rules' `init`, printed where each language sets the start state.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeproof.backends.base import COMPLETED, EMPTY, FULL, RAN_AHEAD, TRAP_OVER_ARRIVAL, TRAP_TX_RANGE
from pipeproof.backends.printed import (
    Expr, PrintError, condition, lift, make, render, same, statements, sym,
)
from pipeproof.checker.models.ir import IR, KIND_MESSAGES


def _atoms(e) -> set:
    """The atoms' texts in a printed value."""
    if not isinstance(e, Expr):
        return set()
    if e.op == "name":
        return {e.args[0]}
    return set().union(*(_atoms(x) for x in e.args))


def parity_ready(rules, phase_no: Expr, phase: Expr):
    """The protocol's signal_ready of a parity wait (printed `rules`, IR.signal_rules): would a
    wait at `phase` pass. An mbarrier's wait reads phase_no alone, the same on either kind of
    signal, which is the exports' PARITY_READY(pn, ph) / parity_ready(pn, ph)."""
    lang = phase_no.lang
    others = [sym(f"@{word}", lang) for word in ("pending", "tx", "expected")]
    full, empty = (rules.signal_ready(phase_no, others[0], others[1], others[2], phase, kind)
                   for kind in (FULL, EMPTY))
    if not same(full, empty) or any(a.startswith("@") for a in _atoms(full)):
        raise PrintError("the backend's signal_ready reads more than phase_no and the waiter's "
                         "phase: the exports' parity waits cannot print it")
    return full


def in_window(rules, phase_no, phase, initial_phase):
    """A parity wait at `phase` (initial phase p0) is in its window (semantics.in_phase_window
    of a waiter with no `reset`): in_window_at its intended phase, printed."""
    return rules.in_window_at(phase_no, rules.intended_phase(phase, initial_phase))


@dataclass
class SignalUpdate:
    """One atomic mbarrier update, printed from the backend's `update` over the signal's old
    fields: when it traps (over, tx_range), when it completes the phase, when that completion
    ran ahead (given that it completes), and each new field. Each is an `Expr` or a plain
    value (a tx-free model folds tx away)."""
    over: object
    tx_range: object
    completed: object
    ran_ahead: object     # RAN_AHEAD given COMPLETED (over_arrival: nobody observed the phase)
    fields: tuple         # (field name, new value) per field of the signal


def signal_update(rules, lang: str, field: str, expected: str, count: str, dtx: str,
                  has_tx: bool) -> SignalUpdate:
    """`rules` printed (IR.signal_rules); `field` formats a field's name ("SG.{}"); `expected`,
    `count` and `dtx` are the update's arguments as text. Without tx the signal has no tx field
    and every tx is 0. The signal's `observed` flag is a boolean: the ran-ahead test reads it
    as one (Murphi's cannot be compared with 0)."""
    at = lambda text: sym(text, lang)
    tx, delta = (at(field.format("tx")), at(dtx)) if has_tx else (0, 0)
    observed = at(field.format("observed"))
    phase_no, pending, new_tx, outcome = rules.update(
        at(field.format("phase_no")), at(field.format("pending")), tx, at(expected), at(count), delta,
        observed)
    bit = lambda b: (outcome & b) != 0
    completed = bit(COMPLETED)
    fields = (("phase_no", phase_no), ("pending", pending)) + ((("tx", new_tx),) if has_tx else ())
    return SignalUpdate(bit(TRAP_OVER_ARRIVAL), bit(TRAP_TX_RANGE), completed,
                        _as_flag(_given(bit(RAN_AHEAD), completed), observed), fields)


def _conjuncts(e) -> list:
    if isinstance(e, Expr) and e.op == "both":
        return _conjuncts(e.args[0]) + _conjuncts(e.args[1])
    return [e]


def _given(cond, known):
    """`cond` where `known` holds: its conjuncts that are not conjuncts of `known`."""
    facts = _conjuncts(lift(known))
    rest = [c for c in _conjuncts(lift(cond)) if not any(same(c, f) for f in facts)]
    out = rest[-1] if rest else True
    for c in reversed(rest[:-1]):
        out = make("both", (c, out))
    return out


def _as_flag(e, flag: Expr):
    """`e` with every comparison of the boolean atom `flag` with 0 or 1 written as the flag or
    its negation."""
    if not isinstance(e, Expr) or e.op == "name":
        return e
    x, y = (e.args + (None,))[:2]
    if e.op in ("==", "!=") and same(x, flag) and not isinstance(y, Expr) and y in (0, 1):
        return flag if (y == 1) == (e.op == "==") else make("negate", (flag,))
    return make(e.op, tuple(_as_flag(a, flag) for a in e.args))


# ---------------------------------------------------------------------------------- Promela

def _text(value) -> str:
    return render(value, "promela")


def _cond(value) -> str:
    return condition(value, "promela")


def _p(text: str):
    return sym(text, "promela")


def promela_signals(ir: IR) -> list[str]:
    """The macros PARITY_READY and IN_WINDOW, and with window records INTENDED_AFTER and
    IN_WINDOW_AT."""
    out: list[str] = []
    w = lambda *lines: out.extend(lines)
    nv, bk = ir.signal_rules(), ir.caps.name
    w(f"/* backends.{bk}.ready and in_window, printed */",
      "#define PARITY_READY(pn, ph) " + _text(parity_ready(nv, _p("(pn)"), _p("(ph)"))),
      "#define IN_WINDOW(pn, ph, p0) " + _text(in_window(nv, _p("(pn)"), _p("(ph)"), _p("(p0)"))))
    if ir.has_window:
        w(f"/* backends.{bk}.intended_after and in_window_at, printed: the phase meant from the",
          " * last passed wait (k', ph'), and its window */",
          "#define INTENDED_AFTER(kl, pl, ph) "
          + _text(nv.intended_after(_p("(kl)"), _p("(pl)"), _p("(ph)"))),
          "#define IN_WINDOW_AT(pn, k) " + _text(nv.in_window_at(_p("(pn)"), _p("(k)"))))
    return out


def promela_sig_update(ir: IR) -> list[str]:
    """inline sig_update: one atomic update, printed from the rules' update."""
    out: list[str] = []
    w = lambda *lines: out.extend(lines)
    u = signal_update(ir.signal_rules(), "promela", "SG.{}", "(EXPECTED)", "(CNT)", "(DTX)", ir.has_tx)
    temps = {"phase_no": "pn_", "pending": "pd_", "tx": "tx_"}
    used = ", ".join(temps[name] for name, _ in u.fields)
    w(f"/* One atomic mbarrier update, printed from backends.{ir.caps.name}.update: CNT arrivals and",
      " * tx += DTX, then the phase check. Every new field is computed from the old ones",
      f" * (into {used}) before any is stored. */",
      "inline sig_update(SG, EXPECTED, CNT, DTX) {")
    for when, what in ((u.over, "assert(over_arrival)  /* trap */"),
                       (u.tx_range, "assert(tx_range)  /* trap */")):
        if lift(when) is not False:  # no tx: tx_range folds away
            w(f"  if :: {_cond(when)} -> {what} :: else -> skip fi;")
    if lift(u.completed) is not False:
        w("  if", f"  :: {_cond(u.completed)} ->")
        if lift(u.ran_ahead) is not False:  # given that it completes
            w(f"    if :: {_cond(u.ran_ahead)} -> assert(over_arrival)  /* ran ahead */",
              "    :: else -> skip fi;")
        w("    SG.observed = 0", "  :: else -> skip", "  fi;")
    w(*(f"  {temps[name]} = {_text(value)};" for name, value in u.fields))
    w("  " + "; ".join(f"SG.{name} = {temps[name]}" for name, _ in u.fields), "}", "")
    return out


# ---------------------------------------------------------------------------------- Murphi

def murphi_signals(ir: IR) -> list[str]:
    """The functions parity_ready and in_window, with window records intended_after and
    in_window_at, and the procedure sig_update."""
    out: list[str] = []
    w = lambda *lines: out.extend(lines)
    nv, bk = ir.signal_rules(), ir.caps.name
    m = lambda text: sym(text, "murphi")
    w(f"-- backends.{bk}.ready, printed: the phase of parity ph has completed.",
      "function parity_ready(pn: pn_t; ph: ph_t): boolean;", "begin",
      *("  " + line for line in statements("return {};", parity_ready(nv, m("pn"), m("ph")), "murphi")),
      "end;", "",
      f"-- backends.{bk}.in_window, printed: a parity wait at phase ph (initial phase p0)",
      "-- is meaningful while phase_no is the phase it means or the next one.",
      "function in_window(pn: pn_t; ph: ph_t; p0: ph_t): boolean;", "begin",
      *("  " + line for line in statements("return {};", in_window(nv, m("pn"), m("ph"), m("p0")),
                                           "murphi")),
      "end;", "")
    if ir.has_window:
        w(f"-- backends.{bk}.intended_after, printed: the phase a waiter at ph means, from its",
          "-- last passed wait (k', ph') on the signal.",
          "function intended_after(kl: wk_t; pl: ph_t; ph: ph_t): ik_t;", "begin",
          *("  " + line for line in statements(
              "return {};", nv.intended_after(m("kl"), m("pl"), m("ph")), "murphi")),
          "end;", "",
          f"-- backends.{bk}.in_window_at, printed: phase_no is the phase k meant or the next.",
          "function in_window_at(pn: pn_t; k: ik_t): boolean;", "begin",
          *("  " + line for line in statements("return {};", nv.in_window_at(m("pn"), m("k")),
                                               "murphi")),
          "end;", "")
    u = signal_update(nv, "murphi", "s.{}", "expected", "cnt", "dtx", ir.has_tx)
    types = {"phase_no": "pn_t", "pending": "pend_t", "tx": "tx_t"}
    dtx = "; dtx: -TXL..TXL" if ir.has_tx else ""
    w(f"-- One atomic mbarrier update, printed from backends.{bk}.update: cnt arrivals and",
      "-- tx += dtx, then the phase check. Every new field is computed from the old ones",
      "-- before any is stored.",
      f"procedure sig_update(var s: sig_t; expected: pend_t; cnt: cnt_t{dtx});",
      "var " + " ".join(f"new_{name}: {types[name]};" for name, _ in u.fields), "begin")
    for when, kind in ((u.over, "over_arrival"), (u.tx_range, "tx_range")):
        if lift(when) is not False:  # no tx: tx_range folds away
            w(f"  if {condition(when, 'murphi')} then error \"{KIND_MESSAGES[kind]}\" endif;")
    if lift(u.completed) is not False:
        w(f"  if {condition(u.completed, 'murphi')} then")
        if lift(u.ran_ahead) is not False:  # given that it completes
            w(f"    if {condition(u.ran_ahead, 'murphi')} then "
              f"error \"{KIND_MESSAGES['over_arrival_ahead']}\" endif;")
        w("    s.observed := false;", "  endif;")
    for name, value in u.fields:
        w(*("  " + line for line in statements(f"new_{name} := {{}};", value, "murphi")))
    w(*(f"  s.{name} := new_{name};" for name, _ in u.fields), "end;", "")
    return out
