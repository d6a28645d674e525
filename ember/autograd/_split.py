"""A backward pass cut in two: the gradients of some inputs first, the parameters' later,
each node run once (a zero-bubble pipeline's I and W steps).

NOTE [ Split backward walks ]
``split_input_backward`` sorts the graph below the roots into the nodes on a path to the
inputs (``n_in``) and those on a path to the parameters only (``w_only``). It runs
``n_in`` as the engine would (NOTE [ Engine ] in _engine.py), each node with its edges
into ``w_only`` masked, so a formula that reads ``needs_input_grad`` (linear, matmul, mul,
...) skips the parameters' products; the gradient buffers of the nodes with such edges
(the ops that consume a parameter, or lead to one) are kept, with the root nodes that lead
to parameters only. ``split_weight_backward`` runs those kept nodes again with only their
edges into ``w_only``, then ``w_only`` itself down to the parameters' ``.grad`` (their
hooks and post-accumulate-grad hooks fire as in any backward). Nothing is walked twice;
the I step releases the saved tensors of the nodes W does not need, W releases the rest,
and W drops the kept buffers. The sums may run in another order than one full backward's:
gradients agree to rounding.
"""

from __future__ import annotations

import heapq

from .._core.tensor import Tensor
from . import _engine
from . import anomaly_mode as _anomaly
from ._nodes import _NO_EDGE, AccumulateGrad, gradient_edge  # (needs_input_grad: by identity)

__all__: list = []


class SplitPlan:
    """What the I step leaves for the W step: the kept nodes' gradient buffers and the
    parameter-only part of the graph."""

    __slots__ = ("kept", "w_only", "hooked")

    def __init__(self, kept: dict, w_only: set, hooked: set):
        self.kept, self.w_only, self.hooked = kept, w_only, hooked


def _discover(root_nodes) -> list:
    order, seen, stack = [], set(root_nodes), list(root_nodes)
    while stack:
        n = stack.pop()
        order.append(n)
        for nx, _ in n._next:
            if nx is not None and nx not in seen:
                seen.add(nx)
                stack.append(nx)
    return order


def _walk(starts: dict, into: set, stop=frozenset(), keep=frozenset(), kept=None,
          release=True, hooked=frozenset()) -> dict:
    """Run the nodes of ``starts`` (node -> gradient buffer) and, as their gradients
    complete, the nodes of ``into`` they reach; edges out of ``into`` are masked. Nodes in
    ``stop`` are not run: their buffers are returned. A node in ``keep`` has its buffer
    stored in ``kept`` before it runs; ``release`` frees what each node saved unless it is
    kept; nodes in ``hooked`` already had their pre-hooks run."""
    deps: dict = {}
    seen = set(starts)
    stack = list(starts)
    while stack:
        n = stack.pop()
        if n in stop or type(n) is AccumulateGrad:
            continue
        for nx, _ in n._next:
            if nx is not None and nx in into:
                deps[nx] = deps.get(nx, 0) + 1
                if nx not in seen:
                    seen.add(nx)
                    stack.append(nx)
    buffers = {n: list(b) for n, b in starts.items()}
    heap = [(-n._seq, i, n) for i, n in enumerate(starts) if deps.get(n, 0) == 0]
    heapq.heapify(heap)
    tie = len(heap)
    stopped = {}
    # NOTE [ Split walks under the profiler and anomaly mode ]
    # Each node that runs is shown to the profiler's engine hook and run through its runner,
    # as the engine does (NOTE [ Profiler recording ] in ember/profiler/_recorder.py), so a
    # profile of a pipeline's I and W steps has the same ``autograd::engine::evaluate_
    # function: ...`` rows and op rows as one of a full backward; under anomaly mode a node
    # that raises or returns nan reports its forward traceback as it would in the engine.
    # A node the I step stops at (an input's) has its row though it does not run, as the
    # engine gives one to a node whose gradient ``autograd.grad(inputs=...)`` captures.
    prof = _engine.profiler_hook
    prof_run = _engine.profiler_run if prof is not None else None
    anomaly = _anomaly._enabled
    token = None
    try:
        while heap:
            node = heapq.heappop(heap)[2]
            buf = buffers.pop(node)
            if prof is not None:
                token = prof(node, token, buf)
            if node._hooked and node not in hooked:
                buf = _engine._pre_hooks(node, buf, False)
            if node in stop:
                stopped[node] = buf
                continue
            tie = _step(node, buf, buffers, deps, heap, tie, into, keep, kept, release,
                        prof_run, token, anomaly)
    finally:
        if token is not None:
            prof(None, token)
    return stopped


def _apply(node, buf, prof_run, token, anomaly):
    """The node's gradients, run as the engine runs a node (NOTE [ Split walks under the
    profiler and anomaly mode ])."""
    if prof_run is None and not anomaly:
        return node._apply(buf)
    return _engine.apply_watched(node, buf, prof_run, token, anomaly)


def _step(node, buf, buffers, deps, heap, tie, into, keep, kept, release, prof_run, token,
          anomaly) -> int:
    """Run one node of ``_walk`` and pass its gradients on; the next tie-break number."""
    if type(node) is AccumulateGrad:
        g = buf[0]
        if g is not None:
            t = node.variable
            g = _engine._leaf_hooks(t, g)
            _engine.accumulate_grad(t, g, False)
            for h in list((getattr(t, "_post_acc_hooks", None) or {}).values()):
                h(t)
        if node._post is not None:
            for h in list(node._post.values()):
                h((), (g,))
        return tie
    if node in keep:
        kept[node] = buf
    edges = node._next
    masked = tuple(e if e[0] is None or e[0] in into else _NO_EDGE for e in edges)
    if masked != tuple(edges):
        node._next = masked
        try:
            grads_in = _apply(node, buf, prof_run, token, anomaly)
        finally:
            node._next = edges
    else:
        grads_in = _apply(node, buf, prof_run, token, anomaly)
    if node._post is not None:
        grads_in = _engine.post_hooks(node, grads_in, buf)
    if release and node not in keep:
        node._release()
    for (nx, nr), g in zip(edges, grads_in):
        if nx is None or nx not in into:
            continue
        b = buffers.get(nx)
        if b is None:
            b = buffers[nx] = [None] * nx._nout
        if g is not None:
            b[nr] = g if b[nr] is None else b[nr] + g
        deps[nx] -= 1
        if deps[nx] == 0:
            heapq.heappush(heap, (-nx._seq, tie, nx))
            tie += 1
    return tie


def _run(fn, needed):
    state = _engine._state
    task = _engine.GraphTask()
    task.needed = needed
    prev = state.grad_enabled
    state.grad_enabled = False
    _engine._tasks.stack.append(task)
    try:
        return fn()
    finally:
        state.grad_enabled = prev
        _engine._tasks.stack.pop()


def split_input_backward(roots, grad_roots, inputs, params):
    """The I step (NOTE [ Split backward walks ]): the gradients of ``inputs`` from
    ``roots`` (with gradients ``grad_roots``, None for a scalar's ones), and the plan
    ``split_weight_backward`` takes to fill ``params``' ``.grad``.

    Args:
        roots (list of Tensor): the tensors back-propagated from.
        grad_roots (list or None): their gradients.
        inputs (list of Tensor): leaves whose gradients are returned (not accumulated).
        params (list of Tensor): the leaves whose gradients W accumulates.

    Returns:
        (list of Tensor or None, SplitPlan)
    """
    grad_roots = grad_roots if grad_roots is not None else [None] * len(roots)
    starts: dict = {}
    for i, (t, g) in enumerate(zip(roots, grad_roots)):
        node, nr = gradient_edge(t)
        b = starts.setdefault(node, [None] * node._nout)
        g = _engine._make_grad(t, g, i)
        b[nr] = g if b[nr] is None else b[nr] + g
    order = _discover(list(starts))
    in_edges = [gradient_edge(x) for x in inputs]
    n_in = _engine._needed_nodes(order, {n for n, _ in in_edges})
    n_w = _engine._needed_nodes(order, {gradient_edge(p)[0] for p in params
                                        if isinstance(p, Tensor) and p.requires_grad})
    w_only = n_w - n_in
    kept = {n: b for n, b in starts.items() if n not in n_in and n in w_only}
    keep = {n for n in n_in if any(nx is not None and nx in w_only for nx, _ in n._next)}
    stop = {n for n, _ in in_edges}
    first = {n: b for n, b in starts.items() if n in n_in}
    stopped = _run(lambda: _walk(first, n_in, stop=stop, keep=keep, kept=kept), n_in) \
        if first else {}
    grads = []
    for node, nr in in_edges:
        b = stopped.get(node)
        grads.append(None if b is None else b[nr])
    return grads, SplitPlan(kept, w_only, keep)


def split_weight_backward(plan: SplitPlan) -> None:
    """The W step (NOTE [ Split backward walks ]): the parameters' gradients from what
    ``split_input_backward`` kept; the plan is emptied.

    Args:
        plan (SplitPlan): the I step's plan.
    """
    kept, plan.kept = plan.kept, {}
    if kept:
        _run(lambda: _walk(kept, plan.w_only, hooked=plan.hooked), plan.w_only)
    plan.w_only, plan.hooked = set(), set()
