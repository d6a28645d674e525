"""Stand-in for ``timm.models.layers``: stochastic depth, pair expansion and truncated-normal
initialisation, written against the public PyTorch API."""

import collections.abc

import torch
from torch import nn


def to_2tuple(x):
    """``x`` as a pair: iterables unchanged (as a tuple), anything else repeated."""
    if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
        return tuple(x)
    return (x, x)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """Fills ``tensor`` from a normal distribution truncated to ``[a, b]``."""
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)


class DropPath(nn.Module):
    """Stochastic depth: in training, zeroes whole samples with probability ``drop_prob`` and
    scales the kept ones by ``1 / (1 - drop_prob)``."""

    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        if not self.training or self.drop_prob == 0.0:
            return x
        keep = 1.0 - self.drop_prob
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        mask = torch.rand(shape, dtype=x.dtype, device=x.device) < keep
        return x * mask.to(x.dtype) / keep

    def extra_repr(self):
        return f"drop_prob={self.drop_prob}"
