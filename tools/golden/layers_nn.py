"""Goldens for the remaining layers: Bilinear, Conv1d/Conv2d/ConvTranspose2d, pooling, BatchNorm,
GroupNorm, Flatten/Unflatten, the activation modules, and a small CNN built from Sequential,
ModuleList and ModuleDict (its state_dict keys are in the case's attrs).

Run with Debian's torch: /usr/bin/python3 tools/golden/layers_nn.py
Writes tests/golden/layers_nn.json, read by tests/nn/test_layers_*.cpp and test_containers.cpp.
"""
import torch
import torch.nn as nn

from common import save
from module_case import module_case

torch.manual_seed(0)
cases = []


def randomize(module):
    """Non-trivial affine parameters (PyTorch's defaults are ones and zeros)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() == 1:
                p.copy_(torch.rand_like(p) + 0.5)
            elif name.endswith("bias") and p.dim() == 1:
                p.normal_()
    return module


def case(name, module, inputs, attrs=None, run=None):
    cases.append(module_case(name, module, inputs, attrs, run))


# ---- Bilinear -------------------------------------------------------------------------------
case("bilinear", nn.Bilinear(3, 4, 5), [torch.randn(6, 3), torch.randn(6, 4)])
case("bilinear_nobias_3d", nn.Bilinear(2, 3, 4, bias=False),
     [torch.randn(2, 3, 2), torch.randn(2, 3, 3)])

# ---- convolutions -----------------------------------------------------------------------------
case("conv1d", nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
     [torch.randn(2, 4, 11)])
# "same" with an odd total padding (dilation * (kernel - 1)) pads one more on the right.
case("conv1d_same_nobias", nn.Conv1d(3, 4, 4, padding="same", bias=False),
     [torch.randn(2, 3, 9)])
case("conv2d_groups_dilation_stride",
     nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2),
     [torch.randn(1, 4, 7, 6)])
case("conv2d_same_groups", nn.Conv2d(4, 8, (3, 4), padding="same", dilation=(2, 1), groups=4),
     [torch.randn(1, 4, 5, 6)])
case("conv2d_valid_nobias", nn.Conv2d(3, 2, 3, padding="valid", bias=False),
     [torch.randn(1, 3, 5, 6)])
case("conv2d_unbatched", nn.Conv2d(2, 3, 2, stride=2), [torch.randn(2, 6, 5)])
case("conv_transpose2d_groups",
     nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
     [torch.randn(1, 4, 3, 4)])
case("conv_transpose2d_dilation",
     nn.ConvTranspose2d(2, 3, (2, 3), stride=(3, 2), padding=(1, 0), output_padding=(2, 1),
                        dilation=(1, 2), bias=False),
     [torch.randn(1, 2, 3, 3)])
ct = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
case("conv_transpose2d_output_size", ct, [torch.randn(1, 3, 4, 4)], {"output_size": [8, 8]},
     run=lambda m, x: m(x, output_size=[8, 8]))

# ---- pooling ------------------------------------------------------------------------------------
case("max_pool2d_default", nn.MaxPool2d(2), [torch.randn(1, 3, 6, 7)])
case("max_pool2d_ceil", nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
     [torch.randn(1, 2, 8, 7)])
case("max_pool2d_dilation", nn.MaxPool2d((2, 3), stride=(1, 2), padding=1, dilation=(2, 1)),
     [torch.randn(1, 2, 7, 8)])
case("avg_pool2d_ceil_exclude_pad",
     nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     [torch.randn(1, 2, 8, 7)])
case("avg_pool2d_ceil_include_pad", nn.AvgPool2d(2, padding=1, ceil_mode=True),
     [torch.randn(1, 2, 5, 6)])
case("avg_pool2d_divisor", nn.AvgPool2d((3, 2), stride=1, divisor_override=4),
     [torch.randn(1, 2, 5, 5)])
case("adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((3, 2)), [torch.randn(1, 3, 7, 5)])
case("adaptive_avg_pool2d_1", nn.AdaptiveAvgPool2d(1), [torch.randn(2, 3, 4, 5)])


# ---- normalization -------------------------------------------------------------------------------
def batch_norm(module, batches=0):
    randomize(module)
    if module.track_running_stats:
        with torch.no_grad():
            module.running_mean.normal_()
            module.running_var.uniform_(0.5, 2.0)
            module.num_batches_tracked.fill_(batches)
    return module


case("batch_norm2d_train", batch_norm(nn.BatchNorm2d(3, momentum=0.3), 5),
     [torch.randn(3, 3, 3, 4) * 2 + 1])
case("batch_norm2d_eval", batch_norm(nn.BatchNorm2d(3, eps=1e-3), 2).eval(),
     [torch.randn(3, 3, 3, 4) * 2 + 1])
case("batch_norm1d_cumulative", batch_norm(nn.BatchNorm1d(4, momentum=None), 3),
     [torch.randn(6, 4) * 3 - 1])
case("batch_norm1d_3d_noaffine", batch_norm(nn.BatchNorm1d(3, affine=False)),
     [torch.randn(4, 3, 5)])
case("batch_norm2d_untracked_train", batch_norm(nn.BatchNorm2d(3, track_running_stats=False)),
     [torch.randn(2, 3, 4, 4)])
case("batch_norm2d_untracked_eval",
     batch_norm(nn.BatchNorm2d(3, track_running_stats=False)).eval(), [torch.randn(2, 3, 4, 4)])
case("group_norm", randomize(nn.GroupNorm(2, 6)), [torch.randn(2, 6, 3, 2) * 2 + 1])
case("group_norm_noaffine", nn.GroupNorm(3, 3, eps=1e-3, affine=False), [torch.randn(2, 3, 5)])

# ---- shape layers ------------------------------------------------------------------------------
case("flatten", nn.Flatten(1, 2), [torch.randn(2, 3, 2, 2)])
case("flatten_default", nn.Flatten(), [torch.randn(2, 3, 4)])
case("unflatten", nn.Unflatten(1, (2, 6)), [torch.randn(3, 12, 2)])
case("identity", nn.Identity(), [torch.randn(3, 4)])

# ---- activations: inputs spread over [-4, 4], with values past softplus's threshold -----------
act_in = torch.randn(3, 7) * 2
activations = {
    "relu": nn.ReLU(), "leaky_relu": nn.LeakyReLU(0.2), "elu": nn.ELU(0.7), "selu": nn.SELU(),
    "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh"), "silu": nn.SiLU(),
    "mish": nn.Mish(), "softplus": nn.Softplus(beta=2, threshold=3),
    "hardtanh": nn.Hardtanh(-2.0, 1.5), "hardsigmoid": nn.Hardsigmoid(),
    "hardswish": nn.Hardswish(), "sigmoid": nn.Sigmoid(), "tanh": nn.Tanh(),
    "softmax": nn.Softmax(dim=0), "log_softmax": nn.LogSoftmax(dim=1),
}
for name, m in activations.items():
    case("act_" + name, m, [act_in], {"repr": repr(m)})


# ---- a small CNN from every container: state_dict keys and an end-to-end forward/backward ------
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.MaxPool2d(2))
        self.blocks = nn.ModuleList([nn.Conv2d(4, 4, 3, padding=1, groups=2), nn.GroupNorm(2, 4)])
        self.heads = nn.ModuleDict({"cls": nn.Linear(16, 3), "aux": nn.Linear(16, 2)})
        self.flatten = nn.Flatten()

    def forward(self, x):
        h = self.features(x)
        for b in self.blocks:
            h = b(h)
        h = nn.functional.adaptive_avg_pool2d(h, 2)
        return self.heads["cls"](self.flatten(h))


cnn = SmallCNN()
randomize(cnn)
case("small_cnn", cnn, [torch.randn(2, 1, 8, 8)], {"keys": list(cnn.state_dict().keys()),
                                                     "repr": repr(cnn)})

# The CNN of the summary test (MNIST-sized): its parameter count.
w2 = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                   nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                   nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
cases.append({"name": "w2_cnn", "tensors": {},
              "attrs": {"params": sum(p.numel() for p in w2.parameters()),
                        "layer_params": [sum(p.numel() for p in m.parameters()) for m in w2],
                        "repr": repr(w2)}})

# Reprs of configured layers (extra_repr), compared as strings.
reprs = [
    nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2),
    nn.Conv2d(1, 32, 3, padding=1),
    nn.Conv2d(4, 8, (3, 4), padding="same", dilation=(1, 2), groups=4, bias=False),
    nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
    nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
    nn.AvgPool2d(3, stride=2, padding=1),
    nn.AdaptiveAvgPool2d((3, 2)),
    nn.BatchNorm2d(3, momentum=0.3),
    nn.BatchNorm1d(4, momentum=None, affine=False, track_running_stats=False),
    nn.GroupNorm(2, 6),
    nn.Bilinear(3, 4, 5),
    nn.Flatten(),
    nn.Unflatten(1, (2, 6)),
    nn.Identity(),
]
cases.append({"name": "reprs", "tensors": {}, "attrs": {"reprs": [repr(m) for m in reprs]}})

save("layers_nn", cases)
