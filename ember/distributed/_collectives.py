"""Collectives and point-to-point messages on ember tensors, over MPI (NOTE [ Engine ]).

Every function works in place on the tensors it is given, as PyTorch's do, and returns
None, or a ``Work`` handle with ``async_op=True``. Each one starts a nonblocking MPI
operation (``Iallreduce``, ``Ibcast``, ...) and finishes it in ``Work.wait``.

NOTE [ Collective fingerprints ]
MPI, like Gloo, does not notice when ranks call a collective with different sizes: one
side may return garbage while the other waits until the timeout. So before each
collective on tensors, every rank hashes (collective name, per-group sequence number,
shapes, dtypes) and the group all-reduces (MAX) the pair (hash, -hash): if the result is
not the rank's own pair, some rank differs, and all of them exchange their fingerprints
and raise the same RuntimeError naming the collective, the ranks and their shapes (as
PyTorch's ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` does). The check costs one 16-byte
all-reduce per collective (on a 2-core machine under load, a 4-float ``all_reduce`` took
1.26 ms with it, 0.54 ms without, Gloo's 0.77 ms); DDP's own bucket all-reduces skip it
(their layouts are checked once, when the DDP model is built). Collectives whose shapes
may legitimately differ between ranks (``all_to_all`` with split sizes, ``gather``'s and
``scatter``'s lists, which only the root holds) fingerprint only what must agree.

NOTE [ Zero copy ]
A C-contiguous CPU tensor's NumPy buffer is handed to MPI as it is: MPI reads from it and
writes the result straight into it. A non-contiguous tensor goes through a contiguous
copy that is written back on completion. Data that is only moved (broadcast, gather,
scatter, all-to-all, send/recv) travels as bytes, so every dtype (bfloat16 and bool too)
moves bit for bit; reductions need an MPI type, and float16/bfloat16 are reduced in
float32 (as Gloo does) and rounded back.
"""

from __future__ import annotations

import enum
import pickle
import warnings

import numpy as np

from . import _engine
from ._group import (DistBackendError, Work, _is_member, _resolve, _wait_requests,
                     _warn_not_in_group)

__all__ = [
    "P2POp", "ReduceOp", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv",
    "all_gather_single", "broadcast", "broadcast_object_list", "gather", "gather_object",
    "irecv", "isend", "monitored_barrier", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_single", "reduce_scatter_tensor",
    "scatter", "scatter_object_list", "send",
]


class ReduceOp(enum.Enum):
    """How a reduction combines values: SUM, PRODUCT, MIN, MAX, BAND, BOR, BXOR, AVG.

    AVG is the sum divided by the group size (floating-point tensors only); the bitwise
    ops need integer or bool tensors.

    Example::

        >>> ember.distributed.ReduceOp.SUM.name
        'SUM'
    """

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8
    UNUSED = 9


# PyTorch's members are of the nested type ``ReduceOp.RedOpType`` (libraries name it in type
# hints and isinstance checks); ember's members are the enum's own
ReduceOp.RedOpType = ReduceOp


class _PremulSum:
    """``ReduceOp.PREMUL_SUM`` with its factor (what ``_make_nccl_premul_sum`` makes)."""

    __slots__ = ("factor",)
    name = "PREMUL_SUM"

    def __init__(self, factor):
        self.factor = factor

    def __eq__(self, other):
        return other is ReduceOp.PREMUL_SUM or isinstance(other, _PremulSum)

    def __hash__(self):
        return hash(ReduceOp.PREMUL_SUM)

    def __repr__(self):
        return f"<ReduceOp.PREMUL_SUM factor={self.factor!r}>"


def _make_nccl_premul_sum(factor):
    """A sum that first multiplies every input by ``factor`` (NCCL's pre-multiplied sum).
    ember's CPU backend refuses it, as PyTorch's gloo does.

    Args:
        factor (float or Tensor): the multiplier.

    Returns:
        a reduce op equal to ``ReduceOp.PREMUL_SUM``.

    Example::

        >>> op = ember.distributed._make_nccl_premul_sum(0.5)
        >>> op == ember.distributed.ReduceOp.PREMUL_SUM
        True
    """
    return _PremulSum(factor)


def _same_dtype(*tensors_or_lists) -> None:
    """Refuse tensors of different dtypes in one collective, before anything is sent, as
    PyTorch does. complex64 counts as float32 (the bytes move the same); PyTorch 2.13 maps
    every other complex dtype to complex128, so complex128 mixes with nothing else (not
    even float64), and ember refuses what it refuses."""
    from .. import complex64, complex128, float32

    first = None
    for item in tensors_or_lists:
        for t in (item if isinstance(item, (list, tuple)) else (item,)):
            if t is None:
                continue
            dt = t.dtype
            if dt.is_complex:
                dt = float32 if dt == complex64 else complex128
            if first is None:
                first = dt
            elif dt != first:
                raise ValueError("Invalid usage of tensors with different dtypes"
                                 f"Found {first} and  {t.dtype}")


# -- buffers ------------------------------------------------------------------------------------

def _array(t, name):
    data = getattr(t, "_data", None)
    if not isinstance(data, np.ndarray):
        if data is None:
            raise TypeError(f"{name}: expected an ember Tensor, got {type(t).__name__}")
        raise RuntimeError(f"{name}: ember's gloo/mpi backend works on CPU tensors; got a "
                           f"tensor on {t.device}")
    return data


def _on_cuda(t) -> bool:
    data = getattr(t, "_data", None)
    return data is not None and not isinstance(data, np.ndarray)


def _nccl_of(pg, name):
    if pg.nccl is None:
        raise RuntimeError(f"{name}: CUDA tensors need a process group made with "
                           "backend='nccl' (ember's NCCL groups are the default group only)")
    return pg.nccl


def _nccl_run(pg, name, tensors, launch, async_op):
    """Run a collective on CUDA tensors through the group's NCCL communicator."""
    comm = _nccl_of(pg, name)
    _check_collective(pg, name, tensors)
    work = launch(comm)
    work._timeout = pg.timeout
    if async_op:
        return work
    work.wait()
    return None


def _bytes(a: np.ndarray) -> np.ndarray:
    """A flat uint8 view of a C-contiguous array."""
    return a.reshape(-1).view(np.uint8)


class _Out:
    """An output tensor and the contiguous buffer MPI writes into (NOTE [ Zero copy ])."""

    def __init__(self, t, name, reduce_dtype=None):
        self.t = t
        a = _array(t, name)
        self.direct = a.flags.c_contiguous and reduce_dtype is None
        self.buf = a if self.direct else np.ascontiguousarray(
            a, dtype=reduce_dtype if reduce_dtype is not None else a.dtype)

    def finish(self):
        if not self.direct:
            np.copyto(self.t._data, self.buf.astype(self.t._data.dtype, copy=False),
                      casting="unsafe")
        self.t._bump()


def _reduce_type(a: np.ndarray, op: ReduceOp, name: str):
    """(work dtype or None, MPI datatype, MPI op) for reducing ``a`` with ``op``."""
    if isinstance(op, _PremulSum):
        raise RuntimeError("Cannot use ReduceOp.PREMUL_SUM with Gloo")
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: expected a ReduceOp, got {op!r}")
    if op is ReduceOp.PREMUL_SUM:  # as PyTorch: the bare member carries no factor
        raise TypeError(f"{name}: ReduceOp.PREMUL_SUM needs its factor: pass "
                        "_make_nccl_premul_sum(factor)")
    if op is ReduceOp.UNUSED:
        raise ValueError(f"{name}: ReduceOp.{op.name} is not supported by ember's backend")
    kind = a.dtype.kind
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and kind not in "iub":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op is ReduceOp.AVG and kind in "iub":
        dt = "Bool" if kind == "b" else "Long" if a.dtype == np.int64 else str(a.dtype).title()
        raise RuntimeError(f"result type Float can't be cast to the desired output type {dt}")
    if kind == "b":
        return np.uint8, _engine.mpi_type(np.uint8), _engine.mpi_op(op.name, True)
    mpi_type = _engine.mpi_type(a.dtype)
    if mpi_type is None:  # float16, bfloat16: reduce in float32
        return np.float32, _engine.mpi_type(np.float32), _engine.mpi_op(op.name, False)
    return None, mpi_type, _engine.mpi_op(op.name, False)


# MAX, MIN, PRODUCT and the bitwise ops have no meaning on complex numbers (the data would
# be reduced as their real and imaginary parts, a wrong answer given silently)
_NOT_FOR_COMPLEX = (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                    ReduceOp.BXOR)


def _check_complex_op(tensor, op, name, error=RuntimeError) -> None:
    """Refuse, before anything is sent, a reduction that complex numbers do not define on a
    complex ``tensor``, as PyTorch does on every rank: ``all_reduce`` with ValueError (its
    Python-side check), the other reductions with RuntimeError (the backend's)."""
    if tensor.dtype.is_complex and op in _NOT_FOR_COMPLEX:
        raise error(f"{name} does not support {op} on complex tensors: use SUM or AVG, or "
                    "reduce the real and imaginary parts (view_as_real) yourself")


def _group_for(group, name):
    if not _is_member(group):
        _warn_not_in_group(name)
        return None
    return _resolve(group)


def _root(pg, rank, group_rank, name, what="root"):
    if group_rank is not None:
        r = group_rank
    else:
        if rank is None:
            rank = 0
        if rank not in pg.ranks:
            raise RuntimeError(f"ProcessGroupGloo::{name}: invalid {what} rank: {rank}")
        r = pg.ranks.index(rank)
    if not 0 <= r < pg.size():
        raise RuntimeError(f"ProcessGroupGloo::{name}: invalid {what} rank: {r}")
    return r


# -- cross-rank checks and debug level --------------------------------------------------------

class DebugLevel(enum.Enum):
    """How much ``ember.distributed`` checks and logs (``TORCH_DISTRIBUTED_DEBUG``).

    OFF and INFO: collectives are checked for matching shapes across ranks (NOTE [ Collective
    fingerprints ]); DETAIL also logs every collective (its name, sequence number, shapes
    and the group's ranks) to the ``ember.distributed`` logger at INFO level.

    Example::

        >>> ember.distributed.DebugLevel.DETAIL.value
        2
    """

    OFF = 0
    INFO = 1
    DETAIL = 2


_DEBUG = [DebugLevel.OFF]


def set_debug_level(level) -> None:
    """Set the debug level (a ``DebugLevel``).

    Args:
        level (DebugLevel): ``OFF``, ``INFO`` or ``DETAIL``.

    Example::

        >>> ember.distributed.set_debug_level(ember.distributed.DebugLevel.OFF)
    """
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level(): expected a DebugLevel, got {type(level).__name__}")
    _DEBUG[0] = level


def get_debug_level():
    """The current ``DebugLevel``.

    Example::

        >>> ember.distributed.get_debug_level()
        <DebugLevel.OFF: 0>
    """
    return _DEBUG[0]


def set_debug_level_from_env() -> None:
    """Set the debug level from ``TORCH_DISTRIBUTED_DEBUG`` (OFF, INFO or DETAIL; any case).

    Raises:
        ValueError: another value.

    Example::

        >>> ember.distributed.set_debug_level_from_env()
    """
    import os

    value = os.environ.get("TORCH_DISTRIBUTED_DEBUG", "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ValueError("The value of TORCH_DISTRIBUTED_DEBUG must be OFF, INFO, or DETAIL.")
    _DEBUG[0] = DebugLevel[value]


_DTYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool", "bfloat16": "BFloat16", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble"}


def _describe(tensors):
    """(shapes, dtype names) of ``tensors`` for a fingerprint."""
    shapes = tuple(tuple(int(d) for d in t.shape) for t in tensors)
    dtypes = tuple(_DTYPE_NAMES.get(str(t.dtype).split(".")[-1], str(t.dtype)) for t in tensors)
    return shapes, dtypes


def _fingerprint_text(fp):
    op, seq, shapes, dtypes = fp
    shape_text = ", ".join("[" + ", ".join(map(str, s)) + "]" for s in shapes) or "[]"
    return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={op.upper()}, "
            f"TensorShape={shape_text}, TensorDtypes={', '.join(dtypes) or 'None'})")


def _check_collective(pg, name, tensors=()):
    """Raise on every rank if the ranks of ``pg`` are not running the same collective on
    tensors of the same shapes and dtypes (NOTE [ Collective fingerprints ])."""
    import logging
    import zlib

    seq = pg._seq = getattr(pg, "_seq", 0) + 1
    shapes, dtypes = _describe(tensors)
    fp = (name, seq, shapes, dtypes)
    if _DEBUG[0] is DebugLevel.DETAIL:
        logging.getLogger("ember.distributed").info(
            "[Rank %d] %s on ranks %s", pg.ranks[pg.rank()], _fingerprint_text(fp), pg.ranks)
    if pg.size() == 1:
        return
    MPI = _engine.mpi()
    h = zlib.crc32(repr(fp).encode())
    buf = np.array([h, -h], np.int64)
    req = pg.comm.Iallreduce(MPI.IN_PLACE, [buf, MPI.INT64_T], MPI.MAX)
    _wait_requests([req], _seconds(pg.timeout),
                   f"{name} (SequenceNumber={seq}, ranks {pg.ranks})")
    if buf[0] == h and buf[1] == -h:
        return
    every = pg.comm.allgather(fp)
    odd = [r for r in range(len(every)) if every[r] != every[0]]
    parts = [f"Rank {pg.ranks[r]} is running collective: {_fingerprint_text(every[r])}"
             for r in odd]
    raise RuntimeError(
        f"Detected mismatch between collectives on ranks. Rank {pg.ranks[0]} is running "
        f"collective: {_fingerprint_text(every[0])}, but " + "; ".join(parts) +
        f" (ranks of the group: {pg.ranks})")


def _seconds(t):
    return t.total_seconds() if hasattr(t, "total_seconds") else float(t)


def _run(pg, name, requests, finish, outputs, async_op):
    work = Work(requests, finish, outputs, pg.timeout, name)
    if async_op:
        work._pg = pg  # its Future's driver (NOTE [ Hook futures on the progress thread ])
        return work
    work.wait()
    return None


def _shape_text(shape):
    """A shape as gloo's messages print it: ``(4)``, ``(2, 3)``."""
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def _check_sizes(name, ts, expected, shape=None):
    """Gloo's size check: every tensor of ``ts`` has the shape ``expected`` (``shape(t)``
    gives a tensor's shape as compared; default its own)."""
    for i, t in enumerate(ts):
        got = tuple(t.shape) if shape is None else shape(t)
        if got != tuple(expected):
            raise RuntimeError(f"ProcessGroupGloo::{name}: invalid tensor size at index {i} "
                               f"(expected {_shape_text(expected)}, got {_shape_text(got)})")


def _real_shape(t) -> tuple:
    """``t``'s shape as PyTorch's collectives see it: a complex tensor travels as its
    ``view_as_real`` (one more dim of 2)."""
    return tuple(int(d) for d in t.shape) + ((2,) if t.dtype.is_complex else ())


def _real_dtype(t):
    """``t``'s dtype after ``view_as_real`` (complex64 -> float32, complex128 -> float64)."""
    from .. import complex64, complex128, float32, float64

    return {complex64: float32, complex128: float64}.get(t.dtype, t.dtype)


_CPP_DTYPE_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half",
    "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
    "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
    "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long"}


def _options_text(dtype) -> str:
    """A CPU tensor's options as gloo's type-mismatch message prints them."""
    name = str(dtype).split(".")[-1]
    return (f"TensorOptions(dtype={_CPP_DTYPE_NAMES.get(name, name)}, device=cpu, "
            "layout=Strided, requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt))")


def _chunk_shapes(shape, size):
    """The shapes ``torch.chunk(t, size, 0)`` gives for a tensor of ``shape``."""
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n, rest = shape[0], tuple(shape[1:])
    if n == 0:
        return [(0,) + rest] * size
    step = -(-n // size)
    return [(min(step, n - at),) + rest for at in range(0, n, step)]


def _check_gloo_allgather_base(output, input, size):
    """PyTorch's checks on a CPU ``all_gather_into_tensor``: both tensors as their real
    views, the output cut with ``chunk`` into one piece per rank, and every piece held to
    gloo's all-gather checks (list length, dtype, then shape), in gloo's words. A complex64
    input may so fill a float32 output shaped like its real view, and the reverse."""
    want, want_dtype = _real_shape(input), _real_dtype(input)
    chunks = _chunk_shapes(_real_shape(output), size)
    if len(chunks) != size:
        raise RuntimeError(f"ProcessGroupGloo::allgather: invalid output tensor list at "
                           f"index 0 (expected length {size}, got {len(chunks)})")
    got_dtype = _real_dtype(output)
    for i, chunk in enumerate(chunks):
        if got_dtype != want_dtype:
            raise RuntimeError(f"ProcessGroupGloo::allgather: invalid tensor type at index "
                               f"{i} (expected {_options_text(want_dtype)}, got "
                               f"{_options_text(got_dtype)})")
        if chunk != want:
            raise RuntimeError(f"ProcessGroupGloo::allgather: invalid tensor size at index "
                               f"{i} (expected {_shape_text(want)}, got {_shape_text(chunk)})")


def _check_gloo_base(op, name, output, input, size):
    """Gloo's checks on a one-tensor reduce-scatter: the input's shape is the output's with
    dim 0 times ``size``, and the dtypes agree. PyTorch's gloo raises RuntimeError on CPU
    tensors where NCCL would only count elements; ember does the same, so a CPU script that
    runs here also runs under PyTorch (the all-gather's checks:
    ``_check_gloo_allgather_base``)."""
    small, big = output, input
    if output.dtype != input.dtype:
        raise RuntimeError(f"ProcessGroupGloo::{op}: output and input tensors must have the "
                           f"same dtype ({_describe([output])[1][0]} vs. "
                           f"{_describe([input])[1][0]})")
    want = (int(small.shape[0]) * size,) + tuple(small.shape[1:]) if small.dim() else None
    if want is None or tuple(big.shape) != want:
        raise RuntimeError(f"ProcessGroupGloo::{op}: the input must have the output's shape "
                           f"with dim 0 times the world size {size} (output "
                           f"{_shape_text(output.shape)}, input {_shape_text(input.shape)})")


# -- reductions ---------------------------------------------------------------------------------

def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over every process of the group; each gets the result in place.

    Args:
        tensor: the input and output, the same shape and dtype on every rank.
        op: a ``ReduceOp`` (default SUM).
        group: the process group (default: the default group).
        async_op: return a ``Work`` handle instead of waiting.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> t = ember.ones(2)
        >>> ember.distributed.all_reduce(t)  # doctest: +SKIP
        >>> t  # doctest: +SKIP
        tensor([2., 2.])
    """
    return _all_reduce(tensor, op, group, async_op, True)


def _all_reduce(tensor, op, group, async_op, check):
    pg = _group_for(group, "all_reduce")
    if pg is None:
        return None
    _check_complex_op(tensor, op, "all_reduce", ValueError)
    if _on_cuda(tensor):
        return _nccl_run(pg, "allreduce", [tensor], lambda c: c.all_reduce(tensor, op), async_op)
    a = _array(tensor, "all_reduce")
    work_dt, mtype, mop = _reduce_type(a, op, "all_reduce")
    if check:
        _check_collective(pg, "allreduce", [tensor])
    out = _Out(tensor, "all_reduce", work_dt)
    MPI = _engine.mpi()
    req = pg.comm.Iallreduce(MPI.IN_PLACE, [out.buf, mtype], mop)
    size = pg.size()

    def finish():
        if op is ReduceOp.AVG:
            np.divide(out.buf, size, out=out.buf, casting="unsafe")
        out.finish()

    return _run(pg, "all_reduce", [req], finish, [tensor], async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over the group into rank ``dst``'s ``tensor`` (others unchanged).

    Args:
        tensor: the input, and the output on ``dst``.
        dst: the global rank that receives the result (default 0).
        op: a ``ReduceOp``.
        group, async_op: as in ``all_reduce``.
        group_dst: ``dst`` given as a rank within ``group``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.reduce(ember.ones(2), dst=0)  # doctest: +SKIP
    """
    pg = _group_for(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "reduce")
    _check_complex_op(tensor, op, "reduce")
    if _on_cuda(tensor):
        return _nccl_run(pg, "reduce", [tensor], lambda c: c.reduce(tensor, op, root), async_op)
    a = _array(tensor, "reduce")
    work_dt, mtype, mop = _reduce_type(a, op, "reduce")
    _check_collective(pg, "reduce", [tensor])
    out = _Out(tensor, "reduce", work_dt)
    MPI = _engine.mpi()
    me = pg.rank()
    if me == root:
        req = pg.comm.Ireduce(MPI.IN_PLACE, [out.buf, mtype], mop, root=root)
    else:
        req = pg.comm.Ireduce([out.buf, mtype], None, mop, root=root)
    size = pg.size()

    def finish():
        if me == root:
            if op is ReduceOp.AVG:
                np.divide(out.buf, size, out=out.buf, casting="unsafe")
            out.finish()

    return _run(pg, "reduce", [req], finish, [tensor], async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input_list`` elementwise over the group; rank i gets entry i in ``output``.

    Args:
        output: receives this rank's reduced chunk.
        input_list: one tensor per rank of the group, each shaped like ``output``.
        op, group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> out = ember.zeros(2)
        >>> ember.distributed.reduce_scatter(out, [ember.ones(2), ember.ones(2)])  # doctest: +SKIP
    """
    _same_dtype(output, input_list)
    pg = _group_for(group, "reduce_scatter")
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: expected {pg.size()} input tensors (one per rank), "
                         f"got {len(input_list)}")
    _check_sizes("reduce_scatter", input_list, output.shape)
    _check_complex_op(output, op, "reduce_scatter")
    a = _array(output, "reduce_scatter")
    work_dt, mtype, mop = _reduce_type(a, op, "reduce_scatter")
    dt = work_dt if work_dt is not None else a.dtype
    _check_collective(pg, "reduce_scatter", [output, *input_list])
    send = np.concatenate([np.ascontiguousarray(_array(t, "reduce_scatter"), dtype=dt)
                           .reshape(-1) for t in input_list])
    return _reduce_scatter_flat(pg, output, send, work_dt, mtype, mop, op, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter_single`` under the name PyTorch 2.13 deprecates (it warns, as
    PyTorch does, with a FutureWarning).

    Args:
        output, input, op, group, async_op: as in ``reduce_scatter_single``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> out = ember.zeros(1)
        >>> ember.distributed.reduce_scatter_tensor(out, ember.ones(2))  # doctest: +SKIP
    """
    warnings.warn("`torch.distributed.reduce_scatter_tensor` is deprecated. Please use "
                  "`torch.distributed.reduce_scatter_single` instead.", FutureWarning,
                  stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def _reduce_scatter_base(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    warnings.warn("`torch.distributed._reduce_scatter_base` is a private function and will be "
                  "deprecated. Please use `torch.distributed.reduce_scatter_single` instead.",
                  FutureWarning, stacklevel=2)
    return reduce_scatter_single(output, input, op, group, async_op)


def reduce_scatter_single(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """``reduce_scatter`` with the inputs as one tensor of ``group size`` chunks.

    Args:
        output: receives this rank's chunk.
        input: the chunks of every rank concatenated along dim 0: on CPU (gloo) its shape is
            ``output``'s with dim 0 times the world size; CUDA (NCCL) tensors need only
            ``world_size`` times ``output``'s elements.
        op, group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Raises:
        RuntimeError: on CPU, shapes or dtypes that do not fit as above (gloo's checks).

    Example::

        >>> out = ember.zeros(1)
        >>> ember.distributed.reduce_scatter_single(out, ember.ones(2))  # doctest: +SKIP
    """
    pg = _group_for(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    if not _on_cuda(output):
        _check_gloo_base("_reduce_scatter_base", "reduce_scatter", output, input, pg.size())
    if input.numel() != output.numel() * pg.size():
        raise ValueError("input tensor must be the same size as output size times world size")
    _check_complex_op(output, op, "reduce_scatter_tensor")
    if _on_cuda(output):
        return _nccl_run(pg, "_reduce_scatter_base", [output, input],
                         lambda c: c.reduce_scatter(output, input, op), async_op)
    a = _array(output, "reduce_scatter_tensor")
    work_dt, mtype, mop = _reduce_type(a, op, "reduce_scatter_tensor")
    dt = work_dt if work_dt is not None else a.dtype
    _check_collective(pg, "_reduce_scatter_base", [output, input])
    send = np.ascontiguousarray(_array(input, "reduce_scatter_tensor"), dtype=dt).reshape(-1)
    return _reduce_scatter_flat(pg, output, send, work_dt, mtype, mop, op, async_op)


def _reduce_scatter_flat(pg, output, send, work_dt, mtype, mop, op, async_op):
    out = _Out(output, "reduce_scatter", work_dt)
    req = pg.comm.Ireduce_scatter_block([send, mtype], [out.buf, mtype], mop)
    size = pg.size()

    def finish(_send=send):  # the send buffer must live until the operation is done
        if op is ReduceOp.AVG:
            np.divide(out.buf, size, out=out.buf, casting="unsafe")
        out.finish()

    return _run(pg, "reduce_scatter", [req], finish, [output], async_op)


# -- data movement ------------------------------------------------------------------------------

def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every other rank.

    Args:
        tensor: the data on ``src``; overwritten elsewhere.
        src: the global rank to copy from (default 0).
        group, async_op: as in ``all_reduce``.
        group_src: ``src`` given as a rank within ``group``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.broadcast(ember.ones(2), src=0)  # doctest: +SKIP
    """
    pg = _group_for(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "broadcast")
    if _on_cuda(tensor):
        return _nccl_run(pg, "broadcast", [tensor], lambda c: c.broadcast(tensor, root),
                         async_op)
    out = _Out(tensor, "broadcast")
    _check_collective(pg, "broadcast", [tensor])
    req = pg.comm.Ibcast([_bytes(out.buf), _engine.mpi().BYTE], root=root)
    me = pg.rank()

    def finish():
        if me != root:
            out.finish()

    return _run(pg, "broadcast", [req], finish, [tensor], async_op)


def _gathered(pg, a, name):
    """A receive buffer for every rank's copy of ``a`` (bytes, rank-major)."""
    return np.empty(pg.size() * a.nbytes, dtype=np.uint8)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gather every rank's ``tensor`` into ``tensor_list`` on every rank.

    Args:
        tensor_list: one output tensor per rank, each shaped like ``tensor``. Complex
            tensors count as their ``view_as_real`` (as PyTorch's): complex64 gathers into
            float32 outputs of shape ``tensor.shape + (2,)``, and the reverse.
        tensor: this rank's contribution.
        group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Raises:
        ValueError: dtypes that do not mix (PyTorch's rule; complex128 mixes with nothing).
        RuntimeError: a wrong number of outputs, or an output of another (real) shape, in
            gloo's words.

    Example::

        >>> outs = [ember.zeros(2), ember.zeros(2)]
        >>> ember.distributed.all_gather(outs, ember.ones(2))  # doctest: +SKIP
    """
    _same_dtype(tensor_list, tensor)
    pg = _group_for(group, "all_gather")
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise RuntimeError(f"ProcessGroupGloo::allgather: invalid output tensor list at "
                           f"index 0 (expected length {pg.size()}, got {len(tensor_list)})")
    # complex tensors are compared as their real views (complex64 into float32 goes)
    _check_sizes("allgather", tensor_list, _real_shape(tensor), _real_shape)
    if _on_cuda(tensor):
        flat = tensor.new_empty((pg.size(),) + tuple(tensor.shape))
        src = tensor.contiguous()

        def launch(c):
            work = c.all_gather(flat, src)
            work._finish = lambda: [o.copy_(flat[i]) for i, o in enumerate(tensor_list)]
            work._outputs = list(tensor_list)
            return work

        return _nccl_run(pg, "allgather", [tensor], launch, async_op)
    a = np.ascontiguousarray(_array(tensor, "all_gather"))
    _check_collective(pg, "allgather", [tensor])
    recv = _gathered(pg, a, "all_gather")
    BYTE = _engine.mpi().BYTE
    req = pg.comm.Iallgather([_bytes(a), BYTE], [recv, BYTE])

    def finish():
        _scatter_bytes(recv, tensor_list)

    return _run(pg, "all_gather", [req], finish, tensor_list, async_op)


def _scatter_bytes(recv, tensors):
    """Copy consecutive byte chunks of ``recv`` into ``tensors``."""
    at = 0
    for t in tensors:
        a = t._data
        chunk = recv[at:at + a.nbytes].view(a.dtype).reshape(a.shape)
        np.copyto(a, chunk)
        t._bump()
        at += a.nbytes


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``all_gather_single`` under the name PyTorch 2.13 deprecates (it warns, as PyTorch
    does, with a FutureWarning).

    Args:
        output_tensor, input_tensor, group, async_op: as in ``all_gather_single``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> out = ember.zeros(4)
        >>> ember.distributed.all_gather_into_tensor(out, ember.ones(2))  # doctest: +SKIP
    """
    warnings.warn("`torch.distributed.all_gather_into_tensor` is deprecated. Please use "
                  "`torch.distributed.all_gather_single` instead.", FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def _all_gather_base(output_tensor, input_tensor, group=None, async_op=False):
    warnings.warn("`torch.distributed._all_gather_base` is a private function and will be "
                  "deprecated. Please use `torch.distributed.all_gather_single` instead.",
                  FutureWarning, stacklevel=2)
    return all_gather_single(output_tensor, input_tensor, group, async_op)


def all_gather_single(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into one tensor, rank after rank.

    Args:
        output_tensor: the ranks' tensors concatenated along dim 0: on CPU (gloo) its shape
            is ``input_tensor``'s with dim 0 times the world size; CUDA (NCCL) tensors may
            also be stacked along a new dim 0.
        input_tensor: this rank's contribution.
        group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Raises:
        RuntimeError: on CPU, an output whose shape or dtype does not fit as above (both
            compared as their ``view_as_real``; the output cut with ``chunk`` into one
            piece per rank, each checked as gloo checks an all-gather's outputs).

    Example::

        >>> out = ember.zeros(4)
        >>> ember.distributed.all_gather_single(out, ember.ones(2))  # doctest: +SKIP
    """
    pg = _group_for(group, "all_gather_into_tensor")
    if pg is None:
        return None
    if not _on_cuda(input_tensor):
        _check_gloo_allgather_base(output_tensor, input_tensor, pg.size())
    elif output_tensor.numel() != input_tensor.numel() * pg.size():
        raise ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    if _on_cuda(input_tensor) and output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError("all_gather_into_tensor: output and input tensors must have the "
                           "same dtype")
    if _on_cuda(input_tensor):
        return _nccl_run(pg, "_allgather_base", [output_tensor, input_tensor],
                         lambda c: c.all_gather(output_tensor, input_tensor), async_op)
    a = np.ascontiguousarray(_array(input_tensor, "all_gather_into_tensor"))
    _check_collective(pg, "_allgather_base", [output_tensor, input_tensor])
    out = _Out(output_tensor, "all_gather_into_tensor")
    BYTE = _engine.mpi().BYTE
    req = pg.comm.Iallgather([_bytes(a), BYTE], [_bytes(out.buf), BYTE])
    return _run(pg, "all_gather_into_tensor", [req], out.finish, [output_tensor], async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """Collect every rank's ``tensor`` into ``gather_list`` on rank ``dst``.

    Args:
        tensor: this rank's contribution.
        gather_list: on ``dst``, one tensor per rank (None elsewhere).
        dst: the global rank that collects (default 0).
        group, async_op: as in ``all_reduce``.
        group_dst: ``dst`` given as a rank within ``group``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.gather(ember.ones(2), dst=0)  # doctest: +SKIP
    """
    _same_dtype(tensor, gather_list)
    pg = _group_for(group, "gather")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "gather")
    me = pg.rank()
    if me == root:
        if gather_list is None or len(gather_list) != pg.size():
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_sizes("gather", gather_list, tensor.shape)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    a = np.ascontiguousarray(_array(tensor, "gather"))
    BYTE = _engine.mpi().BYTE
    _check_collective(pg, "gather", [tensor])
    recv = _gathered(pg, a, "gather") if me == root else None
    req = pg.comm.Igather([_bytes(a), BYTE], [recv, BYTE] if me == root else None, root=root)

    def finish():
        if me == root:
            _scatter_bytes(recv, gather_list)

    return _run(pg, "gather", [req], finish, list(gather_list or []), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Send entry i of rank ``src``'s ``scatter_list`` to rank i's ``tensor``.

    Args:
        tensor: receives this rank's entry.
        scatter_list: on ``src``, one tensor per rank (None elsewhere).
        src: the global rank that sends (default 0).
        group, async_op: as in ``all_reduce``.
        group_src: ``src`` given as a rank within ``group``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.scatter(ember.zeros(2), src=0)  # doctest: +SKIP
    """
    _same_dtype(tensor, scatter_list)
    pg = _group_for(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "scatter")
    me = pg.rank()
    if me == root:
        if scatter_list is None or len(scatter_list) != pg.size():
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_sizes("scatter", scatter_list, tensor.shape)
        send = np.concatenate([_bytes(np.ascontiguousarray(_array(t, "scatter")))
                               for t in scatter_list])
    else:
        if scatter_list:
            raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source "
                             "ranks.")
        send = None
    out = _Out(tensor, "scatter")
    _check_collective(pg, "scatter", [tensor])
    BYTE = _engine.mpi().BYTE
    req = pg.comm.Iscatter([send, BYTE] if me == root else None, [_bytes(out.buf), BYTE],
                           root=root)
    return _run(pg, "scatter", [req], out.finish, [tensor], async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to rank i; receive rank j's into ``output_tensor_list[j]``.

    Args:
        output_tensor_list: one output per rank.
        input_tensor_list: one input per rank.
        group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> outs = [ember.zeros(1), ember.zeros(1)]
        >>> ember.distributed.all_to_all(outs, [ember.ones(1), ember.ones(1)])  # doctest: +SKIP
    """
    _same_dtype(output_tensor_list, input_tensor_list)
    pg = _group_for(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: expected {n} input and {n} output tensors")
    _check_collective(pg, "alltoall")
    sends = [_bytes(np.ascontiguousarray(_array(t, "all_to_all"))) for t in input_tensor_list]
    send = np.concatenate(sends) if sends else np.empty(0, np.uint8)
    rcounts = [t._data.nbytes for t in output_tensor_list]
    recv = np.empty(sum(rcounts), np.uint8)
    scounts = [s.size for s in sends]
    BYTE = _engine.mpi().BYTE
    req = pg.comm.Ialltoallv([send, (scounts, _offsets(scounts)), BYTE],
                             [recv, (rcounts, _offsets(rcounts)), BYTE])

    def finish(_send=send):  # the send buffer must live until the operation is done
        _scatter_bytes(recv, output_tensor_list)

    return _run(pg, "all_to_all", [req], finish, output_tensor_list, async_op)


def _offsets(counts):
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += c
    return out


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """``all_to_all`` on single tensors split along dim 0 (evenly, or by the split sizes).

    Args:
        output: receives the pieces from every rank, rank after rank.
        input: the pieces for every rank, rank after rank.
        output_split_sizes, input_split_sizes: rows per rank (default: equal split).
        group, async_op: as in ``all_reduce``.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.all_to_all_single(ember.zeros(2), ember.ones(2))  # doctest: +SKIP
    """
    _same_dtype(output, input)
    pg = _group_for(group, "all_to_all_single")
    if pg is None:
        return None
    n = pg.size()
    a = np.ascontiguousarray(_array(input, "all_to_all_single"))
    out = _Out(output, "all_to_all_single")

    def counts(arr, splits, what):
        row = arr.nbytes // arr.shape[0] if arr.ndim and arr.shape[0] else arr.itemsize
        if splits is None or len(splits) == 0:
            if arr.ndim == 0 or arr.shape[0] % n:
                raise RuntimeError(f"all_to_all_single: {what} dim 0 ({arr.shape}) must be "
                                   f"divisible by the group size {n}")
            return [arr.nbytes // n] * n
        return [int(s) * row for s in splits]

    sc = counts(a, input_split_sizes, "input")
    rc = counts(out.buf, output_split_sizes, "output")
    even = not input_split_sizes and not output_split_sizes
    _check_collective(pg, "alltoall_base", [output, input] if even else ())
    BYTE = _engine.mpi().BYTE
    req = pg.comm.Ialltoallv([_bytes(a), (sc, _offsets(sc)), BYTE],
                             [_bytes(out.buf), (rc, _offsets(rc)), BYTE])
    return _run(pg, "all_to_all_single", [req], out.finish, [output], async_op)


# -- point to point -----------------------------------------------------------------------------

def _peer(pg, rank, group_rank, name):
    if group_rank is not None:
        return group_rank
    if rank is None:
        raise ValueError(f"{name}: give the peer's rank")
    if rank not in pg.ranks:
        raise ValueError(f"{name}: rank {rank} is not part of the group")
    return pg.ranks.index(rank)


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; a ``Work`` handle.

    Args:
        tensor: the data.
        dst: the global rank to send to.
        group: the process group.
        tag: matches the receiver's tag.
        group_dst: ``dst`` given as a rank within ``group``.

    Returns:
        Work

    Example::

        >>> ember.distributed.isend(ember.ones(2), dst=1).wait()  # doctest: +SKIP
        True
    """
    pg = _group_for(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "isend")
    if peer == pg.rank():
        raise ValueError("Invalid destination rank: destination rank should not be the same "
                         "as the rank of the current process.")
    if _on_cuda(tensor):
        return _nccl_of(pg, "isend").send(tensor.contiguous(), peer)
    a = np.ascontiguousarray(_array(tensor, "isend"))
    req = pg.comm.Isend([_bytes(a), _engine.mpi().BYTE], dest=peer, tag=tag)
    return Work([req], lambda: a.size, [tensor], pg.timeout, "send")


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (any rank when None).

    Args:
        tensor: receives the data.
        src: the global rank to receive from (None: any).
        group: the process group.
        tag: matches the sender's tag.
        group_src: ``src`` given as a rank within ``group``.

    Returns:
        Work (``source_rank()`` names the sender)

    Example::

        >>> ember.distributed.irecv(ember.zeros(2), src=0).wait()  # doctest: +SKIP
        True
    """
    pg = _group_for(group, "irecv")
    if pg is None:
        return None
    MPI = _engine.mpi()
    peer = MPI.ANY_SOURCE if src is None and group_src is None else \
        _peer(pg, src, group_src, "irecv")
    if _on_cuda(tensor):
        if peer == MPI.ANY_SOURCE:
            raise RuntimeError("irecv: NCCL needs the source rank of a CUDA receive")
        work = _nccl_of(pg, "irecv").recv(tensor, peer)
        work._value = pg.ranks[peer]
        return work
    out = _Out(tensor, "irecv")
    status = MPI.Status()
    req = pg.comm.Irecv([_bytes(out.buf), MPI.BYTE], source=peer, tag=tag)
    work = Work([req], None, [tensor], pg.timeout, "recv")

    def finish():
        out.finish()
        return pg.ranks[status.Get_source()] if peer == MPI.ANY_SOURCE else pg.ranks[peer]

    # Status is only filled by Wait/Test with a status argument; use Wait here.
    def wait_with_status(timeout=None):
        if not work._done:
            limit = timeout if timeout is not None else pg.timeout
            _wait_requests([req], getattr(limit, "total_seconds", lambda: limit)(), "recv")
            req.Wait(status)
            work._done, work._value = True, finish()
        return True

    work.wait = wait_with_status
    work._finish = finish
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:
    """Send ``tensor`` to rank ``dst`` and wait until it has been taken.

    Args:
        tensor (Tensor): the tensor to send.
        dst (int, optional): the global rank of the receiver.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        tag (int): matches a ``recv`` with the same tag. Default: 0.
        group_dst (int, optional): the receiver's rank within ``group`` (instead of ``dst``).

    Example::

        >>> ember.distributed.send(ember.ones(2), dst=1)  # doctest: +SKIP
    """
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:
    """Receive into ``tensor`` from rank ``src`` (any when None); the sender's rank.

    Args:
        tensor (Tensor): filled in place with the received data.
        src (int, optional): the global rank of the sender (None: any).
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        tag (int): matches a ``send`` with the same tag. Default: 0.
        group_src (int, optional): the sender's rank within ``group`` (instead of ``src``).

    Example::

        >>> ember.distributed.recv(ember.zeros(2), src=0)  # doctest: +SKIP
        0
    """
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work._value


class P2POp:
    """One send or receive for ``batch_isend_irecv``.

    Args:
        op: ``isend`` or ``irecv``.
        tensor: the data or the receiving tensor.
        peer: the other rank.
        group, tag: as in ``isend``.

    Example::

        >>> op = ember.distributed.P2POp(ember.distributed.isend, ember.ones(1), 1)
        >>> op.peer
        1
    """

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type "
                             "``torch.distributed.isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list) -> list:
    """Start every send and receive of ``p2p_op_list``; their ``Work`` handles.

    Args:
        p2p_op_list (list of P2POp): the sends and receives to start together.

    Example::

        >>> ember.distributed.batch_isend_irecv([])  # doctest: +SKIP
        []
    """
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]


# -- barriers and objects -----------------------------------------------------------------------

def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process of the group has reached this call.

    Args:
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        async_op (bool): return a ``Work`` to wait on instead of blocking.
        device_ids (list of ints, optional): accepted for PyTorch compatibility.

    Returns:
        None, or a ``Work`` handle with ``async_op=True``.

    Example::

        >>> ember.distributed.barrier()  # doctest: +SKIP
    """
    pg = _group_for(group, "barrier")
    if pg is None:
        return None
    _check_collective(pg, "barrier")
    return _run(pg, "barrier", [pg.comm.Ibarrier()], None, [], async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False) -> None:
    """A barrier that fails within ``timeout`` naming the ranks that did not arrive.

    Rank 0 collects a message from every other rank, then answers each.

    Args:
        group: the process group.
        timeout: seconds or ``timedelta`` (default: the group's timeout).
        wait_all_ranks: name every missing rank, not only the first.

    Raises:
        RuntimeError: some rank did not arrive in time.

    Example::

        >>> ember.distributed.monitored_barrier()  # doctest: +SKIP
    """
    pg = _group_for(group, "monitored_barrier")
    if pg is None:
        return
    limit = pg.timeout if timeout is None else timeout
    limit = getattr(limit, "total_seconds", lambda: float(limit))()
    MPI = _engine.mpi()
    tag = 0x7EB
    token = np.zeros(1, np.uint8)
    if pg.rank() == 0:
        reqs = {r: pg.comm.Irecv([np.zeros(1, np.uint8), MPI.BYTE], source=r, tag=tag)
                for r in range(1, pg.size())}
        missing = []
        for r, req in reqs.items():
            try:
                _wait_requests([req], limit, "monitored_barrier")
            except DistBackendError:
                req.Cancel()
                missing.append(pg.ranks[r])
                if not wait_all_ranks:
                    break
        if missing:
            who = f"[Rank {pg.ranks[0]}]: "  # torch's prefix: the rank that noticed
            if wait_all_ranks:
                raise RuntimeError(f"{who}Ranks {', '.join(map(str, missing))} failed to pass "
                                   "monitoredBarrier in " f"{limit * 1000:.0f} ms")
            raise RuntimeError(f"{who}Rank {missing[0]} failed to pass monitoredBarrier in "
                               f"{limit * 1000:.0f} ms")
        for r in range(1, pg.size()):
            pg.comm.Send([token, MPI.BYTE], dest=r, tag=tag)
    else:
        pg.comm.Send([token, MPI.BYTE], dest=0, tag=tag)
        req = pg.comm.Irecv([token, MPI.BYTE], source=0, tag=tag)
        _wait_requests([req], limit, "monitored_barrier")


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s entries everywhere with rank ``src``'s (pickled).

    Args:
        object_list: the objects on ``src``; a list of the same length elsewhere.
        src: the global rank to copy from (default 0).
        group, device, group_src: as in ``broadcast``.

    Returns:
        None

    Example::

        >>> objs = [{"lr": 0.1}]
        >>> ember.distributed.broadcast_object_list(objs, src=0)  # doctest: +SKIP
    """
    pg = _group_for(group, "broadcast_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "broadcast")
    got = _bcast_pickled(pg, list(object_list) if pg.rank() == root else None, root)
    object_list[:] = got


# Objects travel pickled, through nonblocking MPI calls waited on with the group's timeout
# (so a dead peer fails the others instead of hanging them).

def _wait(pg, req, name):
    _wait_requests([req], pg.timeout.total_seconds(), name)


def _bcast_pickled(pg, obj, root):
    MPI = _engine.mpi()
    payload = np.frombuffer(pickle.dumps(obj), np.uint8) if pg.rank() == root else None
    n = np.array([0 if payload is None else payload.size], np.int64)
    _wait(pg, pg.comm.Ibcast([n, MPI.INT64_T], root=root), "broadcast_object_list")
    buf = payload if payload is not None else np.empty(int(n[0]), np.uint8)
    _wait(pg, pg.comm.Ibcast([buf, MPI.BYTE], root=root), "broadcast_object_list")
    return obj if payload is not None else pickle.loads(buf.tobytes())


def _allgather_pickled(pg, obj, name):
    """Every rank's ``obj``, in rank order."""
    MPI = _engine.mpi()
    payload = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.zeros(pg.size(), np.int64)
    _wait(pg, pg.comm.Iallgather([np.array([payload.size], np.int64), MPI.INT64_T],
                                 [sizes, MPI.INT64_T]), name)
    counts = [int(c) for c in sizes]
    buf = np.empty(sum(counts), np.uint8)
    _wait(pg, pg.comm.Iallgatherv([payload, MPI.BYTE], [buf, (counts, _offsets(counts)),
                                                        MPI.BYTE]), name)
    offs = _offsets(counts)
    return [pickle.loads(buf[o:o + c].tobytes()) for o, c in zip(offs, counts)]


def all_gather_object(object_list, obj, group=None) -> None:
    """Fill ``object_list`` (one slot per rank) with every rank's ``obj``.

    Args:
        object_list (list): filled with one object per rank (its length is the world size).
        obj (object): this rank's picklable object.
        group (ProcessGroup, optional): the group. Default: the default (world) group.

    Example::

        >>> out = [None, None]
        >>> ember.distributed.all_gather_object(out, {"rank": 0})  # doctest: +SKIP
    """
    pg = _group_for(group, "all_gather_object")
    if pg is None:
        return
    got = _allgather_pickled(pg, obj, "all_gather_object")
    object_list[:len(got)] = got


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None) -> None:
    """Collect every rank's ``obj`` into ``object_gather_list`` on rank ``dst``.

    Args:
        obj (object): this rank's picklable object.
        object_gather_list (list, optional): on ``dst``, filled with one object per rank.
        dst (int, optional): the global rank that gathers. Default: 0.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        group_dst (int, optional): the gathering rank within ``group``.

    Example::

        >>> ember.distributed.gather_object({"x": 1}, None, dst=0)  # doctest: +SKIP
    """
    pg = _group_for(group, "gather_object")
    if pg is None:
        return
    root = _root(pg, dst, group_dst, "gather")
    got = _allgather_pickled(pg, obj, "gather_object")
    if pg.rank() == root:
        object_gather_list[:len(got)] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None) -> None:
    """Put entry i of rank ``src``'s input list into rank i's ``scatter_object_output_list[0]``.

    Args:
        scatter_object_output_list (list): its first entry receives this rank's object.
        scatter_object_input_list (list, optional): on ``src``, one picklable object per rank.
        src (int, optional): the scattering global rank. Default: 0.
        group (ProcessGroup, optional): the group. Default: the default (world) group.
        group_src (int, optional): the scattering rank within ``group``.

    Example::

        >>> out = [None]
        >>> ember.distributed.scatter_object_list(out, [1, 2], src=0)  # doctest: +SKIP
    """
    pg = _group_for(group, "scatter_object_list")
    if pg is None:
        return
    root = _root(pg, src, group_src, "scatter")
    got = _bcast_pickled(pg, list(scatter_object_input_list) if pg.rank() == root else None,
                         root)[pg.rank()]
    scatter_object_output_list[0] = got

