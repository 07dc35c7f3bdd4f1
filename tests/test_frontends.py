"""The front-end seam (checker/frontends/): the registry, the reader protocol every front end
implements, and a toy front end registered here (a reader of a tiny hand-written IR) going
through the one driver to a verdict with its source lines, and refused in one line."""
from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field

import pytest

from pipeproof.checker.frontends import (KernelIR, Reader, Reading, ReadOptions, Refusal, TripCounts,
                                         check, extract, front_ends, reader, register, unregister)
from pipeproof.checker.frontends.protocol import program_of
from pipeproof.spec.schema import SpecError


# ---------------------------------------------------------------- the registry and the protocol

def test_the_registry_lists_triton_and_mojo_with_their_commands():
    from pipeproof.checker.cli.main import OWN_COMMANDS
    from pipeproof.checker.frontends import commands
    assert front_ends()[:2] == ["triton", "mojo"]
    assert commands()["triton"] == ("pipeproof.checker.cli.triton", "triton")
    assert commands()["mojo"] == ("pipeproof.checker.cli.mojo", "mojo")
    assert {"triton", "mojo"} <= set(OWN_COMMANDS)   # `pipeproof` registers them from there
    with pytest.raises(KeyError, match="registered: triton, mojo"):
        reader("ptx-not-yet")


def _protocol_members():
    return {name: value for name, value in vars(Reader).items()
            if not name.startswith("_") and callable(value)}


@pytest.mark.parametrize("name", front_ends())
def test_every_registered_reader_satisfies_the_protocol(name):
    r = reader(name)
    assert isinstance(r, Reader)
    assert r.name == name and r.ir and r.rerun_hint
    for member, proto in _protocol_members().items():
        want = [p for p in inspect.signature(proto).parameters if p != "self"]
        got = [p for p in inspect.signature(getattr(r, member)).parameters if p != "self"]
        assert got == want, (name, member)


def test_the_real_readers_give_roles_launch_and_a_source_map_on_committed_ir():
    """No Triton or Mojo needed: the committed TTGIR and LLVM IR fixtures."""
    from pipeproof.checker.frontends import extract_text
    from tests.paths import FIXTURES_DIR
    mojo = reader("mojo")
    options = ReadOptions(args={"2": 3}, extra={"block_dim": 64})
    got = extract_text(mojo, mojo.load(str(FIXTURES_DIR / "mojo" / "pc_nvidia.ll"), options), options)
    assert [r.name for r in got.reading.roles] == ["warp0", "warp1"]
    assert {k: got.reading.launch[k] for k in ("backend", "cluster", "block_dim")} == \
        {"backend": "nvidia", "cluster": 1, "block_dim": 64}
    # Mojo's debug info has the call chain: the method, then its caller
    assert got.source.at("warp0", "body", 0) == ("warp0", "wait_empty <- wait_consumer", "pc_nvidia.mojo:25")
    triton = reader("triton")
    options = ReadOptions(args={"n_tiles": 5})
    ir = triton.load(str(FIXTURES_DIR / "triton_versions" / "rowsum_3.9.0.ttgir"), options)
    got = extract_text(triton, ir, options)
    assert got.reading.launch["partitions"] == {"default": 4, "partition0": 1}
    partition, op, line = got.source.at("default", "body", 0)
    assert (partition, op) == ("default", "ttng.wait_barrier") and line.endswith("kernel_3.9.0.py:40")
    assert "n_tiles" in triton.functions(ir)["gluon_ring_rowsum"]
    # no n_tiles: one line, at the kernel's line (here the loop has no location: its IR line
    # again), the IR line and the op
    with pytest.raises(SpecError) as refused:
        extract_text(triton, ir, ReadOptions())
    message = str(refused.value)
    assert "\n" not in message
    assert re.match(r"\S+:\d+ \(\S*rowsum_3\.9\.0\.ttgir:42, scf\.for\): cannot evaluate", message)


# ---------------------------------------------------------------- a toy front end
# Its IR: one op a line, `OP OPERANDS @ FILE:LINE` (the kernel's source line). `ring NAME S C`
# is an array of S barriers of count C; `buffer NAME S BYTES` ring data; `role NAME` starts a
# role, `for N` its item loop (to the end of the role). In item i an op touches stage i % S;
# `wait R` waits for parity (i // S) & 1, `wait R free` for the other one (a free slot).

TOY_OK = """\
ring ready 2 1 @ toy.py:3
ring done 2 1 @ toy.py:4
buffer tile 2 64 @ toy.py:5
role loader
for 4
wait done free @ toy.py:8
expect ready 64 @ toy.py:9
copy tile ready @ toy.py:10
role user
for 4
wait ready @ toy.py:13
read tile @ toy.py:14
arrive done @ toy.py:15
"""
# the user reads its tile before waiting for it
TOY_BUG = TOY_OK.replace("wait ready @ toy.py:13\nread tile @ toy.py:14",
                         "read tile @ toy.py:14\nwait ready @ toy.py:13")


@dataclass(eq=False)
class ToyArray:
    name: str
    slots: int


@dataclass(frozen=True)
class ToyRef:
    array: ToyArray
    index: int


@dataclass(frozen=True)
class ToyOp:
    name: str     # the IR op
    line: int     # its line in the IR
    where: str    # the kernel's source line


@dataclass
class ToyEvent:   # what spec/frontend_core.Builder reads of an event
    kind: str
    op: ToyOp
    barrier: ToyRef | None = None
    value: int = 0
    buffer: ToyRef | None = None
    iters: tuple = ()
    extra: tuple = ()
    seq: int = 0


@dataclass
class ToyRole:    # ... and of a partition
    name: str
    warps: int = 1
    events: list = field(default_factory=list)
    starts: dict = field(default_factory=dict)
    ends: dict = field(default_factory=dict)
    ws_start: int | None = None
    ws_end: int | None = None
    seq: int = 0

    def seq_next(self) -> int:
        """Run order: each event, and each start and end of the item loop, takes the next."""
        self.seq += 1
        return self.seq - 1


class ToyReader:
    name = "toy"
    ir = "the toy IR of tests/test_frontends.py"
    rerun_hint = "the toy's check without --prove"

    def load(self, target: str, options: ReadOptions) -> KernelIR:
        from pathlib import Path
        return KernelIR(Path(target).read_text(), target)

    def read(self, ir: KernelIR, options: ReadOptions) -> Reading:
        arrays, roles, body = {}, [], []
        lines = [(n, *ln.partition(" @ ")[::2]) for n, ln in enumerate(ir.text.splitlines(), 1)]
        for n, text, where in lines:
            word, *rest = text.split()
            if word in ("ring", "buffer"):
                arrays[rest[0]] = (ToyArray(rest[0], int(rest[1])), int(rest[2]), ToyOp(word, n, where))
            elif word == "role":
                roles.append((ToyRole(rest[0]), []))
            elif word == "for":
                roles[-1][1].append(int(rest[0]))
            else:
                roles[-1][1].append((word, rest, ToyOp(word, n, where)))
        init = roles[0][0]
        for arr, count, op in arrays.values():
            if op.name == "ring":
                for s in range(arr.slots):
                    self._emit(init, ToyEvent("init", op, ToyRef(arr, s), count))
        for role, ops in roles:
            items, loop = ops[0], ("loop", role.name)
            for i in range(items):
                role.starts.setdefault(loop, []).append(role.seq_next())
                for word, rest, op in ops[1:]:
                    self._emit(role, self._event(word, rest, op, arrays, i, ((loop, i),), ir))
            role.ends.setdefault(loop, []).append(role.seq_next())
        parts = [role for role, _ in roles]
        return Reading(ir, options, "toy", parts, {"roles": len(parts)}, lambda: self._build(ir, parts))

    @staticmethod
    def _emit(role, ev):
        ev.seq = role.seq_next()
        role.events.append(ev)

    @staticmethod
    def _event(word, rest, op, arrays, i, iters, ir):
        def ref(name):
            arr = arrays[name][0]
            return ToyRef(arr, i % arr.slots)
        if word == "wait":
            phase = (i // arrays[rest[0]][0].slots) & 1
            return ToyEvent("wait", op, ref(rest[0]), phase ^ (rest[1:] == ["free"]), iters=iters)
        if word == "arrive":
            return ToyEvent("arrive", op, ref(rest[0]), 1, iters=iters)
        if word == "expect":
            return ToyEvent("expect", op, ref(rest[0]), int(rest[1]), iters=iters)
        if word == "copy":
            return ToyEvent("copy", op, ref(rest[1]), arrays[rest[0]][1], ref(rest[0]), iters=iters)
        if word == "read":
            return ToyEvent("read", op, buffer=ref(rest[0]), iters=iters)
        raise Refusal(op.where, f"{ir.where}:{op.line}", word, f"op {word} is not one the toy "
                      f"front end reads")

    @staticmethod
    def _build(ir, parts):
        from pipeproof.spec.frontend_core import Builder
        return Builder(ir.where, parts, "toy", lambda op: op.where).toml()

    def trip_counts(self, reading: Reading, toml_text: str, target: str) -> TripCounts:
        return TripCounts(None, (f"{target}: the toy's trip counts are its own",))

    @staticmethod
    def step_text(step: dict) -> str:
        return f"{step['partition']:<8} {step['op']:<8} {step['line']}"


@pytest.fixture
def toy():
    register("toy", ToyReader())
    yield reader("toy")
    unregister("toy")


def _toy_file(tmp_path, text, name="kernel.toy"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_toy_reader_registered_here_satisfies_the_protocol(toy):
    assert "toy" in front_ends() and isinstance(toy, Reader)
    for member, proto in _protocol_members().items():
        want = [p for p in inspect.signature(proto).parameters if p != "self"]
        assert [p for p in inspect.signature(getattr(toy, member)).parameters if p != "self"] == want


def test_the_toy_goes_through_the_driver_to_ok(toy, tmp_path):
    target = _toy_file(tmp_path, TOY_OK)
    got = extract(toy, toy.load(target, ReadOptions()), ReadOptions(), target)
    assert got.reading.launch == {"roles": 2} and [r.name for r in got.reading.roles] == ["loader", "user"]
    assert "items = 4" in got.toml_text and "# wait toy.py:13" in got.toml_text
    checked = check(got, do_prove=False)
    assert (checked.result.verdict, checked.code, checked.lines) == ("ok", 0, [])
    proved = check(got, do_prove=True, counts=toy.trip_counts(got.reading, got.toml_text, target))
    assert (proved.code, proved.kernel_status, proved.elsewhere) == (0, "proved", False)
    assert program_of(got.toml_text) == program_of(got.toml_text.replace("items = 4", "items = 9"))


def test_the_toy_bug_is_a_violation_at_its_source_lines(toy, tmp_path):
    target = _toy_file(tmp_path, TOY_BUG)
    got = extract(toy, toy.load(target, ReadOptions()), ReadOptions(), target)
    checked = check(got, do_prove=False)
    assert (checked.result.verdict, checked.result.kind, checked.code) == ("violation", "read_before_fill", 1)
    steps = [s for s in checked.lines if s["step"] != "end"]
    assert steps[-1] == {"step": checked.result.depth, "partition": "user", "op": "read",
                         "line": "toy.py:14"}   # the violating step: the read, at its line
    assert {s["line"] for s in checked.lines} <= {"toy.py:8", "toy.py:9", "toy.py:10", "toy.py:13",
                                                 "toy.py:14", "toy.py:15"}


def test_the_toy_command_reports_the_verdict_with_source_lines(toy, tmp_path, capsys):
    from pipeproof.checker.cli.frontend import run_frontend
    target = _toy_file(tmp_path, TOY_BUG)

    def run(**kw):
        with pytest.raises(SystemExit) as done:
            run_frontend(toy, target, lambda: (toy.load(target, ReadOptions()), ReadOptions()),
                         emit=None, trace_file=None, max_states=None, timeout=None, **kw)
        return done.value.code, capsys.readouterr()

    code, out = run(as_json=True, do_prove=False)
    doc = json.loads(out.out)
    assert code == 1 and doc["violation"]["kind"] == "read_before_fill" and doc["target"] == target
    assert {"step": doc["violation"]["depth"], "partition": "user", "op": "read",
            "line": "toy.py:14"} in doc["source"]
    assert re.search(r"step +\d+  user +read +toy\.py:14", out.err)
    code, out = run(as_json=False, do_prove=True)
    assert code == 1 and "violated at item count" in out.out
    assert f"{target}: the toy's trip counts are its own" in out.out and "in the kernel:" in out.out


def test_a_toy_op_it_cannot_read_is_refused_in_one_line_naming_ir_and_source_lines(toy, tmp_path, capsys):
    from pipeproof.checker.cli.frontend import run_frontend
    target = _toy_file(tmp_path, TOY_OK.replace("arrive done @ toy.py:15", "fence done @ toy.py:15"))
    with pytest.raises(SpecError) as refused:
        extract(toy, toy.load(target, ReadOptions()), ReadOptions(), target)
    message = str(refused.value)
    assert isinstance(refused.value, Refusal) and "\n" not in message
    assert message == f"toy.py:15 ({target}:13, fence): op fence is not one the toy front end reads"
    sarif = tmp_path / "out.sarif"
    with pytest.raises(SystemExit) as done:
        run_frontend(toy, target, lambda: (toy.load(target, ReadOptions()), ReadOptions()),
                     emit=None, as_json=True, trace_file=None, do_prove=False, max_states=None,
                     timeout=None, sarif_file=str(sarif))
    out = capsys.readouterr()
    assert done.value.code == 2 and out.out == "" and out.err == message + "\n"
    assert "unreadable" in sarif.read_text()
