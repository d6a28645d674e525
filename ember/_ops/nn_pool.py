"""Pooling: max (with indices), average, adaptive average/max, in 1, 2 and 3 dimensions.

Like convolution (NOTE [ Convolution as three linear ops ] in nn_conv.py), each pooling op
comes with its adjoint op, and each names the other as its derivative: average pooling is
linear (its adjoint spreads each gradient over its window), max pooling routes gradients to
the recorded argmax (its adjoint is a scatter-add, whose adjoint is a gather; both are in
_scatter_planes.py, which padding shares).
"""

from __future__ import annotations

import functools
import itertools
import math
import sys

import numpy as np

from .. import _dispatch, _kernels, _parallel
from ._memory_format import keep_layout
from ._registry import Op, public
from .indexing import grad_linked_to, linear_jvp  # second derivatives, forward-mode rules
from ._scatter_planes import unpool_add_op
from ._xp_compat import _is_half_float
from .nn_conv import _tuple, sliding_windows, tap_region
from .nn_checks import kernel_dtype, nonempty_input


def _out_size(size, k, s, p, d, ceil_mode):
    eff = d * (k - 1) + 1
    if ceil_mode:
        out = -(-(size + 2 * p - eff) // s) + 1
        # the last window must start inside the input or the left padding
        if (out - 1) * s >= size + p:
            out -= 1
    else:
        out = (size + 2 * p - eff) // s + 1
    return out


# NOTE [ Pooling shape checks ]
# torch checks a pooling window in stages, and each stage has its own words; ember raises the
# first that fails, in torch's order and words, measured against torch 2.13:
# 1. the padding against the window: at most half the *effective* window (dilation
#    included; avg and the max kernels with indices), or, for max_pool1d without indices
#    (its own kernel), at most half the window itself;
# 2. max pooling with indices then checks the padding against half the window itself
#    (``kernel_size=3, padding=2, dilation=2`` passes step 1 and fails here), naming every
#    dim; avg_pool3d checks that the input is no smaller than the window, padding or not;
# 3. every output size must be positive; the message shows the planes' sizes with the
#    channels first, as the 2-D kernel sees them (a 1-D pooling with indices, or an average,
#    runs as 2-D over a dim of one: ``(C x 1 x L)``).


def _check_pool_shape(op, x, k, s, p, d, ceil_mode, kind):
    """Raise torch's error for a pooling window that does not fit (NOTE [ Pooling shape
    checks ]); ``x`` is batched, ``kind`` "max", "max1d" (no indices) or "avg"."""
    nd = len(k)
    if kind == "max1d":
        if p[0] > k[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, "
                               f"but got padding={p[0]} and kernel_size={k[0]}")
    else:
        for i in range(nd):
            if p[i] > (d[i] * (k[i] - 1) + 1) // 2:
                raise RuntimeError(
                    f"pad should be at most half of effective kernel size, but got "
                    f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    # 1-D pooling other than max_pool1d's own kernel runs as 2-D over a dim of one
    lift = nd == 1 and kind != "max1d"
    k2, p2 = ((1,) + k, (0,) + p) if lift else (k, p)
    if kind == "max" and any(pi > ki // 2 for pi, ki in zip(p2, k2)):
        if len(k2) == 3:
            raise RuntimeError(
                f"pad should be smaller than or equal to half of kernel size, but got "
                f"kT: {k2[0]} kW: {k2[2]} kH: {k2[1]} padT: {p2[0]} padW: {p2[2]} "
                f"padH: {p2[1]}")
        raise RuntimeError(
            f"pad should be smaller than or equal to half of kernel size, but got "
            f"padW = {p2[1]}, padH = {p2[0]}, kW = {k2[1]}, kH = {k2[0]}")
    sizes = tuple(x.shape[2:])
    if kind == "avg" and nd == 3 and any(n < ki for n, ki in zip(sizes, k)):
        raise RuntimeError(
            f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller than kernel "
            f"size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    outs = tuple(_out_size(sizes[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd))
    if min(outs) > 0:
        return
    if kind == "max1d":
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {outs[0]}")
    lead = (x.shape[1],) + ((1,) if lift else ())
    raise RuntimeError(
        f"Given input size: ({'x'.join(map(str, lead + sizes))}). Calculated output size: "
        f"({'x'.join(map(str, lead + outs))}). Output size is too small")


def _padded(xp, x, ksize, stride, padding, dilation, ceil_mode, fill):
    """x padded on each side by ``padding`` plus what ceil_mode's last window needs."""
    nd = len(ksize)
    out = tuple(_out_size(x.shape[2 + i], ksize[i], stride[i], padding[i], dilation[i],
                          ceil_mode) for i in range(nd))
    pads = []
    for i in range(nd):
        need = (out[i] - 1) * stride[i] + dilation[i] * (ksize[i] - 1) + 1
        right = max(need - x.shape[2 + i] - padding[i], padding[i])
        pads.append((padding[i], right))
    if any(p for pair in pads for p in pair):
        x = xp.pad(x, ((0, 0), (0, 0)) + tuple(pads), constant_values=fill)
    return x, out, pads


# ------------------------------------------------------------------------------------------------
# max pooling


@functools.cache
def _first_set_tap(n):
    """For each n-bit code with tap 0 as the highest bit: the first tap whose bit is set."""
    return np.array([0] + [n - c.bit_length() for c in range(1, 1 << n)], dtype=np.int64)


def _max_pool_kernel(xp, x, *, kernel_size, stride, padding, dilation, ceil_mode):
    """Max over each window, tap by tap (strided views, no window copy), keeping the first
    maximal tap (NaN wins, from the last NaN tap, as in PyTorch); indices are flat
    positions in the unpadded input plane.

    The maximum comes first (one ``maximum`` per tap); then each tap is compared with it.
    Up to nine taps the comparisons are packed as bits and the first maximal tap is read
    from a table (2x2 pool of (64, 64, 24, 24): 11.7 -> 5 ms); larger windows write the
    tap with putmask, last to first. The NaN test runs only when some maximum is NaN.
    """
    nd = len(kernel_size)
    if nd == 2 and x.dtype == np.float32:  # one compiled pass (NOTE [ Compiled max pooling ])
        r = _kernels.max_pool2d(x, kernel_size, stride, padding, dilation, tuple(
            _out_size(x.shape[2 + i], kernel_size[i], stride[i], padding[i], dilation[i],
                      ceil_mode) for i in range(2)))
        if r is not None:
            return r
    if xp is np and tiles_2x2(x.shape, kernel_size, stride, padding, dilation):
        r = _max_pool_2x2(x)
        if r is not None:
            return r
    lowest = -xp.inf if x.dtype.kind in "fV" else xp.iinfo(x.dtype).min
    xpad, out, pads = _padded(xp, x, kernel_size, stride, padding, dilation, ceil_mode, lowest)
    taps = list(itertools.product(*(range(k) for k in kernel_size)))
    views = [xpad[(slice(None), slice(None)) + tap_region(tap, out, stride, dilation)]
             for tap in taps]
    best = views[0].copy()
    for view in views[1:]:
        xp.maximum(best, view, out=best)
    # (a device array is not read on the host: there the NaN pass always runs)
    nan = x.dtype.kind in "fV" and (xp is not np or bool(xp.isnan(best).any()))
    hit = xp.empty(best.shape, dtype=bool)
    spatial = x.shape[2:]
    offset = xp.zeros(len(taps), dtype=xp.int64)
    origin = xp.zeros(tuple(out), dtype=xp.int64)
    for i in range(nd):
        tap_i = xp.asarray([tap[i] * dilation[i] for tap in taps], dtype=xp.int64)
        offset = offset * spatial[i] + tap_i
        grid = xp.arange(out[i]).reshape(tuple(-1 if j == i else 1 for j in range(nd)))
        origin = origin * spatial[i] + (grid * stride[i] - padding[i])
    if len(taps) <= 9:
        # each output's taps that hold the maximum, as bits (tap 0 highest); the first
        # maximal tap is the highest set bit, looked up in a table of offsets
        code = xp.zeros(best.shape, dtype=xp.uint8 if len(taps) <= 8 else xp.uint16)
        for t in range(len(taps)):
            xp.equal(views[t], best, out=hit)
            code <<= 1
            code |= hit
        index = offset[xp.asarray(_first_set_tap(len(taps)))][code]
    else:
        arg = xp.zeros(best.shape, dtype=xp.int32)
        for t in range(len(taps) - 1, -1, -1):
            xp.equal(views[t], best, out=hit)
            xp.putmask(arg, hit, t)
        index = offset[arg]
    if nan:
        # a NaN maximum comes from the window's last NaN tap, as in PyTorch
        for t in range(len(taps)):
            xp.putmask(index, xp.isnan(views[t]), offset[t])
    index += origin
    if any(p for pair in pads for p in pair):
        _skip_padding_taps(xp, index, best, views, lowest, taps, offset, origin, out, x.shape[2:],
                           stride, padding, dilation)
    return best, index


# NOTE [ 2x2 max pooling in pairs ]
# The general kernel above compares every tap with the maximum and turns the comparisons
# into a tap number through a table and a gather into int64 offsets. On the NumPy path the
# common 2x2, stride-2 pool spends most of that time not computing but iterating: a tap's
# view (a stride of two elements along rows of a dozen outputs) gives NumPy's loops a dozen
# elements per call, and its float maximum has no vector loop for strided operands. So the
# tiling case runs as a tournament over contiguous arrays:
#
# 1. rows: the two input rows of each window row, as views whose runs are whole input rows,
#    give each column's larger value (``rmax``) and whether the lower row won (``lower``;
#    a tie keeps the upper row);
# 2. columns: ``rmax``'s even and odd columns, copied apart (a plain strided copy is cheap),
#    give the maximum, and the right column wins where it is greater, or equal with its
#    winner in the upper row and the left one's in the lower row: that is PyTorch's "first
#    maximal tap in row-major order";
# 3. the flat index is the window's origin + row * W + column.
#
# The planes run in blocks whose buffers stay in a core's L2 cache, on every thread
# (``split_on_threads``). A NaN in the result sends the call back to the general kernel,
# whose NaN rule (the last NaN tap) the tournament does not follow. The backward
# (``_scatter_planes._unpool_2x2``) needs no scatter: each window's gradient lands on the
# tap its index names, and every input element belongs to exactly one window. A 2x2 pool
# of (64, 64, 24, 24) on the 2-CPU AVX2 machine (same process, interleaved, medians):
# forward 22.9 -> 8.6 ms at one thread (PyTorch 19-22), forward + backward 41 -> 20 ms
# (PyTorch 23.5); at two threads 12.4 -> 7.4 ms and 26.6 -> 16.2 ms (PyTorch 10 and 12.4).

#: output elements per block of planes (its buffers stay within a core's L2 cache)
_PAIR_BLOCK = 1 << 15
#: the fewest output elements worth cutting over the threads
_PAIR_SPLIT = 1 << 17
_BIG_ENDIAN = sys.byteorder == "big"  # (the tournament reads two bools as one uint16)


def tiles_2x2(input_shape, kernel_size, stride, padding, dilation):
    """Whether a 2-d max pool is the exact 2x2, stride-2 tiling of its input (NOTE [ 2x2 max
    pooling in pairs ]): no padding or dilation, even height and width.

    Args:
        input_shape: the (N, C, H, W) input shape.
        kernel_size, stride, padding, dilation: the pool's parameters, as pairs.

    Returns:
        bool: True for the tiling case.

    Example::

        >>> tiles_2x2((1, 1, 4, 6), (2, 2), (2, 2), (0, 0), (1, 1))
        True
    """
    return (len(input_shape) == 4 and tuple(kernel_size) == (2, 2)
            and tuple(stride) == (2, 2) and not any(padding) and tuple(dilation) == (1, 1)
            and input_shape[2] % 2 == 0 and input_shape[3] % 2 == 0)


def _max_pool_2x2(x):
    """Values and flat indices of a 2x2, stride-2 max pool tiling ``x`` (NOTE [ 2x2 max
    pooling in pairs ]), or None for a non-float or non-contiguous input or a NaN result."""
    if x.dtype.kind != "f" or not x.flags.c_contiguous or not x.size or _BIG_ENDIAN:
        return None
    n, c, h, w = x.shape
    oh, ow = h // 2, w // 2
    planes = x.reshape(n * c, h, w)
    best = np.empty((n * c, oh * ow), dtype=x.dtype)
    index = np.empty((n * c, oh * ow), dtype=np.int64)
    origin = ((np.arange(oh) * (2 * w))[:, None] + np.arange(ow) * 2).reshape(-1)
    block = max(1, _PAIR_BLOCK // (oh * ow))

    def run(lo, hi):
        m = min(block, hi - lo) * oh * ow
        rmax = np.empty(2 * m, dtype=x.dtype)
        lower = np.empty(2 * m, dtype=bool)
        left, right = np.empty(m, dtype=x.dtype), np.empty(m, dtype=x.dtype)
        take, tie = np.empty(m, dtype=bool), np.empty(m, dtype=bool)
        rows = np.empty(m, dtype=np.uint16)
        for p0 in range(lo, hi, block):
            p1 = min(p0 + block, hi)
            k = (p1 - p0) * oh * ow
            src = planes[p0:p1]
            rm = rmax[:2 * k].reshape(p1 - p0, oh, w)
            low = lower[:2 * k].reshape(p1 - p0, oh, w)
            np.maximum(src[:, 0::2], src[:, 1::2], out=rm)
            np.greater(src[:, 1::2], src[:, 0::2], out=low)
            pairs = rmax[:2 * k].reshape(k, 2)
            a, b, t, e = left[:k], right[:k], take[:k], tie[:k]
            np.copyto(a, pairs[:, 0])
            np.copyto(b, pairs[:, 1])
            np.maximum(a, b, out=best[p0:p1].reshape(-1))
            np.greater(b, a, out=t)
            np.equal(b, a, out=e)
            # two bools as one uint16 (little-endian): the left column's row, the right's << 8
            code = lower[:2 * k].view(np.uint16)
            np.logical_and(e, code == 1, out=e)
            np.logical_or(t, e, out=t)
            r = rows[:k]
            np.left_shift(t, 3, out=r, dtype=np.uint16)
            np.right_shift(code, r, out=r)
            np.bitwise_and(r, 1, out=r)
            idx = index[p0:p1]
            np.multiply(r.reshape(p1 - p0, -1), w, out=idx, dtype=np.int64)
            idx += t.reshape(p1 - p0, -1)
            idx += origin

    if not _parallel.split_on_threads(run, n * c, min_size=max(2, _PAIR_SPLIT // (oh * ow))):
        run(0, n * c)
    if np.isnan(best.max()):
        return None
    return best.reshape(n, c, oh, ow), index.reshape(n, c, oh, ow)


def _skip_padding_taps(xp, index, best, views, lowest, taps, offset, origin, out, spatial,
                       stride, padding, dilation):
    """A window whose maximum is the padding value itself (all -inf, or the integer minimum)
    may have picked a padding tap; PyTorch reports its first tap inside the input."""
    low = best == lowest
    if xp is np and not low.any():  # (a device mask is not read on the host)
        return
    nd = len(taps[0])
    for t in range(len(taps) - 1, -1, -1):
        inside = xp.ones(tuple(out), dtype=bool)
        for i in range(nd):
            pos = xp.arange(out[i]) * stride[i] + taps[t][i] * dilation[i] - padding[i]
            ok = (pos >= 0) & (pos < spatial[i])
            inside &= ok.reshape(tuple(-1 if j == i else 1 for j in range(nd)))
        hit = low & inside & (views[t] == best)
        xp.putmask(index, hit, xp.broadcast_to(offset[t] + origin, index.shape).copy())
    # a window with no tap inside the input at all (dilation can step over it): PyTorch
    # reports the position its loops start from, each dim's start stepped by the dilation
    # until it is >= 0 (even when that lies past the input)
    empty = xp.zeros(tuple(out), dtype=bool)
    start_at = xp.zeros(tuple(out), dtype=xp.int64)
    for i in range(nd):
        start = xp.arange(out[i]) * stride[i] - padding[i]
        first = start + (xp.maximum(-start, 0) + dilation[i] - 1) // dilation[i] * dilation[i]
        k = max(tap[i] for tap in taps) + 1
        pos = start[:, None] + xp.arange(k)[None, :] * dilation[i]
        none_inside = ~((pos >= 0) & (pos < spatial[i])).any(axis=1)
        shape = tuple(-1 if j == i else 1 for j in range(nd))
        empty |= none_inside.reshape(shape)
        start_at = start_at * spatial[i] + first.reshape(shape)
    xp.putmask(index, xp.broadcast_to(empty, index.shape),
               xp.broadcast_to(start_at, index.shape).copy())


def _mp_vjp(grads, x, *, kernel_size, stride, padding, dilation, ceil_mode, input_shape,
            out):
    # (x is kept as PyTorch's node keeps it: its second derivative is zeros for x)
    g = grads[0] if isinstance(grads, tuple) else grads
    params = {"input_shape": input_shape}
    if tiles_2x2(input_shape, kernel_size, stride, padding, dilation):
        params["tiles_2x2"] = True  # no scatter needed (NOTE [ 2x2 max pooling in pairs ])
    return grad_linked_to(_dispatch.apply(unpool_add_op, (g, out[1]), params), x)


def _mp_kernel(xp, x, *, kernel_size, stride, padding, dilation, ceil_mode, input_shape):
    return _max_pool_kernel(xp, x, kernel_size=kernel_size, stride=stride, padding=padding,
                            dilation=dilation, ceil_mode=ceil_mode)


def _mp_jvp(x_dots, _x, *, out, **params):
    # each output is the input element its index names: gather the tangent there
    idx = out[1]
    n, c = idx.shape[0], idx.shape[1]
    xd = x_dots[0].reshape(n, c, -1)
    return xd.gather(2, idx.reshape(n, c, -1)).reshape(tuple(idx.shape)), None


max_pool_op = Op("max_pool", _mp_kernel, vjp=_mp_vjp, jvp=_mp_jvp, nondiff_outputs=(1,))
max_pool_op.saved_outputs = (1,)  # the indices, not the values (ReLU(inplace=True) follows)


def max_pool(nd, input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
             return_indices=False):
    if input.is_quantized:  # NOTE [ Quantized ops on centred integers ] (ember/ao/_qops.py)
        from ..ao._qops import on_centered_ints
        from ..ao._qtensor import _no_quantized_kernel

        if return_indices:
            raise _no_quantized_kernel(f"aten::max_pool{nd}d_with_indices.out")
        return on_centered_ints(lambda x: max_pool(nd, x, kernel_size, stride, padding, dilation,
                                                   ceil_mode), input)
    op = f"max_pool{nd}d"
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(
            f"{op}: Expected {nd + 1}D or {nd + 2}D input tensor, but got "
            f"{list(input.shape)}")
    _pool_nonempty(op, input, nd, return_indices)
    x = input if batched else input.unsqueeze(0)
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    d = _tuple(dilation, nd, "dilation", op)
    _check_pool_shape(op, x, k, s, p, d, ceil_mode, "max" if return_indices or nd > 1
                      else "max1d")
    if nd == 1 and not return_indices:
        kernel_dtype("max_pool1d", x)
    else:
        kernel_dtype("max_pool3d" if nd == 3 else "max_pool2d", x)
    values, indices = _dispatch.apply(max_pool_op, (x,), dict(
        kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil_mode,
        input_shape=tuple(x.shape)))
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    else:  # NOTE [ Result layout ]
        values, indices = keep_layout(values, x), keep_layout(indices, x)
    return (values, indices) if return_indices else values


def _pool_nonempty(op, input, nd, through_2d=True):
    """torch's empty-input rule of max / average pooling (see nn_checks.nonempty_input): 1-d
    pooling runs as 2-d on an unsqueezed input, except max_pool1d without indices."""
    if nd == 3:
        lead = 1 if input.dim() == 5 else 0
        if any(n == 0 for n in tuple(input.shape)[lead:]):
            raise RuntimeError(
                f"{op}(): Expected input's non-batch dimensions to have positive length, but "
                f"input has a shape of {list(input.shape)}")
    elif nd == 1 and not through_2d:
        nonempty_input(input, 1, message=(
            "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
            f"size for input, but got:{list(input.shape)}"))
    elif nd == 1:
        nonempty_input(input.unsqueeze(-2), 2)
    else:
        nonempty_input(input, nd)


def max_unpool(nd, input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Place each value of ``input`` at its ``indices`` in a zero tensor (inverse of max
    pooling with ``return_indices=True``)."""
    op = f"max_unpool{nd}d"
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None else _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    batched = input.dim() == nd + 2
    kernel_dtype("max_unpool3d" if nd == 3 else "max_unpool2d", input)
    x = input if batched else input.unsqueeze(0)
    idx = indices if batched else indices.unsqueeze(0)
    default = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-nd:]
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise ValueError(
                    f"invalid output_size {list(output_size)} (dim {i} must be between {lo} "
                    f"and {hi})")
    plane = math.prod(size)
    # (the values are read only where the tensors hold them: not under vmap, for one)
    if idx.numel() and _dispatch.plain_data() and (int(idx.max()) >= plane or
                                                   int(idx.min()) < 0):
        raise RuntimeError(f"Found an invalid max index: {int(idx.max())} (output volumes "
                           f"are of size {'x'.join(map(str, size))})")
    y = _dispatch.apply(unpool_add_op, (x, idx), {"input_shape": tuple(x.shape[:2]) + size})
    return y if batched else y.squeeze(0)


# ------------------------------------------------------------------------------------------------
# average pooling


def _avg_divisor(xp, in_shape, out, ksize, stride, padding, ceil_mode, count_include_pad,
                 divisor_override):
    if divisor_override is not None:
        return divisor_override
    nd = len(ksize)
    counts = None
    for i in range(nd):
        start = np.arange(out[i]) * stride[i] - padding[i]
        end = np.minimum(start + ksize[i], in_shape[i] + padding[i])
        if count_include_pad:
            cnt = end - start
        else:
            cnt = np.minimum(end, in_shape[i]) - np.maximum(start, 0)
        shape = [1] * nd
        shape[i] = -1
        cnt = cnt.reshape(shape)
        counts = cnt if counts is None else counts * cnt
    return xp.asarray(counts.astype(np.float64))


def _window_sum(xp, win, kernel_size, widen=True):
    """The sums of ``win`` (N, C, *out, *k) over its window axes, one tap after another in
    row-major window order, as torch's CPU pooling loops add them (float16/bfloat16 in
    float32): with +-inf or values near the dtype's largest in a window, which sums overflow
    to inf or meet inf - inf follows that order. ``widen=False``: float16/bfloat16 summed in
    their own type (torch's 3-d adaptive kernel)."""
    acc = np.float32 if widen and _is_half_float(win.dtype) else None
    total = None
    for tap in itertools.product(*(range(k) for k in kernel_size)):
        v = win[(Ellipsis,) + tap]
        v = v.astype(acc) if acc is not None else v
        total = v.copy() if total is None else total + v
    return total


def _avg_pool_kernel(xp, x, *, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override):
    nd = len(kernel_size)
    ones = (1,) * nd
    xpad, out, _ = _padded(xp, x, kernel_size, stride, padding, ones, ceil_mode, 0)
    win = sliding_windows(xp, xpad, out, kernel_size, stride, ones)
    total = _window_sum(xp, win, kernel_size)
    div = _avg_divisor(xp, x.shape[2:], out, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)
    if x.dtype.kind in "iu":  # integer averages truncate toward zero, as C++ division does
        d = xp.asarray(div).astype(xp.int64)
        # the sum wraps as torch's int64 one does; abs() of INT64_MIN would wrap again, so
        # take off fmod's remainder (the dividend's sign) and divide exactly
        return ((total - xp.fmod(total, d)) // d).astype(x.dtype)
    return (total / div).astype(x.dtype)


def _avg_pool_backward_kernel(xp, g, *, input_shape, kernel_size, stride, padding, ceil_mode,
                              count_include_pad, divisor_override):
    nd = len(kernel_size)
    out = g.shape[2:]
    div = _avg_divisor(xp, input_shape[2:], out, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override)
    # each output's share in float32 for float16/bfloat16 and then rounded, added in the
    # gradient's dtype to every input of its window; an input receives its shares in the
    # order of the outputs that read it, which is the taps' order reversed (the bits
    # torch's CPU loop gives, rounding included)
    calc = np.float32 if _is_half_float(g.dtype) else g.dtype
    gd = (g.astype(calc) / xp.asarray(div).astype(calc)).astype(g.dtype)
    spatial = tuple(max((out[i] - 1) * stride[i] + kernel_size[i],
                        input_shape[2 + i] + padding[i]) + padding[i] for i in range(nd))
    gx = xp.zeros(tuple(input_shape[:2]) + spatial, dtype=g.dtype)
    for tap in reversed(list(itertools.product(*(range(k) for k in kernel_size)))):
        gx[(slice(None), slice(None)) + tap_region(tap, out, stride, (1,) * nd)] += gd
    crop = (slice(None), slice(None)) + tuple(
        slice(padding[i], padding[i] + input_shape[2 + i]) for i in range(nd))
    return xp.ascontiguousarray(gx[crop])


def _avg_pool_vjp(g, x, **p):
    return grad_linked_to(
        _dispatch.apply(avg_pool_backward_op, (g,), dict(p, input_shape=tuple(x.shape))), x)


def _avg_pool_backward_vjp(gz, _g, *, input_shape, **p):
    return _dispatch.apply(avg_pool_op, (gz,), p)


avg_pool_op = Op("avg_pool", _avg_pool_kernel, vjp=_avg_pool_vjp)
avg_pool_backward_op = Op("avg_pool_backward", _avg_pool_backward_kernel,
                          vjp=_avg_pool_backward_vjp)
linear_jvp(avg_pool_op, (0,))
linear_jvp(avg_pool_backward_op, (0,))


def avg_pool(nd, input, kernel_size, stride=None, padding=0, ceil_mode=False,
             count_include_pad=True, divisor_override=None):
    if input.is_quantized:  # NOTE [ Quantized ops on centred integers ] (ember/ao/_qops.py)
        from ..ao._qops import on_centered_ints

        return on_centered_ints(lambda x: avg_pool(nd, x, kernel_size, stride, padding, ceil_mode,
                                                   count_include_pad, divisor_override), input)
    op = f"avg_pool{nd}d"
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D input tensor, but got "
                           f"{list(input.shape)}")
    _pool_nonempty(op, input, nd)
    x = input if batched else input.unsqueeze(0)
    k = _tuple(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", op)
    p = _tuple(padding, nd, "padding", op)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool_shape(op, x, k, s, p, (1,) * nd, ceil_mode, "avg")
    kernel_dtype("avg_pool3d" if nd == 3 else "avg_pool2d", x)
    y = _dispatch.apply(avg_pool_op, (x,), dict(
        kernel_size=k, stride=s, padding=p, ceil_mode=ceil_mode,
        count_include_pad=count_include_pad, divisor_override=divisor_override))
    return keep_layout(y, x) if batched else y.squeeze(0)


# ------------------------------------------------------------------------------------------------
# adaptive pooling


def _bounds(size, out):
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def _adaptive_avg_kernel(xp, x, *, output_size):
    nd = len(output_size)
    spatial = x.shape[2:]
    if any(o == 0 for o in output_size):  # an empty output (interpolate to size 0)
        return xp.zeros(x.shape[:2] + tuple(output_size), dtype=x.dtype)
    # each window summed tap by tap and divided by its lengths one axis after another, as
    # torch's CPU kernel does (the order decides where inf/near-max values meet)
    if all(spatial[i] % output_size[i] == 0 for i in range(nd)):
        # equal windows: one reshape to (N, C, *out, *k)
        k = tuple(spatial[i] // output_size[i] for i in range(nd))
        shape = x.shape[:2]
        for i in range(nd):
            shape += (output_size[i], k[i])
        r = x.reshape(shape).transpose((0, 1) + tuple(2 + 2 * i for i in range(nd))
                                       + tuple(3 + 2 * i for i in range(nd)))
        total = _window_sum(xp, r, k, widen=nd < 3)
        for n in k:
            total = total / n
        return total.astype(x.dtype)
    out = xp.empty(x.shape[:2] + tuple(output_size), dtype=x.dtype)
    for pos in itertools.product(*(range(o) for o in output_size)):
        b = [_bounds(spatial[i], output_size[i])[pos[i]] for i in range(nd)]
        total = _window_sum(xp, x[(Ellipsis,) + tuple(slice(*e) for e in b)],
                            tuple(e[1] - e[0] for e in b), widen=nd < 3)
        for lo, hi in b:
            total = total / (hi - lo)
        out[(Ellipsis,) + pos] = total
    return out


def _adaptive_avg_backward_kernel(xp, g, *, input_shape, output_size):
    nd = g.ndim - 2
    output_size = g.shape[2:]
    spatial = input_shape[2:]
    gx = xp.zeros(input_shape, dtype=g.dtype)
    for pos in itertools.product(*(range(o) for o in output_size)):
        bounds = [_bounds(spatial[i], output_size[i])[pos[i]] for i in range(nd)]
        sl = tuple(slice(lo, hi) for lo, hi in bounds)
        val = g[(Ellipsis,) + pos]
        for lo, hi in bounds:  # one window length after another, rounding each, as torch
            val = val / (hi - lo)
        gx[(Ellipsis,) + sl] += val.reshape(val.shape + (1,) * nd)
    return gx


def _adaptive_avg_vjp(g, x, *, output_size):
    nd = len(output_size)
    shape = tuple(g.shape)
    if nd == 1:  # (PyTorch pools one dim as two, and says so)
        nd, shape = 2, shape[:-1] + (1,) + shape[-1:]
    for d in range(len(shape) - nd - (1 if len(shape) == nd + 2 else 0), len(shape)):
        if shape[d] == 0 and (len(shape) == nd + 1 or d > 0):
            raise RuntimeError(
                f"adaptive_avg_pool{nd}d_backward(): Expected grad_output to have non-zero size "
                f"for non-batch dimensions, but grad_output has sizes {list(shape)} with "
                f"dimension {d} being empty")
    if all(o == 1 for o in output_size):
        # global pooling is a mean over the planes, and its gradient is PyTorch's mean's:
        # the gradient spread over each plane and divided by its size (the bits the
        # general kernel gives, as PyTorch's MeanBackward1 runs it)
        return g.expand(tuple(x.shape)) / math.prod(x.shape[2:])
    return grad_linked_to(_dispatch.apply(adaptive_avg_backward_op, (g,), {
        "input_shape": tuple(x.shape), "output_size": output_size}), x)


def _adaptive_avg_backward_vjp(gz, _g, *, input_shape, output_size):
    return _dispatch.apply(adaptive_avg_op, (gz,), {"output_size": output_size})


adaptive_avg_op = Op("adaptive_avg_pool", _adaptive_avg_kernel, vjp=_adaptive_avg_vjp)
adaptive_avg_backward_op = Op("adaptive_avg_pool_backward", _adaptive_avg_backward_kernel,
                              vjp=_adaptive_avg_backward_vjp)
linear_jvp(adaptive_avg_op, (0,))
linear_jvp(adaptive_avg_backward_op, (0,))


def _adaptive_args(nd, input, output_size, op):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    if isinstance(output_size, int):
        output_size = (output_size,) * nd
    output_size = tuple(x.shape[2 + i] if o is None else int(o)
                        for i, o in enumerate(output_size))
    if len(output_size) != nd:
        raise ValueError(f"{op}: output_size must be {nd} integers")
    # average: only the spatial dims must be non-empty; max: the channels too
    # (of the input as given: an unbatched input's channels count as its batch)
    first = input.dim() - nd if "avg" in op else 1
    empty = [i for i in range(first, input.dim()) if input.shape[i] == 0]
    if empty:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)} with "
                           f"dimension {empty[0]} being empty")
    kind = "avg" if "avg" in op else "max"
    if kind == "avg" and nd < 3 and not (x.shape[0] * x.shape[1] * math.prod(output_size)):
        return x, batched, output_size  # PyTorch's 2-d kernel never runs for an empty result
    kernel_dtype(f"adaptive_{kind}_pool3d" if nd == 3 else f"adaptive_{kind}_pool2d", x)
    return x, batched, output_size


def adaptive_avg_pool(nd, input, output_size):
    if input.is_quantized:  # NOTE [ Quantized ops on centred integers ] (ember/ao/_qops.py)
        from ..ao._qops import on_centered_ints

        return on_centered_ints(lambda x: adaptive_avg_pool(nd, x, output_size), input)
    x, batched, output_size = _adaptive_args(nd, input, output_size,
                                             f"adaptive_avg_pool{nd}d")
    y = _dispatch.apply(adaptive_avg_op, (x,), {"output_size": output_size})
    return keep_layout(y, x) if batched else y.squeeze(0)


def _adaptive_max_kernel(xp, x, *, output_size):
    nd = len(output_size)
    spatial = x.shape[2:]
    values = xp.empty(x.shape[:2] + tuple(output_size), dtype=x.dtype)
    index = xp.empty(x.shape[:2] + tuple(output_size), dtype=xp.int64)
    for pos in itertools.product(*(range(o) for o in output_size)):
        bounds = [_bounds(spatial[i], output_size[i])[pos[i]] for i in range(nd)]
        sl = tuple(slice(lo, hi) for lo, hi in bounds)
        win = x[(Ellipsis,) + sl]
        flat = win.reshape(win.shape[:2] + (math.prod(win.shape[2:]),))
        arg = flat.argmax(axis=-1)
        if flat.dtype.kind in "fcV" and flat.shape[-1]:
            # PyTorch's loop lets every NaN replace the best so far: the last NaN wins
            isnan = xp.isnan(flat)[..., ::-1]
            arg = xp.where(isnan.any(axis=-1), flat.shape[-1] - 1 - isnan.argmax(axis=-1), arg)
        values[(Ellipsis,) + pos] = xp.take_along_axis(flat, arg[..., None], -1)[..., 0]
        local = xp.unravel_index(arg, win.shape[2:])
        idx = xp.zeros(arg.shape, dtype=xp.int64)
        for i in range(nd):
            idx = idx * spatial[i] + (local[i] + bounds[i][0])
        index[(Ellipsis,) + pos] = idx
    return values, index


def _adaptive_max_vjp(grads, x, *, output_size, input_shape, out):
    g = grads[0] if isinstance(grads, tuple) else grads
    return grad_linked_to(
        _dispatch.apply(unpool_add_op, (g, out[1]), {"input_shape": input_shape}), x)


def _adaptive_max_kernel_p(xp, x, *, output_size, input_shape):
    return _adaptive_max_kernel(xp, x, output_size=output_size)


adaptive_max_op = Op("adaptive_max_pool", _adaptive_max_kernel_p, vjp=_adaptive_max_vjp,
                     nondiff_outputs=(1,))
adaptive_max_op.defjvp(_mp_jvp)  # forward mode: the tangent gathered at the argmax indices
adaptive_max_op.saved_outputs = (1,)  # the indices only, as max_pool_op


def adaptive_max_pool(nd, input, output_size, return_indices=False):
    x, batched, output_size = _adaptive_args(nd, input, output_size,
                                             f"adaptive_max_pool{nd}d")
    values, indices = _dispatch.apply(adaptive_max_op, (x,), {
        "output_size": output_size, "input_shape": tuple(x.shape)})
    if not batched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    else:
        values, indices = keep_layout(values, x), keep_layout(indices, x)
    return (values, indices) if return_indices else values


# ------------------------------------------------------------------------------------------------
# top-level forms (torch.<name>): no return_indices flag; the *_with_indices forms return both


_MAX_POOL_DOC = """{nd}-d max pooling: the largest value of each window.

    Args:
        input: (N, C, {sp}) or unbatched (C, {sp}).
        kernel_size: the window size (an int or one per dim).
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit -inf padding on both sides (at most half the kernel).
        dilation: the spacing between window taps.
        ceil_mode: round the output size up, letting the last window start in the padding.

    Returns:
        The pooled tensor.

    Example:
        >>> import ember
        >>> ember.max_pool{nd}d(ember.arange(16.0).reshape({shape}), 2).shape
        {out}
    """


def _named_max_pool(nd):
    def fn(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        return max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode)

    sp = ", ".join("DHW"[3 - nd:])
    shape = {1: "1, 1, 16", 2: "1, 1, 4, 4", 3: "1, 2, 2, 4"}[nd]
    out = {1: "[1, 1, 8]", 2: "[1, 1, 2, 2]", 3: "[1, 1, 1, 2]"}[nd]
    if nd == 3:
        shape = "1, 1, 2, 2, 4"
        out = "[1, 1, 1, 1, 2]"
    fn.__name__ = fn.__qualname__ = f"max_pool{nd}d"
    fn.__doc__ = _MAX_POOL_DOC.format(nd=nd, sp=sp, shape=shape, out=f"ember.Size({out})")
    return public(fn, method=False)


max_pool1d, max_pool2d, max_pool3d = _named_max_pool(1), _named_max_pool(2), _named_max_pool(3)


@public(method=False)
def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """1-d max pooling returning ``(values, indices)``, the indices being positions along the
    input's last dim (what ``max_unpool1d`` takes).

    Args:
        input: (N, C, L) or (C, L).
        kernel_size, stride, padding, dilation, ceil_mode: as in :func:`max_pool1d`.

    Returns:
        ``(values, indices)``.

    Example:
        >>> import ember
        >>> ember.max_pool1d_with_indices(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        (tensor([[3., 2.]]), tensor([[1, 2]]))
    """
    return max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, True)


@public(method=False)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-d average pooling: the mean of each window.

    Args:
        input: (N, C, L) or (C, L).
        kernel_size: the window size.
        stride: the step between windows (default: ``kernel_size``).
        padding: implicit zeros on both sides (at most half the kernel).
        ceil_mode: round the output size up.
        count_include_pad: count padded zeros in the divisor.

    Returns:
        The pooled tensor.

    Example:
        >>> import ember
        >>> ember.avg_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    if not isinstance(stride, int) and stride is not None and len(stride) == 0:
        stride = None
    return avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad)


@public(method=False)
def adaptive_avg_pool1d(input, output_size):
    """1-d adaptive average pooling: ``output_size`` windows that tile the input.

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length.

    Returns:
        (N, C, output_size) or (C, output_size).

    Example:
        >>> import ember
        >>> ember.adaptive_avg_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    return adaptive_avg_pool(1, input, output_size)


@public(method=False)
def adaptive_max_pool1d(input, output_size):
    """1-d adaptive max pooling returning ``(values, indices)``.

    Args:
        input: (N, C, L) or (C, L).
        output_size: the output length.

    Returns:
        ``(values, indices)``, indices into the input's last dim.

    Example:
        >>> import ember
        >>> ember.adaptive_max_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        (tensor([[3., 2.]]), tensor([[1, 2]]))
    """
    return adaptive_max_pool(1, input, output_size, True)


# ------------------------------------------------------------------------------------------------
# fractional max pooling
#
# NOTE [ Fractional pooling windows ]
# Each (sample, channel) plane draws one number u in [0, 1) per spatial dim. With
# alpha = (in - k) / (out - 1), window i starts at floor((i + u) alpha) - floor(u alpha), the
# last one at in - k: pseudo-random starts whose steps are floor(alpha) or ceil(alpha). The
# starts are computed in the input's dtype, as PyTorch does, so the same samples give the same
# windows. The samples are (N, C, nd) with the width's sample first for 2-d pooling and
# (depth, height, width) order for 3-d. The result is a gather of the input at the argmax
# positions, so its derivative is gather's.


def _fractional_starts(u, size, out, k, dt):
    """Window starts (P, out) for samples u (P,) along one dim."""
    starts = np.empty(u.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dt.type(size - k) / dt.type(out - 1)
        i = np.arange(out - 1, dtype=dt)
        uu = u.astype(dt)[:, None]
        starts[:, :-1] = ((i + uu) * alpha).astype(np.int64) - (uu * alpha).astype(np.int64)
    if out > 0:
        starts[:, -1] = size - k
    return starts


def fractional_max_pool(nd, input, kernel_size, output_size=None, output_ratio=None,
                        return_indices=False, _random_samples=None):
    from .._core.tensor import wrap
    from ..autograd.grad_mode import no_grad
    from .random_ops import rand

    op = f"fractional_max_pool{nd}d"
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    k = _tuple(kernel_size, nd, "kernel_size", op)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    spatial = tuple(x.shape[2:])
    if output_size is None:
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else \
            tuple(output_ratio)
        output_size = tuple(int(spatial[i] * ratio[i]) for i in range(nd))
    out = _tuple(output_size, nd, "output_size", op)
    # PyTorch's checks: the 2-d kernel refuses out + k - 1 > in, height then width; the 3-d
    # one already out + k - 1 == in, and looks at time, width, then height
    names, order, strict = (("height", "width"), (0, 1), 0) if nd == 2 else \
        (("time", "height", "width"), (0, 2, 1), 1)
    for i in order:
        if out[i] + k[i] - 1 + strict > spatial[i]:
            raise RuntimeError(
                f"{op}{'_out' if nd == 3 else ''}(): pool {names[i]} {k[i]} too large relative "
                f"to input {names[i]} {spatial[i]}")
    n, c = x.shape[:2]
    if _random_samples is None:
        _random_samples = rand(n, c, nd, dtype=x.dtype, device=x.device)
    if _random_samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if tuple(_random_samples.shape) != (n, c, nd):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {[n, c, nd]}, got "
                           f"{list(_random_samples.shape)}")
    with no_grad():
        xs = np.asarray(x.detach().cpu().numpy()).reshape((n * c,) + spatial)
        u = np.asarray(_random_samples.detach().cpu().numpy()).reshape(n * c, nd)
        # the samples' order: (w, h) in 2-d, (t, h, w) in 3-d (NOTE [ Fractional pooling ...])
        order = [1, 0] if nd == 2 else list(range(nd))
        starts = [_fractional_starts(u[:, order[i]], spatial[i], out[i], k[i], xs.dtype)
                  for i in range(nd)]
        best = np.full((n * c,) + out, -np.inf)
        index = np.zeros((n * c,) + out, dtype=np.int64)
        strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
        rows = xs.reshape(n * c, -1)
        for taps in itertools.product(*(range(kk) for kk in k)):  # row-major, as PyTorch
            flat = np.zeros((n * c,) + (1,) * nd, dtype=np.int64)
            for i in range(nd):
                shape = [n * c] + [1] * nd
                shape[1 + i] = out[i]
                flat = flat + (starts[i] + taps[i]).reshape(shape) * strides[i]
            flat = np.broadcast_to(flat, (n * c,) + out).reshape(n * c, -1)
            vals = np.take_along_axis(rows, flat, 1).reshape((n * c,) + out)
            better = (vals > best) | np.isnan(vals)
            best = np.where(better, vals, best)
            index = np.where(better, flat.reshape((n * c,) + out), index)
    idx = wrap(index.reshape((n, c) + out)).to(x.device)
    values = x.flatten(2).gather(2, idx.flatten(2)).reshape(idx.shape)
    if not batched:
        values, idx = values.squeeze(0), idx.squeeze(0)
    return (values, idx) if return_indices else values
