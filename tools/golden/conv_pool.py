"""Golden values for convolution and pooling: outputs and input/weight/bias gradients for a fixed
upstream gradient, from PyTorch (float32).

    /usr/bin/python3 tools/golden/conv_pool.py   # writes tests/golden/conv_pool.json

Read by tests/ops/test_conv_golden.cpp.
"""
import torch
import torch.nn.functional as F

from common import save

torch.manual_seed(0)


def run(name, fn, inputs, attrs):
    """inputs: {name: tensor}; float ones get gradients. fn(**inputs) -> output (or (out, idx))."""
    leaves = {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    out = fn(**leaves)
    idx = None
    if isinstance(out, tuple):
        out, idx = out
    gy = torch.randn_like(out)
    out.backward(gy)
    tensors = dict(inputs)
    tensors["y"] = out
    tensors["gy"] = gy
    if idx is not None:
        tensors["indices"] = idx
    for k, v in leaves.items():
        if v.grad is not None:
            tensors["g" + k] = v.grad
    return {"name": name, "attrs": attrs, "tensors": tensors}


def conv_case(name, x, w, b, attrs, fn):
    return run(name, fn, {"x": x, "w": w, "b": b}, attrs)


cases = []

a = {"stride": [2, 1], "padding": [1, 2], "dilation": [2, 1], "groups": 2}
cases.append(conv_case("conv2d_groups_dilation_stride", torch.randn(2, 4, 9, 8),
                       torch.randn(6, 2, 3, 3), torch.randn(6), a,
                       lambda x, w, b: F.conv2d(x, w, b, stride=a["stride"], padding=a["padding"],
                                                dilation=a["dilation"], groups=a["groups"])))

a1 = {"stride": 2, "padding": 2, "dilation": 1, "groups": 1}
cases.append(conv_case("conv1d", torch.randn(2, 3, 11), torch.randn(5, 3, 4), torch.randn(5), a1,
                       lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2)))

a2 = {"padding": "same", "dilation": [2, 1]}
cases.append(conv_case("conv2d_same", torch.randn(2, 3, 7, 6), torch.randn(4, 3, 2, 3),
                       torch.randn(4), a2,
                       lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=(2, 1))))

a3 = {"stride": [2, 2], "padding": [1, 1], "output_padding": [1, 1], "groups": 1,
      "dilation": [1, 1]}
cases.append(conv_case("conv_transpose2d", torch.randn(2, 4, 5, 4), torch.randn(4, 3, 3, 3),
                       torch.randn(3), a3,
                       lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                          output_padding=1)))

a4 = {"stride": [2, 3], "padding": [1, 0], "output_padding": [1, 2], "groups": 2,
      "dilation": [1, 2]}
cases.append(conv_case("conv_transpose2d_groups", torch.randn(1, 4, 3, 3), torch.randn(4, 2, 3, 2),
                       torch.randn(4), a4,
                       lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                          output_padding=(1, 2), groups=2,
                                                          dilation=(1, 2))))

m = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": True}
cases.append(run("max_pool2d_ceil", lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                           return_indices=True),
                 {"x": torch.randn(2, 3, 9, 10)}, m))

m2 = {"kernel": [2, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [2, 1],
      "ceil_mode": False}
cases.append(run("max_pool2d_dilation", lambda x: F.max_pool2d(x, (2, 3), 2, 1, dilation=(2, 1),
                                                               return_indices=True),
                 {"x": torch.randn(2, 2, 8, 7)}, m2))

p = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True,
     "count_include_pad": False}
cases.append(run("avg_pool2d_ceil_exclude_pad",
                 lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                 {"x": torch.randn(2, 3, 9, 10)}, p))

p2 = {"kernel": [2, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True,
      "count_include_pad": True}
cases.append(run("avg_pool2d_ceil_include_pad",
                 lambda x: F.avg_pool2d(x, (2, 3), 2, 1, ceil_mode=True, count_include_pad=True),
                 {"x": torch.randn(2, 3, 8, 9)}, p2))

cases.append(run("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (4, 3)),
                 {"x": torch.randn(2, 3, 10, 7)}, {"output": [4, 3]}))

save("conv_pool", cases)
