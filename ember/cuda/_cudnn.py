"""cuDNN for CUDA tensors, through NVIDIA's cuDNN frontend (``nvidia-cudnn-frontend``).

NOTE [ cuDNN graphs ]
CuPy 14 no longer binds cuDNN, so ember reaches it through NVIDIA's maintained Python
frontend, imported lazily the first time a CUDA convolution or attention runs. Each call
shape becomes one frontend graph -- a convolution forward, data gradient or weight
gradient, or a fused attention forward/backward -- described by the operands' dims,
strides and dtype, built once (heuristics mode A, then the fallback list) and cached under
that description; later calls only bind device pointers and launch on CuPy's current
stream. A workspace comes from CuPy's memory pool per launch.

What cuDNN is asked to do is narrow on purpose: float16/bfloat16/float32 operands, 1-, 2-
or 3-d convolutions (1-d ones as 2-d with a unit height), attention on (B, H, L, E) inputs
with E a multiple of 8 up to 128, causal or unmasked, without dropout. Anything else --
and any call shape the frontend refuses to build -- returns None, and the caller runs the
generic CuPy kernel (im2col and cuBLAS). A refused shape is remembered (``refused``, with
the frontend's reason, for ``ember.cuda`` diagnostics) so it costs one attempt, not one per
call. ``ember.backends.cudnn.enabled = False`` (or ``EMBER_CUDNN=0``) turns the whole path
off; ``allow_tf32`` (True by default, as in PyTorch) lets float32 convolutions use TF32
tensor cores; ``deterministic`` keeps to engines cuDNN marks deterministic.
"""

from __future__ import annotations

import os
import threading

import numpy as np

_cudnn = None          # the frontend module, False when it cannot be imported
_import_error = ""
_handles: dict = {}    # (device id, thread id) -> [cudnn handle, the stream last set on it]
_plans: dict = {}      # call description -> _Plan, or None when refused
_workspaces: dict = {}  # (device id, stream pointer) -> the scratch buffer cuDNN launches use
refused: dict = {}     # call description -> the frontend's reason
_lock = threading.Lock()

_LOWP = {np.dtype(np.float16)}


def _frontend():
    """The ``cudnn`` frontend module, or None (not installed, or disabled)."""
    global _cudnn, _import_error
    if _cudnn is None:
        if os.environ.get("EMBER_CUDNN", "1") == "0":
            _cudnn = False
            _import_error = "EMBER_CUDNN=0"
        else:
            try:
                import cudnn

                cudnn.backend_version()
                _cudnn = cudnn
            except Exception as e:  # noqa: BLE001 - not installed, or no usable library
                _cudnn = False
                _import_error = f"{type(e).__name__}: {e}"
    return _cudnn or None


_settings_module: list = []


def _state():
    """``ember.backends.cudnn``'s settings dict (the module imported once: an import
    statement costs a microsecond per launch)."""
    if not _settings_module:
        from ..backends import cudnn as settings

        _settings_module.append(settings)
    return _settings_module[0]._state


def enabled() -> bool:
    """Whether cuDNN kernels may run (the frontend imports and ``backends.cudnn.enabled``)."""
    return _state()["enabled"] and _frontend() is not None


def version():
    """cuDNN's version number (e.g. 91900), or None when the frontend is unavailable."""
    fe = _frontend()
    return fe.backend_version() if fe is not None else None


def _data_type(dtype):
    fe = _frontend()
    if fe is None:
        return None
    if dtype == np.float32:
        return fe.data_type.FLOAT
    if dtype == np.float16:
        return fe.data_type.HALF
    if dtype.name == "bfloat16":
        return fe.data_type.BFLOAT16
    return None


def _handle():
    import cupy as cp

    dev = cp.cuda.runtime.getDevice()
    key = (dev, threading.get_ident())
    entry = _handles.get(key)
    if entry is None:
        entry = _handles[key] = [_cudnn.create_handle(), None]
    stream = cp.cuda.get_current_stream().ptr
    if entry[1] != stream:  # (a call into cuDNN per launch otherwise)
        _cudnn.set_stream(entry[0], stream)
        entry[1] = stream
    return entry[0]


def _strides(a):
    item = a.itemsize
    return [s // item for s in a.strides]


def _aligned(a):
    """cuDNN reads operands with vector loads: dense strides and 16-byte aligned data."""
    return a.data.ptr % 16 == 0 and (a.flags.c_contiguous or _is_channels_last(a))


def _is_channels_last(a):
    if a.ndim not in (4, 5):
        return False
    order = (0,) + tuple(range(2, a.ndim)) + (1,)
    expected, stride = {}, a.itemsize
    for d in reversed(order):
        expected[d] = stride
        stride *= a.shape[d]
    return all(a.strides[d] == expected[d] or a.shape[d] == 1 for d in range(a.ndim))


def _dense(a):
    import cupy as cp

    return a if _aligned(a) else cp.ascontiguousarray(a)


class _Plan:
    """A built graph, the uids of its operands in call order, its workspace size, and the
    frontend's lowered backend graph with the built plan's index when the direct launch
    applies (a cuDNN backend plan: the public ``execute`` spends tens of microseconds of
    Python per call normalising its arguments)."""

    __slots__ = ("graph", "uids", "workspace", "direct")

    def __init__(self, graph, uids, workspace):
        self.graph, self.uids, self.workspace = graph, uids, workspace
        self.direct = None
        try:
            if graph.selected_engine is None:
                cfg = graph._materialize_backend_plan(graph._plan_index)
                if cfg is not None and cfg.cpp_index is not None:
                    self.direct = (graph._lowered_graph._execute_plan_at_index, cfg.cpp_index)
        except Exception:  # noqa: BLE001 - another frontend version: the public path
            self.direct = None

    def run(self, *arrays):
        ws = _workspace(self.workspace) if self.workspace else None
        pack = {u: a.data.ptr for u, a in zip(self.uids, arrays)}
        ws_ptr = ws.data.ptr if ws is not None else 0
        h = _handle()
        if self.direct is not None:
            launch, index = self.direct
            try:
                launch(pack, ws_ptr, index, h.backend_handle, None, None, None)
                return
            except TypeError:  # the private launch changed its arguments
                self.direct = None
        self.graph.execute(pack, ws_ptr if ws is not None else None, handle=h)


def _workspace(nbytes):
    """A scratch buffer of at least ``nbytes`` for a cuDNN launch on the current stream: one
    per (device, stream), grown when a plan needs more and kept between launches -- the
    stream runs its launches in order, so the next one starts after the last is done with
    it -- where allocating per launch cost each convolution an allocation."""
    import cupy as cp

    key = (cp.cuda.runtime.getDevice(), cp.cuda.get_current_stream().ptr)
    ws = _workspaces.get(key)
    if ws is None or ws.nbytes < nbytes:
        # (the old buffer goes back to the pool for this stream: a later launch on it
        # runs after every launch that used the old one)
        ws = _workspaces[key] = cp.empty(nbytes, dtype=cp.uint8)
    return ws


def _plan(key, build):
    """The cached plan for ``key``, building it with ``build()`` on first use."""
    try:
        return _plans[key]
    except KeyError:
        pass
    with _lock:
        if key in _plans:
            return _plans[key]
        try:
            plan = build()
        except Exception as e:  # noqa: BLE001 - the frontend refused this call shape
            refused[key] = f"{type(e).__name__}: {str(e)[:300]}"
            plan = None
        _plans[key] = plan
        return plan


def _graph(dt):
    from ..backends import cudnn as settings

    fe = _cudnn
    g = fe.pygraph(io_data_type=dt, intermediate_data_type=fe.data_type.FLOAT,
                   compute_data_type=fe.data_type.FLOAT, handle=_handle())
    return g, settings._state


def _finish(g, state, fp32):
    fe = _cudnn
    g.validate()
    g.build_operation_graph()
    g.create_execution_plans([fe.heur_mode.A, fe.heur_mode.FALLBACK])
    if fp32 and not state["allow_tf32"]:
        g.deselect_numeric_notes([fe.numerical_note.TENSOR_CORE])
    if state["deterministic"]:
        g.deselect_numeric_notes([fe.numerical_note.NONDETERMINISTIC])
    g.check_support()
    g.build_plans()
    return g.get_workspace_size()


def _tensor(g, a, name, shape=None, strides=None):
    return g.tensor(name=name, dim=list(a.shape if shape is None else shape),
                    stride=_strides(a) if strides is None else list(strides),
                    data_type=_data_type(a.dtype))


def _row_major(shape):
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return out[::-1]


# -- convolution --------------------------------------------------------------------------------


def _conv_ok(x, w, groups):
    return (x.dtype == w.dtype and _data_type(x.dtype) is not None and x.ndim in (3, 4, 5)
            and enabled())


def _as_2d(a, nd):
    """1-d convolution operands as 2-d ones with a unit height."""
    return a.reshape(a.shape[:2] + (1,) + a.shape[2:]) if nd == 1 else a


def _geometry(stride, padding, dilation, nd):
    if nd == 1:
        return [1] + list(stride), [0] + list(padding), [1] + list(dilation)
    return list(stride), list(padding), list(dilation)


#: the frontend's node for each convolution kind, and its two operands' port names
_CONV_NODES = {"fprop": ("conv_fprop", "image", "weight"),
               "dgrad": ("conv_dgrad", "loss", "filter"),
               "wgrad": ("conv_wgrad", "image", "loss")}


# NOTE [ Remembered convolution calls ]
# A convolution's geometry, output shape and plan follow from its operands' shapes, strides
# and dtypes, its arguments and cuDNN's settings -- the same at every step of a network --
# and working them out again cost each call ~16 us of host time (an H100's launch: 7 us).
# A call that ran cuDNN on its operands as given (no layout copy) is remembered under that
# signature with its plan and output shape; the next call with the same signature and
# 16-byte-aligned operands allocates the output and launches. Bounded like the plan cache.
_remembered: dict = {}
_REMEMBERED_MAX = 4096


def _call_key(kind, a, b, args):
    """The signature of NOTE [ Remembered convolution calls ], or None (cuDNN off)."""
    s = _state()
    if not s["enabled"]:
        return None
    return (kind, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, args,
            s["allow_tf32"], s["deterministic"])


def _rerun(key, a, b):
    """The remembered call ``key`` run on ``a``, ``b``; None when there is none to run."""
    if key is None:
        return None
    try:
        hit = _remembered.get(key)
    except TypeError:  # an argument that is a list: no shortcut
        return None
    if hit is None or a.data.ptr % 16 or b.data.ptr % 16:
        return None
    import cupy as cp

    plan, shape, final = hit
    out = cp.ndarray(shape, a.dtype)
    plan.run(a, b, out)
    return out if final is None else out.reshape(final)


def _conv(kind, a, b, out_shape, stride, padding, dilation, remember=None, final=None):
    """One convolution graph of ``kind`` on operands ``a``, ``b`` (N-d, 1-d ones already
    given a unit height) writing a new array of ``out_shape``; None when cuDNN refuses.
    ``remember``: the call's signature, kept with the plan when the operands needed no copy
    (NOTE [ Remembered convolution calls ]), the result to be reshaped to ``final``."""
    import cupy as cp

    if 0 in a.shape or 0 in b.shape or min(out_shape) <= 0:
        return None
    a0, b0 = a, b
    a, b = _dense(a), _dense(b)
    key = (kind, a.shape, a.strides, b.shape, b.strides, tuple(out_shape), a.dtype.str,
           tuple(stride), tuple(padding), tuple(dilation), _settings_key())

    def build():
        node, port_a, port_b = _CONV_NODES[kind]
        g, state = _graph(_data_type(a.dtype))
        A, B = _tensor(g, a, "a"), _tensor(g, b, "b")
        out = getattr(g, node)(**{port_a: A, port_b: B}, padding=list(padding),
                               stride=list(stride), dilation=list(dilation),
                               compute_data_type=_cudnn.data_type.FLOAT, name=kind)
        out.set_output(True).set_data_type(_data_type(a.dtype))
        out.set_dim(list(out_shape)).set_stride(_row_major(out_shape))
        ws = _finish(g, state, a.dtype == np.float32)
        return _Plan(g, (A.get_uid(), B.get_uid(), out.get_uid()), ws)

    plan = _plan(key, build)
    if plan is None:
        return None
    out = cp.ndarray(tuple(out_shape), a.dtype)
    plan.run(a, b, out)
    if remember is not None and a is a0 and b is b0:
        if len(_remembered) >= _REMEMBERED_MAX:
            _remembered.clear()
        try:
            _remembered[remember] = (plan, tuple(out_shape), final)
        except TypeError:  # unhashable arguments: nothing to remember
            pass
    return out


def _unit_height(shape, nd):
    """A 1-d convolution's shape as 2-d (a unit height); others as they are."""
    shape = list(shape)
    return shape[:2] + [1] + shape[2:] if nd == 1 else shape


def conv_forward(x, w, stride, padding, dilation, groups):
    """``conv(x, w)`` through cuDNN (no bias), or None when cuDNN does not take it."""
    call = _call_key("fprop", x, w, (stride, padding, dilation, groups))
    y = _rerun(call, x, w)
    if y is not None:
        return y
    if not _conv_ok(x, w, groups):
        return None
    nd = x.ndim - 2
    st, pad, dil = _geometry(stride, padding, dilation, nd)
    x, w = _as_2d(x, nd), _as_2d(w, nd)
    out_sp = [(x.shape[2 + i] + 2 * pad[i] - dil[i] * (w.shape[2 + i] - 1) - 1) // st[i] + 1
              for i in range(len(st))]
    shape = [x.shape[0], w.shape[0]] + out_sp
    final = tuple(shape[:2] + shape[3:]) if nd == 1 else None
    y = _conv("fprop", x, w, shape, st, pad, dil, call, final)
    return y.reshape(final) if y is not None and nd == 1 else y


def conv_input_grad(g_out, w, input_shape, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in its input through cuDNN, or None."""
    call = _call_key("dgrad", g_out, w, (tuple(input_shape), stride, padding, dilation,
                                         groups))
    dx = _rerun(call, g_out, w)
    if dx is not None:
        return dx
    if not _conv_ok(g_out, w, groups):
        return None
    nd = g_out.ndim - 2
    st, pad, dil = _geometry(stride, padding, dilation, nd)
    final = tuple(input_shape) if nd == 1 else None
    dx = _conv("dgrad", _as_2d(g_out, nd), _as_2d(w, nd), _unit_height(input_shape, nd),
               st, pad, dil, call, final)
    return dx.reshape(final) if dx is not None and nd == 1 else dx


def conv_weight_grad(x, g_out, weight_shape, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in its weight through cuDNN, or None."""
    call = _call_key("wgrad", x, g_out, (tuple(weight_shape), stride, padding, dilation,
                                         groups))
    dw = _rerun(call, x, g_out)
    if dw is not None:
        return dw
    if not _conv_ok(x, g_out, groups):
        return None
    nd = x.ndim - 2
    st, pad, dil = _geometry(stride, padding, dilation, nd)
    final = tuple(weight_shape) if nd == 1 else None
    dw = _conv("wgrad", _as_2d(x, nd), _as_2d(g_out, nd), _unit_height(weight_shape, nd),
               st, pad, dil, call, final)
    return dw.reshape(final) if dw is not None and nd == 1 else dw


def _settings_key():
    s = _state()
    return (s["allow_tf32"], s["deterministic"])


# -- attention ----------------------------------------------------------------------------------


def attention_ok(q, k, v):
    """Whether cuDNN's fused attention takes these (B, H, L, E) operands."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or q.dtype not in (np.float16,) and \
            q.dtype.name != "bfloat16":
        return False
    if not (q.dtype == k.dtype == v.dtype) or q.shape[:2] != k.shape[:2] or \
            k.shape[:3] != v.shape[:3]:
        return False
    e, ev = q.shape[-1], v.shape[-1]
    if e != k.shape[-1] or e % 8 or ev % 8 or e > 128 or ev > 128:
        return False
    if min(q.shape[2], k.shape[2]) == 0 or q.shape[0] == 0 or q.shape[1] == 0:
        return False
    return all(t.strides[-1] == t.itemsize and t.data.ptr % 16 == 0 for t in (q, k, v)) \
        and enabled()


def attention_plan(q, k, v, scale, causal):
    """The cached forward plan for these operands (built on first use), or None."""
    b, h, lq, _ = q.shape
    o_shape = [b, h, lq, v.shape[-1]]
    key = ("sdpa", q.shape, q.strides, k.shape, k.strides, v.shape, v.strides, q.dtype.str,
           float(scale), bool(causal))

    def build():
        g, state = _graph(_data_type(q.dtype))
        Q, K, V = _tensor(g, q, "q"), _tensor(g, k, "k"), _tensor(g, v, "v")
        O, S = g.sdpa(q=Q, k=K, v=V, generate_stats=True, attn_scale=float(scale),
                      use_causal_mask=bool(causal), name="sdpa")
        O.set_output(True).set_dim(o_shape).set_stride(_row_major(o_shape))
        O.set_data_type(_data_type(q.dtype))
        S.set_output(True).set_data_type(_cudnn.data_type.FLOAT)
        S.set_dim([b, h, lq, 1]).set_stride([h * lq, lq, 1, 1])
        ws = _finish(g, state, False)
        return _Plan(g, (Q.get_uid(), K.get_uid(), V.get_uid(), O.get_uid(), S.get_uid()), ws)

    return _plan(key, build)


def attention_forward(q, k, v, scale, causal):
    """``(o, stats)`` of fused attention: the output and each query row's log-sum-exp of
    its scaled scores (float32, (B, H, L, 1)), which the backward reads; None when cuDNN
    refuses these operands."""
    import cupy as cp

    plan = attention_plan(q, k, v, scale, causal)
    if plan is None:
        return None
    b, h, lq, _ = q.shape
    o = cp.empty((b, h, lq, v.shape[-1]), dtype=q.dtype)
    st = cp.empty((b, h, lq, 1), dtype=cp.float32)
    plan.run(q, k, v, o, st)
    return o, st


def attention_backward(g_out, q, k, v, o, stats, scale, causal):
    """``(dq, dk, dv)`` of fused attention from the forward's output and stats, or None."""
    import cupy as cp

    g_out = g_out if g_out.strides[-1] == g_out.itemsize and g_out.data.ptr % 16 == 0 \
        else cp.ascontiguousarray(g_out)
    key = ("sdpa_bwd", q.shape, q.strides, k.shape, k.strides, v.shape, v.strides, o.strides,
           g_out.strides, q.dtype.str, float(scale), bool(causal))

    def build():
        g, state = _graph(_data_type(q.dtype))
        Q, K, V = _tensor(g, q, "q"), _tensor(g, k, "k"), _tensor(g, v, "v")
        O, DO = _tensor(g, o, "o"), _tensor(g, g_out, "do")
        S = g.tensor(name="stats", dim=list(stats.shape), stride=_strides(stats),
                     data_type=_cudnn.data_type.FLOAT)
        DQ, DK, DV = g.sdpa_backward(q=Q, k=K, v=V, o=O, dO=DO, stats=S,
                                     attn_scale=float(scale), use_causal_mask=bool(causal),
                                     name="sdpa_bwd")
        for t, a in ((DQ, q), (DK, k), (DV, v)):
            t.set_output(True).set_dim(list(a.shape)).set_stride(_row_major(a.shape))
            t.set_data_type(_data_type(q.dtype))
        ws = _finish(g, state, False)
        return _Plan(g, (Q.get_uid(), K.get_uid(), V.get_uid(), O.get_uid(), DO.get_uid(),
                         S.get_uid(), DQ.get_uid(), DK.get_uid(), DV.get_uid()), ws)

    plan = _plan(key, build)
    if plan is None:
        return None
    dq, dk, dv = (cp.empty(a.shape, dtype=a.dtype) for a in (q, k, v))
    plan.run(q, k, v, o, g_out, stats, dq, dk, dv)
    return dq, dk, dv
