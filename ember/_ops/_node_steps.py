"""The saved values of the stand-in nodes torch's graph has where ember computes a step
inside another node (NOTE [ Shown edges ] in _node_names.py; NOTE [ Saved attributes as
torch lists them ] in _node_saved.py): each step's ``{torch saved name: fn()}``, read off the
node that computes it when read.
"""

from __future__ import annotations

import math
import weakref

from ._node_saved import _broadcast, _contiguous_strides, _shape, _strides


def getitem_steps_saved(node):
    """Per step of torch's dim-by-dim indexing for ``node`` (a ``_getitem``), first to last:
    ``(kind, dim, sizes before, extra)``; None where a tensor index takes part."""
    from ._node_names import is_bare_slice, takes_whole_dim
    import numpy as np

    idx = node._params.get("idx")
    shape = list(_shape(node, 0))
    items = idx if type(idx) is tuple else (idx,)
    bare = is_bare_slice(idx)
    dim = 0
    out = []
    for pos, it in enumerate(items):
        if it is Ellipsis:
            dim = len(shape) - sum(1 for x in items[pos + 1:] if x is not None)
            continue
        if dim < len(shape) and type(it) is slice and not bare and \
                takes_whole_dim(it, shape[dim]):
            dim += 1
            continue
        before = tuple(shape)
        if type(it) is slice:
            start, stop, step = it.indices(shape[dim])
            n = len(range(start, stop, step))
            out.append(("slice", dim, before, (0 if it.start is None else it.start,
                                               2 ** 63 - 1 if it.stop is None else it.stop,
                                               1 if it.step is None else it.step)))
            shape[dim] = n
            dim += 1
        elif it is None or type(it) is bool:
            out.append(("unsqueeze", dim, before, None))
            shape.insert(dim, 1)
            dim += 1
        elif isinstance(it, (int, np.integer)):
            out.append(("select", dim, before, int(it)))
            del shape[dim]
        else:
            return None
    return out


# NOTE [ Stand-ins hold their node weakly ]
# A node keeps the edges ``next_functions`` showed it (the same stand-ins at every read, as
# torch's), and a stand-in keeps the functions that read its saved values off that node: a
# strong reference back would make every graph that was once walked a reference cycle,
# freed only by the garbage collector (per-sample gradients through ``vmap(grad(f))`` walk
# theirs). The functions hold a weak proxy of the node instead; a stand-in outliving its
# node raises ReferenceError when read, where torch's would have been freed with the graph.


def step_saved(step):
    """``{torch saved name: fn()}`` for one step of ``getitem_steps_saved``."""
    kind, dim, before, extra = step
    if kind == "unsqueeze":
        return {"dim": lambda: dim}
    if kind == "select":
        return {"dim": lambda: dim, "index": lambda: extra, "self_sym_sizes": lambda: before}
    d = {"dim": lambda: dim, "self_sym_sizes": lambda: before}
    d.update({k: (lambda v=v: v) for k, v in zip(("start", "end", "step"), extra)})
    return d




def _mm_saved(names, left, right, left_sizes, right_sizes, left_strides, right_strides):
    return {names[0]: left, names[1]: right,
            f"{names[0]}_sym_sizes": lambda: left_sizes,
            f"{names[0]}_sym_strides": lambda: left_strides,
            f"{names[1]}_sym_sizes": lambda: right_sizes,
            f"{names[1]}_sym_strides": lambda: right_strides}


def linear_steps(node):
    """The saved values of torch's steps for ``linear``: ``(product, view of the input)``,
    the product being the addmm/mm of the input as a matrix and the weight's transpose."""
    xs, ws = _shape(node, 0), _shape(node, 1)
    if xs is None or ws is None:
        return None, None
    k, n = ws[1], ws[0]
    m = math.prod(xs[:-1])
    own = weakref.proxy(node)  # (NOTE [ Stand-ins hold their node weakly ])

    def x2d():
        x = own.saved_input(0)
        return None if x is None else x.reshape(m, k)

    def wt():
        return own.saved_input(1, transposed=True)

    first = "mat1" if node._next[2][0] is not None or len(xs) != 1 and \
        type(node).__name__ == "ViewBackward0" else "self"
    prod = _mm_saved((first, "mat2"), x2d, wt, (m, k), (k, n),
                     (k, 1) if node._next[0][0] is not None else (),
                     (1, k) if node._next[1][0] is not None else ())
    if first == "mat1":
        prod.update({"alpha": lambda: 1, "beta": lambda: 1})
    view = {"dim": lambda: 0} if type(node).__name__ == "SqueezeBackward4" else \
        {"self_sym_sizes": lambda: xs}
    return prod, view


def _merged_view(shape, strides):
    """How torch's reshape folds all but the last two dims of a tensor of ``shape`` and
    ``strides`` into one: ``"ViewBackward0"`` (contiguous), ``"ReshapeAliasBackward0"`` (a
    view of a strided tensor) or None (a copy)."""
    dims = [(s, st) for s, st in zip(shape[:-2], strides[:-2]) if s != 1]
    if not all(st == nst * ns for (s, st), (ns, nst) in zip(dims, dims[1:])):
        return None
    want = _contiguous_strides(shape)
    contiguous = all(st == w for s, st, w in zip(shape, strides, want) if s != 1)
    return "ViewBackward0" if contiguous else "ReshapeAliasBackward0"


def matmul_steps(node):
    """torch's steps for an N-d ``matmul`` ember does in one node: ``(kind, saved of the
    product, saved of each operand's steps)`` with kind ``mm``/``mv``/``bmm``, or None where
    ember's node already reads as torch's."""
    a, b = _shape(node, 0), _shape(node, 1)
    if a is None or b is None or len(a) < 3:
        return None

    own = weakref.proxy(node)  # (NOTE [ Stand-ins hold their node weakly ])

    def flat_a():
        x = own.saved_input(0)
        return None if x is None else x.reshape(-1, a[-1])

    rows = math.prod(a[:-1])
    if len(b) == 2:
        return ("mm", _mm_saved(("self", "mat2"), flat_a, lambda: own.saved_input(1),
                                (rows, a[-1]), b,
                                (a[-1], 1) if node._next[0][0] is not None else (),
                                _strides(1).fn(node, False)),
                ({"self_sym_sizes": lambda: a}, None))
    if len(b) == 1:
        return ("mv", {"self": flat_a, "vec": lambda: own.saved_input(1)},
                ({"self_sym_sizes": lambda: a}, None))
    batch = _broadcast(a[:-2], b[:-2])
    steps = []
    for i, s in enumerate((a, b)):
        full = batch + s[-2:]
        t = node.saved_input(i)
        st = t.stride() if t is not None else _contiguous_strides(s)
        st = (0,) * (len(full) - len(s)) + tuple(st)
        st = tuple(0 if n == 1 and f != 1 else x
                   for n, f, x in zip((1,) * (len(full) - len(s)) + s, full, st))
        steps.append(({"self_sym_sizes": lambda s=s: s}, _merged_view(full, st),
                      {"self_sym_sizes": lambda full=full: full}))

    def operand(i):
        def read():
            t = own.saved_input(i)
            s = (a, b)[i]
            return None if t is None else t.expand(batch + s[-2:]).reshape(
                math.prod(batch), *s[-2:])
        return read
    return ("bmm", {"self": operand(0), "mat2": operand(1)}, tuple(steps))


def _pool_out_len(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1  # the last window must start inside the input or its left padding
    return out


def pool1d_steps(node):
    """torch runs a 1-d pool as a 2-d one on the input with a unit dim -2 inserted:
    ``(saved of the final squeeze, 2-d pool node name, its saved, saved of the unsqueeze)``."""
    op = node._op.name
    p = node._params
    x = _shape(node, 0)
    if op in ("adaptive_avg_pool", "adaptive_max_pool"):
        n_out = p["output_size"][0]
    else:
        k, s, pad = p["kernel_size"][0], p["stride"][0], p["padding"][0]
        n_out = _pool_out_len(x[-1], k, s, pad, p.get("dilation", (1,))[0], p["ceil_mode"])
    squeeze = {"dim": lambda: -2, "self_sym_sizes": lambda: x[:-1] + (1, n_out)}

    own = weakref.proxy(node)  # (NOTE [ Stand-ins hold their node weakly ])

    def x2d():
        t = own.saved_input(0)
        return None if t is None else t.unsqueeze(-2)

    def indices2d():
        r = own.saved_result(1)
        return None if r is None else r.unsqueeze(-2)

    if op == "max_pool":
        name = "MaxPool2DWithIndicesBackward0"
        saved = {"self": x2d, "result1": indices2d, "ceil_mode": lambda: p["ceil_mode"],
                 "kernel_size": lambda: (1,) + tuple(p["kernel_size"]),
                 "stride": lambda: (1,) + tuple(p["stride"]),
                 "padding": lambda: (0,) + tuple(p["padding"]),
                 "dilation": lambda: (1,) + tuple(p["dilation"])}
    elif op == "avg_pool":
        name = "AvgPool2DBackward0"
        saved = {"self": x2d, "ceil_mode": lambda: p["ceil_mode"],
                 "count_include_pad": lambda: p["count_include_pad"],
                 "divisor_override": lambda: p["divisor_override"],
                 "kernel_size": lambda: (1,) + tuple(p["kernel_size"]),
                 "stride": lambda: (1,) + tuple(p["stride"]),
                 "padding": lambda: (0,) + tuple(p["padding"])}
    elif op == "adaptive_max_pool":
        name = "AdaptiveMaxPool2DBackward0"
        saved = {"self": x2d, "result1": indices2d}
    else:
        name = "AdaptiveAvgPool2DBackward0"
        saved = {"self": x2d}
    return squeeze, name, saved, {"dim": lambda: -2}
