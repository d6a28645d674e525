"""``ember.distributed.tensor``: tensors laid out over a mesh of ranks (PyTorch's DTensor).

A ``DTensor`` is a tensor whose pieces live on the ranks of a ``DeviceMesh``, laid out by
one placement per mesh dimension: ``Shard(d)`` (cut along dimension ``d``), ``Replicate()``
(whole everywhere) or ``Partial()`` (a term of a sum on each rank). Operations on DTensors
give DTensors, communicating where their layouts require (NOTE [ DTensor ] in _api.py,
NOTE [ DTensor ops ] in _ops.py, NOTE [ DTensor redistribution ] in _redistribute.py).
Collectives run on ember's process groups.

Example::

    >>> from ember.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    >>> mesh = init_device_mesh("cpu", (2,))  # doctest: +SKIP
    >>> x = distribute_tensor(ember.arange(4.0), mesh, [Shard(0)])  # doctest: +SKIP
    >>> (x * 2).full_tensor()  # doctest: +SKIP
    tensor([0., 2., 4., 6.])
"""

from ..device_mesh import DeviceMesh, init_device_mesh
from . import placement_types
from ._api import (DTensor, distribute_module, distribute_tensor, empty, full, ones, rand, randn,
                   zeros)
from .placement_types import Partial, Placement, Replicate, Shard
from .. import device_mesh  # noqa: E402  (torch.distributed.tensor.device_mesh)

__all__ = ["DTensor", "DeviceMesh", "Partial", "Placement", "Replicate", "Shard",
           "distribute_module", "distribute_tensor", "empty", "full", "init_device_mesh", "ones",
           "placement_types", "rand", "randn", "zeros"]
