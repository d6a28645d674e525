"""``ember.distributed.elastic.agent.server``: the per-node agent
(``torch.distributed.elastic.agent.server``): :class:`WorkerSpec` says what to run,
:class:`LocalElasticAgent` runs it as local processes through a rendezvous, restarting
failed groups, and returns a :class:`RunResult`.

Example::

    >>> from ember.distributed.elastic.agent.server import RunResult, WorkerState
    >>> RunResult(WorkerState.FAILED).is_failed()
    True
"""

from .api import (  # noqa: F401
    ElasticAgent,
    RunResult,
    SimpleElasticAgent,
    Worker,
    WorkerGroup,
    WorkerSpec,
    WorkerState,
)
from .local_elastic_agent import (  # noqa: F401
    TORCHELASTIC_ENABLE_FILE_TIMER,
    TORCHELASTIC_TIMER_FILE,
)
