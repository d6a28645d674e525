"""Classical orthogonal polynomials of ``torch.special``: Chebyshev (four kinds, plain and
shifted to ``[0, 1]``), Hermite (physicists' and probabilists'), Laguerre and Legendre.

Each is an element-wise op of ``(x, n)``; ``n`` is truncated to an integer, and a negative
(or non-finite) degree gives 0. Values come from the three-term recurrence, run for the
largest degree present with a mask per element. The Chebyshev polynomials switch to their
trigonometric closed form for ``|x| < 1`` and high degree, where the recurrence would cost
more and be no more accurate. PyTorch defines no derivatives for these: results never
require grad. Half-precision and complex inputs raise NotImplementedError, as in PyTorch.

The ops are exposed by ``ember/special.py`` only (they are not ``ember.<name>``).
"""

from __future__ import annotations

import math

import numpy as np

from .._core.checks import holds_values
from .._core.tensor import Tensor
from ._elementwise import ElementwiseOp, elementwise, promote

# ------------------------------------------------------------------------------------------------
# the recurrence


def _degree(xp, n):
    """``n`` truncated to int64; NaN and infinities become -1 (a zero polynomial)."""
    finite = xp.isfinite(n)
    return xp.where(finite, xp.trunc(xp.where(finite, n, 0)), -1).astype(np.int64)


def _recur(xp, x, k, p0, p1, step, todo):
    """``P_k(x)`` from ``P_0 = p0``, ``P_1 = p1`` and ``P_{j+1} = step(j, P_{j-1}, P_j)``,
    run as far as the largest degree among the elements in ``todo``."""
    top = int(k[todo].max()) if todo.any() else 1
    prev, cur = p0, p1
    out = xp.where(k == 0, p0, p1)
    for j in range(1, top):
        prev, cur = cur, step(j, prev, cur)
        out = xp.where(k == j + 1, cur, out)
        if j % 64 == 0 and bool(xp.isnan(cur).all()) and bool(xp.isnan(prev).all()):
            # NaN from here on (an overflow met inf - inf): a degree of 2**31 ends at once
            return xp.where(k > j + 1, xp.asarray(math.nan, dtype=out.dtype), out)
    return out


def _arrays(xp, x, n):
    dt = x.dtype if hasattr(x, "dtype") else n.dtype
    x, n = xp.broadcast_arrays(xp.asarray(x, dtype=dt), xp.asarray(n, dtype=dt))
    return x, n, _degree(xp, n), dt


def _parity(k):
    return (k % 2) == 0


# ------------------------------------------------------------------------------------------------
# kernels: ``kernel(xp, x, n)`` on arrays of one floating dtype


def _chebyshev_t(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    edge = xp.abs(x) == 1
    trig = (k > 6) & (xp.abs(x) < 1)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, x, lambda j, p, q: 2 * x * q - p, ~trig & ~edge & (k >= 0))
        r = xp.where(trig, xp.cos(k * xp.arccos(xp.clip(x, -1, 1))), r)
    r = xp.where(edge, xp.where((x > 0) | _parity(k), one, -one), r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _chebyshev_u(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    edge = xp.abs(x) == 1
    trig = (k > 8) & (xp.abs(x) < 1)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, 2 * x, lambda j, p, q: 2 * x * q - p, ~trig & ~edge & (k >= 0))
        t = xp.arccos(xp.clip(x, -1, 1))
        s = xp.sin(t)
        closed = xp.where(s != 0, xp.sin((k + 1) * t) / s, (k + 1) * xp.cos((k + 1) * t) / x)
        r = xp.where(trig, closed, r)
    m = (k + 1).astype(dt)
    r = xp.where(edge, xp.where((x > 0) | _parity(k), m, -m), r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _chebyshev_v(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    edge = xp.abs(x) == 1
    trig = (k > 8) & (xp.abs(x) < 1)
    m = (2 * k + 1).astype(dt)
    at_minus_one = xp.where(_parity(k), m, -m)  # V_n(-1) = (-1)^n (2n + 1)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, 2 * x - 1, lambda j, p, q: 2 * x * q - p,
                   ~trig & ~edge & (k >= 0))
        t = xp.arccos(xp.clip(x, -1, 1))
        closed = xp.where(xp.sin(t / 2) != 1, xp.cos((k + 0.5) * t) / xp.cos(t / 2),
                          at_minus_one)
        r = xp.where(trig, closed, r)
    r = xp.where(edge, xp.where(x > 0, one, at_minus_one), r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _chebyshev_w(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    edge = xp.abs(x) == 1
    trig = (k > 8) & (xp.abs(x) < 1)
    at_one = (2 * k + 1).astype(dt)  # W_n(1) = 2n + 1, W_n(-1) = (-1)^n
    at_edge = xp.where(x > 0, at_one, xp.where(_parity(k), one, -one))
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, 2 * x + 1, lambda j, p, q: 2 * x * q - p,
                   ~trig & ~edge & (k >= 0))
        t = xp.arccos(xp.clip(x, -1, 1))
        closed = xp.where(xp.cos(t / 2) != 1, xp.sin((k + 0.5) * t) / xp.sin(t / 2), at_edge)
        r = xp.where(trig, closed, r)
    r = xp.where(edge, at_edge, r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _shifted(kernel):
    """The polynomial on ``[0, 1]``: ``P*_n(x) = P_n(2x - 1)``."""

    def shifted(xp, x, n):
        x = xp.asarray(x, dtype=x.dtype if hasattr(x, "dtype") else n.dtype)
        return kernel(xp, 2 * x - 1, n)

    return shifted


def _hermite_h(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, xp.ones_like(x), 2 * x, lambda j, p, q: 2 * x * q - 2 * j * p,
                   k >= 0)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _hermite_he(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, xp.ones_like(x), x, lambda j, p, q: x * q - j * p, k >= 0)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _laguerre_l(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, 1 - x, lambda j, p, q: ((2 * j + 1 - x) * q - j * p) / (j + 1),
                   (k >= 0) & (x != 0))
    r = xp.where(x == 0, one, r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


def _legendre_p(xp, x, n):
    x, n, k, dt = _arrays(xp, x, n)
    one = xp.ones_like(x)
    edge = xp.abs(x) == 1
    with np.errstate(all="ignore"):
        r = _recur(xp, x, k, one, x, lambda j, p, q: ((2 * j + 1) * x * q - j * p) / (j + 1),
                   ~edge & (k >= 0))
    r = xp.where(edge, xp.where((x > 0) | _parity(k), one, -one), r)
    return xp.where(k < 0, xp.zeros_like(x), r).astype(dt, copy=False)


# ------------------------------------------------------------------------------------------------
# public functions


def _shape_only(kernel):
    """On arrays without values (the meta device) the result is a placeholder of the
    broadcast shape: the recurrence's length depends on the degrees' values."""

    def run(xp, x, n):
        arrays = [a for a in (x, n) if hasattr(a, "shape")]
        if not all(holds_values(a) for a in arrays):
            shape = np.broadcast_shapes(*(a.shape for a in arrays))
            return xp.empty(shape, arrays[0].dtype)
        return kernel(xp, x, n)

    return run


def _declare(name, kernel, summary, example):
    op = ElementwiseOp("special_" + name, _shape_only(kernel), promote="float", allow=(0, 1, 2))

    def check(args):
        _, result, _ = promote(op, args)
        if result.np not in (np.float32, np.float64):
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{result.scalar_name}'")

    def fn(x, n, *, out=None):
        if not isinstance(x, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"{name}(): expected x or n to be a Tensor, got two numbers")
        for v in (x, n):
            if isinstance(v, Tensor) and v.dtype.is_complex:
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                          f"'{v.dtype.scalar_name}'")
        check((x, n))
        return elementwise(op, (x, n), out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""{summary}

    Args:
        x (Tensor or Number): the points to evaluate at.
        n (Tensor or Number): the degree, truncated to an integer; negative degrees give 0.
            At least one of ``x`` and ``n`` must be a Tensor.
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: the polynomial of degree ``n`` at ``x`` (no gradient flows through it).

    Example::

        >>> import ember
        >>> {example}
    """
    return op, fn


_chebyshev_t_op, chebyshev_polynomial_t = _declare(
    "chebyshev_polynomial_t", _chebyshev_t, "Chebyshev polynomial of the first kind T_n(x).",
    "ember.special.chebyshev_polynomial_t(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [-0.5, 7.0]")
_chebyshev_u_op, chebyshev_polynomial_u = _declare(
    "chebyshev_polynomial_u", _chebyshev_u, "Chebyshev polynomial of the second kind U_n(x).",
    "ember.special.chebyshev_polynomial_u(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [0.0, 15.0]")
_chebyshev_v_op, chebyshev_polynomial_v = _declare(
    "chebyshev_polynomial_v", _chebyshev_v, "Chebyshev polynomial of the third kind V_n(x).",
    "ember.special.chebyshev_polynomial_v(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [-1.0, 11.0]")
_chebyshev_w_op, chebyshev_polynomial_w = _declare(
    "chebyshev_polynomial_w", _chebyshev_w, "Chebyshev polynomial of the fourth kind W_n(x).",
    "ember.special.chebyshev_polynomial_w(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [1.0, 19.0]")
_schebyshev_t_op, shifted_chebyshev_polynomial_t = _declare(
    "shifted_chebyshev_polynomial_t", _shifted(_chebyshev_t),
    "Shifted Chebyshev polynomial of the first kind ``T_n(2x - 1)``.",
    "ember.special.shifted_chebyshev_polynomial_t(ember.tensor([0.5, 1.0]), 2).tolist()\n"
    "        [-1.0, 1.0]")
_schebyshev_u_op, shifted_chebyshev_polynomial_u = _declare(
    "shifted_chebyshev_polynomial_u", _shifted(_chebyshev_u),
    "Shifted Chebyshev polynomial of the second kind ``U_n(2x - 1)``.",
    "ember.special.shifted_chebyshev_polynomial_u(ember.tensor([0.5, 1.0]), 2).tolist()\n"
    "        [-1.0, 3.0]")
_schebyshev_v_op, shifted_chebyshev_polynomial_v = _declare(
    "shifted_chebyshev_polynomial_v", _shifted(_chebyshev_v),
    "Shifted Chebyshev polynomial of the third kind ``V_n(2x - 1)``.",
    "ember.special.shifted_chebyshev_polynomial_v(ember.tensor([0.5, 1.0]), 2).tolist()\n"
    "        [-1.0, 1.0]")
_schebyshev_w_op, shifted_chebyshev_polynomial_w = _declare(
    "shifted_chebyshev_polynomial_w", _shifted(_chebyshev_w),
    "Shifted Chebyshev polynomial of the fourth kind ``W_n(2x - 1)``.\n\n"
    "    Differences from PyTorch:\n        NaN, infinite and near-overflow inputs: ember can "
    "return NaN where PyTorch returns a finite value.",
    "ember.special.shifted_chebyshev_polynomial_w(ember.tensor([0.5, 1.0]), 2).tolist()\n"
    "        [-1.0, 5.0]")
_hermite_h_op, hermite_polynomial_h = _declare(
    "hermite_polynomial_h", _hermite_h, "Physicists' Hermite polynomial H_n(x).",
    "ember.special.hermite_polynomial_h(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [-1.0, 14.0]")
_hermite_he_op, hermite_polynomial_he = _declare(
    "hermite_polynomial_he", _hermite_he, "Probabilists' Hermite polynomial He_n(x).",
    "ember.special.hermite_polynomial_he(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [-0.75, 3.0]")
_laguerre_l_op, laguerre_polynomial_l = _declare(
    "laguerre_polynomial_l", _laguerre_l, "Laguerre polynomial L_n(x).",
    "ember.special.laguerre_polynomial_l(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [0.125, -1.0]")
_legendre_p_op, legendre_polynomial_p = _declare(
    "legendre_polynomial_p", _legendre_p, "Legendre polynomial P_n(x).",
    "ember.special.legendre_polynomial_p(ember.tensor([0.5, 2.0]), 2).tolist()\n"
    "        [-0.125, 5.5]")
