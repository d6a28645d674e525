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

DTensor entries (``fully_shard``'s parameters, tensor-parallel ones, optimizer state laid out
as them) are recorded the same way: the planners replace each by its local piece
(``local_pieces``) and remember the piece's global shape and offsets, so saving writes the
piece and loading copies into it -- the DTensor's own storage. A replicated DTensor is a
whole tensor (written once); a Partial one is reduced first; an empty piece is left out.
"""

from __future__ import annotations

import weakref

# id(a DTensor's local piece) -> (weak reference to it, global shape, offsets)
_PIECES: dict = {}


def layout_of(value):
    """``(global shape, offsets)`` of a shard entry, or None for anything else."""
    from ... import Tensor
    from ..fsdp._fully_shard import shard_layout

    if not isinstance(value, Tensor):
        return None
    entry = _PIECES.get(id(value))
    if entry is not None and entry[0]() is value:
        return entry[1], entry[2]
    return shard_layout(value)


def local_pieces(state_dict: dict) -> dict:
    """``state_dict`` (flat) with every DTensor replaced by its local piece, whose layout
    ``layout_of`` then answers; entries that are not DTensors are kept as they are."""
    import sys

    if "ember.distributed.tensor._api" not in sys.modules:
        # no DTensor can exist; importing it would switch the __torch_function__ protocol
        # on for the whole process (NOTE [ __torch_function__ ] in ember/_overrides.py)
        return state_dict
    from ..tensor._api import DTensor
    from ..tensor._redistribute import local_layout
    from ..tensor.placement_types import Partial, Replicate

    out = {}
    for key, value in state_dict.items():
        if not isinstance(value, DTensor):
            out[key] = value
            continue
        if any(isinstance(p, Partial) for p in value.placements):
            value = value.redistribute(placements=[Replicate() if isinstance(p, Partial) else p
                                                   for p in value.placements])
        local = value._local_tensor.detach()
        if all(isinstance(p, Replicate) for p in value.placements):
            out[key] = local
            continue
        if local.numel() == 0 and value.numel() != 0:
            continue
        _, offsets = local_layout(tuple(value.shape), value.device_mesh, value.placements)
        _PIECES[id(local)] = (weakref.ref(local), tuple(value.shape), tuple(offsets))
        out[key] = local
    return out
