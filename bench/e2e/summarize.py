"""Prints the e2e benchmark table for one run of bench/e2e/run.sh: medians per workload and
framework (athanor eager, athanor compiled, each PyTorch setting), then per workload and
precision: athanor compiled and eager against the best PyTorch setting (the one with the highest
median samples/s) and against each setting, athanor compiled / eager, and each athanor row's
achieved GFLOP/s = FLOP per sample x samples/s with its share of the SGEMM rate that athanor_e2e
measured in the same run ("sgemm_gflops", median over the workload's athanor rows). Ratios of
samples/s: higher is better; of peak RSS: lower is better.

Usage: python3 summarize.py results.jsonl [run-timestamp]   (default: the newest run)
"""
import json
import statistics
import sys

# Matmul + convolution FLOP per sample, forward + backward (issue 14); W3, W4: per sequence.
FLOP_PER_SAMPLE = {"W1": 2.41e6, "W2": 25.4e6, "W3": 151e6, "W4": 377e6}

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run = sys.argv[2] if len(sys.argv) > 2 else max(r.get("run", "") for r in rows)
rows = [r for r in rows if r.get("run") == run]
if not rows:
    sys.exit(f"no results for run {run}")
groups = {}
for r in rows:
    groups.setdefault((r["workload"], r["framework"], r.get("precision", "32-true")), []).append(r)


def med(rs, key):
    vals = [r[key] for r in rs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def is_athanor(fw):
    return fw.startswith("athanor")


def is_compiled(fw):
    return fw.endswith("-compiled")


def gflops(w, rs):
    sps = med(rs, "samples_per_s")
    return None if sps is None or w not in FLOP_PER_SAMPLE else FLOP_PER_SAMPLE[w] * sps / 1e9


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def compare(a, b):
    """'speed 1.23x, peak RSS 0.10x, final loss +0.1%' of rows a against rows b."""
    speed = ratio(med(a, "samples_per_s"), med(b, "samples_per_s"))
    rss = ratio(med(a, "peak_rss_mb"), med(b, "peak_rss_mb"))
    loss = ratio(med(a, "final_loss"), med(b, "final_loss"))
    return (f"speed {fmt(speed, '.2f')}x, peak RSS {fmt(rss, '.2f')}x, final loss "
            + ("-" if loss is None else f"{loss - 1:+.1%}"))


# The SGEMM rate of the run, per workload (athanor_e2e measures it after each run).
sgemm = {}
for (w, fw, p), rs in groups.items():
    if is_athanor(fw):
        sgemm.setdefault(w, []).extend(r["sgemm_gflops"] for r in rs if r.get("sgemm_gflops"))
sgemm = {w: statistics.median(v) for w, v in sgemm.items() if v}

print(f"run {run}: medians over {max(len(v) for v in groups.values())} repeats")
print(f"{'workload':8} {'framework':26} {'precision':10} {'samples/s':>10} {'final loss':>10} "
      f"{'test acc':>8} {'peak RSS MB':>11} {'compile s':>9} {'GFLOP/s':>8}  "
      "samples/s of each repeat")
for (w, fw, p), rs in sorted(groups.items()):
    # compile time outside the timed region: athanor compiled's trace_s, torch.compile's
    # warm-up (warmup_s: its warm-up steps, compilation included)
    warm = (med(rs, "trace_s") if is_athanor(fw) and is_compiled(fw) else
            med(rs, "warmup_s") if fw.endswith("-compile") else None)
    print(f"{w:8} {fw:26} {p:10} {fmt(med(rs, 'samples_per_s'), '10.1f')} "
          f"{fmt(med(rs, 'final_loss'), '10.4f')} {fmt(med(rs, 'test_acc'), '8.4f')} "
          f"{fmt(med(rs, 'peak_rss_mb'), '11.1f')} {fmt(warm, '9.2f')} "
          f"{fmt(gflops(w, rs), '8.1f')}  "
          + " ".join(f"{r['samples_per_s']:.0f}" for r in rs))
    timed = [r["timed_compiles"] for r in rs if r.get("timed_compiles")]
    if timed:
        print(f"{'':8} ^ torch.compile compiled {sum(timed)} graph(s) inside the timed region")

for w in sorted({k[0] for k in groups}):
    for p in sorted({k[2] for k in groups if k[0] == w}):
        here = {fw: rs for (ww, fw, pp), rs in groups.items() if ww == w and pp == p}
        eager = next((rs for fw, rs in here.items() if is_athanor(fw) and not is_compiled(fw)),
                     None)
        compiled = next((rs for fw, rs in here.items() if is_athanor(fw) and is_compiled(fw)),
                        None)
        peers = {fw: rs for fw, rs in here.items() if not is_athanor(fw)}
        print(f"\n{w} {p}:")
        if peers:
            best = max(peers, key=lambda fw: med(peers[fw], "samples_per_s") or 0)
            print(f"  best PyTorch setting: {best} "
                  f"({fmt(med(peers[best], 'samples_per_s'), '.1f')} samples/s)")
            for name, a in (("athanor compiled", compiled), ("athanor eager", eager)):
                if a is None:
                    continue
                print(f"  {name} / best PyTorch: {compare(a, peers[best])}")
                each = ", ".join(
                    f"{fw} {fmt(ratio(med(a, 'samples_per_s'), med(rs, 'samples_per_s')), '.2f')}x"
                    for fw, rs in sorted(peers.items()))
                print(f"  {name} / each PyTorch setting (speed): {each}")
        if eager is not None and compiled is not None:
            print(f"  compiled / eager (athanor): {compare(compiled, eager)}")
            # Same seed, same batches: the two runs' first 50 losses, step by step.
            worst = None
            for e, c in zip(eager, compiled):
                fe, fc = e.get("first_losses"), c.get("first_losses")
                if not fe or not fc:
                    continue
                for le, lc in zip(fe, fc):
                    d = 0.0 if le == lc else abs(lc - le) / max(abs(le), 1e-30)
                    worst = d if worst is None else max(worst, d)
            if worst is not None:
                print(f"  first 50 losses, compiled vs eager: largest relative difference "
                      f"{worst:.2e}" + (" (bit-identical)" if worst == 0 else ""))
        rate = sgemm.get(w)
        for name, a in (("athanor eager", eager), ("athanor compiled", compiled)):
            g = None if a is None else gflops(w, a)
            if g is None:
                continue
            share = "" if rate is None else f" = {g / rate:.0%} of the measured SGEMM rate"
            print(f"  {name}: {g:.1f} GFLOP/s ({FLOP_PER_SAMPLE[w] / 1e6:.3g} MFLOP/sample x "
                  f"{med(a, 'samples_per_s'):.1f} samples/s){share}")
        if rate is not None and (eager or compiled):
            print(f"  SGEMM rate (athanor_e2e's sgemm_gflops, median of the run): "
                  f"{rate:.1f} GFLOP/s")

    # each athanor precision against athanor's own float32, per mode (eager, compiled)
    for compiled_mode in (False, True):
        ath = {p: rs for (ww, fw, p), rs in groups.items()
               if ww == w and is_athanor(fw) and is_compiled(fw) == compiled_mode}
        if "32-true" not in ath:
            continue
        base = ath["32-true"]
        for p, a in sorted(ath.items()):
            if p == "32-true":
                continue
            speed = med(a, "samples_per_s") / med(base, "samples_per_s")
            loss = med(a, "final_loss") / med(base, "final_loss") - 1
            acc = (None if med(a, "test_acc") is None else
                   100 * (med(a, "test_acc") - med(base, "test_acc")))
            mode = "compiled" if compiled_mode else "eager"
            print(f"{w} athanor {mode} {p}/32-true: speed {speed:.2f}x, final loss {loss:+.1%}"
                  + ("" if acc is None else f", test acc {acc:+.2f} points"))
