"""``ember._tensor``: the module PyTorch's Tensor class lives in, as programs name it.

``torch._tensor.Tensor`` is ``torch.Tensor``; checkpoint code names the rebuild function of
tensor subclasses (``_rebuild_from_type_v2``) by this path.
"""

from __future__ import annotations

from ._core.tensor import Tensor
from .serialization._rebuild import _rebuild_from_type_v2

__all__ = ["Tensor", "_rebuild_from_type_v2", "_rebuild_from_type"]


def _rebuild_from_type(func, type, args, dict):
    """A ``type`` instance from ``func(*args)`` with ``dict`` as its attributes (the older
    form of :func:`_rebuild_from_type_v2`).

    Args:
        func (callable): makes the plain tensor.
        type (type): the Tensor subclass.
        args (tuple): ``func``'s arguments.
        dict (dict): the instance's attributes.

    Returns:
        Tensor: a ``type`` instance.

    Example::

        >>> from ember._tensor import _rebuild_from_type
        >>> _rebuild_from_type(ember.ones, ember.Tensor, (2,), {}).shape
        ember.Size([2])
    """
    ret = func(*args)
    if type is not Tensor:
        ret = ret.as_subclass(type)
        ret.__dict__ = dict
    return ret
