"""Which state-dict entries are pieces of a larger tensor.

NOTE [ Sharded entries in checkpoints ]
PyTorch's sharded state dicts hold DTensors, which know their global shape and where their
piece sits. ember's ``fully_shard`` keeps plain tensors (NOTE [ fully_shard ]): each rank's
``state_dict()`` holds the rows ``[lo, hi)`` of dim 0 of every sharded parameter. The
checkpoint recognises such an entry through ``fsdp._fully_shard.shard_layout`` (a registry
keyed by the shard's buffer, so the detached view ``state_dict()`` returns is found too) and
records it as PyTorch records a DTensor: the global size in ``TensorStorageMetadata`` and
one chunk per rank with its offsets. Loading copies into each target the overlap of every
stored chunk with the rows the target covers, so a checkpoint written with N ranks loads
into M ranks, into a whole (unsharded) model, and into PyTorch.
"""

from __future__ import annotations


def layout_of(value):
    """``(global shape, offsets)`` of a shard entry, or None for anything else."""
    from ... import Tensor
    from ..fsdp._fully_shard import shard_layout

    if not isinstance(value, Tensor):
        return None
    return shard_layout(value)
