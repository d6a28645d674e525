"""``torch.monitor``: events and windowed statistics for monitoring a running program.

An :class:`Event` is a name, a timestamp and a dict of values; :func:`log_event` passes it to
every handler registered with :func:`register_event_handler`. A :class:`Stat` aggregates the
values added to it over a time window (count, sum, mean, max, min); when a window closes
(checked at the next ``add``) or the Stat is deleted, it logs an event named
``"torch.monitor.Stat"`` holding ``{"<name>.<aggregation>": value}``, and ``get()`` returns
the last closed window's values. :class:`TensorboardEventHandler` writes those events as
scalars.

Example::

    >>> import datetime
    >>> seen = []
    >>> handle = ember.monitor.register_event_handler(seen.append)
    >>> ember.monitor.log_event(ember.monitor.Event(
    ...     name="step", timestamp=datetime.datetime.now(), data={"loss": 0.5}))
    >>> seen[0].name, seen[0].data
    ('step', {'loss': 0.5})
    >>> ember.monitor.unregister_event_handler(handle)
"""

from __future__ import annotations

import datetime
import enum
import threading
import time
from collections.abc import Callable

__all__ = [
    "Aggregation", "Event", "EventHandlerHandle", "STAT_EVENT", "Stat",
    "TensorboardEventHandler", "data_value_t", "log_event", "register_event_handler",
    "unregister_event_handler",
]

#: the name of the events a Stat logs
STAT_EVENT = "torch.monitor.Stat"

#: the types an Event's data values may have (bools are stored as floats, as PyTorch does)
data_value_t = str | float | int | bool


class Aggregation(int, enum.Enum):
    """How a :class:`Stat` summarises its window (``VALUE`` is accepted and not reported).

    Example::

        >>> ember.monitor.Aggregation.MEAN
        <Aggregation.MEAN: 2>
    """

    VALUE = 0
    MEAN = 2
    COUNT = 3
    SUM = 4
    MAX = 5
    MIN = 6

    __str__ = enum.Enum.__str__


class Event:
    """One monitoring event.

    Args:
        name (str): what happened.
        timestamp (datetime.datetime): when.
        data (dict): ``{str: str | float | int | bool}``; bools are stored as floats.

    Raises:
        TypeError: a missing argument, or a data value of another type.

    Example::

        >>> import datetime
        >>> e = ember.monitor.Event(name="x", timestamp=datetime.datetime.now(),
        ...                         data={"ok": True})
        >>> e.data
        {'ok': 1.0}
    """

    def __init__(self, name: str, timestamp: datetime.datetime, data: dict):
        if not isinstance(name, str) or not isinstance(timestamp, datetime.datetime):
            raise TypeError("Event: expected name (str) and timestamp (datetime.datetime)")
        clean = {}
        for key, value in dict(data).items():
            if isinstance(value, bool):
                value = float(value)
            elif not isinstance(value, (str, float, int)):
                raise TypeError(f"Event: data values must be str, float, int or bool, got "
                                f"{type(value).__name__} for {key!r}")
            clean[str(key)] = value
        self.name = name
        self.timestamp = timestamp
        self.data = clean


class EventHandlerHandle:
    """What :func:`register_event_handler` returns, for :func:`unregister_event_handler`.

    Args:
        handler: the registered callable.

    Example::

        >>> h = ember.monitor.register_event_handler(lambda event: None)
        >>> ember.monitor.unregister_event_handler(h)"""

    def __init__(self, handler):
        self._handler = handler


_handlers: list = []
_handlers_lock = threading.Lock()


def register_event_handler(handler: Callable[[Event], None]) -> EventHandlerHandle:
    """Call ``handler(event)`` for every event logged from now on.

    Args:
        handler (callable): takes an :class:`Event`.

    Returns:
        EventHandlerHandle: to unregister it.

    Example::

        >>> handle = ember.monitor.register_event_handler(print)
        >>> ember.monitor.unregister_event_handler(handle)
    """
    handle = EventHandlerHandle(handler)
    with _handlers_lock:
        _handlers.append(handle)
    return handle


def unregister_event_handler(handle: EventHandlerHandle) -> None:
    """Stop calling the handler ``handle`` was returned for.

    Args:
        handle (EventHandlerHandle): from :func:`register_event_handler`.

    Example::

        >>> ember.monitor.unregister_event_handler(ember.monitor.register_event_handler(print))
    """
    with _handlers_lock:
        if handle in _handlers:
            _handlers.remove(handle)


def log_event(event: Event) -> None:
    """Pass ``event`` to every registered handler.

    Args:
        event (Event): the event.

    Example::

        >>> import datetime
        >>> ember.monitor.log_event(ember.monitor.Event("x", datetime.datetime.now(), {}))
    """
    with _handlers_lock:
        handlers = list(_handlers)
    for handle in handlers:
        handle._handler(event)


# the order PyTorch reports aggregations in: events, and get()
_EVENT_ORDER = (Aggregation.COUNT, Aggregation.SUM, Aggregation.MEAN, Aggregation.MAX,
                Aggregation.MIN)
_GET_ORDER = tuple(reversed(_EVENT_ORDER))


class Stat:
    """Summary statistics of the values added over fixed time windows.

    Args:
        name (str): the stat's name (event keys are ``"<name>.<aggregation>"``).
        aggregations (sequence of Aggregation): what to compute.
        window_size (datetime.timedelta): the window length (millisecond precision).
        max_samples (int): the most values a window takes; later ``add`` calls in the same
            window are dropped.

    Example::

        >>> import datetime
        >>> s = ember.monitor.Stat("loss", [ember.monitor.Aggregation.MEAN],
        ...                        datetime.timedelta(seconds=60))
        >>> s.add(1.0); s.add(3.0)
        >>> s.count, s.get()
        (2, {<Aggregation.MEAN: 2>: 0.0})
    """

    def __init__(self, name: str, aggregations, window_size: datetime.timedelta,
                 max_samples: int = 2**63 - 1):
        if not isinstance(window_size, datetime.timedelta):
            raise TypeError("Stat: window_size must be a datetime.timedelta, got "
                            f"{type(window_size).__name__}")
        self._name = name
        self._aggregations = [Aggregation(a) for a in aggregations]
        self._window_ms = int(window_size / datetime.timedelta(milliseconds=1))
        self._max_samples = int(max_samples)
        self._lock = threading.Lock()
        self._last = {a: 0.0 for a in _GET_ORDER if a in self._aggregations}
        self._start = self._now_ms()
        self._reset()

    @staticmethod
    def _now_ms() -> int:
        return time.monotonic_ns() // 1_000_000

    def _reset(self):
        self._count, self._sum = 0, 0.0
        self._max, self._min = -float("inf"), float("inf")

    def _summary(self, order) -> dict:
        values = {Aggregation.COUNT: float(self._count), Aggregation.SUM: self._sum,
                  Aggregation.MEAN: self._sum / self._count if self._count else 0.0,
                  Aggregation.MAX: self._max, Aggregation.MIN: self._min}
        return {a: values[a] for a in order if a in self._aggregations}

    def _close_window(self):
        self._last = self._summary(_GET_ORDER)
        data = {f"{self._name}.{a.name.lower()}": v for a, v in self._summary(_EVENT_ORDER).items()}
        self._reset()
        log_event(Event(STAT_EVENT, datetime.datetime.now(), data))

    @property
    def name(self) -> str:
        """The stat's name."""
        return self._name

    @property
    def count(self) -> int:
        """How many values the current window holds."""
        return self._count

    def add(self, v: float) -> None:
        """Add a value to the current window (closing the previous window first if its time
        is up).

        Args:
            v (float): the value.
        """
        with self._lock:
            now = self._now_ms()
            if now - self._start >= self._window_ms:
                if self._count:
                    self._close_window()
                self._start = now
            if self._count >= self._max_samples:
                return
            v = float(v)
            self._count += 1
            self._sum += v
            self._max = max(self._max, v)
            self._min = min(self._min, v)

    def get(self) -> dict:
        """The aggregations of the last closed window (zeros before any window closed).

        Returns:
            dict: ``{Aggregation: float}``.
        """
        with self._lock:
            return dict(self._last)

    def __del__(self):
        try:
            if self._count:
                self._close_window()
        except Exception:  # noqa: BLE001  (interpreter shutdown)
            pass


class TensorboardEventHandler:
    """An event handler writing ``Stat`` events to a TensorBoard ``SummaryWriter`` as scalars.

    Args:
        writer (SummaryWriter): where to write.

    Example::

        >>> class Writer:
        ...     def add_scalar(self, tag, value, walltime=None):
        ...         print(tag, value)
        >>> handler = ember.monitor.TensorboardEventHandler(Writer())
        >>> import datetime
        >>> handler(ember.monitor.Event(ember.monitor.STAT_EVENT, datetime.datetime.now(),
        ...                             {"loss.mean": 0.5}))
        loss.mean 0.5
    """

    def __init__(self, writer) -> None:
        self._writer = writer

    def __call__(self, event: Event) -> None:
        if event.name == STAT_EVENT:
            for key, value in event.data.items():
                self._writer.add_scalar(key, value, walltime=event.timestamp.timestamp())
