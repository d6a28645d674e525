"""``ember.backends.cudnn``: the cuDNN settings scripts set (``benchmark``, ``deterministic``).

ember calls no cuDNN kernels (convolutions run as matrix products on NumPy or CuPy), so
``is_available()`` is False and the settings are recorded and read back as in PyTorch without
changing what ember computes. See NOTE [ Backend settings ] in ember/backends/_flags.py.

Settings (assign and read as module attributes): ``enabled`` (True), ``benchmark`` (False),
``deterministic`` (False), ``allow_tf32`` (True), ``benchmark_limit`` (None),
``fp32_precision`` ("none").

Example::

    >>> import ember.backends.cudnn as cudnn
    >>> cudnn.benchmark = True
    >>> cudnn.benchmark
    True
    >>> cudnn.benchmark = False
"""

from __future__ import annotations

import contextlib

from ._flags import bool_setting, mutation_allowed, settings_module, value_setting

__all__ = ["flags", "is_acceptable", "is_available", "set_flags", "version"]

_OWNER = "torch.backends.cudnn"
_FP32_PRECISIONS = ("none", "ieee", "tf32")

_state = {
    "enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True,
    "benchmark_limit": None, "fp32_precision": "none",
}


def _check_precision(value):
    if value not in _FP32_PRECISIONS:
        raise RuntimeError(f"Unknown precision: {value}")


def _frontend_version():
    """cuDNN's version through the frontend, or None (no GPU, no CuPy or no frontend); never
    imports CuPy on a machine without CUDA."""
    from .. import cuda

    if not cuda.is_available():
        return None
    from ..cuda import _cudnn

    return _cudnn.version()


def is_available() -> bool:
    """Whether ember can run cuDNN kernels: a GPU, CuPy and NVIDIA's cuDNN frontend
    (``nvidia-cudnn-frontend``, NOTE [ cuDNN graphs ] in ember/cuda/_cudnn.py).

    Returns:
        bool: False on machines without them, as a CPU-only PyTorch answers.

    Example::

        >>> isinstance(ember.backends.cudnn.is_available(), bool)
        True
    """
    return _frontend_version() is not None


def version():
    """cuDNN's version number (e.g. 91900 for 9.19.0), or None when cuDNN is not available.

    Returns:
        int | None.

    Example::

        >>> v = ember.backends.cudnn.version()
        >>> v is None or v > 0
        True
    """
    return _frontend_version()


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take ``tensor``: a CUDA tensor of a floating dtype cuDNN
    supports, with cuDNN available and enabled.

    Args:
        tensor: any tensor.

    Returns:
        bool.

    Example::

        >>> ember.backends.cudnn.is_acceptable(ember.zeros(2))
        False
    """
    if not _state["enabled"] or tensor.device.type != "cuda":
        return False
    return tensor.dtype.is_floating_point and tensor.dtype.itemsize <= 8 and is_available()


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None,
              _allow_tf32=None, _fp32_precision="none"):
    """Set the given settings (None leaves one unchanged); returns the previous values.

    Args:
        _enabled, _benchmark, _benchmark_limit: new values of the settings of the same names.
        _deterministic, _allow_tf32, _fp32_precision: likewise.

    Returns:
        The tuple ``(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
        fp32_precision)`` as it was before the call.

    Example::

        >>> old = ember.backends.cudnn.set_flags(_benchmark=True)
        >>> _ = ember.backends.cudnn.set_flags(*old)
    """
    import sys

    module = sys.modules[__name__]
    old = (_state["enabled"], _state["benchmark"], _state["benchmark_limit"],
           _state["deterministic"], _state["allow_tf32"], _state["fp32_precision"])
    new = {"enabled": _enabled, "benchmark": _benchmark, "benchmark_limit": _benchmark_limit,
           "deterministic": _deterministic, "allow_tf32": _allow_tf32,
           "fp32_precision": _fp32_precision}
    for name, value in new.items():
        if value is not None:
            with mutation_allowed():  # NOTE [ Frozen backend flags ]
                setattr(module, name, value)
    return old


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True, fp32_precision="none"):
    """A block with the given cuDNN settings; the previous ones come back on exit.

    As in PyTorch, every setting takes the value given here, defaults included
    (``with flags():`` runs with ``enabled=False``).

    Args:
        enabled, benchmark, benchmark_limit, deterministic, allow_tf32, fp32_precision:
            the settings inside the block.

    Returns:
        A context manager.

    Example::

        >>> with ember.backends.cudnn.flags(enabled=True, deterministic=True):
        ...     ember.backends.cudnn.deterministic
        True
        >>> ember.backends.cudnn.deterministic
        False
    """
    old = set_flags(enabled, benchmark, benchmark_limit, deterministic, allow_tf32,
                    fp32_precision)
    try:
        yield
    finally:
        set_flags(*old)


settings_module(__name__, {
    "enabled": bool_setting(_OWNER, "enabled", _state, freezable=True),
    "benchmark": bool_setting(_OWNER, "benchmark", _state, freezable=True),
    "deterministic": bool_setting(_OWNER, "deterministic", _state, freezable=True),
    "allow_tf32": bool_setting(_OWNER, "allow_tf32", _state, freezable=True),
    "benchmark_limit": value_setting("benchmark_limit", _state),
    "fp32_precision": value_setting("fp32_precision", _state, _check_precision,
                                     freezable_owner=_OWNER),
})
