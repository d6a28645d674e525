"""``FuzzedSparseTensor``: random sparse COO inputs for :class:`~ember.utils.benchmark.Fuzzer`."""

from __future__ import annotations

import math
from numbers import Number

from .fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    """A sparse COO tensor the fuzzer builds from drawn parameters.

    The generated ``params`` must hold ``density`` (fraction of ``sum(size)`` entries that
    are stored) and ``coalesced`` (bool); ``sparse_dim`` names a parameter giving the number
    of sparse dimensions (default: all).

    Args:
        name (str): the tensor's name.
        size (tuple of str or int): sizes; strings name parameters.
        min_elements, max_elements (int, optional): reject samples outside this size.
        dim_parameter (str, optional): a parameter giving the number of dimensions.
        sparse_dim, nnz, density, coalesced (str, optional): parameter names (``nnz`` is
            accepted for PyTorch compatibility; the count comes from ``density``).
        dtype (ember.dtype): element type. Default: float32.
        cuda (bool): move the tensor to CUDA. Default: False.

    Example:
        >>> from ember.utils.benchmark import Fuzzer, FuzzedParameter, FuzzedSparseTensor
        >>> fz = Fuzzer([FuzzedParameter("density", distribution={0.5: 1.0}),
        ...              FuzzedParameter("coalesced", distribution={True: 1.0})],
        ...             [FuzzedSparseTensor("x", size=(4, 4))], seed=0)
        >>> tensors, props, params = next(fz.take(1))
        >>> tensors["x"].is_sparse, props["x"]["is_coalesced"]
        (True, True)
    """

    def __init__(self, name, size, min_elements=None, max_elements=None, dim_parameter=None,
                 sparse_dim=None, nnz=None, density=None, coalesced=None, dtype=None,
                 cuda=False):
        super().__init__(name=name, size=size, min_elements=min_elements,
                         max_elements=max_elements, dim_parameter=dim_parameter, dtype=dtype,
                         cuda=cuda)
        self._density = density
        self._coalesced = coalesced
        self._sparse_dim = sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim, nnz, is_coalesced):
        """A random sparse COO tensor with ``nnz`` stored entries (twice as many, with
        duplicates, when not coalesced).

        Args:
            size (int or sequence of int): the shape (an int: ``sparse_dim`` equal sizes).
            dtype (ember.dtype): element type.
            sparse_dim (int): number of sparse dimensions.
            nnz (int): stored entries.
            is_coalesced (bool): coalesce the result.

        Returns:
            Tensor: a sparse COO tensor.
        """
        import ember

        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError("invalid arguments")
        v_size = [nnz] + list(size[sparse_dim:])
        if dtype.is_floating_point:
            v = ember.rand(size=v_size, dtype=dtype, device="cpu")
        else:
            v = ember.randint(1, 127, size=v_size, dtype=dtype, device="cpu")
        i = ember.rand(sparse_dim, nnz, device="cpu")
        i.mul_(ember.tensor(list(size[:sparse_dim])).unsqueeze(1).to(i))
        i = i.to(ember.long)
        if not is_coalesced:
            v = ember.cat([v, ember.randn_like(v)], 0)
            i = ember.cat([i, i], 1)
        x = ember.sparse_coo_tensor(i, v, ember.Size(size))
        return x.coalesce() if is_coalesced else x

    def _make_tensor(self, params, state):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError("nnz cannot exceed total number of elements")
        is_coalesced = params["coalesced"]
        sparse_dim = params["sparse_dim"] if self._sparse_dim else len(size)
        sparse_dim = min(sparse_dim, len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, is_coalesced)
        if self._cuda:
            tensor = tensor.cuda()
        sparse_dim, dense_dim = tensor.sparse_dim(), tensor.dense_dim()
        properties = {
            "numel": int(tensor.numel()), "shape": tensor.size(),
            "is_coalesced": tensor.is_coalesced(), "density": density,
            "sparsity": 1.0 - density, "sparse_dim": sparse_dim, "dense_dim": dense_dim,
            "is_hybrid": len(size[sparse_dim:]) > 0, "dtype": str(self._dtype),
        }
        return tensor, properties
