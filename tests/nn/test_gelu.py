"""Exact GELU in float32: ember's own normal CDF (NOTE [ Float32 normal CDF ]) against the
float64 truth, and the op's saved derivative against PyTorch."""

import numpy as np
import pytest
import scipy.special as sp

import ember
from ember._ops import nn_ops
from tests.conftest import HAS_TORCH


def _ulps(got, want):
    """Distance in float32 ulps of the exact value."""
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32))


def test_float32_gelu_and_derivative_within_a_few_ulps():
    x = np.linspace(-13, 13, 1_000_001).astype(np.float32)   # many chunks, ragged last one
    out, der = nn_ops._gelu_f32(x)
    xd = x.astype(np.float64)
    cdf = sp.ndtr(xd)
    exact = xd * cdf
    exact_der = cdf + xd * np.exp(-xd * xd / 2) / np.sqrt(2 * np.pi)
    # relative accuracy holds for negative x too, where 1 + erf(x / sqrt 2) would cancel
    assert _ulps(out, exact).max() < 100
    assert np.median(_ulps(out, exact)) < 4
    assert np.abs(der - exact_der).max() < 4e-7
    # Phi(0) is exactly one half
    zero_out, zero_der = nn_ops._gelu_f32(np.zeros(3, np.float32))
    assert (zero_der == 0.5).all() and (zero_out == 0).all()


def test_float32_gelu_special_values_and_layouts():
    x = np.array([np.inf, -np.inf, np.nan, 40.0, -40.0], np.float32)
    out, der = nn_ops._gelu_f32(x)
    assert out[0] == np.inf and np.isnan(out[2]) and out[3] == 40 and out[4] == 0
    assert der[3] == 1 and der[4] == 0 and np.isnan(der[2])
    grid = np.random.default_rng(0).standard_normal((6, 7)).astype(np.float32)
    strided, _ = nn_ops._gelu_f32(grid.T)
    assert strided.shape == (7, 6)
    np.testing.assert_array_equal(strided, nn_ops._gelu_f32(np.ascontiguousarray(grid.T))[0])
    scalar, scalar_der = nn_ops._gelu_f32(np.array(1.5, np.float32))
    assert scalar.shape == () and abs(scalar - 1.5 * sp.ndtr(1.5)) < 1e-6


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_gelu_values_and_gradients_match_torch(dtype):
    import torch

    a = np.random.default_rng(1).standard_normal((64, 33)) * 3
    x = ember.tensor(a, dtype=getattr(ember, dtype), requires_grad=True)
    tx = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
    y, ty = ember.nn.functional.gelu(x), torch.nn.functional.gelu(tx)
    g = np.random.default_rng(2).standard_normal(a.shape)
    y.backward(ember.tensor(g, dtype=y.dtype))
    ty.backward(torch.tensor(g, dtype=ty.dtype))
    tol = {"float32": 2e-6, "float64": 1e-12, "bfloat16": 2e-2}[dtype]
    np.testing.assert_allclose(y.detach().float().numpy(), ty.detach().float().numpy(),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(),
                               rtol=tol, atol=tol)


def test_gelu_double_backward_rebuilds_the_derivative():
    from ember.autograd import gradgradcheck

    x = ember.tensor(np.linspace(-3, 3, 7), requires_grad=True)
    assert gradgradcheck(ember.nn.functional.gelu, (x,))


def _gelu_grad_input(n):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    x[:7] = [0.0, -0.0, 30.0, -30.0, np.inf, -np.inf, np.nan]
    return x, rng.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("n", [7, 300, 1 << 19])   # one call, and pieces on threads
def test_gelu_backward_fused_pass_matches_the_numpy_derivative(n, monkeypatch):
    pytest.importorskip("numba")
    from ember import _kernels

    old = _kernels.set_backend("numba")
    try:
        x, g = _gelu_grad_input(n)
        with np.errstate(all="ignore"):
            fused = _kernels.gelu_backward(g, x)
            monkeypatch.setattr(_kernels, "gelu_backward", lambda g, x: None)
            plain = nn_ops._gelu_backward_kernel(np, g, x)
        assert fused is not None and fused.dtype == np.float32
        assert np.array_equal(np.isnan(fused), np.isnan(plain))
        ok = ~np.isnan(plain)
        # the derivative to a few 1e-7 absolute (it cancels near x = -0.75), times g
        err = np.abs(fused[ok].astype(np.float64) - plain[ok])
        assert (err <= 2e-6 * np.abs(plain[ok]) + 8e-7 * np.abs(g[ok])).all()
    finally:
        _kernels.set_backend(old)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_gelu_node_saves_only_its_input(dtype):
    # NOTE [ GELU saves only its input ]: no derivative array lives from forward to backward
    packed = []

    def pack(t):
        packed.append(t)
        return t

    x = ember.randn(4, 5, dtype=getattr(ember, dtype), requires_grad=True)
    with ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = ember.nn.functional.gelu(x)
    assert len(packed) == 1 and packed[0] is x
    if HAS_TORCH:
        import torch

        seen = []
        tx = torch.randn(4, 5, dtype=getattr(torch, dtype), requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t,
                                                      lambda t: t):
            torch.nn.functional.gelu(tx)
        assert len(seen) == len(packed)
    y.backward(ember.ones_like(y))
    assert x.grad.dtype == x.dtype and x.grad.shape == x.shape


def test_gelu_result_written_in_place_leaves_backward_valid():
    # the node keeps no reference to its result, so writing into it is allowed, as in torch
    a = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    x = ember.tensor(a, requires_grad=True)
    y = ember.nn.functional.gelu(x)
    y.mul_(2)
    y.sum().backward()
    if HAS_TORCH:
        import torch

        tx = torch.tensor(a, requires_grad=True)
        ty = torch.nn.functional.gelu(tx)
        ty.mul_(2)
        ty.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=2e-6, atol=2e-6)
