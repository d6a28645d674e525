"""torchvision's native operators, written in ember (NumPy), for ``import torchvision`` under
the ``torch`` alias.

NOTE [ torchvision's native library ]
torchvision ships its operators (``nms``, ``roi_align``...) in a shared library built
against PyTorch's C++ library, which ember cannot load. When torchvision asks
``torch.ops.load_library`` for that library (``torchvision/_C*.so``), ember defines the same
operators in the ``torchvision`` namespace instead (``register()``), with the schemas the C++
library declares, so that torchvision's own Python code then registers their fake kernels,
autograd formulas (which call the ``_*_backward`` operators defined here) and autocast
kernels as it does on PyTorch. Its image codec library is not replaced: ``load_library``
refuses it, and ``torchvision.io`` degrades as it does without its extension (the PIL
paths of ``datasets`` and ``transforms`` are unaffected).

The kernels follow torchvision's CPU kernels' definitions: sample positions, bilinear
weights and the boundary rules below, computed in the input's dtype. Tensors on another
device are computed on the host and returned on their device.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["register", "is_torchvision_library", "SCHEMAS"]

#: the operators of torchvision's native library, as its C++ code declares them
SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, "
    "float rois_scale, int rois_zero_point, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
    "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
    "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
    "SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, "
    "bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
    "_cuda_version() -> int",
)

_library = []  # the Library holding the definitions, once registered


def is_torchvision_library(path) -> bool:
    """Whether ``path`` names torchvision's operator library (``torchvision/_C.so``,
    ``_C_stable.so``, ``_C.pyd``...), which ``register`` replaces.

    Args:
        path (str): the path given to ``torch.ops.load_library``.

    Returns:
        bool.

    Example::

        >>> is_torchvision_library("/site-packages/torchvision/_C_stable.so")
        True
        >>> is_torchvision_library("/site-packages/torchvision/image_stable.so")
        False
    """
    import os

    folder, name = os.path.split(os.fspath(path))
    stem = name.split(".", 1)[0]
    return os.path.basename(folder) == "torchvision" and stem in ("_C", "_C_stable")


def register() -> None:
    """Define torchvision's operators in ``ember.ops.torchvision`` (idempotent); see
    NOTE [ torchvision's native library ].

    Args:
        (none)

    Returns:
        None.

    Example::

        >>> import ember
        >>> register()
        >>> boxes = ember.tensor([[0., 0., 2., 2.], [0., 0., 2., 1.9], [3., 3., 4., 4.]])
        >>> ember.ops.torchvision.nms(boxes, ember.tensor([0.9, 0.8, 0.7]), 0.5)
        tensor([0, 2])
    """
    if _library:
        return
    from .library import Library

    lib = Library("torchvision", "DEF")
    for schema in SCHEMAS:
        lib.define(schema)
    for name, fn in _KERNELS.items():
        lib.impl(name, fn, "CompositeExplicitAutograd")
    _library.append(lib)


# ------------------------------------------------------------------------------------------------
# moving between ember and NumPy


def _np(t):
    return t.detach().cpu().numpy()


def _back(a, like):
    import ember

    return ember.from_numpy(np.ascontiguousarray(a)).to(like.device)


def _check_rois(op, input, rois):
    if rois.dim() != 2 or rois.shape[1] != 5:
        raise RuntimeError(f"{op}: rois must have shape as Tensor[K, 5], got "
                           f"{tuple(rois.shape)}")
    if input.dtype != rois.dtype:
        raise RuntimeError(f"{op}: expected input and rois to have the same dtype, but got "
                           f"{input.dtype} and {rois.dtype}")


# ------------------------------------------------------------------------------------------------
# nms


def _nms(dets, scores, iou_threshold):
    if dets.dim() != 2 or dets.shape[1] != 4:
        raise RuntimeError(f"nms: boxes should be a Tensor[N, 4], got {tuple(dets.shape)}")
    if scores.dim() != 1 or scores.shape[0] != dets.shape[0]:
        raise RuntimeError(f"nms: scores should be a Tensor[N] with N={dets.shape[0]}, got "
                           f"{tuple(scores.shape)}")
    import ember

    b, s = _np(dets), _np(scores)
    if b.shape[0] == 0:
        return ember.empty(0, dtype=ember.int64, device=dets.device)
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-s, kind="stable")
    suppressed = np.zeros(len(order), dtype=bool)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        w = np.maximum(np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]), 0)
        h = np.maximum(np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]), 0)
        inter = w * h
        iou = inter / (areas[i] + areas[rest] - inter)
        # the threshold is a double: compare there, not in the boxes' dtype
        suppressed[rest[iou.astype(np.float64) > iou_threshold]] = True
    return _back(np.asarray(keep, dtype=np.int64), dets)


# ------------------------------------------------------------------------------------------------
# roi_align and ps_roi_align: averages of bilinear samples on a grid in each bin


def _sample_matrix(start, bin_size, pooled, grid, size, dtype):
    """The bilinear weights of the ``pooled * grid`` sample positions along one axis, as a
    ``(pooled * grid, size)`` matrix: a sample outside ``[-1, size]`` weighs nothing, one in
    ``[-1, 0]`` is clamped to 0, and one past the last pixel takes that pixel."""
    p = np.arange(pooled, dtype=dtype)[:, None]
    g = (np.arange(grid, dtype=dtype) + dtype(0.5))[None, :]
    pos = (start + p * bin_size + g * bin_size / dtype(grid)).reshape(-1)
    inside = (pos >= -1.0) & (pos <= size)
    pos = np.where(pos <= 0, dtype(0), pos)
    low = np.floor(pos).astype(np.int64)
    at_end = low >= size - 1
    low = np.where(at_end, size - 1, low)
    high = np.where(at_end, size - 1, low + 1)
    pos = np.where(at_end, low.astype(dtype), pos)
    frac = (pos - low).astype(dtype)
    m = np.zeros((pos.shape[0], size), dtype=dtype)
    rows = np.arange(pos.shape[0])
    w_low = np.where(inside, dtype(1) - frac, 0).astype(dtype)
    w_high = np.where(inside, frac, 0).astype(dtype)
    np.add.at(m, (rows, np.clip(low, 0, size - 1)), w_low)
    np.add.at(m, (rows, np.clip(high, 0, size - 1)), w_high)
    return m


def _align_geometry(roi, scale, ph, pw, sampling_ratio, aligned, min_one, dtype):
    """Per ROI: ``(start_y, start_x, bin_h, bin_w, grid_h, grid_w)`` as torchvision's
    roi_align (``min_one``: not ``aligned``, sizes at least 1) and ps_roi_align do."""
    offset = dtype(0.5) if aligned else dtype(0)
    x1, y1, x2, y2 = (roi[1:] * dtype(scale) - offset).astype(dtype)
    h, w = y2 - y1, x2 - x1
    if min_one:
        h, w = max(h, dtype(1)), max(w, dtype(1))
    bin_h, bin_w = dtype(h / dtype(ph)), dtype(w / dtype(pw))
    grid_h = sampling_ratio if sampling_ratio > 0 else int(math.ceil(h / dtype(ph)))
    grid_w = sampling_ratio if sampling_ratio > 0 else int(math.ceil(w / dtype(pw)))
    return y1, x1, bin_h, bin_w, max(grid_h, 0), max(grid_w, 0)


def _bin_means(x, roi, scale, ph, pw, sampling_ratio, aligned, min_one):
    """``(C, ph, pw)`` means of the samples of one ROI over the image ``x`` ``(C, H, W)``,
    and the sample matrices (for the backward pass)."""
    dtype = x.dtype.type
    y1, x1, bin_h, bin_w, gh, gw = _align_geometry(roi, scale, ph, pw, sampling_ratio,
                                                   aligned, min_one, dtype)
    c, height, width = x.shape
    if gh == 0 or gw == 0:
        return np.zeros((c, ph, pw), dtype=x.dtype), None
    ay = _sample_matrix(y1, bin_h, ph, gh, height, dtype)
    ax = _sample_matrix(x1, bin_w, pw, gw, width, dtype)
    samples = np.einsum("yh,chw,xw->cyx", ay, x, ax, optimize=True)
    count = dtype(gh * gw)
    means = samples.reshape(c, ph, gh, pw, gw).sum(axis=(2, 4)) / count
    return means.astype(x.dtype), (ay, ax, gh, gw, count)


def _scatter_bin_means(grad, mats, ph, pw):
    """The transpose of ``_bin_means``: ``grad`` ``(C, ph, pw)`` spread over the image."""
    ay, ax, gh, gw, count = mats
    c = grad.shape[0]
    g = np.broadcast_to((grad / count)[:, :, None, :, None], (c, ph, gh, pw, gw))
    return np.einsum("yh,cyx,xw->chw", ay, g.reshape(c, ph * gh, pw * gw), ax, optimize=True)


def _roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
               aligned):
    _check_rois("roi_align", input, rois)
    x, r = _np(input), _np(rois)
    out = np.zeros((r.shape[0], x.shape[1], pooled_height, pooled_width), dtype=x.dtype)
    for k, roi in enumerate(r):
        out[k], _ = _bin_means(x[int(roi[0])], roi, spatial_scale, pooled_height,
                               pooled_width, sampling_ratio, aligned, not aligned)
    return _back(out, input)


def _roi_align_backward(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size,
                        channels, height, width, sampling_ratio, aligned):
    g, r = _np(grad), _np(rois)
    out = np.zeros((batch_size, channels, height, width), dtype=g.dtype)
    probe = np.zeros((0, height, width), dtype=g.dtype)
    for k, roi in enumerate(r):
        _, mats = _bin_means(probe, roi, spatial_scale, pooled_height, pooled_width,
                             sampling_ratio, aligned, not aligned)
        if mats is not None:
            out[int(roi[0])] += _scatter_bin_means(g[k], mats, pooled_height, pooled_width)
    return _back(out, grad)


def _ps_channels(channels, ph, pw):
    """``(c_out, ph, pw)`` -> the input channel that position reads: each bin of each
    output channel has its own input channel."""
    if channels % (ph * pw) != 0:
        raise RuntimeError("input channels must be a multiple of pooling height * pooling "
                           f"width, got {channels} channels for {ph}x{pw} bins")
    return np.arange(channels).reshape(channels // (ph * pw), ph, pw)


def _ps_roi_align(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    _check_rois("ps_roi_align", input, rois)
    x, r = _np(input), _np(rois)
    ph, pw = pooled_height, pooled_width
    mapping = _ps_channels(x.shape[1], ph, pw)
    i, j = np.indices((ph, pw))
    out = np.zeros((r.shape[0],) + mapping.shape, dtype=x.dtype)
    for k, roi in enumerate(r):
        means, _ = _bin_means(x[int(roi[0])], roi, spatial_scale, ph, pw, sampling_ratio,
                              True, False)
        out[k] = means[mapping, i, j]
    chan = np.broadcast_to(mapping, out.shape).astype(np.int32)
    return _back(out, input), _back(chan, input)


def _ps_roi_align_backward(grad, rois, channel_mapping, spatial_scale, pooled_height,
                           pooled_width, sampling_ratio, batch_size, channels, height, width):
    g, r, m = _np(grad), _np(rois), _np(channel_mapping)
    ph, pw = pooled_height, pooled_width
    out = np.zeros((batch_size, channels, height, width), dtype=g.dtype)
    probe = np.zeros((0, height, width), dtype=g.dtype)
    i, j = np.indices((ph, pw))
    for k, roi in enumerate(r):
        _, mats = _bin_means(probe, roi, spatial_scale, ph, pw, sampling_ratio, True, False)
        if mats is None:
            continue
        per_channel = np.zeros((channels, ph, pw), dtype=g.dtype)
        np.add.at(per_channel, (m[k], np.broadcast_to(i, m[k].shape),
                                np.broadcast_to(j, m[k].shape)), g[k])
        out[int(roi[0])] += _scatter_bin_means(per_channel, mats, ph, pw)
    return _back(out, grad)


# ------------------------------------------------------------------------------------------------
# roi_pool and ps_roi_pool: max / mean over integer bins


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _pool_bins(roi, scale, ph, pw, height, width, plus_one, clip_h, clip_w):
    """Per bin ``(h0, h1, w0, w1)`` of one ROI in integer pixels, as torchvision's roi_pool
    (``plus_one``: the ROI includes its end pixel) and ps_roi_pool compute them."""
    dtype = roi.dtype.type
    x1, y1, x2, y2 = (int(v) for v in _round_half_away(roi[1:] * dtype(scale)))
    extra = 1 if plus_one else 0
    roi_h, roi_w = max(y2 - y1 + extra, 1), max(x2 - x1 + extra, 1)
    bin_h, bin_w = dtype(roi_h) / dtype(ph), dtype(roi_w) / dtype(pw)
    bins = []
    for a in range(ph):
        h0 = min(max(int(math.floor(dtype(a) * bin_h)) + y1, 0), clip_h)
        h1 = min(max(int(math.ceil(dtype(a + 1) * bin_h)) + y1, 0), clip_h)
        row = []
        for b in range(pw):
            w0 = min(max(int(math.floor(dtype(b) * bin_w)) + x1, 0), clip_w)
            w1 = min(max(int(math.ceil(dtype(b + 1) * bin_w)) + x1, 0), clip_w)
            row.append((h0, h1, w0, w1))
        bins.append(row)
    return bins


def _roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_rois("roi_pool", input, rois)
    x, r = _np(input), _np(rois)
    _, c, height, width = x.shape
    out = np.zeros((r.shape[0], c, pooled_height, pooled_width), dtype=x.dtype)
    arg = np.full(out.shape, -1, dtype=np.int32)
    for k, roi in enumerate(r):
        img = x[int(roi[0])]
        bins = _pool_bins(roi, spatial_scale, pooled_height, pooled_width, height, width,
                          True, height, width)
        for a, row in enumerate(bins):
            for b, (h0, h1, w0, w1) in enumerate(row):
                if h1 <= h0 or w1 <= w0:
                    continue  # an empty bin: 0, no argmax
                patch = img[:, h0:h1, w0:w1].reshape(c, -1)
                best = patch.argmax(axis=1)  # the first maximum, as the kernel's strict >
                out[k, :, a, b] = patch[np.arange(c), best]
                arg[k, :, a, b] = (h0 + best // (w1 - w0)) * width + w0 + best % (w1 - w0)
    return _back(out, input), _back(arg, input)


def _roi_pool_backward(grad, rois, argmax, spatial_scale, pooled_height, pooled_width,
                       batch_size, channels, height, width):
    g, r, arg = _np(grad), _np(rois), _np(argmax).astype(np.int64)
    out = np.zeros((batch_size, channels, height * width), dtype=g.dtype)
    for k, roi in enumerate(r):
        flat_arg, flat_g = arg[k].reshape(channels, -1), g[k].reshape(channels, -1)
        cc, pos = np.nonzero(flat_arg >= 0)
        np.add.at(out[int(roi[0])], (cc, flat_arg[cc, pos]), flat_g[cc, pos])
    return _back(out.reshape(batch_size, channels, height, width), grad)


def _ps_roi_pool(input, rois, spatial_scale, pooled_height, pooled_width):
    _check_rois("ps_roi_pool", input, rois)
    x, r = _np(input), _np(rois)
    _, c, height, width = x.shape
    mapping = _ps_channels(c, pooled_height, pooled_width)
    out = np.zeros((r.shape[0],) + mapping.shape, dtype=x.dtype)
    for k, roi in enumerate(r):
        img = x[int(roi[0])]
        # the forward kernel clips bins to the last pixel (its backward to the edge)
        bins = _pool_bins(roi, spatial_scale, pooled_height, pooled_width, height, width,
                          False, height - 1, width - 1)
        for a, row in enumerate(bins):
            for b, (h0, h1, w0, w1) in enumerate(row):
                if h1 <= h0 or w1 <= w0:
                    continue
                chans = mapping[:, a, b]
                area = x.dtype.type((h1 - h0) * (w1 - w0))
                out[k, :, a, b] = img[chans, h0:h1, w0:w1].sum(axis=(1, 2)) / area
    chan = np.broadcast_to(mapping, out.shape).astype(np.int32)
    return _back(out, input), _back(chan, input)


def _ps_roi_pool_backward(grad, rois, channel_mapping, spatial_scale, pooled_height,
                          pooled_width, batch_size, channels, height, width):
    g, r, m = _np(grad), _np(rois), _np(channel_mapping)
    out = np.zeros((batch_size, channels, height, width), dtype=g.dtype)
    for k, roi in enumerate(r):
        img = out[int(roi[0])]
        bins = _pool_bins(roi, spatial_scale, pooled_height, pooled_width, height, width,
                          False, height, width)
        for a, row in enumerate(bins):
            for b, (h0, h1, w0, w1) in enumerate(row):
                if h1 <= h0 or w1 <= w0:
                    continue
                area = g.dtype.type((h1 - h0) * (w1 - w0))
                for co in range(m.shape[1]):
                    img[m[k, co, a, b], h0:h1, w0:w1] += g[k, co, a, b] / area
    return _back(out, grad)


# ------------------------------------------------------------------------------------------------
# deform_conv2d: a convolution whose taps read the input at offset positions, bilinearly


def _deform_taps(x, offset, kh, kw, stride, pad, dil, offset_groups):
    """Sample positions and corner weights of every tap: returns ``ys, xs`` of shape
    ``(B, G, kh*kw, L)`` (``L`` output positions) from the offsets."""
    b, _, ho, wo = offset.shape
    off = offset.reshape(b, offset_groups, kh * kw, 2, ho * wo)
    i, j = np.divmod(np.arange(kh * kw), kw)
    oy, ox = np.divmod(np.arange(ho * wo), wo)
    base_y = (oy[None, :] * stride[0] - pad[0] + i[:, None] * dil[0]).astype(x.dtype)
    base_x = (ox[None, :] * stride[1] - pad[1] + j[:, None] * dil[1]).astype(x.dtype)
    return base_y + off[:, :, :, 0], base_x + off[:, :, :, 1]


def _corners(ys, xs, height, width):
    """The four corners around each position with their bilinear weights; a corner outside
    the image, or any corner of a position at or beyond ``(-1, size)``, weighs nothing."""
    inside = (ys > -1) & (ys < height) & (xs > -1) & (xs < width)
    y0, x0 = np.floor(ys), np.floor(xs)
    ly, lx = ys - y0, xs - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    out = []
    for dy, wy in ((0, 1 - ly), (1, ly)):
        for dx, wx in ((0, 1 - lx), (1, lx)):
            yy, xx = y0 + dy, x0 + dx
            ok = inside & (yy >= 0) & (yy < height) & (xx >= 0) & (xx < width)
            out.append((np.clip(yy, 0, height - 1), np.clip(xx, 0, width - 1),
                        np.where(ok, wy * wx, 0).astype(ys.dtype), ok))
    return out


def _deform_columns(x, offset, mask, kh, kw, stride, pad, dil, offset_groups, use_mask):
    """The im2col matrix ``(B, C, kh*kw, L)`` of deformed samples (mask applied), the
    samples without the mask, and the corners (for the backward pass)."""
    bsz, c, height, width = x.shape
    ys, xs = _deform_taps(x, offset, kh, kw, stride, pad, dil, offset_groups)
    corners = _corners(ys, xs, height, width)
    cg = c // offset_groups
    xg = x.reshape(bsz, offset_groups, cg, height * width)
    bi = np.arange(bsz)[:, None, None, None, None]
    gi = np.arange(offset_groups)[None, :, None, None, None]
    ci = np.arange(cg)[None, None, :, None, None]
    raw = 0
    for yy, xx, w, _ in corners:
        flat = (yy * width + xx)[:, :, None]
        raw = raw + w[:, :, None] * xg[bi, gi, ci, flat]
    raw = raw.astype(x.dtype)  # (B, G, cg, K, L)
    cols = raw
    if use_mask:
        m = mask.reshape(bsz, offset_groups, 1, kh * kw, -1)
        cols = raw * m
    k, length = raw.shape[3], raw.shape[4]
    return cols.reshape(bsz, c, k, length), raw, (ys, xs, corners)


def _deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                   dilation_h, dilation_w, groups, offset_groups, use_mask):
    x, w, off = _np(input), _np(weight), _np(offset)
    msk, bs = _np(mask), _np(bias)
    bsz, c, _, _ = x.shape
    cout, cpg, kh, kw = w.shape
    ho, wo = off.shape[-2:]
    if c != cpg * groups or off.shape[1] != 2 * offset_groups * kh * kw:
        raise RuntimeError(
            f"deform_conv2d: expected input channels {cpg * groups} (weight {tuple(w.shape)} "
            f"with groups={groups}) and offset channels {2 * offset_groups * kh * kw}, got "
            f"input {tuple(x.shape)} and offset {tuple(off.shape)}")
    cols, _, _ = _deform_columns(x, off, msk, kh, kw, (stride_h, stride_w), (pad_h, pad_w),
                                 (dilation_h, dilation_w), offset_groups, use_mask)
    cols = cols.reshape(bsz, groups, cpg * kh * kw, ho * wo)
    wg = w.reshape(groups, cout // groups, cpg * kh * kw)
    out = np.einsum("gok,bgkl->bgol", wg, cols, optimize=True).reshape(bsz, cout, ho, wo)
    out = out + bs.reshape(1, -1, 1, 1)
    return _back(out.astype(x.dtype), input)


def _deform_conv2d_backward(grad, input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                            pad_w, dilation_h, dilation_w, groups, offset_groups, use_mask):
    g, x, w, off = _np(grad), _np(input), _np(weight), _np(offset)
    msk = _np(mask)
    bsz, c, height, width = x.shape
    cout, cpg, kh, kw = w.shape
    ho, wo = off.shape[-2:]
    k, length, og = kh * kw, ho * wo, offset_groups
    cols, raw, (ys, xs, corners) = _deform_columns(
        x, off, msk, kh, kw, (stride_h, stride_w), (pad_h, pad_w), (dilation_h, dilation_w),
        og, use_mask)
    gg = g.reshape(bsz, groups, cout // groups, length)
    wg = w.reshape(groups, cout // groups, cpg * k)
    grad_weight = np.einsum("bgol,bgkl->gok", gg,
                            cols.reshape(bsz, groups, cpg * k, length), optimize=True)
    grad_bias = g.sum(axis=(0, 2, 3))
    # gradient of the columns, then through the mask and the bilinear samples
    gcols = np.einsum("gok,bgol->bgkl", wg, gg, optimize=True)
    gcols = gcols.reshape(bsz, og, c // og, k, length)
    m = msk.reshape(bsz, og, 1, k, length) if use_mask else np.ones((1,), dtype=x.dtype)
    grad_mask = (gcols * raw).sum(axis=2) if use_mask else np.zeros_like(msk)
    gsamp = gcols * m  # (B, G, cg, K, L)
    grad_input = np.zeros((bsz, og, c // og, height * width), dtype=x.dtype)
    bi = np.arange(bsz)[:, None, None, None, None]
    gi = np.arange(og)[None, :, None, None, None]
    ci = np.arange(c // og)[None, None, :, None, None]
    xg = x.reshape(bsz, og, c // og, height * width)
    vals = []
    for yy, xx, wt, ok in corners:
        flat = np.broadcast_to((yy * width + xx)[:, :, None], gsamp.shape)
        np.add.at(grad_input, (bi, gi, ci, flat), gsamp * wt[:, :, None])
        vals.append(np.where(ok[:, :, None], xg[bi, gi, ci, flat], 0))
    # the sample's derivative along y and x: differences of the corner values, weighted
    # along the other axis; corners outside the image read 0
    v00, v01, v10, v11 = vals
    ly = (ys - np.floor(ys))[:, :, None]
    lx = (xs - np.floor(xs))[:, :, None]
    d_y = (1 - lx) * (v10 - v00) + lx * (v11 - v01)
    d_x = (1 - ly) * (v01 - v00) + ly * (v11 - v10)
    grad_off = np.stack([(gsamp * d_y).sum(axis=2), (gsamp * d_x).sum(axis=2)], axis=3)
    dt = x.dtype
    return (_back(grad_input.reshape(x.shape).astype(dt), input),
            _back(grad_weight.reshape(w.shape).astype(dt), weight),
            _back(grad_off.reshape(off.shape).astype(dt), offset),
            _back(grad_mask.reshape(msk.shape).astype(dt), mask),
            _back(grad_bias.astype(dt), bias))


# ------------------------------------------------------------------------------------------------
# the quantized forms and the build query


def _qnms(dets, scores, iou_threshold):
    return _nms(dets.dequantize() if dets.is_quantized else dets,
                scores.dequantize() if scores.is_quantized else scores, iou_threshold)


def _qroi_align(*args):
    raise NotImplementedError("torchvision::qroi_align: ember has no quantized tensors")


def _cuda_version():
    return -1  # no CUDA build: torchvision skips its CUDA version check


_KERNELS = {
    "nms": _nms, "qnms": _qnms, "roi_align": _roi_align,
    "_roi_align_backward": _roi_align_backward, "qroi_align": _qroi_align,
    "roi_pool": _roi_pool, "_roi_pool_backward": _roi_pool_backward,
    "ps_roi_align": _ps_roi_align, "_ps_roi_align_backward": _ps_roi_align_backward,
    "ps_roi_pool": _ps_roi_pool, "_ps_roi_pool_backward": _ps_roi_pool_backward,
    "deform_conv2d": _deform_conv2d, "_deform_conv2d_backward": _deform_conv2d_backward,
    "_cuda_version": _cuda_version,
}
