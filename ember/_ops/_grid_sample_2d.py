"""2-d ``grid_sample`` on NumPy arrays with PyTorch's CPU arithmetic: forward and backward.

NOTE [ Grid sampling as PyTorch's CPU kernel ]
PyTorch samples a 4-d input with a vectorised kernel whose arithmetic fixes the last bits of
every result, and the gradient with respect to the grid depends on those bits more than on
anything else: the bilinear weights' derivative jumps where a coordinate crosses a whole
pixel, so an affine grid that puts points on pixel centres (the spatial transformer
tutorial's identity start) sends its gradient to one side or the other of each centre by the
last bit of the unnormalised coordinate. Composed from ember's element-wise ops, ember's
coordinates differed from PyTorch's in a quarter of the points and the transformer's
gradients by a quarter of their size. The kernels here reproduce the vector kernel's
operations (found by comparing with PyTorch bit for bit):

- coordinates: ``(g + 1) * s`` (``s = (size - 1) / 2``) with ``align_corners``, else
  ``fma(g + 1, size / 2, -0.5)``; border and reflection padding clip to ``[0, size - 1]``
  (NaN to 0), and their gradient multiplier is 0 *on* the bounds, not only outside (the
  kernel counts a clipped border point as out of bounds); reflection folds ``|x - low|`` by
  ``fma(-trunc(|x - low| / 2span), 2span, |x - low|)``;
- bilinear: ``fma(se_v, se, fma(sw_v, sw, fma(ne_v, ne, nw_v * nw)))``, the grid gradient
  ``fma((se_v - sw_v), n, (ne_v - nw_v) * s)`` times the output gradient accumulated over
  channels with one more fma each, then times the multiplier;
- bicubic (A = -0.75): the outer coefficients ``((A x + 3.75) x - 6) x + 3`` rounded at each
  step, the inner ones ``fma(fma(1.25, x, -2.25) x, x, 1)``; a row of four taps
  ``fma(c0, v0, c1 v1) + c2 v2 + c3 v3``, the four rows ``fma(c3, r3, fma(c2, r2, fma(c1, r1,
  c0 r0)))``;
- the input gradient is added tap by tap in the kernel's order: the points in blocks of its
  vector width (8 float32 or 4 float64 lanes: PyTorch's AVX2 build, which it also runs on
  AVX-512 machines), and within a block corner by corner (bicubic: tap column, then row),
  each corner's lanes in order. ``np.add.at`` adds in the order given, so one call with the
  contributions sorted that way makes the same sums.

PyTorch's loop over a grid it cannot read as one line (a transposed grid) compiles the
bicubic sums with other fused multiply-adds: there ember's bicubic output can differ in the
last bit (its gradients do not).

float32 and float64 only: the half types and 5-d inputs go through ember's composite in
``nn_sampling.py``.
"""

from __future__ import annotations

import numpy as np

from ._fma import fma as _fma

#: PyTorch's vector width for this kernel, in elements (NOTE above)
_LANES = {np.dtype(np.float32): 8, np.dtype(np.float64): 4}


def _fma3(a, b, c):
    """``a * b + c`` rounded once, the operands broadcast to one shape and dtype."""
    a, b, c = np.broadcast_arrays(a, b, c)
    dt = np.result_type(a, b, c)
    return _fma(a.astype(dt, copy=False), b.astype(dt, copy=False),
                c.astype(dt, copy=False), dt)


class _Axis:
    """Unnormalising and padding of one spatial axis of ``size`` pixels."""

    def __init__(self, size, padding, align_corners, dt):
        self.dt, self.padding, self.align = dt, padding, align_corners
        self.max = dt(size - 1)
        self.scale = dt(size - 1) / dt(2) if align_corners else dt(size) / dt(2)
        self.low = dt(0) if align_corners else dt(-0.5)
        self.twice_span = dt(size - 1) * dt(2) if align_corners else dt(size) * dt(2)
        self.empty = size <= 1 if align_corners else size <= 0

    def unnormalize(self, g):
        if self.align:
            return (g + self.dt(1)) * self.scale
        return _fma3(g + self.dt(1), self.scale, self.dt(-0.5))

    def clip(self, x):
        return np.minimum(np.where(np.isnan(x), self.dt(0), np.maximum(x, self.dt(0))),
                          self.max)

    def _fold(self, x):
        m = x if self.align else x - self.low
        a = np.abs(m)
        return m, _fma3(-np.trunc(a / self.twice_span), self.twice_span, a)

    def reflect(self, x):
        if self.empty:
            return np.zeros_like(x)
        _, extra = self._fold(x)
        r = np.minimum(extra, self.twice_span - extra)
        return r if self.align else r + self.low

    def padded(self, x):
        """The padding rule on unnormalised coordinates (bicubic applies it per tap)."""
        if self.padding == "border":
            return self.clip(x)
        if self.padding == "reflection":
            return self.clip(self.reflect(x))
        return x

    def with_grad(self, g):
        """(coordinate, d coordinate / d g) for the backward pass."""
        x = self.unnormalize(g)
        if self.padding == "zeros":
            return x, np.full_like(x, self.scale)
        mult = np.full_like(x, self.scale)
        if self.padding == "reflection":
            if self.empty:
                return np.zeros_like(x), np.zeros_like(x)
            m, extra = self._fold(x)
            folded = self.twice_span - extra
            more = extra > folded
            x = np.where(more, folded, extra)
            if not self.align:
                x = x + self.low
            mult = np.where(more ^ (m < 0), self.dt(-1), self.dt(1)) * self.scale
        lo = np.maximum(x, self.dt(0))
        x = np.minimum(lo, self.max)
        return x, np.where((lo != 0) & (x != self.max), mult, self.dt(0))


def _cubic(t, dt):
    far = lambda x: ((dt(-0.75) * x + dt(3.75)) * x - dt(6)) * x + dt(3)  # noqa: E731
    near = lambda x: _fma3(_fma3(dt(1.25), x, dt(-2.25)) * x, x, dt(1))  # noqa: E731
    return far(t + dt(1)), near(t), near(dt(1) - t), far(dt(2) - t)


def _cubic_grad(t, dt):
    x = dt(-1) - t
    c0 = (dt(2.25) * x + dt(7.5)) * x + dt(6)
    x = -t
    c1 = (dt(-3.75) * x - dt(4.5)) * x
    x = dt(1) - t
    c2 = (dt(3.75) * x - dt(4.5)) * x
    x = dt(2) - t
    c3 = (dt(-2.25) * x + dt(7.5)) * x - dt(6)
    return c0, c1, c2, c3


class _Sampler:
    """One call's input planes (N, C, H*W) and the reads and writes at integer taps."""

    def __init__(self, inp, padding):
        self.n, self.c, self.h, self.w = inp.shape
        self.flat = np.ascontiguousarray(inp).reshape(self.n, self.c, -1)
        self.dt = inp.dtype.type
        self.inside = padding != "zeros"  # the padding keeps the first corner in bounds

    def tap(self, y, x, first=False):
        """(values (N, C, P), flat index (N, P), valid (N, P)) at integer coordinates."""
        ok = np.isfinite(x) & np.isfinite(y)
        if not (first and self.inside):
            ok &= (x > -1) & (x < self.w) & (y > -1) & (y < self.h)
        idx = np.where(ok, y, 0).astype(np.int64) * self.w + np.where(ok, x, 0).astype(np.int64)
        v = np.take_along_axis(self.flat, np.broadcast_to(idx[:, None, :], (self.n, self.c)
                                                          + idx.shape[1:]), 2)
        return np.where(ok[:, None, :], v, self.dt(0)), idx, ok

    def scatter(self, contribs, blocks):
        """The input gradient from ``contribs`` [(index, valid, values (N, C, P))], added in
        the kernel's order (NOTE [ Grid sampling as PyTorch's CPU kernel ]): ``blocks`` is
        each point's block."""
        k, p = len(contribs), contribs[0][0].shape[1]
        points = np.tile(np.arange(p), k)
        order = np.lexsort((points, np.repeat(np.arange(k), p), np.tile(blocks, k)))
        idx = np.concatenate([c[0] for c in contribs], 1)[:, order]
        ok = np.concatenate([c[1] for c in contribs], 1)[:, order]
        vals = np.concatenate([c[2] for c in contribs], 2)[:, :, order]
        planes = np.arange(self.n * self.c, dtype=np.int64).reshape(self.n, self.c, 1)
        where = planes * (self.h * self.w) + idx[:, None, :]
        keep = np.broadcast_to(ok[:, None, :], where.shape)
        out = np.zeros(self.n * self.c * self.h * self.w, self.flat.dtype)
        np.add.at(out, where[keep], vals[keep])
        return out.reshape(self.n, self.c, self.h, self.w)


def _blocks(grid, lanes):
    """Each output point's block of the kernel's vector loop: runs of ``lanes`` points over
    the whole (Ho, Wo) plane where the kernel reads it as one line (the grid's (Ho, Wo, 2)
    or its (Ho, Wo) planes contiguous), else runs within each row."""
    _, ho, wo, _ = grid.shape
    item = grid.itemsize
    s_h, s_w, s_c = (grid.strides[1] if ho > 1 else 2 * wo * item,
                     grid.strides[2] if wo > 1 else 2 * item, grid.strides[3])
    whole = (s_c == item and s_w == 2 * item and s_h == 2 * wo * item) or (
        s_w == item and s_h == wo * item)
    p = np.arange(ho * wo)
    if whole:
        return p // lanes
    return (p // wo) * -(-wo // lanes) + (p % wo) // lanes


def _bilinear_params(x, y, dt):
    xw, yn = np.floor(x), np.floor(y)
    w, n = x - xw, y - yn
    e, s = dt(1) - w, dt(1) - n
    return xw, yn, n, s, w, e


def forward(inp, grid, mode, padding, align_corners):
    """``grid_sample`` of ``inp`` (N, C, H, W) at ``grid`` (N, Ho, Wo, 2), float32/float64.

    Returns:
        ndarray: (N, C, Ho, Wo).
    """
    smp = _Sampler(inp, padding)
    dt = smp.dt
    n, c = smp.n, smp.c
    out_shape = (n, c) + grid.shape[1:3]
    gx, gy = grid[..., 0].reshape(n, -1), grid[..., 1].reshape(n, -1)
    ax = _Axis(smp.w, padding, align_corners, dt)
    ay = _Axis(smp.h, padding, align_corners, dt)
    if mode == "bicubic":
        x, y = ax.unnormalize(gx), ay.unnormalize(gy)
        ix, iy = np.floor(x), np.floor(y)
        cx = [v[:, None, :] for v in _cubic(x - ix, dt)]
        cy = [v[:, None, :] for v in _cubic(y - iy, dt)]
        rows = []
        for i in range(4):
            yy = np.trunc(ay.padded(iy + dt(i - 1)))
            v = [smp.tap(yy, np.trunc(ax.padded(ix + dt(k - 1))))[0] for k in range(4)]
            rows.append(_fma3(cx[0], v[0], cx[1] * v[1]) + cx[2] * v[2] + cx[3] * v[3])
        out = cy[0] * rows[0]
        for i in range(1, 4):
            out = _fma3(cy[i], rows[i], out)
        return out.reshape(out_shape)
    x, y = ax.unnormalize(gx), ay.unnormalize(gy)
    x, y = ax.padded(x), ay.padded(y)
    if mode == "nearest":
        return smp.tap(np.rint(y), np.rint(x), first=True)[0].reshape(out_shape)
    xw, yn, nn, s, w, e = _bilinear_params(x, y, dt)
    nw_v = smp.tap(yn, xw, first=True)[0]
    ne_v = smp.tap(yn, xw + 1)[0]
    sw_v = smp.tap(yn + 1, xw)[0]
    se_v = smp.tap(yn + 1, xw + 1)[0]
    s, nn, w, e = s[:, None], nn[:, None], w[:, None], e[:, None]
    out = _fma3(se_v, nn * w, _fma3(sw_v, nn * e, _fma3(ne_v, s * w, nw_v * (s * e))))
    return out.reshape(out_shape)


def backward(grad_out, inp, grid, mode, padding, align_corners, input_grad=True):
    """The gradients of :func:`forward` with respect to ``inp`` (None unless
    ``input_grad``) and ``grid``, given ``grad_out`` (N, C, Ho, Wo).

    Returns:
        tuple: (input gradient (N, C, H, W) or None, grid gradient (N, Ho, Wo, 2)).
    """
    smp = _Sampler(inp, padding)
    dt = smp.dt
    n, c = smp.n, smp.c
    blocks = _blocks(grid, _LANES[np.dtype(dt)])
    go = np.ascontiguousarray(grad_out).reshape(n, c, -1)
    gx, gy = grid[..., 0].reshape(n, -1), grid[..., 1].reshape(n, -1)
    p = gx.shape[1]
    ax = _Axis(smp.w, padding, align_corners, dt)
    ay = _Axis(smp.h, padding, align_corners, dt)
    if p == 0 or c == 0 or n == 0:
        gin = np.zeros(inp.shape, inp.dtype) if input_grad else None
        return gin, np.zeros(grid.shape, grid.dtype)
    if mode == "nearest":
        x, y = ax.padded(ax.unnormalize(gx)), ay.padded(ay.unnormalize(gy))
        _, idx, ok = smp.tap(np.rint(y), np.rint(x), first=True)
        gin = smp.scatter([(idx, ok, go)], blocks) if input_grad else None
        return gin, np.zeros(grid.shape, grid.dtype)
    acc_x, acc_y = np.zeros((n, p), dt), np.zeros((n, p), dt)
    if mode == "bilinear":
        (x, mx), (y, my) = ax.with_grad(gx), ay.with_grad(gy)
        xw, yn, nn, s, w, e = _bilinear_params(x, y, dt)
        nw_v, i_nw, k_nw = smp.tap(yn, xw, first=True)
        ne_v, i_ne, k_ne = smp.tap(yn, xw + 1)
        sw_v, i_sw, k_sw = smp.tap(yn + 1, xw)
        se_v, i_se, k_se = smp.tap(yn + 1, xw + 1)
        gin = None
        if input_grad:
            gin = smp.scatter([(i_nw, k_nw, (s * e)[:, None] * go),
                               (i_ne, k_ne, (s * w)[:, None] * go),
                               (i_sw, k_sw, (nn * e)[:, None] * go),
                               (i_se, k_se, (nn * w)[:, None] * go)], blocks)
        dx = _fma3(se_v - sw_v, nn[:, None], (ne_v - nw_v) * s[:, None])
        dy = _fma3(se_v - ne_v, w[:, None], (sw_v - nw_v) * e[:, None])
        for ch in range(c):
            acc_x = _fma3(dx[:, ch], go[:, ch], acc_x)
            acc_y = _fma3(dy[:, ch], go[:, ch], acc_y)
    else:  # bicubic
        x, y = ax.unnormalize(gx), ay.unnormalize(gy)
        mx, my = ax.scale, ay.scale
        ix, iy = np.floor(x), np.floor(y)
        cx, cy = _cubic(x - ix, dt), _cubic(y - iy, dt)
        gcx, gcy = _cubic_grad(x - ix, dt), _cubic_grad(y - iy, dt)
        contribs, values = [], {}
        for i in range(4):
            xx = np.trunc(ax.padded(ix + dt(i - 1)))
            for j in range(4):
                v, idx, ok = smp.tap(np.trunc(ay.padded(iy + dt(j - 1))), xx)
                values[i, j] = v
                if input_grad:
                    contribs.append((idx, ok, (go * cx[i][:, None]) * cy[j][:, None]))
        gin = smp.scatter(contribs, blocks) if input_grad else None
        for ch in range(c):
            for i in range(4):
                for j in range(4):
                    vg = values[i, j][:, ch] * go[:, ch]
                    acc_x = _fma3(-(vg * gcx[i]), cy[j], acc_x)
                    acc_y = _fma3(-(vg * gcy[j]), cx[i], acc_y)
    gg = np.stack([acc_x * mx, acc_y * my], -1).reshape(grid.shape)
    return gin, gg
