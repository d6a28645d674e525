"""Point-wise ops beyond plain math: special functions (error functions, gamma family,
Bessel functions, entropy, zeta), closeness and equality tests, and complex numbers.

Most have no NumPy ufunc. Their kernels call ``scipy.special`` on the CPU and
``cupyx.scipy.special`` on CUDA (the same names), picked by ``_sp(xp)`` so each kernel is
still written once against ``xp``. SciPy has no half-precision loops, so every kernel runs
through ``opmath`` (NOTE [ Half-precision opmath ] in pointwise.py) and casts its result
back to the input's dtype.

Ops here that PyTorch exposes only under ``torch.special`` (erfcx, ndtr, i1, zeta, ...) are
not ``ember.<name>``; ``ember/special.py`` imports them.
"""

from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import Tensor
from ._elementwise import ElementwiseOp, _const, elementwise, elementwise_inplace, unary
from ._registry import Op, public
from .indexing import linear_jvp  # forward-mode rules
from .pointwise import (
    _HALF, _c, _f32, _is_complex, _require_tensor, _zero_grad, opmath, unary_op, where,
)

_SPECIAL = {}


def _sp(xp):
    """The special-function module that matches the array namespace ``xp``."""
    mod = _SPECIAL.get(xp)
    if mod is None:
        if getattr(xp, "__name__", "").startswith("cupy"):
            import cupyx.scipy.special as mod
        else:
            # NumPy, and namespaces over NumPy arrays (meta, extension backends): SciPy's
            # functions are ufuncs, so array subclasses take part through __array_ufunc__
            from .._lazy_import import import_module

            mod = import_module("scipy.special")
        _SPECIAL[xp] = mod
    return mod


_INF = float("inf")
_NAN = float("nan")
_EDGE_MASKS = {"neg": lambda a: a < 0, "zero": lambda a: a == 0,
               "inf": lambda a: a == _INF, "-inf": lambda a: a == -_INF}


def scipy_kernel(name, edges=None):
    """Kernel calling ``scipy.special.<name>`` that keeps the input's dtype.

    ``edges`` maps ``"neg"`` (every x < 0), ``"zero"``, ``"inf"`` and ``"-inf"`` to SciPy's
    values there, imposed in that order on other array libraries: ``cupyx.scipy.special``
    answers differently at some of these points (NOTE [ Special values off the CPU ])."""

    @opmath
    def kernel(xp, a, *rest):
        r = xp.asarray(getattr(_sp(xp), name)(a, *rest))
        if edges is not None and xp is not np:
            r = _at_edges(xp, a, r, edges)
        return r.astype(xp.result_type(a, *rest), copy=False)

    kernel.__name__ = name
    return kernel


# NOTE [ Special values off the CPU ]
# ember's values are SciPy's, which torch's CPU kernels agree with at the edges of each
# domain. CuPy's implementations of the same names are other code: on an H100, y0(0) was NaN
# instead of -inf and the modified Bessel functions of the second kind missed their limits.
# Kernels whose functions have such edges name SciPy's values there, and other namespaces
# get them imposed after the call (a few ``where``s; NumPy never pays for them).


def _at_edges(xp, a, r, edges):
    for key, value in edges.items():
        r = xp.where(_EDGE_MASKS[key](a), xp.asarray(value, dtype=r.dtype), r)
    return r


_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)


def _no_half(name, fn):
    """Wrap public ``fn``: PyTorch has no float16/bfloat16 (nor complex) kernel for ``name``."""

    def checked(input, *, out=None):
        if isinstance(input, Tensor) and (input._data.dtype in _HALF
                                          or input._data.dtype.kind == "c"):
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{input.dtype.scalar_name}'")
        return fn(input, out=out)

    checked.__name__ = fn.__name__
    checked.__doc__ = fn.__doc__
    return checked


# ------------------------------------------------------------------------------------------------
# error functions


def _erf_vjp(g, x):
    # (2 / sqrt(pi)) exp(-x^2), then times g: torch's order (visible in float16/bfloat16)
    return (-(x * x)).exp() * (2 / _SQRT_PI) * g


def _erfc_vjp(g, x):
    return (-(x * x)).exp() * (-2 / _SQRT_PI) * g


def _erfinv_vjp(g, _x, *, out):
    return g * (out * out).exp() * (_SQRT_PI / 2)


def _erfcx_vjp(g, x, *, out):
    return g * (2 * x * out - 2 / _SQRT_PI)


def _ndtr_vjp(g, x):
    return g * (x * x * -0.5).exp() / _SQRT_2PI


def _ndtri_vjp(g, _x, *, out):
    return g * (out * out * 0.5).exp() * _SQRT_2PI


def _log_ndtr_vjp(g, x, *, out):
    return g * (x * x * -0.5 - out).exp() / _SQRT_2PI


_REAL = (0, 1, 2)
erf_op, erf = unary_op("erf", scipy_kernel("erf"), allow=_REAL, vjp=_erf_vjp,
                       doc="Error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``.")
erfc_op, erfc = unary_op("erfc", scipy_kernel("erfc"), allow=_REAL, vjp=_erfc_vjp,
                         doc="Complementary error function ``1 - erf(x)``.")
_erfinv_scipy = scipy_kernel("erfinv")


def _erfinv_kernel(xp, a):
    # SciPy answers +0.0 at -0.0; torch keeps the zero's sign (erfinv is odd)
    r = _erfinv_scipy(xp, a)
    return xp.where(a == 0, a.astype(r.dtype, copy=False), r)


erfinv_op, erfinv = unary_op("erfinv", _erfinv_kernel, allow=_REAL, vjp=_erfinv_vjp,
                             doc="Inverse error function on ``[-1, 1]``.")

# torch.special only: declared as ops, exposed by ember/special.py
erfcx_op, _erfcx = unary_op("special_erfcx", scipy_kernel("erfcx"), allow=_REAL,
                            vjp=_erfcx_vjp, method=False, function=False, inplace=False)
def _ndtr_kernel(xp, a):
    """NOTE [ ndtr as torch computes it ]
    torch's ndtr is ``(1 + erf(x * sqrt(1/2))) * 0.5`` in the input's own dtype, not SciPy's
    ``erfc`` form: far left of zero ``1 + erf`` cancels to 0 (``ndtr(-10.)`` is 0, not 7.6e-24)
    and right of zero it is a rounding of 1 + erf. float16/bfloat16 have no vectorised kernel
    in torch, so each of the four steps rounds to the half dtype."""
    erf = _sp(xp).erf
    half = a.dtype if a.dtype in _HALF else None
    if half is None:
        return ((1 + erf(a * a.dtype.type(math.sqrt(0.5)))) * 0.5).astype(a.dtype, copy=False)
    c = np.asarray(math.sqrt(0.5), half).astype(_f32)  # the constant in the half dtype
    t = (a.astype(_f32) * c).astype(half)
    s = (1 + erf(t.astype(_f32)).astype(half).astype(_f32)).astype(half)
    return (s.astype(_f32) * 0.5).astype(half)


ndtr_op, _ndtr = unary_op("special_ndtr", _ndtr_kernel, allow=_REAL, vjp=_ndtr_vjp,
                          method=False, function=False, inplace=False)
ndtri_op, _ndtri = unary_op("special_ndtri", scipy_kernel("ndtri"), allow=_REAL,
                            vjp=_ndtri_vjp, method=False, function=False, inplace=False)
log_ndtr_op, _log_ndtr = unary_op("special_log_ndtr", scipy_kernel("log_ndtr"), allow=_REAL,
                                  vjp=_log_ndtr_vjp, method=False, function=False, inplace=False)

special_erfcx = _no_half("erfcx", _erfcx)
special_erfcx.__doc__ = "Scaled complementary error function ``exp(x**2) * erfc(x)``."
special_ndtr = _ndtr
special_ndtr.__doc__ = "Standard normal CDF: the area under the Gaussian left of ``x``."
special_ndtri = _no_half("ndtri", _ndtri)
special_ndtri.__doc__ = "Inverse of ``ndtr``: the quantile function of the standard normal."
special_log_ndtr = _no_half("log_ndtr", _log_ndtr)
special_log_ndtr.__doc__ = "``log(ndtr(x))``, accurate far into the left tail."


# ------------------------------------------------------------------------------------------------
# gamma family


@opmath
def _lgamma_kernel(xp, a):
    r = _sp(xp).gammaln(a).astype(a.dtype, copy=False)
    # log|Gamma(-inf)| is +inf in PyTorch (SciPy says -inf)
    return xp.where(xp.isneginf(a), a.dtype.type(np.inf), r)


def _lgamma_vjp(g, x):
    return g * digamma(x)


def _digamma_vjp(g, x):
    return g * polygamma(1, x)


lgamma_op, lgamma = unary_op("lgamma", _lgamma_kernel, allow=_REAL, vjp=_lgamma_vjp,
                             doc="``log(|Gamma(x)|)``.")
digamma_op, digamma = unary_op("digamma", scipy_kernel("digamma"), allow=_REAL,
                               vjp=_digamma_vjp,
                               doc="The logarithmic derivative of Gamma, ``psi(x)``.")


@opmath
def _polygamma_kernel(xp, a, *, n):
    s = _sp(xp)
    # cupyx's polygamma reads ``n`` as an array (``where(n == 0, ...)``): give it one
    order = n if xp is np else xp.asarray(n, dtype=a.dtype)
    r = s.digamma(a) if n == 0 else s.polygamma(order, a)
    if n == 1:
        r = _trigamma_reflected(xp, s, a, order, r)
    elif n >= 2 and holds_values(a):
        # torch's Hurwitz zeta at x = inf is NaN, and so is every higher polygamma there
        r = xp.where(xp.asarray(a == math.inf), math.nan, xp.asarray(r))
    return xp.asarray(r).astype(a.dtype, copy=False)


def _trigamma_reflected(xp, s, a, order, r):
    """``polygamma(1, a)`` below 1/2 from the reflection ``pi**2 / sin(pi a)**2 -
    polygamma(1, 1 - a)`` with the sine in ``a``'s precision, as PyTorch computes it: its
    poles (the integers up to 0) are then huge but finite where the rounded ``pi * a`` misses
    the integer (6.58e32 at -1.0 in float64), and -inf gives NaN."""
    if not holds_values(a):  # meta: shapes only
        return r
    r = xp.asarray(r)
    low = a < 0.5
    if not low.any():
        return r
    ft = a.dtype.type
    pi = ft(math.pi)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        sin = xp.sin(a * pi)
        refl = (pi * pi) / (sin * sin) - xp.asarray(s.polygamma(order, 1 - a)).astype(
            a.dtype, copy=False)
    return xp.where(low, refl, r)


def _polygamma_vjp(g, x, *, n):
    return g * polygamma(n + 1, x)


polygamma_op = ElementwiseOp("polygamma", _polygamma_kernel, promote="float", allow=_REAL,
                             vjp=_polygamma_vjp)


def _check_n(name, n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"{name}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{name}: polygamma(n, x) does not support negative n (got {n}).")
    return int(n)


@public(method=False)
def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of the digamma function (``n >= 0``).

    Differences from PyTorch:
        At -inf: ember returns inf where PyTorch returns NaN.
    """
    n = _check_n("polygamma", n)
    _require_tensor("polygamma", "input", input)
    return elementwise(polygamma_op, (input,), {"n": n}, out=out)


def _polygamma_method(self, n):
    """``ember.polygamma(n, self)``."""
    return polygamma(n, self)


def _polygamma_(self, n):
    return elementwise_inplace(polygamma_op, self, (), {"n": _check_n("polygamma_", n)})


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = _polygamma_


@opmath
def _mvlgamma_kernel(xp, a, *, p):
    sp_gammaln = _sp(xp).gammaln

    def gammaln(x):  # SciPy's is -inf at -inf; torch's lgamma (and mvlgamma) +inf
        return xp.where(x == -math.inf, math.inf, sp_gammaln(x))

    r = sum(gammaln(a - j / 2) for j in range(p)) + p * (p - 1) / 4 * math.log(math.pi)
    return xp.asarray(r).astype(a.dtype, copy=False)


def _mvlgamma_vjp(g, x, *, p):
    d = digamma(x)
    for j in range(1, p):
        d = d + digamma(x - j / 2)
    return g * d


mvlgamma_op = ElementwiseOp("mvlgamma", _mvlgamma_kernel, promote="float", allow=_REAL,
                            vjp=_mvlgamma_vjp)


def _check_p(name, p):
    try:
        p = operator.index(p)
    except TypeError:
        raise TypeError(f"{name}(): argument 'p' must be int, not {type(p).__name__}") from None
    if p < 1:
        raise RuntimeError(f"{name}: p has to be greater than or equal to 1 (got {p})")
    return p


@public
def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p``:
    ``sum_{j<p} lgamma(x - j/2) + p(p-1)/4 log(pi)``."""
    p = _check_p("mvlgamma", p)
    _no_bool_mvlgamma(input)
    return elementwise(mvlgamma_op, (input,), {"p": p}, out=out)


def _no_bool_mvlgamma(input):
    if isinstance(input, Tensor) and input.dtype.name == "bool":
        raise RuntimeError("The input tensor may not be a boolean tensor.")


def _mvlgamma_(self, p):
    _no_bool_mvlgamma(self)
    return elementwise_inplace(mvlgamma_op, self, (), {"p": _check_p("mvlgamma_", p)})


Tensor.mvlgamma_ = _mvlgamma_


# regularized incomplete gamma functions: PyTorch differentiates them in ``other`` (x) only;
# asking for the gradient in ``input`` (a) raises at backward time, as it does there


def _igamma_density(a, x):
    """``d/dx P(a, x) = x**(a-1) exp(-x) / Gamma(a)``."""
    return ((a - 1) * x.log() - x - lgamma(a)).exp()


def _igamma_vjp_for(name, sign):
    def vjp(g, a, x, *, needs_input_grad):
        if needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        return None, g * _igamma_density(a, x) * sign

    return vjp


def _check_igamma(name):
    def check(args):
        tensors = [x for x in args if isinstance(x, Tensor)]
        if not any(t.dtype.is_floating_point for t in tensors) or any(
                t.dtype.is_complex for t in tensors):
            bad = next((t for t in tensors if not t.dtype.is_floating_point), tensors[0])
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{bad.dtype.scalar_name}'")

    return check


def _igamma_kernel(name, upper):
    """SciPy's regularized incomplete gamma with torch's answers where a NaN meets a case
    its kernel decides first: ``x == 0`` gives 0 (upper: 1) and ``x == inf`` 1 (upper: 0)
    whatever ``a``; ``a == inf`` with any ``x`` but inf gives 0 (upper: 1), NaN included."""
    base = scipy_kernel(name)

    def kernel(xp, a, x):
        r = base(xp, a, x)
        if not holds_values(r):
            return r
        nan_a, nan_x = xp.isnan(a), xp.isnan(x)
        if not (nan_a.any() or nan_x.any()):
            return r
        lo, hi = xp.asarray(0, dtype=r.dtype), xp.asarray(1, dtype=r.dtype)
        first, last = (hi, lo) if upper else (lo, hi)
        r = xp.where(nan_a & (x == 0), first, r)
        r = xp.where(nan_a & (x == math.inf), last, r)
        return xp.where(nan_x & (a == math.inf), first, r)

    kernel.__name__ = name
    return kernel


igamma_op = ElementwiseOp("igamma", _igamma_kernel("gammainc", False), promote="same",
                          allow=(2,), vjp=_igamma_vjp_for("igamma", 1),
                          check=_check_igamma("igamma"))
igammac_op = ElementwiseOp("igammac", _igamma_kernel("gammaincc", True), promote="same",
                           allow=(2,), vjp=_igamma_vjp_for("igammac", -1),
                           check=_check_igamma("igammac"))


@public(inplace=lambda self, other: _igamma_inplace(igamma_op, "igamma_", self, other))
def igamma(input, other, *, out=None):
    """The regularized lower incomplete gamma function
    ``P(a, x) = 1/Gamma(a) * integral_0^x t**(a-1) exp(-t) dt`` with ``a = input`` and
    ``x = other`` (``torch.special.gammainc``).

    Args:
        input (Tensor): the shape parameter ``a`` (``a > 0``; NaN otherwise).
        other (Tensor): the upper limit ``x`` (``x >= 0``; NaN otherwise).
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: ``P(a, x)`` in the promoted floating dtype. Differentiable in ``other`` only.

    Example::

        >>> round(ember.igamma(ember.tensor(1.0), ember.tensor(1.0)).item(), 4)
        0.6321
    """
    _require_tensor("igamma", "input", input, 1)
    _require_tensor("igamma", "other", other)
    return elementwise(igamma_op, (input, other), out=out)


@public(inplace=lambda self, other: _igamma_inplace(igammac_op, "igammac_", self, other))
def igammac(input, other, *, out=None):
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``
    (``torch.special.gammaincc``); see ``igamma``.

    Args:
        input (Tensor): the shape parameter ``a`` (``a > 0``).
        other (Tensor): the lower limit ``x`` (``x >= 0``).
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: ``Q(a, x)``. Differentiable in ``other`` only.

    Differences from PyTorch:
        float16 inputs holding infinities: ember can return NaN where PyTorch returns 1.

    Example::

        >>> round(ember.igammac(ember.tensor(1.0), ember.tensor(1.0)).item(), 4)
        0.3679
    """
    _require_tensor("igammac", "input", input, 1)
    _require_tensor("igammac", "other", other)
    return elementwise(igammac_op, (input, other), out=out)


def _igamma_inplace(op, name, self, other):
    _require_tensor(name, "other", other, 1)  # a method: positions count after self
    return elementwise_inplace(op, self, (other,))


# ------------------------------------------------------------------------------------------------
# modified Bessel functions


def _i0_vjp(g, x):
    return g * special_i1(x)


def _tiny_safe(x):
    """(|x| > eps, x with eps where not): torch's derivatives of i1 and i1e take their limit
    1/2 wherever |x| <= eps, NaN included, and read x only elsewhere."""
    eps = _dt.finfo(x.dtype).eps
    big = x.abs() > eps
    return big, where(big, x, eps)


def _i1_vjp(g, x, *, out):
    # d i1 = i0 - i1 / x, with the limit 1/2 near 0
    big, safe = _tiny_safe(x)
    return g * where(big, special_i0(safe) - out / safe, 0.5)


def _i0e_vjp(g, x, *, out):
    return g * (special_i1e(x) - x.sign() * out)


def _i1e_vjp(g, x, *, out):
    big, safe = _tiny_safe(x)
    return g * where(big, special_i0e(safe) - out * (safe.sign() + safe.reciprocal()), 0.5)


# SciPy answers NaN at both infinities (as torch), for the first kind and the modified one
_I_EDGES = {"inf": _NAN, "-inf": _NAN}
i0_op, special_i0 = unary_op("i0", scipy_kernel("i0", _I_EDGES), allow=_REAL, vjp=_i0_vjp,
                             doc="Modified Bessel function of the first kind, order 0.")
i0e_op, special_i0e = unary_op("special_i0e", scipy_kernel("i0e", {"inf": 0.0, "-inf": 0.0}),
                               allow=_REAL, vjp=_i0e_vjp, method=False, function=False,
                               inplace=False,
                               doc="Exponentially scaled ``i0``: ``exp(-|x|) * i0(x)``.")
i1_op, special_i1 = unary_op("special_i1", scipy_kernel("i1", _I_EDGES), allow=_REAL, vjp=_i1_vjp,
                             method=False, function=False, inplace=False,
                             doc="Modified Bessel function of the first kind, order 1.")
i1e_op, special_i1e = unary_op("special_i1e", scipy_kernel("i1e", {"inf": 0.0, "-inf": -0.0}),
                               allow=_REAL, vjp=_i1e_vjp, method=False, function=False,
                               inplace=False,
                               doc="Exponentially scaled ``i1``: ``exp(-|x|) * i1(x)``.")
i0 = special_i0

# Bessel functions of the first kind: PyTorch defines no derivative for them
_j0_op, _j0 = unary_op("special_bessel_j0", scipy_kernel("j0", _I_EDGES), allow=_REAL, method=False,
                       function=False, inplace=False)
_j1_op, _j1 = unary_op("special_bessel_j1", scipy_kernel("j1", _I_EDGES), allow=_REAL, method=False,
                       function=False, inplace=False)
special_bessel_j0 = _no_half("bessel_j0", _j0)
special_bessel_j0.__doc__ = "Bessel function of the first kind, order 0."
special_bessel_j1 = _no_half("bessel_j1", _j1)
special_bessel_j1.__doc__ = "Bessel function of the first kind, order 1."


# ------------------------------------------------------------------------------------------------
# entropy, xlog1py, zeta


@opmath
def _entr_kernel(xp, a):
    r = -a * xp.log(a)
    zero, ninf = a.dtype.type(0), a.dtype.type(-np.inf)
    return xp.where(a == 0, zero, xp.where(a < 0, ninf, r))


def _entr_vjp(g, x):
    return g * -(x.log() + 1)


entr_op, special_entr = unary_op("special_entr", _entr_kernel, allow=_REAL, vjp=_entr_vjp,
                                 method=False, function=False, inplace=False,
                                 doc="Elementwise entropy ``-x log x`` (0 at 0, -inf below).")


def _xlog1py_kernel(xp, x, y):
    x, y = xp.asarray(x), xp.asarray(y)
    r = x * xp.log1p(y)
    return xp.where((x == 0) & ~xp.isnan(y), xp.zeros((), r.dtype), r)


def _xlog1py_vjp(g, x, y):
    gx = where((x == 0) & (y <= -1), 0.0, special_xlog1py(g, y))
    return gx, g * x / (1 + y)


xlog1py_op = ElementwiseOp("special_xlog1py", opmath(_xlog1py_kernel), promote="float",
                           allow=_REAL, vjp=_xlog1py_vjp)


def special_xlog1py(input, other, *, out=None):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlog1py(): expected at least one Tensor argument, got two numbers")
    return elementwise(xlog1py_op, (input, other), out=out)


_zeta_scipy = scipy_kernel("zeta")


def _zeta_kernel(xp, x, q):
    # torch's Cephes loop meets 0 * inf at q = +inf (x > 1) and answers NaN; SciPy says 0
    r = _zeta_scipy(xp, x, q)
    return xp.where((q == math.inf) & (x > 1), math.nan, r).astype(r.dtype, copy=False)


zeta_op = ElementwiseOp("special_zeta", _zeta_kernel, promote="float", allow=_REAL)


def special_zeta(input, other, *, out=None):
    """Hurwitz zeta ``sum_k (k + other) ** -input``. No gradient, as in PyTorch."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("zeta(): expected at least one Tensor argument, got two numbers")
    common = _dt.result_type(input, other)  # float16 with bfloat16 runs in float32
    if common.np in _HALF:
        raise NotImplementedError(f"\"zeta_cpu\" not implemented for '{common.scalar_name}'")
    return elementwise(zeta_op, (input, other), out=out)


def special_expit(input, *, out=None):
    """The logistic sigmoid (``ember.sigmoid``)."""
    from .pointwise import sigmoid

    return sigmoid(input, out=out)


# ------------------------------------------------------------------------------------------------
# closeness and equality


def _isclose_kernel(xp, a, b, *, rtol, atol, equal_nan):
    if a.dtype.kind == "b":
        return a == b
    if a.dtype.kind in "iu":
        a, b = a.astype(np.float64), b.astype(np.float64)
    elif a.dtype in _HALF:
        a, b = a.astype(_f32), b.astype(_f32)
    eq = a == b
    with np.errstate(all="ignore"):
        diff = xp.abs(a - b)
        close = xp.isfinite(diff) & (diff <= atol + rtol * xp.abs(b))
    r = eq | close
    if equal_nan:
        r |= xp.isnan(a) & xp.isnan(b)
    return r


isclose_op = Op("isclose", _isclose_kernel)


def _check_close(name, input, other, rtol, atol):
    _require_tensor(name, "input", input, 1)
    _require_tensor(name, "other", other)
    if input._data.dtype != other._data.dtype:
        # PyTorch's words exactly (programs print them): no op name, no hint
        raise RuntimeError(f"{input.dtype.scalar_name} did not match "
                           f"{other.dtype.scalar_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")


@public
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True where ``|input - other| <= atol + rtol * |other|`` (equal infinities are close;
    NaNs are close to each other only with ``equal_nan``).

    Example::

        >>> nan = float("nan")
        >>> ember.isclose(ember.tensor([1.0, nan]), ember.tensor([1.0 + 1e-9, nan])).tolist()
        [True, False]
        >>> ember.allclose(ember.tensor([nan]), ember.tensor([nan]), equal_nan=True)
        True
    """
    _check_close("isclose", input, other, rtol, atol)
    _dt.refuse_no_kernel(input, "mul_cpu_reduced_float")  # PyTorch scales the tolerance first
    try:
        return _dispatch.apply(isclose_op, (input, other),
                               {"rtol": float(rtol), "atol": float(atol),
                                "equal_nan": bool(equal_nan)})
    except ValueError as e:
        raise RuntimeError(
            f"isclose: the shapes {list(input.shape)} and {list(other.shape)} cannot be "
            "broadcast together") from e


@public
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Python bool: every element of ``input`` is close to ``other`` (see ``isclose``)."""
    _check_close("allclose", input, other, rtol, atol)
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@public
@_dispatch.entrance("equal")
def equal(input, other) -> bool:
    """Python bool: same shape and equal elements (NaN is never equal)."""
    _require_tensor("equal", "input", input, 1)
    _require_tensor("equal", "other", other)
    a, b = input._data, other._data
    if a.shape != b.shape:
        return False
    if type(a) is not type(b):
        raise _dispatch.device_mismatch("equal", a, b)
    return builtins.bool((a == b).all())


# ------------------------------------------------------------------------------------------------
# complex numbers
#
# NOTE [ Conjugate views ]
# PyTorch's conj() returns a lazily conjugated *view* (is_conj() is True until resolved).
# ember has no conjugate bit: conj() of a complex tensor returns a conjugated copy and of a
# real tensor the tensor itself, so is_conj()/is_neg() are always False and resolve_conj()/
# resolve_neg() return their input. Values and gradients agree with PyTorch; only writes
# through a conj() view, which PyTorch would propagate to the base, are not seen.


def _real_vjp(g, _a):
    return g


def _imag_vjp(g, _a):
    return g * 1j


real_op = Op("real", lambda xp, a: a.real, view_of=0, vjp=_real_vjp)
imag_op = Op("imag", lambda xp, a: a.imag, view_of=0, vjp=_imag_vjp)


@public(method=False)
def real(input):
    """The real part of a complex tensor, as a view; real tensors are returned as they are."""
    _require_tensor("real", "input", input, 1)
    if input._data.dtype.kind != "c":
        return input
    return _dispatch.apply(real_op, (input,), {})


@public(method=False)
def imag(input):
    """The imaginary part of a complex tensor, as a view (an error for real tensors)."""
    _require_tensor("imag", "input", input, 1)
    if input._data.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _dispatch.apply(imag_op, (input,), {})


def _set_part(getter):
    def setter(self, value):
        getter(self).copy_(value if isinstance(value, Tensor) else
                           _const(np.asarray(value)))

    return setter


Tensor.real = property(real, _set_part(real), doc="The real part (a view for complex tensors).")
Tensor.imag = property(imag, _set_part(imag), doc="The imaginary part (a view).")


def _conj_vjp(g, _a):
    return _c(g)


def _conj_kernel(xp, a):
    return xp.conj(a) if a.dtype.kind == "c" else a.copy()


conj_physical_op, conj_physical = unary_op(
    "conj_physical", _conj_kernel, promote="same", vjp=_conj_vjp,
    doc="Complex conjugate, always computed (a copy).")


@public
def conj(input):
    """Complex conjugate. See NOTE [ Conjugate views ]: a copy for complex tensors, the input
    itself for real ones."""
    if input._data.dtype.kind != "c":
        return input
    return unary(conj_physical_op, input)


@public
def resolve_conj(input):
    """The input itself: ember never holds lazily conjugated tensors (NOTE [ Conjugate views ])."""
    return input


@public
def resolve_neg(input):
    """The input itself: ember never holds lazily negated tensors."""
    return input


@public
def is_conj(input) -> bool:
    """Always False in ember (NOTE [ Conjugate views ])."""
    return False


@public
def is_neg(input) -> bool:
    """Always False in ember: there is no lazy negation bit."""
    return False


def _angle_kernel(xp, a):
    if a.dtype.kind == "c":
        return xp.angle(a)
    # real inputs: pi for negative numbers, 0 otherwise (-0.0 too), NaN stays NaN
    pi = a.dtype.type(math.pi)
    return xp.where(xp.isnan(a), a, xp.where(a < 0, pi, a.dtype.type(0)))


def _angle_vjp(g, x):
    if not _is_complex(x):
        return _zero_grad(g, x)
    r = g * x / (x.abs() * x.abs()) * 1j
    return where(x == 0, 0.0, r)


angle_op, angle = unary_op("angle", opmath(_angle_kernel), promote="float_real",
                           inplace=False, vjp=_angle_vjp,
                           doc="The argument (phase) of each element; 0 or pi for real ones.")


def _check_complex_parts(name, a, b, first, second):
    _require_tensor(name, first, a, 1)
    _require_tensor(name, second, b)
    da, db = a._data.dtype, b._data.dtype
    if da.kind != "f" or db.kind != "f":
        raise RuntimeError(f"{name}: Expected both inputs to be Half, Float or Double tensors "
                           f"but got {a.dtype.scalar_name} and {b.dtype.scalar_name}")
    if da != db:
        raise RuntimeError(f"{name}: Expected object of scalar type {a.dtype.scalar_name} but "
                           f"got scalar type {b.dtype.scalar_name} for second argument")
    if da not in (np.float32, np.float64):
        if name == "polar":  # torch has no half kernel for it either
            raise NotImplementedError(f'"polar_cpu" not implemented for '
                                      f"'{a.dtype.scalar_name}'")
        raise RuntimeError(f"{name}: not implemented for '{a.dtype.scalar_name}' (ember has "
                           "no complex32 dtype)")


def _make_complex(xp, re, im):
    re, im = xp.broadcast_arrays(re, im)
    r = xp.empty(re.shape, np.complex64 if re.dtype == np.float32 else np.complex128)
    r.real = re
    r.imag = im
    return r


def _complex_vjp(g, _re, _im):
    return real(g), imag(g)


def _polar_vjp(g, _r, _theta, *, out):
    # from the result alone, as PyTorch's node: d/dabs along sgn(out) (zero where abs is 0,
    # reversed where it is negative), d/dangle along 1j * out
    gc = g.conj()
    return real(gc * out.sgn()), real(gc * out * 1j)


complex_op = Op("complex", _make_complex, vjp=_complex_vjp)
linear_jvp(complex_op, (0, 1))
polar_op = Op("polar", lambda xp, r, t: _make_complex(xp, r * xp.cos(t), r * xp.sin(t)),
              vjp=_polar_vjp)


@polar_op.defjvp
def _polar_jvp(x_dots, r, theta, *, out):
    # r e^(i t): dr e^(i t) + i dt r e^(i t)
    rd, td = x_dots
    d = None if rd is None else _dispatch.apply(polar_op, (rd, theta), {})
    if td is not None:
        u = out * _dispatch.apply(complex_op, (td.new_zeros(tuple(td.shape)), td), {})
        d = u if d is None else d + u
    return d


def _broadcast_apply(name, op, a, b, out):
    try:
        return _dispatch.apply(op, (a, b), {}, out=out)
    except ValueError as e:
        raise RuntimeError(f"{name}: the shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           "broadcast together") from e


@public(name="complex", method=False)
def complex_(real, imag, *, out=None):
    """The complex tensor ``real + 1j * imag`` (float32 -> complex64, float64 ->
    complex128)."""
    _check_complex_parts("complex", real, imag, "real", "imag")
    return _broadcast_apply("complex", complex_op, real, imag, out)


@public(method=False)
def polar(abs, angle, *, out=None):
    """The complex tensor ``abs * (cos(angle) + 1j * sin(angle))``."""
    _check_complex_parts("polar", abs, angle, "abs", "angle")
    return _broadcast_apply("polar", polar_op, abs, angle, out)
