"""``ember.func`` grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian against
PyTorch's ``torch.func``."""

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.func as TF

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_rng = np.random.default_rng(1)
A = _rng.standard_normal(3)
B = _rng.standard_normal(3)
M = _rng.standard_normal((2, 3))


def t(T, data, requires_grad=False):
    return T.tensor(data, dtype=T.float64, requires_grad=requires_grad)


def assert_same(a, b):
    """Same pytree structure (tuples, lists, dicts), shapes and values."""
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b), (type(a), type(b))
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b)
        for k in b:
            assert_same(a[k], b[k])
    elif HAS_TORCH and isinstance(b, torch.Tensor):
        assert isinstance(a, ember.Tensor)
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
    else:
        assert a == b


def both(fn):
    """``fn(T, F)`` run with (ember, ember.func) and (torch, torch.func)."""
    return fn(ember, EF), fn(torch, TF)


def check(fn):
    assert_same(*both(fn))


# ------------------------------------------------------------------------------------------------
# grad / grad_and_value


@needs_torch
def test_grad_scalar_function():
    check(lambda T, F: F.grad(lambda x: (x.sin() * x).sum())(t(T, A)))


@needs_torch
def test_grad_argnums_tuple():
    check(lambda T, F: F.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(t(T, A), t(T, B)))


@needs_torch
def test_grad_negative_argnum():
    check(lambda T, F: F.grad(lambda x, y: (x * y.exp()).sum(), argnums=-1)(t(T, A), t(T, B)))


@needs_torch
def test_grad_dict_argument():
    check(lambda T, F: F.grad(lambda d: (d["a"] * d["b"] ** 2).sum())(
        {"a": t(T, A), "b": t(T, B)}))


@needs_torch
def test_grad_has_aux():
    check(lambda T, F: F.grad(lambda x: ((x ** 2).sum(), {"aux": x * 3}), has_aux=True)(t(T, A)))


@needs_torch
def test_grad_and_value_matches_torch():
    check(lambda T, F: F.grad_and_value(lambda x: (x ** 3).sum())(t(T, A)))


@needs_torch
def test_grad_of_grad():
    check(lambda T, F: F.grad(F.grad(lambda x: x.sin() * x ** 2))(t(T, 0.7)))


@needs_torch
def test_grad_nested_no_perturbation_confusion():
    def go(T, F):
        def outer(x):
            return F.grad(lambda y: (x * y).sum())(x).sum()
        return F.grad(outer)(t(T, A))
    check(go)


@needs_torch
def test_grad_closure_tensor_keeps_graph():
    def go(T, F):
        w = t(T, B, requires_grad=True)
        g = F.grad(lambda x: (x * w).sum() ** 2)(t(T, A))
        assert g.requires_grad
        return T.autograd.grad(g.sum(), w)
    check(go)


def test_grad_result_detached_for_plain_inputs():
    g, v = EF.grad_and_value(lambda x: (x ** 2).sum())(ember.ones(2))
    assert not g.requires_grad and not v.requires_grad


def test_grad_result_attached_for_inputs_requiring_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    g = EF.grad(lambda x: (x ** 3).sum())(x)
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_grad_ignores_outer_no_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.no_grad():
        g = EF.grad(lambda x: (x ** 2).sum())(x)
    assert g.tolist() == [2.0, 4.0] and not g.requires_grad


def test_grad_unused_input_zeros():
    y = ember.ones(3)
    assert EF.grad(lambda x: y.sum())(ember.ones(3)).tolist() == [0.0, 0.0, 0.0]


def test_grad_non_scalar_output_error():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, "
                                           "got tensor with 1 dims"):
        EF.grad(lambda x: x * 2)(ember.ones(3))


def test_grad_non_tensor_output_error():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a Tensor"):
        EF.grad(lambda x: 3.0)(ember.ones(3))


def test_grad_non_tensor_input_error():
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor"):
        EF.grad(lambda x: x)(3.0)


def test_grad_argnum_out_of_range():
    with pytest.raises(RuntimeError, match="Got argnum=1, but only 1 positional inputs"):
        EF.grad(lambda x: x.sum(), argnums=1)(ember.ones(3))


def test_grad_empty_argnums():
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        EF.grad(lambda x: x.sum(), argnums=())(ember.ones(3))


def test_grad_has_aux_requires_pair():
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        EF.grad(lambda x: x.sum(), has_aux=True)(ember.ones(3))


# ------------------------------------------------------------------------------------------------
# vjp / jvp / linearize


@needs_torch
def test_vjp_tuple_primals():
    def go(T, F):
        out, fn = F.vjp(lambda x, y: (x * y, (x ** 2).sum()), t(T, A), t(T, B))
        return out, fn((T.ones(3, dtype=T.float64), T.tensor(2.0, dtype=T.float64)))
    check(go)


@needs_torch
def test_vjp_has_aux():
    def go(T, F):
        out, fn, aux = F.vjp(lambda x: (x.exp(), x.sum()), t(T, A), has_aux=True)
        return out, fn(T.ones(3, dtype=T.float64)), aux
    check(go)


def test_vjp_fn_callable_twice():
    _, fn = EF.vjp(lambda x: x ** 2, ember.tensor([1.0, 2.0]))
    assert fn(ember.ones(2))[0].tolist() == fn(ember.ones(2))[0].tolist() == [2.0, 4.0]


def test_vjp_cotangent_structure_error():
    _, fn = EF.vjp(lambda x: (x * 2, x), ember.ones(3))
    with pytest.raises(RuntimeError, match="cotangents: \\(\\*,\\), primal output: \\(\\*, \\*\\)"):
        fn((ember.ones(3),))


def test_vjp_cotangent_shape_error():
    _, fn = EF.vjp(lambda x: x * 2, ember.ones(3))
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\]"):
        fn(ember.ones(2))


def test_vjp_non_tensor_output_error():
    with pytest.raises(RuntimeError, match="expected f\\(\\*primals\\) to return only tensors"):
        EF.vjp(lambda x: 3.0, ember.ones(3))


@needs_torch
def test_jvp_nested_output():
    check(lambda T, F: F.jvp(lambda x, y: (x * y, {"s": (x.sin() * y).sum()}),
                             (t(T, A), t(T, B)), (t(T, B), t(T, A))))


@needs_torch
def test_jvp_constant_output_zero_tangent():
    def go(T, F):
        c = T.ones(2, dtype=T.float64)
        return F.jvp(lambda x: c, (t(T, A),), (t(T, B),))
    check(go)


def test_jvp_primals_must_be_tuple():
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        EF.jvp(lambda x: x, ember.ones(3), ember.ones(3))


def test_jvp_structure_mismatch():
    with pytest.raises(RuntimeError, match="Expected primals and tangents to have the same "
                                           "python structure"):
        EF.jvp(lambda x: x, (ember.ones(3),), [ember.ones(3)])


def test_jvp_shape_mismatch():
    with pytest.raises(RuntimeError, match="Trying to set a forward gradient that has a "
                                           "different size"):
        EF.jvp(lambda x: x, (ember.ones(3),), (ember.ones(2),))


def test_jvp_strict_independent_output():
    with pytest.raises(RuntimeError, match="The output of f is independent of the inputs"):
        EF.jvp(lambda x: ember.ones(2), (ember.ones(3),), (ember.ones(3),), strict=True)


@needs_torch
def test_jvp_of_grad_is_hvp():
    def go(T, F):
        f = lambda x: (x.sin() * x ** 2).sum()  # noqa: E731
        return F.jvp(F.grad(f), (t(T, A),), (t(T, B),))
    check(go)


@needs_torch
def test_linearize_matches_jvp():
    def go(T, F):
        out, fn = F.linearize(lambda x: x.sin() * x, t(T, A))
        return out, fn(t(T, B)), fn(t(T, A))
    check(go)


def test_linearize_tangent_shape_error():
    _, fn = EF.linearize(lambda x: x.sin(), ember.ones(3))
    with pytest.raises(RuntimeError, match="tangent:0 with shape"):
        fn(ember.ones(2))


# ------------------------------------------------------------------------------------------------
# jacrev / jacfwd / hessian


@needs_torch
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobian_vector_function(api):
    check(lambda T, F: getattr(F, api)(lambda x: x.sin() * x.sum())(t(T, A)))


@needs_torch
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobian_matrix_input(api):
    check(lambda T, F: getattr(F, api)(lambda m: m.tanh() @ m.t())(t(T, M)))


@needs_torch
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobian_argnums_tuple_nested_output(api):
    check(lambda T, F: getattr(F, api)(lambda x, y: (x * y, {"s": (x ** 2).sum()}),
                                       argnums=(0, 1))(t(T, A), t(T, B)))


@needs_torch
@pytest.mark.parametrize("api", ["jacrev", "jacfwd"])
def test_jacobian_has_aux(api):
    check(lambda T, F: getattr(F, api)(lambda x: (x.exp(), x.sum()), has_aux=True)(t(T, A)))


@needs_torch
def test_jacfwd_of_jacrev():
    check(lambda T, F: F.jacfwd(F.jacrev(lambda x: x.sin() * x.prod()))(t(T, A)))


@needs_torch
def test_hessian_matches_torch():
    check(lambda T, F: F.hessian(lambda x, y: (x.exp() * y ** 2).sum(), argnums=(0, 1))(
        t(T, A), t(T, B)))


@needs_torch
def test_jacrev_create_graph_through_outer_backward():
    def go(T, F):
        x = t(T, A, requires_grad=True)
        jac = F.jacrev(lambda x: x ** 3)(x)
        return T.autograd.grad(jac.sum(), x)
    check(go)


def test_jacrev_chunk_size_validated():
    with pytest.raises(ValueError, match="`chunk_size` should be greater than 0"):
        EF.jacrev(lambda x: x, chunk_size=0)


def test_jacrev_chunk_size_same_result():
    x = ember.tensor([1.0, 2.0])
    assert EF.jacrev(lambda x: x ** 2, chunk_size=1)(x).tolist() == [[2.0, 0.0], [0.0, 4.0]]


def test_jacfwd_randomness_validated():
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        EF.jacfwd(lambda x: x, randomness="sometimes")
