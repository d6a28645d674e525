"""``ember.backends.mkldnn``: the oneDNN (MKL-DNN) settings.

ember calls no oneDNN kernels (its CPU kernels are NumPy's), so ``is_available()`` is False
and the settings -- ``enabled`` (True), ``deterministic`` (False), ``allow_tf32`` (False),
``fp32_precision`` ("none") -- are recorded and read back as in PyTorch without changing what
ember computes. See NOTE [ Backend settings ] in ember/backends/_flags.py.

Example::

    >>> with ember.backends.mkldnn.flags(enabled=False):
    ...     ember.backends.mkldnn.enabled
    False
    >>> ember.backends.mkldnn.enabled
    True
"""

from __future__ import annotations

import contextlib
import sys

from ._flags import bool_setting, mutation_allowed, settings_module, value_setting

__all__ = ["flags", "is_available", "set_flags"]

_OWNER = "torch.backends.mkldnn"
_state = {"enabled": True, "deterministic": False, "allow_tf32": False,
          "fp32_precision": "none"}


def _check_precision(value):
    if value not in ("none", "ieee", "tf32", "bf16"):
        raise RuntimeError(f"Unknown precision: {value}")


def is_available() -> bool:
    """Whether ember runs oneDNN kernels: always False (its CPU kernels are NumPy's).

    Returns:
        False.

    Example::

        >>> ember.backends.mkldnn.is_available()
        False
    """
    return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    """Set the given settings (None leaves one unchanged); returns the previous values.

    Args:
        _enabled, _deterministic, _allow_tf32, _fp32_precision: new values of the settings.

    Returns:
        The tuple ``(enabled, deterministic, allow_tf32, fp32_precision)`` before the call.

    Example::

        >>> old = ember.backends.mkldnn.set_flags(False)
        >>> _ = ember.backends.mkldnn.set_flags(*old)
    """
    module = sys.modules[__name__]
    old = (_state["enabled"], _state["deterministic"], _state["allow_tf32"],
           _state["fp32_precision"])
    for name, value in (("enabled", _enabled), ("deterministic", _deterministic),
                        ("allow_tf32", _allow_tf32), ("fp32_precision", _fp32_precision)):
        if value is not None:
            with mutation_allowed():  # NOTE [ Frozen backend flags ]
                setattr(module, name, value)
    return old


@contextlib.contextmanager
def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    """A block with the given oneDNN settings; the previous ones come back on exit.

    As in PyTorch every setting takes the value given here, defaults included.

    Args:
        enabled, deterministic, allow_tf32, fp32_precision: the settings inside the block.

    Returns:
        A context manager.

    Example::

        >>> with ember.backends.mkldnn.flags(enabled=True, deterministic=True):
        ...     ember.backends.mkldnn.deterministic
        True
    """
    old = set_flags(enabled, deterministic, allow_tf32, fp32_precision)
    try:
        yield
    finally:
        set_flags(*old)


settings_module(__name__, {
    "enabled": bool_setting(_OWNER, "enabled", _state, freezable=True),
    "deterministic": bool_setting(_OWNER, "deterministic", _state, freezable=True),
    "allow_tf32": bool_setting(_OWNER, "allow_tf32", _state, freezable=True),
    "fp32_precision": value_setting("fp32_precision", _state, _check_precision,
                                     freezable_owner=_OWNER),
})
