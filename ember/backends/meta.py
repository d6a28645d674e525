"""The meta device: tensors with a shape and a dtype and no data.

``ember.empty(2, 3, device="meta")``, ``x.to("meta")`` and modules built under
``with ember.device("meta"):`` give tensors on which every op runs and computes only the
shape and dtype of its result (and autograd runs too, giving meta gradients). Building a
model on meta costs no memory and no time whatever its size; ``Module.to_empty`` then gives
it real (uninitialised) storage on a device.

NOTE [ Meta device ]
The meta device is a backend like any out-of-tree one: ``register()`` below adds it through
``ember.library.register_backend`` (array type ``MetaArray``, namespace ``MetaNamespace``)
and gives some ops kernels of their own through ``ember.library.impl(op, "meta")``. Nothing
in the op declarations knows of it. The pieces:

- The arrays (ember/backends/_meta_array.py): a ``MetaArray`` is an ndarray subclass with
  all strides 0 over 16 bytes of its own, so it takes no memory; NumPy's protocols route every
  ufunc and array function that sees one to shape rules (NOTE [ Meta array rules ]).
- The kernels: ember's kernels are written once against an array namespace ``xp``, so
  ``Op.resolve`` finds for meta the same generic kernel CPU and CUDA run, called with
  ``MetaNamespace`` as ``xp``: its factories (``empty``, ``zeros``, ``arange``, ...) make
  placeholders, everything else is NumPy's, which defers to the placeholders' rules. Matmul,
  reductions and element-wise maths cost nothing; a few functions without a rule run NumPy on
  the placeholders' zeros (their results are dropped at once). The namespace also adapts every
  kernel it is handed (``__ember_kernel__``, consulted by ``Op.resolve``): results become
  placeholders (a kernel may call plain NumPy, which strips the subclass), and a kernel that
  reads a value raises NotImplementedError naming the op and the device.
- Per-op meta kernels (ember/backends/_meta_kernels.py) where the generic one is wrong or
  costly: ops whose result shape depends on values (``nonzero``, ``unique``,
  ``masked_select``) raise NotImplementedError, as PyTorch does; kernels whose only reads are
  checks of valid input (integer division by zero, class indices in range) run with reads
  that find nothing, which is PyTorch's meta behaviour too; host-side factorizations (LU,
  ``eig``) get shape rules.
- Checks of values in public functions (index bounds, probabilities in [0, 1]) pass meta
  tensors by: they ask ``ember._core.checks.holds_values``. Ops that cannot do without
  values (``bincount``) say so with ``require_values``.
- Random ops and in-place fills draw nothing, and the generator does not move: the random
  functions sample only for a device whose arrays hold values (ember/_ops/random_ops.py).
- Values cannot leave: ``.cpu()``/``.tolist()`` raise NotImplementedError ("Cannot copy out
  of meta tensor; no data!"), ``.item()``/``bool()`` raise RuntimeError ("Tensor.item()
  cannot be called on meta tensors"), ``.numpy()`` TypeError -- PyTorch's types and messages.
- ``stride()`` reports the strides PyTorch's meta device gives: views keep their layout,
  element-wise results follow TensorIterator's, copies follow ``preserve_format``, and
  LAPACK-style results are column-major (NOTE [ Meta layouts ] in _meta_array.py;
  ember/backends/_meta_layouts.py); ``data_ptr()`` is 0; printing shows
  ``tensor(..., device='meta', size=(2, 3))``.

Measured: building ``nn.Linear(100_000, 100_000)`` on meta and running forward and backward
through it takes about a millisecond and under 100 kB (tests/test_meta.py); the CPU path
is untouched (``Op.resolve`` runs once per op and array type, and a CPU ``a + b`` runs none
of this code).
"""

from __future__ import annotations

import math

import numpy as np

from . import _meta_functions  # noqa: F401  (fills the array-function rules)
from ._meta_layouts import finish_layouts, has_layout_rule
from ._meta_array import (
    DataDependentOutputError, MetaArray, MetaValueError, _adopt, _copy_of, _ghost,
    _real_strides, as_meta, like_layout, placeholder,
)

__all__ = ["MetaArray", "MetaNamespace", "placeholder", "to_meta", "register"]


def to_meta(array) -> MetaArray:
    """``array`` (of any backend) as a placeholder of its shape and dtype: what ``x.to("meta")``
    does to the data. No data is read; the layout is kept as PyTorch's ``preserve_format``
    keeps it (NOTE [ Meta layouts ]).

    Args:
        array: a NumPy, CuPy or other backend array.

    Returns:
        MetaArray: a fresh placeholder (``array`` itself when it already is one).

    Example::

        >>> to_meta(np.ones((2, 3))).shape
        (2, 3)
    """
    if type(array) is MetaArray:
        return array
    strides = getattr(array, "strides", None)
    if strides is None or array.ndim < 2:
        return placeholder(array.shape, array.dtype)
    item = array.dtype.itemsize
    if array.size == 0 and not any(strides):  # NumPy's fresh empty arrays: not a layout
        return placeholder(array.shape, array.dtype)
    return placeholder(array.shape, array.dtype,
                       like_layout(array.shape, [s // item for s in strides], item))


# ------------------------------------------------------------------------------------------------
# the array namespace


class _StrideTricks:
    """``xp.lib.stride_tricks`` for placeholders: strided views are placeholders of the
    asked shape (the strides only say where values would be, and there are none)."""

    @staticmethod
    def as_strided(x, shape=None, strides=None, subok=False, writeable=True):
        r = _view_of(x, x.shape if shape is None else tuple(shape))
        if strides is not None and len(strides) == r.ndim:
            r.__dict__.pop("_lay", None)
            return _adopt(r, np.lib.stride_tricks.as_strided(_ghost(r), r.shape,
                                                             tuple(strides)))
        return r

    @staticmethod
    def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
        window = (window_shape,) if isinstance(window_shape, int) else tuple(window_shape)
        if axis is None:
            axis = tuple(range(x.ndim))
        axis = (axis,) if isinstance(axis, int) else tuple(axis)
        shape = list(x.shape)
        for ax, w in zip(axis, window):
            shape[ax] -= w - 1
            if shape[ax] < 0:
                raise ValueError("window shape cannot be larger than input array shape")
        r = _view_of(x, tuple(shape) + window)
        if isinstance(x, MetaArray):
            _adopt(r, np.lib.stride_tricks.sliding_window_view(_ghost(x), window, axis))
        return r

    def __getattr__(self, name):
        return getattr(np.lib.stride_tricks, name)


def _view_of(x, shape):
    """A zero-stride view of placeholder ``x`` with ``shape`` (any element count): it shares
    ``x``'s storage, as a real strided view would."""
    if not isinstance(x, MetaArray) or x.size == 0:
        return placeholder(shape, x.dtype)
    first = np.ndarray.__getitem__(x, (0,) * x.ndim + (Ellipsis,)).view(np.ndarray)
    return np.broadcast_to(first, shape).view(MetaArray)


class _Lib:
    stride_tricks = _StrideTricks()

    def __getattr__(self, name):
        return getattr(np.lib, name)


def _shape_arg(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(n) for n in shape)


class MetaNamespace:
    """The meta device's array namespace (its ``xp``): NumPy, with factories that make
    placeholders and a kernel adapter for ``Op.resolve``. See NOTE [ Meta device ].

    Example::

        >>> xp = MetaNamespace()
        >>> xp.zeros((2, 3), np.float32).shape
        (2, 3)
    """

    __name__ = "ember.meta"
    ndarray = MetaArray
    lib = _Lib()

    # -- factories --------------------------------------------------------------------------------

    @staticmethod
    def empty(shape, dtype=float, order="C", **kwargs):
        return placeholder(_shape_arg(shape), np.dtype(dtype))

    zeros = ones = empty

    @staticmethod
    def full(shape, fill_value, dtype=None, order="C", **kwargs):
        if dtype is None:
            dtype = np.asarray(fill_value).dtype
        return placeholder(_shape_arg(shape), np.dtype(dtype))

    @staticmethod
    def empty_like(a, dtype=None, order="K", subok=True, shape=None, **kwargs):
        dtype = np.dtype(a.dtype if dtype is None else dtype)
        if shape is None and isinstance(a, MetaArray):
            return _copy_of(a, dtype, order, contiguous_first=True)
        return placeholder(np.shape(a) if shape is None else _shape_arg(shape), dtype)

    zeros_like = ones_like = empty_like

    @staticmethod
    def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, **kwargs):
        return MetaNamespace.empty_like(a, dtype, shape=shape)

    @staticmethod
    def arange(start, stop=None, step=None, dtype=None, **kwargs):
        if stop is None:
            start, stop = 0, start
        step = 1 if step is None else step
        n = max(0, math.ceil((stop - start) / step))
        d = np.arange(start, start, step, dtype=dtype).dtype  # NumPy's dtype for these args
        return placeholder((n,), d)

    @staticmethod
    def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
        small = np.linspace(_plain(start), _plain(stop), num=min(num, 2), endpoint=endpoint,
                            dtype=dtype, axis=axis)
        shape = list(small.shape)
        shape[axis] = num
        r = placeholder(tuple(shape), small.dtype)
        return (r, placeholder((), small.dtype)) if retstep else r

    @staticmethod
    def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
        return MetaNamespace.linspace(start, stop, num, endpoint, dtype=dtype, axis=axis)

    @staticmethod
    def eye(N, M=None, k=0, dtype=float, order="C", **kwargs):
        return placeholder((N, N if M is None else M), np.dtype(dtype))

    @staticmethod
    def identity(n, dtype=None, **kwargs):
        return placeholder((n, n), np.dtype(float if dtype is None else dtype))

    @staticmethod
    def tri(N, M=None, k=0, dtype=float, **kwargs):
        return placeholder((N, N if M is None else M), np.dtype(dtype))

    @staticmethod
    def indices(dimensions, dtype=int, sparse=False):
        dims = tuple(dimensions)
        if sparse:
            return tuple(placeholder(tuple(n if i == j else 1 for j, n in enumerate(dims)),
                                     np.dtype(dtype)) for i in range(len(dims)))
        return placeholder((len(dims),) + dims, np.dtype(dtype))

    @staticmethod
    def asarray(a, dtype=None, order=None, **kwargs):
        if isinstance(a, MetaArray):
            return a if dtype is None else a.astype(dtype, copy=False)
        return as_meta(np.asarray(a, dtype=dtype))

    asanyarray = asarray

    @staticmethod
    def ascontiguousarray(a, dtype=None, **kwargs):
        a = MetaNamespace.asarray(a, dtype)
        if "_lay" in a.__dict__ and a.size:  # not contiguous: a contiguous copy
            return placeholder(a.shape, a.dtype)
        return a

    @staticmethod
    def asfortranarray(a, dtype=None, **kwargs):
        a = MetaNamespace.asarray(a, dtype)
        return _copy_of(a, a.dtype, "F")

    @staticmethod
    def array(a, dtype=None, copy=True, order="K", **kwargs):
        if isinstance(a, MetaArray):
            if not copy and (dtype is None or np.dtype(dtype) == a.dtype) and (
                    order in ("K", "A") or "_lay" not in a.__dict__):
                return a
            return _copy_of(a, a.dtype if dtype is None else dtype, order)
        return as_meta(np.array(a, dtype=dtype))

    @staticmethod
    def from_dlpack(x, **kwargs):
        return to_meta(x)

    def __getattr__(self, name):
        return getattr(np, name)

    # -- the kernel adapter (NOTE [ Meta device ]) --------------------------------------------

    @staticmethod
    def __ember_kernel__(op, kernel):
        """The callable ``Op.resolve`` installs for ``op`` on meta arrays: ``kernel`` (the op's
        meta kernel, or its generic kernel bound to this namespace) with its results made
        placeholders and reads of values reported as the op lacking a meta kernel."""
        if kernel is None:
            return None
        name = op.name
        finish = finish_layouts if has_layout_rule(name) else None

        def meta_kernel(*arrays, **params):
            try:
                r = kernel(*arrays, **params)
                if type(r) is not MetaArray or any(_real_strides(r)):
                    r = as_meta(r)
                return r if finish is None else finish(name, params, arrays, r)
            except MetaValueError as e:
                raise NotImplementedError(
                    f"ember: the op '{name}' has no kernel for device type 'meta': its generic "
                    f"kernel reads tensor values, which meta tensors do not have ({e}); "
                    f"register one with ember.library.impl('{name}', 'meta')") from None
            except DataDependentOutputError:
                raise DataDependentOutputError(
                    f"ember: the op '{name}' cannot run on device type 'meta': the shape of its "
                    "result depends on the input's values, which meta tensors do not have"
                ) from None

        meta_kernel.__name__ = f"{name}_meta"
        return meta_kernel


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, MetaArray) else x


# ------------------------------------------------------------------------------------------------
# registration


_device = None


def _device_of(a):
    return _device


def register():
    """Register the meta backend with ember.library (once; ``import ember`` does it).

    Returns:
        None.

    Example::

        >>> register()  # a second call does nothing
        >>> ember.empty(2, device="meta").is_meta
        True
    """
    global _device
    from .. import _dispatch, library
    from .._core.device import device

    if "meta" in _dispatch.backends_by_name:
        return
    library.register_backend("meta", MetaNamespace(), MetaArray, to_meta,
                             device_of=_device_of)
    _device = device("meta")
    from . import _meta_kernels  # noqa: F401  (per-op kernels through library.impl)

