#!/usr/bin/env bash
# Runs bench_ctc (athanor) and ctc_torch.py (PyTorch) interleaved -- athanor, torch, athanor,
# torch, ... -- and prints the per-round times and the median speed-up torch / athanor (issue
# 18 asks >= 1.5 against PyTorch 2.15).
#
#   PYTHON=<venv>/bin/python bench/run_ctc_compare.sh [rounds (default 3)] [build dir (build)]
#
# PYTHON: the interpreter with torch (default /usr/bin/python3, Debian's 1.13). PyTorch runs
# with OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE and torch.set_num_threads(2); athanor on 2
# threads.
set -euo pipefail
rounds=${1:-3}
build=${2:-build}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for r in $(seq 1 "$rounds"); do
  OMP_NUM_THREADS=2 "$build/bench/bench_ctc" --benchmark_min_time=1 --benchmark_format=json \
    >"$tmp/ath_$r.json" 2>/dev/null
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE "$python" "$here/ctc_torch.py" --min-time 1 \
    >"$tmp/torch_$r.json"
done

"$python" - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, rounds + 1):
    report = json.load(open(f"{tmp}/ath_{r}.json"))
    (b,) = report["benchmarks"]
    torch_run = json.loads(open(f"{tmp}/torch_{r}.json").read())
    rows.append((b["real_time"], torch_run["ms"]))
isa = report["context"].get("host_isa", "?")
print(f"ctc_loss fwd+bwd [T=100, N=32, C=30, S=30], 2 threads, host {isa}, torch {torch_run['torch']}")
for i, (a, t) in enumerate(rows, 1):
    print(f"round {i}: athanor {a:7.3f} ms  torch {t:7.3f} ms  speed-up {t / a:5.2f}x")
print(f"median speed-up: {statistics.median(t / a for a, t in rows):.2f}x")
PY
