"""The events an elastic job records: generic :class:`Event` (from the agent or a worker)
and :class:`RdzvEvent` (a rendezvous step), both serialized as one JSON line.

Example::

    >>> from ember.distributed.elastic.events.api import Event, EventSource
    >>> e = Event("start", EventSource.AGENT, metadata={"rank": 0})
    >>> Event.deserialize(e.serialize()) == e
    True
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import Enum

__all__ = ["Event", "EventMetadataValue", "EventSource", "NodeState", "RdzvEvent"]

EventMetadataValue = str | int | float | bool | None


class EventSource(str, Enum):
    """Who produced an event: the ``AGENT`` or a ``WORKER``.

    Example::

        >>> EventSource["WORKER"].value
        'WORKER'
    """

    AGENT = "AGENT"
    WORKER = "WORKER"


@dataclass
class Event:
    """Something that happened in an elastic job.

    Args:
        name (str): the event's name.
        source (EventSource): who produced it.
        timestamp (int): when, in milliseconds.
        metadata (dict): values attached (str, int, float, bool or None).

    Example::

        >>> str(Event("x", EventSource.WORKER))
        '{"name": "x", "source": "WORKER", "timestamp": 0, "metadata": {}}'
    """

    name: str
    source: EventSource
    timestamp: int = 0
    metadata: dict[str, EventMetadataValue] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.serialize()

    @staticmethod
    def deserialize(data: str | Event) -> Event:
        """An event from its JSON text (an event is returned as it is).

        Args:
            data (str or Event): the text.

        Returns:
            Event
        """
        if isinstance(data, Event):
            return data
        d = json.loads(data)
        d["source"] = EventSource[d["source"]]
        return Event(**d)

    def serialize(self) -> str:
        """The event as one line of JSON.

        Returns:
            str
        """
        return json.dumps(asdict(self))


class NodeState(str, Enum):
    """A node's state in a rendezvous event.

    Example::

        >>> NodeState.SUCCEEDED.value
        'SUCCEEDED'
    """

    INIT = "INIT"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


@dataclass
class RdzvEvent:
    """A step of a rendezvous on one node.

    Args:
        name (str): the step.
        run_id (str): the job's id.
        message (str): what happened.
        hostname (str): the node's host.
        pid (int): the agent's process id.
        node_state (NodeState): the node's state.
        master_endpoint (str): the store's endpoint, if known.
        rank (int, optional): the node's rank, if known.
        local_id (int, optional): the node's local id.
        error_trace (str): a traceback, for an error.

    Example::

        >>> e = RdzvEvent("join", "job", "joined", "host", 7, NodeState.RUNNING)
        >>> RdzvEvent.deserialize(e.serialize()) == e
        True
    """

    name: str
    run_id: str
    message: str
    hostname: str
    pid: int
    node_state: NodeState
    master_endpoint: str = ""
    rank: int | None = None
    local_id: int | None = None
    error_trace: str = ""

    def __str__(self) -> str:
        return self.serialize()

    @staticmethod
    def deserialize(data: str | RdzvEvent) -> RdzvEvent:
        """An event from its JSON text (an event is returned as it is).

        Args:
            data (str or RdzvEvent): the text.

        Returns:
            RdzvEvent
        """
        if isinstance(data, RdzvEvent):
            return data
        d = json.loads(data)
        d["node_state"] = NodeState[d["node_state"]]
        return RdzvEvent(**d)

    def serialize(self) -> str:
        """The event as one line of JSON.

        Returns:
            str
        """
        return json.dumps(asdict(self))
