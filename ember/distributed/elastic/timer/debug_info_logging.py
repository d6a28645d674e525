"""A hook called with the timers that expired, before their workers are reaped (it logs
them; a site may replace it to dump more, such as stacks).

Example::

    >>> from ember.distributed.elastic.timer.debug_info_logging import (
    ...     log_debug_info_for_expired_timers)
    >>> log_debug_info_for_expired_timers("job", {})
"""

from __future__ import annotations

import logging

from ..utils.logging import get_logger

__all__ = ["get_logger", "log_debug_info_for_expired_timers"]

logger = get_logger(__name__)


def log_debug_info_for_expired_timers(run_id: str, expired_timers: dict[int, list[str]]):
    """Log the expired timers of job ``run_id`` (pid -> scope names).

    Args:
        run_id (str): the job.
        expired_timers (dict[int, list[str]]): pid -> scopes.

    Returns:
        None

    Example::

        >>> log_debug_info_for_expired_timers("job", {123: ["step"]})
    """
    if expired_timers:
        logger.log(logging.INFO, "Timers expired for run:[%s] [%s].", run_id, expired_timers)
