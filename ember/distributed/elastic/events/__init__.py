"""``ember.distributed.elastic.events``: recording what happens in an elastic job
(``torch.distributed.elastic.events``). An event is written, as one JSON line, to the
logger of its destination (:mod:`.handlers`): nowhere by default, standard error for
``"console"``.

Example::

    >>> from ember.distributed.elastic.events import Event, EventSource, record
    >>> record(Event("epoch_done", EventSource.WORKER, metadata={"epoch": 3}))
"""

from __future__ import annotations

import inspect
import logging
import os
import socket
import traceback

from .api import Event, EventMetadataValue, EventSource, NodeState, RdzvEvent
from .handlers import get_logging_handler

__all__ = ["Event", "EventMetadataValue", "EventSource", "NodeState", "RdzvEvent",
           "construct_and_record_rdzv_event", "get_logging_handler", "record",
           "record_rdzv_event"]

_events_loggers: dict[str, logging.Logger] = {}


def _get_or_create_logger(destination: str = "null") -> logging.Logger:
    # one logger per destination, not propagating (an event is handled once)
    if destination not in _events_loggers:
        log = logging.getLogger(f"torchelastic-events-{destination}")
        log.setLevel(os.environ.get("LOGLEVEL", "INFO"))
        log.propagate = False
        log.addHandler(get_logging_handler(destination))
        _events_loggers[destination] = log
    return _events_loggers[destination]


def record(event: Event, destination: str = "null") -> None:
    """Write ``event`` to ``destination``.

    Args:
        event (Event): the event.
        destination (str): a name of :mod:`.handlers`.

    Returns:
        None

    Example::

        >>> record(Event("x", EventSource.AGENT), destination="null")
    """
    _get_or_create_logger(destination).info(event.serialize())


def record_rdzv_event(event: RdzvEvent) -> None:
    """Write a rendezvous event to the ``"dynamic_rendezvous"`` destination.

    Args:
        event (RdzvEvent): the event.

    Returns:
        None

    Example::

        >>> record_rdzv_event(RdzvEvent("join", "job", "m", "h", 1, NodeState.INIT))
    """
    _get_or_create_logger("dynamic_rendezvous").info(event.serialize())


def construct_and_record_rdzv_event(run_id: str, message: str, node_state: NodeState,
                                    name: str = "", hostname: str = "", pid: int | None = None,
                                    master_endpoint: str = "", local_id: int | None = None,
                                    rank: int | None = None) -> None:
    """Build a :class:`RdzvEvent` (host, pid, and the calling function's name filled in
    when not given; the current exception's traceback for a FAILED node) and record it;
    nothing is built while rendezvous events go nowhere.

    Args:
        run_id (str): the job's id.
        message (str): what happened.
        node_state (NodeState): the node's state.
        name (str): the step (default: ``<file>#<function>`` of the caller).
        hostname (str): the host (default: this one's).
        pid (int, optional): the process (default: this one).
        master_endpoint (str): the store's endpoint.
        local_id (int, optional): the node's local id.
        rank (int, optional): the node's rank.

    Returns:
        None

    Example::

        >>> construct_and_record_rdzv_event("job", "joined", NodeState.RUNNING)
    """
    if isinstance(get_logging_handler("dynamic_rendezvous"), logging.NullHandler):
        return
    hostname = hostname or socket.getfqdn()
    pid = pid or os.getpid()
    if not name:
        caller = inspect.stack()[1]
        name = f"{os.path.basename(caller.filename)}#{caller.function}"
    error_trace = traceback.format_exc() if node_state == NodeState.FAILED else ""
    if error_trace == "NoneType: None\n":
        error_trace = ""
    record_rdzv_event(RdzvEvent(name=name, run_id=run_id, message=message,
                                hostname=hostname, pid=pid, node_state=node_state,
                                master_endpoint=master_endpoint, rank=rank,
                                local_id=local_id, error_trace=error_trace))
