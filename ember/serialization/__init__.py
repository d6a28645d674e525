"""``ember.save`` / ``ember.load`` and ``ember.serialization``: PyTorch's checkpoint formats.

Files written here load in PyTorch (``torch.load(f, weights_only=True)``) and files written
by PyTorch load here without PyTorch installed: the zip format (NOTE [ Checkpoint layout ]
in ``_save.py``), the legacy pre-1.6 stream format (read and written), ``mmap=True``,
``map_location`` in all its forms (NOTE [ Storage locations ] in ``_locations.py``), and
whole pickled modules and optimizers with ``weights_only=False`` (NOTE [ Loading PyTorch's
classes ] in ``_unpickle.py``). ``weights_only=True`` is the default (NOTE [ Safe loading ]).
safetensors files are read and written by ``_safetensors.py``. See
../shared/design/FORMATS.md.

Layout: ``_save.py`` writes, ``_load.py`` reads, ``_unpickle.py`` holds the allow-list and
the unpicklers, ``_rebuild.py`` the functions a checkpoint's pickle calls,
``_locations.py`` the device registry, ``_config.py`` the process-wide settings.
"""

from __future__ import annotations

import contextlib
import copyreg  # noqa: F401 - part of torch.serialization's namespace
import pickle
import shutil
import struct
import tempfile
from collections.abc import Callable

from ._config import (
    MAP_PRIVATE, MAP_SHARED, LoadEndianness, get_crc32_options, get_default_load_endianness,
    get_default_mmap_options, set_crc32_options, set_default_load_endianness,
    set_default_mmap_options, skip_data,
)
from ._load import get_unsafe_globals_in_checkpoint, load
from ._locations import (
    default_restore_location, location_tag, normalize_storage_type, register_package,
    storage_to_tensor_type, validate_cuda_device, validate_hpu_device,
)
from .._core.device import device as _device
from .._core.storage import TypedStorage, UntypedStorage
from ..types import FileLike, Storage
from ._rebuild import StorageType
from ._safetensors import safetensors_load, safetensors_save
from ._save import MAGIC_NUMBER, PROTOCOL_VERSION, save
from ._unpickle import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = [
    "SourceChangeWarning", "mkdtemp", "register_package", "check_module_version_greater_or_equal",
    "validate_cuda_device", "validate_hpu_device", "location_tag", "default_restore_location",
    "normalize_storage_type", "storage_to_tensor_type", "save", "load", "StorageType",
    "LoadEndianness", "get_crc32_options", "set_crc32_options", "get_default_load_endianness",
    "set_default_load_endianness", "get_default_mmap_options", "set_default_mmap_options",
    "clear_safe_globals", "get_safe_globals", "add_safe_globals", "safe_globals",
    "get_unsafe_globals_in_checkpoint", "skip_data", "save_file", "load_file",
    "safetensors_save", "safetensors_load",
]

DEFAULT_PROTOCOL = 2
LONG_SIZE = struct.Struct("=l").size
INT_SIZE = struct.Struct("=i").size
SHORT_SIZE = struct.Struct("=h").size
STORAGE_KEY_SEPARATOR = ","
IS_WINDOWS = False
UNSAFE_MESSAGE = (
    "Since PyTorch 2.6 `load` defaults to `weights_only=True`. Loading with "
    "`weights_only=False` will likely succeed, but it can run arbitrary code: do it only if "
    "the file comes from a trusted source.")

# the annotation aliases PyTorch's module names (pyro's param store imports MAP_LOCATION)
#: what ``load``'s ``map_location`` takes
MAP_LOCATION = Callable[[Storage, str], Storage] | _device | str | dict[str, str] | None
#: the storage classes a checkpoint holds
STORAGE = Storage | TypedStorage | UntypedStorage

save_file = safetensors_save
load_file = safetensors_load


class SourceChangeWarning(Warning):
    """Warned when a module saved with its source was changed since (legacy format).

    Example::

        >>> issubclass(ember.serialization.SourceChangeWarning, Warning)
        True
    """


@contextlib.contextmanager
def mkdtemp():
    """A temporary directory, removed when the block ends.

    Returns:
        A context manager giving the directory's path.

    Example:
        >>> import os
        >>> with mkdtemp() as d:
        ...     os.path.isdir(d)
        True
    """
    path = tempfile.mkdtemp()
    try:
        yield path
    finally:
        shutil.rmtree(path)


def check_module_version_greater_or_equal(module, req_version_tuple,
                                          error_if_malformed=True) -> bool:
    """Whether ``module.__version__`` is at least ``req_version_tuple``.

    Args:
        module: a module with ``__version__`` like "x.y.z".
        req_version_tuple: e.g. ``(1, 20)``; each field is cast to its type for comparing.
        error_if_malformed: raise RuntimeError on a version that cannot be compared (else
            warn and answer True).

    Returns:
        bool.

    Example:
        >>> import numpy
        >>> check_module_version_greater_or_equal(numpy, (1, 0))
        True
    """
    import warnings

    try:
        fields = module.__version__.split(".")
        version = tuple(type(req)(fields[i]) for i, req in enumerate(req_version_tuple))
        return version >= req_version_tuple
    except Exception as e:
        message = (f"'{module.__name__}' module version string is malformed "
                   f"'{module.__version__}' and cannot be compared with tuple "
                   f"{req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from e
        warnings.warn(message + ", but continuing assuming that requirement is met",
                      stacklevel=2)
        return True


def get_source_lines_and_file(obj, error_msg=None):
    """The source lines, first line number and file of ``obj`` (as ``inspect`` finds them).

    Args:
        obj: a class or function.
        error_msg: added to the OSError when the source cannot be found.

    Returns:
        ``(lines, first_line_number, filename)``.

    Example:
        >>> lines, start, name = get_source_lines_and_file(mkdtemp)
        >>> start > 0
        True
    """
    import inspect

    try:
        filename = inspect.getsourcefile(obj)
        lines, start = inspect.getsourcelines(obj)
    except OSError as e:
        msg = f"Can't get source for {obj}."
        if error_msg:
            msg += "\n" + error_msg
        raise OSError(msg) from e
    return lines, start, filename



