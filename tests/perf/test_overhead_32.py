"""Session 32 (issue 22): the generic per-op and per-node Python cost. Each fast exit of the
generic path against the plain route it skips (bit for bit, strides included), and against
PyTorch where installed.

- NOTE [ Results with size-one dims ] in ember/_ops/_memory_format.py
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from ember._ops import _memory_format as mf


def _plain_follow(r, arrays):
    """``follow`` by the whole rule (NOTE [ Result strides ]), without its fast exits."""
    if r.size == 0:
        return r
    return mf.with_strides(r, mf.result_strides(r.shape, arrays))


def _layouts(shape):
    """Arrays of ``shape`` in several layouts: row-major, column-major, non-canonical
    strides on size-1 dims, expanded from a scalar, a broadcast row, a zero-dim."""
    n = int(np.prod(shape))
    base = np.arange(n, dtype=np.float32).reshape(shape)
    out = [base, np.asfortranarray(base), np.broadcast_to(np.float32(2), shape),
           np.array(3, dtype=np.float32)]
    if len(shape) >= 2:
        out.append(np.broadcast_to(base[..., :1, :], shape) if shape[-2] > 0 else base)
        # size-1 dims with strides that are not the canonical ones (a transposed column)
        t = np.arange(n, dtype=np.float32).reshape(shape[::-1]).T
        out.append(t)
    return out


_SHAPES = [(1, 64), (64, 1), (1, 1), (2, 1, 3), (1, 3, 1, 1), (2, 3, 1, 4), (1, 8, 1, 5), (3, 4)]


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_follow_exit_matches_the_rule(shape):
    layouts = _layouts(shape)
    for a, b in itertools.product(layouts, repeat=2):
        r = np.multiply(a, b)
        if r.shape != shape:
            continue
        fast = mf.follow(r, (a, b))
        plain = _plain_follow(r, (a, b))
        assert fast.strides == plain.strides, (a.strides, b.strides)
        np.testing.assert_array_equal(fast, plain)
        # a result already laid out by the rule is returned as it is
        assert (fast is r) == (plain is r)


@pytest.mark.parametrize("shape", _SHAPES, ids=str)
def test_follow_exit_matches_the_rule_on_non_canonical_results(shape):
    # a result with non-canonical strides on a size-1 dim is never returned as it is
    n = int(np.prod(shape))
    r = np.arange(n, dtype=np.float32).reshape(shape[::-1]).T
    for a in _layouts(shape):
        fast = mf.follow(r, (a,))
        plain = _plain_follow(r, (a,))
        assert fast.strides == plain.strides
        np.testing.assert_array_equal(fast, plain)


def test_batch_one_results_have_torch_strides():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    cases = [lambda m, v: v * 2, lambda m, v: 2.5 - v, lambda m, v: v * m.tensor(3.0),
             lambda m, v: m.tensor(2.0).expand(1, 64) * v, lambda m, v: v.t() * 2,
             lambda m, v: v.t().expand(64, 3) * 2]
    for f in cases:
        e = f(ember, ember.tensor(x))
        t = f(torch, torch.tensor(x))
        assert e.stride() == t.stride() and e.is_contiguous() == t.is_contiguous()
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_batch_one_gradient_through_a_number_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    ex = ember.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    (ex * 2).sum().backward()
    (tx * 2).sum().backward()
    assert ex.grad.stride() == tx.grad.stride()
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())
