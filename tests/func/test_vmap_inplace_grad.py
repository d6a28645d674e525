"""In-place ops on batched tensors under ``vmap(grad(f))``: the write is recorded at the
logical level (NOTE [ vmap and autograd ] in ember/func/_batch_rules.py), writes into views
rewrite the base's history, and ops written in Python without a batching rule keep their
gradient through the per-example fallback. Compared with PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

X = np.random.default_rng(0).standard_normal((2, 3, 4))
W = np.arange(12.0).reshape(3, 4)


def _mul_(T, x):
    y = x.clone()
    y.mul_(x)
    return y


def _view_mul_(T, x):
    y = x.clone()
    y[1].mul_(2)
    return y


def _setitem_tensor(T, x):
    y = x.clone()
    y[:, 1] = x[:, 0] * 3
    return y


def _setitem_number(T, x):
    y = x * 1
    y[1] = 2.5
    return y


def _setitem_index_tensor(T, x):
    y = x.clone()
    y[T.tensor([0, 2])] = 0.0
    return y


def _copy_(T, x):
    y = x.clone()
    y.copy_(x.sin())
    return y


def _chain(T, x):
    y = x.sin()
    y += x
    y.relu_()
    return y


def _nested_views(T, x):
    y = x.clone()
    v = y[1:]
    v[0].mul_(x[0])
    y[0, 1:].add_(v[1, :3])
    return y * v.sum()


def _view_copy_(T, x):
    y = x.clone()
    y[0].copy_(x[1])
    return y


def _per_example_ops(T, x):
    # in-place ops without a batched in-place path: run per example, recorded
    y = x.clone() * 1.5
    y.index_add_(0, T.tensor([0, 2]), x[:2] * 2)
    y[:, 0].fill_(2.0)
    y.masked_fill_(T.tensor(np.arange(12).reshape(3, 4) % 3 == 0), 0.0)
    return y


def _elementwise_ops(T, x):
    y = x.clone() * 1.5
    y.clamp_(min=-0.2, max=0.5)
    y.div_(x.exp())
    y.addcmul_(x, x.sin(), value=0.5)
    y.sub_(T.ones(4, dtype=T.float64))
    return y


def _transpose_view_(T, x):
    # a metadata-only in-place op keeps its own path
    y = x.clone()
    y[:2, :2].t_()
    return y


def _matrix_power(T, x):
    # an op written in Python with no batching rule: the per-example fallback
    return T.linalg.matrix_power(x[:, :3], 3)


CASES = [_mul_, _view_mul_, _setitem_tensor, _setitem_number, _setitem_index_tensor, _copy_,
         _chain, _nested_views, _view_copy_, _per_example_ops, _elementwise_ops,
         _transpose_view_, _matrix_power]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_vmap_grad_inplace_matches_torch(case):
    def loss(T):
        w = T.tensor(W)
        return lambda x: (case(T, x) * w[:, :case(T, x).shape[-1]]).sum()

    want = torch.func.vmap(torch.func.grad(loss(torch)))(torch.tensor(X)).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ember.func.vmap(ember.func.grad(loss(ember)))(ember.tensor(X)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_vmap_inplace_into_unbatched_with_grad_raises_torch_error():
    def f(x):
        y = ember.zeros(3, 4, dtype=ember.float64)
        y[1] = x[0]
        return y.sum()

    with pytest.raises(RuntimeError, match="inplace arithmetic"):
        ember.func.vmap(ember.func.grad(f))(ember.tensor(X))


def test_vmap_grad_inplace_on_grad_input_raises_torch_error():
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ember.func.vmap(ember.func.grad(lambda x: x.mul_(2).sum()))(ember.tensor(X))


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_grad_under_vmap_with_zeros_matches_torch(dim):
    a = np.array([[[1.5, 0.0, 2.0, 0.0], [2.0, -1.0, 0.5, 3.0], [0.0, 2.0, 3.0, 0.0]],
                  [[1.0, 2.0, 0.0, 4.0], [0.5, 0.5, 0.5, 0.5], [3.0, 0.0, 0.0, 1.0]]])

    def loss(T):
        w = T.tensor(W)
        return lambda x: (x.cumprod(dim) * w).sum()

    want = torch.func.vmap(torch.func.grad(loss(torch)))(torch.tensor(a)).numpy()
    got = ember.func.vmap(ember.func.grad(loss(ember)))(ember.tensor(a)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_median_of_everything_grad_under_vmap_matches_torch():
    a = np.array([[1.0, 3.0, 2.0, 2.0], [np.nan, 1.0, 0.0, 5.0]])
    for name in ("median", "nanmedian"):
        want = torch.func.vmap(torch.func.grad(lambda x: getattr(x, name)() * 2))(
            torch.tensor(a)).numpy()
        got = ember.func.vmap(ember.func.grad(lambda x: getattr(x, name)() * 2))(
            ember.tensor(a)).numpy()
        np.testing.assert_allclose(got, want)


def test_per_sample_grads_through_inplace_relu_match_loop():
    # the physical result has a graph of its own (the unbatched weights require grad):
    # the in-place ReLU must reach the logical graph too
    ember.manual_seed(0)
    nn = ember.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(inplace=True), nn.Flatten(),
                          nn.Linear(4 * 6 * 6, 5))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        out = ember.func.functional_call(model, p, (x.unsqueeze(0),))
        return nn.functional.cross_entropy(out, y.unsqueeze(0))

    x, y = ember.randn(4, 1, 8, 8), ember.tensor([0, 1, 2, 3])
    got = ember.func.vmap(ember.func.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(4):
        want = ember.func.grad(loss)(params, x[i], y[i])
        for k in params:
            np.testing.assert_allclose(got[k][i].numpy(), want[k].numpy(), atol=1e-6)


def test_grad_of_vmap_with_inplace_matches_torch():
    def run(T):
        w = T.tensor(W)

        def inner(r):
            y = r * 2
            y.mul_(r)
            y[0].add_(r[1])
            return y

        return T.func.grad(lambda x: (T.func.vmap(inner)(x) * w).sum())(T.tensor(X)).numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-12)
