"""``TCPStore``: a store served over TCP by one process (see NOTE [ TCPStore wire format ])."""

from __future__ import annotations

import socket
import socketserver
import struct
import sys
import threading
import time

from ._base import (_DEFAULT_TIMEOUT, DistStoreError, HashStore, QueueEmptyError, Store, _key,
                    _seconds)

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
