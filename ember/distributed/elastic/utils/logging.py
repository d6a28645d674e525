"""The elastic modules' loggers (``torch.distributed.elastic.utils.logging``).

Example::

    >>> from ember.distributed.elastic.utils.logging import get_logger
    >>> get_logger("my.module").name
    'my.module'
"""

from __future__ import annotations

import inspect
import logging
import os
import warnings

from .log_level import get_log_level

__all__ = ["get_log_level", "get_logger"]


def get_logger(name: str | None = None) -> logging.Logger:
    """A logger at the level ``LOGLEVEL`` names (default WARNING), named ``name`` or after
    the calling module.

    Args:
        name (str, optional): the logger's name.

    Returns:
        logging.Logger

    Example::

        >>> get_logger("trainer").getEffectiveLevel() >= 10
        True
    """
    if name is None:
        name = _caller_module_name()
    logger = logging.getLogger(name)
    logger.setLevel(os.environ.get("LOGLEVEL", get_log_level()))
    return logger


def _caller_module_name() -> str | None:
    try:
        frame = inspect.stack()[2]
        module = frame.frame.f_globals.get("__name__")
        if module:
            return module
        return os.path.splitext(os.path.basename(frame.filename))[0]
    except Exception as e:  # noqa: BLE001 - a logger without a name still logs
        warnings.warn(f"Error deriving logger module name, using <None>. Exception: {e}",
                      RuntimeWarning, stacklevel=2)
        return None
