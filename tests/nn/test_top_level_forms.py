"""The nn forms the OpInfo table cannot drive: in-place activations (top level and
``nn.functional``), the random dropout forms, fractional max pooling, and the names
``nn.functional`` re-exports. The deterministic top-level forms are OpInfo entries
(ember/testing/opinfos/nn_top_level.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.conftest import needs_torch_2_13
import ember.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")

X = np.array([[-2.0, -0.3, 0.0], [0.4, 1.5, 3.0]])


def _e(a, **kw):
    return ember.tensor(np.array(a, dtype=np.float64), **kw)


def _t(a, **kw):
    return torch.tensor(np.array(a, dtype=np.float64), **kw)


def _grad_of_inplace(mod, name, args, lib):
    """Gradient wrt x of sum(w * f_(x * 1, *args)) and the value."""
    x = (_e if lib == "ember" else _t)(X, requires_grad=True)
    y = x * 1
    out = getattr(mod, name)(y, *args)
    w = (_e if lib == "ember" else _t)(np.arange(6.0).reshape(2, 3))
    (out * w).sum().backward()
    return out.detach().numpy(), x.grad.numpy()


INPLACE_TOP = [("celu_", (0.7,)), ("selu_", ()), ("rrelu_", (0.1, 0.3)),
               ("threshold_", (0.2, -1.0)), ("relu_", ())]
INPLACE_F = [("elu_", (0.5,)), ("hardtanh_", (-1.0, 2.0)), ("leaky_relu_", (0.2,)),
             ("celu_", (1.5,)), ("selu_", ()), ("rrelu_", (0.2, 0.4)),
             ("threshold_", (0.5, 2.0)), ("relu_", ())]


@needs_torch
@pytest.mark.parametrize("name,args", INPLACE_TOP, ids=[n for n, _ in INPLACE_TOP])
def test_top_level_inplace_matches_torch(name, args):
    got = _grad_of_inplace(ember, name, args, "ember")
    want = _grad_of_inplace(torch, name, args, "torch")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name,args", INPLACE_F, ids=[n for n, _ in INPLACE_F])
def test_functional_inplace_matches_torch(name, args):
    got = _grad_of_inplace(F, name, args, "ember")
    want = _grad_of_inplace(TF, name, args, "torch")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("name,args", INPLACE_TOP, ids=[n for n, _ in INPLACE_TOP])
def test_top_level_inplace_returns_its_input(name, args):
    x = _e(X)
    assert getattr(ember, name)(x, *args) is x


@pytest.mark.parametrize("name,args", INPLACE_TOP, ids=[n for n, _ in INPLACE_TOP])
def test_top_level_inplace_on_leaf_raises(name, args):
    x = _e(X, requires_grad=True)
    with pytest.raises(RuntimeError):
        getattr(ember, name)(x, *args)


@pytest.mark.parametrize("inplace", [False, True])
def test_functional_activation_inplace_flag_writes_input(inplace):
    x = _e(X)
    out = F.celu(x, 1.0, inplace)
    assert (out is x) == inplace


@needs_torch
def test_celu_zero_alpha_raises():
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        ember.celu(_e(X), 0.0)
    with pytest.raises(RuntimeError):
        torch.celu(_t(X), 0.0)


# -- dropout ------------------------------------------------------------------------------------

DROPOUTS = ["dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_forms_pass_through_when_not_training(name):
    x = ember.randn(4, 3, 5)
    np.testing.assert_array_equal(getattr(ember, name)(x, 0.5, False).numpy(), x.numpy())


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_forms_inplace_write_input(name):
    x = ember.randn(4, 3, 5)
    ember.manual_seed(0)
    want = getattr(ember, name)(x.clone(), 0.5, True)
    ember.manual_seed(0)
    out = getattr(ember, name + "_")(x, 0.5, True)
    assert out is x
    np.testing.assert_allclose(x.numpy(), want.numpy())


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_forms_p_out_of_range_raises(name):
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        getattr(ember, name)(ember.ones(2, 2), 1.5, True)


def test_dropout_scales_kept_elements():
    ember.manual_seed(1)
    y = ember.dropout(ember.ones(1000), 0.25, True).numpy()
    assert np.isclose(y, 0.0).sum() + np.isclose(y, 1 / 0.75).sum() == y.size
    assert 0.15 < (y == 0).mean() < 0.35


def test_feature_dropout_zeroes_whole_channels():
    ember.manual_seed(2)
    y = ember.feature_dropout(ember.ones(8, 6, 5), 0.5, True).numpy()
    per_channel = y.reshape(48, 5)
    assert all(len(set(row)) == 1 for row in per_channel)
    assert set(np.unique(y)) == {0.0, 2.0}


@needs_torch
def test_feature_dropout_one_dim_raises_like_torch():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.feature_dropout(ember.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.feature_dropout(torch.ones(3), 0.5, True)


@needs_torch
def test_alpha_dropout_takes_torchs_two_values():
    ember.manual_seed(3)
    y = np.unique(ember.alpha_dropout(ember.ones(200), 0.5, True).numpy())
    t = np.unique(torch.alpha_dropout(torch.ones(200), 0.5, True).numpy())
    np.testing.assert_allclose(y, t, rtol=1e-6)


def test_feature_alpha_dropout_functional_shares_channel_mask():
    ember.manual_seed(4)
    y = F.feature_alpha_dropout(ember.ones(4, 3, 6), 0.5, True).numpy()
    assert all(len(set(row)) == 1 for row in y.reshape(12, 6))


def test_native_dropout_mask_matches_output():
    ember.manual_seed(5)
    x = ember.randn(50)
    out, mask = ember.native_dropout(x, 0.4, True)
    assert mask.dtype == ember.bool
    kept = mask.numpy()
    np.testing.assert_allclose(out.numpy()[kept], x.numpy()[kept] / 0.6, rtol=1e-6)
    assert (out.numpy()[~kept] == 0).all()


def test_native_dropout_not_training_keeps_all():
    out, mask = ember.native_dropout(ember.ones(3), 0.5, False)
    assert mask.numpy().all() and (out.numpy() == 1).all()


def test_native_dropout_gradient_is_the_mask_scaled():
    ember.manual_seed(6)
    x = ember.randn(20, requires_grad=True)
    out, mask = ember.native_dropout(x, 0.5, True)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() * 2.0)


@needs_torch
def test_top_level_reduction_defaults_to_none_like_torch():
    x, t = _e([0.2, 0.7]), _e([0.5, 0.1])
    assert tuple(ember.kl_div(x, t).shape) == tuple(torch.kl_div(_t([0.2, 0.7]),
                                                                  _t([0.5, 0.1])).shape)


# -- pooling ------------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_matches_torch(nd):
    rng = np.random.default_rng(nd)
    shape = (2, 3) + ((9, 11) if nd == 2 else (6, 7, 8))
    x = rng.standard_normal(shape)
    u = rng.random((2, 3, nd))
    fn_t = TF.fractional_max_pool2d if nd == 2 else TF.fractional_max_pool3d
    fn_e = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    tx = _t(x, requires_grad=True)
    want, want_idx = fn_t(tx, 2, output_size=(4,) * nd, return_indices=True,
                          _random_samples=_t(u))
    ex = _e(x, requires_grad=True)
    got, got_idx = fn_e(ex, 2, output_size=(4,) * nd, return_indices=True,
                        _random_samples=_e(u))
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_array_equal(got_idx.numpy(), want_idx.numpy())
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


@needs_torch
def test_fractional_max_pool2d_output_ratio_shape_matches_torch():
    x = np.zeros((1, 2, 10, 7))
    got = F.fractional_max_pool2d_with_indices(_e(x), 2, output_ratio=(0.5, 0.5))
    want = TF.fractional_max_pool2d_with_indices(_t(x), 2, output_ratio=(0.5, 0.5))
    assert tuple(got[0].shape) == tuple(want[0].shape)
    assert tuple(got[1].shape) == tuple(want[1].shape)


def test_fractional_max_pool_needs_a_size():
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(ember.ones(1, 1, 4, 4), 2)


def test_fractional_max_pool_too_large_kernel_raises():
    with pytest.raises(RuntimeError, match="too large"):
        F.fractional_max_pool2d(ember.ones(1, 1, 4, 4), 3, output_size=3)


@needs_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_max_pool_with_indices_matches_torch(nd):
    x = np.random.default_rng(0).standard_normal((2, 3) + (7,) * nd)
    got = getattr(F, f"adaptive_max_pool{nd}d_with_indices")(_e(x), 3)
    want = getattr(TF, f"adaptive_max_pool{nd}d_with_indices")(_t(x), 3)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


@needs_torch
def test_lp_pool3d_matches_torch():
    x = np.abs(np.random.default_rng(1).standard_normal((2, 2, 4, 6, 6))) + 0.1
    tx, ex = _t(x, requires_grad=True), _e(x, requires_grad=True)
    want = TF.lp_pool3d(tx, 3, (2, 3, 2), stride=2)
    got = F.lp_pool3d(ex, 3, (2, 3, 2), stride=2)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10)
    want.sum().backward()
    got.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-8)


# -- the rest of nn.functional ------------------------------------------------------------------


@needs_torch
def test_native_channel_shuffle_matches_torch():
    x = np.arange(24.0).reshape(1, 6, 2, 2)
    np.testing.assert_array_equal(F.native_channel_shuffle(_e(x), 3).numpy(),
                                  TF.native_channel_shuffle(_t(x), 3).numpy())


@needs_torch
@pytest.mark.parametrize("shapes,offs", [
    (((2, 4, 8), (2, 8, 4)), None),
    (((6, 8), (2, 8, 4)), [2, 6]),
    (((2, 4, 8), (8, 8)), [4, 8]),
    (((4, 8), (8, 4)), [4, 8]),
], ids=["3d3d", "2d3d", "3d2d", "2d2d"])
def test_grouped_mm_matches_torch(shapes, offs):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    kw_t = {} if offs is None else {"offs": torch.tensor(offs, dtype=torch.int32)}
    kw_e = {} if offs is None else {"offs": ember.tensor(offs, dtype=ember.int32)}
    want = TF.grouped_mm(torch.from_numpy(a), torch.from_numpy(b), **kw_t)
    got = F.grouped_mm(ember.tensor(a), ember.tensor(b), **kw_e)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_grouped_mm_offsets_required_for_2d():
    with pytest.raises(RuntimeError, match="offsets"):
        F.grouped_mm(ember.ones(4, 2), ember.ones(2, 2, 3))


@needs_torch
@needs_torch_2_13
def test_linear_cross_entropy_matches_torch():
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((5, 4)), rng.standard_normal((7, 4))
    target = [0, 6, 2, 2, 1]
    tx, ex = _t(x, requires_grad=True), _e(x, requires_grad=True)
    want = TF.linear_cross_entropy(tx, _t(w), torch.tensor(target), label_smoothing=0.1)
    got = F.linear_cross_entropy(ex, _e(w), ember.tensor(target), label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
    want.backward()
    got.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-8)


def test_functional_reexports_protocol_helpers():
    from ember import overrides

    assert F.Tensor is ember.Tensor
    assert F.handle_torch_function is overrides.handle_torch_function
    assert F.has_torch_function_variadic is overrides.has_torch_function_variadic


def test_boolean_dispatch_picks_by_flag():
    f = F.boolean_dispatch("flag", 1, False, lambda x, flag=True: "yes",
                           lambda x, flag=False: "no", "m", "f")
    assert (f(0), f(0, True), f(0, flag=True), f.__name__) == ("no", "yes", "yes", "f")


@needs_torch
def test_assert_int_or_pair_raises_like_torch():
    with pytest.raises(AssertionError, match="kernel must"):
        F.assert_int_or_pair((1, 2, 3), "kernel", "{} must be int or pair")
    with pytest.raises(AssertionError):
        TF.assert_int_or_pair((1, 2, 3), "kernel", "{} must be int or pair")


@needs_torch
def test_grid_sample_mode_tables_match_torch():
    assert F.GRID_SAMPLE_INTERPOLATION_MODES == TF.GRID_SAMPLE_INTERPOLATION_MODES
    assert F.GRID_SAMPLE_PADDING_MODES == TF.GRID_SAMPLE_PADDING_MODES


@needs_torch
def test_note_tables_have_torchs_keys():
    for name in ("reproducibility_notes", "sparse_support_notes", "tf32_notes"):
        assert getattr(F, name).keys() == getattr(TF, name).keys()


@needs_torch
def test_embedding_renorm_matches_torch():
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    tw, ew = _t(w), _e(w)
    torch.embedding_renorm_(tw, torch.tensor([0, 1]), 1.0, 2.0)
    out = ember.embedding_renorm_(ew, ember.tensor([0, 1]), 1.0, 2.0)
    assert out is ew
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6)


def test_lstm_packed_form_is_reported():
    with pytest.raises(NotImplementedError, match="packed"):
        ember.lstm(ember.ones(3, 2), ember.tensor([2, 1]), [ember.zeros(1, 1, 2)] * 2, [],
                   False, 1, 0.0, False, False)
