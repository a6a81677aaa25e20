"""PyTorch side of bench_conv: the W2 CNN's two convolutions at batch 64, forward + backward.

    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/conv_torch.py

Prints one JSON line per case: {"name", "ms" (per fwd+bwd iteration), "iterations"}. The work
matches bench/bench_conv.cpp: y = conv2d(x, w, b, padding=1), then the gradients of
<y, gy> w.r.t. w, b (and x for conv2) without accumulating into .grad.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

CASES = [("w2_conv1", 1, 32, 28, False), ("w2_conv2", 32, 64, 14, True)]


def time_case(name, cin, cout, hw, input_grad, min_time):
    torch.manual_seed(0)
    x = torch.randn(64, cin, hw, hw, requires_grad=input_grad)
    w = (torch.randn(cout, cin, 3, 3) * 0.1).requires_grad_()
    b = (torch.randn(cout) * 0.1).requires_grad_()
    gy = torch.randn(64, cout, hw, hw)
    wrt = [w, b] + ([x] if input_grad else [])

    def step():
        y = F.conv2d(x, w, b, padding=1)
        return torch.autograd.grad(y, wrt, gy)

    for _ in range(5):
        step()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        dt = time.perf_counter() - t0
        if dt >= min_time:
            break
        n = max(2 * n, int(n * min_time / max(dt, 1e-6) * 1.2))
    return {"name": name, "ms": dt / n * 1e3, "iterations": n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per case")
    args = ap.parse_args()
    torch.set_num_threads(2)
    for case in CASES:
        print(json.dumps(time_case(*case, args.min_time)), flush=True)


if __name__ == "__main__":
    main()
