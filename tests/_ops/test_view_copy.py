"""Focused tests for the view scatters and copies (ember/_ops/view_copy.py).

The OpInfo table (ember/testing/opinfos/view_copy.py) checks values, dtypes, errors and
gradients; here: layouts (strides of results, as_strided_scatter on permuted inputs)
against PyTorch, and the sparse accessors' refusals.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _pair(shape):
    import torch

    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return ember.tensor(a), torch.tensor(a)


SCATTERS = {
    "select_transposed": lambda m, x, s: m.select_scatter(x.t(), s(3), 0, 1),
    "slice_step": lambda m, x, s: m.slice_scatter(x, s(3, 2), 1, 0, None, 2),
    "diagonal_offset": lambda m, x, s: m.diagonal_scatter(x.t(), s(3), -1),
    "as_strided_transposed": lambda m, x, s: m.as_strided_scatter(x.t(), s(2), (2,), (1,)),
    "as_strided_offset": lambda m, x, s: m.as_strided_scatter(x, s(2, 2), (2, 2), (3, 1), 1),
}


@needs_torch
@pytest.mark.parametrize("case", sorted(SCATTERS))
def test_scatter_values_and_strides_match_torch(case):
    import torch

    fn = SCATTERS[case]
    (ex, tx) = _pair((3, 4))
    e = fn(ember, ex, lambda *s: -ember.ones(*s))
    t = fn(torch, tx, lambda *s: -torch.ones(*s))
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert e.stride() == t.stride()


def test_scatter_leaves_input_unchanged():
    x = ember.zeros(2, 2)
    ember.select_scatter(x, ember.ones(2), 0, 0)
    assert x.sum().item() == 0


def test_scatter_casts_src_to_input_dtype():
    r = ember.select_scatter(ember.zeros(2, 2, dtype=ember.int64), ember.full((2,), 1.7), 0, 0)
    assert r.dtype == ember.int64 and r[0].tolist() == [1, 1]


def test_scatter_grad_fn_names():
    x = ember.zeros(2, 2, requires_grad=True)
    assert type(ember.select_scatter(x, ember.ones(2), 0, 0).grad_fn).__name__ == \
        "SelectScatterBackward0"
    assert type(ember.diagonal_scatter(x, ember.ones(2)).grad_fn).__name__ == \
        "DiagonalScatterBackward0"


def test_as_strided_scatter_gradient_through_transposed_input():
    x = ember.randn(3, 3, dtype=ember.float64, requires_grad=True)
    s = ember.randn(2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda a, b: ember.as_strided_scatter(a.t(), b, (2,), (1,)), (x, s))


def test_copy_forms_are_contiguous_and_fresh():
    x = ember.arange(6.).reshape(2, 3)
    for r in (ember.t_copy(x), ember.permute_copy(x, (1, 0)), ember.diagonal_copy(x),
              ember.expand_copy(ember.ones(3, 1), (3, 4))):
        assert r.is_contiguous()
        assert r.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def test_copy_forms_write_out():
    out = ember.empty(0)
    ember.t_copy(ember.ones(2, 3), out=out)
    assert out.shape == (3, 2)


def test_copy_forms_differentiate_as_the_view():
    x = ember.arange(6., requires_grad=True)
    ember.view_copy(x, (2, 3)).select(0, 1).sum().backward()
    assert x.grad.tolist() == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("name", ["indices", "values", "crow_indices", "col_indices",
                                  "ccol_indices", "row_indices", "coalesce", "is_coalesced"])
def test_sparse_accessors_refuse_strided(name):
    with pytest.raises(RuntimeError, match="but got Strided"):
        getattr(ember.ones(2), name)()


@pytest.mark.parametrize("name", ["values_copy", "indices_copy", "crow_indices_copy"])
def test_sparse_copies_refuse_strided(name):
    with pytest.raises(RuntimeError, match="but got Strided"):
        getattr(ember, name)(ember.ones(2))


def test_sparse_and_dense_dims_of_strided():
    x = ember.ones(2, 3)
    assert (x.sparse_dim(), x.dense_dim()) == (0, 2)


def test_detach_function_shares_data():
    x = ember.ones(2, requires_grad=True)
    d = ember.detach(x)
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    y = x * 2
    assert ember.detach_(y) is y and y.grad_fn is None
