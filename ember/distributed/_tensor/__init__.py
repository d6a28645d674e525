"""``torch.distributed._tensor``: the older path of ``ember.distributed.tensor`` (scripts
written for PyTorch 2.0-2.3 import DTensor from here).

Example::

    >>> from ember.distributed._tensor import Shard
    >>> Shard(0)
    Shard(dim=0)
"""

from ..tensor import (DTensor, DeviceMesh, Partial, Placement, Replicate, Shard,
                      distribute_module, distribute_tensor, empty, full, init_device_mesh, ones,
                      placement_types, rand, randn, zeros)
from . import device_mesh

__all__ = ["DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard", "device_mesh",
           "distribute_module", "distribute_tensor", "empty", "full", "init_device_mesh", "ones",
           "placement_types", "rand", "randn", "zeros"]
