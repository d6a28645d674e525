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
    """Normals from uniforms ``u`` (float32, a multiple of 16 long) by the AVX2 build's
    blocks of 16: lanes 0-7 take ``cos``, lanes 8-15 ``sin`` of the same pairs (a numba
    loop with the numba kernel backend, the same numbers)."""
    from .. import _kernels  # (kernels sit above _core: imported on first use)

    if _kernels.backend() == "numba":
        from .._kernels import _numba_random

        out = np.empty_like(u)
        _numba_random.normal16_avx2(u, _f32(mean), _f32(std), out)
        return out
    blocks = u.reshape(-1, 16)
    radius = np.sqrt(_f32(-2) * _log_avx2(_f32(1) - blocks[:, :8]))
    sin, cos = _sincos_avx2(_f32(2 * np.pi) * blocks[:, 8:])
    out = np.empty_like(blocks)
    out[:, :8] = fma32(radius * cos, _f32(std), _f32(mean))
    out[:, 8:] = fma32(radius * sin, _f32(std), _f32(mean))
    return out.reshape(-1)


def normal16_blocks(u, mean, std):
    """The same blocks as PyTorch's portable loop computes them (float64 always, float32
    without AVX2), in ``u``'s precision: the C library's log/cos/sin (float32 ones through
    float64, rounded back), the angle ``2 pi u`` rounded from float64, and the final
    ``z * std + mean`` fused in every build (measured: the portable build's blocks agree
    with the AVX2 build's on float64)."""
    blocks = u.reshape(-1, 16)
    out = np.empty_like(blocks)
    if blocks.dtype == np.float64:
        radius = np.sqrt(-2.0 * np.log(1.0 - blocks[:, :8]))
        theta = 2.0 * np.pi * blocks[:, 8:]
        out[:, :8] = fma64(radius * np.cos(theta), std, mean)
        out[:, 8:] = fma64(radius * np.sin(theta), std, mean)
        return out.reshape(-1)
    log = np.log((_f32(1) - blocks[:, :8]).astype(np.float64)).astype(_f32)
    radius = np.sqrt(_f32(-2) * log)
    theta = 2.0 * np.pi * blocks[:, 8:].astype(np.float64)
    theta = theta.astype(_f32).astype(np.float64)
    out[:, :8] = fma32(radius * np.cos(theta).astype(_f32), _f32(std), _f32(mean))
    out[:, 8:] = fma32(radius * np.sin(theta).astype(_f32), _f32(std), _f32(mean))
    return out.reshape(-1)
