"""Masked ops, take / put / take_along_dim, and nonzero / argwhere.

Split from indexing.py (which holds ``t[idx]``, ``t[idx] = v``, index_put and the helpers
shared by the family); gather/scatter and the ``index_*`` ops are in scatter.py.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import holds_values
from .._core.tensor import Tensor, wrap
from ._registry import Op, out_overloads, public
from ._xp_compat import ufunc_at, where
from .indexing import (
    _scalar_for,
    check_bounds,
    check_index_dtype,
    check_no_overlap,
    check_tensor,
    inplace_or_not,
    linear_jvp,
    same_device,
    type_name,
    zeros_of,
)


# ------------------------------------------------------------------------------------------------
# masked_fill / masked_select / masked_scatter


#: the C++ element types masked_fill's refusal names a mask's dtype by (masked_scatter's
#: names it as the dtype's own name, ``Byte``)
_CPP_ELEMENT = {"uint8": "unsigned char", "int8": "signed char", "int16": "short int",
                "int32": "int", "int64": "long int", "uint16": "short unsigned int",
                "uint32": "unsigned int", "uint64": "long unsigned int",
                "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                "float64": "double", "complex64": "c10::complex<float>",
                "complex128": "c10::complex<double>"}


def _check_mask(op_name, mask):
    check_tensor(op_name, mask, "mask")
    if mask._data.dtype != np.bool_:
        name = type_name(mask._data.dtype)
        if op_name == "masked_fill_":
            name = _CPP_ELEMENT.get(str(mask.dtype).split(".")[-1], name.lower())
        raise RuntimeError(f"{op_name} only supports boolean masks, but got mask with dtype "
                           f"{name}")


def _broadcast(op_name, *shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise RuntimeError(
            f"{op_name}: the shapes {[list(s) for s in shapes]} cannot be broadcast together "
            "(sizes must match or be 1 in each dimension, aligned from the right)") from None


def _fill_value(xp, a, value, vt):
    v = vt if vt is not None else xp.asarray(_scalar_for(a, value))
    if v.dtype != a.dtype:
        v = (v.real if v.dtype.kind == "c" and a.dtype.kind != "c" else v).astype(a.dtype)
    return v


def _masked_fill_kernel(xp, a, mask, vt, *, value):
    # out of place, torch fills a contiguous clone whatever the input's layout (a transposed
    # or channels-last input too), so programs may ``view`` the result
    out = where(xp, mask, _fill_value(xp, a, value, vt), a)  # NOTE [ Portable array code ]
    # (never of a 0-d result: ascontiguousarray would make it 1-d)
    return xp.ascontiguousarray(out) if out.ndim and not out.flags.c_contiguous else out


def _masked_fill_into(xp, out, mask, vt, *, value):
    xp.copyto(out, _fill_value(xp, out, value, vt), where=mask)


def _masked_fill_vjp(g, _a, mask, vt, *, value):
    ga = g.masked_fill(mask, 0)
    gv = None if vt is None else g.masked_fill(mask.logical_not(), 0).sum()
    return ga, None, gv


masked_fill_op = Op("masked_fill", _masked_fill_kernel, vjp=_masked_fill_vjp)
linear_jvp(masked_fill_op, (0, 2), ('value',))


def _masked_fill_args(op_name, input, mask, value):
    check_tensor(op_name, input, "input")
    _check_mask("masked_fill_", mask)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s).")
        mask, value = same_device(op_name, input, mask, value)
        _value_fits(value, input)
        return mask, value, None
    if not isinstance(value, (int, float, bool, complex, np.number, np.bool_)):
        raise TypeError(f"{op_name}(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    (mask,) = same_device(op_name, input, mask)
    _value_fits(value, input)
    return mask, None, value


def _value_fits(value, input):
    """The fill value (a number, or a 0-dim tensor torch reads as one) must fit ``input``'s
    dtype: int8 with 1000, float16 with 1e6 raise as torch's checked conversion does."""
    from .creation import check_value_fits

    if isinstance(value, Tensor):
        from ..func._batch_tensor import BatchedTensor

        if isinstance(value, BatchedTensor) or not holds_values(value._data):
            return  # (a value batched by vmap: one per sample, read by the fill itself)
        value = value.item()
    check_value_fits(value, input.dtype)


@public
def masked_fill(input, mask, value):
    """``input`` with ``value`` where the bool ``mask`` (broadcast) is True."""
    mask, vt, value = _masked_fill_args("masked_fill", input, mask, value)
    _dt.refuse_no_kernel(input, "masked_fill")
    _broadcast("masked_fill", input._data.shape, mask._data.shape)
    return _dispatch.apply(masked_fill_op, (input, mask, vt), {"value": value})


@public(name="masked_fill_", function=False)
def masked_fill_(self, mask, value):
    """In-place :func:`masked_fill`; ``mask`` must broadcast to ``self``'s shape."""
    mask, vt, value = _masked_fill_args("masked_fill_", self, mask, value)
    _dt.refuse_no_kernel(self, "masked_fill")
    shape = self._data.shape
    b = _broadcast("masked_fill_", shape, mask._data.shape)
    if b != shape:
        raise RuntimeError(f"masked_fill_: output with shape {list(shape)} doesn't match the "
                           f"broadcast shape {list(b)}")
    return inplace_or_not(masked_fill_op, "masked_fill_", self, (self, mask, vt),
                          {"value": value}, _masked_fill_into)


def _masked_select_kernel(xp, a, mask, *, shape):
    return xp.broadcast_to(a, shape)[xp.broadcast_to(mask, shape)]


def _masked_select_vjp(g, _a, mask, *, shape):
    return _dispatch.apply(masked_scatter_op, (zeros_of(shape, g), mask, g), {}), None


masked_select_op = Op("masked_select", _masked_select_kernel, vjp=_masked_select_vjp)
linear_jvp(masked_select_op, (0,))


@public
def masked_select(input, mask, *, out=None):
    """The 1-D tensor of ``input``'s elements where ``mask`` is True (both broadcast)."""
    check_tensor("masked_select", input, "input")
    check_tensor("masked_select", mask, "mask")
    if mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    (mask,) = same_device("masked_select", input, mask)
    shape = _broadcast("masked_select", input._data.shape, mask._data.shape)
    return _dispatch.apply(masked_select_op, (input, mask), {"shape": shape}, out=out)


def _masked_scatter_into(xp, out, mask, src):
    m = xp.broadcast_to(mask, out.shape)
    n = int(m.sum())
    out[m] = src.reshape(-1)[:n]


def _masked_scatter_kernel(xp, a, mask, src):
    shape = np.broadcast_shapes(a.shape, mask.shape)
    out = xp.array(xp.broadcast_to(a, shape), copy=True)
    _masked_scatter_into(xp, out, mask, src)
    return out


def _masked_scatter_vjp(g, _a, mask, src):
    ga = g.masked_fill(mask, 0)
    picked = masked_select(g, mask)
    gs = _dispatch.apply(pad_flat_op, (picked,), {"shape": src._data.shape})
    return ga, None, gs


masked_scatter_op = Op("masked_scatter", _masked_scatter_kernel, vjp=_masked_scatter_vjp)
masked_scatter_op.shape_only = (2,)  # the formula reads only the source's shape
linear_jvp(masked_scatter_op, (0, 2))


def _pad_flat_kernel(xp, x, *, shape):
    z = xp.zeros(int(np.prod(shape)), x.dtype)
    z[:x.size] = x.reshape(-1)
    return z.reshape(shape)


def _pad_flat_vjp(g, x, *, shape):
    return _dispatch.apply(crop_flat_op, (g,), {"n": x._data.size, "shape": x._data.shape})


def _crop_flat_kernel(xp, g, *, n, shape):
    return g.reshape(-1)[:n].reshape(shape)


def _crop_flat_vjp(gg, g, *, n, shape):
    return _dispatch.apply(pad_flat_op, (gg,), {"shape": g._data.shape})


# masked_scatter's source gradient: the first n entries of the flattened source get the
# selected gradient, the rest zeros. The two ops are each other's vjp.
pad_flat_op = Op("_pad_flat", _pad_flat_kernel, vjp=_pad_flat_vjp, linear=True)
crop_flat_op = Op("_crop_flat", _crop_flat_kernel, vjp=_crop_flat_vjp, linear=True)


def _masked_scatter_args(op_name, input, mask, source):
    check_tensor(op_name, input, "input")
    _check_mask("masked_scatter_", mask)
    check_tensor(op_name, source, "source")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"masked_scatter: expected self and source to have same dtypes but got "
            f"{type_name(input._data.dtype)} and {type_name(source._data.dtype)}")
    mask, source = same_device(op_name, input, mask, source)
    shape = _broadcast(op_name, input._data.shape, mask._data.shape)
    n = int(_dispatch.xp_of(mask._data).broadcast_to(mask._data, shape).sum()) \
        if holds_values(mask._data) else 0
    if n > source._data.size:
        raise RuntimeError(f"{op_name}: Number of elements of source < number of ones in mask "
                           f"({source._data.size} < {n})")
    return mask, source, shape


@public
def masked_scatter(input, mask, source):
    """``input`` with the leading elements of ``source`` copied, in order, where ``mask``
    (broadcast) is True."""
    mask, source, _ = _masked_scatter_args("masked_scatter", input, mask, source)
    return _dispatch.apply(masked_scatter_op, (input, mask, source), {})


@public(name="masked_scatter_", function=False)
def masked_scatter_(self, mask, source):
    """In-place :func:`masked_scatter`; ``mask`` must broadcast to ``self``'s shape."""
    mask, source, shape = _masked_scatter_args("masked_scatter_", self, mask, source)
    if shape != self._data.shape:
        raise RuntimeError(f"masked_scatter_: output with shape {list(self._data.shape)} "
                           f"doesn't match the broadcast shape {list(shape)}")
    return inplace_or_not(masked_scatter_op, "masked_scatter_", self, (self, mask, source), {},
                          _masked_scatter_into)


# ------------------------------------------------------------------------------------------------
# take / put


def _flat_bounds(idx, numel):
    if idx.size and holds_values(idx) and (int(idx.min()) < -numel or int(idx.max()) >= numel):
        flat = idx.reshape(-1)
        bad = int(flat[((flat < -numel) | (flat >= numel)).argmax()])
        raise IndexError(
            f"out of range: tried to access index {bad} on a tensor of {numel} elements.")


def _take_kernel(xp, a, idx, *, shape):
    return a.reshape(-1)[idx]


def _take_vjp(g, _a, idx, *, shape):
    return put(zeros_of(shape, g), idx, g, accumulate=True), None


take_op = Op("take", _take_kernel, vjp=_take_vjp)
linear_jvp(take_op, (0,))


def _check_long(op_name, index):
    check_tensor(op_name, index, "index")
    if index._data.dtype != np.int64:
        raise RuntimeError(f"{op_name}(): Expected a long tensor for index, but got "
                           f"{type_name(index._data.dtype)}")


@public
def take(input, index, *, out=None):
    """``input`` read as 1-D at ``index`` (negative entries count from the end); the result
    has ``index``'s shape."""
    check_tensor("take", input, "input")
    _check_long("take", index)
    (index,) = same_device("take", input, index)
    _flat_bounds(index._data, input._data.size)
    return _dispatch.apply(take_op, (input, index), {"shape": input._data.shape}, out=out)


def _put_into(xp, out, idx, src, *, accumulate):
    if out.flags.c_contiguous:
        _put_flat(xp, out.reshape(-1), idx, src, accumulate)  # a view: writes land in out
        return
    # ``out`` is not contiguous: work on a contiguous copy and write it back
    flat = xp.ascontiguousarray(out).reshape(-1)
    _put_flat(xp, flat, idx, src, accumulate)
    out[...] = flat.reshape(out.shape)


def _put_flat(xp, flat, idx, src, accumulate):
    if accumulate:
        ufunc_at(xp, "add", flat, idx.reshape(-1), src.reshape(-1))
    else:
        flat[idx.reshape(-1)] = src.reshape(-1)


def _put_kernel(xp, a, idx, src, *, accumulate):
    out = xp.array(a, copy=True, order="C")
    _put_flat(xp, out.reshape(-1), idx, src, accumulate)
    return out


def _put_vjp(g, _a, idx, src, *, accumulate):
    ga = g if accumulate else put(g, idx, zeros_of(src._data.shape, g))
    gs = take(g, wrap(idx._data.reshape(src._data.shape)))
    return ga, None, gs


put_op = Op("put", _put_kernel, vjp=_put_vjp)
linear_jvp(put_op, (0, 2))


def _put_args(op_name, input, index, source):
    check_tensor(op_name, input, "input")
    _check_long(op_name, index)
    check_tensor(op_name, source, "source")
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"{op_name}(): self and source expected to have the same dtype, but got "
            f"self.dtype = {type_name(input._data.dtype)} and source.dtype = "
            f"{type_name(source._data.dtype)}")
    if source._data.size != index._data.size:
        raise IndexError(
            f"{op_name}(): Expected source and index to have the same number of elements, but "
            f"got source.numel() = {source._data.size}, index.numel() = {index._data.size}")
    index, source = same_device(op_name, input, index, source)
    _flat_bounds(index._data, input._data.size)
    return index, source


@public
def put(input, index, source, accumulate=False):
    """Out-of-place :meth:`Tensor.put_`."""
    index, source = _put_args("put", input, index, source)
    return _dispatch.apply(put_op, (input, index, source), {"accumulate": bool(accumulate)})


@public(name="put_", function=False)
def put_(self, index, source, accumulate=False):
    """Write ``source`` into ``self`` read as 1-D at ``index`` (``+=`` with accumulate)."""
    index, source = _put_args("put_", self, index, source)
    check_no_overlap("put_", self, source)
    return inplace_or_not(put_op, "put_", self, (self, index, source),
                          {"accumulate": bool(accumulate)}, _put_into)


# ------------------------------------------------------------------------------------------------
# take_along_dim


def _take_along_kernel(xp, a, idx, *, dim, shape):
    if dim is None:
        return a.reshape(-1)[idx.reshape(-1)]
    ab, ib = _along_broadcast(xp, a, idx, dim)
    return xp.take_along_axis(ab, ib, axis=dim)


def _along_broadcast(xp, a, idx, dim):
    """Broadcast ``a`` and ``idx`` against each other in every dim but ``dim``."""
    sa, si = list(a.shape), list(idx.shape)
    sa[dim] = si[dim] = 1
    b = list(np.broadcast_shapes(tuple(sa), tuple(si)))
    ta, ti = list(b), list(b)
    ta[dim], ti[dim] = a.shape[dim], idx.shape[dim]
    return xp.broadcast_to(a, tuple(ta)), xp.broadcast_to(idx, tuple(ti))


def _take_along_vjp(g, _a, idx, *, dim, shape):
    from .scatter import scatter_add

    # the index through ops, not its array: under vmap that is one example's
    if dim is None:
        return put(zeros_of(shape, g), idx.reshape(-1), g, accumulate=True), None
    sa = list(shape)
    si = list(idx._data.shape)
    sa[dim] = si[dim] = 1
    b = list(np.broadcast_shapes(tuple(sa), tuple(si)))
    b[dim] = shape[dim]
    ti = list(b)
    ti[dim] = idx._data.shape[dim]
    return scatter_add(zeros_of(tuple(b), g), dim, idx.expand(tuple(ti)), g), None


take_along_dim_op = Op("take_along_dim", _take_along_kernel, vjp=_take_along_vjp)
linear_jvp(take_along_dim_op, (0,))


@public
def take_along_dim(input, indices, dim=None, *, out=None):
    """Pick values of ``input`` along ``dim`` at ``indices`` (the two broadcast in the other
    dims); with ``dim=None`` both are read as 1-D."""
    from .._core.checks import wrap_dim

    check_tensor("take_along_dim", input, "input")
    check_tensor("take_along_dim", indices, "indices")
    if dim is None:  # torch gathers from the flattened input: gather's dtypes and message
        if indices.numel() == 0 and indices.dtype.name != "int64":
            indices = indices.long()  # (its gather of nothing checks no dtype)
        check_index_dtype("gather", indices, "gather(): Expected dtype int32/int64 for index")
    elif indices.dtype.name != "int64":  # along a dim: Long only, int32 refused too
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype.scalar_name}")
    (indices,) = same_device("take_along_dim", input, indices)
    a, i = input._data, indices._data
    if dim is None:
        check_bounds("take_along_dim()", i, a.size, 0)
    else:
        if a.ndim != i.ndim:
            raise RuntimeError(
                "torch.take_along_dim(): input and indices should have the same number of "
                f"dimensions, but got {a.ndim} dimensions for input, and {i.ndim} dimensions "
                "for indices")
        dim = wrap_dim(dim, a.ndim, "take_along_dim")
        sa, si = list(a.shape), list(i.shape)
        sa[dim] = si[dim] = 1
        _broadcast("take_along_dim", tuple(sa), tuple(si))
        n = a.shape[dim] if a.ndim else 1
        if i.size and n == 0:
            raise RuntimeError("ZeroDivisionError")
        if i.size and _dispatch.intercept and _dispatch.state.modes:
            # under a transform (vmap: ``i`` is one example's) the same, with an op
            indices = indices.remainder(n)
        elif i.size and holds_values(i) and ((i < 0) | (i >= n)).any():
            # along a dim PyTorch reads an index modulo the dim's size, floor-wise (-1 and
            # n - 1 and 2n - 1 all pick the last element); only dim=None checks bounds
            indices = wrap(_dispatch.xp_of(i).mod(i, n))
    return _dispatch.apply(take_along_dim_op, (input, indices),
                           {"dim": dim, "shape": a.shape}, out=out)


# ------------------------------------------------------------------------------------------------
# nonzero / argwhere


def _nonzero_kernel(xp, a):
    return xp.argwhere(a).astype(np.int64, copy=False)


nonzero_op = Op("nonzero", _nonzero_kernel, differentiable=False)


@public
@out_overloads(lambda as_tuple, **_: not as_tuple, lambda name: RuntimeError(
    "nonzero does not support the out kwarg when as_tuple is True"))
def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-D tensor per dim (a 0-dim input counts as 1-D)."""
    check_tensor("nonzero", input, "input")
    _dt.refuse_no_kernel(input, "nonzero_count_cpu")
    if as_tuple:
        idx = _dispatch.apply(nonzero_op, (input if input.dim() else input.reshape(1),), {})
        return tuple(c.clone() for c in idx.unbind(1))  # separate tensors, as in PyTorch
    return _dispatch.apply(nonzero_op, (input,), {}, out=out)


@public
def argwhere(input):
    """Indices of the non-zero elements as an (n, ndim) int64 tensor."""
    check_tensor("argwhere", input, "input")
    return _dispatch.apply(nonzero_op, (input,), {})


@public
def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the non-zero elements as a ``(size, ndim)`` int64 tensor of fixed
    shape: the first ``size`` rows of :func:`nonzero`, padded with ``fill_value`` rows.

    Args:
        input (Tensor): the tensor searched.
        size (int): the number of rows of the result.
        fill_value (int): the value padding rows take. Default: -1.

    Returns:
        Tensor

    Example::

        >>> ember.nonzero_static(ember.tensor([0, 1, 1]), size=3)
        tensor([[ 1],
                [ 2],
                [-1]])
    """
    check_tensor("nonzero_static", input, "input")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    if input.is_meta:  # the shape is static: meta tensors get it without values
        from .creation import empty_strided

        # column-major, as PyTorch's meta kernel lays it out
        return empty_strided((size, input.dim()), (1, size), dtype=_dt.int64, device="meta")
    idx = _dispatch.apply(nonzero_op, (input,), {})
    n = idx.shape[0]
    if n >= size:
        return idx[:size].clone()
    from .creation import full
    from .join import cat

    pad = full((size - n, input.dim()), fill_value, dtype=idx.dtype, device=idx.device)
    return cat([idx, pad])
