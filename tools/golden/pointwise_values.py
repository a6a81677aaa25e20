"""Values and gradients of pointwise ops from torch, in float64, for
tests/ops/test_pointwise_golden.cpp.

Inputs sweep [-6, 6] in steps of 0.25 plus the kinks and thresholds of the ops below (+-3 for
hardswish/hardsigmoid, the hardtanh/clamp bounds, the softplus threshold) and large magnitudes,
so the test pins torch's conventions where formulas could legitimately differ: which side of a
kink a gradient takes, strict vs inclusive thresholds, saturation.

Run: /usr/bin/python3 tools/golden/pointwise_values.py
"""
import torch
import torch.nn.functional as F

from common import save

OPS = {
    "relu": torch.relu,
    "leaky_relu": lambda x: F.leaky_relu(x, 0.2),
    "elu": lambda x: F.elu(x, 1.3),
    "selu": F.selu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "mish": F.mish,
    "softplus": lambda x: F.softplus(x, beta=2, threshold=3),
    "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.8),
    "hardsigmoid": F.hardsigmoid,
    "hardswish": F.hardswish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "erf": torch.erf,
    "abs": torch.abs,
    "sign": torch.sign,
    "clamp": lambda x: torch.clamp(x, -0.5, 0.8),
    "floor": torch.floor,
    "round": torch.round,
    "pow_2": lambda x: torch.pow(x, 2),
    "pow_3.5_abs": lambda x: torch.pow(x.abs(), 3.5),
    "maximum_half": lambda x: torch.maximum(x, torch.full_like(x, 0.5)),
    "remainder_1.5": lambda x: torch.remainder(x, 1.5),
    "fmod_1.5": lambda x: torch.fmod(x, 1.5),
}


def main():
    sweep = [i * 0.25 for i in range(-24, 25)]
    extra = [0.8, -0.8, 0.1, -0.1, 1e-3, -1e-3, 20.0, -20.0, 50.0, -50.0, 100.0, -100.0]
    base = torch.tensor(sweep + extra, dtype=torch.float64)
    cases = []
    for name, fn in OPS.items():
        x = base.clone().requires_grad_()
        y = fn(x)
        y.sum().backward()
        cases.append({"name": name, "attrs": {"op": name},
                      "tensors": {"x": x.detach(), "y": y.detach(), "dx": x.grad}})
    save("pointwise_values", cases)


if __name__ == "__main__":
    main()
