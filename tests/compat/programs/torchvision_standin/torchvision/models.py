"""ResNet-18 and VGG-16 in torchvision's layout (module names, layer order, initialisation
scheme), written for the stand-in. No weights are downloaded: ``weights=...`` fills the
parameters with fixed seeded numbers instead (the same under PyTorch and ember), and VGG's
classifier, which the programs here never run, then lives on the ``meta`` device."""

import enum

import numpy as np
import torch
from torch import nn

__all__ = ["ResNet", "VGG", "VGG16_Weights", "ResNet18_Weights", "resnet18", "vgg16"]


class VGG16_Weights(enum.Enum):  # noqa: N801 (torchvision's name)
    """Stand-in weights: seeded numbers on the He scale, not ImageNet's."""

    IMAGENET1K_V1 = "IMAGENET1K_V1"
    DEFAULT = "IMAGENET1K_V1"


class ResNet18_Weights(enum.Enum):  # noqa: N801
    """Stand-in weights: seeded numbers on the He scale, not ImageNet's."""

    IMAGENET1K_V1 = "IMAGENET1K_V1"
    DEFAULT = "IMAGENET1K_V1"


def _fill_seeded(module):
    """Overwrite ``module``'s parameters (not on ``meta``) with seeded normal numbers of
    standard deviation sqrt(2 / fan_in); biases and norm weights get 0 and 1."""
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.device.type == "meta":
                continue
            if p.dim() > 1:
                fan_in = int(np.prod(p.shape[1:]))
                values = rng.normal(0.0, np.sqrt(2.0 / fan_in), tuple(p.shape))
            else:
                values = np.ones(tuple(p.shape)) if name.endswith("weight") else np.zeros(
                    tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def _conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a (projected, when the shape changes)
    shortcut."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + shortcut)


class ResNet(nn.Module):
    """A residual network of ``BasicBlock`` stages (``layers`` blocks per stage)."""

    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._stage(block, 64, layers[0], 1)
        self.layer2 = self._stage(block, 128, layers[1], 2)
        self.layer3 = self._stage(block, 256, layers[2], 2)
        self.layer4 = self._stage(block, 512, layers[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _stage(self, block, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion))
        stage = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        stage += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class VGG(nn.Module):
    """``features`` (convolutions and max-pools), a 7x7 adaptive average pool and a
    three-layer classifier."""

    def __init__(self, features, num_classes=1000, device=None):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096, device=device), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, 4096, device=device), nn.ReLU(True), nn.Dropout(),
            nn.Linear(4096, num_classes, device=device))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear) and m.weight.device.type != "meta":
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


_VGG16 = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
          512, 512, 512, "M"]


def resnet18(weights=None, progress=True, **kwargs):
    """ResNet-18 (``weights``: stand-in seeded numbers)."""
    model = ResNet(BasicBlock, [2, 2, 2, 2], **kwargs)
    if weights is not None:
        _fill_seeded(model)
    return model


def vgg16(weights=None, progress=True, **kwargs):
    """VGG-16 without batch norm (``weights``: stand-in seeded numbers, the classifier on
    ``meta``)."""
    layers, cin = [], 3
    for v in _VGG16:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [nn.Conv2d(cin, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            cin = v
    model = VGG(nn.Sequential(*layers), device="meta" if weights is not None else None,
                **kwargs)
    if weights is not None:
        _fill_seeded(model)
    return model
