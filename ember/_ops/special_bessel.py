"""Bessel and Airy functions of ``torch.special`` beyond those in special_ops.py: Bessel
functions of the second kind, the modified Bessel functions under their long names, the
spherical Bessel function ``j0`` and Airy's ``Ai``.

Values come from ``scipy.special`` (``cupyx.scipy.special`` on CUDA) through
``scipy_kernel``. PyTorch defines no derivatives for any of these, so results never
require grad, and it has no half-precision or complex kernels for them: those inputs raise
NotImplementedError (``_no_half``). Integer and bool inputs compute in the default float
dtype. The functions are exposed by ``ember/special.py`` only.
"""

from __future__ import annotations

import numpy as np

from .pointwise import opmath, unary_op
from ._xp_compat import to_host
from .special_ops import _I_EDGES, _no_half, _sp, scipy_kernel

_REAL = (0, 1, 2)


_Y_EDGES = {"neg": float("nan"), "zero": -float("inf"), "inf": float("nan")}
_K_EDGES = {"neg": float("nan"), "zero": float("inf"), "inf": 0.0}


@opmath
def _spherical_j0_kernel(xp, a):
    sp = _sp(xp)
    if hasattr(sp, "spherical_jn"):
        return xp.asarray(sp.spherical_jn(0, a)).astype(a.dtype, copy=False)
    # cupyx has no spherical_jn: sin(x) / x, 1 at 0, 0 at both infinities (SciPy's values)
    r = xp.sin(a) / xp.where(a == 0, 1, a)
    r = xp.where(a == 0, 1, xp.where(xp.isinf(a), 0, r))
    return r.astype(a.dtype, copy=False)


@opmath
def _airy_ai_kernel(xp, a):
    sp = _sp(xp)
    if hasattr(sp, "airy"):
        r = xp.asarray(sp.airy(a)[0])
    else:  # cupyx has no Airy functions: SciPy's on a host copy
        from .._lazy_import import import_module

        r = xp.asarray(import_module("scipy.special").airy(to_host(xp, a))[0])
    # SciPy answers NaN past x ~ 1e9, where Ai(x) ~ exp(-2/3 x^1.5) has long underflowed
    # to 0 (from x ~ 105 on), torch's answer
    r = xp.where((a > 200) & xp.isfinite(a), 0.0, r)
    # and NaN below x ~ -1e7 (and loses digits from -1e4), where the oscillating asymptotic
    # form holds to 1e-12:
    # Ai(-z) ~ (cos(c - pi/4) + sin(c - pi/4) 5 / (72 c)) / sqrt(pi) / z^(1/4), c = 2/3 z^1.5
    # (the phase in NumPy's long double: at x = -2**31 it is 6.6e13, whose float64 ulp would
    # move Ai by 0.3%)
    far = (a < -1e4) & xp.isfinite(a)
    if xp is np and bool(far.any()):
        ld = np.longdouble
        z = np.where(far, -a.astype(np.float64), 1.0).astype(ld)
        c = ld(2) / ld(3) * z * np.sqrt(z)
        ph = c - ld("0.785398163397448309615660845819875721")
        asym = (np.cos(ph) + np.sin(ph) * ld(5) / (ld(72) * c)) / (
            ld("1.77245385090551602729816748334114518") * np.sqrt(np.sqrt(z)))
        r = np.where(far, asym.astype(np.float64), r)
    return r.astype(a.dtype, copy=False)


def _declare(name, kernel, doc, example):
    """A non-differentiable ``torch.special`` unary function named ``name``."""
    _, fn = unary_op("special_" + name, kernel, allow=_REAL, method=False, function=False,
                     inplace=False)
    public = _no_half(name, fn)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = f"""{doc}

    Args:
        input (Tensor): the input tensor (integers compute in the default float dtype).
        out (Tensor, optional): the output tensor.

    Returns:
        Tensor: the function at every element (no gradient flows through it).

    Example::

        >>> import ember
        >>> {example}
    """
    return public


bessel_y0 = _declare(
    "bessel_y0", scipy_kernel("y0", _Y_EDGES),
    "Bessel function of the second kind, order 0 (NaN for negative inputs, -inf at 0).",
    "round(ember.special.bessel_y0(ember.tensor(1.0)).item(), 4)\n        0.0883")
bessel_y1 = _declare(
    "bessel_y1", scipy_kernel("y1", _Y_EDGES), "Bessel function of the second kind, order 1.",
    "round(ember.special.bessel_y1(ember.tensor(1.0)).item(), 4)\n        -0.7812")
modified_bessel_i0 = _declare(
    "modified_bessel_i0", scipy_kernel("i0", _I_EDGES),
    "Modified Bessel function of the first kind, order 0.",
    "round(ember.special.modified_bessel_i0(ember.tensor(1.0)).item(), 4)\n        1.2661")
modified_bessel_i1 = _declare(
    "modified_bessel_i1", scipy_kernel("i1", _I_EDGES),
    "Modified Bessel function of the first kind, order 1.",
    "round(ember.special.modified_bessel_i1(ember.tensor(1.0)).item(), 4)\n        0.5652")
modified_bessel_k0 = _declare(
    "modified_bessel_k0", scipy_kernel("k0", _K_EDGES),
    "Modified Bessel function of the second kind, order 0 (inf at 0, NaN below).",
    "round(ember.special.modified_bessel_k0(ember.tensor(1.0)).item(), 4)\n        0.421")
modified_bessel_k1 = _declare(
    "modified_bessel_k1", scipy_kernel("k1", _K_EDGES),
    "Modified Bessel function of the second kind, order 1 (inf at 0, NaN below).",
    "round(ember.special.modified_bessel_k1(ember.tensor(1.0)).item(), 4)\n        0.6019")
scaled_modified_bessel_k0 = _declare(
    "scaled_modified_bessel_k0", scipy_kernel("k0e", _K_EDGES),
    "Exponentially scaled modified Bessel function of the second kind, order 0: "
    "``exp(x) * k0(x)``.",
    "round(ember.special.scaled_modified_bessel_k0(ember.tensor(1.0)).item(), 4)\n"
    "        1.1445")
scaled_modified_bessel_k1 = _declare(
    "scaled_modified_bessel_k1", scipy_kernel("k1e", _K_EDGES),
    "Exponentially scaled modified Bessel function of the second kind, order 1: "
    "``exp(x) * k1(x)``.",
    "round(ember.special.scaled_modified_bessel_k1(ember.tensor(1.0)).item(), 4)\n"
    "        1.6362")
spherical_bessel_j0 = _declare(
    "spherical_bessel_j0", _spherical_j0_kernel,
    "Spherical Bessel function of the first kind, order 0: ``sin(x) / x`` (1 at 0).",
    "round(ember.special.spherical_bessel_j0(ember.tensor(1.0)).item(), 4)\n        0.8415")
airy_ai = _declare(
    "airy_ai", _airy_ai_kernel, "The Airy function ``Ai(x)``.",
    "round(ember.special.airy_ai(ember.tensor(0.0)).item(), 4)\n        0.355")
