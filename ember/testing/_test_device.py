"""A NumPy-backed test device: a separate device, as strict as CuPy, for every CI run.

NOTE [ Test device ]
ember's kernels are written once against an array namespace ``xp`` (NumPy for 'cpu', CuPy for
'cuda'). A kernel that reaches for ``np`` where it means ``xp`` -- building a mask with
``np.zeros``, mixing a host array into a device array, returning a NumPy result -- works on
the CPU, where both are NumPy, and breaks only on a GPU, which CI does not have. The test
device makes those bugs fail on the CPU:

- its arrays are ``TestDeviceArray``, an ``ndarray`` subclass whose ``__array_ufunc__`` and
  ``__array_function__`` raise TypeError when a plain ``numpy.ndarray`` (of any ndim) takes
  part, as CuPy refuses NumPy arrays; NumPy and Python scalars are accepted, as CuPy does,
  and Python lists are refused as ufunc operands, as CuPy refuses them. Like CuPy's, its
  elements and reductions are 0-dim device arrays, never NumPy scalars, and it holds no
  object arrays (``xp.asarray(None)`` raises);
- its namespace ``xp`` (``TestDeviceNamespace``) is NumPy whose functions return
  ``TestDeviceArray``; ``xp.asarray``/``xp.array`` of a host array *copy*, as a host-to-device
  transfer does; ``a.get()`` copies back to a host array, as CuPy's does;
- it is registered through the public backend API (``ember.library.register_backend``) under
  the device type ``TEST_DEVICE`` ('npdev'), a name PyTorch does not use. Nothing global is
  renamed (PrivateUse1 stays free for the tests of the renaming story), so it can live in
  the same process as every other test. Registration happens on first use
  (``register_test_device()``), once per process;
- tensors on it print ``device='npdev'``; ``.to('npdev')``, ``.to('cpu')`` and ``.cpu()``
  copy; an op mixing it with a CPU tensor (other than a 0-dim one, which joins as a scalar
  does on CUDA) raises the dispatcher's RuntimeError "expected all tensors to be on the same
  device".

What it does not catch: being an ``ndarray`` subclass, ``np.asarray(a)`` and NumPy's
indexing and item assignment accept its arrays silently (CuPy refuses implicit host
conversion), so a kernel that converts with ``np.asarray`` and stays in NumPy throughout is
seen only through its result's type -- which lands the result on the CPU, and the
device-generic tests check each result's device. It also runs every dtype NumPy has
(bfloat16 included) and every ufunc method (``reduce``/``at``), where CuPy has gaps; those
limits are CuPy's, tested on a GPU.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TEST_DEVICE", "DeviceSynchronized", "TestDeviceArray", "TestDeviceNamespace",
           "forbid_synchronize", "register_test_device",
           "test_device_xp"]

#: the device type of the test device
TEST_DEVICE = "npdev"


def _refuse(what, x):
    raise TypeError(
        f"{TEST_DEVICE}: {what} got a numpy.ndarray of shape {x.shape}; device arrays do not "
        f"mix with host arrays (as CuPy's do not): use xp.asarray to copy it to the device")


def _host(x):
    """``x`` with every TestDeviceArray replaced by a plain ndarray view (for NumPy itself)."""
    if type(x) is TestDeviceArray:
        return x.view(np.ndarray)
    if type(x) is tuple or type(x) is list:
        return type(x)(_host(y) for y in x)
    return x


def _device(r):
    """NumPy's results back as TestDeviceArray (views); NumPy scalars become 0-dim device
    arrays, as CuPy never returns host scalars; other values pass unchanged."""
    if type(r) is np.ndarray:
        return _no_objects(r).view(TestDeviceArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(TestDeviceArray)
    if type(r) is tuple or type(r) is list:
        return type(r)(_device(y) for y in r)
    if isinstance(r, tuple) and hasattr(r, "_fields"):  # NumPy's named results
        return type(r)(*(_device(y) for y in r))
    return r


def _no_objects(r):
    if r.dtype == object:  # as CuPy, which has no object arrays
        raise ValueError(f"{TEST_DEVICE}: unsupported dtype object (a device array holds "
                         "numbers; build it from numbers, not from a list of arrays)")
    return r


def _check_args(what, x, depth=0):
    """Raise when a plain ndarray is among ``x`` (looking into lists, tuples and dicts)."""
    if type(x) is np.ndarray:
        _refuse(what, x)
    if depth < 3:
        if type(x) is tuple or type(x) is list:
            for y in x:
                _check_args(what, y, depth + 1)
        elif type(x) is dict:
            for y in x.values():
                _check_args(what, y, depth + 1)


class DeviceSynchronized(RuntimeError):
    """Raised under ``forbid_synchronize()`` where code reads a test-device array's values
    on the host (``bool``, ``int``, ``float``, ``item``, ``tolist``, ``get``): on a GPU each
    such read waits for every queued kernel (CuPy's ``cupyx.allow_synchronize(False)``
    raises at the same places)."""


_forbidden = [0]  # nesting depth of forbid_synchronize()


class forbid_synchronize:  # noqa: N801 - used as a context manager, as cupyx's
    """Within this context, reading a test-device array's values on the host raises
    ``DeviceSynchronized``: what stalls a GPU's host until its queue drains -- a Python
    ``if`` on a device mask, ``.item()``, ``int(a.sum())`` -- is caught by every CI run,
    where CuPy would only catch it on a GPU.

    Example::

        >>> a = test_device_xp().ones(2)
        >>> with forbid_synchronize():
        ...     try:
        ...         bool(a.any())
        ...     except DeviceSynchronized as e:
        ...         print(str(e)[:31])
        npdev: bool() of a device array
    """

    def __enter__(self):
        _forbidden[0] += 1
        return self

    def __exit__(self, *exc):
        _forbidden[0] -= 1
        return False


def _sync(what):
    if _forbidden[0]:
        raise DeviceSynchronized(
            f"{TEST_DEVICE}: {what} of a device array reads its value on the host (a "
            "device synchronization on a GPU)")


class _Pointer:
    """CuPy's ``MemoryPointer``, as far as ember reads it: the address ``ptr``."""

    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class TestDeviceArray(np.ndarray):
    """An array of the test device: NumPy's memory, a type of its own, CuPy's strictness.

    NumPy's ufuncs and functions run on it and give it back (``np.add(a, b)``,
    ``np.concatenate([a, b])``, as CuPy arrays allow through the same protocols), but any
    plain ``numpy.ndarray`` among their arguments raises TypeError. See NOTE [ Test device ].

    Example::

        >>> a = test_device_xp().arange(3)
        >>> type(a + 1).__name__
        'TestDeviceArray'
        >>> try:
        ...     a + np.ones(3)
        ... except TypeError as e:
        ...     print(str(e)[:39])
        npdev: add got a numpy.ndarray of shape
    """

    __test__ = False  # not a pytest test class, whatever its name

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        what = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        _check_args(what, inputs)
        for x in inputs[:1] if method == "at" else inputs:  # (``at``'s index may be a tuple)
            if type(x) is list or type(x) is tuple:
                raise TypeError(f"{TEST_DEVICE}: {what} got a {type(x).__name__} operand "
                                "(as CuPy, device ufuncs take arrays and scalars only)")
        out = kwargs.get("out")
        if out is not None:
            _check_args(what, out)
            kwargs["out"] = _host(out)
        if "where" in kwargs:
            _check_args(what, kwargs["where"])
            kwargs["where"] = _host(kwargs["where"])
        r = getattr(ufunc, method)(*_host(inputs), **kwargs)
        if out is not None:
            # the results are the given out arrays themselves
            return out[0] if len(out) == 1 else out
        return _device(r)

    def __array_function__(self, func, types, args, kwargs):
        if np.ndarray in types:
            for x in list(args) + list(kwargs.values()):
                _check_args(func.__name__, x)
            raise TypeError(f"{TEST_DEVICE}: {func.__name__} got a numpy.ndarray among its "
                            "arguments; device arrays do not mix with host arrays")
        return _device(super().__array_function__(func, (np.ndarray,), _host(args),
                                                  _host(kwargs)))

    # host reads of values: what synchronizes a GPU (forbid_synchronize() refuses them)

    def __bool__(self):
        _sync("bool()")
        return super().__bool__()

    def __int__(self):
        _sync("int()")
        return super().__int__()

    def __float__(self):
        _sync("float()")
        return super().__float__()

    def __index__(self):
        _sync("operator.index()")
        return super().__index__()

    def item(self, *args):
        _sync("item()")
        return super().item(*args)

    def tolist(self):
        _sync("tolist()")
        return super().tolist()

    def __getitem__(self, key):
        r = super().__getitem__(key)
        # an element is a 0-dim device array, as CuPy gives, never a NumPy scalar
        return np.asarray(r).view(TestDeviceArray) if isinstance(r, np.generic) else r

    @property
    def data(self):
        """The memory, as CuPy shows it: an object whose ``ptr`` is the first element's
        address (``data_ptr()``, ``storage_offset()`` read it)."""
        return _Pointer(self.__array_interface__["data"][0])

    def get(self):
        """A host copy: a plain ``numpy.ndarray`` with the same values (CuPy's ``get``).

        Returns:
            numpy.ndarray

        Example::

            >>> type(test_device_xp().ones(2).get()).__name__
            'ndarray'
        """
        _sync("get()")
        return np.array(self.view(np.ndarray), copy=True)

    def __repr__(self):
        return repr(self.view(np.ndarray)).replace("array(", f"{TEST_DEVICE}_array(", 1)


class TestDeviceNamespace:
    """The test device's ``xp``: NumPy (or a NumPy submodule) whose functions return
    ``TestDeviceArray``; ``asarray``/``array`` of a host array copy it, as a transfer does.

    Args:
        module: ``numpy`` or one of its submodules (``linalg``, ``fft``, ``random``).

    Example::

        >>> xp = test_device_xp()
        >>> type(xp.zeros(2)).__name__, xp.ndarray.__name__
        ('TestDeviceArray', 'TestDeviceArray')
    """

    __test__ = False

    ndarray = TestDeviceArray

    def __init__(self, module=np):
        self._module = module
        # a name of its own: caches keyed by ``xp.__name__`` must not take it for NumPy
        self.__name__ = f"{TEST_DEVICE}.{module.__name__}"

    def __repr__(self):
        return f"<{TEST_DEVICE} namespace over {self._module.__name__}>"

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, type(np)):  # np.linalg, np.fft, np.random
            wrapped = TestDeviceNamespace(attr)
        elif isinstance(attr, (type, np.ufunc)) or not callable(attr):
            wrapped = attr  # dtypes, classes, constants; ufuncs go through __array_ufunc__
        else:
            def wrapped(*args, __f=attr, **kwargs):
                return _device(__f(*args, **kwargs))

            wrapped.__name__ = getattr(attr, "__name__", name)
        self.__dict__[name] = wrapped
        return wrapped

    # transfers: a host array becomes a device copy (never a view of host memory)

    def asarray(self, a, dtype=None, order=None, copy=None):
        """``a`` as a device array: device arrays pass through (cast when ``dtype`` says so),
        host data is copied."""
        if type(a) is TestDeviceArray and copy is not True:
            return a if dtype is None or a.dtype == np.dtype(dtype) else a.astype(dtype)
        return _no_objects(np.array(_host(a), dtype=dtype, order=order or "K", copy=True)) \
            .view(TestDeviceArray)

    def array(self, a, dtype=None, copy=True, order="K", ndmin=0):
        """A device array from ``a`` (copied unless ``copy=False`` allows a device view)."""
        if type(a) is TestDeviceArray and not copy:
            r = np.asarray(a, dtype=dtype, order=None if order == "K" else order)
        else:
            r = np.array(_host(a), dtype=dtype, copy=True, order=order, ndmin=ndmin)
        if ndmin and r.ndim < ndmin:
            r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
        return _no_objects(r).view(TestDeviceArray)

    def ascontiguousarray(self, a, dtype=None):
        """A C-contiguous device array from ``a`` (host data copied)."""
        if type(a) is not TestDeviceArray:
            return self.asarray(np.ascontiguousarray(_host(a), dtype=dtype))
        return np.ascontiguousarray(a, dtype=dtype).view(TestDeviceArray)

    def asnumpy(self, a):
        """A host copy of ``a`` (CuPy's ``cupy.asnumpy``)."""
        return a.get() if type(a) is TestDeviceArray else np.asarray(a)


_xp = None


def test_device_xp() -> TestDeviceNamespace:
    """The test device's array namespace (made once).

    Returns:
        TestDeviceNamespace

    Example::

        >>> type(test_device_xp().arange(2)).__name__
        'TestDeviceArray'
    """
    global _xp
    if _xp is None:
        _xp = TestDeviceNamespace(np)
    return _xp


test_device_xp.__test__ = False


def _to_test_device(a):
    if type(a) is TestDeviceArray:
        return a.copy()
    host = a.get() if hasattr(a, "get") else np.asarray(a)
    return np.array(host, copy=True).view(TestDeviceArray)


def register_test_device() -> str:
    """Register the test device (once per process) through ``ember.library.register_backend``
    and return its device type, ``'npdev'``.

    Returns:
        str: the device type, for ``ember.device(...)`` and ``Tensor.to(...)``.

    Example::

        >>> name = ember.testing.register_test_device()
        >>> t = ember.ones(2).to(name)
        >>> t.device, type(t.cpu()._data).__name__
        (device(type='npdev'), 'ndarray')
    """
    from .. import library
    from .._core.backend import backends_by_name

    if TEST_DEVICE not in backends_by_name:
        library.register_backend(TEST_DEVICE, test_device_xp(), TestDeviceArray,
                                 _to_test_device)
    return TEST_DEVICE


register_test_device.__test__ = False
