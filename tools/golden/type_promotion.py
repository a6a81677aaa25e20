"""Result dtypes torch gives for pointwise ops, for tests/ops/test_type_promotion.cpp.

Three grids, every case recording either the result dtype or that torch refuses the call:
  - tensor op tensor: every (dtype_a, dtype_b) pair, with each side a 1-D or a 0-dim tensor
    (0-dim tensors only lift the category of dimensioned ones: torch.result_type's rule);
  - tensor op Python scalar: every dtype against 2, 2.5 and True;
  - unary ops (and those with scalar attributes) over every dtype.
"not implemented for 'Half'/'BFloat16'" is recorded as kernel_missing: torch 1.13 lacks some
16-bit CPU kernels that athanor has (it computes them in float32), so the test skips those.

Run: /usr/bin/python3 tools/golden/type_promotion.py
"""
import torch
import torch.nn.functional as F

from common import DTYPES, save

ALL = [torch.bool, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
       torch.float32, torch.float64]

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "eq": torch.eq,
    "lt": torch.lt, "pow": torch.pow, "maximum": torch.maximum, "minimum": torch.minimum,
    "fmod": torch.fmod, "remainder": torch.remainder, "logical_and": torch.logical_and,
}
# Full dim grid for the four the golden is about; dimensioned pairs only for the rest.
DIM_GRID_OPS = {"add", "mul", "div", "eq"}

SCALAR = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "eq": torch.eq,
    "lt": torch.lt, "pow": torch.pow, "fmod": torch.fmod, "remainder": torch.remainder,
    "clamp_min": lambda t, s: torch.clamp(t, min=s),
}
SCALARS = [("int", 2), ("float", 2.5), ("bool", True)]

UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2,
    "log1p": torch.log1p, "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf, "abs": torch.abs,
    "sign": torch.sign, "neg": torch.neg, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "round_decimals": lambda t: torch.round(t, decimals=1),
    "trunc": torch.trunc, "relu": torch.relu, "leaky_relu": F.leaky_relu, "elu": F.elu,
    "selu": F.selu, "gelu": F.gelu, "silu": F.silu, "mish": F.mish, "softplus": F.softplus,
    "hardtanh": F.hardtanh, "hardtanh_positive": lambda t: F.hardtanh(t, 0, 2),
    "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "isnan": torch.isnan,
    "isinf": torch.isinf, "isfinite": torch.isfinite, "logical_not": torch.logical_not,
    "pow_2": lambda t: torch.pow(t, 2), "pow_2.5": lambda t: torch.pow(t, 2.5),
    "pow_neg1": lambda t: torch.pow(t, -1), "clamp_0_1": lambda t: torch.clamp(t, 0, 1),
    "clamp_tensor": lambda t: torch.clamp(t, min=torch.zeros(2, dtype=torch.float32)),
    "lerp": lambda t: torch.lerp(t, t, 0.5),
}


def tensor(dtype, dim):
    return torch.ones(2, dtype=dtype) if dim == 1 else torch.ones((), dtype=dtype)


def outcome(fn):
    """{"result": dtype} or {"error": msg} / {"kernel_missing": msg}."""
    try:
        return {"result": DTYPES[fn().dtype]}
    except RuntimeError as e:
        msg = str(e).split("\n")[0][:80]
        if "not implemented for 'Half'" in msg or "not implemented for 'BFloat16'" in msg:
            return {"kernel_missing": msg}
        return {"error": msg}


def main():
    cases = []
    for op, fn in BINARY.items():
        dims = [(1, 1), (1, 0), (0, 1), (0, 0)] if op in DIM_GRID_OPS else [(1, 1)]
        for a in ALL:
            for b in ALL:
                for da, db in dims:
                    attrs = {"kind": "binary", "op": op, "a": DTYPES[a], "b": DTYPES[b],
                             "a_dim": da, "b_dim": db}
                    attrs.update(outcome(lambda: fn(tensor(a, da), tensor(b, db))))
                    cases.append({"name": f"{op}/{DTYPES[a]}{da}/{DTYPES[b]}{db}",
                                  "attrs": attrs})
    for op, fn in SCALAR.items():
        for a in ALL:
            for da in (1, 0):
                for kind, s in SCALARS:
                    attrs = {"kind": "scalar", "op": op, "a": DTYPES[a], "a_dim": da,
                             "scalar": s, "scalar_kind": kind}
                    attrs.update(outcome(lambda: fn(tensor(a, da), s)))
                    cases.append({"name": f"{op}/{DTYPES[a]}{da}/{kind}", "attrs": attrs})
    for op, fn in UNARY.items():
        for a in ALL:
            attrs = {"kind": "unary", "op": op, "a": DTYPES[a]}
            attrs.update(outcome(lambda: fn(tensor(a, 1))))
            cases.append({"name": f"{op}/{DTYPES[a]}", "attrs": attrs})
    save("type_promotion", [dict(c, tensors={}) for c in cases])


if __name__ == "__main__":
    main()
