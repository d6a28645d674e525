"""Regressions for the nn bug classes of issue 16's eighth differential run that are about
which values meet which: the order of bilinear's products, grid sampling's outside taps,
the NaN a max-pool window picks, and kernels PyTorch never runs on empty results. Each
expression runs with ``T = ember`` and ``T = torch`` (see test_nn_regressions._agree)."""

import pytest

from tests.conftest import HAS_TORCH
from tests.differential.test_nn_regressions import _agree

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_INF = "float('inf')"
_NAN = "float('nan')"


def test_bilinear_contracts_input1_with_weight_first():
    # input1's inf meets the weight's 0 first (NaN), before input2 is read
    _agree(f"T.bilinear(T.tensor([[{_INF}, 1.]]), T.tensor([[1., 0.]]), "
           "T.tensor([[[0., 1.], [1., 1.]]]), None)")


@pytest.mark.parametrize("padding", ["zeros", "border"])
@pytest.mark.parametrize("point", ["[-1., -1.]", "[1., 1.]", "[1., -0.5]"])
def test_grid_sample_2d_reads_outside_taps_as_zero(padding, point):
    # the clamped index of an outside tap holds inf: PyTorch's masked gather never reads it
    _agree(f"F.grid_sample(T.tensor([[[[{_INF}, 1.], [2., -{_INF}]]]]), "
           f"T.tensor([[[{point}]]]), padding_mode='{padding}', align_corners=False)")


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["border", "reflection"])
def test_grid_sample_3d_clips_nan_coordinates_to_the_last_cell(mode, padding):
    _agree(f"F.grid_sample(T.arange(8.).reshape(1, 1, 2, 2, 2), T.tensor([[[[[{_NAN}, 0., "
           f"0.5]]]]]), mode='{mode}', padding_mode='{padding}', align_corners=True)")


def test_grid_sample_3d_skips_upper_taps_outside_under_border():
    _agree(f"F.grid_sample(T.tensor([[[[[1., {_INF}], [2., 3.]], [[4., 5.], [6., 7.]]]]]), "
           "T.tensor([[[[[-1., 1., 1.]]]]]), padding_mode='border', align_corners=True)")


@pytest.mark.parametrize("fn", ["F.adaptive_max_pool1d({x}, 3, return_indices=True)[1]",
                                "F.adaptive_max_pool2d({x}[None], (1, 3), "
                                "return_indices=True)[1]",
                                "F.adaptive_max_pool3d({x}[None, None], (1, 1, 3), "
                                "return_indices=True)[1]"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_adaptive_max_pool_picks_the_last_nan(fn, dtype):
    x = f"T.tensor([[[{_NAN}, 1., {_NAN}, 2., 5., {_NAN}, 0.]]], dtype=T.{dtype})"
    _agree(fn.format(x=x))


def test_adaptive_max_pool_nan_gradient_goes_to_the_last_nan():
    _agree(f"T.autograd.grad(F.adaptive_max_pool1d((x := T.tensor([[{_NAN}, 1., {_NAN}]], "
           "dtype=T.float64, requires_grad=True)), 1).sum(), x)")


@pytest.mark.parametrize("dtype", ["bool", "int64", "complex64"])
@pytest.mark.parametrize("call", ["F.adaptive_avg_pool2d(T.ones(0, 3, 4, 4, dtype=T.{d}), 2)",
                                  "F.adaptive_avg_pool1d(T.ones(0, 12, dtype=T.{d}), 3)",
                                  "F.adaptive_avg_pool2d(T.ones(2, 3, 4, 4, dtype=T.{d}), 2)"])
def test_adaptive_avg_pool_checks_dtype_only_for_a_non_empty_result(dtype, call):
    _agree(call.format(d=dtype))


@pytest.mark.parametrize("shape", ["3, 0", "1, 3", "0, 2", "3, 2"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_pdist_without_pairs_fills_zeros_in_any_float_dtype(shape, dtype):
    _agree(f"T.pdist(T.ones({shape}, dtype=T.{dtype}))")


@pytest.mark.parametrize("pair", ["T.ones(2, dtype=T.complex64), T.ones(2)",
                                  "T.ones(2), T.ones(2, dtype=T.complex128)",
                                  "T.ones(2, dtype=T.complex64), T.ones(2, dtype=T.int64)",
                                  "T.ones(2, dtype=T.int64), T.ones(2)"])
def test_kl_div_refuses_complex_before_integers(pair):
    _agree(f"T.kl_div({pair}, 1, True)")


def test_interpolate_resamples_the_last_dim_first():
    # a near-overflow value: whether the weighted sums overflow depends on which dim is
    # summed first
    _agree("F.interpolate(T.tensor([[[[-1.7e308, 0.2, -0.4, 0.1], [1.9, 0.5, -1.6, 1.7], "
           "[0.3, -0.9, 0.9, 0.0]]]], dtype=T.float64), size=(5, 6), mode='bicubic')")


@pytest.mark.parametrize("target", ["[1., -1., 0.]", "[-0., 2., -1.]"])
def test_cosine_embedding_loss_other_targets_give_zero_even_for_nan(target):
    _agree(f"F.cosine_embedding_loss(T.tensor([[{_INF}, 1.], [{_NAN}, 0.], [1., 2.]]), "
           f"T.tensor([[1., 1.], [1., 2.], [{_INF}, 0.]]), T.tensor({target}), "
           "reduction='none')")


@pytest.mark.parametrize("call", [
    "F.batch_norm(T.empty(1, 2, 0, dtype=T.int8), None, None, training=True)",
    "F.batch_norm(T.empty(0, 2, 3), T.zeros(2), T.ones(2), T.full((2,), 2.), T.full((2,), 3.))",
    "T.batch_norm(T.empty(1, 2, 0, dtype=T.int8), T.tensor([3, 4], dtype=T.int8), None, None, "
    "None, True, 0.1, 1e-5, False)",
    "F.batch_norm(T.empty(2, 0, 3), None, None, T.ones(0), None, training=True)",
    "T.native_batch_norm(T.empty(1, 0, 3, dtype=T.int8), None, None, None, None, True, 0.1, "
    "1e-5)",
    "T.native_batch_norm(T.empty(0, 2, 3), None, None, T.zeros(2), T.ones(2), False, 0.1, 1e-5)",
])
def test_batch_norm_of_empty_input_as_torch(call):
    # the composite copies an empty input (scaled by weight[0]) before any dtype check; the
    # native op checks its kernel's dtypes first
    _agree(call)


def test_cosine_similarity_normalises_each_input_in_its_own_dtype():
    _agree("T.cosine_similarity(T.tensor([[0.3, -1.1, 0.7, 1.9]]), T.tensor([[1.7, 0.2, -0.9, "
           "1.3]], dtype=T.float16))")


def test_cosine_similarity_gradient_ignores_the_eps_clamp():
    # PyTorch clamps the norms in place under no_grad: a tiny vector's gradient is huge
    _agree("T.autograd.grad(T.cosine_similarity((z := T.tensor([[0., 0., 1e-9]], "
           "dtype=T.float64, requires_grad=True)), T.ones(1, 3, dtype=T.float64)).sum(), z)")


def test_ctc_loss_label_equal_to_blank_is_a_label_position():
    # a target holding the blank class: PyTorch's recursion still lets the path skip to it
    _agree("F.ctc_loss(T.tensor([[[-1.2, -0.9, -1.3]], [[-0.4, -2.1, -1.5]], [[-1.1, -1.0, "
           "-1.2]], [[-2.0, -0.3, -1.9]]], dtype=T.float64), T.tensor([[1, 0]]), [4], [2], "
           "reduction='none')")


@pytest.mark.parametrize("call", [
    "T.linalg.vector_norm(T.tensor([[3.4e38], [-1.], [0.]]), 2, 1)",
    "T.linalg.vector_norm(T.tensor([-3.4e38]))",
    "T.linalg.vector_norm(T.tensor([[3.4e38], [1.]]), 2, (0, 1))",
    "T.cosine_similarity(T.tensor([[-0.1], [-3.4e38]]), T.tensor([[1.4], [-1.0]]))",
])
def test_vector_norm_of_one_value_is_its_absolute_value(call):
    # no square that overflows (float32 3.4e38 ** 2): a norm over several values still may
    _agree(call)
