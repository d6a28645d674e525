"""Issue 22, helper h22 (session 18): the compiled input transform and adjoint output
transform of F(2x2, 3x3) write each of their 16 outputs in one loop over a plane's tiles
(NOTE [ One loop over a plane's tiles ] in ember/_kernels/_numba_conv.py). Their values are
the transforms', bit for bit (NaN payloads aside): checked against the same additions in
NumPy, with zeros, infinities and NaN in the input, padding, cropped and over-sized tile
grids, and channel ranges."""

import numpy as np
import pytest


def _assert_same_bits(got, want):
    """Bit for bit, NaN payloads aside (the compiled sums may take either operand's)."""
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    assert got[~nan].tobytes() == want[~nan].tobytes()


def _reference(g, th, tw):
    """dm (16, O, N * th * tw): A dY A^T of every 2x2 tile of g (zero beyond its edge), the
    rows combined first, then the columns, as the kernel does."""
    n, o, ho, wo = g.shape
    gp = np.zeros((n, o, 2 * th, 2 * tw), g.dtype)
    gp[:, :, :min(ho, 2 * th), :min(wo, 2 * tw)] = g[:, :, :2 * th, :2 * tw]
    d0, d1 = gp[:, :, 0::2, :], gp[:, :, 1::2, :]
    dm = np.empty((16, o, n * th * tw), g.dtype)
    with np.errstate(invalid="ignore"):   # inf - inf: NaN, as in the kernel
        rows = [d0, d0 + d1, d0 - d1, -d1]
        for k, r in enumerate(rows):
            c0, c1 = r[..., 0::2], r[..., 1::2]
            for lane, v in enumerate((c0, c0 + c1, c0 - c1, -c1)):
                dm[4 * k + lane] = v.transpose(1, 0, 2, 3).reshape(o, -1)
    return dm


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 64, 24, 24), (3, 8, 25, 23), (2, 5, 7, 9), (1, 3, 1, 1)])
@pytest.mark.parametrize("extra", [0, 1])
def test_output_adjoint_gives_the_transforms_bits(numba_backend, dtype, shape, extra):
    from ember._kernels import _numba_conv

    rng = np.random.default_rng(sum(shape) + extra)
    g = rng.standard_normal(shape).astype(dtype)
    g.flat[::7] = -0.0
    g.flat[::11] = np.inf
    g.flat[::13] = np.nan
    n, o, ho, wo = shape
    th, tw = (ho + 1) // 2 + extra, (wo + 1) // 2 + extra
    dm = np.empty((16, o, n * th * tw), dtype)
    _numba_conv.winograd_output_adjoint(g, th, tw, dm, 0, o)
    _assert_same_bits(dm, _reference(g, th, tw))


def test_output_adjoint_channel_range_writes_only_its_channels(numba_backend):
    from ember._kernels import _numba_conv

    rng = np.random.default_rng(7)
    g = rng.standard_normal((2, 6, 12, 12)).astype(np.float32)
    dm = np.full((16, 6, 2 * 36), 5.0, np.float32)
    _numba_conv.winograd_output_adjoint(g, 6, 6, dm, 2, 4)
    want = _reference(g, 6, 6)
    assert dm[:, 2:4].tobytes() == want[:, 2:4].tobytes()
    assert (dm[:, :2] == 5).all() and (dm[:, 4:] == 5).all()


def _input_reference(x, ph, pw, th, tw):
    """v (16, C, N * th * tw): B^T d B of every 4x4 tile of x zero-padded by (ph, pw), the
    rows combined first, then the columns, as the kernel does."""
    n, c, h, w = x.shape
    hp, wp = 2 * th + 2, 2 * tw + 2
    xp = np.zeros((n, c, hp, wp), x.dtype)
    hh, ww = min(h, hp - ph), min(w, wp - pw)
    xp[:, :, ph:ph + hh, pw:pw + ww] = x[:, :, :hh, :ww]
    d = [xp[:, :, i:i + 2 * th:2, :] for i in range(4)]             # rows y0 + i
    v = np.empty((16, c, n * th * tw), x.dtype)
    with np.errstate(invalid="ignore"):
        rows = [d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]]
        for k, r in enumerate(rows):
            e = [r[..., j:j + 2 * tw:2] for j in range(4)]          # columns x0 + j
            for lane, t in enumerate((e[0] - e[2], e[1] + e[2], e[2] - e[1], e[1] - e[3])):
                v[4 * k + lane] = t.transpose(1, 0, 2, 3).reshape(c, -1)
    return v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(4, 32, 26, 26, 0, 0), (2, 5, 7, 9, 1, 1),
                                   (1, 3, 13, 11, 2, 1), (1, 2, 1, 1, 1, 1)])
@pytest.mark.parametrize("extra", [0, 1])
def test_input_transform_gives_the_transforms_bits(numba_backend, dtype, shape, extra):
    from ember._kernels import _numba_conv

    n, c, h, w, ph, pw = shape
    rng = np.random.default_rng(h * w + extra)
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    x.flat[::7] = -0.0
    x.flat[::11] = np.inf
    x.flat[::13] = np.nan
    th, tw = (h + 2 * ph - 1) // 2 + extra, (w + 2 * pw - 1) // 2 + extra
    v = np.full((16, c, n * th * tw), 3.0, dtype)
    _numba_conv.winograd_input(x, ph, pw, th, tw, v, c // 2, c)   # a channel range
    want = _input_reference(x, ph, pw, th, tw)
    _assert_same_bits(v[:, c // 2:], want[:, c // 2:])
    assert (v[:, :c // 2] == 3).all()
