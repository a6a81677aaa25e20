#!/usr/bin/env bash
# Runs bench_lstm (athanor) and lstm_torch.py (PyTorch 1.13) interleaved -- athanor, torch,
# athanor, torch, ... -- and prints per-case times and the median of the per-round ratios
# athanor / torch (W3 asks <= 0.67, i.e. 1.5x faster). The machine is noisy: pairs adjacent in
# time are compared.
#
#   bench/run_lstm_compare.sh [rounds (default 3)] [build dir (default build)]
#
# PyTorch runs with OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE and torch.set_num_threads(2)
# (its faster setting here). athanor runs on 2 threads with the caller's OMP_WAIT_POLICY
# (set ATH_OMP_WAIT_POLICY to override it for athanor only).
#
# Debian's torch calls GEMMs through libblas.so.3; where that resolves to netlib's reference
# BLAS (no OpenBLAS installed), torch runs 10x slower than the figures in WORKLOADS.md, which
# were taken with OpenBLAS. TORCH_BLAS_DIR=<dir holding OpenBLAS's libblas.so.3> puts that
# directory on torch's LD_LIBRARY_PATH only, e.g. from an unpacked libopenblas0-pthread .deb.
set -euo pipefail
rounds=${1:-3}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for r in $(seq 1 "$rounds"); do
  if [[ -n "${ATH_OMP_WAIT_POLICY:-}" ]]; then
    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=$ATH_OMP_WAIT_POLICY "$build/bench/bench_lstm" \
      --benchmark_min_time=1 --benchmark_format=json >"$tmp/ath_$r.json" 2>/dev/null
  else
    OMP_NUM_THREADS=2 "$build/bench/bench_lstm" \
      --benchmark_min_time=1 --benchmark_format=json >"$tmp/ath_$r.json" 2>/dev/null
  fi
  LD_LIBRARY_PATH=${TORCH_BLAS_DIR:-} OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 "$here/lstm_torch.py" --min-time 1 \
    >"$tmp/torch_$r.json"
done

/usr/bin/python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
ath, torch = {}, {}
for r in range(1, rounds + 1):
    for b in json.load(open(f"{tmp}/ath_{r}.json"))["benchmarks"]:
        name = b["name"].split("/")[1]  # lstm_fwd_bwd/w3_lstm/real_time
        scale = {"ms": 1.0, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
        ath.setdefault(name, []).append(b["real_time"] * scale)
    for line in open(f"{tmp}/torch_{r}.json"):
        d = json.loads(line)
        torch.setdefault(d["name"], []).append(d["ms"])
total_a = [sum(v) for v in zip(*ath.values())]
total_t = [sum(v) for v in zip(*torch.values())]
rows = sorted(ath.items()) + [("all", total_a)]
print(f"{'case':10s} {'athanor ms/iter (rounds)':32s} {'torch ms/iter (rounds)':32s} median ratio")
for name, a in rows:
    t = total_t if name == "all" else torch[name]
    ratios = [x / y for x, y in zip(a, t)]
    fa = " ".join(f"{x:6.2f}" for x in a)
    ft = " ".join(f"{x:6.2f}" for x in t)
    print(f"{name:10s} {fa:32s} {ft:32s} {statistics.median(ratios):.3f}")
PY
