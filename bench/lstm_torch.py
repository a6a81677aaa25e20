"""PyTorch side of bench_lstm: W3's LSTM (/work/shared/WORKLOADS.md), forward + backward.

    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/lstm_torch.py

Prints one JSON line per case: {"name", "ms" (wall time per fwd+bwd iteration), "cpu_ms" (process
CPU time per iteration: on a loaded machine a measure of work, not of speed), "iterations"}. The work
matches bench/bench_lstm.cpp:
  w3_lstm: LSTM(64 -> 256, batch_first) on x [32, 64, 64], zero initial state; gradients of
           <output, gy> w.r.t. x and the four parameters (not accumulated into .grad).
  w3_gru:  the same shapes with a GRU.
  w3_lstm_linear: the LSTM followed by W3's Linear(256, 256) at all 64 positions.
"""
import argparse
import json
import time

import torch

BATCH, SEQ, IN, HIDDEN = 32, 64, 64, 256


def time_case(name, cls, with_linear, min_time):
    torch.manual_seed(0)
    rnn = cls(IN, HIDDEN, batch_first=True)
    fc = torch.nn.Linear(HIDDEN, 256)
    x = torch.randn(BATCH, SEQ, IN, requires_grad=True)
    gy = torch.randn(BATCH, SEQ, 256 if with_linear else HIDDEN)
    wrt = [x] + list(rnn.parameters()) + (list(fc.parameters()) if with_linear else [])

    def step():
        y, _ = rnn(x)
        if with_linear:
            y = fc(y)
        return torch.autograd.grad(y, wrt, gy)

    for _ in range(5):
        step()
    n = 1
    while True:
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            step()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if dt >= min_time:
            break
        n = max(2 * n, int(n * min_time / max(dt, 1e-6) * 1.2))
    return {"name": name, "ms": dt / n * 1e3, "cpu_ms": dc / n * 1e3, "iterations": n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per case")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    for name, cls, lin in [("w3_lstm", torch.nn.LSTM, False), ("w3_gru", torch.nn.GRU, False),
                           ("w3_lstm_linear", torch.nn.LSTM, True)]:
        print(json.dumps(time_case(name, cls, lin, args.min_time)), flush=True)


if __name__ == "__main__":
    main()
