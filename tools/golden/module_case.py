"""Shared helper for layer goldens: one case = a PyTorch module's state, inputs, outputs and
gradients, so a test can load the same weights into the athanor layer and compare everything.

Tensor keys in a case (read by tests/support/module_golden.h):
  state:<key>        the module's state_dict before the forward pass (parameters and buffers)
  state_after:<key>  buffers after the forward pass (BatchNorm's running stats)
  in:<i>             inputs;  grad_in:<i> their gradients (floating inputs only)
  out:<i>            outputs (a tuple output is flattened: LSTM -> output, h_n, c_n)
  gout:<i>           the upstream gradient used for output i (loss = sum_i <out_i, gout_i>)
  grad:<name>        each parameter's gradient
"""
import torch


def flatten(x):
    if isinstance(x, torch.Tensor):
        return [x]
    out = []
    for v in x:
        if v is not None:
            out.extend(flatten(v))
    return out


def module_case(name, module, inputs, attrs=None, run=None, seed=1234):
    """run(module, *inputs) -> tensor or nested tuple; default module(*inputs)."""
    state = {k: v.detach().clone() for k, v in module.state_dict().items()}
    ins = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    outs = flatten(run(module, *ins) if run else module(*ins))
    g = torch.Generator().manual_seed(seed)
    gouts = [torch.randn(o.shape, generator=g, dtype=o.dtype) for o in outs]
    params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    diff_ins = [x for x in ins if x.requires_grad]
    grads = torch.autograd.grad(outs, diff_ins + [p for _, p in params], gouts,
                                allow_unused=True)
    tensors = {}
    for k, v in state.items():
        tensors["state:" + k] = v
    for k, v in module.state_dict().items():
        if k not in dict(module.named_parameters()):
            tensors["state_after:" + k] = v.detach().clone()
    for i, x in enumerate(ins):
        tensors[f"in:{i}"] = x
    for i, (o, go) in enumerate(zip(outs, gouts)):
        tensors[f"out:{i}"] = o
        tensors[f"gout:{i}"] = go
    gi = 0
    for i, x in enumerate(ins):
        if x.requires_grad:
            if grads[gi] is not None:
                tensors[f"grad_in:{i}"] = grads[gi]
            gi += 1
    for (n, _), gr in zip(params, grads[len(diff_ins):]):
        if gr is not None:
            tensors["grad:" + n] = gr
    return {"name": name, "attrs": attrs or {}, "tensors": tensors}
