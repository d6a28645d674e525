"""What a backward node keeps, compared with PyTorch: writing in place into a tensor the
formula does not read leaves the backward pass valid (``y = x / 2; y += x``), and the saved
values answer to torch's names (``grad_fn._saved_self``, ``_saved_mat2``, ...)."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

R = np.random.default_rng(0)


def _pair(*shape):
    d = R.standard_normal(shape)
    return (ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True))


def _grads(T, fn, *leaves):
    out = fn(T, *leaves)
    return [g.detach().numpy() for g in T.autograd.grad(out, leaves)]


def _same(fn, *shapes):
    pairs = [_pair(*s) for s in shapes]
    ge = _grads(ember, fn, *[p[0] for p in pairs])
    gt = _grads(torch, fn, *[p[1] for p in pairs])
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_quotient_written_in_place_keeps_backward_valid():
    def f(T, a, b):
        g = a * b / 2
        g += b * a
        g -= a * 3
        return g.sum()
    _same(f, (3,), (3,))


def test_quotient_by_tensor_written_in_place_keeps_backward_valid():
    def f(T, a, b):
        q = a / b
        q.mul_(3)
        return (q * q).sum()
    _same(f, (3, 4), (4,))


def test_in_place_division_gradients_match():
    def f(T, a, b):
        x = a.clone()
        x /= b
        return (x * x).sum()
    _same(f, (2, 3), (3,))


def test_divisor_written_in_place_still_raises():
    a, _ = _pair(3)
    b = ember.rand(3, dtype=ember.float64).add_(1).requires_grad_()
    c = b.clone()
    y = a / c
    c.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_cat_input_written_in_place_keeps_backward_valid():
    def f(T, a, b):
        x = a * 1
        y = T.cat([x, b])
        x.add_(1)
        return (y * y).sum()
    _same(f, (2, 3), (1, 3))


def test_variance_written_in_place_keeps_backward_valid():
    def f(T, a):
        v = a.var(1, keepdim=True)
        v += 1e-5
        return (a / v.sqrt()).sum()
    _same(f, (3, 5))


def test_std_written_in_place_raises_as_torch():
    a, _ = _pair(3, 5)
    s = a.std(1)
    s.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()


def test_custom_function_adding_into_its_quotient_passes_gradgradcheck():
    class Sinh(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ex, emx = ember.exp(x), ember.exp(-x)
            ctx.save_for_backward(ex, emx)
            return (ex - emx) / 2, ex, emx

        @staticmethod
        def backward(ctx, g, g_ex, g_emx):
            ex, emx = ctx.saved_tensors
            gi = g * (ex + emx) / 2
            gi += g_ex * ex
            gi -= g_emx * emx
            return gi

    x = ember.rand(3, 3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: Sinh.apply(t)[0], x)


def test_saved_self_of_pow_is_the_input():
    x = ember.randn(5, requires_grad=True)
    y = x.pow(2)
    assert y.grad_fn._saved_self is x
    assert "_saved_self" in dir(y.grad_fn) and "_saved_exponent" in dir(y.grad_fn)


def test_saved_names_of_mm_and_linear_follow_torch():
    a = ember.randn(3, 4, requires_grad=True)
    b = ember.randn(4, 5, requires_grad=True)
    n = (a @ b).grad_fn
    assert n._saved_self is a and n._saved_mat2 is b
    assert n._saved_self_sym_sizes == (3, 4)
    lin = ember.nn.Linear(4, 2)
    n = lin(a).grad_fn
    assert type(n).__name__ == "AddmmBackward0"
    assert n._saved_mat1 is a
    assert n._saved_mat2.shape == (4, 2)
    np.testing.assert_array_equal(n._saved_mat2.detach().numpy(),
                                  lin.weight.detach().numpy().T)


def test_saved_names_listed_as_torch_lists_them():
    cases = [
        (lambda T, a, b: a * b, "MulBackward0"),
        (lambda T, a, b: a / b, "DivBackward0"),
        (lambda T, a, b: a @ b.mT, "MmBackward0"),
        (lambda T, a, b: a.sin(), "SinBackward0"),
        (lambda T, a, b: a.exp(), "ExpBackward0"),
    ]
    for fn, name in cases:
        e = fn(ember, *[_pair(3, 3)[0] for _ in range(2)]).grad_fn
        t = fn(torch, *[_pair(3, 3)[1] for _ in range(2)]).grad_fn
        want = sorted(s for s in dir(t) if s.startswith("_saved_"))
        got = sorted(s for s in dir(e) if s.startswith("_saved_"))
        assert got == want, (name, got, want)


def test_raw_saved_self_takes_hooks():
    seen = []
    x = ember.randn(4, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(lambda t: seen.append("pack") or t,
                                             lambda t: seen.append("unpack") or t)
    y.sum().backward()
    assert "unpack" in seen
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_conv_bias_written_in_place_keeps_backward_valid():
    def f(T, x, w, b0):
        b = b0.clone()
        y = T.nn.functional.conv2d(x, w, b)
        b.mul_(2)
        return (y * y).sum()
    _same(f, (1, 2, 5, 5), (3, 2, 3, 3), (3,))


def test_power_by_number_written_in_place_keeps_backward_valid():
    def f(T, a):
        y = a ** 2
        y += 1
        return (y * a).sum()
    _same(f, (3, 4))


def test_power_by_tensor_result_is_kept_as_torch_keeps_it():
    a, _ = _pair(3)
    b = ember.rand(3, dtype=ember.float64, requires_grad=True)
    y = a.abs() ** b
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_zero_exponent_gradient_is_zero_at_zero():
    for T in (ember, torch):
        x = T.tensor([0.0, 2.0, -1.0], dtype=T.float64, requires_grad=True)
        e = T.zeros(3, dtype=T.float64)
        g1, = T.autograd.grad((x ** 0).sum(), x)
        g2, = T.autograd.grad((x ** e).sum(), x)
        assert g1.tolist() == [0.0, 0.0, 0.0] and g2.tolist() == [0.0, 0.0, 0.0]


def test_power_by_number_backward_runs_pow_and_mul_only():
    from ember.profiler import profile

    x = ember.randn(10, requires_grad=True)
    y = (x ** 2).sum()
    with profile() as prof:
        y.backward()
    ops = sorted({e.key for e in prof.key_averages() if e.key.startswith("aten::")})
    # backward()'s implicit seed is PyTorch's aten::ones_like row; AccumulateGrad keeps the
    # gradient as PyTorch's ``detach``
    assert ops == ["aten::detach", "aten::expand", "aten::mul", "aten::ones_like",
                   "aten::pow"], ops
