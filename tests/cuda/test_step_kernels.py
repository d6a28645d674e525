"""The training-step CUDA kernels (NOTE [ Training-step CUDA kernels ] in
ember/_kernels/_cuda.py), GEMMs straight through cuBLAS (``gemm`` in
ember/cuda/_kernels.py) and deferred device checks (NOTE [ Deferred device checks ])
against PyTorch on the same GPU. Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - GPU machines have both
    pytest.skip("needs torch with CUDA", allow_module_level=True)


def _pair(shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (ember.tensor(a).to("cuda", getattr(ember, dtype)),
            torch.tensor(a).to("cuda", getattr(torch, dtype)))


def _np(t):
    return t.detach().float().cpu().numpy()


# -- half-precision GEMMs ------------------------------------------------------------------------

_LAYOUTS = {
    "2d": (lambda a: a, lambda b: b, (33, 40), (40, 17)),
    "a_t": (lambda a: a.t(), lambda b: b, (40, 33), (40, 17)),
    "b_t": (lambda a: a, lambda b: b.t(), (33, 40), (17, 40)),
    "both_t": (lambda a: a.t(), lambda b: b.t(), (40, 33), (17, 40)),
    "sliced": (lambda a: a[:, 3:35], lambda b: b[::2], (33, 40), (64, 9)),
    "stack_by_matrix": (lambda a: a, lambda b: b, (3, 5, 33, 40), (40, 17)),
    "stacks": (lambda a: a, lambda b: b, (6, 33, 40), (6, 40, 17)),
    "broadcast_stacks": (lambda a: a, lambda b: b, (4, 1, 33, 40), (1, 3, 40, 17)),
    "matrix_by_stack": (lambda a: a, lambda b: b, (33, 40), (5, 40, 17)),
    "stack_transposed": (lambda a: a.transpose(-1, -2), lambda b: b, (6, 40, 33), (6, 40, 17)),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
def test_matmul_matches_torch(dtype, layout):
    fa, fb, sa, sb = _LAYOUTS[layout]
    a, ta = _pair(sa, dtype, 0)
    b, tb = _pair(sb, dtype, 1)
    y, ty = fa(a) @ fb(b), fa(ta) @ fb(tb)
    assert y.dtype == getattr(ember, dtype) and tuple(y.shape) == tuple(ty.shape)
    tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-5
    np.testing.assert_allclose(_np(y), _np(ty), rtol=tol, atol=tol * np.abs(_np(ty)).max())


def test_float32_gemm_follows_the_matmul_precision():
    from ember.cuda import _kernels

    a = ember.tensor(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32),
                     device="cuda")
    exact = (a.double() @ a.double()).float().cpu().numpy()
    before = ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("highest")
        full = _kernels.gemm(a._data, a._data).get()
        ember.set_float32_matmul_precision("high")
        tf32 = _kernels.gemm(a._data, a._data).get()
        forced = _kernels.gemm(a._data, a._data, exact=True).get()
    finally:
        ember.set_float32_matmul_precision(before)
    full_err, tf32_err = np.abs(full - exact).max(), np.abs(tf32 - exact).max()
    assert full_err < 1e-4 < tf32_err  # TF32 keeps 10 mantissa bits
    assert np.abs(forced - exact).max() < 1e-4


def test_gemm_runs_on_the_current_stream():
    from ember.cuda import _kernels

    a = ember.randn(256, 256, device="cuda")
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        y = _kernels.gemm(a._data, a._data)
    s.synchronize()
    np.testing.assert_allclose(y.get(), (a.cpu() @ a.cpu()).numpy(), rtol=1e-4, atol=1e-3)


def test_gemm_is_taken_for_bfloat16():
    from ember.cuda import _kernels

    a, _ = _pair((8, 16), "bfloat16", 0)
    b, _ = _pair((16, 4), "bfloat16", 1)
    y = _kernels.gemm(a._data, b._data)
    assert y is not None and y.dtype == a._data.dtype
    ref = a.float() @ b.float()
    np.testing.assert_allclose(y.astype(np.float32).get(), _np(ref), rtol=2e-2, atol=5e-2)


def test_gemm_empty_inner_dim_gives_zeros():
    from ember.cuda import _kernels

    a, _ = _pair((3, 0), "float16", 0)
    b, _ = _pair((0, 5), "float16", 1)
    y = _kernels.gemm(a._data, b._data)
    assert y.shape == (3, 5) and not bool(y.any())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_linear_forward_and_backward_match_torch(dtype):
    x, tx = _pair((4, 7, 32), dtype, 0)
    w, tw = _pair((24, 32), dtype, 1)
    b, tb = _pair((24,), dtype, 2)
    for t in (x, w, b, tx, tw, tb):
        t.requires_grad_(True)
    y = ember.nn.functional.linear(x, w, b)
    ty = torch.nn.functional.linear(tx, tw, tb)
    np.testing.assert_allclose(_np(y), _np(ty), rtol=2e-2, atol=5e-2)
    y.float().square().sum().backward()
    ty.float().square().sum().backward()
    for e, t in ((x, tx), (w, tw), (b, tb)):
        assert e.grad.dtype == e.dtype
        np.testing.assert_allclose(_np(e.grad), _np(t.grad), rtol=3e-2,
                                   atol=3e-2 * np.abs(_np(t.grad)).max())


# -- max pooling ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("cfg", [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2, stride=2),
    dict(kernel_size=3, stride=1, padding=1, dilation=2),
    dict(kernel_size=3, stride=2, ceil_mode=True),
], ids=["resnet_stem", "2x2", "dilated", "ceil"])
def test_max_pool2d_values_indices_and_grad_match_torch(dtype, cfg):
    x, tx = _pair((2, 3, 13, 11), dtype, 0)
    x.requires_grad_(True)
    tx.requires_grad_(True)
    y, i = ember.nn.functional.max_pool2d(x, return_indices=True, **cfg)
    ty, ti = torch.nn.functional.max_pool2d(tx, return_indices=True, **cfg)
    np.testing.assert_array_equal(_np(y), _np(ty))
    np.testing.assert_array_equal(i.cpu().numpy(), ti.cpu().numpy())
    y.float().sum().backward()
    ty.float().sum().backward()
    np.testing.assert_array_equal(_np(x.grad), _np(tx.grad))


def test_max_pool2d_nan_and_minus_inf_windows_as_torch():
    a = np.full((1, 1, 4, 4), -np.inf, np.float32)
    a[0, 0, 0, 1] = np.nan
    a[0, 0, 1, 0] = np.nan
    a[0, 0, 2, 2] = 5.0
    y, i = ember.nn.functional.max_pool2d(ember.tensor(a).cuda(), 2, 2, return_indices=True)
    ty, ti = torch.nn.functional.max_pool2d(torch.tensor(a).cuda(), 2, 2,
                                            return_indices=True)
    np.testing.assert_array_equal(_np(y), _np(ty))
    np.testing.assert_array_equal(i.cpu().numpy(), ti.cpu().numpy())


def test_max_pool2d_runs_without_a_device_sync():
    import cupyx

    x, _ = _pair((2, 4, 16, 16), "float32", 0)
    ember.cuda.synchronize()
    with cupyx.allow_synchronize(False):
        ember.nn.functional.max_pool2d(x, 3, 2, 1)


# -- batch norm's running statistics -------------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_match_torch(momentum):
    e = ember.nn.BatchNorm2d(6, momentum=momentum).cuda()
    t = torch.nn.BatchNorm2d(6, momentum=momentum).cuda()
    for seed in range(3):
        x, tx = _pair((4, 6, 5, 5), "float32", seed)
        e(x * (seed + 1) + seed)
        t(tx * (seed + 1) + seed)
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(_np(getattr(e, name)), _np(getattr(t, name)), rtol=1e-5,
                                   atol=1e-6)
    assert int(e.num_batches_tracked) == 3


def test_batch_norm_running_stats_bump_versions():
    bn = ember.nn.BatchNorm2d(3).cuda()
    v0 = bn.running_mean._version, bn.running_var._version
    bn(ember.randn(2, 3, 4, 4, device="cuda"))
    assert bn.running_mean._version > v0[0] and bn.running_var._version > v0[1]


# -- deferred device checks ----------------------------------------------------------------------


def test_embedding_index_check_waits_for_the_next_sync():
    import cupyx

    w = ember.randn(10, 4, device="cuda")
    idx = ember.tensor([1, 12], device="cuda")
    ember.cuda.synchronize()
    with cupyx.allow_synchronize(False):
        out = ember.nn.functional.embedding(idx, w)  # no host wait here
    with pytest.raises(IndexError, match="index out of range in self"):
        out.sum().item()
    ember.nn.functional.embedding(ember.tensor([1, 2], device="cuda"), w).sum().item()


def test_cross_entropy_target_check_names_the_target_at_sync():
    x = ember.randn(3, 5, device="cuda")
    loss = ember.nn.functional.cross_entropy(x, ember.tensor([0, 7, 1], device="cuda"))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        ember.cuda.synchronize()
    del loss


# -- dtype conversions ---------------------------------------------------------------------------


@pytest.mark.parametrize("pair", [("float32", "bfloat16"), ("float32", "float16"),
                                  ("bfloat16", "float32"), ("float16", "float32")])
def test_half_conversions_match_torch_bit_for_bit(pair):
    src, dst = pair
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.standard_normal(1000).astype(np.float32) * 100,
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 65504, 70000,
                                  1.00390625, 1.01171875, 3e38], np.float32)])
    e = ember.tensor(a).to("cuda").to(getattr(ember, src))
    t = torch.tensor(a).to("cuda").to(getattr(torch, src))
    ec, tc = e.to(getattr(ember, dst)), t.to(getattr(torch, dst))
    assert ec.dtype == getattr(ember, dst)
    np.testing.assert_array_equal(ec.float().cpu().numpy(), tc.float().cpu().numpy())


def test_conversion_of_strided_arrays_keeps_the_generic_path():
    from ember._kernels import _cuda

    x = ember.randn(4, 6, device="cuda")
    assert _cuda.convert(x.t()._data, np.dtype(np.float16)) is None
    y = x.t().half()
    np.testing.assert_array_equal(y.float().cpu().numpy(),
                                  x.cpu().t().half().float().numpy())


# -- half-precision sums -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("dim,keepdim", [((0,), False), ((0, 1), True), ((-1,), False),
                                         ((1, 2), True), ((1,), False)])
def test_sums_match_torch(dtype, dim, keepdim):
    x, tx = _pair((6, 7, 300), dtype, 0)
    y, ty = x.sum(dim, keepdim=keepdim), tx.sum(dim, keepdim=keepdim)
    assert y.dtype == x.dtype and tuple(y.shape) == tuple(ty.shape)
    half = dtype in ("float16", "bfloat16")
    np.testing.assert_allclose(_np(y), _np(ty), rtol=2e-2 if half else 1e-5,
                               atol=0.5 if half else 1e-4)


def test_float32_sum_stays_exact_under_tf32():
    x, tx = _pair((4096, 3), "float32", 0)
    x = x + 1000.0  # large values: TF32's 10 mantissa bits would lose their fractions
    before = ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("high")
        y = x.sum(0)
    finally:
        ember.set_float32_matmul_precision(before)
    want = (tx.double() + 1000.0).sum(0)
    np.testing.assert_allclose(y.double().cpu().numpy(), want.cpu().numpy(), rtol=1e-6)


def test_sums_of_empty_arrays_take_the_generic_path():
    x, tx = _pair((0, 5), "float32", 0)
    assert tuple(x.sum(0).shape) == (5,) and not x.sum(0).cpu().numpy().any()
    assert tuple(x.sum(1).shape) == tuple(tx.sum(1).shape) == (0,)


def test_gemm_sum_takes_the_gemm_for_an_end_of_the_dims():
    from ember.cuda import _kernels

    x, _ = _pair((8, 16), "bfloat16", 0)
    assert _kernels.gemm_sum(x._data, (0,), False) is not None
    assert _kernels.gemm_sum(x._data, (1,), True) is not None
    x3, _ = _pair((4, 5, 6), "bfloat16", 0)
    assert _kernels.gemm_sum(x3._data, (1,), False) is None  # a middle dim: the generic path


# -- multi-tensor optimizer steps ----------------------------------------------------------------


def _params(seed):
    rng = np.random.default_rng(seed)
    shapes = [(70000,), (3, 5), (1,), (64, 33), (200000,)]
    return [ember.tensor(rng.standard_normal(s).astype(np.float32), device="cuda",
                         requires_grad=True) for s in shapes]


def _run(make_opt, params, steps=3):
    opts = make_opt(params)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = ember.full_like(p, 0.01 * (i + 1) * (k + 1)) + p.detach() * 0.1
        for o in opts:
            o.step()
    return [p.detach().cpu().numpy() for p in params]


@pytest.mark.parametrize("kind", ["adam", "adamw", "sgd_momentum", "sgd_nesterov", "sgd"])
def test_multi_tensor_steps_equal_per_parameter_ones_bit_for_bit(kind):
    def make(group):
        def opts(params):
            lists = [params] if group else [[p] for p in params]
            if kind == "adam":
                return [ember.optim.Adam(ps, lr=1e-2, weight_decay=0.1) for ps in lists]
            if kind == "adamw":
                return [ember.optim.AdamW(ps, lr=1e-2) for ps in lists]
            mom = 0.0 if kind == "sgd" else 0.9
            return [ember.optim.SGD(ps, lr=0.1, momentum=mom, weight_decay=1e-4,
                                    nesterov=kind == "sgd_nesterov") for ps in lists]
        return opts

    together = _run(make(True), _params(0))
    alone = _run(make(False), _params(0))
    for a, b in zip(together, alone):
        np.testing.assert_array_equal(a, b)


def test_multi_tensor_adam_launches_once_without_a_sync():
    import cupyx

    from ember.optim import _fused_cuda

    params = _params(1)
    opt = ember.optim.AdamW(params, lr=1e-3)
    for p in params:
        p.grad = ember.ones_like(p)
    opt.step()  # compiles
    calls = []
    orig = _fused_cuda._launch
    _fused_cuda._launch = lambda *a: calls.append(a[0]) or orig(*a)
    try:
        ember.cuda.synchronize()
        with cupyx.allow_synchronize(False):
            opt.step()
    finally:
        _fused_cuda._launch = orig
    assert calls == ["ember_adam_multi"]
    assert all(int(opt.state[p]["step"]) == 2 for p in params)
