"""Batching rules for ops that user programs reach and that took the per-example fallback
until now (NOTE [ vmap batching ] in _batch_rules.py): the FFT family, the view scatters
(``select_scatter``, ``slice_scatter``, ``diagonal_scatter``), ``scatter_reduce``, the mean
of ``var_mean``/``std_mean``, ``searchsorted``/``bucketize``, ``repeat_interleave`` and its
backward, ``addbmm``, the Cholesky and LU solvers and factorizations, ``matrix_rank``,
``isin``, ``unsafe_split``, ``Tensor.view(dtype)``, ``vander``, the Householder ops
(``geqrf``, ``householder_product``, ``ormqr``), ``fill_diagonal_``, max pooling's second
derivative and ``masked_select`` with an unbatched mask.

Ops whose result's shape depends on the values (``unique``, ``unique_consecutive``,
``masked_select`` with a batched mask) cannot be batched: their rules raise PyTorch's errors
instead of running per example (where the examples' shapes would differ, or worse, happen
to agree).
"""

from __future__ import annotations

from .._core.tensor import Tensor
from . import _batch_rules as _br
from ._batch_rules import (
    _Done, _NoRule, _E, _dimwise, _full, _info, _last2, _logical, _one, _pad, _reduction,
    _scatter, _sizes, _split, _union)


def _levels(tensors):
    infos = [_info(a) if isinstance(a, Tensor) else None for a in tensors]
    lv = _union(infos)
    return lv, _sizes(lv, infos)


def _batched_kwarg(kwargs):
    return any(isinstance(v, Tensor) and _info(v) is not None for v in kwargs.values())


# -- the view scatters: both operands at full batch size, dims shifted


def _view_scatter(handle, args, kwargs):
    """``select_scatter``/``slice_scatter``/``diagonal_scatter`` (dims already wrapped by
    their entrances): ``src`` has the view's logical shape, so at full batch size it has
    the shape of the physical input's view with the dims shifted past the batch dims."""
    a, src = args
    lv, sizes = _levels(args)
    k = len(lv)
    kw = dict(kwargs)
    for key in ("dim", "dim1", "dim2"):
        if key in kw:
            kw[key] = kw[key] + k
    return handle(_full(a, lv, sizes), _full(src, lv, sizes), **kw), lv


# -- sorted search


def _searchsorted(handle, args, kwargs):
    """The ``searchsorted(seq, x, sorter=)`` entrance: one unbatched 1-D sequence takes every
    example's values at once; a batched 1-D sequence becomes one row per example, with each
    example's values flattened into the matching row; N-D sequences have the batch dims
    leading in both operands already."""
    seq, x = args
    kw = dict(kwargs)
    sorter = kw.pop("sorter", None)
    if not isinstance(x, Tensor) or kw.get("out") is not None or _batched_kwarg(kw):
        raise _NoRule
    if seq.dim() == 1 and _info(seq) is None and (sorter is None or _info(sorter) is None):
        px, lv = _info(x)
        return handle(seq, px, sorter=sorter, **kw), lv
    lv, sizes = _levels((seq, x, sorter))
    ps = _full(seq, lv, sizes)
    pso = None if sorter is None else _full(sorter, lv, sizes)
    px = _full(x, lv, sizes)
    if seq.dim() == 1:
        rows = handle(ps, px.reshape(tuple(sizes) + (-1,)), sorter=pso, **kw)
        return rows.reshape(tuple(sizes) + tuple(x.shape)), lv
    return handle(ps, px, sorter=pso, **kw), lv


def _bucketize(handle, args, kwargs):
    """``bucketize(x, boundaries)``: ``searchsorted`` of ``x`` in the 1-D boundaries."""
    x, bounds = args
    if not isinstance(x, Tensor) or bounds.dim() != 1 or kwargs.get("out") is not None:
        raise _NoRule
    from .._ops.sorting import searchsorted

    return _searchsorted(searchsorted.handle, (bounds, x), kwargs)


# -- products and linear algebra


def _addbmm(handle, args, kwargs):
    """``addbmm``: the sum of the products over the logical batch, taken at the logical level
    (so autograd records the parts) from ops with rules."""
    c, a, b = args
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    if c.dtype == _E().bool:
        raise _NoRule
    with _logical():
        r = _E().matmul(a, b).sum(0)
        if alpha != 1:
            r = r * alpha
        if beta != 0:  # beta 0 ignores the input, NaN included
            r = r + (c if beta == 1 else c * beta)
        elif tuple(r.shape) != tuple(c.shape):
            r = r.expand(_E().broadcast_shapes(tuple(c.shape), tuple(r.shape)))
        return _Done(r)


def _matrices(handle, args, kwargs):
    """Ops whose tensor operands are stacks of matrices or vectors over the same leading dims
    (``cholesky_solve``, ``lu_solve``, ``lu_unpack``), or that are indifferent to leading
    dims: every operand at full batch size; the kernels map over leading dims."""
    if kwargs.get("out") is not None or _batched_kwarg(kwargs):
        raise _NoRule
    lv, sizes = _levels(args)
    full = [_full(a, lv, sizes) if isinstance(a, Tensor) else a for a in args]
    return handle(*full, **kwargs), lv


def _vander(handle, args, kwargs):
    """``vander(x)``: each row depends on one element only, so the examples' elements are one
    long vector."""
    phys, levels, k, nd = _one(args)
    if nd != 1:
        raise _NoRule
    r = handle(phys.reshape(-1), **kwargs)
    return r.reshape(tuple(phys.shape) + tuple(r.shape[-1:])), levels


def _pool_gather(handle, args, kwargs):
    """``max_pool_gather(gx, index)`` (max pooling's second derivative): each (n, c) plane is
    gathered on its own, so the batch dims fold into N."""
    gx, index = args
    if gx.dim() < 3 or index.dim() != gx.dim():
        raise _NoRule
    lv, sizes = _levels(args)
    k = len(lv)
    pg, pi = _full(gx, lv, sizes), _full(index, lv, sizes)
    r = handle(pg.reshape((-1,) + tuple(pg.shape[k + 1:])),
               pi.reshape((-1,) + tuple(pi.shape[k + 1:])), **kwargs)
    return r.reshape(tuple(pi.shape)), lv


def _fill_diagonal(handle, args, kwargs):
    """``fill_diagonal`` (``Tensor.fill_diagonal_``'s op): the logical diagonal's flat
    positions, the same in every example, filled by one scatter along the examples' flattened
    values, each example with its own value."""
    from .._ops.misc import _diag_positions

    a, value = args
    if value.is_complex() and not a.is_complex():
        raise _NoRule
    lv, sizes = _levels(args)
    lead = tuple(sizes)
    pa, pv = _full(a, lv, sizes), _full(value, lv, sizes)
    flat = pa.reshape(lead + (-1,))
    pos = _diag_positions(tuple(a.shape), kwargs["wrap"])
    idx = _E().tensor(pos, dtype=_E().int64, device=a.device).expand(lead + (len(pos),))
    src = pv.to(pa.dtype).reshape(lead + (1,)).expand(lead + (len(pos),))
    return flat.scatter(-1, idx, src).reshape(tuple(pa.shape)), lv


def _last2_plain_kwargs(handle, args, kwargs):
    """A one-matrix op (``_last2``) whose tolerances may be tensors: batched ones are left to
    the fallback."""
    if _batched_kwarg(kwargs):
        raise _NoRule
    return _last2(handle, args, kwargs)


# -- shapes, dtypes, membership


def _view_dtype(handle, args, kwargs):
    """``Tensor.view(dtype)``: a size change rescales the last dim, which is logical as long
    as the example has one."""
    phys, levels, k, nd = _one(args)
    if nd == 0 and phys.element_size() != _E().empty((), dtype=kwargs["dtype"]).element_size():
        raise _NoRule
    return handle(phys, **kwargs), levels


def _isin(handle, args, kwargs):
    """``isin(elements, test_elements)`` with the test elements unbatched: one membership test
    of every example's elements."""
    a, b = args
    if not isinstance(a, Tensor) or (isinstance(b, Tensor) and _info(b) is not None):
        raise _NoRule
    phys, levels = _info(a)
    return handle(phys, b, **kwargs), levels


def _masked_select(handle, args, kwargs):
    """``masked_select(x, mask)``: an unbatched mask selects as many elements from every
    example, so the flat result is one row per example; a batched mask would select a
    different number per example, which PyTorch refuses."""
    x, mask = args
    if _info(mask) is not None:
        raise RuntimeError(
            "vmap: Attempted to vmap over `mask` in torch.masked_select(self, mask) We cannot "
            "support this because for each batch this would return a differently shaped "
            "Tensor. Please file an issue at https://github.com/pytorch/pytorch/issues if you "
            "need this feature.")
    phys, levels = _info(x)
    k = len(levels)
    rank = max(x.dim(), mask.dim())
    px = _pad(phys, k, x.dim(), rank)
    shape = tuple(phys.shape[:k]) + _E().broadcast_shapes(tuple(x.shape), tuple(mask.shape))
    kw = dict(kwargs)
    if "shape" in kw:
        kw["shape"] = shape
    flat = handle(px.expand(shape), mask.expand(shape), **kw)
    return flat.reshape(tuple(phys.shape[:k]) + (-1,)), levels


def _dynamic_shape(handle, args, kwargs):
    """An op whose result's shape depends on the values: PyTorch's refusal."""
    raise RuntimeError(
        "vmap: We do not support batching operators that can output dynamic shape. Attempted "
        f"to vmap over aten::{handle.overloadpacket.__name__}. Please file an issue at "
        "https://github.com/pytorch/pytorch/issues if you need this feature.")


RULES = {
    # FFTs and their helpers: dims shift past the batch dims (sizes, shifts, lengths stay)
    **{n: _dimwise for n in (
        "_fft_c2c", "_fft_r2c", "_fft_c2r", "_fft_resize", "_fft_roll",
        "repeat_interleave", "_repeat_interleave_backward")},
    "select_scatter": _view_scatter, "slice_scatter": _view_scatter,
    "diagonal_scatter": _view_scatter,
    "scatter_reduce": _scatter,
    "running_mean": _reduction,  # var_mean's and std_mean's mean
    "addbmm": _addbmm,
    "cholesky_solve": _matrices, "linalg_lu_solve": _matrices, "lu_unpack": _matrices,
    "cholesky_inverse": _last2, "linalg_lu_factor": _last2, "linalg_lu": _last2,
    "linalg_matrix_rank": _last2_plain_kwargs,
    "geqrf": _last2, "linalg_householder_product": _matrices, "ormqr": _matrices,
    "vander": _vander, "max_pool_gather": _pool_gather, "fill_diagonal": _fill_diagonal,
    # ``_input_link(gx, x)`` (gx's values, a zero derivative for x): both at full batch size
    "_input_link": _matrices,
    "isin": _isin, "unsafe_split": _split, "view_dtype": _view_dtype,
    "masked_select": _masked_select,
    # (``nonzero`` keeps the fallback: ``argwhere`` and ``nonzero_static`` are made of it,
    # and PyTorch batches those per example)
    "unique": _dynamic_shape, "unique_consecutive": _dynamic_shape,
}

#: rules of entrances (ops written in Python) by name
ENTRANCE_RULES = {"searchsorted": _searchsorted, "bucketize": _bucketize}

#: rules that only compute on physical tensors (NOTE [ Stand-ins private to a level ])
QUIET = frozenset((_view_scatter, _searchsorted, _matrices, _isin, _vander, _pool_gather))

# registered with the op-class rules, as _batch_rules_nn's
_br._OP_RULES.update(RULES)
_br._ENTRANCE_RULES.update(ENTRANCE_RULES)
_br._QUIET = _br._QUIET | QUIET
