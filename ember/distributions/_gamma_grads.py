"""The reparameterisation gradients of gamma and Dirichlet draws, as PyTorch computes them.

NOTE [ Approximate gamma and Dirichlet gradients, PyTorch's values ]
The exact pathwise derivative of a Gamma(alpha, 1) draw needs ``dP/dalpha`` of the incomplete
gamma function (``standard_gamma_grad_numpy`` in ``_sampling.py`` sums it to ~1e-9). PyTorch
instead evaluates cheap closed-form approximations from Jankowiak & Obermeyer, "Pathwise
derivatives beyond the reparameterization trick" (ICML 2018), accurate to ~1e-3, and a
Dirichlet draw's gradient is not the normalised gammas' gradient at all but an approximation of
the Beta marginal's (each coordinate x_i ~ Beta(alpha_i, total - alpha_i)). Both are valid
(unbiased) estimators of the same expected gradient, but they differ per sample by up to a few
percent (Dirichlet) or ~1e-3 (gamma), so a model trained with ``rsample`` followed a different
path in ember. PyTorch's behaviour is the spec: the functions here evaluate the same
approximations, regime by regime, vectorised over float64 arrays:

- gamma: a Taylor series of the lower incomplete gamma for ``x < 0.8``; for ``alpha > 8`` a
  Rice saddle-point expansion (a polynomial within 10% of ``alpha``, where the expansion is
  singular); otherwise ``exp(p(u, v) / q(u, v))``, a rational fit in ``u = log(x / alpha)``
  and ``v = log(alpha)`` with the paper's coefficients.
- Dirichlet, coordinate ``x`` with ``alpha`` and ``beta = total - alpha``: Taylor series in
  ``x`` (or ``1 - x``) near the ends of the interval, a saddle-point expansion when ``alpha``
  and ``beta`` both exceed 6, else a rational correction (the paper's 2x3x3x4 coefficients
  in ``log x``, ``log(alpha / x)``, ``log total``) to ``x (digamma(total) - digamma(alpha)) /
  beta``.

A series that overflows to NaN gives 0, as PyTorch's does. Float32 inputs are evaluated in
float64 (PyTorch sums the Dirichlet end series in float32, so its float32 values there differ
from these by up to ~2e-4 relative).
"""

from __future__ import annotations

import numpy as np


def _digamma(a):
    from .._lazy_import import import_module

    return import_module("scipy.special").digamma(a)


# the rational fit of the gamma gradient: rows are the u^0, u^1, u^2 parts; the first four
# columns give p's coefficients in powers of v, the last four q's
_GAMMA_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1.0, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07],
])

# the rational correction of the Dirichlet gradient: [numerator/denominator][power of log x]
# [power of log(alpha / x)][power of log(total) - log(alpha / x)]
_DIRICHLET_C = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1.0, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]],
])


def _horner(coefs, t):
    """``sum_k coefs[k] t^k`` (coefs a sequence of arrays or numbers)."""
    acc = coefs[-1]
    for c in coefs[-2::-1]:
        acc = c + t * acc
    return acc


def _nan_to_zero(r):
    return np.where(np.isnan(r), 0.0, r)


def standard_gamma_grad(alpha, x):
    """``dx/dalpha`` of Gamma(``alpha``, 1) draws ``x``, PyTorch's approximation (NOTE
    [ Approximate gamma and Dirichlet gradients, PyTorch's values ]); float64 arrays."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        # x < 0.8: d/dalpha of P(alpha, x) from six terms of its series, over the density
        term, denom = np.ones_like(x), alpha.copy()
        s1, s2 = 1.0 / denom, 1.0 / (denom * denom)
        for i in range(1, 6):
            term = term * (-x / i)
            denom = denom + 1.0
            s1 = s1 + term / denom
            s2 = s2 + term / (denom * denom)
        x_pow_a = x ** alpha
        cdf_alpha = (np.log(x) - _digamma(alpha)) * x_pow_a * s1 - x_pow_a * s2
        small_x = _nan_to_zero(-cdf_alpha / (x ** (alpha - 1.0) * np.exp(-x)))
        # alpha > 8: saddle point; its polynomial stand-in where x is within 10% of alpha
        near = ((1.0 + 24.0 * alpha * (1.0 + 12.0 * alpha))
                * (1440.0 * alpha * alpha + 6.0 * x * (53.0 - 120.0 * x)
                   - 65.0 * x * x / alpha + alpha * (107.0 + 3600.0 * x))
                / (1244160.0 * alpha ** 4))
        root = np.sqrt(8.0 * alpha)
        t2 = root / (alpha - x)
        t3 = (x - alpha - alpha * np.log(x / alpha)) ** -1.5
        t1 = (np.log(x / alpha) * np.where(x < alpha, t2 - t3, t2 + t3)
              - np.sqrt(2.0 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x)))
        stirling = 1.0 + 1.0 / (12.0 * alpha) * (1.0 + 1.0 / (24.0 * alpha))
        far = -stirling * x * t1 / root
        # otherwise: the rational fit
        u, v = np.log(x / alpha), np.log(alpha)
        cv = [_horner(list(_GAMMA_UV[:, k]), u) for k in range(8)]
        fit = np.exp(_horner(cv[:4], v) / _horner(cv[4:], v))
        near_mean = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
        return np.where(x < 0.8, small_x,
                        np.where(alpha > 8.0, np.where(near_mean, near, far), fit))


def _beta_grad_alpha_small(x, alpha, beta):
    # d x / d alpha of a Beta(alpha, beta) draw near x = 0: series in x
    factor = _digamma(alpha) - _digamma(alpha + beta) - np.log(x)
    term = np.ones_like(x)
    series = term / alpha * (factor + 1.0 / alpha)
    for i in range(1, 11):
        term = term * (i - beta) * x / i
        d = alpha + i
        series = series + term / d * (factor + 1.0 / d)
    return _nan_to_zero(x * (1.0 - x) ** -beta * series)


def _beta_grad_beta_small(x, alpha, beta):
    # d x / d beta of a Beta(alpha, beta) draw near x = 0: series in x
    factor = _digamma(alpha + beta) - _digamma(beta)
    term, falling, d_falling = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        term = term * (-x / i)
        d_falling = d_falling * (beta - i) + falling
        falling = falling * (beta - i)
        series = series + term / (alpha + i) * (d_falling + factor * falling)
    return _nan_to_zero(-(1.0 - x) ** (1.0 - beta) * series)


def _beta_grad_alpha_mid(x, alpha, beta):
    # d x / d alpha of a Beta(alpha, beta) draw, alpha and beta both large: saddle point
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1.0)) / total
    b2 = beta * beta
    poly = 47.0 * x * b2 * b2 + alpha * (
        (43.0 + 20.0 * (16.0 + 27.0 * beta) * x) * b2 * beta + alpha * (
            3.0 * (59.0 + 180.0 * beta - 90.0 * x) * b2 + alpha * (
                (453.0 + 1620.0 * beta * (1.0 - x) - 455.0 * x) * beta + alpha * (
                    8.0 * (1.0 - x) * (135.0 * beta - 11.0)))))
    near = ((1.0 + 12.0 * alpha) * (1.0 + 12.0 * beta) / (total * total) / (1.0 - x) * poly
            / (12960.0 * alpha ** 3 * b2 * (1.0 + 12.0 * total)))
    prefactor = -x / np.sqrt(2.0 * alpha * beta / total)

    def corr(t):
        return 1.0 + 1.0 / (12.0 * t) + 1.0 / (288.0 * t * t)

    stirling = corr(alpha) * corr(beta) / corr(total)
    axbx = alpha * (x - 1.0) + beta * x
    t1 = ((2.0 * alpha * alpha * (x - 1.0) + alpha * beta * (x - 1.0) - x * b2)
          / (np.sqrt(2.0 * alpha / beta) * total ** 1.5 * axbx * axbx))
    t2 = 0.5 * np.log(alpha / (total * x))
    t3 = np.sqrt(8.0 * alpha * beta / total) / axbx
    t4 = (beta * np.log(beta / (total * (1.0 - x)))
          + alpha * np.log(alpha / (total * x))) ** -1.5
    far = stirling * prefactor * (t1 + t2 * (t3 + np.where(x < mean, t4, -t4)))
    return np.where((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std), near, far)


def dirichlet_grad(x, alpha, total):
    """``dx_i/dalpha_i`` of Dirichlet draws ``x`` with concentrations ``alpha`` summing to
    ``total``, PyTorch's approximation (NOTE [ Approximate gamma and Dirichlet gradients,
    PyTorch's values ]); float64 arrays, broadcast together."""
    x, alpha, total = np.broadcast_arrays(
        *(np.asarray(v, np.float64) for v in (x, alpha, total)))
    beta = total - alpha
    boundary = total * x * (1.0 - x)
    with np.errstate(all="ignore"):
        u = np.log(x)
        a = np.log(alpha) - u
        b = np.log(total) - a
        pu, pa = (1.0, u, u * u), (1.0, a, a * a)
        p = q = 0.0
        for i in range(3):
            for j in range(3):
                ua = pu[i] * pa[j]
                p = p + ua * _horner(list(_DIRICHLET_C[0, i, j]), b)
                q = q + ua * _horner(list(_DIRICHLET_C[1, i, j]), b)
        fit = p / q * x * (_digamma(total) - _digamma(alpha)) / beta
        return np.where(
            (x <= 0.5) & (boundary < 2.5), _beta_grad_alpha_small(x, alpha, beta),
            np.where((x >= 0.5) & (boundary < 0.75), -_beta_grad_beta_small(1.0 - x, beta, alpha),
                     np.where((alpha > 6.0) & (beta > 6.0), _beta_grad_alpha_mid(x, alpha, beta),
                              fit)))
