"""How a ``DTensor`` lies on each dimension of its mesh: ``Shard``, ``Replicate``, ``Partial``.

NOTE [ Placements ]
A DTensor has one placement per mesh dimension. ``Shard(d)``: the ranks along that mesh
dimension hold consecutive pieces of tensor dimension ``d``, cut as ``torch.chunk`` cuts
(pieces of ``ceil(n / k)``, the last ones shorter or empty). ``Replicate()``: each holds the
whole. ``Partial(op)``: each holds a term; the value is their reduction by ``op`` ("sum",
"avg", "max", "min"). Placements are immutable values (equal and hashable by content).

Example::

    >>> from ember.distributed.tensor.placement_types import Shard
    >>> Shard(0), str(Shard(0))
    (Shard(dim=0), 'S(0)')
"""

from __future__ import annotations

__all__ = ["Partial", "Placement", "Replicate", "Shard"]


def chunk_bounds(n: int, parts: int, index: int):
    """``(start, stop)`` of piece ``index`` when ``n`` items are cut into ``parts`` pieces as
    ``torch.chunk`` cuts them (pieces of ``ceil(n / parts)``; trailing pieces may be empty).

    Args:
        n (int): how many items.
        parts (int): how many pieces.
        index (int): which piece.

    Returns:
        tuple: ``(start, stop)``, a half-open range of item indices.

    Example::

        >>> chunk_bounds(5, 2, 1)
        (3, 5)
    """
    size = -(-n // parts) if n else 0
    lo = min(index * size, n)
    return lo, min(lo + size, n)


class Placement:
    """Base class of the placements of a DTensor on one mesh dimension.

    Example::

        >>> Shard(0).is_shard(), Replicate().is_replicate(), Partial().is_partial()
        (True, True, True)
    """

    __slots__ = ()

    def is_shard(self, dim=None) -> bool:
        """Whether this is ``Shard`` (of tensor dimension ``dim`` when given).

        Args:
            dim (int, optional): the tensor dimension to test for.

        Returns:
            bool

        Example::

            >>> Shard(1).is_shard(1)
            True
        """
        return False

    def is_replicate(self) -> bool:
        """Whether this is ``Replicate``.

        Returns:
            bool

        Example::

            >>> Replicate().is_replicate()
            True
        """
        return False

    def is_partial(self, reduce_op=None) -> bool:
        """Whether this is ``Partial`` (with reduction ``reduce_op`` when given).

        Args:
            reduce_op (str, optional): the reduction to test for.

        Returns:
            bool

        Example::

            >>> Partial("max").is_partial("max")
            True
        """
        return False


class Shard(Placement):
    """Pieces of tensor dimension ``dim``, one per rank along the mesh dimension.

    Args:
        dim (int): the tensor dimension that is cut (negative counts from the end).

    Example::

        >>> Shard(0)
        Shard(dim=0)
    """

    __slots__ = ("dim",)

    def __init__(self, dim: int = 0):
        object.__setattr__(self, "dim", int(dim))

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def is_shard(self, dim=None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other):
        return type(other) is Shard and other.dim == self.dim

    def __hash__(self):
        return hash(("Shard", self.dim))

    def __repr__(self):
        return f"Shard(dim={self.dim})"

    def __str__(self):
        return f"S({self.dim})"

    def __reduce__(self):
        return Shard, (self.dim,)


class Replicate(Placement):
    """The whole tensor on every rank along the mesh dimension.

    Example::

        >>> Replicate()
        Replicate()
    """

    __slots__ = ()

    def is_replicate(self) -> bool:
        return True

    def __eq__(self, other):
        return type(other) is Replicate

    def __hash__(self):
        return hash("Replicate")

    def __repr__(self):
        return "Replicate()"

    def __str__(self):
        return "R"

    def __reduce__(self):
        return Replicate, ()


_REDUCE_OPS = ("sum", "avg", "max", "min")


class Partial(Placement):
    """A term on each rank; the tensor is their reduction by ``reduce_op``.

    Args:
        reduce_op (str): "sum" (default), "avg", "max" or "min".

    Raises:
        ValueError: another reduction.

    Example::

        >>> Partial(), str(Partial("avg"))
        (Partial(sum), 'P(avg)')
    """

    __slots__ = ("reduce_op",)

    def __init__(self, reduce_op: str = "sum"):
        op = str(getattr(reduce_op, "name", reduce_op)).lower()
        if op not in _REDUCE_OPS:
            raise ValueError(f"Partial: unsupported reduce_op {reduce_op!r}; expected one of "
                             f"{_REDUCE_OPS}")
        object.__setattr__(self, "reduce_op", op)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def is_partial(self, reduce_op=None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def __eq__(self, other):
        return type(other) is Partial and other.reduce_op == self.reduce_op

    def __hash__(self):
        return hash(("Partial", self.reduce_op))

    def __repr__(self):
        return f"Partial({self.reduce_op})"

    def __str__(self):
        return f"P({self.reduce_op})"

    def __reduce__(self):
        return Partial, (self.reduce_op,)


class _StridedShard(Placement):
    """Pieces of tensor dimension ``dim`` cut *after* the ``Shard`` cuts of later mesh
    dimensions on the same tensor dimension: what ``fully_shard`` gives a parameter that
    tensor parallelism already cut along the dimension FSDP cuts (``split_factor``: the
    number of pieces those later cuts make). NOTE [ Strided shards ] in _redistribute.py.

    Args:
        dim (int): the tensor dimension that is cut.
        split_factor (int): how many pieces the later mesh dimensions cut it into.
            Keyword-only (``sf`` is its short name).

    Example::

        >>> _StridedShard(0, split_factor=2)
        _StridedShard(dim=0, sf=2)
    """

    __slots__ = ("dim", "split_factor")

    def __init__(self, dim: int, *, split_factor: int = 1, sf=None):
        object.__setattr__(self, "dim", int(dim))
        object.__setattr__(self, "split_factor", int(split_factor if sf is None else sf))

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field '{name}'")

    def __eq__(self, other):
        return (type(other) is _StridedShard and other.dim == self.dim
                and other.split_factor == self.split_factor)

    def __hash__(self):
        return hash(("_StridedShard", self.dim, self.split_factor))

    def __repr__(self):
        return f"_StridedShard(dim={self.dim}, sf={self.split_factor})"

    def __str__(self):
        return f"_S({self.dim}, {self.split_factor})"

    def __reduce__(self):
        return _StridedShard, (self.dim,), {"split_factor": self.split_factor}

    def __setstate__(self, state):
        object.__setattr__(self, "split_factor", state["split_factor"])
