"""Normalisation: layer_norm and batch_norm as fused ops; group, instance, RMS and local
response normalisation composed from them.

The fused kernels compute the statistics once and return them (as PyTorch's native ops do)
so backward reuses them; the derivative formulas are the standard closed forms written in
ember ops, so they are themselves differentiable.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from .. import _dispatch, _kernels
from .._core import dtype as _dt
from .._core.checks import holds_values
from . import _node_names
from ._memory_format import keep_layout
from ._registry import Op, public, recorded_as
from .linalg import channel_sums, col_sums, row_sums
from .nn_checks import kernel_dtype, norm_param_dtypes


# NOTE [ Per-channel factors ]
# A product of an (N, C, *S) array with a (1, C, 1, ...) factor runs NumPy's inner loop over
# one plane at a time, S values, and on small planes the loop overhead dominates: at 4x4 the
# broadcast product takes 5x as long as a same-shape one. Up to _SPREAD_PLANE values a plane,
# batch norm takes x as (N, C*S) rows and spreads each factor to one value per element of a
# sample, (C*S,): the inner loop then spans a whole sample. Measured on (32, C, H, W) float32:
# 0.48 -> 0.29 ms at 32x32, 0.16 -> 0.07 at 8x8, 0.13 -> 0.04 at 4x4.
_SPREAD_PLANE = 4096


def _channel_rows(xp, x):
    """x as rows for per-channel arithmetic, and the function that shapes a (1, C, 1, ...)
    factor to match them (NOTE [ Per-channel factors ])."""
    plane = math.prod(x.shape[2:])
    if x.ndim < 3 or plane > _SPREAD_PLANE:
        return x, lambda k: k
    rows = x.reshape(x.shape[0], math.prod(x.shape[1:]))  # (not -1: N may be 0)
    return rows, lambda k: xp.repeat(k.reshape(-1), plane)


def _moments(xp, x, axes):
    """Mean and biased variance over ``axes`` (kept), from the centred values; the sums over
    batch norm's and layer norm's axes go through BLAS (NOTE [ Sums through BLAS ])."""
    rows, spread = x, None
    if axes == (0,) + tuple(range(2, x.ndim)):
        def total(a):
            return channel_sums(xp, a)
        rows, spread = _channel_rows(xp, x)
    elif axes == tuple(range(x.ndim - len(axes), x.ndim)):
        def total(a):
            return row_sums(xp, a, len(axes))
    else:
        def total(a):
            return a.sum(axis=axes, keepdims=True)
    n = math.prod(x.shape[i] for i in axes)
    mean = total(x) / n
    d = rows - (mean if spread is None else spread(mean))
    xp.multiply(d, d, out=d)  # squared in place: one buffer, not two
    return mean, total(d.reshape(x.shape)) / n


# ------------------------------------------------------------------------------------------------
# layer_norm


def _layer_norm_kernel(xp, x, w, b, *, ndim, eps):
    if xp is not np:
        fused = _kernels.layer_norm(x, w, b, ndim, eps)  # a device's fused kernel: it also
        if fused is not None:  # gives rows holding an infinity their NaN mean
            return fused
    fused = None
    if xp is np and x.dtype == np.float32:
        # the compiled kernel tells whether a row comes near the top of float32 as it goes,
        # instead of two more reductions here (NOTE [ Welford lanes of torch's norms ])
        fused = _kernels.layer_norm(x, w, b, ndim, eps, near=_WELFORD_BOUNDS[x.dtype])
    if fused is not None:
        y, mean, rstd, near = fused
        if not near:  # nor an infinite mean (inf >= q): nothing below applies
            return y, mean, rstd
        y, mean, rstd = _welford_lane_nan(x, w, b, y, mean, rstd, ndim, eps)
    else:
        y, mean, rstd = _layer_norm_parts(xp, x, w, b, ndim, eps)
        if not holds_values(mean):  # the meta device: no values to look at
            return y, mean, rstd
        if xp is np:
            y, mean, rstd = _welford_lane_nan(x, w, b, y, mean, rstd, ndim, eps)
    if xp is not np:  # the same fix-up as below, without a round trip to the host
        axes = tuple(range(x.ndim - ndim, x.ndim))
        inf = xp.isinf(mean) & xp.isinf(x).any(axis=axes, keepdims=True).reshape(mean.shape)
        return y, xp.where(inf, xp.asarray(float("nan"), dtype=mean.dtype), mean), rstd
    inf = xp.isinf(mean)
    if inf.any():
        # a row holding an infinity: torch's running mean meets inf - inf (a mean that
        # overflowed from finite values stays infinite)
        axes = tuple(range(x.ndim - ndim, x.ndim))
        inf &= xp.isinf(x).any(axis=axes, keepdims=True).reshape(inf.shape)
        mean = xp.where(inf, xp.asarray(float("nan"), dtype=mean.dtype), mean)
    return y, mean, rstd


# NOTE [ Welford lanes of torch's norms ]
# torch's CPU layer norm (and group norm) takes a row's moments by Welford's method in SIMD
# lanes (AVX2: 8 float32 or 4 float64 values a vector), not by two passes: chunks of 16
# vectors each feed a vector Welford pass, chunks merge pairwise (a cascade), the tail that
# fills no vector gets a scalar pass, and each lane is then merged into the tail's moments,
# a merge adding ``delta**2 * c * count`` to the sum of squares (delta the difference of the
# two means, c the lane's share, count the elements merged so far). Two things differ from
# ember's passes where values are near the top of the dtype: the running mean never forms a
# sum (so it stays finite where ember's sum overflows, or meets inf - inf when one delta
# overflows), and where the tail is empty (count 0 at the first lane merge) or the row is
# shorter than a vector (c 0), that term is ``inf * 0`` once delta**2 overflows, so the
# variance, rstd and the whole row are NaN: a float64 row of 8 values 1e155 normalises to
# NaN (its variance is 0). Measured in torch 2.13: merges into the still-empty cascade add
# no such term. Only rows whose mean and spread allow a value beyond sqrt(max) / 2 (any lane
# mean differs from the mean by at most sqrt(lanes) * std) are replayed, in the dtype, by
# the function below; the test costs a few operations per row. The compiled float32 layer
# norm makes it as it finishes each row (``_WELFORD_BOUNDS``; a row with an infinite mean
# counts too), which saved two reductions and the infinity check after the kernel, ~20 us a
# call at char_gpt's 1024 rows of 128; elsewhere two reductions over the statistics make it.
_WELFORD_LANES = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}
#: dtype -> (its largest value, a quarter of that value's square root)
_WELFORD_LIMITS = {d: (np.finfo(d).max, math.sqrt(np.finfo(d).max) / 4) for d in _WELFORD_LANES}
#: dtype -> the bounds of the quick test below, (q, sqrt(lanes) / q) in the dtype: no row
#: has |mean| >= q or rstd <= sqrt(lanes) / q (NaN rows aside) in the common case
_WELFORD_BOUNDS = {d: (d.type(q), d.type(math.sqrt(_WELFORD_LANES[d]) / q))
                   for d, (_, q) in _WELFORD_LIMITS.items()}


def _lane_moments(rows, lanes):
    """(mean, biased variance) of each row of ``rows`` (R, N) as torch's CPU kernel forms
    them (NOTE [ Welford lanes of torch's norms ]), in the rows' dtype."""
    t = rows.dtype.type
    count, size = rows.shape
    whole = size // lanes
    chunks = -(-whole // 16)
    depth = 1 if chunks <= 2 else (chunks - 1).bit_length()
    stack = [[0, np.zeros((count, lanes), t), np.zeros((count, lanes), t)]
             for _ in range(depth)]

    def merge(k, m1, m2, into):
        total = into[0] + k
        if into[0] == 0:  # the empty cascade takes the moments as they are
            into[:] = [total, m1, m2]
            return
        c = t(k) / t(total)
        delta = m1 - into[1]
        into[:] = [total, into[1] + delta * c, into[2] + (m2 + delta * delta * c * t(into[0]))]

    vecs = rows[:, :whole * lanes].reshape(count, whole, lanes)
    for i in range(chunks):
        m1, m2 = np.zeros((count, lanes), t), np.zeros((count, lanes), t)
        for j in range(min(16, whole - 16 * i)):
            v = vecs[:, 16 * i + j]
            delta = v - m1
            m1 = m1 + delta * (t(1) / t(j + 1))
            m2 = m2 + delta * (v - m1)
        merge(min(16, whole - 16 * i), m1, m2, stack[0])
        mask = i + 1
        for j in range(1, depth):
            if mask & 1:
                break
            merge(*stack[j - 1], stack[j])
            stack[j - 1] = [0, np.zeros((count, lanes), t), np.zeros((count, lanes), t)]
            mask >>= 1
    for j in range(1, depth):
        merge(*stack[j], stack[0])
    k, m1, m2 = 0, np.zeros(count, t), np.zeros(count, t)
    for i in range(whole * lanes, size):  # the tail, one value at a time
        delta = rows[:, i] - m1
        k += 1
        m1 = m1 + delta / t(k)
        m2 = m2 + delta * (rows[:, i] - m1)
    for lane in range(lanes):  # each lane into the tail's moments: here count may be 0
        total = k + whole
        c = t(0) if total == 0 else t(whole) / t(total)
        delta = stack[0][1][:, lane] - m1
        m1 = m1 + c * delta
        m2 = m2 + (stack[0][2][:, lane] + delta * delta * c * t(k))
        k = total
    return m1, m2 / t(size)


def _welford_lane_nan(x, w, b, y, mean, rstd, ndim, eps):
    """``(y, mean, rstd)`` with the rows whose values come near the top of the dtype
    replayed as torch's CPU kernel forms them (NOTE [ Welford lanes of torch's norms ]);
    x is a NumPy array normalised over its last ``ndim`` axes (weight w, bias b), mean and
    rstd one value per row."""
    lanes = _WELFORD_LANES.get(x.dtype)
    if lanes is None or type(x) is not np.ndarray or not x.size:
        return y, mean, rstd
    big, q = _WELFORD_LIMITS[x.dtype]
    # |mean| + sqrt(lanes) * std >= sqrt(max) / 2 needs |mean| or sqrt(lanes) * std beyond
    # sqrt(max) / 4: two reductions over the rows decide the common case (fmax and fmin
    # pass over the NaN of a row that is NaN already)
    if np.fmax.reduce(np.abs(mean), axis=None) < q and \
            np.fmin.reduce(rstd, axis=None) > math.sqrt(lanes) / q:
        return y, mean, rstd
    with np.errstate(all="ignore"):  # rstd 0 (an infinite variance): an infinite spread
        spread = np.abs(mean.astype(np.float64)) + math.sqrt(lanes) / rstd.astype(np.float64)
        near = np.flatnonzero((spread >= 2 * q).reshape(-1))
    if not near.size:
        return y, mean, rstd
    n = math.prod(x.shape[x.ndim - ndim:])
    rows = np.ascontiguousarray(x).reshape(-1, n)[near]
    shape, kept = y.shape, mean.shape
    y, mean, rstd = (np.array(a).reshape(-1, n if a is y else 1) for a in (y, mean, rstd))
    t = x.dtype.type
    with np.errstate(all="ignore"):
        m, var = _lane_moments(rows, lanes)
        r = t(1) / np.sqrt(np.where(var < 0, t(0), var) + t(eps))  # (NaN stays NaN)
        out = rows * r[:, None] + (-r * m)[:, None]  # torch's scale and shift
        if w is not None:
            out = out * np.ravel(w)
        if b is not None:
            out = out + np.ravel(b)
    y[near], mean[near, 0], rstd[near, 0] = out, m, r
    return y.reshape(shape), mean.reshape(kept), rstd.reshape(kept)


# NOTE [ Layer norm in place ]
# Without a fused kernel, layer norm over NumPy float32/float64 rows runs as passes over
# memory, and at a small GPT's (8, 128, 256) each fresh activation-sized temporary costs as
# much as a pass (its pages are faulted in anew). The composed form made ten passes and five
# such buffers (x - mean twice, then * rstd, * w, + b and a final astype copy); here the
# centred rows become y in place (* rstd, * w, + b), and the squares for the variance go into
# one scratch buffer: six passes, two buffers. Same operations in the same order, so the
# same bits. At (8, 128, 256) float32, one thread, thread CPU, best of 7, alternating on
# the loaded 2-core machine (load 9-14): 760-915 -> 545-625 us a forward (PyTorch's: ~215).

def _layer_norm_rows(x, w, b, ndim, eps):
    """(y, mean, rstd) of layer norm over the last ``ndim`` axes of a NumPy float32/float64
    array whose weight and bias (or None) share its dtype, or None where not covered (NOTE
    [ Layer norm in place ])."""
    dt = x.dtype
    if type(x) is not np.ndarray or dt not in (np.float32, np.float64) or any(
            p is not None and (type(p) is not np.ndarray or p.dtype != dt) for p in (w, b)):
        return None
    n = math.prod(x.shape[x.ndim - ndim:])
    if not x.size or n > 16384:  # rows summed through BLAS (NOTE [ Sums through BLAS ])
        return None
    kept = x.shape[:x.ndim - ndim] + (1,) * ndim
    rows = np.ascontiguousarray(x).reshape(-1, n)
    ones = np.ones(n, dt)
    mean = rows @ ones
    mean /= n
    y = np.subtract(rows, mean[:, None])
    sq = np.multiply(y, y)
    var = sq @ ones
    del sq
    var /= n
    var += eps
    rstd = np.sqrt(var, out=var)
    np.divide(1.0, rstd, out=rstd)
    y *= rstd[:, None]
    if w is not None:
        y *= np.ascontiguousarray(w).reshape(-1)
    if b is not None:
        y += np.ascontiguousarray(b).reshape(-1)
    return y.reshape(x.shape), mean.reshape(kept), rstd.reshape(kept)


def _layer_norm_parts(xp, x, w, b, ndim, eps):
    fused = _kernels.layer_norm(x, w, b, ndim, eps)  # None unless NumPy float32
    if fused is not None:  # NOTE [ Fused kernels ] (ember/_kernels)
        return fused
    if xp is np:
        fused = _layer_norm_rows(x, w, b, ndim, eps)
        if fused is not None:  # NOTE [ Layer norm in place ]
            return fused
    axes = tuple(range(x.ndim - ndim, x.ndim))
    low = x.dtype.itemsize < 4
    xc = x.astype(xp.float32) if low else x
    mean, var = _moments(xp, xc, axes)
    rstd = 1.0 / xp.sqrt(var + eps)
    y = (xc - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    # half input with float32 parameters (autocast's layer norm): torch's mixed kernel keeps
    # the statistics in float32 (NOTE [ Half-precision layer norm backward ])
    low = low and not _mixed_params(x, w, b)
    return y.astype(x.dtype), mean.astype(x.dtype) if low else mean, \
        rstd.astype(x.dtype) if low else rstd


def _mixed_params(x, *params):
    """Whether a half-precision layer norm has parameters of another dtype (float32: torch's
    "mixed" kernel, which keeps the statistics and the parameters' gradients in float32)."""
    return any(p is not None and p.dtype != x.dtype for p in params)


def _layer_norm_backward_kernel(xp, g, x, w, mean, rstd, *, ndim, sums=True):
    """(gx, gw, gb) of layer_norm on arrays, in place where it can: one buffer becomes
    x - mean, then xhat, then the xhat term of gx; another g * w, then gx. With ``sums``
    False nobody wants gw and gb: the fused kernel leaves them out (empty arrays here)."""
    fused = _kernels.layer_norm_backward(g, x, w, mean, rstd, ndim, sums)
    if fused is not None:  # NOTE [ Fused kernels ] (ember/_kernels)
        gx, gw, gb = fused
        if gb is None:  # (sums left out; a kernel returns arrays only)
            gw = gb = xp.zeros((0,), mean.dtype)
        return gx, gw, gb
    n = math.prod(x.shape[x.ndim - ndim:])
    dt = x.dtype
    # the parameters' gradients take the parameters' dtype: float32 beside a half input in
    # torch's mixed kernel, whose float32 statistics tell it apart (a bias alone leaves no
    # weight to look at)
    pdt = w.dtype if w is not None else mean.dtype
    if xp is np and dt.itemsize < 4:
        return _half_layer_norm_backward(g, x, w, mean, rstd, ndim)
    if dt.itemsize < 4:  # half precision computes in float32
        g, x = g.astype(xp.float32), x.astype(xp.float32)
        mean, rstd = mean.astype(xp.float32), rstd.astype(xp.float32)
        w = None if w is None else w.astype(xp.float32)
    xhat = x - mean
    xhat *= rstd
    gw = None if w is None else col_sums(xp, g * xhat, ndim)
    gb = col_sums(xp, g, ndim)
    gxhat = g * w if w is not None else g.copy()
    s1 = row_sums(xp, gxhat, ndim)
    s2 = row_sums(xp, gxhat * xhat, ndim)
    xhat *= s2 / n
    gxhat -= xhat
    gxhat -= s1 / n
    gxhat *= rstd
    if gw is None:  # no weight: an empty gw, as a kernel returns arrays only
        gw = xp.zeros((0,), dt)  # (NOTE [ Portable array code ])
    return gxhat.astype(dt, copy=False), gw.astype(pdt, copy=False), gb.astype(pdt, copy=False)


# NOTE [ Half-precision layer norm backward ]
# torch's CPU kernel (float16/bfloat16 input, parameters and saved statistics in that dtype)
# computes in float32 from the saved, rounded mean and rstd, row by row:
#   ds = sum(dy w x), db = sum(dy w), b = (db mean - ds) rstd^3 / N, c = -b mean - db rstd / N,
#   dx = rstd dy w + b x + c, rounded once;
# and the parameters' gradients in two levels: each of its threads (the rows split into
# ``threads`` equal runs, as its parallel_for splits them) adds its rows' terms,
# ``dy (rstd x - rstd mean)`` and ``dy``, onto a buffer in the input's dtype, each add
# rounded; the buffers are then added in float32 and rounded once. So the parameters'
# gradients depend on the thread count: ember replays torch running on ember's own
# (``ember.get_num_threads()``, 2 on two cores). Measured against torch 2.13 with 1, 2 and 3
# threads. The sums ds and db run in NumPy's order, not torch's SIMD lanes: now and then an
# element of dx differs by one unit of the last place. Torch's "mixed" kernel (a half input
# with float32 parameters, as autocast calls it) does the same from float32 statistics, and
# hands the parameters' gradients back in float32, the per-thread buffers in the input's
# dtype still (measured: rounding those buffers to float32 instead, or the statistics to the
# input's dtype, moves gamma's gradient by a few units of bfloat16's last place).


def _half_layer_norm_backward(g, x, w, mean, rstd, ndim):
    """(gx, gw, gb) of a float16/bfloat16 layer norm over the last ``ndim`` dims as torch's
    CPU kernel rounds them (NOTE [ Half-precision layer norm backward ])."""
    from .._settings import get_num_threads

    dt = x.dtype
    norm_shape = x.shape[x.ndim - ndim:]
    n = math.prod(norm_shape)
    rows = x.size // n if n else math.prod(x.shape[:x.ndim - ndim])
    x32 = x.astype(np.float32).reshape(rows, n)
    g32 = g.astype(np.float32).reshape(rows, n)
    w32 = np.ones(n, np.float32) if w is None else w.astype(np.float32).reshape(n)
    a = rstd.astype(np.float32).reshape(rows, 1)
    m = mean.astype(np.float32).reshape(rows, 1)
    gwx = g32 * w32
    ds = (gwx * x32).sum(1, keepdims=True)
    db = gwx.sum(1, keepdims=True)
    scale = np.float32(1.0 / n) if n else np.float32(0)
    b = (db * m - ds) * a * a * a * scale
    c = -b * m - db * a * scale
    gx = (a * g32 * w32 + b * x32 + c).astype(dt).reshape(x.shape)
    terms = g32 * (a * x32 + (-a * m))
    threads = max(1, min(get_num_threads(), rows))
    chunk = max(1, -(-rows // threads))
    gw = np.zeros(n, np.float32)
    gb = np.zeros(n, np.float32)
    for lo in range(0, rows, chunk):  # one buffer per thread, in the dtype
        pw = np.zeros(n, dt)
        pb = np.zeros(n, dt)
        for i in range(lo, min(rows, lo + chunk)):
            pw = (pw.astype(np.float32) + terms[i]).astype(dt)
            pb = (pb.astype(np.float32) + g32[i]).astype(dt)
        gw += pw.astype(np.float32)
        gb += pb.astype(np.float32)
    pdt = w.dtype if w is not None else mean.dtype  # float32 in the mixed kernel
    gw = gw.astype(pdt).reshape(norm_shape) if w is not None else np.zeros((0,), pdt)
    return gx, gw, gb.astype(pdt).reshape(norm_shape)


# NOTE [ Layer norm's parameter sums on demand ]
# Layer norm's backward sums g * xhat and g over the rows for the weight's and the bias's
# gradients, a tenth of the fused kernel's time, and a layer norm whose parameters take no
# gradient (frozen, or none given requires_grad, as in the kernels bench) threw them away. The
# vjp asks for them only when a parameter needs its gradient (``needs_input_grad``); without
# them the kernel skips the sums (``sums=False``), as PyTorch's output mask does. On the
# NumPy path, in vmap's rule and on a device they are still computed and dropped.
layer_norm_backward_op = Op("native_layer_norm_backward", _layer_norm_backward_kernel)


def _layer_norm_vjp(grads, x, w, _b, *, ndim, eps, out, needs_input_grad):
    g = grads[0]
    dims = list(range(x.dim() - ndim, x.dim()))
    if not _dispatch.differentiable_formula(g, x, w):
        # the sums over rows only when a parameter wants its gradient (NOTE [ Layer norm's
        # parameter sums on demand ])
        sums = needs_input_grad[1] or needs_input_grad[2]
        gx, gw, gb = _dispatch.apply(layer_norm_backward_op, (g, x, w, out[1], out[2]),
                                     {"ndim": ndim} if sums else {"ndim": ndim, "sums": False})
        if not sums:
            return gx, None, None
        return gx, gw if w is not None else None, gb
    # create_graph: the statistics must depend on x differentiably (the saved ones are
    # constants to autograd)
    mean = x.mean(dims, keepdim=True)
    rstd = ((x - mean) ** 2).mean(dims, keepdim=True).add(eps).rsqrt()
    lead = list(range(x.dim() - ndim))
    xhat = (x - mean) * rstd
    gxhat = g * w if w is not None else g
    n = math.prod(x.shape[x.dim() - ndim:])
    gx = rstd * (gxhat - gxhat.sum(dims, keepdim=True) / n -
                 xhat * (gxhat * xhat).sum(dims, keepdim=True) / n)
    gw = (g * xhat).sum(lead) if w is not None and lead else (g * xhat if w is not None else
                                                             None)
    gb = g.sum(lead) if lead else g
    return gx, gw, gb


def _layer_norm_jvp(x_dots, x, w, _b, *, ndim, eps, out):
    # xhat = (x - mean) rstd: d xhat = rstd (x_dot - mean(x_dot) - xhat mean(xhat x_dot));
    # y = xhat w + b. The statistics are recomputed so forward-over-reverse sees them.
    xd, wd, bd = x_dots
    dims = list(range(x.dim() - ndim, x.dim()))
    mean = x.mean(dims, keepdim=True)
    rstd = ((x - mean) ** 2).mean(dims, keepdim=True).add(eps).rsqrt()
    xhat = (x - mean) * rstd
    r = None
    if xd is not None:
        r = rstd * (xd - xd.mean(dims, keepdim=True) -
                    xhat * (xhat * xd).mean(dims, keepdim=True))
        if w is not None:
            r = r * w
    if wd is not None:
        r = xhat * wd if r is None else r + xhat * wd
    if bd is not None:
        r = bd.expand(tuple(x.shape)) if r is None else r + bd
    return r, None, None


layer_norm_op = Op("native_layer_norm", _layer_norm_kernel, vjp=_layer_norm_vjp,
                   jvp=_layer_norm_jvp, nondiff_outputs=(1, 2))
layer_norm_op.node_name = "NativeLayerNormBackward0"
layer_norm_op.saved_outputs = (1, 2)  # the statistics, not y


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    return _layer_norm(input, normalized_shape, weight, bias, eps)[0]


def _layer_norm(input, normalized_shape, weight, bias, eps):
    """``(output, mean, rstd)``; the statistics keep the normalised dims with size 1."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    nd = len(normalized_shape)
    if tuple(input.shape[input.dim() - nd:]) != normalized_shape or input.dim() < nd:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.shape)} and normalized_shape = {list(normalized_shape)}")
    dt = input.dtype
    params = [t for t in (weight, bias) if t is not None]
    if params and params[0].dtype != dt:  # the first parameter decides "mixed", as in torch
        if any(p.dtype != _dt.float32 for p in params):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if dt not in (_dt.float16, _dt.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    else:  # not mixed: the kernel's dtype first, then each parameter's
        kernel_dtype("layer_norm", input)
        for p in params:
            if p.dtype != dt:
                raise RuntimeError(f"expected scalar type {dt.scalar_name} but found "
                                   f"{p.dtype.scalar_name}")
    return _dispatch.apply(layer_norm_op, (input, weight, bias), {"ndim": nd, "eps": eps})


# ------------------------------------------------------------------------------------------------
# batch_norm


def _bshape(x):
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _kernel_layout(x):
    """Whether torch's CPU batch norm takes its kernel for this array: contiguous, or
    channels-last (NOTE [ Batch norm's strided path ])."""
    if x.flags.c_contiguous:
        return True
    if x.ndim in (4, 5):
        return np.moveaxis(x, 1, -1).flags.c_contiguous
    return False


def _batch_norm_kernel(xp, x, w, b, mean, var, *, training, eps):
    """NOTE [ Batch norm passes ]
    Batch norm is memory-bound: its cost is the number of passes over x. The statistics take
    four (mean; x - mean, squared in place, mean), the output two: ``y = x * a + c`` with the
    per-channel ``a = w * rstd`` and ``c = b - mean * a``. The backward kernel below takes
    eight, with the same centred sums as the textbook formula (no E[x^2] - E[x]^2
    cancellation).
    """
    strided = training and xp is np and x.dtype == np.float32 and not _kernel_layout(x) and \
        not np.isfinite(_moments(xp, x, (0,) + tuple(range(2, x.ndim)))[1]).all()
    if training and x.dtype == np.float32 and not strided:
        fused = _kernels.batch_norm(x, w, b, eps)  # NOTE [ Compiled batch norm ] (_kernels)
        if fused is not None:
            return fused
    shape = _bshape(x)
    dt = x.dtype
    if dt.itemsize < 4:  # half precision computes in float32
        x = x.astype(xp.float32)
    if strided:
        # torch's strided path takes the float32 mean, then the squares about it in float64
        # (its accumulate type), so squares beyond float32's range still give a finite
        # inverse deviation (only there is the result different: elsewhere ember keeps one
        # path for every layout)
        axes = (0,) + tuple(range(2, x.ndim))
        m = x.mean(axis=axes, keepdims=True, dtype=np.float32)  # its float32 mean first
        d = x.astype(np.float64) - m
        v = (d * d).sum(axis=axes, keepdims=True) / (x.size // max(x.shape[1], 1))
        rstd = (1.0 / np.sqrt(v + eps)).astype(dt)
    elif training:
        m, v = _moments(xp, x, (0,) + tuple(range(2, x.ndim)))
        rstd = 1.0 / xp.sqrt(v + eps)
    else:
        m, v = mean.reshape(shape), var.reshape(shape)
        rstd = 1.0 / xp.sqrt(v + eps)
    # float16/bfloat16 with float32 parameters or statistics: torch's mixed-type kernel,
    # whose statistics are float32; otherwise they are the input's type, and its kernel
    # normalises with them so rounded
    mixed = dt.itemsize < 4 and any(t is not None and t.dtype != dt for t in (w, b, mean, var))
    stat = np.float32 if mixed else dt
    if training and dt.itemsize < 4 and not mixed:
        m, rstd = m.astype(dt).astype(x.dtype), rstd.astype(dt).astype(x.dtype)
    a = rstd if w is None else rstd * w.reshape(shape)
    c = -m * a
    if b is not None:
        c = c + b.reshape(shape)
    rows, spread = _channel_rows(xp, x)
    y = rows * spread(a.astype(x.dtype, copy=False))
    y += spread(c.astype(x.dtype, copy=False))
    return y.reshape(x.shape).astype(dt, copy=False), m.reshape(-1).astype(stat), \
        rstd.reshape(-1).astype(stat)


def _batch_norm_backward_kernel(xp, g, x, w, m, rstd):
    """Training-mode batch norm gradients (gx, gw, gb) in eight passes over x and g
    (NOTE [ Batch norm passes ])."""
    if x.dtype == np.float32:
        fused = _kernels.batch_norm_backward(g, x, w, m, rstd)  # NOTE [ Compiled batch norm ]
        if fused is not None:
            return fused
    shape = _bshape(x)
    n = x.size // x.shape[1]
    dt = x.dtype
    if dt.itemsize < 4:  # half precision computes in float32
        g, x = g.astype(xp.float32), x.astype(xp.float32)
    m, rstd = m.reshape(shape), rstd.reshape(shape)
    sum_g = channel_sums(xp, g)
    rows, spread = _channel_rows(xp, x)
    g_rows = _channel_rows(xp, g)[0]
    xc = rows - spread(m)
    t = g_rows * xc
    sum_gxc = channel_sums(xp, t.reshape(x.shape))
    del t
    ws = 1.0 if w is None else w.reshape(shape)
    # gx = ws * rstd * (g - sum_g / n - xhat * sum(g * xhat) / n), xhat = xc * rstd
    k_g = ws * rstd
    k_x = -k_g * rstd * rstd * sum_gxc / n
    k_c = -k_g * sum_g / n
    xc *= spread(k_x)
    gx = g_rows * spread(k_g)
    gx += xc
    gx += spread(k_c)
    # no weight: an empty gw, as a kernel returns arrays only (NOTE [ Portable array code ])
    # (the parameters' gradients in their own type: float32 ones beside half inputs are
    # torch's mixed-type kernel's, summed in float32 and not rounded to the half type)
    pdt = dt if w is None else w.dtype
    gw = xp.zeros((0,), dt) if w is None else \
        (sum_gxc * rstd).reshape(-1).astype(pdt, copy=False)
    return gx.reshape(x.shape).astype(dt, copy=False), gw, sum_g.reshape(-1).astype(pdt,
                                                                                    copy=False)


def _batch_norm_vjp(grads, x, w, _b, _mean, _var, *, training, eps, out):
    g = grads[0]
    shape = (1, x.shape[1]) + (1,) * (x.dim() - 2)
    axes = [0] + list(range(2, x.dim()))
    if training and not _dispatch.differentiable_formula(g, x, w):
        gx, gw, gb = _dispatch.apply(batch_norm_backward_op, (g, x, w, out[1], out[2]), {})
        return gx, gw if w is not None else None, gb, None, None
    if training:
        # create_graph: batch statistics recomputed differentiably (see layer_norm)
        m = x.mean(axes, keepdim=True)
        rstd = ((x - m) ** 2).mean(axes, keepdim=True).add(eps).rsqrt()
    else:
        _, m, rstd = out
        m, rstd = m.reshape(shape), rstd.reshape(shape)
    xhat = (x - m) * rstd
    gw = (g * xhat).sum(axes) if w is not None else None
    gb = g.sum(axes)
    ws = w.reshape(shape) if w is not None else 1.0
    if training:
        n = x.numel() // x.shape[1]
        gx = ws * rstd * (g - g.sum(axes, keepdim=True) / n -
                          xhat * (g * xhat).sum(axes, keepdim=True) / n)
    else:
        gx = g * ws * rstd
    return gx, gw, gb, None, None


def _batch_norm_jvp(x_dots, x, w, _b, _mean, _var, *, training, eps, out):
    # as layer norm's rule over the batch and spatial dims (training); eval mode is affine
    xd, wd, bd = x_dots[0], x_dots[1], x_dots[2]
    shape = (1, x.shape[1]) + (1,) * (x.dim() - 2)
    axes = [0] + list(range(2, x.dim()))
    if training:
        m = x.mean(axes, keepdim=True)
        rstd = ((x - m) ** 2).mean(axes, keepdim=True).add(eps).rsqrt()
    else:
        m, rstd = out[1].reshape(shape), out[2].reshape(shape)
    xhat = (x - m) * rstd
    r = None
    if xd is not None:
        r = rstd * (xd - xd.mean(axes, keepdim=True) -
                    xhat * (xhat * xd).mean(axes, keepdim=True)) if training else xd * rstd
        if w is not None:
            r = r * w.reshape(shape)
    if wd is not None:
        t = xhat * wd.reshape(shape)
        r = t if r is None else r + t
    if bd is not None:
        t = bd.reshape(shape).expand(tuple(x.shape))
        r = t if r is None else r + t
    return r, None, None


batch_norm_op = Op("native_batch_norm", _batch_norm_kernel, vjp=_batch_norm_vjp,
                   jvp=_batch_norm_jvp, nondiff_outputs=(1, 2))
batch_norm_op.node_name = "NativeBatchNormBackward0"
batch_norm_op.saved_outputs = (1, 2)  # the statistics, not y (ReLU(inplace=True) follows)
batch_norm_backward_op = Op("native_batch_norm_backward", _batch_norm_backward_kernel)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) by batch statistics (training) or running ones (eval);
    in training the running statistics are updated in place with ``momentum``."""
    if training and input.dim() and math.prod((input.shape[0],) + input.shape[2:]) == 1:
        # nn.functional's own check, on the sizes alone (an empty channel dim included); the
        # top-level and native forms compute a zero variance
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size "
            f"{input.shape}")
    if input.dim() >= 2 and input.numel() == 0:
        return _empty_batch_norm(input, weight, bias)
    return keep_layout(_batch_norm(input, running_mean, running_var, weight, bias, training,
                                   momentum, eps)[0], input)  # NOTE [ Result layout ]


def _empty_batch_norm(input, weight, bias):
    """PyTorch's batch norm of an empty input, before any check: a copy of it scaled by the
    first weight and shifted by the first bias (so the graph still reaches them)."""
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _batch_norm_dtypes(input, weight, bias, running_mean, running_var):
    """torch's dtype checks of batch norm: the kernel's dtypes (NOTE [ nn kernel dtypes ]),
    then the parameters' (nn_checks.norm_param_dtypes); running statistics that require
    grad are refused, as the native op has no derivative for them."""
    kernel_dtype("batch_norm", input)
    norm_param_dtypes(input, weight, bias, running_mean, running_var)
    from ..autograd.grad_mode import is_grad_enabled

    if is_grad_enabled():
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is not None and t.requires_grad:
                raise RuntimeError(
                    f"The function 'native_batch_norm' is not differentiable with respect to "
                    f"argument '{name}'. This input cannot have requires_grad True.")


#: array type -> a backend's one-launch update of batch norm's running statistics,
#: ``fn(running_mean, running_var, mean, rstd, momentum, eps, count) -> bool`` (CUDA's:
#: NOTE [ Training-step CUDA kernels ] in ember/_kernels/_cuda.py); False: not covered
running_stats_kernels: dict = {}


def _running_stats_numpy(running_mean, running_var, m, rstd, momentum, eps, n):
    """NumPy's update of the running statistics in place (the same arithmetic as the
    ops it replaces, in the statistics' own dtype); False for dtypes it leaves to them."""
    dt = running_mean.dtype
    if dt not in (np.float32, np.float64) or m.dtype != dt or \
            running_var is not None and running_var.dtype != dt:
        return False
    running_mean *= 1 - momentum
    running_mean += m * dt.type(momentum)
    if running_var is not None:
        var = (1.0 / np.square(rstd.astype(np.float64)) - eps).astype(dt)
        unbiased = var * dt.type(n / max(n - 1, 1))
        running_var *= 1 - momentum
        running_var += unbiased * dt.type(momentum)
    return True


running_stats_kernels[np.ndarray] = _running_stats_numpy


def _update_running_fused(running_mean, running_var, m, rstd, momentum, eps, n):
    """The running statistics updated by the backend's own kernel, as PyTorch's batch norm
    updates them inside the op; False where the backend has none, a mode that sees every op
    is active (NOTE [ Modes that name their ops ] in ember/_dispatch.py), or the kernel does
    not cover these arrays."""
    fn = running_stats_kernels.get(type(m._data))
    if fn is None or momentum is None:
        return False
    if _dispatch.intercept and _dispatch.named_union(
            [md for md in _dispatch.state.modes if not getattr(md, "_ember_observer", False)],
            "_ember_ops") is None:
        # a mode that sees every op sees the update as ops (autocast does not); the
        # profiler, an observer, sees it inside the op as PyTorch's profiler does
        return False
    if not fn(running_mean._data, None if running_var is None else running_var._data,
              m._data, rstd._data, momentum, eps, n):
        return False
    running_mean._bump()
    if running_var is not None:
        running_var._bump()
    return True


# NOTE [ Batch norm's strided path ]
# In evaluation, torch's CPU batch norm takes its kernel only where the input is contiguous
# (or channels-last) and every parameter is contiguous; otherwise it computes the inverse
# deviation with tensor ops, ``1 / sqrt(running_var + eps)``, and reads it in the parameters'
# dtype. That sum promotes an integer or bool running_var to float32, so there, and only
# there, such a running_var works where the kernel would refuse it (measured in torch 2.13:
# other dtypes, or the other parameters, fail on either path).

def _running_var_promoted(input, weight, bias, running_mean, running_var):
    """True where torch's strided evaluation path turns an integer or bool running_var into
    float32 (NOTE [ Batch norm's strided path ])."""
    if running_var is None or running_mean is None or \
            running_var.dtype.category not in (_dt.INT, _dt.BOOL):
        return False
    if input.dtype != _dt.float32 and not (
            input.dtype in (_dt.float16, _dt.bfloat16) and running_mean.dtype == _dt.float32):
        return False
    from .._core.layout import channels_last, channels_last_3d

    kernel = input.is_contiguous() or input.dim() in (4, 5) and input.is_contiguous(
        memory_format=channels_last if input.dim() == 4 else channels_last_3d)
    return not (kernel and all(t is None or t.is_contiguous()
                               for t in (weight, bias, running_mean, running_var)))


# NOTE [ float16 batch norm in training ]
# torch's CPU batch norm of a float16 batch (without running statistics: instance norm's
# case) takes each channel's float32 mean and biased variance, saves the mean and invstd
# rounded to float16, and normalises with the rounded ones: ``y = x a + (b - mean a)``, ``a =
# invstd w``, rounded once. Its backward, from the same rounded statistics, per channel:
# ``s = sum(dy)``, ``d = sum((x - mean) dy)``, ``k = d invstd^2 / N``; ``dx = ((dy - s / N) -
# (x - mean) k) invstd w``, ``dw = d invstd``, ``db = s``, each rounded once (measured
# against torch 2.13; ember computes it in float32 ops, so that it can be differentiated
# again). bfloat16 batches differ from this in torch and keep ember's general kernel.


def _batch_norm_half_kernel(xp, x, w, b, *, eps):
    dt = x.dtype
    c = x.shape[1]
    shape = (1, c) + (1,) * (x.ndim - 2)
    x32 = x.astype(np.float32)
    rows = np.moveaxis(x32, 1, 0).reshape(c, -1)
    n = np.float32(rows.shape[1])
    mean = rows.sum(1) / n
    var = ((rows - mean[:, None]) ** 2).sum(1) / n
    mean_h = mean.astype(dt)
    invstd_h = (np.float32(1) / np.sqrt(var + np.float32(eps))).astype(dt)
    alpha = invstd_h.astype(np.float32)
    if w is not None:
        alpha = alpha * w.astype(np.float32)
    beta = -(mean_h.astype(np.float32) * alpha)
    if b is not None:
        beta = b.astype(np.float32) - mean_h.astype(np.float32) * alpha
    y = x32 * alpha.reshape(shape) + beta.reshape(shape)
    return y.astype(dt), mean_h, invstd_h


def _batch_norm_half_vjp(grads, x, w, b, *, eps, out):
    g = grads[0]
    c = x.shape[1]
    dims = [0] + list(range(2, x.dim()))
    shape = (1, c) + (1,) * (x.dim() - 2)
    g32, x32 = g.float(), x.float()
    m, a = out[1].float().reshape(shape), out[2].float()
    n = x.numel() // c
    total = g32.sum(dims)
    xm = x32 - m
    dotp = (xm * g32).sum(dims)
    k = dotp * a * a / n
    gx = ((g32 - (total / n).reshape(shape)) - xm * k.reshape(shape)) * a.reshape(shape)
    if w is not None:
        gx = gx * w.float().reshape(shape)
    gw = None if w is None else (dotp * a).to(w.dtype)
    gb = None if b is None else total.to(b.dtype)
    return gx.to(x.dtype), gw, gb


batch_norm_half_op = Op("_native_batch_norm_float16", _batch_norm_half_kernel,
                        vjp=_batch_norm_half_vjp, nondiff_outputs=(1, 2))
batch_norm_half_op.node_name = "NativeBatchNormBackward0"
batch_norm_half_op.saved_outputs = (1, 2)


def _jvp_in_float32(run, x_dots, inputs, dtype):
    """The tangent of ``run(*inputs)`` (a float32 composite of the half-precision op) in a
    dual level of its own, rounded to ``dtype``; the op's statistics get none."""
    from ..autograd import _forward

    lvl = _forward.enter(nested_ok=True)
    try:
        duals = []
        for t, d in zip(inputs, x_dots):
            if t is not None:
                t = t.float()
                if d is not None:
                    _forward.set_tangent(t, lvl, d.float())
            duals.append(t)
        tangent = _forward.get_tangent(run(*duals), lvl)
    finally:
        _forward.exit_level(lvl)
    return (None if tangent is None else tangent.to(dtype)), None, None


@batch_norm_half_op.defjvp
def _batch_norm_half_jvp(x_dots, x, w, b, *, eps, out):
    return _jvp_in_float32(
        lambda *t: _dispatch.apply(batch_norm_op, (*t, None, None),
                                   {"training": True, "eps": eps})[0], x_dots, (x, w, b),
        x.dtype)


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps):
    """``(output, save_mean, save_invstd)``: the batch statistics per channel in training,
    None otherwise."""
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):  # (torch's order and words)
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if training and c == 0 and weight is not None:  # torch reads the first weight
        raise IndexError("select(): index 0 out of range for tensor of size [0] at dimension 0")
    if not training and _running_var_promoted(input, weight, bias, running_mean, running_var):
        running_var = running_var.to(_dt.float32)  # NOTE [ Batch norm's strided path ]
    _batch_norm_dtypes(input, weight, bias, running_mean, running_var)
    if training and input.numel() == 0:
        # an empty batch: an empty result that still depends on weight and bias (their
        # gradients are zeros), running statistics untouched, as in PyTorch
        shape = (1, c) + (1,) * (input.dim() - 2)
        y = input * 1
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        return y, None, None
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    if _dispatch.intercept and "ember.profiler._recorder" in sys.modules:
        # a profile lists the call as made (NOTE [ Calls noted for the profiler ])
        sys.modules["ember.profiler._recorder"].note_call(
            "aten::batch_norm", input, weight, bias, running_mean, running_var, training,
            momentum, eps)
    if training and running_mean is None and running_var is None and \
            input.dtype == _dt.float16 and type(input._data) is np.ndarray and \
            input._data.flags.c_contiguous and \
            all(t is None or t.dtype == _dt.float16 for t in (weight, bias)):
        # (float32 parameters: torch's mixed-precision kernel, the general path below)
        # NOTE [ float16 batch norm in training ]
        return _dispatch.apply(batch_norm_half_op, (input, weight, bias), {"eps": eps})
    y, m, rstd = _dispatch.apply(batch_norm_op, (input, weight, bias, running_mean,
                                                 running_var),
                                 {"training": training, "eps": eps})
    if training and running_mean is not None:
        from ..autograd.grad_mode import no_grad

        n = input.numel() // c
        if _update_running_fused(running_mean, running_var, m, rstd, momentum, eps, n):
            return y, m, rstd
        with no_grad():
            var = (1.0 / (rstd.double() ** 2) - eps).to(input.dtype)
            unbiased = var * (n / max(n - 1, 1))
            running_mean.mul_(1 - momentum).add_(m.detach() * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(unbiased * momentum)
    return (y, m, rstd) if training else (y, None, None)


# ------------------------------------------------------------------------------------------------
# compositions


def _group_norm_param_shapes(input, c, weight, bias):
    """torch's refusal of a weight or bias that is not a vector of the ``c`` channels (its
    bias message shows the weight's shape, [0] without one, as torch's does)."""
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            shown = [0] if weight is None else list(weight.shape)
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {shown} and input of shape "
                f"{list(input.shape)}")


def _group_norm_params(input, weight, bias):
    """Check the dtypes of group norm's operands as torch's CPU kernel does; True when the
    parameters are float32 beside a float16 / bfloat16 input (the "mixed" case, computed in
    float32 and returned in the input's dtype)."""
    dt = input.dtype
    if dt.category != _dt.FLOAT:
        raise NotImplementedError(
            f'"GroupNormKernelImpl" not implemented for \'{dt.scalar_name}\'')
    params = [p for p in (weight, bias) if p is not None]
    if params and params[0].dtype != dt:  # the first parameter decides
        if any(p.dtype != _dt.float32 for p in params):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        if dt not in (_dt.float16, _dt.bfloat16):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
        return True
    for p in params:
        if p.dtype != dt:
            raise RuntimeError(
                f"expected scalar type {dt.scalar_name} but found {p.dtype.scalar_name}")
    return False


@recorded_as("aten::group_norm", ("input", "num_groups", "weight", "bias", "eps", None))
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, *, _verify=True):
    """Normalise groups of channels per sample, then scale and shift per channel.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: a group's statistics can come out infinite where
        PyTorch's are NaN (and the reverse), so results differ in which non-finite value they hold;
        a group whose values overflow can even give a finite result where PyTorch's is NaN.
    """
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[:2]
    if _verify:  # nn.functional's own check, first (torch.group_norm has none)
        size = [n * c // num_groups, num_groups] + list(input.shape[2:])
        if size[0] * math.prod(size[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {size}")
    y = keep_layout(_group_norm(input, num_groups, weight, bias, eps), input)
    if y._grad_fn is None:
        return y
    # one node, as torch's (NOTE [ One node for a composite ]); its mean and rstd are not shown
    return _node_names.as_one_node("NativeGroupNormBackward0", y, (input, weight, bias), {
        "input": input, "weight": weight, "N": n, "C": c, "HxW": input.numel() // max(n * c, 1),
        "group": num_groups, "eps": eps})


def _group_norm(input, num_groups, weight, bias, eps):
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got "
            f"input of shape {list(input.shape)} and num_groups={num_groups}")
    _group_norm_param_shapes(input, c, weight, bias)
    mixed = _group_norm_params(input, weight, bias)
    grouped = input.reshape(n, num_groups, input.numel() // max(n * num_groups, 1))
    shape = (1, c) + (1,) * (input.dim() - 2)
    # (read on the weight's own array: no op, so no sync and nothing a mode or the meta
    # device would have to answer)
    wd = None if weight is None else weight._data
    if input.dtype in (_dt.float16, _dt.bfloat16) and type(input._data) is np.ndarray and \
            not mixed and input.numel():
        # NOTE [ Half-precision group norm ]
        return _dispatch.apply(group_norm_half_op, (input, weight, bias),
                               {"groups": num_groups, "eps": eps})[0]
    if type(wd) is np.ndarray and wd.size and not np.isfinite(wd).all():
        y = _group_norm_scale_shift(input, grouped, weight, bias, eps, shape)
        return y.to(input.dtype) if mixed else y
    y = layer_norm(grouped, (grouped.shape[-1],), None, None, eps).reshape(input.shape)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y.to(input.dtype) if mixed else y


def _group_norm_scale_shift(input, grouped, weight, bias, eps, shape):
    """Group norm in PyTorch's kernel's form, ``x * s + (b - mean * s)`` with ``s = rstd *
    weight`` per (sample, channel): taken where a weight is infinite or NaN, whose channels
    are then NaN wherever ``x * s`` and ``mean * s`` are infinities of one sign (ember's
    ``(x - mean) * rstd * weight`` would give +-inf there)."""
    n, g = grouped.shape[:2]
    c = shape[1]
    x = grouped.float() if grouped.dtype in (_dt.float16, _dt.bfloat16) else grouped
    mean = x.mean(-1)
    rstd = (x.var(-1, correction=0) + eps).rsqrt()
    per = c // g
    s = rstd.unsqueeze(-1).expand(n, g, per)  # (n, g, per)
    if weight is not None:
        s = s * weight.to(x.dtype).reshape(1, g, per)
    t = -(mean.unsqueeze(-1) * s)
    if bias is not None:
        t = t + bias.to(x.dtype).reshape(1, g, per)
    xs = x.reshape((n, g, per, -1))
    y = xs * s.unsqueeze(-1) + t.unsqueeze(-1)
    return y.reshape(input.shape).to(input.dtype)


# NOTE [ Half-precision group norm ]
# torch's CPU group norm of float16/bfloat16 tensors computes in float32: each (sample, group)
# has its float32 mean and rstd, each channel ``s = rstd w`` and ``t = -s mean + b``, and
# ``y = x s + t`` is rounded once; the mean and rstd it saves are rounded to the dtype, and
# its backward starts from those: per (sample, channel) ``ds = sum(dy x)``, ``db = sum(dy)``;
# per group ``c2 = (sum(db w) mean - sum(ds w)) rstd^3 / (D HW)``, ``c3 = -c2 mean - sum(db
# w) rstd / (D HW)``; ``dx = rstd w dy + c2 x + c3`` rounded once, ``dw = sum_n (ds - db
# mean) rstd``, ``db = sum_n db``. ember computes the same in float32 ops (so a second
# derivative is taken through them); the sums run in NumPy's order, not torch's SIMD lanes.


def _group_norm_half_kernel(xp, x, w, b, *, groups, eps):
    dt = x.dtype
    n, c = x.shape[:2]
    per = c // groups
    xs = x.astype(np.float32).reshape(n, groups, -1)
    mean = xs.mean(-1)
    var = np.maximum(((xs - mean[..., None]) ** 2).mean(-1), 0)
    rstd = (np.float32(1) / np.sqrt(var + np.float32(eps))).astype(np.float32)
    s = np.broadcast_to(rstd[..., None], (n, groups, per))
    if w is not None:
        s = s * w.astype(np.float32).reshape(groups, per)
    t = -s * mean[..., None]
    if b is not None:
        t = t + b.astype(np.float32).reshape(groups, per)
    y = xs.reshape(n, groups, per, -1) * s[..., None] + t[..., None]
    return y.astype(dt).reshape(x.shape), mean.astype(dt), rstd.astype(dt)


def _group_norm_half_vjp(grads, x, w, b, *, groups, eps, out):
    g = grads[0]
    n, c = x.shape[:2]
    per = c // groups
    x32 = x.float().reshape(n, c, -1)
    g32 = g.float().reshape(n, c, -1)
    ds = (g32 * x32).sum(-1)  # (n, c)
    db = g32.sum(-1)
    m, a = out[1].float(), out[2].float()  # (n, groups): the saved, rounded statistics
    if w is not None:
        w32 = w.float()
        dsg, dbg = (ds * w32).reshape(n, groups, per).sum(-1), \
            (db * w32).reshape(n, groups, per).sum(-1)
        c1 = (a.unsqueeze(-1) * w32.reshape(groups, per)).reshape(n, c)
    else:
        dsg, dbg = ds.reshape(n, groups, per).sum(-1), db.reshape(n, groups, per).sum(-1)
        c1 = a.repeat_interleave(per, 1)
    scale = 1.0 / (per * x32.shape[-1])
    c2 = (dbg * m - dsg) * a * a * a * scale
    c3 = -c2 * m - dbg * a * scale
    gx = c1.unsqueeze(-1) * g32 + c2.repeat_interleave(per, 1).unsqueeze(-1) * x32 + \
        c3.repeat_interleave(per, 1).unsqueeze(-1)
    gw = gb = None
    if w is not None:
        gw = ((ds - db * m.repeat_interleave(per, 1)) * a.repeat_interleave(per, 1)).sum(0)
        gw = gw.to(w.dtype)
    if b is not None:
        gb = db.sum(0).to(b.dtype)
    return gx.reshape(x.shape).to(x.dtype), gw, gb


group_norm_half_op = Op("_native_group_norm_half", _group_norm_half_kernel,
                        vjp=_group_norm_half_vjp, nondiff_outputs=(1, 2))
group_norm_half_op.node_name = "NativeGroupNormBackward0"
group_norm_half_op.saved_outputs = (1, 2)


@group_norm_half_op.defjvp
def _group_norm_half_jvp(x_dots, x, w, b, *, groups, eps, out):
    return _jvp_in_float32(lambda *t: _group_norm(*t[:1], groups, *t[1:], eps), x_dots,
                           (x, w, b), x.dtype)


@recorded_as("aten::instance_norm", ("input", "weight", "bias", "running_mean", "running_var",
                                     "use_input_stats", "momentum", "eps", None))
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each (sample, channel) plane; running stats averaged over the batch."""
    if use_input_stats and input.dim() >= 2 and math.prod(input.shape[2:]) == 1:
        # nn.functional's own check, as batch_norm's
        raise ValueError(f"Expected more than 1 spatial element when training, got input "
                         f"size {input.shape}")
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                          momentum, eps)


def _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                   eps):
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    n, c = input.shape[:2]
    if use_input_stats and n * c == 0 and weight is not None:  # as batch norm, on (1, N*C)
        raise IndexError("select(): index 0 out of range for tensor of size [0] at dimension 0")
    if input.numel() == 0:  # batch norm of the (1, N*C) view: before any dtype check
        return _empty_batch_norm(input, weight, bias)
    _batch_norm_dtypes(input, weight, bias, running_mean, running_var)
    x = input.reshape((1, n * c) + tuple(input.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    if input.dtype == _dt.float16 and use_input_stats and rm is None and \
            type(x._data) is np.ndarray and x._data.flags.c_contiguous:
        # torch normalises with the weight and bias repeated per sample, in one rounding
        # (NOTE [ float16 batch norm in training ])
        w = None if weight is None else weight.repeat(n)
        b = None if bias is None else bias.repeat(n)
        return _batch_norm(x, None, None, w, b, True, momentum, eps)[0].reshape(input.shape)
    y = _batch_norm(x, rm, rv, None, None, use_input_stats, momentum, eps)[0]
    if running_mean is not None and use_input_stats:
        from ..autograd.grad_mode import no_grad

        with no_grad():
            running_mean.copy_(rm.reshape(n, c).mean(0))
            running_var.copy_(rv.reshape(n, c).mean(0))
    y = y.reshape(input.shape)
    shape = (1, c) + (1,) * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


@public(method=False)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalisation: ``x / sqrt(mean(x^2) + eps) * weight`` over the
    trailing ``normalized_shape`` dims.

    Args:
        input: a tensor whose last dims are ``normalized_shape``.
        normalized_shape: the normalised trailing shape (an int for one dim).
        weight: an elementwise scale of that shape.
        eps: added to the mean square (default: the dtype's machine epsilon).

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.rms_norm(ember.tensor([[3.0, 4.0]]), [2], eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    nd = len(normalized_shape)
    if tuple(input.shape[input.dim() - nd:]) != tuple(normalized_shape):
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
            f"[*, {', '.join(map(str, normalized_shape))}], but got input of size"
            f"{list(input.shape)}")
    kernel_dtype("rms_norm", input)
    # as PyTorch's composite: in the op-math dtype (float32 for half types; the default eps
    # is that dtype's), times the weight in the promoted dtype, and back to the input's dtype
    # once at the end, whatever the weight's dtype (a complex weight's imaginary part is
    # dropped there, with PyTorch's warning)
    opmath = _dt.float32 if input.dtype in (_dt.float16, _dt.bfloat16) else input.dtype
    if eps is None:
        eps = _dt.finfo(opmath).eps
    dims = list(range(input.dim() - nd, input.dim()))
    up = input.to(opmath)
    # (torch's nodes: a power and a Scalar add, NOTE [ Node names ])
    y = up * _node_names.rename(up.pow(2).mean(dims, keepdim=True).add(eps),
                                "AddBackward1").rsqrt()
    if weight is not None:
        y = y * weight
    return y.to(input.dtype)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalise each element by the sum of squares over ``size`` neighbouring channels."""
    from .nn_pad import pad
    from .nn_pool import avg_pool

    if input.dim() < 3:
        # (torch's message carries the indentation of its source line: 26 spaces)
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got "
                         f"{input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    div = (input * input).unsqueeze(1)
    if input.dim() == 3:
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool(2, div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool(3, div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = (div * alpha + k) ** beta
    return input / div



# ------------------------------------------------------------------------------------------------
# top-level forms (torch.<name>): PyTorch's argument order, every flag required where its
# schema has no default; ``cudnn_enabled`` is accepted and has no effect


@public(name="batch_norm", method=False)
def _batch_norm_top(input, weight, bias, running_mean, running_var, training, momentum, eps,
                    cudnn_enabled):
    """Batch normalisation with PyTorch's top-level argument order (see
    ``nn.functional.batch_norm``).

    Args:
        input: an (N, C, ...) tensor.
        weight, bias: per-channel scale and shift, or None.
        running_mean, running_var: per-channel running statistics (updated in training).
        training: normalise by batch statistics (True) or the running ones.
        momentum: the running statistics' update factor.
        eps: added to the variance.
        cudnn_enabled: ignored.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> x = ember.tensor([[1.0], [3.0]])
        >>> ember.batch_norm(x, None, None, None, None, True, 0.1, 0.0, False)
        tensor([[-1.],
                [ 1.]])
    """
    if input.dim() >= 2 and input.numel() == 0:
        return _empty_batch_norm(input, weight, bias)
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                       eps)[0]


@public(method=False)
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """Batch normalisation returning ``(output, save_mean, save_invstd)``: the per-channel
    batch mean and inverse standard deviation in training, empty tensors in evaluation.

    Args:
        input: an (N, C, ...) tensor.
        weight, bias: per-channel scale and shift, or None.
        running_mean, running_var: per-channel running statistics (updated in training).
        training: normalise by batch statistics.
        momentum: the running statistics' update factor.
        eps: added to the variance.

    Returns:
        ``(output, save_mean, save_invstd)``.

    Example:
        >>> import ember
        >>> y, mean, invstd = ember.native_batch_norm(ember.tensor([[1.0], [3.0]]), None,
        ...                                           None, None, None, True, 0.1, 0.0)
        >>> mean, invstd
        (tensor([2.]), tensor([1.]))
    """
    if training and input.numel() == 0:
        kernel_dtype("batch_norm", input)  # (the kernel's dtypes are checked first)
        raise RuntimeError(f"input tensor must have at least one element, but got "
                           f"input_sizes = {list(input.shape)}")
    y, mean, rstd = _batch_norm(input, running_mean, running_var, weight, bias, training,
                                momentum, eps)
    if mean is None:
        empty = input.new_empty(0)
        return y, empty, empty.clone()
    return y, mean, rstd


@public(name="instance_norm", method=False)
def _instance_norm_top(input, weight, bias, running_mean, running_var, use_input_stats,
                       momentum, eps, cudnn_enabled):
    """Instance normalisation with PyTorch's top-level argument order (see
    ``nn.functional.instance_norm``).

    Args:
        input: an (N, C, ...) tensor.
        weight, bias: per-channel scale and shift, or None.
        running_mean, running_var: per-channel running statistics, or None.
        use_input_stats: normalise by each plane's own statistics.
        momentum: the running statistics' update factor.
        eps: added to the variance.
        cudnn_enabled: ignored.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> x = ember.tensor([[[1.0, 3.0]]])
        >>> ember.instance_norm(x, None, None, None, None, True, 0.1, 0.0, False)
        tensor([[[-1.,  1.]]])
    """
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                          momentum, eps)


@public(name="layer_norm", method=False)
def _layer_norm_top(input, normalized_shape, weight=None, bias=None, eps=1e-5,
                    cudnn_enable=True):
    """Layer normalisation over the trailing ``normalized_shape`` dims (see
    ``nn.functional.layer_norm``); ``cudnn_enable`` is ignored.

    Args:
        input: a tensor whose last dims are ``normalized_shape``.
        normalized_shape: the normalised trailing shape.
        weight, bias: elementwise scale and shift of that shape, or None.
        eps: added to the variance.
        cudnn_enable: ignored.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.layer_norm(ember.tensor([[1.0, 3.0]]), [2], eps=0.0)
        tensor([[-1.,  1.]])
    """
    return layer_norm(input, normalized_shape, weight, bias, eps)


@public(method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer normalisation returning ``(output, mean, rstd)``; the statistics keep the
    normalised dims with size 1.

    Args:
        input: a tensor whose last dims are ``normalized_shape``.
        normalized_shape: the normalised trailing shape.
        weight, bias: elementwise scale and shift, or None.
        eps: added to the variance.

    Returns:
        ``(output, mean, rstd)``.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: the saved statistics (``mean``, ``rstd``) can be NaN
        where PyTorch's are infinite.

    Example:
        >>> import ember
        >>> y, mean, rstd = ember.native_layer_norm(ember.tensor([[1.0, 3.0]]), [2], None,
        ...                                         None, 0.0)
        >>> mean, rstd
        (tensor([[2.]]), tensor([[1.]]))
    """
    return _layer_norm(input, normalized_shape, weight, bias, eps)


@public(name="group_norm", method=False)
def _group_norm_top(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    """Group normalisation (see ``nn.functional.group_norm``); ``cudnn_enabled`` is ignored.

    Args:
        input: an (N, C, ...) tensor.
        num_groups: the number of channel groups (divides C).
        weight, bias: per-channel scale and shift, or None.
        eps: added to the variance.
        cudnn_enabled: ignored.

    Returns:
        A tensor shaped like ``input``.

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: a group's statistics can come out infinite where
        PyTorch's are NaN (and the reverse), so results differ in which non-finite value they hold.

    Example:
        >>> import ember
        >>> ember.group_norm(ember.tensor([[[1.0], [3.0]]]), 1, eps=0.0)
        tensor([[[-1.],
                 [ 1.]]])
    """
    return group_norm(input, num_groups, weight, bias, eps, _verify=False)


@public(method=False)
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """Group normalisation returning ``(output, mean, rstd)``, the statistics shaped
    (N, group).

    Args:
        input: an (N, C, ...) tensor of ``N * C * HxW`` elements.
        weight, bias: per-channel scale and shift, or None.
        N, C, HxW: the batch size, channels and elements per channel plane.
        group: the number of channel groups.
        eps: added to the variance.

    Returns:
        ``(output, mean, rstd)``.

    Example:
        >>> import ember
        >>> y, mean, rstd = ember.native_group_norm(ember.tensor([[[1.0], [3.0]]]), None,
        ...                                         None, 1, 2, 1, 1, 0.0)
        >>> mean, rstd
        (tensor([[2.]]), tensor([[1.]]))
    """
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={group}")
    _group_norm_param_shapes(input, C, weight, bias)
    mixed = _group_norm_params(input, weight, bias)  # (dtypes before the size, as torch)
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements (N={N}, C={C}, "
                           f"HxW={HxW}), but got input of size {list(input.shape)}")
    if not input.is_contiguous():  # the native op takes a contiguous input, as torch's
        raise RuntimeError("Expected X.is_contiguous(memory_format) to be true, but got false.")
    if mixed:  # float32 statistics, the output in the input's dtype
        y, mean, rstd = native_group_norm(input.float(), weight, bias, N, C, HxW, group, eps)
        return y.to(input.dtype), mean, rstd
    if input.dtype in (_dt.float16, _dt.bfloat16):
        # half inputs: torch's kernel works in float32 and rounds its three results once (a
        # group's variance can pass float16's range where its rstd does not)
        f32 = [None if t is None else t.float() for t in (weight, bias)]
        y, mean, rstd = native_group_norm(input.float(), *f32, N, C, HxW, group, eps)
        return y.to(input.dtype), mean.to(input.dtype), rstd.to(input.dtype)
    # composed, so that mean and rstd are differentiable outputs, as in PyTorch
    grouped = input.reshape(N, group, C // group * HxW)  # explicit: N may be 0
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, unbiased=False) + eps).rsqrt()
    # the affine step reads channels in the (N, C, HxW) view of the memory, as torch's
    # kernel does, whatever the input's own shape (which need only hold N * C * HxW)
    y = ((grouped - mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).reshape(N, C, HxW)
    if weight is not None:
        y = y * weight.reshape(1, C, 1)
    if bias is not None:
        y = y + bias.reshape(1, C, 1)
    return y.reshape(input.shape), mean, rstd


@public(method=False)
def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (the norm
    of the whole tensor, 0-d, when ``dim`` is -1): weight normalisation's ``||v||``.

    Args:
        v: a tensor.
        pow: the norm's degree.
        dim: the dim kept, or -1 for none.

    Returns:
        A tensor with ``v``'s size along ``dim`` and 1 elsewhere (0-d for ``dim=-1``).

    Example:
        >>> import ember
        >>> ember.norm_except_dim(ember.tensor([[3.0, 0.0], [4.0, 1.0]]), 2, 1)
        tensor([[5., 1.]])
    """
    if dim == -1:
        return v.norm(pow)
    if v.numel() == 0 and v.shape[dim] == 0:
        # torch views v as (size(dim), -1) rows: -1 is ambiguous for an empty v
        raise RuntimeError("cannot reshape tensor of 0 elements into shape [-1, 0] because "
                           "the unspecified dimension size -1 can be any value and is "
                           "ambiguous")
    dims = [d for d in range(v.dim()) if d != dim]
    return v.norm(pow, dims, keepdim=True) if dims else v.abs()
