"""Golden values for ctc_loss: torch.nn.functional.ctc_loss in float64 on log_softmax(logits),
its value and the gradient with respect to the logits for a random upstream gradient.

Run with PyTorch from PyPI (any version since 1.13 gives the same values):
    /work/venv/bin/python tools/golden/ctc.py
Writes tests/golden/ctc.json, read by tests/ops/test_ctc_golden.cpp.

Cases: padded and concatenated targets (int64 and int32), repeated labels (which need a blank
between them), empty targets, a blank other than 0, inputs shorter than their targets need
(infinite loss, with and without zero_infinity), each reduction, an unbatched input, extreme
logits (hundreds of nats apart, the kernel's log-space path) and the bench's shape.

Each case: attrs {blank, reduction, zero_infinity, layout ("padded" | "concat" | "unbatched")};
tensors logits [T, N, C] (or [T, C]), targets, input_lengths, target_lengths, gy (upstream
gradient, of the loss's shape), out, dlogits.
"""
import torch
import torch.nn.functional as F

from common import encode_nonfinite, save

torch.manual_seed(0)
DT = torch.float64
cases = []


def run(name, logits, targets, input_lengths, target_lengths, blank=0, reduction="mean",
        zero_infinity=False, layout="padded"):
    x = logits.clone().requires_grad_()
    lp = F.log_softmax(x, dim=-1)
    out = F.ctc_loss(lp, targets, input_lengths, target_lengths, blank=blank,
                     reduction=reduction, zero_infinity=zero_infinity)
    gy = torch.randn_like(out) if out.dim() > 0 else torch.tensor(0.7, dtype=DT)
    (dx,) = torch.autograd.grad(out, [x], gy)
    tensors = {"logits": logits, "targets": targets, "input_lengths": input_lengths,
               "target_lengths": target_lengths, "gy": gy, "out": out.detach(), "dlogits": dx}
    attrs = {"blank": blank, "reduction": reduction, "zero_infinity": zero_infinity,
             "layout": layout}
    cases.append({"name": name, "attrs": attrs, "tensors": encode_nonfinite(tensors)})


def labels(n, s, c, blank=0):
    """Random labels in [0, c) other than the blank, shape [n, s]."""
    t = torch.randint(0, c - 1, (n, s))
    return t + (t >= blank).long()


def lengths(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


T, N, C, S = 12, 4, 6, 5
for reduction in ("none", "mean", "sum"):
    run(f"padded_{reduction}", torch.randn(T, N, C, dtype=DT), labels(N, S, C),
        lengths([12, 10, 12, 7]), lengths([5, 3, 4, 2]), reduction=reduction)

tg = labels(N, S, C)
tl = lengths([5, 1, 3, 2])
concat = torch.cat([tg[i, :tl[i]] for i in range(N)])
run("concat_mean", torch.randn(T, N, C, dtype=DT), concat, lengths([12, 12, 9, 5]), tl)
run("concat_int32_none", torch.randn(T, N, C, dtype=DT), concat.int(),
    lengths([12, 12, 9, 5], torch.int32), tl.int(), reduction="none")

# Repeated labels: "1 1" needs a blank between the two (3 frames at least), "1 1 1" five.
run("repeats_none", torch.randn(6, 3, 4, dtype=DT),
    torch.tensor([[1, 1, 2], [2, 2, 2], [3, 1, 3]]), lengths([6, 6, 5]), lengths([3, 3, 3]),
    reduction="none")
# Empty targets: the probability of all blanks.
run("empty_targets_none", torch.randn(5, 3, 4, dtype=DT), torch.zeros(3, 2, dtype=torch.int64),
    lengths([5, 3, 1]), lengths([0, 0, 0]), reduction="none")
run("empty_targets_mean", torch.randn(5, 3, 4, dtype=DT), labels(3, 2, 4),
    lengths([5, 4, 2]), lengths([0, 2, 1]))
# A blank other than 0.
run("blank_last_sum", torch.randn(T, N, C, dtype=DT), labels(N, S, C, blank=C - 1),
    lengths([12, 11, 10, 9]), lengths([5, 4, 3, 2]), blank=C - 1, reduction="sum")
# Impossible alignments: 3 frames cannot emit "1 2 3 4", nor 2 frames "2 2".
impossible = (torch.randn(4, 3, 5, dtype=DT), torch.tensor([[1, 2, 3, 4], [2, 2, 0, 0],
                                                            [1, 3, 0, 0]]),
              lengths([3, 2, 4]), lengths([4, 2, 2]))
for zi in (False, True):
    for reduction in ("none", "mean", "sum"):
        run(f"impossible_zero_inf_{zi}_{reduction}".lower(), *impossible, reduction=reduction,
            zero_infinity=zi)
# Zero-length inputs: loss 0 for an empty target, inf otherwise.
run("zero_length_input_none", torch.randn(3, 2, 4, dtype=DT), labels(2, 1, 4), lengths([0, 0]),
    lengths([0, 1]), reduction="none", zero_infinity=False)
# Unbatched: logits [T, C], targets [S], 0-dim lengths.
run("unbatched_mean", torch.randn(9, 5, dtype=DT), torch.tensor([1, 4, 4, 2]),
    torch.tensor(9), torch.tensor(4), layout="unbatched")
# Extreme logits: classes hundreds of nats apart at every frame (the log-space path).
run("extreme_none", torch.randn(10, 3, 5, dtype=DT) * 300, labels(3, 3, 5),
    lengths([10, 10, 8]), lengths([3, 2, 3]), reduction="none")
# Long sequences with the bench's classes (T=60, C=30, targets of 10 to 25 labels).
run("long_mean", torch.randn(60, 6, 30, dtype=DT), labels(6, 25, 30),
    torch.tensor([60, 60, 55, 50, 60, 45]), torch.randint(10, 26, (6,)))

save("ctc", cases)
