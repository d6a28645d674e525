"""Reductions and scans: sum, mean, prod, std/var, max/min, logsumexp, all/any, cumsum, ...

(Over 1,000 lines because reductions and scans share one set of dim/dtype helpers and the
private differentiable plumbing below -- ``_expand_back``, ``_take_along``, ``_where_zero`` --
that sorting.py reuses; splitting would scatter those across files.)

Every reduction normalises its ``dim`` once (``_dims``: None means "all dims", otherwise a
sorted tuple of non-negative axes) and hands the kernel NumPy-style ``dim`` / ``keepdim``.

NOTE [ Reduction accumulators ]
float16 and bfloat16 reductions accumulate in float32 and round once at the end, as PyTorch
does; integer and bool sums, products and scans accumulate (and return) int64 unless a
``dtype`` is given.

NOTE [ Selection gradients ]
Ops that pick elements (max/min with dim, cummax, sort, topk, median, ...) compute values and
indices in one non-differentiable kernel. When autograd must record, the values are
re-selected from the input with ``_take_along`` (a differentiable gather whose vjp adds the
gradient back at the indices), so those ops need no formula of their own and get higher
derivatives for free. The engine's "first result only" ``out`` contract would otherwise
leave their vjp without the indices.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dispatch, return_types
from .._core import dtype as _dt
from .._core.checks import holds_values, wrap_dim, wrap_dims
from .._core.tensor import Tensor, wrap
from .._kernels._reduce import float_sum, row_sums
from ._memory_format import row_major as _row_major_array, row_major_kernel as _row_major
from ._registry import Op, inplace_from, observing_profiler, public, shown_as
from . import _node_names, _xp_compat
from ._xp_compat import sparse_indices, ufunc_accumulate, ufunc_at, ufunc_reduce
from .indexing import linear_jvp  # forward-mode rules
from .from_data import tensor
from .join import cat
from .linalg import check_out_tuple
from .linalg_norm import _torch_norm
from .pointwise import maximum, minimum, where

_apply = _dispatch.apply

# the named-tuple result types exist from import on (``ember.return_types.max`` ...)
for _n in ("max", "min", "cummax", "cummin"):
    return_types.make(_n, ("values", "indices"))
return_types.make("aminmax", ("min", "max"))
_int_types = (int, np.integer)
_HALF = (np.dtype(np.float16), _dt.bfloat16.np)
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)


# ------------------------------------------------------------------------------------------------
# argument helpers


def _check_tensor(input, name, dtype=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype in _dt._NO_MATH_NP and (dtype is None or input._data.dtype in
                                                 _dt._OPAQUE_NP) and name not in ("all", "any"):
        _refuse_float8(input, name)


# a multi-result op's ``out=`` must be a tuple of tensors before anything else is checked
_check_out_tuple = check_out_tuple


#: PyTorch's kernel names in its refusals of float8 inputs (NOTE [ Float8 dtypes ])
_FLOAT8_KERNELS = {"mean": "sum_cpu", "prod": "prod_out_cpu", "amax": "max_values_cpu",
                   "amin": "min_values_cpu", "max": "max_all", "min": "min_all",
                   "count_nonzero": "nonzero_count_cpu"}


def _refuse_float8(input, name):
    """No reduction runs on float8 (a ``dtype=`` that converts first aside)."""
    d = _dt.from_np[input._data.dtype]
    if name in ("var", "std", "var_mean", "std_mean"):
        raise RuntimeError(f"std_var_all: Unsupported dtype {d.scalar_name}")
    kernel = _FLOAT8_KERNELS.get(name, name + "_cpu")
    raise NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


def _dims(input, dim, name):
    """None (reduce everything) or a sorted tuple of the axes ``dim`` names."""
    if dim is None:
        return None
    if _dispatch.intercept:   # NOTE [ Dims as the caller gave them ] in ember/profiler
        from ..profiler._recorder import note_dims

        note_dims(dim)
    nd = input._data.ndim
    if isinstance(dim, (tuple, list)):
        if len(dim) == 0:
            return None
        axes = wrap_dims(dim, nd, name)
    else:
        axes = (wrap_dim(dim, nd, name),)
    if nd == 0:
        return None
    return tuple(sorted(axes))


def _one_dim(input, dim, name):
    """A single int dim (PyTorch's ``int dim`` overloads reject tuples)."""
    if isinstance(dim, (tuple, list)) or not hasattr(dim, "__index__"):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    if _dispatch.intercept:   # NOTE [ Dims as the caller gave them ] in ember/profiler
        from ..profiler._recorder import note_dims

        note_dims(dim)
    return wrap_dim(dim, input._data.ndim, name)


def _dtype_arg(dtype):
    return None if dtype is None else _dt.lookup(dtype).np


def _name(npd):
    return _dt.from_np[np.dtype(npd)].scalar_name


def _acc(npd):
    """The accumulator dtype for ``npd`` (NOTE [ Reduction accumulators ])."""
    return _F32 if npd in _HALF else npd


def _reduced_count(shape, dim):
    if dim is None:
        return math.prod(shape)
    return math.prod(shape[d] for d in dim)


def _keep_shape(shape, dim):
    """``shape`` with the reduced dims set to 1 (what keepdim=True produces)."""
    return tuple(1 if dim is None or i in dim else s for i, s in enumerate(shape))


def _check_nonempty(input, dim, name):
    """max/min-like reductions have no identity: empty reductions are errors."""
    shape = input._data.shape
    if dim is None:
        if input._data.size == 0:
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.")
        return
    for d in dim:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _no_complex(input, name):
    """PyTorch's refusal of a complex ``input`` by its CPU kernel ``name``. Callers check an
    empty reduction dim first, and skip this for an empty input that passed that check: its
    result is empty, and PyTorch never calls the kernel for one."""
    if input._data.dtype.kind == "c":
        raise NotImplementedError(f'"{name}" not implemented for \'{_name(input._data.dtype)}\'')


# ------------------------------------------------------------------------------------------------
# gradient plumbing shared by the family (see NOTE [ Selection gradients ])


def _expand_back_kernel(xp, g, *, shape, dim, keepdim):
    out = xp.empty(shape, g.dtype)
    if dim is not None and not keepdim:
        g = g.reshape(_keep_shape(shape, dim))
    out[...] = g  # broadcasting assignment: cheaper than broadcast_to(...).copy()
    return out


def _expand_back_vjp(g, _x, *, shape, dim, keepdim):
    return _apply(sum_op, (g,), {"dim": dim, "keepdim": keepdim, "dtype": None,
                                 "shape": tuple(g._data.shape)})


# the gradient of a reduction sent back to the input's shape (linear; its vjp is ``sum``)
expand_back_op = Op("_expand_back", _expand_back_kernel, vjp=_expand_back_vjp, linear=True)


def _expand_back_body(g, *, shape, dim, keepdim):
    return _apply(expand_back_op, (g,), {"shape": shape, "dim": dim, "keepdim": keepdim})


# modes see PyTorch's aten.expand, what its reductions' derivatives call
_expand_back_entry = shown_as("expand", expand_back_op, _expand_back_body)


def _expand_back(g, shape, dim, keepdim):
    return _expand_back_entry(g, shape=tuple(shape), dim=dim, keepdim=keepdim)


_div_scalar = []


def _div_by(t, n):
    """``t / n`` for a number ``n``, shown to modes as PyTorch's ``div.Scalar`` (what its
    derivative formulas call, where a Python ``t / n`` is ``div.Tensor``)."""
    if not _div_scalar:
        from ._elementwise import elementwise
        from .arithmetic import div_op

        div_op.handle(False, 2)  # div.Tensor first: ember.ops.aten.div's own form
        _div_scalar.append(shown_as("div", div_op, lambda a, b: elementwise(div_op, (a, b)),
                                    "Scalar"))
    return _div_scalar[0](t, n)


def _take_along_kernel(xp, a, idx, *, dim, keepdim):
    if a.ndim == 0:
        return a.copy()
    r = xp.take_along_axis(a, idx if keepdim else xp.expand_dims(idx, dim), axis=dim)
    return r if keepdim else r.squeeze(dim)


def _take_along_vjp(g, _a, idx, *, dim, keepdim, shape):
    return _apply(put_along_op, (g, idx), {"dim": dim, "keepdim": keepdim, "shape": shape}), None


def _put_along_kernel(xp, g, idx, *, dim, keepdim, shape):
    """Scatter-add ``g`` into zeros of ``shape`` at ``idx`` along ``dim``."""
    out = xp.zeros(shape, g.dtype)
    if len(shape) == 0:
        out[...] = g
        return out
    if not keepdim:
        g = xp.expand_dims(g, dim)
        idx = xp.expand_dims(idx, dim)
    grids = list(sparse_indices(xp, idx.shape))
    grids[dim] = idx
    ufunc_at(xp, "add", out, tuple(grids), g)
    return out


def _put_along_vjp(g, _g, idx, *, dim, keepdim, shape):
    return _apply(take_along_op, (g, idx), {"dim": dim, "keepdim": keepdim, "shape": shape}), None


def _take_along_kernel_s(xp, a, idx, *, dim, keepdim, shape):
    return _take_along_kernel(xp, a, idx, dim=dim, keepdim=keepdim)


take_along_op = Op("_take_along", _take_along_kernel_s, vjp=_take_along_vjp)
linear_jvp(take_along_op, (0,))
put_along_op = Op("_put_along", _put_along_kernel, vjp=_put_along_vjp)
linear_jvp(put_along_op, (0,))


def _grad_needed(input):
    if input._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
        return True
    # a forward-mode tangent needs the differentiable path too (ember/autograd/_forward.py)
    return _dispatch.intercept and _dispatch.carries_tangent is not None and \
        _dispatch.carries_tangent(input)


def select_values(input, values, indices, dim, keepdim):
    """Values that carry gradient: re-gathered from ``input`` when autograd records.

    ``indices`` holds positions along ``dim`` (shaped like ``values``). See NOTE [ Selection
    gradients ]. Used by the sorting family as well.
    """
    if not _grad_needed(input):
        return values
    if input._data.ndim == 0:
        dim = 0
    return _apply(take_along_op, (input, indices),
                  {"dim": dim, "keepdim": keepdim, "shape": tuple(input._data.shape)})


def _where_zero_kernel(xp, x, mask):
    return _xp_compat.where(xp, mask, xp.zeros((), x.dtype), x)  # bfloat16 stays bfloat16


def _where_zero_vjp(g, _x, mask):
    return _apply(where_zero_op, (g, mask), {}), None


# ``x`` with zeros where ``mask`` holds (a masked_fill(mask, 0) the family's formulas use)
where_zero_op = Op("_where_zero", _where_zero_kernel, vjp=_where_zero_vjp)
linear_jvp(where_zero_op, (0,))


def _where_zero(x, mask):
    return _apply(where_zero_op, (x, mask), {})


def _out_dtype(dtype, out):
    """The dtype a sum-like reduction computes in: ``dtype``, else the dtype of ``out`` when
    given, as PyTorch does (NOTE [ out= dtypes ] in ember/_dispatch.py)."""
    if dtype is None and isinstance(out, Tensor):
        return _dt.from_np[out._data.dtype]
    return dtype


def _finish(r, out, name):
    return r if out is None else _dispatch.write_out(name, out, r)


# ------------------------------------------------------------------------------------------------
# sum / nansum / mean / nanmean / prod


def _sum_kernel(xp, a, *, dim, keepdim, dtype, shape=None):
    dtype = a.dtype if dtype is None else dtype
    acc = _acc(dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    r = _blocked_sum(a, dim, keepdim) if a.size >= _BLOCKS_MIN else None
    if r is None:
        r = xp.add.reduce(a, axis=dim, keepdims=keepdim)
    return r if r.dtype == dtype else r.astype(dtype)


#: True once a program asked for a sparse embedding gradient (NOTE [ Sum gradients as views ])
sum_grad_views = False


def _sum_vjp(g, _a, *, dim, keepdim, dtype, shape):
    if sum_grad_views and not _dispatch.state.grad_enabled and not _dispatch.intercept:
        # NOTE [ Sum gradients as views ]
        # PyTorch's gradient of a sum is the output gradient expanded: a view with zero
        # strides, where ember's is a fresh array. That is invisible but in one place: how
        # two sparse gradients are summed depends on whether their values are contiguous
        # (NOTE [ Sparse gradient sums ] in ember/sparse/_grad.py), and an embedding's
        # sparse gradient takes its values from the gradient of its output, often a
        # sum's. So once a program uses sparse gradients (and outside create_graph and
        # modes), the sum's gradient is the broadcast view PyTorch's is; programs without
        # them keep the fresh array.
        d = g._data
        if dim is not None and not keepdim:
            d = d.reshape(_keep_shape(shape, dim))
        return wrap(_dispatch.xp_of(d).broadcast_to(d, tuple(shape)))
    return _expand_back(g, shape, dim, keepdim)


sum_op = Op("sum", _row_major(_sum_kernel), vjp=_sum_vjp, linear=True)


def _sum_dtype(a, dtype):
    if dtype is not None:
        return dtype
    return _I64 if a.dtype.kind in "biu" else a.dtype


_FAST_SUM = frozenset([np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64),
                       np.dtype(np.complex64), np.dtype(np.complex128)])


_FAST_FLOAT = frozenset([np.dtype(np.float32), np.dtype(np.float64)])
_FAST_REAL = frozenset([np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64)])
_add_reduce = np.add.reduce
_max_reduce = np.maximum.reduce
_min_reduce = np.minimum.reduce
_asarray = np.asarray
_ndarray = np.ndarray
_new = object.__new__


def _wrap0(r):
    """Wrap a CPU full-reduction result (NumPy hands back a scalar). See NOTE [ Hot path ]."""
    t = _new(Tensor)
    t._data = _asarray(r)
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    return t


#: the fewest elements ``float_sum`` and ``row_sums`` may take (NOTE [ Blocked float sums ]
#: in ember/_kernels/_reduce.py); smaller sums go straight to NumPy
_BLOCKS_MIN = 1 << 14


def _last_dim_sums(a, keepdim):
    """``a``'s sums along its last axis from ``row_sums`` (NOTE [ Blocked float sums ]), or
    None where it does not cover ``a``."""
    r = row_sums(a)
    if r is not None and keepdim:
        r = r.reshape(r.shape + (1,))
    return r


def _blocked_sum(a, dim, keepdim):
    """The sum over ``dim`` (None, or a sorted tuple of axes) as an array, where NOTE
    [ Blocked float sums ] covers it (everything, or the last axis alone), else None: the
    general path's kernels take it so as to give the hot path's bits."""
    if dim is None:
        if keepdim or (r := float_sum(a)) is None:
            return None
        return np.asarray(r)
    if dim == (a.ndim - 1,):
        return _last_dim_sums(a, keepdim)
    return None


def _record_sum(input, r, dim, keepdim, a):
    """The hot path's recording of ``r = sum(input, dim, keepdim)`` (``a``: input's array),
    with the params the general path gives ``sum_op`` (NOTE [ Hot path ])."""
    record = _dispatch.record_unary
    if record is not None and _dispatch.state.grad_enabled:
        record(sum_op, input, {"dim": dim, "keepdim": keepdim, "dtype": a.dtype,
                               "shape": a.shape}, r)


class _DimNotGiven:
    """The default of ``sum``'s ``dim``: None to the reader, but distinguishable from a
    ``dim=None`` the caller wrote (PyTorch's sum over everything has no ``out=``)."""

    def __repr__(self):
        return "None"

    def __bool__(self):
        return False


_DIM_NOT_GIVEN = _DimNotGiven()


class _KeepdimNotGiven(int):
    """The default of a reduction's ``keepdim``: False to every reader (an int 0, so ``not
    keepdim`` stays the C-level test it is on False), but distinguishable from a
    ``keepdim=False`` the caller wrote. See NOTE [ keepdim without dim ]."""

    def __repr__(self):
        return "False"


_NO_KEEPDIM = _KeepdimNotGiven(0)

# NOTE [ keepdim without dim ]
# PyTorch's sum, mean and prod have two overloads: one over everything that takes only
# ``dtype=`` (no ``keepdim``, no ``out=``) and one over ``dim`` that takes ``keepdim``;
# var/std/var_mean/std_mean take ``unbiased`` with ``keepdim`` or ``out=`` only beside a
# ``dim`` (their ``correction=`` overload has ``dim=None``); max/min/median/nanmedian
# take ``keepdim`` only with an int ``dim``. So ``x.sum(keepdim=True)`` (even keepdim=False)
# is a TypeError there, while ``x.sum(None, keepdim=True)`` is not. ember tells a keepdim the
# caller wrote from the default by the ``_NO_KEEPDIM`` default (an int 0, so the hot paths'
# ``not keepdim`` costs what it did) and a dim the caller wrote from ``_DIM_NOT_GIVEN``; each
# op turns the defaults back into False / None at its entry, so nothing downstream (kernels,
# saved attributes) sees them.


def _keepdim_without_dim_int(name, keepdim, out):
    """PyTorch's TypeError for max/min/median/nanmedian given ``keepdim`` but no ``dim``."""
    got = ("Tensor, out=" + type(out).__name__ + ", ") if out is not None else ""
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}"
                     f"keepdim={type(keepdim).__name__}, ), but expected one of:\n * ()\n"
                     " * (Tensor other)\n * (int dim, bool keepdim = False)\n")


def _keepdim_without_dim(name, given, dtype=None, out=None):
    """PyTorch's TypeError for ``name(..., keepdim=...)`` (and ``given``) without ``dim``."""
    if dtype is not None or (out is not None and name in ("sum", "prod")):
        return TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    got = ", ".join(f"{k}={type(v).__name__}" for k, v in given)
    return TypeError(f"{name}() received an invalid combination of arguments - got "
                     f"({got}, ), but expected one of:\n * (*, torch.dtype dtype = None)\n"
                     f" * (tuple of ints dim, bool keepdim = False, *, torch.dtype dtype = "
                     "None)\n")


@public
def sum(input, dim=_DIM_NOT_GIVEN, keepdim=_NO_KEEPDIM, *, dtype=None, out=None):
    """Sum of ``input`` over ``dim`` (all dims when None); ints and bools sum to int64.

    ``out=`` and ``keepdim`` need ``dim`` (None allowed), as in PyTorch: its sum over
    everything has neither, so ``sum(input, out=...)`` raises TypeError.
    """
    if dim is _DIM_NOT_GIVEN:
        if keepdim is not _NO_KEEPDIM:  # NOTE [ keepdim without dim ]
            raise _keepdim_without_dim("sum", [("keepdim", keepdim)], dtype, out)
        keepdim = False
        if out is not None:
            if dtype is not None:
                raise TypeError('sum() missing 1 required positional arguments: "dim"')
            raise TypeError("sum() received an invalid combination of arguments - got "
                            "(Tensor, out=Tensor), but expected (Tensor input, tuple of ints "
                            "dim, bool keepdim, *, dtype, Tensor out)")
        dim = None
    elif keepdim is _NO_KEEPDIM:
        keepdim = False
    if dtype is None and out is None:
        # NOTE [ Hot path ]: a full or one-dim sum of a CPU tensor nothing records for is one
        # ufunc reduce and one wrap
        try:
            a = input._data  # (a try costs nothing when nothing is raised; getattr is a call)
        except AttributeError:
            a = None
        if type(a) is _ndarray and a.dtype in _FAST_SUM and not _dispatch.intercept and \
                sum_op.builtin_cpu:
            if dim is None and not keepdim:
                if a.size < _BLOCKS_MIN or (s := float_sum(a)) is None:
                    s = _add_reduce(a) if a.ndim == 1 else _add_reduce(a, None)
                r = _new(Tensor)  # ``_wrap0`` inlined: the commonest sum saves its frame
                r._data = _asarray(s)
                r._rg = False
                r._grad_fn = None
                r._base = None
                r._vc = None
                if input._rg:  # (ints never require grad: the sum dtype is the input's)
                    _record_sum(input, r, None, False, a)
                return r
            if type(dim) is int and -a.ndim <= dim < a.ndim:
                if a.size < _BLOCKS_MIN or dim % a.ndim != a.ndim - 1 or \
                        (s := _last_dim_sums(a, keepdim)) is None:
                    s = _add_reduce(a, dim, None, None, keepdim)
                if not a.flags.c_contiguous:  # NOTE [ Result strides ] in _memory_format.py
                    s = _row_major_array(s)
                r = _wrap0(s)
                if input._rg:
                    _record_sum(input, r, (dim % a.ndim,), keepdim, a)
                return r
    _check_tensor(input, "sum", dtype)
    a = input._data
    d = _dims(input, dim, "sum")
    rdt = _sum_dtype(a, _dtype_arg(_out_dtype(dtype, out)))
    return _apply(sum_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": rdt,
                                     "shape": a.shape}, out=out)


def _nansum_kernel(xp, a, *, dim, keepdim, dtype, shape=None):
    if a.dtype.kind in "fcV":  # "V": bfloat16
        a = _xp_compat.where(xp, xp.isnan(a), xp.zeros((), a.dtype), a)
    return _sum_kernel(xp, a, dim=dim, keepdim=keepdim, dtype=dtype)


def reduction_jvp(op):
    """The forward-mode rule of a reduction ``out = f(slice of a)`` (params ``dim`` and
    ``keepdim``): its partials are the vjp at a cotangent of ones, and the tangent is
    ``sum(conj(partials) * a_dot)`` over the reduced dims (the real part for a real result
    of complex input)."""

    def jvp(x_dots, a, *, out, dim, keepdim, **params):
        kw = dict(params, dim=dim, keepdim=keepdim)
        if op.saves_out:
            kw["out"] = out
        part = op.vjp(out.new_ones(tuple(out.shape)), a, **kw)
        p = part.conj() * x_dots[0]
        if p.is_complex() and not out.is_complex():
            p = p.real
        if dim is not None:
            return p.sum(dim, keepdim=keepdim)
        r = p.sum()
        return r.reshape((1,) * a.dim()) if keepdim else r

    op.defjvp(jvp)
    return jvp


def _nansum_vjp(g, a, *, dim, keepdim, dtype, shape):
    return _where_zero(_expand_back(g, shape, dim, keepdim), a != a)


nansum_op = Op("nansum", _nansum_kernel, vjp=_nansum_vjp)
reduction_jvp(nansum_op)


def _nansum_dtype_of_out(dtype, out):
    """PyTorch's nansum (nanmean's sum too) refuses a floating ``dtype=`` that is not out='s."""
    if dtype is not None and isinstance(out, Tensor):
        want, got = _dt.lookup(dtype), _dt.from_np[out._data.dtype]
        if want != got:
            raise RuntimeError("nansum: provided dtype must match dtype of result. Got "
                               f"{got.scalar_name} and {want.scalar_name}.")


@public
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero."""
    _check_tensor(input, "nansum", dtype)
    complex_in = input._data.dtype.kind == "c"
    if complex_in and out is not None:  # (torch's out= form refuses before the dims)
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if input._data.dtype.kind in "fV" and dtype is not None and \
            _dt.lookup(dtype).is_floating_point:  # (before the dims, as torch's)
        _nansum_dtype_of_out(dtype, out)
    d = _dims(input, dim, "nansum")
    if complex_in:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    rdt = _sum_dtype(input._data, _dtype_arg(_out_dtype(dtype, out)))
    # torch's NaN-skipping kernel covers real floating dtypes: a dtype= reaching complex, or
    # a floating input summed into an out= of an integer or complex dtype, has none
    kd = np.dtype(rdt).kind if rdt is not None else "f"
    if input._data.dtype.kind in "fV" and (kd == "c" or dtype is None and kd in "biu") and \
            (out is None or dtype is None or _dt.lookup(out._data.dtype) == _dt.lookup(dtype)):
        raise NotImplementedError(
            f'"nansum_cpu" not implemented for \'{_dt.lookup(rdt).scalar_name}\'')
    return _apply(nansum_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": rdt,
                                        "shape": input._data.shape}, out=out)


def _mean_kernel(xp, a, *, dim, keepdim, dtype, shape=None):
    acc = _acc(dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    n = _reduced_count(a.shape, dim)
    if n and a.size >= _BLOCKS_MIN and (s := _blocked_sum(a, dim, keepdim)) is not None:
        # NOTE [ Blocked float sums ]
        return xp.asarray(s / a.dtype.type(n)).astype(dtype, copy=False)
    r = xp.add.reduce(a, axis=dim, keepdims=keepdim) / acc.type(n) if n else \
        xp.full(xp.add.reduce(a, axis=dim, keepdims=keepdim).shape,
                complex(np.nan, np.nan) if acc.kind == "c" else np.nan, acc)
    r = xp.asarray(r)
    return r if r.dtype == dtype else r.astype(dtype)


def _mean_vjp(g, _a, *, dim, keepdim, dtype, shape):
    return _div_by(_expand_back(g, shape, dim, keepdim),
                   builtins.max(_reduced_count(shape, dim), 1))


mean_op = Op("mean", _row_major(_mean_kernel), vjp=_mean_vjp, linear=True)


# NOTE [ var_mean's running mean ]
# torch computes var_mean's and std_mean's mean with the variance, by a running (Welford)
# update ``mean += (x - mean) / k`` over the reduced elements in order: once an infinite
# element is in, the next element (any, finite or not) makes the mean NaN (inf - inf), so
# the mean is NaN wherever a non-finite element is not the last one reduced, and +-inf when
# the only infinity comes last. A complex input runs the update on the real and imaginary
# parts apart (``[1, inf + 0j]`` has the mean ``inf + 0j``, where ``mean`` says
# ``inf + nanj``). Finite slices take the plain mean; the fix-up runs only when the plain
# mean is not finite.


def _running_fixup(xp, a, r, dim, keepdim):
    """The plain mean ``r`` of ``a`` as the running update leaves it (a real ``a``)."""
    if dim is None:
        dim = tuple(range(a.ndim))
    n = _reduced_count(a.shape, dim)
    if n < 2:
        return r
    rest = tuple(i for i in range(a.ndim) if i not in dim)
    flat = a.transpose(rest + tuple(dim)).reshape(tuple(a.shape[i] for i in rest) + (n,))
    early = ~xp.isfinite(flat[..., :-1]).all(axis=-1)
    if keepdim:
        early = early.reshape(_keep_shape(a.shape, dim))
    r = xp.array(r, copy=True)
    r[early] = np.nan
    return r


def _running_mean_kernel(xp, a, *, dim, keepdim, dtype, shape=None):
    r = _mean_kernel(xp, a, dim=dim, keepdim=keepdim, dtype=dtype, shape=shape)
    if xp is not np or not holds_values(r) or np.isfinite(r).all():
        return r
    if r.dtype.kind != "c":
        return _running_fixup(xp, a, r, dim, keepdim)
    part = np.dtype(r.dtype.char.lower())
    re_, im = (_running_fixup(xp, p, _mean_kernel(xp, p, dim=dim, keepdim=keepdim,
                                                    dtype=part), dim, keepdim)
               for p in (a.real, a.imag))
    out = np.empty(np.shape(re_), r.dtype)
    out.real, out.imag = re_, im
    return out


# var_mean's and std_mean's mean (NOTE [ var_mean's running mean ]); its gradient is mean's
running_mean_op = Op("running_mean", _running_mean_kernel, vjp=_mean_vjp, linear=True)
running_mean_op.node_name = "MeanBackward0"


def _float_dtype_for(input, dtype, name):
    dt = _dtype_arg(dtype)
    if dt is None:
        dt = input._data.dtype
        if dt.kind not in "fcV" and _dt.from_np[dt].category < 2:
            raise RuntimeError(
                f"{name}(): could not infer output dtype. Input dtype must be either a floating "
                f"point or complex dtype. Got: {_name(dt)}")
    elif _dt.from_np[dt].category < 2:
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {_name(dt)}")
    return dt


@public
def mean(input, dim=_DIM_NOT_GIVEN, keepdim=_NO_KEEPDIM, *, dtype=None, out=None):
    """Arithmetic mean over ``dim``; floating and complex inputs (or a floating ``dtype``)."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
        if dim is _DIM_NOT_GIVEN:
            dim = None
    elif dim is _DIM_NOT_GIVEN:  # NOTE [ keepdim without dim ]
        raise _keepdim_without_dim("mean", [("keepdim", keepdim)], dtype)
    if dtype is None and out is None:
        # NOTE [ Hot path ]: a full or one-dim mean of a float CPU tensor: the kernel and,
        # where the input requires grad, ``record_unary`` with the general path's params
        a = getattr(input, "_data", None)
        if type(a) is _ndarray and a.dtype in _FAST_FLOAT and not _dispatch.intercept and \
                mean_op.builtin_cpu:
            if dim is None and not keepdim:
                d = None
            elif type(dim) is int and -a.ndim <= dim < a.ndim:
                d = (dim % a.ndim,)
            else:
                d = False
            if d is not False:
                s = _mean_kernel(np, a, dim=d, keepdim=keepdim, dtype=a.dtype)
                if not a.flags.c_contiguous:  # NOTE [ Result strides ] in _memory_format.py
                    s = _row_major_array(s)
                r = _wrap0(s)
                if input._rg:
                    record = _dispatch.record_unary
                    if record is not None and _dispatch.state.grad_enabled:
                        record(mean_op, input, {"dim": d, "keepdim": keepdim, "dtype": a.dtype,
                                                "shape": a.shape}, r)
                return r
    _check_tensor(input, "mean", dtype)
    if input.is_quantized and dtype is None and out is None:  # ember/ao/_qops.py
        from ..ao._qops import on_centered_ints

        return on_centered_ints(mean, input, dim, keepdim)
    rdt = _float_dtype_for(input, dtype, "mean")
    d = _dims(input, dim, "mean")
    if dtype is not None and isinstance(out, Tensor) and out._data.dtype != rdt:
        # an out= of another dtype is cast into, unless dtype= names the result's
        _dispatch._check_out_dtype("mean", out, wrap(np.empty(0, rdt)), True)
    return _apply(mean_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": rdt,
                                      "shape": input._data.shape}, out=out)


def _nanmean_kernel(xp, a, *, dim, keepdim, dtype):
    nan = xp.isnan(a)
    total = _nansum_kernel(xp, a, dim=dim, keepdim=keepdim, dtype=dtype)
    count = xp.add.reduce(~nan, axis=dim, keepdims=keepdim, dtype=np.int64)
    return xp.asarray(total / count).astype(dtype, copy=False)


def _nanmean_vjp(g, a, *, dim, keepdim, dtype):
    keep = a == a
    count = keep.sum(dim, keepdim=True) if dim is not None else keep.sum()
    shape = a.shape
    return _expand_back(g, shape, dim, keepdim) * keep / _expand_back(count, shape, dim, True)


nanmean_op = Op("nanmean", _nanmean_kernel, vjp=_nanmean_vjp)
reduction_jvp(nanmean_op)


@public
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements over ``dim``."""
    _check_tensor(input, "nanmean")
    if not (input.is_floating_point() or input.is_complex()):
        if out is not None:  # (torch's out= form words it otherwise)
            raise RuntimeError("nanmean(): integral types and 'Bool' are not supported for "
                               "nanmean, even for empty tensors.")
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {_name(input._data.dtype)}")
    # torch's order: the result dtype, the dims, then complex input (nanmean is nansum /
    # count, and nansum refuses complex)
    rdt = _float_dtype_for(input, _out_dtype(dtype, out), "nanmean")
    d = _dims(input, dim, "nanmean")
    if input.is_complex():
        raise RuntimeError("nansum on CPU does not support complex inputs")
    _nansum_dtype_of_out(dtype, out)
    if rdt is not None and _dt.lookup(rdt).is_complex:
        # a real input summed in a complex out='s dtype: torch's nansum has no such kernel
        raise NotImplementedError(
            f'"nansum_cpu" not implemented for \'{_dt.lookup(rdt).scalar_name}\'')
    return _apply(nanmean_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": rdt}, out=out)


def _prod_kernel(xp, a, *, dim, keepdim, dtype):
    if xp is np and a.dtype in _HALF and a.dtype == dtype and a.size:
        return _half_prod(a, dim, keepdim)
    acc = _acc(dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    r = xp.multiply.reduce(a, axis=dim, keepdims=keepdim)
    return r if r.dtype == dtype else r.astype(dtype)


# NOTE [ Half-precision products ]
# torch's CPU prod multiplies float16/bfloat16 values in their own dtype, each product
# rounded (computed in float32, stored in the dtype): it walks each output's inputs in
# memory order (the reduced dims innermost, by stride), and where the innermost run is
# contiguous and 64 values long or more, it multiplies them in four vectors of 16 lanes (one
# block of 64 after another), then the four vectors pairwise ((v0 v1)(v2 v3)), then the 16
# lanes in order, then the rest of the run one by one onto the result. Measured against
# torch 2.13 (its AVX2 kernels); reductions it splits over threads (32768 values and more
# into one output) are not replayed.
_PROD_LANES, _PROD_VECTORS = 16, 4


def _half_prod(a, dim, keepdim):
    """``a.prod(dim)`` of a float16/bfloat16 NumPy array as torch's CPU kernel rounds it
    (NOTE [ Half-precision products ])."""
    red = list(range(a.ndim)) if dim is None else sorted(dim)
    kept = [d for d in range(a.ndim) if d not in red]
    out_shape = tuple(1 if (d in red) else a.shape[d] for d in range(a.ndim)) if keepdim \
        else tuple(a.shape[d] for d in kept)
    item = a.itemsize
    order = sorted((d for d in red if a.shape[d] != 1), key=lambda d: abs(a.strides[d]))
    inner, contiguous = 1, False
    if order:
        contiguous = a.strides[order[0]] == item
        step = a.strides[order[0]]
        for d in order:  # the innermost dims that coalesce into one run
            if a.strides[d] != step:
                break
            inner *= a.shape[d]
            step = a.strides[d] * a.shape[d]
    dt = a.dtype

    def rnd(v):
        return v.astype(dt).astype(np.float32)

    vals = a.transpose(kept + [d for d in red if d not in order] + order[::-1])
    k = math.prod(a.shape[d] for d in kept)
    vals = vals.astype(np.float32).reshape(k, -1, inner)
    out = np.ones(k, np.float32)
    block = _PROD_LANES * _PROD_VECTORS
    for r in range(vals.shape[1]):
        row = vals[:, r]
        start = 0
        if contiguous and inner >= block:
            count = inner // block
            acc = row[:, :block].reshape(k, _PROD_VECTORS, _PROD_LANES)
            for i in range(1, count):
                acc = rnd(acc * row[:, i * block:(i + 1) * block].reshape(acc.shape))
            v = rnd(rnd(acc[:, 0] * acc[:, 1]) * rnd(acc[:, 2] * acc[:, 3]))
            lane = v[:, 0]
            for j in range(1, _PROD_LANES):
                lane = rnd(lane * v[:, j])
            out = rnd(out * lane)
            start = count * block
        for j in range(start, inner):
            out = rnd(out * row[:, j])
    return out.astype(dt).reshape(out_shape)


def _prod_vjp(g, a, *, dim, keepdim, dtype, out):
    # NOTE [ prod's gradient ]
    # Each input's gradient is the conjugated product of the others, computed as PyTorch's
    # formula computes it (the same ops, so a profile shows its rows and infinite and zero
    # inputs give its numbers), from the saved result and the input in the gradient's
    # dtype: with no zero in the input, out / a; with a zero (in any slice), every slice
    # takes the product of the inputs before it times the product of those after it
    # (exclusive running products, ``_prod_safe_zeros``), so [1, inf, -3] next to a slice
    # holding a zero gives -3 for inf, not NaN. The product of everything with two zeros or
    # more has a zero gradient outright, unless the backward pass itself records a graph
    # (create_graph), which takes the running products. Under vmap the zero count is no
    # Python number: a rule without branches serves there.
    if a.dim() == 0:
        return g
    x = a.to(g.dtype)
    if dim and not keepdim:
        g, out = g.unsqueeze(dim[0]), out.unsqueeze(dim[0])
    try:
        if _dispatch.state.modes and _batched(x):
            raise RuntimeError("no zero count under vmap")
        zeros = (int((x == 0).sum(dim[0], keepdim=True).sum()) if dim else
                 (x == 0).nonzero().shape[0])
    except RuntimeError:
        return _expand_back(g, a.shape, dim, True) * _conj_of(_prod_others(a, dim))
    if not zeros:
        return g * _conj_of(out / x)
    if dim:
        return _prod_safe_zeros(g, x, dim[0])
    if zeros > 1 and not _dispatch.state.grad_enabled:
        from .creation import zeros_like

        return zeros_like(x)
    return _prod_safe_zeros(g, x.contiguous().view(-1), 0).view_as(x)


def _batched(t):
    from ..func._batch_rules import _is_batched_arg

    return _is_batched_arg(t)


def _conj_of(t):
    return t.conj() if t.is_complex() else t


def _prod_safe_zeros(g, x, d):
    """``g`` times the product of the others along ``d``, as exclusive running products
    from both ends (no division): PyTorch's ``prod_safe_zeros_backward``."""
    from .creation import ones

    n = x.shape[d]
    if x.numel() == 0:
        return g.expand_as(x)
    one = ones(tuple(1 if i == d else k for i, k in enumerate(x.shape)), dtype=g.dtype,
               device=g.device)
    before = cat([one, x.narrow(d, 0, n - 1)], d).cumprod(d)
    after = cat([one, x.narrow(d, 1, n - 1).flip(d)], d).cumprod(d).flip(d)
    return g * _conj_of(before * after)


def _prod_others(a, dim):
    """The product of the others for each input, by cases along each slice: out / a with no
    zero; the others' product at a slice's only zero; 0 elsewhere."""
    mask = a == 0
    zeros = mask.sum(dim[0], keepdim=True) if dim else mask.sum()
    nonzero = a + mask  # zeros replaced by ones
    others = nonzero.prod(dim[0], keepdim=True) if dim else nonzero.prod()
    others = _expand_back(others, a.shape, dim, True)
    zeros = _expand_back(zeros, a.shape, dim, True)
    return where(zeros == 0, others / nonzero, where((zeros == 1) & mask, others, 0.0))


prod_op = Op("prod", _row_major(_prod_kernel), vjp=_prod_vjp)
reduction_jvp(prod_op)


@public
def prod(input, dim=None, keepdim=_NO_KEEPDIM, *, dtype=None, out=None):
    """Product of the elements over ``dim`` (an int) or all of them."""
    if keepdim is _NO_KEEPDIM:
        keepdim = False
    elif dim is None:  # NOTE [ keepdim without dim ]
        raise _keepdim_without_dim("prod", [("keepdim", keepdim)], dtype, out)
    _check_tensor(input, "prod", dtype)
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not " + type(dim).__name__)
    if dim is None and out is not None:  # the product of everything has no out= overload
        raise TypeError('prod() missing 1 required positional arguments: "dim"')
    d = None if dim is None else _dims(input, dim, "prod")
    rdt = _sum_dtype(input._data, _dtype_arg(_out_dtype(dtype, out)))
    return _apply(prod_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": rdt}, out=out)


# ------------------------------------------------------------------------------------------------
# var / std / var_mean / std_mean


def _var_kernel(xp, a, *, dim, keepdim, correction, take_sqrt, acc=None):
    acc = _acc(a.dtype) if acc is None else acc
    x = a.astype(acc) if a.dtype != acc else a
    n = _reduced_count(a.shape, dim)
    if n:
        m = xp.add.reduce(x, axis=dim, keepdims=True) / acc.type(n)
        d = x - m
        sq = (d.real * d.real + d.imag * d.imag) if d.dtype.kind == "c" else d * d
        r = xp.add.reduce(sq, axis=dim, keepdims=keepdim)
        dof = builtins.max(n - correction, 0)
        if dof:
            r = r / dof
        else:  # NaN or inf by design, silently (NOTE [ Floating-point warnings ])
            with np.errstate(divide="ignore", invalid="ignore"):
                r = r / dof
    else:
        rd = acc if acc.kind != "c" else np.dtype(acc.char.lower())
        r = xp.full(_keep_shape(a.shape, dim) if keepdim else
                    xp.add.reduce(x, axis=dim).shape, np.nan, rd)
    r = xp.asarray(r)
    if take_sqrt:
        r = xp.sqrt(r)
    if acc == _F32 and n and holds_values(r) and not xp.isfinite(r).all():
        # float32 squares overflow near the top of the range; PyTorch accumulates in double,
        # so a finite spread (a std up to float32's max) stays finite: redo those in float64
        return _var_kernel(xp, a, dim=dim, keepdim=keepdim, correction=correction,
                           take_sqrt=take_sqrt, acc=np.dtype(np.float64))
    rdt = a.dtype if a.dtype.kind != "c" else np.dtype(a.dtype.char.lower())
    return r if r.dtype == rdt else r.astype(rdt)


def _var_vjp(g, a, *, dim, keepdim, correction, take_sqrt, out):
    # PyTorch's order: std's gradient first becomes var's (g / (2 std), zero where std is 0),
    # then (2 / (n - correction) * g) * (a - mean), so a huge centred value meets an already
    # scaled gradient (no overflow in between); a correction past n flips the sign
    shape = a.shape
    n = _reduced_count(shape, dim)
    scale = 2.0 / (n - correction) if n != correction else math.inf
    if take_sqrt:
        g = _where_zero(g / (out * 2), out == 0)
    if dim is not None and not keepdim:
        # PyTorch's ops in its order: the gradient unsqueezed, the centred input, then
        # (scale * grad) * centred, broadcasting
        g = _restore_dims(g, dim, a.dim(), keepdim)
        centred = a - a.mean(dim, keepdim=True)
        return g * scale * centred
    centred = a - a.mean(dim, keepdim=True) if dim is not None else a - a.mean()
    return _expand_back(g * scale, shape, dim, keepdim) * centred


def _var_jvp(x_dots, a, *, dim, keepdim, correction, take_sqrt, out):
    # d var = 2 / (n - correction) * sum(re(conj(a - mean) * a_dot)); d std = d var / (2 std)
    n = _reduced_count(a.shape, dim)
    centred = a - a.mean(dim, keepdim=True) if dim is not None else a - a.mean()
    prod = centred.conj() * x_dots[0]
    if prod.is_complex():
        prod = prod.real
    s = prod.sum(dim, keepdim=keepdim) if dim is not None else prod.sum()
    if dim is None and keepdim:
        s = s.reshape((1,) * a.dim())
    scale = 1.0 / (n - correction) if n - correction > 0 else math.inf
    if not take_sqrt:
        return s * (2.0 * scale)
    return _where_zero(s * scale / out, out == 0)


var_op = Op("var", _row_major(_var_kernel), vjp=_var_vjp, jvp=_var_jvp)
var_op.out_needed = lambda inputs, params: params["take_sqrt"]  # std's gradient reads it


def _correction(name, unbiased, correction):
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: Cannot pass both correction and unbiased arguments")
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _var_args(name, input, dim, unbiased, correction):
    _check_tensor(input, name)
    if isinstance(dim, bool):  # the legacy std(input, unbiased) overload
        dim, unbiased = None, dim
    kind = input._data.dtype.kind
    if kind not in "fcV":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    return _dims(input, dim, name), _correction(name, unbiased, correction)


def _warn_dof(name, input, dim, correction):
    a = input._data
    if _reduced_count(a.shape, dim) - correction <= 0:
        from .._settings import warn_at_caller

        warn_at_caller(f"{name}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output numel).",
                      UserWarning)


def _unbiased_without_dim(name, dim, unbiased, keepdim, out):
    """``keepdim`` as a bool; PyTorch's TypeError for ``unbiased`` beside ``keepdim`` or
    ``out=`` without ``dim`` (NOTE [ keepdim without dim ])."""
    if dim is _DIM_NOT_GIVEN or isinstance(dim, bool):
        given = keepdim is not _NO_KEEPDIM
        if (unbiased is not None or isinstance(dim, bool)) and (given or out is not None):
            got = ["bool"] if isinstance(dim, bool) else []
            got += [f"{k}={type(v).__name__}" for k, v in (
                ("out", out), ("keepdim", keepdim if given else None),
                ("unbiased", unbiased)) if v is not None]
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(Tensor, {', '.join(got)}), but expected one of:\n"
                            " * (Tensor input, tuple of ints dim, bool unbiased = True, bool "
                            "keepdim = False)\n * (Tensor input, tuple of ints dim = None, *, "
                            "Number correction = None, bool keepdim = False)\n"
                            " * (Tensor input, bool unbiased = True)\n")
    return bool(keepdim)


def _variance(name, take_sqrt, input, dim, unbiased, keepdim, correction, out):
    if keepdim is _NO_KEEPDIM and out is None:
        keepdim = False
    else:
        keepdim = _unbiased_without_dim(name, dim, unbiased, keepdim, out)
    if dim is _DIM_NOT_GIVEN:
        dim = None
    d, c = _var_args(name, input, dim, unbiased, correction)
    _warn_dof(name, input, d, c)
    return _apply(var_op, (input,), {"dim": d, "keepdim": keepdim, "correction": c,
                                     "take_sqrt": take_sqrt}, out=out)


@public
def var(input, dim=_DIM_NOT_GIVEN, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None,
        out=None):
    """Variance over ``dim`` with Bessel's ``correction`` (default 1; ``unbiased`` is legacy)."""
    return _variance("var", False, input, dim, unbiased, keepdim, correction, out)


@public
def std(input, dim=_DIM_NOT_GIVEN, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None,
        out=None):
    """Standard deviation over ``dim``; see :func:`var` for ``correction``."""
    return _variance("std", True, input, dim, unbiased, keepdim, correction, out)


@public(method=False)
def var_mean(input, dim=_DIM_NOT_GIVEN, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None):
    """``(var(input, ...), mean(input, ...))`` in one call.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: ``var`` can be inf where PyTorch's is NaN.
    """
    keepdim = _unbiased_without_dim("var_mean", dim, unbiased, keepdim, None)
    if dim is _DIM_NOT_GIVEN:
        dim = None
    d, c = _var_args("var_mean", input, dim, unbiased, correction)
    session = observing_profiler()
    if session is not None:   # PyTorch's one op (``_Session.as_one_op``)
        return session.as_one_op(
            "aten::var_mean", lambda: _moments_call(input, dim, unbiased, keepdim, correction),
            var_mean, (input, dim, unbiased, keepdim), {"correction": correction})
    _warn_dof("var_mean", input, d, c)
    v = _apply(var_op, (input,), {"dim": d, "keepdim": keepdim, "correction": c,
                                  "take_sqrt": False})
    # (no out= form: torch has none; one node, as torch's: NOTE [ One node for a composite ])
    return _one_moments_node("VarMeanBackward0", (v, _running_mean(input, d, keepdim)),
                             input, dim, unbiased, keepdim, correction, d, c)


@public(method=False)
def std_mean(input, dim=_DIM_NOT_GIVEN, unbiased=None, keepdim=_NO_KEEPDIM, *, correction=None):
    """``(std(input, ...), mean(input, ...))`` in one call."""
    keepdim = _unbiased_without_dim("std_mean", dim, unbiased, keepdim, None)
    if dim is _DIM_NOT_GIVEN:
        dim = None
    d, c = _var_args("std_mean", input, dim, unbiased, correction)
    session = observing_profiler()
    if session is not None:   # PyTorch's one op (``_Session.as_one_op``)
        return session.as_one_op(
            "aten::std_mean", lambda: _moments_call(input, dim, unbiased, keepdim, correction),
            std_mean, (input, dim, unbiased, keepdim), {"correction": correction})
    _warn_dof("std_mean", input, d, c)
    s = _apply(var_op, (input,), {"dim": d, "keepdim": keepdim, "correction": c,
                                  "take_sqrt": True})
    return _one_moments_node("StdMeanBackward0", (s, _running_mean(input, d, keepdim)),
                             input, dim, unbiased, keepdim, correction, d, c)


def _one_moments_node(name, outs, input, dim, unbiased, keepdim, correction, d, c):
    """var_mean's and std_mean's results under one node with torch's saved values (its
    ``correction`` is None for the overload that takes it and got none)."""
    if outs[0]._grad_fn is None:
        return outs
    given = correction is not None or dim is None and unbiased is None
    saved = {"self": input, "dim": d, "keepdim": keepdim, "correction": correction if given
             else c}
    if name == "StdMeanBackward0":
        saved["result0"] = lambda node: node._next[0][0]._saved_result
    return _node_names.as_one_node(name, outs, (input,), saved)


def _moments_call(input, dim, unbiased, keepdim, correction):
    """``var_mean``/``std_mean``'s arguments in the order of PyTorch's overload for the
    call, as its profiler lists them."""
    dim = [dim] if type(dim) is int else None if dim is None else list(dim)
    if correction is not None or dim is None and unbiased is None:
        return input, dim, correction, keepdim
    if dim is None and not keepdim:
        return input, unbiased
    return input, dim, True if unbiased is None else unbiased, keepdim


def _running_mean(input, d, keepdim):
    """var_mean's mean (NOTE [ var_mean's running mean ]): the plain mean, redone by the
    running rule where it is not finite (host arrays outside modes: a vmap keeps mean's
    batching rule)."""
    m = mean(input, d, keepdim)
    a = m._data
    if (_dispatch.intercept or type(a) is not np.ndarray or a.dtype.kind in "biu"
            or np.isfinite(a).all()):
        return m
    return _apply(running_mean_op, (input,), {"dim": d, "keepdim": keepdim, "dtype": a.dtype,
                                              "shape": input._data.shape})


# ------------------------------------------------------------------------------------------------
# max / min / amax / amin / aminmax / argmax / argmin


def _extreme_kernel(xp, a, *, dim, keepdim, largest, nan_picks=False):
    f = "maximum" if largest else "minimum"
    return xp.asarray(ufunc_reduce(xp, f, a, axis=dim, keepdims=keepdim)) if a.size else \
        xp.asarray(ufunc_reduce(xp, f, a, axis=dim, keepdims=keepdim,
                                initial=0 if a.dtype.kind != "b" else False))


def _restore_dims(t, dim, ndim, keepdim):
    """``t`` with each reduced dim put back as size 1 (PyTorch's ``unsqueeze_multiple``), to
    broadcast against the input: PyTorch's reduction gradients run these ops, which a
    profile lists (NOTE [ Reductions under the profiler ] in ember/profiler/_recorder.py)."""
    if keepdim:
        return t
    for d in range(ndim) if dim is None else sorted(dim):
        t = t.unsqueeze(d)
    return t


def _extreme_vjp(g, a, *, dim, keepdim, largest, out, nan_picks=False):
    # the gradient is shared evenly among the elements equal to the extreme (ties); a NaN
    # extreme equals nothing, so amax/amin/aminmax give its whole slice NaN gradients (0 / 0),
    # as torch does, while max()/min() of everything (``nan_picks``) pass it to the NaNs
    shape = a.shape
    if not nan_picks and dim is not None:
        # PyTorch's ops: the result and gradient reshaped to keep the reduced dims, then
        # (grad / count) * mask, broadcasting (the same values: mask is 0 or 1)
        keep = _keep_shape(shape, dim)
        mask = (out if keepdim else out.reshape(keep)) == a
        gk = g if keepdim else g.reshape(keep)
        return gk / mask.sum(dim, keepdim=True) * mask
    oe = _expand_back(out, shape, dim, keepdim)
    mask = (a == oe) | ((a != a) & (oe != oe)) if nan_picks else a == oe
    count = mask.sum(dim, keepdim=True) if dim is not None else mask.sum()
    return _expand_back(g, shape, dim, keepdim) * mask / _expand_back(count, shape, dim, True)


amax_op = Op("amax", _row_major(_extreme_kernel), vjp=_extreme_vjp)
reduction_jvp(amax_op)


def _amax(name, largest, input, dim, keepdim, out):
    _check_tensor(input, name)
    # PyTorch's amax/amin check, in order: out='s dtype against the input's, then each dim
    # as given for an empty size (before the others' range and repeats), then the repeats
    if out is not None and isinstance(out, Tensor) and out.dtype != input.dtype:
        raise RuntimeError(
            f"Expected the dtype for input and out to match, but got {input.dtype.scalar_name} "
            f"for input's dtype and {out.dtype.scalar_name} for out's dtype.")
    if input._data.size == 0 and dim != () and dim is not None:
        shape = input._data.shape
        for given in (dim if isinstance(dim, (tuple, list)) else (dim,)):
            if shape and shape[wrap_dim(given, len(shape), name)] == 0:
                raise IndexError(
                    f"{name}(): Expected reduction dim {given} to have non-zero size.")
    d = _dims(input, dim if dim != () else None, name)
    _check_nonempty(input, d, name)
    if input._data.size:
        _no_complex(input, "max_values_cpu" if largest else "min_values_cpu")
    if d is None:  # every dim, named: dim None is max()'s call (NOTE [ Node names ])
        d = tuple(range(input._data.ndim))
    return _apply(amax_op, (input,), {"dim": d, "keepdim": keepdim, "largest": largest}, out=out)


@public
def amax(input, dim=(), keepdim=False, *, out=None):
    """Largest value over ``dim`` (all dims when empty); NaN propagates."""
    return _amax("amax", True, input, dim, keepdim, out)


@public
def amin(input, dim=(), keepdim=False, *, out=None):
    """Smallest value over ``dim`` (all dims when empty); NaN propagates."""
    return _amax("amin", False, input, dim, keepdim, out)


def _arg_kernel(xp, a, *, dim, keepdim, largest):
    if a.ndim == 0:
        return xp.zeros((), np.int64)
    if dim is None:
        r = (xp.argmax if largest else xp.argmin)(a.reshape(-1))
        r = xp.asarray(r, dtype=np.int64)
        return r.reshape((1,) * a.ndim) if keepdim else r
    r = (xp.argmax if largest else xp.argmin)(a, axis=dim[0], keepdims=keepdim)
    return r.astype(np.int64, copy=False)


argmax_op = Op("argmax", _arg_kernel, differentiable=False)


def _argext(name, largest, input, dim, keepdim, out):
    _check_tensor(input, name)
    if input._data.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")
    if dim is not None:
        dim = (_one_dim(input, dim, name),) if input._data.ndim else None
    if dim is None and input._data.size == 0:
        raise IndexError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
    _check_nonempty(input, dim, name)
    return _apply(argmax_op, (input,), {"dim": dim, "keepdim": keepdim, "largest": largest},
                  out=out)


@public
def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the (first) largest value, over ``dim`` or the flattened input."""
    return _argext("argmax", True, input, dim, keepdim, out)


@public
def argmin(input, dim=None, keepdim=False, *, out=None):
    """Index of the (first) smallest value, over ``dim`` or the flattened input."""
    return _argext("argmin", False, input, dim, keepdim, out)


def _bool_as_uint8(kernel):
    """Run a values-and-indices kernel on bools viewed as uint8 (argmax/sort of bools)."""
    def run(xp, a, **params):
        if a.dtype.kind != "b":
            return kernel(xp, a, **params)
        v, i = kernel(xp, a.view(np.uint8), **params)
        return v.astype(bool), i

    return run


def _max_dim_kernel(xp, a, *, dim, keepdim, largest):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    idx = (xp.argmax if largest else xp.argmin)(a, axis=dim, keepdims=True)
    vals = xp.take_along_axis(a, idx, axis=dim)
    if not keepdim:
        vals, idx = vals.squeeze(dim), idx.squeeze(dim)
    return vals, idx.astype(np.int64, copy=False)


max_dim_op = Op("max.dim", _bool_as_uint8(_max_dim_kernel), differentiable=False)


# NOTE [ max(x, out=) of nothing ]
# torch's ``max(x)``/``min(x)`` refuse an empty ``x`` (no identity), but their out= form runs
# another kernel: it checks that x's dtype casts to out's, then the dtype (complex is
# NotImplementedError even when empty), and for an empty x writes the reduction's start
# value: the lowest value of the dtype for max (-inf for floats, False for bool), the highest
# for min.


def _all_out_checks(input, out, name):
    """The checks of ``max(x, out=)``/``min(x, out=)`` before any value is read."""
    _check_tensor(input, name)
    if isinstance(out, Tensor) and not _dt.can_cast(input.dtype, out.dtype):
        raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), "
                           "typeMetaToScalarType(out.dtype())) to be true, but got false.")
    _no_complex(input, name + "_all")


def _empty_extreme(input, largest):
    """The 0-d start value of max (``largest``) or min over nothing, in ``input``'s dtype
    (NOTE [ max(x, out=) of nothing ])."""
    npd = input._data.dtype
    if npd.kind == "b":
        v = not largest
    elif npd.kind == "f" or npd in _HALF:
        v = -np.inf if largest else np.inf
    else:
        info = np.iinfo(npd)
        v = info.min if largest else info.max
    return tensor(v, dtype=input.dtype, device=input.device)


def _max_min(name, largest, input, dim, keepdim, out, other):
    if other is None and isinstance(dim, Tensor):
        other, dim = dim, None
    if other is not None:
        f = maximum if largest else minimum
        return f(input, other) if out is None else f(input, other, out=out)
    if dim is not None:
        _check_out_tuple(name, out)
    _check_tensor(input, name)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}(): keepdim given without dim")
        if out is not None:
            _all_out_checks(input, out, name)
            if input._data.size == 0:
                return _finish(_empty_extreme(input, largest), out, name)
        _check_nonempty(input, None, name)
        _no_complex(input, name + "_all")
        r = _apply(amax_op, (input,), {"dim": None, "keepdim": False, "largest": largest,
                                       "nan_picks": True})
        return _finish(r, out, name)  # max(x, out=) casts, unlike amax
    d = _one_dim(input, dim, name)
    _check_nonempty(input, (d,) if input._data.ndim else None, name)
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{name}(): does not support complex input")
    v, i = _apply(max_dim_op, (input,), {"dim": d, "keepdim": keepdim, "largest": largest})
    session = observing_profiler()   # (PyTorch's one kernel: ``_Session.selection_values``)
    v = select_values(input, v, i, d, keepdim) if session is None else \
        session.selection_values(select_values, input, v, i, d, keepdim)
    _node_names.rename(v, "MaxBackward0" if largest else "MinBackward0")  # NOTE [ Node names ]
    r = return_types.make(name, ("values", "indices"))(v, i)
    if out is not None:
        _dispatch.write_out(name, out, (v, i))
        return r.__class__(*out)
    return r


@public
def max(input, dim=None, keepdim=_NO_KEEPDIM, *, out=None, other=None):
    """``max(input)``: the largest value; ``max(input, dim)``: ``(values, indices)``;
    ``max(input, other)``: the element-wise maximum."""
    if keepdim is _NO_KEEPDIM:
        if dim is None and other is None and out is None:
            a = getattr(input, "_data", None)
            if type(a) is _ndarray and a.size and a.dtype in _FAST_REAL and not input._rg \
                    and not _dispatch.intercept and amax_op.builtin_cpu:
                return _wrap0(_max_reduce(a, None))  # NOTE [ Hot path ]; NaN propagates
        keepdim = False
    elif dim is None and other is None:  # NOTE [ keepdim without dim ]
        raise _keepdim_without_dim_int("max", keepdim, out)
    return _max_min("max", True, input, dim, keepdim, out, other)


@public
def min(input, dim=None, keepdim=_NO_KEEPDIM, *, out=None, other=None):
    """``min(input)``, ``min(input, dim)`` -> ``(values, indices)``, or ``min(input, other)``."""
    if keepdim is _NO_KEEPDIM:
        if dim is None and other is None and out is None:
            a = getattr(input, "_data", None)
            if type(a) is _ndarray and a.size and a.dtype in _FAST_REAL and not input._rg \
                    and not _dispatch.intercept and amax_op.builtin_cpu:
                return _wrap0(_min_reduce(a, None))
        keepdim = False
    elif dim is None and other is None:  # NOTE [ keepdim without dim ]
        raise _keepdim_without_dim_int("min", keepdim, out)
    return _max_min("min", False, input, dim, keepdim, out, other)


@public
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``(min, max)`` over ``dim`` (or everything) as ``return_types.aminmax``."""
    _check_out_tuple("aminmax", out)
    _check_tensor(input, "aminmax")
    d = None if dim is None else (_one_dim(input, dim, "aminmax"),)
    if d is not None and input._data.ndim == 0:
        d = None
    if d is not None and input._data.shape[d[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d[0]} to have non-zero size.")
    if input._data.size == 0 and d is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    _no_complex(input, "aminmax_cpu")  # even for an empty result
    kd = keepdim and d is not None or keepdim
    lo = _apply(amax_op, (input,), {"dim": d, "keepdim": kd, "largest": False})
    hi = _apply(amax_op, (input,), {"dim": d, "keepdim": kd, "largest": True})
    if lo._grad_fn is not None:  # NOTE [ One node for a composite ]
        _node_names.as_one_node("AminmaxBackward0", (lo, hi), (input,), {
            "self": input, "dim": None if d is None else d[0], "keepdim": keepdim,
            "min": lambda node: node._next[0][0]._saved_result,
            "max": lambda node: node._next[1][0]._saved_result})
    if out is not None:
        _dispatch.write_out("aminmax", out, (lo, hi))
        lo, hi = out
    return return_types.make("aminmax", ("min", "max"))(lo, hi)


# ------------------------------------------------------------------------------------------------
# logsumexp / norm / dist / renorm


def _half_logsumexp(xp, a, dim, keepdim):
    """logsumexp of float16/bfloat16 as torch's CPU runs it: separate ops in the half type,
    ``a - max``, ``exp``, the sum (accumulated in float32), ``log``, ``+ max``, each
    rounded to the half type (one rounding of the whole put a tenth of bfloat16 results
    one unit off, and the gradient ``exp(a - result)`` then several percent)."""
    h, f = a.dtype, np.float32

    def r(v):
        return v.astype(h).astype(f)

    x = a.astype(f)
    m = ufunc_reduce(xp, "maximum", x, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros((), f))
    total = r(r(xp.exp(r(x - m))).sum(axis=dim, keepdims=True))
    out = (r(xp.log(total)) + m).astype(h)
    return out if keepdim else out.reshape(xp.add.reduce(x, axis=dim).shape)


def _logsumexp_kernel(xp, a, *, dim, keepdim):
    if a.size and _xp_compat._is_half_float(a.dtype):
        return _half_logsumexp(xp, a, dim, keepdim)
    acc = _acc(a.dtype)
    x = a.astype(acc) if a.dtype != acc else a
    if x.size == 0:
        r = xp.log(xp.add.reduce(xp.exp(x), axis=dim, keepdims=keepdim))
        return r.astype(a.dtype)
    m = ufunc_reduce(xp, "maximum", x, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros((), m.dtype))  # all -inf / inf rows stay exact
    r = xp.log(xp.add.reduce(xp.exp(x - m), axis=dim, keepdims=True)) + m
    if r.dtype.kind == "c":  # adding m's phase can leave (-pi, pi]: take the principal log
        r = r.real + 1j * xp.arctan2(xp.sin(r.imag), xp.cos(r.imag))
    if not keepdim:
        r = r.reshape(xp.add.reduce(x, axis=dim).shape)
    r = xp.asarray(r)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _logsumexp_vjp(g, a, *, dim, keepdim, out):
    # PyTorch's ops: grad and result unsqueezed, then grad * exp(a - result), broadcasting
    ndim = a.dim()
    return _restore_dims(g, dim, ndim, keepdim) * (a - _restore_dims(out, dim, ndim,
                                                                     keepdim)).exp()


def _logsumexp_jvp(x_dots, a, *, dim, keepdim, out):
    w = (a - _expand_back(out, a.shape, dim, keepdim)).exp() * x_dots[0]
    return w.sum(dim, keepdim=keepdim)


logsumexp_op = Op("logsumexp", _row_major(_logsumexp_kernel), vjp=_logsumexp_vjp,
                  jvp=_logsumexp_jvp)


@public
def logsumexp(input, dim=None, keepdim=False, *, out=None):
    """``log(sum(exp(input), dim))``, computed without overflow."""
    if dim is None:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    _check_tensor(input, "logsumexp")
    if input._data.dtype.kind in "biu":
        input = input.to(_dt.get_default_dtype())
    d = _dims(input, dim, "logsumexp")
    return _apply(logsumexp_op, (input,), {"dim": d, "keepdim": keepdim}, out=out)


def _norm(input, p, dim=None, keepdim=False):
    # ``ember.norm`` (torch.norm) lives with the linalg norms (ember/_ops/linalg_norm.py)
    return _torch_norm(input, p, dim, keepdim)


@public
def dist(input, other, p=2):
    """``norm(input - other, p)`` with broadcasting."""
    return _node_names.rename(_norm(input - other, p), "DistBackward0")


@public
def renorm(input, p, dim, maxnorm, *, out=None):
    """Rescale each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` to that norm."""
    _check_tensor(input, "renorm")
    d = wrap_dim(dim, input._data.ndim, "renorm")
    others = tuple(i for i in range(input._data.ndim) if i != d)
    # half inputs: the norm in float32, as PyTorch accumulates (65504 ** 2 overflows float16)
    low = input.dtype in (_dt.float16, _dt.bfloat16)
    src = input.float() if low else input
    dims = others if others else None
    # a NaN norm is not over (the slice stays as it is), and the factor is taken, not
    # interpolated: ``1 + over * (f - 1)`` rounds a tiny factor to 0 and spreads a NaN one
    # (the norm is divided where it is over only: a NaN or zero norm elsewhere must not
    # send a NaN back through the branch not taken). The norm that carries a gradient is
    # taken of the slices over only (the others zeroed), so a slice left as it is passes
    # its gradient through unchanged even when it holds a NaN or an infinity, as in torch
    over = _norm(src.detach(), p, dims, keepdim=True) > maxnorm
    n = _norm(where(over, src, 0.0), p, dims, keepdim=True)
    factor = where(over, maxnorm / (where(over, n, 1.0) + 1e-7), 1.0)
    r = src * factor
    return _finish(r.to(input.dtype) if low else r, out, "renorm")


Tensor.renorm_ = inplace_from(renorm, "renorm")


# ------------------------------------------------------------------------------------------------
# all / any / count_nonzero


def _logical_kernel(xp, a, *, dim, keepdim, is_all):
    b = a if a.dtype.kind == "b" else a != 0
    r = xp.asarray(ufunc_reduce(xp, "logical_and" if is_all else "logical_or", b, axis=dim,
                                keepdims=keepdim))
    return r.astype(np.uint8) if a.dtype == np.uint8 else r


all_op = Op("all", _row_major(_logical_kernel), differentiable=False)


def _all_any(name, is_all, input, dim, keepdim, out):
    _check_tensor(input, name)
    if isinstance(out, Tensor) and out._data.dtype not in (np.bool_, np.uint8):
        # torch checks the result's dtype before the dims
        raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                           f"{_dt.from_np[out._data.dtype].scalar_name}")
    # an empty dim tuple reduces nothing here (sum and the others read it as every dim)
    d = () if isinstance(dim, (tuple, list)) and len(dim) == 0 else _dims(input, dim, name)
    if out is not None and isinstance(out, Tensor) and out._data.dtype == np.uint8:
        # the one other dtype PyTorch writes all/any results in: it then reads the input as
        # uint8 too (0.5 counts as zero)
        r = _apply(all_op, (input.to(_dt.uint8),), {"dim": d, "keepdim": keepdim,
                                                    "is_all": is_all})
    else:
        r = _apply(all_op, (input,), {"dim": d, "keepdim": keepdim, "is_all": is_all})
    if out is not None and isinstance(out, Tensor) and out._data.dtype != r._data.dtype:
        raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                           f"{_dt.from_np[out._data.dtype].scalar_name}")
    return _finish(r, out, name)


@public
def all(input, dim=None, keepdim=False, *, out=None):
    """True when every element over ``dim`` is nonzero (uint8 input gives uint8)."""
    return _all_any("all", True, input, dim, keepdim, out)


@public
def any(input, dim=None, keepdim=False, *, out=None):
    """True when some element over ``dim`` is nonzero (uint8 input gives uint8)."""
    return _all_any("any", False, input, dim, keepdim, out)


def _count_nonzero_kernel(xp, a, *, dim):
    return xp.asarray(xp.count_nonzero(a, axis=dim), dtype=np.int64)


count_nonzero_op = Op("count_nonzero", _row_major(_count_nonzero_kernel), differentiable=False)


@public
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (int or tuple), as int64."""
    _check_tensor(input, "count_nonzero")
    return _apply(count_nonzero_op, (input,), {"dim": _dims(input, dim, "count_nonzero")})


# ------------------------------------------------------------------------------------------------
# scans: cumsum / cumprod / cummax / cummin / logcumsumexp


def _scan_dtype(input, dtype):
    return _sum_dtype(input._data, _dtype_arg(dtype))


#: the scans' accumulators on the CPU, where torch's cumsum/cumprod carry float32 and
#: complex64 in double precision (``acc_type<T, /*is_cuda=*/false>``): each output is the
#: double running value rounded once, so a float32 scan can pass through an overflow
_CPU_SCAN_ACC = {np.dtype(np.float32): np.dtype(np.float64),
                 np.dtype(np.complex64): np.dtype(np.complex128)}


def _scan_acc(xp, dtype):
    wide = _CPU_SCAN_ACC.get(np.dtype(dtype)) if xp is np else None
    return wide or _acc(dtype)  # (float16 and bfloat16 accumulate in float32 everywhere)


def _cumsum_kernel(xp, a, *, dim, dtype, reverse=False):
    acc = _scan_acc(xp, dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    if a.ndim == 0:
        return a.astype(dtype, copy=True)
    if reverse:
        a = xp.flip(a, dim)
    # the array's own method, not NumPy's Python-level cumsum: an overflow it reports then
    # names ember's module, which ember's warnings filter covers (NOTE [ Floating-point
    # warnings ] in ember/__init__.py)
    r = a.cumsum(axis=dim, dtype=acc)
    if reverse:
        r = xp.ascontiguousarray(xp.flip(r, dim))
    return r if r.dtype == dtype else r.astype(dtype)


def _cumsum_vjp(g, _a, *, dim, dtype, reverse=False):
    return _apply(rcumsum_op if not reverse else cumsum_op, (g,),
                  {"dim": dim, "dtype": g._data.dtype, "reverse": not reverse})


cumsum_op = Op("cumsum", _row_major(_cumsum_kernel), vjp=_cumsum_vjp, linear=True)
# the reverse scan (``flip(cumsum(flip(x)))``): cumsum's vjp, and cumsum is its vjp
rcumsum_op = Op("_rcumsum", _cumsum_kernel, vjp=_cumsum_vjp, linear=True)


def _rcumsum(x, dim):
    return _apply(rcumsum_op, (x,), {"dim": dim, "dtype": x._data.dtype, "reverse": True})


def _scan(name, op, input, dim, dtype, out):
    _check_tensor(input, name)
    d = wrap_dim(dim, input._data.ndim, name)
    acc = _scan_dtype(input, _out_dtype(dtype, out))
    # PyTorch has no bool scan kernel: only zero-dim and empty inputs, which need none, pass
    if acc == np.bool_ and input._data.ndim and input._data.size:
        raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'Bool\'')
    return _apply(op, (input,), {"dim": d, "dtype": acc}, out=out)


@public
def cumsum(input, dim=None, *, dtype=None, out=None):
    """Running sum along ``dim``; ints and bools accumulate in int64."""
    if dim is None:
        raise TypeError('cumsum() missing 1 required positional arguments: "dim"')
    return _scan("cumsum", cumsum_op, input, dim, dtype, out)


def _cumprod_kernel(xp, a, *, dim, dtype):
    acc = _scan_acc(xp, dtype)
    if a.dtype != acc:
        a = a.astype(acc)
    if a.dtype.kind == "c" and a.ndim:  # (a 0-d input is copied)
        a = _times_complex_one(xp, a, dim)
    if a.ndim == 0:
        return a.astype(dtype, copy=True)
    # (the array's method: NumPy's warning about inf * 0 then names this module, which
    # ember's filter silences, NOTE [ Floating-point warnings ])
    r = a.cumprod(axis=dim, dtype=acc)
    return r if r.dtype == dtype else r.astype(dtype)


def _times_complex_one(xp, a, dim):
    """``a`` with its first element along ``dim`` multiplied by 1 + 0j, as PyTorch's complex
    products start from a running product of one: (1 + 0j) * (inf + 0j) is inf + NaN j."""
    one = a.dtype.type(1)
    a = a.copy()
    first = (slice(None),) * (dim % a.ndim) + (0,)
    if a.shape[dim]:
        a[first] = a[first] * one
    return a


def _cumprod_backward_kernel(xp, g, a, *, dim):
    """d/da_i of sum_k g_k prod_{j<=k} a_j, exact with zeros (O(n^2) along ``dim``)."""
    if a.ndim == 0:
        return g.copy()
    a2 = xp.moveaxis(a, dim, -1)
    g2 = xp.moveaxis(g, dim, -1)
    n = a2.shape[-1]
    res = xp.zeros(a2.shape, np.result_type(a2.dtype, g2.dtype))
    for i in range(n):
        others = a2.copy()
        others[..., i] = 1
        p = xp.cumprod(others, axis=-1)
        res[..., i] = (g2[..., i:] * p[..., i:]).sum(-1)
    return xp.ascontiguousarray(xp.moveaxis(res, -1, dim))


cumprod_backward_op = Op("_cumprod_backward", _cumprod_backward_kernel, differentiable=False)


def _cumprod_vjp(g, a, *, dim, dtype, out):
    if a._data.ndim == 0 or a._data.shape[dim] == 1:  # (torch passes g through as it is)
        return g
    if _dispatch.intercept and _dispatch.state.modes:
        # under a transform (vmap: one example has no single answer to "any zero?") the
        # formula that needs no branch on the data
        return _cumprod_vjp_masked(g, a, dim, out)
    if bool((a == 0).any()):
        if _dispatch.differentiable_formula(g, a):
            return _apply(cumprod_backward_op, (g, a), {"dim": dim})
        # torch's first-order path: out / a_j before the first zero (so an overflowed
        # running product gives its NaN there too), the exclusive product at it, 0 after
        return _cumprod_vjp_masked(g, a, dim, out)
    return _rcumsum(g * out, dim) / a


def _cumprod_vjp_masked(g, a, dim, out):
    # d out_i / d a_j is prod_{k<=i, k!=j} a_k. Let z be the first zero of a along dim.
    # Before z (a_j != 0) it is out_i / a_j; at z it is the running product with a_z
    # replaced by 1; after z it holds a_z = 0. Masks only: no data-dependent branch.
    zero = a == 0
    seen = zero.cumsum(dim)
    first = zero & (seen == 1)
    before = _rcumsum((g * out).masked_fill(seen != 0, 0), dim) / a.masked_fill(zero, 1)
    # at z: (the product before z) * sum_j g_j prod_{z<k<=j} a_k over j up to the next zero
    # (the terms past it are 0, and left out: an inf there would make them NaN)
    span = seen == 1
    after_z = (g.masked_fill(~span, 0) * a.masked_fill(~span | first, 1).cumprod(dim)).sum(
        dim, keepdim=True)
    at_first = after_z * a.masked_fill(seen != 0, 1).prod(dim, keepdim=True)
    return before.where(seen == 0, at_first.masked_fill(~first, 0))


cumprod_op = Op("cumprod", _cumprod_kernel, vjp=_cumprod_vjp)


@cumprod_op.defjvp
def _cumprod_jvp(x_dots, a, *, dim, dtype, out):
    # dy_i = sum_{j<=i} da_j prod_{k<=i, k!=j} a_k. Up to the first zero of a that is
    # y_i cumsum(da / a)_i; from the first zero z on only the j = z term survives until a
    # second zero: cumprod of a with a_z replaced by da_z. Masks, no data-dependent branch.
    ad = x_dots[0]
    if a._data.ndim == 0:
        return ad
    zero = a == 0
    first = zero & (zero.cumsum(dim) == 1)
    after = first.cumsum(dim) > 0
    safe = a.masked_fill(zero, 1)
    before = (ad / safe).cumsum(dim) * out
    since = ad.where(first, a).cumprod(dim)
    return since.where(after, before)


@public
def cumprod(input, dim=None, *, dtype=None, out=None):
    """Running product along ``dim``; ints and bools accumulate in int64."""
    if dim is None:
        raise TypeError('cumprod() missing 1 required positional arguments: "dim"')
    return _scan("cumprod", cumprod_op, input, dim, dtype, out)


def _inplace_scan(fn, name):
    @_dispatch.entrance(name, inplace=True)
    def inplace(self, dim, *, dtype=None):
        from .._dispatch import commit_inplace_result

        # as PyTorch, an in-place scan accumulates in self's dtype, not in int64
        dtype = self.dtype if dtype is None else dtype
        return commit_inplace_result(name, self, lambda: fn(self, dim, dtype=dtype))

    inplace.__name__ = name
    return inplace


Tensor.cumsum_ = _inplace_scan(cumsum, "cumsum_")
Tensor.cumprod_ = _inplace_scan(cumprod, "cumprod_")


def _cumext_kernel(xp, a, *, dim, largest):
    """Running max/min with the index of the last extreme seen (NaN wins and sticks)."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    x = xp.moveaxis(a, dim, 0)
    vals = xp.empty(x.shape, a.dtype)
    idx = xp.empty(x.shape, np.int64)
    if x.shape[0]:
        cur, cur_i = x[0].copy(), xp.zeros(x.shape[1:], np.int64)
        vals[0], idx[0] = cur, cur_i
        isf = a.dtype.kind in "fcV" or a.dtype == _dt.bfloat16.np
        for k in range(1, x.shape[0]):
            v = x[k]
            better = (v >= cur) if largest else (v <= cur)
            if isf:
                better = better | xp.isnan(v) & ~xp.isnan(cur) | (xp.isnan(v) & xp.isnan(cur))
                better = better & ~(xp.isnan(cur) & ~xp.isnan(v))
            cur = xp.where(better, v, cur)
            cur_i = xp.where(better, k, cur_i)
            vals[k], idx[k] = cur, cur_i
    return (xp.ascontiguousarray(xp.moveaxis(vals, 0, dim)),
            xp.ascontiguousarray(xp.moveaxis(idx, 0, dim)))


cummax_op = Op("cummax", _bool_as_uint8(_cumext_kernel), differentiable=False)


def _cumext(name, largest, input, dim, out):
    _check_out_tuple(name, out)
    _check_tensor(input, name)
    if input._data.size:
        _no_complex(input, name + "_cpu")
    d = wrap_dim(dim, input._data.ndim, name)
    v, i = _apply(cummax_op, (input,), {"dim": d, "largest": largest})
    v = select_values(input, v, i, d, True)
    if out is not None:
        _dispatch.write_out(name, out, (v, i))
        v, i = out
    return return_types.make(name, ("values", "indices"))(v, i)


@public
def cummax(input, dim=None, *, out=None):
    """Running maximum along ``dim`` and the index where it was found."""
    if dim is None:
        raise TypeError('cummax() missing 1 required positional arguments: "dim"')
    r = _cumext("cummax", True, input, dim, out)
    return r if out is not None else _node_names.rename(r, "CummaxBackward0")


@public
def cummin(input, dim=None, *, out=None):
    """Running minimum along ``dim`` and the index where it was found."""
    if dim is None:
        raise TypeError('cummin() missing 1 required positional arguments: "dim"')
    r = _cumext("cummin", False, input, dim, out)
    return r if out is not None else _node_names.rename(r, "CumminBackward0")


def _complex_logaddexp(xp, x, y):
    """``log(exp(x) + exp(y))`` for complex arrays as torch's complex kernel computes it: a
    NaN in either part of either operand gives NaN + NaNj; otherwise the operand with the
    larger real part (``x`` on ties: torch passes the new value as ``x``) is factored out,
    and equal infinite real parts give the smaller operand (-inf) or the plain formula
    (+inf)."""
    with np.errstate(all="ignore"):
        nan = xp.isnan(x.real) | xp.isnan(x.imag) | xp.isnan(y.real) | xp.isnan(y.imag)
        first = x.real < y.real
        lo, hi = xp.where(first, x, y), xp.where(first, y, x)
        same_inf = ~xp.isfinite(lo.real) & (lo.real == hi.real)
        r = xp.log1p(xp.exp(lo - hi)) + hi
        r = xp.where(same_inf & (lo.real < 0), lo, r)
        r = xp.where(same_inf & (lo.real > 0), xp.log(xp.exp(lo) + xp.exp(hi)), r)
        return xp.where(nan, xp.asarray(complex(np.nan, np.nan), r.dtype), r)


def _logcumsumexp_kernel(xp, a, *, dim):
    acc = _acc(a.dtype)
    x = a.astype(acc) if a.dtype != acc else a
    if x.ndim == 0:
        return a.copy()
    if x.dtype.kind == "c":  # no complex logaddexp ufunc: accumulate along dim by hand
        r = xp.moveaxis(x.copy(), dim, 0)
        acc = xp.full(r.shape[1:], complex(-np.inf, 0), r.dtype)  # the sum of nothing
        for k in range(r.shape[0]):
            r[k] = acc = _complex_logaddexp(xp, r[k], acc)
        return xp.moveaxis(r, 0, dim)
    r = ufunc_accumulate(xp, "logaddexp", x, axis=dim)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def _logcumsumexp_vjp(g, a, *, dim, out):
    # d out_k / d a_i = exp(a_i - out_k) for i <= k. The sum over k runs in log space, with
    # the positive and negative parts of g apart, so no exp() overflows (as PyTorch does).
    if a._data.ndim == 0:
        return g
    if a._data.dtype.kind == "c":  # the conjugate of the real form's factors
        return _rcumsum(g * (-out).exp().conj(), dim) * a.exp().conj()
    if a._data.size and float(abs(a._data).max()) < 30 and float(abs(out._data).max()) < 30:
        # moderate values: the direct form, which stays differentiable (double backward)
        return _rcumsum(g * (-out).exp(), dim) * a.exp()

    def reverse_lcse(x):
        return x.flip(dim).logcumsumexp(dim).flip(dim)

    pos = (g * (g > 0)).log()  # -inf where g <= 0
    neg = (-g * (g < 0)).log()
    return (a + reverse_lcse(pos - out)).exp() - (a + reverse_lcse(neg - out)).exp()


logcumsumexp_op = Op("logcumsumexp", _logcumsumexp_kernel, vjp=_logcumsumexp_vjp)


@logcumsumexp_op.defjvp
def _logcumsumexp_jvp(x_dots, a, *, dim, out):
    # dy_i = sum_{j<=i} e^(a_j) da_j / sum_{j<=i} e^(a_j), with the slice's max taken out of
    # both sums (it cancels)
    ad = x_dots[0]
    if a._data.ndim == 0 or a._data.size == 0:
        return ad
    m = a.detach().amax(dim, keepdim=True)
    m = m.masked_fill(~m.isfinite(), 0)
    w = (a - m).exp()
    return (w * ad).cumsum(dim) / w.cumsum(dim)


@public
def logcumsumexp(input, dim=None, *, out=None):
    """``log(cumsum(exp(input), dim))`` computed stably."""
    if dim is None:
        raise TypeError('logcumsumexp() missing 1 required positional arguments: "dim"')
    _check_tensor(input, "logcumsumexp")
    d = wrap_dim(dim, input._data.ndim, "logcumsumexp")  # (before the dtype, as torch)
    if input._data.dtype.kind not in "fcV":
        raise NotImplementedError(
            f'"logcumsumexp_out_cpu" not implemented for \'{_name(input._data.dtype)}\'')
    return _apply(logcumsumexp_op, (input,), {"dim": d}, out=out)


# ------------------------------------------------------------------------------------------------
# diff / trapezoid


def _diff_kernel(xp, a, *, dim):
    if a.dtype.kind == "b":
        return xp.logical_xor(a[(slice(None),) * dim + (slice(1, None),)],
                              a[(slice(None),) * dim + (slice(None, -1),)])
    if a.dtype.kind == "c":
        # torch subtracts as its sub kernel does, ``hi - alpha * lo`` with the complex product
        # by alpha = 1 (NOTE [ Complex add and sub ]): a NaN or infinite part of ``lo``
        # spreads to both parts of the difference
        hi = a[(slice(None),) * dim + (slice(1, None),)]
        lo = a[(slice(None),) * dim + (slice(None, -1),)]
        with np.errstate(invalid="ignore", over="ignore"):
            return hi - lo * a.dtype.type(1)
    return xp.diff(a, axis=dim)


def _diff_vjp(g, a, *, dim):
    if a.shape[dim] == 0:  # the forward clamped an empty dim; nothing flows back
        return g.new_zeros(a.shape)
    return _apply(diff_t_op, (g,), {"dim": dim})


def _diff_t_kernel(xp, g, *, dim):
    """The transpose of ``diff``: out[i] = g[i-1] - g[i] with zeros beyond the ends."""
    pad = [(0, 0)] * g.ndim
    pad[dim] = (1, 1)
    p = xp.pad(g, pad)
    return -xp.diff(p, axis=dim)


def _diff_t_vjp(g, _g, *, dim):
    return _apply(diff_op, (g,), {"dim": dim})


diff_op = Op("diff", _diff_kernel, vjp=_diff_vjp, linear=True)
diff_op.shape_only = (0,)  # the formula reads only the size of ``dim``
diff_t_op = Op("_diff_t", _diff_t_kernel, vjp=_diff_t_vjp, linear=True)


@public
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The ``n``-th forward difference along ``dim`` (bools use xor; complex values subtract
    as PyTorch's sub kernel does, a NaN or infinite part spreading to both parts)."""
    _check_tensor(input, "diff")
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    d = wrap_dim(dim, input._data.ndim, "diff")
    if prepend is not None or append is not None:
        parts = [x if isinstance(x, Tensor) or x is None else
                 tensor(x).expand(*[1 if i == d else s for i, s in
                                          enumerate(input.shape)])
                 for x in (prepend, input, append)]
        input = cat([x for x in parts if x is not None], d)
    if out is not None and n > 0 and input.shape[d] == 0:
        # torch's out= form narrows the (empty) dim from 1 before it differences
        raise IndexError("start out of range (expected to be in range of [0, 0], but got 1)")
    r = input
    for _ in range(n):
        r = _apply(diff_op, (r,), {"dim": d})
    return r if out is None else _dispatch.write_out("diff", out, r)


def _trapezoid_terms(name, y, x, dx, dim):
    """The per-interval areas ``(y[i] + y[i+1]) * dx_i`` (halved by the caller) along ``dim``."""
    _check_tensor(y, name)
    d = wrap_dim(dim, y._data.ndim, name)
    n = y._data.shape[d]
    # (cumulative_trapezoid refuses bools even over an empty dim; trapezoid sums nothing)
    if n == 0 and name != "cumulative_trapezoid":
        return None, d
    if builtins.any(isinstance(t, Tensor) and t.dtype == _dt.bool_ for t in (y, x)):
        what = "x` or `y" if isinstance(x, Tensor) else "y"
        raise RuntimeError(f"{name}: received a bool input for `{what}`, but bool is not "
                           "supported")
    # (an empty dim runs the general steps too, as torch's: its slices are empty, and x
    # still joins the graph and its checks)
    m = builtins.max(n - 1, 0)
    terms = y.narrow(d, builtins.min(1, n), m) + y.narrow(d, 0, m)
    if x is None:
        return terms * (1 if dx is None else dx), d
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if x._data.ndim == 1:
        if x._data.shape[0] != n:
            # (torch 2.13's words stop there)
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        steps = diff(x).reshape([m if i == d else 1 for i in range(y._data.ndim)])
    else:
        steps = diff(x, dim=d)
    return terms * steps, d


@public(method=False, alias=("trapz",))
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``, with sample points ``x`` or a constant ``dx``."""
    terms, d = _trapezoid_terms("trapezoid", y, x, dx, dim)
    if terms is None:  # no samples: PyTorch returns fresh zeros of the input's dtype
        return y.detach().sum(d, dtype=y.dtype)
    if x is None:
        # constant spacing: PyTorch's (sum - (first + last) / 2) * dx, whose rounding and
        # non-finite results (an infinite end gives NaN) differ from summing the intervals
        ends = y.select(d, 0) + y.select(d, y._data.shape[d] - 1)
        return (y.sum(d) - ends * 0.5) * (1 if dx is None else dx)
    return terms.sum(d) / 2


@public(method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along ``dim`` (one element shorter than ``y``)."""
    terms, d = _trapezoid_terms("cumulative_trapezoid", y, x, None if x is None else dx, dim)
    if terms is None:
        return y * 0.0
    if x is None:  # PyTorch scales each interval by dx / 2 before the running sum
        return (terms * ((1 if dx is None else dx) / 2)).cumsum(d)
    return terms.cumsum(d) / 2
