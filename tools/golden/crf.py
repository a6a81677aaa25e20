"""Golden values for nn::CRF: pytorch-crf 0.7.2's torchcrf.CRF in float64, with its parameters
set from fixed random values (stored in each case, so the test needs no random stream).

Run with PyTorch and pytorch-crf from PyPI:
    /work/venv/bin/python tools/golden/crf.py
Writes tests/golden/crf.json, read by tests/nn/test_crf.cpp.

Each case: attrs {num_tags, batch_first, reduction ("none" | "sum" | "mean" | "token_mean"),
has_mask (false: the test passes no mask), constrained}; tensors start_transitions [K],
end_transitions [K], transitions [K, K], emissions ([T, B, K], or [B, T, K] with batch_first),
tags and mask (the first two dims of emissions; mask bool), gy (the upstream gradient: a 0-dim
0.7, or [B] for "none"), llh (CRF.forward), demissions, dstart_transitions, dend_transitions,
dtransitions (gradients of llh for gy), paths [B, T] (CRF.decode, padded with -1).

Cases: one time step, full and variable-length masks under each reduction, batch_first, a
mask with a gap (pytorch-crf's own rule: the end transition reads the tag at index
sum(mask) - 1, and the Viterbi backtrace walks the first sum(mask) - 1 steps), exact ties in
Viterbi (integer scores: torch.max keeps the first maximum), large emissions (log-space range),
a bigger batch, and allowed-transition constraints. pytorch-crf has no constraints: their
reference sets each disallowed start, end and transition score to -1e4 in torch (athanor uses
-inf; exp(-1e4) is 0 in float64, so values, gradients and paths agree). Those cases also store
allowed [K, K], start_allowed [K], end_allowed [K] (bool) and the unmasked parameters; their
tags only use allowed sequences.
"""
import torch
from torchcrf import CRF

from common import save

torch.manual_seed(0)
DT = torch.float64
NEG = -1e4
cases = []


def lengths_mask(lengths, T):
    """bool [T, B]: position t of sample b is on when t < lengths[b]."""
    return torch.arange(T).unsqueeze(1) < torch.tensor(lengths).unsqueeze(0)


def run(name, T, B, K, *, reduction="sum", mask=None, batch_first=False, emissions=None,
        params=None, tags=None, allowed=None, scale=1.0):
    if params is None:
        params = (torch.randn(K, dtype=DT) * 0.5, torch.randn(K, dtype=DT) * 0.5,
                  torch.randn(K, K, dtype=DT) * 0.5)
    start, end, trans = params
    crf = CRF(K, batch_first=batch_first).double()
    eff = (start, end, trans)
    if allowed is not None:  # the reference: disallowed scores at -1e4
        a, sa, ea = allowed
        eff = (start.masked_fill(~sa, NEG), end.masked_fill(~ea, NEG), trans.masked_fill(~a, NEG))
    with torch.no_grad():
        crf.start_transitions.copy_(eff[0])
        crf.end_transitions.copy_(eff[1])
        crf.transitions.copy_(eff[2])
    if emissions is None:
        emissions = torch.randn(T, B, K, dtype=DT) * scale
    if tags is None:
        tags = torch.randint(0, K, (T, B))
    tmask = mask if mask is not None else torch.ones(T, B, dtype=torch.bool)
    e, tg, m = emissions, tags, tmask
    if batch_first:  # every [T, B] input is given as [B, T]
        e = emissions.transpose(0, 1).contiguous()
        tg, m = tags.t().contiguous(), tmask.t().contiguous()
    x = e.clone().requires_grad_()
    llh = crf(x, tg, m if mask is not None else None, reduction=reduction)
    gy = torch.tensor(0.7, dtype=DT) if llh.dim() == 0 else torch.randn(B, dtype=DT)
    wrt = [x, crf.start_transitions, crf.end_transitions, crf.transitions]
    # One time step uses no transition: its gradient is None in torch, zeros here.
    dx, ds, de, dt = [torch.zeros_like(w) if g is None else g for w, g in
                      zip(wrt, torch.autograd.grad(llh, wrt, gy, allow_unused=True))]
    paths = crf.decode(e, m if mask is not None else None)
    padded = torch.full((B, T), -1, dtype=torch.int64)
    for b, p in enumerate(paths):
        padded[b, :len(p)] = torch.tensor(p)
    tensors = {"start_transitions": start, "end_transitions": end, "transitions": trans,
               "emissions": e, "tags": tg, "mask": m, "gy": gy, "llh": llh.detach(),
               "demissions": dx, "dstart_transitions": ds, "dend_transitions": de,
               "dtransitions": dt, "paths": padded}
    if allowed is not None:
        tensors.update({"allowed": allowed[0], "start_allowed": allowed[1],
                        "end_allowed": allowed[2]})
    attrs = {"num_tags": K, "batch_first": batch_first, "reduction": reduction,
             "has_mask": mask is not None, "constrained": allowed is not None}
    cases.append({"name": name, "attrs": attrs, "tensors": tensors})
    return crf, e, m, paths


run("one_step_sum", 1, 3, 4)
for r in ("none", "sum", "mean", "token_mean"):
    run(f"full_{r}", 5, 3, 4, reduction=r)
    run(f"lengths_{r}", 7, 4, 5, reduction=r, mask=lengths_mask([7, 3, 5, 1], 7))
for r in ("none", "token_mean"):
    run(f"batch_first_{r}", 6, 3, 3, reduction=r, batch_first=True,
        mask=lengths_mask([6, 2, 4], 6))
run("batch_first_nomask_mean", 4, 2, 3, reduction="mean", batch_first=True)
# A gap: sample 1 is on at steps 0, 1, 3 (pytorch-crf does not require a prefix mask).
gap = lengths_mask([5, 4, 5], 5)
gap[2, 1] = False
run("mask_gap_none", 5, 3, 4, reduction="none", mask=gap)
# Exact ties: integer emissions and scores; torch.max keeps the first maximum.
K = 4
run("ties_sum", 6, 4, K, mask=lengths_mask([6, 6, 3, 4], 6),
    emissions=torch.randint(-1, 2, (6, 4, K)).to(DT),
    params=(torch.randint(-1, 2, (K,)).to(DT), torch.zeros(K, dtype=DT),
            torch.randint(-1, 1, (K, K)).to(DT)))
run("ties_zero_none", 4, 2, 3, reduction="none", emissions=torch.zeros(4, 2, 3, dtype=DT),
    params=(torch.zeros(3, dtype=DT), torch.zeros(3, dtype=DT), torch.zeros(3, 3, dtype=DT)))
run("large_emissions_none", 8, 3, 5, reduction="none", scale=200.0,
    mask=lengths_mask([8, 5, 2], 8))
run("bigger_mean", 20, 8, 10, reduction="mean",
    mask=lengths_mask([20, 17, 20, 3, 11, 20, 1, 9], 20))

# Constraints, BIO over two types: tags O, B-X, I-X, B-Y, I-Y. I-X only after B-X or I-X (and
# I-Y likewise), no sequence starts with an I tag, and none ends on B-Y (to test end_allowed).
K = 5
allowed = torch.ones(K, K, dtype=torch.bool)
for i in range(K):
    if i not in (1, 2):
        allowed[i, 2] = False
    if i not in (3, 4):
        allowed[i, 4] = False
start_allowed = torch.tensor([True, True, False, True, False])
end_allowed = torch.tensor([True, True, True, False, True])


def allowed_tags(T, B, lengths):
    """Random tag sequences [T, B] that every constraint allows within each sample's length."""
    tags = torch.zeros(T, B, dtype=torch.int64)
    for b in range(B):
        while True:
            seq = [int(torch.randint(0, K, ()))]
            for _ in range(1, lengths[b]):
                seq.append(int(torch.randint(0, K, ())))
            ok = start_allowed[seq[0]] and end_allowed[seq[-1]] and all(
                allowed[p, q] for p, q in zip(seq, seq[1:]))
            if ok:
                break
        tags[:lengths[b], b] = torch.tensor(seq)
        tags[lengths[b]:, b] = torch.randint(0, K, (T - lengths[b],))
    return tags


cons = (allowed, start_allowed, end_allowed)
for r, bf in (("none", False), ("sum", True)):
    lens = [9, 6, 9, 2, 7]
    # Emissions favour the I tags, so unconstrained Viterbi would start or jump into them.
    em = torch.randn(9, 5, K, dtype=DT) + torch.tensor([0, 0, 2.5, 0, 2.5], dtype=DT)
    _, e, m, paths = run(f"constrained_{r}", 9, 5, K, reduction=r, batch_first=bf,
                         mask=lengths_mask(lens, 9), emissions=em,
                         tags=allowed_tags(9, 5, lens), allowed=cons)
    free = CRF(K, batch_first=bf).double()
    with torch.no_grad():
        free.start_transitions.copy_(cases[-1]["tensors"]["start_transitions"])
        free.end_transitions.copy_(cases[-1]["tensors"]["end_transitions"])
        free.transitions.copy_(cases[-1]["tensors"]["transitions"])
    assert free.decode(e, m) != paths, "the constraints must change some path"

save("crf", cases)
