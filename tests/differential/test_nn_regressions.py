"""Regressions for the bug classes the differential suite found in the nn families: one test
per class, each expression run with ``T = ember`` and ``T = torch`` and compared on the
exception's class, or on dtype, shape and values (NOTE [ nn kernel dtypes ] in
ember/_ops/nn_checks.py)."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.differential.harness import _builtin_class

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _run(expr, T):
    env = {"T": T, "F": T.nn.functional}
    try:
        return eval(expr, env), None
    except Exception as exc:  # compared below
        return None, exc


def _agree(expr):
    """``expr`` raises the same builtin exception class in ember and torch, or gives the
    same dtype, shape and values."""
    import torch

    t, t_exc = _run(expr, torch)
    e, e_exc = _run(expr, ember)
    if t_exc is not None:
        assert e_exc is not None, f"{expr}: torch raises {t_exc!r}, ember returns {e!r}"
        assert isinstance(e_exc, _builtin_class(t_exc)), \
            f"{expr}: ember raises {e_exc!r}, torch {t_exc!r}"
        return
    assert e_exc is None, f"{expr}: ember raises {e_exc!r}, torch returns {t!r}"
    t = t[0] if isinstance(t, tuple) else t
    e = e[0] if isinstance(e, tuple) else e
    assert e.dtype.name == str(t.dtype).replace("torch.", ""), expr
    assert tuple(e.shape) == tuple(t.shape), expr
    a = e.detach().float().numpy() if e.dtype.is_floating_point else e.detach().numpy()
    b = t.detach().float().numpy() if t.dtype.is_floating_point else t.detach().numpy()
    tol = 1.6e-2 if e.dtype.name == "bfloat16" else 1e-3
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True, err_msg=expr)


def _x(shape, dtype):
    n = int(np.prod(shape))
    return f"(T.arange({n}.).reshape({shape}) % 5 - 1.5).to(T.{dtype})"


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "complex64"])
@pytest.mark.parametrize("call", [
    "F.max_pool1d({x3}, 2)", "F.max_pool1d({x3}, 2, return_indices=True)",
    "F.max_pool2d({x4}, 2)", "F.max_pool3d({x5}, 2)",
    "F.avg_pool1d({x3}, 2)", "F.avg_pool2d({x4}, 3, padding=1)", "F.avg_pool3d({x5}, 2)",
    "F.adaptive_avg_pool1d({x3}, 3)", "F.adaptive_avg_pool2d({x4}, 3)",
    "F.adaptive_max_pool1d({x3}, 3)", "F.adaptive_max_pool3d({x5}, 3)",
    "F.lp_pool1d({x3}, 2, 2)",
])
def test_pooling_unsupported_dtypes_and_integer_averages_as_torch(call, dtype):
    _agree(call.format(x3=_x((1, 2, 6), dtype), x4=_x((1, 2, 6, 6), dtype),
                       x5=_x((1, 2, 4, 4, 4), dtype)))


@pytest.mark.parametrize("shape", [(0, 1, 6), (0, 6), (1, 0, 6), (2, 1, 0)])
@pytest.mark.parametrize("fn", ["F.max_pool1d(x, 1)", "F.max_pool1d(x, 1, return_indices=True)",
                                "F.avg_pool1d(x, 1)", "F.adaptive_avg_pool1d(x, 2)",
                                "F.adaptive_max_pool1d(x, 2)",
                                "F.max_pool2d(x.unsqueeze(-1), 1)",
                                "F.adaptive_max_pool2d(x.unsqueeze(-1), 2)"])
def test_pooling_empty_inputs_as_torch(fn, shape):
    _agree(f"(lambda x: {fn})(T.zeros({shape}))")


@pytest.mark.parametrize("dtype", ["bool", "int32", "complex64"])
@pytest.mark.parametrize("call", [
    "F.softmax({x}, 1)", "F.softmax({x}, 0)", "F.log_softmax({x}, 1)",
    "F.cross_entropy({x}, T.tensor([0, 1, 2]))", "F.nll_loss({x}, T.tensor([0, 1, 2]))",
])
def test_softmax_family_unsupported_dtypes_raise_not_implemented(call, dtype):
    _agree(call.format(x=_x((3, 4), dtype)))


@pytest.mark.parametrize("dtype", ["int64", "float64", "complex128"])
@pytest.mark.parametrize("call", [
    "F.leaky_relu({x})", "F.hardswish({x})", "F.hardsigmoid({x})", "F.mish({x})",
    "F.logsigmoid({x})", "F.softplus({x})", "F.softshrink({x})", "F.hardshrink({x})",
    "F.glu({x})", "F.prelu({x}, T.ones(1, dtype=T.{dtype}))", "F.rrelu({x})",
    "F.relu6({x})", "F.hardtanh({x})", "F.hardtanh({x}, 0., 6.)",
    "F.hardtanh_({x}, -2., 2.)",
])
def test_activations_dtypes_as_torch(call, dtype):
    _agree(call.format(x=_x((3, 4), dtype), dtype=dtype))


@pytest.mark.parametrize("dtype", ["bool", "int16", "complex64"])
@pytest.mark.parametrize("call", [
    "F.mse_loss({x}, {y})", "F.mse_loss({f}, {y})", "F.smooth_l1_loss({f}, {y})",
    "F.huber_loss({x}, {y})", "F.huber_loss({f}, {y})", "F.soft_margin_loss({f}, {y})",
    "F.binary_cross_entropy({x}.float().sigmoid().to(T.{dtype}), {y})",
    "F.binary_cross_entropy_with_logits({f}, {y})", "F.kl_div({x}, {y}, reduction='sum')",
    "F.multi_margin_loss({x}, T.tensor([0, 1, 2]))",
    "F.multilabel_soft_margin_loss({x}, {y})",
    "F.hinge_embedding_loss({x}, {y}, reduction='none')",
    "F.margin_ranking_loss({x}, {y}, T.ones(3, 4))",
])
def test_loss_dtypes_as_torch(call, dtype):
    _agree(call.format(x=_x((3, 4), dtype), y=_x((3, 4), dtype).replace("5 - 1.5", "3"),
                       f=_x((3, 4), "float32"), dtype=dtype))


@pytest.mark.parametrize("call", [
    "F.batch_norm({x}, None, None, training=True)",
    "F.batch_norm({x}, T.zeros(2), T.ones(2))",
    "F.batch_norm({x}, T.zeros(2, dtype=T.float64), T.ones(2), training=True)",
    "F.instance_norm({x})", "F.layer_norm({x}, (4,))",
    "F.layer_norm({x}, (4,), T.ones(4))", "F.group_norm({x}, 2, T.ones(2))",
    "F.rms_norm({x}, (4,))",
])
@pytest.mark.parametrize("dtype", ["int32", "bfloat16", "float64", "complex64"])
def test_norm_dtypes_and_mixed_parameters_as_torch(call, dtype):
    _agree(call.format(x=_x((3, 2, 4), dtype)))


@pytest.mark.parametrize("expr", [
    "F.batch_norm(T.ones(1, 3), None, None, training=True)",
    "T.batch_norm(T.ones(1, 3), None, None, None, None, True, 0.1, 1e-5, False)",
    "F.instance_norm(T.ones(2, 3, 1))",
    "T.instance_norm(T.ones(1, 3, 1), None, None, None, None, True, 0.1, 1e-5, False)",
    "T.native_batch_norm(T.zeros(0, 3), None, None, None, None, True, 0.1, 1e-5)",
    "T.batch_norm(T.zeros(6, 0, 3), T.empty(0), None, None, None, True, 0.1, 1e-5, False)",
    "F.batch_norm(T.zeros(2, 0, 3), None, None, training=True)",
    "F.batch_norm(T.ones(2, 3), T.ones(3, requires_grad=True), T.ones(3))",
])
def test_batch_norm_argument_checks_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "F.conv1d(T.zeros(1, 2, 5), T.zeros(0, 2, 3))", "F.conv1d(T.zeros(1, 2, 5), T.zeros(3, 2, 0))",
    "F.conv1d(T.zeros(1, 2, 0), T.zeros(3, 2, 1), padding=1)",
    "F.conv1d(T.zeros(0, 2, 4), T.ones(3, 2, 1))",
    "F.conv2d(T.zeros(0, 2, 4, 4), T.ones(3, 2, 2, 2), stride=2, padding=1)",
    "F.conv1d(T.zeros(1, 2, 4, dtype=T.float64), T.zeros(3, 2, 2, dtype=T.float64), "
    "T.zeros(3, dtype=T.float16))",
    "F.conv1d(T.zeros(1, 2, 4, dtype=T.bool), T.zeros(3, 2, 2))",
    "F.conv2d(T.zeros(1, 2, 5, 5, dtype=T.int32), T.zeros(3, 2, 2, 2, dtype=T.int32), "
    "dilation=2)",
    "F.conv_transpose1d(T.zeros(1, 2, 5), T.zeros(2, 0, 3))",
    "F.conv_transpose1d(T.zeros(1, 2, 0), T.zeros(2, 3, 1))",
    "F.conv_transpose1d(T.zeros(1, 2, 1), T.zeros(2, 3, 1), padding=1)",
    "F.conv_transpose2d(T.zeros(1, 2, 3, 3, dtype=T.int16), T.zeros(2, 3, 1, 1, dtype=T.int8))",
    "F.conv_transpose1d(T.zeros(0, 2, 3), T.ones(2, 3, 1))",
    "F.linear(T.ones(2, 3, dtype=T.bool), T.ones(4, 3, dtype=T.bool))",
    "F.bilinear(T.ones(2, 3), T.ones(2, 2), T.ones(4, 3, 2), T.ones(4, dtype=T.float64))",
])
def test_conv_and_linear_argument_checks_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "T.lstm_cell(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(2, 4)), T.zeros(1, 3), T.zeros(16, 4))",
    "T.gru_cell(T.zeros(2, 3), T.zeros(2, 4), T.zeros(12, 3), T.zeros(11, 4))",
    "T.rnn_tanh_cell(T.zeros(2, 5), T.zeros(2, 4), T.zeros(4, 3), T.zeros(4, 4))",
    "T.lstm_cell(T.zeros(3, 3), (T.zeros(2, 4), T.zeros(2, 4)), T.zeros(16, 3), T.zeros(16, 4))",
    "T.lstm_cell(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(2, 5)), T.zeros(16, 3), T.zeros(16, 4))",
    "T.rnn_relu_cell(T.zeros(3), T.zeros(4), T.zeros(4, 3), T.zeros(4, 4))",
    "T.lstm_cell(T.zeros(0, 3), (T.zeros(0, 4), T.zeros(0, 4)), T.zeros(16, 3), T.zeros(16, 4))",
])
def test_rnn_cell_argument_checks_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "F.interpolate(T.zeros(1, 2, 3, 3, dtype=T.int32), scale_factor=2)",
    "F.interpolate(T.zeros(1, 2, 3, 3, dtype=T.uint8), scale_factor=2, mode='bilinear')",
    "F.interpolate(T.zeros(1, 2, 3, dtype=T.complex64), scale_factor=2, mode='linear')",
    "F.interpolate(T.zeros(1, 0, 3, 2), size=(4, 4))",
    "F.interpolate(T.zeros(1, 2, 3, 2), size=(0, 4))",
    "F.interpolate(T.zeros(1, 2, 3, 2), size=(0, 4), mode='area')",
    "F.unfold(T.zeros(1, 2, 4, 4, dtype=T.int64), 2)", "F.unfold(T.zeros(1, 4, 0, 1), 1)",
    "F.unfold(T.zeros(0, 4, 2, 2), 1)", "F.fold(T.zeros(1, 8, 9, dtype=T.int16), (4, 4), 2)",
    "F.pad(T.zeros(1, 2, 4, dtype=T.bool), (1, 1), mode='reflect')",
    "F.pad(T.zeros(1, 2, 0), (1, 1), mode='replicate')",
    "F.pad(T.zeros(0, 3), (1, 1), mode='reflect')",
    "F.grid_sample(T.zeros(1, 2, 4, 4, dtype=T.int32), T.zeros(1, 3, 3, 2), align_corners=False)",
    "F.grid_sample(T.zeros(1, 2, 4, 4, dtype=T.float64), T.zeros(1, 3, 3, 2), align_corners=False)",
    "F.grid_sample(T.zeros(1, 2, 0, 4), T.zeros(1, 3, 3, 2), align_corners=False)",
    "F.grid_sample(T.ones(1, 1, 3, 3), T.full((1, 2, 2, 2), float('nan')), align_corners=False)",
    "T.affine_grid_generator(T.zeros(1, 1, 4, dtype=T.float64), [1, 1, 2, 3, 2], True)",
    "F.fractional_max_pool2d(T.ones(1, 2, 6, 6, dtype=T.float64), 2, output_size=3, "
    "_random_samples=T.full((1, 2, 2), 0.5))",
])
def test_resampling_and_padding_checks_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "F.embedding(T.tensor([0, 1], dtype=T.uint8), T.ones(3, 4))",
    "F.embedding_bag(T.tensor([0, 1, 2]), T.ones(3, 4, dtype=T.int32), T.tensor([0, 2]))",
    "F.embedding_bag(T.tensor([0, 1, 2]), T.ones(5, 3), T.tensor([1, 2]))",
    "F.embedding_bag(T.tensor([0, 1, 2]), T.ones(5, 3), T.tensor([0, 9]))",
    "F.embedding_bag(T.tensor([0, -1, 2]), T.ones(5, 3), T.tensor([0, 2]))",
    "F.embedding_bag(T.tensor([0, 1, 2]), T.ones(5, 3), T.tensor([0, 2]), padding_idx=7)",
    "F.scaled_dot_product_attention(*[T.ones(1, 2, 3, 4, dtype=T.int32)] * 3)",
    "F.scaled_dot_product_attention(*[T.ones(1, 2, 3, 4, dtype=T.complex64)] * 3)",
    "F.cosine_similarity(T.ones(3, 4, dtype=T.int16), T.ones(3, 4, dtype=T.int16))",
    "F.cosine_similarity(T.tensor([[float('inf'), 1.], [1e30, 1e30], [0., 0.], [3e38, 1.]]), "
    "T.tensor([[0., 0.], [1e30, 0.], [0., 0.], [1., 1.]]))",
])
def test_embedding_attention_similarity_checks_as_torch(expr):
    _agree(expr)


def test_cosine_similarity_zero_vector_gradient_as_torch():
    import torch

    grads = []
    for T in (ember, torch):
        x = T.tensor([[1., 2.], [0., 0.]], dtype=T.float64, requires_grad=True)
        T.nn.functional.cosine_similarity(x, T.tensor([[2., 1.], [1., 1.]],
                                                      dtype=T.float64)).sum().backward()
        grads.append(x.grad.tolist())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9)


@pytest.mark.parametrize("expr", [
    "T.conv_tbc(T.zeros(5, 2, 3), T.zeros(0, 3, 4), T.zeros(4))",
    "T.conv_tbc(T.ones(5, 2, 3), T.ones(2, 3, 4), T.ones(4, dtype=T.int8))",
    "T.conv_tbc(T.zeros(5, 2, 3, dtype=T.bool), T.zeros(2, 3, 4, dtype=T.bool), "
    "T.zeros(4, dtype=T.bool))",
    "T.conv_tbc(T.zeros(1, 2, 3), T.zeros(3, 3, 4), T.zeros(4))",
    "T.conv_tbc(T.arange(30.).reshape(5, 2, 3), T.arange(24.).reshape(2, 3, 4), T.ones(4), 1)",
])
def test_conv_tbc_as_torch(expr):
    _agree(expr)


_P = "[T.zeros(4, 3), T.zeros(4, 4), T.zeros(4), T.zeros(4)]"


@pytest.mark.parametrize("expr", [
    f"T.rnn_tanh(T.zeros(5, 2, 3), T.zeros(1, 2, 4), {_P} * 2, True, 2, 0., False, False, False)",
    f"T.rnn_tanh(T.zeros(5, 2, 3), T.zeros(2, 2, 4), {_P}, True, 1, 0., False, True, False)",
    f"T.rnn_relu(T.zeros(5, 2, 3), T.zeros(2, 2, 4), {_P}, True, 2, 0., False, False, False)",
    f"T.rnn_tanh(T.zeros(0, 2, 3), T.zeros(1, 2, 4), {_P}, True, 1, 0., False, False, False)",
    f"T.rnn_tanh(T.zeros(5, 0, 3), T.zeros(1, 0, 4), {_P}, True, 1, 0., False, False, False)",
    "T.lstm(T.zeros(5, 2, 3), [T.zeros(1, 2, 4)] * 2, [T.zeros(16, 3), T.zeros(16, 4)] * 2, "
    "False, 2, 0., False, False, False)",
    "F.linear(T.ones(2, 3), T.ones(4, 3), T.ones(4, dtype=T.complex64))",
])
def test_rnn_stack_argument_checks_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "T.lstm_cell(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(2, 4)), T.zeros(16, 3), T.zeros(16, 4), "
    "T.zeros(16), T.zeros(16, dtype=T.float64))",
    "T.gru_cell(*[T.zeros(s, dtype=T.int64) for s in [(2, 3), (2, 4), (12, 3), (12, 4)]])",
    "T.lstm(T.zeros(5, 2, 3), [T.zeros(3, 2, 4)] * 2, [T.zeros(16, 3), T.zeros(16, 4)], "
    "False, 1, 0., False, False, False)",
    "F.softmax(T.empty((0, 1), dtype=T.bool), 1)",
    "F.embedding(T.tensor([[0]]), T.empty((0, 2)))",
    "T.conv2d(T.empty(0, 0, 4, 3), T.empty(2, 0, 0, 0), T.ones(2), 1, 1)",
    "F.conv1d(T.empty(1, 0, 4), T.empty(3, 0, 1), T.ones(3))",
    "T.kl_div(T.ones(2, dtype=T.int32), T.ones(2, dtype=T.int32))",
    "F.cosine_similarity(T.ones(2, 3, dtype=T.int64), T.ones(2, 3))",
    "F.scaled_dot_product_attention(T.zeros(1, 2, 4), T.zeros(1, 0, 4), T.zeros(1, 0, 3))",
    "F.scaled_dot_product_attention(T.zeros(1, 0, 4), T.zeros(1, 0, 4), T.zeros(1, 0, 1), "
    "is_causal=True)",
])
def test_empty_and_mixed_operands_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "T.batch_norm(T.zeros(6, 0, 3, dtype=T.int32), T.empty(0, dtype=T.int32), None, None, "
    "None, True, 0.1, 1e-5, False)",
    "T.instance_norm(T.zeros(2, 0, 3, dtype=T.bool), T.empty(0, dtype=T.bool), None, None, "
    "None, True, 0.1, 1e-5, False)",
    "F.conv_transpose3d(T.zeros(1, 2, 2, 2, 2), T.zeros(2, 3, 1, 1, 1), T.zeros(3, dtype=T.int16))",
    "F.conv_transpose1d(T.ones(1, 2, 2), T.ones(2, 3, 1), T.ones(3, dtype=T.float64))",
    "T.rnn_relu_cell(*[T.ones(s, dtype=T.int16) for s in [(2, 3), (2, 4), (4, 3), (4, 4)]])",
    "T.rnn_tanh_cell(*[T.ones(s, dtype=T.int16) for s in [(2, 3), (2, 4), (4, 3), (4, 4)]])",
    "F.scaled_dot_product_attention(T.zeros(1, 0, 4, dtype=T.int8), "
    "T.zeros(1, 3, 4, dtype=T.int8), T.zeros(1, 3, 2, dtype=T.int8))",
])
def test_check_order_of_edge_cases_as_torch(expr):
    _agree(expr)


def test_lstm_with_projection_runs_as_torch():
    import torch

    shapes = []
    for T in (ember, torch):
        T.manual_seed(0)
        out, (h, c) = T.nn.LSTM(3, 4, num_layers=2, proj_size=2)(T.ones(5, 2, 3))
        shapes.append((tuple(out.shape), tuple(h.shape), tuple(c.shape)))
    assert shapes[0] == shapes[1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_layer_norm_statistics_of_a_row_with_inf_are_nan(dtype):
    _agree(f"T.native_layer_norm(T.tensor([[float('inf'), 1., 2., 3.], [1., 2., 3., 4.]], "
           f"dtype=T.{dtype}), [4], None, None, 1e-5)[1]")


@pytest.mark.parametrize("expr", [
    "T.bilinear(T.ones(3, 0), T.ones(3, 2), T.ones(4, 0, 2))",
    "T.bilinear(T.ones(0, 2), T.ones(0, 2), T.ones(4, 2, 2))",
    "T.norm_except_dim(T.ones(1, 0, 0), 2, 2)", "T.norm_except_dim(T.ones(2, 0), 2, 0)",
    "T.norm_except_dim(T.ones(0, 2), 2, -1)",
])
def test_empty_feature_dims_as_torch(expr):
    _agree(expr)


@pytest.mark.parametrize("expr", [
    "T.embedding(T.ones(3, 2), T.tensor([0, 1]), 5)",
    "T.embedding(T.ones(3, 2), T.tensor([0, 7]), 5)",
    "T.instance_norm(T.empty((0, 4, 0), dtype=T.complex128), T.ones(4, dtype=T.complex128), None, "
    "None, None, True, 0.1, 1e-5, False)",
    "T.lstm(T.zeros(3, 2, 3, dtype=T.int16), [T.zeros(1, 2, 2, dtype=T.int16)] * 2, "
    "[T.zeros(8, 3, dtype=T.int16), T.zeros(8, 2, dtype=T.int16)], False, 1, 0., False, False, "
    "False)",
])
def test_top_level_forms_check_as_torch(expr):
    _agree(expr)
