"""What a distributed checkpoint records about each entry of the state dict.

The classes mirror ``torch.distributed.checkpoint.metadata`` field for field, and the
``.metadata`` file pickles them under PyTorch's class paths (see NOTE [ DCP on disk ] in
``filesystem.py``), so a checkpoint written by either framework loads in the other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BytesStorageMetadata", "ChunkStorageMetadata", "Metadata", "MetadataIndex",
           "StorageMeta", "TensorProperties", "TensorStorageMetadata"]


def _ember():
    import ember

    return ember


@dataclass
class ChunkStorageMetadata:
    """One stored piece of a tensor: where it starts and how large it is.

    Args:
        offsets (ember.Size): the piece's first index in every dimension.
        sizes (ember.Size): its extent in every dimension.

    Example::

        >>> from ember.distributed.checkpoint import ChunkStorageMetadata
        >>> ChunkStorageMetadata(ember.Size([0]), ember.Size([3])).sizes
        ember.Size([3])
    """

    offsets: Any
    sizes: Any


class _MEM_FORMAT_ENCODING(enum.Enum):  # noqa: N801 -- PyTorch's name, written into files
    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


def _formats():
    e = _ember()
    return {e.contiguous_format: _MEM_FORMAT_ENCODING.TORCH_CONTIGUOUS_FORMAT,
            e.channels_last: _MEM_FORMAT_ENCODING.TORCH_CHANNELS_LAST,
            e.preserve_format: _MEM_FORMAT_ENCODING.TORCH_PRESERVE_FORMAT}


@dataclass
class TensorProperties:
    """The properties a stored tensor is re-created with.

    Args:
        dtype (ember.dtype): default: the default dtype.
        layout (ember.layout): default: ``ember.strided``.
        requires_grad (bool): default: False.
        memory_format (ember.memory_format): default: ``ember.contiguous_format``.
        pin_memory (bool): default: False.

    Example::

        >>> from ember.distributed.checkpoint.metadata import TensorProperties
        >>> TensorProperties.create_from_tensor(ember.zeros(2, dtype=ember.int64)).dtype
        ember.int64
    """

    dtype: Any = field(default_factory=lambda: _ember().get_default_dtype())
    layout: Any = field(default_factory=lambda: _ember().strided)
    requires_grad: bool = False
    memory_format: Any = field(default_factory=lambda: _ember().contiguous_format)
    pin_memory: bool = False

    # PyTorch pickles these five fields as a tuple, the memory format as an enum member
    def __getstate__(self):
        encoding = _formats().get(self.memory_format)
        if encoding is None:
            raise RuntimeError(f"Invalid memory_format: {self.memory_format}")
        return (self.dtype, self.layout, self.requires_grad, encoding, self.pin_memory)

    def __setstate__(self, state):
        self.dtype, self.layout, self.requires_grad, encoding, self.pin_memory = state
        by_code = {v: k for k, v in _formats().items()}
        if encoding not in by_code:
            raise RuntimeError(f"Invalid memory_format encoding: {encoding}")
        self.memory_format = by_code[encoding]

    @staticmethod
    def create_from_tensor(tensor) -> TensorProperties:
        """The properties of ``tensor`` (stored contiguous).

        Args:
            tensor (Tensor): the tensor.

        Returns:
            TensorProperties
        """
        return TensorProperties(dtype=tensor.dtype, layout=tensor.layout,
                                requires_grad=tensor.requires_grad,
                                memory_format=_ember().contiguous_format,
                                pin_memory=tensor.is_pinned())


@dataclass
class TensorStorageMetadata:
    """A stored tensor: its properties, global size and the chunks it was written in.

    Args:
        properties (TensorProperties): dtype and the rest.
        size (ember.Size): the whole tensor's size.
        chunks (list of ChunkStorageMetadata): the stored pieces.

    Example::

        >>> from ember.distributed.checkpoint.metadata import *
        >>> TensorStorageMetadata(TensorProperties(), ember.Size([2]), []).size
        ember.Size([2])
    """

    properties: TensorProperties
    size: Any
    chunks: list


@dataclass
class BytesStorageMetadata:
    """A stored non-tensor value (pickled with ``ember.save``).

    Example::

        >>> from ember.distributed.checkpoint import BytesStorageMetadata
        >>> BytesStorageMetadata()
        BytesStorageMetadata()
    """


@dataclass
class StorageMeta:
    """Where and when a checkpoint was written.

    Args:
        checkpoint_id (str or os.PathLike, optional): the checkpoint's path.
        save_id (str, optional): a unique id of the save.
        load_id (str, optional): a unique id of the load.
        modules (list of str): module names recorded by the writer.

    Example::

        >>> from ember.distributed.checkpoint.metadata import StorageMeta
        >>> StorageMeta("ck").modules
        []
    """

    checkpoint_id: Any = None
    save_id: Any = None
    load_id: Any = None
    modules: list = field(default_factory=list)


@dataclass
class Metadata:
    """The contents of a checkpoint's ``.metadata`` file.

    Args:
        state_dict_metadata (dict): flattened key -> TensorStorageMetadata or
            BytesStorageMetadata.
        planner_data: flattened key -> the path of keys and list indices in the nested
            state dict.
        storage_data: MetadataIndex -> where the item's bytes are.
        storage_meta (StorageMeta, optional): the checkpoint id and save id.
        version (str, optional): the format version ("1.0.0").

    Example::

        >>> from ember.distributed.checkpoint import Metadata
        >>> Metadata({}).version is None
        True
    """

    state_dict_metadata: dict
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Any = None
    version: Any = None


@dataclass(frozen=True)
class MetadataIndex:
    """The key of one stored item: its flattened name and, for a tensor chunk, the chunk's
    offsets (``index`` is a lookup hint, ignored by equality and hashing).

    Args:
        fqn (str): the flattened key.
        offset (sequence of int, optional): the chunk's offsets.
        index (int, optional): the chunk's position in its list.

    Example::

        >>> from ember.distributed.checkpoint.metadata import MetadataIndex
        >>> MetadataIndex("w", [0, 0], 0) == MetadataIndex("w", [0, 0])
        True
    """

    fqn: str
    offset: Any = None
    index: Any = field(hash=False, compare=False, default=None)

    def __init__(self, fqn: str, offset=None, index=None):
        object.__setattr__(self, "fqn", fqn)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "offset",
                           None if offset is None else _ember().Size(offset))

