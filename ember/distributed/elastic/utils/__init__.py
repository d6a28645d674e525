"""``ember.distributed.elastic.utils``: helpers of the launcher's agents and of scripts
(``torch.distributed.elastic.utils``): loggers, store helpers (``store``), free ports and
stores (``distributed``), environment checks and argument macros (``api``).

Example::

    >>> from ember.distributed.elastic.utils import macros
    >>> macros.substitute(["--rank=${local_rank}"], "3")
    ['--rank=3']
"""

from .api import get_env_variable_or_raise, get_socket_with_port, macros  # noqa: F401

__all__ = ["get_env_variable_or_raise", "get_socket_with_port", "macros"]
