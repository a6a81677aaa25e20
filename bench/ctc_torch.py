"""PyTorch side of bench_ctc: F.ctc_loss forward + backward on log_probs [100, 32, 30] (a
log_softmax of normal logits, the leaf), targets [32, 30] of 30 labels each, every input 100
frames, mean reduction; the gradient w.r.t. log_probs. The work matches bench/bench_ctc.cpp.

    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE <venv>/bin/python bench/ctc_torch.py

Prints one JSON line: {"name", "ms" (wall time per iteration), "iterations", "torch"}.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

T, N, C, S = 100, 32, 30, 30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    lp = F.log_softmax(torch.randn(T, N, C), 2).detach().requires_grad_()
    targets = torch.randint(1, C, (N, S))
    il = torch.full((N,), T, dtype=torch.int64)
    tl = torch.full((N,), S, dtype=torch.int64)

    def step():
        loss = F.ctc_loss(lp, targets, il, tl)
        return torch.autograd.grad(loss, [lp])

    for _ in range(5):
        step()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t0
        if dt >= args.min_time:
            break
        n = max(2 * n, int(n * args.min_time / max(dt, 1e-6) * 1.2))
    print(json.dumps({"name": "ctc_fwd_bwd", "ms": dt / n * 1e3, "iterations": n,
                      "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
