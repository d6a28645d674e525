"""Joining, splitting and rearranging: cat/stack and friends, split/chunk/unbind, repeat,
tile, repeat_interleave, flip, roll, rot90, tril/triu and the diag family.

Splits return tuples of *views* (one multi-output view op each, see
``Op.multi_output_view``); everything else here returns new memory, laid out as PyTorch
lays it out (contiguous, except flip which keeps its input's dim order).
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.checks import as_shape, holds_values, wrap_dim, wrap_dims
from .._core.tensor import Tensor
from . import _memory_format as _mf
from ._registry import Op, method, observing_profiler, profiler_session, public
from ._xp_compat import ufunc_at
from .shape import (_check_tensor, _int_list_arg, _shape_args, diagonal, reshape, unsqueeze,
                    view)

_apply = _dispatch.apply
_int_types = (int, np.integer)


def _zeros(shape, like):
    from .creation import zeros

    return zeros(shape, dtype=like.dtype, device=like.device)


def _result_dtype(tensors):
    d = _dt.from_np[tensors[0]._data.dtype]
    for t in tensors[1:]:
        e = _dt.from_np[t._data.dtype]
        if e is not d:
            d = _dt.promote_types(d, e)
    return d


def _tensor_list(tensors, op_name, arg="tensors"):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(
            f"{op_name}(): argument '{arg}' (position 1) must be tuple of Tensors, not "
            f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"{op_name}(): expected Tensor as element {i} in argument 0, but got "
                f"{type(t).__name__}")
    return list(tensors)


# ------------------------------------------------------------------------------------------------
# split family: one multi-output view op over arbitrary (start, stop) pieces of one dim


def _split_kernel(xp, a, *, dim, bounds, in_shape=None):
    pre = (slice(None),) * dim
    return tuple(a[pre + (slice(s, e),)] for s, e in bounds)


# NOTE [ Split backward writes its pieces ]
# The gradient of a split is its pieces' gradients side by side, zeros where a piece had
# none. Pieces that do not overlap (every split, chunk and unsplit; tensor_split's unless
# its indices go backwards) are copied into place, and only the gaps are zeroed: one pass
# over the result instead of zero-filling it and adding each piece into it (a GPT block's
# q/k/v gradient, (8, 128, 768) float32: three passes fewer). Copying also keeps a -0.0
# gradient as PyTorch's concatenation does, where 0 + -0.0 gave +0.0. Overlapping pieces
# (and pieces of mixed dtypes) are summed into zeros as before.


def _split_backward_kernel(xp, *gs, dim, bounds, in_shape):
    pre = (slice(None),) * dim
    dt = gs[0].dtype
    pieces = sorted(((s, e, g) for (s, e), g in zip(bounds, gs) if e > s),
                    key=lambda p: p[:2]) if all(g.dtype == dt for g in gs) else None
    if pieces is not None and all(a[1] <= b[0] for a, b in zip(pieces, pieces[1:])):
        z = xp.empty(in_shape, dt)  # NOTE [ Split backward writes its pieces ]
        done = 0
        for s, e, g in pieces:
            if s > done:
                z[pre + (slice(done, s),)] = 0
            z[pre + (slice(s, e),)] = g
            done = e
        if done < in_shape[dim]:
            z[pre + (slice(done, None),)] = 0
        return z
    z = xp.zeros(in_shape, dt)
    for g, (s, e) in zip(gs, bounds):
        # tensor_split pieces may overlap, so accumulate
        z[pre + (slice(s, e),)] += g
    return z


split_op = Op("split", _split_kernel, view_of=0, linear=True)
split_op.multi_output_view = True
split_backward_op = Op("_split_backward", _split_backward_kernel, linear=True)


@split_op.defvjp
def _split_vjp(gs, _a, *, dim, bounds, in_shape):
    keep = [i for i, g in enumerate(gs) if g is not None]
    return _apply(split_backward_op, tuple(gs[i] for i in keep),
                  {"dim": dim, "bounds": tuple(bounds[i] for i in keep), "in_shape": in_shape})


@split_backward_op.defvjp
def _split_backward_vjp(gg, *_gs, dim, bounds, in_shape):
    return _apply(split_op, (gg,), {"dim": dim, "bounds": bounds, "in_shape": in_shape})


def _split_at(input, dim, bounds):
    return _apply(split_op, (input,), {"dim": dim, "bounds": tuple(bounds),
                                       "in_shape": input._data.shape})


def _sizes_bounds(sizes):
    bounds, start = [], 0
    for s in sizes:
        bounds.append((start, start + s))
        start += s
    return bounds


def _dim0(input, dim, op_name):
    shape = input._data.shape
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return wrap_dim(dim, len(shape), op_name)


@public(method=False)
def split(tensor, split_size_or_sections, dim=0):
    """Split into pieces of ``split_size`` along ``dim`` (the last may be smaller), or into
    pieces of the listed sizes. Returns a tuple of views."""
    _check_tensor(tensor, "split", "tensor")
    d = _dim0(tensor, dim, "split")
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, d)
    s = operator.index(split_size_or_sections)
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0:
        if n:
            raise RuntimeError(
                "split_size can only be 0 if dimension size is 0, but got dimension size of "
                f"{n}")
        return _split_at(tensor, d, [(0, 0)])
    return _split_at(tensor, d, [(i, min(i + s, n)) for i in range(0, n, s)] or [(0, 0)])


@method(name="split")
def _split_method(self, split_size, dim=0):
    return split(self, split_size, dim)


@public
def split_with_sizes(input, split_sizes, dim=0):
    """Split into pieces of the given sizes along ``dim`` (they must sum to its size)."""
    _check_tensor(input, "split_with_sizes")
    d = _dim0(input, dim, "split_with_sizes")
    sizes = [operator.index(s) for s in split_sizes]
    n = input._data.shape[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
            f"at dimension {d}), but got split_sizes={sizes}")
    if _dispatch.intercept:
        session = observing_profiler()
        if session is not None:
            # a profile lists the call as PyTorch's one op, whatever ember's op is named
            return session.as_one_op("aten::split_with_sizes",
                                     lambda: (input, split_sizes, dim), _split_at,
                                     (input, d, _sizes_bounds(sizes)), {})
    return _split_at(input, d, _sizes_bounds(sizes))


@public
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of equal size (``ceil(n / chunks)``; fewer pieces when
    that divides evenly earlier). Returns a tuple of views."""
    _check_tensor(input, "chunk")
    if _dispatch.intercept:
        session = profiler_session()
        if session is not None:
            # PyTorch's ``aten::chunk`` around the ``aten::split`` it runs
            return session.composite("aten::chunk", lambda: (input, chunks, dim), _chunk,
                                     (input, chunks, dim), {})
    return _chunk(input, chunks, dim)


def _chunk(input, chunks, dim):
    chunks = operator.index(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim0(input, dim, "chunk")
    n = input._data.shape[d]
    size = -(-n // chunks)
    if size == 0:
        return _split_at(input, d, [(0, 0)] * chunks)
    if _dispatch.intercept:  # (modes and the profiler see torch's ``split`` inside)
        return split(input, size, d)
    # ``split(input, size, d)``'s pieces, without its checks (``size`` is positive, ``d``
    # in range) and its public entrance
    return _split_at(input, d, [(i, min(i + size, n)) for i in range(0, n, size)])


# NOTE [ Unsafe splits ]
# ``unsafe_split`` / ``unsafe_chunk`` / ``unsafe_split_with_sizes`` return the same pieces
# as their safe forms, sharing memory with the input, but autograd does not track them as
# views: in-place ops on a piece are allowed (the safe forms refuse them) and do not
# rewrite the input's history -- the caller promises not to need that.
unsafe_split_op = Op("unsafe_split", _split_kernel, vjp=_split_vjp, linear=True)


def _unsafe(pieces, input, dim):
    d = wrap_dim(dim, input._data.ndim, "split")
    sizes = [p._data.shape[d] for p in pieces]
    return _apply(unsafe_split_op, (input,), {"dim": d, "bounds": tuple(_sizes_bounds(sizes)),
                                              "in_shape": input._data.shape})


@public
def unsafe_split(input, split_size, dim=0):
    """:func:`split` into pieces of ``split_size``, without view tracking (NOTE [ Unsafe
    splits ]).

    Args:
        input (Tensor): the tensor to split.
        split_size (int): the size of each piece (the last may be smaller).
        dim (int): the dimension to split. Default: 0.

    Returns:
        tuple of Tensor

    Example::

        >>> ember.unsafe_split(ember.arange(3.), 2)
        (tensor([0., 1.]), tensor([2.]))
    """
    _check_tensor(input, "unsafe_split")
    if not isinstance(split_size, _int_types) and not (
            isinstance(split_size, Tensor) and split_size.dim() == 0):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return _unsafe(split(input.detach(), split_size, dim), input, dim)


@public
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """:func:`split_with_sizes` without view tracking (NOTE [ Unsafe splits ]).

    Args:
        input (Tensor): the tensor to split.
        split_sizes (list of int): the piece sizes, summing to the size of ``dim``.
        dim (int): the dimension to split. Default: 0.

    Returns:
        tuple of Tensor

    Example::

        >>> ember.unsafe_split_with_sizes(ember.arange(3.), [1, 2])
        (tensor([0.]), tensor([1., 2.]))
    """
    _check_tensor(input, "unsafe_split_with_sizes")
    return _unsafe(split_with_sizes(input.detach(), split_sizes, dim), input, dim)


@public
def unsafe_chunk(input, chunks, dim=0):
    """:func:`chunk` without view tracking (NOTE [ Unsafe splits ]).

    Args:
        input (Tensor): the tensor to split.
        chunks (int): the number of pieces.
        dim (int): the dimension to split. Default: 0.

    Returns:
        tuple of Tensor

    Example::

        >>> ember.unsafe_chunk(ember.arange(4.), 2)
        (tensor([0., 1.]), tensor([2., 3.]))
    """
    _check_tensor(input, "unsafe_chunk")
    return _unsafe(chunk(input.detach(), chunks, dim), input, dim)


@public
def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Split into ``sections`` nearly equal pieces (the first ``n % sections`` one longer), or
    at the given ``indices``. Returns a tuple of views."""
    _check_tensor(input, "tensor_split")
    arg = next((x for x in (indices_or_sections, sections, indices, tensor_indices_or_sections)
                if x is not None), None)
    if arg is None:
        raise TypeError("tensor_split() missing required argument 'indices_or_sections'")
    if isinstance(arg, Tensor):
        a = arg._data
        if arg.dtype.name != "int64":
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but "
                f"got {arg.dtype.scalar_name}")
        if a.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {a.ndim} dims")
        arg = int(a) if a.ndim == 0 else [int(x) for x in a.tolist()]
        # torch reads a 1-D index tensor as SymInts, whose tagged form holds nothing below
        # -2**62
        low = next((v for v in ([] if a.ndim == 0 else arg) if v < -2 ** 62), None)
        if low is not None:
            raise RuntimeError(f"IntArrayRef contains an int that cannot be represented as a "
                               f"SymInt: {low}")
    d = _dim0(input, dim, "tensor_split")
    n = input._data.shape[d]
    if isinstance(arg, (list, tuple)):
        bounds, start = [], 0
        for i in arg:
            i = operator.index(i)
            stop = min(max(i if i >= 0 else i + n, 0), n)
            bounds.append((start, max(stop, start)))
            start = stop
        bounds.append((start, max(n, start)))
        return _split_at(input, d, bounds)
    k = operator.index(arg)
    if k <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {k}")
    if k > (2 ** 63 - 1) // 8:  # more pieces than a C++ vector of tensors can hold
        raise RuntimeError("cannot create std::vector larger than max_size()")
    base, extra = divmod(n, k)
    return _split_at(input, d, _sizes_bounds([base + (i < extra) for i in range(k)]))


def _dir_split(input, indices_or_sections, dim, min_dims, name):
    _check_tensor(input, name)
    ndim = input._data.ndim
    if ndim < min_dims:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
            f"tensor with {ndim} dimensions!")
    if isinstance(indices_or_sections, _int_types):
        n = input._data.shape[dim]
        if indices_or_sections == 0 or n % indices_or_sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {n} is not divisible by the split_size {indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


@public
def hsplit(input, indices_or_sections):
    """Split along dim 1 (dim 0 for 1-D tensors); see :func:`tensor_split`."""
    _check_tensor(input, "hsplit")
    return _dir_split(input, indices_or_sections, 1 if input._data.ndim > 1 else 0, 1, "hsplit")


@public
def vsplit(input, indices_or_sections):
    """Split along dim 0 of a tensor of at least 2 dims; see :func:`tensor_split`."""
    return _dir_split(input, indices_or_sections, 0, 2, "vsplit")


@public
def dsplit(input, indices_or_sections):
    """Split along dim 2 of a tensor of at least 3 dims; see :func:`tensor_split`."""
    return _dir_split(input, indices_or_sections, 2, 3, "dsplit")


def _unbind_kernel(xp, a, *, dim, in_shape=None):
    pre = (slice(None),) * dim
    return tuple(a[pre + (i, Ellipsis)] for i in range(a.shape[dim]))


unbind_op = Op("unbind", _unbind_kernel, view_of=0, linear=True)
unbind_op.multi_output_view = True


@unbind_op.defvjp
def _unbind_vjp(gs, _a, *, dim, in_shape):
    like = next(g for g in gs if g is not None)
    piece = in_shape[:dim] + in_shape[dim + 1:]
    return stack([g if g is not None else _zeros(piece, like) for g in gs], dim)


@public
def unbind(input, dim=0):
    """The slices along ``dim``, with that dim removed, as a tuple of views.

    Differences from PyTorch:
        Unbinding a zero-size dimension of a tensor that requires grad (a transposed view): ember
        raises IndexError, PyTorch returns an empty tuple.
    """
    _check_tensor(input, "unbind")
    d = _dim0(input, dim, "unbind")
    return _apply(unbind_op, (input,), {"dim": d, "in_shape": input._data.shape})


# ------------------------------------------------------------------------------------------------
# cat / stack and friends


def _cat_kernel(xp, *arrays, dim, dtype, sizes=None):
    if sizes is not None:
        # a None size marks a skipped 1-D empty input (kept as an input for its gradient)
        arrays = [a for a, n in zip(arrays, sizes) if n is not None]
        if not arrays:  # every input was a 1-D empty tensor
            return xp.empty((0,), dtype)
    shape = list(arrays[0].shape)
    shape[dim] = sum(sizes) if sizes is not None and None not in sizes else \
        sum(a.shape[dim] for a in arrays)
    # a contiguous result unless every input suggests channels-last, as PyTorch; casting to
    # the promoted dtype happens in the copy
    fmt = None
    if xp is np and len(shape) in (4, 5):
        formats = {_mf.suggest_format(a) for a in arrays}
        fmt = formats.pop() if len(formats) == 1 else None
    out = _mf.empty_in_format(shape, dtype, fmt) if fmt else xp.empty(shape, dtype)
    return xp.concatenate(arrays, axis=dim, out=out, casting="unsafe")


cat_op = Op("cat", _cat_kernel, linear=True)


@cat_op.defvjp
def _cat_vjp(g, *_tensors, dim, dtype, sizes):
    # only the sizes are read: a later in-place write to an input leaves this valid
    parts = iter(_split_at(g, dim, _sizes_bounds([n for n in sizes if n is not None])))
    # a skipped 1-D empty input gets an empty gradient, as torch (not None)
    return tuple(next(parts) if n is not None else _zeros((0,), g) for n in sizes)


@public(method=False, alias=("concat",))
def cat(tensors, dim=0, *, out=None):
    """Concatenate ``tensors`` along ``dim``: same shapes except in ``dim``; dtypes promote
    as in arithmetic. 1-D empty tensors are skipped (a legacy PyTorch rule)."""
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    if tensors[0].is_quantized and out is None:  # ember/ao/_qops.py
        from ..ao import _qops

        return _qops.cat(tensors, dim)
    if out is None:
        plain = _plain_cat(tensors, dim)
        if plain is not None:  # NOTE [ Plain concatenations ]
            return _apply(cat_op, tuple(tensors), plain)
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    dtype = _result_dtype(tensors)
    if isinstance(out, Tensor) and not _dt.can_cast(dtype, _dt.from_np[out._data.dtype]):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_dt.from_np[out._data.dtype].scalar_name}")
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    if not kept:  # one node over every input, each of which gets an empty gradient
        return _apply(cat_op, tuple(tensors), {"dim": 0, "dtype": dtype.np,
                                               "sizes": (None,) * len(tensors)}, out=out)
    ref = kept[0]._data.shape
    d = wrap_dim(dim, len(ref), "cat")
    kept_ids = {id(t) for t in kept}
    for i, t in enumerate(tensors):
        s = t._data.shape
        if id(t) not in kept_ids:
            continue
        if len(s) != len(ref):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(ref)} and {len(s)}")
        for j, (x, y) in enumerate(zip(ref, s)):
            if j != d and x != y:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size {x} "
                    f"but got size {y} for tensor number {i} in the list.")
    sizes = tuple(t._data.shape[d] if id(t) in kept_ids else None for t in tensors)
    return _apply(cat_op, tuple(tensors), {"dim": d, "dtype": dtype.np, "sizes": sizes},
                  out=out)


def _plain_cat(tensors, dim):
    """``cat``'s params for tensors of one dtype and one rank (not 0, and no 1-D empty one)
    whose shapes agree but in an int ``dim`` in range, or None (NOTE [ Plain
    concatenations ])."""
    a = tensors[0]._data
    ref = a.shape
    n = len(ref)
    if type(dim) is not int or not -n <= dim < n or n == 1 and not ref[0]:
        return None
    d = dim + n if dim < 0 else dim
    dt = a.dtype
    head, tail = ref[:d], ref[d + 1:]
    sizes = []
    for t in tensors:
        a = t._data
        s = a.shape
        if a.dtype != dt or len(s) != n or s[:d] != head or s[d + 1:] != tail or \
                n == 1 and not s[0]:
            return None
        sizes.append(s[d])
    return {"dim": d, "dtype": _dt.from_np[dt].np, "sizes": tuple(sizes)}


# NOTE [ Plain concatenations ]
# Most concatenations (an LSTM cell's gates, a GRU's inputs, a batch assembled from pieces)
# join tensors of one dtype and rank that agree outside the joined dim. ``cat``'s general
# checks (1-D empty inputs skipped, ranks and sizes compared pairwise for torch's messages,
# the dtypes promoted) then all pass and make the same params; ``_plain_cat`` tests such a
# call in one pass and hands ``apply`` those params (~6 -> ~3 us a small ``cat``). Any
# other call, and every error, takes the general checks.


@public(method=False)
def concatenate(tensors, axis=0, out=None, *, dim=None):
    """Alias of :func:`cat` (NumPy's argument name ``axis``)."""
    return cat(tensors, axis if dim is None else dim, out=out)


def _stack_kernel(xp, *arrays, dim, dtype):
    return _cat_kernel(xp, *(xp.expand_dims(a, dim) for a in arrays), dim=dim, dtype=dtype)


stack_op = Op("stack", _stack_kernel, linear=True)


@stack_op.defvjp
def _stack_vjp(g, *_tensors, dim, dtype):
    return unbind(g, dim)


@public(method=False)
def stack(tensors, dim=0, *, out=None):
    """Join equally shaped ``tensors`` along a new dim ``dim``."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    if tensors[0].is_quantized and out is None:  # ember/ao/_qops.py
        from ..ao import _qops

        return _qops.stack(tensors, dim)
    ref = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != ref:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(ref)} at entry 0 "
                f"and {list(t._data.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1, "stack")
    if _dispatch.intercept and _dispatch.state.modes:
        session = profiler_session()
        if session is not None and session.record_shapes:
            # a profile lists the dim as the caller gave it (NOTE [ Stack under the
            # profiler ] in ember/profiler/_recorder.py)
            session.noted["aten::stack"] = dim
    return _apply(stack_op, tuple(tensors), {"dim": d, "dtype": _result_dtype(tensors).np},
                  out=out)


def _atleast(args, fn):
    if len(args) == 1:
        x = args[0]
        if isinstance(x, Tensor):
            return fn(x)
        if isinstance(x, (list, tuple)):
            return tuple(fn(t) for t in x)
    return tuple(fn(t) for t in args)


def _at1(t):
    _check_tensor(t, "atleast_1d")
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def _at2(t):
    _check_tensor(t, "atleast_2d")
    n = t._data.ndim
    return reshape(t, (1, 1)) if n == 0 else unsqueeze(t, 0) if n == 1 else t


def _at3(t):
    _check_tensor(t, "atleast_3d")
    n = t._data.ndim
    if n == 0:
        return reshape(t, (1, 1, 1))
    if n == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if n == 2 else t


@public(method=False)
def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (0-D become shape (1,)); a tuple for several."""
    return _atleast(tensors, _at1)


@public(method=False)
def atleast_2d(*tensors):
    """Each tensor with at least 2 dims (a 1-D tensor of size n becomes (1, n))."""
    return _atleast(tensors, _at2)


@public(method=False)
def atleast_3d(*tensors):
    """Each tensor with at least 3 dims ((n,) becomes (1, n, 1), (m, n) becomes (m, n, 1))."""
    return _atleast(tensors, _at3)


@public(method=False)
def hstack(tensors, *, out=None):
    """Concatenate along dim 1 (dim 0 for 1-D tensors) after :func:`atleast_1d`."""
    ts = [_at1(t) for t in _tensor_list(tensors, "hstack")]
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1, out=out)


@public(method=False, alias=("row_stack",))
def vstack(tensors, *, out=None):
    """Concatenate along dim 0 after :func:`atleast_2d`."""
    ts = [_at2(t) for t in _tensor_list(tensors, "vstack")]
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(ts, 0, out=out)


@public(method=False)
def dstack(tensors, *, out=None):
    """Concatenate along dim 2 after :func:`atleast_3d`."""
    ts = [_at3(t) for t in _tensor_list(tensors, "dstack")]
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(ts, 2, out=out)


@public(method=False)
def column_stack(tensors, *, out=None):
    """Stack as columns: 0-D and 1-D tensors become (n, 1) columns, then :func:`hstack`."""
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    ts = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return hstack(ts, out=out)


# ------------------------------------------------------------------------------------------------
# repeat / tile / repeat_interleave


def _repeat_kernel(xp, a, *, repeats, in_shape=None):
    a = a.reshape((1,) * (len(repeats) - a.ndim) + a.shape)
    return xp.ascontiguousarray(xp.tile(a, repeats))


def _repeat_backward_kernel(xp, g, *, repeats, in_shape):
    padded = (1,) * (len(repeats) - len(in_shape)) + tuple(in_shape)
    inter = []
    for r, s in zip(repeats, padded):
        inter += [r, s]
    axes = tuple(range(0, len(inter), 2))
    # NumPy's ufunc called from here, not ``ndarray.sum``: its inf - inf warning then names
    # this module, which ember's filter covers (NOTE [ Floating-point warnings ])
    add = np.add if xp is np else None
    # half precision sums in float32, rounded once, as torch's sum of the copies
    acc = np.float32 if g.dtype.itemsize == 2 and g.dtype.kind == "f" or \
        g.dtype.name == "bfloat16" else g.dtype
    summed = add.reduce(g.reshape(inter), axis=axes, dtype=acc) if add is not None else \
        g.reshape(inter).sum(axis=axes, dtype=acc)
    return summed.astype(g.dtype, copy=False).reshape(in_shape)


repeat_op = Op("repeat", _repeat_kernel, linear=True)
repeat_backward_op = Op("_repeat_backward", _repeat_backward_kernel, linear=True)


@repeat_op.defvjp
def _repeat_vjp(g, _a, *, repeats, in_shape):
    return _apply(repeat_backward_op, (g,), {"repeats": repeats, "in_shape": in_shape})


@repeat_backward_op.defvjp
def _repeat_backward_vjp(gg, _g, *, repeats, in_shape):
    return _apply(repeat_op, (gg,), {"repeats": repeats, "in_shape": in_shape})


def _repeat(input, repeats, op_name):
    shape = input._data.shape
    if len(repeats) < len(shape):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor")
    padded = (1,) * (len(repeats) - len(shape)) + shape
    out_shape = [r * s for r, s in zip(repeats, padded)]
    for n in out_shape:
        if n < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {n}: {out_shape}")
    return _apply(repeat_op, (input,), {"repeats": tuple(repeats), "in_shape": shape})


@method
def repeat(self, *repeats, **kwargs):
    """Tile ``self`` ``repeats[i]`` times along each dim (copying; extra leading repeats add
    dims). ``x.repeat(2, 3)`` or ``x.repeat((2, 3))``."""
    if not repeats and "repeats" not in kwargs:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    if kwargs:
        repeats = (kwargs.pop("repeats"),)
    return _repeat(self, as_shape(repeats, "repeat", allow_negative=True), "repeat")


@public(method=False)
def tile(input, dims):
    """Like ``repeat`` but ``dims`` shorter than ``input.dim()`` is padded with leading 1s."""
    _check_tensor(input, "tile")
    _int_list_arg(dims, "tile", "dims", 2)
    dims = as_shape((dims,), "tile", allow_negative=True)
    ndim = input._data.ndim
    if len(dims) < ndim:
        dims = (1,) * (ndim - len(dims)) + dims
    return _repeat(input, dims, "tile")


@method(name="tile")
def _tile_method(self, *dims, **kwargs):
    """``tile(self, dims)``; the dims may be spread out: ``x.tile(2, 1)``."""
    dims = _shape_args(dims, kwargs.pop("dims", None), "tile", "dims")
    if kwargs:
        raise TypeError(f"tile() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return tile(self, dims)


_INT64_MAX = (1 << 63) - 1


def _repeat_interleave_kernel(xp, a, *, repeats, dim, in_size=None):
    return xp.ascontiguousarray(xp.repeat(a, repeats if isinstance(repeats, int) else
                                          xp.asarray(repeats, dtype=np.int64), axis=dim))


def _repeat_interleave_backward_kernel(xp, g, *, repeats, dim, in_size):
    if isinstance(repeats, int):
        shape = g.shape[:dim] + (in_size, repeats) + g.shape[dim + 1:]
        return g.reshape(shape).sum(axis=dim + 1, dtype=g.dtype)
    moved = xp.moveaxis(g, dim, 0)
    out = xp.zeros((in_size,) + moved.shape[1:], g.dtype)
    idx = xp.repeat(xp.arange(in_size), xp.asarray(repeats, dtype=np.int64))
    ufunc_at(xp, "add", out, idx, moved)
    return xp.ascontiguousarray(xp.moveaxis(out, 0, dim))


repeat_interleave_op = Op("repeat_interleave", _repeat_interleave_kernel, linear=True)
repeat_interleave_backward_op = Op("_repeat_interleave_backward",
                                   _repeat_interleave_backward_kernel, linear=True)


@repeat_interleave_op.defvjp
def _repeat_interleave_vjp(g, _a, *, repeats, dim, in_size):
    return _apply(repeat_interleave_backward_op, (g,),
                  {"repeats": repeats, "dim": dim, "in_size": in_size})


@repeat_interleave_backward_op.defvjp
def _repeat_interleave_backward_vjp(gg, _g, *, repeats, dim, in_size):
    return _apply(repeat_interleave_op, (gg,),
                  {"repeats": repeats, "dim": dim, "in_size": in_size})


@public
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int, or a tensor of per-element counts)
    along ``dim`` (of the flattened input when None). ``repeat_interleave(counts)`` alone
    gives the indices ``0..n-1`` repeated by ``counts``."""
    _check_tensor(input, "repeat_interleave")
    if repeats is None:
        from .ranges import arange

        counts = input
        if counts._data.ndim != 1:
            raise RuntimeError("repeat_interleave: repeats must be 1-d integer tensor")
        if counts.dtype.name not in ("int32", "int64"):  # torch's kernel: these two only
            raise NotImplementedError(
                f'"repeat_interleave_cpu" not implemented for \'{counts.dtype.scalar_name}\'')
        return repeat_interleave(arange(counts._data.shape[0], device=counts.device), counts,
                                 0, output_size=output_size)
    if dim is None:
        input = reshape(input, (-1,))
        d = 0
    else:
        d = wrap_dim(dim, input._data.ndim, "repeat_interleave")
        if input._data.ndim == 0:
            input = reshape(input, (1,))
    n = input._data.shape[d]
    if isinstance(repeats, Tensor):
        r = repeats._data
        if repeats.dtype.name not in ("int32", "int64"):  # torch's kernel: these two only
            raise NotImplementedError(
                f'"repeat_interleave_cpu" not implemented for \'{repeats.dtype.scalar_name}\'')
        if r.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if not holds_values(r):  # meta: no counts to read, only the size asked for
            if output_size is None:
                raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
            counts = [output_size] + [0] * (n - 1) if r.size != 1 else [output_size // max(n, 1)]
        else:
            counts = [int(x) for x in
                      np.asarray(r if type(r) is np.ndarray else r.get()).reshape(-1)]
        if len(counts) == 1:
            # one count for every slice: torch expands the tensor to n counts, so its kernel's
            # size check (and output_size's) meets no count at all where n is 0
            if n == 0:
                counts, output_size = [0], None
            elif output_size is not None and output_size != n * counts[0]:
                raise RuntimeError("allocated size does not match required size")
            elif counts[0] < 0:
                raise RuntimeError("repeats can not be negative")
            repeats = counts[0]
        elif len(counts) != n:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) "
                f"= {len(counts)} and input.size(0) = {n}")
        else:
            if any(c < 0 for c in counts):
                raise RuntimeError("repeats can not be negative")
            if sum(counts) > _INT64_MAX:  # (torch's int64 running sum wraps negative there)
                raise RuntimeError(f"repeat_interleave: the output size {sum(counts)} along "
                                   f"dim {d} cannot be represented as an int64")
            if output_size is not None and output_size != sum(counts) and counts:
                raise RuntimeError("allocated size does not match required size")
            return _apply(repeat_interleave_op, (input,),
                          {"repeats": tuple(counts), "dim": d, "in_size": n})
    repeats = operator.index(repeats)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    if math.prod(input._data.shape) // max(n, 1) * n * repeats > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    if output_size is not None and output_size != n * repeats:
        raise RuntimeError(
            f"repeat_interleave: Invalid output_size, expected {n * repeats} but got "
            f"{output_size}")
    return _apply(repeat_interleave_op, (input,), {"repeats": repeats, "dim": d, "in_size": n})


# ------------------------------------------------------------------------------------------------
# flip / roll / rot90


def _flip_kernel(xp, a, *, dims):
    # a fresh array in the input's dim order (PyTorch's preserve_format); never the
    # negative-strided view NumPy's flip returns
    out = xp.empty_like(a, order="K")
    out[...] = xp.flip(a, dims) if dims else a
    return out


flip_op = Op("flip", _flip_kernel, linear=True)


@flip_op.defvjp
def _flip_vjp(g, _a, *, dims):
    return _apply(flip_op, (g,), {"dims": dims})


@method
def flip(input, *dims, **kwargs):
    """Reverse the order of elements along ``dims`` (copying)."""
    _check_tensor(input, "flip")
    _dt.refuse_no_kernel(input, "flip_cpu")
    if "dims" in kwargs:
        _int_list_arg(kwargs["dims"], "flip", "dims")
        dims = (kwargs.pop("dims"),)
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    ndim = input._data.ndim
    d = wrap_dims(tuple(dims), ndim, "flip")
    if ndim == 0:
        d = ()
    return _apply(flip_op, (input,), {"dims": d})


@public(name="flip", method=False)
def _flip_function(input, dims):
    """Reverse the order of elements of ``input`` along ``dims`` (one sequence of ints)."""
    _int_list_arg(dims, "flip", "dims", 2)
    return flip(input, dims)


@public
def fliplr(input):
    """Flip dim 1 (left/right) of a tensor of at least 2 dims."""
    _check_tensor(input, "fliplr")
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@public
def flipud(input):
    """Flip dim 0 (up/down) of a tensor of at least 1 dim."""
    _check_tensor(input, "flipud")
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_kernel(xp, a, *, shifts, dims):
    if dims is None:
        return xp.roll(a.reshape(-1), shifts[0]).reshape(a.shape)
    return xp.ascontiguousarray(xp.roll(a, shifts, dims))


roll_op = Op("roll", _roll_kernel, linear=True)


@roll_op.defvjp
def _roll_vjp(g, _a, *, shifts, dims):
    return _apply(roll_op, (g,), {"shifts": tuple(-s for s in shifts), "dims": dims})


@public
def roll(input, shifts, dims=None):
    """Shift elements cyclically by ``shifts`` along ``dims`` (of the flattened tensor when
    ``dims`` is None)."""
    _check_tensor(input, "roll")
    shifts = (shifts,) if isinstance(shifts, _int_types) else tuple(
        operator.index(s) for s in shifts)
    ndim = input._data.ndim
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return _apply(roll_op, (input,), {"shifts": shifts, "dims": None})
    dims = (dims,) if isinstance(dims, _int_types) else tuple(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dims = tuple(wrap_dim(d, ndim, "roll") for d in dims)
    return _apply(roll_op, (input,), {"shifts": shifts, "dims": dims})


@public
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dim towards
    the second."""
    _check_tensor(input, "rot90")
    dims = tuple(dims)
    ndim = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {ndim}")
    d0, d1 = (wrap_dim(d, ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k = operator.index(k) % 4
    if k == 1:
        return flip(input, (d1,)).transpose(d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return flip(input, (d0,)).transpose(d0, d1)
    from .conversion import clone

    return clone(input, memory_format=_layout.contiguous_format)


# ------------------------------------------------------------------------------------------------
# tril / triu


def _tri_kernel(xp, a, *, diagonal, upper):
    n, m = a.shape[-2], a.shape[-1]
    keep = xp.tri(n, m, diagonal - 1 if upper else diagonal, dtype=bool)
    if upper:
        keep = ~keep
    return xp.ascontiguousarray(xp.where(keep, a, xp.zeros((), a.dtype)))


def _tri_vjp(g, _a, *, diagonal, upper):
    return _apply(triu_op if upper else tril_op, (g,), {"diagonal": diagonal, "upper": upper})


tril_op = Op("tril", _tri_kernel, vjp=_tri_vjp, linear=True)
triu_op = Op("triu", _tri_kernel, vjp=_tri_vjp, linear=True)


def _tri(name, input, diagonal, upper, out):
    _check_tensor(input, name)
    _dt.refuse_no_kernel(input, name)
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    return _apply(triu_op if upper else tril_op, (input,),
                  {"diagonal": operator.index(diagonal), "upper": upper}, out=out)


@public(inplace=True)
def tril(input, diagonal=0, *, out=None):
    """The lower triangle of the matrices in the last two dims (elements above the
    ``diagonal``-th diagonal are zeroed)."""
    return _tri("tril", input, diagonal, False, out)


@public(inplace=True)
def triu(input, diagonal=0, *, out=None):
    """The upper triangle of the matrices in the last two dims (elements below the
    ``diagonal``-th diagonal are zeroed)."""
    return _tri("triu", input, diagonal, True, out)


# ------------------------------------------------------------------------------------------------
# diag_embed / diag / diagflat


def _diag_embed_kernel(xp, a, *, offset, dim1, dim2):
    from .shape import _diagonal_kernel

    n = a.shape[-1] + abs(offset)
    shape = list(a.shape[:-1])
    lo, hi = min(dim1, dim2), max(dim1, dim2)
    shape.insert(lo, n)
    shape.insert(hi, n)
    z = xp.zeros(shape, a.dtype)
    _diagonal_kernel(xp, z, offset=offset, dim1=dim1, dim2=dim2)[...] = a
    return z


diag_embed_op = Op("diag_embed", _diag_embed_kernel, linear=True)


@diag_embed_op.defvjp
def _diag_embed_vjp(g, _a, *, offset, dim1, dim2):
    return diagonal(g, offset, dim1, dim2)


@public
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices (in dims ``dim1``, ``dim2`` of the result) whose ``offset``-th diagonals hold
    the last dim of ``input``; zeros elsewhere."""
    _check_tensor(input, "diag_embed")
    ndim = input._data.ndim + 1
    d1 = wrap_dim(dim1, ndim, "diag_embed")
    d2 = wrap_dim(dim2, ndim, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if ndim == 1:
        input = reshape(input, (1,))
    return _apply(diag_embed_op, (input,), {"offset": operator.index(offset), "dim1": d1,
                                            "dim2": d2})


@public
def diag(input, diagonal=0, *, out=None):
    """1-D input: the square matrix with ``input`` on its ``diagonal``-th diagonal. 2-D
    input: a copy of its ``diagonal``-th diagonal."""
    _check_tensor(input, "diag")
    ndim = input._data.ndim
    if ndim == 1:
        r = diag_embed(input, diagonal, 0, 1)
    elif ndim == 2:
        from .conversion import clone

        r = clone(_diagonal(input, diagonal), memory_format=_layout.contiguous_format)
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {ndim}D")
    return r if out is None else _dispatch.write_out("diag", out, r)


_diagonal = diagonal


@public
def diagflat(input, offset=0):
    """The square matrix with the flattened ``input`` on its ``offset``-th diagonal."""
    _check_tensor(input, "diagflat")
    return diag(view(input.contiguous(), -1), offset)
