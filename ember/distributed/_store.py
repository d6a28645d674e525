"""Rendezvous stores: small key-value stores the processes of a group meet through.

A store carries a few short strings while a group forms (the MPI port name, a barrier
counter); it never carries tensors, which go through the engine (see NOTE [ Engine ] in
``_engine.py``). Three kinds, as in PyTorch:

- ``HashStore``: a dict behind a condition variable, for threads of one process.
- ``TCPStore``: the process with ``is_master=True`` serves a dict over TCP from a daemon
  thread; every process (the master too) talks to it as a client.
- ``FileStore``: an append-only file of records, read and written under ``fcntl.flock``.

Values are bytes; ``set`` accepts str or bytes; ``get`` waits up to the store's timeout
and then raises ``DistStoreError``.
"""

from __future__ import annotations

import datetime
import os
import socket
import socketserver
import struct
import sys
import threading
import time

__all__ = ["DistError", "DistStoreError", "FileStore", "HashStore", "PrefixStore",
           "QueueEmptyError", "Store", "TCPStore"]

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


# -- TCPStore ---------------------------------------------------------------------------------
# NOTE [ TCPStore wire format ]
# A message is a list of byte strings: a 4-byte big-endian count, then each string as a
# 4-byte length and its bytes. A request is [command, *arguments]; a reply is [status,
# *results] with status b"ok" or b"err". "wait" replies only when the keys are set (or its
# deadline passes), so a client blocks on one round trip instead of polling.

def _send_msg(sock, parts):
    out = [struct.pack(">I", len(parts))]
    for p in parts:
        out.append(struct.pack(">I", len(p)))
        out.append(p)
    sock.sendall(b"".join(out))


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("TCPStore: connection closed by the other side")
        buf += chunk
    return bytes(buf)


def _recv_msg(sock):
    (count,) = struct.unpack(">I", _recv_exact(sock, 4))
    parts = []
    for _ in range(count):
        (n,) = struct.unpack(">I", _recv_exact(sock, 4))
        parts.append(_recv_exact(sock, n))
    return parts


class _StoreHandler(socketserver.BaseRequestHandler):
    def handle(self):
        store: HashStore = self.server.store
        while True:
            try:
                req = _recv_msg(self.request)
            except (ConnectionError, OSError):
                return
            cmd, args = req[0], req[1:]
            try:
                if cmd == b"set":
                    store._set(args[0].decode(), args[1])
                    reply = []
                elif cmd == b"get":
                    v = store._get_nowait(args[0].decode())
                    reply = [] if v is None else [v]
                elif cmd == b"add":
                    reply = [str(store._add(args[0].decode(), int(args[1]))).encode()]
                elif cmd == b"cas":
                    reply = [store._compare_set(args[0].decode(), args[1], args[2])]
                elif cmd == b"del":
                    reply = [b"1" if store._delete(args[0].decode()) else b"0"]
                elif cmd == b"num":
                    reply = [str(store._num_keys()).encode()]
                elif cmd == b"keys":
                    reply = [k.encode() for k in store._list_keys()]
                elif cmd == b"queue":  # [op, key, value, seconds to wait or b"" for no wait]
                    deadline = time.monotonic() + float(args[3]) if args[3] else None
                    r = store._queue(args[0].decode(), args[1].decode(), args[2], deadline)
                    reply = [] if r is None else [r if isinstance(r, bytes) else
                                                  str(r).encode()]
                elif cmd == b"wait":
                    deadline = time.monotonic() + float(args[0])
                    store._wait_for([a.decode() for a in args[1:]], deadline)
                    reply = []
                else:
                    raise ValueError(f"unknown command {cmd!r}")
                _send_msg(self.request, [b"ok", *reply])
            except DistStoreError as e:
                kind = b"empty" if isinstance(e, QueueEmptyError) else b"err"
                _send_msg(self.request, [kind, str(e).encode()])
            except (ConnectionError, OSError):
                return


class _StoreServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class TCPStore(Store):
    """A store served over TCP by the process created with ``is_master=True``.

    Args:
        host_name: the address of the server.
        port: its port (0 with ``is_master=True``: pick a free one, see ``.port``).
        world_size: how many processes use the store (informational here).
        is_master: serve the store from this process.
        timeout: how long to wait for the server and for keys.
        wait_for_workers: accepted for compatibility.
        multi_tenant, master_listen_fd, use_libuv: accepted for compatibility.

    Example::

        >>> s = ember.distributed.TCPStore("127.0.0.1", 0, is_master=True)
        >>> s.set("k", b"v"); s.get("k")
        b'v'
    """

    def __init__(self, host_name: str, port: int, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self.host = host_name
        self.world_size = world_size
        self._use_libuv = bool(use_libuv)
        self._server = None
        if is_master:
            self._server = _StoreServer(("", int(port)), _StoreHandler, bind_and_activate=True)
            self._server.store = HashStore()
            # torch's TCPStore keeps one key for counting its workers: num_keys counts it
            self._server.store._set("init/", b"0")
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, name="ember-tcpstore",
                             daemon=True).start()
        self.port = int(port)
        self._lock = threading.Lock()
        self._sock = self._connect()

    def _connect(self):
        deadline = time.monotonic() + _seconds(self._timeout)
        delay = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port), timeout=5)
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as e:
                if time.monotonic() >= deadline:
                    raise DistStoreError(
                        f"TCPStore: could not connect to {self.host}:{self.port} within "
                        f"{_seconds(self._timeout)} s ({e}); is the master process running?"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _call(self, *parts):
        with self._lock:
            _send_msg(self._sock, list(parts))
            reply = _recv_msg(self._sock)
        if reply[0] != b"ok":
            raise (QueueEmptyError if reply[0] == b"empty" else DistStoreError)(
                reply[1].decode())
        return reply[1:]

    def _set(self, key, value):
        self._call(b"set", key.encode(), value)

    def _get_nowait(self, key):
        r = self._call(b"get", key.encode())
        return r[0] if r else None

    def _add(self, key, amount):
        return int(self._call(b"add", key.encode(), str(amount).encode())[0])

    def _compare_set(self, key, expected, desired):
        return self._call(b"cas", key.encode(), expected, desired)[0]

    def _delete(self, key):
        return self._call(b"del", key.encode())[0] == b"1"

    def _num_keys(self):
        return int(self._call(b"num")[0])

    def _list_keys(self):
        return [k.decode() for k in self._call(b"keys")]

    def _queue(self, op, key, value, deadline):
        wait = b"" if deadline is None else str(max(deadline - time.monotonic(), 0.0)).encode()
        r = self._call(b"queue", op.encode(), key.encode(), value, wait)
        if op == "len":
            return int(r[0])
        return r[0] if r else None

    @property
    def libuvBackend(self) -> bool:  # noqa: N802 -- torch's name
        """Whether the store was asked for the libuv server (ember serves with sockets)."""
        return self._use_libuv

    def barrier(self, key: str, world_size: int, timeout=None) -> None:
        """Block until ``world_size`` callers have called ``barrier`` with this ``key``
        (the server keeps only ``key`` afterwards, as torch's TCPStore).

        Args:
            key (str): names this barrier.
            world_size (int): how many callers must arrive.
            timeout (datetime.timedelta, optional): default: the store's timeout.
        """
        key = _key("barrier", key)
        if self._add(f"{key}/num_members", 1) >= int(world_size):
            self._set(key, b"1")
            self._delete(f"{key}/num_members")
        self.wait([key], timeout)

    def clone(self) -> TCPStore:
        """A new client connection to the same server."""
        return TCPStore(self.host, self.port, self.world_size, False, self._timeout,
                        use_libuv=self._use_libuv)

    def _wait_for(self, keys, deadline):
        left = max(deadline - time.monotonic(), 0.0)
        self._call(b"wait", str(left).encode(), *[k.encode() for k in keys])

    def close(self) -> None:
        """Close the connection, and stop the server if this process runs it."""
        try:
            self._sock.close()
        finally:
            if self._server is not None:
                # shutdown() waits for serve_forever to notice; once the interpreter is
                # finalizing, the daemon serving thread never runs again and it would wait
                # forever (a script that exits without closing its store hung).
                if not sys.is_finalizing():
                    self._server.shutdown()
                self._server.server_close()
                self._server = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass


class FileStore(Store):
    """A store in a file that processes on one machine (or a shared file system) open.

    Records are appended under an exclusive ``fcntl.flock``; a read replays the file.

    Args:
        file_name: the path of the file (created when missing).
        world_size: how many processes use the store (-1: unknown).

    Example::

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "store")
        >>> s = ember.distributed.FileStore(path, 1)
        >>> s.set("k", "v"); s.get("k")
        b'v'
    """

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = world_size
        open(self.path, "ab").close()
        # torch's FileStore counts the processes that opened the file in one key
        self._add("refcount/", 1)

    _extended_api = False

    def _list_keys(self):
        return list(self._locked(lambda f: self._replay(f), exclusive=False))

    def clone(self) -> FileStore:
        """A new store object on the same file."""
        return FileStore(self.path, self.world_size)

    def _locked(self, fn, exclusive=True):
        import fcntl

        with open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                f.seek(0)
                return fn(f)
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    @staticmethod
    def _replay(f) -> dict:
        data, raw, i = {}, f.read(), 0
        while i + 9 <= len(raw):
            op = raw[i:i + 1]
            klen, vlen = struct.unpack(">II", raw[i + 1:i + 9])
            key = raw[i + 9:i + 9 + klen].decode()
            value = raw[i + 9 + klen:i + 9 + klen + vlen]
            i += 9 + klen + vlen
            if op == b"s":
                data[key] = value
            else:
                data.pop(key, None)
        return data

    @staticmethod
    def _append(f, op, key, value=b""):
        k = key.encode()
        f.seek(0, os.SEEK_END)
        f.write(op + struct.pack(">II", len(k), len(value)) + k + value)
        f.flush()

    def _set(self, key, value):
        self._locked(lambda f: self._append(f, b"s", key, value))

    def _get_nowait(self, key):
        return self._locked(lambda f: self._replay(f).get(key), exclusive=False)

    def _add(self, key, amount):
        def op(f):
            n = int(self._replay(f).get(key, b"0")) + amount
            self._append(f, b"s", key, str(n).encode())
            return n
        return self._locked(op)

    def _compare_set(self, key, expected, desired):
        def op(f):
            current = self._replay(f).get(key)
            if (current is None and expected == b"") or current == expected:
                self._append(f, b"s", key, desired)
                return desired
            return expected if current is None else current
        return self._locked(op)

    def _delete(self, key):
        # PyTorch's FileStore appends a deletion record and reports True, present or not.
        self._locked(lambda f: self._append(f, b"d", key))
        return True

    def _num_keys(self):
        return self._locked(lambda f: len(self._replay(f)), exclusive=False)


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
