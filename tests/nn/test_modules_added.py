"""nn modules added for issue 17, against PyTorch: same weights -> same outputs and grads."""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import needs_torch_2_13

try:
    import torch

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _copy_weights(em, tm):
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


def _both(shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.1
    return (ember.from_numpy(a.copy()).requires_grad_(),
            torch.from_numpy(a.copy()).requires_grad_())


def _assert_close(e, t, **kw):
    kw.setdefault("rtol", 1e-5)
    kw.setdefault("atol", 1e-6)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **kw)


def _forward_backward(em, tm, shape, positive=False, seed=0):
    ex, tx = _both(shape, seed, positive)
    eo, to = em(ex), tm(tx)
    _assert_close(eo, to)
    g = np.random.default_rng(seed + 1).standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.from_numpy(g))
    to.backward(torch.from_numpy(g))
    _assert_close(ex.grad, tx.grad)
    for (name, ep), (_, tp) in zip(em.named_parameters(), tm.named_parameters()):
        _assert_close(ep.grad, tp.grad, atol=2e-5, err_msg=name)  # sums of many terms


# -- lazy modules ------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lazy_conv_transpose_becomes_conv_transpose_like_torch(nd):
    name = f"LazyConvTranspose{nd}d"
    em = getattr(ember.nn, name)(4, 3, stride=2, groups=2)
    tm = getattr(torch.nn, name)(4, 3, stride=2, groups=2)
    assert repr(em) == repr(tm)
    shape = (2, 6) + (5,) * nd
    em(ember.zeros(shape))
    tm(torch.zeros(shape))
    assert type(em).__name__ == type(tm).__name__ == f"ConvTranspose{nd}d"
    assert tuple(em.weight.shape) == tuple(tm.weight.shape)
    _copy_weights(em, tm)
    _forward_backward(em, tm, shape)


@needs_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@needs_torch_2_13
def test_lazy_instance_norm_matches_torch(nd):
    name = f"LazyInstanceNorm{nd}d"
    em, tm = getattr(ember.nn, name)(), getattr(torch.nn, name)()
    assert repr(em) == repr(tm)
    shape = (2, 3) + (4,) * nd
    _forward_backward(em, tm, shape)
    assert repr(em) == repr(tm)
    assert type(em).__name__ == f"InstanceNorm{nd}d"


@needs_torch
@pytest.mark.parametrize("make", [
    lambda nn: nn.BatchNorm1d(3, bias=False),
    lambda nn: nn.BatchNorm2d(3, affine=False),
    lambda nn: nn.InstanceNorm1d(3, affine=True, bias=False),
    lambda nn: nn.GroupNorm(1, 3, bias=False),
    lambda nn: nn.SyncBatchNorm(3, bias=False),
    lambda nn: nn.LazyBatchNorm1d(bias=False),
])
@needs_torch_2_13
def test_norm_bias_flag_matches_torch(make):
    em, tm = make(ember.nn), make(torch.nn)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())


@needs_torch
@needs_torch_2_13
def test_batchnorm_without_bias_forward_matches_torch():
    em, tm = ember.nn.BatchNorm1d(3, bias=False), torch.nn.BatchNorm1d(3, bias=False)
    _forward_backward(em, tm, (5, 3))


# -- dropout, pooling, normalisation ----------------------------------------------------------


def test_feature_alpha_dropout_eval_is_identity():
    m = ember.nn.FeatureAlphaDropout(0.5).eval()
    x = ember.randn(3, 4, 5)
    assert m(x) is x


def test_feature_alpha_dropout_drops_whole_channels():
    p, saturation = 0.3, 1.7580993408473766
    a = 1.0 / ((saturation ** 2 * p + 1) * (1 - p)) ** 0.5
    ember.manual_seed(0)
    x = ember.randn(40, 30, 6)
    y = ember.nn.FeatureAlphaDropout(p)(x).numpy()
    dropped = np.all(np.isclose(y, saturation * a * (p - 1)), axis=-1)
    kept = x.numpy()[~dropped] * a + saturation * a * p
    np.testing.assert_allclose(y[~dropped], kept, rtol=1e-5, atol=1e-6)
    assert 0.2 < dropped.mean() < 0.4


@needs_torch
def test_feature_alpha_dropout_repr_and_bad_p_match_torch():
    assert repr(ember.nn.FeatureAlphaDropout(0.2)) == repr(torch.nn.FeatureAlphaDropout(0.2))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        ember.nn.FeatureAlphaDropout(1.5)


@needs_torch
@pytest.mark.parametrize("args", [(2, 2), (3.0, (2, 3, 2), (1, 2, 3)), (1.5, 3, 2, True)])
def test_lppool3d_matches_torch(args):
    em, tm = ember.nn.LPPool3d(*args), torch.nn.LPPool3d(*args)
    assert repr(em) == repr(tm)
    _forward_backward(em, tm, (2, 3, 5, 6, 7), positive=True)


FRACTIONAL = [
    (2, 3, {"output_size": (4, 5)}, (2, 3, 9, 11)),
    (2, (2, 3), {"output_ratio": (0.5, 0.6)}, (2, 3, 9, 11)),
    (2, 2, {"output_size": 3}, (3, 9, 8)),
    (3, 2, {"output_size": (3, 2, 4)}, (2, 3, 7, 6, 9)),
    (3, (2, 1, 3), {"output_ratio": 0.5}, (1, 2, 6, 6, 8)),
]


@needs_torch
@pytest.mark.parametrize("nd,kernel,kwargs,shape", FRACTIONAL)
def test_fractional_max_pool_matches_torch_given_samples(nd, kernel, kwargs, shape):
    batch, channels = (shape[0], shape[1]) if len(shape) == nd + 2 else (1, shape[0])
    s = np.random.default_rng(2).random((batch, channels, nd)).astype(np.float32)
    name = f"FractionalMaxPool{nd}d"
    em = getattr(ember.nn, name)(kernel, return_indices=True,
                                 _random_samples=ember.from_numpy(s), **kwargs)
    tm = getattr(torch.nn, name)(kernel, return_indices=True,
                                 _random_samples=torch.from_numpy(s), **kwargs)
    ex, tx = _both(shape, 1)
    (eo, ei), (to, ti) = em(ex), tm(tx)
    _assert_close(eo, to)
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    g = np.random.default_rng(3).standard_normal(tuple(to.shape)).astype(np.float32)
    eo.backward(ember.from_numpy(g))
    to.backward(torch.from_numpy(g))
    _assert_close(ex.grad, tx.grad)
    assert list(em.state_dict()) == list(tm.state_dict())


def test_fractional_max_pool_random_windows_shape():
    out = ember.nn.FractionalMaxPool2d(3, output_ratio=0.5)(ember.randn(2, 3, 10, 8))
    assert tuple(out.shape) == (2, 3, 5, 4)


@pytest.mark.parametrize("kwargs,message", [
    ({}, "requires specifying either an output size, or a pooling ratio"),
    ({"output_size": 3, "output_ratio": 0.5}, "only one of output_size and output_ratio"),
    ({"output_ratio": 1.5}, r"output_ratio must be between 0 and 1 \(got 1.5\)"),
])
def test_fractional_max_pool_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ember.nn.FractionalMaxPool2d(2, **kwargs)


def test_fractional_max_pool_too_large_pool_raises_runtime_error():
    m = ember.nn.FractionalMaxPool2d(3, output_size=(4, 5))
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height"):
        m(ember.randn(1, 2, 5, 5))


@needs_torch
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_cross_map_lrn2d_forward_matches_torch(size):
    em, tm = ember.nn.CrossMapLRN2d(size, 0.3, 0.75, 1.5), torch.nn.CrossMapLRN2d(size, 0.3,
                                                                                   0.75, 1.5)
    assert repr(em) == repr(tm)
    ex, tx = _both((2, 7, 3, 3))
    _assert_close(em(ex), tm(tx))


def test_cross_map_lrn2d_gradient_is_the_derivative():
    # PyTorch's hand-written backward for this legacy layer fails gradcheck; ember's is the
    # true derivative of the (shared) forward
    x = ember.randn(1, 5, 2, 2, dtype=ember.float64, requires_grad=True)
    m = ember.nn.CrossMapLRN2d(3, 0.3, 0.75, 1.5)
    assert ember.autograd.gradcheck(m, (x,))


def test_cross_map_lrn2d_rejects_3d_input():
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D instead"):
        ember.nn.CrossMapLRN2d(3)(ember.randn(2, 3, 4))


# -- losses and deprecated names ---------------------------------------------------------------


@needs_torch
def test_nllloss2d_warns_and_matches_nllloss():
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        em = ember.nn.NLLLoss2d()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.NLLLoss2d()
    ex, tx = _both((2, 3, 4, 4))
    target = np.random.default_rng(0).integers(0, 3, (2, 4, 4))
    _assert_close(em(ex.log_softmax(1), ember.from_numpy(target)),
                  tm(tx.log_softmax(1), torch.from_numpy(target)))


def test_container_warns_and_registers_children():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = ember.nn.Container(fc=ember.nn.Linear(2, 2))
    assert [n for n, _ in c.named_children()] == ["fc"]


ASM_CASES = [([4, 8], False, 2.0), ([3], True, 4.0), ([2, 5, 7], False, 2.0)]


def _asm_pair(cutoffs, head_bias, div_value):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value=div_value,
                                             head_bias=head_bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-size tail layers warn on init
        em = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value=div_value,
                                                 head_bias=head_bias)
    _copy_weights(em, tm)
    return em, tm


@needs_torch
@pytest.mark.parametrize("cutoffs,head_bias,div_value", ASM_CASES)
def test_adaptive_log_softmax_matches_torch(cutoffs, head_bias, div_value):
    em, tm = _asm_pair(cutoffs, head_bias, div_value)
    assert repr(em) == repr(tm)
    ex, tx = _both((6, 8))
    target = np.array([0, 3, 5, 9, 7, 1])
    (eo, el), (to, tl) = em(ex, ember.from_numpy(target)), tm(tx, torch.from_numpy(target))
    _assert_close(eo, to)
    _assert_close(el, tl)
    el.backward()
    tl.backward()
    _assert_close(ex.grad, tx.grad)
    for ep, tp in zip(em.parameters(), tm.parameters()):
        _assert_close(ep.grad, tp.grad)


@needs_torch
@pytest.mark.parametrize("cutoffs,head_bias,div_value", ASM_CASES)
def test_adaptive_log_softmax_log_prob_and_predict_match_torch(cutoffs, head_bias, div_value):
    em, tm = _asm_pair(cutoffs, head_bias, div_value)
    ex, tx = _both((6, 8), seed=4)
    _assert_close(em.log_prob(ex), tm.log_prob(tx))
    np.testing.assert_array_equal(em.predict(ex).numpy(), tm.predict(tx).numpy())


@needs_torch
def test_adaptive_log_softmax_unbatched_matches_torch():
    em, tm = _asm_pair([4, 8], False, 2.0)
    ex, tx = _both((8,))
    (eo, _), (to, _) = em(ex, ember.tensor(9)), tm(tx, torch.tensor(9))
    assert eo.shape == () and to.shape == ()
    _assert_close(eo, to)


def test_adaptive_log_softmax_out_of_range_target_raises_runtime_error():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        m(ember.randn(2, 8), ember.tensor([0, 10]))


def test_adaptive_log_softmax_bad_cutoffs_raise_value_error():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [8, 4])


@needs_torch
@pytest.mark.parametrize("kwargs,target_shape,input_shape", [
    ({}, (5,), (5, 4)),
    ({"out_features": (6,), "bias": True, "label_smoothing": 0.1}, (5, 6), (5, 4)),
    ({"reduction": "none", "ignore_index": 1}, (5,), (5, 4)),
    ({}, (), (4,)),
])
@needs_torch_2_13
def test_linear_cross_entropy_loss_matches_torch(kwargs, target_shape, input_shape):
    tm = torch.nn.LinearCrossEntropyLoss(4, 3, **kwargs)
    em = ember.nn.LinearCrossEntropyLoss(4, 3, **kwargs)
    _copy_weights(em, tm)
    assert repr(em) == repr(tm)
    ex, tx = _both(input_shape)
    target = np.random.default_rng(0).integers(0, 3, target_shape)
    el, tl = em(ex, ember.from_numpy(target)), tm(tx, torch.from_numpy(target))
    _assert_close(el, tl)
    el.sum().backward()
    tl.sum().backward()
    _assert_close(ex.grad, tx.grad)
    _assert_close(em.linear.weight.grad, tm.linear.weight.grad)


@needs_torch
@needs_torch_2_13
def test_linear_cross_entropy_options_repr_matches_torch():
    assert repr(ember.nn.LinearCrossEntropyOptions()) == repr(
        torch.nn.LinearCrossEntropyOptions())
