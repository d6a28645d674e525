"""``matmul`` of operands that are not two matrices, run as PyTorch's composite while a
profiler records.

NOTE [ Matmul under the profiler ]
PyTorch's ``matmul`` is a composite: for a stack times a matrix it folds the stack into the
rows of one matrix (``aten::reshape`` > ``aten::view``), multiplies (``aten::mm``) and views
the product back (``aten::_unsafe_view``); for stacks it expands both operands to a common
batch (``aten::expand``), flattens the batch (``aten::reshape``) and runs ``aten::bmm``. Each
step is a node of the graph (``ViewBackward0``, ``MmBackward0``, ``UnsafeViewBackward0``,
``ExpandBackward0``, ``BmmBackward0``), so a profile's backward rows are those nodes' own.
ember's one ``matmul`` kernel does the same arithmetic (NOTE [ Folded matmul ] in
ember/_ops/linalg.py) as one node, which a profile would show as one node doing all the
work. While a profiler records, and only observers are on the mode stack, ``matmul`` of
such operands runs as PyTorch's steps, each an ember op: the rows, their inputs and the
nodes are PyTorch's. For stacks, and a stack times a matrix, the products are the ones the
kernel runs (the same bits); where PyTorch groups them otherwise (a vector operand, a
matrix times a stack) values agree to rounding, as they do with PyTorch's. Two matrices,
a matrix and a vector and two vectors are one op in PyTorch too and keep ember's kernel;
so does a call with ``out=``. A few steps have no ember op of their own and are recorded
under PyTorch's name for the ember op doing the work: ``aten::_unsafe_view`` (a ``view``
of the fresh product), ``aten::squeeze_`` (a ``squeeze`` of it). Nothing here runs when
no profiler records. (``MvBackward0``'s formula is PyTorch's, ``aten::ger`` and
``aten::mv``, profiled or not: ``_matmul_vjp`` in ember/_ops/linalg.py.)
"""

from __future__ import annotations

import math

from .._ops import _node_names

__all__ = []


def decomposes(a, b, out):
    """Whether ``matmul(a, b)`` runs as PyTorch's composite under the profiler: operands
    other than two matrices, a matrix and a vector or two vectors, without ``out=``."""
    if out is not None:
        return False
    na, nb = a._data.ndim, b._data.ndim
    return na >= 3 or nb >= 3 or (na == 1 and nb == 2)


def _renamed(session, result, name, view_name="aten::view"):
    """Record the op that made ``result``, ``view_name`` (the last op event recorded, a
    kernel's or one opened around a Python body), as ``name``."""
    ops, raw = session.ops, session.raw
    last = ops[-1] if ops else None
    if raw and raw[-1].kind == "op" and (last is None or raw[-1].idx > last[0]):
        if raw[-1].name == view_name:
            raw[-1].name = name
    elif last is not None and last[2] == view_name:
        ops[-1] = last[:2] + (name,) + last[3:]
    return result


def _unsafe_view(session, t, shape):
    # PyTorch's ``_unsafe_view`` of a product it just made: a view of its storage that
    # autograd does not take for one (an in-place op on it, a linear layer's bias added,
    # is then no ``CopySlices``), its node an ``UnsafeViewBackward0``
    r = _renamed(session, t.view(shape), "aten::_unsafe_view")
    r._base = None
    return _node_names.rename(r, "UnsafeViewBackward0")


def _should_fold(a, b):
    """PyTorch's test for folding the operand with 3 or more dims into the rows of one
    matrix (the other has at most 2)."""
    from ._recorder import _matmul_folds

    na, nb = a._data.ndim, b._data.ndim
    big, small = (na, nb) if na >= nb else (nb, na)
    return big >= 3 and small <= 2 and _matmul_folds(a, b, False)


def matmul(session, t1, t2):
    """``t1 @ t2`` as PyTorch's ``matmul`` composes it (NOTE [ Matmul under the profiler ]),
    called inside the ``aten::matmul`` event. Returns the product."""
    from .. import _ops

    d1, d2 = t1._data.ndim, t2._data.ndim
    if d1 == 1 and d2 == 2:
        # PyTorch squeezes its fresh product in place; a view of it is the same to the
        # caller, recorded as the ``squeeze_``
        r = _ops.linalg.mm(t1.unsqueeze(0), t2)
        r = _renamed(session, r.squeeze(0), "aten::squeeze_", "aten::squeeze")
        return _node_names.rename(r, "SqueezeBackward4")
    if d1 < d2:
        # PyTorch's fold test transposes the larger operand first, folding or not
        _ = t2.mT
    if _should_fold(t1, t2):
        transpose = d2 > d1
        a = t2.mT if transpose else t1
        b = (t1.t() if d1 == 2 else t1) if transpose else t2
        rows = tuple(a.shape[:-1])
        folded = a.reshape(math.prod(rows), a.shape[-1])
        if b._data.ndim == 2:
            r = _unsafe_view(session, _ops.linalg.mm(folded, b), rows + (b.shape[1],))
            return r.mT.contiguous() if transpose else r
        return _unsafe_view(session, _ops.linalg.mv(folded, b), rows)
    n = t1.shape[-2] if d1 > 1 else 1
    m1 = t1.shape[-1]
    m2 = t2.shape[-2] if d2 > 1 else t2.shape[0]
    p = t2.shape[-1] if d2 > 1 else 1
    batch1 = tuple(t1.shape[:max(d1 - 2, 0)])
    batch2 = tuple(t2.shape[:max(d2 - 2, 0)])
    if d1 == 3 and d2 == 3 and batch1[0] != batch2[0]:
        # a batch of one that needs a gradient is dropped, not expanded
        if batch1[0] == 1 and t1.requires_grad:
            return matmul(session, t1.squeeze(0), t2)
        if batch2[0] == 1 and t2.requires_grad:
            return matmul(session, t1, t2.squeeze(0))
    batch = _broadcast(batch1, batch2)
    count = math.prod(batch)
    e1 = t1.expand(batch + (n, m1)).reshape(count, n, m1)
    vector = d2 == 1
    e2 = t2.expand(batch + ((m2,) if vector else (m2, p)))
    e2 = e2.reshape(count, m2).unsqueeze(2) if vector else e2.reshape(count, m2, p)
    shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    r = _node_names.rename(_ops.linalg.bmm(e1, e2), "BmmBackward0")
    if vector:
        r = r.squeeze(-1)
    return _unsafe_view(session, r, shape)


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    return tuple(y if x == 1 else x for x, y in zip(a, b))
