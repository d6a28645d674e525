"""The backward engine: ``backward`` and ``grad`` over the graph recorded in ``_nodes.py``.

NOTE [ Engine ]
One backward call is a ``GraphTask``:
1. Discover the graph from the roots with an explicit stack (no recursion, so a chain of any
   length is fine) and count, for each node, the edges that reach it.
2. When specific inputs were asked for (``inputs=`` or ``autograd.grad``), keep only nodes
   on a path to one of them: a second pass over the nodes in reverse discovery post-order.
3. Run ready nodes (all incoming gradients arrived) from a heap ordered by most recent
   ``sequence_nr`` first -- the reverse of the forward order, which frees memory soonest.
   AccumulateGrad nodes have an infinite ``sequence_nr`` and so are flushed at once.
   Each node has an input buffer, one slot per output, that sums incoming gradients
   (NOTE [ Input buffers ]).
Grad mode inside backward equals ``create_graph``.

Hook order for one node (checked against PyTorch): tensor hooks of its outputs, node
pre-hooks, retain_grad, the node itself (for AccumulateGrad: the leaf's tensor hooks, the
accumulation, then post-accumulate-grad hooks), node post-hooks.

NOTE [ Edge order ]
Leaves (and nodes of equal ``sequence_nr``) run in the order their gradients were handed
on, and that order is visible: post-accumulate-grad hooks fire in it, and DDP builds its
buckets from it. Where one ember node stands for several of torch's, handing the gradients
on in ember's input order would differ from torch: ``linear`` is torch's ``addmm(bias, x,
weight.t())``, whose bias is ready first and whose weight comes through a ``TBackward0``
that runs before anything earlier. Such an op names the order as ``edge_order`` (indices
into its inputs; linear: bias, input, weight) and the engine hands the gradients on in it.

NOTE [ Accumulating .grad ]
The first gradient of a leaf is stolen (used as ``.grad`` without a copy) when nothing
else can see it: the engine holds the only reference to the Tensor and to its array, the
array owns its memory (or is a NumPy view of all of a buffer that nothing else holds: the
transposed product that the profiler's PyTorch-shaped ``t``, ``mm``, ``t`` rows of a
linear layer leave as its weight's gradient), is writable and has the leaf's strides.
Otherwise it is copied into a fresh array with the leaf's layout. Later gradients are
added in place into ``.grad``, except under create_graph (or when ``.grad`` itself
requires grad): then ``.grad`` becomes ``.grad + new`` out of place so that the sum is
differentiable.
"""

from __future__ import annotations

import heapq
import operator
import sys
import threading
from time import perf_counter_ns

import numpy as np

from .. import _dispatch, _overrides
from .._core.size import Size
from .._core.tensor import Tensor, wrap
from .._parallel import MIN_ELEMENTS as _PAR_MIN
from .._ops.join import stack
from . import _base
from . import anomaly_mode as _anomaly
from ._nodes import AccumulateGrad, gradient_edge, refresh_view

_state = _dispatch.state


class _TaskStack(threading.local):
    def __init__(self):
        self.stack = []


_tasks = _TaskStack()

#: set by ember.profiler while a profile records: ``(node, token) -> token``, called as each
#: node starts and once at the end (node None) so that backward nodes show as events
#: (NOTE [ Profiler recording ] in ember/profiler/_recorder.py); None otherwise
profiler_hook = None
#: set with ``profiler_hook``: ``(node, grads, token) -> the node's gradients``, which runs
#: the node as the profiler records it (a backward op PyTorch runs as one op is one event:
#: NOTE [ Backward ops ember composes ] in ember/profiler/_recorder.py); None otherwise
profiler_run = None


def current_task():
    """The GraphTask running on this thread (None outside backward)."""
    s = _tasks.stack
    return s[-1] if s else None


def will_receive_grad(task, t):
    """Whether ``t``'s gradient edge is part of ``task``'s graph."""
    if task is None:
        return False
    node, _ = gradient_edge(t)
    if task.needed is not None:
        return node in task.needed
    return node in task.deps or node in task.root_nodes


class GraphTask:
    __slots__ = ("deps", "needed", "root_nodes", "captures", "captured")

    def __init__(self):
        self.deps = {}
        self.needed = None
        self.root_nodes = set()
        self.captures = None
        self.captured = None


def _make_grad(t, g, i):
    """The initial gradient for root ``t`` (given ``g``, or ones for a scalar)."""
    d = t._data
    if g is None:
        if d.size != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if d.dtype.kind not in "fV":
            raise RuntimeError(
                "grad can be implicitly created only for real scalar outputs but got "
                f"{t.dtype}")
        if _dispatch.intercept and not _dispatch.transform_on():
            # as PyTorch's ``torch.autograd`` makes it: by ``ones_like``, an op that modes
            # and the profiler see (``aten::ones_like`` before the backward pass); under
            # vmap and forward AD the engine's plain ones, whose level is the root's
            from .._ops.creation import ones_like
            return ones_like(t)
        if type(d) is np.ndarray:  # (``np.ones`` costs twice an empty array and a fill)
            one = np.empty(d.shape, d.dtype)
            one.fill(1)
            return wrap(one)
        return wrap(_dispatch.xp_of(d).ones(d.shape, d.dtype))
    if not isinstance(g, Tensor):
        if isinstance(g, (int, float, bool, complex)):
            return wrap(_dispatch.xp_of(d).full(d.shape, g, d.dtype))
        raise TypeError(
            f"gradients can be either Tensors or None, but got {type(g).__name__}")
    if g._data.shape != d.shape:
        from .._core.size import Size

        raise RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {Size(g._data.shape)} and "
            f"output[{i}] has a shape of {Size(d.shape)}.")
    if (g._data.dtype.kind == "c") != (d.dtype.kind == "c"):
        raise RuntimeError(
            f"For complex Tensors, both grad_output and output are required to have the same "
            f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and output"
            f"[{i}] has a dtype of {t.dtype}.")
    return g


def apply_watched(node, buf, prof_run, token, anomaly):
    """``node``'s gradients with the profiler recording it (``prof_run``, or None) and, under
    anomaly mode, its forward traceback reported for a failure or a NaN result; the engine's
    watched branch, shared with the split walks (ember/autograd/_split.py)."""
    try:
        grads_in = node._apply(buf) if prof_run is None else prof_run(node, buf, token)
    except Exception:
        if anomaly:
            _anomaly.report(node)
        raise
    if anomaly and _anomaly._check_nan:
        try:
            _check_nan(node, grads_in)
        except RuntimeError:
            _anomaly.report(node)  # the forward traceback, as for any failure
            raise
    return grads_in


def post_hooks(node, grads_in, buf):
    """Run ``node``'s post hooks (``register_hook`` on a node) in order, each seeing the
    gradients it produced (``grads_in``, replaced by any hook's result) and the ones it got
    (``buf``); the gradients to hand on.

    Args:
        node: an autograd node with post hooks.
        grads_in: the gradients the node computed for its inputs.
        buf: the gradients the node received for its outputs.

    Returns:
        tuple: the gradients to hand on.
    """
    for h in list(node._post.values()):
        r = h(grads_in, tuple(buf))
        if r is not None:
            grads_in = tuple(r)
    return grads_in


def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None,
                 allow_unused=True, accumulate=True):
    """Run one backward pass. Returns the captured input gradients when ``accumulate`` is
    False (``autograd.grad``), else None. See NOTE [ Engine ]."""
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward(): expected a Tensor, got {type(t).__name__}")
        if not t._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
        node, nr = gradient_edge(t)
        roots.append((node, nr, _make_grad(t, g, i)))
    task = GraphTask()
    deps = task.deps
    # 1. discovery
    root_nodes = task.root_nodes
    stack = []
    for node, _, _ in roots:
        if node not in root_nodes:
            root_nodes.add(node)
            stack.append(node)
    captures = None
    run_set = None
    if inputs is None:
        while stack:
            n = stack.pop()
            for nx, _ in n._next:
                if nx is None:
                    continue
                d = deps.get(nx)
                if d is not None:
                    deps[nx] = d + 1
                else:
                    deps[nx] = 1
                    if nx not in root_nodes:
                        stack.append(nx)
    else:
        # 2. restrict to the nodes on a path to the requested inputs (NOTE [ Nodes on a
        # path to the inputs ])
        parents = {}  # node -> the nodes with an edge to it, once per edge
        while stack:
            n = stack.pop()
            for nx, _ in n._next:
                if nx is None:
                    continue
                p = parents.get(nx)
                if p is not None:
                    p.append(n)
                else:
                    parents[nx] = [n]
                    if nx not in root_nodes:
                        stack.append(nx)
        captures = {}  # node -> list of (output nr, index into inputs)
        targets = set()
        for k, x in enumerate(inputs):
            node, nr = gradient_edge(x) if isinstance(x, Tensor) else x  # or a GradientEdge
            targets.add(node)
            captures.setdefault(node, []).append((nr, k))
        needed = set()
        run_set = set()  # nodes with an edge into ``needed``: they run
        walk = [n for n in targets if n in parents or n in root_nodes]
        needed.update(walk)
        while walk:
            n = walk.pop()
            p = parents.get(n)
            if p is None:
                continue
            deps[n] = len(p)
            for m in p:
                run_set.add(m)
                if m not in needed:
                    needed.add(m)
                    walk.append(m)
        if accumulate:
            run_set.update(needed.intersection(targets))
        task.needed = needed
        task.captures = captures
        task.captured = [None] * len(inputs)
    # 3. execution
    buffers = {}
    for node, nr, g in roots:
        b = buffers.get(node)
        if b is None:
            b = buffers[node] = [None] * node._nout
        b[nr] = g if b[nr] is None else b[nr] + g
    heap = []
    tie = 0
    for node in root_nodes:
        if deps.get(node, 0) == 0 and (run_set is None or node in task.needed):
            heap.append((-node._seq, tie, node))
            tie += 1
    heapq.heapify(heap)
    prev_mode = _state.grad_enabled
    _state.grad_enabled = create_graph
    _tasks.stack.append(task)
    needed = task.needed
    anomaly = _anomaly._enabled
    prof_run = profiler_run if profiler_hook is not None else None
    # (one test per node either way: the profiled or anomaly-checked call is the slow branch)
    watched = anomaly or prof_run is not None
    pop, push = heapq.heappop, heapq.heappush
    get_buffer = buffers.get
    # below no mode and without create_graph, a second gradient for one buffer slot may be
    # added into the first in place (NOTE [ Input buffers ])
    add_in_place = not create_graph and not (_dispatch.intercept and _state.modes)
    add_into = np.add
    prof = profiler_hook
    # under a profiler that only watches, the same in-place sum runs as a recorded ``add_``
    # (PyTorch's InputBuffer row, beside the node's event: NOTE [ Input buffers ])
    add_observed = prof is not None and not create_graph and _observed()
    prof_token = None
    # NOTE [ Leaves flushed by their producer ]: leaves made ready by the node just run,
    # with the gradient each gets, in the order they became ready
    direct_leaves = captures is None and prof is None
    leaf_nodes = []
    leaf_grads = []
    try:
        # ``pending``: the first node made ready by the last one run, held out of the heap: in
        # a chain (most of a backward pass) it is the next to run, and running it straight
        # away saves a push and a pop; otherwise it joins the heap, whose order it keeps
        # (its key was taken when it became ready)
        pending = None
        while heap or pending is not None:
            if pending is None:
                node = pop(heap)[2]
            elif heap and heap[0] < pending:
                node = heapq.heappushpop(heap, pending)[2]
                pending = None
            else:
                node = pending[2]
                pending = None
            buf = buffers.pop(node)
            if prof is not None:
                prof_token = prof(node, prof_token, buf)
            if node._hooked:
                buf = _pre_hooks(node, buf, create_graph)
            if captures is not None:
                cap = captures.get(node)
                if cap is not None:
                    if type(node) is AccumulateGrad:
                        buf[0] = _leaf_hooks(node.variable, buf[0])
                    for nr, k in cap:
                        task.captured[k] = buf[nr]
                if node not in run_set:
                    continue
            if type(node) is AccumulateGrad:
                g = buf[0]
                buf = None
                if g is not None:
                    t = node.variable
                    if not _base.leaf_hooks_seen:  # (no tensor has hooks of its own)
                        accumulate_grad(t, g, create_graph)
                    else:
                        if getattr(t, "_hooks", None):
                            g = _leaf_hooks(t, g)
                        accumulate_grad(t, g, create_graph)
                        hooks = getattr(t, "_post_acc_hooks", None)
                        if hooks:
                            for h in list(hooks.values()):
                                h(t)
                if node._post is not None:
                    for h in list(node._post.values()):
                        h((), (g,))
                continue
            if watched:
                grads_in = apply_watched(node, buf, prof_run, prof_token, anomaly)
            else:
                grads_in = node._apply(buf)
            if node._post is not None:
                grads_in = post_hooks(node, grads_in, buf)
            if not retain_graph:
                node._release()
            buf = None
            edges = node._next
            order = node._edge_order
            if order is not None and len(order) == len(edges):  # NOTE [ Edge order ]
                pick = _pickers.get(order) or _picker(order)
                edges = pick(edges)
                grads_in = pick(grads_in)
            for (nx, nr), g in zip(edges, grads_in):
                if nx is None:
                    continue
                if needed is not None and nx not in needed:
                    continue
                b = get_buffer(nx)
                if b is None:
                    if type(nx) is AccumulateGrad and direct_leaves and deps[nx] == 1 and \
                            not nx._hooked and nx._post is None:
                        # NOTE [ Leaves flushed by their producer ]
                        deps[nx] = 0
                        if g is not None:
                            leaf_nodes.append(nx)
                            leaf_grads.append(g)
                        continue
                    b = buffers[nx] = [None] * nx._nout
                if g is not None:
                    old = b[nr]
                    if old is None:
                        b[nr] = g
                    elif add_in_place and _owned(old, g):
                        # NOTE [ Input buffers ]
                        od = old._data
                        if type(od) is np.ndarray:
                            add_into(od, g._data, out=od)
                        else:  # another backend's array (CuPy): its own in-place add
                            od += g._data
                        od = None
                    elif add_observed and _owned(old, g):
                        old.add_(g)
                    elif type(g) is sparse_type or type(old) is sparse_type:
                        b[nr] = _sparse_grads().buffer_sum(old, g)
                    else:
                        b[nr] = old + g
                d = deps[nx] - 1
                deps[nx] = d
                if d == 0:
                    if pending is None:
                        pending = (-nx._seq, tie, nx)
                    else:
                        push(heap, (-nx._seq, tie, nx))
                    tie += 1
            # drop this iteration's references: a gradient seen only by the engine can be
            # stolen by AccumulateGrad (NOTE [ Accumulating .grad ])
            grads_in = g = b = old = None
            if leaf_grads:
                k = 0
                for nx in leaf_nodes:
                    if not _base.leaf_hooks_seen:
                        g = leaf_grads[k]
                        leaf_grads[k] = None  # (the engine's local is then its one reference)
                        accumulate_grad(nx.variable, g, create_graph)
                        g = None
                    else:
                        _accumulate_hooked(nx.variable, leaf_grads, k, create_graph)
                    k += 1
                leaf_nodes.clear()
                leaf_grads.clear()
    finally:
        if prof_token is not None:
            prof(None, prof_token)
        _state.grad_enabled = prev_mode
        _tasks.stack.pop()
    if captures is not None:
        if accumulate:
            # backward(inputs=[non-leaf]): their .grad accumulates as a leaf's would
            for k, x in enumerate(inputs):
                if isinstance(x, Tensor) and x._grad_fn is not None and \
                        task.captured[k] is not None and not _retained(x):
                    accumulate_grad(x, task.captured[k], create_graph, steal=False)
            return None
        return task.captured
    return None


def _accumulate_hooked(t, grads, k, create_graph):
    """Leaf ``t``'s gradient ``grads[k]`` through its tensor hooks into ``.grad``, then its
    post-accumulate-grad hooks (NOTE [ Engine ]), as the loop's AccumulateGrad branch runs
    them. The slot is cleared first, so that an unhooked gradient that only the engine saw
    can still be stolen (NOTE [ Accumulating .grad ])."""
    g = grads[k]
    grads[k] = None
    if getattr(t, "_hooks", None):
        g = _leaf_hooks(t, g)
    accumulate_grad(t, g, create_graph)
    hooks = getattr(t, "_post_acc_hooks", None)
    if hooks:
        for h in list(hooks.values()):
            h(t)


# NOTE [ Leaves flushed by their producer ]
# A leaf's AccumulateGrad has an infinite ``sequence_nr``: it runs as soon as it is ready,
# before any other node, and the leaves one node makes ready run in the order its edges
# hand them on (NOTE [ Edge order ]). A leaf reached by one edge only is ready the moment
# that edge delivers, so its gradient needs no input buffer, heap entry or trip round the
# loop: the edge loop lists it, and once the node's own references are dropped the leaves
# are accumulated in that order -- where the heap would have run them, with the same
# stealing (the list's slot is cleared first: NOTE [ Accumulating .grad ]). A leaf with
# node hooks (pre, post, retain_grad), one reached by several edges, and any pass with
# ``inputs=`` or a profiler watching take the loop; tensor hooks on the leaf run as there.
# A training step has one leaf per parameter: ~0.5 us each.


# NOTE [ Nodes on a path to the inputs ]
# ``autograd.grad`` and ``backward(inputs=...)`` run only the nodes from which a requested
# input is reachable. Discovery records each node's parents (one entry per edge), and a walk
# up from the inputs' nodes marks the needed ones: every parent of a needed node is needed,
# so a needed node's count of incoming edges is simply its number of parents, and the nodes
# that run are exactly the parents met on the walk (plus, for ``backward``, the inputs'
# own nodes, whose AccumulateGrad fills ``.grad``). One pass over the edges either way; the
# post-order search below (``_needed_nodes``, kept for the split walks of _split.py)
# followed by a second count of the edges cost a tiny ``grad`` call more than its nodes did.


#: an edge order (NOTE [ Edge order ]) -> the ``itemgetter`` that puts a node's edges and
#: gradients in it: one C call each, where two list comprehensions cost ~0.4 us a node
_pickers: dict = {}


def _picker(order):
    """The function that reorders a sequence as ``order`` says, as a tuple (``_pickers``)."""
    pick = operator.itemgetter(*order) if len(order) > 1 else (lambda s: (s[order[0]],))
    _pickers[order] = pick
    return pick


def _retained(x):
    """Whether non-leaf ``x`` retains its grad: its node's pre-hooks (``_pre_hooks``) have
    then stored this pass's gradient in ``.grad`` already, as PyTorch stores it once."""
    kept = x._grad_fn._retain
    if not kept:
        return False
    ref = kept.get(x._out_nr)
    return ref is not None and ref() is x


def _needed_nodes(order, targets):
    """Nodes from which some target is reachable (``order``: discovery order, roots first).

    Iterative post-order: a node is needed when it is a target or one of its children is.
    """
    needed = set()
    state = {}  # node -> True (needed) / False, once decided
    for start in order:
        if start in state:
            continue
        stack = [(start, iter(start._next))]
        while stack:
            n, it = stack[-1]
            pushed = False
            for nx, _ in it:
                if nx is not None and nx not in state:
                    stack.append((nx, iter(nx._next)))
                    pushed = True
                    break
            if pushed:
                continue
            stack.pop()
            ok = n in targets or any(nx is not None and state.get(nx) for nx, _ in n._next)
            state[n] = ok
            if ok:
                needed.add(n)
    return needed


def _pre_hooks(node, buf, create_graph):
    """Tensor hooks of the node's outputs, node pre-hooks, then retain_grad (NOTE [ Engine ])."""
    buf = list(buf)
    if node._tpre:
        for nr, hooks in node._tpre.items():
            g = buf[nr]
            if g is None:
                continue
            for h in list(hooks.values()):
                r = h(g)
                if r is not None:
                    g = r
            buf[nr] = g
    if node._pre:
        for h in list(node._pre.values()):
            r = h(tuple(buf))
            if r is not None:
                buf = list(r)
    if node._retain:
        for nr, ref in node._retain.items():
            t = ref()
            g = buf[nr]
            if t is None or g is None:
                continue
            old = getattr(t, "_grad", None)
            if old is None:
                # a contiguous copy whatever the gradient's layout, as torch keeps it
                t._grad = g if create_graph else g.detach().clone(
                    memory_format=_contiguous_format())
            else:
                t._grad = old + g
    return buf


def _contiguous_format():
    from .._core import layout

    return layout.contiguous_format


def _leaf_hooks(t, g):
    hooks = getattr(t, "_hooks", None)
    if hooks and g is not None:
        for h in list(hooks.values()):
            r = h(g)
            if r is not None:
                g = r
    return g


def _check_nan(node, grads):
    for i, g in enumerate(grads):
        if g is not None and g._data.dtype.kind in "fcV" and bool(
                _dispatch.xp_of(g._data).isnan(g._data).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               "output.")


#: NOTE [ Input buffers ]
#: A node's input buffer sums the gradients that reach one of its outputs along several
#: edges. The first gradient is stored as it came; a later one is added *into* it in place
#: when nothing else can see the stored one -- the engine's buffer holds the only reference
#: to the Tensor and to its array, which owns its memory, is writable, and has the shape
#: and dtype of the sum -- as torch's InputBuffer accumulates into a gradient it may steal.
#: That saves an allocation and a Tensor per extra edge (residual connections, weights
#: used twice). Under create_graph the sum must be recorded, and with a mode on the mode
#: must see the add: both keep the out-of-place ``old + new``. Very large arrays also keep
#: it, where the out-of-place add may run on several threads (NOTE [ Threaded element-wise
#: ops ] in ember/_parallel.py).
#: Under a profiler that only watches ops (``_observed``), the in-place sum runs as the op
#: ``add_``, so the profile lists it as PyTorch's does (``aten::add_`` inside
#: ``autograd::engine::evaluate_function: ...``, after the node's own event).
#: References to a stored gradient at ``_owned``'s checks: the buffer's slot, the engine's
#: local, ``_owned``'s argument and getrefcount's own argument (3 for the array: its
#: Tensor's ``_data``, the local and getrefcount's argument).
_BUFFER_REFS = 4


def _observed():
    """Whether the modes on this thread are only the profiler's recorder, which watches."""
    recorder = sys.modules.get("ember.profiler._recorder")
    return recorder is not None and recorder.observing_session() is not None


def _owned(old, g):
    """Whether buffer gradient ``old`` may take ``g`` added into it in place (NOTE [ Input
    buffers ])."""
    od = old._data
    gd = g._data
    return (type(od) is type(gd) and od.base is None and type(g) is not sparse_type
            and od.shape == gd.shape
            and od.dtype == gd.dtype and (type(od) is not np.ndarray or od.size < _PAR_MIN)
            and not old._rg and old._base is None and getattr(od.flags, "writeable", True)
            and sys.getrefcount(old) <= _BUFFER_REFS and sys.getrefcount(od) <= _STEAL_REFS)


#: references to a stealable gradient Tensor (and to its array) at the refcount checks in
#: ``accumulate_grad``: the engine's local (``g._data``), the argument (the local ``d``) and
#: getrefcount's own argument. More means someone else can see it: copy instead.
_STEAL_REFS = 3


def zero_grad_in_place(g):
    """Zero gradient ``g`` in place as ``g.zero_()`` does, straight on its array where no one
    could tell the difference (NOTE [ Resetting gradients in place ]); False (nothing done)
    where the caller must take the ops.

    Args:
        g (Tensor): a parameter's ``.grad``.

    Returns:
        bool: whether ``g`` was zeroed.

    Example::

        >>> from ember.autograd._engine import zero_grad_in_place
        >>> g = ember.ones(3)
        >>> zero_grad_in_place(g), g
        (True, tensor([0., 0., 0.]))
    """
    d = g._data
    if type(g) is not Tensor or type(d) is not np.ndarray or _dispatch.intercept or g._rg or \
            g._grad_fn is not None or g._base is not None or d.dtype.kind not in "fc" or \
            not d.flags.writeable:
        return False
    d.fill(0)
    vc = g._vc
    if vc is None:
        g._bump()
    else:
        vc[0] += 1
    return True


# NOTE [ Resetting gradients in place ]
# ``zero_grad(set_to_none=False)`` runs ``requires_grad_(False)`` and ``zero_()`` per
# parameter: ~1.6 us of dispatch each, for what is one ``fill`` of a small array. For a
# plain CPU gradient that is no view, has no history, needs no gradient and is writable,
# with no mode to see the op, the reset is that ``fill`` and a version bump (what ``zero_``
# leaves behind: the same zeros, the same version); the rest (views, GPU arrays, sparse and
# subclass gradients, modes and the profiler, a ``.grad`` that itself requires grad) takes
# the ops.


def accumulate_grad(t, g, create_graph=False, steal=True):
    """Add gradient ``g`` into leaf ``t``'s ``.grad``. See NOTE [ Accumulating .grad ]."""
    if t._ng_view == 1:
        return  # a view made under no_grad keeps no gradient (as in torch)
    old = getattr(t, "_grad", None)
    if old is None:
        if create_graph and g._rg:
            t._grad = g.clone()
            return
        d = g._data
        td = t._data
        if (steal and sys.getrefcount(g) <= _STEAL_REFS and sys.getrefcount(d) <= _STEAL_REFS
                and (d.base is None or _sole_view(g, d)) and getattr(d.flags, "writeable", True)
                and d.strides == td.strides and type(d) is type(td)):
            # (any backend's array that owns its memory: on a GPU a copy is an allocation
            # and a device-to-device copy per parameter per step)
            start = perf_counter_ns() if profiler_hook is not None else 0
            n = wrap(d)
            if start:   # PyTorch's AccumulateGrad keeps ``grad.detach()``
                inputs = lambda: (g,)  # noqa: E731
                _record_chain((("aten::detach", inputs), ("detach", inputs)), start)
        elif type(g) is sparse_type:  # (its ``_data`` is a stand-in: never stolen)
            t._grad = _sparse_grads().store(g, create_graph)
            return
        else:
            xp = _dispatch.xp_of(td)
            start = perf_counter_ns() if profiler_hook is not None else 0
            if _dense(td):
                a = xp.empty_like(td)
            else:
                a = xp.empty(td.shape, td.dtype)
            if start:
                # PyTorch's AccumulateGrad copies with ``new_empty_strided`` then ``copy_``
                _record_chain(_new_empty_strided(g, a), start)
                start = perf_counter_ns()
            a[...] = d
            n = wrap(a)
            if start:
                _record_chain((("aten::copy_", lambda: (n, g, False)),), start)
                # a new array made by no op: the profiler counts it as the node's allocation
                from ..profiler._recorder import count_new_array
                count_new_array(n)
        t._grad = n
        return
    if type(g) is sparse_type or type(old) is sparse_type:
        t._grad = _sparse_grads().accumulate(old, g, create_graph)
        return
    if create_graph or old._rg:
        t._grad = old + g
        return
    od = old._data
    start = perf_counter_ns() if profiler_hook is not None else 0
    try:
        od += g._data
    except (TypeError, ValueError):
        t._grad = old + g
        return
    vc = old._vc
    if vc is not None:  # (``_bump`` inline: the common case, a counter already there)
        vc[0] += 1
    else:
        old._bump()
    if start:
        # PyTorch's AccumulateGrad adds with ``aten::add_``: the profiler lists the add
        _record_kernel("aten::add_", start, old, g)


def _sole_view(g, d):
    """Whether ``d``, gradient ``g``'s array and a NumPy view, spans all of its buffer and
    is the one way to it: the buffer's references are ``d.base``, the local ``base`` and
    getrefcount's argument, plus the array of the Tensor ``g`` views when nothing but ``g``
    holds that Tensor (a product's transpose keeps the product as its ``_base``; its
    references: ``g._base``, the local ``of`` and getrefcount's argument)."""
    base = d.base
    if type(d) is not np.ndarray or type(base) is not np.ndarray or base.base is not None \
            or base.nbytes != d.nbytes:
        return False
    of = g._base
    held = 1 if of is not None and of._data is base and sys.getrefcount(of) <= 3 else 0
    return sys.getrefcount(base) <= 3 + held


def _record_kernel(name, start, *inputs):
    """Show the profiler, when it only watches, the work done since ``start`` on raw arrays
    as PyTorch's op ``name`` of ``inputs`` (NOTE [ Fused kernels under the profiler ])."""
    recorder = sys.modules.get("ember.profiler._recorder")
    session = recorder.observing_session() if recorder is not None else None
    if session is not None:
        session.kernel_event(name, lambda: (*inputs, 1), start)


def _record_chain(levels, start):
    """``_record_kernel`` for PyTorch's op ``levels[0]`` around the ones it calls, each
    ``(name, inputs)``."""
    recorder = sys.modules.get("ember.profiler._recorder")
    session = recorder.observing_session() if recorder is not None else None
    if session is not None:
        session.kernel_chain(levels, start)


def _new_empty_strided(g, a):
    """The levels of PyTorch's ``g.new_empty_strided(a's size and strides)``."""
    def size():
        return list(a.shape), [s // a.itemsize for s in a.strides], a.dtype, 0

    return (("aten::new_empty_strided", lambda: (g, *size(), None, None)),
            ("aten::empty_strided", lambda: (*size(), None, None)))


_base._accumulate_grad = accumulate_grad  # for direct calls of an AccumulateGrad node

#: the sparse tensor class once ember.sparse is imported (it sets this), else None: a
#: gradient of that type is summed and kept by the rules of NOTE [ Sparse gradient sums ]
#: in ember/sparse/_grad.py; a program without sparse tensors pays one ``is`` test
sparse_type = None


def _sparse_grads():
    from ..sparse import _grad

    return _grad


def _dense(a):
    """Non-overlapping and dense: ``empty_like`` keeps such a layout."""
    return a.flags.c_contiguous or a.flags.f_contiguous or all(s != 0 for s in a.strides)


# ------------------------------------------------------------------------------------------------
# public entry points


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate into the ``.grad`` of leaves the gradients of ``tensors``.

    Args:
        tensors: tensors to differentiate (roots).
        grad_tensors: their gradients (None for scalars: ones).
        retain_graph: keep saved values for another backward (default: create_graph).
        create_graph: record the backward itself, for higher derivatives.
        inputs: accumulate only into these tensors' ``.grad``.
        grad_variables: the legacy name of ``grad_tensors``.

    Returns:
        None.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> y = x * 3
        >>> ember.autograd.backward([y], [ember.ones(2)])
        >>> x.grad
        tensor([3., 3.])
    """
    if grad_variables is not None:
        grad_tensors = grad_variables
    if _overrides._active[0]:
        r = _overridden(backward, (tensors, grad_tensors, inputs),
                        dict(tensors=tensors, grad_tensors=grad_tensors, retain_graph=retain_graph,
                             create_graph=create_graph, inputs=inputs))
        if r is not _NOT_OVERRIDDEN:
            return r
    tensors = _as_tuple(tensors)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    else:
        grad_tensors = _as_tuple(grad_tensors) if not isinstance(grad_tensors, (int, float)) \
            else (grad_tensors,)
        if len(grad_tensors) != len(tensors):
            raise RuntimeError(
                f"got {len(grad_tensors)} gradients but {len(tensors)} tensors were given")
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph:
        import warnings

        leafy = inputs if inputs is not None else ()
        if any(x._grad_fn is None for x in leafy) or inputs is None:
            warnings.warn(
                "Using backward() with create_graph=True will create a reference cycle between "
                "the parameter and its gradient which can cause a memory leak. We recommend "
                "using autograd.grad when creating the graph to avoid this. If you have to use "
                "this function, make sure to reset the .grad fields of your parameters to None "
                "after use to break the cycle and avoid the leak.", stacklevel=3)
    if inputs is not None:
        for x in inputs:
            if not x._rg:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (``.grad`` is left alone).

    Args:
        outputs (Tensor or sequence of Tensors): the tensors to differentiate.
        inputs (Tensor or sequence of Tensors): the tensors to differentiate with respect to.
        grad_outputs (sequence of Tensors, optional): the gradient of each output (None for
            a scalar output: a one).
        retain_graph (bool, optional): keep the graph for another backward. Default:
            ``create_graph``.
        create_graph (bool): record the computation, for higher derivatives.
        only_inputs (bool): accepted for PyTorch compatibility (always True).
        allow_unused (bool, optional): return None for an input the outputs do not depend
            on, instead of raising. Default: ``materialize_grads``.
        is_grads_batched (bool): the first dimension of each ``grad_outputs`` tensor is a
            batch of vectors: compute one vector-Jacobian product per entry.
        materialize_grads (bool): return zeros instead of None for unused inputs.

    Returns:
        tuple of Tensors: one gradient per input (a Tensor when ``inputs`` is one).

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> (g,) = ember.autograd.grad((x ** 3).sum(), [x], create_graph=True)
        >>> g
        tensor([ 3., 12.], grad_fn=<MulBackward0>)
        >>> ember.autograd.grad(g.sum(), x)
        (tensor([ 6., 12.]),)
    """
    if _overrides._active[0]:
        r = _overridden(grad, (outputs, inputs, grad_outputs), dict(
            outputs=outputs, inputs=inputs, grad_outputs=grad_outputs,
            retain_graph=retain_graph, create_graph=create_graph, allow_unused=allow_unused,
            is_grads_batched=is_grads_batched, materialize_grads=materialize_grads))
        if r is not _NOT_OVERRIDDEN:
            return r
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False.")
    if is_grads_batched and grad_outputs is not None:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _grad_inputs(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise RuntimeError(
                f"grad requires one grad_output per output: got {len(grad_outputs)} "
                f"grad_outputs for {len(outputs)} outputs")
    for x in inputs:
        if isinstance(x, tuple) and len(x) == 2 and hasattr(x, "node"):
            continue  # a GradientEdge
        if not isinstance(x, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(x).__name__}")
        if not x._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    if retain_graph is None:
        retain_graph = create_graph
    for i, o in enumerate(outputs):
        if not o._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn")
    res = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs,
                       allow_unused, accumulate=False)
    out = []
    for i, (x, r) in enumerate(zip(inputs, res)):
        if r is None:
            r = _unused_input_grad(i, x, allow_unused, materialize_grads)
        elif not create_graph and r._rg:
            r = r.detach()
        out.append(r)
    del single
    return tuple(out)


_NOT_OVERRIDDEN = object()


def _overridden(fn, relevant, kwargs):
    """``fn`` handed to the ``__torch_function__`` of a Tensor subclass among ``relevant``
    (a nested tensor's gradient is its values'), as PyTorch's ``grad``/``backward`` do;
    ``_NOT_OVERRIDDEN`` when none takes part."""
    if _overrides.state.all_disabled or _overrides.state.subclasses_disabled:
        return _NOT_OVERRIDDEN
    found = _overrides.overloaded_args(tuple(x for x in relevant if x is not None))
    if not found:
        return _NOT_OVERRIDDEN
    from ..overrides import handle_torch_function

    return handle_torch_function(fn, found, **kwargs)


def _grad_inputs(inputs):
    """grad's ``inputs`` as a tuple (a single tensor or GradientEdge, or a sequence)."""
    if hasattr(inputs, "node") and hasattr(inputs, "output_nr"):
        return (inputs,)
    return _as_tuple(inputs)


def _unused_input_grad(i, x, allow_unused, materialize_grads):
    """What grad returns for input ``i``, which the outputs do not depend on: zeros with
    materialize_grads, None with allow_unused, else PyTorch's error."""
    if materialize_grads and isinstance(x, Tensor):
        return wrap(_dispatch.xp_of(x._data).zeros(x._data.shape, x._data.dtype))
    if not allow_unused:
        raise RuntimeError(
            f"The differentiated Tensor at index {i} appears to not have been used in the "
            "graph. Set allow_unused=True if this is the desired behavior.")
    return None


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad`` with ``is_grads_batched=True``: the first dim of every grad_output indexes a
    batch of vector-Jacobian products, computed one after another over the same graph and
    stacked (PyTorch vmaps them; the numbers are the same)."""
    outputs = _as_tuple(outputs)
    grad_outputs = _as_tuple(grad_outputs)
    sizes = set()
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            continue
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions "
                "are expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {Size(g.shape[1:])} and "
                f"output[{i}] has a shape of {Size(o.shape)}. If you only want some tensors "
                "in `grad_output` to be considered batched, consider using vmap.")
        sizes.add(g.shape[0])
    if len(sizes) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sorted(sizes)} for the mapped dimension")
    batch = sizes.pop() if sizes else 1
    if retain_graph is None:
        retain_graph = create_graph
    per_item = [grad(outputs, inputs, [None if g is None else g[b] for g in grad_outputs],
                     retain_graph=retain_graph if b == batch - 1 else True,
                     create_graph=create_graph, allow_unused=True)
                for b in range(batch)]
    out = []
    for i, x in enumerate(_grad_inputs(inputs)):
        column = [r[i] for r in per_item]
        if not column or column[0] is None:
            # as PyTorch: a materialised gradient of an unused input has no batch dim
            out.append(_unused_input_grad(i, x, allow_unused, materialize_grads))
        else:
            out.append(stack(column))
    return tuple(out)


__all__ = ["backward", "grad", "run_backward", "accumulate_grad", "refresh_view"]
