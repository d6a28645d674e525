"""``MetaArray``: the meta device's arrays -- a shape and a dtype, and no data.

See NOTE [ Meta device ] in ember/backends/meta.py for why the meta backend is built this
way. This module holds the array type and the NumPy protocols that keep computations on it
free: a MetaArray is an ``ndarray`` subclass whose elements all alias one 16-byte string
(every stride is 0), so it takes no memory whatever its shape, views of it (``reshape``,
``transpose``, basic indexing) are ordinary NumPy views, and NumPy hands every ufunc and
array function that sees one to the hooks below, which work out the shape and dtype of the
result without computing it.

NOTE [ Meta array rules ]
- Ufuncs (``__array_ufunc__``): the result shape comes from broadcasting (or the gufunc
  signature, for ``matmul`` and NumPy's LAPACK gufuncs); the result dtype, and any NumPy error
  about dtypes, axes or empty reductions, comes from running the same ufunc call on
  one-element stand-ins ("surrogates") of the inputs. Writes (``out=``, ``ufunc.at``) do
  nothing.
- Array functions (``__array_function__``, rules in ember/backends/_meta_functions.py):
  functions whose cost grows with the data (``concatenate``, ``stack``, ``where``, ``dot``,
  ``tensordot``, ``einsum``, ``pad``, ...) have shape rules; NumPy's linear algebra runs on a
  zero-size batch of the same matrices (no work, and a placeholder is never singular);
  writers (``copyto``, ``put``, ...) do nothing; functions whose output shape depends on the
  values (``nonzero``, ``unique``, ...) raise ``DataDependentOutputError``; every other
  function runs NumPy's own implementation on the placeholders (whose values all read as
  zero) and its results become placeholders again.
- Reading a value (``item``, ``bool``, ``float``, ``tolist``) raises ``MetaValueError``;
  copying the data out (``get``) raises NotImplementedError, as PyTorch does.
- ``strides`` reports PyTorch's contiguous strides for the shape (the real ones are all 0):
  ``Tensor.stride()`` and ``is_contiguous()`` read them, and so do the overlap checks of
  in-place ops, which would otherwise see every element as shared.
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

__all__ = ["MetaArray", "placeholder", "as_meta", "reads_find_nothing", "MetaValueError",
           "DataDependentOutputError"]

# every placeholder views 16 zero bytes of its own (enough for any dtype's element) with all
# strides 0
_ndarray_new = np.ndarray.__new__
_real_strides = np.ndarray.strides.__get__
_normalize_axis = np.lib.array_utils.normalize_axis_tuple


class MetaValueError(RuntimeError):
    """A value of a meta tensor was read; meta tensors have none."""


class DataDependentOutputError(NotImplementedError):
    """An operation whose output shape depends on values was run on meta arrays."""


class _Reads(threading.local):
    #: True inside ``reads_find_nothing()``
    lenient = False


_reads = _Reads()


@contextlib.contextmanager
def reads_find_nothing():
    """Within the block, reads of meta values answer as if a check found nothing: ``bool``
    gives False, ``int``/``float``/``item`` give 0. For kernels whose only reads are checks
    (``if (b == 0).any(): raise ...``) or fast-path tests, never sizes.

    Example::

        >>> with reads_find_nothing():
        ...     bool((placeholder((3,), np.int64) == 0).any())
        False
    """
    old = _reads.lenient
    _reads.lenient = True
    try:
        yield
    finally:
        _reads.lenient = old


def _no_values(what="Tensor.item()"):
    return MetaValueError(f"{what} cannot be called on meta tensors")


def _data_dependent(name):
    return DataDependentOutputError(
        f"{name}: cannot run on device type 'meta': the shape of its result depends on the "
        "input's values, which meta tensors do not have")


def placeholder(shape, dtype) -> MetaArray:
    """A fresh MetaArray of ``shape`` and ``dtype`` (no memory whatever the shape).

    Args:
        shape: a tuple of non-negative ints.
        dtype: a NumPy dtype (or anything ``np.dtype`` accepts).

    Returns:
        MetaArray: a read-only, zero-stride array whose own storage it is.

    Example::

        >>> a = placeholder((100_000, 100_000), np.float32)
        >>> a.shape, a.nbytes
        ((100000, 100000), 40000000000)
    """
    shape = tuple(shape)
    # a buffer of its own, so NumPy's overlap checks see unrelated placeholders as disjoint
    return _ndarray_new(MetaArray, shape, dtype, bytes(16), 0, (0,) * len(shape))


def as_meta(x):
    """``x`` (an array, a NumPy scalar, or a tuple/list of them) as MetaArrays.

    Placeholders and zero-stride views of them pass unchanged (views keep their storage);
    arrays that hold data become fresh placeholders of their shape and dtype (the data is
    dropped). Anything else passes unchanged.

    Example::

        >>> as_meta(np.ones((2, 3))).shape
        (2, 3)
    """
    if isinstance(x, np.ndarray):
        if type(x) is MetaArray and not any(_real_strides(x)):
            return x
        return placeholder(x.shape, x.dtype)
    if isinstance(x, np.generic):
        return placeholder((), x.dtype)
    if type(x) is tuple:
        return tuple(as_meta(y) for y in x)
    if type(x) is list:
        return [as_meta(y) for y in x]
    return x


def contiguous_strides(shape, itemsize):
    """PyTorch's contiguous strides for ``shape``, in bytes (a zero-size dim counts as 1)."""
    strides = [itemsize] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


class _NullData:
    """What ``MetaArray.data`` returns: a data pointer of 0, as PyTorch reports for meta."""

    __slots__ = ()
    ptr = 0


_NULL = _NullData()


def _index_key(key):
    """``key`` for NumPy: boolean masks of meta arrays select a data-dependent number of
    elements (an error); a 0-d integer meta array acts as an integer whatever its value, so
    it is read as the zero its bytes hold instead of through ``__index__``."""
    items = key if type(key) is tuple else (key,)
    out = []
    for k in items:
        if isinstance(k, MetaArray):
            if k.dtype == np.bool_:
                raise _data_dependent("indexing with a boolean mask")
            if k.ndim == 0:
                k = k.view(np.ndarray)
        out.append(k)
    return tuple(out) if type(key) is tuple else out[0]


class MetaArray(np.ndarray):
    """The meta device's array: shape and dtype, no data. See NOTE [ Meta array rules ].

    Create them with ``placeholder(shape, dtype)``; ``as_meta`` turns any array into one.

    Example::

        >>> a = placeholder((2, 3), np.float32)
        >>> (a + 1).sum(0).shape
        (3,)
    """

    #: read by ``ember._core.checks.holds_values``: checks of values skip meta arrays
    _ember_no_values = True

    # -- what a meta array reports about itself ---------------------------------------------------

    @property
    def real(self):
        return np.ndarray.real.__get__(self)

    @real.setter
    def real(self, value):
        pass

    @property
    def imag(self):
        return np.ndarray.imag.__get__(self)

    @imag.setter
    def imag(self, value):
        pass

    @property
    def strides(self):
        return contiguous_strides(self.shape, self.itemsize)

    @property
    def data(self):
        return _NULL

    @property
    def __array_interface__(self):
        # NumPy's as_strided builds views from it with the strides it is given; over a
        # placeholder's 16 bytes that would read outside them. Callers use xp's as_strided.
        raise _no_values("__array_interface__")

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__

    def __reduce__(self):
        return placeholder, (self.shape, self.dtype)

    # -- values: none to read, writes are dropped --------------------------------------------------

    def item(self, *args):
        if _reads.lenient:
            return self.dtype.type(0).item()
        raise _no_values()

    def tolist(self):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def tobytes(self, order="C"):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def get(self, *args, **kwargs):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")

    def __bool__(self):
        if _reads.lenient:
            return False
        raise _no_values()

    def __float__(self):
        if _reads.lenient:
            return 0.0
        raise _no_values()

    def __int__(self):
        if _reads.lenient:
            return 0
        raise _no_values()

    def __complex__(self):
        if _reads.lenient:
            return 0j
        raise _no_values()

    def __index__(self):
        if _reads.lenient:
            return 0
        raise _no_values()

    def __setitem__(self, key, value):
        pass

    def fill(self, value):
        pass

    def sort(self, *args, **kwargs):
        pass

    def partition(self, *args, **kwargs):
        pass

    def put(self, *args, **kwargs):
        pass

    def __getitem__(self, key):
        r = np.ndarray.__getitem__(self, _index_key(key))
        if isinstance(r, np.generic):
            return placeholder((), r.dtype)
        return as_meta(r)

    # -- methods that would copy or compute: shape rules ---------------------------------------

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        np.zeros((), self.dtype).astype(dtype, casting=casting)  # NumPy's casting errors
        if not copy and dtype == self.dtype:
            return self
        return placeholder(self.shape, dtype)

    def copy(self, order="C"):
        return placeholder(self.shape, self.dtype)

    __copy__ = copy

    def __deepcopy__(self, memo):
        return placeholder(self.shape, self.dtype)

    def flatten(self, order="C"):
        return placeholder((self.size,), self.dtype)

    def ravel(self, order="C"):
        return self.reshape(-1)

    def view(self, *args, **kwargs):
        dtype = kwargs.get("dtype", args[0] if args else None)
        if dtype is None or isinstance(dtype, type) and issubclass(dtype, np.ndarray):
            return np.ndarray.view(self, *args, **kwargs)
        dtype = np.dtype(dtype)
        if dtype.itemsize == self.itemsize or self.ndim == 0:
            if self.ndim == 0 and dtype.itemsize != self.itemsize:
                raise ValueError("Changing the dtype of a 0d array is only supported if the "
                                 "itemsize is unchanged")
            return np.ndarray.view(self, dtype)
        last = self.shape[-1] * self.itemsize
        if last % dtype.itemsize:
            raise ValueError("When changing to a smaller dtype, its size must be a divisor of "
                             "the size of original dtype")
        return placeholder(self.shape[:-1] + (last // dtype.itemsize,), dtype)

    def dot(self, b, out=None):
        return np.dot(self, b)

    def argmax(self, axis=None, out=None, *, keepdims=False):
        return _arg_reduce(self, axis, keepdims, "argmax")

    def argmin(self, axis=None, out=None, *, keepdims=False):
        return _arg_reduce(self, axis, keepdims, "argmin")

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        if axis is None:
            return placeholder((self.size,), np.intp)
        _normalize_axis(axis, self.ndim)
        return placeholder(self.shape, np.intp)

    def nonzero(self):
        raise _data_dependent("nonzero")

    def searchsorted(self, v, side="left", sorter=None):
        return placeholder(np.shape(v), np.intp)

    def repeat(self, repeats, axis=None):
        if isinstance(repeats, MetaArray) and repeats.size != 1:
            raise _data_dependent("repeat with tensor repeats")
        if isinstance(repeats, MetaArray):
            raise _no_values("repeat with a meta tensor of repeats")
        r = np.asarray(repeats)
        n = self.size if axis is None else self.shape[_normalize_axis(axis, self.ndim)[0]]
        total = int(r) * n if r.ndim == 0 else int(r.sum()) if r.size == n else None
        if total is None:
            raise ValueError(f"operands could not be broadcast together with shape ({n},) "
                             f"({r.size},)")
        if axis is None:
            return placeholder((total,), self.dtype)
        axis = _normalize_axis(axis, self.ndim)[0]
        return placeholder(self.shape[:axis] + (total,) + self.shape[axis + 1:], self.dtype)

    # -- the NumPy protocols -----------------------------------------------------------------------

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.pop("out", None)
        if method == "at":
            return None
        try:
            if method == "__call__":
                if ufunc.signature is None:
                    return _ufunc_call(ufunc, inputs, kwargs, out)
                return _gufunc_call(ufunc, inputs, kwargs, out)
            if method == "reduce":
                return _ufunc_reduce(ufunc, inputs[0], kwargs, out)
            if method == "accumulate":
                return _ufunc_accumulate(ufunc, inputs[0], kwargs, out)
            if method == "outer":
                return _ufunc_outer(ufunc, inputs, kwargs, out)
        except _Fallback:
            pass
        return _run_for_real(getattr(ufunc, method), inputs, kwargs, out)

    def __array_function__(self, func, types, args, kwargs):
        rule = _FUNCTION_RULES.get(func)
        if rule is not None:
            return rule(*args, **kwargs)
        if func in _DATA_DEPENDENT:
            raise _data_dependent(func.__name__)
        return as_meta(super().__array_function__(func, types, args, kwargs))


# ------------------------------------------------------------------------------------------------
# ufunc rules (NOTE [ Meta array rules ])


class _Fallback(Exception):
    """No rule applies: run the call for real on the placeholders' zeros."""


_ZEROS = {}


def _surrogate(x, shape=()):
    """A one-element stand-in for ``x`` with the same dtype (arrays only; scalars pass, so
    NumPy's weak-scalar promotion still applies)."""
    if isinstance(x, np.ndarray):
        key = (x.dtype, shape)
        z = _ZEROS.get(key)
        if z is None:
            z = _ZEROS[key] = np.zeros(shape, x.dtype)
            z.flags.writeable = False
        return z
    return x


def _out_surrogates(out):
    return tuple(None if o is None else np.empty((), o.dtype) for o in out)


def _shape(x):
    return x.shape if isinstance(x, np.ndarray) else np.shape(x)


def _finish(dtypes, shape, out):
    """Placeholders of ``shape`` and ``dtypes`` (one per output), or the ``out`` arrays."""
    if out is not None:
        for o in out:
            if o is not None and o.shape != tuple(shape):
                raise ValueError(f"non-broadcastable output operand with shape {o.shape} "
                                 f"doesn't match the broadcast shape {tuple(shape)}")
        results = tuple(o if o is not None else placeholder(shape, d)
                        for o, d in zip(out, dtypes))
    else:
        results = tuple(placeholder(shape, d) for d in dtypes)
    return results[0] if len(results) == 1 else results


def _dtypes_of(r):
    return tuple(x.dtype for x in r) if type(r) is tuple else (np.asarray(r).dtype,)


def _ufunc_call(ufunc, inputs, kwargs, out):
    shapes = [_shape(x) for x in inputs]
    if out is not None:
        shapes += [o.shape for o in out if o is not None]
    shape = np.broadcast_shapes(*shapes)
    where = kwargs.get("where")
    if where is not None and where is not True:
        kwargs = dict(kwargs, where=_surrogate(where))
    sur = ufunc(*[_surrogate(x) for x in inputs], **kwargs,
                **({} if out is None else {"out": _out_surrogates(out)}))
    return _finish(_dtypes_of(sur), shape, out)


def _parse_signature(sig):
    ins, outs = sig.replace(" ", "").split("->")

    def groups(s):
        return [tuple(d for d in g.split(",") if d) for g in s.strip("()").split("),(")]

    return groups(ins), groups(outs)


def _gufunc_call(ufunc, inputs, kwargs, out):
    if "axes" in kwargs or "axis" in kwargs:
        raise _Fallback
    core_in, core_out = _parse_signature(ufunc.signature)
    sizes, missing, loops, surrogates = {}, set(), [], []
    for i, (x, core) in enumerate(zip(inputs, core_in)):
        shape = _shape(x)
        need = len(core)
        if len(shape) < need:
            optional = [d for d in core if d.endswith("?")]
            drop = need - len(shape)
            if drop > len(optional):
                raise ValueError(
                    f"{ufunc.__name__}: Input operand {i} does not have enough dimensions (has "
                    f"{len(shape)}, gufunc core with signature {ufunc.signature} requires "
                    f"{need - len(optional)})")
            gone = optional[:drop] if core[0].endswith("?") else optional[-drop:]
            missing.update(gone)
            core = tuple(d for d in core if d not in gone)
        n = len(core)
        loops.append(shape[:len(shape) - n])
        sur_shape = []
        for j, d in enumerate(core):
            size = shape[len(shape) - n + j]
            name = d.rstrip("?")
            if name.isdigit():
                if size != int(name):
                    raise _Fallback
                sur_shape.append(size)
                continue
            sur_shape.append(1)
            if name in sizes and sizes[name] != size:
                raise ValueError(
                    f"{ufunc.__name__}: Input operand {i} has a mismatch in its core dimension "
                    f"{j}, with gufunc signature {ufunc.signature} (size {size} is different "
                    f"from {sizes[name]})")
            sizes[name] = size
        surrogates.append(_surrogate(x, tuple(sur_shape)))
    loop = np.broadcast_shapes(*loops)
    out_shapes = []
    for core in core_out:
        shape = list(loop)
        for d in core:
            if d in missing:
                continue
            name = d.rstrip("?")
            if name.isdigit():
                shape.append(int(name))
            elif name in sizes:
                shape.append(sizes[name])
            else:
                raise _Fallback  # an output size the inputs do not fix (svd's min(m, n))
        out_shapes.append(tuple(shape))
    sur = ufunc(*surrogates, **kwargs)
    dtypes = _dtypes_of(sur)
    if out is not None:
        for o, s in zip(out, out_shapes):
            if o is not None and o.shape != s:
                raise ValueError(f"{ufunc.__name__}: Output operand has a mismatch in its shape "
                                 f"{o.shape}, expected {s}")
        results = tuple(o if o is not None else placeholder(s, d)
                        for o, s, d in zip(out, out_shapes, dtypes))
    else:
        results = tuple(placeholder(s, d) for s, d in zip(out_shapes, dtypes))
    return results[0] if len(results) == 1 else results


def _reduced_shape(shape, axis, keepdims):
    if axis is None:
        axes = tuple(range(len(shape)))
    else:
        axes = _normalize_axis(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def _shrunk(x):
    return _surrogate(x, tuple(min(n, 1) for n in x.shape))


def _ufunc_reduce(ufunc, a, kwargs, out):
    axis = kwargs.get("axis", 0)
    keepdims = kwargs.get("keepdims", False)
    kw = dict(kwargs)
    where = kw.get("where")
    if where is not None and where is not True:
        kw["where"] = _surrogate(where, tuple(min(n, 1) for n in np.shape(where)))
    sur = ufunc.reduce(_shrunk(a), **kw)
    shape = _reduced_shape(a.shape, axis, keepdims)
    return _finish(_dtypes_of(sur), shape, out)


def _ufunc_accumulate(ufunc, a, kwargs, out):
    sur = ufunc.accumulate(_shrunk(a), **kwargs)
    return _finish(_dtypes_of(sur), a.shape, out)


def _ufunc_outer(ufunc, inputs, kwargs, out):
    a, b = inputs
    sur = ufunc.outer(_surrogate(a), _surrogate(b), **kwargs)
    return _finish(_dtypes_of(sur), _shape(a) + _shape(b), out)


def _plain(x):
    """A placeholder as a plain ndarray (zeros) for code that must really run."""
    if isinstance(x, MetaArray):
        return x.view(np.ndarray)
    if type(x) is tuple:
        return tuple(_plain(y) for y in x)
    if type(x) is list:
        return [_plain(y) for y in x]
    return x


def _run_for_real(fn, inputs, kwargs, out):
    """Run a NumPy call on the placeholders' zeros (small cases no rule covers) and turn
    the results into placeholders; writes into ``out`` are dropped."""
    r = fn(*_plain(inputs), **{k: _plain(v) for k, v in kwargs.items()})
    if out is not None:
        return out[0] if len(out) == 1 else out
    return as_meta(r)


def _arg_reduce(a, axis, keepdims, name):
    if a.size == 0 and (axis is None or a.shape[_normalize_axis(axis, a.ndim)[0]] == 0):
        raise ValueError(f"attempt to get {name} of an empty sequence")
    if axis is None:
        shape = (1,) * a.ndim if keepdims else ()
    else:
        shape = _reduced_shape(a.shape, axis, keepdims)
    return placeholder(shape, np.intp)


# the array-function rules (NOTE [ Meta array rules ]), filled by _meta_functions.py
#: NumPy function -> rule computing its result on placeholders
_FUNCTION_RULES: dict = {}
#: NumPy functions whose result shape depends on the values
_DATA_DEPENDENT: set = set()
