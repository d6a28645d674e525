"""The floating-point arithmetic of PyTorch's CPU random transforms, reproduced exactly.

See NOTE [ Random number generation ] in generator.py for what is matched and why. This
module holds the pieces that make the results bit-exact rather than merely close:

- ``cpu_capability()``: which of PyTorch's CPU kernel builds would run on this machine
  (``ATEN_CPU_CAPABILITY`` honoured), since the builds round differently;
- ``fma32`` / ``fma64``: fused multiply-adds (the AVX2 and AVX-512 builds contract
  ``a * b + c`` into one FMA instruction);
- ``normal16_avx2``: the float32 Box-Muller blocks of the AVX2 build, whose log, sin and cos
  are Cephes-style float32 polynomials evaluated with FMAs, not the C library's functions.
"""

from __future__ import annotations

import functools
import os

import numpy as np

_f32 = np.float32


@functools.cache
def _cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_capability() -> str:
    """The CPU kernel build PyTorch would dispatch to here: ``"avx512"``, ``"avx2"`` or
    ``"default"``.

    PyTorch picks the best build the CPU supports (AVX-512 needs the F, BW, VL and DQ
    extensions, AVX2 needs AVX2 and FMA); the ``ATEN_CPU_CAPABILITY`` environment variable
    can only lower that choice. Machines that are not x86 report ``"default"``.

    Returns:
        str: the capability name.

    Example:
        >>> from ember._core.rng_math import cpu_capability
        >>> cpu_capability() in ("default", "avx2", "avx512")
        True
    """
    flags = _cpu_flags()
    best = "default"
    if {"avx2", "fma"} <= flags:
        best = "avx2"
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            best = "avx512"
    order = ("default", "avx2", "avx512")
    asked = os.environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if asked in order and order.index(asked) < order.index(best):
        return asked
    return best


def fused() -> bool:
    """Whether this machine's PyTorch kernels contract ``a * b + c`` into FMAs."""
    return cpu_capability() != "default"


# ------------------------------------------------------------------------------------------------
# fused multiply-add: ember's own, NOTE [ Fused multiply-add as PyTorch's kernels ] in
# ember/_ops/_fma.py (a compiled ufunc with numba, exact NumPy emulation without)

_fma_impl = []


def _fma(a, b, c, dtype):
    if not _fma_impl:
        from .._ops import _fma as fma_module  # (ops sit above _core: imported on first use)

        _fma_impl.append(fma_module.fma)
    return _fma_impl[0](a, b, c, dtype)


def fma32(a, b, c) -> np.ndarray:
    """``a * b + c`` in float32, rounded once."""
    return _fma(a, b, c, np.float32)


def fma64(a, b, c) -> np.ndarray:
    """``a * b + c`` in float64, rounded once."""
    return _fma(a, b, c, np.float64)


def affine64(x, scale, shift, fuse):
    """``x * scale + shift`` in float64, fused or as two roundings (PyTorch's build)."""
    if fuse:
        return fma64(x, scale, shift)
    return x * scale + shift


def affine32(x, scale, shift, fuse):
    """``x * scale + shift`` in float32, fused or as two roundings."""
    if fuse:
        return fma32(x, _f32(scale), _f32(shift))
    return (x * _f32(scale)).astype(_f32) + _f32(shift)


# ------------------------------------------------------------------------------------------------
# the AVX2 build's float32 Box-Muller
#
# NOTE [ AVX2 normal blocks ]
# PyTorch's AVX2 kernel for float32 normals evaluates log, sin and cos eight lanes at a time
# with the single-precision Cephes polynomials popularised by the public "avx_mathfun"
# header, and the compiler contracts each multiply that feeds an add into an FMA. The
# functions below follow those polynomials step by step in float32, with an FMA exactly
# where the compiled kernel has one (found by matching PyTorch's output over thousands of
# blocks); results are bit-identical to PyTorch's, unlike the C library's log/sin/cos.

_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1)


def _log_avx2(x):
    x = np.maximum(x, _f32(1.17549435e-38))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_f32) + _f32(1)
    x = ((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)).view(_f32)  # in [0.5, 1)
    small = x < _f32(0.707106781186547524)
    x = (x - _f32(1)) + np.where(small, x, _f32(0))
    e = e - np.where(small, _f32(1), _f32(0))
    z = x * x
    y = np.full_like(x, _f32(_LOG_P[0]))
    for p in _LOG_P[1:]:
        y = fma32(y, x, _f32(p))
    y = fma32(y * x, z, e * _f32(-2.12194440e-4))
    y = fma32(-z, _f32(0.5), y)
    return fma32(e, _f32(0.693359375), x + y)


def _sincos_avx2(x):
    negative = np.signbit(x)
    x = np.abs(x)
    j = (x * _f32(1.27323954473516)).astype(np.int32)  # 4 / pi, truncated
    j = (j + 1) & ~1
    y = j.astype(_f32)
    for step in (-0.78515625, -2.4187564849853515625e-4, -3.77489497744594108e-8):
        x = fma32(y, _f32(step), x)
    sin_negative = negative ^ ((j & 4) != 0)
    cos_negative = (~(j - 2) & 4) != 0
    use_poly = (j & 2) == 0
    z = x * x
    c = np.full_like(x, _f32(2.443315711809948e-5))
    c = fma32(c, z, _f32(-1.388731625493765e-3))
    c = fma32(c, z, _f32(4.166664568298827e-2))
    c = fma32(c * z, z, -(z * _f32(0.5))) + _f32(1)
    s = np.full_like(x, _f32(-1.9515295891e-4))
    s = fma32(s, z, _f32(8.3321608736e-3))
    s = fma32(s, z, _f32(-1.6666654611e-1))
    s = fma32(s * z, x, x)
    sin = np.where(use_poly, s, c)
    cos = np.where(use_poly, c, s)
    return np.where(sin_negative, -sin, sin), np.where(cos_negative, -cos, cos)


def normal16_avx2(u, mean, std):
    """Normals from uniforms ``u`` (float32 multiples of 2**-24 in [0, 1), as the 24-bit
    draws give them; a multiple of 16 long) by the AVX2 build's blocks of 16: lanes 0-7
    take ``cos``, lanes 8-15 ``sin`` of the same pairs (a numba loop with the numba kernel
    backend; without it NOTE [ AVX2 normal blocks without numba ]; the same numbers)."""
    from .. import _kernels  # (kernels sit above _core: imported on first use)

    if _kernels.backend() == "numba":
        from .._kernels import _numba_random

        out = np.empty_like(u)
        _numba_random.normal16_avx2(u, _f32(mean), _f32(std), out)
        return out
    blocks = u.reshape(-1, 16)
    out = np.empty_like(blocks)
    mean32, std32 = _f32(mean), _f32(std)
    h = np.empty(min(len(blocks), _CHUNK) * 8)
    for lo in range(0, len(blocks), _CHUNK):
        part = blocks[lo:lo + _CHUNK]
        k = part.shape[0] * 8
        radius = np.sqrt(_f32(-2) * _log_avx2_fast(_f32(1) - part[:, :8].reshape(k), h[:k]))
        sin, cos = _sincos_avx2_fast(_f32(2 * np.pi) * part[:, 8:].reshape(k), h[:k])
        dest = out[lo:lo + _CHUNK]
        dest[:, :8] = fma32(radius * cos, std32, mean32).reshape(-1, 8)
        dest[:, 8:] = fma32(radius * sin, std32, mean32).reshape(-1, 8)
    return out.reshape(-1)


# NOTE [ AVX2 normal blocks without numba ]
# Each FMA of the polynomials emulated in general (ember/_ops/_fma.py) takes a dozen passes
# over the data, and two dozen of them made a million float32 normals cost 125 ms. Here
# the inputs are special: ``normal16_avx2`` sees uniforms that are multiples of 2**-24 (24
# bits of a word), so ``_log_avx2`` and ``_sincos_avx2`` have 2**24 possible inputs each.
# The fast versions below take every ``a * b + c`` as the float64 product (exact) plus
# ``c``, rounded to float32 -- the fused result except where the float64 sum falls on a
# float32 halfway point while the exact sum does not -- and that corner never happens for
# these inputs: all 2**24 of them were run through both fast functions and through the
# compiled path's true FMAs (``_kernels/_numba_random.py``), with identical bits for every
# one (tests/test_random_without_numba.py repeats it on a sample). The log's Horner steps
# are even exact in float64 (x is a multiple of 2**-24 and every partial sum stays above
# 2**-5, checked over all float32 mantissas), as is the last reduction step of sin/cos.
# FMAs whose product is exact in float32 (a small integer times a constant of few bits,
# or times 0.5) are a float32 add: one rounding, as in the FMA. ``_CHUNK`` blocks at a
# time keep the float64 temporaries within the L2 cache while spreading NumPy's per-call
# cost (measured on a loaded two-core VM: 1024 blocks 77 ms, 8192 45 ms, all at once
# 52 ms per million).

_CHUNK = 8192


def _fma_f32(a, b, c, h):
    """``float32(a * b + c)`` through float64 (``h``: a scratch buffer of the size)."""
    np.multiply(a, b, out=h, dtype=np.float64)
    np.add(h, c, out=h, dtype=np.float64)
    return h.astype(_f32)


def _log_avx2_fast(x, h):
    """``_log_avx2`` for multiples of 2**-24 in (0, 1] (NOTE [ AVX2 normal blocks without
    numba ])."""
    x = np.maximum(x, _f32(1.17549435e-38))
    bits = x.view(np.int32)
    e = ((bits >> 23) - 0x7F).astype(_f32)
    e += _f32(1)
    bits &= np.int32(~0x7F800000)
    bits |= np.int32(0x3F000000)  # x in [0.5, 1)
    small = x < _f32(0.707106781186547524)
    x = (x - _f32(1)) + np.where(small, x, _f32(0))
    e -= small
    z = x * x
    y = _fma_f32(_f32(_LOG_P[0]), x, _f32(_LOG_P[1]), h)
    for p in _LOG_P[2:]:
        y = _fma_f32(y, x, _f32(p), h)
    y = _fma_f32(y * x, z, e * _f32(-2.12194440e-4), h)
    y += -z * _f32(0.5)  # the product is exact: the FMA is this one rounding
    y += x
    y += e * _f32(0.693359375)  # (exact: e is a small integer)
    return y


def _sincos_avx2_fast(x, h):
    """``_sincos_avx2`` for ``2 pi`` times multiples of 2**-24 in [0, 1) (NOTE [ AVX2 normal
    blocks without numba ])."""
    negative = np.signbit(x)
    x = np.abs(x)
    j = (x * _f32(1.27323954473516)).astype(np.int32)
    j += 1
    j &= ~1
    y = j.astype(_f32)  # 0, 2, 4, 6 or 8
    x += y * _f32(-0.78515625)  # (exact products: the FMAs are these roundings)
    x += y * _f32(-2.4187564849853515625e-4)
    x = _fma_f32(y, _f32(-3.77489497744594108e-8), x, h)
    sin_negative = negative ^ ((j & 4) != 0)
    cos_negative = (~(j - 2) & 4) != 0
    use_poly = (j & 2) == 0
    z = x * x
    c = _fma_f32(_f32(2.443315711809948e-5), z, _f32(-1.388731625493765e-3), h)
    c = _fma_f32(c, z, _f32(4.166664568298827e-2), h)
    c = _fma_f32(c * z, z, -(z * _f32(0.5)), h)
    c += _f32(1)
    s = _fma_f32(_f32(-1.9515295891e-4), z, _f32(8.3321608736e-3), h)
    s = _fma_f32(s, z, _f32(-1.6666654611e-1), h)
    s = _fma_f32(s * z, x, x, h)
    sin = np.where(use_poly, s, c)
    cos = np.where(use_poly, c, s)
    np.negative(sin, out=sin, where=sin_negative)
    np.negative(cos, out=cos, where=cos_negative)
    return sin, cos


# NOTE [ The C library's float64 log on AVX-512 ]
# PyTorch's scalar random loops (float64 normal blocks, Box-Muller pairs, exponential,
# geometric, log-normal, Cauchy) call the C library's log, log1p, exp and tan. NumPy calls
# them too on x86 machines without AVX-512; with AVX-512F it runs its own SIMD versions,
# one ulp away for about one input in 300 (log), 14 (log1p), 20 (exp) and 200 (tan)
# (measured on an AMD EPYC with AVX-512, NumPy 2.4; cos and sin agreed). SciPy's Box-Cox
# transforms at lambda 0 are the C library's log and log1p themselves, and its inverse
# Box-Cox at 0 its exp (~13 ns an element against NumPy's ~1); tan goes through Python's
# ``math.tan`` per element (Cauchy draws only). ``c_math`` takes that route for a function
# where a probe at first use finds NumPy's differ, and NumPy's everywhere else.


@functools.cache
def _numpy_matches_libm(name):
    import math

    probe = np.random.default_rng(20261128).random(4096)
    if name == "log1p":
        probe = -probe
    if name == "exp":
        probe = probe * 20 - 10
    elif name == "tan":
        probe = probe * 3 - 1.5
    ours = getattr(np, name)(probe)
    ref = getattr(math, name)
    return all(float(a) == ref(float(x)) for a, x in zip(ours, probe))


def _boxcox_log(x):
    from scipy.special import boxcox

    return boxcox(x, 0.0)


def _boxcox_log1p(x):
    from scipy.special import boxcox1p

    return boxcox1p(x, 0.0)


def _boxcox_exp(x):
    from scipy.special import inv_boxcox

    return inv_boxcox(x, 0.0)


def _python_tan(x):
    import math

    x = np.asarray(x, np.float64)
    return np.fromiter(map(math.tan, x.reshape(-1).tolist()), np.float64,
                       count=x.size).reshape(x.shape)


_LIBM_ROUTES = {"log": _boxcox_log, "log1p": _boxcox_log1p, "exp": _boxcox_exp,
                "tan": _python_tan}


def c_math(name, x):
    """The C library's ``name`` (``"log"``, ``"log1p"``, ``"exp"`` or ``"tan"``) of the
    float64 array ``x``, element-wise: NumPy's function where it agrees with the C library
    on this machine, else a route through the C library's own (NOTE [ The C library's float64
    log on AVX-512 ]).

    Args:
        name (str): the function.
        x: a float64 NumPy array.

    Returns:
        ndarray: float64 of ``x``'s shape.

    Example::

        >>> float(c_math("log", np.array([1.0]))[0]), float(c_math("exp", np.zeros(1))[0])
        (0.0, 1.0)
    """
    if _numpy_matches_libm(name):
        return getattr(np, name)(x)
    return _LIBM_ROUTES[name](x)


def normal16_blocks(u, mean, std):
    """The same blocks as PyTorch's portable loop computes them (float64 always, float32
    without AVX2), in ``u``'s precision: the C library's log/cos/sin (float32 ones through
    float64, rounded back), the angle ``2 pi u`` rounded from float64, and the final
    ``z * std + mean`` fused in every build (measured: the portable build's blocks agree
    with the AVX2 build's on float64)."""
    blocks = u.reshape(-1, 16)
    out = np.empty_like(blocks)
    if blocks.dtype == np.float64:
        radius = np.sqrt(-2.0 * c_math("log", 1.0 - blocks[:, :8]))
        theta = 2.0 * np.pi * blocks[:, 8:]
        out[:, :8] = fma64(radius * np.cos(theta), std, mean)
        out[:, 8:] = fma64(radius * np.sin(theta), std, mean)
        return out.reshape(-1)
    log = c_math("log", (_f32(1) - blocks[:, :8]).astype(np.float64)).astype(_f32)
    radius = np.sqrt(_f32(-2) * log)
    theta = 2.0 * np.pi * blocks[:, 8:].astype(np.float64)
    theta = theta.astype(_f32).astype(np.float64)
    out[:, :8] = fma32(radius * np.cos(theta).astype(_f32), _f32(std), _f32(mean))
    out[:, 8:] = fma32(radius * np.sin(theta).astype(_f32), _f32(std), _f32(mean))
    return out.reshape(-1)
