"""``TensorType``: a type annotation for tensors of known rank and (partly) known sizes,
``TensorType[(2, Dyn)]``, with ``Dyn`` for a size that is not known. Used in placeholder
annotations; ``is_consistent``/``is_more_precise`` compare such types.
"""

from __future__ import annotations

__all__ = ["TensorType", "Dyn", "is_consistent", "is_more_precise"]


class _DynType:
    """The unknown size (or type): consistent with every other."""

    def __eq__(self, other):
        return isinstance(other, type(self))

    def __hash__(self):
        return hash("Dyn")

    def __str__(self):
        return "Dyn"

    def __repr__(self):
        return "Dyn"


Dyn = _DynType()


class TensorType:
    """A tensor type with a dimension per entry of ``dims`` (an int, or ``Dyn``).

    Args:
        dim: the sizes.

    Example::

        >>> from ember.fx.tensor_type import TensorType, Dyn
        >>> TensorType[(2, Dyn)]
        TensorType[(2, Dyn)]
    """

    def __init__(self, dim):
        self.__origin__ = TensorType
        self.__args__ = dim

    def __repr__(self):
        return f"TensorType[{self.__args__}]"

    def __eq__(self, other):
        return isinstance(other, type(self)) and list(self.__args__) == list(other.__args__)

    def __hash__(self):
        return hash(tuple(self.__args__))

    @property
    def dims(self):
        return self.__args__

    @staticmethod
    def __class_getitem__(*args):
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        return TensorType(tuple(args))


def is_consistent(t1, t2) -> bool:
    """Whether two types can describe the same value (``Dyn`` is consistent with all).

    Args:
        t1: a type.
        t2: a type.

    Returns:
        bool.

    Example::

        >>> from ember.fx.tensor_type import TensorType, Dyn, is_consistent
        >>> is_consistent(TensorType[(1, 2)], TensorType[(1, Dyn)])
        True
    """
    if t1 == t2 or t1 == Dyn or t2 == Dyn:
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.__args__) == len(t2.__args__) and \
            all(is_consistent(a, b) for a, b in zip(t1.__args__, t2.__args__))
    return False


def is_more_precise(t1, t2) -> bool:
    """Whether ``t1`` is at least as precise as ``t2`` (every known size of ``t2`` is known
    in ``t1``).

    Args:
        t1: a type.
        t2: a type.

    Returns:
        bool.

    Example::

        >>> from ember.fx.tensor_type import TensorType, Dyn, is_more_precise
        >>> is_more_precise(TensorType[(1, 2)], TensorType[(1, Dyn)])
        True
    """
    if t2 == Dyn:
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.__args__) == len(t2.__args__) and \
            all(is_more_precise(a, b) for a, b in zip(t1.__args__, t2.__args__))
    return t1 == t2
