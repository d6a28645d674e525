"""CUDA's own kernels (NOTE [ CUDA kernels ], [ cuDNN graphs ], [ Fused CUDA rows ]) against
PyTorch on the same GPU: convolutions and attention through cuDNN, fused softmax and layer
norm. Skipped without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU")

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - GPU machines have both
    pytest.skip("needs torch with CUDA", allow_module_level=True)

TOL = {"float32": 2e-3, "float16": 2e-2, "bfloat16": 6e-2}


def _pair(shape, dtype, seed, requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    e = ember.tensor(a).to("cuda", getattr(ember, dtype)).requires_grad_(requires_grad)
    t = torch.tensor(a).to("cuda", getattr(torch, dtype)).requires_grad_(requires_grad)
    return e, t


def _close(e, t, dtype, scale=1.0):
    a = e.detach().float().cpu().numpy()
    b = t.detach().float().cpu().numpy()
    tol = TOL[dtype] * max(1.0, scale)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("cfg", [
    dict(x=(4, 16, 20, 20), w=(32, 16, 3, 3), stride=1, padding=1),
    dict(x=(2, 8, 17, 15), w=(16, 8, 3, 3), stride=2, padding=1, dilation=1),
    dict(x=(2, 8, 16, 16), w=(8, 8, 1, 1), stride=1, padding=0),
    dict(x=(2, 3, 32, 32), w=(16, 3, 7, 7), stride=2, padding=3),
    dict(x=(2, 16, 12, 12), w=(16, 4, 3, 3), stride=1, padding=2, dilation=2, groups=4),
], ids=["3x3", "strided", "1x1", "stem7x7", "grouped_dilated"])
def test_conv2d_matches_torch(dtype, cfg):
    cfg = dict(cfg)
    x, tx = _pair(cfg.pop("x"), dtype, 0)
    w, tw = _pair(cfg.pop("w"), dtype, 1)
    y = ember.nn.functional.conv2d(x, w, **cfg)
    ty = torch.nn.functional.conv2d(tx, tw, **cfg)
    _close(y, ty, dtype)
    g, tg = _pair(tuple(ty.shape), dtype, 2, requires_grad=False)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    _close(x.grad, tx.grad, dtype)
    _close(w.grad, tw.grad, dtype, scale=4)


def test_conv2d_takes_cudnn():
    from ember.cuda import _cudnn

    if not _cudnn.enabled():
        pytest.skip(f"cuDNN frontend unavailable: {_cudnn._import_error}")
    x, _ = _pair((2, 16, 8, 8), "float32", 0)
    w, _ = _pair((16, 16, 3, 3), "float32", 1)
    ember.nn.functional.conv2d(x, w, padding=1).sum().backward()
    kinds = {k[0]: p is not None for k, p in _cudnn._plans.items() if k[1] == (2, 16, 8, 8)}
    assert kinds.get("fprop"), _cudnn.refused
    assert kinds.get("dgrad"), _cudnn.refused
    assert kinds.get("wgrad"), _cudnn.refused


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_conv1d_conv3d_transpose_match_torch(dtype):
    x, tx = _pair((2, 4, 19), dtype, 0)
    w, tw = _pair((6, 4, 5), dtype, 1)
    _close(ember.nn.functional.conv1d(x, w, padding=2, stride=2),
           torch.nn.functional.conv1d(tx, tw, padding=2, stride=2), dtype)
    x3, tx3 = _pair((1, 2, 6, 7, 8), dtype, 2)
    w3, tw3 = _pair((3, 2, 3, 3, 3), dtype, 3)
    _close(ember.nn.functional.conv3d(x3, w3, padding=1),
           torch.nn.functional.conv3d(tx3, tw3, padding=1), dtype)
    xt, txt = _pair((2, 8, 9, 9), dtype, 4)
    wt, twt = _pair((8, 4, 3, 3), dtype, 5)
    _close(ember.nn.functional.conv_transpose2d(xt, wt, stride=2, padding=1),
           torch.nn.functional.conv_transpose2d(txt, twt, stride=2, padding=1), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_torch(dtype, causal):
    q, tq = _pair((2, 4, 64, 32), dtype, 0)
    k, tk = _pair((2, 4, 80 if not causal else 64, 32), dtype, 1)
    v, tv = _pair((2, 4, 80 if not causal else 64, 32), dtype, 2)
    F, TF = ember.nn.functional, torch.nn.functional
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    to = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    _close(o, to, dtype)
    g, tg = _pair(tuple(to.shape), dtype, 3, requires_grad=False)
    (o * g).sum().backward()
    (to * tg).sum().backward()
    for a, b in ((q.grad, tq.grad), (k.grad, tk.grad), (v.grad, tv.grad)):
        _close(a, b, dtype, scale=2)


def test_sdpa_takes_cudnn():
    from ember.cuda import _cudnn

    if not _cudnn.enabled():
        pytest.skip(f"cuDNN frontend unavailable: {_cudnn._import_error}")
    q, _ = _pair((1, 2, 16, 64), "bfloat16", 0)
    o = ember.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert o.grad_fn is not None and "Cudnn" in type(o.grad_fn).__name__, _cudnn.refused
    o.sum().backward()
    assert any(k[0] == "sdpa_bwd" and p is not None for k, p in _cudnn._plans.items()), \
        _cudnn.refused


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("n", [7, 768, 5000])
def test_softmax_layer_norm_match_torch(dtype, n):
    x, tx = _pair((6, n), dtype, 0)
    F, TF = ember.nn.functional, torch.nn.functional
    for fe, ft in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
        _close(fe(x, -1), ft(tx, -1), dtype)
    w, tw = _pair((n,), dtype, 1)
    b, tb = _pair((n,), dtype, 2)
    y = F.layer_norm(x, (n,), w, b)
    ty = TF.layer_norm(tx, (n,), tw, tb)
    _close(y, ty, dtype)
    g, tg = _pair((6, n), dtype, 3, requires_grad=False)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    _close(x.grad, tx.grad, dtype, scale=2)
    _close(w.grad, tw.grad, dtype, scale=2)
    _close(b.grad, tb.grad, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape", [(4, 3, 5, 6), (8, 16), (2, 64, 1, 1), (3, 4, 2, 3, 2)])
def test_batch_norm_matches_torch(dtype, shape):
    c = shape[1]
    x, tx = _pair(shape, dtype, 0)
    w, tw = _pair((c,), "float32", 1)
    b, tb = _pair((c,), "float32", 2)
    rm, trm = _pair((c,), "float32", 3, requires_grad=False)
    rv = ember.ones(c, device="cuda")
    trv = torch.ones(c, device="cuda")
    F, TF = ember.nn.functional, torch.nn.functional
    y = F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.2)
    ty = TF.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.2)
    _close(y, ty, dtype)
    _close(rm, trm, "float32")
    _close(rv, trv, "float32")
    g, tg = _pair(shape, dtype, 4, requires_grad=False)
    (y.float() * g.float()).sum().backward()
    (ty.float() * tg.float()).sum().backward()
    _close(x.grad, tx.grad, dtype, scale=2)
    _close(w.grad, tw.grad, "float32", scale=4)
    _close(b.grad, tb.grad, "float32", scale=4)
    ye = F.batch_norm(x, rm, rv, w, b, training=False)
    tye = TF.batch_norm(tx, trm, trv, tw, tb, training=False)
    _close(ye, tye, dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_matches_torch(dtype, reduction):
    x, tx = _pair((37, 1000), dtype, 0)
    y = np.random.default_rng(1).integers(0, 1000, 37)
    y[3] = -100
    ey, ty = ember.tensor(y).cuda(), torch.tensor(y).cuda()
    loss = ember.nn.functional.cross_entropy(x, ey, reduction=reduction)
    tloss = torch.nn.functional.cross_entropy(tx, ty, reduction=reduction)
    _close(loss, tloss, dtype)
    loss.sum().backward()
    tloss.sum().backward()
    _close(x.grad, tx.grad, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("act", ["gelu", "gelu_tanh", "silu"])
def test_activations_match_torch(dtype, act):
    x, tx = _pair((5, 300), dtype, 0)
    F, TF = ember.nn.functional, torch.nn.functional
    if act == "silu":
        y, ty = F.silu(x), TF.silu(tx)
    else:
        mode = "tanh" if act == "gelu_tanh" else "none"
        y, ty = F.gelu(x, approximate=mode), TF.gelu(tx, approximate=mode)
    _close(y, ty, dtype)
    g, tg = _pair((5, 300), dtype, 1, requires_grad=False)
    (y * g).sum().backward()
    (ty * tg).sum().backward()
    _close(x.grad, tx.grad, dtype)


def test_float32_matmul_precision_reaches_cublas():
    from cupy._core import _routines_linalg as linalg

    old = ember.get_float32_matmul_precision()
    try:
        ember.set_float32_matmul_precision("high")
        assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_TF32
        a, ta = _pair((256, 256), "float32", 0, requires_grad=False)
        torch.backends.cuda.matmul.allow_tf32 = True
        _close(a @ a, ta @ ta, "float32", scale=4)
        ember.backends.cuda.matmul.allow_tf32 = False
        assert linalg.get_compute_type(np.float32) != linalg.COMPUTE_TYPE_TF32
    finally:
        ember.set_float32_matmul_precision(old)
        torch.backends.cuda.matmul.allow_tf32 = False


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_relu_backward_and_layer_norm_inf_rows_match_torch(dtype):
    x, tx = _pair((4, 33), dtype, 0)
    F, TF = ember.nn.functional, torch.nn.functional
    (F.relu(x) * 2).sum().backward()
    (TF.relu(tx) * 2).sum().backward()
    _close(x.grad, tx.grad, dtype)
    a = np.ones((2, 5), np.float32)
    a[0, 1] = np.inf
    e = ember.tensor(a).to("cuda", getattr(ember, dtype))
    t = torch.tensor(a).to("cuda", getattr(torch, dtype))
    np.testing.assert_array_equal(
        np.isnan(ember.native_layer_norm(e, (5,), None, None, 1e-5)[1].float().cpu().numpy()),
        np.isnan(torch.native_layer_norm(t, (5,), None, None, 1e-5)[1].float().cpu().numpy()))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_relu_forward_kernel_treats_negative_zero_and_nan_as_torch(dtype):
    from ember._kernels import _cuda

    a = np.array([-0.0, np.nan, -1.5, 2.0, 0.0, -np.inf, np.inf] * 5, np.float32)
    e = ember.tensor(a).to("cuda", getattr(ember, dtype))
    t = torch.tensor(a).to("cuda", getattr(torch, dtype))
    assert _cuda.relu(e._data) is not None  # the one-launch kernel covers this dtype
    for got in (ember.relu(e), e.clone().relu_(), ember.nn.ReLU(inplace=True)(e.clone())):
        want = torch.relu(t)
        g, w = got.float().cpu().numpy(), want.float().cpu().numpy()
        np.testing.assert_array_equal(g, w)
        finite = ~np.isnan(w)  # (a NaN's sign bit is not a value: torch's bfloat16 sets it)
        np.testing.assert_array_equal(np.signbit(g[finite]), np.signbit(w[finite]))
    ints = ember.tensor([-2, 3], device="cuda")
    assert ember.relu(ints).cpu().tolist() == [0, 3]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_products_and_amp_linear_match_torch(dtype):
    a, ta = _pair((3, 64, 96), dtype, 0)
    b, tb = _pair((96, 48), dtype, 1)
    _close(a @ b, ta @ tb, dtype, scale=4)
    lin = ember.nn.Linear(96, 32).cuda()
    tlin = torch.nn.Linear(96, 32).cuda()
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(lin.weight.detach().cpu().numpy()))
        tlin.bias.copy_(torch.tensor(lin.bias.detach().cpu().numpy()))
    x, tx = _pair((4, 96), "float32", 2)
    with ember.autocast("cuda", dtype=getattr(ember, dtype)):
        y = lin(x)
    with torch.autocast("cuda", dtype=getattr(torch, dtype)):
        ty = tlin(tx)
    assert y.dtype == getattr(ember, dtype)
    _close(y, ty, dtype, scale=4)
    y.float().sum().backward()
    ty.float().sum().backward()
    _close(lin.weight.grad, tlin.weight.grad, dtype, scale=4)
    _close(x.grad, tx.grad, dtype, scale=4)


def test_fused_attention_forward_mode_matches_torch():
    q, tq = _pair((1, 2, 16, 32), "float16", 0, requires_grad=False)
    d, td = _pair((1, 2, 16, 32), "float16", 1, requires_grad=False)

    def f(F):
        return lambda x: F.scaled_dot_product_attention(x, x, x, is_causal=True)

    _, e = ember.func.jvp(f(ember.nn.functional), (q,), (d,))
    # torch's own cuDNN attention has no forward-mode formula: its math kernel is the
    # reference
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):
        _, t = torch.func.jvp(f(torch.nn.functional), (tq,), (td,))
    _close(e, t, "float16", scale=4)
