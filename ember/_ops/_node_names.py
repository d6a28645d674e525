"""PyTorch's names for backward nodes, where one ember op stands for several of torch's.

NOTE [ Node names ]
A backward node's class is named after its op (``mul`` -> ``MulBackward0``, a letter after a
digit upper-cased as PyTorch does: ``log1p`` -> ``Log1PBackward0``), or by the op's
``node_name``. PyTorch names a node after the overload that ran, and ember folds several
overloads into one op: ``x.sum()`` is torch's ``SumBackward0`` but ``x.sum(1)`` its
``SumBackward1``; ``x[0]`` is a ``SelectBackward0`` and ``x[1:]`` a ``SliceBackward0`` where
ember has one indexing op; a 2-D ``matmul`` is an ``MmBackward0``. Printed graphs, profiler
tables (``autograd::engine::evaluate_function: MmBackward0``) and code that inspects
``grad_fn`` read those names, so they follow torch's.

An op whose torch name depends on the call has ``node_name_of(inputs, params)``, returning
the class name for this call (or None for the op's usual name). It reads only what the
dispatcher already has -- the inputs' ranks and dtypes, and the params the public function
settled -- and runs only when a node is recorded. The table below is the one place these
rules live; each was read off torch 2.13's own graphs. Where ember computes in one op what
torch builds from several, the name is that of the node torch leaves on the result (a 3-D
``linear`` with a bias ends in torch's ``ViewBackward0``).

Not covered (ember's graph differs in shape, not only in name): ops ember composes from other
ops where torch has one node (``topk``, ``sort``, the reflection pads, interpolation); those
print the last node ember records.
"""

from __future__ import annotations

import weakref

import numpy as np

from ._registry import ops


def _ndim(t):
    return t._data.ndim


def _is_number(t):
    """An operand that came from a Python number (a 0-dim host array needing no grad)."""
    return t is not None and not t._rg and type(t._data) is np.ndarray and t._data.ndim == 0


def _dims_overload(base):
    # ``x.sum()`` -> SumBackward0, ``x.sum(dims)`` -> SumBackward1
    whole, some = f"{base}Backward0", f"{base}Backward1"  # (built once, not per call)

    def name(inputs, params):
        return whole if params.get("dim") is None else some
    return name


def _var(inputs, params):
    return "StdBackward0" if params.get("take_sqrt") else "VarBackward0"


def _extreme(inputs, params):
    # ``max()``/``min()`` reduce with dim None; ``amax()``/``amin()`` pass every dim by
    # number, so that the two calls torch names ``MaxBackward1`` and ``AmaxBackward0`` stay
    # apart
    if params.get("dim") is None:
        return "MaxBackward1" if params.get("largest") else "MinBackward1"
    return None if params.get("largest") else "AminBackward0"


_NOTHING = object()


def takes_whole_dim(item, size):
    """Whether the index ``item`` is a slice taking all ``size`` elements of its dim in
    order (``:``, ``0:size``): PyTorch's indexing runs no op for it."""
    return type(item) is slice and (item.start is None or item.start == 0) and \
        (item.step is None or item.step == 1) and (item.stop is None or item.stop >= size)


def is_bare_slice(idx):
    """Whether ``idx`` is one slice, not in a tuple (``x[:]``; its graph records it as
    ``(slice,)``, where a tuple key gets a trailing Ellipsis): PyTorch slices for it even
    when it takes the whole dim, while a whole-dim slice inside a tuple key runs no op."""
    return type(idx) is slice or (type(idx) is tuple and len(idx) == 1
                                  and type(idx[0]) is slice)


def getitem_steps(idx, shape):
    """The nodes torch records for ``x[idx]`` on a tensor of ``shape``, first to last: it
    indexes dim by dim, skipping whole-dim slices (an empty list: an alias). None when a
    tensor or list takes part (torch's advanced indexing, one ``IndexBackward0``)."""
    if is_bare_slice(idx):
        return ["SliceBackward0"]
    items = idx if type(idx) is tuple else (idx,)
    steps = []
    dim = 0
    for pos, it in enumerate(items):
        if it is Ellipsis:
            if shape is not None:
                dim = len(shape) - (len(items) - pos - 1)
            continue
        if shape is not None and 0 <= dim < len(shape) and takes_whole_dim(it, shape[dim]):
            dim += 1
            continue
        if it is not None:
            dim += 1
        if type(it) is slice:
            steps.append("SliceBackward0")
        elif it is None or type(it) is bool:
            steps.append("UnsqueezeBackward0")
        elif isinstance(it, (int, np.integer)):
            steps.append("SelectBackward0")
        else:
            return None
    return steps


def _getitem(inputs, params):
    # the node on the result is that of torch's last step (none: an alias)
    idx = params.get("idx")
    if is_bare_slice(idx):  # (``t[a:b]``, the commonest key, needs no shape)
        return "SliceBackward0"
    # (the input's shape as the recording gave it: a tuple, where ``.shape`` builds a Size)
    shape = params.get("shape")
    if shape is None:
        shape = getattr(inputs[0], "shape", None) if inputs else None
    steps = getitem_steps(idx, shape)
    if steps is None:
        return None
    return steps[-1] if steps else "AliasBackward0"


def _pool(kind):
    # 1-d pools run as 2-d ones in torch and end in a squeeze
    def name(inputs, params):
        n = len(params["kernel_size"] if "kernel_size" in params else params["output_size"])
        if n == 1:
            return "SqueezeBackward1"
        return f"{kind.replace('#', str(n))}Backward0"
    return name


def _adaptive_avg(inputs, params):
    size = params["output_size"]
    if len(size) == 1:
        return "SqueezeBackward1"
    if all(s == 1 for s in size):
        return "MeanBackward1"  # torch averages to one element with a mean
    return f"AdaptiveAvgPool{len(size)}DBackward0"


def _matmul(inputs, params):
    a, b = _ndim(inputs[0]), _ndim(inputs[1])
    if a == 2 and b == 2:
        return "MmBackward0"
    if a == 2 and b == 1:
        return "MvBackward0"
    if a == 1 and b == 1:
        return "DotBackward0"
    if a == 1:
        return "SqueezeBackward4" if b == 2 else "UnsafeViewBackward0"
    x = inputs[0]
    if a == 3 and b == 3 and x._data.shape[0] == 1 != inputs[1]._data.shape[0] and \
            _needs_grad(x):
        a = 2   # torch drops a batch of one that needs a gradient: a matrix times a stack
    if a == 2:
        # the stack transposed and folded into one product (then made contiguous) when
        # the matrix needs a gradient, else expanded to a batch
        return "CloneBackward0" if _needs_grad(x) else "UnsafeViewBackward0"
    return "UnsafeViewBackward0"


def _needs_grad(t):
    # (as torch's ``requires_grad``: a view made under ``no_grad`` of one that needs it too)
    return bool(t._rg or t._base is not None and t._base._rg)


def _linear(inputs, params):
    x, bias = inputs[0], inputs[2]
    n = _ndim(x)
    if n == 2:
        return "AddmmBackward0" if bias is not None else "MmBackward0"
    if n == 1:
        return "ViewBackward0" if bias is not None else "SqueezeBackward4"
    if bias is None:
        return "UnsafeViewBackward0"
    # torch folds a contiguous batch into one addmm and views it back; otherwise it adds
    return "ViewBackward0" if inputs[0]._data.flags.c_contiguous else "AddBackward0"


def _addmm(inputs, params):
    # one ember op for torch's addmm, addmv and baddbmm
    if _ndim(inputs[1]) == 3:
        return "BaddbmmBackward0"
    return "AddmvBackward0" if _ndim(inputs[2]) == 1 else None


def _pow(inputs, params):
    a, b = inputs
    if _is_number(b):
        return None  # Tensor ** Scalar: PowBackward0
    if _is_number(a):
        return "PowBackward2"
    return "PowBackward1"


def _sub(inputs, params):
    return "RsubBackward1" if _is_number(inputs[0]) else None


def _div(inputs, params):
    # ``2 / x`` is torch's ``x.reciprocal() * 2``
    return "MulBackward0" if _is_number(inputs[0]) else None


def _scalar_overloads(with_number, with_tensors, number_first=None):
    # torch's Tensor-Scalar and Tensor-Tensor overloads of one binary op have different
    # node names (``remainder(x, 2)``: RemainderBackward0, ``remainder(x, y)``: ...1)
    def name(inputs, params):
        if _is_number(inputs[1]):
            return with_number
        if number_first is not None and _is_number(inputs[0]):
            return number_first
        return with_tensors
    return name


def _split(inputs, params):
    sizes = [e - s for s, e in params["bounds"]]
    even = len(sizes) < 2 or (all(s == sizes[0] for s in sizes[:-1]) and sizes[-1] <= sizes[0])
    return None if even else "SplitWithSizesBackward0"


def _scatter(inputs, params):
    return "ScatterBackward1" if params.get("value") is not None else None


def _sdpa(inputs, params):
    return ("ScaledDotProductFlashAttentionForCpuBackward0" if _ndim(inputs[0]) == 4
            else "UnsafeViewBackward0")


def _lerp(inputs, params):
    return "LerpBackward1"


def _ctc(inputs, params):
    # torch reduces (and zeroes infinite losses) after its ctc node: the node on the result
    # is that of the last step it took
    reduction = params.get("reduction")
    if reduction == "mean":
        return "MeanBackward0"
    if reduction == "sum":
        return "SumBackward0"
    return "WhereBackward0" if params.get("zero_infinity") else None


def _nll(inputs, params):
    # torch runs inputs of 3 or more dims through its image kernel (``nll_loss2d``), others
    # viewed to 4 dims and an unreduced loss viewed back
    n = _ndim(inputs[0])
    if n < 3:
        return None
    return "NllLoss2DBackward0" if n == 4 or params.get("reduction") != "none" else \
        "ViewBackward0"


_CALL_DEPENDENT = {
    "nll_loss": _nll,
    "cross_entropy_loss": _nll,
    "sum": _dims_overload("Sum"),
    "mean": _dims_overload("Mean"),
    "prod": _dims_overload("Prod"),
    "var": _var,
    "amax": _extreme,
    "_getitem": _getitem,
    "max_pool": _pool("MaxPool#DWithIndices"),
    "avg_pool": _pool("AvgPool#D"),
    "adaptive_max_pool": _pool("AdaptiveMaxPool#D"),
    "adaptive_avg_pool": _adaptive_avg,
    "matmul": _matmul,
    "linear": _linear,
    "addmm": _addmm,
    "pow": _pow,
    "sub": _sub,
    "div": _div,
    "split": _split,
    "scatter": _scatter,
    "scaled_dot_product_attention": _sdpa,
    "lerp": _lerp,
    "ctc_loss": _ctc,
    "remainder": _scalar_overloads("RemainderBackward0", "RemainderBackward1"),
    "fmod": _scalar_overloads("FmodBackward0", "FmodBackward1"),
    "copysign": _scalar_overloads("CopysignBackward1", None),
    "xlogy": _scalar_overloads("XlogyBackward2", None, "XlogyBackward1"),
}

_FIXED = {
    "lerp_scalar": "LerpBackward0",
    "round_decimals": "RoundBackward1",  # torch's ``round.decimals`` overload
    "linalg_inv": "LinalgInvExBackward0",
    "linalg_solve": "LinalgSolveExBackward0",
    "linalg_cholesky": "LinalgCholeskyExBackward0",
    "linalg_lu_factor": "LinalgLuFactorExBackward0",
    "convolution_input_grad": "ConvolutionBackward0",  # conv_transpose's forward
    "square": "PowBackward0",
    "outer": "MulBackward0",
    "diff": "SubBackward0",
    "kron": "UnsafeViewBackward0",
}


def rename(result, name):
    """Give the node ember recorded on ``result`` (the first tensor of a tuple) PyTorch's
    class name for the public call that made it, where the op alone cannot tell (``x.t()``
    and ``x.transpose(0, 1)`` are one op; torch names ``TBackward0`` and
    ``TransposeBackward0``). Returns ``result``."""
    t = result[0] if isinstance(result, tuple) else result
    fn = getattr(t, "_grad_fn", None)
    if fn is not None and type(fn).__name__ != name:
        nodes = _autograd_nodes
        if nodes is None:  # (imported once: an import statement costs ~1 us a call)
            nodes = _load_nodes()
        if isinstance(fn, nodes.OpNode):
            fn.__class__ = nodes.named_node_class(name)
    return result


def as_one_node(name, outputs, inputs, saved=None, shown=None):
    """Show ``outputs`` of a call ember composes from several ops as made by one node named
    ``name`` over torch's tensor arguments ``inputs`` (NOTE [ One node for a composite ] in
    ember/autograd/_composite_node.py; ``saved`` and ``shown`` as its ``as_one_node``
    takes them). Returns ``outputs``.

    Example:
        >>> import ember
        >>> x = ember.ones(4, requires_grad=True)
        >>> as_one_node("TwiceBackward0", x * 2, (x,)).grad_fn.name()
        'TwiceBackward0'
    """
    one = _one_node[0]
    if one is None:  # (imported once: the autograd package loads after the op families)
        from ..autograd._composite_node import as_one_node as one

        _one_node[0] = one
    return one(name, outputs, inputs, saved, shown)


_one_node = [None]
_autograd_nodes = None


def _load_nodes():
    global _autograd_nodes
    from ..autograd import _nodes

    _autograd_nodes = _nodes
    return _nodes


def install():
    """Set the table's names on the ops (called once every family is loaded)."""
    for name, rule in _CALL_DEPENDENT.items():
        op = ops.get(name)
        if op is not None:
            op.node_name_of = rule
    for name, node in _FIXED.items():
        op = ops.get(name)
        if op is not None:
            op.node_name = node


# ------------------------------------------------------------------------------------------------
# saved values under torch's names

#: ember op -> torch's names for the node's inputs, by position (a dict by node name where
#: they depend on the call). A trailing ``^T`` means torch saved the input's transpose (a
#: ``linear``'s weight is ``mat2`` of torch's ``mm``). Ops not listed: ``self`` for one
#: input, ``self`` and ``other`` for two; more inputs keep ember's formula names only.
_SAVED_INPUTS = {
    "matmul": {"MmBackward0": ("self", "mat2"), "BmmBackward0": ("self", "mat2"),
               "MvBackward0": ("self", "vec"), "DotBackward0": ("self", "tensor")},
    "linear": {"AddmmBackward0": ("mat1", "mat2^T"), "MmBackward0": ("self", "mat2^T")},
    "pow": ("self", "exponent"),
    "convolution": ("input", "weight", "bias"),
    "where": ("condition", "self", "other"),
    "clamp": ("self", "min", "max"),
    "clamp_min": {"ClampBackward1": ("self", "min")},
    "clamp_max": {"ClampBackward1": ("self", "max")},
    "mse_loss": ("self", "target"),
    "l1_loss": ("self", "target"),
    "smooth_l1_loss": ("self", "target"),
    "huber_loss": ("self", "target"),
    "binary_cross_entropy": ("self", "target", "weight"),
    "binary_cross_entropy_with_logits": ("self", "target", "weight", "pos_weight"),
    "addcmul": ("self", "tensor1", "tensor2"),
    "addcdiv": ("self", "tensor1", "tensor2"),
    "lerp": ("self", "end", "weight"),
    "_take_along": ("self", "indices"),  # max/min/sort/topk/kthvalue/mode/median(dim)
    "scaled_dot_product_attention": {
        "ScaledDotProductFlashAttentionForCpuBackward0": ("query", "key", "value")},
}


def saved_input_names(op_name, node_name, n):
    """torch's names for the ``n`` inputs of a node of ``op_name`` named ``node_name``
    (``grad_fn._saved_self``, ``_saved_mat2``...; the first inputs where fewer names are
    given), each maybe ending in ``^T``; None where only ember's names apply (NOTE [ Node
    names ])."""
    names = _SAVED_INPUTS.get(op_name)
    if type(names) is dict:
        names = names.get(node_name)
    if names is None:
        names = (("self",), ("self", "other")).__getitem__(n - 1) if n in (1, 2) else None
    return names


# ------------------------------------------------------------------------------------------------
# edges under torch's shape

# NOTE [ Shown edges ]
# A node's ``_next`` has one edge per input of the ember op, and the engine routes gradients
# along exactly those. PyTorch's node has an edge per *differentiable* tensor argument of
# the overload that ran: no edge for an index, a mask, a target, the running statistics of
# a batch norm or a Python number. And where ember computes in one op what torch builds
# from several (``linear`` is torch's ``addmm`` of the input and the weight's transpose,
# ``cross_entropy`` its ``nll_loss`` of a ``log_softmax``), torch's graph has nodes that
# ember's has not. Code that walks ``grad_fn.next_functions`` (printing a model's graph,
# drawing it, the tutorials' ``loss.grad_fn.next_functions[0][0]``) sees torch's shape:
# ``next_functions`` is a view built from ``_next`` on first access, dropping the
# unconnected edges torch has no slot for and adding stand-in nodes (``ShownNode``) named
# as torch's, which lead on to the real edges. The engine never reads the view.

#: node name -> the positions of ember's inputs torch has an edge for (an unconnected edge at
#: any other position is left out; a connected one never is)
_KEPT_EDGES = {
    "PowBackward0": (0,), "PowBackward2": (1,), "RsubBackward1": (1,),
    "ClampBackward1": (0,), "ClampMinBackward0": (0,), "ClampMaxBackward0": (0,),
    "RemainderBackward0": (0,), "FmodBackward0": (0,), "CopysignBackward1": (0,),
    "XlogyBackward2": (0,), "XlogyBackward1": (1,),
    "MaskedFillBackward0": (0,), "MaskedSelectBackward0": (0,), "MaskedScatterBackward0": (0, 2),
    "GatherBackward0": (0,), "IndexSelectBackward0": (0,), "IndexBackward0": (0,),
    "TakeBackward0": (0,), "PutBackward0": (0, 2), "IndexPutBackward0": (0, 1),
    "ScatterBackward0": (0, 2), "ScatterBackward1": (0,), "ScatterAddBackward0": (0, 2),
    "ScatterReduceBackward0": (0, 2), "IndexAddBackward0": (0, 2), "IndexCopyBackward0": (0, 2),
    "IndexFillBackward0": (0,), "IndexReduceBackward0": (0, 2),
    "EmbeddingBackward0": (0,), "LinalgLuSolveBackward0": (0, 2), "LuUnpackBackward0": (0,),
    "FillBackward0": (0,), "CtcLossBackward0": (0,),
    "CummaxBackward0": (0,), "CumminBackward0": (0,), "KthvalueBackward0": (0,),
    "MaxBackward0": (0,), "MinBackward0": (0,), "MedianBackward1": (0,),
    "NanmedianBackward1": (0,), "ModeBackward0": (0,), "SortBackward0": (0,),
    "TopkBackward0": (0,), "WhereBackward0": (1, 2),
    "NllLossBackward0": (0,), "NllLoss2DBackward0": (0,),
    "BinaryCrossEntropyBackward0": (0, 1), "BinaryCrossEntropyWithLogitsBackward0": (0, 1),
    "NativeBatchNormBackward0": (0, 1, 2),
    "ScaledDotProductFlashAttentionForCpuBackward0": (0, 1, 2),
    # torch's Scalar overloads and losses whose target takes no gradient
    "AddBackward1": (0,), "SubBackward1": (0,), "MulBackward1": (0,), "DivBackward1": (0,),
    "SoftMarginLossBackward0": (0,), "MultiMarginLossBackward0": (0,),
    "MultilabelMarginLossBackward0": (0,),
}


def _keep(nxt, kept):
    return tuple(e for i, e in enumerate(nxt) if i in kept or e[0] is not None)


def _linear_edges(node, nxt, shown):
    # torch's linear: addmm(bias, x, w.t()) for a matrix (mm without a bias), the input
    # flattened to a matrix and the result viewed back for other ranks
    from ._node_steps import linear_steps

    x, w, b = nxt[0], nxt[1], nxt[2]
    wt = shown("TBackward0", (w,))
    name = type(node).__name__
    if name == "AddmmBackward0":
        return (b, x, wt)
    if name == "MmBackward0":
        return (x, wt)
    prod, view = linear_steps(node)  # (the steps' saved values)
    if name == "ViewBackward0":
        return (shown("AddmmBackward0", (b, shown("ViewBackward0", (x,), view), wt), prod),)
    if name == "UnsafeViewBackward0":
        return (shown("MmBackward0", (shown("ViewBackward0", (x,), view), wt), prod),)
    if name == "SqueezeBackward4":
        return (shown("MmBackward0", (shown("UnsqueezeBackward0", (x,), view), wt), prod),)
    if name == "AddBackward0":  # a non-contiguous batch: a matmul, then the bias added
        flat = shown("UnsafeViewBackward0", (shown("CloneBackward0", (x,)),))
        return (shown("UnsafeViewBackward0", (shown("MmBackward0", (flat, wt)),)), b)
    return nxt


def _matmul_edges(node, nxt, shown):
    # torch folds an N-d matmul into one mm/mv of the input viewed as a matrix, or one bmm
    # of both operands expanded to a common batch and folded to 3 dims (a copy where they
    # do not fold), and views the product back
    from ._node_steps import matmul_steps

    if type(node).__name__ != "UnsafeViewBackward0":
        return nxt
    steps = matmul_steps(node)
    if steps is None:
        return nxt
    kind, saved, operands = steps
    if kind in ("mm", "mv"):
        a = shown("ViewBackward0", (nxt[0],), operands[0])
        name = "MmBackward0" if kind == "mm" else "MvBackward0"
        return (shown(name, (a, nxt[1]), saved),)
    sides = []
    for edge, (expand, folds, view) in zip(nxt, operands):
        e = shown("ExpandBackward0", (edge,), expand)
        sides.append(shown(folds, (e,), view) if folds else
                     shown("UnsafeViewBackward0", (shown("CloneBackward0", (e,)),), view))
    return (shown("BmmBackward0", tuple(sides), saved),)


def _nll_edges(node, nxt, shown, log_softmax=False):
    # torch's cross_entropy is nll_loss of log_softmax; an input of 3 or more dims but 4 is
    # viewed to 4 dims for the image kernel, and an unreduced loss viewed back
    edge = nxt[0]
    if edge[0] is None:
        return _keep(nxt, (0,))
    if log_softmax:  # (torch's log_softmax over the classes, ember's saved probabilities)
        own = weakref.proxy(node)  # (NOTE [ Stand-ins hold their node weakly ] in _node_steps)
        edge = shown("LogSoftmaxBackward0", (edge,),
                     {"dim": lambda: 1, "result": lambda: own.saved_result(1).log()})
    name = type(node).__name__
    meta = node._meta_in[0] if node._meta_in else None
    n = len(meta[0]) if meta is not None else 0
    if name == "NllLoss2DBackward0" and n != 4:
        return (shown("ViewBackward0", (edge,)),)
    if name == "ViewBackward0":  # (unreduced, not 4 dims)
        return (shown("NllLoss2DBackward0", (shown("ViewBackward0", (edge,)),)),)
    return (edge,)


def _cross_entropy_edges(node, nxt, shown):
    return _nll_edges(node, nxt, shown, True)


def _getitem_edges(node, nxt, shown):
    # one ember node for the whole index; torch's chain of selects and slices before it
    from ._node_steps import getitem_steps_saved, step_saved

    meta = node._meta_in[0] if node._meta_in else None
    steps = getitem_steps(node._params.get("idx"), None if meta is None else meta[0])
    if not steps or len(steps) < 2:
        return nxt
    saved = getitem_steps_saved(node)
    edge = nxt[0]
    for i, name in enumerate(steps[:-1]):
        edge = shown(name, (edge,), step_saved(saved[i]) if saved else None)
    return (edge,) + tuple(nxt[1:])


def _pool1d_edges(node, nxt, shown):
    # torch's 1-d pools: a 2-d pool of the input unsqueezed at dim -2, squeezed back
    from ._node_steps import pool1d_steps

    if type(node).__name__ != "SqueezeBackward1":
        return _kept_edges(node, nxt)
    _, name, saved, unsqueeze = pool1d_steps(node)
    return (shown(name, (shown("UnsqueezeBackward0", (nxt[0],), unsqueeze),), saved),)


def _outer_edges(node, nxt, shown):
    # torch's outer: the first vector viewed as a column, times the second
    meta = node._meta_in[0]
    size = None if meta is None else tuple(meta[0])
    return (shown("ViewBackward0", (nxt[0],), {"self_sym_sizes": lambda: size}), nxt[1])


def _rsub_edges(node, nxt, shown):
    # ``rsub(x, y)`` is ember's ``y - x``; torch's node lists x's edge first
    if type(node).__name__ == "RsubBackward0":
        return (nxt[1], nxt[0])
    return _kept_edges(node, nxt)


def _reshape_copy_edges(node, nxt, shown):
    # torch's reshape of what no view can give: a contiguous clone, then a view of it
    return (shown("CloneBackward0", (nxt[0],)),) + tuple(nxt[1:])


_EDGE_SHAPES = {"linear": _linear_edges, "matmul": _matmul_edges,
                "cross_entropy_loss": _cross_entropy_edges,
                "nll_loss": _nll_edges,
                "_getitem": _getitem_edges, "_reshape_copy": _reshape_copy_edges,
                "max_pool": _pool1d_edges, "avg_pool": _pool1d_edges,
                "adaptive_max_pool": _pool1d_edges, "adaptive_avg_pool": _pool1d_edges,
                "sub": _rsub_edges, "outer": _outer_edges}


def _linear_hook_view(node, fn):
    # torch's addmm(bias, x, w.t()) / mm(x, w.t()) node hands its hooks the gradients of
    # (bias, x, w.t()) / (x, w.t()); ember's linear node has those of (x, w, bias)
    name = type(node).__name__
    if name not in ("AddmmBackward0", "MmBackward0"):
        return fn
    has_bias = name == "AddmmBackward0"

    def t(g):
        return None if g is None else g.t()

    def hook(grads_in, grads_out):
        gx, gw, gb = (tuple(grads_in) + (None, None, None))[:3]
        shown = (gb, gx, t(gw)) if has_bias else (gx, t(gw))
        r = fn(shown, grads_out)
        if r is None:
            return None
        r = tuple(r)
        return (r[1], t(r[2]), r[0]) if has_bias else (r[0], t(r[1]), gb)

    return hook


_HOOK_VIEWS = {"linear": _linear_hook_view}


def shown_hook(node, fn):
    """``fn(grad_inputs, grad_outputs)``, a hook for ``node``, wrapped to see the gradients
    as torch's node of that name has them (NOTE [ Shown edges ]): the same inputs, in the same
    order, as ``next_functions`` shows; what it returns is mapped back."""
    rule = _HOOK_VIEWS.get(node._op.name)
    return fn if rule is None else rule(node, fn)


def shown_edges(node, nxt, shown):
    """``node.next_functions`` as torch's graph has it (NOTE [ Shown edges ]), from the real
    edges ``nxt``; ``shown(name, edges)`` makes a stand-in node and returns its edge (an
    unconnected edge stays one: torch has no node on a path that needs no gradient)."""
    rule = _EDGE_SHAPES.get(node._op.name)
    if rule is not None:
        return rule(node, nxt, shown)
    return _kept_edges(node, nxt)


def _kept_edges(node, nxt):
    kept = _KEPT_EDGES.get(type(node).__name__)
    if kept is None or all(e[0] is not None for e in nxt):
        return nxt
    return _keep(nxt, kept)
