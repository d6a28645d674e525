"""One worker program and its streams
(``torch.distributed.elastic.multiprocessing.subprocess_handler``).

Example::

    >>> from ember.distributed.elastic.multiprocessing.subprocess_handler import (
    ...     get_subprocess_handler)
    >>> h = get_subprocess_handler("true", (), {}, "", "", 0)
    >>> h.proc.wait()
    0
"""

from .handlers import get_subprocess_handler
from .subprocess_handler import SubprocessHandler

__all__ = ["SubprocessHandler", "get_subprocess_handler"]
