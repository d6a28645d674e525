"""Sparse tensors: the COO and compressed (CSR/CSC) layouts as a Tensor subclass.

NOTE [ Sparse tensors ]
A sparse tensor is a ``Tensor`` whose data lives in two or three small strided tensors --
COO: ``indices`` (sparse_dim x nnz, int64) and ``values`` (nnz x dense dims); CSR/CSC:
compressed and plain indices and 1-D values -- instead of one array. Three decisions:

- *Indices + values, not scipy matrices, as the stored form.* ``values`` is an ordinary ember
  tensor, so autograd to the values is plain autograd: every sparse op is written with
  differentiable dense ops on ``values`` (gathers, ``index_add``), and SciPy does only the
  products (``_products.py``), inside an autograd Function whose backward is again a sparse
  product. SciPy's matrices are 2-D and float-only; torch's COO tensors are n-D, hybrid
  (dense trailing dims) and of any dtype, and keep duplicates until ``coalesce()``.
- *The class takes part in ``__torch_function__``* (NOTE [ __torch_function__ ] in
  ember/_overrides.py): every public function and method called with a sparse argument
  lands in ``_SparseTensor.__torch_function__``, which runs the sparse rule for the op from
  ``HANDLERS`` or raises PyTorch's NotImplementedError for the SparseCPU backend. This
  module is imported only when the first sparse tensor is made, so programs without sparse
  tensors never switch the protocol on.
- ``_data`` holds a zero-strided array of the tensor's shape and dtype (no memory): shape,
  dtype, device, ``dim()``, ``numel()`` and the other metadata reads work unchanged, and
  writes fail (the array is read-only).

Autograd state (``requires_grad``, ``grad_fn``, ``grad``, ``is_leaf``) is the values'
state: a sparse leaf's gradient is accumulated on its values and read back as a sparse
tensor with the leaf's indices (PyTorch masks ``sparse.mm``'s gradient the same way).
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core import layout as _layout
from .._core._print import PRINT_OPTS, tensor_str
from .._core.tensor import Tensor, wrap
from .._overrides import DisableTorchFunctionSubclass

_COMPRESSED = ("sparse_csr", "sparse_csc")


def _ember():
    import ember

    return ember


class _SparseTensor(Tensor):
    """A sparse COO or compressed tensor (see NOTE [ Sparse tensors ])."""

    __slots__ = ("_lay", "_idx", "_plain", "_vals", "_coalesced")

    # -- autograd state is the values' ------------------------------------------------------

    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        self._vals.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._vals.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._vals.is_leaf

    @property
    def grad(self):
        g = getattr(self._vals, "_grad", None)
        if g is None:
            return None
        if self._lay != "sparse_coo" or self._coalesced:
            return _like(self, g)
        # each duplicate entry received the gradient of the element it adds to: the element's
        # gradient is that value once (PyTorch returns it coalesced)
        a = self._idx._data
        _, first = np.unique(_row_major_order(a, self._data.shape), return_index=True)
        pick = wrap(first.astype(np.int64))
        return coo(wrap(np.ascontiguousarray(a[:, first])), g[pick], self._data.shape, True)

    @grad.setter
    def grad(self, value):
        if value is None:
            self._vals.grad = None
            return
        if not isinstance(value, _SparseTensor):
            value = dense_to_sparse(value)
        self._vals.grad = _values_on(self, value)

    @grad.deleter
    def grad(self):
        self._vals.grad = None

    @property
    def is_sparse(self) -> bool:
        return self._lay == "sparse_coo"

    @property
    def is_sparse_csr(self) -> bool:
        return self._lay == "sparse_csr"

    @property
    def layout(self):
        return getattr(_layout, self._lay)

    @property
    def data(self):
        return self.detach()

    # -- accessors ----------------------------------------------------------------------------

    def sparse_dim(self) -> int:
        """The number of sparse dims (the rows of ``indices``; 2 for CSR/CSC)."""
        return self._idx.shape[0] if self._lay == "sparse_coo" else 2

    def dense_dim(self) -> int:
        """The number of dense dims (the trailing dims of ``values``)."""
        return self._data.ndim - self.sparse_dim()

    def _nnz(self) -> int:
        """The number of stored elements (duplicates counted)."""
        return self._vals.shape[0]

    def is_coalesced(self) -> bool:
        """True when the indices are unique and sorted (COO only)."""
        if self._lay != "sparse_coo":
            raise RuntimeError(f"is_coalesced expected sparse coordinate tensor layout but "
                               f"got {_layout_name(self._lay)}")
        return self._coalesced

    def coalesce(self):
        """The tensor with duplicate indices summed and indices sorted (self when already
        so); differentiable in the values."""
        _need(self, "sparse_coo", "coalesce", "sparse coordinate")
        return _coalesce(self)

    def indices(self):
        """The (sparse_dim, nnz) int64 indices of a coalesced COO tensor."""
        _need(self, "sparse_coo", "indices", "sparse coordinate")
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._idx

    def values(self):
        """The stored values (of a coalesced tensor, for COO); shares autograd history."""
        if self._lay == "sparse_coo" and not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call "
                               ".coalesce() first")
        return self._vals

    def _indices(self):
        """The indices, coalesced or not."""
        _need(self, "sparse_coo", "_indices", "sparse coordinate")
        return self._idx

    def _values(self):
        """The values, coalesced or not."""
        return self._vals

    def crow_indices(self):
        """The row pointers of a CSR tensor (length rows + 1)."""
        _need(self, "sparse_csr", "crow_indices", "sparse row compressed")
        return self._idx

    def col_indices(self):
        """The column index of each value of a CSR tensor."""
        _need(self, "sparse_csr", "col_indices", "sparse row compressed")
        return self._plain

    def ccol_indices(self):
        """The column pointers of a CSC tensor (length columns + 1)."""
        _need(self, "sparse_csc", "ccol_indices", "sparse column compressed")
        return self._idx

    def row_indices(self):
        """The row index of each value of a CSC tensor."""
        _need(self, "sparse_csc", "row_indices", "sparse column compressed")
        return self._plain

    def to_dense(self, dtype=None, *, masked_grad=None):
        """The strided tensor with the stored values (duplicates summed), zeros elsewhere;
        differentiable in the values."""
        out = _to_dense(_as_coo(self))
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None):
        """The tensor in another sparse ``layout`` (COO by default)."""
        if args:  # to_sparse(sparse_dim): only a COO tensor of that sparse_dim converts
            if _as_coo(self).sparse_dim() != args[0]:
                raise RuntimeError("to_sparse: conversion of a sparse tensor to another "
                                   "sparse_dim is not supported")
            return _as_coo(self)
        name = "sparse_coo" if layout is None else layout.name
        return _convert(self, name)

    def to_sparse_coo(self):
        """The tensor as COO (shares the values)."""
        return _as_coo(self)

    def to_sparse_csr(self, dense_dim=None):
        """The 2-D tensor as CSR (rows compressed)."""
        return _convert(self, "sparse_csr")

    def to_sparse_csc(self, dense_dim=None):
        """The 2-D tensor as CSC (columns compressed)."""
        return _convert(self, "sparse_csc")

    def detach(self):
        """A sparse tensor sharing indices and values, outside the autograd graph."""
        return _like(self, self._vals.detach())

    def detach_(self):
        """Detach in place."""
        self._vals = self._vals.detach()
        return self

    def stride(self, dim=None):
        raise RuntimeError("Sparse tensors do not have strides")

    def is_contiguous(self, memory_format=None) -> bool:
        raise RuntimeError("Sparse tensors do not have is_contiguous")

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def storage(self):
        raise NotImplementedError("Cannot access storage of SparseTensorImpl")

    untyped_storage = storage

    def numpy(self, *, force=False):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def tolist(self):
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            kind = "sparse." if self._lay == "sparse_coo" else f"{self._lay}."
            return "torch." + kind + _dt_tensor_name(self.dtype)
        return _handle_method("type", (self, dtype), {"non_blocking": non_blocking})

    def __repr__(self, *, tensor_contents=None):
        return _repr(self)

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        from ._ops import rebuild  # the rules module: unpickling loads them with the class

        return (rebuild, (self._lay, pickle_data(self)))

    def __deepcopy__(self, memo):
        return _like(self, self._vals.clone(), idx=self._idx.clone(),
                     plain=None if self._plain is None else self._plain.clone())

    # -- every other public function and method ----------------------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        handler = HANDLERS.get(name)
        if handler is None:
            if name in PASSTHROUGH:
                with DisableTorchFunctionSubclass():
                    return func(*args, **(kwargs or {}))
            raise NotImplementedError(_not_implemented(name, args))
        return handler(*args, **(kwargs or {}))


def _dt_tensor_name(d) -> str:
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
            "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
            "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
            "bool": "BoolTensor", "complex64": "ComplexFloatTensor",
            "complex128": "ComplexDoubleTensor"}.get(d.name, d.name)


def _layout_name(lay) -> str:
    return {"sparse_coo": "Sparse", "sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc",
            "strided": "Strided"}[lay]


def _need(t, lay, what, kind):
    if t._lay != lay:
        raise RuntimeError(f"{what} expected {kind} tensor layout but got "
                           f"{_layout_name(t._lay)}")


def _backend_name(args) -> str:
    for a in args:
        if isinstance(a, _SparseTensor):
            return {"sparse_coo": "SparseCPU", "sparse_csr": "SparseCsrCPU",
                    "sparse_csc": "SparseCsrCPU"}[a._lay]
    return "SparseCPU"


_ATEN_NAMES = {"_getitem": "index.Tensor", "_setitem": "index_put_", "__getitem__": "index",
               "__setitem__": "index_put_", "vector_norm": "linalg_vector_norm"}


def _not_implemented(name, args) -> str:
    op = _ATEN_NAMES.get(name) or (name.strip("_") if name.startswith("__") else name)
    return (f"Could not run 'aten::{op}' with arguments from the '{_backend_name(args)}' "
            f"backend. This could be because the operator doesn't exist for this backend: "
            f"ember's sparse tensors support the operations listed in "
            f"ember/sparse/_tensor.py (HANDLERS); use .to_dense() for the others.")


# ------------------------------------------------------------------------------------------------
# construction


def _meta_array(shape, dtype):
    """The zero-strided stand-in for ``_data`` (NOTE [ Sparse tensors ])."""
    return np.broadcast_to(np.zeros((), dtype=dtype.np), tuple(shape))


def make(lay, idx, plain, vals, shape, coalesced=False):
    """A sparse tensor from its parts, unchecked."""
    if lay != "sparse_coo":  # torch says this once, for the first compressed tensor made
        from .._settings import warn_at_caller

        warn_at_caller(f"Sparse {lay[len('sparse_'):].upper()} tensor support is in beta "
                       f"state. If you miss a functionality in the sparse tensor support, "
                       f"please submit a feature request to "
                       f"https://github.com/pytorch/pytorch/issues.", once=True,
                       key="sparse compressed beta")
    t = object.__new__(_SparseTensor)
    t._data = _meta_array(shape, _dt.from_np[vals._data.dtype])
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    t._lay = lay
    t._idx = idx
    t._plain = plain
    t._vals = vals
    t._coalesced = bool(coalesced)
    return t


def coo(idx, vals, shape, coalesced=False):
    return make("sparse_coo", idx, None, vals, shape, coalesced)


def _like(t, vals, idx=None, plain=None):
    return make(t._lay, t._idx if idx is None else idx, t._plain if plain is None else plain,
                vals, t._data.shape, t._coalesced)


def _long(x, what):
    e = _ember()
    if isinstance(x, _SparseTensor):
        raise TypeError(f"{what} must be a strided tensor")
    if not isinstance(x, Tensor):
        x = e.tensor(x, dtype=e.int64)
    elif x.dtype is not e.int64:
        if x.is_floating_point() or x.is_complex():
            raise RuntimeError(f"{what} must be an int64 tensor")
        x = x.to(e.int64)
    return x.detach()


def _vals_in(values, dtype, requires_grad):
    e = _ember()
    if not isinstance(values, Tensor):
        values = e.tensor(values, dtype=dtype)
    elif dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if requires_grad:
        if values.requires_grad and not values.is_leaf:
            raise RuntimeError("sparse_coo_tensor(): requires_grad=True needs values that "
                               "are a leaf or do not require grad")
        return values.detach().requires_grad_()
    if values.requires_grad and _dispatch.state.grad_enabled:
        return values.view(values.shape)  # an alias, so the sparse tensor is no leaf
    return values


def _invariants_on(check):
    if check is not None:
        return check
    from . import check_sparse_tensor_invariants

    return check_sparse_tensor_invariants.is_enabled()


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None):
    if values is None:  # sparse_coo_tensor(size): an empty tensor of that size
        shape = tuple(int(s) for s in (indices if size is None else size))
        e = _ember()
        empty = coo(e.zeros((len(shape), 0), dtype=e.int64),
                    e.zeros(0, dtype=dtype or e.get_default_dtype()), shape, True)
        return empty.requires_grad_() if requires_grad else empty
    idx = _long(indices, "indices")
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    vals = _vals_in(values, dtype, requires_grad)
    if vals.dim() == 0:
        raise RuntimeError("values must have at least one dimension (nnz)")
    sparse_dim, nnz = idx.shape
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {vals.shape[0]}")
    dense = tuple(vals.shape[1:])
    if size is None:
        top = idx._data.max(axis=1) + 1 if nnz else np.zeros(sparse_dim, dtype=np.int64)
        shape = tuple(int(s) for s in top) + dense
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != sparse_dim + len(dense):
            raise RuntimeError(
                f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                f"{len(shape)}, sparse_dim = {sparse_dim}, dense_dim = {len(dense)}")
        if shape[sparse_dim:] != dense:
            raise RuntimeError(
                f"values has incorrect size, expected {list((nnz,) + shape[sparse_dim:])}, "
                f"got {list(vals.shape)}")
    if _invariants_on(check_invariants) and nnz:
        a = idx._data
        if (a < 0).any():
            raise RuntimeError("`indices[..., i] >= 0` is not satisfied.")
        for d in range(sparse_dim):
            if a[d].max() >= shape[d]:
                raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                                   f"{shape[d]} but found index {int(a[d].max())}")
    return coo(idx, vals, shape, bool(is_coalesced) or nnz <= 1)


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None):
    if layout is None:
        raise TypeError("sparse_compressed_tensor(): argument 'layout' must be given")
    lay = layout.name
    if lay not in _COMPRESSED:
        raise NotImplementedError(f"sparse_compressed_tensor: layout {layout} is not supported "
                                  "by ember (CSR and CSC are)")
    cidx = _long(compressed_indices, "compressed_indices")
    pidx = _long(plain_indices, "plain_indices")
    vals = _vals_in(values, dtype, requires_grad)
    if cidx.dim() != 1 or pidx.dim() != 1 or vals.dim() != 1:
        raise NotImplementedError("ember's compressed sparse tensors are 2-D without batch or "
                                  "dense dimensions")
    if pidx.shape[0] != vals.shape[0]:
        raise RuntimeError(f"plain_indices and values must have the same number of elements, "
                           f"but got {pidx.shape[0]} and {vals.shape[0]}")
    n_comp = cidx.shape[0] - 1
    if size is None:
        n_plain = int(pidx._data.max()) + 1 if pidx.shape[0] else 0
        shape = (n_comp, n_plain) if lay == "sparse_csr" else (n_plain, n_comp)
    else:
        shape = tuple(int(s) for s in size)
        if len(shape) != 2:
            raise NotImplementedError("ember's compressed sparse tensors are 2-D")
        want = shape[0] if lay == "sparse_csr" else shape[1]
        if want != n_comp:
            raise RuntimeError(f"compressed_indices.shape[-1] must be equal to the number of "
                               f"compressed_indices_names + 1 ({want + 1}), but got "
                               f"{n_comp + 1}")
    if _invariants_on(check_invariants):
        c = cidx._data
        if c.shape[0] and (c[0] != 0 or c[-1] != pidx.shape[0] or (np.diff(c) < 0).any()):
            raise RuntimeError("`compressed_indices` must start at 0, be non-decreasing and "
                               "end at nnz")
    return make(lay, cidx, pidx, vals, shape)


# ------------------------------------------------------------------------------------------------
# conversions


def _row_major_order(idx_np, shape):
    if idx_np.shape[0] == 0:
        return np.zeros(idx_np.shape[1], dtype=np.int64)
    return np.ravel_multi_index(tuple(idx_np), tuple(shape[:idx_np.shape[0]]), mode="wrap")


def _coalesce(t):
    if t._coalesced:
        return t
    e = _ember()
    shape = t._data.shape
    a = t._idx._data
    keys = _row_major_order(a, shape)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    idx = wrap(np.ascontiguousarray(a[:, first]))
    vals = t._vals
    if len(uniq) == vals.shape[0]:
        order = wrap(np.argsort(keys, kind="stable"))
        return coo(idx, vals[order] if len(uniq) > 1 else vals, shape, True)
    summed = e.zeros((len(uniq),) + tuple(vals.shape[1:]), dtype=vals.dtype)
    summed = summed.index_add(0, wrap(inverse.reshape(-1).astype(np.int64)), vals)
    return coo(idx, summed, shape, True)


def _as_coo(t):
    """A COO view of any sparse tensor (compressed ones are expanded; values are shared)."""
    if t._lay == "sparse_coo":
        return t
    c, p = t._idx._data, t._plain._data
    major = np.repeat(np.arange(len(c) - 1, dtype=np.int64), np.diff(c))
    if t._lay == "sparse_csr":
        return coo(wrap(np.stack([major, p])), t._vals, t._data.shape, True)
    out = coo(wrap(np.stack([p, major])), t._vals, t._data.shape, False)
    return _coalesce(out)


def _to_dense(t):
    e = _ember()
    shape = tuple(t._data.shape)
    sd = t._idx.shape[0]
    flat = wrap(_row_major_order(t._idx._data, shape).astype(np.int64))
    n = int(np.prod(shape[:sd], dtype=np.int64))
    out = e.zeros((n,) + shape[sd:], dtype=t._vals.dtype)
    if t._vals.shape[0]:
        out = out.index_add(0, flat, t._vals)
    return out.reshape(shape)


def _compress(t, lay):
    """COO (2-D, no dense dims) -> CSR/CSC sharing the ordered values."""
    t = _coalesce(_as_coo(t))
    if t._data.ndim != 2 or t.dense_dim():
        raise NotImplementedError(f"to_{lay}: ember converts 2-D sparse tensors without dense "
                                  "dimensions only")
    a = t._idx._data
    major, minor = (a[0], a[1]) if lay == "sparse_csr" else (a[1], a[0])
    vals = t._vals
    if lay == "sparse_csc":
        order = np.lexsort((minor, major))
        major, minor = major[order], minor[order]
        vals = vals[wrap(order.astype(np.int64))]
    n_major = t._data.shape[0 if lay == "sparse_csr" else 1]
    c = np.zeros(n_major + 1, dtype=np.int64)
    np.cumsum(np.bincount(major, minlength=n_major), out=c[1:])
    return make(lay, wrap(c), wrap(np.ascontiguousarray(minor)), vals, t._data.shape)


def _convert(t, lay):
    if lay == t._lay:
        return t
    if lay == "sparse_coo":
        return _as_coo(t)
    if lay in _COMPRESSED:
        return _compress(t, lay)
    if lay == "strided":
        return t.to_dense()
    raise NotImplementedError(f"to_sparse: layout {lay} is not supported by ember")


def dense_to_sparse(x, lay="sparse_coo", sparse_dim=None):
    """A strided tensor as a sparse one, keeping its nonzero elements (or rows of them)."""
    e = _ember()
    shape = tuple(x.shape)
    sd = x.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 <= sd <= x.dim():
        raise RuntimeError(f"sparse_dim must be in [0, {x.dim()}], but got {sd}")
    a = x._data
    if type(a) is not np.ndarray:
        a = a.get()
    mask = a != 0
    if sd < x.dim():
        mask = mask.reshape(shape[:sd] + (-1,)).any(-1)
    nz = np.nonzero(mask) if sd else (np.zeros((0,), dtype=np.int64),)
    if sd == 0:
        idx = np.zeros((0, 1), dtype=np.int64)
        vals = x.unsqueeze(0)
    else:
        idx = np.stack(nz).astype(np.int64) if nz[0].size else np.zeros((sd, 0), np.int64)
        vals = x[tuple(wrap(np.ascontiguousarray(i.astype(np.int64))) for i in idx)] \
            if idx.shape[1] else e.zeros((0,) + shape[sd:], dtype=x.dtype)
    out = coo(wrap(idx), vals, shape, True)
    return out if lay == "sparse_coo" else _convert(out, lay)


def _values_on(t, g):
    """The values of sparse ``g`` at ``t``'s index pattern (a gradient for ``t``'s values)."""
    src = _as_coo(t)
    g = _coalesce(_as_coo(g))
    keys_t = _row_major_order(src._idx._data, src._data.shape)
    keys_g = _row_major_order(g._idx._data, g._data.shape)
    pos = np.searchsorted(keys_g, keys_t)
    pos = np.clip(pos, 0, max(len(keys_g) - 1, 0))
    found = (keys_g[pos] == keys_t) if len(keys_g) else np.zeros(len(keys_t), bool)
    e = _ember()
    out = e.zeros_like(t._vals)
    if found.any():
        sel = wrap(np.nonzero(found)[0].astype(np.int64))
        out[sel] = g._vals.detach()[wrap(pos[found].astype(np.int64))].to(out.dtype)
    return out


# ------------------------------------------------------------------------------------------------
# printing (PyTorch's layout: parts on their own lines, suffixes wrapped at linewidth)


def _part(prefix, t, indent):
    body = tensor_str(t.detach(), indent + len(prefix))
    if t.numel() == 0:
        body += f", size={tuple(t.shape)}"
    return prefix + body + ")"


def _repr(t):
    e = _ember()
    indent = len("tensor(")
    suffixes = [f"size={tuple(t._data.shape)}", f"nnz={t._nnz()}"]
    dtype = t.dtype
    if dtype not in (e.get_default_dtype(), _dt.default_complex(), e.int64, e.bool):
        suffixes.append(f"dtype={dtype}")
    suffixes.append(f"layout={t.layout}")
    node = t.grad_fn
    if node is not None:
        name = node.name() if hasattr(node, "name") else type(node).__name__
        suffixes.append(f"grad_fn=<{name.rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    pad = ",\n" + " " * indent
    if t._lay == "sparse_coo":
        text = _part("indices=tensor(", t._idx, indent) + pad + \
            _part("values=tensor(", t._vals, indent)
    else:
        c, p = ("crow", "col") if t._lay == "sparse_csr" else ("ccol", "row")
        text = _part(f"{c}_indices=tensor(", t._idx, indent) + pad + \
            _part(f"{p}_indices=tensor(", t._plain, indent) + pad + \
            _part("values=tensor(", t._vals, indent)
    text = "tensor(" + text
    parts = [text]
    last = len(text) - text.rfind("\n") + 1  # PyTorch's count, two columns long
    force = t._lay == "sparse_coo"
    for s in suffixes:
        if force or last + len(s) + 2 > PRINT_OPTS.linewidth:
            parts.append(pad + s)
            last = indent + len(s)
            force = False
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def pickle_data(t):
    """What ``torch._utils._rebuild_sparse_tensor`` takes after the layout."""
    if t._lay == "sparse_coo":
        return (t._idx, t._vals.detach(), t.shape, t._coalesced)
    return (t._idx, t._plain, t._vals.detach(), t.shape)


def _handle_method(name, args, kwargs):
    return HANDLERS[name](*args, **kwargs)


def _register_gradient_type():
    # the engine tells sparse gradients apart by this class (NOTE [ Sparse gradient sums ]
    # in _grad.py)
    from ..autograd import _engine

    _engine.sparse_type = _SparseTensor


_register_gradient_type()

# the ops: ember/sparse/_ops.py fills these tables
HANDLERS: dict = {}
PASSTHROUGH: set = set()
