"""stft / istft and window functions against PyTorch."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@needs_torch
@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window",
                                  "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, periodic):
    import torch

    for n in (0, 1, 8, 13):
        a = getattr(ember, name)(n, periodic, dtype=ember.float64)
        b = getattr(torch, name)(n, periodic, dtype=torch.float64)
        assert np.allclose(a.numpy(), b.numpy()), (name, n)


@needs_torch
@pytest.mark.parametrize("kwargs", [
    {"n_fft": 16},
    {"n_fft": 16, "hop_length": 5, "win_length": 12, "center": False},
    {"n_fft": 8, "normalized": True, "onesided": False, "pad_mode": "constant"},
])
def test_stft_matches_torch(kwargs):
    import torch

    x = np.random.default_rng(0).standard_normal((2, 100))
    win = kwargs.get("win_length", kwargs["n_fft"])
    ew = ember.hann_window(win, dtype=ember.float64)
    tw = torch.hann_window(win, dtype=torch.float64)
    a = ember.stft(ember.from_numpy(x), window=ew, return_complex=True, **kwargs)
    b = torch.stft(torch.from_numpy(x), window=tw, return_complex=True, **kwargs)
    assert a.shape == tuple(b.shape)
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-10)


def test_istft_inverts_stft_and_is_differentiable():
    x = ember.from_numpy(np.random.default_rng(1).standard_normal(200)).requires_grad_()
    w = ember.hann_window(32, dtype=ember.float64)
    spec = ember.stft(x, 32, 8, window=w, return_complex=True)
    back = ember.istft(spec, 32, 8, window=w, length=200)
    assert np.allclose(back.detach().numpy(), x.detach().numpy(), atol=1e-10)
    (spec.abs() ** 2).sum().backward()
    assert x.grad is not None and x.grad.shape == (200,)


def test_stft_requires_return_complex_for_real_input():
    with pytest.raises(RuntimeError, match="return_complex"):
        ember.stft(ember.zeros(64), 16)
