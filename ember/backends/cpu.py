"""``ember.backends.cpu``: the SIMD level ember's CPU maths runs with.

Example::

    >>> ember.backends.cpu.get_cpu_capability() in (
    ...     "DEFAULT", "AVX2", "AVX512", "VSX", "Z VECTOR", "SVE256", "SVE128", "NO AVX")
    True
"""

from __future__ import annotations

import os
import platform

__all__ = ["get_cpu_capability"]


def _numpy_cpu_features() -> dict:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return __cpu_features__


def get_cpu_capability() -> str:
    """The vector instruction level of this CPU, as NumPy detects it, in PyTorch's words.

    x86: "AVX512" (AVX-512 F, BW, VL and DQ), "AVX2" (AVX2 and FMA), else "DEFAULT";
    ARM: "SVE256"/"SVE128" when NumPy sees SVE (by vector length), else "DEFAULT"; POWER:
    "VSX"; IBM Z: "Z VECTOR". As in PyTorch, the environment variable
    ``ATEN_CPU_CAPABILITY`` ("default", "avx2", "avx512") can only lower the level.

    Returns:
        The capability name.

    Example::

        >>> isinstance(ember.backends.cpu.get_cpu_capability(), str)
        True
    """
    features = {k for k, v in _numpy_cpu_features().items() if v}
    machine = platform.machine().lower()
    if machine.startswith(("ppc64", "powerpc")):
        return "VSX" if "VSX" in features else "DEFAULT"
    if machine.startswith("s390"):
        return "Z VECTOR" if "VX" in features else "DEFAULT"
    if machine in ("aarch64", "arm64"):
        if "SVE" not in features:
            return "DEFAULT"
        bits = _sve_bits()
        return f"SVE{bits}" if bits in (128, 256) else "DEFAULT"
    levels = ["DEFAULT"]
    if {"AVX2", "FMA3"} <= features:
        levels.append("AVX2")
        if {"AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ"} <= features:
            levels.append("AVX512")
    requested = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if requested in levels:
        return requested
    return levels[-1]


def _sve_bits() -> int:
    """The SVE vector length in bits (Linux), or 0 when it cannot be read."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        length = libc.prctl(51, 0, 0, 0, 0)  # PR_SVE_GET_VL: vector length in bytes
        return (length & 0xFFFF) * 8 if length > 0 else 0
    except (OSError, AttributeError):
        return 0
