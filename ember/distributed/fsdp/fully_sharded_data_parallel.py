"""PyTorch's first FSDP wrapper, ``FullyShardedDataParallel`` (FSDP1).

ember implements the second API, ``fully_shard`` (NOTE [ fully_shard ] in
``_fully_shard.py``). The wrapper class exists so that code which asks whether a module is
wrapped (``isinstance(m, FullyShardedDataParallel)``, as transformers does before generating)
gets its truthful answer, False; wrapping a module raises NotImplementedError that points to
``fully_shard``.

Example::

    >>> from ember.distributed.fsdp import FullyShardedDataParallel
    >>> isinstance(ember.nn.Linear(2, 2), FullyShardedDataParallel)
    False
"""

from __future__ import annotations

from ...nn.modules.module import Module

__all__ = ["FullyShardedDataParallel"]


class FullyShardedDataParallel(Module):
    """FSDP1's module wrapper (not implemented in ember: use ``fully_shard``).

    Args:
        module (Module): the module to shard.
        *args, **kwargs: PyTorch's FSDP1 options.

    Returns:
        Never: construction raises NotImplementedError.

    Example::

        >>> FullyShardedDataParallel(ember.nn.Linear(2, 2))  # doctest: +SKIP
    """

    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError(
            "FullyShardedDataParallel (FSDP1) is not implemented in ember; shard the module "
            "with ember.distributed.fsdp.fully_shard(module) (FSDP2) instead")
