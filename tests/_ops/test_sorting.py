"""Focused tests for ember/_ops/sorting.py: stability and ties, NaN ordering, named tuples,
shapes of quantile/unique results and gradients, compared with PyTorch when installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

try:
    import torch as _torch  # noqa: F401

    HAS_TORCH_FOR_MEDIAN = True
except ImportError:
    HAS_TORCH_FOR_MEDIAN = False
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
nan = math.nan


def _both(fn, *arrays, grad=False):
    import torch

    outs = []
    for lib in (ember, torch):
        ts = [lib.tensor(a, requires_grad=grad) for a in arrays]
        r = fn(lib, *ts)
        if grad:
            (r * lib.arange(1, r.numel() + 1, dtype=r.dtype).reshape(r.shape)).sum().backward()
            outs.append([t.grad for t in ts])
        else:
            outs.append(r)
    return outs


# ------------------------------------------------------------------------------------------------
# sort


def test_sort_is_stable_both_directions():
    x = ember.tensor([3.0, 1.0, 2.0, 1.0, 3.0])
    assert x.sort().indices.tolist() == [1, 3, 2, 0, 4]
    assert x.sort(descending=True).indices.tolist() == [0, 4, 2, 1, 3]


def test_sort_puts_nan_last_ascending_and_first_descending():
    x = ember.tensor([2.0, nan, -1.0])
    v, i = x.sort()
    assert v[:2].tolist() == [-1.0, 2.0] and math.isnan(v[2].item()) and i.tolist() == [2, 0, 1]
    assert ember.sort(x, descending=True).indices.tolist() == [1, 0, 2]


def test_sort_named_tuple_and_out():
    v, i = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.sort(ember.tensor([2.0, 1.0]), out=(v, i))
    assert isinstance(r, ember.return_types.sort)
    assert r.values is v and r.indices is i and v.tolist() == [1.0, 2.0]


def test_sort_bool_and_unsigned():
    assert ember.tensor([True, False, True]).sort().indices.tolist() == [1, 0, 2]
    x = ember.tensor([200, 3, 255], dtype=ember.uint8)
    assert x.sort(descending=True).values.tolist() == [255, 200, 3]


def test_topk_errors_and_named_fields():
    r = ember.topk(ember.tensor([1.0, 5.0, 3.0]), 2)
    assert r.values.tolist() == [5.0, 3.0] and r.indices.tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="k out of range"):
        ember.topk(ember.ones(3), 4)


# ------------------------------------------------------------------------------------------------
# median / mode / kthvalue


def test_median_is_lower_median_and_nan_propagates():
    assert ember.tensor([1.0, 2.0, 3.0, 4.0]).median().item() == 2.0
    assert math.isnan(ember.tensor([1.0, nan, 3.0]).median().item())
    r = ember.tensor([[nan, 0.0, 5.0, 4.0]]).median(1)
    assert math.isnan(r.values.item()) and r.indices.item() == 0


def test_nanmedian_skips_nan():
    r = ember.tensor([[nan, 0.0, 5.0, 4.0], [nan, nan, nan, nan]]).nanmedian(1)
    assert r.values[0].item() == 4.0 and r.indices[0].item() == 3
    assert math.isnan(r.values[1].item())
    assert ember.tensor([nan, 1.0, 3.0]).nanmedian().item() == 1.0


def test_median_of_empty_is_nan():
    assert math.isnan(ember.ones(0).median().item())


def test_mode_picks_smallest_most_frequent_and_its_last_index():
    r = ember.mode(ember.tensor([[1, 2, 2, 3, 3], [1, 1, 4, 4, 0]]))
    assert r.values.tolist() == [2, 1] and r.indices.tolist() == [2, 1]


def test_kthvalue_keepdim():
    r = ember.kthvalue(ember.tensor([[3.0, 1.0, 2.0]]), 2, 1, True)
    assert r.values.tolist() == [[2.0]] and r.indices.tolist() == [[2]]


# ------------------------------------------------------------------------------------------------
# quantile


def test_quantile_tensor_q_adds_leading_dim():
    x = ember.arange(12.0).reshape(3, 4)
    q = ember.tensor([0.25, 0.5])
    assert ember.quantile(x, q, dim=1).shape == (2, 3)
    assert ember.quantile(x, q, dim=1, keepdim=True).shape == (2, 3, 1)
    assert ember.quantile(x, q, keepdim=True).shape == (2, 1, 1)
    assert ember.quantile(x, 0.5).shape == ()


@needs_torch
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_interpolations_match_torch(interpolation):
    x = np.array([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, -1.0, nan, 2.0, 0.5]])
    for fn in ("quantile", "nanquantile"):
        e, t = _both(lambda m, a, q, fn=fn: getattr(m, fn)(a, q, 1, interpolation=interpolation),
                     x, np.array([0.125, 0.375, 0.625, 1.0]))
        assert_close(e, t)


# ------------------------------------------------------------------------------------------------
# unique / searchsorted / histograms


def test_unique_returns_plain_tuples():
    v, inv, c = ember.unique(ember.tensor([3, 1, 3]), return_inverse=True, return_counts=True)
    assert v.tolist() == [1, 3] and inv.tolist() == [1, 0, 1] and c.tolist() == [1, 2]
    assert isinstance(ember.unique(ember.tensor([1, 1])), ember.Tensor)


def test_unique_keeps_every_nan():
    assert len(ember.unique(ember.tensor([1.0, nan, nan]))) == 3


def test_unique_consecutive_inverse_keeps_shape():
    v, inv = ember.unique_consecutive(ember.tensor([[1, 1], [2, 1]]), return_inverse=True)
    assert v.tolist() == [1, 2, 1] and inv.shape == (2, 2)


def test_searchsorted_scalar_and_int32():
    r = ember.searchsorted(ember.tensor([1, 3, 5]), 4, out_int32=True)
    assert r.dtype == ember.int32 and r.shape == () and r.item() == 2
    assert ember.bucketize(3, ember.tensor([1, 3, 5]), right=True).item() == 2


def test_searchsorted_side_conflict_raises():
    with pytest.raises(RuntimeError, match="opposites"):
        ember.searchsorted(ember.tensor([1, 2]), ember.tensor([1]), right=True, side="left")


def test_bincount_weights_dtype():
    x = ember.tensor([0, 2, 2])
    assert ember.bincount(x).tolist() == [1, 0, 2]
    assert ember.bincount(x, ember.tensor([1, 2, 3])).dtype == ember.float64
    assert ember.bincount(x, ember.tensor([0.5, 1.0, 1.0])).dtype == ember.float32


def test_histogram_named_tuple():
    r = ember.histogram(ember.tensor([1.0, 2.0, 1.0]), 4, range=(0.0, 3.0))
    assert isinstance(r, ember.return_types.histogram)
    assert r.hist.tolist() == [0.0, 2.0, 1.0, 0.0]
    assert r.bin_edges.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0]


def test_histc_ignores_values_outside_range():
    assert ember.histc(ember.tensor([-5.0, 0.5, 1.5, 9.0]), 2, 0, 2).tolist() == [1.0, 1.0]


# ------------------------------------------------------------------------------------------------
# gradients


@needs_torch
@pytest.mark.parametrize("fn", [
    lambda m, x: x.sort(1).values,
    lambda m, x: x.sort(0, descending=True).values,
    lambda m, x: x.topk(2, 1).values,
    lambda m, x: x.kthvalue(2, 1).values,
    lambda m, x: x.median(1).values,
    lambda m, x: x.median(),
    lambda m, x: x.nanmedian(0).values,
    lambda m, x: x.msort(),
    lambda m, x: m.quantile(x, 0.3, dim=1),
    lambda m, x: m.quantile(x, m.tensor([0.2, 0.7], dtype=m.float64)),
], ids=["sort", "sort_desc", "topk", "kthvalue", "median_dim", "median", "nanmedian", "msort",
        "quantile", "quantile_all"])
def test_selection_gradients_match_torch(fn):
    x = np.array([[0.5, -2.0, 3.0, 1.0], [4.0, 0.0, -1.0, 2.5], [1.5, 2.0, -3.0, 0.25]])
    e, t = _both(fn, x, grad=True)
    assert_close(e[0], t[0])


@needs_torch
def test_mode_gradient_goes_to_reported_index():
    x = np.array([[1.0, 2.0, 2.0, 3.0]])
    e, t = _both(lambda m, a: a.mode(1).values, x, grad=True)
    assert_close(e[0], t[0])


@pytest.mark.skipif(not HAS_TORCH_FOR_MEDIAN, reason="PyTorch is not installed")
@pytest.mark.parametrize("fn", ["median", "nanmedian"])
@pytest.mark.parametrize("vals", [[1.0, 1.0, 1.0], [3.0, 1.0, 2.0, 1.0], [1.0, float("nan"), 2.0]])
def test_median_of_everything_shares_gradient_among_ties_as_torch(fn, vals):
    import torch

    out = []
    for m in (ember, torch):
        z = m.tensor(vals, requires_grad=True)
        v = getattr(m, fn)(z)
        v.backward()
        out.append((v.item(), z.grad.tolist()))
    np.testing.assert_allclose(out[0][0], out[1][0])
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-6)
