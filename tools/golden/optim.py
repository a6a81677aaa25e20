"""Golden trajectories for the optimizers and learning-rate sequences for the schedulers, from
torch.optim (single-tensor implementations, foreach off).

Run with Debian's torch: /usr/bin/python3 tools/golden/optim.py
Writes tests/golden/optim.json (optimizers) and tests/golden/optim_sched.json (schedulers), read
by tests/optim/test_optim_golden.cpp and tests/optim/test_sched_golden.cpp.

Optimizer cases: parameters p0 [2, 3] ([4, 9] in "_big" cases) and p1 [4] (flat index k over
both), plus p2 [3]
which never receives a gradient. The gradient at step t is g = A * p + s_t, computed in the
parameter dtype, with A[k] = 0.5 + 0.25 * (k % 7) and s_t[k] = sin(1.3 t + 0.7 k) (a double
rounded to the dtype), so a test can rebuild it exactly from its own parameters. "traj" holds
the concatenated parameters after each of the 20 steps.
"""
import math

import torch

from common import save

STEPS = 20
P0 = [[0.5, -1.0, 1.5], [2.0, -0.25, 0.75]]
P1 = [1.0, -2.0, 0.3, -0.7]
P2 = [0.1, 0.2, 0.3]


def grad_parts(params, t, dtype):
    out, k = [], 0
    for p in params:
        n = p.numel()
        a = torch.tensor([0.5 + 0.25 * ((k + i) % 7) for i in range(n)], dtype=dtype)
        s = torch.tensor([math.sin(1.3 * t + 0.7 * (k + i)) for i in range(n)], dtype=dtype)
        out.append((a.reshape(p.shape), s.reshape(p.shape)))
        k += n
    return out


# "big" cases use a [4, 9] p0: 36 elements reach PyTorch's vectorized kernel path (16 floats at a
# time) as well as its scalar tail, where the small cases only take the tail.
P0_BIG = [[round((i % 9 - 4) * 0.37 + (i // 9) * 0.11, 6) for i in range(9 * r, 9 * r + 9)]
          for r in range(4)]


def run_optimizer(ctor, defaults, groups, dtype, big=False):
    p0 = torch.tensor(P0_BIG if big else P0, dtype=dtype, requires_grad=True)
    p1 = torch.tensor(P1, dtype=dtype, requires_grad=True)
    p2 = torch.tensor(P2, dtype=dtype, requires_grad=True)
    params = [p0, p1, p2]
    if groups is None:
        opt = ctor(params, **defaults)
    else:
        spec = []
        for g in groups:
            d = {k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"}
            d["params"] = [params[i] for i in g["params"]]
            spec.append(d)
        opt = ctor(spec, **defaults)
    init = torch.cat([p0.detach().reshape(-1), p1.detach().reshape(-1)]).clone()
    traj = []
    for t in range(STEPS):
        with torch.no_grad():
            for p, (a, s) in zip([p0, p1], grad_parts([p0, p1], t, dtype)):
                p.grad = a * p + s
        opt.step()
        traj.append(torch.cat([p0.detach().reshape(-1), p1.detach().reshape(-1)]).clone())
    return init, torch.stack(traj), p2.detach().clone()


OPTIMIZERS = [
    ("sgd_plain", "SGD", {"lr": 0.1}, None),
    ("sgd_momentum_nesterov_wd", "SGD",
     {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}, None),
    ("sgd_dampening", "SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}, None),
    ("sgd_maximize", "SGD", {"lr": 0.02, "momentum": 0.5, "weight_decay": 0.1, "maximize": True},
     None),
    # Group 1 overrides lr and momentum; weight_decay falls back to the defaults.
    ("sgd_groups", "SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01},
     [{"params": [0, 2]}, {"params": [1], "lr": 0.01, "momentum": 0.0}]),
    ("adam_default", "Adam", {"lr": 0.05}, None),
    ("adam_amsgrad_wd", "Adam",
     {"lr": 0.05, "betas": [0.8, 0.95], "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}, None),
    ("adam_maximize", "Adam", {"lr": 0.01, "maximize": True}, None),
    ("adam_groups", "Adam", {"lr": 0.05, "weight_decay": 0.05},
     [{"params": [0]}, {"params": [1, 2], "betas": [0.5, 0.9], "amsgrad": True}]),
    ("adamw_default", "AdamW", {"lr": 0.05}, None),
    ("adamw_amsgrad", "AdamW", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True,
                                "betas": [0.85, 0.99]}, None),
    ("rmsprop_default", "RMSprop", {"lr": 0.01}, None),
    ("rmsprop_centered_momentum", "RMSprop",
     {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.01, "momentum": 0.8,
      "centered": True}, None),
    ("rmsprop_maximize", "RMSprop", {"lr": 0.005, "momentum": 0.5, "maximize": True}, None),
    ("adagrad_lr_decay", "Adagrad",
     {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1, "weight_decay": 0.01},
     None),
    ("adagrad_maximize", "Adagrad", {"lr": 0.05, "eps": 1e-6, "maximize": True}, None),
    ("adamax_default", "Adamax", {"lr": 0.02, "betas": [0.85, 0.99], "weight_decay": 0.01},
     None),
    ("adamax_maximize", "Adamax", {"lr": 0.01, "maximize": True}, None),
    ("nadam_default", "NAdam", {"lr": 0.02}, None),
    ("nadam_wd", "NAdam",
     {"lr": 0.02, "betas": [0.85, 0.99], "weight_decay": 0.01, "momentum_decay": 0.01}, None),
]


BIG = ["sgd_momentum_nesterov_wd", "adam_amsgrad_wd", "rmsprop_centered_momentum",
       "adagrad_lr_decay", "nadam_wd"]


def optimizer_cases():
    cases = []
    for name, kind, opts, groups in OPTIMIZERS:
        ctor = getattr(torch.optim, kind)
        kwargs = {k: (tuple(v) if k == "betas" else v) for k, v in opts.items()}
        variants = [(torch.float64, "float64", False), (torch.float32, "float32", False)]
        if name in BIG:
            variants.append((torch.float32, "float32", True))
        for dtype, dname, big in variants:
            init, traj, p2 = run_optimizer(ctor, kwargs, groups, dtype, big)
            attrs = {"optimizer": kind, "options": opts, "dtype": dname, "steps": STEPS,
                     "p0_shape": [4, 9] if big else [2, 3]}
            if groups is not None:
                attrs["groups"] = groups
            cases.append({"name": f"{name}_{dname}{'_big' if big else ''}", "attrs": attrs,
                          "tensors": {"init": init, "traj": traj, "p2": p2}})
    return cases


# ---- schedulers -------------------------------------------------------------------------------

SCHED_STEPS = 25
S = torch.optim.lr_scheduler


def make_opt(kind="SGD", **kw):
    ps = [torch.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)]
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
    if kind == "SGD":
        return torch.optim.SGD(groups, lr=0.1, momentum=kw.get("momentum", 0.0))
    if kind == "Adam":
        return torch.optim.Adam(groups, lr=0.1)
    raise ValueError(kind)


def momentum_of(opt):
    out = []
    for g in opt.param_groups:
        out.append(g["betas"][0] if "betas" in g else g["momentum"])
    return out


def run_sched(make, steps=SCHED_STEPS, metrics=None, epochs=None, record_momentum=False,
              opt_kind="SGD", opt_kw=None):
    opt = make_opt(opt_kind, **(opt_kw or {}))
    sched = make(opt)
    lrs = [[g["lr"] for g in opt.param_groups]]
    moms = [momentum_of(opt)]
    for i in range(steps):
        opt.step()
        if metrics is not None:
            sched.step(metrics[i])
        elif epochs is not None:
            sched.step(epochs[i])
        else:
            sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append(momentum_of(opt))
    tensors = {"lr": torch.tensor(lrs, dtype=torch.float64)}
    if record_momentum:
        tensors["momentum"] = torch.tensor(moms, dtype=torch.float64)
    return tensors


PLATEAU_METRICS = [1.0, 0.9, 0.95, 0.91, 0.92, 0.905, 0.8, 0.8, 0.8, 0.8, 0.79, 0.795, 0.7, 0.71,
                   0.72, 0.73, 0.74, 0.75, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
PLATEAU_MAX_METRICS = [0.1, 0.2, 0.2, 0.2, 0.25, 0.3, 0.3, 0.3, 0.3, 0.3, 0.4, 0.4, 0.4, 0.4, 0.4,
                       0.45, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6, 0.6, 0.6]
WARM_EPOCHS = [0.5, 1.2, 2.9, 3.0, 3.7, 4.1, 6.5, 9.99, 10.0, 12.25, 15.0, 20.5, 21.0, 2.0, 0.0,
               30.3, 44.9, 45.0, 46.5, 7.0, 8.0, 100.0, 3.3, 13.0, 14.0]


def sched_cases():
    cases = []

    def add(name, attrs, make, **kw):
        cases.append({"name": name, "attrs": attrs, "tensors": run_sched(make, **kw)})

    add("step_lr", {"kind": "StepLR", "step_size": 3, "gamma": 0.5},
        lambda o: S.StepLR(o, step_size=3, gamma=0.5))
    add("multistep_lr", {"kind": "MultiStepLR", "milestones": [2, 5, 5, 9], "gamma": 0.3},
        lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3))
    add("exponential_lr", {"kind": "ExponentialLR", "gamma": 0.9},
        lambda o: S.ExponentialLR(o, gamma=0.9))
    add("cosine_annealing_lr", {"kind": "CosineAnnealingLR", "T_max": 7, "eta_min": 0.001},
        lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001))
    add("warm_restarts_tmult2", {"kind": "CosineAnnealingWarmRestarts", "T_0": 4, "T_mult": 2,
                                 "eta_min": 0.01},
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.01))
    add("warm_restarts_tmult1", {"kind": "CosineAnnealingWarmRestarts", "T_0": 5, "T_mult": 1,
                                 "eta_min": 0.0},
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=1))
    add("warm_restarts_epochs", {"kind": "CosineAnnealingWarmRestarts", "T_0": 3, "T_mult": 2,
                                 "eta_min": 0.001, "epochs": WARM_EPOCHS},
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
        epochs=WARM_EPOCHS)
    add("warm_restarts_epochs_tmult1", {"kind": "CosineAnnealingWarmRestarts", "T_0": 3,
                                        "T_mult": 1, "eta_min": 0.001, "epochs": WARM_EPOCHS},
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=1, eta_min=0.001),
        epochs=WARM_EPOCHS)
    add("linear_lr", {"kind": "LinearLR", "start_factor": 0.25, "end_factor": 0.9,
                      "total_iters": 6},
        lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=6))
    add("constant_lr", {"kind": "ConstantLR", "factor": 0.5, "total_iters": 4},
        lambda o: S.ConstantLR(o, factor=0.5, total_iters=4))
    add("lambda_lr", {"kind": "LambdaLR", "fn": "0.95^e"},
        lambda o: S.LambdaLR(o, lambda e: 0.95 ** e))
    add("lambda_lr_per_group", {"kind": "LambdaLR", "fn": "per_group"},
        lambda o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1), lambda e: 0.9 ** e]))
    add("polynomial_lr", {"kind": "PolynomialLR", "total_iters": 10, "power": 2.0},
        lambda o: S.PolynomialLR(o, total_iters=10, power=2.0))
    add("one_cycle_cos_momentum",
        {"kind": "OneCycleLR", "max_lr": [1.0, 0.5], "total_steps": 25, "optimizer": "SGD",
         "momentum": 0.9},
        lambda o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=25),
        record_momentum=True, opt_kw={"momentum": 0.9})
    add("one_cycle_linear_three_phase_betas",
        {"kind": "OneCycleLR", "max_lr": [0.2], "total_steps": 25, "optimizer": "Adam",
         "anneal_strategy": "linear", "three_phase": True, "pct_start": 0.25,
         "div_factor": 10.0, "final_div_factor": 100.0, "base_momentum": 0.8,
         "max_momentum": 0.9},
        lambda o: S.OneCycleLR(o, max_lr=0.2, total_steps=25, anneal_strategy="linear",
                               three_phase=True, pct_start=0.25, div_factor=10.0,
                               final_div_factor=100.0, base_momentum=0.8, max_momentum=0.9),
        record_momentum=True, opt_kind="Adam")
    add("one_cycle_no_momentum",
        {"kind": "OneCycleLR", "max_lr": [0.3], "epochs": 5, "steps_per_epoch": 5,
         "optimizer": "SGD", "cycle_momentum": False, "pct_start": 0.4},
        lambda o: S.OneCycleLR(o, max_lr=0.3, epochs=5, steps_per_epoch=5,
                               cycle_momentum=False, pct_start=0.4),
        record_momentum=True)
    add("sequential_linear_cosine",
        {"kind": "SequentialLR", "milestones": [5]},
        lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=4),
                                     S.CosineAnnealingLR(o, T_max=10)], milestones=[5]))
    add("sequential_three",
        {"kind": "SequentialLR3", "milestones": [3, 8]},
        lambda o: S.SequentialLR(o, [S.ConstantLR(o, factor=0.5, total_iters=2),
                                     S.ExponentialLR(o, gamma=0.8),
                                     S.StepLR(o, step_size=4, gamma=0.5)], milestones=[3, 8]))
    add("chained_constant_exponential", {"kind": "ChainedScheduler"},
        lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=3),
                                      S.ExponentialLR(o, gamma=0.9)]))
    add("plateau_min_rel",
        {"kind": "ReduceLROnPlateau", "mode": "min", "factor": 0.5, "patience": 2,
         "threshold": 0.01, "threshold_mode": "rel", "cooldown": 1, "min_lr": [0.01, 0.02],
         "metrics": PLATEAU_METRICS},
        lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2, threshold=0.01,
                                      threshold_mode="rel", cooldown=1, min_lr=[0.01, 0.02]),
        metrics=PLATEAU_METRICS)
    add("plateau_max_abs",
        {"kind": "ReduceLROnPlateau", "mode": "max", "factor": 0.3, "patience": 1,
         "threshold": 0.05, "threshold_mode": "abs", "cooldown": 0, "min_lr": [0.001],
         "eps": 1e-3, "metrics": PLATEAU_MAX_METRICS},
        lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.3, patience=1, threshold=0.05,
                                      threshold_mode="abs", min_lr=0.001, eps=1e-3),
        metrics=PLATEAU_MAX_METRICS)
    return cases


if __name__ == "__main__":
    save("optim", optimizer_cases())
    save("optim_sched", sched_cases())
