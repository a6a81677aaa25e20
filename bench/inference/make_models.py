"""Exports the inference workloads (../shared/WORKLOADS.md, issue 17) to ONNX with PyTorch.

W2's CNN, ResNet-18 (torchvision's architecture, written out here so no torchvision is needed:
11,689,512 parameters) and W4's char-Transformer; random weights (seed 0), eval mode, opset 17,
a dynamic batch axis. Run by bench/inference/run.sh with the PyPI venv's python:
    python make_models.py OUT_DIR
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
from torch_ref import CharTransformer  # noqa: E402  (W4's model, as the training bench has it)


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision.models.resnet18's layers, in its order and with its initialisation."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                # Random statistics, so BatchNorm folding is exercised on non-trivial values.
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.uniform_(m.bias, -0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


MODELS = {
    "cnn": (cnn, lambda b: torch.randn(b, 1, 28, 28)),
    "resnet18": (ResNet18, lambda b: torch.randn(b, 3, 224, 224)),
    "transformer": (CharTransformer, lambda b: torch.randint(0, 256, (b, 128))),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (make, example) in MODELS.items():
        torch.manual_seed(0)
        model = make().eval()
        if name == "resnet18":
            assert sum(p.numel() for p in model.parameters()) == 11_689_512
        path = os.path.join(out, f"{name}.onnx")
        torch.onnx.export(model, (example(2),), path, opset_version=17, dynamo=False,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
