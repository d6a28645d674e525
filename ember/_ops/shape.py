"""Shape and view ops: view, reshape, squeeze, permute, expand, narrow, diagonal, as_strided...

Every op here except the reshape copy and the backward helpers returns a *view*: a NumPy
view of the input's buffer, wrapped by the dispatcher so that it shares its base's storage
and version counter (``view_of=0``). The ops that copy (flip, roll, repeat, cat, ...) and the
split family live in ``join.py``.

This file is over 1,000 lines because every view op shares its stride helpers
(``_restride``, ``_view_strides``) and its backward machinery (``_view_scatter``); a natural
split, if it grows further, is the storage-level views (diagonal, unfold, as_strided,
view_as_real/complex, resize_) into a module of their own.

NOTE [ View strides ]
PyTorch fixes the strides of every view, including those of size-1 and zero-size dims that
NumPy sets differently (NumPy gives ``a[:, None]`` a 0 stride, PyTorch
``size * stride`` of the next dim). Strides are observable (``stride()``, ``is_contiguous``
with memory formats, and the strides of later views), so each op computes PyTorch's strides
and builds the NumPy view with the cheapest call that yields them; where NumPy's own view
(``reshape``) disagrees, the view is rebuilt with ``as_strided`` (``_restride``). NumPy's
negative strides never reach a tensor.

NOTE [ Views of views and backward ]
A view's backward scatters the gradient into zeros of the input's shape (``_view_scatter``:
run the same view kernel on the zeros and assign). It is itself differentiable: its vjp is
the forward view op, so create_graph works. Ops whose windows may overlap (``as_strided``,
``unfold``) accumulate instead of assigning, with their own pair of backward ops.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import as_shape, wrap_dim, wrap_dims
from .._core.size import Size
from .._core.storage import storage_of
from .._core.tensor import Tensor
from . import _node_names
from ._memory_format import is_canonical as _is_canonical
from ._registry import (Op, method, observing_profiler, ops, profiler_session, public,
                        recorded_as, shown_as)

_apply = _dispatch.apply
_int_types = (int, np.integer)


# ------------------------------------------------------------------------------------------------
# helpers


def _contiguous_strides(shape):
    """Row-major strides in elements of an array of ``shape``."""
    out, n = [], 1
    for k in reversed(shape):
        out.append(n)
        n *= max(k, 1)
    return tuple(reversed(out))


def _strides(a):
    """Strides of array ``a`` in elements."""
    n = a.itemsize
    return tuple([s // n for s in a.strides])


class _StridedInterface:
    """What NumPy's ``as_strided`` builds its view from, minus its overhead: an object with
    an array interface whose ``base`` is the array viewed (storage.py looks through it)."""

    __slots__ = ("__array_interface__", "base")


def _restride(xp, a, shape, strides):
    """A view of ``a`` starting at its first element with ``shape`` and element ``strides``.

    The caller guarantees every element lies inside ``a``'s buffer.
    """
    n = a.itemsize
    if xp is not np:
        return xp.lib.stride_tricks.as_strided(a, tuple(shape), tuple(s * n for s in strides))
    iface = a.__array_interface__  # a fresh dict
    iface["shape"] = tuple(shape)
    iface["strides"] = tuple(s * n for s in strides)
    holder = _StridedInterface()
    holder.__array_interface__ = iface
    holder.base = a
    r = np.asarray(holder)
    if r.dtype != a.dtype:  # dtypes outside NumPy's interface protocol (bfloat16)
        r = r.view(a.dtype)
    return r


def _contiguous_strides(shape):
    """PyTorch's contiguous strides (a zero-size dim counts as 1 for the dims before it)."""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * max(shape[d + 1], 1)
    return tuple(strides)


def _check_tensor(x, op_name, arg="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op_name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


def _int_list_arg(value, op_name, arg, pos=None):
    """PyTorch's check of an ``int[]`` argument given as one value: a sequence, never a bare
    number, None or Tensor. Only a method's positional sizes may be spread out
    (``x.reshape(2, 3)``); ``torch.reshape(x, 6)`` and ``x.reshape(shape=6)`` are TypeErrors."""
    if isinstance(value, Tensor) or not hasattr(value, "__iter__"):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{op_name}(): argument '{arg}'{where} must be tuple of ints, not "
                        f"{type(value).__name__}")


def _shape_args(args, kw, op_name, arg="size"):
    """``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))`` -> (2, 3), negatives kept."""
    if kw is None and args:
        # fast path: plain Python ints, given directly or as one tuple / Size
        first = args[0]
        if type(first) is not int and len(args) == 1 and isinstance(first, tuple):
            args = first
        for x in args:
            if type(x) is not int:
                break
        else:
            return tuple(args)
        args = (first,) if args is first else args
    if kw is not None:
        if args:
            raise TypeError(f"{op_name}() got multiple values for argument '{arg}'")
        # a keyword never takes the varargs spelling: ``x.reshape(shape=6)`` is a TypeError
        _int_list_arg(kw, op_name, arg)
        args = (kw,)
    if not args:
        raise TypeError(f'{op_name}() missing 1 required positional arguments: "{arg}"')
    if len(args) == 1 and not hasattr(args[0], "__index__") and not hasattr(args[0], "__iter__"):
        raise TypeError(
            f"{op_name}(): argument '{arg}' must be tuple of ints, not {type(args[0]).__name__}")
    return as_shape(args, op_name, allow_negative=True)


def _infer_size(shape, numel, op_name):
    """Resolve one ``-1`` in ``shape`` for a tensor of ``numel`` elements (PyTorch's errors)."""
    if not shape:
        if numel == 1:
            return shape
    elif -1 not in shape:
        if math.prod(shape) == numel and min(shape) >= 0:
            return shape
    elif min(shape) == -1 and shape.count(-1) == 1:
        known = -math.prod(shape)
        if known > 0 and numel % known == 0:
            i = shape.index(-1)
            return shape[:i] + (numel // known,) + shape[i + 1:]
    infer = -1
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer >= 0:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        else:
            known *= s
    if infer >= 0:
        if known == 0:
            if numel == 0:
                raise RuntimeError(
                    f"cannot reshape tensor of 0 elements into shape {list(shape)} because "
                    "the unspecified dimension size -1 can be any value and is ambiguous")
        elif numel % known == 0:
            shape = shape[:infer] + (numel // known,) + shape[infer + 1:]
            return shape
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _view_strides(shape, strides, new_shape):
    """PyTorch's strides for viewing (shape, strides) as ``new_shape``; None if impossible.

    The old dims are grouped into chunks that are contiguous with one another; a view is
    possible when the new dims can be grouped into chunks of the same element counts.
    """
    if not shape:
        return (1,) * len(new_shape)
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        if tuple(shape) == tuple(new_shape):
            return tuple(strides)
        return _contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_stride):
            # end of a contiguous chunk of the old dims: the new dims must fill it exactly
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_stride = strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


def _scatter_vjp(op_name):
    """The vjp of a non-overlapping view op: scatter ``g`` into zeros of the input's shape."""

    def vjp(g, _a, **params):
        return _apply(view_scatter_op, (g,), {"in_shape": params["in_shape"], "view": op_name,
                                              "vparams": params})

    return vjp


# ------------------------------------------------------------------------------------------------
# backward helpers (see NOTE [ Views of views and backward ])


def _view_scatter_kernel(xp, g, *, in_shape, view, vparams):
    z = xp.zeros(in_shape, g.dtype)
    ops[view].kernel(xp, z, **vparams)[...] = g
    return z


def _view_scatter_vjp(gg, _g, *, in_shape, view, vparams):
    return _apply(ops[view], (gg,), vparams)


view_scatter_op = Op("_view_scatter", _view_scatter_kernel, vjp=_view_scatter_vjp, linear=True)


def _positions(xp, shape, strides, offset):
    """Storage position of every element of a strided layout, as an int64 array."""
    pos = xp.full(tuple(shape), offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(shape, strides)):
        ix = [1] * len(shape)
        ix[d] = n
        pos = pos + (xp.arange(n, dtype=np.int64) * s).reshape(ix)
    return pos.reshape(-1)


def _strided_map(xp, in_geometry, size, stride, offset):
    """For each element of ``as_strided(x, size, stride, offset)``, the flat index of the
    element of ``x`` at the same storage position (-1 where ``x`` has none there)."""
    in_shape, in_strides, in_offset = in_geometry
    xpos = _positions(xp, in_shape, in_strides, in_offset)
    opos = _positions(xp, size, stride, offset)
    top = int(max(int(xpos.max()) if xpos.size else 0, int(opos.max()) if opos.size else 0))
    lookup = xp.full(top + 1, -1, dtype=np.int64)
    lookup[xpos] = xp.arange(xpos.size, dtype=np.int64)
    return lookup[opos]


def _strided_scatter_kernel(xp, g, *, in_geometry, size, stride, offset):
    idx = _strided_map(xp, in_geometry, size, stride, offset)
    n = 1
    for s in in_geometry[0]:
        n *= s
    keep = idx >= 0
    idx = idx[keep]
    flat = g.reshape(-1)[keep]
    if flat.dtype.kind == "c":
        out = (xp.bincount(idx, weights=flat.real, minlength=n)
               + 1j * xp.bincount(idx, weights=flat.imag, minlength=n))
    else:
        out = xp.bincount(idx, weights=flat.astype(np.float64), minlength=n)
    return out.astype(g.dtype).reshape(in_geometry[0])


def _strided_gather_kernel(xp, gg, *, in_geometry, size, stride, offset):
    idx = _strided_map(xp, in_geometry, size, stride, offset)
    flat = xp.concatenate([gg.reshape(-1), xp.zeros(1, gg.dtype)])
    return flat[idx].reshape(tuple(size))  # index -1 reads the appended zero


strided_scatter_op = Op("_as_strided_scatter", _strided_scatter_kernel, linear=True)
strided_gather_op = Op("_as_strided_gather", _strided_gather_kernel, linear=True)


@strided_scatter_op.defvjp
def _strided_scatter_vjp(gg, _g, **params):
    return _apply(strided_gather_op, (gg,), params)


@strided_gather_op.defvjp
def _strided_gather_vjp(gg, _g, **params):
    return _apply(strided_scatter_op, (gg,), params)


# ------------------------------------------------------------------------------------------------
# view / reshape / flatten / unflatten / ravel


def _view_kernel(xp, a, *, shape, strides, in_shape=None):
    if strides is None:  # canonical contiguous input, see _view_or_none
        return a.reshape(shape)
    if a.flags.c_contiguous:
        r = a.reshape(shape)
        if r.strides == tuple(s * a.itemsize for s in strides):
            return r
    # the recorded strides fit the layout seen when the view was taken; a replay (autograd's
    # view chains: CopySlices after an in-place write through a reshape of a permuted tensor)
    # may bring another layout, so the strides are worked out again from ``a`` itself
    actual = _view_strides(a.shape, _strides(a), shape)
    if actual is None:
        return xp.ascontiguousarray(a).reshape(shape)
    return _restride(xp, a, shape, actual)


def _reshape_vjp(g, _a, *, in_shape, **_):
    return g.reshape(in_shape)


view_op = Op("view", _view_kernel, vjp=_reshape_vjp, view_of=0, linear=True)


def _reshape_copy_kernel(xp, a, *, shape, in_shape=None):
    return xp.ascontiguousarray(a).reshape(shape)


reshape_copy_op = Op("_reshape_copy", _reshape_copy_kernel, vjp=_reshape_vjp, linear=True)
reshape_copy_op.node_name = "UnsafeViewBackward0"  # PyTorch's name for reshape's copy


def _view_or_none(t, shape, op_name):
    """The view of ``t`` as ``shape`` (one -1 allowed), or None when strides forbid it."""
    a = t._data
    shape = _infer_size(shape, a.size, op_name)
    # (arrays whose real strides are not their layout -- the meta device's -- report
    # canonical strides when contiguous)
    if a.size and (a.flags.c_contiguous and (1 not in a.shape or _is_canonical(a)) or
                   type(a) is not np.ndarray and _is_canonical(a)):
        # canonical C strides: NumPy's reshape view has exactly PyTorch's strides
        params = {"shape": shape, "strides": None, "in_shape": a.shape}
        if _dispatch.intercept or not view_op.builtin_cpu or type(a) is not np.ndarray:
            return shape, _apply(view_op, (t,), params)
        # the hot path (NOTE [ Hot path ] in _dispatch.py): ``apply`` with its kernel inlined
        o = _dispatch._wrap_views(t, a.reshape(shape), view_op, params)
        if t._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
            _dispatch.record(view_op, (t,), params, o)
        return shape, o
    strides = _view_strides(a.shape, _strides(a), shape)
    if strides is None:
        return shape, None
    return shape, _apply(view_op, (t,), {"shape": shape, "strides": strides,
                                          "in_shape": a.shape})


# NOTE [ Plain views ]
# ``x.view(2, 5)``, ``x.view((B, -1))``: Python int sizes (one -1 at most) that fit the
# element count, of a contiguous CPU tensor with canonical strides, with no mode on, are the
# commonest views there are. ``view`` makes them itself -- the same params, wrapping and
# recording as ``_view_or_none``'s hot path -- without the frames that parse and check
# every other spelling (a list, a dtype, ``size=``, strides that need working out,
# errors), which take the general route.
_SHAPE_TUPLES = (tuple, Size)
_prod = math.prod


@method
def view(self, *shape, size=None, dtype=None):
    """A view of ``self`` with another shape (``view(2, 3)``, ``view((2, 3))``, one -1
    inferred), or with another dtype (``view(ember.int32)``), sharing its storage.

    Raises RuntimeError when the strides make the shape impossible to view; ``reshape``
    copies in that case.
    """
    if size is None and dtype is None and not _dispatch.intercept and view_op.builtin_cpu:
        # NOTE [ Plain views ]
        a = self._data
        shp = shape[0] if len(shape) == 1 and shape[0].__class__ in _SHAPE_TUPLES else shape
        for n in shp:
            if n.__class__ is not int or n < -1:
                break
        else:
            numel = a.size
            p = _prod(shp)
            if p < 0 and numel % p == 0:  # one -1 to infer (``view(-1)``: the flatten)
                if len(shp) == 1:
                    shp = (numel,)
                    p = numel
                elif shp.count(-1) == 1:
                    i = shp.index(-1)
                    shp = (*shp[:i], numel // -p, *shp[i + 1:])
                    p = numel
            if p == numel and numel and a.__class__ is np.ndarray and \
                    a.flags.c_contiguous and (1 not in a.shape or _is_canonical(a)):
                shp = tuple(shp)
                params = {"shape": shp, "strides": None, "in_shape": a.shape}
                o = _dispatch._wrap_views(self, a.reshape(shp), view_op, params)
                if self._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
                    _dispatch.record(view_op, (self,), params, o)
                return o
    if dtype is None and len(shape) == 1 and isinstance(shape[0], (_dt.dtype, type)):
        dtype = shape[0]
    if dtype is not None:
        return _view_dtype(self, dtype)
    shape = _shape_args(shape, size, "view")
    shape, r = _view_or_none(self, shape, "view")
    if r is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return r


def _alias_kernel(xp, a):
    return a[...]


alias_op = Op("alias", _alias_kernel, vjp=lambda g, _a: g, view_of=0, linear=True)


def alias(input):
    """A new tensor viewing all of ``input`` (same shape, storage and version counter), with
    ``AliasBackward0`` as history: what ``Tensor.as_subclass`` builds on."""
    _check_tensor(input, "alias")
    return _dispatch.apply(alias_op, (input,), {})


@method
def view_as(self, other):
    """``self.view(other.size())``."""
    _check_tensor(other, "view_as", "other")
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None:   # (PyTorch's ``aten::view_as`` row around its view)
            return session.composite("aten::view_as", lambda: (self, other), view,
                                     (self, other._data.shape), {})
    return view(self, other._data.shape)


@method
def reshape(input, *shape, **kwargs):
    """``input`` with the given shape: a view when the strides allow one, else a copy."""
    _check_tensor(input, "reshape")
    shape = _shape_args(shape, kwargs.pop("shape", None), "reshape", "shape")
    if kwargs:
        raise TypeError(f"reshape() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None and not session.in_backward_node():
            # PyTorch's ``aten::reshape`` event around its view or its copy (NOTE [ Reshape
            # of a non-viewable tensor ]; the view is ``aten::_reshape_alias`` where the
            # input is not contiguous, named by the profiler)
            return session.composite("aten::reshape", lambda: (input, shape), _reshape,
                                     (input, shape), {})
    shape, r = _view_or_none(input, shape, "reshape")   # (``_reshape``, inlined: a hot op)
    if r is None:
        params = {"shape": shape, "in_shape": input._data.shape}
        if _dispatch.intercept:
            return _reshape_in_two(input, params)
        r = _apply(reshape_copy_op, (input,), params)
    elif r._grad_fn is not None and not input._data.flags.c_contiguous:
        # PyTorch views a tensor that is not contiguous with ``_reshape_alias``
        _node_names.rename(r, "ReshapeAliasBackward0")
    return r


def _reshape(input, shape):
    """``reshape`` without PyTorch's event of its own (``flatten``'s and ``unflatten``'s)."""
    shape, r = _view_or_none(input, shape, "reshape")
    if r is None:
        params = {"shape": shape, "in_shape": input._data.shape}
        if _dispatch.intercept:
            # NOTE [ Reshape of a non-viewable tensor ]
            return _reshape_in_two(input, params)
        r = _apply(reshape_copy_op, (input,), params)
    elif r._grad_fn is not None and not input._data.flags.c_contiguous:
        _node_names.rename(r, "ReshapeAliasBackward0")
    return r


# NOTE [ Reshape of a non-viewable tensor ]
# PyTorch reshapes a tensor whose strides allow no view as a contiguous ``clone`` and an
# ``_unsafe_view`` of the copy, so its graph has ``UnsafeViewBackward0`` then
# ``CloneBackward0`` and a profile lists ``aten::reshape`` > ``aten::clone`` +
# ``aten::_unsafe_view``. ember's one ``_reshape_copy`` op does both steps. While a mode
# is on (the profiler, which names ``_reshape_copy`` as ``_unsafe_view``, or a user's
# dispatch mode) it runs as the two ops, the second on the contiguous copy (copying
# nothing), so what the mode sees and the profiled graph are PyTorch's. Without modes the
# one op runs: the two cost ~20% more on a small reshape's forward and backward (thread
# CPU, in-process, session 13), so the unprofiled graph keeps one node
# (``UnsafeViewBackward0``, whose next node is the input's). The values are the same bits
# either way.


def _reshape_in_two(input, params):
    from .conversion import clone_op

    return _apply(reshape_copy_op, (_apply(clone_op, (input,), {"order": "C"}),), params)


@public(name="reshape", method=False)
def _reshape_function(input, shape):
    """``input`` with the given shape (one sequence of ints, -1 inferred): a view when the
    strides allow one, else a copy."""
    _int_list_arg(shape, "reshape", "shape", 2)
    return reshape(input, shape)


@method
def reshape_as(self, other):
    """``self.reshape(other.size())``."""
    _check_tensor(other, "reshape_as", "other")
    return reshape(self, other._data.shape)


@public
@recorded_as("aten::flatten")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim`` .. ``end_dim`` into one (a view when possible)."""
    _check_tensor(input, "flatten")
    shape = input._data.shape
    if not shape:
        return reshape(input, (1,))
    s = wrap_dim(start_dim, len(shape), "flatten")
    e = wrap_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return _alias(input)
    n = 1
    for x in shape[s:e + 1]:
        n *= x
    return _reshape(input, shape[:s] + (n,) + shape[e + 1:])   # (no reshape event: PyTorch's)


@public
@recorded_as("aten::unflatten", ("input", "dim", "sizes"))
def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one -1 may be inferred)."""
    _check_tensor(input, "unflatten")
    shape = input._data.shape
    d = wrap_dim(dim, len(shape), "unflatten")
    sizes = as_shape((sizes,), "unflatten", allow_negative=True)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    known = 1
    for x in sizes:
        if x != -1:
            known *= x
    n = shape[d] if shape else 1
    if (-1 in sizes and (known == 0 or n % known)) or (-1 not in sizes and known != n):
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
            f"{dim} ({n}) in the input tensor")
    # the -1 is the dim's size over the others' product (an empty tensor's other dims
    # leave a reshape's inference ambiguous)
    sizes = tuple(n // known if x == -1 else x for x in sizes)
    return _reshape(input, shape[:d] + sizes + shape[d + 1:])   # (as flatten's)


@public
def ravel(input):
    """The elements of ``input`` as a contiguous 1-D tensor (a view when already contiguous)."""
    _check_tensor(input, "ravel")
    return view(input.contiguous(), -1)


# ------------------------------------------------------------------------------------------------
# view(dtype) and view_as_real / view_as_complex


def _view_dtype_kernel(xp, a, *, dtype):
    return a.view(dtype)


view_dtype_op = Op("view_dtype", _view_dtype_kernel, view_of=0, differentiable=False)


def _view_dtype(self, dtype):
    d = _dt.lookup(dtype)
    a = self._data
    old = _dt.from_np[a.dtype]
    if d.itemsize != old.itemsize:
        what = f"to view {old.scalar_name} as {d.scalar_name} (different element sizes)"
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        stride_error = RuntimeError(
            f"self.stride(-1) must be 1 {what}, but got {self.stride(-1)}")
        if d.itemsize < old.itemsize and self.stride(-1) != 1:
            raise stride_error
        if d.itemsize > old.itemsize:  # torch checks the size and offset first here
            ratio = d.itemsize // old.itemsize
            if a.shape[-1] % ratio:
                raise RuntimeError(
                    f"self.size(-1) must be divisible by {ratio} {what}, but got "
                    f"{a.shape[-1]}")
            if self.storage_offset() % ratio:
                raise RuntimeError(
                    f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                    f"{self.storage_offset()}")
            if self.stride(-1) != 1:
                raise stride_error
            for i, s in enumerate(self.stride()[:-1]):
                if s % ratio:
                    raise RuntimeError(
                        f"self.stride({i}) must be divisible by {ratio} {what}, but got {s}")
    return _apply(view_dtype_op, (self,), {"dtype": d.np})


def _view_as_real_kernel(xp, a, *, real):
    return a[..., None].view(real)


def _view_as_complex_kernel(xp, a, *, cplx):
    return a.view(cplx)[..., 0]


view_as_real_op = Op("view_as_real", _view_as_real_kernel, view_of=0, linear=True)
view_as_complex_op = Op("view_as_complex", _view_as_complex_kernel, view_of=0, linear=True)


@view_as_real_op.defvjp
def _view_as_real_vjp(g, _a, *, real):
    if g.numel() == 0:  # no values: an empty complex gradient (its strides are moot)
        return g.new_zeros(tuple(g.shape[:-1]), dtype=_dt.from_np[np.dtype(real)].to_complex())
    return view_as_complex(g.contiguous())


@view_as_complex_op.defvjp
def _view_as_complex_vjp(g, _a, *, cplx):
    return view_as_real(g)


@public(method=False)
def view_as_real(input):
    """A real view of a complex tensor: a new last dim of size 2 holds (real, imag)."""
    _check_tensor(input, "view_as_real")
    a = input._data
    if a.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    real = _dt.from_np[a.dtype].to_real().np
    return _apply(view_as_real_op, (input,), {"real": real})


@public(method=False)
def view_as_complex(input):
    """A complex view of a real tensor whose last dim (size 2, stride 1) holds (real, imag)."""
    _check_tensor(input, "view_as_complex")
    a = input._data
    d = _dt.from_np[a.dtype]
    if d not in (_dt.float32, _dt.float64):
        raise RuntimeError(
            "view_as_complex is only supported for float and double tensors, but got a tensor "
            f"of scalar type: {d.scalar_name}")
    if a.ndim == 0 or a.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    # an empty array's strides are NumPy's choice (often 0); torch's there are contiguous
    st = _strides(a) if a.size else _contiguous_strides(a.shape)
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s, n in zip(st[:-1], a.shape[:-1]) if n != 1):  # size-1 dims: any
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _apply(view_as_complex_op, (input,), {"cplx": d.to_complex().np})


# ------------------------------------------------------------------------------------------------
# squeeze / unsqueeze


def _squeeze_kernel(xp, a, *, dims, in_shape=None):
    return a.squeeze(dims) if dims else a.view()


squeeze_op = Op("squeeze", _squeeze_kernel, vjp=_reshape_vjp, view_of=0, linear=True)


def _alias(t):
    """A view of ``t`` with the same shape (PyTorch returns one, never ``t`` itself)."""
    a = t._data
    return _apply(squeeze_op, (t,), {"dims": (), "in_shape": a.shape})


@public
def squeeze(input, dim=None):
    """Remove dims of size 1: all of them, or those in ``dim`` (an int or a tuple)."""
    _check_tensor(input, "squeeze")
    shape = input._data.shape
    if dim is None:
        dims = tuple(i for i, n in enumerate(shape) if n == 1)
        return _apply(squeeze_op, (input,), {"dims": dims, "in_shape": shape})
    if _dispatch.intercept:
        session = observing_profiler()
        if session is not None:
            # PyTorch's ``squeeze.dim``/``squeeze.dims`` list the dim as given
            return session.as_one_op("aten::squeeze", lambda: (input, dim), _squeeze_dims,
                                     (input, dim), {})
    return _squeeze_dims(input, dim)


def _squeeze_dims(input, dim):
    shape = input._data.shape
    dims = wrap_dims(dim, len(shape), "squeeze")
    dims = tuple(d for d in dims if shape and shape[d] == 1)
    r = _apply(squeeze_op, (input,), {"dims": dims, "in_shape": shape})
    # torch's squeeze.dim and squeeze.dims (NOTE [ Node names ])
    _node_names.rename(r, "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2")
    return r


def _unsqueeze_kernel(xp, a, *, dim, in_shape=None):
    shape = a.shape[:dim] + (1,) + a.shape[dim:]
    r = a.reshape(shape)
    st = a.strides
    want = a.itemsize if dim >= a.ndim else a.shape[dim] * st[dim]
    if r.strides[dim] != want or r.strides[:dim] != st[:dim] or r.strides[dim + 1:] != st[dim:]:
        r = _restride(xp, a, shape, [s // a.itemsize for s in st[:dim]] + [want // a.itemsize]
                      + [s // a.itemsize for s in st[dim:]])
    return r


unsqueeze_op = Op("unsqueeze", _unsqueeze_kernel, vjp=_reshape_vjp, view_of=0, linear=True)


@public
def unsqueeze(input, dim):
    """Insert a dim of size 1 at ``dim`` (in ``[-input.dim() - 1, input.dim()]``)."""
    _check_tensor(input, "unsqueeze")
    shape = input._data.shape
    d = wrap_dim(dim, len(shape) + 1, "unsqueeze")
    return _apply(unsqueeze_op, (input,), {"dim": d, "in_shape": shape})


# ------------------------------------------------------------------------------------------------
# permute / transpose / t / movedim and the T, mT, H, mH properties


def _permute_kernel(xp, a, *, dims):
    return a.transpose(dims)


def _permute_vjp(g, _a, *, dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return g.permute(inv)


permute_op = Op("permute", _permute_kernel, vjp=_permute_vjp, view_of=0, linear=True)


@method
def permute(input, *dims, **kwargs):
    """Reorder the dims: ``permute(x, (1, 0))``, ``x.permute(1, 0)``."""
    _check_tensor(input, "permute")
    dims = _shape_args(dims, kwargs.pop("dims", None), "permute", "dims")
    ndim = input._data.ndim
    if sorted(dims) == list(range(ndim)):  # fast path: already a permutation of 0..ndim-1
        return _apply(permute_op, (input,), {"dims": dims})
    if len(dims) != ndim:
        # (PyTorch's words for a dense tensor too: its check is shared with sparse COO)
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            "length of "
            f"the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to "
            f"len(dims) = {len(dims)}")
    wrapped = tuple(wrap_dim(d, ndim, "permute") for d in dims)
    if len(set(wrapped)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _apply(permute_op, (input,), {"dims": wrapped})


@public(name="permute", method=False)
def _permute_function(input, dims):
    """Reorder the dims of ``input`` to ``dims`` (one sequence of ints): a view."""
    _int_list_arg(dims, "permute", "dims", 2)
    return permute(input, dims)


def _transpose_kernel(xp, a, *, dim0, dim1):
    return a.swapaxes(dim0, dim1) if a.ndim else a.view()


def _transpose_vjp(g, _a, *, dim0, dim1):
    return g.transpose(dim0, dim1)


transpose_op = Op("transpose", _transpose_kernel, vjp=_transpose_vjp, view_of=0, linear=True)
transpose_op.name_overload("int")


@public
def transpose(input, dim0, dim1):
    """Swap dims ``dim0`` and ``dim1`` (a view)."""
    _check_tensor(input, "transpose")
    ndim = input._data.ndim
    return _apply(transpose_op, (input,), {"dim0": wrap_dim(dim0, ndim, "transpose"),
                                           "dim1": wrap_dim(dim1, ndim, "transpose")})


@public
def swapdims(input, dim0, dim1):
    """Alias of :func:`transpose`."""
    return transpose(input, dim0, dim1)


@public
def swapaxes(input, axis0, axis1):
    """Alias of :func:`transpose` (NumPy's argument names)."""
    return transpose(input, axis0, axis1)


def _t_body(input, dim0=0, dim1=None):
    if dim1 is None:
        dim1 = max(input._data.ndim - 1, 0)
    return _apply(transpose_op, (input,), {"dim0": dim0, "dim1": dim1})


# modes see PyTorch's aten.t where ember runs its transpose op
_t_entry = shown_as("t", transpose_op, _t_body)


@public
def t(input):
    """Transpose a tensor of at most 2 dims (0-D and 1-D tensors are returned as views)."""
    _check_tensor(input, "t")
    ndim = input._data.ndim
    if ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return _node_names.rename(_t_entry(input, dim0=0, dim1=ndim - 1 if ndim else 0), "TBackward0")


def _movedim_perm(ndim, source, destination):
    src = (source,) if isinstance(source, _int_types) else tuple(source)
    dst = (destination,) if isinstance(destination, _int_types) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)")
    s = tuple(wrap_dim(d, ndim, "movedim") for d in src)
    d = tuple(wrap_dim(x, ndim, "movedim") for x in dst)
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    perm = [-1] * ndim
    for a, b in zip(s, d):
        perm[b] = a
    rest = iter(i for i in range(ndim) if i not in s)
    return tuple(p if p >= 0 else next(rest) for p in perm)


@public(alias=("moveaxis",))
def movedim(input, source, destination):
    """Move dims ``source`` (int or tuple) to positions ``destination``; the others keep
    their order."""
    _check_tensor(input, "movedim")
    ndim = input._data.ndim
    if ndim == 0:
        wrap_dim(source if isinstance(source, _int_types) else 0, 0, "movedim")
        return _alias(input)
    return permute(input, _movedim_perm(ndim, source, destination))


def _conj(t):
    return t.conj() if t._data.dtype.kind == "c" else t


@public
def adjoint(input):
    """The conjugate transpose of the last two dims."""
    _check_tensor(input, "adjoint")
    ndim = input._data.ndim
    if ndim == 1:
        raise RuntimeError(
            "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D "
            "tensor.")
    return _conj(transpose(input, -2, -1) if ndim else _alias(input))


def _property_event(name, self, fn):
    """``fn(self)``, inside PyTorch's event ``name`` for the property (``aten::mT`` around
    its ``aten::transpose``) while a profiler records."""
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None and not session.in_backward_node():
            return session.composite(name, lambda: (self,), fn, (self,), {})
    return fn(self)


def _T(self):
    ndim = self._data.ndim
    if ndim != 2:
        from .._settings import warn_at_caller

        warn_at_caller(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` "
            "to reverse the dimensions of a tensor.", UserWarning)
    return _property_event("aten::numpy_T", self, _reversed_dims)


def _reversed_dims(self):
    return _apply(permute_op, (self,), {"dims": tuple(range(self._data.ndim - 1, -1, -1))})


def _mT(self):
    ndim = self._data.ndim
    if ndim < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got "
            f"{ndim}-D tensor.")
    return _property_event("aten::mT", self, _last_two_swapped)


def _last_two_swapped(self):
    ndim = self._data.ndim
    return _apply(transpose_op, (self,), {"dim0": ndim - 2, "dim1": ndim - 1})


def _H(self):
    ndim = self._data.ndim
    if ndim == 1 or ndim > 2:
        extra = ". For batches of matrices, consider using tensor.mH" if ndim > 2 else "."
        raise RuntimeError(
            f"tensor.H is only supported on matrices (2-D tensors). Got {ndim}-D tensor{extra}")
    return _property_event("aten::matrix_H", self, _conj_last_two_swapped)


def _mH(self):
    ndim = self._data.ndim
    if ndim == 1:
        raise RuntimeError(
            "tensor.mH is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return _property_event("aten::mH", self, _conj_last_two_swapped)


def _conj_last_two_swapped(self):
    return _conj(_last_two_swapped(self) if self._data.ndim else _alias(self))


Tensor.T = property(_T, doc="The tensor with its dims reversed (a view).")
Tensor.mT = property(_mT, doc="The transpose of the last two dims (a view).")
Tensor.H = property(_H, doc="The conjugate transpose of a matrix.")
Tensor.mH = property(_mH, doc="The conjugate transpose of the last two dims.")


# ------------------------------------------------------------------------------------------------
# expand / broadcasting


def _expand_kernel(xp, a, *, shape, strides):
    if shape == a.shape:
        return a.view()
    return _restride(xp, a, shape, strides)


def _expand_vjp(g, _a, *, shape, strides):
    # the engine sums each gradient down to its input's shape (ARCHITECTURE.md section 3),
    # which is exactly expand's backward
    return g


expand_op = Op("expand", _expand_kernel, vjp=_expand_vjp, view_of=0, linear=True)


def _expand_geometry(t, sizes, op_name="expand"):
    """PyTorch's (shape, strides) for expanding ``t`` to ``sizes`` (-1 keeps a dim)."""
    a = t._data
    shape, st = a.shape, t.stride()  # (an empty tensor's as torch's: NumPy zeroes them)
    n, k = len(sizes), len(shape)
    if n < k:
        raise RuntimeError(
            f"{op_name}({t.type()}{{{list(shape)}}}, size={list(sizes)}): the number of sizes "
            f"provided ({n}) must be greater or equal to the number of dimensions in the "
            f"tensor ({k})")
    out_shape = [0] * n
    out_strides = [0] * n
    for i in range(n - 1, -1, -1):
        d = k - n + i
        size = shape[d] if d >= 0 else 1
        stride = st[d] if d >= 0 else (out_shape[i + 1] * out_strides[i + 1] if i + 1 < n
                                       else 1)
        target = sizes[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}")
            target = size
        elif target < 0:
            raise RuntimeError(
                f"{op_name}: the expanded size of the tensor ({target}) must be non-negative")
        if size != target:
            if size != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target}) must match the existing size "
                    f"({size}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                    f"Tensor sizes: {list(shape)}")
            size = target
            stride = 0
        out_shape[i] = size
        out_strides[i] = stride
    return tuple(out_shape), tuple(out_strides)


@method
def expand(self, *sizes, size=None, implicit=False):
    """A view of ``self`` with size-1 dims repeated (stride 0) to ``sizes``; -1 keeps a dim,
    new leading dims may be added. No memory is copied."""
    sizes = _shape_args(sizes, size, "expand")
    shape, strides = _expand_geometry(self, sizes)
    return _apply(expand_op, (self,), {"shape": shape, "strides": strides})


@method
@recorded_as("aten::expand_as", ("self", "other"))
def expand_as(self, other):
    """``self.expand(other.size())``."""
    _check_tensor(other, "expand_as", "other")
    return expand(self, other._data.shape)


@public(method=False)
def broadcast_to(input, size):
    """``input.expand(size)``."""
    _check_tensor(input, "broadcast_to")
    _int_list_arg(size, "broadcast_to", "size", 2)
    return expand(input, size)


@method(name="broadcast_to")
def _broadcast_to_method(self, *size, **kwargs):
    """``self.expand(size)``; sizes may be spread out: ``x.broadcast_to(2, 3)``."""
    size = _shape_args(size, kwargs.pop("size", None), "broadcast_to")
    if kwargs:
        raise TypeError(f"broadcast_to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return expand(self, size)


@public(method=False)
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to (ints count as 1-D shapes)."""
    result = []
    for i, s in enumerate(shapes):
        s = (s,) if isinstance(s, _int_types) else as_shape((s,), "broadcast_shapes",
                                                             allow_negative=True)
        if len(s) > len(result):
            result = [1] * (len(s) - len(result)) + result
        for j in range(1, len(s) + 1):
            n, m = s[-j], result[-j]
            if n < 0:
                raise RuntimeError(
                    f"Trying to create tensor with negative dimension {n}: {list(s)}")
            if m == 1 or m == n:
                result[-j] = n
            elif n != 1:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {n} at {-j}! Mismatching "
                    f"argument at index {i} had {tuple(s)}; but expected shape should be "
                    f"broadcastable to {result}")
    return Size(result)


@public(method=False)
def broadcast_tensors(*tensors):
    """Expand all ``tensors`` to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for x in tensors:
        _check_tensor(x, "broadcast_tensors", "tensors")
    shape = broadcast_sizes([x._data.shape for x in tensors])
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None:   # PyTorch's ``aten::broadcast_tensors`` around its expands
            return session.composite("aten::broadcast_tensors", lambda: (list(tensors),),
                                     _expand_all, (tensors, shape), {})
    return _expand_all(tensors, shape)


def _expand_all(tensors, shape):
    # a tensor already of the common shape comes back as itself, not as an expanded view
    # (PyTorch's too: a parameter stays a leaf, e.g. a distribution's ``loc``)
    return tuple(x if tuple(x._data.shape) == shape else expand(x, shape) for x in tensors)


def broadcast_sizes(shapes):
    """The broadcast shape of ``shapes`` (tuples), raising PyTorch's error for tensors'
    shapes that do not broadcast."""
    shape = []
    for s in shapes:
        if len(s) > len(shape):
            shape = [1] * (len(s) - len(shape)) + shape
        for j in range(1, len(s) + 1):
            if shape[-j] == 1:
                shape[-j] = s[-j]
            elif s[-j] != 1 and s[-j] != shape[-j]:
                raise RuntimeError(
                    f"The size of tensor a ({shape[-j]}) must match the size of tensor b "
                    f"({s[-j]}) at non-singleton dimension {len(shape) - j}")
    return tuple(shape)


# ------------------------------------------------------------------------------------------------
# narrow / select / diagonal


def _narrow_kernel(xp, a, *, dim, start, length, in_shape=None):
    pre = (slice(None),) * dim
    if length == 0 and start < a.shape[dim]:
        # NumPy drops the offset of an empty slice; PyTorch keeps start * stride
        shape = a.shape[:dim] + (0,) + a.shape[dim + 1:]
        return _restride(xp, a[pre + (slice(start, start + 1),)], shape, _strides(a))
    return a[pre + (slice(start, start + length),)]


narrow_op = Op("narrow", _narrow_kernel, vjp=_scatter_vjp("narrow"), view_of=0, linear=True)
narrow_op.node_name = "SliceBackward0"  # PyTorch narrows by slicing


def _index_arg(x, op_name, arg):
    if isinstance(x, Tensor):
        if x._data.dtype.kind not in "iu" or x._data.ndim != 0:
            raise TypeError(f"{op_name}(): argument '{arg}' must be an int or a 0-dim integer "
                            f"tensor")
        return int(x.item())
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(
            f"{op_name}(): argument '{arg}' must be int, not {type(x).__name__}") from None


def _narrow_args(input, dim, start, length, op_name):
    _check_tensor(input, op_name)
    shape = input._data.shape
    if not shape:
        raise RuntimeError(f"{op_name}() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape), op_name)
    start = _index_arg(start, op_name, "start")
    length = _index_arg(length, op_name, "length")
    n = shape[d]
    if start < -n or start > n:
        raise IndexError(
            f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError(f"{op_name}(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return {"dim": d, "start": start, "length": length, "in_shape": shape}


@public
def narrow(input, dim, start, length):
    """The slice ``start : start + length`` of dim ``dim`` (a view)."""
    return _apply(narrow_op, (input,), _narrow_args(input, dim, start, length, "narrow"))


@public
def narrow_copy(input, dim, start, length, *, out=None):
    """Like :func:`narrow` but returns a contiguous copy."""
    from .conversion import clone
    from .._core import layout

    r = _apply(narrow_op, (input,), _narrow_args(input, dim, start, length, "narrow_copy"))
    r = clone(r, memory_format=layout.contiguous_format)
    return r if out is None else _dispatch.write_out("narrow_copy", out, r)


def _select_kernel(xp, a, *, dim, index, in_shape=None):
    # the trailing Ellipsis keeps a 0-dim result an array view, not a NumPy scalar
    return a[(slice(None),) * dim + (index, Ellipsis)]


select_op = Op("select", _select_kernel, vjp=_scatter_vjp("select"), view_of=0, linear=True)


@public
def select(input, dim, index):
    """The slice at ``index`` of dim ``dim``, with that dim removed (a view)."""
    _check_tensor(input, "select")
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape), "select")
    i = _index_arg(index, "select", "index")
    n = shape[d]
    if i < -n or i >= n:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {list(shape)} at dimension "
            f"{d}")
    return _apply(select_op, (input,), {"dim": d, "index": i + n if i < 0 else i,
                                        "in_shape": shape})


def _diagonal_geometry(shape, strides, offset, d1, d2):
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        size = max(min(n1, n2 - offset), 0)
        start = offset * strides[d2] if size else 0
    else:
        size = max(min(n1 + offset, n2), 0)
        start = -offset * strides[d1] if size else 0
    keep = [i for i in range(len(shape)) if i != d1 and i != d2]
    out_shape = tuple(shape[i] for i in keep) + (size,)
    out_strides = tuple(strides[i] for i in keep) + (strides[d1] + strides[d2],)
    return out_shape, out_strides, start


def _diagonal_kernel(xp, a, *, offset, dim1, dim2, in_shape=None):
    shape, strides, start = _diagonal_geometry(a.shape, _strides(a), offset, dim1, dim2)
    if start:
        # move the view's first element to the diagonal's start with a plain slice
        d = dim2 if offset > 0 else dim1
        a = a[(slice(None),) * d + (slice(abs(offset), None),)]
    return _restride(xp, a, shape, strides)


diagonal_op = Op("diagonal", _diagonal_kernel, vjp=_scatter_vjp("diagonal"), view_of=0,
                 linear=True)


@public
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the matrices in dims ``dim1`` and ``dim2`` as a new last dim (a view);
    ``offset`` > 0 is above the main diagonal, < 0 below."""
    _check_tensor(input, "diagonal")
    shape = input._data.shape
    d1 = wrap_dim(dim1, len(shape), "diagonal")
    d2 = wrap_dim(dim2, len(shape), "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _apply(diagonal_op, (input,), {"offset": operator.index(offset), "dim1": d1,
                                          "dim2": d2, "in_shape": shape})


# ------------------------------------------------------------------------------------------------
# unfold / as_strided


def _unfold_kernel(xp, a, *, dimension, size, step, in_shape=None):
    if a.ndim == 0:
        return _restride(xp, a, (size,), (1,))
    shape = list(a.shape)
    st = list(_strides(a))
    shape[dimension] = (shape[dimension] - size) // step + 1
    shape.append(size)
    st.append(st[dimension])
    st[dimension] *= step
    return _restride(xp, a, shape, st)


def _unfold_backward_kernel(xp, g, *, in_shape, dimension, size, step):
    z = xp.zeros(in_shape, g.dtype)
    if not in_shape:
        if size:
            z[...] = g[0]
        return z
    n = g.shape[dimension]
    for k in range(size):
        window = [slice(None)] * len(in_shape)
        window[dimension] = slice(k, k + step * (n - 1) + 1, step)
        z[tuple(window)] += g[..., k]
    return z


unfold_op = Op("unfold", _unfold_kernel, view_of=0, linear=True)
unfold_backward_op = Op("_unfold_backward", _unfold_backward_kernel, linear=True)


@unfold_op.defvjp
def _unfold_vjp(g, _a, *, dimension, size, step, in_shape):
    return _apply(unfold_backward_op, (g,), {"in_shape": in_shape, "dimension": dimension,
                                              "size": size, "step": step})


@unfold_backward_op.defvjp
def _unfold_backward_vjp(gg, _g, *, in_shape, dimension, size, step):
    return _apply(unfold_op, (gg,), {"dimension": dimension, "size": size, "step": step,
                                     "in_shape": in_shape})


@method
def unfold(self, dimension, size, step):
    """All windows of length ``size`` along ``dimension``, ``step`` apart, as a new last dim
    (a view; windows may overlap)."""
    shape = self._data.shape
    d = wrap_dim(dimension, len(shape), "unfold")
    size, step = operator.index(size), operator.index(step)
    n = shape[d] if shape else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return _apply(unfold_op, (self,), {"dimension": d, "size": size, "step": step,
                                       "in_shape": shape})


def _storage_elements(xp, a):
    """The whole storage ``a`` views, as a flat array of ``a``'s dtype."""
    flat = storage_of(a)._bytes()
    usable = flat.size - flat.size % a.itemsize
    return flat[:usable].view(a.dtype)


def _as_strided_kernel(xp, a, *, size, stride, offset, in_geometry=None):
    flat = _storage_elements(xp, a)
    return _restride(xp, flat[offset:] if offset < flat.size else flat[flat.size:], size,
                     stride)


as_strided_op = Op("as_strided", _as_strided_kernel, view_of=0, linear=True)


@as_strided_op.defvjp
def _as_strided_vjp(g, _a, *, size, stride, offset, in_geometry):
    return _apply(strided_scatter_op, (g,), {"in_geometry": in_geometry, "size": size,
                                             "stride": stride, "offset": offset})


def _as_strided_args(input, size, stride, storage_offset):
    _check_tensor(input, "as_strided")
    size = as_shape((size,), "as_strided")
    stride = as_shape((stride,), "as_strided", allow_negative=True)
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {len(size)} sizes and {len(stride)} "
            "strides")
    if any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}")
    offset = input.storage_offset() if storage_offset is None else operator.index(
        storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    a = input._data
    nbytes = storage_of(a).nbytes()
    if all(size):
        need = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    else:
        need = 0
    if need * a.itemsize > nbytes:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {a.itemsize} requiring a storage size of {need * a.itemsize} are "
            f"out of bounds for storage of size {nbytes}")
    geometry = (a.shape, _strides(a), input.storage_offset())
    return {"size": size, "stride": stride, "offset": offset, "in_geometry": geometry}


@public
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s storage with the given size, strides and storage offset
    (in elements, relative to the storage like PyTorch; defaults to ``input``'s offset)."""
    return _apply(as_strided_op, (input,), _as_strided_args(input, size, stride,
                                                           storage_offset))


# ------------------------------------------------------------------------------------------------
# in-place metadata ops: squeeze_, unsqueeze_, t_, transpose_, as_strided_, resize_


def _set_view_inplace(self, op_name, r):
    """Make ``self`` the view ``r`` (same storage), as the metadata in-place ops do."""
    if _dispatch.check_inplace is not None and (self._rg or r._grad_fn is not None):
        _dispatch.check_inplace(self, op_name)
    self._data = r._data
    if r._grad_fn is not None:
        self._grad_fn = r._grad_fn
        self._out_nr = getattr(r, "_out_nr", 0)
    if _dispatch.carries_tangent is not None:
        # forward AD: the tangent takes the new view too (``r``'s, a view of the old one)
        from ..autograd._forward import commit_view_tangent

        commit_view_tangent(self, r)
    return self


def _inplace_view(name, fn):
    @_dispatch.entrance(name, inplace=True)
    def inplace(self, *args, **kwargs):
        return _set_view_inplace(self, name, fn(self, *args, **kwargs))

    inplace.__name__ = name
    inplace.__qualname__ = "Tensor." + name
    inplace.__doc__ = f"In-place version of :meth:`Tensor.{name[:-1]}` (changes the view)."
    setattr(Tensor, name, inplace)


for _name, _fn in [("squeeze_", squeeze), ("unsqueeze_", unsqueeze), ("t_", t),
                   ("transpose_", transpose), ("swapdims_", swapdims),
                   ("swapaxes_", swapaxes), ("as_strided_", as_strided)]:
    _inplace_view(_name, _fn)


def _resize_(self, *sizes, memory_format=None):
    """Give ``self`` the shape ``sizes`` with contiguous strides, keeping its storage (and
    data) when it is large enough, else moving to a new buffer holding the old data first."""
    shape = as_shape(sizes, "resize_")
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    a = self._data
    n = 1
    for s in shape:
        n *= s
    xp = _dispatch.xp_of(a)
    offset = self.storage_offset()
    flat = _storage_elements(xp, a)
    if offset + n <= flat.size:
        self._data = _restride(xp, flat[offset:], shape, _contiguous_strides(shape))
    else:
        new = xp.zeros(n, a.dtype)
        old = flat[offset:offset + n]
        new[:old.size] = old
        self._data = new.reshape(shape)
    return self


def _resize_as_(self, the_template, memory_format=None):
    _check_tensor(the_template, "resize_as_", "the_template")
    return _resize_(self, the_template._data.shape)


Tensor.resize_ = _resize_
Tensor.resize_as_ = _resize_as_


@public(method=False, name="resize_as_")
def _resize_as_function(input, the_template, *, memory_format=None):
    """Resize ``input`` in place to ``the_template``'s shape (``input.resize_as_(...)``).

    Args:
        input (Tensor): the tensor to resize; keeps its storage when large enough.
        the_template (Tensor): the tensor whose shape ``input`` takes.

    Returns:
        Tensor: ``input``.

    Example::

        >>> ember.resize_as_(ember.zeros(4), ember.ones(2, 2)).shape
        ember.Size([2, 2])
    """
    _check_tensor(input, "resize_as_")
    return input.resize_as_(the_template, memory_format=memory_format)


def _warn_deprecated(name):
    from .._settings import warn_at_caller

    warn_at_caller(f"non-inplace {name} is deprecated", UserWarning)


@method
def resize(self, *sizes):
    """Deprecated: the tensor with shape ``sizes`` and the same number of elements (a
    differentiable reshape). Use :meth:`reshape`, or :meth:`resize_` to change the size.

    Example::

        >>> ember.arange(6.).resize(2, 3).shape  # doctest: +SKIP
        ember.Size([2, 3])
    """
    _warn_deprecated("resize")
    shape = as_shape(sizes, "resize")
    n = math.prod(shape)
    if n != self._data.size:
        have = "x".join(str(s) for s in self._data.shape)
        raise RuntimeError(
            f"requested resize to {'x'.join(str(s) for s in shape)} ({n} elements in total), "
            f"but the given tensor has a size of {have} ({self._data.size} elements). "
            "autograd's resize can only change the shape of a given tensor, while preserving "
            "the number of elements. ")
    return self.reshape(shape)


@method
def resize_as(self, tensor):
    """Deprecated: ``self.resize(tensor.shape)`` (same number of elements required).

    Example::

        >>> ember.arange(6.).resize_as(ember.ones(3, 2)).shape  # doctest: +SKIP
        ember.Size([3, 2])
    """
    _warn_deprecated("resize_as")
    _check_tensor(tensor, "resize_as", "tensor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tensor._data.shape)


@_dispatch.entrance("set_", inplace=True)
def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make ``self`` view other memory: ``set_()`` (empty), ``set_(tensor)`` (share the
    tensor's storage, shape, strides and offset), ``set_(storage, offset, size, stride)``.

    Args:
        source (Tensor or storage, optional): what to view.
        storage_offset (int): first element, counted in ``self``'s dtype. Default: 0.
        size (tuple of int, optional): shape; default: the whole storage as one dim.
        stride (tuple of int, optional): strides; default: contiguous.

    Returns:
        Tensor: ``self``.

    Example::

        >>> ember.zeros(3).set_(ember.arange(5.))
        tensor([0., 1., 2., 3., 4.])
    """
    from .._core.storage import TypedStorage, UntypedStorage

    if _dispatch.check_inplace is not None:
        _dispatch.check_inplace(self, "set_")
    a = self._data
    xp = _dispatch.xp_of(a)
    if source is None:
        arr = xp.empty((0,), a.dtype)
    elif isinstance(source, Tensor):
        if source._data.dtype != a.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype.scalar_name} to a "
                               f"tensor of type {self.dtype.scalar_name}")
        arr = source._data
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        if isinstance(source, TypedStorage):
            if source.dtype.np != a.dtype:
                raise RuntimeError(f"Could not set tensor of type {source.dtype.scalar_name} "
                                   f"to a tensor of type {self.dtype.scalar_name}")
            source = source.untyped()
        flat = source._bytes()
        flat = flat[:flat.size - flat.size % a.itemsize].view(a.dtype)
        offset = operator.index(storage_offset)
        shape = (flat.size - offset,) if size is None else as_shape((size,), "set_")
        strides = _contiguous_strides(shape) if stride is None else tuple(
            operator.index(s) for s in stride)
        if len(strides) != len(shape):
            raise RuntimeError(f"unequal size length ({len(shape)}) and stride length "
                               f"({len(strides)})")
        need = offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) \
            else offset
        if offset < 0 or need > flat.size:
            raise RuntimeError(
                f"set_: sizes {list(shape)}, strides {list(strides)} and storage offset "
                f"{offset} need {need} elements, but the storage holds {flat.size} (ember "
                "storages cannot grow)")
        arr = _restride(xp, flat[offset:], shape, strides)
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    self._data = arr
    self._base = None
    self._bump()
    return self


Tensor.set_ = _set_


@method
def sum_to_size(self, *size):
    """``self`` summed down to ``size``, which must broadcast to ``self``'s shape: leading
    dims are summed away and dims where ``size`` is 1 are summed keeping the dim.

    Args:
        *size (int or tuple of int): the target shape.

    Returns:
        Tensor

    Example::

        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    shape = as_shape(size, "sum_to_size")
    have = self._data.shape
    lead = len(have) - len(shape)
    if lead < 0 or any(s != 1 and s != h for s, h in zip(shape, have[lead:])):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(have)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and have[lead + i] != 1)
    if not dims:
        return self
    r = self.sum(dims, keepdim=True)
    return r.reshape(shape) if lead else r
