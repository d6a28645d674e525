"""Sparse constructors and the strided -> sparse conversions (``ember.sparse_coo_tensor``,
``Tensor.to_sparse``...). The sparse tensor itself lives in ember/sparse (NOTE [ Sparse
tensors ] in ember/sparse/_tensor.py), imported on first use so that programs without
sparse tensors never load it.
"""

from __future__ import annotations

from .._core.tensor import Tensor
from ._registry import public


def _impl():
    from ..sparse import _ops  # noqa: F401  (fills the handler tables)
    from ..sparse import _tensor

    return _tensor


def _warn_unchecked(check_invariants):
    """PyTorch's once-per-process warning for a sparse tensor built from user indices with
    the invariant checks neither asked for nor refused (``check_invariants=None`` while
    ``check_sparse_tensor_invariants`` is off)."""
    if check_invariants is not None:
        return
    from ..sparse import check_sparse_tensor_invariants

    if not check_sparse_tensor_invariants.is_enabled():
        from .._settings import warn_at_caller

        warn_at_caller("Sparse invariant checks are implicitly disabled. Memory errors (e.g. "
                       "SEGFAULT) will occur when operating on a sparse tensor which violates "
                       "the invariants, but checks incur performance overhead. To silence this "
                       "warning, explicitly opt in or out. See "
                       "`torch.sparse.check_sparse_tensor_invariants.__doc__` for guidance.",
                       once=True)


@public(method=False)
def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None) -> Tensor:
    """A sparse COO tensor with ``values`` at ``indices``.

    Args:
        indices (Tensor or sequence): (sparse_dim, nnz) integer coordinates; or, given
            alone (or with ``size=``), the size of an empty sparse tensor.
        values (Tensor or sequence): ``(nnz, *dense_dims)`` values.
        size (sequence of ints, optional): the shape; inferred from the largest index when
            omitted.
        dtype (ember.dtype, optional): the values' dtype.
        device: only the CPU is supported.
        requires_grad (bool): make the result a leaf requiring grad.
        check_invariants (bool, optional): check the indices against ``size`` (default:
            ``ember.sparse.check_sparse_tensor_invariants.is_enabled()``).
        is_coalesced (bool, optional): declare the indices unique and sorted.

    Returns:
        Tensor: sparse, layout ``ember.sparse_coo``; duplicates are kept until
        ``coalesce()``.

    Example::

        >>> s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [2., 3.], (2, 2))
        >>> s.to_dense()
        tensor([[0., 2.],
                [3., 0.]])
    """
    _check_cpu(device)
    if values is not None:
        _warn_unchecked(check_invariants)
    return _impl().sparse_coo_tensor(indices, values, size, dtype=dtype,
                                     requires_grad=requires_grad,
                                     check_invariants=check_invariants,
                                     is_coalesced=is_coalesced)


def _check_cpu(device):
    if device is not None:
        from .._core.device import device as _device

        if _device(device).type != "cpu":
            raise RuntimeError(f"ember's sparse tensors live on the CPU, not on {device}")


@public(method=False)
def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *,
                             dtype=None, layout=None, device=None, pin_memory=False,
                             requires_grad=False, check_invariants=None) -> Tensor:
    """A 2-D compressed sparse tensor (CSR or CSC, chosen by ``layout``).

    Args:
        compressed_indices (Tensor): row (CSR) or column (CSC) pointers, length n + 1.
        plain_indices (Tensor): column (CSR) or row (CSC) indices, length nnz.
        values (Tensor): nnz values.
        size (sequence of ints, optional): the shape.
        layout (ember.layout): ``ember.sparse_csr`` or ``ember.sparse_csc``.
        dtype, device, requires_grad, check_invariants: as :func:`sparse_coo_tensor`.

    Returns:
        Tensor: sparse compressed.

    Example::

        >>> s = ember.sparse_compressed_tensor([0, 1, 2], [1, 0], [2., 3.], (2, 2),
        ...                                    layout=ember.sparse_csr)
        >>> s.to_dense()
        tensor([[0., 2.],
                [3., 0.]])
    """
    _check_cpu(device)
    _warn_unchecked(check_invariants)
    return _impl().sparse_compressed_tensor(
        compressed_indices, plain_indices, values, size, dtype=dtype, layout=layout,
        requires_grad=requires_grad, check_invariants=check_invariants)


@public(method=False)
def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None) -> Tensor:
    """A 2-D sparse CSR tensor (compressed rows).

    Args:
        crow_indices (Tensor): row pointers, length rows + 1.
        col_indices (Tensor): the column of each value.
        values (Tensor): nnz values.
        size (sequence of ints, optional): the shape.
        dtype, device, requires_grad, check_invariants: as :func:`sparse_coo_tensor`.

    Returns:
        Tensor: layout ``ember.sparse_csr``.

    Example::

        >>> ember.sparse_csr_tensor([0, 1, 2], [1, 0], [2., 3.]).to_dense()
        tensor([[0., 2.],
                [3., 0.]])
    """
    from .._core import layout

    return sparse_compressed_tensor(crow_indices, col_indices, values, size, dtype=dtype,
                                    layout=layout.sparse_csr, device=device,
                                    requires_grad=requires_grad,
                                    check_invariants=check_invariants)


@public(method=False)
def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None) -> Tensor:
    """A 2-D sparse CSC tensor (compressed columns).

    Args:
        ccol_indices (Tensor): column pointers, length columns + 1.
        row_indices (Tensor): the row of each value.
        values (Tensor): nnz values.
        size (sequence of ints, optional): the shape.
        dtype, device, requires_grad, check_invariants: as :func:`sparse_coo_tensor`.

    Returns:
        Tensor: layout ``ember.sparse_csc``.

    Example::

        >>> ember.sparse_csc_tensor([0, 1, 2], [1, 0], [3., 2.]).to_dense()
        tensor([[0., 2.],
                [3., 0.]])
    """
    from .._core import layout

    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, dtype=dtype,
                                    layout=layout.sparse_csc, device=device,
                                    requires_grad=requires_grad,
                                    check_invariants=check_invariants)


def _blocked(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"{name}: ember has no blocked sparse layouts (BSR/BSC); "
                                  "use sparse_csr_tensor or sparse_coo_tensor")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"A blocked compressed sparse tensor: ember has no blocked layouts, so "
                  f"this raises NotImplementedError.\n\nArgs:\n    *args: as PyTorch's.\n\n"
                  f"Returns:\n    Tensor\n\nExample::\n\n    >>> ember.{name}  # doctest: +SKIP\n")
    return fn


public(_blocked("sparse_bsr_tensor"), method=False)
public(_blocked("sparse_bsc_tensor"), method=False)


# ------------------------------------------------------------------------------------------------
# strided -> sparse (on a sparse tensor, its own methods answer)


@public(function=False)
def to_sparse(self, *args, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """The tensor as a sparse tensor holding its nonzero elements.

    Args:
        sparse_dim (int, optional): the number of leading sparse dims (the rest stay dense
            in the values); all dims by default.
        layout (ember.layout, optional): ``sparse_coo`` (default), ``sparse_csr`` or
            ``sparse_csc``.

    Returns:
        Tensor: sparse, coalesced.

    Example::

        >>> ember.tensor([[0., 2.], [3., 0.]]).to_sparse().values()
        tensor([2., 3.])
    """
    t = _impl()
    if blocksize is not None:
        raise NotImplementedError("to_sparse: ember has no blocked sparse layouts")
    lay = "sparse_coo" if layout is None else layout.name
    if args:
        if lay != "sparse_coo":
            raise RuntimeError("to_sparse: sparse_dim is given for the COO layout only")
        return t.dense_to_sparse(self, "sparse_coo", args[0])
    return t.dense_to_sparse(self, lay)


@public(function=False)
def to_sparse_coo(self) -> Tensor:
    """The tensor as a sparse COO tensor (see :meth:`to_sparse`).

    Example::

        >>> ember.eye(2).to_sparse_coo().indices()
        tensor([[0, 1],
                [0, 1]])
    """
    return _impl().dense_to_sparse(self, "sparse_coo")


def _check_2d(self, name):
    if self.dim() != 2:
        raise NotImplementedError(f"{name}: ember converts 2-D tensors only, got a "
                                  f"{self.dim()}-D tensor")


@public(function=False)
def to_sparse_csr(self, dense_dim=None) -> Tensor:
    """The 2-D tensor as a sparse CSR tensor holding its nonzero elements.

    Args:
        dense_dim (int, optional): must be None or 0 (ember has no hybrid CSR tensors).

    Returns:
        Tensor: layout ``ember.sparse_csr``.

    Example::

        >>> ember.eye(2).to_sparse_csr().crow_indices()
        tensor([0, 1, 2])
    """
    _check_2d(self, "to_sparse_csr")
    return _impl().dense_to_sparse(self, "sparse_csr")


@public(function=False)
def to_sparse_csc(self, dense_dim=None) -> Tensor:
    """The 2-D tensor as a sparse CSC tensor holding its nonzero elements.

    Args:
        dense_dim (int, optional): must be None or 0.

    Returns:
        Tensor: layout ``ember.sparse_csc``.

    Example::

        >>> ember.eye(2).to_sparse_csc().ccol_indices()
        tensor([0, 1, 2])
    """
    _check_2d(self, "to_sparse_csc")
    return _impl().dense_to_sparse(self, "sparse_csc")


@public(function=False)
def to_sparse_bsr(self, blocksize, dense_dim=None) -> Tensor:
    """Blocked CSR: ember has no blocked layouts, so this raises NotImplementedError.

    Example::

        >>> ember.eye(2).to_sparse_bsr((1, 1))  # doctest: +SKIP
    """
    raise NotImplementedError("to_sparse_bsr: ember has no blocked sparse layouts")


@public(function=False)
def to_sparse_bsc(self, blocksize, dense_dim=None) -> Tensor:
    """Blocked CSC: ember has no blocked layouts, so this raises NotImplementedError.

    Example::

        >>> ember.eye(2).to_sparse_bsc((1, 1))  # doctest: +SKIP
    """
    raise NotImplementedError("to_sparse_bsc: ember has no blocked sparse layouts")


# ------------------------------------------------------------------------------------------------
# the legacy sparse products: with a sparse argument, ember/sparse/_ops.py answers them


def _needs_sparse(name):
    def fn(input, *args, **kwargs):
        raise RuntimeError(f"{name}: expected a sparse first argument, but got a strided "
                           "tensor (convert it with .to_sparse())")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"PyTorch's legacy sparse product ``{name}``: with a sparse first argument "
                  f"(see ember/sparse/_ops.py); a strided one raises RuntimeError.\n\n"
                  f"Args:\n    input (Tensor): a sparse matrix.\n\nReturns:\n    Tensor\n\n"
                  f"Example::\n\n    >>> ember.{name}  # doctest: +SKIP\n")
    return fn


for _name in ("smm", "hspmm", "hsmm", "dsmm", "saddmm", "sspaddmm", "spmm"):
    public(_needs_sparse(_name), method=_name in ("smm", "sspaddmm"))


def _cpu_backend_error(op):
    return NotImplementedError(
        f"Could not run 'aten::{op}' with arguments from the 'CPU' backend. This could be "
        f"because the operator doesn't exist for this backend: '{op}' needs a sparse tensor")


@public(function=False)
def sparse_mask(self, mask) -> Tensor:
    """The elements of this strided tensor at the specified positions of the sparse ``mask``,
    as a sparse tensor with ``mask``'s pattern (differentiable in ``self``).

    Args:
        mask (Tensor): a sparse tensor giving the pattern; a strided one raises
            NotImplementedError, as in PyTorch.

    Returns:
        Tensor: sparse, ``mask``'s layout.

    Example::

        >>> m = ember.tensor([[0., 1.], [2., 0.]]).to_sparse()
        >>> ember.arange(4.).reshape(2, 2).sparse_mask(m).values()
        tensor([1., 2.])
    """
    raise _cpu_backend_error("sparse_mask")


@public(method=False)
def native_norm(input, p=2, dim=None, keepdim=False, dtype=None) -> Tensor:
    """The ``p``-norm of a sparse tensor's specified elements (PyTorch's sparse-only norm
    kernel; a strided input raises NotImplementedError, as in PyTorch).

    Args:
        input (Tensor): a sparse tensor.
        p (float): the order of the norm.

    Returns:
        Tensor: 0-d.

    Example::

        >>> ember.native_norm(ember.tensor([3., 0., 4.]).to_sparse())
        tensor(5.)
    """
    raise _cpu_backend_error("native_norm")
