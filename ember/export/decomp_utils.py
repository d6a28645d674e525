"""``ember.export.decomp_utils``: ``CustomDecompTable``, the table
``ExportedProgram.run_decompositions`` takes."""

from __future__ import annotations

__all__ = ["CustomDecompTable"]


class CustomDecompTable(dict):
    """A decomposition table (op -> function producing its decomposition) that starts as
    ``default_decompositions()`` and takes user entries: ``table[op] = fn`` adds one,
    ``del table[op]`` (or ``pop``) keeps an op whole. ember's default table is empty, since
    its graphs already hold the ops its kernels implement.

    Example::

        >>> from ember.export.decomp_utils import CustomDecompTable
        >>> table = CustomDecompTable()
        >>> table[ember.ops.aten.relu.default] = lambda x: ember.clamp(x, min=0)
        >>> len(table.materialize())
        1
    """

    def __init__(self):
        from . import default_decompositions

        super().__init__(default_decompositions())

    def copy(self) -> CustomDecompTable:
        """A copy of the table (still a ``CustomDecompTable``).

        Returns:
            CustomDecompTable.
        """
        new = CustomDecompTable()
        new.clear()
        new.update(self)
        return new

    def materialize(self) -> dict:
        """The table as a plain dict.

        Returns:
            dict: op -> decomposition.
        """
        return dict(self)
