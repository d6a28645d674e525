"""``ember.cuda.streams``: CUDA streams and events, as thin wrappers over CuPy's.

Without CuPy or a GPU, constructing a ``Stream`` or an ``Event`` raises RuntimeError and
``current_stream`` raises AssertionError, as in a CPU-only PyTorch; ``stream(None)`` (and
``StreamContext(None)``) is a block that does nothing, so code written for both kinds of
machine runs. See NOTE [ CUDA without a GPU ] in ember/cuda/_runtime.py.

Example::

    >>> with ember.cuda.stream(None):
    ...     pass
"""

from __future__ import annotations

import warnings

from . import _runtime
from ._runtime import require_gpu

__all__ = ["Event", "ExternalStream", "Stream", "StreamContext", "current_stream",
           "default_stream", "get_stream_from_external", "set_stream", "stream"]


def _require_streams(what: str):
    if not _runtime.is_compiled() or _runtime.gpu_count() == 0:
        raise RuntimeError(f"torch.cuda.{what} requires CUDA support (ember reaches CUDA "
                           "through CuPy and a visible NVIDIA GPU)")
    from .. import cuda

    cuda._lazy_init()
    return _runtime.cupy()


class Stream:
    """A queue of GPU work (a CuPy stream on a device).

    Args:
        device: the device (default: the current one).
        priority: lower numbers run first (CuPy's stream priority).

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     s = ember.cuda.Stream()
    """

    def __init__(self, device=None, priority: int = 0, **kwargs):
        cp = _require_streams("Stream")
        index = _runtime.device_index(device, optional=True)
        with cp.cuda.Device(index):
            self._cupy = kwargs.get("_cupy_stream") or cp.cuda.Stream(
                non_blocking=True, priority=priority)
        self.device_index = index

    @property
    def device(self):
        from .._core.device import device

        return device("cuda", self.device_index)

    @property
    def cuda_stream(self) -> int:
        """The ``cudaStream_t`` address (0 for the default stream)."""
        return self._cupy.ptr

    @property
    def priority(self) -> int:
        """The stream's priority (lower runs first)."""
        cp = _runtime.cupy()
        if self._cupy.ptr == 0:
            return 0
        return int(cp.cuda.runtime.streamGetPriority(self._cupy.ptr))

    def __enter__(self):
        self._context = StreamContext(self)
        return self._context.__enter__()

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)

    def query(self) -> bool:
        """True when all work queued on the stream has finished."""
        return self._cupy.done

    def synchronize(self) -> None:
        """Wait for all work queued on the stream."""
        self._cupy.synchronize()

    def wait_event(self, event) -> None:
        """Make later work on this stream wait for ``event``."""
        self._cupy.wait_event(event._cupy)

    def wait_stream(self, stream) -> None:
        """Make later work on this stream wait for the work queued so far on ``stream``."""
        if stream._cupy.ptr != self._cupy.ptr:
            self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one when None) on this stream; returns it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, Stream) and self._cupy.ptr == other._cupy.ptr

    def __hash__(self):
        return hash((self._cupy.ptr, self.device_index))

    def __repr__(self):
        return (f"<ember.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self._cupy.ptr:#x}>")


class ExternalStream(Stream):
    """A stream allocated outside ember, wrapped from its ``cudaStream_t`` pointer.

    Args:
        stream_ptr: the stream's address.
        device: the device the stream belongs to.

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     s = ember.cuda.ExternalStream(ember.cuda.current_stream().cuda_stream)
    """

    def __init__(self, stream_ptr: int, device=None):
        cp = _require_streams("ExternalStream")
        index = _runtime.device_index(device, optional=True)
        with warnings.catch_warnings():  # CuPy 14 deprecates wrapping a bare address
            warnings.simplefilter("ignore", DeprecationWarning)
            stream = cp.cuda.ExternalStream(int(stream_ptr), index)
        super().__init__(index, _cupy_stream=stream)


class Event:
    """A marker in a stream's work, to wait on or to time between.

    Args:
        enable_timing: whether ``elapsed_time`` can measure from this event.
        blocking: whether ``synchronize`` blocks the thread rather than spinning.
        interprocess: accepted for PyTorch's signature; CuPy events are not shared.

    Raises:
        RuntimeError: without CuPy or a GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(True)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        cp = _require_streams("Event")
        self._cupy = cp.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                   interprocess=interprocess)

    @property
    def cuda_event(self) -> int:
        """The ``cudaEvent_t`` address."""
        return self._cupy.ptr

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current stream)."""
        self._cupy.record((stream or current_stream())._cupy)

    def wait(self, stream=None) -> None:
        """Make later work on ``stream`` (default: current) wait for this event."""
        (stream or current_stream()).wait_event(self)

    def query(self) -> bool:
        """True when the work before the event has finished."""
        return self._cupy.done

    def synchronize(self) -> None:
        """Wait for the work before the event."""
        self._cupy.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded, with timing)."""
        return float(_runtime.cupy().cuda.get_elapsed_time(self._cupy, end_event._cupy))

    def __repr__(self):
        return "<ember.cuda.Event>"


def current_stream(device=None) -> Stream:
    """The stream ember queues GPU work on for ``device``.

    Args:
        device: the device (default: the current one).

    Returns:
        Stream

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     s = ember.cuda.current_stream()
    """
    require_gpu()
    cp = _require_streams("current_stream")
    index = _runtime.device_index(device, optional=True)
    with cp.cuda.Device(index):
        return Stream(index, _cupy_stream=cp.cuda.get_current_stream())


def default_stream(device=None) -> Stream:
    """The default (null) stream of ``device``.

    Args:
        device: the device (default: the current one).

    Returns:
        Stream

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     s = ember.cuda.default_stream()
    """
    require_gpu()
    cp = _require_streams("default_stream")
    return Stream(device, _cupy_stream=cp.cuda.Stream.null)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its device; None does nothing.

    Args:
        stream: a Stream, or None.

    Returns:
        None

    Example::

        >>> ember.cuda.set_stream(None)
    """
    if stream is None:
        return
    if stream.device_index != _runtime.cupy().cuda.runtime.getDevice():
        _runtime.cupy().cuda.runtime.setDevice(stream.device_index)
    stream._cupy.use()


class StreamContext:
    """A block in which ``stream`` is the current stream; None makes it do nothing.

    Args:
        stream: a Stream, or None.

    Example::

        >>> with ember.cuda.StreamContext(None):
        ...     pass
    """

    def __init__(self, stream):
        self.stream = stream
        self._prev = None
        self._prev_device = -1

    def __enter__(self):
        if self.stream is None:
            return None
        cp = _runtime.cupy()
        rt = cp.cuda.runtime
        self._prev_device = rt.getDevice()
        if self.stream.device_index != self._prev_device:
            rt.setDevice(self.stream.device_index)
        self._prev = cp.cuda.get_current_stream()
        self.stream._cupy.use()
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None and self._prev is not None:
            self._prev.use()
            rt = _runtime.cupy().cuda.runtime
            if rt.getDevice() != self._prev_device:
                rt.setDevice(self._prev_device)
        return False


def stream(stream) -> StreamContext:
    """A block in which ``stream`` is the current stream (``with ember.cuda.stream(s):``).

    Args:
        stream: a Stream, or None (the block then does nothing).

    Returns:
        StreamContext

    Example::

        >>> with ember.cuda.stream(None):
        ...     pass
    """
    return StreamContext(stream)


def get_stream_from_external(data_ptr: int, device=None) -> Stream:
    """Wrap a ``cudaStream_t`` made outside ember (by another library) as a ``Stream``.

    Args:
        data_ptr: the stream's address.
        device: the device the stream belongs to (default: the current one).

    Returns:
        ExternalStream

    Raises:
        AssertionError: without CuPy; RuntimeError with CuPy but no GPU.

    Example::

        >>> if ember.cuda.is_available():
        ...     s = ember.cuda.get_stream_from_external(ember.cuda.Stream().cuda_stream)
    """
    require_gpu()
    return ExternalStream(data_ptr, device)
