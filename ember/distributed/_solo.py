"""The engine of a one-process group, for installations without mpi4py.

NOTE [ A world of one ]
PyTorch users expect ``dist.is_available()`` to be True and ``init_process_group("gloo")``
with a world size of 1 to work wherever PyTorch is installed: training scripts run the
same code path single-process and launched (nanoGPT's ``RANK`` test aside, many call
``init_process_group`` unconditionally), and tests start a one-rank group. A group of one
process exchanges nothing, so it needs no communication engine: this module stands in for
the part of ``mpi4py.MPI`` that ember's process groups use, over exactly one rank. Every
collective is then a copy from the send buffer into the receive buffer (or nothing, in
place), and point-to-point messages to oneself wait in a mailbox until received.

``_engine.mpi()`` returns this module when mpi4py is not installed; ``_engine.require``
refuses a larger world there with an error naming ``pip install 'ember[distributed]'``
before any rendezvous starts. With mpi4py installed, a one-rank group keeps running on MPI
(``COMM_SELF``), so both installations see the same behaviour.
"""

from __future__ import annotations

import numpy as np

# datatypes and reduction ops: names only (a group of one never combines two values)
BYTE, INT, UINT, FLOAT, DOUBLE = "BYTE", "INT", "UINT", "FLOAT", "DOUBLE"
INT8_T, INT16_T, INT32_T, INT64_T = "INT8_T", "INT16_T", "INT32_T", "INT64_T"
UINT8_T, UINT16_T, UINT32_T, UINT64_T = "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T"
C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX = "C_FLOAT_COMPLEX", "C_DOUBLE_COMPLEX"
SUM, PROD, MIN, MAX = "SUM", "PROD", "MIN", "MAX"
BAND, BOR, BXOR, LAND, LOR, LXOR = "BAND", "BOR", "BXOR", "LAND", "LOR", "LXOR"
ANY_SOURCE = -1
ERRORS_RETURN = "ERRORS_RETURN"


class _InPlace:
    def __repr__(self):
        return "IN_PLACE"


IN_PLACE = _InPlace()


class Exception(RuntimeError):  # noqa: A001  (mpi4py's name, caught as MPI.Exception)
    """A failed operation (a group of one has no peer to lose, so it is never raised by
    the collectives; it exists because callers catch it)."""

    def Get_error_string(self) -> str:
        return str(self)


class Status:
    """Where a received message came from: always rank 0."""

    def Get_source(self) -> int:
        return 0


class Request:
    """A finished operation, or a receive waiting for a message to oneself."""

    def __init__(self, poll=None):
        self._poll = poll

    def Test(self, status=None) -> bool:
        if self._poll is not None and self._poll():
            self._poll = None
        return self._poll is None

    def Wait(self, status=None) -> None:
        if not self.Test():
            raise Exception("a receive from rank 0 (this process) waits for a message that "
                            "was never sent: it would block forever")

    @staticmethod
    def Testall(requests) -> bool:
        return all([r.Test() for r in requests])

    @staticmethod
    def Waitall(requests) -> None:
        for r in requests:
            r.Wait()


def _array(spec):
    """The flat array of an mpi4py buffer spec ``[array, type]`` or
    ``[array, (counts, displacements), type]``; with the (count, displacement) of rank 0."""
    a = spec[0].reshape(-1)
    if len(spec) == 3:
        counts, displs = spec[1]
        return a, int(counts[0]), int(displs[0])
    return a, a.size, 0


def _copy(send, recv):
    """Deliver rank 0's part of ``send`` into rank 0's part of ``recv``."""
    if send is IN_PLACE or send is None or recv is None or recv is IN_PLACE:
        return Request()
    s, n, at = _array(send)
    r, m, to = _array(recv)
    n = min(n, m)
    r[to:to + n] = s[at:at + n].view(r.dtype) if s.dtype != r.dtype else s[at:at + n]
    return Request()


class _Group:
    def Incl(self, ranks):
        if list(ranks) != [0]:
            raise ValueError(f"a world of one process has only rank 0, not {list(ranks)}")
        return self

    def Free(self) -> None:
        pass


class Comm:
    """A communicator over this process alone (the subset of ``mpi4py.MPI.Intracomm`` that
    ember's process groups call)."""

    def __init__(self):
        self._mailbox = {}  # tag -> list of byte strings sent to oneself

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def Get_group(self):
        return _Group()

    def Dup(self):
        return Comm()

    def Split(self, color=0, key=0):
        return Comm()

    def Create_group(self, group, tag=0):
        return Comm()

    def Set_errhandler(self, handler) -> None:
        pass

    def Free(self) -> None:
        self._mailbox.clear()

    # collectives: rank 0's part of the send buffer is the whole result
    def Iallreduce(self, send, recv, op):
        return _copy(send, recv)

    def Ireduce(self, send, recv, op, root=0):
        return _copy(send, recv)

    def Ireduce_scatter_block(self, send, recv, op):
        return _copy(send, recv)

    def Ibcast(self, buf, root=0):
        return Request()

    def Iallgather(self, send, recv):
        return _copy(send, recv)

    def Iallgatherv(self, send, recv):
        return _copy(send, recv)

    def Igather(self, send, recv, root=0):
        return _copy(send, recv)

    def Iscatter(self, send, recv, root=0):
        return _copy(send, recv)

    def Ialltoallv(self, send, recv):
        return _copy(send, recv)

    def Ibarrier(self):
        return Request()

    def allgather(self, obj):
        return [obj]

    def bcast(self, obj, root=0):
        return obj

    def barrier(self) -> None:
        pass

    # point to point: only with oneself
    def _check_peer(self, peer):
        if peer not in (0, ANY_SOURCE):
            raise ValueError(f"a world of one process has only rank 0, not {peer}")

    def Isend(self, buf, dest=0, tag=0):
        self._check_peer(dest)
        a, n, at = _array(buf)
        self._mailbox.setdefault(tag, []).append(a[at:at + n].tobytes())
        return Request()

    def Send(self, buf, dest=0, tag=0) -> None:
        self.Isend(buf, dest, tag)

    def Irecv(self, buf, source=ANY_SOURCE, tag=0):
        self._check_peer(source)
        a, n, at = _array(buf)

        def poll():
            queue = self._mailbox.get(tag)
            if not queue:
                return False
            data = np.frombuffer(queue.pop(0), dtype=a.dtype)
            a[at:at + data.size] = data[:n]
            return True

        return Request(poll)


COMM_SELF = Comm()
COMM_WORLD = COMM_SELF
