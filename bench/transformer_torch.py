"""PyTorch side of bench_transformer: one W4 encoder block (pre-LN, d_model 128, 4 heads, ff 512,
GELU, dropout 0, causal mask, batch_first) on [16, 128, 128], forward + backward.

    OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/transformer_torch.py

Prints one JSON line per case: {"name", "ms" (per fwd+bwd iteration), "iterations"}. The work
matches bench/bench_transformer.cpp: y = layer(x, src_mask=causal), then the gradients of
<y, gy> w.r.t. x and every parameter (torch.autograd.grad, nothing accumulated into .grad).
Cases: "w4_layer" (nn.TransformerEncoderLayer), "w4_attention" (its nn.MultiheadAttention
alone, need_weights=False) and "w4_model" (the whole W4 model: embeddings, 2 blocks, LayerNorm,
Linear(128, 256), cross-entropy; forward + backward of a training step without the optimizer).
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn

B, L, D, H, FF = 16, 128, 128, 4, 512


def timed(step, min_time):
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
    return dt / n * 1e3, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds per case")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True)
    layer.train()  # the plain (differentiable) path, as in training
    mask = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
    x = torch.randn(B, L, D, requires_grad=True)
    gy = torch.randn(B, L, D)

    params = [x] + list(layer.parameters())

    def layer_step():
        y = layer(x, src_mask=mask)
        return torch.autograd.grad(y, params, gy)

    attn = layer.self_attn
    attn_params = [x] + list(attn.parameters())

    def attn_step():
        y = attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        return torch.autograd.grad(y, attn_params, gy)

    class W4(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(256, D), nn.Embedding(L, D)
            block = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(block, 2, enable_nested_tensor=False)
            self.norm, self.head = nn.LayerNorm(D), nn.Linear(D, 256)

        def forward(self, ids):
            h = self.tok(ids) + self.pos(torch.arange(ids.size(1)))
            return self.head(self.norm(self.blocks(h, mask=mask)))

    model = W4().train()
    ids, targets = torch.randint(0, 256, (B, L)), torch.randint(0, 256, (B, L))

    def model_step():
        logits = model(ids)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), targets.reshape(-1))
        model.zero_grad()
        loss.backward()
        return loss.item()

    for name, step in (("w4_model", model_step), ("w4_layer", layer_step),
                       ("w4_attention", attn_step)):
        ms, n = timed(step, args.min_time)
        print(json.dumps({"name": name, "ms": ms, "iterations": n}), flush=True)


if __name__ == "__main__":
    main()
