"""Batching rules for the nn, selection, indexing and linear-algebra ops that the
torch.func tutorials' programs reach (NOTE [ vmap batching ] in _batch_rules.py): layer and
batch norm and their backward ops, embedding and its backward, attention, mode padding, the
selections (``kthvalue``, ``median``, ``mode``) and the gather/scatter pair that gives a
selection's values their gradient (``_take_along``, ``_put_along``), advanced indexing and
``index_put`` (NOTE [ Batched advanced indices ]), ``take``/``put``/``take_along_dim``/
``index_add``/``index_copy``/``index_fill``, ``linalg.solve``, ``cdist``, the backward ops
of views, ``repeat``, ``Tensor.unfold``, ``diff`` and ``cumprod``, ``F.unfold``/``F.fold``,
an LSTM step and the fused LSTM layer (run as its steps), and the products that are other
ops in disguise (``trace``, ``vdot``, ``kron``, ``tensordot``, ``addr``: decomposed at the
logical level, so autograd records the parts).

NOTE [ Batch folded into rows or channels ]
An op that treats each row or channel on its own takes the batch dims as more rows or more
channels, the way convolution folds them into its groups:

- ``embedding``: a batched weight ``[n, V, D]`` is one table of ``n * V`` rows, and each
  example's indices are offset by ``V`` times its position; the backward op scatters into
  that table the same way (a padding row is sent to one extra row that is dropped);
  ``take``/``put`` (flat indices) read and write the examples' storages as one flat array
  the same way, each example's indices offset by its size;
- ``native_batch_norm`` and its backward: ``[n, N, C, *sp]`` becomes ``[N, n * C, *sp]``,
  so each example's channels get their own statistics (unbatched per-channel tensors are
  repeated ``n`` times);
- ``native_layer_norm_backward``: the input's gradient is per row already; the weight's
  and bias's gradients, which the op sums over every row, are taken per example.
"""

from __future__ import annotations

import math

from .._core.tensor import Tensor
from . import _batch_rules as _br
from ._batch_rules import (
    _Done, _NoRule, _E, _elementwise, _fold_channels, _full, _info, _logical, _pad, _shift,
    _dimwise, _pool, _sizes, _unary_map, _union, _wrap)


def _levels(args):
    infos = [_info(a) if isinstance(a, Tensor) else None for a in args]
    lv = _union(infos)
    return lv, _sizes(lv, infos)


# -- selections and their gather/scatter


def _select(handle, args, kwargs):
    """``kthvalue``/``median``/``mode`` along a dim (already wrapped by the entrance): the
    dim shifts past the batch dims; a logical 0-d input is its own value at index 0."""
    x = args[0]
    phys, levels = _info(x)
    k = len(levels)
    nd = x.dim()
    kw = dict(kwargs)
    if nd == 0:
        kw["dim"], kw["keepdim"] = k, False
        return handle(phys.unsqueeze(-1), *args[1:], **kw), levels
    kw["dim"] = _shift(kw["dim"], nd, k)
    return handle(phys, *args[1:], **kw), levels


def _take_along(handle, args, kwargs):
    """``_take_along(a, idx)`` (a selection's values, with gradient): both at full batch
    size, the dim shifted; a 0-d ``a`` is its own value."""
    a, idx = args
    lv, sizes = _levels(args)
    pa = _full(a, lv, sizes)
    if a.dim() == 0:
        return pa.clone(), lv
    k = len(lv)
    pi = _full(idx, lv, sizes)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], a.dim()) + k, shape=tuple(pa.shape))
    return handle(pa, pi, **kw), lv


def _put_along(handle, args, kwargs):
    """``_put_along(g, idx)``, the gradient of ``_take_along``: scattered into zeros of
    ``sizes + shape`` behind the batch dims."""
    g, idx = args
    lv, sizes = _levels(args)
    shape = tuple(kwargs["shape"])
    pg = _full(g, lv, sizes)
    if not shape:
        return pg.clone(), lv
    k = len(lv)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], len(shape)) + k, shape=tuple(sizes) + shape)
    return handle(pg, _full(idx, lv, sizes), **kw), lv


def _rearrange(handle, args, kwargs):
    """The sorting family's private permute-and-reshape (a flattening, with gradient): the
    batch dims stay in front."""
    phys, levels = _info(args[0])
    k = len(levels)
    sizes = tuple(phys.shape[:k])
    perm = tuple(range(k)) + tuple(p + k for p in kwargs["perm"])
    return handle(phys, perm=perm, shape=sizes + tuple(kwargs["shape"]),
                  src_shape=tuple(phys.shape)), levels


# -- embedding (NOTE [ Batch folded into rows or channels ])


def _offsets(pi, sizes, rows):
    """Physical indices ``pi`` (batch dims in front, at full size), each example's offset by
    ``rows`` times its flat position among the examples."""
    k = len(sizes)
    off = _E().arange(math.prod(sizes), device=pi.device).mul_(rows)
    return pi + off.reshape(tuple(sizes) + (1,) * (pi.dim() - k))


def _embedding(handle, args, kwargs):
    weight, idx = args
    iw, ii = _info(weight), _info(idx)
    if iw is None:  # per-example indices into one table: the lookup is batched as it is
        return handle(weight, ii[0], **kwargs), ii[1]
    pad = kwargs.get("padding_idx")
    if weight.dim() != 2 or (pad is not None and pad >= 0 and iw[0].requires_grad):
        raise _NoRule  # a physical graph would not know the padding row per example
    lv, sizes = _levels(args)
    n = math.prod(sizes)
    V = weight.shape[0]
    pw = _full(weight, lv, sizes).reshape((n * V, weight.shape[1]))
    pi = _offsets(_full(idx, lv, sizes), sizes, V)
    return handle(pw, pi, padding_idx=None, num_weights=n * V), lv


def _embedding_backward(handle, args, kwargs):
    g, idx = args
    lv, sizes = _levels(args)
    n = math.prod(sizes)
    V = kwargs["num_weights"]
    pad = kwargs.get("padding_idx")
    pg = _full(g, lv, sizes)
    raw = _full(idx, lv, sizes)
    pi = _offsets(raw, sizes, V)
    rows = n * V
    if pad is not None and pad >= 0:
        # the padding row's lookups go to one extra row, dropped below
        pi = _E().where(raw == pad, rows, pi)
        rows += 1
    res = handle(pg, pi, num_weights=rows, padding_idx=None)
    if rows != n * V:
        res = res[:n * V]
    return res.reshape(tuple(sizes) + (V, g.shape[-1])), lv


# -- normalisation (NOTE [ Batch folded into rows or channels ])


def _layer_norm(handle, args, kwargs):
    x, w, b = args
    if _info(w) is None and _info(b) is None:  # the rows of every example normalised at once
        phys, levels = _info(x)
        return handle(phys, w, b, **kwargs), levels
    # a weight or bias per example (ensembling): normalise, then scale and shift
    lv, sizes = _levels(args)
    k = len(lv)
    y, mean, rstd = handle(_full(x, lv, sizes), None, None, **kwargs)
    if w is not None:
        y = y * (w if _info(w) is None else _pad(_full(w, lv, sizes), k, w.dim(), x.dim()))
    if b is not None:
        y = y + (b if _info(b) is None else _pad(_full(b, lv, sizes), k, b.dim(), x.dim()))
    return (y, mean, rstd), lv


def _layer_norm_backward(handle, args, kwargs):
    g, x, w, mean, rstd = args
    ndim = kwargs["ndim"]
    lv, sizes = _levels(args)
    k = len(lv)
    pg, px, pm, pr = (_full(t, lv, sizes) for t in (g, x, mean, rstd))
    if w is None or _info(w) is None:
        gx = handle(pg, px, w, pm, pr, ndim=ndim)[0]
    else:  # a weight per example: g * w is the gradient of the normalised input
        pw = _pad(_full(w, lv, sizes), k, w.dim(), x.dim())
        gx = handle(pg * pw, px, None, pm, pr, ndim=ndim)[0]
    lead = tuple(range(k, k + x.dim() - ndim))
    if w is None:
        gw = pg.new_zeros(tuple(sizes) + (0,))
    else:
        t = pg * ((px - pm) * pr)
        gw = t.sum(lead) if lead else t
    gb = pg.sum(lead) if lead else pg.clone()
    return (gx, gw, gb), lv


def _per_channel(t, lv, sizes, n):
    """A per-channel tensor ``[C]`` as ``[n * C]`` matching a folded input."""
    if t is None:
        return None
    if _info(t) is None:
        return t.repeat(n)
    return _full(t, lv, sizes).reshape(-1)


def _unfold_channels(r, sizes, shape):
    """``[N, n * C, *sp]`` back to physical ``[n..., N, C, *sp]``."""
    N, C = shape[0], shape[1]
    r = r.reshape((N, -1, C) + tuple(shape[2:])).movedim(1, 0)
    return r.reshape(tuple(sizes) + tuple(shape))


def _batch_norm(handle, args, kwargs):
    x, w, b, mean, var = args
    if x.dim() < 2:
        raise _NoRule
    lv, sizes = _levels(args)
    k, n = len(lv), math.prod(sizes)
    px = _fold_channels(_full(x, lv, sizes), k)
    y, m, r = handle(px, *(_per_channel(t, lv, sizes, n) for t in (w, b, mean, var)),
                     **kwargs)
    C = x.shape[1]
    shape = tuple(x.shape)
    return (_unfold_channels(y, sizes, shape), m.reshape(tuple(sizes) + (C,)),
            r.reshape(tuple(sizes) + (C,))), lv


def _batch_norm_backward(handle, args, kwargs):
    g, x, w, m, rstd = args
    if x.dim() < 2:
        raise _NoRule
    lv, sizes = _levels(args)
    k, n = len(lv), math.prod(sizes)
    pg = _fold_channels(_full(g, lv, sizes), k)
    px = _fold_channels(_full(x, lv, sizes), k)
    gx, gw, gb = handle(pg, px, *(_per_channel(t, lv, sizes, n) for t in (w, m, rstd)),
                        **kwargs)
    C = x.shape[1]
    return (_unfold_channels(gx, sizes, tuple(x.shape)),
            gw.reshape(tuple(sizes) + ((C,) if w is not None else (0,))),
            gb.reshape(tuple(sizes) + (C,))), lv


# -- gathers and index ops


def _take_along_dim(handle, args, kwargs):
    x, idx = args
    lv, sizes = _levels(args)
    k = len(lv)
    px, pi = _full(x, lv, sizes), _full(idx, lv, sizes)
    dim = kwargs["dim"]
    if dim is None:  # both read as 1-D, per example
        px, pi = px.reshape(tuple(sizes) + (-1,)), pi.reshape(tuple(sizes) + (-1,))
        dim = k
    elif x.dim() == 0:
        raise _NoRule
    else:
        dim = _wrap(dim, x.dim()) + k
    return handle(px, pi, dim=dim, shape=tuple(px.shape)), lv


def _index_into(handle, args, kwargs):
    """``index_add``/``index_copy`` with one index for every example: self and source at
    full batch size, the dim shifted."""
    x, idx, src = args
    if _info(idx) is not None or x.dim() == 0 or src.dim() != x.dim():
        raise _NoRule
    lv, sizes = _levels(args)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], x.dim()) + len(lv))
    return handle(_full(x, lv, sizes), idx, _full(src, lv, sizes), **kw), lv


def _index_fill(handle, args, kwargs):
    x, idx, value = args
    if _info(idx) is not None or _info(value) is not None or x.dim() == 0:
        raise _NoRule
    phys, levels = _info(x)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], x.dim()) + len(levels))
    return handle(phys, idx, value, **kw), levels


def _put(handle, args, kwargs):
    """``put`` (flat indices): the examples' storages as one flat array, each example's
    indices (made non-negative) offset by its size."""
    x, idx, src = args
    lv, sizes = _levels(args)
    n = max(x.numel(), 1)
    pi = _offsets(_full(idx, lv, sizes).remainder(n), sizes, n)
    res = handle(_full(x, lv, sizes).reshape(-1), pi.reshape(-1),
                 _full(src, lv, sizes).reshape(-1), **kwargs)
    return res.reshape(tuple(sizes) + tuple(x.shape)), lv


def _take(handle, args, kwargs):
    """``take`` (flat indices), as ``put``: one flat array, offset indices."""
    x, idx = args
    lv, sizes = _levels(args)
    n = max(x.numel(), 1)
    pi = _offsets(_full(idx, lv, sizes).remainder(n), sizes, n)
    px = _full(x, lv, sizes).reshape(-1)
    return handle(px, pi, shape=tuple(px.shape)), lv


def _fill(handle, args, kwargs):
    """``fill(self, value)``: a value per example broadcasts from its own batch dims."""
    x, v = args
    lv, sizes = _levels(args)
    k = len(lv)
    pv = v if _info(v) is None else _pad(_full(v, lv, sizes), k, v.dim(), x.dim())
    return handle(_full(x, lv, sizes), pv, **kwargs), lv


def _repeat_backward(handle, args, kwargs):
    """The gradient of ``repeat``: the batch dims repeated once."""
    phys, levels = _info(args[0])
    k = len(levels)
    sizes = tuple(phys.shape[:k])
    reps, shape = tuple(kwargs["repeats"]), tuple(kwargs["in_shape"])
    padded = (1,) * (len(reps) - len(shape)) + shape
    r = handle(phys, repeats=(1,) * k + reps, in_shape=sizes + padded)
    return r.reshape(sizes + shape), levels


def _unfold_backward(handle, args, kwargs):
    """The gradient of ``Tensor.unfold``: windows added back behind the batch dims."""
    phys, levels = _info(args[0])
    shape = tuple(kwargs["in_shape"])
    if not shape:
        raise _NoRule
    k = len(levels)
    return handle(phys, in_shape=tuple(phys.shape[:k]) + shape,
                  dimension=_wrap(kwargs["dimension"], len(shape)) + k, size=kwargs["size"],
                  step=kwargs["step"]), levels


def _pair_along(handle, args, kwargs):
    """Two operands of one shape and a dim (``_cumprod_backward``): both at full batch size,
    the dim shifted."""
    if args[0].dim() == 0:
        raise _NoRule
    lv, sizes = _levels(args)
    kw = dict(kwargs, dim=_wrap(kwargs["dim"], args[0].dim()) + len(lv))
    return handle(*(_full(a, lv, sizes) for a in args), **kw), lv


def _lstm_step(handle, args, kwargs):
    """One LSTM step (``lstm_cell``: input projection, h, c, recurrent weight): with one
    weight for every example, the examples' rows are more rows of one step."""
    xw, h, c, w = args
    if _info(w) is not None:
        raise _NoRule
    lv, sizes = _levels(args)
    rows = [_full(t, lv, sizes).reshape((-1,) + tuple(t.shape[1:])) for t in (xw, h, c)]
    outs = handle(*rows, w, **kwargs)
    lead = tuple(sizes) + (xw.shape[0],)
    return tuple(o.reshape(lead + tuple(o.shape[1:])) for o in outs), lv


def _lstm_layer(handle, args, kwargs):
    """A fused LSTM layer (``nn.LSTM``) under vmap: its steps at the logical level (one
    input projection, then one batched ``lstm_cell`` per time step), which autograd records
    one by one; the outputs kept only for the fused backward op are not made."""
    from .._ops.nn_rnn import _lstm_layer_replay

    x, w_ih, b, h0, c0, w_hh, w_hr = args[:7]
    b_hh = args[9] if len(args) > 9 else None
    with _logical():
        out, h, c = _lstm_layer_replay(x, w_ih, b, h0, c0, w_hh, w_hr, kwargs["reverse"],
                                       b_hh)
    return _Done((out, h, c) + (None,) * 6)


# -- advanced indexing: NOTE [ Batched advanced indices ]
# ``a[key]`` per example, with index tensors batched or not, is one NumPy advanced index of
# the physical tensor with one ``arange`` index per batch dim put in front of the key: the
# aranges and the example's index tensors broadcast together, so every example reads its
# own slice with its own indices. NumPy puts the broadcast index dims first when advanced
# indices are separated by anything, and where the first one is when they are adjacent:
# with the aranges in front, an example's indices adjacent at a later position (``a[:, j]``)
# become separated, so their dims are moved back to where the example's result has them.
# ``index_put`` (the gradient of ``_index``, and ``x[j] = v``) writes through the same key,
# its values laid out as that read gives them.


def _advanced_key(a, idx, spec, also=()):
    """(physical index tensors with the batch aranges in front, the spec for them, the
    levels, their sizes, the rank of the broadcast index dims, and where the example's
    result has them) -- or _NoRule for bool masks."""
    from .._ops import indexing as _ix

    lv, sizes = _levels((a,) + tuple(idx) + tuple(also))
    k = len(lv)
    if any(t.dtype == _E().bool for t in idx):
        raise _NoRule  # a mask: the selected count is the data's
    rank = max(t.dim() for t in idx)
    pidx = []
    for t in idx:
        inf = _info(t)
        pidx.append(t if inf is None else _pad(_full(t, lv, sizes), k, t.dim(), rank))
    E = _E()
    aranges = [E.arange(n, device=a.device).reshape((1,) * i + (n,) + (1,) * (k - 1 - i + rank))
               for i, n in enumerate(sizes)]
    at = [i for i, s in enumerate(spec) if s is _ix._T]
    place = 0  # where the example's result holds the index dims
    if at == list(range(at[0], at[-1] + 1)):
        n_ell = a.dim() - sum(1 for s in spec if s is not Ellipsis)
        for s in spec[:at[0]]:
            place += n_ell if s is Ellipsis else 1
    return tuple(aranges + pidx), (_ix._T,) * k + tuple(spec), lv, sizes, rank, place


def _index(handle, args, kwargs):
    a, idx = args[0], args[1:]
    spec = kwargs["spec"]
    keys, pspec, lv, sizes, rank, place = _advanced_key(a, idx, spec)
    k = len(lv)
    pa = _full(a, lv, sizes)
    r = handle(pa, *keys, spec=pspec, shape=tuple(pa.shape))
    if place:
        r = r.movedim(tuple(range(k, k + rank)), tuple(range(k + place, k + place + rank)))
    return r, lv


def _index_put(handle, args, kwargs):
    a, v, idx = args[0], args[1], args[2:]
    spec = kwargs["spec"]
    keys, pspec, lv, sizes, rank, place = _advanced_key(a, idx, spec, also=(v,))
    k = len(lv)
    pa = _full(a, lv, sizes)
    pv = v
    if _info(v) is not None or place:
        # the values laid out as the physical read gives them: batch dims, index dims, rest
        read_rank = len(_read_shape(a, idx, spec))
        pv = _pad(_full(v, lv, sizes), k, v.dim(), read_rank)
        if place:
            pv = pv.movedim(tuple(range(k + place, k + place + rank)), tuple(range(k, k + rank)))
    return handle(pa, pv, *keys, spec=pspec, accumulate=kwargs["accumulate"]), lv


def _read_shape(a, idx, spec):
    """The shape one example's ``a[key]`` has."""
    import numpy as np

    from .._ops import indexing as _ix

    dummy = np.broadcast_to(np.int8(0), tuple(a.shape))  # no storage of a's size
    key = _ix._key(spec, [np.zeros(tuple(t.shape), np.int64) for t in idx])
    return dummy[key].shape


#: the views whose backward scatters into zeros (``_view_scatter``), by their dim params
_SCATTER_VIEWS = {"narrow": ("dim",), "select": ("dim",), "diagonal": ("dim1", "dim2")}


def _view_scatter(handle, args, kwargs):
    """The backward of ``narrow``/``select``/``diagonal``: zeros of ``sizes + in_shape``
    with the view's dims shifted past the batch dims."""
    phys, levels = _info(args[0])
    k = len(levels)
    view = kwargs["view"]
    if view not in _SCATTER_VIEWS:
        raise _NoRule
    shape = tuple(kwargs["in_shape"])
    sizes = tuple(phys.shape[:k])
    vp = dict(kwargs["vparams"], in_shape=sizes + shape)
    for key in _SCATTER_VIEWS[view]:
        vp[key] = _wrap(vp[key], len(shape)) + k
    return handle(phys, in_shape=sizes + shape, view=view, vparams=vp), levels


# -- linear algebra


def _solve(handle, args, kwargs):
    """``linalg.solve``: NumPy's solver maps over leading dims; both operands get every
    level and the logical leading dims the other has (a vector ``B`` keeps its rank)."""
    a, b = args
    lv, sizes = _levels(args)
    k = len(lv)
    tail_b = 1 if kwargs["vec"] else 2
    lead = max(a.dim() - 2, b.dim() - tail_b)
    pa = _pad(_full(a, lv, sizes), k, a.dim(), lead + 2)
    pb = _pad(_full(b, lv, sizes), k, b.dim(), lead + tail_b)
    return handle(pa, pb, **kwargs), lv


def _broadcast_matrices(handle, args, kwargs):
    """Ops on the last two dims that broadcast over the leading ones (attention and its
    backward, ``cdist``): the batched operands get the levels and the logical rank they
    lack, as an element-wise op's do."""
    for a in args:
        if isinstance(a, Tensor) and a.dim() < 2:
            raise _NoRule
    return _elementwise(handle, args, kwargs)


def _trace(handle, args, kwargs):
    with _logical():
        return _Done(args[0].diagonal(0, 0, 1).sum())


def _vdot(handle, args, kwargs):
    a, b = args
    with _logical():
        return _Done((a.conj() * b).sum())


def _kron(handle, args, kwargs):
    """``kron(a, b)``: ``a`` and ``b`` interleaved as ``[a0, 1, a1, 1...] * [1, b0, 1, b1...]``
    (the ranks first padded to one), then each pair of dims merged."""
    a, b = args
    n = max(a.dim(), b.dim())
    sa = (1,) * (n - a.dim()) + tuple(a.shape)
    sb = (1,) * (n - b.dim()) + tuple(b.shape)
    with _logical():
        pa = a.reshape(tuple(d for s in sa for d in (s, 1)))
        pb = b.reshape(tuple(d for s in sb for d in (1, s)))
        return _Done((pa * pb).reshape(tuple(x * y for x, y in zip(sa, sb))))


def _tensordot(handle, args, kwargs):
    """``tensordot`` as the ``einsum`` that names its contracted dims."""
    a, b = args
    da, db = list(kwargs["dims_a"]), list(kwargs["dims_b"])
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ta = [next(letters) for _ in range(a.dim())]
    tb = [next(letters) for _ in range(b.dim())]
    for x, y in zip(da, db):
        tb[y] = ta[x]
    out = [ta[i] for i in range(a.dim()) if i not in da] + \
        [tb[i] for i in range(b.dim()) if i not in db]
    with _logical():
        return _Done(_E().einsum("".join(ta) + "," + "".join(tb) + "->" + "".join(out), a, b))


def _addr(handle, args, kwargs):
    c, a, b = args
    beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
    if c.dtype == _E().bool:
        raise _NoRule  # bool's "or"/"and" arithmetic
    with _logical():
        r = _E().outer(a, b)
        if alpha != 1:
            r = r * alpha
        if beta != 0:  # beta 0 ignores the input, NaN included
            r = r + (c if beta == 1 else c * beta)
        elif tuple(r.shape) != tuple(c.shape):
            r = r.expand(_E().broadcast_shapes(tuple(c.shape), tuple(r.shape)))
        return _Done(r)


RULES = {
    "kthvalue": _select, "median": _select, "mode": _select,
    "_take_along": _take_along, "_put_along": _put_along, "_rearrange": _rearrange,
    "embedding": _embedding, "embedding_backward": _embedding_backward,
    "native_layer_norm": _layer_norm, "native_layer_norm_backward": _layer_norm_backward,
    "native_batch_norm": _batch_norm, "native_batch_norm_backward": _batch_norm_backward,
    "scaled_dot_product_attention": _broadcast_matrices,
    "scaled_dot_product_attention_backward": _broadcast_matrices, "cdist": _broadcast_matrices,
    "take_along_dim": _take_along_dim, "index_add": _index_into, "index_copy": _index_into,
    "index_fill": _index_fill, "put": _put, "take": _take, "_view_scatter": _view_scatter,
    "fill": _fill, "ldexp": _elementwise, "_where_zero": _elementwise,
    # backward ops of repeat, Tensor.unfold, diff, cumprod; F.unfold / F.fold
    "_repeat_backward": _repeat_backward, "_unfold_backward": _unfold_backward,
    "_index": _index, "index_put": _index_put, "lstm_cell": _lstm_step,
    "lstm_layer": _lstm_layer,
    "_diff_t": _dimwise, "_cumprod_backward": _pair_along, "im2col": _pool, "col2im": _pool,
    "linalg_solve": _solve,
    "trace": _trace, "vdot": _vdot, "kron": _kron, "tensordot": _tensordot, "addr": _addr,
    # reflect/replicate/circular padding pads the trailing dims of any leading ones
    "pad": _unary_map,
}

#: rules that only compute on physical tensors (NOTE [ Stand-ins private to a level ])
QUIET = frozenset((_take_along, _put_along, _rearrange, _embedding, _embedding_backward,
                   _layer_norm, _layer_norm_backward, _batch_norm, _batch_norm_backward,
                   _broadcast_matrices, _take_along_dim, _index_into, _index_fill, _solve,
                   _view_scatter, _take, _fill, _repeat_backward, _unfold_backward,
                   _pair_along, _lstm_step))

# registered with the op-class rules (``_batch_rules`` does not import this module: the
# helpers above come from it)
_br._OP_RULES.update(RULES)
_br._QUIET = _br._QUIET | QUIET
