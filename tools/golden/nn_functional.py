"""Golden values for the NN functional ops: outputs and gradients (for a fixed upstream
gradient) from torch.nn.functional, float32.

Run with Debian's torch: /usr/bin/python3 tools/golden/nn_functional.py
Writes tests/golden/nn_functional.json, read by tests/ops/test_nn_functional_golden.cpp.
"""
import torch
import torch.nn.functional as F

from common import save

torch.manual_seed(0)


def leaf(*shape, scale=1.0, shift=0.0):
    return (torch.randn(*shape) * scale + shift).requires_grad_()


def grads(y, gy, *inputs):
    return torch.autograd.grad(y, inputs, gy)


cases = []

for name, fn in (("softmax", F.softmax), ("log_softmax", F.log_softmax)):
    x = leaf(2, 5, 3, scale=2.0)
    y = fn(x, dim=1)
    gy = torch.randn_like(y)
    (dx,) = grads(y, gy, x)
    cases.append({"name": f"{name}_dim1", "attrs": {"op": name, "dim": 1},
                  "tensors": {"x": x, "gy": gy, "y": y, "dx": dx}})

x, w, b = leaf(3, 4, 6), leaf(4, 6), leaf(4, 6)
y = F.layer_norm(x, (4, 6), w, b, eps=1e-5)
gy = torch.randn_like(y)
dx, dw, db = grads(y, gy, x, w, b)
cases.append({"name": "layer_norm_affine", "attrs": {"normalized_shape": [4, 6], "eps": 1e-5},
              "tensors": {"x": x, "w": w, "b": b, "gy": gy, "y": y, "dx": dx, "dw": dw,
                          "db": db}})

for training in (True, False):
    x, w, b = leaf(4, 3, 2, 2, scale=1.5, shift=0.5), leaf(3), leaf(3)
    rm = torch.randn(3) * 0.1
    rv = torch.rand(3) + 0.5
    rm0, rv0 = rm.clone(), rv.clone()
    y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.1, eps=1e-5)
    gy = torch.randn_like(y)
    dx, dw, db = grads(y, gy, x, w, b)
    cases.append({"name": "batch_norm_" + ("train" if training else "eval"),
                  "attrs": {"training": training, "momentum": 0.1, "eps": 1e-5},
                  "tensors": {"x": x, "w": w, "b": b, "running_mean": rm0, "running_var": rv0,
                              "gy": gy, "y": y, "dx": dx, "dw": dw, "db": db,
                              "running_mean_after": rm, "running_var_after": rv}})

x, w, b = leaf(2, 6, 3, 2), leaf(6), leaf(6)
y = F.group_norm(x, 3, w, b, eps=1e-5)
gy = torch.randn_like(y)
dx, dw, db = grads(y, gy, x, w, b)
cases.append({"name": "group_norm", "attrs": {"num_groups": 3, "eps": 1e-5},
              "tensors": {"x": x, "w": w, "b": b, "gy": gy, "y": y, "dx": dx, "dw": dw,
                          "db": db}})

weight = leaf(6, 4)
idx = torch.tensor([[1, 3, 0], [3, 5, 3]])
y = F.embedding(idx, weight, padding_idx=3)
gy = torch.randn_like(y)
(dweight,) = grads(y, gy, weight)
cases.append({"name": "embedding_padding", "attrs": {"padding_idx": 3},
              "tensors": {"weight": weight, "indices": idx, "gy": gy, "y": y,
                          "dweight": dweight}})

save("nn_functional", cases)
