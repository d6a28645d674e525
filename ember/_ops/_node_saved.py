"""The ``_saved_*`` attributes of backward nodes, named and valued as PyTorch's.

NOTE [ Saved attributes as torch lists them ]
Graph drawers (torchviz's ``make_dot``) and debugging helpers list a node's saved values by
walking ``dir(grad_fn)`` for names starting with ``_saved_`` and printing each value or
shape. PyTorch's node lists a fixed set per class -- the tensors and arguments its backward
formula keeps (``AddmmBackward0``: ``_saved_alpha``, ``_saved_beta``, ``_saved_mat1``,
``_saved_mat1_sym_sizes``, ``_saved_mat1_sym_strides``...), an unsaved tensor reading as
None. Ember's formulas keep other things (a view's target shape, a reduction's dtype), so
the table below says, per ember op (and per torch node name where one op stands for several
of torch's, NOTE [ Node names ] in _node_names.py), which names torch's node lists and how
each value is read off ember's node: an input, a result, an input's sizes or strides, a
call parameter, a constant, or a small function of the node. Nodes of ops listed here show
exactly torch's names in ``dir()``; ember's own names still answer ``getattr`` (code and
tests read them) but are not listed. Ops not listed keep ember's names (see
``OpNode.__dir__``). Everything is computed when read: recording a node costs nothing more.

Where ember keeps less than torch, the value is what ember can still tell: a layer norm's
bias is not needed by its formula and not saved, but when it is a leaf (a parameter) the
node's edge to it still names it, and that is what is shown. A dim is shown as ember's
recorded (non-negative) dim; torch shows the dim as the caller wrote it.
"""

from __future__ import annotations

import math

#: the number torch's loss nodes save for each ``reduction``
REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


# ------------------------------------------------------------------------------------------------
# value readers: each is ``fn(node, raw) -> value``; ``TENSOR`` marks the ones that also have a
# ``_raw_saved_`` form


class _Reader:
    __slots__ = ("fn", "tensor")

    def __init__(self, fn, tensor=False):
        self.fn = fn
        self.tensor = tensor


def _input(i, transposed=False):
    """Ember's input ``i`` as its node saved it (None where it kept none)."""
    def read(node, raw):
        return node.saved_input(i, raw, transposed)
    return _Reader(read, tensor=True)


def _result(k=None):
    """The node's result ``k`` (the whole result for None), as saved."""
    def read(node, raw):
        return node.saved_result(k, raw)
    return _Reader(read, tensor=True)


def _sizes(i, transposed=False):
    def read(node, raw):
        s = _shape(node, i)
        return None if s is None else (s[::-1] if transposed else s)
    return _Reader(read)


def _strides(i, transposed=False):
    """The strides of the saved input ``i`` (in elements; a contiguous tensor's when ember
    kept no tensor)."""
    def read(node, raw):
        if i < len(node._next) and node._next[i][0] is None:
            return ()  # torch keeps an operand's strides only for its own gradient
        t = node.saved_input(i, False, transposed)
        if t is not None:
            return tuple(t.stride())
        s = _shape(node, i)
        if s is None:
            return None
        s = s[::-1] if transposed else s
        return _contiguous_strides(s)
    return _Reader(read)


def _contiguous_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _numel(i):
    def read(node, raw):
        s = _shape(node, i)
        return None if s is None else math.prod(s)
    return _Reader(read)


def _param(key, default=None, convert=None):
    def read(node, raw):
        v = node._params.get(key, default)
        return convert(v) if convert is not None else v
    return _Reader(read)


def _const(value):
    return _Reader(lambda node, raw: value)


def _fn(f, tensor=False):
    return _Reader(lambda node, raw: f(node), tensor=tensor)


def _shape(node, i):
    """Input ``i``'s shape: kept for every input needing a gradient (NOTE [ Gradient
    metadata per input ] in ember/autograd/_nodes.py), else read off the saved input."""
    meta = node._meta_in[i] if i < len(node._meta_in) else None
    if meta is not None:
        return tuple(meta[0])
    saved = node._saved
    x = saved[i] if saved is not None and i < len(saved) else None
    if type(x).__name__ == "SavedTensor":
        x = x.t  # (None for a saved result; a stand-in's shape is its own)
    return None if x is None else tuple(x.shape)


def _leaf_input(i):
    """Input ``i`` where ember's formula keeps none but torch's node does: the saved one if
    any, else the leaf the node's edge names (NOTE [ Saved attributes as torch lists them ])."""
    def read(node, raw):
        t = node.saved_input(i, raw)
        if t is not None:
            return t
        edge = node._next[i][0] if i < len(node._next) else None
        if raw or edge is None or type(edge).__name__ != "AccumulateGrad":
            return None
        if node._freed:
            node.saved_input(0, False)  # raises the "freed" error as torch does
        return edge.variable
    return _Reader(read, tensor=True)


def _index(v):
    # torch keeps an absent index (``padding_idx=None``, ``ignore_index``) as -1
    return -1 if v is None else v


# ------------------------------------------------------------------------------------------------
# per-op rules


def _mm_like(a, b, names, b_transposed=False, sizes=True):
    d = {names[0]: _input(a), names[1]: _input(b, b_transposed)}
    if sizes:
        d.update({f"{names[0]}_sym_sizes": _sizes(a), f"{names[0]}_sym_strides": _strides(a),
                  f"{names[1]}_sym_sizes": _sizes(b, b_transposed),
                  f"{names[1]}_sym_strides": _strides(b, b_transposed)})
    return d


def _matmul_view_sizes(node):
    # torch folds an N-d @ 2-d product into one mm and views the result back
    a, b = _shape(node, 0), _shape(node, 1)
    if len(b) == 2:
        return (math.prod(a[:-1]), b[1])
    batch = _broadcast(a[:-2], b[:-2])
    return (math.prod(batch), a[-2] if len(a) > 1 else 1, b[-1])


def _broadcast(a, b):
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def _linear_view_sizes(node):
    x, w = _shape(node, 0), _shape(node, 1)
    return (math.prod(x[:-1]), w[0])


def _conv_bias_sizes(node):
    s = _shape(node, 2)
    return s if s is not None else (0,)


def _total_weight(node):
    # torch's nll node keeps the weight summed over the non-ignored targets
    from .._core.tensor import wrap
    import numpy as np

    target = node.saved_input(1, False)
    if target is None:
        return None
    t = np.asarray(target.detach().numpy()).reshape(-1)
    keep = t != node._params.get("ignore_index", -100)
    weight = node.saved_input(2, False)
    meta = node._meta_in[0]
    dtype = meta[1] if meta is not None else np.float32
    if weight is None:
        total = np.asarray(keep.sum(), dtype=dtype)
    else:
        w = np.asarray(weight.detach().numpy())
        total = np.asarray(w[t[keep]].sum() if keep.any() else 0, dtype=dtype)
    return wrap(total)


def _nll(self_reader):
    return {"ignore_index": _param("ignore_index", -100, _index),
            "reduction": _param("reduction", "mean", lambda v: REDUCTION_ENUM.get(v, v)),
            "self": self_reader, "target": _input(1), "total_weight": _fn(_total_weight),
            "weight": _input(2)}


def _bn_stat(k):
    # in evaluation torch's node keeps empty batch statistics (it reads the running ones)
    def read(node, raw):
        if node._params.get("training", True):
            return node.saved_result(k, raw)
        if raw:
            return None
        from .._core.tensor import wrap
        import numpy as np

        return wrap(np.empty((0,), dtype=node._meta_in[0][1]))
    return _Reader(read, tensor=True)


def _log(t):
    return None if t is None else t.log()


def _layer_norm_shape(node):
    return _shape(node, 0)[-node._params["ndim"]:]


def _getitem_rules(node):
    # the saved values of the last step of torch's dim-by-dim indexing
    steps = getitem_steps_saved(node)
    return steps[-1] if steps else None


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


def _getitem_value(field):
    def read(node):
        last = _getitem_rules(node)
        if last is None:
            return None
        kind, dim, before, extra = last
        if field == "dim":
            return dim
        if field == "self_sym_sizes":
            return before
        if field == "index":
            return extra
        return dict(zip(("start", "end", "step"), extra or (None,) * 3)).get(field)
    return _fn(read)


_GETITEM = {
    "SelectBackward0": {n: _getitem_value(n) for n in ("dim", "index", "self_sym_sizes")},
    "SliceBackward0": {n: _getitem_value(n)
                       for n in ("dim", "start", "end", "step", "self_sym_sizes")},
    "UnsqueezeBackward0": {"dim": _getitem_value("dim")},
    "AliasBackward0": {},
}

def _index_indices(node):
    # torch's list of index tensors, None for a dim taken whole (a trailing one dropped)
    if node._freed:
        node.saved_input(0)  # raises the "freed" error
    saved = iter(node._saved[1:])
    out = []
    for it in node._params["spec"]:
        if type(it) is slice:
            out.append(None)
        else:
            t = next(saved, None)
            out.append(t.unpack(node) if type(t).__name__ == "SavedTensor" else t)
    while out and out[-1] is None:
        out.pop()
    return tuple(out)


_SELF = {"self": _input(0)}
_SELF_RESULT = {"self": _input(0), "result": _result()}
_RESULT = {"result": _result()}
_NOTHING: dict = {}


def _reduce(numel=False, with_dim=True):
    d = {"self_sym_sizes": _param("shape")}
    if with_dim:
        d.update({"dim": _param("dim"), "keepdim": _param("keepdim")})
    if numel:
        d["self_sym_numel"] = _fn(lambda node: math.prod(node._params["shape"]))
    return d


#: ember op -> {torch saved name (without ``_saved_``): reader}, or -> {torch node name: that}
SAVED = {
    "linear": {
        "AddmmBackward0": {"alpha": _const(1), "beta": _const(1),
                           **_mm_like(0, 1, ("mat1", "mat2"), b_transposed=True)},
        "MmBackward0": _mm_like(0, 1, ("self", "mat2"), b_transposed=True),
        "ViewBackward0": {"self_sym_sizes": _fn(_linear_view_sizes)},
        "UnsafeViewBackward0": {"self_sym_sizes": _fn(_linear_view_sizes)},
    },
    "addmm": {  # addmm, addmv and baddbmm
        "AddmmBackward0": {"alpha": _param("alpha", 1), "beta": _param("beta", 1),
                           **_mm_like(1, 2, ("mat1", "mat2"))},
        "AddmvBackward0": {"alpha": _param("alpha", 1), "beta": _param("beta", 1),
                           **_mm_like(1, 2, ("mat", "vec"), sizes=False)},
        "BaddbmmBackward0": {"alpha": _param("alpha", 1), "beta": _param("beta", 1),
                             **_mm_like(1, 2, ("batch1", "batch2"), sizes=False)}},
    "matmul": {
        "MmBackward0": _mm_like(0, 1, ("self", "mat2")),
        "BmmBackward0": _mm_like(0, 1, ("self", "mat2"), sizes=False),
        "MvBackward0": _mm_like(0, 1, ("self", "vec"), sizes=False),
        "DotBackward0": _mm_like(0, 1, ("self", "tensor"), sizes=False),
        "UnsafeViewBackward0": {"self_sym_sizes": _fn(_matmul_view_sizes)},
    },
    "convolution": {"input": _input(0), "weight": _input(1),
                    "bias_sym_sizes_opt": _fn(_conv_bias_sizes),
                    "stride": _param("stride"), "padding": _param("padding"),
                    "dilation": _param("dilation"), "groups": _param("groups"),
                    "transposed": _const(False),
                    "output_padding": _fn(lambda node: (0,) * len(node._params["stride"]))},
    "relu": _RESULT,
    "gelu": {"self": _input(0), "approximate": _const("none")},
    "gelu_tanh": {"self": _input(0), "approximate": _const("tanh")},
    "silu": _SELF,
    "softmax": {"dim": _param("dim"), "result": _result()},
    "log_softmax": {"dim": _param("dim"), "result": _result()},
    "native_layer_norm": {"input": _input(0), "weight": _input(1), "bias": _leaf_input(2),
                          "normalized_shape": _fn(_layer_norm_shape),
                          "result1": _result(1), "result2": _result(2)},
    "native_batch_norm": {"input": _input(0), "weight": _input(1), "eps": _param("eps"),
                          "training": _param("training"), "running_mean": _input(3),
                          "running_var": _input(4), "result1": _bn_stat(1),
                          "result2": _bn_stat(2)},
    "embedding": {"indices": _input(1), "padding_idx": _param("padding_idx", None, _index),
                  "scale_grad_by_freq": _param("scale_grad_by_freq", False),
                  "sparse": _param("sparse", False),
                  "weight_sym_argsize_0": _param("num_weights")},
    "mul": {"MulBackward0": {"self": _input(0), "other": _input(1)}},
    "div": {"DivBackward0": {"self": _input(0), "other": _input(1)}},
    "add": {"AddBackward0": {"alpha": _param("alpha", 1)}},
    "sub": {"SubBackward0": {"alpha": _param("alpha", 1)},
            "RsubBackward1": {"alpha": _param("alpha", 1)}},
    "view": {"self_sym_sizes": _param("in_shape")},
    "_reshape_copy": {"self_sym_sizes": _param("in_shape")},
    "transpose": {"TBackward0": _NOTHING},
    "expand": {"self_sym_sizes": _sizes(0)},
    "unsqueeze": {"dim": _param("dim")},
    "squeeze": {"SqueezeBackward0": {"self_sym_sizes": _param("in_shape")},
                "SqueezeBackward1": {"dim": _fn(lambda node: node._params["dims"][0]),
                                     "self_sym_sizes": _param("in_shape")},
                "SqueezeBackward2": {"dim": _param("dims"),
                                     "self_sym_sizes": _param("in_shape")}},
    "clone": _NOTHING,
    "_to_copy": _NOTHING,
    "select": {"dim": _param("dim"), "index": _param("index"),
               "self_sym_sizes": _param("in_shape")},
    "narrow": {"dim": _param("dim"), "start": _param("start"),
               "end": _fn(lambda node: node._params["start"] + node._params["length"]),
               "step": _const(1), "self_sym_sizes": _param("in_shape")},
    "_getitem": _GETITEM,
    "_index": {"IndexBackward0": {"indices": _fn(_index_indices),
                                  "self_sym_sizes": _param("shape")}},
    "adaptive_avg_pool": {"MeanBackward1": {
        "dim": _fn(lambda node: (-1, -2)), "keepdim": _const(True),
        "self_sym_sizes": _sizes(0), "self_sym_numel": _numel(0)}},
    "index_select": {"dim": _param("dim"), "index": _input(1),
                     "self_sym_sizes": _param("shape")},
    "gather": {"dim": _param("dim"), "index": _input(1), "self": _leaf_input(0),
               "sparse_grad": _const(False)},
    "cat": {"dim": _param("dim")},
    "stack": {"dim": _param("dim")},
    "unbind": {"dim": _param("dim")},
    "split": {"SplitBackward0": {
        "dim": _param("dim"), "self_sym_sizes": _param("in_shape"),
        "split_size": _fn(lambda node: node._params["bounds"][0][1] -
                          node._params["bounds"][0][0])},
        "SplitWithSizesBackward0": {
        "dim": _param("dim"), "self_sym_sizes": _param("in_shape"),
        "split_sizes": _fn(lambda node: tuple(e - s for s, e in node._params["bounds"]))}},
    "sum": {"SumBackward0": _reduce(with_dim=False), "SumBackward1": _reduce()},
    "mean": {"MeanBackward0": _reduce(numel=True, with_dim=False),
             "MeanBackward1": _reduce(numel=True)},
    "var": {"VarBackward0": {"self": _input(0), "dim": _param("dim"),
                             "keepdim": _param("keepdim"), "correction": _param("correction")},
            "StdBackward0": {"self": _input(0), "dim": _param("dim"),
                             "keepdim": _param("keepdim"), "correction": _param("correction"),
                             "result": _result()}},
    "amax": {"MaxBackward1": _SELF_RESULT, "MinBackward1": _SELF_RESULT,
             "AmaxBackward0": {"self": _input(0), "result": _result(), "dim": _param("dim"),
                               "keepdim": _param("keepdim")},
             "AminBackward0": {"self": _input(0), "result": _result(), "dim": _param("dim"),
                               "keepdim": _param("keepdim")}},
    "_take_along": {name: {"dim": _param("dim"), "keepdim": _param("keepdim"),
                           "indices": _input(1), "self_sym_sizes": _param("shape")}
                    for name in ("MaxBackward0", "MinBackward0")},
    "masked_fill": {"MaskedFillBackward0": {"mask": _input(1)}},
    # (ember keeps the probabilities; torch's node the log-softmax)
    "cross_entropy_loss": {"NllLossBackward0": _nll(_fn(lambda node: _log(
        node.saved_result(1))))},
    "nll_loss": {"NllLossBackward0": _nll(_input(0))},
    "binary_cross_entropy_with_logits": {
        "self": _input(0), "target": _input(1), "weight": _input(2), "pos_weight": _input(3),
        "reduction": _param("reduction", "mean", lambda v: REDUCTION_ENUM.get(v, v))},
    "max_pool": {name: {"self": _input(0), "result1": _result(1),
                        "kernel_size": _param("kernel_size"), "stride": _param("stride"),
                        "padding": _param("padding"), "dilation": _param("dilation"),
                        "ceil_mode": _param("ceil_mode")}
                 for name in ("MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0")},
    "avg_pool": {name: {"self": _input(0), "kernel_size": _param("kernel_size"),
                        "stride": _param("stride"), "padding": _param("padding"),
                        "ceil_mode": _param("ceil_mode"),
                        "count_include_pad": _param("count_include_pad"),
                        "divisor_override": _param("divisor_override")}
                 for name in ("AvgPool2DBackward0", "AvgPool3DBackward0")},
    "scaled_dot_product_attention": {"ScaledDotProductFlashAttentionForCpuBackward0": {
        "query": _input(0), "key": _input(1), "value": _input(2), "attn_mask": _input(3),
        "output": _result(0), "logsumexp": _result(1), "scale": _param("scale"),
        "dropout_p": _param("dropout_p", 0.0), "is_causal": _param("is_causal", False)}},
    "repeat": {"repeats": _param("repeats"), "self_sym_sizes": _param("in_shape")},
    "cumsum": {"dim": _param("dim")},
}


def saved_rules(op_name, node_name):
    """torch's saved names for a node of ``op_name`` named ``node_name``, each with its
    reader (NOTE [ Saved attributes as torch lists them ]); None where ember's own names
    stand."""
    rules = SAVED.get(op_name)
    if rules and type(next(iter(rules.values()))) is dict:
        return rules.get(node_name)  # by node name: listed names only for those given
    return rules


def listed_names(rules):
    """The ``_saved_*`` and ``_raw_saved_*`` names ``dir()`` lists for ``rules``."""
    out = [f"_saved_{n}" for n in rules]
    out += [f"_raw_saved_{n}" for n, r in rules.items() if r.tensor]
    return out


# ------------------------------------------------------------------------------------------------
# saved values of the stand-in nodes (NOTE [ Shown edges ] in _node_names.py): each is
# ``{torch saved name: fn()}``, read off the node that computes the step


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

    def x2d():
        x = node.saved_input(0)
        return None if x is None else x.reshape(m, k)

    def wt():
        return node.saved_input(1, transposed=True)

    first = "mat1" if node._next[2][0] is not None or len(xs) != 1 and \
        type(node).__name__ == "ViewBackward0" else "self"
    prod = _mm_saved((first, "mat2"), x2d, wt, (m, k), (k, n),
                     (k, 1) if node._next[0][0] is not None else (),
                     (1, k) if node._next[1][0] is not None else ())
    if first == "mat1":
        prod.update({"alpha": lambda: 1, "beta": lambda: 1})
    view = {"dim": lambda: 0} if len(xs) == 1 else {"self_sym_sizes": lambda: xs}
    return prod, view


def _merged_view(shape, strides):
    """Whether folding all but the last two dims of a tensor of ``shape`` and ``strides``
    into one needs no copy (torch's reshape then views instead of cloning)."""
    dims = [(s, st) for s, st in zip(shape[:-2], strides[:-2]) if s != 1]
    return all(st == nst * ns for (s, st), (ns, nst) in zip(dims, dims[1:]))


def matmul_steps(node):
    """torch's steps for an N-d ``matmul`` ember does in one node: ``(kind, saved of the
    product, saved of each operand's steps)`` with kind ``mm``/``mv``/``bmm``, or None where
    ember's node already reads as torch's."""
    a, b = _shape(node, 0), _shape(node, 1)
    if a is None or b is None or len(a) < 3:
        return None

    def flat_a():
        x = node.saved_input(0)
        return None if x is None else x.reshape(-1, a[-1])

    rows = math.prod(a[:-1])
    if len(b) == 2:
        return ("mm", _mm_saved(("self", "mat2"), flat_a, lambda: node.saved_input(1),
                                (rows, a[-1]), b,
                                (a[-1], 1) if node._next[0][0] is not None else (),
                                _strides(1).fn(node, False)),
                ({"self_sym_sizes": lambda: a}, None))
    if len(b) == 1:
        return ("mv", {"self": flat_a, "vec": lambda: node.saved_input(1)},
                ({"self_sym_sizes": lambda: a}, None))
    batch = _broadcast(a[:-2], b[:-2])
    if len(a) == len(b) == 3 and a[:-2] == b[:-2]:
        return None  # one bmm, as torch's
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
            t = node.saved_input(i)
            s = (a, b)[i]
            return None if t is None else t.expand(batch + s[-2:]).reshape(
                math.prod(batch), *s[-2:])
        return read
    return ("bmm", {"self": operand(0), "mat2": operand(1)}, tuple(steps))
