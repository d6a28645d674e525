"""``ember.Stream`` and ``ember.Event``: the device-generic stream and event, with the
semantics of PyTorch's CPU build (the CPU runs in order: waits return at once, events are
always complete, and what needs a real accelerator stream raises as torch's does).

CUDA streams and events with real behaviour live in ``ember.cuda``.
"""

from __future__ import annotations

import time

from .device import as_device


def _cpu_only(device, what):
    dev = as_device(device) if device is not None else None
    if dev is not None and dev.type != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {dev.type} devices")
    return dev


class Stream:
    """An in-order queue of work on a device (``torch.Stream``); on the CPU, the one stream.

    Args:
        device (device or str, optional): only the CPU is supported here (use
            ``ember.cuda.Stream`` for CUDA).
        priority (int): ignored on the CPU.

    Example::

        >>> s = ember.Stream()
        >>> s.query(), s.device_type
        (True, 0)
    """

    def __init__(self, device=None, *, priority=0):
        _cpu_only(device, "Stream")
        self.stream_id = 0
        self.device_index = -1
        self.device_type = 0  # PyTorch's DeviceType code for the CPU

    @property
    def device(self):
        from .device import device

        return device("cpu")

    def query(self) -> bool:
        """True: all work queued on the CPU stream is done."""
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work: nothing is pending on the CPU."""

    def wait_event(self, event) -> None:
        """Make future work wait for ``event``: already complete on the CPU."""

    def wait_stream(self, stream) -> None:
        """Wait for another stream: the CPU backend has no events, as in PyTorch."""
        raise RuntimeError("cpu backend doesn't support events.")

    def record_event(self, event=None):
        """Record an event on the stream: the CPU backend has no events, as in PyTorch."""
        raise RuntimeError("cpu backend doesn't support events.")

    def is_capturing(self) -> bool:
        """False: no graph capture on the CPU."""
        return False

    @property
    def native_handle(self):
        raise RuntimeError("Backend doesn't support getting stream native handle.")

    def __eq__(self, other):
        return isinstance(other, Stream) and other.stream_id == self.stream_id

    def __hash__(self):
        return hash(("cpu", self.stream_id))

    def __repr__(self):
        return (f"{_module()}.Stream device_type=cpu, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A marker in a stream's work (``torch.Event``); on the CPU, always complete.

    Args:
        device (device or str, optional): only the CPU is supported here.
        enable_timing (bool): allow :meth:`elapsed_time`. Default: False.
        blocking, interprocess (bool): ignored on the CPU.

    Example::

        >>> e = ember.Event()
        >>> e.query()
        True
    """

    def __init__(self, device=None, *, enable_timing=False, blocking=False,
                 interprocess=False):
        _cpu_only(device, "Event")
        self.enable_timing = bool(enable_timing)
        self.event_id = 0
        self._time = None

    @property
    def device(self):
        from .device import device

        return device("cpu")

    def record(self, stream=None) -> None:
        """Mark the current point of ``stream``'s work (the time, when timing is on)."""
        self._time = time.perf_counter()

    def query(self) -> bool:
        """True: the work before the event is done."""
        return True

    def synchronize(self) -> None:
        """Wait until the event completes: at once on the CPU."""

    def wait(self, stream=None) -> None:
        """Make ``stream`` wait for the event: already complete on the CPU."""

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event's and ``end_event``'s records (both need
        ``enable_timing=True``)."""
        if not (self.enable_timing and getattr(end_event, "enable_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    def __repr__(self):
        return (f"{_module()}.Event device_type=cpu, device_index=-1, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")


def _module():
    from .dtype import printed_module

    return printed_module[0]


class AcceleratorError(RuntimeError):
    """An error reported by an accelerator's runtime (``torch.AcceleratorError``).

    Args:
        *args: the message (and any other arguments, as for ``RuntimeError``).

    Example::

        >>> issubclass(ember.AcceleratorError, RuntimeError)
        True
    """
