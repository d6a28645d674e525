"""The wire format of RPC messages: pickling (tensors' large buffers out of band) and
``_Wire``, one connection (NOTE [ RPC transport ] in ``_agent.py``)."""

from __future__ import annotations

import io
import mmap
import os
import pickle
import socket
import sys
import threading

import numpy as np


class _Pickler(pickle.Pickler):
    """Pickles ember's public functions by their public name: ``ember.add`` is a wrapper
    whose ``__module__``/``__qualname__`` name the kernel module, where pickle's lookup
    finds another object."""

    def reducer_override(self, obj):
        if callable(obj) and not isinstance(obj, type) and \
                str(getattr(obj, "__module__", "")).startswith("ember") and \
                not _found_by_name(obj):
            path = _public_names().get(id(obj))
            if path is not None:
                return _public_function, path
        return NotImplemented


def _found_by_name(obj):
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    target = mod
    for part in str(getattr(obj, "__qualname__", "")).split("."):
        target = getattr(target, part, None)
    return target is obj


_PUBLIC: dict = {}


def _public_names():
    if not _PUBLIC:
        import ember

        spaces = {"ember": ember, "ember.nn.functional": ember.nn.functional,
                  "ember.linalg": ember.linalg, "ember.fft": ember.fft,
                  "ember.special": ember.special}
        for mod_name, mod in spaces.items():
            for name in dir(mod):
                fn = getattr(mod, name, None)
                if callable(fn) and not isinstance(fn, type):
                    _PUBLIC.setdefault(id(fn), (mod_name, name))
        for name in dir(ember.Tensor):
            fn = ember.Tensor.__dict__.get(name)
            if callable(fn):
                _PUBLIC.setdefault(id(fn), ("ember.Tensor", name))
    return _PUBLIC


def _public_function(mod_name, name):
    import importlib

    head, _, tail = mod_name.partition(".Tensor")
    if mod_name == "ember.Tensor":
        return getattr(importlib.import_module("ember").Tensor, name)
    return getattr(importlib.import_module(head), name)


#: array buffers at least this large travel out of band, after their message, uncopied
_OUT_OF_BAND_BYTES = 1 << 16


def _dumps(obj):
    """(pickle bytes, the large contiguous buffers it refers to, out of band)."""
    buffers = []

    def out_of_band(pb):
        try:
            view = pb.raw()
        except BufferError:  # not contiguous: in band
            return True
        if view.nbytes < _OUT_OF_BAND_BYTES:
            return True
        buffers.append(view)
        return False

    f = io.BytesIO()
    _Pickler(f, protocol=5, buffer_callback=out_of_band).dump(obj)
    return f.getvalue(), buffers


def _loads(data, buffers=()):
    return pickle.loads(data, buffers=buffers)


def copy_by_pickling(obj):
    """``obj`` as a receiver would get it (a deep copy through the wire format)."""
    data, buffers = _dumps(obj)
    return _loads(data, [bytearray(b) for b in buffers])


# NOTE [ Receive buffers on small pages ]
# A large received buffer is fresh memory, and how it is first touched dominated a 64 MB
# call: receiving into ``np.empty`` (which NumPy marks for transparent huge pages, 4 MiB
# and up) cost the RPC worker's reading thread 220-320 ms of system time against 30-50 ms
# for a mapping of ordinary pages (measured with getrusage per thread on this loaded
# 2-core machine, where the kernel's THP ``defrag`` is ``madvise``: faulting huge pages may
# compact memory in the faulting thread; a bare two-process socket test did not show it,
# so it depends on the state of memory). A 64 MB echo took 3.8x PyTorch's (TensorPipe's
# buffers come from an allocator that does not ask for huge pages). So received buffers
# are anonymous mappings of ordinary pages, populated by the kernel in one call
# (``MAP_POPULATE`` where the platform has it: 16,384 separate faults cost more than the
# copy); the array keeps the mapping alive. 64 MB echoes interleaved in the same two
# processes, medians: ``np.empty`` 1,330 ms, a plain mapping 920 ms, a populated one
# 580 ms (load ~10 on 2 cores).

#: buffers from this size on are mapped (NumPy's threshold for asking for huge pages)
_MAPPED_BYTES = 1 << 22
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
#: a receive returns when all the bytes asked for arrived: the receiving thread does not
#: take the GIL back for each chunk (which a busy main thread makes wait up to 5 ms)
_WAITALL = getattr(socket, "MSG_WAITALL", 0)


def _receive_buffer(nbytes):
    """A writable, uninitialised array of ``nbytes`` bytes to receive into."""
    if nbytes < _MAPPED_BYTES or os.name != "posix":
        return np.empty(nbytes, dtype=np.uint8)
    return np.frombuffer(mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | _POPULATE),
                         dtype=np.uint8)


class _Wire:
    """One connection. A message is two frames of ``multiprocessing.connection`` (a header
    and the pickle), then the pickle's large buffers as the raw bytes the header announced,
    written from and read into place (NOTE [ RPC transport ])."""

    def __init__(self, conn):
        self.conn = conn
        self.sock = socket.socket(fileno=os.dup(conn.fileno()))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.lock = threading.Lock()

    def send(self, head, encoded):
        data, buffers = encoded
        header = pickle.dumps((head, [b.nbytes for b in buffers]), protocol=5)
        with self.lock:
            self.conn.send_bytes(header)
            self.conn.send_bytes(data)
            for b in buffers:
                self.sock.sendall(b)

    def recv(self):
        """(head, pickle bytes, buffers): read whole even when nobody wants it, so the
        stream stays in step."""
        head, sizes = pickle.loads(self.conn.recv_bytes())
        data = self.conn.recv_bytes()
        buffers = []
        for n in sizes:
            buf = _receive_buffer(n)
            view, got = memoryview(buf), 0
            while got < n:  # one call, unless a signal cuts it short
                k = self.sock.recv_into(view[got:], n - got, _WAITALL)
                if k == 0:
                    raise EOFError
                got += k
            buffers.append(buf)
        return head, data, buffers

    def close(self):
        for part in (self.sock, self.conn):
            try:
                part.close()
            except OSError:
                pass
