"""interpolate, grid_sample, affine_grid, fold/unfold, shuffles and misc functional ops."""

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import HAS_TORCH
from tests.nn._compare import compare, copy_weights, to_torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
F = nn.functional


def _x(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape))


@pytest.mark.parametrize("shape,kwargs", [
    ((2, 3, 5), {"size": 8, "mode": "nearest"}),
    ((2, 3, 5), {"scale_factor": 1.7, "mode": "linear"}),
    ((2, 3, 5), {"size": 3, "mode": "linear", "align_corners": True}),
    ((1, 2, 4, 5), {"size": (7, 3), "mode": "bilinear"}),
    ((1, 2, 4, 5), {"scale_factor": 2, "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 5), {"size": (6, 9), "mode": "bicubic"}),
    ((1, 2, 4, 5), {"scale_factor": (2.5, 1.5), "mode": "nearest-exact"}),
    ((1, 2, 6, 6), {"size": (4, 3), "mode": "area"}),
    ((1, 2, 3, 4, 5), {"size": (5, 2, 6), "mode": "trilinear"}),
    ((1, 2, 3, 4, 5), {"scale_factor": 2, "mode": "nearest"}),
])
def test_interpolate_matches_torch(shape, kwargs, device):
    import torch

    compare(lambda x: F.interpolate(x, **kwargs),
            lambda x: torch.nn.functional.interpolate(x, **kwargs), [_x(*shape)],
            device=device)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_matches_torch(mode, padding_mode, align_corners, device):
    import torch

    grid = ember.from_numpy(np.random.default_rng(5).uniform(-1.3, 1.3, (2, 3, 4, 2)))
    kw = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    compare(lambda x, g: F.grid_sample(x, g, **kw),
            lambda x, g: torch.nn.functional.grid_sample(x, g, **kw), [_x(2, 3, 5, 6), grid],
            grad_args=(0,) if mode == "nearest" else (0, 1), atol=1e-6, device=device)


def test_grid_sample_3d_matches_torch():
    import torch

    grid = ember.from_numpy(np.random.default_rng(5).uniform(-1, 1, (1, 2, 3, 4, 3)))
    compare(lambda x, g: F.grid_sample(x, g, align_corners=False),
            lambda x, g: torch.nn.functional.grid_sample(x, g, align_corners=False),
            [_x(1, 2, 3, 4, 5), grid])


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    import torch

    theta = _x(2, 2, 3)
    compare(lambda t: F.affine_grid(t, [2, 3, 4, 5], align_corners=align_corners),
            lambda t: torch.nn.functional.affine_grid(t, [2, 3, 4, 5],
                                                      align_corners=align_corners), [theta])
    compare(lambda t: F.affine_grid(t, [1, 1, 2, 3, 4], align_corners=align_corners),
            lambda t: torch.nn.functional.affine_grid(t, [1, 1, 2, 3, 4],
                                                      align_corners=align_corners),
            [_x(1, 3, 4)])


def test_unfold_fold_match_torch():
    import torch

    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    out = compare(lambda x: F.unfold(x, **kw), lambda x: torch.nn.functional.unfold(x, **kw),
                  [_x(2, 3, 6, 7)])
    compare(lambda c: F.fold(c, (6, 7), **kw),
            lambda c: torch.nn.functional.fold(c, (6, 7), **kw), [out.detach()])


def test_shuffles_match_torch():
    import torch

    compare(lambda x: F.pixel_shuffle(x, 2), lambda x: torch.nn.functional.pixel_shuffle(x, 2),
            [_x(2, 8, 3, 4)])
    compare(lambda x: F.pixel_unshuffle(x, 2),
            lambda x: torch.nn.functional.pixel_unshuffle(x, 2), [_x(2, 2, 4, 6)])
    compare(lambda x: F.channel_shuffle(x, 3), lambda x: torch.nn.functional.channel_shuffle(
        x, 3), [_x(2, 6, 2, 2)], grad=False)


def test_misc_functional_match_torch():
    import torch

    compare(lambda x: F.normalize(x, dim=1), lambda x: torch.nn.functional.normalize(x, dim=1),
            [_x(3, 4)])
    compare(lambda x: F.pdist(x), lambda x: torch.nn.functional.pdist(x), [_x(4, 3)])
    idx = ember.tensor([0, 2, 1, 2])
    assert F.one_hot(idx).tolist() == torch.nn.functional.one_hot(to_torch(idx)).tolist()
    assert F.one_hot(idx, 5).shape == (4, 5)
    compare(lambda a, b, w: F.bilinear(a, b, w), lambda a, b, w: torch.nn.functional.bilinear(
        a, b, w), [_x(2, 3), _x(2, 4, seed=1), _x(5, 3, 4, seed=2)])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_torch(mode):
    import torch

    t = torch.nn.EmbeddingBag(10, 3, mode=mode).double()
    e = nn.EmbeddingBag(10, 3, mode=mode).double()
    copy_weights(e, t)
    inp, offs = ember.tensor([1, 2, 4, 5, 4, 3, 2, 9]), ember.tensor([0, 4])
    out = e(inp, offs)
    ref = t(to_torch(inp), to_torch(offs))
    assert np.allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    assert np.allclose(e.weight.grad.numpy(), t.weight.grad.numpy())


def test_lazy_modules_materialise_on_first_call():
    m = nn.LazyLinear(3)
    assert m(ember.ones(2, 5)).shape == (2, 3)
    assert type(m) is nn.Linear and m.in_features == 5 and m.weight.shape == (3, 5)
    c = nn.LazyConv2d(4, 3)
    assert c(ember.ones(1, 2, 5, 5)).shape == (1, 4, 3, 3) and type(c) is nn.Conv2d


def test_upsample_modules():
    x = _x(1, 1, 2, 2)
    assert nn.Upsample(scale_factor=2)(x).shape == (1, 1, 4, 4)
    assert nn.UpsamplingBilinear2d(size=(3, 3))(x).shape == (1, 1, 3, 3)
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"
