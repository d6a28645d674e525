"""``torch.distributed._tensor.experimental``: the older path of
``ember.distributed.tensor.experimental``.

Example::

    >>> from ember.distributed._tensor.experimental import implicit_replication
    >>> implicit_replication.__name__
    'implicit_replication'
"""

from ..tensor.experimental import implicit_replication

__all__ = ["implicit_replication"]
