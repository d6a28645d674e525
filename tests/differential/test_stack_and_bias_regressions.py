"""Regressions for the bug classes of the nn families found by the differential runs of
issue 16 (eighth session): the whole-sequence RNN forms' argument checks and composition
(NOTE [ Functional RNN forms ] in ember/_ops/nn_rnn.py), ``linear``'s two bias forms, empty
``unbind`` under autograd. Each expression runs with ``T = ember`` and ``T = torch`` and is
compared on the exception's class, or on dtype, shape and values."""

import pytest

from tests.conftest import HAS_TORCH, skip_unless_torch_avx512
from tests.differential.test_nn_regressions import _agree

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _lstm(dtype, layers=1, bi=False, n_h=1, n_c=1, n_params=None, biases=True, w_hh=None):
    """A ``T.lstm`` call on (3, 2, 3) input, hidden size 2, with the stack's sizes given."""
    dirs = 2 if bi else 1
    group = ["T.ones(8, {i}, dtype=T.{d}) * 0.1", w_hh or "T.ones(8, 2, dtype=T.{d}) * 0.2"]
    if biases:
        group += ["T.full((8,), 0.3, dtype=T.{d})", "T.full((8,), -0.1, dtype=T.{d})"]
    params = []
    for layer in range(layers):
        for _ in range(dirs):
            params += [p.format(i=3 if layer == 0 else 2 * dirs, d=dtype) for p in group]
    if n_params is not None:
        params = (params * 3)[:n_params]
    x = f"T.arange(18.).reshape(3, 2, 3).to(T.{dtype}) / 9"
    hx = (f"[T.full(({n_h}, 2, 2), 0.5, dtype=T.{dtype}), "
          f"T.full(({n_c}, 2, 2), -0.5, dtype=T.{dtype})]")
    return (f"T.lstm({x}, {hx}, [{', '.join(params)}], {biases}, {layers}, 0.0, False, {bi}, "
            "False)")


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("stack", [
    dict(layers=2, bi=True, n_h=1, n_c=1), dict(layers=2, bi=True, n_h=4, n_c=2),
    dict(layers=1, bi=True, n_h=4, n_c=4), dict(layers=1, n_h=2, n_c=2),
    dict(layers=1, n_h=0, n_c=0), dict(layers=1, n_params=8), dict(layers=1, n_params=6),
    dict(layers=1, n_params=2), dict(layers=2, n_h=3, n_c=3, biases=False, n_params=6),
])
def test_lstm_stack_checks_follow_torchs_path(dtype, stack):
    # float32 / bfloat16 take PyTorch's oneDNN path (extra states and weights ignored,
    # IndexError for a missing state), float64 the native one (RuntimeErrors)
    if dtype == "float64" and stack.get("n_c", 1) < stack.get("n_h", 1):
        pytest.skip("torch's native LSTM reads past the end of its list here")
    if dtype == "bfloat16":  # (without AVX-512 torch's bfloat16 LSTM is not oneDNN's: it crashes)
        skip_unless_torch_avx512("bfloat16 LSTM through oneDNN")
    _agree(_lstm(dtype, **stack))


@pytest.mark.parametrize("w_hh", ["T.ones(0, 2, dtype=T.{d})", "T.ones(4, 2, dtype=T.{d})",
                                  "T.ones(8, 2, dtype=T.float32)"])
def test_lstm_ill_fitting_weights_broadcast_or_fail_as_torch(w_hh):
    _agree(_lstm("float64", w_hh=w_hh))


def test_lstm_bfloat16_layers_keep_their_dtype():
    _agree(_lstm("bfloat16", layers=2, n_h=2, n_c=2))


def test_lstm_cell_bfloat16_returns_bfloat16():
    _agree("T.lstm_cell(T.ones(2, 3, dtype=T.bfloat16), (T.zeros(2, 2, dtype=T.bfloat16), "
           "T.zeros(2, 2, dtype=T.bfloat16)), T.ones(8, 3, dtype=T.bfloat16) * 0.1, "
           "T.ones(8, 2, dtype=T.bfloat16))")


def test_lstm_overflowing_recurrent_sum_adds_b_hh_first():
    # (h @ w_hh.T + b_hh) + x @ w_ih.T: the order decides inf - inf
    _agree("T.lstm(T.full((1, 1, 1), 1e308, dtype=T.float64), [T.ones(1, 1, 1, "
           "dtype=T.float64), T.zeros(1, 1, 1, dtype=T.float64)], [T.ones(4, 1, "
           "dtype=T.float64), T.full((4, 1), 1.7e308, dtype=T.float64), T.zeros(4, "
           "dtype=T.float64), T.full((4,), -1.7e308, dtype=T.float64)], True, 1, 0.0, False, "
           "False, False)")


@pytest.mark.parametrize("fn", ["T.gru", "T.rnn_tanh", "T.rnn_relu"])
@pytest.mark.parametrize("weights", [
    "[T.ones(3, 1, dtype=T.float64), T.ones(6, 6, dtype=T.float64)]",  # wrong gate rows
    "[T.ones(6, 1, dtype=T.float64), T.ones(6, 2, dtype=T.float64), T.ones(6, "
    "dtype=T.uint8)[::2], T.ones(6, dtype=T.float64)]",  # a strided integer bias
])
def test_single_state_rnns_compose_as_torch(fn, weights):
    has_b = weights.count("T.ones") == 4
    _agree(f"{fn}(T.ones(4, 2, 1, dtype=T.float64), T.full((1, 2, 2), 0.5, dtype=T.float64), "
           f"{weights}, {has_b}, 1, 0.0, False, False, False)")


def test_rnn_empty_sequence_raises_runtime_error():
    _agree("T.gru(T.ones(0, 2, 1, dtype=T.float64, requires_grad=True), T.zeros(1, 2, 2, "
           "dtype=T.float64), [T.ones(6, 1, dtype=T.float64), T.ones(6, 2, dtype=T.float64)], "
           "False, 1, 0.0, False, False, False)")


def test_unbind_of_an_empty_dim_under_autograd_is_empty():
    _agree("len(T.unbind(T.ones(0, 3, requires_grad=True) * 2, 0)) == 0 and T.ones(1)")


@pytest.mark.parametrize("x", ["T.ones(3, 2, 3)", "T.ones(3, 3, 2).transpose(1, 2)",
                               "T.ones(3)", "T.ones(6)[::2]", "T.ones(2, 3)"])
@pytest.mark.parametrize("bias", ["T.ones(2, dtype=T.int64)", "T.ones(4, dtype=T.int64)[::2]",
                                  "T.ones(4, dtype=T.float64)[::2]", "T.ones(2, 2)",
                                  "T.ones(4, dtype=T.complex64)[::2]"])
def test_linear_bias_added_in_place_where_torch_does(x, bias):
    # a bias the GEMM cannot take (another dtype, not 1-D, not contiguous) is added in place
    # to the product, except for 2-D input and contiguous input with a contiguous 1-D bias
    _agree(f"F.linear({x}, T.ones(2, 3), {bias})")


@pytest.mark.parametrize("call", [
    "T.cumprod(T.tensor([complex(float('inf'), 0), 1 + 1j, 2]), 0)",
    "T.cumprod(T.tensor([[complex(float('inf'), 0)] * 3] * 2), 0)",
    "T.cumprod(T.tensor([[complex(float('nan'), 0)], [1j]]), 1)",
    "T.cumprod(T.tensor(complex(float('inf'), 0)), 0)",
    "T.vander(T.tensor([0j, complex(float('inf'), 1), 2]), 3)",
    "T.vander(T.tensor([0j, complex(float('inf'), 1), 2]), 4, increasing=True)",
])
def test_complex_running_products_start_from_one(call):
    # PyTorch multiplies the first element by a running product of 1 + 0j: (1 + 0j) * (inf +
    # 0j) is inf + NaN j (a 0-d input is copied)
    _agree(call)


@pytest.mark.parametrize("call", [
    "F.linear(T.ones(1, 1, 0, dtype=T.bool), T.ones(1, 0, dtype=T.bool))",
    "F.linear(T.ones(0, 3, dtype=T.bool), T.ones(2, 3, dtype=T.bool), T.ones(2, dtype=T.bool))",
    "F.linear(T.ones(3, 0, dtype=T.bool), T.ones(2, 0, dtype=T.bool), T.ones(2, dtype=T.bool))",
    "F.linear(T.ones(2, 3, dtype=T.bool), T.ones(2, 3, dtype=T.bool))",
])
def test_linear_of_bools_runs_only_an_empty_product(call):
    _agree(call)
