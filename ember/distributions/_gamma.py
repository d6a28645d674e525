"""Gamma draws on PyTorch's CPU stream: the same numbers from the same seed.

NOTE [ Gamma draws on the generator's stream ]
PyTorch draws Gamma(alpha, 1) on the CPU one element after another by Marsaglia and Tsang's
method (2000): with ``d = alpha - 1/3`` and ``c = 1 / sqrt(9 d)``, repeat ``x`` standard
normal, ``v = (1 + c x)^3`` (again while ``1 + c x <= 0``), ``u`` uniform, until the squeeze
``u < 1 - 0.0331 x^4`` or ``log u < x^2 / 2 + d (1 - v + log v)`` accepts ``d v``; an
``alpha < 1`` is raised by one and the draw scaled by ``(1 - U)^(1 / alpha)``, one more
uniform taken first. Every uniform is the generator's float64 one (53 bits of a 64-bit
draw) and every normal its Box-Muller one, whose second value waits in the generator for
the next normal (``_box_muller`` in ``ember/_ops/random_ops.py``), so the draws use the
same stream as ``rand``/``randn`` and leave the generator where PyTorch's leaves it.

Float64 draws are PyTorch's bit for bit (the constants ``1/3`` and ``0.0331`` are float32
ones, as there); float32 ones take ``1 / alpha`` and ``alpha + 1`` in float32 and agree to a
few units in the last place (the rest of PyTorch's float32 arithmetic is not followed
step by step) while accepting the same candidates, so the stream stays aligned.

The number of uniforms an element takes is known only after it is drawn, and a Mersenne
twister cannot step back, so the loop works on a buffer drawn ahead that never exceeds
what the remaining elements need at the least (a uniform for ``u`` each, a Box-Muller
pair for every second normal, one more below ``alpha = 1``); an element that runs out of
buffer is drawn again, whole, from a longer one.
"""

from __future__ import annotations

import math

import numpy as np

_THIRD = float(np.float32(1.0) / np.float32(3.0))
_SQUEEZE = float(np.float32(0.0331))
_TWO_PI = 2.0 * math.pi


def _draw_loop(alpha, low, u, normal, out, start):  # pragma: no cover - also compiled
    """Draw ``out[start:]`` from Gamma(``alpha[i]``, 1) with the uniforms ``u`` in turn.

    ``normal`` holds the generator's waiting Box-Muller value (``[1, v]``, or ``[0, 0]``)
    and is updated as draws use and leave one. Returns ``(i, k)``: the draws done up to
    ``i`` (``out.size`` when all are) with ``k`` uniforms used; an element the buffer cannot
    finish is left undone and its uniforms unused.
    """
    n = out.shape[0]
    k = 0
    i = start
    while i < n:
        a = alpha[i]
        k0, has0, v0 = k, normal[0], normal[1]
        done = False
        value = 0.0
        if a == 0.0:  # no draw (the smallest positive number after the cast)
            out[i] = 0.0
            i += 1
            continue
        scale = 1.0
        if a < 1.0:  # (negative ones too: they draw as PyTorch's do, and end as NaN)
            if k >= u.shape[0]:
                break
            if low:
                inv = float(np.float32(1.0) / np.float32(a))
                a = float(np.float32(a + 1.0))
            else:
                inv = 1.0 / a
                a = a + 1.0
            scale = (1.0 - u[k]) ** inv
            k += 1
        d = a - _THIRD
        c = 1.0 / math.sqrt(9.0 * d) if 9.0 * d >= 0.0 else math.nan
        while True:
            # a normal: the waiting one, or the first of a new Box-Muller pair
            if normal[0] != 0.0:
                x = normal[1]
                normal[0] = 0.0
            else:
                if k + 2 > u.shape[0]:
                    break
                r = math.sqrt(-2.0 * math.log1p(-u[k + 1]))
                theta = _TWO_PI * u[k]
                k += 2
                x = r * math.cos(theta)
                normal[0] = 1.0
                normal[1] = r * math.sin(theta)
            y = 1.0 + c * x
            if y <= 0.0:  # (a NaN goes on, and is accepted or not as it compares)
                continue
            v = y * y * y
            if k >= u.shape[0]:
                break
            w = 1.0 - u[k]
            k += 1
            xsq = x * x
            log_v = math.log(v) if v > 0.0 else -math.inf
            if w < 1.0 - _SQUEEZE * xsq * xsq or \
                    math.log(w) < 0.5 * xsq + d * (1.0 - v + log_v):
                value = scale * d * v
                done = True
                break
        if not done:
            normal[0], normal[1] = has0, v0
            return i, k0
        out[i] = value
        i += 1
    return i, k


_compiled = [None]


def _loop():
    """The draw loop, compiled by numba where ember's kernels use it (same numbers: numba
    compiles without fast-math and calls the C library's functions as Python's ``math``)."""
    from .. import _kernels

    if _kernels.backend() != "numba":
        return _draw_loop
    if _compiled[0] is None:
        from numba import njit

        _compiled[0] = njit(cache=True, nogil=True)(_draw_loop)
    return _compiled[0]


def standard_gamma_array(g, alpha, dtype):
    """Gamma(``alpha``, 1) draws from ember generator ``g``, as PyTorch draws them on the CPU
    (NOTE [ Gamma draws on the generator's stream ]).

    Args:
        g: an ember ``Generator`` (CPU).
        alpha: float64 NumPy array of concentrations (any shape).
        dtype: the NumPy float dtype of the result (float32 rounds ``1 / alpha`` and
            ``alpha + 1`` as PyTorch's float32 kernel does).

    Returns:
        ndarray: draws of ``alpha``'s shape in ``dtype``; any not above the dtype's
        smallest positive normal number (zero, NaN) is that number.

    Example::

        >>> import ember
        >>> from ember._core.generator import resolve
        >>> _ = ember.manual_seed(0)
        >>> standard_gamma_array(resolve(None), np.array([2.0]), np.float64).round(4).tolist()
        [4.5526]
    """
    flat = np.ascontiguousarray(alpha, dtype=np.float64).reshape(-1)
    n = flat.size
    out = np.empty(n, np.float64)
    low = np.dtype(dtype) != np.float64
    loop = _loop()
    waiting = g._take_normal()
    normal = np.array([0.0, 0.0] if waiting is None else [1.0, waiting])
    buf = np.empty(0, np.float64)
    i = 0
    while i < n:
        # the least the elements from i need: a uniform each, a pair per two normals
        # beyond a waiting one, one more for each alpha below 1
        rest = flat[i:]
        m = int(np.count_nonzero(rest != 0.0))  # (a zero draws nothing)
        least = m + max(2 * ((m - int(normal[0]) + 1) // 2), 0) + \
            int(np.count_nonzero((rest < 1.0) & (rest != 0.0)))
        more = max(least - buf.size, 1)
        buf = np.concatenate([buf, g._uniform64(more)])
        i, used = loop(flat, low, buf, normal, out, i)
        buf = buf[used:]
    if buf.size:  # pragma: no cover - the bound above never draws ahead of the need
        raise AssertionError("gamma draws left uniforms unused")
    if normal[0]:
        g._put_normal(float(normal[1]))
    res = out.astype(dtype)
    tiny = np.finfo(dtype).tiny
    # what is not above the smallest normal number (zero, NaN) becomes it, as there
    res = np.where(res > tiny, res, tiny).astype(dtype, copy=False)
    return res.reshape(np.shape(alpha))
