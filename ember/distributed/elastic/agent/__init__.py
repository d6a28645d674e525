"""``ember.distributed.elastic.agent``: the per-node agents that start, watch and restart
workers (``torch.distributed.elastic.agent``); see :mod:`.server`.

Example::

    >>> from ember.distributed.elastic.agent.server import WorkerState
    >>> WorkerState.is_running(WorkerState.HEALTHY)
    True
"""
