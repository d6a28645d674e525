"""The PrivateUse1 story: naming an out-of-tree device and giving it the usual methods
(PyTorch's ``torch/utils/backend_registration.py``).

PyTorch reserves one device type, ``privateuseone``, for a backend built outside it;
``rename_privateuse1_backend("mydev")`` gives it a name, after which ``"mydev"`` is an
ordinary device string, and ``generate_methods_for_privateuse1_backend()`` adds
``Tensor.is_mydev``, ``Tensor.mydev()``, ``Module.mydev()`` and the like. In ember the
backend itself -- its array type, its array namespace and its transfer function -- is
registered under that name with ``ember.library.register_backend`` (the seed tutorial
"Facilitating New Backend Integration by PrivateUse1" describes the same three steps).

Example::

    >>> ember.utils.rename_privateuse1_backend("mydev")            # doctest: +SKIP
    >>> ember.library.register_backend("mydev", xp, MyArray, to_mydev)  # doctest: +SKIP
    >>> ember.utils.generate_methods_for_privateuse1_backend()      # doctest: +SKIP
    >>> ember.ones(2).mydev().is_mydev                              # doctest: +SKIP
    True
"""

from __future__ import annotations

from .._core import device as _device_mod
from .._core.device import device as _device
from .._core.tensor import Tensor

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]

_DEFAULT_NAME = "privateuseone"
_privateuse1_backend_name = _DEFAULT_NAME


def _get_privateuse1_backend_name() -> str:
    """The PrivateUse1 backend's name: ``"privateuseone"`` until renamed."""
    return _privateuse1_backend_name


def rename_privateuse1_backend(backend_name: str) -> None:
    """Name the PrivateUse1 backend ``backend_name``, so that ``ember.device(backend_name)``
    (and ``"privateuseone"``, which now means it) is an ordinary device.

    It may be called once per process (again with the same name is allowed). The backend's
    arrays and kernels are registered under the same name with
    ``ember.library.register_backend``.

    Args:
        backend_name: the device type's new name, a Python identifier (``"foo"``).

    Returns:
        None.

    Raises:
        RuntimeError: the backend was already renamed to another name.

    Example::

        >>> ember.utils.rename_privateuse1_backend("foo")  # doctest: +SKIP
        >>> ember.device("foo")                            # doctest: +SKIP
        device(type='foo')
    """
    global _privateuse1_backend_name
    if not isinstance(backend_name, str) or not backend_name.isidentifier():
        raise ValueError(f"rename_privateuse1_backend: the name must be an identifier, got "
                         f"{backend_name!r}")
    if _privateuse1_backend_name != _DEFAULT_NAME:
        if backend_name == _privateuse1_backend_name:
            return
        raise RuntimeError(
            f"ember.utils.rename_privateuse1_backend() has already been set! Current backend: "
            f"{_privateuse1_backend_name}")
    _device_mod.known_types.add(backend_name)
    _device_mod.type_aliases[_DEFAULT_NAME] = backend_name
    # devices parsed before the rename must not keep the old name
    cache = _device._cache
    for key in [k for k, v in cache.items() if v.type == _DEFAULT_NAME]:
        del cache[key]
    _privateuse1_backend_name = backend_name


def _check_register_once(cls, attr):
    if hasattr(cls, attr):
        raise RuntimeError(
            f"The custom device module of {cls} has already been registered with {attr}")


def _device_index(name, device):
    """The index of a ``device=`` argument of the generated methods (0 when none)."""
    if device is None:
        return 0
    if isinstance(device, str):
        device = _device(device)
    if isinstance(device, _device):
        if device.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return 0 if device.index is None else device.index
    return int(device)


def _generate_tensor_methods(name):
    def is_backend(self) -> bool:
        return self.device.type == name

    is_backend.__name__ = f"is_{name}"
    is_backend.__doc__ = f"True when the tensor is on the {name} device."
    _check_register_once(Tensor, f"is_{name}")
    setattr(Tensor, f"is_{name}", property(is_backend))

    def to_backend(self, device=None, non_blocking=False, **kwargs):
        return self.to(device=_device(name, _device_index(name, device)),
                       non_blocking=non_blocking, **kwargs)

    to_backend.__name__ = name
    to_backend.__doc__ = (
        f"A copy of the tensor on the {name} device (``self`` when it is already there).\n\n"
        f"Args:\n    device: the {name} device or its index (default 0).\n"
        "    non_blocking: accepted for compatibility.\n"
        "    **kwargs: passed on to ``Tensor.to`` (``memory_format``).")
    _check_register_once(Tensor, name)
    setattr(Tensor, name, to_backend)


def _generate_module_methods(name):
    from ..nn.modules.module import Module

    if not hasattr(Tensor, name):
        raise RuntimeError(
            f"Can not automatically generate {name}() method for ember.nn.Module. Because "
            f"ember.Tensor doesn't has the method {name}(). For this error, you can try "
            "setting for_tensor=True.")

    def module_to_backend(self, device=None):
        return self._apply(lambda t: getattr(t, name)(device))

    module_to_backend.__name__ = name
    module_to_backend.__doc__ = (f"Move every parameter and buffer to the {name} device; "
                                 "returns the module.")
    _check_register_once(Module, name)
    setattr(Module, name, module_to_backend)


def _generate_packed_sequence_methods(name):
    from ..nn.utils.rnn import PackedSequence

    if not hasattr(Tensor, f"is_{name}") or not hasattr(Tensor, name):
        raise RuntimeError(
            f"Can not automatically generate is_{name}() or {name}() method for "
            f"ember.nn.utils.rnn.PackedSequence. Because ember.Tensor doesn't has the method "
            f"is_{name}() or {name}(). For this error, you can try setting for_tensor=True.")

    def is_backend(self) -> bool:
        return self.data.device.type == name

    _check_register_once(PackedSequence, f"is_{name}")
    setattr(PackedSequence, f"is_{name}", property(is_backend))

    def packed_to_backend(self, *args, **kwargs):
        return self.to(getattr(self.data, name)(*args, **kwargs).device)

    _check_register_once(PackedSequence, name)
    setattr(PackedSequence, name, packed_to_backend)


def _generate_storage_methods(name, unsupported_dtype):
    from .._core.storage import TypedStorage, UntypedStorage

    def is_backend(self) -> bool:
        return self.device.type == name

    for cls in (UntypedStorage, TypedStorage):
        _check_register_once(cls, f"is_{name}")
        setattr(cls, f"is_{name}", property(is_backend))

    def untyped_to_backend(self, device=None, non_blocking=False, **kwargs):
        from .._dispatch import backends_by_name

        _device_index(name, device)
        if self.device.type == name:
            return self
        return UntypedStorage._of_root(backends_by_name[name].to_device(self._bytes()))

    def typed_to_backend(self, device=None, non_blocking=False, **kwargs):
        if unsupported_dtype and self.dtype in unsupported_dtype:
            raise RuntimeError(f"Cannot create {name} storage as {self.dtype} dtype is not "
                               f"supported by this backend")
        return TypedStorage(untyped_to_backend(self._untyped, device), self.dtype)

    _check_register_once(UntypedStorage, name)
    setattr(UntypedStorage, name, untyped_to_backend)
    _check_register_once(TypedStorage, name)
    setattr(TypedStorage, name, typed_to_backend)


def generate_methods_for_privateuse1_backend(for_tensor: bool = True, for_module: bool = True,
                                             for_packed_sequence: bool = True,
                                             for_storage: bool = False,
                                             unsupported_dtype=None) -> None:
    """Add the PrivateUse1 backend's attributes and methods, named after it (``foo`` after
    ``rename_privateuse1_backend("foo")``): ``Tensor.is_foo``, ``Tensor.foo()``,
    ``Module.foo()``, ``PackedSequence.is_foo``/``foo()`` and, when asked, the storages'.

    Each may be added once; calling again raises RuntimeError.

    Args:
        for_tensor: add ``Tensor.is_foo`` and ``Tensor.foo(device=None, non_blocking=False)``.
        for_module: add ``Module.foo(device=None)`` (needs the Tensor method).
        for_packed_sequence: add ``PackedSequence.is_foo`` and ``PackedSequence.foo()``.
        for_storage: add ``is_foo`` and ``foo()`` to ``UntypedStorage`` and ``TypedStorage``.
        unsupported_dtype: dtypes ``TypedStorage.foo()`` refuses.

    Returns:
        None.

    Example::

        >>> ember.utils.rename_privateuse1_backend("foo")          # doctest: +SKIP
        >>> ember.utils.generate_methods_for_privateuse1_backend()  # doctest: +SKIP
        >>> hasattr(ember.nn.Module, "foo")                         # doctest: +SKIP
        True
    """
    name = _get_privateuse1_backend_name()
    if for_tensor:
        _generate_tensor_methods(name)
    if for_module:
        _generate_module_methods(name)
    if for_storage:
        _generate_storage_methods(name, unsupported_dtype)
    if for_packed_sequence:
        _generate_packed_sequence_methods(name)
