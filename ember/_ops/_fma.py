"""Fused multiply-add on NumPy arrays: ``a * b + c`` rounded once, as PyTorch's CPU kernels
round ``add(x, y, alpha=)``, ``sub``, ``addcmul``, ``lerp`` and the optimizers' updates.

NOTE [ Fused multiply-add as PyTorch's kernels ]
PyTorch's CPU kernels for ``x + alpha * y`` (``add``/``sub`` with an ``alpha`` other than 1,
and so SGD's weight decay, momentum and ``p.add_(g, alpha=-lr)``), ``addcmul``
(``x + (value * y) * z``) and ``lerp`` (``x + w * (y - x)``) are compiled with FMA
contraction, in their vector loops and in their scalar tails alike: the result is
``fma(alpha, y, x)`` with one rounding, where ``x + round(alpha * y)`` (two roundings)
differs in the last bit for about one float32 element in six (measured on random normal
data). ``alpha`` and ``value`` are first rounded to the operands' dtype, as PyTorch casts a
scalar. ``addcdiv``'s quotient cannot fuse: it is ``x + round(value * y) / z``.

NumPy has no FMA ufunc. With numba (the ``numba`` kernel backend) ``fma`` is a compiled
ufunc on LLVM's ``llvm.fma``: exact, and as fast as NumPy's ``multiply`` then ``add``.
Without it:

- float32: the product of two float32 numbers is exact in float64, so ``h = a * b + c`` in
  float64 has one rounding, and ``float32(h)`` a second. The two give the correctly rounded
  result except where ``h`` lands exactly halfway between two float32 numbers while the
  exact sum does not (double rounding). That needs the sum's 29 bits below float32's last
  to come out as ``1000...0`` after the float64 rounding: on random operands it did not
  happen once in 10**8 elements, but operands of very different magnitudes reach it, so
  such halfway values are found (a mask test on the bits, plus float32's subnormal range)
  and rounded by the exact error of the float64 sum (Knuth's two-sum).
- float64: Dekker's exact product and Knuth's two-sum give ``a * b + c`` as ``h + e``
  exactly, rounded once by ``h + e``; correctly rounded except where that last addition
  is itself a tie between the two nearest float64 values with a non-zero third part
  (far rarer than one in a billion on random data), and where a product overflows or
  underflows (the plain formula's value there).

Other dtypes (half precision goes through ``multiply`` and ``add`` in the dtype, as
PyTorch's scalar loop rounds it) and non-NumPy arrays take ``c + a * b``.
"""

from __future__ import annotations

import numpy as np

from .. import _kernels

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_compiled = [None, None]  # [the kernel backend seen, its fma ufunc or None]


def _ufunc():
    """The compiled ufunc when the kernel backend is numba, else None."""
    impl = _kernels._impl if _kernels._impl is not None else _kernels._load()
    if impl is not _compiled[0]:  # first use, or ``_kernels.set_backend`` switched it
        u = None
        if impl:
            from .._kernels import _numba_fma

            u = _numba_fma.fma
        _compiled[:] = [impl, u]
    return _compiled[1]


def fma(a, b, c, dtype, out=None):
    """``a * b + c`` with one rounding, element-wise with broadcasting (NOTE [ Fused
    multiply-add as PyTorch's kernels ]).

    Args:
        a, b, c: NumPy arrays or numbers; numbers are first rounded to ``dtype``.
        dtype: the NumPy dtype of the computation and the result.
        out: an array of the broadcast shape and ``dtype`` to write into.

    Returns:
        ndarray: the result (``out`` when given).

    Example::

        >>> a = np.float32(1 + 2.0 ** -12)
        >>> float(fma(a, a, -np.float32(1 + 2.0 ** -11), np.float32)) == 2.0 ** -24
        True
    """
    dtype = np.dtype(dtype)
    if type(a) is not np.ndarray or a.dtype != dtype:
        a = np.asarray(a, dtype)
    if type(b) is not np.ndarray or b.dtype != dtype:
        b = np.asarray(b, dtype)
    if type(c) is not np.ndarray or c.dtype != dtype:
        c = np.asarray(c, dtype)
    if dtype != _F32 and dtype != _F64:
        r = np.multiply(a, b, dtype=dtype)
        return np.add(c, r, out=out if out is not None else r if r.shape else None)
    u = _ufunc()
    if u is not None:
        return u(a, b, c, out=out) if out is not None else u(a, b, c)
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    if not shape:  # the halfway fix-up indexes arrays with dimensions
        a = a.reshape(1)
    r = (_fma32(a, b, c) if dtype == _F32 else _fma64(a, b, c)).reshape(shape)
    if out is None:
        return r
    out[...] = r
    return out


def _two_sum_low(h, p, c):
    """The rounding error of ``h = p + c`` (Knuth): ``h + low == p + c`` exactly."""
    t = h - c
    return (c - (h - t)) + (p - t)


def _fma32(a, b, c):
    h = np.multiply(a, b, dtype=np.float64)  # exact
    if h.shape != np.broadcast_shapes(h.shape, c.shape):
        h = np.broadcast_to(h, np.broadcast_shapes(h.shape, c.shape)).copy()
    np.add(h, c, out=h, dtype=np.float64)
    r = h.astype(np.float32)
    # halfway between two float32 numbers: bits 28..0 of the float64 fraction are 1000...0
    # for normal results (tested in h's own buffer, which is not needed after); subnormal
    # ones drop more bits, so they are all looked at
    bits = h.view(np.uint64)
    np.bitwise_and(bits, np.uint64(0x1FFFFFFF), out=bits)
    halfway = bits == np.uint64(0x10000000)
    halfway |= np.abs(r) < np.float32(2.0 ** -125)
    if halfway.any():
        idx = np.nonzero(halfway)
        shape = r.shape
        ps = np.broadcast_to(a, shape)[idx].astype(np.float64) * \
            np.broadcast_to(b, shape)[idx]
        cs = np.broadcast_to(c, shape)[idx].astype(np.float64)
        hs, rs = ps + cs, r[idx]
        low = _two_sum_low(hs, ps, cs)
        gap = hs - rs
        toward = np.where(gap > 0, np.inf, -np.inf).astype(np.float32)
        other = np.nextafter(rs, toward)  # the float32 on h's other side
        tie = (gap != 0) & (hs * 2 == rs.astype(np.float64) + other)
        # h was rounded to even from a tie the exact sum lies beside: take the other side
        # (an exact tie, low == 0, keeps NumPy's round-half-even)
        r[idx] = np.where(tie & (low * gap > 0), other, rs)
    return r


def _split(x):
    big = 134217729.0 * x  # 2**27 + 1: Veltkamp's split into two 26-bit halves
    hi = big - (big - x)
    return hi, x - hi


def _fma64(a, b, c):
    p = a * b
    (ah, al), (bh, bl) = _split(a), _split(b)
    ep = ((ah * bh - p) + ah * bl + al * bh) + al * bl  # a * b == p + ep exactly
    h = p + c
    r = np.asarray(h + (_two_sum_low(h, p, c) + ep))
    bad = ~np.isfinite(r)  # a split or error term overflowed: the plain formula's value
    if bad.any():
        r[bad] = np.broadcast_to(h, r.shape)[bad]
    return r
