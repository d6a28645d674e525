"""Convolution through shifted planes: gathers whose every copied run is a whole row block.

NOTE [ Shifted-plane columns ]
A convolution with kernel taps t reads, for output position a, the padded input at
``s * a + d * t``. Write the padded input with its positions split by phase (``s * q + r``
stored in plane r at q: for stride 1 there is one plane, the padded input itself) and lay
every plane out flat, row-major. Then tap t reads one plane (the phase of ``d * t``) at a
*constant flat offset* from the output position, if the output is also laid out on the
plane's row-major grid: output (a_1, a_2, ...) at flat ``a_1 * Q_2 * ... + a_2 * Q_3 ...``,
Q the plane's extents. So for each tap and channel, the columns of every output position
are one contiguous slice of the plane, ``plane[off_t : off_t + L]``, L = Ho_1 * Q_2 * ...:
the gather copies runs of L values (a thousand or so) where window-by-window columns copy
runs of one output row (NOTE [ Planar columns ] in ``nn_conv.py``: 4-32 values), and NumPy's
copy loop runs at memory speed instead of its per-run overhead.

The price is the grid's extra positions: columns ``a_i >= Ho_i`` of the inner dims are
computed and dropped (the plane is Q_i = ceil(padded / s) wide, Ho_i + (k_i - 1) d_i / s_i
at most): 6% more GEMM work for a padded 3x3 convolution of 32-wide planes, 25% for 8-wide
ones, which is why grouped convolutions on short rows keep channels-last columns. Each
plane gets one spare row, so no tap's slice runs into the next plane (slices of one tap
never overlap, which the input adjoint's scatter relies on).

The same layout serves the adjoints:

- in w: ``gw = g_grid @ cols^T`` with g placed on the grid and zeros at the dropped
  positions (so the garbage columns meet zeros);
- in x, stride 1: the adjoint is itself a convolution (of g, padded, with the flipped
  kernel), and its columns of g give the weight gradient too (NOTE [ Shared gradient
  columns ] in ``nn_conv.py``), with x on that convolution's grid;
- in x, strided: ``W^T @ g_grid`` gives every tap's contribution as one (C, N, L) block,
  added onto its plane slice (one add per tap, runs of L values), and the planes are then
  put back in place (the reverse of the phase split).

Grouped convolutions take the same columns, one GEMM per group (stacked matmul).

``nn_conv`` uses these columns for grouped convolutions only. For ungrouped ones they
measured no better than planar columns, because there the GEMM, not the gather, is most of
the time (one thread, CPU time): a 3x3 64->64 conv of (32, 64, 32, 32) forward 24.3 ms
against 23.2, a stride-2 64->128 one 11.6 against 11.0 (its input gradient 14.3 against
15.6), and 20-80% slower on 16x16 and smaller planes.

Layout: columns are channel-major ``(C * T, N * L)`` so that a group's reduction
dimension is one block and the GEMM output ``(O, N * L)`` goes back to NCHW as whole rows.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


class Grid:
    """The phase planes of a convolution's padded input and where each kernel tap reads
    them (NOTE [ Shifted-plane columns ])."""

    def __init__(self, spatial, ksize, stride, padding, dilation):
        nd = len(ksize)
        self.spatial, self.ksize, self.stride = tuple(spatial), tuple(ksize), tuple(stride)
        self.padding, self.dilation = tuple(padding), tuple(dilation)
        padded = [spatial[i] + 2 * padding[i] for i in range(nd)]
        self.out = tuple((padded[i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i] + 1
                         for i in range(nd))
        q = [-(-padded[i] // stride[i]) for i in range(nd)]
        q[0] += 1                        # the spare row: no tap's slice leaves its plane
        self.q = tuple(q)
        self.plane = math.prod(q)
        self.phases = math.prod(stride)
        inner = math.prod(q[1:])
        self.length = self.out[0] * inner  # L: grid positions of the output
        qstrides = [math.prod(q[i + 1:]) for i in range(nd)]
        offsets = []
        for tap in itertools.product(*(range(k) for k in ksize)):
            reach = [tap[i] * dilation[i] for i in range(nd)]
            phase = 0
            for i in range(nd):
                phase = phase * stride[i] + reach[i] % stride[i]
            offsets.append(phase * self.plane +
                           sum((reach[i] // stride[i]) * qstrides[i] for i in range(nd)))
        self.offsets = offsets

    @property
    def taps(self):
        """The number of kernel taps, prod(k)."""
        return len(self.offsets)

    def _phase_regions(self):
        """(phase index, plane slices, input slices) for every phase with data."""
        nd = len(self.ksize)
        for idx, phase in enumerate(itertools.product(*(range(s) for s in self.stride))):
            planes, inputs = [], []
            for i in range(nd):
                s, p, r = self.stride[i], self.padding[i], phase[i]
                q0 = max(0, -(-(p - r) // s))          # first plane index holding data
                u0 = r + s * q0 - p                    # its input position
                if u0 >= self.spatial[i]:
                    break
                cnt = (self.spatial[i] - 1 - u0) // s + 1
                planes.append(slice(q0, q0 + cnt))
                inputs.append(slice(u0, u0 + s * (cnt - 1) + 1, s))
            else:
                yield idx, tuple(planes), tuple(inputs)

    def planes(self, xp, x):
        """x (N, C, *S) -> its zero-padded phase planes, (N, C, phases * plane) fresh."""
        n, c = x.shape[:2]
        buf = xp.zeros((n, c, self.phases, self.plane), dtype=x.dtype)
        for idx, planes, inputs in self._phase_regions():
            view = buf[:, :, idx].reshape((n, c) + self.q)
            view[(slice(None), slice(None)) + planes] = x[(slice(None), slice(None)) + inputs]
        return buf.reshape(n, c, self.phases * self.plane)

    def unplanes(self, xp, buf):
        """The adjoint of ``planes``: (N, C, phases * plane) -> (N, C, *S), summing nothing
        (each input position lives in exactly one plane)."""
        n, c = buf.shape[:2]
        out = xp.empty((n, c) + self.spatial, dtype=buf.dtype)
        buf = buf.reshape(n, c, self.phases, self.plane)
        for idx, planes, inputs in self._phase_regions():
            out[(slice(None), slice(None)) + inputs] = \
                buf[:, :, idx].reshape((n, c) + self.q)[(slice(None), slice(None)) + planes]
        return out

    def columns(self, xp, buf):
        """Planes (N, C, phases * plane) -> columns (C * T, N * L), channel-major."""
        n, c = buf.shape[:2]
        length = self.length
        cols = xp.empty((c, self.taps, n, length), dtype=buf.dtype)
        src = buf.transpose(1, 0, 2)
        for t, off in enumerate(self.offsets):
            cols[:, t] = src[:, :, off:off + length]
        return cols.reshape(c * self.taps, n * length)

    def scatter(self, xp, cols, n, c):
        """The adjoint of ``columns``: columns (C * T, N * L) -> planes (N, C, phases *
        plane), each tap's block added onto its slice."""
        buf = xp.zeros((n, c, self.phases * self.plane), dtype=cols.dtype)
        dst = buf.transpose(1, 0, 2)
        cols = cols.reshape(c, self.taps, n, self.length)
        for t, off in enumerate(self.offsets):
            dst[:, :, off:off + self.length] += cols[:, t]
        return buf

    def output_view(self, a):
        """(O, N * L) -> the valid outputs, a view (O, N, *out)."""
        o = a.shape[0]
        a = a.reshape((o, a.shape[1] // self.length, self.out[0]) + self.q[1:])
        return a[(slice(None),) * 3 + tuple(slice(0, k) for k in self.out[1:])]

    def to_grid(self, xp, g):
        """g (N, O, *out) -> (O, N * L) on the output grid, zeros at the dropped positions."""
        n, o = g.shape[:2]
        grid = xp.empty((o, n, self.out[0]) + self.q[1:], dtype=g.dtype)
        if self.q[1:] != self.out[1:]:
            grid[...] = 0
        grid[(slice(None),) * 3 + tuple(slice(0, k) for k in self.out[1:])] = \
            xp.moveaxis(g, 1, 0)
        return grid.reshape(o, n * self.length)


    def to_grid_samples(self, xp, g):
        """g (N, C, *out) -> (N, C, L) on the output grid, zeros at the dropped positions."""
        n, c = g.shape[:2]
        grid = xp.empty((n, c, self.out[0]) + self.q[1:], dtype=g.dtype)
        if self.q[1:] != self.out[1:]:
            grid[...] = 0
        grid[(slice(None),) * 3 + tuple(slice(0, k) for k in self.out[1:])] = g
        return grid.reshape(n, c, self.length)

    def crop_samples(self, a):
        """(N, C, L) on the output grid -> the valid outputs, a view (N, C, *out)."""
        a = a.reshape(a.shape[:2] + (self.out[0],) + self.q[1:])
        return a[(slice(None),) * 3 + tuple(slice(0, k) for k in self.out[1:])]


def _weight_matrix(w, groups):
    """(O, C/G, *k) -> (G, O/G, C/G * T), the columns' channel-major order."""
    return w.reshape(groups, w.shape[0] // groups, -1)


def _gemm(wm, cols, groups):
    """(G, O/G, K) times columns (G * K, M) -> (O, M)."""
    if groups == 1:
        return wm[0] @ cols
    return (wm @ cols.reshape(groups, -1, cols.shape[1])).reshape(-1, cols.shape[1])


def sample_slices(n, per_sample, budget):
    """Slices of n samples whose columns take at most ``budget`` bytes (at least 1 sample)."""
    step = max(1, budget // max(per_sample, 1))
    return [slice(i, min(i + step, n)) for i in range(0, n, step)]


# a batch chunk's columns stay under this many bytes
COLUMN_BYTES = 4 * 2**20


def _chunks(grid, n, c, itemsize):
    return sample_slices(n, c * grid.taps * grid.length * itemsize, COLUMN_BYTES)


def conv(xp, x, w, stride, padding, dilation, groups):
    """The convolution of x (N, C, *S) with w (O, C/G, *k), no bias: (N, O, *out)."""
    n, c = x.shape[:2]
    o = w.shape[0]
    grid = Grid(x.shape[2:], w.shape[2:], stride, padding, dilation)
    wm = _weight_matrix(w, groups)
    if n == 0:
        return xp.zeros((n, o) + grid.out, dtype=x.dtype)
    buf = grid.planes(xp, x)
    y = xp.empty((n, o) + grid.out, dtype=x.dtype)
    for sl in _chunks(grid, n, c, x.dtype.itemsize):
        part = _gemm(wm, grid.columns(xp, buf[sl]), groups)
        y[sl] = xp.moveaxis(grid.output_view(part), 0, 1)
    return y


def weight_grad(xp, x, g, weight_shape, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in w: (O, C/G, *k)."""
    n, c = x.shape[:2]
    o = weight_shape[0]
    grid = Grid(x.shape[2:], weight_shape[2:], stride, padding, dilation)
    if n == 0:
        return xp.zeros(weight_shape, dtype=x.dtype)
    buf = grid.planes(xp, x)
    gw = None
    for sl in _chunks(grid, n, c, x.dtype.itemsize):
        cols = grid.columns(xp, buf[sl])
        rows = grid.to_grid(xp, g[sl])
        if groups == 1:
            part = rows @ cols.T
        else:
            m = cols.shape[1]
            part = rows.reshape(groups, o // groups, m) @ \
                cols.reshape(groups, -1, m).transpose(0, 2, 1)
        gw = part if gw is None else xp.add(gw, part, out=gw)
    return gw.reshape(weight_shape)


def input_grad_scatter(xp, g, w, input_shape, stride, padding, dilation, groups):
    """The adjoint of ``conv`` in x by scattering ``W^T g`` tap by tap: (N, C, *S)."""
    n, o = g.shape[:2]
    c = input_shape[1]
    grid = Grid(input_shape[2:], w.shape[2:], stride, padding, dilation)
    wm = _weight_matrix(w, groups)                               # (G, O/G, C/G * T)
    if n == 0:
        return xp.zeros(tuple(input_shape), dtype=g.dtype)
    buf = None
    for sl in _chunks(grid, n, c, g.dtype.itemsize):
        rows = grid.to_grid(xp, g[sl])                           # (O, n * L)
        if groups == 1:
            cols = wm[0].T @ rows
        else:
            m = rows.shape[1]
            cols = (wm.transpose(0, 2, 1) @ rows.reshape(groups, o // groups, m)).reshape(-1, m)
        part = grid.scatter(xp, cols, rows.shape[1] // grid.length, c)
        if buf is None:
            buf = part if sl.stop >= n else xp.empty((n,) + part.shape[1:], dtype=part.dtype)
        if buf is not part:
            buf[sl] = part
    return grid.unplanes(xp, buf)


def flipped_kernel(xp, w, groups):
    """(O, C/G, *k) -> (C, O/G, *k) with every spatial axis reversed: the kernel of the
    input adjoint as a convolution."""
    ksize = w.shape[2:]
    cg = w.shape[1]
    wt = w.reshape((groups, w.shape[0] // groups, cg) + tuple(ksize))
    wt = xp.swapaxes(wt, 1, 2).reshape((cg * groups, w.shape[0] // groups) + tuple(ksize))
    return xp.ascontiguousarray(wt[(slice(None), slice(None)) +
                                   (slice(None, None, -1),) * len(ksize)])


def backward_stride1(xp, g, x, w, padding, dilation, groups, need_x=True, need_w=True):
    """Both adjoints of a stride-1 convolution whose padding is at most the dilated
    kernel's reach, from one gather of g (NOTE [ Shared gradient columns ]): the input
    adjoint is the convolution of g padded by ``d (k - 1) - p`` with the flipped kernel,
    and the same columns times x on that convolution's grid give the weight gradient with
    its taps reversed. Returns (gx or None, gw or None)."""
    n, o = g.shape[:2]
    c = x.shape[1]
    ksize = tuple(w.shape[2:])
    nd = len(ksize)
    pad = tuple(dilation[i] * (ksize[i] - 1) - padding[i] for i in range(nd))
    grid = Grid(g.shape[2:], ksize, (1,) * nd, pad, dilation)
    assert grid.out == tuple(x.shape[2:])
    if n == 0:
        return (xp.zeros(x.shape, dtype=g.dtype) if need_x else None,
                xp.zeros(w.shape, dtype=g.dtype) if need_w else None)
    buf = grid.planes(xp, g)
    wf = _weight_matrix(flipped_kernel(xp, w, groups), groups) if need_x else None
    gx = xp.empty(x.shape, dtype=g.dtype) if need_x else None
    gwf = None
    for sl in _chunks(grid, n, o, g.dtype.itemsize):
        cols = grid.columns(xp, buf[sl])                         # (O * T, n * L)
        if need_x:
            gx[sl] = xp.moveaxis(grid.output_view(_gemm(wf, cols, groups)), 0, 1)
        if need_w:
            xg = grid.to_grid(xp, x[sl])                          # (C, n * L)
            if groups == 1:
                part = cols @ xg.T                                # (O * T, C)
            else:
                m = cols.shape[1]
                part = cols.reshape(groups, -1, m) @ \
                    xg.reshape(groups, c // groups, m).transpose(0, 2, 1)
            gwf = part if gwf is None else xp.add(gwf, part, out=gwf)
    gw = None
    if need_w:
        # (G, O/G * T, C/G) rows (o, tap) -> (O, C/G, *k), taps reversed back
        gw = gwf.reshape((o,) + ksize + (c // groups,))
        gw = xp.moveaxis(gw, -1, 1)[(slice(None), slice(None)) + (slice(None, None, -1),) * nd]
        gw = xp.ascontiguousarray(gw)
    return gx, gw


# ------------------------------------------------------------------------------------------------
# depthwise convolutions with compiled loops


def depthwise_eligible(xp, dtype, w_shape, groups):
    """Whether a convolution takes the compiled depthwise loops: NumPy float32, one input
    and one output channel per group, and numba as the kernels' backend. Each tap is then
    a multiply-add over a contiguous slice of the channel's planes, where the GEMM form
    (one product per channel with a reduction of prod(k)) runs BLAS at a fraction of its
    speed: measured (one thread, CPU time) on a 3x3 depthwise conv of (32, 64, 32, 32),
    forward 7.6 -> 3.4 ms, input gradient 8.0 -> 3.4 ms, weight gradient 8.7 -> 3.3 ms
    against shifted-plane GEMMs (channels-last columns: 38 / 37 / 33 ms; PyTorch 1.9 /
    1.9 / 1.8 ms). Of the 3.4 ms, 1.7 are the loops, the rest the phase planes' copy and
    the crop."""
    if xp is not np or np.dtype(dtype) != np.dtype(np.float32):
        return False
    if groups < 2 or w_shape[1] != 1 or w_shape[0] != groups:
        return False
    from .. import _kernels

    return _kernels.backend() == "numba"


def _depthwise_kernels():
    from .._kernels import _numba_conv

    return _numba_conv


def depthwise_conv(xp, x, w, stride, padding, dilation):
    """Depthwise convolution of x (N, C, *S) with w (C, 1, *k): (N, C, *out)."""
    k = _depthwise_kernels()
    n, c = x.shape[:2]
    grid = Grid(x.shape[2:], w.shape[2:], stride, padding, dilation)
    buf = grid.planes(xp, x)
    y = np.empty((n, c, grid.length), x.dtype)
    k.depthwise_forward(buf, np.ascontiguousarray(w.reshape(c, -1)),
                        np.asarray(grid.offsets, np.int64), y)
    return np.ascontiguousarray(grid.crop_samples(y))


def depthwise_input_grad(xp, g, w, input_shape, stride, padding, dilation):
    """The adjoint of ``depthwise_conv`` in x: (N, C, *S)."""
    k = _depthwise_kernels()
    n, c = g.shape[:2]
    grid = Grid(input_shape[2:], w.shape[2:], stride, padding, dilation)
    buf = np.zeros((n, c, grid.phases * grid.plane), g.dtype)
    k.depthwise_input_grad(grid.to_grid_samples(xp, g), np.ascontiguousarray(w.reshape(c, -1)),
                           np.asarray(grid.offsets, np.int64), buf)
    return grid.unplanes(xp, buf)


def depthwise_weight_grad(xp, x, g, weight_shape, stride, padding, dilation):
    """The adjoint of ``depthwise_conv`` in w: (C, 1, *k)."""
    k = _depthwise_kernels()
    c = x.shape[1]
    grid = Grid(x.shape[2:], weight_shape[2:], stride, padding, dilation)
    gw = np.empty((c, grid.taps), x.dtype)
    k.depthwise_weight_grad(grid.planes(xp, x), grid.to_grid_samples(xp, g),
                            np.asarray(grid.offsets, np.int64), gw)
    return gw.reshape(weight_shape)
