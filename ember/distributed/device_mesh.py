"""``DeviceMesh`` and ``init_device_mesh`` (``torch.distributed.device_mesh``).

Example::

    >>> from ember.distributed.device_mesh import DeviceMesh, init_device_mesh
    >>> DeviceMesh.__name__
    'DeviceMesh'
"""

from ._extras import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
