"""The rest of the math library: distances, products of index sets, block matrices,
covariance and Vandermonde matrices."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from . import _node_names
from ._registry import Op, public, quiet_kernel
from ._xp_compat import ufunc_at
from .indexing import linear_jvp
from .linalg import _LOWP, _conj, _h, check_out_tuple, check_tensor, matmul

# ------------------------------------------------------------------------------------------------
# cdist


def _cdist_kernel(xp, a, b, *, p, use_mm):
    if a.dtype in _LOWP:
        out_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-2])
        if not math.prod(out_shape) or not a.shape[-1]:
            # torch answers these before it picks a kernel: nothing to compute, or all zeros
            return xp.zeros(out_shape, a.dtype)
        if not use_mm:  # torch has only the matrix-product form in half precision
            raise NotImplementedError(
                f'"cdist" not implemented for \'{_dt.lookup(a.dtype).scalar_name}\'')
        r = _cdist_kernel(xp, a.astype(np.float32), b.astype(np.float32), p=p, use_mm=True)
        return r.astype(a.dtype)
    if use_mm:
        # |x - y|^2 = |x|^2 - 2 x.y + |y|^2: one GEMM instead of a (P, R, M) difference tensor
        aa = (a * a).sum(-1)[..., :, None]
        bb = (b * b).sum(-1)[..., None, :]
        d2 = aa - 2 * xp.matmul(a, xp.swapaxes(b, -1, -2)) + bb
        return xp.sqrt(xp.maximum(d2, 0)).astype(a.dtype)
    d = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        r = xp.where(xp.isnan(d).any(-1), np.nan, (d != 0).sum(-1))  # NaN stays NaN (torch)
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
        # a count of non-zero differences: piecewise constant, so zero gradients (not None)
        from .creation import zeros_like

        return zeros_like(a), zeros_like(b)
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
        # every coordinate attaining the maximum gets the full gradient (ties not split)
        gd = G * diff.sgn() * (diff.abs() == dist)
    else:
        safe = dist + (dist == 0)
        ratio = diff.abs() / safe
        if p < 1:  # a zero difference has a zero gradient (not 0 * inf), as torch
            ratio = ratio + (diff == 0)
        gd = G * diff.sgn() * ratio ** (p - 1)
    return gd.sum(-2), -gd.sum(-3)


cdist_op = Op("cdist", _cdist_kernel, vjp=_cdist_vjp)


@cdist_op.defjvp
def _cdist_jvp(x_dots, a, b, *, out, p, use_mm):
    # d_ij = |a_i - b_j|_p along the tangent (a_dot_i - b_dot_j), with the vjp's choices
    # where the norm is not differentiable (zero distance, ties of the inf-norm, p < 1)
    ad, bd = x_dots
    if p == 0:
        return None
    if p == 2:
        t = None
        if ad is not None:
            t = (a * ad).sum(-1).unsqueeze(-1) - matmul(ad, b.transpose(-1, -2))
        if bd is not None:
            u = (b * bd).sum(-1).unsqueeze(-2) - matmul(a, bd.transpose(-1, -2))
            t = u if t is None else t + u
        return t / (out + (out == 0))
    diff = a.unsqueeze(-2) - b.unsqueeze(-3)
    dd = None if ad is None else ad.unsqueeze(-2)
    if bd is not None:
        dd = -bd.unsqueeze(-3) if dd is None else dd - bd.unsqueeze(-3)
    dist = out.unsqueeze(-1)
    if p == 1:
        w = diff.sgn()
    elif p == math.inf:
        w = diff.sgn() * (diff.abs() == dist)
    else:
        ratio = diff.abs() / (dist + (dist == 0))
        if p < 1:
            ratio = ratio + (diff == 0)
        w = diff.sgn() * ratio ** (p - 1)
    return (w * dd).sum(-1)

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
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
            f"{x2.shape[-1]}")
    if x1._data.dtype != x2._data.dtype:
        if x1.numel() and x2.numel():
            raise RuntimeError(f"expected scalar type {x1.dtype.scalar_name} but found "
                               f"{x2.dtype.scalar_name}")
        # an empty operand: torch's kernel reads neither, and the result takes X1's dtype
        x2 = x2.to(x1.dtype)
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
cartesian_prod_op.shape_only = True  # the formula reads only the sizes


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
        ufunc_at(xp, "add", r, xp.asarray(np.asarray(idx, np.int64)).reshape(-1), g.reshape(-1))
    return r


def _scatter_vjp(g, _x, *, idx, n):
    return _dispatch.apply(_gather_op, (g,), {"idx": idx, "n": n})


def _gather_kernel_n(xp, a, *, idx, n):
    if not idx:
        return xp.zeros((0, 0), a.dtype)
    return a[xp.asarray(np.asarray(idx, np.int64))]


_gather_op = Op("combinations", _gather_kernel_n, vjp=_gather_vjp)
_scatter_op = Op("_combinations_backward", _scatter_kernel, vjp=_scatter_vjp)
linear_jvp(_gather_op, (0,))  # forward mode: a gather and its scatter are linear
linear_jvp(_scatter_op, (0,))


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
    if not idx:  # still recorded (PyTorch stacks no rows), so grad flags match
        return input[:0].unsqueeze(1).expand(0, r).clone()
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
block_diag_op.shape_only = True  # the formula reads only the sizes


def _varargs_linear_jvp(op):
    """Forward mode of an op linear in all its (varargs) inputs: the op on the tangents,
    zeros where an input has none."""

    def jvp(x_dots, *inputs, out=None):
        if all(d is None for d in x_dots):
            return None
        return _dispatch.apply(op, tuple(
            d if d is not None else x.new_zeros(tuple(x.shape))
            for d, x in zip(x_dots, inputs)), {})

    op.defjvp(jvp)


_varargs_linear_jvp(block_diag_op)
_varargs_linear_jvp(cartesian_prod_op)


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
    if not (w._data >= 0).all():  # NaN weights are refused as negative ones, as torch's
        raise RuntimeError(f"cov(): {name} cannot be negative")

@public
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance of the rows of ``input`` (variables) over its columns (observations),
    with optional integer frequency and float observation weights. One variable (a 1-D input
    or a single row) gives a 0-d result, as torch's.
    """
    check_tensor("cov", input)
    if input.dtype == _dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
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
        if w_sum.item() == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
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
    return c.reshape(()) if x.shape[0] == 1 else c


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


@quiet_kernel
def _vander_kernel(xp, x, *, N, increasing):
    p = xp.arange(N)
    if x.dtype.kind in "fc" or x.dtype == _dt.bfloat16.np:
        p = p.astype(x.dtype)  # a float32 (or bfloat16) base keeps its dtype
    if x.dtype.kind == "c" and N > 1:
        # PyTorch's columns are a running product from 1 (NaN where 1 * inf meets 0 * inf)
        from .reduction import _times_complex_one

        r = xp.ones((x.shape[0], N), dtype=x.dtype)
        r[:, 1:] = xp.cumprod(_times_complex_one(xp, xp.repeat(x[:, None], N - 1, 1), 1), 1)
    else:
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


@vander_op.defjvp
def _vander_jvp(x_dots, x, *, N, increasing, out):
    # column x^k moves by k x^(k-1) dx: the Vandermonde of order N-1 scaled by k
    xd = x_dots[0]
    if N <= 1:
        return None
    lower = _dispatch.apply(vander_op, (x,), {"N": N - 1, "increasing": True})
    k = wrap(np.arange(1, N, dtype=lower._data.dtype)).to(x.device)
    d = lower * k * xd.unsqueeze(-1)
    from .join import cat

    d = cat([d.new_zeros((d.shape[0], 1)), d], -1)
    return d if increasing else d.flip(-1)


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
    r = _dispatch.apply(vander_op, (x,), {"N": int(N), "increasing": bool(increasing)})
    # fewer than two columns hold no power of x (ones, or nothing): as in PyTorch the
    # result is a constant, outside the graph
    return r.detach() if N <= 1 else r



# ------------------------------------------------------------------------------------------------
# frexp / ldexp / rsub


def _frexp_kernel(xp, a):
    m, e = xp.frexp(a.astype(np.float32) if a.dtype == _dt.bfloat16.np else a)
    return m.astype(a.dtype), e.astype(np.int32)


def _frexp_vjp(g, _a, *, out):
    gm = g[0]
    return None if gm is None else gm / out[1].to(gm.dtype).exp2()


frexp_op = Op("frexp", _frexp_kernel, vjp=_frexp_vjp, nondiff_outputs=(1,))
# forward mode: the mantissa is x * 2^-e with e locally constant
frexp_op.defjvp(lambda x_dots, _a, *, out: (x_dots[0] / out[1].to(x_dots[0].dtype).exp2(), None))


@public
def frexp(input: Tensor, *, out=None):
    """Split each element into a mantissa in ``[0.5, 1)`` (by magnitude) and an integer
    exponent: ``input = mantissa * 2 ** exponent``. Zeros, infinities and NaNs keep their
    value as mantissa, with exponent 0.

    Args:
        input (Tensor): a floating-point tensor.
        out (tuple of two Tensors, optional): the outputs.

    Returns:
        (mantissa, exponent): a named tuple; ``exponent`` is int32.

    Example::

        >>> ember.frexp(ember.tensor([1.0, 3.0]))
        ember.return_types.frexp(
        mantissa=tensor([0.5000, 0.7500]),
        exponent=tensor([1, 2], dtype=ember.int32))
    """
    check_out_tuple("frexp", out)
    from .. import return_types

    check_tensor("frexp", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    r = _dispatch.apply(frexp_op, (input,), {})
    if out is not None:
        _dispatch.write_out("frexp", tuple(out), r)
        r = tuple(out)
    return return_types.make("frexp", ("mantissa", "exponent"))(*r)


def _pow2(input, other):
    # the exponents must be a tensor (no Python number), as in PyTorch's signature
    check_tensor("ldexp", other, "other", 2)
    # 2 ** other in the dtype the product will have: other's own float dtype, else input's
    # (the default dtype for two integer tensors)
    if not (other.dtype.is_floating_point or other.dtype.is_complex):
        floating = input.dtype.is_floating_point or input.dtype.is_complex
        if input.dtype.is_floating_point and other.dtype.name == "bool":  # no torch kernel
            raise NotImplementedError('"ldexp_cpu_exp" not implemented for \'Bool\'')
        other = other.to(input.dtype if floating else _dt.get_default_dtype())
    elif input.dtype.is_complex and other.dtype.is_floating_point:
        # complex mantissas: the power is taken in the complex dtype of the exponents'
        # width (bfloat16 widens to complex64), so float16 exponents have no kernel
        if other.dtype.name == "float16":
            raise NotImplementedError('"pow" not implemented for \'ComplexHalf\'')
        other = other.to(_dt.complex128 if other.dtype.name == "float64" else _dt.complex64)
    return other.exp2()


@public
def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """``input * 2 ** other``: builds floats from mantissas and exponents.

    Args:
        input (Tensor): the mantissas.
        other (Tensor): the exponents (integer or floating).
        out (Tensor, optional): the output.

    Returns:
        Tensor: floating (the default dtype for integer inputs). Differentiable.

    Example::

        >>> ember.ldexp(ember.tensor([1.0]), ember.tensor([3]))
        tensor([8.])
    """
    check_tensor("ldexp", input)
    if (input.dtype.is_floating_point and isinstance(other, Tensor)
            and other.dtype.category == 1 and other.dtype.name != "bool"):
        # integer exponents: C's ldexp, exact where ``input * 2 ** other`` overflows
        # (``ldexp(1e-40, 200)``, ``ldexp(0, 2000)``, ``ldexp(inf, -2000)``)
        from .shape import broadcast_tensors

        r = _dispatch.apply(ldexp_op, tuple(broadcast_tensors(input, other)), {})
    else:
        r = input * _pow2(input, other)
    return r if out is None else _dispatch.write_out("ldexp", out, r)


def _ldexp_kernel(xp, x, e):
    # torch hands C's ldexp an ``int``: a wider exponent wraps to its low 32 bits
    e = e.astype(np.int32)
    if x.dtype.kind == "f":
        return xp.ldexp(x, e)
    return xp.ldexp(x.astype(np.float32), e).astype(x.dtype)  # bfloat16 (float32's range)


def _ldexp_vjp(g, x, e):
    return g * e.to(_dt.int32).to(x.dtype).exp2(), None


ldexp_op = Op("ldexp", _ldexp_kernel, vjp=_ldexp_vjp)
linear_jvp(ldexp_op, (0,))  # forward mode: linear in the mantissa (the exponent is integral)


def _ldexp_(self, other):
    check_tensor("ldexp_", other, "other", 1)  # (torch's argument parser, before the cast)
    if not (self.dtype.is_floating_point or self.dtype.is_complex):
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{self.dtype.scalar_name}")
    return self.mul_(_pow2(self, other))


_ldexp_.__name__ = "ldexp_"
_ldexp_.__doc__ = "In-place version of :meth:`Tensor.ldexp`."
Tensor.ldexp_ = _ldexp_


@public
def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input``: subtraction with the operands reversed.

    Args:
        input (Tensor): the tensor subtracted (scaled by ``alpha``).
        other (Tensor or Number): the tensor or number subtracted from.
        alpha (Number): the multiplier of ``input``. Default: 1.

    Returns:
        Tensor

    Example::

        >>> ember.rsub(ember.tensor([1, 2]), 3)
        tensor([2, 1])
    """
    from ._elementwise import elementwise
    from .arithmetic import _scaled, sub, sub_op

    check_tensor("rsub", input)
    if isinstance(other, Tensor):  # torch's rsub.Tensor node (NOTE [ Node names ])
        return _node_names.rename(sub(other, input, alpha=alpha), "RsubBackward0")
    if input.dtype is _dt.bool_ and isinstance(other, bool):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead.")
    scaled, params = _scaled("rsub", input, alpha, input)
    if params is not None:  # a complex result: the kernel scales (NOTE [ Complex add and sub ])
        return elementwise(sub_op, (other, input), params)
    return scaled.__rsub__(other)


# ------------------------------------------------------------------------------------------------
# apply_ / map_ / map2_: a Python function over the elements (CPU only, no autograd)


def _elementwise_python(self, op_name, fn, others):
    from .creation import check_inplace

    if not isinstance(self, Tensor):
        raise TypeError(f"{op_name}(): self must be a Tensor")
    if not callable(fn):
        raise TypeError(f"{op_name}(): argument 'callable' must be callable, not "
                        f"{type(fn).__name__}")
    if self._rg:
        raise RuntimeError(f"Can't call {op_name}() on Variable that requires grad. Use "
                           f"var.detach().{op_name}() instead.")
    if not self.is_cpu:
        raise TypeError(f"{op_name} is only implemented on CPU tensors")
    a = self._data
    arrays = [a]
    for o in others:
        if not isinstance(o, Tensor):
            raise TypeError(f"{op_name}(): expected a Tensor argument, got {type(o).__name__}")
        if o.dtype is not self.dtype:
            raise TypeError(f"{op_name}_: expected {self.dtype.scalar_name} for argument, got "
                            f"{o.dtype.scalar_name}")
        try:
            arrays.append(np.broadcast_to(o._data, a.shape))
        except ValueError:
            raise RuntimeError(f"{op_name}: the size of the argument {list(o.shape)} cannot be "
                               f"broadcast to {list(self.shape)}") from None
    check_inplace(self, op_name)
    # object arrays hold Python numbers, which is what the callable is given
    objs = [(x.astype(np.float32) if x.dtype == _dt.bfloat16.np else x).astype(object)
            for x in arrays]
    r = np.frompyfunc(fn, len(objs), 1)(*objs)
    a[...] = np.asarray(r, dtype=object).astype(a.dtype) if a.ndim else \
        np.asarray(r).astype(a.dtype)
    self._bump()
    return self


def apply_(self, callable):
    """Replace each element ``v`` by ``callable(v)`` in place (CPU only, slow, no autograd).

    Args:
        callable: a function of one Python number returning a number.

    Returns:
        Tensor: ``self``.

    Example::

        >>> ember.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
        tensor([10., 20.])
    """
    return _elementwise_python(self, "apply_", callable, ())


def map_(self, tensor, callable):
    """Replace each element ``v`` by ``callable(v, t)`` in place, ``t`` the matching element
    of ``tensor`` broadcast to ``self``'s shape (CPU only, no autograd).

    Args:
        tensor (Tensor): the second operand, of ``self``'s dtype.
        callable: a function of two Python numbers.

    Returns:
        Tensor: ``self``.

    Example::

        >>> ember.tensor([1.0, 2.0]).map_(ember.tensor([3.0, 4.0]), lambda a, b: a + b)
        tensor([4., 6.])
    """
    return _elementwise_python(self, "map_", callable, (tensor,))


def map2_(self, x, y, callable):
    """Replace each element ``v`` by ``callable(v, a, b)`` in place, ``a`` and ``b`` the
    matching elements of ``x`` and ``y`` broadcast to ``self``'s shape (CPU only).

    Args:
        x, y (Tensor): the other operands, of ``self``'s dtype.
        callable: a function of three Python numbers.

    Returns:
        Tensor: ``self``.

    Example::

        >>> ember.zeros(2).map2_(ember.ones(2), ember.ones(2), lambda a, b, c: a + b + c)
        tensor([2., 2.])
    """
    return _elementwise_python(self, "map2_", callable, (x, y))


Tensor.apply_, Tensor.map_, Tensor.map2_ = apply_, map_, map2_


# ------------------------------------------------------------------------------------------------
# fill_diagonal_


def _diag_positions(shape, wrap):
    """Flat (C-order) positions of the main diagonal of a tensor whose dims are all equal
    (or, in 2-D, of a tall matrix; ``wrap`` restarts it below every square block)."""
    if len(shape) == 2:
        n, m = shape
        step = m + 1
        stop = n * m if wrap and n > m else min(n, m) * m
        return np.arange(0, stop, step)
    n = shape[0]
    step = sum(n ** k for k in range(len(shape)))
    return np.arange(n) * step


def _fill_diagonal_kernel(xp, a, value, *, wrap):
    out = a.copy()
    flat = out.reshape(-1)
    flat[xp.asarray(_diag_positions(a.shape, wrap))] = value.astype(a.dtype) \
        if value.dtype.kind != "c" or a.dtype.kind == "c" else value.real.astype(a.dtype)
    return out.reshape(a.shape)


def _fill_diagonal_vjp(g, _a, _value, *, wrap, needs_input_grad):
    ga = None
    if needs_input_grad[0]:
        ga = _dispatch.apply(fill_diagonal_op, (g, g.new_zeros(())), {"wrap": wrap})
    gv = None
    if needs_input_grad[1]:
        gv = g.reshape(-1)[_index_tensor(_diag_positions(tuple(g.shape), wrap))].sum()
    return ga, gv


def _index_tensor(positions):
    return wrap(np.asarray(positions, np.int64))


fill_diagonal_op = Op("fill_diagonal", _fill_diagonal_kernel, vjp=_fill_diagonal_vjp)
linear_jvp(fill_diagonal_op, (0, 1))  # forward mode: linear in the tensor and the value


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal with ``fill_value`` in place. The tensor must be 2-D or have
    all dims equal; ``wrap`` continues the diagonal of a tall matrix below each square
    block (after one skipped row), as NumPy's ``fill_diagonal`` does.

    Args:
        fill_value (Number): the value written.
        wrap (bool): restart the diagonal in a tall matrix. Default: False.

    Returns:
        Tensor: ``self``.

    Example::

        >>> ember.zeros(2, 3).fill_diagonal_(1.0)
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    check_tensor("fill_diagonal_", self, "self")
    shape = self._data.shape
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    value = fill_value if isinstance(fill_value, Tensor) else _value_tensor(fill_value)
    return _dispatch.commit_inplace_result(
        "fill_diagonal_", self,
        lambda: _dispatch.apply(fill_diagonal_op, (self, value), {"wrap": bool(wrap)}))


def _value_tensor(v):
    if not isinstance(v, (int, float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' must be Number, not "
                        f"{type(v).__name__}")
    return wrap(np.asarray(v))


Tensor.fill_diagonal_ = fill_diagonal_


# ------------------------------------------------------------------------------------------------
# hash_tensor


def _hash_tensor_kernel(xp, a, *, dim, keepdim):
    # every element as 64 bits (integers sign-extended, floats widened to float64), XORed
    if a.dtype.kind in "biu":
        bits = a.astype(np.int64).view(np.uint64)
    else:
        bits = a.astype(np.float64).view(np.uint64)
    return xp.bitwise_xor.reduce(bits, axis=dim, keepdims=keepdim)


hash_tensor_op = Op("hash_tensor", _hash_tensor_kernel, differentiable=False)


@public
def hash_tensor(input, dim=None, *, keepdim=False, mode=0, out=None):
    """A hash of the elements of ``input`` over ``dim`` (all of them by default): each element
    is taken as 64 bits -- integers and bools sign-extended to int64, floating values widened
    to float64 -- and the bit patterns are combined with XOR (``mode=0``, the only mode).

    Args:
        input (Tensor): bool, integer (up to 64 bits, signed, or uint8) or floating tensor.
        dim (int or tuple of ints, optional): the dims to reduce; None or ``()`` for all.
        keepdim (bool): keep the reduced dims with size 1. Default: False.
        mode (int): the hash; only 0 (XOR of the bits). Keyword-only.
        out (Tensor, optional): a uint64 tensor for the result.

    Returns:
        Tensor: uint64 hashes.

    Example::

        >>> ember.hash_tensor(ember.tensor([1, 2, 3]))
        tensor(0, dtype=ember.uint64)
        >>> ember.tensor([[1.5, -0.0]]).hash_tensor(dim=1)
        tensor([13832806255468478464], dtype=ember.uint64)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"hash_tensor(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    a = input._data
    name = _dt.from_np[a.dtype].scalar_name
    if a.dtype.kind == "c" or a.dtype.kind == "u" and a.dtype.itemsize > 1 or \
            a.dtype in _dt._NO_MATH_NP:
        raise NotImplementedError(f'"xor_sum_cpu" not implemented for \'{name}\'')
    nd = a.ndim
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None or len(dim) == 0:
        if a.size == 0:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        axes = None
        if keepdim:
            axes = tuple(range(nd))
    else:
        from .._core.checks import wrap_dim

        axes = tuple(wrap_dim(d, nd, "hash_tensor") for d in dim)
        for d in axes:
            if axes.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        for d in axes:
            if nd and a.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero "
                                 "size.")
        axes = axes if nd else None
    if out is not None and out._data.dtype != np.uint64:
        raise RuntimeError(f"Expected result to be of dtype uint64, but got "
                           f"{_dt.from_np[out._data.dtype].scalar_name}")
    r = _dispatch.apply(hash_tensor_op, (input,), {"dim": axes, "keepdim": keepdim and nd > 0})
    return r if out is None else _dispatch.write_out("hash_tensor", out, r)
