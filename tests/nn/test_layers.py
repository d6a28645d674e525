"""Layers against PyTorch: same weights, same inputs, same outputs and gradients."""

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import HAS_TORCH
from tests.nn._compare import compare, copy_weights

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _x(*shape, seed=0, dtype=np.float64):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def _pair(name, *args, **kwargs):
    import torch

    t = getattr(torch.nn, name)(*args, **kwargs).double()
    e = getattr(nn, name)(*args, **kwargs).double()
    copy_weights(e, t)
    return e, t


def _check_module(name, args, kwargs, x, device=None, **tol):
    e, t = _pair(name, *args, **kwargs)
    if device is not None:
        e.to(device)
    compare(e, t, [x], ember_params=list(e.parameters()), torch_params=list(t.parameters()),
            device=device, **tol)
    return e, t


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("Linear", (5, 3), {}, (4, 5)),
    ("Linear", (5, 3), {"bias": False}, (2, 4, 5)),
    ("Conv1d", (4, 6, 3), {"stride": 2, "padding": 1, "groups": 2}, (2, 4, 11)),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, (2, 3, 7, 8)),
    ("Conv2d", (3, 4, (3, 2)), {"stride": (2, 1), "padding_mode": "reflect", "padding": 1},
     (2, 3, 7, 8)),
    ("Conv2d", (3, 4, 2), {"padding": "same"}, (1, 3, 5, 5)),
    ("Conv3d", (2, 3, 2), {"stride": 2}, (1, 2, 5, 5, 5)),
    ("ConvTranspose1d", (4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     (2, 4, 6)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "groups": 2}, (2, 4, 5, 5)),
    ("BatchNorm1d", (4,), {}, (8, 4)),
    ("BatchNorm2d", (3,), {"momentum": None}, (4, 3, 5, 5)),
    ("LayerNorm", ((4, 5),), {}, (3, 4, 5)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)),
    ("InstanceNorm2d", (3,), {"affine": True}, (2, 3, 4, 4)),
    ("RMSNorm", (5,), {}, (3, 5)),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, (2, 3, 8, 7)),
    ("MaxPool1d", (2,), {"dilation": 2}, (2, 3, 9)),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False,
                         "ceil_mode": True}, (2, 3, 8, 7)),
    ("AvgPool1d", (3,), {"stride": 2}, (2, 3, 9)),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
    ("AdaptiveAvgPool2d", (1,), {}, (2, 3, 4, 4)),
    ("AdaptiveMaxPool2d", ((2, 3),), {}, (2, 3, 7, 5)),
    ("ReflectionPad2d", ((1, 2, 0, 1),), {}, (2, 3, 4, 4)),
    ("ReplicationPad1d", (2,), {}, (2, 3, 4)),
    ("CircularPad2d", (1,), {}, (2, 3, 4, 4)),
    ("ZeroPad2d", ((1, 0, 2, -1),), {}, (2, 3, 4, 4)),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4, 4)),
])
def test_module_matches_torch(name, args, kwargs, shape, device):
    _check_module(name, args, kwargs, _x(*shape), device=device)


def test_batchnorm_running_stats_match_torch():
    e, t = _pair("BatchNorm2d", 3)
    import torch

    for s in range(3):
        x = _x(4, 3, 2, 2, seed=s)
        e(x)
        t(torch.from_numpy(x.numpy().copy()))
    assert np.allclose(e.running_mean.numpy(), t.running_mean.numpy())
    assert np.allclose(e.running_var.numpy(), t.running_var.numpy())
    assert e.num_batches_tracked.item() == 3
    e.eval()
    t.eval()
    compare(e, t, [_x(2, 3, 2, 2, seed=9)])


@pytest.mark.parametrize("name", ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU",
                                  "SiLU", "Mish", "Sigmoid", "Tanh", "Softplus", "Softsign",
                                  "Softshrink", "Hardshrink", "Tanhshrink", "Hardtanh",
                                  "Hardsigmoid", "Hardswish", "LogSigmoid", "PReLU", "GLU",
                                  "Softmax", "LogSoftmax", "Softmin"])
def test_activation_matches_torch(name, device):
    kwargs = {"dim": 1} if name in ("Softmax", "LogSoftmax", "Softmin") else {}
    _check_module(name, (), kwargs, _x(4, 6) * 3, device=device)


def test_gelu_tanh_and_threshold():
    _check_module("GELU", (), {"approximate": "tanh"}, _x(3, 4))
    _check_module("Threshold", (0.1, 20.0), {}, _x(3, 4))


def test_embedding_matches_torch():
    import torch

    e, t = _pair("Embedding", 10, 4, padding_idx=2)
    idx = ember.tensor([[1, 2, 3], [2, 9, 1]])
    out = e(idx)
    ref = t(torch.tensor([[1, 2, 3], [2, 9, 1]]))
    assert np.allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    assert np.allclose(e.weight.grad.numpy(), t.weight.grad.numpy())


def test_max_pool_indices_match_torch():
    import torch

    x = _x(2, 3, 6, 6)
    v, i = nn.functional.max_pool2d(x, 2, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x.numpy().copy()), 2,
                                            return_indices=True)
    assert np.array_equal(i.numpy(), ti.numpy())
    up = nn.functional.max_unpool2d(v, i, 2)
    tup = torch.nn.functional.max_unpool2d(tv, ti, 2)
    assert np.allclose(up.numpy(), tup.numpy())


TWO_SIDED = {"l1_loss", "mse_loss", "cosine_similarity", "pairwise_distance",
             "triplet_margin_loss", "margin_ranking_loss", "cosine_embedding_loss",
             "gaussian_nll_loss"}

LOSSES = [
    ("l1_loss", lambda: (_x(3, 4), _x(3, 4, seed=1)), {}),
    ("mse_loss", lambda: (_x(3, 4), _x(3, 4, seed=1)), {"reduction": "sum"}),
    ("cross_entropy", lambda: (_x(5, 4), ember.tensor([0, 3, 1, 1, 2])), {}),
    ("cross_entropy", lambda: (_x(5, 4), ember.tensor([0, 3, -100, 1, 2])),
     {"label_smoothing": 0.1}),
    ("cross_entropy", lambda: (_x(2, 4, 3), ember.tensor([[0, 3, 1], [1, 2, 2]])),
     {"reduction": "none"}),
    ("cross_entropy", lambda: (_x(5, 4), _x(5, 4, seed=2).softmax(1)), {}),
    ("nll_loss", lambda: (_x(5, 4).log_softmax(1), ember.tensor([0, 3, 1, 1, 2])),
     {"weight": ember.tensor([1.0, 2.0, 0.5, 1.0], dtype=ember.float64)}),
    ("binary_cross_entropy", lambda: (_x(3, 4).sigmoid(), _x(3, 4, seed=1).sigmoid()), {}),
    ("binary_cross_entropy_with_logits", lambda: (_x(3, 4), _x(3, 4, seed=1).sigmoid()),
     {"pos_weight": ember.tensor([1.0, 2.0, 3.0, 0.5], dtype=ember.float64)}),
    ("huber_loss", lambda: (_x(3, 4) * 2, _x(3, 4, seed=1)), {"delta": 0.7}),
    ("smooth_l1_loss", lambda: (_x(3, 4) * 2, _x(3, 4, seed=1)), {"beta": 0.5}),
    ("kl_div", lambda: (_x(3, 4).log_softmax(1), _x(3, 4, seed=1).softmax(1)),
     {"reduction": "batchmean"}),
    ("kl_div", lambda: (_x(3, 4).log_softmax(1), _x(3, 4, seed=1).log_softmax(1)),
     {"reduction": "sum", "log_target": True}),
    ("poisson_nll_loss", lambda: (_x(3, 4), _x(3, 4, seed=1).abs() * 3), {"full": True}),
    ("gaussian_nll_loss", lambda: (_x(3, 4), _x(3, 4, seed=1), _x(3, 4, seed=2).abs()), {}),
    ("margin_ranking_loss", lambda: (_x(5), _x(5, seed=1), ember.tensor(
        [1.0, -1, 1, -1, 1], dtype=ember.float64)), {"margin": 0.2}),
    ("hinge_embedding_loss", lambda: (_x(5), ember.tensor([1.0, -1, 1, -1, 1],
                                                          dtype=ember.float64)), {}),
    ("soft_margin_loss", lambda: (_x(5), ember.tensor([1.0, -1, 1, -1, 1],
                                                      dtype=ember.float64)), {}),
    ("multilabel_soft_margin_loss", lambda: (_x(3, 4), (_x(3, 4, seed=1) > 0).double()), {}),
    ("multilabel_margin_loss", lambda: (_x(2, 4), ember.tensor([[3, 0, -1, 1],
                                                                [1, 2, 3, -1]])), {}),
    ("multi_margin_loss", lambda: (_x(3, 4), ember.tensor([0, 3, 1])), {"p": 2}),
    ("cosine_embedding_loss", lambda: (_x(3, 4), _x(3, 4, seed=1), ember.tensor(
        [1.0, -1, 1], dtype=ember.float64)), {"margin": 0.1}),
    ("triplet_margin_loss", lambda: (_x(3, 4), _x(3, 4, seed=1), _x(3, 4, seed=2)),
     {"swap": True}),
    ("cosine_similarity", lambda: (_x(3, 4), _x(3, 4, seed=1)), {}),
    ("pairwise_distance", lambda: (_x(3, 4), _x(3, 4, seed=1)), {"p": 3}),
]


@pytest.mark.parametrize("name,make,kwargs", LOSSES, ids=[f"{n}-{i}" for i, (n, _, _) in
                                                         enumerate(LOSSES)])
def test_loss_matches_torch(name, make, kwargs, device):
    import torch

    from tests.nn._compare import to_torch

    tk = {k: to_torch(v) if isinstance(v, ember.Tensor) else v for k, v in kwargs.items()}
    ek = {k: v.to(device) if isinstance(v, ember.Tensor) else v for k, v in kwargs.items()}
    compare(lambda *a: getattr(nn.functional, name)(*a, **ek),
            lambda *a: getattr(torch.nn.functional, name)(*a, **tk), list(make()),
            grad_args=(0, 1) if name in TWO_SIDED else (0,), device=device)


def test_ctc_loss_matches_torch():
    import torch

    from tests.nn._compare import to_torch

    lp = _x(12, 3, 5).log_softmax(2)
    targets = ember.tensor([[1, 2, 2], [3, 1, 0], [4, 4, 1]])
    il, tl = [12, 10, 11], [3, 2, 3]
    for reduction in ["mean", "sum", "none"]:
        compare(lambda x: nn.functional.ctc_loss(x, targets, il, tl, reduction=reduction),
                lambda x: torch.nn.functional.ctc_loss(x, to_torch(targets), il, tl,
                                                       reduction=reduction), [lp])


def test_layer_errors_name_the_problem():
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(RuntimeError, match="expected input"):
        conv(ember.zeros(1, 5, 8, 8))
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        nn.Linear(3, 2)(ember.zeros(4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(ember.zeros(2, 3))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(ember.zeros(1, 3))
    with pytest.raises(RuntimeError, match="Long"):
        nn.functional.cross_entropy(ember.zeros(2, 3), ember.zeros(2))
    with pytest.raises(IndexError):
        nn.Embedding(3, 2)(ember.tensor([5]))


def test_reset_parameters_distributions():
    lin = nn.Linear(400, 300)
    bound = 1 / np.sqrt(400)
    w = lin.weight.detach().numpy()
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / np.sqrt(3)) < 0.01
    conv = nn.Conv2d(16, 8, 3)
    b = 1 / np.sqrt(16 * 9)
    assert np.abs(conv.weight.detach().numpy()).max() <= b
    emb = nn.Embedding(1000, 50)
    assert abs(emb.weight.detach().numpy().std() - 1) < 0.05


@pytest.mark.parametrize("kw", [
    {"stride": 1, "padding": 1},
    {"stride": 1, "padding": 0, "dilation": 2, "groups": 2},
    {"stride": 2, "padding": 1},
])
def test_conv_gradcheck_and_gradgradcheck(kw):
    from ember.autograd import gradcheck, gradgradcheck

    x = _x(1, 4, 5, 5).requires_grad_()
    w = (_x(4, 4 // kw.get("groups", 1), 3, 3, seed=1) * 0.3).requires_grad_()
    fn = lambda x, w: nn.functional.conv2d(x, w, **kw)  # noqa: E731
    assert gradcheck(fn, (x, w))
    assert gradgradcheck(fn, (x, w))
    tfn = lambda x, w: nn.functional.conv_transpose2d(  # noqa: E731
        x, w, stride=kw["stride"], padding=kw["padding"], groups=kw.get("groups", 1))
    assert gradcheck(tfn, (x, w))


@pytest.mark.parametrize("kw", [
    {"stride": 1, "padding": 1},
    {"stride": 2, "padding": 1, "groups": 2},
])
def test_conv_in_batch_chunks_matches_torch(monkeypatch, kw):
    # a tiny column budget forces one sample per chunk in forward and weight gradient
    import torch

    from ember._ops import nn_conv

    monkeypatch.setattr(nn_conv, "_COLUMN_BYTES", 1)
    x, w, b = _x(3, 4, 6, 6), _x(6, 4 // kw.get("groups", 1), 3, 3, seed=1), _x(6, seed=2)
    ex, ew, eb = (t.requires_grad_() for t in (x, w, b))
    tx, tw, tb = (torch.from_numpy(t.detach().numpy()).requires_grad_() for t in (x, w, b))
    ey = nn.functional.conv2d(ex, ew, eb, **kw)
    ty = torch.nn.functional.conv2d(tx, tw, tb, **kw)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    ey.square().sum().backward()
    ty.square().sum().backward()
    for e, t in ((ex, tx), (ew, tw), (eb, tb)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_max_pool_ties_take_first_and_nan_wins():
    import torch

    x = np.array([[[[1.0, 1.0, 2.0, float("nan")], [0.0, 1.0, 2.0, 5.0]]]])
    v, i = nn.functional.max_pool2d(ember.from_numpy(x), 2, return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    assert i.tolist() == ti.tolist()
    assert np.array_equal(v.numpy(), tv.numpy(), equal_nan=True)


@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 2, 1), (3, 1, 1), (4, 2, 2),
                                                   ((2, 5), 1, (1, 2))])
def test_max_pool_indices_with_ties_and_nans_match_torch(kernel, stride, padding):
    # small integers make many ties; a few NaNs must win their windows (first NaN tap);
    # up to nine taps the winner comes from a bit table, above from putmask
    import torch

    rng = np.random.default_rng(3)
    x = rng.integers(0, 3, (2, 3, 9, 11)).astype(np.float32)
    x[0, 1, 2, 3] = x[1, 2, 5, 5] = x[1, 2, 5, 6] = np.nan
    v, i = nn.functional.max_pool2d(ember.from_numpy(x), kernel, stride, padding,
                                    return_indices=True)
    tv, ti = torch.nn.functional.max_pool2d(torch.from_numpy(x), kernel, stride, padding,
                                            return_indices=True)
    assert i.tolist() == ti.tolist()
    assert np.array_equal(v.numpy(), tv.numpy(), equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_batch_norm_training_gradients_match_torch_with_offset_inputs(dtype):
    # a large mean and small spread: the fused backward kernel must use centred sums
    import torch

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((6, 3, 5, 4)) * 0.5 + 100).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    ex = ember.tensor(x).to(getattr(ember, dtype)).requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    ebn, tbn = nn.BatchNorm2d(3).to(getattr(ember, dtype)), \
        torch.nn.BatchNorm2d(3).to(getattr(torch, dtype))
    with torch.no_grad():
        tbn.weight.copy_(torch.tensor([0.5, 2.0, -1.0]))
    with ember.no_grad():
        ebn.weight.copy_(ember.tensor([0.5, 2.0, -1.0]))
    ebn(ex).backward(ember.tensor(g).to(ex.dtype))
    tbn(tx).backward(torch.tensor(g).to(tx.dtype))
    tol = {"float32": 1e-4, "float64": 1e-10, "float16": 2e-2}[dtype]
    for e, t in ((ex.grad, tx.grad), (ebn.weight.grad, tbn.weight.grad),
                 (ebn.bias.grad, tbn.bias.grad), (ebn.running_var, tbn.running_var)):
        np.testing.assert_allclose(e.float().numpy(), t.float().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(0, 3, 4, 4), (2, 3, 0, 4), (0, 3), (16, 3, 9, 7),
                                   (2, 3, 65, 64)])
def test_batch_norm_empty_and_float32_batches_match_torch(shape):
    # empty batches give empty results and leave the running statistics alone; float32
    # statistics come from per-channel GEMVs (_channel_sums); planes up to 4096 values take
    # spread per-channel factors, larger ones broadcast ones (NOTE [ Per-channel factors ])
    import torch

    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)
    name = "BatchNorm2d" if len(shape) == 4 else "BatchNorm1d"
    ebn, tbn = getattr(nn, name)(3), getattr(torch.nn, name)(3)
    ex, tx = ember.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ey, ty = ebn(ex), tbn(tx)
    g = rng.standard_normal(shape).astype(np.float32)
    ey.backward(ember.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    for e, t in ((ey, ty), (ex.grad, tx.grad), (ebn.weight.grad, tbn.weight.grad),
                 (ebn.bias.grad, tbn.bias.grad), (ebn.running_mean, tbn.running_mean),
                 (ebn.running_var, tbn.running_var)):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        ebn(ember.zeros(1, 3, 1, 1) if len(shape) == 4 else ember.zeros(1, 3))


def test_conv_backward_computes_only_the_adjoints_autograd_needs(monkeypatch):
    from ember._ops import nn_conv

    calls = []
    real = nn_conv.conv_input_grad
    monkeypatch.setattr(nn_conv, "conv_input_grad",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    conv = nn.Conv2d(2, 3, 3)
    x = ember.randn(2, 2, 6, 6)
    conv(x).sum().backward()
    assert calls == [] and conv.weight.grad is not None
    # saved tensors that come back without requires_grad (a pack/unpack hook pair) must not
    # hide that the input needs its gradient
    x.requires_grad_()
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
        y = conv(x)
    y.sum().backward()
    assert calls == [1] and x.grad is not None and x.grad.shape == x.shape


_WIDE_CONVS = [
    (1, 3, 1, 1, 1), (1, 5, 0, 2, 1), (2, 3, 1, 1, 1), (2, 3, 0, 1, 1), (2, (3, 2), (2, 1), 2, 1),
    (2, 1, 0, 1, 1), (2, 3, 1, 1, (2, 1)), (3, 3, 1, 1, 1),
    # strided: planar columns gathered with strides, input gradient scattered tap by tap
    (1, 3, 1, 1, 2), (2, 3, 1, 1, 2), (2, 3, 2, 2, (2, 3)), (2, 1, 0, 1, 2), (3, 3, 1, 1, 2)]
# rows of 16 to 19 take planar columns at stride 1 only
_MID_CONVS = [(1, 3, 1, 1, 1), (2, 3, 1, 1, 1), (2, 3, 1, 1, 2)]
# 1x1 kernels take planar columns on narrow inputs too
_NARROW_1X1_CONVS = [(1, 1, 0, 1, 2), (2, 1, 0, 1, 2), (2, 1, 1, 1, (1, 2)), (3, 1, 0, 1, 1)]


@pytest.mark.parametrize("nd,kernel,padding,dilation,stride,size",
                         [c + ("wide",) for c in _WIDE_CONVS] +
                         [c + ("mid",) for c in _MID_CONVS] +
                         [c + ("narrow",) for c in _NARROW_1X1_CONVS])
def test_conv_on_wide_inputs_matches_torch(nd, kernel, padding, dilation, stride, size):
    # rows of at least 20 (or 1x1 kernels) take planar columns (NOTE [ Planar columns ]) and
    # stride 1 the shared-column backward (NOTE [ Shared gradient columns ]); values and all
    # gradients must equal PyTorch's
    import torch

    rng = np.random.default_rng(0)
    spatial = {"wide": {1: (23,), 2: (9, 22), 3: (5, 4, 21)},
               "mid": {1: (17,), 2: (6, 16)},
               "narrow": {1: (7,), 2: (6, 5), 3: (3, 4, 5)}}[size][nd]
    x = rng.standard_normal((3, 4) + spatial).astype(np.float32)
    conv_e = getattr(nn, f"Conv{nd}d")(4, 5, kernel, stride, padding, dilation)
    conv_t = getattr(torch.nn, f"Conv{nd}d")(4, 5, kernel, stride, padding, dilation)
    with torch.no_grad():
        conv_t.weight.copy_(torch.from_numpy(conv_e.weight.detach().numpy()))
        conv_t.bias.copy_(torch.from_numpy(conv_e.bias.detach().numpy()))
    ex = ember.from_numpy(x.copy()).requires_grad_()
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ey, ty = conv_e(ex), conv_t(tx)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    ey.backward(ember.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    for e, t in ((ex.grad, tx.grad), (conv_e.weight.grad, conv_t.weight.grad),
                 (conv_e.bias.grad, conv_t.bias.grad)):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make", [
    lambda x, w, b: nn.functional.linear(x, w, b),
    lambda x, w, b: x @ w.t() + b,
    lambda x, w, b: ember.addmm(b, x, w.t(), beta=0.5, alpha=2.0),
])
def test_matmul_family_gradients_for_any_subset_of_inputs(make):
    # formulas skip the gradients no input needs (needs_input_grad); every subset must still
    # give the right ones, also when saved tensors come back detached from hooks
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4), (5,))]
    full = [ember.from_numpy(a.copy()).requires_grad_() for a in arrays]
    make(*full).square().sum().backward()
    for mask in [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (0, 1, 1)]:
        ts = [ember.from_numpy(a.copy()).requires_grad_(bool(m)) for a, m in zip(arrays, mask)]
        with ember.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            y = make(*ts)
        y.square().sum().backward()
        for t, ref, m in zip(ts, full, mask):
            if m:
                np.testing.assert_allclose(t.grad.numpy(), ref.grad.numpy(), rtol=1e-5)
            else:
                assert t.grad is None


@pytest.mark.parametrize("xs,ws", [((2, 3, 0), (4, 0)), ((0, 3, 5), (4, 5)), ((2, 0, 5), (4, 5))])
def test_stacked_linear_and_matmul_with_zero_sizes(xs, ws):
    # stacked rows are folded into one GEMM (NOTE [ Folded matmul ]); empty dims must fold too
    x = ember.zeros(*xs, requires_grad=True)
    w = ember.ones(*ws, requires_grad=True)
    y = nn.functional.linear(x, w)
    assert tuple(y.shape) == xs[:-1] + ws[:1]
    (y.sum() + (x @ w.t()).sum()).backward()
    assert tuple(x.grad.shape) == xs and tuple(w.grad.shape) == ws
    assert float(w.grad.abs().sum()) == 0.0


@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_mean_loss_with_every_target_ignored_has_zero_gradient(loss, create_graph):
    # the mean over no targets is nan (0/0); PyTorch's gradient is 0 all the same
    x = ember.randn(3, 4, requires_grad=True)
    inp = x if loss == "cross_entropy" else x.log_softmax(1)
    out = getattr(nn.functional, loss)(inp, ember.full((3,), -100, dtype=ember.int64))
    assert np.isnan(out.item())
    (g,) = ember.autograd.grad(out, x, create_graph=create_graph)
    assert g.tolist() == [[0.0] * 4] * 3


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("kernel,stride,padding,ceil", [(3, 2, 1, False), (2, 2, 1, True),
                                                        (3, 1, 1, False), (2, 2, 0, True)])
def test_max_pool_windows_of_the_padding_value_report_an_input_position(dtype, kernel, stride,
                                                                       padding, ceil):
    # a window holding only -inf (or the integer minimum) ties with the padding; PyTorch
    # reports its first position inside the input, never a padding position
    import torch

    lowest = -np.inf if dtype == np.float32 else np.iinfo(dtype).min
    x = np.full((1, 2, 5, 5), lowest, dtype)
    x[0, 0, 2, 1] = 1
    e = nn.functional.max_pool2d(ember.from_numpy(x), kernel, stride, padding, ceil_mode=ceil,
                                 return_indices=True)
    t = torch.nn.functional.max_pool2d(torch.from_numpy(x), kernel, stride, padding,
                                       ceil_mode=ceil, return_indices=True)
    assert e[1].tolist() == t[1].tolist()
    assert e[0].tolist() == t[0].tolist()


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_bce_with_logits_gradient_at_zero_logit_matches_torch():
    import torch

    x = np.array([0.0, 0.5, -0.3, 30.0, -30.0])
    grads = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        loss = m.nn.functional.binary_cross_entropy_with_logits(
            t, m.full((5,), 0.4, dtype=m.float64), pos_weight=m.tensor([2.0], dtype=m.float64))
        loss.backward()
        grads.append(np.asarray(t.grad.detach()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("norm", ["batch", "layer"])
def test_norm_then_inplace_relu_backward_matches_torch(norm):
    # the norms' formulas read their statistics, not their output: writing into the output
    # (ResNet's BatchNorm2d -> ReLU(inplace=True)) must leave backward valid
    import torch

    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4))
    grads = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        layer = m.nn.BatchNorm2d(3).double() if norm == "batch" else \
            m.nn.LayerNorm([4, 4]).double()
        y = m.nn.ReLU(inplace=True)(layer(t))
        (y * m.arange(y.numel(), dtype=m.float64).reshape(y.shape)).sum().backward()
        grads.append(np.asarray(t.grad.detach()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("name,points", [
    ("relu6", [0.0, 6.0, -1.0, 7.0, 3.0]), ("hardtanh", [-1.0, 1.0, 0.0]),
    ("hardsigmoid", [-3.0, 3.0, 0.0, 5.0]), ("hardswish", [-3.0, 3.0, 0.0, -4.0, 4.0])])
def test_hard_activation_gradients_at_kinks_match_torch(name, points):
    # NOTE [ Hard activations' kinks ]
    import torch

    grads = []
    for m in (ember, torch):
        z = m.tensor(points, requires_grad=True)
        getattr(m.nn.functional, name)(z).sum().backward()
        grads.append(z.grad.tolist())
    assert grads[0] == pytest.approx(grads[1])


def test_functional_relu_takes_inplace():
    x = ember.tensor([-1.0, 2.0])
    assert ember.nn.functional.relu(x, inplace=True) is x
    assert x.tolist() == [0.0, 2.0]
    assert ember.nn.functional.relu(ember.tensor([-3.0]), True).tolist() == [0.0]


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_cosine_similarity_broadcasts_before_reducing_as_torch():
    import torch

    for m in (ember, torch):
        F = m.nn.functional
        assert tuple(F.cosine_similarity(m.ones(2, 3), m.ones(3)).shape) == (2,)
    a = ember.nn.functional.cosine_similarity(ember.tensor([[1.0, 2.0, 3.0]]),
                                              ember.tensor([[1.0], [2.0]]), dim=0)
    t = torch.nn.functional.cosine_similarity(torch.tensor([[1.0, 2.0, 3.0]]),
                                              torch.tensor([[1.0], [2.0]]), dim=0)
    np.testing.assert_allclose(a.numpy(), t.numpy(), rtol=1e-6)


@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_regression_losses_promote_as_torch(loss):
    f = getattr(ember.nn.functional, loss)
    assert f(ember.ones(2), ember.ones(2, dtype=ember.long)).dtype == ember.float32
    assert f(ember.ones(2), ember.ones(2, dtype=ember.float16)).dtype == ember.float32


def test_unbatched_losses_with_reduction_none_are_zero_dim():
    F = ember.nn.functional
    x, y = ember.randn(3), ember.tensor(1)
    assert F.cross_entropy(x, y, reduction="none").shape == ()
    assert F.nll_loss(F.log_softmax(x, 0), y, reduction="none").shape == ()


def test_float_of_many_values_is_value_error():
    with pytest.raises(ValueError, match="one element"):
        float(ember.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="one element"):
        int(ember.tensor([1, 2]))


@pytest.mark.parametrize("make,shape", [
    (lambda: nn.Linear(4, 3), (2, 4)), (lambda: nn.Conv2d(2, 3, 3), (1, 2, 5, 5)),
    (lambda: nn.ConvTranspose2d(2, 3, 3), (1, 2, 4, 4)), (lambda: nn.Conv1d(2, 3, 3), (1, 2, 6))])
def test_low_precision_layers_keep_their_dtype(make, shape):
    # bfloat16 in, bfloat16 out and bfloat16 gradients (computed in float32), as PyTorch
    m = make().to(ember.bfloat16)
    y = m(ember.randn(*shape).to(ember.bfloat16))
    y.float().sum().backward()
    assert y.dtype == ember.bfloat16 and m.weight.grad.dtype == ember.bfloat16
