"""Goldens for the first layers: Linear, LayerNorm, Embedding, Sequential (float32).

Run with Debian's torch: /usr/bin/python3 tools/golden/layers_basic.py
Writes tests/golden/layers_basic.json, read by tests/nn/test_layers_basic.cpp.
"""
import torch
import torch.nn as nn

from common import save
from module_case import module_case

torch.manual_seed(0)
cases = []

cases.append(module_case("linear", nn.Linear(5, 3), [torch.randn(4, 5)],
                         {"in": 5, "out": 3, "bias": True}))
cases.append(module_case("linear_nobias_3d", nn.Linear(4, 6, bias=False),
                         [torch.randn(2, 3, 4)], {"in": 4, "out": 6, "bias": False}))
ln = nn.LayerNorm([3, 4])
with torch.no_grad():
    ln.weight.normal_()
    ln.bias.normal_()
cases.append(module_case("layer_norm", ln, [torch.randn(2, 3, 4) * 2 + 1],
                         {"shape": [3, 4], "eps": 1e-5}))
emb = nn.Embedding(10, 4, padding_idx=2)
cases.append(module_case("embedding_padding", emb, [torch.tensor([[1, 2, 3], [2, 9, 1]])],
                         {"num": 10, "dim": 4, "padding_idx": 2}))
seq = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 2))
cases.append(module_case("sequential", seq, [torch.randn(5, 6)]))

save("layers_basic", cases)
