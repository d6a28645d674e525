"""Gather and scatter: gather, scatter(_add/_reduce), index_select, index_add/copy/fill/reduce.

Two index shapes appear here. gather/scatter take an ``index`` with as many dims as the input
(entry ``index[i][j][k]`` names a position along ``dim``; the other coordinates are the
entry's own); the ``index_*`` ops take a 1-D ``index`` naming whole slices along ``dim``.

Kernels write with NumPy's fancy assignment (last write wins on duplicate indices, which
PyTorch leaves unspecified) and reduce with ``ufunc.at`` (``add.at``, ``maximum.at``, ...),
which applies every duplicate. A 0-dim tensor is treated as 1-D with one element, as in
PyTorch.

Each kernel is written as ``_<op>_into(xp, out, ...)``, which mutates ``out``: the in-place
form runs it on ``self``'s array directly when autograd is not recording, the out-of-place
kernel on a copy (``inplace_or_not`` in indexing.py).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import holds_values, wrap_dim
from .._core.tensor import Tensor, wrap
from ._registry import Op, public
from ._xp_compat import ufunc_at
from .masked import _value_fits
from .indexing import (
    _scalar_for,
    check_bounds,
    check_index_dtype,
    check_no_overlap,
    check_tensor,
    getitem_backward_op,
    inplace_or_not,
    linear_jvp,
    same_device,
    type_name,
    zeros_of,
)

_SCALARS = (int, float, bool, complex, np.number, np.bool_)


def _as1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _pad_to(x, shape):
    """``x`` placed at the start of a zero tensor of ``shape`` (differentiable)."""
    if tuple(x._data.shape) == tuple(shape):
        return x
    idx = tuple(slice(0, n) for n in x._data.shape) + (Ellipsis,)
    return _dispatch.apply(getitem_backward_op, (x,), {"idx": idx, "shape": tuple(shape)})


def _const(x):
    return wrap(x)


# ------------------------------------------------------------------------------------------------
# gather


def _gather_kernel(xp, a, idx, *, dim, shape):
    if a.ndim <= 1:
        return _as1d(a)[idx]
    return a[_scatter_key(xp, idx, dim)]


def _gather_vjp(g, _a, idx, *, dim, shape):
    return scatter_add(zeros_of(shape, g), dim, idx, g), None


gather_op = Op("gather", _gather_kernel, vjp=_gather_vjp)
linear_jvp(gather_op, (0,))


def _check_scatter_shapes(op_name, self, dim, index, src=None):
    """PyTorch's shape rules for gather/scatter: same number of dims, and index no larger
    than self (apart from ``dim``) and than src (everywhere). Empty indexes skip them."""
    s, i = self._data, index._data
    si, ii = _as1d(s).shape, _as1d(i).shape
    if i.size == 0:
        return
    if len(ii) != len(si):
        # (PyTorch's words: gather names its input, the scatters self; no counts)
        which = "input" if op_name.startswith("gather") else "self"
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {which} "
                           "tensor")
    if src is not None and len(_as1d(src._data).shape) != len(ii):
        raise RuntimeError(f"{op_name}(): Index tensor must have the same number of dimensions "
                           f"as src tensor (got {i.ndim} and {src._data.ndim})")
    for d in range(len(ii)):
        if d != dim and ii[d] > si[d] or src is not None and ii[d] > _as1d(src._data).shape[d]:
            msg = (f"{op_name}(): Expected index {list(i.shape)} to be no larger than self "
                   f"{list(s.shape)} apart from dimension {dim}")
            if src is not None:
                msg += f" and to be no larger than src {list(src._data.shape)}"
            raise RuntimeError(msg)


def _index_arg(op_name, index):
    """The index of a gather or scatter: torch checks its dtype only when there is something
    to gather or scatter, so an empty index of any dtype stands as an empty int64 one."""
    check_tensor(op_name, index, "index")
    if index._data.size == 0 and index._data.dtype.kind not in "iu":
        return wrap(_dispatch.xp_of(index._data).zeros(index._data.shape, np.int64))
    if index._data.size == 0 and index._data.dtype not in (np.int32, np.int64):
        return wrap(index._data.astype(np.int64))
    # (torch 2.13's words name gather or scatter, whichever form, and not the dtype)
    kind = "gather" if op_name.startswith("gather") else "scatter"
    check_index_dtype(op_name, index, f"{kind}(): Expected dtype int32/int64 for index")
    return index


def _gather_args(op_name, input, dim, index):
    check_tensor(op_name, input, "input")
    index = _index_arg(op_name, index)
    (index,) = same_device(op_name, input, index)
    dim = wrap_dim(dim, input._data.ndim, op_name)
    _check_scatter_shapes(op_name, input, dim, index)
    check_bounds(op_name + "()", index._data, _as1d(input._data).shape[dim], dim)
    return dim, index


@public
def gather(input, dim, index, *, sparse_grad=False, out=None):
    """Values of ``input`` along ``dim`` at ``index``: ``out[i][j] = input[index[i][j]][j]``
    for ``dim=0``. The result has ``index``'s shape."""
    dim, index = _gather_args("gather", input, dim, index)
    _dt.refuse_no_kernel(input, "gather_expanded_index")
    return _dispatch.apply(gather_op, (input, index), {"dim": dim, "shape": input._data.shape},
                           out=out)


# ------------------------------------------------------------------------------------------------
# scatter / scatter_add / scatter_reduce

_UFUNC = {"add": "add", "sum": "add", "mean": "add", "multiply": "multiply", "prod": "multiply",
          "amax": "maximum", "amin": "minimum"}


def _scatter_key(xp, i, dim):
    """The fancy-index tuple addressing ``out[i[...]]`` along ``dim`` (open grids elsewhere)."""
    nd = i.ndim
    key = []
    for d in range(nd):
        if d == dim:
            key.append(i)
        else:
            key.append(_grid(xp, i.shape[d], nd, d))
    return tuple(key)


_grids: dict = {}


def _grid(xp, n, nd, d):
    """``arange(n)`` shaped to run along dim ``d`` of ``nd`` dims; cached, as the same few
    are asked for over and over (read-only, so sharing them is safe)."""
    k = (xp.__name__, n, nd, d)
    g = _grids.get(k)
    if g is None:
        shp = [1] * nd
        shp[d] = n
        g = xp.arange(n).reshape(shp)
        if xp is np:
            g.flags.writeable = False
        if len(_grids) > 512:
            _grids.clear()
        _grids[k] = g
    return g


def _identity(xp, dtype, reduce):
    if reduce in ("sum", "mean", "add"):
        return 0
    if reduce in ("prod", "multiply"):
        return 1
    if dtype.kind == "f" or dtype.kind == "V":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_into(xp, out, idx, src, *, dim, value, reduce, include_self=True, src_shape=None):
    o, i = _as1d(out), _as1d(idx)
    if src is None:
        v = xp.asarray(_scalar_for(out, value)).astype(out.dtype)
    else:
        v = _as1d(src)[tuple(slice(0, n) for n in i.shape)]
    if i.size == 0:
        return
    key = _scatter_key(xp, i, dim)
    if reduce is None:
        o[key] = v
        return
    if not include_self:
        o[key] = _identity(xp, out.dtype, reduce)
    # half-precision sums accumulate in float32 (rounding once at the end), as PyTorch does
    low = o.dtype.itemsize == 2 and o.dtype.kind in "fV" and reduce in ("sum", "mean", "prod")
    work = o.astype(np.float32) if low else o
    ufunc_at(xp, _UFUNC[reduce], work, key, v.astype(np.float32) if low else v)
    if reduce == "mean":
        count = _scatter_count(xp, o.shape, i, dim, include_self)
        if work.dtype.kind in "iu":
            work //= count.astype(work.dtype)
        else:
            work /= count
    if low:
        o[...] = work.astype(o.dtype)


def _scatter_count(xp, shape, i, dim, include_self):
    """How many values (self's included or not) each position of a scatter-mean averages;
    positions nothing reached count 1."""
    count = xp.full(shape, 1 if include_self else 0, np.int64)
    ufunc_at(xp, "add", count, _scatter_key(xp, i, dim), 1)
    count[count == 0] = 1
    return count


def _scatter_kernel(xp, a, idx, src, **params):
    out = a.copy()
    _scatter_into(xp, out, idx, src, **params)
    return out


def _scatter_vjp(g, _a, idx, _src, *, dim, value, reduce, include_self, src_shape):
    ga = g.scatter(dim, idx, 0)
    gs = None if value is not None else _pad_to(g.gather(dim, idx), src_shape)
    return ga, None, gs


def _scatter_add_vjp(g, _a, idx, _src, *, dim, value, reduce, include_self, src_shape):
    ga = g if include_self else g.scatter(dim, idx, 0)
    gs = None if value is not None else _pad_to(g.gather(dim, idx), src_shape)
    return ga, None, gs


def _scatter_reduce_vjp(g, a, idx, src, *, dim, value, reduce, include_self, src_shape, out):
    """Gradients of prod / mean / amax / amin scatter reductions (PyTorch's formulas); the
    prod and extremum partials are ember ops (_reduce_partials), so vmap batches them."""
    if reduce == "mean":
        if _dispatch.intercept and _dispatch.state.modes and g._data.ndim:
            # under a transform (vmap: ``idx._data`` is one example's) the count by ops
            ones = zeros_of(idx._data.shape, g) + 1
            count = (zeros_of(g._data.shape, g) + (1 if include_self else 0)).scatter_add(
                dim, idx, ones)
            gn = g / count.masked_fill(count == 0, 1)
        else:
            xp = _dispatch.xp_of(g._data)
            i = _as1d(idx._data)
            count = _scatter_count(xp, _as1d(g._data).shape, i, dim, include_self)
            gn = g / _const(count.reshape(g._data.shape).astype(g._data.dtype))
        ga = gn if include_self else gn.scatter(dim, idx, 0)
        gs = None if src is None else _pad_to(gn.gather(dim, idx), src_shape)
        return ga, None, gs
    d_self, d_src = _reduce_partials(a, idx, src, dim, value, reduce, include_self, out)
    gs = None if src is None else _pad_to(g.gather(dim, idx) * d_src, src_shape)
    return g * d_self, None, gs


def _members(a, idx, src, value):
    """The members a scatter reduction brings in: ``src``'s leading block shaped as ``idx``,
    or the scalar ``value`` repeated."""
    if src is None:
        return zeros_of(idx._data.shape, a) + value
    if tuple(src.shape) == tuple(idx.shape):
        return src
    return src[tuple(slice(0, n) for n in idx._data.shape)]


def _reduce_partials(a, idx, src, dim, value, reduce, include_self, out):
    """The partial derivatives of a prod / amax / amin scatter reduction's result with
    respect to each member of ``a`` (shaped as ``a``) and of ``src`` (shaped as ``idx``),
    in ember ops only (formulas see one example's data in ``_data`` under vmap).

    amax / amin share the result evenly among the members equal to it. prod: a member x of a
    group whose non-zero members multiply to p and which has z zero members has partial
    p / x if z == 0, p if x is the only zero, else 0 -- written, for a non-zero x beside
    one zero member, as p / x times that member's value (0), and for a zero beside one
    other zero as p times the other's value, so that differentiated again they give the
    exact second derivatives wherever a group has at most two zeros (PyTorch refuses more
    than one zero from ``src``). Positions no member reaches pass ``a`` through (partial
    1)."""
    from .creation import ones_like
    from .pointwise import where

    dt = a.dtype
    s = _members(a, idx, src, value)
    if reduce in ("amax", "amin"):
        self_is = (a == out).to(dt)
        if not include_self:
            self_is = self_is.scatter(dim, idx, 0.0)
        src_is = (s == out.gather(dim, idx)).to(dt)
        n = self_is.scatter_add(dim, idx, src_is)
        # a NaN result equals none of its members: every member's partial is NaN then, as in
        # torch (its share of the gradient is divided by a count of 0), except the positions
        # of self a reduction without include_self wrote over
        none = n == 0
        n = n.clamp_min(1)
        d_self = (self_is / n).masked_fill(none, float("nan"))
        if not include_self:
            d_self = d_self.scatter(dim, idx, 0.0)
        d_src = (src_is / n.gather(dim, idx)).masked_fill(none.gather(dim, idx), float("nan"))
        return d_self, d_src
    a_zero, s_zero = a == 0, s == 0
    params = {"dim": dim, "value": None, "reduce": "prod", "include_self": include_self,
              "src_shape": tuple(idx._data.shape)}
    p = _dispatch.apply(scatter_reduce_op, (a.masked_fill(a_zero, 1), idx,
                                            s.masked_fill(s_zero, 1)), params)
    z = (a_zero.to(dt) if include_self else zeros_of(a._data.shape, a)).scatter_add(
        dim, idx, s_zero.to(dt))
    # the zero members' values per group: 0, but carrying their gradient
    zv = (a.masked_fill(~a_zero, 0) if include_self else zeros_of(a._data.shape, a)).scatter_add(
        dim, idx, s.masked_fill(~s_zero, 0))

    def partial(x, x_zero, zx, px, zvx):
        quotient = px / x.masked_fill(x_zero, 1)
        # a zero beside one other zero: p times that other zero's value (zv less x's own)
        return where(x_zero, where(zx == 1, px, where(zx == 2, px * (zvx - x), 0.0)),
                     where(zx == 0, quotient, where(zx == 1, quotient * zvx, 0.0)))

    d_self = partial(a, a_zero, z, p, zv) if include_self else \
        ones_like(a).scatter(dim, idx, 0.0)
    return d_self, partial(s, s_zero, z.gather(dim, idx), p.gather(dim, idx),
                           zv.gather(dim, idx))


scatter_op = Op("scatter", _scatter_kernel, vjp=_scatter_vjp)
linear_jvp(scatter_op, (0, 2), ('value',))
scatter_add_op = Op("scatter_add", _scatter_kernel, vjp=_scatter_add_vjp)
linear_jvp(scatter_add_op, (0, 2), ('value',))
scatter_reduce_op = Op("scatter_reduce", _scatter_kernel, vjp=_scatter_reduce_vjp)


@scatter_reduce_op.defjvp
def _scatter_reduce_jvp(x_dots, a, idx, src, *, dim, value, reduce, include_self, src_shape,
                        out):
    """Forward mode of the prod / mean / amax / amin scatter reductions: mean is linear (the
    op on the tangents); the others sum each member's tangent times its partial
    (_reduce_partials)."""
    ta, ts = x_dots[0], None if src is None else x_dots[2]
    if ta is None and ts is None:
        return None
    if reduce == "mean":
        if ta is None:
            ta = zeros_of(a._data.shape, a)
        if src is not None and ts is None:
            ts = zeros_of(src._data.shape, src)
        params = {"dim": dim, "value": None if value is None else 0, "reduce": reduce,
                  "include_self": include_self, "src_shape": src_shape}
        return _dispatch.apply(scatter_reduce_op, (ta, idx, ts), params)
    d_self, d_src = _reduce_partials(a, idx, src, dim, value, reduce, include_self, out)
    base = ta * d_self if ta is not None else zeros_of(a._data.shape, a)
    if ts is not None:
        base = base.scatter_add(dim, idx, _members(None, idx, ts, None) * d_src)
    return base


def _op_for(reduce):
    if reduce is None:
        return scatter_op
    if reduce in ("add", "sum"):
        return scatter_add_op
    return scatter_reduce_op


def _scatter_args(op_name, input, dim, index, src, value):
    check_tensor(op_name, input, "input")
    _dt.refuse_no_kernel(input, "scatter_gather_tensor_cpu")
    index = _index_arg(op_name, index)
    if src is not None:
        check_tensor(op_name, src, "src")
        if src._data.dtype != input._data.dtype:
            # (PyTorch's words, scatter() for every form)
            raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
        index, src = same_device(op_name, input, index, src)
    else:
        if isinstance(value, Tensor):
            if value._data.ndim != 0:
                raise RuntimeError(f"{op_name}(): expected a number or a 0-dim tensor as "
                                   f"value, got a tensor of shape {list(value._data.shape)}")
            value = value.item()
        if not isinstance(value, _SCALARS):
            raise TypeError(f"{op_name}(): argument 'value' must be Number, not "
                            f"{type(value).__name__}")
        (index,) = same_device(op_name, input, index)
    dim = wrap_dim(dim, input._data.ndim, op_name)
    _check_scatter_shapes(op_name, input, dim, index, src)
    check_bounds(op_name + "()", index._data, _as1d(input._data).shape[dim], dim)
    return dim, index, src, value


def _split_src(src, value):
    """scatter's 4th argument is a tensor (src) or a number (value)."""
    if src is not None and not isinstance(src, Tensor):
        if value is not None:
            raise TypeError("scatter(): got both a number 'src' and 'value'")
        return None, src
    if src is None and value is None:
        raise TypeError("scatter(): missing argument 'src' or 'value'")
    return src, value


def _check_legacy_reduce(reduce):
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")


def _warn_legacy_reduce(reduce, src):
    """torch's once-per-process deprecation of ``reduce=`` with a tensor ``src``."""
    if reduce is not None and src is not None:
        from .._settings import warn_at_caller

        warn_at_caller("The reduce argument of torch.scatter with Tensor src is deprecated and "
                       "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                       "instead for more reduction options.", once=True)


def _params(dim, value, reduce, include_self, src):
    return {"dim": dim, "value": value, "reduce": reduce, "include_self": include_self,
            "src_shape": None if src is None else tuple(src._data.shape)}


@public
def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None):
    """``input`` with ``src`` (a tensor) or ``value`` (a number) written along ``dim`` at
    ``index``: ``out[index[i][j]][j] = src[i][j]`` for ``dim=0``. ``reduce='add'`` or
    ``'multiply'`` combines with the existing values instead."""
    src, value = _split_src(src, value)
    _check_legacy_reduce(reduce)
    dim, index, src, value = _scatter_args("scatter", input, dim, index, src, value)
    _warn_legacy_reduce(reduce, src)
    return _dispatch.apply(_op_for(reduce), (input, index, src),
                           _params(dim, value, reduce, True, src), out=out)


@public(name="scatter_", function=False)
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place :func:`scatter`."""
    src, value = _split_src(src, value)
    _check_legacy_reduce(reduce)
    dim, index, src, value = _scatter_args("scatter_", self, dim, index, src, value)
    _warn_legacy_reduce(reduce, src)
    check_no_overlap("scatter_", self, src)
    return inplace_or_not(_op_for(reduce), "scatter_", self, (self, index, src),
                          _params(dim, value, reduce, True, src), _scatter_into)


@public
def scatter_add(input, dim, index, src, *, out=None):
    """``input`` with ``src`` added along ``dim`` at ``index`` (duplicates accumulate)."""
    dim, index, src, _ = _scatter_args("scatter_add", input, dim, index, src, None)
    return _dispatch.apply(scatter_add_op, (input, index, src),
                           _params(dim, None, "add", True, src), out=out)


@public(name="scatter_add_", function=False)
def scatter_add_(self, dim, index, src):
    """In-place :func:`scatter_add`."""
    dim, index, src, _ = _scatter_args("scatter_add_", self, dim, index, src, None)
    check_no_overlap("scatter_add_", self, src)
    return inplace_or_not(scatter_add_op, "scatter_add_", self, (self, index, src),
                          _params(dim, None, "add", True, src), _scatter_into)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _check_reduce(reduce, input=None, index=None):
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if reduce == "mean" and isinstance(input, Tensor) and input.dtype.name == "bool":
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented "
                                  "for 'Bool'")
    if reduce in ("amax", "amin") and isinstance(input, Tensor) and input.is_complex() and \
            not (isinstance(index, Tensor) and index.numel() == 0):
        # complex numbers have no order: torch's max / min reductions have no complex loop
        # (an empty index returns before reaching it)
        raise NotImplementedError(f'"scatter_gather_tensor_cpu_reduce_{reduce}" not '
                                  f"implemented for '{input.dtype.scalar_name}'")


@public
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """``input`` with ``src`` reduced into it along ``dim`` at ``index``; ``reduce`` is one of
    'sum', 'prod', 'mean', 'amax', 'amin'. Without ``include_self`` the positions written
    reduce over ``src`` only."""
    _check_reduce(reduce, input, index)
    dim, index, src, _ = _scatter_args("scatter_reduce", input, dim, index, src, None)
    if isinstance(input, Tensor):
        from .nn_checks import no_complex_autograd

        no_complex_autograd("scatter_reduce", input.dtype, input, src)
    return _dispatch.apply(_op_for(reduce), (input, index, src),
                           _params(dim, None, reduce, bool(include_self), src), out=out)


@public(name="scatter_reduce_", function=False)
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`scatter_reduce`."""
    _check_reduce(reduce, self, index)
    dim, index, src, _ = _scatter_args("scatter_reduce_", self, dim, index, src, None)
    check_no_overlap("scatter_reduce_", self, src)
    return inplace_or_not(_op_for(reduce), "scatter_reduce_", self, (self, index, src),
                          _params(dim, None, reduce, bool(include_self), src), _scatter_into)


# ------------------------------------------------------------------------------------------------
# index_select / index_add / index_copy / index_fill / index_reduce (1-D index along dim)


def _moved(a, dim):
    """``a`` with ``dim`` first (a view), 0-dim read as 1-D."""
    a = _as1d(a)
    return a if dim == 0 else _dispatch.xp_of(a).moveaxis(a, dim, 0)


def _index_select_kernel(xp, a, idx, *, dim, shape):
    if a.ndim == 0:
        return a.reshape(1)[idx.reshape(-1)].reshape(())
    return xp.take(a, idx.reshape(-1), axis=dim)


def _index_select_vjp(g, _a, idx, *, dim, shape):
    return index_add(zeros_of(shape, g), dim, idx, g), None


index_select_op = Op("index_select", _index_select_kernel, vjp=_index_select_vjp)
linear_jvp(index_select_op, (0,))


def _check_vector_index(op_name, input, index, dim):
    check_tensor(op_name, input, "input")
    check_index_dtype(op_name, index, f"{op_name}(): Expected dtype int32 or int64 for index")
    if index._data.ndim > 1:
        raise IndexError(f"{op_name}(): Index is supposed to be a vector")
    (index,) = same_device(op_name, input, index)
    return wrap_dim(dim, input._data.ndim, op_name), index


def _index_func_checks(base, input, dim, index, source, dtype_msg):
    """``index_add`` / ``index_reduce``'s checks in torch's order and words (its shared
    meta function, which names the in-place form whichever was called): the dim against
    self's dims, the index a vector of int32/int64, the dtypes, ``dim`` inside the source,
    the index count against the source's size along ``dim``, then the other sizes.
    Returns (dim, index, source)."""
    check_tensor(base, input, "input")
    check_tensor(base, source, "source")
    s, src = input._data, source._data
    dim = wrap_dim(dim, s.ndim, base)
    if not isinstance(index, Tensor):
        check_index_dtype(base, index, f"{base}_(): Expected dtype int32/int64 for index")
    i = index._data
    if i.ndim > 1:
        raise IndexError(f"{base}_(): Index is supposed to be a vector, but got dim: {i.ndim} "
                         f"with type: {index.dtype.scalar_name} and size: {list(i.shape)}")
    if i.dtype not in (np.int32, np.int64):
        raise RuntimeError(f"{base}_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype.scalar_name}")
    if src.dtype != s.dtype:
        raise RuntimeError(dtype_msg.format(self=type_name(s.dtype), source=type_name(src.dtype)))
    (index, source) = same_device(base, input, index, source)
    if dim >= max(src.ndim, 1):
        raise RuntimeError(f"{base}_(): Indexing dim {dim} is out of bounds of the source "
                           f"tensor with dim {src.ndim}")
    n = i.size
    if n != (src.shape[dim] if src.ndim else 1):
        if not src.ndim:  # (torch's message reads the scalar source's size along dim)
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        raise RuntimeError(f"{base}_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src.shape[dim]}), for dim: {dim}")
    ss, srcs = list(s.shape), list(src.shape)
    if ss and srcs:
        del ss[dim], srcs[dim]
    if ss != srcs:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(s.shape)} "
                           f"source.shape = {list(src.shape)}")
    return dim, index, source


def _index_copy_checks(input, dim, index, source):
    """``index_copy``'s checks in torch's order and words (named in place whichever form was
    called): the dim against self's dims, the index's dims, a scalar source's single index or
    the dims matching, the index's dtype, the dtypes, the slice shapes, then the count."""
    check_tensor("index_copy", input, "input")
    check_tensor("index_copy", source, "source")
    s, src = input._data, source._data
    dim = wrap_dim(dim, s.ndim, "index_copy")
    if not isinstance(index, Tensor):
        check_index_dtype("index_copy", index, "index_copy_(): Expected a long tensor for index")
    i = index._data
    if i.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {i.ndim})")
    n = i.size
    if not src.ndim and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one "
                         f"element (got {n})")
    if src.ndim != s.ndim and src.ndim and s.ndim:
        raise IndexError("index_copy_(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({src.ndim}), "
                         f"destination dimensionality ({s.ndim})")
    if i.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{index.dtype.scalar_name}")
    if src.dtype != s.dtype:
        raise RuntimeError(_COPY_DTYPE_MSG.format(self=type_name(s.dtype),
                                                  source=type_name(src.dtype)))
    (index, source) = same_device("index_copy", input, index, source)
    ss, srcs = list(s.shape), list(src.shape)
    if ss:
        del ss[dim]
    if srcs:
        del srcs[dim]
    if ss != srcs:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. "
            f"Destination slice shape: {' '.join(map(str, ss))} at dimension {dim} and source "
            f"slice shape: {' '.join(map(str, srcs))} at dimension 0.")
    if src.ndim and n != src.shape[dim]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                         f"source.size(dim) ({src.shape[dim]})")
    return dim, index, source


@public
def index_select(input, dim, index, *, out=None):
    """The slices of ``input`` along ``dim`` named by the 1-D ``index``, in its order."""
    # torch's order: the dim, the index's dims, a scalar input's single index, its dtype
    check_tensor("index_select", input, "input")
    wrap_dim(dim, input._data.ndim, "index_select")
    if isinstance(index, Tensor) and input._data.ndim == 0 and index._data.ndim <= 1 and \
            index._data.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index._data.size} value(s)")
    dim, index = _check_vector_index("index_select", input, index, dim)
    i, n = index._data, _as1d(input._data).shape[dim]
    if input._data.ndim > 1 and i.size and not n:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    try:
        check_bounds("index_select()", i, n, dim, exc=IndexError)
    except IndexError as e:
        # PyTorch's CPU kernel for dim 1 of a matrix (or higher), and its path for an empty
        # matrix, report a bad index as RuntimeError; its other paths as IndexError
        if input._data.ndim > 1 and (dim == 1 or not input._data.size):
            bad = str(e).split("index ", 1)[1].split(" ", 1)[0]
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} "
                               f"axis_dim={n}") from None
        raise IndexError("index out of range in self") from None
    return _dispatch.apply(index_select_op, (input, index),
                           {"dim": dim, "shape": input._data.shape}, out=out)


def _check_source(op_name, input, dim, index, source, alpha=1):
    """The indices' range, once the shapes passed (``_index_func_checks`` /
    ``_index_copy_checks``)."""
    s, src = input._data, source._data
    ss = _as1d(s).shape
    if not s.size or not src.size:  # nothing is read or written: PyTorch checks nothing
        return source
    # torch's index_add reports a bad index as RuntimeError on its TensorIterator path (the
    # first or last dim of a tensor with two or more, alpha 1) and IndexError elsewhere;
    # index_copy / index_reduce always as IndexError
    exc = IndexError
    if op_name.startswith("index_add") and alpha == 1 and len(ss) > 1 and dim in (
            0, len(ss) - 1):
        exc = RuntimeError
    try:
        # index_copy names itself (in-place, whichever was called); the others' IndexError
        # is their kernel's bare one
        check_bounds("index_copy_()", index._data, ss[dim], dim, exc=exc,
                     named=op_name.startswith("index_copy"))
    except IndexError:
        if not op_name.startswith("index_copy"):
            raise IndexError("index out of range in self") from None
        raise
    return source


def _source_moved(xp, src, dim, ndim):
    return _moved(src.reshape((1,) * max(ndim, 1)) if src.ndim == 0 else src, dim)


def _index_add_into(xp, out, idx, src, *, dim, alpha):
    if not out.size or not src.size:
        return
    s = _source_moved(xp, src, dim, out.ndim)
    if alpha != 1:
        s = s * xp.asarray(alpha).astype(out.dtype)
    ufunc_at(xp, "add", _moved(out, dim), idx.reshape(-1), s)


def _index_add_kernel(xp, a, idx, src, **params):
    out = a.copy()
    _index_add_into(xp, out, idx, src, **params)
    return out


def _index_add_vjp(g, _a, idx, _src, *, dim, alpha):
    gs = g.index_select(dim, idx)
    return g, None, gs if alpha == 1 else gs * alpha


index_add_op = Op("index_add", _index_add_kernel, vjp=_index_add_vjp)
linear_jvp(index_add_op, (0, 2))

_ADD_DTYPE_MSG = "index_add_(): self ({self}) and source ({source}) must have the same scalar type"


@public
def index_add(input, dim, index, source, *, alpha=1, out=None):
    """``input`` with ``alpha * source`` added to the slices along ``dim`` named by ``index``
    (duplicates accumulate)."""
    dim, index, source = _index_func_checks("index_add", input, dim, index, source,
                                            _ADD_DTYPE_MSG)
    source = _check_source("index_add", input, dim, index, source, alpha)
    return _dispatch.apply(index_add_op, (input, index, source), {"dim": dim, "alpha": alpha},
                           out=out)


@public(name="index_add_", function=False)
def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`index_add`."""
    dim, index, source = _index_func_checks("index_add", self, dim, index, source,
                                            _ADD_DTYPE_MSG)
    source = _check_source("index_add_", self, dim, index, source, alpha)
    check_no_overlap("index_add_", self, source)
    return inplace_or_not(index_add_op, "index_add_", self, (self, index, source),
                          {"dim": dim, "alpha": alpha}, _index_add_into)


def _index_copy_into(xp, out, idx, src, *, dim):
    if not src.size:  # nothing to write: torch checks no index
        return
    if not out.size:
        raise RuntimeError(f"index_copy(): cannot copy a source of shape {list(src.shape)} into "
                           f"an empty tensor of shape {list(out.shape)}")
    _moved(out, dim)[idx.reshape(-1)] = _source_moved(xp, src, dim, out.ndim)


def _index_copy_kernel(xp, a, idx, src, *, dim):
    out = a.copy()
    _index_copy_into(xp, out, idx, src, dim=dim)
    return out


def _index_copy_vjp(g, _a, idx, _src, *, dim):
    return g.index_fill(dim, idx, 0), None, g.index_select(dim, idx)


index_copy_op = Op("index_copy", _index_copy_kernel, vjp=_index_copy_vjp)
linear_jvp(index_copy_op, (0, 2))

_COPY_DTYPE_MSG = ("index_copy_(): self and source expected to have the same dtype, but got "
                   "(self) {self} and (source) {source}")


@public
def index_copy(input, dim, index, source, *, out=None):
    """``input`` with the slices along ``dim`` named by ``index`` replaced by ``source``."""
    dim, index, source = _index_copy_checks(input, dim, index, source)
    source = _check_source("index_copy", input, dim, index, source)
    return _dispatch.apply(index_copy_op, (input, index, source), {"dim": dim}, out=out)


@public(name="index_copy_", function=False)
def index_copy_(self, dim, index, source):
    """In-place :func:`index_copy`."""
    dim, index, source = _index_copy_checks(self, dim, index, source)
    source = _check_source("index_copy_", self, dim, index, source)
    check_no_overlap("index_copy_", self, source)
    return inplace_or_not(index_copy_op, "index_copy_", self, (self, index, source),
                          {"dim": dim}, _index_copy_into)


def _index_fill_into(xp, out, idx, vt, *, dim, value):
    v = vt if vt is not None else xp.asarray(_scalar_for(out, value))
    if v.dtype != out.dtype:
        v = (v.real if v.dtype.kind == "c" and out.dtype.kind != "c" else v).astype(out.dtype)
    _moved(out, dim)[idx.reshape(-1)] = v


def _index_fill_kernel(xp, a, idx, vt, **params):
    out = a.copy()
    _index_fill_into(xp, out, idx, vt, **params)
    return out


def _index_fill_vjp(g, _a, idx, vt, *, dim, value):
    gv = None
    if vt is not None:  # each filled slice once, however often the index names it
        i = idx._data
        gv = g.index_select(dim, wrap(_dispatch.xp_of(i).unique(i))).sum()
    return g.index_fill(dim, idx, 0), None, gv


index_fill_op = Op("index_fill", _index_fill_kernel, vjp=_index_fill_vjp)
linear_jvp(index_fill_op, (0, 2), ('value',))


def _long_index(op_name, index, exc, message):
    """index_copy and index_fill take int64 indices only (PyTorch's other index ops also
    int32): raise ``exc`` with ``message`` (formatted with the dtype's name) otherwise."""
    if isinstance(index, Tensor) and index._data.dtype != np.int64:
        raise exc(message.format(index.dtype.scalar_name))


def _index_fill_args(op_name, input, dim, index, value):
    if isinstance(value, Tensor) and value._data.ndim != 0:  # torch's first check
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s).")
    _long_index(op_name, index, IndexError, "index_fill_(): Expected dtype int64 for index.")
    check_tensor(op_name, input, "input")
    wrap_dim(dim, input._data.ndim, op_name)  # (torch wraps the dim before the index's dims)
    if isinstance(index, Tensor) and index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    dim, index = _check_vector_index(op_name, input, index, dim)
    n = _as1d(input._data).shape[dim]
    if not input._data.size and index._data.size:  # nothing to fill: torch checks no index
        shape = _as1d(input._data).shape
        if not n and math.prod(shape[:dim] + shape[dim + 1:]):
            # torch restrides self to the index's length along dim: only a slice of other
            # sizes all nonzero then needs storage the empty tensor has not
            raise RuntimeError(f"{op_name}(): cannot fill indices of dimension {dim}, which "
                               "has size 0")
        index = wrap(_dispatch.xp_of(index._data).zeros((0,), np.int64))
    check_bounds(op_name + "()", index._data, n, dim, exc=IndexError, negative=True)
    i = index._data
    if i.size and holds_values(i) and int(i.min()) < 0:  # negative entries count from the end
        # (the vjp wants them >= 0)
        index = wrap(_dispatch.xp_of(i).where(i < 0, i + n, i))
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s).")
        (value,) = same_device(op_name, input, value)
        _value_fits(value, input)
        return dim, index, value, None
    if not isinstance(value, _SCALARS):
        raise TypeError(f"{op_name}(): argument 'value' must be Number or Tensor, not "
                        f"{type(value).__name__}")
    _value_fits(value, input)
    return dim, index, None, value


@public
def index_fill(input, dim, index, value):
    """``input`` with the slices along ``dim`` named by ``index`` set to ``value`` (a number
    or 0-dim tensor).

    """
    dim, index, vt, value = _index_fill_args("index_fill", input, dim, index, value)
    return _dispatch.apply(index_fill_op, (input, index, vt), {"dim": dim, "value": value})


@public(name="index_fill_", function=False)
def index_fill_(self, dim, index, value):
    """In-place :func:`index_fill`."""
    dim, index, vt, value = _index_fill_args("index_fill_", self, dim, index, value)
    return inplace_or_not(index_fill_op, "index_fill_", self, (self, index, vt),
                          {"dim": dim, "value": value}, _index_fill_into)


def _expanded_index(index, source, dim):
    """index_reduce's 1-D ``index`` as a scatter index of ``source``'s shape: entry
    ``[..., k, ...]`` (k along ``dim``) is ``index[k]``. A constant, so a raw array is fine."""
    src = _as1d(source._data)
    i = index._data.reshape(-1)
    shape = [1] * src.ndim
    shape[dim] = i.shape[0]
    xp = _dispatch.xp_of(i)
    return wrap(xp.ascontiguousarray(xp.broadcast_to(i.reshape(shape), src.shape)))


_REDUCE_DTYPE_MSG = ("index_reduce_(): self ({self}) and source ({source}) must have the same "
                     "scalar type")


def _index_reduce_args(op_name, input, dim, index, source, reduce, include_self=True):
    from .._settings import warn_at_caller

    # torch's warn-once text (the in-place form and the function share it)
    warn_at_caller("index_reduce() is in beta and the API may change at any time.", once=True)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"{op_name}(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    # torch's order: the dtypes its kernels lack, then the indices (checked even where
    # the slices are empty, negative ones refused), then mean's division of bools
    d = getattr(input, "dtype", None)
    if not include_self and d is not None and (d.is_complex or d.name == "bool"):
        raise NotImplementedError(f'"index_reduce_func_exclude_input_init" not implemented '
                                  f"for '{d.scalar_name}'")
    dim, index, source = _index_func_checks("index_reduce", input, dim, index, source,
                                            _REDUCE_DTYPE_MSG)
    i = index._data
    n = input.shape[dim] if input.dim() else 1
    try:
        source = _check_source(op_name, input, dim, index, source)
        _no_complex_order(reduce, d, i, n)
        if holds_values(i) and i.size and ((i < 0).any() or (i >= n).any()):
            raise IndexError("index out of range in self")
    except IndexError:
        _no_complex_order(reduce, d, i, n)
        if not include_self and not (i < 0).any():
            # torch's kernel without self names an index past the end, and the dim
            check_bounds(op_name, i, n, dim, exc=IndexError)
        raise
    if reduce == "mean" and d.name == "bool":
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")
    return dim, index, source


def _no_complex_order(reduce, d, i, n):
    """index_reduce's amax / amin of complex numbers, which have no order: torch's kernel
    reaches its (missing) complex maximum / minimum after the shapes and dtypes are checked,
    at the first index, once that is found in range (an empty index never reaches it; a
    first index out of ``n``'s range is an IndexError)."""
    if reduce in ("amax", "amin") and d is not None and d.is_complex and i.size:
        if holds_values(i) and not 0 <= int(i.reshape(-1)[0]) < n:
            return
        name = "maximum" if reduce == "amax" else "minimum"
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{d.scalar_name}\'')


@public
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """``input`` with the slices of ``source`` reduced ('prod', 'mean', 'amax', 'amin') into
    the slices along ``dim`` named by ``index``.

    Composite: it is :func:`scatter_reduce` with ``index`` expanded to ``source``'s shape,
    which also gives its gradients.
    """
    dim, index, source = _index_reduce_args("index_reduce", input, dim, index, source, reduce,
                                            include_self)
    from .nn_checks import no_complex_autograd

    no_complex_autograd("index_reduce", input.dtype, input, source)
    src = source if source._data.ndim else source.reshape(1)
    inp = input if input._data.ndim else input.reshape(1)
    r = scatter_reduce(inp, dim, _expanded_index(index, source, dim), src, reduce,
                       include_self=include_self)
    r = r if input._data.ndim else r.reshape(())
    return r if out is None else _dispatch.write_out("index_reduce", out, r)


@public(name="index_reduce_", function=False)
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`."""
    dim, index, source = _index_reduce_args("index_reduce_", self, dim, index, source, reduce,
                                            include_self)
    target = self if self._data.ndim else self.reshape(1)
    src = source if source._data.ndim else source.reshape(1)
    target.scatter_reduce_(dim, _expanded_index(index, source, dim), src, reduce,
                           include_self=include_self)
    return self
