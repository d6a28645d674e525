"""float16 convolution adjoints rounded where PyTorch's CPU kernels round them.

NOTE [ float16 convolutions as the slow CPU kernels ]
PyTorch's CPU convolutions in float16 run its "slow" kernels (im2col, a GEMM, col2im: oneDNN
takes float16 only on CPUs with AVX512-FP16 or AMX-FP16); bfloat16 ones run oneDNN, which
sums in float32 and rounds each output once. The slow kernels' GEMMs also sum in float32,
but in their own orders, and the steps around them round to float16. Found by experiment
against torch 2.13 (random shapes, strides, groups, dilations; bit for bit):

- forward: each output is a dot over (input channel, tap), summed in four interleaved float32
  partial sums (term l into sum l mod 4, the last K mod 4 terms into the first), the four
  added in order, then the bias added, rounded once;
- input adjoint (a convolution's input gradient and a transposed convolution's forward):
  the GEMM gives each kernel tap's column, summed over output channels one after another and
  rounded to float16, and col2im adds the columns onto the zeroed input tap by tap, in the
  taps' row-major order, each add rounded to float16;
- weight adjoint: per sample, a dot over output positions in the order of torch's float16
  dot kernel (``dot_rows``), added onto the float16 gradient: one rounding per sample;
- bias gradient: a plain float16 sum, except in the dilated kernel (``nn_conv._bias_grad``);
- a transposed convolution adds its bias to the float16 result (one more rounding), which
  ``nn_conv.conv_transpose`` does for every dtype but bfloat16, whose oneDNN kernel adds it
  to the float32 sums before their one rounding.

Not reproduced: channels-last inputs, for which col2im walks output positions first (so the
taps land in reverse order), and oneDNN's own summation order for bfloat16 (about one output
in 10^4 of a large reduction differs by one bfloat16 step).
"""

from __future__ import annotations

import itertools

import numpy as np

_F16 = np.dtype(np.float16)
#: torch 2.13's float16 dot kernel on the CPUs measured (AVX2 and AVX-512 builds alike): eight
#: accumulators of eight float32 lanes
_LANES, _REGISTERS = 8, 8


def is_half(*arrays):
    """Whether the adjoints of these NumPy operands take this module's float16 kernels."""
    return any(a is not None and isinstance(a, np.ndarray) and a.dtype == _F16
               for a in arrays)


def tap_columns(g, w, groups):
    """Per kernel tap, its column ``(N, C, *out)``: the float32 sum over output channels of
    g (N, O, *out) times w (O, C/groups, *k), added in channel order, rounded once to float16
    (the GEMM before col2im)."""
    n, o = g.shape[:2]
    out = g.shape[2:]
    cg = w.shape[1]
    og = o // groups
    g32 = g.astype(np.float32).reshape((n, groups, og, -1))
    w32 = w.astype(np.float32).reshape((groups, og, cg) + tuple(w.shape[2:]))
    for tap in itertools.product(*(range(k) for k in w.shape[2:])):
        wt = np.ascontiguousarray(w32[(Ellipsis,) + tap].transpose(0, 2, 1))  # (G, Cg, Og)
        col = np.zeros((n, groups, cg, g32.shape[-1]), np.float32)
        for j in range(og):  # one output channel after another, as torch's GEMM adds them
            col += wt[None, :, :, j, None] * g32[:, :, None, j, :]
        yield tap, col.astype(_F16).reshape((n, groups * cg) + tuple(out))


def forward(columns, x, w, b, *, groups, **params):
    """A float16 convolution as torch's GEMM sums it: for each output, the products of
    weights and columns of x (``columns(x, **params)``: (C * prod(k), N * P) float32) in
    four interleaved float32 partial sums (term l into sum l mod 4, the last few into the
    first), added in order, plus the bias, rounded once (NOTE [ float16 convolutions as the
    slow CPU kernels ])."""
    n = x.shape[0]
    o, cg = w.shape[:2]
    og = o // groups
    cols = columns(x.astype(np.float32), **params)
    per = cols.shape[0] // groups
    wm = w.astype(np.float32).reshape(o, per)
    y = np.empty((o, cols.shape[1]), np.float32)
    for j in range(groups):
        y[j * og:(j + 1) * og] = _interleaved(wm[j * og:(j + 1) * og],
                                              cols[j * per:(j + 1) * per])
    if b is not None:
        y += b.astype(np.float32)[:, None]
    out = _out_shape(x.shape[2:], w.shape[2:], **params)
    return np.ascontiguousarray(
        y.astype(_F16).reshape((o, n) + out).swapaxes(0, 1))


def _out_shape(spatial, ksize, *, stride, padding, dilation):
    return tuple((spatial[i] + 2 * padding[i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i]
                 + 1 for i in range(len(ksize)))


def _interleaved(wm, cols):
    """``wm @ cols`` (float32) with four interleaved partial sums (see ``forward``)."""
    k = wm.shape[1]
    parts = np.zeros((4, wm.shape[0], cols.shape[1]), np.float32)
    main = k // 4 * 4
    for lo in range(k):
        parts[lo % 4 if lo < main else 0] += wm[:, lo, None] * cols[lo]
    return ((parts[0] + parts[1]) + parts[2]) + parts[3]


def input_grad(g, w, *, input_shape, stride, padding, dilation, groups):
    """The input adjoint of a float16 convolution as col2im accumulates it (NOTE [ float16
    convolutions as the slow CPU kernels ])."""
    nd = len(input_shape) - 2
    out = g.shape[2:]
    spatial = tuple(input_shape[2 + i] + 2 * padding[i] for i in range(nd))
    gx = np.zeros(tuple(input_shape[:2]) + spatial, _F16)
    for tap, col in tap_columns(g, w, groups):
        region = (slice(None), slice(None)) + tuple(
            slice(tap[i] * dilation[i], tap[i] * dilation[i] + (out[i] - 1) * stride[i] + 1,
                  stride[i]) for i in range(nd))
        gx[region] += col  # NumPy's float16 add: float32 sum, rounded (as c10::Half's)
    crop = (slice(None), slice(None)) + tuple(
        slice(padding[i], padding[i] + input_shape[2 + i]) for i in range(nd))
    return np.ascontiguousarray(gx[crop])


def _tree(v):
    """Sum the last axis by halves (lane i + lane i + h, ...), as SIMD reductions do."""
    while v.shape[-1] > 1:
        h = v.shape[-1] // 2
        v = v[..., :h] + v[..., h:]
    return v[..., 0]


def dot_rows(a, b):
    """``a @ b.T`` for float32 rows holding float16 values, summed in the order of torch's
    float16 dot kernel (NOTE [ float16 convolutions as the slow CPU kernels ]): eight
    8-lane float32 accumulators over blocks of 64, added by halves, then 8-lane steps onto
    the result, its lanes added by halves, then the last few one by one. Products of two
    float16 values are exact in float32, so a fused multiply-add rounds as this add does."""
    m, k = a.shape
    n = b.shape[0]
    block = _LANES * _REGISTERS
    main, vec = k // block * block, k // _LANES * _LANES
    acc = np.zeros((m, n, _REGISTERS, _LANES), np.float32)
    for j in range(0, main, block):
        acc += (a[:, None, j:j + block] * b[None, :, j:j + block]).reshape(acc.shape)
    lanes = _tree(acc.transpose(0, 1, 3, 2))
    for j in range(main, vec, _LANES):
        lanes += a[:, None, j:j + _LANES] * b[None, :, j:j + _LANES]
    total = _tree(lanes)
    for j in range(vec, k):
        total += a[:, None, j] * b[None, :, j]
    return total


def weight_grad(columns, x, g, *, weight_shape, groups, **params):
    """The weight adjoint of a float16 convolution: per sample, the float32 dot of g's rows
    with the columns of x (``columns(x_n, **params)``: (C * prod(k), P) float32), added onto
    the float16 gradient (NOTE [ float16 convolutions as the slow CPU kernels ])."""
    o, cg = weight_shape[:2]
    og = o // groups
    gw = np.zeros((o, cg * int(np.prod(weight_shape[2:], dtype=np.int64))), _F16)
    x32, g32 = x.astype(np.float32), g.astype(np.float32)
    for i in range(x.shape[0]):
        cols = columns(x32[i:i + 1], **params)
        rows = g32[i].reshape(o, -1)
        per = cols.shape[0] // groups
        dot = np.concatenate([dot_rows(rows[j * og:(j + 1) * og], cols[j * per:(j + 1) * per])
                              for j in range(groups)])
        gw = (gw.astype(np.float32) + dot).astype(_F16)
    return gw.reshape(weight_shape)

