"""The batched tensor of ``vmap``: one logical example per view, a physical array holding all.

NOTE [ Batched tensors ]
Inside ``vmap`` the function sees tensors of the *logical* shape (one example), while the
data lives in a *physical* tensor whose leading dims are the batch dims of the active vmap
levels that the value depends on, one per level, in increasing level order::

    phys.shape == batch sizes of `levels` + logical shape

A level is one ``vmap`` call (nested calls get increasing level ids). Keeping the batch dims
always in front ("canonical form") means a batching rule only has to shift its dim
arguments by ``k = len(levels)`` and, for broadcasting ops, insert size-1 dims for the
levels an operand lacks.

Representation: a ``BatchedTensor`` (a ``Tensor`` subclass, for printing and the refusals
below) whose ``_data`` is a read-only NumPy view of example 0 of the physical array (so
every metadata query -- shape, dtype, dim, device -- and every shape or device check in
ember's Python code sees the logical tensor). ``(phys, levels)`` is registered for that
array object (``_registry``, keyed by identity, dropped when the array dies), so a tensor
re-made from the same array (autograd's saved outputs re-wrap the array, ``detach`` wraps
it) is still recognised as batched by the vmap mode (``batch_info``). Any computation goes
through the dispatcher, where the vmap mode (``_batch_rules.py``) replaces it by the
physical computation.

Data-dependent Python (``.item()``, ``bool()``, ``.tolist()``, ``.numpy()``) raises
PyTorch's errors: one example has no single value.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from .._core.tensor import Tensor
from .._overrides import _disabled_torch_function_impl

__all__ = ["BatchedTensor", "array_info", "batch_info", "make_batched"]


#: id(array) -> (weak reference to the array, (phys, levels)): the batch info of every
#: logical array alive (NOTE [ Batched tensors ])
_registry: dict = {}


class _Ref(weakref.ref):
    """A weak reference to a logical array that knows its registry key (one callback for
    all, no closure per registration)."""

    __slots__ = ("key",)


def _forget(ref):
    _registry.pop(ref.key, None)


#: ``(0,) * k + (Ellipsis,)``: the index of example 0 behind k batch dims
_FIRST = [(0,) * k + (Ellipsis,) for k in range(8)]


_ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
    "calling .item() on a Tensor, please try to rewrite what you're doing with other "
    "operations. If error is occurring somewhere inside PyTorch internals, please file a bug "
    "report.")
_BOOL_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control "
    "flow. We don't support that yet, please file an issue at "
    "https://github.com/pytorch/pytorch/issues .")
_DATA_ERROR = "Cannot access data pointer of Tensor that doesn't have storage"


class BatchedTensor(Tensor):
    """A tensor inside ``vmap``: the logical view of one example of a physical batch.

    Created by ``vmap`` only; see NOTE [ Batched tensors ] in ember/func/_batch_tensor.py.

    Example:
        >>> import ember
        >>> ember.vmap(lambda t: t * t.shape[0])(ember.ones(3, 2))  # t.shape is (2,)
        tensor([[2., 2.],
                [2., 2.],
                [2., 2.]])
    """

    __slots__ = ()
    # instances behave as plain tensors for __torch_function__ (the vmap mode handles them)
    __torch_function__ = _disabled_torch_function_impl

    @property
    def device(self):
        return batch_info(self)[0].device

    @property
    def is_cpu(self):
        return batch_info(self)[0].is_cpu

    def item(self):
        raise RuntimeError(_ITEM_ERROR)

    def __bool__(self):
        raise RuntimeError(_BOOL_ERROR)

    def __float__(self):
        raise RuntimeError(_ITEM_ERROR)

    def __int__(self):
        raise RuntimeError(_ITEM_ERROR)

    def __index__(self):
        raise RuntimeError(_ITEM_ERROR)

    def __complex__(self):
        raise RuntimeError(_ITEM_ERROR)

    def tolist(self):
        raise RuntimeError(_DATA_ERROR)

    def numpy(self, *, force=False):
        raise RuntimeError(_DATA_ERROR)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(_DATA_ERROR)

    def data_ptr(self):
        raise RuntimeError(_DATA_ERROR)

    def detach(self):
        phys, levels = batch_info(self)
        return make_batched(phys.detach(), levels)

    def __repr__(self, *, tensor_contents=None):
        phys, levels = batch_info(self)
        depth = [lv for lv, _, _ in levels_state.stack]
        lvl = depth.index(levels[-1]) + 1 if levels[-1] in depth else levels[-1]
        return f"BatchedTensor(lvl={lvl}, bdim=0, value=\n    " + \
            repr(phys).replace("\n", "\n    ") + "\n)"

    __str__ = __repr__


def batch_info(t):
    """``(phys, levels)`` for a batched tensor, else None."""
    d = t._data
    e = _registry.get(id(d))
    if e is not None and e[0]() is d:
        return e[1]
    return None


def array_info(d):
    """``(phys, levels)`` for the logical array ``d`` of a batched tensor, else None."""
    e = _registry.get(id(d))
    if e is not None and e[0]() is d:
        return e[1]
    return None


def make_batched(phys, levels):
    """The batched tensor for physical tensor ``phys`` whose first ``len(levels)`` dims are
    the batch dims of ``levels`` (NOTE [ Batched tensors ]); ``phys`` itself when
    ``levels`` is empty."""
    if not levels:
        return phys
    a = phys._data
    k = len(levels)
    if type(a) is np.ndarray and 0 not in a.shape[:k]:
        v = a[_FIRST[k] if k < 8 else (0,) * k + (Ellipsis,)]
    else:  # an empty batch, or another backend: a stand-in array of the logical shape
        v = np.empty(a.shape[k:], a.dtype)
    v.flags.writeable = False
    key = id(v)
    ref = _Ref(v, _forget)
    ref.key = key
    _registry[key] = (ref, (phys, levels if type(levels) is tuple else tuple(levels)))
    t = object.__new__(BatchedTensor)
    t._data = v
    t._rg = False
    t._grad_fn = None
    t._base = None
    t._vc = None
    if phys._rg:
        # NOTE [ vmap and autograd ]: the logical tensor's gradient flows into the physical
        # graph through a node of its own
        link(t, phys_node(phys, tuple(levels)))
    return t


def link(t, node):
    """Make ``node`` the history of ``t`` (one output)."""
    t._grad_fn = node
    t._out_nr = 0
    t._rg = True


_node_classes = {}


def _node_class(name):
    cls = _node_classes.get(name)
    if cls is None:
        from ..autograd._base import Node

        def _apply(self, grads):
            g = grads[0]
            return (None if g is None else self.fn(g),)

        cls = _node_classes[name] = type(name, (Node,), {"_apply": _apply})
    return cls


def level_node(name, source, fn):
    """A backward node whose gradient for ``source`` is ``fn(grad)``: the steps between
    levels (NOTE [ vmap and autograd ] in ``_batch_rules.py``)."""
    from ..autograd._base import _sequence
    from ..autograd._nodes import gradient_edge

    node = _node_class(name)()
    node._next = (gradient_edge(source),)
    node._seq = next(_sequence)
    node.fn = fn
    return node


def phys_node(phys, levels):
    """The node leading a logical gradient of ``make_batched(phys, levels)`` into ``phys``'s
    graph: the gradient as a physical tensor (still batched over any inner levels it has)."""
    return level_node("VmapPhysicalBackward0", phys,
                      lambda g: to_physical(g, levels, tuple(phys.shape[:len(levels)])))


def to_physical(g, levels, sizes):
    """Logical gradient ``g`` of a tensor batched over ``levels`` (batch sizes ``sizes``)
    as the gradient of its physical tensor; levels of ``g`` beyond ``levels`` stay batched."""
    inf = batch_info(g)
    if inf is None:
        return g.expand(tuple(sizes) + tuple(g.shape))
    gp, gl = inf
    allv = tuple(sorted(set(gl) | set(levels)))
    table = dict(zip(levels, sizes))
    for i, lv in enumerate(gl):
        table[lv] = gp.shape[i]
    # gp with every level of allv present (size-1 dims inserted, then expanded)
    j = 0
    for i, lv in enumerate(allv):
        if j < len(gl) and gl[j] == lv:
            j += 1
        else:
            gp = gp.unsqueeze(i)
    full = tuple(table[lv] for lv in allv)
    gp = gp.expand(full + tuple(gp.shape[len(allv):]))
    extra = tuple(lv for lv in allv if lv not in levels)
    if not extra:
        return gp
    order = [allv.index(lv) for lv in extra] + [allv.index(lv) for lv in levels]
    order += list(range(len(allv), gp.dim()))
    return make_batched(gp.permute(order), extra)


# --------------------------------------------------------------------------------------------
# the active vmap levels of this thread


class _Levels(threading.local):
    def __init__(self):
        #: innermost last: (level id, batch size, randomness)
        self.stack = []


levels_state = _Levels()
_next_level = [0]
_level_lock = threading.Lock()


def new_level_id():
    with _level_lock:
        _next_level[0] += 1
        return _next_level[0]
