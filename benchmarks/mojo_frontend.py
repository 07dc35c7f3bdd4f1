"""pipeproof mojo on the committed fixtures: verdict, kind, states, extract and check seconds per
target (issue 34). Run: python benchmarks/mojo_frontend.py"""
import time
from pathlib import Path

from pipeproof.checker.mojo_cli import extract
from pipeproof.checker.verify import verify
from pipeproof.spec.load import load_spec_text
from pipeproof.spec.schema import SpecError

FIX = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mojo"
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
    ("sm100 1-SM", "sm100_bf16.ll.gz", {}, 224),
    ("sm100 2-SM", "sm100_bf16_2sm.ll.gz", {}, 224),
]

print(f"{'target':<24} {'verdict':<13} {'kind':<20} {'states':>7} {'extract s':>9} {'check s':>8}")
for label, f, args, bd in TARGETS:
    t0 = time.perf_counter()
    try:
        text, _ = extract(str(FIX / f), None, args, bd)
    except SpecError as err:
        print(f"{label:<24} {'refused':<13} {'(exit 2)':<20} {'-':>7} {time.perf_counter() - t0:>9.2f} {'-':>8}"
              f"  {str(err).split(': ', 1)[-1][:90]}")
        continue
    t1 = time.perf_counter()
    r = verify(load_spec_text(text, f))
    t2 = time.perf_counter()
    print(f"{label:<24} {r.verdict:<13} {(r.kind or '-'):<20} {r.states:>7} {t1 - t0:>9.2f} {t2 - t1:>8.2f}")
