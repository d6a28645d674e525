"""Gathering values and waiting for each other through a store (what agents and scripts
do with the store a launcher gives them; ``torch.distributed.elastic.utils.store``).

Keys are written once and never deleted: use a new ``key_prefix`` for each exchange.

Example::

    >>> from ember.distributed import HashStore
    >>> from ember.distributed.elastic.utils.store import synchronize
    >>> synchronize(HashStore(), b"hi", rank=0, world_size=1, key_prefix="x/")
    [b'hi']
"""

from __future__ import annotations

import datetime
from contextlib import contextmanager

__all__ = ["barrier", "get_all", "store_timeout", "synchronize"]

_NUM_MEMBERS = "/num_members"
_LAST_MEMBER_CHECKIN = "/last_member"


@contextmanager
def store_timeout(store, timeout: float):
    """Set the store's timeout to ``timeout`` seconds inside the block, then restore it.

    Args:
        store: the store.
        timeout (float): seconds.

    Example::

        >>> from ember.distributed import HashStore
        >>> s = HashStore()
        >>> with store_timeout(s, 5):
        ...     s.timeout.total_seconds()
        5.0
    """
    old = store.timeout
    store.set_timeout(datetime.timedelta(seconds=timeout))
    try:
        yield
    finally:
        store.set_timeout(old)


def _barrier_nonblocking(store, world_size: int, key_prefix: str) -> str:
    last = key_prefix + _LAST_MEMBER_CHECKIN
    if store.add(key_prefix + _NUM_MEMBERS, 1) == world_size:
        store.set(last, "<val_ignored>")
    return last


def get_all(store, rank: int, prefix: str, world_size: int) -> list[bytes]:
    """The values of keys ``{prefix}0`` .. ``{prefix}{world_size-1}`` (waiting for each);
    rank 0 then waits until every rank has read them, so the caller that serves the
    store does not leave first.

    Args:
        store: the store.
        rank (int): this caller's rank.
        prefix (str): the keys' prefix.
        world_size (int): how many keys (and callers).

    Returns:
        list[bytes]

    Example::

        >>> from ember.distributed import HashStore
        >>> s = HashStore(); s.set("k0", "a")
        >>> get_all(s, 0, "k", 1)
        [b'a']
    """
    values = store.multi_get([f"{prefix}{i}" for i in range(world_size)])
    last = _barrier_nonblocking(store, world_size, f"{prefix}/finished")
    if rank == 0:
        store.wait([last])
    return values


def synchronize(store, data: bytes, rank: int, world_size: int, key_prefix: str,
                timeout: float = 300) -> list[bytes]:
    """Publish ``data`` as this rank's and return every rank's, in rank order.

    Args:
        store: the store.
        data (bytes): this rank's value.
        rank (int): this caller's rank.
        world_size (int): how many callers.
        key_prefix (str): the keys' prefix.
        timeout (float): seconds to wait for the others.

    Returns:
        list[bytes]

    Raises:
        DistStoreError: a rank did not publish within ``timeout``.

    Example::

        >>> from ember.distributed import HashStore
        >>> synchronize(HashStore(), b"x", 0, 1, "p/")
        [b'x']
    """
    with store_timeout(store, timeout):
        store.set(f"{key_prefix}{rank}", data)
        return get_all(store, rank, key_prefix, world_size)


def barrier(store, world_size: int, key_prefix: str, barrier_timeout: float = 300,
            rank: int | None = None, rank_tracing_decoder=None,
            trace_timeout: float = 10) -> None:
    """Wait until ``world_size`` callers reached the barrier named ``key_prefix``.

    Args:
        store: the store.
        world_size (int): how many callers.
        key_prefix (str): the barrier's name (once per name).
        barrier_timeout (float): seconds to wait.
        rank (int, optional): this caller's rank (for the timeout message).
        rank_tracing_decoder (callable, optional): rank -> a description (needs ``rank``).
        trace_timeout (float): accepted for PyTorch's signature.

    Raises:
        DistStoreError: the others did not arrive within ``barrier_timeout``.
        AssertionError: ``rank_tracing_decoder`` without ``rank``.

    Example::

        >>> from ember.distributed import HashStore
        >>> barrier(HashStore(), 1, "b")
    """
    if rank is None and rank_tracing_decoder is not None:
        raise AssertionError("Tracing requires rank information")
    with store_timeout(store, barrier_timeout):
        last = _barrier_nonblocking(store, world_size, key_prefix)
        try:
            store.wait([last])
        except Exception as e:
            from ..._store import DistStoreError

            arrived = store.add(key_prefix + _NUM_MEMBERS, 0)
            who = "" if rank is None else f" (rank {rank})"
            raise DistStoreError(f"barrier {key_prefix!r}{who}: {arrived} of {world_size} "
                                 f"arrived within {barrier_timeout} s") from e
