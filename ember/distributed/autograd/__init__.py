"""``ember.distributed.autograd``: gradients through RPC calls, as
``torch.distributed.autograd``.

Inside ``with dist_autograd.context() as context_id:``, every ``rpc_sync`` /
``rpc_async`` records where tensors that require grad cross between workers;
``backward(context_id, [loss])`` then runs the backward pass across them and leaves each
worker's leaf gradients in the context (``get_gradients(context_id)``), never in
``.grad``, so concurrent trainers do not mix their gradients.

NOTE [ Distributed backward ]
A message sent inside a context is an *envelope*: the tensors that require grad travel
apart from the rest of the message. The sender keeps them as a *send* record of the
context (the graph above them stays alive); the receiver rebuilds them as the outputs of
a *recv* node (an autograd Function whose input is a dummy leaf of the context), so its
own graph continues from there. The callee runs the function inside the same context
(same id on every worker), and its result comes back in an envelope the same way.

``backward`` runs ember's autograd from the roots to every leaf reachable from them and
to the context's recv dummies (so each recv node on the path runs). A recv node's
backward sends its gradients to the worker that sent the tensors, which runs its own
autograd from the matching send record, and so on; each such call waits for the remote
part to finish, so ``backward`` returns when the whole pass is done. A send record
reached several times is back-propagated once per arrival with the graph retained; by
linearity the accumulated gradients are those of one pass (PyTorch's "FAST mode"
algorithm computes the same). Contexts are released on every worker they reached when
the ``with`` block ends.
"""

from __future__ import annotations

import io
import itertools
import pickle
import threading

__all__ = ["DistAutogradContext", "backward", "context", "get_gradients", "is_available"]

_CONTEXTS: dict = {}
_LOCK = threading.Lock()
_LOCAL = threading.local()
_COUNTER = itertools.count()


def is_available() -> bool:
    """Whether distributed autograd can be used (always, with ``ember.distributed.rpc``).

    Returns:
        bool

    Example::

        >>> ember.distributed.autograd.is_available()
        True
    """
    return True


def _agent():
    from ..rpc import _AGENT

    agent = _AGENT[0]
    if agent is None:
        raise RuntimeError("Need to initialize distributed autograd using "
                           "ember.distributed.rpc.init_rpc() first")
    return agent


class DistAutogradContext:
    """What one distributed backward pass needs on one worker: the send records, the
    recv nodes' dummy leaves, the workers reached and the accumulated gradients.
    Made by ``context()``; see NOTE [ Distributed backward ].

    Args:
        context_id (int): its id, the same on every worker.

    Example::

        >>> ember.distributed.autograd.DistAutogradContext(7)._context_id
        7
    """

    def __init__(self, context_id):
        self._context_id = context_id
        self._known_worker_ids: set = set()
        self._send_functions: dict = {}
        self._recv_dummies: list = []
        self._grads: dict = {}  # id(leaf) -> (leaf, accumulated gradient)
        self._lock = threading.RLock()
        self._send_ids = itertools.count()

    def _accumulate(self, leaf, grad):
        with self._lock:
            held = self._grads.get(id(leaf))
            self._grads[id(leaf)] = (leaf, grad if held is None else held[1] + grad)


def _lookup(context_id) -> DistAutogradContext:
    with _LOCK:
        ctx = _CONTEXTS.get(context_id)
    if ctx is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return ctx


def _get_or_create(context_id) -> DistAutogradContext:
    with _LOCK:
        ctx = _CONTEXTS.get(context_id)
        if ctx is None:
            ctx = _CONTEXTS[context_id] = DistAutogradContext(context_id)
        return ctx


def _current():
    cid = getattr(_LOCAL, "context_id", None)
    return None if cid is None else _CONTEXTS.get(cid)


class context:
    """A distributed autograd context: ``with context() as context_id:`` records the RPCs
    made in the block, for ``backward`` and ``get_gradients``; leaving the block frees
    it on every worker it reached.

    Returns:
        int: the context id (``__enter__``), unique across workers.

    Raises:
        RuntimeError: RPC is not initialized, or this thread is already in a context.

    Example::

        >>> with dist_autograd.context() as context_id:                # doctest: +SKIP
        ...     loss = rpc.rpc_sync("ps", forward, args=(x,)).sum()
        ...     dist_autograd.backward(context_id, [loss])
        ...     grads = dist_autograd.get_gradients(context_id)
    """

    def __enter__(self) -> int:
        agent = _agent()
        if getattr(_LOCAL, "context_id", None) is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        cid = (agent.rank << 48) + next(_COUNTER)
        _get_or_create(cid)
        _LOCAL.context_id = cid
        self.autograd_context = cid
        return cid

    def __exit__(self, *exc):
        cid = self.autograd_context
        _LOCAL.context_id = None
        _release(cid, notify=True)
        return False


def _release(context_id, notify=False, sender=None):
    """Free a context here and, when ``notify``, on every worker it reached."""
    with _LOCK:
        ctx = _CONTEXTS.pop(context_id, None)
    if ctx is None or not notify:
        return None
    from ..rpc import _AGENT, rpc_async

    agent = _AGENT[0]
    if agent is None:
        return None
    futs = []
    for w in sorted(ctx._known_worker_ids - {agent.rank, sender}):
        try:
            futs.append(rpc_async(w, _release_remote, args=(context_id, agent.rank)))
        except RuntimeError:  # that worker has left
            pass
    for f in futs:
        try:
            f.wait()
        except Exception:  # noqa: BLE001 - nothing to free there any more
            pass
    return None


def _release_remote(context_id, sender):
    return _release(context_id, notify=True, sender=sender)


# -- envelopes: the messages of a context (NOTE [ Distributed backward ]) -----------------------

class _Envelope:
    """A message sent inside a context: its grad-requiring tensors apart, the rest pickled
    with references to them, the large array buffers of that pickle kept out of it (so the
    agent sends them out of band, NOTE [ RPC transport ])."""

    def __init__(self, context_id, send_id, sender, tensors, inner, kind, buffers=()):
        self.context_id, self.send_id, self.sender = context_id, send_id, sender
        self.tensors, self.inner, self.kind = tensors, inner, kind
        self.buffers = list(buffers)

    def __reduce__(self):
        return _Envelope, (self.context_id, self.send_id, self.sender, self.tensors,
                           self.inner, self.kind,
                           [b if isinstance(b, pickle.PickleBuffer) else pickle.PickleBuffer(b)
                            for b in self.buffers])

    def open(self):
        """The message, on its receiver: tensors joined to the graph through a recv node;
        a request's function set to run inside the context."""
        ctx = _get_or_create(self.context_id)
        with ctx._lock:
            ctx._known_worker_ids.add(self.sender)
        received = _recv(ctx, self.sender, self.send_id, self.tensors)
        payload = _Unpickler(io.BytesIO(self.inner), received, self.buffers).load()
        if self.kind == "call":
            func, args, kwargs = payload
            return _InContext(self.context_id, self.sender, func), args, kwargs
        if self.kind == "remote":  # the result stays on the owner: no envelope for it
            rref_id, func, args, kwargs = payload
            return rref_id, _InContext(self.context_id, self.sender, func, False), args, kwargs
        if self.kind == "fetch":
            return _FetchInContext(self.context_id, self.sender, payload)
        return payload


def _pickler_class():
    from ..rpc._wire import _Pickler

    from ..rpc._wire import _OUT_OF_BAND_BYTES

    class _EnvelopePickler(_Pickler):
        def __init__(self, buf, tensors, buffers):
            super().__init__(buf, protocol=5, buffer_callback=self._out_of_band)
            self._tensors, self._buffers = tensors, buffers

        def _out_of_band(self, pb):
            try:
                view = pb.raw()
            except BufferError:
                return True
            if view.nbytes < _OUT_OF_BAND_BYTES:
                return True
            self._buffers.append(view)
            return False

        def persistent_id(self, obj):
            import ember

            if isinstance(obj, ember.Tensor) and obj.requires_grad:
                self._tensors.append(obj)
                return len(self._tensors) - 1
            return None

    return _EnvelopePickler


class _Unpickler(pickle.Unpickler):
    def __init__(self, buf, received, buffers):
        super().__init__(buf, buffers=buffers)
        self._received = received

    def persistent_load(self, pid):
        return self._received[pid]


def _wrap(payload, dst_id, kind="value"):
    """``payload`` as sent from this thread to worker ``dst_id``: an envelope inside a
    context (recording the send), the payload itself outside one."""
    ctx = _current()
    if ctx is None:
        return payload
    agent = _agent()
    tensors, buffers = [], []
    buf = io.BytesIO()
    _pickler_class()(buf, tensors, buffers).dump(payload)
    with ctx._lock:
        ctx._known_worker_ids.add(dst_id)
        send_id = (agent.rank, next(ctx._send_ids))
        if tensors:
            ctx._send_functions[send_id] = tensors
    return _Envelope(ctx._context_id, send_id, agent.rank,
                     [t.detach() for t in tensors], buf.getvalue(), kind, buffers)


class _InContext:
    """A callee's function run inside the caller's context, its result sent back in an
    envelope."""

    def __init__(self, context_id, caller, func, wrap_result=True):
        self.context_id, self.caller, self.func = context_id, caller, func
        self.wrap_result = wrap_result
        inner = getattr(func, "__func__", func)
        if hasattr(inner, "_wrapped_async_rpc_function"):
            self._wrapped_async_rpc_function = func

    def __call__(self, *args, **kwargs):
        prev = getattr(_LOCAL, "context_id", None)
        _LOCAL.context_id = self.context_id
        try:
            result = self.func(*args, **kwargs)
            from ...futures import Future

            if hasattr(self, "_wrapped_async_rpc_function") and isinstance(result, Future):
                return _then_wrapped(result, self._wrap_in_context)
            return _wrap(result, self.caller) if self.wrap_result else result
        finally:
            _LOCAL.context_id = prev

    def _wrap_in_context(self, value):
        if not self.wrap_result:
            return value
        prev = getattr(_LOCAL, "context_id", None)
        _LOCAL.context_id = self.context_id
        try:
            return _wrap(value, self.caller)
        finally:
            _LOCAL.context_id = prev


def _then_wrapped(fut, fn):
    """A Future of ``fn(fut's value)``; an error keeps its type (``then`` would wrap it)."""
    from ...futures import Future

    out = Future()

    def done(f):
        try:
            out.set_result(fn(f.wait()))
        except Exception as e:  # noqa: BLE001 - the caller sees it
            out.set_exception(e)

    fut.add_done_callback(done)
    return out


class _FetchInContext:
    """A ``to_here()`` made inside a context: the owner sends the value in an envelope."""

    def __init__(self, context_id, caller, rref_id):
        self.rref_id = rref_id
        self._in = _InContext(context_id, caller, None)

    def reply(self, value_future):
        return _then_wrapped(value_future, self._in._wrap_in_context)


# -- recv nodes and the backward pass ----------------------------------------------------------

def _recv_function():
    import ember

    class RecvRpcBackward(ember.autograd.Function):
        """Tensors received from another worker; backward sends their gradients back."""

        @staticmethod
        def forward(ctx, dummy, context_id, sender, send_id, *tensors):
            ctx.meta = (context_id, sender, send_id, [t.shape for t in tensors],
                        [t.dtype for t in tensors])
            return tuple(t.clone() for t in tensors)

        @staticmethod
        def backward(ctx, *grads):
            context_id, sender, send_id, shapes, dtypes = ctx.meta
            grads = [g if g is not None else ember.zeros(s, dtype=d)
                     for g, s, d in zip(grads, shapes, dtypes)]
            from ..rpc import rpc_sync

            rpc_sync(sender, _backward_from_send, args=(context_id, send_id, grads), timeout=0)
            return (None, None, None, None) + tuple(None for _ in grads)

    return RecvRpcBackward


_RECV = []


def _recv(ctx, sender, send_id, tensors):
    if not tensors:
        return []
    import ember

    if not _RECV:
        _RECV.append(_recv_function())
    dummy = ember.zeros((), requires_grad=True)
    with ctx._lock:
        ctx._recv_dummies.append(dummy)
    with ember.enable_grad():
        outs = _RECV[0].apply(dummy, ctx._context_id, sender, send_id,
                              *[t.detach() for t in tensors])
    return list(outs)


def _backward_from_send(context_id, send_id, grads):
    """Run on the worker that sent the tensors of ``send_id``: continue the pass there."""
    ctx = _lookup(context_id)
    with ctx._lock:
        tensors = ctx._send_functions.get(send_id)
    if tensors is None:
        raise RuntimeError(f"distributed backward: context {context_id} has no send record "
                           f"{send_id} (was it released?)")
    _run_backward(ctx, tensors, grads, retain_graph=True)


def _leaves(outputs, dummies):
    seen, stack, leaves = set(), [], []
    for t in outputs:
        if t.grad_fn is None:
            if t.requires_grad and id(t) not in dummies:
                leaves.append(t)
        else:
            stack.append(t.grad_fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            if id(var) not in dummies:
                leaves.append(var)
            continue
        for nxt, _ in getattr(node, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    unique = {id(v): v for v in leaves}
    return list(unique.values())


def _run_backward(ctx, outputs, grads, retain_graph):
    import ember

    pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad]
    if not pairs:
        return
    outputs, grads = [p[0] for p in pairs], [p[1] for p in pairs]
    with ctx._lock:
        dummies = list(ctx._recv_dummies)
    dummy_ids = {id(d) for d in dummies}
    leaves = _leaves(outputs, dummy_ids)
    inputs = leaves + dummies
    result = ember.autograd.grad(outputs, inputs, grads, retain_graph=retain_graph,
                                 allow_unused=True)
    for leaf, g in zip(leaves, result[:len(leaves)]):
        if g is not None:
            ctx._accumulate(leaf, g)


def backward(context_id: int, roots, retain_graph: bool = False) -> None:
    """Run the backward pass from the scalar ``roots`` across every worker the context's
    RPCs reached; each worker's leaf gradients accumulate in the context (see
    ``get_gradients``), not in ``.grad``. Returns when the whole pass is done.

    Args:
        context_id (int): the id from ``with context() as context_id``.
        roots (list[Tensor]): scalar tensors that require grad.
        retain_graph (bool): keep this worker's graph for another backward.

    Raises:
        RuntimeError: no such context, a root is not a scalar or does not require grad.

    Example::

        >>> with dist_autograd.context() as cid:                       # doctest: +SKIP
        ...     loss = rpc.rpc_sync("worker1", ember.mul, args=(w, 2)).sum()
        ...     dist_autograd.backward(cid, [loss])
    """
    import ember

    ctx = _lookup(context_id)
    if isinstance(roots, ember.Tensor) or not isinstance(roots, (list, tuple)):
        raise TypeError(f"backward(): expected roots to be a list of Tensors, got "
                        f"{type(roots).__name__}")
    for r in roots:
        if not r.requires_grad:
            raise RuntimeError("requires_grad not set on root")
        if r.numel() != 1:
            raise RuntimeError(f"{r} is not a scalar, all roots need to be scalar")
    _run_backward(ctx, list(roots), [ember.ones_like(r) for r in roots], retain_graph)


def get_gradients(context_id: int) -> dict:
    """The gradients the context's backward passes accumulated on this worker, by tensor.

    Args:
        context_id (int): the id from ``with context() as context_id``.

    Returns:
        dict[Tensor, Tensor]: leaf tensor -> gradient.

    Raises:
        RuntimeError: no such context.

    Example::

        >>> with dist_autograd.context() as cid:                       # doctest: +SKIP
        ...     dist_autograd.backward(cid, [loss])
        ...     dist_autograd.get_gradients(cid)[w]
        tensor([2., 2.])
    """
    ctx = _lookup(context_id)
    with ctx._lock:
        return {leaf: g for leaf, g in ctx._grads.values()}
