"""Resampling: interpolate, grid_sample, affine_grid, fold/unfold, pixel/channel shuffles.

Interpolation is separable: each spatial dim is resampled in turn by gathering source rows
(``index_select``) and blending them with weights, so gradients come from the gather's
own derivative. ``unfold``/``fold`` are an adjoint pair of ops, like convolution's.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dispatch
from .._core import dtype as _dt
from .._core.tensor import Tensor
from . import _grid_sample_2d, _node_names
from ._memory_format import keep_layout
from ._registry import Op, public, recorded_as
from .indexing import linear_jvp  # forward-mode rules
from .creation import ones
from .join import stack
from .nn_conv import _tuple, sliding_windows
from .nn_checks import kernel_dtype, nonempty_input, same_dtype
from .ranges import linspace, meshgrid

# ------------------------------------------------------------------------------------------------
# interpolate


def _source_coords(out_size, in_size, scale, align_corners, mode, planar=False):
    """Source coordinate (float64 NumPy) of each output position along one dim; ``planar``:
    the dim is one of a 2-d (4-D input) resampling's."""
    dst = np.arange(out_size, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        # NOTE [ Nearest source cells ]: torch's nearest kernels compute the cell in float32
        # (the scale, 1 / scale_factor or in / out, rounded to float32, times the output
        # index, floored), and its 2-d "nearest" kernel (only that one) takes a kept size
        # cell by cell and a doubled size as index // 2 whatever scale_factor says (3 rows
        # at scale_factor=2.3 make 6, read as 0 0 1 1 2 2, where floor(i / 2.3) reads
        # 0 0 0 1 1 2, as the 1-d and 3-d kernels do)
        if planar and mode == "nearest" and out_size == in_size:
            return dst
        if planar and mode == "nearest" and out_size == 2 * in_size:
            return np.floor(dst / 2)
        s = np.float32(in_size) / np.float32(out_size) if scale is None else \
            np.float32(1.0 / scale)
        d32 = dst.astype(np.float32)
        src = np.floor((d32 + np.float32(0.5)) * s) if mode == "nearest-exact" else \
            np.floor(d32 * s)
        return np.minimum(src.astype(np.float64), in_size - 1)
    if align_corners:
        return dst * ((in_size - 1) / (out_size - 1)) if out_size > 1 else dst * 0
    s = in_size / out_size if scale is None else 1.0 / scale
    src = (dst + 0.5) * s - 0.5
    return src if mode == "bicubic" else np.maximum(src, 0)


def _index(values, like):
    from .from_data import from_numpy

    t = from_numpy(np.ascontiguousarray(values.astype(np.int64)))
    return t if type(like._data) is np.ndarray else t.to(like.device)


def _weights(values, like, dim, ndim):
    from .from_data import from_numpy

    shape = [1] * ndim
    shape[dim] = -1
    t = from_numpy(np.ascontiguousarray(values.reshape(shape))).to(like.dtype)
    return t if type(like._data) is np.ndarray else t.to(like.device)


def _cubic(t, a=-0.75):
    """The four cubic-convolution weights for fractional offsets ``t``."""
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _resample_dim(x, dim, out_size, scale, mode, align_corners, half=None):
    """``x`` resampled along ``dim``; ``half``: the float16/bfloat16 type a linear or
    trilinear call's fractions are rounded to (torch's 1-d and 3-d kernels hold them in the
    input's type, its bilinear and bicubic ones in float32)."""
    in_size = x.shape[dim]
    src = _source_coords(out_size, in_size, scale, align_corners, mode, x.dim() == 4)
    if mode in ("nearest", "nearest-exact"):
        return x.index_select(dim, _index(src, x))
    if mode == "bicubic":
        base = np.floor(src)
        t = src - base
        out = None
        for k, w in enumerate(_cubic(t)):
            idx = np.clip(base - 1 + k, 0, in_size - 1)
            term = x.index_select(dim, _index(idx, x)) * _weights(w, x, dim, x.dim())
            out = term if out is None else out + term
        return out
    if in_size == out_size:
        # torch's linear kernels read a dim whose size is kept cell by cell, whatever the
        # scale: both taps at the same cell, weights 1 and 0 (scale_factor=1.2 on 3 cells
        # keeps them, a NaN stays in its cell, and an inf becomes inf + inf * 0, NaN)
        return x + x * 0.0
    i0 = np.floor(src)
    lam = src - i0
    if half is not None:
        lam = lam.astype(half).astype(np.float64)
        rest = (1 - lam).astype(half).astype(np.float64)
    else:
        rest = 1 - lam
    i1 = np.minimum(i0 + 1, in_size - 1)
    i0 = np.minimum(i0, in_size - 1)
    lo = x.index_select(dim, _index(i0, x))
    hi = x.index_select(dim, _index(i1, x))
    return lo * _weights(rest, x, dim, x.dim()) + hi * _weights(lam, x, dim, x.dim())


# NOTE [ Separable taps with renormalised weights ]
# torch resamples uint8 images (bilinear and bicubic) and every antialiased call with a
# separable tap kernel rather than the float kernels' gather of clamped neighbours: output
# ``i`` of a dim reads the input cells ``first[i] .. first[i] + count[i] - 1`` and sums them
# with per-output weights, the last dim first; a dim whose size does not change is skipped.
# - Antialiased (Pillow's scheme): the cells within ``support`` of the centre
#   ``scale * (i + 0.5)`` (align_corners changes only ``scale``), each weighed by the filter
#   (a triangle, a cubic with a = -0.5, or Lanczos-3: sinc(x) * sinc(x / 3) on [-3, 3))
#   stretched by ``scale`` when the dim shrinks,
#   divided by the weights' sum, so taps past an edge drop out. For float32 input the scale,
#   centres, weights and sums are all float32, which decides ``first``/``count`` at
#   boundaries exactly as torch does.
# - uint8 without antialias: the float kernels' source index and fraction (a = -0.75 for
#   bicubic), but the taps that fall off an edge add their weight to the edge cell instead
#   of reading it again.
# For uint8 the float64 weights become int16 fixed point (as many fraction bits as keep the
# largest weight, partial sums included, under 2**15), each pass sums in integers, rounds by
# adding half a unit before the shift, and clamps to [0, 255].


def _resample_scale(in_size, out_size, scale, align_corners, ft):
    """Input cells per output cell along one dim, in float type ``ft`` (torch's
    area_pixel_compute_scale)."""
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    if scale is not None and scale > 0:
        return ft(1.0 / scale)
    return ft(in_size) / ft(out_size)


def _sinc(x):
    """sin(pi x) / (pi x), 1 at 0, in ``x``'s float type."""
    ft = x.dtype.type
    px = x * ft(math.pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x == 0, ft(1), np.sin(px) / px).astype(ft)


#: antialiased filters' reach in input cells (before stretching): half their tap count
_AA_SUPPORT = {"bilinear": 1, "bicubic": 2, "lanczos": 3}


def _tap_filter(x, mode, a):
    """The interpolation filter at offsets ``x`` (NumPy, evaluated in ``x``'s float type)."""
    ft = x.dtype.type
    if mode == "lanczos":  # Pillow's window is half open: -3 is in, 3 is out
        inside = (x >= -3) & (x < 3)
        return np.where(inside, _sinc(x) * _sinc(x / ft(3)), ft(0)).astype(ft)
    x = np.abs(x)
    if mode != "bicubic":
        return np.where(x < 1, (1.0 - x.astype(np.float64)).astype(ft), ft(0))
    a = ft(a)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, ft(0))).astype(ft)


def _aa_taps(in_size, out_size, scale, align_corners, mode, ft=np.float64):
    """Antialiased taps of one dim: (first cell, cell count, weights (out_size, taps) in
    ``ft``, largest weight)."""
    interp = 2 * _AA_SUPPORT[mode]
    s = _resample_scale(in_size, out_size, scale, align_corners, ft)
    stretch = s >= 1.0
    support = ft(interp * 0.5 * float(s)) if stretch else ft(interp * 0.5)
    taps = math.ceil(support) * 2 + 1
    inv = ft(1.0 / float(s)) if stretch else ft(1.0)
    center = (float(s) * (np.arange(out_size) + 0.5)).astype(ft)
    first = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    count = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64),
                       in_size) - first
    count = np.clip(count, 0, taps)
    weights = np.zeros((out_size, taps), dtype=ft)
    total = np.zeros(out_size, dtype=ft)
    for j in range(taps):
        off = ((first + j).astype(ft) - center).astype(np.float64) + 0.5
        w = np.where(j < count, _tap_filter((off * float(inv)).astype(ft), mode, -0.5), ft(0))
        weights[:, j] = w
        total = (total + w).astype(ft)
    nonzero = total != 0
    weights[nonzero] = (weights[nonzero] / total[nonzero, None]).astype(ft)
    return first, count, weights, float(weights.max()) if weights.size else 0.0


def _edge_folded_taps(in_size, out_size, scale, align_corners, mode):
    """uint8 taps of one dim without antialias: (first cell, cell count, float64 weights
    (out_size, taps), largest weight or partial sum)."""
    interp = 4 if mode == "bicubic" else 2
    s = float(_resample_scale(in_size, out_size, scale, align_corners, np.float64))
    half = interp // 2
    first = np.zeros(out_size, dtype=np.int64)
    count = np.zeros(out_size, dtype=np.int64)
    weights = np.zeros((out_size, interp))
    top = 0.0
    for i in range(out_size):
        real = s * i if align_corners else s * (i + 0.5) - 0.5
        if mode != "bicubic":
            real = max(real, 0.0)
        index = min(int(math.floor(np.float32(real))), in_size - 1)
        lam = min(max(real - index, 0.0), 1.0)
        lo = index - half + 1
        first[i] = max(lo, 0)
        count[i] = min(max(min(index + half + 1, in_size) - first[i], 0), interp)
        slot = 0
        for j in range(interp):
            w = float(_tap_filter(np.array([j + 1 - half - lam]), mode, -0.75)[0])
            if lo + j <= 0:
                slot = 0
            elif lo + j >= in_size - 1:
                slot = count[i] - 1
            weights[i, slot] += w
            top = max(top, weights[i, slot])
            slot += 1
    return first, count, weights, top


def _resample_uint8(data, out, scales, mode, align_corners, antialias):
    """uint8 ``data`` (N, C, H, W) resampled to ``out`` as torch's fixed-point kernels do
    (NOTE [ Separable taps with renormalised weights ])."""
    for axis in (3, 2):
        in_size, size = data.shape[axis], out[axis - 2]
        if in_size == size:
            continue
        taps = _aa_taps if antialias else _edge_folded_taps
        first, _, w, top = taps(in_size, size, scales[axis - 2], align_corners, mode)
        bits = 0
        while bits < 22 and int(0.5 + top * (1 << (bits + 1))) < (1 << 15):
            bits += 1
        scaled = w * (1 << bits)
        iw = np.trunc(np.where(scaled < 0, scaled - 0.5, scaled + 0.5)).astype(np.int64)
        src = np.moveaxis(data, axis, -1).astype(np.int64)
        acc = np.full(src.shape[:-1] + (size,), 1 << (bits - 1) if bits else 0, np.int64)
        for j in range(w.shape[1]):
            idx = np.minimum(first + j, in_size - 1)
            acc += src[..., idx] * iw[:, j]
        data = np.moveaxis(np.clip(acc >> bits, 0, 255).astype(np.uint8), -1, axis)
    return np.ascontiguousarray(data)


def _antialias_dim(x, dim, out_size, scale, mode, align_corners):
    """Float ``x`` resampled along ``dim`` with antialiased taps, summed tap by tap in
    ``x``'s dtype (NOTE [ Separable taps with renormalised weights ]); gradients come from
    the gathers."""
    from .from_data import from_numpy

    in_size = x.shape[dim]
    ft = np.float32 if x.dtype.name == "float32" else np.float64
    first, count, w, _ = _aa_taps(in_size, out_size, scale, align_corners, mode, ft)
    out = None
    for j in range(w.shape[1]):
        live = j < count
        if j and not live.any():
            continue
        term = x.index_select(dim, _index(np.minimum(first + j, in_size - 1), x)) \
            * _weights(w[:, j], x, dim, x.dim())
        if j and not live.all():
            # a row with fewer cells stops there: -0.0 adds nothing (not even a sign)
            shape = [1] * x.dim()
            shape[dim] = -1
            mask = from_numpy(np.ascontiguousarray(~live.reshape(shape)))
            term = term.masked_fill(mask if type(x._data) is np.ndarray else
                                    mask.to(x.device), -0.0)
        out = term if out is None else out + term
    return out


_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}

#: interpolate's modes, as PyTorch's errors list them
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area",
          "nearest-exact")

_AA_ONLY = ("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input")


#: interpolate's mode -> the kernel (nn_checks.KERNELS) whose dtypes it has
_MODE_KERNEL = {"nearest": "upsample_nearest", "nearest-exact": "upsample_nearest",
                "linear": "upsample_linear", "trilinear": "upsample_linear",
                "bilinear": "upsample_bilinear2d", "bicubic": "upsample_bicubic2d"}


def _check_resample(input, spatial, out, mode, antialias=False):
    """torch's checks of the resampling kernels: non-empty sizes, then the kernel's dtypes."""
    nd = len(spatial)
    if any(n == 0 for n in spatial) or any(n <= 0 for n in out):
        names = ("D", "H", "W")[3 - nd:]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input (" +
            ", ".join(f"{a}: {b}" for a, b in zip(names, spatial)) + ") output (" +
            ", ".join(f"{a}: {b}" for a, b in zip(names, out)) + ")")
    if input.shape[1] == 0:
        raise RuntimeError(f"Non-empty {nd + 2}D data tensor expected but got a tensor with "
                           f"sizes {list(input.shape)}")
    kernel_dtype("upsample_aa" if antialias else _MODE_KERNEL[mode], input)


#: interpolate's mode -> PyTorch's op (``{}``: the number of spatial dims), and whether it
#: takes ``align_corners``
_MODE_OPS = {"nearest": ("aten::upsample_nearest{}d", False),
             "nearest-exact": ("aten::_upsample_nearest_exact{}d", False),
             "linear": ("aten::upsample_linear{}d", True),
             "bilinear": ("aten::upsample_bilinear{}d", True),
             "bicubic": ("aten::upsample_bicubic{}d", True),
             "trilinear": ("aten::upsample_trilinear{}d", True),
             "lanczos": ("aten::_upsample_lanczos{}d_aa", True)}


def _interpolate_event(bound):
    """The op PyTorch's ``interpolate`` calls, as the profiler's event (NOTE [ Composite
    op events ] in ember/profiler/_recorder.py); None for ``area``, which is
    ``adaptive_avg_pool`` and recorded as that op."""
    x, mode = bound["input"], bound["mode"]
    op = _MODE_OPS.get(mode)
    if op is None or not isinstance(x, Tensor) or not 1 <= x.dim() - 2 <= 3:
        return None
    return op[0].format(x.dim() - 2)


def _interpolate_inputs(bound):
    # PyTorch's op: (input, output_size, [align_corners,] scale_factors)
    return ("input", None, None, None) if _MODE_OPS.get(bound["mode"], ("", False))[1] else \
        ("input", None, None)


@recorded_as(_interpolate_event, _interpolate_inputs)
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (all dims after the first two) of ``input``."""
    from .nn_pool import adaptive_avg_pool

    nd = input.dim() - 2
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size
                         is not None else "either size or scale_factor should be defined")
    spatial = tuple(input.shape[2:])
    unsupported = NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the "
        f"modes: {' | '.join(_MODES)} (got {mode})")
    given = size if size is not None else scale_factor
    if isinstance(given, (tuple, list)) and len(given) != nd:
        what = ("output", "output size of", "output size", "o") if size is not None else \
            ("scale_factor", "scale_factor of shape", "scale_factor", "s")
        raise ValueError(
            f"Input and {what[0]} must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {list(spatial)} and {what[1]} {given}. Please "
            f"provide input tensor in (N, C, d1, d2, ...,dK) format and {what[2]} in "
            f"({what[3]}1, {what[3]}2, ...,{what[3]}K) format.")
    if nd < 1:
        if antialias:
            raise ValueError(_AA_ONLY)
        raise unsupported
    if size is not None:
        out = _tuple(size, nd, "size", "interpolate")
        scales = [None] * nd
    else:
        sf = scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
        out = tuple(int(math.floor(spatial[i] * sf[i])) for i in range(nd))
        scales = [None] * nd if recompute_scale_factor else [float(s) for s in sf]
    if antialias and (mode not in _AA_SUPPORT or nd != 2):
        raise ValueError(_AA_ONLY)
    if mode not in _MODES or mode in ("bicubic", "lanczos") and nd != 2:
        raise unsupported  # torch names no other dims for these two
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if mode in _MODE_DIMS and _MODE_DIMS[mode] != nd:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    if mode == "area":
        return adaptive_avg_pool(nd, input, out)
    if input.is_quantized and (mode == "bilinear" or nd > 1 and mode in ("nearest",
                                                                          "nearest-exact")):
        from ..ao import _qops  # what PyTorch's quantized kernels cover

        if mode == "bilinear":
            return _qops.bilinear(input, out, scales, align_corners)
        return _qops.on_centered_ints(interpolate, input, size, scale_factor, mode, None,
                                      recompute_scale_factor, antialias)
    _check_resample(input, spatial, out, mode, antialias)
    if input.dtype.name == "uint8" and mode in _AA_SUPPORT:
        from .from_data import from_numpy

        host = type(input._data) is np.ndarray
        y = from_numpy(_resample_uint8(input._data if host else input.cpu()._data, out,
                                       scales, mode, align_corners, antialias))
        return y if host else y.to(input.device)
    if antialias:
        if out == spatial:
            return input.clone()
        x = input
        for i in range(nd)[::-1]:
            if out[i] != spatial[i]:
                x = _antialias_dim(x, 2 + i, out[i], scales[i], mode, align_corners)
        return _upsample_node(keep_layout(x, input), input, mode, out, scales,  # NOTE [ Result
                              align_corners, True)                              # layout ]
    # float16/bfloat16 resampled in float32 and rounded once, as torch's kernels do
    x = input.float() if input.dtype in (_dt.float16, _dt.bfloat16) else input
    # the last dim first, as PyTorch's kernels nest their taps (which sums meet an inf first
    # decides inf against NaN)
    half = input._data.dtype if x is not input and mode in ("linear", "trilinear") else None
    for i in range(nd)[::-1]:
        # a kept size reads cell by cell, unless a scale_factor other than 1 moves the cells
        # (all but the 2-d "nearest" kernel's: NOTE [ Nearest source cells ])
        if out[i] != spatial[i] or mode not in ("nearest", "nearest-exact") or (
                (nd != 2 or mode == "nearest-exact") and scales[i] is not None and
                scales[i] != 1.0):
            x = _resample_dim(x, 2 + i, out[i], scales[i], mode, align_corners, half)
    x = x.to(input.dtype)
    # a new tensor even when nothing moves, in the input's layout (NOTE [ Result layout ])
    return _upsample_node(keep_layout(input.clone() if x is input else x, input), input, mode,
                          out, scales, align_corners, False)


def _upsample_node(y, input, mode, out, scales, align_corners, antialias):
    """``y`` under the one node torch's upsampling op records (NOTE [ One node for a
    composite ] in ember/autograd/_composite_node.py), with its saved values."""
    if y._grad_fn is None:
        return y
    nd = len(out)
    kind = _MODE_OPS[mode][0].format(nd).split("::_")[-1].split("::")[-1]
    name = "".join(w[:1].upper() + w[1:] for w in kind.replace(f"{nd}d", f"{nd}D").split("_"))
    saved = {"output_size": tuple(out), "self_sym_sizes": tuple(input.shape)}
    if _MODE_OPS[mode][1]:
        saved["align_corners"] = align_corners
    for axis, s in zip(("scales",) if nd == 1 else ("scales_d", "scales_h", "scales_w")[-nd:],
                       scales):
        saved[axis] = s
    if antialias and not name.endswith("Aa"):
        name += "Aa"
    return _node_names.as_one_node(name + "Backward0", y, (input,), saved)


# ------------------------------------------------------------------------------------------------
# grid_sample / affine_grid


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2



def _clip(coord, size):
    """``coord`` clamped to [0, size - 1], its gradient passed strictly inside only: PyTorch's
    sampler counts a coordinate on the border as clipped."""
    clipped = coord.clamp(0, size - 1)
    if not coord.requires_grad:
        return clipped
    return coord.where((coord > 0) & (coord < size - 1), clipped.detach())


def _reflect(coord, lo, hi):
    """Reflect coordinates into [lo, hi] (PyTorch's reflection padding)."""
    span = hi - lo
    if span <= 0:
        return coord * 0
    c = (coord - lo).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    odd = flips.remainder(2)
    return (extra + lo) * (1 - odd) + (hi - extra) * odd


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, *in) at the normalised coordinates ``grid`` (N, *out, nd)."""
    y = _grid_sample(input, grid, mode, padding_mode, align_corners)
    if y._grad_fn is None:
        return y
    # one node, as torch's (NOTE [ One node for a composite ])
    return _node_names.as_one_node(
        f"GridSampler{input.dim() - 2}DBackward0", y, (input, grid),
        {"input": input, "grid": grid, "align_corners": bool(align_corners),
         "interpolation_mode": GRID_SAMPLE_INTERPOLATION_MODES[mode],
         "padding_mode": GRID_SAMPLE_PADDING_MODES[padding_mode]})


def _grid_sample(input, grid, mode, padding_mode, align_corners):
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    nd = input.dim() - 2
    if nd not in (2, 3) or grid.dim() != input.dim() or grid.shape[-1] != nd:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {nd} in last dimension and the same "
            f"number of dims as input, but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(
            f"grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    empty = [i for i in range(2, input.dim()) if input.shape[i] == 0]
    if empty:
        raise RuntimeError(
            f"grid_sampler(): expected input to have non-empty spatial dimensions, but input "
            f"has sizes {list(input.shape)} with dimension {empty[0]} being empty")
    kernel_dtype("grid_sampler_3d" if nd == 3 else "grid_sampler_2d", input)
    same_dtype(input, grid)
    align_corners = _default_align_corners(align_corners)
    if nd == 2 and input.dtype in (_dt.float32, _dt.float64) and \
            type(input._data) is np.ndarray and type(grid._data) is np.ndarray:
        # PyTorch's vector kernel's arithmetic (NOTE [ Grid sampling as PyTorch's CPU
        # kernel ] in _grid_sample_2d.py)
        return _dispatch.apply(grid_sampler_2d_op, (input, grid),
                               dict(mode=mode, padding_mode=padding_mode,
                                    align_corners=align_corners))
    return _grid_sample_composite(input, grid, mode, padding_mode, align_corners)


def _grid_sample_composite(input, grid, mode, padding_mode, align_corners):
    """``grid_sample`` from ember's ops (arguments checked; 5-d inputs, the half types,
    other backends, and the 2-d op's derivatives of derivatives)."""
    nd = input.dim() - 2
    n, c = input.shape[:2]
    in_sizes = input.shape[2:]  # (H, W) or (D, H, W)
    out_shape = tuple(grid.shape[1:-1])
    # grid's last dim is (x, y[, z]) = (W, H[, D]) order
    coords = []
    for k in range(nd):
        size = in_sizes[nd - 1 - k]
        cd = _unnormalize(grid[..., k], size, align_corners)
        if mode == "bicubic":
            pass  # bicubic applies the padding rule to each tap, below
        elif padding_mode == "border":
            cd = _clip(cd, size)
        elif padding_mode == "reflection":
            if align_corners:
                cd = _reflect(cd, 0, size - 1)
            else:
                cd = _reflect(cd, -0.5, size - 0.5)
            cd = _clip(cd, size)
        if nd == 3 and mode != "bicubic" and padding_mode != "zeros":
            # the 3-d kernel clips with std::min(size - 1, std::max(x, 0)): NaN -> size - 1
            cd = cd.nan_to_num(nan=size - 1)
        coords.append(cd)
    coords = coords[::-1]  # now in (D,) H, W order
    flat = input.reshape(n, c, -1)
    strides = [math.prod(in_sizes[i + 1:]) for i in range(nd)]

    def gather(idx_list):
        """Values at integer positions (clamped), and a validity mask."""
        valid = None
        lin = None
        for i, ix in enumerate(idx_list):
            ok = (ix >= 0) & (ix <= in_sizes[i] - 1)
            valid = ok if valid is None else valid & ok
            # (a NaN coordinate is out of bounds: read any valid cell, masked out above)
            part = ix.nan_to_num(0.0).clamp(0, in_sizes[i] - 1).long() * strides[i]
            lin = part if lin is None else lin + part
        lin = lin.reshape(n, 1, -1).expand(n, c, -1)
        vals = flat.gather(2, lin).reshape((n, c) + out_shape)
        return vals, valid.unsqueeze(1)

    def zero_outside(vals, w, valid, always=False):
        # zeros padding: torch's 3-d kernel skips an outside tap whatever its weight (a NaN
        # coordinate included); its 2-d kernel reads an outside tap as 0 (a masked gather)
        # and still multiplies it by its weight (0 * NaN is NaN; an inf under the clamped
        # index stays out). Both do so for linear taps under every padding (``always``):
        # border and reflection keep the lower corner inside, not the upper one
        if padding_mode != "zeros" and not always:
            return vals if w is None else vals * w
        if nd == 3:
            term = vals if w is None else vals * w
            return term.masked_fill(~valid, 0)
        vals = vals.masked_fill(~valid, 0)
        return vals if w is None else vals * w

    if mode == "nearest":
        idx = [cd.round() for cd in coords]
        vals, valid = gather(idx)
        out = zero_outside(vals, None, valid, nd == 3)
        if grid.requires_grad:
            # the grid's gradient is zero, not absent, as PyTorch's kernel writes it: the
            # sum of no elements is an exact 0 whatever the grid holds, and x - 0 is x
            # (signed zeros included)
            out = out - grid.flatten()[:0].sum().to(out.dtype)
        return out
    if mode == "bicubic":
        y, x = coords
        y0, x0 = y.floor(), x.floor()
        ty, tx = y - y0, x - x0
        wy, wx = _cubic(ty), _cubic(tx)
        out = None
        for a in range(4):
            for b in range(4):
                yy, xx = y0 - 1 + a, x0 - 1 + b
                if padding_mode == "border":
                    yy, xx = yy.clamp(0, in_sizes[0] - 1), xx.clamp(0, in_sizes[1] - 1)
                elif padding_mode == "reflection":
                    lo = 0 if align_corners else -0.5
                    yy = _reflect(yy, lo, in_sizes[0] - 1 - lo).clamp(0, in_sizes[0] - 1)
                    xx = _reflect(xx, lo, in_sizes[1] - 1 - lo).clamp(0, in_sizes[1] - 1)
                vals, valid = gather([yy, xx])
                w = (wy[a] * wx[b]).unsqueeze(1)
                term = zero_outside(vals, w, valid)
                out = term if out is None else out + term
        return out
    lows = [cd.floor() for cd in coords]
    fracs = [cd - lo for cd, lo in zip(coords, lows)]
    out = None
    for corner in itertools.product((0, 1), repeat=nd):
        idx = [lo + k for lo, k in zip(lows, corner)]
        w = None
        if nd == 3:
            # PyTorch's 3-d kernel: distances to the far corner as (lo + 1) - x, the
            # product in x, y, z order
            for cd, lo, k in reversed(list(zip(coords, lows, corner))):
                wk = cd - lo if k else (lo + 1) - cd
                w = wk if w is None else w * wk
        else:
            for f, k in zip(fracs, corner):
                wk = f if k else 1 - f
                w = wk if w is None else w * wk
        vals, valid = gather(idx)
        term = zero_outside(vals, w.unsqueeze(1), valid, True)
        out = term if out is None else out + term
    return out


def _default_align_corners(align_corners):
    # PyTorch warns where the default is taken: it changed (to False) in PyTorch 1.3
    if align_corners is None:
        from .._settings import warn_at_caller

        warn_at_caller("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", UserWarning)
    return bool(align_corners)



def _grid_sampler_2d_kernel(xp, input, grid, *, mode, padding_mode, align_corners):
    return _grid_sample_2d.forward(input, grid, mode, padding_mode, align_corners)


def _grid_sampler_2d_backward_kernel(xp, grad, input, grid, *, mode, padding_mode,
                                     align_corners, input_grad):
    return _grid_sample_2d.backward(grad, input, grid, mode, padding_mode, align_corners,
                                    input_grad)


def _grid_sampler_2d_vjp(g, input, grid, *, mode, padding_mode, align_corners,
                         needs_input_grad):
    if _dispatch.differentiable_formula(input, grid, g):
        # create_graph: the composite's own derivative, replayed from the saved inputs
        # themselves so that the gradients depend on them
        from ..autograd import grad as autograd_grad
        from ..autograd.grad_mode import enable_grad

        with enable_grad():
            y = _grid_sample_composite(input, grid, mode, padding_mode, align_corners)
        wanted = [t for t, need in zip((input, grid), needs_input_grad) if need]
        found = iter(autograd_grad([y], wanted, [g], create_graph=True, allow_unused=True))
        return tuple(next(found) if need else None for need in needs_input_grad)
    gi, gg = _dispatch.apply(grid_sampler_2d_backward_op, (g, input, grid),
                             dict(mode=mode, padding_mode=padding_mode,
                                  align_corners=align_corners,
                                  input_grad=bool(needs_input_grad[0])))
    return (gi if needs_input_grad[0] else None), gg


grid_sampler_2d_op = Op("grid_sampler_2d", _grid_sampler_2d_kernel, vjp=_grid_sampler_2d_vjp)
grid_sampler_2d_op.node_name = "GridSampler2DBackward0"


@grid_sampler_2d_op.defjvp
def _grid_sampler_2d_jvp(x_dots, input, grid, *, out, mode, padding_mode, align_corners):
    # forward mode through the composite, in a dual level of its own
    from ..autograd import _forward

    lvl = _forward.enter(nested_ok=True)
    try:
        duals = []
        for t, d in zip((input, grid), x_dots):
            if d is not None:
                t = t.view_as(t)
                _forward.set_tangent(t, lvl, d)
            duals.append(t)
        y = _grid_sample_composite(*duals, mode, padding_mode, align_corners)
        return _forward.get_tangent(y, lvl)
    finally:
        _forward.exit_level(lvl)


grid_sampler_2d_backward_op = Op("grid_sampler_2d_backward", _grid_sampler_2d_backward_kernel,
                                 differentiable=False)


def affine_grid(theta, size, align_corners=None, _any_dtype=False):
    """The sampling grid (N, *out, nd) of the affine maps ``theta`` (N, nd, nd + 1)."""
    align_corners = _default_align_corners(align_corners)
    given, size = size, list(size)  # messages show the size as the caller wrote it
    nd = len(size) - 2
    if nd not in (2, 3):
        raise NotImplementedError(
            f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {given}.")
    if not theta.is_floating_point() and not _any_dtype:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    if tuple(theta.shape) != (size[0], nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} "
                         f"for size {given}. Got {theta.shape}.")
    spatial = size[2:]

    dev = theta.device  # the base grid lives with theta (meta included)

    def axis(n):
        if n <= 1:
            return linspace(0, 0, n, dtype=theta.dtype, device=dev)
        t = linspace(-1, 1, n, dtype=theta.dtype, device=dev)
        if align_corners:
            return t
        # times n - 1, then over n, each rounded in theta's dtype as torch's (integers
        # truncate)
        return (t * (n - 1) / n).to(theta.dtype)

    # base grid coordinates in (x, y[, z]) order, plus a column of ones
    axes = [axis(s) for s in spatial]  # D?, H, W
    mesh = []
    grids = meshgrid(*axes, indexing="ij")
    for g in reversed(grids):  # x (W) first
        mesh.append(g)
    mesh.append(ones(tuple(spatial), dtype=theta.dtype, device=dev))
    base = stack(mesh, -1).reshape(1, -1, nd + 1)  # (1, P, nd+1)
    if theta.dtype in (_dt.float32, _dt.float64):
        # the batched product as PyTorch's CPU kernel runs it for three or four terms: one
        # rounding per product and per sum, left to right (a BLAS product's fused
        # multiply-adds differed in the last bit of a seventh of the coordinates, and the
        # sampler's gradient jumps where a coordinate crosses a pixel)
        grid = None
        for k in range(nd + 1):
            term = base[..., k:k + 1] * theta[:, None, :, k]
            grid = term if grid is None else grid + term
    else:
        grid = base @ theta.transpose(1, 2)  # (N, P, nd)
    return grid.reshape([size[0]] + spatial + [nd])


# ------------------------------------------------------------------------------------------------
# unfold / fold (im2col and its adjoint)


def _windows(xp, x, ksize, stride, dilation, padding):
    """View (N, C, *out, *k) of the windows of (N, C, *spatial) after zero padding."""
    if any(padding):
        x = xp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    nd = len(ksize)
    out = tuple((x.shape[2 + i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i] + 1
                for i in range(nd))
    return sliding_windows(xp, x, out, ksize, stride, dilation), out


def _im2col_kernel(xp, x, *, kernel_size, dilation, padding, stride):
    win, out = _windows(xp, x, kernel_size, stride, dilation, padding)
    n, c = x.shape[:2]
    # (N, C, oh, ow, kh, kw) -> (N, C, kh, kw, oh, ow) -> (N, C*kh*kw, L)
    cols = win.transpose(0, 1, 4, 5, 2, 3)
    return xp.ascontiguousarray(cols).reshape(n, c * kernel_size[0] * kernel_size[1],
                                              out[0] * out[1])


def _col2im_kernel(xp, cols, *, output_size, kernel_size, dilation, padding, stride):
    n = cols.shape[0]
    kh, kw = kernel_size
    c = cols.shape[1] // (kh * kw)
    h, w = output_size
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    blocks = cols.reshape(n, c, kh, kw, oh, ow)
    out = xp.zeros((n, c, h + 2 * padding[0], w + 2 * padding[1]), dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            out[:, :, i * dilation[0]:i * dilation[0] + stride[0] * (oh - 1) + 1:stride[0],
                j * dilation[1]:j * dilation[1] + stride[1] * (ow - 1) + 1:stride[1]] += \
                blocks[:, :, i, j]
    return xp.ascontiguousarray(out[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w])


def _im2col_vjp(g, x, *, kernel_size, dilation, padding, stride):
    return _dispatch.apply(col2im_op, (g,), dict(output_size=tuple(x.shape[2:]),
                                                 kernel_size=kernel_size, dilation=dilation,
                                                 padding=padding, stride=stride))


def _col2im_vjp(g, _cols, *, output_size, kernel_size, dilation, padding, stride):
    return _dispatch.apply(im2col_op, (g,), dict(kernel_size=kernel_size, dilation=dilation,
                                                 padding=padding, stride=stride))


im2col_op = Op("im2col", _im2col_kernel, vjp=_im2col_vjp)
im2col_op.shape_only = (0,)  # the formula reads only the spatial size
col2im_op = Op("col2im", _col2im_kernel, vjp=_col2im_vjp)
linear_jvp(im2col_op, (0,))
linear_jvp(col2im_op, (0,))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) input as columns (N, C*kh*kw, L)."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got "
                           f"{input.dim()}D)")
    nonempty_input(input, 2, message=(
        "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
        f"dimensions for input, but got: {list(input.shape)}"))
    kernel_dtype("im2col", input)
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    p = dict(kernel_size=_tuple(kernel_size, 2, "kernel_size", "unfold"),
             dilation=_tuple(dilation, 2, "dilation", "unfold"),
             padding=_tuple(padding, 2, "padding", "unfold"),
             stride=_tuple(stride, 2, "stride", "unfold"))
    y = _dispatch.apply(im2col_op, (x,), p)
    return y if batched else y.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns (N, C*kh*kw, L) back into a (N, C, H, W) image (the adjoint of unfold)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors "
                           f"are supported (got {input.dim()}D)")
    kernel_dtype("col2im", input)
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    ks = _tuple(kernel_size, 2, "kernel_size", "fold")
    if x.shape[1] % (ks[0] * ks[1]):
        raise RuntimeError(
            f"Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={x.shape[1]} and kernel_size={ks}")
    p = dict(output_size=_tuple(output_size, 2, "output_size", "fold"), kernel_size=ks,
             dilation=_tuple(dilation, 2, "dilation", "fold"),
             padding=_tuple(padding, 2, "padding", "fold"),
             stride=_tuple(stride, 2, "stride", "fold"))
    y = _dispatch.apply(col2im_op, (x,), p)
    return y if batched else y.squeeze(0)


# ------------------------------------------------------------------------------------------------
# shuffles


@public(method=False)
@recorded_as("aten::pixel_shuffle")
def pixel_shuffle(input, upscale_factor):
    """Rearrange (*, C * r^2, H, W) into (*, C, H * r, W * r), ``r = upscale_factor``: each
    group of r^2 channels becomes an r x r block of pixels.

    Args:
        input: a tensor of at least 3 dims.
        upscale_factor: r.

    Returns:
        The rearranged tensor.

    Example:
        >>> import ember
        >>> ember.pixel_shuffle(ember.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c}"
                           f" is not divisible by {r * r}")
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    nl = len(lead)
    perm = list(range(nl)) + [nl, nl + 3, nl + 1, nl + 4, nl + 2]
    # NOTE [ Result layout ]; one node (NOTE [ One node for a composite ])
    y = keep_layout(x.permute(perm).reshape(*lead, c // (r * r), h * r, w * r), input)
    return _node_names.as_one_node("PixelShuffleBackward0", y, (input,),
                                   {"upscale_factor": r})


@public(method=False)
@recorded_as("aten::pixel_unshuffle")
def pixel_unshuffle(input, downscale_factor):
    """The inverse of :func:`pixel_shuffle`: (*, C, H * r, W * r) into (*, C * r^2, H, W).

    Args:
        input: a tensor of at least 3 dims.
        downscale_factor: r.

    Returns:
        The rearranged tensor.

    Example:
        >>> import ember
        >>> ember.pixel_unshuffle(ember.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, "
                           f"but got input with {input.dim()} dimension(s)")
    r = downscale_factor
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got height={h}, width={w}, "
                           f"downscale_factor={r}")
    if input.numel() == 0:  # torch returns an empty input's copy, shape unchanged
        return input.clone()
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    nl = len(lead)
    perm = list(range(nl)) + [nl, nl + 2, nl + 4, nl + 1, nl + 3]
    # NOTE [ Result layout ]; one node (NOTE [ One node for a composite ])
    y = keep_layout(x.permute(perm).reshape(*lead, c * r * r, h // r, w // r), input)
    return _node_names.as_one_node("PixelUnshuffleBackward0", y, (input,),
                                   {"downscale_factor": r})


@public(method=False)
def channel_shuffle(input, groups):
    """Interleave the channels of ``groups`` groups: ``(N, g * k, *)`` viewed as
    ``(N, g, k, *)`` becomes ``(N, k, g, *)``, flattened back.

    Args:
        input: an ``(N, C, *)`` tensor, ``C`` divisible by ``groups``.
        groups: the number of groups.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.channel_shuffle(ember.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value "
                           f"of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} "
                           f"channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape(
        (n, c) + rest)


@public(method=False)
def native_channel_shuffle(input, groups):
    """:func:`channel_shuffle` (PyTorch's kernel-level name for it).

    Args:
        input: an ``(N, C, *)`` tensor, ``C`` divisible by ``groups``.
        groups: the number of groups.

    Returns:
        A tensor shaped like ``input``.

    Example:
        >>> import ember
        >>> ember.native_channel_shuffle(ember.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return channel_shuffle(input, groups)


# ------------------------------------------------------------------------------------------------
# grid sampling, top-level forms: the modes as the integer codes below

#: grid_sample's interpolation modes and their codes in ``torch.grid_sampler``
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
#: grid_sample's padding modes and their codes in ``torch.grid_sampler``
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _mode_name(table, code, what):
    for name, c in table.items():
        if c == code:
            return name
    raise RuntimeError(f"grid_sampler(): unknown {what} code {code}")


@public(method=False)
def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``nn.functional.grid_sample`` with the modes as integer codes
    (``GRID_SAMPLE_INTERPOLATION_MODES``, ``GRID_SAMPLE_PADDING_MODES``).

    Args:
        input: (N, C, H, W) or (N, C, D, H, W).
        grid: (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), coordinates in [-1, 1].
        interpolation_mode: 0 bilinear, 1 nearest, 2 bicubic.
        padding_mode: 0 zeros, 1 border, 2 reflection.
        align_corners: -1 and 1 are the corner pixels' centres (True) or outer edges.

    Returns:
        The sampled values, (N, C, *grid.shape[1:-1]).

    Example:
        >>> import ember
        >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
        >>> ember.grid_sampler(x, ember.zeros(1, 1, 1, 2), 0, 0, False)
        tensor([[[[1.5000]]]])
    """
    return grid_sample(input, grid,
                       _mode_name(GRID_SAMPLE_INTERPOLATION_MODES, interpolation_mode,
                                  "interpolation mode"),
                       _mode_name(GRID_SAMPLE_PADDING_MODES, padding_mode, "padding mode"),
                       align_corners)


@public(method=False)
def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 4-d input only.

    Args:
        input: (N, C, H, W).
        grid: (N, H_out, W_out, 2).
        interpolation_mode, padding_mode, align_corners: as in :func:`grid_sampler`.

    Returns:
        (N, C, H_out, W_out).

    Differences from PyTorch:
        NaN, infinite and near-overflow inputs: which outputs are NaN and which infinite can differ
        from PyTorch's.

    Example:
        >>> import ember
        >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
        >>> ember.grid_sampler_2d(x, ember.zeros(1, 1, 1, 2), 1, 0, True)
        tensor([[[[0.]]]])
    """
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


@public(method=False)
def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 5-d input only.

    Args:
        input: (N, C, D, H, W).
        grid: (N, D_out, H_out, W_out, 3).
        interpolation_mode, padding_mode, align_corners: as in :func:`grid_sampler`.

    Returns:
        (N, C, D_out, H_out, W_out).

    Example:
        >>> import ember
        >>> x = ember.ones(1, 1, 2, 2, 2)
        >>> ember.grid_sampler_3d(x, ember.zeros(1, 1, 1, 1, 3), 0, 0, False)
        tensor([[[[[1.]]]]])
    """
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


@public(method=False)
def affine_grid_generator(theta, size, align_corners):
    """``nn.functional.affine_grid`` with ``align_corners`` required.

    Args:
        theta: (N, 2, 3) or (N, 3, 4) affine maps.
        size: the target (N, C, H, W) or (N, C, D, H, W).
        align_corners: as in ``grid_sample``.

    Returns:
        The sampling grid, (N, H, W, 2) or (N, D, H, W, 3).

    Example:
        >>> import ember
        >>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> ember.affine_grid_generator(theta, [1, 1, 1, 2], True)
        tensor([[[[-1.,  0.],
                  [ 1.,  0.]]]])
    """
    nd = len(size) - 2
    if theta.dtype.name == "bool":  # the base grid's linspace comes before the product
        raise NotImplementedError('"linspace_cpu" not implemented for \'Bool\'')
    if nd in (2, 3) and tuple(theta.shape) != (size[0], nd, nd + 1):
        # no Python-level check here in torch: its batched product refuses the shape
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {nd + 1}] but got: {list(theta.shape[:2])}.")
    # any dtype: torch's composite runs in theta's (integers, complex, half types too)
    return affine_grid(theta, size, align_corners, _any_dtype=True)
