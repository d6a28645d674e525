"""Shape arithmetic of DTensor layouts (``torch.distributed.tensor._utils``).

Libraries that load checkpoints shard by shard (Hugging Face transformers among them) import
``compute_local_shape_and_global_offset`` from here to learn which slice of a full tensor this
rank holds.

Example::

    >>> from ember.distributed.tensor._utils import compute_local_shape_and_global_offset
    >>> compute_local_shape_and_global_offset.__name__
    'compute_local_shape_and_global_offset'
"""

from __future__ import annotations

from .placement_types import Shard, chunk_bounds

__all__ = ["compute_local_shape_and_global_offset"]


def _local_shape_and_offset(global_shape, mesh_shape, coordinate, placements, skip_offset):
    """The work of ``compute_local_shape_and_global_offset`` for a known mesh coordinate."""
    # the global indices this rank holds along each sharded tensor dimension, narrowed one
    # mesh dimension at a time (left to right, as the pieces are cut)
    held = {}
    for mesh_dim, placement in enumerate(placements):
        if type(placement) is not Shard:
            if placement.is_shard():
                raise NotImplementedError(
                    f"compute_local_shape_and_global_offset: {placement!r} is not supported")
            continue
        dim = placement.dim % len(global_shape)
        indices = held.get(dim, range(global_shape[dim]))
        lo, hi = chunk_bounds(len(indices), mesh_shape[mesh_dim], coordinate[mesh_dim])
        held[dim] = indices[lo:hi]
    local_shape = tuple(len(held[d]) if d in held else int(n) for d, n in enumerate(global_shape))
    if skip_offset:
        return local_shape, ()
    # an empty piece starts at the end of its dimension
    offset = tuple((held[d][0] if len(held[d]) else int(global_shape[d])) if d in held else 0
                   for d in range(len(global_shape)))
    return local_shape, offset


def compute_local_shape_and_global_offset(global_shape, mesh, placements, skip_offset=False):
    """The shape of this rank's local piece of a DTensor and where it starts in the full tensor.

    Args:
        global_shape (sequence of int): the full tensor's shape.
        mesh (DeviceMesh): the mesh the DTensor lies on.
        placements (sequence of Placement): one per mesh dimension; ``Shard(d)`` pieces are
            cut as ``torch.chunk`` cuts (uneven tails shorter or empty).
        skip_offset (bool): return an empty offset (only the shape is wanted).

    Returns:
        tuple: ``(local_shape, global_offset)``, two tuples of ints; ``((0,), ())`` on a rank
        outside the mesh.

    Example::

        >>> from ember.distributed.tensor import Shard, init_device_mesh  # doctest: +SKIP
        >>> mesh = init_device_mesh("cpu", (1,))  # doctest: +SKIP
        >>> compute_local_shape_and_global_offset((4, 6), mesh, [Shard(1)])  # doctest: +SKIP
        ((4, 6), (0, 0))
    """
    coordinate = mesh.get_coordinate()
    if coordinate is None:
        return (0,), ()
    return _local_shape_and_offset(tuple(global_shape), tuple(mesh.shape), tuple(coordinate),
                                   placements, skip_offset)
