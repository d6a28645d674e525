"""Flop counts the profiler reports under ``with_flops=True``, keyed by op name.

PyTorch counts a multiply-add as two flops: ``mm``/``addmm`` of ``(M, K) @ (K, N)`` is
``2*M*K*N``, ``bmm``/``baddbmm`` multiply that by the batch, a 2-d convolution is
``2 * N * C_out * H_out * W_out * C_in/groups * kH * kW``, and element-wise ``add``/``mul``
count one flop per output element. ember runs ``matmul`` and ``linear`` as one op each
(PyTorch shows them as composites whose ``mm``/``addmm`` child carries the count), so they
are counted here with the same formula as the product they compute.
"""

from __future__ import annotations

import math

from .._core.tensor import Tensor


def _shape(x):
    return tuple(x._data.shape) if isinstance(x, Tensor) else ()


def _mm(args, kwargs, out):
    m, k = _shape(args[0])
    n = _shape(args[1])[1]
    return 2 * m * k * n


def _addmm(args, kwargs, out):
    a, b = _shape(args[1]), _shape(args[2])
    if len(a) == 3 and len(b) == 3:   # ember's addmm serves baddbmm too
        return 2 * a[0] * a[1] * a[2] * b[2]
    if len(a) != 2 or len(b) != 2:
        return 0                      # and addmv, which PyTorch does not count
    return 2 * a[0] * a[1] * b[1]


def _bmm(args, kwargs, out):
    b, m, k = _shape(args[0])
    return 2 * b * m * k * _shape(args[1])[2]


def _baddbmm(args, kwargs, out):
    b, m, k = _shape(args[1])
    return 2 * b * m * k * _shape(args[2])[2]


def _matmul(args, kwargs, out):
    a, b = _shape(args[0]), _shape(args[1])
    if not a or not b or len(b) == 1 or (len(a) == 1 and len(b) > 2):
        return 0  # PyTorch runs those as ``mv``/``dot``, which it does not count
    k = a[-1]
    # the product's element count times the contraction length, twice
    return 2 * k * math.prod(_shape(out)) if isinstance(out, Tensor) else 0


def _linear(args, kwargs, out):
    x, w = _shape(args[0]), _shape(args[1])
    if not x or not w:
        return 0
    return 2 * math.prod(x) * (w[0] if len(w) == 2 else 1)


def _conv(args, kwargs, out):
    w = _shape(args[1])
    if len(w) != 4 or kwargs.get("transposed") or not isinstance(out, Tensor):
        return 0  # PyTorch counts 2-d (non-transposed) convolutions only
    n, c_out, h_out, w_out = _shape(out)
    c_in_per_group, kh, kw = w[1], w[2], w[3]
    return 2 * n * c_out * h_out * w_out * c_in_per_group * kh * kw


def _elementwise(args, kwargs, out):
    return math.prod(_shape(out)) if isinstance(out, Tensor) else 0


RULES = {
    "mm": _mm,
    "addmm": _addmm,
    "bmm": _bmm,
    "baddbmm": _baddbmm,
    "matmul": _matmul,
    "linear": _linear,
    "convolution": _conv,
    "conv2d": _conv,
    "add": _elementwise,
    "mul": _elementwise,
}
