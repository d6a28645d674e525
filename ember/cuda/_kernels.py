"""CUDA's own kernels: where the generic CuPy kernel of an op is not the fast way.

NOTE [ CUDA kernels ]
Every op runs on CUDA through its array-generic kernel with ``xp = cupy``. A few ops get a
CUDA kernel of their own, registered as the op's 'cuda' override when the backend is first
initialised (``register``): convolutions (forward and both adjoints) through cuDNN
(NOTE [ cuDNN graphs ] in ``_cudnn.py``), each falling back to the generic kernel for the
shapes cuDNN refuses; batch norm as two passes for the statistics and one for the output
(NOTE [ Fused CUDA rows ] in ember/_kernels/_cuda.py), where the generic kernel makes six;
max pooling (2-d) as one kernel and the float32 <-> float16/bfloat16 casts of ``_to_copy``
(autocast's casts) as one launch each (NOTE [ Training-step CUDA kernels ] in
ember/_kernels/_cuda.py); ``matmul``/``linear`` straight to cuBLAS's GemmEx (``gemm``:
CuPy's own ``matmul`` ran bfloat16 products as float32 GEMMs with a cast of each operand,
all of a GPT-2 step's backward GEMMs, and costs three GEMM launches of host time for
float32), and sums over an end of the dims as a GEMM against ones (``gemm_sum``); batch
norm's running statistics
(``nn_norm.running_stats_kernels``);
and fused attention, an op of its own
(``_scaled_dot_product_cudnn_attention``, as PyTorch names its cuDNN attention) that
``scaled_dot_product_attention`` hands CUDA inputs to when cuDNN takes them
(``nn_attention.fused_attention``). It returns the output and the per-row log-sum-exp of
the scores; its backward recomputes the probabilities inside cuDNN instead of keeping an
(L, S) matrix per head, so attention's memory is linear in the sequence length.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .._core import dtype as _dt
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


def _to_copy(generic, a, *, dtype):
    from .._kernels import _cuda

    r = _cuda.convert(a, dtype)  # float32 <-> half types: one launch (autocast's casts)
    return r if r is not None else generic(a, dtype=dtype)


def _max_pool(generic, x, *, kernel_size, stride, padding, dilation, ceil_mode, input_shape):
    from .._kernels import _cuda
    from .._ops.nn_pool import _out_size

    if len(kernel_size) == 2 and x.ndim == 4:
        out = tuple(_out_size(x.shape[2 + i], kernel_size[i], stride[i], padding[i],
                              dilation[i], ceil_mode) for i in range(2))
        r = _cuda.max_pool2d(x, kernel_size, stride, padding, dilation, out)
        if r is not None:
            return r
    return generic(x, kernel_size=kernel_size, stride=stride, padding=padding,
                   dilation=dilation, ceil_mode=ceil_mode, input_shape=input_shape)


# -- products through cuBLAS's GemmEx: half types take float16/bfloat16 directly (float32
# accumulation), where the generic kernels widen both operands to float32 first; float32
# and float64 skip CuPy's matmul, whose host cost per call (26 us on an H100) was three
# times the GEMM launch's (9 us) -------------------------------------------------------------


# cuBLAS's names for the operand types and the compute types (cudaDataType_t,
# cublasComputeType_t): constants of the CUDA API, stable across versions
_CUDA_R_OF = {np.dtype(np.float16): 2, np.dtype(_dt.bfloat16.np): 14,
              np.dtype(np.float32): 0, np.dtype(np.float64): 1}
_HALF_TYPES = (np.dtype(np.float16), np.dtype(_dt.bfloat16.np))
_COMPUTE_32F = 68
_COMPUTE_32F_FAST_TF32 = 77
_COMPUTE_64F = 70
_GEMM_DEFAULT = -1
#: the compute type of float32 products: TF32 when the float32 matmul precision allows it
#: (``_matmul_precision``), full float32 otherwise
_compute_f32 = [_COMPUTE_32F]
_ONE = np.ones((), np.float32)
_ZERO = np.zeros((), np.float32)
_ONE64 = np.ones((), np.float64)
_ZERO64 = np.zeros((), np.float64)
# their addresses, read once (``ndarray.ctypes`` builds an object at each access)
_ONE_PTR, _ZERO_PTR = _ONE.ctypes.data, _ZERO.ctypes.data
_ONE64_PTR, _ZERO64_PTR = _ONE64.ctypes.data, _ZERO64.ctypes.data


def _blas_layout(cp, a):
    """``(array, transposed, ld)``: a 2-d operand as column-major cuBLAS reads it -- a
    row-major matrix is its transpose read as is, a column-major one is read transposed --
    copying only a layout cuBLAS cannot read (negative or non-unit inner strides)."""
    r, c = a.shape
    s0, s1 = a.strides
    it = a.itemsize
    if s0 % it == 0 and s1 % it == 0 and s0 >= 0 and s1 >= 0:
        s0, s1 = s0 // it, s1 // it
        if (s1 == 1 or c == 1) and (r == 1 or s0 >= c):
            return a, False, max(s0 if r > 1 else c, c, 1)
        if (s0 == 1 or r == 1) and (c == 1 or s1 >= r):
            return a, True, max(s1 if c > 1 else r, r, 1)
    a = cp.ascontiguousarray(a)
    return a, False, max(c, 1)


_modules: list = []


def _cublas():
    """(cupy, CuPy's cuBLAS bindings), imported once."""
    if not _modules:
        import cupy
        from cupy_backends.cuda.libs import cublas

        _modules.extend((cupy, cublas))
    return _modules[0], _modules[1]


def _cublas_handle(cp, cublas):
    """The current device's cuBLAS handle, bound to the current stream: the handle is
    CuPy's, shared with its own routines, which set whatever stream they run on, so the
    stream is set at every call (a fraction of a microsecond), never assumed."""
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    return handle


def gemm(a, b, exact=False):
    """``a @ b`` for CuPy operands of one dtype (float16, bfloat16, float32 or float64)
    through cuBLAS's GemmEx, as PyTorch multiplies matrices on CUDA: half types accumulate in
    float32 and round once; float32 uses TF32 tensor cores when the float32 matmul precision
    allows it, unless ``exact`` (sums). Covers 2-d by 2-d, a stack by a matrix (one GEMM over
    the stack's rows) and two stacks with broadcast batch dims (one strided-batched GEMM).

    Args:
        a, b: CuPy arrays of at least two dims, ``a.shape[-1] == b.shape[-2]``.
        exact: keep float32 products in full float32 whatever the precision setting.

    Returns:
        The product as a new CuPy array, or None for what it does not cover (1-d operands,
        other or mixed dtypes), for the caller to compute another way.
    """
    cp, cublas = _cublas()
    dt = _CUDA_R_OF.get(a.dtype)
    if dt is None or a.dtype != b.dtype or a.ndim < 2 or b.ndim < 2 or \
            a.shape[-1] != b.shape[-2]:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.ndim == 2 and a.ndim > 2:
        lead = a.shape[:-2]
        y = gemm(a.reshape(-1, k), b, exact)
        return None if y is None else y.reshape(lead + (m, n))
    batch = () if a.ndim == b.ndim == 2 else np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = cp.ndarray(batch + (m, n), a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    if dt == 1:
        compute, one, zero = _COMPUTE_64F, _ONE64_PTR, _ZERO64_PTR
    else:
        compute, one, zero = (_COMPUTE_32F if exact or dt != 0 else _compute_f32[0],
                              _ONE_PTR, _ZERO_PTR)
    handle = _cublas_handle(cp, cublas)
    if not batch:
        a, ta, lda = _blas_layout(cp, a)
        b, tb, ldb = _blas_layout(cp, b)
        # row-major C = A B is column-major C^T = B^T A^T: B's layout comes first
        cublas.gemmEx(handle, int(tb), int(ta), n, m, k, one, b.data.ptr, dt, ldb,
                      a.data.ptr, dt, lda, zero, out.data.ptr, dt, n, compute, _GEMM_DEFAULT)
        return out
    count = math.prod(batch)
    stacks = []
    for x in (a, b):
        x = cp.broadcast_to(x, batch + x.shape[-2:]).reshape((count,) + x.shape[-2:])
        if x.strides[0] % x.itemsize or x.strides[0] < 0:
            x = cp.ascontiguousarray(x)
        first = x[0]
        read, t, ld = _blas_layout(cp, first)
        if read is not first:  # cuBLAS cannot read these matrices in place: the stack too
            x = cp.ascontiguousarray(x)
            _, t, ld = _blas_layout(cp, x[0])
        stacks.append((x, t, ld, x.strides[0] // x.itemsize))
    (a, ta, lda, sa), (b, tb, ldb, sb) = stacks
    cublas.gemmStridedBatchedEx(handle, int(tb), int(ta), n, m, k, one, b.data.ptr, dt,
                                ldb, sb, a.data.ptr, dt, lda, sa, zero, out.data.ptr,
                                dt, n, m * n, count, compute, _GEMM_DEFAULT)
    return out


_ones: dict = {}  # (device, length, dtype) -> a ones vector for gemm_sum


def gemm_sum(a, dims, keepdim):
    """The sum of a contiguous floating CuPy array over its leading or its trailing ``dims``
    (all of one end), as one GEMM against a ones vector: float32 accumulation and one
    rounding for half types, where the generic kernel widens the whole array to float32
    first (a bias's gradient in a GPT step: a copy of the activations each), and a third of
    CuPy's reduction's host cost for float32 (always full float32 products here, never TF32).

    Args:
        a: a C-contiguous float16/bfloat16/float32/float64 CuPy array.
        dims: the dims to sum, all leading or all trailing, not all of them.
        keepdim: keep the summed dims with size 1.

    Returns:
        The sums, or None where not covered.
    """
    import cupy as cp

    if a.dtype not in _CUDA_R_OF or not a.flags.c_contiguous or not dims or a.size == 0:
        return None
    nd, k = a.ndim, len(dims)
    dims = sorted(d % nd for d in dims)
    if k >= nd or len(set(dims)) != k:
        return None
    leading = dims == list(range(k))
    if not leading and dims != list(range(nd - k, nd)):
        return None
    rows = math.prod(a.shape[:k]) if leading else math.prod(a.shape[nd - k:])
    key = (a.device.id, rows, a.dtype)
    ones = _ones.get(key)
    if ones is None:
        if len(_ones) > 32:
            _ones.clear()
        ones = _ones[key] = cp.ones(rows, a.dtype)
    if leading:
        r = gemm(ones.reshape(1, rows), a.reshape(rows, -1), exact=True)
        shape = (1,) * k + a.shape[k:] if keepdim else a.shape[k:]
    else:
        r = gemm(a.reshape(-1, rows), ones.reshape(rows, 1), exact=True)
        shape = a.shape[:nd - k] + (1,) * k if keepdim else a.shape[:nd - k]
    return None if r is None else r.reshape(shape)


def _sum(generic, a, *, dim, keepdim, dtype, shape=None):
    if (dtype is None or dtype == a.dtype) and a.ndim >= 2 and isinstance(dim, (tuple, list)):
        r = gemm_sum(a, dim, keepdim)
        if r is not None:
            return r
    return generic(a, dim=dim, keepdim=keepdim, dtype=dtype, shape=shape)


def _matmul(generic, a, b):
    y = gemm(a, b)  # (None for what it does not cover: other dtypes, 1-d operands)
    return y if y is not None else generic(a, b)


def _linear(generic, x, w, b):
    if b is None or b.dtype == x.dtype:
        y = gemm(x, w.T)  # the weight's transpose: read by cuBLAS as is, no copy
        if y is not None:
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

    tf32 = value in ("high", "medium")
    _compute_f32[0] = _COMPUTE_32F_FAST_TF32 if tf32 else _COMPUTE_32F  # ember's own GEMMs
    mode = linalg.COMPUTE_TYPE_TF32 if tf32 else linalg.COMPUTE_TYPE_DEFAULT
    linalg.set_compute_type(np.float32, mode)
    linalg.set_compute_type(np.complex64, mode)


def register():
    """Give the CUDA backend its own kernels (once, when CUDA is first initialised)."""
    global _registered, _attention_op, _attention_backward_op
    if _registered:
        return
    import cupy as cp

    from .._kernels import _cuda
    from .._ops import conversion, nn_attention, nn_conv, nn_norm, nn_pool, reduction
    from .._ops._registry import Op

    for op, fn in ((nn_conv.conv_op, _conv_forward),
                   (nn_conv.conv_input_grad_op, _conv_input_grad),
                   (nn_conv.conv_weight_grad_op, _conv_weight_grad),
                   (nn_conv.conv_backward_op, _conv_backward),
                   (nn_norm.batch_norm_op, _batch_norm),
                   (nn_norm.batch_norm_backward_op, _batch_norm_backward),
                   (nn_pool.max_pool_op, _max_pool),
                   (conversion.to_copy_op, _to_copy),
                   (reduction.sum_op, _sum)):
        op.register_kernel("cuda", functools.partial(fn, functools.partial(op.kernel, cp)))
    nn_norm.running_stats_kernels[cp.ndarray] = _cuda.batch_norm_update_running
    from .._ops import linalg, nn_ops

    linalg.matmul_op.register_kernel("cuda", functools.partial(
        _matmul, functools.partial(linalg.matmul_op.kernel, cp)))
    nn_ops.linear_op.register_kernel("cuda", functools.partial(
        _linear, functools.partial(nn_ops.linear_op.kernel, cp)))
    for op, name in ((nn_ops.gelu_tanh_op, "gelu_tanh"), (nn_ops.silu_op, "silu"),
                     (nn_ops.relu_op, "relu")):
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
