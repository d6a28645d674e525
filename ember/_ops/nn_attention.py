"""Scaled dot-product attention as one fused op.

``softmax(q @ k^T * scale + mask) @ v``: the kernel keeps the attention probabilities for
backward (one (L, S) matrix per head), and the derivative formula is the closed form
(softmax's Jacobian applied to ``g @ v^T``). With dropout the attention is composed from
ember ops instead, so the random mask is ordinary autograd state.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import _dispatch, _parallel
from .._core.tensor import Tensor
from ._registry import Op
from .nn_dropout import dropout
from .nn_checks import kernel_dtype
from ._xp_compat import _is_half_float
from .._kernels import _blas


# NOTE [ Transposed attention scores ]
# The kernels hold the scores and probabilities transposed, as (..., S, L) arrays: the
# softmax then reduces over the middle axis, which NumPy runs as elementwise max/add of
# whole contiguous rows, twice as fast as reducing along each short contiguous row. The
# products that use p take it as a transposed view, which BLAS reads directly.
#
# Each kernel's products are a stack of one (L, E) x (E, S)-sized GEMM per head; a GPT
# head's (128 x 64 x 128, a million multiply-adds) is above OpenBLAS's own one-thread limit,
# so on an oversubscribed machine every member of the stack paid the threads' spin-waits:
# the causal (8, 4, 128, 64) forward took 265 ms against 5 ms with the BLAS held at one
# thread (load 18, same process). The kernels hold the BLAS at one thread for the whole
# stack when NOTE [ GEMM threads by shape ] in ember/_kernels/_blas.py says so.


def _one_thread(xp, q, k):
    # (always: NOTE [ Attention pieces do not claim the BLAS ])
    return _blas.one_thread_for(q.shape[-2] * k.shape[-2] * q.shape[-1] if xp is np else 0,
                                always=True)


# NOTE [ Half attention as torch's CPU kernel ]
# For float16 and bfloat16 operands PyTorch's CPU attention (its flash kernel) works in
# float32 with the half type at three places, and the kernels here follow it step by step:
# forward, over blocks of 512 keys (one block below 512), a running maximum and sum with
# the unnormalised probabilities rounded to the half type for the product with the
# values, the output divided by the sum and rounded once; backward, over blocks of queries
# (32 of them, 64 from 192 queries, 256 from 768), the probabilities (float32, kept from
# the forward) and the scores' gradient each rounded to the half type for the products,
# the key and value gradients accumulated block by block in the half type, the query
# gradient rounded once. Computing everything in float32 and rounding only the results
# left about 5% of a (1, 1, 300, 16) bfloat16 attention's outputs and gradients outside
# ``torch.testing``'s bfloat16 tolerance; following the kernel, about 0.1%.


def _widened(xp, *arrays):
    """``arrays`` as float32 (a bool mask, or None, as given)."""
    return tuple(a if a is None or a.dtype == xp.bool_ else a.astype(np.float32)
                 for a in arrays)


def _half_forward(xp, q, k, v, mask, scale):
    """(output, float32 probabilities) of half-type operands (NOTE [ Half attention as
    torch's CPU kernel ])."""
    half = q.dtype
    qf, kf, vf, mf = _widened(xp, q, k, v, mask)
    s = (qf @ xp.swapaxes(kf, -1, -2)) * np.float32(scale)
    if mf is not None:
        s = xp.where(mf, s, -xp.inf) if mf.dtype == xp.bool_ else s + mf
    n = s.shape[-1]
    block = 512 if n >= 512 else max(n, 1)
    shape = s.shape[:-1] + (1,)
    top = xp.full(shape, -xp.inf, np.float32)
    total = xp.zeros(shape, np.float32)
    acc = None
    for lo in range(0, n, block):
        sj = s[..., lo:lo + block]
        new = xp.maximum(top, sj.max(axis=-1, keepdims=True))
        base = xp.where(xp.isfinite(new), new, 0)
        e = xp.exp(sj - base)
        keep = xp.exp(xp.where(xp.isfinite(top), top - base, -xp.inf))
        part = e.astype(half).astype(np.float32) @ vf[..., lo:lo + block, :]
        acc = part if acc is None else acc * keep + part
        total = total * keep + e.sum(axis=-1, keepdims=True)
        top = new
    if acc is None:
        acc = xp.zeros(s.shape[:-1] + vf.shape[-1:], np.float32)
    safe = xp.where(total == 0, 1, total)
    out = (acc / safe).astype(half)
    lse = xp.where(xp.isfinite(top), top, 0) + xp.log(safe)
    p = xp.exp(s - lse)
    return out, p


def _half_backward(xp, g, q, k, v, o, p, scale, needs):
    """Half-type attention gradients (NOTE [ Half attention as torch's CPU kernel ])."""
    half = q.dtype
    f = np.float32
    gf, qf, kf, vf, of = _widened(xp, g, q, k, v, o)
    sc = f(scale)
    n = qf.shape[-2]
    block = 256 if n >= 768 else 64 if n >= 192 else 32
    batch = np.broadcast_shapes(p.shape[:-2], gf.shape[:-2])
    gq = xp.empty(batch + (n, kf.shape[-1]), half) if needs[0] else None
    gk = xp.zeros(batch + kf.shape[-2:], half) if needs[1] else None
    gv = xp.zeros(batch + vf.shape[-2:], half) if needs[2] else None
    gm = xp.empty(batch + p.shape[-2:], half) if len(needs) > 3 and needs[3] else None
    vt = xp.swapaxes(vf, -1, -2)
    for lo in range(0, n, block):
        rows = slice(lo, lo + block)
        pi, gi = p[..., rows, :], gf[..., rows, :]
        if gv is not None:
            pt = xp.swapaxes(pi.astype(half).astype(f), -1, -2)
            gv[...] = (gv.astype(f) + pt @ gi).astype(half)
        if gq is None and gk is None and gm is None:
            continue
        d = (gi * of[..., rows, :]).sum(axis=-1, keepdims=True)
        ds = pi * (gi @ vt - d)
        if gm is not None:
            gm[..., rows, :] = ds.astype(half)
        dsh = ds.astype(half).astype(f)
        if gq is not None:
            # over blocks of 512 keys, accumulated in the half type as the others
            m = dsh.shape[-1]
            kb = 512 if m >= 512 else max(m, 1)
            acc = None
            for c in range(0, max(m, 1), kb):
                part = (dsh[..., c:c + kb] @ kf[..., c:c + kb, :]) * sc
                acc = part.astype(half) if acc is None else \
                    (acc.astype(f) + part).astype(half)
            gq[..., rows, :] = acc
        if gk is not None:
            part = (xp.swapaxes(dsh, -1, -2) @ qf[..., rows, :]) * sc
            gk[...] = (gk.astype(f) + part).astype(half)
    return (gq, gk, gv) + ((gm,) if len(needs) > 3 else ())


def _sdpa_kernel(xp, q, k, v, mask, *, scale):
    if _is_half_float(q.dtype):  # NOTE [ Half attention as torch's CPU kernel ]
        with _one_thread(xp, q, k):
            return _half_forward(xp, q, k, v, mask, scale)
    if _batch_pieces(xp, q, k, v, mask):  # NOTE [ Attention pieces on threads ]
        r = _sdpa_forward_pieces(q, k, v, mask, scale)
        if r is not None:
            return r
    with _one_thread(xp, q, k):
        return _sdpa_forward(xp, q, k, v, mask, scale)


# NOTE [ Attention pieces on threads ]
# A stack of small per-head GEMMs runs on one BLAS thread (NOTE [ Transposed attention
# scores ]), and so did the softmax passes between them: the whole attention of a GPT layer
# used one core where PyTorch's kernel splits the batch and heads over both. The batch is
# independent, so on NumPy inputs of one dtype and batch shape, with a mask shared by every
# sample, the kernels cut it into one contiguous piece per thread (``_parallel.split_batch``,
# NOTE [ Batch pieces on threads ]: the BLAS held at one thread meanwhile), and each piece
# runs the whole forward or backward for its samples into its slice of outputs allocated
# once, laid out as before. Every sample's arithmetic is unchanged, so the results are the
# same bits as one call. split_batch declines (one thread configured, too little work, BLAS
# workers still polling) and the kernels then run whole, as before. A GPT layer's causal
# (8, 4, 128, 64) forward+backward at two threads, alternating with the whole-stack path on
# the loaded 2-core machine (load 13): the calling thread's CPU 25.0 -> 14.6 ms, the
# process's unchanged (24.9 -> 24.5 ms), so on two free cores the wall time follows the
# calling thread's (under that load the wall time was the scheduler's, equal both ways).


# NOTE [ Attention pieces do not claim the BLAS ]
# A convolution that qualifies for batch pieces keeps the network's mid-size products on one
# BLAS thread for a second (``pieces_wanted``, NOTE [ Pieces and the BLAS workers ] in
# ember/_parallel.py), so that they stop waking OpenBLAS's workers before its pieces.
# Attention does not claim that: in a transformer it comes right after the q/k/v projection,
# a product large enough to run on both BLAS threads whatever the claim, so its pieces were
# declined every time (the workers still polling) while the claim held the block's
# (1024, 256) x (256, 256) projections and the head at one thread. Bench GPT step, two
# threads, in-step product times (SCHED_FIFO, 6 steps): those 15 products 19.0 -> 10.7 ms,
# all products 117.5 -> 109.2 ms. The attention's own stacks of (128, 64) x (64, 128)
# products stay held at one thread (``_one_thread``, busy machine or not): on two BLAS
# threads a layer's causal forward+backward took 5.89 ms against 6.25 held, after a hot
# product on a quiet machine, but 440-660 ms against 24-27 at load 10 (the split's joins
# waiting for a core), and a load just under ``contended``'s bar can do that too. Where
# nothing else woke the workers, attention pieces still run (``claim`` is only the claim).


def _batch_pieces(xp, q, k, v, mask):
    """Whether the attention of these inputs may be cut into batch pieces (NOTE [ Attention
    pieces on threads ])."""
    return (xp is np and q.ndim >= 3 and q.shape[0] > 1 and q.dtype == k.dtype == v.dtype
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and (mask is None or mask.ndim < q.ndim or mask.shape[0] == 1))


def _work(q, k, v):
    """The multiply-adds of attention's two forward products."""
    return math.prod(q.shape[:-2]) * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])


def _sdpa_forward_pieces(q, k, v, mask, scale):
    """``_sdpa_forward`` in batch pieces on threads, or None where split_batch declines."""
    shape = q.shape[:-1] + v.shape[-1:]
    out = _like_query(np, q, shape, q.dtype)
    out = np.empty(shape, q.dtype) if out is None else out
    st = np.empty(q.shape[:-2] + (k.shape[-2], q.shape[-2]), q.dtype)

    def piece(lo, hi):
        _sdpa_forward(np, q[lo:hi], k[lo:hi], v[lo:hi], mask, scale, out[lo:hi], st[lo:hi])

    if _parallel.split_batch(piece, q.shape[0], _work(q, k, v), claim=False) is None:
        return None
    return out, np.swapaxes(st, -1, -2)


# NOTE [ Fused attention softmax ]
# The NumPy softmax over the transposed scores is seven passes over the (..., S, L) array
# (scale, mask, max, shift, exp, sum, divide): 1.3 ms of a GPT layer's 3.7 ms causal forward
# (8 x 4 heads of 128 x 128, one thread), where PyTorch's whole forward took 1.8 ms. With
# the numba backend, float32 scores and no mask or one (L, S) bool mask shared by every head
# (the causal case), one kernel does it in three passes (``_nn_attention_numba``); its exp is
# the kernels' vectorised one (a few float32 ulps from NumPy's), all else as the NumPy path.
# Measured on that forward, interleaved at one thread: 3.1 -> 2.4 ms. The backward's two
# passes (``gst -= r; gst *= pt``) fused the same way measured within noise, so stay NumPy.

# NOTE [ Causal softmax skips the masked half ]
# Under the causal mask that ``_causal_split`` recognises, key ``s`` is seen by queries
# ``j >= s`` only, so in the transposed scores every row's masked part is the prefix
# ``j < s``: ``softmax_scores_t_causal`` runs its three passes over the visible triangle
# and writes ``0 / sum`` over the rest (0, or NaN in a column whose sum is NaN, as before),
# instead of scaling, masking and exponentiating every entry (exp(-inf) = 0 added to each
# sum). The same bits as the masked kernel (tests/perf/test_attention_fused_softmax.py).
# One thread, interleaved: 32 heads of 128 x 128 (the bench GPT's layer) 1506 -> 713 us,
# 64 heads of 64 x 64 (examples/char_gpt.py's) 964 -> 582 us.


def _fused_softmax(xp, st, mask):
    """The fused softmax kernel for these scores and mask, or None (NOTE [ Fused attention
    softmax ])."""
    if xp is not np or st.ndim < 3 or not st.flags.c_contiguous:
        return None
    if mask is not None and (mask.dtype != np.bool_ or mask.shape[-2:] != st.shape[-1:-3:-1]
                             or any(n != 1 for n in mask.shape[:-2])):
        return None
    from .. import _kernels

    if _kernels._fast(st) is None:
        return None
    from . import _nn_attention_numba

    return _nn_attention_numba.softmax_scores_t


# NOTE [ Causal halves ]
# Under a causal mask the first half of the queries sees only the first half of the keys,
# so a quarter of each of attention's six products (two forward, four backward) multiplies
# by probabilities that are exactly 0. For a CPU (L, L) causal mask with L >= _SPLIT_MIN the
# kernels run those products as two (the first half's queries against the first half's
# keys, the second half's against all) and leave the masked quarter out, as PyTorch's CPU
# flash attention skips masked blocks. Results agree to float rounding (BLAS sums a shorter
# reduction); what differs is only that a non-finite key or value in the second half no
# longer reaches the first half's rows as 0 * inf = NaN.
_SPLIT_MIN = 64


def _causal_split(xp, q, k, v, mask):
    """The split row ``L // 2`` when ``mask`` is a causal (L, L) bool mask of NumPy inputs
    of one dtype and batch shape (NOTE [ Causal halves ]), else None."""
    if xp is not np or mask is None or mask.dtype != np.bool_:
        return None
    n = q.shape[-2]
    if n < _SPLIT_MIN or k.shape[-2] != n or mask.shape[-2:] != (n, n) or \
            any(d != 1 for d in mask.shape[:-2]) or not q.dtype == k.dtype == v.dtype or \
            not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        return None
    if not np.array_equal(mask.reshape(n, n), np.tri(n, dtype=np.bool_)):
        return None
    return n // 2


def _scores_t(xp, q, k, split, out=None):
    """The transposed scores ``k @ q^T`` (into ``out`` if given); with ``split``, the masked
    quarter is 0 and not computed (NOTE [ Causal halves ])."""
    if split is None:
        qt = xp.swapaxes(q, -1, -2)
        return k @ qt if out is None else xp.matmul(k, qt, out=out)
    h = split
    n = q.shape[-2]
    st = np.empty(np.broadcast_shapes(q.shape[:-2], k.shape[:-2]) + (n, n), q.dtype) \
        if out is None else out
    np.matmul(k[..., :h, :], np.swapaxes(q[..., :h, :], -1, -2), out=st[..., :h, :h])
    np.matmul(k, np.swapaxes(q[..., h:, :], -1, -2), out=st[..., :, h:])
    st[..., h:, :h] = 0
    return st


def _sdpa_forward(xp, q, k, v, mask, scale, out=None, st=None):
    """(output, p); ``out`` and ``st`` (the transposed scores' buffer), when given, are
    written (NOTE [ Attention pieces on threads ])."""
    split = _causal_split(xp, q, k, v, mask)
    st = _scores_t(xp, q, k, split, st)   # scores^T; the same buffer becomes p^T
    fused = _fused_softmax(xp, st, mask)
    if fused is not None:
        s_len, l_len = st.shape[-2:]
        if split is not None:  # NOTE [ Causal softmax skips the masked half ]
            from ._nn_attention_numba import softmax_scores_t_causal

            softmax_scores_t_causal(st.reshape(-1, s_len, l_len), np.float32(scale),
                                    np.empty(l_len, np.float32), np.empty(l_len, np.float32))
            return _attend(xp, q, v, st, split, out)
        mt = np.ascontiguousarray(mask.reshape(mask.shape[-2:]).T) if mask is not None \
            else np.ones((1, 1), np.bool_)
        fused(st.reshape(-1, s_len, l_len), mt, mask is not None, np.float32(scale),
              np.empty(l_len, np.float32), np.empty(l_len, np.float32))
        return _attend(xp, q, v, st, split, out)
    st *= scale
    if mask is not None:
        mt = xp.swapaxes(mask, -1, -2)
        if mask.dtype == xp.bool_:
            xp.copyto(st, -xp.inf, where=~mt)
        else:
            st += mt
    m = st.max(axis=-2, keepdims=True)
    st -= xp.where(xp.isfinite(m), m, 0)
    xp.exp(st, out=st)
    denom = st.sum(axis=-2, keepdims=True)
    st /= xp.where(denom == 0, 1, denom)
    return _attend(xp, q, v, st, split, out)


def _attend(xp, q, v, st, split=None, out=None):
    """``p @ v`` from the probabilities held transposed in ``st``: (output, p); with
    ``split``, in two products (NOTE [ Causal halves ]); into ``out`` if given."""
    p = xp.swapaxes(st, -1, -2)
    shape = np.broadcast_shapes(p.shape[:-2], v.shape[:-2]) + (q.shape[-2], v.shape[-1])
    dtype = np.result_type(p.dtype, v.dtype)
    if out is None:
        out = _like_query(xp, q, shape, dtype)
    if split is not None and dtype == p.dtype:
        h = split
        out = np.empty(shape, dtype) if out is None else out
        np.matmul(p[..., :h, :h], v[..., :h, :], out=out[..., :h, :])
        np.matmul(p[..., h:, :], v, out=out[..., h:, :])
    else:
        out = p @ v if out is None else xp.matmul(p, v, out=out)
    return out.astype(q.dtype, copy=False), p.astype(q.dtype, copy=False)


def _like_query(xp, q, shape, dtype):
    """An output buffer whose batch, head and sequence dims lie in memory in the order of
    ``q``'s, as PyTorch's CPU kernel lays its output out when the query's last dim is
    contiguous: heads split off a projection and transposed, as attention modules make
    them, give (B, L, H, E) or (L, B, H, E) memory, so that ``out.transpose(1, 2).view(B, L,
    H * E)`` (or ``permute(2, 0, 1, 3)``'s view) needs no copy. None: a plain contiguous
    result."""
    if xp is not np or q.ndim != 4 or len(shape) != 4 or q.strides[3] != q.itemsize:
        return None  # (CUDA: cuDNN's fused attention has its own layout rules)
    order = sorted(range(3), key=lambda d: -q.strides[d])   # outermost first
    # (a dim of size 1 has no place in memory: only the others' order decides, as a batch
    # of one from an attention module must still give torch's layout)
    if [d for d in order if q.shape[d] != 1] == [d for d in range(3) if q.shape[d] != 1]:
        return None
    buf = xp.empty(tuple(shape[d] for d in order) + (shape[3],), dtype)
    return buf.transpose([order.index(d) for d in range(3)] + [3])


def _sdpa_backward_kernel(xp, g, q, k, v, o, p, *, scale, needs, split=None):
    if _is_half_float(q.dtype):  # NOTE [ Half attention as torch's CPU kernel ]
        with _one_thread(xp, q, k):
            return _half_backward(xp, g, q, k, v, o, p, scale, needs)
    if len(needs) == 3 and _batch_pieces(xp, q, k, v, None) and \
            g.shape == o.shape == q.shape[:-1] + v.shape[-1:] and \
            g.dtype == o.dtype == p.dtype == q.dtype and p.shape[:-2] == q.shape[:-2]:
        r = _sdpa_backward_pieces(g, q, k, v, o, p, scale, needs, split)
        if r is not None:  # NOTE [ Attention pieces on threads ]
            return r
    with _one_thread(xp, q, k):
        return _sdpa_backward(xp, g, q, k, v, o, p, scale, needs, split)


def _sdpa_backward_pieces(g, q, k, v, o, p, scale, needs, split):
    """``_sdpa_backward`` in batch pieces on threads, or None where split_batch declines."""
    outs = tuple(_empty_like_input(np, t, t.shape, t.dtype) if need else None
                 for t, need in zip((q, k, v), needs))

    def piece(lo, hi):
        _sdpa_backward(np, g[lo:hi], q[lo:hi], k[lo:hi], v[lo:hi], o[lo:hi], p[lo:hi],
                       scale, needs, split, tuple(None if b is None else b[lo:hi]
                                                  for b in outs))

    if _parallel.split_batch(piece, q.shape[0], 2 * _work(q, k, v),
                             claim=False) is None:
        return None
    return outs


def _sdpa_backward_halves(g, q, k, v, o, p, scale, needs, h, outs=(None,) * 3):
    """``_sdpa_backward`` under a causal mask, each product in two halves (NOTE [ Causal
    halves ]): the masked quarter of the probabilities is 0, and so is the scores' gradient
    there. ``outs``: buffers for (gq, gk, gv), or None each."""
    need_q, need_k, need_v = needs[:3]
    mm = np.matmul
    pt = np.swapaxes(p, -1, -2)   # (S, L): keys by queries
    gv = gq = gk = None
    if need_v:
        gv = outs[2] if outs[2] is not None else _empty_like_input(
            np, v, np.broadcast_shapes(pt.shape[:-2], g.shape[:-2]) + pt.shape[-2:-1]
            + g.shape[-1:], np.result_type(pt, g))
        mm(pt[..., :h, :], g, out=gv[..., :h, :])
        mm(pt[..., h:, h:], g[..., h:, :], out=gv[..., h:, :])
    if need_q or need_k:
        gst = _scores_t(np, g, v, h)  # v @ g^T, its masked quarter 0
        gst -= np.swapaxes((g * o).sum(axis=-1, keepdims=True), -1, -2)
        gst *= pt
        if need_q:
            gqt = np.swapaxes(gst, -1, -2)
            gq = outs[0] if outs[0] is not None else _empty_like_input(
                np, q, gqt.shape[:-1] + k.shape[-1:], np.result_type(gst, k))
            mm(gqt[..., :h, :h], k[..., :h, :], out=gq[..., :h, :])
            mm(gqt[..., h:, :], k, out=gq[..., h:, :])
            gq *= scale
        if need_k:
            gk = outs[1] if outs[1] is not None else _empty_like_input(
                np, k, gst.shape[:-1] + q.shape[-1:], np.result_type(gst, q))
            mm(gst[..., :h, :], q, out=gk[..., :h, :])
            mm(gst[..., h:, h:], q[..., h:, :], out=gk[..., h:, :])
            gk *= scale
    return gq, gk, gv


# NOTE [ Gradients laid out as their inputs ]
# A GPT block's q, k and v are heads split off one projection and transposed, (B, H, L, E)
# views of (B, L, H, E) memory. Their gradients, made contiguous (B, H, L, E), became
# non-contiguous again at the transpose's backward, and the view back to (B, L, H * E)
# then had to copy each one (12 copies of a 1 MB gradient per GPT step, ~0.3 ms each under
# load). As PyTorch's CPU kernel does, the backward writes each gradient laid out as its
# input (``_like_query``), so that those views are free.


def _empty_like_input(xp, t, shape, dtype):
    """An output buffer of ``shape`` laid out as ``t`` (NOTE [ Gradients laid out as their
    inputs ]) when ``shape`` is ``t``'s, else a contiguous one."""
    out = _like_query(xp, t, shape, dtype) if shape == t.shape else None
    return xp.empty(shape, dtype) if out is None else out


def _product_like(xp, a, b, like, out=None):
    """``a @ b`` laid out as ``like`` where that pays (NOTE [ Gradients laid out as their
    inputs ]): ``like`` is the input whose gradient the product is; into ``out`` if given."""
    if out is not None:
        return xp.matmul(a, b, out=out)
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    out = _like_query(xp, like, shape, np.result_type(a.dtype, b.dtype)) \
        if shape == like.shape else None
    return a @ b if out is None else xp.matmul(a, b, out=out)


def _sdpa_backward(xp, g, q, k, v, o, p, scale, needs, split=None, outs=(None,) * 3):
    """Gradients of q, k, v (and, when ``needs`` has a fourth entry, of an additive float
    mask: the scores' gradient gs itself) from the saved probabilities p and output
    o = p @ v; with ``split``, by halves (NOTE [ Causal halves ]). ``outs``: buffers for
    (gq, gk, gv), or None each (NOTE [ Attention pieces on threads ]).

    With gp = g @ v^T, softmax's Jacobian gives gs = p * (gp - rowsum(gp * p)), and
    rowsum(gp * p) = rowsum(g * o): an (L, E) product instead of an (L, S) one. Computed
    transposed, as the forward (NOTE [ Transposed attention scores ]).
    """
    if split is not None:
        return _sdpa_backward_halves(g, q, k, v, o, p, scale, needs, split, outs)
    need_q, need_k, need_v = needs[:3]
    need_m = len(needs) > 3 and needs[3]
    pt = xp.swapaxes(p, -1, -2)
    gv = _product_like(xp, pt, g, v, outs[2]) if need_v else None
    gq = gk = gm = None
    if need_q or need_k or need_m:
        gst = v @ xp.swapaxes(g, -1, -2)
        rows = xp.swapaxes((g * o).sum(axis=-1, keepdims=True), -1, -2)
        # in place unless an operand has batch dims that v and g lack (inside vmap, an
        # unbatched v or gradient meets batched q, k or output)
        if np.broadcast_shapes(gst.shape, rows.shape, pt.shape) == gst.shape:
            gst -= rows
            gst *= pt
        else:
            gst = (gst - rows) * pt
        if need_q:
            gq = _product_like(xp, xp.swapaxes(gst, -1, -2), k, q, outs[0])
            gq *= scale
        if need_k:
            gk = _product_like(xp, gst, q, k, outs[1])
            gk *= scale
        if need_m:
            gm = xp.swapaxes(gst, -1, -2)
    return (gq, gk, gv) + ((gm,) if len(needs) > 3 else ())


def _sdpa_vjp(grads, q, k, v, mask, *, scale, out, needs_input_grad):
    g = grads[0]
    # an additive float mask's gradient is the scores' gradient (summed to its shape by the
    # engine); a bool mask has none
    need_m = mask is not None and needs_input_grad[3] and mask._data.dtype.kind != "b"
    if not _dispatch.differentiable_formula(g, q, k, v, mask):
        needs = tuple(needs_input_grad[:3]) + ((True,) if need_m else ())
        params = dict(scale=scale, needs=needs)
        if mask is not None and not need_m and type(q._data) is np.ndarray:
            split = _causal_split(np, q._data, k._data, v._data, mask._data)
            if split is not None:  # NOTE [ Causal halves ]
                params["split"] = split
        r = _dispatch.apply(sdpa_backward_op, (g, q, k, v, out[0], out[1]), params)
        return r if need_m else r + (None,)
    # create_graph: recompute the probabilities from the inputs (differentiably)
    s = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask._data.dtype.kind == "b" \
            else s + mask
    p = s.softmax(-1)
    gv = p.transpose(-1, -2) @ g
    gp = g @ v.transpose(-1, -2)
    gs = p * (gp - (gp * p).sum(-1, keepdim=True))
    gq = (gs @ k) * scale
    gk = (gs.transpose(-1, -2) @ q) * scale
    return gq, gk, gv, (gs if need_m else None)


sdpa_op = Op("scaled_dot_product_attention", _sdpa_kernel, vjp=_sdpa_vjp,
             nondiff_outputs=(1,))


@sdpa_op.defjvp
def _sdpa_jvp(x_dots, q, k, v, mask, *, scale, out):
    # o = p v with p = softmax(s), s = scale q k^T (+ mask): ds from q and k (and a float
    # mask), dp = p * (ds - rowsum(p * ds)), do = dp v + p dv
    qd, kd, vd = x_dots[0], x_dots[1], x_dots[2]
    md = x_dots[3] if len(x_dots) > 3 else None
    if qd is None and kd is None and vd is None and md is None:
        return None
    if _dispatch.state.grad_enabled and any(
            t is not None and t._rg for t in (q, k, v, qd, kd, vd, md)):
        s = (q @ k.transpose(-1, -2)) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf")) if mask._data.dtype.kind == "b" \
                else s + mask
        p = s.softmax(-1)
    else:
        # float32 for half operands: NOTE [ Half attention as torch's CPU kernel ]
        p = out[1].to(q.dtype)
    ds = None
    if qd is not None:
        ds = (qd @ k.transpose(-1, -2)) * scale
    if kd is not None:
        t = (q @ kd.transpose(-1, -2)) * scale
        ds = t if ds is None else ds + t
    if md is not None:
        ds = md if ds is None else ds + md
    do = None
    if ds is not None:
        do = (p * (ds - (p * ds).sum(-1, keepdim=True))) @ v
    if vd is not None:
        t = p @ vd
        do = t if do is None else do + t
    return do, None
sdpa_op.node_name = "ScaledDotProductAttentionBackward0"
sdpa_backward_op = Op("scaled_dot_product_attention_backward", _sdpa_backward_kernel)


#: device type -> ``fn(query, key, value, is_causal, scale)``: a device's fused attention
#: (NOTE [ CUDA kernels ] in ember/cuda/_kernels.py), tried first for unmasked or causal
#: attention without dropout; it returns None for inputs it does not take
fused_attention: dict = {}


def _causal_mask(l, s, data):
    """The (l, s) bool lower-triangle mask, made on ``data``'s backend without going through
    the dispatcher: PyTorch's kernels apply ``is_causal`` inside the op, so a profile shows
    no op building a mask (NOTE [ Fused kernels under the profiler ] in
    ember/profiler/_recorder.py)."""
    from .._core.backend import xp_of
    from .._core.tensor import wrap

    return wrap(xp_of(data).tri(l, s, dtype=bool))


def _check_mask_shape(query, key, mask):
    """The mask must broadcast to the scores' shape without enlarging it (as in PyTorch)."""
    from .shape import broadcast_sizes

    scores = tuple(np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]))) + \
        (query.shape[-2], key.shape[-2])
    full = broadcast_sizes([scores, tuple(mask.shape)])
    if full != scores:
        raise RuntimeError(f"output with shape {list(scores)} doesn't match the broadcast "
                           f"shape {list(full)}")


def _math_as_torch(session, query, key, value, attn_mask, dropout_p, is_causal, scale, call):
    """Attention with dropout while a profiler records, as PyTorch's CPU math kernel runs it
    (its rows and nodes): a bool mask made additive first, then, inside
    ``aten::_scaled_dot_product_attention_math``, the query and the transposed key each
    scaled by the root of ``scale``, their product, the mask added in place, a softmax
    whose node is ``SafeSoftmaxBackward0`` (rows with no key to attend to give zeros),
    dropout and the product with the values. The same numbers as the unprofiled path, to
    rounding (the scale is applied in two halves)."""
    from .. import no_grad
    from .._core import dtype as _dt
    from . import _node_names
    from .pointwise import isneginf, where

    from .creation import ones

    mask = call[3]
    if mask is not None and mask._data.dtype.kind == "b":
        mask = where(mask, 0.0, float("-inf"))

    def math_kernel():
        root = math.sqrt(scale)
        # (a product with a number inside PyTorch's kernel: its ``MulBackward1`` node)
        q = _node_names.rename(query * root, "MulBackward1")
        m = mask
        if is_causal:
            m = where(ones((query.shape[-2], key.shape[-2]), dtype=_dt.bool_).tril(), 0.0,
                      float("-inf"))
        attn = q @ _node_names.rename(key.transpose(-2, -1) * root, "MulBackward1")
        if m is not None:
            # (in place in PyTorch, on a product that is no view: one ``AddBackward0``)
            attn = session.as_one_op("aten::add_", lambda: (attn, m, 1), lambda a, b: a + b,
                                     (attn, m), {})

        def safe_softmax(attn):
            with no_grad():
                empty = isneginf(attn).all(-1, keepdim=True)
            if not empty._data.any():
                return _node_names.rename(attn.softmax(-1), "SafeSoftmaxBackward0")
            # (a row with no key: a softmax of zeros there, then zeros, so neither the
            # result nor the gradient is NaN)
            p = _node_names.rename(attn.masked_fill(empty, 0.0).softmax(-1),
                                   "SafeSoftmaxBackward0")
            return p.masked_fill(empty, 0.0)

        p = session.composite("aten::_safe_softmax", lambda: (attn, -1, None), safe_softmax,
                              (attn,), {})
        p = dropout(p, dropout_p, True).to(query.dtype)
        return (p @ value).to(query.dtype)

    return session.composite(
        "aten::_scaled_dot_product_attention_math",
        lambda: (query, key, value, mask, dropout_p, is_causal, None, call[6], call[7]),
        math_kernel, (), {})


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(Q K^T * scale + mask) V`` over the last two dims (batch dims broadcast).

    ``attn_mask`` is a bool mask (True = attend) or an additive float mask; ``is_causal``
    masks the upper triangle; ``scale`` defaults to ``1 / sqrt(E)``.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: ember can return NaN where PyTorch returns a finite
        value (ember's softmax of overflowing scores).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be "
                            f"Tensor, not {type(t).__name__}")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: expected query, key and value to "
                           "have at least 2 dimensions")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: expected query and key to have the same last "
            f"dimension, got {list(query.shape)} and {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: expected key and value to have the same "
            f"sequence length, got {list(key.shape)} and {list(value.shape)}")
    if not (query._data.dtype == key._data.dtype == value._data.dtype):
        raise RuntimeError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    call = (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    l, s = query.shape[-2], key.shape[-2]
    # (heads of size 0: the scores are all 0 and torch's softmax of them uniform)
    scale = 1.0 / math.sqrt(query.shape[-1] or 1) if scale is None else scale
    if fused_attention and attn_mask is None and dropout_p == 0.0:
        fused = fused_attention.get(query.device.type)
        out = fused(query, key, value, is_causal, scale) if fused is not None else None
        if out is not None:
            return out
    if is_causal:
        attn_mask = _causal_mask(l, s, query._data)
    if attn_mask is not None and attn_mask._data.dtype.kind != "b" and \
            attn_mask._data.dtype not in (np.float32, query._data.dtype):
        # torch's rule: bool, float32, or the query's own dtype
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match "
                           f"query dtype, but got attn_mask.dtype: {attn_mask.dtype} and "
                           f" query.dtype: {query.dtype} instead.")
    if attn_mask is not None:
        _check_mask_shape(query, key, attn_mask)
    if attn_mask is not None and attn_mask._data.dtype.kind != "b" and \
            attn_mask._data.dtype != query._data.dtype:
        attn_mask = attn_mask.to(query.dtype)
    batch = np.broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2]),
                                tuple(value.shape[:-2]))
    if l == 0 or s == 0 or 0 in batch or value.shape[-1] == 0:
        # nothing to attend from, or to, or nothing to give back: torch's result is zeros
        # (no softmax over an empty row, so no dtype check either; bool operands give int64,
        # as the sum below does), still a function of the operands so their gradients are
        # zeros
        from .creation import zeros

        out = zeros(batch + (l, value.shape[-1]), dtype=query.dtype, device=query.device)
        # (a non-finite query makes it NaN in torch: its scaled query meets a zero)
        return out + query.sum() * 0 + key.reshape(-1)[:0].sum() + value.reshape(-1)[:0].sum()
    if not (query.is_floating_point() or query.is_complex()):
        # torch's math kernel scales the query by a float32 factor in place
        raise RuntimeError(f"expected scalar type Float but found {query.dtype.scalar_name}")
    kernel_dtype("softmax_lastdim", query)
    if dropout_p > 0.0:
        from ._registry import observing_profiler

        session = observing_profiler()
        if session is not None:
            return session.composite("aten::scaled_dot_product_attention", lambda: call,
                                     _math_as_torch, (session, query, key, value, attn_mask,
                                                      dropout_p, is_causal, scale, call), {})
        sc = (query @ key.transpose(-1, -2)) * scale
        if attn_mask is not None:
            sc = sc.masked_fill(~attn_mask, float("-inf")) if attn_mask._data.dtype.kind == \
                "b" else sc + attn_mask
        p = sc.softmax(-1)
        if attn_mask is not None:
            # as torch's math kernel (its safe softmax): a row whose every score is -inf (a
            # fully masked query) attends to nothing, zeros rather than NaN
            p = p.masked_fill((sc == float("-inf")).all(-1, keepdim=True), 0.0)
        p = dropout(p, dropout_p, True)
        return p @ value
    if _dispatch.intercept and "ember.profiler._recorder" in sys.modules:
        # a profile lists the call as made (NOTE [ Calls noted for the profiler ])
        sys.modules["ember.profiler._recorder"].note_call(
            "aten::scaled_dot_product_attention", *call)
    out, _ = _dispatch.apply(sdpa_op, (query, key, value, attn_mask), {"scale": scale})
    return out
