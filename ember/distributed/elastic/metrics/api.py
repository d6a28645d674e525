"""Metrics of an elastic job: named integer values in groups, sent to the handler
configured for the group (:class:`NullMetricHandler` unless configured).

Example::

    >>> from ember.distributed.elastic.metrics.api import ConsoleMetricHandler, configure
    >>> from ember.distributed.elastic.metrics.api import NullMetricHandler, put_metric
    >>> configure(ConsoleMetricHandler(), group="demo")
    >>> put_metric("steps", 10, "demo")  # doctest: +ELLIPSIS
    [...][demo]: steps=10
    >>> configure(NullMetricHandler(), group="demo")
"""

from __future__ import annotations

import abc
import time
import warnings
from collections import namedtuple
from functools import wraps

__all__ = ["ConsoleMetricHandler", "MetricData", "MetricHandler", "MetricStream",
           "MetricsConfig", "NullMetricHandler", "configure", "getStream",
           "get_elapsed_time_ms", "prof", "profile", "publish_metric", "put_metric"]

MetricData = namedtuple("MetricData", ["timestamp", "group_name", "name", "value"])


class MetricsConfig:
    """Settings of a metrics back end (``params``: name -> value).

    Args:
        params (dict, optional): the settings.

    Example::

        >>> MetricsConfig().params
        {}
    """

    __slots__ = ["params"]

    def __init__(self, params: dict[str, str] | None = None):
        self.params = {} if params is None else params


class MetricHandler(abc.ABC):
    """Receives metric data points (subclass it to send them somewhere).

    Example::

        >>> issubclass(ConsoleMetricHandler, MetricHandler)
        True
    """

    @abc.abstractmethod
    def emit(self, metric_data: MetricData):
        """Handle one data point.

        Args:
            metric_data (MetricData): the point.
        """


class ConsoleMetricHandler(MetricHandler):
    """Prints each point as ``[timestamp][group]: name=value``.

    Example::

        >>> ConsoleMetricHandler().emit(MetricData(1.5, "g", "n", 2))
        [1.5][g]: n=2
    """

    def emit(self, metric_data: MetricData):
        """Print the point.

        Args:
            metric_data (MetricData): the point.
        """
        print(f"[{metric_data.timestamp}][{metric_data.group_name}]: "
              f"{metric_data.name}={metric_data.value}")


class NullMetricHandler(MetricHandler):
    """Drops every point.

    Example::

        >>> NullMetricHandler().emit(MetricData(0, "g", "n", 1))
    """

    def emit(self, metric_data: MetricData):
        """Drop the point.

        Args:
            metric_data (MetricData): the point.
        """


class MetricStream:
    """The points of one group, sent to one handler.

    Args:
        group_name (str): the group.
        handler (MetricHandler): where points go.

    Example::

        >>> MetricStream("g", ConsoleMetricHandler()).add_value("n", 1)  # doctest: +ELLIPSIS
        [...][g]: n=1
    """

    def __init__(self, group_name: str, handler: MetricHandler):
        self.group_name = group_name
        self.handler = handler

    def add_value(self, metric_name: str, metric_value: int):
        """Send a point stamped with the current time.

        Args:
            metric_name (str): its name.
            metric_value (int): its value.
        """
        self.handler.emit(MetricData(time.time(), self.group_name, metric_name, metric_value))


_metrics_map: dict[str, MetricHandler] = {}
_default_metrics_handler: MetricHandler = NullMetricHandler()


def configure(handler: MetricHandler, group: str | None = None):
    """Send the points of ``group`` (of every group without its own, when None) to
    ``handler``.

    Args:
        handler (MetricHandler): the handler.
        group (str, optional): the group.

    Example::

        >>> configure(NullMetricHandler())
    """
    global _default_metrics_handler
    if group is None:
        _default_metrics_handler = handler
    else:
        _metrics_map[group] = handler


def getStream(group: str) -> MetricStream:  # noqa: N802 -- PyTorch's name
    """The stream of ``group``, with its configured handler.

    Args:
        group (str): the group.

    Returns:
        MetricStream

    Example::

        >>> getStream("g").group_name
        'g'
    """
    return MetricStream(group, _metrics_map.get(group, _default_metrics_handler))


def _metric_name(fn) -> str:
    parts = fn.__qualname__.split(".")
    if len(parts) == 1 and fn.__module__:
        return fn.__module__.split(".")[-1] + "." + parts[0]
    return fn.__qualname__


def prof(fn=None, group: str = "torchelastic"):
    """Decorate a function to publish ``<name>.success`` or ``<name>.failure`` (1) and
    ``<name>.duration.ms`` for each call; the name is ``Class.method``, or
    ``module.function``.

    Args:
        fn (callable, optional): the function (or use ``@prof(group=...)``).
        group (str): the metric group.

    Returns:
        the wrapped function (or a decorator).

    Example::

        >>> @prof(group="demo")
        ... def step():
        ...     return 1
        >>> step()
        1
    """
    def wrap(f):
        @wraps(f)
        def wrapper(*args, **kwargs):
            key = _metric_name(f)
            start = time.time()
            try:
                result = f(*args, **kwargs)
                put_metric(f"{key}.success", 1, group)
            except Exception:
                put_metric(f"{key}.failure", 1, group)
                raise
            finally:
                put_metric(f"{key}.duration.ms", get_elapsed_time_ms(start), group)
            return result

        return wrapper

    return wrap(fn) if fn else wrap


def profile(group=None):
    """The older form of :func:`prof` (deprecated): metrics named after the function.

    Args:
        group (str): the metric group.

    Returns:
        a decorator.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     f = profile("demo")(lambda: 2)
        >>> f()
        2
    """
    warnings.warn("Deprecated, use `@prof` instead", FutureWarning, stacklevel=2)

    def wrap(func):
        @wraps(func)
        def wrapper(*args, **kwargs):
            start = time.time()
            stream = getStream(group)
            try:
                result = func(*args, **kwargs)
                stream.add_value(f"{func.__name__}.success", 1)
            except Exception:
                stream.add_value(f"{func.__name__}.failure", 1)
                raise
            finally:
                stream.add_value(f"{func.__name__}.duration.ms", get_elapsed_time_ms(start))
            return result

        return wrapper

    return wrap


def put_metric(metric_name: str, metric_value: int, metric_group: str = "torchelastic"):
    """Publish one data point.

    Args:
        metric_name (str): its name.
        metric_value (int): its value.
        metric_group (str): its group.

    Example::

        >>> put_metric("restarts", 1)
    """
    getStream(metric_group).add_value(metric_name, metric_value)


def publish_metric(metric_group: str, metric_name: str, metric_value: int):
    """Publish one data point (deprecated: :func:`put_metric`).

    Args:
        metric_group (str): its group.
        metric_name (str): its name.
        metric_value (int): its value.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     publish_metric("g", "n", 1)
    """
    warnings.warn("Deprecated, use `put_metric(metric_group)(metric_name, metric_value)` "
                  "instead", FutureWarning, stacklevel=2)
    getStream(metric_group).add_value(metric_name, metric_value)


def get_elapsed_time_ms(start_time_in_seconds: float) -> int:
    """Milliseconds since ``start_time_in_seconds`` (a ``time.time()`` value).

    Args:
        start_time_in_seconds (float): the start.

    Returns:
        int

    Example::

        >>> import time
        >>> get_elapsed_time_ms(time.time()) >= 0
        True
    """
    return int((time.time() - start_time_in_seconds) * 1000)
