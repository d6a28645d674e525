"""CUDA's own kernels: where the generic CuPy kernel of an op is not the fast way.

NOTE [ CUDA kernels ]
Every op runs on CUDA through its array-generic kernel with ``xp = cupy``. A few ops get a
CUDA kernel of their own, registered as the op's 'cuda' override when the backend is first
initialised (``register``): convolutions (forward and both adjoints) through cuDNN
(NOTE [ cuDNN graphs ] in ``_cudnn.py``), each falling back to the generic kernel for the
shapes cuDNN refuses; batch norm as two passes for the statistics and one for the output
(NOTE [ Fused CUDA rows ] in ember/_kernels/_cuda.py), where the generic kernel makes six;
and fused attention, an op of its own
(``_scaled_dot_product_cudnn_attention``, as PyTorch names its cuDNN attention) that
``scaled_dot_product_attention`` hands CUDA inputs to when cuDNN takes them
(``nn_attention.fused_attention``). It returns the output and the per-row log-sum-exp of
the scores; its backward recomputes the probabilities inside cuDNN instead of keeping an
(L, S) matrix per head, so attention's memory is linear in the sequence length.
"""

from __future__ import annotations

import functools

from . import _cudnn

_registered = False


def _conv_forward(generic, x, w, b, *, stride, padding, dilation, groups):
    y = _cudnn.conv_forward(x, w, stride, padding, dilation, groups)
    if y is None:
        return generic(x, w, b, stride=stride, padding=padding, dilation=dilation,
                       groups=groups)
    if b is not None:
        y += b.reshape((-1,) + (1,) * (x.ndim - 2))
    return y


def _conv_input_grad(generic, g, w, *, input_shape, stride, padding, dilation, groups):
    gx = _cudnn.conv_input_grad(g, w, input_shape, stride, padding, dilation, groups)
    if gx is None:
        return generic(g, w, input_shape=input_shape, stride=stride, padding=padding,
                       dilation=dilation, groups=groups)
    return gx


def _conv_weight_grad(generic, x, g, *, weight_shape, stride, padding, dilation, groups):
    gw = _cudnn.conv_weight_grad(x, g, weight_shape, stride, padding, dilation, groups)
    if gw is None:
        return generic(x, g, weight_shape=weight_shape, stride=stride, padding=padding,
                       dilation=dilation, groups=groups)
    return gw


def _conv_backward(generic, g, x, w, *, stride, padding, dilation):
    groups = x.shape[1] // w.shape[1]
    gx = _cudnn.conv_input_grad(g, w, x.shape, stride, padding, dilation, groups)
    gw = _cudnn.conv_weight_grad(x, g, w.shape, stride, padding, dilation, groups)
    if gx is None or gw is None:
        return generic(g, x, w, stride=stride, padding=padding, dilation=dilation)
    return gx, gw


# -- batch norm (NOTE [ Fused CUDA rows ] in ember/_kernels/_cuda.py) ---------------------------


def _batch_norm(generic, x, w, b, mean, var, *, training, eps):
    from .._kernels import _cuda

    if w is None or w.dtype.kind == "f":
        # the statistics stay float32 for half inputs, as PyTorch's CUDA kernels keep them:
        # the backward divides by rstd's square, and with few values per channel a float16
        # rstd is visibly wrong
        r = _cuda.batch_norm(x, w, b, mean, var, training, eps)
        if r is not None:
            return r[0].reshape(x.shape), r[1], r[2]
    return generic(x, w, b, mean, var, training=training, eps=eps)


def _batch_norm_backward(generic, g, x, w, m, rstd):
    from .._kernels import _cuda

    r = _cuda.batch_norm_backward(g, x, w, m, rstd)
    if r is None:
        return generic(g, x, w, m, rstd)
    return r[0].reshape(x.shape), r[1], r[2]


# -- half-precision products: cuBLAS takes float16/bfloat16 directly (float32 accumulation),
# where the generic kernels widen both operands to float32 first -------------------------------


def _half(a, b):
    return a is not None and b is not None and a.dtype == b.dtype and \
        a.dtype.name in ("float16", "bfloat16") and a.ndim >= 1 and b.ndim >= 1


def _matmul(generic, a, b):
    if _half(a, b):
        import cupy as cp

        try:
            return cp.matmul(a, b)
        except (TypeError, NotImplementedError, ValueError):  # a CuPy without bfloat16 GEMM
            pass
    return generic(a, b)


def _linear(generic, x, w, b):
    if _half(x, w) and (b is None or b.dtype == x.dtype):
        import cupy as cp

        try:
            y = cp.matmul(x, w.T)
        except (TypeError, NotImplementedError, ValueError):
            return generic(x, w, b)
        if b is not None:
            y += b
        return y
    return generic(x, w, b)


# -- activations: one pass, float32 inside, for float32/float16/bfloat16 -----------------------


def _one_pass(fused_name, generic, a):
    from .._kernels import _cuda

    r = getattr(_cuda, fused_name)(a)
    return r if r is not None else generic(a)


# -- fused attention ----------------------------------------------------------------------------


def _causal(cp, lq, lk):
    return cp.tri(lq, lk, dtype=bool)


def _attention_kernel(q, k, v, *, scale, causal):
    import cupy as cp

    r = _cudnn.attention_forward(q, k, v, scale, causal)
    if r is not None:
        return r
    # refused after all (the caller checked the plan first): the generic kernel, whose
    # second result (the probabilities) the backward below recognises by its shape
    from .._ops import nn_attention

    mask = _causal(cp, q.shape[-2], k.shape[-2]) if causal else None
    return nn_attention._sdpa_kernel(cp, q, k, v, mask, scale=scale)


def _attention_backward_kernel(g, q, k, v, o, stats, *, scale, causal, needs):
    import cupy as cp

    from .._ops import nn_attention

    if stats.shape[-1] == 1 and stats.dtype == cp.float32:
        r = _cudnn.attention_backward(g, q, k, v, o, stats, scale, causal)
        if r is not None:
            return r
        mask = _causal(cp, q.shape[-2], k.shape[-2]) if causal else None
        o, p = nn_attention._sdpa_kernel(cp, q, k, v, mask, scale=scale)
    else:
        p = stats
    return nn_attention._sdpa_backward_kernel(cp, g, q, k, v, o, p, scale=scale, needs=needs)


def _attention_vjp(grads, q, k, v, *, scale, causal, out, needs_input_grad):
    from .. import _dispatch
    from .._ops import nn_attention

    if _dispatch.state.grad_enabled:
        # create_graph: the differentiable composite (double backward)
        mask = None
        if causal:
            from .._ops.creation import ones

            mask = ones(q.shape[-2], k.shape[-2], dtype=_bool(), device=q.device).tril()
        return nn_attention._sdpa_vjp(grads, q, k, v, mask, scale=scale, out=out,
                                      needs_input_grad=tuple(needs_input_grad) + (False,))[:3]
    return _dispatch.apply(_attention_backward_op, (grads[0], q, k, v, out[0], out[1]),
                           dict(scale=scale, causal=causal, needs=tuple(needs_input_grad)))


def _attention_jvp(x_dots, q, k, v, *, scale, causal, out):
    # the probabilities are not kept (the stats are): recompute them from the inputs
    from .._ops import nn_attention
    from .._ops.creation import ones

    mask = ones(q.shape[-2], k.shape[-2], dtype=_bool(), device=q.device).tril() \
        if causal else None
    s = (q @ k.transpose(-1, -2)) * scale
    p = (s.masked_fill(~mask, float("-inf")) if causal else s).softmax(-1)
    return nn_attention._sdpa_jvp(tuple(x_dots) + (None,), q, k, v, mask, scale=scale,
                                  out=(out[0], p))


def _bool():
    from .._core import dtype as _dt

    return _dt.bool_


_attention_op = None
_attention_backward_op = None


def fused_attention(query, key, value, is_causal, scale):
    """``scaled_dot_product_attention`` of CUDA tensors through cuDNN, or None when cuDNN
    does not take them (the caller then runs the generic kernel)."""
    from ..amp.autocast_mode import get_autocast_dtype, is_autocast_enabled
    from ..backends import cuda as cuda_settings

    if not cuda_settings._sdp_state.get("cudnn", True) and \
            not cuda_settings._sdp_state.get("flash", True):
        return None
    if is_autocast_enabled("cuda"):
        dt = get_autocast_dtype("cuda")
        query, key, value = (t.to(dt) if t.dtype.is_floating_point else t
                             for t in (query, key, value))
    q, k, v = query._data, key._data, value._data
    if not _cudnn.attention_ok(q, k, v) or \
            _cudnn.attention_plan(q, k, v, scale, is_causal) is None:
        return None
    from .. import _dispatch

    out, _ = _dispatch.apply(_attention_op, (query, key, value),
                             dict(scale=float(scale), causal=bool(is_causal)))
    return out


def _matmul_precision(value):
    """Point CuPy's float32 products at TF32 tensor cores ("high", "medium") or full float32
    ("highest"), as ``torch.set_float32_matmul_precision`` does for cuBLAS."""
    import numpy as np
    from cupy._core import _routines_linalg as linalg

    mode = linalg.COMPUTE_TYPE_TF32 if value in ("high", "medium") else \
        linalg.COMPUTE_TYPE_DEFAULT
    linalg.set_compute_type(np.float32, mode)
    linalg.set_compute_type(np.complex64, mode)


def register():
    """Give the CUDA backend its own kernels (once, when CUDA is first initialised)."""
    global _registered, _attention_op, _attention_backward_op
    if _registered:
        return
    import cupy as cp

    from .._ops import nn_attention, nn_conv, nn_norm
    from .._ops._registry import Op

    for op, fn in ((nn_conv.conv_op, _conv_forward),
                   (nn_conv.conv_input_grad_op, _conv_input_grad),
                   (nn_conv.conv_weight_grad_op, _conv_weight_grad),
                   (nn_conv.conv_backward_op, _conv_backward),
                   (nn_norm.batch_norm_op, _batch_norm),
                   (nn_norm.batch_norm_backward_op, _batch_norm_backward)):
        op.register_kernel("cuda", functools.partial(fn, functools.partial(op.kernel, cp)))
    from .._ops import linalg, nn_ops

    linalg.matmul_op.register_kernel("cuda", functools.partial(
        _matmul, functools.partial(linalg.matmul_op.kernel, cp)))
    nn_ops.linear_op.register_kernel("cuda", functools.partial(
        _linear, functools.partial(nn_ops.linear_op.kernel, cp)))
    for op, name in ((nn_ops.gelu_tanh_op, "gelu_tanh"), (nn_ops.silu_op, "silu")):
        op.register_kernel("cuda", functools.partial(_one_pass, name,
                                                     functools.partial(op.kernel, cp)))
    _attention_op = Op("_scaled_dot_product_cudnn_attention",
                       overrides={"cuda": _attention_kernel}, vjp=_attention_vjp,
                       jvp=_attention_jvp, nondiff_outputs=(1,))
    _attention_op.saved_outputs = (0, 1)
    _attention_op.node_name = "ScaledDotProductCudnnAttentionBackward0"
    _attention_backward_op = Op("_scaled_dot_product_cudnn_attention_backward",
                                overrides={"cuda": _attention_backward_kernel})
    nn_attention.fused_attention["cuda"] = fused_attention
    from .._settings import settings

    try:
        _matmul_precision(settings.float32_matmul_precision)
        settings.on_matmul_precision.append(_matmul_precision)
    except (ImportError, AttributeError):  # a CuPy without per-dtype compute types
        pass
    _registered = True
