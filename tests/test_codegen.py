"""The GPU reference-kernel generator (cuda_ref/codegen.py), without a GPU.

What the generated CUDA C++ must contain for every op on both backends, that an op or a backend
function the generator does not implement fails loudly, that unsupported specs are refused in
one line, and (where a host compiler or nvcc is installed) that the amd thresholds printed
from backends.amd equal it and that the generated source compiles for sm_90
(tests/test_printed_backends.py checks every printed piece of the kernel).
"""
from __future__ import annotations

import glob
import shutil
import subprocess

import pytest

from pipeproof.backends import amd as amd_backend
from pipeproof.cuda_ref import codegen as G
from pipeproof.cuda_ref.codegen import GenerationError, generate
from pipeproof.spec.load import load_spec
from pipeproof.spec.schema import OPS
from tests.codegen_support import NVCC, agent_code, gen_text



NV_RING = """
[pipeline]
backend = "{backend}"
stages = 2
producer_arrive_count = 1
consumer_arrive_count = {cons}
items = 3
{extra}
[[role]]
name = "producer"
side = "producer"
count = 1
body = {producer}
{pepi}
[[role]]
name = "consumer"
side = "consumer"
count = {ncons}
body = {consumer}
"""


def ring(producer, consumer, backend="nvidia", cons=1, ncons=1, extra="", pepi=""):
    return gen_text(NV_RING.format(backend=backend, cons=cons, ncons=ncons, extra=extra,
                                   producer=producer, consumer=consumer, pepi=pepi))


# ---------------------------------------------------------------- every op has an emitter

def test_every_op_of_the_language_has_an_emitter():
    """Every op, write_async included (issue 47): none is refused by name any more."""
    assert set(OPS) - set(G.NO_GPU_YET) <= set(G.OP_EMITTERS)
    assert G.NO_GPU_YET == {} and set(OPS) <= set(G.OP_EMITTERS)


def test_an_op_without_emitter_fails_loudly(monkeypatch):
    emitters = dict(G.OP_EMITTERS)
    del emitters["read"]
    monkeypatch.setattr(G, "OP_EMITTERS", emitters)
    with pytest.raises(GenerationError, match=r"op 'read' has no GPU implementation"):
        generate(load_spec("spec/examples/mojo_pcp_nvidia.toml"))


def test_backend_functions_are_all_mirrored():
    for backend, module in G.BACKEND_MODULES.items():
        names = G.backend_functions(module)
        assert names, backend
        assert set(names) <= set(G.BACKEND_MIRRORS[backend]), backend
        G.check_backend_mirrors(backend)


def test_a_new_backend_function_fails_loudly(monkeypatch):
    def threshold_v2(phase, count):
        return phase * count
    threshold_v2.__module__ = amd_backend.__name__
    monkeypatch.setattr(amd_backend, "threshold_v2", threshold_v2, raising=False)
    with pytest.raises(GenerationError, match=r"backends/amd.py defines threshold_v2"):
        generate(load_spec("spec/examples/mojo_pcp_amd.toml"))


# ---------------------------------------------------------------- nvidia ops

def test_nvidia_signal_ops_are_mbarrier_ptx():
    g = ring('["wait_empty", "expect_tx 4096", "copy 4096", "advance"]',
             '["try_full", "wait_full unless=ready", "read", "arrive_empty 2", "advance"]', cons=2)
    src = g.source
    for ptx in ("mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
                "mbarrier.arrive.shared::cta.b64 _, [%0], %1;",
                "mbarrier.arrive.expect_tx.shared::cta.b64",
                "mbarrier.test_wait.parity.shared::cta.b64",
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];",
                "mov.u64 %0, %%globaltimer;", "nanosleep.u32",
                "fence.proxy.async.shared::cta"):
        assert ptx in src, ptx
    assert "#define NV 1" in src and "__cluster_dims__" not in src
    # init counts: full = producer_arrive_count, empty = consumer_arrive_count
    assert "mbar_init(sig_addr(0, 0, 0), 1u);" in src and "mbar_init(sig_addr(0, 0, 1), 2u);" in src
    prod, cons = agent_code(g, 0), agent_code(g, 1)
    # the parity of a wait is phase & 1 (backends.nvidia.ready)
    assert "wait_nv(c, sig_addr(0, st0, 1), (u32)(ph0 & 1))" in prod
    assert "arrive_expect_tx(c, 1u, sig_addr(0, st0, 0), 4096u);" in prod
    assert "issue_copy(c, e, 0, 2, 1u, 0, (u32)st0, item, 0u, 4096u," in prod
    assert "ok = probe_nv(sig_addr(0, st0, 0), (u32)(ph0 & 1));" in cons
    assert "const bool skip = (rd0 != 0);" in cons
    assert "check_r0_c0(c, (u32)st0, item, &found)" in cons
    assert "signal_arrive(c, 1u, sig_addr(0, st0, 1), 2u);" in cons
    assert "st0 += 1; if (st0 == 2) { st0 = 0; ph0 += 1; }" in cons


def test_write_read_and_slot_check():
    g = ring('["wait_empty", "write", "arrive_full", "advance"]',
             '["wait_full", "read", "arrive_empty", "advance"]')
    assert "store_fill((volatile i32*)(c.smem + 0u + (u32)st0 * 128u + 0u), 4u, item);" in agent_code(g, 0)
    check = g.source[g.source.index("u32 check_r0_c0("):].split("\n}\n")[0]
    assert ("if ((item < TAG_OUT && item < 3)) { any = 1; check_words((const i32*)(s + 0u), 4u, "
            "item, c.lane, bad, val); }") in check
    assert g.rings[0].kind == "write" and [(p.offset, p.nbytes) for p in g.rings[0].parts] == [(0, 16)]


def test_copy_regions_and_expected_items():
    g = ring('["wait_empty", "expect_tx 20480 every=2 at=0", "expect_tx 16384 every=2 at=1", '
             '"copy 16384", "copy 4096 every=2 at=0", "advance"]',
             '["wait_full", "read", "arrive_empty", "advance"]')
    regs = g.rings[0].regions
    assert [(r.offset, r.nbytes, r.every, r.at) for r in regs] == [(0, 16384, 1, 0), (16384, 4096, 2, 0)]
    assert "if ((item < TAG_OUT && item < 3)) { any = 1; check_words((const i32*)(s + 0u), 4096u" in g.source
    assert ("if ((item < TAG_OUT && item < 3 && item % 2 == 0)) { any = 1; "
            "check_words((const i32*)(s + 16384u), 1024u") in g.source
    # every=/at= guard the op in the body
    assert "if (item % 2 == 0) {" in agent_code(g, 0)
    # the source buffer: items x bytes per copy op, every word the item
    assert g.src_fill == [(0, 4096, 3, 0), (12288, 1024, 3, 0)]


def test_commit_async_reads_and_drain():
    g = ring('["wait_empty", "expect_tx 8192", "copy 8192", "advance"]',
             '["wait_full", "read_async", "read_wait 0", "read_async", "commit_empty 2", "advance"]',
             cons=3, pepi='epilogue = ["drain"]')
    prod, cons = agent_code(g, 0), agent_code(g, 1)
    assert "// pc 4: drain (step 0)" in prod and "// pc 5: drain (step 1)" in prod
    assert prod.count("agent_timeout(c, 0, 13,") == 2  # a drain step can time out
    assert "push_read(c, 1, q, 1, 0, (u32)st0, item);" in cons
    assert "finish_reads(c, 1, q, 0);" in cons
    assert "commit_fire(c, 1, 1u, 0, (u32)st0, 2u, 1u);" in cons  # 1: onto empty
    # commit_empty finishes the agent's async reads first
    assert cons.index("finish_reads(c, 1, q, 0);\n") < cons.index("commit_fire(")


def test_reset_restores_the_initial_stage_and_phase():
    g = ring('["wait_empty", "write", "arrive_full", "advance", "reset"]',
             '["wait_full", "read", "arrive_empty", "advance", "reset"]')
    assert "st0 = 0; ph0 = 1;" in agent_code(g, 0)
    assert "st0 = 0; ph0 = 0;" in agent_code(g, 1)


def test_named_barriers_software_generations_and_bar_sync():
    g = gen_text(open("spec/examples/named_barrier_release_ok.toml").read())
    cons = agent_code(g, 1)
    assert "gate_arrive(&s_gate[0], 2u)" in cons and "gate_wait(c, &s_gate[0], g + 1)" in cons
    assert 'asm volatile("bar.sync %0, %1;" :: "r"(1), "r"(64) : "memory");' in cons
    assert g.hw_barriers == {"wg": 1}
    # @leader: only consumer[0] arrives on empty
    assert "signal_arrive" in cons and "signal_arrive" not in agent_code(g, 2)


def test_mixed_barrier_uses_stay_in_software():
    g = generate(load_spec("spec/examples/x_named_split_ok.toml"))
    assert g.hw_barriers == {}
    follower = agent_code(g, 2)
    assert "arrv0 = g + 1;" in follower
    assert "gate_wait(c, &s_gate[0], arrv0 > 1 ? arrv0 : 1)" in follower
    assert "bar.sync" not in follower


def test_a_barrier_whose_count_misses_a_role_has_no_hardware_barrier():
    g = generate(load_spec("spec/examples/bug_named_barrier_missing_role.toml"))
    assert g.hw_barriers == {}  # bar.sync would hang: the counter times out instead


# ---------------------------------------------------------------- clusters

def test_cluster_kernel_uses_cluster_ptx():
    g = generate(load_spec("spec/examples/cutlass_tma_async_cluster2.toml"))
    src = g.source
    assert g.ctas == 2 and "__cluster_dims__(2, 1, 1)" in src
    for ptx in ("mapa.shared::cluster.u32", "mbarrier.arrive.release.cluster.shared::cluster.b64",
                "mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64",
                ".multicast::cluster", "%%cluster_ctarank",
                "barrier.cluster.arrive.release.aligned",
                "mbarrier.test_wait.parity.acquire.cluster.shared::cta.b64"):
        assert ptx in src, ptx
    assert g.agents == ["cta0.producer[0]", "cta1.producer[0]", "cta0.consumer[0]", "cta1.consumer[0]"]
    # copy 8192 to=all from each CTA: two regions, each landing in both CTAs
    assert [(r.offset, r.dests) for r in g.rings[0].regions] == [(0, (0, 1)), (8192, (0, 1))]
    assert "issue_copy(c, e, 0, 2, 3u," in agent_code(g, 0)
    assert "issue_copy(c, e, 1, 2, 3u," in agent_code(g, 1)


def test_agents_per_cta_and_ctas_key():
    g = generate(load_spec("spec/examples/x_cluster_ctas_ok.toml"))
    assert "AGENT_OF[K_CTAS][2] = {{0, 1}, {2, -1}};" in g.source
    assert g.threads == 64


# ---------------------------------------------------------------- amd

def test_amd_counters_and_thresholds():
    g = generate(load_spec("spec/examples/mojo_pcp_amd.toml"))
    src = g.source
    assert "#define NV 0" in src
    assert "red.release.cta.shared::cta.add.u32" in src and "ld.acquire.cta.shared::cta.u32" in src
    prod, cons = agent_code(g, 0), agent_code(g, 1)
    assert "wait_amd(c, sig_addr(0, st0, 1), amd_empty_threshold(ph0, 2ull))" in prod
    assert "wait_amd(c, sig_addr(0, st0, 0), amd_full_threshold(ph0, 1ull))" in cons
    assert "wait_nv" not in prod + cons and "probe_nv" not in prod + cons


@pytest.mark.skipif(not shutil.which("cc"), reason="no host C compiler")
def test_amd_threshold_mirror_equals_backends_amd(tmp_path):
    harness = ("#include <stdio.h>\ntypedef unsigned int u32; typedef unsigned long long u64; "
               "typedef long long i64;\n#define __device__\n#define __forceinline__\n"
               + G.amd_helpers() + "\nint main(void){ long long ph; unsigned long long n;\n"
               "while (scanf(\"%lld %llu\", &ph, &n) == 2) printf(\"%llu %llu\\n\", "
               "amd_full_threshold(ph, n), amd_empty_threshold(ph, n)); return 0; }\n")
    (tmp_path / "h.c").write_text(harness)
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "h"), str(tmp_path / "h.c")], check=True)
    cases = [(ph, n) for ph in (0, 1, 2, 3, 7, (1 << 31) - 1, (1 << 32) - 2, (1 << 32) - 1)
             for n in (1, 2, 3, 64)]
    out = subprocess.run([str(tmp_path / "h")], input="".join(f"{p} {n}\n" for p, n in cases),
                         capture_output=True, text=True, check=True).stdout.split("\n")
    full_py = getattr(amd_backend.full_threshold, "py_func", amd_backend.full_threshold)
    empty_py = getattr(amd_backend.empty_threshold, "py_func", amd_backend.empty_threshold)
    for (ph, n), line in zip(cases, out):
        full, empty = (int(x) for x in line.split())
        assert (full, empty) == (full_py(ph, n), empty_py(ph, n)), (ph, n)


# ---------------------------------------------------------------- refusals (one line each)

def one_line_refusal(text, phrase):
    with pytest.raises(GenerationError) as err:
        gen_text(text)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("t.toml: cuda_ref: ") and phrase in msg, msg


def test_copy_size_must_suit_cp_async_bulk():
    one_line_refusal(NV_RING.format(backend="nvidia", cons=1, ncons=1, extra="", pepi="",
                                    producer='["wait_empty", "expect_tx 100", "copy 100", "advance"]',
                                    consumer='["wait_full", "read", "arrive_empty", "advance"]'),
                     "positive multiple of 16")


def test_slots_must_fit_in_shared_memory():
    with pytest.raises(GenerationError, match=r"more than the 232448 B a CTA can have"):
        generate(load_spec("spec/examples/bug_expect_tx_over_limit.toml"))


def test_a_ring_filled_by_a_write_and_a_copy_has_a_part_for_each():
    """TileLang's mixed producer: a SIMT write and a TMA copy into one slot per item are two
    parts (checker/core/program.py slot_parts); each fill stores into its own region and a read
    checks both."""
    g = ring('["wait_empty", "write", "expect_tx 64", "copy 64", "advance"]',
             '["wait_full", "read", "arrive_empty", "advance"]')
    rl = g.rings[0]
    assert rl.kind == "copy" and [(p.offset, p.nbytes) for p in rl.parts] == [(0, 16), (16, 64)]
    assert [(r.offset, r.nbytes) for r in rl.regions] == [(16, 64)]
    prod = agent_code(g, 0)
    assert "store_fill((volatile i32*)(c.smem + 0u + (u32)st0 * 128u + 0u), 4u, item);" in prod
    assert ", 16u, 64u, 0u + (u32)st0 * 128u, c.src + 0ull" in prod   # the copy into part 1
    check = g.source[g.source.index("u32 check_r0_c0("):].split("\n}\n")[0]
    assert "check_words((const i32*)(s + 0u), 4u" in check and "check_words((const i32*)(s + 16u), 16u" in check


def test_a_consumer_side_write_stores_into_every_part():
    """FA3's V ring with an aliased epilogue write: the consumer's write reuses the whole
    buffer, so it stores its tag into every part."""
    g = ring('["wait_empty", "expect_tx 8192", "copy 4096", "copy 4096", "advance"]',
             '["wait_full", "read", "arrive_empty", "advance"]',
             extra="", pepi='')
    assert [(p.offset, p.nbytes) for p in g.rings[0].parts] == [(0, 4096), (4096, 4096)]
    g = gen_text(NV_RING.format(backend="nvidia", cons=1, ncons=1, extra="", pepi="",
                                producer='["wait_empty", "expect_tx 8192", "copy 4096", "copy 4096", "advance"]',
                                consumer='["wait_full", "read", "write", "arrive_empty", "advance"]'))
    cons = agent_code(g, 1)
    assert ("store_fill((volatile i32*)(c.smem + 0u + (u32)st0 * 8192u + 0u), 1024u, item); "
            "store_fill((volatile i32*)(c.smem + 0u + (u32)st0 * 8192u + 4096u), 1024u, item);") in cons


def test_a_consumer_side_copy_into_several_parts_is_refused():
    one_line_refusal(NV_RING.format(backend="nvidia", cons=1, ncons=1, extra="", pepi="",
                                    producer='["wait_empty", "write", "expect_tx 64", "copy 64", "advance"]',
                                    consumer='["wait_full", "read", "expect_tx 64", "copy 64", "arrive_empty", "advance"]'),
                     "a consumer-side copy")


def test_too_many_agents_in_a_cta():
    one_line_refusal(NV_RING.format(backend="nvidia", cons=40, ncons=40, extra="", pepi="",
                                    producer='["wait_empty", "write", "arrive_full", "advance"]',
                                    consumer='["wait_full", "read", "arrive_empty", "advance"]'),
                     "agents in one CTA")


# ---------------------------------------------------------------- every example

EXAMPLES = sorted(glob.glob("spec/examples/*.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.split("/")[-1])
def test_every_example_generates_or_is_refused_in_one_line(path):
    try:
        g = generate(load_spec(path))
    except GenerationError as err:
        assert "\n" not in str(err) and path in str(err)
        return
    assert f"case {len(g.agents) - 1}: agent_{len(g.agents) - 1}(c); break;" in g.source
    assert g.smem_bytes <= G.MAX_DYNAMIC_SMEM and g.threads <= 1024
    # every agent's every pc is emitted, labelled with the op as written
    for a, ops in enumerate(g.agent_ops):
        code = agent_code(g, a)
        for pc, (_name, text) in enumerate(ops):
            assert f"// pc {pc}: {text}" in code, (g.agents[a], pc)


@pytest.mark.skipif(not NVCC, reason="nvcc is not installed")
@pytest.mark.parametrize("name", ["mojo_pcp_amd", "cutlass_tma_async_cluster2", "x_mojo_sm100_matmul"])
def test_generated_source_compiles_for_sm90(tmp_path, name):
    g = generate(load_spec(f"spec/examples/{name}.toml"))
    cu = tmp_path / f"{name}.cu"
    cu.write_text(g.source)
    r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++17", str(cu), "-o",
                        str(tmp_path / f"{name}.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_a_part_is_checked_over_the_bytes_its_fill_stores():
    """x_prologue_tile_ok: the prologue's and epilogue's 4 KiB tiles share part 0 with the
    body's 8 KiB one; each read checks the bytes of the fill it pairs with (checking the whole
    8 KiB region made every prologue read find the rest unfilled on the H200, 2026-12-01)."""
    g = generate(load_spec("spec/examples/x_prologue_tile_ok.toml"))
    assert [(p.offset, p.nbytes) for p in g.rings[0].parts] == [(0, 8192)]
    check = g.source[g.source.index("u32 check_r0_c0("):].split("\n}\n")[0]
    tags = (g.tag_prologue, g.tag_epilogue)
    assert f"if (item == {tags[0]} || item == {tags[1]}) {{ any = 1; check_words((const i32*)(s + 0u), 1024u" in check
    assert "if ((item < TAG_OUT && item < 3)) { any = 1; check_words((const i32*)(s + 0u), 2048u" in check
