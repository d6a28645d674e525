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
    """A uint8 ``H x W [x C]`` array (or PIL image) as a float ``C x H x W`` tensor in
    [0, 1]."""

    def __call__(self, array):
        array = np.asarray(array)
        if array.ndim == 2:
            array = array[:, :, None]
        chw = np.array(array.transpose(2, 0, 1))  # a writable copy (PIL arrays are not)
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


def _size(image):
    """``(height, width)`` of a PIL image or an ``H x W [x C]`` array."""
    if hasattr(image, "size") and not isinstance(image, np.ndarray):
        return image.size[1], image.size[0]
    return image.shape[0], image.shape[1]


def _pil(image):
    from PIL import Image

    return image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image))


class CenterCrop:
    """The central ``size`` (an int: square) crop of a PIL image (or array, as a PIL image);
    the image must be at least that large."""

    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        (h, w), (th, tw) = _size(image), self.size
        top, left = int(round((h - th) / 2.0)), int(round((w - tw) / 2.0))
        return _pil(image).crop((left, top, left + tw, top + th))


class Resize:
    """A PIL image resized bilinearly: an int ``size`` is the new shorter side (the aspect
    ratio kept), a pair is ``(height, width)``."""

    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        from PIL import Image

        h, w = _size(image)
        if isinstance(self.size, int):
            short, long = sorted((h, w))
            new_short, new_long = self.size, int(self.size * long / short)
            th, tw = (new_short, new_long) if h <= w else (new_long, new_short)
        else:
            th, tw = self.size
        return _pil(image).resize((tw, th), Image.BILINEAR)
