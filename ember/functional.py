"""``torch.functional``: the module PyTorch defines some of its top-level functions in
(``einsum``, ``stft``, ``meshgrid``, ``unique`` ...). ember defines them elsewhere; this
module offers them under the same path, so ``torch.functional.einsum`` and
``from torch.functional import unique`` work.

Example::

    >>> import ember.functional
    >>> ember.functional.einsum("ii", ember.eye(3))
    tensor(3.)
"""

from ember import (
    atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors,
    cartesian_prod, cdist, chain_matmul, einsum, istft, lu, meshgrid, norm, pca_lowrank, split,
    stft, svd_lowrank, tensordot, unique, unique_consecutive, unravel_index,
)

__all__ = [
    "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
    "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm",
    "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot", "unique",
    "unique_consecutive", "unravel_index",
]
