"""``ember.distributed.elastic.metrics``: counters and timings of an elastic job
(``torch.distributed.elastic.metrics``), dropped unless a handler is configured.

Example::

    >>> from ember.distributed.elastic import metrics
    >>> metrics.configure(metrics.NullMetricHandler())
    >>> metrics.put_metric("worker_restarts", 1, "my_job")
"""

from .api import (  # noqa: F401
    ConsoleMetricHandler,
    MetricData,
    MetricHandler,
    MetricsConfig,
    NullMetricHandler,
    configure,
    get_elapsed_time_ms,
    getStream,
    prof,
    profile,
    publish_metric,
    put_metric,
)


def initialize_metrics(cfg: MetricsConfig | None = None) -> None:
    """Set up the metrics back end from ``cfg`` (ember's is the handler set with
    ``configure``: nothing else to set up).

    Args:
        cfg (MetricsConfig, optional): the settings.

    Returns:
        None

    Example::

        >>> initialize_metrics(MetricsConfig({"backend": "console"}))
    """
