"""Where storages live: the location tags written at save time ("cpu", "cuda:0") and the
registry of deserializers that move a loaded storage to its location, which ``map_location``
overrides.

NOTE [ Storage locations ]
Each saved storage carries a location string. Loading hands every storage to
``default_restore_location(storage, location)``, which asks the registered deserializers in
priority order (``register_package``). "cpu" keeps the storage; "cuda[:N]" moves it to
the GPU, and on a machine without one raises PyTorch's error telling the user to pass
``map_location="cpu"``. ``map_location`` rewrites the location (a string, a device, a dict
from saved to new locations) or replaces the step (a callable ``fn(storage, location)``
whose None result falls back to the default).
"""

from __future__ import annotations

import functools
import re

from .._core.device import device as _device
from .._core.storage import TypedStorage, UntypedStorage

_package_registry: list = []


def register_package(priority: int, tagger, deserializer) -> None:
    """Register how storages of a device are tagged at save time and restored at load time.

    Args:
        priority: lower runs first.
        tagger: ``fn(storage) -> str | None``, the location string of a storage it handles.
        deserializer: ``fn(storage, location) -> storage | None``, the storage moved to
            ``location`` when it handles that location.

    Returns:
        None.

    Example:
        >>> register_package(5, lambda s: None, lambda s, loc: None)
        >>> len(_package_registry) > 2
        True
    """
    _package_registry.append((priority, tagger, deserializer))
    _package_registry.sort(key=lambda entry: entry[0])


def _typename(obj):
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def location_tag(storage) -> str:
    """The location string saved for ``storage`` (a storage or tensor): "cpu", "cuda:0"...

    Args:
        storage: an ember storage or tensor.

    Returns:
        str.

    Example:
        >>> import ember
        >>> location_tag(ember.ones(2))
        'cpu'
    """
    for _, tagger, _ in _package_registry:
        location = tagger(storage)
        if location:
            return location
    raise RuntimeError(f"don't know how to determine data location of {_typename(storage)}")


def default_restore_location(storage, location: str):
    """Move ``storage`` to ``location`` with the first registered deserializer that
    handles it (NOTE [ Storage locations ]).

    Args:
        storage: the storage as read from the file (on the CPU).
        location: its location tag, e.g. "cpu" or "cuda:0".

    Returns:
        The storage on its location.

    Example:
        >>> import ember
        >>> s = ember.ones(2).untyped_storage()
        >>> default_restore_location(s, "cpu") is s
        True
    """
    for _, _, deserializer in _package_registry:
        result = deserializer(storage, location)
        if result is not None:
            return result
    raise RuntimeError(f"don't know how to restore data location of {_typename(storage)} "
                       f"(tagged with {location})")


def _validate_device(location, backend_name):
    import importlib

    module = importlib.import_module(f"ember.{backend_name}")
    device = _device(location)
    index = device.index or 0
    if not module.is_available():
        raise RuntimeError(
            f"Attempting to deserialize object on a {backend_name.upper()} device but "
            f"torch.{backend_name}.is_available() is False. If you are running on a CPU-only "
            "machine, please use torch.load with map_location=torch.device('cpu') to map your "
            "storages to the CPU.")
    count = module.device_count()
    if index >= count:
        raise RuntimeError(
            f"Attempting to deserialize object on {backend_name.upper()} device {index} but "
            f"torch.{backend_name}.device_count() is {count}. Please use torch.load with "
            "map_location to map your storages to an existing device.")
    return _device(backend_name, index)


def validate_cuda_device(location: str) -> int:
    """The CUDA device index of ``location``, after checking the device exists.

    Args:
        location: e.g. "cuda:1".

    Returns:
        int.

    Raises:
        RuntimeError: without CUDA, or for an index past ``cuda.device_count()``.

    Example:
        >>> try:
        ...     validate_cuda_device("cuda:0")
        ... except RuntimeError:
        ...     pass
    """
    return _validate_device(location, "cuda").index


def validate_hpu_device(location: str) -> int:
    """Always raises: ember has no HPU backend.

    Args:
        location: e.g. "hpu:0".

    Returns:
        Never returns.

    Example:
        >>> try:
        ...     validate_hpu_device("hpu:0")
        ... except RuntimeError:
        ...     pass
    """
    raise RuntimeError(
        "The HPU device module is not registered. If you are running on a CPU-only machine, "
        "please use torch.load with map_location=torch.device('cpu') to map your storages to "
        "the CPU.")


def _cpu_tag(obj):
    if obj.device.type == "cpu":
        return "cpu"
    return None


def _cpu_deserialize(obj, location):
    if location == "cpu":
        return obj
    return None


def _backend_tag(backend, obj):
    dev = obj.device
    if dev.type == backend:
        return backend if dev.index is None else f"{backend}:{dev.index}"
    return None


def _backend_deserialize(backend, obj, location):
    if location == backend or re.match(f"{backend}(:|[0-9]+)", location):
        return storage_to(obj, _validate_device(location, backend))
    return None


def storage_to(storage, device):
    """A copy of ``storage`` on ``device`` (the storage itself when already there)."""
    from .._core.backend import backends_by_name

    untyped = storage.untyped() if isinstance(storage, TypedStorage) else storage
    if untyped.device == device:
        return storage
    arr = untyped._array
    if device.type == "cpu":
        arr = arr.get() if hasattr(arr, "get") else arr
    else:
        arr = backends_by_name[device.type].xp.asarray(arr)
    moved = UntypedStorage._of_root(arr)
    return TypedStorage(moved, storage.dtype) if isinstance(storage, TypedStorage) else moved


register_package(10, _cpu_tag, _cpu_deserialize)
register_package(20, functools.partial(_backend_tag, "cuda"),
                 functools.partial(_backend_deserialize, "cuda"))


def restore_location_fn(map_location):
    """``fn(storage, location)`` that places a loaded storage as ``map_location`` asks."""
    if map_location is None:
        return default_restore_location
    if isinstance(map_location, dict):
        return lambda s, loc: default_restore_location(s, map_location.get(loc, loc))
    if isinstance(map_location, (str, bytes)):
        target = map_location.decode() if isinstance(map_location, bytes) else map_location
        return lambda s, loc: default_restore_location(s, target)
    if isinstance(map_location, _device):
        return lambda s, loc: default_restore_location(s, str(map_location))
    if not callable(map_location):
        raise TypeError(f"map_location: expected a string, device, dict or callable, got "
                        f"{type(map_location).__name__}")

    def restore(storage, location):
        result = map_location(storage, location)
        return default_restore_location(storage, location) if result is None else result

    return restore


def normalize_storage_type(storage_type):
    """The ember storage class named like ``storage_type``.

    Args:
        storage_type: a storage class.

    Returns:
        The class of that name in ``ember``.

    Example:
        >>> import ember
        >>> normalize_storage_type(ember.UntypedStorage) is ember.UntypedStorage
        True
    """
    import ember

    return getattr(ember, storage_type.__name__)


def storage_to_tensor_type(storage):
    """The legacy tensor type (``FloatTensor``...) of a typed storage.

    Args:
        storage: an ember ``TypedStorage``.

    Returns:
        The tensor type for its dtype.

    Example:
        >>> import ember
        >>> storage_to_tensor_type(ember.ones(2).storage()).__name__
        'FloatTensor'
    """
    import ember

    from ._rebuild import STORAGE_NAMES

    name = STORAGE_NAMES[storage.dtype].replace("Storage", "Tensor")
    if not hasattr(ember, name):
        raise AttributeError(f"module 'ember' has no attribute '{name}'")
    return getattr(ember, name)
