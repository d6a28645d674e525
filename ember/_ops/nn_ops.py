"""Fused neural-network ops: linear, relu, softmax/log_softmax, nll_loss, mse_loss.

These are registry ops (one kernel, explicit derivative formulas) rather than compositions,
because they sit on every training step: one dispatch instead of several, and numerically
stable formulas (log-sum-exp with the max subtracted). ``ember.nn.functional`` exposes them
with PyTorch's signatures.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from .. import _dispatch, _kernels, _parallel
from .._kernels import _blas
from .._core import dtype as _dt
from .._core.checks import check_range, wrap_dim
from .._core.tensor import Tensor, wrap
from ._elementwise import ElementwiseOp, elementwise_inplace, unary
from ._memory_format import follow as _follow, row_major_kernel as _follow_kernel
from . import _node_names
from ._registry import Op, public, recorded_as
from ._xp_compat import ufunc_at
from .indexing import grad_linked_to, linear_jvp, multilinear_jvp  # forward-mode rules
from .nn_checks import kernel_dtype, no_complex_autograd, type_name_in_check
from .creation import zeros_like
from . import linalg as _linalg
from .linalg import _LOWP, _contiguous, _cpp_name as _cpp_dtype_name, gemm, outer_op, row_sums, \
    upcast_lowp
from .pointwise import opmath
from .shape import broadcast_tensors
from .ranges import arange
from .special_ops import _sp

# ------------------------------------------------------------------------------------------------
# relu


#: a zero-dim zero per NumPy dtype, for relu: NumPy converts a Python 0 anew on every call,
#: a third of a small relu's time
_ZEROS: dict = {}


def _relu_kernel(xp, a):
    # (0 first: NumPy then keeps -0.0, as torch's CPU relu does)
    dt = a.dtype
    if dt.kind == "b":
        return a
    if xp is np:
        fused = _kernels.relu(a) if dt == np.float32 else None  # one pass (ember/_kernels)
        if fused is not None:
            return fused
        z = _ZEROS.get(dt)
        if z is None:
            z = _ZEROS[dt] = np.zeros((), dt)
        if dt == np.float16:
            # NumPy's float16 maximum answers its second argument on a tie, which turns -0.0
            # into 0.0; the rule itself ("negatives become zero") keeps -0.0 and NaN
            return np.where(a < z, z, a)
        return np.maximum(z, a)
    return xp.maximum(0, a)


def _threshold_backward_kernel(xp, g, out, *, threshold):
    # the gradient passes where the result is above the threshold; a NaN result is not
    # "<= threshold", so it lets the gradient through, as in PyTorch
    if xp is np and threshold == 0:
        small = _small_relu_grad(g, out)  # NOTE [ Small relu gradients ]
        if small is not None:
            return small
    fused = _kernels.threshold_backward(g, out, threshold)  # one pass (ember/_kernels)
    if fused is not None:
        return fused
    return xp.where(out <= threshold, xp.zeros((), g.dtype), g)


# NOTE [ Small relu gradients ]
# The compiled one-pass ``threshold_backward`` pays ~3.5 us of set-up (its float32 threshold
# under an errstate, the thread split, the call) before its first element: below
# ``_SELECT_MIN`` elements NumPy's two-pass ``where`` is cheaper (a batch-1 MLP's 64: 1.1
# against 3.6 us). Both select the gradient or zero element by element, so the bits are the
# same; only relu's zero threshold, exact in every float dtype, takes this path, and only
# C-contiguous operands, whose ``where`` result is C-contiguous as the kernel's is. Below
# any mode and without create_graph, relu's formula calls it on the arrays directly (no
# dispatch: 3.2 -> 2.7 us a node).
_SELECT_MIN = 1024


def _small_relu_grad(g, out):
    """``where(out <= 0, 0, g)`` by NumPy for small C-contiguous arrays of one dtype and
    shape (NOTE [ Small relu gradients ]), else None."""
    if type(g) is not np.ndarray or type(out) is not np.ndarray or g.size >= _SELECT_MIN or \
            g.dtype != out.dtype or g.shape != out.shape or not g.flags.c_contiguous or \
            not out.flags.c_contiguous:
        return None
    z = _ZEROS.get(g.dtype)
    if z is None:
        z = _ZEROS[g.dtype] = np.zeros((), g.dtype)
    return np.where(out <= z, z, g)


def _threshold_backward_vjp(gg, _g, out, *, threshold):
    # linear in the gradient; the mask's derivative is zero -- zeros, not None, as torch's
    # formula gives them, so a second derivative reaches the input as zeros, not None
    return (_dispatch.apply(threshold_backward_op, (gg, out), {"threshold": threshold}),
            zeros_like(out))


def _threshold_backward_jvp(x_dots, _g, relu_out, *, threshold, **_):
    # (the second input is not named ``out``: jvp rules receive the op's result as ``out=``)
    if x_dots[0] is None:
        return None
    return _dispatch.apply(threshold_backward_op, (x_dots[0], relu_out),
                           {"threshold": threshold})


# relu's backward in one pass (``g * (out > 0)`` took two, and three with NaN handled)
threshold_backward_op = Op("threshold_backward", _threshold_backward_kernel,
                           vjp=_threshold_backward_vjp, jvp=_threshold_backward_jvp)


def _relu_vjp(g, _a, *, out):
    if not _dispatch.intercept and not _dispatch.state.grad_enabled and \
            threshold_backward_op.builtin_cpu:
        # the small case's ``where`` without the dispatch around it: nothing records or
        # watches it (NOTE [ Small relu gradients ])
        small = _small_relu_grad(g._data, out._data)
        if small is not None:
            return wrap(small)
    return _dispatch.apply(threshold_backward_op, (g, out), {"threshold": 0})


relu_op = ElementwiseOp("relu", _relu_kernel, vjp=_relu_vjp, allow=(1, 2))
relu_op.node_name = "ReluBackward0"


@public(inplace=lambda self: elementwise_inplace(relu_op, self, ()))
def relu(input):
    """``max(input, 0)`` element-wise."""
    return unary(relu_op, input)


# ------------------------------------------------------------------------------------------------
# gelu
#
# Composed from ember ops, GELU saved four activation-sized tensors for backward (48 MB of a
# small GPT's 127 MB of saved activations); as one op it saves its input only, and backward
# computes g (Phi(x) + x phi(x)) from it (NOTE [ GELU saves only its input ]). Under
# create_graph the formula is rebuilt from ember ops.
# For the tanh form, with u = c(x + k x^3), the derivative is
# 0.5(1 + tanh u) + 0.5x(1 - tanh^2 u) c(1 + 3k x^2).
#
# NOTE [ Float32 normal CDF ]
# SciPy's float32 erf costs 8-17 ns an element, 20-40x NumPy's exp, and was 15% of a small
# GPT's step. On NumPy float32 arrays ember computes Phi itself: for x <= 0,
# Phi(x) = t R(t) exp(-x^2 / 2) with t = 1 / (1 - p x) and R a degree-8 polynomial fitted by
# tools/fit_normal_cdf.py (largest relative error 2.5e-8 in exact arithmetic, a few float32
# ulps after rounding). For x > 0, Phi(x) = 1 - Phi(-x), taken as |1 - Phi(-|x|)| so that
# both signs come from one expression with no masked copies. Unlike 1 + erf(x / sqrt 2),
# this keeps its relative accuracy for negative x, where that sum cancels. The work runs in
# chunks that stay in cache, with every step written into a preallocated buffer.

_GELU_C = 0.7978845608028654  # sqrt(2 / pi)
_GELU_K = 0.044715
_INV_SQRT2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_PHI_P = 0.21
_PHI_R = (-0.07203398644924164, 0.28545339772976497, -0.33418966564920916,
          0.3540336703647422, -0.09724572856084622, 0.12635515628960997,
          0.06879003786431213, 0.08512940843242275, 0.08370770289418125)
_PHI_CHUNK = 32768


def _scaled(xp, a, c):
    """``a * c`` as a fresh array (a 0-d one for 0-d ``a``, where NumPy would return a
    scalar that cannot be the ``out=`` of the in-place steps that follow)."""
    out = xp.empty_like(a)
    xp.multiply(a, c, out=out)
    return out


def _gelu_f32(x, derivative=True):
    """(x Phi(x), Phi(x) + x phi(x)) for a NumPy float32 array (NOTE [ Float32 normal CDF ];
    the chunks run on ember's threads where that pays, NOTE [ GELU chunks on threads ]);
    the derivative None unless ``derivative``."""
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    der = np.empty_like(flat) if derivative else None
    chunks = -(-flat.size // _PHI_CHUNK)

    def run(first, last):  # chunks [first, last), each piece with its own scratch buffers
        lo, hi = first * _PHI_CHUNK, last * _PHI_CHUNK
        _gelu_f32_chunks(flat[lo:hi], out[lo:hi], None if der is None else der[lo:hi])

    if not _parallel.split_on_threads(run, chunks, min_size=_PHI_SPLIT_CHUNKS):
        run(0, chunks)
    return out.reshape(x.shape), None if der is None else der.reshape(x.shape)


# NOTE [ GELU chunks on threads ]
# The float32 GELU makes some twenty NumPy passes per cache-sized chunk, each releasing the
# GIL, and the chunks are independent: so they are cut into one contiguous run per thread
# (``_parallel.split_on_threads``, which declines on one thread or an oversubscribed machine).
# Every element goes through the same operations whichever thread runs it, so the results
# are the same bits. Four chunks (128K elements, about 1 ms of work on one core) is the
# least worth a round trip through the pool (~0.1 ms). A (8, 128, 1024) forward at two
# threads (the machine taken as quiet; load 8-11): the calling thread's CPU 11.3 -> 5.9 ms,
# the process's unchanged (11.3 -> 11.6 ms).
_PHI_SPLIT_CHUNKS = 4


def _gelu_f32_chunks(flat, out, der):
    """The chunk loop of ``_gelu_f32`` over 1-D float32 ``flat``, writing ``out`` and
    ``der`` (None: the derivative is not wanted, and Phi(x) goes to a scratch buffer)."""
    f32 = np.float32
    n = min(flat.size, _PHI_CHUNK)
    t_buf, e_buf = np.empty(n, f32), np.empty(n, f32)
    d_buf = np.empty(n, f32) if der is None else None
    p, coef = f32(_PHI_P), [f32(c) for c in _PHI_R]
    for lo in range(0, flat.size, _PHI_CHUNK):
        xs = flat[lo:lo + _PHI_CHUNK]
        t, e = t_buf[:xs.size], e_buf[:xs.size]
        q = out[lo:lo + _PHI_CHUNK]
        d = d_buf[:xs.size] if der is None else der[lo:lo + _PHI_CHUNK]
        np.abs(xs, out=t)
        t *= p
        t += 1
        np.divide(f32(1), t, out=t)
        np.multiply(t, coef[0], out=q)
        for c in coef[1:]:
            q += c
            q *= t
        np.multiply(xs, xs, out=e)
        e *= f32(-0.5)
        np.exp(e, out=e)
        q *= e                                   # Phi(-|x|)
        np.greater(xs, f32(0), out=d, casting="unsafe")
        d -= q
        np.abs(d, out=d)                         # Phi(x)
        np.multiply(xs, d, out=q)                # x Phi(x)
        if der is None:
            continue
        e *= xs
        e *= f32(_INV_SQRT_2PI)
        d += e                                   # Phi(x) + x phi(x)


def _gelu_kernel(xp, a):
    """(x Phi(x), None), or (x Phi(x), Phi(x) + x phi(x) in float32) from a device's fused
    kernel (NOTE [ GELU saves only its input ]); half precision computes in float32."""
    if xp is not np:
        fused = _kernels.gelu(a)  # a device's fused kernel (NOTE [ Fused kernels ])
        if fused is not None:
            return fused
    x = a.astype(xp.float32) if a.dtype.itemsize < 4 else a
    if xp is np and x.dtype == np.float32:
        fused = _kernels.gelu(x)  # NOTE [ Fused kernels ] (ember/_kernels)
        out = fused[0] if fused is not None else _gelu_f32(x, derivative=False)[0]
    else:
        out = _scaled(xp, x, _normal_cdf(xp, x))
    # NOTE [ Result strides ] in ember/_ops/_memory_format.py
    return _follow(out.astype(a.dtype, copy=False), (a,)), None


def _normal_cdf(xp, x):
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2 as a fresh array (the float32 NumPy kernels use
    NOTE [ Float32 normal CDF ] instead)."""
    cdf = _scaled(xp, x, _INV_SQRT2)
    cdf = _sp(xp).erf(cdf, out=cdf)
    cdf += 1
    cdf *= 0.5
    return cdf


def _gelu_backward_kernel(xp, g, a):
    """``g * (Phi(a) + a phi(a))``: one fused pass where a kernel covers the arrays (NOTE
    [ Fused kernels ]), else the derivative as the forward computes Phi, times ``g``; half
    precision in float32, rounded once."""
    fused = _kernels.gelu_backward(g, a)
    if fused is not None:
        return fused
    dt = xp.result_type(g, a)
    x = a.astype(xp.float32) if a.dtype.itemsize < 4 else a
    if xp is np and x.dtype == np.float32:
        der = _gelu_f32(x)[1]
    else:
        der = _scaled(xp, x, x)
        der *= -0.5
        xp.exp(der, out=der)
        der *= x
        der *= _INV_SQRT_2PI
        der += _normal_cdf(xp, x)
    gx = xp.multiply(g, der, out=der) if der.dtype == xp.result_type(g, der) else g * der
    return gx.astype(dt, copy=False)


gelu_backward_op = Op("gelu_backward", _gelu_backward_kernel)


def _opmath_vjp(formula):
    """Evaluate a derivative formula in float32 for half-precision inputs, rounding once
    (as the forward kernels do)."""
    def vjp(g, a):
        if a.dtype.itemsize >= 4:
            return formula(g, a)
        return formula(g.float(), a.float()).to(a.dtype)

    return vjp


def _gelu_vjp(grads, a, *, out):
    g = grads[0]
    if out[1] is None and g.shape == a.shape and \
            not _dispatch.differentiable_formula(g, a):
        # NOTE [ GELU saves only its input ]
        return _dispatch.apply(gelu_backward_op, (g, a), {})
    half = a.dtype.itemsize < 4
    x, gf = (a.float(), g.float()) if half else (a, g)
    if out[1] is None or _dispatch.differentiable_formula(a):
        # create_graph or forward-over-reverse: rebuild the derivative so the formula stays
        # differentiable in x (and a gradient of another shape: a broadcast product)
        cdf = 0.5 * (1 + (x * _INV_SQRT2).erf())
        pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
        gx = gf * (cdf + x * pdf)
    else:
        gx = gf * out[1]  # a device kernel's derivative
    return gx.to(a.dtype) if half else gx


def _gelu_tanh_kernel(xp, a):
    t = _scaled(xp, a, a)
    t *= _GELU_K
    t += 1
    t *= a
    t *= _GELU_C
    xp.tanh(t, out=t)
    t += 1
    t *= 0.5  # torch's ``0.5 * x * (1 + tanh)``: no overflow of ``2 * x`` near the maximum
    t *= a
    return t


def _gelu_tanh_backward_kernel(xp, g, a):
    """``g * gelu_tanh'(a)``: one fused pass where a kernel covers the arrays (NOTE [ Fused
    kernels ]), else the formula in float32 for half precision, rounded once."""
    fused = _kernels.gelu_tanh_backward(g, a)
    if fused is not None:
        return fused
    dt = a.dtype
    if dt.itemsize < 4:
        g, a = g.astype(xp.float32), a.astype(xp.float32)
    a2 = a * a
    th = xp.tanh(_GELU_C * a * (1 + _GELU_K * a2))
    r = g * (0.5 * (1 + th) + (0.5 * _GELU_C) * a * (1 - th * th) * (1 + (3 * _GELU_K) * a2))
    return xp.asarray(r).astype(dt, copy=False)


gelu_tanh_backward_op = Op("gelu_tanh_backward", _gelu_tanh_backward_kernel)


def _gelu_tanh_vjp(g, a):
    if not _dispatch.differentiable_formula(g, a) and g.shape == a.shape and \
            g.dtype == a.dtype:
        return _dispatch.apply(gelu_tanh_backward_op, (g, a), {})
    return _gelu_tanh_formula(g, a)


@_opmath_vjp
def _gelu_tanh_formula(g, a):
    # create_graph: the formula in ember ops, differentiable in a
    th = (_GELU_C * (a + _GELU_K * a * a * a)).tanh()
    left = 0.5 * (1 + th)
    right = 0.5 * a * (1 - th * th) * (_GELU_C * (1 + 3 * _GELU_K * a * a))
    return g * (left + right)


def _gelu_jvp(x_dots, a, *, out):
    # element-wise: the tangent is the vjp at x_dot (a diagonal Jacobian is symmetric)
    return _gelu_vjp((x_dots[0], None), a, out=out), None


gelu_op = Op("gelu", _gelu_kernel, vjp=_gelu_vjp, jvp=_gelu_jvp, nondiff_outputs=(1,))
gelu_op.node_name = "GeluBackward0"
gelu_op.saved_outputs = (1,)  # a device kernel's derivative; never the result
gelu_tanh_op = ElementwiseOp("gelu_tanh", opmath(_gelu_tanh_kernel), vjp=_gelu_tanh_vjp,
                             allow=(2,))
gelu_tanh_op.node_name = "GeluBackward0"


def gelu(input, approximate="none"):
    """Gaussian error linear unit, exact (``x * Phi(x)``) or with the tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate}")
    if isinstance(input, Tensor) and input.dtype.category != 2:
        raise NotImplementedError(f'"GeluKernelImpl" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    if approximate == "tanh":
        return unary(gelu_tanh_op, input)
    if not isinstance(input, Tensor):
        raise TypeError(f"gelu(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    return _dispatch.apply(gelu_op, (input,), {})[0]


# NOTE [ GELU saves only its input ]
# GELU's node keeps its input and nothing else, as PyTorch's does: backward recomputes
# Phi(x) + x phi(x) from it in one fused pass times the gradient (``gelu_backward_op``,
# the forward's operations per element). Keeping the derivative from the forward kernel
# instead (where phi's exp is at hand) made backward one product but held a third
# activation-sized array per layer alive from forward to backward, beside the input and the
# result the next layer keeps: 16 MiB of the bench GPT's 4-layer step, whose peak RSS was
# then over PyTorch's. The recomputation costs about what the forward's derivative did (a
# (8, 128, 1024) layer at one thread: forward 0.76 -> 0.41 ms, backward 0.11 -> ~0.8 ms).
# A device's fused kernel still returns the derivative and backward multiplies by it.


# ------------------------------------------------------------------------------------------------
# silu: like gelu, one op saving only its input (the composition x * sigmoid(x) saved two
# tensors); d/dx x s(x) = s(x) (1 + x (1 - s(x))).


def _silu_kernel(xp, a):
    fused = _kernels.silu(a)  # NOTE [ Fused kernels ] (ember/_kernels)
    if fused is not None:
        return fused
    out = xp.empty_like(a)
    if xp is np and a.size >= _SILU_SPLIT and a.flags.c_contiguous:
        # large NumPy arrays in pieces on ember's threads, each piece the same passes on
        # its slice: the same bits (NOTE [ Threaded element-wise ops ] in ember/_parallel.py)
        flat, of = a.reshape(-1), out.reshape(-1)
        if _parallel.split_on_threads(lambda lo, hi: _silu_into(np, flat[lo:hi], of[lo:hi]),
                                      flat.size, min_size=_SILU_SPLIT):
            return out
    return _silu_into(xp, a, out)


#: NumPy's tanh costs a few ns an element: pieces pay from 2**18 elements
_SILU_SPLIT = 1 << 18


def _silu_into(xp, a, t):
    """``a * sigmoid(a)`` as ``a (1 + tanh(a / 2)) / 2``, into ``t`` (``a``'s shape)."""
    xp.multiply(a, 0.5, out=t)
    xp.tanh(t, out=t)
    t += 1
    t *= 0.5
    t *= a
    return t


def _silu_backward_kernel(xp, g, a):
    """g * s (1 + a (1 - s)) with s = sigmoid(a), in one pass where a fused kernel covers
    the arrays (NOTE [ Fused kernels ]), else in two buffers."""
    fused = _kernels.silu_backward(g, a)
    if fused is not None:
        return fused
    s = _scaled(xp, a, 0.5)
    xp.tanh(s, out=s)
    s += 1
    s *= 0.5                 # sigmoid(a)
    t = xp.empty_like(s)     # not xp.subtract(1, s): a 0-d s would give a scalar
    xp.subtract(1, s, out=t)
    t *= a
    t += 1
    t *= s
    return xp.multiply(g, t, out=t) if t.dtype == xp.result_type(g, t) else g * t


silu_backward_op = Op("silu_backward", _silu_backward_kernel)


@_opmath_vjp
def _silu_vjp(g, a):
    if not _dispatch.differentiable_formula(g, a) and g.shape == a.shape:
        return _dispatch.apply(silu_backward_op, (g, a), {})
    # create_graph: the formula in ember ops, differentiable in a
    sig = a.sigmoid()
    return g * (sig * (1 + a * (1 - sig)))


silu_op = ElementwiseOp("silu", opmath(_silu_kernel), vjp=_silu_vjp, allow=(2, 3))
silu_op.node_name = "SiluBackward0"


def silu(input, inplace=False):
    """``x * sigmoid(x)`` (the swish activation)."""
    if isinstance(input, Tensor) and input.dtype.category < 2:
        raise NotImplementedError(f'"silu_cpu" not implemented for '
                                  f"'{input.dtype.scalar_name}'")
    if isinstance(input, Tensor):
        no_complex_autograd("silu", input.dtype, input)
    if inplace:
        return elementwise_inplace(silu_op, input, ())
    return unary(silu_op, input)


# ------------------------------------------------------------------------------------------------
# softmax / log_softmax


# NOTE [ Half-precision rows in float32 ]
# PyTorch's CPU softmax, log-softmax and their backward, and its NLL and cross entropy
# losses, compute float16 and bfloat16 inputs in float32 and round the results once. Done
# in the low precision itself, a row's or a batch's sum loses whole digits: a float16
# softmax over 8192 rows was 0.00999 where PyTorch's is 0.00722, a bfloat16 NLL mean over
# 13107 rows 0.93 instead of 0.023. So these kernels take 16-bit floats in float32 on the
# CPU (which also lets the compiled float32 row kernels run); CUDA's fused kernels
# accumulate in float32 already and take the arrays as they are.


def _upcast_on_cpu(fn):
    """``fn`` with float16/bfloat16 NumPy operands computed in float32 and the results
    rounded back (NOTE [ Half-precision rows in float32 ])."""
    up = upcast_lowp(fn)

    def kernel(xp, *arrays, **params):
        return (up if xp is np else fn)(xp, *arrays, **params)

    kernel.__name__ = fn.__name__
    return kernel


def _softmax_kernel(xp, a, *, dim):
    if a.size == 0:
        return a.copy()
    if a.ndim == 0:  # (NumPy reduces a 0-dim array to a scalar, which takes no ``out=``)
        return _softmax_kernel(xp, a.reshape(1), dim=0).reshape(())
    fused = _kernels.softmax(a, dim)  # NOTE [ Fused kernels ]
    if fused is not None:
        return fused
    e = a - a.max(axis=dim, keepdims=True)
    xp.exp(e, out=e)  # one buffer for shifted values, exponentials and the result
    e /= row_sums(xp, e) if dim == a.ndim - 1 else e.sum(axis=dim, keepdims=True)
    return e


def _softmax_backward_kernel(xp, g, y, *, dim, log):
    """softmax's (``log``: log-softmax's) input gradient from its output ``y``."""
    fused = _kernels.softmax_backward(g, y, dim, log)  # NOTE [ Fused kernels ]
    if fused is not None:
        return fused
    if log:
        return g - xp.exp(y) * g.sum(axis=dim, keepdims=True)
    r = g - (g * y).sum(axis=dim, keepdims=True)
    r *= y  # y (g - sum(g y)), as the fused kernel (and PyTorch's) order it
    return r


softmax_backward_op = Op("_softmax_backward_data", _upcast_on_cpu(_softmax_backward_kernel))

_F32 = np.dtype(np.float32)


def _fused_softmax_backward(g, out, dim, log):
    """The input gradient of softmax/log-softmax as one compiled pass per row where the
    fused kernels cover it (float32 CPU arrays, the last dim, no ``create_graph``), else
    None: the op-by-op formula runs (NOTE [ Fused kernels ])."""
    if type(g) is not Tensor or type(out) is not Tensor:
        return None
    ga, ya = g._data, out._data
    if type(ga) is not np.ndarray or type(ya) is not np.ndarray or ga.shape != ya.shape:
        return None
    formula = _dispatch.differentiable_formula(g, out)
    ct = _dispatch.carries_tangent
    if ga.dtype in _LOWP and ya.dtype == ga.dtype and ya.ndim and not (
            formula and (g._rg or out._rg or ct is not None and (ct(g) or ct(out)))):
        # float32 sums, one rounding (NOTE [ Half-precision rows in float32 ]); constants
        # need no formula even in grad mode (``_softmax_backward_data`` called directly)
        return _dispatch.apply(softmax_backward_op, (g, out), {"dim": dim % ya.ndim, "log": log})
    if formula or ga.dtype != _F32 or ya.dtype != _F32 or dim % max(ya.ndim, 1) != ya.ndim - 1 \
            or _kernels.backend() != "numba":
        return None
    return _dispatch.apply(softmax_backward_op, (g, out), {"dim": ya.ndim - 1, "log": log})


def _softmax_vjp(g, _a, *, dim, out):
    fused = _fused_softmax_backward(g, out, dim, False)
    if fused is not None:
        return fused
    gy = g * out
    return gy - out * gy.sum(dim, keepdim=True)


def _log_softmax_kernel(xp, a, *, dim):
    if a.size == 0:
        return a.copy()
    if a.ndim == 0:  # (NumPy reduces a 0-dim array to a scalar, which takes no ``out=``)
        return _log_softmax_kernel(xp, a.reshape(1), dim=0).reshape(())
    fused = _kernels.softmax(a, dim, log=True)  # NOTE [ Fused kernels ]
    if fused is not None:
        return fused
    shifted = a - a.max(axis=dim, keepdims=True)
    e = xp.exp(shifted)
    shifted -= xp.log(row_sums(xp, e) if dim == a.ndim - 1 else e.sum(axis=dim, keepdims=True))
    return shifted


def _log_softmax_vjp(g, _a, *, dim, out):
    fused = _fused_softmax_backward(g, out, dim, True)
    if fused is not None:
        return fused
    return g - out.exp() * g.sum(dim, keepdim=True)


def _softmax_jvp(x_dots, _a, *, dim, out):
    yx = out * x_dots[0]
    return yx - out * yx.sum(dim, keepdim=True)


def _log_softmax_jvp(x_dots, _a, *, dim, out):
    x_dot = x_dots[0]
    return x_dot - (out.exp() * x_dot).sum(dim, keepdim=True)


softmax_op = Op("softmax", _follow_kernel(_upcast_on_cpu(_softmax_kernel)), vjp=_softmax_vjp,
                jvp=_softmax_jvp)
def _log_softmax_half_rows(a):
    """Log-softmax of float16/bfloat16 rows (the last dim) as PyTorch's CPU kernel rounds it:
    the float32 sum of exponentials and its logarithm each rounded to ``a``'s dtype, then
    ``x - max - log(sum)`` in float32, rounded once."""
    x = a.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        x -= x.max(axis=-1, keepdims=True)
        s = np.exp(x).sum(axis=-1, keepdims=True, dtype=np.float32).astype(a.dtype)
        x -= np.log(s.astype(np.float32)).astype(a.dtype).astype(np.float32)
    return x.astype(a.dtype)


_log_softmax_up = _upcast_on_cpu(_log_softmax_kernel)


def _log_softmax_cpu_kernel(xp, a, *, dim):
    if xp is np and a.dtype in _LOWP and a.size and a.ndim and dim == a.ndim - 1:
        return _log_softmax_half_rows(a)
    return _log_softmax_up(xp, a, dim=dim)


log_softmax_op = Op("log_softmax", _follow_kernel(_log_softmax_cpu_kernel), vjp=_log_softmax_vjp,
                    jvp=_log_softmax_jvp)
softmax_op.node_name = "SoftmaxBackward0"
log_softmax_op.node_name = "LogSoftmaxBackward0"


def _softmax_args(name, input, dim, dtype):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if dim is None:
        # PyTorch's legacy implicit choice of dimension
        dim = 0 if input.dim() in (0, 1, 3) else 1
    dim = wrap_dim(dim, input.dim(), name)
    if dtype is not None:
        input = input.to(_dt.lookup(dtype))
    if input._data.size:  # (torch runs no kernel on an empty input)
        kernel_dtype(name + ("_lastdim" if dim == input.dim() - 1 or input.dim() == 0 else ""),
                 input)
    return input, dim


def softmax(input, dim=None, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (``dim=None``: the legacy
    implicit choice ``nn.functional.softmax`` makes)."""
    input, dim = _softmax_args("softmax", input, dim, dtype)
    return _dispatch.apply(softmax_op, (input,), {"dim": dim})


def log_softmax(input, dim=None, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed as ``x - logsumexp(x)`` (``dim=None``: the
    legacy implicit choice)."""
    input, dim = _softmax_args("log_softmax", input, dim, dtype)
    return _dispatch.apply(log_softmax_op, (input,), {"dim": dim})


def _dim_given(name, dim, position):
    # only ``nn.functional`` keeps the implicit choice; ``torch.softmax`` needs a dim
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' (position {position}) must be int, not "
                        "NoneType")


@public(name="softmax")
def _softmax_with_dim(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably."""
    _dim_given("softmax", dim, 2)
    return softmax(input, dim, dtype)


@public(name="log_softmax")
def _log_softmax_with_dim(input, dim, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed as ``x - logsumexp(x)``."""
    _dim_given("log_softmax", dim, 2)
    return log_softmax(input, dim, dtype)


# ------------------------------------------------------------------------------------------------
# linear


def _affine(xp, x, w, b):
    if (xp is np and x.ndim == 2 and x.dtype.char in "fd" and w.dtype is x.dtype
            and x.shape[0] * w.shape[0] * x.shape[1] < _blas._BLAS_OWN_LIMIT
            and _contiguous(x) and _contiguous(w)):
        out = x.dot(w.T)  # NOTE [ Small products by dot ] in linalg.py: gemm's very bits
    else:
        out = gemm(xp, x, w.T)
    if b is not None:
        out += b
    return out


_affine_lowp = upcast_lowp(_affine)


def _linear_kernel(xp, x, w, b):
    if x.dtype in _LOWP:  # bfloat16/float16 in, the same out (computed in float32)
        return _affine_lowp(xp, x, w, b)
    return _affine(xp, x, w, b)


def _linear_vjp(g, x, w, _b, *, needs_input_grad):
    need_x, need_w, need_b = needs_input_grad
    if not _dispatch.intercept and not _dispatch.state.grad_enabled:
        small = _small_linear_vjp(g, x, w, need_x, need_w, need_b)
        if small is not None:
            return small
    # a first layer's input is data: its gradient would be a whole GEMM thrown away
    gx = g @ w if need_x else None
    gw = gb = None
    if g.dim() == 1:
        # one op (under vmap: one batched outer product, NOTE [ vmap batching ])
        gw = _dispatch.apply(outer_op, (g, x), {}) if need_w else None
        gb = g if need_b else None
    else:
        rows = math.prod(g.shape[:-1])
        g2 = g.reshape(rows, g.shape[-1]) if g.dim() != 2 else g
        if need_w:
            x2 = x.reshape(rows, x.shape[-1]) if x.dim() != 2 else x
            gw = g2.t() @ x2
        gb = g2.sum(0) if need_b else None
    return gx, gw, gb


def _small_linear_vjp(g, x, w, need_x, need_w, need_b):
    """``_linear_vjp``'s three gradients of a small 2-D float product straight on the arrays
    (NOTE [ Small linear gradients ]), or None where the op-by-op formula runs."""
    gd = g._data
    if type(gd) is not np.ndarray or gd.ndim != 2 or gd.dtype.kind != "f" or \
            not _linalg.matmul_op.builtin_cpu or \
            not (gd.flags.c_contiguous or gd.flags.f_contiguous):
        return None
    # (one product size for both: rows x out_features x in_features)
    wd = w._data if need_x else None
    xd = x._data if need_w else None
    for a in (wd, xd):
        if a is not None and (type(a) is not np.ndarray or a.ndim != 2 or a.dtype is not gd.dtype
                              or not (a.flags.c_contiguous or a.flags.f_contiguous)):
            return None
    inner = wd.shape[1] if wd is not None else xd.shape[1] if xd is not None else 0
    if gd.shape[0] * gd.shape[1] * inner >= _blas._BLAS_OWN_LIMIT:
        return None
    gx = wrap(gd.dot(wd)) if wd is not None else None
    gw = wrap(gd.T.dot(xd)) if xd is not None else None
    if not need_b:
        return gx, gw, None
    if gd.shape[0] == 1:
        # one row: its sum is the row added to zero (-0.0 becomes 0.0, as a sum gives)
        z = _ZEROS.get(gd.dtype)
        if z is None:
            z = _ZEROS[gd.dtype] = np.zeros((), gd.dtype)
        return gx, gw, wrap(np.add(gd[0], z))
    return gx, gw, g.sum(0)


# NOTE [ Small linear gradients ]
# A small layer's backward (a batch-1 MLP: a 64 x 64 weight) is dominated by its four
# dispatches (``g @ w``, ``g.t()``, ``@ x``, ``sum``), not by arithmetic. Below any mode or
# transform and without create_graph, nothing needs to see those ops, so for 2-D float
# operands small enough that ``matmul`` itself would take ``ndarray.dot`` (NOTE [ Small
# products by dot ] in linalg.py) the gradients are the very same ``dot`` calls on the
# arrays: same bits, one wrap each (7.4 -> 3 us a node). The bias's sum stays the
# tensor ``sum`` (its blocked kernels decide its bits), but for one row (batch 1), whose sum
# is the row plus zero, one NumPy add (1.2 -> 0.5 us). Anything else -- larger products,
# other dtypes or layouts, vmap, modes, the profiler, double backward -- takes the formula.


linear_op = Op("linear", _linear_kernel, vjp=_linear_vjp)
multilinear_jvp(linear_op, (0, 1), (2,))
linear_op.node_name = "AddmmBackward0"
# torch's addmm hands the bias's gradient on first (NOTE [ Edge order ] in
# ember/autograd/_engine.py)
linear_op.edge_order = (2, 0, 1)
# the input is kept only for the weight's gradient and the weight only for the input's, as
# PyTorch's node keeps them: a weight stepped in place between forward and backward breaks
# only a backward that needs it (not one whose input is data)
linear_op.saved_for = {0: (1,), 1: (0,)}
linear_op.saved_transposed = (1,)


def inplace_result(a, r):
    """``r``, computed from ``a`` as ``a.<op>_(...)`` would compute it, checked and cast as
    the in-place form is: its shape must be ``a``'s and its dtype castable to ``a``'s."""
    if tuple(r.shape) != tuple(a.shape):
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast "
                           f"shape {list(r.shape)}")
    if r.dtype != a.dtype:
        if not _dt.can_cast(r.dtype, a.dtype):
            raise RuntimeError(f"result type {r.dtype.scalar_name} can't be cast to the "
                               f"desired output type {a.dtype.scalar_name}")
        r = r.to(a.dtype)
    return r


def _check_bias_expands(bias, shape):
    """PyTorch's error when a GEMM's bias does not expand to the product's shape."""
    bs = tuple(bias.shape)
    if len(bs) > len(shape) or any(b not in (1, s) for b, s in zip(bs[::-1], shape[::-1])):
        bad = next((i for i, (b, s) in enumerate(zip(bs[::-1], shape[::-1])) if b not in (1, s)),
                   0)
        raise RuntimeError(f"The expanded size of the tensor ({shape[len(shape) - 1 - bad]}) "
                           f"must match the existing size ({bs[len(bs) - 1 - bad]}) at "
                           f"non-singleton dimension {len(shape) - 1 - bad}.  Target sizes: "
                           f"{list(shape)}.  Tensor sizes: {list(bs)}")


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: the affine map of ``nn.Linear``."""
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linear(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    # shapes read off the arrays: ``Tensor.shape`` builds a Size, and this runs per layer call
    xs = input._data.shape
    ws = weight._data.shape
    if len(ws) != 2 and len(ws) != 1:
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, got {len(ws)}-D")
    if xs[-1:] != ws[-1:]:
        rows = input.reshape(-1, xs[-1]).shape if xs else (1, 1)
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({rows[0]}x{rows[1]} and "
            f"{ws[-1]}x{ws[0]})")
    if input._data.dtype != weight._data.dtype:
        if bias is None:  # PyTorch's linear without a bias is a plain product (matmul's text)
            raise RuntimeError(
                f"expected m1 and m2 to have the same dtype, but got: "
                f"{_cpp_dtype_name(input.dtype)} != {_cpp_dtype_name(weight.dtype)}")
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {input.dtype.scalar_name} and "
            f"{weight.dtype.scalar_name}")
    if input._data.dtype == np.bool_:  # (a dtype test only: this runs per layer call)
        shape = xs[:-1] + ws[:-1]
        if len(ws) == 2 and (not math.prod(shape) or not xs[-1]):
            # PyTorch's bool GEMM kernel never runs for an empty product: False everywhere
            if bias is not None and math.prod(shape):
                raise RuntimeError("result type Long can't be cast to the desired output "
                                   "type Bool")
            return input.new_zeros(shape)
        kernel_dtype("addmm", input)
    if bias is not None and (bias._data.dtype != input._data.dtype or len(xs) == 1):
        # PyTorch adds the bias inside one GEMM (same dtype required) for 2-D input, and for
        # other contiguous input with a contiguous 1-D bias; otherwise it multiplies first
        # and adds the bias in place (any dtype the product's can take)
        if len(xs) == 2 or (bias.dim() == 1 and input.is_contiguous() and bias.is_contiguous()):
            if bias._data.dtype != input._data.dtype:
                raise RuntimeError(
                    f"self and mat2 must have the same dtype, but got "
                    f"{bias.dtype.scalar_name} and {input.dtype.scalar_name}")
        else:
            out = linear(input, weight)
            return inplace_result(out, out + bias)
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape != ws[:1]):
        _check_bias_expands(bias, xs[:-1] + ws[:-1])
    if len(ws) == 1:
        out = (input * weight).sum(-1)
        return out if bias is None else out + bias
    if _dispatch.intercept and _dispatch.state.modes and \
            (bias is None or bias._data.shape == ws[:1]):
        from ._registry import profiler_session
        session = profiler_session()
        if session is not None:
            # NOTE [ Linear under the profiler ]
            return session.composite("aten::linear", lambda: (input, weight, bias),
                                     _linear_as_torch, (input, weight, bias), {})
    xd = input._data
    if type(xd) is np.ndarray and xd.ndim == 2 and len(ws) == 2 and xd.dtype.char in "fd" and \
            not _dispatch.intercept and linear_op.builtin_cpu and \
            type(weight._data) is np.ndarray and (bias is None or (
                type(bias._data) is np.ndarray and bias._data.ndim == 1)):
        # NOTE [ Linear's direct path ]
        out = wrap(_affine(np, xd, weight._data, None if bias is None else bias._data))
        if (input._rg or weight._rg or bias is not None and bias._rg) and \
                _dispatch.record is not None and _dispatch.state.grad_enabled:
            _dispatch.record_affine(linear_op, input, weight, bias, out)
        return out
    return _dispatch.apply(linear_op, (input, weight, bias), {})


# NOTE [ Linear's direct path ]
# A layer call on 2-D float32/float64 CPU tensors with nothing intercepting ops runs what
# ``_dispatch.apply`` would (the built-in kernel on the arrays, one wrap, the autograd hook
# when an input needs a gradient) without its generic loop over the inputs: ~1 us of a
# batch-1 layer's 5. The checks above have run, and the dtypes agree; anything else (other
# dtypes and ranks, devices, modes, a replaced CPU kernel) takes the dispatcher.


# NOTE [ Linear under the profiler ]
# ember's linear is one op and one graph node; PyTorch's is a composite: the weight's
# transpose (``aten::t``, graph node ``TBackward0``) into ``aten::addmm`` (the input viewed
# as a matrix first and the product viewed back when it has another number of dims), or,
# without a bias or for input that is not contiguous, ``aten::matmul`` (then the bias added
# in place). Its profile shows each of those ops forward and each node backward
# (``AddmmBackward0`` then ``TBackward0``). While a profiler records, ember runs PyTorch's
# ops for real under the ``aten::linear`` event, so tables and traces list the same rows
# and nodes, with their own times; the result is the same GEMM on the same memory. With no
# profiler the one op runs (NOTE [ Cross entropy under the profiler ] does the same for
# that loss).


def _linear_as_torch(input, weight, bias):
    """``linear`` as PyTorch composes it (NOTE [ Linear under the profiler ])."""
    n = input.dim()
    if bias is not None and (n == 2 or input.is_contiguous()):
        if n == 2:
            return bias.addmm(input, weight.t())
        rows = input.view(-1, input.shape[-1])
        out = bias.addmm(rows, weight.t())
        return out.view(*input.shape[:-1], out.shape[-1])
    out = input.matmul(weight.t())
    return out if bias is None else out.add_(bias)


# ------------------------------------------------------------------------------------------------
# losses

_REDUCTIONS = ("none", "mean", "sum")


def reduction_enum(reduction, size_average=None, reduce=None):
    """Resolve the legacy ``size_average``/``reduce`` flags into a reduction string."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = ("mean" if size_average else "sum") if reduce else "none"
        from .._settings import warn_at_caller

        warn_at_caller("size_average and reduce args will be deprecated, please use "
                       f"reduction='{reduction}' instead.", UserWarning)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _nll_kernel(xp, logp, target, weight, *, reduction, ignore_index):
    # logp: (N, C, *) ; target: (N, *)
    if logp.ndim == 1:
        logp = logp[None]
        target = target[None]
    c = logp.shape[1]
    moved = xp.moveaxis(logp, 1, -1).reshape(target.size, c)  # (c may be 0)
    t = target.reshape(-1)
    valid = t != ignore_index
    if c == 0:
        return _no_class_loss(xp, target, valid, logp.dtype, reduction)
    safe = xp.where(valid, t, 0)
    # (ignored targets are 0 in ``safe``, never out of range; NOTE [ Deferred device checks ])
    check_range(safe, 0, c, IndexError, lambda: _target_message(safe, c))
    picked = -moved[xp.arange(moved.shape[0]), safe]
    w = xp.ones(c, moved.dtype) if weight is None else weight
    wt = w[safe] * valid
    losses = _zero_ignored(xp, valid, picked * wt)
    if reduction == "none":
        return losses.reshape(target.shape).astype(logp.dtype)
    if reduction == "sum":
        return xp.asarray(losses.sum(), dtype=logp.dtype)
    return xp.asarray(losses.sum() / wt.sum(), dtype=logp.dtype)


def _no_class_loss(xp, target, valid, dtype, reduction):
    """NLL / cross entropy over zero classes: every target must be ignored (the ``0`` an
    ignored target becomes elsewhere would be out of range here); each row's loss is 0, so
    the sum is 0 and the mean 0 / 0, nan, as PyTorch gives."""
    t = target.reshape(-1)
    if t.size and bool(valid.any()):
        raise IndexError(f"Target {int(t[valid][0])} is out of bounds.")
    if reduction == "none":
        return xp.zeros(target.shape, dtype)
    total = xp.asarray(0, dtype=dtype)
    if reduction == "sum":
        return total
    with np.errstate(invalid="ignore"):
        return xp.asarray(total / total, dtype=dtype)


def _nonzero_total(w):
    """The mean's divisor, sum(w), or 1 where it is 0: with every target ignored the mean
    loss is nan (0/0) but PyTorch's gradient is 0, and w is all zeros then. For tensors and
    arrays alike."""
    total = w.sum()
    return total + (total == 0)


def _nll_backward_kernel(xp, g, logp, target, weight, *, reduction, ignore_index):
    """``_nll_vjp``'s gradient in one pass over arrays (PyTorch's ``nll_loss_backward``):
    zeros but for each row's target class, which takes the row's scale, computed as the
    formula computes it."""
    one_d = logp.ndim == 1
    if logp.shape[0 if one_d else 1] == 0:  # no classes (every target ignored): no entries
        return xp.zeros(logp.shape, logp.dtype)
    lp = logp[None] if one_d else logp
    tg = target[None] if one_d else target
    valid = tg != ignore_index
    safe = xp.where(valid, tg, 0)
    w = valid.astype(lp.dtype) if weight is None else weight[safe]
    w = w * valid
    if reduction == "none":
        scale = -(g[None] if one_d else g) * w
    elif reduction == "sum":
        scale = -g * w
    else:
        scale = -g * w / _nonzero_total(w)
    grad = xp.zeros(lp.shape, lp.dtype)
    if grad.size:
        xp.put_along_axis(grad, xp.expand_dims(safe, 1),
                          xp.expand_dims(scale.astype(lp.dtype, copy=False), 1), axis=1)
    return grad[0] if one_d and lp.shape[1] else grad


nll_loss_backward_op = Op("nll_loss_backward", _upcast_on_cpu(_nll_backward_kernel))


def _nll_vjp(g, logp, target, weight, *, reduction, ignore_index):
    if not _dispatch.differentiable_formula(g, logp, weight) and \
            not (_dispatch.intercept and _dispatch.state.modes):
        # one kernel, as PyTorch's backward op (a profile records the node as that op)
        return _dispatch.apply(nll_loss_backward_op, (g, logp, target, weight), {
            "reduction": reduction, "ignore_index": ignore_index}), None, None
    one_d = logp.dim() == 1
    lp = logp.unsqueeze(0) if one_d else logp
    tg = target.unsqueeze(0) if one_d else target
    c = lp.shape[1]
    valid = tg != ignore_index
    safe = tg.masked_fill(~valid, 0)
    w = weight[safe] if weight is not None else valid.to(lp.dtype)
    w = w * valid
    if reduction == "none":
        scale = -(g.unsqueeze(0) if one_d else g) * w
    elif reduction == "sum":
        scale = -g * w
    else:
        scale = -g * w / _nonzero_total(w)
    onehot = zeros_like(lp).scatter(1, safe.unsqueeze(1), 1.0)
    shape = list(scale.shape)
    shape.insert(1, 1)
    grad = onehot * scale.reshape(shape)
    if c and one_d:
        grad = grad.squeeze(0)
    return grad_linked_to(grad, logp), None, None  # (torch: zeros for logp twice over)


nll_loss_op = Op("nll_loss", _upcast_on_cpu(_nll_kernel), vjp=_nll_vjp)
linear_jvp(nll_loss_op, (0,))  # linear in the log-probabilities
nll_loss_op.node_name = "NllLossBackward0"


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities
    ``input`` of shape (N, C, ...) or (C,)."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    _check_class_target_shape(input, target)
    _refuse_weight_grad(input, weight)
    _check_class_target(target, input)
    c = input.shape[1 if input.dim() > 1 else 0]
    if weight is not None and weight.shape != (c,):
        raise RuntimeError(
            f"weight tensor should be defined either for all {c} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}")
    # (torch dispatches on the input's dtype before its kernel reads the weights as that
    # dtype: a complex input with int8 weights is NotImplementedError)
    kernel_dtype("nll_loss2d" if input.dim() == 4 else "nll_loss", input)
    _check_weight_dtype(input, weight)
    loss = _dispatch.apply(nll_loss_op, (input, target, weight),
                           {"reduction": reduction, "ignore_index": ignore_index})
    if reduction == "none" and input.dim() == 1:  # one unbatched sample: a 0-d loss
        loss = loss.reshape(())
    return loss


def _refuse_weight_grad(input, weight):
    """PyTorch's NLL kernels have no derivative for the class weights: with grad mode on, a
    weight that requires grad is refused before the kernel's own checks (target range, the
    weight's shape and dtype), naming the kernel the input's rank selects."""
    if weight is not None and weight.requires_grad and _dispatch.state.grad_enabled:
        name = "nll_loss2d_forward" if input.dim() >= 3 else "nll_loss_forward"
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to "
                           "argument 'weight'. This input cannot have requires_grad True.")


def _check_weight_dtype(input, weight):
    """Class weights of another dtype than the scores are refused, as PyTorch's NLL kernels
    refuse them (no promotion)."""
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.scalar_name} but found "
                           f"{weight.dtype.scalar_name}")


def _class_rows(xp, x, target, weight, ignore_index):
    """Cross entropy's operands flattened: (rows of x (M, C) with classes last, targets with
    ignored ones replaced by class 0, and each row's weight, 0 where ignored)."""
    c = x.shape[1]
    rows = xp.moveaxis(x, 1, -1).reshape(target.size, c) if x.ndim > 2 else x  # (c may be 0)
    t = target.reshape(-1)
    valid = t != ignore_index
    safe = xp.where(valid, t, 0)
    wt = valid.astype(x.dtype) if weight is None else weight[safe] * valid
    return rows, safe, wt


def _zero_ignored(xp, keep, losses):
    """``losses`` with 0 where ``keep`` is False: an ignored row's loss is 0 even where its
    input is nan or inf. A device mask is not read on the host (the GPU would have to catch
    up first): there the zeros are written unconditionally."""
    if xp is not np or not keep.all():
        return xp.where(keep, losses, 0)
    return losses


def _target_message(safe, c):
    bad = safe[(safe < 0) | (safe >= c)][0]
    return f"Target {int(bad)} is out of bounds."


# NOTE [ Cross entropy's checks in the kernel ]
# At char_gpt's sizes (1024 rows of 98 classes) the fused kernel took ~145 us and the NumPy
# calls around it ~60 us: the valid-row mask, the targets with ignored ones replaced, the
# weights as floats, the range check, the ignored rows' zeros, each a pass and a few us of
# call. With no class weights (the common case) one compiled pass does all of it per row:
# it tests the target against ``ignore_index`` and the class range, writes the softmax and
# the loss (0 for an ignored row, as the NumPy path's ``where`` gives) and the row's 1 or 0
# that the mean divides by; the first row whose target is out of range comes back and
# raises the same IndexError, naming that target, as the NumPy path. The reductions stay
# NumPy's sums over the same arrays, so the loss is the same bits.
_LONG = (-(1 << 63), 1 << 63)


def _ce_classes(x, target, reduction, ignore_index):
    """``_ce_kernel``'s result from one compiled pass, or None where that is not covered
    (NOTE [ Cross entropy's checks in the kernel ])."""
    if type(ignore_index) is not int or not _LONG[0] <= ignore_index < _LONG[1]:
        return None
    fused = _kernels.cross_entropy_classes(x, target, ignore_index)
    if fused is None:
        return None
    probs, losses, valid, bad = fused
    if bad >= 0:
        raise IndexError(f"Target {int(target[bad])} is out of bounds.")
    # (``np.add.reduce`` is what ``ndarray.sum`` runs, without its Python frame)
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = np.asarray(np.add.reduce(losses))
    else:
        out = np.asarray(np.add.reduce(losses) / np.add.reduce(valid))
    return out, probs


def _ce_kernel(xp, x, target, weight, *, reduction, ignore_index):
    """Fused log-softmax + NLL over class indices; also returns the probabilities, which
    backward needs (NOTE [ Fused cross entropy ])."""
    if x.shape[1] == 0:
        valid = target.reshape(-1) != ignore_index
        return _no_class_loss(xp, target, valid, x.dtype, reduction), x.copy()
    if xp is np and weight is None and x.ndim == 2:
        fused = _ce_classes(x, target, reduction, ignore_index)
        if fused is not None:
            return fused
    c = x.shape[1]
    rows, safe, wt = _class_rows(xp, x, target, weight, ignore_index)
    # NOTE [ Deferred device checks ]: on a GPU the host does not wait for the test
    check_range(safe, 0, c, IndexError, lambda: _target_message(safe, c))
    fused = _kernels.cross_entropy(rows, safe, wt)
    if fused is not None:  # NOTE [ Fused kernels ] (ember/_kernels)
        probs, losses = fused
    else:
        m = rows.max(axis=1, keepdims=True) if rows.size else rows[:, :1]
        e = rows - m
        picked = e[xp.arange(rows.shape[0]), safe]
        xp.exp(e, out=e)  # in place: one (rows, classes) buffer is shifted, exp, probs
        s = row_sums(xp, e)
        picked -= xp.log(s[:, 0])
        losses = -picked * wt
        probs = xp.divide(e, s, out=e)
    losses = _zero_ignored(xp, target.reshape(-1) != ignore_index, losses)
    if x.ndim > 2:
        probs = xp.moveaxis(probs.reshape((x.shape[0],) + x.shape[2:] + (c,)), -1, 1)
    if reduction == "none":
        out = losses.reshape(target.shape)
    elif reduction == "sum":
        out = xp.asarray(losses.sum())
    else:
        out = xp.asarray(losses.sum() / wt.sum())
    return out.astype(x.dtype, copy=False), probs.astype(x.dtype, copy=False)


def _ce_backward_kernel(xp, g, probs, target, weight, *, reduction, ignore_index):
    """d loss / d logits = scale * (softmax - onehot(y)), scale = w[y] * g (/ sum of w[y]
    for the mean): one scaled copy of the saved probabilities, then one scatter."""
    c = probs.shape[1]
    if c == 0:  # no classes (every target ignored): no entries
        return xp.zeros(probs.shape, probs.dtype)
    if xp is np and weight is None and probs.ndim == 2 and reduction != "none" and \
            g.dtype == probs.dtype and 0 < probs.shape[0] <= _EXACT_COUNT:
        # NOTE [ Cross entropy's backward without ignored rows ]
        t = target.reshape(-1)
        if (t != ignore_index).all():
            m = probs.shape[0]
            v = g / probs.dtype.type(m) if reduction == "mean" else g
            gx = _kernels.cross_entropy_backward(probs, t, np.full(m, v, probs.dtype))
            if gx is not None:
                return gx
    rows, safe, wt = _class_rows(xp, probs, target, weight, ignore_index)
    if reduction == "none":
        scale = wt * g.reshape(-1)
    elif reduction == "sum":
        scale = wt * g
    else:
        scale = wt * (g / _nonzero_total(wt))
    scale = scale.astype(probs.dtype, copy=False)
    gx = _kernels.cross_entropy_backward(rows, safe, scale)
    if gx is None:  # no fused kernel (NOTE [ Fused kernels ])
        gx = rows * scale[:, None]
        gx[xp.arange(rows.shape[0]), safe] -= scale
    if probs.ndim > 2:
        gx = xp.moveaxis(gx.reshape((probs.shape[0],) + probs.shape[2:] + (c,)), -1, 1)
    return gx


# NOTE [ Cross entropy's backward without ignored rows ]
# With no class weights and no row ignored (a training batch), each row's weight is 1 and
# the mean divides by the row count, so the rows' common scale is ``g / rows`` (``g`` for the
# sum) and the targets are used as they are: the general path's valid mask, safe targets,
# weights, their sum and the scaled copy (six NumPy calls, ~3 us) give the same values --
# ``1 * v`` is ``v`` and a float sum of up to ``_EXACT_COUNT`` ones is exact -- so the
# compiled kernel gets them directly. ``none`` (a scale per row from ``g``), weights, ignored
# rows and devices take the general path.
_EXACT_COUNT = 1 << 24


cross_entropy_backward_op = Op("cross_entropy_loss_backward",
                               _upcast_on_cpu(_ce_backward_kernel))


def _ce_vjp(grads, x, target, weight, *, reduction, ignore_index, out):
    g = grads[0]
    # NOTE [ Fused cross entropy ]: d loss / d logits = w[y] (softmax - onehot(y)) / denom;
    # under create_graph (or forward-over-reverse) the softmax is recomputed so the formula
    # stays differentiable
    if not _dispatch.differentiable_formula(g, x, weight):
        gd, pd = g._data, out[1]._data
        if not _dispatch.intercept and type(gd) is np.ndarray and type(pd) is np.ndarray and \
                pd.dtype.char in "fd" and gd.dtype is pd.dtype and weight is None and \
                cross_entropy_backward_op.builtin_cpu:
            # NOTE [ Cross entropy's direct path ]
            return wrap(_ce_backward_kernel(np, gd, pd, target._data, None,
                                            reduction=reduction,
                                            ignore_index=ignore_index)), None, None
        return _dispatch.apply(cross_entropy_backward_op, (g, out[1], target, weight), {
            "reduction": reduction, "ignore_index": ignore_index}), None, None
    p = x.softmax(1)
    c = x.shape[1]
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    shape = [1] * x.dim()
    shape[1] = c
    onehot = (safe.unsqueeze(1) == arange(c, device=x.device).reshape(shape)).to(x.dtype)
    wt = valid.to(x.dtype) if weight is None else weight[safe] * valid
    if reduction == "none":
        scale = g * wt
    elif reduction == "sum":
        scale = g * wt
    else:
        scale = g * wt / _nonzero_total(wt)
    return (p - onehot) * scale.unsqueeze(1), None, None


cross_entropy_op = Op("cross_entropy_loss", _upcast_on_cpu(_ce_kernel), vjp=_ce_vjp,
                      nondiff_outputs=(1,))
# the probabilities only: the loss itself may be changed in place (``loss += aux``)
cross_entropy_op.saved_outputs = (1,)


@cross_entropy_op.defjvp
def _ce_jvp(x_dots, x, target, weight, *, reduction, ignore_index, out):
    # d(-log softmax(x)[y]) = <softmax(x), dx> - dx[y], weighted and reduced as the loss
    xd = x_dots[0]
    if xd is None:
        return None
    recompute = _dispatch.state.grad_enabled and (x._rg or xd._rg)
    p = x.softmax(1) if recompute else out[1]
    valid = target != ignore_index
    safe = target.masked_fill(~valid, 0)
    t = (p * xd).sum(1) - xd.gather(1, safe.unsqueeze(1)).squeeze(1)
    wt = valid.to(x.dtype) if weight is None else weight[safe] * valid
    t = t * wt
    if reduction == "none":
        return t, None
    if reduction == "sum":
        return t.sum(), None
    return t.sum() / _nonzero_total(wt), None
cross_entropy_op.node_name = "NllLossBackward0"


def _check_class_target_shape(input, target):
    """Class indices ``target`` must have ``input``'s shape without the class dimension:
    torch's errors (ValueError for the batch size, RuntimeError for the rest)."""
    n_in, n_t = input.dim(), target.dim()
    if n_in >= 2 and (n_t == 0 or target.shape[0] != input.shape[0]):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if n_t else 0}).")
    if n_in <= 2:
        if n_t > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if n_in == 1 and n_t == 1 and target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target "
                             f"size: {target.shape[0]}")
    elif n_in == 4:
        if n_t != 3:
            raise RuntimeError("only batches of spatial targets supported (3D tensors) but "
                               f"got targets of dimension: {n_t}")
        if tuple(target.shape[1:]) != tuple(input.shape[2:]):
            raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: "
                               f"{list(target.shape)}")
    elif tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0]] + list(input.shape[2:])}, "
                           f"got {list(target.shape)}")
    elif input.shape[1] == 0 and target.numel():
        # torch folds 3-D and 5-D+ scores into 4-D (N, C, 1, -1) for its 2-D kernel, and
        # with no classes the folded scores hold no spatial values, so the sizes disagree
        n = input.shape[0]
        raise RuntimeError(f"size mismatch (got input: [{n}, 0, 0, 0] , target: "
                           f"[{n}, 1, {target.numel() // n}]")


def _check_class_target(target, input=None):
    """Class indices must be int64 or uint8, as in torch (int32 targets are refused); an
    ``input`` of 3 or more dims takes torch's 2-d kernel, which wants int64 only."""
    if target._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {target.dtype.scalar_name}")
    if input is not None and input.dim() > 2 and target._data.dtype == np.uint8:
        raise RuntimeError("expected scalar type Long but found Byte")


def _fused_cross_entropy(input, target, weight, ignore_index, reduction):
    # torch takes the log-softmax first, so its dtype error comes before any target check
    kernel_dtype("log_softmax_lastdim" if input.dim() <= 2 else "log_softmax", input)
    _check_class_target_shape(input, target)
    _check_class_target(target, input)
    if weight is not None and tuple(weight.shape) != (input.shape[1],):
        raise RuntimeError(
            f"weight tensor should be defined either for all {input.shape[1]} classes or no "
            f"classes but got weight tensor of shape: {list(weight.shape)}")
    _check_weight_dtype(input, weight)
    if _dispatch.intercept and _dispatch.state.modes:
        from ._registry import profiler_session
        session = profiler_session()
        if session is not None:
            # NOTE [ Cross entropy under the profiler ]
            return session.composite(
                "aten::cross_entropy_loss",
                lambda: (input, target, weight, _REDUCTIONS.index(reduction), ignore_index, 0.0),
                _split_cross_entropy, (input, target, weight, ignore_index, reduction), {})
    loss, _ = _dispatch.apply(cross_entropy_op, (input, target, weight),
                              {"reduction": reduction, "ignore_index": ignore_index})
    return loss


def _cross_entropy_direct(input, target, ignore_index, reduction):
    """The loss of 2-D float32/float64 CPU scores against one int64 class index per row,
    without class weights, straight on the arrays (NOTE [ Cross entropy's direct path ]), or
    None where the checked path runs."""
    xd = input._data if isinstance(input, Tensor) else None
    td = target._data if isinstance(target, Tensor) else None
    if type(xd) is not np.ndarray or type(td) is not np.ndarray or xd.ndim != 2 or \
            td.ndim != 1 or xd.dtype.char not in "fd" or td.dtype != np.int64 or \
            td.shape[0] != xd.shape[0] or not xd.shape[1] or not cross_entropy_op.builtin_cpu:
        return None
    params = {"reduction": reduction, "ignore_index": ignore_index}
    loss, probs = _ce_kernel(np, xd, td, None, **params)
    loss = wrap(loss)
    if input._rg and _dispatch.record is not None and _dispatch.state.grad_enabled:
        _dispatch.record(cross_entropy_op, (input, target, None), params, (loss, wrap(probs)))
    return loss


# NOTE [ Cross entropy's direct path ]
# A training step's loss is one call of cross entropy on (batch, classes) scores and a
# batch of int64 targets: the usual checks (shapes, dtypes, weight, smoothing, half
# precision) all pass for such operands, and the dispatcher would only find the CPU kernel
# and wrap its two results. With nothing intercepting ops and the built-in CPU kernel in
# place, those operands go to ``_ce_kernel`` at once and its results are wrapped and
# recorded as ``_dispatch.apply`` would (~5 us of a batch-1 loss's 10). The backward's
# kernel is called as directly (``_ce_vjp``). Any other operands, class weights, label
# smoothing, modes and the profiler take the checked path.


# NOTE [ Cross entropy under the profiler ]
# ember's cross entropy is one fused kernel (log-softmax and the pick of the target's entry
# in one pass, one graph node); PyTorch's is a composite of ``log_softmax`` and
# ``nll_loss``, and its profile shows both, forward (``aten::log_softmax`` >
# ``aten::_log_softmax``, ``aten::nll_loss_nd`` > ``aten::nll_loss`` >
# ``aten::nll_loss_forward``) and backward (``NllLossBackward0`` then
# ``LogSoftmaxBackward0``). While a profiler records, ember runs PyTorch's two ops for real
# under the ``aten::cross_entropy_loss`` event, so the table and the trace hold the rows a
# PyTorch user looks for, with their own times and the graph PyTorch builds; the loss is
# the same up to rounding. With no profiler the fused kernel runs.


def _split_cross_entropy(input, target, weight, ignore_index, reduction):
    """Cross entropy as PyTorch composes it: ``nll_loss(log_softmax(input, 1))``."""
    return nll_loss(log_softmax(input, 1), target, weight, ignore_index=ignore_index,
                    reduction=reduction)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy between logits ``input`` (N, C, ...) and class indices or class
    probabilities ``target``."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if weight is None and label_smoothing == 0 and not _dispatch.intercept:
        direct = _cross_entropy_direct(input, target, ignore_index, reduction)
        if direct is not None:
            return direct
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}")
    class_dim = 1 if input.dim() > 1 else 0
    # a target of the input's shape holds class probabilities; any other, class indices
    probs = tuple(target.shape) == tuple(input.shape)
    if probs and not target.is_floating_point():
        raise RuntimeError(f"Expected floating point type for target with class "
                           f"probabilities, got {target.dtype.scalar_name}")
    half = input.dtype.is_floating_point and input.dtype.itemsize == 2
    if not probs and weight is not None and weight.requires_grad:
        # class indices go through torch's NLL kernels, which refuse a weight needing grad
        # (after the shape checks); class probabilities are differentiable in the weight
        _check_class_target_shape(input, target)
        _refuse_weight_grad(input, weight)
    if label_smoothing == 0 and input.dim() > 1 and not probs and not half:
        # (float16/bfloat16 go as torch's: the half log-softmax, then NLL)
        return _fused_cross_entropy(input, target, weight, ignore_index, reduction)
    logp = log_softmax(input, class_dim)
    if probs:
        c = input.shape[class_dim]
        if label_smoothing > 0:  # (no classes: an empty target, whatever the share)
            target = target * (1 - label_smoothing) + label_smoothing / max(c, 1)
        per = logp * target
        if weight is not None:
            shape = [1] * input.dim()
            shape[class_dim] = c
            per = per * weight.reshape(shape)
        # (torch's steps and nodes: the reductions sum every score at once, the mean then
        # divides by a number, ``DivBackward1``)
        if reduction == "none":
            return -per.sum(class_dim)
        if reduction == "sum":
            return -per.sum()
        if not input.numel():  # torch's mean of no scores is NaN, whatever the batch
            return -per.sum() * float("nan")
        return _node_names.rename(-per.sum() / (input.numel() // c), "DivBackward1")
    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing > 0:
        c = input.shape[class_dim]
        valid = (target != ignore_index)
        if weight is not None:
            shape = [1] * input.dim()
            shape[class_dim] = c
            smooth = -(logp * weight.reshape(shape)).sum(class_dim)
        else:
            smooth = -logp.sum(class_dim)
        smooth = smooth.masked_fill(~valid, 0.0)  # (0 for an ignored row's nan, too)
        if reduction == "none":
            smooth_red = smooth
        elif reduction == "sum":
            smooth_red = smooth.sum()
        elif weight is not None:
            # (torch gathers the class weights, so a uint8 target is refused here)
            picked = weight.gather(0, target.masked_fill(~valid, 0).reshape(-1))
            wsum = picked.reshape(target.shape) * valid
            smooth_red = smooth.sum() / wsum.sum()
        else:
            smooth_red = smooth.sum() / valid.sum()
        # (torch's Scalar products, ``MulBackward1``)
        # (no classes: torch's share is label_smoothing / 0, inf, and the sum of no scores
        # times it NaN)
        share = label_smoothing / c if c else math.inf
        loss = _node_names.rename(loss * (1 - label_smoothing), "MulBackward1") + \
            _node_names.rename(smooth_red * share, "MulBackward1")
    return loss


def _mse_kernel(xp, a, b, *, reduction):
    d = a - b
    sq = d * d
    if reduction == "none":
        return sq
    # half precision: torch's reductions sum in float32 and round once (NumPy's float16 sum
    # would round every pairwise step)
    acc = np.float32 if sq.dtype.itemsize == 2 and sq.dtype.kind != "i" else None
    r = sq.sum(dtype=acc) if reduction == "sum" else sq.mean(dtype=acc)
    return xp.asarray(r).astype(sq.dtype)


def _mse_vjp(g, a, b, *, reduction):
    d = a - b
    if reduction == "mean":
        norm = 2.0 / max(d.numel(), 1)
        if d.dtype in (_dt.float16, _dt.bfloat16):
            # torch scales in place by the factor rounded to the dtype (a Scalar mul_)
            norm = float(np.asarray(norm, np.float32).astype(d.dtype.np))
        gd = d * norm * g
    else:
        gd = 2.0 * d * g
    return gd, -gd


def _mse_jvp(x_dots, a, b, *, reduction, out):
    da, db = x_dots
    d_dot = da if db is None else db.neg() if da is None else da - db
    r = 2.0 * (a - b) * d_dot
    return r if reduction == "none" else r.sum() if reduction == "sum" else r.mean()


mse_loss_op = Op("mse_loss", _mse_kernel, vjp=_mse_vjp, jvp=_mse_jvp)
mse_loss_op.node_name = "MseLossBackward0"


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error between ``input`` and ``target`` (broadcast as PyTorch does, with
    a warning when the shapes differ)."""
    reduction = reduction_enum(reduction, size_average, reduce)
    if input.shape != target.shape:
        from .._settings import warn_at_caller

        warn_at_caller(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.")
    if input.shape != target.shape or _dispatch.intercept:
        # as PyTorch's functional, which a profile shows as ``aten::broadcast_tensors``
        input, target = broadcast_tensors(input, target)
    if weight is not None:
        loss = weight * (input - target) ** 2
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.mean()
    if input._data.dtype != target._data.dtype:  # PyTorch's promotion, not NumPy's
        dt = _dt.result_type(input, target)
        input, target = input.to(dt), target.to(dt)
    kernel_dtype("mse", input)
    return _dispatch.apply(mse_loss_op, (input, target), {"reduction": reduction})


# ------------------------------------------------------------------------------------------------
# embedding


def _embedding_vjp(g, _weight, indices, *, padding_idx, num_weights, sparse=False,
                   scale_grad_by_freq=False):
    # (``sparse`` and ``scale_grad_by_freq`` are in the params only when set: NOTE [ Sparse
    # embedding gradients ])
    if sparse:
        if scale_grad_by_freq:
            raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with "
                               "sparse gradients")
        from ..sparse import _grad

        return _grad.embedding_grad(g, indices, num_weights, padding_idx), None
    if scale_grad_by_freq:
        g = g * _inverse_counts(indices, num_weights, g)
    return _dispatch.apply(embedding_backward_op, (g, indices),
                           {"num_weights": num_weights, "padding_idx": padding_idx}), None


def _inverse_counts(indices, num_weights, like):
    """``1 / (lookups of the row)`` for each lookup, shaped to scale its gradient row."""
    from .from_data import tensor

    a = np.asarray(indices._data).reshape(-1)
    counts = np.bincount(a, minlength=num_weights)[a]
    scale = tensor(1.0 / counts, dtype=like.dtype, device=like.device)
    return scale.reshape(tuple(indices.shape) + (1,))


def _embedding_kernel_p(xp, weight, indices, *, padding_idx, num_weights, **_):
    return weight[indices]


def _embedding_backward_kernel(xp, g, indices, *, num_weights, padding_idx):
    dim = g.shape[-1]
    flat = indices.reshape(-1)
    gf = g.reshape(flat.shape[0], dim)  # (not -1: a table of width 0 leaves it ambiguous)
    if xp is not np:
        out = xp.zeros((num_weights, dim), dtype=g.dtype)
        ufunc_at(xp, "add", out, flat, gf)  # NOTE [ Portable array code ]
    else:
        # np.add.at is slow; both paths below sum each row's lookups in lookup order
        order = flat.argsort(kind="stable")
        sf = flat[order]
        if g.dtype in (np.float32, np.float64) and flat.size:
            # the gradient is S @ g for the (num_weights, n) 0/1 matrix S with S[idx[j], j]
            # = 1: SciPy's sparse product of it as a CSR matrix is 6x faster than reduceat
            from .._lazy_import import import_module

            scipy_sparse = import_module("scipy.sparse")
            starts = np.searchsorted(sf, np.arange(num_weights + 1))
            sel = scipy_sparse.csr_matrix((np.ones(flat.size, g.dtype), order, starts),
                                          shape=(num_weights, flat.size))
            out = np.ascontiguousarray(sel @ gf)
        else:
            # half precision: torch adds each row's lookups onto it one after another in
            # lookup order, each add rounded to the dtype (NumPy's reduceat would sum a
            # float16 run in float32); the r-th lookups of all rows are one add
            out = np.zeros((num_weights, dim), dtype=g.dtype)
            if sf.size:
                starts = np.flatnonzero(np.r_[True, sf[1:] != sf[:-1]])
                rank = np.arange(sf.size) - np.repeat(starts, np.diff(np.r_[starts, sf.size]))
                for r in range(int(rank.max()) + 1):
                    at = rank == r
                    out[sf[at]] += gf[order[at]]
    if padding_idx is not None and padding_idx >= 0:
        out[padding_idx] = 0
    return out


def _embedding_backward_vjp(gw, _g, indices, *, num_weights, padding_idx):
    if padding_idx is not None and padding_idx >= 0:
        gw = gw.index_fill(0, _scalar_index(padding_idx, gw), 0)
    return _dispatch.apply(embedding_op, (gw, indices), {"padding_idx": padding_idx,
                                                         "num_weights": num_weights}), None


def _scalar_index(i, like):
    from .from_data import tensor

    return tensor([i], device=like.device)


def _embedding_jvp(x_dots, _weight, indices, *, out, **params):
    # linear in the weight; padding_idx only masks the backward
    return None if x_dots[0] is None else \
        _dispatch.apply(embedding_op, (x_dots[0], indices), params)


def _embedding_backward_jvp(x_dots, _g, indices, *, out, **params):
    return None if x_dots[0] is None else \
        _dispatch.apply(embedding_backward_op, (x_dots[0], indices), params)


embedding_op = Op("embedding", _embedding_kernel_p, vjp=_embedding_vjp, jvp=_embedding_jvp)
embedding_op.node_name = "EmbeddingBackward0"
embedding_backward_op = Op("embedding_backward", _embedding_backward_kernel,
                           vjp=_embedding_backward_vjp, jvp=_embedding_backward_jvp)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` selected by the integer ``input`` (any shape).

    NOTE [ Sparse embedding gradients ]
    With ``sparse=True`` the table's gradient is a sparse COO tensor holding one row per
    lookup, in lookup order, uncoalesced, with the lookups of ``padding_idx`` left out --
    PyTorch's form, which ``SparseAdam``, ``SGD`` and ``Adagrad`` take and which prints as
    PyTorch's does (ember/sparse/_grad.py builds it). ``scale_grad_by_freq`` divides each
    lookup's gradient row by the number of lookups of its row in the call (dense gradients
    only, as in PyTorch). Both ride in the op's params only when set, so the common call's
    params and backward stay as they were.
    """
    if input._data.dtype not in (np.int64, np.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {type_name_in_check(input.dtype, input.is_cuda)} "
            "instead (while checking arguments for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    no_complex_autograd("embedding", weight.dtype, weight)
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    if num == 0 and input.numel():
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    per_example = _dispatch.intercept and _per_example(input)
    if not per_example:  # NOTE [ Deferred device checks ]: no host wait on a GPU
        if weight.dim() == 2 and weight.shape[1] == 0:
            # rows of no elements: torch gathers through another kernel, which words it so
            def message():
                a = np.asarray(input._data).reshape(-1)
                return (f"INDICES element is out of DATA bounds, "
                        f"id={int(a[(a < 0) | (a >= num)][0])} axis_dim={num}")
            check_range(input._data, 0, num, RuntimeError, message)
        check_range(input._data, 0, num, IndexError, "index out of range in self")
    if max_norm is not None:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            rows = input.reshape(-1).unique()
            sel = weight[rows]
            norms = sel.norm(p=norm_type, dim=1, keepdim=True)
            scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
            weight[rows] = sel * scale
    params = {"padding_idx": padding_idx, "num_weights": num}
    if sparse or scale_grad_by_freq:  # NOTE [ Sparse embedding gradients ]
        if sparse:
            from . import reduction

            reduction.sum_grad_views = True  # NOTE [ Sum gradients as views ]
        params["sparse"] = bool(sparse)
        params["scale_grad_by_freq"] = bool(scale_grad_by_freq)
    out = _dispatch.apply(embedding_op, (weight, input), params)
    # the lookup rides on its output (NOTE [ Lookups a layer can fold ]): it dies with it
    # (not under vmap, where ``input._data`` holds one example's indices)
    if not per_example:
        out.__dict__["_lookup"] = (out._data, weakref.ref(weight), weight._version,
                                   weight._data, input._data)
    return out


def _per_example(t):
    """Whether ``t`` is one example of a ``vmap`` batch: its array holds one example's
    values, so no check may read them."""
    from ..func._batch_tensor import batch_info

    return batch_info(t) is not None


# NOTE [ Lookups a layer can fold ]
# A layer that starts with a GEMM on its input, like the LSTM's input projection, can take an
# embedding's output as rows of the table: (table @ W.T)[indices] equals table[indices] @ W.T
# with a GEMM over the vocabulary instead of over every token, and the weight gradient
# d.T @ table[indices] equals (S @ d).T @ table, where S @ d sums the rows of d by index --
# what the embedding's own backward computes. A character-level LSTM language model has a
# vocabulary of about a hundred against thousands of tokens a batch, so both GEMMs almost
# vanish. ``embedding`` records the lookup on its output tensor for this (so the record
# lives and dies with the output, and threads never see each other's), and ``lookup_source``
# hands the table and indices back only while that output and the table are unchanged since
# the lookup (same version counters, same arrays, neither an inference tensor), so the values
# the layer uses are the ones it was given.
# The output's own autograd history is untouched: the layer still returns a gradient for
# it, so hooks, retain_grad and autograd.grad on it see what they would without the fold.
def lookup_source(t):
    """(table, indices) as tensors outside autograd when ``t`` is the unchanged output of an
    ``embedding`` call on a table that is also unchanged, else None (NOTE [ Lookups a
    layer can fold ])."""
    entry = t.__dict__.get("_lookup") if type(t) is Tensor else None
    if entry is None:
        return None
    values, weight_ref, version, table, indices = entry
    # unchanged: not written in place (version), not given new data (``.data =``); an
    # inference tensor keeps no version counter, so a write to one could not be seen
    if t._version != 0 or t._data is not values or t.is_inference():
        return None
    weight = weight_ref()
    if (weight is None or weight._version != version or weight._data is not table
            or weight.is_inference()):
        return None
    return wrap(table), wrap(indices)


# ------------------------------------------------------------------------------------------------
# bilinear


@public(method=False)
@recorded_as("aten::bilinear")
def bilinear(input1, input2, weight, bias=None):
    """Bilinear map ``y_k = x1^T W_k x2 + b_k`` over the last dims.

    Args:
        input1: ``(*, in1)``.
        input2: ``(*, in2)``, the same leading shape.
        weight: ``(out, in1, in2)``.
        bias: ``(out,)`` or None.

    Returns:
        ``(*, out)``.

    Example:
        >>> import ember
        >>> ember.bilinear(ember.ones(1, 2), ember.ones(1, 3), ember.ones(4, 2, 3)).shape
        ember.Size([1, 4])
    """
    from .linalg_contract import einsum

    given = [t for t in (input1, input2, weight, bias) if isinstance(t, Tensor)]
    if any(t.dtype != input1.dtype for t in given):
        names = ("input1", "input2", "weight", "bias")
        c = _dispatch._C_NAMES  # (torch names them in C++)
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{n}: {c.get(t.dtype.scalar_name, t.dtype.scalar_name)}" for n, t in zip(
                names, (input1, input2, weight, bias)) if isinstance(t, Tensor)))
    kernel_dtype("bmm", input1)
    for t in (input1, input2):
        if t.shape[-1] == 0:  # torch takes (-1, features) rows: ambiguous when empty
            raise RuntimeError("cannot reshape tensor of 0 elements into shape [-1, 0] "
                               "because the unspecified dimension size -1 can be any value "
                               "and is ambiguous")
    no_complex_autograd("_trilinear", input1.dtype, input1, input2, weight)
    # PyTorch's order (its _trilinear): input1 with the weight first, then input2; which
    # products meet first decides NaN against inf for non-finite values
    y = einsum("...kj,...j->...k", einsum("...i,kij->...kj", input1, weight), input2)
    return y + bias if bias is not None else y
