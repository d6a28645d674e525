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

from .shape import _contiguous_strides  # noqa: F401 - also read by _node_steps

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
    if a is None or b is None:
        return None  # (an input neither needing a gradient nor kept)
    if len(a) == 1:  # the stack's transpose times the vector, flat
        return (math.prod(b[:-2]) * b[-1],)
    if len(b) == 1:
        return (math.prod(a[:-1]),)
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
    if x is None or w is None:
        return None  # (an input neither needing a gradient nor kept)
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


def _image(reader, dims):
    # torch's image kernel sees a 3-d input (a 2-d target) as 4-d (3-d) with a unit dim 2
    def read(node, raw):
        t = reader.fn(node, raw)
        if raw or t is None or t.ndim != dims:
            return t
        return t.unsqueeze(2) if dims == 3 else t.unsqueeze(1)
    return _Reader(read, reader.tensor)


def _nll(self_reader):
    return {"ignore_index": _param("ignore_index", -100, _index),
            "reduction": _param("reduction", "mean", lambda v: REDUCTION_ENUM.get(v, v)),
            "self": _image(self_reader, 3), "target": _image(_input(1), 2),
            "total_weight": _fn(_total_weight), "weight": _input(2)}


def _bn_stat(k):
    # in evaluation torch's node keeps empty batch statistics (it reads the running ones)
    def read(node, raw):
        if node._params.get("training", True):
            return node.saved_result(k, raw)
        if raw:
            return None
        from .._core.tensor import wrap
        import numpy as np

        meta = node._meta_in[0]
        x = node.saved_input(0) if meta is None else None
        dtype = meta[1] if meta is not None else (x._data.dtype if x is not None else
                                                  np.float32)
        return wrap(np.empty((0,), dtype=dtype))
    return _Reader(read, tensor=True)


def _column(t):
    return None if t is None else t.reshape(-1, 1)


def _log(t):
    return None if t is None else t.log()


def _layer_norm_shape(node):
    return _shape(node, 0)[-node._params["ndim"]:]


def _getitem_rules(node):
    # the saved values of the last step of torch's dim-by-dim indexing
    steps = _steps().getitem_steps_saved(node)
    return steps[-1] if steps else None


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

def _index_indices(node, first=1):
    # torch's list of index tensors, None for a dim taken whole (a trailing one dropped)
    if node._freed:
        node.saved_input(0)  # raises the "freed" error
    saved = iter(node._saved[first:])
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


def _number(i):
    """Input ``i`` as torch's Scalar overload keeps it: a Python number."""
    def read(node):
        t = node.saved_input(i)
        return t.item() if t is not None and t.ndim == 0 else t
    return _fn(read)


def _fft_normalization(node):
    # torch's fft_norm_mode: 0 none, 1 by the root of n, 2 by n -- by the direction
    norm, forward = node._params.get("norm"), node._params.get("forward", True)
    if norm == "ortho":
        return 1
    scaled = (norm in (None, "backward")) != bool(forward)
    return 2 if scaled else 0


def _fft(onesided=None):
    d = {"dim": _param("dims"), "normalization": _fn(_fft_normalization)}
    if onesided is not None:
        d["onesided"] = _const(onesided)
    return d


def _argsize(i, k):
    def read(node):
        s = _shape(node, i)
        return None if s is None else s[k]
    return _fn(read)


def _pad_list(node):
    # torch's ``pad`` as the caller gave it: per dim from the last, (before, after)
    pads = list(node._params["pads"])
    while pads and tuple(pads[0]) == (0, 0):
        pads.pop(0)
    return tuple(x for p in reversed(pads) for x in p)


def _kron_sizes(node):
    a, b = _shape(node, 0), _shape(node, 1)
    if a is None or b is None:
        return None  # (an input neither needing a gradient nor kept)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return tuple(x for pair in zip(a, b) for x in pair)


def _as_strided_offset(node):
    # None where the caller gave none (the input's own offset)
    p = node._params
    geo = p.get("in_geometry")
    off = p.get("offset")
    return None if off is None or geo is not None and off == geo[2] else off


_ALONG = {"dim": _param("dim"), "indices": _input(1), "self_sym_sizes": _param("shape")}
_ALONG_KEEP = {**_ALONG, "keepdim": _param("keepdim")}
_CUM_ALONG = {"dim": _param("dim"), "indices": _input(1), "self": _leaf_input(0)}
_REDUCTION = _param("reduction", "mean", lambda v: REDUCTION_ENUM.get(v, v))


def _steps():
    from . import _node_steps  # (it reads this module's helpers)

    return _node_steps


def _fn_dict(steps):
    # readers for names whose values a step function gives as ``{name: fn()}``
    names = ("dim", "self_sym_sizes")
    return {n: _fn(lambda node, n=n: steps(node)[n]()) for n in names}


#: a 1-d pool's node is torch's final squeeze (NOTE [ Shown edges ] in _node_names.py)
_POOL1D = _fn_dict(lambda node: _steps().pool1d_steps(node)[0])
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
    "sub": {name: {"alpha": _param("alpha", 1)}
            for name in ("SubBackward0", "RsubBackward0", "RsubBackward1")},
    "diff": {"SubBackward0": {"alpha": _const(1)}},
    "view": {"self_sym_sizes": _param("in_shape")},
    "_reshape_copy": {"self_sym_sizes": _param("in_shape")},
    "transpose": {"TBackward0": _NOTHING},
    "expand": {"self_sym_sizes": _sizes(0)},
    "unsqueeze": {"dim": _param("dim")},
    "squeeze": {"SqueezeBackward0": {"self_sym_sizes": _param("in_shape")},
                "SqueezeBackward1": {"dim": _fn(lambda node: (node._params["dims"] or
                                                              (None,))[0]),
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
        "self_sym_sizes": _sizes(0), "self_sym_numel": _numel(0)},
        "AdaptiveAvgPool2DBackward0": _SELF, "AdaptiveAvgPool3DBackward0": _SELF,
        "SqueezeBackward1": _POOL1D},
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
    "masked_fill": {"MaskedFillBackward0": {"mask": _input(1)}},
    # (ember keeps the probabilities; torch's node the log-softmax)
    "cross_entropy_loss": {name: _nll(_fn(lambda node: _log(node.saved_result(1))))
                           for name in ("NllLossBackward0", "NllLoss2DBackward0")},
    "nll_loss": {name: _nll(_input(0)) for name in ("NllLossBackward0", "NllLoss2DBackward0")},
    "binary_cross_entropy_with_logits": {
        "self": _input(0), "target": _input(1), "weight": _input(2), "pos_weight": _input(3),
        "reduction": _REDUCTION},
    "max_pool": {"SqueezeBackward1": _POOL1D,
                 **{name: {"self": _input(0), "result1": _result(1),
                        "kernel_size": _param("kernel_size"), "stride": _param("stride"),
                        "padding": _param("padding"), "dilation": _param("dilation"),
                        "ceil_mode": _param("ceil_mode")}
                 for name in ("MaxPool2DWithIndicesBackward0",
                              "MaxPool3DWithIndicesBackward0")}},
    "avg_pool": {"SqueezeBackward1": _POOL1D,
                 **{name: {"self": _input(0), "kernel_size": _param("kernel_size"),
                        "stride": _param("stride"), "padding": _param("padding"),
                        "ceil_mode": _param("ceil_mode"),
                        "count_include_pad": _param("count_include_pad"),
                        "divisor_override": _param("divisor_override")}
                 for name in ("AvgPool2DBackward0", "AvgPool3DBackward0")}},
    "scaled_dot_product_attention": {"ScaledDotProductFlashAttentionForCpuBackward0": {
        "query": _input(0), "key": _input(1), "value": _input(2), "attn_mask": _input(3),
        "output": _result(0), "logsumexp": _result(1), "scale": _param("scale"),
        "dropout_p": _param("dropout_p", 0.0), "is_causal": _param("is_causal", False)}},
    "outer": {"MulBackward0": {"self": _fn(lambda node: _column(node.saved_input(0))),
                               "other": _input(1)}},
    "square": {"PowBackward0": {"exponent": _const(2), "self": _input(0)}},
    "repeat": {"repeats": _param("repeats"), "self_sym_sizes": _param("in_shape")},
    # -- beyond the everyday ops (tools/graph_fidelity.py --opinfo)
    "_fft_c2c": {"FftC2CBackward0": {**_fft(), "forward": _param("forward")}},
    "_fft_r2c": {"FftR2CBackward0": {**_fft(True), "self": _input(0)}},
    "_fft_c2r": {"FftC2RBackward0": _fft()},
    "index_put": {"IndexPutBackward0": {"accumulate": _param("accumulate"),
                                        "indices": _fn(lambda node: _index_indices(node, 2))}},
    "scatter_reduce": {"ScatterReduceBackward0": {
        "dim": _param("dim"), "include_self": _param("include_self"), "index": _input(1),
        "reduce": _param("reduce"), "result": _result(), "self": _input(0),
        "src": _input(2)}},
    "scatter": {"ScatterBackward0": {"dim": _param("dim"), "index": _input(1)},
                "ScatterBackward1": {"dim": _param("dim"), "index": _input(1)}},
    "scatter_add": {"ScatterAddBackward0": {"dim": _param("dim"), "index": _input(1)}},
    "index_add": {"IndexAddBackward0": {
        "alpha": _param("alpha", 1), "dim": _param("dim"), "index": _input(1),
        "source": _leaf_input(2), "source_dim": _fn(lambda node: len(_shape(node, 2) or ()))}},
    "index_copy": {"IndexCopyBackward0": {
        "dim": _param("dim"), "index": _input(1), "source": _leaf_input(2),
        "source_dim": _fn(lambda node: len(_shape(node, 2) or ()))}},
    "index_fill": {"IndexFillBackward0": {"dim": _param("dim"), "index": _input(1)}},
    "masked_select": {"MaskedSelectBackward0": {"mask": _input(1), "self": _leaf_input(0)}},
    "masked_scatter": {"MaskedScatterBackward0": {"mask": _input(1),
                                                  "source_sym_sizes": _sizes(2)}},
    "take": {"TakeBackward0": {"index": _input(1), "self": _leaf_input(0)}},
    "put": {"PutBackward0": {"accumulate": _param("accumulate"), "index": _input(1),
                             "source": _input(2)}},
    "nan_to_num": _SELF,
    "erfinv": {"self": _leaf_input(0)},
    "nansum": {"NansumBackward0": {"dim": _param("dim"), "keepdim": _param("keepdim"),
                                   "self": _input(0)}},
    "cumprod": {"dim": _param("dim"), "result": _result(), "self": _input(0)},
    "prod": {"ProdBackward0": _SELF_RESULT,
             "ProdBackward1": {"dim": _fn(lambda node: node._params["dim"][0]),
                               "keepdim": _param("keepdim"), **_SELF_RESULT}},
    "_take_along": {
        **{name: {"dim": _param("dim"), "keepdim": _param("keepdim"),
                  "indices": _input(1), "self_sym_sizes": _param("shape")}
           for name in ("MaxBackward0", "MinBackward0")},
        "SortBackward0": _ALONG, "TopkBackward0": _ALONG,
        "KthvalueBackward0": _ALONG_KEEP, "ModeBackward0": _ALONG_KEEP,
        "MedianBackward1": _ALONG_KEEP, "NanmedianBackward1": _ALONG_KEEP,
        "CummaxBackward0": _CUM_ALONG, "CumminBackward0": _CUM_ALONG},
    "diagonal": {"dim1": _param("dim1"), "dim2": _param("dim2"), "offset": _param("offset"),
                 "self_sym_sizes": _param("in_shape")},
    "unfold": {"dimension": _param("dimension"), "size": _param("size"),
               "step": _param("step"), "self_sym_sizes": _param("in_shape")},
    "tril": {"diagonal": _param("diagonal")},
    "triu": {"diagonal": _param("diagonal")},
    "unsafe_split": {"UnsafeSplitBackward0": {
        "dim": _param("dim"), "self_sym_sizes": _param("in_shape"),
        "split_size": _fn(lambda node: node._params["bounds"][0][1] -
                          node._params["bounds"][0][0])}},
    "cdist": {"CdistBackward0": {"p": _param("p"), "result": _result(), "x1": _input(0),
                                 "x2": _input(1)}},
    "complex": {"real": _leaf_input(0), "imag": _leaf_input(1)},
    "threshold": {"self": _input(0), "threshold": _param("threshold")},
    "prelu": {"self": _input(0), "weight": _input(1)},
    "log_sigmoid": {"self": _input(0), "buffer": _const(None)},
    "soft_margin_loss": {"self": _input(0), "target": _input(1), "reduction": _REDUCTION},
    "binary_cross_entropy": {"self": _input(0), "target": _input(1), "weight": _input(2),
                             "reduction": _REDUCTION},
    "elu": {"CeluBackward0": {"alpha": _param("alpha"), "self": _input(0)}},
    "clamp_min": {"ClampMinBackward0": {"min": _number(1), "self": _input(0)},
                  "ClampMinBackward1": {"min": _input(1), "self": _input(0)}},
    "clamp_max": {"ClampMaxBackward0": {"max": _number(1), "self": _input(0)},
                  "ClampMaxBackward1": {"max": _input(1), "self": _input(0)}},
    "addr": {"alpha": _param("alpha", 1), "beta": _param("beta", 1), "vec1": _input(1),
             "vec2": _input(2)},
    "addbmm": {"alpha": _param("alpha", 1), "beta": _param("beta", 1), "batch1": _input(1),
               "batch2": _input(2), "batch1_sym_argsize_0": _argsize(1, 0),
               "batch1_sym_argsize_1": _argsize(1, 1), "batch2_sym_argsize_2": _argsize(2, 2)},
    "constant_pad_nd": {"ConstantPadNdBackward0": {"pad": _fn(_pad_list)}},
    "kron": {"UnsafeViewBackward0": {"self_sym_sizes": _fn(_kron_sizes)}},
    "as_strided": {"AsStridedBackward0": {"size": _param("size"), "stride": _param("stride"),
                                          "storage_offset": _fn(_as_strided_offset)}},
    "as_strided_scatter": {"AsStridedScatterBackward0": {
        "size": _param("size"), "stride": _param("stride"),
        "storage_offset": _fn(lambda node: node._params.get("offset") or None)}},
    "view_as_complex": _NOTHING,
    "round_decimals": _NOTHING,
    "frexp": {"exponent": _result(1)},
    "ldexp": {"other": _input(1), "result": _result()},
    "im2col": {"kernel_size": _param("kernel_size"), "dilation": _param("dilation"),
               "padding": _param("padding"), "stride": _param("stride"),
               "self_sym_argsize_minus_1": _argsize(0, -1),
               "self_sym_argsize_minus_2": _argsize(0, -2)},
    "adaptive_max_pool": {"AdaptiveMaxPool2DBackward0": {"self": _input(0),
                                                         "result1": _result(1)},
                          "AdaptiveMaxPool3DBackward0": {"self": _input(0),
                                                         "result1": _result(1)},
                          "SqueezeBackward1": _POOL1D},
    # decompositions: what ember's node keeps of torch's (the LU factors of a solve or a
    # determinant are not kept: read as None)
    "linalg_inv": {"inverse": _result(0)},
    "linalg_inv_ex": {"inverse": _result(0)},
    "linalg_cholesky": {"L": _result(0), "upper": _param("upper")},
    "linalg_pinv": _SELF_RESULT,
    "linalg_householder_product": {"input": _input(0), "tau": _input(1),
                                   "result": _result()},
    "linalg_svd": {"U": _result(0), "S": _result(1), "Vh": _result(2),
                   "full_matrices": _param("full_matrices"),
                   "S_sym_argsize_minus_1": _fn(lambda node: min(_shape(node, 0)[-2:]))},
    "linalg_lu": {"P": _result(0), "L": _result(1), "U": _result(2), "pivot": _const(True)},
    "lu_unpack": {"LU_data_sym_argsize_minus_1": _argsize(0, -1),
                  "LU_data_sym_argsize_minus_2": _argsize(0, -2)},
    "linalg_lu_solve": {"LU": _input(0), "pivots": _input(1), "left": _param("left"),
                        "adjoint": _param("adjoint"), "result": _result()},
    "linalg_solve": {"A": _input(0), "LU": _const(None), "pivots": _const(None),
                     "left": _param("left"), "result": _result(0)},
    "linalg_det": {"A": _input(0), "LU": _const(None), "pivots": _const(None),
                   "result": _result()},
    "linalg_slogdet": {"A": _input(0), "LU": _const(None), "pivots": _const(None),
                       "sign": _result(0)},
    "linalg_lu_factor": {"LU": _result(0), "pivots": _result(1), "pivot": _const(True)},
    "linalg_eigh": {"eigenvalues": _result(0), "eigenvectors": _result(1)},
    "ormqr": {"self": _input(0), "input2": _input(1), "input3": _input(2),
              "left": _param("left"), "transpose": _param("transpose"), "result": _result()},
    "cholesky_solve": {"self": _input(0), "input2": _input(1), "upper": _param("upper"),
                       "result": _result()},
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
