"""PyTorch side of the end-to-end training benchmark (bench/e2e/run.sh).

Runs one workload of ../shared/WORKLOADS.md (W1 MLP, W2 CNN, W3 char-LSTM, W4 char-Transformer)
under the common protocol and prints one JSON line:
  {"workload", "framework", "samples_per_s", "final_loss", "test_acc", "peak_rss_mb", ...}

Protocol: data decoded into RAM first; model built after seeding; 5 warm-up steps on a copy of
the model with its own optimizer (discarded); timed region = per step: gather the batch by index,
zero grads, forward, loss, backward, optimizer step, read the loss. Final loss = mean of the last
20 steps; test accuracy on the 10k test set in eval mode, batches of 1000 (W1, W2).

Settings (--setting), the three a PyTorch 2.x user would choose; the JSON "framework" names it
("pytorch-2.15.0", "pytorch-2.15.0-fused", "pytorch-2.15.0-compile"):
  eager    the optimizers as constructed by default (foreach where PyTorch picks it).
  fused    eager, with fused=True optimizers (SGD/Adam/AdamW take it on CPU since 2.4).
  compile  torch.compile(model) with the default options, fused=True optimizer. Warm-up: the
           model that is timed is compiled and warmed itself, since whether a compiled copy's
           graphs serve another instance depends on the PyTorch version: 5 steps on the first 5
           batches plus one on each other batch shape the timed run will see (W1 and W2's smaller
           last batch, which would otherwise recompile inside the timed region), with a
           throwaway optimizer; then the initial weights are copied back in place (the compiled
           graphs stay valid) and a fresh optimizer is made, so the timed run starts from the
           same init as the other settings. "warmup_s" is that warm-up, compilation included;
           "timed_compiles" counts graphs dynamo compiled inside the timed region (0 expected).
           Test accuracy runs the uncompiled module (same parameters), so evaluation's batch
           of 1000 in eval mode does not compile another graph.
A setting the installed torch lacks (Debian's 1.13 has neither CPU fused optimizers nor
torch.compile) exits with status 3 and a message on stderr, printing no JSON;
`--probe` only checks that (exit 0: supported).

Usage: python3 torch_ref.py W1 [--threads 2] [--setting eager|fused|compile]
       (set OMP_NUM_THREADS and OMP_WAIT_POLICY outside)
"""
import argparse
import contextlib
import copy
import gzip
import json
import os
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
FMNIST = "/usr/share/datasets/fashion-mnist"
LICENSES = "/usr/share/common-licenses"
CORPUS_FILES = ["Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.2", "GFDL-1.3", "GPL-1",
                "GPL-2", "GPL-3", "LGPL-2", "LGPL-2.1", "LGPL-3", "MPL-1.1", "MPL-2.0"]


def idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def fmnist(split):
    x = idx(f"{FMNIST}/{split}-images-idx3-ubyte.gz").astype(np.float32) / 255.0
    y = idx(f"{FMNIST}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    x = (x - 0.2860) / 0.3530
    return torch.from_numpy(x).reshape(-1, 1, 28, 28).contiguous(), torch.from_numpy(y)


def corpus():
    data = b"".join(open(os.path.join(LICENSES, n), "rb").read() for n in CORPUS_FILES)
    assert len(data) == 237320, len(data)
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8).astype(np.int64))


def i32(name):
    return torch.from_numpy(np.fromfile(os.path.join(DATA, name), dtype="<i4").astype(np.int64))


class CharTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(256, 128)
        self.pos = nn.Embedding(128, 128)
        layer = nn.TransformerEncoderLayer(128, 4, 512, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(128)
        self.head = nn.Linear(128, 256)
        self.register_buffer("mask", torch.triu(torch.full((128, 128), float("-inf")), 1),
                             persistent=False)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.norm(self.encoder(h, mask=self.mask)))


class CharLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 64)
        self.lstm = nn.LSTM(64, 256, batch_first=True)
        self.head = nn.Linear(256, 256)

    def forward(self, x):
        return self.head(self.lstm(self.emb(x))[0])


# Each workload's optimizer; extra keywords (fused=True) pass through.
OPTIMIZERS = {
    "W1": lambda p, **kw: torch.optim.SGD(p, lr=0.1, momentum=0.9, **kw),
    "W2": lambda p, **kw: torch.optim.Adam(p, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, **kw),
    "W3": lambda p, **kw: torch.optim.Adam(p, lr=2e-3, **kw),
    "W4": lambda p, **kw: torch.optim.AdamW(p, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                            weight_decay=0.01, **kw),
}


def workload(name, seed=0):
    """-> (model, optimizer factory, list of batch indices, batch getter, test set or None)"""
    torch.manual_seed(seed)
    if name in ("W1", "W2"):
        xtr, ytr = fmnist("train")
        test = fmnist("t10k")
        perm = i32("fmnist_train_perm_seed0.i32")
        bs = 128 if name == "W1" else 64
        batches = [perm[i:i + bs] for i in range(0, len(perm), bs)]
        if name == "W1":
            model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                                  nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, 10))
        else:
            model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(),
                                  nn.Linear(128, 10))
        get = lambda b: (xtr[b], ytr[b])
        return model, OPTIMIZERS[name], batches, get, test
    text = corpus()
    if name == "W3":
        starts, seq = i32("lm_W3_lstm_starts_seq64_b32_s200_seed0.i32").reshape(200, 32), 64
        model = CharLSTM()
    else:
        starts, seq = i32("lm_W4_transformer_starts_seq128_b16_s200_seed0.i32").reshape(200, 16), 128
        model = CharTransformer()
    offsets = torch.arange(seq + 1)

    def get(s):
        w = text[s[:, None] + offsets[None, :]]
        return w[:, :-1], w[:, 1:]
    return model, OPTIMIZERS[name], list(starts), get, None


def autocast(precision):
    """torch.autocast("cpu", ...) for the -mixed precisions, else nothing."""
    if precision == "bf16-mixed":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    if precision == "16-mixed":
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()


def step(model, opt, x, y, precision="32-true", scaler=None):
    opt.zero_grad()
    with autocast(precision):
        out = model(x)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))
    if scaler is None:
        loss.backward()
        opt.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return loss.item()


def unsupported(name, setting):
    """None when the installed torch runs `setting` for workload `name`, else the reason."""
    if setting == "eager":
        return None
    if setting == "compile" and not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile (PyTorch >= 2.0)"
    p = nn.Parameter(torch.zeros(4))
    try:  # CPU fused optimizers: SGD/Adam/AdamW since 2.4 (1.13: no keyword, or CUDA only)
        opt = OPTIMIZERS[name]([p], fused=True)
        p.grad = torch.ones(4)
        opt.step()
    except Exception as e:  # noqa: BLE001 - TypeError (no keyword), RuntimeError (CUDA only), ...
        return (f"torch {torch.__version__}: the {name} optimizer with fused=True fails on CPU: "
                f"{str(e).splitlines()[0] if str(e) else type(e).__name__}")
    return None


def compiled_graphs():
    """Graphs dynamo has compiled in this process so far (None where it cannot say)."""
    try:
        from torch._dynamo.utils import counters
        return counters["stats"]["unique_graphs"]
    except Exception:  # noqa: BLE001 - a private counter; only a diagnostic
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["W1", "W2", "W3", "W4"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all)")
    ap.add_argument("--seed", type=int, default=0, help="initialisation seed (spread of the final loss)")
    ap.add_argument("--precision", default="32-true", choices=["32-true", "bf16-mixed", "16-mixed"],
                    help="autocast dtype (Lightning's names); 16-mixed adds a GradScaler")
    ap.add_argument("--setting", default="eager", choices=["eager", "fused", "compile"],
                    help="eager; eager with fused=True optimizers; torch.compile(model) with a "
                         "fused optimizer (warmed up outside the timed region)")
    ap.add_argument("--probe", action="store_true",
                    help="only check that this torch runs --setting (exit 0) or not (exit 3)")
    args = ap.parse_args()
    why = unsupported(args.workload, args.setting)
    if why is not None:
        print(f"torch_ref.py: setting '{args.setting}' skipped: {why}", file=sys.stderr)
        sys.exit(3)
    if args.probe:
        return
    torch.set_num_threads(args.threads)
    model, base_opt, batches, get, test = workload(args.workload, args.seed)
    opt_kw = {} if args.setting == "eager" else {"fused": True}
    make_opt = lambda params: base_opt(params, **opt_kw)
    if args.steps:
        batches = batches[:args.steps]
    make_scaler = lambda: (torch.amp.GradScaler("cpu") if args.precision == "16-mixed" else None)

    t_warm = time.perf_counter()
    if args.setting == "compile":
        # Compile and warm the timed model itself (see the module docstring), on the warm-up
        # batches and one batch of each other shape the timed run has; then restore its init.
        init = copy.deepcopy(model.state_dict())
        run_model = torch.compile(model)
        warm_batches, shapes = list(batches[:5]), {tuple(b.shape) for b in batches[:5]}
        for b in batches[5:]:
            if tuple(b.shape) not in shapes:
                shapes.add(tuple(b.shape))
                warm_batches.append(b)
        warm_opt, warm_scaler = make_opt(model.parameters()), make_scaler()
        for b in warm_batches:
            step(run_model, warm_opt, *get(b), args.precision, warm_scaler)
        del warm_opt, warm_scaler
        with torch.no_grad():
            model.load_state_dict(init)  # copies in place: same tensors, graphs stay valid
        for p in model.parameters():
            p.grad = None
        del init
    else:
        run_model = model
        warm = copy.deepcopy(model)
        warm_opt = make_opt(warm.parameters())
        warm_scaler = make_scaler()
        for b in batches[:5]:
            step(warm, warm_opt, *get(b), args.precision, warm_scaler)
        del warm, warm_opt
    warmup_s = time.perf_counter() - t_warm

    opt = make_opt(model.parameters())
    scaler = make_scaler()
    losses, samples = [], 0
    graphs_before = compiled_graphs()
    t0 = time.perf_counter()
    for b in batches:
        x, y = get(b)
        losses.append(step(run_model, opt, x, y, args.precision, scaler))
        samples += x.shape[0]
    seconds = time.perf_counter() - t0
    graphs_after = compiled_graphs()

    acc = None
    if test is not None:
        model.eval()  # the uncompiled module (compile: same parameters, no eval-mode graph)
        correct = 0
        with torch.no_grad(), autocast(args.precision):
            for i in range(0, len(test[1]), 1000):
                correct += (model(test[0][i:i + 1000]).argmax(1) == test[1][i:i + 1000]).sum().item()
        acc = correct / len(test[1])
    version = torch.__version__.split("+")[0]  # "2.15.0+cu132" -> "2.15.0"
    out = {
        "workload": args.workload,
        "framework": f"pytorch-{version}" + ("" if args.setting == "eager" else f"-{args.setting}"),
        "precision": args.precision, "setting": args.setting, "torch_version": torch.__version__,
        "samples_per_s": samples / seconds, "seconds": seconds, "steps": len(batches),
        "final_loss": float(np.mean(losses[-20:])), "test_acc": acc,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "threads": args.threads, "warmup_s": warmup_s}
    if args.setting == "compile":
        out["timed_compiles"] = (None if graphs_before is None or graphs_after is None
                                 else graphs_after - graphs_before)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
