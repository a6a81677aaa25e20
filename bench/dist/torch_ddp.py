"""PyTorch side of the data-parallel benchmark (bench/dist/run.sh): DistributedDataParallel over
gloo with the protocol of bench/dist/athanor_ddp.cpp.

    python torch_ddp.py W2 --processes 2 --threads 1 [--steps N]

The processes are started here (torch.multiprocessing, gloo over TCP on 127.0.0.1); each takes
the contiguous share of every global batch that matches its rank, warms up for 5 steps
(untimed), meets the others at a barrier, then runs the timed steps: gather, zero grads, forward
through DDP, loss, backward (gloo all-reduces overlap it), optimizer step, read the loss. Rank 0
prints one JSON line with the global samples/s. Models, data and optimizers are
bench/e2e/torch_ref.py's.
"""
import argparse
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import torch_ref  # noqa: E402


def run(rank, args, port, queue):
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.processes)
    model, make_opt, batches, get, _ = torch_ref.workload(args.workload, 0)
    if args.steps:
        batches = batches[:args.steps + 5]
    world = args.processes
    batches = [b[len(b) * rank // world:len(b) * (rank + 1) // world] for b in batches]
    ddp = DDP(model)
    opt = make_opt(ddp.parameters())

    def step(x, y):
        opt.zero_grad()
        out = ddp(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    losses, samples = [], 0
    t0 = time.perf_counter()
    for i, b in enumerate(batches):
        if i == 5:
            dist.barrier()
            t0 = time.perf_counter()
        x, y = get(b)
        losses.append(step(x, y))
        if i >= 5:
            samples += x.shape[0]
    dist.barrier()
    seconds = time.perf_counter() - t0
    total = torch.tensor([float(samples)], dtype=torch.float64)
    dist.all_reduce(total)
    if rank == 0:
        queue.put({"workload": args.workload,
                   "framework": "pytorch-" + torch.__version__.split("+")[0] + "-ddp-gloo",
                   "processes": world, "threads": args.threads,
                   "samples_per_s": total.item() / seconds, "seconds": seconds,
                   "steps": len(batches) - 5, "final_loss": float(np.mean(losses[-20:]))})
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["W1", "W2", "W3", "W4"])
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="timed steps (0: all)")
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    mp.spawn(run, args=(args, port, queue), nprocs=args.processes, join=True)
    print(json.dumps(queue.get()))


if __name__ == "__main__":
    main()
