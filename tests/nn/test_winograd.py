"""Winograd F(2x2, 3x3) convolutions (NOTE [ Winograd convolution ]): the path must be
taken where it is meant to be, and give PyTorch's values and gradients."""

import numpy as np
import pytest

import ember
from ember import nn
from ember._ops import nn_conv, nn_conv_winograd, nn_winograd
from tests.conftest import HAS_TORCH
from tests.nn._compare import compare, copy_weights


@pytest.fixture
def calls(monkeypatch):
    """Counts of the Winograd kernels run, by name."""
    seen = {}
    for name in ("conv2d", "input_grad", "weight_grad", "backward"):
        real = getattr(nn_winograd, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen[_name] = seen.get(_name, 0) + 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(nn_winograd, name, spy)
    # (the compiled channels-last tiles, which take small planes where MLAS runs the
    # products, are tested in tests/nn/test_conv_winograd22_tiles.py)
    monkeypatch.setattr(nn_conv_winograd, "_tiles_pay", lambda c, o: False)
    return seen


@pytest.fixture
def everywhere(monkeypatch):
    """Winograd for every shape it can compute, however few the channels."""
    monkeypatch.setattr(nn_winograd, "_winograd_pays", lambda c, o, row: True)


def _direct(monkeypatch):
    monkeypatch.setattr(nn_winograd, "_winograd_pays", lambda c, o, row: False)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("padding,spatial", [(1, (4, 4)), (1, (5, 6)), (0, (7, 3)),
                                             (2, (3, 5)), (1, (1, 1))])
def test_resnet_sized_conv_takes_winograd_and_matches_torch(calls, padding, spatial):
    import torch

    x = np.random.default_rng(0).standard_normal((3, 64) + spatial).astype(np.float32)
    conv_e = nn.Conv2d(64, 64, 3, padding=padding)
    conv_t = torch.nn.Conv2d(64, 64, 3, padding=padding)
    copy_weights(conv_e, conv_t)
    compare(conv_e, conv_t, [ember.from_numpy(x)], ember_params=list(conv_e.parameters()),
            torch_params=list(conv_t.parameters()), rtol=1e-4, atol=1e-5)
    # one forward, and both adjoints from one backward kernel
    assert calls["conv2d"] == 1 and calls["backward"] == 1


def test_only_the_weight_or_the_input_gradient(calls):
    rng = np.random.default_rng(1)
    w = ember.from_numpy(rng.standard_normal((64, 64, 3, 3)).astype(np.float32) * 0.05)
    x = ember.from_numpy(rng.standard_normal((2, 64, 6, 6)).astype(np.float32))
    w.requires_grad_()
    nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert x.grad is None and w.grad is not None
    x.requires_grad_()
    w.requires_grad_(False)
    nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert x.grad is not None
    assert calls == {"conv2d": 2, "weight_grad": 1, "input_grad": 1}


@pytest.mark.parametrize("padding", [0, 1, 2])
def test_gradcheck_and_gradgradcheck(everywhere, calls, padding):
    # double backward runs the adjoints' own adjoints, Winograd convolutions as well
    from ember.autograd import gradcheck, gradgradcheck

    x = ember.from_numpy(np.random.default_rng(2).standard_normal((2, 2, 5, 4))).requires_grad_()
    w = ember.from_numpy(np.random.default_rng(3).standard_normal((3, 2, 3, 3)) * 0.3)
    w.requires_grad_()
    b = ember.from_numpy(np.random.default_rng(4).standard_normal(3)).requires_grad_()
    fn = lambda x, w, b: nn.functional.conv2d(x, w, b, padding=padding)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))
    assert calls["conv2d"] and calls["backward"] and calls["input_grad"] \
        and calls["weight_grad"]


@pytest.mark.parametrize("tile_bytes,min_tiles", [(1, 1), (2**30, 1)])
@pytest.mark.parametrize("n,c,o,h,w,padding", [(5, 3, 4, 7, 6, 1), (3, 5, 2, 4, 9, 0),
                                               (2, 4, 4, 3, 3, 2)])
def test_matches_direct_convolution_in_any_batch_chunks(monkeypatch, tile_bytes, min_tiles,
                                                        n, c, o, h, w, padding):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((n, c, h, w))
    wt = rng.standard_normal((o, c, 3, 3))
    b = rng.standard_normal(o)
    p = dict(stride=(1, 1), padding=(padding, padding), dilation=(1, 1))
    g = rng.standard_normal((n, o, h + 2 * padding - 2, w + 2 * padding - 2))
    _direct(monkeypatch)
    want = (nn_conv._conv_kernel(np, x, wt, b, groups=1, **p),
            nn_conv._input_grad_kernel(np, g, wt, input_shape=x.shape, groups=1, **p),
            nn_conv._weight_grad_kernel(np, x, g, weight_shape=wt.shape, groups=1, **p))
    monkeypatch.setattr(nn_winograd, "_winograd_pays", lambda c, o, row: True)
    monkeypatch.setattr(nn_winograd, "_TILE_BYTES", tile_bytes)
    monkeypatch.setattr(nn_winograd, "_MIN_TILES", min_tiles)
    got = (nn_winograd.conv2d(np, x, wt, b, p["padding"]),) + \
        nn_winograd.backward(np, g, x, wt, p["padding"])
    for a, e in zip(got, want):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stride,padding,dilation,groups,dtype,kernel", [
    ((2, 2), (1, 1), (1, 1), 1, np.float32, (3, 3)),
    ((1, 1), (2, 2), (2, 2), 1, np.float32, (3, 3)),
    ((1, 1), (1, 1), (1, 1), 2, np.float32, (3, 3)),
    ((1, 1), (1, 1), (1, 1), 1, np.float16, (3, 3)),
    ((1, 1), (3, 3), (1, 1), 1, np.float32, (3, 3)),
    ((1, 1), (1, 1), (1, 1), 1, np.float32, (3, 2)),
])
def test_other_convolutions_keep_gathered_columns(stride, padding, dilation, groups, dtype,
                                                  kernel):
    w_shape = (64, 64 // groups) + kernel
    assert not nn_winograd.eligible(np, (8, 64, 8, 8), w_shape, stride, padding, dilation,
                                    groups, dtype)


def test_eligibility_follows_channels_and_plane_width():
    ok = lambda c, row: nn_winograd.eligible(  # noqa: E731
        np, (8, c, row, row), (c, c, 3, 3), (1, 1), (1, 1), (1, 1), 1, np.float32)
    assert ok(64, 4) and ok(128, 16) and ok(256, 32)
    assert not ok(32, 8) and not ok(64, 32) and not ok(3, 8)
