"""pipeproof mojo on the committed fixtures (tests/fixtures/mojo/: compiled LLVM IR; no Mojo needed).

The command runs in this process (tests/mojo_support.py: the `pipeproof` click group), each
kernel read once for the module (`shared_readings`); the tests of the command line itself
(`test_the_command_line_*`) start it as a user does.
"""
import gzip
import re
import sys

import pytest

from tests.mojo_support import FIX, run_command, run_mojo as run, run_pipeproof, shared_readings


@pytest.fixture(scope="module", autouse=True)
def _shared_readings():
    with shared_readings():
        yield


def test_the_command_line_checks_a_kernel_and_exits_with_its_verdict():
    code, out = run_command("mojo", FIX / "pc_nvidia.ll", "--arg", "2=3", "--block-dim", "64")
    assert code == 0, out
    assert "ok (" in out


def test_the_command_line_says_what_it_cannot_read_in_one_line_exit_2():
    # the persistent loop asks the hardware (clusterlaunchcontrol) whether another tile exists
    code, out = run_command("mojo", FIX / "sm100_bf16.ll.gz", "--block-dim", "224", "--arg", "6=1024,1024,256")
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1
    assert "--tiles N" in out and "matmul_kernels.mojo:" in out


@pytest.mark.parametrize("k", [3, 8])
def test_nvidia_pipeline_is_ok_at_two_trip_counts(k):
    code, out = run(FIX / "pc_nvidia.ll", "--arg", f"2={k}", "--block-dim", "64")
    assert code == 0, out
    assert "ok (" in out


@pytest.mark.parametrize("k", [3, 8])
def test_amd_counter_pipeline_is_ok_at_two_trip_counts(k):
    code, out = run(FIX / "pc_amd.ll", "--arg", f"2={k}", "--block-dim", "128")
    assert code == 0, out
    assert 'backend = "amd"' in out


def test_flipped_phase_backend_is_caught_at_its_mojo_line():
    code, out = run(FIX / "backend_phase_bug.ll", "--arg", "2=8", "--block-dim", "64")
    assert code == 1, out
    assert "read_before_fill" in out
    assert "backend_phase_bug.mojo:" in out


def test_off_by_one_arrive_count_backend_is_caught():
    code, out = run(FIX / "backend_count_bug.ll", "--arg", "2=8", "--block-dim", "64")
    assert code == 1, out
    assert "over_arrival" in out
    assert "backend_count_bug.mojo:" in out


SM100 = ("--block-dim", "224", "--tiles", "2", "--arg", "6=1024,1024,256")   # 4 k-blocks x 2 tiles
SM100_B = ("--block-dim", "224", "--tiles", "3", "--arg", "6=1024,1024,512")  # 8 k-blocks x 3 tiles


# 69 states at SM100_B (141 before the walk kept the waiters' window records, por.walk_window)
@pytest.mark.parametrize("args,states", [(SM100, 24), (SM100_B, 69)])
def test_sm100_2sm_reads_as_a_cta_pair_and_is_ok_at_two_trip_counts(args, states, tmp_path):
    # cta_group 2, cluster 2x1x1: the leader's MMA warp reads both CTAs' tiles and commits to
    # both; CTA 1's loads complete the leader's full barrier; the epilogues release the
    # leader's accumulator. Checked exhaustively since the named-barrier merges and merged steps
    # giving their work back (docs/reductions.md); K=256 keeps more than the default 24 copies
    # and commits in flight, so verify makes room for more (LARGEST_INFLIGHT).
    f = tmp_path / "sm100_2sm.toml"
    code, out = run(FIX / "sm100_bf16_2sm.ll.gz", *args, "--emit-spec", f)
    assert code == 0, out
    assert f"ok ({states:,} states".replace(",", "") in out.replace(",", "")
    import tomllib
    spec = tomllib.loads(f.read_text())
    assert spec["pipeline"]["cluster_size"] == 2
    roles = {r["name"]: r for r in spec["role"]}
    load0, load1 = " ".join(roles["warp5_cta0"]["body"]), " ".join(roles["warp5_cta1"]["body"])
    assert "expect_tx 49152 ring=ring229376" in load0     # the leader expects both CTAs' bytes
    assert "expect_tx" not in load1
    assert "copy 16384 to=peer ring=ring229376" in load1 and "copy 8192 to=peer ring=ring229376" in load1
    mma = " ".join(roles["warp6_cta0"]["body"])
    assert "commit_empty to=all ring=ring229376" in mma and "commit_full to=all ring=ring229504" in mma
    assert "commit" not in " ".join(roles["warp6_cta1"]["body"])   # only the leader's MMA warp issues
    assert "arrive_empty 32 to=leader ring=ring229504" in " ".join(roles["warp0_x4"]["body"])
    assert spec["ring"]["ring229504"]["consumer_arrive_count"] == 256   # 2 CTAs x 128 epilogue threads


def test_sm100_2sm_needs_more_room_in_flight_than_the_default(tmp_path):
    from pipeproof.checker.core import MAX_INFLIGHT, Model
    from pipeproof.checker.engines.verifier import verify
    from pipeproof.spec.load import load_spec
    f = tmp_path / "sm100_2sm.toml"
    run(FIX / "sm100_bf16_2sm.ll.gz", *SM100, "--emit-spec", f, "--max-states", "1")
    spec = load_spec(f)
    assert Model(spec).inflight == MAX_INFLIGHT
    small = verify(spec)
    assert small.verdict == "ok" and not small.limit, small.limit


@pytest.mark.slow  # ~50 s, the search for the minimal depth; pytest -m slow. The fast suite keeps the
# 1-SM kernel with this commit removed and the 2-SM kernel's multicast commits read
def test_sm100_2sm_accumulator_commit_removed_is_deadlock(tmp_path):
    # the multicast form of release_from_mma's commit (tile_pipeline.mojo:1468) removed
    code, out = run(_sm100_mutant(tmp_path, "sm100_drop_acc_commit", "sm100_bf16_2sm.ll.gz"), *SM100)
    assert code == 1, out
    assert "deadlock" in out.split("step  agent")[0]


def test_sm100_2sm_drain_removed_is_ok(tmp_path):
    # Both CTAs' epilogues wait for the accumulator's full, a commit the leader's MMA warp
    # issues after every commit onto the input ring's empty; an agent's commits fire in the
    # order it issued them (DESIGN, 2026-12-02), so none is in flight into either CTA when it
    # exits, drain or not. The drain waits are gone from both load warps' epilogues.
    f = tmp_path / "nodrain.toml"
    code, out = run(_sm100_mutant(tmp_path, "sm100_drop_drain", "sm100_bf16_2sm.ll.gz"), *SM100,
                    "--emit-spec", f)
    assert code == 0, out
    kept = tmp_path / "kept.toml"
    assert run(FIX / "sm100_bf16_2sm.ll.gz", *SM100, "--emit-spec", kept)[0] == 0
    import tomllib

    def drain_waits(path):
        roles = {r["name"]: r for r in tomllib.loads(path.read_text())["role"]}
        return [sum(op == "wait_empty ring=ring229376" for op in roles[load].get("epilogue", []))
                for load in ("warp5_cta0", "warp5_cta1")]
    assert drain_waits(kept) == [8, 8] and drain_waits(f) == [0, 0]   # 8 stages each


@pytest.mark.parametrize("args,items,states", [(SM100, 8, 23), (SM100_B, 24, 48)])
def test_sm100_1sm_is_ok_at_two_trip_counts(args, items, states):
    code, out = run(FIX / "sm100_bf16.ll.gz", *args)
    assert code == 0, out
    assert f"ok ({states:,} states".replace(",", "") in out.replace(",", "")
    assert f"\nitems = {items}\n" in out


def test_sm100_1sm_spec_reads_as_the_kernel(tmp_path):
    f = tmp_path / "sm100.toml"
    code, out = run(FIX / "sm100_bf16.ll.gz", *SM100, "--emit-spec", f)
    assert code == 0, out
    import tomllib
    spec = tomllib.loads(f.read_text())
    roles = {r["name"]: r for r in spec["role"]}
    rings = spec["ring"]
    # the input ring (6 stages), the accumulator ring (2; empty = 4 epilogue warps x 32 threads),
    # the CLC throttle (32/32) and the TMEM-dealloc barrier (128); the CLC response ring is main
    assert rings["ring229376"]["stages"] == 6
    assert rings["ring229472"] == {"stages": 2, "producer_arrive_count": 1, "consumer_arrive_count": 128}
    assert spec["pipeline"]["consumer_arrive_count"] == 224   # every thread of the CTA's 7 warps
    mma = " ".join(roles["warp6"]["body"])
    assert "read_async ring=ring229376" in mma and "commit_empty ring=ring229376" in mma
    assert "write ring=ring229472 every=8 at=3" in mma and "commit_full ring=ring229472 every=8 at=3" in mma
    epi = roles["warp0_x4"]["body"]
    assert epi[0] == "wait_full ring=ring229472 every=4 at=3"   # one tile per 4 k-blocks, after the 4th
    assert roles["warp0_x4"]["count"] == 4   # the warp that initialised the barriers is one of them
    sched = " ".join(roles["warp4"]["body"])
    assert "copy 16 every=4 at=3" in sched and "reset" not in sched   # one response per tile
    assert "wait_full every" not in sched     # its own waits on the response it fills are dropped
    assert roles["warp4"]["epilogue"] == ["wait_empty", "advance", "wait_empty"]   # drain


def _sm100_mutant(tmp_path, mutant, fixture="sm100_bf16.ll.gz"):
    from benchmarks.mojo_frontend import MUTANTS
    ir = gzip.open(FIX / fixture, "rt").read()
    new = MUTANTS[mutant](ir)
    assert new != ir
    f = tmp_path / f"{mutant}.ll"
    f.write_text(new)
    return f


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
def test_sm100_accumulator_commit_removed_is_deadlock(tmp_path):
    # release_from_mma's tcgen05.commit onto the accumulator's full: nothing else fills it
    code, out = run(_sm100_mutant(tmp_path, "sm100_drop_acc_commit"), *SM100)
    assert code == 1, out
    assert "deadlock" in out.split("step  agent")[0]
    assert "commit_full" not in out.split("step  agent")[0]
    assert "matmul_kernels.mojo:2302" in out.split("in the kernel:")[1]   # the epilogue's wait


def test_sm100_epilogue_that_does_not_wait_is_caught(tmp_path):
    code, out = run(_sm100_mutant(tmp_path, "sm100_epilogue_no_wait"), *SM100)
    assert code == 1, out
    assert "phase_alias" in out.split("step  agent")[0]


def test_sm100_drain_removed_is_ok_in_1sm(tmp_path):
    # 1-SM: the MMA warp's commits have all fired before it waits the TMEM-dealloc barrier,
    # which the epilogue arrives on after its last tile: no copy or commit is in flight at exit
    code, out = run(_sm100_mutant(tmp_path, "sm100_drop_drain"), *SM100)
    assert code == 0, out
    assert "drain" not in out.split("[[role]]", 5)[-1].split("epilogue = [")[1].split("]")[0]


@pytest.mark.parametrize("name,k_tiles,states", [("sm90_bf16", 16, 2), ("sm90_bf16_k512", 8, 2),
                                                  ("sm90_bf16_cluster2", 16, 2),
                                                  ("sm90_bf16_cluster2_k512", 8, 2)])
def test_sm90_spec_has_one_item_per_k_iteration(name, k_tiles, states, tmp_path):
    # The IR's k-loop steps a lap (4 stages, comptime-unrolled) per iteration; the spec has one
    # item per k-tile (K / 64) with a body of one wait ... advance, no every=/at= variants.
    spec = tmp_path / "s.toml"
    code, out = run(FIX / f"{name}.ll.gz", "--emit-spec", spec)
    assert code == 0, out
    assert f"ok ({states} states" in out
    text = spec.read_text()
    assert "every=" not in text
    assert f"items = {k_tiles}\n" in text
    bodies = re.findall(r"^body = \[\n(.*?)^\]", text, re.M | re.S)
    ops = [[l.split('"')[1] for l in b.splitlines()] for b in bodies]
    assert ["wait_full", "read", "arrive_empty" + (" to=all" if "cluster2" in name else ""),
            "advance"] in ops
    producer = next(o for o in ops if o[0] == "wait_empty")
    assert producer[1] == "expect_tx 32768" and producer[-1] == "advance" and len(producer) in (4, 5)


@pytest.mark.parametrize("name,states", [("sm90_bf16_cluster2", 2), ("sm90_bf16_cluster2_k512", 2)])
def test_sm90_cluster2_multicast_is_ok_at_two_trip_counts(name, states):
    # K = 1024 / 512: CTA 0's producer multicasts B (copy to=all) and both load A; each consumer
    # warpgroup releases the slot in both CTAs (arrive_empty to=all, empty count 4); the
    # kernel's closing barrier.cluster is the cluster_barrier ring (docs/mojo.md).
    code, out = run(FIX / f"{name}.ll.gz")
    assert code == 0, out
    assert f"ok ({states} states" in out
    assert "cluster_size = 2" in out
    assert '"copy 16384 to=all' in out and "ctas = [0]" in out and "ctas = [1]" in out
    assert '"arrive_empty to=all' in out
    assert "arrive_full to=all ring=cluster_barrier" in out


def test_sm90_cluster2_needs_its_closing_cluster_barrier(tmp_path):
    # Without the kernel-end barrier.cluster a consumer of CTA 1 releases CTA 0's slot after
    # CTA 0 has exited; without the multicast CTA 1's full barrier never gets its bytes.
    spec = tmp_path / "c2.toml"
    code, out = run(FIX / "sm90_bf16_cluster2_k512.ll.gz", "--emit-spec", spec)
    assert code == 0, out
    text = spec.read_text()
    nobar = tmp_path / "nobar.toml"
    nobar.write_text("\n".join(l for l in text.splitlines() if "ring=cluster_barrier" not in l))
    code, out = run_pipeproof("verify", nobar)
    assert code == 1 and "inflight_at_exit" in out, out


# ---- clusters of more than 2 CTAs (issue 34): cluster 4x1x1 is extracted and checked; 2x2x1 is
# refused (its row and column multicasts are no to=self/peer/leader/all target)
def _cluster_spec(name, tmp_path):
    """The extracted spec only (the search stopped at once: exit 3, inconclusive)."""
    spec = tmp_path / f"{name}.toml"
    code, out = run(FIX / f"{name}.ll.gz", "--emit-spec", spec, "--max-states", "1")
    assert code == 3, out
    return spec.read_text()


@pytest.mark.parametrize("name,k_tiles", [
    pytest.param("sm90_bf16_cluster4", 16, marks=pytest.mark.slow),  # reading 16 k-tiles: ~1 min
    ("sm90_bf16_cluster4_k512", 8)])
def test_sm90_cluster4_spec_multicasts_to_all_four_and_releases_in_all_four(name, k_tiles, tmp_path):
    # CTA 0's producer multicasts B to the four CTAs (mask 0xF: copy to=all) and loads A; CTAs
    # 1-3 load A only; every CTA's full expects 32768 bytes; each consumer warpgroup releases the
    # slot in every CTA (arrive_cluster: lane c mapa's to CTA c), so empty counts 2 x 4 = 8; the
    # closing barrier.cluster is every agent of the cluster: 3 x 4 = 12.
    text = _cluster_spec(name, tmp_path)
    assert "cluster_size = 4\n" in text
    assert "consumer_arrive_count = 8\n" in text
    assert "[ring.cluster_barrier]\nstages = 1\nproducer_arrive_count = 12\n" in text
    assert f"items = {k_tiles}\n" in text and "every=" not in text
    roles = {m.group(1): m.group(0) for m in re.finditer(r'^name = "(\w+)"\n.*?(?=^\[\[role\]\]|\Z)',
                                                          text, re.M | re.S)}
    assert set(roles) == {"wg0_cta0", "wg1_x2", "wg0_cta123"}, list(roles)
    assert "ctas = [0]" in roles["wg0_cta0"] and "ctas = [1, 2, 3]" in roles["wg0_cta123"]
    assert '"copy 16384 to=all",  # load_tile matmul_kernels.mojo:833' in roles["wg0_cta0"]
    assert '"copy 16384",  # load_tile matmul_kernels.mojo:838' in roles["wg0_cta0"]
    assert "to=all" not in roles["wg0_cta123"].split("epilogue")[0]
    assert roles["wg0_cta123"].count('"expect_tx 32768"') == 1
    assert roles["wg1_x2"].count('"arrive_empty to=all",  # arrive_cluster <- consumer_arrive_empty') == 4
    assert '"arrive_empty to=all",  # arrive_cluster matmul_kernels.mojo:1645' in roles["wg1_x2"]


@pytest.mark.slow  # 33 s / 18 s, most of it reading the IR (docs/mojo.md); pytest -m slow
# 254,469 / 108,229 states before issue 35's observations beside arrivals and finishing steps
@pytest.mark.parametrize("name,states", [("sm90_bf16_cluster4", 2), ("sm90_bf16_cluster4_k512", 2)])
def test_sm90_cluster4_is_ok_at_two_trip_counts(name, states):
    code, out = run(FIX / f"{name}.ll.gz")
    assert code == 0, out
    assert f"ok ({states} states" in out


@pytest.fixture(scope="module")
def cluster2x2():
    """`pipeproof mojo` on the cluster 2x2 kernel, read once for both tests below: (exit code,
    output, each CTA's copies with the CTAs they land on, recorded as the reader makes roles of
    the CTAs' runs, before it refuses)."""
    from pipeproof.spec.mojo import parse
    got = {}
    real = parse.Extractor._partitions

    def partitions(ex, per_cta):
        for runs in per_cta:
            for agent in ex._agents(runs):
                for e in ex._events(agent):
                    if e.kind == "copy":
                        got.setdefault(agent.cta, set()).add((e.op.line, tuple(sorted(e.tgt))))
        return real(ex, per_cta)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parse.Extractor, "_partitions", partitions)
        code, out = run(FIX / "sm90_bf16_cluster2x2.ll.gz")
    return code, out, got


def test_sm90_cluster2x2_is_refused_naming_the_row_multicast(cluster2x2):
    # cluster 2x2x1: CTA (x, y) = rank x + 2y; CTA 0 multicasts B to its row {0, 1} (:833) and A
    # to its column {0, 2} (:838), CTA 1 A to {1, 3}, CTA 2 B to {2, 3}: CTA c + 2 is no target
    # the spec language has (self / peer = c + 1 / leader / all).
    code, out, _ = cluster2x2
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1
    assert out.startswith("matmul_kernels.mojo:833 ")
    assert "lands on CTAs [0, 1] from CTA 0: not one of to=self/peer/leader/all" in out


def test_sm90_cluster2x2_places_each_cta_in_the_cluster_by_x_and_y(cluster2x2):
    # The multicast masks come from the CTA's (cluster_ctaid.x, cluster_ctaid.y): every CTA's
    # copies and where they land, read before the spec is built.
    got = cluster2x2[2]
    # (CTA 3 issues no copy: B comes from CTA 1, A from CTA 2)
    assert got == {0: {(833, (0, 1)), (838, (0, 2))}, 1: {(838, (1, 3))}, 2: {(833, (2, 3))}}, got


def test_mojo_source_without_toolchain_says_how_to_get_it(tmp_path, monkeypatch):
    src = tmp_path / "k.mojo"
    src.write_text("def main():\n    pass\n")
    # no `mojo` on PATH nor beside the interpreter (a venv with the toolchain's packages has one
    # there)
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    code, out = run(src, "--target", "sm_90a")
    assert code == 2, out
    assert "pipeproof[mojo]" in out


# ---- mutations of the sm90 IR (issue 34): text edits of the committed fixture, no Mojo needed
def _sm90_ir():
    return gzip.open(FIX / "sm90_bf16.ll.gz", "rt").read()


def test_sm90_expected_bytes_halved_is_read_before_fill(tmp_path):
    # prepare_stage's arrive.expect_tx(32768) -> 16384: the first 16384-byte copy (A) lands,
    # tx reaches 0 and the full barrier completes with B's half still in flight; the consumer
    # passes wait_full and reads a slot whose B part holds nothing.
    ir, n = re.subn(r"(mbarrier\.arrive\.expect\.tx\.scope\.cta\.space\.cta\(ptr addrspace\(3\) %\d+, "
                    r"i32 )32768\)", r"\g<1>16384)", _sm90_ir())
    assert n == 4  # the four comptime-unrolled stages
    f = tmp_path / "sm90_half.ll"
    f.write_text(ir)
    code, out = run(f)
    assert code == 1, out
    assert "read_before_fill" in out.split("step  agent")[0]
    assert '"expect_tx 16384' in out
    assert "matmul_kernels.mojo:822" in out.split("in the kernel:")[1]  # prepare_stage's line
    assert "matmul_kernels.mojo:1619" in out.split("in the kernel:")[1]  # the consumer's wait


def test_sm90_consumer_pre_arrival_removed_is_deadlock(tmp_path):
    # consumer_arrive_empty_barriers (matmul_kernels.mojo:576) is what lets the producer's
    # first wait_empty (phase 0: the kernel's _producer_phase = 0) pass; without it nothing
    # ever arrives on empty and nothing fills full.
    ir = _sm90_ir()
    at576 = set(re.findall(r"^(!\d+) = !DILocation\(line: 576,", ir, re.M))
    assert at576
    ir, n = re.subn(r"(%\d+) = call i64 @llvm\.nvvm\.mbarrier\.arrive\.shared\(ptr addrspace\(3\) %\d+\), "
                    r"!dbg (!\d+)", lambda m: f"{m.group(1)} = add i64 0, 0, !dbg {m.group(2)}"
                    if m.group(2) in at576 else m.group(0), ir)
    removed = sum(1 for d in at576 for _ in re.finditer(rf"add i64 0, 0, !dbg {d}\b", ir))
    assert removed == 4  # one pre-arrival per stage
    f = tmp_path / "sm90_nopre.ll"
    f.write_text(ir)
    code, out = run(f)
    assert code == 1, out
    assert "deadlock" in out.split("step  agent")[0]
    lines = out.split("in the kernel:")[1]
    assert "matmul_kernels.mojo:818" in lines  # the producer's wait_empty (acquire_producer)
    assert "matmul_kernels.mojo:1619" in lines  # the consumers' wait_full


# ---- mutations of the cluster-4 IR (K = 512)
def _cluster4_ir():
    return gzip.open(FIX / "sm90_bf16_cluster4_k512.ll.gz", "rt").read()


def _cluster4_mutant(tmp_path, ir, name="c4.ll"):
    f = tmp_path / name
    f.write_text(ir)
    return run(f)


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
def test_sm90_cluster4_pre_arrival_removed_is_deadlock(tmp_path):
    # In a cluster the consumers' pre-arrival (consumer_arrive_empty_barriers, :571) is
    # arrive_cluster: inline asm `mapa` + `mbarrier.arrive.shared::cluster`, lane c to CTA c.
    # Without it no CTA's empty barrier ever completes phase 0: every producer waits at :818.
    from benchmarks.mojo_frontend import CLUSTER_ARRIVE_ASM as asm, drop_cluster_pre_arrival
    ir = _cluster4_ir()
    mutant = drop_cluster_pre_arrival(ir)
    assert len(re.findall(asm, ir, re.M)) - len(re.findall(asm, mutant, re.M)) == 4  # one per stage
    code, out = _cluster4_mutant(tmp_path, mutant)
    assert code == 1, out
    head = out.split("step  agent")[0]
    assert "deadlock after 0 steps" in head
    for c in range(4):
        assert f"cta{c}.empty[0] (phase 0)" in head and f"cta{c}.full[0] (phase 0)" in head
    assert "\n1 state, 0 transitions" in out
    lines = out.split("in the kernel:")[1]
    assert "matmul_kernels.mojo:818" in lines and "matmul_kernels.mojo:1619" in lines


@pytest.mark.slow  # 350,999 states; the fast suite halves the bytes of the 1-CTA kernel (above)
def test_sm90_cluster4_expected_bytes_halved_is_read_before_fill(tmp_path):
    # expect_tx 32768 -> 16384 in every CTA: CTA 0's own A copy (or the multicast B) completes
    # full alone and a consumer reads the slot's other half empty.
    ir, n = re.subn(r"(mbarrier\.arrive\.expect\.tx\.scope\.cta\.space\.cta\(ptr addrspace\(3\) %\d+, "
                    r"i32 )32768\)", r"\g<1>16384)", _cluster4_ir())
    assert n == 4
    code, out = _cluster4_mutant(tmp_path, ir)
    assert code == 1, out
    assert "read_before_fill after 21 steps" in out.split("step  agent")[0]
    assert "350999 states" in out
    assert "matmul_kernels.mojo:822" in out.split("in the kernel:")[1]


# slow: over 10 s on the 2-core machine (README: `pytest -q -m slow` runs it)
@pytest.mark.slow
def test_sm90_cluster4_with_a_two_cta_empty_count_is_caught(tmp_path):
    # The empty count (num_consumer x cluster size = 8, computed in the kernel's init) -> 4, the
    # count of a 2-CTA cluster: the eight pre-arrivals complete empty twice before the producer's
    # first wait on phase 0 (phase_alias), one arrival past what a phase takes (over_arrival).
    ir, n = re.subn(r"^(  %\d+) = trunc i64 %\d+ to i32, (!dbg !\d+)\n(  %\d+ = call i32 "
                    r"@llvm\.nvvm\.read\.ptx\.sreg\.tid\.x)", r"\1 = add i32 0, 4, \2\n\3",
                    _cluster4_ir(), count=1, flags=re.M)
    assert n == 1
    code, out = _cluster4_mutant(tmp_path, ir)
    assert code == 1, out
    assert "consumer_arrive_count = 4\n" in out
    head = out.split("step  agent")[0]
    assert "phase_alias after 8 steps" in head and "(also: over_arrival)" in head
    assert "2155 states" in out


# ---- --prove: the lap abstraction on the extracted spec (every item count)
def test_prove_pc_nvidia_for_every_item_count_and_the_program_agrees_at_other_args():
    code, out = run(FIX / "pc_nvidia.ll", "--arg", "2=8", "--block-dim", "64", "--prove")
    assert code == 0, out
    assert "proved for every item count" in out
    assert "the extracted program is the same at --arg 2=8; 2=11; 2=21" in out


@pytest.mark.parametrize("name", ["sm90_bf16", "sm90_bf16_cluster2"])
def test_prove_sm90(name):
    code, out = run(FIX / f"{name}.ll.gz", "--prove")
    assert code == 0, out
    assert "proved for every item count" in out
    assert "compile-time values" in out


def test_prove_finds_the_flipped_phase_at_its_mojo_line():
    code, out = run(FIX / "backend_phase_bug.ll", "--arg", "2=8", "--block-dim", "64", "--prove")
    assert code == 1, out
    assert "read_before_fill" in out
    assert "backend_phase_bug.mojo:" in out.split("in the kernel:")[1]


def test_prove_violation_only_at_another_item_count_is_no_verdict_on_the_kernel():
    # sm100's spec is the kernel's program at 2 tiles x 4 k-blocks (every=8 at=j bodies); the
    # lap abstraction finds a violation at another item count (1: no whole tile): exit 3, not 1
    code, out = run(FIX / "sm100_bf16.ll.gz", *SM100, "--prove")
    assert "every=8" in out
    assert code == 3, out
    assert "inconclusive for the kernel" in out
    assert "NOT the same" in out   # the program differs at other K and tile counts


def test_roles_whose_reads_no_numbering_pairs_are_refused_in_one_line(monkeypatch):
    # align_items keeps a stretching only when each read is shown to expect its own fill; when
    # none is, one line (exit 2), never a guessed pairing
    import pipeproof.spec.mojo.build as build
    monkeypatch.setattr(build, "_pairs_ok", lambda kernel, b: False)
    monkeypatch.setattr(build, "_sections_tags_ok", lambda kernel, b, tag_of: False)  # nest.py's
    with shared_readings():  # a reading of its own: the kernel is built again with the patch
        code, out = run(FIX / "sm100_bf16.ll.gz", *SM100)
    assert code == 2, out
    assert "no numbering of their items pairs every read with its fill" in out
    assert len(out.strip().splitlines()) == 1


def test_stretched_roles_pair_each_read_with_its_fill():
    # the accepted numbering: every read of the accumulator and CLC response slots carries the
    # item of the fill it meets in FIFO order (the check align_items makes, shown to hold)
    import pipeproof.spec.mojo.build as build
    from pipeproof.spec.mojo.parse import Extractor, read_ir
    path = str(FIX / "sm100_bf16.ll.gz")
    k = Extractor(read_ir(path), path, None, {"6": [1024, 1024, 256]}, 224, 3).run()
    seen = []
    real = build._pairs_ok
    build._pairs_ok = lambda kernel, b: seen.append(real(kernel, b)) or seen[-1]
    try:
        build.build(k, "sm100")
    finally:
        build._pairs_ok = real
    assert seen and seen[-1] is True
    assert seen.count(True) == 1   # the first pairing that holds is kept
    assert seen[0] is False        # the IR's own iterations do not pair (the epilogue's CLC fetch)


# ---------------------------------------------------------------- nested loops (issue 47)
# conv2d fprop 1-SM (nn/conv/gpu/nvidia/sm100, default_bf16_1sm): M = 256, N = 128, K = 512,
# BK = 128: 4 k-blocks per tile, 2 tiles per CTA. Its load warp runs two k-loops per tile (the
# prologue loads, the load-order barrier's arrive, the rest) and its epilogue's iterations start
# mid-tile: before issue 47 no stretching of the per-tile roles paired every read (exit 2).
CONV = ("--block-dim", "256", "--tiles", "2", "--arg", "4=256,128,512")


def _conv(tmp_path, *mutants):
    from benchmarks.mojo_frontend import MUTANTS
    ir = gzip.open(FIX / "conv2d_1sm.ll.gz", "rt").read()
    for mutant in mutants:
        new = MUTANTS[mutant](ir)
        assert new != ir, mutant
        ir = new
    f = tmp_path / ("_".join(mutants) + ".ll")
    f.write_text(ir)
    return f


def test_conv2d_reads_as_tiles_of_k_blocks(tmp_path):
    import tomllib
    spec = tmp_path / "conv.toml"
    # --max-states: the reduced search's trace, not the (1M-state) search for the shortest one
    code, out = run(FIX / "conv2d_1sm.ll.gz", *CONV, "--emit-spec", spec, "--max-states", "50000")
    got = tomllib.loads(spec.read_text())
    assert got["pipeline"]["tiles"] == 2 and got["pipeline"]["k_blocks"] == 4
    assert "items" not in got["pipeline"]
    roles = {r["name"]: r for r in got["role"]}
    # per-tile roles: the epilogue warps, the CLC scheduler, the epilogue-load warp
    assert {n for n, r in roles.items() if r.get("k_blocks") == 1} == {"warp0_x4", "warp4", "warp7"}
    # the accumulator (MMA -> epilogue) and the CLC response (scheduler -> all) hold per-tile data
    assert {n for n, r in got["ring"].items() if r.get("level") == "tile"} == {"ring180256", "ring180288"}
    # the MMA warp: the tile's accumulator first, K alike k-blocks, then its commit and the
    # CLC fetch (the rotated loop's per-tile ops, now tile sections)
    mma = roles["warp6"]
    assert mma["tile_prologue"] == ["wait_empty ring=ring180256"]
    assert mma["body"] == ["wait_full", "read_async", "commit_empty", "advance"]
    assert mma["tile_epilogue"][:2] == ["write ring=ring180256", "commit_full ring=ring180256"]
    # the load warp's k-blocks differ (two k-loops, the load-order arrive after the second
    # k-block): every=4 at=j variants
    assert "arrive_full ring=ring180464 every=4 at=1" in roles["warp5"]["body"]
    assert roles["warp0_x4"]["body"][:2] == ["wait_full ring=ring180256", "read ring=ring180256"]
    # The kernel's LoadOrderBarrier (one arrival per tile by the main load warp at :985, a
    # parity wait per tile by the epilogue-load warp at :1026, nothing back): the load warp
    # can arrive for tile 1 before warp 7 has waited for tile 0 (the barrier runs two phases
    # ahead; on hardware warp 7 then waits for a phase that never comes).
    assert code == 1, out
    head = out.split("step  agent")[0]
    assert "phase_alias" in head and "warp7[0] waits on ring180464.full[0]" in head
    assert "warp7      conv2d_fprop_kernel.mojo:1026  (where it stands at the end)" in out
    # warp 7 toggles its parity on the one-stage barrier: one advance per tile (a lap), no
    # reset, so its tiles read alike (`k_blocks = 1` needs period 1) at any tile count
    warp7 = spec.read_text().split('name = "warp7"')[1]
    assert '"advance ring=ring180464"' in warp7 and "reset" not in warp7


def test_conv2d_without_its_load_order_barrier_is_ok_and_a_wrong_count_is_caught(tmp_path):
    code, out = run(_conv(tmp_path, "conv_drop_load_order"), *CONV)
    assert code == 0, out
    assert "ok (30 states" in out and "k_blocks = 4" in out
    code, out = run(_conv(tmp_path, "conv_drop_load_order"), *CONV[:2], "--tiles", "3", *CONV[4:])
    assert code == 0, out
    assert "ok (37 states" in out and "tiles = 3" in out
    # the accumulator's empty initialised with 64 arrivals (of 128 epilogue threads): the
    # epilogue's release at :1158 runs the barrier two phases ahead
    code, out = run(_conv(tmp_path, "conv_drop_load_order", "conv_acc_empty_count"), *CONV,
                    "--max-states", "200000")
    assert code == 1, out
    head = out.split("step  agent")[0]
    assert "over_arrival" in head and "ring180256.empty[0]" in head
    assert re.search(r"step +\d+  warp0_x4   conv2d_fprop_kernel\.mojo:1158\n  step end", out)
    # steps of the MMA warp's tile sections name their lines (the accumulator wait and commit
    # at :1085, the CLC fetch at :1083)
    assert re.search(r"step +8  warp6      conv2d_fprop_kernel\.mojo:1085\n", out)
    assert "warp6      conv2d_fprop_kernel.mojo:1083" in out


def test_sm100_reads_as_tiles_of_k_blocks_too(monkeypatch):
    # the nested reading where the stretched one is refused; on sm100 (which stretches) it is
    # the same verdict and state count
    import pipeproof.spec.mojo.build as build
    monkeypatch.setattr(build, "_pairs_ok", lambda kernel, b: False)
    with shared_readings():
        code, out = run(FIX / "sm100_bf16.ll.gz", *SM100)
    assert code == 0, out
    assert "ok (23 states" in out and "tiles = 2" in out and 'level = "tile"' in out


# block-scaled NVFP4 matmul 1-SM (sm100_structured/block_scaled, 128x128x32, 5 stages; the
# harness block_scaled_nvfp4.mojo; the IR's mojo_source_name strings cut to 200 characters):
# 2 tiles x 4 k-blocks (K = 512 fp4: 4 x 128 bytes). Its load warp's k-loop is rotated (the
# first wait + expect_tx before the loop, the last tile's CLC fetch after it): before issue 47
# the stretched reading put that fetch's read in the epilogue, which the loader refuses ("an
# epilogue read of a ring filled only in the loop body").
BLOCK_SCALED = ("--block-dim", "224", "--tiles", "2", "--arg", "6=1,1,1", "--arg", "7=1024,1024,512")


def test_block_scaled_nvfp4_reads_as_tiles_of_k_blocks_and_is_ok():
    code, out = run(FIX / "block_scaled_nvfp4.ll.gz", *BLOCK_SCALED)
    assert code == 0, out
    assert "ok (22 states" in out and "tiles = 2\nk_blocks = 4" in out
    load = out.split('name = "warp5"')[1].split("epilogue = [")[0]
    assert '"wait_full ring=ring217200 every=4 at=3"' in load   # the CLC fetch ends every tile
    assert "wait_empty ring=ring217232 every=4 at=0" in load      # the CLC throttle starts it


def test_block_scaled_nvfp4_accumulator_commit_removed_is_deadlock(tmp_path):
    ir = gzip.open(FIX / "block_scaled_nvfp4.ll.gz", "rt").read()
    from benchmarks.mojo_frontend import MUTANTS
    f = tmp_path / "bs.ll"
    f.write_text(MUTANTS["sm100_drop_acc_commit"](ir))
    code, out = run(f, *BLOCK_SCALED, "--max-states", "50000")
    assert code == 1, out
    head = out.split("step  agent")[0]
    assert "deadlock" in head and "warp0_x4[0..3] wait on ring217168.full[0]" in head
    assert "warp0_x4   block_scaled_matmul_kernel.mojo:1150  (where it stands at the end)" in out
