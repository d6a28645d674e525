"""``ember.distributed.elastic``: what ``python -m ember.distributed.run`` is built from,
and what scripts and tools import of ``torch.distributed.elastic``:

- ``multiprocessing``: start local workers (``start_processes``), lay out their logs
  (``DefaultLogsSpecs``, ``Std``), and record failures (``errors.record``,
  ``ChildFailedError``);
- ``rendezvous``: how agents agree on a group (``RendezvousParameters``, the ``static``
  and ``c10d`` handlers);
- ``agent.server``: the per-node agent (``WorkerSpec``, ``LocalElasticAgent``,
  ``RunResult``);
- ``timer``: countdown timers that reap stuck workers (``expires``);
- ``events``, ``metrics``, ``utils``: recording, counters, store helpers and loggers.

Example::

    >>> from ember.distributed.elastic.multiprocessing.errors import record
    >>> record(lambda: 3)()
    3
"""
