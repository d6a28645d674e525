"""The elastic modules' default log level.

Example::

    >>> from ember.distributed.elastic.utils.log_level import get_log_level
    >>> get_log_level()
    'WARNING'
"""

__all__ = ["get_log_level"]


def get_log_level() -> str:
    """The default level of the elastic loggers (``LOGLEVEL`` overrides it).

    Returns:
        str

    Example::

        >>> get_log_level()
        'WARNING'
    """
    return "WARNING"
