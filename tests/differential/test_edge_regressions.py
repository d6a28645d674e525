"""Regressions for classes a differential run (seed 7177) found outside linalg/fft/sorting
(issue 16): embedding_bag's checks and bookkeeping, empty inputs, integer wrap-around, the
order of argument checks, and the harness's record of torch's less accurate special
functions. Each expression runs with ``T = ember`` and ``T = torch`` (``F`` is
``T.nn.functional``) and must give the same exception type, or the same dtypes, shapes,
values and ``requires_grad``."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _outcome(expr, T):
    try:
        r = eval(expr, {"T": T, "F": T.nn.functional})
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    out = []
    for t in r if isinstance(r, (tuple, list)) else (r,):
        dt = str(t.dtype).split(".")[-1]
        v = t.detach().double() if t.is_floating_point() else t.detach()
        out.append((dt, tuple(t.shape), bool(t.requires_grad), np.asarray(v.tolist())))
    return out


def _same(expr):
    import torch

    e, t = _outcome(expr, ember), _outcome(expr, torch)
    if isinstance(t, str) or isinstance(e, str):
        assert e == t, expr
        return
    assert len(e) == len(t), expr
    for a, b in zip(e, t):
        assert a[:3] == b[:3], (expr, a[:3], b[:3])
        np.testing.assert_allclose(a[3], b[3], rtol=1e-6, equal_nan=True, err_msg=expr)


_W = "T.arange(18.).reshape(6, 3)"
_IDX = "T.tensor([0, 2, 4, 3, 4, 1])"


@pytest.mark.parametrize("expr", [
    # an offset outside the input in between: IndexError, but on the fast path (sum, no
    # padding, a row-contiguous float32 table) a RuntimeError, as are decreasing offsets
    f"T.embedding_bag({_W}, {_IDX}, T.tensor([0, 9, 2]), False, 1)",
    f"T.embedding_bag({_W}.double(), {_IDX}, T.tensor([0, -5, 2]), False, 0)",
    f"T.embedding_bag({_W}, {_IDX}, T.tensor([0, -5, 2]), False, 0)",
    f"T.embedding_bag({_W}, {_IDX}, T.tensor([0, 9, 2]), False, 2)",
    # the offsets' check comes before the indices'
    f"T.embedding_bag({_W}, T.tensor([0, 2, 4, 3, 4, -1]), T.tensor([0, 9, 2]), False, 1)",
    # offset2bag is empty on the fast path only (a strided float32 table takes the other)
    f"T.embedding_bag(T.arange(36.).reshape(6, 6)[:, ::2], {_IDX}, T.tensor([0, 2, 5]), "
    "False, 0)",
    f"T.embedding_bag({_W}, {_IDX}, T.tensor([0, 2, 5]), False, 0)",
    # no bags: still a function of the table
    "T.embedding_bag(T.zeros(0, 4, requires_grad=True), T.zeros(0, dtype=T.int64), "
    "T.zeros(0, dtype=T.int64), False, 2)",
])
def test_embedding_bag_checks_and_bookkeeping(expr):
    _same(expr)


def test_embedding_bag_refuses_decreasing_offsets():
    # torch's fast path (sum, no padding, a row-contiguous float32 table) refuses decreasing
    # offsets only where it splits the bags across threads: on one thread it reads past its
    # bags (uninitialised values), so torch is compared only with more than one thread
    import torch

    expr = f"T.embedding_bag({_W}, {_IDX}, T.tensor([0, 6, 2]), False, 0)"
    assert _outcome(expr, ember) == "RuntimeError"
    if torch.get_num_threads() > 1:
        assert _outcome(expr, torch) == "RuntimeError"


@pytest.mark.parametrize("expr", [
    "T.pixel_unshuffle(T.zeros(6, 6, 2, 0), 2)",
    "T.pixel_unshuffle(T.zeros(0, 5, 2, 2), 2)",
    "T.zeros(0, 4).unflatten(-1, (-1, 2))",
    "T.scatter_reduce(T.zeros(1, 0, dtype=T.complex128), 0, T.zeros(4, 0, dtype=T.int64), "
    "T.zeros(4, 0, dtype=T.complex128), 'amax')",
    "T.scatter_reduce(T.zeros(1, 2, dtype=T.complex128), 0, T.zeros(1, 2, dtype=T.int64), "
    "T.zeros(1, 2, dtype=T.complex128), 'amax')",
])
def test_empty_inputs(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    # gradients through an empty table or an empty batch of planes
    "(lambda w: T.autograd.grad(F.embedding(T.tensor([[0, 1, 2], [0, 2, 0]]), w).sum(), w))"
    "(T.zeros(4, 0, dtype=T.float64, requires_grad=True))",
    "(lambda x: T.autograd.grad(T.adaptive_max_pool1d(x, 3)[0].sum(), x))"
    "(T.zeros(0, 1, dtype=T.float64, requires_grad=True))",
])
def test_gradients_of_empty_inputs(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.lcm(T.tensor([6, 2, 3], dtype=T.int32), T.tensor([6, 2147483647, 2147483647], "
    "dtype=T.int32))",
    "T.lcm(T.tensor([2, 3, -6], dtype=T.int64), T.tensor([9223372036854775807, "
    "9223372036854775806, 4]))",
    "T.lcm(T.tensor([-6, 2, 3], dtype=T.int16), T.tensor([4, 32767, -32768], dtype=T.int16))",
    "T.lcm(T.tensor([-6, 2, 100], dtype=T.int8), T.tensor([4, 127, 7], dtype=T.int8))",
])
def test_lcm_wraps_then_takes_absolute_value(expr):
    _same(expr)


@pytest.mark.parametrize("expr", [
    "T.polar(T.ones(1, dtype=T.float16), T.ones(1, dtype=T.float16))",
    "T.repeat_interleave(T.ones(3, 2), T.tensor([1, 2], dtype=T.int8), dim=-1)",
    "T.repeat_interleave(T.tensor([1, 2], dtype=T.int16))",
    "T.repeat_interleave(T.ones(3, 2), T.tensor([1, 2], dtype=T.int32), dim=-1)",
    "T.index_fill(T.ones(3, 4, dtype=T.int16), 1, T.tensor([3, 0], dtype=T.uint8), "
    "T.tensor([-1], dtype=T.int16))",
    "T.constant_pad_nd(T.zeros(4, 1, 0), [1, -1, 2, 0], 0.5)",
    "T.constant_pad_nd(T.zeros(4, 1, 2), [3, -2, 2, 0], 0.5)",
])
def test_argument_check_types_and_order(expr):
    _same(expr)


def test_torch_wrong_special_functions_recorded_with_mpmath_evidence():
    pytest.importorskip("mpmath")
    from tests.differential import harness as H

    # bessel_y1 at 5.0318: torch 0.13706453, mpmath and SciPy 0.13706536
    y1 = [[0.6399096752465123, 5.031831348636153, 4.2667864845739985]]
    spec = H.TensorSpec(np.array(y1), "float64")
    case = type("C", (), {"op_id": "special.bessel_y1", "args": (spec,), "kwargs": {}})()
    assert H._torch_less_accurate(case)
    # where the two agree with mpmath there is no evidence against torch
    case.args = (H.TensorSpec(np.array([[0.5, 1.0, 2.0]]), "float64"),)
    assert not H._torch_less_accurate(case)
