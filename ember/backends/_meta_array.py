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
- The result dtypes of calls on placeholders alone (element-wise ufuncs, reductions,
  ``matmul``) are cached per ufunc and input dtypes, since NumPy's answer depends on nothing
  else; calls with scalars or keywords run the stand-ins each time (a value can change the
  dtype or raise).
- Reading a value (``item``, ``bool``, ``float``, ``tolist``) raises ``MetaValueError``;
  copying the data out (``get``) raises NotImplementedError, as PyTorch does.
- ``strides`` reports the strides the array would have on PyTorch's meta device (the real
  ones are all 0): ``Tensor.stride()`` and ``is_contiguous()`` read them, and so do the
  overlap checks of in-place ops, which would otherwise see every element as shared. See
  NOTE [ Meta layouts ].

NOTE [ Meta layouts ]
A placeholder keeps the layout it would have (its *logical* strides, in bytes) beside its
zero real strides, in ``_lay``; none means contiguous. Three places give layouts:
- Views (``transpose``, ``reshape``, basic indexing, ``diagonal``, ``broadcast_to``,
  ``as_strided``, ...) are replayed on a *ghost*: a plain ndarray of the same shape and
  logical strides over one element (``_ghost``). NumPy's view functions compute strides
  without reading elements, so the ghost's result has the view's strides; only view
  functions ever see a ghost (a read through one would leave its single element).
  A reshape that would copy gives a contiguous result, as ``view``/``reshape`` do in torch.
- Element-wise ufuncs give PyTorch's TensorIterator layout: the output is dense in the
  order of its inputs' strides (``iter_layout``).
- Copies that keep the layout (``empty_like``, ``copy``/``array`` with order ``K``,
  ``astype``, ``to("meta")``) follow PyTorch's ``preserve_format``: a dense input's
  strides, otherwise dense strides in the input's stride order (``like_layout``).
Every other result is contiguous, which is what PyTorch's meta kernels give for reductions,
matmul, concatenation and the rest.
"""

from __future__ import annotations

import contextlib
import functools
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
    """A value of a meta tensor was read; meta tensors have none.

    Example:
        >>> import ember
        >>> ember.ones(2, device="meta").sum().item()
        Traceback (most recent call last):
        ...
        ember.backends._meta_array.MetaValueError: Tensor.item() cannot be called on meta tensors
    """


class DataDependentOutputError(NotImplementedError):
    """An operation whose output shape depends on values was run on meta arrays.

    Example:
        >>> import ember
        >>> from ember.backends.meta import DataDependentOutputError
        >>> try:
        ...     ember.ones(2, device="meta").nonzero()
        ... except DataDependentOutputError as e:
        ...     print("values needed:", "depends on the input's values" in str(e))
        values needed: True
    """


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


def placeholder(shape, dtype, strides=None) -> MetaArray:
    """A fresh MetaArray of ``shape`` and ``dtype`` (no memory whatever the shape).

    Args:
        shape: a tuple of non-negative ints.
        dtype: a NumPy dtype (or anything ``np.dtype`` accepts).
        strides: the strides (in bytes) it reports; contiguous when None.

    Returns:
        MetaArray: a read-only, zero-stride array whose own storage it is.

    Example::

        >>> a = placeholder((100_000, 100_000), np.float32)
        >>> a.shape, a.nbytes
        ((100000, 100000), 40000000000)
    """
    shape = tuple(shape)
    # a buffer of its own, so NumPy's overlap checks see unrelated placeholders as disjoint
    r = _ndarray_new(MetaArray, shape, dtype, bytes(16), 0, (0,) * len(shape))
    if strides is not None:
        _set_layout(r, tuple(strides))
    return r


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


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape, itemsize):
    """PyTorch's contiguous strides for ``shape``, in bytes (a zero-size dim counts as 1)."""
    strides = [itemsize] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


# -- layouts (NOTE [ Meta layouts ]) -----------------------------------------------------------


def _set_layout(r, strides):
    """Give placeholder ``r`` the logical ``strides`` (bytes); contiguous ones are not kept."""
    if strides != contiguous_strides(r.shape, r.itemsize):
        r.__dict__["_lay"] = (r.shape, strides)
    return r


_GHOST_BASES = {}


def _ghost(a):
    """A plain ndarray of ``a``'s shape, dtype and logical strides over one element, for
    replaying view functions (never read: its strides may leave that element). Kept on
    ``a`` for its next view."""
    strides = a.strides
    g = a.__dict__.get("_ghost") if type(a) is MetaArray else None
    if g is not None and g.shape == a.shape and g.strides == strides and g.dtype == a.dtype:
        return g
    base = _GHOST_BASES.get(a.dtype)
    if base is None:
        base = _GHOST_BASES[a.dtype] = np.zeros(1, a.dtype)
    g = np.lib.stride_tricks.as_strided(base, a.shape, strides)
    if type(a) is MetaArray:
        a.__dict__["_ghost"] = g
    return g


def _permuted(r, a, perm):
    """View ``r`` of ``a`` with ``a``'s dims in order ``perm`` takes the permuted strides."""
    st = a.strides
    return _set_layout(r, tuple(st[p] for p in perm))


def _adopt(r, g):
    """View ``r`` (a MetaArray) takes the strides of ``g``, the same view of the ghost."""
    if isinstance(r, MetaArray) and isinstance(g, np.ndarray) and g.shape == r.shape:
        r.__dict__.pop("_lay", None)
        _set_layout(r, g.strides)
    return r


def _dense_order(shape, operands):
    """PyTorch's TensorIterator dimension order for ``shape`` (innermost first), from the
    operands' strides (each aligned to ``shape``, 0 where broadcast)."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0, d1):
        for st in operands:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def expand_strides(shape, strides, out_shape, itemsize):
    """PyTorch's strides for ``expand``-ing an array to ``out_shape``.

    Broadcast dims get 0, size-1 dims that stay keep their stride, and a new leading dim
    gets the size times the stride of the dim after it.

    Args:
        shape, strides: the array's shape and strides (bytes).
        out_shape: the shape expanded to (``shape`` broadcasts to it).
        itemsize: the element size, for a new last dim.

    Returns:
        tuple: the strides in bytes.

    Example::

        >>> expand_strides((3, 1), (4, 4), (2, 3, 5), 4)
        (0, 4, 0)
        >>> expand_strides((3, 1), (4, 4), (1, 3, 5), 4)
        (12, 4, 0)
    """
    out = [0] * len(out_shape)
    off = len(out_shape) - len(shape)
    for i in range(len(out_shape) - 1, -1, -1):
        d = i - off
        if d >= 0:
            size, stride = shape[d], strides[d]
        else:
            size = 1
            stride = out_shape[i + 1] * out[i + 1] if i + 1 < len(out_shape) else itemsize
        out[i] = 0 if size != out_shape[i] else stride
    return tuple(out)


def _strides_in_order(shape, perm, itemsize):
    """Dense strides (bytes) for ``shape`` laid out in ``perm`` order (innermost first; a
    zero-size dim counts as 1, as in PyTorch's contiguous strides)."""
    strides = [0] * len(shape)
    step = itemsize
    for d in perm:
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def _non_overlapping_and_dense(shape, strides, itemsize):
    """PyTorch's ``is_non_overlapping_and_dense`` (strides in bytes)."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == itemsize
    order = sorted(range(len(shape)), key=lambda d: (shape[d] < 2, strides[d]))
    want = itemsize
    for d in order:
        if shape[d] < 2:
            return True
        if strides[d] != want:
            return False
        want *= shape[d]
    return True


def _torch_contiguous(shape, strides, itemsize):
    """PyTorch's ``is_contiguous`` (strides in bytes): size-1 dims may have any stride."""
    if 0 in shape:
        return True
    want = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != want:
                return False
            want *= n
    return True


def like_layout(shape, strides, itemsize, contiguous_first=False):
    """The strides of a ``preserve_format`` copy of an array, as PyTorch lays it out.

    The same strides when they are dense (contiguous ones instead when ``contiguous_first``
    and PyTorch counts them contiguous, as its ``empty_like`` does), else dense strides in
    their order. An empty array's copy keeps its strides whatever they are, as PyTorch's
    meta copies do (its ``empty_like``, ``contiguous_first``, gives contiguous ones).

    Args:
        shape: the array's shape.
        strides: its strides in elements.
        itemsize: the copy's element size.
        contiguous_first: prefer contiguous strides where PyTorch's ``is_contiguous`` holds.

    Returns:
        tuple: the copy's strides in bytes.

    Example::

        >>> like_layout((3, 4), (1, 3), 4)       # a transposed matrix stays transposed
        (4, 12)
        >>> like_layout((3, 4), (1, 6), 4)       # not dense: dense in the same order
        (4, 12)
    """
    shape, strides = tuple(shape), tuple(strides)
    if 0 in shape:
        return contiguous_strides(shape, itemsize) if contiguous_first else \
            tuple(s * itemsize for s in strides)
    if contiguous_first and _torch_contiguous(shape, strides, 1):
        return contiguous_strides(shape, itemsize)
    if _non_overlapping_and_dense(shape, strides, 1):
        return tuple(s * itemsize for s in strides)
    return _strides_in_order(shape, _dense_order(shape, [strides]), itemsize)


def _elements(a):
    """``a``'s logical strides in elements."""
    return tuple(s // a.itemsize for s in a.strides)


def iter_layout(shape, inputs, itemsize):
    """The strides PyTorch's TensorIterator gives an element-wise result.

    Operands of the result's shape and one dense layout give it that layout; otherwise the
    result is dense in the order of the operands' strides (the first operand that orders two
    dims decides, broadcast dims left out).

    Args:
        shape: the result's shape.
        inputs: the call's operands (arrays, with their logical strides, and scalars).
        itemsize: the result's element size.

    Returns:
        tuple or None: the strides in bytes; None for contiguous.

    Example::

        >>> x = placeholder((4, 3), np.float32).T
        >>> iter_layout((3, 4), [x, 1.0], 4)
        (4, 12)
    """
    shape = tuple(shape)
    if len(shape) < 2 or 0 in shape:
        return None
    arrays = [x for x in inputs if isinstance(x, np.ndarray) and x.ndim]
    if not arrays:
        return None
    if all(x.shape == shape for x in arrays):
        # TensorIterator's fast set-up: operands of one shape and one layout
        if all(_torch_contiguous(shape, x.strides, x.itemsize) for x in arrays):
            return None
        first = _elements(arrays[0])
        if all(_elements(x) == first for x in arrays) and \
                _non_overlapping_and_dense(shape, first, 1):
            return tuple(s * itemsize for s in first)
    operands = []
    for x in arrays:
        off = len(shape) - x.ndim
        st = [0] * off
        for i, (n, s) in enumerate(zip(x.shape, x.strides)):
            st.append(0 if n == 1 and shape[off + i] != 1 else s)
        operands.append(st)
    return _strides_in_order(shape, _dense_order(shape, operands), itemsize)


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


def _basic_item(k):
    """True for an index item NumPy applies as a view (no element read)."""
    if k is None or k is Ellipsis or type(k) is slice:
        return True
    if isinstance(k, (bool, np.bool_)):
        return False
    if isinstance(k, (int, np.integer)):
        return True
    return isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu"


def _new_axis_strides(shape, strides, itemsize, items, out):
    """``out`` (a basic index's result strides) with PyTorch's strides for the dims that
    ``None`` items insert: an unsqueeze before source dim ``i`` gets ``size * stride`` of
    that dim, one after the last gets the item size. ``items`` hold one Ellipsis."""
    used = sum(1 for k in items if k is not None and k is not Ellipsis)
    out, src, pos = list(out), 0, 0
    for k in items:
        if k is Ellipsis:
            n = len(shape) - used
            src, pos = src + n, pos + n
        elif k is None:
            out[pos] = shape[src] * strides[src] if src < len(shape) else itemsize
            pos += 1
        elif type(k) is slice:
            src, pos = src + 1, pos + 1
        else:  # an integer
            src += 1
    return tuple(out)


def _copy_of(a, dtype, order, contiguous_first=False):
    """A fresh placeholder copying ``a`` as ``dtype`` in NumPy's ``order``: ``"K"``/``"A"``
    keep ``a``'s layout as PyTorch's ``preserve_format`` does (see ``like_layout``), ``"C"``
    is contiguous."""
    dtype = np.dtype(dtype)
    if order in ("K", "A") and "_lay" in a.__dict__:
        return placeholder(a.shape, dtype, like_layout(a.shape, _elements(a), dtype.itemsize,
                                                       contiguous_first))
    if order == "F" and a.ndim > 1:
        return placeholder(a.shape, dtype, _strides_in_order(a.shape, range(a.ndim),
                                                             dtype.itemsize))
    return placeholder(a.shape, dtype)


class MetaArray(np.ndarray):
    """The meta device's array: shape and dtype, no data. See NOTE [ Meta array rules ].

    Create them with ``placeholder(shape, dtype)``; ``as_meta`` turns any array into one.

    Args:
        shape (tuple of int): the array's shape (as ``numpy.ndarray``'s constructor).
        dtype: its NumPy dtype.

    Returns:
        An array that carries a shape and a dtype and holds no values.

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
        return _adopt(np.ndarray.real.__get__(self), _ghost(self).real)

    @real.setter
    def real(self, value):
        pass

    @property
    def imag(self):
        if not np.iscomplexobj(self):
            return np.ndarray.imag.__get__(self)
        return _adopt(np.ndarray.imag.__get__(self), _ghost(self).imag)

    @imag.setter
    def imag(self, value):
        pass

    @property
    def strides(self):
        lay = self.__dict__.get("_lay")
        if lay is not None and lay[0] == self.shape:
            return lay[1]
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
        key = _index_key(key)
        r = np.ndarray.__getitem__(self, key)
        if isinstance(r, np.generic):
            return placeholder((), r.dtype)
        r = as_meta(r)
        items = key if type(key) is tuple else (key,)
        if r is not self and all(_basic_item(k) for k in items):
            if not any(k is Ellipsis for k in items):
                items += (Ellipsis,)  # a 0-d view of the ghost, never its element
            g = np.ndarray.__getitem__(_ghost(self), items)
            if any(k is None for k in items):
                g = np.lib.stride_tricks.as_strided(g, g.shape, _new_axis_strides(
                    self.shape, self.strides, self.itemsize, items, g.strides))
            _adopt(r, g)
        return r

    # -- views: NumPy's, with the layout replayed on the ghost (NOTE [ Meta layouts ]) -------

    def transpose(self, *axes):
        r = np.ndarray.transpose(self, *axes)  # raises for axes out of range or repeated
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        perm = range(self.ndim - 1, -1, -1) if not axes or axes[0] is None else \
            [int(a) % self.ndim for a in axes]
        return _permuted(r, self, perm)

    def swapaxes(self, axis1, axis2):
        r = np.ndarray.swapaxes(self, axis1, axis2)  # raises for axes out of range
        perm = list(range(self.ndim))
        a, b = axis1 % self.ndim, axis2 % self.ndim
        perm[a], perm[b] = b, a
        return _permuted(r, self, perm)

    @property
    def T(self):
        return self.transpose()

    @property
    def mT(self):
        r = np.ndarray.mT.__get__(self)
        perm = list(range(self.ndim))
        perm[-2:] = perm[-1], perm[-2]
        return _permuted(r, self, perm)

    def squeeze(self, axis=None):
        return _adopt(np.ndarray.squeeze(self, axis), _ghost(self).squeeze(axis))

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return _adopt(np.ndarray.diagonal(self, offset, axis1, axis2),
                      _ghost(self).diagonal(offset, axis1, axis2))

    def reshape(self, *shape, order="C", copy=None):
        r = np.ndarray.reshape(self, *shape, order=order)
        if copy:
            return placeholder(r.shape, r.dtype)
        if order == "C" and "_lay" not in self.__dict__:
            return r
        try:
            g = np.ndarray.reshape(_ghost(self), *shape, order=order, copy=False)
        except ValueError:  # only a copy has that shape: a fresh, contiguous one
            if copy is False:
                raise
            return placeholder(r.shape, r.dtype)
        return _adopt(r, g)

    # -- methods that would copy or compute: shape rules ---------------------------------------

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = np.dtype(dtype)
        np.zeros((), self.dtype).astype(dtype, casting=casting)  # NumPy's casting errors
        if not copy and dtype == self.dtype:
            return self
        return _copy_of(self, dtype, order)

    def copy(self, order="C"):
        return _copy_of(self, self.dtype, order)

    def __copy__(self):
        return _copy_of(self, self.dtype, "K")

    def __deepcopy__(self, memo):
        return _copy_of(self, self.dtype, "K")

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
            return _adopt(np.ndarray.view(self, dtype), _ghost(self).view(dtype))
        last = self.shape[-1] * self.itemsize
        if last % dtype.itemsize:
            raise ValueError("When changing to a smaller dtype, its size must be a divisor of "
                             "the size of original dtype")
        r = placeholder(self.shape[:-1] + (last // dtype.itemsize,), dtype)
        if "_lay" in self.__dict__:
            try:  # NumPy's rule: the last dim must be dense
                _adopt(r, _ghost(self).view(dtype))
            except ValueError:
                pass
        return r

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


def _dtype(x):
    return x.dtype if isinstance(x, np.ndarray) else None


def _finish(dtypes, shape, out, inputs=None):
    """Placeholders of ``shape`` and ``dtypes`` (one per output), or the ``out`` arrays;
    given the ``inputs`` of an element-wise call, in their TensorIterator layout."""
    if out is not None:
        for o in out:
            if o is not None and o.shape != tuple(shape):
                raise ValueError(f"non-broadcastable output operand with shape {o.shape} "
                                 f"doesn't match the broadcast shape {tuple(shape)}")
        results = tuple(o if o is not None else placeholder(shape, d)
                        for o, d in zip(out, dtypes))
    elif inputs is not None:
        results = tuple(placeholder(shape, d, iter_layout(shape, inputs, np.dtype(d).itemsize))
                        for d in dtypes)
    else:
        results = tuple(placeholder(shape, d) for d in dtypes)
    return results[0] if len(results) == 1 else results


def _dtypes_of(r):
    return tuple(x.dtype for x in r) if type(r) is tuple else (np.asarray(r).dtype,)


#: (ufunc, input dtypes) -> result dtypes, for calls of placeholders alone without keywords:
#: their dtypes (and NumPy's dtype errors, which are not cached) depend on nothing else
_UFUNC_DTYPES: dict = {}


def _plain_call(ufunc, inputs):
    """The result of ``ufunc`` on placeholders alone (no scalars, no keywords, no ``out``),
    or None when the call is not of that kind: the common case, made cheap."""
    a = inputs[0]
    if type(a) is not MetaArray:
        return None
    if len(inputs) == 1:
        shape, key = a.shape, (ufunc, a.dtype)
    elif len(inputs) == 2 and type(inputs[1]) is MetaArray:
        b = inputs[1]
        shape = a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)
        key = (ufunc, a.dtype, b.dtype)
    else:
        return None
    dtypes = _UFUNC_DTYPES.get(key)
    if dtypes is None:
        dtypes = _UFUNC_DTYPES[key] = _dtypes_of(ufunc(*[_surrogate(x) for x in inputs]))
    if all("_lay" not in x.__dict__ for x in inputs):  # contiguous operands: contiguous
        results = tuple(placeholder(shape, d) for d in dtypes)
        return results[0] if len(results) == 1 else results
    return _finish(dtypes, shape, None, inputs)


def _ufunc_call(ufunc, inputs, kwargs, out):
    if not kwargs and out is None:
        r = _plain_call(ufunc, inputs)
        if r is not None:
            return r
    shapes = [_shape(x) for x in inputs]
    if out is not None:
        shapes += [o.shape for o in out if o is not None]
    shape = np.broadcast_shapes(*shapes)
    where = kwargs.get("where")
    if where is not None and where is not True:
        kwargs = dict(kwargs, where=_surrogate(where))
    sur = ufunc(*[_surrogate(x) for x in inputs], **kwargs,
                **({} if out is None else {"out": _out_surrogates(out)}))
    return _finish(_dtypes_of(sur), shape, out, inputs)


@functools.lru_cache(maxsize=256)
def _parse_signature(sig):
    ins, outs = sig.replace(" ", "").split("->")

    def groups(s):
        return [tuple(d for d in g.split(",") if d) for g in s.strip("()").split("),(")]

    return groups(ins), groups(outs)


def _gufunc_call(ufunc, inputs, kwargs, out):
    if ufunc is np.matmul and not kwargs and out is None and len(inputs) == 2:
        r = _matmul_call(*inputs)
        if r is not None:
            return r
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
    if ufunc is np.matmul and not kwargs and len(inputs) == 2:
        _UFUNC_DTYPES[(np.matmul, _dtype(inputs[0]), _dtype(inputs[1]))] = dtypes
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


def _matmul_call(a, b):
    """``matmul`` of two placeholders of at least 2 dims whose sizes agree (the common case,
    made cheap; anything else takes the general gufunc rule and its errors), else None."""
    if type(a) is not MetaArray or type(b) is not MetaArray or a.ndim < 2 or b.ndim < 2 or \
            a.shape[-1] != b.shape[-2]:
        return None
    key = (np.matmul, a.dtype, b.dtype)
    dtypes = _UFUNC_DTYPES.get(key)
    if dtypes is None:
        return None  # the first call of these dtypes takes the general rule
    batch = a.shape[:-2] if a.shape[:-2] == b.shape[:-2] else \
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return placeholder(batch + (a.shape[-2], b.shape[-1]), dtypes[0])


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


#: (ufunc, dtype, shrunk shape, axis, keepdims, dtype=) -> result dtypes of reductions
_REDUCE_DTYPES: dict = {}


def _ufunc_reduce(ufunc, a, kwargs, out):
    axis = kwargs.get("axis", 0)
    keepdims = kwargs.get("keepdims", False)
    shape = _reduced_shape(a.shape, axis, keepdims)  # NumPy's axis errors
    key = None
    if kwargs.keys() <= {"axis", "keepdims", "dtype"}:
        small = tuple(min(n, 1) for n in a.shape)
        key = (ufunc, a.dtype, small, tuple(axis) if type(axis) is list else axis, keepdims,
               kwargs.get("dtype"))
        dtypes = _REDUCE_DTYPES.get(key)
        if dtypes is not None:
            return _finish(dtypes, shape, out)
    kw = dict(kwargs)
    where = kw.get("where")
    if where is not None and where is not True:
        kw["where"] = _surrogate(where, tuple(min(n, 1) for n in np.shape(where)))
    dtypes = _dtypes_of(ufunc.reduce(_shrunk(a), **kw))
    if key is not None:
        _REDUCE_DTYPES[key] = dtypes
    return _finish(dtypes, shape, out)


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
