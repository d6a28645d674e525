"""The operations sparse tensors support, as rules on their indices and values.

Each rule takes the public function's arguments (a sparse tensor among them) and returns
what PyTorch returns: a sparse tensor where PyTorch's is sparse, a strided one where it is
strided. They are registered in ``HANDLERS`` under the public function's name, which is
what ``_SparseTensor.__torch_function__`` receives (NOTE [ Sparse tensors ] in _tensor.py).
Compressed (CSR/CSC) inputs are read as COO; results keep the input's layout where PyTorch's
do (scaling, unary maps, dtype conversions). The file is one table of rules, longer than
most (about 800 lines): each rule is short and they share the helpers at the top.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._core import dtype as _dt
from .._core import layout as _layout
from .._core.tensor import Tensor, wrap
from . import _grad
from . import _tensor as _st
from ._products import spmm
from ._tensor import HANDLERS, PASSTHROUGH, _SparseTensor, coo

PASSTHROUGH.update({
    "size", "numel", "nelement", "dim", "ndimension", "element_size", "is_floating_point",
    "is_complex", "is_signed", "get_device", "__len__", "__hash__", "__format__",
    "is_same_size", "is_inference", "is_shared", "is_pinned", "__bool__",
})


def rebuild(lay, data):
    """A sparse tensor from ``pickle_data``'s tuple (``lay`` a layout or its name)."""
    lay = getattr(lay, "name", lay)
    if lay == "sparse_coo":
        indices, values, size = data[:3]
        coalesced = data[3] if len(data) > 3 else None
        return _st.sparse_coo_tensor(indices, values, size, is_coalesced=coalesced,
                                 check_invariants=False)
    compressed, plain, values, size = data
    return _st.sparse_compressed_tensor(compressed, plain, values, size,
                                    layout=getattr(_layout, lay), check_invariants=False)


def _ember():
    import ember

    return ember


def _is_sp(x) -> bool:
    return isinstance(x, _SparseTensor)


def _register(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn

    return deco


def _keep_layout(src, out):
    """``out`` (COO) in ``src``'s layout."""
    if src._lay == out._lay or not _is_sp(out):
        return out
    return _st._convert(out, src._lay)


def _map_values(t, fn, coalesce=True):
    """A sparse tensor with ``fn`` applied to the values (``coalesce`` first for maps that do
    not distribute over addition of duplicates)."""
    if t._lay == "sparse_coo" and coalesce:
        t = _st._coalesce(t)
    return _st._like(t, fn(t._vals))


# ------------------------------------------------------------------------------------------------
# elementwise maps that keep zeros zero (PyTorch's set for sparse tensors)

_ZERO_PRESERVING = [
    "abs", "neg", "negative", "sqrt", "sin", "tan", "tanh", "relu", "log1p", "expm1", "sign",
    "floor", "ceil", "round", "trunc", "square", "asin", "atan", "sinh", "asinh", "atanh",
    "erf", "erfinv", "deg2rad", "rad2deg", "isnan", "isinf", "isposinf", "isneginf", "signbit",
    "frac", "nan_to_num", "sgn", "conj_physical", "arcsin", "arctan", "arcsinh", "arctanh",
    "fix",
]
_LINEAR = {"neg", "negative", "conj", "conj_physical", "positive"}


def _unary(name):
    def rule(input, *args, **kwargs):
        fn = getattr(_ember(), name)
        return _map_values(input, lambda v: fn(v, *args, **kwargs), name not in _LINEAR)

    def rule_(input, *args, **kwargs):
        if input._lay == "sparse_coo" and name not in _LINEAR:
            c = _st._coalesce(input)
            input._idx, input._vals, input._coalesced = c._idx, c._vals, True
        getattr(input._vals, name + "_")(*args, **kwargs)
        return input

    HANDLERS[name] = rule
    HANDLERS["__" + name + "__"] = rule
    HANDLERS[name + "_"] = rule_


for _n in _ZERO_PRESERVING + ["conj", "positive"]:
    _unary(_n)
HANDLERS["__abs__"] = HANDLERS["abs"]
HANDLERS["__neg__"] = HANDLERS["neg"]
HANDLERS["__pos__"] = HANDLERS["positive"]


@_register("zero_")
def _zero_(input):
    e = _ember()
    input._idx = e.zeros((input._idx.shape[0], 0), dtype=e.int64) \
        if input._lay == "sparse_coo" else input._idx.zero_()
    if input._plain is not None:
        input._plain = e.zeros(0, dtype=e.int64)
    input._vals = e.zeros((0,) + tuple(input._vals.shape[1:]), dtype=input._vals.dtype)
    input._coalesced = True
    return input


@_register("clone")
def _clone(input, *, memory_format=None):
    return _st._like(input, input._vals.clone(), idx=input._idx.clone(),
                     plain=None if input._plain is None else input._plain.clone())


@_register("zeros_like")
def _zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
                memory_format=None, pin_memory=False):
    e = _ember()
    shape = tuple(input.shape)
    out = _st.sparse_coo_tensor(e.zeros((input.sparse_dim(), 0), dtype=e.int64),
                                e.zeros((0,) + shape[input.sparse_dim():],
                                        dtype=dtype or input.dtype), shape)
    out._coalesced = True
    return out.requires_grad_() if requires_grad else out


# ------------------------------------------------------------------------------------------------
# dtype and device


def _dtype_in(args, kwargs):
    for a in list(args) + [kwargs.get("dtype"), kwargs.get("other")]:
        if isinstance(a, _dt.dtype):
            return a
        if isinstance(a, Tensor):
            return a.dtype
    return None


def _check_device(args, kwargs):
    from .._core.device import device as _device

    for a in list(args) + [kwargs.get("device")]:
        if isinstance(a, (str, _device)) and not isinstance(a, _dt.dtype):
            if _device(a).type != "cpu":
                raise RuntimeError(f"ember's sparse tensors live on the CPU; to({a}) is not "
                                   "supported")


@_register("to")
def _to(input, *args, **kwargs):
    _check_device(args, kwargs)
    dtype = _dtype_in(args, kwargs)
    if dtype is None or dtype is input.dtype:
        return input.clone() if kwargs.get("copy") else input
    return _st._like(input, input._vals.to(dtype))


def _cast(dtype_name):
    def rule(input, memory_format=None):
        dtype = getattr(_ember(), dtype_name)
        return input if input.dtype is dtype else _st._like(input, input._vals.to(dtype))

    return rule


for _m, _d in [("float", "float32"), ("double", "float64"), ("half", "float16"),
               ("bfloat16", "bfloat16"), ("int", "int32"), ("long", "int64"),
               ("short", "int16"), ("char", "int8"), ("byte", "uint8"), ("bool", "bool"),
               ("cfloat", "complex64"), ("cdouble", "complex128")]:
    HANDLERS[_m] = _cast(_d)


@_register("type")
def _type(input, dtype=None, non_blocking=False, **kwargs):
    if dtype is None:
        return input.type()
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        table = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                 "LongTensor": "int64", "IntTensor": "int32", "BoolTensor": "bool"}
        dtype = getattr(_ember(), table.get(name, "float32"))
    return _to(input, dtype)


@_register("cpu")
def _cpu(input, memory_format=None):
    return input


@_register("requires_grad_")
def _requires_grad_(input, requires_grad=True):
    return input.requires_grad_(requires_grad)


@_register("to_dense")
def _to_dense_fn(input, dtype=None, *, masked_grad=None):
    return input.to_dense(dtype)


# ------------------------------------------------------------------------------------------------
# arithmetic


def _is_scalar(x) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, Tensor) and not _is_sp(x)
                                             and x.dim() == 0)


def _union(a, b, alpha=1):
    """``a + alpha * b`` for two sparse tensors of one shape, as a COO tensor formed as
    PyTorch forms it (NOTE [ Sparse gradient sums ] in _grad.py)."""
    a, b = _st._as_coo(a), _st._as_coo(b)
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(a.shape)} while other has size {list(b.shape)} "
                           "(FYI: op2-sparse addition does not currently support broadcasting)")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("add: expected 'self' and 'other' to have same sparse dimensions")
    return _grad.add(a, b, alpha)


def _sparse_plus_dense_error():
    return RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")


@_register("add", "__add__")
def _add(input, other, *, alpha=1, out=None):
    if _is_sp(input) and _is_sp(other):
        return _keep_layout(input, _union(input, other, alpha))
    if _is_sp(input):
        raise _sparse_plus_dense_error()
    dense = other.to_dense()
    return input + (dense if alpha == 1 else dense * alpha)


@_register("__radd__")
def _radd(input, other):
    if isinstance(other, Tensor):
        return _add(other, input)
    raise _sparse_plus_dense_error()


@_register("add_", "__iadd__")
def _add_(input, other, *, alpha=1):
    if _is_sp(input):
        if not _is_sp(other):
            raise _sparse_plus_dense_error()
        r = _union(input, other, alpha)
        input._idx, input._vals, input._coalesced = r._idx, r._vals, r._coalesced
        return input
    e = _ember()
    if (not (e.is_grad_enabled() and (input.requires_grad or other.requires_grad))
            and type(input._data) is np.ndarray and other._lay == "sparse_coo"
            and e.can_cast(other.dtype, input.dtype)):
        # entry by entry, each scaled by alpha, as PyTorch adds a COO tensor into a strided
        # one (optimizer steps with sparse gradients round as PyTorch's do)
        vals = other._vals.detach()
        if alpha != 1:
            vals = vals * alpha
        _grad.add_into_dense(input, coo(other._idx, vals, tuple(other.shape)))
        return input
    dense = other.to_dense()
    return input.add_(dense if alpha == 1 else dense * alpha)


@_register("sub", "__sub__")
def _sub(input, other, *, alpha=1, out=None):
    return _add(input, other, alpha=-alpha)


@_register("__rsub__")
def _rsub(input, other):
    if isinstance(other, Tensor):
        return other - input.to_dense()
    raise _sparse_plus_dense_error()


@_register("sub_", "__isub__")
def _sub_(input, other, *, alpha=1):
    return _add_(input, other, alpha=-alpha)


def _gather_dense(t, dense):
    """The elements of ``dense`` (broadcast to ``t``'s shape) at ``t``'s sparse indices."""
    dense = dense.expand(tuple(t.shape))
    index = tuple(wrap(np.ascontiguousarray(r)) for r in t._idx._data)
    return dense[index]


def _intersect(a, b):
    """``a * b`` for two sparse tensors: the products where both have an element."""
    e = _ember()
    a, b = _st._coalesce(_st._as_coo(a)), _st._coalesce(_st._as_coo(b))
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"mul: expected 'self' and 'other' to have same sizes, but "
                           f"{list(a.shape)} != {list(b.shape)}")
    ka = _st._row_major_order(a._idx._data, a.shape)
    kb = _st._row_major_order(b._idx._data, b.shape)
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    ia, ib = wrap(ia.astype(np.int64)), wrap(ib.astype(np.int64))
    idx = wrap(np.ascontiguousarray(a._idx._data[:, ia._data]))
    return coo(idx, e.mul(a._vals[ia], b._vals[ib]), tuple(a.shape), True)


@_register("mul", "__mul__", "multiply")
def _mul(input, other, *, out=None):
    if _is_sp(input) and _is_sp(other):
        return _keep_layout(input, _intersect(input, other))
    sp, other = (input, other) if _is_sp(input) else (other, input)
    if _is_scalar(other):
        return _map_values(sp, lambda v: v * other, coalesce=False)
    t = _st._coalesce(_st._as_coo(sp))
    return _keep_layout(sp, coo(t._idx, t._vals * _gather_dense(t, other), tuple(t.shape),
                                True))


@_register("__rmul__")
def _rmul(input, other):
    return _mul(input, other)


@_register("mul_", "__imul__")
def _mul_(input, other):
    if not _is_sp(input):
        raise NotImplementedError(_st._not_implemented("mul_", (other,)))
    if not _is_scalar(other):
        r = _mul(input, other)
        input._idx, input._vals, input._coalesced = r._idx, r._vals, r._coalesced
        return input
    input._vals.mul_(other)
    return input


@_register("div", "__truediv__", "true_divide", "divide")
def _div(input, other, *, rounding_mode=None, out=None):
    if not _is_sp(input) or not _is_scalar(other):
        raise NotImplementedError(_st._not_implemented("div", (input, other)))
    return _map_values(input, lambda v: v.div(other, rounding_mode=rounding_mode),
                       coalesce=rounding_mode is not None)


@_register("div_", "__itruediv__")
def _div_(input, other, *, rounding_mode=None):
    if not _is_scalar(other):
        raise NotImplementedError(_st._not_implemented("div_", (input, other)))
    input._vals.div_(other, rounding_mode=rounding_mode)
    return input


@_register("pow", "__pow__")
def _pow(input, exponent):
    if not _is_sp(input) or not _is_scalar(exponent):
        raise NotImplementedError(_st._not_implemented("pow", (input, exponent)))
    if exponent == 0:
        raise RuntimeError("pow: sparse tensors can not be raised to the power 0 (the result "
                           "would be dense); use .to_dense() first")
    return _map_values(input, lambda v: v.pow(exponent))


# ------------------------------------------------------------------------------------------------
# shape


@_register("t")
def _t(input):
    if input.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.dim()}D")
    return _transpose(input, 0, input.dim() - 1) if input.dim() == 2 else input


@_register("transpose", "swapaxes", "swapdims")
def _transpose(input, dim0, dim1):
    t = _st._as_coo(input)
    n = t.dim()
    d0, d1 = dim0 % n, dim1 % n
    sd = t.sparse_dim()
    if (d0 < sd) != (d1 < sd):
        raise RuntimeError("transpose(): can't transpose a sparse dimension with a dense one")
    shape = list(t.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    if d0 < sd:
        perm = list(range(sd))
        perm[d0], perm[d1] = perm[d1], perm[d0]
        out = coo(t._idx[perm], t._vals, tuple(shape), d0 == d1 and t._coalesced)
    else:
        out = coo(t._idx, t._vals.transpose(d0 - sd + 1, d1 - sd + 1), tuple(shape),
                  t._coalesced)
    if input._lay in _st._COMPRESSED:  # a compressed matrix transposes to the other layout
        return _st._convert(out, "sparse_csc" if input._lay == "sparse_csr" else "sparse_csr")
    return out


@_register("unsqueeze")
def _unsqueeze(input, dim):
    e = _ember()
    t = _st._as_coo(input)
    n = t.dim() + 1
    d = dim % n
    sd = t.sparse_dim()
    shape = list(t.shape)
    shape.insert(d, 1)
    if d <= sd:
        zeros = e.zeros((1, t._idx.shape[1]), dtype=e.int64)
        idx = e.cat([t._idx[:d], zeros, t._idx[d:]], 0)
        return coo(idx, t._vals, tuple(shape), t._coalesced)
    return coo(t._idx, t._vals.unsqueeze(d - sd + 1), tuple(shape), t._coalesced)


# ------------------------------------------------------------------------------------------------
# reductions


def _dims_of(dim, n):
    if dim is None:
        return list(range(n))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({d % n for d in dims})


def sparse_sum(input, dim=None, keepdim=False, dtype=None):
    """Sum over ``dim`` (all when None): strided when every sparse dim is summed, else
    sparse, as PyTorch's ``torch.sparse.sum``."""
    t = _st._as_coo(input)
    vals = t._vals if dtype is None else t._vals.to(dtype)
    if dim is None:
        if keepdim:
            raise RuntimeError("sum: keepdim=True is not supported for sparse tensors")
        return vals.sum()
    n, sd = t.dim(), t.sparse_dim()
    dims = _dims_of(dim, n)
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims)
    kept = [d for d in range(sd) if d not in dims]
    rest = [t.shape[d] for d in range(sd, n) if d not in dims]
    if not kept:
        return vals.sum(0)
    shape = tuple(t.shape[d] for d in kept) + tuple(rest)
    out = coo(t._idx[kept], vals, shape, False)
    return _st._coalesce(out)


@_register("sum")
def _sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    if isinstance(dim, _dt.dtype):
        dim, dtype = None, dim
    return sparse_sum(input, dim, keepdim, dtype)


def _softmax(input, dim, dtype, log):
    e = _ember()
    t = _st._coalesce(_st._as_coo(input))
    vals = t._vals if dtype is None else t._vals.to(dtype)
    n, sd = t.dim(), t.sparse_dim()
    d = dim % n
    if d >= sd:  # along a dense dim: an ordinary softmax of the values
        fn = e.log_softmax if log else e.softmax
        return _keep_layout(input, coo(t._idx, fn(vals, d - sd + 1), tuple(t.shape), True))
    if t._nnz() == 0:
        return _keep_layout(input, coo(t._idx, vals, tuple(t.shape), True))
    others = [k for k in range(sd) if k != d]
    a = t._idx._data[others]
    sizes = tuple(t.shape[k] for k in others)
    key = np.ravel_multi_index(tuple(a), sizes) if others else np.zeros(a.shape[1], np.int64)
    _, group = np.unique(key, return_inverse=True)
    group = wrap(group.reshape(-1).astype(np.int64))
    n_groups = int(group._data.max()) + 1
    tail = tuple(vals.shape[1:])
    expand = (slice(None),) + (None,) * len(tail)
    g_full = group[expand].expand(tuple(vals.shape)) if tail else group
    base = e.full((n_groups,) + tail, float("-inf"), dtype=vals.dtype)
    peak = base.scatter_reduce(0, g_full, vals.detach(), "amax", include_self=True)
    shifted = vals - peak[group]
    ex = shifted.exp()
    total = e.zeros((n_groups,) + tail, dtype=vals.dtype).index_add(0, group, ex)
    out = shifted - total.log()[group] if log else ex / total[group]
    return _keep_layout(input, coo(t._idx, out, tuple(t.shape), True))


def softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    return _softmax(input, dim, dtype, log=True)


# ------------------------------------------------------------------------------------------------
# products


def _matrix(t, op):
    t = _st._as_coo(t)
    if t.sparse_dim() != 2 or t.dense_dim() != 0:
        raise NotImplementedError(f"{op}: ember multiplies 2-D sparse matrices without dense "
                                  f"dimensions; got sparse_dim={t.sparse_dim()}, "
                                  f"dense_dim={t.dense_dim()}")
    return t


def _check_pair(op, s_dtype, d, k):
    if d.dtype is not s_dtype:
        raise RuntimeError(f"expected scalar type {s_dtype.scalar_name} but found "
                           f"{d.dtype.scalar_name}")
    if d.shape[0] != k:
        raise RuntimeError(f"{op}: Argument #3 (dense): Expected dim 0 size {k}, got "
                           f"{d.shape[0]}")


def sparse_dense(s, d, op="addmm"):
    """``s @ d`` for sparse ``s`` (2-D) and strided ``d`` (1-D or 2-D), differentiable in
    both the values and ``d``."""
    t = _matrix(s, op)
    _check_pair(op, t.dtype, d, t.shape[1])
    a = t._idx._data
    return spmm(t._vals, a[0], a[1], tuple(t.shape), d)


def dense_sparse(d, s):
    """``d @ s`` for strided ``d`` (2-D) and sparse ``s``: ``(s^T @ d^T)^T``."""
    t = _matrix(s, "mm")
    if d.dtype is not t.dtype:
        raise RuntimeError(f"expected scalar type {d.dtype.scalar_name} but found "
                           f"{t.dtype.scalar_name}")
    if d.shape[-1] != t.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, d.shape))} and "
                           f"{'x'.join(map(str, t.shape))})")
    a = t._idx._data
    dt = d.t() if d.dim() == 2 else d
    out = spmm(t._vals, a[1], a[0], (t.shape[1], t.shape[0]), dt)
    return out.t() if d.dim() == 2 else out


def sparse_sparse(a, b):
    """``a @ b`` for two sparse matrices: a sparse COO result (no gradient)."""
    e = _ember()
    a, b = _matrix(a, "mm"), _matrix(b, "mm")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mm: Argument #2: Expected dim 0 size {a.shape[1]}, got "
                           f"{b.shape[0]}")
    if a.requires_grad or b.requires_grad:
        raise NotImplementedError("mm: ember's sparse @ sparse product has no gradient yet")
    from .._lazy_import import import_module

    sp = import_module("scipy.sparse")

    def m(t):
        i = t._idx._data
        return sp.coo_array((t._vals._data, (i[0], i[1])), shape=tuple(t.shape)).tocsr()

    r = (m(a) @ m(b)).tocoo()
    r.sum_duplicates()
    idx = np.stack([r.row, r.col]).astype(np.int64)
    vals = e.from_numpy(np.ascontiguousarray(r.data.astype(a._vals._data.dtype)))
    return coo(wrap(idx), vals, (a.shape[0], b.shape[1]), True)


def mm(mat1, mat2):
    if _is_sp(mat1) and _is_sp(mat2):
        return sparse_sparse(mat1, mat2)
    if _is_sp(mat1):
        if mat2.dim() != 2:
            raise RuntimeError(f"mm: Argument #3 (dense) must be a matrix, got a "
                               f"{mat2.dim()}-D tensor")
        return sparse_dense(mat1, mat2)
    return dense_sparse(mat1, mat2)


HANDLERS["mm"] = mm
HANDLERS["spmm"] = mm
HANDLERS["dsmm"] = mm


@_register("matmul", "__matmul__")
def _matmul(input, other, *, out=None):
    if _is_sp(input) and not _is_sp(other) and other.dim() > 2:
        raise RuntimeError("expand is unsupported for Sparse tensors")
    if _is_sp(input) and input.dim() == 1:
        raise NotImplementedError(_st._not_implemented("dot", (input,)))
    if _is_sp(input) and not _is_sp(other) and other.dim() == 1:
        return sparse_dense(input, other, "mv")
    return mm(input, other)


@_register("__rmatmul__")
def _rmatmul(input, other):
    return _matmul(other, input)


@_register("mv")
def _mv(input, vec):
    return sparse_dense(input, vec, "mv")


@_register("addmm")
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if _is_sp(input):
        input = input.to_dense()
    prod = mm(mat1, mat2)
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


@_register("smm")
def smm(input, mat):
    out = mm(input, mat)
    return _st.dense_to_sparse(out)


@_register("hspmm")
def hspmm(mat1, mat2):
    return _st.dense_to_sparse(mm(mat1, mat2), sparse_dim=1)


@_register("hsmm")
def hsmm(mat1, mat2):
    return mm(mat1, mat2)


@_register("saddmm", "sspaddmm")
def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    prod = _st.dense_to_sparse(mm(mat1, mat2))
    a = _st._as_coo(input)
    e = _ember()
    idx = e.cat([a._idx, prod._idx], 1)
    vals = e.cat([a._vals * beta, prod._vals * alpha], 0)
    return coo(idx, vals, tuple(a.shape), False)


@_register("bmm")
def _bmm(input, mat2):
    raise NotImplementedError("bmm: ember's sparse tensors multiply 2-D matrices; loop over "
                              "the batch or use .to_dense()")


@_register("to_sparse")
def _to_sparse(input, *args, **kwargs):
    return input.to_sparse(*args, **kwargs)


for _name in ["coalesce", "is_coalesced", "indices", "values", "_indices", "_values",
              "crow_indices", "col_indices", "ccol_indices", "row_indices", "to_sparse_coo",
              "to_sparse_csr", "to_sparse_csc", "sparse_dim", "dense_dim", "_nnz", "detach",
              "detach_"]:
    HANDLERS[_name] = (lambda n: lambda input, *a, **k: getattr(input, n)(*a, **k))(_name)


@_register("relu")  # F.relu(x, inplace=False)
def _relu(input, inplace=False):
    if inplace:
        return HANDLERS["relu_"](input)
    return _map_values(input, lambda v: v.relu())


@_register("copy_")
def _copy_(input, src, non_blocking=False):
    if not (_is_sp(input) and _is_sp(src)):
        raise NotImplementedError(_st._not_implemented("copy_", (input, src)))
    input._lay, input._idx, input._plain = src._lay, src._idx, src._plain
    input._vals = src._vals.to(input.dtype)
    input._coalesced = src._coalesced
    input._data = _st._meta_array(src.shape, input.dtype)
    return input


@_register("sparse_mask")
def _sparse_mask(input, mask):
    if _is_sp(input) or not _is_sp(mask):
        raise NotImplementedError(_st._not_implemented("sparse_mask", (input,)))
    m = _st._coalesce(_st._as_coo(mask))
    if tuple(input.shape) != tuple(m.shape):
        raise RuntimeError(f"sparse_mask(): operands have incompatible sizes; self has size "
                           f"{list(input.shape)} but mask has size {list(m.shape)}")
    return _keep_layout(mask, coo(m._idx, _gather_dense(m, input), tuple(m.shape), True))


def _values_norm(input, p):
    e = _ember()
    vals = _st._coalesce(_st._as_coo(input))._vals
    return e.linalg.vector_norm(vals, 2 if p in ("fro", None) else p)


@_register("native_norm")
def _native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    if dim is not None:
        raise NotImplementedError("native_norm: ember computes the full norm only (dim=None)")
    out = _values_norm(input, p)
    return out if dtype is None else out.to(dtype)


@_register("norm")
def _norm(input, p="fro", dim=None, keepdim=False, dtype=None, out=None):
    if dim is not None:
        raise NotImplementedError(_st._not_implemented("norm", (input,)) + " (norm over dims "
                                  "of a sparse tensor: use .to_dense())")
    return _native_norm(input, p, None, False, dtype)


@_register("linear")
def _linear(input, weight, bias=None):
    if not _is_sp(input) or _is_sp(weight):
        raise NotImplementedError(_st._not_implemented("linear", (input, weight)))
    out = sparse_dense(input, weight.t(), "addmm")
    return out if bias is None else out + bias


@_register("cat", "concat", "concatenate")
def _cat(tensors, dim=0, *, out=None):
    e = _ember()
    parts = [_st._as_coo(t) if _is_sp(t) else None for t in tensors]
    if any(p is None for p in parts):
        raise RuntimeError("Cannot concat a sparse tensor with a strided one: convert them "
                           "with .to_sparse() or .to_dense() first")
    first = parts[0]
    n, sd = first.dim(), first.sparse_dim()
    d = dim % n
    for p in parts[1:]:
        if p.dim() != n or p.sparse_dim() != sd or any(
                p.shape[k] != first.shape[k] for k in range(n) if k != d):
            raise RuntimeError("cat: sparse tensors must have the same sizes (but for the cat "
                               "dim) and the same sparse_dim")
    if d >= sd:  # along a dense dim: every tensor needs the same pattern
        raise NotImplementedError("cat: ember concatenates sparse tensors along sparse dims "
                                  "only")
    idx, vals, offset = [], [], 0
    for p in parts:
        shift = np.zeros((sd, 1), dtype=np.int64)
        shift[d] = offset
        idx.append(wrap(p._idx._data + shift))
        vals.append(p._vals)
        offset += p.shape[d]
    shape = list(first.shape)
    shape[d] = offset
    dtype = first.dtype
    for p in parts[1:]:
        dtype = e.promote_types(dtype, p.dtype)
    return coo(e.cat(idx, 1), e.cat([v.to(dtype) for v in vals], 0), tuple(shape))


@_register("stack")
def _stack(tensors, dim=0, *, out=None):
    return _cat([_unsqueeze(t, dim) for t in tensors], dim)
