"""Sparse gradients: sums of COO tensors as PyTorch forms them, and what autograd does when a
gradient is sparse (``nn.Embedding(sparse=True)``, ``F.embedding_bag(..., sparse=True)``, a
custom Function returning a COO tensor).

NOTE [ Sparse gradient sums ]
PyTorch never coalesces a gradient on its own: an embedding's sparse gradient holds one row
per lookup, and summing two COO tensors (``a + b``, ``a += b``, a second backward into
``.grad``, two uses of one table in a graph) takes one of two routes, chosen by the memory
layout of the two ``values`` tensors, and which one shows in ``print(w.grad)``:

- both contiguous: a *merge*. Walk both entry lists at once, comparing the index tuples of
  the two heads; the smaller head is copied to the result, equal heads are summed into one
  entry. On coalesced inputs this is the sorted union; on uncoalesced ones it is still this
  walk, entry after entry (``[1, 2] + [2, 1]`` gives ``[1, 2, 1]`` with the 2s summed).
  The result is coalesced when both inputs are.
- otherwise (values that are a broadcast view, as the gradient of a ``sum()`` is): the
  *concatenation* of the two entry lists, coalesced only when it would hold more entries than
  the tensor has elements.

An empty side gives the other side unchanged (scaled by ``alpha``). ``.grad`` keeps a first
sparse gradient with contiguous values (a non-contiguous one is copied), and two gradients
meeting in one input buffer are summed newest first, as PyTorch's engine does.
"""

from __future__ import annotations

import numpy as np

from .._core.tensor import wrap
from . import _tensor as _st
from ._tensor import _SparseTensor, coo


def _ember():
    import ember

    return ember


def _contiguous_values(t) -> bool:
    return bool(t._vals._data.flags.c_contiguous)


def _merge_slots(kt, ks):
    """The result slot of each entry of ``t`` and of ``s`` in the merge walk (NOTE [ Sparse
    gradient sums ]), and the number of slots."""
    at, bs = kt.tolist(), ks.tolist()
    nt, ns = len(at), len(bs)
    rt = [0] * nt
    rs = [0] * ns
    i = j = r = 0
    while i < nt and j < ns:
        a, b = at[i], bs[j]
        if a <= b:
            rt[i] = r
            i += 1
        if b <= a:
            rs[j] = r
            j += 1
        r += 1
    while i < nt:
        rt[i] = r
        i += 1
        r += 1
    while j < ns:
        rs[j] = r
        j += 1
        r += 1
    return np.asarray(rt, dtype=np.int64), np.asarray(rs, dtype=np.int64), r


def _copy(v):
    return v.clone(memory_format=_ember().contiguous_format)


def add(t, s, alpha=1):
    """``t + alpha * s`` for two COO tensors of one shape and sparse dim, formed as PyTorch
    forms it (NOTE [ Sparse gradient sums ]). Differentiable in both values."""
    e = _ember()
    shape = tuple(t.shape)
    dtype = e.promote_types(t.dtype, s.dtype)
    tv = t._vals if t._vals.dtype is dtype else t._vals.to(dtype)
    sv = s._vals if s._vals.dtype is dtype else s._vals.to(dtype)
    if alpha != 1:
        sv = sv * alpha
    if s._nnz() == 0:
        return coo(t._idx.clone(), _copy(tv), shape, t._coalesced)
    if t._nnz() == 0:
        return coo(s._idx.clone(), sv if alpha != 1 else _copy(sv), shape, s._coalesced)
    if _contiguous_values(t) and _contiguous_values(s):
        kt = _st._row_major_order(t._idx._data, shape)
        ks = _st._row_major_order(s._idx._data, shape)
        rt, rs, n = _merge_slots(kt, ks)
        idx = np.empty((t._idx.shape[0], n), dtype=np.int64)
        idx[:, rt] = t._idx._data
        idx[:, rs] = s._idx._data
        vals = e.zeros((n,) + tuple(tv.shape[1:]), dtype=dtype)
        vals = vals.index_add(0, wrap(rt), tv).index_add(0, wrap(rs), sv)
        return coo(wrap(idx), vals, shape, t._coalesced and s._coalesced)
    out = coo(e.cat([t._idx, s._idx], 1), e.cat([tv, sv], 0), shape, False)
    if out._nnz() > int(np.prod(shape, dtype=np.int64)):  # keep the entry count bounded
        out = _st._coalesce(out)
    return out


def store(g, create_graph=False):
    """What ``.grad`` keeps of a leaf's first sparse gradient ``g``: the same entries, with
    the values copied when they are not contiguous (always under ``create_graph``, where the
    copy is recorded)."""
    if create_graph and g.requires_grad:
        return coo(g._idx, g._vals.clone(), tuple(g.shape), g._coalesced)
    vals = g._vals.detach()
    if not _contiguous_values(g):
        vals = wrap(np.ascontiguousarray(vals._data))
    return coo(g._idx, vals, tuple(g.shape), g._coalesced)


def accumulate(old, g, create_graph=False):
    """``.grad`` after adding gradient ``g`` into ``old`` (one of them sparse): sparse into
    sparse stays sparse, and a dense one on either side makes it dense. Without
    ``create_graph`` the sum is formed in place in ``old`` where PyTorch's is."""
    old_sp, g_sp = type(old) is _SparseTensor, type(g) is _SparseTensor
    if old_sp and g_sp:
        r = add(old, g)
        if create_graph or old.requires_grad:
            return r
        old._idx, old._vals, old._coalesced = r._idx, r._vals.detach(), r._coalesced
        return old
    if g_sp:  # sparse into dense
        if create_graph or old.requires_grad:
            return old + g
        add_into_dense(old, g)
        return old
    return g + old  # dense into sparse: a new dense gradient


def add_into_dense(dense, s):
    """Add COO tensor ``s`` into the strided ``dense`` in place, entry after entry."""
    if s._nnz():
        d = dense._data
        vals = s._vals._data
        if vals.dtype != d.dtype:
            vals = vals.astype(d.dtype)
        np.add.at(d, tuple(s._idx._data), vals)
        dense._bump()


def buffer_sum(old, g):
    """Two gradients of one input buffer slot, one of them sparse, summed (the newer first
    where both are sparse: NOTE [ Sparse gradient sums ])."""
    if type(old) is _SparseTensor:
        return g + old  # a dense ``g`` gives a dense sum; a sparse one, ``add(g, old)``
    return old + g


def embedding_grad(g, indices, num_weights, padding_idx):
    """The sparse gradient of an embedding table: one entry per lookup, in lookup order,
    without the lookups of ``padding_idx`` (PyTorch's uncoalesced form)."""
    from . import _ops  # noqa: F401  (fills the handler tables the gradient's users need)

    e = _ember()
    dim = g.shape[-1]
    flat = indices.reshape(-1)
    vals = g.reshape(flat.shape[0], dim)
    if padding_idx is not None and padding_idx >= 0:
        keep = flat != padding_idx
        flat, vals = flat[keep], vals[keep]
    if flat.shape[0] == 0:
        return coo(e.zeros((1, 0), dtype=e.int64), e.zeros((0, dim), dtype=g.dtype),
                   (num_weights, dim), True)
    idx = flat.reshape(1, -1)
    if idx.dtype is not e.int64:
        idx = idx.to(e.int64)
    return coo(idx.detach(), vals, (num_weights, dim), flat.shape[0] <= 1)
