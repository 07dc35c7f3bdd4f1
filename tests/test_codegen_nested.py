"""The GPU generator on issue 47's ops, without a GPU: tile-level rings of nested loops (the tag
is the tile, item / tag_div, wherever a tag is stored, expected, looked for or copied from) and
`write_async` (a cp.async store of the slot's tag words, finished by cp.async.wait_group before
a read_wait, a commit or the agent's end; docs/rules.md "Async writes"). Where nvcc is installed
the kernel of an example with both compiles for sm_90a.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from pipeproof.checker.core import OP_EFFECTS
from pipeproof.checker.core.model import compile_model
from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref.codegen import generate
from pipeproof.cuda_ref.conform import conform
from pipeproof.spec.load import load_spec
from tests.conform_support import enabled, event_of
from tests.codegen_support import NVCC, agent_code, gen_text


ISSUE47 = ["x_fa3_persistent_ok", "x_fa3_persistent_q_released_early", "x_persistent_tiles_ok",
           "x_tcgen05_gemm_acc_ring_ok", "x_tcgen05_gemm_acc_freed_early",
           "x_tcgen05_gemm_acc_async_ok", "x_tcgen05_gemm_acc_arrive_not_commit"]


def example(name: str, replay: bool = False):
    return generate(load_spec(f"spec/examples/{name}.toml"), replay=replay)


def op_block(g, agent: int, text: str) -> str:
    """The code of the first op labelled `text` in agent `agent`'s function, to the next op."""
    code = agent_code(g, agent)
    start = code.index(f": {text}\n")
    end = code.find("// pc ", start)
    return code[start:end if end >= 0 else len(code)]


def agent_index(g, name: str) -> int:
    return g.agents.index(name)


@pytest.mark.parametrize("name", ISSUE47)
def test_every_issue47_example_generates_in_both_modes(name):
    """Nothing of issue 47 is refused any more, free runs and replays alike."""
    assert G.NO_GPU_YET == {}
    for replay in (False, True):
        g = example(name, replay)
        assert "pipeproof_kernel" in g.source and g.replay == replay


def test_a_tile_level_copy_and_read_carry_the_tile():
    """x_fa3_persistent_ok: the Q tile (ring q, tile level, 3 k-blocks per tile) is copied once
    per tile carrying the tile number, from the tile's source data, and every k-block's read
    expects the tile; the slot check's fill condition asks whether some k-block of that tile
    fills it (fills_tile, as semantics.part_filled_for)."""
    g = example("x_fa3_persistent_ok")
    q = g.ring_names.index("q")
    producer = agent_index(g, "producer[0]")
    copy = op_block(g, producer, "copy 16384 ring=q")
    assert re.search(r"issue_copy\(c, e, \d+, \d+, 1u, 1, \(u32\)st1, \(item / 3\), ", copy)
    assert "+ (u64)(item / 3) * 4096ull" in copy
    # its source data: one 16 KiB tile per tile (2 tiles), every word the tile number
    reg = next(r for r in g.rings[q].regions if r.agent == producer)
    assert reg.items == 2 and (reg.src_word, 4096, 2, 0) in g.src_fill
    consumer = agent_index(g, "consumer[0]")
    read = op_block(g, consumer, "read ring=q")
    assert f"check_r{q}_c0(c, (u32)st1, (item / 3), &found)" in read
    assert "observe_lands(c, e, 1, (u32)st1, (item / 3), LAND_READ)" in read
    wait = op_block(g, consumer, "wait_full ring=q")
    assert "observe_lands(c, e, 1, (u32)st1, (item / 3), LAND_WAIT)" in wait
    assert "if (fills_tile(item, 3, 3, 0, 6)) { any = 1;" in g.source
    # the log's reader expects the tile too (cuda_ref/log.py's mismatch text)
    pc = next(pc for pc, (n, t) in enumerate(g.agent_ops[consumer]) if t == "read ring=q")
    assert [g.expected_tag(consumer, pc, item) for item in range(6)] == [0, 0, 0, 1, 1, 1]
    # a k_block-level ring keeps the item
    assert "check_r0_c0(c, (u32)st0, item, &found)" in op_block(g, consumer, "read")


def test_a_tile_level_write_and_a_per_tile_reader_pair_by_tile():
    """x_tcgen05_gemm_acc_ring_ok: the MMA (4 k-blocks a tile) writes the accumulator as its
    tile; the epilogue, at one item per tile, reads its item, which is the tile."""
    g = example("x_tcgen05_gemm_acc_ring_ok")
    mma, epi = agent_index(g, "mma[0]"), agent_index(g, "epilogue[0]")
    assert re.search(r"store_fill\([^;]*, 4u, \(item / 4\)\);", op_block(g, mma, "write ring=acc"))
    assert "(u32)st1, item, &found)" in op_block(g, epi, "read ring=acc")


def test_an_async_write_is_a_cp_async_store_finished_before_its_commit():
    """x_tcgen05_gemm_acc_async_ok: the MMA's write_async of the accumulator (tile level, every
    part: the consumer-side write reuses the whole buffer) is issued as its step under the log
    lock, copies the tile's tag words from global memory with cp.async, closes them as one
    cp.async group and joins the agent's FIFO of async ops (push_read ..., 1u: a write). Each
    commit first finishes the FIFO (finish_reads down to 0: the write's cp.async.wait_group),
    then fires: the model's commit fires only after the agent's earlier async ops."""
    g = example("x_tcgen05_gemm_acc_async_ok")
    acc = g.ring_names.index("acc")
    mma = agent_index(g, "mma[0]")
    block = op_block(g, mma, "write_async ring=acc")
    lock, issue, unlock, push = (block.index(s) for s in (
        "glock(c); e = ev_begin(c); ev_put(c, e, 1, ", "async_store(c, ", "gunlock(c);",
        "push_read(c, 1, q, 3, 1, (u32)st1, (item / 4), 1u);"))
    assert lock < issue < unlock < push
    base = g.rings[acc].base
    word = next(w for w, words, tags, first in g.src_fill if (words, tags) == (4, 2))
    assert (f"async_store(c, {base}u + (u32)st1 * {g.rings[acc].slot_bytes}u + 0u, "
            f"c.src + {word}ull + (u64)(item / 4) * 4ull, 16u); async_commit();") in block
    for text in ("commit_empty", "commit_full ring=acc"):
        commit = op_block(g, mma, text)
        assert commit.index("finish_reads(c, 1, q, 0);") < commit.index("commit_fire(")
    # the finish of a write waits for its cp.async group (the later writes may stay pending)
    # and checks no slot; a read's finish checks it
    finish = g.source[g.source.index("__device__ u32 finish_one(Ctx& c, i32 agent, Reads& q) {"):]
    finish = finish[:finish.index("\n}\n")]
    assert finish.index("if (q.wr[0]) {") < finish.index("async_writes_wait(later);") \
        < finish.index("if (!q.wr[0]) bad = check_slot(")
    assert "CP_WAIT(0)" in g.source and '"cp.async.wait_group " #n ";"' in g.source
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in g.source


def test_an_arrive_does_not_wait_for_the_async_write():
    """x_tcgen05_gemm_acc_arrive_not_commit: the accumulator handed over by a plain arrive,
    which tracks nothing: no finish before it, so the epilogue can read it still being written
    (read_before_fill, as the model says)."""
    g = example("x_tcgen05_gemm_acc_arrive_not_commit")
    block = op_block(g, agent_index(g, "mma[0]"), "arrive_full ring=acc")
    assert "finish_reads" not in block and "signal_arrive(" in block


def test_read_wait_finishes_a_producer_side_async_write():
    """A producer's write_async stores its 16 tag bytes into its part by cp.async; `read_wait 0`
    finishes it (wait_group) before the arrive, so the consumer reads a finished write."""
    g = gen_text("""
        [pipeline]
        backend = "nvidia"
        stages = 2
        producer_arrive_count = 1
        consumer_arrive_count = 1
        items = 3
        [[role]]
        name = "producer"
        side = "producer"
        count = 1
        body = ["wait_empty", "write_async", "read_wait 0", "arrive_full", "advance"]
        [[role]]
        name = "consumer"
        side = "consumer"
        count = 1
        body = ["wait_full", "read", "arrive_empty", "advance"]
        """)
    code = agent_code(g, 0)
    assert code.index("async_store(c, ") < code.index("finish_reads(c, 0, q, 0);") \
        < code.index("signal_arrive(")
    word = next(w for w, words, tags, first in g.src_fill if (words, tags, first) == (4, 3, 0))
    assert f"c.src + {word}ull + (u64)item * 4ull, 16u); async_commit();" in code
    assert word % 4 == 0   # 16-byte aligned, as cp.async of 16 bytes needs


def kernel_order_log(m) -> dict:
    """A log in the order the reference kernel takes its steps (tests/conform_support.py writes
    the events): agents round-robin; a commit or read_wait first finishes its agent's async
    reads and writes, oldest first (finish_reads); a commit fires, and a copy lands, at once."""
    st, evs, n, turn = m.initial_state(), [], len(m.agents), 0
    while True:
        acts = {a: nxt for a, nxt, _ in enabled(m, st)}
        if not acts:
            break
        entries = [(a, m.decode_entry(st[m.off_inf + a - n])) for a in acts if a >= n]
        pick = next((a for a, e in entries if e["kind"] in ("commit", "copy")), None)
        for k in range(n if pick is None else 0):
            a = (turn + k) % n
            op = m.current_op(st, a)
            mine = [x for x, e in entries if e["kind"] == "read" and e["agent"] == m.agents[a].name]
            if op is not None and mine and (OP_EFFECTS[op.name].issues == "commit"
                                            or OP_EFFECTS[op.name].waits_reads):
                pick = mine[0]
                break
            if a in acts:
                pick, turn = a, a + 1
                break
        pick = next(iter(acts)) if pick is None else pick   # the end: finish what is left
        evs.append({"t": 1000 + 32 * len(evs), **event_of(m, st, pick, acts[pick])})
        st = acts[pick]
    bad = any(e.get("result") == "tag_mismatch" for e in evs)
    return {"spec": m.spec.path, "device": "kernel order", "command": "-", "seed": 0, "run": 0,
            "outcome": "read_before_fill" if bad else "ok", "events": evs}


@pytest.mark.parametrize("name", ["x_tcgen05_gemm_acc_async_ok", "x_fa3_persistent_ok"])
def test_a_log_in_the_kernels_order_conforms(name):
    """The kernel's order (every write_async finished before its agent's commit step, the
    commit fired at once; tile tags on the copies and reads) is a path of the model."""
    m = compile_model(load_spec(f"spec/examples/{name}.toml"))
    log = kernel_order_log(m)
    finishes = [e for e in log["events"] if e["op"] == "finish"]
    assert log["outcome"] == "ok" and (finishes or name == "x_fa3_persistent_ok")
    r = conform(m, log)
    assert r.ok and r.steps == len(log["events"]), r.message


@pytest.mark.skipif(not NVCC, reason="nvcc is not installed")
def test_the_async_write_kernel_compiles_for_sm90a(tmp_path):
    """Tile-level rings, read_async and write_async in one kernel: nvcc takes it for sm_90a,
    and the PTX has the cp.async store, its group and its wait."""
    g = example("x_tcgen05_gemm_acc_async_ok")
    cu = tmp_path / "k.cu"
    cu.write_text(g.source)
    r = subprocess.run([NVCC, "-ptx", "-arch=sm_90a", "-std=c++17", "-diag-suppress", "550",
                        str(cu), "-o", str(tmp_path / "k.ptx")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ptx = (tmp_path / "k.ptx").read_text()
    for form in ("cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group 0"):
        assert form in ptx, form


def test_a_run_log_judges_a_tile_level_read_by_its_tile():
    """cuda_ref/log.py: a read step of a tile-level ring records the agent's item and expects
    its tile; an async read's finish records the tag itself. A later tile found is the
    overwrite, an earlier one (or nothing) a read before the fill."""
    from pipeproof.cuda_ref import log as L
    g = example("x_fa3_persistent_ok")
    a = agent_index(g, "consumer[0]")
    pc = next(pc for pc, (_n, t) in enumerate(g.agent_ops[a]) if t == "read ring=q")
    step = {"t": 1, "agent": g.agents[a], "op": "read", "pc": pc, "item": 4, "ring": "q",
            "stage": 1, "phase": 0, "result": "tag_mismatch"}
    later = L.classify(g, [dict(step, found=2)], False)
    assert later[1] == ["overwrite_before_drain"] and "of item 1 from" in later[3][0]
    assert L.classify(g, [dict(step, found=0)], False)[1] == ["read_before_fill"]
    finish = {"t": 1, "agent": g.agents[a], "op": "finish", "pc": pc, "item": 1, "ring": "q",
              "stage": 1, "cta": 0, "result": "ok", "overwritten": True, "found": 0}
    early = L.classify(g, [finish], False)
    assert early[1] == ["read_before_fill"] and "(finish) of item 1 from" in early[3][0]
