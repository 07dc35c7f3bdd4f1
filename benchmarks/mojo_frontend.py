"""pipeproof mojo on the committed fixtures: verdict, kind, states, extract and check seconds per
target, and `--prove` (the lap abstraction: status, abstract states, seconds) (issue 34).
Run: python benchmarks/mojo_frontend.py [LABEL-PREFIX ...] (only the rows whose label starts so)"""
import gzip
import re
import sys
import tempfile
import time
from pathlib import Path

from pipeproof.checker.cli.mojo import extract
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


def drop_cluster_pre_arrival(ir):  # in a cluster: arrive_cluster (mapa + remote arrive) at :571 removed
    loc = {m.group(1): (int(m.group(2)), m.group(3)) for m in re.finditer(
        r"^(!\d+) = !DILocation\(line: (\d+),[^\n]*?(?:inlinedAt: (!\d+))?\)$", ir, re.M)}

    def at571(d):
        while d:
            line, d = loc.get(d, (0, None))
            if line == 571:
                return True
        return False

    return re.sub(CLUSTER_ARRIVE_ASM, lambda m: "" if at571(m.group(1)) else m.group(0), ir, flags=re.M)


def two_cta_empty_count(ir):  # the empty count num_consumer x cluster size (8) -> 4 (a 2-CTA cluster's)
    return re.sub(r"^(  %\d+) = trunc i64 %\d+ to i32, (!dbg !\d+)\n(  %\d+ = call i32 "
                  r"@llvm\.nvvm\.read\.ptx\.sreg\.tid\.x)", r"\1 = add i32 0, 4, \2\n\3", ir, count=1,
                  flags=re.M)


MUTANTS = {"halve_bytes": halve_bytes, "drop_pre_arrival": drop_pre_arrival,
           "drop_cluster_pre_arrival": drop_cluster_pre_arrival, "two_cta_empty_count": two_cta_empty_count}
PROVE_TIMEOUT = 300  # s: the cluster-4 proofs (docs/mojo.md)
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
    ("sm100 1-SM", "sm100_bf16.ll.gz", {}, 224),
    ("sm100 2-SM", "sm100_bf16_2sm.ll.gz", {}, 224),
]

print(f"{'target':<24} {'verdict':<13} {'kind':<20} {'states':>7} {'extract s':>9} {'check s':>8}"
      f"  {'--prove':<9} {'abstract':>8} {'prove s':>7}")
for label, f, args, bd in TARGETS:
    if sys.argv[1:] and not any(label.startswith(a) for a in sys.argv[1:]):
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
        text, _ = extract(path, None, args, bd)
    except SpecError as err:
        print(f"{label:<24} {'refused':<13} {'(exit 2)':<20} {'-':>7} {time.perf_counter() - t0:>9.2f} {'-':>8}"
              f"  {str(err).split(': ', 1)[-1][:90]}")
        continue
    t1 = time.perf_counter()
    r = verify(load_spec_text(text, f))
    t2 = time.perf_counter()
    if path != str(FIX / f):
        Path(path).unlink()
    pr = prove(load_spec_text(text, f), timeout=PROVE_TIMEOUT)
    t3 = time.perf_counter()
    print(f"{label:<24} {r.verdict:<13} {(r.kind or '-'):<20} {r.states:>7} {t1 - t0:>9.2f} {t2 - t1:>8.2f}"
          f"  {pr.status:<9} {pr.abstract_states or 0:>8} {t3 - t2:>7.2f}"
          + (f"  ({pr.reason})" if pr.status == "unknown" else ""))
