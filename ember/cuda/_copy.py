"""Copies between the host and GPUs: pinned host memory, asynchronous copies, device to device.

NOTE [ Pinned memory and non_blocking copies ]
``Tensor.pin_memory()`` copies a CPU tensor into page-locked host memory from CuPy's pinned
pool (``cupyx.empty_pinned``); the tensor stays a CPU tensor (a NumPy array over that
memory) and ``is_pinned()`` asks the driver what kind of memory its address is.
``.to('cuda', non_blocking=True)`` from pinned memory queues the copy on the current stream
and returns at once, as in PyTorch; the source array is held until the copy is done, so
dropping it early is safe. From pageable memory the copy is synchronous (also PyTorch's
behaviour as the caller sees it). ``.to('cpu', non_blocking=True)`` lands in pinned memory
and returns before the copy is done: synchronize the stream before reading it.
``.to('cuda:1')`` copies between devices (with peer access where the GPUs allow it).
"""

from __future__ import annotations

import numpy as np

from . import _runtime

_in_flight: list = []  # (event, host array) kept until the copy reading the array is done


def _prune() -> None:
    _in_flight[:] = [(ev, a) for ev, a in _in_flight if not ev.done]


def _root(a: np.ndarray):
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def is_pinned(a) -> bool:
    """Whether the host array ``a`` lives in page-locked memory (False without CuPy)."""
    cp = _runtime._cupy_module
    if cp is None or not isinstance(a, np.ndarray) or a.size == 0:
        return False
    if isinstance(_root(a), cp.cuda.PinnedMemoryPointer):
        return True
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(a.__array_interface__["data"][0])
    except Exception:  # pageable memory on old drivers raises instead of answering
        return False
    return getattr(attrs, "type", 0) == 1  # cudaMemoryTypeHost


def pin(a: np.ndarray) -> np.ndarray:
    """A copy of host array ``a`` in page-locked memory (same shape, dtype and strides
    order)."""
    import cupyx

    order = "F" if a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    out = cupyx.empty_pinned(a.shape, a.dtype, order=order)
    np.copyto(out, a)
    return out


def transfer(a, target: str, index, non_blocking: bool):
    """``a`` (a NumPy or CuPy array) copied to ``target`` ('cuda' or 'cpu'); ``index`` is the
    CUDA device (None: the current one)."""
    cp = _runtime.cupy()
    if target == "cpu":
        if non_blocking and a.size and a.flags.c_contiguous:
            out = _pinned_empty(a.shape, a.dtype)
            with cp.cuda.Device(a.device.id):
                a.data.copy_to_host_async(out.ctypes.data, a.nbytes,
                                          cp.cuda.get_current_stream())
            return out
        out = a.get()
        from .._core.checks import raise_pending

        raise_pending()  # the host waited for the device (NOTE [ Deferred device checks ])
        return out
    dev = cp.cuda.runtime.getDevice() if index is None else index
    with cp.cuda.Device(dev):
        if isinstance(a, cp.ndarray):
            if a.device.id == dev:
                return a
            return cp.array(a, copy=True)  # device to device (peer copy where possible)
        if non_blocking and a.size and a.flags.c_contiguous and is_pinned(a):
            out = cp.empty(a.shape, a.dtype)
            stream = cp.cuda.get_current_stream()
            out.data.copy_from_host_async(a.ctypes.data, a.nbytes, stream)
            if _in_flight:
                _prune()
            _in_flight.append((stream.record(), a))
            return out
        return cp.asarray(a)


def _pinned_empty(shape, dtype):
    import cupyx

    return cupyx.empty_pinned(shape, dtype)
