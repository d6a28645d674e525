"""``ember.sparse``: sparse COO and compressed (CSR/CSC) tensors, as ``torch.sparse``.

Sparse tensors hold indices and values (NOTE [ Sparse tensors ] in ember/sparse/_tensor.py);
products run on SciPy with autograd to the values and the dense operand (NOTE [ Sparse
products ] in ember/sparse/_products.py). The implementation is imported on first use, so a
program without sparse tensors pays nothing for it.
"""

from __future__ import annotations

import functools

from .._core.tensor import Tensor
from . import semi_structured
from .semi_structured import (
    SparseSemiStructuredTensor, SparseSemiStructuredTensorCUSPARSELT,
    SparseSemiStructuredTensorCUTLASS, to_sparse_semi_structured,
)

DimOrDims = int | tuple | list | None

__all__ = [
    "addmm", "check_sparse_tensor_invariants", "mm", "sum", "softmax", "log_softmax",
    "sampled_addmm", "spdiags", "spsolve", "as_sparse_gradcheck", "to_sparse_semi_structured",
    "SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUTLASS",
    "SparseSemiStructuredTensorCUSPARSELT",
]


def _impl():
    from . import _ops as _fill  # noqa: F401  (fills the handler tables)
    from . import _tensor

    return _tensor


def _rules():
    from . import _ops as rules

    return rules


def _require_sparse(x, fn):
    t = _impl()
    if not isinstance(x, t._SparseTensor):
        raise RuntimeError(f"{fn}: expected a sparse tensor, but got a strided one "
                           "(convert it with .to_sparse())")


def mm(mat1: Tensor, mat2: Tensor, reduce: str = "sum") -> Tensor:
    """Matrix product with a sparse first argument; its gradient to the sparse matrix keeps
    the matrix's sparsity pattern.

    Args:
        mat1 (Tensor): a sparse 2-D matrix (COO or CSR), or a strided one when ``mat2`` is
            sparse.
        mat2 (Tensor): a strided or sparse 2-D matrix.
        reduce (str): only ``"sum"`` (the product) is supported.

    Returns:
        Tensor: strided for sparse @ strided, sparse for sparse @ sparse.

    Example::

        >>> a = ember.tensor([[0., 2.], [3., 0.]]).to_sparse()
        >>> ember.sparse.mm(a, ember.ones(2, 1))
        tensor([[2.],
                [3.]])
    """
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce='{reduce}' is not supported by ember "
                                  "(only 'sum')")
    _impl()
    return _rules().mm(mat1, mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0,
          alpha: float = 1.0) -> Tensor:
    """``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``.

    Args:
        mat (Tensor): the strided matrix added.
        mat1 (Tensor): a sparse matrix.
        mat2 (Tensor): a strided matrix.
        beta, alpha (float): the multipliers.

    Returns:
        Tensor: strided.

    Example::

        >>> a = ember.eye(2).to_sparse()
        >>> ember.sparse.addmm(ember.ones(2, 2), a, ember.ones(2, 2))
        tensor([[2., 2.],
                [2., 2.]])
    """
    _impl()
    return _rules().addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim: DimOrDims = None, dtype=None) -> Tensor:  # noqa: A001
    """Sum of a sparse tensor over ``dim`` (all dims when None).

    Args:
        input (Tensor): a sparse tensor.
        dim (int or tuple of ints, optional): the dims to sum over.
        dtype (ember.dtype, optional): the dtype to sum in.

    Returns:
        Tensor: strided when every sparse dim is summed, else sparse.

    Example::

        >>> a = ember.tensor([[0., 2.], [3., 0.]]).to_sparse()
        >>> ember.sparse.sum(a)
        tensor(5.)
    """
    _require_sparse(input, "sparse.sum")
    return _rules().sparse_sum(input, dim, False, dtype)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Softmax over ``dim`` of the specified elements only: unspecified elements count as
    minus infinity (they stay unspecified in the result).

    Args:
        input (Tensor): a sparse tensor.
        dim (int): the dim to normalise over.
        dtype (ember.dtype, optional): the dtype to compute in.

    Returns:
        Tensor: sparse, with ``input``'s pattern.

    Example::

        >>> a = ember.tensor([[0., 1.], [2., 0.]]).to_sparse()
        >>> ember.sparse.softmax(a, 1).to_dense()
        tensor([[0., 1.],
                [1., 0.]])
    """
    _require_sparse(input, "sparse.softmax")
    return _rules().softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Log-softmax over ``dim`` of the specified elements (see :func:`softmax`).

    Args:
        input (Tensor): a sparse tensor.
        dim (int): the dim to normalise over.
        dtype (ember.dtype, optional): the dtype to compute in.

    Returns:
        Tensor: sparse, with ``input``'s pattern.

    Example::

        >>> a = ember.tensor([[0., 1.], [2., 0.]]).to_sparse()
        >>> ember.sparse.log_softmax(a, 1).values()
        tensor([0., 0.])
    """
    _require_sparse(input, "sparse.log_softmax")
    return _rules().log_softmax(input, dim, dtype=dtype)


def sampled_addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0,
                  alpha: float = 1.0, out=None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` at the specified elements of the sparse CSR
    ``input`` only.

    Args:
        input (Tensor): a sparse CSR matrix giving the pattern.
        mat1, mat2 (Tensor): strided matrices.
        beta, alpha (float): the multipliers.

    Returns:
        Tensor: sparse CSR, with ``input``'s pattern.

    Example::

        >>> s = ember.eye(2).to_sparse_csr()
        >>> ember.sparse.sampled_addmm(s, ember.ones(2, 3), ember.ones(3, 2)).values()
        tensor([4., 4.])
    """
    t = _impl()
    _require_sparse(input, "sampled_addmm")
    if input.layout.name != "sparse_csr":
        raise RuntimeError(f"sampled_addmm: Expected input to be a sparse CSR tensor, but "
                           f"got {input.layout}")
    c = t._as_coo(input)
    a = c._idx._data
    from .._core.tensor import wrap

    rows, cols = wrap(a[0].copy()), wrap(a[1].copy())
    prod = (mat1[rows] * mat2.t()[cols]).sum(-1)
    vals = input._vals * beta + prod * alpha
    return t.make("sparse_csr", input._idx, input._plain, vals, tuple(input.shape))


def spdiags(diagonals: Tensor, offsets: Tensor, shape: tuple, layout=None) -> Tensor:
    """A sparse matrix with the rows of ``diagonals`` on the diagonals given by ``offsets``
    (SciPy's ``spdiags`` convention: element ``j`` of row ``i`` lands in column ``j``).

    Args:
        diagonals (Tensor): (number of diagonals, length) values.
        offsets (Tensor): 1-D offsets (0 the main diagonal, positive above).
        shape (tuple of ints): the matrix shape.
        layout (ember.layout, optional): ``sparse_coo`` (default), ``sparse_csr`` or
            ``sparse_csc``.

    Returns:
        Tensor: sparse.

    Example::

        >>> d = ember.tensor([[1., 2., 3.]])
        >>> ember.sparse.spdiags(d, ember.tensor([0]), (3, 3)).to_dense()
        tensor([[1., 0., 0.],
                [0., 2., 0.],
                [0., 0., 3.]])
    """
    import numpy as np

    import ember

    t = _impl()
    if diagonals.dim() == 1:
        diagonals = diagonals.unsqueeze(0)
    offs = offsets.reshape(-1).tolist() if isinstance(offsets, Tensor) else list(offsets)
    if diagonals.dim() != 2 or len(offs) != diagonals.shape[0]:
        raise ValueError("spdiags: expected diagonals of shape (len(offsets), n)")
    m, n = shape
    rows, cols, picks = [], [], []
    for k, off in enumerate(offs):
        j = np.arange(max(0, off), min(n, m + off, diagonals.shape[1]))
        rows.append(j - off)
        cols.append(j)
        picks.append(k * diagonals.shape[1] + j)
    rows, cols, picks = (np.concatenate(x).astype(np.int64) for x in (rows, cols, picks))
    vals = diagonals.reshape(-1)[ember.from_numpy(picks)]
    out = ember.sparse_coo_tensor(ember.from_numpy(np.stack([rows, cols])), vals, (m, n),
                                  check_invariants=False)  # valid by construction
    out = out.coalesce()
    return out if layout is None else t._convert(out, layout.name)


def spsolve(input: Tensor, other: Tensor, *, left: bool = True) -> Tensor:
    """Solve ``input @ X = other`` for a sparse CSR ``input`` (SciPy's sparse solver).

    PyTorch's CPU build has no kernel for this; ember's has one, without gradient.

    Args:
        input (Tensor): a sparse CSR square matrix.
        other (Tensor): the strided right-hand side (1-D or 2-D).
        left (bool): only True is supported.

    Returns:
        Tensor: strided ``X``.

    Example::

        >>> a = (2 * ember.eye(2)).to_sparse_csr()
        >>> ember.sparse.spsolve(a, ember.ones(2))
        tensor([0.5000, 0.5000])
    """
    import numpy as np
    from .._lazy_import import import_module

    sp = import_module("scipy.sparse")
    spl = import_module("scipy.sparse.linalg")

    import ember

    t = _impl()
    _require_sparse(input, "spsolve")
    if not left:
        raise NotImplementedError("spsolve: left=False is not supported")
    c = t._as_coo(input)
    a = c._idx._data
    m = sp.csr_array((c._vals.detach().numpy(), (a[0], a[1])), shape=tuple(c.shape))
    x = spl.spsolve(m.tocsc(), other.detach().numpy())
    return ember.from_numpy(np.ascontiguousarray(np.asarray(x, dtype=other.numpy().dtype)))


class check_sparse_tensor_invariants:
    """Context manager and decorator turning sparse-invariant checks on (or off) in the
    sparse constructors: indices within the size, compressed indices well formed.

    Args:
        enable (bool): the setting inside the block.

    Example::

        >>> with ember.sparse.check_sparse_tensor_invariants():
        ...     ember.sparse.check_sparse_tensor_invariants.is_enabled()
        True
    """

    _enabled = False

    @staticmethod
    def is_enabled() -> bool:
        """True while invariant checks are on by default."""
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        """Turn invariant checks on by default."""
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        """Turn invariant checks off by default."""
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable: bool = True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        check_sparse_tensor_invariants._enabled = self.state
        return self

    def __exit__(self, *exc):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return fn(*args, **kwargs)

        return wrapper


def as_sparse_gradcheck(gradcheck):
    """Wrap ``gradcheck`` so it accepts sparse inputs: each sparse input is checked through
    its values (the pattern held fixed), the way sparse gradients are defined.

    Args:
        gradcheck (callable): ``ember.autograd.gradcheck`` or a function like it.

    Returns:
        callable: ``gradcheck(func, inputs, **kwargs)`` taking sparse inputs.

    Example::

        >>> gc = ember.sparse.as_sparse_gradcheck(ember.autograd.gradcheck)
        >>> a = ember.eye(2, dtype=ember.float64).to_sparse().requires_grad_()
        >>> gc(lambda s: ember.sparse.mm(s, ember.ones(2, 2, dtype=ember.float64)), (a,))
        True
    """
    def checker(func, inputs, **kwargs):
        t = _impl()
        single = isinstance(inputs, Tensor)
        items = (inputs,) if single else tuple(inputs)
        slots = []
        flat = []
        for x in items:
            if isinstance(x, t._SparseTensor):
                s = x.coalesce() if x.layout.name == "sparse_coo" else x
                v = s._vals.detach().requires_grad_(x.requires_grad)
                slots.append(s)
                flat.append(v)
            else:
                slots.append(None)
                flat.append(x)

        def on_values(*vals):
            rebuilt = [x if s is None else t._like(s, v) for s, x, v in
                       zip(slots, items, vals)]
            out = func(*rebuilt)
            if isinstance(out, t._SparseTensor):
                return out.to_dense()
            return out

        return gradcheck(on_values, tuple(flat), **kwargs)

    return checker


# ------------------------------------------------------------------------------------------------
# legacy sparse tensor types: ember.sparse.FloatTensor(indices, values[, size]) ...


class _LegacyMeta(type):
    def __instancecheck__(cls, obj):
        t = _impl()
        return isinstance(obj, t._SparseTensor) and obj.layout.name == "sparse_coo" and \
            (cls._dtype is None or obj.dtype.name == cls._dtype)


# NOTE [ Legacy sparse constructors ]: PyTorch's ``torch.sparse.FloatTensor(indices, values,
# size)`` keeps the values' dtype whatever the type's name (only the empty forms take it), checks
# no invariants (so says nothing about unchecked ones), and warns once per process for each of
# its four forms, each with its own text.
_LEGACY_FORMS = {
    "empty": "torch.sparse.SparseTensor() is deprecated.  Please use "
             "torch.sparse_coo_tensor((0,), dtype=).",
    "shape": "torch.sparse.SparseTensor(shape, *, device=) is deprecated.  Please use "
             "torch.sparse_coo_tensor(shape, dtype=, device=).",
    "values": "torch.sparse.SparseTensor(indices, values, *, device=) is deprecated.  Please "
              "use torch.sparse_coo_tensor(indices, values, dtype=, device=).",
    "values_shape": "torch.sparse.SparseTensor(indices, values, shape, *, device=) is "
                    "deprecated.  Please use torch.sparse_coo_tensor(indices, values, shape, "
                    "dtype=, device=).",
}


def _legacy_form(args):
    """Which of the legacy constructor's forms ``args`` is, or raise PyTorch's TypeError."""
    from .._core.size import Size

    if not args:
        return "empty"
    if isinstance(args[0], Tensor):
        if len(args) == 2 and isinstance(args[1], Tensor):
            return "values"
        if len(args) == 3 and isinstance(args[1], Tensor) and \
                isinstance(args[2], (tuple, list)):
            return "values_shape"
    elif len(args) == 1 and isinstance(args[0], Size) or \
            all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return "shape"
    elif len(args) == 1 and isinstance(args[0], (tuple, list)):
        raise TypeError("torch.sparse.SparseTensor(sequence) only accepts sizes.  Please use "
                        "torch.sparse_coo_tensor() or construct a strided tensor and convert "
                        "it to sparse via to_sparse.")
    got = ", ".join(type(a).__name__ for a in args)
    raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but "
                    "expected one of:\n * (*, torch.device device = None)\n * (Tensor "
                    "indices, Tensor values, *, torch.device device = None)\n * (Tensor "
                    "indices, Tensor values, tuple of ints size, *, torch.device device = "
                    "None)\n * (tuple of ints size, *, torch.device device = None)\n")


def _legacy_type(name, dtype_name):
    def __new__(cls, *args, device=None):
        import ember

        from .._settings import warn_at_caller

        form = _legacy_form(args)
        if form != "shape" or len(args) != 1:  # (a torch.Size alone: no warning, as PyTorch)
            warn_at_caller(_LEGACY_FORMS[form], once=True, skip=1)
        if form.startswith("values"):  # See NOTE [ Legacy sparse constructors ]
            return ember.sparse_coo_tensor(args[0], args[1], *args[2:], check_invariants=False)
        dtype = getattr(ember, dtype_name) if dtype_name else ember.get_default_dtype()
        size = tuple(int(s) for s in (args[0] if len(args) == 1 and
                                      not isinstance(args[0], int) else args)) or (0,)
        return ember.sparse_coo_tensor(ember.zeros((len(size), 0), dtype=ember.int64),
                                       ember.zeros(0, dtype=dtype), size, check_invariants=False)

    doc = (f"Legacy constructor of sparse {dtype_name or 'default-dtype'} COO tensors: "
           f"``{name}(indices, values[, size])`` or ``{name}(*size)`` (empty); "
           "``isinstance`` tests a tensor's layout and dtype.\n\n"
           "Args:\n    *args: ``indices`` (a 2-D int64 tensor) and ``values`` (a tensor), "
           "optionally followed by the size; or the sizes of an empty tensor as ints.\n"
           "    device: ignored; sparse tensors are made on the CPU.\n\n"
           "Returns:\n    Tensor: a sparse COO tensor: of the values' dtype given values, else of "
           "this type's dtype.\n\nExample::\n\n"
           f"    >>> ember.sparse.{name}(2, 3).shape\n    ember.Size([2, 3])\n")
    return _LegacyMeta(name, (), {"__new__": __new__, "_dtype": dtype_name, "__doc__": doc,
                                  "__module__": "ember.sparse"})


FloatTensor = _legacy_type("FloatTensor", "float32")
DoubleTensor = _legacy_type("DoubleTensor", "float64")
HalfTensor = _legacy_type("HalfTensor", "float16")
BFloat16Tensor = _legacy_type("BFloat16Tensor", "bfloat16")
LongTensor = _legacy_type("LongTensor", "int64")
IntTensor = _legacy_type("IntTensor", "int32")
ShortTensor = _legacy_type("ShortTensor", "int16")
CharTensor = _legacy_type("CharTensor", "int8")
ByteTensor = _legacy_type("ByteTensor", "uint8")
Tensor = Tensor  # torch.sparse.Tensor is torch.Tensor
