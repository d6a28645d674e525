"""Forward-mode AD under ``vmap``: ``jacfwd`` as one batched pass, ``hessian``, ``vmap(jvp)``
and their compositions with ``vmap``/``grad``/``jacrev``, each compared with ``torch.func``
(NOTE [ Dual levels inside vmap ] in ember/autograd/_forward.py)."""

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH
from tests.func.test_eager_transforms import assert_same

if HAS_TORCH:
    import torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


def _x(T):
    return T.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=T.float64)


def _y(T):
    return T.tensor([0.5, -0.3, 1.5], dtype=T.float64)


def _f(v):
    return (v.sin() * v.prod()).sum()


def _g(v, w):
    return (v * w).tanh() + v.cumsum(0) * w.exp()


def _h(v):
    return v.sin() * v.sum()


CASES = {
    "jacfwd_argnums": lambda T, F: F.jacfwd(_g, argnums=(0, 1))(_x(T)[0], _y(T)),
    "jacfwd_dict_input": lambda T, F: F.jacfwd(lambda d: d["a"] * d["b"].sum())(
        {"a": _x(T)[0], "b": _y(T)}),
    "jacfwd_has_aux": lambda T, F: F.jacfwd(lambda v: (v.sin(), v.cos()), has_aux=True)(_y(T)),
    "jacfwd_tuple_output": lambda T, F: F.jacfwd(lambda v: (v.sin(), v.sum()))(_y(T)),
    "jacfwd_matrix_input": lambda T, F: F.jacfwd(lambda m: m @ m.T)(_x(T)),
    "jacfwd_scalar_input": lambda T, F: F.jacfwd(lambda v: v ** 3)(T.tensor(2., dtype=T.float64)),
    "jacfwd_output_independent": lambda T, F: F.jacfwd(lambda v: T.ones(2, dtype=T.float64))(
        _y(T)),
    "vmap_of_jacfwd": lambda T, F: F.vmap(F.jacfwd(_g))(_x(T), _x(T) + 1),
    "vmap_of_jacfwd_in_dims": lambda T, F: F.vmap(F.jacfwd(_g), in_dims=(0, None))(_x(T), _y(T)),
    "jacfwd_of_vmap": lambda T, F: F.jacfwd(lambda m: F.vmap(lambda r: r.sin() * _y(T))(m))(
        _x(T)),
    "jacfwd_of_jacfwd": lambda T, F: F.jacfwd(F.jacfwd(_h))(_y(T)),
    "jacrev_of_jacfwd": lambda T, F: F.jacrev(F.jacfwd(_h))(_y(T)),
    "jacfwd_of_grad": lambda T, F: F.jacfwd(F.grad(_f))(_y(T)),
    "hessian_argnums": lambda T, F: F.hessian(
        lambda v, w: (v * w.exp()).sum() * v.sum(), argnums=(0, 1))(_y(T), _y(T) * 2),
    "vmap_of_hessian": lambda T, F: F.vmap(F.hessian(_f))(_x(T)),
    "vmap_vmap_jacfwd": lambda T, F: F.vmap(F.vmap(F.jacfwd(_h)))(
        _x(T).view(2, 1, 3) + T.arange(2., dtype=T.float64).view(1, 2, 1)),
    "vmap_of_jvp_primals_and_tangents": lambda T, F: F.vmap(
        lambda p, t: F.jvp(_h, (p,), (t,)))(_x(T), _x(T).flip(0)),
    "vmap_of_jvp_tangents_only": lambda T, F: F.vmap(lambda t: F.jvp(_h, (_y(T),), (t,)))(
        _x(T)),
    "jvp_of_vmap": lambda T, F: F.jvp(F.vmap(_h), (_x(T),), (_x(T).cos(),)),
    "vmap_of_jvp_of_grad": lambda T, F: F.vmap(lambda t: F.jvp(F.grad(_f), (_y(T),), (t,))[1])(
        _x(T)),
    "vmap_of_grad_of_jvp": lambda T, F: F.vmap(F.grad(
        lambda v: F.jvp(lambda u: u.sin(), (v,), (v.cos(),))[1].sum()))(_x(T)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forward_transform_matches_torch(case):
    assert_same(CASES[case](ember, ember.func), CASES[case](torch, torch.func))


def _model_case(T, F, which):
    w = T.tensor(np.linspace(-1, 1, 12).reshape(4, 3), dtype=T.float64)
    if which == "mlp":
        return F.vmap(F.jacfwd(lambda v: T.nn.functional.linear(v, w).relu().softmax(-1)))(_x(T))
    k = T.tensor(np.linspace(-1, 1, 18).reshape(2, 1, 3, 3), dtype=T.float64)
    img = T.tensor(np.linspace(-2, 2, 25).reshape(1, 1, 5, 5), dtype=T.float64)
    return F.jacfwd(lambda i: T.nn.functional.conv2d(i, k).tanh().mean((2, 3)))(img)


@pytest.mark.parametrize("which", ["mlp", "conv"])
def test_jacfwd_of_network_matches_torch(which):
    assert_same(_model_case(ember, ember.func, which), _model_case(torch, torch.func, which))


def _set_item(T):
    def f(x):
        y = T.zeros(3, dtype=T.float64)
        y[0] = x[1]
        return y
    return f


def _copy_into_view(T):
    def f(x):
        y = T.zeros(4, 3, dtype=T.float64)
        y[1:3].copy_(x.expand(2, 3))
        v = y[2]
        v.mul_(x)
        return y
    return f


def _add_into_fresh(T):
    def f(x):
        y = T.zeros(3, dtype=T.float64)
        y += x
        return y
    return f


def _setitem_then_cumsum(T):
    def f(x):
        y = T.ones(3, dtype=T.float64)
        y[1:] = x[:2] ** 2
        return y.cumsum(0)
    return f


@pytest.mark.parametrize("make", [_set_item, _copy_into_view, _add_into_fresh,
                                  _setitem_then_cumsum], ids=lambda m: m.__name__.strip("_"))
def test_jacfwd_through_inplace_writes_matches_torch(make):
    # batched tangents written into tensors that had none, or unbatched ones
    assert_same(ember.func.jacfwd(make(ember))(_y(ember)),
                torch.func.jacfwd(make(torch))(_y(torch)))


def test_jacfwd_runs_func_once():
    calls = []

    def f(v):
        calls.append(1)
        return v.exp() * v.sum()

    j = ember.func.jacfwd(f)(ember.ones(50, dtype=ember.float64))
    assert len(calls) == 1
    assert j.shape == (50, 50)


def test_jacfwd_random_op_raises_in_error_mode():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ember.func.jacfwd(lambda v: v * ember.rand(3, dtype=ember.float64))(_y(ember))


def test_jacfwd_integer_input_raises():
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        ember.func.jacfwd(lambda v: v * 2)(ember.tensor([1, 2]))


def test_jacfwd_complex_input_raises():
    with pytest.raises(RuntimeError, match="Expected all inputs to be real"):
        ember.func.jacfwd(lambda v: v * 2)(ember.tensor([1 + 1j, 2]))


def test_jacfwd_complex_output_raises():
    with pytest.raises(RuntimeError, match="Expected all outputs to be real"):
        ember.func.jacfwd(lambda v: v * 1j)(ember.tensor([1., 2.]))


def test_jvp_integer_primal_raises():
    with pytest.raises(ValueError, match="Expected primal to be floating point"):
        ember.func.jvp(lambda v: v * 2, (ember.tensor([1, 2]),), (ember.tensor([1, 2]),))


def test_vmap_setitem_basic_index_batches():
    def f(T):
        def g(r):
            r = r.clone()
            r[1:3] = 7.
            r[0] = r[3]
            return r
        return T.func.vmap(g)(T.arange(12., dtype=T.float64).view(3, 4))

    assert_same(f(ember), f(torch))
