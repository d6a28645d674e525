"""``ember.distributed.nn``: collectives that autograd differentiates through
(``torch.distributed.nn``); see :mod:`ember.distributed.nn.functional`."""

from .. import ReduceOp  # noqa: F401  (as torch.distributed.nn carries it)
from .functional import (  # noqa: F401
    all_gather, all_reduce, all_to_all, all_to_all_single, broadcast, gather, reduce,
    reduce_scatter, scatter,
)

__all__ = ["all_gather", "all_reduce", "all_to_all", "all_to_all_single", "broadcast", "gather",
           "reduce", "reduce_scatter", "scatter"]
