"""Golden trajectories of torch.amp.GradScaler on CPU driving SGD with momentum, with gradients
that turn non-finite at some steps (skipped steps, backoff, growth after growth_interval clean
steps) and the explicit unscale_ + clip_grad_norm_ path on some steps.

Needs PyTorch >= 2.3 (the CPU GradScaler, torch.amp.GradScaler("cpu")). Debian's python3-torch
1.13 has none, so run it with the venv's python (PyTorch 2.15 from PyPI):
    /work/venv/bin/python tools/golden/grad_scaler.py
Writes tests/golden/grad_scaler.json (format: tools/golden/common.py).

Setup per case: a float32 parameter p [6] (P0), torch.optim.SGD(lr=0.1, momentum=0.9). For step
t in 0..11 the true gradient is g_t[i] = sin(7 t + i) (a double rounded to float32) except
  step 2: g[1] = +inf,  step 3: g[4] = NaN,  step 7: g[2] = -inf.
Backward of the scaled loss is emulated as p.grad = scaler.scale(g_t), i.e. g_t * scale in
float32 with scale = scaler.get_scale() before the step. On even steps scaler.unscale_(opt) is called explicitly and
then torch.nn.utils.clip_grad_norm_(p, max_norm=1.0); on odd steps scaler.step unscales itself.
Then scaler.step(opt), scaler.update().

Each case: attrs {init_scale, growth_factor, backoff_factor, growth_interval, lr, momentum,
steps, unscale_clip_steps, max_norm, nonfinite: [[step, index, "inf"|"nan"|"-inf"], ...],
state_dict (scaler.state_dict() at the end)}; tensors
  init [6] float32          p before step 0
  grads [12, 6] float32     the true (unscaled) g_t
  scale_before [12] float64 scaler.get_scale() before the step (the factor applied to g_t)
  skipped [12] bool         the optimizer step was skipped (found inf/NaN)
  scale_after [12] float64  scaler.get_scale() after update()
  growth_tracker [12] int64 scaler._growth_tracker after update()
  grad_after [12, 6] float32 p.grad after scaler.step (unscaled, and clipped on even steps)
  traj [12, 6] float32      p after each step
JSON has no NaN/Infinity: a tensor with non-finite values is stored with them as 0 plus a
"<name>.nonfinite" tensor of codes (0 finite, 1 NaN, 2 +inf, 3 -inf), as in losses.py.
"""
import math

import torch

from common import encode_nonfinite, save

STEPS = 12
P0 = [0.5, -1.0, 1.5, 2.0, -0.25, 0.75]
LR, MOMENTUM = 0.1, 0.9
MAX_NORM = 1.0
NONFINITE = [(2, 1, "inf"), (3, 4, "nan"), (7, 2, "-inf")]
UNSCALE_CLIP_STEPS = [t for t in range(STEPS) if t % 2 == 0]


def true_grad(t):
    g = torch.tensor([math.sin(7.0 * t + i) for i in range(len(P0))], dtype=torch.float32)
    for step, i, v in NONFINITE:
        if step == t:
            g[i] = float(v)
    return g


def run(init_scale, growth_factor, backoff_factor, growth_interval):
    p = torch.tensor(P0, dtype=torch.float32, requires_grad=True)
    opt = torch.optim.SGD([p], lr=LR, momentum=MOMENTUM)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth_factor,
                                  backoff_factor=backoff_factor, growth_interval=growth_interval)
    init = p.detach().clone()
    grads, scale_before, skipped, scale_after, tracker, grad_after, traj = [], [], [], [], [], [], []
    for t in range(STEPS):
        g = true_grad(t)
        s = scaler.get_scale()
        with torch.no_grad():
            # emulated backward of loss * scale: scaler.scale(g) is g * scale in float32 (and
            # initializes the scaler's scale tensor on first use, as scale(loss) would)
            scaled = scaler.scale(g)
            assert torch.allclose(scaled, g * s, rtol=0, atol=0, equal_nan=True), t
            p.grad = scaled
        if t in UNSCALE_CLIP_STEPS:
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(p, max_norm=MAX_NORM)
        before = p.detach().clone()
        scaler.step(opt)
        found = sum(v.item() for v in
                    scaler._per_optimizer_states[id(opt)]["found_inf_per_device"].values())
        skip = found > 0
        assert skip == torch.equal(before, p.detach()), t  # skipped <=> p untouched
        grad_after.append(p.grad.detach().clone())
        scaler.update()
        grads.append(g)
        scale_before.append(s)
        skipped.append(skip)
        scale_after.append(scaler.get_scale())
        tracker.append(int(scaler._growth_tracker.item()))
        traj.append(p.detach().clone())
    sd = scaler.state_dict()
    state = {k: (v.item() if torch.is_tensor(v) else v) for k, v in sd.items()}
    attrs = {"init_scale": init_scale, "growth_factor": growth_factor,
             "backoff_factor": backoff_factor, "growth_interval": growth_interval,
             "lr": LR, "momentum": MOMENTUM, "steps": STEPS, "max_norm": MAX_NORM,
             "unscale_clip_steps": UNSCALE_CLIP_STEPS,
             "nonfinite": [list(x) for x in NONFINITE], "state_dict": state}
    tensors = {"init": init, "grads": torch.stack(grads),
               "scale_before": torch.tensor(scale_before, dtype=torch.float64),
               "skipped": torch.tensor(skipped, dtype=torch.bool),
               "scale_after": torch.tensor(scale_after, dtype=torch.float64),
               "growth_tracker": torch.tensor(tracker, dtype=torch.int64),
               "grad_after": torch.stack(grad_after), "traj": torch.stack(traj)}
    return attrs, tensors


CONFIGS = [
    # small growth_interval so growth happens within the 12 steps
    ("growth3", dict(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=3)),
    # the defaults (growth_interval 2000: only backoff and the tracker count)
    ("defaults", dict(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                      growth_interval=2000)),
]


if __name__ == "__main__":
    cases = []
    for name, cfg in CONFIGS:
        attrs, tensors = run(**cfg)
        cases.append({"name": name, "attrs": attrs, "tensors": encode_nonfinite(tensors)})
    save("grad_scaler", cases)
