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

Two cases need no emulation: an addend that is a single zero (``a * b`` rounded once; an
exactly zero product of negative sign plus +0 is +0), and a single factor that is a power
of two (the product is exact, so the sum is the one rounding) unless the product overflows
or loses bits to underflow, checked on the result. The emulation runs in blocks (NOTE
[ Fused multiply-add in cache-sized blocks ]).

Other dtypes (half precision goes through ``multiply`` and ``add`` in the dtype, as
PyTorch's scalar loop rounds it) and non-NumPy arrays take ``c + a * b``.
"""

from __future__ import annotations

import math

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
    if c.size == 1 and not c.any():
        r = _zero_addend(a, b, c, dtype)
        if out is None:
            return r
        out[...] = r
        return out
    if a.size == 1 or b.size == 1:
        r = _exact_product(a, b, c, dtype, out)
        if r is not None:
            return r
    return _blockwise(_fma32_block if dtype == _F32 else _fma64_block, a, b, c, dtype, out)


def _zero_addend(a, b, c, dtype):
    """``a * b + c`` for a single zero ``c``: the product rounded once, which is the FMA's
    result except for a product that is exactly zero with a negative sign and ``c`` +0
    (then ``-0 + 0`` is +0). A negative product that underflows to -0 keeps its sign, as
    the exact sum's rounding does."""
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    p = np.asarray(np.multiply(a, b, dtype=dtype))
    if p.shape != shape:
        p = np.broadcast_to(p, shape).copy()
    if np.signbit(c.reshape(())):
        return p
    neg_zero = p.view(np.uint32 if dtype == _F32 else np.uint64) == \
        np.array(-0.0, dtype).view(np.uint32 if dtype == _F32 else np.uint64)
    if neg_zero.any():  # (boolean indexing: 0-d arrays too)
        exact = (np.broadcast_to(a, shape)[neg_zero] == 0) | \
            (np.broadcast_to(b, shape)[neg_zero] == 0)
        p[neg_zero] = np.where(exact, dtype.type(0), p[neg_zero])
    return p


def _exact_product(a, b, c, dtype, out):
    """``a * b + c`` where one factor is a single power of two (or zero): the product is
    exact in ``dtype`` unless it overflows or underflows, so the sum is the one rounding;
    None where that does not hold (the caller emulates the FMA)."""
    one, many = (a, b) if a.size == 1 else (b, a)
    k = float(one.reshape(()))
    m, _ = math.frexp(k)
    if abs(m) != 0.5 and k != 0:
        return None
    p = np.asarray(np.multiply(many, one, dtype=dtype))
    if abs(k) >= 1:
        if not np.isfinite(p).all():  # an overflow (or non-finite operands)
            return None
    elif k != 0 and not (np.multiply(p, dtype.type(1 / k)) == many).all():
        return None  # an underflow lost bits (or NaN operands)
    if out is not None:
        return np.add(c, p, out=out)
    return np.add(c, p, out=p if p.shape == np.broadcast_shapes(p.shape, c.shape) else None)


# ------------------------------------------------------------------------------------------------
# the NumPy emulation, block by block
#
# NOTE [ Fused multiply-add in cache-sized blocks ]
# The emulation takes several passes over float64 temporaries (float32: a product, a sum,
# the cast, a bit test; float64: Dekker's and Knuth's two dozen steps). Over whole arrays
# each pass streams megabytes through memory, and a million float32 elements took 14 ms.
# ``_blockwise`` runs the passes on blocks of ``_BLOCK`` elements instead, into buffers
# reused from block to block, so the temporaries stay in the CPU's cache and the arrays
# are read and written once; the halfway corners of a block are fixed from its own
# operands (elements are independent, so the blocks give the whole array's result).

_BLOCK = 32768


def _flat(x, shape, n):
    """``x`` as something indexable by flat positions of ``shape``: a 0-d array for one
    value, else a flat C-ordered view (a copy when ``x`` is broadcast or strided)."""
    if x.size == 1:
        return x.reshape(())
    if x.shape != shape:
        x = np.broadcast_to(x, shape)
    return np.ascontiguousarray(x).reshape(n)


def _blockwise(block, a, b, c, dtype, out):
    """``block(a_k, b_k, c_k, r_k, scratch)`` over blocks of the flat broadcast operands,
    writing the result into ``out`` (or a new array)."""
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    n = math.prod(shape)
    fa, fb, fc = _flat(a, shape, n), _flat(b, shape, n), _flat(c, shape, n)
    direct = aliased = False
    if out is not None and out.flags.c_contiguous:
        # into ``out`` directly unless an operand overlaps it other than element for element
        # (``fma(alpha, y, x, out=x)`` is fine: each element is read before it is written)
        start = out.__array_interface__["data"][0]
        direct = True
        for x in (fa, fb, fc):
            if np.may_share_memory(out, x):
                aliased = True
                if not x.ndim or x.__array_interface__["data"][0] != start:
                    direct = False
    res = out.reshape(n) if direct else np.empty(n, dtype)
    size = _BLOCK if dtype == _F32 else _BLOCK // 4  # float64 uses eight buffers, not one
    scratch = _Scratch(min(n, size), dtype, direct and aliased)
    for lo in range(0, n, size):
        hi = min(lo + size, n)
        block(fa if not fa.ndim else fa[lo:hi], fb if not fb.ndim else fb[lo:hi],
              fc if not fc.ndim else fc[lo:hi], res[lo:hi], scratch)
    if direct:
        return out
    res = res.reshape(shape)
    if out is None:
        return res
    out[...] = res
    return out


class _Scratch:
    """The buffers one call's blocks reuse."""

    __slots__ = ("h", "t", "u", "v", "w", "x", "y", "z", "flag", "flag2", "r32", "small",
                 "aliased")

    def __init__(self, k, dtype, aliased):
        self.aliased = aliased  # the result is written over an operand
        self.h, self.flag = np.empty(k), np.empty(k, bool)
        if dtype == _F32:
            self.flag2, self.small = np.empty(k, bool), np.empty(k, np.float32)
            self.r32 = np.empty(k, np.float32) if aliased else None
        else:
            self.t, self.u, self.v, self.w, self.x, self.y, self.z = (
                np.empty(k) for _ in range(7))


def _two_sum_low(h, p, c):
    """The rounding error of ``h = p + c`` (Knuth): ``h + low == p + c`` exactly."""
    t = h - c
    return (c - (h - t)) + (p - t)


def _fma32_block(a, b, c, out, s):
    # (over an operand, the result is made in scratch and stored last: the fix-up reads the
    # operands)
    k = out.shape[0]
    h, r = s.h[:k], s.r32[:k] if s.aliased else out
    np.multiply(a, b, out=h, dtype=np.float64)  # exact
    np.add(h, c, out=h, dtype=np.float64)       # rounded once
    np.copyto(r, h, casting="same_kind")        # and again
    # halfway between two float32 numbers: bits 28..0 of the float64 fraction are 1000...0
    # for normal results (tested in h's own buffer, not needed after); subnormal ones (and
    # zero) drop more bits, so all are looked at
    bits, flag, flag2 = h.view(np.uint64), s.flag[:k], s.flag2[:k]
    np.bitwise_and(bits, np.uint64(0x1FFFFFFF), out=bits)
    np.equal(bits, np.uint64(0x10000000), out=flag)
    np.less(np.abs(r, out=s.small[:k]), np.float32(2.0 ** -125), out=flag2)
    np.logical_or(flag, flag2, out=flag)
    if flag.any():
        _fix_halfway32(a, b, c, r, np.flatnonzero(flag))
    if s.aliased:
        np.copyto(out, r)


def _fix_halfway32(a, b, c, r, idx):
    """Round again the elements ``idx`` of ``r`` whose float64 sum fell on a float32 halfway
    point (or into float32's subnormal range) while the exact sum did not."""
    ps = (a if not a.ndim else a[idx]).astype(np.float64) * (b if not b.ndim else b[idx])
    cs = (c if not c.ndim else c[idx]).astype(np.float64)
    hs, rs = ps + cs, r[idx]  # the same float64 sums again
    low = _two_sum_low(hs, ps, cs)
    gap = hs - rs
    toward = np.where(gap > 0, np.inf, -np.inf).astype(np.float32)
    other = np.nextafter(rs, toward)  # the float32 on h's other side
    tie = (gap != 0) & (hs * 2 == rs.astype(np.float64) + other)
    # h was rounded to even from a tie the exact sum lies beside: take the other side
    # (an exact tie, low == 0, keeps NumPy's round-half-even)
    r[idx] = np.where(tie & (low * gap > 0), other, rs)


def _split(x, hi, lo):
    """Veltkamp's split of ``x`` into two 26-bit halves, ``hi + lo == x`` (into the
    buffers ``hi`` and ``lo``; a number for a 0-d ``x``)."""
    if not x.ndim:
        big = 134217729.0 * float(x)
        h = big - (big - float(x))
        return np.float64(h), np.float64(float(x) - h)
    np.multiply(x, 134217729.0, out=hi)  # 2**27 + 1
    np.subtract(hi, x, out=lo)
    np.subtract(hi, lo, out=hi)
    np.subtract(x, hi, out=lo)
    return hi, lo


def _fma64_block(a, b, c, r, s):
    # (``r`` is written last: it may be one of the operands)
    k = r.shape[0]
    p, h, t, e = s.h[:k], s.t[:k], s.u[:k], s.z[:k]
    ah, al = _split(a, s.v[:k], s.w[:k])
    bh, bl = _split(b, s.x[:k], s.y[:k])
    # Dekker: a * b == p + e exactly (e built in r)
    np.multiply(a, b, out=p)
    np.multiply(ah, bh, out=e)
    np.subtract(e, p, out=e)
    np.add(e, np.multiply(ah, bl, out=t), out=e)
    np.add(e, np.multiply(al, bh, out=t), out=e)
    np.add(e, np.multiply(al, bl, out=t), out=e)
    # Knuth: p + c == h + low exactly; the result is h + (low + e), rounded once
    np.add(p, c, out=h)
    np.subtract(h, c, out=t)      # t = h - c
    np.subtract(p, t, out=p)      # p - t
    np.subtract(h, t, out=t)      # h - t
    np.subtract(c, t, out=t)      # c - (h - t)
    np.add(p, t, out=p)           # low
    np.add(p, e, out=p)
    np.add(h, p, out=p)
    # a split or error term overflowed (or an operand is not finite): the plain formula's
    # value there
    fin = np.isfinite(p, out=s.flag[:k])
    if not fin.all():
        bad = np.flatnonzero(~fin)
        p[bad] = h[bad]
    np.copyto(r, p)
