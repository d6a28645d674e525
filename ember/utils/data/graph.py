"""The graph of a DataPipe pipeline: which pipes feed which (found from their attributes)."""

from __future__ import annotations

from .datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["DataPipe", "DataPipeGraph", "IterDataPipe", "MapDataPipe", "traverse_dps",
           "traverse"]

DataPipe = (IterDataPipe, MapDataPipe)
DataPipeGraph = dict  # {id(pipe): (pipe, DataPipeGraph of its sources)}


def _sources(dp):
    found = []
    for value in vars(dp).values():
        items = value if isinstance(value, (list, tuple)) else [value]
        found.extend(v for v in items if isinstance(v, DataPipe))
    return found


def traverse_dps(datapipe) -> dict:
    """The pipeline ending at ``datapipe`` as nested dicts.

    Args:
        datapipe: the last pipe.

    Returns:
        ``{id(pipe): (pipe, {...its sources...})}``.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> g = traverse_dps(IterableWrapper([1]).map(str))
        >>> [type(p).__name__ for p, _ in g.values()]
        ['Mapper']
    """
    return _traverse(datapipe, set())


def _traverse(dp, seen):
    key = id(dp)
    if key in seen:
        return {key: (dp, {})}
    seen = seen | {key}
    children = {}
    for src in _sources(dp):
        children.update(_traverse(src, seen))
    return {key: (dp, children)}


def traverse(datapipe, only_datapipe=None) -> dict:
    """Deprecated spelling of ``traverse_dps``.

    Args:
        datapipe: the last pipe.
        only_datapipe: accepted for PyTorch compatibility; the graph always holds only
            DataPipes.

    Returns:
        ``{id(pipe): (pipe, {...its sources...})}``, as ``traverse_dps``.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> g = traverse(IterableWrapper([1]).map(str))
        >>> [type(p).__name__ for p, _ in g.values()]
        ['Mapper']
    """
    return traverse_dps(datapipe)
