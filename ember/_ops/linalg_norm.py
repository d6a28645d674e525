"""Vector and matrix norms, cross and vector dot products (``ember.linalg`` and ``ember``)."""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.checks import wrap_dim, wrap_dims
from .._core.tensor import Tensor
from .._kernels import _vnorm
from ._memory_format import row_major_kernel as _row_major
from ._registry import Op, public
from .indexing import multilinear_jvp
from .linalg import _LOWP, _conj, check_tensor
from .linalg_decomp import svdvals

_INF = math.inf


# ------------------------------------------------------------------------------------------------
# vector_norm


def _vnorm_kernel(xp, a, *, ord, dim, keepdim):
    dt = a.dtype
    if ord != 0 and math.prod(a.shape[d] for d in (range(a.ndim) if dim is None else dim)) \
            == 1:
        # one value per result: PyTorch's kernel gives |x| itself (no square to overflow)
        x = xp.abs(a)
        x = x.astype(np.float32) if x.dtype in _LOWP else x
        real = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
        return xp.asarray(x.sum(axis=dim, keepdims=keepdim)).astype(real)
    if ord == 2 and xp is np and (dim is None or len(dim) == a.ndim):
        s = _vnorm.sumsq(a)   # NOTE [ A 2-norm in PyTorch's lanes ]
        if s is not None:
            r = np.asarray(np.sqrt(s))
            return r.reshape((1,) * a.ndim) if keepdim else r
    x = xp.abs(a)
    if x.dtype in _LOWP:
        x = x.astype(np.float32)
    if ord == _INF:
        r = x.max(axis=dim, keepdims=keepdim)
    elif ord == -_INF:
        r = x.min(axis=dim, keepdims=keepdim)
    elif ord == 0:
        r = (x != 0).sum(axis=dim, keepdims=keepdim).astype(x.dtype)
    elif ord == 1:
        r = x.sum(axis=dim, keepdims=keepdim)
    elif ord == 2:
        r = xp.sqrt((x * x).sum(axis=dim, keepdims=keepdim))
    else:
        r = (x ** ord).sum(axis=dim, keepdims=keepdim) ** (1.0 / ord)
    real = np.dtype(dt.char.lower()) if dt.kind == "c" else dt
    return xp.asarray(r).astype(real)


def _vnorm_vjp(g, x, *, out, ord, dim, keepdim):
    if ord == 0:
        return None
    nd = x.dim()
    dims = range(nd) if dim is None else dim
    kshape = tuple(1 if i in dims else s for i, s in enumerate(x.shape))
    if not keepdim:
        g = g.reshape(kshape)
        out = out.reshape(kshape)
    sgn = x.sgn()
    if ord == 1:
        return g * sgn
    if ord == 2:
        safe = out + (out == 0)
        return x / safe * g  # torch's order (its bits; |x| / norm <= 1 stays finite)
    if ord in (_INF, -_INF):
        ax = x.abs()
        mask = (ax == out) | ax.isnan()  # a NaN element is where a NaN norm came from
        count = mask.sum(dim=tuple(dims), keepdim=True)
        return g * sgn * mask / count
    safe = out + (out == 0)
    ratio = x.abs() / safe
    if ord < 1:  # a zero element has a zero gradient (not 0 * inf), as in torch
        ratio = ratio + (x == 0)
    res = g * sgn * ratio ** (ord - 1)
    if ord < 0:  # a zero element makes the norm 0 whatever the others: all gradients 0
        res = res * (out != 0)
    return res


def _vnorm_jvp(x_dots, x, *, out, ord, dim, keepdim):
    # a reduction to a real value: d norm = sum(re(conj(d norm / d x) x_dot)), the partials
    # being the vjp at a cotangent of ones
    if ord == 0:
        return None
    part = _vnorm_vjp(out.new_ones(tuple(out.shape)), x, out=out, ord=ord, dim=dim,
                      keepdim=keepdim)
    p = part.conj() * x_dots[0]
    if p.is_complex():
        p = p.real
    dims = tuple(range(x.dim())) if dim is None else tuple(dim)
    return p.sum(dims, keepdim=keepdim)


vector_norm_op = Op("linalg_vector_norm", _row_major(_vnorm_kernel), vjp=_vnorm_vjp, jvp=_vnorm_jvp)


def _norm_input(op_name, x, dtype):
    """``x`` in the dtype a norm computes in, checked in torch's order: the input floating
    or complex, then ``dtype=`` floating or complex, of the input's kind (complex for
    complex), and reached from the input's dtype without narrowing."""
    check_tensor(op_name, x, "x")
    if x.dtype.category < 2:
        raise RuntimeError(
            f"{op_name}: Expected a floating point or complex tensor as input. Got "
            f"{x.dtype.scalar_name}")
    if dtype is not None:
        dtype = _dt.lookup(dtype)
        if dtype.category < 2:
            raise RuntimeError(
                f"{op_name}: dtype should be floating point or complex, but got "
                f"{dtype.scalar_name}")
        if x.dtype.is_complex != dtype.is_complex:
            kind = "complex for complex" if x.dtype.is_complex else "real for real"
            raise RuntimeError(f"{op_name}: dtype should be {kind} inputs, but got "
                               f"{dtype.scalar_name}")
        if _dt.promote_types(x.dtype, dtype) != dtype:
            raise RuntimeError(
                f"{op_name}: the dtype of the input ({x.dtype.scalar_name}) should be "
                f"convertible without narrowing to the specified dtype ({dtype.scalar_name})")
        x = x.to(dtype)
    return x


def _check_ord_number(op_name, ord):
    if isinstance(ord, bool) or not isinstance(ord, (int, float, np.number)):
        raise TypeError(
            f"{op_name}(): argument 'ord' must be Number, not {type(ord).__name__}")
    return float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of ``x`` over ``dim`` (all dims when None), treated as a vector.

    ``ord`` may be any real number or +-inf; 0 counts the nonzeros.
    """
    op_name = "linalg.vector_norm"
    x = _norm_input(op_name, x, dtype)
    ord = _check_ord_number(op_name, ord)
    if dim is not None:
        dim = wrap_dims(dim, x.dim(), op_name)
        if not dim or not x.dim():  # (a 0-dim tensor's dim 0 is the tensor itself)
            dim = None
    reduced = range(x.dim()) if dim is None else dim
    if ord < 0 or ord == _INF:
        for d in reduced:
            if x.shape[d] == 0:
                raise RuntimeError(
                    f"{op_name} cannot compute the {ord:g} norm on an empty tensor because "
                    "the operation does not have an identity")
    params = {"ord": ord, "dim": dim, "keepdim": bool(keepdim)}
    return _dispatch.apply(vector_norm_op, (x,), params, out)


# ------------------------------------------------------------------------------------------------
# matrix_norm, norm


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm of ``A`` over the two dims ``dim``: 'fro', 'nuc', +-1, +-2, +-inf."""
    op_name = "linalg.matrix_norm"
    if (ord == "nuc" or ord in (2, -2)) and isinstance(A, Tensor) and \
            A.dtype in (_dt.float16, _dt.bfloat16):
        # (the input's own dtype, before dtype= is looked at)
        raise RuntimeError(
            f"{op_name}: Low precision dtypes not supported. Got {A.dtype.scalar_name}")
    A = _norm_input(op_name, A, dtype)
    if A.dim() < 2:
        raise RuntimeError(
            f"{op_name}: The input tensor A must have at least 2 dimensions.")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{op_name}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = wrap_dims(dim, A.dim(), op_name)
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        if A.dtype in (_dt.float16, _dt.bfloat16):
            raise RuntimeError(
                f"{op_name}: Low precision dtypes not supported. Got {A.dtype.scalar_name}")
        B = A.movedim((d0, d1), (-2, -1)) if (d0, d1) != (A.dim() - 2, A.dim() - 1) else A
        s = svdvals(B)
        if ord == -2 and min(B.shape[-2:]) == 0:
            # torch takes the smallest of no singular values
            raise IndexError("amin(): Expected reduction dim -1 to have non-zero size.")
        # the largest of none is 0, as torch's
        vord = 1 if ord == "nuc" or not s.shape[-1] else (_INF if ord == 2 else -_INF)
        r = vector_norm(s, vord, -1)
        if ord == 2 and not s.shape[-1]:
            r = r.detach()  # torch's amax of nothing: zeros outside the graph
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
    elif ord in (1, -1, _INF, -_INF):
        # 1: max column sum (sum over rows d0, extreme over columns d1); inf: the reverse
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        ext = _INF if ord > 0 else -_INF
        sums = vector_norm(A, 1, inner, True)
        if not sums.shape[outer]:
            if ext < 0:  # torch's amin over the empty dim, numbered as in its sums
                at = outer if keepdim else outer - (inner < outer)
                raise IndexError(f"amin(): Expected reduction dim {at} to have non-zero size.")
            ext = 1  # the largest of no sums is 0, as torch's: zeros outside the graph
            sums = sums.detach()
        r = vector_norm(sums, ext, outer, True)
        if not keepdim:
            shape = tuple(s for i, s in enumerate(r.shape) if i not in (d0, d1))
            r = r.reshape(shape)
    else:
        raise RuntimeError(f"{op_name}: Order {ord} not supported.")
    return r if out is None else _dispatch.write_out(op_name, out, r)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """A vector norm (``dim`` an int or None on a 1-D input) or a matrix norm (``dim`` a
    pair, or None on a 2-D input); ``ord=None`` is the 2-norm / Frobenius norm."""
    op_name = "linalg.norm"
    check_tensor(op_name, A, "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or (dim is None and ord is not None and A.dim() == 2):
        if ord is None:
            ord = "fro"
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    if dim is None and ord is not None and A.dim() != 1:
        raise RuntimeError(
            f"{op_name}: If dim is not specified but ord is, the input must be 1D or 2D. Got "
            f"{A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"{op_name}: ord={ord!r} requires a matrix (two dims)")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype, out=out)


@public(name="norm")
def _torch_norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The legacy ``norm``: 'fro' and numbers are vector norms over ``dim`` (all dims by
    default), 'nuc' a matrix norm."""
    check_tensor("norm", input)
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc":
        return matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim,
                           dtype=dtype, out=out)
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm: unsupported p={p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


# ------------------------------------------------------------------------------------------------
# cross, vecdot


def _cross_kernel(xp, a, b, *, dim):
    # NumPy's cross is Python code: its overflow and inf - inf warnings name NumPy's module,
    # past ember's filter (NOTE [ Floating-point warnings ] in ember/__init__.py)
    with np.errstate(all="ignore"):
        return xp.cross(a, b, axis=dim)


def _cross_vjp(g, a, b, *, dim):
    return (_dispatch.apply(cross_op, (_conj(b), g), {"dim": dim}),
            _dispatch.apply(cross_op, (g, _conj(a)), {"dim": dim}))


cross_op = Op("linalg_cross", _cross_kernel, vjp=_cross_vjp, linear=False)
multilinear_jvp(cross_op, (0, 1))  # forward mode: bilinear, d(a x b) = da x b + a x db


def _cross(op_name, a, b, dim):
    check_tensor(op_name, a, "input", 1)
    check_tensor(op_name, b, "other", 2)
    if a._data.dtype == np.bool_ and a.dim() == b.dim():
        # torch's kernel refuses a bool input before comparing dtypes (shapes come first)
        try:
            np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        except ValueError:
            pass
        else:
            raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"{op_name}: expected input and other to have the same dtype, but got "
            f"{a.dtype.scalar_name} and {b.dtype.scalar_name}")
    if a.dim() != b.dim():
        raise RuntimeError(
            f"{op_name}: inputs dimension {a.dim()} does not match other dimension {b.dim()}")
    try:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    except ValueError:
        raise RuntimeError(
            f"{op_name}: the shapes {list(a.shape)} and {list(b.shape)} cannot be broadcast "
            "together") from None
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"{op_name}: no dimension of size 3 in input")
    dim = wrap_dim(dim, len(shape), op_name)
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(
            f"{op_name}: inputs dimension {dim} must have length 3. Got {a.shape[dim]} and "
            f"{b.shape[dim]}")
    if a._data.dtype == np.bool_:
        raise NotImplementedError(f'"{op_name}" not implemented for \'Bool\'')
    return dim


def linalg_cross(input, other, *, dim=-1, out=None):
    """The 3-D cross product along ``dim`` (broadcasting the other dims)."""
    d = _cross("linalg.cross", input, other, dim)
    return _dispatch.apply(cross_op, (input, other), {"dim": d}, out)


@public
def cross(input, other, dim=None, *, out=None):
    """The 3-D cross product along ``dim`` (default: the first dim of size 3)."""
    d = _cross("cross", input, other, dim)
    return _dispatch.apply(cross_op, (input, other), {"dim": d}, out)


def vecdot(x, y, *, dim=-1, out=None):
    """``sum(conj(x) * y, dim)``, broadcasting the other dims."""
    check_tensor("linalg.vecdot", x, "x", 1)
    check_tensor("linalg.vecdot", y, "y", 2)
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(
            f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{x.dtype.scalar_name} and y of type {y.dtype.scalar_name} instead")
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {x.dtype.scalar_name}")
    n = max(x.dim(), y.dim())
    d = wrap_dim(dim, n, "linalg.vecdot")
    r = (_conj(x) * y).sum(d - n)
    return r if out is None else _dispatch.write_out("linalg.vecdot", out, r)


# the top-level forms show PyTorch's names
_torch_norm.__name__ = _torch_norm.__qualname__ = "norm"
