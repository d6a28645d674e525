"""``ember.sparse.semi_structured``: PyTorch's 2:4 semi-structured sparsity, a CUDA-only
format; on ember (CPU only) converting to it raises, as PyTorch does for a CPU tensor."""

from __future__ import annotations

from .._core.tensor import Tensor


def to_sparse_semi_structured(original_tensor: Tensor, transposed: bool = False):
    """2:4 semi-structured sparsity: a CUDA-only format in PyTorch; on ember (CPU only) it
    raises RuntimeError, as PyTorch does for a CPU tensor.

    Args:
        original_tensor (Tensor): the dense matrix.
        transposed (bool): deprecated.

    Example::

        >>> ember.sparse.to_sparse_semi_structured(ember.ones(64, 64))  # doctest: +SKIP
    """
    raise RuntimeError(f"Error original_tensor.device= {original_tensor.device} is not "
                       "supported! Only CUDA tensors are currently supported.")


class SparseSemiStructuredTensor(Tensor):
    """The 2:4 semi-structured sparse tensor class of PyTorch's CUDA builds: constructing one
    raises RuntimeError on ember (no CUDA), as :func:`to_sparse_semi_structured` does.

    Args:
        *args: PyTorch's constructor arguments (refused on ember).
        **kwargs: PyTorch's constructor arguments (refused on ember).

    Example::

        >>> try:
        ...     ember.sparse.SparseSemiStructuredTensor(ember.ones(4, 4))
        ... except RuntimeError as e:
        ...     print(str(e)[:47])
        SparseSemiStructuredTensor: only CUDA tensors a
    """

    __torch_function__ = None  # takes no part in the protocol (it is never instantiated)

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("SparseSemiStructuredTensor: only CUDA tensors are currently "
                           "supported, and ember has no CUDA backend")


class SparseSemiStructuredTensorCUTLASS(SparseSemiStructuredTensor):
    """The CUTLASS-backed 2:4 sparse tensor (CUDA only): raises on ember.

    Args:
        *args: PyTorch's constructor arguments (refused on ember).
        **kwargs: PyTorch's constructor arguments (refused on ember).

    Example::

        >>> issubclass(ember.sparse.SparseSemiStructuredTensorCUTLASS,
        ...            ember.sparse.SparseSemiStructuredTensor)
        True
    """


class SparseSemiStructuredTensorCUSPARSELT(SparseSemiStructuredTensor):
    """The cuSPARSELt-backed 2:4 sparse tensor (CUDA only): raises on ember.

    Args:
        *args: PyTorch's constructor arguments (refused on ember).
        **kwargs: PyTorch's constructor arguments (refused on ember).

    Example::

        >>> issubclass(ember.sparse.SparseSemiStructuredTensorCUSPARSELT,
        ...            ember.sparse.SparseSemiStructuredTensor)
        True
    """
