"""Shared-memory storages.

NOTE [ Sharing storages ]
A storage is moved to shared memory by allocating a buffer every process can map, copying
the bytes in, and re-pointing every live tensor that views the old buffer at the same
offset and strides of the new one (NumPy arrays cannot change buffers, so the tensors'
``_data`` arrays are replaced). Two strategies, as in PyTorch:

- ``file_descriptor`` (the default): an anonymous ``memfd`` whose descriptor travels over
  the multiprocessing connection. The memory lives exactly as long as some process holds
  the descriptor or a mapping: nothing can leak when a process dies.
- ``file_system``: a named file in /dev/shm, unlinked by the process that created it when
  its last local user is gone (and at interpreter exit).

Each shared storage gets a process-independent token, so a receiver that gets the same
storage twice maps it once and the tensors alias as they did in the sender.
"""

from __future__ import annotations

import atexit
import gc
import sys
import itertools
import mmap
import os
import weakref

import numpy as np

from .._core.storage import _root
from .._core.tensor import Tensor, wrap

_strategy = ["file_descriptor"]
_STRATEGIES = ("file_descriptor", "file_system")

# id(root array) -> (weakref to it, SharedInfo): the shared storages of this process (NumPy
# arrays are not hashable, so they are keyed by id and checked by identity)
_shared: dict = {}
# token -> weakref to the root array (storages received from other processes)
_received: dict = {}
_counter = itertools.count()
_created_files: set = set()


def get_sharing_strategy():
    """How tensors are shared between processes: ``"file_descriptor"`` (the default: an
    anonymous file, passed as a descriptor) or ``"file_system"`` (a named file).

    Returns:
        str: the current strategy.

    Example:
        >>> ember.multiprocessing.get_sharing_strategy()
        'file_descriptor'
    """
    return _strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose how tensors are shared between processes (see ``get_sharing_strategy``).

    Args:
        new_strategy (str): one of ``get_all_sharing_strategies()``.

    Returns:
        None.

    Example:
        >>> ember.multiprocessing.set_sharing_strategy("file_system")
        >>> ember.multiprocessing.get_sharing_strategy()
        'file_system'
        >>> ember.multiprocessing.set_sharing_strategy("file_descriptor")
    """
    if new_strategy not in _STRATEGIES:
        raise RuntimeError(f"Sharing strategy {new_strategy!r} is not supported; choose one "
                           f"of {_STRATEGIES}")
    _strategy[0] = new_strategy


def get_all_sharing_strategies():
    """The sharing strategies this system supports.

    Returns:
        set of str: the strategy names.

    Example:
        >>> sorted(ember.multiprocessing.get_all_sharing_strategies())
        ['file_descriptor', 'file_system']
    """
    return set(_STRATEGIES)


class SharedInfo:
    """How a shared buffer can be reopened elsewhere."""

    __slots__ = ("token", "nbytes", "fd", "path", "sent", "__weakref__")

    def __init__(self, token, nbytes, fd=None, path=None):
        self.token, self.nbytes, self.fd, self.path = token, nbytes, fd, path
        self.sent = False


def _new_token():
    return f"{os.getpid()}-{next(_counter)}-{os.urandom(4).hex()}"


def _map_fd(fd, nbytes):
    mm = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    return np.frombuffer(mm, dtype=np.uint8)


def _allocate(nbytes, for_sending=False):
    """A fresh shared uint8 buffer of ``nbytes`` and its SharedInfo. A buffer made
    ``for_sending`` (a worker's batch) keeps its file even after the last local user dies:
    queues pickle in a background thread, so the sender may drop it before it is sent."""
    token = _new_token()
    if _strategy[0] == "file_descriptor":
        fd = os.memfd_create(f"ember-{token}", os.MFD_CLOEXEC)
        try:
            # reserve the pages now: a full /dev/shm fails here, not with SIGBUS later
            os.posix_fallocate(fd, 0, nbytes)
        except OSError:
            os.ftruncate(fd, nbytes)
        arr = _map_fd(fd, nbytes)
        info = SharedInfo(token, nbytes, fd=fd)
        weakref.finalize(arr, os.close, fd)
    else:
        path = f"/dev/shm/ember_{token}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, nbytes)
            except OSError:
                os.ftruncate(fd, nbytes)
            arr = _map_fd(fd, nbytes)
        finally:
            os.close(fd)
        info = SharedInfo(token, nbytes, path=path)
        _created_files.add(path)
        # a file that was sent is unlinked by its receiver once mapped (the sender may well
        # drop its tensor first); one never sent is unlinked when its last user here dies.
        # Files left by a killed process are swept by the others (sweep_dead_files).
        if not for_sending:
            weakref.finalize(arr, _unlink_unsent, path, info)
    _register(arr, info)
    return arr, info


def _register(arr, info):
    key = id(arr)
    _shared[key] = (weakref.ref(arr, lambda _r: _shared.pop(key, None)), info)


def _unlink(path):
    _created_files.discard(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _unlink_unsent(path, info):
    if not info.sent:
        _unlink(path)


def sweep_dead_files():
    """Remove /dev/shm files of the file_system strategy whose creator has died (a killed
    worker cannot clean up after itself)."""
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for name in names:
        if not name.startswith("ember_"):
            continue
        try:
            pid = int(name[len("ember_"):].split("-", 1)[0])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _unlink(os.path.join("/dev/shm", name))
        except PermissionError:
            pass


@atexit.register
def _cleanup_files():
    for path in list(_created_files):
        _unlink(path)
    sweep_dead_files()


def shared_info(root):
    entry = _shared.get(id(root))
    if entry is None or entry[0]() is not root:
        return None
    return entry[1]


def is_shared(root) -> bool:
    return shared_info(root) is not None


# NOTE [ A heap scan beside other threads ]
# ``gc.get_objects()`` returns a list holding a reference to every tracked object, among
# them a tuple another thread may still be building from an iterator: CPython grows such a
# tuple in place, which it refuses once anything else refers to it, and that thread then
# fails with "SystemError: Objects/tupleobject.c:927: bad argument to internal function".
# It happened: a DataLoader worker's queue thread pickled a batch (``reduce_tensor`` ->
# ``share_storage`` -> ``_views_of``) while the worker's main thread collated the next one
# (tests/multiprocessing/test_share_beside_threads.py reproduces it in seconds). Raising
# the interpreter's switch interval around the scan does not keep a thread already waiting
# for the GIL out. So the scan is skipped where it cannot find anything: when nothing but
# the tensor itself (and ``share_storage``'s own locals) refers to the storage's buffer, no
# view of it exists -- a batch a collate function just made, the common case. Storages with
# other holders (views, saved tensors) keep the scan, and with it that rare risk.
def _no_other_holders(t, a, root):
    """Whether only ``t`` holds ``root`` (``a`` being ``t._data``), counted by references:
    ``t._data``, ``share_storage``'s locals ``a`` and ``root``, this function's parameters
    ``a`` and ``root`` and ``getrefcount``'s argument -- six. (Data that is a view of its
    root keeps the scan: the view's tensor may hold its root elsewhere too.) A count above
    that, from a view's ``base``, another tensor or anything else, means the scan."""
    return a is root and t._data is a and sys.getrefcount(root) <= _OWN_REFERENCES


#: the references to a tensor's data that ``share_storage`` and ``_no_other_holders`` make
#: themselves, ``t._data`` included
_OWN_REFERENCES = 6


def _views_of(root):
    """Live tensors whose data lies in ``root``'s buffer (a heap scan: sharing is rare)."""
    out = []
    for obj in gc.get_objects():
        # the type, not isinstance: isinstance reads ``__class__``, which some objects
        # (deprecation proxies) answer with a warning
        if issubclass(type(obj), Tensor):
            d = getattr(obj, "_data", None)
            if type(d) is np.ndarray and (d is root or _root(d) is root):
                out.append(obj)
    return out


def share_storage(t):
    """Move ``t``'s storage to shared memory (NOTE [ Sharing storages ]); idempotent."""
    a = t._data
    if type(a) is not np.ndarray:
        return t  # CUDA tensors are shared through CUDA IPC, not this path
    root = _root(a)
    if is_shared(root):
        return t
    alone = _no_other_holders(t, a, root)   # (NOTE [ A heap scan beside other threads ])
    nbytes = root.nbytes
    if nbytes == 0:
        return t
    buf, _ = _allocate(nbytes)
    flat_src = np.ndarray((nbytes,), dtype=np.uint8, buffer=root) if root.flags.c_contiguous \
        or root.flags.f_contiguous else None
    if flat_src is None:
        raise RuntimeError("share_memory_: the storage's buffer is not contiguous")
    buf[:] = flat_src
    base_ptr = root.__array_interface__["data"][0]
    for view in ([t] if alone else _views_of(root)):
        d = view._data
        offset = d.__array_interface__["data"][0] - base_ptr
        view._data = np.ndarray(d.shape, dtype=d.dtype, buffer=buf, offset=offset,
                                strides=d.strides)
    return t


def rebuild_buffer(info_token, nbytes, fd=None, path=None):
    """The receiver's side: map a shared buffer once per token."""
    ref = _received.get(info_token)
    arr = ref() if ref is not None else None
    if arr is not None:
        if fd is not None:
            os.close(fd)
        return arr
    if fd is not None:
        arr = _map_fd(fd, nbytes)
        info = SharedInfo(info_token, nbytes, fd=fd)
        weakref.finalize(arr, os.close, fd)
    else:
        fd2 = os.open(path, os.O_RDWR)
        try:
            arr = _map_fd(fd2, nbytes)
        finally:
            os.close(fd2)
        _unlink(path)  # mapped: the memory now lives as long as the mappings
        info = SharedInfo(info_token, nbytes, path=path)
    _register(arr, info)
    _received[info_token] = weakref.ref(arr, lambda _r, k=info_token: _received.pop(k, None))
    return arr


def new_shared(shape, np_dtype):
    """A fresh tensor of ``shape`` whose storage is shared from birth (no copy, no scan)."""
    nbytes = int(np.prod(shape)) * np.dtype(np_dtype).itemsize
    if nbytes == 0:
        return wrap(np.empty(shape, np_dtype))
    buf, _ = _allocate(nbytes, for_sending=True)
    return wrap(np.ndarray(shape, dtype=np_dtype, buffer=buf))
