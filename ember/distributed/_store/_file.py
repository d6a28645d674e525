"""``FileStore``: a store in a file, appended to under ``fcntl.flock``."""

from __future__ import annotations

import os
import struct

from ._base import Store


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
