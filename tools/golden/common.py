"""Shared writer for golden-value files.

Each generator script builds cases with PyTorch (Debian's python3-torch 1.13, run with
/usr/bin/python3) and saves them as tests/golden/<name>.json:

    {"generator": "tools/golden/conv.py", "torch": "1.13.0", "cases": [
        {"name": "groups_dilation", "attrs": {...},
         "tensors": {"x": {"shape": [..], "dtype": "float32", "data": [...]}, ...}}]}

Tensors are stored as float64 lists (exact for float32 values), in row-major order. Tests load
them with tests/support/golden.h and never need Python.
"""
import json
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.int64: "int64",
          torch.int32: "int32", torch.bool: "bool", torch.uint8: "uint8",
          torch.bfloat16: "bfloat16", torch.float16: "float16"}


def tensor_json(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "dtype": DTYPES[t.dtype],
            "data": t.reshape(-1).to(torch.float64).tolist()}


def save(name, cases):
    """cases: list of {"name": str, "attrs": dict, "tensors": {name: torch.Tensor}}."""
    out = {"generator": os.path.relpath(sys.argv[0], ROOT), "torch": torch.__version__,
           "cases": [{"name": c["name"], "attrs": c.get("attrs", {}),
                      "tensors": {k: tensor_json(v) for k, v in c["tensors"].items()}}
                     for c in cases]}
    path = os.path.join(ROOT, "tests", "golden", name + ".json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


def encode_nonfinite(tensors):
    """JSON has no NaN/Infinity: a tensor with non-finite values is stored with them as 0 plus a
    "<name>.nonfinite" tensor of codes (0 finite, 1 NaN, 2 +inf, 3 -inf) that
    GoldenCase::with_nonfinite applies."""
    out = {}
    for k, v in tensors.items():
        v = v.detach().clone()
        if v.is_floating_point() and not torch.isfinite(v).all():
            codes = torch.zeros(v.shape, dtype=torch.uint8)
            codes[torch.isnan(v)] = 1
            codes[v == float("inf")] = 2
            codes[v == float("-inf")] = 3
            out[k] = torch.where(torch.isfinite(v), v, torch.zeros_like(v))
            out[k + ".nonfinite"] = codes
        else:
            out[k] = v
    return out
