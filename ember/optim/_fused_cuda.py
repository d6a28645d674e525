"""Optimizer steps on CuPy arrays as one CUDA kernel each.

NOTE [ Fused optimizer kernels on CUDA ]
On a GPU the per-parameter update of Adam is about ten array ops, ten kernel launches and
ten passes over memory; PyTorch's ``fused=True`` runs it as one. Here, when a parameter's
arrays are CuPy arrays, ``adam`` and ``sgd`` below run the whole update as one
``cupy.ElementwiseKernel`` launch that reads the parameter, gradient and state once and
writes them back in place. This is the path for every CuPy step -- ``foreach`` and ``fused``
only choose whether parameters are first concatenated (NOTE [ Flat optimizer step ]), and a
flat bucket is updated by one launch too.

- The hyper-parameters and the step's scalars (``-lr / bias1``, ``sqrt(bias2)``...) are
  kernel arguments, computed in Python in float64 as the unfused path computes them, so a
  new learning rate or step count never recompiles.
- The arithmetic is in float32 for float16, bfloat16 and float32 arrays (float64 for
  float64): a low-precision parameter is widened once and rounded once, as PyTorch's
  fused kernels do. For float32 the operations are the unfused path's, in its order, and
  the kernels are compiled with ``--fmad=false`` (no multiply-add contraction), so each
  value is rounded where the unfused path rounds it (checked bit for bit against the
  unfused path with the kernel bodies compiled as C on the CPU; on a GPU the tests allow
  float32 rounding).
- Kernels are compiled on first use and kept in ``_kernels`` (CuPy also caches the binary
  on disk). CuPy is imported only when a CuPy array is seen; NumPy arrays never come here.

Covered: parameter, gradient and state arrays of one shape and one dtype among float16,
bfloat16, float32 and float64. Anything else returns False and the caller runs the unfused
path.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["adam", "sgd", "is_cupy"]

from .._core import dtype as _dt

# array dtype -> (computation type, scalar argument type); CuPy 14 takes ml_dtypes' bfloat16
_DTYPES = {np.dtype(np.float16): ("float", "float32"),
           np.dtype(_dt.bfloat16.np): ("float", "float32"),
           np.dtype(np.float32): ("float", "float32"),
           np.dtype(np.float64): ("double", "float64")}
_kernels = {}

_ADAM = """
acc_t gv = (acc_t)g;
if (maximize) gv = -gv;
acc_t pv = (acc_t)p;
if (wd != 0) {
    if (decoupled) pv = pv * decay;
    else gv = gv + wd * pv;
}
acc_t mv = (acc_t)m;
acc_t d = gv - mv;
mv = (w1 < (acc_t)0.5) ? mv + d * w1 : gv + d * w1m1;
acc_t vv = (acc_t)v * beta2 + (gv * gv) * w2;
m = (T)mv;
v = (T)vv;
%(amsgrad)s
acc_t denom = sqrt(vv) / bias2_sqrt + eps;
p = (T)(pv + step_size * (mv / denom));
"""

_AMSGRAD = """
vv = max((acc_t)vmax, vv);
vmax = (T)vv;
"""

_SGD = """
acc_t gv = (acc_t)g;
if (maximize) gv = -gv;
acc_t pv = (acc_t)p;
if (wd != 0) gv = gv + wd * pv;
%(momentum)s
p = (T)(pv + neg_lr * gv);
"""

_MOMENTUM = """
acc_t bv = first ? gv : (acc_t)buf * momentum + gv * keep;
buf = (T)bv;
gv = nesterov ? gv + bv * momentum : bv;
"""


def is_cupy(a) -> bool:
    """Whether ``a`` is a CuPy array (tested without importing CuPy)."""
    return type(a).__module__.startswith("cupy")


def _cupy():
    from ..cuda._runtime import cupy

    return cupy()


def _signature(kind, stype):
    """(in_params, out_params, body) of the kernel ``kind`` with scalars of type ``stype``."""
    S = stype
    if kind.startswith("adam"):
        ams = kind == "adam_amsgrad"
        ins = (f"T g, {S} w1, {S} w1m1, {S} beta2, {S} w2, {S} wd, {S} decay, {S} eps, "
               f"{S} step_size, {S} bias2_sqrt, int32 maximize, int32 decoupled")
        outs = "T p, T m, T v" + (", T vmax" if ams else "")
        return ins, outs, _ADAM % {"amsgrad": _AMSGRAD if ams else ""}
    mom = kind == "sgd_momentum"
    ins = f"T g, {S} neg_lr, {S} wd, int32 maximize"
    if mom:
        ins += f", {S} momentum, {S} keep, int32 nesterov, int32 first"
    outs = "T p" + (", T buf" if mom else "")
    return ins, outs, _SGD % {"momentum": _MOMENTUM if mom else ""}


def _kernel(kind, ctype, stype):
    """The ElementwiseKernel of ``kind`` computing in ``ctype`` (NOTE [ Fused optimizer
    kernels on CUDA ]), compiled once."""
    key = (kind, ctype)
    k = _kernels.get(key)
    if k is None:
        ins, outs, body = _signature(kind, stype)
        k = _kernels[key] = _cupy().ElementwiseKernel(
            ins, outs, body, f"ember_{kind}_{ctype}", preamble=f"typedef {ctype} acc_t;",
            options=("--fmad=false",))
    return k


def _covered(*arrays):
    """(ctype, stype) when the arrays are CuPy arrays of one shape and one covered dtype."""
    first = arrays[0]
    if not is_cupy(first) or first.dtype not in _DTYPES:
        return None
    for a in arrays[1:]:
        if not is_cupy(a) or a.dtype != first.dtype or a.shape != first.shape:
            return None
    return _DTYPES[first.dtype]


def adam(p, g, m, v, vmax, *, beta1, beta2, lr, weight_decay, eps, step, decoupled,
         maximize) -> bool:
    """One Adam/AdamW step in place on the CuPy arrays ``p``, ``m``, ``v`` (and ``vmax``
    for amsgrad, else None), as one kernel launch; False, having changed nothing, where not
    covered (NOTE [ Fused optimizer kernels on CUDA ]).

    Args:
        p, g, m, v, vmax: the parameter, gradient, moments and running maximum arrays.
        beta1, beta2, lr, weight_decay, eps (float): the hyper-parameters.
        step (int or float): the step count, already incremented.
        decoupled (bool): AdamW's weight decay. maximize (bool): ascend.

    Returns:
        bool: whether the step ran.

    Example::

        >>> import numpy as np
        >>> adam(np.ones(2), np.ones(2), np.zeros(2), np.zeros(2), None, beta1=0.9,
        ...      beta2=0.999, lr=0.1, weight_decay=0.0, eps=1e-8, step=1, decoupled=False,
        ...      maximize=False)  # NumPy arrays: not this path
        False
    """
    arrays = (p, g, m, v) + ((vmax,) if vmax is not None else ())
    types = _covered(*arrays)
    if types is None:
        return False
    w1 = 1 - beta1
    bias1 = 1 - beta1 ** step
    bias2_sqrt = math.sqrt(1 - beta2 ** step)
    k = _kernel("adam_amsgrad" if vmax is not None else "adam", *types)
    k(g, w1, w1 - 1, beta2, 1 - beta2, weight_decay, 1 - lr * weight_decay, eps, -lr / bias1,
      bias2_sqrt, int(bool(maximize)), int(bool(decoupled)), *arrays[:1], *arrays[2:])
    return True


def sgd(p, g, buf, *, lr, weight_decay, momentum, dampening, nesterov, maximize):
    """One SGD step in place on the CuPy array ``p`` as one kernel launch. With momentum,
    ``buf`` is the momentum buffer (updated in place) or None on the first step.

    Args:
        p, g: the parameter and gradient arrays.
        buf: the momentum buffer array, or None.
        lr, weight_decay, momentum, dampening (float), nesterov, maximize (bool): as
            ``ember.optim.SGD``.

    Returns:
        False where not covered (nothing changed); else True without momentum, or the
        momentum buffer array (the new one on the first step).

    Example::

        >>> import numpy as np
        >>> sgd(np.ones(2), np.ones(2), None, lr=0.1, weight_decay=0.0, momentum=0.0,
        ...     dampening=0.0, nesterov=False, maximize=False)  # NumPy arrays: not this path
        False
    """
    if momentum == 0:
        types = _covered(p, g)
        if types is None:
            return False
        _kernel("sgd", *types)(g, -lr, weight_decay, int(bool(maximize)), p)
        return True
    first = buf is None
    types = _covered(p, g) if first else _covered(p, g, buf)
    if types is None:
        return False
    if first:
        buf = _cupy().empty_like(p)  # written by the kernel
    _kernel("sgd_momentum", *types)(g, -lr, weight_decay, int(bool(maximize)), momentum,
                                    1 - dampening, int(bool(nesterov)), int(first), p, buf)
    return buf
