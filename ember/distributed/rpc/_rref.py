"""Remote references: ``RRef``, and the owner's side of ``remote()``.

NOTE [ RRef lifetime ]
The worker that holds an RRef's value is its *owner*; every other worker holding the RRef
holds a *user* reference. The owner keeps a table entry per shared value with the number
of live user references, and frees the entry when that number drops to zero (an RRef
object on the owner keeps the value through the entry itself, so its own copies never
count). The count only grows before a reference exists somewhere new, so it never touches
zero while one is in flight:

- ``remote()`` registers the entry with count 1 when the owner *receives* the request (in
  the connection's reader thread, so any later message on that connection can name it);
- pickling an RRef to send it adds one first: on the owner, directly; on a user, by a
  request to the owner that is answered before the message carrying the RRef leaves;
- unpickling it on the owner gives back that one (the owner holds no user reference);
- a user RRef that is garbage-collected queues a "decref" message, sent by a thread of
  the agent (``__del__`` must not take the connection's lock).

Messages on one connection are handled in the order they were sent, which is what makes
the first rule sufficient.
"""

from __future__ import annotations

import itertools
import sys
import threading
from typing import Generic, TypeVar

from ...futures import Future
from . import _agent as _agent_mod
from ._agent import _Deferred, handler

T = TypeVar("T")


class _Owned:
    """The owner's record of one shared value: its Future and its user-reference count."""

    __slots__ = ("future", "count", "type_hint")

    def __init__(self, future, count, type_hint=None):
        self.future, self.count, self.type_hint = future, count, type_hint


class _Table:
    """The owner's entries, by RRef id."""

    def __init__(self, rank):
        self.rank = rank
        self.entries: dict = {}
        self.lock = threading.Lock()
        self.local_ids = itertools.count()

    def new_id(self):
        return (self.rank, next(self.local_ids))

    def add_ref(self, rref_id, entry, n=1):
        with self.lock:
            entry.count += n
            if entry.count > 0:
                self.entries[rref_id] = entry
            else:
                self.entries.pop(rref_id, None)

    def get(self, rref_id):
        with self.lock:
            entry = self.entries.get(rref_id)
        if entry is None:
            raise RuntimeError(f"RRef: the owner holds no value for "
                               f"GloballyUniqueId(created_on={rref_id[0]}, "
                               f"local_id={rref_id[1]}); was it already released?")
        return entry


def _agent():
    from . import _current_agent

    return _current_agent()


def _gid(i):
    return f"GloballyUniqueId(created_on={i[0]}, local_id={i[1]})"


class RRef(Generic[T]):
    """A reference to a value that lives on one worker (its owner), usable from any
    worker: ``to_here()`` copies the value over, ``rpc_sync()`` / ``rpc_async()`` /
    ``remote()`` run its methods on the owner. See NOTE [ RRef lifetime ].

    ``RRef(value)`` makes this worker the owner of ``value``; ``rpc.remote`` returns
    RRefs owned by other workers.

    Args:
        value: the value to own.
        type_hint: accepted for compatibility (the value's type is read from it).

    Example::

        >>> rref = rpc.remote("ps", ParameterServer)          # doctest: +SKIP
        >>> rref.rpc_sync().get_param()                        # doctest: +SKIP
    """

    def __init__(self, value, type_hint=None):
        agent = _agent()
        table = agent.rrefs
        self._owner = agent.info
        self._id = table.new_id()
        self._fork_id = None
        fut = Future()
        fut.set_result(value)
        self._entry = _Owned(fut, 0, type_hint)
        self._confirmed = True

    @classmethod
    def _make(cls, owner, rref_id, fork_id, entry=None, confirmed=True):
        self = cls.__new__(cls)
        self._owner, self._id, self._fork_id = owner, rref_id, fork_id
        self._entry, self._confirmed = entry, confirmed
        return self

    # -- who owns it ----------------------------------------------------------------------------

    def is_owner(self) -> bool:
        """Whether this worker owns the value.

        Returns:
            bool

        Example::

            >>> rpc.RRef(ember.ones(2)).is_owner()    # doctest: +SKIP
            True
        """
        return self._entry is not None

    def owner(self):
        """The owner's ``WorkerInfo``.

        Returns:
            WorkerInfo

        Example::

            >>> rpc.remote("worker1", max, args=(1, 2)).owner()   # doctest: +SKIP
            WorkerInfo(id=1, name=worker1)
        """
        return self._owner

    def owner_name(self) -> str:
        """The owner's worker name.

        Returns:
            str

        Example::

            >>> rpc.remote("worker1", max, args=(1, 2)).owner_name()   # doctest: +SKIP
            'worker1'
        """
        return self._owner.name

    def confirmed_by_owner(self) -> bool:
        """Whether the owner has confirmed it knows this reference (a ``remote()`` RRef is
        confirmed once the owner has registered it, and always after ``to_here()``).

        Returns:
            bool

        Example::

            >>> r = rpc.remote("worker1", max, args=(1, 2)); _ = r.to_here()  # doctest: +SKIP
            >>> r.confirmed_by_owner()                                         # doctest: +SKIP
            True
        """
        if isinstance(self._confirmed, Future):
            return self._confirmed.done() and self._confirmed._exc is None
        return bool(self._confirmed)

    # -- the value ------------------------------------------------------------------------------

    def local_value(self):
        """The value itself, on the owner (waiting until a ``remote()`` call has made it).

        Returns:
            The value.

        Raises:
            RuntimeError: this worker is not the owner.
            The error the ``remote()`` function raised.

        Example::

            >>> rpc.RRef([1, 2]).local_value()    # doctest: +SKIP
            [1, 2]
        """
        if self._entry is None:
            me = _agent().info
            raise RuntimeError(f"For {self!r}, can't call localValue() on user {me}. Call it "
                               f"on owner {self._owner}")
        return self._entry.future.wait()

    def to_here(self, timeout: float = -1.0):
        """A copy of the value on this worker (the value itself on the owner).

        Args:
            timeout (float): seconds to wait; -1 uses the RPC default, 0 waits forever.

        Returns:
            The value.

        Example::

            >>> rref = rpc.remote("worker1", ember.add, args=(ember.ones(2), 1))  # doctest: +SKIP
            >>> rref.to_here()                                                  # doctest: +SKIP
            tensor([2., 2.])
        """
        if self._entry is not None:
            return self._entry.future.wait()
        agent = _agent()
        payload = self._id
        dist_autograd = sys.modules.get("ember.distributed.autograd")
        if dist_autograd is not None:  # inside a context: record the transfer
            payload = dist_autograd._wrap(payload, self._owner.id, kind="fetch")
        value = agent.request(self._owner, "fetch", payload, timeout).wait()
        if isinstance(self._confirmed, Future):
            self._confirmed.wait()  # sent before the value: the owner knows this RRef
        return value

    def _get_future(self) -> Future:
        """A Future completed when the owner has the value (confirmation on a user)."""
        if self._entry is not None:
            return self._entry.future
        if isinstance(self._confirmed, Future):
            return self._confirmed
        fut = Future()
        fut.set_result(None)
        return fut

    def _get_type(self, timeout: float = -1.0, blocking: bool = True):
        """The type of the value (asked of the owner on a user)."""
        if self._entry is not None:
            t = type(self._entry.future.wait())
        else:
            from . import rpc_async

            fut = rpc_async(self._owner, _value_type, args=(self,), timeout=timeout)
            if not blocking:
                return fut
            t = fut.wait()
        if not blocking:
            fut = Future()
            fut.set_result(t)
            return fut
        return t

    # -- running on the owner -------------------------------------------------------------------

    def rpc_sync(self, timeout: float = -1.0):
        """A proxy whose method calls run on the owner with ``rpc_sync`` and return the
        result: ``rref.rpc_sync().method(*args)`` is
        ``rpc_sync(rref.owner(), type(v).method, args=(v, *args))`` with ``v`` the value.

        Args:
            timeout (float): seconds per call; -1 uses the RPC default.

        Returns:
            A proxy object.

        Example::

            >>> rref.rpc_sync().size()    # doctest: +SKIP
            ember.Size([2])
        """
        from . import rpc_sync

        return _Proxy(self, rpc_sync, timeout)

    def rpc_async(self, timeout: float = -1.0):
        """A proxy whose method calls run on the owner with ``rpc_async``: each returns a
        Future of the result.

        Args:
            timeout (float): seconds per call; -1 uses the RPC default.

        Returns:
            A proxy object.

        Example::

            >>> rref.rpc_async().size().wait()    # doctest: +SKIP
            ember.Size([2])
        """
        from . import rpc_async

        return _Proxy(self, rpc_async, timeout)

    def remote(self, timeout: float = -1.0):
        """A proxy whose method calls run on the owner with ``remote``: each returns an
        RRef to the result, owned by this RRef's owner.

        Args:
            timeout (float): seconds per call; -1 uses the RPC default.

        Returns:
            A proxy object.

        Example::

            >>> rref.remote().size().to_here()    # doctest: +SKIP
            ember.Size([2])
        """
        from . import remote

        return _Proxy(self, remote, timeout)

    def backward(self, dist_autograd_ctx_id: int = -1, retain_graph: bool = False) -> None:
        """Back-propagate from the value, a scalar tensor. With a distributed-autograd
        context id, run ``ember.distributed.autograd.backward`` on the owner in that
        context (gradients land in the context); with -1, run a local ``backward()``,
        which only the owner can do.

        Args:
            dist_autograd_ctx_id (int): a context id, or -1 for a local backward.
            retain_graph (bool): keep the graph for another backward.

        Raises:
            RuntimeError: a local backward on a user, or the value is not a scalar that
                requires grad.

        Example::

            >>> with dist_autograd.context() as cid:                 # doctest: +SKIP
            ...     loss_rref = rpc.remote("worker1", compute_loss)
            ...     loss_rref.backward(cid)
        """
        if dist_autograd_ctx_id == -1:
            if self._entry is None:
                raise RuntimeError(f"{self!r}: a local backward (no distributed autograd "
                                   f"context id) must run on the owner {self._owner}")
            self.local_value().backward(retain_graph=retain_graph)
        elif self._entry is not None:
            _rref_backward(self, dist_autograd_ctx_id, retain_graph)
        else:
            from . import rpc_sync

            rpc_sync(self._owner, _rref_backward,
                     args=(self, dist_autograd_ctx_id, retain_graph))

    # -- sharing --------------------------------------------------------------------------------

    def __reduce__(self):
        agent = _agent()
        if self._entry is not None:
            agent.rrefs.add_ref(self._id, self._entry)
        else:
            agent.request(self._owner, "incref", self._id, -1.0).wait()
        return _rebuild, (self._owner.id, self._id, agent.rrefs.new_id())

    def __del__(self):
        try:
            if self._entry is None and self._confirmed is not False:
                agent = _agent_mod_current()
                if agent is not None:
                    agent.queue_decref(self._owner.id, self._id)
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self):
        if self._entry is not None:
            return f"OwnerRRef({_gid(self._id)})"
        return f"UserRRef(RRefId = {_gid(self._id)}, ForkId = {_gid(self._fork_id)})"


#: ``torch.distributed.rpc.PyRRef``'s name
PyRRef = RRef


def _agent_mod_current():
    from . import _AGENT

    return _AGENT[0]


def _rebuild(owner_id, rref_id, fork_id):
    agent = _agent()
    owner = agent.workers[owner_id]
    if owner_id == agent.rank:
        entry = agent.rrefs.get(rref_id)
        agent.rrefs.add_ref(rref_id, entry, -1)  # the sender's count (NOTE [ RRef lifetime ])
        return RRef._make(owner, rref_id, None, entry=entry)
    return RRef._make(owner, rref_id, fork_id)


class _Proxy:
    def __init__(self, rref, api, timeout):
        self._rref, self._api, self._timeout = rref, api, timeout

    def __getattr__(self, name):
        rref, api, timeout = self._rref, self._api, self._timeout

        def call(*args, **kwargs):
            return api(rref.owner(), _invoke_on_rref, args=(rref, name, args, kwargs),
                       timeout=timeout)

        call.__name__ = name
        return call


def _invoke_on_rref(rref, name, args, kwargs):
    """Run ``getattr(value, name)(*args, **kwargs)`` on the owner (proxies' function)."""
    method = getattr(rref.local_value(), name)
    result = method(*args, **kwargs)
    if _is_async(method):
        return _Deferred(result)
    return result


def _rref_backward(rref, context_id, retain_graph):
    from .. import autograd as dist_autograd

    dist_autograd.backward(context_id, [rref.local_value()], retain_graph)


def _value_type(rref):
    return type(rref.local_value())


def _is_async(fn):
    fn = getattr(fn, "__func__", fn)
    return hasattr(fn, "_wrapped_async_rpc_function")


def run_function(func, args, kwargs):
    """Call ``func`` for an RPC; a Future result of an async_execution function defers the
    reply until it completes."""
    result = func(*args, **kwargs)
    if _is_async(func) and not isinstance(result, _Deferred):
        if not isinstance(result, Future):
            raise TypeError(f"Functions decorated with @rpc.functions.async_execution must "
                            f"return a ember.futures.Future object, but got "
                            f"{type(result).__name__}")
        return _Deferred(result)
    return result


def settle(entry_future, result):
    """Complete an owner entry with ``result`` (waiting for it when it is deferred)."""
    if isinstance(result, _Deferred):
        def done(f):
            try:
                entry_future.set_result(f.wait())
            except Exception as e:  # noqa: BLE001
                entry_future.set_exception(e)

        result.future.add_done_callback(done)
    else:
        entry_future.set_result(result)


# -- the owner's handlers -----------------------------------------------------------------------

@handler("call")
def _handle_call(agent, payload):
    func, args, kwargs = payload
    return lambda: run_function(func, args, kwargs)


@handler("remote")
def _handle_remote(agent, payload):
    rref_id, func, args, kwargs = payload
    entry = _Owned(Future(), 0)
    agent.rrefs.add_ref(rref_id, entry)  # count 1: the creator's reference

    def run():
        try:
            settle(entry.future, run_function(func, args, kwargs))
        except Exception as e:  # noqa: BLE001 - kept for to_here(), not the confirmation
            entry.future.set_exception(e)

    def confirm():
        agent._pool.submit(run)
        return None  # the reply confirms the RRef at once; the value follows

    return confirm


@handler("fetch")
def _handle_fetch(agent, payload):
    in_context = not isinstance(payload, tuple)  # NOTE [ Distributed backward ]
    entry = agent.rrefs.get(payload.rref_id if in_context else payload)
    if in_context:
        return lambda: _Deferred(payload.reply(entry.future))
    return lambda: _Deferred(entry.future)


@handler("incref")
def _handle_incref(agent, rref_id):
    agent.rrefs.add_ref(rref_id, agent.rrefs.get(rref_id))
    return lambda: None


@handler("decref")
def _handle_decref(agent, rref_id):
    with agent.rrefs.lock:
        entry = agent.rrefs.entries.get(rref_id)
    if entry is not None:
        agent.rrefs.add_ref(rref_id, entry, -1)
    return None


_ = _agent_mod  # the handlers above register into _agent's table
