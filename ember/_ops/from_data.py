"""Tensors from data: ``tensor``, ``as_tensor``, ``asarray``, ``from_numpy``, ``from_dlpack``,
``Tensor.new_tensor`` and the legacy constructor ``ember.Tensor(...)``, with PyTorch's dtype
inference for nested Python data.
"""

from __future__ import annotations

from .. import _dispatch

import builtins
import warnings
from collections.abc import Sequence

import numpy as np

from .._core import dtype as _dt
from .._core.checks import as_shape
from .._core.device import as_device
from .._core.size import Size
from .._core.storage import TypedStorage, UntypedStorage
from .._core.tensor import CONSTRUCTOR_REFUSAL, Tensor, wrap
from ._registry import method, public
from .creation import _PY_SCALARS, bf16_scalar_nans, cast, finish, host, resolve_dtype

# ------------------------------------------------------------------------------------------------
# data -> array, with PyTorch's dtype inference
#
# NOTE [ tensor() dtype inference ]
# Each leaf of the nested data stands for a dtype: a Python bool, int, float or complex for
# bool, int64, the default float and the default complex dtype; a NumPy scalar, NumPy array or
# one-element tensor for its own dtype. The result dtype is ``promote_types`` over all leaves
# (so ``[np.int32(1), 2]`` is int64 and ``[np.float16(1), 2.5]`` float32). Empty data is the
# default float dtype. Leaves that are all plain Python numbers take a fast path: one
# ``set(map(type, ...))`` and one ``np.array`` call per level, no per-element Python loop.


def check_numpy_array(arr, op_name=""):
    """PyTorch's refusals for a NumPy array it is asked to view or copy."""
    if not arr.dtype.isnative:
        raise ValueError(
            "given numpy array has byte order different from the native byte order. "
            "Conversion between byte orders is currently not supported.")
    if arr.dtype not in _dt.from_np:
        raise TypeError(
            f"can't convert np.ndarray of type {arr.dtype.type.__module__}."
            f"{arr.dtype.type.__name__}. The only supported types are: float64, float32, "
            "float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, and "
            "bool.")
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with "
            "negative strides are not currently supported. (You can probably work around "
            "this by making a copy of your array  with array.copy().)")
    if any(s % arr.itemsize for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")


def _data_complex():
    """The dtype of a Python complex in data: the default complex dtype, which PyTorch's data
    inference has none of under a bfloat16 default dtype (its factories take complex64)."""
    if _dt.get_default_dtype() is _dt.bfloat16:
        raise RuntimeError("invalid default scalar type for complex")
    return _dt.default_complex()


def _py_dtype(types):
    """The dtype of leaves whose types are all Python numbers."""
    if builtins.complex in types:
        return _data_complex()
    if builtins.float in types:
        return _dt.get_default_dtype()
    if builtins.int in types:
        return _dt.int64
    return _dt.bool_


def _py_to_array(leaves, types, d):
    """A 1-D array of dtype ``d`` from a list of Python numbers (see check_value_fits)."""
    cat = d.category
    try:
        if cat == 0:
            return np.array(leaves, dtype=np.bool_)
        if cat == 1:
            exact = builtins.float not in types and builtins.complex not in types
            wide = np.array(leaves, dtype=np.int64 if exact else np.float64)
            if wide.size and d is not _dt.int64 or not exact:
                info = np.iinfo(d.np)
                lo = -info.max if info.min == 0 else info.min
                with np.errstate(invalid="ignore"):
                    if exact:
                        ok = (wide >= lo) & (wide < info.max + 1)
                    else:
                        # a Python float must lie in the dtype's range as it is, compared
                        # as a double before any truncation (127.5 is refused by int8, -1.0
                        # by uint8, 2.0**63 taken by int64); only integers wrap around an
                        # unsigned dtype
                        floats = np.array([type(v) is builtins.float for v in leaves], bool)
                        as_float = (wide >= float(info.min)) & (wide <= float(info.max))
                        as_int = (wide > lo - 1) & (wide < float(info.max) + 1)
                        ok = np.isfinite(wide) & np.where(floats, as_float, as_int)
                if not ok.all():
                    raise RuntimeError(
                        f"value cannot be converted to type {d.name} without overflow")
            return wide.astype(d.np, copy=False)
        if cat == 2:
            if builtins.complex in types:
                raise TypeError("must be real number, not complex")
            if d.np in _dt._FLOAT8_NP:  # PyTorch's saturation (NOTE [ Float8 dtypes ])
                return _dt.to_float8(np.array(leaves, dtype=np.float64), d.np)
            # a Python float (a double) rounds straight to the target dtype, float16 through
            # float32 (NOTE [ Doubles to half through float ] in ember/_ops/conversion.py)
            try:
                r = np.array(leaves, dtype=np.float32 if d is _dt.float16 else d.np)
            except TypeError:
                # ml_dtypes' bfloat16 takes no int past int64 (2**63): through a double,
                # exact for the powers of two torch's tests reach
                r = np.array(np.array(leaves, dtype=np.float64), dtype=d.np)
            if d is _dt.float16:
                r = r.astype(np.float16)
            return bf16_scalar_nans(r) if d is _dt.bfloat16 else r
        return np.array(leaves, dtype=d.np)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None


def _leaf_dtype(x, t):
    if t in _PY_SCALARS:
        return _py_dtype((t,))
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.dtype
    if isinstance(x, (np.generic, np.ndarray)):
        d = _dt.from_np.get(x.dtype)
        if d is None:
            raise TypeError(f"can't convert np.ndarray of type {x.dtype}. The only supported "
                            "types are: float64, float32, float16, bfloat16, complex64, "
                            "complex128, int64, int32, int16, int8, uint8, and bool.")
        return d
    if isinstance(x, builtins.bool):
        return _dt.bool_
    if isinstance(x, builtins.int):
        return _dt.int64
    if isinstance(x, builtins.float):
        return _dt.get_default_dtype()
    if isinstance(x, builtins.complex):
        return _data_complex()
    if isinstance(x, str):
        raise ValueError(f"too many dimensions '{t.__name__}'")
    if _is_seq(x):
        raise TypeError(f"'{t.__name__}' object cannot be interpreted as an integer")
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


def _is_seq(x):
    if type(x) is list or type(x) is tuple:
        return True
    if isinstance(x, np.ndarray):
        return x.ndim > 0
    return isinstance(x, Sequence) and not isinstance(x, (str, bytes, bytearray))


# NOTE [ Lists of arrays ]
# PyTorch walks nested data element by element; meeting a NumPy array (of any rank, 0-d
# included, but not a NumPy scalar) on that walk, it warns once per process that a list of
# arrays is slow to convert. Its walk is skipped when the result has no elements, so then
# there is no warning. Under ``set_warn_always(True)`` it warns for every array it meets,
# the rows of a 2-D array included. ember converts such data in a block, but gives the same
# advice, as often.


def _ndarrays_in(level, rows=False):
    """How many NumPy arrays torch's element walk meets in ``level`` (``rows``: and inside
    them, the rows of arrays of two dims or more)."""
    if not builtins.any(issubclass(t, np.ndarray) for t in set(map(type, level))):
        return 0
    n = 0
    for x in level:
        if isinstance(x, np.ndarray):
            n += 1
            inner = 1
            for size in x.shape[:-1] if rows else ():
                inner *= size
                n += inner
    return n


def _warn_list_of_ndarrays(times):
    from .._settings import settings, warn_at_caller

    for _ in range(times if settings.warn_always else 1):
        warn_at_caller(
            "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
            "consider converting the list to a single numpy.ndarray with numpy.array() "
            "before converting to a tensor.", UserWarning, once=True)


def _sequence_to_array(data, d, op_name):
    """Nested sequences -> NumPy array of dtype ``d`` (None: infer). See the NOTE above."""
    if type(data) is list or type(data) is tuple:
        types = set(map(type, data))
        if types and types.issubset(_PY_SCALARS):  # the common flat case, in one step
            return _py_to_array(data, types, d or _py_dtype(types))
    shape = []
    level = [data]
    block = False  # the leaves are equally shaped NumPy arrays
    arrays = 0  # NumPy arrays met on torch's walk (NOTE [ Lists of arrays ])
    while level and _is_seq(level[0]):
        first = level[0]
        if isinstance(first, np.ndarray) and builtins.all(
                isinstance(x, np.ndarray) and x.shape == first.shape for x in level):
            arrays += _ndarrays_in(level, rows=True)
            shape.extend(first.shape)
            block = True
            break
        arrays += _ndarrays_in(level)  # (their rows are met on the next level)
        n = len(first)
        dim = len(shape)
        for x in level:
            if not _is_seq(x):
                raise TypeError(f"{op_name}(): not a sequence at dim {dim}")
            if len(x) != n:
                raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(x)})")
        shape.append(n)
        level = [y for x in level for y in x]
    if not level:
        return np.zeros(shape, dtype=(d or _dt.get_default_dtype()).np)
    if not block and isinstance(level[0], np.ndarray):
        # torch measures the first element of each level as a sequence: a 0-d array there
        # has no length (one further on is read as a number)
        raise TypeError("len() of unsized object")
    if not block:
        arrays += _ndarrays_in(level)
    if arrays and 0 not in shape:
        _warn_list_of_ndarrays(arrays)
    types = set(map(type, level))
    if not block and types.issubset(_PY_SCALARS):
        d = d or _py_dtype(types)
        return _py_to_array(level, types, d).reshape(shape)
    inferred = None
    for x in level:
        ld = _leaf_dtype(x, type(x))
        inferred = ld if inferred is None else _dt.promote_types(inferred, ld)
    d = d or inferred
    leaves = [host(x._data).reshape(()) if isinstance(x, Tensor) else x for x in level]
    if d.category < 3 and builtins.any(np.iscomplexobj(x) for x in leaves):
        leaves = [np.real(x) for x in leaves]
    return np.array(leaves, dtype=d.np).reshape(shape)


def data_to_array(data, d, op_name):
    """A NumPy array for ``data`` with dtype ``d`` (None: PyTorch's inference).

    May return ``data``'s own memory (NumPy arrays, tensors); callers copy when they must.
    """
    if isinstance(data, Tensor):
        a = host(data._data)
        return a if d is None else cast(a, d.np)
    if isinstance(data, np.ndarray):
        check_numpy_array(data, op_name)
        if type(data) is not np.ndarray:  # np.memmap, np.matrix...: the same memory, plainly
            data = data.view(np.ndarray)
        return data if d is None else cast(data, d.np)
    if isinstance(data, np.generic):
        a = np.asarray(data)
        check_numpy_array(a, op_name)
        return a if d is None else cast(a, d.np)
    t = type(data)
    if t in _PY_SCALARS or isinstance(data, _PY_SCALARS):
        t = builtins.bool if isinstance(data, builtins.bool) else t
        if t not in _PY_SCALARS:
            t = next(s for s in (builtins.int, builtins.float, builtins.complex)
                     if isinstance(data, s))
        d = d or _py_dtype((t,))
        return _py_to_array([data], (t,), d).reshape(())
    if isinstance(data, (str, bytes, bytearray)):
        raise TypeError(f"new(): invalid data type '{t.__name__}'")
    if _is_seq(data):
        return _sequence_to_array(data, d, op_name)
    if hasattr(data, "__array__") or hasattr(data, "__array_interface__"):
        return data_to_array(np.asarray(data), d, op_name)
    if hasattr(data, "__dlpack__"):
        return data_to_array(np.from_dlpack(data), d, op_name)
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


def _copy_warning():
    # torch's text, pointing at the caller's line: the first frame outside ember (the
    # dispatcher's entrance sits between the user and ``tensor``)
    import sys

    level, frame = 2, sys._getframe(1)
    while frame is not None and (frame.f_globals.get("__name__", "").startswith("ember.")
                                 or frame.f_code.co_filename.startswith("<ember")):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        "To copy construct from a tensor, it is recommended to use sourceTensor.detach()."
        "clone() or sourceTensor.detach().clone().requires_grad_(True), rather than "
        "torch.tensor(sourceTensor).", UserWarning, stacklevel=level)


# ------------------------------------------------------------------------------------------------
# tensor / as_tensor / asarray / from_numpy / from_dlpack


@public(method=False)
@_dispatch.entrance("tensor")
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data``, with PyTorch's dtype inference.

    Args:
        data: a number, nested lists/tuples of numbers, a NumPy array or scalar, or a tensor.
        dtype: the result dtype (default: inferred, see NOTE [ tensor() dtype inference ]).
        device: where the result lives (default: CPU).
        requires_grad: make the result a leaf that requires grad.

    Example::

        >>> ember.tensor([[1, 2], [3, 4.5]])
        tensor([[1.0000, 2.0000],
                [3.0000, 4.5000]])
        >>> ember.tensor([1, 2]).dtype
        ember.int64
    """
    d = resolve_dtype(dtype)
    if isinstance(data, Tensor):
        _copy_warning()
        src = data.detach()
        r = src.to(device=device if device is not None else src.device,
                    dtype=d if d is not None else src.dtype, copy=True)
        r = wrap(r._data) if r._vc is not None or r._base is not None else r
        if requires_grad:
            r.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
        return r
    arr = data_to_array(data, d, "tensor")
    fresh = type(data) is list or type(data) is tuple or isinstance(data, _PY_SCALARS)
    if not fresh or not arr.flags.c_contiguous:
        arr = np.array(arr, copy=True, order="C")
    return finish(arr, requires_grad, device)


@public(method=False)
@_dispatch.entrance("as_tensor")
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing its memory when it already is a tensor or NumPy array
    of the requested dtype and device; otherwise a converted copy.

    Example::

        >>> a = np.array([1., 2.])
        >>> t = ember.as_tensor(a)
        >>> t[0] = 5.
        >>> a[0]
        np.float64(5.0)
    """
    d = resolve_dtype(dtype)
    dev = as_device(device)
    if isinstance(data, Tensor):
        return data.to(device=dev if dev is not None else data.device,
                       dtype=d if d is not None else data.dtype)
    arr = data_to_array(data, d, "as_tensor")
    if arr is data:
        return finish(writable_alias(arr) if isinstance(arr, np.ndarray) else arr, False, dev)
    # (np.ascontiguousarray would make a number or NumPy scalar one-dimensional)
    return finish(np.asarray(arr, order="C"), False, dev)


@public(method=False)
@_dispatch.entrance("asarray")
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` as a tensor, sharing memory with tensors, NumPy arrays and DLPack/array-
    interface objects when no conversion is needed.

    ``copy=True`` always copies; ``copy=False`` raises ValueError when a copy would be needed;
    ``copy=None`` (default) copies only then.
    """
    d = resolve_dtype(dtype)
    dev = as_device(device)
    if isinstance(obj, Tensor):
        r = obj
        if d is not None and d is not obj.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{obj.dtype.scalar_name}' "
                                 f"into dtype '{d.scalar_name}'.")
        if dev is not None and dev != obj.device and copy is False:
            raise ValueError(f"can't alias tensor on device '{obj.device}' into device "
                             f"'{dev}'.")
        r = obj.to(device=dev if dev is not None else obj.device,
                   dtype=d if d is not None else obj.dtype, copy=builtins.bool(copy))
    elif isinstance(obj, UntypedStorage):
        # the storage's bytes read as ``dtype`` (bytes when None), sharing its memory
        arr = obj._bytes()
        if d is not None and d.np != arr.dtype:
            arr = arr.view(d.np)
        r = finish(arr.copy() if copy else arr, False, dev)
    else:
        shareable = isinstance(obj, np.ndarray) or (
            not isinstance(obj, (np.generic,) + _PY_SCALARS) and not _is_seq(obj) and
            (hasattr(obj, "__array_interface__") or hasattr(obj, "__dlpack__")))
        arr = obj
        if shareable and not isinstance(obj, np.ndarray):
            arr = np.from_dlpack(obj) if hasattr(obj, "__dlpack__") else np.asarray(obj)
        elif shareable and type(obj) is not np.ndarray:  # np.memmap, np.matrix...
            arr = obj.view(np.ndarray)
        if shareable:
            check_numpy_array(arr, "asarray")
            if d is not None and d.np != arr.dtype:
                if copy is False:
                    src = _dt.from_np[arr.dtype]
                    raise ValueError(f"can't alias tensor with dtype '{src.scalar_name}' into "
                                     f"dtype '{d.scalar_name}'.")
                arr = cast(arr, d.np)
            elif copy:
                arr = arr.copy()
            else:
                arr = writable_alias(arr)
        else:
            if copy is False:
                raise ValueError(
                    f"asarray(): can't alias an object of type {type(obj).__name__}; "
                    "pass copy=None or copy=True")
            arr = np.asarray(data_to_array(obj, d, "asarray"), order="C")
            if arr is obj:
                arr = arr.copy()
        r = finish(arr, False, dev)
    if requires_grad:
        r.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return r


class _WritableMemory:
    """The memory of a read-only NumPy array offered again through the array interface, as
    writable (how ``np.asarray`` builds a writable alias of it); keeps the array alive."""

    def __init__(self, arr):
        self.base = arr
        self.__array_interface__ = {
            "version": 3, "shape": arr.shape, "typestr": arr.dtype.str,
            "descr": arr.dtype.descr, "strides": arr.strides,
            "data": (arr.__array_interface__["data"][0], False)}


def writable_alias(arr, buffer=False):
    """``arr`` itself when it is writable; else a writable array over its memory, after torch's
    warning (once in the process, per kind: NumPy array or ``buffer``).

    PyTorch shares a read-only array's memory all the same (writes through the tensor reach
    the array: "undefined behavior", its warning says); ember does as it does.

    Args:
        arr (np.ndarray): the array to share.
        buffer (bool): ``arr`` was made from a Python buffer (``frombuffer``'s wording).

    Returns:
        np.ndarray: a writable array sharing ``arr``'s memory.

    Example::

        >>> a = np.zeros(2)
        >>> a.flags.writeable = False
        >>> writable_alias(a).flags.writeable  # doctest: +SKIP
        True
    """
    if arr.flags.writeable:
        return arr
    from .._settings import warn_at_caller

    if buffer:
        warn_at_caller(
            "The given buffer is not writable, and ember does not support non-writable tensors. "
            "This means you can write to the underlying (supposedly non-writable) buffer using "
            "the tensor. You may want to copy the buffer to protect its data or make it "
            "writable before converting it to a tensor. This type of warning will be "
            "suppressed for the rest of this program.", UserWarning, once=True,
            key="frombuffer read-only")
    else:
        warn_at_caller(
            "The given NumPy array is not writable, and ember does not support non-writable "
            "tensors. This means writing to this tensor will result in undefined behavior. You "
            "may want to copy the array to protect its data or make it writable before "
            "converting it to a tensor. This type of warning will be suppressed for the rest "
            "of this program.", UserWarning, once=True, key="from_numpy read-only")
    view = arr.view()
    try:
        view.flags.writeable = True  # possible when the memory's owner is writable
        return view
    except ValueError:
        return np.asarray(_WritableMemory(arr))


@public(method=False)
def from_numpy(ndarray) -> Tensor:
    """A tensor sharing memory with the NumPy array ``ndarray`` (writes show through both
    ways).

    Example::

        >>> a = np.zeros(2)
        >>> ember.from_numpy(a).fill_(3.)
        tensor([3., 3.], dtype=ember.float64)
        >>> a
        array([3., 3.])
    """
    if not isinstance(ndarray, np.ndarray):
        kind = type(ndarray)
        name = (kind.__name__ if kind.__module__ == "builtins"
                else f"{kind.__module__}.{kind.__name__}")
        raise TypeError(f"expected np.ndarray (got {name})")
    check_numpy_array(ndarray, "from_numpy")
    if type(ndarray) is not np.ndarray:  # np.memmap, np.matrix...: the same memory, plainly
        ndarray = ndarray.view(np.ndarray)
    return wrap(writable_alias(ndarray))


@public(method=False)
def from_dlpack(ext_tensor) -> Tensor:
    """A tensor sharing memory with any object exporting ``__dlpack__`` (NumPy, CuPy, JAX)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(
            f"from_dlpack(): expected an object with __dlpack__ and __dlpack_device__, got "
            f"{type(ext_tensor).__name__}")
    dev_type, index = ext_tensor.__dlpack_device__()
    if dev_type == 1:  # kDLCPU
        return wrap(np.from_dlpack(ext_tensor))
    if dev_type == 2:  # kDLCUDA
        from .._core.device import device
        from .conversion import _device_backend

        return wrap(_device_backend(device("cuda", index)).xp.from_dlpack(ext_tensor))
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {dev_type}")


# ------------------------------------------------------------------------------------------------
# the legacy constructor: ember.Tensor(...)


def _legacy_new(cls, *args, device=None, **kwargs):
    """``Tensor()`` (empty), ``Tensor(2, 3)`` / ``Tensor(Size)`` (uninitialised, default
    float), ``Tensor(data)`` (a copy in the default float dtype), ``Tensor(tensor)`` (alias).
    """
    return _construct(cls, args, device, kwargs, _dt.get_default_dtype())


def _construct(cls, args, device, kwargs, d, same_dtype=False):
    """The legacy constructor's forms, making tensors of dtype ``d`` (``Tensor(...)`` and
    ``Tensor.new(...)``; ``same_dtype``: a tensor argument must have dtype ``d``, as
    ``new`` requires)."""
    if kwargs:
        raise TypeError(
            f"new() received an invalid combination of arguments - got an unexpected keyword "
            f"argument '{next(iter(kwargs))}'; only device= is accepted")
    if not args:
        arr = np.empty((0,), d.np)
    elif len(args) == 1 and isinstance(args[0], (UntypedStorage, TypedStorage)):
        st = args[0]
        raw = st.untyped() if isinstance(st, TypedStorage) else st
        if isinstance(st, TypedStorage) and st.dtype is not d:
            raise RuntimeError(f"Expected a Storage of type {d.scalar_name} or an "
                               f"UntypedStorage, but got type {st.dtype.scalar_name} for "
                               "argument 1 'storage'")
        flat = raw._bytes()
        arr = flat[:flat.size - flat.size % d.itemsize].view(d.np)
    elif len(args) == 1 and isinstance(args[0], Tensor):
        src = args[0]
        if same_dtype and src._data.dtype != d.np:
            raise TypeError(f"new(): expected a tensor of dtype {d} but got {src.dtype}")
        t = object.__new__(cls)
        t._data = src._data
        t._rg = False
        t._grad_fn = None
        t._base = src._base
        vc = src._vc
        if vc is None:
            vc = src._vc = [0]
        t._vc = vc
        return t
    elif builtins.all(isinstance(a, (builtins.int, np.integer)) and
                      not isinstance(a, builtins.bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], Size)):
        arr = np.empty(as_shape(args, "Tensor"), d.np)
    elif len(args) == 1 and (_is_seq(args[0]) or isinstance(args[0], np.ndarray)):
        arr = np.array(data_to_array(args[0], d, "Tensor"), copy=True, order="C")
    elif len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    else:
        raise TypeError(
            "new(): expected sizes as ints, a sequence of data or a tensor, got "
            f"({', '.join(type(a).__name__ for a in args)})")
    dev = as_device(device)
    if dev is not None and dev.type != "cpu":
        from .conversion import _device_backend

        arr = _device_backend(dev).to_device(arr)
    t = object.__new__(cls)
    t._data = arr
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    return t


# ``wrap`` builds tensors with object.__new__ directly, so this costs the hot path nothing.
Tensor.__new__ = staticmethod(_legacy_new)


@method
def new(self, *args, device=None, **kwargs) -> Tensor:
    """The legacy constructor with ``self``'s dtype and device: ``x.new()`` (empty),
    ``x.new(2, 3)`` (uninitialised), ``x.new(data)`` (a copy cast to ``x``'s dtype),
    ``x.new(tensor)`` (an alias of a tensor of the same dtype), ``x.new(storage)``.

    Args:
        *args: sizes, data, a tensor or a storage.
        device (device, optional): the device; default: ``self``'s.

    Returns:
        Tensor

    Example::

        >>> ember.ones(2, dtype=ember.int32).new([1.5, 2])
        tensor([1, 2], dtype=ember.int32)
    """
    return _construct(Tensor, args, self.device if device is None else device, kwargs,
                      self.dtype, same_dtype=True)


@method
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False) -> Tensor:
    """A copy of ``data`` with ``self``'s dtype and device unless overridden."""
    d = resolve_dtype(dtype, self.dtype)
    dev = as_device(device) if device is not None else self.device
    if isinstance(data, Tensor):
        _copy_warning()
        data = data.detach()
    arr = np.array(data_to_array(data, d, "new_tensor"), copy=True, order="C")
    return finish(arr, requires_grad, dev)


# ------------------------------------------------------------------------------------------------
# tensors over foreign memory: frombuffer / from_file


@public(method=False)
def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D tensor sharing memory with an object of the buffer protocol (``bytearray``,
    ``array.array``, ``memoryview``, ...): writes through either are seen by both.

    Args:
        buffer: the buffer object.
        dtype (dtype): the element type the bytes are read as.
        count (int): the number of elements; -1 reads to the end. Default: -1.
        offset (int): bytes skipped at the start. Default: 0.
        requires_grad (bool): whether autograd records operations on it.

    Returns:
        Tensor

    Example::

        >>> ember.frombuffer(bytearray(b"\\x01\\x00\\x02\\x00"), dtype=ember.int16)
        tensor([1, 2], dtype=ember.int16)
    """
    d = _dt.lookup(dtype)
    try:
        raw = memoryview(buffer).cast("B")
    except TypeError:
        raise ValueError(f"object does not implement Python buffer protocol: "
                         f"{type(buffer).__name__}") from None
    n, item = raw.nbytes, d.itemsize
    if n == 0 or count == 0:
        raise ValueError(f"both buffer length ({n}) and count ({count}) must not be 0")
    if offset < 0 or offset >= n:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({n} bytes) minus 1")
    if count < 0:
        if (n - offset) % item:
            raise ValueError(f"buffer length ({n - offset} bytes) after offset ({offset} bytes) "
                             f"must be a multiple of element size ({item})")
        count = (n - offset) // item
    elif offset + count * item > n:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({n} bytes)")
    arr = writable_alias(np.frombuffer(raw, dtype=d.np, count=count, offset=offset), True)
    t = wrap(arr)
    if requires_grad:
        t.requires_grad_(True, _refusal=CONSTRUCTOR_REFUSAL)
    return t


@public(method=False)
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False) -> Tensor:
    """A 1-D CPU tensor of ``size`` elements backed by a memory-mapped file.

    Args:
        filename (str): the file.
        shared (bool, optional): True writes changes through to the file (creating or
            growing it as needed); False (the default) maps it copy-on-write.
        size (int): the number of elements.
        dtype (dtype, optional): the element type. Default: the default dtype.

    Returns:
        Tensor

    Example::

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
        >>> ember.arange(3.).numpy().tofile(path)
        >>> ember.from_file(path, size=3)
        tensor([0., 1., 2.])
    """
    import os

    d = resolve_dtype(dtype, _dt.get_default_dtype())
    dev = as_device(device)
    if dev is not None and dev.type != "cpu":
        raise RuntimeError("from_file: only CPU tensors can be mapped to a file")
    size = int(size)
    need = size * d.itemsize
    have = os.path.getsize(filename) if os.path.exists(filename) else 0
    if shared:
        if have < need:
            with open(filename, "ab") as f:
                f.truncate(need)
        mode = "r+"
    else:
        if have < need:
            raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required "
                               f"mapping size <{need}>")
        mode = "c"
    if size == 0:
        return wrap(np.empty((0,), d.np))
    arr = np.memmap(filename, dtype=d.np, mode=mode, shape=(size,))
    return wrap(arr.view(np.ndarray))
