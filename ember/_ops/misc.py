"""The rest of the math library: distances, products of index sets, block matrices,
covariance and Vandermonde matrices."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from ._registry import Op, public
from .linalg import _LOWP, _conj, _h, check_tensor, matmul

# ------------------------------------------------------------------------------------------------
# cdist


def _cdist_kernel(xp, a, b, *, p, use_mm):
    if a.dtype in _LOWP:
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {a.dtype}")
    if use_mm:
        # |x - y|^2 = |x|^2 - 2 x.y + |y|^2: one GEMM instead of a (P, R, M) difference tensor
        aa = (a * a).sum(-1)[..., :, None]
        bb = (b * b).sum(-1)[..., None, :]
        d2 = aa - 2 * xp.matmul(a, xp.swapaxes(b, -1, -2)) + bb
        return xp.sqrt(xp.maximum(d2, 0)).astype(a.dtype)
    d = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        r = (d != 0).sum(-1)
    elif p == 1:
        r = d.sum(-1)
    elif p == 2:
        r = xp.sqrt((d * d).sum(-1))
    elif p == math.inf:
        r = d.max(-1) if d.shape[-1] else d.sum(-1)
    else:
        r = (d ** p).sum(-1) ** (1.0 / p)
    return xp.asarray(r).astype(a.dtype)


def _cdist_vjp(g, a, b, *, out, p, use_mm):
    if p == 0:
        return None, None
    if p == 2:
        # d_ij = |a_i - b_j|: with W = g / d (0 where d = 0), two GEMMs and no (P, R, M)
        # difference tensor: ga_i = sum_j W_ij (a_i - b_j), gb_j = sum_i W_ij (b_j - a_i)
        W = g / (out + (out == 0))
        ga = W.sum(-1).unsqueeze(-1) * a - matmul(W, b)
        gb = W.sum(-2).unsqueeze(-1) * b - matmul(W.transpose(-1, -2), a)
        return ga, gb
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    G = g.unsqueeze(-1)
    dist = out.unsqueeze(-1)
    if p == 1:
        gd = G * diff.sgn()
    elif p == 2:
        gd = G * diff / (dist + (dist == 0))
    elif p == math.inf:
        mask = diff.abs() == dist
        gd = G * diff.sgn() * mask / mask.sum(-1, keepdim=True)
    else:
        safe = dist + (dist == 0)
        gd = G * diff.sgn() * (diff.abs() / safe) ** (p - 1)
    return gd.sum(-2), -gd.sum(-3)


cdist_op = Op("cdist", _cdist_kernel, vjp=_cdist_vjp)

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


@public(method=False)
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` ``(B, P, M)`` and each row of
    ``x2`` ``(B, R, M)``: a ``(B, P, R)`` tensor. Batch dims broadcast."""
    check_tensor("cdist", x1, "x1", 1)
    check_tensor("cdist", x2, "x2", 2)
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: "
            f"{x2.dim()}D")
    for nm, t in (("X1", x1), ("X2", x2)):
        if t.dtype.category != 2:
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {nm} got: {t.dtype.scalar_name}")
    if x1._data.dtype != x2._data.dtype:
        raise RuntimeError(
            f"cdist: X1 and X2 must have the same dtype, but got {x1.dtype.scalar_name} and "
            f"{x2.dtype.scalar_name}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
            f"{x2.shape[-1]}")
    if not isinstance(p, (int, float)) or p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode is None:
        compute_mode = _MODES[0]
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    p = float(p)
    P, R = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == _MODES[1] or (
        compute_mode == _MODES[0] and (P > 25 or R > 25)))
    try:
        np.broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2]))
    except ValueError:
        raise RuntimeError(
            f"cdist: the batch dims of X1 {list(x1.shape)} and X2 {list(x2.shape)} cannot "
            "be broadcast together") from None
    return _dispatch.apply(cdist_op, (x1, x2), {"p": p, "use_mm": use_mm})


# ------------------------------------------------------------------------------------------------
# cartesian_prod, combinations


def _cart_kernel(xp, *arrays):
    grids = xp.meshgrid(*arrays, indexing="ij")
    return xp.stack([g.reshape(-1) for g in grids], -1)


def _cart_vjp(g, *arrays):
    sizes = [a.shape[0] for a in arrays]
    k = len(sizes)
    g = g.reshape(tuple(sizes) + (k,))
    out = []
    for i in range(k):
        gi = g.select(-1, i)
        others = tuple(j for j in range(k) if j != i)
        out.append(gi.sum(others) if others else gi)
    return tuple(out)


cartesian_prod_op = Op("cartesian_prod", _cart_kernel, vjp=_cart_vjp)


@public(method=False)
def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, as rows (``itertools.product`` order)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("cartesian_prod: expected at least one tensor")
    for t in tensors:
        check_tensor("cartesian_prod", t, "tensors")
        if t.dim() != 1:
            raise RuntimeError(
                f"cartesian_prod: Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0].clone()
    d = tensors[0]._data.dtype
    for t in tensors[1:]:
        if t._data.dtype != d:
            raise RuntimeError(
                f"meshgrid expects all tensors to have the same dtype, but got "
                f"{tensors[0].dtype.scalar_name} and {t.dtype.scalar_name}")
    return _dispatch.apply(cartesian_prod_op, tuple(tensors), {})


def _gather_vjp(g, _a, *, idx, n):
    return _dispatch.apply(_scatter_op, (g,), {"idx": idx, "n": n})


def _scatter_kernel(xp, g, *, idx, n):
    r = xp.zeros((n,), g.dtype)
    if idx and g.size:
        xp.add.at(r, xp.asarray(np.asarray(idx, np.int64)).reshape(-1), g.reshape(-1))
    return r


def _scatter_vjp(g, _x, *, idx, n):
    return _dispatch.apply(_gather_op, (g,), {"idx": idx, "n": n})


def _gather_kernel_n(xp, a, *, idx, n):
    if not idx:
        return xp.zeros((0, 0), a.dtype)
    return a[xp.asarray(np.asarray(idx, np.int64))]


_gather_op = Op("combinations", _gather_kernel_n, vjp=_gather_vjp)
_scatter_op = Op("_combinations_backward", _scatter_kernel, vjp=_scatter_vjp)


@public(method=False)
def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's elements, as rows
    (``itertools.combinations`` order; ``with_replacement`` allows repeats)."""
    check_tensor("combinations", input)
    if input.dim() != 1:
        raise RuntimeError(
            f"combinations: Expect a 1D vector, but got shape {list(input.shape)}")
    if not isinstance(r, int) or isinstance(r, bool):
        raise TypeError(f"combinations(): argument 'r' must be int, not {type(r).__name__}")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    n = input.shape[0]
    if r == 0:
        return wrap(np.empty((0,), input._data.dtype))
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = tuple(gen(range(n), r))
    if not idx:
        return wrap(np.empty((0, r), input._data.dtype))
    return _dispatch.apply(_gather_op, (input,), {"idx": idx, "n": n})


# ------------------------------------------------------------------------------------------------
# block_diag


def _block_kernel(xp, *arrays):
    rows = sum(a.shape[0] for a in arrays)
    cols = sum(a.shape[1] for a in arrays)
    r = xp.zeros((rows, cols), arrays[0].dtype if arrays else np.float32)
    i = j = 0
    for a in arrays:
        r[i:i + a.shape[0], j:j + a.shape[1]] = a
        i += a.shape[0]
        j += a.shape[1]
    return r


def _block_vjp(g, *arrays):
    out = []
    i = j = 0
    for a in arrays:
        n, m = a.shape
        out.append(g[i:i + n, j:j + m])
        i += n
        j += m
    return tuple(out)


block_diag_op = Op("block_diag", _block_kernel, vjp=_block_vjp)


@public(method=False)
def block_diag(*tensors):
    """A block-diagonal matrix from the given blocks (0-d are 1x1, 1-D are rows);
    dtypes promote."""
    ts = []
    for t in tensors:
        check_tensor("block_diag", t, "tensors")
        if t.dim() > 2:
            raise RuntimeError(
                f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                f"{len(ts)} has {t.dim()} dimensions")
        ts.append(t)
    if not ts:
        return wrap(np.zeros((1, 0), _dt.get_default_dtype().np))
    d = ts[0].dtype
    for t in ts[1:]:
        d = _dt.promote_types(d, t.dtype)
    ts = [t if t.dtype is d else t.to(d) for t in ts]
    ts = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t
          for t in ts]
    return _dispatch.apply(block_diag_op, tuple(ts), {})


# ------------------------------------------------------------------------------------------------
# cov, corrcoef (composites: autograd follows the ops they are made of)


def _check_cov_weights(w, name, category, kind, n_obs):
    """cov()'s checks on fweights/aweights: 1-D at most, the right dtype kind, one weight
    per observation, none negative (PyTorch's messages and RuntimeError)."""
    check_tensor("cov", w, name)
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                         f"{name} with {w.dim()} dimensions")
    if w.dtype.category != category:
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                         f"{w.dtype.scalar_name} dtype")
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                         f"observations in the input but got {w.numel()} != {n_obs}")
    if (w._data < 0).any():
        raise RuntimeError(f"cov(): {name} cannot be negative")

@public
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows of ``input`` (variables) over its columns (observations),
    with optional integer frequency and float observation weights."""
    check_tensor("cov", input)
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if x.dtype.category < 2:
        x = x.to(_dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        _check_cov_weights(fweights, "fweights", 1, "integral", n_obs)
        w = fweights.to(x.dtype.to_real())
    if aweights is not None:
        _check_cov_weights(aweights, "aweights", 2, "floating point", n_obs)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.sum(1) / n_obs if n_obs else x.sum(1) * math.nan
        w_sum = float(n_obs)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction != 0 and aweights is not None:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    if isinstance(norm, Tensor):
        norm = norm * (norm > 0)
    else:
        norm = max(norm, 0.0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = matmul(xw, _h(xm)) / norm
    return c.reshape(()) if input.dim() < 2 or x.shape[0] == 1 and input.dim() < 2 else c


@public
def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (clipped to [-1, 1])."""
    check_tensor("corrcoef", input)
    if input.dim() > 2:
        raise ValueError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                         f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    sd = d.real.sqrt() if d.is_complex() else d.sqrt()
    c = c / sd.unsqueeze(1)
    c = c / sd.unsqueeze(0)
    if c.is_complex():
        return c
    return c.clamp(-1, 1)


# ------------------------------------------------------------------------------------------------
# vander


def _vander_kernel(xp, x, *, N, increasing):
    p = xp.arange(N)
    if x.dtype.kind in "fc":
        p = p.astype(x.dtype)  # a float32 base stays float32
    r = x[:, None] ** p if x.dtype.kind != "b" else x[:, None].astype(np.int64) ** p
    if not increasing:
        r = r[:, ::-1]
    return xp.ascontiguousarray(r)


def _vander_vjp(g, x, *, N, increasing):
    # d/dx x^k = k x^(k-1): contract the gradient with k * (the Vandermonde of order N-1)
    if N <= 1:
        return None
    lower = vander(x, N - 1, increasing=increasing)
    if increasing:
        w = wrap(np.arange(1, N, dtype=g._data.dtype)).to(g.device)
        return (_conj(lower) * g[:, 1:] * w).sum(-1)
    w = wrap(np.arange(N - 1, 0, -1, dtype=g._data.dtype)).to(g.device)
    return (_conj(lower) * g[:, :-1] * w).sum(-1)


vander_op = Op("vander", _vander_kernel, vjp=_vander_vjp)


@public(method=False)
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D tensor: columns are powers ``x**(N-1) ... x**0``
    (ascending with ``increasing=True``). Integer inputs give int64."""
    check_tensor("vander", x, "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is None:
        N = x.shape[0]
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.category < 2:
        x = x.to(_dt.int64)
    return _dispatch.apply(vander_op, (x,), {"N": int(N), "increasing": bool(increasing)})

