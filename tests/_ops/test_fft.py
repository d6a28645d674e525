"""Focused tests for ember.fft: result dtypes, round trips, and gradients against PyTorch's
(the real and Hermitian transforms have conventions of their own, see NOTE [ FFT gradients ])."""

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


@pytest.mark.parametrize("dtype, want", [(ember.float32, ember.complex64),
                                         (ember.float64, ember.complex128),
                                         (ember.int64, ember.complex64),
                                         (ember.bool, ember.complex64),
                                         (ember.complex64, ember.complex64)])
def test_fft_result_dtype(dtype, want):
    assert ember.fft.fft(ember.ones(4, dtype=dtype)).dtype == want


def test_irfft_result_is_real():
    assert ember.fft.irfft(ember.ones(3, dtype=ember.complex64)).dtype == ember.float32
    assert ember.fft.hfft(ember.ones(3, dtype=ember.complex128)).dtype == ember.float64


@pytest.mark.parametrize("n", [7, 8])
def test_rfft_irfft_round_trip(rng, n):
    x = ember.tensor(rng.standard_normal((3, n)))
    assert_close(ember.fft.irfft(ember.fft.rfft(x), n=n), x)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_fftn_ifftn_round_trip(rng, norm):
    x = ember.tensor(rng.standard_normal((3, 4, 5)) + 1j * rng.standard_normal((3, 4, 5)))
    assert_close(ember.fft.ifftn(ember.fft.fftn(x, norm=norm), norm=norm), x)


def test_fft_of_empty_batch():
    r = ember.fft.rfft(ember.ones(0, 6))
    assert tuple(r.shape) == (0, 4) and r.dtype == ember.complex64


def test_fft_bad_arguments():
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ember.fft.fft(ember.ones(4), n=0)
    with pytest.raises(RuntimeError, match="Invalid normalization mode"):
        ember.fft.fft(ember.ones(4), norm="unitary")
    with pytest.raises(RuntimeError, match="real input"):
        ember.fft.rfft(ember.ones(4, dtype=ember.complex64))
    with pytest.raises(TypeError):
        ember.fft.fft([1.0, 2.0])


def test_fftfreq_and_shift_agree_with_numpy():
    np.testing.assert_allclose(ember.fft.fftfreq(7, 0.5).numpy(), np.fft.fftfreq(7, 0.5))
    np.testing.assert_allclose(ember.fft.rfftfreq(8).numpy(), np.fft.rfftfreq(8))
    x = np.arange(15).reshape(3, 5)
    np.testing.assert_array_equal(ember.fft.fftshift(ember.tensor(x)).numpy(),
                                  np.fft.fftshift(x))
    np.testing.assert_array_equal(ember.fft.ifftshift(ember.tensor(x), dim=1).numpy(),
                                  np.fft.ifftshift(x, axes=1))


def test_fftfreq_dtype_and_requires_grad():
    f = ember.fft.fftfreq(4, dtype=ember.float64, requires_grad=True)
    assert f.dtype == ember.float64 and f.requires_grad


CASES = [
    ("fft", {"n": 6}, True),
    ("ifft", {"norm": "ortho"}, True),
    ("rfft", {"n": 9}, False),
    ("rfft", {"n": 4, "norm": "forward"}, False),
    ("irfft", {"n": 7}, True),
    ("irfft", {"n": 8, "norm": "ortho"}, True),
    ("hfft", {"n": 6}, True),
    ("hfft", {"norm": "forward"}, True),
    ("ihfft", {}, False),
    ("ihfft", {"n": 7, "norm": "ortho"}, False),
    ("fft2", {"s": (3, 6)}, True),
    ("rfft2", {}, False),
    ("irfft2", {"s": (4, 5)}, True),
    ("rfftn", {"dim": (0, 1)}, False),
    ("irfftn", {"norm": "forward"}, True),
    ("hfftn", {"s": (3, 6)}, True),
    ("ihfft2", {"norm": "forward"}, False),
    ("fftshift", {}, True),
    ("ifftshift", {"dim": 0}, False),
]


@needs_torch
@pytest.mark.parametrize("name, kwargs, complex_input", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_fft_gradients_match_torch(rng, name, kwargs, complex_input):
    import torch

    x = rng.standard_normal((4, 5))
    if complex_input:
        x = x + 1j * rng.standard_normal((4, 5))
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    ey = getattr(ember.fft, name)(ex, **kwargs)
    ty = getattr(torch.fft, name)(tx, **kwargs)
    w = rng.standard_normal(tuple(ty.shape))
    if ty.is_complex():
        w = w + 1j * rng.standard_normal(tuple(ty.shape))
    # a real loss that weighs every output entry differently
    el = (ey * ember.tensor(w)).real.sum() if ey.is_complex() else (ey * ember.tensor(w)).sum()
    tl = (ty * torch.tensor(w)).real.sum() if ty.is_complex() else (ty * torch.tensor(w)).sum()
    el.backward()
    tl.backward()
    assert_close(ex.grad, tx.grad.resolve_conj(), rtol=1e-6, atol=1e-8)
