"""Products of vectors, matrices and tensors: matmul and its family, einsum, tensordot, kron.

Contractions (einsum, tensordot, kron, multi_dot) live in ``linalg_contract.py``,
decompositions and solvers in ``linalg_decomp.py``, least squares and matrix functions in
``linalg_func.py``, norms in ``linalg_norm.py``; ``ember.linalg`` re-exports from all.

NOTE [ Matmul dtypes ]
PyTorch multiplies matrices of any non-bool dtype on the CPU (integers wrap around), but
both operands must share one dtype: there is no promotion. float16 and bfloat16 are
computed in float32 and rounded once at the end -- NumPy has no BLAS for them, and PyTorch
accumulates in float32 as well, so this is both faster and closer to PyTorch.

NOTE [ Product gradients ]
Every product here is bilinear, so its vjp is another product with the gradient:
``d(a @ b) -> (g @ b^H, a^H @ g)`` (conjugate-Wirtinger, as PyTorch). Batch broadcasting
needs no care: the engine sums each gradient down to its input's shape.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor, wrap
from .._kernels import _blas
from . import _node_names
from ._registry import Op, observing_profiler, profiler_session, public
from .indexing import linear_jvp, multilinear_jvp  # forward-mode rules

_LOWP = (np.dtype(np.float16), _dt.bfloat16.np)
_FAST = frozenset(np.dtype(c) for c in ("float32", "float64", "complex64", "complex128"))


# ------------------------------------------------------------------------------------------------
# shared checks


def check_tensor(op_name, x, argname="input", pos=None):
    """Raise TypeError unless ``x`` is a Tensor."""
    if not isinstance(x, Tensor):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(
            f"{op_name}(): argument '{argname}'{where} must be Tensor, not {type(x).__name__}")


def check_out_tuple(op_name, out, n=2):
    """Reject a multi-result op's ``out=`` that is not a tuple of ``n`` tensors, with
    PyTorch's TypeError, before anything else about the call is checked (as its argument
    parser does: ``slogdet(int_matrix, out=t)`` is a TypeError, not a dtype error)."""
    if out is None:
        return
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{op_name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")
    if len(out) != n:
        raise TypeError(f"expected tuple of {n} elements but got {len(out)}")
    for k, o in enumerate(out):
        if not isinstance(o, Tensor):
            raise TypeError(f"{op_name}(): expected Tensor as element {k} of argument 'out', "
                            f"but got {type(o).__name__}")


# NOTE [ Product dtype messages ]
# PyTorch's products refuse operands of two dtypes in the words of the kernel each reaches:
# a matrix product (``mm``, ``matmul`` of matrices or of a vector and a matrix, ``linear``
# without a bias) says "expected m1 and m2 ... float != double" in C++ type names, a batched
# one (``bmm``, ``matmul`` with a 3-D operand) "expected scalar type Float but found Double",
# a matrix-vector one reports addmv's three inputs (the result, created in the vector's
# dtype, first), a vector-vector one dot's text; none names the Python function. A program
# that prints the error (the float64 NumPy batch fed to a float32 model) prints these.
def _matmul_folds(a, b, has_out):
    """Whether PyTorch's ``matmul`` of ``a`` and ``b``, one of them 3-D or more and the other
    1-D or 2-D, folds the batch into one matrix product (its ``should_fold``) rather than
    running a batched one: when the smaller operand needs a gradient, or when the larger
    (transposed if it is the second) flattens to a matrix without a copy."""
    na, nb = a.dim(), b.dim()
    larger = na >= nb
    if not (max(na, nb) >= 3 and min(na, nb) <= 2):
        return False
    if (b if larger else a).requires_grad and not has_out:
        return True
    if na == 2:
        return False
    shape, strides = list(a.shape if larger else b.shape), list(a.stride() if larger
                                                                  else b.stride())
    if not larger:  # the second operand's mT
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    if 0 in shape:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def product_dtype_message(op_name, a, b, has_out=False):
    """PyTorch's refusal of the product ``a @ b`` whose operands' dtypes differ, as the
    kernel ``op_name`` reaches says it (NOTE [ Product dtype messages ])."""
    na, nb = a._data.ndim, b._data.ndim
    sa, sb = a.dtype.scalar_name, b.dtype.scalar_name
    if op_name == "matmul" and max(na, nb) >= 3 and _matmul_folds(a, b, has_out):
        if na < nb:  # folded as ``(b.mT @ a.mT).mT``: the operands swap
            a, b, na, nb, sa, sb = b, a, nb, na, sb, sa
        op_name = "matmul-folded"
    if op_name in ("bmm", "baddbmm") or (op_name == "matmul" and max(na, nb) >= 3):
        return f"expected scalar type {sa} but found {sb}"
    if op_name == "matmul-folded" and nb == 1:
        return f"addmv input tensors must have the same dtype, but got {sb}, {sa}, and {sb}"
    if op_name == "mv" or (op_name == "matmul" and (na, nb) == (2, 1)):
        return f"addmv input tensors must have the same dtype, but got {sb}, {sa}, and {sb}"
    if op_name == "matmul" and na == nb == 1:
        return f"dot : expected both vectors to have same dtype, but found {sa} and {sb}"
    if op_name in ("addmm", "addbmm"):
        return f"mat1 and mat2 must have the same dtype, but got {sa} and {sb}"
    return (f"expected m1 and m2 to have the same dtype, but got: {_cpp_name(a.dtype)} != "
            f"{_cpp_name(b.dtype)}")


def check_same_dtype(op_name, a, b, style="m1"):
    """PyTorch's products do not promote: both operands must have one dtype."""
    if a._data.dtype != b._data.dtype:
        if style == "m1":
            raise RuntimeError(product_dtype_message(op_name, a, b))
        raise RuntimeError(
            f"{op_name}: expected both inputs to have the same dtype, but found "
            f"{a.dtype.scalar_name} and {b.dtype.scalar_name}")


def check_not_bool(op_name, *ts):
    for t in ts:
        if t._data.dtype == np.bool_:
            raise NotImplementedError(f'"{op_name}" not implemented for \'Bool\'')


def lowp(fn):
    """Wrap a kernel so float16/bfloat16 inputs compute in float32 (NOTE [ Matmul dtypes ]);
    ``upcast_lowp`` after making strided operands contiguous: they would take NumPy's
    non-BLAS loop, whose rounding differs from the contiguous case (one copy, which BLAS
    would make anyway, keeps results identical)."""
    inner = upcast_lowp(fn)

    def kernel(xp, *arrays, **params):
        return inner(xp, *[_contig(xp, a) for a in arrays], **params)

    kernel.__name__ = fn.__name__
    return kernel


def upcast_lowp(fn):
    """Wrap a kernel so float16/bfloat16 operands compute in float32 and the results come
    back in that low precision, as PyTorch's CPU kernels return them; float32/64 operands
    pass straight through (unlike ``lowp``, no contiguity copies: for kernels that handle
    layouts themselves, such as convolution)."""

    def kernel(xp, *arrays, **params):
        dt = None
        for a in arrays:
            if a is not None and a.dtype in _LOWP:
                dt = a.dtype
                break
        if dt is None:
            return fn(xp, *arrays, **params)
        up = [a.astype(np.float32) if a is not None and a.dtype in _LOWP else a for a in arrays]
        r = fn(xp, *up, **params)
        if isinstance(r, tuple):
            return tuple(None if x is None else x.astype(dt) for x in r)
        return r.astype(dt)

    kernel.__name__ = fn.__name__
    return kernel


def _contig(xp, a):
    if a is None or a.ndim < 1 or a.flags.c_contiguous or a.flags.f_contiguous:
        return a
    return xp.ascontiguousarray(a)


def _conj(x):
    return x.conj() if x.is_complex() else x


def _h(x):
    """The conjugate transpose of the last two dims."""
    return _conj(x.transpose(-2, -1))


def _sz(shape):
    return "x".join(str(s) for s in shape)


# ------------------------------------------------------------------------------------------------
# matmul


def gemm(xp, a, b):
    """``a @ b`` for arrays, with a stack of rows ``(..., m, k) @ (k, n)`` done as one GEMM.

    NOTE [ Folded matmul ]
    NumPy multiplies a 3-D array by a matrix as a loop of one GEMM per leading index, which
    for a (32, 64, 256) @ (256, 1024) projection costs 8.6 ms against 5.9 ms for the same
    product as one (2048, 256) @ (256, 1024) GEMM. Folding the leading dims into rows needs
    them contiguous; a strided stack (a transposed batch-first sequence) is copied first, as
    BLAS would copy it anyway, so the result is contiguous as PyTorch's is.
    """
    # NumPy's products pick the BLAS thread count by shape (NOTE [ GEMM threads by shape ])
    mm = _blas.matmul if xp is np else xp.matmul
    if a.ndim > 2 and b.ndim == 2:
        if not a.flags.c_contiguous:
            a = xp.ascontiguousarray(a)
        rows = math.prod(a.shape[:-1])
        out = mm(a.reshape(rows, a.shape[-1]), b)
        return out.reshape(a.shape[:-1] + (b.shape[1],))
    return mm(a, b)


# NOTE [ Sums through BLAS ]
# NumPy reduces along a short contiguous axis, or over all axes but one, several times
# slower than BLAS multiplies the same array by a vector of ones (one thread and a loop per
# row against a vectorised GEMV on both cores): (8192, 256) row means 0.54 -> 0.08 ms,
# sums over (0, 2, 3) of a (32, 64, 32, 32) array 0.34 -> 0.06 ms. The fused normalisation,
# softmax and loss kernels take their sums from these helpers. GEMV accumulates each dot
# product in a few SIMD lanes, so rows are capped at _BLAS_SUM_ROW elements, where its
# rounding stays within a few ulps of NumPy's pairwise sums; anything else reduces in NumPy.

_BLAS_SUM_ROW = 16384
_BLAS_SUM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _blas_summable(xp, x, row):
    # independent of the layout, so that strided inputs give the same bits (they are copied)
    return xp is np and x.size and 0 < row <= _BLAS_SUM_ROW and x.dtype in _BLAS_SUM_DTYPES


def row_sums(xp, x, ndim=1):
    """Sums of ``x`` over its last ``ndim`` axes, kept (NOTE [ Sums through BLAS ])."""
    axes = tuple(range(x.ndim - ndim, x.ndim))
    row = math.prod(x.shape[x.ndim - ndim:])
    if not _blas_summable(xp, x, row):
        return x.sum(axis=axes, keepdims=True)
    sums = np.ascontiguousarray(x).reshape(-1, row) @ np.ones(row, x.dtype)
    return sums.reshape(x.shape[:x.ndim - ndim] + (1,) * ndim)


def col_sums(xp, x, ndim=1):
    """Sums of ``x`` over all but its last ``ndim`` axes, shape ``x.shape[-ndim:]`` (NOTE
    [ Sums through BLAS ]; each output accumulates its rows in order, as NumPy's does)."""
    lead = x.ndim - ndim
    if lead == 0:
        return x.copy()
    rows = math.prod(x.shape[:lead])
    if not _blas_summable(xp, x, 1) or rows == 0:
        return x.sum(axis=tuple(range(lead)))
    return (np.ones(rows, x.dtype) @ np.ascontiguousarray(x).reshape(rows, -1)).reshape(
        x.shape[lead:])


def channel_sums(xp, x):
    """Sums of an (N, C, *S) array over every axis but 1, kept as (1, C, 1, ...): each
    plane's sum, then the sum over the batch (NOTE [ Sums through BLAS ])."""
    planes = row_sums(xp, x, x.ndim - 2) if x.ndim > 2 else x
    return planes.sum(axis=0, keepdims=True)


def _matmul_kernel(xp, a, b):
    if a.dtype in _dt._FLOAT8_NP:
        return _float8_matmul(a, b)
    return gemm(xp, a, b)


def _float8_matmul(a, b):
    """PyTorch multiplies float8 matrices (2-D, or a vector on the left) in float32 and rounds
    the result back; vectors on the right and batches it refuses (NOTE [ Float8 dtypes ])."""
    name = _dt.from_np[a.dtype].scalar_name
    kernel = ("dot" if a.ndim == b.ndim == 1 else "addmv_impl_cpu" if b.ndim == 1
              else "bmm" if a.ndim > 2 or b.ndim > 2 else None)
    if kernel is not None:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    return _dt.to_float8(np.matmul(a.astype(np.float32), b.astype(np.float32)), a.dtype)


def _matmul_vjp(g, a, b, *, needs_input_grad):
    need_a, need_b = needs_input_grad
    if not _dispatch.slow[0] and not _dispatch.state.grad_enabled and matmul_op.builtin_cpu:
        # two real CPU matrices, nothing recording and no mode to see the ops: the two
        # GEMMs the formula below runs, without its transposes' and products' Tensors
        # (the same arrays reach the same ``gemm``: results are identical)
        gd, ad, bd = g._data, a._data, b._data
        if (type(gd) is np.ndarray and type(ad) is np.ndarray and type(bd) is np.ndarray
                and gd.ndim == 2 and ad.ndim == 2 and bd.ndim == 2 and ad.dtype.kind == "f"
                and ad.dtype in _FAST and gd.dtype is ad.dtype and bd.dtype is ad.dtype):
            if gd.size * ad.shape[1] < _blas._BLAS_OWN_LIMIT:
                # (m, k) @ (k, n) that small runs on one thread whatever ``gemm`` decides:
                # NumPy's product straight away (``dot`` where it gives the same bits:
                # NOTE [ Small products by dot ])
                if _contiguous(gd) and (not need_a or _contiguous(bd)) and \
                        (not need_b or _contiguous(ad)):
                    return (wrap(gd.dot(bd.T)) if need_a else None,
                            wrap(ad.T.dot(gd)) if need_b else None)
                mm = np.matmul
                return (wrap(mm(gd, bd.T)) if need_a else None,
                        wrap(mm(ad.T, gd)) if need_b else None)
            return (wrap(gemm(np, gd, bd.T)) if need_a else None,
                    wrap(gemm(np, ad.T, gd)) if need_b else None)
    if a.dim() == 1 and b.dim() == 1:
        return (g * _conj(b) if need_a else None), (g * _conj(a) if need_b else None)
    if a.dim() == 1:
        # (k) @ (..., k, n) -> (..., n)
        ga = matmul(g.unsqueeze(-2), _h(b)).squeeze(-2) if need_a else None
        gb = matmul(_conj(a).unsqueeze(-1), g.unsqueeze(-2)) if need_b else None
        return ga, gb
    if b.dim() == 1 and a.dim() == 2:
        # PyTorch's MvBackward0: the outer product of the gradient and the vector (its
        # ``aten::ger``: the same products as the k=1 GEMM) and the transposed matrix times
        # the gradient
        return (ger(g, _conj(b)) if need_a else None), (mv(_ht(a), g) if need_b else None)
    if b.dim() == 1:
        # (..., m, k) @ (k) -> (..., m)
        ga = matmul(g.unsqueeze(-1), _conj(b).unsqueeze(-2)) if need_a else None
        gb = matmul(_h(a), g.unsqueeze(-1)).squeeze(-1) if need_b else None
        return ga, gb
    if a.dim() == 2 and b.dim() == 2 and (_column_major(a) or _column_major(b)):
        # PyTorch's mm formulas keep an operand's column-major layout in its gradient by
        # computing the transposed product (a linear layer's weight.t() is one): the same
        # GEMMs a mode or profiler sees there
        ga = (matmul(_conj(b), g.t()).t() if _column_major(a) else matmul(g, _ht(b))) \
            if need_a else None
        gb = (matmul(g.t(), _conj(a)).t() if _column_major(b) else matmul(_ht(a), g)) \
            if need_b else None
        return ga, gb
    ga = matmul(g, _ht(b)) if need_a else None
    if not need_b:
        return ga, None
    if b.dim() == 2 and a.dim() > 2:
        # the weight of a stacked product: one GEMM over all rows (NOTE [ Folded matmul ])
        rows = math.prod(a.shape[:-1])
        return ga, _ht(a.reshape(rows, a.shape[-1])) @ g.reshape(rows, g.shape[-1])
    return ga, matmul(_ht(a), g)


def _contiguous(d):
    """Whether array ``d`` is laid out C- or Fortran-contiguously (a BLAS operand as is)."""
    f = d.flags
    return f.c_contiguous or f.f_contiguous


# NOTE [ Small products by dot ]
# ``np.matmul`` of two small matrices costs ~1 us of NumPy's generalized-ufunc set-up on top
# of the BLAS call, ``ndarray.dot`` ~0.4 us: for real float matrices that are C- or
# Fortran-contiguous both end in the same BLAS routine with the same arguments, so their
# results are bit-identical (checked over shapes and layouts in
# tests/perf/test_session22_overhead.py). Strided operands (``matmul`` runs its own loop
# where ``dot`` would copy first) and complex ones (whose results differ in the last bit)
# keep ``np.matmul``; products at or above the BLAS's own threading limit keep ``gemm``.


def _column_major(x):
    """Whether the matrix ``x`` is laid out column by column (a contiguous matrix's ``t()``),
    by PyTorch's test of its strides."""
    # (an operand the node left unsaved is a stand-in remembering its strides:
    # ``Op.unsaved_layout``)
    st = x.__dict__.get("_layout_of_unsaved") or x._data.strides
    size = x._data.itemsize
    return st[0] == size and st[1] == x._data.shape[0] * size


def _ht(x):
    """``_h`` in matmul's gradients: a matrix's transpose there is ``t``, as in PyTorch's
    mm formulas (dispatch modes see the same ops)."""
    return _conj(x.t()) if x.dim() == 2 else _h(x)


def _matmul_jvp(x_dots, a, b, *, out):
    da, db = x_dots
    r = None
    if da is not None:
        r = matmul(da, b)
    if db is not None:
        t = matmul(a, db)
        r = t if r is None else r + t
    return r


matmul_op = Op("matmul", lowp(_matmul_kernel), vjp=_matmul_vjp, jvp=_matmul_jvp)
# each operand is kept only for the other's gradient, as PyTorch's mm/bmm/mv nodes keep
# them: a weight stepped in place between forward and backward breaks only a backward that
# reads it (not one whose other operand is data); an unsaved operand's layout still chooses
# its gradient's GEMM (``_column_major``)
matmul_op.saved_for = {0: (1,), 1: (0,)}
matmul_op.unsaved_layout = True


def _check_matmul(op_name, a, b, out=None):
    check_tensor(op_name, a, "input", 1)
    check_tensor(op_name, b, "other", 2)
    da, db = a._data, b._data
    if da.ndim == 0 or db.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are "
            f"{da.ndim}D and {db.ndim}D")
    if da.dtype == np.bool_ and db.dtype != np.bool_ and \
            _bool_product_kernel(da.shape, db.shape) == "bmm":
        # torch's bmm kernel picks its loop by the first operand's dtype before it compares
        # the two
        raise NotImplementedError('"bmm" not implemented for \'Bool\'')
    _check_product_shapes(da.shape, db.shape)  # (before the dtypes, as PyTorch)
    if da.dtype != db.dtype:
        raise RuntimeError(product_dtype_message(op_name, a, b, out is not None))
    if da.dtype == np.bool_:
        kernel = _bool_product_kernel(da.shape, db.shape)
        if kernel is not None:
            if isinstance(out, Tensor) and out.dtype != a.dtype:
                # torch checks an out= tensor's dtype before the kernel refuses bool
                raise RuntimeError(f"Expected out tensor to have dtype bool, but got "
                                   f"{_cpp_name(out.dtype)} instead")
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _product_fits(sa, sb):
    """Whether shapes ``sa @ sb`` multiply (no error of their own to raise first)."""
    try:
        _check_product_shapes(sa, sb)
    except RuntimeError:
        return False
    return True


def _cpp_name(dtype):
    """A dtype as torch's C++ type names it in some of its messages."""
    return {"int8": "signed char", "uint8": "unsigned char", "int16": "short int",
            "int32": "int", "int64": "long int", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
            "bool": "bool"}.get(dtype.name, dtype.name)


def _check_product_shapes(sa, sb):
    """Raise PyTorch's error for ``a @ b`` of shapes ``sa``, ``sb`` that do not multiply.

    NOTE [ Matmul's errors name the kernel it reaches ]
    PyTorch's matmul folds its operands into one kernel call and the error is that kernel's,
    with no op name in front (users search the exact text): vector . vector is ``dot``;
    matrix (or a stack folded into one) times a vector is ``mv`` ("size mismatch, got input
    (R), mat (Rxk), vec (n)"); a vector or a matrix (or a stack folded into rows) times a
    matrix is ``mm`` ("mat1 and mat2 shapes cannot be multiplied (Rxk and kxn)"); anything
    with a batched right side broadcasts the batch dimensions first (their error) and is one
    ``bmm`` over their product B ("... batch2 tensor to be: [B, k] but got: [B, k']").
    """
    ka = sa[-1]
    kb = sb[-2] if len(sb) > 1 else sb[0]
    na, nb = len(sa), len(sb)
    if nb >= 3:
        batch_a, batch_b = (sa[:-2] if na > 1 else ()), sb[:-2]
        batch = _broadcast_batch(batch_a, batch_b)
        if ka != kb:
            b = int(np.prod(batch, dtype=np.int64))
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{b}, {ka}] "
                f"but got: [{b}, {kb}].")
        return
    if ka == kb:
        return
    if na == 1 and nb == 1:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
            f"number of elements, but got {ka} and {kb} elements respectively")
    rows = int(np.prod(sa[:-1], dtype=np.int64)) if na > 1 else 1
    if nb == 1:
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})")
    raise RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and {kb}x{sb[-1]})")


def _broadcast_batch(sa, sb):
    """The broadcast of two batch shapes, or PyTorch's error naming the first clash."""
    n = max(len(sa), len(sb))
    out = []
    for i in range(n):
        a = sa[i - n + len(sa)] if i - n + len(sa) >= 0 else 1
        b = sb[i - n + len(sb)] if i - n + len(sb) >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {i}")
        out.append(b if a == 1 else a)
    return tuple(out)


def _bool_product_kernel(sa, sb):
    """The BLAS-style kernel PyTorch's decomposition of a bool product ``sa @ sb`` reaches
    and refuses, or None when the product does no arithmetic (an empty result or an empty
    contraction gives False/empty without a kernel); a dot product always refuses."""
    if len(sa) == 1 and len(sb) == 1:
        return "dot"
    m = sa[-2] if len(sa) > 1 else 1
    n = sb[-1] if len(sb) > 1 else 1
    batch = np.broadcast_shapes(sa[:-2], sb[:-2] if len(sb) > 1 else ())
    if sa[-1] == 0 or m * n * math.prod(batch) == 0:
        return None
    if len(sb) == 1:
        return "addmv_impl_cpu"
    return "addmm_impl_cpu_" if len(sb) == 2 else "bmm"


@public(dunders=("__matmul__",))
def matmul(input, other, *, out=None):
    """Matrix product with NumPy/PyTorch broadcasting: 1-D operands are promoted to a row
    (left) or column (right) and the added dim removed; leading dims broadcast.

    Example::

        >>> ember.matmul(ember.ones(2, 3), ember.ones(3)).shape
        ember.Size([2])
    """
    if _dispatch.intercept and _dispatch.state.modes:
        return _matmul_door("matmul", input, other, out)
    da = getattr(input, "_data", None)
    db = getattr(other, "_data", None)
    # the hot path: two same-dtype float matrices on the CPU (NOTE [ Hot path ] in
    # _dispatch.py): straight to BLAS, no kernel wrapper, no argument checks to run
    if (out is None and da is not None and db is not None and da.dtype is db.dtype
            and not _dispatch.intercept and matmul_op.builtin_cpu
            and da.dtype in _FAST and type(da) is np.ndarray and type(db) is np.ndarray
            and da.ndim >= 2 and db.ndim >= 2 and da.shape[-1] == db.shape[-2]
            and (da.ndim == 2 or db.ndim == 2 or da.shape[:-2] == db.shape[:-2])
            and (da.flags.c_contiguous or da.flags.f_contiguous)
            and (db.flags.c_contiguous or db.flags.f_contiguous)):
        if da.ndim == 2 and db.ndim == 2 and da.dtype.kind == "f" and \
                da.shape[0] * db.shape[1] * da.shape[1] < _blas._BLAS_OWN_LIMIT:
            t = wrap(da.dot(db))  # NOTE [ Small products by dot ]
        else:
            t = wrap(gemm(np, da, db))
        if (input._rg or other._rg) and _dispatch.record is not None and \
                _dispatch.state.grad_enabled:
            _dispatch.record_binary(matmul_op, input, other, t)
        return t
    if isinstance(input, Tensor) and isinstance(other, Tensor) and input.dim() >= 2 and \
            other.dim() >= 3 and input.dtype != other.dtype and \
            _product_fits(tuple(input.shape), tuple(other.shape)) and \
            _bool_product_kernel(tuple(input.shape), tuple(other.shape)) is None:
        # a batched product with nothing to compute skips torch's bmm dtype check (as
        # ``bmm``): the result takes other's dtype
        input = input.to(other.dtype)
    _check_matmul("matmul", input, other, out)
    return _dispatch.apply(matmul_op, (input, other), {}, out)


def _matmul_door(name, input, other, out):
    """Hand a matrix product to the modes under the name PyTorch's decomposition gives it
    (``mm`` for two matrices, ``bmm`` for two stacks, ``mv``, ``dot``), NOTE [ Dispatch ]."""
    if name == "matmul":
        session = profiler_session()
        if session is not None and not session.in_backward_node():
            # PyTorch's profiler shows ``aten::matmul`` around the product it runs (NOTE
            # [ Composite op events ] in ember/profiler/_recorder.py); its derivative
            # formulas call the product itself. Operands it composes for run as its steps
            # (NOTE [ Matmul under the profiler ] in ember/profiler/_matmul.py)
            from ..profiler import _matmul

            if _matmul.decomposes(input, other, out) and observing_profiler() is session:
                return session.composite("aten::matmul", lambda: (input, other),
                                         _matmul.matmul, (session, input, other), {})
            return session.composite("aten::matmul", lambda: (input, other), _matmul_modes,
                                     (name, input, other, out), {})
    return _matmul_modes(name, input, other, out)


def _matmul_modes(name, input, other, out):
    a, b = getattr(input, "_data", None), getattr(other, "_data", None)
    if name == "matmul" and a is not None and b is not None:
        name = {(2, 2): "mm", (3, 3): "bmm", (2, 1): "mv", (1, 1): "dot"}.get(
            (a.ndim, b.ndim), "matmul")
    handle = _matmul_handles.get((name, out is not None))
    if handle is None:
        def run(input, other, *, out=None):
            return matmul(input, other, out=out)

        handle = _matmul_handles[name, out is not None] = _dispatch.overload(
            "aten", name, "out" if out is not None else "default", run, matmul_op)
    return _dispatch.through_modes(handle, (input, other), {} if out is None else {"out": out})


_matmul_handles: dict = {}


def _rmatmul(self, other):
    if not isinstance(other, Tensor):
        return NotImplemented
    return matmul(other, self)


# no ``__imatmul__``, as in PyTorch: ``a @= b`` rebinds ``a`` to ``a @ b`` (any result shape,
# autograd as for ``@``), leaving the old tensor and its views untouched
Tensor.__rmatmul__ = _rmatmul


@public
def mm(input, mat2, *, out=None):
    """Product of two matrices ``(n, m) @ (m, p) -> (n, p)``; no broadcasting."""
    check_tensor("mm", input, "input", 1)
    check_tensor("mm", mat2, "mat2", 2)
    if input.dim() != 2:
        raise RuntimeError(f"mm: self must be a matrix, but got a {input.dim()}-D tensor")
    if mat2.dim() != 2:
        raise RuntimeError(f"mm: mat2 must be a matrix, but got a {mat2.dim()}-D tensor")
    _check_matmul("mm", input, mat2, out)
    if _dispatch.intercept and _dispatch.state.modes:
        return _matmul_door("mm", input, mat2, out)
    return _dispatch.apply(matmul_op, (input, mat2), {}, out)


@public
def bmm(input, mat2, *, out=None):
    """Batched product ``(b, n, m) @ (b, m, p) -> (b, n, p)``; no broadcasting."""
    check_tensor("bmm", input, "input", 1)
    check_tensor("bmm", mat2, "mat2", 2)
    if input.dim() != 3:
        raise RuntimeError(f"bmm: batch1 must be a 3D tensor, but got a {input.dim()}-D tensor")
    if mat2.dim() != 3:
        raise RuntimeError(f"bmm: batch2 must be a 3D tensor, but got a {mat2.dim()}-D tensor")
    sa, sb = input.shape, mat2.shape
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{sa[0]}, {sa[2]}] but got: [{sb[0]}, {sb[1]}].")
    if input.dtype != mat2.dtype and not (sa[0] * sa[1] * sb[2] and sa[2]):
        # an empty product (or an empty contraction) skips PyTorch's dtype check; the
        # result takes mat2's dtype
        input = input.to(mat2.dtype)
    _check_matmul("bmm", input, mat2, out)
    if _dispatch.intercept and _dispatch.state.modes:
        return _matmul_door("bmm", input, mat2, out)
    return _node_names.rename(_dispatch.apply(matmul_op, (input, mat2), {}, out), "BmmBackward0")


@public
def mv(input, vec, *, out=None):
    """Matrix-vector product ``(n, m) @ (m,) -> (n,)``."""
    check_tensor("mv", input, "input", 1)
    check_tensor("mv", vec, "vec", 2)
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(
            f"mv: vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0]}), mat ({_sz(input.shape)}), "
            f"vec ({vec.shape[0]})")
    _check_matmul("mv", input, vec)
    return _dispatch.apply(matmul_op, (input, vec), {}, out)


def _check_vectors(op_name, a, b):
    check_tensor(op_name, a, "input", 1)
    check_tensor(op_name, b, "tensor", 2)
    if a.dim() != 1 or b.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a._data.dtype != b._data.dtype:
        # torch's text, "dot : " for vdot too (one shared check in its kernels)
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{a.dtype.scalar_name} and {b.dtype.scalar_name}")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
            f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} and "
            f"{b.shape[0]} elements respectively")
    check_not_bool("dot", a)  # (torch's vdot of bools reports its dot kernel too)


@public
def dot(input, tensor, *, out=None):
    """Dot product of two 1-D tensors of one dtype (no conjugation)."""
    _check_vectors("dot", input, tensor)
    return _dispatch.apply(matmul_op, (input, tensor), {}, out)


def _vdot_kernel(xp, a, b):
    return xp.asarray(xp.vdot(a, b))


def _vdot_vjp(g, a, b):
    # out = sum(conj(a) * b): d/da* gets g* b*... in PyTorch's convention: conj(g) * b, g * a
    return _conj(g) * b, g * a


vdot_op = Op("vdot", lowp(_vdot_kernel), vjp=_vdot_vjp)
multilinear_jvp(vdot_op, (0, 1))


@public
def vdot(input, other, *, out=None):
    """``sum(conj(input) * other)`` over two 1-D tensors."""
    _check_vectors("vdot", input, other)
    return _dispatch.apply(vdot_op, (input, other), {}, out)


# ------------------------------------------------------------------------------------------------
# promoting products: inner, outer, kron, tensordot


def _promote(op_name, *ts):
    """PyTorch's type promotion of tensor operands; returns them cast to the common dtype."""
    d = ts[0].dtype
    for t in ts[1:]:
        d = _dt.promote_types(d, t.dtype)
    return tuple(t if t.dtype is d else t.to(d) for t in ts)


def _outer_kernel(xp, a, b):
    return xp.multiply.outer(a, b)


def _outer_vjp(g, a, b):
    return matmul(g, _conj(b)), matmul(_conj(a), g)


outer_op = Op("outer", _outer_kernel, vjp=_outer_vjp)
multilinear_jvp(outer_op, (0, 1))


@public
def outer(input, vec2, *, out=None):
    """Outer product of two vectors: ``result[i, j] = input[i] * vec2[j]``."""
    check_tensor("outer", input, "input", 1)
    check_tensor("outer", vec2, "vec2", 2)
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(
            f"outer: expected 1-D vectors, but got {input.dim()}-D and {vec2.dim()}-D tensors")
    session = observing_profiler() if out is None else None
    if session is not None:
        # PyTorch's outer is a composite, the first vector as a column times the second
        # (rows ``aten::reshape`` and ``aten::mul``, nodes ``ViewBackward0`` and
        # ``MulBackward0``); the products are the same numbers
        return session.composite("aten::outer", lambda: (input, vec2),
                                 lambda a, b: a.reshape(-1, 1) * b, (input, vec2), {})
    a, b = _promote("outer", input, vec2)
    return _dispatch.apply(outer_op, (a, b), {}, out)


@public
def ger(input, vec2, *, out=None):
    """The outer product of two vectors, ``outer``'s older name.

    Args:
        input: a 1-D tensor of ``n`` values.
        vec2: a 1-D tensor of ``m`` values.
        out: an optional ``(n, m)`` tensor to write into.

    Returns:
        The ``(n, m)`` tensor ``result[i, j] = input[i] * vec2[j]``.

    Example::

        >>> ember.ger(ember.tensor([1., 2.]), ember.tensor([3., 4., 5.]))
        tensor([[ 3.,  4.,  5.],
                [ 6.,  8., 10.]])
    """
    session = observing_profiler() if out is None else None
    if session is not None:   # (PyTorch's ``aten::ger`` row around its ``aten::outer``)
        return session.composite("aten::ger", lambda: (input, vec2), outer, (input, vec2), {})
    return outer(input, vec2, out=out)


# ------------------------------------------------------------------------------------------------
# addmm and friends: beta * input + alpha * (product)


def _scale(x, s):
    return x if s == 1 or x is None else x * s


def _add_kernel(prod):
    def kernel(xp, c, a, b, *, beta, alpha):
        p = prod(xp, a, b)
        if alpha != 1:
            p = p * xp.asarray(alpha).astype(p.dtype)
        if beta == 0:  # PyTorch ignores input entirely (nan and inf included)
            return p
        cc = c if beta == 1 else c * xp.asarray(beta).astype(c.dtype)
        if cc.dtype == p.dtype and np.broadcast_shapes(cc.shape, p.shape) == p.shape:
            p += cc  # (``p`` is the product's new array: the same sum, no two copies)
            return p
        return (cc + p).astype(p.dtype)

    return lowp(kernel)


def _cj(s):
    return s.conjugate() if isinstance(s, complex) else s


def _addmm_vjp(g, _c, a, b, *, beta, alpha, needs_input_grad):
    gc = _scale(g, _cj(beta)) if needs_input_grad[0] else None  # beta=0: zeros, as torch
    ga, gb = _matmul_vjp(g, a, b, needs_input_grad=needs_input_grad[1:])
    return gc, _scale(ga, _cj(alpha)), _scale(gb, _cj(alpha))


def _addr_vjp(g, _c, a, b, *, beta, alpha):
    gc = _scale(g, _cj(beta))
    ga, gb = _outer_vjp(g, a, b)
    return gc, _scale(ga, _cj(alpha)), _scale(gb, _cj(alpha))


def _bsum_mm(xp, a, b):
    p = xp.matmul(a, b)
    return p.sum(0, dtype=p.dtype)


def _addbmm_vjp(g, _c, a, b, *, beta, alpha):
    gc = _scale(g, _cj(beta))
    g3 = g.unsqueeze(0)
    return gc, _scale(matmul(g3, _h(b)), _cj(alpha)), _scale(matmul(_h(a), g3), _cj(alpha))


addmm_op = Op("addmm", _add_kernel(_matmul_kernel), vjp=_addmm_vjp)
addmm_op.saved_for = {1: (2,), 2: (1,)}  # as matmul's; ``input`` is never read
addmm_op.unsaved_layout = True
multilinear_jvp(addmm_op, (1, 2), (0,))
def _addr_kernel(xp, c, a, b, *, beta, alpha):
    # PyTorch's addr kernel is element-wise, ``beta * self + (alpha * vec1) * vec2``: alpha
    # scales the first vector before the product (``2 * max * 1e-38`` overflows) and, for
    # complex operands, every factor is a complex product, beta = 1 and alpha = 1 included
    # (``(1 + 0j) * (inf + 0j)`` is ``inf + nanj``); beta = 0 ignores ``self``. Its
    # float16/bfloat16 loops round each product and the sum to that dtype, as NumPy's do
    cplx = a.dtype.kind == "c"
    if alpha != 1 or cplx:
        a = a * xp.asarray(alpha).astype(a.dtype)
    p = xp.multiply.outer(a, b)
    if beta == 0:
        return p
    cc = c * xp.asarray(beta).astype(c.dtype) if beta != 1 or c.dtype.kind == "c" else c
    if cc.dtype == p.dtype and np.broadcast_shapes(cc.shape, p.shape) == p.shape:
        p += cc
        return p
    return (cc + p).astype(p.dtype)


addr_op = Op("addr", _addr_kernel, vjp=_addr_vjp)
multilinear_jvp(addr_op, (1, 2), (0,))
addbmm_op = Op("addbmm", _add_kernel(_bsum_mm), vjp=_addbmm_vjp)
multilinear_jvp(addbmm_op, (1, 2), (0,))


def _check_scalars(op_name, dtype, beta, alpha):
    """Validate beta/alpha; integer products take them truncated to ints and bool ones as
    bools, as PyTorch."""
    out = []
    for nm, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, Tensor) and v.numel() == 1:
            v = v.item()
        if not isinstance(v, (int, float, complex, np.number)):
            raise TypeError(
                f"{op_name}(): argument '{nm}' must be Number, not {type(v).__name__}")
        if dtype == _dt.bool_ and isinstance(v, (int, float, np.number)):
            v = int(bool(v))  # a bool product reads its scalars as bools: 0.5 is True
        elif dtype.category < 2 and isinstance(v, (float, np.floating)):
            v = int(v)
        out.append(v)
    return out


def _check_fused_dtypes(op_name, input, a, b):
    """PyTorch's refusal of ``input + a @ b`` whose three dtypes differ, in its words for
    each fused product (NOTE [ Product dtype messages ]), before any shape check."""
    di, da, db = input._data.dtype, a._data.dtype, b._data.dtype
    if di == da == db:
        return
    if op_name in ("addmm", "addbmm"):
        if di != db:
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{input.dtype.scalar_name} and {b.dtype.scalar_name}")
        raise RuntimeError(product_dtype_message(op_name, a, b))
    if op_name == "addmv":
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {input.dtype.scalar_name}, "
            f"{a.dtype.scalar_name}, and {b.dtype.scalar_name}")
    if op_name == "baddbmm":
        if di != da:
            raise RuntimeError(
                f"Input dtypes must be the same, got: input {_cpp_name(input.dtype)}, batch1: "
                f"{_cpp_name(a.dtype)}, batch2: {_cpp_name(b.dtype)}")
        raise RuntimeError(product_dtype_message(op_name, a, b))


def _addx(op_name, op, input, a, b, beta, alpha, out, shape, prod_check):
    check_tensor(op_name, input, "input", 1)
    check_tensor(op_name, a, "mat1", 2)
    check_tensor(op_name, b, "mat2", 3)
    _check_fused_dtypes(op_name, input, a, b)
    try:
        prod_check()
    except NotImplementedError:
        # torch compares ``input``'s dtype with the factors' before the kernel refuses bool
        if input._data.dtype != a._data.dtype:
            raise RuntimeError(
                f"{op_name}: self and mat2 must have the same dtype, but got "
                f"{input.dtype.scalar_name} and {a.dtype.scalar_name}") from None
        if isinstance(out, Tensor) and out.dtype != a.dtype:
            raise RuntimeError(f"Expected out tensor to have dtype {_cpp_name(a.dtype)}, but "
                               f"got {_cpp_name(out.dtype)} instead") from None
        raise
    if input._data.dtype != a._data.dtype:
        raise RuntimeError(
            f"{op_name}: self and mat2 must have the same dtype, but got "
            f"{input.dtype.scalar_name} and {a.dtype.scalar_name}")
    raw_beta = beta
    beta, alpha = _check_scalars(op_name, a.dtype, beta, alpha)
    try:
        bs = np.broadcast_shapes(tuple(input.shape), shape)
    except ValueError:
        bs = None
    if bs != tuple(shape):
        raise RuntimeError(
            f"{op_name}: the input of shape {list(input.shape)} cannot be broadcast to the "
            f"product's shape {list(shape)}")
    if raw_beta != 0 and _sums_nothing(op_name, a) and 0 not in shape:
        _check_beta_cast(input, raw_beta)
    params = {"beta": beta, "alpha": alpha}
    return _dispatch.apply(op, (input, a, b), params, out)


def _sums_nothing(op_name, a):
    """Whether the product of addmm/addbmm/baddbmm sums over no terms (``a`` its first
    factor): PyTorch then returns ``input * beta`` without running the product's kernel."""
    if op_name == "addmm":
        return a.dim() == 2 and a.shape[1] == 0
    if op_name == "baddbmm":
        return a.dim() == 3 and a.shape[2] == 0
    if op_name == "addbmm":
        return a.dim() == 3 and (a.shape[0] == 0 or a.shape[2] == 0)
    return False


def _check_beta_cast(input, beta):
    """``input * beta`` into ``input``'s dtype, as PyTorch scales ``input`` when the product
    is empty: a ``beta`` that promotes past that dtype (an int beside bool, a float beside
    integers, a complex beside reals) is refused."""
    if isinstance(beta, Tensor):
        beta = beta.item()
    common = _dt.result_type(input, beta)
    if not _dt.can_cast(common, input.dtype):
        raise RuntimeError(
            f"result type {common.scalar_name} can't be cast to the desired output type "
            f"{input.dtype.scalar_name}")


def _inplace_add(fn, name):
    from ._registry import inplace_from

    return inplace_from(fn, name)


def _mm_check(op_name, a, b):
    def check():
        if a.dim() != 2 or b.dim() != 2:
            raise RuntimeError(
                f"{op_name}: mat1 and mat2 must be matrices, got {a.dim()}-D and {b.dim()}-D")
        _check_matmul(op_name, a, b)
    return check


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``; with ``beta=0`` input is ignored."""
    if isinstance(mat1, Tensor) and isinstance(mat2, Tensor):
        shape = (mat1.shape[0] if mat1.dim() else 0, mat2.shape[-1] if mat2.dim() else 0)
    else:
        shape = ()
    return _addx("addmm", addmm_op, input, mat1, mat2, beta, alpha, out, shape,
                 _mm_check("addmm", mat1, mat2))


public(addmm, inplace=_inplace_add(addmm, "addmm"))


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    def check():
        if mat.dim() != 2 or vec.dim() != 1:
            raise RuntimeError(
                f"addmv: vector + matrix @ vector expected, got {input.dim()}, {mat.dim()}, "
                f"{vec.dim()}")
        if mat.shape[1] != vec.shape[0]:
            raise RuntimeError(
                f"size mismatch, got input ({input.shape[0] if input.dim() else 1}), "
                f"mat ({_sz(mat.shape)}), vec ({vec.shape[0]})")
        _check_matmul("addmv", mat, vec)

    shape = (mat.shape[0],) if isinstance(mat, Tensor) and mat.dim() == 2 else ()
    return _addx("addmv", addmm_op, input, mat, vec, beta, alpha, out, shape, check)


public(addmv, inplace=_inplace_add(addmv, "addmv"))


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)``; the three promote to one dtype, and bool
    computes ``(beta and input) or (alpha and outer)``, as in PyTorch."""
    def check():
        if vec1.dim() != 1 or vec2.dim() != 1:
            raise RuntimeError(
                f"addr: expected 1-D vectors, but got {vec1.dim()}-D and {vec2.dim()}-D")
        check_same_dtype("addr", vec1, vec2, "both")

    if all(isinstance(t, Tensor) for t in (input, vec1, vec2)) and not (
            input.dtype == vec1.dtype == vec2.dtype != _dt.bool_):
        # PyTorch's addr is element-wise over input and the outer product: the three
        # promote together, and bool computes (beta and input) or (alpha and outer)
        input, vec1, vec2 = _promote("addr", input, vec1, vec2)
        if input.dtype == _dt.bool_:
            return _bool_addr(input, vec1, vec2, beta, alpha, out)

    shape = (vec1.shape[0], vec2.shape[0]) if isinstance(vec1, Tensor) and isinstance(
        vec2, Tensor) and vec1.dim() == 1 and vec2.dim() == 1 else ()
    return _addx("addr", addr_op, input, vec1, vec2, beta, alpha, out, shape, check)


def _bool_addr(input, vec1, vec2, beta, alpha, out):
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, (float, complex)) and not isinstance(v, bool):
            raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                               "floating point number.")
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(
            f"addr: expected 1-D vectors, but got {vec1.dim()}-D and {vec2.dim()}-D")
    shape = (vec1.shape[0], vec2.shape[0])
    prod = vec1.unsqueeze(1) & vec2.unsqueeze(0)
    if not alpha:
        prod = prod & False
    r = (input.expand(shape) | prod) if beta else prod
    return r if out is None else _dispatch.write_out("addr", out, r)


public(addr, inplace=_inplace_add(addr, "addr"))


def _bmm_check(op_name, a, b):
    def check():
        if a.dim() != 3 or b.dim() != 3:
            raise RuntimeError(
                f"{op_name}: batch1 and batch2 must be 3D tensors, got {a.dim()}-D and "
                f"{b.dim()}-D")
        if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: "
                f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
        _check_matmul(op_name, a, b)
    return check


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    shape = (batch1.shape[1], batch2.shape[2]) if isinstance(batch1, Tensor) and isinstance(
        batch2, Tensor) and batch1.dim() == 3 and batch2.dim() == 3 else ()
    if shape and batch1.shape[0] == 0 and batch2.shape[0] == 0 and isinstance(input, Tensor):
        # no batches: torch returns ``beta * input`` without comparing the factors' dtypes
        batch1, batch2 = batch1.to(input.dtype), batch2.to(input.dtype)
    return _addx("addbmm", addbmm_op, input, batch1, batch2, beta, alpha, out, shape,
                 _bmm_check("addbmm", batch1, batch2))


public(addbmm, inplace=_inplace_add(addbmm, "addbmm"))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (batch1 @ batch2)`` batch by batch.

    Differences from PyTorch:
        Complex NaN, infinite and near-overflow inputs: which parts of the result are NaN and which
        infinite can differ from PyTorch's (ember multiplies complex numbers with NumPy's rules,
        PyTorch with BLAS's).
    """
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2]) if isinstance(
        batch1, Tensor) and isinstance(batch2, Tensor) and batch1.dim() == 3 and \
        batch2.dim() == 3 else ()
    if shape and isinstance(input, Tensor) and batch1.dtype != batch2.dtype and \
            input.dtype == batch1.dtype and not (math.prod(shape) and batch1.shape[2]):
        # an empty product skips torch's bmm dtype check (as ``bmm``): the result takes
        # batch2's dtype
        input, batch1 = input.to(batch2.dtype), batch1.to(batch2.dtype)
    return _addx("baddbmm", addmm_op, input, batch1, batch2, beta, alpha, out, shape,
                 _bmm_check("baddbmm", batch1, batch2))


public(baddbmm, inplace=_inplace_add(baddbmm, "baddbmm"))


# ------------------------------------------------------------------------------------------------
# trace


def _trace_kernel(xp, a):
    r = xp.trace(a)
    if a.dtype.kind in "biu":
        return xp.asarray(r, dtype=np.int64)
    return xp.asarray(r, dtype=a.dtype)


def _trace_vjp(g, a):
    from .creation import zeros

    n, m = a.shape
    e = zeros(n, m, dtype=g.dtype, device=g.device)
    k = builtins.min(n, m)
    e._data[np.arange(k), np.arange(k)] = 1
    return e * g


trace_op = Op("trace", _trace_kernel, vjp=_trace_vjp)
trace_op.shape_only = (0,)  # the formula reads only the shape
linear_jvp(trace_op, (0,))


@public
def trace(input):
    """Sum of the main diagonal of a 2-D tensor (integers sum in int64)."""
    check_tensor("trace", input)
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    check_not_bool("trace", input)
    return _dispatch.apply(trace_op, (input,), {})
