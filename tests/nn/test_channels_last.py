"""Channels-last networks stay channels-last, as in PyTorch's memory-format tutorial."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _chain(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(
        lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
        lib.nn.ConvTranspose2d(4, 2, 2, stride=2), lib.nn.AdaptiveAvgPool2d(2),
        lib.nn.AvgPool2d(2))


def _strides(lib, x):
    out = []
    for layer in _chain(lib):
        x = layer(x)
        # strides of size-1 dimensions are arbitrary: compared only where they matter
        strides = tuple(st for st, n in zip(x.stride(), x.shape) if n != 1)
        out.append((strides, x.is_contiguous(memory_format=lib.channels_last)))
    return out


def test_channels_last_input_keeps_layout_through_layers_as_torch():
    ours = _strides(ember, ember.randn(2, 3, 8, 8).to(memory_format=ember.channels_last))
    theirs = _strides(torch, torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last))
    assert ours == theirs


def test_contiguous_input_stays_contiguous():
    assert all(not cl or s[-1] == 1 for s, cl in _strides(ember, ember.randn(2, 3, 8, 8)))


def test_module_to_memory_format_converts_4d_parameters_as_torch():
    net = ember.nn.Conv2d(3, 4, 3).to(memory_format=ember.channels_last)
    tnet = torch.nn.Conv2d(3, 4, 3).to(memory_format=torch.channels_last)
    assert net.weight.stride() == tnet.weight.stride()
    assert net.bias.stride() == tnet.bias.stride()
    y = net(ember.randn(2, 3, 8, 8))
    ty = tnet(torch.randn(2, 3, 8, 8))
    assert y.stride() == ty.stride()


def test_channels_last_values_match_contiguous():
    net = _chain(ember).eval()
    x = ember.randn(2, 3, 8, 8)
    a = net(x)
    b = net(x.to(memory_format=ember.channels_last))
    assert ember.allclose(a, b, atol=1e-6)
