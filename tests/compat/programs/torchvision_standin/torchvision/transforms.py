"""The transforms the programs use, on the stand-in datasets' arrays and on tensors."""

import numpy as np
import torch


class Compose:
    """Apply ``transforms`` in order."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """A uint8 ``H x W [x C]`` array as a float ``C x H x W`` tensor in [0, 1]."""

    def __call__(self, array):
        array = np.asarray(array)
        if array.ndim == 2:
            array = array[:, :, None]
        chw = np.ascontiguousarray(array.transpose(2, 0, 1))
        return torch.from_numpy(chw).float().div(255)


class Normalize:
    """``(x - mean) / std`` per channel."""

    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        mean = torch.tensor(self.mean).view(-1, 1, 1)
        std = torch.tensor(self.std).view(-1, 1, 1)
        return (x - mean) / std


class Lambda:
    """Apply a function."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, x):
        return self.fn(x)
