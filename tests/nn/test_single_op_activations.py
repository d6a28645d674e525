"""The activations that are one element-wise op each (leaky_relu, hardtanh, relu6, elu, selu,
celu, hardsigmoid, hardswish, softplus, logsigmoid, mish): values and gradients equal torch's
at the kinks, at +-inf and at NaN, where random samples never land; half inputs; bad input."""

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_SPECIAL = [-math.inf, -100.0, -6.0, -4.0, -3.0, -1.0, -0.0, 0.0, 1.0, 3.0, 4.0, 6.0, 20.0,
            25.0, 100.0, math.inf, math.nan]

_CALLS = {
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2),
    "hardtanh": lambda F, x: F.hardtanh(x, -3.0, 4.0),
    "relu6": lambda F, x: F.relu6(x),
    "elu": lambda F, x: F.elu(x, 0.5),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 2.0),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "softplus": lambda F, x: F.softplus(x, 2.0, 6.0),
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "mish": lambda F, x: F.mish(x),
}


def _run(T, name, dtype="float32"):
    x = T.tensor(_SPECIAL, dtype=getattr(T, dtype), requires_grad=True)
    y = _CALLS[name](T.nn.functional, x)
    (g,) = T.autograd.grad(y.sum(), x)
    return y.detach().float().numpy(), g.float().numpy()


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_values_and_gradients_at_special_points_as_torch(name):
    ey, eg = _run(ember, name)
    ty, tg = _run(torch, name)
    np.testing.assert_allclose(ey, ty, rtol=1e-6, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(eg, tg, rtol=1e-6, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_CALLS))
def test_half_inputs_as_torch(name, dtype):
    ey, _ = _run(ember, name, dtype)
    ty, _ = _run(torch, name, dtype)
    np.testing.assert_allclose(ey, ty, rtol=1e-2, atol=1e-3, equal_nan=True)


@pytest.mark.parametrize("name", ["hardtanh", "relu6"])
def test_bool_input_raises_as_torch(name):
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        _CALLS[name](torch.nn.functional, torch.tensor([True]))
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        _CALLS[name](ember.nn.functional, ember.tensor([True]))


@pytest.mark.parametrize("name", sorted(_CALLS))
def test_integer_input_raises_as_torch(name):
    if name in ("hardtanh", "relu6"):  # integers keep their dtype there, as in torch
        x = ember.tensor([-5, 0, 7])
        assert _CALLS[name](ember.nn.functional, x).tolist() == \
            _CALLS[name](torch.nn.functional, torch.tensor([-5, 0, 7])).tolist()
        return
    with pytest.raises(NotImplementedError):
        _CALLS[name](torch.nn.functional, torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        _CALLS[name](ember.nn.functional, ember.tensor([1, 2]))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "hardswish"])
def test_inplace_keeps_backward(name):
    F = ember.nn.functional
    x = ember.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    y = {"leaky_relu": lambda t: F.leaky_relu(t, 0.2, inplace=True),
         "elu": lambda t: F.elu(t, 0.5, inplace=True),
         "hardswish": lambda t: F.hardswish(t, inplace=True)}[name](x * 1)
    y.sum().backward()
    tx = torch.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    _CALLS[name](torch.nn.functional, tx).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


# -- prelu, rrelu, glu, the shrinks and threshold: one op each, torch's node names

_MORE = {
    "prelu": (lambda T, F, x: F.prelu(x, T.tensor([0.25], dtype=x.dtype)), "PreluKernelBackward0"),
    "rrelu": (lambda T, F, x: F.rrelu(x, 0.1, 0.3), "RreluWithNoiseBackward0"),
    "softshrink": (lambda T, F, x: F.softshrink(x, 1.0), "SoftshrinkBackward0"),
    "hardshrink": (lambda T, F, x: F.hardshrink(x, 1.0), "HardshrinkBackward0"),
    "threshold": (lambda T, F, x: F.threshold(x, 1.0, -7.0), "ThresholdBackward0"),
    # every value of _SPECIAL against every other as the gate
    "glu": (lambda T, F, x: F.glu(T.stack([x.repeat_interleave(len(_SPECIAL)),
                                           x.repeat(len(_SPECIAL))]), 0), "GluBackward0"),
}


def _run_more(T, name, dtype="float32"):
    x = T.tensor(_SPECIAL, dtype=getattr(T, dtype), requires_grad=True)
    y = _MORE[name][0](T, T.nn.functional, x)
    (g,) = T.autograd.grad((y * T.linspace(0.5, 2, y.numel()).reshape(y.shape)).sum(), x)
    return y, g


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(_MORE))
def test_more_values_gradients_and_node_as_torch(name, dtype):
    ey, eg = _run_more(ember, name, dtype)
    ty, tg = _run_more(torch, name, dtype)
    assert ey.grad_fn.name() == ty.grad_fn.name() == _MORE[name][1]
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == "float32" else dict(rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(ey.detach().float().numpy(), ty.detach().float().numpy(),
                               equal_nan=True, **tol)
    np.testing.assert_allclose(eg.float().numpy(), tg.float().numpy(), equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_shrink_and_threshold_cuts_round_as_torch(dtype):
    # a value at the cut once the cut is rounded: torch rounds the cut to float32 for
    # threshold and softshrink, to the input's own type for hardshrink
    for T in (ember, torch):
        x = T.tensor([0.3, -0.3, 0.35, 0.1], dtype=getattr(T, dtype))
        F = T.nn.functional
        got = [F.threshold(x, 0.3, 9.0), F.hardshrink(x, 0.3), F.softshrink(x, 0.3)]
        if T is ember:
            mine = [t.float().numpy() for t in got]
        else:
            theirs = [t.float().numpy() for t in got]
    for a, b in zip(mine, theirs):
        np.testing.assert_array_equal(a, b)


def test_prelu_weight_gradient_per_channel_as_torch():
    def run(T):
        n = len(_SPECIAL)
        x = T.tensor(np.array(_SPECIAL * 2).reshape(2, n).T.copy(), dtype=T.float64,
                     requires_grad=True)
        w = T.tensor([0.25, -0.5], dtype=T.float64, requires_grad=True)
        y = T.nn.functional.prelu(x, w)
        return T.autograd.grad((y * T.arange(2.0 * n, dtype=T.float64).reshape(n, 2)).sum(),
                               (x, w))
    for a, b in zip(run(ember), run(torch)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), equal_nan=True)


def test_rrelu_training_gradient_is_the_drawn_slope():
    x = ember.tensor([-1.0, 2.0, -3.0, 0.0, float("nan")], requires_grad=True)
    y = ember.nn.functional.rrelu(x, 0.1, 0.3, training=True)
    (g,) = ember.autograd.grad(y.sum(), x)
    assert y.grad_fn.name() == "RreluWithNoiseBackward0"
    slope = (y / x).detach().numpy()
    np.testing.assert_allclose(g.numpy()[[0, 2]], slope[[0, 2]], rtol=1e-6)
    assert g[1].item() == 1.0
    assert 0.1 <= g[3].item() <= 0.3 and 0.1 <= g[4].item() <= 0.3  # 0 and NaN take a slope
    assert ((slope[[0, 2]] >= 0.1) & (slope[[0, 2]] <= 0.3)).all()


def test_threshold_integer_cut_truncates_as_torch():
    for cut in (-0.5, 0.5, 1.5):
        assert ember.nn.functional.threshold(ember.tensor([-1, 0, 1, 2]), cut, 9).tolist() == \
            torch.nn.functional.threshold(torch.tensor([-1, 0, 1, 2]), cut, 9).tolist()


@pytest.mark.parametrize("name", ["prelu", "softshrink", "hardshrink", "glu"])
def test_more_integer_input_raises_as_torch(name):
    with pytest.raises(NotImplementedError):
        _MORE[name][0](torch, torch.nn.functional, torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        _MORE[name][0](ember, ember.nn.functional, ember.tensor([1, 2]))


@pytest.mark.parametrize("name", ["prelu", "rrelu", "softshrink", "hardshrink", "threshold",
                                  "glu"])
def test_more_double_and_forward_gradients(name):
    from ember.autograd import forward_ad as fwAD

    rng = np.random.default_rng(0)
    x = ember.tensor(rng.uniform(-3, 3, 8), dtype=ember.float64, requires_grad=True)
    f = lambda t: _MORE[name][0](ember, ember.nn.functional, t)  # noqa: E731
    assert ember.autograd.gradgradcheck(f, (x,))
    tangent = ember.tensor(rng.uniform(-1, 1, 8), dtype=ember.float64)
    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(f(fwAD.make_dual(x.detach(), tangent))).tangent
    (_, expected) = ember.autograd.functional.jvp(f, x.detach(), tangent)
    np.testing.assert_allclose(jvp.numpy(), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("call", [
    lambda T, F, t: F.celu(t, inplace=True), lambda T, F, t: F.selu(t, inplace=True),
    lambda T, F, t: F.elu(t, inplace=True), lambda T, F, t: F.leaky_relu(t, inplace=True),
    lambda T, F, t: F.rrelu(t, inplace=True), lambda T, F, t: F.threshold(t, 0.1, 2.0, True),
    lambda T, F, t: T.threshold_(t, 0.1, 2.0), lambda T, F, t: F.hardswish(t, inplace=True),
], ids=["celu", "selu", "elu", "leaky_relu", "rrelu", "threshold", "threshold_", "hardswish"])
def test_inplace_node_names_as_torch(call):
    # torch names the in-place overloads with derivatives of their own ``...Backward1``
    names, grads = [], []
    for T in (ember, torch):
        x = T.tensor([-2.0, 0.05, 0.5, 3.0], requires_grad=True)
        y = call(T, T.nn.functional, x * 1)
        y.sum().backward()
        names.append(y.grad_fn.name())
        grads.append(x.grad.numpy())
    assert names[0] == names[1]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda T: T.nn.functional.prelu(T.empty((1, 0, 4)), T.empty((0,))),  # no channels
    lambda T: T.nn.functional.prelu(T.ones(2, 4, dtype=T.int64), T.ones(1, 4, dtype=T.int64)),
    lambda T: T.nn.functional.prelu(T.ones(2, 4, dtype=T.int64), T.ones(1)),
    lambda T: T.nn.functional.prelu(T.ones(2, 4, dtype=T.int64), T.ones(3, dtype=T.int64)),
    lambda T: T.nn.functional.rrelu(T.ones(3, dtype=T.float16), training=True),
], ids=["prelu_empty", "prelu_rank_first", "prelu_dtypes_first", "prelu_size_first",
        "rrelu_training_half"])
def test_check_order_and_empty_as_torch(call):
    try:
        theirs = call(torch)
    except Exception as e:  # noqa: BLE001 - compared below
        with pytest.raises(type(e)):
            call(ember)
        return
    assert tuple(call(ember).shape) == tuple(theirs.shape)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_relu_keeps_negative_zero_and_nan_bits_as_torch(dtype):
    # NumPy's float16 maximum answers its second argument on a tie: relu(-0.0) must stay -0.0
    vals = [-0.0, 0.0, -1.0, math.nan, 2.0, -math.inf, math.inf]
    for fn in (lambda T, x: T.relu(x), lambda T, x: T.nn.functional.relu(x.clone(), inplace=True)):
        got = fn(ember, ember.tensor(vals, dtype=getattr(ember, dtype))).float().numpy()
        want = fn(torch, torch.tensor(vals, dtype=getattr(torch, dtype))).float().numpy()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)
