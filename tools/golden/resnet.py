"""Goldens for models::ResNet: torchvision's BasicBlock ResNet, re-stated here in plain torch
(torchvision is not installed; this is torchvision/models/resnet.py's structure, names and
init), so the key list and parameter count are torchvision's.

Run with Debian's torch: /usr/bin/python3 tools/golden/resnet.py
Writes tests/golden/resnet.json, read by tests/models/test_resnet.cpp:
  case "resnet18_keys": attrs {state_keys: [...], param_keys: [...], num_parameters}
  case "resnet34_keys": attrs {num_parameters}
  cases "tiny_small_input" / "tiny_imagenet_stem": module_case of tiny ResNets (train mode).
"""
import torch
import torch.nn as nn

from common import save
from module_case import module_case


def conv3x3(i, o, stride=1):
    return nn.Conv2d(i, o, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=1000, in_channels=3, width=64, small_input=False):
        super().__init__()
        self.inplanes = width
        self.small_input = small_input
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, width, 3, 1, 1, bias=False)
        else:
            self.conv1 = nn.Conv2d(in_channels, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(BasicBlock(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        if not self.small_input:
            x = self.maxpool(x)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def count(m):
    return sum(p.numel() for p in m.parameters())


torch.manual_seed(0)
cases = []
r18 = ResNet([2, 2, 2, 2])
cases.append({"name": "resnet18_keys", "tensors": {},
              "attrs": {"state_keys": list(r18.state_dict().keys()),
                        "param_keys": [n for n, _ in r18.named_parameters()],
                        "num_parameters": count(r18)}})
cases.append({"name": "resnet34_keys", "tensors": {},
              "attrs": {"num_parameters": count(ResNet([3, 4, 6, 3]))}})


def randomize_bn(m):
    # Non-trivial BatchNorm affine parameters, so the golden checks that they are applied.
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)
    return m


tiny = randomize_bn(ResNet([1, 1, 1, 1], num_classes=3, in_channels=1, width=1, small_input=True))
cases.append(module_case("tiny_small_input", tiny, [torch.randn(2, 1, 8, 8)],
                         {"layers": [1, 1, 1, 1], "num_classes": 3, "in_channels": 1, "width": 1,
                          "small_input": True}))
stem = randomize_bn(ResNet([1, 1, 1, 1], num_classes=5, in_channels=3, width=2))
cases.append(module_case("tiny_imagenet_stem", stem, [torch.randn(2, 3, 12, 12)],
                         {"layers": [1, 1, 1, 1], "num_classes": 5, "in_channels": 3, "width": 2,
                          "small_input": False}))
save("resnet", cases)
