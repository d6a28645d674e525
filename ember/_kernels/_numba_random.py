"""The numba loops behind the random ops (see ember/_ops/random_ops.py): ``randperm``'s
swaps, the AVX2 float32 normal blocks (NOTE [ AVX2 normal blocks ] in
ember/_core/rng_math.py) and the engine's words turned into uniforms and Bernoulli draws as
they are made (NOTE [ Draws made where they are used ] in ember/_core/generator.py).

All give the same numbers as their NumPy versions, bit for bit: the swaps are sequential
integer moves, the normal blocks repeat ``rng_math``'s float32 steps one element at a
time, with ``llvm.fma`` exactly where that module fuses (numba compiles without fast-math,
so LLVM contracts nothing else), and the engine is MT19937 as NumPy's bit generator runs
it, on that generator's own state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._numba import _bits_to_f32, _f32_to_bits, _fused

_f32 = np.float32
_ONE = _f32(1.0)
_ZERO = _f32(0.0)
_HALF = _f32(0.5)
_MIN_NORM = _f32(1.17549435e-38)
_SQRTHF = _f32(0.707106781186547524)
_L0, _L1, _L2 = _f32(7.0376836292e-2), _f32(-1.1514610310e-1), _f32(1.1676998740e-1)
_L3, _L4, _L5 = _f32(-1.2420140846e-1), _f32(1.4249322787e-1), _f32(-1.6668057665e-1)
_L6, _L7, _L8 = _f32(2.0000714765e-1), _f32(-2.4999993993e-1), _f32(3.3333331174e-1)
_Q1, _Q2 = _f32(-2.12194440e-4), _f32(0.693359375)
_FOPI = _f32(1.27323954473516)
_DP1, _DP2, _DP3 = _f32(-0.78515625), _f32(-2.4187564849853515625e-4), _f32(-3.77489497744594108e-8)
_C0, _C1, _C2 = _f32(2.443315711809948e-5), _f32(-1.388731625493765e-3), _f32(4.166664568298827e-2)
_S0, _S1, _S2 = _f32(-1.9515295891e-4), _f32(8.3321608736e-3), _f32(-1.6666654611e-1)
_MINUS_TWO = _f32(-2.0)
_TWO_PI = _f32(2 * np.pi)


@njit(cache=True, nogil=True)
def swap_forward(r, picks):  # pragma: no cover - compiled
    """Swap ``r[i]`` with ``r[i + picks[i]]`` for i = 0, 1, ... in turn (in place)."""
    for i in range(picks.shape[0]):
        j = i + picks[i]
        t = r[i]
        r[i] = r[j]
        r[j] = t


@njit(cache=True, nogil=True, inline="always")
def _log(x):  # pragma: no cover - compiled
    x = max(x, _MIN_NORM)
    bits = _f32_to_bits(x)
    e = _f32((bits >> 23) - 0x7F) + _ONE
    x = _bits_to_f32((bits & ~0x7F800000) | 0x3F000000)
    if x < _SQRTHF:
        x = (x - _ONE) + x
        e = e - _ONE
    else:
        x = (x - _ONE) + _ZERO
    z = x * x
    y = _fused(_L0, x, _L1)
    y = _fused(y, x, _L2)
    y = _fused(y, x, _L3)
    y = _fused(y, x, _L4)
    y = _fused(y, x, _L5)
    y = _fused(y, x, _L6)
    y = _fused(y, x, _L7)
    y = _fused(y, x, _L8)
    y = _fused(y * x, z, e * _Q1)
    y = _fused(-z, _HALF, y)
    return _fused(e, _Q2, x + y)


@njit(cache=True, nogil=True)
def normal16_avx2(u, mean, std, out):  # pragma: no cover - compiled
    """``rng_math.normal16_avx2`` for float32 ``u`` (a multiple of 16 long) into ``out``."""
    for b in range(0, u.shape[0], 16):
        for k in range(8):
            radius = np.sqrt(_MINUS_TWO * _log(_ONE - u[b + k]))
            x = _TWO_PI * u[b + 8 + k]
            negative = x < _ZERO
            x = abs(x)
            j = np.int32(x * _FOPI)
            j = (j + 1) & ~1
            y = _f32(j)
            x = _fused(y, _DP1, x)
            x = _fused(y, _DP2, x)
            x = _fused(y, _DP3, x)
            sin_negative = negative != ((j & 4) != 0)
            cos_negative = ((~(j - 2)) & 4) != 0
            z = x * x
            c = _fused(_C0, z, _C1)
            c = _fused(c, z, _C2)
            c = _fused(c * z, z, -(z * _HALF)) + _ONE
            s = _fused(_S0, z, _S1)
            s = _fused(s, z, _S2)
            s = _fused(s * z, x, x)
            if (j & 2) == 0:
                sn, cs = s, c
            else:
                sn, cs = c, s
            if sin_negative:
                sn = -sn
            if cos_negative:
                cs = -cs
            out[b + k] = _fused(radius * cs, std, mean)
            out[b + 8 + k] = _fused(radius * sn, std, mean)


# -- MT19937 on NumPy's bit generator state (NOTE [ Draws made where they are used ]) ------
# ``state`` is a uint32 view of NumPy's ``mt19937_state``: the 624 key words, then the
# position of the next word (a C int, never negative). The recurrence and the tempering are
# the published MT19937's.
_N, _M = 624, 397
_UPPER, _LOWER = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)
_MATRIX_A = np.uint32(0x9908B0DF)
_U1, _U0 = np.uint32(1), np.uint32(0)
_MASK53 = np.uint64((1 << 53) - 1)
_TWO_M53 = 2.0 ** -53


@njit(cache=True, nogil=True, inline="always")
def _mix(a, b, c):  # pragma: no cover - compiled
    y = (a & _UPPER) | (b & _LOWER)
    return c ^ (y >> _U1) ^ (_MATRIX_A if (y & _U1) else _U0)


@njit(cache=True, nogil=True)
def _refill(key):  # pragma: no cover - compiled
    """The next 624 key words, in place."""
    for i in range(_N - _M):
        key[i] = _mix(key[i], key[i + 1], key[i + _M])
    for i in range(_N - _M, _N - 1):
        key[i] = _mix(key[i], key[i + 1], key[i + _M - _N])
    key[_N - 1] = _mix(key[_N - 1], key[0], key[_M - 1])


@njit(cache=True, nogil=True, inline="always")
def _temper(y):  # pragma: no cover - compiled
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    return y ^ (y >> np.uint32(18))


@njit(cache=True, nogil=True)
def _fill(key, pos, out):  # pragma: no cover - compiled
    """The next ``len(out)`` words from position ``pos`` (refilling the key when it is
    spent) into ``out``; returns the new position. The tempering runs over runs of the key
    without a branch, which LLVM vectorises."""
    done, n = 0, out.shape[0]
    while done < n:
        if pos == _N:
            _refill(key)
            pos = 0
        m = min(n - done, _N - pos)
        for j in range(m):
            out[done + j] = _temper(key[pos + j])
        done += m
        pos += m
    return pos


# the words a kernel below turns into draws at a time (in cache between the two loops)
_BLOCK = 1024


@njit(cache=True, nogil=True, inline="always")
def _uniform53(w, j):  # pragma: no cover - compiled
    """The float64 uniform of the j-th pair of words in ``w`` (the first the high half)."""
    return np.float64(((w[2 * j] << np.uint64(32)) | w[2 * j + 1]) & _MASK53) * _TWO_M53


@njit(cache=True, nogil=True)
def words_into(state, out):  # pragma: no cover - compiled
    """The next ``len(out)`` words of the engine, as NumPy's ``random_raw`` gives them."""
    state[_N] = np.uint32(_fill(state[:_N], np.int64(state[_N]), out))


@njit(cache=True, nogil=True)
def uniform53_into(state, out, p=-1.0):  # pragma: no cover - compiled
    """Float64 uniforms on [0, 1): the low 53 bits of a 64-bit draw (two words, the first
    the high half), times 2**-53, into float64 ``out``; or, with ``p`` >= 0, Bernoulli draws:
    1 where the uniform is below ``p``, else 0, into ``out`` (float32, float64 or
    integers)."""
    key, pos = state[:_N], np.int64(state[_N])
    w = np.empty(_BLOCK, np.uint64)
    for a in range(0, out.shape[0], _BLOCK // 2):
        m = min(_BLOCK // 2, out.shape[0] - a)
        pos = _fill(key, pos, w[:2 * m])
        for j in range(m):
            u = _uniform53(w, j)
            out[a + j] = u if p < 0 else (1.0 if u < p else 0.0)
    state[_N] = np.uint32(pos)


@njit(cache=True, nogil=True)
def uniform_bits_into(state, bits, out):  # pragma: no cover - compiled
    """Float32 uniforms on [0, 1): the low ``bits`` (at most 24) bits of a word, times
    2**-bits; ``out`` float32."""
    key, pos = state[:_N], np.int64(state[_N])
    mask = np.uint64((1 << bits) - 1)
    scale = np.float32(2.0 ** -bits)
    w = np.empty(_BLOCK, np.uint64)
    for a in range(0, out.shape[0], _BLOCK):
        m = min(_BLOCK, out.shape[0] - a)
        pos = _fill(key, pos, w[:m])
        for j in range(m):
            out[a + j] = np.float32(w[j] & mask) * scale
    state[_N] = np.uint32(pos)
