"""``autograd.functional.jacobian``/``hessian`` with ``vectorize=True``: one backward (or
forward) pass batched by ``vmap``, compared with PyTorch on the same inputs."""

import warnings

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _x(T):
    return T.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=T.float64)


def _y(T):
    return T.tensor([0.5, -0.3, 1.5], dtype=T.float64)


CASES = {
    "single": lambda T: ((lambda v: v.sin() * v.sum()), _y(T)),
    "tuple_inputs": lambda T: ((lambda v, w: v @ w.T), (_x(T), _x(T).cos())),
    "tuple_outputs": lambda T: ((lambda v: (v.exp(), v.sum())), _y(T)),
    "tuple_both": lambda T: ((lambda v, w: (v * w, (v - w).sum(0))), (_x(T), _x(T) + 1)),
    "independent_input": lambda T: ((lambda v, w: v * 2), (_y(T), _y(T))),
}

HESSIANS = {
    "single": lambda T: ((lambda v: (v.sin() * v.prod()).sum()), _y(T)),
    "tuple_inputs": lambda T: ((lambda v, w: (v.sin() * w.exp()).sum()), (_y(T), _y(T) * 2)),
}

MODES = {
    "reverse": dict(vectorize=True),
    "reverse_create_graph": dict(vectorize=True, create_graph=True),
    "forward": dict(vectorize=True, strategy="forward-mode"),
}


def _same(a, b, requires_grad=True):
    """Same containers (tuple or list, as PyTorch returns them), shapes, values and, when
    asked, requires_grad."""
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (type(a), type(b))
        for x, y in zip(a, b):
            _same(x, y, requires_grad)
        return
    assert isinstance(a, ember.Tensor) and tuple(a.shape) == tuple(b.shape)
    if requires_grad:
        assert a.requires_grad == b.requires_grad
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_jacobian_vectorized_matches_torch(case, mode):
    fe, xe = CASES[case](ember)
    ft, xt = CASES[case](torch)
    _same(ember.autograd.functional.jacobian(fe, xe, **MODES[mode]),
          torch.autograd.functional.jacobian(ft, xt, **MODES[mode]))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("case", sorted(HESSIANS))
def test_hessian_vectorized_matches_torch(case, strategy):
    fe, xe = HESSIANS[case](ember)
    ft, xt = HESSIANS[case](torch)
    # the forward-over-reverse Hessian comes back requiring grad in both (the inner
    # gradient's stand-ins do); the reverse-mode one is detached in both
    _same(ember.autograd.functional.hessian(fe, xe, vectorize=True,
                                            outer_jacobian_strategy=strategy),
          torch.autograd.functional.hessian(ft, xt, vectorize=True,
                                            outer_jacobian_strategy=strategy))


def _grad_of_sum(T, make, x):
    x = x.requires_grad_()
    res = make(T, x)
    (g,) = T.autograd.grad(res.sum(), x)
    return res, g


@pytest.mark.parametrize("which", ["jacobian", "hessian"])
def test_forward_mode_result_backpropagates_as_torch(which):
    def make(T, x):
        F = T.autograd.functional
        if which == "jacobian":
            return F.jacobian(lambda v: v.exp() * v.sum(), x, vectorize=True,
                              strategy="forward-mode")
        return F.hessian(lambda v: (v.sin() * v ** 2).sum(), x, vectorize=True,
                         outer_jacobian_strategy="forward-mode")

    re, ge = _grad_of_sum(ember, make, _y(ember))
    rt, gt = _grad_of_sum(torch, make, _y(torch))
    _same(re, rt)
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-10)


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("fn", ["hessian", "hvp", "vhp"])
def test_second_order_requires_grad_matches_torch(fn, requires_grad, create_graph):
    def run(T):
        F = T.autograd.functional
        x = _y(T).requires_grad_(requires_grad)
        f = lambda v: (v ** 3).sum() + v[0] * v[1]  # noqa: E731
        if fn == "hessian":
            return F.hessian(f, x, create_graph=create_graph)
        return getattr(F, fn)(f, x, _y(T).flip(0), create_graph=create_graph)

    _same(run(ember), run(torch))


def test_hessian_vectorized_basic_index_has_batching_rule():
    # the gradient of a gradient through ``v[0]`` indexes a batched cotangent directly
    x = _y(ember)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = ember.autograd.functional.hessian(lambda v: v[0] * v[1:].sum() * v[..., 2], x,
                                              vectorize=True)
    ht = torch.autograd.functional.hessian(lambda v: v[0] * v[1:].sum() * v[..., 2], _y(torch),
                                           vectorize=True)
    _same(h, ht)


def test_jacobian_vectorized_create_graph_is_differentiable():
    x = _y(ember).requires_grad_()
    jac = ember.autograd.functional.jacobian(lambda v: v.sin() * v.sum(), x, create_graph=True,
                                             vectorize=True)
    (g,) = ember.autograd.grad(jac.sum(), x)
    xt = _y(torch).requires_grad_()
    jt = torch.autograd.functional.jacobian(lambda v: v.sin() * v.sum(), xt, create_graph=True,
                                            vectorize=True)
    (gt,) = torch.autograd.grad(jt.sum(), xt)
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-10)


def test_jacobian_vectorized_runs_one_backward_pass():
    # the function runs once: the rows come from one batched backward pass
    calls = []

    def f(v):
        calls.append(1)
        return v.sin() * 2

    jac = ember.autograd.functional.jacobian(f, ember.ones(40, dtype=ember.float64),
                                             vectorize=True)
    assert len(calls) == 1
    np.testing.assert_allclose(jac.numpy(), np.diag(np.full(40, 2 * np.cos(1.0))))


def test_jacobian_forward_mode_empty_input():
    jac = ember.autograd.functional.jacobian(lambda v: v.sum() + ember.ones(2), ember.zeros(0),
                                             vectorize=True, strategy="forward-mode")
    assert jac.shape == (2, 0)
