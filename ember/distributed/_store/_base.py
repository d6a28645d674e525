"""The store interface (``Store``), its errors, ``HashStore`` and ``PrefixStore``."""

from __future__ import annotations

import datetime
import threading
import time

_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


class DistError(RuntimeError):
    """An error of the distributed package (PyTorch's ``torch.distributed.DistError``).

    Example::

        >>> issubclass(ember.distributed.DistError, RuntimeError)
        True
    """


class DistStoreError(DistError):
    """A store operation failed or timed out (``torch.distributed.DistStoreError``).

    Example::

        >>> issubclass(ember.distributed.DistStoreError, ember.distributed.DistError)
        True
    """


class QueueEmptyError(DistStoreError):
    """A store queue had nothing to pop (a ``DistStoreError``).

    Example::

        >>> issubclass(ember.distributed.QueueEmptyError, ember.distributed.DistStoreError)
        True
    """


def _key(op: str, key) -> str:
    # torch's stores take keys as str only (their bindings refuse ints and bytes).
    if not isinstance(key, str):
        raise TypeError(f"Store.{op}: expected a key of type str, got {type(key).__name__}")
    return key


def _keys(op: str, keys) -> list:
    if isinstance(keys, str) or not isinstance(keys, (list, tuple)):
        raise TypeError(f"Store.{op}: expected a list of str keys, got {type(keys).__name__}")
    return [_key(op, k) for k in keys]


def _as_bytes(value) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple)):  # torch accepts a list of ints as bytes
        return bytes(value)
    raise TypeError(f"Store: expected str or bytes as value, got {type(value).__name__}")


def _seconds(timeout) -> float:
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


class Store:
    """The store interface: ``set``, ``get``, ``add``, ``wait``, ``check``, ``delete_key``.

    Subclasses implement ``_set``, ``_get_nowait`` (None when absent), ``_add``,
    ``_compare_set``, ``_delete`` and ``_num_keys``; waiting is done here by polling, or
    by the subclass's ``_wait_for`` when it can block efficiently.

    Args:
        timeout (datetime.timedelta): how long ``get``/``wait`` wait for a key. Default: 300 s.

    Example::

        >>> s = ember.distributed.HashStore()
        >>> s.set("k", "v"); s.get("k")
        b'v'
    """

    def __init__(self, timeout=_DEFAULT_TIMEOUT):
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) else \
            datetime.timedelta(seconds=float(timeout))

    @property
    def timeout(self) -> datetime.timedelta:
        """How long ``get`` and ``wait`` wait for a key before raising DistStoreError."""
        return self._timeout

    def set_timeout(self, timeout) -> None:
        """Set the wait timeout (a ``datetime.timedelta`` or seconds)."""
        self._timeout = timeout if isinstance(timeout, datetime.timedelta) else \
            datetime.timedelta(seconds=float(timeout))

    def set(self, key: str, value) -> None:
        """Store ``value`` (str or bytes) under ``key``."""
        self._set(_key("set", key), _as_bytes(value))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the timeout for it to be set."""
        key = _key("get", key)
        self.wait([key])
        value = self._get_nowait(key)
        if value is None:
            raise DistStoreError(f"Store: key {key!r} was deleted while waiting for it")
        return value

    def add(self, key: str, amount: int) -> int:
        """Add ``amount`` to the integer stored at ``key`` (0 when absent); the new value."""
        if not isinstance(amount, int):
            raise TypeError(f"Store.add: expected an int amount, got {type(amount).__name__}")
        return self._add(_key("add", key), int(amount))

    def append(self, key: str, value) -> None:
        """Append ``value`` to the bytes stored at ``key`` (set it when absent)."""
        key, value = _key("append", key), _as_bytes(value)
        while True:  # a compare-and-set loop keeps concurrent appends from losing data
            current = self._get_nowait(key)
            expected = b"" if current is None else current
            if self._compare_set(key, expected, expected + value) == expected + value:
                return

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        """Set ``key`` to ``desired_value`` if it holds ``expected_value``; the value after.

        An absent key with an empty ``expected_value`` is set, as in PyTorch.
        """
        return self._compare_set(_key("compare_set", key), _as_bytes(expected_value),
                                 _as_bytes(desired_value))

    def check(self, keys) -> bool:
        """Whether every key in ``keys`` is set (does not wait)."""
        return all(self._get_nowait(k) is not None for k in _keys("check", keys))

    def wait(self, keys, timeout=None) -> None:
        """Wait until every key in ``keys`` is set; DistStoreError after ``timeout``."""
        keys = _keys("wait", keys)
        limit = _seconds(self._timeout if timeout is None else timeout)
        deadline = time.monotonic() + limit
        self._wait_for(keys, deadline)

    def delete_key(self, key: str) -> bool:
        """Remove ``key``; whether it was there."""
        return self._delete(_key("delete_key", key))

    def num_keys(self) -> int:
        """How many keys are set (TCPStore and FileStore count their one bookkeeping key,
        as PyTorch's do)."""
        return self._num_keys()

    def list_keys(self) -> list:
        """The keys set in the store (bookkeeping keys left out)."""
        return [k for k in self._list_keys() if k not in _HIDDEN_KEYS]

    def multi_set(self, keys, values) -> None:
        """``set`` each key to its value."""
        for k, v in zip(_keys("multi_set", keys), values):
            self.set(k, v)

    def multi_get(self, keys) -> list:
        """``get`` each key."""
        return [self.get(k) for k in _keys("multi_get", keys)]

    def has_extended_api(self) -> bool:
        """Whether the store implements ``append``, ``multi_get``/``multi_set`` natively
        (False for FileStore, as PyTorch's; every ember store supports the calls)."""
        return self._extended_api

    def barrier(self, key: str, world_size: int, timeout=None) -> None:
        """Block until ``world_size`` callers have called ``barrier`` with this ``key``.

        Args:
            key (str): names this barrier.
            world_size (int): how many callers must arrive.
            timeout (datetime.timedelta, optional): default: the store's timeout.
        """
        key = _key("barrier", key)
        if self._add(f"{key}/num_members", 1) >= int(world_size):
            self._set(f"{key}/last_member", b"1")
        self.wait([f"{key}/last_member"], timeout)

    def clone(self) -> Store:
        """A new store object on the same data (for use from another thread)."""
        import copy

        return copy.copy(self)

    def queue_push(self, key: str, value) -> None:
        """Append ``value`` to the queue named ``key`` (queues are apart from keys)."""
        self._queue("push", _key("queue_push", key), _as_bytes(value), None)

    def queue_pop(self, key: str, block: bool = True) -> bytes:
        """Remove and return the oldest value of queue ``key``.

        Args:
            key (str): the queue.
            block (bool): wait up to the timeout for a value (DistStoreError after it);
                with False, an empty queue raises ``QueueEmptyError`` at once.
        """
        key = _key("queue_pop", key)
        deadline = time.monotonic() + _seconds(self._timeout) if block else None
        return self._queue("pop", key, b"", deadline)

    def queue_len(self, key: str) -> int:
        """How many values queue ``key`` holds."""
        return self._queue("len", _key("queue_len", key), b"", None)

    _extended_api = True

    def _queue(self, op, key, value, deadline):
        raise NotImplementedError("queue support is not implemented.")

    def _list_keys(self):
        raise NotImplementedError(f"{type(self).__name__} cannot list its keys")

    def _wait_for(self, keys, deadline):
        delay = 0.001
        while not all(self._get_nowait(k) is not None for k in keys):
            if time.monotonic() >= deadline:
                raise DistStoreError("Wait timeout")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


#: bookkeeping keys torch's TCPStore and FileStore keep (counted by num_keys, not listed)
_HIDDEN_KEYS = ("init/", "refcount/")


class HashStore(Store):
    """A store in this process's memory, shared by its threads.

    Example::

        >>> s = ember.distributed.HashStore()
        >>> s.add("n", 2), s.add("n", 3)
        (2, 5)
    """

    def __init__(self):
        super().__init__()
        self._data: dict[str, bytes] = {}
        self._queues: dict[str, list] = {}
        self._cv = threading.Condition()

    def _set(self, key, value):
        with self._cv:
            self._data[key] = value
            self._cv.notify_all()

    def _get_nowait(self, key):
        with self._cv:
            return self._data.get(key)

    def _add(self, key, amount):
        with self._cv:
            n = int(self._data.get(key, b"0")) + amount
            self._data[key] = str(n).encode()
            self._cv.notify_all()
            return n

    def _compare_set(self, key, expected, desired):
        with self._cv:
            current = self._data.get(key)
            if (current is None and expected == b"") or current == expected:
                self._data[key] = desired
                self._cv.notify_all()
                return desired
            return expected if current is None else current

    def _delete(self, key):
        with self._cv:
            return self._data.pop(key, None) is not None

    def _num_keys(self):
        with self._cv:
            return len(self._data)

    def _list_keys(self):
        with self._cv:
            return list(self._data)

    def _queue(self, op, key, value, deadline):
        with self._cv:
            q = self._queues.setdefault(key, [])
            if op == "push":
                q.append(value)
                self._cv.notify_all()
                return None
            if op == "len":
                return len(q)
            while not q:
                if deadline is None:
                    raise QueueEmptyError("queue is empty")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistStoreError("Wait timeout")
                self._cv.wait(left)
            return q.pop(0)

    def _wait_for(self, keys, deadline):
        with self._cv:
            while not all(k in self._data for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistStoreError("Wait timeout")
                self._cv.wait(left)


class PrefixStore(Store):
    """A view of ``store`` whose keys all start with ``prefix + "/"``.

    Args:
        prefix: the prefix.
        store: the underlying store.

    Example::

        >>> base = ember.distributed.HashStore()
        >>> ember.distributed.PrefixStore("a", base).set("k", "v"); base.get("a/k")
        b'v'
    """

    def __init__(self, prefix: str, store: Store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key):
        return f"{self.prefix}/{key}"

    def _set(self, key, value):
        self.underlying_store._set(self._k(key), value)

    def _get_nowait(self, key):
        return self.underlying_store._get_nowait(self._k(key))

    def _add(self, key, amount):
        return self.underlying_store._add(self._k(key), amount)

    def _compare_set(self, key, expected, desired):
        return self.underlying_store._compare_set(self._k(key), expected, desired)

    def _delete(self, key):
        return self.underlying_store._delete(self._k(key))

    def _num_keys(self):
        return self.underlying_store._num_keys()

    def _list_keys(self):
        head = self.prefix + "/"
        return [k[len(head):] for k in self.underlying_store._list_keys() if k.startswith(head)]

    def _queue(self, op, key, value, deadline):
        return self.underlying_store._queue(op, self._k(key), value, deadline)

    def has_extended_api(self) -> bool:
        """Whether the underlying store has the extended API."""
        return self.underlying_store.has_extended_api()

    def clone(self) -> PrefixStore:
        """A prefix store over a clone of the underlying store."""
        return PrefixStore(self.prefix, self.underlying_store.clone())

    def _wait_for(self, keys, deadline):
        self.underlying_store._wait_for([self._k(k) for k in keys], deadline)
