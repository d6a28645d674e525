"""Focused tests for ember/_ops/reduction.py: what the OpInfo table cannot express (ties, NaN,
named tuples, dtype rules, gradients at special points), compared with PyTorch when installed."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
nan = math.nan


def _both(fn, *arrays, grad=False):
    """Run ``fn(lib, *tensors)`` in ember and torch; return both results (and input grads)."""
    import torch

    outs = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=grad) for a in arrays]
        r = fn(lib, *ts)
        if grad:
            r.sum().backward() if r.dim() else r.backward()
            outs.append([t.grad for t in ts])
        else:
            outs.append(r)
    return outs


# ------------------------------------------------------------------------------------------------
# dtypes


def test_sum_int_and_bool_promote_to_int64():
    assert ember.tensor([1, 2], dtype=ember.int8).sum().dtype == ember.int64
    assert ember.tensor([True, True]).sum().item() == 2
    assert ember.tensor([1, 2], dtype=ember.int32).cumsum(0).dtype == ember.int64
    assert ember.tensor([1, 2], dtype=ember.uint8).prod().dtype == ember.int64


def test_sum_dtype_casts_input_before_summing():
    r = ember.sum(ember.tensor([1.5, 2.7]), dtype=ember.int32)
    assert r.dtype == ember.int32 and r.item() == 3


def test_sum_half_accumulates_in_float32():
    x = ember.ones(5000, dtype=ember.float16)
    assert x.sum().item() == 5000  # float16 accumulation would stall at 2048
    assert x.sum().dtype == ember.float16


def test_mean_int_raises_runtime_error():
    with pytest.raises(RuntimeError, match="mean"):
        ember.tensor([1, 2]).mean()
    assert ember.tensor([1, 2]).mean(dtype=ember.float64).item() == 1.5


def test_all_any_uint8_keep_uint8():
    x = ember.tensor([1, 0, 2], dtype=ember.uint8)
    assert x.all().dtype == ember.uint8 and x.any().dtype == ember.uint8
    assert ember.tensor([1.0, 2.0]).all().dtype == ember.bool


def test_argmax_returns_int64_and_rejects_bool():
    assert ember.tensor([1.0, 3.0]).argmax().dtype == ember.int64
    with pytest.raises(RuntimeError, match="bool"):
        ember.tensor([True, False]).argmax()


def test_std_var_complex_return_real():
    x = ember.tensor([1 + 1j, 2 - 1j, 0j])
    assert x.var().dtype == ember.float32


# ------------------------------------------------------------------------------------------------
# empty and 0-dim


def test_sum_prod_of_empty_are_identities():
    assert ember.ones(0).sum().item() == 0
    assert ember.ones(0, 3).prod(0).tolist() == [1.0, 1.0, 1.0]
    assert math.isnan(ember.ones(0).mean().item())


def test_max_of_empty_without_dim_raises():
    with pytest.raises(RuntimeError, match="numel"):
        ember.ones(0, 3).max()
    with pytest.raises(IndexError, match="non-zero size"):
        ember.ones(0, 3).max(0)
    r = ember.ones(0, 3).max(1)
    assert r.values.shape == (0,) and r.indices.dtype == ember.int64


def test_zero_dim_reductions_accept_dim_0_and_minus_1():
    x = ember.tensor(2.5)
    assert x.sum(0).item() == 2.5 and x.sum(-1).shape == ()
    v, i = x.max(0)
    assert v.item() == 2.5 and i.item() == 0
    with pytest.raises(IndexError):
        x.sum(1)


def test_dim_errors():
    x = ember.ones(2, 3)
    with pytest.raises(IndexError, match="out of range"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum((1, -1))
    with pytest.raises(TypeError):
        ember.max(x, (0, 1))


# ------------------------------------------------------------------------------------------------
# ties, NaN, named tuples


def test_max_dim_returns_named_tuple_with_first_index_of_ties():
    r = ember.tensor([[1.0, 3.0, 3.0, 2.0]]).max(1)
    assert isinstance(r, ember.return_types.max)
    assert r.values.tolist() == [3.0] and r.indices.tolist() == [1]
    v, i = ember.tensor([4, 1, 1]).min(0)
    assert (v.item(), i.item()) == (1, 1)


def test_max_min_propagate_nan():
    x = ember.tensor([1.0, nan, 3.0])
    assert math.isnan(x.max().item()) and math.isnan(x.min().item())
    assert math.isnan(ember.amax(x, 0).item())
    v, i = x.max(0)
    assert math.isnan(v.item()) and i.item() == 1
    assert x.argmax().item() == 1 and x.argmin().item() == 1


def test_keepdim_and_negative_tuple_dims():
    x = ember.arange(24.0).reshape(2, 3, 4)
    r = x.sum((-1, 0), keepdim=True)
    assert r.shape == (1, 3, 1)
    assert r.flatten().tolist() == x.numpy().sum((0, 2)).tolist()


def test_aminmax_fields():
    r = ember.aminmax(ember.tensor([[1.0, 5.0], [-2.0, 3.0]]), dim=1, keepdim=True)
    assert r.min.tolist() == [[1.0], [-2.0]] and r.max.tolist() == [[5.0], [3.0]]


def test_max_out_writes_both_tensors():
    v, i = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.max(ember.tensor([[1.0, 4.0], [3.0, 2.0]]), 1, out=(v, i))
    assert r.values is v and r.indices is i
    assert v.tolist() == [4.0, 3.0] and i.tolist() == [1, 0]


def test_cummax_ties_take_latest_index():
    r = ember.cummax(ember.tensor([1.0, 3.0, 2.0, 3.0]), 0)
    assert r.values.tolist() == [1.0, 3.0, 3.0, 3.0]
    assert r.indices.tolist() == [0, 1, 1, 3]


def test_std_legacy_unbiased_positional():
    x = ember.tensor([[1.0, 2.0, 4.0]])
    assert x.std(1, False).item() == pytest.approx(np.std([1, 2, 4]))
    assert x.std(False).item() == pytest.approx(np.std([1, 2, 4]))
    assert x.var(correction=0).item() == pytest.approx(np.var([1, 2, 4]))


def test_var_warns_when_degrees_of_freedom_vanish():
    with pytest.warns(UserWarning, match="degrees of freedom"):
        r = ember.ones(1).var()
    assert math.isnan(r.item())


def test_logsumexp_is_stable_for_large_and_infinite_values():
    x = ember.tensor([[1000.0, 1000.0], [-math.inf, -math.inf]])
    r = x.logsumexp(1)
    assert r[0].item() == pytest.approx(1000 + math.log(2))
    assert r[1].item() == -math.inf


def test_cumsum_inplace_writes_self():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0]


# ------------------------------------------------------------------------------------------------
# against PyTorch


@needs_torch
def test_max_binary_form_matches_maximum():
    e, t = _both(lambda m, a, b: m.max(a, b), np.array([1.0, 5.0]), np.array([3.0, 2.0]))
    assert_close(e, t)


@needs_torch
@pytest.mark.parametrize("p", [1, 3, math.inf])
def test_dist_matches_torch(p):
    e, t = _both(lambda m, a, b: m.dist(a, b, p), np.array([1.0, 5.0, -2.0]),
                 np.array([3.0, 2.0, 0.0]))
    assert_close(e, t)


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda m, x: m.max(x),
    lambda m, x: m.amax(x, 1),
    lambda m, x: m.max(x, 1).values,
    lambda m, x: m.min(x, 0, keepdim=True).values,
    lambda m, x: m.aminmax(x).max,
], ids=["max_full", "amax", "max_dim", "min_dim", "aminmax"])
def test_max_gradients_with_ties_match_torch(fn):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    e, t = _both(fn, x, grad=True)
    assert_close(e[0], t[0], check_dtype=False)


@needs_torch
@pytest.mark.parametrize("x", [[[1.0, 2.0, 3.0]], [[1.0, 0.0, 3.0]], [[0.0, 0.0, 3.0]]],
                         ids=["no_zero", "one_zero", "two_zeros"])
@pytest.mark.parametrize("dim", [None, 1])
def test_prod_gradient_with_zeros_matches_torch(x, dim):
    x = np.array(x)
    e, t = _both(lambda m, a: a.prod() if dim is None else a.prod(dim), x, grad=True)
    assert_close(e[0], t[0])


@needs_torch
def test_cumprod_gradient_with_zero_matches_torch():
    e, t = _both(lambda m, a: (a.cumprod(0) * m.tensor([1.0, 2.0, 3.0, 4.0])).sum(),
                 np.array([2.0, 0.0, 3.0, 5.0]), grad=True)
    assert_close(e[0], t[0])


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda m, x: x.std(1),
    lambda m, x: x.var((0, 1), correction=0),
    lambda m, x: x.logsumexp(1),
    lambda m, x: x.mean(0, keepdim=True),
    lambda m, x: x.nansum(),
    lambda m, x: x.cumsum(1) * m.tensor([1.0, 2.0, 3.0], dtype=m.float64),
    lambda m, x: x.logcumsumexp(1) * m.tensor([1.0, -2.0, 3.0], dtype=m.float64),
    lambda m, x: x.cummax(1).values,
], ids=["std", "var", "logsumexp", "mean", "nansum", "cumsum", "logcumsumexp", "cummax"])
def test_gradients_match_torch(fn):
    x = np.array([[1.0, -2.0, 0.5], [3.0, 3.0, -1.0]])
    e, t = _both(fn, x, grad=True)
    assert_close(e[0], t[0])


@needs_torch
def test_std_gradient_of_constant_is_zero_like_torch():
    e, t = _both(lambda m, a: a.std(), np.array([2.0, 2.0, 2.0]), grad=True)
    assert_close(e[0], t[0])


@needs_torch
def test_nanmean_ignores_nan_like_torch():
    x = np.array([[nan, 1.0, 3.0], [nan, nan, nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = _both(lambda m, a: a.nanmean(1), x)
    assert_close(e, t)


@needs_torch
def test_logcumsumexp_gradient_is_stable_for_extreme_values():
    x = np.array([[-1000.0, 1000.0, 3.0], [500.0, -500.0, 0.0]])
    e, t = _both(lambda m, a: a.logcumsumexp(1) * m.tensor([1.0, -2.0, 3.0], dtype=m.float64),
                 x, grad=True)
    assert_close(e[0], t[0])


def test_large_float32_sum_is_accurate():
    x = np.random.default_rng(0).random(300_001).astype(np.float32)
    exact = x.astype(np.float64).sum()
    assert abs(ember.from_numpy(x).sum().item() - exact) / exact < 1e-6
    assert abs(ember.from_numpy(x).mean().item() - exact / x.size) < 1e-6
