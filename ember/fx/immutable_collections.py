"""Immutable list and dict types for the arguments of fx nodes.

A node's ``args`` and ``kwargs`` are shared by every reader of the graph, so the lists and
dicts inside them are made immutable: code that wants different arguments builds a new
container and assigns it (``node.args = new_args``), which keeps the use-def chains right.
"""

from __future__ import annotations

__all__ = ["immutable_list", "immutable_dict"]

_HELP = (
    "'{}' object does not support mutation. If you are attempting to modify the kwargs or "
    "args of a torch.fx.Node object,\ninstead create a new copy of it and assign the copy "
    "to the node:\n\n    new_args = ...  # copy and mutate args\n    node.args = new_args\n")


def _refuse(self, *args, **kwargs):
    raise TypeError(_HELP.format(type(self).__name__))


class immutable_list(list):
    """A ``list`` that refuses every in-place change (TypeError) and can be hashed.

    Args:
        iterable: the items.

    Returns:
        The immutable list.

    Example::

        >>> from ember.fx.immutable_collections import immutable_list
        >>> xs = immutable_list([1, 2])
        >>> xs + [3]
        [1, 2, 3]
    """

    __delitem__ = __iadd__ = __imul__ = __setitem__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):
    """A ``dict`` that refuses every in-place change (TypeError) and can be hashed.

    Args:
        mapping: the items.

    Returns:
        The immutable dict.

    Example::

        >>> from ember.fx.immutable_collections import immutable_dict
        >>> d = immutable_dict(a=1)
        >>> d["a"]
        1
    """

    __delitem__ = __setitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (list(self.items()),))
