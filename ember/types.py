"""``ember.types``: the type aliases PyTorch programs use in annotations.

Example::

    >>> from ember.types import Number
    >>> isinstance(1.5, Number)
    True
"""

from __future__ import annotations

import os
from typing import IO, Union

from ._core.device import device as _device
from ._core.storage import UntypedStorage as Storage
from ._top_level import SymBool, SymFloat, SymInt

__all__ = ["Number", "Device", "FileLike", "Storage"]

#: a Python number
Number = Union[int, float, bool]  # noqa: UP007  (isinstance accepts it, as in PyTorch)
#: anything ``ember.device`` accepts, or None
Device = Union[_device, str, int, None]  # noqa: UP007
#: a path or a binary file object, as ``save``/``load`` take
FileLike = Union[str, os.PathLike[str], IO[bytes]]  # noqa: UP007
#: the symbolic number types (see ember/_top_level.py)
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = Union[SymInt, SymFloat, SymBool]  # noqa: UP007
IntLikeType = Union[int, SymInt]  # noqa: UP007
FloatLikeType = Union[float, SymFloat]  # noqa: UP007
BoolLikeType = Union[bool, SymBool]  # noqa: UP007
# torch's private annotation names (torchvision's tv_tensors import them)
from ._core.dtype import dtype as _dtype  # noqa: E402, F401
from ._core.size import Size as _Size  # noqa: E402

_size = Union[_Size, list, tuple]  # noqa: UP007
_int = int
_float = float
_bool = bool
