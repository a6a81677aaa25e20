#!/usr/bin/env bash
# Data-parallel benchmark: athanor DDP (MPI) vs PyTorch DDP (gloo), 2 processes x 1 thread each,
# on the same workloads and protocol (athanor_ddp.cpp, torch_ddp.py), interleaved per repeat;
# plus athanor in 1 process x 2 threads, the scaling overhead of splitting this machine's cores
# into ranks.
#
#   bench/dist/run.sh [W2 W4]          (both by default; any of W1-W4)
#   REPEATS=5 STEPS=100 bench/dist/run.sh W2
#   ATHANOR_DDP=build/bench/athanor_ddp bench/dist/run.sh   (default: build/bench/athanor_ddp)
#
# PyTorch 2.15 from PyPI in TORCH_VENV (default /work/venv; bench/e2e/run.sh creates it).
# Appends one JSON line per run to bench/dist/results.jsonl and prints the medians, the ratio
# athanor / PyTorch at 2 x 1, and the share of all-reduce time hidden behind the backward
# (athanor's DDP timeline over the timed steps). TRACE_DIR=dir also writes each athanor 2 x 1
# run's timeline as a Chrome trace there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-${TORCH_VENV:-/work/venv}/bin/python}"
repeats="${REPEATS:-3}"
steps="${STEPS:-150}"
ddp="${ATHANOR_DDP:-$root/build/bench/athanor_ddp}"
workloads=("$@")
[[ ${#workloads[@]} -eq 0 ]] && workloads=(W2 W4)
[[ -x "$ddp" ]] || { echo "no $ddp: build it (cmake --build --preset release --target athanor_ddp)"; exit 1; }
mpirun=(mpirun --oversubscribe -n 2)
[[ $(id -u) -eq 0 ]] && mpirun+=(--allow-run-as-root)
out="$here/results.jsonl"
run_id="$(date -u +%Y%m%dT%H%M%SZ)"
tmp="$(mktemp)"
for r in $(seq 1 "$repeats"); do
  for w in "${workloads[@]}"; do
    trace=()
    [[ -n "${TRACE_DIR:-}" ]] && { mkdir -p "$TRACE_DIR"; trace=(--trace "$TRACE_DIR/${w}_r$r.json"); }
    echo "repeat $r $w: athanor 2x1 (eager, compiled), athanor 1x2, pytorch 2x1" >&2
    OMP_NUM_THREADS=1 "${mpirun[@]}" "$ddp" "$w" --threads 1 --steps "$steps" "${trace[@]}" >>"$tmp"
    OMP_NUM_THREADS=1 "${mpirun[@]}" "$ddp" "$w" --threads 1 --steps "$steps" --compile 1 >>"$tmp"
    "$ddp" "$w" --threads 2 --steps "$steps" >>"$tmp"
    "$python" "$here/torch_ddp.py" "$w" --processes 2 --threads 1 --steps "$steps" >>"$tmp"
  done
done
sed "s/^{/{\"run\": \"$run_id\", /" "$tmp" >>"$out"
python3 - "$tmp" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
def med(w, fw, p, key="samples_per_s"):
    v = [r[key] for r in rows if r["workload"] == w and r["framework"] == fw and r["processes"] == p]
    return statistics.median(v) if v else float("nan")
print(f"| workload | athanor 2x1 | athanor 2x1 compiled | PyTorch DDP gloo 2x1 | athanor / PyTorch (best of eager, compiled) | athanor 1x2 | 2x1 / 1x2 | all-reduce hidden (athanor 2x1) |")
print("|---|---|---|---|---|---|---|---|")
for w in sorted({r["workload"] for r in rows}):
    a2, c2 = med(w, "athanor-ddp", 2), med(w, "athanor-ddp-compiled", 2)
    t2 = statistics.median([r["samples_per_s"] for r in rows if r["workload"] == w and r["framework"].startswith("pytorch")] or [float("nan")])
    a1 = med(w, "athanor-ddp", 1)
    hidden = med(w, "athanor-ddp", 2, "hidden_fraction")
    isa = next(r["isa"] for r in rows if r["framework"].startswith("athanor"))
    print(f"| {w} | {a2:.0f} | {c2:.0f} | {t2:.0f} | {max(a2, c2) / t2:.2f}x | {a1:.0f} | {a2 / a1:.2f} | {hidden:.0%} |")
print(f"samples/s, medians of {len(rows) // 4 // max(1, len({r['workload'] for r in rows}))} repeats; host ISA: {isa}")
PY
rm -f "$tmp"
