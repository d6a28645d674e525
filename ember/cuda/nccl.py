"""``ember.cuda.nccl``: whether NVIDIA's collective library (NCCL) is usable, and its version.

ember's collectives live in ``ember.distributed``; this module answers PyTorch's two
queries about NCCL through CuPy's bindings (``cupy.cuda.nccl``). Without CuPy or NCCL,
``is_available`` is False, as in PyTorch's CPU build.
"""

from __future__ import annotations

from . import _runtime

__all__ = ["SUM", "is_available", "version"]

SUM = 0  # ncclSum, the reduction PyTorch's nccl functions default to


def _nccl():
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl if getattr(nccl, "available", True) else None


def is_available(tensors) -> bool:
    """Whether NCCL can run collectives on ``tensors``: all dense, contiguous CUDA tensors on
    different devices, and NCCL installed.

    Args:
        tensors: a sequence of tensors.

    Returns:
        bool

    Example::

        >>> ember.cuda.nccl.is_available([])
        False
    """
    if not _runtime.is_compiled() or _nccl() is None:
        return False
    devices = set()
    for t in tensors:
        if t.is_sparse or not t.is_contiguous() or t.device.type != "cuda":
            return False
        if t.get_device() in devices:
            return False
        devices.add(t.get_device())
    return True


def version() -> tuple:
    """NCCL's version as ``(major, minor, patch)``.

    Returns:
        tuple of int

    Raises:
        AttributeError: without CuPy or NCCL, as PyTorch's CPU build raises.

    Example::

        >>> if ember.cuda.nccl.is_available([]):
        ...     major, minor, patch = ember.cuda.nccl.version()
    """
    nccl = _nccl() if _runtime.is_compiled() else None
    if nccl is None:
        raise AttributeError("ember.cuda.nccl.version: NCCL is not available (CuPy with NCCL "
                             "support is needed)")
    v = int(nccl.get_version())
    major, rest = (v // 10000, v % 10000) if v >= 10000 else (v // 1000, v % 1000)
    return major, rest // 100, rest % 100
