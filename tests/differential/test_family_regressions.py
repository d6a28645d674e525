"""Regressions for classes the differential runner found in the element-wise, reduction,
shape, indexing, nn and creation families (issue 16). Each expression runs with
``T = ember`` and ``T = torch`` (``F = T.nn.functional``) and must give the same outcome:
the exception type, or the results' dtypes, shapes and values (NaN equal to NaN)."""

import math

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

inf, nan = math.inf, math.nan


def _outcome(expr, T):
    """The exception type ``expr`` raises with ``T``, or its results as (dtype, shape,
    values) with float values as float64 (bfloat16 widened)."""
    env = {"T": T, "F": T.nn.functional, "inf": inf, "nan": nan}
    try:
        r = eval(expr, env)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e).__name__
    r = r if isinstance(r, (tuple, list)) else (r,)
    out = []
    for t in r:
        if not hasattr(t, "shape"):
            out.append(t)
            continue
        t = t.detach()
        dt = str(t.dtype).split(".")[-1]
        if dt in ("bfloat16", "float16"):
            t = t.float()
        out.append((dt, tuple(t.shape), np.asarray(t.resolve_conj().numpy()
                                                   if T is not ember else t.numpy())))
    return out


def _same(expr):
    import torch

    e, t = _outcome(expr, ember), _outcome(expr, torch)
    if isinstance(t, str) or isinstance(e, str):
        assert e == t, expr
        return
    assert len(e) == len(t), expr
    for a, b in zip(e, t):
        if not isinstance(b, tuple):
            assert a == b, expr
            continue
        assert a[:2] == b[:2], (expr, a[:2], b[:2])
        np.testing.assert_allclose(a[2], b[2], rtol=1e-6, atol=1e-12, equal_nan=True,
                                   err_msg=expr)


# var_mean / std_mean: the mean of a running update (NOTE [ var_mean's running mean ])
@pytest.mark.parametrize("expr", [
    "T.var_mean(T.tensor([inf, 1.0]))",
    "T.var_mean(T.tensor([1.0, 2.0, inf]))",
    "T.std_mean(T.tensor([[1.0, inf], [2.0, 3.0]]), 1, keepdim=True)",
    "T.std_mean(T.tensor([[inf, 1.0], [2.0, 3.0]], dtype=T.bfloat16), 0)",
    "T.var_mean(T.tensor([[-inf], [-4.25], [1.0]], dtype=T.float16), (0, 1))",
    "T.var_mean(T.tensor([1 + 0j, complex(inf, 0)]))",
    "T.var_mean(T.tensor([complex(0, inf), 1 + 0j]))",
])
def test_var_mean_mean_after_infinity_is_nan(expr):
    _same(expr)


def test_var_mean_mean_gradient_is_means():
    x = ember.tensor([[1.0, inf], [2.0, 3.0]], requires_grad=True)
    _, m = ember.var_mean(x, 1)
    (g,) = ember.autograd.grad(m.sum(), x)
    assert g.tolist() == [[0.5, 0.5], [0.5, 0.5]]


# renorm: a NaN norm leaves its slice alone; a tiny factor is not rounded to zero
@pytest.mark.parametrize("expr", [
    "T.tensor([[0.0, 6.09375, nan]], dtype=T.bfloat16).renorm_(2, 0, 5.0)",
    "T.renorm(T.tensor([[0.5, 1.7976931348623157e+308], [8.03, 1.0]], dtype=T.float64), 1, 1, 4.0)",
    "T.renorm(T.tensor([[nan, 1.0], [3.0, 4.0]]), 2, 0, 1.0)",
])
def test_renorm_factor_taken_not_interpolated(expr):
    _same(expr)


def _same_kind(expr):
    """Random results: the same exception type, or the same dtypes and shapes."""
    import torch

    def kind(T):
        o = _outcome(expr, T)
        return o if isinstance(o, str) else [x[:2] for x in o]

    assert kind(ember) == kind(torch), expr


# random sampling: torch's order of checks and its result dtypes
@pytest.mark.parametrize("expr", [
    "T.normal(1.5, T.empty((0,), dtype=T.complex128))",
    "T.normal(T.tensor([1.0]), T.tensor([1.0], dtype=T.complex64))",
    "T.normal(T.tensor([1, 2], dtype=T.int32), -1.0)",
    "T.normal(1.5, T.empty((0,), dtype=T.int32))",
    "T.normal(1.5, T.tensor([1, 2], dtype=T.int32))",
    "T.normal(T.empty((1, 0), dtype=T.bfloat16), T.empty((1, 0), dtype=T.float16))",
    "T.normal(T.ones(2, 1), T.ones(3, dtype=T.float64))",
    "T.normal(T.zeros(2), T.tensor([1.0, nan]))",
    "T.normal(T.zeros(2), nan)",
    "T.zeros(2).normal_(0, nan)",
    "T.bernoulli(T.tensor([1 + 1j]), 0.3)",
    "T.bernoulli(T.tensor([1 + 1j]), 2.0)",
    "T.bernoulli(T.tensor([True]), 0.5)",
    "T.poisson(T.tensor([nan, 1.0]))",
    "T.poisson(T.tensor([inf, 1e19, 3.0]))",
    "T.poisson(T.tensor([1e19], dtype=T.float16))",
    "T.multinomial(T.empty((1, 0), dtype=T.float64), 6, True, out=T.empty((0,)))",
    "T.multinomial(T.empty((3, 0), dtype=T.float64), 6, True)",
    "T.multinomial(T.tensor([[1.0, -1.0]]), 1, out=T.empty(0, dtype=T.int32))",
])
def test_random_sampling_checks_as_torch(expr):
    _same_kind(expr)


def test_poisson_beyond_int64_overflows_as_torch():
    import torch

    assert ember.poisson(ember.tensor([1e19])).tolist() == \
        torch.poisson(torch.tensor([1e19])).tolist()


# ldexp with integer exponents is C's ldexp (exponent wrapped to 32 bits), not x * 2 ** e
@pytest.mark.parametrize("expr", [
    "T.ldexp(T.tensor([1.0, 2.0, inf, 3.0, 1.5e-40, 0.0]),"
    " T.tensor([200, -200, -2000, 1, 140, 3000]))",
    "T.ldexp(T.tensor([1.0, 2.0, 3.0]),"
    " T.tensor([9223372036854775807, -9223372036854775808, 2**62]))",
    "T.ldexp(T.tensor([1.5e-40, 3.0]), T.tensor([-10, 140], dtype=T.int8))",
    "T.ldexp(T.tensor([1.0, 2.0], dtype=T.bfloat16), T.tensor([200, -140]))",
    "T.ldexp(T.tensor([1.0, 2.0], dtype=T.float16), T.tensor([20, -30]))",
    "T.ldexp(T.tensor([[-3.5, inf]]), T.tensor([[1], [9223372036854775807]]), out=T.zeros(2, 2))",
])
def test_ldexp_integer_exponent_is_c_ldexp(expr):
    _same(expr)


def test_ldexp_integer_exponent_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.ldexp(x, ember.tensor([[3], [1]]))
    assert type(y.grad_fn).__name__ == "LdexpBackward0"
    assert ember.autograd.grad(y.sum(), x)[0].tolist() == [10.0, 10.0]


# second derivatives of piecewise-linear activations: the first gradient stays connected to
# the input (NOTE [ Backward ops of piecewise-linear activations ]) and gives zeros
def _second(T, name):
    F = T.nn.functional
    x = T.tensor([-1.0, 0.5, 2.0, 7.0], dtype=T.float64, requires_grad=True)
    fns = {"relu": F.relu, "relu6": F.relu6, "hardtanh": F.hardtanh,
           "leaky_relu": lambda v: F.leaky_relu(v, 0.2),
           "threshold": lambda v: F.threshold(v, 1.0, 0.0),
           "hardshrink": F.hardshrink, "softshrink": F.softshrink,
           "rrelu": lambda v: F.rrelu(v, training=False)}
    y = fns[name](x)
    (g,) = T.autograd.grad((y * T.arange(4, dtype=T.float64)).sum(), x, create_graph=True)
    assert g.requires_grad
    (g2,) = T.autograd.grad(g.sum(), x, allow_unused=True)
    return g.tolist(), None if g2 is None else g2.tolist(), type(g.grad_fn).__name__


@pytest.mark.parametrize("name", ["relu", "relu6", "hardtanh", "leaky_relu", "threshold",
                                  "hardshrink", "softshrink", "rrelu"])
def test_piecewise_linear_second_derivative_is_zeros(name):
    import torch

    e, t = _second(ember, name), _second(torch, name)
    assert e[:2] == t[:2]
    if name in ("relu6", "hardtanh", "leaky_relu", "relu", "threshold"):
        assert e[2] == t[2]


# smooth_l1 / huber: at |x - t| == beta the second derivative is the line's (0); NaN keeps
# its NaN gradient and gets no second derivative
@pytest.mark.parametrize("call", [
    "F.smooth_l1_loss(x, t, reduction='none', beta=1.0)",
    "F.huber_loss(x, t, reduction='none', delta=2.0)",
    "F.smooth_l1_loss(x, t, beta=0.5)",
])
def test_smooth_l1_second_derivative_at_the_width(call):
    import torch

    def run(T):
        x = T.tensor([nan, inf, -inf, 1.0, 2.0, 0.5, -1.0], dtype=T.float64, requires_grad=True)
        env = {"F": T.nn.functional, "x": x, "t": T.zeros(7, dtype=T.float64)}
        y = eval(call, env)
        w = T.arange(y.numel(), dtype=T.float64).reshape(y.shape)
        (g,) = T.autograd.grad((y * w).sum(), x, create_graph=True)
        (g2,) = T.autograd.grad(g.sum(), x)
        return np.array(g.tolist()), np.array(g2.tolist())

    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_array_equal(a, b)


# nn edge cases: heads of size 0, class targets, embeddings of no columns, group_norm's
# nn.functional check
@pytest.mark.parametrize("expr", [
    "F.scaled_dot_product_attention(T.ones(1, 1, 2, 0), T.ones(1, 1, 3, 0), T.ones(1, 1, 3, 2))",
    "F.scaled_dot_product_attention(T.ones(1, 1, 2, 0), T.ones(1, 1, 0, 0), T.ones(1, 1, 0, 2))",
    "F.nll_loss(T.empty(1, 0), T.tensor([-28]))",
    "F.cross_entropy(T.ones(2, 3), T.tensor([0, 1], dtype=T.uint8))",
    "F.nll_loss(T.ones(2, 3, 4), T.zeros(2, 4, dtype=T.uint8))",
    "F.cross_entropy(T.ones(2, 3, 4), T.zeros(2, 4, dtype=T.uint8))",
    "F.nll_loss(T.ones(3), T.zeros((), dtype=T.uint8))",
    "F.nll_loss(T.ones(2, 3), T.tensor([0, 1], dtype=T.int32))",
    "F.embedding(T.tensor([[3]]), T.empty((1, 0)))",
    "F.embedding(T.tensor([[3]]), T.empty((1, 2)))",
    "F.embedding(T.tensor([[0]]), T.empty((1, 0)))",
    "F.group_norm(T.ones(2, 1, 1), 2)",
    "F.group_norm(T.ones(1, 4, 1), 4)",
    "F.group_norm(T.ones(1, 3, 2), 4)",
    "F.group_norm(T.ones(1, 4), 2)",
    "T.group_norm(T.ones(1, 4, 1), 4)",
    "T.group_norm(T.ones(2, 1, 1), 2)",
])
def test_nn_edge_cases_as_torch(expr):
    _same(expr)


# a NaN extreme: amax/amin/aminmax give the slice NaN gradients; max()/min() pass the
# gradient to the NaN
@pytest.mark.parametrize("call", ["x.amax(0)", "x.amin()", "x.aminmax()[1]", "x.max()",
                                  "x.min()", "x.max(0)[0]"])
def test_extreme_of_nan_gradient_as_torch(call):
    import torch

    def run(T):
        x = T.tensor([1.0, nan, 3.0, 3.0], dtype=T.float64, requires_grad=True)
        return np.array(T.autograd.grad(eval(call, {"x": x}) * 2, x)[0].tolist())

    np.testing.assert_array_equal(run(ember), run(torch))


# setitem under autograd drops the value's leading size-1 dims, as torch (and the no-grad
# path) do
@pytest.mark.parametrize("stmt", [
    "y[1, 2] = T.tensor([5.0], dtype=T.float64, requires_grad=True)",
    "y[1] = T.ones(1, 1, 3, dtype=T.float64, requires_grad=True)",
    "y[0:1] = T.ones(1, 1, 3, dtype=T.float64, requires_grad=True)",
    "y[[0, 1]] = T.ones(1, 2, 3, dtype=T.float64, requires_grad=True)",
    "y[0] = T.ones(2, 3, dtype=T.float64, requires_grad=True)",
])
def test_setitem_value_leading_ones_dropped(stmt):
    import torch

    def run(T):
        a = T.zeros(3, 3, dtype=T.float64, requires_grad=True)
        y = a.clone()
        try:
            exec(stmt, {"T": T, "y": y})
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            return type(e).__name__
        return y.tolist(), T.autograd.grad((y * y).sum(), a)[0].tolist()

    assert run(ember) == run(torch)


# Airy Ai far right is 0 (SciPy's NaN past ~1e9 is not torch's answer)
def test_airy_ai_far_right_is_zero():
    _same("T.special.airy_ai(T.tensor([1e10, 1e30, 9.2e18, 1.0, 150.0, inf, nan]))")
    _same("T.special.airy_ai(T.tensor([9223372036854775807]))")


# diff's out= form refuses an empty differenced dim, as torch's narrow does
@pytest.mark.parametrize("expr", [
    "T.diff(T.empty((0,), dtype=T.bool), out=T.empty((0,), dtype=T.bool))",
    "T.diff(T.empty((2, 0)), dim=1, out=T.empty(0))",
    "T.diff(T.empty((2, 0)), dim=0, out=T.empty(0))",
    "T.diff(T.empty((0,)), prepend=T.ones(1), out=T.empty(0))",
    "T.diff(T.empty((0,)), n=0, out=T.empty(0))",
])
def test_diff_out_of_empty_dim(expr):
    _same(expr)


# index_reduce / scatter_reduce: dtype refusals first, indices checked even for empty
# slices, mean of bools refused
@pytest.mark.parametrize("expr", [
    "T.index_reduce(T.ones(2, 2), 0, T.tensor([-1]), T.ones(1, 2), 'prod')",
    "T.index_reduce(T.ones(2, 0), 0, T.tensor([2]), T.ones(1, 0), 'prod')",
    "T.index_reduce(T.ones(2, 2, dtype=T.complex64), 0, T.tensor([5]),"
    " T.ones(1, 2, dtype=T.complex64), 'prod', include_self=False)",
    "T.index_reduce(T.ones(2, 2, dtype=T.bool), 0, T.tensor([0]), T.ones(1, 2, dtype=T.bool),"
    " 'mean', include_self=False)",
    "T.index_reduce(T.ones(2, 2, dtype=T.bool), 0, T.tensor([1]), T.ones(1, 2, dtype=T.bool),"
    " 'mean')",
    "T.index_reduce(T.ones(3, 2), 0, T.tensor([0, 2, 0]), T.arange(6.0).reshape(3, 2), 'mean')",
    "T.tensor([[True, True, True]]).scatter_reduce(1, T.tensor([[1]]),"
    " T.tensor([[False, False, True]]), 'mean')",
    "T.tensor([[True, True, True]]).scatter_reduce(1, T.tensor([[1]]),"
    " T.tensor([[False, False, True]]), 'prod')",
])
def test_index_reduce_checks_as_torch(expr):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: index_reduce is in beta
        _same(expr)


# cumulative_trapezoid refuses bools even over an empty dim (trapezoid sums nothing)
@pytest.mark.parametrize("expr", [
    "T.cumulative_trapezoid(T.empty((4, 0), dtype=T.bool))",
    "T.cumulative_trapezoid(T.empty((4, 0)), T.empty(0, dtype=T.bool))",
    "T.trapezoid(T.empty((4, 0), dtype=T.bool))",
    "T.cumulative_trapezoid(T.ones(3, dtype=T.bool), T.ones(3))",
    "T.cumulative_trapezoid(T.empty((4, 0)))",
])
def test_trapezoid_bool_refusal_as_torch(expr):
    _same(expr)


def test_renorm_gradient_of_nan_slice_is_finite():
    import torch

    def run(T):
        x = T.tensor([[1.0, 2.0], [nan, 1.0], [10.0, -3.0]], dtype=T.float64, requires_grad=True)
        y = T.renorm(x, 1, 0, 4.0)
        w = T.tensor([[1.0, -2.0], [3.0, 0.5], [1.0, 2.0]], dtype=T.float64)
        return np.array(T.autograd.grad((y * w).sum(), x)[0].tolist())

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-12, equal_nan=True)
