"""An iterator over ``n`` epochs of a per-epoch iterator.

Example::

    >>> from ember.distributed.elastic.utils.data.cycling_iterator import CyclingIterator
    >>> list(CyclingIterator(2, lambda epoch: iter("ab")))
    ['a', 'b', 'a', 'b']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

__all__ = ["CyclingIterator"]


class CyclingIterator:
    """Yields the items of ``generator_fn(epoch)`` for epoch ``start_epoch`` .. ``n - 1``.

    Args:
        n (int): the number of epochs.
        generator_fn (callable): epoch -> an iterator over that epoch's items.
        start_epoch (int): the first epoch (to resume).

    Example::

        >>> list(CyclingIterator(3, lambda e: iter([e * 10]), start_epoch=1))
        [10, 20]
    """

    def __init__(self, n: int, generator_fn: Callable[[int], Iterator], start_epoch: int = 0):
        self._n = n
        self._epoch = start_epoch
        self._generator_fn = generator_fn
        self._iter = generator_fn(self._epoch)

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            try:
                return next(self._iter)
            except StopIteration:
                if self._epoch >= self._n - 1:
                    raise
                self._epoch += 1
                self._iter = self._generator_fn(self._epoch)
