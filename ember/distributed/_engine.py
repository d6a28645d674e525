"""The communication engine under ember's process groups: MPI, through mpi4py.

NOTE [ Engine ]
Collectives run on MPI (mpi4py with the ``mpich`` wheel), never on our own socket code.
Processes can start three ways, and each reaches one MPI communicator of the group's size:

- ``mpiexec -n N python script.py``: ``MPI.COMM_WORLD`` already holds the N processes; it
  is used directly (ranks reordered with ``Split`` if ``RANK`` says otherwise).
- processes started by ``ember.distributed.run`` (torchrun's environment) or by
  ``ember.multiprocessing.spawn``: each is an MPI *singleton* (its own COMM_WORLD of size
  1). They meet through MPI's dynamic process connection: rank 0 opens a port
  (``MPI.Open_port``) and publishes its name in the rendezvous store; every other rank
  reads it and calls ``Comm.Connect``; the growing group accepts one newcomer per round
  (``Comm.Accept``, collective over those already joined) and merges the intercommunicator
  into an intracommunicator (``Intercomm.Merge``). A final ``Split`` orders the ranks as
  the caller numbered them. Measured on a 2-core machine: connecting 2 singletons takes
  ~0.1-0.2 s; an 80 MB float64 all-reduce ~0.25 s.

MPICH 5.0.0-5.0.2 rejects connect/accept between singletons ("Local and remote groups in
MPI_Intercomm_create must not overlap", pmodels/mpich#7805); 4.x works, so the
``distributed`` extra pins ``mpich<5``.

NOTE [ The gloo name ]
Scripts written for PyTorch ask for ``"gloo"`` on CPUs; ember runs that name on this MPI
engine too, so a multi-process CPU run on one machine needs only ``ember[distributed]``
(mpi4py and the mpich wheel, both on PyPI). Other engines were weighed and left (Nov 2026):
PyPI's ``pygloo`` 0.2.1 offers no wheel or source archive that pip can install for CPython
3.11 on Linux x86-64; ``oneccl`` ships Intel's runtime libraries without Python bindings
ember could drive; no UCC binding is published. A collective protocol of our own over
sockets is ruled out (issue 21). Without mpi4py, a group of one process still runs (NOTE
[ A world of one ] in ``_solo.py``), so ``is_available()`` and ``is_gloo_available()`` are
True as in PyTorch; a larger world raises RuntimeError naming ``pip install
'ember[distributed]'`` before touching any state (``require``), and the "mpi" backend name,
which promises MPI itself, is refused as PyTorch refuses a backend it was built without.

``mpi4py.MPI`` initializes MPI when imported, so it is imported only by
``init_process_group`` (``import ember`` stays free of it).
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np


def available() -> bool:
    """Whether mpi4py is installed (checked without initializing MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def mpi():
    """The ``mpi4py.MPI`` module (initializes MPI on first call); without mpi4py, the
    one-process stand-in of ``_solo.py`` (NOTE [ A world of one ])."""
    if not available():
        from . import _solo

        return _solo
    import mpi4py

    mpi4py.rc.threads = True
    # several threads may call MPI at once: DDP's progress thread tests its all-reduces
    # while the main thread runs other collectives (NOTE [ MPI progress thread ])
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


def launched_by_mpiexec() -> bool:
    """Whether an MPI process manager (mpiexec, mpirun, srun) started this process."""
    return any(v in os.environ for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))


def world_rank_size():
    """(rank, size) of ``MPI.COMM_WORLD`` (without mpi4py: as the process manager's
    environment gives them, and only a world of one may go on)."""
    if not available():
        env = os.environ
        rank = int(env.get("PMI_RANK", env.get("OMPI_COMM_WORLD_RANK", 0)))
        size = int(env.get("PMI_SIZE", env.get("OMPI_COMM_WORLD_SIZE", 1)))
        require(size)
        return rank, size
    comm = mpi().COMM_WORLD
    return comm.Get_rank(), comm.Get_size()


def require(world_size: int) -> None:
    """Refuse a group of ``world_size`` processes where no engine can connect them.

    Raises:
        RuntimeError: more than one process and mpi4py is not installed.
    """
    if world_size > 1 and not available():
        raise RuntimeError(
            f"init_process_group: a group of {world_size} processes needs ember's "
            "communication engine, MPI through mpi4py, which is not installed; install it "
            "with `pip install 'ember[distributed]'` (a group of one process runs without "
            "it)")


def connect(store, rank: int, world_size: int, timeout: float):
    """An intracommunicator over ``world_size`` processes in which this one has ``rank``.

    See NOTE [ Engine ] for the three cases. ``store`` carries the port name.
    """
    MPI = mpi()
    if world_size == 1:
        return MPI.COMM_SELF.Dup()
    world = MPI.COMM_WORLD
    if world.Get_size() == world_size:
        return world.Split(0, rank)
    if world.Get_size() != 1:
        raise RuntimeError(
            f"init_process_group: world_size={world_size} but mpiexec started "
            f"{world.Get_size()} processes; give the same number to both")
    key = "ember_mpi_port"
    if rank == 0:
        port = MPI.Open_port()
        store.set(key, port)
        comm = MPI.COMM_SELF
    else:
        store.wait([key], timeout)
        port = store.get(key).decode()
        inter = MPI.COMM_SELF.Connect(port)
        comm = inter.Merge(high=True)
        inter.Free()
    while comm.Get_size() < world_size:
        inter = comm.Accept(port, root=0)
        merged = inter.Merge(high=False)
        inter.Free()
        if comm is not MPI.COMM_SELF:
            comm.Free()
        comm = merged
    if rank == 0:
        MPI.Close_port(port)
    ordered = comm.Split(0, rank)
    if comm is not MPI.COMM_SELF:
        comm.Free()
    return ordered


# -- dtypes and reduction ops -------------------------------------------------------------------

def _mpi_types():
    MPI = mpi()
    return {
        np.dtype(np.float64): MPI.DOUBLE, np.dtype(np.float32): MPI.FLOAT,
        np.dtype(np.int64): MPI.INT64_T, np.dtype(np.int32): MPI.INT32_T,
        np.dtype(np.int16): MPI.INT16_T, np.dtype(np.int8): MPI.INT8_T,
        np.dtype(np.uint8): MPI.UINT8_T, np.dtype(np.uint16): MPI.UINT16_T,
        np.dtype(np.uint32): MPI.UINT32_T, np.dtype(np.uint64): MPI.UINT64_T,
        np.dtype(np.complex64): MPI.C_FLOAT_COMPLEX,
        np.dtype(np.complex128): MPI.C_DOUBLE_COMPLEX,
    }


_TYPES = None


def mpi_type(dtype):
    """The MPI datatype that reduces numpy ``dtype`` natively, or None (then upcast)."""
    global _TYPES
    if _TYPES is None:
        _TYPES = _mpi_types()
    return _TYPES.get(np.dtype(dtype))


def mpi_op(name: str, is_bool: bool):
    """The MPI reduction for a ReduceOp name (AVG reduces with SUM, then divides)."""
    MPI = mpi()
    if is_bool:  # bool as uint8: sums saturate to True, products are "and"
        return {"SUM": MPI.LOR, "AVG": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND,
                "MAX": MPI.LOR, "BAND": MPI.LAND, "BOR": MPI.LOR, "BXOR": MPI.LXOR}[name]
    return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN,
            "MAX": MPI.MAX, "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[name]
