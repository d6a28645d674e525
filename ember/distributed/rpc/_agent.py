"""The RPC agent: one per process, it carries requests and replies between workers.

NOTE [ RPC transport ]
RPC needs what collectives do not: any worker may call any other at any time, while the
callee's main thread is busy with its own work, and a call may run further calls before it
answers (a parameter server calling back a trainer). So the transport is a server per
worker, not the MPI engine of the process groups: MPI offers no blocking receive that
leaves the CPU alone (MPICH's waits busy-poll; NOTE [ Waiting on MPI ] in ``../_group.py``),
and a receiving thread polling MPI for the whole life of the process would take CPU from
the main thread's work.

The wire is Python's ``multiprocessing.connection`` (stdlib, maintained with CPython):
``Listener`` / ``Client`` give length-prefixed messages over TCP and authenticate both
ends with an HMAC challenge on a shared ``authkey``, so no framing or handshake code is
ours. The key keeps out processes that did not join the rendezvous; it is no stronger than
the store that hands it out, which has no authentication (as in PyTorch, whose RPC has
none at all): run RPC on trusted networks.

The workers meet through the same rendezvous as ``init_process_group`` (``init_method``:
``env://`` with MASTER_ADDR/MASTER_PORT, ``tcp://``, ``file://``), which yields ember's
``TCPStore`` / ``FileStore``; when a default process group of the same size already
exists, its store is reused under the prefix ``rpc``. Rank 0 puts a random ``authkey`` in
the store; each worker puts its name and listening address there and reads everyone
else's. Under ``mpiexec`` without a store, the key and addresses go through one ``bcast``
and one ``allgather`` on ``MPI.COMM_WORLD`` instead.

Each worker opens one connection to every worker it calls (itself included, so a call to
self behaves as any other: arguments are copied). Requests go out on it and replies come
back on it; a reader thread per connection completes the callers' Futures by message id.
Incoming requests are read by a thread per accepted connection and run on a pool of
``num_worker_threads`` threads; a function marked ``@rpc.functions.async_execution``
returns a Future and the reply is sent when it completes, freeing the thread.

Messages are pickled (protocol 5) by ember's own tensor pickling (a tensor pickles as its
NumPy array). A message is two ``send_bytes`` frames, a small header (kind, message id,
buffer sizes) and the pickle, so a payload the receiver cannot unpickle still gets an
error reply; then the pickle's array buffers of 64 KiB or more follow as the raw bytes
the header announced, sent from the tensor's memory and received into the new array's
(``_Wire`` in ``_wire.py``; that memory is mapped as NOTE [ Receive buffers on small
pages ] there explains): without that, ``send_bytes``/``recv_bytes`` copy a large
tensor four times and made a 4 MB echo ~3x PyTorch's. ``Connection.send`` is not used:
its ForkingPickler would hand tensors to shared memory, which a remote machine cannot map.
Sockets are ``TCP_NODELAY``: without it a call waits ~40 ms on Nagle's algorithm.

NOTE [ Reader threads never block ]
A connection's reader thread must keep reading: a reply it waits for may come through
itself. So readers only unpickle and complete Futures; a Future with callbacks (``then``,
``add_done_callback``, which may call RPCs and pickle RRefs, which asks their owner) is
completed on the pool, and so is the reply of an ``async_execution`` function, whose
Future a reader may complete.

Remote errors travel as (exception type, message): the caller raises the same type with
"On WorkerInfo(id=.., name=..):" and the remote traceback in the message, as PyTorch.
"""

from __future__ import annotations

import concurrent.futures
import heapq
import itertools
import os
import pickle
import queue
import re
import socket
import sys
import threading
import time
import traceback
from multiprocessing.connection import Client, Listener

from ... import futures as _futures
from ...futures import Future
from ._wire import _dumps, _loads, _Wire

_HERE = os.path.dirname(os.path.abspath(__file__))
_FUTURES = os.path.dirname(os.path.abspath(_futures.__file__))
_NAME_RE = re.compile(r"^[A-Za-z0-9\-_:]*$")


class WorkerInfo:
    """A worker of the RPC group: its ``name`` and its ``id`` (its rank).

    Args:
        name (str): the worker's name (letters, digits, ``-``, ``_``, ``:``; 1-127 chars).
        id (int): its rank.

    Example::

        >>> from ember.distributed.rpc import WorkerInfo
        >>> WorkerInfo("trainer0", 1)
        WorkerInfo(id=1, name=trainer0)
    """

    __slots__ = ("name", "id")

    def __init__(self, name: str, id: int):
        if not isinstance(name, str) or not name or len(name) >= 128 or \
                not _NAME_RE.match(name):
            raise RuntimeError("Worker name must match ^[A-Za-z0-9-_:]*$, and must be "
                               f"non-empty and shorter than 128 chars, but got {name}")
        self.name, self.id = name, int(id)

    def __eq__(self, other):
        return isinstance(other, WorkerInfo) and (self.id, self.name) == (other.id, other.name)

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)


class _RemoteError:
    """An error raised by a remote function, carried back to the caller."""

    def __init__(self, exc, where):
        tb = exc.__traceback__
        # skip the agent's own frames: the caller wants the remote function's
        while tb is not None and tb.tb_next is not None and \
                tb.tb_frame.f_code.co_filename.startswith((_HERE, _FUTURES)):
            tb = tb.tb_next
        self.type = type(exc)
        self.message = (f"On {where}:\n{exc!r}\n"
                        + "".join(traceback.format_exception(type(exc), exc, tb)))

    def to_exception(self):
        try:
            return self.type(self.message)
        except Exception:  # noqa: BLE001 - a type that takes other arguments
            return RuntimeError(self.message)

    def __reduce__(self):
        return _rebuild_remote_error, (self.type, self.message)


def _rebuild_remote_error(typ, message):
    obj = _RemoteError.__new__(_RemoteError)
    obj.type, obj.message = typ, message
    return obj


def _open(payload):
    """A received payload, with a distributed-autograd envelope opened (NOTE [ Distributed
    backward ] in ``../autograd/__init__.py``)."""
    dist_autograd = sys.modules.get("ember.distributed.autograd")
    if dist_autograd is not None and isinstance(payload, dist_autograd._Envelope):
        return payload.open()
    return payload


def _timeout_error(seconds):
    return RuntimeError(f"RPCErr:1:RPC ran for more than set timeout ({int(seconds * 1000)} ms) "
                        "and will now be marked with an error")


class _Deadlines:
    """One thread failing the Futures whose RPC ran past its timeout."""

    def __init__(self):
        self._heap = []
        self._cv = threading.Condition()
        self._stopped = False
        self._count = itertools.count()
        self._thread = threading.Thread(target=self._run, name="ember-rpc-timeouts", daemon=True)
        self._thread.start()

    def add(self, seconds, fut):
        with self._cv:
            n = next(self._count)
            if n % 4096 == 4095:  # answered calls wait in the heap until due: drop them
                self._heap = [e for e in self._heap if not e[3].done()]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (time.monotonic() + seconds, n, seconds, fut))
            self._cv.notify()

    def _run(self):
        while True:
            with self._cv:
                while not self._stopped and not self._heap:
                    self._cv.wait()
                if self._stopped:
                    return
                due, _, seconds, fut = self._heap[0]
                delay = due - time.monotonic()
                if delay > 0:
                    self._cv.wait(delay)
                    continue
                heapq.heappop(self._heap)
            if not fut.done():
                try:
                    fut.set_exception(_timeout_error(seconds))
                except RuntimeError:  # the reply won the race
                    pass

    def stop(self):
        with self._cv:
            self._stopped = True
            self._cv.notify()


def _settle(fut, status, payload):
    try:
        if status == "ok":
            fut.set_result(payload)
        else:
            fut.set_exception(payload.to_exception())
    except RuntimeError:  # the timeout won the race
        pass


class _Channel:
    """This worker's connection to one callee: requests out, replies in."""

    def __init__(self, agent, wire, dst):
        self.agent, self.wire, self.dst = agent, wire, dst
        self.lock = threading.Lock()
        self.pending: dict[int, Future] = {}
        self.closed = False
        threading.Thread(target=self._read, name=f"ember-rpc-to-{dst.name}", daemon=True).start()

    def send(self, kind, payload, fut=None):
        msg_id = next(self.agent._ids)
        encoded = _dumps(payload)  # pickling errors reach the caller
        with self.lock:
            if self.closed:
                raise RuntimeError(f"RPC: the connection to {self.dst} is closed")
            if fut is not None:
                self.pending[msg_id] = fut
        try:
            self.wire.send((kind, msg_id), encoded)
        except OSError as e:
            with self.lock:
                self.pending.pop(msg_id, None)
            raise RuntimeError(f"RPC: could not send to {self.dst}: {e}") from None

    def _read(self):
        while True:
            try:
                (status, msg_id), data, buffers = self.wire.recv()
            except (EOFError, OSError):
                break
            with self.lock:
                fut = self.pending.pop(msg_id, None)
            if fut is None or fut.done():  # timed out already
                continue
            try:
                payload = _open(_loads(data, buffers))
            except Exception as e:  # noqa: BLE001 - e.g. a class this process cannot import
                status, payload = "err", _RemoteError(e, self.agent.info)
            if fut._callbacks:  # NOTE [ Reader threads never block ]
                self.agent.in_pool(_settle, fut, status, payload)
            else:
                _settle(fut, status, payload)
        with self.lock:
            self.closed = True
            pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                try:
                    fut.set_exception(RuntimeError(f"RPC: the connection to {self.dst} closed "
                                                   "before it answered (did it exit?)"))
                except RuntimeError:
                    pass

    def close(self):
        with self.lock:
            self.closed = True
        self.wire.close()


def master_host(init_method):
    """The host the workers meet at, by ``init_method``: others reach this machine through
    the interface that reaches it."""
    import urllib.parse

    url = urllib.parse.urlparse(init_method)
    if url.scheme == "env":
        return os.environ.get("MASTER_ADDR")
    if url.scheme == "tcp":
        return url.hostname
    return socket.gethostname()  # file://: the machines share a file system


def _local_host(peer_host):
    """The address of this machine's interface that reaches ``peer_host``."""
    if peer_host in (None, "", "localhost") or peer_host.startswith("127."):
        return "127.0.0.1"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((peer_host, 9))  # no packet is sent for UDP connect
            return s.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())


class Agent:
    """The transport and request handler of one worker (NOTE [ RPC transport ])."""

    def __init__(self, name, rank, world_size, store, options, master_host):
        self.name, self.rank, self.world_size = name, rank, world_size
        self.options = options
        self.timeout = float(options.rpc_timeout)
        self._ids = itertools.count()
        self._closed = False
        self._channels: dict[int, _Channel] = {}
        self._channels_lock = threading.Lock()
        self._incoming = []
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=options.num_worker_threads, thread_name_prefix="ember-rpc-worker")
        self._deadlines = _Deadlines()
        self._decrefs = queue.SimpleQueue()
        self.rrefs = None  # the owner table, set by rpc/_rref.py

        # rendezvous: the authkey, then everyone's name and address
        if store is not None:
            if rank == 0:
                store.set("rpc/authkey", os.urandom(32))
            self._authkey = store.get("rpc/authkey")
        else:
            self._authkey = os.urandom(32)  # alone (or replaced below under mpiexec)
        host = _local_host(master_host)
        self._listener = Listener((host, 0), family="AF_INET", backlog=max(16, world_size),
                                  authkey=self._authkey)
        me = (name, host, self._listener.address[1])
        if store is not None:
            store.set(f"rpc/worker/{rank}", pickle.dumps(me))
            table = [pickle.loads(store.get(f"rpc/worker/{r}")) for r in range(world_size)]
        elif world_size == 1:
            table = [me]
        else:  # mpiexec: the processes are already one MPI world
            from .. import _engine

            comm = _engine.mpi().COMM_WORLD
            key = comm.bcast(os.urandom(32) if comm.Get_rank() == 0 else None, root=0)
            self._listener.close()
            self._authkey = key
            self._listener = Listener((host, 0), family="AF_INET", backlog=max(16, world_size),
                                      authkey=key)
            me = (name, host, self._listener.address[1])
            table = [t for _, t in sorted(comm.allgather((rank, me)))]
        names = [t[0] for t in table]
        if len(set(names)) != len(names):
            self._listener.close()
            self._deadlines.stop()
            dup = next(n for n in names if names.count(n) > 1)
            raise RuntimeError(f"init_rpc: the worker name {dup!r} is used by more than one "
                               "worker; names must be unique")
        self.workers = [WorkerInfo(n, r) for r, n in enumerate(names)]
        self._by_name = {w.name: w for w in self.workers}
        self._addresses = [(t[1], t[2]) for t in table]
        self.info = self.workers[rank]
        threading.Thread(target=self._accept, name="ember-rpc-accept", daemon=True).start()
        threading.Thread(target=self._send_decrefs, name="ember-rpc-decref",
                         daemon=True).start()

    # -- names ----------------------------------------------------------------------------------

    def worker_info(self, to) -> WorkerInfo:
        if isinstance(to, WorkerInfo):
            return to
        if isinstance(to, str):
            if to not in self._by_name:
                raise RuntimeError(f"name:{self.name},rank:{self.rank} could not find "
                                   f"destination name {to}")
            return self._by_name[to]
        if isinstance(to, int) and not isinstance(to, bool):
            if not 0 <= to < self.world_size:
                raise RuntimeError(f"name:{self.name},rank:{self.rank} could not find "
                                   f"destination id {to}")
            return self.workers[to]
        raise TypeError(f"RPC: expected a worker name, id or WorkerInfo as destination, got "
                        f"{type(to).__name__}")

    # -- outgoing -------------------------------------------------------------------------------

    def _channel(self, dst: WorkerInfo) -> _Channel:
        with self._channels_lock:
            ch = self._channels.get(dst.id)
            if ch is None or ch.closed:
                if self._closed:
                    raise RuntimeError("RPC has not been initialized. Call "
                                       "torch.distributed.rpc.init_rpc first.")
                try:
                    conn = Client(self._addresses[dst.id], family="AF_INET",
                                  authkey=self._authkey)
                except OSError as e:
                    raise RuntimeError(f"RPC: could not connect to {dst} at "
                                       f"{self._addresses[dst.id]}: {e} (has it exited?)"
                                       ) from None
                ch = self._channels[dst.id] = _Channel(self, _Wire(conn), dst)
            return ch

    def request(self, dst: WorkerInfo, kind, payload, timeout) -> Future:
        """Send a request; a Future completed by the reply (or by the timeout)."""
        fut = Future()
        self._channel(dst).send(kind, payload, fut)
        if timeout is None or timeout < 0:
            timeout = self.timeout
        if timeout > 0:
            self._deadlines.add(timeout, fut)
        return fut

    def notify(self, dst: WorkerInfo, kind, payload) -> None:
        """Send a message that expects no reply."""
        self._channel(dst).send(kind, payload)

    def queue_decref(self, owner_id, rref_id):
        """Release a user reference later, from a thread of ours (safe to call in __del__)."""
        if not self._closed:
            self._decrefs.put((owner_id, rref_id))

    def _send_decrefs(self):
        while True:
            item = self._decrefs.get()
            if item is None:
                return
            owner_id, rref_id = item
            try:
                self.notify(self.workers[owner_id], "decref", rref_id)
            except Exception:  # noqa: BLE001 - the owner is gone; nothing to release
                pass

    # -- incoming -------------------------------------------------------------------------------

    def _accept(self):
        while True:
            try:
                wire = _Wire(self._listener.accept())
            except Exception:  # noqa: BLE001 - closed listener, or a client failing auth
                if self._closed:
                    return
                continue
            self._incoming.append(wire)
            threading.Thread(target=self._serve, args=(wire,), name="ember-rpc-serve",
                             daemon=True).start()

    def _serve(self, wire):
        def reply(msg_id, status, payload):
            try:
                encoded = _dumps(payload)
            except Exception as e:  # noqa: BLE001 - an unpicklable result
                status, encoded = "err", _dumps(_RemoteError(e, self.info))
            try:
                wire.send((status, msg_id), encoded)
            except OSError:
                pass

        while True:
            try:
                (kind, msg_id), data, buffers = wire.recv()
            except (EOFError, OSError):
                return
            try:
                payload = _open(_loads(data, buffers))
            except Exception as e:  # noqa: BLE001 - e.g. a function this worker cannot import
                if kind not in _ONE_WAY:
                    reply(msg_id, "err", _RemoteError(e, self.info))
                continue
            # the handler runs here, in order of arrival (an RRef is registered before any
            # later message can name it); the work it returns goes to the pool
            try:
                work = _HANDLERS[kind](self, payload)
            except Exception as e:  # noqa: BLE001 - e.g. an RRef the owner no longer holds
                if kind not in _ONE_WAY:
                    reply(msg_id, "err", _RemoteError(e, self.info))
                continue
            if work is None:
                continue
            self._pool.submit(self._run, work, msg_id, reply)

    def _run(self, work, msg_id, reply):
        try:
            result = work()
        except Exception as e:  # noqa: BLE001 - the error goes back to the caller
            reply(msg_id, "err", _RemoteError(e, self.info))
            return
        if isinstance(result, _Deferred):
            def send(fut):
                try:
                    reply(msg_id, "ok", fut.wait())
                except Exception as e:  # noqa: BLE001
                    reply(msg_id, "err", _RemoteError(e, self.info))

            # the Future may be completed by a reader thread: reply from the pool
            # (NOTE [ Reader threads never block ])
            result.future.add_done_callback(lambda fut: self.in_pool(send, fut))
        else:
            reply(msg_id, "ok", result)

    def in_pool(self, fn, *args):
        """Run ``fn(*args)`` on the worker pool (inline once the pool is shut down)."""
        try:
            self._pool.submit(fn, *args)
        except RuntimeError:
            fn(*args)

    # -- shutdown -------------------------------------------------------------------------------

    def close(self):
        self._closed = True
        self._decrefs.put(None)
        self._deadlines.stop()
        try:
            self._listener.close()
        except OSError:
            pass
        with self._channels_lock:
            channels = list(self._channels.values())
            self._channels.clear()
        for ch in channels:
            ch.close()
        for wire in self._incoming:
            wire.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def pending_futures(self):
        with self._channels_lock:
            channels = list(self._channels.values())
        futs = []
        for ch in channels:
            with ch.lock:
                futs.extend(ch.pending.values())
        return futs


class _Deferred:
    """A handler's result that is a Future: reply when it completes (async_execution)."""

    __slots__ = ("future",)

    def __init__(self, future):
        self.future = future


#: kind -> handler(agent, payload) returning None (no reply) or a callable run on the pool
_HANDLERS: dict = {}
#: kinds that get no reply
_ONE_WAY = {"decref"}


def handler(kind):
    """Register the handler of one request kind."""
    def register(fn):
        _HANDLERS[kind] = fn
        return fn
    return register
