"""Synthetic image datasets in torchvision's interface: ``(image, label)`` items, where an
image is an ``H x W`` (gray) or ``H x W x C`` uint8 array, as ``transforms.ToTensor`` takes."""

import numpy as np


class _Synthetic:
    def __init__(self, size, shape, seed, num_classes=10, transform=None,
                 target_transform=None):
        rng = np.random.default_rng(seed)
        self.data = rng.integers(0, 256, (size, *shape), dtype=np.uint8)
        self.targets = rng.integers(0, num_classes, size)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, label = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label


class MNIST(_Synthetic):
    """256 training or 128 test images of 28 x 28 with labels 0-9 (``root``/``download``
    are accepted and ignored)."""

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(256 if train else 128, (28, 28), 0 if train else 1,
                         transform=transform, target_transform=target_transform)


class FakeData(_Synthetic):
    """``size`` random images of ``image_size`` (C, H, W), as torchvision's FakeData."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        c, h, w = image_size
        super().__init__(size, (h, w, c), random_offset, num_classes, transform,
                         target_transform)
