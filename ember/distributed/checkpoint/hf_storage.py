"""Distributed checkpoints in Hugging Face's safetensors layout
(``torch.distributed.checkpoint.hf_storage``).

ember does not read or write this layout yet: the two classes exist so that libraries which
import them at load time (transformers) import, and constructing either raises
NotImplementedError naming what is missing. ember's own distributed checkpoints
(``FileSystemWriter``/``FileSystemReader``) and single-process safetensors files
(``save_pretrained``) work.

Example::

    >>> from ember.distributed.checkpoint.hf_storage import HuggingFaceStorageReader
    >>> HuggingFaceStorageReader("ckpt")
    Traceback (most recent call last):
    ...
    NotImplementedError: HuggingFaceStorageReader: distributed checkpoints in Hugging Face's ...
"""

from __future__ import annotations

from .storage import StorageReader, StorageWriter

__all__ = ["HuggingFaceStorageReader", "HuggingFaceStorageWriter"]


def _missing(cls):
    raise NotImplementedError(
        f"{cls.__name__}: distributed checkpoints in Hugging Face's safetensors layout are not "
        "implemented in ember yet")


class HuggingFaceStorageWriter(StorageWriter):
    """Writes a distributed checkpoint as safetensors files (not implemented in ember yet).

    Args:
        path (str): the checkpoint folder.
        **kwargs: PyTorch's options (fqn_to_index_mapping, save_distributed, ...).

    Returns:
        Never: construction raises NotImplementedError.

    Example::

        >>> HuggingFaceStorageWriter("ckpt")  # doctest: +SKIP
    """

    def __new__(cls, *args, **kwargs):
        _missing(cls)


class HuggingFaceStorageReader(StorageReader):
    """Reads a distributed checkpoint from safetensors files (not implemented in ember yet).

    Args:
        path (str): the checkpoint folder.
        **kwargs: PyTorch's options.

    Returns:
        Never: construction raises NotImplementedError.

    Example::

        >>> HuggingFaceStorageReader("ckpt")  # doctest: +SKIP
    """

    def __new__(cls, *args, **kwargs):
        _missing(cls)
