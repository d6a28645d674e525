"""``ember.distributed.elastic.timer``: countdown timers that let a supervising process
reap a stuck worker (``torch.distributed.elastic.timer``).

A worker wraps a block that may hang in ``with expires(after=seconds): ...``; a
:class:`LocalTimerServer` (``multiprocessing`` queue) or :class:`FileTimerServer` (named
pipe) in the supervisor kills a worker whose timer expired.

Example::

    >>> import multiprocessing as mp
    >>> from ember.distributed.elastic import timer
    >>> queue = mp.Queue()
    >>> server = timer.LocalTimerServer(queue, max_interval=0.01); server.start()
    >>> timer.configure(timer.LocalTimerClient(queue))
    >>> with timer.expires(after=60):
    ...     pass
    >>> server.stop()
"""

from .api import (  # noqa: F401
    TimerClient,
    TimerRequest,
    TimerServer,
    configure,
    expires,
)
from .file_based_local_timer import (  # noqa: F401
    FileTimerClient,
    FileTimerRequest,
    FileTimerServer,
)
from .local_timer import LocalTimerClient, LocalTimerServer  # noqa: F401
