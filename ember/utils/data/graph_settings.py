"""Settings applied across a whole DataPipe graph: sharding, shuffling, seeds."""

from __future__ import annotations

from .graph import DataPipe, DataPipeGraph, traverse_dps  # noqa: F401 - torch has them here

__all__ = ["apply_random_seed", "apply_sharding", "apply_shuffle_seed",
           "apply_shuffle_settings", "get_all_graph_pipes"]


def get_all_graph_pipes(graph: DataPipeGraph) -> list:
    """Every pipe in ``graph`` (as ``traverse_dps`` returns it), each once.

    Args:
        graph: the nested dicts ``traverse_dps`` returns.

    Returns:
        A list of the pipes, in no particular order.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> len(get_all_graph_pipes(traverse_dps(IterableWrapper([1]).map(str))))
        2
    """
    found, stack = {}, [graph]
    while stack:
        for key, (dp, sub) in stack.pop().items():
            found.setdefault(key, dp)
            stack.append(sub)
    return list(found.values())


def apply_sharding(datapipe, num_of_instances, instance_id, sharding_group=None):
    """Tell every sharding pipe (``sharding_filter``) in the graph which share to keep.

    Args:
        datapipe: the last pipe.
        num_of_instances: how many consumers split the stream (e.g. DataLoader workers).
        instance_id: this consumer's index.

    Returns:
        ``datapipe``.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(apply_sharding(IterableWrapper(range(6)).sharding_filter(), 3, 1))
        [1, 4]
    """
    for dp in get_all_graph_pipes(traverse_dps(datapipe)):
        if callable(getattr(dp, "is_shardable", None)) and dp.is_shardable():
            dp.apply_sharding(num_of_instances, instance_id, sharding_group)
    return datapipe


def _shufflers(datapipe):
    return [dp for dp in get_all_graph_pipes(traverse_dps(datapipe))
            if callable(getattr(dp, "set_shuffle", None))
            and callable(getattr(dp, "set_seed", None))]


def apply_shuffle_settings(datapipe, shuffle=None):
    """Turn every shuffling pipe in the graph on or off (None leaves them).

    Args:
        datapipe: the last pipe.
        shuffle (bool, optional): True turns shuffling on, False off. Default: None.

    Returns:
        ``datapipe``.

    Example:
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> list(apply_shuffle_settings(IterableWrapper([1, 2, 3]).shuffle(), shuffle=False))
        [1, 2, 3]
    """
    if shuffle is not None:
        for dp in _shufflers(datapipe):
            dp.set_shuffle(shuffle)
    return datapipe


def apply_random_seed(datapipe, rng):
    """Seed every shuffling pipe in the graph from ``rng`` (an ember ``Generator``).

    Args:
        datapipe: the last pipe.
        rng (Generator): draws one seed per shuffling pipe.

    Returns:
        ``datapipe``.

    Example:
        >>> import ember
        >>> from ember.utils.data.datapipes.iter import IterableWrapper
        >>> dp = apply_random_seed(IterableWrapper(range(4)).shuffle(), ember.Generator())
        >>> sorted(dp)
        [0, 1, 2, 3]
    """
    from ... import empty, int64

    for dp in _shufflers(datapipe):
        dp.set_seed(int(empty((), dtype=int64).random_(generator=rng).item()))
    return datapipe


apply_shuffle_seed = apply_random_seed
