"""Process-wide serialization settings: the fallback byte order, CRC32 on save, mmap flags,
and the thread-local ``skip_data`` switch."""

from __future__ import annotations

import enum
import mmap
import threading

MAP_PRIVATE = getattr(mmap, "MAP_PRIVATE", None)
MAP_SHARED = getattr(mmap, "MAP_SHARED", None)


class LoadEndianness(enum.Enum):
    """Byte order assumed for checkpoints that carry no ``byteorder`` record.

    Example:
        >>> LoadEndianness.LITTLE.value
        2
    """

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_settings = {"endianness": None, "crc32": True, "mmap_flags": MAP_PRIVATE}


class _Local(threading.local):
    skip_data = False


_local = _Local()


def skipping_data() -> bool:
    return _local.skip_data


def get_default_load_endianness():
    """The byte order assumed for checkpoints without a ``byteorder`` record.

    Returns:
        A ``LoadEndianness`` or None (native order, the default).

    Example:
        >>> get_default_load_endianness() is None
        True
    """
    return _settings["endianness"]


def set_default_load_endianness(endianness) -> None:
    """Set the byte order assumed for checkpoints without a ``byteorder`` record.

    Args:
        endianness: a ``LoadEndianness`` or None.

    Returns:
        None.

    Example:
        >>> set_default_load_endianness(LoadEndianness.LITTLE)
        >>> set_default_load_endianness(None)
    """
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _settings["endianness"] = endianness


def get_crc32_options() -> bool:
    """Whether ``save`` records CRC32 checksums (always done by ember's zip writer).

    Returns:
        bool.

    Example:
        >>> get_crc32_options()
        True
    """
    return _settings["crc32"]


def set_crc32_options(compute_crc32: bool) -> None:
    """Record the CRC32 preference (ember always writes valid checksums; loads never need
    them).

    Args:
        compute_crc32: the new setting.

    Returns:
        None.

    Example:
        >>> set_crc32_options(True)
    """
    _settings["crc32"] = bool(compute_crc32)


def get_default_mmap_options():
    """The mmap flags ``load(..., mmap=True)`` uses: ``mmap.MAP_PRIVATE`` (copy on write,
    the default) or ``mmap.MAP_SHARED`` (writes reach the file).

    Returns:
        int.

    Example:
        >>> import mmap
        >>> get_default_mmap_options() == mmap.MAP_PRIVATE
        True
    """
    return _settings["mmap_flags"]


class set_default_mmap_options:
    """Set the mmap flags for ``load(..., mmap=True)``; as a context manager, only inside
    the block.

    Args:
        flags: ``mmap.MAP_PRIVATE`` or ``mmap.MAP_SHARED``.

    Example:
        >>> import mmap
        >>> with set_default_mmap_options(mmap.MAP_SHARED):
        ...     get_default_mmap_options() == mmap.MAP_SHARED
        True
    """

    def __init__(self, flags: int):
        if MAP_PRIVATE is None:
            raise RuntimeError(
                "Changing the default mmap options is currently not supported for Windows")
        if flags != MAP_PRIVATE and flags != MAP_SHARED:
            raise ValueError("Invalid argument in function set_default_mmap_options, expected "
                             f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}")
        self.prev = _settings["mmap_flags"]
        _settings["mmap_flags"] = flags

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        _settings["mmap_flags"] = self.prev
        return False


class skip_data:
    """Context manager: ``save`` writes zeros instead of storage bytes and ``load`` leaves
    storages unread (zero-filled), e.g. to lay out a checkpoint before filling it.

    Args:
        materialize_fake_tensors: accepted for PyTorch compatibility (ember has no fake
            tensors).

    Example:
        >>> import ember, io
        >>> buf = io.BytesIO()
        >>> with skip_data():
        ...     ember.save(ember.ones(2), buf)
        >>> _ = buf.seek(0); ember.load(buf)
        tensor([0., 0.])
    """

    def __init__(self, materialize_fake_tensors: bool = False):
        self.materialize_fake_tensors = materialize_fake_tensors

    def __enter__(self):
        self._prev = _local.skip_data
        _local.skip_data = True

    def __exit__(self, *exc):
        _local.skip_data = self._prev
        return False
