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

The interface, ``HashStore`` and ``PrefixStore`` are in ``_base.py``, ``TCPStore`` (with its
wire format) in ``_tcp.py``, ``FileStore`` in ``_file.py``.
"""

from ._base import DistError, DistStoreError, HashStore, PrefixStore, QueueEmptyError, Store
from ._file import FileStore
from ._tcp import TCPStore

__all__ = ["DistError", "DistStoreError", "FileStore", "HashStore", "PrefixStore",
           "QueueEmptyError", "Store", "TCPStore"]
