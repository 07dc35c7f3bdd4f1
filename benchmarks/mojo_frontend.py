"""pipeproof mojo on the committed fixtures: verdict, kind, states, extract and check seconds per
target, and `--prove` (the lap abstraction: status, abstract states, seconds) (issue 34).
Run: python benchmarks/mojo_frontend.py"""
import gzip
import re
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


MUTANTS = {"halve_bytes": halve_bytes, "drop_pre_arrival": drop_pre_arrival}
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
    ("sm100 1-SM", "sm100_bf16.ll.gz", {}, 224),
    ("sm100 2-SM", "sm100_bf16_2sm.ll.gz", {}, 224),
]

print(f"{'target':<24} {'verdict':<13} {'kind':<20} {'states':>7} {'extract s':>9} {'check s':>8}"
      f"  {'--prove':<9} {'abstract':>8} {'prove s':>7}")
for label, f, args, bd in TARGETS:
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
    pr = prove(load_spec_text(text, f))
    t3 = time.perf_counter()
    print(f"{label:<24} {r.verdict:<13} {(r.kind or '-'):<20} {r.states:>7} {t1 - t0:>9.2f} {t2 - t1:>8.2f}"
          f"  {pr.status:<9} {pr.abstract_states or 0:>8} {t3 - t2:>7.2f}")
