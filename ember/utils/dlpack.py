"""``ember.utils.dlpack``: exchanging tensors with other libraries through DLPack
(``torch.utils.dlpack``).

Both directions share memory: :func:`to_dlpack` hands out a capsule viewing a tensor's
array, and :func:`from_dlpack` wraps another library's array (or a capsule) without a copy.
"""

from __future__ import annotations

import enum

from .._small_functions import to_dlpack
from .._ops.from_data import from_dlpack as _from_dlpack_object

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """The device codes of the DLPack standard, as ``__dlpack_device__`` reports them.

    Example:
        >>> from ember.utils.dlpack import DLDeviceType
        >>> DLDeviceType.kDLCPU == 1
        True
    """

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


class _Capsule:
    """Presents a bare CPU DLPack capsule through the ``__dlpack__`` protocol, which is all
    NumPy's importer understands."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (DLDeviceType.kDLCPU, 0)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with ``ext_tensor``, an array from another library or a
    DLPack capsule.

    Args:
        ext_tensor: an object with ``__dlpack__``/``__dlpack_device__`` (a NumPy array, a
            tensor of another framework) or a ``"dltensor"`` capsule from ``to_dlpack``;
            a capsule can be consumed once.
        device (ember.device or str, optional): where the result should live; the data is
            moved there (a copy) if it is elsewhere.
        copy (bool, optional): True always copies; False or None shares memory where it can.

    Returns:
        Tensor: the imported tensor.

    Example:
        >>> import numpy as np
        >>> from ember.utils.dlpack import from_dlpack, to_dlpack
        >>> a = np.arange(3.0)
        >>> t = from_dlpack(a)
        >>> a[0] = 7.0
        >>> t
        tensor([7., 1., 2.], dtype=ember.float64)
        >>> from_dlpack(to_dlpack(t))
        tensor([7., 1., 2.], dtype=ember.float64)
    """
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    elif not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(
            f"from_dlpack(): expected an object implementing __dlpack__ or a DLPack capsule, "
            f"got {type(ext_tensor).__name__}")
    out = _from_dlpack_object(ext_tensor)
    if device is not None:
        out = out.to(device)
    if copy:
        out = out.clone()
    return out
