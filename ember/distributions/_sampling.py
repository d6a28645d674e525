"""Samplers that ember's op registry does not have yet: standard gamma (PyTorch's draws on
the CPU, NOTE [ Gamma draws on the generator's stream ] in ``ember/_core/rng_sequential.py``,
with its implicit reparameterisation gradient), Dirichlet, binomial; and the regularised
incomplete gamma function for ``Gamma.cdf``.

NOTE [ Implicit reparameterisation of the gamma ]
A Gamma(alpha, 1) draw ``x`` has no closed form as a function of ``alpha`` and noise, so the
pathwise gradient comes from the CDF instead: holding ``u = P(alpha, x)`` fixed,
``dx/dalpha = -(dP/dalpha) / p(x; alpha)`` with ``P`` the regularised lower incomplete gamma
function and ``p`` the density. For ``x < alpha + 1`` (and moderate ``alpha``) ``P`` is the
series ``x^a e^-x / Gamma(a+1) * sum_n x^n / ((a+1)...(a+n))``, whose ``alpha``-derivative is
summed term by term; with ``prefactor / p = x / alpha`` this gives

    dx/dalpha = -(x / alpha) (S (log x - digamma(alpha + 1)) + dS/dalpha).

Elsewhere ``dP/dalpha`` is a central difference of SciPy's ``gammainc``/``gammaincc`` in
float64 (relative error ~1e-9, far below the noise of any stochastic gradient). Beta and
Dirichlet draws are normalised gamma draws, so they inherit this gradient through autograd.

The draws' backward passes do not use this exact gradient but PyTorch's approximations (NOTE
[ Approximate gamma and Dirichlet gradients, PyTorch's values ] in ``_gamma_grads.py``), so
that ``rsample`` trains as it does in PyTorch; the exact one is their yardstick in the tests.
"""

from __future__ import annotations

import numpy as np
import ember
from ember._core.generator import numpy_generator, resolve

from .._core.rng_sequential import binomial_array, standard_gamma_array
from ._gamma_grads import dirichlet_grad, standard_gamma_grad


def _special():
    # SciPy's special functions take ~0.4 s to import: load them on first use
    from .._lazy_import import import_module

    return import_module("scipy.special")


def _to_numpy(t):
    return t.detach().cpu().numpy().astype(np.float64)


def _np_dtype(dtype):
    return np.float32 if dtype == ember.float32 else np.float64


def _from_numpy(a, like):
    arr = np.array(a, dtype=np.float64)  # a copy, C-contiguous, keeps 0-d shapes
    return ember.from_numpy(arr).to(dtype=like.dtype, device=like.device)


def standard_gamma_grad_numpy(alpha, x):
    """``dx/dalpha`` for Gamma(alpha, 1) draws ``x`` (NOTE [ Implicit reparameterisation of
    the gamma ]), elementwise on float64 arrays."""
    _sp = _special()
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    out = np.zeros(alpha.shape)
    tiny = np.finfo(np.float64).tiny
    x = np.maximum(x, tiny)
    series = (x < alpha + 1) & (alpha < 100)
    if series.any():
        a, xs = alpha[series], x[series]
        total, d_total = np.ones_like(a), np.zeros_like(a)
        term, harmonic = np.ones_like(a), np.zeros_like(a)
        for n in range(1, 2000):
            term = term * xs / (a + n)
            harmonic = harmonic + 1.0 / (a + n)
            total += term
            d_total -= term * harmonic
            if np.all(term * np.maximum(harmonic, 1.0) < 1e-17 * total):
                break
        out[series] = -(xs / a) * (total * (np.log(xs) - _sp.digamma(a + 1)) + d_total)
    rest = ~series
    if rest.any():
        a, xs = alpha[rest], x[rest]
        h = 1e-5 * np.maximum(a, 1.0) * np.where(a < 1, a, 1.0)
        lower = xs < a  # differentiate whichever tail is not close to 1
        p_hi = np.where(lower, _sp.gammainc(a + h, xs), -_sp.gammaincc(a + h, xs))
        p_lo = np.where(lower, _sp.gammainc(a - h, xs), -_sp.gammaincc(a - h, xs))
        dp = (p_hi - p_lo) / (2 * h)
        log_pdf = (a - 1) * np.log(xs) - xs - _sp.gammaln(a)
        out[rest] = -dp * np.exp(-log_pdf)
    return out


class _StandardGamma(ember.autograd.Function):
    """Gamma(alpha, 1) draws with PyTorch's reparameterisation gradient."""

    @staticmethod
    def forward(ctx, alpha, generator=None):
        a = _to_numpy(alpha)
        if alpha.device.type == "cpu":
            # PyTorch's draws from the same seed (NOTE [ Gamma draws on the generator's
            # stream ]); it has no half-precision kernel
            if alpha.dtype not in (ember.float32, ember.float64):
                name = {ember.float16: "Half", ember.bfloat16: "BFloat16"}.get(
                    alpha.dtype, str(alpha.dtype))
                raise NotImplementedError(f'"gamma_cpu" not implemented for \'{name}\'')
            x = standard_gamma_array(resolve(generator), a, _np_dtype(alpha.dtype))
        else:
            x = numpy_generator(generator, alpha.device).standard_gamma(a)
            # a draw of exactly 0 (possible in float32 for tiny alpha) breaks log-densities
            x = np.maximum(x, np.finfo(np.float32).tiny)
        out = _from_numpy(x, alpha)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        dx = standard_gamma_grad(_to_numpy(alpha), _to_numpy(x))
        return grad * _from_numpy(dx, alpha), None


def standard_gamma(alpha, generator=None):
    """Draws from Gamma(``alpha``, 1), one per entry; differentiable in ``alpha``.

    Args:
        alpha (Tensor): positive concentrations.
        generator (Generator, optional): where the draws come from (the default one).

    Returns:
        Tensor: same shape and dtype.
    """
    return _StandardGamma.apply(alpha, generator)


class _Dirichlet(ember.autograd.Function):
    """Dirichlet draws (normalised gamma draws) with PyTorch's gradient: not the normalised
    gammas' but each coordinate's as a Beta(alpha_i, total - alpha_i) draw (NOTE
    [ Approximate gamma and Dirichlet gradients, PyTorch's values ])."""

    @staticmethod
    def forward(ctx, concentration, generator=None):
        # NOTE [ Dirichlet draws in float64 ]: as PyTorch's CPU kernel, the gammas are drawn
        # and normalised in float64 (a float32 gamma draw underflows for small alpha), then
        # rounded and clamped into [tiny, 1) of the dtype: bit for bit PyTorch's draws
        with ember.no_grad():
            g = standard_gamma(concentration.to(ember.float64), generator)
            x = (g / g.sum(-1, keepdim=True)).to(concentration.dtype)
            info = ember.finfo(x.dtype)
            x = x.clamp(min=info.tiny, max=1.0 - info.eps / 2)
        ctx.save_for_backward(concentration, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        concentration, x = ctx.saved_tensors
        a = _to_numpy(concentration)
        dx = _from_numpy(dirichlet_grad(_to_numpy(x), a, a.sum(-1, keepdims=True)), x)
        # moving alpha_i moves x_i by dx_i and takes it from every x_j in proportion to x_j
        return dx * (grad - (x * grad).sum(-1, keepdim=True)), None


def dirichlet(concentration, generator=None):
    """Draws from Dirichlet(``concentration``) over the last dimension, as normalised gamma
    draws; differentiable in ``concentration`` by PyTorch's approximate gradient."""
    return _Dirichlet.apply(concentration, generator)


def binomial(count, prob):
    """Binomial(``count``, ``prob``) draws (float, same dtype as ``prob``), not
    differentiable: on the CPU PyTorch's numbers from the same seed (NOTE [ Binomial draws
    on the generator's stream ] in ``ember/_core/rng_sequential.py``)."""
    n = _to_numpy(count)
    p = _to_numpy(prob)
    n, p = np.broadcast_arrays(n, p)
    if prob.device.type == "cpu":
        draws = binomial_array(resolve(None), n, p)
    else:
        p = np.clip(p, 0.0, 1.0)
        draws = numpy_generator(None, prob.device).binomial(n.astype(np.int64), p)
    return _from_numpy(draws.astype(np.float64), prob)


class _GammaInc(ember.autograd.Function):
    """The regularised lower incomplete gamma ``P(a, x)``; differentiable in ``x`` only."""

    @staticmethod
    def forward(ctx, a, x):
        a_np, x_np = _to_numpy(a), _to_numpy(x)
        out = _from_numpy(_special().gammainc(a_np, x_np), x)
        ctx.save_for_backward(a, x)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(
                "the derivative of the incomplete gamma function with respect to its first "
                "argument (the concentration) is not implemented")
        # dP/dx is the Gamma(a, 1) density
        log_pdf = (a - 1) * ember.log(x) - x - ember.lgamma(a)
        return None, _unbroadcast(grad * log_pdf.exp(), x.shape)


def _unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


def gammainc(a, x):
    """The regularised lower incomplete gamma function ``P(a, x)`` (broadcast)."""
    a, x = ember.broadcast_tensors(a, x)
    return _GammaInc.apply(a, x)
