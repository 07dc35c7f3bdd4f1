"""One LLVM instruction's operands, parsed once for the interpreter (spec/mojo/interp.py) from
its text (spec/mojo/llvm.py's tokenizer and parser): `parse_inst`, by opcode family."""
from __future__ import annotations

import re

from pipeproof.spec.mojo.llvm import Parser, tokenize

BINOPS = ("add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "and", "or", "xor", "shl", "lshr", "ashr")
CASTS = ("trunc", "zext", "sext", "ptrtoint", "inttoptr", "bitcast", "addrspacecast", "freeze")
FLAGS = ("nuw", "nsw", "exact", "disjoint", "inbounds", "nusw", "samesign", "volatile", "tail",
         "musttail", "notail", "fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc")


def parse_inst(inst):
    """The operands of `inst` as the interpreter reads them (a tuple per opcode; None for an
    opcode it does not read, and for alloca and `ret void`)."""
    toks = tokenize(inst.text)
    ps = Parser(toks, 1)
    if toks and toks[0][1] in ("tail", "musttail", "notail"):
        ps.i = 2
    parse = PARSERS.get(inst.opcode)
    return parse(ps, inst.opcode) if parse is not None else None


def flags(ps):
    while ps.peek()[1] in FLAGS:
        ps.next()


def parse_value(ps, op):
    """Arithmetic, comparisons, select, casts and getelementptr."""
    if op in BINOPS:
        flags(ps)
        t = ps.type()
        a = ps.value(t)
        ps.expect(",")
        return (t, a, ps.value(t))
    if op == "icmp":
        flags(ps)
        pred = ps.next()[1]
        t = ps.type()
        a = ps.value(t)
        ps.expect(",")
        return (pred, t, a, ps.value(t))
    if op == "select":
        flags(ps)
        ct = ps.type()
        c = ps.value(ct)
        ps.expect(",")
        t = ps.type()
        a = ps.value(t)
        ps.expect(",")
        ps.type()
        return (c, a, ps.value(t))
    if op in CASTS:
        flags(ps)
        at = ps.type()
        v = ps.value(at)
        if op == "freeze":
            return (at, v, at)
        ps.expect("to")
        return (at, v, ps.type())
    # getelementptr
    flags(ps)
    src = ps.type()
    args = []
    while ps.accept(","):
        flags(ps)
        if ps.peek()[1] == "inrange":
            ps.next()
        at = ps.type()
        args.append((at, ps.value(at)))
    return (src, args)


def parse_terminator(ps, op):
    """br, switch and ret."""
    if op == "br":
        if ps.peek()[1] == "label":
            ps.next()
            return (ps.next()[1],)
        ct = ps.type()
        c = ps.value(ct)
        ps.expect(",")
        ps.expect("label")
        a = ps.next()[1]
        ps.expect(",")
        ps.expect("label")
        return (c, a, ps.next()[1])
    if op == "switch":
        t = ps.type()
        v = ps.value(t)
        ps.expect(",")
        ps.expect("label")
        default = ps.next()[1]
        ps.expect("[")
        cases = []
        while not ps.accept("]"):
            ct = ps.type()
            cv = ps.value(ct)[1]
            ps.expect(",")
            ps.expect("label")
            cases.append((cv, ps.next()[1]))
        return (t, v, default, cases)
    # ret
    if ps.peek()[1] == "void":
        return None
    t = ps.type()
    return ps.value(t)


def parse_memory(ps, op):
    """load, store and atomicrmw."""
    if op == "load":
        atomic = ps.accept("atomic")
        ps.accept("volatile")
        t = ps.type()
        ps.expect(",")
        at = ps.type()
        return (t, ps.value(at), atomic)
    if op == "store":
        ps.accept("atomic")
        ps.accept("volatile")
        t = ps.type()
        v = ps.value(t)
        ps.expect(",")
        at = ps.type()
        return (t, v, ps.value(at))
    # atomicrmw
    ps.accept("volatile")
    what = ps.next()[1]
    at = ps.type()
    addr = ps.value(at)
    ps.expect(",")
    t = ps.type()
    return (what, t, addr, ps.value(t))


def parse_aggregate(ps, op):
    """extractvalue, insertvalue, extractelement and insertelement."""
    t = ps.type()
    v = ps.value(t)
    if op == "extractvalue":
        idx = []
        while ps.accept(","):
            idx.append(int(ps.next()[1]))
        return (t, v, idx)
    ps.expect(",")
    if op == "extractelement":
        it = ps.type()
        return (t, v, it, ps.value(it))
    et = ps.type()
    e = ps.value(et)
    if op == "insertvalue":
        idx = []
        while ps.accept(","):
            idx.append(int(ps.next()[1]))
        return (t, v, et, e, idx)
    ps.expect(",")  # insertelement
    it = ps.type()
    return (t, v, et, e, it, ps.value(it))


def parse_call(ps, op):
    """call: (return type, callee: ("asm", text, constraints) or ("fn", name), [(type, value)])."""
    flags(ps)
    while ps.peek()[0] == "word" and ps.peek()[1] not in ("void", "ptr", "asm") \
            and not re.match(r"i\d+$", ps.peek()[1]) and ps.peek()[1] not in ("float", "half", "bfloat", "double"):
        ps.next()  # calling convention, return attributes
        if ps.peek()[1] == "(":
            while ps.next()[1] != ")":
                pass
    ret = ps.type()
    if ps.peek()[1] == "asm":
        ps.next()
        while ps.peek()[0] == "word":
            ps.next()  # sideeffect, convergent, inteldialect
        text = ps.next()[1][1:-1]
        ps.expect(",")
        cons = ps.next()[1][1:-1]
        callee = ("asm", text, cons)
    else:
        callee = ("fn", ps.next()[1])
    ps.expect("(")
    args = []
    if not ps.accept(")"):
        while True:
            at = ps.type()
            ps.skip_attrs()
            args.append((at, ps.value(at)))
            if ps.accept(")"):
                break
            ps.expect(",")
    return (ret, callee, args)


PARSERS = {**{op: parse_value for op in BINOPS + CASTS + ("icmp", "select", "getelementptr")},
           **{op: parse_terminator for op in ("br", "switch", "ret")},
           **{op: parse_memory for op in ("load", "store", "atomicrmw")},
           **{op: parse_aggregate for op in ("extractvalue", "insertvalue", "extractelement",
                                             "insertelement")},
           "call": parse_call}
