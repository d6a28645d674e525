"""The NCCL engine for CUDA tensors, through ``cupy.cuda.nccl``.

NOTE [ NCCL backend ]
``init_process_group("nccl")`` makes the usual MPI communicator (object collectives,
barriers and the cross-rank fingerprint checks run there, on the CPU) and, beside it, one
NCCL communicator: rank 0 draws a unique id with ``nccl.get_unique_id()`` and publishes it
in the rendezvous store (or broadcasts it over MPI under ``mpiexec``); every rank then
builds ``nccl.NcclCommunicator(world_size, uid, rank)`` on its current CUDA device. A
collective on CUDA tensors (``all_reduce``, ``broadcast``, ``reduce``,
``all_gather_into_tensor``/``all_gather``, ``reduce_scatter_tensor``, ``send``/``recv``) is
queued on the current CuPy stream, straight from and into the tensors' device buffers;
its ``Work`` records a CUDA event, so ``is_completed()`` polls the event and ``wait()``
synchronizes on it. AVG uses ``ncclAvg`` (NCCL >= 2.10); BAND/BOR/BXOR do not exist in
NCCL and raise, as in PyTorch.

Nothing here imports CuPy until a NCCL group is made (or ``is_nccl_available()`` asks),
so ``import ember.distributed`` stays light. Status: written against CuPy's documented
NCCL API; the machines of its session had no GPU, so only the parts that need none (the
dtype and op tables, the errors without CUDA) are tested.
"""

from __future__ import annotations

import importlib.util
import pickle
import time

import numpy as np

__all__ = ["available"]

# numpy dtype name -> attribute of cupy.cuda.nccl
_TYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
          "bfloat16": "NCCL_BFLOAT16", "int32": "NCCL_INT32", "int64": "NCCL_INT64",
          "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "uint32": "NCCL_UINT32",
          "uint64": "NCCL_UINT64", "bool": "NCCL_UINT8"}
# ReduceOp name -> attribute of cupy.cuda.nccl
_OPS = {"SUM": "NCCL_SUM", "PRODUCT": "NCCL_PROD", "MIN": "NCCL_MIN", "MAX": "NCCL_MAX",
        "AVG": "NCCL_AVG"}


def available() -> bool:
    """Whether CuPy with NCCL support is installed (imports CuPy when it is)."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        from cupy.cuda import nccl
    except Exception:  # noqa: BLE001 - a CuPy built without NCCL, or no CUDA driver
        return False
    return bool(getattr(nccl, "available", True))


def type_name(dtype) -> str:
    """The ``cupy.cuda.nccl`` datatype name for a NumPy dtype (bool travels as uint8).

    Raises:
        TypeError: NCCL has no such type (complex numbers).
    """
    name = str(np.dtype(dtype)) if not hasattr(dtype, "name") else dtype.name
    if name not in _TYPES:
        raise TypeError(f"NCCL has no datatype for {name}")
    return _TYPES[name]


def op_name(op) -> str:
    """The ``cupy.cuda.nccl`` reduction name for a ``ReduceOp``.

    Raises:
        ValueError: NCCL cannot reduce with it (the bitwise ops).
    """
    if op.name not in _OPS:
        raise ValueError(f"Cannot use ReduceOp.{op.name} with NCCL")
    return _OPS[op.name]


def _nccl():
    from cupy.cuda import nccl

    return nccl


class NcclComm:
    """One NCCL communicator over the ranks of a process group (NOTE [ NCCL backend ])."""

    def __init__(self, store, mpi_comm, rank, world_size, timeout_s):
        nccl = _nccl()
        key = "ember_nccl_uid"
        if store is None:  # mpiexec: share the id over MPI
            uid = nccl.get_unique_id() if rank == 0 else None
            uid = mpi_comm.bcast(uid, root=0)
        elif rank == 0:
            uid = nccl.get_unique_id()
            store.set(key, pickle.dumps(uid))
        else:
            store.wait([key], timeout_s)
            uid = pickle.loads(store.get(key))
        self.comm = nccl.NcclCommunicator(world_size, uid, rank)
        self.rank, self.size = rank, world_size

    # -- one operation ----------------------------------------------------------------------

    @staticmethod
    def _buffer(t):
        a = t._data
        if not a.flags.c_contiguous:
            raise RuntimeError("NCCL collectives need contiguous CUDA tensors")
        return a

    @staticmethod
    def _stream():
        import cupy

        return cupy.cuda.get_current_stream()

    def _work(self, name, outputs, finish=None):
        import cupy

        event = cupy.cuda.Event(disable_timing=True)
        event.record(self._stream())
        return NcclWork(event, outputs, finish, name)

    def all_reduce(self, t, op):
        nccl, a = _nccl(), self._buffer(t)
        self.comm.allReduce(a.data.ptr, a.data.ptr, a.size, getattr(nccl, type_name(a.dtype)),
                            getattr(nccl, op_name(op)), self._stream().ptr)
        return self._work("allreduce", [t])

    def broadcast(self, t, root):
        nccl, a = _nccl(), self._buffer(t)
        self.comm.broadcast(a.data.ptr, a.data.ptr, a.size, getattr(nccl, type_name(a.dtype)),
                            root, self._stream().ptr)
        return self._work("broadcast", [t])

    def reduce(self, t, op, root):
        nccl, a = _nccl(), self._buffer(t)
        self.comm.reduce(a.data.ptr, a.data.ptr, a.size, getattr(nccl, type_name(a.dtype)),
                         getattr(nccl, op_name(op)), root, self._stream().ptr)
        return self._work("reduce", [t])

    def all_gather(self, out, inp):
        nccl, o, i = _nccl(), self._buffer(out), self._buffer(inp)
        self.comm.allGather(i.data.ptr, o.data.ptr, i.size, getattr(nccl, type_name(i.dtype)),
                            self._stream().ptr)
        return self._work("allgather", [out])

    def reduce_scatter(self, out, inp, op):
        nccl, o, i = _nccl(), self._buffer(out), self._buffer(inp)
        self.comm.reduceScatter(i.data.ptr, o.data.ptr, o.size,
                                getattr(nccl, type_name(o.dtype)), getattr(nccl, op_name(op)),
                                self._stream().ptr)
        return self._work("reduce_scatter", [out])

    def send(self, t, peer):
        nccl, a = _nccl(), self._buffer(t)
        self.comm.send(a.data.ptr, a.size, getattr(nccl, type_name(a.dtype)), peer,
                       self._stream().ptr)
        return self._work("send", [t])

    def recv(self, t, peer):
        nccl, a = _nccl(), self._buffer(t)
        self.comm.recv(a.data.ptr, a.size, getattr(nccl, type_name(a.dtype)), peer,
                       self._stream().ptr)
        return self._work("recv", [t])

    def destroy(self):
        self.comm.destroy()


class NcclWork:
    """The ``Work`` of a NCCL operation: a CUDA event recorded after it."""

    def __init__(self, event, outputs, finish, name, timeout=None):
        self._event, self._outputs, self._finish, self._name = event, outputs, finish, name
        self._timeout = timeout
        self._done = False

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                self._finish()
            for t in self._outputs:
                t._bump()

    def is_completed(self) -> bool:
        if not self._done and self._event.done:
            self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        limit = timeout if timeout is not None else self._timeout
        if limit is not None:
            limit = getattr(limit, "total_seconds", lambda: limit)()
            deadline = time.monotonic() + limit
            while not self._event.done:
                if time.monotonic() > deadline:
                    from ._group import DistBackendError

                    raise DistBackendError(f"{self._name}: NCCL operation timed out after "
                                           f"{limit:.1f} s")
                time.sleep(0.0001)
        self._event.synchronize()
        self._complete()
        return True

    def result(self) -> list:
        return self._outputs

    def synchronize(self) -> None:
        self.wait()

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def source_rank(self) -> int:
        return getattr(self, "_value", -1)

    def get_future(self):
        from ._future import from_work

        return from_work(self, self._outputs)
