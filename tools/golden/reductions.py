"""Golden values for the reduction family: the PyTorch semantics the op table's naive references
can't vouch for — gradients split among ties, masked at zeros, exact with zeros in prod/cumprod;
first-occurrence indices; var's correction; result dtypes.

Each case stores x, the upstream weight w, the op's outputs, and gx = d(sum(w * y))/dx.
Run: /usr/bin/python3 tools/golden/reductions.py
"""
import math

import torch

from common import save

torch.manual_seed(0)


def case(name, op, x, fn, attrs=None, grad=True):
    x = x.clone().requires_grad_(grad and x.is_floating_point())
    out = fn(x)
    outs = out if isinstance(out, tuple) else (out,)
    y = outs[0]
    tensors = {"x": x, "y": y}
    if len(outs) > 1:
        tensors["indices"] = outs[1]
    if x.requires_grad:
        w = torch.linspace(0.5, 1.5, y.numel(), dtype=y.dtype).reshape(y.shape)
        if y.requires_grad:
            (gx,) = torch.autograd.grad((y * w).sum(), x, allow_unused=True)
        else:
            gx = None  # norm p=0 has no graph
        gx = torch.zeros_like(x) if gx is None else gx
        tensors["w"] = w
        tensors["gx"] = gx
    return {"name": name, "attrs": dict(op=op, **(attrs or {})), "tensors": tensors}


d = torch.float64
ties = torch.tensor([[1., 3., 3.], [2., 2., 1.]], dtype=d)
zeros2 = torch.tensor([[1.5, 0., -2., 0.5], [0., 3., 0., 2.]], dtype=d)
rnd = torch.randn(3, 5, dtype=d)
cases = [
    case("prod_zeros", "prod", zeros2, lambda x: x.prod(1), {"dims": [1], "keepdim": False}),
    case("prod_random", "prod", rnd, lambda x: x.prod(0, keepdim=True),
         {"dims": [0], "keepdim": True}),
    case("cumprod_zeros", "cumprod", zeros2, lambda x: x.cumprod(1), {"dim": 1}),
    case("cumprod_random", "cumprod", rnd, lambda x: x.cumprod(0), {"dim": 0}),
    case("cumsum", "cumsum", rnd, lambda x: x.cumsum(-1), {"dim": -1}),
    case("cumsum_int32", "cumsum", torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int32),
         lambda x: x.cumsum(1), {"dim": 1}),
    case("prod_int32", "prod", torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int32),
         lambda x: x.prod(1), {"dims": [1], "keepdim": False}),
    case("amax_ties", "amax", ties, lambda x: x.amax(1), {"dims": [1], "keepdim": False}),
    case("amin_ties_all", "amin", ties, lambda x: x.amin(), {"dims": [], "keepdim": False}),
    case("max_full_ties", "max", ties, lambda x: x.max()),
    case("min_full_ties", "min", ties, lambda x: x.min()),
    case("max_dim_ties", "max_dim", ties, lambda x: tuple(x.max(1)), {"dim": 1, "keepdim": False}),
    case("min_dim_ties", "min_dim", ties, lambda x: tuple(x.min(0, keepdim=True)),
         {"dim": 0, "keepdim": True}),
    case("argmax_ties", "argmax", ties, lambda x: x.argmax(1), {"dim": 1, "keepdim": False},
         grad=False),
    case("argmin_flat_keepdim", "argmin", ties, lambda x: x.argmin(keepdim=True),
         {"dim": None, "keepdim": True}, grad=False),
    case("var_c0", "var", rnd, lambda x: torch.var(x, 1, correction=0), {"dims": [1],
         "correction": 0, "keepdim": False}),
    case("var_c2_keepdim", "var", rnd, lambda x: torch.var(x, (0, 1), correction=2, keepdim=True),
         {"dims": [0, 1], "correction": 2, "keepdim": True}),
    case("std_default", "std", rnd, lambda x: torch.std(x, 0), {"dims": [0], "correction": 1,
         "keepdim": False}),
    case("std_constant", "std", torch.tensor([[1., 1., 1.], [1., 2., 4.]], dtype=d),
         lambda x: torch.std(x, 1), {"dims": [1], "correction": 1, "keepdim": False}),
    case("logsumexp", "logsumexp", rnd * 30, lambda x: torch.logsumexp(x, 1),
         {"dims": [1], "keepdim": False}),
]
norm_x = torch.tensor([[0., 1.5, -2., 0.], [0., 0., 0., 0.], [3., -3., 1., 0.5]], dtype=d)
for p in [2, 1, 3, 0.5, 0, math.inf, -math.inf]:
    cases.append(case(f"norm_p{p}", "norm", norm_x,
                      lambda x, p=p: torch.linalg.vector_norm(x, p, dim=1),
                      {"p": str(p), "dims": [1], "keepdim": False}))
cases.append(case("norm_p2_all_keepdim", "norm", rnd,
                  lambda x: torch.linalg.vector_norm(x, 2, dim=(0, 1), keepdim=True),
                  {"p": "2", "dims": [0, 1], "keepdim": True}))
save("reductions", cases)
