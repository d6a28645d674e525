"""``ember.cpu``: the CPU as a device module, with the queries ``ember.cuda`` has.

The CPU is always there, always initialised and runs one stream in order, so these are
the trivial answers PyTorch's ``torch.cpu`` gives; ``ember.cpu.amp`` holds the deprecated
CPU spellings of ``ember.amp``.
"""

from __future__ import annotations

import contextlib
import os
import platform

from . import amp  # noqa: F401

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream",
           "stream", "set_device", "device_count", "Stream", "StreamContext", "Event",
           "get_capabilities"]


def is_available() -> bool:
    """Always True: ember can run on the CPU.

    Returns:
        bool.

    Example::

        >>> ember.cpu.is_available()
        True
    """
    return True


def is_initialized() -> bool:
    """Always True: the CPU needs no initialisation.

    Returns:
        bool.

    Example::

        >>> ember.cpu.is_initialized()
        True
    """
    return True


def synchronize(device=None) -> None:
    """Wait for the CPU's work to finish: a no-op, CPU ops run to completion when called.

    Args:
        device: ignored (the CPU).

    Returns:
        None.

    Example::

        >>> ember.cpu.synchronize()
    """


def current_device() -> str:
    """The current CPU device, ``"cpu"``.

    Returns:
        str.

    Example::

        >>> ember.cpu.current_device()
        'cpu'
    """
    return "cpu"


def set_device(device) -> None:
    """Select the CPU device: a no-op, there is one.

    Args:
        device: ignored.

    Returns:
        None.

    Example::

        >>> ember.cpu.set_device("cpu")
    """


def device_count() -> int:
    """The number of CPU devices: 1.

    Returns:
        int.

    Example::

        >>> ember.cpu.device_count()
        1
    """
    return 1


class Stream:
    """The CPU's (single, in-order) stream; its methods do nothing.

    Args:
        priority (int): ignored.

    Returns:
        A stream.

    Example::

        >>> s = ember.cpu.Stream()
        >>> s.wait_stream(ember.cpu.current_stream())
    """

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        """Wait for ``stream``: nothing to wait for on the CPU."""

    def wait_event(self, event) -> None:
        """Wait for ``event``: nothing to wait for on the CPU."""

    def record_event(self) -> None:
        """Record an event: nothing to record on the CPU."""


class Event:
    """An event on the CPU stream: always complete.

    Returns:
        An event.

    Example::

        >>> e = ember.cpu.Event()
        >>> e.query()
        True
    """

    def query(self) -> bool:
        """Always True."""
        return True

    def record(self, stream=None) -> None:
        """A no-op."""

    def synchronize(self) -> None:
        """A no-op."""

    def wait(self, stream=None) -> None:
        """A no-op."""


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device=None) -> Stream:
    """The current CPU stream.

    Args:
        device: ignored.

    Returns:
        Stream.

    Example::

        >>> isinstance(ember.cpu.current_stream(), ember.cpu.Stream)
        True
    """
    return _current_stream


class StreamContext(contextlib.AbstractContextManager):
    """Make ``stream`` the current CPU stream inside the block.

    Args:
        stream (Stream): the stream.

    Returns:
        The context manager.

    Example::

        >>> with ember.cpu.StreamContext(ember.cpu.Stream()):
        ...     pass
    """

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return None
        self.prev_stream = _current_stream
        _current_stream = self.stream
        return None

    def __exit__(self, *exc):
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream
        return None


def stream(stream) -> contextlib.AbstractContextManager:
    """A ``StreamContext`` for ``stream``.

    Args:
        stream (Stream): the stream.

    Returns:
        StreamContext.

    Example::

        >>> with ember.cpu.stream(ember.cpu.Stream()):
        ...     pass
    """
    return StreamContext(stream)


def get_capabilities() -> dict:
    """What is known of this CPU: its architecture, name and core counts.

    Returns:
        dict.

    Example::

        >>> ember.cpu.get_capabilities()["num_logical_cores"] >= 1
        True
    """
    n = os.cpu_count() or 1
    return {"architecture": platform.machine(), "cpu_name": platform.processor() or "",
            "num_logical_cores": n, "num_physical_cores": n, "num_sockets": 1}
