"""Synthetic image datasets in torchvision's interface: ``(image, label)`` items, where an
image is an ``H x W`` (gray) or ``H x W x C`` uint8 array, as ``transforms.ToTensor`` takes;
``ImageFolder`` reads real files (PIL images) from a folder the test writes."""

import os

import numpy as np


class _Synthetic:
    def __init__(self, size, shape, seed, num_classes=10, transform=None,
                 target_transform=None):
        rng = np.random.default_rng(seed)
        self._images = rng.integers(0, 256, (size, *shape), dtype=np.uint8)
        self._labels = rng.integers(0, num_classes, size)
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self._images)

    def __getitem__(self, index):
        image, label = self._images[index], int(self._labels[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label


class MNIST(_Synthetic):
    """256 training or 128 test images of 28 x 28 with labels 0-9 (``root``/``download``
    are accepted and ignored); ``data`` and ``targets`` are tensors, as torchvision's."""

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(256 if train else 128, (28, 28), 0 if train else 1,
                         transform=transform, target_transform=target_transform)

    @property
    def data(self):
        import torch

        return torch.from_numpy(self._images)

    @property
    def targets(self):
        import torch

        return torch.from_numpy(self._labels.astype(np.int64))


class CIFAR10(_Synthetic):
    """64 training or 32 test colour images of 32 x 32 x 3 with labels 0-9 (``root`` and
    ``download`` are accepted and ignored)."""

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        super().__init__(64 if train else 32, (32, 32, 3), 2 if train else 3,
                         transform=transform, target_transform=target_transform)


class FakeData:
    """``size`` random images of ``image_size`` (C, H, W), as torchvision's FakeData: each
    drawn when read, from a generator seeded by its index. The environment variable
    ``TORCHVISION_STANDIN_FAKEDATA_SIZE`` caps ``size`` (a program that asks for ImageNet's
    1.28 million runs a few batches)."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        cap = os.environ.get("TORCHVISION_STANDIN_FAKEDATA_SIZE")
        self.size = min(size, int(cap)) if cap else size
        self.image_size, self.num_classes = tuple(image_size), num_classes
        self.transform, self.target_transform = transform, target_transform
        self.random_offset = random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"FakeData: index {index} out of range for size {self.size}")
        rng = np.random.default_rng(index + self.random_offset)
        c, h, w = self.image_size
        image = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        label = int(rng.integers(0, self.num_classes))
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label


class ImageFolder:
    """``root/<class>/<image>`` files as ``(PIL RGB image, class index)``, classes and
    files in sorted order."""

    _EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")

    def __init__(self, root, transform=None, target_transform=None):
        self.classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = [
            (os.path.join(root, name, f), self.class_to_idx[name])
            for name in self.classes for f in sorted(os.listdir(os.path.join(root, name)))
            if f.lower().endswith(self._EXTENSIONS)]
        self.targets = [label for _, label in self.samples]
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        from PIL import Image

        path, label = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label
