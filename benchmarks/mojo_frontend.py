"""pipeproof mojo on the committed fixtures: verdict, kind, states, extract and check seconds per
target, and `--prove` (the lap abstraction: status, abstract states, seconds) (issue 34).
Run: python benchmarks/mojo_frontend.py [LABEL-PREFIX ...] (only the rows whose label starts so)"""
import gzip
import re
import sys
import tempfile
import time
from pathlib import Path

from pipeproof.checker.frontends import reader
from pipeproof.checker.engines.prover import prove
from pipeproof.checker.engines.verifier import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mojo"


def halve_bytes(ir):  # issue 34's mutation: prepare_stage's arrive.expect_tx(32768) -> 16384
    return re.sub(r"(arrive\.expect\.tx\.scope\.cta\.space\.cta\(ptr addrspace\(3\) %\d+, i32 )32768\)",
                  r"\g<1>16384)", ir)


def drop_pre_arrival(ir):  # the consumers' pre-arrival on empty (matmul_kernels.mojo:576) removed
    at576 = set(re.findall(r"^(!\d+) = !DILocation\(line: 576,", ir, re.M))
    return re.sub(r"(%\d+) = call i64 @llvm\.nvvm\.mbarrier\.arrive\.shared\(ptr addrspace\(3\) %\d+\), "
                  r"!dbg (!\d+)", lambda m: f"{m.group(1)} = add i64 0, 0, !dbg {m.group(2)}"
                  if m.group(2) in at576 else m.group(0), ir)


# a consumer's remote arrive on an empty barrier: inline asm `mapa` + `mbarrier.arrive.shared::cluster`
CLUSTER_ARRIVE_ASM = (r'^  call void asm sideeffect "[^"\n]*mapa\.shared::cluster[^"\n]*mbarrier\.arrive\.'
                      r'shared::cluster[^\n]*!dbg (!\d+)\n')


def _inlined_at(ir, line):
    """Is a debug location (!N) one whose inlined call stack passes the Mojo line `line`?"""
    loc = {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(
        r"^(!\d+) = !DILocation\(line: (\d+),[^\n]*?(?:inlinedAt: (!\d+))?\)$", ir, re.M)}

    def at(d):
        while d:
            here, d = loc.get(d, (0, None))
            if here == line:
                return True
        return False
    return at


def drop_cluster_pre_arrival(ir):  # in a cluster: arrive_cluster (mapa + remote arrive) at :571 removed
    at571 = _inlined_at(ir, 571)
    return re.sub(CLUSTER_ARRIVE_ASM, lambda m: "" if at571(m.group(1)) else m.group(0), ir, flags=re.M)


# an mbarrier wait loop (inline asm try_wait.parity) / a tcgen05.commit (inline asm), by its !dbg
WAIT_ASM = r'^  call void asm sideeffect "[^"\n]*mbarrier\.try_wait\.parity[^\n]*!dbg (!\d+)\n'
COMMIT_ASM = r'^  call void asm sideeffect "[^"\n]*tcgen05\.commit[^\n]*!dbg (!\d+)\n'


def sm100_drop_drain(ir):  # the load warp's drain (matmul_kernels.mojo:2177, InputTilePipeline.drain) removed
    at2177 = _inlined_at(ir, 2177)
    return re.sub(WAIT_ASM, lambda m: "" if at2177(m.group(1)) else m.group(0), ir, flags=re.M)


def sm100_drop_acc_commit(ir):  # release_from_mma's tcgen05.commit onto the accumulator's full removed
    # (tile_pipeline.mojo:1464 in 1-SM; :1468, its multicast form, in 2-SM)
    at1464, at1468 = _inlined_at(ir, 1464), _inlined_at(ir, 1468)
    return re.sub(COMMIT_ASM, lambda m: "" if at1464(m.group(1)) or at1468(m.group(1)) else m.group(0),
                  ir, flags=re.M)


def sm100_dup_acc_commit(ir):  # release_from_mma's tcgen05.commit onto the accumulator's full made twice
    at1464 = _inlined_at(ir, 1464)
    return re.sub(COMMIT_ASM, lambda m: m.group(0) * 2 if at1464(m.group(1)) else m.group(0),
                  ir, flags=re.M)


def conv_drop_load_order(ir):  # conv2d's LoadOrderBarrier (main load :985 arrives, epilogue load :1026 waits) removed
    at985, at1026 = _inlined_at(ir, 985), _inlined_at(ir, 1026)
    ir = re.sub(r"^  (%\d+) = call i64 @llvm\.nvvm\.mbarrier\.arrive\.shared\([^\n]*!dbg (!\d+)$",
                lambda m: f"  {m.group(1)} = add i64 0, 0, !dbg {m.group(2)}" if at985(m.group(2))
                else m.group(0), ir, flags=re.M)
    return re.sub(WAIT_ASM, lambda m: "" if at1026(m.group(1)) else m.group(0), ir, flags=re.M)


def conv_acc_empty_count(ir):  # conv2d's accumulator empty barriers (+180272, +180280) initialised with 64, not 128
    return re.sub(r"(@extern_ptr_syml, i32 1802(?:72|80)\), )i32 128,", r"\1i32 64,", ir)


def sm100_epilogue_no_wait(ir):  # the epilogue's wait on the accumulator's full (acquire_for_epilogue, :2302) removed
    at2302 = _inlined_at(ir, 2302)
    return re.sub(WAIT_ASM, lambda m: "" if at2302(m.group(1)) else m.group(0), ir, flags=re.M)


def two_cta_empty_count(ir):  # the empty count num_consumer x cluster size (8) -> 4 (a 2-CTA cluster's)
    return re.sub(r"^(  %\d+) = trunc i64 %\d+ to i32, (!dbg !\d+)\n(  %\d+ = call i32 "
                  r"@llvm\.nvvm\.read\.ptx\.sreg\.tid\.x)", r"\1 = add i32 0, 4, \2\n\3", ir, count=1,
                  flags=re.M)


MUTANTS = {"halve_bytes": halve_bytes, "drop_pre_arrival": drop_pre_arrival,
           "drop_cluster_pre_arrival": drop_cluster_pre_arrival, "two_cta_empty_count": two_cta_empty_count,
           "sm100_drop_drain": sm100_drop_drain, "sm100_drop_acc_commit": sm100_drop_acc_commit,
           "sm100_epilogue_no_wait": sm100_epilogue_no_wait, "sm100_dup_acc_commit": sm100_dup_acc_commit,
           "conv_drop_load_order": conv_drop_load_order, "conv_acc_empty_count": conv_acc_empty_count}
SM100 = {"6": [1024, 1024, 256], "--tiles": 2}       # K = 256: 4 k-blocks per tile, 2 tiles per CTA
SM100_B = {"6": [1024, 1024, 512], "--tiles": 3}     # the second trip count: 8 k-blocks, 3 tiles
CONV = {"4": [256, 128, 512], "--tiles": 2}           # conv2d 1-SM: 2 tiles x 4 k-blocks (BK = 128)
BLOCK_SCALED = {"6": [1, 1, 1], "7": [1024, 1024, 512], "--tiles": 2}   # NVFP4: 2 tiles x 4 k-blocks
PROVE_TIMEOUT = 300  # s: the cluster-4 proofs (docs/mojo.md)
VERIFY_TIMEOUT = 120  # s: a search that does not finish is inconclusive
TARGETS = [
    ("pc_nvidia k=3", "pc_nvidia.ll", {"2": 3}, 64),
    ("pc_nvidia k=8", "pc_nvidia.ll", {"2": 8}, 64),
    ("pc_amd k=3", "pc_amd.ll", {"2": 3}, 128),
    ("pc_amd k=8", "pc_amd.ll", {"2": 8}, 128),
    ("backend_phase_bug", "backend_phase_bug.ll", {"2": 8}, 64),
    ("backend_count_bug", "backend_count_bug.ll", {"2": 8}, 64),
    ("sm90 (cluster 1) K=1024", "sm90_bf16.ll.gz", {}, None),
    ("sm90 (cluster 1) K=512", "sm90_bf16_k512.ll.gz", {}, None),
    ("sm90 cluster 2 K=1024", "sm90_bf16_cluster2.ll.gz", {}, None),
    ("sm90 cluster 2 K=512", "sm90_bf16_cluster2_k512.ll.gz", {}, None),
    ("sm90 bytes halved", "sm90_bf16.ll.gz:halve_bytes", {}, None),
    ("sm90 no pre-arrival", "sm90_bf16.ll.gz:drop_pre_arrival", {}, None),
    ("sm90 cluster 4 K=1024", "sm90_bf16_cluster4.ll.gz", {}, None),
    ("sm90 cluster 4 K=512", "sm90_bf16_cluster4_k512.ll.gz", {}, None),
    ("sm90 c4 bytes halved", "sm90_bf16_cluster4_k512.ll.gz:halve_bytes", {}, None),
    ("sm90 c4 no pre-arrival", "sm90_bf16_cluster4_k512.ll.gz:drop_cluster_pre_arrival", {}, None),
    ("sm90 c4 empty count 4", "sm90_bf16_cluster4_k512.ll.gz:two_cta_empty_count", {}, None),
    ("sm90 cluster 2x2x1", "sm90_bf16_cluster2x2.ll.gz", {}, None),
    ("sm100 1-SM K=256 tiles=2", "sm100_bf16.ll.gz", SM100, 224),
    ("sm100 1-SM K=512 tiles=3", "sm100_bf16.ll.gz", SM100_B, 224),
    ("sm100 drain removed", "sm100_bf16.ll.gz:sm100_drop_drain", SM100, 224),
    ("sm100 acc commit removed", "sm100_bf16.ll.gz:sm100_drop_acc_commit", SM100, 224),
    ("sm100 epilogue no wait", "sm100_bf16.ll.gz:sm100_epilogue_no_wait", SM100, 224),
    ("sm100 2-SM K=256 tiles=2", "sm100_bf16_2sm.ll.gz", SM100, 224),
    ("sm100 2-SM K=512 tiles=3", "sm100_bf16_2sm.ll.gz", SM100_B, 224),
    ("sm100 2-SM drain removed", "sm100_bf16_2sm.ll.gz:sm100_drop_drain", SM100, 224),
    ("sm100 2-SM acc commit removed", "sm100_bf16_2sm.ll.gz:sm100_drop_acc_commit", SM100, 224),
    # issue 47: read as tiles of k-blocks (refused before)
    ("conv2d 1-SM tiles=2", "conv2d_1sm.ll.gz", CONV, 256),
    ("conv2d no load-order", "conv2d_1sm.ll.gz:conv_drop_load_order", CONV, 256),
    ("block-scaled NVFP4 tiles=2", "block_scaled_nvfp4.ll.gz", BLOCK_SCALED, 224),
    ("block-scaled acc commit removed", "block_scaled_nvfp4.ll.gz:sm100_drop_acc_commit", BLOCK_SCALED, 224),
]

def main(prefixes):
    print(f"{'target':<24} {'verdict':<13} {'kind':<20} {'states':>7} {'extract s':>9} {'check s':>8}"
          f"  {'--prove':<9} {'abstract':>8} {'prove s':>7}")
    for label, f, args, bd in TARGETS:
        if prefixes and not any(label.startswith(a) for a in prefixes):
            continue
        path = str(FIX / f)
        if ":" in f:
            f, mutant = f.split(":")
            tmp = tempfile.NamedTemporaryFile("w", suffix=".ll", delete=False)
            tmp.write(MUTANTS[mutant](gzip.open(FIX / f, "rt").read()))
            tmp.close()
            path = tmp.name
        t0 = time.perf_counter()
        try:
            text, _ = reader("mojo").extract(path, None, args, bd)
        except SpecError as err:
            print(f"{label:<24} {'refused':<13} {'(exit 2)':<20} {'-':>7} {time.perf_counter() - t0:>9.2f} {'-':>8}"
                  f"  {str(err).split(': ', 1)[-1][:90]}")
            continue
        t1 = time.perf_counter()
        r = verify(load_spec_text(text, f), timeout=VERIFY_TIMEOUT)
        t2 = time.perf_counter()
        if path != str(FIX / f):
            Path(path).unlink()
        if label.startswith("sm100 2-SM"):   # verify is inconclusive; the lap search grows past memory
            print(f"{label:<24} {r.verdict:<13} {(r.kind or '-'):<20} {r.states:>7} {t1 - t0:>9.2f} {t2 - t1:>8.2f}"
                  f"  {'-':<9}  ({r.limit})")
            continue
        pr = prove(load_spec_text(text, f), timeout=PROVE_TIMEOUT)
        t3 = time.perf_counter()
        print(f"{label:<24} {r.verdict:<13} {(r.kind or '-'):<20} {r.states:>7} {t1 - t0:>9.2f} {t2 - t1:>8.2f}"
              f"  {pr.status:<9} {pr.abstract_states or 0:>8} {t3 - t2:>7.2f}"
              + (f"  ({pr.reason})" if pr.status == "unknown" else "")
              + (f"  (at items = {pr.items}: {pr.kind}; the spec's own count is {load_spec_text(text, f).items})"
                 if pr.status == "violated" and pr.items is not None else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
