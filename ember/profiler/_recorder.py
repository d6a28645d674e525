"""The recording side of the profiler: a layer of the mode stack and the backward hook.

NOTE [ Profiler recording ]
A recording session (``_Session``) sees three kinds of event, all on the thread that
started it:
- op calls: ``_OpRecorder`` is a layer of the mode stack at level 40 (NOTE [ Dispatch ] in
  ember/_dispatch.py), pushed only while a session records, so with no profiler the hot
  path is untouched. Each call becomes an event named as PyTorch names it (the handle
  ``aten.mm.default`` -> ``aten::mm``), with its input shapes, the bytes its outputs
  allocated and its flops when asked. A mode runs its op with itself popped, so ops a
  kernel calls internally are not seen by modes; the recorder makes one exception, as
  PyTorch's profiler sees every call of its dispatcher: an op written in Python (an
  ``entrance`` of the door, or a custom op whose kernel is Python, whose
  ``OpOverload.below`` is its body) runs with the recorder back on the stack when no mode
  lies below it, so the ops its body calls are recorded as its children (``aten::normal``
  > ``aten::randn``...). Composite events: NOTE [ Composite op events ].
- user blocks: ``record_function`` opens an event that the events inside it nest under.
- backward nodes: the engine (``run_backward`` in ember/autograd/_engine.py) reads the
  module global ``profiler_hook`` once per backward call and, when set, calls it as each
  node starts, with the gradients the node receives (and once at the end), so that the
  node's work nests under ``autograd::engine::evaluate_function: MmBackward0`` >
  ``MmBackward0``, as in PyTorch, and the node's event lists those gradients' shapes.

Recording must cost little per op (PyTorch's C++ recorder adds well under a microsecond),
so an op event is one tuple, made when the op returns and appended to ``_Session.ops``:
``(idx, parent, name, start, end, seq)``, plus ``(shapes, dtypes, None, flops, overload,
strides, values, keywords, gpu)`` when the session records details (the options pick one
of two routes at the start, so the plain one tests none of them; the middle four are NOTE
[ Recorded inputs ] in _inputs.py). ``idx`` numbers events in start order (one counter
for every kind of event), ``parent`` is the ``idx`` of the innermost open event (``-1``:
none), so the tree needs no object per event; a tuple of numbers and strings is also one
the garbage collector stops tracking at its first pass, so a long recording does not make
the collector's passes longer. The collector lets go of one level of nested tuples per
pass over the generation they are in, so an event holding new nested tuples survives
into the oldest generation and is walked by every full collection (with shapes recorded,
that was a third of an op's cost): the recorded shapes, dtypes and strides are the
tuples met first for equal values (``_inputs.record_call``), long untracked. An op with a
kernel is not put on the stack of open events: nothing records inside a kernel (the modes
above it are popped), except frees of memory, so it is put there when ``profile_memory``
counts them. Shapes and dtypes are kept raw
(shape tuples and NumPy dtypes; ``shape_lists`` and ``dtype_names`` format them):
formatting waits for ``_convert``. (The third slot, once an op's Python stack, stays None:
stacks are read off the tree of events, NOTE [ Stacks as PyTorch records them ] in
_convert.py.) The rarer events (user blocks, backward nodes, modules)
are ``_Raw`` objects in ``_Session.raw``; bytes allocated are summed per ``idx`` in
``_Session.mem``. Times are ``perf_counter_ns``; they become microseconds from the
profile's start when the recordings are turned into ``FunctionEvent``s
(``_convert.function_events``), which happens when the results are first read
(``profile.events()``, ``key_averages``, an export), not when recording stops.

What is left per op is the mode stack's own round trip (the entrance hands the call to
``through_modes``, and the op's handle re-enters the entrance below the recorder): on a
small ``a + b`` that trip costs more than the recording itself.

An op's forward event keeps the sequence number of the graph node it created; the backward
node's event has the same number, which is how the trace draws flow arrows between them.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import threading
import time
import weakref
from time import perf_counter_ns

import numpy as np

from .. import _dispatch
from .._core.tensor import Tensor
from .._ops._node_names import is_bare_slice, takes_whole_dim
from . import _flops
from ._inputs import ORDERED, TENSOR, _TensorInfo, record_call

__all__ = []

#: the session recording on each thread (the innermost one when profiles nest)
_local = threading.local()
_state = _dispatch.state


def current_session():
    """The session recording on this thread, or None."""
    return getattr(_local, "session", None)


def recording_session():
    """The session recording on this thread when its recorder is on the thread's mode stack
    (not inside a kernel, where the modes above it are popped), else None."""
    s = getattr(_local, "session", None)
    if s is not None and s.active and s._mode in _state.modes:
        return s
    return None


def begin_async(name, thread=2):
    """Open the event of an operation that runs beside this thread (a collective that
    another thread progresses, as PyTorch's gloo threads record ``gloo:all_reduce``), or
    return None when no profile records on this thread. The event lies outside this
    thread's tree, on row ``thread``; whoever sees the operation finish sets its ``end``
    (``perf_counter_ns``), else the profile's end closes it."""
    s = getattr(_local, "session", None)
    if s is None or not s.active:
        return None
    ev = _Raw(next(s._count), name, "user", -1)
    ev.thread = thread
    ev.start = perf_counter_ns()
    s.raw.append(ev)
    return ev


# NOTE [ Memory categories ]
# PyTorch's memory timeline sorts every byte into a category: PARAMETER, OPTIMIZER_STATE,
# INPUT, TEMPORARY, ACTIVATION, GRADIENT, AUTOGRAD_DETAIL (else unknown), and counts the
# tensors that existed before the profile began as present from its start. Ember decides
# from what the session sees, when the timeline is exported (``memory_timeline`` in
# profiler.py):
# - known roles: around each optimizer step the session notes the arrays of its
#   parameters, their ``.grad`` and its state, and, with modules hooked (``with_stack`` or
#   ``with_modules``), the outermost module's tensor arguments (its inputs) and parameters
#   (``mem_roots``). Such an array allocated during the profile takes that category; one
#   never allocated during it existed before: it is counted from the start;
# - the rest by where and for how long they lived (``mem_ctx``): an array allocated during
#   a backward pass is AUTOGRAD_DETAIL, during an optimizer step TEMPORARY; one allocated
#   outside both is an ACTIVATION when it was still alive as a backward pass began (autograd
#   kept it for the gradients), else TEMPORARY.
# An array's id stands for its address, and ids are reused once an array is freed, so a
# sample names the array allocated last under its id before the sample.
_FORWARD, _BACKWARD, _OPTIMIZER = 0, 1, 2
# indices of the timeline's categories, in PyTorch's column order (``_MEMORY_CATEGORIES``)
_PARAMETER, _OPTIMIZER_STATE, _INPUT, _TEMPORARY, _ACTIVATION, _GRADIENT, \
    _AUTOGRAD_DETAIL, _UNKNOWN = range(8)


def _sample(roots, t, category, tensor):
    """Note ``tensor``'s array (its buffer when a view) in ``roots`` as of ``category``."""
    if not isinstance(tensor, Tensor):
        return
    arr = tensor._data
    buf = _buffer(arr) if getattr(arr, "base", None) is not None else arr
    if buf is None:
        return
    n = int(getattr(buf, "nbytes", 0))
    if n:
        roots.append((t, category, id(buf), n))


def observing_session():
    """The session recording on this thread when every mode on the thread's stack only
    watches ops (``_ember_observer``: the recorder), so that a fused kernel may run as it
    does unprofiled and be recorded as the one op PyTorch's fused path records (NOTE
    [ Fused kernels under the profiler ]); None otherwise."""
    s = getattr(_local, "session", None)
    if s is None or not s.active or s._mode not in _state.modes:
        return None
    for m in _state.modes:
        if not getattr(m, "_ember_observer", False):
            return None
    return s


def count_new_array(tensor):
    """Count ``tensor``'s array, which no op made (the engine's copy of a gradient into its
    leaf's layout), as an allocation of the innermost open event of this thread's session,
    when it profiles memory."""
    s = getattr(_local, "session", None)
    if s is not None and s.active and s.profile_memory:
        s.count_allocations(s.open[-1], tensor, ())


class _Raw:
    """A user block, backward node or module event while recording (op events are tuples:
    NOTE [ Profiler recording ])."""

    __slots__ = ("idx", "name", "kind", "start", "end", "parent", "shapes", "dtypes", "seq",
                 "call", "thread")

    def __init__(self, idx, name, kind, parent):
        self.idx = idx
        self.name = name
        # "user", "bwd_outer", "bwd", "module", "op": the outer event of an op ember
        # composes in Python (NOTE [ Composite op events ]), or "python": a Python call
        # (NOTE [ Python function events ] in _python_tracer.py)
        self.kind = kind
        self.parent = parent  # the idx of the enclosing event, -1 for none
        self.start = 0
        self.end = None
        self.shapes = None
        self.dtypes = None
        self.seq = -1
        self.call = None  # (overload, ``_inputs.record_call``'s last three), record_shapes
        self.thread = None  # the row of an event that ran beside this thread (``begin_async``)


def _event_name(handle):
    """``aten.add.Tensor`` -> ``aten::add`` (PyTorch's event names carry no overload)."""
    return handle.overloadpacket._qualified_op_name


# NOTE [ Composite op events ]
# PyTorch runs many nn ops as composites: ``aten::linear`` calls ``aten::t`` and
# ``aten::addmm``, ``aten::conv2d`` calls ``aten::convolution`` > ``aten::_convolution`` >
# a backend kernel, and its profiler records every level. ember runs such an op as one
# kernel, under its own op name. The rule: an op ember runs as one kernel is recorded under
# PyTorch's outer name (the function the user called: ``aten::conv2d``, ``aten::layer_norm``,
# ``aten::nll_loss_nd``) with one child, named as the PyTorch op that does the kernel's
# work -- the row that holds the self time in PyTorch's table (``aten::addmm``,
# ``aten::convolution``, ``aten::native_layer_norm``, ``aten::_softmax``). Both events are
# real clock readings around the one kernel: the child starts just after the outer event
# and ends just before it. The levels between that PyTorch users meet in every table
# (``aten::convolution`` > ``aten::_convolution`` > ``aten::mkldnn_convolution``,
# ``aten::_batch_norm_impl_index``: session 15) are recorded the same way, each inside the
# one before, the kernel's time on the innermost; views PyTorch takes inside a level
# (``aten::transpose`` in ``aten::t``, the unsqueeze of a 1-d convolution) and kernels
# ember does not run (``aten::empty``, ``aten::resize_``) are not recorded, and
# where ember's kernel fuses what PyTorch runs as several ops (``aten::cross_entropy_loss``
# computes ``log_softmax`` and ``nll_loss`` in one pass) the outer event stands alone: no
# time is made up for kernels that do not run. ``_NAMING`` lists the rules by ember's
# event name; they apply to forward calls only (an op a backward node calls keeps its own
# name). A function ember composes in Python from several ops (``dropout``, ``flatten``,
# ``group_norm``, ``interpolate``...) where PyTorch calls one op is declared with
# ``recorded_as`` (ember/_ops/_registry.py): the profiler then records PyTorch's op as the
# outer event (``_Session.composite``) with the ops ember runs nested under it, where
# PyTorch's own decomposition or kernel would be, and no time is spent when no profiler
# records.


# NOTE [ Backward ops ember composes ]
# A few backward formulas that PyTorch runs as one op (``aten::gelu_backward``,
# ``aten::_softmax_backward_data``...) ember writes as a handful of element-wise ops. The
# node's work is recorded as PyTorch's one op event, named and with the inputs PyTorch's
# op receives (``_BACKWARD_INPUTS``: the gradient, the node's saved tensors, its numbers),
# so a table or trace shows the rows PyTorch users look for, with the formula's real time;
# nothing is added while no profiler records (the engine's hook opens the event).
# ``_BACKWARD_OPS`` maps the node's name to that op's. The formula's own ops are not
# events: when only observers are on the mode stack (``observing_session``), the engine
# runs the node through ``_Session.run_node``, which takes the modes off the stack while
# the formula runs, as ``as_one_op`` does for a forward op. So the formula costs what it
# costs unprofiled (sent through the recorder, the thirteen ops of ``nll_loss``'s formula
# were most of a small training step's profiled time), and PyTorch's row has no children
# it does not have. A mode that transforms ops still sees every op of the formula, which
# then nest under PyTorch's op event.
_BACKWARD_OPS = {
    "GeluBackward0": "aten::gelu_backward",
    "SoftmaxBackward0": "aten::_softmax_backward_data",
    "SafeSoftmaxBackward0": "aten::_softmax_backward_data",
    "LogSoftmaxBackward0": "aten::_log_softmax_backward_data",
    "MseLossBackward0": "aten::mse_loss_backward",
    "ScaledDotProductFlashAttentionForCpuBackward0":
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
    "NllLossBackward0": "aten::nll_loss_backward",
    "NllLoss2DBackward0": "aten::nll_loss2d_backward",
    "SmoothL1LossBackward0": "aten::smooth_l1_loss_backward",
    "HuberLossBackward0": "aten::huber_loss_backward",
}


#: the backward ops above whose PyTorch function calls its ``out=`` form inside its event
_OUT_FORM_INSIDE = {"aten::mse_loss_backward", "aten::smooth_l1_loss_backward",
                    "aten::huber_loss_backward"}


def _saved_info(node, i):
    """``_TensorInfo`` of the ``i``-th saved input of ``node`` (an ``OpNode``), read without
    unpacking it (no saved-tensor hook runs); None when not saved or kept by a hook."""
    saved = getattr(node, "_saved", None)
    if saved is None or i >= len(saved) or saved[i] is None:
        return None
    s = saved[i]
    if isinstance(s, Tensor):
        arr = s._data
    elif s.packed is not None or s.unpack_hook is not None:
        return None
    else:
        arr = s.t._data if s.t is not None else s.arr
    return _TensorInfo((arr.shape, arr.dtype, getattr(arr, "strides", None)))


def _output_info(node):
    """``_TensorInfo`` of the output ``node`` saved, read without unpacking it, or None."""
    s = getattr(node, "_sout", None)
    if s is None or type(s) is tuple or s.packed is not None or s.unpack_hook is not None:
        return None
    arr = s.arr if s.arr is not None else s.t._data
    return _TensorInfo((arr.shape, arr.dtype, getattr(arr, "strides", None)))


def _grad_info(grads):
    g = grads[0] if grads else None
    if g is None:
        return None
    arr = g._data
    return _TensorInfo((arr.shape, arr.dtype, getattr(arr, "strides", None)))


#: PyTorch's ``Reduction`` codes
_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


def _softmax_backward_inputs(node, grads):
    # ``(grad_output, output, dim, input_dtype)``
    out = _output_info(node)
    return [_grad_info(grads), out, node._params.get("dim"), None if out is None else out[1]]


def _nll_backward_inputs(node, grads):
    # ``(grad_output, self, target, weight, reduction, ignore_index, total_weight)``; the
    # total weight is a 0-d tensor of the input's dtype
    logp = _saved_info(node, 0)
    params = node._params
    total = None if logp is None else _TensorInfo(((), logp[1], ()))
    return [_grad_info(grads), logp, _saved_info(node, 1), _saved_info(node, 2),
            _REDUCTION_CODES.get(params.get("reduction")), params.get("ignore_index"), total]


def _sdpa_backward_inputs(node, grads):
    # ``(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, attn_mask,
    # scale)`` of PyTorch's CPU flash kernel's backward, with the call as noted in forward
    # (NOTE [ Calls noted for the profiler ])
    s = current_session()
    call = s.node_calls.get(node._seq) if s is not None else None
    q, k, v = (_saved_info(node, i) for i in range(3))
    out = lse = None
    if type(node._sout) is tuple and node._sout and node._sout[0] is not None:
        o = node._sout[0]
        arr = o.arr if o.arr is not None else o.t._data
        out = _TensorInfo((arr.shape, arr.dtype, getattr(arr, "strides", None)))
    if q is not None:
        shape = q[0][:-1]
        lse = _TensorInfo((shape, np.dtype(np.float32), None))
    if call is None:
        return [_grad_info(grads), q, k, v, out, lse, 0.0, False, None, None]
    _, _, _, mask, dropout_p, is_causal, scale, _ = call
    return [_grad_info(grads), q, k, v, out, lse, dropout_p, is_causal,
            _additive_mask(_info_or_none(mask), q), scale]


def _pointwise_loss_inputs(node, grads, param):
    # ``(grad_output, self, target, reduction, beta or delta)``
    return [_grad_info(grads), _saved_info(node, 0), _saved_info(node, 1),
            _REDUCTION_CODES.get(node._params.get("reduction")), node._params.get(param)]


#: a backward node's name -> ``fn(node, grads)`` giving the arguments of PyTorch's backward
#: op (``_BACKWARD_OPS``) in its order: ``_TensorInfo`` for a Tensor, else the value
_BACKWARD_INPUTS = {
    "GeluBackward0": lambda node, grads: [_grad_info(grads), _saved_info(node, 0),
                                          node._params.get("approximate", "none")],
    "SoftmaxBackward0": _softmax_backward_inputs,
    "SafeSoftmaxBackward0": _softmax_backward_inputs,
    "LogSoftmaxBackward0": _softmax_backward_inputs,
    "MseLossBackward0": lambda node, grads: [
        _grad_info(grads), _saved_info(node, 0), _saved_info(node, 1),
        _REDUCTION_CODES.get(node._params.get("reduction"))],
    "NllLossBackward0": _nll_backward_inputs,
    "NllLoss2DBackward0": _nll_backward_inputs,
    "SmoothL1LossBackward0": lambda node, grads: _pointwise_loss_inputs(node, grads, "beta"),
    "HuberLossBackward0": lambda node, grads: _pointwise_loss_inputs(node, grads, "delta"),
    "ScaledDotProductFlashAttentionForCpuBackward0": _sdpa_backward_inputs,
}


def _ordered_record(items):
    """The raw ``(shapes, dtypes, call)`` of an event whose arguments ``items`` are in its
    op's order (``_TensorInfo`` for a Tensor, else the value): ``record_call``'s form with
    the ``ORDERED`` key (NOTE [ Recorded inputs ] in _inputs.py)."""
    shapes, dtypes, strides, values = [], [], [], []
    for v in items:
        if type(v) is _TensorInfo:
            shapes.append(v[0])
            dtypes.append(v[1])
            strides.append(v[2])
            values.append(TENSOR)
        else:
            shapes.append(())
            dtypes.append("")
            strides.append(None)
            values.append(v)
    return tuple(shapes), tuple(dtypes), (ORDERED, tuple(strides), tuple(values), ())


#: nodes of these names that another of ember's ops made (the fused cross entropy's node is
#: ``NllLossBackward0`` too, and runs its own backward op) keep their work as it is
_BACKWARD_OP_OF = {"NllLossBackward0": "nll_loss", "NllLoss2DBackward0": "nll_loss"}


def _pool_dims(kwargs):
    size = kwargs.get("kernel_size") or kwargs.get("output_size")
    return None if size is None else len(size)


def _pool_rule(base, child=None):
    """ember's pooling ops serve every dimension; PyTorch names the event by it
    (``aten::max_pool2d``), and ``max_pool2d``/``3d`` compute their indices as
    ``aten::max_pool2d_with_indices``."""
    def rule(args, kwargs):
        n = _pool_dims(kwargs)
        if n is None:
            return None
        outer = f"{base}{n}d"
        return outer, (f"{outer}{child}" if child and n > 1 else None)
    return rule


def _adaptive_avg_rule(args, kwargs):
    """``adaptive_avg_pool2d``/``3d`` work as ``aten::_adaptive_avg_pool2d`` in PyTorch,
    or as ``aten::mean`` over the planes when every output size is 1 (``(1, 1)``: the
    global pooling of classifier heads)."""
    n = _pool_dims(kwargs)
    if n is None:
        return None
    outer = f"aten::adaptive_avg_pool{n}d"
    if n == 1:   # (PyTorch's 1-d form unsqueezes and calls the 2-d one)
        return outer, None
    if all(o == 1 for o in kwargs["output_size"]):
        return outer, "aten::mean"
    return outer, f"aten::_adaptive_avg_pool{n}d"


def _plane_mean_rows(args, kwargs, result):
    """The ops inside PyTorch's ``aten::mean`` of a global average pooling: the planes
    summed into the output (``sum``'s ``out=`` form), then divided in place by their
    size."""
    if "output_size" not in kwargs or not isinstance(result, Tensor):
        return []
    x, out = _info(args[0]), _info(result)
    n = len(kwargs["output_size"])
    dims = list(range(-n, 0))
    size = math.prod(args[0]._data.shape[-n:])
    return [("aten::sum", [x, dims, True, None, out], False, ()),
            ("aten::div_", [out, size], True, ())]


#: the kernel-level event a ``_NAMING`` rule names -> ``fn(args, kwargs, result)`` giving
#: the rows of the ops PyTorch's kernel op runs inside it (``_OpRecorder._rows_inside``)
_KERNEL_ROWS = {"aten::mean": _plane_mean_rows}


def _adaptive_avg_inputs(args, kwargs):
    """The raw ``(shapes, dtypes)`` under ``adaptive_avg_pool2d``/``3d``: ``mean(input,
    dims, keepdim, dtype)`` or ``_adaptive_avg_pool2d(input, output_size)``."""
    x = args[0]._data
    if all(o == 1 for o in kwargs["output_size"]):
        return [((x.shape, (), (), ()), (x.dtype, "ScalarList", "Scalar", ""))]
    return [((x.shape, ()), (x.dtype, "ScalarList"))]


def _var_rule(args, kwargs):
    # ember's one variance op serves ``std`` too (``take_sqrt``)
    return ("aten::std" if kwargs.get("take_sqrt") else "aten::var"), None


def _var_call(args, kwargs):
    # ``var``/``std(self, dim, correction, keepdim)``
    x = args[0]._data
    dim = kwargs.get("dim")
    return [_TensorInfo((x.shape, x.dtype, getattr(x, "strides", None))),
            None if dim is None else list(dim), kwargs.get("correction"),
            kwargs.get("keepdim", False)]


def _embedding_backward_inputs(args, kwargs):
    """The raw ``(shapes, dtypes)`` of ``embedding_dense_backward(grad_output, indices,
    num_weights, padding_idx, scale_grad_by_freq)`` under ``aten::embedding_backward``."""
    g, idx = args[0]._data, args[1]._data
    return [((g.shape, idx.shape, (), (), ()), (g.dtype, idx.dtype, "Scalar", "Scalar",
                                                 "Scalar"))]


def _linear_rule(args, kwargs):
    w = args[1] if len(args) > 1 else kwargs.get("weight")
    if not isinstance(w, Tensor) or w._data.ndim != 2:
        return None
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    return "aten::linear", "aten::addmm" if b is not None else ("aten::matmul", "aten::mm")


def _linear_inputs(args, kwargs):
    """The raw ``(shapes, dtypes)`` of the levels under ``aten::linear``: PyTorch flattens
    the input to a matrix and multiplies by the weight's transpose (``addmm(bias, x, w.t())``,
    or ``matmul(x, w.t())`` > ``mm``)."""
    x, w = args[0]._data, args[1]._data
    b = args[2] if len(args) > 2 else kwargs.get("bias")
    rows = (math.prod(x.shape[:-1]), x.shape[-1])
    wt = (w.shape[1], w.shape[0])
    if b is not None:
        return [((b._data.shape, rows, wt, (), ()),
                 (b._data.dtype, x.dtype, w.dtype, "Scalar", "Scalar"))]
    return [((x.shape, wt), (x.dtype, w.dtype)), ((rows, wt), (x.dtype, w.dtype))]


def _clamp_inputs(args, kwargs):
    """The raw ``(shapes, dtypes)`` of ``clamp_min(input, 0)``, the kernel of PyTorch's relu."""
    x = args[0]._data
    return [((x.shape, ()), (x.dtype, "Scalar"))]


def _embedding_inputs(args, kwargs):
    """The raw ``(shapes, dtypes)`` of ``index_select(weight, 0, indices)`` under PyTorch's
    ``aten::embedding``, which flattens the indices first."""
    w, idx = args[0]._data, args[1]._data
    return [((w.shape, (), (math.prod(idx.shape),)), (w.dtype, "Scalar", idx.dtype))]


def _conv_kernel(x, n):
    """The levels PyTorch's CPU ``_convolution`` runs for a direct convolution over ``n``
    spatial dims of ``x``: oneDNN's for float32, the slow kernels otherwise (one spatial dim
    runs as two, the first of size 1, between an unsqueeze and a squeeze not listed here)."""
    if x.dtype == np.float32:
        return ("aten::mkldnn_convolution",)
    if n <= 2:
        return ("aten::thnn_conv2d", "aten::_slow_conv2d_forward")
    return ("aten::slow_conv3d", "aten::slow_conv3d_forward")


def _conv_rule(transposed):
    kind = "conv_transpose" if transposed else "conv"

    def rule(args, kwargs):
        w = args[1] if len(args) > 1 else None
        if not isinstance(w, Tensor) or not 1 <= w._data.ndim - 2 <= 3:
            return None
        n = w._data.ndim - 2
        outer = f"aten::{kind}{n}d"
        x = args[0]._data
        if type(x) is not np.ndarray:
            return outer, "aten::convolution"   # (a GPU's kernels are its libraries')
        kernel = () if transposed else _conv_kernel(x, n)
        return outer, ("aten::convolution", "aten::_convolution") + kernel
    return rule


def _conv_inputs(args, kwargs):
    """The items of each level under ``aten::conv2d`` (``_ordered_record``'s): PyTorch's
    ``convolution``, ``_convolution`` (with its backend flags) and the CPU kernel's."""
    x, w = _info(args[0]), _info(args[1])
    b = _info_or_none(args[2] if len(args) > 2 else kwargs.get("bias"))
    n = len(w[0]) - 2
    transposed = "input_shape" in kwargs   # (ember's transposed one is the input's gradient)
    stride, padding, dilation = (list(kwargs[k]) for k in ("stride", "padding", "dilation"))
    groups = kwargs["groups"]
    out_pad = [0] * n
    if transposed:   # the output size PyTorch's call asked for, as its output padding
        shape = kwargs["input_shape"]
        x = _info(args[0])
        out_pad = [shape[2 + i] - ((x[0][2 + i] - 1) * stride[i] - 2 * padding[i] +
                                   dilation[i] * (w[0][2 + i] - 1) + 1) for i in range(n)]
    conv = [x, w, b, stride, padding, dilation, transposed, out_pad, groups]
    levels = [conv, conv + [False, False, True, True]]
    if transposed:   # the named call's own order too (``_named``: one level more)
        levels.insert(0, [x, w, b, stride, padding, out_pad, groups, dilation])
    kernel = () if transposed or type(args[0]._data) is not np.ndarray else \
        _conv_kernel(args[0]._data, n)
    if n == 1 and kernel:   # (as two spatial dims)
        x = _TensorInfo((x[0][:2] + (1,) + x[0][2:], x[1], None))
        w = _TensorInfo((w[0][:2] + (1,) + w[0][2:], w[1], None))
        stride, padding, dilation = [1] + stride, [0] + padding, [1] + dilation
    for name in kernel:
        if name == "aten::mkldnn_convolution":
            levels.append([x, w, b, padding, stride, dilation, groups])
        else:   # (the slow kernels take no dilation)
            levels.append([x, w, list(w[0][2:]), b, stride, padding])
    return [_ordered_record(items) for items in levels]


def _nll_rule(args, kwargs):
    x = args[0] if args else None
    if not isinstance(x, Tensor):
        return None
    # PyTorch's levels: ``nll_loss_nd`` > ``nll_loss`` (``nll_loss2d`` for images) > its
    # ``_forward`` kernel
    inner = "aten::nll_loss2d" if x._data.ndim >= 3 else "aten::nll_loss"
    return "aten::nll_loss_nd", (inner, inner + "_forward")


def _sdpa_rule(args, kwargs):
    q = args[0] if args else None
    if not isinstance(q, Tensor) or type(q._data) is not np.ndarray:
        return None   # (on a GPU PyTorch's kernel depends on its attention backends)
    # PyTorch's CPU choice: the flash kernel for 4-d inputs, else the math one
    inner = "aten::_scaled_dot_product_flash_attention_for_cpu" if q._data.ndim == 4 else \
        "aten::_scaled_dot_product_attention_math"
    return "aten::scaled_dot_product_attention", inner


def _matmul_folds(a, b, has_out):
    """Whether PyTorch's ``matmul`` folds the batch of the operand with 3 or more dims into
    the rows of one matrix (running ``mm``/``mv``) rather than expanding the other to a stack
    (``bmm``): always when the smaller operand will need a gradient, never for a matrix
    times a stack, otherwise when the folding is a view of the larger one's memory."""
    first_larger = a._data.ndim >= b._data.ndim
    small = b if first_larger else a
    # (PyTorch's ``requires_grad``: a view made under ``no_grad`` of a tensor that requires
    # grad, ``linear``'s ``weight.t()``, says True too)
    if (small._rg or small._base is not None and small._base._rg) and not has_out:
        return True
    if a._data.ndim == 2:
        return False
    big = a._data if first_larger else b._data.swapaxes(-1, -2)
    if big.size == 0:
        return True
    shape, strides = big.shape, big.strides
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(big.ndim - 2))


def _matmul_rule(args, kwargs):
    """The product PyTorch's ``matmul`` runs for operands that are not two matrices, two
    stacks or a matrix and a vector (those reach the profiler under their own names)."""
    if len(args) < 2 or not isinstance(args[0], Tensor) or not isinstance(args[1], Tensor):
        return None
    a, b = args[0], args[1]
    na, nb = a._data.ndim, b._data.ndim
    if na <= 2 and nb <= 2:
        inner = "aten::dot" if na == nb == 1 else "aten::mv" if nb == 1 else "aten::mm"
    elif na >= 3 and nb >= 3:
        inner = "aten::mm" if math.prod(b._data.shape[:-2]) == 1 else "aten::bmm"
    elif _matmul_folds(a, b, kwargs.get("out") is not None):
        inner = "aten::mv" if min(na, nb) == 1 else "aten::mm"
    else:
        inner = "aten::bmm"
    return inner, None


def _matmul_inputs(args, name):
    """The raw ``(shapes, dtypes)`` PyTorch's ``mm``/``mv`` receive where its ``matmul``
    folds a stack into the rows of one matrix, or makes a vector a one-row matrix; None
    where they are the operands as given."""
    if name not in ("aten::mm", "aten::mv"):
        return None
    a, b = args[0]._data, args[1]._data
    if a.ndim == 1 and b.ndim == 2:
        shapes = ((1, a.shape[0]), b.shape)
    elif a.ndim >= 3 and b.ndim <= 2:
        shapes = ((math.prod(a.shape[:-1]), a.shape[-1]), b.shape)
    else:
        return None
    return shapes, (a.dtype, b.dtype)


def _addmm_rule(args, kwargs):
    """ember's ``addmm`` op also runs ``baddbmm`` and ``addmv``: named by its operands."""
    if len(args) < 3 or not isinstance(args[1], Tensor) or not isinstance(args[2], Tensor):
        return None
    if args[1]._data.ndim == 3:
        return "aten::baddbmm", None
    if args[2]._data.ndim == 1:
        return "aten::addmv", None
    return None


def _pad_rule(args, kwargs):
    """ember's one op for the non-constant paddings, named as PyTorch's kernel for the mode
    and the number of padded dims."""
    mode, n = kwargs.get("mode"), kwargs.get("nspatial")
    if mode == "circular":
        return "aten::_pad_circular", None
    kind = {"reflect": "reflection", "replicate": "replication"}.get(mode)
    return None if kind is None or n is None else (f"aten::{kind}_pad{n}d", None)


def _rsub_rule(args, kwargs):
    if len(args) < 2 or isinstance(args[0], Tensor) or not isinstance(args[1], Tensor):
        return None
    return "aten::rsub", "aten::sub"


def _rsub_inputs(args, kwargs):
    """``rsub(self, other, alpha)``'s items, then the call's own for ``sub``'s level."""
    return [_ordered_record([_info(args[1]), args[0], kwargs.get("alpha", 1)]), None]


def _fixed(outer, inner):
    return lambda args, kwargs: (outer, inner)


# NOTE [ Basic indexing under the profiler ]
# ``t[i]`` and ``t[a:b]`` are one op in ember (``Tensor.__getitem__``, recorded as
# ``aten::index``, whose view records ``_getitem`` with the key as a parameter); PyTorch runs a
# key of one integer as ``aten::select(self, dim, index)`` and one slice as ``aten::slice(self,
# dim, start, end, step)``, and their nodes' formulas as ``aten::select_backward`` /
# ``aten::slice_backward``. PyTorch runs no op for an item that takes a whole dim (``:``,
# ``0:n`` on a dim of n), and ``aten::alias`` when no item does more. A key with one item
# that does (an Ellipsis and whole-dim slices aside) is recorded under PyTorch's name with
# PyTorch's arguments (``_basic_key``); its backward op is named by the node it runs in
# (``_IN_NODE``). Keys of several such items, which PyTorch runs as one op per dim, keep
# ember's one event.


def _basic_key(idx, shape, recorded=False):
    """``(dim, item)`` of ``idx``, a basic key of integers and slices (an Ellipsis aside) in
    which one item does more than take a whole dim of ``shape``; ``(None, None)`` when no
    item does (PyTorch's ``aten::alias``); else None. A bare slice (not in a tuple) is
    always PyTorch's ``aten::slice``, even one taking the whole dim; ``recorded``: ``idx``
    is a graph's recorded key, where ``(slice,)`` stands for the bare slice."""
    if type(idx) is slice or (recorded and is_bare_slice(idx)):
        return 0, idx if type(idx) is slice else idx[0]
    items = idx if type(idx) is tuple else (idx,)
    found = None
    ndim = len(shape)
    dim = 0
    for pos, it in enumerate(items):
        if it is Ellipsis:
            # the items after it index the last dims
            dim = ndim - (len(items) - pos - 1)
            continue
        t = type(it)
        if t is slice:
            if 0 <= dim < ndim and takes_whole_dim(it, shape[dim]):
                dim += 1   # PyTorch runs no op for it
                continue
        elif t is not int:
            return None
        if found is not None:
            return None
        found = dim, it
        dim += 1
    return (None, None) if found is None else found


#: ``slice``'s end when the key gives none (PyTorch's: the largest int64)
_NO_END = (1 << 63) - 1


def _key_items(dim, item):
    """PyTorch's arguments after ``self`` (or after the gradient and the input's sizes) of
    ``select``/``slice`` for ``item`` at ``dim``."""
    if type(item) is int:
        return [dim, item]
    return [dim, 0 if item.start is None else item.start,
            _NO_END if item.stop is None else item.stop, 1 if item.step is None else item.step]


def _getitem_rule(args, kwargs):
    # (the call is ``Tensor.__getitem__``'s: ``(self, key)``)
    if len(args) != 2 or not isinstance(args[0], Tensor):
        return None
    found = _basic_key(args[1], args[0]._data.shape)
    if found is None:
        return None
    if found[0] is None:
        return "aten::alias", None
    return ("aten::select" if type(found[1]) is int else "aten::slice"), None


def _getitem_call(args, kwargs):
    a = args[0]._data
    dim, item = _basic_key(args[1], a.shape)
    return [_TensorInfo((a.shape, a.dtype, getattr(a, "strides", None)))] + \
        ([] if dim is None else _key_items(dim, item))


def _getitem_backward_in_node(args, kwargs):
    g = args[0]._data
    shape = tuple(kwargs["shape"])
    found = _basic_key(kwargs.get("idx"), shape, recorded=True)
    grad = _TensorInfo((g.shape, g.dtype, getattr(g, "strides", None)))
    return [grad, shape] + ([] if found is None or found[0] is None else _key_items(*found))


def _pool_backward_in_node(args, kwargs):
    # ``_adaptive_avg_pool2d_backward(grad_output, self)``: the input as its shape and the
    # gradient's dtype (the node keeps no input)
    g = args[0]._data
    return [_TensorInfo((g.shape, g.dtype, getattr(g, "strides", None))),
            _TensorInfo((tuple(kwargs["input_shape"]), g.dtype, None))]


def _max_pool_backward_in_node(args, kwargs):
    # ``max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
    # dilation, ceil_mode, indices)``; the window's numbers stay in the node
    idx = args[1]._data
    return _pool_backward_in_node(args, kwargs) + [None] * 5 + [
        _TensorInfo((idx.shape, idx.dtype, getattr(idx, "strides", None)))]


def _layer_norm_backward_in_node(args, kwargs):
    # ``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight,
    # bias, output_mask)``; ember's op never takes the bias (its gradient is a sum of the
    # output's): it is listed as the weight, the affine pair of ``nn.LayerNorm``
    g, x, w, mean, rstd = (_info(a) for a in args[:5])
    ndim = kwargs["ndim"]
    return [g, x, tuple(x[0][len(x[0]) - ndim:]), mean, rstd, w, w,
            [True, w is not None, w is not None]]


def _by_strides(args, kwargs):
    """Whether the view op's call views a tensor that is not contiguous (PyTorch's reshape
    runs ``_reshape_alias`` then, ``view`` otherwise)."""
    flags = getattr(args[0]._data, "flags", None)
    return kwargs.get("strides") is not None and flags is not None and not flags.c_contiguous


def _reshape_alias_call(args, kwargs):
    # ``_reshape_alias(self, size, stride)`` (the view's strides, in elements)
    return [_info(args[0]), list(kwargs["shape"]), list(kwargs["strides"])]


def _squeeze_in_node(args, kwargs):
    # the dim ``unsqueeze`` added: the first whose removal gives the view's shape
    g = args[0]._data
    shape = tuple(kwargs["shape"])
    dim = next((i for i in range(g.ndim) if g.shape[:i] + g.shape[i + 1:] == shape), 0)
    return [_TensorInfo((g.shape, g.dtype, getattr(g, "strides", None))), dim]


def _unsqueeze_in_node(args, kwargs):
    # the dim ``squeeze(dim)`` removed: the first whose insertion gives the view's shape
    g = args[0]._data
    shape = tuple(kwargs["shape"])
    dim = next((i for i in range(len(shape)) if shape[:i] + shape[i + 1:] == g.shape), 0)
    return [_TensorInfo((g.shape, g.dtype, getattr(g, "strides", None))), dim]


#: PyTorch's recurrent ops, which ask ``aten::cudnn_is_acceptable`` first
_RNN_OPS = frozenset({"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"})


# NOTE [ LSTM layers under the profiler ]
# ember runs each direction of each LSTM layer as one fused op (NOTE [ Fused LSTM layer ] in
# ember/_ops/nn_rnn.py), as PyTorch's CPU build runs it through oneDNN: one
# ``aten::mkldnn_rnn_layer`` per layer inside ``aten::lstm`` (the module's call, recorded
# by ``RNNBase._profiled_layers`` in ember/nn/modules/rnn.py), and
# ``aten::mkldnn_rnn_layer_backward`` inside its node ``MkldnnRnnLayerBackward0``. ember's
# layer op is recorded under those names with PyTorch's arguments: the module's settings
# come from its noted call (``note_call``), and there is no oneDNN workspace (listed
# empty). Like PyTorch's layer, ember's op takes both biases and sums them itself (one node,
# no ``AddBackward0``; the second bias's gradient a copy of the first's), and the module
# transposes a ``batch_first`` input inside ``aten::lstm`` and copies it to a contiguous
# one there (``aten::contiguous``, ``CloneBackward0``) while a profiler records, as PyTorch
# does. The work PyTorch's layer runs as ops of its own is listed inside the kernel's event
# as events of no duration (``_LAYER_ROWS``): the bias sum (``aten::add``) in both
# directions, and in backward a contiguous copy of each gradient that is not contiguous
# (``aten::contiguous`` > ``aten::clone``), ``aten::zeros_like`` for each one not given,
# and the clone of the bias gradient.


def _info(t):
    if t is None:
        return None
    a = t._data
    return _TensorInfo((a.shape, a.dtype, getattr(a, "strides", None)))


def _rnn_settings():
    """(num_layers, bidirectional, batch_first, train) the LSTM module noted, or a lone
    layer's."""
    s = getattr(_local, "session", None)
    noted = s.noted.get("aten::lstm") if s is not None else None
    return noted if noted is not None else (1, False, False, _state.grad_enabled)


def _lstm_layer_call(args, kwargs):
    # (input, weight_ih, weight_hh, bias_ih, bias_hh, hx, cx, reverse, batch_sizes, mode,
    # hidden_size, num_layers, has_biases, bidirectional, batch_first, train)
    x, w_ih, b, h0, c0, w_hh = args[:6]
    b_hh = args[9] if len(args) > 9 else None
    layers, bidirectional, batch_first, train = _rnn_settings()
    if b is None:   # (no biases: PyTorch's layer is handed the weights in their places)
        b, b_hh = w_ih, w_hh
    return [_info(x), _info(w_ih), _info(w_hh), _info(b), _info(b_hh if b_hh is not None
                                                                  else b),
            _info(h0), _info(c0),
            kwargs.get("reverse", False), [], 2, w_hh._data.shape[1], layers, b is not None,
            bidirectional, batch_first, train]


def _lstm_layer_rows(args, kwargs, result):
    """The ops PyTorch's oneDNN layer runs inside its event (NOTE [ LSTM layers under the
    profiler ]): ``[(name, items, at_end, children)]``."""
    b, b_hh = args[2], (args[9] if len(args) > 9 else None)
    if b is None:   # (no biases: PyTorch's layer makes a zero one)
        return [("aten::zeros", _bias_zeros(args[5]), False, ())]
    if b_hh is None:
        return []
    return [("aten::add", [_info(b), _info(b_hh), 1], False, ())]


def _lstm_layer_backward_rows(args, kwargs, result):
    """The ops inside PyTorch's ``aten::mkldnn_rnn_layer_backward`` (see the note)."""
    # (grad_output, grad_hy, grad_cy, x rows, w_ih, w_hh, w_hr, gates, cells, tanh(cells),
    # unprojected outputs, h_{t-1}, ...)
    hprev, tcs = args[11]._data, args[9]._data
    out = []
    for g, shape in ((args[0], hprev.shape), (args[1], hprev.shape[1:]),
                     (args[2], tcs.shape[1:])):
        if g is None:   # (a gradient not given: zeros as its output)
            like = _TensorInfo((shape, hprev.dtype, None))
            out.append(("aten::zeros_like", [like, None, None, None, None, 0], False, ()))
        elif not getattr(g._data, "flags", None) or not g._data.flags.c_contiguous:
            t = _info(g)
            out.append(("aten::contiguous", [t, 0], False,
                        (("aten::clone", [t, None], False, ()),)))
    needs = kwargs.get("needs", ())
    bias = _TensorInfo(((args[7]._data.shape[2],), hprev.dtype, None))
    if len(needs) > 9 and needs[2] and needs[9]:
        out.append(("aten::add", [bias, bias, 1], True, ()))
        out.append(("aten::clone", [bias, None], True, ()))
    elif len(needs) > 9 and not needs[2] and not needs[9]:   # (no biases: a zero one)
        out.append(("aten::zeros", _bias_zeros(args[5]), True, ()))
        out.append(("aten::clone", [bias, None], True, ()))
    return out


def _bias_zeros(w_hh):
    """The arguments of the ``aten::zeros`` bias that PyTorch's oneDNN layer makes when the
    LSTM has none: (size, dtype, layout, device, pin_memory)."""
    return [[w_hh._data.shape[0]], None, None, None, None]


#: ember's kernel op -> ``fn(args, kwargs, result)`` giving the rows of work PyTorch's op
#: runs as ops of its own inside its event (``_OpRecorder._rows_inside``)
_LAYER_ROWS = {"aten::lstm_layer": _lstm_layer_rows,
               "aten::lstm_layer_backward": _lstm_layer_backward_rows}


def _lstm_layer_backward_in_node(args, kwargs):
    # (input, weight1..4, hx, cx, output, hy, cy, grad_output, grad_hy, grad_cy, reverse,
    # mode, hidden_size, num_layers, has_biases, train, bidirectional, batch_sizes,
    # batch_first, workspace)
    g_out, g_h, g_c, xf, w_ih, w_hh = args[:6]
    t, batch, hidden = g_out._data.shape
    dt = g_out._data.dtype
    state = _TensorInfo(((batch, hidden), dt, None))
    seq = _TensorInfo(((t, batch, hidden), dt, None))
    bias = _TensorInfo(((w_hh._data.shape[0],), dt, None))
    b_ih = b_hh = bias
    needs = kwargs.get("needs", ())
    if len(needs) > 9 and not needs[2] and not needs[9]:   # (no biases: the weights)
        b_ih, b_hh = _info(w_ih), _info(w_hh)
    layers, bidirectional, batch_first, train = _rnn_settings()
    # the input's width is the input weight's: ``xf`` is None where an embedding table
    # stood in for the input rows
    return [_TensorInfo(((t, batch, w_ih._data.shape[1]), dt, None)), _info(w_ih), _info(w_hh),
            b_ih, b_hh, state, state, seq, state, state, _info(g_out), _info(g_h),
            _info(g_c), kwargs.get("reverse", False), 2, hidden, layers, True, train,
            bidirectional, [], batch_first, None]


#: ember's event name -> ``fn(args, kwargs)`` giving the arguments (``_ordered_record``'s
#: items) of the PyTorch op its rule renamed it to, where they differ from ember's op's
def _loss_call(param=None):
    """``fn(args, kwargs)`` giving an element-wise loss op's arguments as PyTorch's op
    receives them: ``(self, target, reduction)``, the reduction as its code, then ``param``
    (smooth L1's ``beta``, Huber's ``delta``) when named."""
    def call(args, kwargs):
        items = [_info(args[0]), _info(args[1]), _REDUCTION_CODES.get(kwargs.get("reduction"))]
        return items + [kwargs.get(param)] if param is not None else items

    return call


_RENAMED_CALLS = {"aten::index": _getitem_call, "aten::lstm_layer": _lstm_layer_call,
                  "aten::max.dim": lambda args, kwargs: [_info(args[0]), kwargs["dim"],
                                                         kwargs.get("keepdim", False)],
                  "aten::native_batch_norm_backward": lambda args, kwargs:
                  _batch_norm_backward_call(args, kwargs),
                  "aten::var": _var_call, "aten::mse_loss": _loss_call(),
                  "aten::smooth_l1_loss": _loss_call("beta"),
                  "aten::huber_loss": _loss_call("delta")}


#: ember's event name -> ``rule(args, kwargs)`` giving ``(name, child name or None)`` for
#: the call, or None to keep the event as it is (NOTE [ Composite op events ])
_NAMING = {
    "aten::max_pool": _pool_rule("aten::max_pool", "_with_indices"),
    "aten::avg_pool": _pool_rule("aten::avg_pool"),
    "aten::adaptive_avg_pool": _adaptive_avg_rule,
    "aten::adaptive_max_pool": _pool_rule("aten::adaptive_max_pool"),
    "aten::linear": _linear_rule,
    "aten::var": _var_rule,
    "aten::embedding_backward": _fixed("aten::embedding_backward",
                                       "aten::embedding_dense_backward"),
    # NOTE [ Reshape of a non-viewable tensor ] in ember/_ops/shape.py (in a view's
    # backward node: ``_IN_NODE``)
    "aten::_reshape_copy": None,
    "aten::convolution": _conv_rule(False),
    # ember's transposed convolution is the adjoint of its convolution
    "aten::convolution_input_grad": _conv_rule(True),
    "aten::nll_loss": _nll_rule,
    "aten::native_layer_norm": _fixed("aten::layer_norm", "aten::native_layer_norm"),
    "aten::native_batch_norm": _fixed("aten::batch_norm", ("aten::_batch_norm_impl_index",
                                                          "aten::native_batch_norm")),
    # (its inputs as PyTorch's: ``_RENAMED_CALLS``)
    "aten::native_batch_norm_backward": _fixed("aten::native_batch_norm_backward", None),
    "aten::softmax": _fixed("aten::softmax", "aten::_softmax"),
    "aten::log_softmax": _fixed("aten::log_softmax", "aten::_log_softmax"),
    "aten::scaled_dot_product_attention": _sdpa_rule,
    "aten::embedding": _fixed("aten::embedding", "aten::index_select"),
    "aten::matmul": _matmul_rule,
    "aten::addmm": _addmm_rule,
    "aten::pad": _pad_rule,
    # PyTorch's relu is a clamp at zero
    "aten::relu": _fixed("aten::relu", "aten::clamp_min"),
    "aten::relu_": _fixed("aten::relu_", "aten::clamp_min_"),
    # ``2 - t``: PyTorch's ``rsub`` calls ``sub`` with the number first, as ember's op is
    "aten::sub": _rsub_rule,
    # ember's own op for a number weight; PyTorch's is an overload of ``lerp``
    "aten::lerp_scalar": _fixed("aten::lerp", None),
    "aten::lerp_scalar_": _fixed("aten::lerp_", None),
    # (their reduction as PyTorch's code: ``_RENAMED_CALLS``)
    **{f"aten::{loss}": _fixed(f"aten::{loss}", None)
       for loss in ("mse_loss", "smooth_l1_loss", "huber_loss")},
    # (named by where they run: ``_OpRecorder._named``, NOTE [ Ops inside backward nodes ])
    "aten::index": _getitem_rule,   # NOTE [ Basic indexing under the profiler ]
    # NOTE [ LSTM layers under the profiler ]
    "aten::lstm_layer": _fixed("aten::mkldnn_rnn_layer", None),
    "aten::lstm_layer_backward": None,
    "aten::native_layer_norm_backward": None,
    "aten::adaptive_avg_pool_backward": None,
    "aten::max_pool_backward": None,
    "aten::transpose": None,
    "aten::stack": None,   # NOTE [ Stack under the profiler ]
    "aten::unbind": None,  # (its backward: a ``select`` per input)
    "aten::split": None,   # (``cat``'s backward: a ``narrow`` per input)
    # one op for the largest and the smallest, named as PyTorch's two
    "aten::amax": lambda args, kwargs: None if kwargs.get("largest", True) else
    ("aten::amin", None),
    "aten::max.dim": lambda args, kwargs: ("aten::max" if kwargs.get("largest", True) else
                                           "aten::min", None),
    "aten::mean": None,    # NOTE [ Reductions under the profiler ]
    "aten::expand": None,
    "aten::view": None,
    "aten::_getitem_backward": None,
    "aten::_autograd_sum_to": None,
    "aten::_where_zero": None,
    "aten::_put_along": None,
    "aten::_split_backward": None,
}


# NOTE [ Stack under the profiler ]
# ember stacks in one kernel; PyTorch's CPU ``stack`` calls ``aten::cat`` of its inputs and
# views the result as the stacked shape (``aten::view``), or, along a new last dim,
# unsqueezes each input (``aten::unsqueeze``) and concatenates them. The recorder lists
# those rows inside ``aten::stack``: the kernel's event is the ``cat`` (its time is the
# kernel's), the unsqueezes and the view are instants at its start and end (they do no
# work). The dim is the caller's, as PyTorch lists it (``stack`` notes it while shapes are
# recorded); the ``cat`` of a stack that views gets it wrapped, as PyTorch's does.
# Its backward node (``StackBackward0``) takes each input's gradient with ``aten::select``
# of the dim the caller gave, where ember's formula unbinds: the ``unbind`` is recorded as
# those selects (``_Session.node_calls`` keeps the caller's dim for the node), the first
# holding the kernel's time, the others instants at its end (views do no work).


# NOTE [ Reductions under the profiler ]
# PyTorch's CPU ``mean`` sums into its result (``aten::sum`` with an ``out`` tensor) and
# divides it in place (``aten::div_``); ember's kernel does both: its event is the
# ``aten::sum`` inside ``aten::mean``, and the ``div_`` an instant at its end. The
# gradients of PyTorch's reductions over some dims (``sum``, ``mean``, ``amax``...) put
# each reduced dim back with ``aten::unsqueeze`` before ``aten::expand``; ember's one
# ``expand`` of the reduced gradient (``_expand_back`` in ember/_ops/reduction.py) is
# recorded after those unsqueezes (instants: views do no work), with the shape they give.
# The gradients of ``amax``/``amin``, ``var``/``std`` and ``logsumexp`` over some dims are
# PyTorch's ops in its order (``_restore_dims`` there: real unsqueezes or reshapes, then
# broadcasting ops, the same values), the ``mean`` of var's and std's as ``sum`` and
# ``div_`` (``_MEAN_NODES``), std's zeroing as ``masked_fill_``; the gradient of
# ``max(dim)``/``min(dim)`` is PyTorch's ``value_selecting_reduction_backward`` with its
# unsqueezes, zeros and ``scatter_`` inside (``_value_selecting_rows``).


# NOTE [ Ops inside backward nodes ]
# Some of PyTorch's backward formulas call another op than ember's for the same work:
# ``TBackward0`` transposes with ``aten::t`` (ember's formula is its ``transpose``),
# ``ViewBackward0``/``UnsafeViewBackward0`` reshape with ``aten::reshape`` (ember: ``view``).
# Inside a node of that name the recorder names the event as PyTorch's, with PyTorch's
# arguments (``_IN_NODE``). And where a gradient is summed down to its input's shape,
# PyTorch's engine runs ``sum_to``: ``aten::sum`` over the broadcast dims keeping them,
# then ``aten::view`` to drop the leading ones; ember's one ``_autograd_sum_to`` kernel is
# then run as those two ops, for real (``_sum_to_as_torch``), so the rows and counts are
# PyTorch's. PyTorch's engine sums after the node's function returns, so its rows sit
# beside the node's event, inside ``evaluate_function``; ember sums in ``fit_grads``, the
# last work of the node's ``_apply`` once its formula has returned, so the node's event is
# closed there and the rows land beside it too (except in nodes whose formula is the sum:
# ``_SUMMING_NODES``, ``ExpandBackward0``).


#: backward nodes whose formula's ``mean`` PyTorch runs as its CPU kernel's sum and div_
_MEAN_NODES = {"VarBackward0", "StdBackward0"}

#: nodes whose formula in PyTorch is itself a ``sum_to``: their sum stays inside them
_SUMMING_NODES = {"ExpandBackward0", "ExpandBackward1", "BroadcastTensorsBackward0"}


def _t_in_node(args, kwargs):
    g = args[0]._data
    return [_TensorInfo((g.shape, g.dtype, getattr(g, "strides", None)))]


def _value_selecting_in_node(args, kwargs):
    return [_info(args[0]), kwargs["dim"], _info(args[1]), list(kwargs["shape"]),
            kwargs["keepdim"]]


def _value_selecting_rows(args, kwargs, result):
    """The ops inside PyTorch's ``aten::value_selecting_reduction_backward``: the gradient
    and indices unsqueezed (without keepdim), zeros of the input's shape, and the
    ``scatter_`` of the gradient into them."""
    g, idx = args[0]._data, args[1]._data
    dim, shape = kwargs["dim"], tuple(kwargs["shape"])
    rows = []
    if not kwargs["keepdim"] and len(shape) == g.ndim + 1:
        rows = [("aten::unsqueeze", [_info(args[0]), dim], False, ()),
                ("aten::unsqueeze", [_info(args[1]), dim], False, ())]
        kept = g.shape[:dim] + (1,) + g.shape[dim:]
    else:
        kept = g.shape
    zeros = _TensorInfo((shape, g.dtype, None))
    rows.append(("aten::zeros", [list(shape), g.dtype, 0, None, None], False, ()))
    rows.append(("aten::scatter_", [zeros, dim, _TensorInfo((kept, idx.dtype, None)),
                                    _TensorInfo((kept, g.dtype, None))], True, ()))
    return rows


_LAYER_ROWS["aten::_put_along"] = _value_selecting_rows


def _masked_fill_in_node(args, kwargs):
    return [_info(args[0]), _info(args[1]), 0]


def _reshape_in_node(args, kwargs):
    g = args[0]._data
    return [_TensorInfo((g.shape, g.dtype, getattr(g, "strides", None))),
            tuple(kwargs["shape"])]


#: ember's event name -> {backward node's name: (PyTorch's op there, ``fn(args, kwargs)``
#: giving its arguments as ``_BACKWARD_INPUTS`` does)} (NOTE [ Ops inside backward nodes ])
_IN_NODE = {
    "aten::transpose": {"TBackward0": ("aten::t", _t_in_node)},
    "aten::view": {"ViewBackward0": ("aten::reshape", _reshape_in_node),
                   "UnsafeViewBackward0": ("aten::reshape", _reshape_in_node),
                   "ReshapeAliasBackward0": ("aten::reshape", _reshape_in_node),
                   "UnsqueezeBackward0": ("aten::squeeze", _squeeze_in_node),
                   "SqueezeBackward1": ("aten::unsqueeze", _unsqueeze_in_node),
                   "SqueezeBackward4": ("aten::unsqueeze", _unsqueeze_in_node),
                   # (the result and gradient given back their reduced dims)
                   "AmaxBackward0": ("aten::reshape", _reshape_in_node),
                   "AminBackward0": ("aten::reshape", _reshape_in_node)},
    # (``max(dim)``'s gradient put back at the indices: PyTorch scatters into zeros)
    "aten::_put_along": {node: ("aten::value_selecting_reduction_backward",
                                _value_selecting_in_node)
                         for node in ("MaxBackward0", "MinBackward0")},
    # (a split's gradient: PyTorch concatenates the pieces' gradients)
    "aten::_split_backward": {node: ("aten::cat", lambda args, kwargs: [list(args),
                                                                        kwargs["dim"]])
                              for node in ("SplitBackward0", "UnsafeSplitBackward0")},
    # (std's gradient zeroed where std is 0: PyTorch fills in place)
    "aten::_where_zero": {"StdBackward0": ("aten::masked_fill_", _masked_fill_in_node)},
    # a gradient no view can reshape: PyTorch's reshape copies it (``aten::_unsafe_view``
    # of a clone; ember's one op, ``_NAMING``)
    "aten::_reshape_copy": {"ViewBackward0": ("aten::reshape", _reshape_in_node),
                            "UnsafeViewBackward0": ("aten::reshape", _reshape_in_node),
                            "ReshapeAliasBackward0": ("aten::reshape", _reshape_in_node)},
    "aten::_getitem_backward": {
        "SelectBackward0": ("aten::select_backward", _getitem_backward_in_node),
        "SliceBackward0": ("aten::slice_backward", _getitem_backward_in_node)},
    "aten::adaptive_avg_pool_backward": {
        f"AdaptiveAvgPool{n}DBackward0": (f"aten::_adaptive_avg_pool{n}d_backward",
                                          _pool_backward_in_node) for n in (2, 3)},
    "aten::max_pool_backward": {
        f"MaxPool{n}DWithIndicesBackward0": (f"aten::max_pool{n}d_with_indices_backward",
                                             _max_pool_backward_in_node) for n in (2, 3)},
    "aten::native_layer_norm_backward": {
        "NativeLayerNormBackward0": ("aten::native_layer_norm_backward",
                                     _layer_norm_backward_in_node)},
    "aten::lstm_layer_backward": {
        "MkldnnRnnLayerBackward0": ("aten::mkldnn_rnn_layer_backward",
                                    _lstm_layer_backward_in_node)},
}


#: outer event -> ``fn(args, kwargs)`` giving the raw ``(shapes, dtypes)`` of each level
#: under it, where PyTorch's ops there receive other inputs than the outer op
_CHILD_INPUTS = {"aten::linear": _linear_inputs, "aten::embedding": _embedding_inputs,
                 **{f"aten::{kind}{n}d": _conv_inputs for kind in ("conv", "conv_transpose")
                    for n in (1, 2, 3)},
                 "aten::relu": _clamp_inputs, "aten::rsub": _rsub_inputs,
                 "aten::relu_": _clamp_inputs,
                 "aten::embedding_backward": _embedding_backward_inputs,
                 "aten::adaptive_avg_pool2d": _adaptive_avg_inputs,
                 "aten::adaptive_avg_pool3d": _adaptive_avg_inputs}
#: ember's event name -> ``fn(args, name)`` giving the raw ``(shapes, dtypes)`` of the op
#: its rule renamed it to (``name``), where PyTorch's op there receives other inputs
_RENAMED_INPUTS = {"aten::matmul": _matmul_inputs}


# NOTE [ Calls noted for the profiler ]
# An op whose Python entrance turns the caller's arguments into others before the op runs
# (``scaled_dot_product_attention``'s ``is_causal`` becomes a mask, its default scale a
# number) would list those in a profile, where PyTorch lists the call as made. While a
# session records shapes, such an entrance hands the caller's arguments to ``note_call``
# just before its op; ``_OpRecorder._named`` takes them for the op's events, each level
# with the arguments PyTorch's op there receives (``_NOTED``). Nothing is noted, and
# nothing costs, when no profiler records (the entrance tests ``_dispatch.intercept``).


# NOTE [ Dims as the caller gave them ]
# ember's reductions turn the caller's ``dim`` into sorted axes before the op runs
# (``_dims`` in ember/_ops/reduction.py); PyTorch's events list the dims as given
# (``x.sum(-1)``: ``[-1]``; ``dim=(2, 0)``: ``[2, 0]``). While a session records shapes,
# ``_dims`` notes the given ``dim`` (``note_dims``) and the next op recorded lists it in
# place of its own ``dim`` argument, in its form (a list for a list of dims).


def note_dims(dim):
    """Keep a reduction's ``dim`` as the caller gave it for the op recorded next (NOTE
    [ Dims as the caller gave them ])."""
    s = getattr(_local, "session", None)
    if s is not None and s.active and s.record_shapes:
        s.noted["dim"] = dim


def _given_dims(kw, given):
    """``kw`` (an event's keyword arguments) with its ``dim`` as the caller gave it."""
    out = []
    for k, v in kw:
        if k == "dim":
            if type(v) is tuple:
                v = tuple(given) if isinstance(given, (tuple, list)) else (given,)
            elif not isinstance(given, (tuple, list)):
                v = given
        out.append((k, v))
    return tuple(out)


def note_call(name, *call):
    """Keep the caller's arguments ``call`` of the op recorded next as the event ``name``
    (NOTE [ Calls noted for the profiler ]), when this thread's session records shapes."""
    s = getattr(_local, "session", None)
    if s is not None and s.active and s.record_shapes:
        s.noted[name] = call


def _info_or_none(t):
    if not isinstance(t, Tensor):
        return t
    d = t._data
    return _TensorInfo((d.shape, d.dtype, getattr(d, "strides", None)))


def _sdpa_levels(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa):
    """``aten::scaled_dot_product_attention``'s arguments, then its CPU kernel's."""
    q, k, v, mask = (_info_or_none(t) for t in (q, k, v, mask))
    return [[q, k, v, mask, dropout_p, is_causal, scale, enable_gqa],
            [q, k, v, dropout_p, is_causal, _additive_mask(mask, q), scale]]


def _additive_mask(mask, q):
    """The mask PyTorch's attention kernels receive: a boolean one made additive, of the
    query's dtype (``_bool_mask_rows``)."""
    if mask is None or q is None or mask[1] != np.bool_:
        return mask
    return _TensorInfo((mask[0], q[1], None))


def _batch_norm_levels(x, w, b, mean, var, training, momentum, eps):
    """``aten::batch_norm``'s arguments, ``_batch_norm_impl_index``'s, then
    ``native_batch_norm``'s (without ``cudnn_enabled``)."""
    items = [_info_or_none(t) for t in (x, w, b, mean, var)] + [training, momentum, eps]
    return [items + [True], items + [True], items]


def _batch_norm_backward_call(args, kwargs):
    # (grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
    # eps, output_mask); the running statistics and eps as the forward call noted them
    g, x, w, m, rstd = args[:5]
    s = current_session()
    p = s._open_raw.get(s.open[-1]) if s is not None else None
    call = s.node_calls.get(p.seq) if p is not None else None
    mean = var = eps = None
    if type(call) is tuple and len(call) == 8:
        mean, var, eps = _info_or_none(call[3]), _info_or_none(call[4]), call[7]
    return [_info(g), _info(x), _info(w), mean, var, _info(m), _info(rstd), True, eps,
            [True, w is not None, w is not None]]


#: outer event -> ``fn(*call)`` giving, from the arguments noted by ``note_call``, the items
#: (``_ordered_record``'s) of each level of its events
_NOTED = {"aten::scaled_dot_product_attention": _sdpa_levels,
          "aten::batch_norm": _batch_norm_levels}


#: outer events that carry their child's flop count, as PyTorch's do
_FLOPS_ON_OUTER = {"aten::conv1d", "aten::conv2d", "aten::conv3d"}
#: backward ops whose rule's chain applies inside their node, where PyTorch's backward op
#: calls another (``embedding_backward`` > ``embedding_dense_backward``)
_BACKWARD_CHAINS = {"aten::embedding_backward"}
#: names a rule keeps in backward too (they only name the op by its dimension, or as
#: PyTorch's op for the same work)
_RENAMES_ONLY = {"aten::max_pool", "aten::avg_pool", "aten::adaptive_avg_pool",
                 "aten::adaptive_max_pool", "aten::lerp_scalar", "aten::lerp_scalar_",
                 "aten::var", "aten::_reshape_copy"}


def shape_lists(shapes):
    """An event's ``shapes`` as lists of lists (raw op shapes from ``_record_inputs`` are a
    tuple of tuples; backward events' are lists already)."""
    if type(shapes) is not tuple:
        return shapes
    return [[list(y) for y in x] if x and type(x[0]) is tuple else list(x) for x in shapes]


_dtype_names: dict = {}
#: PyTorch's events name a tensor's dtype by its C++ element type
_CPP_TYPES = {
    "float32": "float", "float64": "double", "float16": "c10::Half",
    "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
    "int8": "signed char", "uint8": "unsigned char", "uint16": "short unsigned int",
    "uint32": "unsigned int", "uint64": "long unsigned int", "bool": "bool",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
    "float8_e4m3fn": "c10::Float8_e4m3fn", "float8_e5m2": "c10::Float8_e5m2",
}


def dtype_names(dtypes):
    """Raw ``dtypes`` (``_record_inputs``) as PyTorch's names (``float`` for a float32
    Tensor, ``long int`` for int64)."""
    if dtypes is None:
        return None
    out = []
    for d in dtypes:
        if type(d) is str:
            out.append(d)
            continue
        name = _dtype_names.get(d)
        if name is None:
            from .._core import dtype as _dt
            name = str(_dt.from_np[d]).replace("ember.", "")
            name = _dtype_names[d] = _CPP_TYPES.get(name, name)
        out.append(name)
    return out


_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: file name -> whether its frames are the user's (outside ember) and so listed
_user_files: dict = {}


def _is_user_file(fname):
    """Whether frames of file ``fname`` are the user's (listed in stacks), remembered."""
    if len(_user_files) > 8192:  # generated code's names must not pile up here
        _user_files.clear()
    keep = _user_files[fname] = not fname.startswith(_EMBER_DIR) and \
        not fname.startswith("<ember wrapper")
    return keep


def _buffer(arr):
    """The array that owns the memory ``arr`` views (``arr`` itself when it owns it), or
    None when the chain of views ends in another object: strides made up over someone
    else's memory (``as_strided``, ``broadcast_to``), allocated by no kernel."""
    base = getattr(arr, "base", None)
    while base is not None:
        if type(base) is not type(arr):
            return None
        arr = base
        base = getattr(arr, "base", None)
    return arr


def _tensors_of(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    yield b


def _sequence_nr(r, args):
    """The sequence number of the graph node an op's result ``r`` got from this call, or
    -1 (none, or an in-place op whose input carries the node already)."""
    out = r[0] if type(r) is tuple and r else r
    gf = getattr(out, "_grad_fn", None)
    if gf is None or not isinstance(out, Tensor):
        return -1
    for a in args:
        if isinstance(a, Tensor) and a._grad_fn is gf:
            return -1
    seq = getattr(gf, "_seq", -1)
    return seq if type(seq) is int else -1


#: an op -> whether its backward formula is ember's own code (no user function runs in it)
_ember_formulas: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _ember_formula(node):
    """Whether ``node``'s function is one of ember's op formulas (not a user's
    ``autograd.Function`` or a custom op's registered backward)."""
    op = getattr(node, "_op", None)
    if op is None:
        return False
    try:
        known = _ember_formulas.get(op)
    except TypeError:   # (an op that cannot be weakly referenced)
        return False
    if known is None:
        fn = getattr(op, "vjp", None)
        code = getattr(fn, "__code__", None)
        known = code is not None and not _is_user_file(code.co_filename) and \
            code.co_filename.startswith(_EMBER_DIR)
        _ember_formulas[op] = known
    return known


def _ember_step(opt, args, kwargs):
    """Whether ``opt.step(*args, **kwargs)`` runs only ember's code: ember's own ``step``,
    no closure, no hooks of this optimizer's own (NOTE [ Python function events ])."""
    if args or kwargs.get("closure") is not None or \
            getattr(opt, "_optimizer_step_pre_hooks", None) or \
            getattr(opt, "_optimizer_step_post_hooks", None):
        return False
    import inspect

    fn = inspect.unwrap(getattr(type(opt), "step", None))
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith(_EMBER_DIR)


class _OpRecorder(_dispatch.Mode):
    """The profiler's layer of the mode stack (NOTE [ Profiler recording ])."""

    level = 40
    #: it only watches: work PyTorch does inside one op (batch norm's running statistics)
    #: may stay inside ember's op too, unseen, as PyTorch's profiler does not see it either
    _ember_observer = True

    def __init__(self, session):
        self.session = session
        self._next = session._count.__next__
        self._opened = session.open
        self._append = session.ops.append
        # a session's options do not change while it records: read them and pick the
        # route once
        self._shapes = session.record_shapes
        self._stack = session.with_stack
        self._memory = session.profile_memory
        self._flops = session.with_flops
        self._timer = session.device_timer
        if self._shapes or self._stack or self._memory or self._flops or \
                self._timer is not None:
            self.dispatch = self._dispatch_detailed

    def dispatch(self, handle, args, kwargs, _name=None):
        # the plain route: one tuple per op (NOTE [ Profiler recording ]); ``_name``, from
        # ``_named``, is the event's name when a rule gave it
        if _name is None:
            name = handle.overloadpacket._qualified_op_name
            if name in _NAMING:
                return self._named(handle, args, kwargs, name)
        else:
            name = _name
        i = self._next()
        opened = self._opened
        parent = opened[-1]
        below = handle.below
        if below is not None and not _state.modes:
            # an op written in Python, with no mode under this one: run its body with this
            # recorder on the stack, so that the ops it calls nest under it (see the note)
            opened.append(i)
            start = perf_counter_ns()
            _state.modes = (self,)
            try:
                r = below(*args, **kwargs)
            except BaseException:
                _state.modes = ()
                self._append((i, parent, name, start, perf_counter_ns(), -1))
                opened.pop()
                raise
            _state.modes = ()
            end = perf_counter_ns()
            opened.pop()
            self._append((i, parent, name, start, end, _sequence_nr(r, args)))
        else:
            # a kernel: nothing records inside it (modes above it are popped), so it needs
            # no place on the stack of open events
            start = perf_counter_ns()
            try:
                r = handle._run(*args, **kwargs)
            except BaseException:
                self._append((i, parent, name, start, perf_counter_ns(), -1))
                raise
            end = perf_counter_ns()
            out = r[0] if type(r) is tuple and r else r
            if getattr(out, "_grad_fn", None) is not None:
                self._append((i, parent, name, start, end, _sequence_nr(r, args)))
            else:
                self._append((i, parent, name, start, end, -1))
        return r

    def _dispatch_detailed(self, handle, args, kwargs, _name=None):
        # the route with shapes, stacks, memory, flops or GPU time
        if _name is None:
            name = handle.overloadpacket._qualified_op_name
            if name in _NAMING:
                return self._named(handle, args, kwargs, name)
        else:
            name = _name
        s = self.session
        i = self._next()
        opened = self._opened
        parent = opened[-1]
        shapes = dtypes = stack = key = strides = values = kw = None
        if self._shapes:
            # NOTE [ Recorded inputs ] in _inputs.py (kept flat in the event: see the note
            # at the top on nesting)
            shapes, dtypes, strides, values, kw = record_call(args, kwargs)
            key = handle.__name__
            if s.noted and kw:
                given = s.noted.pop("dim", None)
                if given is not None:   # NOTE [ Dims as the caller gave them ]
                    kw = _given_dims(kw, given)
        paused = None
        if self._stack:
            # the Python tracer sleeps while an op runs (NOTE [ Python function events ])
            paused = s._tracer_hook
            if paused is not None and sys.getprofile() is paused:
                sys.setprofile(None)
            else:
                paused = None
        timer = self._timer
        if timer is not None:
            first = timer.mark()
        below = handle.below
        python_body = below is not None and not _state.modes
        # a kernel needs a place on the stack of open events only for the frees it causes
        pushed = python_body or self._memory
        if pushed:
            opened.append(i)
        start = perf_counter_ns()
        try:
            if python_body:
                _state.modes = (self,)   # an op written in Python: as in ``dispatch``
                try:
                    r = below(*args, **kwargs)
                finally:
                    _state.modes = ()
            else:
                r = handle._run(*args, **kwargs)
        except BaseException:
            self._append((i, parent, name, start, perf_counter_ns(), -1, shapes, dtypes,
                          stack, 0, key, strides, values, kw, None))
            if pushed:
                opened.pop()
            if paused is not None:
                sys.setprofile(paused)
            raise
        end = perf_counter_ns()
        if pushed:
            opened.pop()
        gpu = None
        if timer is not None:
            # NOTE [ CUDA event timing ]: keep the pair only for ops that used the GPU
            if timer.on_device(args, r):
                gpu = (first, timer.mark(), timer.stream_id())
            else:
                timer.release(first)
        flops = 0
        if self._memory:
            s.count_allocations(i, r, args)
        if self._flops:
            rule = _flops.RULES.get(handle.overloadpacket.__name__)
            if rule is not None:
                try:
                    flops = int(rule(args, kwargs, r))
                except Exception:  # an odd call form: count nothing, not fail the op
                    flops = 0
        out = r[0] if type(r) is tuple and r else r
        seq = _sequence_nr(r, args) if getattr(out, "_grad_fn", None) is not None else -1
        self._append((i, parent, name, start, end, seq, shapes, dtypes, stack, flops, key,
                      strides, values, kw, gpu))
        if paused is not None:   # (the tracer sleeps through the recording too)
            sys.setprofile(paused)
        return r

    def _named(self, handle, args, kwargs, name):
        """An op whose event a rule names (NOTE [ Composite op events ]): under another
        name, or as PyTorch's outer event around a child event for the kernel."""
        rule = _NAMING[name]
        if rule is None:
            return self._in_node(handle, args, kwargs, name)
        names = rule(args, kwargs)
        if names is None:
            return self.dispatch(handle, args, kwargs, name)
        outer, inner = names
        s = self.session
        opened = self._opened
        parent = opened[-1]
        if inner is not None:
            open_raw = s._open_raw
            p = open_raw.get(parent)
            while p is not None and p.kind == "op":   # (a composite a backward node calls)
                p = open_raw.get(p.parent)
            if p is not None and p.kind == "bwd" and name not in _BACKWARD_CHAINS:
                # an op a backward node calls keeps its own name (a pool: its dimension)
                inner = None
                if name not in _RENAMES_ONLY:
                    outer = name
        if inner is None:
            r = self.dispatch(handle, args, kwargs, outer)
            rows = _LAYER_ROWS.get(name)
            if rows is not None:
                rows = rows(args, kwargs, r)
            if s.record_shapes:
                self._rename_inputs(args, kwargs, name, outer)
            if rows:
                leaf = s.ops[-1]
                self._rows_inside(leaf[0], leaf[3], leaf[4], len(leaf) > 6, rows)
            return r
        # the levels above the kernel's own event: the outer one and any between (``inner``
        # may name a chain, ``(middle, kernel)``)
        chain = inner if type(inner) is tuple else (inner,)
        detailed = s.record_shapes or s.with_stack or s.profile_memory or s.with_flops or \
            s.device_timer is not None
        inputs = noted = own = None
        if s.record_shapes:
            adapt = _CHILD_INPUTS.get(outer)
            inputs = adapt(args, kwargs) if adapt is not None else None
            if inputs is not None and len(inputs) > len(chain):
                # the outer event's arguments first, where they are not the call's
                own, inputs = inputs[0], inputs[1:]
            call = s.noted.pop(outer, None) if s.noted else None
            if call is not None and outer in _NOTED:
                # the arguments as the caller gave them (NOTE [ Calls noted for the
                # profiler ]), per level
                noted = [_ordered_record(items) for items in _NOTED[outer](*call)]
        levels = []
        for k, level in enumerate((outer,) + chain[:-1]):
            detail = ()
            if detailed:
                shapes = dtypes = strides = values = kw = None
                key = None
                if noted is not None:
                    shapes, dtypes, (key, strides, values, kw) = noted[k]
                elif k == 0 and own is not None:
                    shapes, dtypes, (key, strides, values, kw) = own
                elif s.record_shapes:
                    if k == 0 or inputs is None or inputs[k - 1] is None:
                        shapes, dtypes, strides, values, kw = record_call(args, kwargs)
                    else:
                        got = inputs[k - 1]
                        shapes, dtypes = got[:2]
                        if len(got) > 2:   # (an ``_ordered_record``)
                            key, strides, values, kw = got[2]
                detail = (shapes, dtypes, None, 0, key,
                          strides, values, kw, None)
            i = self._next()
            # each level's clock reading is its own: a child starts after its parent
            levels.append((i, opened[-1], level, detail, perf_counter_ns()))
            opened.append(i)
        if noted is not None and outer == "aten::scaled_dot_product_attention":
            self._bool_mask_rows(call, levels[0][0])
        try:
            r = self.dispatch(handle, args, kwargs, chain[-1])
        except BaseException:
            for i, parent, level, detail, start in reversed(levels):
                opened.pop()
                self._append((i, parent, level, start, perf_counter_ns(), -1) + detail)
            raise
        flops = 0
        if detailed:
            ops = s.ops
            leaf = ops[-1]
            if noted is not None:
                leaf = leaf[:6] + noted[-1][:2] + leaf[8:10] + noted[-1][2] + leaf[14:]
            elif inputs is not None and inputs[-1] is not None:
                # the inputs PyTorch's kernel op receives (``addmm``: bias, input, weight.t())
                got = inputs[-1]
                leaf = leaf[:6] + got[:2] + leaf[8:10] + \
                    (got[2] if len(got) > 2 else (None,) * 4) + leaf[14:]
            if outer in _FLOPS_ON_OUTER:
                # PyTorch counts a convolution's flops on ``aten::conv2d``, not its child
                flops = leaf[9]
                leaf = leaf[:9] + (0,) + leaf[10:]
            ops[-1] = leaf
        inside = _KERNEL_ROWS.get(chain[-1])
        if inside is not None:
            leaf = s.ops[-1]
            self._rows_inside(leaf[0], leaf[3], leaf[4], len(leaf) > 6,
                              inside(args, kwargs, r))
        # the outer events carry the node's number too: the trace's flow arrow starts there
        seq = _sequence_nr(r, args)
        if noted is not None and seq >= 0:
            if outer == "aten::batch_norm":
                # (what its backward op lists: the statistics' shapes, not the tensors,
                # which the profile must not keep alive)
                call = (None, None, None, _info_or_none(call[3]), _info_or_none(call[4]),
                        None, None, call[7])
            s.node_calls[seq] = call
        for i, parent, level, detail, start in reversed(levels):
            opened.pop()
            if flops and level == outer:
                detail = detail[:3] + (flops,) + detail[4:]
            self._append((i, parent, level, start, perf_counter_ns(), seq) + detail)
        return r


    def _rename_inputs(self, args, kwargs, name, outer):
        """The arguments of the event just recorded as ``outer`` for ember's op ``name``, as
        PyTorch's op ``outer`` receives them (``_RENAMED_INPUTS``, ``_RENAMED_CALLS``)."""
        s = self.session
        adapt = _RENAMED_INPUTS.get(name)
        got = adapt(args, outer) if adapt is not None else None
        if got is not None:
            leaf = s.ops[-1]
            s.ops[-1] = leaf[:6] + got + leaf[8:10] + (None,) * 4 + leaf[14:]
        items = _RENAMED_CALLS.get(name)
        leaf = s.ops[-1]
        if items is not None and len(leaf) > 6 and leaf[6] is not None:
            if leaf[13]:   # (the keywords as recorded: a ``dim`` as the caller gave it)
                kwargs = dict(kwargs, **dict(leaf[13]))
            shapes, dtypes, call = _ordered_record(items(args, kwargs))
            s.ops[-1] = leaf[:6] + (shapes, dtypes) + leaf[8:10] + call + leaf[14:]

    def _in_node(self, handle, args, kwargs, name):
        """An op PyTorch's backward formulas or engine run as another op (NOTE [ Ops
        inside backward nodes ])."""
        if name == "aten::_autograd_sum_to":
            return self._sum_to_as_torch(handle, args, kwargs)
        if name == "aten::stack":
            return self._stack_as_torch(handle, args, kwargs)
        p = self.session._open_raw.get(self._opened[-1])
        if name == "aten::expand":
            dims = kwargs.get("dim")
            if dims is None or kwargs.get("keepdim", True):
                return self.dispatch(handle, args, kwargs, name)
            return self._expand_back_as_torch(handle, args, kwargs, dims)
        if name == "aten::mean":
            if p is not None and p.kind == "bwd" and p.name not in _MEAN_NODES:
                return self.dispatch(handle, args, kwargs, name)
            return self._mean_as_torch(handle, args, kwargs)
        if name == "aten::unbind":
            if p is not None and p.kind == "bwd" and p.name == "StackBackward0":
                return self._unbind_as_selects(handle, args, kwargs, p)
            r = self.dispatch(handle, args, kwargs, name)
            if type(r) is tuple:   # (PyTorch's kernel: one ``aten::select`` per piece)
                leaf, x, dim = self.session.ops[-1], _info(args[0]), kwargs.get("dim", 0)
                self._rows_inside(leaf[0], leaf[3], leaf[4], len(leaf) > 6,
                                  [("aten::select", [x, dim, k], False, ())
                                   for k in range(len(r))])
            return r
        if name == "aten::split":
            if p is not None and p.kind == "bwd" and p.name == "CatBackward0" and \
                    "bounds" in kwargs:
                return self._split_as_narrows(handle, args, kwargs)
            return self.dispatch(handle, args, kwargs, name)
        if name == "aten::view" and p is not None and p.name == "aten::reshape" and \
                _by_strides(args, kwargs):
            # PyTorch's reshape of a tensor that is not contiguous views it by strides
            return self._renamed(handle, args, kwargs, "aten::_reshape_alias",
                                 _reshape_alias_call)
        got = _IN_NODE[name].get(p.name) if p is not None and p.kind == "bwd" else None
        if got is None:
            if name == "aten::_reshape_copy":
                return self.dispatch(handle, args, kwargs, "aten::_unsafe_view")
            return self.dispatch(handle, args, kwargs, name)
        if got[0] == "aten::reshape":
            # a backward formula's reshape: PyTorch's event around its view
            return self._reshape_in_node(handle, args, kwargs, got[1])
        r = self._renamed(handle, args, kwargs, *got)
        rows = _LAYER_ROWS.get(name)
        if rows is not None:
            leaf = self.session.ops[-1]
            self._rows_inside(leaf[0], leaf[3], leaf[4], len(leaf) > 6, rows(args, kwargs, r))
        return r

    def _rows_inside(self, parent, start, end, detailed, rows):
        """Events of no duration inside the kernel's event ``parent`` (which ran from
        ``start`` to ``end``) for work PyTorch's op runs as ops of its own (``_LAYER_ROWS``):
        ``rows`` are ``(name, items, at_end, children)``, ``items`` the op's arguments
        (``_ordered_record``'s), ``children`` rows of the same form inside it."""
        shapes = self.session.record_shapes
        for name, items, at_end, children in rows:
            at = end if at_end else start
            k = self._next()
            if not detailed:
                self._append((k, parent, name, at, at, -1))
            elif shapes:
                sh, dt, call = _ordered_record(items)
                self._append((k, parent, name, at, at, -1, sh, dt, None, 0) + call + (None,))
            else:
                self._append((k, parent, name, at, at, -1, None, None, None, 0, None, None,
                              None, None, None))
            if children:
                self._rows_inside(k, at, at, detailed, children)

    def _stack_as_torch(self, handle, args, kwargs):
        """``stack`` with the rows of PyTorch's CPU kernel inside its event (NOTE [ Stack
        under the profiler ]): ember's one kernel is recorded as the ``aten::cat``."""
        s = self.session
        given = s.noted.pop("aten::stack", None) if s.noted else None
        dim = kwargs.get("dim", 0)
        if given is None:
            given = dim
        shape = args[0]._data.shape if args and isinstance(args[0], Tensor) else None
        last = shape is not None and dim == len(shape)
        opened = self._opened
        i, parent = self._next(), opened[-1]
        start = perf_counter_ns()
        opened.append(i)
        # a new last dim: each input unsqueezed first (their events come before the cat's)
        firsts = [self._next() for _ in args] if last else ()
        try:
            r = self.dispatch(handle, args, kwargs, "aten::cat")
        except BaseException:
            opened.pop()
            self._append((i, parent, "aten::stack", start, perf_counter_ns(), -1))
            raise
        opened.pop()
        ops = s.ops
        cat = ops[-1]
        seq = cat[5]
        if given != dim and seq >= 0:
            s.node_calls[seq] = ("aten::stack", given)   # (for its node's selects)
        detailed = len(cat) > 6
        if detailed and cat[13] is not None:
            kw = tuple((k, given if k == "dim" else v) for k, v in cat[13])
            ops[-1] = cat[:5] + (-1,) + cat[6:13] + (
                kw if last else cat[13],) + cat[14:]
            outer = cat[6:13] + (kw,) + cat[14:]
        else:
            ops[-1] = cat[:5] + (-1,) + cat[6:]
            outer = (None, None, None, 0, None, None, None, None, None) if detailed else ()
        extra = []
        if last:
            extra = [(k, "aten::unsqueeze", start, [_info(t), given])
                     for k, t in zip(firsts, args)]
        elif shape is not None and isinstance(r, Tensor):
            n = (len(args) * shape[dim],) if shape else (len(args),)
            flat = _TensorInfo((shape[:dim] + n + shape[dim + 1:], r._data.dtype, None))
            extra = [(self._next(), "aten::view", cat[4], [flat, list(r._data.shape)])]
        for k, name, at, items in extra:
            detail = ()
            if detailed:
                detail = (None, None, None, 0, None, None, None, None, None)
                if s.record_shapes:
                    shapes, dtypes, call = _ordered_record(items)
                    detail = (shapes, dtypes, None, 0) + call + (None,)
            self._append((k, i, name, at, at, -1) + detail)
        self._append((i, parent, "aten::stack", start, perf_counter_ns(), seq) + outer)
        return r

    def _instant(self, parent, name, items, at):
        """An event of no duration (work ember's kernel does inside) with the arguments
        ``items`` (``_ordered_record``'s); returns its number."""
        k = self._next()
        shapes, dtypes, call = _ordered_record(items)
        self._append((k, parent, name, at, at, -1, shapes, dtypes, None, 0) + call + (None,))
        return k

    def _bool_mask_rows(self, call, parent):
        """PyTorch's conversion of a boolean attention mask to an additive one, inside
        ``aten::scaled_dot_product_attention`` before its kernel: ``where(mask, 0, -inf)``
        (NOTE [ Calls noted for the profiler ]; ember's kernel reads the mask as it is)."""
        mask, q = call[3], call[0]
        if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_ or \
                not isinstance(q, Tensor):
            return
        at = perf_counter_ns()
        dt = q._data.dtype
        number = _TensorInfo(((), dt, ()))
        self._instant(parent, "aten::scalar_tensor", [-math.inf, dt, None, None, None], at)
        where = self._instant(parent, "aten::where", [_info(mask), 0.0, number], at)
        self._instant(where, "aten::scalar_tensor", [0.0, dt, 0, None, None], at)
        self._instant(where, "aten::where", [_info(mask), number, number], at)

    def _mean_as_torch(self, handle, args, kwargs):
        """``mean`` as PyTorch's CPU kernel runs it: ``aten::sum`` into the result, then
        ``aten::div_`` of it (NOTE [ Reductions under the profiler ])."""
        s = self.session
        opened = self._opened
        i, parent = self._next(), opened[-1]
        start = perf_counter_ns()
        opened.append(i)
        try:
            r = self.dispatch(handle, args, kwargs, "aten::sum")
        finally:
            opened.pop()
        ops = s.ops
        leaf = ops[-1]
        detailed = len(leaf) > 6
        outer = leaf[6:] if detailed else ()
        x = args[0] if args and isinstance(args[0], Tensor) else None
        div = ()
        if detailed:
            div = (None, None, None, 0, None, None, None, None, None)
            if s.record_shapes and x is not None and isinstance(r, Tensor):
                dims = kwargs.get("dim")
                n = x._data.size // max(r._data.size, 1)
                items = [_info(x), [] if dims is None else list(dims),
                         bool(kwargs.get("keepdim", False)), kwargs.get("dtype"), _info(r)]
                shapes, dtypes, call = _ordered_record(items)
                ops[-1] = leaf[:5] + (-1, shapes, dtypes) + leaf[8:10] + call + leaf[14:]
                shapes, dtypes, call = _ordered_record([_info(r), n])
                div = (shapes, dtypes, None, 0) + call + (None,)
            else:
                ops[-1] = leaf[:5] + (-1,) + leaf[6:]
        else:
            ops[-1] = leaf[:5] + (-1,)
        self._append((self._next(), i, "aten::div_", leaf[4], leaf[4], -1) + div)
        self._append((i, parent, "aten::mean", start, perf_counter_ns(), leaf[5]) + outer)
        return r

    def _expand_back_as_torch(self, handle, args, kwargs, dims):
        """A reduction's gradient expanded back, after PyTorch's unsqueeze of each reduced
        dim (NOTE [ Reductions under the profiler ])."""
        s = self.session
        g = args[0]._data if args and isinstance(args[0], Tensor) else None
        shape = tuple(kwargs.get("shape", ()))
        if g is None or g.ndim >= len(shape):
            return self.dispatch(handle, args, kwargs, "aten::expand")
        n = len(shape)
        dims = sorted({d % n for d in ((dims,) if type(dims) is int else dims)})
        parent = self._opened[-1]
        start = perf_counter_ns()
        steps = []
        cur = list(g.shape)
        for d in dims:
            steps.append((self._next(), tuple(cur), d))
            cur.insert(d, 1)
        r = self.dispatch(handle, args, kwargs, "aten::expand")
        ops = s.ops
        leaf = ops[-1]
        detailed = len(leaf) > 6
        for k, before, d in steps:
            detail = ()
            if detailed:
                detail = (None, None, None, 0, None, None, None, None, None)
                if s.record_shapes:
                    sh, dt, call = _ordered_record([_TensorInfo((before, g.dtype, None)), d])
                    detail = (sh, dt, None, 0) + call + (None,)
            self._append((k, parent, "aten::unsqueeze", start, start, -1) + detail)
        if detailed and s.record_shapes:
            sh, dt, call = _ordered_record([_TensorInfo((tuple(cur), g.dtype, None)),
                                            list(shape), False])
            ops[-1 - len(steps)] = leaf[:6] + (sh, dt) + leaf[8:10] + call + leaf[14:]
        return r

    def _unbind_as_selects(self, handle, args, kwargs, node):
        """``StackBackward0``'s unbind of the gradient as PyTorch's one ``aten::select``
        per input (NOTE [ Stack under the profiler ])."""
        r = self.dispatch(handle, args, kwargs, "aten::select")
        s = self.session
        ops = s.ops
        first = ops[-1]
        if type(r) is not tuple:
            return r
        detailed = len(first) > 6
        call = s.node_calls.get(node.seq)
        dim = call[1] if type(call) is tuple and call and call[0] == "aten::stack" else \
            kwargs.get("dim", 0)
        g = _info(args[0])
        for k in range(len(r)):
            detail = ()
            if detailed:
                detail = (None, None, None, 0, None, None, None, None)
                if s.record_shapes:
                    shapes, dtypes, rec = _ordered_record([g, dim, k])
                    detail = (shapes, dtypes, None, 0) + rec
            if k == 0:
                if detailed:
                    ops[-1] = first[:6] + detail + first[14:]
            else:
                self._append((self._next(), first[1], "aten::select", first[4], first[4], -1)
                             + detail + ((None,) if detailed else ()))
        return r

    def _split_as_narrows(self, handle, args, kwargs):
        """``CatBackward0``'s split of the gradient as PyTorch's ``aten::narrow`` around
        ``aten::slice`` per input: the first narrow holds the kernel's time, the others
        are instants at its end (views do no work)."""
        r = self.dispatch(handle, args, kwargs, "aten::narrow")
        s = self.session
        ops = s.ops
        first = ops[-1]
        detailed = len(first) > 6
        dim = kwargs.get("dim", 0)
        g = _info(args[0])
        for k, (a, b) in enumerate(kwargs["bounds"]):
            cut = ("aten::slice", [g, dim, a, b, 1], False, ())
            if k:
                self._rows_inside(first[1], first[4], first[4], detailed,
                                  [("aten::narrow", [g, dim, a, b - a], False, (cut,))])
                continue
            if detailed and s.record_shapes:
                shapes, dtypes, rec = _ordered_record([g, dim, a, b - a])
                ops[-1] = first[:6] + (shapes, dtypes) + first[8:10] + rec + first[14:]
            self._rows_inside(first[0], first[3], first[3], detailed, [cut])
        return r

    def _reshape_in_node(self, handle, args, kwargs, items):
        """The view a backward formula takes as PyTorch's ``aten::reshape`` event (``items``
        giving its arguments) around ``aten::view`` or ``aten::_reshape_alias``."""
        s = self.session
        opened = self._opened
        i, parent = self._next(), opened[-1]
        start = perf_counter_ns()
        opened.append(i)
        try:
            if _by_strides(args, kwargs):
                r = self._renamed(handle, args, kwargs, "aten::_reshape_alias",
                                  _reshape_alias_call)
            else:
                r = self.dispatch(handle, args, kwargs, "aten::_unsafe_view" if
                                  handle.overloadpacket._qualified_op_name ==
                                  "aten::_reshape_copy" else "aten::view")
        finally:
            opened.pop()
        detail = ()
        if len(s.ops[-1]) > 6:   # (the detailed route)
            detail = (None, None, None, 0, None, None, None, None, None)
            if s.record_shapes:
                shapes, dtypes, call = _ordered_record(items(args, kwargs))
                detail = (shapes, dtypes, None, 0) + call + (None,)
        self._append((i, parent, "aten::reshape", start, perf_counter_ns(), -1) + detail)
        return r

    def _renamed(self, handle, args, kwargs, name, items):
        """The op recorded as PyTorch's op ``name``, ``items(args, kwargs)`` giving its
        arguments."""
        r = self.dispatch(handle, args, kwargs, name)
        ops = self.session.ops
        leaf = ops[-1]
        if len(leaf) > 6 and leaf[6] is not None:
            shapes, dtypes, call = _ordered_record(items(args, kwargs))
            ops[-1] = leaf[:6] + (shapes, dtypes) + leaf[8:10] + call + leaf[14:]
        return r

    def _sum_to_as_torch(self, handle, args, kwargs):
        """``_autograd_sum_to`` as PyTorch's ``sum_to`` runs it: ``sum`` over the dims
        to reduce, keeping them, then ``view`` without the leading ones (the kernel's own
        two steps, as ops the recorder sees)."""
        g, shape = args[0], tuple(kwargs["shape"])
        lead = g._data.ndim - len(shape)
        dims = list(range(lead)) + [i + lead for i, n in enumerate(shape)
                                    if n == 1 and g._data.shape[i + lead] != 1]
        if not dims or _state.modes or not isinstance(g, Tensor):
            return self.dispatch(handle, args, kwargs, "aten::_autograd_sum_to")
        s = self.session
        p = s._open_raw.get(self._opened[-1])
        if p is not None and p.kind == "bwd" and p.name not in _SUMMING_NODES:
            # the node's formula has returned (``fit_grads`` runs after it): its event
            # ends, and the sum sits beside it, as PyTorch's engine sums after the call
            s.end(p)
        _state.modes = (self,)
        try:
            r = g.sum(dims, keepdim=True)
            if lead:
                r = r.view(shape)
        finally:
            _state.modes = ()
        return r


class _Session:
    """The state of one recording: options, open events and finished events."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, device_timer=None, verbose=False):
        self.record_shapes = record_shapes
        #: ``_ExperimentalConfig(verbose=True)``: events list their Python callers as stacks
        #: (NOTE [ Stacks as PyTorch records them ] in _convert.py)
        self.verbose = verbose
        #: times ops' GPU work when CUDA activity is recorded (NOTE [ CUDA event timing ])
        self.device_timer = device_timer
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._count = itertools.count()
        self.ops = []               # op events, tuples (NOTE [ Profiler recording ])
        self.raw = []               # the other events, ``_Raw``
        self.open = [-1]            # idx of the open events, innermost last (-1: none)
        self._open_raw = {}         # idx -> ``_Raw`` for the open non-op events
        self.mem = {}               # idx -> bytes allocated (less bytes freed) inside it
        self.mem_events = []        # (time ns, bytes, total allocated, address)
        # (time ns, bytes) of the allocations and frees outside every event: the profile's
        # ``[memory]`` events, as PyTorch lists them
        self.loose_mem = []
        # NOTE [ Memory categories ]: per memory event, where it happened (``_FORWARD``,
        # ``_BACKWARD``, ``_OPTIMIZER``); samples ``(time ns, category, address, bytes)``
        # of the tensors whose role ember knows; the times backward passes began
        self.mem_ctx = []
        self.mem_roots = []
        self.backward_starts = []
        self._ctx = _FORWARD
        self.allocated = 0
        self.thread = threading.get_ident()
        self.pid = os.getpid()
        self.active = False
        self.start_ns = None
        self.end_ns = None
        self.n_events = 0
        self._mode = None
        self._tracer = None
        self._tracer_hook = None    # the tracer's ``sys.setprofile`` function
        self._prev_session = None
        self._prev_hook = None
        self._prev_run = None
        self._quiet_node = None     # the event of the node ``run_node`` runs unobserved
        self._node_event = None     # the node event ``backward_node`` opened last
        self.noted = {}             # NOTE [ Calls noted for the profiler ]
        self.node_calls = {}        # a noted call's node's number -> the call
        self._hooks = []
        self._live = {}             # id(weak ref to an allocated array) -> (ref, bytes, id)
        self._counted = set()       # ids of the live arrays counted as allocations
        self._on_free = self._free_callback() if profile_memory else None

    # -- start / stop ------------------------------------------------------------------------

    def start(self):
        from ..autograd import _engine
        self.active = True
        self.start_wall_ns = time.time_ns()
        self.start_ns = perf_counter_ns()
        if self.device_timer is not None:
            self.device_timer.start()
        self._prev_session = current_session()
        _local.session = self
        self._mode = _OpRecorder(self)
        _dispatch.push_mode(self._mode)
        self._prev_hook = _engine.profiler_hook
        _engine.profiler_hook = self.backward_node
        self._prev_run = _engine.profiler_run
        _engine.profiler_run = self.run_node
        if self.with_modules or self.with_stack:
            # (PyTorch's Python tracer records ``nn.Module: Linear_0`` under with_stack; the
            # hooks also note a model's inputs and parameters: NOTE [ Memory categories ])
            self._hook_modules()
        self._hook_optimizers()
        if self.with_stack:
            # NOTE [ Python function events ] in _python_tracer.py
            from ._python_tracer import PythonTracer
            self._tracer = PythonTracer(self, lambda f: not _is_user_file(f))
            self._tracer.start(sys._getframe(1))
            self._tracer_hook = self._tracer.hook

    def stop(self):
        from ..autograd import _engine
        if not self.active:
            return
        if self._tracer is not None:
            self._tracer.stop()
            self._tracer = self._tracer_hook = None
        self.active = False
        _dispatch.pop_mode(self._mode)
        if self.device_timer is not None:
            self.device_timer.stop()
        _engine.profiler_hook = self._prev_hook
        _engine.profiler_run = self._prev_run
        _local.session = self._prev_session
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.end_ns = perf_counter_ns()
        for ev in self._open_raw.values():
            if ev.end is None:
                ev.end = self.end_ns
        self._open_raw = {}
        del self.open[1:]
        self.n_events = next(self._count)

    def recordings(self):
        """Every event recorded, in start order: op tuples and ``_Raw`` objects (NOTE
        [ Profiler recording ]); an op still running when the session stopped is left out."""
        n = self.n_events if not self.active else next(self._count)
        out = [None] * n
        for t in self.ops:
            if t[0] < n:
                out[t[0]] = t
        for r in self.raw:
            if r.idx < n:
                out[r.idx] = r
        return [x for x in out if x is not None]

    # -- user blocks and backward nodes ------------------------------------------------------

    def begin(self, name, kind="user"):
        """Open a user event; returns it, to be passed to ``end``."""
        opened = self.open
        ev = _Raw(next(self._count), name, kind, opened[-1])
        self.raw.append(ev)
        opened.append(ev.idx)
        self._open_raw[ev.idx] = ev
        ev.start = perf_counter_ns()
        return ev

    def end(self, ev):
        """Close ``ev`` (and any event left open inside it)."""
        t = perf_counter_ns()
        opened = self.open
        idx = ev.idx
        if idx in opened:
            open_raw = self._open_raw
            while len(opened) > 1:
                top = opened.pop()
                r = open_raw.pop(top, None)
                if r is not None and r.end is None:
                    r.end = t
                if top == idx:
                    break
        elif ev.end is None:
            ev.end = t

    def in_backward_node(self):
        """Whether the innermost open event is a backward node's (its formula runs)."""
        p = self._open_raw.get(self.open[-1])
        return p is not None and p.kind == "bwd"

    def composite(self, name, inputs, fn, args, kwargs):
        """Run ``fn(*args, **kwargs)``, a function ember composes in Python from several ops,
        inside an op event ``name`` (PyTorch's op: ``aten::dropout``) that the ops it calls
        nest under (NOTE [ Composite op events ]); ``inputs()`` gives PyTorch's op's
        arguments in its order, read only when shapes are recorded. Returns ``fn``'s
        result."""
        opened = self.open
        ev = _Raw(next(self._count), name, "op", opened[-1])
        if self.record_shapes:
            # PyTorch's op's arguments, all of them, in its order (NOTE [ Recorded inputs ])
            ev.shapes, ev.dtypes, strides, values, _ = record_call(inputs(), None)
            ev.call = (ORDERED, strides, values, ())
        self.raw.append(ev)
        opened.append(ev.idx)
        self._open_raw[ev.idx] = ev
        ev.start = perf_counter_ns()
        if name in _RNN_OPS:
            self._cudnn_check(ev)
        try:
            r = fn(*args, **kwargs)
        finally:
            self.end(ev)
        # the node the call's result got: the trace's flow arrow starts at the outer event
        ev.seq = _sequence_nr(r, args)
        return r

    def _cudnn_check(self, ev):
        """PyTorch's recurrent ops first ask whether cuDNN could run them (on the CPU too):
        an ``aten::cudnn_is_acceptable`` of the input, with no work."""
        at = perf_counter_ns()
        k = self._count.__next__()
        if not (self.record_shapes or self.with_stack or self.profile_memory or
                self.with_flops or self.device_timer is not None):
            self.ops.append((k, ev.idx, "aten::cudnn_is_acceptable", at, at, -1))
            return
        detail = (None, None, None, 0, None, None, None, None, None)
        if self.record_shapes and ev.shapes:
            shapes, dtypes, call = _ordered_record([_TensorInfo((ev.shapes[0], ev.dtypes[0],
                                                                 None))])
            detail = (shapes, dtypes, None, 0) + call + (None,)
        self.ops.append((k, ev.idx, "aten::cudnn_is_acceptable", at, at, -1) + detail)

    def scalar_read(self, tensor, fn):
        """``tensor.item()`` (``fn()``, the read) as PyTorch records it: ``aten::item``
        around ``aten::_local_scalar_dense``, both given the tensor. Returns the value."""
        def inputs():
            return (tensor,)

        return self.composite("aten::item", inputs, self.composite,
                              ("aten::_local_scalar_dense", inputs, fn, (), {}), {})

    def truth_read(self, tensor, fn):
        """``bool(tensor)`` (``fn()``, the test) as PyTorch records it: ``aten::is_nonzero``
        around the ``aten::item`` read of ``scalar_read``. Returns the truth value."""
        return self.composite("aten::is_nonzero", lambda: (tensor,), self.scalar_read,
                              (tensor, fn), {})

    # NOTE [ Fused kernels under the profiler ]
    # Ember's fused paths (one pass of a kernel for an Adam step, NOTE [ Fused kernels ] in
    # ember/_kernels) used to decline whenever any mode was on, so a profile showed the
    # unfused ops, with their times and temporaries, rather than what the real run does.
    # The recorder only watches (``_ember_observer``), so a fused path asks
    # ``observing_session()``: with only observers on the stack the kernel runs as it does
    # unprofiled and, once it has run, ``kernel_event`` records it as one op event named
    # as PyTorch names its fused op (``aten::_fused_adamw_``), from the clock reading taken
    # before it (a kernel that turns the arrays down costs the profile nothing, and the
    # ops the caller falls back to are recorded one by one). Nothing records inside a
    # kernel, so the event's number, taken after it, is still in start order. A mode that
    # transforms ops (vmap, a user's dispatch mode) still makes the fused paths decline,
    # as it must see every op. (PyTorch runs its fused op only for ``fused=True`` and lists
    # its loop's ops otherwise; ember keeps its kernel, as running PyTorch's loop under the
    # profiler would show time the real step does not spend.) Measured for that choice
    # (session 12: a 2-layer d=64 GPT, AdamW, thread CPU, 15 interleaved rounds, load ~7):
    # profiled over unprofiled, the optimizer step alone costs ~1.0-1.4x with the kernel
    # kept and 2.7x (flat buckets) to 5.0x (``foreach=False``) when it declines and runs
    # PyTorch's per-parameter ``lerp_``/``mul_``/``addcmul_``/``sqrt``/``div``/``addcdiv_``;
    # the whole training step 1.71-1.74x against 1.97-1.99x. A profile of that loop would
    # put the optimizer at several times its real share of the step, so the kernel stays and
    # is listed under PyTorch's name for the same work (``aten::_fused_adamw_``, one event
    # per parameter with ``foreach=False``, one per bucket of NOTE [ Flat optimizer step ]
    # otherwise); ops ember really runs per bucket (SGD's ``add_``/``mul_`` on the flat
    # buffers) are listed as they run. A ``fused=True`` step that
    # ember runs as several ops (SGD on the CPU) is recorded as PyTorch's one fused op
    # (``as_one_op``), its time covering them all.

    def kernel_event(self, name, inputs, start):
        """Record a fused kernel that ran from ``start`` (``perf_counter_ns``) until now as
        the op event ``name`` (NOTE [ Fused kernels under the profiler ]); ``inputs()``
        gives PyTorch's op's arguments, read only when shapes are recorded. Returns the
        event."""
        end = perf_counter_ns()
        ev = _Raw(next(self._count), name, "op", self.open[-1])
        if self.record_shapes:
            ev.shapes, ev.dtypes, strides, values, _ = record_call(inputs(), None)
            ev.call = (ORDERED, strides, values, ())
        ev.start, ev.end = start, end
        self.raw.append(ev)
        return ev

    def kernel_chain(self, levels, start):
        """Record work that ran from ``start`` until now as op events, each inside the one
        before, as PyTorch's op calls the next (AccumulateGrad's ``aten::detach`` >
        ``detach``): ``levels`` are ``(name, inputs)``, ``inputs()`` giving the op's
        arguments, read only when shapes are recorded."""
        end = perf_counter_ns()
        parent = self.open[-1]
        for name, inputs in levels:
            ev = _Raw(next(self._count), name, "op", parent)
            if self.record_shapes:
                ev.shapes, ev.dtypes, strides, values, _ = record_call(inputs(), None)
                ev.call = (ORDERED, strides, values, ())
            ev.start, ev.end = start, end
            self.raw.append(ev)
            parent = ev.idx

    def as_one_op(self, name, inputs, fn, args, kwargs):
        """Run ``fn(*args, **kwargs)`` as the one op event ``name``, its own ops unseen by
        the observers on the stack: for a call PyTorch runs as one kernel that ember runs as
        two ops (``add_`` with an ``alpha``: a ``mul`` then the ``add_``), whose time the
        event covers. Only with ``observing_session()``; returns ``fn``'s result."""
        opened = self.open
        ev = _Raw(next(self._count), name, "op", opened[-1])
        if self.record_shapes:
            ev.shapes, ev.dtypes, strides, values, _ = record_call(inputs(), None)
            ev.call = (ORDERED, strides, values, ())
        self.raw.append(ev)
        modes = _state.modes
        _state.modes = ()
        ev.start = perf_counter_ns()
        try:
            r = fn(*args, **kwargs)
        finally:
            _state.modes = modes
            ev.end = perf_counter_ns()
        ev.seq = _sequence_nr(r, args)
        return r

    def selection_values(self, fn, *args):
        """Run ``fn(*args)`` (``select_values``: the values of ``max(dim)``/``min(dim)``
        re-gathered so that they carry gradient) unseen, as PyTorch's one ``aten::max``
        kernel computes them; the op event just recorded (that ``aten::max``) takes the
        sequence number of the node the values got, for the trace's flow arrow. Only with
        ``observing_session()``; returns ``fn``'s result."""
        modes = _state.modes
        _state.modes = ()
        try:
            r = fn(*args)
        finally:
            _state.modes = modes
        ops = self.ops
        if ops and ops[-1][2] in ("aten::max", "aten::min") and ops[-1][5] == -1:
            t = ops[-1]
            ops[-1] = t[:5] + (_sequence_nr(r, ()),) + t[6:]
        return r

    def run_node(self, node, grads, token):
        """The engine's call of ``node`` while this session records (``token``: its event
        from ``backward_node``): a node whose formula is PyTorch's one backward op runs with
        the observing modes off the stack (NOTE [ Backward ops ember composes ]). Returns
        the node's gradients. The node's own event ends with its function: what the engine
        does next with the gradients (summing two for one input, ``aten::add_``) sits beside
        it in ``autograd::engine::evaluate_function: ...``, as in PyTorch."""
        if token is None:
            return node._apply(grads)
        inner = self._node_event
        tracer = self._tracer_hook
        if tracer is not None and sys.getprofile() is tracer and _ember_formula(node):
            # an ember formula calls no user code: the Python tracer sleeps while it runs,
            # as it does in an op (NOTE [ Python function events ] in _python_tracer.py)
            sys.setprofile(None)
            try:
                grads_in = self._run_node(node, grads, token)
            finally:
                sys.setprofile(tracer)
        else:
            grads_in = self._run_node(node, grads, token)
        if inner is not None and inner.parent == token.idx:
            self.end(inner)
        return grads_in

    def _run_node(self, node, grads, token):
        if token is not self._quiet_node:
            return node._apply(grads)
        self._quiet_node = None
        modes = _state.modes
        _state.modes = ()
        try:
            return node._apply(grads)
        finally:
            _state.modes = modes

    def backward_node(self, node, token, grads=None):
        """The engine's hook (NOTE [ Profiler recording ]): close the events of the node
        that ran before (``token``), and open those of ``node`` unless it is None; with
        ``record_shapes``, the node's event lists the shapes of the gradients it receives
        (``grads``), as PyTorch's does."""
        tracer = self._tracer_hook
        if tracer is not None and sys.getprofile() is tracer:
            # the Python tracer sleeps through the recorder's own work
            sys.setprofile(None)
            try:
                return self._backward_node(node, token, grads)
            finally:
                sys.setprofile(tracer)
        return self._backward_node(node, token, grads)

    def _backward_node(self, node, token, grads):
        if token is not None:
            self.end(token)
        if node is None or not self.active:
            self._ctx = _FORWARD
            return None
        if self._ctx != _BACKWARD:
            self._ctx = _BACKWARD
            if self.profile_memory:
                self.backward_starts.append(perf_counter_ns())
        name = node.name()
        if name == "AccumulateGrad":
            name = "torch::autograd::AccumulateGrad"
        outer = self.begin("autograd::engine::evaluate_function: " + name, "bwd_outer")
        inner = self._node_event = self.begin(name, "bwd")
        seq = getattr(node, "_seq", -1)
        outer.seq = inner.seq = seq if type(seq) is int else -1  # AccumulateGrad: inf
        op_name = _BACKWARD_OPS.get(name)
        if op_name is not None and name in _BACKWARD_OP_OF and \
                getattr(getattr(node, "_op", None), "name", None) != _BACKWARD_OP_OF[name]:
            op_name = None
        if op_name is not None:
            # the formula runs as PyTorch's one backward op (NOTE [ Backward ops ember
            # composes ]); ``end(outer)`` closes it with the node
            op = self.begin(op_name, "op")
            inputs = _BACKWARD_INPUTS.get(name) if self.record_shapes else None
            items = inputs(node, grads or ()) if inputs is not None else None
            if items is not None:
                op.shapes, op.dtypes, op.call = _ordered_record(items)
            if op_name in _OUT_FORM_INSIDE:
                # PyTorch's function runs its ``out=`` form, an event of the same name, into
                # a buffer shaped as the input
                inner_op = self.begin(op_name, "op")
                if items is not None:
                    inner_op.shapes, inner_op.dtypes, inner_op.call = _ordered_record(
                        list(items) + [items[1]])
            if observing_session() is self:
                self._quiet_node = outer
        if self.record_shapes:
            outer.shapes = []
            drop = getattr(getattr(node, "_op", None), "nondiff_outputs", ())
            if drop and grads:
                # PyTorch's node has no input for an output that takes no gradient
                grads = [g for i, g in enumerate(grads) if i not in drop]
            inner.shapes = [[] if g is None else list(g.shape) for g in grads or ()]
            arrays = [None if g is None else getattr(g, "_data", g) for g in grads or ()]
            inner.dtypes = tuple(["" if a is None else a.dtype for a in arrays])
            # the trace lists the gradients' strides too (NOTE [ Recorded inputs ])
            inner.call = ("bwd", tuple([None if a is None else getattr(a, "strides", None)
                                        for a in arrays]))
        return outer

    # -- memory ------------------------------------------------------------------------------

    def count_allocations(self, idx, result, args):
        """Count the arrays of ``result`` that the op of event ``idx`` allocated: a result
        that views memory the op did not allocate (an input's, as ``expand`` returns, or
        an array counted already) is not an allocation; one that views a buffer the kernel
        made (a reshaped temporary) counts that buffer."""
        outs = result if type(result) in (tuple, list) else (result,)
        inputs = None
        for t in outs:
            if not isinstance(t, Tensor) or t._base is not None:
                continue
            for a in args:
                if t is a:
                    break
            else:
                arr = t._data
                base = getattr(arr, "base", None)
                if base is not None:
                    arr = _buffer(arr)
                    if arr is None or id(arr) in self._counted:
                        continue
                    if inputs is None:
                        inputs = {id(a._data) if b is None else id(b)
                                  for a in _tensors_of(args)
                                  for b in (_buffer(a._data),)}
                    if id(arr) in inputs:
                        continue
                n = int(getattr(arr, "nbytes", 0))
                if n == 0:
                    continue
                t = perf_counter_ns()
                if idx >= 0:
                    self.mem[idx] = self.mem.get(idx, 0) + n
                else:
                    self.loose_mem.append((t, n))
                self.allocated += n
                # the array's id stands for its address: unique while it lives, which is
                # what pairs an allocation with its free in a trace's ``Addr``
                addr = id(arr)
                self.mem_events.append((t, n, self.allocated, addr))
                self.mem_ctx.append(self._ctx)
                try:
                    r = weakref.ref(arr, self._on_free)
                except TypeError:   # an array type without weak references: allocations only
                    continue
                self._live[id(r)] = (r, n, addr)
                self._counted.add(addr)

    def _free_callback(self):
        """The callback of the weak references to the arrays ops allocated: counts the
        free. It holds the session weakly (arrays that outlive the profile must not keep
        its events alive) and ``_live`` holds the references until their arrays go."""
        live = self._live
        session_ref = weakref.ref(self)

        def on_free(r):
            item = live.pop(id(r), None)
            s = session_ref()
            if item is not None and s is not None:
                s._counted.discard(item[2])
                s.freed(item[1], item[2])
        return on_free

    def freed(self, n, addr=0):
        """Count a free of ``n`` bytes (of the array ``addr`` names) against the innermost
        open event."""
        if not self.active or threading.get_ident() != self.thread:
            return
        self.allocated -= n
        t = perf_counter_ns()
        self.mem_events.append((t, -n, self.allocated, addr))
        self.mem_ctx.append(self._ctx)
        top = self.open[-1]
        p = self._open_raw.get(top)
        if p is not None and p.kind == "bwd":
            # the gradients a node received are released by the engine around it: PyTorch
            # counts those frees to ``autograd::engine::evaluate_function: ...``
            top = p.parent
        if top >= 0:
            self.mem[top] = self.mem.get(top, 0) - n
        else:
            self.loose_mem.append((t, -n))

    # -- optimizers and modules -------------------------------------------------------------

    def _hook_optimizers(self):
        """``Optimizer.step#SGD.step`` around each optimizer step, as PyTorch records."""
        try:
            from ..optim import optimizer as _optim
        except ImportError:
            return
        open_steps = []
        paused = []

        def before(opt, args, kwargs):
            if threading.get_ident() == self.thread and self.active:
                cls = type(opt).__name__
                if self.profile_memory:
                    self._sample_optimizer(opt)
                self._ctx = _OPTIMIZER
                open_steps.append(self.begin(f"Optimizer.step#{cls}.step"))
                tracer = self._tracer_hook
                if tracer is not None and sys.getprofile() is tracer and \
                        _ember_step(opt, args, kwargs):
                    # ember's own step calls no user code: the Python tracer sleeps
                    sys.setprofile(None)
                    paused.append(tracer)
                else:
                    paused.append(None)

        def after(opt, args, kwargs):
            if open_steps and threading.get_ident() == self.thread:
                tracer = paused.pop() if paused else None
                if tracer is not None:
                    sys.setprofile(tracer)
                self.end(open_steps.pop())
                self._ctx = _FORWARD
                if self.profile_memory:
                    self._sample_optimizer(opt)

        self._hooks.append(_optim.register_optimizer_step_pre_hook(before))
        self._hooks.append(_optim.register_optimizer_step_post_hook(after))

    def _sample_optimizer(self, opt):
        """Note the arrays of ``opt``'s parameters, gradients and state, now (NOTE
        [ Memory categories ])."""
        t = perf_counter_ns()
        roots = self.mem_roots
        for group in opt.param_groups:
            for p in group["params"]:
                _sample(roots, t, _PARAMETER, p)
                _sample(roots, t, _GRADIENT, p.grad)
                for v in opt.state.get(p, {}).values():
                    _sample(roots, t, _OPTIMIZER_STATE, v)

    # -- modules -----------------------------------------------------------------------------

    def _hook_modules(self):
        try:
            from ..nn.modules import module as _module
        except ImportError:
            return
        pre = getattr(_module, "register_module_forward_pre_hook", None)
        post = getattr(_module, "register_module_forward_hook", None)
        if pre is None or post is None:
            return
        opened_by_module = {}
        index_of = {}     # id(module) -> its index among the modules of its class
        per_class = {}
        depth = [0]       # module calls open

        def before(mod, args):
            key = id(mod)
            depth[0] += 1
            if self.profile_memory and depth[0] == 1:
                # the outermost module's tensor arguments: the model's inputs
                t = perf_counter_ns()
                for a in args:
                    _sample(self.mem_roots, t, _INPUT, a)
                for p in mod.parameters():
                    _sample(self.mem_roots, t, _PARAMETER, p)
            if not self.with_stack:
                # PyTorch records module calls with its Python tracer only: ``with_modules``
                # alone adds no events (its module hierarchy is TorchScript's)
                return
            cls = type(mod).__name__
            if key not in index_of:
                index_of[key] = per_class.get(cls, 0)
                per_class[cls] = index_of[key] + 1
            ev = self.begin(f"nn.Module: {cls}_{index_of[key]}", "module")
            opened_by_module.setdefault(key, []).append(ev)

        def after(mod, args, out):
            depth[0] = max(depth[0] - 1, 0)
            evs = opened_by_module.get(id(mod))
            if evs:
                self.end(evs.pop())

        self._hooks += [pre(before), post(after)]
