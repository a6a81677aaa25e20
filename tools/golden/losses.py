"""Golden values for the loss functions: outputs and input/target gradients (for a fixed upstream
gradient) from torch.nn.functional, for each loss with each option combination, including empty
batches, K-dimensional cross_entropy, all-ignored targets and a zero total weight.

Run with Debian's torch: /usr/bin/python3 tools/golden/losses.py
Writes tests/golden/losses.json, read by tests/ops/test_losses_golden.cpp.

Each case: attrs {"loss", "reduction", options...}; tensors input, target, [weight],
[pos_weight], gy (upstream gradient), out, dinput, [dtarget] (when the target is floating).
JSON has no NaN/Infinity: a tensor with non-finite values is stored with them as 0 plus a
"<name>.nonfinite" tensor of codes (0 finite, 1 NaN, 2 +inf, 3 -inf) that the test applies.
"""
import warnings

import torch
import torch.nn.functional as F

from common import encode_nonfinite, save

torch.manual_seed(0)
warnings.simplefilter("ignore")  # broadcasting and 'mean' kl_div warnings
DT = torch.float64
REDUCTIONS = ("none", "mean", "sum")
cases = []


def run(name, loss, fn, inputs, attrs, diff_target, second=False):
    """fn(input, target) -> loss; records out and gradients for a random upstream gradient.
    With `second`, also the double backward: the gradients of sum(v * dinput) (ddinput,
    [ddtarget]) for a random v."""
    x = inputs["input"].clone().requires_grad_()
    t = inputs["target"].clone()
    if diff_target:
        t.requires_grad_()
    out = fn(x, t)
    gy = torch.randn_like(out) if out.dim() > 0 else torch.tensor(0.7, dtype=out.dtype)
    wrt = [x, t] if diff_target else [x]
    grads = torch.autograd.grad(out, wrt, gy, allow_unused=True, create_graph=second)
    tensors = dict(inputs)
    tensors.update({"gy": gy, "out": out, "dinput": grads[0]})
    if diff_target:
        tensors["dtarget"] = grads[1]
    if second:
        v = torch.randn_like(x)
        s = (grads[0] * v).sum()
        dd = (torch.autograd.grad(s, wrt, allow_unused=True) if s.requires_grad
              else [None] * len(wrt))
        tensors["v"] = v
        tensors["ddinput"] = dd[0] if dd[0] is not None else torch.zeros_like(x)
        if diff_target:
            tensors["ddtarget"] = dd[1] if dd[1] is not None else torch.zeros_like(t)
    cases.append({"name": name, "attrs": dict(attrs, loss=loss), "tensors": tensors})


def classes(shape, c, ignore=None, n_ignored=0, gen_low=0):
    t = torch.randint(gen_low, c, shape)
    if ignore is not None and n_ignored and t.numel():
        flat = t.view(-1)
        flat[torch.randperm(flat.numel())[:n_ignored]] = ignore
    return t


# ---- cross_entropy and nll_loss with class indices ---------------------------------------------

def index_case(loss, name, x, t, reduction, weight=None, ignore=-100, ls=0.0, second=False):
    inputs = {"input": x, "target": t}
    if weight is not None:
        inputs["weight"] = weight
    attrs = {"reduction": reduction, "ignore_index": ignore}
    if loss == "cross_entropy":
        attrs["label_smoothing"] = ls
        fn = lambda a, b: F.cross_entropy(a, b, weight=weight, ignore_index=ignore,
                                          reduction=reduction, label_smoothing=ls)
    else:
        fn = lambda a, b: F.nll_loss(a, b, weight=weight, ignore_index=ignore,
                                     reduction=reduction)
    run(name, loss, fn, inputs, attrs, False, second)


w4 = torch.rand(4, dtype=DT) + 0.2
for loss in ("cross_entropy", "nll_loss"):
    smoothing = (0.0, 0.2) if loss == "cross_entropy" else (0.0,)
    for reduction in REDUCTIONS:
        for weighted in (False, True):
            for ls in smoothing:
                tag = f"{loss}_2d_{reduction}{'_w' if weighted else ''}{f'_ls{ls}' if ls else ''}"
                x = torch.randn(6, 4, dtype=DT) * 2
                t = classes((6,), 4, -100, 2)
                index_case(loss, tag, x, t, reduction, w4 if weighted else None, -100, ls,
                           second=reduction == "mean")
        # K-dimensional: [N, C, d1, d2], weighted, with smoothing for cross_entropy
        x = torch.randn(2, 4, 3, 2, dtype=DT)
        t = classes((2, 3, 2), 4, -100, 3)
        index_case(loss, f"{loss}_4d_{reduction}", x, t, reduction, w4, -100,
                   smoothing[-1], second=True)
        x = torch.randn(3, 4, 5, dtype=DT)
        t = classes((3, 5), 4)
        index_case(loss, f"{loss}_3d_{reduction}", x, t, reduction, None, -100, 0.0)
        # unbatched [C] with a 0-dim target
        index_case(loss, f"{loss}_1d_{reduction}", torch.randn(5, dtype=DT),
                   torch.tensor(3), reduction, None, -100, smoothing[-1])
        # ignore_index inside [0, C)
        index_case(loss, f"{loss}_ignore1_{reduction}", torch.randn(5, 3, dtype=DT),
                   torch.tensor([1, 0, 2, 1, 2]), reduction, torch.rand(3, dtype=DT) + 0.5, 1,
                   smoothing[-1])
        # every target ignored: 'mean' is 0 / 0 = NaN, gradients zero
        for ls in smoothing:
            index_case(loss, f"{loss}_all_ignored_{reduction}{f'_ls{ls}' if ls else ''}",
                       torch.randn(3, 4, dtype=DT), torch.full((3,), -100), reduction, None,
                       -100, ls)
        # empty batch: 'mean' of nothing is NaN
        index_case(loss, f"{loss}_empty_{reduction}", torch.randn(0, 4, dtype=DT),
                   torch.zeros(0, dtype=torch.long), reduction, None, -100, smoothing[-1])
        index_case(loss, f"{loss}_empty_4d_{reduction}", torch.randn(0, 4, 2, 3, dtype=DT),
                   torch.zeros(0, 2, 3, dtype=torch.long), reduction, w4, -100, 0.0)
    # the weights of the targets sum to 0: 'mean' is NaN
    for ls in smoothing:
        index_case(loss, f"{loss}_zero_total_weight{f'_ls{ls}' if ls else ''}",
                   torch.randn(3, 4, dtype=DT), torch.tensor([0, 0, 2]), "mean",
                   torch.tensor([0.0, 1.0, 0.0, 2.0], dtype=DT), -100, ls)

# float32 and large logits (the log-sum-exp must be stable)
x = (torch.randn(4, 10) * 30).float()
index_case("cross_entropy", "cross_entropy_f32_large_logits", x, classes((4,), 10),
           "mean", None, -100, 0.1)
index_case("cross_entropy", "cross_entropy_ls1", torch.randn(4, 3, dtype=DT),
           classes((4,), 3), "mean", None, -100, 1.0)

# ---- cross_entropy with class probabilities -------------------------------------------------

def prob_case(name, x, p, reduction, weight=None, ls=0.0, second=False):
    inputs = {"input": x, "target": p}
    if weight is not None:
        inputs["weight"] = weight
    fn = lambda a, b: F.cross_entropy(a, b, weight=weight, reduction=reduction,
                                      label_smoothing=ls)
    run(name, "cross_entropy", fn, inputs,
        {"reduction": reduction, "ignore_index": -100, "label_smoothing": ls}, True, second)


for reduction in REDUCTIONS:
    for weighted in (False, True):
        for ls in (0.0, 0.3):
            x = torch.randn(5, 4, dtype=DT)
            p = torch.softmax(torch.randn(5, 4, dtype=DT), 1)
            prob_case(f"cross_entropy_prob_{reduction}{'_w' if weighted else ''}"
                      f"{f'_ls{ls}' if ls else ''}", x, p, reduction,
                      w4 if weighted else None, ls, second=reduction == "mean")
    prob_case(f"cross_entropy_prob_4d_{reduction}", torch.randn(2, 4, 3, 2, dtype=DT),
              torch.softmax(torch.randn(2, 4, 3, 2, dtype=DT), 1), reduction, w4, 0.1)
    prob_case(f"cross_entropy_prob_1d_{reduction}", torch.randn(4, dtype=DT),
              torch.softmax(torch.randn(4, dtype=DT), 0), reduction, w4, 0.0)
    prob_case(f"cross_entropy_prob_empty_{reduction}", torch.randn(0, 4, dtype=DT),
              torch.zeros(0, 4, dtype=DT), reduction, None, 0.0)

# ---- elementwise losses -----------------------------------------------------------------------

def pointwise_case(name, loss, fn, x, t, attrs, extra=None):
    inputs = {"input": x, "target": t}
    inputs.update(extra or {})
    # double backward for the 'mean' cases and every kl_div case
    second = x.numel() > 0 and (attrs["reduction"] == "mean" or loss == "kl_div")
    run(name, loss, fn, inputs, attrs, True, second)


for reduction in REDUCTIONS:
    x, t = torch.randn(3, 4, dtype=DT), torch.randn(3, 4, dtype=DT)
    t[0, 0] = x[0, 0]  # a zero difference: l1's subgradient there is 0
    pointwise_case(f"mse_loss_{reduction}", "mse_loss",
                   lambda a, b: F.mse_loss(a, b, reduction=reduction), x, t,
                   {"reduction": reduction})
    pointwise_case(f"l1_loss_{reduction}", "l1_loss",
                   lambda a, b: F.l1_loss(a, b, reduction=reduction), x, t,
                   {"reduction": reduction})
    for beta in (1.0, 0.5, 0.0):
        pointwise_case(f"smooth_l1_loss_{reduction}_beta{beta}", "smooth_l1_loss",
                       lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
                       x * 2, t, {"reduction": reduction, "beta": beta})
    for delta in (1.0, 0.3):
        pointwise_case(f"huber_loss_{reduction}_delta{delta}", "huber_loss",
                       lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=delta),
                       x * 2, t, {"reduction": reduction, "delta": delta})
    # broadcasting: target [4] against input [3, 4], and input [3, 1] against target [3, 4]
    pointwise_case(f"mse_loss_broadcast_target_{reduction}", "mse_loss",
                   lambda a, b: F.mse_loss(a, b, reduction=reduction),
                   torch.randn(3, 4, dtype=DT), torch.randn(4, dtype=DT),
                   {"reduction": reduction})
    pointwise_case(f"smooth_l1_loss_broadcast_input_{reduction}", "smooth_l1_loss",
                   lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.7),
                   torch.randn(3, 1, dtype=DT), torch.randn(3, 4, dtype=DT),
                   {"reduction": reduction, "beta": 0.7})
    for loss, f in (("mse_loss", F.mse_loss), ("l1_loss", F.l1_loss),
                    ("huber_loss", F.huber_loss)):
        pointwise_case(f"{loss}_empty_{reduction}", loss,
                       lambda a, b: f(a, b, reduction=reduction),
                       torch.randn(0, 3, dtype=DT), torch.randn(0, 3, dtype=DT),
                       {"reduction": reduction, "delta": 1.0})

    # binary_cross_entropy: no weight, a per-class weight [4], a full weight
    p = torch.rand(3, 4, dtype=DT) * 0.9 + 0.05
    y = torch.rand(3, 4, dtype=DT)
    for wname, w in (("", None), ("_wclass", torch.rand(4, dtype=DT) + 0.5),
                     ("_wfull", torch.rand(3, 4, dtype=DT) + 0.5)):
        extra = {"weight": w} if w is not None else {}
        pointwise_case(f"binary_cross_entropy_{reduction}{wname}", "binary_cross_entropy",
                       lambda a, b: F.binary_cross_entropy(a, b, weight=w,
                                                           reduction=reduction),
                       p, y, {"reduction": reduction}, extra)
    # binary_cross_entropy_with_logits: weight and pos_weight combinations
    z = torch.randn(3, 4, dtype=DT) * 3
    for wname, w, pw in (("", None, None), ("_w", torch.rand(4, dtype=DT) + 0.5, None),
                         ("_pw", None, torch.rand(4, dtype=DT) * 3),
                         ("_w_pw", torch.rand(3, 1, dtype=DT) + 0.5,
                          torch.rand(4, dtype=DT) * 3)):
        extra = {}
        if w is not None:
            extra["weight"] = w
        if pw is not None:
            extra["pos_weight"] = pw
        pointwise_case(f"bce_with_logits_{reduction}{wname}",
                       "binary_cross_entropy_with_logits",
                       lambda a, b: F.binary_cross_entropy_with_logits(
                           a, b, weight=w, pos_weight=pw, reduction=reduction),
                       z, y, {"reduction": reduction}, extra)

# saturated inputs: bce's logs clamp at -100; logits far out stay finite
pointwise_case("binary_cross_entropy_saturated", "binary_cross_entropy",
               lambda a, b: F.binary_cross_entropy(a, b, reduction="none"),
               torch.tensor([0.0, 1.0, 0.0, 1.0, 1e-30, 0.5], dtype=DT),
               torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 0.25], dtype=DT),
               {"reduction": "none"})
pointwise_case("bce_with_logits_large", "binary_cross_entropy_with_logits",
               lambda a, b: F.binary_cross_entropy_with_logits(
                   a, b, pos_weight=torch.tensor([2.0], dtype=DT), reduction="none"),
               torch.tensor([-1000.0, 1000.0, 50.0, -50.0, 0.0], dtype=DT),
               torch.tensor([0.3, 0.6, 1.0, 0.0, 0.5], dtype=DT),
               {"reduction": "none"}, {"pos_weight": torch.tensor([2.0], dtype=DT)})
pointwise_case("binary_cross_entropy_empty_mean", "binary_cross_entropy",
               lambda a, b: F.binary_cross_entropy(a, b), torch.rand(0, 2, dtype=DT),
               torch.rand(0, 2, dtype=DT), {"reduction": "mean"})

# kl_div: log_target both ways, every reduction including batchmean
for log_target in (False, True):
    for reduction in REDUCTIONS + ("batchmean",):
        x = torch.log_softmax(torch.randn(3, 5, dtype=DT), 1)
        t = torch.softmax(torch.randn(3, 5, dtype=DT), 1)
        if log_target:
            t = t.log()
        pointwise_case(f"kl_div_{reduction}{'_log_target' if log_target else ''}", "kl_div",
                       lambda a, b: F.kl_div(a, b, reduction=reduction,
                                             log_target=log_target),
                       x, t, {"reduction": reduction, "log_target": log_target})
# a zero target: the loss term is 0, its target gradient NaN (torch's xlogy rule)
pointwise_case("kl_div_zero_target", "kl_div",
               lambda a, b: F.kl_div(a, b, reduction="sum"),
               torch.tensor([-1.0, -2.0, -0.5], dtype=DT),
               torch.tensor([0.0, 0.5, 0.5], dtype=DT), {"reduction": "sum", "log_target": False})
pointwise_case("kl_div_batchmean_empty", "kl_div",
               lambda a, b: F.kl_div(a, b, reduction="batchmean"),
               torch.randn(0, 3, dtype=DT), torch.rand(0, 3, dtype=DT),
               {"reduction": "batchmean", "log_target": False})
pointwise_case("kl_div_batchmean_broadcast", "kl_div",
               lambda a, b: F.kl_div(a, b, reduction="batchmean"),
               torch.randn(3, dtype=DT), torch.rand(2, 3, dtype=DT),
               {"reduction": "batchmean", "log_target": False})



for c in cases:
    c["tensors"] = encode_nonfinite(c["tensors"])
save("losses", cases)
