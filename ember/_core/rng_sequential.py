"""Draws that take a varying number of uniforms per element (rejection samplers), on
PyTorch's CPU stream: gamma (NOTE [ Gamma draws on the generator's stream ]) and Poisson
(NOTE [ Poisson draws on the generator's stream ]), one element after another as PyTorch
draws them, so the same seed gives the same numbers and leaves the generator where
PyTorch's is left.

NOTE [ Draws ahead that never overshoot ]
The number of uniforms an element takes is known only after it is drawn, and a Mersenne
twister cannot step back, so a loop works on a buffer drawn ahead that never exceeds what
the remaining elements need at the least; an element that runs out of buffer is drawn
again, whole, from a longer one (``_drive``). The loops are plain Python that numba
compiles where ember's kernels use it (the same numbers: numba compiles without fast-math
and calls the C library's functions, as Python's ``math`` does).

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

The least an element needs (NOTE [ Draws ahead that never overshoot ]): a uniform for
``u``, a Box-Muller pair for every second normal, one more below ``alpha = 1``; a zero
``alpha`` draws nothing.

NOTE [ Poisson draws on the generator's stream ]
PyTorch draws Poisson(lam) on the CPU one element after another: nothing for ``lam = 0``;
below 10, Knuth's product of uniforms (count the uniforms whose running product stays above
``exp(-lam)``); from 10, Hormann's transformed rejection with squeeze (PTRS, 1993), two
uniforms a try. The count is a float64 floor until it is accepted, then an int64, so counts
past int64's range end as its lowest value, as the machine's conversion gives them.

NOTE [ Binomial draws on the generator's stream ]
PyTorch draws Binomial(n, p) on the CPU one element after another on ``q = min(p, 1 - p)``
(``n`` minus the draw where ``p > 1/2``): nothing for ``n <= 0``, ``p <= 0`` or ``p >= 1``;
below ``n q = 10``, inversion by geometric gaps (count the uniforms whose gaps
``ceil(log U / log(1 - q))`` still sum to at most ``n``); from 10, Hormann's BTRS (1993), two
uniforms a try, with Stirling's tail of ``log k!`` in the bound. A NaN ``p`` is NaN with
nothing drawn; a NaN ``n``, which PyTorch's loop never leaves, is NaN here too. The loop runs
in float64 for every dtype; PyTorch's float32 one rounds some steps to float32, so at counts
near a million a float32 draw can differ by one (the stream stays aligned).
"""

from __future__ import annotations

import math

import numpy as np

try:  # helpers the compiled loops call: plain Python functions that numba can compile too
    from numba.extending import register_jitable as _jitable
except ImportError:  # pragma: no cover - without numba the loops run as Python
    def _jitable(fn):
        return fn

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
            if w < 1.0 - _SQUEEZE * xsq * xsq or \
                    math.log(w) < 0.5 * xsq + d * (1.0 - v + _log(v)):
                value = scale * d * v
                done = True
                break
        if not done:
            normal[0], normal[1] = has0, v0
            return i, k0
        out[i] = value
        i += 1
    return i, k


_INT64_MIN = -(2 ** 63)
_TWO_63 = 2.0 ** 63
_TWO_52 = 2.0 ** 52


def _poisson_loop(lam, u, out, start):  # pragma: no cover - also compiled
    """Draw ``out[start:]`` from Poisson(``lam[i]``) with the uniforms ``u`` in turn (NOTE
    [ Poisson draws on the generator's stream ]). Returns ``(i, k)`` as ``_draw_loop``."""
    n = out.shape[0]
    k = 0
    i = start
    while i < n:
        rate = lam[i]
        k0 = k
        done = False
        count = 0.0
        if rate == 0.0:
            out[i] = 0.0
            i += 1
            continue
        if rate < 10.0:
            floor = math.exp(-rate)
            prod = 1.0
            while True:
                if k >= u.shape[0]:
                    break
                prod *= u[k]
                k += 1
                if prod > floor:
                    count += 1.0
                else:
                    done = True
                    break
        else:
            slam = math.sqrt(rate)
            loglam = math.log(rate)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
            vr = 0.9277 - 3.6224 / (b - 2.0)
            while True:
                if k + 2 > u.shape[0]:
                    break
                uu = u[k] - 0.5
                v = u[k + 1]
                k += 2
                us = 0.5 - abs(uu)
                f = (2.0 * a / us + b) * uu + rate + 0.43
                kk = _whole(f)  # (a float64 count until the end)
                if us >= 0.07 and v <= vr:
                    count = kk
                    done = True
                    break
                if kk < 0.0 or (us < 0.013 and v > us):
                    continue
                if math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b) <= \
                        -rate + kk * loglam - math.lgamma(kk + 1.0):
                    count = kk
                    done = True
                    break
        if not done:
            return i, k0
        out[i] = count
        i += 1
    return i, k


# log k! minus Stirling's approximation (k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2, k < 10
_TAIL = np.array([math.lgamma(k + 1.0) - ((k + 0.5) * math.log(k + 1.0) - (k + 1.0)
                                           + 0.5 * math.log(2.0 * math.pi)) for k in range(10)])


@_jitable
def _stirling_tail(k):  # pragma: no cover - also compiled
    """``log k!`` minus its Stirling approximation at whole ``k >= 0``: exact below 10, the
    series beyond."""
    if k <= 9.0:
        return _TAIL[int(k)]
    kp1 = k + 1.0
    kp1sq = kp1 * kp1
    return (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / kp1


@_jitable
def _log(x):  # pragma: no cover - also compiled
    """The C library's ``log``: -inf at 0 and NaN below, where Python's raises."""
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan


@_jitable
def _whole(f):  # pragma: no cover - also compiled
    """``floor(f)`` as a float64 (from 2^52 on, and at inf or NaN, ``f`` itself)."""
    return float(math.floor(f)) if abs(f) < _TWO_52 else f


def _binomial_loop(count, prob, u, out, start):  # pragma: no cover - also compiled
    """Draw ``out[start:]`` from Binomial(``count[i]``, ``prob[i]``) with the uniforms ``u``
    in turn (NOTE [ Binomial draws on the generator's stream ]). Returns ``(i, k)`` as
    ``_draw_loop``."""
    n_all = out.shape[0]
    k = 0
    i = start
    while i < n_all:
        n = count[i]
        p = prob[i]
        k0 = k
        if p != p or n != n:
            out[i] = math.nan
            i += 1
            continue
        if n <= 0.0 or p <= 0.0:
            out[i] = 0.0
            i += 1
            continue
        if p >= 1.0:
            out[i] = n
            i += 1
            continue
        flip = p > 0.5
        q = 1.0 - p if flip else p
        done = False
        value = 0.0
        if n * q >= 10.0:  # BTRS
            sd = math.sqrt(n * q * (1.0 - q))
            b = 1.15 + 2.53 * sd
            a = -0.0873 + 0.0248 * b + 0.01 * q
            c = n * q + 0.5
            vr = 0.92 - 4.2 / b
            r = q / (1.0 - q)
            alpha = (2.83 + 5.1 / b) * sd
            m = _whole((n + 1.0) * q)
            while True:
                if k + 2 > u.shape[0]:
                    break
                uu = u[k] - 0.5
                v = u[k + 1]
                k += 2
                us = 0.5 - abs(uu)
                kk = _whole((2.0 * a / us + b) * uu + c)
                if kk < 0.0 or kk > n:
                    continue
                if us >= 0.07 and v <= vr:
                    value = kk
                    done = True
                    break
                lv = _log(v * alpha / (a / (us * us) + b))
                bound = ((m + 0.5) * _log((m + 1.0) / (r * (n - m + 1.0)))
                         + (n + 1.0) * _log((n - m + 1.0) / (n - kk + 1.0))
                         + (kk + 0.5) * _log(r * (n - kk + 1.0) / (kk + 1.0))
                         + _stirling_tail(m) + _stirling_tail(n - m)
                         - _stirling_tail(kk) - _stirling_tail(n - kk))
                if lv <= bound:
                    value = kk
                    done = True
                    break
        else:  # inversion by geometric gaps
            log_q = math.log1p(-q)
            gaps = 0.0
            got = 0.0
            while True:
                if k >= u.shape[0]:
                    break
                gap = _whole(-_log(u[k]) / -log_q)  # (a ceiling: the gap is whole or more)
                if gap < -_log(u[k]) / -log_q:
                    gap += 1.0
                k += 1
                gaps += gap
                if gaps > n:
                    value = got
                    done = True
                    break
                got += 1.0
        if not done:
            return i, k0
        out[i] = n - value if flip else value
        i += 1
    return i, k


_compiled = {}


def _compiled_loop(loop):
    """``loop`` compiled by numba where ember's kernels use it, else itself."""
    from .. import _kernels

    if _kernels.backend() != "numba":
        return loop
    fast = _compiled.get(loop.__name__)
    if fast is None:
        from numba import njit

        fast = _compiled[loop.__name__] = njit(cache=True, nogil=True)(loop)
    return fast


def _drive(g, n, least, step):
    """Run a loop over ``n`` elements on uniforms drawn ahead from ``g`` without ever
    drawing more than the elements use (NOTE [ Draws ahead that never overshoot ]):
    ``least(i)`` is the fewest uniforms elements ``i:`` can need, ``step(buf, i)`` runs the
    loop from element ``i`` and returns ``(i, used)`` as the loops do."""
    buf = np.empty(0, np.float64)
    i = 0
    while i < n:
        more = least(i) - buf.size
        if more > 0:
            buf = np.concatenate([buf, g._uniform64(more)])
        j, used = step(buf, i)
        buf = buf[used:]
        if j == i:  # element i needs more than all of the buffer: one more, then again
            buf = np.concatenate([buf, g._uniform64(1)])
        i = j
    if buf.size:  # pragma: no cover - ``least`` never asks for more than is used
        raise AssertionError("draws left uniforms unused")


def _least_from(need):
    """``least(i)`` for ``_drive`` from the fewest uniforms each element can take."""
    left = np.concatenate([np.cumsum(need[::-1])[::-1], [0]])
    return lambda i: int(left[i])


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
    out = np.empty(flat.size, np.float64)
    low = np.dtype(dtype) != np.float64
    loop = _compiled_loop(_draw_loop)
    waiting = g._take_normal()
    normal = np.array([0.0, 0.0] if waiting is None else [1.0, waiting])
    drawing = flat != 0.0  # (a zero draws nothing)
    below_one = drawing & (flat < 1.0)

    def least(i):
        # a uniform each, a pair for every second normal beyond a waiting one, and one
        # more for each alpha below 1
        m = int(np.count_nonzero(drawing[i:]))
        return m + max(2 * ((m - int(normal[0]) + 1) // 2), 0) + \
            int(np.count_nonzero(below_one[i:]))

    _drive(g, flat.size, least, lambda buf, i: loop(flat, low, buf, normal, out, i))
    if normal[0]:
        g._put_normal(float(normal[1]))
    res = out.astype(dtype)
    tiny = np.finfo(dtype).tiny
    # what is not above the smallest normal number (zero, NaN) becomes it, as there
    res = np.where(res > tiny, res, tiny).astype(dtype, copy=False)
    return res.reshape(np.shape(alpha))


def poisson_array(g, lam):
    """Poisson(``lam``) draws from ember generator ``g``, as PyTorch draws them on the CPU
    (NOTE [ Poisson draws on the generator's stream ]).

    Args:
        g: an ember ``Generator`` (CPU).
        lam: float64 NumPy array of non-negative rates (any shape).

    Returns:
        ndarray: float64 counts of ``lam``'s shape.

    Example::

        >>> import ember
        >>> from ember._core.generator import resolve
        >>> _ = ember.manual_seed(0)
        >>> poisson_array(resolve(None), np.array([0.0, 3.0, 40.0])).tolist()
        [0.0, 6.0, 37.0]
    """
    flat = np.ascontiguousarray(lam, dtype=np.float64).reshape(-1)
    out = np.empty(flat.size, np.float64)
    loop = _compiled_loop(_poisson_loop)
    # one uniform at the least below rate 10, a pair from 10 on, none for a zero rate
    need = np.where(flat == 0.0, 0, np.where(flat < 10.0, 1, 2))
    _drive(g, flat.size, _least_from(need), lambda buf, i: loop(flat, buf, out, i))
    # the float-to-int64 conversion: out of range (or NaN) is int64's lowest
    out = np.where(np.abs(out) < _TWO_63, out, float(_INT64_MIN))
    return out.reshape(np.shape(lam))


def binomial_array(g, count, prob):
    """Binomial(``count``, ``prob``) draws from ember generator ``g``, as PyTorch draws them on
    the CPU (NOTE [ Binomial draws on the generator's stream ]).

    Args:
        g: an ember ``Generator`` (CPU).
        count: float64 NumPy array of trial counts.
        prob: float64 NumPy array of success probabilities, ``count``'s shape.

    Returns:
        ndarray: float64 counts of ``count``'s shape.

    Example::

        >>> import ember
        >>> from ember._core.generator import resolve
        >>> _ = ember.manual_seed(0)
        >>> binomial_array(resolve(None), np.array([10.0, 100.0]), np.array([0.5, 0.3])).tolist()
        [7.0, 31.0]
    """
    n = np.ascontiguousarray(count, dtype=np.float64).reshape(-1)
    p = np.ascontiguousarray(prob, dtype=np.float64).reshape(-1)
    out = np.empty(n.size, np.float64)
    loop = _compiled_loop(_binomial_loop)
    q = np.minimum(p, 1.0 - p)
    with np.errstate(invalid="ignore"):
        none = ~((n > 0.0) & (p > 0.0) & (p < 1.0))  # (NaN included)
        need = np.where(none, 0, np.where(n * q >= 10.0, 2, 1))
    _drive(g, n.size, _least_from(need), lambda buf, i: loop(n, p, buf, out, i))
    return out.reshape(np.shape(count))
