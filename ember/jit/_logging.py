"""Named statistics, as ``torch.jit._logging`` keeps them: a process-wide logger receives
``add_stat_value(key, value)`` calls; ``LockingLogger`` sums (or averages) them per key,
``NoopLogger`` (the default) drops them. ``torch.AggregationType``, ``torch.LoggerBase``,
``torch.LockingLogger`` and ``torch.NoopLogger`` are these classes.
"""

from __future__ import annotations

import enum
import threading
import time

__all__ = ["AggregationType", "LockingLogger", "LoggerBase", "NoopLogger", "add_stat_value",
           "set_logger", "time_point"]


class AggregationType(enum.Enum):
    """How ``LockingLogger`` folds the values logged under one key: ``SUM`` adds them,
    ``AVG`` gives their integer mean (``sum // count``).

    Example::

        >>> ember.AggregationType.AVG, int(ember.AVG)
        (<AggregationType.AVG: 1>, 1)
    """

    SUM = 0
    AVG = 1

    def __int__(self):
        return self.value

    __index__ = __int__

    def __str__(self):
        return f"AggregationType.{self.name}"


class LoggerBase:
    """The base of the statistics loggers; only its subclasses are made.

    Args:
        none: the base class has no constructor (TypeError).

    Returns:
        LoggerBase: only through a subclass.

    Example::

        >>> isinstance(ember.NoopLogger(), ember.LoggerBase)
        True
    """

    def __init__(self, *args, **kwargs):
        if type(self) is LoggerBase:
            raise TypeError(f"{__name__.rsplit('.', 2)[0]}._C.LoggerBase: No constructor "
                            "defined!")

    def add_stat_value(self, key: str, value: int) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class NoopLogger(LoggerBase):
    """A logger that drops every value (the process's logger until ``set_logger``).

    Args:
        none: takes no arguments.

    Returns:
        NoopLogger: a new logger.

    Example::

        >>> ember.NoopLogger().add_stat_value("x", 1)
    """

    def add_stat_value(self, key: str, value: int) -> None:
        """Drop ``value``.

        Args:
            key (str): the statistic's name.
            value (int): the amount.
        """


class LockingLogger(LoggerBase):
    """A thread-safe logger that folds the values logged under each key.

    Returns:
        LockingLogger: a new logger, every key summed until ``set_aggregation_type``.

    Example::

        >>> log = ember.LockingLogger()
        >>> log.add_stat_value("calls", 2); log.add_stat_value("calls", 3)
        >>> log.get_counter_val("calls")
        5
    """

    def __init__(self):
        super().__init__()
        self._lock = threading.Lock()
        self._values: dict[str, list[int]] = {}
        self._kinds: dict[str, AggregationType] = {}

    def add_stat_value(self, key: str, value: int) -> None:
        """Record ``value`` under ``key``.

        Args:
            key (str): the statistic's name.
            value (int): the amount.
        """
        with self._lock:
            self._values.setdefault(key, []).append(int(value))

    def set_aggregation_type(self, key: str, type: AggregationType) -> None:  # noqa: A002
        """Choose how the values of ``key`` fold.

        Args:
            key (str): the statistic's name.
            type (AggregationType): ``SUM`` or ``AVG``.
        """
        if not isinstance(type, AggregationType):
            raise TypeError("set_aggregation_type(): incompatible function arguments: type "
                            f"must be an AggregationType, got {builtin_type(type).__name__}")
        with self._lock:
            self._kinds[key] = type

    def get_counter_val(self, key: str) -> int:
        """The folded value of ``key`` (0 when nothing was logged under it).

        Args:
            key (str): the statistic's name.

        Returns:
            int: the sum, or the integer mean for ``AVG``.
        """
        with self._lock:
            values = self._values.get(key)
            if not values:
                return 0
            total = sum(values)
            if self._kinds.get(key, AggregationType.SUM) is AggregationType.AVG:
                n = len(values)  # C++'s integer division: toward zero
                return total // n if total >= 0 else -(-total // n)
            return total


builtin_type = type
_logger: LoggerBase = NoopLogger()
_logger_lock = threading.Lock()


def set_logger(logger: LoggerBase) -> LoggerBase:
    """Make ``logger`` the process's statistics logger.

    Args:
        logger (LoggerBase): a ``LockingLogger`` or ``NoopLogger``.

    Returns:
        LoggerBase: the logger it replaces.

    Example::

        >>> from ember.jit import _logging
        >>> old = _logging.set_logger(ember.LockingLogger())
        >>> _ = _logging.set_logger(old)
    """
    global _logger
    if not isinstance(logger, LoggerBase):
        raise TypeError(f"set_logger(): expected a LoggerBase, got {type(logger).__name__}")
    with _logger_lock:
        old, _logger = _logger, logger
    return old


def add_stat_value(key: str, value: int) -> None:
    """Log ``value`` under ``key`` with the process's logger.

    Args:
        key (str): the statistic's name.
        value (int): the amount.

    Example::

        >>> ember.jit._logging.add_stat_value("calls", 1)
    """
    _logger.add_stat_value(key, value)


def time_point() -> int:
    """A monotonic clock reading in nanoseconds, for timing statistics.

    Returns:
        int: nanoseconds.

    Example::

        >>> ember.jit._logging.time_point() > 0
        True
    """
    return time.monotonic_ns()
