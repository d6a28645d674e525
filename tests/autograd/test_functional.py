"""``ember.autograd.functional``: vjp, jvp, jacobian, hessian, vhp, hvp against PyTorch."""

import numpy as np
import pytest

import ember
from ember.autograd import functional as AF
from ember.testing import assert_close
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.autograd.functional as TF

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

_rng = np.random.default_rng(0)
A = _rng.standard_normal(3)
B = _rng.standard_normal(3)
M = _rng.standard_normal((2, 3))

# each entry: name -> (function of the library module, inputs as numpy arrays or a tuple)
FUNCS = {
    "scalar": (lambda T: lambda x: (x ** 3).sum() + x.sin().prod(), A),
    "vector": (lambda T: lambda x: T.tanh(x) * x[0], A),
    "matrix_out": (lambda T: lambda x: T.outer(x, x.exp()), A),
    "tuple_in": (lambda T: lambda x, y: (x * y.cos()).sum() * y[1], (A, B)),
    "tuple_out": (lambda T: lambda x: (x ** 2, x.sum().exp()), A),
    "tuple_both": (lambda T: lambda x, y: (x * y, (x ** 2 * y).sum()), (A, B)),
    "matrix_in": (lambda T: lambda m: (m.sigmoid() @ m.t()).sum(), M),
}
SCALAR = ["scalar", "tuple_in", "matrix_in"]


def _inputs(T, data, requires_grad=False):
    if isinstance(data, tuple):
        return tuple(T.tensor(d, dtype=T.float64, requires_grad=requires_grad) for d in data)
    return T.tensor(data, dtype=T.float64, requires_grad=requires_grad)


def _assert_same(a, b):
    """Same nesting of tuples, same shapes and values."""
    if isinstance(b, tuple):
        assert isinstance(a, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _assert_same(x, y)
        return
    assert isinstance(a, ember.Tensor)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def _ones_like(T, x):
    if isinstance(x, tuple):
        return tuple(_ones_like(T, y) for y in x)
    return T.full(tuple(x.shape), 0.5, dtype=T.float64) + T.arange(
        x.numel(), dtype=T.float64).reshape(tuple(x.shape)) * 0.25


def _both(name, api, **kw):
    """Run ``api`` on the same function and inputs in ember and torch."""
    make, data = FUNCS[name]
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        f, x = make(T), _inputs(T, data)
        res.append(getattr(mod, api)(f, x, **kw))
    return res


@needs_torch
@pytest.mark.parametrize("name", list(FUNCS))
def test_jacobian_matches_torch(name):
    ours, theirs = _both(name, "jacobian")
    _assert_same(ours, theirs)


@needs_torch
@pytest.mark.parametrize("name", ["vector", "tuple_both"])
def test_jacobian_vectorize_same_result(name):
    ours, theirs = _both(name, "jacobian", vectorize=True)
    _assert_same(ours, theirs)


@needs_torch
@pytest.mark.parametrize("name", SCALAR)
def test_hessian_matches_torch(name):
    ours, theirs = _both(name, "hessian")
    _assert_same(ours, theirs)


@needs_torch
@pytest.mark.parametrize("name", list(FUNCS))
def test_vjp_matches_torch(name):
    make, data = FUNCS[name]
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        f, x = make(T), _inputs(T, data)
        res.append(mod.vjp(f, x, _ones_like(T, f(*x) if isinstance(x, tuple) else f(x))))
    _assert_same(*res)


@needs_torch
@pytest.mark.parametrize("name", list(FUNCS))
def test_jvp_matches_torch(name):
    make, data = FUNCS[name]
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        f, x = make(T), _inputs(T, data)
        res.append(mod.jvp(f, x, _ones_like(T, x)))
    _assert_same(*res)


@needs_torch
@pytest.mark.parametrize("api", ["hvp", "vhp"])
@pytest.mark.parametrize("name", SCALAR)
def test_hvp_vhp_match_torch(api, name):
    make, data = FUNCS[name]
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        f, x = make(T), _inputs(T, data)
        res.append(getattr(mod, api)(f, x, _ones_like(T, x)))
    _assert_same(*res)


def test_vjp_v_none_for_single_element_output():
    out, g = AF.vjp(lambda x: (x ** 2).sum(), ember.tensor([1.0, 2.0]))
    assert g.tolist() == [2.0, 4.0]


def test_vjp_v_none_rejected_for_vector_output():
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda x: x * 2, ember.ones(2))


def test_vjp_v_wrong_size():
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be ember.Size\(\[2\]\)"):
        AF.vjp(lambda x: x * 2, ember.ones(2), ember.ones(3))


def test_vjp_v_tuple_wrong_length():
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        AF.vjp(lambda x: (x, x), ember.ones(2), (ember.ones(2),))


def test_jacobian_non_tensor_input_type_error():
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor"):
        AF.jacobian(lambda x: x, 3.0)


def test_jacobian_non_tensor_output_type_error():
    with pytest.raises(TypeError, match="outputs of the user-provided function given to "
                                        "jacobian"):
        AF.jacobian(lambda x: 3.0, ember.ones(2))


def test_results_detached_without_create_graph():
    x = ember.ones(2, requires_grad=True)
    out, g = AF.vjp(lambda x: (x ** 2).sum(), x)
    assert not out.requires_grad and not g.requires_grad


def test_jacobian_create_graph_differentiable():
    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    jac = AF.jacobian(lambda x: x ** 3, x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


@needs_torch
def test_hessian_create_graph_matches_torch():
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        x = T.tensor(A, dtype=T.float64, requires_grad=True)
        h = mod.hessian(lambda x: (x ** 4).sum(), x, create_graph=True)
        (g,) = T.autograd.grad(h.sum(), x)
        res.append(g)
    _assert_same(*res)


@needs_torch
def test_jvp_create_graph_matches_torch():
    res = []
    for T, mod in ((ember, AF), (torch, TF)):
        x = T.tensor(A, dtype=T.float64, requires_grad=True)
        _, t = mod.jvp(lambda x: x.sin() * x, x, T.ones(3, dtype=T.float64), create_graph=True)
        (g,) = T.autograd.grad(t.sum(), x)
        res.append(g)
    _assert_same(*res)


def test_jacobian_independent_output_zeros():
    jac = AF.jacobian(lambda x, y: x * 2, (ember.ones(2), ember.ones(3)))
    assert jac[1].shape == (2, 3) and jac[1].abs().sum().item() == 0


def test_jacobian_strict_independent_input_raises():
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        AF.jacobian(lambda x, y: x * 2, (ember.ones(2), ember.ones(3)), strict=True)


def test_vjp_strict_output_not_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        AF.vjp(lambda x: ember.ones(2), ember.ones(2), ember.ones(2), strict=True)


def test_jvp_strict_raises_for_constant_output():
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jvp(lambda x: ember.ones(2), ember.ones(2), ember.ones(2), strict=True)


def test_hessian_strict_linear_function_raises():
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        AF.hessian(lambda x: (x * 2).sum(), ember.ones(2), strict=True)


def test_hessian_rejects_vector_output():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda x: x * 2, ember.ones(2))


def test_jacobian_strict_vectorize_rejected():
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        AF.jacobian(lambda x: x * x, ember.ones(2), strict=True, vectorize=True)


def test_jacobian_bad_strategy_assertion():
    with pytest.raises(AssertionError, match="Expected strategy"):
        AF.jacobian(lambda x: x, ember.ones(2), strategy="sideways")


def test_jacobian_forward_mode_needs_vectorize():
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda x: x, ember.ones(2), strategy="forward-mode")


def test_jacobian_forward_mode_create_graph_rejected():
    with pytest.raises(NotImplementedError, match="`create_graph=True` and "):
        AF.jacobian(lambda x: x, ember.ones(2), strategy="forward-mode", vectorize=True,
                    create_graph=True)


def test_jacobian_forward_mode_strict_rejected():
    with pytest.raises(RuntimeError, match="`strict=True` and "):
        AF.jacobian(lambda x: x, ember.ones(2), strategy="forward-mode", vectorize=True,
                    strict=True)


def test_jacobian_forward_mode_matches_reverse_mode():
    f = lambda x: x.sin() * x.prod()  # noqa: E731
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    fwd = AF.jacobian(f, x, strategy="forward-mode", vectorize=True)
    assert_close(fwd, AF.jacobian(f, x))


def test_hessian_forward_outer_strategy_matches_reverse():
    f = lambda x: (x.sin() * x.prod()).sum()  # noqa: E731
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)
    fwd = AF.hessian(f, x, vectorize=True, outer_jacobian_strategy="forward-mode")
    assert_close(fwd, AF.hessian(f, x))


def test_functional_works_under_no_grad():
    with ember.no_grad():
        jac = AF.jacobian(lambda x: x ** 2, ember.tensor([1.0, 3.0]))
    assert jac.tolist() == [[2.0, 0.0], [0.0, 6.0]]


def test_autograd_functional_attribute():
    assert ember.autograd.functional.hvp is AF.hvp
