"""grid_sample and affine_grid with PyTorch's CPU arithmetic (NOTE [ Grid sampling as
PyTorch's CPU kernel ] in ember/_ops/_grid_sample_2d.py): outputs and gradients bit for bit
on random inputs, the border rule of the grid's gradient, and the spatial transformer
tutorial's gradients, whose identity start puts every point on a pixel centre."""

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")


def _run(lib, inp, grid, gout, **kw):
    x = lib.from_numpy(inp.copy()).requires_grad_(True)
    g = lib.from_numpy(grid.copy()).requires_grad_(True)
    if not grid.flags.c_contiguous:  # the same strides on both sides
        g = lib.from_numpy(np.ascontiguousarray(grid.transpose(0, 2, 1, 3)).copy())
        g = g.transpose(1, 2).detach().requires_grad_(True)
    out = lib.nn.functional.grid_sample(x, g, **kw)
    out.backward(lib.from_numpy(gout))
    return out.detach().numpy(), x.grad.numpy(), g.grad.numpy()


def _case(rng, dtype, nd=2, on_centres=False, strided=False):
    sp = tuple(int(v) for v in rng.integers(1, 9, nd))
    osp = tuple(int(v) for v in rng.integers(1, 12, nd))
    inp = rng.standard_normal((2, 3) + sp).astype(dtype)
    grid = rng.uniform(-1.3, 1.3, (2,) + osp + (nd,)).astype(dtype)
    if on_centres:  # quarters: whole pixels, borders and halfway points
        grid = (np.round(grid * 4) / 4).astype(dtype)
    if strided:
        grid = np.ascontiguousarray(grid.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    gout = rng.standard_normal((2, 3) + osp).astype(dtype)
    return inp, grid, gout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(3))
def test_grid_sample_2d_bits_as_torch(dtype, seed):
    rng = np.random.default_rng(seed)
    for on_centres, strided in ((False, False), (True, False), (False, True)):
        inp, grid, gout = _case(rng, dtype, 2, on_centres, strided)
        for mode, pad, ac in itertools.product(MODES, PADDINGS, (False, True)):
            kw = dict(mode=mode, padding_mode=pad, align_corners=ac)
            theirs, mine = _run(torch, inp, grid, gout, **kw), _run(ember, inp, grid, gout, **kw)
            for what, a, b in zip(("output", "input grad", "grid grad"), theirs, mine):
                msg = f"{what} {kw} {inp.shape} {grid.shape}"
                if strided and mode == "bicubic" and what == "output":
                    # torch's loop over a strided grid compiles the bicubic sum with other
                    # fused multiply-adds: equal to rounding there
                    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5, err_msg=msg)
                else:
                    np.testing.assert_array_equal(b, a, err_msg=msg)


def test_grid_sample_3d_forward_bits_and_gradients():
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64):
        inp, grid, gout = _case(rng, dtype, 3, on_centres=True)
        for mode, pad, ac in itertools.product(("bilinear", "nearest"), PADDINGS,
                                               (False, True)):
            kw = dict(mode=mode, padding_mode=pad, align_corners=ac)
            theirs, mine = _run(torch, inp, grid, gout, **kw), _run(ember, inp, grid, gout, **kw)
            np.testing.assert_array_equal(mine[0], theirs[0], err_msg=str(kw))
            # the gradients' last bits follow the scalar kernel's own order: values only
            np.testing.assert_allclose(mine[1], theirs[1], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(mine[2], theirs[2], rtol=1e-4, atol=1e-4,
                                       err_msg=str(kw))


@pytest.mark.parametrize("nd", [2, 3])
def test_nearest_grid_gradient_is_zero_not_absent(nd):
    x = ember.randn((1, 2) + (3,) * nd, requires_grad=True)
    g = (ember.rand((1,) + (2,) * nd + (nd,)) * 2 - 1).requires_grad_(True)
    ember.nn.functional.grid_sample(x, g, mode="nearest", align_corners=False).sum().backward()
    assert g.grad is not None and not g.grad.any()


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("pad", ["border", "reflection"])
def test_grid_gradient_is_zero_on_the_clipped_border(nd, pad):
    # a point exactly on the last pixel's centre counts as clipped: no gradient, as torch's
    res = []
    for lib in (torch, ember):
        x = lib.arange(float(2 * 4 ** nd)).reshape((1, 2) + (4,) * nd)
        g = lib.full((1,) + (1,) * nd + (nd,), 1.0, requires_grad=True)
        lib.nn.functional.grid_sample(x, g, padding_mode=pad, align_corners=True).sum() \
            .backward()
        res.append(g.grad.numpy())
    np.testing.assert_array_equal(res[1], res[0])
    assert not res[1].any()


@pytest.mark.parametrize("size", [(3, 1, 28, 28), (2, 1, 5, 6, 7)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_bits_and_theta_gradient(size, align_corners):
    rng = np.random.default_rng(0)
    nd = len(size) - 2
    theta = rng.standard_normal((size[0], nd, nd + 1)).astype(np.float32)
    gout = rng.standard_normal((size[0],) + size[2:] + (nd,)).astype(np.float32)
    res = []
    for lib in (torch, ember):
        t = lib.from_numpy(theta.copy()).requires_grad_(True)
        grid = lib.nn.functional.affine_grid(t, size, align_corners=align_corners)
        grid.backward(lib.from_numpy(gout))
        res.append((grid.detach().numpy(), t.grad.numpy()))
    np.testing.assert_array_equal(res[1][0], res[0][0])
    np.testing.assert_allclose(res[1][1], res[0][1], rtol=1e-5, atol=1e-5)


def _transformer_grads(lib):
    # the spatial transformer tutorial's localisation head starts at the identity map
    lib.manual_seed(0)
    nn, F = lib.nn, lib.nn.functional
    loc = nn.Sequential(nn.Conv2d(1, 8, 7), nn.MaxPool2d(2, 2), nn.ReLU(True),
                        nn.Conv2d(8, 10, 5), nn.MaxPool2d(2, 2), nn.ReLU(True))
    fc = nn.Sequential(nn.Linear(90, 32), nn.ReLU(True), nn.Linear(32, 6))
    fc[2].weight.data.zero_()
    fc[2].bias.data.copy_(lib.tensor([1.0, 0, 0, 0, 1, 0]))
    x = lib.randn(4, 1, 28, 28)
    theta = fc(loc(x).view(-1, 90)).view(-1, 2, 3)
    y = F.grid_sample(x, F.affine_grid(theta, x.size(), align_corners=False),
                      align_corners=False)
    (y * lib.randn(y.shape)).sum().backward()
    return fc[2].weight.grad.numpy(), fc[2].bias.grad.numpy()


def test_spatial_transformer_identity_start_gradients_as_torch():
    for mine, theirs in zip(_transformer_grads(ember), _transformer_grads(torch)):
        # (before the kernel: a quarter of their size apart; now the convolutions' rounding)
        np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=1e-4)


def test_forward_mode_and_second_derivatives_through_the_kernel():
    import ember.autograd.forward_ad as fwAD

    ember.manual_seed(0)
    x = ember.randn(1, 2, 4, 5, dtype=ember.float64)
    g = ember.rand(1, 3, 3, 2, dtype=ember.float64) * 1.6 - 0.8
    v = ember.randn(g.shape, dtype=ember.float64)
    with fwAD.dual_level():
        out = ember.nn.functional.grid_sample(x, fwAD.make_dual(g, v), align_corners=False)
        tangent = fwAD.unpack_dual(out).tangent
    gg = g.clone().requires_grad_(True)
    y = ember.nn.functional.grid_sample(x, gg, align_corners=False)
    w = ember.randn(y.shape, dtype=ember.float64)
    grad, = ember.autograd.grad((y * w).sum(), gg, create_graph=True)
    # <J v, w> == <v, J^T w>
    assert abs(float((tangent * w).sum() - (v * grad).sum())) < 1e-10
    assert grad.requires_grad  # create_graph: built from differentiable ops
