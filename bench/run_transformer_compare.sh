#!/usr/bin/env bash
# Runs bench_transformer (athanor) and transformer_torch.py (PyTorch 1.13) interleaved --
# athanor, torch, athanor, torch, ... -- and prints per-case times and the median of the
# per-round ratios athanor / torch (W4 wants <= 0.67, i.e. 1.5x faster).
#
#   bench/run_transformer_compare.sh [rounds (default 3)] [build dir (default build)]
#
# PyTorch runs with OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE and
# torch.set_num_threads(2) (its faster setting here); athanor on 2 threads with the caller's
# OMP_WAIT_POLICY (ATH_OMP_WAIT_POLICY overrides it for athanor only). Debian's torch does
# its matrix products through the system BLAS: with the reference (netlib) libblas3 selected it
# is ~25x slower than with OpenBLAS, which the WORKLOADS.md figures used. Point
# TORCH_LD_LIBRARY_PATH at an OpenBLAS libblas.so.3 (e.g. an unpacked libopenblas0-pthread's
# usr/lib/x86_64-linux-gnu/openblas-pthread) to compare against that.
set -euo pipefail
rounds=${1:-3}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for r in $(seq 1 "$rounds"); do
  policy=${ATH_OMP_WAIT_POLICY:-${OMP_WAIT_POLICY:-}}
  env ${policy:+OMP_WAIT_POLICY=$policy} OMP_NUM_THREADS=2 "$build/bench/bench_transformer" \
    --benchmark_filter='w4_(model|layer/|attention)' --benchmark_min_time=1 --benchmark_format=json \
    >"$tmp/ath_$r.json" 2>/dev/null
  LD_LIBRARY_PATH=${TORCH_LD_LIBRARY_PATH:-${LD_LIBRARY_PATH:-}} OMP_NUM_THREADS=2 \
    OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE \
    /usr/bin/python3 "$here/transformer_torch.py" --min-time 1 >"$tmp/torch_$r.json"
done

/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
ath, torch = {}, {}
for r in range(1, rounds + 1):
    for b in json.load(open(f"{tmp}/ath_{r}.json"))["benchmarks"]:
        parts = b["name"].split("/")  # w4_fwd_bwd/w4_layer/real_time or w4_model/real_time
        name = parts[1] if parts[0] == "w4_fwd_bwd" else parts[0]
        scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        ath.setdefault(name, []).append(b["real_time"] * scale)
    for line in open(f"{tmp}/torch_{r}.json"):
        d = json.loads(line)
        torch.setdefault(d["name"], []).append(d["ms"])
print(f"{'case':14s} {'athanor ms/iter (rounds)':30s} {'torch ms/iter (rounds)':30s} median ratio")
for name, a in sorted(ath.items()):
    t = torch[name]
    ratios = [x / y for x, y in zip(a, t)]
    fa = " ".join(f"{x:6.2f}" for x in a)
    ft = " ".join(f"{x:6.2f}" for x in t)
    print(f"{name:14s} {fa:30s} {ft:30s} {statistics.median(ratios):.3f}")
PY
