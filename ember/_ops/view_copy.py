"""The functional forms of views: ``*_scatter`` (write ``src`` into a copy of ``input`` where
a view would see it) and ``*_copy`` (the view, as a fresh contiguous tensor).

NOTE [ View scatters ]
``select_scatter(input, src, dim, index)`` is ``out = input.clone(); out.select(dim, index)
.copy_(src)`` as one out-of-place op, and likewise for slice, diagonal and as_strided. The
four share one kernel, keyed by the view: copy ``input`` (keeping its layout, as ``clone``
does), take the view of the copy with the view's own NumPy code, assign ``src`` (cast to
``input``'s dtype). Both inputs enter linearly, so the derivatives are two more of the same
ops: ``input`` gets ``grad`` with the view's elements zeroed (the scatter of zeros), ``src``
gets the view of ``grad``. ``as_strided`` positions are storage positions, so that op records
the copy's layout (``perm``) and every application -- forward, and backward on a gradient of
any layout -- lays its operand out the same way first.

The ``*_copy`` forms compose the view op with a contiguous clone, so their gradients are the
view's.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _dispatch
from .._core import layout as _layout
from .._core.checks import as_shape, wrap_dim
from .._core.tensor import Tensor
from ._registry import Op, public
from .shape import _check_tensor, _diagonal_kernel, _index_arg, _restride, _storage_elements

_apply = _dispatch.apply

# ------------------------------------------------------------------------------------------------
# the view each scatter writes through, on arrays (``a`` is the fresh copy)


def _select_view(xp, a, *, dim, index):
    return a[(slice(None),) * dim + (index, Ellipsis)]


def _slice_view(xp, a, *, dim, start, end, step):
    return a[(slice(None),) * dim + (slice(start, end, step),)]


def _diagonal_view(xp, a, *, offset, dim1, dim2):
    return _diagonal_kernel(xp, a, offset=offset, dim1=dim1, dim2=dim2)


def _as_strided_view(xp, a, *, size, stride, offset, perm):
    flat = _storage_elements(xp, a)
    return _restride(xp, flat[offset:], size, stride)


def _layout_like(xp, a, perm):
    """A fresh dense copy of ``a`` whose memory order is ``perm`` (outermost first)."""
    inv = np.argsort(perm)
    return xp.ascontiguousarray(a.transpose(perm)).transpose(tuple(inv))


_VIEWS = {"select": _select_view, "slice": _slice_view, "diagonal": _diagonal_view,
          "as_strided": _as_strided_view}


def _scatter_kernel(view):
    fn = _VIEWS[view]

    def kernel(xp, a, src, **params):
        perm = params.get("perm")
        out = _layout_like(xp, a, perm) if perm is not None else a.copy(order="K")
        fn(xp, out, **params)[...] = src.real if (
            src.dtype.kind == "c" and out.dtype.kind != "c") else src
        return out

    return kernel


def _take(view, g, params):
    """The view of ``g`` that ``src`` was written through (in ember ops: differentiable)."""
    if view == "select":
        return g.select(params["dim"], params["index"])
    if view == "slice":
        ix = (slice(None),) * params["dim"] + (
            slice(params["start"], params["end"], params["step"]),)
        return g[ix]
    if view == "diagonal":
        return g.diagonal(params["offset"], params["dim1"], params["dim2"])
    perm = params["perm"]
    inv = tuple(int(i) for i in np.argsort(perm))
    laid = g.permute(perm).clone(memory_format=_layout.contiguous_format).permute(inv)
    return laid.as_strided(params["size"], params["stride"], params["offset"])


def _make_scatter_op(view):
    op = Op(view + "_scatter", _scatter_kernel(view), linear=True)

    @op.defvjp
    def vjp(g, _a, _src, *, needs_input_grad, **params):
        g_src = _take(view, g, params)
        g_a = None
        if needs_input_grad[0]:
            g_a = _apply(op, (g, g_src.new_zeros(g_src.shape)), params)
        return g_a, g_src if needs_input_grad[1] else None

    return op


scatter_ops = {v: _make_scatter_op(v) for v in _VIEWS}


def _check_src(op_name, input, src, view_shape):
    _check_tensor(input, op_name)
    _check_tensor(src, op_name, "src")
    if tuple(src._data.shape) != tuple(view_shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src._data.shape)}, slice size = {list(view_shape)}")


def _scatter(view, input, src, params):
    # the view's shape, from the view kernel on a zero-stride stand-in of input (no copy)
    probe = np.broadcast_to(np.zeros((), np.int8), input._data.shape)
    if view == "as_strided":
        shape = params["size"]
    else:
        shape = _VIEWS[view](np, probe, **params).shape
    _check_src(view + "_scatter", input, src, shape)
    if view in ("select", "slice"):  # no complex derivatives in PyTorch
        from .nn_checks import no_complex_autograd

        no_complex_autograd(view + "_scatter", input.dtype, input, src)
    return _apply(scatter_ops[view], (input, src), params)


@public
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``src`` written into the slice ``input.select(dim, index)``.

    Args:
        input (Tensor): the tensor to copy.
        src (Tensor): the values, shaped as the slice (``input``'s shape without ``dim``).
        dim (int): the dimension to select along.
        index (int): the index selected (negative counts from the end).

    Returns:
        Tensor: ``input``'s shape and dtype. Differentiable in both ``input`` and ``src``.

    Example::

        >>> ember.select_scatter(ember.zeros(2, 2), ember.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    _check_tensor(input, "select_scatter")
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape), "select")
    i = _index_arg(index, "select_scatter", "index")
    n = shape[d]
    if i < -n or i >= n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} "
                         f"at dimension {d}")
    return _scatter("select", input, src, {"dim": d, "index": i + n if i < 0 else i})


@public
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written into ``input[..., start:end:step, ...]`` (the
    slice taken along ``dim``).

    Args:
        input (Tensor): the tensor to copy.
        src (Tensor): the values, shaped as the slice.
        dim (int): the dimension to slice. Default: 0.
        start (int, optional): first index (clamped as Python slices are). Default: 0.
        end (int, optional): stop index. Default: the dimension's size.
        step (int): a positive step. Default: 1.

    Returns:
        Tensor: ``input``'s shape and dtype. Differentiable in both ``input`` and ``src``.

    Example::

        >>> ember.slice_scatter(ember.zeros(4), ember.ones(2), start=2)
        tensor([0., 0., 1., 1.])
    """
    _check_tensor(input, "slice_scatter")
    shape = input._data.shape
    d = wrap_dim(dim, max(len(shape), 1), "slice_scatter")
    step = 1 if step is None else _index_arg(step, "slice_scatter", "step")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    n = shape[d] if shape else 1
    start, end, _ = slice(None if start is None else _index_arg(start, "slice_scatter", "start"),
                          None if end is None else _index_arg(end, "slice_scatter", "end"),
                          step).indices(n)
    end = max(end, start)
    return _scatter("slice", input, src, {"dim": d, "start": start, "end": end, "step": step})


@public
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written onto the diagonal
    ``input.diagonal(offset, dim1, dim2)``.

    Args:
        input (Tensor): the tensor to copy (at least 2-D).
        src (Tensor): the values, shaped as that diagonal (the diagonal is its last dim).
        offset (int): 0 is the main diagonal, > 0 above it, < 0 below. Default: 0.
        dim1, dim2 (int): the two dimensions the diagonal runs through. Default: 0, 1.

    Returns:
        Tensor: ``input``'s shape and dtype. Differentiable in both ``input`` and ``src``.

    Example::

        >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_tensor(input, "diagonal_scatter")
    nd = input._data.ndim
    d1, d2 = wrap_dim(dim1, nd, "diagonal"), wrap_dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _scatter("diagonal", input, src,
                    {"offset": operator.index(offset), "dim1": d1, "dim2": d2})


@public
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset=None) -> Tensor:
    """A copy of ``input`` with ``src`` written through ``as_strided(size, stride,
    storage_offset)`` of that copy (positions count in the copy's storage, which is laid out
    like ``input``'s, starting at 0).

    Args:
        input (Tensor): the tensor to copy.
        src (Tensor): the values, of shape ``size``.
        size (tuple of int): the strided view's shape.
        stride (tuple of int): its strides, in elements.
        storage_offset (int, optional): its first element's position. Default: 0.

    Returns:
        Tensor: ``input``'s shape, strides and dtype. Differentiable in both inputs.

    Example::

        >>> ember.as_strided_scatter(ember.zeros(2, 2), ember.ones(2), (2,), (3,))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_tensor(input, "as_strided_scatter")
    size = as_shape((size,), "as_strided_scatter")
    stride = as_shape((stride,), "as_strided_scatter", allow_negative=True)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(stride)}")
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    a = input._data
    need = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if need > a.size:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {a.itemsize} requiring a storage size of {need * a.itemsize} are "
            f"out of bounds for storage of size {a.size * a.itemsize}")
    perm = input.dim_order()
    if not input.permute(perm).is_contiguous():
        perm = tuple(range(a.ndim))  # not dense: clone makes it contiguous
    return _scatter("as_strided", input, src, {"size": size, "stride": stride,
                                               "offset": offset, "perm": tuple(perm)})


# ------------------------------------------------------------------------------------------------
# *_copy: the view as a fresh contiguous tensor


def _copy_of(r, out, name):
    from .conversion import clone

    if isinstance(r, tuple):
        r = tuple(clone(t, memory_format=_layout.contiguous_format) for t in r)
        if out is not None:
            for o, t in zip(out, r):
                _dispatch.write_out(name, o, t)
            return None
        return r
    r = clone(r, memory_format=_layout.contiguous_format)
    return r if out is None else _dispatch.write_out(name, out, r)


#: copies PyTorch gives no complex derivative (it refuses to record them for complex results)
_NO_COMPLEX_GRAD = frozenset({"select_copy", "slice_copy", "view_as_complex_copy"})


def _copy_form(name, view, params_doc, example, signature_doc):
    """Build ``ember.<name>``: ``view(input, ...)`` copied to fresh contiguous memory."""

    def fn(input, *args, out=None, **kwargs):
        _check_tensor(input, name)
        v = view(input, *args, **kwargs)
        if name in _NO_COMPLEX_GRAD:
            from .nn_checks import no_complex_autograd

            no_complex_autograd(name, v.dtype, input)
        return _copy_of(v, out, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"{signature_doc}\n\nThe view ``{name[:-5]}`` of ``input``, as a new contiguous "
        f"tensor: a copy, never a view.\n\n"
        f"Args:\n    input (Tensor): the tensor to view.\n{params_doc}"
        f"    out (Tensor, optional): the output tensor.\n\n"
        f"Returns:\n    Tensor (a tuple of them for the split forms); differentiable as the "
        f"view is.\n\nExample::\n\n{example}\n")
    return public(fn, method=False)


def _t(input):
    return input.t()


def _view(input, *shape, size=None, dtype=None):
    from .._core import dtype as _dt

    given = list(shape) + [v for v in (size, dtype) if v is not None]
    if len(given) != 1 or isinstance(given[0], (int, np.integer)):
        # one size sequence or one dtype, as PyTorch's two overloads
        raise TypeError(f"view_copy(): expected (Tensor input, tuple of ints size) or (Tensor "
                        f"input, dtype dtype), got {len(given)} arguments after input")
    (arg,) = given
    if isinstance(arg, _dt.dtype):
        return input.view(arg)
    # a copy need not be a view: PyTorch's view_copy takes layouts view refuses (reshape's
    # rule), with view's size checks
    return input.reshape(arg)


_COPIES = [
    # name, view, extra args doc, example
    ("alias_copy", lambda x: x.view(x.shape), "",
     "    >>> ember.alias_copy(ember.ones(2))\n    tensor([1., 1.])"),
    ("as_strided_copy", lambda x, size, stride, storage_offset=None: x.as_strided(
        size, stride, storage_offset),
     "    size, stride (tuple of int), storage_offset (int, optional): as :func:`as_strided`.\n",
     "    >>> ember.as_strided_copy(ember.arange(4.), (2,), (2,))\n    tensor([0., 2.])"),
    ("detach_copy", lambda x: x.detach(), "",
     "    >>> ember.detach_copy(ember.ones(2, requires_grad=True))\n    tensor([1., 1.])"),
    ("diagonal_copy", lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2),
     "    offset, dim1, dim2 (int): as :func:`diagonal`.\n",
     "    >>> ember.diagonal_copy(ember.eye(2))\n    tensor([1., 1.])"),
    ("expand_copy", lambda x, size, *, implicit=False: x.expand(size),
     "    size (tuple of int): as :meth:`Tensor.expand`.\n",
     "    >>> ember.expand_copy(ember.ones(2), (2, 2)).is_contiguous()\n    True"),
    ("permute_copy", lambda x, dims: x.permute(dims),
     "    dims (tuple of int): as :func:`permute`.\n",
     "    >>> ember.permute_copy(ember.ones(2, 3), (1, 0)).shape\n    ember.Size([3, 2])"),
    ("select_copy", lambda x, dim, index: x.select(dim, index),
     "    dim, index (int): as :func:`select`.\n",
     "    >>> ember.select_copy(ember.eye(2), 0, 1)\n    tensor([0., 1.])"),
    ("slice_copy", lambda x, dim=0, start=None, end=None, step=1: x[
        (slice(None),) * wrap_dim(dim, max(x.dim(), 1), "slice_copy") + (slice(start, end,
                                                                                  step),)],
     "    dim (int), start, end (int, optional), step (int): the slice, as ``x[start:end:step]``"
     " along ``dim``.\n",
     "    >>> ember.slice_copy(ember.arange(4.), 0, 1, 3)\n    tensor([1., 2.])"),
    ("split_copy", lambda x, split_size, dim=0: x.split(split_size, dim),
     "    split_size (int or list of int), dim (int): as :func:`split`.\n",
     "    >>> ember.split_copy(ember.arange(3.), 2)\n    (tensor([0., 1.]), tensor([2.]))"),
    ("split_with_sizes_copy", lambda x, split_sizes, dim=0: x.split_with_sizes(split_sizes,
                                                                               dim),
     "    split_sizes (list of int), dim (int): as :func:`split_with_sizes`.\n",
     "    >>> ember.split_with_sizes_copy(ember.arange(3.), [1, 2])\n"
     "    (tensor([0.]), tensor([1., 2.]))"),
    ("squeeze_copy", lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim),
     "    dim (int or tuple of int, optional): as :func:`squeeze`.\n",
     "    >>> ember.squeeze_copy(ember.ones(1, 2)).shape\n    ember.Size([2])"),
    ("t_copy", _t, "",
     "    >>> ember.t_copy(ember.ones(2, 3)).shape\n    ember.Size([3, 2])"),
    ("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1),
     "    dim0, dim1 (int): as :func:`transpose`.\n",
     "    >>> ember.transpose_copy(ember.ones(2, 3), 0, 1).stride()\n    (2, 1)"),
    ("unbind_copy", lambda x, dim=0: x.unbind(dim),
     "    dim (int): as :func:`unbind`.\n",
     "    >>> ember.unbind_copy(ember.eye(2))\n    (tensor([1., 0.]), tensor([0., 1.]))"),
    ("unfold_copy", lambda x, dimension, size, step: x.unfold(dimension, size, step),
     "    dimension, size, step (int): as :meth:`Tensor.unfold`.\n",
     "    >>> ember.unfold_copy(ember.arange(3.), 0, 2, 1)\n    tensor([[0., 1.],\n"
     "            [1., 2.]])"),
    ("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim),
     "    dim (int): as :func:`unsqueeze`.\n",
     "    >>> ember.unsqueeze_copy(ember.ones(2), 0).shape\n    ember.Size([1, 2])"),
    ("view_copy", _view,
     "    size (tuple of int) or dtype: as :meth:`Tensor.view`.\n",
     "    >>> ember.view_copy(ember.arange(4.), (2, 2)).shape\n    ember.Size([2, 2])"),
    ("view_as_real_copy", lambda x: _fn("view_as_real")(x), "",
     "    >>> ember.view_as_real_copy(ember.tensor([1+2j]))\n    tensor([[1., 2.]])"),
    ("view_as_complex_copy", lambda x: _fn("view_as_complex")(x), "",
     "    >>> ember.view_as_complex_copy(ember.tensor([[1., 2.]]))\n    tensor([1.+2.j])\n\n"
     "Differences from PyTorch:\n    An ``input`` that requires grad: PyTorch raises "
     "RuntimeError (no automatic differentiation for this copy), ember differentiates it."),
]


def _fn(name):
    from ._registry import functions

    return functions[name]


for _name, _view_fn, _pdoc, _ex in _COPIES:
    _copy_form(_name, _view_fn, _pdoc, _ex, f"{_name}(input, ...) -> Tensor")


# the sparse-only views: their copies exist, and refuse a strided tensor as PyTorch's do
_SPARSE_VIEWS = {"values": "sparse", "indices": "sparse coordinate",
                 "crow_indices": "sparse row compressed", "col_indices": "sparse row compressed",
                 "ccol_indices": "sparse column compressed",
                 "row_indices": "sparse column compressed"}


def _sparse_copy(view, kind):
    def fn(input, *, out=None):
        _check_tensor(input, view + "_copy")
        raise RuntimeError(f"{view} expected {kind} tensor layout but got Strided")

    fn.__name__ = fn.__qualname__ = view + "_copy"
    fn.__doc__ = (f"The copy of a sparse tensor's ``{view}``: ember's tensors are strided, so "
                  f"this raises RuntimeError, as PyTorch does for a strided tensor.\n\n"
                  f"Args:\n    input (Tensor): a sparse tensor.\n\nReturns:\n    Tensor\n\n"
                  f"Example::\n\n    >>> ember.{view}_copy(ember.ones(2))  # doctest: +SKIP\n")
    return public(fn, method=False)


for _view_name, _kind in _SPARSE_VIEWS.items():
    _sparse_copy(_view_name, _kind)


# NOTE [ Sparse accessors on strided tensors ]
# ember's tensors are all strided. PyTorch's sparse accessors are defined on strided tensors
# too -- they raise, naming the layout they need (``sparse_dim``/``dense_dim`` answer 0 and
# ndim) -- so a program that probes a tensor's layout this way runs as under PyTorch.


def _sparse_accessor(name, kind):
    def fn(self):
        raise RuntimeError(f"{name} expected {kind} tensor layout but got Strided")

    fn.__name__ = name
    fn.__qualname__ = "Tensor." + name
    fn.__doc__ = (f"The ``{name}`` of a sparse tensor: ember's tensors are strided, so this "
                  f"raises RuntimeError, as PyTorch does for a strided tensor "
                  f"(NOTE [ Sparse accessors on strided tensors ]).\n\nExample::\n\n"
                  f"    >>> ember.ones(2).{name}()  # doctest: +SKIP\n")
    setattr(Tensor, name, fn)


for _name, _kind in dict(_SPARSE_VIEWS, coalesce="sparse coordinate",
                         is_coalesced="sparse coordinate").items():
    _sparse_accessor(_name, _kind)


def _sparse_dim(self) -> int:
    """The number of sparse dims: 0 for a strided tensor.

    Example::

        >>> ember.ones(2, 3).sparse_dim()
        0
    """
    return 0


def _dense_dim(self) -> int:
    """The number of dense dims: all of them (``ndim``) for a strided tensor.

    Example::

        >>> ember.ones(2, 3).dense_dim()
        2
    """
    return self._data.ndim


Tensor.sparse_dim, Tensor.dense_dim = _sparse_dim, _dense_dim


# ------------------------------------------------------------------------------------------------
# detach as a function


@public(method=False, name="detach")
def _detach_function(input: Tensor) -> Tensor:
    """``input`` cut out of the autograd graph: a view sharing its data that requires no grad.

    Args:
        input (Tensor): the tensor.

    Returns:
        Tensor

    Example::

        >>> ember.detach(ember.ones(2, requires_grad=True)).requires_grad
        False
    """
    _check_tensor(input, "detach")
    return input.detach()


@public(method=False, name="detach_")
def _detach_inplace_function(input: Tensor) -> Tensor:
    """Cut ``input`` itself out of the autograd graph (``input.detach_()``).

    Args:
        input (Tensor): the tensor.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = ember.ones(2, requires_grad=True) * 2
        >>> ember.detach_(x).grad_fn is None
        True
    """
    _check_tensor(input, "detach_")
    return input.detach_()
