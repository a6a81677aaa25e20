"""Prints the e2e benchmark table for one run of bench/e2e/run.sh: medians per workload and
framework, then athanor/PyTorch ratios (samples/s: higher is better; peak RSS: lower is better).

Usage: python3 summarize.py results.jsonl [run-timestamp]   (default: the newest run)
"""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = sys.argv[2] if len(sys.argv) > 2 else max(r.get("run", "") for r in rows)
rows = [r for r in rows if r.get("run") == run]
groups = {}
for r in rows:
    groups.setdefault((r["workload"], r["framework"], r.get("precision", "32-true")), []).append(r)


def med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


print(f"run {run}: medians over {max(len(v) for v in groups.values())} repeats")
print(f"{'workload':8} {'framework':22} {'precision':10} {'samples/s':>10} {'final loss':>10} "
      f"{'test acc':>8} {'peak RSS MB':>11}  samples/s of each repeat")
for (w, fw, p), rs in sorted(groups.items()):
    print(f"{w:8} {fw:22} {p:10} {fmt(med(rs, 'samples_per_s'), '10.1f')} "
          f"{fmt(med(rs, 'final_loss'), '10.4f')} {fmt(med(rs, 'test_acc'), '8.4f')} "
          f"{fmt(med(rs, 'peak_rss_mb'), '11.1f')}  "
          + " ".join(f"{r['samples_per_s']:.0f}" for r in rs))
print()
for w in sorted({k[0] for k in groups}):
    ath = {p: rs for (ww, fw, p), rs in groups.items() if ww == w and fw.startswith("athanor")}
    # athanor against each peer row of the same precision
    for (ww, fw, p), rs in sorted(groups.items()):
        if ww != w or fw.startswith("athanor") or p not in ath:
            continue
        a = ath[p]
        speed = med(a, "samples_per_s") / med(rs, "samples_per_s")
        rss = med(a, "peak_rss_mb") / med(rs, "peak_rss_mb")
        loss = med(a, "final_loss") / med(rs, "final_loss") - 1
        print(f"{w} {p}: athanor/{fw}: speed {speed:.2f}x, peak RSS {rss:.2f}x, "
              f"final loss {loss:+.1%}")
    # each athanor precision against athanor's own float32
    if "32-true" in ath:
        base = ath["32-true"]
        for p, a in sorted(ath.items()):
            if p == "32-true":
                continue
            speed = med(a, "samples_per_s") / med(base, "samples_per_s")
            loss = med(a, "final_loss") / med(base, "final_loss") - 1
            acc = (None if med(a, "test_acc") is None else
                   100 * (med(a, "test_acc") - med(base, "test_acc")))
            print(f"{w} athanor {p}/32-true: speed {speed:.2f}x, final loss {loss:+.1%}"
                  + ("" if acc is None else f", test acc {acc:+.2f} points"))
