"""Prints run.sh's table: medians over repeats per (model, batch, runtime), and the ratios the
issue's acceptance uses (latency: athanor p50 / the faster peer's p50; throughput: athanor's /
the faster peer's).

    python summarize.py results.jsonl RUN_ID
"""
import json
import statistics
import sys
from collections import defaultdict

TARGETS = {  # (model, batch): (metric, bound) -- issue 17's acceptance
    ("cnn", 1): ("latency", 0.8), ("cnn", 64): ("throughput", 1.2),
    ("resnet18", 1): ("latency", 0.95), ("resnet18", 16): ("throughput", 1.1),
    ("transformer", 1): ("latency", 0.8), ("transformer", 16): ("latency", 0.8),
}


def main():
    path, run = sys.argv[1], sys.argv[2]
    rows = [json.loads(l) for l in open(path) if l.strip()]
    rows = [r for r in rows if r.get("run") == run]
    groups = defaultdict(list)
    for r in rows:
        name = r["runtime"].split()[0]
        groups[(r["model"], r["batch"], name)].append(r)
    isa = rows[0]["isa"] if rows else "?"
    print(f"\nhost ISA: {isa}; 2 threads; medians of {max(len(v) for v in groups.values())} repeats")
    print(f"{'model':12s} {'batch':>5s} {'runtime':12s} {'p50 ms':>9s} {'p90 ms':>9s} "
          f"{'p99 ms':>9s} {'items/s':>10s} {'first ms':>9s}")
    cases = sorted({(m, b) for m, b, _ in groups}, key=lambda c: (c[0], c[1]))
    for m, b in cases:
        med = {}
        for name in ("athanor", "onnxruntime", "openvino"):
            g = groups.get((m, b, name))
            if not g:
                continue
            med[name] = {k: statistics.median(x[k] for x in g)
                         for k in ("p50_ms", "p90_ms", "p99_ms", "throughput_per_s", "first_run_ms")}
            d = med[name]
            print(f"{m:12s} {b:5d} {name:12s} {d['p50_ms']:9.3f} {d['p90_ms']:9.3f} "
                  f"{d['p99_ms']:9.3f} {d['throughput_per_s']:10.1f} {d['first_run_ms']:9.1f}")
        peers = [med[p] for p in ("onnxruntime", "openvino") if p in med]
        if "athanor" not in med or not peers:
            continue
        metric, bound = TARGETS.get((m, b), ("latency", 1.0))
        if metric == "latency":
            best = min(p["p50_ms"] for p in peers)
            ratio = med["athanor"]["p50_ms"] / best
            ok = ratio <= bound
            print(f"{'':12s} {'':5s} -> athanor p50 / faster peer's: {ratio:.2f}x "
                  f"(target <= {bound}x: {'met' if ok else 'missed'})")
        else:
            best = max(p["throughput_per_s"] for p in peers)
            ratio = med["athanor"]["throughput_per_s"] / best
            ok = ratio >= bound
            print(f"{'':12s} {'':5s} -> athanor throughput / faster peer's: {ratio:.2f}x "
                  f"(target >= {bound}x: {'met' if ok else 'missed'})")


if __name__ == "__main__":
    main()
